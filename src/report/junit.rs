//! JUnit XML for CI: one test case per operation tried, failing with one `<failure>` per
//! distinct finding on it.

use std::fmt::Write as _;

use crate::report::RunReport;

fn esc(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_control() || matches!(c, '\n' | '\t'))
        .map(|c| match c {
            '&' => "&amp;".to_owned(),
            '<' => "&lt;".to_owned(),
            '>' => "&gt;".to_owned(),
            '"' => "&quot;".to_owned(),
            '\'' => "&apos;".to_owned(),
            c => c.to_string(),
        })
        .collect()
}

/// The JUnit XML document of `report`.
pub fn render(report: &RunReport) -> String {
    // An operation fails with a finding on it, or when nothing it sent got an HTTP answer
    // (whether or not the transport oracle is on): a dead deployment is never green.
    let unanswered = |o: &crate::report::OperationReport| o.requests > 0 && o.answered() == 0;
    let failures = report
        .operations
        .iter()
        .filter(|o| o.findings > 0 || unanswered(o))
        .count();
    // Every testcase is counted, the skipped ones too (JUnit's `tests` includes them).
    let tests = report.operations.len() + report.skipped.len();
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        x,
        "<testsuites name=\"probe\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"{}\" time=\"{:.3}\">",
        report.skipped.len(),
        report.run.elapsed_ms as f64 / 1000.0
    );
    let _ = writeln!(
        x,
        "  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"{}\" timestamp=\"{}\" time=\"{:.3}\">",
        esc(&report.run.api_title),
        report.skipped.len(),
        esc(&report.run.started),
        report.run.elapsed_ms as f64 / 1000.0
    );
    let _ = writeln!(x, "    <properties><property name=\"run\" value=\"{}\"/><property name=\"seed\" value=\"{}\"/></properties>", report.run.id, report.run.seed);
    for op in &report.operations {
        let _ = write!(
            x,
            "    <testcase classname=\"{}\" name=\"{} {}\"",
            esc(&op.operation),
            esc(&op.method),
            esc(&op.path)
        );
        let mine: Vec<_> = report
            .findings
            .iter()
            .filter(|f| f.operation == op.operation)
            .collect();
        if mine.is_empty() && !unanswered(op) {
            x.push_str("/>\n");
            continue;
        }
        x.push_str(">\n");
        if unanswered(op) {
            let _ = writeln!(
                x,
                "      <failure type=\"no_http_answer\" message=\"{}\"/>",
                esc(&format!(
                    "none of {} requests got an HTTP answer ({})",
                    op.requests,
                    crate::report::transport_text(&op.transport)
                ))
            );
        }
        for f in mine {
            let _ = writeln!(
                x,
                "      <failure type=\"{}\" message=\"{}\">{}\n{}\n{}</failure>",
                esc(&f.oracle),
                esc(&f.message),
                esc(&crate::report::summary::seen(f.occurrences)),
                esc(f.curl.as_deref().unwrap_or("")),
                esc(&f.replay)
            );
        }
        x.push_str("    </testcase>\n");
    }
    for s in &report.skipped {
        let _ = writeln!(
            x,
            "    <testcase classname=\"{}\" name=\"{}\"><skipped message=\"{}\"/></testcase>",
            esc(&s.operation),
            esc(&s.operation),
            esc(&s.reason)
        );
    }
    x.push_str("  </testsuite>\n</testsuites>\n");
    x
}
