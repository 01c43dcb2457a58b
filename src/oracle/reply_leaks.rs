//! `reply_leaks` (F209): a reply shows what only the server should know: a stack trace, a
//! database driver's error, a path of the server's file system, a framework's debug page.
//! Any status is judged, 2xx included. One finding per operation and kind of leak; a reply
//! is reported by its most specific kind only (debug page, then stack trace, then SQL
//! error, then file path), so a traceback that names `/app/notes.py` is one stack trace.
//!
//! A false alarm is worse than a miss: each detector asks for a form only the leak takes (a
//! traceback's header *and* a frame, two JVM frames, a driver's own phrase, an absolute path
//! under a server's directories with a source file's extension), never a bare word. What
//! the request sent and the reply echoes leaks nothing, and neither does a path a 2xx
//! answer holds as data (it needs a line number beside it to count there).
//!
//! The body's first [`READ`] bytes are read: a JSON body as its strings (decoded, one a
//! line, so an array of frames reads as a trace), an HTML page with its `<br>` as line
//! breaks and its entities decoded, other text as it is. A body that is not text (a NUL
//! byte, or more than one byte in 16 that is not UTF-8) is not judged.

use std::borrow::Cow;
use std::sync::LazyLock;

use aho_corasick::AhoCorasick;
use regex::Regex;

use super::*;

pub const INFO: OracleInfo = OracleInfo {
    name: "reply_leaks",
    code: Some("F209"),
    version: 1,
    severity: Severity::Medium,
    title: "a reply leaks a stack trace, an SQL error, a server file path or a debug page",
    setting: declared(
        "checks.reply_leaks",
        Kind::Bool,
        "true",
        "F209: a reply (any status) shows a stack trace, an SQL error, a server file path or a framework's debug page",
    ),
};

/// The same oracle for a debug page, which shows more (the source around each frame, the
/// settings, at worst a console): its findings are high.
static DEBUG_PAGE_INFO: OracleInfo = OracleInfo {
    severity: Severity::High,
    ..INFO
};

/// The bytes of a body read: a leak shows near the start of a reply, and reading a
/// megabyte of data for one would cost every answer of a fast API.
const READ: usize = 64 * 1024;

pub struct ReplyLeaks;

impl Judge for ReplyLeaks {
    fn info(&self) -> &'static OracleInfo {
        &INFO
    }

    fn reply(&self, ctx: &Context<'_>, _: &Oracles) -> Option<Observation> {
        check(ctx)
    }
}

fn check(ctx: &Context<'_>) -> Option<Observation> {
    let body = ctx.body?;
    let mut sent = normalise::sent_strings(ctx.exchange.case);
    sent.push(&ctx.exchange.interaction.request.url);
    let status = ctx.response.status;
    let leak = find(
        body,
        status,
        ctx.content_type(),
        ctx.exchange.response_json,
        &sent,
    )?;
    let name = ctx.exchange.operation.key.name();
    let oracle = match leak.kind {
        LeakKind::DebugPage => &DEBUG_PAGE_INFO,
        _ => &INFO,
    };
    let mut message = format!("{name} answered {status} with {}", leak.what);
    if !leak.excerpt.is_empty() {
        message.push_str(": ");
        message.push_str(&leak.excerpt);
    }
    Some(per_operation(oracle, &name, leak.kind.detail(), message))
}

/// The kinds of leak, most specific first: a reply is reported by the first it shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LeakKind {
    DebugPage,
    StackTrace,
    SqlError,
    FilePath,
}

impl LeakKind {
    /// The finding's detail: one finding per operation and kind.
    fn detail(self) -> &'static str {
        match self {
            LeakKind::DebugPage => "debug_page",
            LeakKind::StackTrace => "stack_trace",
            LeakKind::SqlError => "sql_error",
            LeakKind::FilePath => "file_path",
        }
    }
}

/// What one reply leaks.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Leak {
    kind: LeakKind,
    /// What it is, for the message: `a Python stack trace`.
    what: &'static str,
    /// A short part of what leaked, on one line.
    excerpt: String,
}

impl Leak {
    fn new(kind: LeakKind, what: &'static str, excerpt: &str) -> Leak {
        Leak {
            kind,
            what,
            excerpt: excerpt_of(excerpt),
        }
    }
}

/// The most specific leak in a reply `body` (answered `status`, of `content_type`, read as
/// JSON already when `parsed`), leaving out what the request `sent`.
fn find(
    body: &[u8],
    status: u16,
    content_type: Option<&str>,
    parsed: Option<&Value>,
    sent: &[&str],
) -> Option<Leak> {
    let head = &body[..body.len().min(READ)];
    // Most replies hold none of the words a leak needs: they cost one scan of their bytes.
    if !PREFILTER.is_match(head) {
        return None;
    }
    find_in(
        head,
        status,
        content_type,
        parsed.filter(|_| body.len() <= READ),
        sent,
    )
}

/// [`find`] in the part of a body read, `head`, without the prefilter.
fn find_in(
    head: &[u8],
    status: u16,
    content_type: Option<&str>,
    parsed: Option<&Value>,
    sent: &[&str],
) -> Option<Leak> {
    let raw = text_of(head)?;
    let json = match parsed {
        Some(v) => Some(Cow::Borrowed(v)),
        None if raw.trim_start().starts_with(['{', '[']) => {
            serde_json::from_str::<Value>(&raw).ok().map(Cow::Owned)
        }
        None => None,
    };
    let html = content_type.is_some_and(|t| t.contains("html"))
        || (json.is_none() && raw.trim_start().starts_with('<'));
    let view: Cow<'_, str> = match &json {
        Some(value) => {
            let mut out = String::new();
            json_strings(value, &mut out);
            Cow::Owned(out)
        }
        None if html => Cow::Owned(html_text(&raw)),
        // JSON cut at the part read: its strings' escapes decoded.
        None if raw.trim_start().starts_with(['{', '[']) => Cow::Owned(unescape_json(&raw)),
        None => Cow::Borrowed(&*raw),
    };
    let echoed = |part: &str| sent.iter().any(|s| s.contains(part));
    debug_page(&raw, &view, json.as_deref(), &echoed)
        .or_else(|| stack_trace(&view, &echoed))
        .or_else(|| sql_error(&view, &echoed))
        .or_else(|| file_path(&view, (200..300).contains(&status), &echoed))
}

/// Whether a part of the reply is an echo of what the request sent.
type Echoed<'a> = dyn Fn(&str) -> bool + 'a;

/// Words one of the detectors needs, as they stand in the body's bytes (a JSON string may
/// write `/` as `\/`). A body with none of them leaks nothing this oracle sees.
static PREFILTER: LazyLock<AhoCorasick> = LazyLock::new(|| {
    AhoCorasick::new([
        // Stack traces.
        "Traceback (most recent call last)",
        ".java:",
        ".kt:",
        ".scala:",
        ".groovy:",
        "Exception in thread",
        ":line ",
        "End of stack trace from previous location",
        ".js:",
        ".mjs:",
        ".cjs:",
        ".jsx:",
        ".ts:",
        ".tsx:",
        "node:",
        ".rb:",
        "Stack trace:",
        "goroutine ",
        // Database errors.
        "SQL syntax",
        "SQLSTATE[",
        "ORA-",
        "PG::",
        "psycopg",
        "sqlite3.",
        "SQLITE_",
        "syntax error",
        "Unclosed quotation mark",
        "org.hibernate.",
        "java.sql.",
        "SqlClient.SqlException",
        "PSQLException",
        "com.mysql.",
        "sqlalchemy.exc.",
        "django.db.utils.",
        "ActiveRecord::StatementInvalid",
        "SequelizeDatabaseError",
        "at or near",
        "[ODBC ",
        "Npgsql.",
        "ER_PARSE_ERROR",
        "ER_NO_SUCH_TABLE",
        "ER_BAD_FIELD_ERROR",
        // File paths.
        "/home/",
        "/var/www/",
        "/usr/lib/python",
        "/usr/local/lib/",
        "/srv/",
        "/opt/",
        "/app/",
        "\\/home\\/",
        "\\/var\\/www\\/",
        "\\/usr\\/lib\\/python",
        "\\/usr\\/local\\/lib\\/",
        "\\/srv\\/",
        "\\/opt\\/",
        "\\/app\\/",
        ":\\",
        // Debug pages.
        "Werkzeug Debugger",
        "__debugger__",
        "DEBUG = True",
        "Whoops",
        "window.ignite(",
        "Action Controller: Exception caught",
        "&nbsp;at ",
        "Server Error in ",
        "Whitelabel Error Page",
        "\"trace\":[{",
        "Application Trace",
    ])
    .expect("literal patterns build")
});

/// A pattern of this file, compiled once.
fn pattern(re: &str) -> Regex {
    Regex::new(re).expect("a valid pattern")
}

/// The first match of `re` in `text` that is not an echo.
fn first<'t>(re: &Regex, text: &'t str, echoed: &Echoed<'_>) -> Option<regex::Match<'t>> {
    re.find_iter(text).find(|m| !echoed(m.as_str()))
}

// ---------------------------------------------------------------------------------------
// Debug pages.

static WERKZEUG: LazyLock<Regex> =
    LazyLock::new(|| pattern(r"Werkzeug Debugger|\?__debugger__=yes"));
/// Django's technical page, as HTML or as the plain text it answers clients that do not
/// take HTML.
static DJANGO: LazyLock<Regex> = LazyLock::new(|| {
    pattern(
        r"seeing this error because you have (?:<code>)?DEBUG = True(?:</code>)? in your Django settings file",
    )
});
static RAILS: LazyLock<Regex> = LazyLock::new(|| pattern(r"Action Controller: Exception caught"));
static IGNITION: LazyLock<Regex> = LazyLock::new(|| pattern(r"window\.ignite\("));
static WHOOPS_PAGE: LazyLock<Regex> =
    LazyLock::new(|| pattern(r"<title>Whoops! There was an error\.</title>"));
/// Laravel's (Symfony's) error page: the same words are its production page, which shows
/// no trace; only with a trace is it the debug page.
static LARAVEL: LazyLock<Regex> =
    LazyLock::new(|| pattern(r"Whoops, looks like something went wrong"));
static PHP_LINE: LazyLock<Regex> = LazyLock::new(|| pattern(r"\.php(?: on)? line \d+|\.php:\d+"));
/// Express's default error handler outside production: the stack, with `<br>` and `&nbsp;`.
static EXPRESS: LazyLock<Regex> =
    LazyLock::new(|| pattern(r"<pre>([^<]*)<br> &nbsp; &nbsp;at "));
/// ASP.NET's yellow page; without details (`customErrors`) it names no exception.
static ASPNET: LazyLock<Regex> =
    LazyLock::new(|| pattern(r"Server Error in '[^'\r\n]*' Application"));
static ASPNET_DETAILS: LazyLock<Regex> =
    LazyLock::new(|| pattern(r"Exception Details:|Stack Trace:|Source Error:"));
static WHITELABEL: LazyLock<Regex> = LazyLock::new(|| pattern(r"Whitelabel Error Page"));

fn debug_page(
    raw: &str,
    view: &str,
    json: Option<&Value>,
    echoed: &Echoed<'_>,
) -> Option<Leak> {
    let page = |what: &'static str, marker: regex::Match<'_>| {
        let title = normalise::raw_error_title_with(raw, json);
        let excerpt = if title.is_empty() {
            marker.as_str()
        } else {
            &title
        };
        Some(Leak::new(LeakKind::DebugPage, what, excerpt))
    };
    if let Some(m) = first(&WERKZEUG, raw, echoed) {
        return page("a Werkzeug debugger page", m);
    }
    if let Some(m) = first(&DJANGO, raw, echoed) {
        return page("a Django debug page", m);
    }
    if let Some(m) = first(&RAILS, raw, echoed) {
        return page("a Rails debug page", m);
    }
    if let Some(m) = first(&IGNITION, raw, echoed) {
        return page("a Laravel Ignition debug page", m);
    }
    if let Some(m) = first(&WHOOPS_PAGE, raw, echoed) {
        return page("a Whoops debug page", m);
    }
    if let Some(m) = first(&LARAVEL, raw, echoed) {
        if stack_trace(view, echoed).is_some() || first(&PHP_LINE, view, echoed).is_some() {
            return page("a Laravel debug page", m);
        }
    }
    if let Some(caps) = EXPRESS
        .captures_iter(raw)
        .find(|c| !echoed(c.get(0).map_or("", |m| m.as_str())))
    {
        let error = html_text(caps.get(1).map_or("", |m| m.as_str()));
        return Some(Leak::new(
            LeakKind::DebugPage,
            "an Express error page with its stack trace",
            &error,
        ));
    }
    if let Some(m) = first(&ASPNET, raw, echoed) {
        if first(&ASPNET_DETAILS, raw, echoed).is_some() {
            return page("an ASP.NET error page with its details", m);
        }
    }
    if first(&WHITELABEL, raw, echoed).is_some() {
        if let Some(frame) = jvm(view, echoed) {
            return Some(Leak::new(
                LeakKind::DebugPage,
                "a Spring Whitelabel page with its stack trace",
                &frame,
            ));
        }
    }
    let Some(Value::Object(map)) = json else {
        return None;
    };
    let text = |key: &str| map.get(key).and_then(Value::as_str);
    // Spring's error reply as JSON, with `server.error.include-stacktrace` on.
    let spring = ["timestamp", "status", "error"]
        .iter()
        .all(|k| map.contains_key(*k));
    if let (true, Some(trace)) = (spring, text("trace")) {
        if let Some(frame) = jvm(trace, echoed) {
            return Some(Leak::new(
                LeakKind::DebugPage,
                "a Spring error with its stack trace",
                &frame,
            ));
        }
    }
    // Laravel's error reply as JSON with `APP_DEBUG` on: the exception, the file and line
    // it was thrown at, and the frames.
    let frames = map
        .get("trace")
        .and_then(Value::as_array)
        .is_some_and(|t| t.iter().any(|f| f.get("file").is_some_and(Value::is_string)));
    if let (Some(_), Some(file), Some(line), true) = (
        text("exception"),
        text("file").filter(|f| !echoed(f)),
        map.get("line").and_then(Value::as_u64),
        frames,
    ) {
        return Some(Leak::new(
            LeakKind::DebugPage,
            "a Laravel debug reply with its stack trace",
            &format!("{file}:{line}"),
        ));
    }
    // Rails' error reply as JSON in development: the exception and its traces.
    let traces = map
        .get("traces")
        .and_then(Value::as_object)
        .is_some_and(|t| t.contains_key("Application Trace"));
    if let (Some(exception), true) = (text("exception").filter(|e| !echoed(e)), traces) {
        return Some(Leak::new(
            LeakKind::DebugPage,
            "a Rails debug reply with its stack trace",
            exception,
        ));
    }
    None
}

// ---------------------------------------------------------------------------------------
// Stack traces.

static PYTHON: LazyLock<Regex> = LazyLock::new(|| {
    pattern(r#"Traceback \(most recent call last\):[ \t]*\r?\n[ \t]*File "[^"\r\n]+", line \d+"#)
});
static PYTHON_FRAME: LazyLock<Regex> =
    LazyLock::new(|| pattern(r#"(?m)^[ \t]*File "[^"\r\n]+", line \d+[^\r\n]*"#));
/// One JVM frame: `at com.x.Y.method(Y.java:12)` (a module or class loader may lead:
/// `java.base/java.lang.Thread.run`).
static JVM_FRAME: LazyLock<Regex> = LazyLock::new(|| {
    pattern(r"(?:^|\s)at (?:[\w$]+[./]+)+[\w$<>]+\([\w$]+\.(?:java|kt|scala|groovy):\d+\)")
});
static JVM_THREAD: LazyLock<Regex> = LazyLock::new(|| {
    pattern(r#"Exception in thread "[^"\r\n]*" [\w$.]+(?:Exception|Error)\b[^\r\n]*"#)
});
/// A .NET frame that names its source: `at A.B.C(Int32 id) in C:\src\B.cs:line 12`.
static DOTNET: LazyLock<Regex> = LazyLock::new(|| {
    pattern(r"(?m)^[ \t]*at [\w.`<>\[\]$|+,]+\([^\r\n)]*\) in [^\r\n]+:line \d+")
});
static DOTNET_RETHROWN: LazyLock<Regex> =
    LazyLock::new(|| pattern(r"--- End of stack trace from previous location"));
static DOTNET_FRAME: LazyLock<Regex> =
    LazyLock::new(|| pattern(r"(?m)^[ \t]*at [\w.`<>\[\]$|+,]+\([^\r\n)]*\)[ \t]*\r?$"));
/// A Node frame: `at fn (/path/file.js:12:34)`, `at /path/file.js:12:34`, `at fn
/// (node:internal/x:1:2)`, alone on its line.
static NODE: LazyLock<Regex> = LazyLock::new(|| {
    let place = r"(?:(?:file://)?(?:/|[A-Za-z]:\\)[^\s()]*\.(?:[cm]?js|jsx|tsx?)|node:[\w/.-]+):\d+:\d+";
    pattern(&format!(
        r"(?m)^[ \t]*at (?:(?:async |new )?[^\s()]+(?: \[as [^\]\r\n]+\])? \({place}\)|{place})[ \t]*\r?$"
    ))
});
/// A Ruby frame: ``app/x.rb:12:in `method'`` (Ruby 3.4 quotes `'Class#method'`).
static RUBY: LazyLock<Regex> =
    LazyLock::new(|| pattern(r"[\w./~-]+\.rb:\d+:in [`'][^'\r\n]+'"));
static PHP: LazyLock<Regex> = LazyLock::new(|| {
    pattern(r"Stack trace:[ \t]*\r?\n[ \t]*(#0 (?:[^\r\n]*\.php\(\d+\)|\{main\})[^\r\n]*)")
});
static GO: LazyLock<Regex> = LazyLock::new(|| pattern(r"goroutine \d+ \[[^\]\r\n]+\]:"));
static GO_FRAME: LazyLock<Regex> =
    LazyLock::new(|| pattern(r"(?m)^[ \t]*\S+\.go:\d+(?: \+0x[0-9a-f]+)?[ \t]*\r?$"));

fn stack_trace(view: &str, echoed: &Echoed<'_>) -> Option<Leak> {
    let trace = |what: &'static str, excerpt: &str| {
        Some(Leak::new(LeakKind::StackTrace, what, excerpt))
    };
    if let Some(m) = first(&PYTHON, view, echoed) {
        // The innermost frame: where it failed.
        let innermost = PYTHON_FRAME
            .find_iter(&view[m.start()..])
            .last()
            .map_or(m.as_str(), |f| f.as_str());
        return trace("a Python stack trace", innermost);
    }
    if let Some(frame) = jvm(view, echoed) {
        return trace("a JVM stack trace", &frame);
    }
    if let Some(m) = first(&JVM_THREAD, view, echoed) {
        return trace("a JVM stack trace", m.as_str());
    }
    if let Some(m) = first(&DOTNET, view, echoed) {
        return trace("a .NET stack trace", m.as_str());
    }
    if first(&DOTNET_RETHROWN, view, echoed).is_some() {
        if let Some(m) = first(&DOTNET_FRAME, view, echoed) {
            return trace("a .NET stack trace", m.as_str());
        }
    }
    if let Some(m) = first(&NODE, view, echoed) {
        return trace("a Node.js stack trace", m.as_str());
    }
    if let Some(m) = first(&RUBY, view, echoed) {
        return trace("a Ruby stack trace", m.as_str());
    }
    if let Some(caps) = PHP
        .captures_iter(view)
        .find(|c| !echoed(c.get(0).map_or("", |m| m.as_str())))
    {
        return trace("a PHP stack trace", caps.get(1).map_or("", |m| m.as_str()));
    }
    if let Some(m) = first(&GO, view, echoed) {
        if let Some(frame) = first(&GO_FRAME, &view[m.end()..], echoed) {
            return trace("a Go stack trace", frame.as_str());
        }
    }
    None
}

/// The first of two or more JVM frames in `text`, when it holds two.
fn jvm(text: &str, echoed: &Echoed<'_>) -> Option<String> {
    let mut frames = JVM_FRAME.find_iter(text).filter(|m| !echoed(m.as_str()));
    let top = frames.next()?;
    frames.next()?;
    Some(top.as_str().to_owned())
}

// ---------------------------------------------------------------------------------------
// Database errors: the phrases drivers and databases write, never the bare word.

static SQL: LazyLock<Regex> = LazyLock::new(|| {
    let phrases = [
        // MySQL, MariaDB.
        r"You have an error in your SQL syntax",
        r"\bcom\.mysql\.(?:cj\.)?jdbc\.(?:[\w$]+\.)*[\w$]*Exception\b",
        r"\bER_(?:PARSE_ERROR|NO_SUCH_TABLE|BAD_FIELD_ERROR)\b",
        // PHP's PDO, any database.
        r"SQLSTATE\[[0-9A-Z]{5}\]",
        // Oracle.
        r"\bORA-\d{5}: ",
        // PostgreSQL and its drivers.
        r"\bPG::[A-Z][A-Za-z]+",
        r"\bpsycopg2?\.(?:errors\.[A-Z]\w+|[A-Z]\w*Error\b)",
        r"\borg\.postgresql\.util\.PSQLException\b",
        r"\bNpgsql\.PostgresException\b",
        r#"(?:syntax error|unterminated quoted string) at or near ""#,
        // SQLite.
        r"\bsqlite3\.[A-Z]\w*Error\b",
        r"\bSQLITE_(?:ERROR|CONSTRAINT|MISMATCH|BUSY|LOCKED|READONLY|CANTOPEN|CORRUPT)\b",
        r#"near "[^"\r\n]{0,100}": syntax error"#,
        // SQL Server.
        r"Unclosed quotation mark after the character string",
        r"\b(?:System|Microsoft)\.Data\.SqlClient\.SqlException\b",
        r"\[Microsoft\]\[ODBC [^\]\r\n]*\]",
        // Drivers and mappers.
        r"\bjava\.sql\.SQL\w*Exception\b",
        r"\borg\.hibernate\.(?:[\w$]+\.)*[\w$]*Exception\b",
        r"\bsqlalchemy\.exc\.[A-Z]\w+",
        r"\bdjango\.db\.utils\.[A-Z]\w*Error\b",
        r"\bActiveRecord::StatementInvalid\b",
        r"\bSequelizeDatabaseError\b",
    ];
    pattern(&phrases.join("|"))
});

fn sql_error(view: &str, echoed: &Echoed<'_>) -> Option<Leak> {
    let m = first(&SQL, view, echoed)?;
    let line = &view[m.start()..];
    let line = &line[..line.find('\n').unwrap_or(line.len())];
    Some(Leak::new(LeakKind::SqlError, "an SQL error", line))
}

// ---------------------------------------------------------------------------------------
// File paths.

/// An absolute path under a directory servers run from, to a source file; not inside a URL
/// (what stands before it is no host: a start, a blank, a quote, a bracket).
static UNIX_PATH: LazyLock<Regex> = LazyLock::new(|| {
    pattern(
        r#"(?:^|[\s"'(\[=,;:<>])((?:/home|/var/www|/usr/lib/python[\d.]*|/usr/local/lib|/srv|/opt|/app)/[^\s"'<>()\[\]{}|*?,;:]*\.(?:py|rb|php|js|ts|java|go|cs|cpp))\b"#,
    )
});
/// `C:\dir\file.cs`: a drive, at least one directory, a source file or an assembly (not
/// an `.exe`: answers about machines name programs).
static WINDOWS_PATH: LazyLock<Regex> = LazyLock::new(|| {
    pattern(
        r#"(?:^|[\s"'(\[=,;<>])([A-Za-z]:\\(?:[^\\/\r\n\t"'<>:|*?]+\\)+[^\\/\s"'<>:|*?]+\.(?:cs|dll|py|rb|php|js|ts|java|go|cpp|vb|aspx))\b"#,
    )
});
/// A line number right after a path: `", line 12`, `:12`, `(12)`, `:line 12`, ` on line 12`.
static LINE_AFTER: LazyLock<Regex> =
    LazyLock::new(|| pattern(r#"^(?:", line \d+|:\d+|\(\d+\)|:line \d+| on line \d+|, line \d+)"#));

/// A server file path; in a 2xx answer (`data`) only one with a line number, since an
/// answer's data may name files (a file store, a build's report). Not one inside an HTML
/// tag: an attribute's value is a URL (`<script src="/app/main.js">` on a 404 page).
fn file_path(view: &str, data: bool, echoed: &Echoed<'_>) -> Option<Leak> {
    for re in [&*UNIX_PATH, &*WINDOWS_PATH] {
        let found = re.captures_iter(view).filter_map(|c| c.get(1)).find(|m| {
            !echoed(m.as_str())
                && !in_tag(&view[..m.start()])
                && (!data || LINE_AFTER.is_match(&view[m.end()..]))
        });
        if let Some(m) = found {
            return Some(Leak::new(
                LeakKind::FilePath,
                "a server file path",
                m.as_str(),
            ));
        }
    }
    None
}

/// Whether the text `before` a place ends inside an HTML tag (`<script src="`): a `<`
/// followed by a letter, with no `>` after it.
fn in_tag(before: &str) -> bool {
    let Some(open) = before.rfind('<') else {
        return false;
    };
    let after = &before[open + 1..];
    after.starts_with(|c: char| c.is_ascii_alphabetic()) && !after.contains('>')
}

// ---------------------------------------------------------------------------------------
// Reading a body.

/// The text of `bytes`, unless they are binary: a NUL byte, or more than one byte in 16
/// that is not UTF-8 (a character cut at the end of the part read is dropped).
fn text_of(bytes: &[u8]) -> Option<Cow<'_, str>> {
    if memchr::memchr(0, bytes).is_some() {
        return None;
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => Some(Cow::Borrowed(text)),
        Err(e) if e.error_len().is_none() => {
            std::str::from_utf8(&bytes[..e.valid_up_to()]).ok().map(Cow::Borrowed)
        }
        Err(_) => {
            let invalid: usize = bytes.utf8_chunks().map(|c| c.invalid().len()).sum();
            (invalid * 16 <= bytes.len()).then(|| String::from_utf8_lossy(bytes))
        }
    }
}

/// The strings of a JSON value, one a line, in document order, up to [`READ`] bytes.
fn json_strings(value: &Value, out: &mut String) {
    if out.len() >= READ {
        return;
    }
    match value {
        Value::String(s) => {
            out.push_str(s);
            out.push('\n');
        }
        Value::Array(items) => items.iter().for_each(|v| json_strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| json_strings(v, out)),
        _ => {}
    }
}

/// An HTML page as the text a trace in it reads as: `<br>` a line break, the common
/// entities decoded; other tags are kept (the debug page markers are read in them).
fn html_text(html: &str) -> String {
    static BREAK: LazyLock<Regex> = LazyLock::new(|| pattern(r"(?i)<br\s*/?>"));
    BREAK
        .replace_all(html, "\n")
        .replace("&nbsp;", " ")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#34;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'")
        .replace("&amp;", "&")
}

/// JSON text that does not parse (cut at the part read), its string escapes decoded.
fn unescape_json(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('t') => out.push('\t'),
            Some(other @ ('"' | '\\' | '/')) => out.push(other),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// What leaked, for a message: on one line, blanks collapsed, at most 80 characters.
fn excerpt_of(text: &str) -> String {
    let line = text
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    if line.chars().count() <= 80 {
        line
    } else {
        let mut cut: String = line.chars().take(79).collect();
        cut.push('…');
        cut
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `body` leaks when answered `status` as `content_type` to a request that sent
    /// nothing: (detail, message part).
    fn leak(status: u16, content_type: &str, body: &str) -> Option<(&'static str, String)> {
        leak_sent(status, content_type, body, &[])
    }

    fn leak_sent(
        status: u16,
        content_type: &str,
        body: &str,
        sent: &[&str],
    ) -> Option<(&'static str, String)> {
        let parsed: Option<Value> = serde_json::from_str(body).ok();
        find(
            body.as_bytes(),
            status,
            Some(content_type),
            parsed.as_ref(),
            sent,
        )
        .map(|l| (l.kind.detail(), format!("{}: {}", l.what, l.excerpt)))
    }

    fn kind(status: u16, content_type: &str, body: &str) -> Option<&'static str> {
        leak(status, content_type, body).map(|(k, _)| k)
    }

    const PYTHON_TRACE: &str = "Traceback (most recent call last):\n  File \"/app/notes/views.py\", line 41, in create\n    store.save(title)\n  File \"/app/notes/store.py\", line 12, in save\n    raise ValueError(title)\nValueError: too long\n";

    #[test]
    fn python_traceback_is_one_stack_trace_naming_its_innermost_frame() {
        assert_eq!(
            leak(500, "text/plain", PYTHON_TRACE),
            Some((
                "stack_trace",
                "a Python stack trace: File \"/app/notes/store.py\", line 12, in save".into()
            ))
        );
        // In a JSON field, and in an HTML page with its quotes as entities.
        let json = serde_json::json!({"detail": "boom", "traceback": PYTHON_TRACE}).to_string();
        assert_eq!(kind(500, "application/json", &json), Some("stack_trace"));
        let page = format!(
            "<html><body><pre>{}</pre></body></html>",
            PYTHON_TRACE.replace('"', "&quot;")
        );
        assert_eq!(kind(500, "text/html", &page), Some("stack_trace"));
    }

    #[test]
    fn each_runtime_s_stack_trace() {
        let cases = [
            (
                "java.lang.NullPointerException: id\n\tat com.shop.api.Orders.get(Orders.java:42)\n\tat java.base/java.lang.Thread.run(Thread.java:829)\n",
                "a JVM stack trace: at com.shop.api.Orders.get(Orders.java:42)",
            ),
            (
                "Exception in thread \"main\" java.lang.IllegalStateException: closed\n",
                "a JVM stack trace: Exception in thread \"main\" java.lang.IllegalStateException: closed",
            ),
            (
                "System.NullReferenceException: Object reference not set to an instance of an object.\n   at Shop.Orders.Get(Int32 id) in C:\\src\\Shop\\Orders.cs:line 42\n",
                "a .NET stack trace: at Shop.Orders.Get(Int32 id) in C:\\src\\Shop\\Orders.cs:line 42",
            ),
            (
                "TypeError: Cannot read properties of undefined (reading 'id')\n    at createNote (/app/src/notes.js:12:34)\n    at Layer.handle [as handle_request] (/app/node_modules/express/lib/router/layer.js:95:5)\n",
                "a Node.js stack trace: at createNote (/app/src/notes.js:12:34)",
            ),
            (
                "NoMethodError (undefined method `title' for nil):\napp/controllers/notes_controller.rb:12:in `create'\n",
                "a Ruby stack trace: app/controllers/notes_controller.rb:12:in `create'",
            ),
            (
                "PHP Fatal error:  Uncaught Exception: boom in /var/www/html/notes.php:3\nStack trace:\n#0 /var/www/html/index.php(7): create()\n#1 {main}\n",
                "a PHP stack trace: #0 /var/www/html/index.php(7): create()",
            ),
            (
                "panic: runtime error: index out of range [5] with length 3\n\ngoroutine 1 [running]:\nmain.handler(...)\n\t/app/main.go:12 +0x1d\n",
                "a Go stack trace: /app/main.go:12 +0x1d",
            ),
        ];
        for (body, expected) in cases {
            assert_eq!(
                leak(500, "text/plain", body),
                Some(("stack_trace", expected.to_owned())),
                "{body}"
            );
        }
        // JVM frames as an array of strings, in a 200.
        let frames = r#"{"ok": false, "stackTrace": ["at com.x.A.b(A.java:1)", "at com.x.C.d(C.java:2)"]}"#;
        assert_eq!(kind(200, "application/json", frames), Some("stack_trace"));
    }

    #[test]
    fn each_driver_s_sql_error() {
        for body in [
            "You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version",
            r#"{"error": "SQLSTATE[42000]: Syntax error or access violation: 1064"}"#,
            "ORA-00933: SQL command not properly ended",
            "PG::UndefinedTable: ERROR:  relation \"notes\" does not exist",
            "psycopg2.errors.UndefinedTable: relation \"notes\" does not exist",
            "sqlite3.OperationalError: no such table: notes",
            "SQLITE_ERROR: no such column: titel",
            "near \"FROM\": syntax error",
            "ERROR: syntax error at or near \"'\"",
            "Unclosed quotation mark after the character string 'abc'.",
            "org.hibernate.exception.SQLGrammarException: could not extract ResultSet",
            "java.sql.SQLException: Column 'title' cannot be null",
            "System.Data.SqlClient.SqlException (0x80131904): Invalid object name 'Notes'.",
            "sqlalchemy.exc.IntegrityError: (sqlite3.IntegrityError) UNIQUE constraint failed",
            "ActiveRecord::StatementInvalid: Mysql2::Error",
        ] {
            assert_eq!(kind(400, "text/plain", body), Some("sql_error"), "{body}");
        }
        assert_eq!(
            leak(
                400,
                "application/json",
                r#"{"error": "SQLSTATE[42000]: Syntax error or access violation: 1064 You have an error in your SQL syntax near ''' at line 1"}"#
            ),
            Some((
                "sql_error",
                "an SQL error: SQLSTATE[42000]: Syntax error or access violation: 1064 You have an error in yo…".into()
            ))
        );
    }

    #[test]
    fn server_file_paths() {
        assert_eq!(
            leak(
                500,
                "application/json",
                r#"{"detail": "cannot read /app/config/settings.py"}"#
            ),
            Some((
                "file_path",
                "a server file path: /app/config/settings.py".into()
            ))
        );
        for body in [
            "No such file: /home/deploy/shop/orders.rb",
            "include(/usr/local/lib/node_modules/x/index.js) failed",
            "open /srv/api/handlers/notes.go: permission denied",
            "<html><body><p>assert n < 3 failed in /app/checks.py</p></body></html>",
            "failed in /usr/lib/python3.11/json/decoder.py",
            "Could not load C:\\inetpub\\wwwroot\\Shop\\bin\\Shop.Api.dll",
            // PHP's JSON writes `/` as `\/`.
            r#"{"error": "failed to open \/var\/www\/html\/db.php"}"#,
        ] {
            assert_eq!(kind(500, "text/plain", body), Some("file_path"), "{body}");
        }
        // In a 2xx, a path counts with a line number beside it.
        assert_eq!(
            kind(200, "application/json", r#"{"warning": "/opt/svc/app.py:12 deprecated"}"#),
            Some("file_path")
        );
    }

    #[test]
    fn each_framework_s_debug_page() {
        let pages = [
            (
                "<!doctype html><html><head><title>ZeroDivisionError: division by zero // Werkzeug Debugger</title></head><body><a href=\"?__debugger__=yes&cmd=resource&f=style.css\"></a></body></html>",
                "a Werkzeug debugger page: ZeroDivisionError: division by zero // Werkzeug Debugger",
            ),
            (
                "<!DOCTYPE html><html><head><title>ValueError at /notes/</title></head><body><p>You&#x27;re seeing this error because you have <code>DEBUG = True</code> in your Django settings file.</p><textarea>Traceback (most recent call last):\n  File \"/app/notes/views.py\", line 4, in create\n</textarea></body></html>",
                "a Django debug page: ValueError at /notes/",
            ),
            (
                "<!DOCTYPE html><html><head><title>Whoops! There was an error.</title></head><body>...</body></html>",
                "a Whoops debug page: Whoops! There was an error.",
            ),
            (
                "<!doctype html><html><head><title>Undefined variable $note</title></head><body><script>window.ignite(window.data);</script></body></html>",
                "a Laravel Ignition debug page: Undefined variable $note",
            ),
            (
                "<html><head><title>Error</title></head><body><h1>Whoops, looks like something went wrong.</h1><p>in Connection.php line 647</p></body></html>",
                "a Laravel debug page: Error",
            ),
            (
                "<!DOCTYPE html><html><head><title>Action Controller: Exception caught</title></head><body>...</body></html>",
                "a Rails debug page: Action Controller: Exception caught",
            ),
            (
                "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Error</title>\n</head>\n<body>\n<pre>TypeError: Cannot read properties of undefined<br> &nbsp; &nbsp;at /app/index.js:5:9<br> &nbsp; &nbsp;at Layer.handle (/app/node_modules/express/lib/router/layer.js:95:5)</pre>\n</body>\n</html>\n",
                "an Express error page with its stack trace: TypeError: Cannot read properties of undefined",
            ),
            (
                "<html><head><title>Object reference not set to an instance of an object.</title></head><body><h1>Server Error in '/' Application.</h1><b> Exception Details: </b>System.NullReferenceException</body></html>",
                "an ASP.NET error page with its details: Object reference not set to an instance of an object.",
            ),
            (
                "<html><body><h1>Whitelabel Error Page</h1><div>There was an unexpected error (type=Internal Server Error, status=500).</div><div style='white-space:pre-wrap;'>java.lang.IllegalStateException\n\tat com.x.Notes.create(Notes.java:12)\n\tat com.x.Notes$$Proxy.create(Notes.java:1)\n</div></body></html>",
                "a Spring Whitelabel page with its stack trace: at com.x.Notes.create(Notes.java:12)",
            ),
            (
                r#"{"timestamp":"2026-01-01T00:00:00.000+00:00","status":500,"error":"Internal Server Error","trace":"java.lang.IllegalStateException\n\tat com.x.Notes.create(Notes.java:12)\n\tat com.x.Api.post(Api.java:30)\n","path":"/notes"}"#,
                "a Spring error with its stack trace: at com.x.Notes.create(Notes.java:12)",
            ),
        ];
        for (body, expected) in pages {
            let content_type = if body.starts_with('{') {
                "application/json"
            } else {
                "text/html"
            };
            assert_eq!(
                leak(500, content_type, body),
                Some(("debug_page", expected.to_owned())),
                "{body}"
            );
        }
        // Laravel and Rails answer API clients in JSON.
        let laravel = r#"{"message":"Undefined variable $note","exception":"ErrorException","file":"\/var\/www\/html\/app\/Http\/Controllers\/NoteController.php","line":12,"trace":[{"file":"\/var\/www\/html\/vendor\/laravel\/framework\/src\/Illuminate\/Routing\/Controller.php","line":54,"function":"store","class":"App\\Http\\Controllers\\NoteController","type":"->"}]}"#;
        assert_eq!(
            leak(500, "application/json", laravel),
            Some((
                "debug_page",
                "a Laravel debug reply with its stack trace: /var/www/html/app/Http/Controllers/NoteController.php:12".into()
            ))
        );
        let rails = r##"{"status":500,"error":"Internal Server Error","exception":"#<NoMethodError: undefined method `title' for nil>","traces":{"Application Trace":[{"exception_object_id":8,"id":0,"trace":"app/controllers/notes_controller.rb:12:in `create'"}],"Framework Trace":[]}}"##;
        assert_eq!(
            leak(500, "application/json", rails),
            Some((
                "debug_page",
                "a Rails debug reply with its stack trace: #<NoMethodError: undefined method `title' for nil>".into()
            ))
        );
        // Django answers a client that does not take HTML in plain text.
        let text = "ValueError at /notes/\ntoo long\n\nYou're seeing this error because you have DEBUG = True in your Django settings file. Change that to False, and Django will display a standard page generated by the handler for this status code.\n";
        assert_eq!(kind(500, "text/plain", text), Some("debug_page"));
    }

    #[test]
    fn a_reply_is_reported_by_its_most_specific_kind() {
        // A trace that names files is a stack trace, not also a path.
        assert_eq!(kind(500, "text/plain", PYTHON_TRACE), Some("stack_trace"));
        // An SQL error in a trace is the trace.
        let trace = "java.sql.SQLException: syntax\n\tat com.x.Dao.find(Dao.java:3)\n\tat com.x.Api.get(Api.java:9)\n";
        assert_eq!(kind(500, "text/plain", trace), Some("stack_trace"));
        // An SQL error that names a file is the SQL error.
        assert_eq!(
            kind(
                500,
                "text/plain",
                "SQLSTATE[HY000]: General error in /var/www/html/db.php on line 12"
            ),
            Some("sql_error")
        );
    }

    /// Replies that must never fire.
    #[test]
    fn negatives() {
        let quiet: &[(u16, &str, &str)] = &[
            // Ordinary JSON errors.
            (404, "application/json", r#"{"message":"not found"}"#),
            (400, "application/json", r#"{"detail":"title: ensure this value has at most 8 characters"}"#),
            (422, "application/problem+json", r#"{"type":"about:blank","title":"Unprocessable Entity","status":422,"detail":"priority must be >= 0"}"#),
            (500, "application/json", r#"{"error":"Boom at 2026-01-01 id 42"}"#),
            (500, "text/plain", "Internal error 1234\nat line 9"),
            // An HTML 404 page.
            (404, "text/html", "<html>\r\n<head><title>404 Not Found</title></head>\r\n<body>\r\n<center><h1>404 Not Found</h1></center>\r\n<hr><center>nginx/1.25.3</center>\r\n</body>\r\n</html>\r\n"),
            // URLs are no paths.
            (200, "application/json", r#"{"script": "https://cdn.example.com/app/main.js"}"#),
            (500, "application/json", r#"{"detail": "could not fetch https://example.com/app/x.js"}"#),
            (500, "text/html", r#"<html><head><script src="http://example.com:8080/opt/lib.js"></script></head></html>"#),
            // An HTML page's links are URLs, whatever the status.
            (404, "text/html", "<!doctype html><html><head><title>Not Found</title><script src=\"/app/main.js\"></script><link rel=stylesheet href='/opt/theme.js'></head><body><a href=/srv/docs/index.php>docs</a></body></html>"),
            // A path in an answer's data, without a line number; relative paths.
            (200, "application/json", r#"{"files": ["/home/alice/project/main.py", "/srv/repo/app.go"]}"#),
            (500, "application/json", r#"{"detail": "src/app/main.py is missing"}"#),
            // A path with no source extension; a program a machine runs.
            (500, "text/plain", "cannot write /var/www/uploads/photo.jpg"),
            (500, "application/json", r#"{"path": "C:\\Windows\\System32\\calc.exe"}"#),
            // Sentences with "at" and parentheses.
            (200, "application/json", r#"{"note": "Meet at Noon.Cafe (Main St. 12)", "where": "at home (probably)"}"#),
            (400, "text/plain", "Error at line 3 (column 7): unexpected token"),
            (200, "text/plain", "Launch at T-minus 10 (see schedule.pdf)"),
            // The word SQL, and parsers' syntax errors, in prose.
            (200, "application/json", r#"{"description": "Our SQL database stores notes; SQL syntax is explained in the docs."}"#),
            (400, "application/json", r#"{"detail": "Invalid JSON: syntax error at position 12"}"#),
            (400, "text/plain", "SQL injection attempt blocked"),
            // Look-alikes of driver names in data.
            (200, "application/json", r#"{"order": "ORA-12345", "rating": "PG-13", "groupId": "org.hibernate", "artifactId": "hibernate-core"}"#),
            // One JVM frame is not a trace; a Laravel or ASP.NET production page shows none.
            (500, "application/json", r#"{"error": "internal", "trace": "java.lang.NullPointerException at Shop.handle(Shop.java:42)"}"#),
            (500, "text/html", "<html><head><title>Error</title></head><body><h1>Whoops, looks like something went wrong.</h1></body></html>"),
            (500, "text/html", "<html><body><h1>Server Error in '/' Application.</h1><h2>Runtime Error</h2><p>An application error occurred on the server.</p></body></html>"),
            (500, "application/json", r#"{"timestamp":"2026-01-01T00:00:00.000+00:00","status":500,"error":"Internal Server Error","path":"/notes"}"#),
            (500, "application/json", r#"{"message":"Server Error"}"#),
            (200, "application/json", r#"{"exception":"none","traces":{"count":3}}"#),
            (500, "text/html", "<!DOCTYPE html><html><head><title>Error</title></head><body><pre>Internal Server Error</pre></body></html>"),
            (500, "text/html", "<!DOCTYPE html>\n<html><body><h1>Cannot index tag &quot;x1&quot;</h1><pre>at notes.index(tags.js:9)</pre></body></html>"),
            // "Traceback" without a frame.
            (500, "text/plain", "Traceback (most recent call last): see the logs"),
        ];
        for (status, content_type, body) in quiet {
            assert_eq!(
                leak(*status, content_type, body),
                None,
                "{status} {content_type} {body}"
            );
            // The detectors themselves, past the prefilter.
            let parsed: Option<Value> = serde_json::from_str(body).ok();
            assert_eq!(
                find_in(
                    body.as_bytes(),
                    *status,
                    Some(content_type),
                    parsed.as_ref(),
                    &[]
                ),
                None,
                "{status} {content_type} {body}"
            );
        }
    }

    #[test]
    fn what_the_request_sent_is_no_leak() {
        // A path the request sent, echoed.
        assert_eq!(
            leak_sent(
                400,
                "application/json",
                r#"{"detail": "path /app/secrets.py is not allowed"}"#,
                &["/app/secrets.py"],
            ),
            None
        );
        // The request's URL, echoed by a 404.
        assert_eq!(
            leak_sent(
                404,
                "text/plain",
                "Cannot GET /app/static/main.js",
                &["http://127.0.0.1:8080/app/static/main.js"],
            ),
            None
        );
        // A traceback or an SQL error the request sent as a value.
        assert_eq!(
            leak_sent(400, "text/plain", PYTHON_TRACE, &[PYTHON_TRACE]),
            None
        );
        assert_eq!(
            leak_sent(
                422,
                "application/json",
                r#"{"detail": "title 'You have an error in your SQL syntax' is taken"}"#,
                &["You have an error in your SQL syntax"],
            ),
            None
        );
        // But what the server adds beside an echo is judged.
        assert_eq!(
            leak_sent(
                500,
                "text/plain",
                "cannot open /app/secrets.py for /app/notes/store.py",
                &["/app/secrets.py"],
            ),
            Some(("file_path", "a server file path: /app/notes/store.py".into()))
        );
    }

    #[test]
    fn binary_bodies_are_not_read_and_a_long_body_is_read_in_part() {
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        png.extend_from_slice(PYTHON_TRACE.as_bytes());
        assert_eq!(find(&png, 200, Some("image/png"), None, &[]), None);
        let mut noise: Vec<u8> = (0..200u8).map(|i| 0x80 | i).collect();
        noise.extend_from_slice(PYTHON_TRACE.as_bytes());
        assert_eq!(find(&noise, 200, None, None, &[]), None);
        // A few bytes of Latin-1 do not make a page binary.
        let latin1 = [b"Fehler f\xfcr Notiz\n".as_slice(), PYTHON_TRACE.as_bytes()].concat();
        assert_eq!(
            find(&latin1, 500, Some("text/plain"), None, &[]).map(|l| l.kind),
            Some(LeakKind::StackTrace)
        );
        // Past the part read, nothing is seen.
        let late = format!("{}{PYTHON_TRACE}", "x".repeat(READ));
        assert_eq!(find(late.as_bytes(), 500, Some("text/plain"), None, &[]), None);
        // JSON cut at the part read is read with its escapes decoded.
        let cut = format!(
            "{{\"trace\": {}, \"data\": \"{}\"}}",
            serde_json::to_string(PYTHON_TRACE).unwrap(),
            "y".repeat(READ)
        );
        assert_eq!(
            find(cut.as_bytes(), 500, Some("application/json"), None, &[]).map(|l| l.kind),
            Some(LeakKind::StackTrace)
        );
    }

    #[test]
    fn excerpts_are_one_short_line() {
        assert_eq!(excerpt_of("  a\n\tb  c "), "a b c");
        let long = excerpt_of(&"é".repeat(200));
        assert_eq!(long.chars().count(), 80);
        assert!(long.ends_with('…'));
    }
}
