//! Memory of the API's own answers: identifiers the API handed out, offered back to the
//! parameters that name them (a POST's `id` flows into `GET /pets/{petId}`; a bucket's
//! `data.id` into `/buckets/{bucket_id}/collections`; `dags[].dag_id` of a list into
//! `/dags/{dag_id}`).
//!
//! What is learned from one 2xx answer (to an unchanged request):
//! - every id-like value (`id`, `*id`, `uuid`, `name`, `*key`), and every value under a
//!   name some path or query parameter of the document takes (`book_title`, `username`,
//!   `uri`: the [`Vocabulary`]), at any depth up to [`MAX_DEPTH`], inside envelopes and
//!   lists (the first [`ITEMS_READ`] items of an array), under its own normalised name
//!   (`dag_id` → `dagid`);
//! - in an object of the answer's own collection, the field that the parameter keying the
//!   collection's items names (`/pools/{pool_name}`: the object's `pool_name`, else the
//!   identifying field it ends with, `name`), under that parameter's name;
//! - an identifying field (`name`, `key`, `title`, ...) of an object listed under a key
//!   also as that key's singular plus the field (`roles[].name` → `rolename`,
//!   `variables[].key` → `variablekey`), when some parameter takes that name;
//! - an accepted creation's own request body, when its answer names no id of its own (no
//!   `id`, no `Location`): the fields a parameter takes (`book_title`);
//! - the id of the answer's own resource (an `id` or `uuid` at the top, inside an envelope
//!   such as `data`, `items`, `results`, `_embedded`, or in a list of them) also under the
//!   collection it belongs to (`/buckets`) and the collection's name (`bucketid`, `bucket`);
//!   the id of an object nested under another key under that key (`owner.id` → `ownerid`);
//! - the last segment of a `Location` header, as an id of the collection;
//! - a key the client chose itself in a `PUT` answered 2xx (its path value).
//!
//! Values found together (the scalars of one object of an answer, with those of its
//! parent objects and the request's path values) are also kept as a group: the path and
//! query parameters of one request, and the fields its body sends back, take their values
//! from one group where one holds two or more of them ([`Memory::together`]), so a child
//! id goes with the parent id it was found under.
//!
//! A value whose use was answered 404 is forgotten. Recall prefers, for a parameter with a
//! name of its own (`bucket_id`), values learned under that name, then ids of the
//! collection the path puts it under; for a generic name (`id`), the collection first.
//! Answers are learned in the order their cases were generated, never in the order they
//! arrived, so concurrency cannot change what is generated next (docs/determinism.md).
//!
//! Depends on: `model`, `spec` (the links a response declares), `generate::vocabulary`.

use std::collections::BTreeMap;
use std::sync::Arc;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

use super::vocabulary::{identifying, singular, Vocabulary};
use crate::model::{Location, TestCase};

pub use super::vocabulary::{generic, normalise};

/// Values kept per name; older ones are forgotten first.
const KEPT_PER_NAME: usize = 16;
/// How deep into an answer values are looked for.
const MAX_DEPTH: usize = 6;
/// How many items of an array are read.
const ITEMS_READ: usize = 8;

/// Groups of values found together kept; older ones are forgotten first.
const GROUPS_KEPT: usize = 256;

/// Keys that wrap an answer's own resource (or a list of them).
const ENVELOPES: &[&str] = &[
    "data",
    "item",
    "items",
    "result",
    "results",
    "content",
    "records",
    "record",
    "value",
    "values",
    "entries",
    "entry",
    "objects",
    "object",
    "resource",
    "resources",
    "response",
    "payload",
    "body",
    "list",
    "page",
    "elements",
    "rows",
    "hits",
    "_embedded",
    "embedded",
];

/// Observed identifier values by normalised name and by collection.
#[derive(Debug, Default, Clone)]
pub struct Memory {
    /// `petid` → values, each with where it came from.
    values: BTreeMap<String, Vec<Remembered>>,
    /// Collection path template (`/buckets/{bucket_id}/collections`) → ids of its items.
    collections: BTreeMap<String, Vec<Remembered>>,
    /// (operation name, parameter) → values an OpenAPI link of an answer sent there.
    linked: BTreeMap<(String, String), Vec<Remembered>>,
    /// The names the document's parameters take: what is worth learning.
    vocabulary: Arc<Vocabulary>,
    /// Values that belong together: those of one object of one answer, with the values
    /// its parent objects and the request's path named (a note's `note_id` and
    /// `checksum` with the `shelf_id` it was listed under), oldest first.
    groups: Vec<BTreeMap<String, Remembered>>,
}

/// The values of one group chosen for one request ([`Memory::together`]), by normalised
/// name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Together {
    values: BTreeMap<String, (Value, Option<Binding>)>,
}

impl Together {
    /// The value the group holds under the parameter or field `name`, and its binding.
    pub fn get(&self, name: &str) -> Option<(&Value, Option<&Binding>)> {
        self.values
            .get(&normalise(name))
            .map(|(v, b)| (v, b.as_ref()))
    }
}

/// One value the API answered (or accepted), and where.
#[derive(Debug, Clone, PartialEq)]
struct Remembered {
    value: Value,
    /// Where to take it again in a replay; `None` for a value the client chose itself.
    source: Option<Binding>,
}

pub use crate::model::{last_segment, Binding, LOCATION_POINTER};

fn id_like(normalised: &str) -> bool {
    normalised == "id"
        || normalised.ends_with("id")
        || normalised == "uuid"
        || normalised.ends_with("uuid")
        || normalised == "name"
        || normalised.ends_with("key")
        || normalised == "slug"
        || normalised == "identifier"
}

/// The collection an operation's answer is about: its path without a trailing
/// `/{param}` (`/buckets/{id}` → `/buckets`), and that collection's last static segment.
fn collection_of(path: &str) -> (&str, Option<&str>) {
    let trimmed = path.trim_end_matches('/');
    let collection = match trimmed.rsplit_once('/') {
        Some((head, last)) if last.starts_with('{') => head,
        _ => trimmed,
    };
    let segment = collection
        .rsplit('/')
        .find(|s| !s.is_empty() && !s.starts_with('{') && !version(s));
    (collection, segment)
}

/// A path segment that versions an API rather than naming a collection: `v1`, `V2`.
fn version(segment: &str) -> bool {
    segment
        .strip_prefix(['v', 'V'])
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The last non-empty path segment of a URL or path, percent-decoded.
fn escape_pointer(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// What one 2xx answer offers to learn from.
pub struct Answer<'a> {
    pub method: &'a str,
    /// The operation's path template.
    pub path: &'a str,
    pub seq: u64,
    pub body: Option<&'a Value>,
    pub location: Option<&'a str>,
    /// The path parameters the request sent (name, value).
    pub path_values: Vec<(&'a str, &'a Value)>,
    /// The request, for links that take a value of it (`$request.path.id`).
    pub request: Option<&'a TestCase>,
    /// The links of the response entry that matched: (target operation name, parameter,
    /// runtime expression).
    pub links: &'a [(String, String, String)],
}

impl Memory {
    /// An empty memory that learns the names `vocabulary` says the document consumes
    /// (besides id-like ones, which it always learns).
    pub fn new(vocabulary: Arc<Vocabulary>) -> Memory {
        Memory {
            vocabulary,
            ..Memory::default()
        }
    }

    /// Whether property `name` of a body sent to `path` is the key of the new or changed
    /// object itself (`book_title` sent to `/books` or `/books/{book_title}`): never filled
    /// with a value another object holds.
    pub fn keys_own_item(&self, path: &str, name: &str) -> bool {
        let n = normalise(name);
        let (collection, _) = collection_of(path);
        self.vocabulary.item_keys(path).contains(&n)
            || self.vocabulary.item_keys(collection).contains(&n)
    }

    /// Learns what a 2xx answer to an unchanged request offers (see the module docs).
    pub fn learn_answer(&mut self, answer: &Answer<'_>) {
        let (collection, segment) = collection_of(answer.path);
        let aliases: Vec<String> = segment
            .map(|s| {
                let one = normalise(&singular(s));
                vec![format!("{one}id"), one]
            })
            .unwrap_or_default();
        let mut named_own_id = answer.location.is_some();
        if let Some(body) = answer.body {
            let vocabulary = Arc::clone(&self.vocabulary);
            let mut walk = Walk {
                memory: self,
                vocabulary: &vocabulary,
                seq: answer.seq,
                collection,
                aliases: &aliases,
                segment: segment.map(normalise),
                item_keys: vocabulary.item_keys(collection),
                own_id: false,
            };
            walk.value(body, &mut String::new(), 0, true, None);
            named_own_id |= walk.own_id;
        }
        if answer.method == "POST" && !named_own_id {
            self.learn_request_body(answer);
        }
        if let Some(id) = answer.location.and_then(last_segment) {
            let value = Value::String(id);
            let source = Some(Binding {
                seq: answer.seq,
                pointer: LOCATION_POINTER.to_owned(),
            });
            // The Location of a creation names an item of the collection it was sent to.
            let target = if answer.method == "POST" {
                answer.path.trim_end_matches('/')
            } else {
                collection
            };
            let target_segment = target
                .rsplit('/')
                .find(|s| !s.is_empty() && !s.starts_with('{') && !version(s));
            self.remember_in_collection(target, value.clone(), source.clone());
            if let Some(s) = target_segment {
                let one = normalise(&singular(s));
                self.remember(&format!("{one}id"), value.clone(), source.clone());
                self.remember(&one, value, source);
            }
        }
        self.learn_links(answer);
        self.learn_groups(answer, collection, segment);
        // A key the client chose itself, accepted by a PUT: an item of the collection.
        if answer.method == "PUT" {
            let last_param = answer
                .path
                .trim_end_matches('/')
                .rsplit('/')
                .next()
                .and_then(|s| s.strip_prefix('{')?.strip_suffix('}'));
            for (name, value) in &answer.path_values {
                if Some(*name) != last_param
                    || !matches!(value, Value::String(_) | Value::Number(_))
                {
                    continue;
                }
                self.remember(&normalise(name), (*value).clone(), None);
                self.remember_in_collection(collection, (*value).clone(), None);
                for alias in &aliases {
                    self.remember(alias, (*value).clone(), None);
                }
            }
        }
    }

    /// An accepted creation whose answer names no id of its own: the values its body sent
    /// under a name some parameter takes are what names the new object (`book_title`), and
    /// so is the field the collection's item parameter names. The client chose them, so
    /// they have no binding: a replay sends the creation with them again.
    fn learn_request_body(&mut self, answer: &Answer<'_>) {
        let Some(Value::Object(sent)) = answer
            .request
            .and_then(|r| r.body.as_ref())
            .map(|b| &b.value)
        else {
            return;
        };
        let vocabulary = Arc::clone(&self.vocabulary);
        for (k, v) in sent {
            let n = normalise(k);
            if matches!(v, Value::String(_) | Value::Number(_)) && vocabulary.consumes(&n) {
                self.remember(&n, v.clone(), None);
            }
        }
        let collection = answer.path.trim_end_matches('/');
        for key in vocabulary.item_keys(collection) {
            if let Some((_, v)) = keying_field(sent, key) {
                self.remember(key, v.clone(), None);
                if generic(key) {
                    self.remember_in_collection(collection, v.clone(), None);
                }
            }
        }
    }

    /// Learns identifiers from a 2xx JSON answer of the operation at `path`, sent as `seq`.
    pub fn learn(&mut self, path: &str, seq: u64, body: &Value) {
        self.learn_answer(&Answer {
            method: "POST",
            path,
            seq,
            body: Some(body),
            location: None,
            path_values: Vec::new(),
            request: None,
            links: &[],
        });
    }

    /// Follows the answer's OpenAPI links: each runtime expression it can evaluate gives a
    /// value for one parameter of one operation.
    fn learn_links(&mut self, answer: &Answer<'_>) {
        for (target, parameter, expression) in answer.links {
            let Some((value, source)) = evaluate(expression, answer) else {
                continue;
            };
            if !matches!(value, Value::String(_) | Value::Number(_) | Value::Bool(_)) {
                continue;
            }
            push_bounded(
                self.linked
                    .entry((target.clone(), parameter.clone()))
                    .or_default(),
                value,
                source,
            );
        }
    }

    fn remember(&mut self, name: &str, value: Value, source: Option<Binding>) {
        push_bounded(
            self.values.entry(name.to_owned()).or_default(),
            value,
            source,
        );
    }

    fn remember_in_collection(&mut self, collection: &str, value: Value, source: Option<Binding>) {
        push_bounded(
            self.collections.entry(collection.to_owned()).or_default(),
            value,
            source,
        );
    }

    /// Forgets `value` wherever it was learned: its use was answered 404.
    pub fn forget(&mut self, value: &Value) {
        for list in self
            .values
            .values_mut()
            .chain(self.collections.values_mut())
        {
            list.retain(|r| &r.value != value);
        }
        self.groups
            .retain(|g| !g.values().any(|r| &r.value == value));
    }

    /// Whether some parameter of the document takes values named `normalised` (or an
    /// update sends back a field of that name).
    pub fn consumes(&self, normalised: &str) -> bool {
        self.vocabulary.consumes(normalised)
    }

    /// The values of one answer's object (and its parents) for as many of `names` (the
    /// parameters and body fields of one request) as any group holds, at least two: the
    /// newest such group mostly, sometimes an older one. `None`, drawing nothing, when no
    /// group holds two of them.
    pub fn together(&self, names: &[String], rng: &mut ChaCha8Rng) -> Option<Together> {
        if names.len() < 2 {
            return None;
        }
        let wanted: Vec<String> = names.iter().map(|n| normalise(n)).collect();
        let cover = |g: &BTreeMap<String, Remembered>| {
            wanted.iter().filter(|n| g.contains_key(n.as_str())).count()
        };
        let best = self.groups.iter().map(cover).max().filter(|&c| c >= 2)?;
        let candidates: Vec<&BTreeMap<String, Remembered>> =
            self.groups.iter().filter(|g| cover(g) == best).collect();
        let pick = if rng.gen_bool(0.7) {
            candidates.len() - 1
        } else {
            rng.gen_range(0..candidates.len())
        };
        let values = candidates[pick]
            .iter()
            .filter(|(k, _)| wanted.contains(k))
            .map(|(k, r)| (k.clone(), (r.value.clone(), r.source.clone())))
            .collect();
        Some(Together { values })
    }

    /// Learns the groups of values that belong together in an answer (see
    /// [`Memory::together`]): each object's values under the names the walk learns them
    /// by, with its parents' and the request's path values.
    fn learn_groups(&mut self, answer: &Answer<'_>, collection: &str, segment: Option<&str>) {
        let Some(body) = answer.body else {
            return;
        };
        let bindings = answer
            .request
            .and_then(|r| r.series_step.as_ref())
            .map(|s| &s.bindings);
        let mut base = BTreeMap::new();
        for (name, value) in &answer.path_values {
            if !matches!(value, Value::String(_) | Value::Number(_)) {
                continue;
            }
            let source = bindings
                .and_then(|b| b.get(*name))
                .and_then(|t| Binding::parse(t));
            base.insert(
                normalise(name),
                Remembered {
                    value: (*value).clone(),
                    source,
                },
            );
        }
        let vocabulary = Arc::clone(&self.vocabulary);
        let mut grouping = Grouping {
            vocabulary: &vocabulary,
            seq: answer.seq,
            segment: segment.map(normalise),
            item_keys: vocabulary.item_keys(collection),
            found: Vec::new(),
        };
        grouping.value(body, &mut String::new(), 0, &base, None, true);
        for group in grouping.found {
            if let Some(at) = self.groups.iter().position(|g| *g == group) {
                self.groups.remove(at);
            }
            self.groups.push(group);
            if self.groups.len() > GROUPS_KEPT {
                self.groups.remove(0);
            }
        }
    }

    /// The values that could fill parameter `name` at `location` of the operation at
    /// `path`, best first (see the module docs).
    fn candidates(
        &self,
        operation: &str,
        name: &str,
        location: Location,
        path: &str,
    ) -> Vec<&[Remembered]> {
        let linked = self
            .linked
            .get(&(operation.to_owned(), name.to_owned()))
            .map(Vec::as_slice)
            .filter(|l| !l.is_empty());
        let n = normalise(name);
        let by_name = self
            .values
            .get(&n)
            .map(Vec::as_slice)
            .filter(|l| !l.is_empty());
        // The collection the path puts the parameter under: `/buckets/{bucket_id}/x` →
        // `/buckets` for `bucket_id`.
        let by_collection = (location == Location::Path)
            .then(|| {
                let at = path.find(&format!("{{{name}}}"))?;
                let prefix = path[..at].trim_end_matches('/');
                (!prefix.is_empty()).then_some(prefix)
            })
            .flatten()
            .and_then(|prefix| self.collections.get(prefix))
            .map(Vec::as_slice)
            .filter(|l| !l.is_empty());
        let mut out: Vec<&[Remembered]> = linked.into_iter().collect();
        if generic(&n) {
            out.extend(by_collection);
            if location == Location::Path {
                // A bare `id` under a collection probe knows nothing of is not filled with
                // ids of other collections.
                if out.is_empty() && path.matches('{').count() > 0 {
                    out.extend(by_name.filter(|_| self.collections.is_empty()));
                }
            } else {
                out.extend(by_name);
            }
        } else {
            out.extend(by_name);
            out.extend(by_collection);
        }
        out
    }

    /// Whether [`Memory::recall`] could find a value (drawing nothing).
    pub fn knows(&self, operation: &str, name: &str, location: Location, path: &str) -> bool {
        location != Location::Cookie && !self.candidates(operation, name, location, path).is_empty()
    }

    /// A value for the parameter `name` at `location` of the operation at `path`, if the
    /// API answered one that `fits` accepts (it may convert: a number answered for a
    /// parameter that takes strings is sent as its text).
    pub fn recall(
        &self,
        operation: &str,
        name: &str,
        location: Location,
        path: &str,
        rng: &mut ChaCha8Rng,
        fits: &dyn Fn(&Value) -> Option<Value>,
    ) -> Option<(Value, Option<Binding>)> {
        if location == Location::Cookie {
            return None;
        }
        for list in self.candidates(operation, name, location, path) {
            let usable: Vec<(Value, &Remembered)> = list
                .iter()
                .filter_map(|r| fits(&r.value).map(|v| (v, r)))
                .collect();
            if usable.is_empty() {
                continue;
            }
            // Mostly the newest (what was just created), sometimes an older one.
            let pick = if rng.gen_bool(0.7) {
                usable.len() - 1
            } else {
                rng.gen_range(0..usable.len())
            };
            let (value, r) = &usable[pick];
            return Some((value.clone(), r.source.clone()));
        }
        None
    }
}

/// The value an OpenAPI runtime expression names in an answer, and where to take it again
/// in a replay: `$response.body#/p`, `$response.header.Location` (its last path segment when
/// it is a URL or path), `$request.path.x`, `$request.query.x`, `$request.header.x`,
/// `$request.body#/p`. Others (`$url`, `$method`, text with embedded expressions) give
/// nothing.
fn evaluate(expression: &str, answer: &Answer<'_>) -> Option<(Value, Option<Binding>)> {
    if let Some(pointer) = expression.strip_prefix("$response.body#") {
        let value = answer.body?.pointer(pointer)?.clone();
        let source = Binding {
            seq: answer.seq,
            pointer: pointer.to_owned(),
        };
        return Some((value, Some(source)));
    }
    if let Some(header) = expression.strip_prefix("$response.header.") {
        if !header.eq_ignore_ascii_case("location") {
            return None;
        }
        let value = last_segment(answer.location?)?;
        let source = Binding {
            seq: answer.seq,
            pointer: LOCATION_POINTER.to_owned(),
        };
        return Some((Value::String(value), Some(source)));
    }
    let request = answer.request?;
    if let Some(pointer) = expression.strip_prefix("$request.body#") {
        return Some((request.body.as_ref()?.value.pointer(pointer)?.clone(), None));
    }
    let (location, name) = expression.strip_prefix("$request.")?.split_once('.')?;
    let location = match location {
        "path" => Location::Path,
        "query" => Location::Query,
        "header" => Location::Header,
        _ => return None,
    };
    let value = request.parameters.iter().find(|p| {
        p.location == location
            && (p.name == name
                || (location == Location::Header && p.name.eq_ignore_ascii_case(name)))
    })?;
    Some((value.value.clone(), None))
}

fn push_bounded(list: &mut Vec<Remembered>, value: Value, source: Option<Binding>) {
    if let Some(at) = list.iter().position(|r| r.value == value) {
        // Seen again: the newest, from its latest source.
        let mut again = list.remove(at);
        if source.is_some() {
            again.source = source;
        }
        list.push(again);
        return;
    }
    list.push(Remembered { value, source });
    if list.len() > KEPT_PER_NAME {
        list.remove(0);
    }
}

/// One walk over an answer's body.
struct Walk<'m, 'a> {
    memory: &'m mut Memory,
    vocabulary: &'a Vocabulary,
    seq: u64,
    collection: &'a str,
    /// Names the collection's own ids also go under (`bucketid`, `bucket`).
    aliases: &'a [String],
    /// The collection's last segment, normalised: a key of that name wraps its items.
    segment: Option<String>,
    /// The parameters that key the collection's items (`poolname`), normalised.
    item_keys: &'a [String],
    /// Whether an `id` or `uuid` of the answer's own resource was met.
    own_id: bool,
}

/// The field of `object` that parameter `key` (normalised) takes: the one of that name,
/// else the longest identifying field the name ends with (`poolname` ← `name`,
/// `xcomkey` ← `key`); a string or a number.
fn keying_field<'v>(
    object: &'v serde_json::Map<String, Value>,
    key: &str,
) -> Option<(&'v str, &'v Value)> {
    let scalar = |v: &Value| matches!(v, Value::String(_) | Value::Number(_));
    if let Some((k, v)) = object
        .iter()
        .find(|(k, v)| scalar(v) && normalise(k) == key)
    {
        return Some((k, v));
    }
    object
        .iter()
        .filter(|(k, v)| {
            let n = normalise(k);
            scalar(v) && identifying(&n) && key.ends_with(n.as_str())
        })
        .max_by_key(|(k, _)| normalise(k).len())
        .map(|(k, v)| (k.as_str(), v))
}

impl Walk<'_, '_> {
    /// `own`: whether objects here are the answer's own resource (top, envelope, list).
    fn value(
        &mut self,
        v: &Value,
        pointer: &mut String,
        depth: usize,
        own: bool,
        parent: Option<&str>,
    ) {
        if depth > MAX_DEPTH {
            return;
        }
        match v {
            Value::Object(map) => {
                if own {
                    self.item_key(map, pointer);
                }
                for (k, child) in map {
                    let at = pointer.len();
                    pointer.push('/');
                    pointer.push_str(&escape_pointer(k));
                    let n = normalise(k);
                    match child {
                        Value::String(_) | Value::Number(_)
                            if id_like(&n) || identifying(&n) || self.vocabulary.consumes(&n) =>
                        {
                            self.scalar(&n, child, pointer, own, parent);
                        }
                        Value::Object(_) | Value::Array(_) => {
                            let wraps = ENVELOPES.contains(&k.as_str())
                                || self.segment.as_deref() == Some(n.as_str())
                                || parent == Some("_embedded");
                            self.value(child, pointer, depth + 1, own && wraps, Some(k));
                        }
                        _ => {}
                    }
                    pointer.truncate(at);
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().take(ITEMS_READ).enumerate() {
                    let at = pointer.len();
                    pointer.push('/');
                    pointer.push_str(&i.to_string());
                    self.value(item, pointer, depth + 1, own, parent);
                    pointer.truncate(at);
                }
            }
            _ => {}
        }
    }

    /// An object of the answer's own collection: the value of each parameter that keys
    /// the collection's items, under that parameter's name.
    fn item_key(&mut self, map: &serde_json::Map<String, Value>, pointer: &str) {
        for key in self.item_keys {
            let Some((field, v)) = keying_field(map, key) else {
                continue;
            };
            let source = Some(Binding {
                seq: self.seq,
                pointer: format!("{pointer}/{}", escape_pointer(field)),
            });
            self.memory.remember(key, v.clone(), source.clone());
            // A generic key (`/pools/{name}`) is recalled by its collection.
            if generic(key) && !matches!(key.as_str(), "id" | "uuid") {
                self.memory
                    .remember_in_collection(self.collection, v.clone(), source);
            }
        }
    }

    fn scalar(&mut self, n: &str, v: &Value, pointer: &str, own: bool, parent: Option<&str>) {
        let source = Some(Binding {
            seq: self.seq,
            pointer: pointer.to_owned(),
        });
        if id_like(n) || self.vocabulary.consumes(n) {
            self.memory.remember(n, v.clone(), source.clone());
        }
        if !matches!(n, "id" | "uuid") {
            // An identifying field, as the singular of the key that lists it and of the
            // answer's collection, where a parameter takes that name.
            let listed = parent.filter(|p| !ENVELOPES.contains(p)).map(normalise);
            let collection = own.then_some(self.segment.as_deref()).flatten();
            for holder in listed.as_deref().into_iter().chain(collection) {
                let alias = format!("{}{n}", singular(holder));
                if identifying(n) && self.vocabulary.consumes(&alias) {
                    self.memory.remember(&alias, v.clone(), source.clone());
                }
            }
            return;
        }
        if own {
            self.own_id = true;
            self.memory
                .remember_in_collection(self.collection, v.clone(), source.clone());
            for alias in self.aliases {
                self.memory.remember(alias, v.clone(), source.clone());
            }
        } else if let Some(parent) = parent.filter(|p| !ENVELOPES.contains(p)) {
            let one = normalise(&singular(parent));
            self.memory
                .remember(&format!("{one}{n}"), v.clone(), source);
        }
    }
}

/// One walk over an answer's body for the groups of values in it.
struct Grouping<'a> {
    vocabulary: &'a Vocabulary,
    seq: u64,
    /// The answer's collection's last segment, normalised.
    segment: Option<String>,
    /// The parameters that key the collection's items, normalised.
    item_keys: &'a [String],
    found: Vec<BTreeMap<String, Remembered>>,
}

impl Grouping<'_> {
    /// `frame`: the values of the parents; `holder`: the key the value is listed under;
    /// `own`: whether objects here are the answer's own resource.
    fn value(
        &mut self,
        v: &Value,
        pointer: &mut String,
        depth: usize,
        frame: &BTreeMap<String, Remembered>,
        holder: Option<&str>,
        own: bool,
    ) {
        if depth > MAX_DEPTH {
            return;
        }
        match v {
            Value::Object(map) => {
                let mut here = frame.clone();
                let added = self.scalars(map, pointer, &mut here, holder, own);
                if added > 0 && here.len() >= 2 {
                    self.found.push(here.clone());
                }
                for (k, child) in map {
                    if !matches!(child, Value::Object(_) | Value::Array(_)) {
                        continue;
                    }
                    let at = pointer.len();
                    pointer.push('/');
                    pointer.push_str(&escape_pointer(k));
                    let n = normalise(k);
                    let wraps = ENVELOPES.contains(&k.as_str())
                        || self.segment.as_deref() == Some(n.as_str())
                        || holder == Some("_embedded");
                    let next = if ENVELOPES.contains(&k.as_str()) {
                        holder
                    } else {
                        Some(k.as_str())
                    };
                    self.value(child, pointer, depth + 1, &here, next, own && wraps);
                    pointer.truncate(at);
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().take(ITEMS_READ).enumerate() {
                    let at = pointer.len();
                    pointer.push('/');
                    pointer.push_str(&i.to_string());
                    self.value(item, pointer, depth + 1, frame, holder, own);
                    pointer.truncate(at);
                }
            }
            _ => {}
        }
    }

    /// Puts the object's scalars into `here` under every name the memory learns them by;
    /// how many it put.
    fn scalars(
        &self,
        map: &serde_json::Map<String, Value>,
        pointer: &str,
        here: &mut BTreeMap<String, Remembered>,
        holder: Option<&str>,
        own: bool,
    ) -> usize {
        let mut added = 0;
        let listed = holder
            .filter(|h| !ENVELOPES.contains(h))
            .map(normalise)
            .or_else(|| own.then(|| self.segment.clone()).flatten());
        for (k, child) in map {
            if !matches!(child, Value::String(_) | Value::Number(_)) {
                continue;
            }
            let n = normalise(k);
            let mut names = Vec::new();
            if id_like(&n) || self.vocabulary.consumes(&n) {
                names.push(n.clone());
            }
            if let Some(holder) = &listed {
                let alias = format!("{}{n}", singular(holder));
                if identifying(&n) && self.vocabulary.consumes(&alias) {
                    names.push(alias);
                }
            }
            if own {
                for key in self.item_keys {
                    if keying_field(map, key).is_some_and(|(field, _)| field == k) {
                        names.push(key.clone());
                    }
                }
            }
            let source = Binding {
                seq: self.seq,
                pointer: format!("{pointer}/{}", escape_pointer(k)),
            };
            for name in names {
                here.insert(
                    name,
                    Remembered {
                        value: child.clone(),
                        source: Some(source.clone()),
                    },
                );
                added += 1;
            }
        }
        added
    }
}

/// The OpenAPI links of the response entry `status` matches: (target operation name,
/// parameter, expression). A target the document does not have is left out.
pub fn links_of(
    api: &crate::spec::Api,
    op: &crate::spec::Operation,
    status: Option<u16>,
) -> Vec<(String, String, String)> {
    let Some(response) = status.and_then(|s| op.response_for(s)) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for link in &response.links {
        let target = match &link.target {
            crate::spec::LinkTarget::OperationId(id) => api
                .operations
                .iter()
                .find(|o| o.key.id.as_deref() == Some(id.as_str())),
            crate::spec::LinkTarget::Pointer(pointer) => {
                api.operations.iter().find(|o| &o.pointer == pointer)
            }
        };
        let Some(target) = target else { continue };
        let name = target.key.name();
        for (parameter, expression) in &link.parameters {
            out.push((name.clone(), parameter.clone(), expression.clone()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use serde_json::json;

    fn any(v: &Value) -> Option<Value> {
        Some(v.clone())
    }

    fn recall(m: &Memory, name: &str, location: Location, path: &str) -> Option<(Value, String)> {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        // The newest: a draw of 0.7 or more picks another one; seed 1 draws the newest.
        m.recall("op", name, location, path, &mut rng, &any)
            .map(|(v, b)| (v, b.map(|b| b.to_text()).unwrap_or_default()))
    }

    /// An envelope-wrapped creation feeds a child collection named after the parent, three
    /// levels down.
    #[test]
    fn ids_inside_envelopes_flow_into_nested_collections() {
        let mut m = Memory::default();
        m.learn(
            "/buckets",
            1,
            &json!({"data": {"id": "b1", "owner": {"id": "u9"}}}),
        );
        m.learn(
            "/buckets/{bucket_id}/collections",
            2,
            &json!({"data": {"id": "c1"}}),
        );
        assert_eq!(
            recall(
                &m,
                "bucket_id",
                Location::Path,
                "/buckets/{bucket_id}/collections"
            ),
            Some((json!("b1"), "1#/data/id".into()))
        );
        assert_eq!(
            recall(
                &m,
                "collection_id",
                Location::Path,
                "/buckets/{bucket_id}/collections/{collection_id}/records"
            ),
            Some((json!("c1"), "2#/data/id".into()))
        );
        // A generic name takes ids of the collection the path puts it under, not others.
        assert_eq!(
            recall(&m, "id", Location::Path, "/buckets/{id}"),
            Some((json!("b1"), "1#/data/id".into()))
        );
        assert_eq!(recall(&m, "id", Location::Path, "/users/{id}"), None);
        // A nested object's id is learned under its key.
        assert_eq!(
            recall(&m, "ownerId", Location::Query, "/buckets"),
            Some((json!("u9"), "1#/data/owner/id".into()))
        );
    }

    /// A list answer under a key of its own teaches the ids of its items.
    #[test]
    fn list_answers_under_a_key_teach_their_items() {
        let mut m = Memory::default();
        m.learn(
            "/dags",
            4,
            &json!({"dags": [{"dag_id": "etl"}, {"dag_id": "report"}], "total_entries": 2}),
        );
        let got = recall(&m, "dag_id", Location::Path, "/dags/{dag_id}/tasks").unwrap();
        assert_eq!(got, (json!("report"), "4#/dags/1/dag_id".into()));
    }

    /// `Location` of a creation, and a key a PUT chose, are ids of the collection.
    #[test]
    fn locations_and_client_chosen_keys_are_learned() {
        let mut m = Memory::default();
        m.learn_answer(&Answer {
            method: "POST",
            path: "/jobs",
            seq: 5,
            body: None,
            location: Some("http://h/api/jobs/j-42?x=1"),
            path_values: Vec::new(),
            request: None,
            links: &[],
        });
        assert_eq!(
            recall(&m, "jobId", Location::Path, "/jobs/{jobId}"),
            Some((json!("j-42"), "5#header:location".into()))
        );
        let b = Binding::parse("5#header:location").unwrap();
        assert_eq!(b.resolve(None, Some("/jobs/j-43")), Some(json!("j-43")));
        let key = json!("my-key");
        m.learn_answer(&Answer {
            method: "PUT",
            path: "/things/{thing_key}",
            seq: 6,
            body: None,
            location: None,
            path_values: vec![("thing_key", &key)],
            request: None,
            links: &[],
        });
        assert_eq!(
            recall(&m, "thing_key", Location::Path, "/things/{thing_key}/parts"),
            Some((json!("my-key"), String::new()))
        );
        // Forgotten once its use answered 404.
        m.forget(&key);
        assert_eq!(
            recall(&m, "thing_key", Location::Path, "/things/{thing_key}/parts"),
            None
        );
    }

    /// An OpenAPI link sends a value to a parameter whose name shares nothing with it.
    #[test]
    fn links_send_values_where_they_say() {
        let mut m = Memory::default();
        let links = vec![
            (
                "fetchWidget".to_owned(),
                "w".to_owned(),
                "$response.body#/ref/code".to_owned(),
            ),
            (
                "fetchWidget".to_owned(),
                "tag".to_owned(),
                "$request.query.label".to_owned(),
            ),
            ("fetchWidget".to_owned(), "x".to_owned(), "$url".to_owned()),
        ];
        let request = TestCase {
            operation: "makeWidget".into(),
            method: "POST".into(),
            path: "/widgets".into(),
            parameters: vec![crate::model::ParameterValue {
                location: Location::Query,
                name: "label".into(),
                value: json!("blue"),
            }],
            body: None,
            strategy: crate::model::Strategy::Nominal,
            mode: String::new(),
            origins: Default::default(),
            intent: Default::default(),
            mutation: None,
            series_step: None,
            credentials: None,
            shrinking: None,
            identity: None,
        };
        m.learn_answer(&Answer {
            method: "POST",
            path: "/widgets",
            seq: 9,
            body: Some(&json!({"ref": {"code": "Q-1"}})),
            location: None,
            path_values: Vec::new(),
            request: Some(&request),
            links: &links,
        });
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let got = m.recall(
            "fetchWidget",
            "w",
            Location::Path,
            "/gadgets/{w}",
            &mut rng,
            &any,
        );
        assert_eq!(got, Some((json!("Q-1"), Binding::parse("9#/ref/code"))));
        let got = m.recall(
            "fetchWidget",
            "tag",
            Location::Query,
            "/gadgets/{w}",
            &mut rng,
            &any,
        );
        assert_eq!(got, Some((json!("blue"), None)));
        assert!(!m.knows("fetchWidget", "x", Location::Query, "/gadgets/{w}"));
        assert!(!m.knows("otherOp", "w", Location::Path, "/gadgets/{w}"));
    }

    fn api(paths: &[(&str, &str, &[&str])]) -> Arc<Vocabulary> {
        let operations: Vec<serde_json::Value> = paths
            .iter()
            .map(|(method, path, query)| {
                let mut parameters: Vec<Value> = path
                    .split('/')
                    .filter_map(|s| s.strip_prefix('{')?.strip_suffix('}'))
                    .map(|n| json!({"name": n, "in": "path", "required": true, "schema": {"type": "string"}}))
                    .collect();
                parameters.extend(
                    query
                        .iter()
                        .map(|n| json!({"name": n, "in": "query", "schema": {"type": "string"}})),
                );
                json!([path, method.to_lowercase(), {"parameters": parameters, "responses": {"200": {"description": "ok"}}}])
            })
            .collect();
        let mut paths_doc = serde_json::Map::new();
        for op in operations {
            let (path, method, body) = (
                op[0].as_str().unwrap(),
                op[1].as_str().unwrap(),
                op[2].clone(),
            );
            paths_doc
                .entry(path.to_owned())
                .or_insert_with(|| json!({}))
                .as_object_mut()
                .unwrap()
                .insert(method.to_owned(), body);
        }
        let doc =
            json!({"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": paths_doc});
        let api = crate::spec::parse(doc.to_string().as_bytes(), "t.json", None).unwrap();
        Arc::new(Vocabulary::of(&api))
    }

    /// The children a list answer under one parent gives go with that parent: the run
    /// that learned dag runs of two DAGs recalls a run's id with its own DAG's id.
    #[test]
    fn a_child_id_is_recalled_with_the_parent_id_it_was_found_under() {
        let vocabulary = api(&[
            ("GET", "/dags", &[]),
            ("GET", "/dags/{dag_id}/dagRuns", &[]),
            ("GET", "/dags/{dag_id}/dagRuns/{dag_run_id}", &[]),
        ]);
        let mut m = Memory::new(vocabulary);
        let runs = |dag: &str| {
            json!({"dag_runs": [
                {"dag_run_id": format!("{dag}-run-1"), "state": "success"},
                {"dag_run_id": format!("{dag}-run-2"), "state": "failed"}
            ]})
        };
        let (one, two) = (runs("alpha"), runs("beta"));
        let (alpha, beta) = (json!("alpha"), json!("beta"));
        for (seq, body, dag) in [(1, &one, &alpha), (2, &two, &beta)] {
            m.learn_answer(&Answer {
                method: "GET",
                path: "/dags/{dag_id}/dagRuns",
                seq,
                body: Some(body),
                location: None,
                path_values: vec![("dag_id", dag)],
                request: None,
                links: &[],
            });
        }
        let names = ["dag_id".to_owned(), "dag_run_id".to_owned()];
        for seed in 0..32 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let t = m.together(&names, &mut rng).expect("a group holds both");
            let dag = t.get("dag_id").unwrap().0.as_str().unwrap().to_owned();
            let (run, binding) = t.get("dagRunId").unwrap();
            assert!(
                run.as_str().unwrap().starts_with(&format!("{dag}-run-")),
                "{run} goes with {dag}"
            );
            assert!(binding.is_some_and(|b| b.pointer.starts_with("/dag_runs/")));
        }
        // One name alone, or names no group holds two of, draw nothing.
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        assert!(m.together(&names[..1], &mut rng).is_none());
        assert!(m
            .together(&["dag_id".to_owned(), "other".to_owned()], &mut rng)
            .is_none());
        // A forgotten value takes its groups with it.
        m.forget(&json!("alpha-run-1"));
        m.forget(&json!("alpha-run-2"));
        for seed in 0..8 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let t = m.together(&names, &mut rng).unwrap();
            assert_eq!(t.get("dag_id").unwrap().0, &beta);
        }
    }

    /// A list answer teaches the values of fields named like a parameter, whatever the
    /// name, and a list's identifying fields under the collection's singular; fields no
    /// parameter takes are not kept.
    #[test]
    fn values_are_learned_under_any_name_a_parameter_takes() {
        let vocabulary = api(&[
            ("GET", "/books/v1", &[]),
            ("GET", "/books/v1/{book_title}", &[]),
            ("GET", "/pools", &[]),
            ("GET", "/pools/{pool_name}", &[]),
            ("GET", "/variables/{variable_key}", &[]),
            ("GET", "/roles/{role_name}", &[]),
            ("GET", "/runs/{run_id}/xcomEntries/{xcom_key}", &[]),
            ("GET", "/users/{username}", &["state"]),
        ]);
        let mut m = Memory::new(vocabulary);
        m.learn(
            "/books/v1",
            1,
            &json!({"Books": [{"book_title": "bookTitle77", "user": "name1"}]}),
        );
        assert_eq!(
            recall(&m, "book_title", Location::Path, "/books/v1/{book_title}"),
            Some((json!("bookTitle77"), "1#/Books/0/book_title".into()))
        );
        m.learn(
            "/pools",
            2,
            &json!({"pools": [{"name": "default_pool", "slots": 128}]}),
        );
        assert_eq!(
            recall(&m, "pool_name", Location::Path, "/pools/{pool_name}"),
            Some((json!("default_pool"), "2#/pools/0/name".into()))
        );
        // Listed in another answer: the singular of the key that lists them.
        m.learn(
            "/everything",
            3,
            &json!({"roles": [{"name": "Admin"}], "variables": [{"key": "k1", "value": "v"}]}),
        );
        assert_eq!(
            recall(&m, "role_name", Location::Path, "/roles/{role_name}"),
            Some((json!("Admin"), "3#/roles/0/name".into()))
        );
        assert_eq!(
            recall(
                &m,
                "variable_key",
                Location::Path,
                "/variables/{variable_key}"
            ),
            Some((json!("k1"), "3#/variables/0/key".into()))
        );
        // The item path's parameter names the field: `xcom_key` ← `key`.
        m.learn(
            "/runs/{run_id}/xcomEntries",
            4,
            &json!({"xcom_entries": [{"key": "return_value", "timestamp": "t"}]}),
        );
        assert_eq!(
            recall(
                &m,
                "xcom_key",
                Location::Path,
                "/runs/{run_id}/xcomEntries/{xcom_key}"
            ),
            Some((json!("return_value"), "4#/xcom_entries/0/key".into()))
        );
        // An exact name wins over a field it ends with; a query parameter's name is
        // learned too; a field nothing takes is not.
        m.learn(
            "/users",
            5,
            &json!({"users": [{"name": "Alice", "username": "alice", "state": "on", "slots": 3}]}),
        );
        assert_eq!(
            recall(&m, "username", Location::Path, "/users/{username}"),
            Some((json!("alice"), "5#/users/0/username".into()))
        );
        assert_eq!(
            recall(&m, "state", Location::Query, "/users"),
            Some((json!("on"), "5#/users/0/state".into()))
        );
        assert!(!m.values.contains_key("slots"));
        assert!(!m.values.contains_key("user"));
    }

    /// An accepted creation whose answer names no id: what it sent under a parameter's
    /// name names the new object. With an id in the answer, the body teaches nothing.
    #[test]
    fn a_creation_answered_without_id_is_known_by_what_it_sent() {
        let vocabulary = api(&[
            ("POST", "/books/v1", &[]),
            ("GET", "/books/v1/{book_title}", &[]),
            ("POST", "/pets", &[]),
            ("GET", "/pets/{name}", &[]),
        ]);
        let mut m = Memory::new(vocabulary);
        assert!(m.keys_own_item("/books/v1", "book_title"));
        assert!(!m.keys_own_item("/books/v1", "secret"));
        let mut request = TestCase {
            operation: "POST /books/v1".into(),
            method: "POST".into(),
            path: "/books/v1".into(),
            parameters: Vec::new(),
            body: Some(crate::model::CaseBody {
                media_type: "application/json".into(),
                value: json!({"book_title": "Dune", "secret": "s3"}),
                sent_as: None,
            }),
            strategy: crate::model::Strategy::Nominal,
            mode: String::new(),
            origins: Default::default(),
            intent: Default::default(),
            mutation: None,
            series_step: None,
            credentials: None,
            shrinking: None,
            identity: None,
        };
        fn answer<'a>(
            seq: u64,
            path: &'a str,
            body: Option<&'a Value>,
            request: Option<&'a TestCase>,
        ) -> Answer<'a> {
            Answer {
                method: "POST",
                path,
                seq,
                body,
                location: None,
                path_values: Vec::new(),
                request,
                links: &[],
            }
        }
        let said = json!({"message": "Book has been added.", "status": "success"});
        m.learn_answer(&answer(1, "/books/v1", Some(&said), Some(&request)));
        assert_eq!(
            recall(&m, "book_title", Location::Path, "/books/v1/{book_title}"),
            Some((json!("Dune"), String::new()))
        );
        assert!(!m.values.contains_key("secret"));
        // The creation's own key, generic: by its collection.
        request.body.as_mut().unwrap().value = json!({"name": "Rex"});
        m.learn_answer(&answer(2, "/pets", None, Some(&request)));
        assert_eq!(
            recall(&m, "name", Location::Path, "/pets/{name}"),
            Some((json!("Rex"), String::new()))
        );
        // An answer with an id of its own: the id names it, not the body.
        request.body.as_mut().unwrap().value = json!({"name": "Tom"});
        m.learn_answer(&answer(3, "/pets", Some(&json!({"id": 4})), Some(&request)));
        assert_eq!(
            recall(&m, "name", Location::Path, "/pets/{name}"),
            Some((json!(4), "3#/id".into()))
        );
    }

    #[test]
    fn a_created_id_flows_into_the_item_path() {
        let mut m = Memory::default();
        m.learn("/pets", 3, &json!({"id": 7, "name": "Rex"}));
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let (value, source) = m
            .recall(
                "getPet",
                "petId",
                Location::Path,
                "/pets/{petId}",
                &mut rng,
                &any,
            )
            .unwrap();
        assert_eq!(value, json!(7));
        let source = source.unwrap();
        assert_eq!(source.to_text(), "3#/id");
        assert_eq!(Binding::parse("3#/id"), Some(source));
        assert_eq!(
            m.recall(
                "getOrder",
                "orderId",
                Location::Path,
                "/orders/{orderId}",
                &mut rng,
                &any
            ),
            None
        );
    }
}
