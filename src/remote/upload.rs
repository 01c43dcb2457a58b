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
//! Depends on: `remote` (the client, push).

use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::Duration;

use super::bucket::Remote;
use super::error::RemoteError;
use super::sync::{push, PushReport};
use super::url::RemoteUrl;

/// How often the uploader looks for full chunks.
const TICK: Duration = Duration::from_secs(2);

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
    thread: JoinHandle<(Remote, Uploaded)>,
}

impl Uploader {
    /// Starts uploading store `dir` into `url` in the background.
    pub fn start(dir: PathBuf, url: &RemoteUrl) -> Result<Uploader, RemoteError> {
        let remote = Remote::connect(url)?;
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("probe-upload".into())
            .spawn(move || {
                let mut up = Uploaded::default();
                // Until told to stop (or the sender is gone): a push per tick.
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(TICK) {
                    match push(&dir, &remote, false) {
                        Ok(r) => {
                            up.packs += r.packs;
                            up.bytes += r.bytes;
                        }
                        Err(e) => up.last_error = Some(e),
                    }
                }
                (remote, up)
            })
            .map_err(|e| RemoteError::Config {
                url: url.to_string(),
                why: format!("cannot start the upload thread: {e}"),
            })?;
        Ok(Uploader { stop, thread })
    }

    /// Stops the background pushes and pushes everything left: the final report with what
    /// the background sent added, or the error of the final push.
    pub fn finish(self, dir: &std::path::Path) -> (Result<PushReport, RemoteError>, Uploaded) {
        let _ = self.stop.send(());
        let (remote, mut up) = match self.thread.join() {
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
        let result = push(dir, &remote, true);
        if let Ok(r) = &result {
            up.packs += r.packs;
            up.bytes += r.bytes;
        }
        up.requests = remote.requests();
        (result, up)
    }
}
