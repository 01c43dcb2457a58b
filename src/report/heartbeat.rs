//! The heartbeat: a one-line sign of life every few seconds while a run goes, for a CI log
//! where no progress bar is drawn (standard error is not a terminal). An [`EventSink`] that
//! counts, as the progress bar does; the command asks for the line when it is due and
//! writes it where its own output goes (so nothing here holds or takes standard error).
//!
//! Depends on: `events`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::events::{Event, EventSink};

/// How often the heartbeat is written when nothing says otherwise.
pub const DEFAULT_EVERY: Duration = Duration::from_secs(10);

/// The environment variable that sets the period (`1s`, `30s`), or turns the heartbeat off
/// (`off`, `0`). Not a documented setting: meant for tests and for CI systems that want
/// a different rhythm.
pub const PERIOD_VAR: &str = "PROBE_HEARTBEAT";

/// The live counts the line shows.
#[derive(Default)]
struct Counts {
    requests: AtomicU64,
    /// Answers by status class: 1xx..5xx at 1..=5; requests that got no HTTP answer at 0.
    by_class: [AtomicU64; 6],
    findings: AtomicU64,
}

/// Counts a run's events and says how far it is.
pub struct Heartbeat {
    counts: Arc<Counts>,
    started: Instant,
}

impl Default for Heartbeat {
    fn default() -> Heartbeat {
        Heartbeat::new()
    }
}

impl Heartbeat {
    pub fn new() -> Heartbeat {
        Heartbeat {
            counts: Arc::new(Counts::default()),
            started: Instant::now(),
        }
    }

    /// The period of the heartbeat, from `PROBE_HEARTBEAT`'s value if given (`None`:
    /// off); a value that is not a duration is ignored.
    pub fn period(var: Option<&str>) -> Option<Duration> {
        match var.map(str::trim) {
            None | Some("") => Some(DEFAULT_EVERY),
            Some("off") | Some("0") => None,
            Some(text) => match humantime::parse_duration(text) {
                Ok(d) if d.is_zero() => None,
                Ok(d) => Some(d),
                Err(_) => Some(DEFAULT_EVERY),
            },
        }
    }

    /// The sink the run reports to.
    pub fn sink(&self) -> EventSink {
        let counts = self.counts.clone();
        Arc::new(move |event: &Event<'_>| match event {
            Event::Interaction { status, .. } => {
                counts.requests.fetch_add(1, Ordering::Relaxed);
                let class = status.map_or(0, |s| (s / 100).clamp(1, 5) as usize);
                counts.by_class[class].fetch_add(1, Ordering::Relaxed);
            }
            Event::Finding { .. } => {
                counts.findings.fetch_add(1, Ordering::Relaxed);
            }
            _ => {}
        })
    }

    /// The line: `probe: 0:00:20 · 1234 requests · 2xx 1000 · 3xx 0 · 4xx 200 · 5xx 30 ·
    /// no answer 4 · 3 findings` (1xx only when there were any).
    pub fn line(&self) -> String {
        let n = |i: usize| self.counts.by_class[i].load(Ordering::Relaxed);
        let secs = self.started.elapsed().as_secs();
        let mut line = format!(
            "probe: {}:{:02}:{:02} · {} requests",
            secs / 3600,
            secs / 60 % 60,
            secs % 60,
            self.counts.requests.load(Ordering::Relaxed)
        );
        if n(1) > 0 {
            line.push_str(&format!(" · 1xx {}", n(1)));
        }
        let findings = self.counts.findings.load(Ordering::Relaxed);
        line.push_str(&format!(
            " · 2xx {} · 3xx {} · 4xx {} · 5xx {} · no answer {} · {findings} finding{}",
            n(2),
            n(3),
            n(4),
            n(5),
            n(0),
            if findings == 1 { "" } else { "s" }
        ));
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{CaseId, Digest, InteractionId};

    #[test]
    fn the_line_counts_answers_by_class_and_findings() {
        let beat = Heartbeat::new();
        let sink = beat.sink();
        let id = Digest::from_hex(&"0".repeat(64)).unwrap();
        for status in [Some(200), Some(201), Some(404), Some(500), None] {
            sink(&Event::Interaction {
                seq: 0,
                operation: "op",
                case: CaseId(id),
                interaction: InteractionId(id),
                status,
                transport: None,
                strategy: "nominal",
                intent: crate::model::Intent::Acceptable,
                mutation: None,
                started_ms: 0,
                elapsed_us: 0,
            });
        }
        sink(&Event::Finding {
            oracle: "server_error",
            code: None,
            operation: "op",
            message: "500",
            interaction: InteractionId(id),
        });
        assert_eq!(
            beat.line(),
            "probe: 0:00:00 · 5 requests · 2xx 2 · 3xx 0 · 4xx 1 · 5xx 1 · no answer 1 · 1 finding"
        );
    }

    #[test]
    fn the_period_is_ten_seconds_unless_told() {
        assert_eq!(Heartbeat::period(None), Some(DEFAULT_EVERY));
        assert_eq!(Heartbeat::period(Some("1s")), Some(Duration::from_secs(1)));
        assert_eq!(Heartbeat::period(Some("off")), None);
        assert_eq!(Heartbeat::period(Some("0")), None);
    }
}
