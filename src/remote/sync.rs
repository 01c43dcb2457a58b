//! Push and pull between a local format-2 store and a remote one.
//!
//! **Push** uploads the whole blocks of local packs that are not remote yet: from where the
//! last push stopped in each pack (the [`State`]) to its last whole block, as remote packs
//! of up to [`CHUNK_BYTES`] (a pack header and blocks copied as they are, named by their
//! hash), then the dictionaries those blocks name, then one segment naming them. Packs a
//! pull brought are never uploaded. A block a writer is still appending (a torn tail) waits
//! for the next push. Order makes a remote store that any reader can use at every moment:
//! a segment is written after every pack and dictionary it names, and readers read packs
//! only through segments, so a push killed at any point leaves at most packs no segment
//! names yet (the next push of the same bytes finds them there: same bytes, same name).
//!
//! **Pull** reads the segments the store has not met, chooses (all, a run's, a tag's, each
//! with the segments it needs), downloads the packs and dictionaries the store lacks,
//! checks each against its name, and adds the packs to the index
//! ([`crate::store::Store::index_packs`]).
//!
//! Depends on: `remote` (client, segments, state), `store` (format-2 packs, blocks,
//! dictionaries, objects, the facade), `ids`, `clock`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use crate::store::format::{ObjectKind, PACK_HEADER_LEN};
use crate::store::object::{row_of_payload, IndexRow};
use crate::store::v2::block::{BlockHeader, BLOCK_HEADER_LEN};
use crate::store::v2::dicts::DictionaryCache;
use crate::store::v2::{pack2_header, PACKS_2_DIR};

use super::bucket::Remote;
use super::error::RemoteError;
use super::segment::{self, Segment, SegmentPack, DICTS, PACKS, REPORTS, SEGMENTS};
use super::state::{Held, State};

/// The most bytes of blocks one remote pack holds (a pack is at least this large unless
/// it ends a local pack): few requests, and bounded memory, since a pack is built in
/// memory before it is sent.
pub const CHUNK_BYTES: usize = 32 << 20;

/// What a push did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PushReport {
    /// Remote packs created, and those found there already (same bytes).
    pub packs: usize,
    pub packs_there: usize,
    /// Bytes of packs sent.
    pub bytes: u64,
    /// The segment written, when anything was pushed.
    pub segment: Option<String>,
    /// Bytes of local packs not uploaded (not whole blocks yet, or below a chunk when only
    /// full chunks were asked for).
    pub pending: u64,
}

/// Which runs a pull brings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Select {
    All,
    /// A run by id prefix (at least 4 hex digits) or by name.
    Run(String),
    /// The runs tagged `key=value`.
    Tag(String, String),
}

/// What a pull did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PullReport {
    /// Segments read now (met before: kept locally).
    pub segments_read: usize,
    /// Segments chosen.
    pub segments: usize,
    /// Packs downloaded, and bytes.
    pub packs: usize,
    pub bytes: u64,
    /// Packs chosen that the store had already.
    pub packs_had: usize,
}

/// Uploads what of store `dir` is not remote yet; with `all` false, only full chunks
/// (what a run's background uploader sends while the run records).
pub fn push(dir: &Path, remote: &Remote, all: bool) -> Result<PushReport, RemoteError> {
    let mut held = Held::take(dir, &remote.url)?;
    let mut push = Pusher {
        dir,
        remote,
        dicts: DictionaryCache::new(dir.join(crate::store::dict::DICTS_DIR)),
        seg: Segment {
            format: 1,
            created_ms: crate::clock::now_ms(),
            writer: writer_name(),
            ..Segment::default()
        },
        report: PushReport::default(),
        used_dicts: BTreeSet::new(),
        prepared: false,
    };
    let mut done: Vec<(String, u64)> = Vec::new();
    for name in local_packs(&dir.join(PACKS_2_DIR))? {
        if held.state.pulled.contains(&name) {
            continue;
        }
        let from = held
            .state
            .uploaded
            .get(&name)
            .copied()
            .unwrap_or(PACK_HEADER_LEN as u64);
        if let Some(end) = push.pack(&name, from, all, &mut held.state)? {
            done.push((name, end));
        }
    }
    if all {
        push.reports(&mut held.state)?;
    }
    if push.seg.packs.is_empty() && push.seg.reports.is_empty() {
        return Ok(push.report);
    }
    push.seg.dicts = dict_names(dir, &push.used_dicts)?;
    push.seg.needs = held.state.segments.iter().cloned().collect();
    let bytes = push.seg.to_bytes();
    let name = segment::segment_name(push.seg.created_ms, &bytes);
    remote.create(&format!("{SEGMENTS}/{name}"), bytes.clone())?;
    // Kept locally too: a later pull of one run reads it from here.
    let seg_dir = held.segments_dir();
    fs::create_dir_all(&seg_dir).map_err(RemoteError::io("create", &seg_dir))?;
    let local = seg_dir.join(&name);
    fs::write(&local, &bytes).map_err(RemoteError::io("write", &local))?;
    held.state.segments.insert(name.clone());
    for (pack, end) in done {
        held.state.uploaded.insert(pack, end);
    }
    held.save()?;
    push.report.segment = Some(name);
    Ok(push.report)
}

/// One push in progress.
struct Pusher<'a> {
    dir: &'a Path,
    remote: &'a Remote,
    dicts: DictionaryCache,
    seg: Segment,
    report: PushReport,
    used_dicts: BTreeSet<u32>,
    /// Whether `FORMAT` and the dictionaries were sent (before the first pack).
    prepared: bool,
}

impl Pusher<'_> {
    /// Uploads the whole blocks of local pack `name` from offset `from`; gives the offset
    /// up to which they are remote now, when it moved.
    fn pack(
        &mut self,
        name: &str,
        from: u64,
        all: bool,
        state: &mut State,
    ) -> Result<Option<u64>, RemoteError> {
        let path = self.dir.join(PACKS_2_DIR).join(name);
        let mut file = fs::File::open(&path).map_err(RemoteError::io("open", &path))?;
        let len = file
            .metadata()
            .map_err(RemoteError::io("stat", &path))?
            .len();
        if len <= from {
            return Ok(None);
        }
        if !all && ((len - from) as usize) < CHUNK_BYTES {
            self.report.pending += len - from;
            return Ok(None);
        }
        file.seek(SeekFrom::Start(from))
            .map_err(RemoteError::io("seek", &path))?;
        let mut chunk = Chunk::new();
        let mut at = from;
        let mut sent_to = None;
        while let Some((header, frame)) = next_block(&mut file, at, len, &path)? {
            at += header.block_len();
            chunk.add(&header, &frame);
            if chunk.bytes.len() >= CHUNK_BYTES {
                self.flush(&mut chunk, state)?;
                sent_to = Some(at);
            }
        }
        if chunk.blocks.is_empty() || !all {
            self.report.pending += len - sent_to.unwrap_or(from);
        } else {
            self.flush(&mut chunk, state)?;
            sent_to = Some(at);
            self.report.pending += len - at;
        }
        Ok(sent_to)
    }

    /// Sends the files of `reports/` not sent before (what a run's reporters wrote when it
    /// ended), named in the segment.
    fn reports(&mut self, state: &mut State) -> Result<(), RemoteError> {
        let reports = self.dir.join(REPORTS);
        for name in files_ending(&reports, "")? {
            if state.reports.contains(&name) || name.starts_with('.') || name.contains(".tmp") {
                continue;
            }
            if !self.prepared {
                ensure_format(self.remote)?;
                upload_dicts(self.dir, self.remote, state)?;
                self.prepared = true;
            }
            let path = reports.join(&name);
            let bytes = fs::read(&path).map_err(RemoteError::io("read", &path))?;
            self.remote.create(&format!("{REPORTS}/{name}"), bytes)?;
            state.reports.insert(name.clone());
            self.seg.reports.push(name);
        }
        Ok(())
    }

    /// Sends one remote pack (after `FORMAT` and the dictionaries, the first time) and
    /// notes its runs in the segment.
    fn flush(&mut self, chunk: &mut Chunk, state: &mut State) -> Result<(), RemoteError> {
        if !self.prepared {
            ensure_format(self.remote)?;
            upload_dicts(self.dir, self.remote, state)?;
            self.prepared = true;
        }
        let bytes = std::mem::replace(&mut chunk.bytes, pack2_header().to_vec());
        let blocks = std::mem::take(&mut chunk.blocks);
        for (header, range) in &blocks {
            if let Some(d) = header.dict {
                self.used_dicts.insert(d.get());
            }
            note_runs(&bytes[range.clone()], &self.dicts, &mut self.seg);
        }
        let name = segment::pack_name(&bytes);
        let len = bytes.len() as u64;
        if self.remote.create(&format!("{PACKS}/{name}"), bytes)? {
            self.report.packs += 1;
            self.report.bytes += len;
        } else {
            self.report.packs_there += 1;
        }
        state.remote_packs.insert(name.clone());
        self.seg.packs.push(SegmentPack {
            name,
            len,
            blocks: blocks.len() as u64,
        });
        Ok(())
    }
}

/// A remote pack being built: its bytes (from the pack header) and its blocks' places.
struct Chunk {
    bytes: Vec<u8>,
    blocks: Vec<(BlockHeader, std::ops::Range<usize>)>,
}

impl Chunk {
    fn new() -> Chunk {
        Chunk {
            bytes: pack2_header().to_vec(),
            blocks: Vec::new(),
        }
    }

    fn add(&mut self, header: &BlockHeader, frame: &[u8]) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(&header.encode());
        self.bytes.extend_from_slice(frame);
        self.blocks.push((*header, start..self.bytes.len()));
    }
}

/// The next whole block of a pack at `at` (the file positioned there), or `None` where the
/// pack ends, a writer is still appending, or bytes are not a sound block (left to
/// `probe store verify`; nothing after them is pushed).
pub(super) fn next_block(
    file: &mut fs::File,
    at: u64,
    len: u64,
    path: &Path,
) -> Result<Option<(BlockHeader, Vec<u8>)>, RemoteError> {
    if len - at < BLOCK_HEADER_LEN as u64 {
        return Ok(None);
    }
    let mut head = [0u8; BLOCK_HEADER_LEN];
    file.read_exact(&mut head)
        .map_err(RemoteError::io("read", path))?;
    let Ok(header) = BlockHeader::decode(&head) else {
        return Ok(None);
    };
    if at + header.block_len() > len {
        return Ok(None);
    }
    let mut frame = vec![0u8; header.stored_len as usize];
    file.read_exact(&mut frame)
        .map_err(RemoteError::io("read", path))?;
    if header.check_of(&frame) != header.check {
        return Ok(None);
    }
    Ok(Some((header, frame)))
}

/// Notes in `seg` the runs whose objects block `bytes` holds: a start (with its name and
/// tags), an end, a finding set, or an exchange block's interactions (its first one says
/// the run). A block that does not open is passed over here: verify reports it.
fn note_runs(bytes: &[u8], dicts: &DictionaryCache, seg: &mut Segment) {
    let Ok(parsed) = crate::store::v2::whole::open_block(bytes, dicts) else {
        return;
    };
    let ids = parsed.ids().to_vec();
    for (ordinal, id) in ids.iter().enumerate() {
        let ordinal = ordinal as u32;
        let Some(kind) = parsed.kind(ordinal).and_then(ObjectKind::from_tag) else {
            continue;
        };
        if !matches!(
            kind,
            ObjectKind::RunStart
                | ObjectKind::RunEnd
                | ObjectKind::FindingSet
                | ObjectKind::Interaction
        ) {
            continue;
        }
        let Ok((_, payload)) = parsed.restore(ordinal) else {
            continue;
        };
        match row_of_payload(kind, *id, &payload) {
            Ok(IndexRow::RunStart(start)) => {
                let run = seg.run_mut(&id.to_hex());
                run.start = true;
                run.name.clone_from(&start.name);
                run.tags.clone_from(&start.tags);
            }
            Ok(IndexRow::RunEnd { run, .. }) => seg.run_mut(&run.0.to_hex()).end = true,
            Ok(IndexRow::FindingSet(set)) => {
                seg.run_mut(&set.run.0.to_hex());
            }
            Ok(IndexRow::Interaction { run, .. }) => {
                // One run per exchange block: its first interaction says which.
                seg.run_mut(&run.0.to_hex());
                return;
            }
            _ => {}
        }
    }
}

/// Creates `FORMAT` unless it is there; checks the one there.
fn ensure_format(remote: &Remote) -> Result<(), RemoteError> {
    if remote.create("FORMAT", segment::REMOTE_FORMAT.as_bytes().to_vec())? {
        return Ok(());
    }
    let text = remote.get("FORMAT")?.unwrap_or_default();
    segment::check_format(&remote.url.to_string(), &text)
}

/// Sends the local dictionaries the remote store has not had from here.
fn upload_dicts(dir: &Path, remote: &Remote, state: &mut State) -> Result<(), RemoteError> {
    let dicts = dir.join(crate::store::dict::DICTS_DIR);
    for name in files_ending(&dicts, ".zdict")? {
        if state.dicts.contains(&name) {
            continue;
        }
        let path = dicts.join(&name);
        let bytes = fs::read(&path).map_err(RemoteError::io("read", &path))?;
        remote.create(&format!("{DICTS}/{name}"), bytes)?;
        state.dicts.insert(name);
    }
    Ok(())
}

/// The local dictionary files of the keys `used`.
pub(super) fn dict_names(dir: &Path, used: &BTreeSet<u32>) -> Result<Vec<String>, RemoteError> {
    let dicts = dir.join(crate::store::dict::DICTS_DIR);
    Ok(files_ending(&dicts, ".zdict")?
        .into_iter()
        .filter(|name| {
            crate::store::dict::parse_file_name(name).is_some_and(|(key, _)| used.contains(&key))
        })
        .collect())
}

/// The names of the files in `dir` ending in `suffix`, sorted; none when `dir` is absent.
pub(super) fn files_ending(dir: &Path, suffix: &str) -> Result<Vec<String>, RemoteError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(RemoteError::io("list", dir)(e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(RemoteError::io("list", dir))?;
        if let Some(name) = entry.file_name().to_str() {
            if name.ends_with(suffix) {
                out.push(name.to_owned());
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The format-2 packs of a store, oldest first.
fn local_packs(dir: &Path) -> Result<Vec<String>, RemoteError> {
    files_ending(dir, ".pack")
}

/// Host and process, for a segment's `writer`.
pub(super) fn writer_name() -> String {
    format!("{} {}", super::lock::host_name(), std::process::id())
}

/// Brings what `select` chooses of the remote store into store `dir` (created as a
/// format-2 store when absent).
///
/// A pack a segment names that is gone while the segment is gone too was removed by a
/// `probe store gc` that replaced the segment after this pull listed: the pull keeps what
/// it downloaded and starts again from a new listing (at most [`PULL_TRIES`] times).
pub fn pull(dir: &Path, remote: &Remote, select: &Select) -> Result<PullReport, RemoteError> {
    let store = crate::store::Store::open(dir)?;
    let mut held = Held::take(dir, &remote.url)?;
    let mut report = PullReport::default();
    let mut tries = 0;
    loop {
        tries += 1;
        match pull_once(dir, &store, remote, select, &mut held, &mut report) {
            Err(Retry::Gc(_)) if tries < PULL_TRIES => continue,
            Err(Retry::Gc(e)) | Err(Retry::Failed(e)) => return Err(e),
            Ok(()) => return Ok(report),
        }
    }
}

/// How many times a pull lists again after a gc removed what it listed.
const PULL_TRIES: usize = 3;

/// Why one pass of a pull stopped.
enum Retry {
    /// What it listed was removed by a gc meanwhile.
    Gc(RemoteError),
    Failed(RemoteError),
}

impl From<RemoteError> for Retry {
    fn from(e: RemoteError) -> Retry {
        Retry::Failed(e)
    }
}

/// One pass of [`pull`]: the packs downloaded are indexed and noted even when it stops.
fn pull_once(
    dir: &Path,
    store: &crate::store::Store,
    remote: &Remote,
    select: &Select,
    held: &mut Held,
    report: &mut PullReport,
) -> Result<(), Retry> {
    let segments = read_segments(remote, held, report)?;
    let chosen = choose(&segments, select);
    report.segments = chosen.len();
    // A segment gc wrote in place of segments all met here holds nothing this store
    // lacks: its packs are copies of theirs.
    let covered: BTreeSet<&String> = chosen
        .iter()
        .filter(|name| {
            let seg = &segments[*name];
            !seg.replaces.is_empty()
                && seg
                    .replaces
                    .iter()
                    .any(|old| held.state.segments.contains(old))
        })
        .collect();
    let mut dicts_needed = BTreeSet::new();
    for name in chosen.iter().filter(|n| !covered.contains(n)) {
        dicts_needed.extend(segments[name].dicts.iter().cloned());
    }
    fetch_dicts(dir, remote, &dicts_needed)?;
    let mut new_local = Vec::new();
    let mut stopped = None;
    'segments: for name in &chosen {
        let seg = &segments[name];
        for pack in &seg.packs {
            if held.state.remote_packs.contains(&pack.name) {
                report.packs_had += 1;
                continue;
            }
            if covered.contains(name) {
                held.state.remote_packs.insert(pack.name.clone());
                report.packs_had += 1;
                continue;
            }
            match fetch_pack(dir, remote, name, seg, pack) {
                Ok(local) => {
                    report.packs += 1;
                    report.bytes += pack.len;
                    held.state.pulled.insert(local.clone());
                    held.state.remote_packs.insert(pack.name.clone());
                    new_local.push(local);
                }
                Err(e) => {
                    let gone = matches!(e, RemoteError::Format { .. })
                        && remote.get(&format!("{SEGMENTS}/{name}"))?.is_none();
                    stopped = Some(if gone { Retry::Gc(e) } else { Retry::Failed(e) });
                    break 'segments;
                }
            }
        }
    }
    store
        .index_packs(&new_local)
        .map_err(|e| Retry::Failed(e.into()))?;
    if let Some(stop) = stopped {
        held.save()?;
        return Err(stop);
    }
    for name in &chosen {
        fetch_reports(dir, remote, &segments[name].reports)?;
    }
    held.state.segments.extend(chosen);
    held.save()?;
    Ok(())
}

/// Every segment of the remote store, by name: those met before from the local copies,
/// the others read (and checked against their names) and kept.
pub(super) fn read_segments(
    remote: &Remote,
    held: &Held,
    report: &mut PullReport,
) -> Result<BTreeMap<String, Segment>, RemoteError> {
    let url = remote.url.to_string();
    let seg_dir = held.segments_dir();
    fs::create_dir_all(&seg_dir).map_err(RemoteError::io("create", &seg_dir))?;
    let mut out = BTreeMap::new();
    for listed in remote.list(SEGMENTS)? {
        let local = seg_dir.join(&listed.name);
        let bytes = match fs::read(&local) {
            Ok(bytes) => bytes,
            Err(_) => {
                let Some(bytes) = remote.get(&format!("{SEGMENTS}/{}", listed.name))? else {
                    continue; // Listed, then gone: a listing may lag behind.
                };
                if !segment::matches_name(&listed.name, &bytes) {
                    return Err(RemoteError::Format {
                        url,
                        why: format!("segment {} does not hash to its name", listed.name),
                    });
                }
                fs::write(&local, &bytes).map_err(RemoteError::io("write", &local))?;
                report.segments_read += 1;
                bytes
            }
        };
        let seg = Segment::parse(&url, &listed.name, &bytes)?;
        out.insert(listed.name, seg);
    }
    Ok(out)
}

/// The segments `select` chooses, with every segment they need, in name order.
fn choose(segments: &BTreeMap<String, Segment>, select: &Select) -> BTreeSet<String> {
    let runs: BTreeSet<String> = match select {
        Select::All => return segments.keys().cloned().collect(),
        Select::Run(text) => {
            let text = text.trim().to_ascii_lowercase();
            let by_id = text.len() >= 4 && text.bytes().all(|b| b.is_ascii_hexdigit());
            segments
                .values()
                .flat_map(|s| &s.runs)
                .filter(|r| {
                    (by_id && r.id.starts_with(&text)) || r.name.as_deref() == Some(text.as_str())
                })
                .map(|r| r.id.clone())
                .collect()
        }
        Select::Tag(k, v) => segments
            .values()
            .flat_map(|s| &s.runs)
            .filter(|r| r.tags.get(k) == Some(v))
            .map(|r| r.id.clone())
            .collect(),
    };
    // A segment gc deleted is needed through the one that took its place.
    let mut replaced_by: BTreeMap<&str, &str> = BTreeMap::new();
    for (name, seg) in segments {
        for old in &seg.replaces {
            replaced_by.insert(old.as_str(), name.as_str());
        }
    }
    let mut chosen = BTreeSet::new();
    let mut todo: Vec<String> = segments
        .iter()
        .filter(|(_, s)| s.runs.iter().any(|r| runs.contains(&r.id)))
        .map(|(name, _)| name.clone())
        .collect();
    while let Some(name) = todo.pop() {
        let name = match segments.contains_key(&name) {
            true => name,
            false => match replaced_by.get(name.as_str()) {
                Some(by) => (*by).to_owned(),
                None => continue,
            },
        };
        if let Some(seg) = segments.get(&name) {
            if chosen.insert(name) {
                todo.extend(seg.needs.iter().cloned());
            }
        }
    }
    chosen
}

/// Downloads the dictionaries of `names` the store lacks.
fn fetch_dicts(dir: &Path, remote: &Remote, names: &BTreeSet<String>) -> Result<(), RemoteError> {
    let dicts = dir.join(crate::store::dict::DICTS_DIR);
    fs::create_dir_all(&dicts).map_err(RemoteError::io("create", &dicts))?;
    for name in names {
        if crate::store::dict::parse_file_name(name).is_none() || name.contains('/') {
            continue;
        }
        let path = dicts.join(name);
        if path.exists() {
            continue;
        }
        let bytes = remote
            .get(&format!("{DICTS}/{name}"))?
            .ok_or_else(|| RemoteError::Format {
                url: remote.url.to_string(),
                why: format!("a segment names dictionary {name}, which is not there"),
            })?;
        write_new(&path, &bytes)?;
    }
    Ok(())
}

/// Downloads the report files of `names` the store lacks (a report gone from the bucket is
/// passed over: the objects hold the run).
fn fetch_reports(dir: &Path, remote: &Remote, names: &[String]) -> Result<(), RemoteError> {
    let reports = dir.join(REPORTS);
    for name in names {
        if name.contains('/') || name.contains("..") {
            continue;
        }
        let path = reports.join(name);
        if path.exists() {
            continue;
        }
        if let Some(bytes) = remote.get(&format!("{REPORTS}/{name}"))? {
            fs::create_dir_all(&reports).map_err(RemoteError::io("create", &reports))?;
            write_new(&path, &bytes)?;
        }
    }
    Ok(())
}

/// Downloads remote pack `pack` of segment `seg_name` into the store's packs, checked
/// against its name; gives its local name (`<segment time>-<hash>.pack`, so that pulled
/// packs sort by when they were pushed).
fn fetch_pack(
    dir: &Path,
    remote: &Remote,
    seg_name: &str,
    seg: &Segment,
    pack: &SegmentPack,
) -> Result<String, RemoteError> {
    let url = remote.url.to_string();
    let bytes = remote
        .get(&format!("{PACKS}/{}", pack.name))?
        .ok_or_else(|| RemoteError::Format {
            url: url.clone(),
            why: format!(
                "segment {seg_name} names pack {}, which is not there",
                pack.name
            ),
        })?;
    if !segment::matches_name(&pack.name, &bytes) || !pack.name.ends_with(".pack") {
        return Err(RemoteError::Format {
            url,
            why: format!("pack {} does not hash to its name", pack.name),
        });
    }
    let local = format!("{:013}-{}", seg.created_ms, pack.name);
    let packs = dir.join(PACKS_2_DIR);
    fs::create_dir_all(&packs).map_err(RemoteError::io("create", &packs))?;
    write_new(&packs.join(&local), &bytes)?;
    Ok(local)
}

/// Writes `bytes` at `path` durably, through a temporary file and a rename.
pub(super) fn write_new(path: &Path, bytes: &[u8]) -> Result<(), RemoteError> {
    use std::io::Write;
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    {
        let mut f = fs::File::create(&tmp).map_err(RemoteError::io("create", &tmp))?;
        f.write_all(bytes).map_err(RemoteError::io("write", &tmp))?;
        f.sync_all().map_err(RemoteError::io("sync", &tmp))?;
    }
    fs::rename(&tmp, path).map_err(RemoteError::io("rename", path))
}

/// What `probe store verify` adds for a remote store: every pack a segment names is there
/// with its length (problems), and packs no segment names (notes: what a push killed
/// before its segment left; the next push of the same bytes names them).
pub fn check_remote(
    remote: &Remote,
    dir: &Path,
) -> Result<(Vec<String>, Vec<String>), RemoteError> {
    let held = Held::take(dir, &remote.url)?;
    let mut report = PullReport::default();
    let segments = read_segments(remote, &held, &mut report)?;
    let listed: BTreeMap<String, u64> = remote
        .list(PACKS)?
        .into_iter()
        .map(|l| (l.name, l.size))
        .collect();
    let mut problems = Vec::new();
    let mut named = BTreeSet::new();
    for (name, seg) in &segments {
        for pack in &seg.packs {
            named.insert(pack.name.clone());
            match listed.get(&pack.name) {
                None => problems.push(format!(
                    "segment {name} names pack {}, which is not there",
                    pack.name
                )),
                Some(size) if *size != pack.len => problems.push(format!(
                    "pack {} is {size} bytes, segment {name} says {}",
                    pack.name, pack.len
                )),
                Some(_) => {}
            }
        }
    }
    let notes = listed
        .keys()
        .filter(|p| !named.contains(*p))
        .map(|p| format!("pack {p} is named by no segment (a push that stopped before its segment); the next push of the same bytes names it"))
        .collect();
    Ok((problems, notes))
}

/// Bytes of store `dir`'s own packs not uploaded to `url` yet, as its state says (no
/// request sent): what a failed upload leaves for `probe store push`.
pub fn pending_bytes(dir: &Path, url: &super::url::RemoteUrl) -> Result<u64, RemoteError> {
    let held = Held::take(dir, url)?;
    let packs = dir.join(PACKS_2_DIR);
    let mut pending = 0;
    for name in local_packs(&packs)? {
        if held.state.pulled.contains(&name) {
            continue;
        }
        let len = fs::metadata(packs.join(&name))
            .map(|m| m.len())
            .unwrap_or(0);
        let from = held
            .state
            .uploaded
            .get(&name)
            .copied()
            .unwrap_or(PACK_HEADER_LEN as u64);
        pending += len.saturating_sub(from);
    }
    Ok(pending)
}

/// The whole blocks of pack file `path` and the dictionary keys they name (a rewritten
/// pack gc uploads).
pub(super) fn blocks_of(path: &Path) -> Result<(u64, BTreeSet<u32>), RemoteError> {
    let mut file = fs::File::open(path).map_err(RemoteError::io("open", path))?;
    let len = file
        .metadata()
        .map_err(RemoteError::io("stat", path))?
        .len();
    file.seek(SeekFrom::Start(PACK_HEADER_LEN as u64))
        .map_err(RemoteError::io("seek", path))?;
    let mut at = PACK_HEADER_LEN as u64;
    let mut blocks = 0;
    let mut used = BTreeSet::new();
    while let Some((header, _)) = next_block(&mut file, at, len, path)? {
        at += header.block_len();
        blocks += 1;
        if let Some(d) = header.dict {
            used.insert(d.get());
        }
    }
    Ok((blocks, used))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remote::segment::SegmentRun;

    fn seg(run: Option<&str>, needs: &[&str], replaces: &[&str]) -> Segment {
        Segment {
            format: 1,
            runs: run
                .map(|id| {
                    vec![SegmentRun {
                        id: id.to_owned(),
                        start: true,
                        ..SegmentRun::default()
                    }]
                })
                .unwrap_or_default(),
            needs: needs.iter().map(|s| s.to_string()).collect(),
            replaces: replaces.iter().map(|s| s.to_string()).collect(),
            ..Segment::default()
        }
    }

    /// A run's segment needs one that gc deleted twice over (`a` replaced by `b`, `b` by
    /// `c`): a pull of the run takes `c` through `replaces`, and nothing it does not need.
    #[test]
    fn a_pull_of_one_run_follows_what_gc_replaced() {
        let run = "ab".repeat(32);
        let segments: BTreeMap<String, Segment> = [
            ("1-c.json", seg(None, &[], &["1-b.json", "1-a.json"])),
            ("2-other.json", seg(Some(&"cd".repeat(32)), &[], &[])),
            ("3-run.json", seg(Some(&run), &["1-a.json"], &[])),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        let chosen = choose(&segments, &Select::Run(run[..8].to_owned()));
        let chosen: Vec<&str> = chosen.iter().map(String::as_str).collect();
        assert_eq!(chosen, ["1-c.json", "3-run.json"]);
        // A need neither listed nor replaced (a listing that lags) is passed over, as before.
        let mut lone = segments.clone();
        lone.remove("1-c.json");
        let chosen = choose(&lone, &Select::Run(run[..8].to_owned()));
        assert_eq!(chosen.len(), 1);
    }
}
