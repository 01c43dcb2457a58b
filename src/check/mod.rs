//! Checks a user writes, without rebuilding probe (docs/checks.md): `[[check]]` tables in
//! `probe.toml` or in files given by `--checks`, each an assertion in CEL over one
//! exchange ([`exchange::ExchangeModel`]), judged in a run and in a recheck of any stored
//! run alike.
//!
//! A check gives each exchange one [`Verdict`]: it holds, it fails (a finding with the
//! check's message), it does not apply (its operations, tags, statuses or `when` leave the
//! exchange out), or it could not judge (an expression failed on this exchange: a field
//! missing from a body, a value of another type). Not judged is counted and shown, never
//! taken for a pass.
//!
//! Depends on: `model`, `ids` (through the model). Nothing here sends, stores or prints.

pub mod definition;
mod direct;
pub mod exchange;
pub mod expr;
pub mod program;
pub mod template;

pub use definition::{
    read_file, read_project, Applies, Check, CheckFileError, Judging, ProgramCheck,
};
pub use exchange::{Bodies, ExchangeModel, Read, Reads, EXCHANGE_MODEL};
pub use expr::Bound;

/// What one check says of one exchange.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Holds,
    Fails { message: String },
    NotApplicable,
    NotJudged { reason: String },
}

impl Check {
    /// The parts of the exchange model it reads (`when`, `expect`, its message).
    /// A program is given the whole model.
    pub fn reads(&self) -> Reads {
        match &self.judging {
            Judging::Expression {
                when,
                expect,
                message,
            } => {
                let mut reads = message.reads();
                reads.add(expect.reads());
                if let Some(when) = when {
                    reads.add(when.reads());
                }
                reads
            }
            Judging::Program(_) => Reads::everything(),
        }
    }

    /// Judges one exchange. `bound` is `model.value` bound once for every check.
    pub fn judge(&self, model: &ExchangeModel, bound: &Bound<'_>) -> Verdict {
        if !self.applies.admits(
            &model.operation,
            &model.method,
            &model.path,
            &model.tags,
            model.status,
        ) {
            return Verdict::NotApplicable;
        }
        self.judge_admitted(bound)
    }

    /// Whether it is a program check (judged by its program, beside the run: never by
    /// [`Check::judge_admitted`]).
    pub fn program(&self) -> Option<&ProgramCheck> {
        match &self.judging {
            Judging::Program(p) => Some(p),
            Judging::Expression { .. } => None,
        }
    }

    /// Judges an exchange its `applies` already let through (`when`, then `expect`). A
    /// program check gives no verdict here: its program judges, beside the run.
    pub fn judge_admitted(&self, bound: &Bound<'_>) -> Verdict {
        let Judging::Expression {
            when,
            expect,
            message,
        } = &self.judging
        else {
            return Verdict::NotApplicable;
        };
        if let Some(when) = when {
            match when.holds(bound) {
                Ok(true) => {}
                Ok(false) => return Verdict::NotApplicable,
                Err(e) => {
                    return Verdict::NotJudged {
                        reason: format!("`when`: {e}"),
                    }
                }
            }
        }
        match expect.holds(bound) {
            Ok(true) => Verdict::Holds,
            Ok(false) => Verdict::Fails {
                message: message.render(bound),
            },
            Err(e) => Verdict::NotJudged {
                reason: format!("`expect`: {e}"),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{CaseId, Digest, RunId};
    use crate::model::*;
    use std::collections::BTreeMap;

    fn exchange(status: u16, headers: &[(&str, &str)], body: &str) -> ExchangeModel {
        let (case, interaction) = recorded(status, headers, body);
        ExchangeModel::new(&case, &interaction, Bodies::default(), &["users".into()])
    }

    fn recorded(status: u16, headers: &[(&str, &str)], body: &str) -> (TestCase, Interaction) {
        let case = TestCase {
            operation: "getUser".into(),
            method: "GET".into(),
            path: "/users/{id}".into(),
            parameters: vec![ParameterValue {
                location: Location::Path,
                name: "id".into(),
                value: serde_json::json!(7),
            }],
            body: None,
            strategy: Strategy::Nominal,
            mode: "random".into(),
            origins: BTreeMap::new(),
            intent: Intent::Acceptable,
            mutation: None,
            series_step: None,
            credentials: None,
            shrinking: None,
            identity: None,
        };
        let interaction = Interaction {
            run: RunId(Digest::of(b"run")),
            seq: 0,
            case: CaseId(Digest::of(b"case")),
            request: RequestRecord {
                method: "GET".into(),
                url: "http://127.0.0.1:1/users/7".into(),
                headers: vec![("authorization".into(), "Bearer <credential:default>".into())],
                body: None,
            },
            outcome: Outcome::Response(ResponseRecord {
                status,
                headers: headers
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                body: Some(BodyBytes::Inline(body.as_bytes().to_vec())),
                truncated: false,
            }),
            timing: Timing {
                started_ms: 0,
                elapsed_us: 1500,
            },
            retried: None,
        };
        (case, interaction)
    }

    fn judge(check: &str, model: &ExchangeModel) -> Verdict {
        let checks = read_file("c.toml", check).unwrap();
        checks[0].judge(model, &Bound::new(&model.value))
    }

    #[test]
    fn a_check_holds_fails_skips_or_cannot_judge() {
        let check = "[[check]]\nname = \"id\"\nstatuses = [\"2XX\"]\nexpect = \"response.body.id == request.path_params.id\"\nmessage = \"asked for {request.path_params.id}, got {response.body.id}\"\n";
        assert_eq!(
            judge(check, &exchange(200, &[], r#"{"id": 7}"#)),
            Verdict::Holds
        );
        assert_eq!(
            judge(check, &exchange(200, &[], r#"{"id": 8}"#)),
            Verdict::Fails {
                message: "asked for 7, got 8".into()
            }
        );
        assert_eq!(
            judge(check, &exchange(404, &[], "{}")),
            Verdict::NotApplicable
        );
        assert!(matches!(
            judge(check, &exchange(200, &[], r#"{"name": "x"}"#)),
            Verdict::NotJudged { .. }
        ));
    }

    /// Expressions are given the model built straight as CEL values; programs and people
    /// the JSON. Both come from one builder, and must say the same, whatever the exchange.
    #[test]
    fn the_model_expressions_see_is_the_model_programs_read() {
        let json = serde_json::json!({"id": 7, "tags": ["a", "b"], "n": 1.5, "big": u64::MAX});
        let mut exchanges = vec![
            recorded(
                200,
                &[
                    ("X-Request-Id", "a"),
                    ("cache-control", "no-store"),
                    ("Cache-Control", "private"),
                ],
                r#"{"id": 7, "name": "x"}"#,
            ),
            recorded(
                404,
                &[("content-type", "Application/Problem+JSON; charset=utf-8")],
                "not json",
            ),
            recorded(204, &[], ""),
        ];
        let (mut case, mut interaction) = recorded(500, &[], "x");
        interaction.outcome = Outcome::TransportError {
            kind: TransportErrorKind::Timeout,
            message: "timed out".into(),
        };
        case.parameters.push(ParameterValue {
            location: Location::Query,
            name: "limit".into(),
            value: serde_json::json!(5),
        });
        case.body = Some(CaseBody {
            media_type: "application/json".into(),
            value: json.clone(),
            sent_as: None,
        });
        case.series_step = Some(SeriesStep {
            series: "s1".into(),
            index: 2,
            bindings: BTreeMap::from([("id".into(), "/id".into())]),
        });
        exchanges.push((case, interaction));
        for (case, interaction) in &exchanges {
            for bodies in [
                Bodies::default(),
                Bodies {
                    request_value: case.body.as_ref().map(|b| &b.value),
                    response_json: Read::Json(&json),
                    ..Bodies::default()
                },
            ] {
                let tags = vec!["users".to_string()];
                let model = ExchangeModel::new(case, interaction, bodies, &tags);
                let everything = Reads::everything();
                let bound = Bound::of_exchange(case, interaction, bodies, &tags, &everything);
                for (root, _) in exchange::FIELDS {
                    let seen = expr::Expression::compile(root)
                        .unwrap()
                        .evaluate(&bound)
                        .unwrap();
                    assert_eq!(
                        expr::to_json(&seen),
                        model.value[*root],
                        "{root} of {interaction:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn headers_are_found_by_any_case_and_credentials_are_placeholders() {
        let check =
            "[[check]]\nname = \"rid\"\nexpect = \"header(response, 'X-Request-Id') != null\"\n";
        assert_eq!(
            judge(check, &exchange(200, &[("x-request-id", "a")], "{}")),
            Verdict::Holds
        );
        assert!(matches!(
            judge(check, &exchange(200, &[], "{}")),
            Verdict::Fails { .. }
        ));
        let model = exchange(200, &[], "{}");
        assert_eq!(
            model.value["request"]["headers"]["authorization"],
            "Bearer <credential:default>"
        );
        assert_eq!(model.value["response"]["time_ms"], 1.5);
        assert_eq!(model.value["case"]["tags"][0], "users");
    }

    #[test]
    fn the_worked_checks_of_the_docs_read() {
        let text = include_str!("../../fixtures/accounts/checks.toml");
        let checks = read_file("fixtures/accounts/checks.toml", text).unwrap();
        assert_eq!(checks.len(), 8);
        let card = checks.iter().find(|c| c.name == "no-card-numbers").unwrap();
        let mut model = exchange(200, &[], r#"{"card": "4111 1111 1111 1111"}"#);
        model.tags = vec!["public".into()];
        assert!(matches!(
            card.judge(&model, &Bound::new(&model.value)),
            Verdict::Fails { .. }
        ));
        let mut model = exchange(200, &[], r#"{"card": "**** 1111"}"#);
        model.tags = vec!["public".into()];
        assert_eq!(
            card.judge(&model, &Bound::new(&model.value)),
            Verdict::Holds
        );
    }
}
