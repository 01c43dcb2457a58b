//! Checks as programs (docs/checks.md, "Checks as programs"): a `[[check]]` with a
//! `command` runs a program in any language that reads exchanges as NDJSON on its standard
//! input and writes verdicts as NDJSON on its standard output, under the versioned protocol
//! [`PROTOCOL`].
//!
//! probe → program, one JSON object a line:
//! - first `{"type":"hello","protocol":"probe.check.program/1","model":"probe.check.exchange/1","check":NAME}`;
//! - then `{"type":"exchange","id":N,"exchange":MODEL}` for each exchange;
//! - last `{"type":"end"}`, and standard input closes.
//!
//! program → probe, one line per exchange it judged, in any order:
//! `{"id":N,"verdict":"holds"|"fails"|"skip","message":TEXT}` (`message` for `fails`).
//!
//! The program is a guest: it runs with an empty environment but for `PATH` and the
//! variables its check names (`env = [...]`), so no credential or address of probe's
//! reaches it; it is killed when it outlives its deadline after `end`. A program that
//! crashes, hangs, writes a line that is not a verdict or answers an id it was never sent
//! stops being asked; every exchange it did not answer is counted as not judged, and the
//! failure is kept as a [`ProgramFailure`] naming the check and the exchange. Sending never
//! waits on it: exchanges go through a bounded queue, and [`Running::submit`] says when the
//! queue is full so that the caller judges that exchange later.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TryRecvError, TrySendError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{json, Value};

use super::exchange::EXCHANGE_MODEL;

/// The name and version of the program protocol.
pub const PROTOCOL: &str = "probe.check.program/1";

/// Exchanges waiting for the program, at most.
const QUEUE: usize = 1024;

/// How a program check is started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgramSpec {
    pub check: String,
    /// The program and its arguments.
    pub command: Vec<String>,
    /// Environment variables passed through from probe's environment, by name.
    pub env: Vec<String>,
    /// How long the program may take, after the last exchange, to answer the rest.
    pub deadline: Duration,
}

/// What a program said of one exchange.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProgramVerdict {
    Holds,
    Fails { message: String },
    Skip,
}

/// How a program check failed; the exchanges it did not answer are not judged.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProgramFailure {
    #[error("check `{check}`: `{program}` could not start: {reason}")]
    Start {
        check: String,
        program: String,
        reason: String,
    },
    #[error("check `{check}`: line {line} of its output is not a verdict ({reason}): {text}")]
    Garbage {
        check: String,
        line: u64,
        reason: String,
        text: String,
    },
    #[error("check `{check}`: answered exchange {id}, which it was not waiting for (never sent, or answered already)")]
    UnknownId { check: String, id: u64 },
    #[error("check `{check}`: ended ({status}) before answering exchange {first_unanswered}")]
    EndedEarly {
        check: String,
        status: String,
        first_unanswered: u64,
    },
    #[error("check `{check}`: still had {left} exchanges to answer {deadline:?} after the last one (first: exchange {first_unanswered}); stopped")]
    Deadline {
        check: String,
        left: usize,
        deadline: Duration,
        first_unanswered: u64,
    },
}

/// Whether an exchange went to the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Submitted {
    Queued,
    /// The queue is full (the program is slower than sending): judge it later.
    Full,
    /// The program has failed; it judges nothing more.
    Stopped,
}

/// The verdicts a program gave, and what it left.
#[derive(Debug, Default)]
pub struct ProgramReport {
    /// The verdicts not already taken by [`Running::take_verdicts`].
    pub verdicts: BTreeMap<u64, ProgramVerdict>,
    /// Sent but never answered, in id order.
    pub not_judged: Vec<u64>,
    pub failure: Option<ProgramFailure>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVerdict {
    id: u64,
    verdict: String,
    #[serde(default)]
    message: Option<String>,
}

enum FromProgram {
    Verdict(u64, ProgramVerdict),
    Garbage {
        line: u64,
        reason: String,
        text: String,
    },
    Closed,
}

/// A program check in flight.
pub struct Running {
    spec: ProgramSpec,
    child: Child,
    queue: Option<SyncSender<String>>,
    writer: Option<JoinHandle<()>>,
    answers: Receiver<FromProgram>,
    sent: BTreeSet<u64>,
    /// The program's standard output has ended (or its reader stopped).
    closed: bool,
    report: ProgramReport,
}

impl Running {
    /// Starts the program and greets it.
    pub fn start(spec: ProgramSpec) -> Result<Running, ProgramFailure> {
        let start_error = |reason: String| ProgramFailure::Start {
            check: spec.check.clone(),
            program: spec.command.join(" "),
            reason,
        };
        let (program, args) = spec
            .command
            .split_first()
            .ok_or_else(|| start_error("the command is empty".into()))?;
        let mut command = Command::new(program);
        command
            .args(args)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        if let Some(path) = std::env::var_os("PATH") {
            command.env("PATH", path);
        }
        for name in &spec.env {
            if let Some(value) = std::env::var_os(name) {
                command.env(name, value);
            }
        }
        let mut child = command.spawn().map_err(|e| start_error(e.to_string()))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            return Err(start_error(
                "its standard input or output could not be opened".into(),
            ));
        };
        let (queue, lines) = mpsc::sync_channel::<String>(QUEUE);
        let hello = json!({
            "type": "hello",
            "protocol": PROTOCOL,
            "model": EXCHANGE_MODEL,
            "check": spec.check,
        })
        .to_string();
        let writer = std::thread::Builder::new()
            .name(format!("check-{}-in", spec.check))
            .spawn(move || write_lines(stdin, hello, lines))
            .map_err(|e| start_error(e.to_string()))?;
        let (answer_tx, answers) = mpsc::channel();
        std::thread::Builder::new()
            .name(format!("check-{}-out", spec.check))
            .spawn(move || read_verdicts(stdout, answer_tx))
            .map_err(|e| start_error(e.to_string()))?;
        Ok(Running {
            spec,
            child,
            queue: Some(queue),
            writer: Some(writer),
            answers,
            sent: BTreeSet::new(),
            closed: false,
            report: ProgramReport::default(),
        })
    }

    /// Offers one exchange (its model as JSON) to the program; never waits.
    pub fn submit(&mut self, id: u64, model: &Value) -> Submitted {
        self.submit_text(id, &model.to_string())
    }

    /// [`Running::submit`] of a model already written as JSON text (`model_json`), which
    /// a caller that also measures or keeps it writes once.
    pub fn submit_text(&mut self, id: u64, model_json: &str) -> Submitted {
        self.collect(Duration::ZERO);
        if self.report.failure.is_some() {
            return Submitted::Stopped;
        }
        let Some(queue) = &self.queue else {
            return Submitted::Stopped;
        };
        // The line `{"type":"exchange","id":N,"exchange":MODEL}`, with MODEL as given.
        let line = format!(r#"{{"type":"exchange","id":{id},"exchange":{model_json}}}"#);
        match queue.try_send(line) {
            Ok(()) => {
                self.sent.insert(id);
                Submitted::Queued
            }
            Err(TrySendError::Full(_)) => Submitted::Full,
            Err(TrySendError::Disconnected(_)) => Submitted::Stopped,
        }
    }

    /// Offers one exchange, waiting for room in the queue (at the end of a run, or in a
    /// recheck, where nothing is sent and waiting costs nothing).
    pub fn submit_waiting(&mut self, id: u64, model: &Value) -> Submitted {
        loop {
            match self.submit(id, model) {
                Submitted::Full => {
                    if self.child_ended() {
                        return Submitted::Stopped;
                    }
                    self.collect(Duration::from_millis(5));
                }
                other => return other,
            }
        }
    }

    fn child_ended(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }

    /// Takes the answers that have come, waiting at most `wait` for the first.
    fn collect(&mut self, wait: Duration) {
        let mut first = true;
        loop {
            let next = if self.closed {
                // Nothing more can come; do not spin on a closed channel.
                if first && !wait.is_zero() {
                    std::thread::sleep(wait.min(Duration::from_millis(5)));
                }
                None
            } else if first && !wait.is_zero() {
                match self.answers.recv_timeout(wait) {
                    Ok(a) => Some(a),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => Some(FromProgram::Closed),
                }
            } else {
                match self.answers.try_recv() {
                    Ok(a) => Some(a),
                    Err(TryRecvError::Empty) => None,
                    Err(TryRecvError::Disconnected) => Some(FromProgram::Closed),
                }
            };
            first = false;
            let Some(answer) = next else { return };
            if matches!(answer, FromProgram::Closed) {
                self.closed = true;
            }
            self.take(answer);
        }
    }

    fn take(&mut self, answer: FromProgram) {
        if self.report.failure.is_some() {
            return;
        }
        match answer {
            FromProgram::Verdict(id, verdict) => {
                // An answered id leaves `sent`, so that what is kept is what is awaited.
                if self.sent.remove(&id) {
                    self.report.verdicts.insert(id, verdict);
                } else {
                    self.fail(ProgramFailure::UnknownId {
                        check: self.spec.check.clone(),
                        id,
                    });
                }
            }
            FromProgram::Garbage { line, reason, text } => self.fail(ProgramFailure::Garbage {
                check: self.spec.check.clone(),
                line,
                reason,
                text,
            }),
            FromProgram::Closed => {}
        }
    }

    fn fail(&mut self, failure: ProgramFailure) {
        self.report.failure = Some(failure);
        self.queue = None;
        let _ = self.child.kill();
    }

    fn unanswered(&self) -> impl Iterator<Item = u64> + '_ {
        self.sent.iter().copied()
    }

    /// Exchanges sent and not answered yet.
    pub fn outstanding(&self) -> usize {
        self.sent.len()
    }

    /// Takes the verdicts that have come so far, without waiting: a run turns them into
    /// findings as it goes, so that what it keeps for the program is bounded by what the
    /// program has not answered yet.
    pub fn take_verdicts(&mut self) -> BTreeMap<u64, ProgramVerdict> {
        self.collect(Duration::ZERO);
        std::mem::take(&mut self.report.verdicts)
    }

    /// How the program failed, once it has.
    pub fn failure(&self) -> Option<&ProgramFailure> {
        self.report.failure.as_ref()
    }

    /// Says `end`, waits up to the deadline for the remaining answers, and ends the
    /// program.
    pub fn finish(mut self) -> ProgramReport {
        // Closing the queue lets the writer send `end` and close standard input.
        self.queue = None;
        let deadline = Instant::now() + self.spec.deadline;
        loop {
            self.collect(Duration::from_millis(20));
            if self.report.failure.is_some() || self.unanswered().next().is_none() {
                break;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                // Its last lines may still be in the pipe: read to its end (bounded by the
                // deadline, should a child of the program hold it open).
                while !self.closed
                    && self.report.failure.is_none()
                    && self.unanswered().next().is_some()
                    && Instant::now() < deadline
                {
                    self.collect(Duration::from_millis(20));
                }
                if self.report.failure.is_some() {
                    break;
                }
                let first = self.unanswered().next();
                if let Some(first_unanswered) = first {
                    self.fail(ProgramFailure::EndedEarly {
                        check: self.spec.check.clone(),
                        status: status.to_string(),
                        first_unanswered,
                    });
                }
                break;
            }
            if Instant::now() >= deadline {
                let left = self.unanswered().count();
                let first = self.unanswered().next();
                if let Some(first_unanswered) = first {
                    self.fail(ProgramFailure::Deadline {
                        check: self.spec.check.clone(),
                        left,
                        deadline: self.spec.deadline,
                        first_unanswered,
                    });
                }
                break;
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
        self.report.not_judged = self.unanswered().collect();
        std::mem::take(&mut self.report)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn write_lines(mut stdin: ChildStdin, hello: String, lines: Receiver<String>) {
    // A child's standard input is not buffered: each line reaches the program as written.
    let mut write = |line: &str| -> std::io::Result<()> {
        stdin.write_all(line.as_bytes())?;
        stdin.write_all(b"\n")
    };
    if write(&hello).is_err() {
        return;
    }
    for line in lines.iter() {
        // A program that stops reading ends here; its reader says how it ended.
        if write(&line).is_err() {
            return;
        }
    }
    let _ = write(r#"{"type":"end"}"#);
}

fn read_verdicts(stdout: std::process::ChildStdout, to: mpsc::Sender<FromProgram>) {
    let reader = BufReader::new(stdout);
    for (n, line) in reader.lines().enumerate() {
        let line_no = n as u64 + 1;
        let Ok(line) = line else {
            let _ = to.send(FromProgram::Garbage {
                line: line_no,
                reason: "not UTF-8".into(),
                text: String::new(),
            });
            return;
        };
        if line.trim().is_empty() {
            continue;
        }
        let answer = match serde_json::from_str::<RawVerdict>(&line) {
            Ok(raw) => match (raw.verdict.as_str(), raw.message) {
                ("holds", _) => FromProgram::Verdict(raw.id, ProgramVerdict::Holds),
                ("skip", _) => FromProgram::Verdict(raw.id, ProgramVerdict::Skip),
                ("fails", message) => FromProgram::Verdict(
                    raw.id,
                    ProgramVerdict::Fails {
                        message: message.unwrap_or_else(|| "the check failed".into()),
                    },
                ),
                (other, _) => FromProgram::Garbage {
                    line: line_no,
                    reason: format!("verdict `{other}` is not holds, fails or skip"),
                    text: shorten(&line),
                },
            },
            Err(e) => FromProgram::Garbage {
                line: line_no,
                reason: e.to_string(),
                text: shorten(&line),
            },
        };
        let garbage = matches!(answer, FromProgram::Garbage { .. });
        if to.send(answer).is_err() || garbage {
            return;
        }
    }
    let _ = to.send(FromProgram::Closed);
}

fn shorten(line: &str) -> String {
    const SHOWN: usize = 120;
    if line.chars().count() <= SHOWN {
        line.to_string()
    } else {
        let cut: String = line.chars().take(SHOWN).collect();
        format!("{cut}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A program in `sh` and GNU `sed`: answers every exchange with `verdict`.
    fn answering(verdict: &str) -> Vec<String> {
        vec![
            "sed".into(),
            "-un".into(),
            format!(
                r#"/"type":"exchange"/s/^.*"id":\([0-9]*\),.*$/{{"id":\1,"verdict":"{verdict}","message":"no"}}/p"#
            ),
        ]
    }

    fn spec(command: Vec<String>) -> ProgramSpec {
        ProgramSpec {
            check: "c".into(),
            command,
            env: vec![],
            deadline: Duration::from_secs(5),
        }
    }

    fn run(command: Vec<String>, n: u64) -> ProgramReport {
        let mut running = Running::start(spec(command)).unwrap();
        for id in 0..n {
            assert_ne!(
                running.submit_waiting(id, &json!({"response": {"status": 200}})),
                Submitted::Full
            );
        }
        running.finish()
    }

    #[test]
    fn a_program_judges_every_exchange_it_is_sent() {
        let report = run(answering("fails"), 3000);
        assert_eq!(report.failure, None);
        assert_eq!(report.verdicts.len(), 3000);
        assert!(report.not_judged.is_empty());
        assert_eq!(
            report.verdicts[&7],
            ProgramVerdict::Fails {
                message: "no".into()
            }
        );
    }

    #[test]
    fn verdicts_taken_during_the_run_are_not_given_again_and_a_repeat_is_an_error() {
        let mut running = Running::start(spec(answering("holds"))).unwrap();
        for id in 0..50 {
            running.submit_waiting(id, &json!({}));
        }
        let started = Instant::now();
        let mut taken = BTreeMap::new();
        while taken.len() < 50 && started.elapsed() < Duration::from_secs(5) {
            taken.append(&mut running.take_verdicts());
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(taken.len(), 50);
        assert_eq!(running.outstanding(), 0);
        let report = running.finish();
        assert!(report.verdicts.is_empty() && report.not_judged.is_empty());
        assert_eq!(report.failure, None);

        // Every exchange answered twice: the second answer is one it was not waiting for.
        let twice = vec![
            "sed".into(),
            "-un".into(),
            r#"/"type":"exchange"/{s/^.*"id":\([0-9]*\),.*$/{"id":\1,"verdict":"holds"}/p;p}"#
                .into(),
        ];
        let report = run(twice, 2);
        assert!(
            matches!(
                report.failure,
                Some(ProgramFailure::UnknownId { id: 0, .. })
            ),
            "{:?}",
            report.failure
        );
    }

    #[test]
    fn a_program_that_writes_garbage_is_stopped_and_named() {
        let report = run(
            vec![
                "sh".into(),
                "-c".into(),
                "read x; echo not json; cat >/dev/null".into(),
            ],
            3,
        );
        assert!(
            matches!(
                &report.failure,
                Some(ProgramFailure::Garbage { line: 1, .. })
            ),
            "{:?}",
            report.failure
        );
        assert_eq!(report.not_judged, [0, 1, 2]);
    }

    #[test]
    fn a_program_that_ends_early_leaves_what_it_did_not_answer_not_judged() {
        let report = run(vec!["sh".into(), "-c".into(), "read x; exit 3".into()], 4);
        let failure = report.failure.expect("a failure");
        assert!(
            matches!(
                failure,
                ProgramFailure::EndedEarly {
                    first_unanswered: 0,
                    ..
                }
            ),
            "{failure}"
        );
        assert!(failure.to_string().contains("check `c`"), "{failure}");
        assert_eq!(report.not_judged.len(), 4);
    }

    #[test]
    fn a_program_that_hangs_is_stopped_at_its_deadline() {
        let mut running = Running::start(ProgramSpec {
            deadline: Duration::from_millis(300),
            ..spec(vec!["sleep".into(), "30".into()])
        })
        .unwrap();
        running.submit(1, &json!({}));
        let started = Instant::now();
        let report = running.finish();
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(
            matches!(
                report.failure,
                Some(ProgramFailure::Deadline { left: 1, .. })
            ),
            "{:?}",
            report.failure
        );
        assert_eq!(report.not_judged, [1]);
    }

    #[test]
    fn a_program_that_cannot_start_is_an_error_naming_it() {
        let e = Running::start(spec(vec!["/nonexistent/checker".into()]))
            .err()
            .unwrap();
        assert!(e.to_string().contains("/nonexistent/checker"), "{e}");
    }

    #[test]
    fn a_program_sees_no_variable_of_probes_it_was_not_given() {
        let report = run(
            vec![
                "sh".into(),
                "-c".into(),
                r#"read hello; while read line; do id=$(echo "$line" | sed -n 's/.*"id":\([0-9]*\),.*/\1/p'); [ -n "$id" ] && echo "{\"id\":$id,\"verdict\":\"$( [ -z "$HOME$USER" ] && echo holds || echo fails)\"}"; done"#.into(),
            ],
            2,
        );
        assert_eq!(report.failure, None);
        assert_eq!(
            report.verdicts[&0],
            ProgramVerdict::Holds,
            "HOME or USER reached the program"
        );
    }
}
