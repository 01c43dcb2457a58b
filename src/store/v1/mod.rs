//! Store format 1: one record per object in append-only packs (`packs/`), a SQLite index
//! of schema 3 (`index.sqlite`), zstd dictionaries per kind (`dicts/`); FORMAT.md sections
//! 1 to 8. Its side of the store's seam ([`crate::store::seam::Layout`]): the queries go to
//! the index (`store::index`), writes to the recorder's batches (`store::recorder`), verify,
//! gc, reindex and stats to [`maintain`]. What an open format-1 store holds, and how it
//! opens and reads a record, is [`layout`].
//!
//! Depends on: `ids`, `store` (the seam and its context, the index, records, errors, the
//! recorder's writer, reports), `v1::{layout, maintain}`.

pub(crate) mod layout;
pub(crate) mod maintain;

use std::any::Any;
use std::ops::Range;

use rusqlite::Connection;

use crate::ids::{Digest, FindingSetId, RunEndId, RunId};
use crate::store::context::Context;
use crate::store::dict;
use crate::store::error::StoreError;
use crate::store::format::ObjectKind;
use crate::store::formats::StoreFormat;
use crate::store::index::{self, InteractionRow, RunSummary, RunTally, INDEX_SCHEMA_VERSION};
use crate::store::located::{Located, LocatedInteraction};
use crate::store::object::{self, EncodedObject};
use crate::store::recorder::{self, Writer};
use crate::store::reports::{GcReport, ReindexReport, StoreStats, VerifyReport};
use crate::store::seam::{Acks, Layout};
use crate::store::sink::{RecordSink, RecorderOptions};

pub(crate) use layout::{open, V1};
use maintain::One;

impl Layout for V1 {
    fn format(&self) -> StoreFormat {
        StoreFormat::One
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn rebuild_if_empty(&self, ctx: &Context) -> Result<Option<(u64, u64)>, StoreError> {
        let schema = *self
            .index_schema
            .lock()
            .map_err(|_| StoreError::Other("lock poisoned".into()))?;
        let empty_index = !self.read_only && schema <= INDEX_SCHEMA_VERSION && {
            let conn = self.conn()?;
            !index::has_objects(&conn).map_err(|source| {
                let path = ctx.index_path.clone();
                if index::is_damage(&source) {
                    StoreError::DamagedIndex { path, source }
                } else {
                    StoreError::Index { path, source }
                }
            })?
        };
        if !empty_index || ctx.backend.packs()?.is_empty() {
            return Ok(None);
        }
        let report = One { ctx, v1: self }.rebuild_index_one()?;
        Ok(Some((report.objects, report.packs)))
    }

    fn read(&self, ctx: &Context, id: Digest) -> Result<(ObjectKind, Vec<u8>), StoreError> {
        let loc = self.query(ctx, |c| index::locate(c, &id))?;
        let loc = loc.ok_or_else(|| StoreError::NotFound { id: id.to_hex() })?;
        self.read_record(ctx, id, &loc)
    }

    fn read_located(
        &self,
        ctx: &Context,
        id: Digest,
        loc: &Located,
    ) -> Result<(ObjectKind, Vec<u8>), StoreError> {
        match loc {
            Located::One(loc) => self.read_record(ctx, id, loc),
            other => Err(other.of_another_layout(id)),
        }
    }

    fn put_now(&self, ctx: &Context, objects: Vec<EncodedObject>) -> Result<(), StoreError> {
        self.check_writable(&ctx.index_path)?;
        let mut packer = dict::Packer::new(object::PUT_LEVEL)?;
        let mut conn = self.conn()?;
        recorder::write_batch(ctx, &mut conn, objects, &mut packer)?;
        Ok(())
    }

    fn recorder_sink<'a>(
        &'a self,
        ctx: &'a Context,
        conn: Connection,
        options: RecorderOptions,
        acks: Acks,
    ) -> Result<Box<dyn RecordSink + 'a>, StoreError> {
        Ok(Box::new(Writer::start(ctx, conn, options, acks)?))
    }

    fn writer_connection(&self, ctx: &Context) -> Result<Connection, StoreError> {
        self.check_writable(&ctx.index_path)?;
        Ok(index::open(&ctx.index_path)?.0)
    }

    fn summaries(&self, ctx: &Context, run: Option<&RunId>) -> Result<Vec<RunSummary>, StoreError> {
        match run {
            None => self.query(ctx, index::runs),
            Some(run) => Ok(self
                .query(ctx, |c| index::run_summary(c, run))?
                .into_iter()
                .collect()),
        }
    }

    fn interactions_of(
        &self,
        ctx: &Context,
        run: &RunId,
    ) -> Result<Vec<InteractionRow>, StoreError> {
        self.query(ctx, |c| index::interactions_of(c, run))
    }

    fn interactions_page(
        &self,
        ctx: &Context,
        run: &RunId,
        seqs: Range<u64>,
    ) -> Result<Vec<LocatedInteraction>, StoreError> {
        let rows = self.query(ctx, |c| {
            index::interactions_page(c, run, seqs.start, seqs.end)
        })?;
        Ok(rows
            .into_iter()
            .map(|(row, location, case_location)| LocatedInteraction {
                row,
                location: location.map(Located::One),
                case_location: case_location.map(Located::One),
            })
            .collect())
    }

    fn run_end_id(&self, ctx: &Context, run: &RunId) -> Result<Option<RunEndId>, StoreError> {
        self.query(ctx, |c| index::run_end_id(c, run))
    }

    fn finding_sets_of(&self, ctx: &Context, run: &RunId) -> Result<Vec<FindingSetId>, StoreError> {
        self.query(ctx, |c| index::finding_sets_of(c, run))
    }

    fn finding_sets_written(
        &self,
        ctx: &Context,
        run: &RunId,
    ) -> Result<Vec<(FindingSetId, String)>, StoreError> {
        self.query(ctx, |c| index::finding_sets_written(c, run))
    }

    fn newest_finding_set(
        &self,
        ctx: &Context,
        run: &RunId,
    ) -> Result<Option<FindingSetId>, StoreError> {
        self.query(ctx, |c| index::newest_finding_set(c, run))
    }

    fn max_seq(&self, ctx: &Context, run: &RunId) -> Result<Option<u64>, StoreError> {
        self.query(ctx, |c| index::max_seq(c, run))
    }

    fn tally(&self, ctx: &Context, run: &RunId) -> Result<RunTally, StoreError> {
        self.query(ctx, |c| index::tally(c, run))
    }

    fn runs_named(&self, ctx: &Context, name: &str) -> Result<Vec<Digest>, StoreError> {
        self.query(ctx, |c| index::runs_named(c, name))
    }

    fn newest_run_tagged(
        &self,
        ctx: &Context,
        key: &str,
        value: &str,
    ) -> Result<Option<Digest>, StoreError> {
        self.query(ctx, |c| index::newest_run_tagged(c, key, value))
    }

    fn by_prefix(
        &self,
        ctx: &Context,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<(u8, Digest)>, StoreError> {
        self.query(ctx, |c| index::by_prefix(c, prefix, limit))
    }

    fn describe(
        &self,
        ctx: &Context,
        kind: ObjectKind,
        id: &Digest,
    ) -> Result<Option<String>, StoreError> {
        self.query(ctx, |c| index::describe(c, kind, id)).map(Some)
    }

    fn verify(&self, ctx: &Context, report: &mut VerifyReport) -> Result<(), StoreError> {
        One { ctx, v1: self }.verify_one(report)
    }

    fn rebuild_index(&self, ctx: &Context) -> Result<ReindexReport, StoreError> {
        One { ctx, v1: self }.rebuild_index_one()
    }

    fn stats(&self, ctx: &Context) -> Result<StoreStats, StoreError> {
        One { ctx, v1: self }.stats_one()
    }

    fn gc(&self, ctx: &Context) -> Result<GcReport, StoreError> {
        One { ctx, v1: self }.gc_one()
    }
}
