//! `probe store gc` of a remote store (`store-format/FORMAT.md` section 11.6): what local gc
//! would drop, dropped from the bucket, beside any number of writers, with no server.
//!
//! 1. **Lock**: gc takes the store alone ([`RemoteLock::take`], exclusive): refused while
//!    a writer holds a fresh shared lock, and a writer that starts meanwhile waits.
//! 2. **Look**: it lists `packs/` and `segments/`, and pulls every segment and every pack
//!    they name into a *scratch* local store (fresh, so that each of its packs is one
//!    remote pack, `<segment ms>-<hash>.pack`: packs sort as every reader's cache sorts
//!    them, and "first copy wins" picks the same copy).
//! 3. **Decide** with local gc itself ([`crate::store::ExclusiveStore::gc`]) on the
//!    scratch store: "kept" is what it is for a local store (every run and all it reaches).
//!    A remote pack whose local copy gc left as it was is kept; one gc rewrote is replaced
//!    by the rewritten pack (uploaded, named by its hash); one gc removed is dropped.
//! 4. **Write**: each segment that names a pack that changes is replaced by a segment of
//!    the same time (so packs keep their order) naming the kept and rewritten packs, the
//!    old one in `replaces`, and, in `needs`, every segment before it (a second copy it
//!    lost has its first copy in an earlier pack). The new packs and segments are written
//!    before anything is deleted.
//! 5. **Delete**: the replaced segments, then the packs no segment names any more, and the
//!    packs no segment ever named (a push killed before its segment), but only objects
//!    written more than the *grace* period ago: gc never deletes what a writer that started
//!    recently (or whose lock went stale while it lives) may name. Stale locks go too.
//!
//! Depends on: `remote` (the client, locks, segments, push and pull helpers), `store`
//! (the scratch store and local gc), `clock`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use crate::store::v2::PACKS_2_DIR;
use crate::store::{Maintenance, Store};

use super::bucket::{Listed, Remote};
use super::error::RemoteError;
use super::lock::{list_locks, RemoteLock, LOCKS};
use super::segment::{self, Segment, SegmentPack, DICTS, PACKS, SEGMENTS};
use super::state::Held;
use super::sync::{self, Select};
use super::url::RemoteUrl;

/// The default grace period: objects younger than this are never deleted. As long as a
/// lock's expiry: a writer that wrote them holds a fresh lock, or held one until recently.
pub const GRACE: Duration = super::lock::EXPIRY;

/// What a remote gc did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RemoteGcReport {
    /// Segments read, and those replaced by a segment naming fewer or rewritten packs.
    pub segments: usize,
    pub segments_replaced: usize,
    /// Packs named by segments: kept as they are, and deleted (dropped or rewritten).
    pub packs_kept: usize,
    pub packs_deleted: usize,
    /// Rewritten packs uploaded, and their bytes.
    pub packs_written: usize,
    pub bytes_written: u64,
    /// Packs no segment named (a push killed before its segment), deleted.
    pub unnamed_packs_deleted: usize,
    /// Bytes of all packs deleted.
    pub bytes_deleted: u64,
    /// Packs and segments gc would have deleted but left, being younger than the grace.
    pub young_left: usize,
    /// Stale locks deleted.
    pub stale_locks_deleted: usize,
    /// What local gc dropped in the scratch store (objects no run reaches, second copies).
    pub objects_removed: u64,
    pub duplicates_dropped: u64,
    /// Requests sent to the object store.
    pub requests: u64,
}

/// What becomes of one remote pack.
enum Fate {
    Kept,
    /// Rewritten by local gc into these scratch packs (maybe none: everything dropped).
    Rewritten(Vec<String>),
}

/// `probe store gc` of `url`, deciding in scratch store `scratch` (created, and removed
/// at the end), deleting only what is older than `grace`.
pub fn gc(url: &RemoteUrl, scratch: &Path, grace: Duration) -> Result<RemoteGcReport, RemoteError> {
    let lock = RemoteLock::take(url, true, "store gc")?;
    let remote = Remote::connect(url)?;
    let _ = fs::remove_dir_all(scratch);
    let result = collect(&remote, scratch, grace, &lock.first_name);
    lock.release();
    let _ = fs::remove_dir_all(scratch);
    result.map(|mut r| {
        r.requests = remote.requests();
        r
    })
}

fn collect(
    remote: &Remote,
    scratch: &Path,
    grace: Duration,
    own_lock: &str,
) -> Result<RemoteGcReport, RemoteError> {
    let now = crate::clock::now_ms();
    let cutoff = now.saturating_sub(grace.as_millis() as u64);
    let old = |l: Option<&Listed>| l.is_some_and(|l| l.modified_ms <= cutoff);
    let packs_listed = by_name(remote.list(PACKS)?);
    let segs_listed = by_name(remote.list(SEGMENTS)?);
    sync::pull(scratch, remote, &Select::All)?;
    let segments = {
        let held = Held::take(scratch, &remote.url)?;
        sync::read_segments(remote, &held, &mut sync::PullReport::default())?
    };
    let local = Store::open_for_maintenance(scratch, Maintenance::Gc)?.gc()?;
    let mut report = RemoteGcReport {
        segments: segments.len(),
        objects_removed: local.objects_removed,
        duplicates_dropped: local.duplicates_dropped,
        ..RemoteGcReport::default()
    };
    let fates = fates(scratch, &segments)?;
    let remote_dicts: BTreeSet<String> = remote.list(DICTS)?.into_iter().map(|l| l.name).collect();
    let mut uploaded_dicts = BTreeSet::new();
    // Segments as they stand after gc, in order: an earlier one's name for `needs`.
    let mut after: Vec<String> = Vec::new();
    let mut replaced: Vec<String> = Vec::new();
    // Packs some segment that stays names.
    let mut named_after: BTreeSet<String> = BTreeSet::new();
    for (name, seg) in &segments {
        let changes = seg
            .packs
            .iter()
            .any(|p| !matches!(fates.get(&p.name), Some(Fate::Kept) | None));
        let young = !old(segs_listed.get(name))
            || seg.packs.iter().any(|p| !old(packs_listed.get(&p.name)));
        if !changes || young {
            report.young_left += usize::from(changes);
            named_after.extend(seg.packs.iter().map(|p| p.name.clone()));
            after.push(name.clone());
            continue;
        }
        let mut next = Segment {
            format: 1,
            created_ms: seg.created_ms,
            writer: format!("{} (store gc by {})", seg.writer, sync::writer_name()),
            packs: Vec::new(),
            dicts: seg.dicts.clone(),
            runs: seg.runs.clone(),
            needs: seg.needs.clone(),
            reports: seg.reports.clone(),
            replaces: std::iter::once(name.clone())
                .chain(seg.replaces.iter().cloned())
                .collect(),
        };
        for pack in &seg.packs {
            match fates.get(&pack.name) {
                Some(Fate::Kept) | None => next.packs.push(pack.clone()),
                Some(Fate::Rewritten(files)) => {
                    for file in files {
                        let (sent, dicts) = upload_pack(remote, scratch, file, &mut report)?;
                        next.packs.push(sent);
                        for dict in dicts {
                            if !remote_dicts.contains(&dict) && uploaded_dicts.insert(dict.clone())
                            {
                                let path = scratch.join(crate::store::dict::DICTS_DIR).join(&dict);
                                let bytes =
                                    fs::read(&path).map_err(RemoteError::io("read", &path))?;
                                remote.create(&format!("{DICTS}/{dict}"), bytes)?;
                            }
                            if !next.dicts.contains(&dict) {
                                next.dicts.push(dict);
                            }
                        }
                    }
                }
            }
        }
        for earlier in &after {
            if !next.needs.contains(earlier) {
                next.needs.push(earlier.clone());
            }
        }
        let bytes = next.to_bytes();
        let next_name = segment::segment_name(next.created_ms, &bytes);
        remote.create(&format!("{SEGMENTS}/{next_name}"), bytes)?;
        named_after.extend(next.packs.iter().map(|p| p.name.clone()));
        after.push(next_name);
        replaced.push(name.clone());
        report.segments_replaced += 1;
    }
    // Every new object is written: now the deletes, segments first (a reader that listed
    // a deleted segment and finds its pack gone lists again, and finds the replacement).
    for name in &replaced {
        remote.delete(&format!("{SEGMENTS}/{name}"))?;
    }
    let named_before: BTreeSet<&String> = segments
        .values()
        .flat_map(|s| s.packs.iter().map(|p| &p.name))
        .collect();
    for (name, listed) in &packs_listed {
        if named_after.contains(name) {
            report.packs_kept += usize::from(named_before.contains(name));
            continue;
        }
        if !old(Some(listed)) {
            report.young_left += 1;
            continue;
        }
        remote.delete(&format!("{PACKS}/{name}"))?;
        report.bytes_deleted += listed.size;
        if named_before.contains(name) {
            report.packs_deleted += 1;
        } else {
            report.unnamed_packs_deleted += 1;
        }
    }
    for (name, info) in list_locks(remote)? {
        if name != own_lock && info.is_stale(now) {
            remote.delete(&format!("{LOCKS}/{name}"))?;
            report.stale_locks_deleted += 1;
        }
    }
    Ok(report)
}

fn by_name(listed: Vec<Listed>) -> BTreeMap<String, Listed> {
    listed.into_iter().map(|l| (l.name.clone(), l)).collect()
}

/// What local gc made of each remote pack the segments name, from the scratch store's
/// pack names: `<ms>-<hash>.pack` is the remote pack `<hash>.pack` as pulled (kept);
/// `<ms>-<hash>.<n>.pack` is what gc rewrote it into; no file, dropped whole.
fn fates(
    scratch: &Path,
    segments: &BTreeMap<String, Segment>,
) -> Result<HashMap<String, Fate>, RemoteError> {
    let mut kept = BTreeSet::new();
    let mut rewritten: HashMap<String, Vec<String>> = HashMap::new();
    for file in sync::files_ending(&scratch.join(PACKS_2_DIR), ".pack")? {
        let Some((_, rest)) = file.split_once('-') else {
            continue;
        };
        let stem = rest.trim_end_matches(".pack");
        match stem.split_once('.') {
            None => {
                kept.insert(format!("{stem}.pack"));
            }
            Some((hash, _)) => rewritten
                .entry(format!("{hash}.pack"))
                .or_default()
                .push(file.clone()),
        }
    }
    let mut out = HashMap::new();
    for pack in segments.values().flat_map(|s| &s.packs) {
        let fate = if kept.contains(&pack.name) {
            Fate::Kept
        } else {
            Fate::Rewritten(rewritten.remove(&pack.name).unwrap_or_default())
        };
        out.entry(pack.name.clone()).or_insert(fate);
    }
    Ok(out)
}

/// Uploads scratch pack `file` (a rewritten pack: a pack2-header and whole blocks) as a
/// remote pack; gives its entry for a segment and the dictionaries its blocks name.
fn upload_pack(
    remote: &Remote,
    scratch: &Path,
    file: &str,
    report: &mut RemoteGcReport,
) -> Result<(SegmentPack, Vec<String>), RemoteError> {
    let path = scratch.join(PACKS_2_DIR).join(file);
    let bytes = fs::read(&path).map_err(RemoteError::io("read", &path))?;
    let (blocks, used) = sync::blocks_of(&path)?;
    let name = segment::pack_name(&bytes);
    let len = bytes.len() as u64;
    if remote.create(&format!("{PACKS}/{name}"), bytes)? {
        report.packs_written += 1;
        report.bytes_written += len;
    }
    let dicts = sync::dict_names(scratch, &used)?;
    Ok((SegmentPack { name, len, blocks }, dicts))
}
