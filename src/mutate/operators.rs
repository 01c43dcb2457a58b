//! The fifteen operators: for a kind and a place, the candidate changes, and the check that
//! keeps a candidate only if the document forbids its result.
//!
//! Every operator proposes candidates from what the document states at the place (a bound, a
//! closed list, a declared kind, ...) and every candidate that changes a value is then judged
//! by [`check::violations`]: it is kept only if it breaks something new, all of it at the
//! place (for `dropRequired`, at the object that requires the member), and the judgement was
//! made. That is what keeps every recorded intent true whatever the shape: an `anyOf` that
//! still admits the value, a missing `type`, a `null` allowed on the way, a pattern the engine
//! gave up on - each simply leaves no candidate standing, and the place is not offered.
//!
//! The changes the validator cannot judge are decided by rule, each with its reason:
//! `dropRequired` and `wrongLocation` on parameters (the operation declares them required),
//! `emptyBody` (the body is required), `notJson` (the text is checked not to parse),
//! `wrongContentType` (the media type is one the operation neither offers nor covers), and
//! `beyondItsWidth` written as text (a number serde_json cannot hold, placed only where a
//! width or a bound rules it out).
//!
//! Depends on: `model`, `spec::model`, `schema::keyword`, `mutate::{check, place, values,
//! awkward}`.

use crate::schema::keyword::Keywords;
use std::borrow::Cow;
use std::cell::OnceCell;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{json, Map, Number, Value};

use crate::model::{Location, ParameterValue, TestCase};
use crate::spec::{Operation, Parameter, SchemaSet};

use super::check::{self, UNDECIDED};
use super::place::{self, BodyNode, Place, Target};
use super::values;
use super::{awkward, MutationKind, MutationOptions};

/// Longest oversized word put into a parameter: past it the request is refused for the
/// length of its address or header, not for the rule the change breaks.
const PARAMETER_OVERSIZE: usize = 1024;
/// Most items an oversized list in a parameter gets.
const PARAMETER_OVERSIZE_ITEMS: usize = 100;
/// Longest accepted word `breakAPattern` varies; past it, two short fixed words are tried
/// (docs/design-notes.md, Where a change never goes: a pattern is a program the document wrote, and may be hostile).
const PATTERN_VARIATION_LIMIT: usize = 16;

/// What a candidate does to the accepted request.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Change {
    /// The parameter at the place gets this value (borrowed when it is one of the shared
    /// wrong words: a change lists every candidate before one is chosen, and copying each
    /// word was most of what listing them cost).
    SetParameter(Cow<'static, Value>),
    /// The parameter is left out.
    DropParameter,
    /// The parameter moves to another location, under the same name.
    MoveParameter(Location),
    /// The body value at the place gets this value (the root when the path is empty).
    SetBody(Value),
    /// The member at the place is left out of the body.
    RemoveFromBody,
    /// The body travels as this text (and, when given, under this media type).
    BodyText {
        media_type: Option<String>,
        text: String,
    },
}

/// One candidate change and the words that describe it.
#[derive(Clone, Debug)]
pub(crate) struct Candidate {
    pub change: Change,
    what: What,
}

/// The words of a candidate, or what they are made from.
#[derive(Clone, Debug)]
enum What {
    Said(String),
    /// "sent <the value> where <kinds> is declared", written only for the candidate a
    /// mutation keeps: a wrong-type list has a candidate for every word of its pool, and
    /// writing each one's words was a tenth of generating a test case.
    WrongType {
        kinds: std::rc::Rc<str>,
    },
}

impl Candidate {
    /// What the change does, in words.
    pub fn what(&self) -> String {
        match (&self.what, &self.change) {
            (What::Said(words), _) => words.clone(),
            (What::WrongType { kinds }, Change::SetParameter(v)) => {
                format!("sent {} where {kinds} is declared", short(v))
            }
            (What::WrongType { kinds }, Change::SetBody(v)) => {
                format!("sent {} where {kinds} is declared", short(v))
            }
            (What::WrongType { kinds }, _) => format!("sent a value where {kinds} is declared"),
        }
    }
}

fn cand(change: Change, what: impl Into<String>) -> Candidate {
    Candidate {
        change,
        what: What::Said(what.into()),
    }
}

fn wrong_type(change: Change, kinds: &std::rc::Rc<str>) -> Candidate {
    Candidate {
        change,
        what: What::WrongType {
            kinds: kinds.clone(),
        },
    }
}

/// What the operators know of one accepted request.
pub(crate) struct Ctx<'a> {
    pub op: &'a Operation,
    pub schemas: &'a SchemaSet,
    pub accepted: &'a TestCase,
    pub options: &'a MutationOptions,
    /// The schema of the accepted body's media type, when the body is JSON and was sent as
    /// its value written out.
    pub body_schema: Option<Value>,
    pub nodes: Vec<BodyNode>,
    body_baseline: Vec<(String, String)>,
    /// The body's shape, ready to judge candidates.
    body_judge: Option<check::Judge<'a>>,
    /// Each declared parameter's facets and shape ready to judge candidates, by its index
    /// in the operation, worked out when first asked: a mutation changes one parameter,
    /// and asks its facets several times.
    parameters: Vec<OnceCell<ParameterShape<'a>>>,
}

/// What the operators read of one declared parameter's schema.
struct ParameterShape<'a> {
    /// `None`: a shape that cannot be followed (docs/design-notes.md, Every intent is true), which gets no candidates.
    facets: Option<Map<String, Value>>,
    judge: check::Judge<'a>,
}

impl<'a> Ctx<'a> {
    pub fn new(
        op: &'a Operation,
        schemas: &'a SchemaSet,
        accepted: &'a TestCase,
        options: &'a MutationOptions,
        pick: &mut dyn FnMut(usize) -> usize,
    ) -> Ctx<'a> {
        let body_schema = accepted.body.as_ref().and_then(|b| {
            if b.sent_as.is_some() || !place::is_json_media(&b.media_type) {
                return None;
            }
            op.request_body
                .as_ref()?
                .content
                .iter()
                .find(|m| m.media_type.eq_ignore_ascii_case(&b.media_type))
                .map(|m| m.schema.clone())
        });
        let body_judge = body_schema.as_ref().map(|s| check::Judge::new(schemas, s));
        let (nodes, body_baseline) = match (&body_schema, &accepted.body, &body_judge) {
            (Some(s), Some(b), Some(j)) => (
                place::walk_body(schemas, s, &b.value, options.nesting_depth, pick),
                j.violations(&b.value),
            ),
            _ => (Vec::new(), Vec::new()),
        };
        let parameters = op.parameters.iter().map(|_| OnceCell::new()).collect();
        Ctx {
            op,
            schemas,
            accepted,
            options,
            body_schema,
            nodes,
            body_baseline,
            body_judge,
            parameters,
        }
    }

    /// The facets and judge of declared parameter `(location, name)`; `None` when it is not
    /// declared.
    fn shape(&self, location: Location, name: &str) -> Option<&ParameterShape<'a>> {
        let at = self
            .op
            .parameters
            .iter()
            .position(|p| p.location == location && p.name == name)?;
        let decl = &self.op.parameters[at];
        let shape = self.parameters[at].get_or_init(|| ParameterShape {
            facets: place::facets(self.schemas, &decl.schema),
            judge: check::Judge::new(self.schemas, &decl.schema),
        });
        Some(shape)
    }

    fn declared(&self, location: Location, name: &str) -> Option<&'a Parameter> {
        self.op
            .parameters
            .iter()
            .find(|p| p.location == location && p.name == name)
    }

    fn carried(&self, location: Location, name: &str) -> Option<&'a ParameterValue> {
        self.accepted
            .parameters
            .iter()
            .find(|p| p.location == location && p.name == name)
    }

    /// The places a kind may go before its candidates are judged.
    pub fn raw_places(&self, kind: &MutationKind) -> Vec<Place> {
        let mut out = Vec::new();
        if kind.is_body_level() {
            if self.body_schema.is_some() {
                out.push(Place::body(Vec::new()));
            }
            return out;
        }
        for pv in &self.accepted.parameters {
            let Some(decl) = self.declared(pv.location, &pv.name) else {
                continue;
            };
            if pv.location == Location::Header && values::client_written_header(&pv.name) {
                continue;
            }
            if pv.location == Location::Path
                && matches!(
                    kind,
                    MutationKind::DropRequired
                        | MutationKind::WrongLocation
                        | MutationKind::SendEmpty
                )
            {
                continue;
            }
            if matches!(kind, MutationKind::SendNull) {
                // A parameter cannot say null: it would travel as a word or as nothing.
                continue;
            }
            if matches!(
                kind,
                MutationKind::DropRequired | MutationKind::WrongLocation
            ) && !decl.required
            {
                continue;
            }
            out.push(Place::parameter(pv.location, &pv.name));
        }
        for node in &self.nodes {
            if node.path.is_empty() && *kind != MutationKind::BeyondItsWidth {
                // The root is the body as a whole: only the body-level kinds and the number
                // one (for a body that is one number) go there.
                continue;
            }
            if *kind == MutationKind::DropRequired && !node.required {
                continue;
            }
            if *kind != MutationKind::DropRequired && node.facets.is_none() {
                // A shape that cannot be followed is not judged (docs/design-notes.md, Every intent is true).
                continue;
            }
            if *kind == MutationKind::WrongLocation {
                continue;
            }
            out.push(Place::body(node.path.clone()));
        }
        out
    }

    /// Every candidate of `kind` at `place`, in a fixed order.
    pub fn candidates(&self, kind: &MutationKind, at: &Place) -> Vec<Candidate> {
        match &at.target {
            Target::Parameter { location, name } => {
                self.parameter_candidates(kind, *location, name)
            }
            Target::Body if kind.is_body_level() => self.body_level_candidates(kind),
            Target::Body => self.body_candidates(kind, at),
        }
    }

    /// Whether a candidate's result is one the document forbids, with the blame at the place.
    pub fn holds(&self, kind: &MutationKind, at: &Place, c: &Candidate) -> bool {
        match (&at.target, &c.change) {
            (Target::Parameter { location, name }, Change::SetParameter(v)) => {
                // Judged only where the accepted request carried the parameter: the blame
                // is the change from what it sent.
                let (Some(shape), Some(carried)) =
                    (self.shape(*location, name), self.carried(*location, name))
                else {
                    return false;
                };
                if !values::can_travel(*location, v) && !matches!(**v, Value::Array(_)) {
                    return false;
                }
                let declared = shape.facets.as_ref().map(place::types).unwrap_or_default();
                let judge = &shape.judge;
                let before = judge.violations(&values::wire_reading(&declared, &carried.value));
                let after = judge.violations(&values::wire_reading(&declared, v));
                blame_is_at(&before, &after, "")
            }
            (Target::Parameter { .. }, Change::DropParameter | Change::MoveParameter(_)) => true,
            (Target::Body, Change::SetBody(_) | Change::RemoveFromBody) => {
                let (Some(judge), Some(new)) = (&self.body_judge, self.body_after(at, &c.change))
                else {
                    return false;
                };
                let after = judge.violations(&new);
                let expected = match c.change {
                    Change::RemoveFromBody => {
                        place::pointer_of(&at.path[..at.path.len().saturating_sub(1)])
                    }
                    _ => at.pointer(),
                };
                blame_is_at(&self.body_baseline, &after, &expected)
            }
            (Target::Body, Change::BodyText { text, media_type }) => match kind {
                MutationKind::NotJson => serde_json::from_str::<Value>(text).is_err(),
                MutationKind::EmptyBody => {
                    text.is_empty() && self.op.request_body.as_ref().is_some_and(|b| b.required)
                }
                MutationKind::WrongContentType => media_type
                    .as_deref()
                    .is_some_and(|m| !self.takes_media_type(m)),
                // Decided when the candidate was built: only where a width or a bound rules
                // the number out (see `wide_texts`).
                MutationKind::BeyondItsWidth => true,
                _ => false,
            },
            _ => false,
        }
    }

    /// The body value after a change at a place.
    pub fn body_after(&self, at: &Place, change: &Change) -> Option<Value> {
        let mut value = self.accepted.body.as_ref()?.value.clone();
        match change {
            Change::SetBody(v) => {
                let slot = place::get_mut(&mut value, &at.path)?;
                *slot = v.clone();
            }
            Change::RemoveFromBody => {
                if !place::remove(&mut value, &at.path) {
                    return None;
                }
            }
            _ => return None,
        }
        Some(value)
    }

    /// Whether the operation takes a body under `media` (exact, `type/*` or `*/*`).
    fn takes_media_type(&self, media: &str) -> bool {
        let Some(body) = &self.op.request_body else {
            return false;
        };
        let want = media.to_ascii_lowercase();
        let (want_type, _) = want.split_once('/').unwrap_or((want.as_str(), ""));
        body.content.iter().any(|m| {
            let offered = m
                .media_type
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            offered == want
                || offered == "*/*"
                || offered.strip_suffix("/*").is_some_and(|t| t == want_type)
        })
    }

    fn parameter_candidates(
        &self,
        kind: &MutationKind,
        location: Location,
        name: &str,
    ) -> Vec<Candidate> {
        let (Some(shape), Some(pv)) = (self.shape(location, name), self.carried(location, name))
        else {
            return Vec::new();
        };
        let Some(f) = &shape.facets else {
            return Vec::new();
        };
        let declared = place::types(f);
        let v = &pv.value;
        let set = |x: Value, what: String| cand(Change::SetParameter(Cow::Owned(x)), what);
        match kind {
            MutationKind::DropRequired => vec![cand(
                Change::DropParameter,
                format!("left out the required {} parameter", location.as_str()),
            )],
            MutationKind::WrongLocation => {
                let mut out = Vec::new();
                for to in [Location::Query, Location::Header, Location::Cookie] {
                    if to == location || self.declared(to, name).is_some() {
                        continue;
                    }
                    if matches!(to, Location::Header | Location::Cookie)
                        && (!values::is_token(name)
                            || (to == Location::Header && values::client_written_header(name)))
                    {
                        continue;
                    }
                    out.push(cand(
                        Change::MoveParameter(to),
                        format!(
                            "sent the required {} parameter as a {} instead",
                            location.as_str(),
                            to.as_str()
                        ),
                    ));
                }
                out
            }
            MutationKind::WrongType => {
                if declared.is_empty()
                    || declared
                        .iter()
                        .any(|t| !matches!(t.as_str(), "integer" | "number" | "boolean" | "null"))
                {
                    // On the wire every parameter is text, so a word is never the wrong kind
                    // for a parameter that may be text.
                    return Vec::new();
                }
                let kinds: std::rc::Rc<str> = kind_words(&declared).into();
                parameter_wrong_words(location, &declared)
                    .iter()
                    .map(|w| wrong_type(Change::SetParameter(Cow::Borrowed(*w)), &kinds))
                    .collect()
            }
            MutationKind::OutsideABound
            | MutationKind::BreakAnEnumeration
            | MutationKind::BreakAPattern
            | MutationKind::BreakAFormat => breaking_values(kind, f, v, false)
                .into_iter()
                .map(|(x, what)| set(x, what))
                .collect(),
            MutationKind::SendEmpty => match v {
                Value::Array(_) | Value::Object(_) => Vec::new(),
                _ => vec![set(json!(""), "sent an empty value".into())],
            },
            MutationKind::Oversize => oversize_values(
                f,
                v,
                self.options.oversized_length.min(PARAMETER_OVERSIZE),
                self.options.oversized_items.min(PARAMETER_OVERSIZE_ITEMS),
            )
            .into_iter()
            .map(|(x, what)| set(x, what))
            .collect(),
            MutationKind::BeyondItsWidth => width_values(f, v)
                .into_iter()
                .map(|(x, what)| set(x, what))
                .collect(),
            _ => Vec::new(),
        }
    }

    fn body_candidates(&self, kind: &MutationKind, at: &Place) -> Vec<Candidate> {
        let Some(node) = self.nodes.iter().find(|n| n.path == at.path) else {
            return Vec::new();
        };
        let Some(v) = self
            .accepted
            .body
            .as_ref()
            .and_then(|b| place::get(&b.value, &at.path))
        else {
            return Vec::new();
        };
        if *kind == MutationKind::DropRequired {
            return if node.required {
                vec![cand(Change::RemoveFromBody, "left out the required member")]
            } else {
                Vec::new()
            };
        }
        let Some(f) = &node.facets else {
            return Vec::new();
        };
        let declared = place::types(f);
        let set = |x: Value, what: String| cand(Change::SetBody(x), what);
        match kind {
            MutationKind::WrongType => {
                if declared.is_empty() {
                    return Vec::new();
                }
                let kinds: std::rc::Rc<str> = kind_words(&declared).into();
                body_wrong_pool()
                    .iter()
                    .filter(|x| !values::admitted_by(&declared, x))
                    .map(|x| wrong_type(Change::SetBody(x.clone()), &kinds))
                    .collect()
            }
            MutationKind::OutsideABound
            | MutationKind::BreakAnEnumeration
            | MutationKind::BreakAPattern
            | MutationKind::BreakAFormat => breaking_values(kind, f, v, true)
                .into_iter()
                .map(|(x, what)| set(x, what))
                .collect(),
            MutationKind::SendNull => vec![set(Value::Null, "sent null".into())],
            MutationKind::SendEmpty => {
                let empty = match v {
                    Value::String(_) => json!(""),
                    Value::Array(_) => json!([]),
                    Value::Object(_) => json!({}),
                    _ => return Vec::new(),
                };
                vec![set(empty, "sent an empty value".into())]
            }
            MutationKind::Oversize => oversize_values(
                f,
                v,
                self.options.oversized_length,
                self.options.oversized_items,
            )
            .into_iter()
            .map(|(x, what)| set(x, what))
            .collect(),
            MutationKind::BeyondItsWidth => {
                let mut out: Vec<Candidate> = width_values(f, v)
                    .into_iter()
                    .map(|(x, what)| set(x, what))
                    .collect();
                for (digits, what) in wide_texts(f, v, self.options.oversized_length) {
                    if let Some(text) = self.text_with_number_at(at, &digits) {
                        out.push(cand(
                            Change::BodyText {
                                media_type: None,
                                text,
                            },
                            what,
                        ));
                    }
                }
                out
            }
            _ => Vec::new(),
        }
    }

    /// The accepted body's text with the number at `at` written as `digits`.
    fn text_with_number_at(&self, at: &Place, digits: &str) -> Option<String> {
        let body = self.accepted.body.as_ref()?;
        let mut value = body.value.clone();
        let text = serde_json::to_string(&value).ok()?;
        // A marker that cannot already be in the text, so replacing it touches nothing else.
        let mut marker = String::from("probe-wide-number");
        while text.contains(&marker) {
            marker.push('~');
        }
        *place::get_mut(&mut value, &at.path)? = Value::String(marker.clone());
        let with_marker = serde_json::to_string(&value).ok()?;
        let quoted = format!("\"{marker}\"");
        if with_marker.matches(&quoted).count() != 1 {
            return None;
        }
        Some(with_marker.replacen(&quoted, digits, 1))
    }

    fn body_level_candidates(&self, kind: &MutationKind) -> Vec<Candidate> {
        let (Some(schema), Some(body)) = (&self.body_schema, &self.accepted.body) else {
            return Vec::new();
        };
        let Ok(text) = serde_json::to_string(&body.value) else {
            return Vec::new();
        };
        match kind {
            MutationKind::WrongRoot => {
                let Some(f) = place::facets(self.schemas, schema) else {
                    return Vec::new();
                };
                let declared = place::types(&f);
                if declared.is_empty() {
                    return Vec::new();
                }
                let mut pool = vec![Value::Array(vec![body.value.clone()])];
                if let Value::Array(items) = &body.value {
                    if let Some(first) = items.first() {
                        pool.push(first.clone());
                    }
                }
                pool.extend([json!("probe"), json!(1), json!(true), json!({}), json!([])]);
                pool.into_iter()
                    .filter(|x| !values::admitted_by(&declared, x))
                    .map(|x| {
                        let what = format!(
                            "sent {} as the whole body, where {} is declared",
                            short(&x),
                            kind_words(&declared)
                        );
                        cand(Change::SetBody(x), what)
                    })
                    .collect()
            }
            MutationKind::EmptyBody => vec![cand(
                Change::BodyText {
                    media_type: None,
                    text: String::new(),
                },
                "sent no bytes at all where a body is required",
            )],
            MutationKind::NotJson => {
                let mut out = Vec::new();
                let mut push = |t: String, what: &str| {
                    out.push(cand(
                        Change::BodyText {
                            media_type: None,
                            text: t,
                        },
                        what.to_string(),
                    ))
                };
                let chars: Vec<char> = text.chars().collect();
                for cut in [
                    chars.len() / 2,
                    chars.len() / 3,
                    chars.len().saturating_sub(1),
                ] {
                    if cut > 0 && cut < chars.len() {
                        push(chars[..cut].iter().collect(), "cut the body off partway");
                    }
                }
                push(format!("{text} probe"), "followed the body by a stray word");
                if let Some(i) = text.find('"') {
                    let mut t = text.clone();
                    t.insert(i + 1, '\n');
                    push(t, "wrote a raw line break inside the body's first string");
                }
                if let Value::Object(m) = &body.value {
                    if let Some((k, _)) = m.iter().next() {
                        if let Ok(key) = serde_json::to_string(k) {
                            let head = format!("{{{key}:");
                            if let Some(rest) = text.strip_prefix(&head) {
                                push(
                                    format!("{{{key}{rest}"),
                                    "left out the colon after the first member's name",
                                );
                            }
                        }
                    }
                }
                let nonempty = match &body.value {
                    Value::Object(m) => !m.is_empty(),
                    Value::Array(a) => !a.is_empty(),
                    _ => false,
                };
                if nonempty {
                    let mut t = text.clone();
                    t.insert(t.len() - 1, ',');
                    push(t, "wrote a comma after the last item");
                }
                push("this is not JSON".into(), "sent the words this is not JSON");
                out
            }
            MutationKind::WrongContentType => [
                "text/plain",
                "application/xml",
                "application/x-www-form-urlencoded",
            ]
            .into_iter()
            .filter(|m| !self.takes_media_type(m))
            .map(|m| {
                cand(
                    Change::BodyText {
                        media_type: Some(m.to_string()),
                        text: text.clone(),
                    },
                    format!("sent the body under {m}, which the operation does not take"),
                )
            })
            .collect(),
            _ => Vec::new(),
        }
    }
}

/// The values of the wrong kind inside a body: the class's own few, then the awkward list.
fn body_wrong_pool() -> &'static [Value] {
    static POOL: OnceLock<Vec<Value>> = OnceLock::new();
    POOL.get_or_init(|| {
        let mut pool = values::own_wrong_kinds();
        for a in awkward::all_values() {
            if !pool.contains(a) {
                pool.push(a.clone());
            }
        }
        pool
    })
}

/// The words of the wrong kind for a parameter: the class's own, then the awkward words, none
/// longer than a parameter may carry.
fn parameter_wrong_pool() -> &'static [Value] {
    static POOL: OnceLock<Vec<Value>> = OnceLock::new();
    POOL.get_or_init(|| {
        let mut words: Vec<String> = values::parameter_wrong_words()
            .into_iter()
            .map(str::to_string)
            .collect();
        for (kind, a) in awkward::list() {
            if let (awkward::JsonKind::String, Value::String(s)) = (kind, a) {
                if !words.contains(s) && s.chars().count() <= values::PARAMETER_WORD_LIMIT {
                    words.push(s.clone());
                }
            }
        }
        words.into_iter().map(Value::String).collect()
    })
}

/// The words of [`parameter_wrong_pool`] that can travel at `location` and do not read as
/// any of the `declared` types: the same for every request of an operation, so worked out
/// once per (location, types) (filtering the pool for each wrong-type change was a percent
/// of a run's CPU against a fast API). The few combinations documents use are kept.
fn parameter_wrong_words(location: Location, declared: &[String]) -> Arc<[&'static Value]> {
    type Known = Vec<(Location, Vec<String>, Arc<[&'static Value]>)>;
    static WORDS: OnceLock<Mutex<Known>> = OnceLock::new();
    let words = WORDS.get_or_init(|| Mutex::new(Vec::new()));
    let known = |m: &Known| {
        m.iter()
            .find(|(l, d, _)| *l == location && d.as_slice() == declared)
            .map(|(_, _, w)| w.clone())
    };
    if let Some(found) = words.lock().ok().and_then(|m| known(&m)) {
        return found;
    }
    let found: Arc<[&'static Value]> = parameter_wrong_pool()
        .iter()
        .filter(|w| values::can_travel(location, w))
        .filter(|w| !values::reads_as_declared(declared, w))
        .collect();
    if let Ok(mut list) = words.lock() {
        // Bounded: there are four locations and a few type lists, but a document may hold
        // odd ones.
        if list.len() >= 64 {
            list.clear();
        }
        list.push((location, declared.to_vec(), found.clone()));
    }
    found
}

/// The new violations (those the accepted value did not already have) exist, were all judged,
/// and all sit at `pointer`.
fn blame_is_at(before: &[(String, String)], after: &[(String, String)], pointer: &str) -> bool {
    let new: Vec<&(String, String)> = after.iter().filter(|v| !before.contains(v)).collect();
    !new.is_empty()
        && after.iter().all(|(_, k)| k != UNDECIDED)
        && new.iter().all(|(p, _)| p == pointer)
}

/// A value for a person, shortened; never serialises a long value whole, since every
/// candidate is described before it is judged.
fn short(v: &Value) -> String {
    match v {
        Value::String(s) if s.len() > 40 => {
            let head: String = s.chars().take(16).collect();
            format!("{:?}... ({} characters)", head, s.chars().count())
        }
        Value::Array(items) if items.len() > 8 => format!("a list of {} items", items.len()),
        Value::Object(m) if m.len() > 8 => format!("an object of {} members", m.len()),
        _ => {
            let text = v.to_string();
            if text.chars().count() > 60 {
                let head: String = text.chars().take(40).collect();
                format!("{head}...")
            } else {
                text
            }
        }
    }
}

fn kind_words(declared: &[String]) -> String {
    let words: Vec<&str> = declared
        .iter()
        .map(|t| match t.as_str() {
            "integer" => "a whole number",
            "number" => "a number",
            "boolean" => "a yes-or-no",
            "string" => "a word",
            "array" => "a list",
            "object" => "an object",
            "null" => "null",
            _ => "a value",
        })
        .collect();
    words.join(" or ")
}

fn num(f: f64) -> Option<Value> {
    if f.fract() == 0.0 && f.abs() < 9.0e15 {
        return Some(json!(f as i64));
    }
    Number::from_f64(f).map(Value::Number)
}

fn get_f64(f: &Map<String, Value>, k: &str) -> Option<f64> {
    f.get(k).and_then(Value::as_f64)
}

fn get_usize(f: &Map<String, Value>, k: &str) -> Option<usize> {
    f.get(k)
        .and_then(Value::as_u64)
        .and_then(|n| usize::try_from(n).ok())
}

/// The values of a place that break one of its constraints, each described: one past a
/// bound (`OutsideABound`), outside the values listed (`BreakAnEnumeration`), not matching
/// its pattern (`BreakAPattern`), not of its format (`BreakAFormat`); none for another
/// kind. The same for a parameter and a body member (`in_body`).
fn breaking_values(
    kind: &MutationKind,
    f: &Map<String, Value>,
    v: &Value,
    in_body: bool,
) -> Vec<(Value, String)> {
    match kind {
        MutationKind::OutsideABound => bound_values(f, v, in_body),
        MutationKind::BreakAnEnumeration => enum_breakers(f, v)
            .into_iter()
            .map(|x| {
                let what = format!("sent {} which is not among the values listed", short(&x));
                (x, what)
            })
            .collect(),
        MutationKind::BreakAPattern => pattern_breakers(f, v)
            .into_iter()
            .map(|x| {
                let what = format!("sent {} which does not match its pattern", short(&x));
                (x, what)
            })
            .collect(),
        MutationKind::BreakAFormat => format_candidates(f)
            .into_iter()
            .map(|(x, fmt)| {
                let what = format!("sent {} which is not a valid {fmt}", short(&x));
                (x, what)
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Exactly one past each stated bound: for an exclusive bound the bound itself; a step of the
/// declared `multipleOf` (or of one) so the value stays a multiple and a whole number where
/// those are declared. Lengths and counts by one, a word lengthened by its own last character.
pub(crate) fn bound_values(
    f: &Map<String, Value>,
    v: &Value,
    in_body: bool,
) -> Vec<(Value, String)> {
    let declared = place::types(f);
    let numeric = matches!(v, Value::Number(_))
        || (matches!(v, Value::String(_))
            && declared.iter().any(|t| t == "integer" || t == "number"));
    if numeric {
        return number_bounds(f, v, &declared, in_body);
    }
    match v {
        Value::String(s) => length_bounds(f, s),
        Value::Array(items) => item_bounds(f, items, in_body),
        _ => Vec::new(),
    }
}

/// One step past each of a number's bounds.
fn number_bounds(
    f: &Map<String, Value>,
    v: &Value,
    declared: &[String],
    in_body: bool,
) -> Vec<(Value, String)> {
    let whole = declared.iter().any(|t| t == "integer") && !declared.iter().any(|t| t == "number");
    let step = get_f64(f, "multipleOf").filter(|k| *k > 0.0);
    let as_param = |x: Value| -> Value {
        if in_body {
            x
        } else {
            // A parameter travels as text either way; keep the JSON kind the accepted
            // value had so the request builder writes it the same way.
            match v {
                Value::String(_) => Value::String(values::wire_text(&x)),
                _ => x,
            }
        }
    };
    let mut out = Vec::new();
    for (key, inclusive, low) in [
        ("minimum", true, true),
        ("exclusiveMinimum", false, true),
        ("maximum", true, false),
        ("exclusiveMaximum", false, false),
    ] {
        if let Some(m) = get_f64(f, key) {
            if let Some(x) = num(past(m, inclusive, !low, step, whole)) {
                let what = format!("sent {x}, one step past its {key} of {m}");
                out.push((as_param(x), what));
            }
        }
    }
    out
}

/// One step past bound `m`, above it (`up`) or below it: a step of `step` (staying a
/// multiple of it), else of one (staying whole when `whole`); an exclusive bound is itself
/// past, rounded to a step.
fn past(m: f64, inclusive: bool, up: bool, step: Option<f64>, whole: bool) -> f64 {
    match (step, up, inclusive) {
        (Some(k), false, true) => ((m / k).ceil() - 1.0) * k,
        (Some(k), false, false) => (m / k).floor() * k,
        (Some(k), true, true) => ((m / k).floor() + 1.0) * k,
        (Some(k), true, false) => (m / k).ceil() * k,
        (None, false, true) if whole => m.ceil() - 1.0,
        (None, false, false) if whole => m.floor(),
        (None, true, true) if whole => m.floor() + 1.0,
        (None, true, false) if whole => m.ceil(),
        (None, false, true) => m - 1.0,
        (None, true, true) => m + 1.0,
        (None, _, false) => m,
    }
}

/// A word one character shorter than its `minLength`, one longer than its `maxLength`.
fn length_bounds(f: &Map<String, Value>, s: &str) -> Vec<(Value, String)> {
    let mut out = Vec::new();
    let len = s.chars().count();
    if let Some(min) = get_usize(f, "minLength").filter(|m| *m >= 1 && *m <= len) {
        let t: String = s.chars().take(min - 1).collect();
        out.push((
            Value::String(t),
            format!(
                "sent a word of {} characters, one fewer than its minLength",
                min - 1
            ),
        ));
    }
    if let Some(max) = get_usize(f, "maxLength").filter(|m| *m >= len && *m < 100_000) {
        let last = s.chars().last().unwrap_or('a');
        let mut t = s.to_owned();
        while t.chars().count() < max + 1 {
            t.push(last);
        }
        out.push((
            Value::String(t),
            format!(
                "sent a word of {} characters, one more than its maxLength",
                max + 1
            ),
        ));
    }
    out
}

/// A list one item shorter than its `minItems`, one longer than its `maxItems`.
fn item_bounds(f: &Map<String, Value>, items: &[Value], in_body: bool) -> Vec<(Value, String)> {
    let mut out = Vec::new();
    let len = items.len();
    if let Some(min) = get_usize(f, "minItems").filter(|m| *m >= 1 && *m <= len) {
        // A list outside the body is never stepped down to nothing: an empty list in a
        // query string disappears from the request.
        if in_body || min >= 2 {
            out.push((
                Value::Array(items[..min - 1].to_vec()),
                format!("sent {} items, one fewer than its minItems", min - 1),
            ));
        }
    }
    let unique = f.keyword("uniqueItems") == Some(&Value::Bool(true));
    if let (Some(max), Some(last), false) = (
        get_usize(f, "maxItems").filter(|m| *m >= len && *m < 100_000),
        items.last(),
        unique,
    ) {
        let mut t = items.to_vec();
        while t.len() < max + 1 {
            t.push(last.clone());
        }
        out.push((
            Value::Array(t),
            format!("sent {} items, one more than its maxItems", max + 1),
        ));
    }
    out
}

/// Far past a stated `maxLength` or `maxItems`; never by repeating items that must all differ.
fn oversize_values(
    f: &Map<String, Value>,
    v: &Value,
    length: usize,
    items_len: usize,
) -> Vec<(Value, String)> {
    match v {
        Value::String(s) => {
            let Some(max) = get_usize(f, "maxLength").filter(|m| *m < 1_000_000) else {
                return Vec::new();
            };
            let n = length.max(max + 1);
            let last = s.chars().last().unwrap_or('a');
            let mut t = s.clone();
            let have = t.chars().count();
            t.extend(std::iter::repeat_n(last, n.saturating_sub(have)));
            vec![(
                Value::String(t),
                format!("sent a word of {n} characters, past its maxLength of {max}"),
            )]
        }
        Value::Array(items) => {
            let (Some(max), Some(last)) = (
                get_usize(f, "maxItems").filter(|m| *m < 1_000_000),
                items.last(),
            ) else {
                return Vec::new();
            };
            if f.keyword("uniqueItems") == Some(&Value::Bool(true)) {
                return Vec::new();
            }
            let n = items_len.max(max + 1);
            let mut t = items.clone();
            while t.len() < n {
                t.push(last.clone());
            }
            vec![(
                Value::Array(t),
                format!("sent {n} items, past its maxItems of {max}"),
            )]
        }
        _ => Vec::new(),
    }
}

/// Values off the closed list, of the kind the accepted value has.
pub(crate) fn enum_breakers(f: &Map<String, Value>, v: &Value) -> Vec<Value> {
    let listed: Vec<Value> = match (f.keyword("enum"), f.keyword("const")) {
        (Some(Value::Array(e)), _) => e.clone(),
        (None, Some(c)) => vec![c.clone()],
        _ => return Vec::new(),
    };
    let mut out = Vec::new();
    match v {
        Value::String(s) => {
            let upper = s.to_uppercase();
            let lower = s.to_lowercase();
            for c in [
                if upper != *s { upper } else { lower },
                format!("{s}-not-listed"),
                "probe-not-listed".to_string(),
            ] {
                out.push(Value::String(c));
            }
        }
        Value::Number(_) => {
            let nums: Vec<f64> = listed.iter().filter_map(Value::as_f64).collect();
            let max = nums.iter().cloned().fold(f64::MIN, f64::max);
            let min = nums.iter().cloned().fold(f64::MAX, f64::min);
            if let Some(x) = num((max + 1.0).floor()) {
                out.push(x);
            }
            if let Some(x) = num((min - 1.0).ceil()) {
                out.push(x);
            }
        }
        Value::Bool(b) => out.push(Value::Bool(!b)),
        _ => {}
    }
    out.retain(|c| !listed.contains(c));
    out
}

/// Variations of the accepted word that a pattern may refuse; bounded work: the accepted word
/// is varied only when it is at most sixteen characters long.
pub(crate) fn pattern_breakers(f: &Map<String, Value>, v: &Value) -> Vec<Value> {
    let (Some(Value::String(_)), Value::String(s)) = (f.keyword("pattern"), v) else {
        return Vec::new();
    };
    let mut out: Vec<String> = Vec::new();
    if s.chars().count() <= PATTERN_VARIATION_LIMIT {
        let mut chopped = s.clone();
        chopped.pop();
        let mut tilde = chopped.clone();
        tilde.push('~');
        out.extend([
            format!("{s}!"),
            format!("!{s}"),
            tilde,
            chopped,
            s.to_uppercase(),
            s.to_lowercase(),
            format!("{s} {s}"),
            " ".to_string(),
        ]);
    }
    out.extend(["!".to_string(), "~ ~".to_string()]);
    let mut seen = Vec::new();
    for c in out {
        if c != *s && !seen.contains(&c) {
            seen.push(c);
        }
    }
    seen.into_iter().map(Value::String).collect()
}

/// Words that look like the named format and are not; none where a closed list is stated.
fn format_candidates(f: &Map<String, Value>) -> Vec<(Value, String)> {
    if f.has_keyword("enum") || f.has_keyword("const") {
        return Vec::new();
    }
    let Some(Value::String(fmt)) = f.keyword("format") else {
        return Vec::new();
    };
    values::format_breakers(fmt)
        .into_iter()
        .map(|w| (json!(w), fmt.clone()))
        .collect()
}

/// Numbers just past the width the format names, as values serde_json can hold.
fn width_values(f: &Map<String, Value>, v: &Value) -> Vec<(Value, String)> {
    if !matches!(v, Value::Number(_)) {
        return Vec::new();
    }
    let Some(Value::String(fmt)) = f.keyword("format") else {
        return Vec::new();
    };
    let vals: Vec<Value> = match fmt.as_str() {
        "int32" => vec![json!(i32::MAX as i64 + 1), json!(i32::MIN as i64 - 1)],
        "int64" => vec![json!(i64::MAX as u64 + 1)],
        "float" => vec![
            json!(f32::MAX as f64 * 10.0),
            json!(-(f32::MAX as f64) * 10.0),
        ],
        _ => Vec::new(),
    };
    vals.into_iter()
        .map(|x| {
            let what = format!("sent {x}, past what an {fmt} holds");
            (x, what)
        })
        .collect()
}

/// Numbers no JSON reader holding doubles can keep, written as text: one past an int64's low
/// edge, ten times a double's largest, and a number `length` digits long. Only where the
/// format names a width, or a bound rules the number out, so that the claim is true.
fn wide_texts(f: &Map<String, Value>, v: &Value, length: usize) -> Vec<(String, String)> {
    if !matches!(v, Value::Number(_)) {
        return Vec::new();
    }
    let fmt = f.keyword("format").and_then(Value::as_str).unwrap_or("");
    let mut out = Vec::new();
    match fmt {
        "int64" => out.push((
            "-9223372036854775809".to_string(),
            "sent -9223372036854775809, past what an int64 holds".to_string(),
        )),
        "double" => out.push((
            "1.7976931348623157e309".to_string(),
            "sent ten times the largest double".to_string(),
        )),
        _ => {}
    }
    let width = matches!(fmt, "int32" | "int64" | "float" | "double");
    let digits = length.max(400);
    if width || f.has_keyword("maximum") || f.has_keyword("exclusiveMaximum") {
        out.push((
            format!("9{}", "9".repeat(digits - 1)),
            format!("sent a number {digits} digits long"),
        ));
    } else if f.has_keyword("minimum") || f.has_keyword("exclusiveMinimum") {
        out.push((
            format!("-9{}", "9".repeat(digits - 1)),
            format!("sent a negative number {digits} digits long"),
        ));
    }
    out
}

/// Applies a change to a clone of the accepted request's parts.
pub(crate) fn apply_change(ctx: &Ctx<'_>, at: &Place, change: &Change) -> Option<TestCase> {
    let mut case = ctx.accepted.clone();
    match (&at.target, change) {
        (Target::Parameter { location, name }, Change::SetParameter(v)) => {
            let p = case
                .parameters
                .iter_mut()
                .find(|p| p.location == *location && &p.name == name)?;
            p.value = v.clone().into_owned();
            // The value is the operator's now, and `ValueOrigin` has no word for that yet; no
            // origin is truer than the old one.
            case.origins.remove(name);
        }
        (Target::Parameter { location, name }, Change::DropParameter) => {
            case.parameters
                .retain(|p| !(p.location == *location && &p.name == name));
            case.origins.remove(name);
        }
        (Target::Parameter { location, name }, Change::MoveParameter(to)) => {
            let p = case
                .parameters
                .iter_mut()
                .find(|p| p.location == *location && &p.name == name)?;
            p.location = *to;
            case.parameters
                .sort_by(|a, b| (a.location, &a.name).cmp(&(b.location, &b.name)));
        }
        (Target::Body, Change::SetBody(_) | Change::RemoveFromBody) => {
            let value = ctx.body_after(at, change)?;
            let body = case.body.as_mut()?;
            body.value = crate::model::canonical_json(value);
        }
        (Target::Body, Change::BodyText { media_type, text }) => {
            let body = case.body.as_mut()?;
            if let Some(m) = media_type {
                body.media_type = m.clone();
            }
            body.sent_as = Some(text.clone());
        }
        _ => return None,
    }
    Some(case)
}
