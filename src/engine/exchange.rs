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
use crate::model::{Outcome, Sent, TransportErrorKind};
use crate::oracle::FindingCollector;
use crate::send::{wire, Sender};
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
    let cancelled = |message: &str| {
        Sent::from(Outcome::TransportError {
            kind: TransportErrorKind::Cancelled,
            message: message.into(),
        })
    };
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
    mut permit: Option<tokio::sync::OwnedSemaphorePermit>,
    deadline: Option<Instant>,
    mut ticket: Ticket,
    notes: &Notes,
) -> Result<(), EngineError> {
    let op = &shared.api.operations[p.op];
    let identity = p.case.identity.as_deref();
    let logged_in = log_in_within(
        shared
            .identities
            .credentials(identity, &shared.sender, &shared.base_url),
        deadline,
        &shared.stop,
    )
    .await;
    // A login cut short: the request is recorded as cancelled, built with the credentials
    // as they go (a token stands in where the token goes), and not sent.
    let (sending, cut) = match logged_in {
        Ok(sending) => (Some(sending?), None),
        Err(message) => (None, Some(message)),
    };
    let nominal;
    let credentials = match &sending {
        Some(s) => &s.credentials,
        None => {
            nominal = shared.identities.nominal(identity)?;
            &nominal
        }
    };
    let mut wire = wire::build(&p.case, op, &shared.api, &shared.base_url, credentials);
    let cancelled = |message: &str| Outcome::TransportError {
        kind: TransportErrorKind::Cancelled,
        message: message.into(),
    };
    if let Some(at) = cut.is_none().then(|| shared.pace.slot(p.op)).flatten() {
        // The rate limit: wait for this request's slot, but never past the budget, which is
        // a hard end, nor past a stop (a signal): the request is then recorded as
        // cancelled, as one in flight is, and the run does not wait for its slot.
        let until = deadline.map_or(at, |d| at.min(d));
        tokio::select! {
            _ = tokio::time::sleep_until(until.into()) => {}
            _ = shared.stop.stopped() => {}
        }
    }
    let started_ms = now_ms();
    let t0 = Instant::now();
    // A request that asks an SQL database to wait is slow on purpose where the API is
    // injectable: its operation's own deadline would cut the wait a `timing` series
    // measures (and the time of the same request asking for none, which it measures
    // against), and its time says nothing of the operation's pace.
    let wait_asked = crate::mutate::awkward::wait_asked(&p.case).map(|(_, seconds)| seconds);
    let slow_on_purpose = wait_asked.is_some_and(|seconds| seconds > 0);
    if slow_on_purpose {
        shared.pace.slow_on_purpose(&mut ticket);
    }
    let own_deadline = if wait_asked.is_some() {
        shared.pace.options().timeout
    } else {
        ticket.deadline
    };
    let own = Some(own_deadline);
    let Sent {
        mut outcome,
        mut retried,
    } = if let Some(message) = cut {
        cancelled(message).into()
    } else {
        let send = send_within(&shared.sender, &wire, own, deadline, &shared.stop);
        tokio::pin!(send);
        if ticket.slow {
            send.await
        } else {
            let slow_after = shared.pace.options().slow_after;
            tokio::select! {
                outcome = &mut send => outcome,
                _ = tokio::time::sleep(slow_after) => {
                    // Slow: off the batch, and off the workers.
                    shared.pace.detach(&mut ticket);
                    permit.take();
                    let _ = notes.send(Note::Released { batch: p.batch });
                    send.await
                }
            }
        }
    };
    // The permit bounds requests in flight, not the recording and judging after them:
    // the next request goes out while this answer is being recorded.
    drop(permit);
    // A token that the API no longer takes: log in again and send the request once more;
    // only the second answer is recorded (docs/security.md).
    if let (Some(401), None, Some(sending)) = (outcome.status(), &p.case.credentials, &sending) {
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
            Ok(again) => again?,
            // The 401 answered a token that is no longer taken: it says nothing of the
            // operation, and the request it would be sent again as is not sent.
            Err(message) => {
                outcome = cancelled(message);
                retried = None;
                None
            }
        };
        if let Some(again) = again {
            wire = wire::build(
                &p.case,
                op,
                &shared.api,
                &shared.base_url,
                &again.credentials,
            );
            Sent { outcome, retried } =
                send_within(&shared.sender, &wire, own, deadline, &shared.stop).await;
            if outcome.status() == Some(401) {
                shared.identities.not_the_token(identity, &p.case.operation);
            }
        }
    }
    let elapsed = t0.elapsed();
    let elapsed_us = elapsed.as_micros() as u64;
    let timed_out = matches!(
        outcome,
        Outcome::TransportError {
            kind: TransportErrorKind::Timeout,
            ..
        }
    );
    if let Outcome::TransportError {
        kind: TransportErrorKind::Timeout,
        message,
    } = &mut outcome
    {
        *message = timeout_message(own_deadline, shared.pace.options().timeout, message);
    }
    shared.pace.finish(
        &ticket,
        Finished {
            elapsed,
            timed_out,
            throttle: match &outcome {
                Outcome::Response(r) => pace::throttle(
                    r.status,
                    r.header("retry-after"),
                    std::time::SystemTime::now(),
                ),
                _ => None,
            },
        },
    );
    // Let the task the permit woke send its request before this one records and judges:
    // answers come in bursts (a slow API's timers fire together), and each answer's ~40 µs
    // of recording and judging would otherwise delay every send queued behind it
    // (docs/benchmarks.md, "yield after each answer").
    tokio::task::yield_now().await;

    let timing = crate::model::Timing {
        started_ms,
        elapsed_us,
    };
    let step::Recorded {
        encoded,
        json,
        observations,
    } = step::exchange(
        step::Sending {
            run: shared.run,
            seq: p.seq,
            operation: op,
            case: &p.case,
            request: wire.into(),
            sent: Sent { outcome, retried },
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
    let case_id = encoded.case_id;
    let interaction_id = encoded.id;
    let interaction = &encoded.interaction;
    let response_body = encoded.response_body();
    let status = interaction.outcome.status();
    let transport = step::transport(&interaction.outcome);

    let step_answer = (p.case.strategy == crate::model::Strategy::Series).then(|| {
        Box::new(series::StepAnswer {
            id: interaction_id,
            body: response_body.map(<[u8]>::to_vec),
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
    let answered = Answered {
        seq: p.seq,
        op: p.op,
        case: p.case,
        case_id,
        status,
        learned: json,
        location,
        transport,
        phase: p.phase,
        elapsed,
        recorded: step_answer,
        found,
    };
    // The scheduler has ended only if the run failed; then nobody needs this answer.
    let _ = notes.send(Note::Answered {
        batch: p.batch,
        late: ticket.slow,
        answered: Box::new(answered),
    });
    Ok(())
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
