//! Store format 1: one record per object in append-only packs (`packs/`), a SQLite index
//! of schema 3 (`index.sqlite`), zstd dictionaries per kind (`dicts/`); FORMAT.md sections
//! 1 to 8. What an open format-1 store holds ([`V1`]), how it opens, how it reads a record,
//! and its side of the store's seam ([`crate::store::seam::Layout`]): the queries go to the
//! index (`store::index`), writes to the recorder's batches (`store::recorder`), verify, gc,
//! reindex and stats to `store::maintenance`.
//!
//! Depends on: `ids`, `model`, `store` (the seam, the index, the byte layer, records,
//! errors, the recorder's writer, maintenance).

use std::any::Any;
use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;
use std::sync::{Arc, Mutex};

use rusqlite::Connection;

use crate::ids::{Digest, FindingSetId, RunEndId, RunId};
use crate::store::context::Context;
use crate::store::dict;
use crate::store::error::StoreError;
use crate::store::format::{ObjectKind, RecordHeader, OBJECT_FORMAT, RECORD_HEADER_LEN};
use crate::store::formats::StoreFormat;
use crate::store::index::{self, sql_err, Location, INDEX_SCHEMA_VERSION};
use crate::store::index::{InteractionRow, RunSummary, RunTally};
use crate::store::located::{Located, LocatedInteraction};
use crate::store::lock::Access;
use crate::store::maintenance::ExclusiveStore;
use crate::store::object::{self, open_record, EncodedObject, RecordFault};
use crate::store::pack::PackDir;
use crate::store::recorder::{self, RecordSink, RecorderOptions, Writer};
use crate::store::reports::{GcReport, ReindexReport, StoreStats, VerifyReport};
use crate::store::seam::{open_index, Acks, Layout, Opened};
use crate::store::Store;

/// What a format-1 store needs open: its index and the dictionaries its records name.
pub(crate) struct V1 {
    pub(crate) conn: Mutex<Connection>,
    pub(crate) index_schema: Mutex<u32>,
    dicts: Mutex<HashMap<u32, Arc<Vec<u8>>>>,
    /// Opened for reading only (a read-only medium): nothing is rebuilt.
    read_only: bool,
}

/// Opens a format-1 store whose lock is held: its index (created when absent, migrated
/// when older) and its packs. For a reindex, an index that cannot be opened is moved aside.
pub(crate) fn open(dir: &Path, access: Access) -> Result<Opened, StoreError> {
    let index_path = dir.join("index.sqlite");
    let had_index = index_path.exists();
    let started = std::time::Instant::now();
    let mut moved = None;
    let mut read_only = false;
    let mut notes = Vec::new();
    let opened = open_index(&index_path, access, &mut moved, || {
        index::open_migrating(&index_path)
    });
    let (conn, schema, migrated_from) = match opened {
        Ok(opened) => opened,
        // A store this process may not write (a read-only medium): read it as it is.
        Err(StoreError::Index { source, .. })
            if access == Access::Read && index::is_unwritable(&source) =>
        {
            let (conn, schema) = index::open_read_only(&index_path)?;
            read_only = true;
            (conn, schema, None)
        }
        Err(e) => return Err(e),
    };
    if read_only {
        notes.push(format!(
            "the index cannot be written here: opened {} for reading only",
            index_path.display()
        ));
    }
    if let Some(old) = migrated_from {
        notes.push(format!(
            "migrated the index from schema {old} to schema {INDEX_SCHEMA_VERSION} in {:.1} s (once per store)",
            started.elapsed().as_secs_f64()
        ));
    }
    Ok(Opened {
        layout: Box::new(V1 {
            conn: Mutex::new(conn),
            index_schema: Mutex::new(schema),
            dicts: Mutex::new(HashMap::new()),
            read_only,
        }),
        index_path,
        backend: Box::new(PackDir::new(dir.join("packs"))),
        notes,
        moved,
        had_index,
    })
}

impl V1 {
    fn conn(&self) -> Result<std::sync::MutexGuard<'_, Connection>, StoreError> {
        self.conn
            .lock()
            .map_err(|_| StoreError::Other("index connection lock poisoned".into()))
    }

    /// Refuses to write an index of a schema newer than this build's (at `index_path`).
    pub(crate) fn check_writable(&self, index_path: &Path) -> Result<(), StoreError> {
        let found = *self
            .index_schema
            .lock()
            .map_err(|_| StoreError::Other("lock poisoned".into()))?;
        if found > INDEX_SCHEMA_VERSION {
            return Err(StoreError::IndexTooNew {
                path: index_path.to_path_buf(),
                found,
                supported: INDEX_SCHEMA_VERSION,
            });
        }
        Ok(())
    }

    /// The dictionary a record names (`dicts/<8 hex>-<kind>.zdict`).
    pub(crate) fn dict(&self, dicts_dir: &Path, id: u32) -> Option<Arc<Vec<u8>>> {
        if id == 0 {
            return None;
        }
        let mut dicts = self.dicts.lock().ok()?;
        if let Some(d) = dicts.get(&id) {
            return Some(d.clone());
        }
        let bytes = Arc::new(dict::find(dicts_dir, id)?);
        dicts.insert(id, bytes.clone());
        Some(bytes)
    }

    /// A query on the index, its error naming the index file.
    fn query<T>(
        &self,
        ctx: &Context,
        q: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        let conn = self.conn()?;
        q(&conn).map_err(sql_err(&ctx.index_path))
    }

    /// Reads a format-1 record and checks it names, and hashes to, `id`.
    fn read_record(
        &self,
        ctx: &Context,
        id: Digest,
        loc: &Location,
    ) -> Result<(ObjectKind, Vec<u8>), StoreError> {
        let len = RECORD_HEADER_LEN as u64 + u64::from(loc.stored_len);
        let bytes = ctx.backend.read_at(&loc.pack, loc.offset, len)?;
        let damaged = |reason: String| StoreError::Damaged {
            pack: loc.pack.clone(),
            offset: loc.offset,
            reason,
        };
        let header = RecordHeader::decode(&bytes)
            .map_err(|e| damaged(format!("no record header ({e:?}) for object {id}")))?;
        if header.stored_len != loc.stored_len {
            return Err(damaged(format!(
                "record of object {id} says {} stored bytes, the index says {}",
                header.stored_len, loc.stored_len
            )));
        }
        if header.id != id {
            return Err(damaged(format!(
                "record names object {}, the index says {id}",
                header.id
            )));
        }
        let kind = ObjectKind::from_tag(header.kind_tag).ok_or_else(|| StoreError::WrongKind {
            id,
            expected: ObjectKind::Blob,
            found: format!("kind {} unknown to this probe", header.kind_tag),
        })?;
        let dict = self.dict(&ctx.dicts_dir(), header.dict);
        let payload = open_record(
            &header,
            &bytes[RECORD_HEADER_LEN..],
            dict.as_deref().map(|d| d.as_slice()),
        )
        .map_err(|f| match f {
            RecordFault::TooNew(found) => StoreError::VersionTooNew {
                what: format!("object {id}"),
                found,
                supported: OBJECT_FORMAT.to_string(),
            },
            RecordFault::MissingDict(d) => StoreError::DamagedObject {
                id,
                reason: format!("compressed with dictionary {d:08x}, which is not in dicts/"),
            },
            RecordFault::Frame(reason) => StoreError::DamagedObject {
                id,
                reason: format!("zstd frame does not decompress: {reason}"),
            },
            RecordFault::Hash(actual) => StoreError::HashMismatch { id, actual },
        })?;
        Ok((kind, payload))
    }
}

impl Layout for V1 {
    fn format(&self) -> StoreFormat {
        StoreFormat::One
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn rebuild_if_empty(&self, store: &Store) -> Result<Option<(u64, u64)>, StoreError> {
        let schema = *self
            .index_schema
            .lock()
            .map_err(|_| StoreError::Other("lock poisoned".into()))?;
        let ctx = &store.inner;
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
        let report = store.rebuild_index()?;
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

    fn verify(&self, store: &Store, report: &mut VerifyReport) -> Result<(), StoreError> {
        store.verify_one(report)
    }

    fn rebuild_index(&self, store: &Store) -> Result<ReindexReport, StoreError> {
        store.rebuild_index_one()
    }

    fn stats(&self, store: &Store) -> Result<StoreStats, StoreError> {
        store.stats_one()
    }

    fn gc(&self, store: &ExclusiveStore) -> Result<GcReport, StoreError> {
        store.gc_one()
    }
}
