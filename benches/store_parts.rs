//! Measurements of the store's parts, each alone: the recorder's throughput, gc of a
//! large pack, and the zstd dictionaries' ratios and speeds. Figures of these are in
//! docs/store.md. (They were ignored tests in `src/store/`; a measurement reports figures
//! and checks nothing, so it lives here.)
//!
//! `cargo bench --bench store_parts -- <recorder|gc|dict|all> [N]`, where N is the number
//! of interactions (defaults: recorder 50,000, gc 20,000, dict 20,000; `PROBE_GC_N` also
//! sets gc's, and `PROBE_GC_IDS_INDEXED=1` indexes the interactions' ids before gc). Each writes a format-1 store of synthetic runs (`store::synthetic`) in a
//! temporary directory.

use std::time::Instant;

use probe::ids::RunId;
use probe::store::dict::{train, DICT_MAX_BYTES};
use probe::store::index;
use probe::store::synthetic::{synth_objects, write_run, Synth};
use probe::store::{encode, externalize_bodies, EncodedObject, Maintenance, Store, StoreFormat};

/// Recorder throughput alone (objects encoded beforehand).
fn recorder(n: u64) {
    let d = tempfile::tempdir().expect("temporary directory");
    let store = Store::open_or_create(d.path(), StoreFormat::One).expect("store");
    let mut synth = Synth::new(42);
    let run = RunId(store.put(&synth.run_start(1)).expect("run start"));
    let batches: Vec<Vec<EncodedObject>> = (0..n)
        .map(|seq| synth_objects(&mut synth, run, seq).expect("objects"))
        .collect();
    let t = Instant::now();
    let rec = store.recorder().expect("recorder");
    for b in batches {
        rec.record(b).expect("record");
    }
    let stats = rec.finish().expect("finish");
    let s = t.elapsed().as_secs_f64();
    println!(
        "recorder: {n} interactions ({} objects written, {} deduplicated, {} batches) in {s:.2} s: {:.0} interactions/s",
        stats.written,
        stats.deduplicated,
        stats.batches,
        n as f64 / s
    );
}

/// gc of a store of `n` interactions whose one pack also holds an orphan, so that gc
/// rewrites the whole pack and moves every object's location; then a second gc, which
/// finds nothing to do.
fn gc(n: u64) {
    let d = tempfile::tempdir().expect("temporary directory");
    let store = Store::open_or_create(d.path(), StoreFormat::One).expect("store");
    let t = Instant::now();
    write_run(&store, 42, n, 1).expect("run");
    store
        .put_blob(b"an orphan in the run's pack")
        .expect("orphan");
    println!(
        "gc: wrote {n} interactions in {:.2} s",
        t.elapsed().as_secs_f64()
    );
    // The ids of interactions a recorder wrote since its last pass are not indexed, which
    // made the gc of before this measure quadratic; with them indexed it was not.
    if std::env::var_os("PROBE_GC_IDS_INDEXED").is_some() {
        let (conn, _) = index::open(&d.path().join("index.sqlite")).expect("index");
        index::index_interaction_ids(&conn).expect("ids indexed");
    }
    drop(store);
    let store = Store::open_for_maintenance(d.path(), Maintenance::Gc).expect("store alone");
    let t = Instant::now();
    let r = store.gc().expect("gc");
    println!("gc: {r:?} in {:.2} s", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let r = store.gc().expect("second gc");
    println!("second gc: {r:?} in {:.2} s", t.elapsed().as_secs_f64());
}

/// Dictionaries trained on the first 2,000 of `n` interactions and test cases, and the
/// rest compressed at levels 1 and 3, with and without them.
fn dict(n: u64) {
    let mut synth = Synth::new(42);
    let run = RunId(encode(&synth.run_start(0)).expect("run start").id);
    let mut interactions = Vec::new();
    let mut cases = Vec::new();
    for seq in 0..n {
        let (case, mut i) = synth.pair(run, seq);
        externalize_bodies(&mut i);
        interactions.push(encode(&i).expect("interaction").payload);
        cases.push(encode(&case).expect("case").payload);
    }
    let trained = (n as usize / 10).clamp(1, 2000);
    for (name, objects) in [("interaction", &interactions), ("test_case", &cases)] {
        let raw: usize = objects.iter().map(|o| o.len()).sum();
        let t = Instant::now();
        let dict = train(&objects[..trained], DICT_MAX_BYTES).expect("dictionary");
        let train_s = t.elapsed().as_secs_f64();
        let rest = &objects[trained..];
        println!(
            "{name}: {} objects, mean {} B; dictionary {} B trained on {trained} in {train_s:.2} s",
            objects.len(),
            raw / objects.len(),
            dict.len()
        );
        for level in [1, 3] {
            for with_dict in [false, true] {
                compress_rest(rest, level, with_dict.then_some(dict.as_slice()));
            }
        }
    }
}

/// One line of [`dict`]: `rest` compressed at `level`, with `dict` or none, and read back.
fn compress_rest(rest: &[Vec<u8>], level: i32, dict: Option<&[u8]>) {
    let rest_raw: usize = rest.iter().map(|o| o.len()).sum();
    let mut c = match dict {
        Some(d) => zstd::bulk::Compressor::with_dictionary(level, d),
        None => zstd::bulk::Compressor::new(level),
    }
    .expect("compressor");
    let t = Instant::now();
    let frames: Vec<Vec<u8>> = rest
        .iter()
        .map(|o| c.compress(o).expect("compress"))
        .collect();
    let cs = t.elapsed().as_secs_f64();
    let stored: usize = frames.iter().map(|f| f.len()).sum();
    let mut d = match dict {
        Some(d) => zstd::bulk::Decompressor::with_dictionary(d),
        None => zstd::bulk::Decompressor::new(),
    }
    .expect("decompressor");
    let t = Instant::now();
    for (f, o) in frames.iter().zip(rest) {
        let back = d.decompress(f, o.len()).expect("decompress");
        assert_eq!(back.len(), o.len());
    }
    let ds = t.elapsed().as_secs_f64();
    println!(
        "  L{level} {:<7} ratio {:.2}x, {} B/object, compress {:.0} MB/s, decompress {:.0} MB/s",
        if dict.is_some() { "+dict" } else { "no dict" },
        rest_raw as f64 / stored as f64,
        stored / rest.len().max(1),
        rest_raw as f64 / cs / 1e6,
        rest_raw as f64 / ds / 1e6,
    );
}

fn main() {
    // `cargo bench` passes `--bench`; the rest are ours.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let which = args.first().map_or("all", String::as_str);
    let n: Option<u64> = args.get(1).and_then(|a| a.parse().ok());
    let gc_n = n.or_else(|| std::env::var("PROBE_GC_N").ok()?.parse().ok());
    if matches!(which, "recorder" | "all") {
        recorder(n.unwrap_or(50_000));
    }
    if matches!(which, "gc" | "all") {
        gc(gc_n.unwrap_or(20_000));
    }
    if matches!(which, "dict" | "all") {
        dict(n.unwrap_or(20_000));
    }
}
