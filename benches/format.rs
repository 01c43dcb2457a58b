//! Store-size benchmark: bytes per interaction of probe's store against a gzip -9 HAR of the
//! same traffic, side by side in one run.
//!
//! Run with `cargo bench --bench format` (120,000 requests; `-- --requests N` for another
//! number, `-- --quick` for 20,000). The traffic is real fuzzing traffic: the `probe`
//! binary runs against the demo API (`src/fixture/demo.rs`, served in this process, every
//! planted fault on) with its shipped plan, into a fresh store, so the store holds what a
//! campaign holds (nominal, changed, pushing, series, shrink and pinpoint requests, their
//! test cases, bodies, findings). Then:
//! - the store's bytes: packs, dictionaries and the index (with its write-ahead log, after
//!   the run has checkpointed it), each per interaction;
//! - the same run exported as HAR 1.2 (`probe::har::write_har`, which `probe export
//!   --format har` writes) piped through `gzip -9`, per interaction.
//!
//! - the same store made format 2 by `probe store upgrade` (a copy): its packs and index;
//! - what format 2's blocks alone make of the same objects (`probe::store::v2`): the run's test cases and interactions in sending order, each new test
//!   case just before its first interaction, with their ids spliced out, sealed into 1 MiB
//!   blocks at zstd level 6 without a dictionary, and the body blobs into blocks of their
//!   own; the bytes of those blocks per interaction, and the CPU their encoding and
//!   sealing took (the encoding cost a recorder pays).
//!
//! Goal (issue 31): the store at no more than 0.5x the gzipped HAR (moonshot 0.3x).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use std::collections::HashSet;
use std::time::Instant;

use probe::fixture::{demo, RunningFixture};
use probe::ids::{Digest, RunId};
use probe::model::{BodyBytes, Interaction, TestCase};
use probe::store::v2::block::{self, Compression, Stream};
use probe::store::v2::content::ContentBuilder;
use probe::store::{encode, encode_blob, EncodedObject, Store};

const WORKERS: usize = 16;

/// Raw content a format-2 block is sealed at.
const BLOCK_BYTES: usize = 1 << 20;
/// The zstd level format 2 seals blocks at.
const LEVEL: i32 = 6;

/// One stream of format-2 blocks being written: what they came to.
#[derive(Default)]
struct Blocks {
    open: ContentBuilder,
    blocks: u64,
    bytes: u64,
}

impl Blocks {
    fn add(&mut self, stream: Stream, object: &EncodedObject) {
        self.open
            .add(object.kind.tag(), &object.payload)
            .expect("an object fits a block");
        if self.open.len() >= BLOCK_BYTES {
            self.seal(stream);
        }
    }

    fn seal(&mut self, stream: Stream) {
        if self.open.is_empty() {
            return;
        }
        let content = std::mem::take(&mut self.open);
        let count = content.count();
        let sealed = block::seal(stream, count, &content.finish(), Compression::Level(LEVEL))
            .expect("the block seals");
        // Every block opens again to what was sealed.
        block::open(&sealed, block::no_dictionary).expect("the block opens");
        self.blocks += 1;
        self.bytes += sealed.len() as u64;
    }
}

/// The run's objects as format 2 blocks: exchange blocks (test cases and interactions)
/// and blob blocks; returns them and the seconds their encoding and sealing took.
fn format_2(store: &Store, run: RunId) -> (Blocks, Blocks, f64) {
    let mut exchange = Blocks::default();
    let mut blobs = Blocks::default();
    let mut seen: HashSet<Digest> = HashSet::new();
    let mut encoding = 0.0;
    let mut rows = store.interactions_of(run).expect("interactions listed");
    rows.sort_by_key(|r| r.seq);
    for row in rows {
        let interaction: Interaction = store.get(row.id.digest()).expect("interaction read");
        let case: Option<TestCase> = (!seen.contains(&interaction.case.0))
            .then(|| store.get(interaction.case.0).expect("test case read"));
        let bodies: Vec<Vec<u8>> = [
            interaction.request.body.as_ref(),
            interaction.outcome.response().and_then(|r| r.body.as_ref()),
        ]
        .into_iter()
        .flatten()
        .filter_map(|b| match b {
            BodyBytes::Blob { id, .. } if !seen.contains(&id.0) => {
                Some(store.get_blob(*id).expect("blob read"))
            }
            _ => None,
        })
        .collect();
        let t0 = Instant::now();
        for body in bodies {
            let blob = encode_blob(&body);
            if seen.insert(blob.id) {
                blobs.add(Stream::Blob, &blob);
            }
        }
        if let Some(case) = case {
            let case = encode(&case).expect("test case encodes");
            seen.insert(case.id);
            exchange.add(Stream::Exchange, &case);
        }
        exchange.add(
            Stream::Exchange,
            &encode(&interaction).expect("interaction encodes"),
        );
        encoding += t0.elapsed().as_secs_f64();
    }
    let t0 = Instant::now();
    exchange.seal(Stream::Exchange);
    blobs.seal(Stream::Blob);
    encoding += t0.elapsed().as_secs_f64();
    (exchange, blobs, encoding)
}

/// Bytes of every file under `dir` whose path relative to it starts with one of `prefixes`.
fn bytes_under(dir: &Path, prefixes: &[&str]) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).into_iter().flatten().flatten() {
            let path = entry.path();
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                stack.push(path);
                continue;
            }
            let relative = path.strip_prefix(dir).unwrap_or(&path).to_string_lossy();
            if prefixes.iter().any(|p| relative.starts_with(p)) {
                total += meta.len();
            }
        }
    }
    total
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let requests: u64 = if args.iter().any(|a| a == "--quick") {
        20_000
    } else {
        args.iter()
            .position(|a| a == "--requests")
            .and_then(|i| args.get(i + 1))
            .and_then(|n| n.parse().ok())
            .unwrap_or(120_000)
    };
    let dir = tempfile::tempdir().expect("temporary directory");
    let spec = dir.path().join("openapi.yaml");
    std::fs::write(&spec, demo::DOCUMENT).expect("document written");
    let store_dir = dir.path().join("store");
    let report = dir.path().join("report.json");
    let fixture = RunningFixture::start(demo::router(demo::Faults::ALL)).expect("fixture starts");
    println!("recording {requests} requests of fuzzing traffic against the demo API ...");
    let status = Command::new(env!("CARGO_BIN_EXE_probe"))
        .args(["--no-progress", "--store"])
        .arg(&store_dir)
        .args(["run", "--spec"])
        .arg(&spec)
        .args(["--url", &fixture.base_url(), "--seed", "1", "--workers"])
        .arg(WORKERS.to_string())
        .arg("--requests")
        .arg(requests.to_string())
        .arg("--report")
        .arg(&report)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("probe runs");
    assert!(
        status.code().is_some_and(|c| c <= 1),
        "probe run failed: {status}"
    );
    drop(fixture);
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report).expect("report written")).expect("JSON");
    let interactions = report["totals"]["requests"].as_u64().expect("requests") as f64;
    let run = report["run"]["id"].as_str().expect("run id");

    let packs = bytes_under(&store_dir, &["packs"]) as f64;
    let dicts = bytes_under(&store_dir, &["dicts"]) as f64;
    let index = bytes_under(&store_dir, &["index.sqlite"]) as f64;
    let store_total = packs + dicts + index;

    let store = Store::open(&store_dir).expect("store opens");
    let run = store.resolve_run(run).expect("run found");
    let mut gzip = Command::new("gzip")
        .arg("-9")
        .arg("-c")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("gzip runs (it is needed for the HAR baseline)");
    let mut stdin = gzip.stdin.take().expect("gzip's stdin");
    // Read gzip's output while writing its input, so neither pipe fills and blocks.
    let mut stdout = gzip.stdout.take().expect("gzip's stdout");
    let counting = std::thread::spawn(move || {
        std::io::copy(&mut stdout, &mut std::io::sink()).expect("gzip output read")
    });
    let mut har = CountingWriter {
        inner: std::io::BufWriter::new(&mut stdin),
        bytes: 0,
    };
    let exported = probe::har::write_har(&store, run, &mut har).expect("HAR written");
    har.flush().expect("HAR flushed");
    let har_bytes = har.bytes as f64;
    drop(har);
    drop(stdin);
    let gzipped = counting.join().expect("gzip reader") as f64;
    assert!(gzip.wait().expect("gzip ends").success(), "gzip failed");
    assert_eq!(
        exported.entries as f64, interactions,
        "every interaction exported"
    );

    let (exchange, blobs, encoding) = format_2(&store, run);
    let format_2_total = (exchange.bytes + blobs.bytes) as f64;
    drop(store);

    // The same store made format 2 by `probe store upgrade`: blocks and index as a
    // format-2 store keeps them.
    let upgraded = dir.path().join("store-2");
    let copied = Command::new("cp")
        .arg("-a")
        .arg(&store_dir)
        .arg(&upgraded)
        .status()
        .expect("cp runs");
    assert!(copied.success(), "the store is copied");
    let started = Instant::now();
    let upgrade = Command::new(env!("CARGO_BIN_EXE_probe"))
        .args(["--no-progress", "--store"])
        .arg(&upgraded)
        .args(["store", "upgrade"])
        .output()
        .expect("probe store upgrade runs");
    assert!(
        upgrade.status.success(),
        "probe store upgrade failed: {}",
        String::from_utf8_lossy(&upgrade.stderr)
    );
    let upgrade_seconds = started.elapsed().as_secs_f64();
    let packs_2 = bytes_under(&upgraded, &["packs-2"]) as f64;
    let index_2 = bytes_under(&upgraded, &["index-2.sqlite"]) as f64;
    let upgraded_total = packs_2 + index_2;

    let per = |b: f64| b / interactions;
    println!(
        "{interactions} interactions, {} series, {} distinct findings",
        report["totals"]["series"], report["totals"]["findings"]
    );
    println!("bytes per interaction:");
    println!(
        "  store format 1: {:.1} (packs {:.1}, dictionaries {:.1}, index {:.1})",
        per(store_total),
        per(packs),
        per(dicts),
        per(index)
    );
    println!(
        "  HAR 1.2: {:.1} raw, {:.1} gzip -9",
        per(har_bytes),
        per(gzipped)
    );
    println!(
        "  format 2 blocks (no index yet): {:.1} (exchange {:.1} in {} blocks, blobs {:.1} in {} blocks); encoding and sealing {:.1} µs an interaction on one core",
        per(format_2_total),
        per(exchange.bytes as f64),
        exchange.blocks,
        per(blobs.bytes as f64),
        blobs.blocks,
        encoding / interactions * 1e6
    );
    println!(
        "  store format 2 (probe store upgrade of the same store, {:.1} s): {:.1} (packs {:.1}, index {:.1})",
        upgrade_seconds,
        per(upgraded_total),
        per(packs_2),
        per(index_2)
    );
    println!(
        "ratio to the gzip -9 HAR: store format 1 {:.2}, store format 2 {:.2}, format 2 blocks alone {:.2} (goal for format 2 <= 0.50, moonshot 0.30)",
        store_total / gzipped,
        upgraded_total / gzipped,
        format_2_total / gzipped
    );
}

/// Counts what passes through to `inner`.
struct CountingWriter<W: Write> {
    inner: W,
    bytes: u64,
}

impl<W: Write> Write for CountingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}
