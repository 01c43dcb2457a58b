//! A run over its clock, for the HTML page ([`super::html`]): requests sent, operations
//! answered 2xx and distinct findings as curves, each operation's first 2xx and its status
//! codes, counted one interaction at a time ([`TimelineBuilder`]): from a run's events as
//! they are published, or in one pass over a stored run ([`read`]).
//!
//! Aggregated here, in Rust, so that a page stays small and the reading stays in bounded
//! memory whatever the run's size: the requests are counted in a [`Histogram`] of at most
//! 4,096 slots and drawn as at most [`BUCKETS`] points; the other two curves have one point
//! per operation or finding. The area under each curve is exact (every event counted, not
//! the drawn points).
//!
//! Depends on: `store` (paging through a run), `model`, `ids`.

use std::collections::{BTreeMap, HashMap};

use crate::ids::{Digest, InteractionId, RunId};
use crate::model::{RunStart, Series};
use crate::store::{Store, StoreError};

/// Points of the requests curve at most: enough for a chart 1,000 pixels wide.
pub const BUCKETS: u64 = 400;

/// Interactions read from the index at a time (as the HAR export pages).
const PAGE: u64 = 512;

/// A cumulative count over the run's clock: it rises to `value` at `at_ms` (milliseconds
/// since the run's start) and holds until the next point.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Curve {
    pub points: Vec<(u64, u64)>,
    /// The count at the end of the run.
    pub total: u64,
    /// The area under the curve from the start to `end_ms`, in count × seconds.
    pub area: f64,
}

impl Curve {
    /// The step curve of events at these times (milliseconds since the start, any order),
    /// every event counted, up to `end_ms`.
    pub fn of_events(mut times: Vec<u64>, end_ms: u64) -> Curve {
        times.sort_unstable();
        let mut points: Vec<(u64, u64)> = Vec::with_capacity(times.len());
        for (i, t) in times.iter().enumerate() {
            let t = (*t).min(end_ms);
            match points.last_mut() {
                Some(last) if last.0 == t => last.1 = i as u64 + 1,
                _ => points.push((t, i as u64 + 1)),
            }
        }
        Curve {
            area: area_of_events(&times, end_ms),
            total: times.len() as u64,
            points,
        }
    }
}

/// The area under the cumulative count of events at `times` from 0 to `end_ms`, in
/// count × seconds: each event adds one from its time to the end.
pub fn area_of_events(times: &[u64], end_ms: u64) -> f64 {
    times
        .iter()
        .map(|t| end_ms.saturating_sub(*t) as f64)
        .sum::<f64>()
        / 1000.0
}

/// The area under a step curve (`points` as in [`Curve`]) from 0 to `end_ms`, in
/// value × seconds.
pub fn area_of_steps(points: &[(u64, u64)], end_ms: u64) -> f64 {
    let mut area = 0.0;
    for (i, (t, v)) in points.iter().enumerate() {
        let next = points.get(i + 1).map_or(end_ms, |p| p.0).min(end_ms);
        area += next.saturating_sub(*t) as f64 * *v as f64;
    }
    area / 1000.0
}

/// One run over its clock.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timeline {
    /// From the run's start to its end (its end manifest; for an unfinished run, the last
    /// answer), in milliseconds.
    pub end_ms: u64,
    /// Requests sent, by the time each left.
    pub requests: Curve,
    /// Operations answered 2xx, by the time of each one's first 2xx answer.
    pub operations_2xx: Curve,
    /// Distinct findings, by the time of the answer that first showed each.
    pub findings: Curve,
    /// Each operation's first 2xx answer, in milliseconds since the start.
    pub first_2xx_ms: BTreeMap<String, u64>,
    /// Each operation's answers by status code (requests without an answer are not here).
    pub status_codes: BTreeMap<String, BTreeMap<u16, u64>>,
    /// Interactions read.
    pub interactions: u64,
}

/// The interaction that first showed a finding, named by its hex id as report.json lists
/// it; `None` for a text that is no id.
pub fn interaction_id(hex: &str) -> Option<InteractionId> {
    Digest::from_hex(hex).ok().map(InteractionId)
}

/// Reads `run` from the store: `finding_firsts` are the interactions that first showed each
/// distinct finding (one per finding; an id the run does not hold counts at the end).
pub fn read(
    store: &Store,
    run: RunId,
    finding_firsts: &[InteractionId],
) -> Result<Timeline, StoreError> {
    let start: RunStart = store.get(run.0)?;
    let ended = store.run_end(run)?.map(|e| e.ended_ms);
    let mut wanted: HashMap<InteractionId, Option<u64>> =
        finding_firsts.iter().map(|i| (*i, None)).collect();
    // With the run's end known, a request recorded later (cancelled at the end) counts at it;
    // without, the end is the last answer, which no request left after.
    let mut timeline = TimelineBuilder::new(start.started_ms, ended);
    if let Some(max_seq) = store.max_seq(run)? {
        let mut from = 0u64;
        while from <= max_seq {
            let to = from.saturating_add(PAGE);
            for item in store.interactions_page(run, from..to)? {
                let interaction = store.get_interaction(&item)?;
                let answered = timeline.add(
                    interaction.timing.started_ms,
                    interaction.timing.elapsed_us,
                    &item.row.operation,
                    item.row.status,
                );
                if let Some(slot) = wanted.get_mut(&item.row.id) {
                    *slot = Some(answered);
                }
            }
            from = to;
        }
    }
    let answered: Vec<Option<u64>> = finding_firsts
        .iter()
        .map(|i| wanted.get(i).copied().flatten())
        .collect();
    // With the end given beforehand every request is capped at it, and without one the
    // end is the last answer, which no request left after: `finish` has its timeline.
    timeline
        .finish(ended, &answered)
        .ok_or_else(|| StoreError::Other(format!("run {run}: a request left after the run's end")))
}

/// A [`Timeline`] counted one interaction at a time, in any order: by [`read`] from the
/// store, or from a run's `interaction` events as they are published (the reports'
/// `RunLog`), so that the page at a run's end needs no second pass over the store.
#[derive(Clone, Debug)]
pub struct TimelineBuilder {
    begin: u64,
    sent: Histogram,
    first_2xx: BTreeMap<String, u64>,
    codes: BTreeMap<String, BTreeMap<u16, u64>>,
    last_answer: u64,
    /// The latest start seen, in milliseconds since the run's start.
    last_left: u64,
    interactions: u64,
}

impl TimelineBuilder {
    /// A timeline of a run that started at `begin_ms` (Unix milliseconds); with `ended_ms`
    /// known beforehand, a request that left after it counts at it.
    pub fn new(begin_ms: u64, ended_ms: Option<u64>) -> TimelineBuilder {
        TimelineBuilder {
            begin: begin_ms,
            sent: Histogram::new(ended_ms.map(|e| e.saturating_sub(begin_ms))),
            first_2xx: BTreeMap::new(),
            codes: BTreeMap::new(),
            last_answer: 0,
            last_left: 0,
            interactions: 0,
        }
    }

    /// Counts one interaction (its start in Unix milliseconds, how long it took, its
    /// operation and status); returns when it was answered, in milliseconds since the
    /// run's start.
    pub fn add(
        &mut self,
        started_ms: u64,
        elapsed_us: u64,
        operation: &str,
        status: Option<u16>,
    ) -> u64 {
        self.interactions += 1;
        let left = started_ms.saturating_sub(self.begin);
        let answered = self.answered_at(started_ms, elapsed_us);
        self.last_answer = self.last_answer.max(answered);
        self.last_left = self.last_left.max(left);
        self.sent.add(left);
        if let Some(status) = status {
            match self.codes.get_mut(operation) {
                Some(by_code) => *by_code.entry(status).or_insert(0) += 1,
                None => {
                    self.codes
                        .insert(operation.to_owned(), BTreeMap::from([(status, 1)]));
                }
            }
            if (200..300).contains(&status) {
                match self.first_2xx.get_mut(operation) {
                    Some(first) => *first = (*first).min(answered),
                    None => {
                        self.first_2xx.insert(operation.to_owned(), answered);
                    }
                }
            }
        }
        answered
    }

    /// The timeline, ending at `ended_ms` (Unix milliseconds; `None`: at the last answer).
    /// `finding_answers` are the times the interactions that first showed each distinct
    /// finding were answered (from [`TimelineBuilder::add`]); `None` counts at the end.
    /// `None` when a request left after `ended_ms` and the builder was not told the end
    /// beforehand (the clock stepped back): [`read`] it from the store instead.
    pub fn finish(
        self,
        ended_ms: Option<u64>,
        finding_answers: &[Option<u64>],
    ) -> Option<Timeline> {
        let ended = ended_ms.map(|e| e.saturating_sub(self.begin));
        let end_ms = ended.unwrap_or(self.last_answer);
        if self.sent.cap.is_none() && self.interactions > 0 && self.last_left > end_ms {
            return None;
        }
        let finding_times: Vec<u64> = finding_answers
            .iter()
            .map(|t| t.unwrap_or(end_ms))
            .collect();
        Some(Timeline {
            requests: self.sent.curve(end_ms),
            operations_2xx: Curve::of_events(self.first_2xx.values().copied().collect(), end_ms),
            findings: Curve::of_events(finding_times, end_ms),
            first_2xx_ms: self.first_2xx,
            status_codes: self.codes,
            interactions: self.interactions,
            end_ms,
        })
    }

    /// The answers counted so far, by operation and exact status.
    pub fn status_codes(&self) -> &BTreeMap<String, BTreeMap<u16, u64>> {
        &self.codes
    }

    /// When a request that left at `started_ms` (Unix milliseconds) and took `elapsed_us`
    /// was answered, in milliseconds since the run's start.
    pub fn answered_at(&self, started_ms: u64, elapsed_us: u64) -> u64 {
        started_ms.saturating_sub(self.begin) + elapsed_us / 1000
    }
}

/// Slots a [`Histogram`] keeps at most before it halves its resolution.
const SLOTS: u64 = 4096;

/// Many events counted as they stream by, in memory that does not grow with their number:
/// slots of a power-of-two width in milliseconds, the width doubled (pairs of slots merged)
/// whenever an event falls past the last of [`SLOTS`]. The count and the sum of the times
/// are kept exactly, so the area under the curve is exact whatever the resolution.
#[derive(Clone, Debug)]
pub struct Histogram {
    width: u64,
    slots: Vec<u64>,
    count: u64,
    sum: u128,
    /// Events later than this are counted at it (the run's end, when known beforehand).
    cap: Option<u64>,
}

impl Histogram {
    /// An empty histogram; with `cap`, events later than it count at it.
    pub fn new(cap: Option<u64>) -> Histogram {
        Histogram {
            width: 1,
            slots: Vec::new(),
            count: 0,
            sum: 0,
            cap,
        }
    }

    /// Counts one event at `t` milliseconds since the start.
    pub fn add(&mut self, t: u64) {
        let t = self.cap.map_or(t, |cap| t.min(cap));
        self.count += 1;
        self.sum += u128::from(t);
        while t / self.width >= SLOTS {
            self.slots = self.slots.chunks(2).map(|pair| pair.iter().sum()).collect();
            self.width = self.width.saturating_mul(2);
        }
        let slot = (t / self.width) as usize;
        if self.slots.len() <= slot {
            self.slots.resize(slot + 1, 0);
        }
        self.slots[slot] += 1;
    }

    /// The cumulative curve up to `end_ms`, drawn as at most [`BUCKETS`] points (the count
    /// at the end of each slice of the run's time). No event may be later than `end_ms`
    /// (give it as the cap, or take the end after the last event).
    pub fn curve(&self, end_ms: u64) -> Curve {
        let area =
            (u128::from(self.count) * u128::from(end_ms)).saturating_sub(self.sum) as f64 / 1000.0;
        let slice = end_ms.div_ceil(BUCKETS).max(1);
        let mut points: Vec<(u64, u64)> = Vec::new();
        let mut sum = 0;
        for (i, n) in self.slots.iter().enumerate() {
            if *n == 0 {
                continue;
            }
            sum += n;
            // At the end of the slice the slot starts in: the count reached by then.
            let from = (i as u64).saturating_mul(self.width).min(end_ms);
            let at = ((from / slice + 1) * slice).min(end_ms);
            match points.last_mut() {
                Some(last) if last.0 == at => last.1 = sum,
                _ => points.push((at, sum)),
            }
        }
        Curve {
            points,
            total: self.count,
            area,
        }
    }
}

/// The curve of events at `times`, none later than `end_ms` counted later than it.
pub fn histogram(times: impl IntoIterator<Item = u64>, end_ms: u64) -> Curve {
    let mut h = Histogram::new(Some(end_ms));
    for t in times {
        h.add(t);
    }
    h.curve(end_ms)
}

/// Bytes of a body the page shows; the rest is named by its size (the store has it all).
/// With [`super::html::EXCHANGES_SHOWN`] findings, at most about 3 MB of bodies a page.
pub const SHOWN_BODY: usize = 8 * 1024;

/// A body as the page shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShownBody {
    /// Pretty-printed when it is JSON; the text as it came when it is other text.
    pub text: String,
    /// Its size as recorded, in bytes.
    pub bytes: u64,
    /// `text` is the start of it only.
    pub cut: bool,
    /// Not UTF-8: `text` says so instead of showing it.
    pub binary: bool,
}

impl ShownBody {
    /// The page's form of a recorded body.
    pub fn of(bytes: &[u8]) -> ShownBody {
        let size = bytes.len() as u64;
        let text = match std::str::from_utf8(bytes) {
            Ok(text) => text,
            Err(_) => {
                return ShownBody {
                    text: format!("({size} bytes, not UTF-8 text)"),
                    bytes: size,
                    cut: false,
                    binary: true,
                }
            }
        };
        let pretty = serde_json::from_str::<serde_json::Value>(text)
            .ok()
            .filter(|v| v.is_object() || v.is_array())
            .and_then(|v| serde_json::to_string_pretty(&v).ok());
        let mut text = pretty.unwrap_or_else(|| text.to_owned());
        let cut = text.len() > SHOWN_BODY;
        if cut {
            let mut end = SHOWN_BODY;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
        }
        ShownBody {
            text,
            bytes: size,
            cut,
            binary: false,
        }
    }
}

/// One recorded interaction as a finding shows it: the request and the reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exchange {
    pub interaction: InteractionId,
    pub seq: u64,
    pub method: String,
    pub url: String,
    /// As stored: credentials are the placeholder.
    pub request_headers: Vec<(String, String)>,
    pub request_body: Option<ShownBody>,
    /// `None` when no HTTP answer came.
    pub status: Option<u16>,
    /// Why no answer came: its kind and message.
    pub transport: Option<String>,
    pub reply_headers: Vec<(String, String)>,
    pub reply_body: Option<ShownBody>,
    /// The reply was longer than `send.maxBodyBytes` and probe read only the start.
    pub reply_truncated: bool,
    pub elapsed_us: u64,
}

/// Reads one interaction for the page.
pub fn exchange(store: &Store, id: InteractionId) -> Result<Exchange, StoreError> {
    let i: crate::model::Interaction = store.get(id.digest())?;
    let body = |b: &Option<crate::model::BodyBytes>| -> Result<Option<ShownBody>, StoreError> {
        match b {
            Some(b) if !b.is_empty() => Ok(Some(ShownBody::of(&store.body_bytes(b)?))),
            _ => Ok(None),
        }
    };
    let request_body = body(&i.request.body)?;
    let (status, transport, reply_headers, reply_body, reply_truncated) = match &i.outcome {
        crate::model::Outcome::Response(r) => (
            Some(r.status),
            None,
            r.headers.clone(),
            body(&r.body)?,
            r.truncated,
        ),
        crate::model::Outcome::TransportError { kind, message } => (
            None,
            Some(format!("{}: {message}", kind.name())),
            Vec::new(),
            None,
            false,
        ),
    };
    Ok(Exchange {
        interaction: id,
        seq: i.seq,
        method: i.request.method,
        url: i.request.url,
        request_headers: i.request.headers,
        request_body,
        status,
        transport,
        reply_headers,
        reply_body,
        reply_truncated,
        elapsed_us: i.timing.elapsed_us,
    })
}

/// The interaction whose request a finding's curl line re-sends (as report.json chooses
/// it): for a finding of a series oracle the step of its series that showed it, else the
/// smallest request that showed it, else the first.
pub fn shown_interaction(store: &Store, f: &super::FindingReport) -> Option<InteractionId> {
    let ids: Vec<InteractionId> = f
        .interactions
        .iter()
        .filter_map(|h| interaction_id(h))
        .collect();
    let in_series = f
        .series
        .as_deref()
        .and_then(|hex| Digest::from_hex(hex).ok())
        .and_then(|d| store.get::<Series>(d).ok())
        .and_then(|series| {
            ids.iter()
                .find(|i| series.steps.iter().any(|s| s.interaction == **i))
                .copied()
        });
    in_series
        .or_else(|| f.reproducer.as_deref().and_then(interaction_id))
        .or_else(|| ids.first().copied())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_curve_rises_at_each_event_and_its_area_counts_each_until_the_end() {
        let c = Curve::of_events(vec![3000, 1000, 1000, 4000], 5000);
        assert_eq!(c.points, vec![(1000, 2), (3000, 3), (4000, 4)]);
        assert_eq!(c.total, 4);
        // 2 from 1 s to 3 s, 3 from 3 s to 4 s, 4 from 4 s to 5 s.
        assert_eq!(c.area, 2.0 * 2.0 + 3.0 + 4.0);
        assert_eq!(area_of_steps(&c.points, 5000), c.area);
    }

    #[test]
    fn events_after_the_end_count_at_the_end_and_add_no_area() {
        let c = Curve::of_events(vec![9000], 5000);
        assert_eq!(c.points, vec![(5000, 1)]);
        assert_eq!(c.area, 0.0);
        assert_eq!(Curve::of_events(Vec::new(), 5000), Curve::default());
    }

    #[test]
    fn a_histogram_has_at_most_the_buckets_and_the_exact_area() {
        let times: Vec<u64> = (0..100_000).map(|i| i * 3 % 60_000).collect();
        let c = histogram(times.iter().copied(), 60_000);
        assert!(c.points.len() as u64 <= BUCKETS + 1, "{}", c.points.len());
        assert_eq!(c.total, 100_000);
        assert_eq!(c.points.last().map(|p| p.1), Some(100_000));
        assert_eq!(c.area, area_of_events(&times, 60_000));
        // The drawn curve's area is within one bucket of the exact one.
        let drawn = area_of_steps(&c.points, 60_000);
        assert!(
            (drawn - c.area).abs() <= 100_000.0 * 0.150,
            "{drawn} vs {}",
            c.area
        );
        // Points rise and never go back in time.
        assert!(c
            .points
            .windows(2)
            .all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1));
    }

    #[test]
    fn bodies_are_pretty_printed_and_long_ones_cut_at_a_character() {
        let b = ShownBody::of(br#"{"a":[1,2]}"#);
        assert_eq!(b.text, "{\n  \"a\": [\n    1,\n    2\n  ]\n}");
        assert!(!b.cut && !b.binary);
        assert_eq!(b.bytes, 11);
        let long = "é".repeat(SHOWN_BODY);
        let b = ShownBody::of(long.as_bytes());
        assert!(b.cut);
        assert!(b.text.len() <= SHOWN_BODY && b.text.chars().all(|c| c == 'é'));
        let b = ShownBody::of(&[0xff, 0xfe, 0]);
        assert!(b.binary);
        assert_eq!(b.text, "(3 bytes, not UTF-8 text)");
        assert_eq!(ShownBody::of(b"plain <b>").text, "plain <b>");
    }

    #[test]
    fn a_long_run_keeps_few_slots_and_the_exact_area() {
        // Ten hours of events, one every 360 ms: the slots halve their resolution as it goes.
        let end = 36_000_000u64;
        let times: Vec<u64> = (0..100_000u64).map(|i| i * 360).collect();
        let mut h = Histogram::new(None);
        for t in &times {
            h.add(*t);
        }
        assert!(h.slots.len() as u64 <= SLOTS, "{}", h.slots.len());
        let c = h.curve(end);
        assert_eq!(c.total, 100_000);
        assert_eq!(c.area, area_of_events(&times, end));
        assert!(c.points.len() as u64 <= BUCKETS, "{}", c.points.len());
        assert_eq!(c.points.last(), Some(&(end, 100_000)));
        // Each drawn point is within a slot's width of the true count at its time.
        for (at, n) in &c.points {
            let truth = times.iter().filter(|t| **t < *at).count() as u64;
            assert!(
                n.abs_diff(truth) <= h.width / 360 + 1,
                "{at}: {n} vs {truth}"
            );
        }
        // A cap counts later events at it.
        let c = histogram([5, 50], 10);
        assert_eq!(c.points, vec![(6, 1), (10, 2)]);
        assert_eq!(c.area, 0.005);
    }

    #[test]
    fn a_run_that_took_no_time_still_draws() {
        let c = histogram(vec![0, 0, 0], 0);
        assert_eq!(c.points, vec![(0, 3)]);
        assert_eq!(c.area, 0.0);
        // Each slice's count stands at the slice's end.
        let c = histogram(vec![0, 10], 10);
        assert_eq!(c.points, vec![(1, 1), (10, 2)]);
        assert_eq!(c.area, 0.01);
    }
}
