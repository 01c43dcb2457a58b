//! Series: short sequences of calls on one resource, each step built from the answers
//! before it, judged together by the series oracles (docs/series.md).
//!
//! The life cycles are found once from the document: a resource is an item path (its last
//! segment a parameter) with a GET, and something that creates it (a POST on its
//! collection, or a PUT on the item). A creation answered 2xx by an ordinary request starts
//! a series about a fresh resource of the same kind: the same creation is sent again (with
//! name-like strings given a suffix, so that APIs keyed by name make a new one), then read,
//! updated, read, deleted, read and deleted again. The series keeps its own memory of what
//! its creation answered, never shared with the run's: no ordinary request touches the
//! resource a series is about, so two reads of it differ only by what the series did.
//!
//! Which series start is decided where answers are learned (in sequence order); each
//! series draws from its own ChaCha stream, so a series is the same given the same answers.
//! The scheduler sends the ready steps of every series as a small batch of their own and
//! waits for them before it goes on with the rounds.
//!
//! Depends on: `model`, `spec`, `schema`, `generate::{memory, cases}`.
//!
//! Its parts: `book.rs` (the book: which resources have a life cycle, which series
//! start, are in progress and have ended), `plan.rs` (the roles a series sends, in order)
//! `step.rs` (building one step's case from the answers before it) and `variety.rs` (the
//! variations a resource's series take turns at, and what each changes in what it sends).

use rand_chacha::ChaCha8Rng;
use serde_json::Value;

use crate::generate::memory::Memory;
// `/pets/{petId}/` → `/pets/{}`: one shape of a path for the series and the memory.
use crate::generate::vocabulary::shape;
use crate::ids::InteractionId;
use crate::model::{Interaction, SeriesKind, StepRole, TestCase};

mod book;
mod plan;
mod step;
mod takeover;
mod variety;

pub use book::SeriesBook;
pub use takeover::Takeover;

/// Most series in progress at once.
const PARALLEL: usize = 8;

/// Most life cycle series `start_more` keeps in progress at once. They go on for the whole
/// run, so they leave the rest of [`PARALLEL`] to the series other answers start (access,
/// credentials, methods, enumeration), which start only when a place is free. And they
/// share `series.share` among them: each of `n` at once ends `n` times later, so with more
/// a short run ends before the first has ended and been shortened.
const LIFECYCLES_AT_ONCE: usize = 2;

/// `timing` series started in a run at most: each costs its waits when the API does wait.
const TIMING_SERIES: usize = 8;

/// The wait, in seconds, a `timing` series asks for, then the longer one.
const TIMING_DELAY: u32 = 2;
const TIMING_LONGER_DELAY: u32 = 3;

/// Series of a variation that showed nothing new tried beyond those that showed something
/// new, before it gives way to an untried one (twice per new thing shown).
const GIVE_WAY: u64 = 2;

/// Series steps always allowed, before `series.share` applies.
const FREE_STEPS: u64 = 50;

/// The life cycle of one kind of resource, found from the document.
#[derive(Debug, Clone)]
struct Lifecycle {
    /// The item path of its read, e.g. `/pets/{petId}`.
    resource: String,
    read: usize,
    /// The POST on its collection, and the GET of the collection.
    post: Option<usize>,
    list: Option<usize>,
    put: Option<usize>,
    patch: Option<usize>,
    delete: Option<usize>,
    /// Series started so far.
    started: u64,
    /// Whether its access series has started.
    access_started: bool,
    /// Whether it has an update and its read declares a property only the server writes
    /// (`readOnly`), which a series sends to ask whether the API takes it anyway.
    read_only_settable: bool,
    /// The methods the document does not declare for the item path, in the order a
    /// `methods` series sends them (DELETE last); empty when `checks.hidden_endpoint` is off.
    undeclared: Vec<&'static str>,
    /// Whether its `methods` series has started.
    methods_started: bool,
    /// The operations on paths under the item with no read of their own (`PUT
    /// /things/{id}/archive`): each series sends one of them, the item read around it.
    actions: Vec<usize>,
    /// The variations its series take turns at, and for each the series that tried it and
    /// those of them that showed something new.
    changes: Vec<variety::Change>,
    tries: Vec<(u64, u64)>,
    /// Whether its POST declares a property whose value one object holds and no other
    /// may (`oracle::implies_uniqueness`): a life cycle then sends its creation twice.
    duplicate: bool,
}

/// The names of a path template's parameters, in order.
fn path_parameters(path: &str) -> Vec<&str> {
    path.split('/')
        .filter_map(|s| s.strip_prefix('{')?.strip_suffix('}'))
        .collect()
}

/// One step sent, and what came back once it did.
#[derive(Debug)]
pub struct SentStep {
    pub role: StepRole,
    pub seq: u64,
    pub case: TestCase,
    pub answer: Option<Box<StepAnswer>>,
}

/// A step's recorded interaction, for the series oracles.
#[derive(Debug)]
pub struct StepAnswer {
    pub id: InteractionId,
    pub interaction: Interaction,
    pub body: Option<Vec<u8>>,
}

/// One series in progress.
#[derive(Debug)]
pub struct SeriesRun {
    pub name: String,
    pub kind: SeriesKind,
    pub resource: String,
    /// Its place in the run's list of life cycles; `None` for an `OPTIONS` series.
    lifecycle: Option<usize>,
    /// The roles still to send, in order.
    roles: Vec<StepRole>,
    /// The step in flight, by seq.
    in_flight: Option<u64>,
    pub steps: Vec<SentStep>,
    /// The first step's case.
    create: Option<TestCase>,
    /// The item's path values by position, with where each came from.
    item: Vec<(Value, Option<String>)>,
    memory: Memory,
    rng: ChaCha8Rng,
    /// The ordinary creation a life cycle started from, and its operation: a shorter series
    /// starts from it again.
    source: Option<(usize, TestCase)>,
    /// Whether it is a shorter series (one shortened again would be no shorter).
    shorter: bool,
    /// The variation of its life cycle it tries (by place), and what it changes.
    variation: Option<(usize, variety::Change)>,
    /// The action under the item it sends.
    action: Option<usize>,
    /// For a `forgery` series, how each of its `forged_token` steps forges the token, in
    /// order.
    forgeries: Vec<crate::model::CredentialProbe>,
    /// What a `credential_change` series is about.
    takeover: Option<Box<takeover::TakeoverPlan>>,
}

/// What a shorter series of an ended life cycle starts from.
pub struct Shortening {
    lifecycle: usize,
    op: usize,
    source: TestCase,
    /// The roles the ended series sent and got answered, in order.
    roles: Vec<StepRole>,
    variation: Option<(usize, variety::Change)>,
    action: Option<usize>,
}

impl SeriesRun {
    /// A series that has sent nothing yet, to send `roles` in this order.
    fn new(
        name: String,
        rng: ChaCha8Rng,
        kind: SeriesKind,
        resource: String,
        lifecycle: Option<usize>,
        mut roles: Vec<StepRole>,
        create: Option<TestCase>,
    ) -> SeriesRun {
        // Kept last first: the next role is popped off the end.
        roles.reverse();
        SeriesRun {
            name,
            kind,
            resource,
            lifecycle,
            roles,
            in_flight: None,
            steps: Vec::new(),
            create,
            item: Vec::new(),
            memory: Memory::default(),
            rng,
            source: None,
            shorter: false,
            variation: None,
            action: None,
            forgeries: Vec::new(),
            takeover: None,
        }
    }

    /// Its life cycle and the variation it tries, by place, when a variation counts it
    /// (a shorter series asks again what its first asked, and is not counted).
    pub fn counted(&self) -> (Option<usize>, Option<usize>) {
        let variation = self.variation.as_ref().filter(|_| !self.shorter);
        (self.lifecycle, variation.map(|(k, _)| *k))
    }

    fn over(&self) -> bool {
        self.in_flight.is_none() && self.roles.is_empty()
    }
}

/// What the access series of a run may do (docs/security.md).
#[derive(Debug, Clone, Default)]
pub struct Access {
    /// The identity that is not the default, for the steps "as another identity".
    pub other: Option<String>,
    /// Whether the default identity sends credentials, for the change sent without them.
    pub anonymous: bool,
    /// Whether a 401 to a request with the default identity's credentials is asked about
    /// (a `credentials` series).
    pub refused: bool,
}

/// The login an `enumeration` series sends (docs/security.md): the document's operation
/// a configured identity logs in at, and its JSON body with every secret-named string
/// replaced by [`WRONG_PASSWORD`].
#[derive(Debug, Clone)]
pub struct LoginTarget {
    pub op: usize,
    pub body: Value,
}

impl LoginTarget {
    /// The target of a login `method path` with `body` (its password already wrong), when
    /// an operation of `api` is at that method and path (its parameters matching any
    /// segment) and the body names a user: a string field that is no password.
    pub fn find(api: &crate::spec::Api, method: &str, path: &str, body: Value) -> Option<Self> {
        let wanted: Vec<&str> = path.trim_end_matches('/').split('/').collect();
        let op = api.operations.iter().position(|o| {
            let have: Vec<&str> = o.key.path.trim_end_matches('/').split('/').collect();
            o.key.method.eq_ignore_ascii_case(method)
                && have.len() == wanted.len()
                && have
                    .iter()
                    .zip(&wanted)
                    .all(|(h, w)| h == w || (h.starts_with('{') && h.ends_with('}')))
        })?;
        step::user_field(&body)?;
        Some(LoginTarget { op, body })
    }
}

/// The password an `enumeration` series' logins send: wrong for every user.
pub const WRONG_PASSWORD: &str = "probe-wrong-Passw0rd!";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_ignore_parameter_names() {
        assert_eq!(shape("/pets/{petId}/"), "/pets/{}");
        assert_eq!(shape("/a/{x}/b/{y}"), shape("/a/{id}/b/{bid}"));
        assert_eq!(path_parameters("/a/{x}/b/{y}"), vec!["x", "y"]);
    }
}
