//! The run in Markdown, for a CI job's summary page (`--summary-md FILE`, and appended to
//! `$GITHUB_STEP_SUMMARY` when GitHub Actions sets it): the verdict, the findings by
//! severity, a table of the distinct findings with a short reproducer, and the operations
//! never answered 2xx with the reason the page gives (docs/ci.md).
//!
//! Also the words the reports share about a run: its verdict and "seen N times".
//!
//! Depends on: `report` (RunReport, coverage).

use std::fmt::Write as _;

use super::{coverage, FindingReport, RunReport};

/// Rows of the findings table at most; the rest are counted, and in report.json.
pub const FINDINGS_LISTED: usize = 50;

/// Rows of the never-2xx table at most.
const OPERATIONS_LISTED: usize = 30;

/// `seen once`, `seen 3 times`.
pub fn seen(n: usize) -> String {
    format!("seen {}", times(n))
}

/// `once`, `3 times`.
pub fn times(n: usize) -> String {
    match n {
        1 => "once".to_owned(),
        n => format!("{n} times"),
    }
}

/// What a run came to, in a word (`passed`, `failed`, `unreachable`, ...) and a line.
pub struct Verdict {
    /// `passed`, `failed`, `unreachable`, `refused` (the CSS class and the word shown).
    pub word: &'static str,
    pub line: String,
}

/// The findings of `report` counted by severity: high, medium, low.
pub fn by_severity(report: &RunReport) -> [(&'static str, usize); 3] {
    let count = |s: &str| report.findings.iter().filter(|f| f.severity == s).count();
    [
        ("high", count("high")),
        ("medium", count("medium")),
        ("low", count("low")),
    ]
}

/// The verdict of a run: unreachable or refused when it could not test, failed with a
/// finding, passed without; an interrupted run says so.
pub fn verdict(report: &RunReport) -> Verdict {
    let t = &report.totals;
    let interrupted = if report.run.outcome == "interrupted" {
        " (interrupted before its budget was spent)"
    } else {
        ""
    };
    match report.run.outcome.as_str() {
        "unreachable" => Verdict {
            word: "unreachable",
            line: format!("no request to {} got an HTTP answer", report.run.base_url),
        },
        "refused" => Verdict {
            word: "refused",
            line: "the API refused every request".to_owned(),
        },
        _ if t.findings > 0 => {
            let parts: Vec<String> = by_severity(report)
                .iter()
                .filter(|(_, n)| *n > 0)
                .map(|(s, n)| format!("{n} {s}"))
                .collect();
            Verdict {
                word: "failed",
                line: format!(
                    "{} distinct finding{} ({}){interrupted}",
                    t.findings,
                    if t.findings == 1 { "" } else { "s" },
                    parts.join(", ")
                ),
            }
        }
        _ => Verdict {
            word: "passed",
            line: format!("no findings{interrupted}"),
        },
    }
}

/// Text fit for one cell of a Markdown table: one line, pipes escaped, at most `max`
/// characters.
fn cell(text: &str, max: usize) -> String {
    let one: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let short: String = if one.chars().count() > max {
        let mut s: String = one.chars().take(max.saturating_sub(1)).collect();
        s.push('…');
        s
    } else {
        one
    };
    short
        .replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Code in a table cell: one line, pipes escaped (GitHub reads `\\|` in a code span of a
/// table as a pipe); a backtick cannot stand in a code span, so one becomes `'`. No HTML
/// escape: a code span shows its text as it is.
fn code_cell(text: &str, max: usize) -> String {
    let one: String = text
        .chars()
        .map(|c| match c {
            '`' => '\'',
            c if c.is_control() => ' ',
            c => c,
        })
        .take(max)
        .collect();
    format!("`{}`", one.replace('|', "\\|"))
}

fn finding_row(x: &mut String, f: &FindingReport) {
    let oracle = match &f.code {
        Some(code) => format!("{} ({code})", f.oracle),
        None => f.oracle.clone(),
    };
    let replay = if f.replay.is_empty() {
        "—".to_owned()
    } else {
        code_cell(&f.replay, 80)
    };
    let _ = writeln!(
        x,
        "| {} | {} | {} | {} | {} | {} |",
        f.severity,
        cell(&oracle, 60),
        cell(&f.operation, 60),
        cell(&f.message, 160),
        f.occurrences,
        replay
    );
}

/// The Markdown summary of `report`.
pub fn render(report: &RunReport) -> String {
    let r = &report.run;
    let t = &report.totals;
    let v = verdict(report);
    let mut x = String::new();
    let _ = writeln!(
        x,
        "## probe: {} {} — {}\n",
        cell(&r.api_title, 120),
        cell(&r.api_version, 40),
        v.word
    );
    let _ = writeln!(x, "**{}**: {}\n", v.word, cell(&v.line, 300));
    let _ = writeln!(
        x,
        "{} requests in {:.1} s against `{}` · {} of {} operations tried, {} answered 2xx · seed {} · run `{}`\n",
        t.requests,
        r.elapsed_ms as f64 / 1000.0,
        cell(&r.base_url, 200).replace('`', "'"),
        t.operations_tried,
        t.operations,
        t.operations_answered_2xx,
        r.seed,
        &r.id[..12.min(r.id.len())]
    );
    x.push_str("| severity | distinct findings | seen |\n|---|---:|---:|\n");
    for (severity, n) in by_severity(report) {
        let seen: usize = report
            .findings
            .iter()
            .filter(|f| f.severity == severity)
            .map(|f| f.occurrences)
            .sum();
        let _ = writeln!(x, "| {severity} | {n} | {seen} |");
    }
    if !report.findings.is_empty() {
        x.push_str("\n### Findings\n\n");
        x.push_str("| severity | oracle | operation | finding | seen | reproduce |\n");
        x.push_str("|---|---|---|---|---:|---|\n");
        // In the order a person reads them: by cause (severity, then how often), each
        // cause's findings lead first.
        let ordered = report
            .causes
            .iter()
            .flat_map(|c| c.findings.iter().copied());
        for i in ordered.take(FINDINGS_LISTED) {
            if let Some(f) = report.findings.get(i) {
                finding_row(&mut x, f);
            }
        }
        if report.findings.len() > FINDINGS_LISTED {
            let _ = writeln!(
                x,
                "\n… and {} more in report.json (`probe show {}`).",
                report.findings.len() - FINDINGS_LISTED,
                &r.id[..12.min(r.id.len())]
            );
        }
        x.push_str("\n`probe replay <id>` sends a finding's request again; `probe show <id> --as curl` prints it as a curl line.\n");
    }
    let never: Vec<(String, String)> = report
        .operations
        .iter()
        .filter_map(|o| coverage::never_2xx_reason(o, None).map(|why| (o.operation.clone(), why)))
        .collect();
    if !never.is_empty() {
        let _ = writeln!(
            x,
            "\n### Operations never answered 2xx ({})\n\n| operation | why |\n|---|---|",
            never.len()
        );
        for (op, why) in never.iter().take(OPERATIONS_LISTED) {
            let _ = writeln!(x, "| {} | {} |", cell(op, 80), cell(why, 200));
        }
        if never.len() > OPERATIONS_LISTED {
            let _ = writeln!(
                x,
                "\n… and {} more on the run's page.",
                never.len() - OPERATIONS_LISTED
            );
        }
    }
    if !report.skipped.is_empty() {
        let _ = writeln!(
            x,
            "\n{} operations skipped (see `probe spec` or report.json).",
            report.skipped.len()
        );
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_read_as_words() {
        assert_eq!(seen(1), "seen once");
        assert_eq!(seen(2), "seen 2 times");
        assert_eq!(seen(0), "seen 0 times");
    }

    #[test]
    fn a_cell_holds_one_line_and_no_table_markup() {
        assert_eq!(cell("a|b\nc", 10), "a\\|b c");
        assert_eq!(cell("abcdef", 4), "abc…");
        assert_eq!(cell("<script>", 20), "&lt;script&gt;");
        assert_eq!(code_cell("x `y`", 20), "`x 'y'`");
    }
}
