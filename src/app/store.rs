//! `probe store verify|stats|gc|reindex|upgrade|synth` (`push|pull` are in `remote.rs`): inspecting and maintaining the
//! store.
//!
//! `verify` exits with [`exit::STORE`] when it finds any problem and lists each by object
//! id. `gc`, `reindex` and `upgrade` open the store alone ([`Store::open_for_maintenance`]): while
//! another process has it open they are refused ([`exit::STORE`]), naming the processes.
//! `synth` (hidden; built with the feature `dev-tools`, which the tests turn on) writes a
//! synthetic run for crash tests and benchmarks; with `--print-acks` it prints each
//! interaction id, flushed, once the interaction is durable.
//!
//! Depends on: `store`, `cli`, `error`.

use std::path::Path;

use crate::cli::{GcOpts, StoreCommand, StoreJsonOpts, UpgradeOpts};
use crate::error::CliError;
use crate::exit;
use crate::store::{Maintenance, Store};

use super::Out;

/// Runs one `probe store` subcommand.
pub fn exec_store(cmd: &StoreCommand, store_dir: &Path, out: &mut Out<'_>) -> Result<u8, CliError> {
    match cmd {
        StoreCommand::Verify(o) => exec_verify(o, store_dir, out),
        StoreCommand::Stats(o) => exec_stats(o, store_dir, out),
        StoreCommand::Gc(o) => exec_gc(o, store_dir, out),
        StoreCommand::Reindex(o) => exec_reindex(o, store_dir, out),
        StoreCommand::Upgrade(o) => exec_upgrade(o, store_dir, out),
        StoreCommand::Push(o) => super::remote::exec_push(o, out),
        StoreCommand::Pull(o) => super::remote::exec_pull(o, out),
        StoreCommand::Merge(o) => super::merge::exec_merge(o, out),
        #[cfg(feature = "dev-tools")]
        StoreCommand::Synth(o) => synth::exec_synth(o, store_dir, out),
    }
}

fn json_line(out: &mut Out<'_>, v: &impl serde::Serialize) -> Result<(), CliError> {
    let text = serde_json::to_string(v)
        .map_err(|e| CliError::internal("cannot encode the result as JSON", e))?;
    writeln!(out, "{text}")
}

/// `probe store verify`.
pub fn exec_verify(o: &StoreJsonOpts, store_dir: &Path, out: &mut Out<'_>) -> Result<u8, CliError> {
    let store = Store::open_existing(store_dir)?;
    let report = store.verify()?;
    if o.json {
        json_line(out, &report)?;
    } else {
        for note in &report.notes {
            writeln!(out, "note: {note}")?;
        }
        for p in &report.problems {
            writeln!(out, "problem: {}", p.message)?;
        }
        writeln!(
            out,
            "checked {} objects in {} packs: {}",
            report.objects,
            report.packs,
            if report.is_ok() {
                "ok".to_owned()
            } else {
                format!("{} problems", report.problems.len())
            }
        )?;
    }
    Ok(if report.is_ok() {
        exit::OK
    } else {
        exit::STORE
    })
}

/// `probe store stats`.
pub fn exec_stats(o: &StoreJsonOpts, store_dir: &Path, out: &mut Out<'_>) -> Result<u8, CliError> {
    let store = Store::open_existing(store_dir)?;
    let s = store.stats()?;
    if o.json {
        json_line(out, &s)?;
        return Ok(exit::OK);
    }
    writeln!(
        out,
        "{:<12} {:>10} {:>14} {:>14}",
        "KIND", "OBJECTS", "RAW BYTES", "STORED BYTES"
    )?;
    for k in &s.kinds {
        writeln!(
            out,
            "{:<12} {:>10} {:>14} {:>14}",
            k.kind, k.count, k.raw_bytes, k.stored_bytes
        )?;
    }
    writeln!(
        out,
        "{:<12} {:>10} {:>14} {:>14}",
        "total", s.objects, s.raw_bytes, s.stored_bytes
    )?;
    writeln!(
        out,
        "packs: {} ({} bytes); index: {} bytes; dictionaries: {} ({} bytes)",
        s.packs, s.pack_bytes, s.index_bytes, s.dicts, s.dict_bytes
    )?;
    writeln!(
        out,
        "compression: {:.2}x; body dedup: {} blob references to {} blobs ({:.2}x)",
        s.compression_ratio,
        s.blob_references,
        s.kinds
            .iter()
            .find(|k| k.kind == "blob")
            .map_or(0, |k| k.count),
        s.dedup_ratio
    )?;
    Ok(exit::OK)
}

/// `probe store gc`.
pub fn exec_gc(o: &GcOpts, store_dir: &Path, out: &mut Out<'_>) -> Result<u8, CliError> {
    if o.grace.is_some() {
        return Err(CliError::usage(
            "`--grace` is for a store on object storage: a local gc holds the store alone, so no writer can name what it drops",
        ));
    }
    let store = Store::open_for_maintenance(store_dir, Maintenance::Gc)?;
    let r = store.gc()?;
    if o.json {
        json_line(out, &r)?;
    } else {
        for left in &r.packs_left {
            writeln!(
                out,
                "left {left} (`probe store verify` lists what is wrong)"
            )?;
        }
        let mut dropped = String::new();
        if r.duplicates_dropped > 0 {
            dropped.push_str(&format!(
                "; dropped {} duplicate copies",
                r.duplicates_dropped
            ));
        }
        if r.torn_tails_dropped > 0 {
            dropped.push_str(&format!("; dropped {} torn tails", r.torn_tails_dropped));
        }
        writeln!(
            out,
            "removed {} objects, kept {}; rewrote {} packs ({} -> {} bytes){dropped}",
            r.objects_removed, r.objects_kept, r.packs_rewritten, r.bytes_before, r.bytes_after
        )?;
    }
    Ok(exit::OK)
}

/// `probe store reindex`.
pub fn exec_reindex(
    o: &StoreJsonOpts,
    store_dir: &Path,
    out: &mut Out<'_>,
) -> Result<u8, CliError> {
    let store = Store::open_for_maintenance(store_dir, Maintenance::Reindex)?;
    let r = store.reindex()?;
    if o.json {
        json_line(out, &r)?;
    } else {
        if let Some(moved) = &r.moved_aside {
            writeln!(
                out,
                "the index could not be read ({}): moved it aside to {}",
                moved.reason, moved.to
            )?;
        }
        for s in &r.skipped {
            writeln!(out, "skipped: {s}")?;
        }
        writeln!(
            out,
            "indexed {} objects from {} packs ({} torn tails ignored, {} damaged records skipped)",
            r.objects,
            r.packs,
            r.torn_tails,
            r.skipped.len()
        )?;
    }
    Ok(exit::OK)
}

/// `probe store upgrade`.
pub fn exec_upgrade(o: &UpgradeOpts, store_dir: &Path, out: &mut Out<'_>) -> Result<u8, CliError> {
    let store = Store::open_for_maintenance(store_dir, Maintenance::Upgrade)?;
    let r = store.upgrade(o.keep_old)?;
    if o.json {
        json_line(out, &r)?;
    } else if r.already_format_2 {
        writeln!(
            out,
            "{} is format 2 already: nothing to do",
            store_dir.display()
        )?;
    } else {
        let ratio = r.bytes_after as f64 / r.bytes_before.max(1) as f64;
        writeln!(
            out,
            "upgraded {} objects of {} runs to store format 2 in {:.1}s: {} -> {} bytes ({:.2}x){}",
            r.objects,
            r.runs,
            r.seconds,
            r.bytes_before,
            r.bytes_after,
            ratio,
            if r.kept_old {
                "; the format-1 files are kept beside them (`packs/`, `dicts/`, `index.sqlite`)"
            } else {
                ""
            }
        )?;
    }
    Ok(exit::OK)
}

/// The hidden `probe store synth`, built with the feature `dev-tools` only.
#[cfg(feature = "dev-tools")]
mod synth {
    use std::path::Path;
    use std::time::Duration;

    use crate::cli::SynthOpts;
    use crate::error::CliError;
    use crate::exit;
    use crate::ids::{FindingSetId, InteractionId, RunId};
    use crate::store::encode;
    use crate::store::synthetic::{synth_objects, Synth};

    use crate::app::Out;

    /// `probe store synth`: a synthetic run, RunStart first, RunEnd last.
    pub fn exec_synth(o: &SynthOpts, store_dir: &Path, out: &mut Out<'_>) -> Result<u8, CliError> {
        let store = crate::app::run::open_store_to_write(store_dir)?;
        let mut synth = Synth::new(o.seed);
        store.put_blob(&synth.document())?;
        let run = RunId(store.put(&synth.run_start(crate::clock::now_ms()))?);
        let (recorder, acks) = store.recorder_with_acks()?;
        // `Some(wait)`: wait that long for the next acknowledgement; `None`: until the channel ends.
        let print = |out: &mut Out<'_>, wait: Option<Duration>| -> Result<(), CliError> {
            if !o.print_acks {
                while acks.try_recv().is_ok() {}
                return Ok(());
            }
            let mut any = false;
            let mut wait = wait;
            loop {
                let got = match wait {
                    None => acks.recv().ok(),
                    Some(d) => acks.recv_timeout(d).ok(),
                };
                // Only the first receive waits: then whatever else has come, without waiting.
                wait = wait.map(|_| Duration::ZERO);
                let Some(ids) = got else { break };
                for id in ids {
                    writeln!(out, "{id}")?;
                    any = true;
                }
            }
            if any {
                out.flush()?;
            }
            Ok(())
        };
        let mut steps = Vec::new();
        for seq in 0..o.interactions {
            let objects = synth_objects(&mut synth, run, seq)?;
            if let Some(interaction) = objects.last() {
                steps.push((seq, InteractionId(interaction.id)));
            }
            let mut messages = vec![objects];
            if o.series_every > 0 && steps.len() as u64 >= o.series_every {
                messages.push(vec![encode(&synth.series(run, &steps))?]);
                steps.clear();
            }
            for mut objects in messages {
                // While the channel is full, go on printing what becomes durable: a
                // blocking record would hold acknowledgements back until the recorder
                // took the next message.
                while let Some(back) = recorder.try_record(objects)? {
                    objects = back;
                    print(out, Some(Duration::from_millis(5)))?;
                }
            }
            print(out, Some(Duration::ZERO))?;
        }
        let stats = recorder.finish()?;
        // The recorder is gone, so the ack channel ends: drain it to the last id.
        print(out, None)?;
        let set = FindingSetId(store.put(&synth.finding_set(run))?);
        let mut end = synth.run_end(run, stats.interactions, set);
        end.ended_ms = crate::clock::now_ms();
        store.put(&end)?;
        if !o.print_acks {
            writeln!(
                out,
                "run {}: {} interactions, {} objects written, {} deduplicated, {} -> {} bytes",
                run.short(12),
                stats.interactions,
                stats.written,
                stats.deduplicated,
                stats.raw_bytes,
                stats.stored_bytes
            )?;
        }
        Ok(exit::OK)
    }
}
