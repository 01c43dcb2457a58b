//! The report of a split campaign (docs/partitions.md): its parts' report.json joined into
//! one [`RunReport`], and their timelines into one [`Timeline`], for `probe report
//! campaign:… --html`.
//!
//! The parts test disjoint operations, so operations, findings and causes are their
//! parts' side by side (a cause seen in two parts stays two causes: the parts never judged
//! together), counts add up, and each curve is the sum of the parts' curves over the time
//! since each part's start (the parts ran side by side, on their own machines).
//!
//! Depends on: `report` (`RunReport`, `timeline`).

use std::collections::BTreeMap;

use super::timeline::{area_of_steps, Curve, Timeline};
use super::{OracleReport, RunReport};

/// `parts` (at least one) joined into the report of campaign `id`.
pub fn join(id: &str, mut parts: Vec<RunReport>) -> Option<RunReport> {
    if parts.is_empty() {
        return None;
    }
    let rest = parts.split_off(1);
    let mut joined = parts.remove(0);
    let count = rest.len() + 1;
    joined.run.name = Some(format!(
        "campaign {} ({count} part{})",
        id.get(..12).unwrap_or(id),
        if count == 1 { "" } else { "s" }
    ));
    for part in rest {
        add_run(&mut joined, &part);
        let offset = joined.findings.len();
        joined.findings.extend(part.findings);
        joined.causes.extend(part.causes.into_iter().map(|mut c| {
            for f in &mut c.findings {
                *f += offset;
            }
            c
        }));
        joined.operations.extend(part.operations);
        joined.phases.extend(part.phases);
        for file in part.unreadable_files {
            if !joined.unreadable_files.contains(&file) {
                joined.unreadable_files.push(file);
            }
        }
        joined.check_failures.extend(part.check_failures);
        for oracle in part.oracles {
            add_oracle(&mut joined.oracles, oracle);
        }
        for check in part.checks {
            match joined.checks.iter_mut().find(|c| c.name == check.name) {
                Some(c) => {
                    c.judged += check.judged;
                    c.failed += check.failed;
                    c.not_judged += check.not_judged;
                }
                None => joined.checks.push(check),
            }
        }
    }
    let t = &mut joined.totals;
    t.requests_per_second = if joined.run.elapsed_ms > 0 {
        t.requests as f64 / (joined.run.elapsed_ms as f64 / 1000.0)
    } else {
        0.0
    };
    Some(joined)
}

/// Adds one part's run and totals to the joined report's.
fn add_run(joined: &mut RunReport, part: &RunReport) {
    let run = &mut joined.run;
    run.elapsed_ms = run.elapsed_ms.max(part.run.elapsed_ms);
    // RFC 3339 in UTC sorts as time does.
    if part.run.started < run.started {
        run.started = part.run.started.clone();
    }
    if run.outcome == "completed" {
        run.outcome = part.run.outcome.clone();
    }
    let (t, p) = (&mut joined.totals, &part.totals);
    t.operations += p.operations;
    t.operations_tried += p.operations_tried;
    t.operations_answered_2xx += p.operations_answered_2xx;
    t.requests += p.requests;
    t.requests_answered += p.requests_answered;
    for (k, n) in &p.transport {
        *t.transport.entry(k.clone()).or_insert(0) += n;
    }
    for (k, n) in &p.requests_by_kind {
        *t.requests_by_kind.entry(k.clone()).or_insert(0) += n;
    }
    t.findings += p.findings;
    t.findings_by_kind += p.findings_by_kind;
    t.causes += p.causes;
    t.series += p.series;
    t.series_steps += p.series_steps;
}

fn add_oracle(oracles: &mut Vec<OracleReport>, oracle: OracleReport) {
    match oracles.iter_mut().find(|o| o.name == oracle.name) {
        Some(o) => {
            o.findings += oracle.findings;
            o.occurrences += oracle.occurrences;
            o.enabled |= oracle.enabled;
            o.series_judged = match (o.series_judged, oracle.series_judged) {
                (None, None) => None,
                (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
            };
            o.series_time_ms = match (o.series_time_ms, oracle.series_time_ms) {
                (None, None) => None,
                (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
            };
        }
        None => oracles.push(oracle),
    }
}

/// The parts' timelines as one: each curve the sum of the parts' over the time since each
/// part's start.
pub fn join_timelines(parts: Vec<Timeline>) -> Timeline {
    let end_ms = parts.iter().map(|t| t.end_ms).max().unwrap_or(0);
    let sum = |pick: &dyn Fn(&Timeline) -> &Curve| {
        sum_curves(&parts.iter().map(pick).collect::<Vec<_>>(), end_ms)
    };
    let mut joined = Timeline {
        end_ms,
        requests: sum(&|t| &t.requests),
        operations_2xx: sum(&|t| &t.operations_2xx),
        findings: sum(&|t| &t.findings),
        ..Timeline::default()
    };
    for part in parts {
        joined.interactions += part.interactions;
        for (op, ms) in part.first_2xx_ms {
            let at = joined.first_2xx_ms.entry(op).or_insert(ms);
            *at = (*at).min(ms);
        }
        for (op, codes) in part.status_codes {
            let into: &mut BTreeMap<u16, u64> = joined.status_codes.entry(op).or_default();
            for (code, n) in codes {
                *into.entry(code).or_insert(0) += n;
            }
        }
    }
    joined
}

/// The sum of step curves, up to `end_ms`.
fn sum_curves(curves: &[&Curve], end_ms: u64) -> Curve {
    let mut times: Vec<u64> = curves
        .iter()
        .flat_map(|c| c.points.iter().map(|p| p.0))
        .collect();
    times.sort_unstable();
    times.dedup();
    let value_at = |c: &Curve, t: u64| -> u64 {
        match c.points.partition_point(|p| p.0 <= t) {
            0 => 0,
            i => c.points[i - 1].1,
        }
    };
    let points: Vec<(u64, u64)> = times
        .into_iter()
        .map(|t| (t, curves.iter().map(|c| value_at(c, t)).sum()))
        .collect();
    Curve {
        area: area_of_steps(&points, end_ms),
        total: curves.iter().map(|c| c.total).sum(),
        points,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curves_add_up_step_by_step() {
        let a = Curve {
            points: vec![(0, 1), (10, 2)],
            total: 2,
            area: 0.0,
        };
        let b = Curve {
            points: vec![(5, 1)],
            total: 1,
            area: 0.0,
        };
        let s = sum_curves(&[&a, &b], 20);
        assert_eq!(s.points, vec![(0, 1), (5, 2), (10, 3)]);
        assert_eq!(s.total, 3);
        // 1 × 5 ms + 2 × 5 ms + 3 × 10 ms
        assert!((s.area - 0.045).abs() < 1e-9);
    }
}
