//! The checks a user wrote ([`crate::check`]), judged beside the built-in oracles: each
//! becomes an oracle named `check:<name>`, so its findings are findings like any other
//! (distinct by cause, reproduced, shrunk, reported, diffed), and the same code judges a
//! run in flight, a replay and a recheck of any stored run.
//!
//! A check is configuration read once per process, not code: its [`OracleInfo`] is made
//! at start and lives as long as the process (the built-in ones are `static`; a leak of
//! a few hundred bytes per check buys the same `&'static` for all).
//!
//! Depends on: `check`, `model`, `settings` (the kind of a setting), and its parent.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};

use super::{Exchange, Observation, OracleInfo, ResponseJson};
use crate::check::{Bodies, Bound, Check, Read, Reads, Verdict};
use crate::settings::{declared, Kind};

/// The prefix of a user check's oracle name.
pub const PREFIX: &str = "check:";

/// What one check did over a run: for the console and report.json.
pub use crate::model::CheckCounts;

struct UserCheck {
    info: &'static OracleInfo,
    judged: AtomicU64,
    failed: AtomicU64,
    not_judged: AtomicU64,
    first_not_judged: Mutex<Option<(String, u64)>>,
}

/// The user checks of a judging.
pub struct UserChecks {
    definitions: Arc<Vec<Check>>,
    checks: Vec<UserCheck>,
    /// What the checks read of an exchange, together: all its model holds.
    reads: Reads,
}

fn leak(text: String) -> &'static str {
    Box::leak(text.into_boxed_str())
}

/// The oracles made for checks, by check text.
fn made() -> std::sync::MutexGuard<'static, HashMap<String, &'static OracleInfo>> {
    static MADE: LazyLock<Mutex<HashMap<String, &'static OracleInfo>>> =
        LazyLock::new(Default::default);
    MADE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The observation of a check that failed on an exchange of `operation` answered `status`:
/// one keying for written checks and programs alike, so a finding is distinct by the
/// check, the operation, the status and the check's message.
pub(super) fn failure(
    oracle: &'static OracleInfo,
    operation: &str,
    status: Option<u16>,
    message: String,
) -> Observation {
    let status = status.map_or_else(|| "none".to_string(), |s| s.to_string());
    let key_by_kind = format!("{}|{operation}|{status}", oracle.name);
    Observation {
        oracle,
        key_by_message: format!("{key_by_kind}|{message}"),
        key_by_kind,
        message,
        rank: 0,
    }
}

/// The oracle a check is, made once per distinct check in a process (a recheck of many
/// runs judges each with the same checks).
pub(super) fn info_of(check: &Check) -> &'static OracleInfo {
    made().entry(check.text.clone()).or_insert_with(|| {
        let name = leak(format!("{PREFIX}{}", check.name));
        let title = leak(format!("the check `{}` ({})", check.name, check.origin));
        Box::leak(Box::new(OracleInfo {
            name,
            code: check.code.clone().map(leak),
            version: 1,
            severity: check.severity,
            title,
            setting: declared(name, Kind::Bool, "true", title),
        }))
    })
}

/// Whether `name` is the oracle of a declarative check made in this process: one judged in
/// the step that records an exchange, so a shrinking candidate is judged by it at once.
pub fn is_declarative(name: &str) -> bool {
    name.starts_with(PREFIX) && made().values().any(|info| info.name == name)
}

impl UserChecks {
    pub fn new(definitions: Arc<Vec<Check>>) -> UserChecks {
        let checks = definitions
            .iter()
            .map(|check| UserCheck {
                info: info_of(check),
                judged: AtomicU64::new(0),
                failed: AtomicU64::new(0),
                not_judged: AtomicU64::new(0),
                first_not_judged: Mutex::new(None),
            })
            .collect();
        let mut reads = Reads::default();
        // A program is given its own model (`programs.rs`).
        for check in definitions.iter().filter(|c| c.program().is_none()) {
            reads.add(&check.reads());
        }
        UserChecks {
            definitions,
            checks,
            reads,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.checks.is_empty()
    }

    /// The oracles they are, for the finding set.
    pub fn infos(&self) -> impl Iterator<Item = &'static OracleInfo> + '_ {
        self.checks.iter().map(|c| c.info)
    }

    /// The definitions, name → text, stored with the finding set.
    pub fn definitions(&self) -> impl Iterator<Item = (&str, &str)> {
        self.checks
            .iter()
            .zip(self.definitions.iter())
            .map(|(c, check)| (c.info.name, check.text.as_str()))
    }

    /// Judges one exchange with every check. The exchange model is built, and bound to
    /// CEL, only when some check's `applies` lets the exchange through: most exchanges of
    /// a run concern none of them.
    pub(super) fn judge(
        &self,
        exchange: &Exchange<'_>,
        json: &ResponseJson<'_>,
    ) -> Vec<Observation> {
        let case = exchange.case;
        let status = exchange.interaction.outcome.status();
        let admitted: Vec<(&UserCheck, &Check)> = self
            .checks
            .iter()
            .zip(self.definitions.iter())
            // A program check judges in its program (`programs.rs`), not here.
            .filter(|(_, check)| check.program().is_none())
            .filter(|(_, check)| {
                check.applies.admits(
                    &case.operation,
                    &case.method,
                    &case.path,
                    &exchange.operation.tags,
                    status,
                )
            })
            .collect();
        if admitted.is_empty() {
            return Vec::new();
        }
        let response_json = match self.reads.wants("response", "body") {
            true => match json.get() {
                Some(Ok(value)) => Read::Json(value),
                _ => Read::NotJson,
            },
            false => Read::NotRead,
        };
        let bodies = Bodies {
            request: None,
            request_value: case.body.as_ref().map(|b| &b.value),
            response: exchange.response_body,
            response_json,
        };
        let bound = Bound::of_exchange(
            case,
            exchange.interaction,
            bodies,
            &exchange.operation.tags,
            &self.reads,
        );
        let mut out = Vec::new();
        for (user, check) in admitted {
            match check.judge_admitted(&bound) {
                Verdict::Holds => {
                    user.judged.fetch_add(1, Ordering::Relaxed);
                }
                Verdict::Fails { message } => {
                    user.judged.fetch_add(1, Ordering::Relaxed);
                    user.failed.fetch_add(1, Ordering::Relaxed);
                    out.push(failure(user.info, &case.operation, status, message));
                }
                Verdict::NotApplicable => {}
                Verdict::NotJudged { reason } => {
                    user.not_judged.fetch_add(1, Ordering::Relaxed);
                    let mut first = user
                        .first_not_judged
                        .lock()
                        .unwrap_or_else(|e| e.into_inner());
                    let seq = exchange.interaction.seq;
                    if first.as_ref().is_none_or(|(_, s)| seq < *s) {
                        *first = Some((reason, seq));
                    }
                }
            }
        }
        out
    }

    /// What each check did so far.
    pub fn counts(&self) -> Vec<CheckCounts> {
        self.checks
            .iter()
            .zip(self.definitions.iter())
            .map(|(c, check)| CheckCounts {
                name: check.name.clone(),
                judged: c.judged.load(Ordering::Relaxed),
                failed: c.failed.load(Ordering::Relaxed),
                not_judged: c.not_judged.load(Ordering::Relaxed),
                first_not_judged: c
                    .first_not_judged
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .clone(),
            })
            .collect()
    }
}
