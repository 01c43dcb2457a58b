//! `probe recheck <run>...`: judge stored runs again with this build's oracles.
//!
//! The work is [`crate::recheck::recheck_run`]; this file resolves the runs, draws the
//! progress bar and writes the comparison for a person or as JSON Lines: one
//! `{"type":"recheck","data":{…}}` per run, `data` holding `run`, `finding_set`,
//! `new_set`, `baseline`, `interactions`, `unjudged`, `unjudged_operations`, `elapsed_ms`,
//! `oracles` (name → version) and `delta` ([`crate::diff::FindingsDelta`]).
//!
//! `--events FILE|-` writes each recheck's event stream (docs/events.md).
//!
//! Exit code: 1 when some recheck found a distinct finding the run-time judging did not,
//! else 0. A finding of a check judged at run time with another definition (same name, new
//! text) is the check's news, not the API's: it is listed, marked "the check changed", and
//! does not make the exit code 1 (as `probe diff --fail-on new-findings`).
//!
//! Depends on: `recheck`, `diff`, `store`, `report::progress`, `cli`, `error`, `app::events`.

use crate::report::terminal::printable;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use serde_json::json;

use crate::cli::{GlobalOpts, RecheckOpts};
use crate::diff::FindingsDelta;
use crate::error::CliError;
use crate::exit;
use crate::ids::{finding_id, FindingSetId};
use crate::recheck::{recheck_run, Recheck, RecheckError, RecheckOptions};
use crate::report::progress::WorkProgress;
use crate::store::Store;

use super::events::EventsOut;
use super::since::{select_runs, SinceWhen};
use super::Out;

/// Maps a recheck error to the command's error (and so its exit code).
pub(crate) fn cli_error(e: RecheckError) -> CliError {
    if e.is_usage() {
        let hint = e.hint();
        return CliError::Usage {
            message: e.to_string(),
            hint,
        };
    }
    match e {
        RecheckError::Store(s) => CliError::Store(s),
        // A stored document this build cannot use, a worker that stopped.
        other => CliError::internal_from(other),
    }
}

/// Runs `probe recheck`.
pub fn exec_recheck(
    opts: &RecheckOpts,
    global: &GlobalOpts,
    store_dir: &Path,
    out: &mut Out<'_>,
    err: &mut dyn Write,
) -> Result<u8, CliError> {
    let store = Store::open_existing(store_dir)?;
    let (runs, many) = select_runs(&store, opts, err)?;
    let options = RecheckOptions {
        overrides: opts.settings.clone(),
        oracles: opts.oracles.clone(),
        threads: opts.threads.max(1),
        checks: super::checks::read(super::project::load(global)?.as_ref(), &opts.checks)?,
    };
    let events_out = EventsOut::open(opts.events.as_deref())?;
    let events = events_out.sink_or_discard();
    // With the events on standard output, the recheck's own output goes beside the errors.
    let mut output = events_out.command_output(out.raw(), err);
    let out = &mut Out::new(&mut output);
    if opts.report_sarif.is_some() && runs.len() != 1 {
        return Err(CliError::Usage {
            message: format!(
                "--report-sarif writes the findings of one run, and {} runs were chosen",
                runs.len()
            ),
            hint: Some("name one run: `probe recheck <run> --report-sarif FILE`".into()),
        });
    }
    let mut gained = false;
    let mut since = SinceWhen::new(&options, &opts.oracles);
    for run in runs {
        let summary = store.run_summary(run)?;
        let progress = WorkProgress::new(
            !global.no_progress,
            summary.interactions,
            "interactions rechecked",
        );
        let result = recheck_run(&store, run, &options, &|n| progress.inc(n), &events);
        progress.finish();
        let result = result.map_err(cli_error)?;
        // A changed check's findings tell of the check, not of the API (as `probe diff`).
        gained |= result.delta.gained_by_the_api().next().is_some();
        if let Some(path) = &opts.report_sarif {
            write_sarif(&store, &result, path)?;
        }
        since.add(&summary, &result);
        // Which set `probe diff` and `probe show` take for the run now: a partial judging
        // (`--oracle`, or checks switched off) never becomes the run's baseline.
        let compared = crate::diff::default_finding_set(&store, run)
            .map_err(|e| match e {
                crate::diff::DiffError::Store(s) => CliError::Store(s),
                other => CliError::internal_from(other),
            })?
            .map(|(id, _)| id);
        if opts.json {
            write_json(out, &result)?;
        } else if many {
            since.write_run_line(out, &summary, &result)?;
        } else {
            write_human(out, &result, compared)?;
        }
    }
    if opts.json {
        since.write_json(&store, out)?;
    } else {
        since.write_human(&store, out)?;
    }
    events_out.finish()?;
    Ok(if gained { exit::FINDINGS } else { exit::OK })
}

/// The recheck's findings as SARIF: the run's kept report (its operations, where they are
/// in the document) with the findings of the set the recheck judged.
fn write_sarif(store: &Store, r: &Recheck, path: &Path) -> Result<(), CliError> {
    let mut report = super::report::kept_report(store, r.run)?;
    report.findings = crate::report::finding_reports(store, &r.set, r.set_id);
    report.causes = crate::report::causes(&report.findings);
    let log = crate::report::sarif::of_run(store, r.run, &report)?;
    super::report::write_file(path, &crate::report::sarif::to_bytes(&log))
}

fn write_json(out: &mut Out<'_>, r: &Recheck) -> Result<(), CliError> {
    let line = json!({
        "type": "recheck",
        "data": {
            "run": r.run,
            "finding_set": r.set_id,
            "new_set": r.new_set,
            "baseline": r.baseline,
            "interactions": r.stats.interactions,
            "unjudged": r.stats.unjudged,
            "unjudged_operations": r.stats.unjudged_operations,
            "elapsed_ms": r.elapsed.as_millis() as u64,
            "oracles": r.set.oracles,
            "findings": r.set.findings.len(),
            "checks": r.checks.iter().map(crate::report::CheckReport::from).collect::<Vec<_>>(),
            "delta": r.delta,
            "check_failures": r.check_failures,
        }
    });
    writeln!(out, "{line}")
}

fn write_human(
    out: &mut Out<'_>,
    r: &Recheck,
    compared: Option<FindingSetId>,
) -> Result<(), CliError> {
    writeln!(
        out,
        "recheck of run {}: {} interactions judged in {:.2}s by probe {}",
        r.run.short(12),
        r.stats.interactions,
        r.elapsed.as_secs_f64(),
        r.set.judged_by
    )?;
    let oracles: Vec<&str> = r.set.oracles.keys().map(String::as_str).collect();
    writeln!(out, "  oracles: {}", oracles.join(", "))?;
    // A failed program check ends nothing: the recheck went on, and says what it missed.
    for failure in &r.check_failures {
        writeln!(out, "  warning: {failure}")?;
    }
    if r.new_set {
        writeln!(
            out,
            "  wrote finding set {} beside the run ({} distinct findings)",
            r.set_id.short(12),
            r.set.findings.len()
        )?;
    } else {
        writeln!(
            out,
            "  finding set {} was already stored: this judging repeats an earlier one exactly",
            r.set_id.short(12)
        )?;
    }
    if let Some(other) = compared.filter(|c| *c != r.set_id) {
        writeln!(
            out,
            "  a partial judging: `probe diff` and `probe show` keep finding set {} as the run's",
            other.short(12)
        )?;
    }
    match r.baseline {
        Some(b) if b == r.set_id => writeln!(out, "  identical to the run-time finding set")?,
        Some(b) => writeln!(
            out,
            "  against the run-time finding set {} (oracles applied here only):",
            b.short(12)
        )?,
        None => writeln!(
            out,
            "  the run has no end manifest (unfinished): every finding counts as new"
        )?,
    }
    write_delta(out, &r.delta, ("new", Some(r.set_id)), ("vanished", None))?;
    if !r.checks.is_empty() {
        let checks: Vec<_> = r
            .checks
            .iter()
            .map(crate::report::CheckReport::from)
            .collect();
        out.with(|w| crate::report::console::write_checks(w, &checks, "  "))?;
    }
    if r.stats.unjudged > 0 {
        let names: Vec<&str> = r
            .stats
            .unjudged_operations
            .iter()
            .map(String::as_str)
            .collect();
        writeln!(
            out,
            "  note: {} interactions were not judged: their operations are not in the stored document's model ({})",
            r.stats.unjudged,
            names.join(", ")
        )?;
    }
    Ok(())
}

/// The delta table by oracle, then the gained and lost findings, one line each; a gained
/// (lost) finding with its short id when `gained_set` (`lost_set`) is the whole set it is
/// from.
pub(crate) fn write_delta(
    out: &mut Out<'_>,
    d: &FindingsDelta,
    (gained, gained_set): (&str, Option<FindingSetId>),
    (lost, lost_set): (&str, Option<FindingSetId>),
) -> Result<(), CliError> {
    let id = |set: Option<FindingSetId>, n: usize| {
        set.map(|s| format!(" · {}", finding_id(s, n)))
            .unwrap_or_default()
    };
    if d.by_oracle.is_empty() {
        writeln!(out, "  no findings on either side")?;
        return Ok(());
    }
    writeln!(
        out,
        "    {:<30} {:>6} {:>9} {:>10}",
        "ORACLE",
        gained.to_uppercase(),
        lost.to_uppercase(),
        "UNCHANGED"
    )?;
    let changed: BTreeMap<&str, u64> = d.changed_counts().fold(BTreeMap::new(), |mut m, k| {
        *m.entry(k.finding.oracle.as_str()).or_insert(0) += 1;
        m
    });
    for (oracle, t) in &d.by_oracle {
        let note = match changed.get(oracle.as_str()) {
            Some(n) => format!("  ({n} seen a different number of times)"),
            None => String::new(),
        };
        writeln!(
            out,
            "    {:<30} {:>6} {:>9} {:>10}{note}",
            oracle, t.gained, t.lost, t.kept
        )?;
    }
    for (sign, findings, set) in [("+", &d.gained, gained_set), ("-", &d.lost, lost_set)] {
        for f in findings {
            // A finding a changed check made or lost tells of the check, not of the API.
            let check = f
                .check
                .map(|c| format!(" [{}]", c.as_str()))
                .unwrap_or_default();
            writeln!(
                out,
                "  {sign} {} {}: {} ({}×){}{check}",
                f.oracle,
                f.operation,
                printable(&f.message),
                f.occurrences,
                id(f.set.or(set), f.n)
            )?;
        }
    }
    for (oracle, change) in &d.checks {
        writeln!(
            out,
            "  {oracle}: {}: its findings above tell of the check, not of the API",
            change.as_str()
        )?;
    }
    Ok(())
}
