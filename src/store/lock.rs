//! Who may use a store at once: the store lock and the registry of the processes using it.
//!
//! Every process that opens a store holds a *shared* advisory lock on `<store>/lock` for as
//! long as it has the store open (the lock lives in the store's `Inner`, so a
//! recorder thread keeps it too). Maintenance that rewrites what others read (gc, reindex)
//! takes the lock *exclusively*, without waiting: when another process holds it, the
//! maintenance is refused, and an opener that finds maintenance holding it is refused at
//! once, never made to wait. Advisory locks belong to open file descriptions and die with
//! their process, so a killed process never leaves the store locked.
//!
//! A lock does not say who holds it, so each opener also registers itself as
//! `<store>/writers/<pid>`: a small JSON file (pid, command line, the run it records once
//! known, start time, the maintenance it does) that it holds a shared lock on while it lives
//! and removes when its last store handle closes. An entry whose lock nobody holds belongs to
//! a dead process (where locks are not supported: whose `/proc/<pid>` is gone on Linux, and
//! never elsewhere); refusals list the live entries, and the next exclusive holder removes
//! the dead ones. The registry only names holders: the lock alone decides who may go on.
//!
//! A lock file that cannot be created (a read-only medium, no write permission) leaves a
//! read-only open (`Store::open_existing`) without a lock; every other open needs it.
//!
//! With `flock` (what std uses on Unix) two opens of the lock file in one process conflict
//! as two processes do, so in-process tests exercise the protocol; `tests/store.rs` also
//! tests it across processes. The flip side: a child being spawned (by any thread) holds
//! copies of its parent's descriptors, and so its locks, until it executes its program, so
//! a lock can outlive its handle by a moment. A refusal that finds no registered process to
//! name is therefore tried again for up to half a second (`GRACE`); one that finds a
//! registered holder is made at once.
//!
//! Depends on: `store::StoreError` only (std, serde, humantime).

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use super::error::StoreError;
pub use super::holders::{Holder, Maintenance};

/// The lock file, in the store directory.
pub const LOCK_FILE: &str = "lock";
/// The registry directory, in the store directory: one file per process using the store.
pub const WRITERS_DIR: &str = "writers";

/// How a store is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    /// [`super::Store::open_existing`]: shared; without a lock when none can be created.
    Read,
    /// [`super::Store::open`]: shared, and the lock is required.
    Write,
    /// [`super::Store::open_for_maintenance`]: exclusive, taken without waiting.
    Alone(Maintenance),
}

/// The lock a store handle holds, and its registration; both go when it is dropped.
pub(crate) struct StoreLock {
    // Field order is drop order: the registry entry goes before the lock is released.
    registration: Option<Registration>,
    /// Held for its lock, which closing it releases.
    #[cfg_attr(not(test), allow(dead_code))]
    file: Option<File>,
}

impl StoreLock {
    /// Takes the lock of the store at `dir` for `access`. A note says what the caller
    /// should know (opened without a lock).
    pub(crate) fn acquire(
        dir: &Path,
        access: Access,
    ) -> Result<(StoreLock, Option<String>), StoreError> {
        let path = dir.join(LOCK_FILE);
        let file = match OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
        {
            Ok(f) => f,
            // A lock can be taken through a read-only handle: a store on a read-only medium
            // that has a lock file is locked as any other.
            Err(e) if cannot_write(&e) => match File::open(&path) {
                Ok(f) => f,
                Err(_) if access == Access::Read => {
                    return Ok((
                        StoreLock {
                            registration: None,
                            file: None,
                        },
                        Some(format!(
                            "opened without the store lock: cannot create {} ({e}); a gc or reindex elsewhere would not know this process reads the store",
                            path.display()
                        )),
                    ))
                }
                Err(_) => return Err(lock_io("create", &path, e)),
            },
            Err(e) => return Err(lock_io("open", &path, e)),
        };
        match access {
            Access::Read | Access::Write => {
                // Registered first, so that a gc refused by this lock finds who holds it.
                let registration = Some(register(dir, None));
                match try_lock_shared(&file, dir) {
                    Ok(()) => Ok((
                        StoreLock {
                            registration,
                            file: Some(file),
                        },
                        None,
                    )),
                    Err(TryLockError::WouldBlock) => {
                        drop(registration);
                        Err(StoreError::Maintained {
                            holders: maintainers(dir),
                        })
                    }
                    Err(TryLockError::Error(e)) if e.kind() == io::ErrorKind::Unsupported => {
                        Ok((
                            StoreLock {
                                registration,
                                file: None,
                            },
                            Some(format!(
                                "opened without the store lock: this file system does not support locking {} ({e})",
                                path.display()
                            )),
                        ))
                    }
                    Err(TryLockError::Error(e)) => Err(lock_io("lock", &path, e)),
                }
            }
            Access::Alone(operation) => match try_lock_alone(&file, dir) {
                Ok(()) => {
                    remove_dead_entries(dir);
                    Ok((
                        StoreLock {
                            registration: Some(register(dir, Some(operation))),
                            file: Some(file),
                        },
                        None,
                    ))
                }
                Err(TryLockError::WouldBlock) => Err(StoreError::InUse {
                    operation,
                    holders: holders(dir),
                }),
                Err(TryLockError::Error(e)) => Err(lock_io("lock", &path, e)),
            },
        }
    }

    /// Says in the registry which run this process records (once it wrote its start).
    pub(crate) fn set_run(&self, run: &str) {
        if let Some(r) = &self.registration {
            r.set_run(run);
        }
    }

    /// Whether this handle holds the lock (a read-only open may not).
    #[cfg(test)]
    pub(crate) fn is_held(&self) -> bool {
        self.file.is_some()
    }
}

/// How long a lock nobody is registered as holding may stay busy before an open is refused.
///
/// A lock belongs to an open file description, and a process spawning a child (another
/// thread of the same process, say) gives the child copies of its descriptors, which live
/// until the child executes its program: for that moment a lock the parent released is
/// still held. A refusal that finds no registered holder is therefore tried again for a
/// little while; with one, it is made at once.
const GRACE: Duration = Duration::from_millis(500);
const GRACE_STEP: Duration = Duration::from_millis(5);

/// [`File::try_lock_shared`], tried again for [`GRACE`] while no live process is registered
/// as doing maintenance.
fn try_lock_shared(file: &File, dir: &Path) -> Result<(), TryLockError> {
    let busy_since = Instant::now();
    loop {
        match file.try_lock_shared() {
            Err(TryLockError::WouldBlock)
                if busy_since.elapsed() < GRACE && maintainers(dir).is_empty() =>
            {
                std::thread::sleep(GRACE_STEP);
            }
            other => return other,
        }
    }
}

/// [`File::try_lock`], tried again for [`GRACE`] while no live process is registered.
fn try_lock_alone(file: &File, dir: &Path) -> Result<(), TryLockError> {
    let busy_since = Instant::now();
    loop {
        match file.try_lock() {
            Err(TryLockError::WouldBlock)
                if busy_since.elapsed() < GRACE && holders(dir).is_empty() =>
            {
                std::thread::sleep(GRACE_STEP);
            }
            other => return other,
        }
    }
}

fn cannot_write(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem
    )
}

fn lock_io(action: &'static str, path: &Path, source: io::Error) -> StoreError {
    StoreError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}

// ---------------------------------------------------------------------------------------
// The registry.

/// This process's registration in one store: how many handles have it open, what the
/// entry says, and the entry file (locked shared while this process lives).
struct Entry {
    /// The store directory, canonical.
    store: PathBuf,
    opens: usize,
    maintenance: Option<Maintenance>,
    holder: Holder,
    /// `None` while the entry could not be written (the registry is best effort).
    file: Option<File>,
}

/// Every store this process has open. One entry per store and process (`writers/<pid>`),
/// however many handles the process opened.
static ENTRIES: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

fn entries() -> MutexGuard<'static, Vec<Entry>> {
    // A panic while holding it leaves plain data: go on with it.
    ENTRIES.lock().unwrap_or_else(|p| p.into_inner())
}

/// One handle's share of its process's [`Entry`]; dropping the last removes the file.
struct Registration {
    store: PathBuf,
    maintenance: bool,
}

fn canonical(dir: &Path) -> PathBuf {
    fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf())
}

/// Registers this process as using the store at `dir`. Best effort: where the registry
/// cannot be written the registration is kept in this process only.
fn register(dir: &Path, maintenance: Option<Maintenance>) -> Registration {
    let store = canonical(dir);
    let mut all = entries();
    let at = match all.iter().position(|e| e.store == store) {
        Some(at) => at,
        None => {
            all.push(Entry {
                store: store.clone(),
                opens: 0,
                maintenance: None,
                holder: Holder {
                    pid: std::process::id(),
                    command: command_line(),
                    run: None,
                    maintenance: None,
                    started: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
                },
                file: None,
            });
            all.len() - 1
        }
    };
    let entry = &mut all[at];
    entry.opens += 1;
    if maintenance.is_some() {
        entry.maintenance = maintenance;
    }
    write_entry(entry);
    Registration {
        store,
        maintenance: maintenance.is_some(),
    }
}

impl Registration {
    fn set_run(&self, run: &str) {
        let mut all = entries();
        if let Some(entry) = all.iter_mut().find(|e| e.store == self.store) {
            if entry.holder.run.as_deref() != Some(run) {
                entry.holder.run = Some(run.to_owned());
                write_entry(entry);
            }
        }
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut all = entries();
        let Some(at) = all.iter().position(|e| e.store == self.store) else {
            return;
        };
        let entry = &mut all[at];
        entry.opens = entry.opens.saturating_sub(1);
        if self.maintenance {
            entry.maintenance = None;
        }
        if entry.opens > 0 {
            write_entry(entry);
            return;
        }
        let entry = all.remove(at);
        if entry.file.is_some() {
            let _ = fs::remove_file(entry_path(&entry.store, entry.holder.pid));
        }
        // The entry file (and its lock) closes here, after the file is gone.
    }
}

fn entry_path(store: &Path, pid: u32) -> PathBuf {
    store.join(WRITERS_DIR).join(pid.to_string())
}

/// (Re)writes `writers/<pid>`: a new file, locked before it is written and renamed into
/// place, so that a visible entry is always whole and always locked while its process
/// lives. The previous file (and its lock) goes once the new one is in place.
fn write_entry(entry: &mut Entry) {
    entry.holder.maintenance = entry.maintenance.map(|m| m.name().to_owned());
    let dir = entry.store.join(WRITERS_DIR);
    let pid = entry.holder.pid;
    let written = (|| -> io::Result<File> {
        fs::create_dir_all(&dir)?;
        let tmp = dir.join(format!("{pid}.tmp"));
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)?;
        // Where locks are not supported, liveness falls back to the process id.
        let _ = f.lock_shared();
        let text = serde_json::to_string(&entry.holder).map_err(io::Error::other)?;
        f.write_all(text.as_bytes())?;
        f.write_all(b"\n")?;
        fs::rename(&tmp, dir.join(pid.to_string()))?;
        Ok(f)
    })();
    if let Ok(f) = written {
        entry.file = Some(f);
    }
}

/// `probe --store x run --spec a.yaml ...`: the program's file name and its arguments, at
/// most 160 characters.
fn command_line() -> String {
    let mut args = std::env::args_os();
    let program = args
        .next()
        .map(|p| {
            Path::new(&p)
                .file_name()
                .map_or_else(|| p.to_string_lossy(), |n| n.to_string_lossy())
                .into_owned()
        })
        .unwrap_or_else(|| "probe".into());
    let mut text = program;
    for a in args {
        text.push(' ');
        text.push_str(&a.to_string_lossy());
    }
    const MAX: usize = 160;
    if text.chars().count() > MAX {
        text = text.chars().take(MAX - 1).collect::<String>() + "…";
    }
    text
}

/// Whether the process that wrote the entry at `path` still runs: it holds the entry's
/// lock while it does.
fn alive(path: &Path, pid: u32) -> bool {
    let Ok(f) = File::open(path) else {
        return false;
    };
    match f.try_lock() {
        Ok(()) => false,
        Err(TryLockError::WouldBlock) => true,
        Err(TryLockError::Error(_)) => process_exists(pid),
    }
}

#[cfg(target_os = "linux")]
fn process_exists(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

#[cfg(not(target_os = "linux"))]
fn process_exists(_pid: u32) -> bool {
    true
}

/// Whether process `pid`, which wrote a pack of the store at `dir` (packs are named after
/// their writer), may still be writing it: this process, or one whose registry entry is
/// still locked. A torn tail is cut only when its writer is gone (FORMAT.md §10.2).
pub(crate) fn writer_alive(dir: &Path, pid: u32) -> bool {
    pid == std::process::id() || alive(&dir.join(WRITERS_DIR).join(pid.to_string()), pid)
}

/// The live registered processes of the store at `dir`, by pid.
pub(crate) fn holders(dir: &Path) -> Vec<Holder> {
    let Ok(list) = fs::read_dir(dir.join(WRITERS_DIR)) else {
        return Vec::new();
    };
    let mut out: Vec<Holder> = Vec::new();
    for e in list.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let path = e.path();
        if !alive(&path, pid) {
            continue;
        }
        let holder = fs::read_to_string(&path)
            .ok()
            .and_then(|t| serde_json::from_str::<Holder>(&t).ok())
            .filter(|h| h.pid == pid)
            .unwrap_or_else(|| Holder {
                pid,
                command: "its registry entry is unreadable".into(),
                run: None,
                maintenance: None,
                started: "at an unknown time".into(),
            });
        out.push(holder);
    }
    out.sort_by_key(|h| h.pid);
    out
}

/// The registered processes doing maintenance. (A maintenance process registers right
/// after it takes the lock: an opener that finds none tries the lock again, [`GRACE`].)
fn maintainers(dir: &Path) -> Vec<Holder> {
    holders(dir)
        .into_iter()
        .filter(|h| h.maintenance.is_some())
        .collect()
}

/// Removes the entries (and leftover temporary files) of dead processes. Called by the
/// exclusive holder: every process that registered and took the shared lock is alive and
/// holds its entry's lock, so an entry nobody holds is stale.
fn remove_dead_entries(dir: &Path) {
    let Ok(list) = fs::read_dir(dir.join(WRITERS_DIR)) else {
        return;
    };
    for e in list.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_suffix(".tmp").unwrap_or(n).parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !alive(&e.path(), pid) {
            let _ = fs::remove_file(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::holders::describe_all;

    fn store_dir() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join("FORMAT"), "probe-store 1.0\n").unwrap();
        d
    }

    /// flock locks belong to open file descriptions: two opens of the lock file in one
    /// process conflict as two processes would, which is what makes these tests meaningful.
    #[test]
    fn shared_holders_exclude_maintenance_and_maintenance_excludes_everyone() {
        let d = store_dir();
        let (a, _) = StoreLock::acquire(d.path(), Access::Write).unwrap();
        let (b, _) = StoreLock::acquire(d.path(), Access::Read).unwrap();
        assert!(a.is_held() && b.is_held());
        let err = StoreLock::acquire(d.path(), Access::Alone(Maintenance::Gc))
            .err()
            .unwrap();
        let me = std::process::id();
        match &err {
            StoreError::InUse { operation, holders } => {
                assert_eq!(*operation, Maintenance::Gc);
                assert_eq!(holders.iter().map(|h| h.pid).collect::<Vec<_>>(), [me]);
            }
            other => panic!("{other}"),
        }
        let text = err.to_string();
        assert!(
            text.contains(&format!("in use by process {me} (")) && text.contains("gc needs it"),
            "{text}"
        );
        // One registry entry for the process, however many handles; gone with the last.
        drop(a);
        assert!(d.path().join(WRITERS_DIR).join(me.to_string()).exists());
        drop(b);
        assert!(!d.path().join(WRITERS_DIR).join(me.to_string()).exists());
        let (gc, _) = StoreLock::acquire(d.path(), Access::Alone(Maintenance::Gc)).unwrap();
        let entry = fs::read_to_string(d.path().join(WRITERS_DIR).join(me.to_string())).unwrap();
        assert!(entry.contains("\"maintenance\":\"gc\""), "{entry}");
        // An opener meets the maintenance at once, and is told who does it.
        for access in [
            Access::Read,
            Access::Write,
            Access::Alone(Maintenance::Reindex),
        ] {
            let err = StoreLock::acquire(d.path(), access).err().unwrap();
            let text = err.to_string();
            assert!(text.contains(&format!("process {me} (")), "{text}");
        }
        let text = StoreLock::acquire(d.path(), Access::Read)
            .err()
            .unwrap()
            .to_string();
        assert!(text.contains("running gc"), "{text}");
        drop(gc);
        StoreLock::acquire(d.path(), Access::Read).unwrap();
    }

    /// The entry of a process that died (nobody holds its lock) is neither listed nor kept;
    /// one whose lock is held is listed.
    #[test]
    fn entries_of_dead_processes_are_ignored_and_removed_by_the_exclusive_holder() {
        let d = store_dir();
        let writers = d.path().join(WRITERS_DIR);
        fs::create_dir_all(&writers).unwrap();
        let holder = |pid: u32| Holder {
            pid,
            command: format!("probe run {pid}"),
            run: None,
            maintenance: None,
            started: "2026-01-01T00:00:00Z".into(),
        };
        fs::write(
            writers.join("4000000"),
            serde_json::to_string(&holder(4_000_000)).unwrap(),
        )
        .unwrap();
        fs::write(writers.join("4000001.tmp"), "half").unwrap();
        fs::write(
            writers.join("4000002"),
            serde_json::to_string(&holder(4_000_002)).unwrap(),
        )
        .unwrap();
        // 4000002 "lives": something holds its entry's lock.
        let live = File::open(writers.join("4000002")).unwrap();
        live.lock_shared().unwrap();
        assert_eq!(
            holders(d.path()).iter().map(|h| h.pid).collect::<Vec<_>>(),
            [4_000_002]
        );
        drop(live);
        let (gc, _) = StoreLock::acquire(d.path(), Access::Alone(Maintenance::Gc)).unwrap();
        let mut left: Vec<String> = fs::read_dir(&writers)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, [std::process::id().to_string()]);
        drop(gc);
        assert_eq!(fs::read_dir(&writers).unwrap().count(), 0);
    }

    #[test]
    fn the_run_a_process_records_is_in_its_entry_and_refusals_name_it() {
        let d = store_dir();
        let (a, _) = StoreLock::acquire(d.path(), Access::Write).unwrap();
        a.set_run(&"ab".repeat(32));
        let err = StoreLock::acquire(d.path(), Access::Alone(Maintenance::Reindex))
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("recording run abababababab") && err.contains("reindex needs it alone"),
            "{err}"
        );
    }

    /// A child spawned by another thread holds copies of this process's descriptors until
    /// it executes its program, and with them the locks of handles this thread has dropped
    /// already; an open in that moment must not be refused.
    #[cfg(unix)]
    #[test]
    fn a_lock_a_spawning_child_holds_for_a_moment_refuses_nobody() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let d = store_dir();
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let spawning = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let _ = std::process::Command::new("true").status();
                }
            })
        };
        let mut refused = Vec::new();
        for _ in 0..300 {
            for access in [Access::Write, Access::Alone(Maintenance::Gc), Access::Read] {
                match StoreLock::acquire(d.path(), access) {
                    Ok(lock) => drop(lock),
                    Err(e) => refused.push(e.to_string()),
                }
            }
        }
        stop.store(true, Ordering::Relaxed);
        spawning.join().unwrap();
        assert!(refused.is_empty(), "{refused:?}");
    }

    #[test]
    fn holders_are_described_one_by_one() {
        let h = |pid| Holder {
            pid,
            command: "probe run".into(),
            run: None,
            maintenance: None,
            started: "2026-12-04T21:50:03Z".into(),
        };
        assert_eq!(
            describe_all(&[h(4242)], "x"),
            "process 4242 (probe run, started 2026-12-04T21:50:03Z)"
        );
        assert_eq!(
            describe_all(&[h(1), h(2), h(3)], "x"),
            "process 1 (probe run, started 2026-12-04T21:50:03Z), process 2 (probe run, \
             started 2026-12-04T21:50:03Z) and process 3 (probe run, started 2026-12-04T21:50:03Z)"
        );
        assert_eq!(describe_all(&[], "nobody"), "nobody");
        // An entry is read from a file: any text describes without a panic.
        let odd = Holder {
            run: Some("éééééééééééééé".into()),
            ..h(7)
        };
        assert!(odd.describe().contains("recording run éééééééééééé,"));
    }
}
