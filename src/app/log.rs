//! `probe log`: the recorded runs, newest first, as a table or JSON Lines.
//!
//! JSON Lines: one `{"type":"run","data":{...}}` object per line; `data` has the fields of
//! [`crate::store::RunSummary`] (ids as 64 hex characters, times in ms since the epoch).
//!
//! A replay (kind `replay`) also shows what it replayed (`replay_of` in JSON).
//!
//! Depends on: `store`, `model`, `cli`, `error`.

use std::path::Path;

use crate::cli::LogOpts;
use crate::error::CliError;

use super::Out;
use crate::exit;
use crate::model::RunStart;
use crate::store::Store;

/// A stored id (or `<id>:<n>`) shortened to 12 hex characters for a table.
pub(crate) fn short_of(text: &str) -> String {
    match text.split_once(':') {
        Some((id, n)) => format!("{}:{n}", id.get(..12).unwrap_or(id)),
        None => text.get(..12).unwrap_or(text).to_owned(),
    }
}

/// `ms` since the epoch as `2026-12-01T21:15:00Z`.
pub(crate) fn when(ms: u64) -> String {
    crate::report::rfc3339(ms)
}

/// Runs `probe log`.
pub fn exec_log(opts: &LogOpts, store_dir: &Path, out: &mut Out<'_>) -> Result<u8, CliError> {
    let store = Store::open_existing(store_dir)?;
    let mut runs = store.runs()?;
    if let Some(n) = opts.limit {
        runs.truncate(n);
    }
    // What a replay replayed is in its manifest, not in the index.
    let replay_of = |run: &crate::store::RunSummary| -> Result<Option<String>, CliError> {
        if run.kind != "replay" {
            return Ok(None);
        }
        Ok(store.get::<RunStart>(run.id.0)?.replay_of)
    };
    if opts.json {
        for run in &runs {
            let mut data = serde_json::to_value(run).map_err(|e| {
                CliError::internal(format!("cannot encode run {} as JSON", run.id), e)
            })?;
            if let Some(of) = replay_of(run)? {
                data["replay_of"] = serde_json::json!(of);
            }
            let line = serde_json::json!({"type": "run", "data": data});
            writeln!(out, "{line}")?;
        }
        return Ok(exit::OK);
    }
    if runs.is_empty() {
        writeln!(out, "no runs in {}", store_dir.display())?;
        return Ok(exit::OK);
    }
    writeln!(
        out,
        "{:<12}  {:<20}  {:<24}  {:<20}  {:>8}  {:>8}  OUTCOME",
        "RUN", "NAME", "API", "STARTED", "REQUESTS", "FINDINGS"
    )?;
    for run in &runs {
        let link = match replay_of(run)? {
            Some(of) => format!("  replay of {}", short_of(&of)),
            None => String::new(),
        };
        writeln!(
            out,
            "{:<12}  {:<20}  {:<24}  {:<20}  {:>8}  {:>8}  {}{link}",
            run.id.short(12),
            run.name.as_deref().unwrap_or("-"),
            run.document_source,
            when(run.started_ms),
            run.interactions,
            run.findings,
            run.outcome.as_deref().unwrap_or("unfinished"),
        )?;
    }
    Ok(exit::OK)
}
