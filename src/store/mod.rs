//! The store: a versioned, compressed, content-addressed record of everything a campaign
//! did (docs/store.md; the byte-level specification is `store-format/FORMAT.md`).
//!
//! # Architecture
//! - [`format`]: versions, kind tags, pack and record headers (encode/decode side by side).
//! - [`exchange`]: one sent exchange (test case, interaction, blobs) encoded, credentials
//!   redacted; the counterpart of [`Store::get_interaction`] and [`Store::get_case`].
//! - [`object`]: the canonical encoding of each stored type ([`StoredObject`]), ids,
//!   compression, moving large bodies into blobs. Pure CPU.
//! - [`pack`]: the [`ObjectBackend`] trait and its file implementation (append-only packs).
//! - [`index`]: the SQLite index (locations + query tables), rebuildable from the packs.
//! - [`recorder`]: the writer thread the engine feeds through a bounded channel.
//! - [`exclusive`]: the facade's maintenance: [`Store::verify`], [`Store::stats`], and
//!   [`ExclusiveStore`] for gc, reindex and the upgrade; [`maintenance`]: what every
//!   layout's maintenance shares (references, the end of verify, stats' sizes);
//!   [`reports`]: what they report.
//! - [`lock`]: the store lock (shared for every opener, exclusive for gc and reindex) and
//!   the registry of the processes using a store (`writers/`).
//! - `synthetic` (feature `dev-tools`, and the unit tests): realistic synthetic runs for
//!   tests, crash tests and benchmarks.
//! - `seam`: the `Layout` trait, what a layout of objects on disk does for the facade
//!   (reads, writes, the recorder's sink, queries, verify, gc, reindex, stats), each
//!   method handed a `context::Context` (directory, index path, byte layer, notes, lock)
//!   rather than the facade; `sink`: what the recorder thread writes into.
//! - [`handle`]: [`Store`] itself and what it holds (its layout and context).
//! - Small files the parts name directly (never this facade):
//!   `error` ([`StoreError`]), [`kind`] ([`ObjectKind`]), [`holders`] (who holds the
//!   store), [`formats`] ([`StoreFormat`]), [`located`] (where a queried object lives),
//!   [`files`] (a file replaced whole, a damaged index moved aside).
//! - [`v1`]: store format 1 (per-object records, schema-3 index): its side of the seam,
//!   what it holds open (`v1::layout`) and its maintenance (`v1::maintain`).
//! - [`v2`]: store format 2 (issue #31): blocks of many objects, the format
//!   [`Store::open_or_create`] creates by default ([`StoreFormat::Two`]).
//!
//! # Layouts
//! [`Store`] is the facade, and its API is the same over every layout. It chooses the
//! store's layout once, when it opens it (`LAYOUTS`, by the major of the `FORMAT` file),
//! holds it in `Inner` (`handle.rs`) as a `Box<dyn Layout>` beside the `Context` it hands
//! every call, and calls through it; nothing else asks
//! which format a store has. **Adding a layout** (object storage, say) is a folder that
//! implements `seam::Layout` and one line in `LAYOUTS` (and a [`StoreFormat`] to create
//! one).
//!
//! # Use from the engine
//! ```no_run
//! # fn main() -> Result<(), probe::store::StoreError> {
//! use probe::ids::{FindingSetId, RunId};
//! use probe::store::{encode, externalize_bodies, Store};
//! # let (document, start, mut pairs, set, mut end): (Vec<u8>, probe::model::RunStart,
//! #     Vec<(probe::model::TestCase, probe::model::Interaction)>, probe::model::FindingSet,
//! #     probe::model::RunEnd) = todo!();
//! let store = Store::open(std::path::Path::new(".probe"))?;
//! store.put_blob(&document)?;                        // RunStart.document names it
//! let run = RunId(store.put(&start)?);               // the run id, before any interaction
//! let recorder = store.recorder()?;                  // writer thread, bounded channel
//! for (case, interaction) in pairs.iter_mut() {      // on the engine's own threads:
//!     let mut objects = externalize_bodies(interaction); // large bodies -> blobs
//!     objects.push(encode(case)?);                   // ids are known here, before writing
//!     objects.push(encode(interaction)?);
//!     recorder.record(objects)?;                     // blocks only when the channel is full
//!                                                    // (in a task: `record_async(..).await`)
//! }
//! recorder.finish()?;                                // everything durable
//! let set = FindingSetId(store.put(&set)?);
//! end.findings = set;
//! store.put(&end)?;                                  // the run manifest, last
//! # Ok(()) }
//! ```
//!
//! # Write order
//! Objects are appended (and fsynced) to a pack before the index transaction that names
//! them commits, and a run's [`RunEnd`] is written after all its interactions, so a crash at
//! any moment leaves a store that opens, verifies, and lists the run as unfinished.
//!
//! # Layout
//! ```text
//! .probe/
//!   FORMAT          "probe-store 1.0"
//!   index.sqlite    the index (WAL: also index.sqlite-wal, -shm)
//!   packs/*.pack    append-only object records, one pack per writing process
//!   dicts/*.zdict   zstd dictionaries named by records (none written by format 1.0)
//!   reports/<run>.json, reports/<run>.html   (report.json and the page, docs/html-report.md)
//!   lock            locked shared by every process that has the store open, exclusively by
//!                   gc and reindex ([`lock`])
//!   writers/<pid>   who has the store open, for the messages of refusals
//! ```
//! A format-2 store (FORMAT `probe-store 2.0`) has `index-2.sqlite` and `packs-2/` in place
//! of `index.sqlite`, `packs/` and `dicts/` ([`v2`]).
//!
//! Depends on: `ids`, `model`, `redact` (at the edge: [`encode_exchange`]). Nothing here prints or knows the command line.

pub(crate) mod context;
#[cfg(test)]
mod crash_tests;
pub mod dict;
mod error;
pub mod exchange;
pub mod exclusive;
pub mod files;
pub mod format;
pub mod formats;
pub mod handle;
pub mod holders;
pub mod index;
pub mod keeper;
pub mod kind;
pub mod located;
pub mod lock;
pub mod maintenance;
pub mod merge;
pub mod object;
pub mod pack;
pub mod recorder;
pub mod reports;
pub(crate) mod seam;
pub(crate) mod sink;
#[cfg(any(test, feature = "dev-tools"))]
pub mod synthetic;
#[cfg(test)]
mod tests;
pub mod v1;
pub mod v2;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::ids::{BlobId, Digest, FindingSetId, RunId};
use crate::model::{BodyBytes, RunEnd};

pub(crate) use error::io_err;
pub use error::{Candidate, StoreError};
pub use exchange::{encode_exchange, EncodedExchange};
pub use exclusive::ExclusiveStore;
pub(crate) use files::write_atomic;
pub use format::{FormatVersion, ObjectKind, OBJECT_FORMAT, STORE_FORMAT};
pub use formats::StoreFormat;
use handle::Inner;
pub use handle::Store;
pub use index::{InteractionRow, RunSummary, RunTally, INDEX_SCHEMA_VERSION};
pub use keeper::{KeepFuture, Keeper};
pub(crate) use located::Located;
pub use located::LocatedInteraction;
pub use lock::{Holder, Maintenance};
pub use merge::MergeReport;
pub use object::{
    encode, encode_blob, externalize_bodies, kept_as_blob, Blob, EncodedObject, StoredObject,
};
pub use pack::ObjectBackend;
pub use recorder::{Recorder, RecorderOptions, RecorderStats};
pub use reports::{
    GcReport, KindStats, MovedIndex, Problem, ReindexReport, StoreStats, VerifyReport,
};

use context::Context;
use format::parse_format_file;
use lock::{Access, StoreLock};
use seam::OpenLayout;

/// The suffix that names the newest run (`@latest`, `tag:k=v@latest`, `NAME@latest`).
pub const LATEST: &str = "@latest";

/// Default store directory, relative to the working directory.
pub const DEFAULT_DIR: &str = ".probe";

/// The layouts this build reads, oldest first, each with the store format it writes and
/// its opener: a store opens in the newest layout whose major is at most its FORMAT's
/// (whose minor must then be readable). Adding a layout is a folder that implements
/// [`seam::Layout`] and a line here (and a [`StoreFormat`] to create one).
const LAYOUTS: [(FormatVersion, OpenLayout); 2] = [
    (STORE_FORMAT, v1::open),
    (v2::STORE_FORMAT_2, v2::seam::open),
];

impl Store {
    /// Opens the store at `dir`, creating it when absent or empty, to write into it. Holds
    /// the store lock shared while the store is open; refused while gc or reindex holds it
    /// ([`StoreError::Maintained`]). A new store is in the default format
    /// ([`StoreFormat::default`]; [`Store::open_or_create`] chooses).
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        Store::open_or_create(dir, StoreFormat::default())
    }

    /// [`Store::open`], creating a store that is absent in `format`; a store that exists
    /// opens in the format it has.
    pub fn open_or_create(dir: &Path, format: StoreFormat) -> Result<Store, StoreError> {
        if !dir.join("FORMAT").exists() {
            create_format_file(dir, format)?;
        }
        Store::open_with(dir, Access::Write).map(|(store, _)| store)
    }

    /// Opens an existing store; an absent one is an error with a hint. Holds the store lock
    /// shared while the store is open, as [`Store::open`] does, except where the lock file
    /// cannot be created (a read-only medium): then it opens without a lock, and says so in
    /// a note (`probe store verify` shows it).
    pub fn open_existing(dir: &Path) -> Result<Store, StoreError> {
        Store::open_with(dir, Access::Read).map(|(store, _)| store)
    }

    /// Opens an existing store alone, for `operation`: takes the store lock exclusively,
    /// without waiting. While another process has the store open this is refused with
    /// [`StoreError::InUse`], which names them; while the result lives, every other open
    /// is refused with [`StoreError::Maintained`].
    ///
    /// For [`Maintenance::Reindex`], an index that cannot be opened (not a database, a
    /// damaged or unreadable schema) is moved aside (`index.sqlite.damaged-<unix seconds>`,
    /// with its `-wal` and `-shm`) and a new one started; [`ExclusiveStore::reindex`]
    /// rebuilds it and says where the old file went.
    pub fn open_for_maintenance(
        dir: &Path,
        operation: Maintenance,
    ) -> Result<ExclusiveStore, StoreError> {
        let (store, moved) = Store::open_with(dir, Access::Alone(operation))?;
        Ok(ExclusiveStore::new(store, operation, moved))
    }

    /// Opens a store of either format.
    fn open_with(dir: &Path, access: Access) -> Result<(Store, Option<MovedIndex>), StoreError> {
        let format_path = dir.join("FORMAT");
        let text = match fs::read_to_string(&format_path) {
            Ok(t) => t,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(StoreError::NoStore {
                    path: dir.to_path_buf(),
                })
            }
            Err(e) => return Err(io_err("read", &format_path)(e)),
        };
        let version = parse_format_file(&text).ok_or_else(|| StoreError::NotAStore {
            path: dir.to_path_buf(),
            reason: format!(
                "FORMAT does not read `{} <major>.<minor>`",
                format::FORMAT_FILE_TAG
            ),
        })?;
        // Majors past the newest layout's are refused naming its version.
        let (newest, open) = LAYOUTS
            .iter()
            .rev()
            .find(|(v, _)| v.major <= version.major)
            .unwrap_or(&LAYOUTS[0]);
        version.check_readable_by(*newest, &format!("store {}", dir.display()))?;
        // The lock before the index: maintenance may move the index aside.
        let (lock, lock_note) = StoreLock::acquire(dir, access)?;
        let opened = open(dir, access)?;
        let store = Store {
            inner: Arc::new(Inner {
                layout: opened.layout,
                ctx: Context {
                    dir: dir.to_path_buf(),
                    index_path: opened.index_path,
                    backend: opened.backend,
                    notes: Mutex::new(lock_note.into_iter().chain(opened.notes).collect()),
                    lock,
                },
            }),
        };
        // The index is derived data: when it is gone (or empty: a crash while creating it)
        // but objects are there, rebuild it rather than show an empty store. (Not for a
        // reindex, which rebuilds it next anyway.)
        if access != Access::Alone(Maintenance::Reindex) {
            if let Some((objects, packs)) = store.inner.layout.rebuild_if_empty(&store.inner.ctx)? {
                if objects > 0 {
                    store.note(format!(
                        "the index was {}; rebuilt it from {objects} objects in {packs} packs",
                        if opened.had_index { "empty" } else { "missing" },
                    ));
                }
            }
        }
        Ok((store, opened.moved))
    }

    pub(crate) fn note(&self, text: String) {
        self.inner.ctx.note(text);
    }

    /// The store directory.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// Writes one object (and its index rows) now; returns its id. Writing an object that
    /// is already stored is a no-op.
    pub fn put<T: StoredObject>(&self, v: &T) -> Result<Digest, StoreError> {
        let obj = encode(v)?;
        let id = obj.id;
        self.put_encoded(vec![obj])?;
        Ok(id)
    }

    /// Writes already encoded objects in one pack append and one index transaction.
    pub fn put_encoded(&self, objects: Vec<EncodedObject>) -> Result<(), StoreError> {
        // A run's start names the run this process records, in its registry entry.
        let run = objects
            .iter()
            .find(|o| o.kind == ObjectKind::RunStart)
            .map(|o| o.id);
        self.inner.layout.put_now(&self.inner.ctx, objects)?;
        if let Some(run) = run {
            self.inner.lock.set_run(&run.to_hex());
        }
        Ok(())
    }

    /// Reads one object, checking its hash.
    pub fn get<T: StoredObject>(&self, id: Digest) -> Result<T, StoreError> {
        let (kind, payload) = self.inner.read_payload(id)?;
        if kind != T::KIND {
            return Err(StoreError::WrongKind {
                id,
                expected: T::KIND,
                found: kind.name().to_owned(),
            });
        }
        T::from_payload(id, &payload)
    }

    /// Reads one object at a location a query gave (see [`Store::interactions_page`]).
    pub(crate) fn get_located<T: StoredObject>(
        &self,
        id: Digest,
        loc: &Located,
    ) -> Result<T, StoreError> {
        let (kind, payload) = self.inner.read_located(id, loc)?;
        if kind != T::KIND {
            return Err(StoreError::WrongKind {
                id,
                expected: T::KIND,
                found: kind.name().to_owned(),
            });
        }
        T::from_payload(id, &payload)
    }

    /// Stores raw bytes as a blob.
    pub fn put_blob(&self, bytes: &[u8]) -> Result<BlobId, StoreError> {
        let obj = encode_blob(bytes);
        let id = BlobId(obj.id);
        self.put_encoded(vec![obj])?;
        Ok(id)
    }

    /// Reads a blob back.
    pub fn get_blob(&self, id: BlobId) -> Result<Vec<u8>, StoreError> {
        Ok(self.get::<Blob>(id.0)?.0)
    }

    /// The other files of a run's document ([`RunStart::documents`]), read back by key.
    pub fn run_documents(
        &self,
        start: &crate::model::RunStart,
    ) -> Result<std::collections::BTreeMap<String, Vec<u8>>, StoreError> {
        start
            .documents
            .iter()
            .map(|(key, blob)| Ok((key.clone(), self.get_blob(*blob)?)))
            .collect()
    }

    /// The bytes of a body, inline or from its blob.
    pub fn body_bytes(&self, b: &BodyBytes) -> Result<Vec<u8>, StoreError> {
        match b {
            BodyBytes::Inline(bytes) => Ok(bytes.clone()),
            BodyBytes::Blob { id, .. } => self.get_blob(*id),
        }
    }

    /// Starts a recorder thread writing into this store.
    pub fn recorder(&self) -> Result<Recorder, StoreError> {
        Recorder::start(self.inner.clone(), RecorderOptions::default(), None)
    }

    /// A recorder with explicit compression options.
    pub fn recorder_with(&self, options: RecorderOptions) -> Result<Recorder, StoreError> {
        Recorder::start(self.inner.clone(), options, None)
    }

    /// A recorder that also reports, after each durable batch, the interactions it holds.
    pub fn recorder_with_acks(
        &self,
    ) -> Result<
        (
            Recorder,
            crossbeam_channel::Receiver<Vec<crate::ids::InteractionId>>,
        ),
        StoreError,
    > {
        self.recorder_with_options_and_acks(RecorderOptions::default())
    }

    /// [`Store::recorder_with_acks`] with explicit options.
    pub fn recorder_with_options_and_acks(
        &self,
        options: RecorderOptions,
    ) -> Result<
        (
            Recorder,
            crossbeam_channel::Receiver<Vec<crate::ids::InteractionId>>,
        ),
        StoreError,
    > {
        let (tx, rx) = crossbeam_channel::unbounded();
        Ok((Recorder::start(self.inner.clone(), options, Some(tx))?, rx))
    }

    /// This store with its byte layer wrapped by `wrap`: the crash tests put a layer that
    /// dies at a chosen write between the store and its packs. `None` while another handle
    /// on the store (a recorder) lives.
    #[cfg(test)]
    pub(crate) fn with_backend(
        self,
        wrap: impl FnOnce(Box<dyn ObjectBackend>) -> Box<dyn ObjectBackend>,
    ) -> Option<Store> {
        let Inner { layout, ctx } = Arc::try_unwrap(self.inner).ok()?;
        Some(Store {
            inner: Arc::new(Inner {
                layout,
                ctx: Context {
                    backend: wrap(ctx.backend),
                    ..ctx
                },
            }),
        })
    }

    /// Every run, newest first.
    pub fn runs(&self) -> Result<Vec<RunSummary>, StoreError> {
        self.inner.layout.summaries(&self.inner.ctx, None)
    }

    /// The interactions of a run in seq order.
    pub fn interactions_of(&self, run: RunId) -> Result<Vec<InteractionRow>, StoreError> {
        self.inner.layout.interactions_of(&self.inner.ctx, &run)
    }

    /// The end manifest of a run; `None` while it runs or when it crashed.
    pub fn run_end(&self, run: RunId) -> Result<Option<RunEnd>, StoreError> {
        let id = self.inner.layout.run_end_id(&self.inner.ctx, &run)?;
        id.map(|id| self.get::<RunEnd>(id.0)).transpose()
    }

    /// The finding sets judging a run: the run-time set first, then rechecks.
    pub fn finding_sets_of(&self, run: RunId) -> Result<Vec<FindingSetId>, StoreError> {
        self.inner.layout.finding_sets_of(&self.inner.ctx, &run)
    }

    /// The interactions of a run with seq in `seqs`, in seq order: a reader that pages
    /// through a run holds one page at a time, whatever the run's size.
    pub fn interactions_page(
        &self,
        run: RunId,
        seqs: std::ops::Range<u64>,
    ) -> Result<Vec<LocatedInteraction>, StoreError> {
        self.inner
            .layout
            .interactions_page(&self.inner.ctx, &run, seqs)
    }

    /// Reads the interaction of a page row (no index lookup when the row carries its
    /// location).
    pub fn get_interaction(
        &self,
        item: &LocatedInteraction,
    ) -> Result<crate::model::Interaction, StoreError> {
        match &item.location {
            Some(loc) => self.get_located(item.row.id.digest(), loc),
            None => Err(StoreError::NotFound {
                id: item.row.id.digest().to_hex(),
            }),
        }
    }

    /// The highest seq among a run's interactions; `None` when it has none.
    pub fn max_seq(&self, run: RunId) -> Result<Option<u64>, StoreError> {
        self.inner.layout.max_seq(&self.inner.ctx, &run)
    }

    /// Reads the test case of a page row (no index lookup when the row carries its
    /// location).
    pub fn get_case(
        &self,
        item: &LocatedInteraction,
    ) -> Result<crate::model::TestCase, StoreError> {
        match &item.case_location {
            Some(loc) => self.get_located(item.row.case.digest(), loc),
            None => self.get(item.row.case.digest()),
        }
    }

    /// The finding sets of a run in write order, oldest first, each with about when it was
    /// written: the time the pack holding it was opened (a recheck opens its own pack, so
    /// this is the recheck's time; a run's pack opens when the run starts). `None` when
    /// the pack's name does not tell.
    pub fn finding_sets_written(
        &self,
        run: RunId,
    ) -> Result<Vec<(FindingSetId, Option<u64>)>, StoreError> {
        let rows = self
            .inner
            .layout
            .finding_sets_written(&self.inner.ctx, &run)?;
        Ok(rows
            .into_iter()
            .map(|(id, pack)| (id, pack_opened_ms(&pack)))
            .collect())
    }

    /// The finding set of a run written last (the run-time set, or the latest recheck).
    pub fn newest_finding_set(&self, run: RunId) -> Result<Option<FindingSetId>, StoreError> {
        self.inner.layout.newest_finding_set(&self.inner.ctx, &run)
    }

    /// A run's test-case ids in seq order and its requests per operation and status
    /// class, from one pass over the index.
    pub fn tally(&self, run: RunId) -> Result<RunTally, StoreError> {
        self.inner.layout.tally(&self.inner.ctx, &run)
    }

    /// The index's summary of one run.
    pub fn run_summary(&self, run: RunId) -> Result<RunSummary, StoreError> {
        self.inner
            .layout
            .summaries(&self.inner.ctx, Some(&run))?
            .into_iter()
            .next()
            .ok_or_else(|| StoreError::NotFound { id: run.0.to_hex() })
    }

    /// The runs named `name`, newest first.
    pub fn runs_named(&self, name: &str) -> Result<Vec<Digest>, StoreError> {
        self.inner.layout.runs_named(&self.inner.ctx, name)
    }

    /// Resolves text naming a run: `tag:k=v` (the newest run with that tag), a run name
    /// (the newest run of that name), or an id prefix of the run (or of its end manifest
    /// or one of its finding sets). `@latest` is the newest run of the store; a name or a
    /// tag followed by `@latest` (`tag:branch=main@latest`) is the newest run it names, as
    /// it is without the suffix, written out for the reader of a CI recipe.
    pub fn resolve_run(&self, text: &str) -> Result<RunId, StoreError> {
        if let Some(base) = text.trim().strip_suffix(LATEST) {
            if base.is_empty() {
                return self
                    .runs()?
                    .first()
                    .map(|r| r.id)
                    .ok_or_else(|| StoreError::NotFound {
                        id: format!("{LATEST} (the store has no runs)"),
                    });
            }
            return self.resolve_run(base);
        }
        if let Some(tag) = text.strip_prefix("tag:") {
            let (k, v) = tag.split_once('=').ok_or_else(|| StoreError::NotFound {
                id: format!("{text} (write a tag as tag:key=value)"),
            })?;
            let found = self
                .inner
                .layout
                .newest_run_tagged(&self.inner.ctx, k.trim(), v.trim())?;
            return found.map(RunId).ok_or_else(|| StoreError::NotFound {
                id: format!("run tagged {}={}", k.trim(), v.trim()),
            });
        }
        let named = self.runs_named(text)?;
        if let Some(newest) = named.first() {
            return Ok(RunId(*newest));
        }
        let (kind, id) = self.resolve(text)?;
        match kind {
            ObjectKind::RunStart => Ok(RunId(id)),
            ObjectKind::RunEnd => Ok(self.get::<RunEnd>(id)?.run),
            ObjectKind::FindingSet => Ok(self.get::<crate::model::FindingSet>(id)?.run),
            other => Err(StoreError::WrongKind {
                id,
                expected: ObjectKind::RunStart,
                found: other.name().to_owned(),
            }),
        }
    }

    /// Resolves a full id, a unique id prefix (at least 4 hex characters) or a run name
    /// (the newest run of that name).
    pub fn resolve(&self, text: &str) -> Result<(ObjectKind, Digest), StoreError> {
        if text.trim().ends_with(LATEST) {
            return Ok((ObjectKind::RunStart, self.resolve_run(text)?.0));
        }
        let lower = text.trim().to_ascii_lowercase();
        let is_hex = !lower.is_empty() && lower.bytes().all(|b| b.is_ascii_hexdigit());
        let by_prefix = is_hex && lower.len() >= 4 && lower.len() <= 64;
        let mut found: Vec<(u8, Digest)> = if by_prefix {
            self.inner.layout.by_prefix(&self.inner.ctx, &lower, 11)?
        } else {
            Vec::new()
        };
        let named = self.runs_named(text)?;
        // A run name stands for the newest run of that name, as in `resolve_run`: one rule
        // for every command that takes a run (docs/cli.md, naming runs).
        if let Some(&id) = named.first() {
            if !found.iter().any(|(_, d)| *d == id) {
                found.push((ObjectKind::RunStart.tag(), id));
            }
        }
        let known: Vec<(ObjectKind, Digest)> = found
            .into_iter()
            .filter_map(|(t, d)| ObjectKind::from_tag(t).map(|k| (k, d)))
            .collect();
        match known.as_slice() {
            [] if is_hex && lower.len() < 4 => Err(StoreError::PrefixTooShort {
                text: text.to_owned(),
            }),
            [] => Err(StoreError::NotFound {
                id: text.to_owned(),
            }),
            [one] => Ok(*one),
            many => {
                let mut candidates = Vec::new();
                for (kind, id) in many {
                    candidates.push(Candidate {
                        kind: *kind,
                        id: *id,
                        description: self.describe(*kind, *id)?,
                    });
                    if candidates.len() == 10 {
                        break;
                    }
                }
                Err(StoreError::Ambiguous {
                    prefix: text.to_owned(),
                    candidates,
                })
            }
        }
    }

    /// A one-line description of an object, from the index.
    pub fn describe(&self, kind: ObjectKind, id: Digest) -> Result<String, StoreError> {
        match self.inner.layout.describe(&self.inner.ctx, kind, &id)? {
            Some(text) => Ok(text),
            None => self.describe_decoded(kind, id),
        }
    }

    /// [`Store::describe`] from the object itself, for what the index does not describe.
    fn describe_decoded(&self, kind: ObjectKind, id: Digest) -> Result<String, StoreError> {
        Ok(match kind {
            ObjectKind::RunStart => {
                let s: crate::model::RunStart = self.get(id)?;
                format!(
                    "{} (started {})",
                    s.name.unwrap_or(s.document_source),
                    s.started_ms
                )
            }
            ObjectKind::Interaction => {
                let i: crate::model::Interaction = self.get(id)?;
                let case: crate::model::TestCase = self.get(i.case.digest())?;
                format!(
                    "#{} {} {} -> {}",
                    i.seq,
                    case.method,
                    case.operation,
                    i.outcome
                        .status()
                        .map_or("transport error".to_owned(), |s| s.to_string())
                )
            }
            ObjectKind::TestCase => {
                let c: crate::model::TestCase = self.get(id)?;
                format!("{} {}", c.method, c.operation)
            }
            ObjectKind::Blob => format!("{} bytes", self.get::<Blob>(id)?.0.len()),
            ObjectKind::Series => "a series of calls on one resource".to_owned(),
            ObjectKind::RunEnd | ObjectKind::FindingSet => String::new(),
        })
    }

    /// Keeps the report.json of a run inside the store, as `reports/<run id>.json`.
    pub fn write_report(&self, run: RunId, report_json: &[u8]) -> Result<PathBuf, StoreError> {
        let dir = self.inner.dir.join("reports");
        fs::create_dir_all(&dir).map_err(io_err("create", &dir))?;
        let path = dir.join(format!("{}.json", run.0.to_hex()));
        write_atomic(&path, report_json)?;
        Ok(path)
    }

    /// The report.json of a run kept by [`Store::write_report`]; `None` when there is none
    /// (a run that did not end, or a replay).
    pub fn read_report(&self, run: RunId) -> Result<Option<Vec<u8>>, StoreError> {
        let path = self
            .inner
            .dir
            .join("reports")
            .join(format!("{}.json", run.0.to_hex()));
        match fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_err("read", &path)(e)),
        }
    }

    /// Keeps the HTML page of a run beside its report.json, as `reports/<run id>.html`.
    pub fn write_page(&self, run: RunId, html: &[u8]) -> Result<PathBuf, StoreError> {
        let dir = self.inner.dir.join("reports");
        fs::create_dir_all(&dir).map_err(io_err("create", &dir))?;
        let path = dir.join(format!("{}.html", run.0.to_hex()));
        write_atomic(&path, html)?;
        Ok(path)
    }
}

/// Makes `dir` a store of `format` by giving it its `FORMAT` file, unless another creator
/// (another process, or another thread of this one) has just done so.
///
/// Any number of creators may race on one new directory: each writes its own temporary file
/// and links it to `FORMAT`, which only the first link creates; the others find the file
/// there and open the store that creator made. Only a directory that holds other things and
/// no `FORMAT`, once every creator is through, is refused.
fn create_format_file(dir: &Path, format: StoreFormat) -> Result<(), StoreError> {
    use std::io::Write;
    let format_path = dir.join("FORMAT");
    // Empty, or only what interrupted creations leave (`FORMAT.tmp…`).
    let empty = match fs::read_dir(dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok())
            .all(|e| e.file_name().to_string_lossy().starts_with("FORMAT.tmp")),
        Err(e) if e.kind() == io::ErrorKind::NotFound => true,
        Err(e) => return Err(io_err("read", dir)(e)),
    };
    if !empty {
        if format_path.exists() {
            // Another creator was quicker, and has begun to fill the store.
            return Ok(());
        }
        return Err(StoreError::NotAStore {
            path: dir.to_path_buf(),
            reason: "it is not empty and has no FORMAT file".into(),
        });
    }
    fs::create_dir_all(dir).map_err(io_err("create", dir))?;
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let tmp = dir.join(format!(
        "FORMAT.tmp.{}.{}",
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let written = (|| {
        let mut f = fs::File::create(&tmp).map_err(io_err("create", &tmp))?;
        f.write_all(format::format_file_text(format.version()).as_bytes())
            .map_err(io_err("write", &tmp))?;
        f.sync_all().map_err(io_err("sync", &tmp))?;
        // A link, unlike a rename, never replaces: the first creator's file stays.
        match fs::hard_link(&tmp, &format_path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
            Err(e) => Err(io_err("link", &format_path)(e)),
        }
    })();
    let _ = fs::remove_file(&tmp);
    written?;
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// When a pack was opened, from its name (`<ms, 13 digits>-<pid>-<n>.pack`, or a
/// replacement named after it).
fn pack_opened_ms(name: &str) -> Option<u64> {
    let stem = name.split('-').next()?;
    (stem.len() == 13 && stem.bytes().all(|b| b.is_ascii_digit()))
        .then(|| stem.parse().ok())
        .flatten()
}
