//! A direct evaluator for the part of CEL that checks really use, compiled once per
//! expression from the `cel` crate's tree, evaluated over one exchange as it is stored.
//!
//! Why: two thirds of what a check cost was the `cel` interpreter's way of getting at the
//! model, not the check's logic: every exchange's model was built as maps of boxed values,
//! every dotted name was joined into a string and split again, every call gathered its
//! arguments in a vector. Here `response.status` is a field read from the interaction,
//! `response.body.id` a lookup in the body already parsed, `header(response, 'x')` a scan of
//! the headers as received; nothing is built for an exchange that no expression reads.
//!
//! The subset: literals; the model's variables and their fields; `a.b`, `a[0]`, `a["k"]`;
//! `== != < <= > >=`; `&& || !` (errors absorbed as CEL says: `false && error` is false,
//! `true || error` is true); `c ? a : b`; `+ - * / %` and unary `-`; list literals; `in`;
//! `size()`; the `has()` macro; `startsWith`, `endsWith`, `contains`, `matches`; probe's
//! `header`, `pointer`, `json` and `has_key`. [`compile`] answers `None` for anything else
//! (the comprehension macros, conversions, map literals…), and that expression keeps being
//! evaluated by the `cel` crate's program: the choice is made once, at compile time. Values
//! and errors are the `cel` crate's, operator by operator (the differential property test
//! in `proptests.rs` holds the two to it).
//!
//! Depends on: `cel` (its tree, its error type), `model`, and the exchange model of its
//! parent (`exchange`).

use std::borrow::Cow;
use std::cell::{OnceCell, RefCell};
use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use std::sync::Arc;

use cel::common::ast::{operators, Expr, IdedExpr, LiteralValue};
use cel::objects::Key;
use cel::{ExecutionError, Value as CelValue};
use serde_json::Value;

use super::exchange::{parts, Bodies, Json, Read, Reads};
use crate::model::{BodyBytes, Interaction, Location, Outcome, ParameterValue, TestCase};

#[cfg(test)]
mod proptests;

/// A root of the exchange model ([`super::exchange::FIELDS`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Root {
    Request,
    Response,
    Error,
    Case,
    Step,
    Seq,
}

impl Root {
    fn of(name: &str) -> Option<Root> {
        Some(match name {
            "request" => Root::Request,
            "response" => Root::Response,
            "error" => Root::Error,
            "case" => Root::Case,
            "step" => Root::Step,
            "seq" => Root::Seq,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Root::Request => "request",
            Root::Response => "response",
            Root::Error => "error",
            Root::Case => "case",
            Root::Step => "step",
            Root::Seq => "seq",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Binary {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    In,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Text {
    StartsWith,
    EndsWith,
    Contains,
}

/// A pattern of `matches`: compiled once when it is a literal.
#[derive(Debug)]
pub enum Pattern {
    Fixed(String, Result<regex::Regex, String>),
    Computed(Box<Node>),
}

/// One compiled expression of the subset.
#[derive(Debug)]
pub enum Node {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Double(f64),
    Str(String),
    /// `request.method`, `case.tags`…: one field of a root.
    Field(Root, String),
    /// A root read whole, for the roots that are not maps built per exchange (`seq`,
    /// `error`, `case`, `step`).
    Whole(Root),
    Select(Box<Node>, String),
    Has(Box<Node>, String),
    /// `has(request.method)`: a field of a root.
    HasField(Root, String),
    Index(Box<Node>, Box<Node>),
    Not(Box<Node>),
    Neg(Box<Node>),
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
    Cond(Box<Node>, Box<Node>, Box<Node>),
    Binary(Binary, Box<Node>, Box<Node>),
    List(Vec<Node>),
    Size(Box<Node>),
    Text(Text, Box<Node>, Box<Node>),
    Matches(Box<Node>, Pattern),
    /// `header(request, name)` / `header(response, name)`.
    HeaderOf(Root, Box<Node>),
    Header(Box<Node>, Box<Node>),
    Pointer(Box<Node>, Box<Node>),
    Json(Box<Node>),
    HasKey(Box<Node>, Box<Node>),
}

fn boxed(e: &IdedExpr) -> Option<Box<Node>> {
    compile(e).map(Box::new)
}

/// A variable of the model (no name is bound otherwise: comprehensions, which bind names,
/// are outside the subset).
fn root_of(e: &IdedExpr) -> Option<Root> {
    match &e.expr {
        Expr::Ident(name) => Root::of(name),
        _ => None,
    }
}

/// `e` as a [`Node`], or `None` when it uses anything outside the subset.
pub fn compile(e: &IdedExpr) -> Option<Node> {
    Some(match &e.expr {
        Expr::Literal(literal) => match literal {
            LiteralValue::Boolean(b) => Node::Bool(*b.inner()),
            LiteralValue::Int(i) => Node::Int(*i.inner()),
            LiteralValue::UInt(u) => Node::UInt(*u.inner()),
            LiteralValue::Double(d) => Node::Double(*d.inner()),
            LiteralValue::String(s) => Node::Str(s.inner().to_owned()),
            LiteralValue::Null => Node::Null,
            LiteralValue::Bytes(_) => return None,
        },
        Expr::Ident(_) => match root_of(e)? {
            Root::Request | Root::Response => return None,
            root => Node::Whole(root),
        },
        Expr::Select(select) => match (root_of(&select.operand), select.test) {
            (Some(root @ (Root::Request | Root::Response)), false) => {
                Node::Field(root, select.field.clone())
            }
            (Some(root @ (Root::Request | Root::Response)), true) => {
                Node::HasField(root, select.field.clone())
            }
            (_, false) => Node::Select(boxed(&select.operand)?, select.field.clone()),
            (_, true) => Node::Has(boxed(&select.operand)?, select.field.clone()),
        },
        Expr::List(list) if list.optional_indices.is_empty() => {
            Node::List(list.elements.iter().map(compile).collect::<Option<_>>()?)
        }
        Expr::Call(call) => return compile_call(call),
        _ => return None,
    })
}

fn compile_call(call: &cel::common::ast::CallExpr) -> Option<Node> {
    let arg = |i: usize| boxed(&call.args[i]);
    let name = call.func_name.as_str();
    let binary = |op| Some(Node::Binary(op, arg(0)?, arg(1)?));
    match (&call.target, call.args.len()) {
        (None, 1) => match name {
            operators::LOGICAL_NOT => Some(Node::Not(arg(0)?)),
            operators::NEGATE => Some(Node::Neg(arg(0)?)),
            "size" => Some(Node::Size(arg(0)?)),
            "json" => Some(Node::Json(arg(0)?)),
            _ => None,
        },
        (None, 2) => match name {
            operators::LOGICAL_AND => Some(Node::And(arg(0)?, arg(1)?)),
            operators::LOGICAL_OR => Some(Node::Or(arg(0)?, arg(1)?)),
            operators::INDEX => Some(Node::Index(arg(0)?, arg(1)?)),
            operators::EQUALS => binary(Binary::Eq),
            operators::NOT_EQUALS => binary(Binary::Ne),
            operators::LESS => binary(Binary::Lt),
            operators::LESS_EQUALS => binary(Binary::Le),
            operators::GREATER => binary(Binary::Gt),
            operators::GREATER_EQUALS => binary(Binary::Ge),
            operators::ADD => binary(Binary::Add),
            operators::SUBSTRACT => binary(Binary::Sub),
            operators::MULTIPLY => binary(Binary::Mul),
            operators::DIVIDE => binary(Binary::Div),
            operators::MODULO => binary(Binary::Rem),
            operators::IN => binary(Binary::In),
            "matches" => Some(Node::Matches(arg(0)?, pattern(&call.args[1])?)),
            "header" => match root_of(&call.args[0]) {
                Some(root @ (Root::Request | Root::Response)) => {
                    Some(Node::HeaderOf(root, arg(1)?))
                }
                _ => Some(Node::Header(arg(0)?, arg(1)?)),
            },
            "pointer" => Some(Node::Pointer(arg(0)?, arg(1)?)),
            "has_key" => Some(Node::HasKey(arg(0)?, arg(1)?)),
            _ => None,
        },
        (None, 3) if name == operators::CONDITIONAL => {
            Some(Node::Cond(arg(0)?, arg(1)?, boxed(&call.args[2])?))
        }
        (Some(target), 0) if name == "size" => Some(Node::Size(boxed(target)?)),
        (Some(target), 1) => {
            let target = boxed(target)?;
            let how = match name {
                "startsWith" => Text::StartsWith,
                "endsWith" => Text::EndsWith,
                "contains" => Text::Contains,
                "matches" => return Some(Node::Matches(target, pattern(&call.args[0])?)),
                _ => return None,
            };
            Some(Node::Text(how, target, arg(0)?))
        }
        _ => None,
    }
}

fn pattern(e: &IdedExpr) -> Option<Pattern> {
    Some(match &e.expr {
        Expr::Literal(LiteralValue::String(s)) => Pattern::Fixed(
            s.inner().to_owned(),
            regex::Regex::new(s.inner()).map_err(|e| e.to_string()),
        ),
        _ => Pattern::Computed(boxed(e)?),
    })
}

/// A value met while evaluating: borrowed from the exchange wherever it can be.
#[derive(Clone, Debug)]
pub enum V<'a> {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Double(f64),
    Str(Cow<'a, str>),
    /// A JSON array or object of the exchange's (a body, a parameter's value).
    Json(&'a Value),
    /// A JSON array or object made while evaluating (`json(text)`).
    OwnedJson(Rc<Value>),
    List(Rc<Vec<V<'a>>>),
    /// Headers as received: the model's map by lower-case name, values joined by `, `.
    Headers(&'a [(String, String)]),
    /// Parameters of one place: the model's map by name.
    Params(&'a [ParameterValue], Location),
}

/// A JSON value as the model holds it (whole numbers as `int`, then `uint`, others as
/// `double`), borrowed.
fn of_json(v: &Value) -> V<'_> {
    match v {
        Value::Null => V::Null,
        Value::Bool(b) => V::Bool(*b),
        Value::Number(n) => number(n),
        Value::String(s) => V::Str(Cow::Borrowed(s)),
        _ => V::Json(v),
    }
}

/// [`of_json`] of a value made while evaluating.
fn of_owned_json<'a>(v: Value) -> V<'a> {
    match v {
        Value::Null => V::Null,
        Value::Bool(b) => V::Bool(b),
        Value::Number(n) => number(&n),
        Value::String(s) => V::Str(Cow::Owned(s)),
        other => V::OwnedJson(Rc::new(other)),
    }
}

fn number<'a>(n: &serde_json::Number) -> V<'a> {
    match (n.as_i64(), n.as_u64(), n.as_f64()) {
        (Some(i), _, _) => V::Int(i),
        (None, Some(u), _) => V::UInt(u),
        (_, _, Some(f)) => V::Double(f),
        _ => V::Null,
    }
}

/// A count or size as the model holds it: `int` where it fits.
fn unsigned<'a>(n: u64) -> V<'a> {
    i64::try_from(n).map_or(V::UInt(n), V::Int)
}

/// The name CEL gives a value's type, for errors.
fn type_name(v: &V<'_>) -> &'static str {
    match v {
        V::Null => "null_type",
        V::Bool(_) => "bool",
        V::Int(_) => "int",
        V::UInt(_) => "uint",
        V::Double(_) => "double",
        V::Str(_) => "string",
        _ if v.is_list() => "list",
        _ => "map",
    }
}

fn overload(function: &str, args: &[&V<'_>]) -> ExecutionError {
    ExecutionError::no_such_overload(
        function,
        args.iter().map(|a| type_name(a).to_owned()).collect(),
    )
}

fn no_such_key(key: &str) -> ExecutionError {
    ExecutionError::NoSuchKey(Arc::new(key.to_owned()))
}

impl<'a> V<'a> {
    fn json(&self) -> Option<&Value> {
        match self {
            V::Json(v) => Some(v),
            V::OwnedJson(v) => Some(v),
            _ => None,
        }
    }

    fn is_list(&self) -> bool {
        matches!(self, V::List(_)) || matches!(self.json(), Some(Value::Array(_)))
    }

    fn is_map(&self) -> bool {
        matches!(self, V::Headers(_) | V::Params(..))
            || matches!(self.json(), Some(Value::Object(_)))
    }

    /// A child of a JSON value: borrowed from the exchange, copied out of a value made here.
    fn child(&self, pick: impl Fn(&Value) -> Option<&Value>) -> Option<V<'a>> {
        match self {
            V::Json(v) => pick(v).map(of_json),
            V::OwnedJson(v) => pick(v).map(|c| of_owned_json(c.clone())),
            _ => None,
        }
    }

    /// A map's value for `key` (`None` when absent or not a map).
    fn get(&self, key: &str) -> Option<V<'a>> {
        match self {
            V::Headers(list) => header_value(list, key).map(V::Str),
            V::Params(list, location) => list
                .iter()
                .rev()
                .find(|p| p.location == *location && p.name == key)
                .map(|p| of_json(&p.value)),
            _ => self.child(|v| v.as_object().and_then(|m| m.get(key))),
        }
    }

    /// A list's items, or a map's entries (`None` for what is neither).
    fn items(&self) -> Option<Vec<V<'a>>> {
        match self {
            V::List(items) => Some(items.as_ref().clone()),
            _ => match self.json()? {
                Value::Array(items) => Some(
                    (0..items.len())
                        .filter_map(|i| self.child(|v| v.get(i)))
                        .collect(),
                ),
                _ => None,
            },
        }
    }

    fn entries(&self) -> Option<BTreeMap<Cow<'a, str>, V<'a>>> {
        match self {
            V::Headers(list) => Some(
                headers(list)
                    .into_iter()
                    .map(|(k, v)| (k, V::Str(v)))
                    .collect(),
            ),
            V::Params(list, location) => Some(
                list.iter()
                    .filter(|p| p.location == *location)
                    .map(|p| (Cow::Borrowed(p.name.as_str()), of_json(&p.value)))
                    .collect(),
            ),
            _ => match self.json()? {
                Value::Object(map) => Some(
                    map.keys()
                        .filter_map(|k| {
                            let v = self.get(k)?;
                            Some((Cow::Owned(k.clone()), v))
                        })
                        .collect(),
                ),
                _ => None,
            },
        }
    }

    fn len(&self) -> Option<usize> {
        match self {
            V::List(items) => Some(items.len()),
            V::Headers(_) | V::Params(..) => self.entries().map(|e| e.len()),
            _ => match self.json()? {
                Value::Array(a) => Some(a.len()),
                Value::Object(m) => Some(m.len()),
                _ => None,
            },
        }
    }
}

/// The model's value of header `key`: the values of every header of that name (compared
/// as the model's lower-case key), joined by `, `.
fn header_value<'a>(list: &'a [(String, String)], key: &str) -> Option<Cow<'a, str>> {
    if key.bytes().any(|b| b.is_ascii_uppercase()) {
        return None;
    }
    let mut found: Option<Cow<'a, str>> = None;
    for (_, value) in list.iter().filter(|(n, _)| n.eq_ignore_ascii_case(key)) {
        match &mut found {
            None => found = Some(Cow::Borrowed(value)),
            Some(joined) => {
                let joined = joined.to_mut();
                joined.push_str(", ");
                joined.push_str(value);
            }
        }
    }
    found
}

/// Every header as the model holds them (as `exchange::headers` builds them).
fn headers(list: &[(String, String)]) -> BTreeMap<Cow<'_, str>, Cow<'_, str>> {
    let mut out: BTreeMap<Cow<'_, str>, Cow<'_, str>> = BTreeMap::new();
    for (name, _) in list {
        let key = name.to_ascii_lowercase();
        if !out.contains_key(key.as_str()) {
            let value = header_value(list, &key).unwrap_or_default();
            out.insert(Cow::Owned(key), value);
        }
    }
    out
}

/// CEL's equality, as the `cel` crate has it: numbers across `int`, `uint` and `double`
/// by value, lists item by item, maps key by key, anything else only with its own type.
fn equal(a: &V<'_>, b: &V<'_>) -> bool {
    match (a, b) {
        (V::Null, V::Null) => true,
        (V::Bool(x), V::Bool(y)) => x == y,
        (V::Str(x), V::Str(y)) => x == y,
        (V::Int(_) | V::UInt(_) | V::Double(_), _) => {
            compare_numbers(a, b) == Some(Some(Ordering::Equal))
        }
        _ if a.is_list() && b.is_list() => match (a.items(), b.items()) {
            (Some(x), Some(y)) => x.len() == y.len() && x.iter().zip(&y).all(|(x, y)| equal(x, y)),
            _ => false,
        },
        _ if a.is_map() && b.is_map() => match (a.entries(), b.entries()) {
            (Some(x), Some(y)) => {
                x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| equal(v, w)))
            }
            _ => false,
        },
        _ => false,
    }
}

/// `Some(ordering)` of two numbers (`Some(None)` when a double is NaN), `None` when either
/// is not a number.
fn compare_numbers(a: &V<'_>, b: &V<'_>) -> Option<Option<Ordering>> {
    Some(match (a, b) {
        (V::Int(x), V::Int(y)) => Some(x.cmp(y)),
        (V::UInt(x), V::UInt(y)) => Some(x.cmp(y)),
        (V::Int(x), V::UInt(y)) => Some(u64::try_from(*x).map_or(Ordering::Less, |x| x.cmp(y))),
        (V::UInt(x), V::Int(y)) => Some(i64::try_from(*x).map_or(Ordering::Greater, |x| x.cmp(y))),
        (V::Double(x), V::Double(y)) => x.partial_cmp(y),
        (V::Int(x), V::Double(y)) => (*x as f64).partial_cmp(y),
        (V::UInt(x), V::Double(y)) => (*x as f64).partial_cmp(y),
        (V::Double(x), V::Int(y)) => x.partial_cmp(&(*y as f64)),
        (V::Double(x), V::UInt(y)) => x.partial_cmp(&(*y as f64)),
        _ => return None,
    })
}

fn compare(op: &str, a: &V<'_>, b: &V<'_>) -> Result<Ordering, ExecutionError> {
    let ordering = match (a, b) {
        (V::Str(x), V::Str(y)) => Some(x.cmp(y)),
        (V::Bool(x), V::Bool(y)) => Some(x.cmp(y)),
        _ => compare_numbers(a, b).flatten(),
    };
    ordering.ok_or_else(|| overload(op, &[a, b]))
}

fn arithmetic<'a>(op: Binary, a: V<'a>, b: V<'a>) -> Result<V<'a>, ExecutionError> {
    let name = match op {
        Binary::Add => "add",
        Binary::Sub => "sub",
        Binary::Mul => "mul",
        Binary::Div => "div",
        _ => "rem",
    };
    let overflow = || ExecutionError::Overflow(name, CelValue::Null, CelValue::Null);
    let checked_int = |x: i64, y: i64| match op {
        Binary::Add => x.checked_add(y),
        Binary::Sub => x.checked_sub(y),
        Binary::Mul => x.checked_mul(y),
        Binary::Div => x.checked_div(y),
        _ => x.checked_rem(y),
    };
    let checked_uint = |x: u64, y: u64| match op {
        Binary::Add => x.checked_add(y),
        Binary::Sub => x.checked_sub(y),
        Binary::Mul => x.checked_mul(y),
        Binary::Div => x.checked_div(y),
        _ => x.checked_rem(y),
    };
    let by_zero = |x: CelValue| match op {
        Binary::Div => ExecutionError::DivisionByZero(x),
        _ => ExecutionError::RemainderByZero(x),
    };
    Ok(match (&a, &b) {
        (V::Int(x), V::Int(0)) if matches!(op, Binary::Div | Binary::Rem) => {
            return Err(by_zero(CelValue::Int(*x)))
        }
        (V::UInt(x), V::UInt(0)) if matches!(op, Binary::Div | Binary::Rem) => {
            return Err(by_zero(CelValue::UInt(*x)))
        }
        (V::Int(x), V::Int(y)) => V::Int(checked_int(*x, *y).ok_or_else(overflow)?),
        (V::UInt(x), V::UInt(y)) => V::UInt(checked_uint(*x, *y).ok_or_else(overflow)?),
        (V::Double(x), V::Double(y)) if op != Binary::Rem => V::Double(match op {
            Binary::Add => x + y,
            Binary::Sub => x - y,
            Binary::Mul => x * y,
            _ => x / y,
        }),
        (V::Str(x), V::Str(y)) if op == Binary::Add => V::Str(Cow::Owned(format!("{x}{y}"))),
        _ if op == Binary::Add && a.is_list() => {
            let (Some(mut x), Some(y)) = (a.items(), b.items().or_else(|| keys(&b))) else {
                return Err(overload("_+_", &[&a, &b]));
            };
            x.extend(y);
            V::List(Rc::new(x))
        }
        _ => return Err(overload(&format!("_{}_", op_symbol(op)), &[&a, &b])),
    })
}

/// A map's keys, as a list (`list + map` appends them: the `cel` crate iterates a map by
/// its keys).
fn keys<'a>(v: &V<'a>) -> Option<Vec<V<'a>>> {
    v.entries().map(|e| e.into_keys().map(V::Str).collect())
}

fn op_symbol(op: Binary) -> &'static str {
    match op {
        Binary::Add => "+",
        Binary::Sub => "-",
        Binary::Mul => "*",
        Binary::Div => "/",
        Binary::Rem => "%",
        _ => "?",
    }
}

/// `container[index]`.
fn index<'a>(container: V<'a>, at: &V<'_>) -> Result<V<'a>, ExecutionError> {
    if container.is_list() {
        let i = match at {
            V::Int(i) => usize::try_from(*i).ok(),
            V::UInt(u) => usize::try_from(*u).ok(),
            V::Double(d) if d.fract() == 0.0 && d.is_finite() => {
                // As the `cel` crate: a whole double indexes as the int it is.
                let i = *d as i64;
                (i as f64 == *d)
                    .then_some(i)
                    .and_then(|i| usize::try_from(i).ok())
            }
            _ => return Err(overload("_[_]", &[&container, at])),
        };
        let item = match &container {
            V::List(items) => i.and_then(|i| items.get(i)).cloned(),
            _ => i.and_then(|i| container.child(|v| v.get(i))),
        };
        return item.ok_or_else(|| ExecutionError::IndexOutOfBounds(CelValue::Null));
    }
    if container.is_map() {
        return match at {
            V::Str(key) => container.get(key).ok_or_else(|| no_such_key(key)),
            V::Int(_) | V::UInt(_) | V::Bool(_) | V::Double(_) => Err(no_such_key(&display(at))),
            _ => Err(overload("_[_]", &[&container, at])),
        };
    }
    Err(overload("_[_]", &[&container, at]))
}

/// A key that is not a string, as an error names it.
fn display(v: &V<'_>) -> String {
    match v {
        V::Int(i) => i.to_string(),
        V::UInt(u) => u.to_string(),
        V::Double(d) => d.to_string(),
        V::Bool(b) => b.to_string(),
        V::Str(s) => s.to_string(),
        other => type_name(other).to_owned(),
    }
}

/// `needle in container`.
fn contains(needle: &V<'_>, container: &V<'_>) -> Result<bool, ExecutionError> {
    if let Some(items) = container.items() {
        return Ok(items.iter().any(|i| equal(i, needle)));
    }
    if container.is_map() {
        return match needle {
            V::Str(key) => Ok(container.get(key).is_some()),
            V::Int(_) | V::UInt(_) | V::Bool(_) | V::Double(_) => Ok(false),
            _ => Err(overload("@in", &[needle, container])),
        };
    }
    Err(overload("@in", &[needle, container]))
}

/// `pointer(value, "/a/0/b")` (RFC 6901).
fn pointer<'a>(value: V<'a>, pointer: &str) -> V<'a> {
    if pointer.is_empty() {
        return value;
    }
    let Some(tokens) = pointer.strip_prefix('/') else {
        return V::Null;
    };
    let mut at = value;
    for token in tokens.split('/') {
        let token: Cow<'_, str> = match token.contains('~') {
            true => token.replace("~1", "/").replace("~0", "~").into(),
            false => token.into(),
        };
        let next = if at.is_map() {
            at.get(&token)
        } else if at.is_list() {
            token.parse::<usize>().ok().and_then(|i| match &at {
                V::List(items) => items.get(i).cloned(),
                _ => at.child(|v| v.get(i)),
            })
        } else {
            None
        };
        match next {
            Some(next) => at = next,
            None => return V::Null,
        }
    }
    at
}

/// `text.matches(pattern)`, the pattern compiled once per thread (RE2 syntax, as CEL's).
pub fn regex_match(text: &str, pattern: &str) -> Result<bool, ExecutionError> {
    /// Patterns a thread keeps compiled, at most (a check file names a handful).
    const PATTERNS_KEPT: usize = 256;
    thread_local! {
        static COMPILED: RefCell<HashMap<String, Result<regex::Regex, String>>> =
            RefCell::new(HashMap::new());
    }
    COMPILED.with(|compiled| {
        let mut compiled = compiled.borrow_mut();
        if let Some(found) = compiled.get(pattern) {
            return match_with(found, text, pattern);
        }
        if compiled.len() >= PATTERNS_KEPT {
            compiled.clear();
        }
        let made = regex::Regex::new(pattern).map_err(|e| e.to_string());
        let answer = match_with(&made, text, pattern);
        compiled.insert(pattern.to_owned(), made);
        answer
    })
}

fn match_with(
    compiled: &Result<regex::Regex, String>,
    text: &str,
    pattern: &str,
) -> Result<bool, ExecutionError> {
    match compiled {
        Ok(regex) => Ok(regex.is_match(text)),
        Err(e) => Err(ExecutionError::FunctionError {
            function: "matches".into(),
            message: format!("'{pattern}' not a valid regex:\n{e}"),
        }),
    }
}

/// What an expression is evaluated over: one exchange as stored, or a model given as JSON
/// (`{request, response, …}`, as programs read it).
pub enum Model<'v> {
    Exchange(Box<View<'v>>),
    Json(&'v Value),
}

/// One exchange, read where it lies; what must be made from it (a body parsed, the rarely
/// read parts) is made at the first read and kept for the other checks.
pub struct View<'v> {
    case: &'v TestCase,
    interaction: &'v Interaction,
    bodies: Bodies<'v>,
    tags: &'v [String],
    request_body: OnceCell<Option<Value>>,
    request_text: OnceCell<String>,
    response_body: OnceCell<Option<Value>>,
    /// `error`, `case`, `step` as JSON (as `exchange::parts` writes them).
    rare: [OnceCell<Value>; 3],
}

impl<'v> View<'v> {
    pub fn new(
        case: &'v TestCase,
        interaction: &'v Interaction,
        bodies: Bodies<'v>,
        tags: &'v [String],
    ) -> View<'v> {
        View {
            case,
            interaction,
            bodies,
            tags,
            request_body: OnceCell::new(),
            request_text: OnceCell::new(),
            response_body: OnceCell::new(),
            rare: Default::default(),
        }
    }

    fn rare(&self, root: Root) -> V<'_> {
        let slot = match root {
            Root::Error => 0,
            Root::Case => 1,
            _ => 2,
        };
        of_json(self.rare[slot].get_or_init(|| {
            let mut reads = Reads::default();
            reads.read_whole(root.name());
            let (parts, _) = parts(
                &Json,
                self.case,
                self.interaction,
                self.bodies,
                self.tags,
                &reads,
            );
            parts.into_iter().next().map_or(Value::Null, |(_, v)| v)
        }))
    }

    /// A root read whole (one that is not a map made per exchange).
    fn whole(&self, root: Root) -> V<'_> {
        match root {
            Root::Seq => unsigned(self.interaction.seq),
            _ => self.rare(root),
        }
    }

    /// Whether `root` is a map (so a field of it is there): `response` is `null` when
    /// nothing came back.
    fn is_map(&self, root: Root) -> bool {
        match root {
            Root::Request => true,
            Root::Response => matches!(self.interaction.outcome, Outcome::Response(_)),
            _ => self.whole(root).is_map(),
        }
    }

    fn field(&self, root: Root, field: &str) -> Result<V<'_>, ExecutionError> {
        let request = &self.interaction.request;
        let case = self.case;
        let str = |s: &'v str| V::Str(Cow::Borrowed(s));
        match root {
            Root::Request => Ok(match field {
                "method" => str(&request.method),
                "operation" => str(&case.operation),
                "path" => str(&case.path),
                "url" => str(&request.url),
                "path_params" => V::Params(&case.parameters, Location::Path),
                "query" => V::Params(&case.parameters, Location::Query),
                "cookies" => V::Params(&case.parameters, Location::Cookie),
                "headers" => V::Headers(&request.headers),
                "media_type" => case.body.as_ref().map_or(V::Null, |b| str(&b.media_type)),
                "body" | "text" => self.request_body(field == "body"),
                _ => return Err(no_such_key(field)),
            }),
            Root::Response => self.response_field(field),
            _ => {
                let whole = self.whole(root);
                if !whole.is_map() {
                    return Err(overload("_._", &[&whole, &V::Str(field.into())]));
                }
                whole.get(field).ok_or_else(|| no_such_key(field))
            }
        }
    }

    fn request_body(&self, body: bool) -> V<'_> {
        let request = &self.interaction.request;
        if let (None | Some(BodyBytes::Blob { .. }), None, Some(value)) = (
            &request.body,
            self.bodies.request,
            self.bodies.request_value,
        ) {
            // The case's value, as `exchange::request_value` hands it over.
            return match body {
                true => of_json(value),
                false => V::Str(Cow::Borrowed(
                    self.request_text.get_or_init(|| value.to_string()),
                )),
            };
        }
        let bytes = body_bytes(request.body.as_ref(), self.bodies.request);
        read_body(bytes, Read::NotRead, &self.request_body, body)
    }

    fn response_field(&self, field: &str) -> Result<V<'_>, ExecutionError> {
        let Outcome::Response(r) = &self.interaction.outcome else {
            return Err(overload("_._", &[&V::Null, &V::Str(field.into())]));
        };
        Ok(match field {
            "status" => V::Int(i64::from(r.status)),
            "headers" => V::Headers(&r.headers),
            "media_type" => match r.header("content-type") {
                Some(v) => {
                    let essence = v.split(';').next().unwrap_or("").trim();
                    V::Str(match essence.bytes().any(|b| b.is_ascii_uppercase()) {
                        true => Cow::Owned(essence.to_ascii_lowercase()),
                        false => Cow::Borrowed(essence),
                    })
                }
                None => V::Null,
            },
            "truncated" => V::Bool(r.truncated),
            "time_ms" => {
                let ms = self.interaction.timing.elapsed_us as f64 / 1000.0;
                match ms.is_finite() {
                    true => V::Double(ms),
                    false => V::Null,
                }
            }
            "body" | "text" => {
                let bytes = body_bytes(r.body.as_ref(), self.bodies.response);
                read_body(
                    bytes,
                    self.bodies.response_json,
                    &self.response_body,
                    field == "body",
                )
            }
            _ => return Err(no_such_key(field)),
        })
    }
}

fn body_bytes<'a>(body: Option<&'a BodyBytes>, resolved: Option<&'a [u8]>) -> Option<&'a [u8]> {
    match body {
        Some(BodyBytes::Inline(bytes)) => Some(bytes),
        Some(BodyBytes::Blob { .. }) | None => resolved,
    }
}

/// A body as JSON (`body`) or as text, as `exchange::read_body` reads it: `null` when
/// empty, not JSON, not UTF-8; parsed at most once (`parsed`).
fn read_body<'a>(
    bytes: Option<&'a [u8]>,
    json: Read<'a>,
    parsed: &'a OnceCell<Option<Value>>,
    body: bool,
) -> V<'a> {
    let Some(bytes) = bytes.filter(|b| !b.is_empty()) else {
        return V::Null;
    };
    if !body {
        return std::str::from_utf8(bytes).map_or(V::Null, |t| V::Str(Cow::Borrowed(t)));
    }
    match json {
        Read::NotJson => V::Null,
        Read::Json(value) => of_json(value),
        Read::NotRead => parsed
            .get_or_init(|| serde_json::from_slice(bytes).ok())
            .as_ref()
            .map_or(V::Null, of_json),
    }
}

impl Model<'_> {
    fn field(&self, root: Root, field: &str) -> Result<V<'_>, ExecutionError> {
        match self {
            Model::Exchange(view) => view.field(root, field),
            Model::Json(_) => {
                let whole = self.whole(root)?;
                if !whole.is_map() {
                    return Err(overload("_._", &[&whole, &V::Str(field.into())]));
                }
                whole.get(field).ok_or_else(|| no_such_key(field))
            }
        }
    }

    fn whole(&self, root: Root) -> Result<V<'_>, ExecutionError> {
        match self {
            Model::Exchange(view) => Ok(view.whole(root)),
            Model::Json(model) => model
                .get(root.name())
                .map(of_json)
                .ok_or_else(|| ExecutionError::UndeclaredReference(Arc::new(root.name().into()))),
        }
    }

    /// `has(root.field)`: an error where `root` is no map (`response` when nothing came
    /// back); else whether it has the field (an exchange's have every field of the model).
    fn has_field(&self, root: Root, field: &str) -> Result<bool, ExecutionError> {
        let is_map = match self {
            Model::Exchange(view) => view.is_map(root),
            Model::Json(_) => {
                let whole = self.whole(root)?;
                if whole.is_map() {
                    return Ok(whole.get(field).is_some());
                }
                false
            }
        };
        match is_map {
            true => Ok(true),
            false => Err(overload("_._", &[&V::Null, &V::Str(field.into())])),
        }
    }

    /// `header(root, name)`: the header of the request or response, `null` when absent.
    fn header_of(&self, root: Root, name: &str) -> Result<V<'_>, ExecutionError> {
        match self {
            Model::Exchange(view) => Ok(match (root, &view.interaction.outcome) {
                (Root::Request, _) => V::Headers(&view.interaction.request.headers),
                (_, Outcome::Response(r)) => V::Headers(&r.headers),
                _ => V::Null,
            }
            .get(&name.to_ascii_lowercase())
            .unwrap_or(V::Null)),
            Model::Json(_) => Ok(header(self.whole(root)?, name)),
        }
    }
}

/// `header(message, name)`: `message.headers[lower(name)]`, `null` where nothing is.
fn header<'a>(message: V<'a>, name: &str) -> V<'a> {
    message
        .get("headers")
        .filter(|h| h.is_map())
        .and_then(|h| h.get(&name.to_ascii_lowercase()))
        .unwrap_or(V::Null)
}

fn boolean(v: Result<V<'_>, ExecutionError>) -> Result<bool, ExecutionError> {
    match v? {
        V::Bool(b) => Ok(b),
        other => Err(ExecutionError::UnexpectedType {
            got: type_name(&other).to_owned(),
            want: "bool".to_owned(),
        }),
    }
}

/// A string argument of `function`.
fn text_arg<'x>(function: &str, v: &'x V<'_>) -> Result<&'x str, ExecutionError> {
    match v {
        V::Str(s) => Ok(s),
        other => Err(ExecutionError::UnexpectedType {
            got: type_name(other).to_owned(),
            want: format!("string (an argument of `{function}`)"),
        }),
    }
}

/// `left && right` / `left || right` as the `cel` crate has them: `absorbing` (false for
/// `&&`, true for `||`) on either side wins over an error on the other.
fn logical<'a>(
    model: &'a Model<'_>,
    left: &'a Node,
    right: &'a Node,
    absorbing: bool,
) -> Result<V<'a>, ExecutionError> {
    let name = if absorbing { "_||_" } else { "_&&_" };
    let left = boolean(evaluate(left, model));
    if left.as_ref().ok() == Some(&absorbing) {
        return Ok(V::Bool(absorbing));
    }
    let right = evaluate(right, model)?;
    match (left, &right) {
        (Ok(_), V::Bool(r)) => Ok(V::Bool(*r)),
        (Err(_), V::Bool(r)) if *r == absorbing => Ok(V::Bool(absorbing)),
        (Err(ExecutionError::UnexpectedType { got, .. }), _) => Err(
            ExecutionError::no_such_overload(name, vec![got, type_name(&right).to_owned()]),
        ),
        (Err(e), _) => Err(e),
        (Ok(_), _) => Err(ExecutionError::no_such_overload(
            name,
            vec!["bool".to_owned(), type_name(&right).to_owned()],
        )),
    }
}

/// Evaluates `node` over `model`.
pub fn evaluate<'a>(node: &'a Node, model: &'a Model<'_>) -> Result<V<'a>, ExecutionError> {
    let eval = |n: &'a Node| evaluate(n, model);
    Ok(match node {
        Node::Null => V::Null,
        Node::Bool(b) => V::Bool(*b),
        Node::Int(i) => V::Int(*i),
        Node::UInt(u) => V::UInt(*u),
        Node::Double(d) => V::Double(*d),
        Node::Str(s) => V::Str(Cow::Borrowed(s)),
        Node::Field(root, field) => model.field(*root, field)?,
        Node::Whole(root) => model.whole(*root)?,
        Node::Select(operand, field) => {
            let operand = eval(operand)?;
            if !operand.is_map() {
                return Err(overload("_._", &[&operand, &V::Str(field.as_str().into())]));
            }
            operand.get(field).ok_or_else(|| no_such_key(field))?
        }
        Node::Has(operand, field) => {
            let operand = eval(operand)?;
            if !operand.is_map() {
                return Err(overload("_._", &[&operand, &V::Str(field.as_str().into())]));
            }
            V::Bool(operand.get(field).is_some())
        }
        Node::HasField(root, field) => V::Bool(model.has_field(*root, field)?),
        Node::Index(container, at) => {
            let container = eval(container)?;
            index(container, &eval(at)?)?
        }
        Node::Not(x) => match eval(x)? {
            V::Bool(b) => V::Bool(!b),
            other => return Err(overload("!_", &[&other])),
        },
        Node::Neg(x) => match eval(x)? {
            V::Int(i) => V::Int(i.checked_neg().ok_or(ExecutionError::Overflow(
                "negate",
                CelValue::Int(i),
                CelValue::Null,
            ))?),
            V::Double(d) => V::Double(-d),
            other => return Err(overload("-_", &[&other])),
        },
        Node::And(l, r) => logical(model, l, r, false)?,
        Node::Or(l, r) => logical(model, l, r, true)?,
        Node::Cond(c, a, b) => match boolean(eval(c))? {
            true => eval(a)?,
            false => eval(b)?,
        },
        Node::Binary(op, l, r) => binary(*op, eval(l)?, eval(r)?)?,
        Node::List(items) => V::List(Rc::new(items.iter().map(eval).collect::<Result<_, _>>()?)),
        Node::Size(x) => {
            let x = eval(x)?;
            match &x {
                V::Str(s) => V::Int(s.chars().count() as i64),
                _ => unsigned(x.len().ok_or_else(|| overload("size", &[&x]))? as u64),
            }
        }
        _ => return call(node, model),
    })
}

fn binary<'a>(op: Binary, l: V<'a>, r: V<'a>) -> Result<V<'a>, ExecutionError> {
    Ok(V::Bool(match op {
        Binary::Eq => equal(&l, &r),
        Binary::Ne => !equal(&l, &r),
        Binary::Lt => compare("_<_", &l, &r)? == Ordering::Less,
        Binary::Le => compare("_<=_", &l, &r)? != Ordering::Greater,
        Binary::Gt => compare("_>_", &l, &r)? == Ordering::Greater,
        Binary::Ge => compare("_>=_", &l, &r)? != Ordering::Less,
        Binary::In => contains(&l, &r)?,
        _ => return arithmetic(op, l, r),
    }))
}

/// The functions of the subset.
fn call<'a>(node: &'a Node, model: &'a Model<'_>) -> Result<V<'a>, ExecutionError> {
    let eval = |n: &'a Node| evaluate(n, model);
    Ok(match node {
        Node::Text(how, target, arg) => {
            let (target, arg) = (eval(target)?, eval(arg)?);
            let (V::Str(t), V::Str(a)) = (&target, &arg) else {
                let name = match how {
                    Text::StartsWith => "startsWith",
                    Text::EndsWith => "endsWith",
                    Text::Contains => "contains",
                };
                return Err(overload(name, &[&target, &arg]));
            };
            V::Bool(match how {
                Text::StartsWith => t.starts_with(a.as_ref()),
                Text::EndsWith => t.ends_with(a.as_ref()),
                Text::Contains => t.contains(a.as_ref()),
            })
        }
        Node::Matches(text, pattern) => {
            let text = eval(text)?;
            let computed;
            let (source, fixed) = match pattern {
                Pattern::Fixed(source, compiled) => (source.as_str(), Some(compiled)),
                Pattern::Computed(p) => {
                    computed = eval(p)?;
                    match &computed {
                        V::Str(s) => (s.as_ref(), None),
                        other => return Err(overload("matches", &[&text, other])),
                    }
                }
            };
            let V::Str(text) = &text else {
                return Err(overload("matches", &[&text, &V::Str(source.into())]));
            };
            V::Bool(match fixed {
                Some(compiled) => match_with(compiled, text, source)?,
                None => regex_match(text, source)?,
            })
        }
        Node::HeaderOf(root, name) => {
            let name = eval(name)?;
            model.header_of(*root, text_arg("header", &name)?)?
        }
        Node::Header(message, name) => {
            let (message, name) = (eval(message)?, eval(name)?);
            header(message, text_arg("header", &name)?)
        }
        Node::Pointer(value, at) => {
            let (value, at) = (eval(value)?, eval(at)?);
            pointer(value, text_arg("pointer", &at)?)
        }
        Node::Json(text) => {
            let text = eval(text)?;
            serde_json::from_str::<Value>(text_arg("json", &text)?).map_or(V::Null, of_owned_json)
        }
        Node::HasKey(map, key) => {
            let (map, key) = (eval(map)?, eval(key)?);
            let key = text_arg("has_key", &key)?;
            V::Bool(map.is_map() && map.get(key).is_some())
        }
        // Every other node is `evaluate`'s, which never hands it here.
        _ => return Err(ExecutionError::InternalError("not a function".into())),
    })
}

/// A value as the `cel` crate gives it (for a message's places, and the tests).
pub fn to_cel(v: &V<'_>) -> CelValue {
    match v {
        V::Null => CelValue::Null,
        V::Bool(b) => CelValue::Bool(*b),
        V::Int(i) => CelValue::Int(*i),
        V::UInt(u) => CelValue::UInt(*u),
        V::Double(d) => CelValue::Float(*d),
        V::Str(s) => CelValue::String(Arc::new(s.to_string())),
        _ => {
            if let Some(items) = v.items() {
                return CelValue::List(items.iter().map(to_cel).collect::<Vec<_>>().into());
            }
            let entries = v.entries().unwrap_or_default();
            CelValue::from(
                entries
                    .into_iter()
                    .map(|(k, v)| (Key::from(k.into_owned()), to_cel(&v)))
                    .collect::<HashMap<_, _>>(),
            )
        }
    }
}

/// A value's name in words, for "gave …, not true or false".
pub fn kind(v: &V<'_>) -> &'static str {
    match v {
        V::Null => "null",
        V::Bool(_) => "a bool",
        V::Int(_) | V::UInt(_) => "an int",
        V::Double(_) => "a double",
        V::Str(_) => "a string",
        _ if v.is_list() => "a list",
        _ => "a map",
    }
}
