//! `probe store upgrade`: rewrites a format-1 store as format 2, beside the old files, and
//! makes it format 2 only once the new files hold every object and verify.
//!
//! Order of work, each step a commit point for what follows (FORMAT.md §7):
//! 1. the format-1 store is verified; a store with problems is refused, unchanged;
//! 2. what an interrupted upgrade left (`packs-2/`, `index-2.sqlite*`) is removed;
//! 3. every object is written into `packs-2/` and `index-2.sqlite` through the same writer
//!    a format-2 store uses ([`Writer2::write_now`]), in an order that compresses well: per
//!    run (oldest first) its start and the files it read, then its exchange in sending
//!    order (each body, then its test case the first time it is used, then the
//!    interaction), then everything else (series, finding sets, run ends, objects no run
//!    reaches) in pack order;
//! 4. every object of the old index is read back from the new files (found by id, its
//!    payload restored and re-hashed, its kind the same), and runs, run ends, finding sets
//!    and each run's interaction count are compared;
//! 5. `FORMAT` is rewritten to `probe-store 2.0` (atomically, then the directory synced):
//!    from here on the store is format 2;
//! 6. unless asked to keep them, the format-1 files are deleted (a crash here leaves files
//!    format-2 readers ignore; the next upgrade attempt says the store is format 2).
//!
//! A crash or error before step 5 leaves the format-1 store as it was: format-1 readers
//! never look at `packs-2/` or `index-2.sqlite`.
//!
//! Depends on: `ids`, `model`, `store` (format 1's index and reads, the byte layer, the
//! lock), `v2::{index2, layout, writer}`.

use std::collections::HashSet;
use std::fs;
use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use crate::ids::{Digest, RunId};
use crate::model::{BodyBytes, Interaction, Outcome, RunStart};
use crate::store::error::{io_err, StoreError};
use crate::store::exclusive::ExclusiveStore;
use crate::store::files::write_atomic;
use crate::store::format::{self, ObjectKind};
use crate::store::index::{self, sql_err};
use crate::store::object::EncodedObject;
use crate::store::object::{row_of_payload, StoredObject};
use crate::store::pack::ObjectBackend;
use crate::store::pack::PackDir;

use super::index2::{self, INDEX2_FILE};
use super::layout::V2;
use super::pack2;
use super::writer::Writer2;

/// Payload bytes gathered before one write: eight full blocks at a time, so that most
/// blocks of an upgraded store are as full as a recorder makes them.
const WRITE_BYTES: usize = 8 * super::writer::BLOCK_BYTES;

/// Interactions read per page of a run.
const PAGE: u64 = 4096;

/// What an upgrade did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct UpgradeReport {
    /// The store was format 2 already: nothing was done.
    pub already_format_2: bool,
    pub objects: u64,
    pub runs: u64,
    /// Bytes of packs, dictionaries and index before, and of `packs-2/` and
    /// `index-2.sqlite` after.
    pub bytes_before: u64,
    pub bytes_after: u64,
    /// Whether the format-1 files were left in place (`--keep-old`).
    pub kept_old: bool,
    pub seconds: f64,
}

/// Gathers objects and writes them in large batches, each object once.
struct Batch<'a> {
    v2: &'a V2,
    backend: &'a dyn ObjectBackend,
    written: HashSet<Digest>,
    pending: Vec<EncodedObject>,
    pending_bytes: usize,
}

impl Batch<'_> {
    fn push(&mut self, kind: ObjectKind, id: Digest, payload: Vec<u8>) -> Result<(), StoreError> {
        if !self.written.insert(id) {
            return Ok(());
        }
        let row = row_of_payload(kind, id, &payload)?;
        self.pending_bytes += payload.len();
        self.pending.push(EncodedObject {
            kind,
            id,
            payload,
            row,
        });
        if self.pending_bytes >= WRITE_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), StoreError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let objects = std::mem::take(&mut self.pending);
        self.pending_bytes = 0;
        Writer2::write_now(self.v2, self.backend, objects)
    }
}

/// Bytes of the files and directories named, those that exist (recursively).
fn bytes_of(dir: &Path, names: &[&str]) -> u64 {
    fn size(p: &Path) -> u64 {
        match fs::symlink_metadata(p) {
            Ok(m) if m.is_dir() => fs::read_dir(p)
                .map(|entries| entries.flatten().map(|e| size(&e.path())).sum())
                .unwrap_or(0),
            Ok(m) => m.len(),
            Err(_) => 0,
        }
    }
    names.iter().map(|n| size(&dir.join(n))).sum()
}

/// Format 1's files, deleted once format 2 is committed.
const FORMAT_1_FILES: [&str; 5] = [
    "packs",
    "dicts",
    "index.sqlite",
    "index.sqlite-wal",
    "index.sqlite-shm",
];

/// Format 2's files, removed before an upgrade starts over.
fn format_2_files() -> [String; 4] {
    [
        pack2::PACKS_2_DIR.to_string(),
        INDEX2_FILE.to_string(),
        format!("{INDEX2_FILE}-wal"),
        format!("{INDEX2_FILE}-shm"),
    ]
}

fn remove(path: &Path) -> Result<(), StoreError> {
    let result = match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(_) => return Ok(()),
    };
    result.map_err(io_err("remove", path))
}

impl ExclusiveStore {
    /// Rewrites this format-1 store as format 2 (see the module docs for the order of
    /// work). `keep_old` leaves the format-1 files beside the new ones.
    pub fn upgrade(&self, keep_old: bool) -> Result<UpgradeReport, StoreError> {
        let started = Instant::now();
        let inner = &self.inner;
        if inner.layout.format() == crate::store::formats::StoreFormat::Two {
            return Ok(UpgradeReport {
                already_format_2: true,
                ..UpgradeReport::default()
            });
        }
        let dir = inner.dir.clone();
        let verified = self.verify()?;
        if !verified.is_ok() {
            let first: Vec<String> = verified
                .problems
                .iter()
                .take(3)
                .map(|p| match p.id {
                    Some(id) => format!("{id}: {}", p.message),
                    None => p.message.clone(),
                })
                .collect();
            return Err(StoreError::NotUpgradable {
                path: dir,
                problems: verified.problems.len(),
                first: first.join("; "),
            });
        }
        let bytes_before = bytes_of(&dir, &FORMAT_1_FILES);
        for name in format_2_files() {
            remove(&dir.join(name))?;
        }
        let v2 = V2::open(dir.join(INDEX2_FILE))?;
        let backend = PackDir::with_header(dir.join(pack2::PACKS_2_DIR), pack2::pack2_header());
        let mut batch = Batch {
            v2: &v2,
            backend: &backend,
            written: HashSet::new(),
            pending: Vec::new(),
            pending_bytes: 0,
        };
        let read = |id: Digest| inner.read_payload(id);

        let mut runs = self.runs()?;
        runs.sort_by_key(|r| (r.started_ms, r.id.0));
        // Starts first: every later row of a run (its blocks, its end) names the run.
        for run in &runs {
            let (kind, payload) = read(run.id.0)?;
            let start = RunStart::from_payload(run.id.0, &payload)?;
            for blob in std::iter::once(&start.document)
                .chain(start.documents.values())
                .chain(start.inputs.values())
            {
                let (kind, payload) = read(blob.0)?;
                batch.push(kind, blob.0, payload)?;
            }
            batch.push(kind, run.id.0, payload)?;
        }
        batch.flush()?;
        for run in &runs {
            self.upgrade_exchange(run.id, &mut batch)?;
        }
        // Everything else, in the order it was written.
        let mut rest = {
            let conn = inner.conn()?;
            index::all_objects(&conn).map_err(sql_err(&inner.index_path))?
        };
        rest.sort_by(|a, b| (&a.2, a.3).cmp(&(&b.2, b.3)));
        let all: Vec<(Digest, u8)> = rest.iter().map(|(id, tag, _, _)| (*id, *tag)).collect();
        for (id, _, _, _) in rest {
            if batch.written.contains(&id) {
                continue;
            }
            let (kind, payload) = read(id)?;
            batch.push(kind, id, payload)?;
        }
        batch.flush()?;
        drop(batch);

        self.check_upgraded(&v2, &backend, &all, &runs)?;

        // The commit point.
        let format_path = dir.join("FORMAT");
        write_atomic(
            &format_path,
            format::format_file_text(pack2::STORE_FORMAT_2).as_bytes(),
        )?;
        if let Ok(d) = fs::File::open(&dir) {
            // Best effort: the rename is durable once the directory is.
            let _ = d.sync_all();
        }
        if !keep_old {
            for name in FORMAT_1_FILES {
                remove(&dir.join(name))?;
            }
        }
        let bytes_after = bytes_of(&dir, &[pack2::PACKS_2_DIR, INDEX2_FILE]);
        Ok(UpgradeReport {
            already_format_2: false,
            objects: all.len() as u64,
            runs: runs.len() as u64,
            bytes_before,
            bytes_after,
            kept_old: keep_old,
            seconds: started.elapsed().as_secs_f64(),
        })
    }

    /// One run's exchange in sending order: each interaction after its bodies and, the
    /// first time it is used, its test case.
    fn upgrade_exchange(&self, run: RunId, batch: &mut Batch<'_>) -> Result<(), StoreError> {
        let inner = &self.inner;
        let Some(last) = self.max_seq(run)? else {
            return Ok(());
        };
        let mut from = 0u64;
        while from <= last {
            let to = from.saturating_add(PAGE);
            for located in self.interactions_page(run, from..to)? {
                let id = located.row.id.0;
                let (kind, payload) = match &located.location {
                    Some(loc) => inner.read_located(id, loc)?,
                    None => inner.read_payload(id)?,
                };
                let interaction = Interaction::from_payload(id, &payload)?;
                let mut blobs = Vec::new();
                if let Some(BodyBytes::Blob { id, .. }) = &interaction.request.body {
                    blobs.push(id.0);
                }
                if let Outcome::Response(r) = &interaction.outcome {
                    if let Some(BodyBytes::Blob { id, .. }) = &r.body {
                        blobs.push(id.0);
                    }
                }
                for blob in blobs {
                    if !batch.written.contains(&blob) {
                        let (kind, payload) = inner.read_payload(blob)?;
                        batch.push(kind, blob, payload)?;
                    }
                }
                let case = located.row.case.0;
                if !batch.written.contains(&case) {
                    let (kind, payload) = match &located.case_location {
                        Some(loc) => inner.read_located(case, loc)?,
                        None => inner.read_payload(case)?,
                    };
                    batch.push(kind, case, payload)?;
                }
                batch.push(kind, id, payload)?;
            }
            if to == u64::MAX {
                break;
            }
            from = to;
        }
        Ok(())
    }

    /// Every object of the old index read back from the new files, and the runs' rows
    /// compared. Any difference is an error: the store stays format 1.
    fn check_upgraded(
        &self,
        v2: &V2,
        backend: &dyn ObjectBackend,
        all: &[(Digest, u8)],
        runs: &[crate::store::index::RunSummary],
    ) -> Result<(), StoreError> {
        let differs = |what: String| StoreError::UpgradeDiffers {
            path: self.inner.dir.clone(),
            what,
        };
        for (id, tag) in all {
            let (kind, _) = v2.read(backend, *id)?;
            if kind.tag() != *tag {
                return Err(differs(format!(
                    "object {id} is kind {} in format 2, kind tag {tag} in format 1",
                    kind.name()
                )));
            }
        }
        let conn = v2.conn()?;
        let e = || sql_err(&v2.index_path);
        for run in runs {
            let new_end = index2::run_end_id(&conn, &run.id).map_err(e())?;
            let old_end = index::run_end_id(&*self.inner.conn()?, &run.id)
                .map_err(sql_err(&self.inner.index_path))?;
            if new_end != old_end {
                return Err(differs(format!(
                    "run {}: its end manifest is {new_end:?} in format 2, {old_end:?} in format 1",
                    run.id
                )));
            }
            let old_sets = self.finding_sets_of(run.id)?;
            let new_sets = index2::finding_sets_of(&conn, &run.id).map_err(e())?;
            if old_sets.len() != new_sets.len() {
                return Err(differs(format!(
                    "run {}: {} finding sets in format 2, {} in format 1",
                    run.id,
                    new_sets.len(),
                    old_sets.len()
                )));
            }
            let new_count = index2::interaction_count(&conn, &run.id).map_err(e())?;
            if new_count != run.interactions {
                return Err(differs(format!(
                    "run {}: {new_count} interactions in format 2, {} in format 1",
                    run.id, run.interactions
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use crate::ids::{Digest, RunId};
    use crate::model::RunEnd;
    use crate::store::index;
    use crate::store::synthetic::write_run_with;
    use crate::store::{Maintenance, RecorderOptions, Store, StoreError};

    /// A format-1 store of two runs (dictionaries trained, an object no run reaches),
    /// with every object's id and kind tag.
    fn format_1_store(dir: &std::path::Path) -> (Vec<RunId>, Vec<(Digest, u8)>) {
        let store = Store::open_or_create(dir, crate::store::StoreFormat::One).unwrap();
        let options = RecorderOptions {
            train_after: 50,
            ..RecorderOptions::default()
        };
        let runs = vec![
            write_run_with(&store, 7, 600, 1_000, options.clone()).unwrap(),
            write_run_with(&store, 8, 300, 2_000, options).unwrap(),
        ];
        store.put_blob(b"a blob no run reaches").unwrap();
        let conn = store.inner.conn().unwrap();
        let all = index::all_objects(&conn)
            .unwrap()
            .into_iter()
            .map(|(id, tag, _, _)| (id, tag))
            .collect();
        (runs, all)
    }

    #[test]
    fn an_upgraded_store_is_format_2_and_holds_every_object_of_the_old_one() {
        let d = tempfile::tempdir().unwrap();
        let (runs, all) = format_1_store(d.path());
        let report = {
            let store = Store::open_for_maintenance(d.path(), Maintenance::Upgrade).unwrap();
            store.upgrade(false).unwrap()
        };
        assert_eq!(report.objects, all.len() as u64);
        assert_eq!(report.runs, 2);
        assert!(
            report.bytes_after * 2 < report.bytes_before,
            "format 2 is less than half the size: {report:?}"
        );
        let format = fs::read_to_string(d.path().join("FORMAT")).unwrap();
        assert!(format.contains("2.0"), "{format}");
        for gone in ["packs", "dicts", "index.sqlite"] {
            assert!(!d.path().join(gone).exists(), "{gone} is deleted");
        }
        let store = Store::open_existing(d.path()).unwrap();
        for (id, tag) in &all {
            let (kind, _) = store.inner.read_payload(*id).unwrap();
            assert_eq!(kind.tag(), *tag);
        }
        for run in runs {
            let end: RunEnd = store.run_end(run).unwrap().expect("the run ended");
            assert_eq!(store.max_seq(run).unwrap(), Some(end.interactions - 1));
            assert_eq!(
                store.run_summary(run).unwrap().interactions,
                end.interactions
            );
        }
        assert!(store.verify().unwrap().is_ok());
        drop(store);
        // A second upgrade has nothing to do.
        let store = Store::open_for_maintenance(d.path(), Maintenance::Upgrade).unwrap();
        assert!(store.upgrade(false).unwrap().already_format_2);
    }

    #[test]
    fn keep_old_leaves_a_format_1_copy_and_a_damaged_store_is_refused_unchanged() {
        let d = tempfile::tempdir().unwrap();
        let (_, all) = format_1_store(d.path());
        {
            let store = Store::open_for_maintenance(d.path(), Maintenance::Upgrade).unwrap();
            let r = store.upgrade(true).unwrap();
            assert!(r.kept_old);
        }
        assert!(d.path().join("packs").is_dir() && d.path().join("index.sqlite").is_file());

        // A pack damaged in the middle of a record: verify finds it, upgrade refuses.
        let e = tempfile::tempdir().unwrap();
        format_1_store(e.path());
        let pack = fs::read_dir(e.path().join("packs"))
            .unwrap()
            .map(|p| p.unwrap().path())
            .find(|p| fs::metadata(p).unwrap().len() > 10_000)
            .expect("a pack with records");
        let mut bytes = fs::read(&pack).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0xff;
        fs::write(&pack, bytes).unwrap();
        let store = Store::open_for_maintenance(e.path(), Maintenance::Upgrade).unwrap();
        let err = store.upgrade(false).unwrap_err();
        assert!(matches!(err, StoreError::NotUpgradable { .. }), "{err}");
        assert!(err.to_string().contains("not upgraded"), "{err}");
        drop(store);
        assert!(fs::read_to_string(e.path().join("FORMAT"))
            .unwrap()
            .contains("1."));
        assert!(!e.path().join(super::INDEX2_FILE).exists());
        assert!(!all.is_empty());
    }
}
