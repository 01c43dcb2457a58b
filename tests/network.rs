//! The networks APIs live behind (issue 50):
//! - an HTTPS API on a CA of its own, made here with rcgen: without a flag the run reaches
//!   nothing and says which certificate problem stopped it; with `--cacert` it is trusted;
//!   with `--insecure` it is reached and the summary and report.json say nothing was
//!   verified;
//! - an API that asks for a client certificate: refused without one, reached with
//!   `--client-cert` and `--client-key`;
//! - HTTP/2: spoken with `--http2` when the server offers it (ALPN), HTTP/1.1 otherwise;
//! - a forward proxy written here sees every request with `--proxy URL` (and with
//!   `--proxy env` and `HTTP_PROXY`), and none without, whatever `HTTP_PROXY` says.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};

use axum::http::Version;
use axum::routing::get;
use axum::{Json, Router};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose, SanType,
};
use serde_json::{json, Value};
use tokio_rustls::rustls;

use crate::util::{code, probe, read_json, run};

const DOCUMENT: &str = r#"
openapi: 3.0.3
info: {title: behind, version: "1"}
paths:
  /ping:
    get:
      operationId: ping
      responses:
        "200":
          description: pong
          content:
            application/json:
              schema: {type: object, properties: {ok: {type: boolean}}}
  /items/{id}:
    get:
      operationId: getItem
      parameters:
        - {name: id, in: path, required: true, schema: {type: integer, minimum: 1, maximum: 9}}
      responses:
        "200":
          description: an item
          content:
            application/json:
              schema: {type: object}
"#;

/// The HTTP versions requests came in on.
type Versions = Arc<Mutex<Vec<Version>>>;

fn router(versions: Versions) -> Router {
    let ping = versions.clone();
    Router::new()
        .route(
            "/ping",
            get(move |version: Version| async move {
                ping.lock().unwrap().push(version);
                Json(json!({"ok": true}))
            }),
        )
        .route(
            "/items/{id}",
            get(move |version: Version| async move {
                versions.lock().unwrap().push(version);
                Json(json!({"id": 1}))
            }),
        )
}

/// A CA of the test's own, and certificates it signs.
struct Authority {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl Authority {
    fn new(name: &str) -> Authority {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        Authority { issuer }
    }

    fn pem(&self) -> String {
        self.issuer.pem()
    }

    fn der(&self) -> rustls::pki_types::CertificateDer<'static> {
        self.issuer.der().clone()
    }

    /// A certificate for 127.0.0.1 (a server) or for a client: its PEM and key.
    fn sign(&self, server: bool) -> (rustls::pki_types::CertificateDer<'static>, String, KeyPair) {
        let mut params = CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
        params
            .subject_alt_names
            .push(SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)));
        params.distinguished_name.push(
            DnType::CommonName,
            if server { "127.0.0.1" } else { "probe" },
        );
        params.extended_key_usages = vec![if server {
            ExtendedKeyUsagePurpose::ServerAuth
        } else {
            ExtendedKeyUsagePurpose::ClientAuth
        }];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (cert.der().clone(), cert.pem(), key)
    }
}

/// Accepts TLS connections for axum; a handshake that fails is noted and skipped.
struct TlsListener {
    tcp: tokio::net::TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    failures: Arc<Mutex<Vec<String>>>,
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let Ok((tcp, addr)) = self.tcp.accept().await else {
                continue;
            };
            match self.acceptor.accept(tcp).await {
                Ok(tls) => return (tls, addr),
                Err(e) => self.failures.lock().unwrap().push(e.to_string()),
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}

/// An HTTPS API on 127.0.0.1 with a certificate of `server_ca`, asking for a client
/// certificate of `client_ca` when given, offering `h2` and `http/1.1`.
struct HttpsApi {
    url: String,
    versions: Versions,
    failures: Arc<Mutex<Vec<String>>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl HttpsApi {
    fn start(server_ca: &Authority, client_ca: Option<&Authority>) -> HttpsApi {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .unwrap();
        let builder = match client_ca {
            Some(ca) => {
                let mut roots = rustls::RootCertStore::empty();
                roots.add(ca.der()).unwrap();
                let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                    Arc::new(roots),
                    provider,
                )
                .build()
                .unwrap();
                builder.with_client_cert_verifier(verifier)
            }
            None => builder.with_no_client_auth(),
        };
        let (cert, _, key) = server_ca.sign(true);
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into());
        let mut config = builder.with_single_cert(vec![cert], key).unwrap();
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));

        let versions = Versions::default();
        let failures = Arc::new(Mutex::new(Vec::new()));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (ready, address) = std::sync::mpsc::channel();
        let app = router(versions.clone());
        let noted = failures.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                ready.send(tcp.local_addr().unwrap()).unwrap();
                let listener = TlsListener {
                    tcp,
                    acceptor,
                    failures: noted,
                };
                let _ = axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = stopped.await;
                    })
                    .await;
            });
        });
        let addr = address.recv().unwrap();
        HttpsApi {
            url: format!("https://{addr}"),
            versions,
            failures,
            stop: Some(stop),
        }
    }
}

impl Drop for HttpsApi {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// `probe run` of the document against `url` with `extra`; the output and report.json.
fn probe_run(dir: &Path, url: &str, extra: &[&str]) -> (std::process::Output, Value) {
    probe_run_with(dir, url, extra, &[])
}

fn probe_run_with(
    dir: &Path,
    url: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (std::process::Output, Value) {
    let spec = dir.join("behind.yaml");
    std::fs::write(&spec, DOCUMENT).unwrap();
    let report = dir.join("report.json");
    let _ = std::fs::remove_file(&report);
    let mut cmd = probe(dir);
    for name in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "NO_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "no_proxy",
    ] {
        cmd.env_remove(name);
    }
    cmd.envs(env.iter().copied());
    cmd.args(["run", "--spec", spec.to_str().unwrap(), "--url", url])
        .args(["--seed", "5", "--workers", "2", "--requests", "12"])
        .args(["--store", dir.join("store").to_str().unwrap()])
        .args(["--report", report.to_str().unwrap()])
        .args(extra);
    let out = run(&mut cmd);
    let json = if report.exists() {
        read_json(&report)
    } else {
        Value::Null
    };
    (out, json)
}

fn answered(report: &Value) -> u64 {
    report["totals"]["requests_answered"].as_u64().unwrap_or(0)
}

#[test]
fn a_private_ca_is_trusted_with_cacert_and_named_without_it() {
    let ca = Authority::new("probe test CA");
    let api = HttpsApi::start(&ca, None);
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, ca.pem()).unwrap();

    // No flag: nothing reached, and the message says why in words a user can act on.
    let (out, report) = probe_run(dir.path(), &api.url, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 3, "{stderr}");
    assert_eq!(answered(&report), 0);
    assert!(stderr.contains("UnknownIssuer"), "{stderr}");
    assert!(
        stderr.contains("signed by no CA probe trusts") && stderr.contains("--cacert"),
        "{stderr}"
    );

    // --cacert: trusted, answered, and nothing said about verification.
    let ca_arg = ca_file.to_str().unwrap();
    let (out, report) = probe_run(dir.path(), &api.url, &["--cacert", ca_arg]);
    assert!(code(&out) <= 1, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        answered(&report),
        report["totals"]["requests"].as_u64().unwrap()
    );
    assert!(answered(&report) > 0);
    assert_eq!(report["run"]["insecure"], false);
    assert_eq!(report["run"]["settings"]["send.caCert"], ca_arg);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("NOT verified"));

    // --insecure: reached without the CA, and said loudly in both reports.
    let (out, report) = probe_run(dir.path(), &api.url, &["--insecure"]);
    assert!(code(&out) <= 1, "{}", String::from_utf8_lossy(&out.stderr));
    assert!(answered(&report) > 0);
    assert_eq!(report["run"]["insecure"], true);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("TLS certificates were NOT verified (--insecure)"),
        "{stdout}"
    );
}

#[test]
fn a_certificate_file_that_is_not_one_stops_the_run_before_it_starts() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("ca.pem");
    std::fs::write(&bad, "not a certificate").unwrap();
    let (out, _) = probe_run(
        dir.path(),
        "https://127.0.0.1:1",
        &["--cacert", bad.to_str().unwrap()],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 2, "{stderr}");
    assert!(
        stderr.contains("send.caCert") && stderr.contains("holds no certificate"),
        "{stderr}"
    );
    assert!(!dir.path().join("store").exists(), "nothing was stored");

    let (out, _) = probe_run(
        dir.path(),
        "http://127.0.0.1:1",
        &["--proxy", "http://user:pw@127.0.0.1:3128"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 2, "{stderr}");
    assert!(stderr.contains("holds credentials"), "{stderr}");
    assert!(
        !stderr.contains("pw@"),
        "the password is not echoed: {stderr}"
    );
}

#[test]
fn a_server_asking_for_a_client_certificate_takes_the_one_given() {
    let server_ca = Authority::new("probe server CA");
    let client_ca = Authority::new("probe client CA");
    let api = HttpsApi::start(&server_ca, Some(&client_ca));
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, server_ca.pem()).unwrap();
    let (_, cert_pem, key) = client_ca.sign(false);
    let cert_file = dir.path().join("client.pem");
    let key_file = dir.path().join("client.key");
    std::fs::write(&cert_file, cert_pem).unwrap();
    std::fs::write(&key_file, key.serialize_pem()).unwrap();
    let ca_arg = ca_file.to_str().unwrap();

    // Without one: refused in the handshake, and the hint names the flags.
    let (out, report) = probe_run(dir.path(), &api.url, &["--cacert", ca_arg]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 3, "{stderr}");
    assert_eq!(answered(&report), 0);
    assert!(stderr.contains("--client-cert"), "{stderr}");
    assert!(!api.failures.lock().unwrap().is_empty());

    let (out, report) = probe_run(
        dir.path(),
        &api.url,
        &[
            "--cacert",
            ca_arg,
            "--client-cert",
            cert_file.to_str().unwrap(),
            "--client-key",
            key_file.to_str().unwrap(),
        ],
    );
    assert!(code(&out) <= 1, "{}", String::from_utf8_lossy(&out.stderr));
    assert!(answered(&report) > 0);
    assert_eq!(
        answered(&report),
        report["totals"]["requests"].as_u64().unwrap()
    );
}

#[test]
fn http2_is_spoken_when_asked_for_and_offered() {
    let ca = Authority::new("probe test CA");
    let api = HttpsApi::start(&ca, None);
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, ca.pem()).unwrap();
    let ca_arg = ca_file.to_str().unwrap();

    let (out, report) = probe_run(dir.path(), &api.url, &["--cacert", ca_arg]);
    assert!(code(&out) <= 1);
    assert!(answered(&report) > 0);
    let before: Vec<Version> = std::mem::take(&mut *api.versions.lock().unwrap());
    assert!(!before.is_empty());
    assert!(before.iter().all(|v| *v == Version::HTTP_11), "{before:?}");

    let (out, report) = probe_run(dir.path(), &api.url, &["--cacert", ca_arg, "--http2"]);
    assert!(code(&out) <= 1, "{}", String::from_utf8_lossy(&out.stderr));
    assert!(answered(&report) > 0);
    let after = api.versions.lock().unwrap().clone();
    assert!(!after.is_empty());
    assert!(after.iter().all(|v| *v == Version::HTTP_2), "{after:?}");
}

/// A forward proxy on 127.0.0.1: notes each request's target (absolute-form, as a client
/// sends it to a proxy), sends it on with `Connection: close` and relays the answer.
struct ForwardProxy {
    url: String,
    seen: Arc<Mutex<Vec<String>>>,
}

impl ForwardProxy {
    fn start() -> ForwardProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let noted = seen.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                let noted = noted.clone();
                std::thread::spawn(move || {
                    let _ = relay(client, &noted);
                });
            }
        });
        ForwardProxy { url, seen }
    }
}

fn relay(client: TcpStream, seen: &Mutex<Vec<String>>) -> std::io::Result<()> {
    let mut reader = BufReader::new(client.try_clone()?);
    let mut client = client;
    // One request a connection: the answer says `connection: close`.
    {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let mut parts = line.split_whitespace();
        let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        seen.lock().unwrap().push(target.to_owned());
        let url = url::Url::parse(target).map_err(std::io::Error::other)?;
        let mut head = format!(
            "{method} {}{} HTTP/1.1\r\n",
            url.path(),
            url.query().map(|q| format!("?{q}")).unwrap_or_default()
        );
        let mut length = 0usize;
        loop {
            let mut header = String::new();
            reader.read_line(&mut header)?;
            if header == "\r\n" || header.is_empty() {
                break;
            }
            let lower = header.to_ascii_lowercase();
            if lower.starts_with("connection:") || lower.starts_with("proxy-") {
                continue;
            }
            if let Some(n) = lower.strip_prefix("content-length:") {
                length = n.trim().parse().unwrap_or(0);
            }
            head.push_str(&header);
        }
        head.push_str("connection: close\r\n\r\n");
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        let host = format!(
            "{}:{}",
            url.host_str().unwrap_or(""),
            url.port_or_known_default().unwrap_or(80)
        );
        let mut upstream = TcpStream::connect(host)?;
        upstream.write_all(head.as_bytes())?;
        upstream.write_all(&body)?;
        let mut answer = Vec::new();
        upstream.read_to_end(&mut answer)?;
        client.write_all(&answer)?;
        Ok(())
    }
}

#[test]
fn a_proxy_sees_every_request_when_asked_for_and_none_otherwise() {
    let fixture = probe::fixture::RunningFixture::start(router(Versions::default())).unwrap();
    let api = fixture.base_url();
    let proxy = ForwardProxy::start();
    let dir = tempfile::tempdir().unwrap();

    // HTTP_PROXY alone is not used: a proxy is opt-in.
    let (out, report) =
        probe_run_with(dir.path(), &api, &[], &[("HTTP_PROXY", proxy.url.as_str())]);
    assert!(code(&out) <= 1, "{}", String::from_utf8_lossy(&out.stderr));
    assert!(answered(&report) > 0);
    assert!(proxy.seen.lock().unwrap().is_empty());

    // --proxy URL: every request went through it, each to the API's origin.
    let (out, report) = probe_run(dir.path(), &api, &["--proxy", &proxy.url]);
    assert!(code(&out) <= 1, "{}", String::from_utf8_lossy(&out.stderr));
    let requests = report["totals"]["requests"].as_u64().unwrap();
    assert!(requests > 0);
    assert_eq!(answered(&report), requests);
    let seen = std::mem::take(&mut *proxy.seen.lock().unwrap());
    assert_eq!(seen.len() as u64, requests, "{seen:?}");
    assert!(
        seen.iter().all(|t| t.starts_with(&format!("{api}/"))),
        "{seen:?}"
    );
    assert_eq!(report["run"]["settings"]["send.proxy"], proxy.url.as_str());

    // --proxy env: the variable's proxy, and NO_PROXY is honoured.
    let (out, report) = probe_run_with(
        dir.path(),
        &api,
        &["--proxy", "env"],
        &[("HTTP_PROXY", proxy.url.as_str())],
    );
    assert!(code(&out) <= 1, "{}", String::from_utf8_lossy(&out.stderr));
    let requests = report["totals"]["requests"].as_u64().unwrap();
    assert_eq!(
        std::mem::take(&mut *proxy.seen.lock().unwrap()).len() as u64,
        requests
    );
    let (out, report) = probe_run_with(
        dir.path(),
        &api,
        &["--proxy", "env"],
        &[
            ("HTTP_PROXY", proxy.url.as_str()),
            ("NO_PROXY", "127.0.0.1"),
        ],
    );
    assert!(code(&out) <= 1, "{}", String::from_utf8_lossy(&out.stderr));
    assert!(answered(&report) > 0);
    assert!(proxy.seen.lock().unwrap().is_empty());
}

#[test]
fn replay_takes_its_own_network_flags_not_the_runs() {
    let ca = Authority::new("probe test CA");
    let api = HttpsApi::start(&ca, None);
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, ca.pem()).unwrap();
    let ca_arg = ca_file.to_str().unwrap();
    let (out, report) = probe_run(dir.path(), &api.url, &["--cacert", ca_arg]);
    assert!(code(&out) <= 1, "{}", String::from_utf8_lossy(&out.stderr));
    let run_id = report["run"]["id"].as_str().unwrap().to_owned();
    let replay = |extra: &[&str]| {
        let mut cmd = probe(dir.path());
        cmd.args(["replay", &run_id, "--store"])
            .arg(dir.path().join("store"))
            .args(extra);
        run(&mut cmd)
    };

    // The run's CA is not this replay's: no answer, and the problem named.
    let out = replay(&[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(String::from_utf8_lossy(&out.stdout).contains("200 -> no answer"));
    assert!(stderr.contains("UnknownIssuer"), "{stderr}");
    assert!(stderr.contains("--cacert"), "{stderr}");

    for flag in [&["--cacert", ca_arg][..], &["--insecure"]] {
        let out = replay(flag);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
        assert!(!stdout.contains("no answer"), "{stdout}");
        assert!(!String::from_utf8_lossy(&out.stderr).contains("TLS failure"));
    }
}
