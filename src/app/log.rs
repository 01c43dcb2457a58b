//! `probe log`: the recorded runs, newest first, as a table or JSON Lines.
//!
//! JSON Lines: one `{"type":"run","data":{...}}` object per line; `data` has the fields of
//! [`crate::store::RunSummary`] (ids as 64 hex characters, times in ms since the epoch).
//!
//! Depends on: `store`, `cli`, `error`.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use crate::cli::LogOpts;
use crate::error::CliError;
use crate::exit;
use crate::store::Store;

pub(crate) fn io(e: std::io::Error) -> CliError {
    CliError::Other(e.into())
}

/// `ms` since the epoch as `2026-12-01T21:15:00Z`.
pub(crate) fn when(ms: u64) -> String {
    humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}

/// Runs `probe log`.
pub fn exec_log(opts: &LogOpts, store_dir: &Path, out: &mut dyn Write) -> Result<u8, CliError> {
    let store = Store::open_existing(store_dir)?;
    let mut runs = store.runs()?;
    if let Some(n) = opts.limit {
        runs.truncate(n);
    }
    if opts.json {
        for run in &runs {
            let line = serde_json::json!({"type": "run", "data": run});
            writeln!(out, "{line}").map_err(io)?;
        }
        return Ok(exit::OK);
    }
    if runs.is_empty() {
        writeln!(out, "no runs in {}", store_dir.display()).map_err(io)?;
        return Ok(exit::OK);
    }
    writeln!(
        out,
        "{:<12}  {:<20}  {:<24}  {:<20}  {:>8}  {:>8}  OUTCOME",
        "RUN", "NAME", "API", "STARTED", "REQUESTS", "FINDINGS"
    )
    .map_err(io)?;
    for run in &runs {
        writeln!(
            out,
            "{:<12}  {:<20}  {:<24}  {:<20}  {:>8}  {:>8}  {}",
            run.id.short(12),
            run.name.as_deref().unwrap_or("-"),
            run.document_source,
            when(run.started_ms),
            run.interactions,
            run.findings,
            run.outcome.as_deref().unwrap_or("unfinished"),
        )
        .map_err(io)?;
    }
    Ok(exit::OK)
}
