//! Reproducers of stored requests: a curl line, an HTTPie line, a Python `requests` snippet,
//! and for a series a POSIX shell script of curl steps that binds each value taken from an
//! earlier answer (`probe show <id> --as curl|httpie|python`).
//!
//! A stored request holds `<probe:secret>` where a credential went; every reproducer reads
//! it from the variable [`secret_variable`](crate::send::wire::secret_variable) names
//! (`$PROBE_SECRET_AUTHORIZATION`, `os.environ["PROBE_SECRET_AUTHORIZATION"]`), so none holds
//! a secret either. The curl form is [`curl_line`], the one reports print.
//!
//! Depends on: `model`, `ids`, `store` (reading interactions and test cases back), `send::wire`
//! (the curl line, the parts of a URL and header that hold credentials).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::Value;

use crate::ids::SeriesId;
use crate::model::{Interaction, Location, Outcome, Series, TestCase};
use crate::send::wire::{
    computed_header, curl_line, header_parts, prefixed, shell_word, url_parts, Part,
};
use crate::store::{Store, StoreError};

/// The forms a reproducer takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    Curl,
    Httpie,
    Python,
}

/// A stored request: method, URL, headers (names lower case), body bytes.
pub struct StoredRequest<'a> {
    pub method: &'a str,
    pub url: &'a str,
    pub headers: &'a [(String, String)],
    pub body: Option<&'a [u8]>,
}

/// A reproducer of one stored request.
pub fn one(form: Form, r: &StoredRequest<'_>) -> String {
    match form {
        Form::Curl => curl_line(r.method, r.url, r.headers, r.body),
        Form::Httpie => httpie_line(r),
        Form::Python => python_snippet(r),
    }
}

/// The reproducer of a stored interaction.
pub fn of_interaction(
    store: &Store,
    interaction: &Interaction,
    form: Form,
) -> Result<String, StoreError> {
    let body = match &interaction.request.body {
        Some(b) => Some(store.body_bytes(b)?),
        None => None,
    };
    Ok(one(
        form,
        &StoredRequest {
            method: &interaction.request.method,
            url: &interaction.request.url,
            headers: &interaction.request.headers,
            body: body.as_deref(),
        },
    ))
}

/// `http --ignore-stdin POST 'url' 'name:value' --raw 'body'` (HTTPie 3.2 or newer).
fn httpie_line(r: &StoredRequest<'_>) -> String {
    let mut line = format!(
        "http --ignore-stdin --follow=no {} {}",
        r.method,
        shell_word(&url_parts(r.url))
    );
    for (k, v) in r.headers {
        if computed_header(k) {
            continue;
        }
        line.push(' ');
        line.push_str(&shell_word(&prefixed(&format!("{k}:"), header_parts(k, v))));
    }
    if let Some(b) = r.body {
        match std::str::from_utf8(b) {
            Ok(text) => {
                line.push_str(" --raw ");
                line.push_str(&shell_word(&[Part::Text(text.to_owned())]));
            }
            // Bytes a shell word cannot carry: decoded from base64 and piped in.
            Err(_) => {
                use base64::Engine as _;
                let encoded = base64::engine::general_purpose::STANDARD.encode(b);
                line = format!("printf %s '{encoded}' | base64 -d | {line}");
            }
        }
    }
    line
}

/// A Python string literal (JSON's escapes are Python's).
fn py_str(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into())
}

/// Parts as one Python expression: literals and `os.environ[...]` joined by `+`.
fn py_expr(parts: &[Part]) -> String {
    let pieces: Vec<String> = parts
        .iter()
        .map(|p| match p {
            Part::Text(t) => py_str(t),
            Part::Secret(v) => format!("os.environ[{}]", py_str(v)),
        })
        .collect();
    if pieces.is_empty() {
        "\"\"".into()
    } else {
        pieces.join(" + ")
    }
}

/// A `requests` snippet that sends the request and prints the status and body.
fn python_snippet(r: &StoredRequest<'_>) -> String {
    let mut s = String::from("import os\n\nimport requests\n\nresponse = requests.request(\n");
    let _ = writeln!(s, "    {},", py_str(r.method));
    let _ = writeln!(s, "    {},", py_expr(&url_parts(r.url)));
    s.push_str("    headers={\n");
    for (k, v) in r.headers {
        if computed_header(k) {
            continue;
        }
        let _ = writeln!(
            s,
            "        {}: {},",
            py_str(k),
            py_expr(&header_parts(k, v))
        );
    }
    s.push_str("    },\n");
    if let Some(b) = r.body {
        match std::str::from_utf8(b) {
            Ok(text) => {
                let _ = writeln!(s, "    data={}.encode(\"utf-8\"),", py_str(text));
            }
            Err(_) => {
                let hex: String = b.iter().map(|byte| format!("{byte:02x}")).collect();
                let _ = writeln!(s, "    data=bytes.fromhex({}),", py_str(&hex));
            }
        }
    }
    s.push_str(
        "    allow_redirects=False,\n)\nprint(response.status_code)\nprint(response.text)\n",
    );
    s
}

/// A value bound into a later step: the shell variable that carries it.
struct Bound {
    variable: String,
}

/// A POSIX shell script of curl steps re-sending a series: each step's answer is kept in a
/// temporary directory, and each value a later step took from an earlier answer
/// (`series_step.bindings`) is read from there with `jq` (a body) or `sed` (a `Location`)
/// and put where the recorded value was.
pub fn series_script(store: &Store, id: SeriesId) -> Result<String, StoreError> {
    let series: Series = store.get(id.0)?;
    let mut s = String::new();
    let _ = writeln!(s, "#!/bin/sh");
    let _ = writeln!(
        s,
        "# series {} ({} of {}) of run {}: {} steps, as recorded by probe.",
        series.name,
        series.kind.as_str(),
        series.resource,
        series.run.short(12),
        series.steps.len()
    );
    let _ = writeln!(
        s,
        "# Values taken from an earlier answer are read with jq; credentials from $PROBE_SECRET_* variables."
    );
    let _ = writeln!(s, "set -eu");
    let _ = writeln!(s, "dir=$(mktemp -d)");
    let _ = writeln!(s, "trap 'rm -rf \"$dir\"' EXIT");
    let step_of_seq: BTreeMap<u64, usize> = series
        .steps
        .iter()
        .enumerate()
        .map(|(i, step)| (step.seq, i + 1))
        .collect();
    let mut variables: BTreeMap<(u64, String), String> = BTreeMap::new();
    for (i, step) in series.steps.iter().enumerate() {
        let n = i + 1;
        let interaction: Interaction = store.get(step.interaction.0)?;
        let case: TestCase = store.get(interaction.case.0)?;
        let recorded = match &interaction.outcome {
            Outcome::Response(r) => r.status.to_string(),
            Outcome::TransportError { kind, .. } => format!("no answer ({})", kind.name()),
        };
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "# step {n}: {} ({} {}), recorded {recorded}",
            step.role.as_str(),
            interaction.request.method,
            case.path
        );
        let mut bound = Vec::new();
        for (place, text) in case
            .series_step
            .as_ref()
            .map(|st| &st.bindings)
            .into_iter()
            .flatten()
        {
            let Some((seq, pointer)) = text
                .split_once('#')
                .and_then(|(q, p)| Some((q.parse::<u64>().ok()?, p.to_owned())))
            else {
                continue;
            };
            let Some(&source) = step_of_seq.get(&seq) else {
                let _ = writeln!(
                    s,
                    "# `{place}` came from seq {seq}, outside the series: sent as recorded"
                );
                continue;
            };
            let key = (seq, pointer.clone());
            let variable = match variables.get(&key) {
                Some(v) => v.clone(),
                None => {
                    let v = format!("v{}", variables.len() + 1);
                    let _ = writeln!(s, "{v}=$({})", extraction(source, &pointer));
                    variables.insert(key, v.clone());
                    v
                }
            };
            bound.push((place.clone(), Bound { variable }));
        }
        let body = match &interaction.request.body {
            Some(b) => Some(store.body_bytes(b)?),
            None => None,
        };
        let (url, body) = with_markers(&case, &interaction.request.url, body, &bound);
        let line = curl_line(
            &interaction.request.method,
            &url,
            &interaction.request.headers,
            body.as_deref(),
        );
        let mut line = line.replacen(
            "curl ",
            &format!(
                "curl -sS -o \"$dir/{n}.body\" -D \"$dir/{n}.headers\" -w 'step {n} {}: %{{http_code}}\\n' ",
                step.role.as_str()
            ),
            1,
        );
        for (_, b) in &bound {
            let expansion = format!("'\"${}\"'", b.variable);
            line = line.replace(&marker(&b.variable), &expansion);
            // A value at the end of a word leaves an empty quoted tail: `'"$v1"''`.
            line = line.replace(&format!("{expansion}'"), &expansion[..expansion.len() - 1]);
        }
        let _ = writeln!(s, "{line}");
    }
    Ok(s)
}

/// Where a bound value goes in a step's request while its curl line is built; replaced by
/// the variable's expansion afterwards (it is always inside a single-quoted word).
fn marker(variable: &str) -> String {
    format!("@@probe-bind-{variable}@@")
}

/// The shell command that reads a bound value from step `n`'s answer.
fn extraction(n: usize, pointer: &str) -> String {
    if pointer == crate::model::LOCATION_POINTER {
        return format!(
            "sed -n 's/^[Ll]ocation: *//p' \"$dir/{n}.headers\" | tr -d '\\r' | sed 's/[?#].*//; s:/*$::; s:.*/::'"
        );
    }
    let path: Vec<String> = pointer
        .split('/')
        .skip(1)
        .map(|seg| {
            let seg = seg.replace("~1", "/").replace("~0", "~");
            if !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_digit()) {
                seg
            } else {
                serde_json::to_string(&seg).unwrap_or_default()
            }
        })
        .collect();
    let program = format!("getpath([{}])", path.join(","));
    format!(
        "jq -r {} \"$dir/{n}.body\"",
        shell_word(&[Part::Text(program)])
    )
}

/// The text a scalar travels as in a URL.
fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The step's URL and body with each bound value replaced by its marker: a path or query
/// parameter's encoded value, or the value at a body place.
fn with_markers(
    case: &TestCase,
    url: &str,
    body: Option<Vec<u8>>,
    bound: &[(String, Bound)],
) -> (String, Option<Vec<u8>>) {
    let mut url = url.to_owned();
    let mut body = body;
    for (place, b) in bound {
        if let Some(at) = place.strip_prefix("body.") {
            let Some(bytes) = &body else { continue };
            let Ok(mut json) = serde_json::from_slice::<Value>(bytes) else {
                continue;
            };
            let slot = at
                .split('.')
                .try_fold(&mut json, |v, name| v.as_object_mut()?.get_mut(name));
            let Some(slot) = slot else { continue };
            let quoted = !slot.is_string();
            *slot = Value::String(marker(&b.variable));
            let mut text = json.to_string();
            if quoted {
                text = text.replace(
                    &format!("\"{}\"", marker(&b.variable)),
                    &marker(&b.variable),
                );
            }
            body = Some(text.into_bytes());
            continue;
        }
        let Some(p) = case
            .parameters
            .iter()
            .find(|p| p.location == Location::Path && &p.name == place)
            .or_else(|| case.parameters.iter().find(|p| &p.name == place))
        else {
            continue;
        };
        let encoded = percent_encoding::utf8_percent_encode(
            &scalar_text(&p.value),
            crate::send::wire::COMPONENT,
        )
        .to_string();
        url = match p.location {
            Location::Path => replace_path_segment(&url, &encoded, &marker(&b.variable)),
            Location::Query => replace_query_value(&url, &p.name, &encoded, &marker(&b.variable)),
            _ => url,
        };
    }
    (url, body)
}

/// `http://h/pets/7?x=7` with the path segment `7` replaced (the query and host untouched).
fn replace_path_segment(url: &str, segment: &str, with: &str) -> String {
    let (head, query) = match url.split_once('?') {
        Some((h, q)) => (h, Some(q)),
        None => (url, None),
    };
    let path_start = head
        .find("://")
        .and_then(|i| head[i + 3..].find('/').map(|j| i + 3 + j))
        .unwrap_or(head.len());
    let (origin, path) = head.split_at(path_start);
    let path: Vec<&str> = path
        .split('/')
        .map(|s| if s == segment { with } else { s })
        .collect();
    let mut out = format!("{origin}{}", path.join("/"));
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    out
}

/// `?a=1&id=7` with the value of `id` replaced.
fn replace_query_value(url: &str, name: &str, value: &str, with: &str) -> String {
    let Some((head, query)) = url.split_once('?') else {
        return url.to_owned();
    };
    let name =
        percent_encoding::utf8_percent_encode(name, crate::send::wire::COMPONENT).to_string();
    let pairs: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((k, v)) if k == name && v == value => format!("{k}={with}"),
            _ => pair.to_owned(),
        })
        .collect();
    format!("{head}?{}", pairs.join("&"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request<'a>(headers: &'a [(String, String)], body: Option<&'a [u8]>) -> StoredRequest<'a> {
        StoredRequest {
            method: "POST",
            url: "http://127.0.0.1:8080/pets?api_key=%3Cprobe%3Asecret%3E&q=it's",
            headers,
            body,
        }
    }

    fn headers() -> Vec<(String, String)> {
        vec![
            ("content-type".into(), "application/json".into()),
            ("authorization".into(), "<probe:secret>".into()),
            ("content-length".into(), "12".into()),
        ]
    }

    #[test]
    fn httpie_reads_credentials_from_variables() {
        let h = headers();
        let line = one(Form::Httpie, &request(&h, Some(br#"{"name":"Rex"}"#)));
        assert_eq!(
            line,
            r#"http --ignore-stdin --follow=no POST 'http://127.0.0.1:8080/pets?api_key='"$PROBE_SECRET_API_KEY"'&q=it'\''s' 'content-type:application/json' 'authorization:'"$PROBE_SECRET_AUTHORIZATION" --raw '{"name":"Rex"}'"#
        );
        assert!(!line.contains("probe:secret"));
    }

    #[test]
    fn python_reads_credentials_from_the_environment() {
        let h = headers();
        let snippet = one(Form::Python, &request(&h, Some(&[0xff, 0x01])));
        assert!(snippet.contains(r#""http://127.0.0.1:8080/pets?api_key=" + os.environ["PROBE_SECRET_API_KEY"] + "&q=it's","#), "{snippet}");
        assert!(
            snippet.contains(r#""authorization": os.environ["PROBE_SECRET_AUTHORIZATION"],"#),
            "{snippet}"
        );
        assert!(
            snippet.contains(r#"data=bytes.fromhex("ff01"),"#),
            "{snippet}"
        );
        assert!(!snippet.contains("content-length"));
        assert!(!snippet.contains("probe:secret"));
    }

    #[test]
    fn bound_values_become_markers_where_they_were() {
        assert_eq!(
            replace_path_segment("http://h:7/pets/7?x=7", "7", "@M@"),
            "http://h:7/pets/@M@?x=7"
        );
        assert_eq!(
            replace_query_value("http://h/x?a=7&id=7", "id", "7", "@M@"),
            "http://h/x?a=7&id=@M@"
        );
        assert_eq!(
            extraction(1, "/data/0/id"),
            r#"jq -r 'getpath(["data",0,"id"])' "$dir/1.body""#
        );
    }
}
