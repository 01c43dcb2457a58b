//! `max_response_time`: answers slower than `checks.max_response_time` (off unless set); one
//! finding per operation, described by its slowest answer.

use super::*;

pub const INFO: OracleInfo = OracleInfo {
    name: "max_response_time",
    code: None,
    version: 1,
    severity: Severity::Low,
    title: "answers slower than `checks.max_response_time` (off unless set)",
    setting: declared(
        "checks.max_response_time",
        Kind::Duration,
        "0s",
        "a limit (such as 2s): an operation answering slower is reported once, with its slowest answer; 0s, the default, is off",
    ),
};

pub struct MaxResponseTime;

impl Judge for MaxResponseTime {
    fn info(&self) -> &'static OracleInfo {
        &INFO
    }

    fn reply(&self, ctx: &Context<'_>, with: &Oracles) -> Option<Observation> {
        check(ctx, with.options().max_response_time?)
    }

    fn enabled_by(&self, _settings: &Settings, options: &OracleOptions) -> bool {
        // A limit, not a switch: set, it switches the oracle on.
        options.max_response_time.is_some()
    }

    fn shrinks(&self) -> bool {
        // About the time the API took: a smaller request would not tell more.
        false
    }
}

/// An answer slower than the limit: once per operation, described by its slowest answer.
/// The time is the interaction's (`timing.elapsed_us`: until the whole reply was read).
fn check(ctx: &Context<'_>, limit: std::time::Duration) -> Option<Observation> {
    let elapsed_us = ctx.exchange.interaction.timing.elapsed_us;
    if u128::from(elapsed_us) <= limit.as_micros() {
        return None;
    }
    let name = ctx.exchange.operation.key.name();
    let mut o = per_operation(
        &INFO,
        &name,
        "",
        format!(
            "{name} answered {} in {} ms, slower than the limit of {} ms (the slowest of its answers over the limit)",
            ctx.response.status,
            elapsed_us / 1000,
            limit.as_millis()
        ),
    );
    o.rank = elapsed_us;
    Some(o)
}
