//! `login_not_rate_limited` (F213): the login let one user be guessed at without end.
//! Judged on a `login_burst` series (docs/security.md), which runs only when this oracle
//! is switched on (`checks.login_not_rate_limited`, off by default: it sends a burst): a
//! configured identity's login sent `series.loginBurst` times in a row with a wrong
//! password, without the run's credentials. A finding when every one of them was refused
//! as a wrong login (a 4xx other than 429 and 423), none was slowed down (the median time
//! of the last quarter of the burst no more than twice the first quarter's and a quarter
//! of a second longer) and at least [`FEWEST`] were answered: nothing stops an attacker
//! from trying passwords (OWASP API4, unrestricted resource consumption; API2, broken
//! authentication).
//!
//! Not reported: a 429 (too many requests), a 423 (the account locked) or a 503 in any
//! step, a login accepted with the wrong password (something else is going on), a burst
//! that got no answer somewhere (the series stops there), one the API answered ever
//! slower (a delay per failure is a rate limit too).

use super::series::{observe, SeriesObservation, SeriesView};
use super::*;
use crate::model::StepRole;

pub const INFO: OracleInfo = OracleInfo {
    name: "login_not_rate_limited",
    code: Some("F213"),
    version: 2,
    severity: Severity::Medium,
    title: "the login answers a burst of failed logins of one user without slowing or stopping it",
    setting: declared(
        "checks.login_not_rate_limited",
        Kind::Bool,
        "false",
        "F213: with a JSON login configured, its known user's login with a wrong password sent series.loginBurst times in a row (a burst: off unless switched on); every one refused as a wrong login, never a 429 or 423, and the last ones no slower",
    ),
};

/// The fewest failed logins a finding rests on: fewer say nothing of a limit.
pub const FEWEST: usize = 10;

pub struct LoginNotRateLimited;

impl Judge for LoginNotRateLimited {
    fn info(&self) -> &'static OracleInfo {
        &INFO
    }

    fn series_needs(&self) -> &'static [StepRole] {
        &[StepRole::FailedLogin]
    }

    fn series(&self, view: &SeriesView<'_>) -> Vec<SeriesObservation> {
        check(view).into_iter().collect()
    }
}

fn check(view: &SeriesView<'_>) -> Option<SeriesObservation> {
    let steps: Vec<_> = view
        .steps
        .iter()
        .filter(|s| s.role == StepRole::FailedLogin)
        .collect();
    if steps.len() < FEWEST {
        return None;
    }
    let mut statuses = Vec::with_capacity(steps.len());
    for step in &steps {
        let status = step.status()?;
        let headers = match &step.interaction.outcome {
            crate::model::Outcome::Response(r) => &r.headers,
            _ => return None,
        };
        if !login_refused(status, headers, step.body) {
            return None;
        }
        statuses.push(status);
    }
    let times: Vec<f64> = steps
        .iter()
        .map(|s| s.interaction.timing.elapsed_us as f64 / 1000.0)
        .collect();
    let (first, last) = quarters(&times);
    if slowed(first, last) {
        return None;
    }
    let first_step = steps[0];
    let seconds = {
        let start = first_step.interaction.timing.started_ms;
        let end = steps
            .last()
            .map(|s| s.interaction.timing.started_ms + s.interaction.timing.elapsed_us / 1000)
            .unwrap_or(start);
        end.saturating_sub(start) as f64 / 1000.0
    };
    let mut kinds = statuses.clone();
    kinds.sort_unstable();
    kinds.dedup();
    let kinds: Vec<String> = kinds.iter().map(u16::to_string).collect();
    let (at, _) = view.step(StepRole::FailedLogin)?;
    Some(observe(
        &INFO,
        at,
        &first_step.case.operation,
        "",
        format!(
            "{} answered {} failed logins of one user in {seconds:.1} s with {} each time, never 429 or 423, and no slower at the end (median {first:.0} ms over the first quarter, {last:.0} ms over the last)",
            first_step.name(),
            steps.len(),
            kinds.join(" or "),
        ),
    ))
}

/// Whether an answer to a login with a wrong password refused it, by its status or, for a
/// 2xx, by its content: some APIs answer a wrong password `200 {"status": "fail"}`. A 2xx
/// refuses when it sets no cookie and its JSON body holds no token-named field with a
/// value (`access_token`, `auth_token`, `jwt`, ...). 423 and 429 are the API limiting the
/// burst, not a refusal of the password.
pub fn login_refused(status: u16, headers: &[(String, String)], body: Option<&[u8]>) -> bool {
    if (400..500).contains(&status) {
        return !matches!(status, 423 | 429);
    }
    if !(200..300).contains(&status) || headers.iter().any(|(k, _)| k == "set-cookie") {
        return false;
    }
    let Some(Ok(json)) = body.map(serde_json::from_slice::<Value>) else {
        return false;
    };
    json.is_object() && !super::secret_in_reply::holds_token(&json)
}

/// The median time (ms) of the first quarter of `times` and of the last.
fn quarters(times: &[f64]) -> (f64, f64) {
    let q = (times.len() / 4).max(1);
    (median(&times[..q]), median(&times[times.len() - q..]))
}

fn median(times: &[f64]) -> f64 {
    let mut sorted = times.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied().unwrap_or(0.0)
}

/// Whether the last answers came slower than the first by enough to be a delay the API
/// adds per failure: more than twice as slow and a quarter of a second more.
fn slowed(first_ms: f64, last_ms: f64) -> bool {
    last_ms > 2.0 * first_ms && last_ms - first_ms > 250.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_that_ends_slower_was_limited() {
        let even = [3.0; 20];
        let (a, b) = quarters(&even);
        assert!(!slowed(a, b));
        // A delay that grows with each failure: 100 ms more each.
        let growing: Vec<f64> = (0..20).map(|i| 3.0 + 100.0 * f64::from(i)).collect();
        let (a, b) = quarters(&growing);
        assert!(slowed(a, b), "{a} {b}");
        // A loaded server's noise is no limit: a little slower, or one slow answer.
        let mut noisy = vec![5.0; 20];
        noisy[18] = 900.0;
        noisy[19] = 40.0;
        let (a, b) = quarters(&noisy);
        assert!(!slowed(a, b), "{a} {b}");
    }
}
