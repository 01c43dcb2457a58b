//! What a user trusts probe with: no credential lands anywhere probe writes, and a run
//! that got no HTTP answer never passes. The fixture servers here speak raw HTTP/1.1 over
//! TCP on 127.0.0.1, so they can misbehave in ways a web framework would not allow
//! (reset, never answer, send 10,000 headers, promise a body and stop).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::Value;

use crate::util::{code, probe, read_json, run, RawServer};

/// What the raw server does with the n-th connection (counting from 0).
#[derive(Clone, Copy)]
enum Behaviour {
    /// Answers every request with 200 and a JSON body echoing its head and body, and the
    /// `Authorization` and `Cookie` headers echoed back in `x-echo-*` headers; every third
    /// connection to `/echo/query` is closed without an answer.
    Echo,
    /// Closes every connection at once.
    Reset,
    /// Reads the request and never answers (holds the connection at most 30 s).
    Silent,
    /// Answers with a head of 10,000 headers.
    HugeHead,
    /// Promises 10 MB and sends 10 bytes.
    ShortBody,
    /// Every third connection reset, the others answered 200 `{}`.
    ThirdReset,
    /// Answers 200 with a gzip body (`content-encoding: gzip`, which probe never asks
    /// for) that echoes the request's `Authorization` header.
    GzipEcho,
}

/// A [`RawServer`] serving each connection as `behaviour` says.
fn raw_server(behaviour: Behaviour) -> RawServer {
    RawServer::start(move |stream, n| serve(stream, behaviour, n))
}

/// One request head and body, as read.
struct Request {
    target: String,
    headers: Vec<(String, String)>,
    body: String,
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Request> {
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let target = line.split_whitespace().nth(1)?.to_owned();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).ok()? == 0 {
            return None;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':')?;
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
    }
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len.min(1 << 20)];
    reader.read_exact(&mut body).ok()?;
    Some(Request {
        target,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

fn serve(stream: TcpStream, behaviour: Behaviour, n: u64) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let mut writer = match stream.try_clone() {
        Ok(w) => w,
        Err(_) => return,
    };
    if matches!(behaviour, Behaviour::Reset)
        || (matches!(behaviour, Behaviour::ThirdReset) && n.is_multiple_of(3))
    {
        return;
    }
    let mut reader = BufReader::new(stream);
    let Some(request) = read_request(&mut reader) else {
        return;
    };
    let reply = match behaviour {
        Behaviour::Silent => {
            std::thread::sleep(Duration::from_secs(30));
            return;
        }
        Behaviour::HugeHead => {
            let mut head = String::from("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n");
            for i in 0..10_000 {
                head.push_str(&format!("x-header-{i}: {i}\r\n"));
            }
            head.push_str("\r\n{}");
            head.into_bytes()
        }
        Behaviour::ShortBody => b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 10000000\r\n\r\n{\"a\": 1, \"".to_vec(),
        Behaviour::ThirdReset | Behaviour::Reset => {
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}".to_vec()
        }
        Behaviour::GzipEcho => {
            let authorization = request
                .headers
                .iter()
                .find(|(k, _)| k == "authorization")
                .map(|(_, v)| v.clone())
                .unwrap_or_default();
            let json = serde_json::json!({ "seen": authorization }).to_string();
            let mut gz =
                flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            gz.write_all(json.as_bytes()).unwrap();
            let body = gz.finish().unwrap();
            let mut reply = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-encoding: gzip\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            )
            .into_bytes();
            reply.extend_from_slice(&body);
            reply
        }
        Behaviour::Echo => {
            if request.target.starts_with("/echo/query") && n.is_multiple_of(3) {
                return;
            }
            let header = |name: &str| {
                request
                    .headers
                    .iter()
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default()
            };
            let body = serde_json::json!({
                "target": request.target,
                "headers": request.headers.iter().map(|(k, v)| format!("{k}: {v}")).collect::<Vec<_>>(),
                "body": request.body,
            })
            .to_string();
            format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-echo-authorization: {}\r\nx-echo-cookie: {}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                header("authorization"),
                header("cookie"),
                body.len()
            )
            .into_bytes()
        }
    };
    let _ = writer.write_all(&reply);
    let _ = writer.flush();
}

const ECHO_DOCUMENT: &str = r##"
openapi: 3.0.3
info: {title: echo, version: "1"}
components:
  securitySchemes:
    cookieKey: {type: apiKey, in: cookie, name: session}
    queryKey: {type: apiKey, in: query, name: api_key}
    bearer: {type: http, scheme: bearer}
    basic: {type: http, scheme: basic}
  schemas:
    Echo: {type: object}
paths:
  /echo/cookie:
    get:
      operationId: echoCookie
      security: [{cookieKey: []}]
      responses:
        "200": {description: ok, content: {application/json: {schema: {$ref: "#/components/schemas/Echo"}}}}
  /echo/query:
    get:
      operationId: echoQuery
      security: [{queryKey: []}]
      parameters:
        - {name: q, in: query, schema: {type: string, maxLength: 5}}
      responses:
        "200": {description: ok, content: {application/json: {schema: {$ref: "#/components/schemas/Echo"}}}}
  /echo/bearer:
    post:
      operationId: echoBearer
      security: [{bearer: []}]
      requestBody:
        content:
          application/json:
            schema: {type: object, properties: {note: {type: string, maxLength: 8}}}
      responses:
        "200": {description: ok, content: {application/json: {schema: {$ref: "#/components/schemas/Echo"}}}}
  /echo/basic:
    get:
      operationId: echoBasic
      security: [{basic: []}]
      responses:
        "200": {description: ok, content: {application/json: {schema: {$ref: "#/components/schemas/Echo"}}}}
"##;

const PING_DOCUMENT: &str = r#"
openapi: 3.0.3
info: {title: ping, version: "1"}
paths:
  /ping:
    get:
      operationId: ping
      responses:
        "200": {description: ok, content: {application/json: {schema: {type: object}}}}
  /pong:
    post:
      operationId: pong
      requestBody:
        content:
          application/json:
            schema: {type: object}
      responses:
        "200": {description: ok, content: {application/json: {schema: {type: object}}}}
"#;

/// The credentials of the `--spec` URL: its userinfo's password and an `access_token`.
const SPEC_PASSWORD: &str = "sp3c-Pa55/word";
const SPEC_TOKEN: &str = "sp3c-t0ken+value";

/// A document server that wants the `--spec` URL's credentials: `reader:SPEC_PASSWORD` as
/// basic credentials for the echo document and the file of schemas it refers to, and
/// `?access_token=SPEC_TOKEN` for the document itself.
fn document_server() -> probe::fixture::RunningFixture {
    use axum::http::{HeaderMap, StatusCode, Uri};
    use axum::response::IntoResponse;
    use axum::routing::get;
    fn allowed(headers: &HeaderMap) -> bool {
        let basic =
            base64::engine::general_purpose::STANDARD.encode(format!("reader:{SPEC_PASSWORD}"));
        headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v == format!("Basic {basic}"))
    }
    let document = ECHO_DOCUMENT.replace(
        "Echo: {type: object}",
        "Echo: {$ref: \"schemas.yaml#/Echo\"}",
    );
    let router = axum::Router::new()
        .route(
            "/spec/echo.yaml",
            get(move |headers: HeaderMap, uri: Uri| {
                let document = document.clone();
                async move {
                    let token = url::form_urlencoded::parse(uri.query().unwrap_or("").as_bytes())
                        .any(|(k, v)| k == "access_token" && v == SPEC_TOKEN);
                    if allowed(&headers) && token {
                        document.into_response()
                    } else {
                        StatusCode::UNAUTHORIZED.into_response()
                    }
                }
            }),
        )
        .route(
            "/spec/schemas.yaml",
            get(|headers: HeaderMap| async move {
                if allowed(&headers) {
                    "Echo: {type: object}\n".into_response()
                } else {
                    StatusCode::UNAUTHORIZED.into_response()
                }
            }),
        );
    probe::fixture::RunningFixture::start(router).expect("fixture starts")
}

/// `http://reader:SPEC_PASSWORD@host/spec/<file>?access_token=SPEC_TOKEN`.
fn spec_url(documents: &probe::fixture::RunningFixture, file: &str) -> String {
    let enc = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    documents
        .base_url()
        .replace("http://", &format!("http://reader:{}@", enc(SPEC_PASSWORD)))
        + &format!("/spec/{file}?lang=en&access_token={}", enc(SPEC_TOKEN))
}

const BEARER: &str = "b3arer-T0KEN/with+plus";
const API_KEY: &str = "k3y&value=x y";
const PASSWORD: &str = "pa55w0rd!";
const TENANT: &str = "t3nant-s3cret";

/// Every form a secret can take in what probe writes: as given, percent-encoded (upper
/// and lower case escapes), form-encoded, base64 (standard, unpadded, URL-safe).
fn forms(secret: &str) -> Vec<Vec<u8>> {
    use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
    const SET: &AsciiSet = &NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'.')
        .remove(b'_')
        .remove(b'~');
    let percent = utf8_percent_encode(secret, SET).to_string();
    let mut out = vec![
        secret.to_owned(),
        percent.clone(),
        percent.to_ascii_lowercase(),
        url::form_urlencoded::byte_serialize(secret.as_bytes()).collect(),
    ];
    for engine in [
        &base64::engine::general_purpose::STANDARD,
        &base64::engine::general_purpose::STANDARD_NO_PAD,
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
    ] {
        out.push(engine.encode(secret));
    }
    out.into_iter().map(String::into_bytes).collect()
}

/// Everything probe wrote under `dir`: every file as it is, and every record of every pack
/// decompressed (with its dictionary), so that compression hides nothing.
fn everything_written(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let bytes = std::fs::read(&path).unwrap_or_default();
            out.push((path.display().to_string(), bytes));
            if path.extension().is_some_and(|e| e == "pack") {
                if path.parent().is_some_and(|p| p.ends_with("packs-2")) {
                    out.extend(pack_blocks(&path));
                } else {
                    out.extend(pack_records(&path));
                }
            }
        }
    }
    out
}

fn pack_records(pack: &Path) -> Vec<(String, Vec<u8>)> {
    use probe::store::object::open_record;
    use probe::store::pack::{scan_pack, PackDir, ScanItem};
    let packs = pack.parent().unwrap();
    let dicts = packs.parent().unwrap().join("dicts");
    let dict = |id: u32| -> Option<Vec<u8>> {
        let prefix = format!("{id:08x}-");
        std::fs::read_dir(&dicts).ok()?.flatten().find_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with(&prefix)
                .then(|| std::fs::read(e.path()).ok())
                .flatten()
        })
    };
    let backend = PackDir::new(packs.to_path_buf());
    let name = pack.file_name().unwrap().to_string_lossy().into_owned();
    let mut out = Vec::new();
    scan_pack(&backend, &name, &mut |item| {
        if let ScanItem::Record {
            offset,
            header,
            data,
        } = item
        {
            let d = (header.dict != 0).then(|| dict(header.dict)).flatten();
            let payload = open_record(&header, &data, d.as_deref()).expect("a record opens");
            out.push((format!("packs/{name}@{offset}"), payload));
        }
        Ok(())
    })
    .unwrap();
    assert!(!out.is_empty(), "{name} holds records");
    out
}

/// Every block of format-2 pack `pack`, decompressed.
fn pack_blocks(pack: &Path) -> Vec<(String, Vec<u8>)> {
    use probe::store::pack::PackDir;
    use probe::store::v2::block;
    use probe::store::v2::scan::{scan_pack, ScanItem};
    let backend = PackDir::new(pack.parent().unwrap().to_path_buf());
    let name = pack.file_name().unwrap().to_string_lossy().into_owned();
    let mut out = Vec::new();
    scan_pack(&backend, &name, &mut |item| {
        match item {
            ScanItem::Block {
                offset,
                header,
                frame,
            } => {
                let bytes = probe::store::v2::block_bytes(&header, &frame);
                let (_, content) =
                    block::open(&bytes, block::no_dictionary).expect("a block opens");
                out.push((format!("packs-2/{name}@{offset}"), content));
            }
            other => panic!("{name}: {other:?}"),
        }
        Ok(())
    })
    .unwrap();
    assert!(!out.is_empty(), "{name} holds blocks");
    out
}

fn hits(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .filter(|w| *w == needle)
        .count()
}

/// The issue's test: one secret in each place probe puts one (bearer, basic from the
/// URL's userinfo, an API key in a cookie and in the query, a `--header`), a server that
/// reflects every one of them in a reply header and body and resets a third of the
/// connections that carry the key in the query. Not one form of any secret is in any byte
/// probe wrote, in a store of either format, and each reflection is reported once per
/// operation. The document comes from a `--spec` URL with credentials of its own (a
/// password in its userinfo, an `access_token` in its query: they were kept in the index,
/// report.json and the page, and printed by `probe log`); `probe log`, `show`, `recheck`,
/// `spec`, the events and an error naming the URL are written too, and searched.
#[test]
fn no_credential_lands_in_anything_probe_writes() {
    for format in ["1", "2"] {
        eprintln!("store format {format}");
        nothing_of_a_credential_is_written(format);
    }
}

fn nothing_of_a_credential_is_written(store_format: &str) {
    let dir = tempfile::tempdir().unwrap();
    // Checks of the user's, written outside `dir` (they hold a credential as written): one
    // that puts the request's and the reply's headers in every finding's message, and one
    // whose text names the tenant's secret. Their messages, the stored definitions and the
    // run's inputs are searched with the rest.
    let check_dir = tempfile::tempdir().unwrap();
    let checks = check_dir.path().join("checks.toml");
    let shown = "[[check]]\nname = \"headers-shown\"\nexpect = \"false\"\nmessage = \"{request.headers} {response.headers} {request.query}\"\n";
    std::fs::write(
        &checks,
        format!("{shown}\n[[check]]\nname = \"tenant-named\"\nexpect = \"header(request, 'x-tenant') != '{TENANT}'\"\n"),
    )
    .unwrap();
    let recheck_checks = check_dir.path().join("recheck.toml");
    std::fs::write(&recheck_checks, shown).unwrap();
    let server = raw_server(Behaviour::Echo);
    let documents = document_server();
    let spec = spec_url(&documents, "echo.yaml");
    let url = server
        .url()
        .replace("http://", &format!("http://alice:{PASSWORD}@"));
    let out = run(probe(dir.path())
        .env("PROBE_STORE_FORMAT", store_format)
        .args([
            "run",
            "--spec",
            &spec,
            "--url",
            &url,
            "--bearer",
            BEARER,
            "--api-key",
            API_KEY,
            "--header",
            &format!("X-Tenant: {TENANT}"),
            "--requests",
            "300",
            "--seed",
            "7",
            "--store",
            "store",
            "--report",
            "report.json",
            "--junit",
            "junit.xml",
            "--events",
            "events.ndjson",
            "--checks",
            checks.to_str().unwrap(),
        ]));
    assert_eq!(code(&out), 1, "findings: the reflections and the resets");
    std::fs::write(dir.path().join("stdout.txt"), &out.stdout).unwrap();
    std::fs::write(dir.path().join("stderr.txt"), &out.stderr).unwrap();

    let report = read_json(&dir.path().join("report.json"));
    // What prints the run's source, and what loads its document again from the store (the
    // file its references reached is found under its kept key), and a document URL that
    // cannot be fetched: each output kept to be searched.
    let run_text = report["run"]["id"].as_str().unwrap().to_owned();
    let missing = spec_url(&documents, "missing.yaml");
    for (name, args, expected) in [
        ("log", vec!["--store", "store", "log"], &[0][..]),
        ("show", vec!["--store", "store", "show", &run_text], &[0]),
        (
            "recheck",
            vec![
                "--store",
                "store",
                "recheck",
                &run_text,
                "--checks",
                recheck_checks.to_str().unwrap(),
            ],
            &[0, 1],
        ),
        ("spec", vec!["spec", &spec], &[0]),
        ("spec-missing", vec!["spec", &missing], &[2]),
    ] {
        let shown = run(probe(dir.path()).args(&args));
        assert!(expected.contains(&code(&shown)), "probe {name}");
        std::fs::write(dir.path().join(format!("{name}.out")), &shown.stdout).unwrap();
        std::fs::write(dir.path().join(format!("{name}.err")), &shown.stderr).unwrap();
    }
    let log = std::fs::read_to_string(dir.path().join("log.out")).unwrap();
    assert!(log.contains("/spec/echo.yaml"), "{log}");
    let failed = std::fs::read_to_string(dir.path().join("spec-missing.err")).unwrap();
    assert!(failed.contains("cannot fetch: status 404"), "{failed}");
    let found: Vec<(String, String)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["oracle"].as_str().unwrap().into(),
                f["operation"].as_str().unwrap().into(),
            )
        })
        .collect();
    for op in ["echoCookie", "echoQuery", "echoBearer", "echoBasic"] {
        let reflected = found
            .iter()
            .filter(|(o, p)| o == "credential_reflected" && p == op)
            .count();
        assert_eq!(reflected, 1, "{op} reflects once: {found:?}");
    }
    assert!(
        found.contains(&("transport_failure".into(), "echoQuery".into())),
        "{found:?}"
    );
    assert!(report["totals"]["transport"]["reset"].as_u64().unwrap() > 0);
    // The checks judged, saw the headers (as placeholders) and said so in their findings.
    assert!(
        found.iter().any(|(o, _)| o == "check:headers-shown"),
        "{found:?}"
    );
    let shown_messages: String = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["oracle"] == "check:headers-shown")
        .filter_map(|f| f["message"].as_str())
        .collect();
    assert!(
        shown_messages.contains("<probe:secret>"),
        "{shown_messages}"
    );
    let tenant = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "tenant-named")
        .unwrap();
    assert!(tenant["judged"].as_u64().unwrap() > 0, "{tenant}");
    assert_eq!(tenant["failed"], 0, "{tenant}");
    // The curl lines read credentials from variables.
    let curls: String = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["curl"].as_str())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(curls.contains("\"$PROBE_SECRET_AUTHORIZATION\""), "{curls}");
    assert!(
        curls.contains("session='\"$PROBE_SECRET_SESSION\""),
        "{curls}"
    );

    let written = everything_written(dir.path());
    let packs = if store_format == "1" {
        "packs"
    } else {
        "packs-2"
    };
    assert!(written
        .iter()
        .any(|(name, _)| name.starts_with(&format!("{packs}/")) && name.contains(".pack@")));
    let mut leaks = Vec::new();
    for secret in [
        BEARER,
        API_KEY,
        PASSWORD,
        TENANT,
        &format!("alice:{PASSWORD}"),
        SPEC_PASSWORD,
        SPEC_TOKEN,
    ] {
        for form in forms(secret) {
            for (name, bytes) in &written {
                let n = hits(bytes, &form);
                if n > 0 {
                    leaks.push(format!("{name}: {n} × {}", String::from_utf8_lossy(&form)));
                }
            }
        }
    }
    assert!(leaks.is_empty(), "secrets written:\n{}", leaks.join("\n"));
}

/// A `--bearer` for a document that declares no bearer scheme goes on every request, and
/// the run says so.
#[test]
fn a_bearer_the_document_does_not_declare_is_sent_and_said() {
    let dir = tempfile::tempdir().unwrap();
    let server = raw_server(Behaviour::Echo);
    let spec = dir.path().join("ping.yaml");
    std::fs::write(&spec, PING_DOCUMENT).unwrap();
    let out = run(probe(dir.path()).args([
        "run",
        "--spec",
        spec.to_str().unwrap(),
        "--url",
        &server.url(),
        "--bearer",
        BEARER,
        "--requests",
        "20",
        "--store",
        "store",
    ]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("declares no bearer scheme; the token is sent on every request"),
        "{stderr}"
    );
    // The echo server reflected it: a finding, so it was sent.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("credential_reflected"), "{stdout}");
    // An API key with nowhere to go is refused before anything is sent.
    let out = run(probe(dir.path()).args([
        "run",
        "--spec",
        spec.to_str().unwrap(),
        "--url",
        &server.url(),
        "--api-key",
        "abcdef",
        "--requests",
        "20",
        "--store",
        "store",
    ]));
    assert_eq!(code(&out), 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("declares no apiKey security scheme"));
}

/// One run of the ping document against `behaviour`; returns the output, report.json,
/// JUnit and how long the process took.
fn run_against(
    behaviour: Behaviour,
    extra: &[&str],
) -> (std::process::Output, Value, String, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let server = raw_server(behaviour);
    let spec = dir.path().join("ping.yaml");
    std::fs::write(&spec, PING_DOCUMENT).unwrap();
    let started = Instant::now();
    let out = run(probe(dir.path())
        .args([
            "run",
            "--spec",
            spec.to_str().unwrap(),
            "--url",
            &server.url(),
            "--store",
            "store",
            "--report",
            "report.json",
            "--junit",
            "junit.xml",
            "--seed",
            "1",
        ])
        .args(extra));
    let took = started.elapsed();
    let report = read_json(&dir.path().join("report.json"));
    let junit = std::fs::read_to_string(dir.path().join("junit.xml")).unwrap();
    (out, report, junit, took)
}

/// A run in which no request got an HTTP answer exits 3 and names the cause, however the
/// server fails; JUnit fails every operation.
#[test]
fn a_run_nothing_answered_exits_3_naming_the_cause() {
    for (behaviour, kind) in [
        (Behaviour::Reset, "reset"),
        (Behaviour::HugeHead, "header_too_large"),
        (Behaviour::ShortBody, "body_short"),
    ] {
        let (out, report, junit, _) = run_against(behaviour, &["--requests", "30"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(code(&out), 3, "{kind}: {stderr}");
        assert!(
            stderr.contains("got an HTTP answer") && stderr.contains(kind),
            "{kind}: {stderr}"
        );
        assert_eq!(report["run"]["outcome"], "unreachable", "{kind}");
        assert_eq!(report["totals"]["requests_answered"], 0, "{kind}");
        assert!(
            report["totals"]["transport"][kind].as_u64().unwrap() > 0,
            "{kind}: {}",
            report["totals"]
        );
        assert!(junit.contains("failures=\"2\""), "{kind}: {junit}");
        assert!(junit.contains("no_http_answer"), "{kind}: {junit}");
    }
}

/// A server that never answers: the budget is a hard end (requests in flight are
/// cancelled and recorded as cancelled), the run ends within a second of it and exits 3.
#[test]
fn the_budget_ends_a_run_whose_requests_hang() {
    let (out, report, _, took) = run_against(
        Behaviour::Silent,
        &["--budget", "2s", "--set", "send.timeout=60s"],
    );
    assert_eq!(code(&out), 3);
    assert!(took < Duration::from_secs(3), "took {took:?}");
    assert!(report["totals"]["transport"]["cancelled"].as_u64().unwrap() > 0);
    assert!(String::from_utf8_lossy(&out.stderr).contains("cancelled"));
    // With a short timeout the cause is the timeout.
    let (out, report, _, _) = run_against(
        Behaviour::Silent,
        &["--budget", "3s", "--set", "send.timeout=500ms"],
    );
    assert_eq!(code(&out), 3);
    assert!(report["totals"]["transport"]["timeout"].as_u64().unwrap() > 0);
}

/// A first login that never answers ends with the budget, naming the login and the cause:
/// it took `send.timeout` (10 s) whatever the budget.
#[test]
fn a_login_that_hangs_ends_with_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let server = raw_server(Behaviour::Silent);
    let spec = dir.path().join("ping.yaml");
    std::fs::write(&spec, PING_DOCUMENT).unwrap();
    std::fs::write(
        dir.path().join("probe.toml"),
        "[[identity]]\nname = \"alice\"\n[identity.login]\npath = \"/login\"\n\
         json = { user = \"alice\", password = \"pa55-w0rd\" }\ntoken = \"/access_token\"\n",
    )
    .unwrap();
    let started = Instant::now();
    let out = run(probe(dir.path()).args([
        "run",
        "--spec",
        spec.to_str().unwrap(),
        "--url",
        &server.url(),
        "--budget",
        "2s",
        "--store",
        "store",
    ]));
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(took < Duration::from_secs(3), "took {took:?}");
    assert_eq!(code(&out), 2, "{stderr}");
    assert!(
        stderr.contains(
            "identity `alice`: the login POST /login got no answer before the run's budget ran out"
        ),
        "{stderr}"
    );
}

/// When some requests are answered and others are not, each kind of failure is one
/// finding per operation, in report.json and JUnit, and the counts say how many.
#[test]
fn some_answers_missing_are_transport_findings() {
    let (out, report, junit, _) = run_against(
        Behaviour::ThirdReset,
        &["--requests", "60", "--workers", "1"],
    );
    assert_eq!(code(&out), 1);
    let transport: Vec<&Value> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["oracle"] == "transport_failure")
        .collect();
    assert_eq!(transport.len(), 2, "one per operation: {transport:?}");
    assert!(report["totals"]["requests_answered"].as_u64().unwrap() > 0);
    assert!(
        report["operations"][0]["transport"]["reset"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert!(junit.contains("type=\"transport_failure\""));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("no HTTP answer:"), "{stdout}");
}

/// Options that would run nothing, or nothing useful, are usage errors naming the option.
#[test]
fn options_that_would_run_nothing_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("ping.yaml");
    std::fs::write(&spec, PING_DOCUMENT).unwrap();
    for (args, says) in [
        (vec!["--workers", "0"], "--workers 0"),
        (vec!["--budget", "0s"], "--budget `0s`"),
        (vec!["--requests", "0"], "--requests 0"),
        (vec!["--set", "send.timeout=0s"], "send.timeout"),
    ] {
        let out = run(probe(dir.path())
            .args([
                "run",
                "--spec",
                spec.to_str().unwrap(),
                "--url",
                "http://127.0.0.1:1",
                "--store",
                "store",
            ])
            .args(&args));
        assert_eq!(code(&out), 2, "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(says),
            "{args:?}"
        );
    }
    // An id that names nothing is a usage error too.
    let out = run(probe(dir.path()).args([
        "run",
        "--spec",
        spec.to_str().unwrap(),
        "--url",
        "http://127.0.0.1:1",
        "--store",
        "store",
        "--requests",
        "3",
    ]));
    assert_eq!(code(&out), 3);
    for cmd in [
        vec!["show", "deadbeef"],
        vec!["replay", "deadbeef"],
        vec!["recheck", "deadbeef"],
        vec!["diff", "deadbeef", "feedface"],
    ] {
        let out = run(probe(dir.path()).args(["--store", "store"]).args(&cmd));
        assert_eq!(code(&out), 2, "{cmd:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("deadbeef"),
            "{cmd:?}"
        );
    }
}

/// A document URL that cannot be fetched fails naming the cause.
#[test]
fn a_document_url_that_cannot_be_fetched_names_the_cause() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(probe(dir.path()).args(["spec", "http://127.0.0.1:1/openapi.json"]));
    assert_eq!(code(&out), 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the connection was refused (nothing listens there)"),
        "{stderr}"
    );
}

/// A document nested 200,000 deep is refused in well under a second, naming the limit.
#[test]
fn a_deeply_nested_document_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("deep.json");
    std::fs::write(
        &spec,
        format!("{}{}", "[".repeat(200_000), "]".repeat(200_000)),
    )
    .unwrap();
    let started = Instant::now();
    let out = run(probe(dir.path()).args(["spec", spec.to_str().unwrap()]));
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(code(&out), 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("nests deeper than 256 levels"));
}

/// An endless document (`--spec /dev/zero`) is refused at the cap on what probe reads, with
/// the address space held to 200 MB: before the cap, it read until memory ran out (2.1 GB
/// where nothing limited it).
#[cfg(target_os = "linux")]
#[test]
fn an_endless_document_is_refused_within_200_mb() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(std::process::Command::new("bash")
        .current_dir(dir.path())
        .arg("-c")
        .arg(format!(
            "ulimit -v 200000 && exec {} spec /dev/zero",
            env!("CARGO_BIN_EXE_probe")
        )));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 2, "{err}");
    assert!(
        err.contains("/dev/zero") && err.contains("larger than 100 MiB"),
        "{err}"
    );
}

/// What a hostile API sends is printed escaped: a 500 whose body sets the terminal's title
/// and clears its screen was printed raw in the summary.
#[test]
fn escape_sequences_from_the_api_are_printed_escaped() {
    use axum::routing::get;
    const HOSTILE: &str = "\u{1b}]0;pwned\u{7}\u{1b}[2J\u{1b}[1Aboom\u{202e}";
    let router = axum::Router::new().route(
        "/ping",
        get(|| async { (axum::http::StatusCode::INTERNAL_SERVER_ERROR, HOSTILE) }),
    );
    let fixture = probe::fixture::RunningFixture::start(router).expect("fixture starts");
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("ping.yaml");
    std::fs::write(&spec, PING_DOCUMENT).unwrap();
    let out = run(probe(dir.path())
        .args(["run", "--spec"])
        .arg(&spec)
        .args(["--url", &fixture.base_url(), "--requests", "20"])
        .args(["--include", "ping", "--store", "store"]));
    assert_eq!(code(&out), 1, "the 500 is a finding");
    for (name, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        assert!(!bytes.contains(&0x1b), "{name} holds a raw escape");
        assert!(!bytes.contains(&0x07), "{name} holds a raw bell");
        assert!(
            !String::from_utf8_lossy(bytes).contains('\u{202e}'),
            "{name} holds a raw bidi override"
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\\x1b]0;pwned\\x07"), "{text}");
}

/// A run that tested nothing never passes: one whose budget ends before anything is
/// answered, and one against an API that answers every request "wait" (429 with
/// `Retry-After: 0`), which probe also stops hammering (41,028 requests in 5 s before).
#[test]
fn a_run_that_tested_nothing_does_not_pass() {
    use axum::routing::{get, post};
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("ping.yaml");
    std::fs::write(&spec, PING_DOCUMENT).unwrap();
    let ok = axum::Router::new()
        .route("/ping", get(|| async { axum::Json(serde_json::json!({})) }))
        .route(
            "/pong",
            post(|| async { axum::Json(serde_json::json!({})) }),
        );
    let fixture = probe::fixture::RunningFixture::start(ok).expect("fixture starts");
    let out = run(probe(dir.path())
        .args(["run", "--spec"])
        .arg(&spec)
        .args(["--url", &fixture.base_url(), "--budget", "1ns"])
        .args(["--store", "store"]));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 3, "{err}");
    assert!(err.contains("nothing of the API was tested"), "{err}");

    let wait = || async {
        (
            axum::http::StatusCode::TOO_MANY_REQUESTS,
            [("retry-after", "0")],
            "slow down",
        )
    };
    // A gateway in front of the API that throttles everything, whatever the method or path.
    let busy = axum::Router::new().fallback(wait);
    let fixture = probe::fixture::RunningFixture::start(busy).expect("fixture starts");
    let report = dir.path().join("busy.json");
    let out = run(probe(dir.path())
        .args(["run", "--spec"])
        .arg(&spec)
        .args(["--url", &fixture.base_url(), "--budget", "4s"])
        .args(["--store", "store", "--report"])
        .arg(&report));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 3, "{err}");
    assert!(err.contains("429 Too Many Requests or 503"), "{err}");
    let requests = read_json(&report)["totals"]["requests"].as_u64().unwrap();
    assert!(
        requests < 200,
        "{requests} requests in 4 s to an API that answers every one 429"
    );
}

/// A token the API echoes inside a gzip body it sent unasked is not kept recoverable:
/// gunzipping the exported bodies gave the live token in 368 of 600 entries.
#[test]
fn a_credential_echoed_in_a_gzip_body_is_not_kept() {
    use base64::Engine as _;
    let dir = tempfile::tempdir().unwrap();
    let server = raw_server(Behaviour::GzipEcho);
    let spec = dir.path().join("echo.yaml");
    std::fs::write(&spec, ECHO_DOCUMENT).unwrap();
    let out = run(probe(dir.path()).args([
        "run",
        "--spec",
        spec.to_str().unwrap(),
        "--url",
        &server.url(),
        "--bearer",
        BEARER,
        "--include",
        "echoBearer",
        "--requests",
        "40",
        "--store",
        "store",
        "--report",
        "report.json",
    ]));
    assert!(matches!(code(&out), 0 | 1), "the run completes");
    let report = read_json(&dir.path().join("report.json"));
    let run_id = report["run"]["id"].as_str().unwrap().to_owned();
    let har = dir.path().join("run.har");
    let exported = run(probe(dir.path()).args([
        "export",
        &run_id,
        "--format",
        "har",
        "--store",
        "store",
        "-o",
        har.to_str().unwrap(),
    ]));
    assert_eq!(code(&exported), 0);
    let har = read_json(&har);
    let entries = har["log"]["entries"].as_array().unwrap();
    assert!(!entries.is_empty());
    let mut decoded_bodies = 0;
    for entry in entries {
        let content = &entry["response"]["content"];
        let Some(text) = content["text"].as_str() else {
            continue;
        };
        let mut bytes = if content["encoding"] == "base64" {
            base64::engine::general_purpose::STANDARD
                .decode(text)
                .unwrap()
        } else {
            text.as_bytes().to_vec()
        };
        if bytes.starts_with(&[0x1f, 0x8b]) {
            let mut plain = Vec::new();
            flate2::read::MultiGzDecoder::new(&bytes[..])
                .read_to_end(&mut plain)
                .unwrap();
            bytes = plain;
        }
        decoded_bodies += 1;
        for form in forms(BEARER) {
            assert_eq!(
                hits(&bytes, &form),
                0,
                "a body decodes to the token: {}",
                String::from_utf8_lossy(&bytes)
            );
        }
    }
    assert!(decoded_bodies > 0, "bodies were exported");
    assert!(
        findings_of_oracle(&report, "credential_reflected") >= 1,
        "the reflection itself is reported"
    );
}

fn findings_of_oracle(report: &Value, oracle: &str) -> usize {
    report["findings"]
        .as_array()
        .map(|all| all.iter().filter(|f| f["oracle"] == oracle).count())
        .unwrap_or(0)
}

/// A credential given on the command line that also appears in the document (a token
/// pasted into an example) is not kept in the stored document, nor printed by
/// `probe show` of it.
#[test]
fn a_credential_written_in_the_document_is_not_kept_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let server = raw_server(Behaviour::Echo);
    let spec = dir.path().join("echo.yaml");
    let document = ECHO_DOCUMENT.replace(
        "info: {title: echo, version: \"1\"}",
        &format!(
            "info: {{title: echo, version: \"1\", description: \"try it: Authorization: Bearer {BEARER}\"}}"
        ),
    );
    assert!(document.contains(BEARER));
    std::fs::write(&spec, &document).unwrap();
    let out = run(probe(dir.path()).args([
        "run",
        "--spec",
        spec.to_str().unwrap(),
        "--url",
        &server.url(),
        "--bearer",
        BEARER,
        "--include",
        "echoBearer",
        "--requests",
        "20",
        "--store",
        "store",
        "--report",
        "report.json",
    ]));
    assert!(matches!(code(&out), 0 | 1), "the run completes");
    let report = read_json(&dir.path().join("report.json"));
    let document_id = report["run"]["document_id"].as_str().unwrap().to_owned();
    let shown = run(probe(dir.path()).args(["show", &document_id, "--store", "store"]));
    assert_eq!(code(&shown), 0);
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.contains("try it: Authorization: Bearer <probe:secret>"),
        "{shown}"
    );
    let mut leaks = Vec::new();
    for form in forms(BEARER) {
        for (name, bytes) in &everything_written(dir.path()) {
            if name.ends_with("echo.yaml") {
                continue;
            }
            let n = hits(bytes, &form);
            if n > 0 {
                leaks.push(format!("{name}: {n} × {}", String::from_utf8_lossy(&form)));
            }
        }
    }
    assert!(
        leaks.is_empty(),
        "the token was kept:\n{}",
        leaks.join("\n")
    );
}
