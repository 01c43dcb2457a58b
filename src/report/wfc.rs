//! A run as a Web Fuzzing Commons report (`probe export --format wfc`), the JSON that
//! EvoMaster writes and WFC's web report reads, after the report schema of WFC release
//! 0.6.0 (kept in `tests/data/wfc-report-0.6.0.yaml`; docs/wfc.md).
//!
//! What maps how: a distinct finding is a found fault (its operation as `VERB:/path`, its
//! test case the finding's reproducer, its category the finding's WFC code with the
//! finding's message as context); the reproducers are the test cases (`probe replay
//! <finding>` sends one again; probe writes no test files); each operation sent covered
//! the statuses it was answered with, under the run as a whole. A finding whose oracle has
//! no code the pinned schema accepts (probe's own, and codes WFC added after the schema's
//! ranges were fixed: F207 to F212) is a warning instead, so that nothing is dropped.
//!
//! Depends on: `report` (RunReport).

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::{rfc3339, FindingReport, RunReport};

/// The WFC release whose report schema this follows.
pub const SCHEMA_VERSION: &str = "0.6.0";

/// The fault code of a finding as WFC's report schema 0.6.0 accepts it (100–104,
/// 200–206, 900–999), from probe's code (`F100`, `901`).
pub fn fault_code(code: &str) -> Option<u16> {
    let n: u16 = code.trim_start_matches('F').parse().ok()?;
    matches!(n, 100..=104 | 200..=206 | 900..=999).then_some(n)
}

/// `GET:/pets/{id}`, WFC's id of an operation.
fn endpoint_id(method: &str, path: &str) -> String {
    format!("{}:{path}", method.to_ascii_uppercase())
}

/// The endpoint of a finding: its operation's method and path when the report has them.
fn finding_endpoint(report: &RunReport, f: &FindingReport) -> String {
    report
        .operations
        .iter()
        .find(|o| o.operation == f.operation)
        .map_or_else(|| f.operation.clone(), |o| endpoint_id(&o.method, &o.path))
}

/// The WFC report of `report`, written at `created_ms` (Unix milliseconds).
pub fn render(report: &RunReport, created_ms: u64) -> Value {
    let mut faults = Vec::new();
    let mut warnings = Vec::new();
    let mut distinct: BTreeSet<(u16, String)> = BTreeSet::new();
    for f in &report.findings {
        match f.code.as_deref().and_then(fault_code) {
            Some(code) => {
                distinct.insert((code, f.message.clone()));
                let endpoint = finding_endpoint(report, f);
                faults.push(json!({
                    // The schema's `required` names `endpointId` where its properties
                    // name `operationId`: both are written.
                    "operationId": endpoint,
                    "endpointId": endpoint,
                    "testCaseId": f.id,
                    "faultCategories": [{"code": code, "context": f.message}],
                }));
            }
            None => warnings.push(json!({
                "message": format!(
                    "{} ({}): {} [{}; {}]",
                    f.oracle,
                    f.code.as_deref().unwrap_or("no WFC code"),
                    f.message,
                    f.id,
                    super::summary::seen(f.occurrences)
                ),
                "category": "finding without a code in the WFC report schema",
                "displayPriority": 1 + (3 - super::severity_rank(&f.severity)) as u64,
            })),
        }
    }
    let test_cases: Vec<Value> = report
        .findings
        .iter()
        .filter(|f| !f.replay.is_empty())
        .map(|f| json!({"id": f.id, "name": f.replay}))
        .collect();
    let mut endpoints: Vec<String> = report
        .operations
        .iter()
        .map(|o| endpoint_id(&o.method, &o.path))
        .collect();
    endpoints.sort();
    endpoints.dedup();
    let covered: Vec<Value> = report
        .operations
        .iter()
        .map(|o| {
            let statuses: Vec<u16> = o
                .status_codes
                .keys()
                .filter_map(|c| c.parse::<u16>().ok())
                .filter(|c| *c <= 599)
                .collect();
            json!({
                "endpointId": endpoint_id(&o.method, &o.path),
                "testCaseId": format!("run {}", report.run.id),
                "httpStatus": statuses,
            })
        })
        .collect();
    for s in &report.skipped {
        warnings.push(json!({
            "message": format!("{} skipped: {}", s.operation, s.reason),
            "category": "operation skipped",
            "displayPriority": 3,
        }));
    }
    json!({
        "schemaVersion": SCHEMA_VERSION,
        "toolName": report.tool.name,
        "toolVersion": report.tool.version,
        "creationTime": rfc3339(created_ms),
        "faults": {"totalNumber": distinct.len(), "foundFaults": faults},
        "problemDetails": {"rest": {
            "outputHttpCalls": test_cases.len(),
            "evaluatedHttpCalls": report.totals.requests,
            "endpointIds": endpoints,
            "coveredHttpStatus": covered,
        }},
        "totalTests": test_cases.len(),
        "testFilePaths": [],
        "testCases": test_cases,
        "executionTimeInSeconds": report.run.elapsed_ms / 1000,
        "warnings": warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_outside_the_schemas_ranges_are_not_faults() {
        assert_eq!(fault_code("F100"), Some(100));
        assert_eq!(fault_code("F206"), Some(206));
        assert_eq!(fault_code("901"), Some(901));
        assert_eq!(fault_code("F207"), None);
        assert_eq!(fault_code("F212"), None);
        assert_eq!(fault_code("x"), None);
    }
}
