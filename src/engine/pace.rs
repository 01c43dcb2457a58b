//! Pace: how long each operation takes to answer, where its requests go, and when the API
//! has asked probe to wait.
//!
//! A run's batches wait for their answers, because answers are learned at batch
//! boundaries (docs/determinism.md). An operation that answers in seconds, or never, would hold
//! every batch it is in, and every fast operation with it. So each request is watched:
//! one still in flight after `schedule.slowAfter`, or an operation whose recent answers
//! took that long, goes to the *slow lane*. A request on the slow lane holds neither its
//! batch nor a worker, so `--workers` quick requests stay in flight beside it; at most
//! `schedule.slowLane` of them are in flight at once, so the slow operations put a bounded
//! load on the API. Cases of a slow operation wait in a short backlog for the lane, the
//! operations taking turns; a slow operation is planned at most once a batch, so it still
//! gets its turns without its cases piling up.
//!
//! Each request also gets a deadline of its own: `send.timeout`, or less for an operation
//! whose recent answers were all quick (ten times the slowest of them, never under two
//! seconds), so that an operation that usually answers in milliseconds and sometimes
//! hangs costs a worker seconds, not the whole timeout.
//!
//! And the run is polite: `send.rateLimit` spaces all requests, `send.rateLimitPerOperation`
//! those of each operation; an answer 429, or 503 with `Retry-After`, pauses its operation
//! for the time asked (at most `send.retryAfterMax`; a 429 without the header, one second).
//!
//! Against an API that answers every request within `schedule.slowAfter` and never asks to
//! wait, none of this changes which cases are generated or in which batch: the same seed
//! gives the same test cases. Against a slow one, which cases a slow operation gets depends
//! on time, as it must.
//!
//! Depends on: `settings` only.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Recent answers kept per operation to judge its pace.
const RECENT: usize = 8;
/// Cases of one slow operation waiting for the slow lane; more are not sent.
const BACKLOG_PER_OPERATION: usize = 2;
/// An operation's own deadline is this many times its slowest recent answer...
const DEADLINE_FACTOR: u32 = 10;
/// ...and never shorter than this.
const DEADLINE_FLOOR: Duration = Duration::from_secs(2);
/// Answers needed before an operation's own deadline replaces `send.timeout`.
const DEADLINE_AFTER: usize = 4;
/// The pause after a 429 that does not say how long to wait.
const PAUSE_WITHOUT_RETRY_AFTER: Duration = Duration::from_secs(1);

/// The settings pace works from, resolved once by [`crate::settings::Settings::options`].
pub use crate::settings::PaceOptions;

/// One request in flight, as pace knows it.
#[derive(Debug, Clone, Copy)]
pub struct Ticket {
    pub op: usize,
    token: u64,
    pub started: Instant,
    /// How long this request may take.
    pub deadline: Duration,
    /// Sent on the slow lane (it holds no batch).
    pub slow: bool,
    /// It asks the API to be slow (an SQL wait): its time teaches pace nothing, and when
    /// it is slow it leaves its batch without taking a place on the slow lane.
    pub slow_on_purpose: bool,
}

/// What became of a request, for pace.
#[derive(Debug, Clone, Copy)]
pub struct Finished {
    pub elapsed: Duration,
    pub timed_out: bool,
    /// The API asked to wait this long (a 429, or a 503 with `Retry-After`).
    pub throttle: Option<Duration>,
}

/// What to do with a case a worker has taken from its batch.
#[derive(Debug)]
pub enum Admission {
    /// Send it now.
    Send(Ticket),
    /// Its operation is slow or paused: wait in the backlog (or, when that is full, go
    /// unsent).
    Defer,
}

pub use crate::events::stats::OperationPace;

#[derive(Default)]
struct OperationState {
    /// Latencies of recent answers (a timeout counts as its deadline).
    recent: VecDeque<Duration>,
    /// Answers to go before the last timeout leaves the recent window (0: none in it).
    recent_timeouts: usize,
    in_flight: Vec<(u64, Instant)>,
    paused_until: Option<Instant>,
    next_slot: Option<Instant>,
    backlog_len: usize,
    report: OperationPace,
    /// Answers in a row that asked to wait without saying for long (see [`backoff`]).
    short_throttles: u32,
}

struct State<T> {
    operations: BTreeMap<usize, OperationState>,
    backlog: BTreeMap<usize, VecDeque<T>>,
    /// Slow-lane requests in flight, by token.
    slow_in_flight: Vec<u64>,
    next_token: u64,
    next_slot: Option<Instant>,
    closed: bool,
}

/// The pace of one run, shared by its workers. `T` is what waits in the backlog.
pub struct Pace<T> {
    options: PaceOptions,
    state: Mutex<State<T>>,
}

impl<T> Pace<T> {
    pub fn new(options: PaceOptions) -> Pace<T> {
        Pace {
            options,
            state: Mutex::new(State {
                operations: BTreeMap::new(),
                backlog: BTreeMap::new(),
                slow_in_flight: Vec::new(),
                next_token: 0,
                next_slot: None,
                closed: false,
            }),
        }
    }

    pub fn options(&self) -> &PaceOptions {
        &self.options
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State<T>> {
        // A worker that panicked holding the lock left counts, not broken invariants.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether `op` is slow now: a request of it has been in flight for `slow_after`, or
    /// the median of its recent answers took that long.
    fn slow(&self, state: &OperationState, now: Instant) -> bool {
        let after = self.options.slow_after;
        if state
            .in_flight
            .iter()
            .any(|(_, s)| now.saturating_duration_since(*s) >= after)
        {
            return true;
        }
        if state.recent.is_empty() {
            return false;
        }
        let mut sorted: Vec<Duration> = state.recent.iter().copied().collect();
        sorted.sort_unstable();
        sorted[sorted.len() / 2] >= after
    }

    /// The deadline of `op`'s next request.
    fn deadline(&self, state: &OperationState) -> Duration {
        let timeout = self.options.timeout;
        if !self.options.adaptive_timeout
            || state.recent.len() < DEADLINE_AFTER
            || state.recent_timeouts > 0
        {
            return timeout;
        }
        let slowest = state.recent.iter().max().copied().unwrap_or(timeout);
        (slowest * DEADLINE_FACTOR).clamp(DEADLINE_FLOOR.min(timeout), timeout)
    }

    /// Whether the slow lane may start another request now.
    fn lane_open(&self, state: &State<T>) -> bool {
        !state.closed && state.slow_in_flight.len() < self.options.slow_lane
    }

    fn issue(&self, state: &mut State<T>, op: usize, now: Instant, slow: bool) -> Ticket {
        let token = state.next_token;
        state.next_token += 1;
        let entry = state.operations.entry(op).or_default();
        entry.in_flight.push((token, now));
        let deadline = self.deadline(entry);
        if slow {
            entry.report.slow_requests += 1;
            state.slow_in_flight.push(token);
        }
        Ticket {
            op,
            token,
            started: now,
            deadline,
            slow,
            slow_on_purpose: false,
        }
    }

    /// How many cases of `op` the next batch may hold: none while it is paused; for a slow
    /// operation one, and only while its backlog has room; otherwise no bound.
    pub fn turns(&self, op: usize) -> usize {
        let now = Instant::now();
        let state = self.lock();
        let Some(o) = state.operations.get(&op) else {
            return usize::MAX;
        };
        if o.paused_until.is_some_and(|p| p > now) {
            0
        } else if !self.slow(o, now) {
            usize::MAX
        } else {
            usize::from(o.backlog_len < BACKLOG_PER_OPERATION)
        }
    }

    /// Decides about a case of `op` a worker has taken from its batch.
    pub fn admit(&self, op: usize) -> Admission {
        let now = Instant::now();
        let mut state = self.lock();
        let o = state.operations.entry(op).or_default();
        if o.paused_until.is_some_and(|p| p > now) {
            return Admission::Defer;
        }
        if self.slow(o, now) {
            if self.lane_open(&state) {
                return Admission::Send(self.issue(&mut state, op, now, true));
            }
            return Admission::Defer;
        }
        Admission::Send(self.issue(&mut state, op, now, false))
    }

    /// Puts a deferred case in its operation's backlog; gives it back when that is full
    /// (it goes unsent, and is counted so).
    pub fn defer(&self, op: usize, item: T) -> Result<(), T> {
        let mut state = self.lock();
        let closed = state.closed;
        let o = state.operations.entry(op).or_default();
        if o.backlog_len >= BACKLOG_PER_OPERATION || closed {
            o.report.not_sent += 1;
            return Err(item);
        }
        o.backlog_len += 1;
        state.backlog.entry(op).or_default().push_back(item);
        Ok(())
    }

    /// The next backlog case the slow lane may send now, with its ticket: from the
    /// operation that has had the fewest slow-lane requests, so that they take turns.
    pub fn next_from_backlog(&self) -> Option<(T, Ticket)> {
        let now = Instant::now();
        let mut state = self.lock();
        if state.backlog.values().all(VecDeque::is_empty) || !self.lane_open(&state) {
            return None;
        }
        let op = state
            .backlog
            .iter()
            .filter(|(_, q)| !q.is_empty())
            .map(|(op, _)| *op)
            .filter(|op| {
                state
                    .operations
                    .get(op)
                    .is_none_or(|o| o.paused_until.is_none_or(|p| p <= now))
            })
            .min_by_key(|op| {
                state
                    .operations
                    .get(op)
                    .map_or(0, |o| o.report.slow_requests)
            })?;
        let item = state.backlog.get_mut(&op)?.pop_front()?;
        if let Some(o) = state.operations.get_mut(&op) {
            o.backlog_len = o.backlog_len.saturating_sub(1);
        }
        let ticket = self.issue(&mut state, op, now, true);
        Some((item, ticket))
    }

    /// A request in flight for `slow_after` moves to the slow lane: from now on it holds
    /// no batch and no worker, and takes a place of the lane.
    pub fn detach(&self, ticket: &mut Ticket) {
        if ticket.slow {
            return;
        }
        ticket.slow = true;
        if ticket.slow_on_purpose {
            return;
        }
        let mut state = self.lock();
        state.slow_in_flight.push(ticket.token);
        if let Some(o) = state.operations.get_mut(&ticket.op) {
            o.report.slow_requests += 1;
        }
    }

    /// The request of `ticket` asks the API to be slow (an SQL wait): while in flight it
    /// does not make its operation look slow, and its time teaches pace nothing.
    pub fn slow_on_purpose(&self, ticket: &mut Ticket) {
        ticket.slow_on_purpose = true;
        let mut state = self.lock();
        if let Some(o) = state.operations.get_mut(&ticket.op) {
            o.in_flight.retain(|(t, _)| *t != ticket.token);
        }
    }

    /// How long a worker must wait before sending a request of `op` under the rate
    /// limits; reserves that slot.
    pub fn slot(&self, op: usize) -> Option<Instant> {
        if self.options.rate.is_none() && self.options.rate_per_operation.is_none() {
            return None;
        }
        let now = Instant::now();
        let mut state = self.lock();
        let mut at = now;
        if let Some(next) = state.next_slot {
            at = at.max(next);
        }
        let o = state.operations.entry(op).or_default();
        if let Some(next) = o.next_slot {
            at = at.max(next);
        }
        if let Some(rate) = self.options.rate_per_operation {
            o.next_slot = Some(at + Duration::from_secs_f64(1.0 / rate));
        }
        if let Some(rate) = self.options.rate {
            state.next_slot = Some(at + Duration::from_secs_f64(1.0 / rate));
        }
        (at > now).then_some(at)
    }

    /// Records what became of a request.
    pub fn finish(&self, ticket: &Ticket, finished: Finished) {
        let now = Instant::now();
        let mut state = self.lock();
        if ticket.slow {
            state.slow_in_flight.retain(|t| *t != ticket.token);
        }
        let max_pause = self.options.retry_after_max;
        let o = state.operations.entry(ticket.op).or_default();
        o.in_flight.retain(|(t, _)| *t != ticket.token);
        if !ticket.slow_on_purpose {
            if o.recent.len() == RECENT {
                o.recent.pop_front();
            }
            o.recent.push_back(finished.elapsed);
            if finished.timed_out {
                o.recent_timeouts = RECENT;
            } else {
                o.recent_timeouts = o.recent_timeouts.saturating_sub(1);
            }
        }
        if finished.throttle.is_none() {
            o.short_throttles = 0;
        }
        if let Some(wait) = finished.throttle {
            o.report.throttled += 1;
            let wait = if wait <= PAUSE_WITHOUT_RETRY_AFTER {
                o.short_throttles = o.short_throttles.saturating_add(1);
                wait.max(backoff(o.short_throttles))
            } else {
                o.short_throttles = 0;
                wait
            };
            let until = now + wait.min(max_pause);
            o.paused_until = Some(o.paused_until.map_or(until, |p| p.max(until)));
        }
    }

    /// Ends the slow lane: nothing more leaves the backlog; what waits there is given
    /// back, unsent (and counted so).
    pub fn close(&self) -> Vec<T> {
        let mut state = self.lock();
        state.closed = true;
        let backlog = std::mem::take(&mut state.backlog);
        let mut unsent = Vec::new();
        for (op, items) in backlog {
            if let Some(o) = state.operations.get_mut(&op) {
                o.report.not_sent += items.len() as u64;
                o.backlog_len = 0;
            }
            unsent.extend(items);
        }
        unsent
    }

    /// Whether the run has closed the slow lane.
    pub fn closed(&self) -> bool {
        self.lock().closed
    }

    /// What pace saw, by operation.
    pub fn report(&self) -> BTreeMap<usize, OperationPace> {
        self.lock()
            .operations
            .iter()
            .map(|(op, o)| (*op, o.report.clone()))
            .collect()
    }
}

/// The pause after the `n`-th answer in a row (from 1) that asked to wait and said no
/// longer than [`PAUSE_WITHOUT_RETRY_AFTER`] (a 429 without `Retry-After`, or with
/// `Retry-After: 0`): 1 s, then twice as long each time, up to `send.retryAfterMax`
/// (applied by the caller). An API that keeps answering "wait, now" is otherwise sent to
/// as fast as it answers: 41,028 requests of 429 in 5 s were seen.
fn backoff(n: u32) -> Duration {
    PAUSE_WITHOUT_RETRY_AFTER.saturating_mul(1u32 << n.saturating_sub(1).min(16))
}

/// How long an answer asks probe to wait: a 429 (with or without `Retry-After`), or a
/// 503 with `Retry-After` (seconds, or an HTTP date). Anything else asks nothing.
pub fn throttle(
    status: u16,
    retry_after: Option<&str>,
    now: std::time::SystemTime,
) -> Option<Duration> {
    let asked = retry_after.and_then(|v| {
        let v = v.trim();
        if let Ok(seconds) = v.parse::<u64>() {
            return Some(Duration::from_secs(seconds));
        }
        httpdate_after(v, now)
    });
    match status {
        429 => Some(asked.unwrap_or(PAUSE_WITHOUT_RETRY_AFTER)),
        503 => asked,
        _ => None,
    }
}

/// The time from `now` to an HTTP date (RFC 9110 §5.6.7), zero if it has passed.
fn httpdate_after(v: &str, now: std::time::SystemTime) -> Option<Duration> {
    let at = httpdate::parse_http_date(v).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> PaceOptions {
        PaceOptions {
            slow_after: Duration::from_millis(50),
            slow_lane: 1,
            timeout: Duration::from_secs(10),
            adaptive_timeout: true,
            rate: None,
            rate_per_operation: None,
            retry_after_max: Duration::from_secs(30),
        }
    }

    fn answer(pace: &Pace<u32>, op: usize, ms: u64) {
        let Admission::Send(ticket) = pace.admit(op) else {
            panic!("admitted")
        };
        pace.finish(
            &ticket,
            Finished {
                elapsed: Duration::from_millis(ms),
                timed_out: false,
                throttle: None,
            },
        );
    }

    #[test]
    fn a_quick_operation_is_always_sent_and_its_deadline_shrinks() {
        let pace: Pace<u32> = Pace::new(options());
        for _ in 0..DEADLINE_AFTER {
            answer(&pace, 0, 3);
        }
        assert!(5 < pace.turns(0));
        let Admission::Send(t) = pace.admit(0) else {
            panic!()
        };
        assert!(!t.slow);
        assert_eq!(t.deadline, DEADLINE_FLOOR);
    }

    #[test]
    fn a_request_slow_on_purpose_leaves_its_operation_quick() {
        let pace: Pace<u32> = Pace::new(options());
        for _ in 0..DEADLINE_AFTER {
            answer(&pace, 4, 3);
        }
        let Admission::Send(mut waiting) = pace.admit(4) else {
            panic!("admitted")
        };
        pace.slow_on_purpose(&mut waiting);
        std::thread::sleep(Duration::from_millis(60));
        // In flight past `slow_after`, yet the operation's next request is no slow one.
        let Admission::Send(next) = pace.admit(4) else {
            panic!("admitted")
        };
        assert!(!next.slow);
        pace.detach(&mut waiting);
        pace.finish(
            &waiting,
            Finished {
                elapsed: Duration::from_secs(2),
                timed_out: true,
                throttle: None,
            },
        );
        // Neither its time nor its timeout counts: the deadline stays the quick one.
        let Admission::Send(after) = pace.admit(4) else {
            panic!("admitted")
        };
        assert!(!after.slow);
        assert_eq!(after.deadline, DEADLINE_FLOOR);
        assert_eq!(pace.report()[&4].slow_requests, 0);
    }

    #[test]
    fn a_slow_operation_goes_to_the_lane_and_waits_its_turn() {
        let pace: Pace<u32> = Pace::new(options());
        answer(&pace, 7, 500);
        // Slow: planned once a batch while its backlog has room.
        assert_eq!(pace.turns(7), 1);
        // The lane takes one request at a time here: the first case goes on it, the next
        // waits.
        let Admission::Send(on_lane) = pace.admit(7) else {
            panic!("the lane is free")
        };
        assert!(on_lane.slow);
        assert!(matches!(pace.admit(7), Admission::Defer));
        assert_eq!(pace.defer(7, 1), Ok(()));
        assert_eq!(pace.defer(7, 2), Ok(()));
        assert_eq!(pace.defer(7, 3), Err(3));
        assert_eq!(pace.turns(7), 0);
        assert!(pace.next_from_backlog().is_none());
        assert_eq!(pace.close(), vec![1, 2]);
        assert_eq!(pace.report()[&7].not_sent, 3);
    }

    #[test]
    fn the_lane_takes_its_places_and_the_operations_take_turns() {
        let pace: Pace<u32> = Pace::new(PaceOptions {
            slow_lane: 2,
            ..options()
        });
        answer(&pace, 1, 60);
        answer(&pace, 2, 60);
        let Admission::Send(first) = pace.admit(1) else {
            panic!("the lane is open")
        };
        assert!(first.slow);
        assert_eq!(pace.defer(1, 10), Ok(()));
        assert_eq!(pace.defer(2, 20), Ok(()));
        // Operation 2 has had no turn on the lane yet: it goes first.
        let (item, ticket) = pace.next_from_backlog().expect("a second place");
        assert_eq!(item, 20);
        assert!(ticket.slow);
        assert!(pace.next_from_backlog().is_none(), "two places, both taken");
        pace.finish(
            &first,
            Finished {
                elapsed: Duration::from_millis(60),
                timed_out: false,
                throttle: None,
            },
        );
        assert_eq!(pace.next_from_backlog().map(|(item, _)| item), Some(10));
    }

    #[test]
    fn a_request_in_flight_too_long_makes_its_operation_slow() {
        let pace: Pace<u32> = Pace::new(options());
        let Admission::Send(mut t) = pace.admit(2) else {
            panic!()
        };
        assert!(3 < pace.turns(2));
        std::thread::sleep(Duration::from_millis(60));
        assert!(pace.turns(2) <= 1);
        pace.detach(&mut t);
        assert!(t.slow);
        assert_eq!(pace.report()[&2].slow_requests, 1);
    }

    #[test]
    fn a_timeout_keeps_the_full_deadline() {
        let pace: Pace<u32> = Pace::new(options());
        for _ in 0..DEADLINE_AFTER {
            answer(&pace, 0, 3);
        }
        let Admission::Send(t) = pace.admit(0) else {
            panic!()
        };
        pace.finish(
            &t,
            Finished {
                elapsed: Duration::from_secs(2),
                timed_out: true,
                throttle: None,
            },
        );
        answer(&pace, 0, 3);
        // Not slow (median 3 ms), but a recent timeout: the whole send.timeout.
        let Admission::Send(t) = pace.admit(0) else {
            panic!()
        };
        assert_eq!(t.deadline, Duration::from_secs(10));
    }

    #[test]
    fn retry_after_pauses_the_operation_it_answered() {
        let pace: Pace<u32> = Pace::new(options());
        let Admission::Send(t) = pace.admit(3) else {
            panic!()
        };
        pace.finish(
            &t,
            Finished {
                elapsed: Duration::from_millis(1),
                timed_out: false,
                throttle: Some(Duration::from_secs(5)),
            },
        );
        assert_eq!(pace.turns(3), 0);
        assert!(matches!(pace.admit(3), Admission::Defer));
        assert!(0 < pace.turns(4), "other operations go on");
        assert_eq!(pace.report()[&3].throttled, 1);
    }

    #[test]
    fn answers_that_ask_to_wait_without_saying_how_long_back_off_exponentially() {
        assert_eq!(backoff(1), Duration::from_secs(1));
        assert_eq!(backoff(2), Duration::from_secs(2));
        assert_eq!(backoff(5), Duration::from_secs(16));
        assert!(backoff(u32::MAX) > Duration::from_secs(3600), "no overflow");
        let pace: Pace<u32> = Pace::new(options());
        let throttled = |wait: Duration| Finished {
            elapsed: Duration::from_millis(1),
            timed_out: false,
            throttle: Some(wait),
        };
        let paused_for = |pace: &Pace<u32>| {
            let until = pace.lock().operations[&3].paused_until.unwrap();
            until.saturating_duration_since(Instant::now())
        };
        for (n, expected) in [(1, 1), (2, 2), (3, 4), (4, 8)] {
            let t = pace.issue(&mut pace.lock(), 3, Instant::now(), false);
            pace.finish(&t, throttled(Duration::ZERO));
            let paused = paused_for(&pace);
            assert!(
                paused > Duration::from_millis(expected * 1000 - 200)
                    && paused <= Duration::from_secs(expected),
                "answer {n}: paused {paused:?}"
            );
        }
        // A Retry-After of more than a second is obeyed as it is, and ends the streak.
        let t = pace.issue(&mut pace.lock(), 3, Instant::now(), false);
        pace.finish(&t, throttled(Duration::from_secs(3)));
        assert_eq!(pace.lock().operations[&3].short_throttles, 0);
    }

    #[test]
    fn throttle_reads_seconds_and_dates() {
        let now = std::time::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(throttle(429, Some("3"), now), Some(Duration::from_secs(3)));
        assert_eq!(throttle(429, None, now), Some(PAUSE_WITHOUT_RETRY_AFTER));
        assert_eq!(throttle(503, None, now), None);
        assert_eq!(throttle(500, Some("3"), now), None);
        let later = httpdate::fmt_http_date(now + Duration::from_secs(20));
        assert_eq!(
            throttle(503, Some(&later), now),
            Some(Duration::from_secs(20))
        );
        assert_eq!(throttle(503, Some("soon"), now), None);
    }

    #[test]
    fn rate_limits_space_requests() {
        let pace: Pace<u32> = Pace::new(PaceOptions {
            rate: Some(10.0),
            ..options()
        });
        assert!(pace.slot(0).is_none(), "the first goes at once");
        let second = pace.slot(1).expect("the second waits");
        let third = pace.slot(0).expect("the third waits longer");
        assert!(third - second >= Duration::from_millis(99));
    }
}
