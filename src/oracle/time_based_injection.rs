//! `time_based_injection` (F200): a value asking an SQL database to wait (`SLEEP(2)`,
//! `pg_sleep(2)`, `WAITFOR DELAY '0:0:2'`) made the answer wait as long as it asked, so the
//! value reached the database as code. Judged on a `timing` series (docs/security.md): the
//! request that carried the wait sent again asking for none, for the wait, for none again and
//! for a longer wait. Only a wait that follows what was asked counts: both asked-for waits
//! slower than the slower of the two requests that asked for none by most of what they
//! asked, the longer one slower than the shorter, and the requests that asked for none
//! quick. A slow API, one that answers slowly whenever it sees the word `sleep`, or one
//! slow reply, is none of these.

use super::series::{observe, SeriesObservation, SeriesView, StepView};
use super::*;
use crate::model::StepRole;
use crate::mutate::awkward::delay_place;

pub const INFO: OracleInfo = OracleInfo {
    name: "time_based_injection",
    code: Some("F200"),
    version: 1,
    severity: Severity::High,
    title: "a value asking an SQL database to wait made the answer wait as long as it asked",
    setting: declared(
        "checks.time_based_injection",
        Kind::Bool,
        "true",
        "F200: a request carrying an SQL wait that took that long is sent again asking for no wait, the same wait and a longer one; answers that wait as asked",
    ),
};

pub struct TimeBasedInjection;

impl Judge for TimeBasedInjection {
    fn info(&self) -> &'static OracleInfo {
        &INFO
    }

    fn series_needs(&self) -> &'static [StepRole] {
        &[
            StepRole::WithoutDelay,
            StepRole::WithDelay,
            StepRole::WithLongerDelay,
        ]
    }

    fn series(&self, view: &SeriesView<'_>) -> Vec<SeriesObservation> {
        check(view).into_iter().collect()
    }
}

/// Seconds a step took to be answered.
fn seconds(step: &StepView<'_>) -> f64 {
    step.interaction.timing.elapsed_us as f64 / 1e6
}

fn check(view: &SeriesView<'_>) -> Option<SeriesObservation> {
    let answered = |s: &&StepView<'_>| s.status().is_some();
    let without: Vec<&StepView<'_>> = view
        .steps
        .iter()
        .filter(|s| s.role == StepRole::WithoutDelay)
        .filter(answered)
        .collect();
    let (at, with) = view.step(StepRole::WithDelay)?;
    let (_, longer) = view.step(StepRole::WithLongerDelay)?;
    if !answered(&with) || !answered(&longer) || without.len() < 2 {
        return None;
    }
    let (place, asked) = delay_place(with.case)?;
    let (_, asked_longer) = delay_place(longer.case)?;
    if without
        .iter()
        .any(|s| delay_place(s.case).is_none_or(|(_, d)| d != 0))
    {
        return None;
    }
    let slowest_without = without.iter().map(|s| seconds(s)).fold(0.0, f64::max);
    let (waited, waited_longer) = (seconds(with), seconds(longer));
    if !waits_as_asked(
        slowest_without,
        (f64::from(asked), waited),
        (f64::from(asked_longer), waited_longer),
    ) {
        return None;
    }
    Some(observe(
        &INFO,
        at,
        &with.case.operation,
        &place,
        format!(
            "`{place}` asking an SQL database to wait {asked} s made {} answer {:.1} s later, and {:.1} s later when it asked for {asked_longer} s; asking for no wait, it answered within {:.0} ms: the value reaches the database as code (time-based SQL injection)",
            with.name(),
            waited - slowest_without,
            waited_longer - slowest_without,
            slowest_without * 1000.0,
        ),
    ))
}

/// Whether answers waited as asked: `without` the slower of the answers to the requests
/// that asked for no wait (s); `first` and `longer` each (seconds asked, seconds taken).
/// The asked-for waits must each be slower than `without` by at least 80% of what they
/// asked, the longer slower than the first by half the difference asked, and `without`
/// under half the first wait (a slower baseline is too noisy to measure against).
fn waits_as_asked(without: f64, first: (f64, f64), longer: (f64, f64)) -> bool {
    let (asked, took) = first;
    let (asked_longer, took_longer) = longer;
    asked > 0.0
        && asked_longer > asked
        && without < asked / 2.0
        && took - without >= 0.8 * asked
        && took_longer - without >= 0.8 * asked_longer
        && took_longer - took >= 0.5 * (asked_longer - asked)
}

#[cfg(test)]
mod tests {
    use super::waits_as_asked;

    #[test]
    fn a_database_that_waits_as_asked_is_reported() {
        assert!(waits_as_asked(0.01, (2.0, 2.02), (3.0, 3.03)));
        // A wait per row examined (MySQL evaluates SLEEP for every row): still as asked.
        assert!(waits_as_asked(0.01, (2.0, 4.05), (3.0, 6.04)));
    }

    #[test]
    fn waits_that_do_not_follow_what_was_asked_are_not() {
        // Slow whenever it sees the word: the same wait for any amount asked.
        assert!(!waits_as_asked(0.01, (2.0, 2.5), (3.0, 2.6)));
        // ... and for the requests that asked for none.
        assert!(!waits_as_asked(2.5, (2.0, 2.5), (3.0, 2.6)));
        // One slow reply among quick ones.
        assert!(!waits_as_asked(0.01, (2.0, 2.4), (3.0, 0.02)));
        assert!(!waits_as_asked(0.01, (2.0, 0.02), (3.0, 3.1)));
        // Quicker than asked.
        assert!(!waits_as_asked(0.01, (2.0, 1.2), (3.0, 1.9)));
        // Nothing asked.
        assert!(!waits_as_asked(0.01, (0.0, 2.0), (3.0, 3.0)));
    }
}
