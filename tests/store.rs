//! The store through the real binary: commands, crash safety, damaged fixtures, the
//! committed sample store and the golden vectors.
//!
//! Regenerate the committed fixtures, sample store and vectors with
//! `PROBE_REGENERATE=1 cargo test --test tests store`, then review and commit the diff.

use std::collections::HashSet;
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use probe::ids::{Digest, FindingSetId, RunId};
use probe::model::{Interaction, RunEnd, RunStart, TestCase};
use probe::store::synthetic::{synth_objects, write_run, Synth};
use probe::store::{encode, Blob, Maintenance, ObjectKind, Store, StoreFormat};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_probe")
}

fn probe(store: &Path, args: &[&str]) -> Output {
    Command::new(bin())
        .arg("--store")
        .arg(store)
        .args(args)
        .output()
        .expect("run probe")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn regenerate() -> bool {
    std::env::var_os("PROBE_REGENERATE").is_some()
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            fs::copy(e.path(), target).unwrap();
        }
    }
}

#[test]
fn synth_log_show_verify_stats_gc_reindex() {
    let d = tempfile::tempdir().unwrap();
    let s = d.path().join("st");
    let o = probe(
        &s,
        &["store", "synth", "--interactions", "50", "--seed", "3"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    let o = probe(&s, &["log"]);
    assert!(o.status.success());
    let text = stdout(&o);
    assert!(
        text.contains("synth-3") && text.contains("synthetic-shop.json"),
        "{text}"
    );
    assert!(text.contains("completed"), "{text}");

    let o = probe(&s, &["log", "--json"]);
    let line: serde_json::Value = serde_json::from_str(stdout(&o).lines().next().unwrap()).unwrap();
    assert_eq!(line["type"], "run");
    assert_eq!(line["data"]["interactions"], 50);
    let run_hex = line["data"]["id"].as_str().unwrap().to_owned();
    assert_eq!(run_hex.len(), 64);

    // show: a run by prefix and by name, an interaction with its bodies, a test case.
    let o = probe(&s, &["show", &run_hex[..8]]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout(&o).contains("synthetic-shop.json"));
    let o = probe(&s, &["show", "synth-3", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["type"], "run");
    let first = v["data"]["interactions"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let o = probe(&s, &["show", &first, "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["type"], "interaction");
    let body = &v["data"]["outcome"]["response"]["body"];
    assert!(body["text"].is_string(), "{v}");
    let case = v["data"]["case"].as_str().unwrap().to_owned();
    let o = probe(&s, &["show", &case]);
    assert!(stdout(&o).contains("operation:"), "{}", stdout(&o));
    let o = probe(&s, &["show", &first]);
    assert!(stdout(&o).contains("> "), "{}", stdout(&o));

    let o = probe(&s, &["store", "verify"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let o = probe(&s, &["store", "stats", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(v["objects"].as_u64().unwrap() > 50);
    let o = probe(&s, &["store", "stats"]);
    assert!(stdout(&o).contains("interaction"));
    let o = probe(&s, &["store", "gc"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = probe(&s, &["store", "reindex"]);
    assert!(o.status.success());
    let o = probe(&s, &["log", "--json"]);
    assert!(stdout(&o).contains(&run_hex));
}

#[test]
fn an_absent_store_is_exit_4_with_a_hint() {
    let d = tempfile::tempdir().unwrap();
    let o = probe(&d.path().join("none"), &["log"]);
    assert_eq!(o.status.code(), Some(4));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no store at") && err.contains("hint:"),
        "{err}"
    );
    let o = probe(&d.path().join("none"), &["show", "abcd"]);
    assert_eq!(o.status.code(), Some(4));
}

#[test]
fn an_ambiguous_or_unknown_id_is_an_error_naming_it() {
    let d = tempfile::tempdir().unwrap();
    let s = d.path().join("st");
    assert!(probe(&s, &["store", "synth", "--interactions", "5"])
        .status
        .success());
    let o = probe(&s, &["show", "ffffffffffff"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "an id that names nothing is a usage error"
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("ffffffffffff"));
}

#[test]
fn two_processes_can_write_one_store_at_once() {
    two_processes_write_one_store("1");
}

#[test]
fn two_processes_can_write_one_format_2_store_at_once() {
    two_processes_write_one_store("2");
}

/// Two recorders in two processes write a store of `format` at once: both complete, and
/// the store verifies.
fn two_processes_write_one_store(format: &str) {
    let d = tempfile::tempdir().unwrap();
    let s = d.path().join("st");
    let created = Command::new(bin())
        .env("PROBE_STORE_FORMAT", format)
        .arg("--store")
        .arg(&s)
        .args(["store", "synth", "--interactions", "1"])
        .output()
        .expect("run probe");
    assert!(created.status.success());
    let children: Vec<_> = (0..2)
        .map(|seed| {
            Command::new(bin())
                .arg("--store")
                .arg(&s)
                .args(["store", "synth", "--interactions", "3000", "--seed"])
                .arg((10 + seed).to_string())
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let o = probe(&s, &["store", "verify"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let store = Store::open_existing(&s).unwrap();
    let wanted = format!("probe-store {format}.");
    assert!(fs::read_to_string(s.join("FORMAT"))
        .unwrap()
        .starts_with(&wanted));
    let runs = store.runs().unwrap();
    assert_eq!(runs.len(), 3);
    assert_eq!(runs.iter().map(|r| r.interactions).sum::<u64>(), 6001);
    assert!(runs
        .iter()
        .all(|r| r.outcome.as_deref() == Some("completed")));
}

/// kill -9 at random moments: the store always opens and verifies, and every interaction
/// acknowledged before the kill is there.
#[test]
fn kill_9_never_loses_an_acknowledged_interaction() {
    kill_9_trials("1");
}

/// The same in format 2, whose recorder keeps blocks open across batches and acknowledges
/// only the interactions of blocks appended and indexed.
#[test]
fn kill_9_never_loses_an_acknowledged_interaction_in_format_2() {
    kill_9_trials("2");
}

/// 50 kills of `probe store synth` writing stores of `format`, with a series after every
/// four interactions (a series names interactions recorded just before it).
fn kill_9_trials(format: &str) {
    let d = tempfile::tempdir().unwrap();
    let started = Instant::now();
    // A small deterministic generator for the kill delays (50-500 ms).
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let trials = 50;
    let mut total_acked = 0usize;
    let mut never_created = 0usize;
    for trial in 0..trials {
        // Three crashes in a row per store: writing after a crash is tested too.
        let s = d.path().join(format!("st{}", trial / 3));
        let (mut child, reader) = spawn_synth(Command::new(bin()), format, &s, trial);
        std::thread::sleep(Duration::from_millis(50 + next() % 451));
        child.kill().expect("kill -9");
        child.wait().expect("reap");
        let acked = reader.join().expect("reader");
        total_acked += acked.len();
        // On a loaded machine the kill can come before the process created its store:
        // then nothing was promised and there is nothing to open.
        if acked.is_empty() && !s.join("FORMAT").exists() {
            never_created += 1;
            continue;
        }
        let wanted = format!("probe-store {format}.");
        assert!(fs::read_to_string(s.join("FORMAT"))
            .unwrap()
            .starts_with(&wanted));
        check_after_death(&s, &acked, &format!("kill trial {trial}"));
    }
    assert!(total_acked > 0, "no interaction was ever acknowledged");
    assert!(
        never_created < trials / 2,
        "{never_created} of {trials} kills came before the store existed"
    );
    eprintln!(
        "{trials} kills ({never_created} before the store existed), {total_acked} acknowledged \
         interactions, {:?}",
        started.elapsed()
    );
}

/// The arguments of a synthetic run that goes on until it is stopped, printing each
/// interaction id once it is durable.
fn synth_args(seed: usize) -> Vec<String> {
    [
        "store",
        "synth",
        "--interactions",
        "1000000",
        "--series-every",
        "4",
        "--print-acks",
        "--seed",
    ]
    .iter()
    .map(|a| a.to_string())
    .chain([seed.to_string()])
    .collect()
}

/// Starts `command` (the probe binary, or a shell that runs it) writing an endless
/// synthetic run into the store `s` of `format`, and a thread collecting the ids it
/// acknowledges.
fn spawn_synth(
    mut command: Command,
    format: &str,
    s: &Path,
    seed: usize,
) -> (std::process::Child, std::thread::JoinHandle<Vec<String>>) {
    let mut child = command
        .env("PROBE_STORE_FORMAT", format)
        .arg("--store")
        .arg(s)
        .args(synth_args(seed))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn probe");
    let reader = read_acks(&mut child);
    (child, reader)
}

/// Collects the acknowledged interaction ids `child` prints, until its stdout ends.
fn read_acks(child: &mut std::process::Child) -> std::thread::JoinHandle<Vec<String>> {
    let out = child.stdout.take().expect("piped stdout");
    std::thread::spawn(move || {
        let mut ids = Vec::new();
        for line in BufReader::new(out).lines() {
            match line {
                Ok(l) => ids.push(l),
                Err(_) => break,
            }
        }
        ids
    })
}

/// What a writer's death must leave: `probe store verify` passes, and every interaction
/// acknowledged before it reads back.
fn check_after_death(s: &Path, acked: &[String], trial: &str) {
    let o = probe(s, &["store", "verify"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{trial}: verify failed:\n{}{}",
        stdout(&o),
        String::from_utf8_lossy(&o.stderr)
    );
    let store = Store::open_existing(s).expect("store opens after the death");
    let mut present = HashSet::new();
    for run in store.runs().unwrap() {
        for row in store.interactions_of(run.id).unwrap() {
            present.insert(row.id.0.to_hex());
        }
    }
    for id in acked {
        assert!(
            present.contains(id),
            "{trial}: acknowledged {id} is missing"
        );
        let digest = Digest::from_hex(id).unwrap();
        store.get::<Interaction>(digest).unwrap();
    }
}

/// Death at a write, by the system: the file size limit (`ulimit -f`) reached in the
/// middle of a pack append or an index commit ends the process with SIGXFSZ. Each store
/// is left as the death left it, verifies, and keeps what it acknowledged.
#[cfg(unix)]
#[test]
fn death_at_the_file_size_limit_leaves_a_store_that_verifies() {
    let d = tempfile::tempdir().unwrap();
    let mut died_at_a_write = 0;
    for format in ["1", "2"] {
        for trial in 0..12usize {
            // Limits from 24 KiB to 6 MiB (in the shell's 512-byte blocks): the death comes
            // while the store is created, at its first commits, or later in a pack.
            let blocks = 48 << (trial % 9);
            let s = d.path().join(format!("f{format}-{trial}"));
            let limit = blocks + trial * 7;
            let mut under_limit = Command::new("sh");
            under_limit
                .arg("-c")
                .arg(r#"ulimit -f "$1" && shift && exec "$@""#)
                .arg("sh")
                .arg(limit.to_string())
                .arg(bin());
            let (mut child, reader) = spawn_synth(under_limit, format, &s, trial);
            // Every limit is reached within seconds: the run writes without end.
            let code = wait_bounded(&mut child, Duration::from_secs(60), "a run under a limit");
            let acked = reader.join().expect("reader");
            let name = format!("format {format}, limit {limit} blocks");
            // SIGXFSZ (no code: -1), or an orderly exit after a write refused with EFBIG.
            if code != 0 {
                died_at_a_write += 1;
            }
            if !s.join("FORMAT").exists() {
                assert!(acked.is_empty(), "{name}: acknowledged without a store");
                continue;
            }
            check_after_death(&s, &acked, &name);
        }
    }
    assert!(
        died_at_a_write >= 20,
        "only {died_at_a_write} of 24 runs died at the limit"
    );
}

// ---------------------------------------------------------------------------------------
// Damaged fixtures (fixtures/stores/, see its README).

fn compact_index(store: &Path) {
    // Small committed files: a 512-byte page size and no WAL.
    let c = rusqlite::Connection::open(store.join("index.sqlite")).unwrap();
    c.execute_batch("PRAGMA journal_mode=DELETE; PRAGMA page_size=512; VACUUM;")
        .unwrap();
}

fn clean_store(dir: &Path, seed: u64) -> RunId {
    let store = Store::open_or_create(dir, StoreFormat::One).unwrap();
    write_run(&store, seed, 12, 1_780_000_000_000 + seed).unwrap()
}

fn last_pack(dir: &Path) -> PathBuf {
    let mut p: Vec<PathBuf> = fs::read_dir(dir.join("packs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    p.sort();
    p.pop().unwrap()
}

fn locate(dir: &Path, id: &Digest) -> (u64, u64) {
    let c = rusqlite::Connection::open(dir.join("index.sqlite")).unwrap();
    c.query_row(
        "SELECT offset, stored_len FROM objects WHERE id = ?1",
        [&id.0[..]],
        |r| Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64)),
    )
    .unwrap()
}

/// What each fixture must make verify say, and whether reindex repairs it.
struct Fixture {
    name: &'static str,
    /// Substrings verify must print (object ids among them).
    expect: Vec<String>,
    /// Verify's exit code before any repair.
    exit: i32,
    repaired_by_reindex: bool,
}

fn make_fixtures(root: &Path) -> Vec<Fixture> {
    let _ = fs::remove_dir_all(root);
    fs::create_dir_all(root).unwrap();
    let mut out = Vec::new();

    // missing-object: an interaction whose test case was never stored.
    let dir = root.join("missing-object");
    let run = clean_store(&dir, 1);
    let store = Store::open_existing(&dir).unwrap();
    let mut synth = Synth::new(99);
    let mut objs = synth_objects(&mut synth, run, 100).unwrap();
    let case = objs
        .iter()
        .find(|o| o.kind == ObjectKind::TestCase)
        .unwrap()
        .id;
    objs.retain(|o| o.kind != ObjectKind::TestCase);
    let interaction = objs.last().unwrap().id;
    store.put_encoded(objs).unwrap();
    drop(store);
    out.push(Fixture {
        name: "missing-object",
        expect: vec![format!(
            "interaction {interaction} references missing test_case {case}"
        )],
        exit: 4,
        repaired_by_reindex: false,
    });

    // truncated-frame: the pack ends 3 bytes into the last record's zstd frame.
    let dir = root.join("truncated-frame");
    let run = clean_store(&dir, 2);
    let end = {
        let store = Store::open_existing(&dir).unwrap();
        let c = rusqlite::Connection::open(dir.join("index.sqlite")).unwrap();
        drop(store);
        let bytes: Vec<u8> = c
            .query_row(
                "SELECT id FROM run_ends WHERE run = ?1",
                [&run.0 .0[..]],
                |r| r.get(0),
            )
            .unwrap();
        Digest(bytes.try_into().unwrap())
    };
    let pack = last_pack(&dir);
    let len = fs::metadata(&pack).unwrap().len();
    fs::OpenOptions::new()
        .write(true)
        .open(&pack)
        .unwrap()
        .set_len(len - 3)
        .unwrap();
    out.push(Fixture {
        name: "truncated-frame",
        expect: vec![
            format!("object {end} (run_end) is in the index"),
            "torn tail".into(),
        ],
        exit: 4,
        repaired_by_reindex: true,
    });

    // flipped-byte: one byte in the middle of an interaction's zstd frame.
    let dir = root.join("flipped-byte");
    let run = clean_store(&dir, 3);
    let victim = Store::open_existing(&dir)
        .unwrap()
        .interactions_of(run)
        .unwrap()[5]
        .id
        .0;
    let (offset, stored) = locate(&dir, &victim);
    let pack = last_pack(&dir);
    let mut bytes = fs::read(&pack).unwrap();
    bytes[(offset + 50 + stored / 2) as usize] ^= 0xff;
    fs::write(&pack, bytes).unwrap();
    out.push(Fixture {
        name: "flipped-byte",
        expect: vec![format!("object {victim} (interaction)")],
        exit: 4,
        repaired_by_reindex: false,
    });

    // stale-index: the index of before a gc, which moved every object to a new pack.
    let dir = root.join("stale-index");
    let run = {
        // The orphan goes into the run's pack, so gc rewrites that pack.
        let store = Store::open_or_create(&dir, StoreFormat::One).unwrap();
        let run = write_run(&store, 4, 12, 1_780_000_000_004).unwrap();
        store.put_blob(b"an orphan for gc to drop").unwrap();
        run
    };
    compact_index(&dir);
    let old = fs::read(dir.join("index.sqlite")).unwrap();
    Store::open_for_maintenance(&dir, Maintenance::Gc)
        .unwrap()
        .gc()
        .unwrap();
    fs::write(dir.join("index.sqlite"), old).unwrap();
    out.push(Fixture {
        name: "stale-index",
        expect: vec![format!("object {} (run): the index points at pack", run.0)],
        exit: 4,
        repaired_by_reindex: true,
    });

    // deleted-index: no index.sqlite at all; opening rebuilds it.
    let dir = root.join("deleted-index");
    clean_store(&dir, 6);
    fs::remove_file(dir.join("index.sqlite")).unwrap();
    out.push(Fixture {
        name: "deleted-index",
        expect: vec!["the index was missing; rebuilt it".into()],
        exit: 0,
        repaired_by_reindex: true,
    });

    for f in &out {
        let dir = root.join(f.name);
        if dir.join("index.sqlite").exists() && f.name != "stale-index" {
            compact_index(&dir);
        }
        for suffix in ["-wal", "-shm"] {
            let _ = fs::remove_file(dir.join(format!("index.sqlite{suffix}")));
        }
        drop_lock_files(&dir);
    }
    out
}

/// The store lock and the registry of a store no process has open: left out of the
/// committed fixtures and samples (every open makes them again).
fn drop_lock_files(store: &Path) {
    let _ = fs::remove_file(store.join("lock"));
    let _ = fs::remove_dir_all(store.join("writers"));
}

fn check_fixture(dir: &Path, f: &Fixture) {
    let o = probe(dir, &["store", "verify"]);
    let text = stdout(&o);
    assert_eq!(o.status.code(), Some(f.exit), "{}: {text}", f.name);
    for e in &f.expect {
        assert!(
            text.contains(e.as_str()),
            "{}: expected `{e}` in:\n{text}",
            f.name
        );
    }
    // Reading every run and interaction never panics, damaged or not.
    let o = probe(dir, &["log", "--json"]);
    assert!(o.status.code().is_some(), "{}: log crashed", f.name);
    if let Ok(store) = Store::open_existing(dir) {
        for run in store.runs().unwrap_or_default() {
            for row in store.interactions_of(run.id).unwrap_or_default() {
                let _ = store.get::<Interaction>(row.id.0);
                let _ = store.get::<TestCase>(row.case.0);
            }
            let _ = store.run_end(run.id);
        }
    }
    let o = probe(dir, &["store", "reindex"]);
    assert!(o.status.success(), "{}: reindex failed", f.name);
    let o = probe(dir, &["store", "verify"]);
    if f.repaired_by_reindex {
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}: after reindex:\n{}",
            f.name,
            stdout(&o)
        );
    } else {
        assert_eq!(
            o.status.code(),
            Some(4),
            "{}: after reindex:\n{}",
            f.name,
            stdout(&o)
        );
    }
}

#[test]
fn damaged_fixtures_are_named_by_verify_and_the_index_ones_repaired() {
    let d = tempfile::tempdir().unwrap();
    let fresh = d.path().join("fresh");
    let fixtures = make_fixtures(&fresh);
    let committed = repo().join("fixtures/stores");
    if regenerate() {
        for f in &fixtures {
            let _ = fs::remove_dir_all(committed.join(f.name));
            copy_dir(&fresh.join(f.name), &committed.join(f.name));
        }
    }
    for f in &fixtures {
        // Freshly generated, then the committed copy (in a scratch copy: checks write).
        let scratch = d.path().join("a").join(f.name);
        copy_dir(&fresh.join(f.name), &scratch);
        check_fixture(&scratch, f);
    }
    // The committed copies name other ids (they were made at another time), so only the
    // kind of problem is checked for them.
    for f in &fixtures {
        let src = committed.join(f.name);
        assert!(src.exists(), "fixtures/stores/{} is not committed", f.name);
        let scratch = d.path().join("b").join(f.name);
        copy_dir(&src, &scratch);
        let o = probe(&scratch, &["store", "verify"]);
        assert_eq!(
            o.status.code(),
            Some(f.exit),
            "committed {}: {}",
            f.name,
            stdout(&o)
        );
    }
}

// ---------------------------------------------------------------------------------------
// The sample store of format 1 and the golden vectors.

fn make_sample(dir: &Path) {
    let _ = fs::remove_dir_all(dir);
    let store = Store::open_or_create(dir, StoreFormat::One).unwrap();
    // A dictionary after 2 objects, so the sample holds dictionary-compressed records.
    let opts = probe::store::RecorderOptions {
        train_after: 2,
        ..Default::default()
    };
    let run =
        probe::store::synthetic::write_run_with(&store, 2026, 4, 1_780_000_000_000, opts).unwrap();
    store
        .write_report(run, br#"{"version":1,"findings":[]}"#)
        .unwrap();
    drop(store);
    compact_index(dir);
    drop_lock_files(dir);
}

#[test]
fn the_committed_format_1_sample_store_opens_verifies_and_reads() {
    let committed = repo().join("store-format/samples/format-1");
    if regenerate() {
        make_sample(&committed);
    }
    let d = tempfile::tempdir().unwrap();
    let s = d.path().join("sample");
    copy_dir(&committed, &s);
    let o = probe(&s, &["store", "verify"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let store = Store::open_existing(&s).unwrap();
    let runs = store.runs().unwrap();
    assert_eq!(runs.len(), 1);
    let run = runs[0].id;
    let start: RunStart = store.get(run.0).unwrap();
    store.get::<Blob>(start.document.0).unwrap();
    let rows = store.interactions_of(run).unwrap();
    assert_eq!(rows.len(), 4);
    for row in rows {
        let i: Interaction = store.get(row.id.0).unwrap();
        store.get::<TestCase>(i.case.0).unwrap();
        if let Some(b) = &i.request.body {
            store.body_bytes(b).unwrap();
        }
        if let Some(b) = i.outcome.response().and_then(|r| r.body.as_ref()) {
            store.body_bytes(b).unwrap();
        }
    }
    let end: RunEnd = store.run_end(run).unwrap().unwrap();
    store
        .get::<probe::model::FindingSet>(end.findings.0)
        .unwrap();
    assert!(s.join("reports").join(format!("{}.json", run.0)).exists());
    assert!(
        s.join("dicts").read_dir().unwrap().count() > 0,
        "the sample has dictionaries"
    );
    // Reindexing the sample gives the same answers as its committed index.
    let before = (store.runs().unwrap(), store.interactions_of(run).unwrap());
    drop(store);
    let store = Store::open_for_maintenance(&s, Maintenance::Reindex).unwrap();
    store.reindex().unwrap();
    assert_eq!(
        before,
        (store.runs().unwrap(), store.interactions_of(run).unwrap())
    );
}

/// Every object's (id, kind tag, pack, offset) as the index answers through `objects`
/// (a table in schema 1, a view since schema 2), sorted.
fn indexed_objects(index: &Path) -> Vec<(Vec<u8>, u8, String, i64)> {
    let c = rusqlite::Connection::open(index).unwrap();
    let mut st = c
        .prepare(
            "SELECT o.id, o.kind, (SELECT name FROM packs p WHERE p.id = o.pack), o.offset
             FROM objects o ORDER BY o.id",
        )
        .unwrap();
    let rows = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap();
    rows.map(Result::unwrap).collect()
}

/// The `schema_version` an index file records.
fn index_schema(path: &Path) -> String {
    rusqlite::Connection::open(path)
        .unwrap()
        .query_row(
            "SELECT value FROM meta WHERE key = 'schema_version'",
            [],
            |r| r.get(0),
        )
        .unwrap()
}

/// Opens a copy of a committed sample whose index has schema `from`, and holds the
/// migration to this build's schema: the message, every object named where it was, test
/// cases and interactions in their own rows only, every interaction id in `interaction_ids`,
/// the store readable, and a rebuild from the packs giving the same index.
fn migrates_in_place(sample: &str, from: &str) {
    let d = tempfile::tempdir().unwrap();
    let s = d.path().join("sample");
    copy_dir(&repo().join("store-format/samples").join(sample), &s);
    let index = s.join("index.sqlite");
    assert_eq!(
        index_schema(&index),
        from,
        "the committed sample keeps its schema-{from} index"
    );
    let before = indexed_objects(&index);
    assert!(before.iter().any(|o| o.1 == 2) && before.iter().any(|o| o.1 == 3));
    let o = probe(&s, &["store", "verify"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let to = probe::store::INDEX_SCHEMA_VERSION.to_string();
    assert!(
        stdout(&o).contains(&format!(
            "migrated the index from schema {from} to schema {to}"
        )),
        "{}",
        stdout(&o)
    );
    assert_eq!(index_schema(&index), to);
    assert_eq!(indexed_objects(&index), before);
    let c = rusqlite::Connection::open(&index).unwrap();
    let count = |sql: &str| -> i64 { c.query_row(sql, [], |r| r.get(0)).unwrap() };
    // Test cases and interactions live in their own rows only.
    assert_eq!(
        count("SELECT count(*) FROM other_objects WHERE kind IN (2, 3)"),
        0
    );
    // Every interaction's id is indexed under its key, and the mark is at the last row.
    let mut st = c
        .prepare(
            "SELECT i.id, x.key FROM interactions i LEFT JOIN interaction_ids x ON x.at = i.rowid",
        )
        .unwrap();
    let keyed: Vec<(Vec<u8>, Option<i64>)> = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    drop(st);
    assert!(!keyed.is_empty());
    for (id, key) in keyed {
        assert_eq!(key, Some(probe::store::index::id_key(&id)));
    }
    assert_eq!(
        count("SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'interaction_ids_through'"),
        count("SELECT max(rowid) FROM interactions")
    );
    drop(c);
    // A second open changes nothing; the store reads, by id and by prefix.
    let store = Store::open_existing(&s).unwrap();
    assert_eq!(indexed_objects(&index), before);
    let runs = store.runs().unwrap();
    assert_eq!(runs.len(), 1);
    for row in store.interactions_of(runs[0].id).unwrap() {
        let i: Interaction = store.get(row.id.0).unwrap();
        store.get::<TestCase>(i.case.0).unwrap();
        let (kind, found) = store.resolve(&row.id.0.to_string()[..12]).unwrap();
        assert_eq!((kind, found), (ObjectKind::Interaction, row.id.0));
    }
    // And a rebuild from the packs gives the same index.
    drop(store);
    let store = Store::open_for_maintenance(&s, Maintenance::Reindex).unwrap();
    store.reindex().unwrap();
    drop(store);
    assert_eq!(indexed_objects(&index), before);
}

#[test]
fn a_schema_1_index_is_migrated_in_place_and_names_every_object_where_it_did() {
    migrates_in_place("format-1", "1");
}

#[test]
fn a_schema_2_index_is_migrated_in_place_and_names_every_object_where_it_did() {
    migrates_in_place("format-1-index-2", "2");
}

/// Golden vectors: value (JSON) → canonical payload (hex) → id.
fn vectors() -> Vec<(String, String, Vec<u8>, Digest)> {
    let mut synth = Synth::new(42);
    let mut start = synth.run_start(1_780_000_000_000);
    // Fixed, so a version bump of probe does not change the vectors.
    start.tool_version = "0.1.0".into();
    // The format the vectors were published with; a RunStart names the format of the
    // store that wrote it, and the encoding of each value is what the vectors pin.
    start.store_format = "1.0".into();
    // The blob id of the synthetic document the vectors were published with (it has since
    // become a full OpenAPI document, so that recheck benchmarks judge real work).
    start.document = probe::ids::BlobId(
        Digest::from_hex("57b8ac39a192e605822f6b2e3645cb6b644d835472ecc1e4125e1664151b8a72")
            .unwrap(),
    );
    let run = RunId(encode(&start).unwrap().id);
    let (case, mut interaction) = synth.pair(run, 0);
    probe::store::externalize_bodies(&mut interaction);
    let mut set = synth.finding_set(run);
    set.judged_by = "0.1.0".into();
    let set_id = FindingSetId(encode(&set).unwrap().id);
    let end = synth.run_end(run, 1, set_id);
    let mut out = Vec::new();
    let mut push = |name: &str, json: serde_json::Value, o: probe::store::EncodedObject| {
        out.push((name.to_owned(), json.to_string(), o.payload, o.id));
    };
    push(
        "blob-empty",
        serde_json::json!(""),
        probe::store::encode_blob(b""),
    );
    push(
        "blob-hello",
        serde_json::json!("hello, probe"),
        probe::store::encode_blob(b"hello, probe"),
    );
    push(
        "test_case",
        serde_json::to_value(&case).unwrap(),
        encode(&case).unwrap(),
    );
    push(
        "interaction",
        serde_json::to_value(&interaction).unwrap(),
        encode(&interaction).unwrap(),
    );
    // Object format 1.5: a request sent again on a fresh connection keeps how its first
    // attempt, on a reused one, failed.
    let mut retried = interaction.clone();
    retried.retried = Some(probe::model::FirstAttempt {
        kind: probe::model::TransportErrorKind::Reset,
        message: "error sending request for url (http://127.0.0.1:8080/orders): client error (SendRequest): connection closed before message completed".into(),
    });
    push(
        "interaction-retried",
        serde_json::to_value(&retried).unwrap(),
        encode(&retried).unwrap(),
    );
    push(
        "run_start",
        serde_json::to_value(&start).unwrap(),
        encode(&start).unwrap(),
    );
    // Format 1.4: the plan and dictionary files a run read.
    let mut with_inputs = start.clone();
    let hello = probe::ids::BlobId(probe::store::encode_blob(b"hello, probe").id);
    with_inputs
        .inputs
        .insert("plan:plans/smoke.yaml".into(), hello);
    with_inputs
        .inputs
        .insert("dictionary:dicts/users.yaml".into(), hello);
    push(
        "run_start-inputs",
        serde_json::to_value(&with_inputs).unwrap(),
        encode(&with_inputs).unwrap(),
    );
    push(
        "finding_set",
        serde_json::to_value(&set).unwrap(),
        encode(&set).unwrap(),
    );
    push(
        "run_end",
        serde_json::to_value(&end).unwrap(),
        encode(&end).unwrap(),
    );
    // Format 1.1: a series, and a run end that names it.
    let series = probe::model::Series {
        run,
        name: "s0".into(),
        kind: probe::model::SeriesKind::Lifecycle,
        resource: "/orders/{orderId}".into(),
        steps: vec![probe::model::SeriesStepRecord {
            role: probe::model::StepRole::Create,
            seq: 0,
            interaction: probe::ids::InteractionId(encode(&interaction).unwrap().id),
        }],
    };
    let mut end_with_series = end.clone();
    end_with_series.series = vec![probe::ids::SeriesId(encode(&series).unwrap().id)];
    push(
        "series",
        serde_json::to_value(&series).unwrap(),
        encode(&series).unwrap(),
    );
    push(
        "run_end-series",
        serde_json::to_value(&end_with_series).unwrap(),
        encode(&end_with_series).unwrap(),
    );
    // Format 1.2: a test case sent while shrinking, and a finding that names its reproducer.
    let mut shrunk = case.clone();
    shrunk.strategy = probe::model::Strategy::Shrink;
    let interaction_id = probe::ids::InteractionId(encode(&interaction).unwrap().id);
    let mut with_reproducer = set.clone();
    with_reproducer.findings = vec![probe::model::Finding {
        oracle: "server_error".into(),
        code: Some("F100".into()),
        oracle_version: 2,
        operation: "createOrder".into(),
        severity: probe::model::Severity::High,
        message: "createOrder answered 500: KeyError".into(),
        key_by_message: "server_error|createOrder|500||KeyError".into(),
        key_by_kind: "server_error|createOrder|500||KeyError".into(),
        interactions: vec![interaction_id],
        occurrences: 2,
        intent: probe::model::Intent::Acceptable,
        mutation: None,
        series: None,
        reproducer: Some(probe::ids::InteractionId(Digest::of(b"the shrunk request"))),
    }];
    push(
        "test_case-shrink",
        serde_json::to_value(&shrunk).unwrap(),
        encode(&shrunk).unwrap(),
    );
    push(
        "finding_set-reproducer",
        serde_json::to_value(&with_reproducer).unwrap(),
        encode(&with_reproducer).unwrap(),
    );
    // Object format 1.6: a finding of a user check, and the check's definition stored
    // with the set that used it.
    let mut with_checks = set.clone();
    with_checks.findings = vec![probe::model::Finding {
        oracle: "check:request-id".into(),
        code: None,
        oracle_version: 1,
        operation: "createOrder".into(),
        severity: probe::model::Severity::Medium,
        message: "createOrder answered without X-Request-Id".into(),
        key_by_message:
            "check:request-id|createOrder|201|createOrder answered without X-Request-Id".into(),
        key_by_kind: "check:request-id|createOrder|201".into(),
        interactions: vec![interaction_id],
        occurrences: 1,
        intent: probe::model::Intent::Acceptable,
        mutation: None,
        series: None,
        reproducer: None,
    }];
    with_checks.oracles.insert("check:request-id".into(), 1);
    with_checks.checks.insert(
        "check:request-id".into(),
        "[[check]]\nname = \"request-id\"\nseverity = \"medium\"\nexpect = \"header(response, 'X-Request-Id') != null\"\nmessage = \"{request.operation} answered without X-Request-Id\"\n".into(),
    );
    push(
        "finding_set-checks",
        serde_json::to_value(&with_checks).unwrap(),
        encode(&with_checks).unwrap(),
    );
    // Format 1.3: a request sent to pin down a refused value, and the request that records
    // the refusal against the accepted candidate.
    let mut candidate = case.clone();
    candidate.strategy = probe::model::Strategy::Pinpoint;
    let mut refused = case.clone();
    refused.strategy = probe::model::Strategy::Mutation;
    refused.intent = probe::model::Intent::Acceptable;
    refused.mutation = Some(probe::model::Mutation {
        from: probe::model::AcceptedRef {
            case: probe::ids::CaseId(encode(&candidate).unwrap().id),
            seq: 41,
        },
        kind: probe::model::MutationKind::RefusedValue,
        place: "body.status".into(),
        description: r#"body.status="open" refused, "paid" accepted"#.into(),
    });
    push(
        "test_case-pinpoint",
        serde_json::to_value(&candidate).unwrap(),
        encode(&candidate).unwrap(),
    );
    push(
        "test_case-refused_value",
        serde_json::to_value(&refused).unwrap(),
        encode(&refused).unwrap(),
    );
    // And a request sent without the run's credentials.
    let mut withheld = case.clone();
    withheld.strategy = probe::model::Strategy::Auth;
    withheld.credentials = Some(probe::model::CredentialProbe::Withheld);
    push(
        "test_case-auth",
        serde_json::to_value(&withheld).unwrap(),
        encode(&withheld).unwrap(),
    );
    // And a shrinking candidate that names the finding it was sent for.
    let mut linked = shrunk.clone();
    linked.shrinking = Some("server_error|createOrder|500||KeyError".into());
    push(
        "test_case-shrinking",
        serde_json::to_value(&linked).unwrap(),
        encode(&linked).unwrap(),
    );
    // Format 1.4: a series step sent as another identity, and an access series.
    let mut as_other = case.clone();
    as_other.strategy = probe::model::Strategy::Series;
    as_other.identity = Some("bob".into());
    push(
        "test_case-identity",
        serde_json::to_value(&as_other).unwrap(),
        encode(&as_other).unwrap(),
    );
    let access = probe::model::Series {
        run,
        name: "s1".into(),
        kind: probe::model::SeriesKind::Access,
        resource: "/orders/{orderId}".into(),
        steps: vec![probe::model::SeriesStepRecord {
            role: probe::model::StepRole::ReadAsOther,
            seq: 1,
            interaction: interaction_id,
        }],
    };
    push(
        "series-access",
        serde_json::to_value(&access).unwrap(),
        encode(&access).unwrap(),
    );
    let timing = probe::model::Series {
        run,
        name: "s2".into(),
        kind: probe::model::SeriesKind::Timing,
        resource: "/products".into(),
        steps: vec![probe::model::SeriesStepRecord {
            role: probe::model::StepRole::WithLongerDelay,
            seq: 2,
            interaction: interaction_id,
        }],
    };
    push(
        "series-timing",
        serde_json::to_value(&timing).unwrap(),
        encode(&timing).unwrap(),
    );
    out
}

#[test]
fn golden_vectors_match_the_encoder() {
    let dir = repo().join("store-format/vectors");
    let current = vectors();
    if regenerate() {
        fs::create_dir_all(&dir).unwrap();
        for (name, json, payload, id) in &current {
            let v = serde_json::json!({
                "kind": name,
                "value": serde_json::from_str::<serde_json::Value>(json).unwrap(),
                "payload_hex": hex::encode(payload),
                "id": id.to_hex(),
            });
            fs::write(
                dir.join(format!("{name}.json")),
                serde_json::to_string_pretty(&v).unwrap() + "\n",
            )
            .unwrap();
        }
    }
    for (name, _json, payload, id) in &current {
        let path = dir.join(format!("{name}.json"));
        let text =
            fs::read_to_string(&path).unwrap_or_else(|_| panic!("{} is missing", path.display()));
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            v["payload_hex"].as_str().unwrap(),
            hex::encode(payload),
            "{name}: payload changed"
        );
        assert_eq!(v["id"].as_str().unwrap(), id.to_hex(), "{name}: id changed");
        // The id is BLAKE3(kind tag | major | payload): check it independently.
        let tag = match name.as_str() {
            n if n.starts_with("blob") => 1u8,
            n if n.starts_with("test_case") => 2,
            n if n.starts_with("interaction") => 3,
            n if n.starts_with("run_start") => 4,
            n if n.starts_with("run_end") => 5,
            n if n.starts_with("series") => 7,
            _ => 6,
        };
        let mut framed = vec![tag, 1];
        framed.extend_from_slice(&hex::decode(v["payload_hex"].as_str().unwrap()).unwrap());
        assert_eq!(
            blake3::hash(&framed).to_hex().as_str(),
            v["id"].as_str().unwrap(),
            "{name}"
        );
    }
}

/// A finding set of object format 1.5 and before (no `checks`) reads with no checks and
/// encodes to the same bytes, so its id stands; one of 1.6 reads its checks back.
#[test]
fn finding_sets_before_checks_read_with_none_and_keep_their_ids() {
    let dir = repo().join("store-format/vectors");
    for (name, checks) in [
        ("finding_set", 0),
        ("finding_set-reproducer", 0),
        ("finding_set-checks", 1),
    ] {
        let v: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(dir.join(format!("{name}.json"))).unwrap())
                .unwrap();
        let payload = hex::decode(v["payload_hex"].as_str().unwrap()).unwrap();
        let set: probe::model::FindingSet = rmp_serde::from_slice(&payload).unwrap();
        assert_eq!(set.checks.len(), checks, "{name}");
        assert_eq!(encode(&set).unwrap().payload, payload, "{name}");
    }
}

// ---------------------------------------------------------------------------------------
// The store lock across processes (src/store/lock.rs).

/// Waits for `child` to end, at most `limit`; kills it (by its pid) and fails if it does not.
fn wait_bounded(child: &mut std::process::Child, limit: Duration, what: &str) -> i32 {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status.code().unwrap_or(-1);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until `path` exists and holds `text`, while `child` runs (at most `limit`).
fn wait_for_entry(child: &mut std::process::Child, path: &Path, text: &str, limit: Duration) {
    let deadline = Instant::now() + limit;
    loop {
        if fs::read_to_string(path).is_ok_and(|t| t.contains(text)) {
            return;
        }
        if let Some(status) = child.try_wait().expect("wait") {
            panic!(
                "the writer ended ({status}) before {} said {text}",
                path.display()
            );
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{} did not say {text} within {limit:?}", path.display());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `probe store gc` while a `probe run` records into the same store: gc is refused, naming
/// the run's process, and the run goes on undisturbed to the exit code and report it has
/// without gc; the store verifies clean, and gc works once the run has ended.
#[test]
fn gc_during_a_run_is_refused_naming_the_run_and_the_run_completes() {
    use probe::fixture::{fast, RunningFixture};
    let d = tempfile::tempdir().unwrap();
    let spec = d.path().join("fast.yaml");
    fs::write(&spec, fast::DOCUMENT).unwrap();
    // Each answer 15 ms late, one worker: 250 requests take about four seconds.
    let fixture = RunningFixture::start(fast::router(Duration::from_millis(15))).unwrap();
    let url = fixture.base_url();
    let run = |name: &str| -> (Command, PathBuf, PathBuf) {
        let store = d.path().join(format!("{name}-store"));
        let report = d.path().join(format!("{name}-report.json"));
        let mut cmd = Command::new(bin());
        cmd.env("PROBE_NO_PROGRESS", "1")
            .env_remove("PROBE_STORE")
            .arg("--store")
            .arg(&store)
            .args(["run", "--spec"])
            .arg(&spec)
            .args(["--url", &url, "--seed", "5", "--workers", "1"])
            .args(["--requests", "250", "--report"])
            .arg(&report);
        (cmd, store, report)
    };
    // The report's totals, but for the rate (a timing).
    let report_of = |path: &Path| -> serde_json::Value {
        let mut v: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap();
        v["totals"]
            .as_object_mut()
            .expect("totals")
            .remove("requests_per_second");
        v
    };
    // The same run without gc, for its exit code and totals.
    let (mut alone, _, alone_report) = run("alone");
    let alone_code = alone.output().unwrap().status.code();
    let alone_report = report_of(&alone_report);

    let (mut cmd, store, report) = run("live");
    let log = fs::File::create(d.path().join("live.log")).unwrap();
    let mut child = cmd
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    let pid = child.id();
    // Recording: its registry entry names the run it writes.
    let entry = store.join("writers").join(pid.to_string());
    wait_for_entry(&mut child, &entry, "\"run\":", Duration::from_secs(60));
    for maintenance in ["gc", "reindex"] {
        let o = probe(&store, &["store", maintenance]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(4), "{maintenance}: {err}");
        assert!(
            err.contains(&format!("in use by process {pid} ("))
                && err.contains("recording run")
                && err.contains(&format!("{maintenance} needs it alone")),
            "{maintenance}: {err}"
        );
    }
    let code = wait_bounded(&mut child, Duration::from_secs(120), "the run");
    let output = fs::read_to_string(d.path().join("live.log")).unwrap();
    assert_eq!(Some(code), alone_code, "{output}");
    let report = report_of(&report);
    assert_eq!(report["totals"], alone_report["totals"], "{output}");
    assert!(!output.contains("recorder stopped"), "{output}");
    let o = probe(&store, &["store", "verify"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(!stdout(&o).contains("note:"), "{}", stdout(&o));
    let o = probe(&store, &["log"]);
    assert!(stdout(&o).contains("completed"), "{}", stdout(&o));
    // The run's entry went with it; gc now runs.
    assert!(!entry.exists());
    let o = probe(&store, &["store", "gc"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Format 2: gc is refused while a run records into the store (the lock names the run);
/// once it completed and a second run of the same seed stored its test cases and bodies
/// again, gc folds the copies, the store verifies without a note, and `probe recheck` of
/// both runs says what it says of an uncollected copy of the store.
#[test]
fn gc_of_a_format_2_store_is_refused_during_a_run_and_after_it_recheck_finds_the_same() {
    use probe::fixture::{fast, RunningFixture};
    let d = tempfile::tempdir().unwrap();
    let spec = d.path().join("fast.yaml");
    fs::write(&spec, fast::DOCUMENT).unwrap();
    // Each answer 15 ms late, one worker: 250 requests take about four seconds.
    let fixture = RunningFixture::start(fast::router(Duration::from_millis(15))).unwrap();
    let url = fixture.base_url();
    let store = d.path().join("store");
    let run = |name: &str| -> Command {
        let mut cmd = Command::new(bin());
        cmd.env("PROBE_NO_PROGRESS", "1")
            .env("PROBE_STORE_FORMAT", "2")
            .env_remove("PROBE_STORE")
            .arg("--store")
            .arg(&store)
            .args(["run", "--spec"])
            .arg(&spec)
            .args(["--url", &url, "--seed", "5", "--workers", "1"])
            .args(["--requests", "250", "--name", name]);
        cmd
    };
    let log = fs::File::create(d.path().join("a.log")).unwrap();
    let mut child = run("a")
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    let pid = child.id();
    let entry = store.join("writers").join(pid.to_string());
    wait_for_entry(&mut child, &entry, "\"run\":", Duration::from_secs(60));
    assert!(fs::read_to_string(store.join("FORMAT"))
        .unwrap()
        .starts_with("probe-store 2."));
    let o = probe(&store, &["store", "gc"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(4), "{err}");
    assert!(
        err.contains(&format!("in use by process {pid} (")) && err.contains("recording run"),
        "{err}"
    );
    let code = wait_bounded(&mut child, Duration::from_secs(120), "run a");
    let output = fs::read_to_string(d.path().join("a.log")).unwrap();
    assert!(code <= 1, "{output}");
    // The same seed again, from another process: its test cases and bodies stored twice.
    let o = run("b").output().unwrap();
    assert!(o.status.code().is_some_and(|c| c <= 1), "{}", stdout(&o));
    let o = probe(&store, &["store", "verify"]);
    assert!(stdout(&o).contains("more than once"), "{}", stdout(&o));
    let uncollected = d.path().join("uncollected");
    copy_dir(&store, &uncollected);

    let o = probe(&store, &["store", "gc", "--json"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let report: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    // Here every second copy is a test case its own block names by ordinal: gc keeps it,
    // as naming it by id would cost more (the unit tests drop copies of bodies). Folding
    // copies never makes the store larger.
    assert!(report["objects_kept"].as_u64().unwrap() > 0, "{report}");
    assert!(
        report["bytes_after"].as_u64() <= report["bytes_before"].as_u64(),
        "{report}"
    );
    let o = probe(&store, &["store", "verify"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(
        stdout(&o)
            .lines()
            .filter(|l| l.contains("note:"))
            .all(|l| l.contains("more than once")),
        "{}",
        stdout(&o)
    );
    let recheck = |dir: &Path, name: &str| {
        let o = probe(dir, &["recheck", name, "--json"]);
        let v: serde_json::Value = serde_json::from_str(stdout(&o).lines().next().unwrap_or(""))
            .unwrap_or(serde_json::Value::Null);
        format!("{:?} {}", o.status.code(), stable(&v))
    };
    for name in ["a", "b"] {
        let after = recheck(&store, name);
        assert!(after.contains("finding"), "{after}");
        assert_eq!(after, recheck(&uncollected, name), "run {name}");
    }
    // Nothing left to fold.
    let o = probe(&store, &["store", "gc", "--json"]);
    let again: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(again["packs_rewritten"], 0, "{again}");
}

/// A writer killed with `kill -9` leaves its registry entry and no lock: gc runs, and
/// removes the entry.
#[test]
fn the_lock_of_a_killed_writer_is_taken_over_and_its_entry_removed() {
    let d = tempfile::tempdir().unwrap();
    let s = d.path().join("st");
    assert!(probe(&s, &["store", "synth", "--interactions", "20"])
        .status
        .success());
    let mut child = Command::new(bin())
        .arg("--store")
        .arg(&s)
        .args([
            "store",
            "synth",
            "--interactions",
            "100000000",
            "--seed",
            "9",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let entry = s.join("writers").join(pid.to_string());
    wait_for_entry(&mut child, &entry, "\"run\":", Duration::from_secs(60));
    let o = probe(&s, &["store", "gc"]);
    assert_eq!(o.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&o.stderr).contains(&format!("process {pid} (")));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(entry.exists(), "a killed process removes nothing");
    let o = probe(&s, &["store", "gc"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!entry.exists(), "gc removes the entry of a dead process");
    let o = probe(&s, &["store", "verify"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

/// While one process holds the store alone, another's command fails at once (exit 4),
/// naming it.
#[test]
fn a_command_meeting_maintenance_fails_at_once_naming_it() {
    let d = tempfile::tempdir().unwrap();
    let s = d.path().join("st");
    assert!(probe(&s, &["store", "synth", "--interactions", "5"])
        .status
        .success());
    let alone = Store::open_for_maintenance(&s, Maintenance::Gc).unwrap();
    let started = Instant::now();
    for args in [&["log"][..], &["store", "verify"], &["store", "synth"]] {
        let o = probe(&s, args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(4), "{args:?}: {err}");
        assert!(
            err.contains(&format!("held alone by process {} (", std::process::id()))
                && err.contains("running gc"),
            "{args:?}: {err}"
        );
    }
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "nothing waited"
    );
    drop(alone);
    assert!(probe(&s, &["log"]).status.success());
}

/// An index of random bytes (`index.sqlite`, format 2's `index-2.sqlite`): every command
/// says to reindex; `probe store reindex` moves it aside, says where, and rebuilds the
/// index from the packs.
#[test]
fn reindex_moves_a_garbage_index_aside_and_rebuilds_it() {
    for (format, index_file) in [("1", "index.sqlite"), ("2", "index-2.sqlite")] {
        eprintln!("format {format}");
        garbage_index_is_moved_aside_and_rebuilt(format, index_file);
    }
}

fn garbage_index_is_moved_aside_and_rebuilt(format: &str, index_file: &str) {
    let d = tempfile::tempdir().unwrap();
    let s = d.path().join("st");
    let o = Command::new(bin())
        .arg("--store")
        .arg(&s)
        .args(["store", "synth", "--interactions", "300", "--seed", "4"])
        .env("PROBE_STORE_FORMAT", format)
        .output()
        .unwrap();
    assert!(o.status.success());
    let o = probe(&s, &["log", "--json"]);
    let line: serde_json::Value = serde_json::from_str(stdout(&o).lines().next().unwrap()).unwrap();
    let run_hex = line["data"]["id"].as_str().unwrap().to_owned();
    let index = s.join(index_file);
    for suffix in ["-wal", "-shm"] {
        let _ = fs::remove_file(s.join(format!("{index_file}{suffix}")));
    }
    let mut x: u32 = 0x1234_5678;
    let garbage: Vec<u8> = (0..64 * 1024)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect();
    fs::write(&index, &garbage).unwrap();
    for args in [&["log"][..], &["store", "verify"], &["store", "gc"]] {
        let o = probe(&s, args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(4), "{args:?}: {err}");
        assert!(
            err.contains("is damaged") && err.contains("run `probe store reindex`"),
            "{args:?}: {err}"
        );
    }
    let o = probe(&s, &["store", "reindex"]);
    let text = stdout(&o);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let moved = text
        .lines()
        .find_map(|l| l.split("moved it aside to ").nth(1))
        .unwrap_or_else(|| panic!("{text}"))
        .trim()
        .to_owned();
    assert!(moved.contains(&format!("{index_file}.damaged-")), "{text}");
    assert_eq!(fs::read(&moved).unwrap(), garbage);
    assert!(text.contains("indexed "), "{text}");
    let o = probe(&s, &["store", "verify"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(!stdout(&o).contains("note:"), "{}", stdout(&o));
    let o = probe(&s, &["log"]);
    assert!(o.status.success());
    assert!(stdout(&o).contains(&run_hex[..12]), "{}", stdout(&o));
    assert!(stdout(&o).contains("completed"), "{}", stdout(&o));
}

// ---------------------------------------------------------------------------------------
// Format 2 (issue #31) through the real binary.

/// `value` without what differs between two recordings of the same traffic: ids (hex),
/// times, rates, paths.
fn stable(value: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    let varies = |key: &str| {
        [
            "ms", "secs", "rate", "time", "duration", "elapsed", "started", "ended", "path", "url",
            "report", "store",
        ]
        .iter()
        .any(|w| key.to_ascii_lowercase().contains(w))
    };
    // An id, or an id with a suffix (`<finding set>:<ordinal>`).
    let hex = |s: &str| {
        let head = s.split(':').next().unwrap_or("");
        head.len() >= 12 && head.bytes().all(|b| b.is_ascii_hexdigit())
    };
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, v)| !varies(k) && !v.as_str().is_some_and(hex))
                .map(|(k, v)| (k.clone(), stable(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(stable).collect()),
        Value::String(s) if hex(s) => Value::String("<id>".into()),
        other => other.clone(),
    }
}

/// What recheck, replay, diff, verify and log say of two runs against the demo fixture
/// recorded into a new store of `format` (`PROBE_STORE_FORMAT`).
fn answers_of_a_store_in_format(format: &str) -> Vec<String> {
    use probe::fixture::{demo, RunningFixture};
    let d = tempfile::tempdir().unwrap();
    let s = d.path().join("store");
    let fixture = RunningFixture::start(demo::router(demo::Faults::ALL)).expect("fixture");
    let spec = repo().join("fixtures/demo/openapi.yaml");
    let command = |args: &[&str]| {
        let out = Command::new(bin())
            .env("PROBE_NO_PROGRESS", "1")
            .env("PROBE_STORE_FORMAT", format)
            .env_remove("PROBE_STORE")
            .arg("--store")
            .arg(&s)
            .args(args)
            .output()
            .expect("run probe");
        eprintln!("{}{}", stdout(&out), String::from_utf8_lossy(&out.stderr));
        out
    };
    let mut reports = Vec::new();
    for name in ["a", "b"] {
        let report = d.path().join(format!("{name}.json"));
        let out = command(&[
            "run",
            "--spec",
            spec.to_str().unwrap(),
            "--url",
            &fixture.base_url(),
            "--seed",
            "7",
            "--workers",
            "1",
            "--requests",
            "300",
            "--name",
            name,
            "--report",
            report.to_str().unwrap(),
        ]);
        assert!(
            out.status.code().is_some_and(|c| c <= 1),
            "the run succeeds"
        );
        let text = fs::read_to_string(&report).unwrap();
        reports.push(serde_json::from_str::<serde_json::Value>(&text).unwrap());
    }
    let wanted = format!("probe-store {format}.");
    assert!(
        fs::read_to_string(s.join("FORMAT"))
            .unwrap()
            .starts_with(&wanted),
        "PROBE_STORE_FORMAT={format} makes a format-{format} store"
    );
    let mut said = Vec::new();
    let mut json_line = |args: &[&str]| {
        let out = command(args);
        let text = stdout(&out);
        let v: serde_json::Value = serde_json::from_str(text.lines().next().unwrap_or("null"))
            .unwrap_or(serde_json::Value::Null);
        said.push(format!(
            "{} {:?} {}",
            args[0],
            out.status.code(),
            stable(&v)
        ));
    };
    json_line(&["recheck", "a", "--json"]);
    json_line(&["diff", "a", "b", "--json"]);
    let target = reports[0]["findings"][0]["replay"]
        .as_str()
        .expect("the faulty fixture gives findings")
        .trim_start_matches("probe replay ")
        .to_owned();
    json_line(&["replay", &target, "--url", &fixture.base_url(), "--json"]);
    let out = command(&["export", "a", "--format", "har"]);
    let har: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    said.push(format!(
        "export {:?} {} entries",
        out.status.code(),
        har["log"]["entries"].as_array().map_or(0, |e| e.len())
    ));
    let page = d.path().join("a.html");
    let out = command(&["report", "a", "--html", page.to_str().unwrap()]);
    said.push(format!("report {:?} {}", out.status.code(), page.exists()));
    let out = command(&["show", "b"]);
    said.push(format!(
        "show {:?} {} lines",
        out.status.code(),
        stdout(&out).lines().count()
    ));
    let out = command(&["store", "verify"]);
    said.push(format!("verify {:?}", out.status.code()));
    let out = command(&["log"]);
    said.push(format!(
        "log {:?} {} lines",
        out.status.code(),
        stdout(&out).lines().count()
    ));
    let store = Store::open_existing(&s).unwrap();
    for r in store.runs().unwrap() {
        let rows = store.interactions_of(r.id).unwrap();
        let tally = store.tally(r.id).unwrap();
        said.push(format!(
            "{:?} {} {:?} {} {:?}",
            r.name,
            r.interactions,
            r.outcome,
            rows.len(),
            tally.classes
        ));
    }
    said
}

#[test]
fn a_run_recorded_into_format_2_is_rechecked_replayed_diffed_and_verified_as_format_1() {
    let one = answers_of_a_store_in_format("1");
    let two = answers_of_a_store_in_format("2");
    assert_eq!(one, two);
}
