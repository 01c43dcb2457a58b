//! Unit tests of the store as a whole (the parts test themselves beside their code).

use std::fs;
use std::io::Write;
use std::path::Path;

use proptest::prelude::*;

use super::format::{RecordHeader, RECORD_HEADER_LEN};
use super::synthetic::{synth_objects, write_run, Synth};
use super::*;
use crate::ids::{FindingSetId, InteractionId};
use crate::model::{
    Finding, FindingSet, Interaction, Outcome, RunEnd, RunOutcome, RunStart, Severity, TestCase,
};

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

/// A new store holding the synthetic document of `Synth::new(seed)` and the start of its
/// run 1, as a recorder finds a store when `probe run` begins.
fn store_with_run(seed: u64) -> (tempfile::TempDir, Store, Synth, RunId) {
    let d = tmp();
    let store = open_1(d.path()).unwrap();
    let synth = Synth::new(seed);
    store.put_blob(&synth.document()).unwrap();
    let run = RunId(store.put(&synth.run_start(1)).unwrap());
    (d, store, synth, run)
}

/// Opens the store at `dir`, creating it as format 1: what these tests look at (packs of
/// records, `index.sqlite`) is format 1's layout.
fn open_1(dir: &Path) -> Result<Store, StoreError> {
    Store::open_or_create(dir, StoreFormat::One)
}

/// Runs `test` on a store of each format: what a store answers does not depend on how it
/// lays its objects out.
fn for_each_format(test: impl Fn(StoreFormat)) {
    for format in [StoreFormat::One, StoreFormat::Two] {
        eprintln!("format {format:?}");
        test(format);
    }
}

fn only_pack(dir: &Path) -> std::path::PathBuf {
    let mut packs: Vec<_> = fs::read_dir(dir.join("packs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    packs.sort();
    packs.pop().unwrap()
}

#[test]
fn put_get_round_trips_every_kind() {
    for_each_format(|format| {
        let d = tmp();
        let store = Store::open_or_create(d.path(), format).unwrap();
        let mut synth = Synth::new(1);
        let doc = store.put_blob(&synth.document()).unwrap();
        assert_eq!(store.get_blob(doc).unwrap(), synth.document());
        let start = synth.run_start(5);
        let run = RunId(store.put(&start).unwrap());
        assert_eq!(store.get::<RunStart>(run.0).unwrap(), start);
        let (case, mut i) = synth.pair(run, 0);
        let original = i.clone();
        let mut objs = externalize_bodies(&mut i);
        objs.push(encode(&case).unwrap());
        objs.push(encode(&i).unwrap());
        let iid = objs.last().unwrap().id;
        store.put_encoded(objs).unwrap();
        let back: Interaction = store.get(iid).unwrap();
        assert_eq!(back, i);
        // Bodies read back identical whether inline or blob.
        let body = |x: &Interaction| {
            x.outcome
                .response()
                .and_then(|r| r.body.clone())
                .map(|b| store.body_bytes(&b).unwrap())
        };
        assert_eq!(body(&back), body(&original));
        assert_eq!(store.get::<TestCase>(back.case.0).unwrap(), case);
        let set = FindingSetId(store.put(&synth.finding_set(run)).unwrap());
        let end = synth.run_end(run, 1, set);
        store.put(&end).unwrap();
        assert_eq!(store.run_end(run).unwrap(), Some(end));
        assert_eq!(store.finding_sets_of(run).unwrap(), vec![set]);
        // Asking for the wrong kind is an error, not garbage.
        assert!(matches!(
            store.get::<TestCase>(iid),
            Err(StoreError::WrongKind { .. })
        ));
    });
}

#[test]
fn recorder_writes_and_runs_lists_newest_first() {
    for_each_format(|format| {
        let d = tmp();
        let store = Store::open_or_create(d.path(), format).unwrap();
        let a = write_run(&store, 1, 30, 1000).unwrap();
        let b = write_run(&store, 2, 10, 2000).unwrap();
        let runs = store.runs().unwrap();
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0].id, b);
        assert_eq!(runs[1].id, a);
        assert_eq!(runs[1].interactions, 30);
        assert_eq!(runs[1].outcome.as_deref(), Some("completed"));
        let rows = store.interactions_of(a).unwrap();
        assert_eq!(rows.len(), 30);
        assert!(rows.windows(2).all(|w| w[0].seq < w[1].seq));
        assert!(rows.iter().all(|r| !r.operation.is_empty()));
        assert!(store.verify().unwrap().is_ok());
    });
}

#[test]
fn flush_makes_everything_sent_durable() {
    for_each_format(|format| {
        let d = tmp();
        let store = Store::open_or_create(d.path(), format).unwrap();
        let mut synth = Synth::new(3);
        let run = RunId(store.put(&synth.run_start(1)).unwrap());
        let rec = store.recorder().unwrap();
        for seq in 0..5 {
            rec.record(synth_objects(&mut synth, run, seq).unwrap())
                .unwrap();
        }
        rec.flush().unwrap();
        // A second opener (another process, say) sees them.
        let other = Store::open_existing(d.path()).unwrap();
        assert_eq!(other.interactions_of(run).unwrap().len(), 5);
        let stats = rec.finish().unwrap();
        assert_eq!(stats.interactions, 5);
    });
}

/// The recorder indexes interaction ids every so many interactions, and when it starts what
/// earlier writers left (its own last ids, a killed writer's, direct puts) when they make a
/// pass. Not when it stops, so that a run's end does not wait for a pass.
#[test]
fn the_recorder_indexes_interaction_ids_in_passes() {
    let d = tmp();
    let store = open_1(d.path()).unwrap();
    let mut synth = Synth::new(3);
    let run = RunId(store.put(&synth.run_start(1)).unwrap());
    let behind = || {
        let conn = Store::open_existing(d.path()).unwrap();
        let conn = conn.inner.conn().unwrap();
        index::interaction_ids_behind(&conn).unwrap()
    };
    let record = |rec: &Recorder, seqs: std::ops::Range<u64>, synth: &mut Synth| {
        for seq in seqs {
            rec.record(synth_objects(synth, run, seq).unwrap()).unwrap();
        }
        rec.flush().unwrap();
    };
    // Passes every 50: after 60 interactions in one batch, a pass has run.
    let rec = store
        .recorder_with(RecorderOptions {
            index_ids_every: 50,
            ..RecorderOptions::default()
        })
        .unwrap();
    record(&rec, 0..60, &mut synth);
    assert_eq!(behind(), 0);
    record(&rec, 60..90, &mut synth);
    assert_eq!(behind(), 30, "30 since the last pass");
    rec.finish().unwrap();
    assert_eq!(behind(), 30, "no pass when the recorder stops");
    // Interactions written without a recorder (direct puts; a killed recorder) join the
    // tail, found by id meanwhile and indexed by the next recorder's first pass.
    for seq in 90..100 {
        store
            .put_encoded(synth_objects(&mut synth, run, seq).unwrap())
            .unwrap();
    }
    assert_eq!(behind(), 40);
    let stopped_with = store.interactions_of(run).unwrap()[75].id;
    assert_eq!(
        store.resolve(&stopped_with.0.to_string()).unwrap().1,
        stopped_with.0,
        "an id the stopped recorder left in the tail is found"
    );
    let last = store.interactions_of(run).unwrap().pop().unwrap();
    assert_eq!(store.resolve(&last.id.0.to_string()).unwrap().1, last.id.0);
    // The tail counts towards the next recorder's first pass: none when it starts with
    // fewer waiting than a pass takes, one when what it records brings them to that many.
    let every_50 = RecorderOptions {
        index_ids_every: 50,
        ..RecorderOptions::default()
    };
    let next = store.recorder_with(every_50.clone()).unwrap();
    next.flush().unwrap();
    assert_eq!(behind(), 40, "no pass for a tail shorter than a pass");
    record(&next, 100..109, &mut synth);
    assert_eq!(behind(), 49);
    record(&next, 109..110, &mut synth);
    assert_eq!(behind(), 0, "the tail and this recorder's ids make a pass");
    record(&next, 110..120, &mut synth);
    next.finish().unwrap();
    assert_eq!(behind(), 10);
    // A recorder that finds a whole pass waiting makes it as it starts.
    for seq in 120..160 {
        store
            .put_encoded(synth_objects(&mut synth, run, seq).unwrap())
            .unwrap();
    }
    let next = store.recorder_with(every_50).unwrap();
    next.flush().unwrap();
    assert_eq!(behind(), 0, "50 were waiting");
    next.finish().unwrap();
    assert_eq!(store.interactions_of(run).unwrap().len(), 160);
}

#[test]
fn the_first_batch_is_small_so_a_run_is_durable_early() {
    let d = tmp();
    let store = open_1(d.path()).unwrap();
    let mut synth = Synth::new(5);
    let run = RunId(store.put(&synth.run_start(1)).unwrap());
    let (rec, acks) = store.recorder_with_acks().unwrap();
    for seq in 0..2_000 {
        rec.record(synth_objects(&mut synth, run, seq).unwrap())
            .unwrap();
    }
    rec.finish().unwrap();
    let batches: Vec<Vec<InteractionId>> = acks.iter().collect();
    assert_eq!(batches.iter().map(Vec::len).sum::<usize>(), 2_000);
    // Each interaction comes with its test case at least, so a first batch cut at
    // FIRST_BATCH_OBJECTS objects holds at most half as many interactions.
    let first = batches.first().map_or(0, Vec::len);
    assert!(
        (1..=recorder::FIRST_BATCH_OBJECTS / 2).contains(&first),
        "first batch acknowledged {first} interactions"
    );
}

#[test]
fn tasks_wait_for_room_in_a_full_channel_and_everything_lands() {
    for_each_format(|format| {
        let d = tmp();
        let store = Store::open_or_create(d.path(), format).unwrap();
        let mut synth = Synth::new(4);
        let run = RunId(store.put(&synth.run_start(1)).unwrap());
        // A channel of two: nearly every call finds it full and has to wait for room.
        let rec = std::sync::Arc::new(
            store
                .recorder_with(RecorderOptions {
                    channel_capacity: 2,
                    ..RecorderOptions::default()
                })
                .unwrap(),
        );
        let batches: Vec<Vec<_>> = (0..300)
            .map(|seq| synth_objects(&mut synth, run, seq).unwrap())
            .collect();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let mut tasks = tokio::task::JoinSet::new();
            for objects in batches {
                let rec = rec.clone();
                tasks.spawn(async move { rec.record_async(objects).await });
            }
            let all = async {
                while let Some(done) = tasks.join_next().await {
                    done.unwrap().unwrap();
                }
            };
            tokio::time::timeout(std::time::Duration::from_secs(60), all)
                .await
                .expect("every task got room within a minute");
        });
        let rec = std::sync::Arc::into_inner(rec).expect("the tasks are done");
        assert_eq!(rec.finish().unwrap().interactions, 300);
        let rows = store.interactions_of(run).unwrap();
        let mut seqs: Vec<u64> = rows
            .iter()
            .map(|r| store.get::<Interaction>(r.id.digest()).unwrap().seq)
            .collect();
        seqs.sort_unstable();
        assert_eq!(seqs, (0..300).collect::<Vec<u64>>());
    });
}

#[test]
fn reindex_after_deleting_the_index_gives_the_same_answers() {
    for_each_format(|format| {
        let d = tmp();
        let (runs, rows) = {
            let store = Store::open_or_create(d.path(), format).unwrap();
            let a = write_run(&store, 4, 40, 1000).unwrap();
            write_run(&store, 5, 20, 2000).unwrap();
            (store.runs().unwrap(), store.interactions_of(a).unwrap())
        };
        for suffix in ["", "-wal", "-shm"] {
            let index_file = match format {
                StoreFormat::One => "index.sqlite",
                StoreFormat::Two => v2::index2::INDEX2_FILE,
            };
            let _ = fs::remove_file(d.path().join(format!("{index_file}{suffix}")));
        }
        let store = Store::open_existing(d.path()).unwrap();
        assert_eq!(store.runs().unwrap(), runs);
        assert_eq!(store.interactions_of(runs[1].id).unwrap(), rows);
        drop(store);
        // And an explicit reindex on a healthy store changes nothing.
        let store = Store::open_for_maintenance(d.path(), Maintenance::Reindex).unwrap();
        let report = store.reindex().unwrap();
        assert_eq!(report.moved_aside, None);
        assert_eq!(store.runs().unwrap(), runs);
        assert_eq!(store.interactions_of(runs[1].id).unwrap(), rows);
        assert!(store.verify().unwrap().is_ok());
    });
}

#[test]
fn resolve_accepts_prefixes_and_names_and_lists_ambiguity() {
    let d = tmp();
    let store = open_1(d.path()).unwrap();
    let run = write_run(&store, 6, 600, 1000).unwrap();
    let hex = run.0.to_hex();
    assert_eq!(store.resolve(&hex).unwrap(), (ObjectKind::RunStart, run.0));
    assert_eq!(store.resolve(&hex[..12]).unwrap().1, run.0);
    assert_eq!(store.resolve("synth-6").unwrap().1, run.0);
    assert!(matches!(
        store.resolve("ab"),
        Err(StoreError::PrefixTooShort { .. })
    ));
    assert!(matches!(
        store.resolve("no-such-run"),
        Err(StoreError::NotFound { .. })
    ));
    // Find a 4-character prefix two ids share (with ~900 objects in 65,536 buckets there
    // is one; the data are deterministic).
    let p = {
        let conn = store.inner.conn().unwrap();
        let mut p: Vec<String> = index::all_objects(&conn)
            .unwrap()
            .iter()
            .map(|(d, ..)| d.short(4))
            .collect();
        p.sort();
        p.windows(2)
            .find(|w| w[0] == w[1])
            .map(|w| w[0].clone())
            .expect("a shared prefix")
    };
    let Err(StoreError::Ambiguous { candidates, .. }) = store.resolve(&p) else {
        panic!("{p} should be ambiguous");
    };
    assert!(candidates.len() >= 2);
    assert!(candidates.iter().all(|c| c.id.to_hex().starts_with(&p)));
    let text = StoreError::Ambiguous {
        prefix: p.clone(),
        candidates,
    }
    .to_string();
    assert!(text.contains(&p));
}

#[test]
fn a_newer_store_major_is_refused_and_a_newer_minor_read() {
    let d = tmp();
    write_run(&open_1(d.path()).unwrap(), 1, 3, 1).unwrap();
    fs::write(d.path().join("FORMAT"), "probe-store 1.9\n").unwrap();
    assert_eq!(
        Store::open_existing(d.path())
            .unwrap()
            .runs()
            .unwrap()
            .len(),
        1
    );
    fs::write(d.path().join("FORMAT"), "probe-store 3.0\n").unwrap();
    let err = Store::open_existing(d.path()).err().unwrap();
    let text = err.to_string();
    assert!(text.contains("3.0") && text.contains("2.0"), "{text}");
    assert!(err.hint().is_some());
}

#[test]
fn an_absent_store_is_an_error_with_a_hint() {
    let d = tmp();
    let err = Store::open_existing(&d.path().join("nope")).err().unwrap();
    assert!(matches!(err, StoreError::NoStore { .. }));
    assert!(err.hint().unwrap().contains("--store"));
    fs::write(d.path().join("junk"), "x").unwrap();
    assert!(matches!(
        open_1(d.path()),
        Err(StoreError::NotAStore { .. })
    ));
}

#[test]
fn a_newer_index_schema_is_read_but_not_written() {
    let d = tmp();
    write_run(&open_1(d.path()).unwrap(), 1, 3, 1).unwrap();
    {
        let c = rusqlite::Connection::open(d.path().join("index.sqlite")).unwrap();
        c.execute(
            "UPDATE meta SET value = '99' WHERE key = 'schema_version'",
            [],
        )
        .unwrap();
    }
    let store = Store::open_existing(d.path()).unwrap();
    assert_eq!(store.runs().unwrap().len(), 1);
    let err = store.put_blob(b"new").unwrap_err();
    assert!(
        matches!(err, StoreError::IndexTooNew { found: 99, .. }),
        "{err}"
    );
    assert!(store.recorder().is_err());
    drop(store);
    // Rebuilding replaces it with this build's schema; then writing works again.
    let store = Store::open_for_maintenance(d.path(), Maintenance::Reindex).unwrap();
    store.reindex().unwrap();
    assert_eq!(store.runs().unwrap().len(), 1);
    store.put_blob(b"new").unwrap();
}

#[test]
fn a_record_of_a_newer_object_major_is_refused_by_name() {
    let d = tmp();
    let store = open_1(d.path()).unwrap();
    let id = store.put_blob(b"some bytes").unwrap();
    let pack = only_pack(d.path());
    let mut bytes = fs::read(&pack).unwrap();
    // The only record starts right after the 12-byte pack header; byte 3 is its major.
    bytes[12 + 3] = 2;
    fs::write(&pack, &bytes).unwrap();
    let err = store.get_blob(id).unwrap_err();
    assert!(matches!(err, StoreError::VersionTooNew { .. }), "{err}");
    assert!(err.to_string().contains(&id.0.to_hex()));
}

#[test]
fn a_flipped_byte_is_a_hash_mismatch_or_damage_never_a_panic() {
    let d = tmp();
    let store = open_1(d.path()).unwrap();
    let id = store.put_blob(&b"0123456789".repeat(50)).unwrap();
    let pack = only_pack(d.path());
    let clean = fs::read(&pack).unwrap();
    for i in 12..clean.len() {
        // The minor version (record byte 4) and the reserved flags (byte 5) are not part of
        // the identity: a newer minor is readable by design.
        if i == 12 + 4 || i == 12 + 5 {
            continue;
        }
        let mut bytes = clean.clone();
        bytes[i] ^= 0x55;
        fs::write(&pack, &bytes).unwrap();
        // Reopen so no cached file handle hides the change.
        let s = Store::open_existing(d.path()).unwrap();
        assert!(s.get_blob(id).is_err(), "flip at {i} went unnoticed");
        assert!(!s.verify().unwrap().is_ok());
    }
}

#[test]
fn a_torn_tail_is_tolerated_by_open_verify_and_reindex() {
    let d = tmp();
    let store = open_1(d.path()).unwrap();
    let run = write_run(&store, 9, 20, 1).unwrap();
    drop(store);
    let pack = only_pack(d.path());
    let bytes = fs::read(&pack).unwrap();
    // Append half of a copy of the first record: a write cut short by a kill.
    let first = RecordHeader::decode(&bytes[12..]).unwrap();
    let half = &bytes[12..12 + (first.record_len() as usize) / 2];
    fs::OpenOptions::new()
        .append(true)
        .open(&pack)
        .unwrap()
        .write_all(half)
        .unwrap();
    let store = Store::open_existing(d.path()).unwrap();
    let report = store.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    assert!(report.notes.iter().any(|n| n.contains("torn tail")));
    drop(store);
    let store = Store::open_for_maintenance(d.path(), Maintenance::Reindex).unwrap();
    let r = store.reindex().unwrap();
    assert_eq!(r.torn_tails, 1);
    assert_eq!(store.interactions_of(run).unwrap().len(), 20);
    // Writing continues after a torn pack (into a new pack).
    write_run(&store, 10, 5, 2).unwrap();
    assert!(store.verify().unwrap().is_ok());
}

#[test]
fn gc_drops_what_no_run_reaches_and_keeps_the_rest() {
    let d = tmp();
    let store = open_1(d.path()).unwrap();
    let run = write_run(&store, 11, 25, 1).unwrap();
    let orphan = store.put_blob(b"nobody points at me").unwrap();
    let rows = store.interactions_of(run).unwrap();
    drop(store);
    let store = Store::open_for_maintenance(d.path(), Maintenance::Gc).unwrap();
    let r = store.gc().unwrap();
    assert_eq!(r.objects_removed, 1);
    assert!(store.get_blob(orphan).is_err());
    assert_eq!(store.interactions_of(run).unwrap(), rows);
    // Both kinds whose location lives in their query row (index schema 2) were moved.
    for row in &rows {
        let interaction: Interaction = store.get(row.id.0).unwrap();
        store.get::<TestCase>(interaction.case.0).unwrap();
    }
    let v = store.verify().unwrap();
    assert!(v.is_ok(), "{:?}", v.problems);
    // Nothing left to collect.
    assert_eq!(store.gc().unwrap().objects_removed, 0);
}

#[test]
fn stats_count_kinds_and_dedup() {
    let d = tmp();
    let store = open_1(d.path()).unwrap();
    write_run(&store, 12, 200, 1).unwrap();
    let s = store.stats().unwrap();
    let count = |k: &str| s.kinds.iter().find(|x| x.kind == k).map_or(0, |x| x.count);
    assert_eq!(count("interaction"), 200);
    assert_eq!(count("run"), 1);
    assert!(s.dedup_ratio > 1.0, "{s:?}");
    assert!(s.stored_bytes > 0 && s.raw_bytes > 0);
}

#[test]
fn report_json_is_kept_in_the_store() {
    for_each_format(|format| {
        let d = tmp();
        let store = Store::open_or_create(d.path(), format).unwrap();
        let run = write_run(&store, 1, 1, 1).unwrap();
        let p = store.write_report(run, b"{}").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"{}");
        assert!(p.starts_with(d.path().join("reports")));
    });
}

fn finding(interactions: Vec<InteractionId>, msg: &str) -> Finding {
    Finding {
        oracle: "server_error".into(),
        code: Some("F100".into()),
        oracle_version: 1,
        operation: "getUser".into(),
        severity: Severity::High,
        message: msg.into(),
        key_by_message: msg.into(),
        key_by_kind: "500".into(),
        occurrences: interactions.len() as u64,
        interactions,
        intent: Default::default(),
        mutation: None,
        series: None,
        reproducer: None,
    }
}

#[test]
fn findings_are_counted_distinct_and_their_references_verified() {
    for_each_format(|format| {
        let d = tmp();
        let store = Store::open_or_create(d.path(), format).unwrap();
        let run = write_run(&store, 13, 5, 1).unwrap();
        let rows = store.interactions_of(run).unwrap();
        let set = FindingSet {
            run,
            judged_by: "test".into(),
            oracles: Default::default(),
            findings: vec![
                finding(vec![rows[0].id], "a"),
                finding(vec![rows[1].id, rows[2].id], "b"),
                finding(vec![InteractionId(Digest::of(b"ghost"))], "c"),
            ],
            checks: Default::default(),
        };
        let set_id = FindingSetId(store.put(&set).unwrap());
        store
            .put(&RunEnd {
                run,
                ended_ms: u64::MAX / 4,
                outcome: RunOutcome::Completed,
                interactions: 5,
                findings: set_id,
                series: Vec::new(),
            })
            .unwrap();
        assert_eq!(store.runs().unwrap()[0].findings, 3);
        assert_eq!(store.finding_sets_of(run).unwrap()[0], set_id);
        let v = store.verify().unwrap();
        assert_eq!(v.problems.len(), 1, "{:?}", v.problems);
        assert!(v.problems[0].message.contains("missing interaction"));
        assert!(v.problems[0].message.contains(&set_id.0.to_hex()));
    });
}

// Any value of each kind round-trips encode → store → load, and its id does not depend on
// the compression level. Values are synthetic ones with arbitrary text and bytes spliced in.
proptest! {
    #![proptest_config(ProptestConfig { cases: 32, .. ProptestConfig::default() })]
    #[test]
    fn any_value_round_trips_through_the_store(
        seed in any::<u64>(),
        text in ".{0,40}",
        bytes in proptest::collection::vec(any::<u8>(), 0..700),
        status in any::<u16>(),
        seq in any::<u64>(),
        level in 1i32..15,
    ) {
        let d = tmp();
        let store = open_1(d.path()).unwrap();
        let mut synth = Synth::new(seed);
        let mut start = synth.run_start(seq);
        start.name = Some(text.clone());
        start.tags.insert(text.clone(), text.clone());
        let run = RunId(store.put(&start).unwrap());
        prop_assert_eq!(store.get::<RunStart>(run.0).unwrap(), start.clone());
        let (mut case, mut i) = synth.pair(run, seq);
        case.operation = text.clone();
        case.mode = text.clone();
        i.case = crate::ids::CaseId(encode(&case).unwrap().id);
        i.request.body = Some(crate::model::BodyBytes::Inline(bytes.clone()));
        if let Outcome::Response(r) = &mut i.outcome {
            r.status = status;
            r.headers.push((text.clone(), text.clone()));
        }
        let mut objs = externalize_bodies(&mut i);
        objs.push(encode(&case).unwrap());
        objs.push(encode(&i).unwrap());
        let ids: Vec<Digest> = objs.iter().map(|o| o.id).collect();
        // Same ids at another compression level.
        for o in &objs {
            let mut c = zstd::bulk::Compressor::new(level).unwrap();
            let rec = object::make_record(o, &mut c).unwrap();
            let h = RecordHeader::decode(&rec).unwrap();
            prop_assert_eq!(h.id, o.id);
            prop_assert_eq!(object::open_record(&h, &rec[RECORD_HEADER_LEN..], None).unwrap(), o.payload.clone());
        }
        store.put_encoded(objs).unwrap();
        let back_i: Interaction = store.get(*ids.last().unwrap()).unwrap();
        prop_assert_eq!(&back_i, &i);
        let req = back_i.request.body.clone().unwrap();
        prop_assert_eq!(store.body_bytes(&req).unwrap(), bytes);
        let back_c: TestCase = store.get(i.case.0).unwrap();
        prop_assert_eq!(back_c, case);
        let set = synth.finding_set(run);
        let set_id = store.put(&set).unwrap();
        prop_assert_eq!(store.get::<FindingSet>(set_id).unwrap(), set);
        let end = synth.run_end(run, seq, FindingSetId(set_id));
        let end_id = store.put(&end).unwrap();
        prop_assert_eq!(store.get::<RunEnd>(end_id).unwrap(), end);
        // Encoding is deterministic: the same value gives the same id again.
        prop_assert_eq!(encode(&start).unwrap().id, run.0);
    }
}

#[test]
fn dictionaries_are_trained_named_by_records_and_required_to_read() {
    let d = tmp();
    let store = open_1(d.path()).unwrap();
    let opts = RecorderOptions {
        train_after: 50,
        ..RecorderOptions::default()
    };
    let run = synthetic::write_run_with(&store, 21, 300, 1, opts).unwrap();
    let dicts: Vec<_> = fs::read_dir(d.path().join("dicts"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dicts.len(), 2, "{dicts:?}");
    let rows = store.interactions_of(run).unwrap();
    for row in &rows {
        store.get::<Interaction>(row.id.0).unwrap();
    }
    assert!(store.verify().unwrap().is_ok());
    // A dictionary is trained after the batch that completed its samples is durable, so
    // later batches use it: a second run uses the dictionaries from its first object.
    let second = write_run(&store, 22, 10, 2).unwrap();
    assert_eq!(fs::read_dir(d.path().join("dicts")).unwrap().count(), 2);
    let last = store.interactions_of(second).unwrap().last().unwrap().id.0;
    {
        let conn = store.inner.conn().unwrap();
        let d: u32 = conn
            .query_row(
                "SELECT dict FROM objects WHERE id = ?1",
                [&last.0[..]],
                |r| r.get(0),
            )
            .unwrap();
        assert_ne!(
            d, 0,
            "later interactions are compressed with the dictionary"
        );
    }
    // Without its dictionary an object cannot be read, and verify says which.
    drop(store);
    for p in &dicts {
        fs::remove_file(p).unwrap();
    }
    let store = Store::open_existing(d.path()).unwrap();
    assert!(store.get::<Interaction>(last).is_err());
    let v = store.verify().unwrap();
    assert!(
        v.problems.iter().any(|p| p.message.contains("dictionary")),
        "{:?}",
        v.problems
    );
}

#[test]
fn store_and_recorder_can_be_shared_between_threads() {
    fn shared<T: Send + Sync>() {}
    shared::<Store>();
    shared::<Recorder>();
    shared::<EncodedObject>();
}

/// Random damage anywhere (packs, index, FORMAT) gives errors, never a panic.
#[test]
fn random_damage_never_panics() {
    use rand::{Rng, SeedableRng};
    let clean = tmp();
    let run = {
        let store = open_1(clean.path()).unwrap();
        let opts = RecorderOptions {
            train_after: 10,
            ..RecorderOptions::default()
        };
        synthetic::write_run_with(&store, 30, 40, 1, opts).unwrap()
    };
    let files: Vec<std::path::PathBuf> = ["index.sqlite", "FORMAT"]
        .iter()
        .map(|f| clean.path().join(f))
        .chain(
            fs::read_dir(clean.path().join("packs"))
                .unwrap()
                .map(|e| e.unwrap().path()),
        )
        .chain(
            fs::read_dir(clean.path().join("dicts"))
                .unwrap()
                .map(|e| e.unwrap().path()),
        )
        .collect();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    for trial in 0..40 {
        let d = tmp();
        for f in &files {
            let rel = f.strip_prefix(clean.path()).unwrap();
            let to = d.path().join(rel);
            fs::create_dir_all(to.parent().unwrap()).unwrap();
            fs::copy(f, &to).unwrap();
        }
        let victim = d.path().join(
            files[trial % files.len()]
                .strip_prefix(clean.path())
                .unwrap(),
        );
        let mut bytes = fs::read(&victim).unwrap();
        if bytes.is_empty() {
            continue;
        }
        for _ in 0..rng.gen_range(1..20) {
            let i = rng.gen_range(0..bytes.len());
            bytes[i] = rng.gen();
        }
        if rng.gen_bool(0.3) {
            let cut = rng.gen_range(0..bytes.len());
            bytes.truncate(cut);
        }
        fs::write(&victim, &bytes).unwrap();
        let Ok(store) = Store::open_existing(d.path()) else {
            continue;
        };
        let _ = store.verify();
        let _ = store.stats();
        for r in store.runs().unwrap_or_default() {
            let _ = store.run_end(r.id);
            for row in store.interactions_of(r.id).unwrap_or_default() {
                if let Ok(i) = store.get::<Interaction>(row.id.0) {
                    if let Some(b) = &i.request.body {
                        let _ = store.body_bytes(b);
                    }
                }
                let _ = store.get::<TestCase>(row.case.0);
            }
        }
        let _ = store.resolve(&run.0.short(6));
        drop(store);
        if let Ok(store) = Store::open_for_maintenance(d.path(), Maintenance::Reindex) {
            let _ = store.reindex();
            let _ = store.verify();
        }
        if let Ok(store) = Store::open_for_maintenance(d.path(), Maintenance::Gc) {
            let _ = store.gc();
        }
    }
}

#[test]
fn an_empty_index_beside_objects_is_rebuilt_on_open() {
    let d = tmp();
    let run = write_run(&open_1(d.path()).unwrap(), 1, 7, 1).unwrap();
    for suffix in ["-wal", "-shm"] {
        let _ = fs::remove_file(d.path().join(format!("index.sqlite{suffix}")));
    }
    fs::write(d.path().join("index.sqlite"), b"").unwrap();
    let store = Store::open_existing(d.path()).unwrap();
    assert_eq!(store.interactions_of(run).unwrap().len(), 7);
    let v = store.verify().unwrap();
    assert!(
        v.is_ok() && v.notes.iter().any(|n| n.contains("index was empty")),
        "{v:?}"
    );
}

/// A record appended by a writer that died before its index commit is neither a verify
/// problem nor lost by gc.
#[test]
fn uncommitted_records_are_noted_by_verify_and_kept_by_gc() {
    let d = tmp();
    let store = open_1(d.path()).unwrap();
    let run = write_run(&store, 40, 5, 1).unwrap();
    store
        .put_blob(b"orphan, so that gc rewrites the pack")
        .unwrap();
    let lost = encode_blob(b"appended, never indexed");
    let mut c = zstd::bulk::Compressor::new(1).unwrap();
    let rec = object::make_record(&lost, &mut c).unwrap();
    store.inner.backend.append(&rec).unwrap();
    let v = store.verify().unwrap();
    assert!(v.is_ok(), "{:?}", v.problems);
    assert!(
        v.notes.iter().any(|n| n.contains("never indexed")),
        "{:?}",
        v.notes
    );
    drop(store);
    let store = Store::open_for_maintenance(d.path(), Maintenance::Gc).unwrap();
    let r = store.gc().unwrap();
    assert_eq!(r.objects_removed, 1);
    assert_eq!(
        store.get_blob(BlobId(lost.id)).unwrap(),
        b"appended, never indexed"
    );
    assert_eq!(store.interactions_of(run).unwrap().len(), 5);
    assert!(store.verify().unwrap().is_ok());
}

/// A batch looks its test cases up when they come; should another writer store one of them
/// before the batch commits, the batch asks again under its write lock and neither writes
/// the case twice nor loses it.
#[test]
fn a_test_case_stored_by_another_writer_meanwhile_is_not_written_twice() {
    let (_dir, store, mut synth, run) = store_with_run(43);
    let (case, interaction) = synth.pair(run, 0);
    let (other, other_interaction) = synth.pair(run, 1);
    let (case_object, interaction_object) = (encode(&case).unwrap(), encode(&interaction).unwrap());
    let inner = &store.inner;
    let (mut conn, _) = index::open(&inner.index_path).unwrap();
    let mut packer = crate::store::dict::Packer::new(1).unwrap();
    let mut batch = recorder::Batch::default();
    for obj in [
        case_object.clone(),
        interaction_object,
        encode(&other).unwrap(),
        encode(&other_interaction).unwrap(),
    ] {
        batch
            .add(obj, &mut packer, None, &conn, &inner.index_path)
            .unwrap();
    }
    // Another writer (the store's own connection) stores the first case meanwhile.
    store.put_encoded(vec![case_object.clone()]).unwrap();
    let stats = batch.commit(inner, &mut conn, None).unwrap();
    assert_eq!(stats.written, 3, "two interactions and the other case");
    assert_eq!(stats.deduplicated, 1, "the case stored meanwhile");
    let rows: i64 = conn
        .query_row(
            "SELECT count(*) FROM cases WHERE id = ?1",
            [&case_object.id.0[..]],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(rows, 1);
    drop(conn);
    for id in [case_object.id, encode(&other).unwrap().id] {
        store.get::<TestCase>(id).unwrap();
    }
    assert_eq!(store.interactions_of(run).unwrap().len(), 2);
    let o = store.verify().unwrap();
    assert!(o.problems.is_empty(), "{o:?}");
}

/// Bytes in the store's packs.
fn pack_bytes(store: &Store) -> u64 {
    let packs = store.inner.backend.packs().unwrap();
    packs
        .iter()
        .map(|p| store.inner.backend.open_pack(p).unwrap().1)
        .sum()
}

/// verify finds no problem and no record the index leaves out.
fn assert_verified_with_nothing_unindexed(store: &Store) {
    let v = store.verify().unwrap();
    assert!(v.is_ok(), "{:?}", v.problems);
    assert!(
        !v.notes.iter().any(|n| n.contains("never indexed")),
        "{:?}",
        v.notes
    );
}

#[test]
fn objects_the_store_holds_are_not_written_again_and_the_rest_land_where_the_index_says() {
    let (_dir, store, mut synth, first) = store_with_run(41);
    let rec = store.recorder().unwrap();
    let mut old_cases = Vec::new();
    for seq in 0..300 {
        let (case, i) = synth.pair(first, seq);
        rec.record(vec![encode(&case).unwrap(), encode(&i).unwrap()])
            .unwrap();
        old_cases.push(case);
    }
    rec.finish().unwrap();
    let before = pack_bytes(&store);
    // A second run, by a recorder that has written nothing yet: every other test case is
    // one the store holds, so each batch mixes objects the index takes and turns down.
    let second = RunId(store.put(&synth.run_start(2)).unwrap());
    let after_run_start = pack_bytes(&store);
    let rec = store.recorder().unwrap();
    let mut sent = Vec::new();
    for seq in 0..300u64 {
        let (new_case, mut i) = synth.pair(second, seq);
        let case = if seq % 2 == 0 {
            old_cases[seq as usize].clone()
        } else {
            new_case
        };
        let case_object = encode(&case).unwrap();
        i.case = crate::ids::CaseId(case_object.id);
        let interaction = encode(&i).unwrap();
        sent.push((InteractionId(interaction.id), i, case));
        rec.record(vec![case_object, interaction]).unwrap();
    }
    let stats = rec.finish().unwrap();
    assert_eq!(stats.interactions, 300);
    assert!(stats.deduplicated >= 150, "{stats:?}");
    // Nothing was appended that the index does not name: the packs grew by exactly what
    // the recorder counts as written, and verify finds no record left out.
    assert_eq!(
        pack_bytes(&store) - after_run_start,
        stats.stored_bytes,
        "{stats:?}"
    );
    assert!(after_run_start > before);
    assert_verified_with_nothing_unindexed(&store);
    // Every object reads back from where the index says it is.
    for (id, interaction, case) in &sent {
        assert_eq!(&store.get::<Interaction>(id.0).unwrap(), interaction);
        assert_eq!(&store.get::<TestCase>(interaction.case.0).unwrap(), case);
    }
    let rows = store.interactions_of(second).unwrap();
    assert_eq!(rows.len(), 300);
    assert!(rows.iter().all(|r| !r.operation.is_empty()));
}

/// A recorder looks for repeats only among the kinds that repeat; an interaction sent twice
/// in one batch (nothing in probe does, but a caller of the recorder may) is still stored
/// and indexed once, the index turning the second down.
#[test]
fn an_interaction_recorded_twice_in_one_batch_is_stored_once() {
    let d = tmp();
    let store = open_1(d.path()).unwrap();
    let mut synth = Synth::new(21);
    store.put_blob(&synth.document()).unwrap();
    let run = RunId(store.put(&synth.run_start(1)).unwrap());
    let recorder = store.recorder().unwrap();
    let objects = synth_objects(&mut synth, run, 0).unwrap();
    recorder.record(objects.clone()).unwrap();
    recorder.record(objects).unwrap();
    recorder
        .record(synth_objects(&mut synth, run, 1).unwrap())
        .unwrap();
    let stats = recorder.finish().unwrap();
    let rows = store.interactions_of(run).unwrap();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(
        stats.interactions, 3,
        "every interaction sent is acknowledged"
    );
    let kinds = store.stats().unwrap();
    let count = |k: &str| {
        kinds
            .kinds
            .iter()
            .find(|x| x.kind == k)
            .map_or(0, |x| x.count)
    };
    assert_eq!(count("interaction"), 2, "{kinds:?}");
    for row in &rows {
        store.get::<Interaction>(row.id.0).unwrap();
    }
    let v = store.verify().unwrap();
    assert!(v.is_ok(), "{:?}", v.problems);
}

/// Interactions go into the index many to a statement; a batch that repeats interactions
/// the store holds, among new ones, still stores each once, and every record lands where
/// the index says (the groups holding a repeat go in one at a time).
#[test]
fn interactions_the_store_holds_among_new_ones_are_turned_down_and_the_rest_located() {
    let (_dir, store, mut synth, run) = store_with_run(43);
    let rec = store.recorder().unwrap();
    let mut old = Vec::new();
    for seq in 0..40 {
        let (case, i) = synth.pair(run, seq);
        let objects = vec![encode(&case).unwrap(), encode(&i).unwrap()];
        rec.record(objects.clone()).unwrap();
        old.push(objects);
    }
    rec.finish().unwrap();
    let before = pack_bytes(&store);
    // One message, so one batch: every fourth interaction is one stored above.
    let rec = store.recorder().unwrap();
    let mut batch = Vec::new();
    let mut sent = Vec::new();
    for seq in 40..160u64 {
        if seq % 4 == 0 {
            batch.extend(old[(seq / 4) as usize % old.len()].iter().cloned());
        }
        let (case, i) = synth.pair(run, seq);
        let interaction = encode(&i).unwrap();
        sent.push((InteractionId(interaction.id), i));
        batch.push(encode(&case).unwrap());
        batch.push(interaction);
    }
    rec.record(batch).unwrap();
    let stats = rec.finish().unwrap();
    assert_eq!(pack_bytes(&store) - before, stats.stored_bytes, "{stats:?}");
    let rows = store.interactions_of(run).unwrap();
    assert_eq!(rows.len(), 160, "each interaction is indexed once");
    for (id, interaction) in &sent {
        assert_eq!(&store.get::<Interaction>(id.0).unwrap(), interaction);
    }
    assert_verified_with_nothing_unindexed(&store);
}

/// Every record of `pack` as it is in the file: (offset, header, the record's bytes).
fn records_of(store: &Store, pack: &str) -> Vec<(u64, RecordHeader, Vec<u8>)> {
    let mut out = Vec::new();
    pack::scan_pack(store.inner.backend.as_ref(), pack, &mut |item| {
        if let pack::ScanItem::Record {
            offset,
            header,
            data,
        } = item
        {
            let mut bytes = header.encode().to_vec();
            bytes.extend_from_slice(&data);
            out.push((offset, header, bytes));
        }
        Ok(())
    })
    .unwrap();
    out
}

/// Every object the index names, by id, with its kind.
fn indexed_ids(store: &Store) -> std::collections::BTreeSet<(Digest, u8)> {
    let conn = store.inner.conn().unwrap();
    index::all_objects(&conn)
        .unwrap()
        .into_iter()
        .map(|(id, kind, ..)| (id, kind))
        .collect()
}

/// verify finds nothing to say but what a clean store says.
fn assert_clean(store: &Store) {
    let v = store.verify().unwrap();
    assert!(v.is_ok(), "{:?}", v.problems);
    assert!(v.notes.is_empty(), "{:?}", v.notes);
}

/// gc keeps every object a run reaches, in packs that sort where the packs they replace
/// did (the newest finding set of a run stays the newest), and leaves a clean store.
#[test]
fn gc_keeps_every_reachable_object_and_the_order_of_packs() {
    let d = tmp();
    let (a, b, mut orphans) = {
        let store = open_1(d.path()).unwrap();
        let a = write_run(&store, 50, 120, 1).unwrap();
        // Orphans in the first pack (written by this handle) and, below, in a later one.
        let mut orphans = vec![store.put_blob(b"orphan one").unwrap()];
        let mut synth = Synth::new(77);
        let (case, _) = synth.pair(a, 10_000);
        orphans.push(crate::ids::BlobId(store.put(&case).unwrap()));
        (a, write_run(&store, 51, 30, 2).unwrap(), orphans)
    };
    let recheck = {
        // A later writer: a recheck of run a, in a pack of its own.
        let store = open_1(d.path()).unwrap();
        let mut set = Synth::new(50).finding_set(a);
        set.judged_by = "recheck".into();
        let id = FindingSetId(store.put(&set).unwrap());
        orphans.push(store.put_blob(b"orphan in the second pack").unwrap());
        id
    };
    let store = Store::open_existing(d.path()).unwrap();
    assert_eq!(store.newest_finding_set(a).unwrap(), Some(recheck));
    // In write order, each with the time its pack was opened: the recheck's is later.
    let written = store.finding_sets_written(a).unwrap();
    assert_eq!(written.last().map(|(id, _)| *id), Some(recheck));
    let times: Vec<u64> = written.iter().map(|(_, ms)| ms.unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    let before = indexed_ids(&store);
    let rows = (
        store.interactions_of(a).unwrap(),
        store.interactions_of(b).unwrap(),
    );
    let packs_before = store.inner.backend.packs().unwrap();
    assert_eq!(packs_before.len(), 2);
    drop(store);

    let store = Store::open_for_maintenance(d.path(), Maintenance::Gc).unwrap();
    let r = store.gc().unwrap();
    assert_eq!(r.objects_removed, 3, "{r:?}");
    assert_eq!(r.packs_rewritten, 2, "{r:?}");
    assert!(
        r.packs_left.is_empty() && r.duplicates_dropped == 0,
        "{r:?}"
    );
    let orphan_ids: Vec<Digest> = orphans.iter().map(|o| o.0).collect();
    let after = indexed_ids(&store);
    let expected: std::collections::BTreeSet<(Digest, u8)> = before
        .iter()
        .filter(|(id, _)| !orphan_ids.contains(id))
        .copied()
        .collect();
    assert_eq!(after, expected);
    assert_eq!(r.objects_kept, after.len() as u64);
    // Everything reachable reads back (and hashes right) from where it now is.
    for (id, kind) in &after {
        store
            .inner
            .read_payload(*id)
            .unwrap_or_else(|e| panic!("{kind} {id}: {e}"));
    }
    assert_eq!(
        (
            store.interactions_of(a).unwrap(),
            store.interactions_of(b).unwrap()
        ),
        rows
    );
    for o in &orphans {
        assert!(store.get_blob(*o).is_err());
    }
    // Each replacement sorts where its pack did.
    let packs_after = store.inner.backend.packs().unwrap();
    assert_eq!(packs_after.len(), 2, "{packs_after:?}");
    for (old, new) in packs_before.iter().zip(&packs_after) {
        assert_eq!(
            new.split('.').next(),
            old.split('.').next(),
            "{packs_after:?}"
        );
    }
    assert_eq!(store.newest_finding_set(a).unwrap(), Some(recheck));
    assert_clean(&store);
    // A second gc has nothing to do and reads no pack.
    let again = store.gc().unwrap();
    assert_eq!(
        (again.objects_removed, again.packs_rewritten),
        (0, 0),
        "{again:?}"
    );
    assert_eq!(again.objects_kept, after.len() as u64);
}

/// Second copies of objects (in the pack of the first copy and in another) and a torn tail
/// are dropped by gc even when no object is unreachable, so that verify has nothing to
/// note afterwards.
#[test]
fn gc_drops_second_copies_and_torn_tails_and_verify_is_clean_after() {
    let d = tmp();
    let run = {
        let store = open_1(d.path()).unwrap();
        write_run(&store, 60, 40, 1).unwrap()
    };
    let store = Store::open_existing(d.path()).unwrap();
    let first = store.inner.backend.packs().unwrap().remove(0);
    let records = records_of(&store, &first);
    // Copies of a blob, a test case, an interaction, the run start and its end: some into
    // a pack of their own, some at the end of the first pack.
    let pick = |kind: ObjectKind| {
        records
            .iter()
            .find(|(_, h, _)| h.kind_tag == kind.tag())
            .unwrap()
            .2
            .clone()
    };
    let mut copies = Vec::new();
    for kind in [
        ObjectKind::Blob,
        ObjectKind::TestCase,
        ObjectKind::Interaction,
    ] {
        copies.extend(pick(kind));
    }
    store.inner.backend.append(&copies).unwrap();
    store.inner.backend.seal().unwrap();
    let mut tail = pick(ObjectKind::RunStart);
    tail.extend(pick(ObjectKind::RunEnd));
    let interaction = pick(ObjectKind::Interaction);
    tail.extend_from_slice(&interaction[..interaction.len() / 2]);
    fs::OpenOptions::new()
        .append(true)
        .open(d.path().join("packs").join(&first))
        .unwrap()
        .write_all(&tail)
        .unwrap();
    let v = store.verify().unwrap();
    assert!(v.is_ok(), "{:?}", v.problems);
    assert!(
        v.notes
            .iter()
            .any(|n| n.contains("5 objects are stored more than once")),
        "{:?}",
        v.notes
    );
    assert!(
        v.notes.iter().any(|n| n.contains("torn tail")),
        "{:?}",
        v.notes
    );
    let before = indexed_ids(&store);
    let rows = store.interactions_of(run).unwrap();
    drop(store);

    let store = Store::open_for_maintenance(d.path(), Maintenance::Gc).unwrap();
    let r = store.gc().unwrap();
    assert_eq!(
        (
            r.objects_removed,
            r.duplicates_dropped,
            r.torn_tails_dropped,
            r.packs_rewritten
        ),
        (0, 5, 1, 2),
        "{r:?}"
    );
    assert!(r.bytes_after < r.bytes_before, "{r:?}");
    assert_eq!(indexed_ids(&store), before);
    assert_eq!(store.interactions_of(run).unwrap(), rows);
    for (id, _) in &before {
        store.inner.read_payload(*id).unwrap();
    }
    // The pack of copies only is gone, not replaced.
    assert_eq!(store.inner.backend.packs().unwrap().len(), 1);
    assert_clean(&store);
    assert_eq!(store.gc().unwrap().packs_rewritten, 0);
}

/// A pack gc would rewrite but cannot read whole (bytes that are not records) is left as it
/// is, with everything in it; the other packs are rewritten.
#[test]
fn gc_leaves_a_pack_it_cannot_read_whole_as_it_is() {
    let d = tmp();
    let orphan = {
        let store = open_1(d.path()).unwrap();
        write_run(&store, 61, 20, 1).unwrap();
        store.put_blob(b"orphan in the damaged pack").unwrap()
    };
    let other_orphan = {
        let store = open_1(d.path()).unwrap();
        write_run(&store, 62, 10, 2).unwrap();
        store.put_blob(b"orphan in a sound pack").unwrap()
    };
    let packs = fs::read_dir(d.path().join("packs")).unwrap().count();
    assert_eq!(packs, 2);
    let mut names: Vec<_> = fs::read_dir(d.path().join("packs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    let damaged = names[0].clone();
    let damaged_bytes = {
        let mut bytes = fs::read(&damaged).unwrap();
        bytes.extend_from_slice(b"these bytes are not a record header at all, nor zeros");
        fs::write(&damaged, &bytes).unwrap();
        bytes
    };
    let store = Store::open_for_maintenance(d.path(), Maintenance::Gc).unwrap();
    let r = store.gc().unwrap();
    assert_eq!(r.packs_rewritten, 1, "{r:?}");
    assert_eq!(r.objects_removed, 1, "{r:?}");
    assert_eq!(r.packs_left.len(), 1, "{r:?}");
    assert!(r.packs_left[0].contains("unreadable bytes"), "{r:?}");
    assert_eq!(fs::read(&damaged).unwrap(), damaged_bytes);
    assert_eq!(
        store.get_blob(orphan).unwrap(),
        b"orphan in the damaged pack"
    );
    assert!(store.get_blob(other_orphan).is_err());
    // verify reports the damage as it did before gc, and nothing else.
    let v = store.verify().unwrap();
    assert_eq!(v.problems.len(), 1, "{:?}", v.problems);
    assert!(v.problems[0].message.contains("unreadable bytes"));
}

/// gc writes nothing the index does not name should it fail before its commit: a store
/// whose index cannot be written (a newer schema) is refused before anything is copied.
#[test]
fn gc_refuses_an_index_it_must_not_write_and_leaves_the_packs_alone() {
    let d = tmp();
    {
        let store = open_1(d.path()).unwrap();
        write_run(&store, 63, 5, 1).unwrap();
        store.put_blob(b"orphan").unwrap();
    }
    let packs = || -> Vec<_> {
        let mut p: Vec<_> = fs::read_dir(d.path().join("packs"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        p.sort();
        p
    };
    let before = packs();
    rusqlite::Connection::open(d.path().join("index.sqlite"))
        .unwrap()
        .execute(
            "UPDATE meta SET value = '99' WHERE key = 'schema_version'",
            [],
        )
        .unwrap();
    let store = Store::open_for_maintenance(d.path(), Maintenance::Gc).unwrap();
    assert!(matches!(
        store.gc(),
        Err(StoreError::IndexTooNew { found: 99, .. })
    ));
    assert_eq!(packs(), before);
}

/// A process with the store open (its recorder thread too) keeps gc out, and is named;
/// maintenance keeps every opener out at once.
#[test]
fn an_open_store_refuses_maintenance_and_maintenance_refuses_openers() {
    let d = tmp();
    let store = open_1(d.path()).unwrap();
    let run = write_run(&store, 64, 5, 1).unwrap();
    let me = std::process::id().to_string();
    let err = Store::open_for_maintenance(d.path(), Maintenance::Gc)
        .err()
        .unwrap();
    let text = err.to_string();
    assert!(
        matches!(err, StoreError::InUse { .. })
            && text.contains(&format!("in use by process {me} ("))
            && text.contains(&format!("recording run {}", run.0.short(12)))
            && text.contains("gc needs it alone"),
        "{text}"
    );
    assert!(err.hint().is_some());
    // The recorder thread holds the store after the handle is gone.
    let recorder = store.recorder().unwrap();
    drop(store);
    assert!(Store::open_for_maintenance(d.path(), Maintenance::Reindex).is_err());
    recorder.finish().unwrap();
    let alone = Store::open_for_maintenance(d.path(), Maintenance::Reindex).unwrap();
    for opened in [Store::open_existing(d.path()), open_1(d.path())] {
        let err = opened.err().unwrap();
        let text = err.to_string();
        assert!(
            matches!(err, StoreError::Maintained { .. })
                && text.contains(&format!("process {me} ("))
                && text.contains("running reindex"),
            "{text}"
        );
    }
    assert_eq!(alone.operation(), Maintenance::Reindex);
    drop(alone);
    assert_eq!(
        Store::open_existing(d.path())
            .unwrap()
            .runs()
            .unwrap()
            .len(),
        1
    );
    // Nothing of this process is left in the registry.
    assert_eq!(
        fs::read_dir(d.path().join(lock::WRITERS_DIR))
            .unwrap()
            .count(),
        0
    );
}

/// An index that is not a database, or whose schema this build cannot read, makes every
/// open fail with the advice to reindex; reindex moves it aside and rebuilds it.
#[test]
fn a_damaged_index_is_moved_aside_by_reindex_and_others_are_told_to_reindex() {
    type Damage = (&'static str, fn(&Path));
    let garbage: &[Damage] = &[
        ("random bytes", |p| {
            let bytes: Vec<u8> = (0..20_000u32).map(|i| (i * 7919 % 251) as u8).collect();
            fs::write(p, bytes).unwrap();
        }),
        ("a schema of other tables", |p| {
            let c = rusqlite::Connection::open(p).unwrap();
            c.execute_batch("CREATE TABLE meta(x); INSERT INTO meta VALUES (1);")
                .unwrap();
        }),
    ];
    for (what, damage) in garbage {
        let d = tmp();
        let (run, rows) = {
            let store = open_1(d.path()).unwrap();
            let run = write_run(&store, 65, 30, 1).unwrap();
            (run, store.interactions_of(run).unwrap())
        };
        let index = d.path().join("index.sqlite");
        for suffix in ["-wal", "-shm"] {
            let _ = fs::remove_file(d.path().join(format!("index.sqlite{suffix}")));
        }
        fs::remove_file(&index).unwrap();
        damage(&index);
        for opened in [
            Store::open_existing(d.path()).err(),
            open_1(d.path()).err(),
            Store::open_for_maintenance(d.path(), Maintenance::Gc).err(),
        ] {
            let err = opened.unwrap_or_else(|| panic!("{what}: opened"));
            assert!(
                matches!(err, StoreError::DamagedIndex { .. }),
                "{what}: {err}"
            );
            assert!(
                err.hint().unwrap().contains("probe store reindex"),
                "{what}"
            );
        }
        let damaged = fs::read(&index).unwrap();
        let store = Store::open_for_maintenance(d.path(), Maintenance::Reindex).unwrap();
        let report = store.reindex().unwrap();
        let moved = report
            .moved_aside
            .clone()
            .unwrap_or_else(|| panic!("{what}"));
        assert!(moved.to.contains("index.sqlite.damaged-"), "{moved:?}");
        assert_eq!(fs::read(&moved.to).unwrap(), damaged, "{what}");
        assert_eq!(store.interactions_of(run).unwrap(), rows, "{what}");
        drop(store);
        let store = Store::open_existing(d.path()).unwrap();
        assert_clean(&store);
    }
}

/// An index damaged past its first pages (it opens, but its tables cannot be read) is
/// rebuilt by reindex into a new file all the same.
#[test]
fn an_index_damaged_inside_is_rebuilt_into_a_new_file() {
    let d = tmp();
    let (run, rows) = {
        let store = open_1(d.path()).unwrap();
        let run = write_run(&store, 66, 2_000, 1).unwrap();
        (run, store.interactions_of(run).unwrap())
    };
    let index = d.path().join("index.sqlite");
    assert!(!d.path().join("index.sqlite-wal").exists());
    let len = fs::metadata(&index).unwrap().len();
    // Every page after the third overwritten: the schema reads, the tables do not.
    let mut bytes = fs::read(&index).unwrap();
    for (i, b) in bytes.iter_mut().enumerate().skip(3 * 4096) {
        *b = (i % 253) as u8;
    }
    fs::write(&index, &bytes).unwrap();
    assert!(len > 16 * 4096);
    // Its schema reads (so a reindex opens it), its tables do not.
    index::open(&index).unwrap();
    assert!(matches!(
        Store::open_existing(d.path()),
        Err(StoreError::DamagedIndex { .. })
    ));
    let store = Store::open_for_maintenance(d.path(), Maintenance::Reindex).unwrap();
    let report = store.reindex().unwrap();
    assert!(report.moved_aside.is_some(), "{report:?}");
    assert_eq!(store.interactions_of(run).unwrap(), rows);
    drop(store);
    assert_clean(&Store::open_existing(d.path()).unwrap());
}

/// A store this user may not write (a read-only medium, another user's store) opens for
/// reading: with the store lock where the lock file exists, without it (and saying so)
/// where it cannot be created; its index is read as it is. Skipped for a user who writes
/// read-only directories all the same (root).
#[cfg(unix)]
#[test]
fn a_store_this_user_cannot_write_opens_for_reading() {
    use std::os::unix::fs::PermissionsExt;
    /// Makes the store read-only, and writable again when dropped (even on a panic).
    struct ReadOnly(std::path::PathBuf);
    fn set_modes(dir: &Path, dirs: u32, files: u32) {
        for e in fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                set_modes(&path, dirs, files);
            } else {
                fs::set_permissions(&path, fs::Permissions::from_mode(files)).unwrap();
            }
        }
        fs::set_permissions(dir, fs::Permissions::from_mode(dirs)).unwrap();
    }
    impl Drop for ReadOnly {
        fn drop(&mut self) {
            set_modes(&self.0, 0o755, 0o644);
        }
    }
    for with_lock_file in [true, false] {
        let d = tmp();
        let (run, rows) = {
            let store = open_1(d.path()).unwrap();
            let run = write_run(&store, 67, 20, 1).unwrap();
            (run, store.interactions_of(run).unwrap())
        };
        if !with_lock_file {
            // As a build from before the lock left it.
            fs::remove_file(d.path().join(lock::LOCK_FILE)).unwrap();
        }
        let _ = fs::remove_dir_all(d.path().join(lock::WRITERS_DIR));
        set_modes(d.path(), 0o555, 0o444);
        let _restore = ReadOnly(d.path().to_path_buf());
        if fs::write(d.path().join("written"), b"").is_ok() {
            eprintln!("skipped: this user writes read-only directories");
            return;
        }
        let store = Store::open_existing(d.path()).unwrap();
        assert_eq!(store.interactions_of(run).unwrap(), rows);
        for row in &rows {
            store.get::<Interaction>(row.id.0).unwrap();
        }
        let v = store.verify().unwrap();
        assert!(v.is_ok(), "{:?}", v.problems);
        assert!(
            v.notes.iter().any(|n| n.contains("for reading only")),
            "{:?}",
            v.notes
        );
        assert_eq!(
            v.notes
                .iter()
                .any(|n| n.contains("opened without the store lock")),
            !with_lock_file,
            "{:?}",
            v.notes
        );
        assert!(store.put_blob(b"new").is_err());
        drop(store);
        assert!(open_1(d.path()).is_err());
        assert!(Store::open_for_maintenance(d.path(), Maintenance::Gc).is_err());
    }
}

#[test]
fn a_mutation_kind_is_stored_as_its_name_and_one_from_a_newer_probe_reads_back_as_written() {
    use crate::ids::{CaseId, Digest};
    use crate::model::{AcceptedRef, Mutation, MutationKind};
    let d = tmp();
    let store = open_1(d.path()).unwrap();
    let mut synth = Synth::new(3);
    let (mut case, _) = synth.pair(RunId(Digest::of(b"run")), 0);
    let newer = MutationKind::Unknown("swapHeaders".into());
    for kind in MutationKind::ALL.into_iter().chain([newer.clone()]) {
        // The same bytes as the name alone: what stores written before the type hold.
        assert_eq!(
            rmp_serde::to_vec_named(&kind).unwrap(),
            rmp_serde::to_vec_named(kind.as_str()).unwrap(),
            "{kind}"
        );
        case.mutation = Some(Mutation {
            from: AcceptedRef {
                case: CaseId(Digest::of(b"accepted")),
                seq: 1,
            },
            kind: kind.clone(),
            place: "body".into(),
            description: "changed".into(),
        });
        let id = store.put(&case).unwrap();
        let back: TestCase = store.get(id).unwrap();
        assert_eq!(back.mutation.as_ref().map(|m| &m.kind), Some(&kind));
        // Read and written again, it keeps its id.
        assert_eq!(encode(&back).unwrap().id, id);
    }
    // A name this build does not know reads, never fails.
    let read: MutationKind =
        rmp_serde::from_slice(&rmp_serde::to_vec("swapHeaders").unwrap()).unwrap();
    assert_eq!(read, newer);
    let read: MutationKind = serde_json::from_str("\"wrongType\"").unwrap();
    assert_eq!(read, MutationKind::WrongType);
}

/// Two runs started together on a store that does not exist yet both record into it: the
/// creators race on the `FORMAT` file (once: "cannot rename .probe/FORMAT.tmp").
#[test]
fn many_creators_of_one_new_store_at_once_all_open_it() {
    for format in [StoreFormat::One, StoreFormat::Two] {
        for trial in 0..20 {
            let d = tmp();
            let dir = d.path().join(".probe");
            let barrier = std::sync::Barrier::new(6);
            std::thread::scope(|scope| {
                let handles: Vec<_> = (0..6)
                    .map(|_| {
                        scope.spawn(|| {
                            barrier.wait();
                            Store::open_or_create(&dir, format).map(|_| ())
                        })
                    })
                    .collect();
                for h in handles {
                    let opened = h.join().unwrap();
                    assert!(opened.is_ok(), "{format:?}, trial {trial}: {opened:?}");
                }
            });
            let left: Vec<String> = fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("FORMAT.tmp"))
                .collect();
            assert!(left.is_empty(), "temporary files left: {left:?}");
            let store = Store::open_existing(&dir).unwrap();
            write_run(&store, 1, 3, 1).unwrap();
        }
    }
}

/// `@latest` names the newest run of the store, and after a tag or a name the newest run
/// they name (the spelling of docs/ci.md's recipe, `tag:branch=main@latest`), in both
/// layouts; an empty store has no latest run.
#[test]
fn at_latest_names_the_newest_run_of_the_store_of_a_tag_or_of_a_name() {
    for format in [StoreFormat::One, StoreFormat::Two] {
        let d = tmp();
        let store = Store::open_or_create(d.path(), format).unwrap();
        assert!(matches!(
            store.resolve_run("@latest"),
            Err(StoreError::NotFound { .. })
        ));
        let synth = Synth::new(7);
        let put = |started: u64, name: &str, branch: &str| {
            let mut start = synth.run_start(started);
            start.name = Some(name.to_owned());
            start.tags.insert("branch".into(), branch.into());
            RunId(store.put(&start).unwrap())
        };
        let main_old = put(1_000, "nightly", "main");
        let main_new = put(2_000, "nightly", "main");
        let feature = put(3_000, "pr", "feature");
        assert_ne!(main_old, main_new);
        assert_eq!(store.resolve_run("@latest").unwrap(), feature);
        assert_eq!(store.resolve_run(" @latest ").unwrap(), feature);
        assert_eq!(
            store.resolve_run("tag:branch=main@latest").unwrap(),
            main_new
        );
        assert_eq!(store.resolve_run("nightly@latest").unwrap(), main_new);
        assert_eq!(store.resolve_run("pr@latest").unwrap(), feature);
        assert_eq!(
            store.resolve("@latest").unwrap(),
            (ObjectKind::RunStart, feature.0)
        );
        assert!(matches!(
            store.resolve_run("tag:branch=gone@latest"),
            Err(StoreError::NotFound { .. })
        ));
    }
}
