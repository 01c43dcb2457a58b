//! `probe replay`: re-sends what a run recorded and says whether what it showed is still
//! there.
//!
//! A replay names an interaction, a finding (by its first interaction, or as
//! `<finding set>:<n>`), a finding set or a whole run. [`plan`] reads the store and works
//! out which recorded interactions must be sent again: the targets, and, for a test case
//! whose values were bound from earlier answers (its [`crate::model::SeriesStep`]
//! bindings, `<seq>#<json pointer>`), the interactions those answers came from,
//! recursively, each once, in their recorded order. [`execute`] re-sends them with
//! [`crate::send::wire::build`] (so a stored case always means the same request) and
//! the current invocation's credentials only, takes each bound value from the *new*
//! answer at the recorded pointer (a new id from the new POST flows into the next step),
//! judges every new answer with the same [`crate::oracle::Oracles`] the run used,
//! compares it with the recorded one ([`compare`]), and records the replay as a run of
//! its own ([`crate::model::RunKind::Replay`], with `replay_of` naming what it
//! replayed), with its interactions and a finding set.
//!
//! Verdicts (per finding, per attempt, overall):
//! - `reproduced`: the oracle that made the finding fires again;
//! - `fixed`: it fires no more, the new answer is clean (no oracle fires) and of the kind
//!   it was (same status class, or any status where a 5xx was recorded);
//! - `differs`: for a finding, it fires no more but the answer is not clean (another oracle
//!   fires, or no answer came) or changed kind; for a plain interaction, the answer
//!   differs meaningfully from the recorded one;
//! - `same`: a plain interaction whose answer matches the recorded one.
//!
//! Nothing here prints or decides an exit code; [`crate::app::replay`] does.
//!
//! Depends on: `store` (reading, encoding of an exchange), `model`, `spec`, `settings`,
//! `send` (the wire form, and where a `Location` points), `events` (the spine), `oracle`,
//! `stop` (a signal ends a replay).

pub mod compare;
mod execute;
mod plan;

use serde::Serialize;
use serde_json::Value;

use crate::ids::{CaseId, Digest, FindingSetId, InteractionId, RunId};
use crate::model::RunOutcome;
use crate::spec;
use crate::store::StoreError;

use self::compare::Comparison;

pub use self::execute::execute;
pub use self::plan::{load_api, plan, FindingRef, Plan};

/// Most attempts `--times` may ask for: every loop is bounded.
pub const MAX_TIMES: u32 = 1000;
/// Why a replay could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The run's stored settings do not read (a store written by hand).
    #[error("the run's settings: {0}")]
    Settings(#[from] crate::settings::SettingsError),
    /// The text given names nothing in the store (or too much).
    #[error(transparent)]
    Lookup(StoreError),
    #[error("the document of run {run} no longer loads: {source}")]
    Spec {
        run: RunId,
        #[source]
        source: spec::SpecError,
    },
    #[error(
        "`{text}` names a {kind}; replay takes an interaction, a finding, a finding set or a run"
    )]
    NotReplayable { text: String, kind: String },
    #[error("`{text}`: finding set {set} has {len} findings; count them from 1")]
    NoSuchFinding {
        text: String,
        set: FindingSetId,
        len: usize,
    },
    #[error("`{text}` is not `<finding set id>:<n>`")]
    BadFindingName { text: String },
    #[error("test case {case} binds `{parameter}` to `{binding}`, which is not `<seq>#<json pointer>` of an earlier interaction")]
    BadBinding {
        case: CaseId,
        parameter: String,
        binding: String,
    },
    #[error("interaction {interaction} (seq {seq}) takes a value from seq {source_seq}, which run {run} does not hold")]
    MissingSource {
        interaction: InteractionId,
        seq: u64,
        source_seq: u64,
        run: RunId,
    },
    #[error("object {id}: {reason}")]
    Inconsistent { id: Digest, reason: String },
    #[error(transparent)]
    Identity(#[from] crate::send::identity::IdentityError),
    #[error("interaction {interaction}: its test case names operation `{operation}`, which the run's document does not have")]
    UnknownOperation {
        interaction: InteractionId,
        operation: String,
    },
    #[error("`--times {0}`: give 1 to {MAX_TIMES}")]
    Times(u32),
    #[error("cannot start the HTTP client: {0}")]
    Client(String),
    #[error("run {run} sent credentials this invocation does not give: {}; replayed without them, a request is answered as an anonymous one and the verdict says nothing about the finding", .places.join(", "))]
    MissingCredentials {
        /// The run's short id (12 hex characters).
        run: String,
        places: Vec<String>,
    },
}

/// What a replay names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetKind {
    Interaction,
    Finding,
    FindingSet,
    Run,
    /// Every step of a series, in order.
    Series,
}
/// How to replay.
#[derive(Clone, Debug)]
pub struct ReplayOptions {
    /// Where to send; `None` sends to the run's base URL.
    pub base_url: Option<String>,
    /// This invocation's identities, the default first; the store never holds a
    /// credential.
    pub identities: Vec<crate::send::IdentitySpec>,
    /// Attempts (`--times`), 1 to [`MAX_TIMES`].
    pub times: u32,
    /// Replay even where this invocation lacks credentials the run sent
    /// (`--without-credentials`); otherwise that is [`ReplayError::MissingCredentials`].
    pub without_credentials: bool,
    /// The network settings of this invocation (`send.caCert=FILE`, ...: what its network
    /// flags stand for); the run's own are not used.
    pub network: Vec<String>,
    /// Told to stop (a signal): nothing more is sent, the request in flight is cancelled
    /// and recorded, and the replay is recorded as `interrupted`.
    pub stop: crate::stop::Stop,
}

/// A verdict, see the module documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Reproduced,
    Differs,
    Fixed,
    Same,
}

impl Verdict {
    pub fn as_str(&self) -> &'static str {
        match self {
            Verdict::Reproduced => "reproduced",
            Verdict::Differs => "differs",
            Verdict::Fixed => "fixed",
            Verdict::Same => "same",
        }
    }
}

/// Why an exchange was sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Its answer feeds a value of a later step.
    Source,
    /// It is (or carries) what was asked for.
    Target,
}

/// A value taken again from a new answer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Bound {
    pub parameter: String,
    /// Seq in the recorded run of the answer it came from.
    pub from_seq: u64,
    pub pointer: String,
    pub recorded: Value,
    pub now: Value,
    /// False when the new answer had nothing at the pointer: the recorded value was sent.
    pub rebound: bool,
}

/// One re-sent interaction compared with the recorded one.
#[derive(Clone, Debug, Serialize)]
pub struct Exchanged {
    pub role: Role,
    pub recorded: InteractionId,
    pub recorded_seq: u64,
    /// The new interaction, in the replay run.
    pub interaction: InteractionId,
    pub seq: u64,
    pub operation: String,
    pub method: String,
    /// The URL sent, as stored (credentials as placeholders).
    pub url: String,
    pub bound: Vec<Bound>,
    pub comparison: Comparison,
    /// Oracles that fire on the new answer.
    pub fired: Vec<String>,
    /// `same` or `differs`.
    pub verdict: Verdict,
}

/// One finding judged again.
#[derive(Clone, Debug, Serialize)]
pub struct FindingVerdict {
    pub finding: String,
    pub oracle: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    pub operation: String,
    pub message: String,
    /// The new interaction it was judged on.
    pub interaction: InteractionId,
    pub fired: Vec<String>,
    pub verdict: Verdict,
}

/// One attempt (`--times` makes several).
#[derive(Clone, Debug, Serialize)]
pub struct Attempt {
    pub exchanges: Vec<Exchanged>,
    pub findings: Vec<FindingVerdict>,
    pub verdict: Verdict,
}

/// What a replay did and found.
#[derive(Clone, Debug, Serialize)]
pub struct ReplayReport {
    /// The replay's own run.
    pub run: RunId,
    pub kind: TargetKind,
    pub replay_of: String,
    pub replayed_run: RunId,
    pub base_url: String,
    pub times: u32,
    /// Attempts in which the finding was reproduced.
    pub reproduced: u32,
    pub verdict: Verdict,
    pub attempts: Vec<Attempt>,
    /// The replay run's finding set.
    pub finding_set: FindingSetId,
    pub outcome: RunOutcome,
    /// Things a person should know (a bound value that could not be taken again, ...).
    pub notes: Vec<String>,
    /// Where the run sent credentials that this replay did not (`--without-credentials`):
    /// `header authorization`, `query api_key`, `cookie session`, each with ` (as identity
    /// NAME)` when not the default's; the verdict was made without them. Empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub without_credentials: Vec<String>,
}
#[cfg(test)]
mod tests {
    use super::execute::{attempt_verdict, finding_verdict, rebind, NewAnswer};
    use super::plan::Original;
    use super::*;
    use crate::model::Binding;
    use crate::model::{
        Interaction, Location, Outcome, RunKind, RunStart, TestCase, Timing, TransportErrorKind,
    };
    use crate::model::{ParameterValue, RequestRecord, SeriesStep};
    use crate::store::Store;
    use serde_json::json;
    use std::collections::BTreeMap;

    fn original(bindings: &[(&str, &str)]) -> Original {
        let case = TestCase {
            operation: "getPet".into(),
            method: "GET".into(),
            path: "/pets/{petId}".into(),
            parameters: vec![ParameterValue {
                location: Location::Path,
                name: "petId".into(),
                value: json!(17),
            }],
            body: None,
            strategy: crate::model::Strategy::Nominal,
            mode: "random".into(),
            origins: BTreeMap::new(),
            intent: Default::default(),
            mutation: None,
            series_step: Some(SeriesStep {
                series: "memory".into(),
                index: 0,
                bindings: bindings
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            }),
            credentials: None,
            shrinking: None,
            identity: None,
        };
        let id = InteractionId(Digest::of(b"i"));
        Original {
            id,
            interaction: Interaction {
                run: RunId(Digest::of(b"r")),
                seq: 9,
                case: CaseId(Digest::of(b"c")),
                request: RequestRecord {
                    method: "GET".into(),
                    url: "http://h/pets/17".into(),
                    headers: vec![],
                    body: None,
                },
                outcome: Outcome::TransportError {
                    kind: TransportErrorKind::Other,
                    message: String::new(),
                },
                timing: Timing {
                    started_ms: 0,
                    elapsed_us: 0,
                },
                retried: None,
            },
            bindings: bindings
                .iter()
                .filter_map(|(k, v)| Some((k.to_string(), Binding::parse(v)?)))
                .collect(),
            case,
        }
    }

    #[test]
    fn a_new_id_flows_into_the_bound_parameter() {
        let o = original(&[("petId", "4#/id")]);
        let mut answers = BTreeMap::new();
        answers.insert(
            4,
            NewAnswer {
                seq: 1,
                json: Some(json!({"id": 99, "name": "Rex"})),
                status: Some(201),
                location: None,
            },
        );
        let mut notes = Vec::new();
        let (case, bound) = rebind(&o, &answers, &mut notes);
        assert_eq!(case.parameters[0].value, json!(99));
        assert_eq!(
            case.series_step.unwrap().bindings["petId"],
            "1#/id",
            "renumbered to the replay's seq"
        );
        assert_eq!(bound[0].recorded, json!(17));
        assert!(bound[0].rebound && notes.is_empty());
    }

    /// A place in the body bound to an answer takes the new answer's value there.
    #[test]
    fn a_new_id_flows_into_the_bound_body_place() {
        let mut o = original(&[("body.data.bucket_id", "4#/data/id")]);
        o.case.body = Some(crate::model::CaseBody {
            media_type: "application/json".into(),
            value: json!({"data": {"bucket_id": "b1", "amount": 3}}),
            sent_as: None,
        });
        let mut answers = BTreeMap::new();
        answers.insert(
            4,
            NewAnswer {
                seq: 2,
                json: Some(json!({"data": {"id": "b2"}})),
                status: Some(201),
                location: None,
            },
        );
        let mut notes = Vec::new();
        let (case, bound) = rebind(&o, &answers, &mut notes);
        assert_eq!(
            case.body.unwrap().value,
            json!({"data": {"bucket_id": "b2", "amount": 3}})
        );
        assert_eq!(
            case.series_step.unwrap().bindings["body.data.bucket_id"],
            "2#/data/id"
        );
        assert_eq!(bound[0].recorded, json!("b1"));
        assert!(bound[0].rebound && notes.is_empty(), "{notes:?}");
        // A body without that place is sent as recorded, with a note.
        let mut o = original(&[("body.owner", "4#/data/id")]);
        o.case.body = Some(crate::model::CaseBody {
            media_type: "application/json".into(),
            value: json!({"data": {}}),
            sent_as: None,
        });
        let mut notes = Vec::new();
        let (case, _) = rebind(&o, &answers, &mut notes);
        assert_eq!(case.body.unwrap().value, json!({"data": {}}));
        assert_eq!(notes.len(), 1);
    }

    /// A value learned from a `Location` header is taken from the new answer's header.
    #[test]
    fn a_new_location_flows_into_the_bound_parameter() {
        let o = original(&[("petId", "4#header:location")]);
        let mut answers = BTreeMap::new();
        answers.insert(
            4,
            NewAnswer {
                seq: 1,
                json: None,
                status: Some(201),
                location: Some("/pets/123".into()),
            },
        );
        let mut notes = Vec::new();
        let (case, bound) = rebind(&o, &answers, &mut notes);
        assert_eq!(case.parameters[0].value, json!("123"));
        assert!(bound[0].rebound && notes.is_empty(), "{notes:?}");
    }

    #[test]
    fn a_missing_value_keeps_the_recorded_one_with_a_note() {
        let o = original(&[("petId", "4#/id")]);
        let mut answers = BTreeMap::new();
        answers.insert(
            4,
            NewAnswer {
                seq: 1,
                json: None,
                status: Some(400),
                location: None,
            },
        );
        let mut notes = Vec::new();
        let (case, bound) = rebind(&o, &answers, &mut notes);
        assert_eq!(case.parameters[0].value, json!(17));
        assert!(!bound[0].rebound);
        assert!(notes[0].contains("(400)"), "{notes:?}");
    }

    /// A store holding one run of the demo document with the given interactions.
    fn store_with(
        cases: &[(u64, TestCase, &str)],
    ) -> (tempfile::TempDir, Store, Vec<InteractionId>) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s")).unwrap();
        let document = store
            .put_blob(crate::fixture::demo::DOCUMENT.as_bytes())
            .unwrap();
        let run = RunId(
            store
                .put(&RunStart {
                    kind: RunKind::Run,
                    tool_version: "test".into(),
                    store_format: crate::store::STORE_FORMAT.to_string(),
                    document,
                    document_source: "demo.yaml".into(),
                    settings: BTreeMap::new(),
                    seed: 1,
                    base_url: "http://127.0.0.1:9".into(),
                    started_ms: 1,
                    name: None,
                    tags: BTreeMap::new(),
                    replay_of: None,
                    documents: BTreeMap::new(),
                    inputs: BTreeMap::new(),
                })
                .unwrap(),
        );
        let mut ids = Vec::new();
        for (seq, case, url) in cases {
            let case_id = CaseId(store.put(case).unwrap());
            let mut i = original(&[]).interaction;
            i.run = run;
            i.seq = *seq;
            i.case = case_id;
            i.request.url = url.to_string();
            ids.push(InteractionId(store.put(&i).unwrap()));
        }
        (dir, store, ids)
    }

    #[test]
    fn damaged_bindings_are_errors_naming_the_objects() {
        let bad = original(&[("petId", "not a binding")]).case;
        let (_d, store, ids) = store_with(&[(0, bad.clone(), "http://h/pets/17")]);
        let e = plan(&store, &ids[0].to_string()).unwrap_err();
        assert!(matches!(e, ReplayError::BadBinding { .. }), "{e}");
        let case_id = CaseId(crate::store::encode(&bad).unwrap().id);
        assert!(e.to_string().contains(&case_id.to_string()), "{e}");

        // A binding to a later (or absent) seq is refused: it cannot have been answered.
        let forward = original(&[("petId", "5#/id")]).case;
        let (_d, store, ids) = store_with(&[(3, forward, "http://h/pets/17")]);
        let e = plan(&store, &ids[0].to_string()).unwrap_err();
        assert!(
            matches!(e, ReplayError::MissingSource { source_seq: 5, .. }),
            "{e}"
        );
        assert!(e.to_string().contains(&ids[0].to_string()), "{e}");

        // A test case naming an operation the document lacks.
        let mut odd = original(&[]).case;
        odd.operation = "noSuchOperation".into();
        let (_d, store, ids) = store_with(&[(0, odd, "http://h/x")]);
        let p = plan(&store, &ids[0].to_string()).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let e = runtime
            .block_on(execute(
                &store,
                &p,
                &ReplayOptions {
                    base_url: None,
                    identities: vec![crate::send::IdentitySpec::default_with(
                        crate::send::Credentials::default(),
                    )],
                    times: 1,
                    without_credentials: false,
                    network: Vec::new(),
                    stop: crate::stop::Stop::new(),
                },
                &crate::events::discard(),
            ))
            .unwrap_err();
        assert!(matches!(e, ReplayError::UnknownOperation { .. }), "{e}");
        assert!(e.to_string().contains(&ids[0].to_string()), "{e}");

        // What is not replayable says what it is.
        let e = plan(&store, &p.start.document.to_string()).unwrap_err();
        assert!(e.to_string().contains("names a blob"), "{e}");
        let e = plan(&store, "zzzz:1").unwrap_err();
        assert!(matches!(e, ReplayError::Lookup(_)), "{e}");
    }

    #[test]
    fn serve_refuses_a_recorded_url_it_cannot_read() {
        let case = original(&[]).case;
        let (_d, store, ids) = store_with(&[(0, case, "not a url")]);
        let runs = store.runs().unwrap();
        let e = crate::serve::Recording::load(&store, &runs[0].id.to_string()).unwrap_err();
        assert!(e.to_string().contains(&ids[0].to_string()), "{e}");
        let e = crate::serve::Recording::load(&store, &ids[0].to_string()).unwrap_err();
        assert!(e.to_string().contains("not a run"), "{e}");
    }

    #[test]
    fn fixed_means_a_clean_answer_of_the_same_kind() {
        let none: Vec<String> = vec![];
        let other = vec!["status_code_declared".to_owned()];
        let v = |oracle, fired: &[String], a, b| finding_verdict(oracle, fired, a, b);
        assert_eq!(
            v(
                "server_error",
                &["server_error".into()],
                Some(500),
                Some(503)
            ),
            Verdict::Reproduced
        );
        assert_eq!(
            v("server_error", &none, Some(500), Some(200)),
            Verdict::Fixed
        );
        assert_eq!(
            v("server_error", &none, Some(500), Some(400)),
            Verdict::Fixed
        );
        assert_eq!(
            v("server_error", &other, Some(500), Some(418)),
            Verdict::Differs
        );
        assert_eq!(
            v("status_code_declared", &none, Some(202), Some(204)),
            Verdict::Fixed
        );
        assert_eq!(
            v("status_code_declared", &none, Some(202), Some(404)),
            Verdict::Differs
        );
        assert_eq!(v("server_error", &none, Some(500), None), Verdict::Differs);
    }

    #[test]
    fn verdicts_follow_the_findings_first() {
        let f = |v| FindingVerdict {
            finding: "s:1".into(),
            oracle: "server_error".into(),
            code: None,
            operation: "listPets".into(),
            message: String::new(),
            interaction: InteractionId(Digest::of(b"x")),
            fired: vec![],
            verdict: v,
        };
        assert_eq!(
            attempt_verdict(&[], &[f(Verdict::Fixed), f(Verdict::Reproduced)]),
            Verdict::Reproduced
        );
        assert_eq!(attempt_verdict(&[], &[f(Verdict::Fixed)]), Verdict::Fixed);
        assert_eq!(
            attempt_verdict(&[], &[f(Verdict::Fixed), f(Verdict::Differs)]),
            Verdict::Differs
        );
        assert_eq!(attempt_verdict(&[], &[]), Verdict::Same);
    }
}
