//! What an open format-1 store holds ([`V1`]: its index connection, the index's schema,
//! the dictionaries its records name), how it opens, and how it reads one record.
//!
//! Depends on: `ids`, `store::{context, dict, error, format, index, lock, object, pack,
//! seam}`.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use rusqlite::Connection;

use crate::ids::Digest;
use crate::store::context::Context;
use crate::store::dict;
use crate::store::error::StoreError;
use crate::store::format::{ObjectKind, RecordHeader, OBJECT_FORMAT, RECORD_HEADER_LEN};
use crate::store::index::{self, sql_err, Location, INDEX_SCHEMA_VERSION};
use crate::store::lock::Access;
use crate::store::object::{open_record, RecordFault};
use crate::store::pack::PackDir;
use crate::store::seam::{open_index, Opened};

/// What a format-1 store needs open: its index and the dictionaries its records name.
pub(crate) struct V1 {
    pub(crate) conn: Mutex<Connection>,
    pub(crate) index_schema: Mutex<u32>,
    dicts: Mutex<HashMap<u32, Arc<Vec<u8>>>>,
    /// Opened for reading only (a read-only medium): nothing is rebuilt.
    pub(crate) read_only: bool,
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
    pub(crate) fn conn(&self) -> Result<std::sync::MutexGuard<'_, Connection>, StoreError> {
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
    pub(crate) fn query<T>(
        &self,
        ctx: &Context,
        q: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        let conn = self.conn()?;
        q(&conn).map_err(sql_err(&ctx.index_path))
    }

    /// Reads a format-1 record and checks it names, and hashes to, `id`.
    pub(crate) fn read_record(
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
