//! Engine events: the one interface between the engine and whatever shows or keeps its
//! progress (progress bar, console summary, recorder statistics).
//!
//! The engine emits events through an [`EventSink`]; it never prints.
//!
//! Depends on: `ids`, `model`.

use std::sync::Arc;

use crate::ids::RunId;
use crate::model::Intent;

/// Something the engine did. It borrows what it names: one is made for every answer, and
/// most sinks look at a field or two.
#[derive(Debug, Clone)]
pub enum Event<'a> {
    /// The run's manifest is written and sending starts.
    RunStarted {
        run: RunId,
        operations: usize,
        skipped: usize,
    },
    /// A phase began: `opening lap step 2/5 (POST)`, `rounds`.
    Phase { name: String },
    /// One interaction is recorded and judged.
    Interaction {
        seq: u64,
        operation: &'a str,
        status: Option<u16>,
        strategy: &'a str,
        intent: Intent,
        /// Mutation kind, for changed requests.
        mutation: Option<&'a str>,
    },
    /// A new distinct finding.
    Finding {
        oracle: &'static str,
        operation: String,
        message: String,
    },
    /// An operation could not be generated for and is left out of the run.
    OperationSkipped { operation: String, reason: String },
    /// Sending stopped.
    RunFinished { interactions: u64 },
}

/// Receives every event; called from the engine's worker threads.
pub type EventSink = Arc<dyn Fn(&Event<'_>) + Send + Sync>;

/// A sink that drops everything.
pub fn discard() -> EventSink {
    Arc::new(|_| {})
}
