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
