//! Positive test cases: one operation, one generation mode, one random stream → one
//! [`TestCase`].
//!
//! Values come, in order, from the document's examples (example mode), the API's own
//! answers (path parameters that name an id the API handed out), then invention from the
//! schema. Each value's origin is recorded, and the case's intent follows from them
//! (docs/design-notes.md, Intents): `acceptable` only when every value comes from a source that knows the API.
//!
//! Depends on: `model`, `spec`, `schema`, `plan` (sources, dictionaries), `generate::memory`.

use std::collections::BTreeMap;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

use super::memory::{Memory, Together};
use crate::model::{
    canonical_json, CaseBody, Intent, Location, ParameterValue, SeriesStep, TestCase, ValueOrigin,
};

pub use crate::model::SERIES_MEMORY;
use crate::plan::dictionary::Dictionary;
use crate::plan::{Source, SourceStep};
use crate::schema::{GenerateError, Generator, Mode};
use crate::spec::is_json;
use crate::spec::{MediaType, Operation, Parameter};

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

/// Which of a strategy's value sources gives a value: the first step in order with a
/// source that has one (within a weighted group, one of those that have one, drawn by
/// weight). In the example mode every source is asked; in the other modes the example,
/// the default and the closed list are left to the generator, which explores the schema's
/// bounds (the document's own values are what the example mode sends), so `observed`,
/// dictionaries and invention remain. No source answering means invention.
pub fn pick_source(
    steps: &[SourceStep],
    mode: Mode,
    has: &dyn Fn(&Source) -> bool,
    rng: &mut ChaCha8Rng,
) -> Source {
    let asked = |s: &Source| {
        mode == Mode::Example || !matches!(s, Source::Example | Source::Default | Source::Enum)
    };
    for step in steps {
        match step {
            SourceStep::One(s) if asked(s) && has(s) => return s.clone(),
            SourceStep::One(_) => {}
            SourceStep::Weighted(group) => {
                let answering: Vec<&(Source, u32)> = group
                    .iter()
                    .filter(|(s, w)| *w > 0 && asked(s) && has(s))
                    .collect();
                let total: u64 = answering.iter().map(|(_, w)| *w as u64).sum();
                if total > 0 {
                    let mut at = rng.gen_range(0..total);
                    for (s, w) in &answering {
                        if at < *w as u64 {
                            return s.clone();
                        }
                        at -= *w as u64;
                    }
                }
            }
        }
    }
    Source::Invention
}

/// Values the user's dictionaries hold for `place` of `op` (`Source::Dictionary(name)`
/// asks one dictionary, `Source::Dictionaries` all of them).
fn dictionary_values<'d>(
    dictionaries: &'d [Dictionary],
    op: &Operation,
    place: &str,
    only: Option<&str>,
) -> Vec<&'d Value> {
    dictionaries
        .iter()
        .filter(|d| only.is_none_or(|n| d.name == n))
        .filter_map(|d| d.values_for(&op.key, place))
        .flatten()
        .collect()
}

/// The places under `body.` that the dictionaries name for `op`, sorted.
fn body_places(dictionaries: &[Dictionary], op: &Operation) -> Vec<String> {
    let mut places: Vec<String> = dictionaries
        .iter()
        .flat_map(|d| {
            d.entries
                .iter()
                .filter(|(o, _)| op.key.is_named(o))
                .flat_map(|(_, p)| p.keys())
        })
        .filter(|p| p.starts_with("body.") && p.len() > 5)
        .cloned()
        .collect();
    places.sort();
    places.dedup();
    places
}

/// Puts `new` at `path` (`owner`, `email`; `tags[]` is every item of `tags`) where the
/// value already has that place; returns whether it did.
fn set_at(value: &mut Value, path: &[&str], new: &Value) -> bool {
    let Some((first, rest)) = path.split_first() else {
        *value = new.clone();
        return true;
    };
    let (name, every_item) = match first.strip_suffix("[]") {
        Some(n) => (n, true),
        None => (*first, false),
    };
    let Some(child) = value.as_object_mut().and_then(|m| m.get_mut(name)) else {
        return false;
    };
    if every_item {
        let Some(items) = child.as_array_mut() else {
            return false;
        };
        let mut any = false;
        for item in items {
            any |= set_at(item, rest, new);
        }
        any
    } else {
        set_at(child, rest, new)
    }
}

/// How deep in a JSON body properties are filled from the memory of answers
/// (`{"data": {"bucket_id": …}}` is two deep).
const BODY_RECALL_DEPTH: usize = 3;

/// Fills the properties of a generated JSON body that name another resource (`bucket_id`,
/// `ownerId`; never a bare `id` or `name`, nor the property that keys the collection's items
/// (`book_title` sent to `/books/v1`): those are the new object's own) with values the
/// API handed out, when the plan's sources pick the memory for that place and the
/// property's schema takes the value. Each filled place is recorded as observed
/// (`body.data.bucket_id`) with its binding, like a parameter.
struct BodyRecall<'c, 'g> {
    op: &'c Operation,
    op_name: &'c str,
    generator: &'c Generator<'g>,
    memory: &'c Memory,
    /// The values of one answer's object the request's path took, if any.
    together: Option<&'c Together>,
    sources: &'c [SourceStep],
    mode: Mode,
    origins: &'c mut BTreeMap<String, ValueOrigin>,
    bindings: &'c mut BTreeMap<String, String>,
}

impl BodyRecall<'_, '_> {
    fn walk(
        &mut self,
        value: &mut Value,
        schema: &Value,
        place: &str,
        depth: usize,
        rng: &mut ChaCha8Rng,
    ) {
        if depth >= BODY_RECALL_DEPTH {
            return;
        }
        let Some(object) = value.as_object_mut() else {
            return;
        };
        let names: Vec<String> = object.keys().cloned().collect();
        for name in names {
            let Some(child_schema) = property_schema(self.generator.schemas(), schema, &name, 8)
            else {
                continue;
            };
            let here = format!("{place}.{name}");
            let Some(child) = object.get_mut(&name) else {
                continue;
            };
            if child.is_object() {
                self.walk(child, &child_schema, &here, depth + 1, rng);
                continue;
            }
            let normalised = super::memory::normalise(&name);
            // The memory speaks of parameters; a body property is asked like a query one
            // (by name and link, never by the path's collection).
            let (location, path) = (crate::model::Location::Query, &self.op.key.path);
            if super::memory::generic(&normalised)
                || self.memory.keys_own_item(path, &name)
                || !self.memory.knows(self.op_name, &name, location, path)
            {
                continue;
            }
            let has = |s: &Source| matches!(s, Source::Observed | Source::Invention);
            if pick_source(self.sources, self.mode, &has, rng) != Source::Observed {
                continue;
            }
            let Ok(validator) = self.generator.validator(&child_schema) else {
                continue;
            };
            let fits = |v: &Value| -> Option<Value> {
                if validator.is_valid(v) {
                    return Some(v.clone());
                }
                let text = Value::String(v.as_number()?.to_string());
                validator.is_valid(&text).then_some(text)
            };
            // A field of the object the path names goes with it (the note's own checksum).
            let grouped = self
                .together
                .filter(|_| depth == 0)
                .and_then(|t| t.get(&name))
                .and_then(|(v, b)| fits(v).map(|v| (v, b.cloned())));
            if let Some((v, source)) = grouped.or_else(|| {
                self.memory
                    .recall(self.op_name, &name, location, path, rng, &fits)
            }) {
                *child = v;
                self.origins.insert(here.clone(), ValueOrigin::Observed);
                if let Some(source) = source {
                    self.bindings.insert(here, source.to_text());
                }
            }
        }
    }
}

/// The schema of property `name` of an object schema: under `properties`, or under those
/// of an `allOf`/`anyOf`/`oneOf` member; `$ref`s followed.
fn property_schema(
    schemas: &crate::spec::SchemaSet,
    schema: &Value,
    name: &str,
    depth: usize,
) -> Option<Value> {
    let schema = schemas.deref(schema, 64)?;
    if let Some(p) = schema.get("properties").and_then(|p| p.get(name)) {
        return Some(p.clone());
    }
    if depth == 0 {
        return None;
    }
    ["allOf", "anyOf", "oneOf"]
        .iter()
        .filter_map(|k| schema.get(*k).and_then(Value::as_array))
        .flatten()
        .find_map(|member| property_schema(schemas, member, name, depth - 1))
}

/// Builds one test case from `sources` (the strategy's, see `plan`).
pub fn build_case(
    op: &Operation,
    generator: &Generator<'_>,
    plan: CasePlan,
    memory: &Memory,
    dictionaries: &[Dictionary],
    sources: &[SourceStep],
    rng: &mut ChaCha8Rng,
) -> Result<TestCase, GenerateError> {
    let mut builder = Builder {
        op,
        op_name: op.key.name(),
        generator,
        plan,
        memory,
        dictionaries,
        sources,
        origins: BTreeMap::new(),
        bindings: BTreeMap::new(),
        together: None,
    };
    builder.together = memory.together(&together_names(op, generator, memory), rng);
    let mut parameters = Vec::new();
    for p in &op.parameters {
        if !builder.carries(p, rng) {
            continue;
        }
        let (value, origin) = builder.parameter_value(p, rng)?;
        builder.origins.insert(p.name.clone(), origin);
        parameters.push(ParameterValue {
            location: p.location,
            name: p.name.clone(),
            value: canonical_json(value),
        });
    }
    parameters.sort_by(|a, b| (a.location, &a.name).cmp(&(b.location, &b.name)));
    let body = builder.body(rng)?;
    Ok(builder.into_case(parameters, body))
}

/// One case being built: what it is built from, and what it recorded so far (each value's
/// origin, and where each value the memory gave came from). Its steps draw from the one
/// random stream in a fixed order: each parameter in the document's order (whether it is
/// carried, its source, its value), then the body (its source, its value, the places the
/// dictionaries name in it, the properties the memory fills).
struct Builder<'c, 'g> {
    op: &'c Operation,
    op_name: String,
    generator: &'c Generator<'g>,
    plan: CasePlan,
    memory: &'c Memory,
    dictionaries: &'c [Dictionary],
    sources: &'c [SourceStep],
    origins: BTreeMap<String, ValueOrigin>,
    bindings: BTreeMap<String, String>,
    /// The values of one answer's object (and its parents) for this request's path and
    /// query parameters and the fields its body sends back: values that belong together.
    together: Option<Together>,
}

/// The names whose values one request takes together: its path and query parameters, and
/// the top-level fields of its JSON body that the memory learns (a `checksum` an update
/// sends back).
fn together_names(op: &Operation, generator: &Generator<'_>, memory: &Memory) -> Vec<String> {
    let mut names: Vec<String> = op
        .parameters
        .iter()
        .filter(|p| matches!(p.location, Location::Path | Location::Query))
        .map(|p| p.name.clone())
        .collect();
    let schema = preferred_media(op).and_then(|m| generator.schemas().deref(&m.schema, 64));
    if let Some(schema) = schema {
        if let Some(props) = schema.get("properties").and_then(Value::as_object) {
            names.extend(
                props
                    .keys()
                    .filter(|k| {
                        let n = super::memory::normalise(k);
                        !super::memory::generic(&n)
                            && memory.consumes(&n)
                            && !memory.keys_own_item(&op.key.path, k)
                    })
                    .cloned(),
            );
        }
    }
    names
}

impl Builder<'_, '_> {
    /// Whether the case carries parameter `p`: a required one always; an optional one when
    /// it has an example (example mode), never (min), always (max), or by a draw (random).
    fn carries(&self, p: &Parameter, rng: &mut ChaCha8Rng) -> bool {
        p.required
            || match self.plan.mode {
                Mode::Example => !p.examples.is_empty(),
                Mode::Min => false,
                Mode::Max => true,
                Mode::Random => rng.gen_bool(self.plan.optional_ratio.clamp(0.0, 1.0)),
            }
    }

    /// The value of parameter `p` and its origin: from the source the plan picks, else
    /// invented from its schema.
    fn parameter_value(
        &mut self,
        p: &Parameter,
        rng: &mut ChaCha8Rng,
    ) -> Result<(Value, ValueOrigin), GenerateError> {
        let (op, dictionaries) = (self.op, self.dictionaries);
        let schema = self
            .generator
            .schemas()
            .deref(&p.schema, 64)
            .unwrap_or(&p.schema);
        let closed: Vec<Value> = match (schema.get("enum"), schema.get("const")) {
            (Some(Value::Array(values)), _) => values.clone(),
            (_, Some(c)) => vec![c.clone()],
            _ => Vec::new(),
        };
        let has = |s: &Source| match s {
            Source::Enum => !closed.is_empty(),
            Source::Observed => self
                .memory
                .knows(&self.op_name, &p.name, p.location, &op.key.path),
            Source::Dictionaries => !dictionary_values(dictionaries, op, &p.name, None).is_empty(),
            Source::Dictionary(n) => {
                !dictionary_values(dictionaries, op, &p.name, Some(n)).is_empty()
            }
            Source::Example => !p.examples.is_empty(),
            Source::Default => schema.get("default").is_some(),
            Source::Invention => true,
        };
        let chosen = pick_source(self.sources, self.plan.mode, &has, rng);
        let picked: Option<(Value, ValueOrigin)> = match &chosen {
            Source::Enum => Some((
                closed[rng.gen_range(0..closed.len())].clone(),
                ValueOrigin::Enumeration,
            )),
            Source::Observed => self.recalled(p, rng),
            Source::Dictionaries | Source::Dictionary(_) => Some((
                self.dictionary_value(&p.name, &chosen, rng),
                ValueOrigin::Dictionary,
            )),
            Source::Example => Some((p.examples[0].clone(), ValueOrigin::Example)),
            Source::Default => schema
                .get("default")
                .map(|d| (d.clone(), ValueOrigin::Default)),
            Source::Invention => None,
        };
        let (generator, mode) = (self.generator, self.plan.mode);
        Ok(match picked {
            Some(found) => found,
            None if p.location == Location::Path => (
                generator.generate_path_value(&p.schema, mode, rng)?,
                origin_of(&p.schema, mode),
            ),
            None => (
                generator.generate(&p.schema, mode, rng)?,
                origin_of(&p.schema, mode),
            ),
        })
    }

    /// A value of the memory of answers for parameter `p`, its binding recorded. A value
    /// fits when the parameter's schema takes it; a number answered for a parameter that
    /// takes strings is sent as its text (the same path or query text), never the other
    /// way round.
    fn recalled(&mut self, p: &Parameter, rng: &mut ChaCha8Rng) -> Option<(Value, ValueOrigin)> {
        let validator = self.generator.validator(&p.schema).ok();
        let fits = |v: &Value| -> Option<Value> {
            let validator = validator.as_ref()?;
            if validator.is_valid(v) {
                return Some(v.clone());
            }
            let text = Value::String(v.as_number()?.to_string());
            validator.is_valid(&text).then_some(text)
        };
        let path = &self.op.key.path;
        let grouped = self
            .together
            .as_ref()
            .filter(|_| matches!(p.location, Location::Path | Location::Query))
            .and_then(|t| t.get(&p.name))
            .and_then(|(v, b)| fits(v).map(|v| (v, b.cloned())));
        let (v, source) = match grouped {
            Some(found) => found,
            None => self
                .memory
                .recall(&self.op_name, &p.name, p.location, path, rng, &fits)?,
        };
        if let Some(source) = source {
            self.bindings.insert(p.name.clone(), source.to_text());
        }
        Some((v, ValueOrigin::Observed))
    }

    /// One of the values the dictionaries hold for `place` (`chosen` names one dictionary,
    /// or all of them), drawn.
    fn dictionary_value(&self, place: &str, chosen: &Source, rng: &mut ChaCha8Rng) -> Value {
        let only = match chosen {
            Source::Dictionary(n) => Some(n.as_str()),
            _ => None,
        };
        let values = dictionary_values(self.dictionaries, self.op, place, only);
        values[rng.gen_range(0..values.len())].clone()
    }

    /// The case's body, when the operation takes one and the mode carries it.
    fn body(&mut self, rng: &mut ChaCha8Rng) -> Result<Option<CaseBody>, GenerateError> {
        let Some(rb) = &self.op.request_body else {
            return Ok(None);
        };
        let carry = rb.required || self.plan.mode != Mode::Min;
        let (true, Some(media)) = (carry, preferred_media(self.op)) else {
            return Ok(None);
        };
        let (mut value, origin) = self.body_value(media, rng)?;
        self.origins.insert("body".into(), origin);
        // A whole body a dictionary gives settles every place in it (docs/dictionaries.md).
        if dictionary_values(self.dictionaries, self.op, "body", None).is_empty() {
            self.dictionary_places(&mut value, rng);
        }
        if is_json(&media.media_type) {
            let mut recall = BodyRecall {
                op: self.op,
                op_name: &self.op_name,
                generator: self.generator,
                memory: self.memory,
                together: self.together.as_ref(),
                sources: self.sources,
                mode: self.plan.mode,
                origins: &mut self.origins,
                bindings: &mut self.bindings,
            };
            recall.walk(&mut value, &media.schema, "body", 0, rng);
        }
        Ok(Some(CaseBody {
            media_type: concrete_media_type(&media.media_type),
            value: canonical_json(value),
            sent_as: None,
        }))
    }

    /// The whole body and its origin: from the example or a dictionary when the plan picks
    /// one, else invented from the media type's schema.
    fn body_value(
        &mut self,
        media: &MediaType,
        rng: &mut ChaCha8Rng,
    ) -> Result<(Value, ValueOrigin), GenerateError> {
        let (op, dictionaries) = (self.op, self.dictionaries);
        let has = |s: &Source| match s {
            Source::Example => !media.examples.is_empty(),
            Source::Dictionaries => !dictionary_values(dictionaries, op, "body", None).is_empty(),
            Source::Dictionary(n) => {
                !dictionary_values(dictionaries, op, "body", Some(n)).is_empty()
            }
            Source::Invention => true,
            _ => false,
        };
        let chosen = pick_source(self.sources, self.plan.mode, &has, rng);
        Ok(match &chosen {
            Source::Example => (media.examples[0].clone(), ValueOrigin::Example),
            Source::Dictionaries | Source::Dictionary(_) => (
                self.dictionary_value("body", &chosen, rng),
                ValueOrigin::Dictionary,
            ),
            _ => (
                self.generator
                    .generate(&media.schema, self.plan.mode, rng)?,
                origin_of(&media.schema, self.plan.mode),
            ),
        })
    }

    /// Places inside the body the dictionaries name (`body.owner.email`, `body.tags[]`):
    /// each is a value source of its own, asked like a parameter.
    fn dictionary_places(&mut self, value: &mut Value, rng: &mut ChaCha8Rng) {
        let (op, dictionaries) = (self.op, self.dictionaries);
        for place in body_places(dictionaries, op) {
            let has = |s: &Source| match s {
                Source::Dictionaries => true,
                Source::Dictionary(n) => {
                    !dictionary_values(dictionaries, op, &place, Some(n)).is_empty()
                }
                _ => false,
            };
            let chosen = pick_source(self.sources, self.plan.mode, &has, rng);
            let only = match &chosen {
                Source::Dictionary(n) => Some(n.as_str()),
                Source::Dictionaries => None,
                _ => continue,
            };
            let values = dictionary_values(dictionaries, op, &place, only);
            if values.is_empty() {
                continue;
            }
            let path: Vec<&str> = place.trim_start_matches("body.").split('.').collect();
            if set_at(value, &path, values[rng.gen_range(0..values.len())]) {
                self.origins.insert(place.clone(), ValueOrigin::Dictionary);
            }
        }
    }

    /// The case, its intent following from its values' origins (docs/design-notes.md,
    /// Intents): `acceptable` only when every value comes from a source that knows the API.
    fn into_case(self, parameters: Vec<ParameterValue>, body: Option<CaseBody>) -> TestCase {
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
        let intent = if self.origins.values().all(knows_the_api) {
            Intent::Acceptable
        } else {
            Intent::Unknown
        };
        let bindings = self.bindings;
        TestCase {
            operation: self.op_name,
            method: self.op.key.method.clone(),
            path: self.op.key.path.clone(),
            parameters,
            body,
            strategy: crate::model::Strategy::Nominal,
            mode: mode_name(self.plan.mode).into(),
            origins: self.origins,
            intent,
            mutation: None,
            // Values bound from earlier answers of the run, so replay can re-resolve them.
            series_step: (!bindings.is_empty()).then(|| SeriesStep {
                series: SERIES_MEMORY.into(),
                index: 0,
                bindings,
            }),
            credentials: None,
            shrinking: None,
            identity: None,
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn steps() -> Vec<SourceStep> {
        crate::plan::Plan::default_plan().strategies[0]
            .sources
            .clone()
    }

    #[test]
    fn dictionary_places_inside_a_body_are_filled() {
        let mut v =
            serde_json::json!({"owner": {"email": "x"}, "tags": [{"label": "a"}, {"label": "b"}]});
        assert!(set_at(
            &mut v,
            &["owner", "email"],
            &serde_json::json!("me@example.com")
        ));
        assert!(set_at(
            &mut v,
            &["tags[]", "label"],
            &serde_json::json!("L")
        ));
        assert!(!set_at(&mut v, &["missing", "x"], &serde_json::json!(1)));
        assert_eq!(
            v,
            serde_json::json!({"owner": {"email": "me@example.com"}, "tags": [{"label": "L"}, {"label": "L"}]})
        );
    }

    #[test]
    fn sources_are_asked_in_the_plan_order() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let all = |_: &Source| true;
        // The closed list comes first in the example mode...
        assert_eq!(
            pick_source(&steps(), Mode::Example, &all, &mut rng),
            Source::Enum
        );
        // ...and is left to the generator otherwise; the weighted group is drawn by weight.
        let mut counts = BTreeMap::new();
        for _ in 0..3000 {
            *counts
                .entry(pick_source(&steps(), Mode::Random, &all, &mut rng))
                .or_insert(0) += 1;
        }
        assert_eq!(counts.len(), 2, "{counts:?}");
        let (observed, dictionaries) = (counts[&Source::Observed], counts[&Source::Dictionaries]);
        assert!(
            observed > dictionaries * 3 / 2,
            "observed weighs 2, dictionaries 1: {counts:?}"
        );
        // Nothing answering means invention; a default answers only in the example mode.
        let only_default = |s: &Source| matches!(s, Source::Default | Source::Invention);
        assert_eq!(
            pick_source(&steps(), Mode::Example, &only_default, &mut rng),
            Source::Default
        );
        assert_eq!(
            pick_source(&steps(), Mode::Max, &only_default, &mut rng),
            Source::Invention
        );
    }
}
