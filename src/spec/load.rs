//! Reading a document: from a file or an http(s) URL, then from YAML or JSON bytes into one
//! `serde_json::Value` (map order kept, so operations keep document order).
//!
//! Depends on nothing else in probe.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Number, Value};

use super::error::SpecError;

/// The most a document (a file, a fetched answer, or one a reference names) may weigh; a
/// bigger one is refused rather than buffered. The largest real document known here is
/// Microsoft Graph's, 47 MB; an endless file (`/dev/zero`, a pipe that never closes) stops
/// here, with the memory it took bounded by about this much.
pub(crate) const MAX_DOCUMENT_BYTES: usize = 100 * 1024 * 1024;
/// How long a fetch may take in all, and to connect.
const FETCH_TIMEOUT: Duration = Duration::from_secs(30);
const FETCH_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// What went wrong with a fetch, cause first: `no answer within 30 s (timeout)`.
fn fetch_cause(e: &reqwest::Error) -> String {
    let mut chain = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        chain.push_str(": ");
        chain.push_str(&s.to_string());
        source = s.source();
    }
    let lower = chain.to_ascii_lowercase();
    let cause = if e.is_timeout() {
        format!(
            "no whole answer within {} s (timeout)",
            FETCH_TIMEOUT.as_secs()
        )
    } else if lower.contains("dns error") || lower.contains("failed to lookup address") {
        "the host name did not resolve (DNS)".to_owned()
    } else if lower.contains("connection refused") {
        "the connection was refused (nothing listens there)".to_owned()
    } else if lower.contains("certificate") || lower.contains("tls") {
        "the TLS handshake failed".to_owned()
    } else if e.is_connect() {
        "the connection could not be made".to_owned()
    } else {
        "the request failed".to_owned()
    };
    format!("{cause}: {chain}")
}
/// YAML nests at most this deep (serde_yaml stops earlier; this guards the conversion).
const MAX_YAML_DEPTH: usize = 256;

/// Whether `source` names an http(s) URL rather than a file.
pub(crate) fn is_url(source: &str) -> bool {
    let lower = source.get(..8).unwrap_or(source).to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}

/// Reads a file of at most [`MAX_DOCUMENT_BYTES`]; the error names the path.
pub(crate) fn read_file(path: &Path) -> Result<Vec<u8>, SpecError> {
    read_capped(path, MAX_DOCUMENT_BYTES)
}

fn read_capped(path: &Path, cap: usize) -> Result<Vec<u8>, SpecError> {
    use std::io::Read;
    let fail = |error| SpecError::Read {
        path: path.display().to_string(),
        error,
    };
    let mut file = std::fs::File::open(path).map_err(fail)?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let bytes = if size > 0 && size <= cap as u64 {
        // A regular file says what it holds: one allocation (and one byte more, to see a
        // file that grew since).
        let mut bytes = Vec::with_capacity(size as usize + 1);
        (&mut file)
            .take(cap as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(fail)?;
        bytes
    } else {
        // A stream, or a file that says nothing of its size, is read in pieces: a growing
        // buffer would hold its old and its doubled self at once, twice the cap.
        let mut pieces: Vec<Vec<u8>> = Vec::new();
        let mut total = 0usize;
        loop {
            let mut piece = Vec::with_capacity(PIECE);
            let n = (&mut file)
                .take(PIECE as u64)
                .read_to_end(&mut piece)
                .map_err(fail)?;
            total += n;
            if n > 0 {
                pieces.push(piece);
            }
            if n < PIECE || total > cap {
                break;
            }
        }
        if total > cap {
            return Err(too_large(path, cap));
        }
        pieces.concat()
    };
    if bytes.len() > cap {
        return Err(too_large(path, cap));
    }
    Ok(bytes)
}

/// How much of a stream [`read_capped`] reads at a time.
const PIECE: usize = 1024 * 1024;

fn too_large(path: &Path, cap: usize) -> SpecError {
    SpecError::Read {
        path: path.display().to_string(),
        error: std::io::Error::other(format!(
            "the document is larger than {} MiB, the most probe reads",
            cap / 1024 / 1024
        )),
    }
}

/// The directory relative references of a file are resolved against.
pub(crate) fn dir_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Fetches a URL with reqwest; to be awaited inside a tokio runtime.
pub(crate) async fn fetch(url: &str) -> Result<Vec<u8>, SpecError> {
    let fail = |message: String| SpecError::Fetch {
        url: url.to_string(),
        message,
    };
    let client = reqwest::Client::builder()
        .timeout(FETCH_TIMEOUT)
        .connect_timeout(FETCH_CONNECT_TIMEOUT)
        .build()
        .map_err(|e| fail(e.to_string()))?;
    let mut response = client
        .get(url)
        .header(
            "accept",
            "application/json, application/yaml;q=0.9, */*;q=0.5",
        )
        .send()
        .await
        .map_err(|e| fail(fetch_cause(&e)))?;
    if !response.status().is_success() {
        return Err(fail(format!("status {}", response.status())));
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| fail(fetch_cause(&e)))? {
        if bytes.len() + chunk.len() > MAX_DOCUMENT_BYTES {
            return Err(fail(format!(
                "the document is larger than {} MiB",
                MAX_DOCUMENT_BYTES / 1024 / 1024
            )));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// Fetches a URL from synchronous code, inside or outside a tokio runtime: the fetch runs on
/// a thread of its own with a current-thread runtime, so it never blocks a caller's runtime.
pub(crate) fn fetch_blocking(url: &str) -> Result<Vec<u8>, SpecError> {
    let owned = url.to_string();
    let worker = std::thread::Builder::new()
        .name("probe-spec-fetch".into())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| SpecError::Fetch {
                    url: owned.clone(),
                    message: format!("cannot start a runtime: {e}"),
                })?;
            runtime.block_on(fetch(&owned))
        })
        .map_err(|e| SpecError::Fetch {
            url: url.to_string(),
            message: format!("cannot start a thread: {e}"),
        })?;
    worker.join().unwrap_or_else(|_| {
        Err(SpecError::Fetch {
            url: url.to_string(),
            message: "the fetch thread stopped".into(),
        })
    })
}

/// YAML or JSON bytes into a JSON value. JSON (the common case for big documents) goes
/// through serde_json, which is much faster than the YAML parser.
pub(crate) fn parse_value(bytes: &[u8], file: &str) -> Result<Value, SpecError> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if let Some(line) = too_deep(bytes, MAX_YAML_DEPTH) {
        return Err(SpecError::TooDeep {
            file: file.to_string(),
            line,
            limit: MAX_YAML_DEPTH,
        });
    }
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace()).copied();
    if matches!(first, Some(b'{') | Some(b'[')) {
        match serde_json::from_slice::<Value>(bytes) {
            Ok(v) => return Ok(v),
            Err(e) if e.is_syntax() || e.is_eof() || e.is_data() => {
                // Flow-style YAML also starts with `{`; only if YAML fails too is it an error,
                // and then the JSON message is the one that helps.
                if let Ok(v) = parse_yaml(bytes, file) {
                    return Ok(v);
                }
                return Err(SpecError::Syntax {
                    file: file.to_string(),
                    line: Some(e.line()),
                    column: Some(e.column()),
                    message: e.to_string(),
                });
            }
            Err(e) => {
                return Err(SpecError::Syntax {
                    file: file.to_string(),
                    line: None,
                    column: None,
                    message: e.to_string(),
                })
            }
        }
    }
    parse_yaml(bytes, file)
}

fn parse_yaml(bytes: &[u8], file: &str) -> Result<Value, SpecError> {
    let mut yaml: serde_yaml::Value =
        serde_yaml::from_slice(bytes).map_err(|e| SpecError::Syntax {
            file: file.to_string(),
            line: e.location().map(|l| l.line()),
            column: e.location().map(|l| l.column()),
            message: strip_location(&e.to_string()),
        })?;
    // `<<: *anchor` merge keys are common in hand-written documents; a failure to merge
    // leaves the mapping as written, which the loader then reads as well as it can.
    let _ = yaml.apply_merge();
    yaml_to_json(yaml, 0).map_err(|message| SpecError::Syntax {
        file: file.to_string(),
        line: None,
        column: None,
        message,
    })
}

/// The line (1-based) where flow collections (`[`, `{`) first nest deeper than `limit`, in
/// one pass over the bytes: JSON, and YAML's flow style. Quoted strings, comments and block
/// scalars (`|`, `>`) are skipped, so brackets inside text never count. Block nesting is
/// not counted: each level costs a line of indentation, so a deep one is a huge file, and
/// the YAML parser's own limit stops it.
fn too_deep(bytes: &[u8], limit: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut line = 1usize;
    let mut i = 0usize;
    // The last byte that is not a space or tab on this line (`\n` at a line's start).
    let mut previous = b'\n';
    // Indentation of the current line, and of a line that opened a block scalar.
    let mut indent = 0usize;
    let mut at_line_start = true;
    let mut block_scalar: Option<usize> = None;
    while i < bytes.len() {
        let b = bytes[i];
        if at_line_start {
            let spaces = bytes[i..].iter().take_while(|&&c| c == b' ').count();
            let rest = bytes[i + spaces..].first().copied();
            let blank = matches!(rest, None | Some(b'\n') | Some(b'\r'));
            if let Some(block) = block_scalar {
                if blank || spaces > block {
                    // Inside a block scalar: the whole line is text; on to the next one.
                    match memchr::memchr(b'\n', &bytes[i..]) {
                        Some(n) => {
                            i += n + 1;
                            line += 1;
                        }
                        None => i = bytes.len(),
                    }
                    continue;
                }
                block_scalar = None;
            }
            indent = spaces;
            at_line_start = false;
            i += spaces;
            continue;
        }
        match b {
            b'\n' => {
                line += 1;
                at_line_start = true;
                previous = b'\n';
                i += 1;
                continue;
            }
            b' ' | b'\t' | b'\r' => {
                i += 1;
                continue;
            }
            b'#' if depth == 0 || matches!(previous, b',' | b'[' | b'{' | b'\n') => {
                // A comment (in flow style, only after a separator; `a#b` is text).
                i = memchr::memchr(b'\n', &bytes[i..]).map_or(bytes.len(), |n| i + n);
                continue;
            }
            b'"' | b'\'' if matches!(previous, b'\n' | b'[' | b'{' | b',' | b':' | b'-' | b'?') => {
                // A quoted string: to its closing quote (`\"` escapes in double quotes,
                // `''` in single ones), counting the lines it spans.
                let quote = b;
                i += 1;
                while i < bytes.len() {
                    match bytes[i] {
                        b'\\' if quote == b'"' => i += 1,
                        b'\n' => line += 1,
                        c if c == quote => {
                            if quote == b'\'' && bytes.get(i + 1) == Some(&b'\'') {
                                i += 1;
                            } else {
                                break;
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
            }
            // At block level a bracket opens a collection only where a value starts
            // (`key: [`, `- {`); `see [1` is plain text. Inside one, every bracket counts.
            b'[' | b'{' if depth > 0 || matches!(previous, b':' | b'-' | b'?' | b'\n') => {
                depth += 1;
                if depth > limit {
                    return Some(line);
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            b'|' | b'>' if depth == 0 && matches!(previous, b':' | b'-' | b'\n') => {
                // A block scalar indicator (`key: |`, `- >-`): the lines indented deeper
                // than this one are text.
                let end = memchr::memchr(b'\n', &bytes[i..]).map_or(bytes.len(), |n| i + n);
                let header = &bytes[i + 1..end];
                let is_header = header
                    .iter()
                    .take_while(|&&c| c != b'#')
                    .all(|c| matches!(c, b'-' | b'+' | b'0'..=b'9' | b' ' | b'\t' | b'\r'));
                if is_header {
                    block_scalar = Some(indent);
                    i = end;
                    continue;
                }
            }
            _ => {}
        }
        previous = b;
        i += 1;
    }
    None
}

/// serde_yaml appends " at line L column C"; the position is printed separately.
fn strip_location(message: &str) -> String {
    match message.find(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

/// YAML values into JSON ones. Non-string keys (`200:` is an integer in YAML) become their
/// text; tags are dropped; non-finite floats become strings.
fn yaml_to_json(value: serde_yaml::Value, depth: usize) -> Result<Value, String> {
    use serde_yaml::Value as Y;
    if depth > MAX_YAML_DEPTH {
        return Err(format!("nested deeper than {MAX_YAML_DEPTH} levels"));
    }
    Ok(match value {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(b),
        Y::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::Number(i.into())
            } else if let Some(u) = n.as_u64() {
                Value::Number(u.into())
            } else {
                let f = n.as_f64().unwrap_or(f64::NAN);
                match Number::from_f64(f) {
                    Some(n) => Value::Number(n),
                    None => Value::String(n.to_string()),
                }
            }
        }
        Y::String(s) => Value::String(s),
        Y::Sequence(items) => Value::Array(
            items
                .into_iter()
                .map(|v| yaml_to_json(v, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        Y::Mapping(map) => {
            let mut out = Map::with_capacity(map.len());
            for (k, v) in map {
                let key = match k {
                    Y::String(s) => s,
                    Y::Number(n) => n.to_string(),
                    Y::Bool(b) => b.to_string(),
                    Y::Null => "null".to_string(),
                    other => serde_yaml::to_string(&other)
                        .unwrap_or_default()
                        .trim()
                        .to_string(),
                };
                out.insert(key, yaml_to_json(v, depth + 1)?);
            }
            Value::Object(out)
        }
        Y::Tagged(tagged) => yaml_to_json(tagged.value, depth + 1)?,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_file_over_the_cap_is_refused_naming_it_and_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.json");
        std::fs::write(&path, vec![b' '; 3 * 1024 * 1024 + 1]).unwrap();
        let e = read_capped(&path, 3 * 1024 * 1024).unwrap_err().to_string();
        assert!(
            e.contains("big.json") && e.contains("larger than 3 MiB"),
            "{e}"
        );
        std::fs::write(&path, vec![b' '; 3 * 1024 * 1024]).unwrap();
        assert_eq!(read_capped(&path, 3 * 1024 * 1024).unwrap().len(), 3 << 20);
    }

    /// An endless file (`--spec /dev/zero`) is read up to the cap, not for ever.
    #[cfg(target_os = "linux")]
    #[test]
    fn an_endless_file_stops_at_the_cap() {
        let e = read_capped(Path::new("/dev/zero"), 1024 * 1024)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("/dev/zero") && e.contains("larger than 1 MiB"),
            "{e}"
        );
    }

    use super::*;

    /// A document nested far deeper than any real one is refused before parsing, at once
    /// (parsing it took time growing with the square of the depth), naming the line.
    #[test]
    fn deep_nesting_is_refused_before_parsing() {
        let deep = format!("{}{}", "[".repeat(200_000), "]".repeat(200_000));
        let started = std::time::Instant::now();
        let e = parse_value(deep.as_bytes(), "deep.json").unwrap_err();
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        assert_eq!(
            e.to_string(),
            "deep.json: line 1: the document nests deeper than 256 levels (arrays and objects inside one another); probe reads documents nested 256 deep at most"
        );
        let yaml = format!("openapi: 3.0.0\nx:\n  y: {}\n", "{a: ".repeat(300));
        assert!(matches!(
            parse_value(yaml.as_bytes(), "deep.yaml"),
            Err(SpecError::TooDeep { line: 3, .. })
        ));
    }

    /// Brackets in text never count: quoted strings, comments, block scalars, plain text.
    #[test]
    fn brackets_in_text_do_not_count_as_nesting() {
        let many = "[".repeat(300);
        for text in [
            format!("a: \"{many}\"\n"),
            format!("a: '{many}'\n"),
            format!("a: 1 # {many}\n"),
            format!("a: |\n  {many}\n  more {many}\nb: 2\n"),
            format!("a: >-\n    {many}\n\n    {many}\nb: 2\n"),
            format!("a: see {many}\n"),
            format!("a: it's {many}\n"),
            format!("{{\"a\": \"{many}\\\" {many}\"}}"),
        ] {
            assert_eq!(too_deep(text.as_bytes(), 256), None, "{text}");
        }
        assert_eq!(too_deep(b"a: [[[\n", 2), Some(1));
        assert_eq!(too_deep(b"a: |\n  x\nb: [[[\n", 2), Some(3));
    }

    proptest::proptest! {
        /// The scan ends on any input and names a line the input has, and only when the
        /// input has more opening brackets than the limit.
        #[test]
        fn the_depth_scan_ends_and_names_a_real_line(text in "[\\[\\]{}|>:\\- \n'\"#a]{0,80}") {
            let lines = text.split('\n').count();
            if let Some(line) = too_deep(text.as_bytes(), 3) {
                proptest::prop_assert!(line >= 1 && line <= lines);
                let opening = text.bytes().filter(|b| matches!(b, b'[' | b'{')).count();
                proptest::prop_assert!(opening > 3, "{} opening brackets", opening);
            }
        }
    }

    #[test]
    fn yaml_integer_keys_become_strings() {
        let v = parse_value(b"responses:\n  200:\n    description: ok\n", "a.yaml").unwrap();
        assert!(v["responses"]["200"].is_object());
    }

    #[test]
    fn json_syntax_error_has_position() {
        let e = parse_value(b"{\n  \"a\": [1,\n}", "x.json").unwrap_err();
        let text = e.to_string();
        assert!(text.starts_with("x.json: line 3"), "{text}");
    }

    #[test]
    fn yaml_syntax_error_has_position() {
        let e = parse_value(b"a: [1, 2\nb: : :\n", "x.yaml").unwrap_err();
        assert!(matches!(e, SpecError::Syntax { line: Some(_), .. }), "{e}");
    }

    #[test]
    fn urls_are_told_from_files() {
        assert!(is_url("https://example.com/openapi.json"));
        assert!(is_url("HTTP://example.com/a"));
        assert!(!is_url("specs/openapi.yaml"));
    }
}
