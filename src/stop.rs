//! Ending a campaign before its budget: the handle the command (a signal) and the engine
//! (enough findings) use to say "stop now", which the engine's scheduler, workers and slow
//! lane, and a replay, watch. A stopped campaign ends as a spent budget does: nothing new
//! is started, the requests in flight are cancelled and recorded as cancelled, and the run
//! is closed and reported.
//!
//! Depends on: nothing in probe (tokio's `watch`).

use std::sync::Arc;

use tokio::sync::watch;

/// Why a run was told to stop before its budget ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// A signal (Ctrl-C, SIGTERM): the run ends `interrupted`.
    Interrupted,
    /// `--max-findings N`: the run found enough, and ends as a spent budget does.
    EnoughFindings,
    /// The default identity could not log in again (docs/security.md): every ordinary
    /// request is sent as it, so the run ends as a spent budget does, with its report.
    DefaultIdentityUnusable,
}

impl StopReason {
    /// What an in-flight request that was cancelled says.
    pub fn cancelled_message(self) -> &'static str {
        match self {
            StopReason::Interrupted => {
                "cancelled: the run was interrupted while the request was in flight"
            }
            StopReason::EnoughFindings => {
                "cancelled: the run had found --max-findings distinct findings while the request was in flight"
            }
            StopReason::DefaultIdentityUnusable => {
                "cancelled: the run's default identity could not log in again while the request was in flight"
            }
        }
    }
}

/// A shared "stop now"; clones watch the same one. The first reason given is kept.
#[derive(Clone, Debug)]
pub struct Stop {
    tx: Arc<watch::Sender<Option<StopReason>>>,
}

impl Default for Stop {
    fn default() -> Stop {
        Stop::new()
    }
}

impl Stop {
    pub fn new() -> Stop {
        Stop {
            tx: Arc::new(watch::Sender::new(None)),
        }
    }

    /// Tells the run to stop; a second call keeps the first reason.
    pub fn stop(&self, reason: StopReason) {
        self.tx.send_if_modified(|now| {
            if now.is_none() {
                *now = Some(reason);
                true
            } else {
                false
            }
        });
    }

    /// Why the run was told to stop, if it was.
    pub fn reason(&self) -> Option<StopReason> {
        *self.tx.borrow()
    }

    pub fn is_stopped(&self) -> bool {
        self.reason().is_some()
    }

    /// Resolves once the run is told to stop, with the reason.
    pub async fn stopped(&self) -> StopReason {
        let mut rx = self.tx.subscribe();
        loop {
            if let Some(reason) = *rx.borrow_and_update() {
                return reason;
            }
            // The sender lives as long as `self`, so this only fails if it was dropped.
            if rx.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_first_reason_is_kept_and_waiters_wake() {
        let stop = Stop::new();
        assert!(!stop.is_stopped());
        let waiter = tokio::spawn({
            let stop = stop.clone();
            async move { stop.stopped().await }
        });
        stop.stop(StopReason::EnoughFindings);
        stop.stop(StopReason::Interrupted);
        assert_eq!(waiter.await.unwrap(), StopReason::EnoughFindings);
        assert_eq!(stop.reason(), Some(StopReason::EnoughFindings));
    }
}
