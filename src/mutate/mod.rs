//! Negative testing with intent (docs/design-notes.md, Changing an accepted request): a request the API accepted, sent again with exactly
//! one thing changed, recording what the change broke; the single-violation negatives built
//! from the schema where nothing has been accepted yet ([`violations`]); and the awkward values
//! the pushing strategy sends ([`awkward`]).
//!
//! Everything here is pure: functions of the operation model, the schema set, a test case and
//! a ChaCha8 stream. Nothing sends, stores or reads the clock.
//!
//! - [`place`]: places in dictionary notation and the walk of a body alongside its shape;
//! - `operators` (private): the fifteen kinds' candidates and the judgement that keeps intents true;
//! - [`values`]: format breakers, wrong-kind words, what a parameter's word reads as;
//! - [`check`]: the one function that asks a validator (swappable);
//! - [`memory`]: the newest accepted requests per operation, kept to be changed;
//! - [`violations`]: single-violation negatives from the schema, walked round-robin;
//! - [`awkward`]: the awkward values and [`awkward::push`] for the pushing strategy;
//! - this file: the options, and [`mutate`]: a kind, then a place, by chance. The kinds
//!   themselves ([`MutationKind`]) are a stored type, declared in `model`.
//!
//! # How the engine calls it
//! Keep the newest `mutation.acceptedKept` accepted requests per operation, admitting only
//! those [`can_be_kept`] allows. When the plan draws the mutation strategy for an operation,
//! pick one kept request (from the mutation stream), and call [`mutate`] with a ChaCha8
//! stream of its own (purpose `mutation`). On `None`, build the request from the strategy's
//! sources with the generation stream, exactly as the strategy being copied would: [`mutate`]
//! never touches any stream but the one it is given, and draws nothing at all when no kind is
//! switched on.
//!
//! Depends on: `model`, `ids`, `spec::model`, `schema::{key, keyword}`; nothing of the engine.

pub mod awkward;
pub mod check;
pub mod memory;
mod operators;
pub mod place;
pub mod values;
pub mod violations;

use std::collections::BTreeSet;

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::model::AcceptedRef;
use crate::model::{Intent, Mutation, TestCase};
use crate::spec::{Operation, SchemaSet};

pub use crate::model::MutationKind;
pub use place::{Place, Step, Target};

impl MutationKind {
    /// The kinds that change the body as a whole (place `body`).
    pub fn is_body_level(&self) -> bool {
        matches!(
            self,
            MutationKind::WrongRoot
                | MutationKind::EmptyBody
                | MutationKind::NotJson
                | MutationKind::WrongContentType
        )
    }
}

/// What the operators may do, from the `mutation.*` settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MutationOptions {
    /// The kinds switched on (`mutation.violations` and `mutation.<kind>`).
    pub enabled: BTreeSet<MutationKind>,
    /// How long an oversized word is, and how many digits a number too wide has
    /// (`mutation.oversizedLength`).
    pub oversized_length: usize,
    /// How many items an oversized list has (`mutation.oversizedItems`).
    pub oversized_items: usize,
    /// How deep the body walk goes (`generation.hardNestingDepth`).
    pub nesting_depth: usize,
}

impl Default for MutationOptions {
    /// Every kind on, as shipped.
    fn default() -> Self {
        MutationOptions {
            enabled: MutationKind::ALL.into_iter().collect(),
            oversized_length: 10_000,
            oversized_items: 1_000,
            nesting_depth: 8,
        }
    }
}

impl MutationOptions {
    /// Every kind switched off: [`mutate`] then draws nothing and returns `None`.
    pub fn none() -> Self {
        MutationOptions {
            enabled: BTreeSet::new(),
            ..MutationOptions::default()
        }
    }

    /// Only `kinds` switched on.
    pub fn only(kinds: &[MutationKind]) -> Self {
        MutationOptions {
            enabled: kinds.iter().cloned().collect(),
            ..MutationOptions::default()
        }
    }

    /// From settings values by name (`mutation.violations`, `mutation.<kind>`,
    /// `mutation.oversizedLength`, `mutation.oversizedItems`, `generation.hardNestingDepth`);
    /// a missing name takes its default. A value that does not read is an error naming it.
    pub fn from_settings(get: &dyn Fn(&str) -> Option<String>) -> Result<Self, String> {
        let flag = |name: &str| -> Result<bool, String> {
            match get(name) {
                None => Ok(true),
                Some(v) => match v.trim() {
                    "true" => Ok(true),
                    "false" => Ok(false),
                    other => Err(format!("{name}: expected true or false, found `{other}`")),
                },
            }
        };
        let number = |name: &str, default: usize| -> Result<usize, String> {
            match get(name) {
                None => Ok(default),
                Some(v) => v
                    .trim()
                    .parse::<usize>()
                    .map_err(|_| format!("{name}: expected a whole number, found `{v}`")),
            }
        };
        let mut out = MutationOptions::default();
        out.enabled.clear();
        let violations = flag("mutation.violations")?;
        for kind in MutationKind::ALL {
            // Every switch is read, so that a value that does not read is refused even when
            // the family is off.
            if flag(&format!("mutation.{}", kind.as_str()))? && violations {
                out.enabled.insert(kind);
            }
        }
        out.oversized_length = number("mutation.oversizedLength", out.oversized_length)?.max(1);
        out.oversized_items = number("mutation.oversizedItems", out.oversized_items)?.max(1);
        out.nesting_depth = number("generation.hardNestingDepth", out.nesting_depth)?;
        Ok(out)
    }
}

/// Whether an accepted request may be kept to be changed (docs/design-notes.md, Where a change never goes): not one that deleted
/// something (what it deleted is gone), not one that was itself a change or pushed at the API,
/// and only when the API answered it with a 2XX.
pub fn can_be_kept(case: &TestCase, status: u16) -> bool {
    (200..300).contains(&status)
        && !case.method.eq_ignore_ascii_case("DELETE")
        && case.mutation.is_none()
        && !matches!(case.intent, Intent::RefusalExpected | Intent::Pushing)
        && !matches!(
            case.strategy,
            crate::model::Strategy::Mutation
                | crate::model::Strategy::Fuzzing
                | crate::model::Strategy::Negative
        )
}

/// Where `kind` can go in `accepted`: places at which at least one candidate change is one the
/// document forbids. A list in the body is entered at its first element (the engine's
/// [`mutate`] draws the element instead).
pub fn places(
    op: &Operation,
    schemas: &SchemaSet,
    accepted: &TestCase,
    kind: &MutationKind,
    options: &MutationOptions,
) -> Vec<Place> {
    let ctx = operators::Ctx::new(op, schemas, accepted, options, &mut |_| 0);
    verified_places(&ctx, kind)
}

fn verified_places(ctx: &operators::Ctx<'_>, kind: &MutationKind) -> Vec<Place> {
    ctx.raw_places(kind)
        .into_iter()
        .filter(|p| {
            ctx.candidates(kind, p)
                .iter()
                .any(|c| ctx.holds(kind, p, c))
        })
        .collect()
}

/// One changed request: a kind among those switched on that have somewhere to go in
/// `accepted`, then one of its places, then one of the candidate changes there that holds,
/// each by chance from `rng`. `None` when nothing can be changed (no kind on, a request that
/// was itself a change, or nowhere for any kind to go); with no kind on, nothing is drawn.
///
/// Draws, in order: one per list on the way through the body (which element is walked); then,
/// until a change holds, one for the kind, one for the place and one for where to start among
/// the candidates there. A place where no candidate holds is struck off and the draw repeated
/// (a kind with no place left is struck off too), so only what is drawn is judged: judging every
/// place of every kind up front would cost a validation per candidate place per request.
pub fn mutate(
    op: &Operation,
    schemas: &SchemaSet,
    accepted: &TestCase,
    from: AcceptedRef,
    options: &MutationOptions,
    rng: &mut ChaCha8Rng,
) -> Option<TestCase> {
    if options.enabled.is_empty() || accepted.mutation.is_some() {
        return None;
    }
    let ctx = operators::Ctx::new(op, schemas, accepted, options, &mut |n| rng.gen_range(0..n));
    let mut table: Vec<(&MutationKind, Vec<Place>)> = options
        .enabled
        .iter()
        .map(|k| (k, ctx.raw_places(k)))
        .filter(|(_, p)| !p.is_empty())
        .collect();
    while !table.is_empty() {
        let k = rng.gen_range(0..table.len());
        let (kind, at) = (table[k].0, &table[k].1);
        let p = rng.gen_range(0..at.len());
        let place = at[p].clone();
        let candidates = ctx.candidates(kind, &place);
        if !candidates.is_empty() {
            let start = rng.gen_range(0..candidates.len());
            let chosen = (0..candidates.len())
                .map(|i| &candidates[(start + i) % candidates.len()])
                .find(|c| ctx.holds(kind, &place, c));
            if let Some(chosen) = chosen {
                return finish(&ctx, kind, &place, chosen, from);
            }
        }
        table[k].1.remove(p);
        if table[k].1.is_empty() {
            table.remove(k);
        }
    }
    None
}

/// Applies one kind at one place (the first candidate that holds, from a start drawn from
/// `rng`). For tests and for callers that walk places themselves.
// The arguments are `mutate`'s plus the kind and place it would have drawn; a struct for them
// would only rename the same list.
#[allow(clippy::too_many_arguments)]
pub fn apply(
    op: &Operation,
    schemas: &SchemaSet,
    accepted: &TestCase,
    from: AcceptedRef,
    kind: &MutationKind,
    place: &Place,
    options: &MutationOptions,
    rng: &mut ChaCha8Rng,
) -> Option<TestCase> {
    let ctx = operators::Ctx::new(op, schemas, accepted, options, &mut |_| 0);
    let candidates = ctx.candidates(kind, place);
    if candidates.is_empty() {
        return None;
    }
    let start = rng.gen_range(0..candidates.len());
    let chosen = (0..candidates.len())
        .map(|i| &candidates[(start + i) % candidates.len()])
        .find(|c| ctx.holds(kind, place, c))?;
    finish(&ctx, kind, place, chosen, from)
}

fn finish(
    ctx: &operators::Ctx<'_>,
    kind: &MutationKind,
    place: &Place,
    chosen: &operators::Candidate,
    from: AcceptedRef,
) -> Option<TestCase> {
    let mut case = operators::apply_change(ctx, place, &chosen.change)?;
    case.strategy = crate::model::Strategy::Mutation;
    case.mode = kind.as_str().into();
    case.intent = Intent::RefusalExpected;
    case.series_step = None;
    let name = place.name();
    case.mutation = Some(Mutation {
        from,
        kind: kind.clone(),
        place: name.clone(),
        description: format!("{} at {name}", chosen.what()),
    });
    Some(case)
}

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;
