//! `probe report <run> --html FILE`: the page of a recorded run (docs/html-report.md), and
//! the page written beside report.json at the end of each run (setting `report.html`).
//!
//! The page is built from the run's report.json as the store keeps it (so its numbers are
//! report.json's) and the store's interactions (the curves, the findings' exchanges).
//!
//! Depends on: `report` (html, RunReport), `store`, `cli`, `error`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::cli::ReportOpts;
use crate::error::CliError;
use crate::exit;
use crate::ids::RunId;
use crate::report::{campaign, html, timeline, RunLog, RunReport};
use crate::store::Store;

/// Runs `probe report`.
pub fn exec_report(
    opts: &ReportOpts,
    store_dir: &Path,
    err: &mut dyn Write,
) -> Result<u8, CliError> {
    let store = Store::open_existing(store_dir)?;
    if super::campaign::names_campaign(&opts.run) {
        return campaign_page(opts, &store, err);
    }
    let run = store.resolve_run(&opts.run).map_err(CliError::lookup)?;
    let report = kept_report(&store, run)?;
    let began = Instant::now();
    let page = html::run_page(&store, run, &report)?;
    write_file(&opts.html, page.as_bytes())?;
    let _ = writeln!(
        err,
        "probe: wrote the page of run {} to {} ({} bytes in {} ms)",
        run.short(12),
        opts.html.display(),
        page.len(),
        began.elapsed().as_millis()
    );
    Ok(exit::OK)
}

/// The page of a campaign: its parts' report.json and timelines joined
/// (`report::campaign`).
fn campaign_page(opts: &ReportOpts, store: &Store, err: &mut dyn Write) -> Result<u8, CliError> {
    let campaign = super::campaign::resolve(store, &opts.run)?;
    campaign.note_missing(err);
    let began = Instant::now();
    let mut reports = Vec::new();
    let mut timelines = Vec::new();
    for run in campaign.runs() {
        let report = kept_report(store, run)?;
        timelines.push(timeline::read(store, run, &html::findings_first(&report))?);
        reports.push(report);
    }
    let Some(mut report) = campaign::join(&campaign.id, reports) else {
        return Err(CliError::usage(format!(
            "campaign {} has no part in this store",
            super::campaign::short(&campaign.id)
        )));
    };
    report.run.tags.remove(crate::partition::PART_TAG);
    let page = html::run_page_with(store, &report, campaign::join_timelines(timelines))?;
    write_file(&opts.html, page.as_bytes())?;
    let _ = writeln!(
        err,
        "probe: wrote the page of campaign {} ({} parts) to {} ({} bytes in {} ms)",
        super::campaign::short(&campaign.id),
        campaign.parts.len(),
        opts.html.display(),
        page.len(),
        began.elapsed().as_millis()
    );
    Ok(exit::OK)
}

/// The report.json the store keeps for `run`, read back.
pub(crate) fn kept_report(store: &Store, run: RunId) -> Result<RunReport, CliError> {
    let bytes = store.read_report(run)?.ok_or_else(|| CliError::Usage {
        message: format!("run {} has no report.json in the store", run.short(12)),
        hint: Some(
            "a run writes it when it ends: an unfinished run or a replay has none; `probe log` lists the runs"
                .into(),
        ),
    })?;
    serde_json::from_slice(&bytes).map_err(|e| CliError::Usage {
        message: format!(
            "the report.json of run {} cannot be read as report.json version {}: {e}",
            run.short(12),
            crate::report::REPORT_VERSION
        ),
        hint: Some("it was written by another version of probe".into()),
    })
}

/// Writes `bytes` beside `path` and renames it into place: a failed write leaves no half
/// page.
pub(crate) fn write_file(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    let mut partial = path.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    std::fs::write(&partial, bytes)
        .and_then(|()| std::fs::rename(&partial, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&partial);
            CliError::internal(format!("cannot write {}", path.display()), e)
        })
}

/// The page at a run's end: kept in the store beside report.json, and beside `--report
/// FILE` (same name, `.html`) when the run wrote one there. Returns the path kept in the
/// store.
pub(crate) fn write_run_end_page(
    store: &Store,
    run: RunId,
    report: &RunReport,
    report_file: Option<&Path>,
    log: &RunLog,
) -> Result<PathBuf, CliError> {
    // The run's curves were counted from its events as it went, so the page needs no pass
    // over the whole run, which decodes every interaction; that pass is the fallback.
    let counted = log.timeline(store, &html::findings_first(report));
    let page = match counted {
        Some(timeline) => html::run_page_with(store, report, timeline)?,
        None => html::run_page(store, run, report)?,
    };
    let kept = store.write_page(run, page.as_bytes())?;
    // Never over report.json itself, should it have been named `.html`.
    if let Some(file) = report_file.filter(|f| f.with_extension("html") != *f) {
        write_file(&file.with_extension("html"), page.as_bytes())?;
    }
    Ok(kept)
}
