//! Program checks beside a judging (docs/checks.md, "Checks as programs"): each `[[check]]`
//! with a `command` runs as a [`Running`] program for the length of one run or one
//! recheck, is handed every answered exchange its `applies` lets through, and is finished
//! at the end. Its `fails` verdicts become observations of its `check:<name>` oracle, with
//! the same keys as a declarative check's, so they make findings like any other.
//!
//! A program answers when it can, so its verdicts are *late*: each names an exchange judged
//! earlier. [`ProgramChecks::late`] hands over those that have come (the caller collects
//! them with the interaction and the case they are about), and [`ProgramChecks::finish`]
//! the rest at the end.
//!
//! Memory stays bounded whatever the program does. What is kept per exchange sent and not
//! yet answered is its id, its seq and a shared test case, for at most [`OUTSTANDING`]
//! exchanges; an exchange the program has no room for is kept whole (its model) for the
//! end, up to [`SPILL_EXCHANGES`] exchanges or [`SPILL_BYTES`] bytes of models; past that
//! it is counted as not judged, with the reason. In a run nothing ever waits for a program
//! (sending must not slow down); in a recheck, where nothing is sent, a program is waited
//! for, up to its deadline at a time.
//!
//! Depends on: `check` (the program protocol, the exchange model), `model`, `ids`, and its
//! parent.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::user::info_of;
use super::{CheckCounts, Exchange, Observation, OracleInfo};
use crate::check::program::{ProgramFailure, ProgramSpec, ProgramVerdict, Running, Submitted};
use crate::check::{Applies, Bodies, Check, ExchangeModel};
use crate::ids::InteractionId;
use crate::model::TestCase;

/// Exchanges sent to a program and not answered yet, at most: past this the program is
/// "behind" and what comes is kept for the end.
pub const OUTSTANDING: usize = 16_384;
/// Exchanges kept (whole) for a program that was behind, at most.
pub const SPILL_EXCHANGES: usize = 4_096;
/// Bytes of exchange models kept for a program that was behind, at most.
pub const SPILL_BYTES: usize = 32 << 20;

/// An observation a program made of an exchange judged earlier, with what the collector
/// needs of that exchange.
#[derive(Debug)]
pub struct Late {
    pub observation: Observation,
    pub interaction: InteractionId,
    pub seq: u64,
    pub case: Arc<TestCase>,
}

/// The program checks of one judging.
pub struct ProgramChecks {
    programs: Vec<Program>,
    /// Whether a full queue is waited on (a recheck) rather than spilled (a run).
    waits: bool,
}

struct Program {
    info: &'static OracleInfo,
    applies: Applies,
    spec: ProgramSpec,
    state: Mutex<State>,
}

/// What an exchange sent (or kept) for a program is remembered by until it is answered.
struct Pending {
    interaction: InteractionId,
    case: Arc<TestCase>,
    status: Option<u16>,
}

#[derive(Default)]
struct State {
    running: Option<Running>,
    started: bool,
    finished: bool,
    /// A wait in a recheck ran out: the program stopped reading; wait no more.
    stalled: bool,
    failure: Option<ProgramFailure>,
    pending: HashMap<u64, Pending>,
    spilled: Vec<(u64, String)>,
    spilled_bytes: usize,
    counts: CheckCounts,
    late: Vec<Late>,
}

impl ProgramChecks {
    /// The program checks among `checks` (`None` when there is none).
    pub fn new(checks: &[Check]) -> Option<ProgramChecks> {
        let programs: Vec<Program> = checks
            .iter()
            .filter_map(|check| {
                let program = check.program()?;
                Some(Program {
                    info: info_of(check),
                    applies: check.applies.clone(),
                    spec: ProgramSpec {
                        check: check.name.clone(),
                        command: program.command.clone(),
                        env: program.env.clone(),
                        deadline: program.deadline,
                    },
                    state: Mutex::new(State {
                        counts: CheckCounts {
                            name: check.name.clone(),
                            ..CheckCounts::default()
                        },
                        ..State::default()
                    }),
                })
            })
            .collect();
        (!programs.is_empty()).then_some(ProgramChecks {
            programs,
            waits: false,
        })
    }

    /// Waits for a program whose queue is full (up to its deadline), for a recheck.
    pub fn waiting(mut self) -> ProgramChecks {
        self.waits = true;
        self
    }

    /// Hands one answered exchange to every program whose `applies` lets it through. The
    /// model is built once, and only when some program takes the exchange.
    pub fn submit(&self, exchange: &Exchange<'_>) {
        let case = exchange.case;
        let status = exchange.interaction.outcome.status();
        if status.is_none() {
            // As in a recheck, which judges answers only: a run and its recheck agree.
            return;
        }
        // Built once, for the first program that takes the exchange.
        let mut model: Option<(String, Arc<TestCase>)> = None;
        for program in &self.programs {
            if !program.applies.admits(
                &case.operation,
                &case.method,
                &case.path,
                &exchange.operation.tags,
                status,
            ) {
                continue;
            }
            let (text, case) =
                model.get_or_insert_with(|| (model_of(exchange), Arc::new(exchange.case.clone())));
            let mut state = program.state.lock().unwrap_or_else(|e| e.into_inner());
            let pending = Pending {
                interaction: exchange.id,
                case: case.clone(),
                status,
            };
            let seq = exchange.interaction.seq;
            state.submit(program, self.waits, seq, pending, text);
        }
    }

    /// The observations made since the last call, of exchanges judged earlier.
    pub fn late(&self) -> Vec<Late> {
        let mut out = Vec::new();
        for program in &self.programs {
            let mut state = program.state.lock().unwrap_or_else(|e| e.into_inner());
            state.absorb(program);
            out.append(&mut state.late);
        }
        out
    }

    /// Ends every program (together: each may take up to its deadline) and gives the
    /// observations not handed over yet. Exchanges handed over after this are not judged.
    pub fn finish(&self) -> Vec<Late> {
        std::thread::scope(|s| {
            for program in &self.programs {
                s.spawn(move || {
                    let mut state = program.state.lock().unwrap_or_else(|e| e.into_inner());
                    state.finish(program);
                });
            }
        });
        self.late()
    }

    /// What each program check did, by check name.
    pub fn counts(&self) -> BTreeMap<String, CheckCounts> {
        self.programs
            .iter()
            .map(|p| {
                let state = p.state.lock().unwrap_or_else(|e| e.into_inner());
                (p.spec.check.clone(), state.counts.clone())
            })
            .collect()
    }

    /// How each program that failed failed, with the exchanges it left not judged.
    pub fn failures(&self) -> Vec<String> {
        self.programs
            .iter()
            .filter_map(|p| {
                let state = p.state.lock().unwrap_or_else(|e| e.into_inner());
                let failure = state.failure.as_ref()?;
                Some(format!(
                    "{failure} ({} exchanges not judged)",
                    state.counts.not_judged
                ))
            })
            .collect()
    }
}

/// The exchange model as JSON text, written once for every program that takes it.
fn model_of(exchange: &Exchange<'_>) -> String {
    let case = exchange.case;
    let bodies = Bodies {
        request_value: case.body.as_ref().map(|b| &b.value),
        response: exchange.response_body,
        ..Bodies::default()
    };
    let model = ExchangeModel::new(case, exchange.interaction, bodies, &exchange.operation.tags);
    model.value.to_string()
}

impl State {
    fn submit(&mut self, program: &Program, waits: bool, seq: u64, pending: Pending, model: &str) {
        let size = model.len();
        if self.finished || self.pending.contains_key(&seq) {
            self.not_judged(seq, "handed over after the check had ended".into());
            return;
        }
        if !self.started {
            self.started = true;
            match Running::start(program.spec.clone()) {
                Ok(running) => self.running = Some(running),
                Err(failure) => self.failure = Some(failure),
            }
        }
        self.absorb(program);
        let stalled = self.stalled;
        let Some(running) = self.running.as_mut() else {
            let reason = self.reason();
            self.not_judged(seq, reason);
            return;
        };
        let submitted = if running.outstanding() >= OUTSTANDING {
            Submitted::Full
        } else if waits && !stalled {
            let until = Instant::now() + program.spec.deadline;
            let s = submit_until(running, seq, model, until);
            self.stalled = s == Submitted::Full;
            s
        } else {
            running.submit_text(seq, model)
        };
        match submitted {
            Submitted::Queued => {
                self.pending.insert(seq, pending);
            }
            Submitted::Full => {
                if self.spilled.len() < SPILL_EXCHANGES && self.spilled_bytes + size <= SPILL_BYTES
                {
                    self.spilled.push((seq, model.to_string()));
                    self.spilled_bytes += size;
                    self.pending.insert(seq, pending);
                } else {
                    self.not_judged(
                        seq,
                        format!(
                            "the program was behind by more than {OUTSTANDING} exchanges, and \
                             {SPILL_EXCHANGES} exchanges ({} MiB) waited for it already",
                            SPILL_BYTES >> 20
                        ),
                    );
                }
            }
            Submitted::Stopped => {
                let reason = self.reason();
                self.not_judged(seq, reason);
            }
        }
    }

    /// Why the program judges no more.
    fn reason(&self) -> String {
        let failure = self
            .running
            .as_ref()
            .and_then(Running::failure)
            .or(self.failure.as_ref());
        match failure {
            Some(f) => f.to_string(),
            None => format!("check `{}`: the program stopped reading", self.counts.name),
        }
    }

    /// Takes the verdicts that have come.
    fn absorb(&mut self, program: &Program) {
        let verdicts = match self.running.as_mut() {
            Some(running) => running.take_verdicts(),
            None => return,
        };
        for (id, verdict) in verdicts {
            self.verdict(program, id, verdict);
        }
    }

    fn verdict(&mut self, program: &Program, id: u64, verdict: ProgramVerdict) {
        let Some(pending) = self.pending.remove(&id) else {
            return;
        };
        let message = match verdict {
            ProgramVerdict::Skip => return,
            ProgramVerdict::Holds => {
                self.counts.judged += 1;
                return;
            }
            ProgramVerdict::Fails { message } => message,
        };
        self.counts.judged += 1;
        self.counts.failed += 1;
        self.late.push(Late {
            observation: super::user::failure(
                program.info,
                &pending.case.operation,
                pending.status,
                message,
            ),
            interaction: pending.interaction,
            seq: id,
            case: pending.case,
        });
    }

    fn not_judged(&mut self, seq: u64, reason: String) {
        self.counts.not_judged += 1;
        let first = &mut self.counts.first_not_judged;
        if first.as_ref().is_none_or(|(_, s)| seq < *s) {
            *first = Some((reason, seq));
        }
    }

    /// Hands the program what was kept for it, ends it, and counts what it left.
    fn finish(&mut self, program: &Program) {
        if self.finished {
            return;
        }
        self.finished = true;
        self.absorb(program);
        if let Some(mut running) = self.running.take() {
            let until = Instant::now() + program.spec.deadline;
            for (seq, model) in std::mem::take(&mut self.spilled) {
                if submit_until(&mut running, seq, &model, until) != Submitted::Queued {
                    self.pending.remove(&seq);
                    let reason = running.failure().map_or_else(
                        || {
                            format!(
                                "check `{}`: the program read no more within {:?}",
                                program.spec.check, program.spec.deadline
                            )
                        },
                        ToString::to_string,
                    );
                    self.not_judged(seq, reason);
                }
            }
            let report = running.finish();
            for (id, verdict) in report.verdicts {
                self.verdict(program, id, verdict);
            }
            self.failure = report.failure.or(self.failure.take());
        }
        self.spilled_bytes = 0;
        let reason = self.reason();
        let mut left: Vec<u64> = self.pending.drain().map(|(seq, _)| seq).collect();
        left.sort_unstable();
        for seq in left {
            self.not_judged(seq, reason.clone());
        }
    }
}

/// Offers an exchange, waiting for room in the queue until `until` (the program may have
/// stopped reading: a wait is never longer than its deadline).
fn submit_until(running: &mut Running, seq: u64, model: &str, until: Instant) -> Submitted {
    loop {
        match running.submit_text(seq, model) {
            Submitted::Full if Instant::now() < until => {
                std::thread::sleep(Duration::from_millis(1));
            }
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{CaseId, Digest, RunId};
    use crate::model::*;

    const DOCUMENT: &[u8] = br#"
openapi: 3.1.0
info: { title: t, version: "1" }
paths:
  /items/{id}:
    get:
      operationId: getItem
      parameters:
        - { name: id, in: path, required: true, schema: { type: integer } }
      responses:
        "200": { description: ok }
"#;

    /// A program check of `python3 -c code`.
    fn checks(code: &str, deadline: &str) -> Vec<Check> {
        let text = format!(
            "[[check]]\nname = \"p\"\ncommand = [\"python3\", \"-c\", {code:?}]\ndeadline = \"{deadline}\"\n"
        );
        crate::check::read_file("p.toml", &text).unwrap()
    }

    /// Answers each exchange after `pause` seconds: `fails` when its seq is odd.
    fn answering(pause: f64) -> String {
        format!(
            "import json, sys, time\n\
             for line in sys.stdin:\n\
             \x20   m = json.loads(line)\n\
             \x20   if m['type'] != 'exchange': continue\n\
             \x20   time.sleep({pause})\n\
             \x20   odd = m['exchange']['seq'] % 2 == 1\n\
             \x20   print(json.dumps({{'id': m['id'], 'verdict': 'fails' if odd else 'holds', 'message': 'odd'}}), flush=True)\n"
        )
    }

    /// Hands `n` exchanges (seq 0..n) to `programs`, collecting late observations as a run
    /// does; gives them all, with the end's.
    fn judge(programs: &ProgramChecks, n: u64) -> (Vec<Late>, Duration) {
        let api = crate::spec::parse(DOCUMENT, "t.yaml", None).unwrap();
        let op = &api.operations[0];
        let case = TestCase {
            operation: op.key.name(),
            method: "GET".into(),
            path: "/items/{id}".into(),
            parameters: vec![],
            body: None,
            strategy: Strategy::Nominal,
            mode: "random".into(),
            origins: Default::default(),
            intent: Intent::Acceptable,
            mutation: None,
            series_step: None,
            credentials: None,
            shrinking: None,
            identity: None,
        };
        let mut late = Vec::new();
        let started = Instant::now();
        for seq in 0..n {
            let interaction = Interaction {
                run: RunId(Digest::of(b"run")),
                seq,
                case: CaseId(Digest::of(b"case")),
                request: RequestRecord {
                    method: "GET".into(),
                    url: "http://127.0.0.1:1/items/1".into(),
                    headers: vec![],
                    body: None,
                },
                outcome: Outcome::Response(ResponseRecord {
                    status: 200,
                    headers: vec![],
                    body: None,
                    truncated: false,
                }),
                timing: Timing {
                    started_ms: 0,
                    elapsed_us: 10,
                },
                retried: None,
            };
            programs.submit(&Exchange {
                id: InteractionId(Digest::of(&seq.to_le_bytes())),
                operation: op,
                case: &case,
                interaction: &interaction,
                response_body: None,
                response_json: None,
            });
            late.extend(programs.late());
        }
        let handing = started.elapsed();
        late.extend(programs.finish());
        (late, handing)
    }

    #[test]
    fn a_slow_program_never_makes_a_run_wait_and_judges_the_rest_at_the_end() {
        let checks = checks(&answering(0.0005), "20s");
        let programs = ProgramChecks::new(&checks).unwrap();
        let (late, handing) = judge(&programs, 3000);
        // 3,000 exchanges at 0.5 ms each take the program 1.5 s at least; handing them
        // over took a fraction of that: what had no room waited for the end.
        assert!(handing < Duration::from_millis(1200), "{handing:?}");
        let counts = &programs.counts()["p"];
        assert_eq!(
            (counts.judged, counts.failed, counts.not_judged),
            (3000, 1500, 0),
            "{counts:?}"
        );
        assert_eq!(late.len(), 1500);
        assert!(late.iter().all(|l| l.seq % 2 == 1));
        assert_eq!(late[0].observation.oracle.name, "check:p");
        assert_eq!(late[0].observation.key_by_kind, "check:p|getItem|200");
        assert_eq!(
            late[0].interaction,
            InteractionId(Digest::of(&late[0].seq.to_le_bytes()))
        );
        assert!(programs.failures().is_empty());
    }

    #[test]
    fn a_program_that_ends_early_leaves_its_exchanges_not_judged_with_the_reason() {
        let checks = checks("import sys; sys.stdin.readline(); sys.exit(4)", "5s");
        let programs = ProgramChecks::new(&checks).unwrap();
        let (late, _) = judge(&programs, 50);
        assert!(late.is_empty());
        let counts = &programs.counts()["p"];
        assert_eq!((counts.judged, counts.not_judged), (0, 50), "{counts:?}");
        let (reason, seq) = counts.first_not_judged.clone().unwrap();
        assert_eq!(seq, 0);
        assert!(reason.starts_with("check `p`: "), "{reason}");
        let failures = programs.failures();
        assert_eq!(failures.len(), 1);
        assert!(
            failures[0].contains("exit status: 4")
                && failures[0].ends_with("(50 exchanges not judged)"),
            "{failures:?}"
        );
    }

    #[test]
    fn a_recheck_waits_for_the_program_rather_than_keep_exchanges() {
        let checks = checks(&answering(0.0), "5s");
        let programs = ProgramChecks::new(&checks).unwrap().waiting();
        let (late, _) = judge(&programs, 5000);
        assert_eq!(late.len(), 2500);
        let state = programs.programs[0].state.lock().unwrap();
        assert_eq!(state.counts.judged, 5000);
        assert!(state.spilled.is_empty() && state.pending.is_empty());
    }

    #[test]
    fn a_program_that_cannot_start_judges_nothing_and_says_why() {
        let text = "[[check]]\nname = \"p\"\ncommand = [\"/nonexistent/checker\"]\n";
        let checks = crate::check::read_file("p.toml", text).unwrap();
        let programs = ProgramChecks::new(&checks).unwrap();
        let (late, _) = judge(&programs, 5);
        assert!(late.is_empty());
        assert_eq!(programs.counts()["p"].not_judged, 5);
        assert!(
            programs.failures()[0].contains("/nonexistent/checker"),
            "{:?}",
            programs.failures()
        );
    }
    /// A measurement, not a check: how many exchanges a second a trivial Python program
    /// judges, waited for (a recheck) and not (a run). `cargo test --lib
    /// oracle::programs::tests::trivial_python_rate -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn trivial_python_rate() {
        let code = "import sys, json\nfor line in sys.stdin:\n    m = json.loads(line)\n    if m['type'] == 'exchange': sys.stdout.write('{\"id\":%d,\"verdict\":\"holds\"}\\n' % m['id'])\n";
        for waits in [true, false] {
            let checks = checks(code, "30s");
            let mut programs = ProgramChecks::new(&checks).unwrap();
            if waits {
                programs = programs.waiting();
            }
            let started = std::time::Instant::now();
            let (_, handing) = judge(&programs, 50_000);
            let all = started.elapsed();
            let c = &programs.counts()["p"];
            eprintln!(
                "waits {waits}: judged {} not {} handing {:?} all {:?} rate {:.0}/s",
                c.judged,
                c.not_judged,
                handing,
                all,
                50_000.0 / all.as_secs_f64()
            );
        }
    }
}
