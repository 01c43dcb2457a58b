//! The memory of accepted requests (docs/design-notes.md, A kind then a place): the newest `mutation.acceptedKept` accepted
//! requests per operation, each with the interaction that accepted it, admitting only what
//! [`can_be_kept`] allows. A plain value the engine owns and feeds from its answers; nothing
//! here listens to events or reads the store.
//!
//! Depends on: `model`, `ids`, `mutate::can_be_kept`.

use std::collections::{BTreeMap, VecDeque};

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::model::AcceptedRef;
use crate::model::TestCase;

use super::can_be_kept;

/// Accepted requests kept to be changed, per operation, newest last.
#[derive(Clone, Debug, Default)]
pub struct AcceptedMemory {
    limit: usize,
    kept: BTreeMap<String, VecDeque<(AcceptedRef, TestCase)>>,
}

impl AcceptedMemory {
    /// A memory keeping at most `limit` requests per operation (`mutation.acceptedKept`).
    pub fn new(limit: usize) -> AcceptedMemory {
        AcceptedMemory {
            limit,
            kept: BTreeMap::new(),
        }
    }

    /// Offers an answered request; kept when [`can_be_kept`] allows it. Returns whether it was.
    /// Takes the case: the engine is done with an answered case, and a copy of each accepted
    /// one was a tenth of learning from a batch.
    pub fn offer(&mut self, case: TestCase, interaction: AcceptedRef, status: u16) -> bool {
        if self.limit == 0 || !can_be_kept(&case, status) {
            return false;
        }
        let list = match self.kept.get_mut(&case.operation) {
            Some(list) => list,
            None => self.kept.entry(case.operation.clone()).or_default(),
        };
        // The same request accepted again is kept once, as its newest acceptance. Told by
        // its id, the hash of the whole case: comparing whole cases was most of learning
        // from an answer.
        list.retain(|(kept, _)| kept.case != interaction.case);
        list.push_back((interaction, case));
        while list.len() > self.limit {
            list.pop_front();
        }
        true
    }

    /// How many requests are kept for `operation`.
    pub fn count(&self, operation: &str) -> usize {
        self.kept.get(operation).map_or(0, VecDeque::len)
    }

    /// One kept request of `operation`, drawn from `rng` (one draw; none when nothing is kept,
    /// so that an operation with nothing accepted draws nothing).
    pub fn pick(&self, operation: &str, rng: &mut ChaCha8Rng) -> Option<&(AcceptedRef, TestCase)> {
        let list = self.kept.get(operation).filter(|l| !l.is_empty())?;
        list.get(rng.gen_range(0..list.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::Digest;
    use crate::mutate::tests::{api, case};
    use rand::SeedableRng;
    use serde_json::json;

    #[test]
    fn keeps_the_newest_and_only_what_may_be_kept() {
        let a = api("openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths:\n  /x:\n    get:\n      parameters:\n        - {name: n, in: query, schema: {type: integer}}\n      responses: {'200': {description: ok}}\n");
        let op = &a.operations[0];
        let mut m = AcceptedMemory::new(2);
        let id = |i: u8| AcceptedRef {
            case: crate::ids::CaseId(Digest::of(&[i])),
            seq: 0,
        };
        for i in 0..4u8 {
            let c = case(
                op,
                vec![(crate::model::Location::Query, "n", json!(i))],
                None,
            );
            assert!(m.offer(c, id(i), 200));
        }
        assert_eq!(m.count(&op.key.name()), 2);
        let c = case(op, vec![], None);
        assert!(!m.offer(c.clone(), id(9), 500));
        let mut pushed = c.clone();
        pushed.intent = crate::model::Intent::Pushing;
        assert!(!m.offer(pushed, id(9), 200));
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let (from, kept) = m.pick(&op.key.name(), &mut rng).expect("kept");
        assert!(*from == id(2) || *from == id(3));
        assert!(kept.parameters[0].value == json!(2) || kept.parameters[0].value == json!(3));
        let before = rng.clone();
        assert!(m.pick("other", &mut rng).is_none());
        assert_eq!(rng, before);
    }
}
