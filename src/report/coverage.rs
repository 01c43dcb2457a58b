//! What the answers of each operation covered: the statuses its document declares that
//! some answer gave and those none gave, and, for an operation never answered 2xx, why, as
//! far as probe knows. One reading for the console, the page, the Markdown summary and the
//! exports, so that they never give two reasons for one operation.
//!
//! Depends on: `report` (OperationReport) only.

use std::collections::BTreeMap;

use super::{transport_text, OperationReport};

/// A status entry of the document, as report.json keeps it (`200`, `4XX`, `default`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Declared {
    Exact(u16),
    Range(u16),
    Default,
}

fn parse_declared(text: &str) -> Option<Declared> {
    if text.eq_ignore_ascii_case("default") {
        return Some(Declared::Default);
    }
    if let Ok(n) = text.parse::<u16>() {
        return Some(Declared::Exact(n));
    }
    let class = text
        .strip_suffix("XX")
        .or_else(|| text.strip_suffix("xx"))?;
    class.parse::<u16>().ok().map(Declared::Range)
}

/// One declared status of an operation and the answers it covered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclaredSeen {
    /// As the document writes it.
    pub status: String,
    /// Answers it covered (an exact entry before a range, a range before `default`).
    pub answers: u64,
}

/// The statuses of one operation: declared ones with the answers each covered, and the
/// statuses answered that no entry declares.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StatusCoverage {
    pub declared: Vec<DeclaredSeen>,
    /// Answered statuses no entry covers, with their counts.
    pub undeclared: Vec<(u16, u64)>,
}

impl StatusCoverage {
    /// The declared statuses no answer gave.
    pub fn not_seen(&self) -> impl Iterator<Item = &DeclaredSeen> {
        self.declared.iter().filter(|d| d.answers == 0)
    }

    /// The declared statuses some answer gave.
    pub fn seen(&self) -> impl Iterator<Item = &DeclaredSeen> {
        self.declared.iter().filter(|d| d.answers > 0)
    }
}

/// The answers of `op` by exact status, from `codes` when given (the page reads them from
/// the store for reports of earlier builds), else from its report.
pub fn codes_of(op: &OperationReport, codes: Option<&BTreeMap<u16, u64>>) -> BTreeMap<u16, u64> {
    match codes {
        Some(c) if !c.is_empty() => c.clone(),
        _ => op
            .status_codes
            .iter()
            .filter_map(|(c, n)| c.parse::<u16>().ok().map(|c| (c, *n)))
            .collect(),
    }
}

/// Which entry of `declared` covers `status`: exact first, then its class, then `default`.
fn covering(declared: &[(String, Declared)], status: u16) -> Option<usize> {
    let find = |want: &dyn Fn(Declared) -> bool| declared.iter().position(|(_, d)| want(*d));
    find(&|d| d == Declared::Exact(status))
        .or_else(|| find(&|d| d == Declared::Range(status / 100)))
        .or_else(|| find(&|d| d == Declared::Default))
}

/// The status coverage of `op`, its answers by exact status being `codes`.
pub fn status_coverage(op: &OperationReport, codes: &BTreeMap<u16, u64>) -> StatusCoverage {
    let declared: Vec<(String, Declared)> = op
        .declared_statuses
        .iter()
        .filter_map(|s| parse_declared(s).map(|d| (s.clone(), d)))
        .collect();
    let mut answers = vec![0u64; declared.len()];
    let mut undeclared = Vec::new();
    for (&status, &n) in codes {
        match covering(&declared, status) {
            Some(i) => answers[i] += n,
            None => undeclared.push((status, n)),
        }
    }
    StatusCoverage {
        declared: declared
            .into_iter()
            .zip(answers)
            .map(|((status, _), answers)| DeclaredSeen { status, answers })
            .collect(),
        undeclared,
    }
}

/// `302 ×203, 404 ×2`: the most frequent first, at most four.
fn listed(codes: &BTreeMap<u16, u64>) -> String {
    let mut by: Vec<(u16, u64)> = codes.iter().map(|(c, n)| (*c, *n)).collect();
    by.sort_by_key(|(c, n)| (std::cmp::Reverse(*n), *c));
    by.iter()
        .take(4)
        .map(|(c, n)| format!("{c} ×{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Why an operation never got a 2xx answer, as far as probe knows; `None` when it did.
/// `codes` are its answers by exact status when the caller has them from elsewhere (see
/// [`codes_of`]).
pub fn never_2xx_reason(
    op: &OperationReport,
    codes: Option<&BTreeMap<u16, u64>>,
) -> Option<String> {
    if op.statuses.contains_key("2xx") {
        return None;
    }
    if op.requests == 0 {
        return Some("not sent".into());
    }
    let answered = op.answered();
    if answered == 0 {
        let only_timeouts = op.transport.keys().all(|k| k == "timeout");
        return Some(if only_timeouts && !op.transport.is_empty() {
            format!("only timeouts ({})", op.transport.values().sum::<u64>())
        } else {
            format!("no HTTP answer: {}", transport_text(&op.transport))
        });
    }
    let codes = codes_of(op, codes);
    let all = |pred: &dyn Fn(u16) -> bool| !codes.is_empty() && codes.keys().all(|c| pred(*c));
    let tail = if op.requests > answered {
        format!("; {} without an answer", op.requests - answered)
    } else {
        String::new()
    };
    let seen = listed(&codes);
    // Answers with a status the document declares below 400 (a redirect, say): the
    // operation did what it says, and that is the reason, whatever else it answered to
    // values probe invented.
    let declared: Vec<(String, Declared)> = op
        .declared_statuses
        .iter()
        .filter_map(|s| parse_declared(s).map(|d| (s.clone(), d)))
        .collect();
    let (as_declared, others): (BTreeMap<u16, u64>, BTreeMap<u16, u64>) =
        codes.iter().partition(|(c, _)| {
            **c < 400
                && covering(&declared, **c).is_some_and(|i| declared[i].1 != Declared::Default)
        });
    if !as_declared.is_empty() {
        let also = if others.is_empty() {
            String::new()
        } else {
            format!("; also {}", listed(&others))
        };
        return Some(format!(
            "answered {} as its document declares{also}{tail}",
            listed(&as_declared)
        ));
    }
    if op.answered_404 && !op.path_parameters_never_from_answers.is_empty() {
        return Some(format!(
            "a path parameter probe could only invent ({}): answered {seen}{tail}",
            op.path_parameters_never_from_answers.join(", "),
        ));
    }
    if all(&|c| c == 401 || c == 403) {
        return Some(format!("refused every time ({seen}) — credentials?{tail}"));
    }
    if all(&|c| (500..600).contains(&c)) {
        return Some(format!("the server failed every time ({seen}){tail}"));
    }
    if all(&|c| (400..500).contains(&c)) {
        return Some(format!(
            "every answer 4xx ({seen}) — a value the document does not describe?{tail}"
        ));
    }
    if all(&|c| c >= 400) {
        return Some(format!("every answer 4xx or 5xx ({seen}){tail}"));
    }
    if codes.is_empty() {
        return Some(format!("answered {answered} times, none 2xx{tail}"));
    }
    Some(format!("answered {seen}{tail}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(statuses: &[(&str, u64)], transport: &[(&str, u64)]) -> OperationReport {
        OperationReport {
            operation: "getPet".into(),
            method: "GET".into(),
            path: "/pets/{petId}".into(),
            requests: statuses.iter().map(|(_, n)| n).sum(),
            other_method_answers: 0,
            statuses: statuses.iter().map(|(k, n)| ((*k).into(), *n)).collect(),
            transport: transport.iter().map(|(k, n)| ((*k).into(), *n)).collect(),
            path_parameters_never_from_answers: Vec::new(),
            answered_404: false,
            time_spent_ms: 0,
            slowest_ms: 0,
            slow_lane_requests: 0,
            not_sent: 0,
            throttled: 0,
            findings: 0,
            pointer: String::new(),
            declared_statuses: Vec::new(),
            status_codes: BTreeMap::new(),
        }
    }

    #[test]
    fn the_reason_an_operation_never_answered_2xx() {
        assert_eq!(never_2xx_reason(&op(&[("2xx", 1)], &[]), None), None);
        assert_eq!(
            never_2xx_reason(&op(&[("transport", 3)], &[("timeout", 3)]), None).unwrap(),
            "only timeouts (3)"
        );
        assert_eq!(
            never_2xx_reason(
                &op(&[("transport", 3)], &[("reset", 2), ("timeout", 1)]),
                None
            )
            .unwrap(),
            "no HTTP answer: 2 reset, 1 timeout"
        );
        let codes = BTreeMap::from([(401, 5)]);
        assert_eq!(
            never_2xx_reason(&op(&[("4xx", 5)], &[]), Some(&codes)).unwrap(),
            "refused every time (401 ×5) — credentials?"
        );
        let mut invented = op(&[("4xx", 7), ("transport", 1)], &[("timeout", 1)]);
        invented.answered_404 = true;
        invented.path_parameters_never_from_answers = vec!["petId".into()];
        let codes = BTreeMap::from([(404, 6), (400, 1)]);
        assert_eq!(
            never_2xx_reason(&invented, Some(&codes)).unwrap(),
            "a path parameter probe could only invent (petId): answered 404 ×6, 400 ×1; 1 without an answer"
        );
        let codes = BTreeMap::from([(400, 2), (422, 3)]);
        assert_eq!(
            never_2xx_reason(&op(&[("4xx", 5)], &[]), Some(&codes)).unwrap(),
            "every answer 4xx (422 ×3, 400 ×2) — a value the document does not describe?"
        );
        let codes = BTreeMap::from([(500, 2), (405, 1)]);
        assert_eq!(
            never_2xx_reason(&op(&[("5xx", 2), ("4xx", 1)], &[]), Some(&codes)).unwrap(),
            "every answer 4xx or 5xx (500 ×2, 405 ×1)"
        );
        let codes = BTreeMap::from([(500, 2)]);
        assert_eq!(
            never_2xx_reason(&op(&[("5xx", 2)], &[]), Some(&codes)).unwrap(),
            "the server failed every time (500 ×2)"
        );
    }

    /// An operation that answered its declared redirect hundreds of times is not said to
    /// lack a parameter, though it also answered 404 to invented ones.
    #[test]
    fn a_declared_redirect_is_the_reason() {
        let mut redirect = op(&[("3xx", 203)], &[]);
        redirect.declared_statuses = vec!["302".into(), "404".into()];
        redirect.status_codes = BTreeMap::from([("302".into(), 203)]);
        assert_eq!(
            never_2xx_reason(&redirect, None).unwrap(),
            "answered 302 ×203 as its document declares"
        );
        redirect.answered_404 = true;
        redirect.path_parameters_never_from_answers = vec!["n".into()];
        redirect.status_codes.insert("404".into(), 3);
        assert_eq!(
            never_2xx_reason(&redirect, None).unwrap(),
            "answered 302 ×203 as its document declares; also 404 ×3"
        );
        // Without the declaration, the invented parameter is the likelier reason.
        redirect.declared_statuses.clear();
        assert_eq!(
            never_2xx_reason(&redirect, None).unwrap(),
            "a path parameter probe could only invent (n): answered 302 ×203, 404 ×3"
        );
    }

    #[test]
    fn coverage_counts_each_answer_under_one_entry() {
        let mut o = op(&[("2xx", 3), ("4xx", 4)], &[]);
        o.declared_statuses = vec!["200".into(), "404".into(), "4XX".into(), "default".into()];
        let codes = BTreeMap::from([(200, 3), (400, 2), (422, 2)]);
        let c = status_coverage(&o, &codes);
        let shown: Vec<(&str, u64)> = c
            .declared
            .iter()
            .map(|d| (d.status.as_str(), d.answers))
            .collect();
        assert_eq!(shown, [("200", 3), ("404", 0), ("4XX", 4), ("default", 0)]);
        assert!(c.undeclared.is_empty());
        o.declared_statuses = vec!["200".into()];
        let c = status_coverage(&o, &codes);
        assert_eq!(c.undeclared, [(400, 2), (422, 2)]);
        assert_eq!(c.not_seen().count(), 0);
    }
}
