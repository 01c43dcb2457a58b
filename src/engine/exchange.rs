//! One request's life on a worker: send it (within its own deadline and the run's),
//! log in again and resend once after a 401 to a token, hand the exchange to the spine's
//! keeper, judge it, publish what was seen, and tell the scheduler what came back.
//!
//! The scheduler (`engine::run`) decides what is sent and when; this file does nothing
//! but the one exchange it is given, so a worker never decides anything about the run.
//!
//! Depends on: `send`, `step` (recording and judging the exchange), `oracle`, and the
//! engine's own `pace` and `series` (what a series step keeps of its answer).

use std::time::{Duration, Instant};

use super::pace::{self, Finished, Ticket};
use super::{series, Answered, EngineError, Note, Notes, Planned, Shared, Stop};
use crate::clock::now_ms;
use crate::model::{Outcome, Sent, TestCase, TransportErrorKind};
use crate::oracle::FindingCollector;
use crate::send::identity::Sending;
use crate::send::{wire, Credentials, IdentityError, Sender};
use crate::step::{self, Collect};

/// Sends `wire` within its own timeout `own` and the run's `deadline`, unless the run is
/// told to stop first: a request still in flight when the budget runs out or the run
/// stops is cancelled, and says so.
async fn send_within(
    sender: &Sender,
    wire: &wire::WireRequest,
    own: Option<Duration>,
    deadline: Option<Instant>,
    stop: &Stop,
) -> Sent {
    let cancelled = |message: &str| Sent::from(cancelled(message));
    let sending = async {
        match deadline {
            Some(d) => tokio::time::timeout_at(d.into(), sender.send(wire, own))
                .await
                .unwrap_or_else(|_| {
                    cancelled("cancelled: the run's budget ran out while the request was in flight")
                }),
            None => sender.send(wire, own).await,
        }
    };
    tokio::select! {
        biased;
        outcome = sending => outcome,
        reason = stop.stopped() => cancelled(reason.cancelled_message()),
    }
}

/// `login` (an identity's login, or the credentials that may need one) unless the run's
/// budget runs out or the run is told to stop first: a login that hangs ends with the run,
/// as a request in flight does. `Err` is the message the request it was for is recorded
/// with, cancelled.
async fn log_in_within<T>(
    login: impl std::future::Future<Output = T>,
    deadline: Option<Instant>,
    stop: &Stop,
) -> Result<T, &'static str> {
    const BUDGET: &str = "cancelled: the run's budget ran out while its identity logged in";
    if deadline.is_some_and(|d| Instant::now() >= d) {
        return Err(BUDGET);
    }
    if let Some(reason) = stop.reason() {
        return Err(reason.cancelled_message());
    }
    let mut login = std::pin::pin!(login);
    // Most requests need no login: their credentials are ready at once, and cost no timer.
    let at_once = std::future::poll_fn(|cx| {
        std::task::Poll::Ready(match std::future::Future::poll(login.as_mut(), cx) {
            std::task::Poll::Ready(done) => Some(done),
            std::task::Poll::Pending => None,
        })
    })
    .await;
    if let Some(done) = at_once {
        return Ok(done);
    }
    let budget = async {
        match deadline {
            Some(d) => tokio::time::sleep_until(d.into()).await,
            None => std::future::pending().await,
        }
    };
    // The budget first: requests waiting for one identity's login all end with it, none
    // starting a login of its own as the one before it is cut short.
    tokio::select! {
        biased;
        _ = budget => Err(BUDGET),
        reason = stop.stopped() => Err(reason.cancelled_message()),
        done = login => Ok(done),
    }
}

/// Sends one case, records it, judges it.
///
/// A request still in flight after `schedule.slowAfter` moves to the slow lane: its batch
/// is told to stop waiting for it. What pace learns of the answer (its time, a timeout, a
/// request to wait) is told to pace.
pub(super) async fn exchange(
    shared: &Shared,
    p: Planned,
    permit: Option<tokio::sync::OwnedSemaphorePermit>,
    deadline: Option<Instant>,
    mut ticket: Ticket,
    notes: &Notes,
) -> Result<(), EngineError> {
    let op = &shared.api.operations[p.op];
    let login = log_in(shared, &p.case, deadline).await?;
    let mut wire = wire::build(
        &p.case,
        op,
        &shared.api,
        &shared.base_url,
        login.credentials(),
    );
    if let LoggedIn::Ready(_) = login {
        wait_for_slot(shared, p.op, deadline).await;
    }
    if let Some(body) = &p.case.body {
        shared.identities.sending(&body.value);
    }
    let started_ms = now_ms();
    let t0 = Instant::now();
    let own_deadline = own_deadline(shared, &p.case, &mut ticket);
    let own = Some(own_deadline);
    let released = Released {
        permit,
        notes,
        batch: p.batch,
    };
    let mut sent = match &login {
        LoggedIn::Cut { why, .. } => {
            drop(released);
            cancelled(why).into()
        }
        LoggedIn::Ready(sending) => {
            let mut sent = send_first(shared, &wire, own, deadline, &mut ticket, released).await;
            let again = resend_after_401(shared, &p, sending, &mut sent, own, deadline).await?;
            if let Some(again) = again {
                wire = again;
            }
            sent
        }
    };
    let elapsed = t0.elapsed();
    tell_pace(shared, &ticket, &mut sent.outcome, elapsed, own_deadline);
    if let (Some(body), Some(200..=299)) = (&p.case.body, sent.outcome.status()) {
        shared.identities.accepted(&body.value);
    }
    // Let the task the permit woke send its request before this one records and judges:
    // answers come in bursts (a slow API's timers fire together), and each answer's
    // recording and judging would otherwise delay every send queued behind it
    // (docs/benchmarks.md, "yield after each answer", has the figures).
    tokio::task::yield_now().await;

    let timing = crate::model::Timing {
        started_ms,
        elapsed_us: elapsed.as_micros() as u64,
    };
    let recorded = step::exchange(
        step::Sending {
            run: shared.run,
            seq: p.seq,
            operation: op,
            case: &p.case,
            request: wire.into(),
            sent,
            timing,
            redactor: &shared.identities.redactor(),
            // A 2xx JSON body is read once, for the memory of answers and for judging.
            parse_json: true,
        },
        &shared.oracles,
        &shared.spine,
        &mut Counted(shared),
    )
    .await?;
    tell_the_scheduler(notes, p, recorded, elapsed, ticket.slow);
    Ok(())
}

/// Hands what came back to the scheduler, which learns from it in generation order.
fn tell_the_scheduler(
    notes: &Notes,
    p: Planned,
    recorded: step::Recorded,
    elapsed: Duration,
    late: bool,
) {
    let batch = p.batch;
    let answered = answered(p, recorded, elapsed);
    // The scheduler has ended only if the run failed; then nobody needs this answer.
    let _ = notes.send(Note::Answered {
        batch,
        late,
        answered: Box::new(answered),
    });
}

/// A request recorded as cancelled, with why.
fn cancelled(message: &str) -> Outcome {
    Outcome::TransportError {
        kind: TransportErrorKind::Cancelled,
        message: message.into(),
    }
}

/// The credentials a case goes with, after its identity's login.
enum LoggedIn {
    /// The login ended in time (or there was none).
    Ready(Sending),
    /// The login was cut short: the request is recorded as cancelled, built with the
    /// credentials as they go (a token stands in where the token goes), and not sent.
    Cut {
        nominal: Credentials,
        why: &'static str,
    },
}

impl LoggedIn {
    /// The credentials the request is built with.
    fn credentials(&self) -> &Credentials {
        match self {
            LoggedIn::Ready(sending) => &sending.credentials,
            LoggedIn::Cut { nominal, .. } => nominal,
        }
    }
}

/// Logs the case's identity in (if it needs it), within the run's budget and its stop.
async fn log_in(
    shared: &Shared,
    case: &TestCase,
    deadline: Option<Instant>,
) -> Result<LoggedIn, EngineError> {
    let identity = case.identity.as_deref();
    let logged_in = log_in_within(
        shared
            .identities
            .credentials(identity, &shared.sender, &shared.base_url),
        deadline,
        &shared.stop,
    )
    .await;
    Ok(match logged_in {
        Ok(Err(IdentityError::Unusable { .. })) => LoggedIn::Cut {
            nominal: shared.identities.nominal(identity)?,
            why: unusable(shared, identity),
        },
        Ok(sending) => LoggedIn::Ready(sending?),
        Err(why) => LoggedIn::Cut {
            nominal: shared.identities.nominal(identity)?,
            why,
        },
    })
}

/// The request of a case sent as `identity`, which could not log in again, is recorded as
/// cancelled with this message; when it is the default identity, the run stops (ending as
/// a spent budget does, with its report): its ordinary requests are all sent as it.
fn unusable(shared: &Shared, identity: Option<&str>) -> &'static str {
    if identity.is_none() {
        shared
            .stop
            .stop(crate::stop::StopReason::DefaultIdentityUnusable);
    }
    "cancelled: the identity it was sent as could not log in again (report.json says when and why)"
}

/// The rate limit: waits for this request's slot, but never past the budget, which is a
/// hard end, nor past a stop (a signal): the request is then recorded as cancelled, as one
/// in flight is, and the run does not wait for its slot.
async fn wait_for_slot(shared: &Shared, op: usize, deadline: Option<Instant>) {
    if let Some(at) = shared.pace.slot(op) {
        let until = deadline.map_or(at, |d| at.min(d));
        tokio::select! {
            _ = tokio::time::sleep_until(until.into()) => {}
            _ = shared.stop.stopped() => {}
        }
    }
}

/// How long the request may take. A request that asks an SQL database to wait is slow on
/// purpose where the API is injectable: its operation's own deadline would cut the wait a
/// `timing` series measures (and the time of the same request asking for none, which it
/// measures against), and its time says nothing of the operation's pace.
fn own_deadline(shared: &Shared, case: &TestCase, ticket: &mut Ticket) -> Duration {
    let wait_asked = crate::mutate::awkward::wait_asked(case).map(|(_, seconds)| seconds);
    if wait_asked.is_some_and(|seconds| seconds > 0) {
        shared.pace.slow_on_purpose(ticket);
    }
    if wait_asked.is_some() {
        shared.pace.options().timeout
    } else {
        ticket.deadline
    }
}

/// What a request gives back once it moves to the slow lane, or once it is answered.
struct Released<'a> {
    /// The worker permit: it bounds requests in flight, not the recording and judging
    /// after them, so the next request goes out while this answer is being recorded.
    permit: Option<tokio::sync::OwnedSemaphorePermit>,
    notes: &'a Notes,
    batch: u64,
}

/// Sends the request the first time; after `schedule.slowAfter` still in flight, it moves
/// to the slow lane (off the batch, and off the workers).
async fn send_first(
    shared: &Shared,
    wire: &wire::WireRequest,
    own: Option<Duration>,
    deadline: Option<Instant>,
    ticket: &mut Ticket,
    mut released: Released<'_>,
) -> Sent {
    let send = send_within(&shared.sender, wire, own, deadline, &shared.stop);
    tokio::pin!(send);
    if ticket.slow {
        return send.await;
    }
    let slow_after = shared.pace.options().slow_after;
    tokio::select! {
        outcome = &mut send => outcome,
        _ = tokio::time::sleep(slow_after) => {
            // Slow: off the batch, and off the workers.
            shared.pace.detach(ticket);
            released.permit.take();
            let _ = released.notes.send(Note::Released { batch: released.batch });
            send.await
        }
    }
}

/// A token that the API no longer takes: logs in again and sends the request once more;
/// only the second answer is recorded (docs/security.md). The request sent again, if it
/// was.
async fn resend_after_401(
    shared: &Shared,
    p: &Planned,
    sending: &Sending,
    sent: &mut Sent,
    own: Option<Duration>,
    deadline: Option<Instant>,
) -> Result<Option<wire::WireRequest>, EngineError> {
    if sent.outcome.status() != Some(401) || p.case.credentials.is_some() {
        return Ok(None);
    }
    let identity = p.case.identity.as_deref();
    let again = log_in_within(
        shared.identities.refused(
            identity,
            &p.case.operation,
            sending.generation,
            &shared.sender,
            &shared.base_url,
        ),
        deadline,
        &shared.stop,
    )
    .await;
    let again = match again {
        // The token is no longer taken and no new one came: the 401 says nothing of the
        // operation, and the request is not sent again.
        Ok(Err(IdentityError::Unusable { .. })) => {
            sent.outcome = cancelled(unusable(shared, identity));
            sent.retried = None;
            None
        }
        Ok(again) => again?,
        // The 401 answered a token that is no longer taken: it says nothing of the
        // operation, and the request it would be sent again as is not sent.
        Err(message) => {
            sent.outcome = cancelled(message);
            sent.retried = None;
            None
        }
    };
    let Some(again) = again else {
        return Ok(None);
    };
    let op = &shared.api.operations[p.op];
    let wire = wire::build(
        &p.case,
        op,
        &shared.api,
        &shared.base_url,
        &again.credentials,
    );
    *sent = send_within(&shared.sender, &wire, own, deadline, &shared.stop).await;
    if sent.outcome.status() == Some(401) {
        shared.identities.not_the_token(identity, &p.case.operation);
    }
    Ok(Some(wire))
}

/// Tells pace what it learns of the answer (its time, a timeout, a request to wait), and
/// says in a timeout's message which deadline it was.
fn tell_pace(
    shared: &Shared,
    ticket: &Ticket,
    outcome: &mut Outcome,
    elapsed: Duration,
    own_deadline: Duration,
) {
    let mut timed_out = false;
    if let Outcome::TransportError {
        kind: TransportErrorKind::Timeout,
        message,
    } = outcome
    {
        timed_out = true;
        *message = timeout_message(own_deadline, shared.pace.options().timeout, message);
    }
    let throttle = match &*outcome {
        Outcome::Response(r) => pace::throttle(
            r.status,
            r.header("retry-after"),
            std::time::SystemTime::now(),
        ),
        _ => None,
    };
    shared.pace.finish(
        ticket,
        Finished {
            elapsed,
            timed_out,
            throttle,
        },
    );
}

/// What the scheduler learns of a recorded exchange.
fn answered(p: Planned, recorded: step::Recorded, elapsed: Duration) -> Answered {
    let step::Recorded {
        encoded,
        json,
        observations,
    } = recorded;
    let interaction = &encoded.interaction;
    let step_answer = (p.case.strategy == crate::model::Strategy::Series).then(|| {
        Box::new(series::StepAnswer {
            id: encoded.id,
            body: encoded.response_body().map(<[u8]>::to_vec),
            interaction: interaction.clone(),
        })
    });
    let location = interaction
        .outcome
        .response()
        .filter(|r| (200..300).contains(&r.status))
        .and_then(|r| r.header("location"))
        .map(str::to_owned);
    let found = observations
        .iter()
        .map(|o| (o.oracle.name, o.key_by_message.clone()))
        .collect();
    Answered {
        seq: p.seq,
        op: p.op,
        case: p.case,
        case_id: encoded.case_id,
        status: interaction.outcome.status(),
        learned: json,
        location,
        transport: step::transport(&interaction.outcome),
        phase: p.phase,
        elapsed,
        recorded: step_answer,
        found,
    }
}

/// What a timeout says: the deadline, and why it is shorter than `send.timeout` when it is.
fn timeout_message(deadline: Duration, timeout: Duration, cause: &str) -> String {
    let within = humantime::format_duration(deadline);
    if deadline < timeout {
        format!(
            "no answer within {within}, the operation's own deadline (10x its slowest recent \
             answer; send.timeout is {}): {cause}",
            humantime::format_duration(timeout)
        )
    } else {
        format!("no answer within {within} (send.timeout): {cause}")
    }
}

/// The run's findings, shared by the workers: each new one counts against
/// `--max-findings`.
pub(super) struct Counted<'a>(pub(super) &'a Shared);

impl Collect for Counted<'_> {
    fn collect(&mut self, add: impl FnOnce(&mut FindingCollector) -> bool) -> bool {
        self.0
            .collector
            .lock()
            .map(|mut c| {
                let new = add(&mut c);
                self.0.count_finding(&c);
                new
            })
            .unwrap_or(false)
    }
}
