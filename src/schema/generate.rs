//! The value generator: one walk over a schema that builds a value, then re-validation.
//!
//! [`Generator::generate`] walks the schema with the requested [`Mode`], following `$ref`s
//! through the [`SchemaSet`] with a depth count. Past `max_depth` the walk takes the smallest
//! option everywhere (null where allowed, `minItems` items, no optional property), so recursive
//! shapes end; a shape whose *required* properties recurse still ends at a hard limit, with
//! [`GenerateError::Recursion`]. The value is then validated against the schema (formats on);
//! a value that fails is regenerated in random mode a bounded number of times, and the caller
//! gets an error saying why rather than a wrong value.
//!
//! Determinism: every choice is drawn from the caller's RNG in a fixed order, objects are built
//! in the schema's property order (serde_json keeps insertion order), and no hash-map order is
//! ever observed, so the same schema, mode and RNG state give the same value byte for byte. The
//! caches (validators, parsed patterns) never draw random numbers.
//!
//! Depends only on [`SchemaSet`] within probe.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Map, Value};

use super::format;
use super::key::SchemaMap;
use super::keyword::Keywords;
use super::merge::{self, MergeError};
use super::regex_gen::{PatternError, RegexGen};
use super::validate::{self, ValidateOptions, Validator, ValidatorCache};
use super::{GenerateError, GenerateOptions, Mode};
use crate::spec::model::SchemaSet;

/// Values built per `generate` call before giving up (the first in the requested mode, the
/// rest random).
const ATTEMPTS: usize = 24;
/// `$ref`s followed beyond `max_depth` before a required recursion is declared infinite.
const DEPTH_SLACK: usize = 8;
/// Tries for a value that does not match `not`, or a distinct array item.
const LOCAL_TRIES: usize = 8;
/// The largest `minLength` the generator honours (a larger one is refused, not allocated).
const MAX_MIN_SIZE: usize = 100_000;
/// The largest `minItems`/`minProperties` the generator honours.
const MAX_MIN_COUNT: usize = 1_000;
/// Values built in one walk before the walk takes the smallest option everywhere, so that a
/// shape with many optional recursive properties cannot grow exponentially in `max` mode.
const NODE_BUDGET: usize = 2_000;

/// Builds values for schemas of one [`SchemaSet`]. Cheap to share: `&self` methods, with
/// internal caches behind mutexes.
pub struct Generator<'a> {
    schemas: &'a SchemaSet,
    options: GenerateOptions,
    validators: ValidatorCache,
    /// `allOf` and `$ref`-with-siblings merges, done once per schema object: a value is
    /// generated from the same few schemas again and again.
    flattened: SchemaMap<Result<Arc<Map<String, Value>>, MergeError>>,
    /// Path parameters' schemas made ready once ([`Generator::generate_path_value`]).
    path_schemas: SchemaMap<Arc<PathSchema>>,
    patterns: Mutex<HashMap<String, Result<Arc<RegexGen>, PatternError>>>,
}

/// A path parameter's schema made ready for [`Generator::generate_path_value`].
struct PathSchema {
    /// `{"allOf": [schema, {"minLength": 1}]}`: what every value is checked against.
    checked: Value,
    /// `checked` with its `allOf` merged, walked instead of it; `None` when the merge fails.
    merged: Option<Value>,
    validator: Arc<Validator>,
}

impl std::fmt::Debug for Generator<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Generator")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl<'a> Generator<'a> {
    pub fn new(schemas: &'a SchemaSet, options: GenerateOptions) -> Self {
        Generator {
            schemas,
            options,
            validators: ValidatorCache::default(),
            flattened: SchemaMap::default(),
            path_schemas: SchemaMap::default(),
            patterns: Mutex::new(HashMap::new()),
        }
    }

    /// The shared schemas references resolve into.
    pub fn schemas(&self) -> &'a SchemaSet {
        self.schemas
    }

    pub fn options(&self) -> &GenerateOptions {
        &self.options
    }

    /// A value valid against `schema`, re-validated before it is returned; regenerated a
    /// bounded number of times, else an error saying why (never silently wrong).
    pub fn generate(
        &self,
        schema: &Value,
        mode: Mode,
        rng: &mut ChaCha8Rng,
    ) -> Result<Value, GenerateError> {
        let validator = self.validator(schema)?;
        self.generate_checked(schema, schema, &validator, mode, rng)
    }

    /// [`Generator::generate`] for a path parameter: a value of `schema` that is at least
    /// one character long, for a path value is never empty (`/pets/` is another resource,
    /// not a test of this one). The schema that says so, its validator and its merged form
    /// are made once per parameter schema: a run generates the same path parameters again
    /// and again, and looking the three up by schema for every value cost 2% of a run's
    /// instructions against a one-parameter API.
    pub fn generate_path_value(
        &self,
        schema: &Value,
        mode: Mode,
        rng: &mut ChaCha8Rng,
    ) -> Result<Value, GenerateError> {
        let ready = self.path_schemas.get_or_try_insert_with(schema, || {
            let checked = serde_json::json!({ "allOf": [schema, { "minLength": 1 }] });
            let validator = self.validator(&checked)?;
            // The walk would merge the `allOf` first thing; merged here once, it walks the
            // result directly, which draws the same random numbers. A merge that fails is
            // left to the walk, which reports it where it happens.
            let merged = checked
                .as_object()
                .and_then(|map| self.flatten(map).ok())
                .map(|m| Value::Object((*m).clone()));
            Ok::<_, GenerateError>(Arc::new(PathSchema {
                checked,
                merged,
                validator,
            }))
        })?;
        let walked = ready.merged.as_ref().unwrap_or(&ready.checked);
        self.generate_checked(&ready.checked, walked, &ready.validator, mode, rng)
    }

    /// The generation loop: values walked from `walked` (`schema` itself or its merged
    /// form), each checked by `validator`, which is `schema`'s.
    fn generate_checked(
        &self,
        schema: &Value,
        walked: &Value,
        validator: &Validator,
        mode: Mode,
        rng: &mut ChaCha8Rng,
    ) -> Result<Value, GenerateError> {
        let mut last_reason = std::borrow::Cow::Borrowed("no attempt made");
        let mut build_errors = 0;
        for attempt in 0..ATTEMPTS {
            let mode = match (attempt, mode) {
                (0, m) => m,
                (1, m @ (Mode::Min | Mode::Max)) => m,
                _ => Mode::Random,
            };
            let mut build = Build {
                g: self,
                mode,
                rng: &mut *rng,
                nodes: 0,
            };
            match build.value(walked, 0, &Path::ROOT) {
                Ok(v) => {
                    if validator.is_valid(&v) {
                        return Ok(v);
                    }
                    last_reason = validator
                        .first_error(&v)
                        .map(|m| truncate(&m, 300).into())
                        .unwrap_or("value failed validation".into());
                }
                Err(e) => {
                    // A choice may have led to an impossible branch; a few more tries tell
                    // that from a schema that admits nothing.
                    build_errors += 1;
                    if build_errors >= 6 || matches!(e, GenerateError::Schema(_)) {
                        return Err(e);
                    }
                    last_reason = e.to_string().into();
                }
            }
        }
        Err(GenerateError::Exhausted {
            pointer: root_pointer(schema),
            attempts: ATTEMPTS,
            reason: last_reason.into_owned(),
        })
    }

    /// Whether the schema can produce any value at all (for the loader/engine to skip
    /// operations with a reason).
    pub fn can_generate(&self, schema: &Value) -> Result<(), GenerateError> {
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        match self.generate(schema, Mode::Min, &mut rng) {
            Ok(_) => Ok(()),
            Err(first) => match self.generate(schema, Mode::Random, &mut rng) {
                Ok(_) => Ok(()),
                Err(_) => Err(first),
            },
        }
    }

    /// The cached validator generated values are checked against (direction-adjusted,
    /// formats asserted).
    pub fn validator(&self, schema: &Value) -> Result<Arc<Validator>, GenerateError> {
        Ok(self.validators.get_with(schema, || {
            Validator::new_for(
                self.schemas,
                schema,
                ValidateOptions {
                    check_formats: true,
                },
                self.options.direction,
            )
        })?)
    }

    /// `schema` (an object) flattened into one object without `allOf` and a top-level `$ref`
    /// ([`merge::flatten`]), merged once per schema.
    fn flatten(&self, schema: &Map<String, Value>) -> Result<Arc<Map<String, Value>>, MergeError> {
        self.flattened
            .get_or_try_insert_with_map(schema, || {
                Ok::<_, MergeError>(merge::flatten(self.schemas, schema).map(Arc::new))
            })
            .and_then(|r| r)
    }

    fn pattern(&self, pattern: &str) -> Result<Arc<RegexGen>, PatternError> {
        let mut map = self.patterns.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(r) = map.get(pattern) {
            return r.clone();
        }
        let r = RegexGen::new(pattern).map(Arc::new);
        map.insert(pattern.to_string(), r.clone());
        r
    }

    fn hard_limit(&self) -> usize {
        self.options.max_depth + DEPTH_SLACK
    }
}

/// `s` cut to at most `max` characters (error messages quote whole values).
fn truncate(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((at, _)) => format!("{}...", &s[..at]),
        None => s.to_string(),
    }
}

fn root_pointer(schema: &Value) -> String {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(r) => r.to_string(),
        None => "#".to_string(),
    }
}

/// Where in the schema the walk is, rendered only when an error needs it.
#[derive(Clone, Copy)]
struct Path<'p> {
    parent: Option<&'p Path<'p>>,
    seg: Seg<'p>,
}

#[derive(Clone, Copy)]
enum Seg<'p> {
    Root,
    Ref(&'p str),
    Key(&'p str),
    Index(usize),
}

impl<'p> Path<'p> {
    const ROOT: Path<'static> = Path {
        parent: None,
        seg: Seg::Root,
    };

    fn child(&'p self, seg: Seg<'p>) -> Path<'p> {
        Path {
            parent: Some(self),
            seg,
        }
    }

    /// A JSON pointer from the nearest `$ref` target (or the root schema).
    fn render(&self) -> String {
        let mut segs = Vec::new();
        let mut at = Some(self);
        let mut base = "#".to_string();
        while let Some(p) = at {
            match p.seg {
                Seg::Root => break,
                Seg::Ref(r) => {
                    base = r.to_string();
                    break;
                }
                Seg::Key(k) => segs.push(k.replace('~', "~0").replace('/', "~1")),
                Seg::Index(i) => segs.push(i.to_string()),
            }
            at = p.parent;
        }
        segs.reverse();
        let mut out = base;
        for s in segs {
            out.push('/');
            out.push_str(&s);
        }
        out
    }
}

/// Keywords that annotate and never constrain: a `$ref` beside only these is a plain reference.
fn is_annotation(key: &str) -> bool {
    matches!(
        key,
        "description"
            | "title"
            | "summary"
            | "example"
            | "examples"
            | "default"
            | "deprecated"
            | "readOnly"
            | "writeOnly"
            | "$comment"
            | "externalDocs"
            | "xml"
    ) || key.starts_with("x-")
}

fn merge_error(e: MergeError, path: &Path) -> GenerateError {
    match e {
        MergeError::Dangling(reference) => GenerateError::DanglingRef {
            pointer: path.render(),
            reference,
        },
        MergeError::Circular => GenerateError::Unsatisfiable {
            pointer: path.render(),
            reason: "allOf refers back to itself".into(),
        },
        MergeError::False => GenerateError::Unsatisfiable {
            pointer: path.render(),
            reason: "allOf contains a false schema".into(),
        },
    }
}

fn unsat(path: &Path, reason: impl Into<String>) -> GenerateError {
    GenerateError::Unsatisfiable {
        pointer: path.render(),
        reason: reason.into(),
    }
}

/// One walk: the generator, the mode, the RNG.
struct Build<'g, 'a, 'r> {
    g: &'g Generator<'a>,
    mode: Mode,
    rng: &'r mut ChaCha8Rng,
    /// Schemas visited so far in this walk.
    nodes: usize,
}

impl Build<'_, '_, '_> {
    /// Whether to take the smallest option: past the depth limit or the node budget.
    fn shrinking(&self, depth: usize) -> bool {
        depth >= self.g.options.max_depth || self.nodes > NODE_BUDGET
    }

    fn value(&mut self, schema: &Value, depth: usize, path: &Path) -> Result<Value, GenerateError> {
        self.nodes += 1;
        let map = match schema {
            Value::Object(map) => map,
            Value::Bool(false) => return Err(unsat(path, "the false schema admits no value")),
            _ => return Ok(self.any(depth)),
        };
        if let Some(r) = map.keyword("$ref").and_then(Value::as_str) {
            if depth + 1 > self.g.hard_limit() {
                return Err(GenerateError::Recursion {
                    pointer: r.to_string(),
                    depth: self.g.options.max_depth,
                });
            }
            if map.keys().all(|k| k == "$ref" || is_annotation(k)) {
                let target =
                    self.g
                        .schemas
                        .resolve_ref(r)
                        .ok_or_else(|| GenerateError::DanglingRef {
                            pointer: path.render(),
                            reference: r.to_string(),
                        })?;
                // Annotations beside the reference (an example) win over the target's.
                if self.mode == Mode::Example {
                    if let Some(v) = example_of(map) {
                        return Ok(v.clone());
                    }
                }
                let child = path.child(Seg::Ref(r));
                return self.value(target, depth + 1, &child);
            }
            let flat = self.g.flatten(map).map_err(|e| merge_error(e, path))?;
            return self.schema(&flat, depth + 1, path);
        }
        if map.has_keyword("allOf") {
            let flat = self.g.flatten(map).map_err(|e| merge_error(e, path))?;
            return self.schema(&flat, depth, path);
        }
        self.schema(map, depth, path)
    }

    /// A schema object without `$ref` and `allOf`.
    fn schema(
        &mut self,
        map: &Map<String, Value>,
        depth: usize,
        path: &Path,
    ) -> Result<Value, GenerateError> {
        if let Some(c) = map.keyword("const") {
            return Ok(c.clone());
        }
        if self.mode == Mode::Example {
            if let Some(v) = example_of(map) {
                return Ok(v.clone());
            }
        }
        if let (Some(d), Seg::Ref(r), false, false) = (
            map.keyword("discriminator"),
            path.seg,
            map.has_keyword("oneOf"),
            map.has_keyword("anyOf"),
        ) {
            // Inheritance (`Cat: allOf [Pet, ...]`, Pet carrying the discriminator): the value
            // names the schema it was built from.
            if let Some((name, value)) = discriminator_value(d, &serde_json::json!({ "$ref": r })) {
                let free = map
                    .get("properties")
                    .and_then(|p| p.get(&name))
                    .and_then(Value::as_object)
                    .is_none_or(|ps| !ps.has_keyword("enum") && !ps.has_keyword("const"));
                if free {
                    let mut with = map.clone();
                    with.remove("discriminator");
                    set_discriminator(&mut with, name, value);
                    return self.schema(&with, depth, path);
                }
            }
        }
        if let Some(branches) = map.keyword("oneOf").and_then(Value::as_array) {
            return self.choice(map, "oneOf", branches, depth, path);
        }
        if let Some(branches) = map.keyword("anyOf").and_then(Value::as_array) {
            return self.choice(map, "anyOf", branches, depth, path);
        }
        if let Some(not) = map.keyword("not") {
            let rest: Map<String, Value> = map
                .iter()
                .filter(|(k, _)| k.as_str() != "not")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let refuse = self.g.validator(not)?;
            let saved = self.mode;
            let mut found = None;
            for _ in 0..LOCAL_TRIES {
                let v = self.schema(&rest, depth, path);
                match v {
                    Ok(v) if !refuse.is_valid(&v) => {
                        found = Some(Ok(v));
                        break;
                    }
                    Ok(_) => {}
                    Err(e) => {
                        found = Some(Err(e));
                        break;
                    }
                }
                // The same mode would build the same value again.
                self.mode = Mode::Random;
            }
            self.mode = saved;
            return found.unwrap_or_else(|| Err(unsat(path, "every value built matched `not`")));
        }
        self.plain(map, depth, path)
    }

    /// `oneOf`/`anyOf`: one branch merged with the rest of the schema; for `oneOf` the value
    /// must match exactly one branch, else the next branch is tried.
    fn choice(
        &mut self,
        map: &Map<String, Value>,
        keyword: &'static str,
        branches: &[Value],
        depth: usize,
        path: &Path,
    ) -> Result<Value, GenerateError> {
        let base: Map<String, Value> = map
            .iter()
            .filter(|(k, _)| k.as_str() != keyword && k.as_str() != "discriminator")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let discriminator = map.keyword("discriminator");
        let mut order: Vec<usize> = (0..branches.len()).collect();
        if self.mode == Mode::Random {
            order.shuffle(self.rng);
        }
        if self.shrinking(depth) {
            // The smallest option first: null, then inline shapes, then references.
            order.sort_by_key(|&i| branch_weight(&branches[i]));
        }
        let branch_validators = if keyword == "oneOf" {
            let mut vs = Vec::with_capacity(branches.len());
            for b in branches {
                // Pinned like the validator pins them, so that a discriminated value matches
                // its own branch only.
                let pinned = match discriminator {
                    Some(d) => validate::discriminated_branch(d, b),
                    None => b.clone(),
                };
                vs.push(self.g.validator(&pinned)?);
            }
            Some(vs)
        } else {
            None
        };
        let child = path.child(Seg::Key(keyword));
        let mut last: Option<GenerateError> = None;
        // A second pass in random mode: a branch whose smallest value also matches another
        // branch may still have values that match it alone.
        let passes = if keyword == "oneOf" { 2 } else { 1 };
        let saved = self.mode;
        let order: Vec<usize> = (0..passes).flat_map(|_| order.iter().copied()).collect();
        for (n, i) in order.into_iter().enumerate() {
            if n == branches.len() {
                self.mode = Mode::Random;
            }
            let branch = &branches[i];
            let here = child.child(Seg::Index(i));
            let (flat, bdepth) = match branch {
                Value::Object(bm) => {
                    let refd = bm.has_keyword("$ref");
                    if refd && depth + 1 > self.g.hard_limit() {
                        last = Some(GenerateError::Recursion {
                            pointer: here.render(),
                            depth: self.g.options.max_depth,
                        });
                        continue;
                    }
                    match self.g.flatten(bm) {
                        Ok(f) => (f, depth + usize::from(refd)),
                        Err(e) => {
                            last = Some(merge_error(e, &here));
                            continue;
                        }
                    }
                }
                Value::Bool(true) => (Arc::default(), depth),
                _ => continue,
            };
            let mut combined = base.clone();
            merge::merge_into(&mut combined, &flat);
            if let Some((name, value)) = discriminator.and_then(|d| discriminator_value(d, branch))
            {
                set_discriminator(&mut combined, name, value);
            }
            let v = match self.schema(&combined, bdepth, &here) {
                Ok(v) => v,
                Err(e) => {
                    last = Some(e);
                    continue;
                }
            };
            if let Some(vs) = &branch_validators {
                let matching = vs.iter().filter(|val| val.is_valid(&v)).count();
                if matching != 1 {
                    last = Some(unsat(
                        &here,
                        format!("the value built matched {matching} oneOf branches"),
                    ));
                    continue;
                }
            }
            self.mode = saved;
            return Ok(v);
        }
        self.mode = saved;
        Err(last.unwrap_or_else(|| unsat(&child, format!("no {keyword} branch can be built"))))
    }

    /// A schema without combinators: `enum`, then one of its types.
    fn plain(
        &mut self,
        map: &Map<String, Value>,
        depth: usize,
        path: &Path,
    ) -> Result<Value, GenerateError> {
        let shrink = self.shrinking(depth);
        let types = type_list(map);
        if let Some(values) = map.keyword("enum").and_then(Value::as_array) {
            let allowed: Vec<&Value> = values
                .iter()
                .filter(|v| types.is_empty() || types.iter().any(|t| has_type(v, t)))
                .collect();
            if allowed.is_empty() {
                return Err(unsat(path, "no enum value has an allowed type"));
            }
            if shrink {
                if let Some(v) = allowed.iter().find(|v| v.is_null()) {
                    return Ok((*v).clone());
                }
            }
            let v = match self.mode {
                Mode::Example | Mode::Min => allowed[0],
                Mode::Max => allowed[allowed.len() - 1],
                Mode::Random => allowed[self.rng.gen_range(0..allowed.len())],
            };
            return Ok(v.clone());
        }
        let types = if types.is_empty() {
            match infer_type(map) {
                Some(t) => vec![t],
                None => return Ok(self.any(depth)),
            }
        } else {
            types
        };
        let non_null: Vec<&str> = types.iter().copied().filter(|t| *t != "null").collect();
        let t = if non_null.is_empty() || (shrink && non_null.len() < types.len()) {
            "null"
        } else {
            match self.mode {
                Mode::Random => types[self.rng.gen_range(0..types.len())],
                _ => non_null[0],
            }
        };
        match t {
            "null" => Ok(Value::Null),
            "boolean" => Ok(Value::Bool(match self.mode {
                Mode::Min => false,
                Mode::Max | Mode::Example => true,
                Mode::Random => self.rng.gen(),
            })),
            "integer" => self.integer(map, shrink, path),
            "number" => self.number(map, shrink, path),
            "string" => self.string(map, shrink, path),
            "array" => self.array(map, depth, path),
            "object" => self.object(map, depth, path),
            other => Err(unsat(path, format!("unknown type {other:?}"))),
        }
    }

    /// A value for a schema that constrains nothing.
    fn any(&mut self, depth: usize) -> Value {
        if self.shrinking(depth) {
            return Value::Null;
        }
        match self.mode {
            Mode::Min => Value::Null,
            Mode::Max | Mode::Example => Value::String("value".into()),
            Mode::Random => match self.rng.gen_range(0..4) {
                0 => Value::Null,
                1 => Value::Bool(self.rng.gen()),
                2 => Value::from(self.rng.gen_range(0..1000)),
                _ => Value::String(alnum(self.rng, 1, 8)),
            },
        }
    }

    fn integer(
        &mut self,
        map: &Map<String, Value>,
        shrink: bool,
        path: &Path,
    ) -> Result<Value, GenerateError> {
        let mut b = Bounds::integer_default();
        b.apply_integer_keywords(map);
        if let Some((lo, hi)) = map
            .get("format")
            .and_then(Value::as_str)
            .and_then(format::integer_bounds)
        {
            b.lo = b.lo.max(lo);
            b.hi = b.hi.min(hi);
        }
        let step = match map.keyword("multipleOf").and_then(Value::as_f64) {
            Some(m) => integer_step(m)
                .ok_or_else(|| unsat(path, format!("multipleOf {m} is not usable")))?,
            None => 1,
        };
        let v = self.pick_multiple(&b, step, shrink, path)?;
        integral_value(v).ok_or_else(|| unsat(path, "integer out of range"))
    }

    /// A multiple of `step` within `b`, chosen by mode.
    fn pick_multiple(
        &mut self,
        b: &Bounds,
        step: i128,
        shrink: bool,
        path: &Path,
    ) -> Result<i128, GenerateError> {
        if b.lo > b.hi {
            return Err(unsat(
                path,
                format!("no integer between {} and {}", b.lo, b.hi),
            ));
        }
        let kl = div_ceil(b.lo, step);
        let kh = div_floor(b.hi, step);
        if kl > kh {
            return Err(unsat(
                path,
                format!("no multiple of {step} between {} and {}", b.lo, b.hi),
            ));
        }
        let width = (1000 / step).max(10);
        let k = self.pick_int(kl, kh, b.bounded_lo, b.bounded_hi, width, shrink);
        Ok(k * step)
    }

    fn pick_int(
        &mut self,
        kl: i128,
        kh: i128,
        bounded_lo: bool,
        bounded_hi: bool,
        width: i128,
        shrink: bool,
    ) -> i128 {
        let soft_lo = if bounded_lo {
            kl
        } else if bounded_hi {
            kl.max(kh - width)
        } else {
            (-(width / 10)).clamp(kl, kh)
        };
        let soft_hi = if bounded_hi {
            kh
        } else {
            kh.min(soft_lo.max(0) + width).max(soft_lo)
        };
        if shrink || self.mode == Mode::Min {
            return if bounded_lo {
                kl
            } else {
                0.clamp(soft_lo, soft_hi)
            };
        }
        match self.mode {
            Mode::Max => soft_hi,
            _ => {
                let r = self.rng.gen_range(0..100);
                if r < 8 {
                    soft_lo
                } else if r < 16 {
                    soft_hi
                } else {
                    self.rng.gen_range(soft_lo..=soft_hi)
                }
            }
        }
    }

    fn number(
        &mut self,
        map: &Map<String, Value>,
        shrink: bool,
        path: &Path,
    ) -> Result<Value, GenerateError> {
        let fb = FloatBounds::of(map);
        if fb.lo > fb.hi || (fb.lo == fb.hi && (fb.lo_excl || fb.hi_excl)) {
            return Err(unsat(
                path,
                format!("no number between {} and {}", fb.lo, fb.hi),
            ));
        }
        if let Some(m) = map.keyword("multipleOf").and_then(Value::as_f64) {
            if !(m > 0.0 && m.is_finite()) {
                return Err(unsat(path, format!("multipleOf {m} is not usable")));
            }
            if let Some(step) = integer_step(m).filter(|_| m.fract() == 0.0) {
                let b = fb.integer_bounds();
                let v = self.pick_multiple(&b, step, shrink, path)?;
                return integral_value(v).ok_or_else(|| unsat(path, "number out of range"));
            }
            return self.decimal_multiple(&fb, m, shrink, path);
        }
        // Random numbers are integral part of the time: servers meet both spellings.
        if self.mode == Mode::Random && !shrink && self.rng.gen_bool(0.4) {
            let b = fb.integer_bounds();
            if b.lo <= b.hi {
                let v = self.pick_multiple(&b, 1, shrink, path)?;
                if let Ok(v) = i64::try_from(v) {
                    return Ok(Value::from(v));
                }
            }
        }
        let x = self.pick_float(&fb, shrink);
        serde_json::Number::from_f64(x)
            .map(Value::Number)
            .ok_or_else(|| unsat(path, "no finite number in range"))
    }

    fn pick_float(&mut self, fb: &FloatBounds, shrink: bool) -> f64 {
        const WIDTH: f64 = 1000.0;
        let inside = |x: f64| fb.contains(x);
        let nudge = |from: f64, towards: f64| -> f64 {
            // A point strictly inside, one unit (or half the gap) from an exclusive bound.
            if towards.is_finite() {
                from + (towards - from).signum() * ((towards - from).abs() / 2.0).min(1.0)
            } else {
                from + towards.signum()
            }
        };
        let lo = if fb.lo.is_finite() {
            if fb.lo_excl {
                nudge(fb.lo, fb.hi)
            } else {
                fb.lo
            }
        } else if fb.hi.is_finite() {
            let top = if fb.hi_excl { fb.hi - 1.0 } else { fb.hi };
            top.min(0.0) - WIDTH
        } else {
            -WIDTH / 10.0
        };
        let hi = if fb.hi.is_finite() {
            if fb.hi_excl {
                nudge(fb.hi, fb.lo)
            } else {
                fb.hi
            }
        } else {
            lo.max(0.0) + WIDTH
        };
        let (lo, hi) = if lo <= hi { (lo, hi) } else { (hi, lo) };
        if shrink || self.mode == Mode::Min {
            return if fb.lo.is_finite() {
                lo
            } else if inside(0.0) {
                0.0
            } else {
                hi
            };
        }
        if self.mode == Mode::Max {
            return hi;
        }
        let x = if lo == hi {
            lo
        } else if (hi - lo).is_finite() {
            self.rng.gen_range(lo..=hi)
        } else {
            // A range wider than f64 can span: sample its halves' span instead.
            self.rng.gen_range(lo / 2.0..=hi / 2.0)
        };
        let rounded = (x * 100.0).round() / 100.0;
        if inside(rounded) {
            rounded
        } else if inside(x) {
            x
        } else {
            (lo + hi) / 2.0
        }
    }

    /// A multiple of a decimal `m` (0.01, 2.5): built on the decimal digits and written as
    /// their shortest float, which the validator's decimal check accepts where `k * m` in
    /// binary floating point would not.
    fn decimal_multiple(
        &mut self,
        fb: &FloatBounds,
        m: f64,
        shrink: bool,
        path: &Path,
    ) -> Result<Value, GenerateError> {
        let (mant, decimals) = decimal_parts(m)
            .ok_or_else(|| unsat(path, format!("multipleOf {m} has too many digits")))?;
        let scale = 10f64.powi(decimals as i32);
        let clamp = |x: f64| x.clamp(-1e15, 1e15);
        // Bounds in units of `m`.
        let lo_u = clamp(fb.lo * scale / mant as f64);
        let hi_u = clamp(fb.hi * scale / mant as f64);
        let mut kl = lo_u.ceil() as i128;
        let mut kh = hi_u.floor() as i128;
        if fb.lo_excl && (kl as f64) == lo_u {
            kl += 1;
        }
        if fb.hi_excl && (kh as f64) == hi_u {
            kh -= 1;
        }
        if kl > kh {
            return Err(unsat(path, format!("no multiple of {m} in range")));
        }
        let width = ((1000.0 * scale / mant as f64) as i128).max(10);
        let k = self.pick_int(kl, kh, fb.lo.is_finite(), fb.hi.is_finite(), width, shrink);
        let scaled = k * mant;
        let text = decimal_text(scaled, decimals);
        let x: f64 = text
            .parse()
            .map_err(|_| unsat(path, format!("multiple {text} does not parse")))?;
        serde_json::Number::from_f64(x)
            .map(Value::Number)
            .ok_or_else(|| unsat(path, "no finite multiple in range"))
    }

    fn string(
        &mut self,
        map: &Map<String, Value>,
        shrink: bool,
        path: &Path,
    ) -> Result<Value, GenerateError> {
        let min_len = usize_of(map, "minLength").unwrap_or(0);
        if min_len > MAX_MIN_SIZE {
            return Err(unsat(
                path,
                format!("minLength {min_len} is beyond what probe builds ({MAX_MIN_SIZE})"),
            ));
        }
        let max_len = usize_of(map, "maxLength");
        if let Some(max) = max_len {
            if min_len > max {
                return Err(unsat(
                    path,
                    format!("minLength {min_len} exceeds maxLength {max}"),
                ));
            }
        }
        let cap = min_len.max(self.g.options.max_string);
        let soft_max = max_len.map_or(cap, |m| m.min(cap));
        let format_name = map.keyword("format").and_then(Value::as_str);
        if let Some(p) = map.keyword("pattern").and_then(Value::as_str) {
            let extra: Vec<&str> = map
                .get(merge::EXTRA_PATTERNS)
                .and_then(Value::as_array)
                .map(|e| e.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            // A format value that happens to match the pattern is the better value.
            if let Some(s) = format_name
                .and_then(|f| format::generate(f, self.rng, min_len, max_len.unwrap_or(cap)))
            {
                let v = Value::String(s);
                if self.matches_all(p, &extra, &v)? {
                    return Ok(v);
                }
            }
            if !extra.is_empty() {
                return self.multi_pattern(p, &extra, min_len, max_len.unwrap_or(cap), path);
            }
            let re = self.g.pattern(p).map_err(|error| GenerateError::Pattern {
                pointer: path.child(Seg::Key("pattern")).render(),
                error,
            })?;
            let rep_cap = match (self.mode, shrink) {
                (_, true) | (Mode::Min, _) => 0,
                (Mode::Max, _) => 8,
                _ => 3,
            };
            // Without maxLength the cap yields to what the pattern itself demands.
            let limit = max_len.unwrap_or_else(|| cap.max(re.min_len()));
            let s = re
                .generate(self.rng, min_len, limit, rep_cap)
                .map_err(|error| GenerateError::Pattern {
                    pointer: path.child(Seg::Key("pattern")).render(),
                    error,
                })?;
            return Ok(Value::String(s));
        }
        if let Some(f) = format_name {
            if let Some(s) = format::generate(f, self.rng, min_len, max_len.unwrap_or(cap)) {
                return Ok(Value::String(s));
            }
        }
        let len = match (self.mode, shrink) {
            (_, true) | (Mode::Min, _) => min_len,
            (Mode::Max, _) => soft_max,
            _ => {
                if self.rng.gen_bool(0.7) {
                    self.rng.gen_range(min_len..=soft_max.min(min_len + 12))
                } else {
                    self.rng.gen_range(min_len..=soft_max)
                }
            }
        };
        let mut s = alnum(self.rng, len, len);
        // Now and then one non-ASCII character, so servers meet code points beyond one byte
        // (lengths count code points, so the bounds still hold).
        if self.mode == Mode::Random && len > 0 && self.rng.gen_bool(0.1) {
            const WIDE: &[char] = &['é', 'ß', 'ж', '漢', 'ü'];
            let c = WIDE[self.rng.gen_range(0..WIDE.len())];
            let mut chars: Vec<char> = s.chars().collect();
            let at = self.rng.gen_range(0..chars.len());
            chars[at] = c;
            s = chars.into_iter().collect();
        }
        Ok(Value::String(s))
    }

    /// Whether `v` matches `pattern` and every one of `extra`.
    fn matches_all(&self, pattern: &str, extra: &[&str], v: &Value) -> Result<bool, GenerateError> {
        for p in std::iter::once(pattern).chain(extra.iter().copied()) {
            if !self
                .g
                .validator(&serde_json::json!({ "pattern": p }))?
                .is_valid(v)
            {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// A string for several patterns (from an `allOf` merge): the matches of each laid end to
    /// end, start-anchored first and end-anchored last, which matches them all when they are
    /// anchored at most once at each end; else a match of one that happens to match the rest.
    fn multi_pattern(
        &mut self,
        first: &str,
        extra: &[&str],
        min_len: usize,
        max_len: usize,
        path: &Path,
    ) -> Result<Value, GenerateError> {
        let mut all: Vec<Arc<RegexGen>> = Vec::new();
        for p in std::iter::once(first).chain(extra.iter().copied()) {
            all.push(self.g.pattern(p).map_err(|error| GenerateError::Pattern {
                pointer: path.child(Seg::Key("pattern")).render(),
                error,
            })?);
        }
        all.sort_by_key(|re| match (re.anchored_start(), re.anchored_end()) {
            (true, _) => 0,
            (false, false) => 1,
            (false, true) => 2,
        });
        let share = (max_len / all.len()).max(1);
        let mut joined = String::new();
        for re in &all {
            if let Ok(s) = re.generate(self.rng, 0, share, 2) {
                joined.push_str(&s);
            }
        }
        let v = Value::String(joined);
        if self.matches_all(first, extra, &v)? {
            return Ok(v);
        }
        let mut last = Value::String(String::new());
        for re in &all {
            let v = Value::String(
                re.generate(self.rng, min_len, max_len, 3)
                    .map_err(|error| GenerateError::Pattern {
                        pointer: path.child(Seg::Key("pattern")).render(),
                        error,
                    })?,
            );
            if self.matches_all(first, extra, &v)? {
                return Ok(v);
            }
            last = v;
        }
        // Validation refuses it and generation retries.
        Ok(last)
    }

    fn array(
        &mut self,
        map: &Map<String, Value>,
        depth: usize,
        path: &Path,
    ) -> Result<Value, GenerateError> {
        let shrink = self.shrinking(depth);
        let min = usize_of(map, "minItems").unwrap_or(0);
        if min > MAX_MIN_COUNT {
            return Err(unsat(
                path,
                format!("minItems {min} is beyond what probe builds ({MAX_MIN_COUNT})"),
            ));
        }
        let max = usize_of(map, "maxItems");
        if let Some(max) = max {
            if min > max {
                return Err(unsat(
                    path,
                    format!("minItems {min} exceeds maxItems {max}"),
                ));
            }
        }
        let prefix: &[Value] = map
            .get("prefixItems")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice);
        let items = map.keyword("items");
        let contains = map.keyword("contains");
        let min_contains = if contains.is_some() {
            usize_of(map, "minContains").unwrap_or(1)
        } else {
            0
        };
        let lower = min.max(min_contains);
        let cap = lower.max(self.g.options.max_items);
        let soft_max = max
            .map_or(cap, |m| m.min(cap))
            .max(lower.min(max.unwrap_or(lower)));
        let mut count = match (self.mode, shrink) {
            (_, true) | (Mode::Min, _) => lower,
            (Mode::Max, _) => soft_max,
            _ => self.rng.gen_range(lower.min(soft_max)..=soft_max),
        };
        if matches!(items, Some(Value::Bool(false))) {
            count = count.min(prefix.len());
            if count < min {
                return Err(unsat(
                    path,
                    "items is false and prefixItems are fewer than minItems",
                ));
            }
        }
        let unique = map.keyword("uniqueItems").and_then(Value::as_bool) == Some(true);
        let any = Value::Bool(true);
        let mut out: Vec<Value> = Vec::with_capacity(count);
        let child = path.child(Seg::Key("items"));
        for i in 0..count {
            let base = match prefix.get(i) {
                Some(p) => p,
                None => items.unwrap_or(&any),
            };
            let with_contains;
            let schema = match contains {
                // The first items satisfy `contains`; the rest are free.
                Some(c) if i < min_contains => {
                    with_contains = serde_json::json!({ "allOf": [base, c] });
                    &with_contains
                }
                _ => base,
            };
            let prefix_path = path.child(Seg::Key("prefixItems"));
            let here = if i < prefix.len() {
                prefix_path.child(Seg::Index(i))
            } else {
                child.child(Seg::Index(i))
            };
            let saved = self.mode;
            let mut placed = false;
            for _ in 0..if unique { LOCAL_TRIES } else { 1 } {
                let v = match self.value(schema, depth, &here) {
                    Ok(v) => v,
                    // Items beyond minItems are optional: stop short rather than fail.
                    Err(_) if out.len() >= min => break,
                    Err(e) => {
                        self.mode = saved;
                        return Err(e);
                    }
                };
                if unique && out.contains(&v) {
                    // The same mode would build the same item again.
                    self.mode = Mode::Random;
                    continue;
                }
                out.push(v);
                placed = true;
                break;
            }
            self.mode = saved;
            if !placed {
                if out.len() >= min {
                    break;
                }
                return Err(unsat(path, format!("could not build {min} distinct items")));
            }
        }
        Ok(Value::Array(out))
    }

    fn object(
        &mut self,
        map: &Map<String, Value>,
        depth: usize,
        path: &Path,
    ) -> Result<Value, GenerateError> {
        let shrink = self.shrinking(depth);
        let empty = Map::new();
        let props = map
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let required: Vec<&str> = map
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let min_props = usize_of(map, "minProperties").unwrap_or(0);
        if min_props > MAX_MIN_COUNT {
            return Err(unsat(
                path,
                format!("minProperties {min_props} is beyond what probe builds ({MAX_MIN_COUNT})"),
            ));
        }
        let max_props = usize_of(map, "maxProperties").unwrap_or(usize::MAX);
        let additional = map.keyword("additionalProperties");
        let pattern_props = map.keyword("patternProperties").and_then(Value::as_object);
        let direction = self.g.options.direction;
        let schemas = self.g.schemas;
        let visible = |ps: &Value| -> bool { !validate::is_hidden(schemas, ps, direction) };
        let required_left = |out: &Map<String, Value>| {
            required
                .iter()
                .filter(|r| !out.contains_key(**r))
                .filter(|r| props.get(**r).is_none_or(visible))
                .count()
        };
        let mut out = Map::new();
        let child = path.child(Seg::Key("properties"));
        for (name, ps) in props {
            if !visible(ps) {
                continue;
            }
            let is_required = required.contains(&name.as_str());
            if !is_required {
                let include = match (self.mode, shrink) {
                    (_, true) | (Mode::Min, _) => false,
                    (Mode::Max | Mode::Example, _) => true,
                    (Mode::Random, _) => self.rng.gen_bool(0.5),
                };
                if !include || out.len() + required_left(&out) >= max_props {
                    continue;
                }
            }
            let here = child.child(Seg::Key(name));
            match self.value(ps, depth, &here) {
                Ok(v) => {
                    out.insert(name.clone(), v);
                }
                // An optional property that cannot be built is left out.
                Err(_) if !is_required => {}
                Err(e) => return Err(e),
            }
        }
        // Required names the properties do not describe.
        for name in &required {
            if out.contains_key(*name) || props.contains_key(*name) {
                continue;
            }
            let schema = additional
                .filter(|a| a.is_object())
                .cloned()
                .unwrap_or(Value::Bool(true));
            let v = self.value(&schema, depth, &path.child(Seg::Key(name)))?;
            out.insert((*name).to_string(), v);
        }
        // dependentRequired: a present property brings the ones it depends on.
        if let Some(deps) = map.keyword("dependentRequired").and_then(Value::as_object) {
            let mut added = true;
            let mut rounds = 0;
            while added && rounds < 8 {
                added = false;
                rounds += 1;
                for (trigger, names) in deps {
                    if !out.contains_key(trigger) {
                        continue;
                    }
                    for name in names
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                    {
                        if out.contains_key(name) {
                            continue;
                        }
                        let schema = props.get(name).cloned().unwrap_or(Value::Bool(true));
                        let v = self.value(&schema, depth, &path.child(Seg::Key(name)))?;
                        out.insert(name.to_string(), v);
                        added = true;
                    }
                }
            }
        }
        // Extra entries: to reach minProperties, and a few for map-like objects.
        let map_like = props.is_empty()
            && (additional.is_some_and(Value::is_object) || pattern_props.is_some());
        let wanted_extra = match (self.mode, shrink) {
            _ if !map_like => 0,
            (_, true) | (Mode::Min, _) => 0,
            (Mode::Max, _) => 3,
            _ => self.rng.gen_range(0..=2),
        };
        let target = out
            .len()
            .max(min_props)
            .max(out.len() + wanted_extra)
            .min(max_props);
        let mut serial = 0;
        while out.len() < target && serial < target * 4 + 8 {
            serial += 1;
            let (key, schema) =
                match self.extra_entry(map, pattern_props, additional, serial, path)? {
                    Some(e) => e,
                    None => break,
                };
            if out.contains_key(&key) {
                continue;
            }
            match self.value(
                &schema,
                depth,
                &path.child(Seg::Key("additionalProperties")),
            ) {
                Ok(v) => {
                    out.insert(key, v);
                }
                // Entries beyond minProperties are optional: leave them out.
                Err(_) if out.len() >= min_props => break,
                Err(e) => return Err(e),
            }
        }
        Ok(Value::Object(out))
    }

    /// A key and value schema for one more entry, or `None` when no more are allowed.
    fn extra_entry(
        &mut self,
        map: &Map<String, Value>,
        pattern_props: Option<&Map<String, Value>>,
        additional: Option<&Value>,
        serial: usize,
        path: &Path,
    ) -> Result<Option<(String, Value)>, GenerateError> {
        let additional_allowed = !matches!(additional, Some(Value::Bool(false)));
        let use_pattern = match pattern_props {
            Some(pp) if !pp.is_empty() => !additional_allowed || self.rng.gen_bool(0.5),
            _ => false,
        };
        if use_pattern {
            let pp = pattern_props
                .map(|pp| pp.iter().collect::<Vec<_>>())
                .unwrap_or_default();
            let (pattern, schema) = pp[self.rng.gen_range(0..pp.len())];
            let re = self
                .g
                .pattern(pattern)
                .map_err(|error| GenerateError::Pattern {
                    pointer: path.child(Seg::Key("patternProperties")).render(),
                    error,
                })?;
            let key = re
                .generate(self.rng, 1, 24, 3)
                .map_err(|error| GenerateError::Pattern {
                    pointer: path.child(Seg::Key("patternProperties")).render(),
                    error,
                })?;
            return Ok(Some((key, schema.clone())));
        }
        if !additional_allowed {
            return Ok(None);
        }
        let key = match map.keyword("propertyNames") {
            Some(names) => match self.value(names, 0, &path.child(Seg::Key("propertyNames")))? {
                Value::String(s) => s,
                _ => format!("key{serial}"),
            },
            None => format!("key{serial}"),
        };
        let schema = additional.cloned().unwrap_or(Value::Bool(true));
        Ok(Some((key, schema)))
    }
}

/// `examples[0]`, `example` or `default`.
fn example_of(map: &Map<String, Value>) -> Option<&Value> {
    map.keyword("examples")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
        .or_else(|| map.keyword("example"))
        .or_else(|| map.keyword("default"))
}

/// Sort key for branches at the depth limit: null first, then inline shapes, then references.
fn branch_weight(branch: &Value) -> u8 {
    let types = branch.as_object().map(type_list).unwrap_or_default();
    if types.contains(&"null") {
        0
    } else if branch.get("$ref").is_none() {
        1
    } else {
        2
    }
}

/// The discriminator property and the first value naming `branch`.
fn discriminator_value(discriminator: &Value, branch: &Value) -> Option<(String, Value)> {
    let (name, values) = validate::discriminator_values(discriminator, branch)?;
    Some((name, values.into_iter().next()?))
}

fn set_discriminator(schema: &mut Map<String, Value>, name: String, value: Value) {
    let props = schema
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(p) = props {
        p.insert(name.clone(), serde_json::json!({ "const": value }));
    }
    let required = schema
        .entry("required")
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(r) = required {
        if !r.iter().any(|v| v.as_str() == Some(name.as_str())) {
            r.push(Value::String(name));
        }
    }
}

fn type_list(map: &Map<String, Value>) -> Vec<&str> {
    match map.keyword("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn has_type(v: &Value, t: &str) -> bool {
    match (v, t) {
        (Value::Null, "null") => true,
        (Value::Bool(_), "boolean") => true,
        (Value::String(_), "string") => true,
        (Value::Array(_), "array") => true,
        (Value::Object(_), "object") => true,
        (Value::Number(_), "number") => true,
        (Value::Number(n), "integer") => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

/// The type a schema without `type` implies by its keywords.
fn infer_type(map: &Map<String, Value>) -> Option<&'static str> {
    let has = |ks: &[&str]| ks.iter().any(|k| map.contains_key(*k));
    if has(&[
        "properties",
        "required",
        "additionalProperties",
        "patternProperties",
        "minProperties",
        "maxProperties",
        "propertyNames",
    ]) {
        Some("object")
    } else if has(&[
        "items",
        "prefixItems",
        "minItems",
        "maxItems",
        "uniqueItems",
        "contains",
    ]) {
        Some("array")
    } else if has(&["minLength", "maxLength", "pattern"])
        || map
            .get("format")
            .and_then(Value::as_str)
            .is_some_and(|f| format::STRING_FORMATS.contains(&f))
    {
        Some("string")
    } else if map
        .get("format")
        .and_then(Value::as_str)
        .is_some_and(|f| format::integer_bounds(f).is_some())
    {
        Some("integer")
    } else if has(&[
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
    ]) || matches!(
        map.keyword("format").and_then(Value::as_str),
        Some("float" | "double")
    ) {
        Some("number")
    } else {
        None
    }
}

fn usize_of(map: &Map<String, Value>, key: &str) -> Option<usize> {
    let v = map.get(key)?;
    v.as_u64()
        .or_else(|| v.as_f64().filter(|f| *f >= 0.0).map(|f| f.ceil() as u64))
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
}

fn alnum(rng: &mut ChaCha8Rng, min: usize, max: usize) -> String {
    const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let n = if min == max {
        min
    } else {
        rng.gen_range(min..=max)
    };
    (0..n)
        .map(|_| CHARS[rng.gen_range(0..CHARS.len())] as char)
        .collect()
}

/// Integer bounds and whether the schema (rather than a default) set them.
struct Bounds {
    lo: i128,
    hi: i128,
    bounded_lo: bool,
    bounded_hi: bool,
}

impl Bounds {
    fn integer_default() -> Bounds {
        Bounds {
            lo: i64::MIN as i128,
            hi: i64::MAX as i128,
            bounded_lo: false,
            bounded_hi: false,
        }
    }

    fn apply_integer_keywords(&mut self, map: &Map<String, Value>) {
        let f = |k: &str| {
            map.keyword(k)
                .and_then(Value::as_f64)
                .filter(|x| x.is_finite())
        };
        // A schema bound replaces the default one (it may lie beyond i64, e.g. 1e30) and
        // tightens another schema bound.
        let lower = |this: &mut Self, v: i128| {
            this.lo = if this.bounded_lo { this.lo.max(v) } else { v };
            this.bounded_lo = true;
        };
        if let Some(m) = f("minimum") {
            lower(self, m.ceil() as i128);
        }
        if let Some(m) = f("exclusiveMinimum") {
            lower(self, m.floor() as i128 + 1);
        }
        let upper = |this: &mut Self, v: i128| {
            this.hi = if this.bounded_hi { this.hi.min(v) } else { v };
            this.bounded_hi = true;
        };
        if let Some(m) = f("maximum") {
            upper(self, m.floor() as i128);
        }
        if let Some(m) = f("exclusiveMaximum") {
            upper(self, m.ceil() as i128 - 1);
        }
        if !self.bounded_hi && self.lo > self.hi {
            self.hi = self.lo.saturating_add(1_000_000);
        }
        if !self.bounded_lo && self.lo > self.hi {
            self.lo = self.hi.saturating_sub(1_000_000);
        }
    }
}

/// Number bounds: infinite where the schema gives none.
struct FloatBounds {
    lo: f64,
    hi: f64,
    lo_excl: bool,
    hi_excl: bool,
    /// The schema's integer-relevant keywords, for integral picks.
    keywords: Map<String, Value>,
}

impl FloatBounds {
    fn of(map: &Map<String, Value>) -> FloatBounds {
        let f = |k: &str| {
            map.keyword(k)
                .and_then(Value::as_f64)
                .filter(|x| x.is_finite())
        };
        let mut b = FloatBounds {
            lo: f64::NEG_INFINITY,
            hi: f64::INFINITY,
            lo_excl: false,
            hi_excl: false,
            keywords: Map::new(),
        };
        if let Some(m) = f("minimum") {
            b.lo = m;
        }
        if let Some(m) = f("exclusiveMinimum") {
            if m >= b.lo {
                b.lo = m;
                b.lo_excl = true;
            }
        }
        if let Some(m) = f("maximum") {
            b.hi = m;
        }
        if let Some(m) = f("exclusiveMaximum") {
            if m <= b.hi {
                b.hi = m;
                b.hi_excl = true;
            }
        }
        for k in ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"] {
            if let Some(v) = map.get(k) {
                b.keywords.insert(k.to_string(), v.clone());
            }
        }
        b
    }

    fn contains(&self, x: f64) -> bool {
        let above = if self.lo_excl {
            x > self.lo
        } else {
            x >= self.lo
        };
        let below = if self.hi_excl {
            x < self.hi
        } else {
            x <= self.hi
        };
        above && below && x.is_finite()
    }

    fn integer_bounds(&self) -> Bounds {
        let mut b = Bounds::integer_default();
        // Keep integral picks well inside the exactly representable range.
        b.lo = b.lo.max(-(1i128 << 53));
        b.hi = b.hi.min(1i128 << 53);
        b.apply_integer_keywords(&self.keywords);
        b
    }
}

/// An integer as JSON: exact within i64, else the nearest float (still integral, which JSON
/// Schema counts as an integer).
fn integral_value(v: i128) -> Option<Value> {
    match i64::try_from(v) {
        Ok(v) => Some(Value::from(v)),
        Err(_) => serde_json::Number::from_f64(v as f64).map(Value::Number),
    }
}

/// The step of integers that are multiples of `m`: `m` itself for whole `m`; for a decimal
/// `m = M / 10^d`, the integers `v` with `v * 10^d` divisible by `M`.
fn integer_step(m: f64) -> Option<i128> {
    if !(m > 0.0 && m.is_finite()) {
        return None;
    }
    if m.fract() == 0.0 {
        return (m < 1e18).then_some(m as i128);
    }
    let (mant, decimals) = decimal_parts(m)?;
    let pow = 10i128.checked_pow(decimals)?;
    let g = gcd(mant, pow);
    Some(mant / g)
}

/// `m` as `mantissa / 10^decimals` from its shortest decimal spelling.
fn decimal_parts(m: f64) -> Option<(i128, u32)> {
    let text = format!("{m}");
    if text.contains(['e', 'E']) {
        return None;
    }
    let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
    let decimals = u32::try_from(frac.len()).ok()?;
    if decimals > 18 {
        return None;
    }
    let digits = format!("{int}{frac}");
    let mant: i128 = digits.parse().ok()?;
    (mant > 0).then_some((mant, decimals))
}

fn decimal_text(scaled: i128, decimals: u32) -> String {
    let neg = scaled < 0;
    let abs = scaled.unsigned_abs();
    let pow = 10u128.pow(decimals);
    let int = abs / pow;
    let frac = abs % pow;
    let sign = if neg { "-" } else { "" };
    if decimals == 0 {
        format!("{sign}{int}")
    } else {
        format!("{sign}{int}.{frac:0width$}", width = decimals as usize)
    }
}

fn gcd(mut a: i128, mut b: i128) -> i128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.abs().max(1)
}

fn div_floor(a: i128, b: i128) -> i128 {
    let q = a / b;
    if (a % b != 0) && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

fn div_ceil(a: i128, b: i128) -> i128 {
    let q = a / b;
    if (a % b != 0) && ((a < 0) == (b < 0)) {
        q + 1
    } else {
        q
    }
}
