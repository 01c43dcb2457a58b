//! Remote-store benchmark (issue 47): recording into an S3-compatible server against
//! recording into a local store, side by side in one process, and `diff` of two campaigns
//! held remotely against the same `diff` of a local store.
//!
//! Run with `cargo bench --bench remote` (`-- --quick`: 20,000 interactions a run instead
//! of 100,000). It needs moto's S3 server (`pip install 'moto[server]'`, binary
//! `moto_server`, or `PROBE_MOTO_SERVER`), which it starts on 127.0.0.1 on a free port and
//! stops at the end; without it, it says so and measures nothing. Figures:
//! - **recording rate** remote ÷ local: two synthetic runs (`store::synthetic::write_run`)
//!   written into a local store, then into the cache of `s3://bench/p` with the run's
//!   background uploader (`remote::upload::Uploader`) around each, its final upload
//!   included in the time;
//! - **bytes uploaded ÷ local store size**: every object under the prefix against every
//!   file of the local store holding the same two runs;
//! - **requests per 1,000 interactions**: the uploader's requests (its lock's 4 more);
//! - **diff**: `probe diff A B` (the binary) on the local store, and on `s3://bench/p`
//!   from an empty cache (cold: it pulls both runs) and again with that cache (second).
//!
//! Goals (the issue): recording ≥ 0.9× local; bytes ≤ 1.05×; second diff ≤ 1.5× local.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use probe::remote::upload::Uploader;
use probe::remote::{Remote, RemoteUrl};
use probe::store::{synthetic, Store};

const URL: &str = "s3://bench/p";

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    v[v.len() / 2]
}

/// moto's server on 127.0.0.1, killed when dropped.
struct Moto(Child, u16);

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One unsigned request (moto takes them); the status line.
fn http(port: u16, method: &str, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    text.lines().next().map(str::to_owned)
}

fn start_moto() -> Option<Moto> {
    let port = TcpListener::bind("127.0.0.1:0")
        .ok()?
        .local_addr()
        .ok()?
        .port();
    let bin = std::env::var("PROBE_MOTO_SERVER").unwrap_or_else(|_| "moto_server".into());
    let child = Command::new(bin)
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let moto = Moto(child, port);
    let deadline = Instant::now() + Duration::from_secs(30);
    while http(port, "GET", "/").is_none() {
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Some(moto)
}

/// Bytes of every file under `dir`.
fn size_of(dir: &Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let meta = entry.metadata().expect("metadata");
        total += if meta.is_dir() {
            size_of(&entry.path())
        } else {
            meta.len()
        };
    }
    total
}

/// Seconds of one `probe --store STORE diff A B` with the cache under `cache`.
fn diff(store: &str, a: &str, b: &str, cache: &Path) -> f64 {
    let t0 = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_probe"))
        .args(["--store", store, "diff", a, b])
        .env("XDG_CACHE_HOME", cache)
        .output()
        .expect("probe runs");
    let secs = t0.elapsed().as_secs_f64();
    assert!(
        out.status.code().unwrap_or(99) <= 1,
        "diff on {store}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    secs
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let n: u64 = if quick { 20_000 } else { 100_000 };
    let Some(moto) = start_moto() else {
        println!(
            "probe remote benchmark: skipped, moto_server is not installed (pip install 'moto[server]', or set PROBE_MOTO_SERVER)"
        );
        return;
    };
    let status = http(moto.1, "PUT", "/bench").unwrap_or_default();
    assert!(status.starts_with("HTTP/1.1 200"), "bucket: {status}");
    // Before any thread: the client and the child processes take these.
    std::env::set_var("AWS_ACCESS_KEY_ID", "bench");
    std::env::set_var("AWS_SECRET_ACCESS_KEY", "bench");
    std::env::set_var("AWS_REGION", "us-east-1");
    std::env::set_var("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{}", moto.1));
    std::env::remove_var("AWS_PROFILE");
    let url = RemoteUrl::parse(URL).expect("url");
    let tmp = tempfile::tempdir().expect("temp dir");

    // Local: two runs.
    let local = tmp.path().join("local");
    let mut local_secs = 0.0;
    let mut ids = Vec::new();
    {
        let store = Store::open(&local).expect("local store");
        for (seed, start) in [(1, 1_000), (2, 2_000)] {
            let t0 = Instant::now();
            ids.push(synthetic::write_run(&store, seed, n, start).expect("local run"));
            local_secs += t0.elapsed().as_secs_f64();
        }
    }
    // Remote: the same two runs into the cache, each with its uploader, final upload
    // included.
    let cache = tmp.path().join("writer-cache");
    let mut remote_secs = 0.0;
    let mut requests = 0;
    let mut uploaded_packs = 0;
    for (seed, start) in [(1, 1_000), (2, 2_000)] {
        let t0 = Instant::now();
        let uploader = Uploader::start(cache.clone(), &url).expect("uploader");
        {
            let store = Store::open(&cache).expect("cache store");
            synthetic::write_run(&store, seed, n, start).expect("remote run");
        }
        let (pushed, up) = uploader.finish(&cache);
        pushed.expect("upload");
        remote_secs += t0.elapsed().as_secs_f64();
        requests += up.requests;
        uploaded_packs += up.packs;
    }
    let interactions = 2 * n;
    println!(
        "probe remote benchmark: two synthetic runs of {n} interactions each, moto_server on 127.0.0.1"
    );
    println!(
        "recording: local {:.2}s ({:.0}/s), into {URL} {:.2}s ({:.0}/s) incl. the final upload: remote/local rate {:.2}x",
        local_secs,
        interactions as f64 / local_secs,
        remote_secs,
        interactions as f64 / remote_secs,
        local_secs / remote_secs
    );
    let remote = Remote::connect(&url).expect("client");
    let mut bucket_bytes = 0;
    for dir in ["packs", "dicts", "segments", "reports", "locks"] {
        bucket_bytes += remote
            .list(dir)
            .expect("list")
            .iter()
            .map(|l| l.size)
            .sum::<u64>();
    }
    bucket_bytes += remote
        .get("FORMAT")
        .expect("FORMAT")
        .map_or(0, |b| b.len() as u64);
    let local_bytes = size_of(&local);
    println!(
        "bytes: uploaded {bucket_bytes} (every object under the prefix; {uploaded_packs} packs), local store {local_bytes}: {:.3}x",
        bucket_bytes as f64 / local_bytes as f64
    );
    println!(
        "requests: {requests} for {interactions} interactions, {:.3} per 1,000 (the uploaders' locks: 4 more each)",
        requests as f64 * 1000.0 / interactions as f64
    );

    // diff of the two runs: local, then remote cold (empty cache) and second (that cache).
    let (a, b) = (ids[0].0.to_hex(), ids[1].0.to_hex());
    let reps = if quick { 3 } else { 5 };
    let local_dir = local.to_str().expect("utf-8 path").to_owned();
    let none = tmp.path().join("no-cache");
    let mut t_local = Vec::new();
    let mut t_cold = Vec::new();
    let mut t_second = Vec::new();
    for rep in 0..reps {
        t_local.push(diff(&local_dir, &a, &b, &none));
        let cache = tmp.path().join(format!("reader-cache-{rep}"));
        t_cold.push(diff(URL, &a, &b, &cache));
        t_second.push(diff(URL, &a, &b, &cache));
    }
    let (l, c, s) = (median(t_local), median(t_cold), median(t_second));
    println!(
        "diff of the two runs, medians of {reps}: local {l:.3}s; {URL} cold cache {c:.3}s ({:.2}x local), second {s:.3}s ({:.2}x local)",
        c / l,
        s / l
    );
    drop(moto);
}
