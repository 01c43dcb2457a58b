//! Expressions of user checks, in the Common Expression Language (CEL, the language of
//! Kubernetes' admission policies and Envoy's filters), through the `cel` crate.
//!
//! An expression is compiled once, when the check file is read, and then checked against
//! the exchange model ([`super::exchange::FIELDS`]): a name that is not a variable of the
//! model (`respons`), a field the model does not have (`response.stauts`) or a function
//! neither CEL nor probe defines (`heder(…)`) is an error naming its line and column, so a
//! mistyped check stops the run before anything is sent instead of never firing.
//! Evaluating one on an exchange gives a value or an [`EvalError`] (a missing field of a
//! body, a type that does not fit): the caller counts that exchange as not judged.
//!
//! The helpers probe adds (docs/checks.md, "Helpers"): `header(message, name)` (a header by
//! any case, `null` when absent), `pointer(value, "/a/0/b")` (RFC 6901, `null` when
//! absent), `json(text)` (a string parsed as JSON, `null` when it is not), and `has_key(map,
//! key)`.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use cel::common::ast::{EntryExpr, Expr, IdedExpr};
use cel::common::traits::Indexer;
use cel::common::types::{
    CelBool, CelDouble, CelInt, CelList, CelMap, CelMapKey, CelNull, CelString, CelUInt, DYN_TYPE,
    STRING_TYPE,
};
use cel::common::value::{CowVal, Val};
use cel::objects::Key;
use cel::{Context, Env, ExecutionError, Program, Value as CelValue};
use serde_json::Value;

use super::direct;
use super::exchange::{parts, Bodies, Reads, Sink, FIELDS};
use crate::model::{Interaction, TestCase};

/// Where a problem sits inside one expression's text (1-based).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

/// An expression that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExprError {
    pub at: Position,
    pub message: String,
}

/// An expression that could not be evaluated on one exchange.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct EvalError(pub String);

/// The functions probe adds to CEL's.
const HELPERS: &[&str] = &["header", "pointer", "json", "has_key"];

/// One compiled expression.
#[derive(Debug)]
pub struct Expression {
    pub source: String,
    program: Program,
    /// What it reads and how it is evaluated, boxed: kept small, as a check holds several.
    compiled: Box<Compiled>,
}

/// What an expression reads of the exchange model, and how it is evaluated.
#[derive(Debug)]
struct Compiled {
    /// The parts of the exchange model it reads.
    reads: Reads,
    /// The expression for the direct evaluator (`super::direct`), when it is in its subset;
    /// else the `cel` crate's program evaluates it. Decided once, at compile; the
    /// expression's `Debug` shows which.
    direct: Option<direct::Node>,
}

/// What an expression reads of the exchange model (its tree walked once, at compile).
struct ReadsOf<'r>(&'r mut Reads);

impl ReadsOf<'_> {
    fn collect(&mut self, e: &IdedExpr, bound: &mut Vec<String>) {
        let is_root = |name: &str, bound: &[String]| {
            !bound.iter().any(|b| b == name) && FIELDS.iter().any(|(r, _)| *r == name)
        };
        match &e.expr {
            Expr::Ident(name) if is_root(name, bound) => {
                self.0.read_whole(name);
            }
            Expr::Select(select) => match &select.operand.expr {
                Expr::Ident(root) if is_root(root, bound) => {
                    self.0.read_field(root, &select.field);
                }
                _ => self.collect(&select.operand, bound),
            },
            Expr::Call(call) => {
                if let Some(target) = &call.target {
                    self.collect(target, bound);
                }
                for (i, arg) in call.args.iter().enumerate() {
                    match &arg.expr {
                        Expr::Ident(root)
                            if i == 0 && call.func_name == "header" && is_root(root, bound) =>
                        {
                            self.0.read_field(root, "headers");
                        }
                        _ => self.collect(arg, bound),
                    }
                }
            }
            Expr::Comprehension(c) => {
                self.collect(&c.iter_range, bound);
                self.collect(&c.accu_init, bound);
                let before = bound.len();
                bound.push(c.iter_var.clone());
                if let Some(v) = &c.iter_var2 {
                    bound.push(v.clone());
                }
                bound.push(c.accu_var.clone());
                for x in [&c.loop_cond, &c.loop_step, &c.result] {
                    self.collect(x, bound);
                }
                bound.truncate(before);
            }
            Expr::List(list) => {
                for x in &list.elements {
                    self.collect(x, bound);
                }
            }
            Expr::Map(map) => {
                for entry in &map.entries {
                    if let EntryExpr::MapEntry(m) = &entry.expr {
                        self.collect(&m.key, bound);
                        self.collect(&m.value, bound);
                    }
                }
            }
            Expr::Struct(st) => {
                for entry in &st.entries {
                    if let EntryExpr::StructField(f) = &entry.expr {
                        self.collect(&f.value, bound);
                    }
                }
            }
            Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
        }
    }
}

/// CEL's standard library, with `matches` compiling each pattern once per thread.
fn standard_env() -> Env {
    let mut env = Env::stdlib();
    // The `cel` crate's own `matches` (its `regex` feature, off here) compiles the pattern
    // at every call: 96% of a check's time on a body, for a pattern that never changes.
    // Declaring the two names cannot fail on an environment that has no `matches`.
    let _ = cel::add_overload!(env, fn matches: (CelString, CelString) -> Result<CelBool>, id = "matches");
    let _ = cel::add_member_overload!(env, fn matches: (CelString, CelString) -> Result<CelBool>);
    env
}

/// CEL's standard library and probe's helpers. The helpers are overloads of the
/// environment, not functions of each exchange's context: an overload is handed its
/// arguments as they are (a variable borrowed), where a context function is handed owned
/// copies, so `header(response, …)` copied the whole `response` map at every call.
static ENV: LazyLock<Arc<Env>> = LazyLock::new(|| {
    let mut env = standard_env();
    // None of the names is CEL's (checked by the tests), so declaring them cannot fail.
    let _ = env.add_overload(
        "header",
        "header(dyn,string)",
        vec![DYN_TYPE, STRING_TYPE],
        header,
    );
    let _ = env.add_overload(
        "pointer",
        "pointer(dyn,string)",
        vec![DYN_TYPE, STRING_TYPE],
        pointer,
    );
    let _ = env.add_overload(
        "has_key",
        "has_key(dyn,string)",
        vec![DYN_TYPE, STRING_TYPE],
        has_key,
    );
    let _ = env.add_overload("json", "json(string)", vec![STRING_TYPE], json_of);
    Arc::new(env)
});

/// `text.matches(pattern)` (RE2 syntax, as CEL specifies; the `regex` crate's is the same
/// for what checks write), the pattern compiled once per thread.
fn matches(text: &CelString<'_>, pattern: &CelString<'_>) -> Result<CelBool, ExecutionError> {
    direct::regex_match(text.inner(), pattern.inner()).map(CelBool::from)
}

impl Expression {
    /// Compiles `source` and checks the names it uses against the exchange model.
    pub fn compile(source: &str) -> Result<Expression, ExprError> {
        let program = ENV.compile(source).map_err(|errors| {
            let first = errors.errors.first();
            ExprError {
                at: first.map_or(Position { line: 1, column: 1 }, |e| Position {
                    line: e.pos.0.max(1) as usize,
                    column: e.pos.1.max(0) as usize + 1,
                }),
                message: first.map_or_else(|| "not an expression".to_string(), |e| e.msg.clone()),
            }
        })?;
        let mut reads = Reads::default();
        ReadsOf(&mut reads).collect(program.expression(), &mut Vec::new());
        let expression = Expression {
            source: source.to_string(),
            compiled: Box::new(Compiled {
                reads,
                direct: direct::compile(program.expression()),
            }),
            program,
        };
        expression.check_names()?;
        Ok(expression)
    }

    /// The parts of the exchange model it reads.
    pub fn reads(&self) -> &Reads {
        &self.compiled.reads
    }

    /// Which evaluator judges with it: `direct` (its own, over the exchange as stored) or
    /// `cel` (the `cel` crate's program, for what is outside the direct one's subset).
    pub fn evaluator(&self) -> &'static str {
        match self.compiled.direct {
            Some(_) => "direct",
            None => "cel",
        }
    }

    /// Evaluates on one exchange.
    pub fn evaluate(&self, bound: &Bound<'_>) -> Result<CelValue, EvalError> {
        match &self.compiled.direct {
            Some(node) => direct::evaluate(node, &bound.model)
                .map(|v| direct::to_cel(&v))
                .map_err(|e| EvalError(describe(&e))),
            None => self.evaluate_with_cel(bound),
        }
    }

    /// Evaluates with the `cel` crate's program, whatever the expression.
    pub(super) fn evaluate_with_cel(&self, bound: &Bound<'_>) -> Result<CelValue, EvalError> {
        self.program
            .execute(bound.context())
            .map_err(|e| EvalError(describe(&e)))
    }

    /// Evaluates to a boolean; anything else is an [`EvalError`].
    pub fn holds(&self, bound: &Bound<'_>) -> Result<bool, EvalError> {
        if let Some(node) = &self.compiled.direct {
            return match direct::evaluate(node, &bound.model) {
                Ok(direct::V::Bool(b)) => Ok(b),
                Ok(other) => Err(EvalError(format!(
                    "`{}` gave {}, not true or false",
                    self.source,
                    direct::kind(&other)
                ))),
                Err(e) => Err(EvalError(describe(&e))),
            };
        }
        match self.evaluate_with_cel(bound)? {
            CelValue::Bool(b) => Ok(b),
            other => Err(EvalError(format!(
                "`{}` gave {}, not true or false",
                self.source,
                type_name(&other)
            ))),
        }
    }

    fn position_of(&self, id: u64) -> Position {
        let offset = self
            .program
            .source_info()
            .offset_for(id)
            .map_or(0, |(start, _)| start as usize);
        position_in(&self.source, offset)
    }

    /// Every name the expression reads must be the model's, every field of the model it
    /// selects must exist, and every function must be CEL's or probe's.
    fn check_names(&self) -> Result<(), ExprError> {
        let mut bound = Vec::new();
        self.walk(self.program.expression(), &mut bound)
    }

    fn walk(&self, e: &IdedExpr, bound: &mut Vec<String>) -> Result<(), ExprError> {
        let error = |message: String| ExprError {
            at: self.position_of(e.id),
            message,
        };
        match &e.expr {
            Expr::Ident(name) => {
                let known = FIELDS.iter().any(|(root, _)| root == name);
                if !known && !bound.iter().any(|b| b == name) {
                    let roots: Vec<&str> = FIELDS.iter().map(|(r, _)| *r).collect();
                    return Err(error(format!(
                        "`{name}` is not a variable of the exchange model ({}){}",
                        roots.join(", "),
                        did_you_mean(name, &roots)
                    )));
                }
            }
            Expr::Select(select) => {
                if let Expr::Ident(root) = &select.operand.expr {
                    if !bound.iter().any(|b| b == root) {
                        if let Some((_, fields)) = FIELDS.iter().find(|(r, _)| r == root) {
                            if !fields.contains(&select.field.as_str()) {
                                // CEL places a selection at its dot; the field follows it.
                                let mut at = self.position_of(e.id);
                                at.column += 1;
                                return Err(ExprError {
                                    at,
                                    message: format!(
                                        "`{root}` has no field `{}` (it has {}){}",
                                        select.field,
                                        fields.join(", "),
                                        did_you_mean(&select.field, fields)
                                    ),
                                });
                            }
                        }
                    }
                }
                self.walk(&select.operand, bound)?;
            }
            Expr::Call(call) => {
                // Operators are calls too (`_==_`, `!_`, `@in`): only named functions are
                // looked up.
                let named = call
                    .func_name
                    .starts_with(|c: char| c.is_ascii_alphabetic())
                    && call
                        .func_name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_');
                if named && !function_exists(&call.func_name, call.target.is_some()) {
                    let mut known: Vec<&str> = HELPERS.to_vec();
                    known.extend(CEL_FUNCTIONS);
                    return Err(error(format!(
                        "no function `{}` in CEL or probe's helpers{}",
                        call.func_name,
                        did_you_mean(&call.func_name, &known)
                    )));
                }
                if let Some(target) = &call.target {
                    self.walk(target, bound)?;
                }
                for arg in &call.args {
                    self.walk(arg, bound)?;
                }
            }
            Expr::Comprehension(c) => {
                self.walk(&c.iter_range, bound)?;
                self.walk(&c.accu_init, bound)?;
                let before = bound.len();
                bound.push(c.iter_var.clone());
                if let Some(v) = &c.iter_var2 {
                    bound.push(v.clone());
                }
                bound.push(c.accu_var.clone());
                let inner = [&c.loop_cond, &c.loop_step, &c.result]
                    .into_iter()
                    .try_for_each(|x| self.walk(x, bound));
                bound.truncate(before);
                inner?;
            }
            Expr::List(list) => {
                for x in &list.elements {
                    self.walk(x, bound)?;
                }
            }
            Expr::Map(map) => {
                for entry in &map.entries {
                    if let EntryExpr::MapEntry(m) = &entry.expr {
                        self.walk(&m.key, bound)?;
                        self.walk(&m.value, bound)?;
                    }
                }
            }
            Expr::Struct(s) => {
                for entry in &s.entries {
                    if let EntryExpr::StructField(f) = &entry.expr {
                        self.walk(&f.value, bound)?;
                    }
                }
            }
            Expr::Literal(_) | Expr::Unspecified => {}
        }
        Ok(())
    }
}

/// CEL's own functions and macros, for the "did you mean" of an unknown one.
const CEL_FUNCTIONS: &[&str] = &[
    "size",
    "contains",
    "startsWith",
    "endsWith",
    "matches",
    "string",
    "int",
    "uint",
    "double",
    "bytes",
    "bool",
    "type",
    "dyn",
    "has",
    "all",
    "exists",
    "exists_one",
    "map",
    "filter",
    "max",
    "min",
];

/// Whether CEL or probe defines `name`: asked of the interpreter itself (a call of an
/// unknown function is an "undeclared reference"; a known one with the wrong arguments is
/// not), so the answer follows the `cel` version built in.
fn function_exists(name: &str, member: bool) -> bool {
    if HELPERS.contains(&name) || CEL_FUNCTIONS.contains(&name) {
        return true;
    }
    let probe = if member {
        format!("null.{name}()")
    } else {
        format!("{name}()")
    };
    let Ok(program) = ENV.compile(&probe) else {
        return false;
    };
    let context: Context<'_, '_> = Context::with_env(ENV.clone());
    !matches!(
        program.execute(&context),
        Err(ExecutionError::UndeclaredReference(_))
    )
}

/// One exchange as expressions see it, shared by every check: read where it lies by the
/// expressions the direct evaluator takes (`super::direct`), and made into the `cel`
/// crate's values, once, only when an expression outside its subset is evaluated.
pub struct Bound<'v> {
    model: direct::Model<'v>,
    making: Making<'v>,
    context: OnceCell<Context<'v, 'v>>,
}

/// What the `cel` crate's context is made from.
enum Making<'v> {
    Json(&'v Value),
    Exchange {
        case: &'v TestCase,
        interaction: &'v Interaction,
        bodies: Bodies<'v>,
        tags: &'v [String],
        reads: &'v Reads,
    },
}

impl<'v> Bound<'v> {
    /// A model given as JSON ([`super::ExchangeModel::value`]), its strings borrowed.
    pub fn new(model: &'v Value) -> Bound<'v> {
        Bound {
            model: direct::Model::Json(model),
            making: Making::Json(model),
            context: OnceCell::new(),
        }
    }

    /// One exchange, for expressions that read at most what `reads` names: bodies,
    /// headers and parameters borrowed from it, never written as JSON first.
    pub fn of_exchange(
        case: &'v TestCase,
        interaction: &'v Interaction,
        bodies: Bodies<'v>,
        tags: &'v [String],
        reads: &'v Reads,
    ) -> Bound<'v> {
        Bound {
            model: direct::Model::Exchange(Box::new(direct::View::new(
                case,
                interaction,
                bodies,
                tags,
            ))),
            making: Making::Exchange {
                case,
                interaction,
                bodies,
                tags,
                reads,
            },
            context: OnceCell::new(),
        }
    }

    /// The model as the `cel` crate's variables, made at the first call.
    fn context(&self) -> &Context<'v, 'v> {
        self.context.get_or_init(|| {
            let mut context = Context::with_env(ENV.clone());
            match self.making {
                Making::Json(model) => {
                    if let Value::Object(map) = model {
                        for (name, value) in map {
                            context.add_variable_as_val(name.clone(), to_val(value));
                        }
                    }
                }
                Making::Exchange {
                    case,
                    interaction,
                    bodies,
                    tags,
                    reads,
                } => {
                    let (parts, _) = parts(&Cel, case, interaction, bodies, tags, reads);
                    for (name, value) in parts {
                        context.add_variable_as_val(name, value);
                    }
                }
            }
            context
        })
    }
}

/// The exchange model written as CEL values: as [`to_val`] would convert its JSON (whole
/// numbers as `int`, others as `double`), without the JSON.
struct Cel;

impl<'v> Sink<'v> for Cel {
    type Out = Box<dyn Val + 'v>;
    fn null(&self) -> Self::Out {
        Box::new(CelNull)
    }
    fn uint(&self, n: u64) -> Self::Out {
        match i64::try_from(n) {
            Ok(i) => Box::new(CelInt::from(i)),
            Err(_) => Box::new(CelUInt::from(n)),
        }
    }
    fn float(&self, f: f64) -> Self::Out {
        // JSON has no NaN or infinity: the model holds `null` there.
        match f.is_finite() {
            true => Box::new(CelDouble::from(f)),
            false => Box::new(CelNull),
        }
    }
    fn bool(&self, b: bool) -> Self::Out {
        Box::new(CelBool::from(b))
    }
    fn text(&self, text: Cow<'v, str>) -> Self::Out {
        Box::new(CelString::from(text))
    }
    fn borrowed(&self, value: &'v Value) -> Self::Out {
        to_val(value)
    }
    fn owned(&self, value: Value) -> Self::Out {
        to_owned_val(&value)
    }
    fn map(&self, entries: Vec<(Cow<'v, str>, Self::Out)>) -> Self::Out {
        Box::new(CelMap::from(
            entries
                .into_iter()
                .map(|(k, v)| (CelMapKey::String(CelString::from(k)), v))
                .collect::<HashMap<_, _>>(),
        ))
    }
}

/// A JSON value as the interpreter holds a variable, built directly (going through
/// `cel::Value` and the interpreter's own conversion copied each map once per level of
/// nesting), integers as integers, other numbers as doubles, strings borrowed from `value`.
fn to_val<'v>(value: &'v Value) -> Box<dyn Val + 'v> {
    convert(value, &|s: &'v str| CelString::from(s))
}

/// [`to_val`] of a value that does not outlive the call (`json(text)`'s): strings copied.
fn to_owned_val(value: &Value) -> Box<dyn Val + 'static> {
    convert(value, &|s: &str| CelString::from(s.to_owned()))
}

fn convert<'s, 'v>(value: &'s Value, text: &dyn Fn(&'s str) -> CelString<'v>) -> Box<dyn Val + 'v> {
    match value {
        Value::Null => Box::new(CelNull),
        Value::Bool(b) => Box::new(CelBool::from(*b)),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => Box::new(CelInt::from(i)),
            (None, Some(u), _) => Box::new(CelUInt::from(u)),
            (_, _, Some(f)) => Box::new(CelDouble::from(f)),
            _ => Box::new(CelNull),
        },
        Value::String(s) => Box::new(text(s)),
        Value::Array(items) => Box::new(CelList::from(
            items.iter().map(|v| convert(v, text)).collect::<Vec<_>>(),
        )),
        Value::Object(map) => Box::new(CelMap::from(
            map.iter()
                .map(|(k, v)| (CelMapKey::String(text(k)), convert(v, text)))
                .collect::<HashMap<_, _>>(),
        )),
    }
}

/// A CEL value as text for a message: strings bare, everything else as JSON would show it.
pub fn display(value: &CelValue) -> String {
    match value {
        CelValue::String(s) => s.to_string(),
        other => to_json(other).to_string(),
    }
}

/// A CEL value as JSON (maps in key order).
pub fn to_json(value: &CelValue) -> Value {
    match value {
        CelValue::Null => Value::Null,
        CelValue::Bool(b) => Value::Bool(*b),
        CelValue::Int(i) => Value::from(*i),
        CelValue::UInt(u) => Value::from(*u),
        CelValue::Float(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
        CelValue::String(s) => Value::String(s.to_string()),
        CelValue::Bytes(b) => Value::String(String::from_utf8_lossy(b).into_owned()),
        CelValue::List(items) => Value::Array(items.iter().map(to_json).collect()),
        CelValue::Map(map) => {
            let mut entries: Vec<(String, Value)> = map
                .map
                .iter()
                .map(|(k, v)| (key_text(k), to_json(v)))
                .collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().collect())
        }
        other => Value::String(format!("{other:?}")),
    }
}

fn key_text(key: &Key) -> String {
    match key {
        Key::Int(i) => i.to_string(),
        Key::Uint(u) => u.to_string(),
        Key::Bool(b) => b.to_string(),
        Key::String(s) => s.to_string(),
    }
}

fn type_name(value: &CelValue) -> &'static str {
    match value {
        CelValue::Null => "null",
        CelValue::Bool(_) => "a bool",
        CelValue::Int(_) | CelValue::UInt(_) => "an int",
        CelValue::Float(_) => "a double",
        CelValue::String(_) => "a string",
        CelValue::Bytes(_) => "bytes",
        CelValue::List(_) => "a list",
        CelValue::Map(_) => "a map",
        _ => "a value",
    }
}

/// A helper's arguments, as many as its overload declares (the interpreter calls an
/// overload only with arguments of its declared types).
fn arguments<'b, 'v, const N: usize>(
    name: &str,
    args: Vec<CowVal<'b, 'v>>,
) -> Result<[CowVal<'b, 'v>; N], ExecutionError> {
    let given = args.len();
    args.try_into().map_err(|_| ExecutionError::FunctionError {
        function: name.into(),
        message: format!("takes {N} arguments, given {given}"),
    })
}

/// A helper's string argument.
fn text_of<'a>(name: &str, value: &'a CowVal<'_, '_>) -> Result<&'a str, ExecutionError> {
    value
        .downcast_ref::<CelString>()
        .map(|s| s.inner())
        .ok_or_else(|| ExecutionError::UnexpectedType {
            got: value.get_type().name().to_owned(),
            want: format!("string (the last argument of `{name}`)"),
        })
}

/// What `at` leads to inside `value`: a map's entry, or (`lists`) a list's item when `at`
/// is an index; borrowed from `value`.
fn child<'b, 'v>(value: &'b (dyn Val + 'v), at: &str, lists: bool) -> Option<&'b (dyn Val + 'v)> {
    if let Some(map) = value.downcast_ref::<CelMap>() {
        return match map.get(&CelString::from(at)) {
            Ok(CowVal::Borrowed(v)) => Some(v),
            _ => None,
        };
    }
    let list = value.downcast_ref::<CelList>().filter(|_| lists)?;
    at.parse::<usize>()
        .ok()
        .and_then(|i| list.inner().get(i))
        .map(|v| v.as_ref())
}

/// `value` followed along `path`, each step with [`child`]: borrowed where `value` is (a
/// variable), copied out where it is a value of the call's own (`pointer(json(…), …)`);
/// `null` where nothing is.
fn follow<'b, 'v>(value: CowVal<'b, 'v>, path: &[&str], lists: bool) -> CowVal<'b, 'v> {
    fn walk<'x, 'v>(
        mut at: &'x (dyn Val + 'v),
        path: &[&str],
        lists: bool,
    ) -> Option<&'x (dyn Val + 'v)> {
        for step in path {
            at = child(at, step, lists)?;
        }
        Some(at)
    }
    match value {
        CowVal::Borrowed(v) => walk(v, path, lists).map_or_else(null, CowVal::Borrowed),
        CowVal::Owned(v) => walk(v.as_ref(), path, lists)
            .map_or_else(null, |found| CowVal::Owned(found.clone_as_boxed())),
    }
}

fn null<'b, 'v>() -> CowVal<'b, 'v> {
    CowVal::owned(CelNull)
}

/// `header(message, name)`: the header `name`, by any case, of a request or response.
fn header<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [message, name] = arguments("header", args)?;
    let name = text_of("header", &name)?.to_ascii_lowercase();
    Ok(follow(message, &["headers", &name], false))
}

/// `pointer(value, "/a/0/b")`: RFC 6901 inside any value; `null` where nothing is.
fn pointer<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [value, pointer] = arguments("pointer", args)?;
    let pointer = text_of("pointer", &pointer)?;
    if pointer.is_empty() {
        return Ok(value);
    }
    let Some(tokens) = pointer.strip_prefix('/') else {
        return Ok(null());
    };
    let tokens: Vec<std::borrow::Cow<'_, str>> = tokens
        .split('/')
        .map(|t| match t.contains('~') {
            true => t.replace("~1", "/").replace("~0", "~").into(),
            false => t.into(),
        })
        .collect();
    let path: Vec<&str> = tokens.iter().map(|t| t.as_ref()).collect();
    Ok(follow(value, &path, true))
}

/// `json(text)`: a string parsed as JSON; `null` when it is not JSON.
fn json_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [text] = arguments("json", args)?;
    let text = text_of("json", &text)?;
    Ok(serde_json::from_str::<Value>(text)
        .map_or_else(|_| null(), |v| CowVal::Owned(to_owned_val(&v))))
}

/// `has_key(map, key)`: whether a map has the key (`has()` needs a literal field name).
fn has_key<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [map, key] = arguments("has_key", args)?;
    let key = text_of("has_key", &key)?;
    let found = map
        .downcast_ref::<CelMap>()
        .is_some_and(|m| m.get(&CelString::from(key)).is_ok());
    Ok(CowVal::owned(CelBool::from(found)))
}

/// An evaluation error in words a check's author reads.
fn describe(error: &ExecutionError) -> String {
    match error {
        ExecutionError::NoSuchKey(key) => format!("no field `{key}`"),
        ExecutionError::UndeclaredReference(name) => format!("no value `{name}`"),
        other => other.to_string(),
    }
}

/// The 1-based line and column of byte `offset` in `text`.
pub fn position_in(text: &str, offset: usize) -> Position {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    Position { line, column }
}

fn did_you_mean(name: &str, known: &[&str]) -> String {
    let best = known
        .iter()
        .map(|k| (strsim::levenshtein(name, k), *k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 3))
        .min();
    best.map(|(_, k)| format!("; did you mean `{k}`?"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reads_of(source: &str) -> Reads {
        Expression::compile(source).unwrap().reads().clone()
    }

    #[test]
    fn an_expression_reads_only_the_parts_it_names() {
        let r = reads_of("response.status == 200 && header(response, 'x-id') != null");
        assert!(r.wants("response", "status") && r.wants("response", "headers"));
        assert!(!r.wants("response", "body") && !r.wants_any("request"));
        // A root read whole wants every field of it.
        let r = reads_of("pointer(response, '/body/id') == 7");
        assert!(r.wants("response", "body") && r.wants("response", "text"));
        // A comprehension's variable is no root, whatever its name.
        let r = reads_of("response.body.items.all(request, request.n > 0)");
        assert!(r.wants("response", "body") && !r.wants_any("request"));
        let r = reads_of("has(request.query.limit)");
        assert!(r.wants("request", "query") && !r.wants("request", "body"));
    }

    #[test]
    fn matches_compiles_a_pattern_once_and_reports_a_bad_one() {
        let model = model();
        let bound = Bound::new(&model);
        for _ in 0..3 {
            let e = Expression::compile("response.text.matches('^[{]')").unwrap();
            assert_eq!(e.holds(&bound), Ok(true));
        }
        let e = Expression::compile("response.text.matches('(unclosed')").unwrap();
        let err = e.holds(&bound).unwrap_err();
        assert!(err.0.contains("not a valid regex"), "{err}");
    }

    fn model() -> Value {
        json!({
            "request": {"method": "GET", "headers": {"accept": "application/json"},
                        "path_params": {"id": 7}, "query": {"limit": 5}, "body": null, "text": null},
            "response": {"status": 200, "headers": {"x-request-id": "abc", "content-type": "application/json"},
                         "body": {"id": 7, "items": [{"n": 1}, {"n": 2}]}, "text": "{\"id\":7}",
                         "time_ms": 12.5},
            "error": null,
            "case": {"strategy": "nominal", "intent": "acceptable", "mutation": null, "identity": "default", "tags": ["users"]},
            "step": null,
            "seq": 3,
        })
    }

    fn eval(source: &str) -> Result<CelValue, EvalError> {
        Expression::compile(source)
            .unwrap_or_else(|e| panic!("{source}: {e:?}"))
            .evaluate(&Bound::new(&model()))
    }

    #[test]
    fn the_model_reads_as_cel() {
        assert_eq!(eval("response.status == 200"), Ok(CelValue::Bool(true)));
        assert_eq!(
            eval("response.body.id == request.path_params.id"),
            Ok(CelValue::Bool(true))
        );
        assert_eq!(
            eval("size(response.body.items) <= request.query.limit"),
            Ok(CelValue::Bool(true))
        );
        assert_eq!(eval("response.time_ms < 100.0"), Ok(CelValue::Bool(true)));
        assert_eq!(
            eval("response.body.items.all(i, i.n > 0)"),
            Ok(CelValue::Bool(true))
        );
        assert_eq!(eval("'users' in case.tags"), Ok(CelValue::Bool(true)));
    }

    #[test]
    fn the_helpers_do_what_the_docs_say() {
        assert_eq!(
            eval("header(response, 'X-Request-ID')"),
            Ok(CelValue::String(Arc::new("abc".into())))
        );
        assert_eq!(
            eval("header(response, 'etag') == null"),
            Ok(CelValue::Bool(true))
        );
        assert_eq!(
            eval("pointer(response.body, '/items/1/n')"),
            Ok(CelValue::Int(2))
        );
        assert_eq!(
            eval("pointer(response.body, '/items/9/n') == null"),
            Ok(CelValue::Bool(true))
        );
        assert_eq!(eval("json(response.text).id"), Ok(CelValue::Int(7)));
        assert_eq!(
            eval("has_key(response.headers, 'x-request-id')"),
            Ok(CelValue::Bool(true))
        );
        assert_eq!(
            eval("response.text.matches('[0-9]+')"),
            Ok(CelValue::Bool(true))
        );
    }

    #[test]
    fn a_missing_field_of_a_body_is_an_evaluation_error_not_a_verdict() {
        let e = eval("response.body.nothing == 1").unwrap_err();
        assert!(e.0.contains("nothing"), "{e}");
        let e = Expression::compile("response.status")
            .unwrap()
            .holds(&Bound::new(&model()))
            .unwrap_err();
        assert!(e.0.contains("not true or false"), "{e}");
    }

    #[test]
    fn names_outside_the_model_are_errors_with_their_place() {
        let e =
            Expression::compile("response.status == 200 &&\n  respons.body != null").unwrap_err();
        assert_eq!(e.at, Position { line: 2, column: 3 });
        assert!(
            e.message.contains("did you mean `response`"),
            "{}",
            e.message
        );

        let e = Expression::compile("response.stauts == 200").unwrap_err();
        assert!(e.message.contains("no field `stauts`"), "{}", e.message);
        assert!(e.message.contains("did you mean `status`"), "{}", e.message);

        let e = Expression::compile("heder(response, 'a') != null").unwrap_err();
        assert!(e.message.contains("did you mean `header`"), "{}", e.message);

        let e = Expression::compile("response.status ==").unwrap_err();
        assert_eq!(e.at.line, 1);

        // Comprehension variables are names too, inside their comprehension only.
        Expression::compile("response.body.items.all(item, item.n > 0)").unwrap();
        assert!(
            Expression::compile("response.body.items.all(item, item.n > 0) && item.n > 0").is_err()
        );
        // CEL's own functions, global and member, are known.
        Expression::compile("string(response.status).startsWith('2') && int('3') == 3").unwrap();
    }

    #[test]
    fn helper_names_are_not_cels() {
        let standard = Arc::new(standard_env());
        for name in HELPERS {
            let mut context: Context<'_, '_> = Context::with_env(standard.clone());
            assert!(context.add_function(name, |a: i64| a).is_ok(), "{name}");
        }
    }
}
