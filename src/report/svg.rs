//! Charts of the HTML page as inline SVG, drawn here: no charting library, nothing
//! fetched. A chart shows one quantity over the run's clock, one step curve per run (two
//! on a diff page), told apart by dash pattern and by a label at the line's end, so that it
//! reads without colour.
//!
//! Pure: curves in, markup out. Every text that goes in is escaped.
//!
//! Depends on: `report::timeline` (the curve type), `report::markup` (escaping).

use std::fmt::Write;

use super::markup::escape;
use super::timeline::Curve;

/// The drawing's size in SVG units; the page scales it to the window's width.
pub const WIDTH: f64 = 640.0;
pub const HEIGHT: f64 = 220.0;
/// Room for the axes' labels: left, right (the end labels), top, bottom.
const LEFT: f64 = 56.0;
const RIGHT: f64 = 52.0;
const TOP: f64 = 12.0;
const BOTTOM: f64 = 34.0;

/// How a line is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stroke {
    Solid,
    Dashed,
}

/// One curve of a chart.
pub struct Line<'a> {
    /// Written at the line's end before its count: `A`, `B`, or nothing.
    pub label: &'a str,
    pub curve: &'a Curve,
    /// The line's run ends here (milliseconds since its start): its last value holds
    /// until then.
    pub end_ms: u64,
    pub stroke: Stroke,
}

/// Maps run time and counts to drawing coordinates.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scale {
    pub end_ms: u64,
    pub max: u64,
}

impl Scale {
    pub fn x(&self, ms: u64) -> f64 {
        let span = (WIDTH - LEFT - RIGHT).max(1.0);
        LEFT + span * (ms.min(self.end_ms) as f64 / self.end_ms.max(1) as f64)
    }

    pub fn y(&self, value: u64) -> f64 {
        let span = (HEIGHT - TOP - BOTTOM).max(1.0);
        TOP + span * (1.0 - value.min(self.max) as f64 / self.max.max(1) as f64)
    }
}

/// A number for SVG: one decimal at most, no trailing `.0`.
fn num(v: f64) -> String {
    let r = (v * 10.0).round() / 10.0;
    if r.fract() == 0.0 {
        format!("{}", r as i64)
    } else {
        format!("{r:.1}")
    }
}

/// The path of a step curve: from zero at the start, up to each point's value at its time,
/// held to `end_ms`.
pub fn step_path(points: &[(u64, u64)], end_ms: u64, scale: &Scale) -> String {
    let mut d = format!("M{},{}", num(scale.x(0)), num(scale.y(0)));
    for (t, v) in points {
        let _ = write!(d, " H{} V{}", num(scale.x(*t)), num(scale.y(*v)));
    }
    let _ = write!(d, " H{}", num(scale.x(end_ms)));
    d
}

/// Round tick values from 0 to at least `max`: 0, then steps of 1, 2 or 5 times a power
/// of ten, at most six ticks.
pub fn ticks(max: u64) -> Vec<u64> {
    if max == 0 {
        return vec![0, 1];
    }
    let mut step = 1u64;
    'search: loop {
        for m in [1, 2, 5] {
            let s = step.saturating_mul(m);
            if max.div_ceil(s) <= 5 {
                step = s;
                break 'search;
            }
        }
        step = step.saturating_mul(10);
    }
    let top = max.div_ceil(step) * step;
    (0..=top / step).map(|i| i * step).collect()
}

/// `12k`, `1.5M`: a count short enough for an axis.
pub fn short_count(n: u64) -> String {
    match n {
        0..=9_999 => n.to_string(),
        10_000..=999_999 => format!("{}k", num(n as f64 / 1000.0)),
        _ => format!("{}M", num(n as f64 / 1_000_000.0)),
    }
}

/// `850ms`, `12.5s`, `3m20s`.
pub fn short_duration(ms: u64) -> String {
    match ms {
        0..=999 => format!("{ms}ms"),
        1_000..=119_999 => format!("{}s", num(ms as f64 / 1000.0)),
        _ => format!("{}m{:02}s", ms / 60_000, (ms % 60_000) / 1000),
    }
}

/// The chart of one quantity: `title` names it (the SVG's accessible name), `lines` are its
/// curves (each ending at its own run's end), the x axis the run's clock.
pub fn chart(title: &str, lines: &[Line<'_>]) -> String {
    let end_ms = lines.iter().map(|l| l.end_ms).max().unwrap_or(0).max(1);
    let max_value = lines.iter().map(|l| l.curve.total).max().unwrap_or(0);
    let y_ticks = ticks(max_value);
    let scale = Scale {
        end_ms,
        max: y_ticks.last().copied().unwrap_or(1).max(1),
    };
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg class="chart" viewBox="0 0 {} {}" role="img" aria-label="{}" preserveAspectRatio="xMinYMin meet"><title>{}</title>"#,
        num(WIDTH),
        num(HEIGHT),
        escape(title),
        escape(title)
    );
    // The grid and the y axis's values.
    for v in &y_ticks {
        let y = num(scale.y(*v));
        let _ = write!(
            s,
            r#"<line class="grid" x1="{}" x2="{}" y1="{y}" y2="{y}"/><text class="tick" x="{}" y="{y}" text-anchor="end" dy="0.35em">{}</text>"#,
            num(LEFT),
            num(WIDTH - RIGHT),
            num(LEFT - 6.0),
            short_count(*v)
        );
    }
    // The x axis: five slices of the run's time.
    for i in 0..=5u64 {
        let ms = end_ms * i / 5;
        let x = num(scale.x(ms));
        let _ = write!(
            s,
            r#"<line class="axis" x1="{x}" x2="{x}" y1="{}" y2="{}"/><text class="tick" x="{x}" y="{}" text-anchor="middle">{}</text>"#,
            num(HEIGHT - BOTTOM),
            num(HEIGHT - BOTTOM + 4.0),
            num(HEIGHT - BOTTOM + 16.0),
            short_duration(ms)
        );
    }
    let _ = write!(
        s,
        r#"<line class="axis" x1="{l}" x2="{r}" y1="{b}" y2="{b}"/><line class="axis" x1="{l}" x2="{l}" y1="{t}" y2="{b}"/>"#,
        l = num(LEFT),
        r = num(WIDTH - RIGHT),
        b = num(HEIGHT - BOTTOM),
        t = num(TOP),
    );
    let _ = write!(
        s,
        r#"<text class="tick" x="{}" y="{}" text-anchor="middle">time since the run's start</text>"#,
        num(LEFT + (WIDTH - LEFT - RIGHT) / 2.0),
        num(HEIGHT - 4.0)
    );
    let mut label_ys: Vec<f64> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let class = match line.stroke {
            Stroke::Solid => "line solid",
            Stroke::Dashed => "line dashed",
        };
        let _ = write!(
            s,
            r#"<path class="{class} l{i}" d="{}"/>"#,
            step_path(&line.curve.points, line.end_ms, &scale)
        );
        // The end label, moved down when it would sit on the one before.
        let mut y = scale.y(line.curve.total);
        for prev in &label_ys {
            if (y - prev).abs() < 12.0 {
                y = prev + 12.0;
            }
        }
        label_ys.push(y);
        let label = match line.label {
            "" => short_count(line.curve.total),
            text => format!("{} {}", escape(text), short_count(line.curve.total)),
        };
        let _ = write!(
            s,
            r#"<text class="end" x="{}" y="{}" dy="0.35em">{label}</text>"#,
            num(scale.x(line.end_ms) + 4.0),
            num(y),
        );
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_starts_at_zero_steps_at_each_point_and_holds_to_the_end() {
        let scale = Scale {
            end_ms: 10_000,
            max: 4,
        };
        let d = step_path(&[(2_500, 2), (5_000, 4)], 10_000, &scale);
        // x: 56 + 532 × t/10 s; y: 12 + 174 × (1 − v/4).
        assert_eq!(d, "M56,186 H189 V99 H322 V12 H588");
        // Past the end or above the top, a point is drawn at the edge.
        assert_eq!(
            step_path(&[(20_000, 9)], 10_000, &scale),
            "M56,186 H588 V12 H588"
        );
    }

    #[test]
    fn ticks_are_round_and_reach_the_maximum() {
        assert_eq!(ticks(0), [0, 1]);
        assert_eq!(ticks(4), [0, 1, 2, 3, 4]);
        assert_eq!(ticks(7), [0, 2, 4, 6, 8]);
        assert_eq!(ticks(23), [0, 5, 10, 15, 20, 25]);
        assert_eq!(ticks(100_000), [0, 20_000, 40_000, 60_000, 80_000, 100_000]);
        for max in [1, 3, 9, 11, 99, 101, 12_345, u64::MAX / 4] {
            let t = ticks(max);
            assert!(t.len() <= 6 && *t.last().unwrap() >= max, "{max}: {t:?}");
        }
    }

    #[test]
    fn a_chart_escapes_its_texts_and_draws_each_line() {
        let a = Curve::of_events(vec![1000, 2000], 4000);
        let b = Curve::of_events(vec![500], 3000);
        let svg = chart(
            "<script>alert(1)</script>",
            &[
                Line {
                    label: "A & co",
                    curve: &a,
                    end_ms: 4000,
                    stroke: Stroke::Solid,
                },
                Line {
                    label: "B",
                    curve: &b,
                    end_ms: 3000,
                    stroke: Stroke::Dashed,
                },
            ],
        );
        assert!(!svg.contains("<script>"));
        assert!(svg.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(svg.contains(">A &amp; co 2</text>"));
        assert!(svg.contains(">B 1</text>"));
        assert_eq!(svg.matches("<path ").count(), 2);
        assert!(svg.contains("line dashed"));
    }

    #[test]
    fn short_forms() {
        assert_eq!(short_count(950), "950");
        assert_eq!(short_count(12_500), "12.5k");
        assert_eq!(short_count(2_000_000), "2M");
        assert_eq!(short_duration(850), "850ms");
        assert_eq!(short_duration(12_500), "12.5s");
        assert_eq!(short_duration(200_000), "3m20s");
    }
}
