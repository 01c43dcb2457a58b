//! Connections the server closes: a server that closes a connection after an answer (as
//! uvicorn does after an unhandled 500) gives no false `transport_failure`, and a server
//! that really resets still does. The fixture servers speak raw HTTP/1.1 over TCP on
//! 127.0.0.1, keep-alive by default, so the close can cross the next request on the wire.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use probe::model::{Interaction, Outcome, TransportErrorKind};
use serde_json::Value;

use crate::util::{code, findings_of, probe, read_json, run, run_id, RawServer};

const DOCUMENT: &str = r#"
openapi: 3.0.3
info: {title: closing, version: "1"}
paths:
  /ok:
    get:
      operationId: fine
      parameters:
        - {name: n, in: query, schema: {type: integer}}
      responses:
        "200": {description: ok, content: {application/json: {schema: {type: object}}}}
  /boom:
    post:
      operationId: boom
      requestBody:
        content:
          application/json:
            schema: {type: object, properties: {note: {type: string, maxLength: 8}}}
      responses:
        "200": {description: ok, content: {application/json: {schema: {type: object}}}}
"#;

/// What the server does.
#[derive(Clone, Copy, Debug)]
enum Behaviour {
    /// Answers `/boom` 500 and closes the connection right after the answer, with
    /// `Connection: close` in it when `header`; answers the rest 200 `{}` and keeps the
    /// connection.
    CloseAfter500 { header: bool },
    /// The first connection answers its first request and closes on the next one
    /// unanswered; every later connection is closed at once, unread.
    ResetAfterFirst,
}

/// A [`RawServer`] serving each connection as `behaviour` says.
fn raw_server(behaviour: Behaviour) -> RawServer {
    RawServer::start(move |stream, n| serve(stream, behaviour, n))
}

/// Reads one request (head and `content-length` body); its target, or `None` at the end.
fn read_request(reader: &mut BufReader<TcpStream>) -> Option<String> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let target = line.split_whitespace().nth(1)?.to_owned();
    let mut len = 0usize;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).ok()? == 0 {
            return None;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.trim().eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().ok()?;
            }
        }
    }
    let mut body = vec![0; len.min(1 << 20)];
    reader.read_exact(&mut body).ok()?;
    Some(target)
}

fn serve(stream: TcpStream, behaviour: Behaviour, n: u64) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let _ = stream.set_nodelay(true);
    if matches!(behaviour, Behaviour::ResetAfterFirst) && n > 0 {
        return;
    }
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    let mut answered = 0u64;
    while let Some(target) = read_request(&mut reader) {
        let reply: &[u8] = match behaviour {
            Behaviour::ResetAfterFirst if answered > 0 => return,
            Behaviour::ResetAfterFirst => {
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}"
            }
            Behaviour::CloseAfter500 { header } if target.starts_with("/boom") => {
                let reply: &[u8] = if header {
                    b"HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: 21\r\nconnection: close\r\n\r\nInternal Server Error"
                } else {
                    b"HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: 21\r\n\r\nInternal Server Error"
                };
                let _ = writer.write_all(reply);
                let _ = writer.flush();
                // Closed right after the answer, as uvicorn does after an unhandled 500.
                return;
            }
            Behaviour::CloseAfter500 { .. } => {
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}"
            }
        };
        if writer
            .write_all(reply)
            .and_then(|()| writer.flush())
            .is_err()
        {
            return;
        }
        answered += 1;
    }
}

/// What one run left.
struct Ran {
    out: std::process::Output,
    report: Value,
    /// Every interaction the store kept, in send order, with its id.
    interactions: Vec<(String, Interaction)>,
    dir: tempfile::TempDir,
}

/// One run of [`DOCUMENT`] against `server`.
fn run_against(server: &RawServer, extra: &[&str]) -> Ran {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("closing.yaml");
    std::fs::write(&spec, DOCUMENT).unwrap();
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
            "--seed",
            "7",
        ])
        .args(extra));
    let report = read_json(&dir.path().join("report.json"));
    let store = probe::store::Store::open_existing(&dir.path().join("store")).unwrap();
    let interactions = store
        .interactions_of(run_id(&report))
        .unwrap()
        .into_iter()
        .map(|row| {
            (
                row.id.0.to_hex(),
                store.get::<Interaction>(row.id.0).unwrap(),
            )
        })
        .collect();
    Ran {
        out,
        report,
        interactions,
        dir,
    }
}

fn is_reset(outcome: &Outcome) -> bool {
    matches!(
        outcome,
        Outcome::TransportError {
            kind: TransportErrorKind::Reset,
            ..
        }
    )
}

/// A server that closes the connection after each 500, with `Connection: close` in the
/// answer or without it: for a few seconds of traffic, resets stay under 0.1% of the
/// requests and none is a `transport_failure`; the requests sent again on a fresh
/// connection say so in the store.
#[test]
fn a_connection_the_server_closed_after_a_500_gives_no_false_transport_failure() {
    for header in [false, true] {
        let server = raw_server(Behaviour::CloseAfter500 { header });
        let Ran {
            out,
            report,
            interactions,
            ..
        } = run_against(&server, &["--budget", "4s", "--workers", "8"]);
        let interactions: Vec<Interaction> = interactions.into_iter().map(|(_, i)| i).collect();
        assert_eq!(code(&out), 1, "header {header}: the 500s are findings");
        let requests = interactions.len();
        let resets = interactions.iter().filter(|i| is_reset(&i.outcome)).count();
        let retried = interactions.iter().filter(|i| i.retried.is_some()).count();
        eprintln!("header {header}: {requests} requests, {resets} resets, {retried} sent again");
        assert!(requests > 500, "header {header}: {requests} requests");
        assert!(
            resets * 1000 < requests,
            "header {header}: {resets} resets in {requests} requests"
        );
        assert_eq!(
            report["totals"]["transport"]["reset"].as_u64().unwrap_or(0),
            resets as u64,
            "header {header}: {}",
            report["totals"]
        );
        let transport = findings_of(&report, "transport_failure");
        assert!(transport.is_empty(), "header {header}: {transport:?}");
        // A request sent again kept its first failure, and the answer is the resend's.
        for i in interactions.iter().filter(|i| i.retried.is_some()) {
            let first = i.retried.as_ref().unwrap();
            assert_eq!(first.kind, TransportErrorKind::Reset, "{first:?}");
            assert!(!first.message.is_empty());
        }
    }
}

/// A reset on a reused connection that a fresh connection resets too is a finding, and
/// the interaction and `probe show` say the request was sent twice; a server that resets
/// every new connection at once still gives `transport_failure`: no false silence.
#[test]
fn a_reset_a_fresh_connection_gets_too_is_a_transport_failure() {
    let server = raw_server(Behaviour::ResetAfterFirst);
    let ran = run_against(&server, &["--requests", "20", "--workers", "1"]);
    let transport = findings_of(&ran.report, "transport_failure");
    assert!(!transport.is_empty(), "{}", ran.report["findings"]);
    // The first connection is reused (it is back in the pool when the next request asks
    // for one): that request is sent once more, on a fresh connection, which is reset
    // too. Nothing after the first request is answered.
    let outline: Vec<String> = ran
        .interactions
        .iter()
        .map(|(_, i)| {
            format!(
                "{} {:?} sent twice: {}",
                i.seq,
                i.outcome.status(),
                i.retried.is_some()
            )
        })
        .collect();
    let sent_twice: Vec<&(String, Interaction)> = ran
        .interactions
        .iter()
        .filter(|(_, i)| i.retried.is_some())
        .collect();
    assert!(!sent_twice.is_empty(), "{outline:?}");
    assert!(
        ran.interactions
            .iter()
            .skip(1)
            .all(|(_, i)| is_reset(&i.outcome)),
        "{outline:?}"
    );
    let (id, _) = sent_twice[0];
    let shown = run(probe(ran.dir.path()).args(["--store", "store", "show", id]));
    let stdout = String::from_utf8_lossy(&shown.stdout);
    assert_eq!(code(&shown), 0);
    assert!(
        stdout.contains("sent again on a fresh connection"),
        "{stdout}"
    );
    assert!(!ran.out.status.success());
}
