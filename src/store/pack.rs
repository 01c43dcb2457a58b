//! Where object records physically live: the [`ObjectBackend`] trait and its one
//! implementation, append-only pack files in `packs/` (format 1) or `packs-2/` (format 2,
//! [`super::v2`]): the byte layer is the same for both, only the pack header differs.
//!
//! Each writing process appends to a pack of its own (named by time and process id, created
//! with `create_new`), so two writers never interleave bytes in one file and no lock is
//! needed to append. A pack gc writes in place of another is named after it
//! ([`ObjectBackend::seal_replacing`]), so that the order of pack names stays the order
//! records were written in. A process killed mid-append leaves a torn tail in *its* pack: readers never look
//! past the offsets the index names, and scans ([`scan_pack`]) stop at the first record that
//! runs past the end of the file and report the rest as a torn tail.
//!
//! The trait is the seam for another backend (an S3-like object store, docs/design-notes.md, The store beyond one machine): callers
//! above it deal in pack names and offsets only.
//!
//! Depends on: `store::format`.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use super::error::StoreError;
use super::format::{
    decode_pack_header, encode_pack_header, FormatVersion, RecordHeader, OBJECT_FORMAT,
    PACK_HEADER_LEN, RECORD_HEADER_LEN,
};

/// Storage of packs. Offsets are byte positions inside a named pack.
pub trait ObjectBackend: Send + Sync {
    /// Appends `records` (whole records, back to back) to this process's pack and makes them
    /// durable before returning; gives the pack's name and the offset of the first byte.
    fn append(&self, records: &[u8]) -> Result<(String, u64), StoreError>;
    /// Appends records chosen under the writer's lock, so that nothing else lands between
    /// the choice and the bytes: `choose` is told the pack and the offset the first byte
    /// will land at, and leaves in `records` the records to append, back to back (none:
    /// nothing is written). Durable before returning, like [`ObjectBackend::append`]. For
    /// a writer that learns which objects are new from the index rows it inserts at those
    /// offsets.
    fn append_chosen(
        &self,
        records: &mut Vec<u8>,
        choose: &mut ChooseRecords<'_>,
    ) -> Result<(), StoreError>;
    /// Reads `len` bytes at `offset` of `pack`.
    fn read_at(&self, pack: &str, offset: u64, len: u64) -> Result<Vec<u8>, StoreError>;
    /// Names of every pack, oldest first.
    fn packs(&self) -> Result<Vec<String>, StoreError>;
    /// A sequential reader over a pack, and its length.
    fn open_pack(&self, pack: &str) -> Result<(Box<dyn Read + '_>, u64), StoreError>;
    /// Closes this process's pack; the next append starts a new one.
    fn seal(&self) -> Result<(), StoreError>;
    /// Closes this process's pack; the next append starts a new one that takes the place of
    /// pack `replaced` in name order (gc's copy of a pack it rewrites: the order of packs is
    /// the order their records were written in, which "newest" answers rely on).
    fn seal_replacing(&self, replaced: &str) -> Result<(), StoreError> {
        let _ = replaced;
        self.seal()
    }
    /// The length of a pack in bytes.
    fn pack_len(&self, pack: &str) -> Result<u64, StoreError> {
        Ok(self.open_pack(pack)?.1)
    }
    /// Deletes a pack (gc, after the index stopped naming it).
    fn remove_pack(&self, pack: &str) -> Result<(), StoreError>;
    /// Cuts a pack to its first `len` bytes and makes that durable: a torn tail (a block
    /// cut short by a crash mid-append) removed by maintenance, so that the next scan
    /// needs no special case and the pack may be appended to again. Never past the end:
    /// a `len` beyond the pack's length is refused.
    fn truncate(&self, pack: &str, len: u64) -> Result<(), StoreError>;
}

/// What [`ObjectBackend::append_chosen`] asks: given the pack and the offset the records
/// will start at, which of the records to append (it removes the others).
pub type ChooseRecords<'a> = dyn FnMut(&str, u64, &mut Vec<u8>) -> Result<(), StoreError> + 'a;

struct Writer {
    name: String,
    file: File,
    len: u64,
}

/// Appends `records` to the open pack and syncs them; gives the pack's name and the offset
/// of their first byte. After a failed write the pack is closed: a partial write leaves a torn tail, and
/// a fresh pack rather than bytes after it keeps every pack scannable up to its tail.
fn write_durably(
    dir: &Path,
    writer: &mut Option<Writer>,
    records: &[u8],
) -> Result<(String, u64), StoreError> {
    let Some(w) = writer.as_mut() else {
        return Err(StoreError::Other("no pack open for writing".into()));
    };
    let path = dir.join(&w.name);
    let offset = w.len;
    if let Err(e) = w.file.write_all(records) {
        *writer = None;
        return Err(io_err("append to", &path)(e));
    }
    // Objects must be durable before the index commit that names them.
    w.file.sync_data().map_err(io_err("sync", &path))?;
    w.len += records.len() as u64;
    Ok((w.name.clone(), offset))
}

#[cfg(unix)]
fn read_exact_at(f: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(f, buf, offset)
}

#[cfg(windows)]
fn read_exact_at(f: &File, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match f.seek_read(buf, offset) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Packs as files in a directory: `<store>/packs/` (format 1) or `<store>/packs-2/`
/// (format 2), each starting with the pack header it was made with.
pub struct PackDir {
    dir: PathBuf,
    /// Written at the start of every pack this process creates.
    header: [u8; PACK_HEADER_LEN],
    writer: Mutex<Option<Writer>>,
    /// The name (up to its first `.`) of the pack the next pack created replaces
    /// ([`ObjectBackend::seal_replacing`]).
    replacing: Mutex<Option<String>>,
    /// Open read handles by pack name; shared so that reads run outside the lock.
    readers: Mutex<HashMap<String, Arc<File>>>,
}

fn io_err<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> StoreError + 'a {
    move |source| StoreError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}

impl PackDir {
    /// Format-1 packs under `dir` (created on first append), headed `PROBEPAK` and the
    /// object format.
    pub fn new(dir: PathBuf) -> PackDir {
        PackDir::with_header(dir, encode_pack_header(OBJECT_FORMAT))
    }

    /// Packs under `dir` (created on first append) whose first bytes are `header`: the
    /// byte layer does not know what a header means, so that both store formats share it.
    pub fn with_header(dir: PathBuf, header: [u8; PACK_HEADER_LEN]) -> PackDir {
        PackDir {
            dir,
            header,
            writer: Mutex::new(None),
            replacing: Mutex::new(None),
            readers: Mutex::new(HashMap::new()),
        }
    }

    fn path_of(&self, pack: &str) -> PathBuf {
        self.dir.join(pack)
    }

    fn create_writer(&self) -> Result<Writer, StoreError> {
        fs::create_dir_all(&self.dir).map_err(io_err("create", &self.dir))?;
        let ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0);
        let pid = std::process::id();
        // A replacement is named after the pack it replaces, `<that name>.<n>.pack`, which
        // sorts where that one did among names of one width.
        let replacing = self.replacing.lock().ok().and_then(|mut r| r.take());
        for attempt in 0..1000u32 {
            let name = match &replacing {
                Some(stem) => format!("{stem}.{attempt:03}.pack"),
                None => format!("{ms:013}-{pid:07}-{attempt:03}.pack"),
            };
            let path = self.path_of(&name);
            match OpenOptions::new()
                .read(true)
                .append(true)
                .create_new(true)
                .open(&path)
            {
                Ok(mut file) => {
                    file.write_all(&self.header)
                        .map_err(io_err("write", &path))?;
                    return Ok(Writer {
                        name,
                        file,
                        len: PACK_HEADER_LEN as u64,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(io_err("create", &path)(e)),
            }
        }
        Err(StoreError::Other(format!(
            "cannot create a new pack in {}",
            self.dir.display()
        )))
    }
}

impl ObjectBackend for PackDir {
    fn append(&self, records: &[u8]) -> Result<(String, u64), StoreError> {
        let mut guard = self
            .writer
            .lock()
            .map_err(|_| StoreError::Other("pack writer lock poisoned".into()))?;
        if guard.is_none() {
            *guard = Some(self.create_writer()?);
        }
        write_durably(&self.dir, &mut guard, records)
    }

    fn append_chosen(
        &self,
        records: &mut Vec<u8>,
        choose: &mut ChooseRecords<'_>,
    ) -> Result<(), StoreError> {
        let mut guard = self
            .writer
            .lock()
            .map_err(|_| StoreError::Other("pack writer lock poisoned".into()))?;
        let created = guard.is_none();
        if created {
            *guard = Some(self.create_writer()?);
        }
        let w = guard.as_ref().expect("writer was just created");
        let chosen = choose(&w.name, w.len, records);
        match chosen {
            Ok(()) if !records.is_empty() => {
                write_durably(&self.dir, &mut guard, records).map(|_| ())
            }
            other => {
                // A pack made for nothing would stay behind empty.
                if created {
                    if let Some(w) = guard.take() {
                        let _ = fs::remove_file(self.path_of(&w.name));
                    }
                }
                other.map(|_| ())
            }
        }
    }

    fn read_at(&self, pack: &str, offset: u64, len: u64) -> Result<Vec<u8>, StoreError> {
        let path = self.path_of(pack);
        if pack.contains('/') || pack.contains('\\') || pack.contains("..") {
            return Err(StoreError::Other(format!(
                "bad pack name `{pack}` in index"
            )));
        }
        let f = {
            let mut readers = self
                .readers
                .lock()
                .map_err(|_| StoreError::Other("pack reader lock poisoned".into()))?;
            match readers.get(pack) {
                Some(f) => f.clone(),
                None => {
                    let f = Arc::new(File::open(&path).map_err(io_err("open", &path))?);
                    readers.insert(pack.to_owned(), f.clone());
                    f
                }
            }
        };
        let past_end = |size: u64| StoreError::Damaged {
            pack: pack.to_owned(),
            offset,
            reason: format!("record runs past the end of the pack ({size} bytes)"),
        };
        let Some(end) = offset.checked_add(len) else {
            return Err(past_end(u64::MAX));
        };
        // Never allocate for a length a damaged index made up: check a large read against
        // the pack's size first (small ones are checked by the read itself).
        if len > 1 << 20 {
            let size = f.metadata().map_err(io_err("stat", &path))?.len();
            if end > size {
                return Err(past_end(size));
            }
        }
        let mut buf = vec![0u8; usize::try_from(len).unwrap_or(usize::MAX)];
        // A positioned read: readers on several threads share one handle without a lock
        // held across the read, and need no seek. The pack's size is looked up only when
        // the read comes up short (a damaged index or a truncated pack).
        match read_exact_at(&f, &mut buf, offset) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                let size = f.metadata().map_err(io_err("stat", &path))?.len();
                return Err(past_end(size));
            }
            Err(e) => return Err(io_err("read", &path)(e)),
        }
        Ok(buf)
    }

    fn packs(&self) -> Result<Vec<String>, StoreError> {
        let mut out = Vec::new();
        let entries = match fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(io_err("list", &self.dir)(e)),
        };
        for entry in entries {
            let entry = entry.map_err(io_err("list", &self.dir))?;
            if let Some(name) = entry.file_name().to_str() {
                if name.ends_with(".pack") {
                    out.push(name.to_owned());
                }
            }
        }
        out.sort();
        Ok(out)
    }

    fn open_pack(&self, pack: &str) -> Result<(Box<dyn Read + '_>, u64), StoreError> {
        let path = self.path_of(pack);
        let f = File::open(&path).map_err(io_err("open", &path))?;
        let len = f.metadata().map_err(io_err("stat", &path))?.len();
        Ok((Box::new(BufReader::with_capacity(1 << 20, f)), len))
    }

    fn seal(&self) -> Result<(), StoreError> {
        let mut guard = self
            .writer
            .lock()
            .map_err(|_| StoreError::Other("pack writer lock poisoned".into()))?;
        *guard = None;
        if let Ok(mut r) = self.replacing.lock() {
            *r = None;
        }
        Ok(())
    }

    fn seal_replacing(&self, replaced: &str) -> Result<(), StoreError> {
        self.seal()?;
        let stem = replaced.split('.').next().unwrap_or(replaced);
        if let Ok(mut r) = self.replacing.lock() {
            *r = Some(stem.to_owned());
        }
        Ok(())
    }

    fn pack_len(&self, pack: &str) -> Result<u64, StoreError> {
        let path = self.path_of(pack);
        Ok(fs::metadata(&path).map_err(io_err("stat", &path))?.len())
    }

    fn remove_pack(&self, pack: &str) -> Result<(), StoreError> {
        let path = self.path_of(pack);
        if let Ok(mut r) = self.readers.lock() {
            r.remove(pack);
        }
        fs::remove_file(&path).map_err(io_err("remove", &path))
    }

    fn truncate(&self, pack: &str, len: u64) -> Result<(), StoreError> {
        if pack.contains('/') || pack.contains('\\') || pack.contains("..") {
            return Err(StoreError::Other(format!("bad pack name `{pack}`")));
        }
        let path = self.path_of(pack);
        let file = OpenOptions::new()
            .write(true)
            .open(&path)
            .map_err(io_err("open", &path))?;
        let size = file.metadata().map_err(io_err("stat", &path))?.len();
        if len > size {
            return Err(StoreError::Damaged {
                pack: pack.to_owned(),
                offset: len,
                reason: format!("cannot cut the pack to {len} bytes: it has {size}"),
            });
        }
        // The open writer's idea of the length would be wrong after the cut: the next
        // append starts a new pack.
        if let Ok(mut w) = self.writer.lock() {
            if w.as_ref().is_some_and(|w| w.name == pack) {
                *w = None;
            }
        }
        file.set_len(len).map_err(io_err("truncate", &path))?;
        file.sync_all().map_err(io_err("sync", &path))
    }
}

/// One item met while scanning a pack from its start.
#[derive(Debug)]
pub enum ScanItem {
    /// A record whose header parsed; `data` is its zstd frame (not yet checked).
    Record {
        offset: u64,
        header: RecordHeader,
        data: Vec<u8>,
    },
    /// The pack ends inside a record (a crash mid-append): `len` bytes from `offset` are
    /// ignored.
    TornTail { offset: u64, len: u64 },
    /// Bytes that are not a record, not at the tail: the rest of the pack cannot be read.
    Garbage { offset: u64, len: u64 },
    /// The pack header names a newer object format major.
    TooNew { version: FormatVersion },
    /// The file does not start with a pack header.
    NotAPack,
}

/// Reads a pack from its start, calling `visit` for each record or problem.
pub fn scan_pack(
    backend: &dyn ObjectBackend,
    pack: &str,
    visit: &mut dyn FnMut(ScanItem) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    let framing = Framing {
        pack_version: decode_pack_header,
        newest_major: OBJECT_FORMAT.major,
        header_len: RECORD_HEADER_LEN,
        // Every error means "not a record here" (`Short` cannot happen: the buffer is a
        // whole header).
        decode: |bytes| RecordHeader::decode(bytes).ok(),
        lengths: |h| (h.record_len(), h.stored_len as usize),
    };
    scan_frames(backend, pack, &framing, &mut |piece| {
        visit(match piece {
            Piece::Frame {
                offset,
                header,
                data,
            } => ScanItem::Record {
                offset,
                header,
                data,
            },
            Piece::TornTail { offset, len } => ScanItem::TornTail { offset, len },
            Piece::Garbage { offset, len } => ScanItem::Garbage { offset, len },
            Piece::TooNew { version } => ScanItem::TooNew { version },
            Piece::NotAPack => ScanItem::NotAPack,
        })
    })
}

/// How a format's packs are framed, for [`scan_frames`]: both formats' packs are a
/// 12-byte pack header, then frames that each start with a header of their own.
pub(crate) struct Framing<H> {
    /// The version a pack header names; `None` when it is not a pack of this format.
    pub pack_version: fn(&[u8]) -> Option<FormatVersion>,
    /// The newest major this build reads.
    pub newest_major: u8,
    /// The length of a frame's header.
    pub header_len: usize,
    /// A frame's header; `None` when the bytes are not one.
    pub decode: fn(&[u8]) -> Option<H>,
    /// A frame's whole length (header included) and the length of what follows its header.
    pub lengths: fn(&H) -> (u64, usize),
}

/// One thing [`scan_frames`] met: a whole frame (its data read, not checked), or where
/// and why the pack stops being readable.
pub(crate) enum Piece<H> {
    Frame {
        offset: u64,
        header: H,
        data: Vec<u8>,
    },
    TornTail {
        offset: u64,
        len: u64,
    },
    Garbage {
        offset: u64,
        len: u64,
    },
    TooNew {
        version: FormatVersion,
    },
    NotAPack,
}

/// Reads pack `pack` from its start, frame by frame, without the index: the skeleton both
/// formats' scans share, telling a torn tail from garbage. A pack shorter than its header,
/// a frame header cut short, a frame that runs past the end of the file, and bytes that
/// are not a header but zeros to the end are a *torn tail* (what a process killed
/// mid-append, or a crashed filesystem's append, leaves); other bytes that are not a
/// header are *garbage*, and end the scan.
pub(crate) fn scan_frames<H>(
    backend: &dyn ObjectBackend,
    pack: &str,
    framing: &Framing<H>,
    visit: &mut dyn FnMut(Piece<H>) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    let (mut r, len) = backend.open_pack(pack)?;
    let read_err = |source| StoreError::Io {
        action: "read",
        path: PathBuf::from(pack),
        source,
    };
    if len < PACK_HEADER_LEN as u64 {
        // A pack created by a process killed before it wrote the header.
        return visit(Piece::TornTail { offset: 0, len });
    }
    let mut head = [0u8; PACK_HEADER_LEN];
    r.read_exact(&mut head).map_err(read_err)?;
    let Some(version) = (framing.pack_version)(&head) else {
        return visit(Piece::NotAPack);
    };
    if version.major > framing.newest_major {
        return visit(Piece::TooNew { version });
    }
    let mut offset = PACK_HEADER_LEN as u64;
    let mut hbuf = vec![0u8; framing.header_len];
    while offset < len {
        let remaining = len - offset;
        if remaining < framing.header_len as u64 {
            return visit(Piece::TornTail {
                offset,
                len: remaining,
            });
        }
        r.read_exact(&mut hbuf).map_err(read_err)?;
        let Some(header) = (framing.decode)(&hbuf) else {
            // Zeros to the end are what a crashed filesystem append can leave.
            let mut rest = Vec::new();
            r.read_to_end(&mut rest).map_err(read_err)?;
            let zeros = hbuf.iter().chain(rest.iter()).all(|b| *b == 0);
            return visit(if zeros {
                Piece::TornTail {
                    offset,
                    len: remaining,
                }
            } else {
                Piece::Garbage {
                    offset,
                    len: remaining,
                }
            });
        };
        let (whole, stored) = (framing.lengths)(&header);
        if whole > remaining {
            return visit(Piece::TornTail {
                offset,
                len: remaining,
            });
        }
        // The stored length is at most what a header may claim (its decode checks) and
        // within the file.
        let mut data = vec![0u8; stored];
        r.read_exact(&mut data).map_err(read_err)?;
        visit(Piece::Frame {
            offset,
            header,
            data,
        })?;
        offset += whole;
    }
    Ok(())
}
