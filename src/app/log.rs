//! `probe log`: the recorded runs, newest first, as a table or JSON Lines.
//!
//! JSON Lines: one `{"type":"run","data":{...}}` object per line; `data` has the fields of
//! [`crate::store::RunSummary`] (ids as 64 hex characters, times in ms since the epoch).
//!
//! A replay (kind `replay`) also shows what it replayed (`replay_of` in JSON).
//!
//! A run that is a part of a split campaign (`probe run --partition k/n`) shows its part
//! and campaign; the campaigns themselves come first, each with its parts (and those
//! missing from this store), and in JSON as `{"type":"campaign","data":{"id","count",
//! "parts":[{"part","run"}],"missing","requests","findings","started_ms"}}` lines after the
//! runs. A run that was not split is not listed as a campaign.
//!
//! Depends on: `store`, `model`, `cli`, `error`, `app::campaign`.

use std::path::Path;

use crate::cli::LogOpts;
use crate::error::CliError;

use super::Out;
use crate::exit;
use crate::model::RunStart;
use crate::store::Store;

use super::campaign::{short, CampaignRuns};

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
    let campaigns: Vec<CampaignRuns> = super::campaign::all(&store)?
        .into_iter()
        .filter(|c| {
            c.parts
                .values()
                .any(|r| super::campaign::part_of(r).is_some())
        })
        .collect();
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
        for c in &campaigns {
            let parts: Vec<serde_json::Value> = c
                .parts
                .iter()
                .map(|(k, r)| serde_json::json!({"part": k, "run": r.id}))
                .collect();
            let line = serde_json::json!({"type": "campaign", "data": {
                "id": c.id,
                "count": c.count,
                "parts": parts,
                "missing": c.missing(),
                "requests": c.parts.values().map(|r| r.interactions).sum::<u64>(),
                "findings": c.parts.values().map(|r| r.findings).sum::<u64>(),
                "started_ms": c.started_ms(),
            }});
            writeln!(out, "{line}")?;
        }
        return Ok(exit::OK);
    }
    if runs.is_empty() {
        writeln!(out, "no runs in {}", store_dir.display())?;
        return Ok(exit::OK);
    }
    write_campaigns(out, &campaigns)?;
    writeln!(
        out,
        "{:<12}  {:<20}  {:<24}  {:<20}  {:>8}  {:>8}  OUTCOME",
        "RUN", "NAME", "API", "STARTED", "REQUESTS", "FINDINGS"
    )?;
    for run in &runs {
        let link = match replay_of(run)? {
            Some(of) => format!("  replay of {}", short_of(&of)),
            None => match super::campaign::part_of(run) {
                Some((id, part)) => format!("  part {part} of campaign {}", short(&id)),
                None => String::new(),
            },
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

/// The split campaigns, each with its parts, above the runs.
fn write_campaigns(out: &mut Out<'_>, campaigns: &[CampaignRuns]) -> Result<(), CliError> {
    if campaigns.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "{:<12}  {:>5}  {:<20}  {:>8}  {:>8}",
        "CAMPAIGN", "PARTS", "STARTED", "REQUESTS", "FINDINGS"
    )?;
    for c in campaigns {
        writeln!(
            out,
            "{:<12}  {:>5}  {:<20}  {:>8}  {:>8}",
            short(&c.id),
            format!("{}/{}", c.parts.len(), c.count),
            when(c.started_ms()),
            c.parts.values().map(|r| r.interactions).sum::<u64>(),
            c.parts.values().map(|r| r.findings).sum::<u64>(),
        )?;
        for (k, r) in &c.parts {
            writeln!(
                out,
                "  part {k}/{}  run {}  {} requests, {} findings, {}",
                c.count,
                r.id.short(12),
                r.interactions,
                r.findings,
                r.outcome.as_deref().unwrap_or("unfinished")
            )?;
        }
        for k in c.missing() {
            writeln!(out, "  part {k}/{}  not in this store", c.count)?;
        }
        for run in &c.superseded {
            writeln!(
                out,
                "  run {} ran a part again before the newer run above; not counted",
                run.short(12)
            )?;
        }
    }
    writeln!(out)?;
    Ok(())
}
