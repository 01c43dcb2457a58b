//! Check files: the `[[check]]` tables of `probe.toml` or of a file given by `--checks`,
//! read into [`Check`]s (docs/checks.md, "Writing a check").
//!
//! Every mistake is an error naming the file, the line and the column, and what was
//! expected there: a key this version does not know, a severity that is not one, an
//! expression that does not parse or names what the exchange model does not have. The
//! position of an error inside an expression is carried to the file's line and column,
//! so an editor jumps to it.

use std::ops::Range;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::expr::{position_in, ExprError, Expression, Position};
use super::template::Template;
use crate::model::Severity;

/// A check file that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckFileError {
    #[error("{file}: {message}")]
    Read { file: String, message: String },
    #[error("{file}:{line}:{column}: {message}")]
    At {
        file: String,
        line: usize,
        column: usize,
        message: String,
    },
}

/// One user check, compiled.
#[derive(Debug)]
pub struct Check {
    pub name: String,
    pub severity: Severity,
    /// A Web Fuzzing Commons style code, when the team gives one.
    pub code: Option<String>,
    pub applies: Applies,
    /// How it judges: an expression, or a program.
    pub judging: Judging,
    /// Where it was written (`checks.toml:12`), for messages.
    pub origin: String,
    /// The check's own text, as written: stored with the findings it made, so a recheck
    /// says exactly which check judged. A program check's text ends with a line naming its
    /// program file and the file's BLAKE3 hash, so a changed program is a changed check.
    pub text: String,
}

/// How a check judges an exchange `applies` lets through.
#[derive(Debug)]
pub enum Judging {
    /// `expect` (and `when`): CEL expressions judged in probe.
    Expression {
        /// Selects the exchanges the check judges (all that `applies` lets through when
        /// absent).
        when: Option<Expression>,
        /// What must hold of a selected exchange.
        expect: Expression,
        /// The finding's message; `{expression}` places are filled from the exchange.
        message: Template,
    },
    /// `command`: a program reading exchanges as NDJSON (docs/checks.md, "Checks as
    /// programs").
    Program(ProgramCheck),
}

/// A check's program, as its `[[check]]` table gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramCheck {
    /// The program and its arguments, run in probe's working directory.
    pub command: Vec<String>,
    /// The variables of probe's environment passed to it, by name (it gets no other but
    /// `PATH`).
    pub env: Vec<String>,
    /// How long it may take, after the last exchange, to answer the rest.
    pub deadline: Duration,
    /// The file the command runs, when it names one that exists: its path as written and
    /// its BLAKE3 hash (hex).
    pub file: Option<(String, String)>,
}

/// How long a program may take to answer after the last exchange, unless its check says.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(10);

/// Which exchanges a check looks at. An empty list lets every exchange through.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Applies {
    /// Operation ids or `METHOD /path/template`.
    pub operations: Vec<String>,
    pub tags: Vec<String>,
    /// `404`, `4XX`, `2xx`.
    pub statuses: Vec<String>,
}

impl Applies {
    /// Whether an exchange of `operation` (`METHOD /path`, tags) answered `status` is one
    /// of those the check looks at.
    pub fn admits(
        &self,
        operation: &str,
        method: &str,
        path: &str,
        tags: &[String],
        status: Option<u16>,
    ) -> bool {
        let operation_ok = self.operations.is_empty()
            || self.operations.iter().any(|o| {
                o == operation
                    || o.split_once(' ')
                        .is_some_and(|(m, p)| m.eq_ignore_ascii_case(method) && p.trim() == path)
            });
        let tags_ok = self.tags.is_empty() || self.tags.iter().any(|t| tags.contains(t));
        let status_ok = self.statuses.is_empty()
            || status.is_some_and(|s| self.statuses.iter().any(|p| status_matches(p, s)));
        operation_ok && tags_ok && status_ok
    }
}

fn status_matches(pattern: &str, status: u16) -> bool {
    let text = status.to_string();
    pattern.len() == 3
        && pattern
            .chars()
            .zip(text.chars())
            .all(|(p, s)| p.eq_ignore_ascii_case(&'x') || p == s)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    check: Vec<Spanned<RawCheck>>,
}

/// What `probe.toml` may hold besides checks is not this reader's business.
#[derive(Deserialize)]
struct RawProject {
    #[serde(default)]
    check: Vec<Spanned<RawCheck>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCheck {
    name: Spanned<String>,
    #[serde(default)]
    severity: Option<Spanned<String>>,
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    operations: Vec<String>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    statuses: Vec<Spanned<StatusText>>,
    #[serde(default)]
    when: Option<Spanned<String>>,
    #[serde(default)]
    expect: Option<Spanned<String>>,
    #[serde(default)]
    message: Option<Spanned<String>>,
    #[serde(default)]
    command: Option<Spanned<Vec<String>>>,
    #[serde(default)]
    env: Vec<Spanned<String>>,
    #[serde(default)]
    deadline: Option<Spanned<String>>,
}

/// A status written as a number (`404`) or text (`"4XX"`).
#[derive(Deserialize)]
#[serde(untagged)]
enum StatusText {
    Number(u16),
    Text(String),
}

/// Reads the checks of a check file (only `[[check]]` tables).
pub fn read_file(file: &str, text: &str) -> Result<Vec<Check>, CheckFileError> {
    let raw: RawFile = toml::from_str(text).map_err(|e| toml_error(file, text, &e))?;
    compile_all(file, text, raw.check)
}

/// Reads the `[[check]]` tables of `probe.toml` (its other tables are settings and
/// identities, read elsewhere).
pub fn read_project(file: &str, text: &str) -> Result<Vec<Check>, CheckFileError> {
    let raw: RawProject = toml::from_str(text).map_err(|e| toml_error(file, text, &e))?;
    compile_all(file, text, raw.check)
}

fn compile_all(
    file: &str,
    text: &str,
    raw: Vec<Spanned<RawCheck>>,
) -> Result<Vec<Check>, CheckFileError> {
    let mut out: Vec<Check> = Vec::new();
    for spanned in raw {
        let span = spanned.span();
        let check = compile(file, text, span.clone(), spanned.into_inner())?;
        if out.iter().any(|c| c.name == check.name) {
            let at = position_in(text, span.start);
            return Err(CheckFileError::At {
                file: file.to_string(),
                line: at.line,
                column: at.column,
                message: format!("a second check named `{}`; names must differ", check.name),
            });
        }
        out.push(check);
    }
    Ok(out)
}

fn compile(
    file: &str,
    text: &str,
    span: Range<usize>,
    raw: RawCheck,
) -> Result<Check, CheckFileError> {
    let at = |offset: usize, message: String| {
        let p = position_in(text, offset);
        CheckFileError::At {
            file: file.to_string(),
            line: p.line,
            column: p.column,
            message,
        }
    };
    let name = raw.name.get_ref().trim().to_string();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    {
        return Err(at(
            raw.name.span().start,
            format!("check name `{name}`: use letters, digits, `_`, `-` and `.` only"),
        ));
    }
    let severity = match &raw.severity {
        None => Severity::Medium,
        Some(s) => match s.get_ref().to_ascii_lowercase().as_str() {
            "low" => Severity::Low,
            "medium" => Severity::Medium,
            "high" => Severity::High,
            other => {
                return Err(at(
                    s.span().start,
                    format!("severity `{other}` is not one of low, medium, high"),
                ))
            }
        },
    };
    let mut statuses = Vec::new();
    for s in &raw.statuses {
        let pattern = match s.get_ref() {
            StatusText::Number(n) => n.to_string(),
            StatusText::Text(t) => t.trim().to_string(),
        };
        let valid = pattern.len() == 3
            && pattern
                .chars()
                .next()
                .is_some_and(|c| ('1'..='5').contains(&c))
            && pattern
                .chars()
                .skip(1)
                .all(|c| c.is_ascii_digit() || c.eq_ignore_ascii_case(&'x'));
        if !valid {
            return Err(at(
                s.span().start,
                format!("status `{pattern}` is not a status such as 404 or 4XX"),
            ));
        }
        statuses.push(pattern);
    }
    let judging = match (&raw.expect, &raw.command) {
        (Some(expect), None) => expression_check(file, text, &at, &raw, expect)?,
        (None, Some(command)) => Judging::Program(program_check(&at, &raw, command)?),
        (Some(_), Some(command)) => {
            return Err(at(
                command.span().start,
                format!("check `{name}` has both `expect` and `command`; give one"),
            ))
        }
        (None, None) => {
            return Err(at(
                raw.name.span().start,
                format!(
                    "check `{name}` has neither `expect` (an expression) nor `command` (a program)"
                ),
            ))
        }
    };
    let start = position_in(text, span.start);
    let mut kept = text[span].trim().to_string();
    if let Judging::Program(program) = &judging {
        kept.push_str(&program_line(program));
    }
    Ok(Check {
        name,
        severity,
        code: raw.code,
        applies: Applies {
            operations: raw.operations,
            tags: raw.tags,
            statuses,
        },
        judging,
        origin: format!("{file}:{}", start.line),
        text: kept,
    })
}

/// The `when`, `expect` and `message` of a declarative check, compiled.
fn expression_check(
    file: &str,
    text: &str,
    at: &dyn Fn(usize, String) -> CheckFileError,
    raw: &RawCheck,
    expect: &Spanned<String>,
) -> Result<Judging, CheckFileError> {
    let expression = |source: &Spanned<String>| -> Result<Expression, CheckFileError> {
        Expression::compile(source.get_ref()).map_err(|e| expression_error(file, text, source, e))
    };
    let when = raw.when.as_ref().map(&expression).transpose()?;
    let compiled = expression(expect)?;
    let message = match &raw.message {
        Some(m) => Template::parse(m.get_ref()).map_err(|e| expression_error(file, text, m, e))?,
        None => Template::parse(&format!("`{}` does not hold", expect.get_ref()))
            .unwrap_or_else(|_| Template::literal(expect.get_ref())),
    };
    if let Some(e) = raw.env.first() {
        return Err(at(
            e.span().start,
            "`env` is for a program check (`command`), not an `expect`".into(),
        ));
    }
    if let Some(d) = &raw.deadline {
        return Err(at(
            d.span().start,
            "`deadline` is for a program check (`command`), not an `expect`".into(),
        ));
    }
    Ok(Judging::Expression {
        when,
        expect: compiled,
        message,
    })
}

/// The `command`, `env` and `deadline` of a program check; the program gives its own
/// messages and selects for itself, so `message` and `when` are mistakes here.
fn program_check(
    at: &dyn Fn(usize, String) -> CheckFileError,
    raw: &RawCheck,
    command: &Spanned<Vec<String>>,
) -> Result<ProgramCheck, CheckFileError> {
    if let Some(m) = &raw.message {
        return Err(at(
            m.span().start,
            "a program check's messages are the program's own: `message` is for `expect`".into(),
        ));
    }
    if let Some(w) = &raw.when {
        return Err(at(
            w.span().start,
            "a program check selects for itself (it may answer `skip`): `when` is for `expect`"
                .into(),
        ));
    }
    let words = command.get_ref();
    if words.is_empty() || words.iter().any(|w| w.is_empty()) {
        return Err(at(
            command.span().start,
            "`command` is the program and its arguments, none of them empty, such as \
             [\"python3\", \"checks/request_id.py\"]"
                .into(),
        ));
    }
    let mut env = Vec::new();
    for name in &raw.env {
        let valid = !name.get_ref().is_empty()
            && name
                .get_ref()
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(at(
                name.span().start,
                format!(
                    "`{}` is not the name of an environment variable",
                    name.get_ref()
                ),
            ));
        }
        env.push(name.get_ref().clone());
    }
    let deadline = match &raw.deadline {
        None => DEFAULT_DEADLINE,
        Some(d) => match humantime::parse_duration(d.get_ref().trim()) {
            Ok(t) if !t.is_zero() => t,
            _ => {
                return Err(at(
                    d.span().start,
                    format!(
                        "deadline `{}` is not a duration such as \"5s\" or \"500ms\"",
                        d.get_ref()
                    ),
                ))
            }
        },
    };
    Ok(ProgramCheck {
        command: words.clone(),
        env,
        deadline,
        file: program_file(words),
    })
}

/// The file a command runs: the first argument after the interpreter that names an
/// existing file (`python3 checks/x.py`), else the command itself when it is a path to
/// one (`./checks/x.sh`); with its BLAKE3 hash. A file that cannot be read is left out.
fn program_file(command: &[String]) -> Option<(String, String)> {
    let is_path = |w: &String| w.contains('/') || w.contains(std::path::MAIN_SEPARATOR);
    let chosen = command
        .iter()
        .skip(1)
        .filter(|w| !w.starts_with('-'))
        .find(|w| Path::new(w.as_str()).is_file())
        .or_else(|| {
            command
                .first()
                .filter(|w| is_path(w) && Path::new(w.as_str()).is_file())
        })?;
    let bytes = std::fs::read(chosen).ok()?;
    Some((chosen.clone(), blake3::hash(&bytes).to_hex().to_string()))
}

/// The line a program check's stored text ends with: what judged, exactly.
fn program_line(program: &ProgramCheck) -> String {
    match &program.file {
        Some((path, hash)) => format!("\n# program file {path} blake3:{hash}"),
        None => "\n# program file: none among the command's words".to_string(),
    }
}

/// An error at `error.at` inside the string `source` carried to the file: the string's
/// text starts after its opening quote (and after the newline that follows `'''` or
/// `"""`); a string whose escapes shift columns is placed at its start.
fn expression_error(
    file: &str,
    text: &str,
    source: &Spanned<String>,
    error: ExprError,
) -> CheckFileError {
    let span = source.span();
    let written = &text[span.clone()];
    let body_start = if written.starts_with("'''") || written.starts_with("\"\"\"") {
        let after = span.start + 3;
        if text[after..].starts_with('\n') {
            after + 1
        } else if text[after..].starts_with("\r\n") {
            after + 2
        } else {
            after
        }
    } else {
        span.start + 1
    };
    let literal = written.starts_with('\'');
    let at = if literal || !written.contains('\\') {
        inner_offset(text, body_start, error.at)
    } else {
        body_start
    };
    let p = position_in(text, at);
    CheckFileError::At {
        file: file.to_string(),
        line: p.line,
        column: p.column,
        message: format!("in `{}`: {}", source.get_ref().trim(), error.message),
    }
}

/// The byte offset in the file of (line, column) inside a string starting at `start`.
fn inner_offset(text: &str, start: usize, at: Position) -> usize {
    let mut offset = start;
    for _ in 1..at.line {
        match text[offset..].find('\n') {
            Some(n) => offset += n + 1,
            None => break,
        }
    }
    let line = &text[offset..];
    offset
        + line
            .char_indices()
            .nth(at.column.saturating_sub(1))
            .map_or(0, |(i, _)| i)
}

fn toml_error(file: &str, text: &str, error: &toml::de::Error) -> CheckFileError {
    let message = error.message().trim().to_string();
    match error.span() {
        Some(span) => {
            let p = position_in(text, span.start);
            CheckFileError::At {
                file: file.to_string(),
                line: p.line,
                column: p.column,
                message,
            }
        }
        None => CheckFileError::Read {
            file: file.to_string(),
            message,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"
[[check]]
name = "request-id"
severity = "low"
statuses = ["2XX", 404]
expect = "header(response, 'x-request-id') != null"
message = "answered {response.status} without X-Request-Id"

[[check]]
name = "item-id"
operations = ["getUser", "GET /users/{id}"]
when = "response.status == 200"
expect = '''
response.body.id == request.path_params.id
'''
"#;

    #[test]
    fn a_check_file_reads_into_checks() {
        let checks = read_file("checks.toml", FILE).unwrap();
        assert_eq!(checks.len(), 2);
        assert_eq!(checks[0].name, "request-id");
        assert_eq!(checks[0].severity, Severity::Low);
        assert_eq!(checks[0].applies.statuses, ["2XX", "404"]);
        assert_eq!(checks[0].origin, "checks.toml:2");
        assert!(
            checks[0].text.starts_with("[[check]]"),
            "{}",
            checks[0].text
        );
        assert!(matches!(
            checks[1].judging,
            Judging::Expression { when: Some(_), .. }
        ));
        assert_eq!(checks[1].severity, Severity::Medium);
    }

    #[test]
    fn applies_selects_by_operation_tag_and_status() {
        let a = Applies {
            operations: vec!["GET /users/{id}".into()],
            tags: vec![],
            statuses: vec!["2xx".into()],
        };
        assert!(a.admits("getUser", "GET", "/users/{id}", &[], Some(200)));
        assert!(!a.admits("getUser", "GET", "/users/{id}", &[], Some(404)));
        assert!(!a.admits("getUser", "GET", "/users/{id}", &[], None));
        assert!(!a.admits("listUsers", "GET", "/users", &[], Some(200)));
        let tagged = Applies {
            tags: vec!["admin".into()],
            ..Applies::default()
        };
        assert!(tagged.admits("x", "GET", "/", &["admin".into()], None));
        assert!(!tagged.admits("x", "GET", "/", &["users".into()], None));
    }

    fn error(text: &str) -> (usize, usize, String) {
        match read_file("c.toml", text).unwrap_err() {
            CheckFileError::At {
                line,
                column,
                message,
                ..
            } => (line, column, message),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_expression_error_names_the_line_and_column_in_the_file() {
        let (line, column, message) =
            error("[[check]]\nname = \"a\"\nexpect = \"response.stauts == 200\"\n");
        assert_eq!((line, column), (3, 20));
        assert!(message.contains("did you mean `status`"), "{message}");

        let (line, column, message) = error(
            "[[check]]\nname = \"a\"\nexpect = '''\nresponse.status == 200 &&\n    respons.body != null\n'''\n",
        );
        assert_eq!((line, column), (5, 5), "{message}");

        let (line, _, message) =
            error("[[check]]\nname = \"a\"\nexpect = \"response.status ==\"\n");
        assert_eq!(line, 3, "{message}");
    }

    #[test]
    fn a_key_or_value_this_version_does_not_know_is_an_error_at_its_place() {
        let (line, _, message) = error("[[check]]\nname = \"a\"\nexpct = \"true\"\n");
        assert!(message.contains("expct"), "{message}");
        assert!(line >= 1);
        let (line, column, message) =
            error("[[check]]\nname = \"a\"\nseverity = \"urgent\"\nexpect = \"true\"\n");
        assert_eq!((line, column), (3, 12));
        assert!(message.contains("low, medium, high"), "{message}");
        let (line, _, message) =
            error("[[check]]\nname = \"a\"\nstatuses = [\"20\"]\nexpect = \"true\"\n");
        assert_eq!(line, 3);
        assert!(message.contains("404 or 4XX"), "{message}");
        let (_, _, message) = error(
            "[[check]]\nname = \"a\"\nexpect = \"true\"\n[[check]]\nname = \"a\"\nexpect = \"true\"\n",
        );
        assert!(message.contains("second check named `a`"), "{message}");
    }

    #[test]
    fn a_program_check_reads_and_its_text_names_the_program_file_and_hash() {
        let dir = tempfile::tempdir().unwrap();
        let program = dir.path().join("rules.py");
        std::fs::write(&program, "print('hello')\n").unwrap();
        let path = program.to_str().unwrap();
        let text = format!(
            "[[check]]\nname = \"rules\"\nstatuses = [\"2XX\"]\ncommand = [\"python3\", \"-u\", {path:?}, \"--strict\"]\nenv = [\"ACME_RULES\"]\ndeadline = \"750ms\"\n"
        );
        let checks = read_file("c.toml", &text).unwrap();
        let program_check = checks[0].program().expect("a program check");
        assert_eq!(program_check.command[2], path);
        assert_eq!(program_check.env, ["ACME_RULES"]);
        assert_eq!(program_check.deadline, Duration::from_millis(750));
        let hash = blake3::hash(b"print('hello')\n").to_hex().to_string();
        assert_eq!(program_check.file, Some((path.to_string(), hash.clone())));
        assert!(
            checks[0]
                .text
                .ends_with(&format!("\n# program file {path} blake3:{hash}")),
            "{}",
            checks[0].text
        );

        // Another program, another check: the text differs with the file's content.
        std::fs::write(&program, "print('changed')\n").unwrap();
        let again = read_file("c.toml", &text).unwrap();
        assert_ne!(again[0].text, checks[0].text);

        // A command whose words name no file, and one that is itself a path.
        let inline = read_file(
            "c.toml",
            "[[check]]\nname = \"i\"\ncommand = [\"python3\", \"-c\", \"pass\"]\n",
        )
        .unwrap();
        assert_eq!(inline[0].program().unwrap().file, None);
        assert_eq!(inline[0].program().unwrap().deadline, DEFAULT_DEADLINE);
        let direct = read_file(
            "c.toml",
            &format!("[[check]]\nname = \"d\"\ncommand = [{path:?}]\n"),
        )
        .unwrap();
        assert_eq!(direct[0].program().unwrap().file.as_ref().unwrap().0, path);
    }

    #[test]
    fn a_check_has_expect_or_command_never_both_never_neither() {
        let (line, column, message) = error(
            "[[check]]\nname = \"a\"\nexpect = \"true\"\ncommand = [\"python3\", \"x.py\"]\n",
        );
        assert_eq!((line, column), (4, 11));
        assert!(message.contains("both `expect` and `command`"), "{message}");
        let (line, column, message) = error("[[check]]\nname = \"a\"\nseverity = \"low\"\n");
        assert_eq!((line, column), (2, 8));
        assert!(message.contains("neither `expect`"), "{message}");
        let (line, _, message) =
            error("[[check]]\nname = \"a\"\ncommand = [\"x\"]\nmessage = \"no\"\n");
        assert_eq!(line, 4);
        assert!(message.contains("`message` is for `expect`"), "{message}");
        let (line, _, message) =
            error("[[check]]\nname = \"a\"\ncommand = [\"x\"]\nwhen = \"true\"\n");
        assert_eq!(line, 4);
        assert!(message.contains("`when` is for `expect`"), "{message}");
        let (line, _, message) = error("[[check]]\nname = \"a\"\ncommand = []\n");
        assert_eq!(line, 3);
        assert!(
            message.contains("the program and its arguments"),
            "{message}"
        );
        let (line, column, message) =
            error("[[check]]\nname = \"a\"\ncommand = [\"x\"]\ndeadline = \"soon\"\n");
        assert_eq!((line, column), (4, 12));
        assert!(message.contains("not a duration"), "{message}");
        let (line, _, message) =
            error("[[check]]\nname = \"a\"\ncommand = [\"x\"]\nenv = [\"A B\"]\n");
        assert_eq!(line, 4);
        assert!(message.contains("environment variable"), "{message}");
        let (line, _, message) =
            error("[[check]]\nname = \"a\"\nexpect = \"true\"\ndeadline = \"5s\"\n");
        assert_eq!(line, 4);
        assert!(message.contains("for a program check"), "{message}");
    }

    #[test]
    fn a_project_file_may_hold_other_tables() {
        let text = "[checks]\nformats = false\n[[identity]]\nname = \"x\"\n[[check]]\nname = \"a\"\nexpect = \"true\"\n";
        assert_eq!(read_project("probe.toml", text).unwrap().len(), 1);
        assert!(read_file("c.toml", text).is_err());
    }
}
