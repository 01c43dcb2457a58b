//! The spine: where a campaign's stream goes, and in what order.
//!
//! A campaign (a run, a replay) publishes two things: the objects it made, encoded (a test
//! case with its interaction and bodies, or a series), and [`Event`]s about them. Both go
//! through one [`Spine`], which has two kinds of consumer:
//!
//! - the **keeper** (the store's recorder, [`crate::store::Recorder`]) takes the objects.
//!   [`Spine::keep`] waits while the keeper has no room, so a campaign can never run ahead
//!   of its store by more than the keeper's queue; and it returns before any event naming
//!   those objects is published, so every id an event carries (an interaction, a finding's
//!   first interaction) has been handed to the store. This is why the keeper is awaited
//!   and the watchers are not: a judge's verdict on an interaction the store never got
//!   would name nothing.
//! - the **watchers** ([`EventSink`]s: the progress bar, the `--events` NDJSON writer, the
//!   reports' [`crate::report::RunLog`]) see every event, in the order it was published.
//!
//! Neither the engine nor replay names the recorder: they are given a spine. A test can
//! give one whose keeper is not a store.
//!
//! Depends on: `store` (the encoded objects, the [`Keeper`] trait its recorder implements),
//! `events` (what the watchers see).

use crate::events::{Event, EventSink};
use crate::store::{EncodedObject, StoreError};

// The keeper trait lives with the store, which implements it for its recorder: the store
// stands below the events and never names them.
pub use crate::store::{KeepFuture, Keeper};

/// One campaign's stream: a keeper and the watchers.
pub struct Spine {
    keeper: Box<dyn Keeper>,
    watchers: EventSink,
}

impl Spine {
    pub fn new(keeper: impl Keeper + 'static, watchers: EventSink) -> Spine {
        Spine {
            keeper: Box::new(keeper),
            watchers,
        }
    }

    /// Hands `objects` to the keeper; see the module docs for why this is awaited.
    pub async fn keep(&self, objects: Vec<EncodedObject>) -> Result<(), StoreError> {
        self.keeper.keep(objects).await
    }

    /// Shows `event` to every watcher.
    pub fn publish(&self, event: &Event<'_>) {
        (self.watchers)(event)
    }

    /// Ends the stream: the keeper keeps what it holds, durably. Call it before publishing
    /// the campaign's end, which says the campaign is stored.
    pub fn finish(self) -> Result<(), StoreError> {
        self.keeper.finish()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// A keeper that notes what it was given, to check the order of keeping and publishing.
    struct Notes(Arc<Mutex<Vec<String>>>);

    impl Keeper for Notes {
        fn keep(&self, objects: Vec<EncodedObject>) -> KeepFuture<'_> {
            self.0
                .lock()
                .unwrap()
                .push(format!("kept {}", objects.len()));
            Box::pin(async { Ok(()) })
        }

        fn finish(self: Box<Self>) -> Result<(), StoreError> {
            self.0.lock().unwrap().push("finished".into());
            Ok(())
        }
    }

    #[tokio::test]
    async fn the_keeper_gets_objects_and_the_watchers_events_in_the_order_given() {
        let notes = Arc::new(Mutex::new(Vec::new()));
        let seen = notes.clone();
        let watcher: EventSink = Arc::new(move |e: &Event<'_>| {
            seen.lock()
                .unwrap()
                .push(format!("{:?}", crate::events::Record::from(e).event))
        });
        let spine = Spine::new(Notes(notes.clone()), watcher);
        spine.keep(Vec::new()).await.unwrap();
        spine.publish(&Event::PhaseStarted {
            name: "rounds",
            at_ms: 1,
        });
        spine.finish().unwrap();
        let notes = notes.lock().unwrap().clone();
        assert_eq!(notes.len(), 3, "{notes:?}");
        assert_eq!(notes[0], "kept 0");
        assert!(notes[1].starts_with("PhaseStarted"), "{notes:?}");
        assert_eq!(notes[2], "finished");
    }
}
