//! The live progress bar: an [`EventSink`] that draws counts while a run goes, only when
//! standard error is a terminal. A bar is registered with [`terminal`] while it is drawn, so
//! that what else probe writes to the terminal lifts it instead of waiting for it.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use crate::events::{Event, EventSink};
use crate::report::terminal;

/// Live counters the bar shows.
#[derive(Default)]
struct Counts {
    requests: AtomicU64,
    ok: AtomicU64,
    client_errors: AtomicU64,
    server_errors: AtomicU64,
    transport: AtomicU64,
    findings: AtomicU64,
    /// When the message was last written, in milliseconds after `Progress::new`.
    written_ms: AtomicU64,
}

/// How often the counts in the message are rewritten at most. The bar is drawn about every
/// tenth of a second; formatting the message for every one of 20,000 answers a second would
/// cost the run more than the drawing.
const MESSAGE_EVERY_MS: u64 = 100;

/// A progress display; `sink()` feeds it, `finish()` clears it.
pub struct Progress {
    bar: Option<ProgressBar>,
    counts: Arc<Counts>,
    started: Instant,
    /// While the bar is drawn, writes to the terminal lift it ([`terminal`]).
    _shown: Option<terminal::Shown>,
}

impl Progress {
    /// A bar when `enabled` and stderr is a terminal, else nothing is drawn.
    pub fn new(enabled: bool, total: Option<u64>) -> Progress {
        let bar = (enabled && std::io::stderr().is_terminal()).then(|| {
            let bar = match total {
                Some(n) => ProgressBar::new(n),
                None => ProgressBar::new_spinner(),
            };
            let template = if total.is_some() {
                "{spinner} {elapsed_precise} [{bar:30}] {pos}/{len} {msg}"
            } else {
                "{spinner} {elapsed_precise} {pos} requests {msg}"
            };
            bar.set_style(
                ProgressStyle::with_template(template)
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        let _shown = bar.as_ref().map(terminal::show);
        Progress {
            bar,
            counts: Arc::new(Counts::default()),
            started: Instant::now(),
            _shown,
        }
    }

    /// The sink the engine reports to.
    pub fn sink(&self) -> EventSink {
        let bar = self.bar.clone();
        let counts = self.counts.clone();
        let started = self.started;
        Arc::new(move |event: &Event<'_>| {
            let Some(bar) = &bar else { return };
            match event {
                Event::Interaction { status, .. } => {
                    counts.requests.fetch_add(1, Ordering::Relaxed);
                    let c = match status {
                        Some(s) if *s < 400 => &counts.ok,
                        Some(s) if *s < 500 => &counts.client_errors,
                        Some(_) => &counts.server_errors,
                        None => &counts.transport,
                    };
                    c.fetch_add(1, Ordering::Relaxed);
                    bar.inc(1);
                    let now_ms = started.elapsed().as_millis() as u64;
                    let written = counts.written_ms.load(Ordering::Relaxed);
                    // One thread rewrites it; the others go on.
                    let due = now_ms >= written + MESSAGE_EVERY_MS
                        && counts
                            .written_ms
                            .compare_exchange(written, now_ms, Ordering::Relaxed, Ordering::Relaxed)
                            .is_ok();
                    if !due {
                        return;
                    }
                    bar.set_message(format!(
                        "· <400 {} · 4xx {} · 5xx {} · failed {} · findings {}",
                        counts.ok.load(Ordering::Relaxed),
                        counts.client_errors.load(Ordering::Relaxed),
                        counts.server_errors.load(Ordering::Relaxed),
                        counts.transport.load(Ordering::Relaxed),
                        counts.findings.load(Ordering::Relaxed)
                    ));
                }
                Event::Finding { .. } => {
                    counts.findings.fetch_add(1, Ordering::Relaxed);
                }
                Event::PhaseStarted { name, .. } => bar.println(format!("  {name}")),
                Event::OperationSkipped { operation, reason } => {
                    bar.println(format!("  skipped {operation}: {reason}"))
                }
                _ => {}
            }
        })
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// A bar over a known amount of work on stored data (`probe recheck`), drawn in the run's
/// style, only when `enabled` and standard error is a terminal. Safe to share between
/// threads.
pub struct WorkProgress {
    bar: Option<ProgressBar>,
    _shown: Option<terminal::Shown>,
}

impl WorkProgress {
    /// `what` names the unit after the counts, e.g. `interactions rechecked`.
    pub fn new(enabled: bool, total: u64, what: &str) -> WorkProgress {
        let bar = (enabled && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::new(total);
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} {elapsed_precise} [{bar:30}] {pos}/{len} {msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
            );
            bar.set_message(what.to_owned());
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        let _shown = bar.as_ref().map(terminal::show);
        WorkProgress { bar, _shown }
    }

    pub fn inc(&self, n: u64) {
        if let Some(bar) = &self.bar {
            bar.inc(n);
        }
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
