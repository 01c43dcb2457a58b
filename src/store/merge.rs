//! `probe store merge A B … -o C`: local stores joined into one, a union by content
//! address, for the parts of a campaign recorded on several machines
//! ([partitions.md](../../docs/partitions.md)).
//!
//! For each run of a source (oldest first): its start, its interactions, its end and every
//! finding set judging it, and everything those name ([`follow_references`], the walk gc
//! keeps by, so a merge copies exactly what a run needs); each object the destination does
//! not hold yet is read (its hash checked), and written through the destination's own
//! writer, in its layout. Objects are written in the order a run writes them (blobs and
//! test cases, the start, the interactions, series, finding sets, the end last), so a
//! merge stopped midway leaves a store that verifies, with the run half copied listed as
//! unfinished, and a second merge completes it. The run's kept report.json and page are
//! copied beside it when the destination has none.
//!
//! Depends on: `store` (reads, `put_encoded`, the index's id lookup), `ids`.

use std::collections::HashSet;

use serde::Serialize;

use crate::ids::{Digest, RunId};

use super::error::StoreError;
use super::format::ObjectKind;
use super::handle::Store;
use super::maintenance::follow_references;
use super::object::row_of_payload;
use super::object::EncodedObject;

/// Objects written to the destination at a time.
const CHUNK: usize = 4096;

/// What a merge did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MergeReport {
    /// Runs of the sources, and of those the runs the destination already held whole.
    pub runs: u64,
    pub runs_present: u64,
    /// Objects the sources' runs reach, those copied and those the destination held
    /// (each object counted once, however many sources hold it).
    pub objects: u64,
    pub objects_copied: u64,
    pub objects_present: u64,
    /// Payload bytes (uncompressed) of the objects copied.
    pub bytes_copied: u64,
}

/// The order a run writes its objects in: what others name first, the end last.
fn write_rank(kind: ObjectKind) -> u8 {
    match kind {
        ObjectKind::Blob => 0,
        ObjectKind::TestCase => 1,
        ObjectKind::RunStart => 2,
        ObjectKind::Interaction => 3,
        ObjectKind::Series => 4,
        ObjectKind::FindingSet => 5,
        ObjectKind::RunEnd => 6,
    }
}

impl Store {
    /// Whether the index names `id` (no object is read).
    fn holds(&self, id: &Digest) -> Result<bool, StoreError> {
        let found = self.inner.layout.by_prefix(&self.inner, &id.to_hex(), 1)?;
        Ok(found.iter().any(|(_, d)| d == id))
    }

    /// Copies every run of `source` that this store lacks, and what it names; an object
    /// this store holds is not copied again. `report` totals across several sources.
    pub fn merge_from(&self, source: &Store, report: &mut MergeReport) -> Result<(), StoreError> {
        let mut seen: HashSet<Digest> = HashSet::new();
        let mut runs = source.runs()?;
        runs.reverse();
        for run in runs {
            report.runs += 1;
            let copied = self.merge_run(source, run.id, &mut seen, report)?;
            if copied == 0 {
                report.runs_present += 1;
            }
            self.copy_reports(source, run.id)?;
        }
        Ok(())
    }

    /// One run of `source` and what it names; returns the objects copied.
    fn merge_run(
        &self,
        source: &Store,
        run: RunId,
        seen: &mut HashSet<Digest>,
        report: &mut MergeReport,
    ) -> Result<u64, StoreError> {
        let mut roots = vec![run.0];
        roots.extend(source.interactions_of(run)?.iter().map(|r| r.id.digest()));
        if let Some(end) = source.inner.layout.run_end_id(&source.inner, &run)? {
            roots.push(end.0);
        }
        roots.extend(source.finding_sets_of(run)?.iter().map(|s| s.0));
        let mut found: Vec<Digest> = Vec::new();
        for id in roots.iter().copied() {
            if seen.insert(id) {
                found.push(id);
            }
        }
        follow_references(
            &|id| source.inner.read_payload(id),
            found.clone(),
            &mut |id| {
                let new = seen.insert(*id);
                if new {
                    found.push(*id);
                }
                new
            },
        )?;
        // The objects to copy, ordered by kind from the source's index; their payloads
        // are read a chunk at a time, so a merge holds one chunk whatever a run's size.
        let mut missing: Vec<(u8, usize, Digest)> = Vec::new();
        for (at, id) in found.into_iter().enumerate() {
            report.objects += 1;
            if self.holds(&id)? {
                report.objects_present += 1;
                continue;
            }
            let kind = source
                .inner
                .layout
                .by_prefix(&source.inner, &id.to_hex(), 1)?
                .into_iter()
                .find(|(_, d)| *d == id)
                .and_then(|(tag, _)| ObjectKind::from_tag(tag));
            // An object the index does not name is read to learn its kind.
            let kind = match kind {
                Some(kind) => kind,
                None => source.inner.read_payload(id)?.0,
            };
            missing.push((write_rank(kind), at, id));
        }
        missing.sort_unstable_by_key(|(rank, at, _)| (*rank, *at));
        let copied = missing.len() as u64;
        for chunk in missing.chunks(CHUNK) {
            let mut objects = Vec::with_capacity(chunk.len());
            for &(_, _, id) in chunk {
                let (kind, payload) = source.inner.read_payload(id)?;
                let row = row_of_payload(kind, id, &payload)?;
                report.bytes_copied += payload.len() as u64;
                objects.push(EncodedObject {
                    kind,
                    id,
                    payload,
                    row,
                });
            }
            self.put_encoded(objects)?;
        }
        report.objects_copied += copied;
        Ok(copied)
    }

    /// The run's kept report.json (and page), when the destination has none.
    fn copy_reports(&self, source: &Store, run: RunId) -> Result<(), StoreError> {
        if self.read_report(run)?.is_none() {
            if let Some(json) = source.read_report(run)? {
                self.write_report(run, &json)?;
            }
        }
        let page = |store: &Store| {
            store
                .inner
                .dir
                .join("reports")
                .join(format!("{}.html", run.0.to_hex()))
        };
        if !page(self).exists() {
            if let Ok(html) = std::fs::read(page(source)) {
                self.write_page(run, &html)?;
            }
        }
        Ok(())
    }
}
