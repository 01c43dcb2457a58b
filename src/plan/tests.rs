//! Plan parsing (golden and strict refusals) and the RNG discipline the engine must follow.

use std::collections::BTreeMap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;

use super::*;
use crate::ids::{CaseId, Digest};
use crate::model::AcceptedRef;
use crate::model::{CaseBody, Intent, Location, ParameterValue, TestCase};
use crate::mutate::{self, MutationOptions};

#[test]
fn the_shipped_plan() {
    let p = Plan::default_plan();
    let shares: Vec<(&str, StrategyKind, u32)> = p
        .strategies
        .iter()
        .map(|s| (s.name.as_str(), s.kind, s.share))
        .collect();
    assert_eq!(
        shares,
        vec![
            ("nominal", StrategyKind::Nominal, 60),
            ("mutation", StrategyKind::Mutation, 30),
            ("fuzzing", StrategyKind::Fuzzing, 10)
        ]
    );
    assert_eq!(p.strategies[0].sources, p.strategies[1].sources);
    assert_eq!(
        p.strategies[0].sources[1],
        SourceStep::Weighted(vec![
            (Source::Observed, 2),
            (Source::Dictionaries, 1),
            (Source::Example, 1)
        ])
    );
    assert!(p.mutates());
}

#[test]
fn the_example_file_reads() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/plans/example.yaml");
    let p = Plan::load(&path).expect("the example plan loads");
    assert_eq!(p.strategies.len(), 3);
    assert_eq!(
        p.strategies[2].sources[0],
        SourceStep::One(Source::Dictionary("petshop-ids".into()))
    );
    assert_eq!(p.strategy("careful").map(|s| s.share), Some(3));
    let default =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/plans/default.yaml");
    let d = Plan::load(&default).expect("the default plan file loads");
    assert_eq!(d.strategies, Plan::default_plan().strategies);
}

fn refused(text: &str) -> String {
    match Plan::parse(text, "my-plan.yaml") {
        Ok(_) => panic!("accepted: {text}"),
        Err(e) => {
            assert_eq!(e.file, "my-plan.yaml");
            e.to_string()
        }
    }
}

#[test]
fn strict_refusals_name_the_file_and_the_place() {
    let m = refused("version: 1\nstrategies:\n  - name: a\n    share: 1\n    sources: [invention]\n    weight: 3\n");
    assert!(m.starts_with("my-plan.yaml: "), "{m}");
    assert!(
        m.contains("strategies[0]") && m.contains("unknown field `weight`") && m.contains("line 6"),
        "{m}"
    );
    let m = refused("version: 1\nversion: 1\nstrategies: []\n");
    assert!(m.contains("duplicate"), "{m}");
    let m = refused("version: 1\nstrategies:\n  - name: a\n    share: 1\n    sources: [{weighted: {observed: 1, observed: 2}}]\n");
    assert!(m.contains("duplicate entry with key \"observed\""), "{m}");
    let m = refused("version: 2\nstrategies:\n  - {name: a, share: 1, sources: [invention]}\n");
    assert!(m.contains("version") && m.contains("the number 2"), "{m}");
    let m = refused("version: 1\nstrategies:\n  - {name: a, share: 0, sources: [invention]}\n");
    assert!(m.contains("strategies[0].share"), "{m}");
    let m = refused("version: 1\nstrategies:\n  - {name: a, share: 1, sources: [guesswork]}\n");
    assert!(
        m.contains("strategies[0].sources[0]") && m.contains("guesswork"),
        "{m}"
    );
    let m = refused("version: 1\nstrategies:\n  - {name: a, share: 1, sources: [invention]}\n  - {name: a, share: 1, sources: [invention]}\n");
    assert!(m.contains("strategies[1].name"), "{m}");
    let m = refused(
        "version: 1\nstrategies:\n  - {name: a, kind: chaos, share: 1, sources: [invention]}\n",
    );
    assert!(m.contains("strategies[0].kind"), "{m}");
    let m = refused(
        "version: 1\nstrategies:\n  - {name: a, share: 1, sources: [invention, invention]}\n",
    );
    assert!(m.contains("named twice"), "{m}");
    let m = refused("version: 1\nstrategies:\n  - {name: a, share: 1, sources: []}\n");
    assert!(m.contains("sources"), "{m}");
}

#[test]
fn a_plan_that_cannot_be_read_is_an_error_naming_it() {
    let e = Plan::load(std::path::Path::new("/nonexistent/plan.yaml")).expect_err("no file");
    assert_eq!(e.file, "/nonexistent/plan.yaml");
    assert!(e.message.contains("cannot be read"));
}

#[test]
fn shares_count_against_each_other() {
    let p = Plan::parse(
        "version: 1\nstrategies:\n  - {name: a, share: 1, sources: [invention]}\n  - {name: b, share: 1, sources: [invention]}\n  - {name: c, share: 2, sources: [invention]}\n",
        "t",
    )
    .expect("reads");
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let mut counts: BTreeMap<String, u32> = BTreeMap::new();
    for _ in 0..8000 {
        *counts
            .entry(
                p.pick_strategy(&mut rng)
                    .map(|s| s.name.clone())
                    .unwrap_or_default(),
            )
            .or_default() += 1;
    }
    let c = counts.get("c").copied().unwrap_or(0);
    assert!((3700..4300).contains(&c), "{counts:?}");
    // One draw per pick, always.
    let mut a = ChaCha8Rng::seed_from_u64(1);
    let mut b = ChaCha8Rng::seed_from_u64(1);
    p.pick_strategy(&mut a);
    let _: u64 = b.gen_range(0..4);
    assert_eq!(a, b);
    let empty = Plan {
        source: "t".into(),
        strategies: Vec::new(),
    };
    let before = a.clone();
    assert!(empty.pick_strategy(&mut a).is_none());
    assert_eq!(a, before);
}

// --- A model of the engine, following the discipline in the module docs. ---

const DOC: &str = r#"
openapi: 3.1.0
info: {title: t, version: "1"}
paths:
  /pets:
    post:
      operationId: addPet
      parameters:
        - {name: limit, in: query, required: true, schema: {type: integer, minimum: 1, maximum: 100}}
      requestBody:
        required: true
        content:
          application/json:
            schema: {type: object, required: [name], properties: {name: {type: string, maxLength: 8}}}
      responses: {'200': {description: ok}}
"#;

/// Builds from sources: every draw from the generation stream.
fn from_sources(op: &crate::spec::Operation, _strategy: &str, gen: &mut ChaCha8Rng) -> TestCase {
    let limit: i64 = gen.gen_range(1..=100);
    let len = gen.gen_range(1..=8);
    let name: String = (0..len)
        .map(|_| gen.gen_range(b'a'..=b'z') as char)
        .collect();
    TestCase {
        operation: op.key.name(),
        method: op.key.method.clone(),
        path: op.key.path.clone(),
        parameters: vec![ParameterValue {
            location: Location::Query,
            name: "limit".into(),
            value: json!(limit),
        }],
        body: Some(CaseBody {
            media_type: "application/json".into(),
            value: json!({ "name": name }),
            sent_as: None,
        }),
        strategy: crate::model::Strategy::Nominal,
        mode: "random".into(),
        origins: BTreeMap::new(),
        intent: Intent::Unknown,
        mutation: None,
        series_step: None,
        credentials: None,
        shrinking: None,
        identity: None,
    }
}

fn run(plan: &Plan, options: &MutationOptions, seed: u64) -> Vec<TestCase> {
    let api = crate::spec::parse(DOC.as_bytes(), "t.yaml", None).expect("loads");
    let op = &api.operations[0];
    let stream = |purpose: u64| {
        let mut r = ChaCha8Rng::seed_from_u64(seed);
        r.set_stream(purpose);
        r
    };
    let (mut plan_rng, mut gen, mut mutation_rng) = (stream(1), stream(2), stream(3));
    let mut kept: Vec<TestCase> = Vec::new();
    let mut sent = Vec::new();
    for i in 0..300u32 {
        let s = plan.pick_strategy(&mut plan_rng).expect("a strategy");
        let case = match s.kind {
            StrategyKind::Mutation => {
                let changed = if options.enabled.is_empty() || kept.is_empty() {
                    None
                } else {
                    let pick = mutation_rng.gen_range(0..kept.len());
                    let from = AcceptedRef {
                        case: CaseId(Digest::of(&i.to_le_bytes())),
                        seq: 0,
                    };
                    mutate::mutate(
                        op,
                        &api.schemas,
                        &kept[pick],
                        from,
                        options,
                        &mut mutation_rng,
                    )
                };
                changed.unwrap_or_else(|| from_sources(op, &s.name, &mut gen))
            }
            StrategyKind::Nominal => from_sources(op, &s.name, &mut gen),
            StrategyKind::Fuzzing => {
                let base = from_sources(op, &s.name, &mut gen);
                mutate::awkward::push(op, &api.schemas, &base, &mut gen)
            }
        };
        // The fixture API accepts what does not expect a refusal.
        let status = if case.intent == Intent::RefusalExpected {
            400
        } else {
            200
        };
        if options.enabled.is_empty() {
            // With every kind off nothing listens for accepted requests (docs/design-notes.md, Fallback).
        } else if mutate::can_be_kept(&case, status) {
            kept.push(case.clone());
            if kept.len() > 8 {
                kept.remove(0);
            }
        }
        sent.push(case);
    }
    sent
}

#[test]
fn engine_discipline_operators_off_sends_what_the_plan_without_them_sends() {
    let shipped = Plan::default_plan();
    let mut without = shipped.clone();
    for s in &mut without.strategies {
        if s.kind == StrategyKind::Mutation {
            s.kind = StrategyKind::Nominal;
        }
    }
    for seed in [1u64, 2, 3] {
        let off = run(&shipped, &MutationOptions::none(), seed);
        let plain = run(&without, &MutationOptions::default(), seed);
        assert_eq!(off, plain, "seed {seed}");
        let on = run(&shipped, &MutationOptions::default(), seed);
        assert_ne!(on, off, "with the operators on, something is changed");
        assert!(on
            .iter()
            .any(|c| c.strategy == crate::model::Strategy::Mutation && c.mutation.is_some()));
        // The same seed repeats the run.
        assert_eq!(on, run(&shipped, &MutationOptions::default(), seed));
    }
}
