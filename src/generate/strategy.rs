//! Which test case comes next for an operation: the plan's strategy (nominal, mutation,
//! fuzzing), then the strategy's work.
//!
//! Every operation has its own random streams, one per purpose (docs/determinism.md; the RNG
//! discipline of `plan` and `mutate`):
//! - `plan`: exactly one draw per case after the opening lap, the strategy;
//! - `nominal`: every value a case is built from (also the fallback of the other strategies);
//! - `mutation`: which accepted request, which kind, which place;
//! - `negative`: the base of single-violation negatives;
//! - `fuzzing`: which value is replaced by which awkward one.
//!
//! So a mutation strategy that has nothing to change falls back to exactly the draws a
//! nominal strategy would make: with `mutation.violations=false` a run sends what the same
//! plan without the operators sends.
//!
//! Depends on: `generate::{cases, memory}`, `mutate`, `plan`, `schema`, `spec`, `model`.

use rand_chacha::ChaCha8Rng;

use super::cases::{build_case, mode_for, CasePlan};
use super::memory::Memory;
use super::stream;
use crate::model::{AcceptedRef, TestCase};
use crate::mutate::memory::AcceptedMemory;
use crate::mutate::violations::{self, Cursor, Site};
use crate::mutate::{self, awkward, MutationOptions};
use crate::plan::dictionary::Dictionary;
use crate::plan::{Plan, Source, SourceStep, StrategyKind};
use crate::schema::{GenerateError, Generator, Mode};
use crate::spec::Api;

/// What an operation's next case is made with, for the whole run.
pub struct Strategies<'a> {
    pub api: &'a Api,
    pub generator: Generator<'a>,
    pub plan: Plan,
    pub mutation: MutationOptions,
    pub dictionaries: Vec<Dictionary>,
    pub optional_ratio: f64,
    /// Whether single-violation negatives are built (`mutation.violations`).
    pub negatives: bool,
    /// Accepted requests kept to be changed.
    pub accepted: AcceptedMemory,
}

/// One operation's streams and counters.
pub struct OperationState {
    nominal: ChaCha8Rng,
    plan: ChaCha8Rng,
    mutation: ChaCha8Rng,
    negative: ChaCha8Rng,
    fuzzing: ChaCha8Rng,
    /// Nominal builds so far (decides the generation mode).
    built: u64,
    sites: Option<Vec<Site>>,
    cursor: Cursor,
}

impl OperationState {
    pub fn new(seed: u64, operation: &str) -> OperationState {
        OperationState {
            nominal: stream(seed, operation, "nominal"),
            plan: stream(seed, operation, "plan"),
            mutation: stream(seed, operation, "mutation"),
            negative: stream(seed, operation, "negative"),
            fuzzing: stream(seed, operation, "fuzzing"),
            built: 0,
            sites: None,
            cursor: Cursor::new(),
        }
    }
}

impl Strategies<'_> {
    fn nominal(
        &self,
        op: usize,
        state: &mut OperationState,
        memory: &Memory,
        sources: &[SourceStep],
    ) -> Result<TestCase, GenerateError> {
        let plan = CasePlan {
            mode: mode_for(state.built),
            optional_ratio: self.optional_ratio,
        };
        state.built += 1;
        build_case(
            &self.api.operations[op],
            &self.generator,
            plan,
            memory,
            &self.dictionaries,
            sources,
            &mut state.nominal,
        )
    }

    /// The sources of the plan's first nominal strategy (the opening lap builds from them).
    fn nominal_sources(&self) -> Vec<SourceStep> {
        self.plan
            .strategies
            .iter()
            .find(|s| s.kind == StrategyKind::Nominal)
            .map(|s| s.sources.clone())
            .unwrap_or_else(|| vec![SourceStep::One(Source::Invention)])
    }

    /// The next case of operation `op`. The opening lap sends nominal cases only.
    pub fn next_case(
        &self,
        op: usize,
        state: &mut OperationState,
        memory: &Memory,
        opening: bool,
    ) -> Result<TestCase, GenerateError> {
        if opening {
            return self.nominal(op, state, memory, &self.nominal_sources());
        }
        let Some(strategy) = self.plan.pick_strategy(&mut state.plan) else {
            return self.nominal(op, state, memory, &self.nominal_sources());
        };
        let (kind, sources) = (strategy.kind, strategy.fallback_sources());
        let operation = &self.api.operations[op];
        match kind {
            StrategyKind::Mutation => {
                if let Some(changed) = self.change(op, state) {
                    return Ok(changed);
                }
                self.nominal(op, state, memory, sources)
            }
            StrategyKind::Fuzzing => {
                let base = self.nominal(op, state, memory, sources)?;
                Ok(awkward::push(
                    operation,
                    &self.api.schemas,
                    &base,
                    &mut state.fuzzing,
                ))
            }
            // A case records what built it, not the plan's name for the strategy, so that
            // two plans that build alike send (and store) alike.
            StrategyKind::Nominal => self.nominal(op, state, memory, sources),
        }
    }

    /// One change of an accepted request, or, while nothing is accepted, the next
    /// single-violation negative. `None` when neither is possible (the caller falls back).
    fn change(&self, op: usize, state: &mut OperationState) -> Option<TestCase> {
        if self.mutation.enabled.is_empty() {
            return None;
        }
        let operation = &self.api.operations[op];
        let name = operation.key.name();
        if let Some((from, accepted)) = self.accepted.pick(&name, &mut state.mutation) {
            return mutate::mutate(
                operation,
                &self.api.schemas,
                accepted,
                *from,
                &self.mutation,
                &mut state.mutation,
            );
        }
        if !self.negatives {
            return None;
        }
        let sites = state
            .sites
            .get_or_insert_with(|| violations::sites(operation, &self.api.schemas));
        if sites.is_empty() {
            return None;
        }
        let plan = CasePlan {
            mode: Mode::Random,
            optional_ratio: 1.0,
        };
        let base = build_case(
            operation,
            &self.generator,
            plan,
            &Memory::default(),
            &[],
            &[SourceStep::One(Source::Invention)],
            &mut state.negative,
        )
        .ok()?;
        state
            .cursor
            .next(operation, &self.api.schemas, sites, &base)
            .map(|n| n.case)
    }

    /// Keeps an answered request to be changed later, when the operators are on.
    pub fn offer(&mut self, case: TestCase, from: AcceptedRef, status: u16) {
        if !self.mutation.enabled.is_empty() {
            self.accepted.offer(case, from, status);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::memory::Memory;
    use crate::ids::{CaseId, Digest};
    use crate::schema::{Direction, GenerateOptions};

    fn demo() -> Api {
        crate::spec::parse(crate::fixture::demo::DOCUMENT.as_bytes(), "demo.yaml", None)
            .expect("the demo document loads")
    }

    #[test]
    fn the_mutation_strategy_changes_an_accepted_request() {
        let api = demo();
        let op = api
            .operations
            .iter()
            .position(|o| o.key.name() == "createPet")
            .expect("createPet");
        let mut strategies = Strategies {
            api: &api,
            generator: Generator::new(
                &api.schemas,
                GenerateOptions {
                    direction: Direction::Request,
                    ..GenerateOptions::default()
                },
            ),
            plan: Plan::default_plan(),
            mutation: MutationOptions::default(),
            dictionaries: Vec::new(),
            optional_ratio: 0.5,
            negatives: true,
            accepted: AcceptedMemory::new(8),
        };
        let mut state = OperationState::new(1, "createPet");
        let memory = Memory::default();
        let accepted = strategies
            .next_case(op, &mut state, &memory, true)
            .expect("a case");
        strategies.offer(
            accepted,
            AcceptedRef {
                case: CaseId(Digest::of(b"x")),
                seq: 0,
            },
            201,
        );
        let mut changed = 0;
        for _ in 0..60 {
            let case = strategies
                .next_case(op, &mut state, &memory, false)
                .expect("a case");
            if let Some(m) = &case.mutation {
                changed += 1;
                assert_eq!(m.from.seq, 0);
                assert_eq!(case.intent, crate::model::Intent::RefusalExpected);
            }
        }
        assert!(
            changed > 5,
            "about 30% of cases are changes, got {changed} of 60"
        );
    }
}
