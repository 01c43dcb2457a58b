//! Variety in what a series sends (docs/series.md, "Variations"): the variations a life
//! cycle's series take turns at, found once from the document, and what each changes in
//! the creation, the update and the refused changes a series sends.
//!
//! A variation is one of: the request as the run had it accepted (`nominal`); a creation
//! with every optional field and an update without the optional fields the resource holds
//! (`all_optional`), or the other way round (`no_optional`); a creation with one field at
//! one value of its enumeration or at one of its bounds (`priority=urgent`, `level=10`);
//! refused changes of one kind of single change the mutation strategy knows (`refused:bound`,
//! `refused:enum`, `refused:length`, `refused:format`, `refused:pattern`, `refused:type`);
//! an update that changes one field (`change:label`); a creation by the item's PUT where a
//! POST creates too (`created_by_put`). Values come from the same sources as ordinary
//! requests (the generator, the mutation strategy's single changes), each from the series'
//! own random stream, so a series is the same given the same answers.
//!
//! Depends on: `model`, `spec`, `schema`, `mutate::violations`, `generate`, `oracle::series`.

use rand_chacha::ChaCha8Rng;
use serde_json::{Map, Value};

use crate::generate::cases::{build_case, CasePlan};
use crate::generate::memory::Memory;
use crate::generate::strategy::Strategies;
use crate::model::{Location, TestCase};
use crate::mutate::place::{Step, Target};
use crate::mutate::violations;
use crate::plan::{Source, SourceStep};
use crate::schema::Mode;
use crate::spec::{Api, Operation};

/// Most enumeration values and bounds a life cycle takes turns at: a document with large
/// enumerations would otherwise spend its series on them alone.
const MOST_VALUES: usize = 24;

/// What a series changes, beyond its life cycle's steps.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    Nominal,
    AllOptional,
    NoOptional,
    /// The creation sends `field` at `value`.
    Value {
        field: String,
        value: Value,
    },
    /// The refused creation and update break one constraint of this kind.
    Refused(Refusal),
    /// The update changes `field` only.
    Field(String),
    /// The resource is created by the item's PUT (the life cycle has a POST too).
    CreatedByPut,
}

/// The kinds of single change the mutation strategy knows, as a refused step sends them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    Bound,
    OffList,
    TooLong,
    Format,
    Pattern,
    WrongType,
}

impl Refusal {
    const ALL: [Refusal; 6] = [
        Refusal::Bound,
        Refusal::OffList,
        Refusal::TooLong,
        Refusal::Format,
        Refusal::Pattern,
        Refusal::WrongType,
    ];

    fn as_str(self) -> &'static str {
        match self {
            Refusal::Bound => "bound",
            Refusal::OffList => "enum",
            Refusal::TooLong => "length",
            Refusal::Format => "format",
            Refusal::Pattern => "pattern",
            Refusal::WrongType => "type",
        }
    }

    /// Whether a constraint keyword of the mutation strategy's sites is of this kind.
    fn breaks(self, keyword: &str) -> bool {
        match self {
            Refusal::Bound => matches!(
                keyword,
                "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum"
            ),
            Refusal::OffList => matches!(keyword, "enum" | "const"),
            Refusal::TooLong => matches!(keyword, "maxLength" | "minLength"),
            Refusal::Format => keyword == "format",
            Refusal::Pattern => keyword == "pattern",
            Refusal::WrongType => keyword == "type",
        }
    }
}

impl Change {
    /// Its name in the report: `nominal`, `all_optional`, `priority=urgent`, `refused:bound`.
    pub fn label(&self) -> String {
        match self {
            Change::Nominal => "nominal".into(),
            Change::AllOptional => "all_optional".into(),
            Change::NoOptional => "no_optional".into(),
            Change::Value { field, value } => match value {
                Value::String(s) => format!("{field}={s}"),
                other => format!("{field}={other}"),
            },
            Change::Refused(r) => format!("refused:{}", r.as_str()),
            Change::Field(f) => format!("change:{f}"),
            Change::CreatedByPut => "created_by_put".into(),
        }
    }
}

/// The JSON object schema of an operation's request body, resolved, when it has one.
fn body_schema<'a>(api: &'a Api, op: &'a Operation) -> Option<&'a Value> {
    let media = op
        .request_body
        .as_ref()?
        .content
        .iter()
        .find(|m| crate::spec::is_json(&m.media_type))?;
    api.schemas.deref(&media.schema, 64)
}

/// The names of the properties a body schema requires.
fn required_of(schema: &Value) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Whether an operation's body declares a property it does not require.
fn has_optional(api: &Api, op: &Operation) -> bool {
    let Some(schema) = body_schema(api, op) else {
        return false;
    };
    let required = required_of(schema);
    crate::oracle::series::request_properties(api, op)
        .keys()
        .any(|k| !required.contains(k))
}

/// The values of one top-level property worth a series of their own: each value of its
/// enumeration, its numeric bounds.
fn values_of(api: &Api, schema: &Value) -> Vec<Value> {
    let Some(schema) = api.schemas.deref(schema, 64) else {
        return Vec::new();
    };
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        return options.iter().filter(|v| !v.is_null()).cloned().collect();
    }
    let numeric = matches!(
        schema.get("type").and_then(Value::as_str),
        Some("integer" | "number")
    );
    if !numeric {
        return Vec::new();
    }
    ["minimum", "maximum"]
        .iter()
        .filter_map(|k| schema.get(*k).filter(|v| v.is_number()).cloned())
        .collect()
}

/// The kinds of refusal the mutation strategy can build on the top-level body fields of
/// `op`.
fn refusals_of(api: &Api, op: &Operation) -> Vec<Refusal> {
    let sites = violations::sites(op, &api.schemas);
    Refusal::ALL
        .into_iter()
        .filter(|r| {
            sites
                .iter()
                .any(|s| top_field(s).is_some() && r.breaks(&s.keyword))
        })
        .collect()
}

/// The top-level body field a site is at.
fn top_field(site: &violations::Site) -> Option<&str> {
    match (&site.place.target, site.place.path.as_slice()) {
        (Target::Body, [Step::Key(k)]) if site.keyword != "required" => Some(k),
        _ => None,
    }
}

/// Every variation of a life cycle, in the order they are first tried: the nominal one,
/// the PUT creation, the refusals, the optional fields, the updates of one field, the
/// values.
pub(super) fn variations(
    api: &Api,
    creator: Option<usize>,
    update: Option<usize>,
    put_creates: bool,
) -> Vec<Change> {
    let mut out = vec![Change::Nominal];
    // Second: a creation by the other creating operation is another way in, which the
    // faults of creation (`repeated_create_put`, `misleading_create_put`) live on.
    if put_creates {
        out.push(Change::CreatedByPut);
    }
    let ops = |i: Option<usize>| i.and_then(|i| api.operations.get(i));
    let (creator, update) = (ops(creator), ops(update));
    let mut refusals: Vec<Refusal> = Vec::new();
    for op in creator.into_iter().chain(update) {
        for r in refusals_of(api, op) {
            if !refusals.contains(&r) {
                refusals.push(r);
            }
        }
    }
    // The nominal series already breaks a type.
    out.extend(
        refusals
            .into_iter()
            .filter(|r| *r != Refusal::WrongType)
            .map(Change::Refused),
    );
    if creator.is_some_and(|op| has_optional(api, op))
        || update.is_some_and(|op| has_optional(api, op))
    {
        out.extend([Change::AllOptional, Change::NoOptional]);
    }
    if let Some(op) = update.filter(|op| op.key.method == "PUT") {
        for (name, schema) in crate::oracle::series::request_properties(api, op) {
            if !crate::oracle::series::read_only(api, schema) {
                out.push(Change::Field(name.to_owned()));
            }
        }
    }
    if let Some(op) = creator {
        let mut values = Vec::new();
        for (name, schema) in crate::oracle::series::request_properties(api, op) {
            for value in values_of(api, schema) {
                values.push(Change::Value {
                    field: name.to_owned(),
                    value,
                });
            }
        }
        values.truncate(MOST_VALUES);
        out.extend(values);
    }
    out
}

/// A case of `op` with every optional property, from the nominal sources.
fn every_optional(
    op: &Operation,
    strategies: &Strategies<'_>,
    rng: &mut ChaCha8Rng,
) -> Option<Map<String, Value>> {
    let plan = CasePlan {
        mode: Mode::Max,
        optional_ratio: 1.0,
    };
    let sources = [
        SourceStep::One(Source::Example),
        SourceStep::One(Source::Dictionaries),
        SourceStep::One(Source::Invention),
    ];
    let case = build_case(
        op,
        &strategies.generator,
        plan,
        &Memory::default(),
        &strategies.dictionaries,
        &sources,
        rng,
    )
    .ok()?;
    match case.body?.value {
        Value::Object(map) => Some(map),
        _ => None,
    }
}

/// Adds to `case`'s JSON object body each optional property it lacks (`with` true), or
/// takes out each it has (`with` false); `keep` are never taken out.
pub(super) fn set_optional(
    api: &Api,
    op: &Operation,
    strategies: &Strategies<'_>,
    case: &mut TestCase,
    with: bool,
    rng: &mut ChaCha8Rng,
) {
    let Some(schema) = body_schema(api, op) else {
        return;
    };
    let required = required_of(schema);
    let declared = crate::oracle::series::request_properties(api, op);
    let Some(body) = case.body.as_mut().filter(|b| b.value.is_object()) else {
        return;
    };
    let Value::Object(map) = &mut body.value else {
        return;
    };
    if with {
        let Some(full) = every_optional(op, strategies, rng) else {
            return;
        };
        for (k, v) in full {
            if !required.contains(&k.as_str()) && declared.contains_key(k.as_str()) {
                map.entry(k).or_insert(v);
            }
        }
    } else {
        map.retain(|k, _| required.contains(&k.as_str()) || !declared.contains_key(k.as_str()));
    }
    body.sent_as = None;
}

/// Sets `field` of `case`'s JSON object body to `value`.
pub(super) fn set_value(case: &mut TestCase, field: &str, value: &Value) {
    if let Some(body) = case.body.as_mut() {
        if let Value::Object(map) = &mut body.value {
            map.insert(field.to_owned(), value.clone());
            body.sent_as = None;
        }
    }
}

/// `base` with one top-level body field broken by a single change of kind `refusal`, as
/// the mutation strategy builds it; fields in `keep` are left as they are. `None` when no
/// field of the body can be broken that way.
pub(super) fn refused(
    api: &Api,
    op: &Operation,
    base: &TestCase,
    refusal: Refusal,
    keep: &[String],
    rng: &mut ChaCha8Rng,
) -> Option<TestCase> {
    use rand::Rng;
    let present = |k: &str| base.body.as_ref().and_then(|b| b.value.get(k)).is_some();
    let sites: Vec<violations::Site> = violations::sites(op, &api.schemas)
        .into_iter()
        .filter(|s| {
            top_field(s).is_some_and(|k| present(k) && !keep.iter().any(|x| x == k))
                && refusal.breaks(&s.keyword)
        })
        .collect();
    if sites.is_empty() {
        return None;
    }
    let first = rng.gen_range(0..sites.len());
    // The first of them, from a place of the stream, that the strategy can build.
    (0..sites.len()).find_map(|i| {
        let site = &sites[(first + i) % sites.len()];
        let negative = violations::build(op, &api.schemas, base, site)?;
        // The change breaks the body alone: the parameters stay the series' own.
        let mut case = base.clone();
        case.body = negative.case.body;
        let only_body = negative
            .case
            .parameters
            .iter()
            .filter(|p| p.location != Location::Path)
            .eq(base
                .parameters
                .iter()
                .filter(|p| p.location != Location::Path));
        only_body.then_some(case)
    })
}

/// A body for an update that changes `field` only: what the resource holds (`read`),
/// limited to the fields `op` takes and the server does not write alone, with `field` at
/// another value its schema allows.
pub(super) fn change_one_field(
    api: &Api,
    op: &Operation,
    base: &TestCase,
    read: &Value,
    field: &str,
    other: impl Fn(&Value, &Value) -> Option<Value>,
) -> Option<TestCase> {
    let declared = crate::oracle::series::request_properties(api, op);
    let read = read.as_object()?;
    let mut case = base.clone();
    let body = case.body.as_mut()?;
    let Value::Object(map) = &mut body.value else {
        return None;
    };
    let mut next = Map::new();
    for (name, schema) in &declared {
        if crate::oracle::series::read_only(api, schema) {
            continue;
        }
        // What the resource holds, else what the accepted update sent.
        if let Some(v) = read.get(*name).or_else(|| map.get(*name)) {
            next.insert((*name).to_owned(), v.clone());
        }
    }
    let schema = api.schemas.deref(declared.get(field)?, 64)?;
    let old = next.get(field).cloned().unwrap_or(Value::Null);
    next.insert(field.to_owned(), other(schema, &old)?);
    *map = next;
    body.sent_as = None;
    Some(case)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_name_the_field_and_value() {
        let v = Change::Value {
            field: "priority".into(),
            value: Value::from("urgent"),
        };
        assert_eq!(v.label(), "priority=urgent");
        let b = Change::Value {
            field: "level".into(),
            value: Value::from(10),
        };
        assert_eq!(b.label(), "level=10");
        assert_eq!(Change::Refused(Refusal::Bound).label(), "refused:bound");
        assert!(Refusal::Bound.breaks("maximum") && !Refusal::Bound.breaks("maxLength"));
    }
}
