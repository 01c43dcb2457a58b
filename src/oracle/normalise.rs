//! Normalisation of reply text for distinct keys: volatile parts (digit runs, ids,
//! timestamps, UUIDs) are replaced so that one bug seen with 1,000 different ids is one
//! finding.
//!
//! Depends on `schema::keyword` only.

use crate::schema::keyword::Keywords;
use serde_json::Value;

/// Replaces digit runs and long hex/alphanumeric tokens containing digits with `#`, and
/// collapses whitespace, so `user 4711 not found at 2026-01-01T10:00:00Z` and
/// `user 12 not found at 2025-12-31T09:59:59Z` give the same text.
pub fn volatile(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(1024));
    let mut token = String::new();
    let flush = |token: &mut String, out: &mut String| {
        if token.is_empty() {
            return;
        }
        let has_digit = token.chars().any(|c| c.is_ascii_digit());
        let hexish = token.len() >= 8 && token.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
        if has_digit || hexish {
            out.push('#');
        } else {
            out.push_str(token);
        }
        token.clear();
    };
    let mut last_space = false;
    for c in text.chars().take(4096) {
        if c.is_alphanumeric() || c == '_' || c == '-' {
            token.push(c);
            last_space = false;
        } else {
            flush(&mut token, &mut out);
            if c.is_whitespace() {
                if !last_space {
                    out.push(' ');
                }
                last_space = true;
            } else {
                out.push(c);
                last_space = false;
            }
        }
    }
    flush(&mut token, &mut out);
    out.trim().to_owned()
}

/// The error's title only: a JSON body's `exception`/`error`/`title`/`type`/`code`/
/// `message`/`detail` field (first found), an HTML page's `<title>`, else the first line of
/// the text; normalised by [`volatile`], for distinct keys.
pub fn error_title(text: &str) -> String {
    error_title_with(text, None)
}

/// [`error_title`] of `text`, whose JSON the caller may have parsed already (`parsed`
/// must then be `text` read as JSON): a finding's title then costs no second parse.
pub fn error_title_with(text: &str, parsed: Option<&Value>) -> String {
    tidy(&raw_error_title_with(text, parsed))
        .chars()
        .take(120)
        .collect()
}

/// The same title as the reply wrote it, for messages a person reads.
pub fn raw_error_title(text: &str) -> String {
    raw_error_title_with(text, None)
}

/// The JSON fields that name an error, in the order a title is taken from them.
const ERROR_FIELDS: [&str; 7] = [
    "exception",
    "error",
    "title",
    "type",
    "code",
    "message",
    "detail",
];

/// The fields of a nested error object (`{"error": {"code": .., "message": ..}}`).
const NESTED_ERROR_FIELDS: [&str; 5] = ["type", "code", "message", "title", "detail"];

/// [`raw_error_title`] of `text`, whose JSON the caller may have parsed already.
pub fn raw_error_title_with(text: &str, parsed: Option<&Value>) -> String {
    let cut = |s: &str| -> String { s.trim().chars().take(160).collect() };
    let read;
    let json = match parsed {
        Some(v) => Some(v),
        None => {
            read = serde_json::from_str::<Value>(text).ok();
            read.as_ref()
        }
    };
    if let Some(Value::Object(map)) = json {
        for key in ERROR_FIELDS {
            match map.keyword(key) {
                Some(Value::String(s)) => return cut(s),
                Some(Value::Object(inner)) => {
                    for k in ["type", "code", "message", "title"] {
                        if let Some(Value::String(s)) = inner.keyword(k) {
                            return cut(s);
                        }
                    }
                }
                _ => {}
            }
        }
        return String::new();
    }
    if let Some(page) = html_heading(text) {
        return cut(&page);
    }
    if let Some(raised) = python_exception(text) {
        return cut(raised);
    }
    cut(text.lines().find(|l| !l.trim().is_empty()).unwrap_or(""))
}

/// What an HTML error page says happened: its `<title>`, else its first `<h1>`/`<h2>`, as
/// text (tags and entities of the common kinds removed). `None` when `text` is no HTML page.
fn html_heading(text: &str) -> Option<String> {
    let head = &text[..floor_boundary(text, 512)];
    let lower_head = head.trim_start().to_ascii_lowercase();
    if !(lower_head.starts_with("<!doctype html")
        || lower_head.starts_with("<html")
        || lower_head.starts_with("<head")
        || lower_head.starts_with("<title")
        || lower_head.starts_with("<h1"))
    {
        return None;
    }
    let scan = &text[..floor_boundary(text, 64 * 1024)];
    let lower = scan.to_ascii_lowercase();
    for tag in ["title", "h1", "h2"] {
        let open = format!("<{tag}");
        let close = format!("</{tag}>");
        let Some(at) = lower.find(&open) else {
            continue;
        };
        let Some(gt) = lower[at..].find('>').map(|i| at + i + 1) else {
            continue;
        };
        let Some(end) = lower[gt..].find(&close).map(|i| gt + i) else {
            continue;
        };
        let inner = strip_tags(&scan[gt..end]);
        if !inner.trim().is_empty() {
            return Some(inner);
        }
    }
    // A page with no heading: its first line of text.
    let body = strip_tags(scan);
    Some(
        body.lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("")
            .to_owned(),
    )
}

/// The largest char boundary of `text` at or below `at`.
fn floor_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// `html` as text: tags removed, the common entities decoded, runs of blanks collapsed
/// (line breaks kept).
fn strip_tags(html: &str) -> String {
    let mut out = String::with_capacity(html.len().min(4096));
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                out.push(' ');
            }
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    let decoded = out
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'")
        .replace("&nbsp;", " ")
        .replace("&amp;", "&");
    decoded
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The exception line of a Python traceback (`ValueError: ...`, the last line that is not
/// a frame), when `text` is one.
fn python_exception(text: &str) -> Option<&str> {
    let first = text.lines().find(|l| !l.trim().is_empty())?;
    if !first
        .trim_start()
        .starts_with("Traceback (most recent call last)")
    {
        return None;
    }
    text.lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("File ") && !l.starts_with('^'))
}

/// The frame a stack trace in `text` points at, for telling apart causes whose messages
/// read alike: a Python traceback's innermost `File "...", line N, in f`, a JVM or .NET
/// trace's first `at ...(` frame, a Node trace's first `at ... (` frame. `None` when the
/// text holds no trace.
fn top_frame(text: &str) -> Option<String> {
    let lines = || text.lines().take(400).map(str::trim);
    if let Some(frame) = lines().filter(|l| l.starts_with("File \"")).last() {
        return Some(frame.to_owned());
    }
    lines()
        .find(|l| l.starts_with("at ") && l.contains('('))
        .map(str::to_owned)
}

/// What marks the part of a [`cause`] that is a stack frame: a reply that names its frame
/// names where in the code it failed, which tells one cause from another across
/// operations (`report::causes`).
pub const FRAME: &str = "frame: ";

/// The cause a server's error reply names, for a distinct key: the error's fields (a JSON
/// body's `exception`, `error`, `title`, `type`, `code`, `message`, `detail`, nested ones
/// too), an HTML page's title and first heading, a traceback's exception line, else the
/// first line of text; and the frame a stack trace points at. What servers echo of a
/// request is taken out: `echoes` (the values the request sent) wherever they appear, then
/// quoted text, long tokens and everything [`volatile`] replaces. So one fault reached
/// with 100 different inputs has one key, and two faults with one generic title but two
/// stack traces have two.
pub fn cause(text: &str, parsed: Option<&Value>, echoes: &[&str]) -> String {
    let read;
    let json = match parsed {
        Some(v) => Some(v),
        None => {
            read = serde_json::from_str::<Value>(text).ok();
            read.as_ref()
        }
    };
    let mut parts: Vec<String> = Vec::new();
    match json {
        Some(Value::Object(map)) => {
            for key in ERROR_FIELDS {
                match map.keyword(key) {
                    Some(Value::String(s)) => parts.push(s.clone()),
                    Some(v @ (Value::Number(_) | Value::Bool(_))) => parts.push(v.to_string()),
                    Some(Value::Object(inner)) => {
                        for k in NESTED_ERROR_FIELDS {
                            if let Some(Value::String(s)) = inner.keyword(k) {
                                parts.push(s.clone());
                            }
                        }
                    }
                    _ => {}
                }
            }
            // A trace in a JSON field (`trace`, `stack`, `stackTrace`) points at the frame.
            for key in ["trace", "stack", "stackTrace", "stacktrace", "traceback"] {
                if let Some(Value::String(s)) = map.keyword(key) {
                    if let Some(frame) = top_frame(s) {
                        parts.push(format!("{FRAME}{frame}"));
                        break;
                    }
                }
            }
        }
        Some(other) => parts.push(other.to_string()),
        None => {
            if let Some(page) = html_heading(text) {
                parts.push(page);
            } else if let Some(raised) = python_exception(text) {
                parts.push(raised.to_owned());
            } else {
                let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
                parts.push(first.to_owned());
            }
            if let Some(frame) = top_frame(text) {
                parts.push(format!("{FRAME}{frame}"));
            }
        }
    }
    // Echoes are taken out before a part is cut: a long value cut in the middle would leave
    // its opening quote without the closing one.
    let joined = parts
        .iter()
        .map(|p| {
            without_echoes(p, echoes)
                .chars()
                .take(400)
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join(" | ");
    // A number standing alone is left out altogether: whether a value was echoed (taken
    // out) or is a number (`#`), or was empty, the key reads the same. So is quoted text:
    // one server quotes what it echoes `"…"`, another `'…'`, a third not at all (taken
    // out as an echo), and all three are one cause.
    without_quote_marks(&tidy(&joined))
        .split(' ')
        .filter(|t| !t.is_empty() && *t != "#")
        .collect::<Vec<_>>()
        .join(" ")
}

/// The strings a request sent (parameter values, the body's string leaves and its text as
/// sent), the echoes [`cause`] takes out of a reply. At most 64, each as written.
pub fn sent_strings(case: &crate::model::TestCase) -> Vec<&str> {
    sent_strings_up_to(case, 64)
}

/// The first `limit` strings a request sent, in the order of [`sent_strings`].
pub fn sent_strings_up_to(case: &crate::model::TestCase, limit: usize) -> Vec<&str> {
    fn leaves<'v>(value: &'v Value, limit: usize, out: &mut Vec<&'v str>) {
        if out.len() >= limit {
            return;
        }
        match value {
            Value::String(s) => out.push(s),
            Value::Array(items) => items.iter().for_each(|v| leaves(v, limit, out)),
            Value::Object(map) => map.values().for_each(|v| leaves(v, limit, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for p in &case.parameters {
        leaves(&p.value, limit, &mut out);
    }
    if let Some(body) = &case.body {
        leaves(&body.value, limit, &mut out);
        if let Some(sent) = &body.sent_as {
            out.push(sent);
        }
    }
    out.truncate(limit);
    out
}

/// `text` with every echo (a value the request sent) taken out, longest first so a value
/// that contains another goes whole. Taken out, not marked: an empty value echoed
/// (`for note `) then reads like any other (`for note abc`). An echo shorter than 3
/// characters, or with no letter, is taken out only where it stands as a whole word, so `ab`
/// does not eat the middle of `table`; a number (`62`) is left to [`volatile`].
fn without_echoes(text: &str, echoes: &[&str]) -> String {
    // A number is left to `volatile` (which makes every digit run `#`): taking out `62`
    // where a request happened to send it, and leaving `-92` to read `#` where none did,
    // split one cause in two. Blank text is nothing to take out.
    // A run of digits longer than any number is a generated value like any other.
    let number_like =
        |e: &str| e.len() <= 32 && e.chars().all(|c| c.is_ascii_digit() || "+-.eE".contains(c));
    let mut echoes: Vec<&str> = echoes
        .iter()
        .copied()
        .filter(|e| !e.trim().is_empty() && !number_like(e))
        .collect();
    echoes.sort_by_key(|e| std::cmp::Reverse(e.len()));
    echoes.dedup();
    let mut out = text.to_owned();
    for echo in echoes.into_iter().take(64) {
        if !out.contains(echo) {
            continue;
        }
        // Text without a letter (`�`, `<>&`, an emoji) only where it stands alone: `'`
        // must not take the quotes out of every message that echoed it.
        let letters = echo.chars().any(char::is_alphabetic);
        out = if letters && echo.chars().count() >= 3 {
            out.replace(echo, "")
        } else {
            replace_word(&out, echo)
        };
    }
    out
}

/// `text` without what [`without_quoted`] left of quoted text (`'…'`, `"…"`, `` `…` ``)
/// and without empty quotes where they stand alone (an echo taken out from between them).
fn without_quote_marks(text: &str) -> String {
    let mut out = text.to_owned();
    for placeholder in ["'…'", "\"…\"", "`…`"] {
        out = out.replace(placeholder, "");
    }
    for empty in ["''", "\"\"", "``"] {
        out = replace_word(&out, empty);
    }
    out
}

/// `text` without `word` where no letter or digit touches it.
fn replace_word(text: &str, word: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut before: Option<char> = None;
    while let Some(at) = rest.find(word) {
        let prev = rest[..at].chars().last().or(before);
        let next = rest[at + word.len()..].chars().next();
        let alone =
            !prev.is_some_and(char::is_alphanumeric) && !next.is_some_and(char::is_alphanumeric);
        out.push_str(&rest[..at]);
        if !alone {
            out.push_str(word);
        }
        before = word.chars().last();
        rest = &rest[at + word.len()..];
    }
    out.push_str(rest);
    out
}

/// Quoted text, long tokens and volatile parts replaced, whitespace collapsed, at most
/// 240 characters: the normal form of an error message in a key.
pub fn tidy(text: &str) -> String {
    volatile(&without_long_tokens(&without_quoted(text)))
        .chars()
        .take(240)
        .collect()
}

/// `text` with what sits between quotes (`'...'`, `"..."`, `` `...` ``, on one line, at
/// most 200 characters) replaced by `…`. A quote inside a word (`don't`) opens nothing.
fn without_quoted(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let opens = matches!(c, '\'' | '"' | '`') && (i == 0 || !chars[i - 1].is_alphanumeric());
        if opens {
            let close = chars[i + 1..]
                .iter()
                .take(200)
                .take_while(|&&d| d != '\n')
                .position(|&d| d == c);
            if let Some(len) = close {
                out.push(c);
                out.push('…');
                out.push(c);
                i += len + 2;
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

/// `text` with tokens longer than 32 characters (generated strings, base64, hashes)
/// replaced by `…`.
fn without_long_tokens(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut token = String::new();
    let flush = |token: &mut String, out: &mut String| {
        if token.chars().count() > 32 {
            out.push('…');
        } else {
            out.push_str(token);
        }
        token.clear();
    };
    for c in text.chars() {
        if c.is_whitespace() || matches!(c, ',' | ';' | ':' | '(' | ')' | '[' | ']' | '{' | '}') {
            flush(&mut token, &mut out);
            out.push(c);
        } else {
            token.push(c);
        }
    }
    flush(&mut token, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_timestamps_normalise_alike() {
        assert_eq!(
            volatile("user 4711 not found at 2026-01-01T10:00:00Z"),
            volatile("user 12 not found at  2025-12-31T09:59:59Z")
        );
        assert_eq!(
            volatile("id 3f2504e0-4f89-11d3-9a0c-0305e82c3301 gone"),
            "id # gone"
        );
        assert_ne!(volatile("user not found"), volatile("order not found"));
    }

    #[test]
    fn a_title_from_the_parsed_body_is_the_title_from_its_text() {
        for text in [
            r#"{"error":"NullPointerException at line 42","trace":"..."}"#,
            r#"{"error":{"code":"E1234","message":"bad id 17"}}"#,
            r#"{"name":"item 3","id":3}"#,
            r#"[1, 2, 3]"#,
            "\"just a string\"",
        ] {
            let parsed: Value = serde_json::from_str(text).unwrap();
            assert_eq!(
                error_title_with(text, Some(&parsed)),
                error_title(text),
                "{text}"
            );
            assert_eq!(
                raw_error_title_with(text, Some(&parsed)),
                raw_error_title(text),
                "{text}"
            );
        }
    }

    #[test]
    fn error_title_reads_json_fields() {
        assert_eq!(
            error_title(r#"{"error":"NullPointerException at line 42","trace":"..."}"#),
            "NullPointerException at line #"
        );
        assert_eq!(error_title(r#"{"error":{"code":"E_BAD"}}"#), "E_BAD");
        assert_eq!(
            error_title("Internal Server Error\nstack..."),
            "Internal Server Error"
        );
        assert_eq!(
            error_title(
                "<!doctype html>\n<html><head><title>500 Internal Server Error</title></head>"
            ),
            "# Internal Server Error"
        );
    }

    #[test]
    fn one_cause_echoing_its_input_has_one_key() {
        let inputs = [
            "abc",
            "Zürich café",
            "a much longer value with spaces in it",
            "x'y",
            "0xdeadbeef",
            "ab",
            "7",
        ];
        let python = |v: &str| {
            format!(
                "Traceback (most recent call last):\n  File \"/app/views.py\", line 12, in create\n    age = int(payload['age'])\nValueError: invalid literal for int() with base 10: '{v}'\n"
            )
        };
        let json = |v: &str| format!(r#"{{"detail":"name {v} is too long","status":500}}"#);
        for make in [&python as &dyn Fn(&str) -> String, &json] {
            let keys: std::collections::BTreeSet<String> =
                inputs.iter().map(|v| cause(&make(v), None, &[v])).collect();
            assert_eq!(keys.len(), 1, "{keys:?}");
        }
        // Without knowing what was sent, quoting alone still folds the traceback.
        assert_eq!(
            cause(&python("abc"), None, &[]),
            cause(&python("something else entirely"), None, &[])
        );
        assert_ne!(
            cause(&python("abc"), None, &[]),
            cause(&json("abc"), None, &["abc"])
        );
    }

    #[test]
    fn one_generic_title_with_two_traces_is_two_causes() {
        let page = |frame: &str| {
            format!("java.lang.NullPointerException\n\tat com.acme.{frame}(Orders.java:42)\n\tat com.acme.Main.run(Main.java:7)")
        };
        assert_ne!(
            cause(&page("Orders.total"), None, &[]),
            cause(&page("Orders.discount"), None, &[])
        );
        assert_eq!(
            cause(&page("Orders.total"), None, &[]),
            cause(&page("Orders.total").replace("42", "43"), None, &[])
        );
    }

    #[test]
    fn html_error_pages_are_read_by_their_title_or_heading() {
        let werkzeug = "<!doctype html>\n<html lang=en>\n<title>500 Internal Server Error</title>\n<h1>Internal Server Error</h1>\n<p>The server encountered an internal error.</p>\n";
        assert_eq!(raw_error_title(werkzeug), "500 Internal Server Error");
        let no_title =
            "<!DOCTYPE html><html><body><h1>Whoops, &quot;name&quot; broke</h1></body></html>";
        assert_eq!(raw_error_title(no_title), "Whoops, \"name\" broke");
        let bare = "<html><body>\n\n  <p>Something   failed</p></body></html>";
        assert_eq!(raw_error_title(bare), "Something failed");
        assert_eq!(
            raw_error_title("Traceback (most recent call last):\n  File \"a.py\", line 1, in f\nKeyError: 'id'\n"),
            "KeyError: 'id'"
        );
    }

    /// A number the request happened to send elsewhere reads like any other number.
    #[test]
    fn an_echo_of_digits_is_left_to_volatile() {
        assert_eq!(
            cause(
                r#"{"detail":"priority -62 out of range for ''"}"#,
                None,
                &["", "62"]
            ),
            cause(
                r#"{"detail":"priority -92 out of range for ''"}"#,
                None,
                &[""]
            )
        );
    }

    /// An echo with no letter (a symbol, an emoji) is taken out where it stands alone, and
    /// only there.
    #[test]
    fn an_echo_without_letters_is_taken_out_where_it_stands_alone() {
        let plain = cause(
            r#"{"detail":"priority 5 out of range for note abcdef"}"#,
            None,
            &["abcdef"],
        );
        for echo in ["\u{fffd}", "<>&", "😀"] {
            let text = format!(r#"{{"detail":"priority 5 out of range for note {echo}"}}"#);
            assert_eq!(cause(&text, None, &[echo]), plain, "{echo}");
        }
        // An apostrophe echoed does not take the quotes out of the message.
        assert_eq!(
            cause(r#"{"detail":"title 'x' is too long"}"#, None, &["'"]),
            cause(r#"{"detail":"title 'y' is too long"}"#, None, &["y"])
        );
        // Blank text takes nothing out.
        assert_eq!(
            cause(r#"{"detail":"a  b"}"#, None, &[" "]),
            cause(r#"{"detail":"a b"}"#, None, &[])
        );
    }

    /// One line of code raising for a non-numeric value, its message echoing the value in
    /// double quotes, single quotes or none: one cause.
    #[test]
    fn one_cause_whatever_quotes_its_echo_has() {
        // A value longer than the part of the message a key reads.
        let long = "8".repeat(1024);
        let long_text = format!(r#"{{"error":"could not convert '{long}' to a number"}}"#);
        let keys: std::collections::BTreeSet<String> = [
            (
                "x1y",
                r#"{"error":"could not convert \"x1y\" to a number"}"#,
            ),
            ("abc", r#"{"error":"could not convert 'abc' to a number"}"#),
            (
                "zz-top",
                r#"{"error":"could not convert zz-top to a number"}"#,
            ),
            ("", r#"{"error":"could not convert '' to a number"}"#),
            ("", r#"{"error":"could not convert `7` to a number"}"#),
            (long.as_str(), long_text.as_str()),
        ]
        .iter()
        .map(|(sent, text)| cause(text, None, &[sent]))
        .collect();
        assert_eq!(keys.len(), 1, "{keys:?}");
        // Two messages that differ outside their quotes stay two causes.
        assert_ne!(
            cause(
                r#"{"error":"could not convert 'a' to a number"}"#,
                None,
                &[]
            ),
            cause(r#"{"error":"could not store 'a'"}"#, None, &[])
        );
    }

    #[test]
    fn quotes_inside_words_open_nothing() {
        assert_eq!(tidy("don't 'x y' \"z\""), "don't '…' \"…\"");
        assert_eq!(tidy("unclosed 'quote here"), "unclosed 'quote here");
    }
}
