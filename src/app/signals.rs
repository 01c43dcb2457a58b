//! Ctrl-C and SIGTERM during a campaign: the first ends the run the way a spent budget
//! does (the engine's [`Stop`]: requests in flight cancelled and recorded, then the run
//! closed and its reports written, outcome `interrupted`); a second exits at once.
//!
//! The handlers live on a thread of their own with a small runtime, not on the campaign's:
//! a second signal must end the process even when the campaign's threads are all stuck (a
//! full pipe, a store that does not answer). Before they are installed a signal has its
//! default effect. Nothing here prints: the process's standard error belongs to the
//! command, which says what happened once the engine returns.
//!
//! Depends on: `stop`, `exit`, `error`.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use crate::error::CliError;
use crate::exit;
use crate::stop::{Stop, StopReason};

/// Which signal interrupted the campaign, once one did.
#[derive(Clone, Default)]
pub(crate) struct Interrupts {
    /// The exit code of the first signal (128 + its number), 0 before any.
    first: Arc<AtomicU8>,
}

impl Interrupts {
    /// Starts watching SIGINT and SIGTERM for a campaign that `stop` ends.
    pub(crate) fn watch(stop: Stop) -> Result<Interrupts, CliError> {
        let cannot = |e| CliError::internal("cannot watch for Ctrl-C and SIGTERM", e);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(cannot)?;
        // Installed now, not when the thread first runs: a signal in between would
        // otherwise kill the process with the run unrecorded.
        let mut signals = {
            let _context = runtime.enter();
            Signals::install().map_err(cannot)?
        };
        let interrupts = Interrupts::default();
        let first = interrupts.first.clone();
        std::thread::Builder::new()
            .name("probe-signals".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let code = signals.next().await;
                    first.store(code, Ordering::SeqCst);
                    stop.stop(StopReason::Interrupted);
                    // A second signal: the user does not want to wait for the reports.
                    let code = signals.next().await;
                    std::process::exit(i32::from(code));
                })
            })
            .map_err(cannot)?;
        Ok(interrupts)
    }

    /// The name of the signal that interrupted the campaign and the exit code it means.
    pub(crate) fn received(&self) -> Option<(&'static str, u8)> {
        match self.first.load(Ordering::SeqCst) {
            0 => None,
            exit::TERMINATED => Some(("SIGTERM", exit::TERMINATED)),
            code => Some(("SIGINT (Ctrl-C)", code)),
        }
    }
}

/// SIGINT and SIGTERM as one stream of exit codes.
#[cfg(unix)]
struct Signals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
}

#[cfg(unix)]
impl Signals {
    fn install() -> std::io::Result<Signals> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Signals {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
        })
    }

    /// Waits for the next signal; gives its exit code.
    async fn next(&mut self) -> u8 {
        tokio::select! {
            _ = self.interrupt.recv() => exit::INTERRUPTED,
            _ = self.terminate.recv() => exit::TERMINATED,
        }
    }
}

/// Ctrl-C alone where there is no SIGTERM.
#[cfg(not(unix))]
struct Signals;

#[cfg(not(unix))]
impl Signals {
    fn install() -> std::io::Result<Signals> {
        Ok(Signals)
    }

    async fn next(&mut self) -> u8 {
        match tokio::signal::ctrl_c().await {
            Ok(()) => exit::INTERRUPTED,
            Err(_) => std::future::pending().await,
        }
    }
}
