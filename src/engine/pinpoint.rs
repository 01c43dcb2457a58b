//! The pinpointing book: when the API refuses a request built to be valid while it accepted
//! another valid request for the same operation, which one value it refuses
//! (docs/pinpointing.md).
//!
//! A search starts from the refused request and the accepted one closest to it
//! ([`crate::pinpoint::differences`]: the places where they differ) and halves the suspects:
//! it sends the refused request with half of them set to the accepted values. Accepted:
//! the refused value is in that half; refused again: in the other. When the request with
//! one value changed is accepted, the value is pinned down, and the refused request is
//! sent once more, recorded as that accepted candidate with the
//! one value changed back (mutation kind `refusedValue`, intent `acceptable`). Its answer
//! is judged like any other: `valid_data_refused` reports it, naming both values, and the
//! finding is shrunk like any other. Any other outcome (halves that cannot be built valid,
//! the last suspect refused, the refusal not repeated) ends the search with no finding:
//! a refusal that no single value explains, or that the API does not repeat, is not
//! pinned.
//!
//! Searches are decided where answers are learned, in sequence order, so the same seed
//! sends the same requests whatever the number of workers. Their requests count towards
//! the share of the run follow-up requests may take (`shrink.share`).
//!
//! Depends on: `model`, `ids`, `spec`, `settings`, `pinpoint`, `shrink`.

use std::collections::BTreeMap;

use crate::ids::CaseId;
use crate::model::{Strategy, TestCase};
use crate::pinpoint::{confirming, differences, explained, with_accepted, Difference};
use crate::settings::PinpointOptions;
use crate::spec::Api;

/// Accepted valid requests kept per operation to compare a refused one with.
const ACCEPTED_KEPT: usize = 4;

/// What a candidate in flight tests: the suspects it sets to the accepted values
/// (`tested`), and the others (`rest`).
struct Probe {
    tested: Vec<usize>,
    rest: Vec<usize>,
}

/// One refused request being pinned down.
struct Search {
    op: usize,
    status: u16,
    refused: TestCase,
    differences: Vec<Difference>,
    /// Indices into `differences` of the places the refusal may come from.
    suspects: Vec<usize>,
    waiting: Option<(u64, Probe)>,
    /// The request that records the refusal, once pinned down: sent next.
    confirm: Option<TestCase>,
    spent: u64,
    done: bool,
}

/// The searches of a run.
pub struct PinpointBook {
    enabled: bool,
    per_search: u64,
    per_operation: u64,
    /// Accepted valid requests by operation: the sequence number of the answer, the case
    /// id and the case.
    accepted: BTreeMap<usize, Vec<(u64, CaseId, TestCase)>>,
    /// Refused valid requests of operations that have accepted none yet, with the status.
    unmatched: BTreeMap<usize, Vec<(TestCase, u16)>>,
    /// Searches started per operation (waiting ones included).
    started: BTreeMap<usize, u64>,
    searches: Vec<Search>,
    sent: u64,
}

impl PinpointBook {
    pub fn new(options: &PinpointOptions) -> PinpointBook {
        PinpointBook {
            enabled: options.enabled,
            per_search: options.per_search,
            per_operation: options.per_operation,
            accepted: BTreeMap::new(),
            unmatched: BTreeMap::new(),
            started: BTreeMap::new(),
            searches: Vec::new(),
            sent: 0,
        }
    }

    /// Whether refusals are pinned down at all in this run.
    pub fn enabled(&self) -> bool {
        self.enabled && self.per_search > 0 && self.per_operation > 0
    }

    /// Learns an ordinary answer: a valid request accepted is kept to compare with; one
    /// refused starts a search when the operation accepted another (else it waits for one).
    pub fn observe(
        &mut self,
        api: &Api,
        op: usize,
        seq: u64,
        case_id: CaseId,
        case: &TestCase,
        status: Option<u16>,
    ) {
        let Some(status) = status else {
            return;
        };
        if !self.enabled()
            || case.strategy != Strategy::Nominal
            || case.mutation.is_some()
            || crate::shrink::intent_rank(case) != 0
        {
            return;
        }
        if (200..300).contains(&status) {
            let kept = self.accepted.entry(op).or_default();
            if kept.len() < ACCEPTED_KEPT {
                kept.push((seq, case_id, case.clone()));
            }
            for (refused, status) in self.unmatched.remove(&op).unwrap_or_default() {
                self.start(api, op, refused, status);
            }
        } else if crate::oracle::refuses_the_values(status) && crate::pinpoint::searchable(case) {
            let started = self.started.entry(op).or_default();
            if *started >= self.per_operation {
                return;
            }
            *started += 1;
            if self.accepted.contains_key(&op) {
                self.start(api, op, case.clone(), status);
            } else {
                self.unmatched
                    .entry(op)
                    .or_default()
                    .push((case.clone(), status));
            }
        }
    }

    /// Starts a search from `refused` and the accepted request that differs from it least.
    fn start(&mut self, api: &Api, op: usize, refused: TestCase, status: u16) {
        let Some(operation) = api.operations.get(op) else {
            return;
        };
        let Some(found) = self
            .accepted
            .get(&op)
            .into_iter()
            .flatten()
            .map(|(_, _, accepted)| differences(operation, &refused, accepted))
            .filter(|d| !d.is_empty())
            .min_by_key(Vec::len)
        else {
            return;
        };
        self.searches.push(Search {
            op,
            status,
            refused,
            suspects: (0..found.len()).collect(),
            differences: found,
            waiting: None,
            confirm: None,
            spent: 0,
            done: false,
        });
    }

    /// Learns a search request's answer.
    pub fn answered(&mut self, api: &Api, seq: u64, case_id: CaseId, status: Option<u16>) {
        let Some(search) = self
            .searches
            .iter_mut()
            .find(|s| s.waiting.as_ref().is_some_and(|(w, _)| *w == seq))
        else {
            return;
        };
        let Some((_, probe)) = search.waiting.take() else {
            return;
        };
        let accepted = status.is_some_and(|s| (200..300).contains(&s));
        match (accepted, &probe.tested[..]) {
            // One value changed, and accepted: pinned down.
            (true, [only]) => {
                let difference = &search.differences[*only];
                let operation = &api.operations[search.op];
                search.done = true;
                if !explained(operation, search.status, &difference.place()) {
                    search.confirm = Some(confirming(&search.refused, case_id, seq, difference));
                    search.done = false;
                }
            }
            (true, _) => search.suspects = probe.tested,
            (false, _) => search.suspects = probe.rest,
        }
    }

    /// The next request of every search that waits for none, numbered from `next_seq`,
    /// at most `room` of them. Searches with nothing left to try end here.
    pub fn ready(&mut self, api: &Api, room: u64, next_seq: u64) -> Vec<(usize, TestCase)> {
        let mut out: Vec<(usize, TestCase)> = Vec::new();
        for search in &mut self.searches {
            if search.waiting.is_some() || search.done {
                continue;
            }
            if out.len() as u64 >= room {
                break;
            }
            if let Some(confirm) = search.confirm.take() {
                // Its answer is an ordinary one, judged and shrunk like any other.
                search.done = true;
                self.sent += 1;
                out.push((search.op, confirm));
                continue;
            }
            if search.spent >= self.per_search || search.suspects.is_empty() {
                search.done = true;
                continue;
            }
            let Some((probe, candidate)) = next_probe(api, search) else {
                search.done = true;
                continue;
            };
            search.waiting = Some((next_seq + out.len() as u64, probe));
            search.spent += 1;
            self.sent += 1;
            out.push((search.op, candidate));
        }
        self.searches
            .retain(|s| !s.done || s.waiting.is_some() || s.confirm.is_some());
        out
    }

    /// Requests sent so far (candidates and confirming requests).
    pub fn sent(&self) -> u64 {
        self.sent
    }
}

/// The search's next candidate: the first half of the suspects set to the accepted values
/// (or the second, when the first cannot be built valid). One suspect left, that one.
fn next_probe(api: &Api, search: &Search) -> Option<(Probe, TestCase)> {
    let operation = api.operations.get(search.op)?;
    let build = |indices: &[usize]| {
        let flip: Vec<&Difference> = indices.iter().map(|&i| &search.differences[i]).collect();
        with_accepted(api, operation, &search.refused, &flip)
    };
    let (first, second) = search.suspects.split_at(search.suspects.len() / 2);
    let (first, second) = if first.is_empty() {
        (second, first)
    } else {
        (first, second)
    };
    [(first, second), (second, first)]
        .into_iter()
        .filter(|(tested, _)| !tested.is_empty())
        .find_map(|(tested, rest)| {
            build(tested).map(|c| {
                (
                    Probe {
                        tested: tested.to_vec(),
                        rest: rest.to_vec(),
                    },
                    c,
                )
            })
        })
}
