//! The seam between the store's facade ([`crate::store::Store`]) and its layouts: what a
//! layout of objects on disk (format 1 in `store/v1/`, format 2 in `store/v2/`) does for
//! the facade. The facade chooses a layout once, when it opens a store (`LAYOUTS` in
//! `store/mod.rs`), holds it as a `Box<dyn Layout>` and calls through this trait; nothing
//! else in the store asks which format it has.
//!
//! Adding a layout (an object-storage one, say) is a folder that implements [`Layout`]
//! and one line in `LAYOUTS`.
//!
//! Depends on: `ids`, `model`, `store` (errors, index rows, encoded objects, the recorder's
//! sink and options, the maintenance reports).

use std::any::Any;
use std::ops::Range;
use std::path::{Path, PathBuf};

use rusqlite::Connection;

use crate::ids::{Digest, FindingSetId, RunEndId, RunId};
use crate::store::context::Context;
use crate::store::error::StoreError;
use crate::store::files::move_index_aside;
use crate::store::format::ObjectKind;
use crate::store::formats::StoreFormat;
use crate::store::index;
use crate::store::index::{InteractionRow, RunSummary, RunTally};
use crate::store::located::{Located, LocatedInteraction};
use crate::store::lock::{Access, Maintenance};
use crate::store::object::EncodedObject;
use crate::store::pack::ObjectBackend;
use crate::store::reports::{GcReport, MovedIndex, ReindexReport, StoreStats, VerifyReport};
use crate::store::sink::{RecordSink, RecorderOptions};

/// Acknowledgements of durable interactions, as the recorder sends them.
pub(crate) type Acks = Option<crossbeam_channel::Sender<Vec<crate::ids::InteractionId>>>;

/// What a layout's opener gives the facade, which adds the lock and the notes.
pub(crate) struct Opened {
    pub(crate) layout: Box<dyn Layout>,
    pub(crate) index_path: PathBuf,
    pub(crate) backend: Box<dyn ObjectBackend>,
    /// What opening noticed (an index read only, a migration), in order.
    pub(crate) notes: Vec<String>,
    /// The damaged index a reindex's open moved aside.
    pub(crate) moved: Option<MovedIndex>,
    /// Whether the index file was there before the open.
    pub(crate) had_index: bool,
}

/// A layout's opener: the store at `dir`, whose lock is held for `access`.
pub(crate) type OpenLayout = fn(&Path, Access) -> Result<Opened, StoreError>;

/// Opens an index through `open`, the same way for every layout: for a reindex, an index
/// that cannot be opened (damaged) is moved aside (`<name>.damaged-<unix seconds>`, with
/// its `-wal` and `-shm`, said in `moved`) and a new one opened; for anyone else a damaged
/// index is [`StoreError::DamagedIndex`]. Other errors pass through.
pub(crate) fn open_index<T>(
    index_path: &Path,
    access: Access,
    moved: &mut Option<MovedIndex>,
    open: impl Fn() -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    match open() {
        Ok(opened) => Ok(opened),
        // Only alone may the index be moved: nobody else has it open.
        Err(StoreError::Index { source, .. })
            if access == Access::Alone(Maintenance::Reindex) && index::is_damage(&source) =>
        {
            *moved = Some(MovedIndex {
                to: move_index_aside(index_path)?.display().to_string(),
                reason: source.to_string(),
            });
            open()
        }
        Err(StoreError::Index { path, source }) if index::is_damage(&source) => {
            Err(StoreError::DamagedIndex { path, source })
        }
        Err(e) => Err(e),
    }
}

/// One layout of a store's objects and index: what it needs open, and every operation the
/// facade would otherwise branch on. `ctx` gives what all layouts share (the directory,
/// the index path, the byte layer, the notes, the lock).
pub(crate) trait Layout: Send + Sync {
    /// The format this layout reads and writes.
    fn format(&self) -> StoreFormat;

    /// The layout as itself, for the few parts written for one layout only (the upgrade
    /// from format 1 and the tests).
    fn as_any(&self) -> &dyn Any;

    /// After opening: an index found gone or empty beside packs is rebuilt (it is derived
    /// data), giving (objects, packs) read; `None` when nothing was to be rebuilt.
    fn rebuild_if_empty(&self, ctx: &Context) -> Result<Option<(u64, u64)>, StoreError>;

    /// Reads and checks one object's payload (it must hash to `id`).
    fn read(&self, ctx: &Context, id: Digest) -> Result<(ObjectKind, Vec<u8>), StoreError>;

    /// [`Layout::read`] at a location the layout's own queries gave.
    fn read_located(
        &self,
        ctx: &Context,
        id: Digest,
        loc: &Located,
    ) -> Result<(ObjectKind, Vec<u8>), StoreError>;

    /// Writes encoded objects now, durably, then their index rows.
    fn put_now(&self, ctx: &Context, objects: Vec<EncodedObject>) -> Result<(), StoreError>;

    /// What a recorder thread writes into, through `conn` ([`Layout::writer_connection`]).
    fn recorder_sink<'a>(
        &'a self,
        ctx: &'a Context,
        conn: Connection,
        options: RecorderOptions,
        acks: Acks,
    ) -> Result<Box<dyn RecordSink + 'a>, StoreError>;

    /// Every run's summary, newest first, or only `run`'s.
    fn summaries(&self, ctx: &Context, run: Option<&RunId>) -> Result<Vec<RunSummary>, StoreError>;

    /// The interactions of a run in seq order.
    fn interactions_of(
        &self,
        ctx: &Context,
        run: &RunId,
    ) -> Result<Vec<InteractionRow>, StoreError>;

    /// The interactions of a run with seq in `seqs`, in seq order, each with where it is.
    fn interactions_page(
        &self,
        ctx: &Context,
        run: &RunId,
        seqs: Range<u64>,
    ) -> Result<Vec<LocatedInteraction>, StoreError>;

    /// The id of a run's end manifest.
    fn run_end_id(&self, ctx: &Context, run: &RunId) -> Result<Option<RunEndId>, StoreError>;

    /// The finding sets judging a run: the run-time set first, then rechecks.
    fn finding_sets_of(&self, ctx: &Context, run: &RunId) -> Result<Vec<FindingSetId>, StoreError>;

    /// The finding sets of a run in write order, each with the name of its pack.
    fn finding_sets_written(
        &self,
        ctx: &Context,
        run: &RunId,
    ) -> Result<Vec<(FindingSetId, String)>, StoreError>;

    /// The finding set of a run written last.
    fn newest_finding_set(
        &self,
        ctx: &Context,
        run: &RunId,
    ) -> Result<Option<FindingSetId>, StoreError>;

    /// The highest seq among a run's interactions.
    fn max_seq(&self, ctx: &Context, run: &RunId) -> Result<Option<u64>, StoreError>;

    /// A run's test-case ids in seq order and its requests per operation and status class.
    fn tally(&self, ctx: &Context, run: &RunId) -> Result<RunTally, StoreError>;

    /// The runs named `name`, newest first.
    fn runs_named(&self, ctx: &Context, name: &str) -> Result<Vec<Digest>, StoreError>;

    /// The newest run tagged `key=value`.
    fn newest_run_tagged(
        &self,
        ctx: &Context,
        key: &str,
        value: &str,
    ) -> Result<Option<Digest>, StoreError>;

    /// Objects whose id starts with the hex `prefix`, at most `limit`, each with its kind tag.
    fn by_prefix(
        &self,
        ctx: &Context,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<(u8, Digest)>, StoreError>;

    /// A one-line description of an object from the index; `None` when the index does not
    /// say (the facade then reads the object).
    fn describe(
        &self,
        ctx: &Context,
        kind: ObjectKind,
        id: &Digest,
    ) -> Result<Option<String>, StoreError>;

    /// Every object and reference checked, into `report` (`Store::verify`).
    fn verify(&self, ctx: &Context, report: &mut VerifyReport) -> Result<(), StoreError>;

    /// The index rebuilt from the packs alone.
    fn rebuild_index(&self, ctx: &Context) -> Result<ReindexReport, StoreError>;

    /// Objects by kind, bytes raw and stored (`Store::stats`).
    fn stats(&self, ctx: &Context) -> Result<StoreStats, StoreError>;

    /// Unreachable objects and second copies dropped (`ExclusiveStore::gc`).
    fn gc(&self, ctx: &Context) -> Result<GcReport, StoreError>;

    /// The index connection a recorder writes through (its own: queries on the store's
    /// connection never wait for a batch).
    fn writer_connection(&self, ctx: &Context) -> Result<Connection, StoreError>;
}
