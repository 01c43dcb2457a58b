//! Helpers shared by the integration tests: the built binary in a throwaway directory.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A command running the built `probe` in `dir`, with progress off.
pub fn probe(dir: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_probe"));
    cmd.current_dir(dir)
        .env("PROBE_NO_PROGRESS", "1")
        .env_remove("PROBE_STORE")
        // A test run inside GitHub Actions must not write to the job's own summary.
        .env_remove("GITHUB_STEP_SUMMARY");
    cmd
}

/// Runs and returns the output, printing it when the test fails later.
pub fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("the probe binary runs");
    eprintln!("--- stdout\n{}", String::from_utf8_lossy(&out.stdout));
    eprintln!("--- stderr\n{}", String::from_utf8_lossy(&out.stderr));
    out
}

/// The exit code.
pub fn code(out: &Output) -> i32 {
    out.status.code().unwrap_or(-1)
}

/// The demo document's path.
pub fn demo_spec() -> PathBuf {
    repo().join("fixtures/demo/openapi.yaml")
}

/// Reads a JSON file.
pub fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// One `probe run` of `spec` against `url` into `dir/store`, with `extra` arguments after
/// the common ones; returns the process output and its report.json.
pub struct Campaign<'a> {
    pub spec: &'a Path,
    pub url: &'a str,
    pub seed: u64,
    pub workers: usize,
    pub requests: u64,
}

impl Campaign<'_> {
    pub fn run(&self, dir: &Path, extra: &[&str]) -> (Output, serde_json::Value) {
        use std::sync::atomic::{AtomicU64, Ordering};
        // Every run writes a report of its own, so runs in one directory never mix.
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let report = dir.join(format!(
            "report-{}.json",
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let mut cmd = probe(dir);
        cmd.args([
            "run",
            "--spec",
            self.spec.to_str().expect("utf-8 path"),
            "--url",
            self.url,
            "--seed",
            &self.seed.to_string(),
            "--workers",
            &self.workers.to_string(),
            "--requests",
            &self.requests.to_string(),
            "--store",
            dir.join("store").to_str().expect("utf-8 path"),
            "--report",
            report.to_str().expect("utf-8 path"),
        ]);
        cmd.args(extra);
        let out = run(&mut cmd);
        let json = read_json(&report);
        (out, json)
    }
}

/// One `probe run` of the document at `spec` against `router`, served on loopback, into
/// `dir`, with `extra` arguments after the common ones.
pub fn run_document(
    router: axum::Router,
    spec: &Path,
    dir: &Path,
    seed: u64,
    workers: usize,
    requests: u64,
    extra: &[&str],
) -> (Output, serde_json::Value) {
    let fixture = probe::fixture::RunningFixture::start(router).expect("fixture starts");
    let campaign = Campaign {
        spec,
        url: &fixture.base_url(),
        seed,
        workers,
        requests,
    };
    campaign.run(dir, extra)
}

/// The run id a report.json names.
pub fn run_id(report: &serde_json::Value) -> probe::ids::RunId {
    let hex = report["run"]["id"].as_str().expect("report names its run");
    probe::ids::RunId(probe::ids::Digest::from_hex(hex).expect("a run id"))
}

/// The findings of one oracle in a report.json.
pub fn findings_of<'a>(report: &'a serde_json::Value, oracle: &str) -> Vec<&'a serde_json::Value> {
    report["findings"]
        .as_array()
        .map(|all| all.iter().filter(|f| f["oracle"] == oracle).collect())
        .unwrap_or_default()
}

/// Every file under `dir`, at any depth.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out
}

/// A raw HTTP/1.1 server on 127.0.0.1 (for what a framework would not do: close or reset a
/// connection at a chosen moment, answer malformed bytes): `serve` gets each accepted
/// connection and its number. Stops accepting when dropped, and after two minutes anyway.
pub struct RawServer {
    port: u16,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl RawServer {
    pub fn start(serve: impl Fn(std::net::TcpStream, u64) + Clone + Send + 'static) -> RawServer {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::time::{Duration, Instant};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("addr").port();
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        std::thread::spawn(move || {
            let mut count = 0u64;
            let deadline = Instant::now() + Duration::from_secs(120);
            while !stopped.load(Ordering::Relaxed) && Instant::now() < deadline {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let n = count;
                        count += 1;
                        let _ = stream.set_nonblocking(false);
                        let serve = serve.clone();
                        std::thread::spawn(move || serve(stream, n));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(1)),
                }
            }
        });
        RawServer { port, stop }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for RawServer {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}
