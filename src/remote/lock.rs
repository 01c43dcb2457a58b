//! Lock objects of a remote store (`store-format/FORMAT.md` section 11.5): how writers and
//! `probe store gc` stay apart without a server, after restic's design.
//!
//! A lock is an object `locks/<hash>.lock` (the BLAKE3 of its bytes), a small JSON record of
//! who holds it (host, process, command), whether it is exclusive, and when it was last
//! renewed. It is created with "create if absent" like every object and never changed: a
//! holder renews it every [`REFRESH`] by creating a new lock with a new time and deleting
//! the old one. A lock not renewed for [`EXPIRY`] is *stale*: its holder is taken to be
//! gone; it blocks nothing, and gc deletes it.
//!
//! A writer (a run's uploader, `store push`, the push after `recheck`/`replay`) holds a
//! shared lock while it uploads; gc holds an exclusive one. Taking a lock is "look, write,
//! look again": refused while a conflicting fresh lock exists, then our lock is created,
//! then the locks are listed once more and, should a conflicting one have appeared in
//! between, ours is deleted and the taking refused. Of two processes racing, at least one
//! sees the other's lock on its second look (listing after a create is consistent on S3 and
//! the services probe supports), so a gc and a writer never both go on.
//!
//! Depends on: `remote` (the client, errors, the URL), `clock`.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::bucket::Remote;
use super::error::RemoteError;
use super::url::RemoteUrl;

/// Where lock objects are, under the prefix.
pub const LOCKS: &str = "locks";
/// How often a holder renews its lock.
pub const REFRESH: Duration = Duration::from_secs(5 * 60);
/// After how long without renewal a lock is stale.
pub const EXPIRY: Duration = Duration::from_secs(30 * 60);
/// How often a writer that finds gc holding the store looks again.
const WAIT_STEP: Duration = Duration::from_secs(1);

/// What a lock object says.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockInfo {
    /// The lock format, 1; a reader takes a greater one as a lock of unknown kind, which
    /// blocks everything until it is stale.
    pub format: u32,
    /// gc's lock (alone); writers' locks are shared.
    pub exclusive: bool,
    /// Host and process id of the holder, and the command it runs (for people).
    pub host: String,
    pub pid: u32,
    pub command: String,
    /// When the lock was written, which is when it was last renewed (ms since the epoch).
    pub time_ms: u64,
}

impl LockInfo {
    /// A lock of this process, written now.
    pub fn mine(exclusive: bool, command: &str) -> LockInfo {
        LockInfo {
            format: 1,
            exclusive,
            host: host_name(),
            pid: std::process::id(),
            command: command.to_owned(),
            time_ms: crate::clock::now_ms(),
        }
    }

    /// The bytes of the lock object.
    pub fn to_bytes(&self) -> Vec<u8> {
        // Plain data: serialising it cannot fail.
        serde_json::to_vec_pretty(self).unwrap_or_default()
    }

    /// Whether the lock has not been renewed for [`EXPIRY`] at `now_ms`.
    pub fn is_stale(&self, now_ms: u64) -> bool {
        self.time_ms.saturating_add(EXPIRY.as_millis() as u64) < now_ms
    }

    /// Whether a lock like this one keeps a lock of kind `exclusive` from being taken.
    fn conflicts_with(&self, exclusive: bool) -> bool {
        exclusive || self.exclusive || self.format > 1
    }

    /// "process 4242 on ci-7 (probe run, exclusive, renewed 2026-12-07T20:01:02Z)".
    pub fn describe(&self) -> String {
        format!(
            "process {} on {} (probe {}, {}, renewed {})",
            self.pid,
            self.host,
            self.command,
            if self.exclusive {
                "exclusive"
            } else {
                "shared"
            },
            rfc3339(self.time_ms)
        )
    }
}

/// The name of the lock object holding `bytes`: `<64 hex digits of their BLAKE3>.lock`.
pub fn lock_name(bytes: &[u8]) -> String {
    format!("{}.lock", blake3::hash(bytes).to_hex())
}

/// Every lock of the remote store, by name. A lock object that is not a lock (bytes that
/// do not parse, or that do not hash to their name) is kept as a lock of unknown kind
/// written at the epoch: stale, so it blocks nothing and gc deletes it.
pub fn list_locks(remote: &Remote) -> Result<Vec<(String, LockInfo)>, RemoteError> {
    let mut out = Vec::new();
    for listed in remote.list(LOCKS)? {
        let Some(bytes) = remote.get(&format!("{LOCKS}/{}", listed.name))? else {
            continue; // Deleted since the listing: released or renewed.
        };
        let parsed = serde_json::from_slice::<LockInfo>(&bytes)
            .ok()
            .filter(|_| lock_name(&bytes) == listed.name);
        let info = parsed.unwrap_or(LockInfo {
            format: 0,
            exclusive: false,
            host: "?".into(),
            pid: 0,
            command: "?".into(),
            time_ms: 0,
        });
        out.push((listed.name, info));
    }
    Ok(out)
}

/// A lock held in a remote store, renewed by a thread of its own until released.
pub struct RemoteLock {
    stop: mpsc::Sender<()>,
    thread: Option<JoinHandle<()>>,
    /// The name of the lock when it was taken (renewals replace it).
    pub first_name: String,
}

impl RemoteLock {
    /// Takes a lock in `url` (shared, or `exclusive` for gc) for `command`, or refuses with
    /// [`RemoteError::Busy`] naming the holder of a conflicting fresh lock.
    pub fn take(
        url: &RemoteUrl,
        exclusive: bool,
        command: &str,
    ) -> Result<RemoteLock, RemoteError> {
        let remote = Remote::connect(url)?;
        let busy = |info: &LockInfo| RemoteError::Busy {
            url: url.to_string(),
            holder: info.describe(),
            exclusive,
        };
        let conflict =
            |remote: &Remote, mine: Option<&str>| -> Result<Option<LockInfo>, RemoteError> {
                let now = crate::clock::now_ms();
                Ok(list_locks(remote)?
                    .into_iter()
                    .filter(|(name, info)| {
                        Some(name.as_str()) != mine
                            && !info.is_stale(now)
                            && info.conflicts_with(exclusive)
                    })
                    .map(|(_, info)| info)
                    .next())
            };
        if let Some(other) = conflict(&remote, None)? {
            return Err(busy(&other));
        }
        let info = LockInfo::mine(exclusive, command);
        let bytes = info.to_bytes();
        let name = lock_name(&bytes);
        remote.create(&format!("{LOCKS}/{name}"), bytes)?;
        // The second look: a lock written between our first look and our create.
        if let Some(other) = conflict(&remote, Some(&name))? {
            remote.delete(&format!("{LOCKS}/{name}"))?;
            return Err(busy(&other));
        }
        let (stop, stopped) = mpsc::channel::<()>();
        let first_name = name.clone();
        let thread = std::thread::Builder::new()
            .name("probe-remote-lock".into())
            .spawn(move || renew(remote, name, info, stopped))
            .map_err(|e| RemoteError::Config {
                url: url.to_string(),
                why: format!("cannot start the lock thread: {e}"),
            })?;
        Ok(RemoteLock {
            stop,
            thread: Some(thread),
            first_name,
        })
    }

    /// [`RemoteLock::take`] of a shared lock, waiting up to `wait` while gc holds the
    /// store (looking again every second).
    pub fn take_shared_waiting(
        url: &RemoteUrl,
        command: &str,
        wait: Duration,
    ) -> Result<RemoteLock, RemoteError> {
        let deadline = Instant::now() + wait;
        loop {
            match RemoteLock::take(url, false, command) {
                Err(RemoteError::Busy { .. }) if Instant::now() < deadline => {
                    std::thread::sleep(WAIT_STEP)
                }
                other => return other,
            }
        }
    }

    /// Deletes the lock (the last renewal of it) and stops renewing it.
    pub fn release(mut self) {
        self.stop_thread();
    }

    fn stop_thread(&mut self) {
        let _ = self.stop.send(());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for RemoteLock {
    fn drop(&mut self) {
        self.stop_thread();
    }
}

/// The renewing thread: a new lock every [`REFRESH`] (the old one deleted after the new
/// one exists, so the holder is never without a lock), the last one deleted when told to
/// stop. A renewal that fails is tried again at the next one; the lock goes stale only
/// after [`EXPIRY`] of failures.
fn renew(remote: Remote, mut name: String, mut info: LockInfo, stopped: mpsc::Receiver<()>) {
    while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(REFRESH) {
        let mut next = info.clone();
        next.time_ms = crate::clock::now_ms();
        let bytes = next.to_bytes();
        let next_name = lock_name(&bytes);
        if remote
            .create(&format!("{LOCKS}/{next_name}"), bytes)
            .is_ok()
        {
            let _ = remote.delete(&format!("{LOCKS}/{name}"));
            name = next_name;
            info = next;
        }
    }
    let _ = remote.delete(&format!("{LOCKS}/{name}"));
}

/// The host name, as a segment's `writer` and a lock say it.
pub fn host_name() -> String {
    std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".to_owned())
}

/// `ms` since the epoch as RFC 3339 UTC, to the second.
fn rfc3339(ms: u64) -> String {
    let secs = (ms / 1000) as i64;
    chrono_like(secs)
}

/// A civil UTC date and time of Unix seconds (the days-from-civil inverse, Howard
/// Hinnant's algorithm), so that a lock's time reads without a date crate.
fn chrono_like(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `store-format/vectors/remote-lock.json` (`PROBE_REGENERATE=1`).
    fn regenerate(path: &str) {
        let info = LockInfo {
            format: 1,
            exclusive: true,
            host: "ci-runner-7".to_owned(),
            pid: 4242,
            command: "store gc".to_owned(),
            time_ms: 1_765_000_000_000,
        };
        let text = String::from_utf8(info.to_bytes()).unwrap();
        let vector = serde_json::json!({
            "lock_text": text,
            "lock_name": lock_name(text.as_bytes()),
            "stale_after_ms": EXPIRY.as_millis() as u64,
        });
        let mut out = serde_json::to_string_pretty(&vector).unwrap();
        out.push('\n');
        std::fs::write(path, out).unwrap();
    }

    #[test]
    fn the_lock_vector_matches_its_name_and_the_parser() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/store-format/vectors/remote-lock.json"
        );
        if std::env::var_os("PROBE_REGENERATE").is_some() {
            regenerate(path);
        }
        let vector: serde_json::Value =
            serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        let text = vector["lock_text"].as_str().unwrap();
        assert_eq!(
            lock_name(text.as_bytes()),
            vector["lock_name"].as_str().unwrap()
        );
        let info: LockInfo = serde_json::from_str(text).unwrap();
        assert!(info.exclusive);
        assert_eq!(info.pid, 4242);
        assert_eq!(
            info.to_bytes(),
            text.as_bytes(),
            "a writer writes these bytes"
        );
        let expiry = vector["stale_after_ms"].as_u64().unwrap();
        assert!(!info.is_stale(info.time_ms + expiry));
        assert!(info.is_stale(info.time_ms + expiry + 1));
    }

    #[test]
    fn a_shared_lock_blocks_gc_and_an_exclusive_one_blocks_everyone() {
        let shared = LockInfo::mine(false, "run");
        let exclusive = LockInfo::mine(true, "store gc");
        assert!(!shared.conflicts_with(false), "writers share the store");
        assert!(shared.conflicts_with(true), "a writer keeps gc out");
        assert!(exclusive.conflicts_with(false), "gc keeps writers out");
        assert!(exclusive.conflicts_with(true));
        let unknown = LockInfo {
            format: 2,
            ..shared
        };
        assert!(unknown.conflicts_with(false), "a newer kind of lock blocks");
    }

    #[test]
    fn a_lock_describes_its_holder_and_time() {
        let info = LockInfo {
            format: 1,
            exclusive: false,
            host: "ci-7".into(),
            pid: 7,
            command: "run".into(),
            time_ms: 1_765_000_000_000,
        };
        assert_eq!(
            info.describe(),
            "process 7 on ci-7 (probe run, shared, renewed 2025-12-06T05:46:40Z)"
        );
    }
}
