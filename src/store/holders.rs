//! Who holds a store: the processes registered as using it ([`Holder`]) and the
//! maintenance that needs it alone ([`Maintenance`]), as the lock's refusals name them.
//! Kept apart from the lock so that the store's error can name them without depending on
//! what reports errors.
//!
//! Depends on: nothing (serde).

use serde::{Deserialize, Serialize};

/// Maintenance that needs the store alone ([`super::Store::open_for_maintenance`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Maintenance {
    /// `probe store gc`.
    Gc,
    /// `probe store reindex`.
    Reindex,
    /// `probe store upgrade` (format 1 to format 2; not yet a command).
    Upgrade,
}

impl Maintenance {
    /// The name refusals use: `gc`, `reindex`, `upgrade`.
    pub fn name(self) -> &'static str {
        match self {
            Maintenance::Gc => "gc",
            Maintenance::Reindex => "reindex",
            Maintenance::Upgrade => "upgrade",
        }
    }
}

impl std::fmt::Display for Maintenance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A process registered as using a store (`writers/<pid>`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    pub pid: u32,
    /// Its command line (program name and arguments), shortened.
    pub command: String,
    /// The run it records, once it has written the run's start (full hex id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// The maintenance it is doing (`gc`, `reindex`), when it holds the store alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maintenance: Option<String>,
    /// When it opened the store, RFC 3339 UTC.
    pub started: String,
}

impl Holder {
    /// `process 4242 (probe run ..., run 1a2b3c4d5e6f, started 2026-12-04T21:50:03Z)`.
    pub fn describe(&self) -> String {
        let mut text = format!("process {} ({}", self.pid, self.command);
        if let Some(run) = &self.run {
            // Read from a file: any text, so cut by characters.
            let short: String = run.chars().take(12).collect();
            text.push_str(&format!(", recording run {short}"));
        }
        if let Some(m) = &self.maintenance {
            text.push_str(&format!(", running {m}"));
        }
        text.push_str(&format!(", started {})", self.started));
        text
    }
}

/// `process 1 (...)`, `process 1 (...) and process 2 (...)`, with a fallback for none.
pub(crate) fn describe_all(holders: &[Holder], none: &str) -> String {
    match holders {
        [] => none.to_owned(),
        [one] => one.describe(),
        [init @ .., last] => format!(
            "{} and {}",
            init.iter()
                .map(Holder::describe)
                .collect::<Vec<_>>()
                .join(", "),
            last.describe()
        ),
    }
}
