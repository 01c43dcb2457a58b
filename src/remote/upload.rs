//! The background uploader of a command that records into the cache of a remote store
//! (`probe run --store s3://…`): a thread that pushes full chunks ([`super::sync::CHUNK_BYTES`]
//! of whole blocks) every few seconds while the run records, so that recording never waits
//! on the network and memory stays bounded (one chunk at a time); [`Uploader::finish`]
//! stops it and pushes the rest.
//!
//! A push that fails in the background (the store gone away) is remembered and tried again
//! at the next tick; the run goes on recording locally either way, and the final push
//! says what was not uploaded.
//!
//! The uploader holds a shared lock on the remote store ([`RemoteLock`]) from its start
//! to the end of the final push, so that no `probe store gc` runs beside it; while gc holds
//! the store, the background pushes wait (the run records on), and the final push waits
//! up to [`WRITER_WAIT`] for gc to end.
//!
//! Depends on: `remote` (the client, push, locks).

use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::Duration;

use super::bucket::Remote;
use super::error::RemoteError;
use super::lock::RemoteLock;
use super::sync::{push, PushReport};
use super::url::RemoteUrl;

/// How often the uploader looks for full chunks.
const TICK: Duration = Duration::from_secs(2);
/// How long a writer's final push waits for a `probe store gc` to release the store.
pub const WRITER_WAIT: Duration = Duration::from_secs(5 * 60);

/// What the uploader sent and the last error it met.
#[derive(Debug, Default)]
pub struct Uploaded {
    pub packs: usize,
    pub bytes: u64,
    pub requests: u64,
    pub last_error: Option<RemoteError>,
}

/// A running background uploader.
pub struct Uploader {
    stop: mpsc::Sender<()>,
    thread: JoinHandle<(Remote, Uploaded, Option<RemoteLock>)>,
    url: RemoteUrl,
}

impl Uploader {
    /// Starts uploading store `dir` into `url` in the background.
    pub fn start(dir: PathBuf, url: &RemoteUrl) -> Result<Uploader, RemoteError> {
        let remote = Remote::connect(url)?;
        let (stop, stopped) = mpsc::channel::<()>();
        let lock_url = url.clone();
        let thread = std::thread::Builder::new()
            .name("probe-upload".into())
            .spawn(move || {
                let mut up = Uploaded::default();
                // Taken at once, so that a gc that starts after this run sees it.
                let mut lock = None;
                let take = |lock: &mut Option<RemoteLock>, up: &mut Uploaded| {
                    if lock.is_none() {
                        match RemoteLock::take(&lock_url, false, "run") {
                            Ok(l) => *lock = Some(l),
                            Err(RemoteError::Busy { .. }) => {}
                            Err(e) => up.last_error = Some(e),
                        }
                    }
                };
                take(&mut lock, &mut up);
                // Until told to stop (or the sender is gone): a push per tick.
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(TICK) {
                    take(&mut lock, &mut up);
                    if lock.is_none() {
                        continue; // gc holds the store: the run records on, locally.
                    }
                    match push(&dir, &remote, false) {
                        Ok(r) => {
                            up.packs += r.packs;
                            up.bytes += r.bytes;
                        }
                        Err(e) => up.last_error = Some(e),
                    }
                }
                (remote, up, lock)
            })
            .map_err(|e| RemoteError::Config {
                url: url.to_string(),
                why: format!("cannot start the upload thread: {e}"),
            })?;
        Ok(Uploader {
            stop,
            thread,
            url: url.clone(),
        })
    }

    /// Stops the background pushes and pushes everything left: the final report with what
    /// the background sent added, or the error of the final push.
    pub fn finish(self, dir: &std::path::Path) -> (Result<PushReport, RemoteError>, Uploaded) {
        let _ = self.stop.send(());
        let (remote, mut up, lock) = match self.thread.join() {
            Ok(done) => done,
            Err(_) => {
                return (
                    Err(RemoteError::Config {
                        url: String::from("the object store"),
                        why: "the upload thread panicked".to_owned(),
                    }),
                    Uploaded::default(),
                )
            }
        };
        let lock = match lock {
            Some(lock) => Ok(lock),
            None => RemoteLock::take_shared_waiting(&self.url, "run", WRITER_WAIT),
        };
        let result = lock.and_then(|lock| {
            let pushed = push(dir, &remote, true);
            lock.release();
            pushed
        });
        if let Ok(r) = &result {
            up.packs += r.packs;
            up.bytes += r.bytes;
        }
        up.requests = remote.requests();
        (result, up)
    }
}
