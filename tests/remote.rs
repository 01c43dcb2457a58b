//! A store on object storage (`--store s3://…`, docs/remote-store.md) against a real
//! S3-compatible server: moto's (`pip install 'moto[server]'`, binary `moto_server`),
//! started on 127.0.0.1 on an ephemeral port and stopped by its pid. `cargo test` lists
//! these as ignored (a machine with only Rust has no moto); `.ci/run` installs moto and
//! runs them with `--ignored`.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use probe::fixture::{demo, RunningFixture};
use serde_json::Value;

use crate::util::{code, demo_spec, probe, run};

/// A moto server on 127.0.0.1, killed when dropped.
struct Moto {
    child: Child,
    port: u16,
}

impl Moto {
    /// Starts moto_server on a free port and waits (at most 30 s) until it answers.
    fn start() -> Moto {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        Moto::start_on(port)
    }

    fn start_on(port: u16) -> Moto {
        let bin = std::env::var("PROBE_MOTO_SERVER").unwrap_or_else(|_| "moto_server".into());
        let child = Command::new(bin)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("moto_server runs (pip install 'moto[server]')");
        let moto = Moto { child, port };
        let deadline = Instant::now() + Duration::from_secs(30);
        while http(port, "GET", "/").is_none() {
            assert!(
                Instant::now() < deadline,
                "moto_server did not answer in 30 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        moto
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Creates a bucket (moto takes an unsigned request).
    fn bucket(&self, name: &str) {
        let status = http(self.port, "PUT", &format!("/{name}")).expect("moto answers");
        assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    }

    /// Stops the server (SIGKILL, by pid) and waits for it.
    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One plain HTTP/1.1 request to the loopback; the status line, or `None` when nothing
/// listens.
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

/// `probe` in `dir` talking to `moto`, with the cache under `cache` (a fresh directory is
/// a fresh machine's point of view).
fn probe_s3(dir: &Path, moto: &Moto, cache: &Path) -> Command {
    let mut cmd = probe(dir);
    cmd.env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ENDPOINT_URL", moto.endpoint())
        .env_remove("AWS_PROFILE")
        .env("XDG_CACHE_HOME", cache);
    cmd
}

/// A fresh cache directory under `dir`.
fn fresh(dir: &Path) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let path = dir.join(format!("cache-{}", NEXT.fetch_add(1, Ordering::Relaxed)));
    std::fs::create_dir_all(&path).unwrap();
    path
}

/// Runs `args` against `moto` from an empty cache.
fn cold(dir: &Path, moto: &Moto, args: &[&str]) -> Output {
    let cache = fresh(dir);
    run(probe_s3(dir, moto, &cache).args(args))
}

/// The arguments of a `probe run` of the demo against `url`.
fn run_args(url: &str, store: &str, seed: u64, name: &str, extra: &[&str]) -> Vec<String> {
    let requests = if extra.contains(&"--requests") {
        None
    } else {
        Some("200")
    };
    let mut args: Vec<String> = [
        "--store",
        store,
        "run",
        "--spec",
        demo_spec().to_str().unwrap(),
        "--url",
        url,
        "--seed",
        &seed.to_string(),
        "--workers",
        "1",
        "--name",
        name,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if let Some(requests) = requests {
        args.extend(["--requests".to_owned(), requests.to_owned()]);
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

/// The runs `probe log --json` prints.
fn logged(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["data"].clone())
        .collect()
}

const URL: &str = "s3://team/ci";

#[test]
#[ignore = "needs moto_server"]
fn three_processes_record_into_one_bucket_and_every_command_reads_each_run_from_an_empty_cache() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let moto = Moto::start();
    moto.bucket("team");
    let seeds = [11u64, 12, 13];
    // Three machines: a process each, a cache each, an API each, recording at once.
    let fixtures: Vec<RunningFixture> = seeds
        .iter()
        .map(|_| RunningFixture::start(demo::router(demo::Faults::ALL)).unwrap())
        .collect();
    let children: Vec<Child> = seeds
        .iter()
        .zip(&fixtures)
        .map(|(seed, fixture)| {
            let cache = fresh(dir);
            let name = format!("remote-{seed}");
            probe_s3(dir, &moto, &cache)
                .args(run_args(&fixture.base_url(), URL, *seed, &name, &[]))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        eprintln!("{}", String::from_utf8_lossy(&out.stderr));
        assert!(code(&out) <= 1, "a run recorded into {URL} succeeds");
    }
    // The same seeds into a local store, then pushed into the same bucket: `diff` compares
    // each pair from an empty cache.
    let local = dir.join("local");
    for seed in seeds {
        let fixture = RunningFixture::start(demo::router(demo::Faults::ALL)).unwrap();
        let name = format!("local-{seed}");
        let out = run(probe(dir).args(run_args(
            &fixture.base_url(),
            local.to_str().unwrap(),
            seed,
            &name,
            &[],
        )));
        assert!(code(&out) <= 1);
    }
    let push = cold(dir, &moto, &["store", "push", local.to_str().unwrap(), URL]);
    assert_eq!(code(&push), 0);

    let log = cold(dir, &moto, &["--store", URL, "log", "--json"]);
    assert_eq!(code(&log), 0);
    let runs = logged(&log);
    assert_eq!(runs.len(), 6, "three runs recorded remotely, three pushed");
    assert!(runs
        .iter()
        .all(|r| r["outcome"] == "completed" && r["interactions"] == 200));
    let verify = cold(dir, &moto, &["--store", URL, "store", "verify"]);
    assert_eq!(code(&verify), 0);
    assert!(String::from_utf8_lossy(&verify.stdout).contains(": ok"));
    for seed in seeds {
        let (l, r) = (format!("local-{seed}"), format!("remote-{seed}"));
        let diff = cold(dir, &moto, &["--store", URL, "diff", &l, &r, "--json"]);
        assert_eq!(code(&diff), 0);
        let d: Value = serde_json::from_slice(&diff.stdout).unwrap();
        assert_eq!(
            d["data"]["findings"]["gained"],
            Value::Array(vec![]),
            "seed {seed}"
        );
        assert_eq!(
            d["data"]["findings"]["lost"],
            Value::Array(vec![]),
            "seed {seed}"
        );
        assert!(!d["data"]["findings"]["kept"].as_array().unwrap().is_empty());
        for args in [
            vec!["show", r.as_str()],
            vec!["export", "--format", "har", r.as_str()],
            vec!["store", "stats"],
        ] {
            let mut all = vec!["--store", URL];
            all.extend(args.iter().copied());
            let out = cold(dir, &moto, &all);
            assert_eq!(code(&out), 0, "{args:?}");
            assert!(!out.stdout.is_empty(), "{args:?} printed nothing");
        }
        let html = dir.join(format!("{r}.html"));
        let report = cold(
            dir,
            &moto,
            &[
                "--store",
                URL,
                "report",
                "--html",
                html.to_str().unwrap(),
                &r,
            ],
        );
        assert_eq!(code(&report), 0);
        assert!(std::fs::read_to_string(&html).unwrap().contains("<html"));
    }
    // A recheck writes a finding set: pushed, it is there for the next machine.
    let recheck = cold(
        dir,
        &moto,
        &["--store", URL, "recheck", "remote-11", "--json"],
    );
    assert_eq!(code(&recheck), 0);
    let verify = cold(dir, &moto, &["--store", URL, "store", "verify", "--json"]);
    assert_eq!(code(&verify), 0);
    let v: Value = serde_json::from_slice(&verify.stdout).unwrap();
    assert_eq!(v["problems"], Value::Array(vec![]));
}

#[test]
#[ignore = "needs moto_server"]
fn the_store_stopped_mid_run_the_run_finishes_exits_4_and_store_push_completes_it() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let mut moto = Moto::start();
    moto.bucket("team");
    let port = moto.port;
    let fixture = RunningFixture::start(demo::router(demo::Faults::ALL)).unwrap();
    let cache = fresh(dir);
    let child = probe_s3(dir, &moto, &cache)
        .args(run_args(
            &fixture.base_url(),
            URL,
            5,
            "cut-off",
            &["--requests", "1000000", "--budget", "4s"],
        ))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    moto.stop();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stderr}");
    assert_eq!(code(&out), 4, "a store problem");
    assert!(
        stderr.contains(&format!("the upload to {URL} failed")),
        "{stderr}"
    );
    assert!(stderr.contains("probe store push"), "{stderr}");
    // Nothing recorded is lost: the cache has the whole run.
    let cache_dir = std::fs::read_dir(cache.join("probe"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let local_log = run(probe(dir).args(["--store", cache_dir.to_str().unwrap(), "log", "--json"]));
    let local_runs = logged(&local_log);
    assert_eq!(local_runs.len(), 1);
    let interactions = local_runs[0]["interactions"].as_u64().unwrap();
    assert!(interactions > 0);
    assert!(local_runs[0]["ended_ms"].is_u64(), "the run ended");

    // The server back (moto keeps nothing: an empty bucket), `store push` completes it.
    let moto = Moto::start_on(port);
    moto.bucket("team");
    let push =
        run(probe_s3(dir, &moto, &cache).args(["store", "push", cache_dir.to_str().unwrap(), URL]));
    assert_eq!(code(&push), 0);
    let log = cold(dir, &moto, &["--store", URL, "log", "--json"]);
    let runs = logged(&log);
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["interactions"].as_u64(), Some(interactions));
    assert_eq!(runs[0]["id"], local_runs[0]["id"]);
    let verify = cold(dir, &moto, &["--store", URL, "store", "verify"]);
    assert_eq!(code(&verify), 0);
}

#[test]
#[ignore = "needs moto_server"]
fn push_and_pull_move_runs_by_content_and_copy_nothing_twice() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let moto = Moto::start();
    moto.bucket("team");
    // Two machines' stores, one run each, tagged.
    for (store, build) in [("a", "1"), ("b", "2")] {
        let fixture = RunningFixture::start(demo::router(demo::Faults::ALL)).unwrap();
        let tag = format!("build={build}");
        let out = run(probe(dir).args(run_args(
            &fixture.base_url(),
            dir.join(store).to_str().unwrap(),
            7,
            store,
            &["--tag", &tag],
        )));
        assert!(code(&out) <= 1);
        let cache = fresh(dir);
        let push = |json: bool| {
            let mut args = vec!["store", "push", store, URL];
            if json {
                args.push("--json");
            }
            run(probe_s3(dir, &moto, &cache).args(args))
        };
        let first: Value = serde_json::from_slice(&push(true).stdout).unwrap();
        assert_eq!(first["packs"], 1, "one pack for one small run");
        let again = push(false);
        assert_eq!(code(&again), 0);
        assert!(String::from_utf8_lossy(&again.stdout).contains("nothing to push"));
    }
    // One tag's run alone.
    let cache = fresh(dir);
    let pull = |args: &[&str]| {
        let mut all = vec!["store", "pull", URL, "mine", "--json"];
        all.extend_from_slice(args);
        let out = run(probe_s3(dir, &moto, &cache).args(all));
        assert_eq!(code(&out), 0);
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let tagged = pull(&["--tag", "build=2"]);
    assert_eq!(tagged["packs"], 1);
    let log = run(probe(dir).args(["--store", "mine", "log", "--json"]));
    let runs = logged(&log);
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["name"], "b");
    // Then everything: only what is missing comes.
    let all = pull(&[]);
    assert_eq!(all["packs"], 1);
    assert_eq!(all["packs_had"], 1);
    assert_eq!(pull(&[])["packs"], 0);
    let log = run(probe(dir).args(["--store", "mine", "log", "--json"]));
    assert_eq!(logged(&log).len(), 2);
    let verify = run(probe(dir).args(["--store", "mine", "store", "verify"]));
    assert_eq!(code(&verify), 0);
    // A selection that names nothing is a usage error.
    let none = run(probe_s3(dir, &moto, &cache).args([
        "store",
        "pull",
        URL,
        "other",
        "--run",
        "no-such-run",
    ]));
    assert_eq!(code(&none), 2);
}

/// The cache directory a `probe` process made under `cache`, if it made one.
fn cache_store(cache: &Path) -> Option<PathBuf> {
    let entry = std::fs::read_dir(cache.join("probe")).ok()?.next()?.ok()?;
    Some(entry.path())
}

#[test]
#[ignore = "needs moto_server"]
fn a_writer_killed_at_any_moment_leaves_a_store_that_verifies_and_push_completes_it() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let moto = Moto::start();
    moto.bucket("team");
    let fixture = RunningFixture::start(demo::router(demo::Faults::ALL)).unwrap();
    // Moments across a run of 2 s and the upload at its end (a kill after the process
    // ended is a run that ended: it must be whole).
    let moments_ms = [
        100u64, 300, 500, 800, 1100, 1400, 1700, 1900, 2000, 2100, 2200, 2300, 2400, 2600, 2800,
        3100,
    ];
    let mut ended = Vec::new();
    for (i, wait) in moments_ms.iter().enumerate() {
        let cache = fresh(dir);
        let name = format!("killed-{i}");
        let mut child = probe_s3(dir, &moto, &cache)
            .args(run_args(
                &fixture.base_url(),
                URL,
                40 + i as u64,
                &name,
                &["--requests", "1000000", "--budget", "2s"],
            ))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(*wait));
        let finished = child.try_wait().unwrap().is_some();
        // SIGKILL: no destructor, no flush, no last upload.
        let _ = child.kill();
        let _ = child.wait();
        let verify = cold(dir, &moto, &["--store", URL, "store", "verify"]);
        assert_eq!(
            code(&verify),
            0,
            "killed after {wait} ms: {}{}",
            String::from_utf8_lossy(&verify.stdout),
            String::from_utf8_lossy(&verify.stderr)
        );
        if finished {
            ended.push(name);
        }
        // What the killed writer recorded locally, `store push` uploads.
        if let Some(local) = cache_store(&cache) {
            let push = run(probe_s3(dir, &moto, &cache).args([
                "store",
                "push",
                local.to_str().unwrap(),
                URL,
            ]));
            assert_eq!(
                code(&push),
                0,
                "push after a kill at {wait} ms: {}",
                String::from_utf8_lossy(&push.stderr)
            );
        }
    }
    // The next run into the same bucket completes, and every run that ended is whole.
    let args = run_args(&fixture.base_url(), URL, 99, "after", &[]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let after = cold(dir, &moto, &args);
    assert!(
        code(&after) <= 1,
        "{}",
        String::from_utf8_lossy(&after.stderr)
    );
    ended.push("after".to_owned());
    let log = cold(dir, &moto, &["--store", URL, "log", "--json"]);
    assert_eq!(code(&log), 0);
    let runs = logged(&log);
    for name in &ended {
        let run = runs
            .iter()
            .find(|r| r["name"].as_str() == Some(name))
            .unwrap_or_else(|| panic!("run {name} ended, so it is in the store: {runs:?}"));
        assert!(run["ended_ms"].is_u64(), "run {name} is whole: {run}");
        assert!(run["interactions"].as_u64().unwrap_or(0) > 0, "{run}");
    }
    let verify = cold(dir, &moto, &["--store", URL, "store", "verify"]);
    assert_eq!(
        code(&verify),
        0,
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
}

/// One plain HTTP/1.1 request with a body to moto (which takes unsigned requests): what a
/// test writes into the bucket behind probe's back. The status line.
fn http_body(port: u16, method: &str, path: &str, body: &[u8]) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .unwrap();
    s.write_all(body).unwrap();
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    text.lines().next().unwrap_or_default().to_owned()
}

/// Writes a lock object into `URL` as another machine's probe would.
fn plant_lock(moto: &Moto, exclusive: bool, time_ms: u64) -> String {
    let info = probe::remote::lock::LockInfo {
        format: 1,
        exclusive,
        host: "ci-elsewhere".into(),
        pid: 999,
        command: "run".into(),
        time_ms,
    };
    let bytes = info.to_bytes();
    let name = probe::remote::lock::lock_name(&bytes);
    let status = http_body(moto.port, "PUT", &format!("/team/ci/locks/{name}"), &bytes);
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    name
}

/// `probe store gc --json` of `URL` with `grace`, from an empty cache: its exit code and
/// report (or stderr).
fn remote_gc(dir: &Path, moto: &Moto, grace: &str) -> (i32, Value, String) {
    let out = cold(
        dir,
        moto,
        &["--store", URL, "store", "gc", "--json", "--grace", grace],
    );
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let report = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (code(&out), report, stderr)
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// `diff A B` of `URL` from an empty cache finds nothing gained and nothing lost.
fn same_findings(dir: &Path, moto: &Moto, a: &str, b: &str) {
    let diff = cold(dir, moto, &["--store", URL, "diff", a, b, "--json"]);
    assert_eq!(code(&diff), 0, "{}", String::from_utf8_lossy(&diff.stderr));
    let d: Value = serde_json::from_slice(&diff.stdout).unwrap();
    assert_eq!(d["data"]["findings"]["gained"], Value::Array(vec![]));
    assert_eq!(d["data"]["findings"]["lost"], Value::Array(vec![]));
    assert!(!d["data"]["findings"]["kept"].as_array().unwrap().is_empty());
}

/// `store verify` of `URL` from an empty cache is clean.
fn verifies(dir: &Path, moto: &Moto) {
    let verify = cold(dir, moto, &["--store", URL, "store", "verify", "--json"]);
    let v: Value = serde_json::from_slice(&verify.stdout).unwrap_or(Value::Null);
    assert_eq!(code(&verify), 0, "{v}");
    assert_eq!(v["problems"], Value::Array(vec![]));
}

#[test]
#[ignore = "needs moto_server"]
fn gc_beside_a_live_writer_is_refused_and_a_gc_after_it_loses_none_of_its_objects() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let moto = Moto::start();
    moto.bucket("team");
    let fixture = RunningFixture::start(demo::router(demo::Faults::ALL)).unwrap();
    // A writer of about 4 s (400 requests at 100 a second), deterministic from its seed.
    let pace = ["--requests", "400", "--rate-limit", "100"];
    let cache = fresh(dir);
    let mut writer = probe_s3(dir, &moto, &cache)
        .args(run_args(&fixture.base_url(), URL, 21, "live", &pace))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // gc while it records: refused (a gc that ran before the writer took its lock finds
    // nothing to delete, and must not hurt it either). Polled for as long as the writer
    // lives, not for a fixed time: on a loaded machine it may start late.
    let mut refused = None;
    let started = Instant::now();
    while refused.is_none()
        && writer.try_wait().unwrap().is_none()
        && started.elapsed() < Duration::from_secs(120)
    {
        let (code, report, stderr) = remote_gc(dir, &moto, "0s");
        match code {
            4 => refused = Some(stderr),
            0 => assert_eq!(report["packs_deleted"], 0, "{report}"),
            other => panic!("gc exited {other}: {stderr}"),
        }
    }
    let out = writer.wait_with_output().unwrap();
    let Some(refused) = refused else {
        panic!(
            "no gc was refused while the writer lived ({:?}, exit {}): {}",
            started.elapsed(),
            code(&out),
            String::from_utf8_lossy(&out.stderr)
        );
    };
    assert!(refused.contains("is in use by process"), "{refused}");
    assert!(refused.contains("probe run, shared"), "{refused}");
    assert!(
        code(&out) <= 1,
        "the writer records whole: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The writer released its lock: gc runs, and deletes none of its packs.
    let (code_after, report, stderr) = remote_gc(dir, &moto, "0s");
    assert_eq!(code_after, 0, "{stderr}");
    assert_eq!(report["packs_deleted"], 0, "{report}");
    assert_eq!(report["unnamed_packs_deleted"], 0, "{report}");
    assert!(report["packs_kept"].as_u64().unwrap() >= 1, "{report}");
    verifies(dir, &moto);
    // Its findings are those of the same seed recorded into a local store.
    let local = dir.join("local");
    let out = run(probe(dir).args(run_args(
        &fixture.base_url(),
        local.to_str().unwrap(),
        21,
        "local",
        &pace,
    )));
    assert!(code(&out) <= 1);
    let push = cold(dir, &moto, &["store", "push", local.to_str().unwrap(), URL]);
    assert_eq!(code(&push), 0);
    same_findings(dir, &moto, "local", "live");
}

#[test]
#[ignore = "needs moto_server"]
fn gc_ignores_and_deletes_stale_locks_and_is_refused_by_a_fresh_one() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let moto = Moto::start();
    moto.bucket("team");
    let fixture = RunningFixture::start(demo::router(demo::Faults::ALL)).unwrap();
    let args = run_args(&fixture.base_url(), URL, 3, "kept", &[]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    assert!(code(&cold(dir, &moto, &args)) <= 1);
    // A writer's lock not renewed for two hours: its holder is gone.
    plant_lock(&moto, false, now_ms() - 2 * 3600 * 1000);
    let (code, report, stderr) = remote_gc(dir, &moto, "0s");
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(report["stale_locks_deleted"], 1, "{report}");
    assert_eq!(report["packs_deleted"], 0, "{report}");
    let log = cold(dir, &moto, &["--store", URL, "log", "--json"]);
    assert_eq!(logged(&log).len(), 1);
    verifies(dir, &moto);
    // A fresh one (another machine recording now) keeps gc out, naming it.
    plant_lock(&moto, false, now_ms());
    let (code, _, stderr) = remote_gc(dir, &moto, "0s");
    assert_eq!(code, 4, "{stderr}");
    assert!(
        stderr.contains("in use by process 999 on ci-elsewhere (probe run, shared"),
        "{stderr}"
    );
}

#[test]
#[ignore = "needs moto_server"]
fn gc_deletes_what_no_run_reaches_and_second_copies_and_every_run_still_reads_whole() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let moto = Moto::start();
    moto.bucket("team");
    let fixture = RunningFixture::start(demo::router(demo::Faults::ALL)).unwrap();
    // A run, pushed from its store, and again from a merged copy of that store: two
    // segments holding the same objects in different packs.
    let a = dir.join("a");
    let out = run(probe(dir).args(run_args(
        &fixture.base_url(),
        a.to_str().unwrap(),
        8,
        "twice",
        &[],
    )));
    assert!(code(&out) <= 1);
    let merged = dir.join("merged");
    let merge = run(probe(dir).args([
        "store",
        "merge",
        a.to_str().unwrap(),
        "-o",
        merged.to_str().unwrap(),
    ]));
    assert_eq!(code(&merge), 0);
    // A store holding only a blob no run reaches (what a writer killed before its run's
    // start leaves), pushed too.
    let orphan = dir.join("orphan");
    {
        let store = probe::store::Store::open(&orphan).unwrap();
        store.put_blob(b"a body no run names").unwrap();
    }
    for store in [&a, &merged, &orphan] {
        let push = cold(dir, &moto, &["store", "push", store.to_str().unwrap(), URL]);
        assert_eq!(code(&push), 0, "{}", String::from_utf8_lossy(&push.stderr));
    }
    // A pack no segment names (a push killed before its segment).
    let status = http_body(
        moto.port,
        "PUT",
        &format!("/team/ci/packs/{}.pack", "0".repeat(64)),
        b"left by a killed push",
    );
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");

    // Within the grace period nothing goes.
    let (code_young, young, stderr) = remote_gc(dir, &moto, "1h");
    assert_eq!(code_young, 0, "{stderr}");
    assert_eq!(young["packs_deleted"], 0, "{young}");
    assert_eq!(young["unnamed_packs_deleted"], 0, "{young}");
    assert!(young["young_left"].as_u64().unwrap() >= 2, "{young}");

    let (code_gc, report, stderr) = remote_gc(dir, &moto, "0s");
    assert_eq!(code_gc, 0, "{stderr}");
    assert_eq!(report["unnamed_packs_deleted"], 1, "{report}");
    assert!(report["objects_removed"].as_u64().unwrap() >= 1, "{report}");
    assert!(
        report["duplicates_dropped"].as_u64().unwrap() >= 1,
        "{report}"
    );
    assert!(report["packs_deleted"].as_u64().unwrap() >= 2, "{report}");
    assert!(
        report["segments_replaced"].as_u64().unwrap() >= 2,
        "{report}"
    );
    // Nothing a run reaches was lost: the bucket verifies from an empty cache, the run
    // reads whole, alone too (a pull of one run follows what gc replaced).
    verifies(dir, &moto);
    let log = cold(dir, &moto, &["--store", URL, "log", "--json"]);
    let runs = logged(&log);
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["interactions"], 200);
    let mine = dir.join("mine");
    let pull = cold(
        dir,
        &moto,
        &[
            "store",
            "pull",
            URL,
            mine.to_str().unwrap(),
            "--run",
            "twice",
        ],
    );
    assert_eq!(code(&pull), 0);
    let verify = run(probe(dir).args(["--store", mine.to_str().unwrap(), "store", "verify"]));
    assert_eq!(
        code(&verify),
        0,
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
    // A second gc may drop more second copies (local gc keeps a copy that a dropped
    // object of its own block named by place, and drops it the next time, as a local
    // store's second gc does), and still loses nothing.
    let (code_again, again, stderr) = remote_gc(dir, &moto, "0s");
    assert_eq!(code_again, 0, "{stderr}");
    assert_eq!(again["objects_removed"], 0, "{again}");
    assert_eq!(again["unnamed_packs_deleted"], 0, "{again}");
    verifies(dir, &moto);
    same_findings(dir, &moto, "twice", "twice");
}

#[test]
#[ignore = "needs moto_server"]
fn a_run_while_gc_holds_the_store_records_on_and_uploads_once_gc_lets_go() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let moto = Moto::start();
    moto.bucket("team");
    let fixture = RunningFixture::start(demo::router(demo::Faults::ALL)).unwrap();
    // gc's lock on another machine, 4 s short of stale: for those 4 s the store is gc's.
    let expiry = probe::remote::lock::EXPIRY.as_millis() as u64;
    let planted = now_ms() - expiry + 4_000;
    plant_lock(&moto, true, planted);
    let args = run_args(&fixture.base_url(), URL, 6, "waited", &[]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = cold(dir, &moto, &args);
    assert!(
        code(&out) <= 1,
        "the run waits for gc, then uploads: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        now_ms() > planted + expiry,
        "the upload waited until gc's lock was stale"
    );
    let log = cold(dir, &moto, &["--store", URL, "log", "--json"]);
    let runs = logged(&log);
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["interactions"], 200);
    verifies(dir, &moto);
}
