//! `probe diff <runA> <runB>`: two runs compared, for a person or as JSON.
//!
//! The comparison is [`crate::diff::RunDiff`]; this file resolves the runs, writes it, and
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
use crate::store::Store;

use super::log::io;
use super::recheck::write_delta;

/// Runs `probe diff`.
pub fn exec_diff(opts: &DiffOpts, store_dir: &Path, out: &mut dyn Write) -> Result<u8, CliError> {
    let store = Store::open_existing(store_dir)?;
    let a = store.resolve_run(&opts.a).map_err(CliError::lookup)?;
    let b = store.resolve_run(&opts.b).map_err(CliError::lookup)?;
    let diff = RunDiff::compute(&store, a, b).map_err(|e| match e {
        DiffError::Store(s) => CliError::Store(s),
    })?;
    if opts.json {
        let mut data = serde_json::to_value(&diff).map_err(|e| {
            CliError::internal(format!("cannot encode the diff of {a} and {b} as JSON"), e)
        })?;
        data["new_findings"] = json!(diff.has_new_findings());
        data["any_change"] = json!(diff.has_any_change());
        writeln!(out, "{}", json!({"type": "diff", "data": data})).map_err(io)?;
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

fn label(s: &RunSide) -> String {
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

fn write_human(out: &mut dyn Write, d: &RunDiff) -> Result<(), CliError> {
    writeln!(out, "A {}  →  B {}", label(&d.a), label(&d.b)).map_err(io)?;
    writeln!(out, "    {:<12} {:>14} {:>14}", "", "A", "B").map_err(io)?;
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
        writeln!(out, "    {name:<12} {a:>14} {b:>14}").map_err(io)?;
    }
    let f = &d.findings;
    writeln!(
        out,
        "findings: {} gained, {} lost, {} kept (newest finding set of each run)",
        f.gained.len(),
        f.lost.len(),
        f.kept.len()
    )
    .map_err(io)?;
    write_delta(out, f, "gained", "lost")?;
    let moved: Vec<String> = f
        .by_operation
        .iter()
        .filter(|(_, t)| t.gained > 0 || t.lost > 0)
        .map(|(op, t)| format!("{op} +{} -{}", t.gained, t.lost))
        .collect();
    if !moved.is_empty() {
        writeln!(out, "  by operation: {}", moved.join(", ")).map_err(io)?;
    }
    if d.ok_gained.is_empty() && d.ok_lost.is_empty() {
        writeln!(out, "operations answered 2xx: the same on both sides").map_err(io)?;
    } else {
        writeln!(
            out,
            "operations answered 2xx: gained [{}], lost [{}]",
            d.ok_gained.join(", "),
            d.ok_lost.join(", ")
        )
        .map_err(io)?;
    }
    let differing: Vec<_> = d.operations.iter().filter(|o| o.a != o.b).collect();
    if differing.is_empty() {
        writeln!(
            out,
            "status classes: equal for all {} operations",
            d.operations.len()
        )
        .map_err(io)?;
    } else {
        writeln!(
            out,
            "status classes (A→B), {} of {} operations differ:",
            differing.len(),
            d.operations.len()
        )
        .map_err(io)?;
        writeln!(
            out,
            "    {:<28} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "OPERATION", "2xx", "3xx", "4xx", "5xx", "failed"
        )
        .map_err(io)?;
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
            )
            .map_err(io)?;
        }
    }
    let c = &d.cases;
    writeln!(out, "test cases: {} in A, {} in B", c.a, c.b).map_err(io)?;
    writeln!(
        out,
        "  by position (seq order): {} identical, {} different",
        c.identical, c.different
    )
    .map_err(io)?;
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
        )
        .map_err(io)?;
    }
    writeln!(
        out,
        "  as sets of ids: {} common, {} only in A, {} only in B",
        c.common, c.only_a, c.only_b
    )
    .map_err(io)?;
    Ok(())
}
