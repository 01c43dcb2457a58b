//! The console summary: what a person reads in ten seconds after a run.

use crate::report::colour::Paint;
use crate::report::terminal::printable;
use std::io::{self, Write};

use crate::report::RunReport;

/// How many findings the summary shows in full.
const TOP_FINDINGS: usize = 8;

/// Writes the summary of `report`, coloured by `paint`: the verdict (findings or none)
/// and each finding's tag in its severity's colour.
pub fn write_summary(
    out: &mut dyn Write,
    report: &RunReport,
    report_path: Option<&str>,
    paint: Paint,
) -> io::Result<()> {
    writeln!(out)?;
    write_totals(out, report)?;
    write_operations(out, report)?;
    writeln!(out)?;
    if report.findings.is_empty() {
        writeln!(out, "{}", paint.good("no findings"))?;
    } else {
        write_findings(out, report, paint)?;
    }
    if !report.checks.is_empty() {
        writeln!(out)?;
        write_checks(out, &report.checks, "")?;
    }
    writeln!(out)?;
    writeln!(out, "run {}", report.run.id)?;
    if let Some(p) = report_path {
        writeln!(out, "report {p}")?;
    }
    Ok(())
}

/// The run's heading: the API, the requests sent, of which kinds, and those not answered.
fn write_totals(out: &mut dyn Write, report: &RunReport) -> io::Result<()> {
    let r = &report.run;
    let t = &report.totals;
    writeln!(
        out,
        "probe run {} · {} {} · {}",
        &r.id[..12.min(r.id.len())],
        r.api_title,
        r.api_version,
        r.base_url
    )?;
    if r.insecure {
        writeln!(
            out,
            "  WARNING: TLS certificates were NOT verified (--insecure): anyone between probe and the API could have answered"
        )?;
    }
    writeln!(
        out,
        "  {} requests in {} ({:.0}/s) · {} of {} operations tried, {} answered 2xx · seed {}",
        t.requests,
        seconds(r.elapsed_ms),
        t.requests_per_second,
        t.operations_tried,
        t.operations,
        t.operations_answered_2xx,
        r.seed
    )?;
    let mut kinds: Vec<String> = Vec::new();
    let changed: Vec<(&str, u64)> = t
        .requests_by_kind
        .iter()
        .filter_map(|(k, n)| k.strip_prefix("changed:").map(|kind| (kind, *n)))
        .collect();
    for (k, n) in &t.requests_by_kind {
        if k == "series" {
            kinds.push(format!("{n} in {} series", t.series));
        } else if !k.starts_with("changed:") {
            kinds.push(format!("{n} {k}"));
        }
    }
    if !changed.is_empty() {
        let total: u64 = changed.iter().map(|(_, n)| n).sum();
        let each: Vec<String> = changed.iter().map(|(k, n)| format!("{n} {k}")).collect();
        kinds.push(format!("{total} changed ({})", each.join(", ")));
    }
    if !kinds.is_empty() {
        writeln!(out, "  requests: {}", kinds.join(" · "))?;
    }
    if t.requests > t.requests_answered {
        writeln!(
            out,
            "  no HTTP answer: {} of {} requests ({})",
            t.requests - t.requests_answered,
            t.requests,
            super::transport_text(&t.transport)
        )?;
    }
    Ok(())
}

/// The operations held back or never answered 2xx, the outcome when not completed, the
/// files not read and the operations skipped.
fn write_operations(out: &mut dyn Write, report: &RunReport) -> io::Result<()> {
    let r = &report.run;
    // Every operation never answered 2xx, with the reason the page gives for it.
    let never: Vec<String> = report
        .operations
        .iter()
        .filter_map(|o| {
            crate::report::coverage::never_2xx_reason(o, None)
                .map(|why| format!("{} ({why})", o.operation))
        })
        .collect();
    operations_line(out, "never answered 2xx", &never)?;
    // Operations the scheduler held back: slow ones (their share of the workers' time
    // is bounded) and ones the API asked to wait.
    let held: Vec<String> = report
        .operations
        .iter()
        .filter(|o| o.slow_lane_requests > 0 || o.throttled > 0)
        .map(|o| {
            let mut what = Vec::new();
            if o.slow_lane_requests > 0 {
                what.push(format!("slowest {}", seconds(o.slowest_ms)));
                if let Some(t) = o.transport.get("timeout") {
                    what.push(format!("{t} timeout{}", if *t == 1 { "" } else { "s" }));
                }
            }
            if o.throttled > 0 {
                what.push(format!("asked to wait {}x", o.throttled));
            }
            format!("{} ({})", o.operation, what.join(", "))
        })
        .collect();
    operations_line(out, "held back", &held)?;
    if r.outcome != "completed" {
        writeln!(out, "  outcome: {}", r.outcome)?;
    }
    for file in &report.unreadable_files {
        writeln!(out, "  not read: {file}")?;
    }
    if !report.skipped.is_empty() {
        writeln!(
            out,
            "  {} operations skipped (see `probe spec` or report.json)",
            report.skipped.len()
        )?;
    }
    Ok(())
}

/// The lead finding of a cause.
fn lead<'a>(
    report: &'a RunReport,
    c: &crate::report::CauseReport,
) -> &'a crate::report::FindingReport {
    &report.findings[c.findings[0]]
}

/// The findings: counts by oracle, the top causes, those found by series.
fn write_findings(out: &mut dyn Write, report: &RunReport, paint: Paint) -> io::Result<()> {
    let t = &report.totals;
    let verdict = paint.bad(&format!("findings: {} distinct", t.findings));
    // Causes only when they say something: one cause seen in several operations.
    if t.causes == t.findings {
        writeln!(out, "{verdict}")?;
    } else {
        writeln!(
            out,
            "{verdict}, {} cause{} once those shared by operations are grouped",
            t.causes,
            if t.causes == 1 { "" } else { "s" }
        )?;
    }
    let mut tallies: Vec<(String, usize, u64)> = report
        .oracles
        .iter()
        .filter(|o| o.findings > 0)
        .map(|o| {
            let label = match &o.code {
                Some(c) => format!("{} ({c})", o.name),
                None => o.name.to_owned(),
            };
            (label, o.findings, o.occurrences as u64)
        })
        .collect();
    // The user's checks are no oracle of the catalogue: counted from their findings, in
    // the order the checks were read.
    for c in &report.checks {
        let mine: Vec<_> = report
            .findings
            .iter()
            .filter(|f| f.oracle == c.oracle)
            .collect();
        if !mine.is_empty() {
            let label = match &mine[0].code {
                Some(code) => format!("{} ({code})", c.oracle),
                None => c.oracle.clone(),
            };
            tallies.push((
                label,
                mine.len(),
                mine.iter().map(|f| f.occurrences as u64).sum(),
            ));
        }
    }
    for (label, findings, occurrences) in tallies {
        writeln!(
            out,
            "  {label:<38} {findings:>3} distinct · {occurrences} time{}",
            if occurrences == 1 { "" } else { "s" }
        )?;
    }
    writeln!(out)?;
    writeln!(out, "top findings (one per cause)")?;
    for (i, c) in report.causes.iter().take(TOP_FINDINGS).enumerate() {
        write_cause(out, report, i, c, paint)?;
    }
    // Findings of series are faults of how calls fit together: never left to the
    // report alone behind more frequent ones.
    let series: Vec<_> = report
        .causes
        .iter()
        .skip(TOP_FINDINGS)
        .map(|c| lead(report, c))
        .filter(|f| f.series.is_some())
        .collect();
    let more = report.causes.len().saturating_sub(TOP_FINDINGS) - series.len();
    if !series.is_empty() {
        writeln!(out)?;
        writeln!(
            out,
            "found by series (calls on one resource; `probe replay` sends the whole series again)"
        )?;
        for f in series {
            let code = f
                .code
                .as_deref()
                .map(|c| format!("{c} "))
                .unwrap_or_default();
            writeln!(
                out,
                "  {}{} {}",
                id_of(f),
                paint.severity(&f.severity, &format!("[{code}{}]", f.oracle)),
                printable(&f.message)
            )?;
            writeln!(out, "     {}", f.replay)?;
        }
    }
    if more > 0 {
        writeln!(out, "  … and {more} more in report.json")?;
    }
    Ok(())
}

/// The `i`th top cause: its lead finding, the other operations it is seen in, the change
/// that showed it, how often, its curl line and how to replay it.
fn write_cause(
    out: &mut dyn Write,
    report: &RunReport,
    i: usize,
    c: &crate::report::CauseReport,
    paint: Paint,
) -> io::Result<()> {
    let f = lead(report, c);
    let code = f
        .code
        .as_deref()
        .map(|c| format!("{c} "))
        .unwrap_or_default();
    writeln!(
        out,
        "  {}. {}{} {}",
        i + 1,
        id_of(f),
        paint.severity(&f.severity, &format!("[{code}{}]", f.oracle)),
        printable(&f.message)
    )?;
    let others: Vec<String> = c
        .operations
        .iter()
        .filter(|o| **o != f.operation)
        .cloned()
        .collect();
    if !others.is_empty() {
        operations_line(
            out,
            &format!(
                "   also in {} other operation{}",
                others.len(),
                if others.len() == 1 { "" } else { "s" }
            ),
            &others,
        )?;
    }
    if let Some(m) = &f.mutation {
        writeln!(
            out,
            "     changed: {} at {} ({})",
            m.kind,
            printable(&m.place),
            printable(&m.description)
        )?;
    }
    if c.occurrences > 1 {
        writeln!(out, "     seen {} times", c.occurrences)?;
    }
    if let Some(curl) = &f.curl {
        writeln!(out, "     {}", printable(&truncate(curl, 300)))?;
    }
    writeln!(out, "     {}", f.replay)?;
    Ok(())
}

/// What each user check did, a line each, after `indent`: the exchanges it judged, failed
/// and could not judge, and why it could not judge the first of those. Not judged is never
/// a pass, so it is said whenever it happened.
pub fn write_checks(
    out: &mut dyn Write,
    checks: &[crate::report::CheckReport],
    indent: &str,
) -> io::Result<()> {
    writeln!(out, "{indent}checks: judged · failed · not judged")?;
    for c in checks {
        writeln!(
            out,
            "{indent}  {:<38} {:>5} judged · {} failed · {} not judged",
            c.oracle, c.judged, c.failed, c.not_judged
        )?;
        if let Some(first) = &c.first_not_judged {
            writeln!(
                out,
                "{indent}     first not judged: seq {}: {}",
                first.seq,
                printable(&truncate(&first.reason, 200))
            )?;
        }
    }
    Ok(())
}

/// A finding's short id and a space, what `probe show` and `probe replay` take (nothing
/// for a report.json written before findings had one).
fn id_of(f: &crate::report::FindingReport) -> String {
    if f.id.is_empty() {
        String::new()
    } else {
        format!("{} ", f.id)
    }
}

/// `37ms`, `3.2s`, `61s`.
/// `  label: a, b, c, d, e and 3 more in report.json`: at most five operations on one
/// line; nothing when there are none.
fn operations_line(out: &mut dyn Write, label: &str, operations: &[String]) -> io::Result<()> {
    if operations.is_empty() {
        return Ok(());
    }
    let shown: Vec<&str> = operations.iter().take(5).map(String::as_str).collect();
    let more = operations.len() - shown.len();
    write!(out, "  {label}: {}", shown.join(", "))?;
    if more > 0 {
        write!(out, " and {more} more in report.json")?;
    }
    writeln!(out)
}

fn seconds(ms: u64) -> String {
    match ms {
        0..=999 => format!("{ms}ms"),
        1_000..=59_999 => format!("{:.1}s", ms as f64 / 1000.0),
        _ => format!("{}s", ms / 1000),
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        let cut: String = s.chars().take(max).collect();
        format!("{cut}…")
    }
}
