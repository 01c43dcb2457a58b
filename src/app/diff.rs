//! `probe diff <runA> <runB>`: two runs compared, for a person or as JSON.
//!
//! The comparison is [`crate::diff::RunDiff`] of one finding set per run: the run-time set
//! or the newest full recheck ([`crate::diff::default_finding_set`]), unless
//! `--finding-set-a`/`-b` (or a set's id in place of the run) names one; the human output
//! says which set each side is, the JSON has them in `a` and `b` (`finding_set`,
//! `finding_set_choice`, `finding_set_judged_by`, `finding_set_oracles`).
//!
//! This file resolves the runs, writes the comparison, and
//! decides the exit code: 0, or 1 when `--fail-on` matches (`new-findings`: B has a
//! distinct finding A has not; `any-change`: anything but timing differs). JSON: one line
//! `{"type":"diff","data":{…}}` with the fields of `RunDiff` plus `new_findings` and
//! `any_change`.
//!
//! With `--html FILE` it also writes the comparison as a page (`report::html`).
//!
//! Depends on: `diff`, `store`, `cli`, `error`, `app::recheck` (the delta table),
//! `report::html`, `app::report` (writing the page).

use std::io::Write;
use std::path::Path;

use serde_json::json;

use crate::cli::{DiffOpts, FailOn};
use crate::diff::{DiffError, RunDiff, RunSide};
use crate::error::CliError;
use crate::exit;
use crate::ids::{FindingSetId, RunId};
use crate::store::{ObjectKind, Store};

use super::recheck::write_delta;
use super::Out;

/// Runs `probe diff`.
pub fn exec_diff(
    opts: &DiffOpts,
    store_dir: &Path,
    out: &mut Out<'_>,
    err: &mut dyn Write,
) -> Result<u8, CliError> {
    let store = Store::open_existing(store_dir)?;
    let a = union_side(&store, &opts.a, opts.finding_set_a.as_deref(), err)?;
    let b = union_side(&store, &opts.b, opts.finding_set_b.as_deref(), err)?;
    let diff = RunDiff::compute_unions(&store, (a.0.as_deref(), &a.1), (b.0.as_deref(), &b.1))
        .map_err(|e| match e {
            DiffError::Store(s) => CliError::Store(s),
            e @ DiffError::SetOfAnotherRun { .. } => CliError::Usage {
                hint: e.hint(),
                message: e.to_string(),
            },
        })?;
    let (a, b) = (diff.a.run, diff.b.run);
    if opts.json {
        let mut data = serde_json::to_value(&diff).map_err(|e| {
            CliError::internal(format!("cannot encode the diff of {a} and {b} as JSON"), e)
        })?;
        data["new_findings"] = json!(diff.has_new_findings());
        data["any_change"] = json!(diff.has_any_change());
        writeln!(out, "{}", json!({"type": "diff", "data": data}))?;
    } else {
        write_human(out, &diff)?;
    }
    if let Some(path) = &opts.html {
        let page = crate::report::html::diff_page(&store, &diff)?;
        super::report::write_file(path, page.as_bytes())?;
    }
    let fail = match opts.fail_on {
        Some(FailOn::NewFindings) => diff.has_new_findings(),
        Some(FailOn::AnyChange) => diff.has_any_change(),
        None => false,
    };
    Ok(if fail { exit::FINDINGS } else { exit::OK })
}

/// The runs a side names, each with the finding set given for it: one run, or the parts
/// of a campaign (`campaign:…`, with its id), each by its default finding set.
#[allow(clippy::type_complexity)]
fn union_side(
    store: &Store,
    text: &str,
    given: Option<&str>,
    err: &mut dyn Write,
) -> Result<(Option<String>, Vec<(RunId, Option<FindingSetId>)>), CliError> {
    if !super::campaign::names_campaign(text) {
        return Ok((None, vec![side(store, text, given, err)?]));
    }
    if given.is_some() {
        return Err(CliError::usage(format!(
            "--finding-set-a/-b name one run's set; `{text}` is a campaign of several runs"
        )));
    }
    let campaign = super::campaign::resolve(store, text)?;
    campaign.note_missing(err);
    let runs = campaign.runs().into_iter().map(|r| (r, None)).collect();
    Ok((Some(campaign.id), runs))
}

/// The run a side names and the finding set given for it: `--finding-set-*`, or a finding
/// set's id given in place of the run.
fn side(
    store: &Store,
    text: &str,
    given: Option<&str>,
    err: &mut dyn Write,
) -> Result<(RunId, Option<FindingSetId>), CliError> {
    let as_set = |text: &str| -> Result<Option<FindingSetId>, CliError> {
        match store.resolve(text) {
            Ok((ObjectKind::FindingSet, id)) => Ok(Some(FindingSetId(id))),
            Ok(_) | Err(_) => Ok(None),
        }
    };
    let given = match given {
        Some(g) => match store.resolve(g).map_err(CliError::lookup)? {
            (ObjectKind::FindingSet, id) => Some(FindingSetId(id)),
            (kind, _) => {
                return Err(CliError::usage(format!(
                    "`{g}` is a {}, not a finding set",
                    kind.name()
                )))
            }
        },
        None => as_set(text)?,
    };
    let run = store.resolve_run(text).map_err(CliError::lookup)?;
    super::note_run_name(store, text, err);
    Ok((run, given))
}

/// `finding set 3f9a2c1b7d0e (run-time; probe 0.1.0, 12 oracles, 13 findings)`.
fn set_label(s: &RunSide) -> String {
    if s.campaign.is_some() {
        return format!(
            "the finding sets of its parts ({} oracles, {} findings)",
            s.finding_set_oracles.len(),
            s.findings
        );
    }
    match s.finding_set {
        None => "no finding set (the run has none)".to_owned(),
        Some(id) => format!(
            "finding set {} ({}; probe {}, {} oracle{}, {} finding{})",
            id.short(12),
            s.finding_set_choice.map_or("-", |c| c.as_str()),
            s.finding_set_judged_by.as_deref().unwrap_or("?"),
            s.finding_set_oracles.len(),
            if s.finding_set_oracles.len() == 1 {
                ""
            } else {
                "s"
            },
            s.findings,
            if s.findings == 1 { "" } else { "s" },
        ),
    }
}

fn label(s: &RunSide) -> String {
    if let Some(id) = &s.campaign {
        return format!(
            "campaign {} ({} part{})",
            super::campaign::short(id),
            s.parts.len(),
            if s.parts.len() == 1 { "" } else { "s" }
        );
    }
    match &s.name {
        Some(n) => format!("{} ({n})", s.run.short(12)),
        None => s.run.short(12),
    }
}

fn secs(ms: Option<u64>) -> String {
    ms.map_or("unfinished".into(), |ms| {
        format!("{:.2}s", ms as f64 / 1000.0)
    })
}

fn rate(r: Option<f64>) -> String {
    r.map_or("-".into(), |r| format!("{r:.0}/s"))
}

fn write_human(out: &mut Out<'_>, d: &RunDiff) -> Result<(), CliError> {
    writeln!(out, "A {}  →  B {}", label(&d.a), label(&d.b))?;
    writeln!(out, "    {:<12} {:>14} {:>14}", "", "A", "B")?;
    let rows = [
        ("seed", d.a.seed.to_string(), d.b.seed.to_string()),
        (
            "requests",
            d.a.requests.to_string(),
            d.b.requests.to_string(),
        ),
        ("time", secs(d.a.elapsed_ms), secs(d.b.elapsed_ms)),
        ("rate", rate(d.a.rate), rate(d.b.rate)),
        (
            "findings",
            d.a.findings.to_string(),
            d.b.findings.to_string(),
        ),
    ];
    for (name, a, b) in rows {
        writeln!(out, "    {name:<12} {a:>14} {b:>14}")?;
    }
    let f = &d.findings;
    writeln!(out, "A: {}", set_label(&d.a))?;
    writeln!(out, "B: {}", set_label(&d.b))?;
    writeln!(
        out,
        "findings: {} gained, {} lost, {} kept",
        f.gained.len(),
        f.lost.len(),
        f.kept.len()
    )?;
    write_delta(
        out,
        f,
        ("gained", d.b.finding_set),
        ("lost", d.a.finding_set),
    )?;
    let moved: Vec<String> = f
        .by_operation
        .iter()
        .filter(|(_, t)| t.gained > 0 || t.lost > 0)
        .map(|(op, t)| format!("{op} +{} -{}", t.gained, t.lost))
        .collect();
    if !moved.is_empty() {
        writeln!(out, "  by operation: {}", moved.join(", "))?;
    }
    if d.ok_gained.is_empty() && d.ok_lost.is_empty() {
        writeln!(out, "operations answered 2xx: the same on both sides")?;
    } else {
        writeln!(
            out,
            "operations answered 2xx: gained [{}], lost [{}]",
            d.ok_gained.join(", "),
            d.ok_lost.join(", ")
        )?;
    }
    let differing: Vec<_> = d.operations.iter().filter(|o| o.a != o.b).collect();
    if differing.is_empty() {
        writeln!(
            out,
            "status classes: equal for all {} operations",
            d.operations.len()
        )?;
    } else {
        writeln!(
            out,
            "status classes (A→B), {} of {} operations differ:",
            differing.len(),
            d.operations.len()
        )?;
        writeln!(
            out,
            "    {:<28} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "OPERATION", "2xx", "3xx", "4xx", "5xx", "failed"
        )?;
        for o in differing {
            let cell = |i: usize| format!("{}→{}", o.a[i], o.b[i]);
            writeln!(
                out,
                "    {:<28} {:>9} {:>9} {:>9} {:>9} {:>9}",
                o.operation,
                cell(2),
                cell(3),
                cell(4),
                cell(5),
                cell(0)
            )?;
        }
    }
    let c = &d.cases;
    writeln!(out, "test cases: {} in A, {} in B", c.a, c.b)?;
    writeln!(
        out,
        "  by position (seq order): {} identical, {} different",
        c.identical, c.different
    )?;
    if let Some(first) = &c.first_difference {
        let seq = |s: Option<u64>| s.map_or("-".into(), |s| s.to_string());
        let case = |c: Option<crate::ids::CaseId>| c.map_or("none".into(), |c| c.short(12));
        writeln!(
            out,
            "  first difference at position {} (seq {} in A, {} in B): case {} in A, {} in B",
            first.position,
            seq(first.seq_a),
            seq(first.seq_b),
            case(first.case_a),
            case(first.case_b)
        )?;
    }
    writeln!(
        out,
        "  as sets of ids: {} common, {} only in A, {} only in B",
        c.common, c.only_a, c.only_b
    )?;
    Ok(())
}
