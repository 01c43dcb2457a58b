//! Positive test cases: one operation, one generation mode, one random stream → one
//! [`TestCase`].
//!
//! Values come, in order, from the document's examples (example mode), the API's own
//! answers (path parameters that name an id the API handed out), then invention from the
//! schema. Each value's origin is recorded, and the case's intent follows from them
//! (design §2): `acceptable` only when every value comes from a source that knows the API.
//!
//! Depends on: `model`, `spec`, `schema`, `engine::memory`.

use std::collections::BTreeMap;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

use crate::engine::memory::Memory;
use crate::model::{
    canonical_json, CaseBody, Intent, Location, ParameterValue, SeriesStep, TestCase, ValueOrigin,
};

/// [`SeriesStep::series`] of a case whose bound values came from the run's memory of
/// answers; its bindings map a parameter name to `<seq>#<json pointer>`.
pub const SERIES_MEMORY: &str = "memory";
use crate::oracle::is_json;
use crate::plan::dictionary::Dictionary;
use crate::schema::{GenerateError, Generator, Mode};
use crate::spec::{MediaType, Operation};

/// How a case is to be built.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CasePlan {
    pub mode: Mode,
    /// Chance that an optional parameter is carried in random mode.
    pub optional_ratio: f64,
}

/// The generation mode of the `n`-th case of an operation: example, min, max, then random.
pub fn mode_for(n: u64) -> Mode {
    match n {
        0 => Mode::Example,
        1 => Mode::Min,
        2 => Mode::Max,
        _ => Mode::Random,
    }
}

/// The name of a mode as stored in [`TestCase::mode`].
pub fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Example => "example",
        Mode::Min => "min",
        Mode::Max => "max",
        Mode::Random => "random",
    }
}

/// The request media type probe sends for an operation: JSON first, then forms, then the
/// first one declared. Wildcards become a concrete type.
pub fn preferred_media(op: &Operation) -> Option<&MediaType> {
    let content = &op.request_body.as_ref()?.content;
    content
        .iter()
        .find(|m| is_json(&m.media_type))
        .or_else(|| {
            content.iter().find(|m| {
                m.media_type
                    .starts_with("application/x-www-form-urlencoded")
            })
        })
        .or_else(|| {
            content
                .iter()
                .find(|m| m.media_type.starts_with("multipart/form-data"))
        })
        .or_else(|| content.first())
}

fn concrete_media_type(declared: &str) -> String {
    let m = declared.split(';').next().unwrap_or("").trim();
    match m {
        "*/*" | "application/*" | "" => "application/json".into(),
        "text/*" => "text/plain".into(),
        other if other.contains("*+json") => "application/json".into(),
        other => other.to_owned(),
    }
}

/// Builds one nominal test case.
pub fn build_case(
    op: &Operation,
    generator: &Generator<'_>,
    plan: CasePlan,
    memory: &Memory,
    dictionaries: &[Dictionary],
    rng: &mut ChaCha8Rng,
) -> Result<TestCase, GenerateError> {
    let mut parameters = Vec::new();
    let mut origins = BTreeMap::new();
    let mut bindings = BTreeMap::new();
    for p in &op.parameters {
        let carry = p.required
            || match plan.mode {
                Mode::Example => !p.examples.is_empty(),
                Mode::Min => false,
                Mode::Max => true,
                Mode::Random => rng.gen_bool(plan.optional_ratio.clamp(0.0, 1.0)),
            };
        if !carry {
            continue;
        }
        let from_dictionary: Vec<&Value> = dictionaries
            .iter()
            .filter_map(|d| d.values_for(&op.key, &p.name))
            .flatten()
            .collect();
        let (value, origin) = if plan.mode == Mode::Example && !p.examples.is_empty() {
            (p.examples[0].clone(), ValueOrigin::Example)
        } else if !from_dictionary.is_empty() && plan.mode != Mode::Min && rng.gen_bool(0.5) {
            // A value the user handed over: as likely as one invented from the schema.
            let v = from_dictionary[rng.gen_range(0..from_dictionary.len())].clone();
            (v, ValueOrigin::Dictionary)
        } else if let Some((v, source)) = memory
            .recall(&p.name, p.location, &op.key.path, rng)
            .filter(|(v, _)| {
                generator
                    .validator(&p.schema)
                    .is_ok_and(|val| val.is_valid(v))
            })
        {
            bindings.insert(p.name.clone(), source.to_text());
            (v, ValueOrigin::Observed)
        } else if p.location == Location::Path {
            // A path value is never empty: `/pets/` is another resource, not a test of this one.
            let schema = serde_json::json!({ "allOf": [p.schema, { "minLength": 1 }] });
            let v = generator.generate(&schema, plan.mode, rng)?;
            (v, origin_of(&p.schema, plan.mode))
        } else {
            let v = generator.generate(&p.schema, plan.mode, rng)?;
            (v, origin_of(&p.schema, plan.mode))
        };
        origins.insert(p.name.clone(), origin);
        parameters.push(ParameterValue {
            location: p.location,
            name: p.name.clone(),
            value: canonical_json(value),
        });
    }
    parameters.sort_by(|a, b| (a.location, &a.name).cmp(&(b.location, &b.name)));

    let mut body = None;
    if let Some(rb) = &op.request_body {
        let carry = rb.required || plan.mode != Mode::Min;
        if let (true, Some(media)) = (carry, preferred_media(op)) {
            let (value, origin) = if plan.mode == Mode::Example && !media.examples.is_empty() {
                (media.examples[0].clone(), ValueOrigin::Example)
            } else {
                (
                    generator.generate(&media.schema, plan.mode, rng)?,
                    origin_of(&media.schema, plan.mode),
                )
            };
            origins.insert("body".into(), origin);
            body = Some(CaseBody {
                media_type: concrete_media_type(&media.media_type),
                value: canonical_json(value),
                sent_as: None,
            });
        }
    }

    let knows_the_api = |o: &ValueOrigin| {
        matches!(
            o,
            ValueOrigin::Enumeration
                | ValueOrigin::Observed
                | ValueOrigin::Dictionary
                | ValueOrigin::Example
                | ValueOrigin::Default
        )
    };
    let intent = if origins.values().all(knows_the_api) {
        Intent::Acceptable
    } else {
        Intent::Unknown
    };
    Ok(TestCase {
        operation: op.key.name(),
        method: op.key.method.clone(),
        path: op.key.path.clone(),
        parameters,
        body,
        strategy: "nominal".into(),
        mode: mode_name(plan.mode).into(),
        origins,
        intent,
        mutation: None,
        // Values bound from earlier answers of the run, so replay can re-resolve them.
        series_step: (!bindings.is_empty()).then(|| SeriesStep {
            series: SERIES_MEMORY.into(),
            index: 0,
            bindings,
        }),
    })
}

/// Where a generated value came from: a closed list, the schema's example or default in
/// example mode, else invention.
fn origin_of(schema: &Value, mode: Mode) -> ValueOrigin {
    if schema.get("enum").is_some() || schema.get("const").is_some() {
        ValueOrigin::Enumeration
    } else if mode == Mode::Example && schema.get("examples").is_some() {
        ValueOrigin::Example
    } else if mode == Mode::Example && schema.get("default").is_some() {
        ValueOrigin::Default
    } else {
        ValueOrigin::Invention
    }
}
