//! Building one step of a series: its case, from the series' creation, its memory of
//! what the creation answered, and the accepted requests the run kept; and learning what
//! the creation answered.
//!
//! Depends on: `model`, `spec`, `schema`, `plan`, `send::wire` (where a `Location` points),
//! `oracle::series` (which fields are name-like or read-only), `generate::{memory, cases}`.

use std::collections::BTreeMap;
use std::sync::Arc;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

use crate::generate::cases::{build_case, CasePlan};

use crate::generate::memory::{self, Memory};
use crate::generate::strategy::Strategies;
use crate::generate::vocabulary::Vocabulary;
use crate::model::{
    Intent, Location, ParameterValue, SeriesStep, StepRole, Strategy, TestCase, ValueOrigin,
};
use crate::oracle::series::name_like;
use crate::plan::{Source, SourceStep};
use crate::schema::Mode;
use crate::send::wire;
use crate::spec::{Api, Operation};

use super::variety::{self, Change};
use super::{path_parameters, Lifecycle, SeriesRun, TIMING_DELAY, TIMING_LONGER_DELAY};

/// Learns the creation's answer into the series' memory (a fresh one, which learns the
/// names `vocabulary` says the document takes) and finds the item's path values; false
/// when the answer does not say which resource it made.
pub(super) fn learn_creation(
    api: &Api,
    run: &mut SeriesRun,
    seq: u64,
    vocabulary: &Arc<Vocabulary>,
) -> bool {
    let Some(step) = run.steps.last() else {
        return false;
    };
    let Some(answer) = &step.answer else {
        return false;
    };
    let Some(op) = api
        .operations
        .iter()
        .find(|o| o.key.name() == step.case.operation)
    else {
        return false;
    };
    let resource_op = api.operations.iter().find(|o| o.key.path == run.resource);
    let Some(resource_op) = resource_op else {
        return false;
    };
    let body: Option<Value> = answer
        .body
        .as_deref()
        .and_then(|b| serde_json::from_slice(b).ok());
    let location = answer
        .interaction
        .outcome
        .response()
        .and_then(|r| r.header("location"))
        .map(str::to_owned);
    let path_values: Vec<(&str, &Value)> = step
        .case
        .parameters
        .iter()
        .filter(|p| p.location == Location::Path)
        .map(|p| (p.name.as_str(), &p.value))
        .collect();
    let links = memory::links_of(api, op, answer.interaction.outcome.status());
    run.memory = Memory::new(Arc::clone(vocabulary));
    run.memory.learn_answer(&memory::Answer {
        method: &op.key.method,
        path: &op.key.path,
        seq,
        body: body.as_ref(),
        location: location.as_deref(),
        path_values: path_values.clone(),
        request: Some(&step.case),
        links: &links,
    });
    // Parents: the creation's own path values, by position; the item: what it answered
    // (or, for a PUT, the key it was sent to).
    let bindings = step
        .case
        .series_step
        .as_ref()
        .map(|s| s.bindings.clone())
        .unwrap_or_default();
    let created_names = path_parameters(&op.key.path);
    let item_names = path_parameters(&resource_op.key.path);
    let mut item = Vec::new();
    for (i, name) in item_names.iter().enumerate() {
        let last = i + 1 == item_names.len();
        if !last || op.key.method == "PUT" {
            let Some(from) = created_names.get(i) else {
                return false;
            };
            let Some((_, value)) = path_values.iter().find(|(n, _)| n == from) else {
                return false;
            };
            item.push(((*value).clone(), bindings.get(*from).cloned()));
            continue;
        }
        let fits = |v: &Value| matches!(v, Value::String(_) | Value::Number(_)).then(|| v.clone());
        let recalled = run.memory.recall(
            &resource_op.key.name(),
            name,
            Location::Path,
            &resource_op.key.path,
            &mut run.rng,
            &fits,
        );
        match recalled {
            Some((value, source)) => item.push((value, source.map(|b| b.to_text()))),
            None => return false,
        }
    }
    run.item = item;
    true
}

/// Builds the case of one step, or `None` when the step does not apply (and is skipped).
pub(super) fn build_step(
    api: &Api,
    strategies: &Strategies<'_>,
    base_url: &str,
    run: &mut SeriesRun,
    lifecycle: Option<&Lifecycle>,
    updates: &BTreeMap<usize, TestCase>,
    role: StepRole,
) -> Option<(usize, TestCase)> {
    let index = run.steps.len() as u32;
    if role == StepRole::Create && run.steps.is_empty() {
        vary_creation(api, strategies, run);
    }
    let (op, mut case) = match role {
        StepRole::Create
        | StepRole::RefusedWithCredentials
        | StepRole::WithoutDelay
        | StepRole::WithDelay
        | StepRole::WithLongerDelay
        | StepRole::AcceptedAfterRefusal
        | StepRole::CreateAgain
        | StepRole::UpdateAgain
        | StepRole::ActionAgain
        | StepRole::CreateDuplicate => resent_step(api, run, role)?,
        StepRole::Action => {
            let action = run.action?;
            let base = updates.get(&action).cloned();
            (action, item_case(api, strategies, run, action, base)?)
        }
        StepRole::FollowLocation => {
            return follow_location(api, strategies, base_url, run, lifecycle?.read, index)
        }
        StepRole::Options => options_step(api, strategies, run, lifecycle)?,
        StepRole::FailedCreate => failed_create_step(api, run, lifecycle?, updates)?,
        StepRole::ListAfterFailedCreate => {
            list_after_failed_create(api, strategies, run, lifecycle?)?
        }
        StepRole::FailedUpdate => {
            let l = lifecycle?;
            let update = l.put.or(l.patch)?;
            let case = item_case(api, strategies, run, update, updates.get(&update).cloned())?;
            (update, refuse(api, update, case, &[], run)?)
        }
        StepRole::Read
        | StepRole::ReadAfterFailedUpdate
        | StepRole::ReadAfterUpdate
        | StepRole::ReadAfterUpdateAgain
        | StepRole::ReadAfterPatch
        | StepRole::ReadAfterDelete
        | StepRole::ReadAfterUpdateAfterDelete
        | StepRole::ReadAsOther
        | StepRole::ReadAfterUpdateAsOther
        | StepRole::ReadAfterUpdateAnonymous
        | StepRole::ReadAfterDeleteAsOther
        | StepRole::ReadDeletedAsOther
        | StepRole::ReadAfterUpdateReadOnly
        | StepRole::ReadAfterAction
        | StepRole::ReadAfterActionAgain => {
            let read = lifecycle?.read;
            (read, item_case(api, strategies, run, read, None)?)
        }
        StepRole::Update | StepRole::Patch => {
            update_step(api, strategies, run, lifecycle?, updates, role)?
        }
        StepRole::UndeclaredMethod => undeclared_method_step(api, strategies, run, lifecycle?)?,
        StepRole::UpdateReadOnly => {
            update_read_only_step(api, strategies, run, lifecycle?, updates)?
        }
        StepRole::UpdateAsOther | StepRole::UpdateAnonymous => {
            // A PUT when there is one: it sends every field, so a read shows what changed.
            let l = lifecycle?;
            let update = l.put.or(l.patch)?;
            let base = updates.get(&update).cloned();
            (update, item_case(api, strategies, run, update, base)?)
        }
        StepRole::UpdateAfterDelete => {
            // A PATCH, which changes what exists; a PUT may create (and answer 2xx).
            let l = lifecycle?;
            let update = l.patch.or(l.put)?;
            let base = updates.get(&update).cloned();
            (update, item_case(api, strategies, run, update, base)?)
        }
        StepRole::Delete | StepRole::DeleteAgain | StepRole::DeleteAsOther => {
            let delete = lifecycle?.delete?;
            (delete, item_case(api, strategies, run, delete, None)?)
        }
        StepRole::KnownUserWrongPassword
        | StepRole::UnknownUserWrongPassword
        | StepRole::UnknownUserAgain
        | StepRole::FailedLogin => enumeration_step(api, run, role)?,
        StepRole::WithToken | StepRole::WithoutToken | StepRole::ForgedToken => {
            forgery_step(api, run, role)?
        }
        StepRole::OtherLogin
        | StepRole::OtherLoginWrong
        | StepRole::ChangeOtherCredential
        | StepRole::OtherLoginAfterChange
        | StepRole::OtherLoginWithNew
        | StepRole::RestoreOtherCredential => super::takeover::step(api, run, role)?,
        StepRole::Other => return None,
    };
    set_step(&mut case, &run.name, index);
    Some((op, case))
}

/// A step that sends again a case the series already has: its creation (as it is, or
/// asking for a delay), the case a refusal was about, the first step, or the last update.
fn resent_step(api: &Api, run: &SeriesRun, role: StepRole) -> Option<(usize, TestCase)> {
    let op_of = |name: &str| api.operations.iter().position(|o| o.key.name() == name);
    let case = match role {
        StepRole::AcceptedAfterRefusal => return run.source.clone(),
        StepRole::CreateAgain | StepRole::CreateDuplicate => run.steps.first()?.case.clone(),
        StepRole::UpdateAgain => run
            .steps
            .iter()
            .rfind(|s| s.role == StepRole::Update)?
            .case
            .clone(),
        StepRole::ActionAgain => run
            .steps
            .iter()
            .rfind(|s| s.role == StepRole::Action)?
            .case
            .clone(),
        StepRole::WithoutDelay | StepRole::WithDelay | StepRole::WithLongerDelay => {
            let mut case = run.create.clone()?;
            let seconds = match role {
                StepRole::WithoutDelay => 0,
                StepRole::WithDelay => TIMING_DELAY,
                _ => TIMING_LONGER_DELAY,
            };
            crate::mutate::awkward::set_delay(&mut case, seconds);
            case
        }
        // Create, RefusedWithCredentials.
        _ => run.create.clone()?,
    };
    Some((op_of(&case.operation)?, case))
}

/// An OPTIONS of the item (or, without a life cycle, of the resource path), with only its
/// path parameters.
fn options_step(
    api: &Api,
    strategies: &Strategies<'_>,
    run: &mut SeriesRun,
    lifecycle: Option<&Lifecycle>,
) -> Option<(usize, TestCase)> {
    let (op, mut case) = match lifecycle {
        Some(l) => {
            let case = item_case(api, strategies, run, l.read, None)?;
            (l.read, case)
        }
        None => {
            let op = api
                .operations
                .iter()
                .position(|o| o.key.path == run.resource)?;
            let case = plain_case(api, strategies, op, &mut run.rng)?;
            (op, case)
        }
    };
    case.method = "OPTIONS".into();
    case.body = None;
    case.parameters.retain(|p| p.location == Location::Path);
    Some((op, case))
}

/// The creation sent again with its names marked and one field of the wrong type: a
/// request the document says must be refused.
fn failed_create_step(
    api: &Api,
    run: &mut SeriesRun,
    lifecycle: &Lifecycle,
    updates: &BTreeMap<usize, TestCase>,
) -> Option<(usize, TestCase)> {
    let post = lifecycle.post?;
    let mut case = updates.get(&post).cloned()?;
    mark_names(api, &api.operations[post], &mut case, "-refused")?;
    let marked: Vec<String> = name_like_strings(&case);
    Some((post, refuse(api, post, case, &marked, run)?))
}

/// A GET of the collection the refused creation was sent to.
fn list_after_failed_create(
    api: &Api,
    strategies: &Strategies<'_>,
    run: &mut SeriesRun,
    lifecycle: &Lifecycle,
) -> Option<(usize, TestCase)> {
    let list = lifecycle.list?;
    let failed = run
        .steps
        .iter()
        .rfind(|s| s.role == StepRole::FailedCreate)?
        .case
        .clone();
    let mut case = plain_case(api, strategies, list, &mut run.rng)?;
    // The collection of the refused creation: its path values, by position.
    let names = path_parameters(&api.operations[list].key.path);
    let values: Vec<&ParameterValue> = failed
        .parameters
        .iter()
        .filter(|p| p.location == Location::Path)
        .collect();
    let from = path_parameters(&failed.path);
    let mut bindings = BTreeMap::new();
    for (name, source) in names.iter().zip(&from) {
        let value = values.iter().find(|p| p.name == *source)?;
        if let Some(b) = failed
            .series_step
            .as_ref()
            .and_then(|s| s.bindings.get(*source))
        {
            bindings.insert((*name).to_owned(), b.clone());
        }
        case.parameters
            .retain(|p| !(p.location == Location::Path && p.name == *name));
        case.parameters.push(ParameterValue {
            location: Location::Path,
            name: (*name).to_owned(),
            value: value.value.clone(),
        });
    }
    case.parameters
        .sort_by(|a, b| (a.location, &a.name).cmp(&(b.location, &b.name)));
    case.series_step = Some(SeriesStep {
        series: String::new(),
        index: 0,
        bindings,
    });
    Some((list, case))
}

/// A PUT (`Update`) or a merge PATCH of one field (`Patch`) of the item.
fn update_step(
    api: &Api,
    strategies: &Strategies<'_>,
    run: &mut SeriesRun,
    lifecycle: &Lifecycle,
    updates: &BTreeMap<usize, TestCase>,
    role: StepRole,
) -> Option<(usize, TestCase)> {
    let update = if role == StepRole::Update {
        lifecycle.put?
    } else {
        lifecycle.patch?
    };
    let mut base = updates.get(&update).cloned();
    if role == StepRole::Update {
        let operation = &api.operations[update];
        match run.variation.as_ref().map(|(_, c)| c.clone()) {
            // What the resource holds and the update leaves out must go (a PUT replaces).
            Some(Change::AllOptional) => {
                if let Some(b) = base.as_mut() {
                    variety::set_optional(api, operation, strategies, b, false, &mut run.rng);
                }
            }
            Some(Change::NoOptional) => {
                if let Some(b) = base.as_mut() {
                    variety::set_optional(api, operation, strategies, b, true, &mut run.rng);
                }
            }
            Some(Change::Field(field)) => {
                let read = last_good_read(run);
                if let (Some(b), Some(read)) = (base.as_ref(), read) {
                    base = variety::change_one_field(api, operation, b, &read, &field, other_value)
                        .or(base);
                }
            }
            _ => {}
        }
    }
    if role == StepRole::Patch {
        // A merge patch of one field: what it leaves out must stay as it was.
        if let Some(body) = base.as_mut().and_then(|c| c.body.as_mut()) {
            if let Value::Object(map) = &mut body.value {
                if map.len() > 1 {
                    let keep = run.rng.gen_range(0..map.len());
                    let key = map.keys().nth(keep).cloned().unwrap_or_default();
                    map.retain(|k, _| *k == key);
                }
            }
            body.sent_as = None;
        }
    }
    Some((update, item_case(api, strategies, run, update, base)?))
}

/// The next method the document does not declare for the item, sent to it (a PUT or a
/// PATCH with what the series last read).
fn undeclared_method_step(
    api: &Api,
    strategies: &Strategies<'_>,
    run: &mut SeriesRun,
    lifecycle: &Lifecycle,
) -> Option<(usize, TestCase)> {
    let sent = run
        .steps
        .iter()
        .filter(|s| s.role == StepRole::UndeclaredMethod)
        .count();
    let method = *lifecycle.undeclared.get(sent)?;
    let mut case = item_case(api, strategies, run, lifecycle.read, None)?;
    case.method = method.to_owned();
    case.parameters.retain(|p| p.location == Location::Path);
    // What a client would send to a PUT or PATCH it guessed: what it read.
    let read = run
        .steps
        .iter()
        .rev()
        .filter(|s| s.role == StepRole::Read)
        .find_map(|s| serde_json::from_slice::<Value>(s.answer.as_ref()?.body.as_deref()?).ok());
    case.body = match (method, read) {
        ("PUT" | "PATCH", Some(value)) => Some(crate::model::CaseBody {
            media_type: "application/json".into(),
            value,
            sent_as: None,
        }),
        _ => None,
    };
    Some((lifecycle.read, case))
}

/// The body of the last read of the item answered 2xx, before any update of read-only
/// fields.
fn last_good_read(run: &SeriesRun) -> Option<Value> {
    run.steps
        .iter()
        .rev()
        .filter(|s| {
            matches!(
                s.role,
                StepRole::Read
                    | StepRole::ReadAfterUpdate
                    | StepRole::ReadAfterUpdateAgain
                    | StepRole::ReadAfterPatch
                    | StepRole::ReadAfterFailedUpdate
            )
        })
        .find_map(|s| {
            let answer = s.answer.as_ref()?;
            let ok = answer
                .interaction
                .outcome
                .status()
                .is_some_and(|st| (200..300).contains(&st));
            ok.then(|| serde_json::from_slice::<Value>(answer.body.as_deref()?).ok())
                .flatten()
        })
}

/// An update that sets, to other values, the fields the read declares `readOnly`; `None`
/// when there is none to set.
fn update_read_only_step(
    api: &Api,
    strategies: &Strategies<'_>,
    run: &mut SeriesRun,
    lifecycle: &Lifecycle,
    updates: &BTreeMap<usize, TestCase>,
) -> Option<(usize, TestCase)> {
    // A PATCH when there is one: it changes only what it sends.
    let update = lifecycle.patch.or(lifecycle.put)?;
    let before = last_good_read(run)?;
    let base = updates.get(&update).cloned();
    let mut case = item_case(api, strategies, run, update, base)?;
    let item_values: Vec<Value> = run.item.iter().map(|(v, _)| v.clone()).collect();
    let body = case.body.as_mut()?;
    let map = body.value.as_object_mut()?;
    let mut set = 0;
    for (name, schema) in settable_read_only(api, &api.operations[lifecycle.read]) {
        let Some(old) = before.get(&name) else {
            continue;
        };
        // The item's own key moves the resource: not asked.
        if item_values
            .iter()
            .any(|v| crate::oracle::series::same_value(v, old))
        {
            continue;
        }
        if let Some(new) = other_value(&schema, old) {
            map.insert(name, new);
            set += 1;
        }
    }
    if set == 0 {
        return None;
    }
    body.sent_as = None;
    Some((update, case))
}

/// The top-level scalar properties the 2xx reply of `read` declares `readOnly`, with
/// their schemas: what a mass-assignment step sets (fields named like clocks or versions
/// aside, which change by themselves).
pub(super) fn settable_read_only(api: &Api, read: &Operation) -> Vec<(String, Value)> {
    use crate::oracle::series;
    let mut out = Vec::new();
    for status in [200u16, 201] {
        for (name, schema) in series::reply_properties(api, read, status) {
            if !series::read_only(api, schema) || series::changes_by_itself(name) {
                continue;
            }
            let resolved = api.schemas.deref(schema, 64).unwrap_or(schema);
            let scalar = matches!(
                resolved.get("type").and_then(Value::as_str),
                Some("string" | "integer" | "number" | "boolean")
            );
            if scalar && !out.iter().any(|(n, _): &(String, Value)| n == name) {
                out.push((name.to_owned(), resolved.clone()));
            }
        }
        if !out.is_empty() {
            break;
        }
    }
    out
}

/// A value of `schema`'s type that differs from `old` and that a server would not make up
/// by itself; `None` for a string with a format probe cannot vary or an enumeration of one.
fn other_value(schema: &Value, old: &Value) -> Option<Value> {
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        return options
            .iter()
            .find(|v| !crate::oracle::series::same_value(v, old))
            .cloned();
    }
    match (schema.get("type").and_then(Value::as_str)?, old) {
        ("boolean", Value::Bool(b)) => Some(Value::Bool(!b)),
        ("integer", Value::Number(n)) => {
            Some(Value::from(n.as_i64().unwrap_or(0).wrapping_add(7919)))
        }
        ("number", Value::Number(n)) => {
            serde_json::Number::from_f64(n.as_f64().unwrap_or(0.0) + 7919.5).map(Value::Number)
        }
        ("integer", _) => Some(Value::from(7919)),
        ("string", _) => {
            let value = match schema.get("format").and_then(Value::as_str) {
                None => "probe-set-by-client",
                Some("uuid") => "0000f203-0000-4000-8000-00000000f203",
                Some("date-time") => "2001-02-03T04:05:06Z",
                Some("date") => "2001-02-03",
                Some("email") => "set-by-client@example.com",
                Some(_) => return None,
            };
            (old.as_str() != Some(value)).then(|| Value::String(value.to_owned()))
        }
        _ => None,
    }
}

/// The creation of a series as its variation has it: with every optional field, with
/// none, or with one field at one value (an enumeration's, a bound).
fn vary_creation(api: &Api, strategies: &Strategies<'_>, run: &mut SeriesRun) {
    let Some((_, change)) = run.variation.clone() else {
        return;
    };
    let Some(create) = run.create.as_mut() else {
        return;
    };
    let Some(op) = api
        .operations
        .iter()
        .find(|o| o.key.name() == create.operation)
    else {
        return;
    };
    match change {
        Change::AllOptional => {
            variety::set_optional(api, op, strategies, create, true, &mut run.rng)
        }
        Change::NoOptional => {
            variety::set_optional(api, op, strategies, create, false, &mut run.rng)
        }
        Change::Value { field, value } => variety::set_value(create, &field, &value),
        _ => {}
    }
}

/// `case` with one field broken so that the document says it must be refused: by the kind
/// of single change the series' variation names, else (or when none of that kind fits) by
/// a value of the wrong type; fields in `keep` stay as they are.
fn refuse(
    api: &Api,
    op: usize,
    mut case: TestCase,
    keep: &[String],
    run: &mut SeriesRun,
) -> Option<TestCase> {
    let operation = &api.operations[op];
    if let Some((_, Change::Refused(kind))) = &run.variation {
        if let Some(refused) = variety::refused(api, operation, &case, *kind, keep, &mut run.rng) {
            return Some(refused);
        }
    }
    break_one_field(api, operation, &mut case, keep, &mut run.rng)?;
    Some(case)
}

/// Marks a case as step `index` of series `name`.
fn set_step(case: &mut TestCase, name: &str, index: u32) {
    let bindings = case
        .series_step
        .take()
        .map(|s| s.bindings)
        .unwrap_or_default();
    case.series_step = Some(SeriesStep {
        series: name.to_owned(),
        index,
        bindings,
    });
    case.strategy = Strategy::Series;
    case.intent = Intent::Unknown;
    case.mutation = None;
}

/// A case of operation `op` with only its required parameters, from the nominal sources.
fn plain_case(
    api: &Api,
    strategies: &Strategies<'_>,
    op: usize,
    rng: &mut ChaCha8Rng,
) -> Option<TestCase> {
    let plan = CasePlan {
        mode: Mode::Min,
        optional_ratio: 0.0,
    };
    let sources = [
        SourceStep::One(Source::Example),
        SourceStep::One(Source::Dictionaries),
        SourceStep::One(Source::Invention),
    ];
    build_case(
        &api.operations[op],
        &strategies.generator,
        plan,
        &Memory::default(),
        &strategies.dictionaries,
        &sources,
        rng,
    )
    .ok()
}

/// A case of operation `op` on the series' resource: `base` (or a new case with only the
/// required parameters) with the item's path values.
fn item_case(
    api: &Api,
    strategies: &Strategies<'_>,
    run: &mut SeriesRun,
    op: usize,
    base: Option<TestCase>,
) -> Option<TestCase> {
    let operation = &api.operations[op];
    let mut case = match base {
        Some(case) => case,
        None => plain_case(api, strategies, op, &mut run.rng)?,
    };
    let names = path_parameters(&operation.key.path);
    if names.len() != run.item.len() {
        return None;
    }
    let mut bindings = case
        .series_step
        .take()
        .map(|s| s.bindings)
        .unwrap_or_default();
    for (name, (value, binding)) in names.iter().zip(&run.item) {
        bindings.remove(*name);
        if let Some(b) = binding {
            bindings.insert((*name).to_owned(), b.clone());
        }
        case.origins
            .insert((*name).to_owned(), ValueOrigin::Observed);
        match case
            .parameters
            .iter_mut()
            .find(|p| p.location == Location::Path && p.name == *name)
        {
            Some(p) => p.value = value.clone(),
            None => case.parameters.push(ParameterValue {
                location: Location::Path,
                name: (*name).to_owned(),
                value: value.clone(),
            }),
        }
    }
    case.parameters
        .sort_by(|a, b| (a.location, &a.name).cmp(&(b.location, &b.name)));
    case.series_step = Some(SeriesStep {
        series: String::new(),
        index: 0,
        bindings,
    });
    Some(case)
}

/// A GET of the `Location` the creation answered, when it points into the API at a path a
/// GET of the document serves. A location elsewhere is never followed: probe sends only to
/// the API it was given.
fn follow_location(
    api: &Api,
    strategies: &Strategies<'_>,
    base_url: &str,
    run: &mut SeriesRun,
    read: usize,
    index: u32,
) -> Option<(usize, TestCase)> {
    let create = run.steps.first()?;
    let location = create
        .answer
        .as_ref()?
        .interaction
        .outcome
        .response()?
        .header("location")?
        .to_owned();
    // Carried by the GET the location names, else by the read's operation; either way
    // its path is the location itself, so no declaration judges it, and a replay follows
    // the location its creation answers then (`located`).
    let carrier = wire::location_path(&location, base_url, &api.base_path)
        .and_then(|path| get_serving(api, &path))
        .unwrap_or(read);
    let mut case = plain_case(api, strategies, carrier, &mut run.rng)?;
    case.parameters.retain(|p| p.location != Location::Path);
    case.origins
        .retain(|name, _| case.parameters.iter().any(|p| &p.name == name));
    let mut case = wire::located(case, &location, base_url, &api.base_path)?;
    set_step(&mut case, &run.name, index);
    Some((carrier, case))
}

/// Gives one field of a JSON object body a value of another type than the one its schema
/// declares (a string for a number or a boolean, a number for a string), so the document
/// says the request must be refused. `None` when the body has no such field.
fn break_one_field(
    api: &Api,
    op: &Operation,
    case: &mut TestCase,
    keep: &[String],
    rng: &mut ChaCha8Rng,
) -> Option<()> {
    let declared = crate::oracle::series::request_properties(api, op);
    let body = case.body.as_mut()?;
    let Value::Object(map) = &mut body.value else {
        return None;
    };
    let breakable: Vec<(String, Value)> = map
        .keys()
        .filter(|k| !keep.contains(k))
        .filter_map(|k| {
            let schema = api.schemas.deref(declared.get(k.as_str())?, 64)?;
            let wrong = match schema.get("type").and_then(Value::as_str)? {
                "string" => Value::from(12345),
                "integer" | "number" | "boolean" => Value::from("not-a-value"),
                _ => return None,
            };
            Some((k.clone(), wrong))
        })
        .collect();
    if breakable.is_empty() {
        return None;
    }
    let (key, wrong) = breakable[rng.gen_range(0..breakable.len())].clone();
    map.insert(key, wrong);
    body.sent_as = None;
    Some(())
}

/// The name-like fields of a JSON object body that hold strings.
fn name_like_strings(case: &TestCase) -> Vec<String> {
    match case.body.as_ref().map(|b| &b.value) {
        Some(Value::Object(map)) => map
            .iter()
            .filter(|(k, v)| name_like(k) && v.is_string())
            .map(|(k, _)| k.clone())
            .collect(),
        _ => Vec::new(),
    }
}

/// Appends `suffix` to every free name-like string of a JSON object body (where the schema
/// leaves room); `None` when there is none, so nothing would tell the result apart.
fn mark_names(api: &Api, op: &Operation, case: &mut TestCase, suffix: &str) -> Option<()> {
    let declared = crate::oracle::series::request_properties(api, op);
    let body = case.body.as_mut().filter(|b| b.sent_as.is_none())?;
    let Value::Object(map) = &mut body.value else {
        return None;
    };
    let mut marked = false;
    for (name, schema) in declared {
        if !name_like(name) {
            continue;
        }
        let Some(schema) = api.schemas.deref(schema, 64) else {
            continue;
        };
        let free = ["enum", "const", "format", "pattern"]
            .iter()
            .all(|k| schema.get(*k).is_none());
        if let (true, Some(Value::String(text))) = (free, map.get_mut(name)) {
            let max = schema.get("maxLength").and_then(Value::as_u64);
            let room = max.is_none_or(|max| (text.chars().count() + suffix.len()) as u64 <= max);
            // No room: the suffix takes the place of the text's last characters, so that a
            // name at its longest is still made the series' own.
            let fits = max
                .and_then(|max| usize::try_from(max).ok())
                .filter(|max| *max > suffix.chars().count() && !room);
            if room {
                text.push_str(suffix);
                marked = true;
            } else if let Some(max) = fits {
                let keep = max - suffix.chars().count();
                *text = text.chars().take(keep).collect::<String>() + suffix;
                marked = true;
            }
        }
    }
    marked.then_some(())
}

/// The GET of the document whose path template matches `path`.
fn get_serving(api: &Api, path: &str) -> Option<usize> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    api.operations.iter().position(|o| {
        let template: Vec<&str> = o.key.path.trim_matches('/').split('/').collect();
        o.key.method == "GET"
            && template.len() == segments.len()
            && template
                .iter()
                .zip(&segments)
                .all(|(t, s)| t == s || (t.starts_with('{') && t.ends_with('}') && !s.is_empty()))
    })
}

/// Makes the creation a new resource: name-like strings of a JSON body get the series'
/// number as a suffix (APIs that key resources by name would otherwise answer with the
/// one the ordinary request made), and a creating PUT gets a key of its own.
pub(super) fn freshen(
    api: &Api,
    op: &Operation,
    case: &mut TestCase,
    n: u64,
    creating_put: bool,
    rng: &mut ChaCha8Rng,
) {
    // No name-like string to mark: the creation is sent as it was accepted.
    let _ = mark_names(api, op, case, &format!("-s{n}"));
    if creating_put {
        // The key: the item's own (last) path parameter, generated anew.
        let Some(last) = path_parameters(&op.key.path).last().map(|s| s.to_string()) else {
            return;
        };
        let Some(parameter) = op.parameters.iter().find(|p| p.name == last) else {
            return;
        };
        let generator = crate::schema::Generator::new(
            &api.schemas,
            crate::schema::GenerateOptions {
                max_depth: 4,
                max_string: 24,
                max_items: 2,
                direction: crate::schema::Direction::Request,
            },
        );
        if let Ok(value) = generator.generate_path_value(&parameter.schema, Mode::Random, rng) {
            if let Some(p) = case
                .parameters
                .iter_mut()
                .find(|p| p.location == Location::Path && p.name == last)
            {
                p.value = crate::model::canonical_json(value);
                case.origins.insert(last.clone(), ValueOrigin::Invention);
                if let Some(step) = case.series_step.as_mut() {
                    step.bindings.remove(&last);
                }
            }
        }
    }
}

/// The field of a login body that names the user: a string whose name says so (`username`,
/// `email`, `login`, `user`, `name`), else the first string that is not the password.
pub(super) fn user_field(body: &Value) -> Option<String> {
    let map = body.as_object()?;
    let strings = || {
        map.iter()
            .filter(|(_, v)| v.as_str().is_some_and(|s| s != super::WRONG_PASSWORD))
            .map(|(k, _)| k)
    };
    let named = strings().find(|k| {
        let k = k.to_ascii_lowercase();
        ["user", "email", "login", "name"]
            .iter()
            .any(|w| k.contains(w))
    });
    named.or_else(|| strings().next()).cloned()
}

/// A login step of an `enumeration` series: the known user's login with a wrong password
/// as it is, or the same login with the user replaced by one that does not exist (an
/// e-mail address for an e-mail).
fn enumeration_step(api: &Api, run: &mut SeriesRun, role: StepRole) -> Option<(usize, TestCase)> {
    let mut case = run.create.clone()?;
    if !matches!(
        role,
        StepRole::KnownUserWrongPassword | StepRole::FailedLogin
    ) {
        let body = case.body.as_mut()?;
        let field = user_field(&body.value)?;
        let known = body.value.get(&field)?.as_str()?.to_owned();
        let tag: u32 = run.rng.gen();
        let nobody = match known.split_once('@') {
            Some(_) => format!("probe-nobody-{tag:08x}@example.com"),
            None => format!("probe-nobody-{tag:08x}"),
        };
        body.value[&field] = Value::String(nobody);
    }
    let op = api
        .operations
        .iter()
        .position(|o| o.key.name() == case.operation)?;
    Some((op, case))
}

/// A step of a `forgery` series: the accepted request as it was (with the token), without
/// credentials, or with the token forged the next way the series has.
fn forgery_step(api: &Api, run: &SeriesRun, role: StepRole) -> Option<(usize, TestCase)> {
    let mut case = run.create.clone()?;
    case.credentials = match role {
        StepRole::WithToken => None,
        StepRole::WithoutToken => Some(crate::model::CredentialProbe::Withheld),
        _ => {
            let sent = run
                .steps
                .iter()
                .filter(|s| s.role == StepRole::ForgedToken)
                .count();
            Some(*run.forgeries.get(sent)?)
        }
    };
    let op = api
        .operations
        .iter()
        .position(|o| o.key.name() == case.operation)?;
    Some((op, case))
}
