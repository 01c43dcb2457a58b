//! Format 2's side of the store's seam ([`crate::store::seam::Layout`]): how a format-2
//! store opens, and each operation of the facade sent to the part of `v2/` that does it
//! (reads and queries to [`V2`], writes to [`Writer2`], the recorder's sink, verify, gc,
//! reindex and stats).
//!
//! Depends on: `ids`, `store` (the seam, the byte layer, the recorder's block writer,
//! maintenance), `v2::{layout, writer, maintain, index2}`.

use std::any::Any;
use std::ops::Range;
use std::path::Path;

use rusqlite::Connection;

use crate::ids::{Digest, FindingSetId, RunEndId, RunId};
use crate::store::context::Context;
use crate::store::error::StoreError;
use crate::store::format::ObjectKind;
use crate::store::formats::StoreFormat;
use crate::store::index::{InteractionRow, RunSummary, RunTally};
use crate::store::located::{Located, LocatedInteraction};
use crate::store::lock::Access;
use crate::store::object::EncodedObject;
use crate::store::pack::PackDir;
use crate::store::recorder::BlockWriter;
use crate::store::reports::{GcReport, ReindexReport, StoreStats, VerifyReport};
use crate::store::seam::{open_index, Acks, Layout, Opened};
use crate::store::sink::{RecordSink, RecorderOptions};

use super::gc;
use super::index2;
use super::layout::V2;
use super::maintain;
use super::pack2;
use super::stats;
use super::verify;
use super::writer::Writer2;

/// Opens a format-2 store whose lock is held: its index (created when absent) and its
/// packs. For a reindex, an index that cannot be opened is moved aside, as for format 1.
pub(crate) fn open(dir: &Path, access: Access) -> Result<Opened, StoreError> {
    let index_path = dir.join(index2::INDEX2_FILE);
    let had_index = index_path.exists();
    let mut moved = None;
    let v2 = open_index(&index_path, access, &mut moved, || {
        V2::open(index_path.clone())
    })?;
    Ok(Opened {
        layout: Box::new(v2),
        backend: Box::new(PackDir::with_header(
            dir.join(pack2::PACKS_2_DIR),
            pack2::pack2_header(),
        )),
        index_path,
        notes: Vec::new(),
        moved,
        had_index,
    })
}

impl Layout for V2 {
    fn format(&self) -> StoreFormat {
        StoreFormat::Two
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn rebuild_if_empty(&self, ctx: &Context) -> Result<Option<(u64, u64)>, StoreError> {
        // Torn tails are left to verify and reindex here, since other writers may be
        // appending.
        let backend = ctx.backend.as_ref();
        if self.has_blocks()? || backend.packs()?.is_empty() {
            return Ok(None);
        }
        let rebuilt = maintain::rebuild_index(self, backend, false)?;
        Ok(Some((rebuilt.objects as u64, rebuilt.packs as u64)))
    }

    fn read(&self, ctx: &Context, id: Digest) -> Result<(ObjectKind, Vec<u8>), StoreError> {
        V2::read(self, ctx.backend.as_ref(), id)
    }

    fn read_located(
        &self,
        ctx: &Context,
        id: Digest,
        loc: &Located,
    ) -> Result<(ObjectKind, Vec<u8>), StoreError> {
        match loc {
            Located::Two(place) => self.read_at(ctx.backend.as_ref(), id, *place),
            other => Err(other.of_another_layout(id)),
        }
    }

    fn put_now(&self, ctx: &Context, objects: Vec<EncodedObject>) -> Result<(), StoreError> {
        Writer2::write_now(self, ctx.backend.as_ref(), objects)
    }

    fn recorder_sink<'a>(
        &'a self,
        ctx: &'a Context,
        conn: Connection,
        options: RecorderOptions,
        acks: Acks,
    ) -> Result<Box<dyn RecordSink + 'a>, StoreError> {
        Ok(Box::new(BlockWriter::new(ctx, self, conn, &options, acks)))
    }

    fn writer_connection(&self, ctx: &Context) -> Result<Connection, StoreError> {
        index2::open(&ctx.index_path)
    }

    fn summaries(&self, _: &Context, run: Option<&RunId>) -> Result<Vec<RunSummary>, StoreError> {
        V2::summaries(self, run)
    }

    fn interactions_of(
        &self,
        ctx: &Context,
        run: &RunId,
    ) -> Result<Vec<InteractionRow>, StoreError> {
        let page = V2::interactions_page(self, ctx.backend.as_ref(), run, 0, u64::MAX)?;
        Ok(page.into_iter().map(|item| item.row).collect())
    }

    fn interactions_page(
        &self,
        ctx: &Context,
        run: &RunId,
        seqs: Range<u64>,
    ) -> Result<Vec<LocatedInteraction>, StoreError> {
        let page = V2::interactions_page(self, ctx.backend.as_ref(), run, seqs.start, seqs.end)?;
        Ok(page
            .into_iter()
            .map(|item| LocatedInteraction {
                row: item.row,
                location: Some(Located::Two(item.at)),
                case_location: item.case_at.map(Located::Two),
            })
            .collect())
    }

    fn run_end_id(&self, _: &Context, run: &RunId) -> Result<Option<RunEndId>, StoreError> {
        V2::run_end_id(self, run)
    }

    fn finding_sets_of(&self, _: &Context, run: &RunId) -> Result<Vec<FindingSetId>, StoreError> {
        V2::finding_sets_of(self, run)
    }

    fn finding_sets_written(
        &self,
        _: &Context,
        run: &RunId,
    ) -> Result<Vec<(FindingSetId, String)>, StoreError> {
        V2::finding_sets_written(self, run)
    }

    fn newest_finding_set(
        &self,
        _: &Context,
        run: &RunId,
    ) -> Result<Option<FindingSetId>, StoreError> {
        V2::newest_finding_set(self, run)
    }

    fn max_seq(&self, _: &Context, run: &RunId) -> Result<Option<u64>, StoreError> {
        V2::max_seq(self, run)
    }

    fn tally(&self, ctx: &Context, run: &RunId) -> Result<RunTally, StoreError> {
        V2::tally(self, ctx.backend.as_ref(), run)
    }

    fn runs_named(&self, _: &Context, name: &str) -> Result<Vec<Digest>, StoreError> {
        V2::runs_named(self, name)
    }

    fn newest_run_tagged(
        &self,
        _: &Context,
        key: &str,
        value: &str,
    ) -> Result<Option<Digest>, StoreError> {
        V2::newest_run_tagged(self, key, value)
    }

    fn by_prefix(
        &self,
        ctx: &Context,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<(u8, Digest)>, StoreError> {
        V2::by_prefix(self, ctx.backend.as_ref(), prefix, limit)
    }

    fn describe(
        &self,
        _: &Context,
        kind: ObjectKind,
        id: &Digest,
    ) -> Result<Option<String>, StoreError> {
        // Run ends and finding sets from their rows; the rest from the object itself (its
        // block is decoded anyway to find it, so columns would save little).
        self.describe_meta(kind, id)
    }

    fn verify(&self, ctx: &Context, report: &mut VerifyReport) -> Result<(), StoreError> {
        verify::verify_two(ctx, self, report)
    }

    fn rebuild_index(&self, ctx: &Context) -> Result<ReindexReport, StoreError> {
        let rebuilt = maintain::rebuild_index(self, ctx.backend.as_ref(), true)?;
        Ok(ReindexReport {
            packs: rebuilt.packs as u64,
            objects: rebuilt.objects as u64,
            skipped: rebuilt
                .problems
                .iter()
                .map(|(pack, offset, why)| format!("pack {pack} at offset {offset}: {why}"))
                .collect(),
            torn_tails: rebuilt.cut.len() as u64,
            moved_aside: None,
        })
    }

    fn stats(&self, ctx: &Context) -> Result<StoreStats, StoreError> {
        stats::stats_2(ctx, self)
    }

    fn gc(&self, ctx: &Context) -> Result<GcReport, StoreError> {
        gc::gc_two(ctx, self)
    }
}
