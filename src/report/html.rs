//! The campaign as a page: one self-contained HTML file for a run (`probe report <run>
//! --html`, and `reports/<run>.html` at the end of each run) and for two runs compared
//! (`probe diff A B --html`). docs/html-report.md describes what it shows.
//!
//! Self-contained: styles inline, charts inline SVG drawn by [`super::svg`], one small
//! script (sorting the operations table, the filter box, and marking the page ready or
//! failed), nothing fetched. Its numbers are report.json's ([`RunReport`]) and the store's aggregates
//! ([`Timeline`]); never one row per interaction, so a page stays small whatever the run's
//! size. Every text from the run (document, replies, messages) is escaped: a reply is
//! untrusted.
//!
//! The markup carries its numbers in `data-` attributes (`#totals [data-total]`, rows of
//! `#operations` with `data-operation`, `.finding` with `data-oracle` and `data-operation`)
//! for the tests and for anyone who reads the page with a script.
//!
//! Depends on: `report` (RunReport, timeline, svg), `diff` (RunDiff), `store` (reading the
//! exchanges and curves), `settings` (defaults), `ids`.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::svg::{self, Line, Stroke};
use super::timeline::{self, Exchange, ShownBody, Timeline};
use super::{transport_text, FindingReport, RunReport, Totals};
use crate::diff::{FindingEntry, RunDiff};
use crate::ids::{InteractionId, RunId};
use crate::store::{Store, StoreError};
use crate::text::thousands;

/// Findings shown with their request and reply; past these, a finding shows its curl and
/// replay lines only (the store has the rest), so that a run of thousands of findings still
/// makes a page of a few MB.
pub const EXCHANGES_SHOWN: usize = 200;

/// A body longer than this many lines is folded (`<details>`) until asked for.
const FOLD_LINES: usize = 12;

// The escaping lives in `markup`, below both this page and its charts (`svg`), which
// escape their labels too.
pub use super::markup::{escape, escape_text};

/// What a run's page is made of.
pub struct RunPage<'a> {
    pub report: &'a RunReport,
    pub timeline: &'a Timeline,
    /// The request and reply each finding shows, by index into `report.findings`.
    pub exchanges: &'a BTreeMap<usize, Exchange>,
}

/// The interactions that first showed each of a report's findings, as the page's findings
/// curve counts them.
pub fn findings_first(report: &RunReport) -> Vec<InteractionId> {
    report
        .findings
        .iter()
        .filter_map(|f| {
            f.interactions
                .first()
                .and_then(|h| timeline::interaction_id(h))
        })
        .collect()
}

/// Reads what the page of `run` needs from the store, beside its report, and renders it.
pub fn run_page(store: &Store, run: RunId, report: &RunReport) -> Result<String, StoreError> {
    let timeline = timeline::read(store, run, &findings_first(report))?;
    run_page_with(store, report, timeline)
}

/// The page of a run whose timeline is already counted (at a run's end, from its events).
pub fn run_page_with(
    store: &Store,
    report: &RunReport,
    timeline: Timeline,
) -> Result<String, StoreError> {
    let mut exchanges = BTreeMap::new();
    // In the page's order: causes, each one's findings lead first.
    for i in report
        .causes
        .iter()
        .flat_map(|c| c.findings.iter().copied())
        .take(EXCHANGES_SHOWN)
    {
        let Some(f) = report.findings.get(i) else {
            continue;
        };
        if let Some(id) = timeline::shown_interaction(store, f) {
            // An interaction the store lost shows its curl line only.
            if let Ok(x) = timeline::exchange(store, id) {
                exchanges.insert(i, x);
            }
        }
    }
    Ok(render_run(&RunPage {
        report,
        timeline: &timeline,
        exchanges: &exchanges,
    }))
}

const STYLE: &str = r#"
:root{--fg:#1b1b1b;--bg:#fff;--muted:#555;--line:#ccc;--code:#f4f4f4;--accent:#0b57a4}
@media (prefers-color-scheme:dark){:root{--fg:#e8e8e8;--bg:#161616;--muted:#aaa;--line:#444;--code:#222;--accent:#8ab4f8}}
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
header,main,footer{max-width:1100px;margin:0 auto;padding:0 16px}
h1{font-size:1.5em;margin:16px 0 4px;overflow-wrap:anywhere}
h2{font-size:1.25em;margin:28px 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px}
h3{font-size:1.05em;margin:18px 0 6px;overflow-wrap:anywhere}
a{color:var(--accent)}
a:focus,button:focus,summary:focus{outline:3px solid var(--accent);outline-offset:2px}
.skip{position:absolute;left:-999px}.skip:focus{left:8px;top:8px;background:var(--bg);padding:4px}
ul.series{columns:2 320px;margin:4px 0}
nav ul{list-style:none;padding:0;margin:8px 0;display:flex;flex-wrap:wrap;gap:4px 16px}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:8px 0}
dl.facts dt{color:var(--muted)}dl.facts dd{margin:0;overflow-wrap:anywhere}
.cards{display:flex;flex-wrap:wrap;gap:8px;margin:8px 0}
.card{border:1px solid var(--line);border-radius:6px;padding:6px 12px;min-width:120px}
.card b{display:block;font-size:1.35em}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(460px,100%),1fr));gap:12px}
figure{margin:0;border:1px solid var(--line);border-radius:6px;padding:8px}
figcaption{font-size:.92em;margin-bottom:4px}
svg.chart{width:100%;height:auto;display:block}
svg .grid{stroke:var(--line);stroke-width:1}
svg .axis{stroke:var(--muted);stroke-width:1}
svg .tick{fill:var(--muted);font-size:11px}
svg .end{fill:var(--fg);font-size:12px;font-weight:600}
svg .line{fill:none;stroke:var(--fg);stroke-width:2}
svg .line.dashed{stroke-dasharray:6 4;stroke:var(--muted)}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;width:100%;font-size:.92em}
th,td{border-bottom:1px solid var(--line);padding:4px 6px;text-align:left;vertical-align:top}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
th button{font:inherit;font-weight:600;background:none;border:0;padding:0;color:inherit;cursor:pointer;text-align:inherit}
th[aria-sort=ascending] button::after{content:" \2191"}
th[aria-sort=descending] button::after{content:" \2193"}
tr.never td:first-child::before{content:"\2717 ";font-weight:700}
.reason{color:var(--muted)}
pre{background:var(--code);padding:8px;overflow-x:auto;white-space:pre-wrap;overflow-wrap:anywhere;margin:4px 0;font-size:.88em}
code{overflow-wrap:anywhere}
.cause{border:1px solid var(--line);border-radius:6px;padding:4px 12px 10px;margin:12px 0}
.finding{border-top:1px dashed var(--line);margin-top:8px;padding-top:4px}
li.finding{border:0;margin:4px 0;padding:0}
.sev{font-weight:700;text-transform:uppercase;font-size:.8em;border:1px solid currentColor;border-radius:3px;padding:0 4px}
details>summary{cursor:pointer}
.ex{display:grid;grid-template-columns:repeat(auto-fit,minmax(300px,1fr));gap:8px}
.muted{color:var(--muted)}
#operations-table{table-layout:fixed;min-width:720px}
#operations-table col.c-op{width:22%}#operations-table col.c-n{width:6.2%}#operations-table col.c-why{width:22.2%}
#operations-table th{overflow-wrap:anywhere;vertical-align:bottom}
#operations-table td.n{white-space:normal;overflow-wrap:anywhere}
.verdict{font-size:1.2em;margin:8px 0;padding:8px 12px;border-radius:6px;border:2px solid var(--line)}
.verdict b{text-transform:uppercase;margin-right:8px}
.v-failed{border-color:#c62828}.v-passed{border-color:#2e7d32}.v-unreachable,.v-refused{border-color:#ef6c00}
a.card{color:inherit;text-decoration:none}
.sev-high b{color:#c62828}.sev-medium b{color:#ef6c00}
.filter{position:sticky;top:0;background:var(--bg);padding:8px 0;margin-top:16px;border-bottom:1px solid var(--line);z-index:1}
.filter input{font:inherit;padding:4px 8px;width:min(420px,60%)}
@media print{nav,.skip,.filter{display:none}}
"#;

/// Runs first, so that a failure of anything after it is marked on the page.
const HEAD_SCRIPT: &str = r#"window.onerror=function(m){document.documentElement.setAttribute("data-error",String(m));if(document.body){document.body.setAttribute("data-error",String(m))}};"#;

/// Sorting by the buttons in a sortable table's headers (numbers by `data-v`), the filter
/// box (rows and causes without its text are hidden), then the page marks itself ready.
const SCRIPT: &str = r##"
(function(){
  var tables=document.querySelectorAll("table.sortable");
  Array.prototype.forEach.call(tables,function(t){
    Array.prototype.forEach.call(t.querySelectorAll("th button"),function(b){
      b.addEventListener("click",function(){
        var th=b.parentNode,col=Array.prototype.indexOf.call(th.parentNode.children,th);
        var asc=th.getAttribute("aria-sort")!=="ascending";
        Array.prototype.forEach.call(t.querySelectorAll("th"),function(h){h.removeAttribute("aria-sort")});
        th.setAttribute("aria-sort",asc?"ascending":"descending");
        var num=th.getAttribute("data-type")==="num",body=t.tBodies[0];
        var rows=Array.prototype.slice.call(body.rows);
        rows.sort(function(r,s){
          var a=r.cells[col].getAttribute("data-v"),c=s.cells[col].getAttribute("data-v");
          var d=num?Number(a)-Number(c):a.localeCompare(c);
          if(d!==d){d=0}
          return asc?d:-d;
        });
        rows.forEach(function(r){body.appendChild(r)});
      });
    });
  });
  var box=document.getElementById("filter");
  if(box){
    var items=document.querySelectorAll("#operations-table tbody tr,#coverage-table tbody tr,#findings article.cause");
    var count=document.getElementById("filter-count");
    box.addEventListener("input",function(){
      var q=box.value.trim().toLowerCase(),shown=0;
      Array.prototype.forEach.call(items,function(e){
        var hit=!q||e.textContent.toLowerCase().indexOf(q)>=0;
        e.hidden=!hit;if(hit){shown++}
      });
      count.textContent=q?shown+" of "+items.length+" shown":"";
    });
  }
  document.body.setAttribute("data-ready","1");
})();
"##;

fn open_page(out: &mut String, title: &str) {
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta name=\"generator\" content=\"probe {}\">\
         <title>{}</title><script>{HEAD_SCRIPT}</script><style>{STYLE}</style></head>\n<body>\
         <a class=\"skip\" href=\"#main\">Skip to the content</a>\n",
        env!("CARGO_PKG_VERSION"),
        escape(title)
    );
}

fn close_page(out: &mut String) {
    let _ = write!(
        out,
        "<footer><p class=\"muted\">Written by probe {}. Every request and reply is in the \
         store: <code>probe show &lt;id&gt;</code>.</p></footer>\n<script>{SCRIPT}</script>\
         </body></html>\n",
        env!("CARGO_PKG_VERSION")
    );
}

fn nav(out: &mut String, links: &[(&str, &str)]) {
    out.push_str("<nav aria-label=\"sections\"><ul>");
    for (id, text) in links {
        let _ = write!(out, "<li><a href=\"#{id}\">{}</a></li>", escape(text));
    }
    out.push_str("</ul></nav>\n");
}

fn seconds(ms: u64) -> String {
    format!("{:.2} s", ms as f64 / 1000.0)
}

/// The settings of the run that differ from this build's defaults: (name, value,
/// default), the default `None` for a setting this build does not know.
pub fn changed_settings(
    settings: &BTreeMap<String, String>,
) -> Vec<(String, String, Option<String>)> {
    let defaults: BTreeMap<&str, &str> = crate::catalogue::all()
        .map(|d| (d.name, d.default))
        .collect();
    settings
        .iter()
        .filter_map(|(name, value)| match defaults.get(name.as_str()) {
            Some(d) if d == value => None,
            Some(d) => Some((name.clone(), value.clone(), Some((*d).to_owned()))),
            None => Some((name.clone(), value.clone(), None)),
        })
        .collect()
}

// One reason for the console, the page and the summary.
pub use super::coverage::never_2xx_reason;

/// An area for a person: grouped by thousands when large, with decimals when small (a run
/// of a fraction of a second has areas below 1).
fn area_text(area: f64) -> String {
    if area >= 1000.0 {
        thousands(area.round() as u64)
    } else if area >= 10.0 {
        format!("{area:.1}")
    } else {
        format!("{area:.2}")
    }
}

/// A total in a box: `value` as `data-value`, shown grouped by thousands when it is a
/// whole number.
fn card(out: &mut String, key: &str, value: &str, label: &str) {
    let shown = value
        .parse::<u64>()
        .map_or_else(|_| value.to_owned(), thousands);
    let _ = write!(
        out,
        "<div class=\"card\" data-total=\"{key}\" data-value=\"{}\"><b>{}</b>{}</div>",
        escape(value),
        escape(&shown),
        escape(label)
    );
}

fn curve_figure(out: &mut String, title: &str, unit: &str, lines: &[Line<'_>]) {
    let _ = write!(out, "<figure><figcaption><b>{}</b>", escape(title));
    for l in lines {
        let mean = l.curve.area / (l.end_ms.max(1) as f64 / 1000.0);
        let _ = write!(
            out,
            "<br><span data-curve=\"{}\" data-total=\"{}\" data-area=\"{:.1}\">{}{} at the end · area {} {unit}·s (mean {})</span>",
            escape(l.label),
            l.curve.total,
            l.curve.area,
            if lines.len() > 1 {
                format!("{}: ", escape(l.label))
            } else {
                String::new()
            },
            thousands(l.curve.total),
            area_text(l.curve.area),
            area_text(mean)
        );
    }
    out.push_str("</figcaption>");
    out.push_str(&svg::chart(title, lines));
    out.push_str("</figure>");
}

/// The page of one run.
pub fn render_run(page: &RunPage<'_>) -> String {
    let r = page.report;
    let run = &r.run;
    let tl = page.timeline;
    let short = &run.id[..12.min(run.id.len())];
    let mut out = String::with_capacity(64 * 1024);
    open_page(
        &mut out,
        &format!("probe run {short}: {} {}", run.api_title, run.api_version),
    );
    let _ = write!(
        out,
        "<header><h1>{} {} <span class=\"muted\">· probe run {}</span></h1>",
        escape(&run.api_title),
        escape(&run.api_version),
        escape(short)
    );
    let mut links = vec![("summary", "Summary"), ("findings", "Findings")];
    if !r.checks.is_empty() {
        links.push(("checks", "Your checks"));
    }
    links.extend([
        ("operations", "Operations"),
        ("status-codes", "Status codes"),
        ("curves", "Curves"),
        ("phases", "Phases"),
    ]);
    nav(&mut out, &links);
    // What a person looks for first: the verdict and the findings by severity, then the
    // findings, then the operations; the curves and the phases after.
    out.push_str("</header>\n<main id=\"main\">\n<section id=\"summary\" aria-labelledby=\"h-summary\"><h2 id=\"h-summary\">Summary</h2>");
    verdict_block(&mut out, r);
    out.push_str("<dl class=\"facts\">");
    summary_facts(&mut out, r);
    totals(&mut out, &r.totals);
    filter_box(&mut out);
    findings_section(&mut out, r, page.exchanges);
    checks_section(&mut out, r);
    operations_table(&mut out, r, tl);
    coverage_section(&mut out, r, tl);
    curves_section(&mut out, tl);
    phases_section(&mut out, r);
    oracles_section(&mut out, r);
    out.push_str("</main>\n");
    close_page(&mut out);
    out
}

/// The run's facts: its id, name, tags, document, budget, settings, files not read.
fn summary_facts(out: &mut String, r: &RunReport) {
    let run = &r.run;
    let mut fact = |k: &str, v: String| {
        let _ = write!(out, "<dt>{}</dt><dd>{v}</dd>", escape(k));
    };
    fact("run", format!("<code>{}</code>", escape(&run.id)));
    if let Some(name) = &run.name {
        fact("name", escape(name));
    }
    if !run.tags.is_empty() {
        fact(
            "tags",
            escape(
                &run.tags
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
        );
    }
    fact("document", escape(&run.document));
    fact("base URL", escape(&run.base_url));
    fact("probe", escape(&r.tool.version));
    fact("seed", run.seed.to_string());
    let budget = match (&run.budget, run.request_limit) {
        (Some(b), Some(n)) => format!("{} or {} requests", escape(b), thousands(n)),
        (Some(b), None) => escape(b),
        (None, Some(n)) => format!("{} requests", thousands(n)),
        (None, None) => "not recorded".into(),
    };
    fact("budget", budget);
    fact(
        "started",
        format!(
            "{} · took {} · {}",
            escape(&run.started),
            seconds(run.elapsed_ms),
            escape(&run.outcome)
        ),
    );
    let changed = changed_settings(&run.settings);
    fact(
        "settings",
        if changed.is_empty() {
            "the defaults".into()
        } else {
            changed
                .iter()
                .map(|(n, v, d)| {
                    format!(
                        "<code>{}={}</code>{}",
                        escape(n),
                        escape(v),
                        d.as_ref()
                            .map(|d| format!(
                                " <span class=\"muted\">(default {})</span>",
                                escape(d)
                            ))
                            .unwrap_or_default()
                    )
                })
                .collect::<Vec<_>>()
                .join("<br>")
        },
    );
    for file in &r.unreadable_files {
        fact("not read", escape(file));
    }
}

/// The cards of the run's totals, the requests by kind and those not answered; the end of
/// the summary section.
fn totals(out: &mut String, t: &Totals) {
    out.push_str("</dl><div class=\"cards\" id=\"totals\">");
    card(out, "requests", &t.requests.to_string(), "requests");
    card(
        out,
        "requests_answered",
        &t.requests_answered.to_string(),
        "answered",
    );
    card(
        out,
        "operations_tried",
        &t.operations_tried.to_string(),
        &format!("of {} operations tried", t.operations),
    );
    card(
        out,
        "operations_answered_2xx",
        &t.operations_answered_2xx.to_string(),
        "answered 2xx",
    );
    card(out, "findings", &t.findings.to_string(), "findings");
    card(out, "causes", &t.causes.to_string(), "causes");
    card(
        out,
        "requests_per_second",
        &format!("{:.0}", t.requests_per_second),
        "requests/s",
    );
    out.push_str("</div>");
    if !t.requests_by_kind.is_empty() {
        let mut by_kind: Vec<(&String, &u64)> = t.requests_by_kind.iter().collect();
        by_kind.sort_by_key(|(k, n)| (std::cmp::Reverse(**n), *k));
        let kinds: Vec<String> = by_kind
            .iter()
            .map(|(k, n)| format!("{} {}", thousands(**n), escape(k)))
            .collect();
        let _ = write!(
            out,
            "<p><b>Requests by kind:</b> {}{}</p>",
            kinds.join(" · "),
            if t.series > 0 {
                format!(" ({} series, {} steps)", t.series, t.series_steps)
            } else {
                String::new()
            }
        );
    }
    if !t.transport.is_empty() {
        let _ = write!(
            out,
            "<p><b>Without an HTTP answer:</b> {}</p>",
            escape(&transport_text(&t.transport))
        );
    }
    out.push_str("</section>\n");
}

/// The curves over the run's clock.
fn curves_section(out: &mut String, tl: &Timeline) {
    out.push_str("<section id=\"curves\" aria-labelledby=\"h-curves\"><h2 id=\"h-curves\">Curves over the run's clock</h2><div class=\"charts\">");
    // One line a chart: its end label is the count alone.
    let line = |label: &'static str, curve| Line {
        label,
        curve,
        end_ms: tl.end_ms,
        stroke: Stroke::Solid,
    };
    curve_figure(
        out,
        "operations answered 2xx",
        "operation",
        &[line("", &tl.operations_2xx)],
    );
    curve_figure(
        out,
        "distinct findings",
        "finding",
        &[line("", &tl.findings)],
    );
    curve_figure(out, "requests sent", "request", &[line("", &tl.requests)]);
    out.push_str("</div><p class=\"muted\">Area: the count summed over the run's time (count × seconds; a curve that rises early has a larger area). Mean: the area over the run's duration.</p></section>\n");
}

fn th(out: &mut String, text: &str, numeric: bool) {
    let _ = write!(
        out,
        "<th scope=\"col\"{}><button type=\"button\">{}</button></th>",
        if numeric {
            " class=\"n\" data-type=\"num\""
        } else {
            ""
        },
        escape(text)
    );
}

fn num_cell(out: &mut String, v: u64) {
    let _ = write!(out, "<td class=\"n\" data-v=\"{v}\">{}</td>", thousands(v));
}

/// The verdict of the run and its findings by severity, above everything else.
fn verdict_block(out: &mut String, r: &RunReport) {
    let v = super::summary::verdict(r);
    let _ = write!(
        out,
        "<div class=\"verdict v-{w}\" id=\"verdict\" data-verdict=\"{w}\"><b>{w}</b> {}</div><div class=\"cards\" id=\"severities\">",
        escape(&v.line),
        w = v.word,
    );
    for (severity, n) in super::summary::by_severity(r) {
        let _ = write!(
            out,
            "<a class=\"card sev-{severity}\" data-severity=\"{severity}\" data-value=\"{n}\" href=\"#findings\"><b>{n}</b>{severity}</a>"
        );
    }
    out.push_str("</div>");
}

/// A box whose text hides the findings, operations and status-code rows that do not hold
/// it (the page's script does the filtering; without a script, everything stays shown).
fn filter_box(out: &mut String) {
    out.push_str(
        "<div class=\"filter\"><label for=\"filter\">Filter findings and operations</label> \
         <input type=\"search\" id=\"filter\" placeholder=\"an operation, an oracle, a status, a word\" autocomplete=\"off\"> \
         <span id=\"filter-count\" class=\"muted\" aria-live=\"polite\"></span></div>\n",
    );
}

/// Per operation, the statuses its document declares that some answer gave, those none
/// gave, and the statuses answered that it does not declare.
fn coverage_section(out: &mut String, r: &RunReport, tl: &Timeline) {
    out.push_str("<section id=\"status-codes\" aria-labelledby=\"h-codes\"><h2 id=\"h-codes\">Status codes declared and seen</h2>");
    let rows: Vec<(&super::OperationReport, super::coverage::StatusCoverage)> = r
        .operations
        .iter()
        .map(|op| {
            let codes = super::coverage::codes_of(op, tl.status_codes.get(&op.operation));
            (op, super::coverage::status_coverage(op, &codes))
        })
        .collect();
    let declared: usize = rows.iter().map(|(_, c)| c.declared.len()).sum();
    let seen: usize = rows.iter().map(|(_, c)| c.seen().count()).sum();
    let _ = write!(
        out,
        "<p>{seen} of {declared} declared statuses answered at least once. An answer counts under the entry that covers it: its exact status, else its class (<code>4XX</code>), else <code>default</code>.</p>"
    );
    out.push_str("<div class=\"scroll\"><table id=\"coverage-table\"><thead><tr><th scope=\"col\">operation</th><th scope=\"col\">declared, answered</th><th scope=\"col\">declared, never answered</th><th scope=\"col\">answered, not declared</th></tr></thead><tbody>");
    for (op, c) in &rows {
        let seen: Vec<String> = c
            .seen()
            .map(|d| format!("{} ×{}", escape(&d.status), thousands(d.answers)))
            .collect();
        let missed: Vec<String> = c.not_seen().map(|d| escape(&d.status)).collect();
        let undeclared: Vec<String> = c
            .undeclared
            .iter()
            .map(|(s, n)| format!("{s} ×{}", thousands(*n)))
            .collect();
        let or_none = |v: Vec<String>| {
            if v.is_empty() {
                "<span class=\"muted\">—</span>".to_owned()
            } else {
                v.join(", ")
            }
        };
        let _ = write!(
            out,
            "<tr data-coverage=\"{}\" data-missed=\"{}\" data-undeclared=\"{}\"><td><code>{}</code><br><span class=\"muted\">{} {}</span></td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&op.operation),
            c.not_seen().count(),
            c.undeclared.len(),
            escape(&op.operation),
            escape(&op.method),
            escape(&op.path),
            or_none(seen),
            or_none(missed),
            or_none(undeclared)
        );
    }
    out.push_str("</tbody></table></div></section>\n");
}

fn operations_table(out: &mut String, r: &RunReport, tl: &Timeline) {
    out.push_str(
        "<section id=\"operations\" aria-labelledby=\"h-ops\"><h2 id=\"h-ops\">Operations</h2>",
    );
    let never = r
        .operations
        .iter()
        .filter(|o| !o.statuses.contains_key("2xx"))
        .count();
    let _ = write!(
        out,
        "<p>{} operations sent, {} never answered 2xx (marked ✗, with the reason probe knows). Sort by a column with its button.</p>",
        r.operations.len(),
        never
    );
    // Fixed widths: the table fits the page's column, the reason wrapping in its own.
    out.push_str("<p class=\"muted\">Requests by status class; time spent summed over the requests; first 2xx: when the first 2xx answer came, since the run's start.</p><div class=\"scroll\"><table class=\"sortable\" id=\"operations-table\"><colgroup><col class=\"c-op\"><col span=\"9\" class=\"c-n\"><col class=\"c-why\"></colgroup><thead><tr>");
    th(out, "operation", false);
    for (h, n) in [
        ("requests", true),
        ("2xx", true),
        ("3xx", true),
        ("4xx", true),
        ("5xx", true),
        ("no answer", true),
        ("time (ms)", true),
        ("first 2xx (ms)", true),
        ("findings", true),
    ] {
        th(out, h, n);
    }
    th(out, "never 2xx: why", false);
    out.push_str("</tr></thead><tbody>");
    for op in &r.operations {
        let class = |k: &str| op.statuses.get(k).copied().unwrap_or(0);
        let reason = never_2xx_reason(op, tl.status_codes.get(&op.operation));
        let _ = write!(
            out,
            "<tr data-operation=\"{}\" data-requests=\"{}\" data-1xx=\"{}\" data-2xx=\"{}\" data-3xx=\"{}\" data-4xx=\"{}\" data-5xx=\"{}\" data-transport=\"{}\" data-findings=\"{}\"{}>",
            escape(&op.operation),
            op.requests,
            class("1xx"),
            class("2xx"),
            class("3xx"),
            class("4xx"),
            class("5xx"),
            class("transport"),
            op.findings,
            if reason.is_some() { " class=\"never\"" } else { "" }
        );
        let _ = write!(
            out,
            "<td data-v=\"{}\"><code>{}</code><br><span class=\"muted\">{} {}</span></td>",
            escape(&op.operation),
            escape(&op.operation),
            escape(&op.method),
            escape(&op.path)
        );
        num_cell(out, op.requests);
        // 1xx answers are rare enough to count with 2xx's neighbours only in data-1xx.
        for k in ["2xx", "3xx", "4xx", "5xx", "transport"] {
            num_cell(out, class(k));
        }
        num_cell(out, op.time_spent_ms);
        match tl.first_2xx_ms.get(&op.operation) {
            Some(ms) => num_cell(out, *ms),
            None => out.push_str("<td class=\"n\" data-v=\"Infinity\">never</td>"),
        }
        num_cell(out, op.findings as u64);
        let _ = write!(
            out,
            "<td class=\"reason\" data-v=\"{}\">{}</td></tr>",
            escape(reason.as_deref().unwrap_or("")),
            escape(reason.as_deref().unwrap_or(""))
        );
    }
    out.push_str("</tbody></table></div>");
    if !r.skipped.is_empty() {
        out.push_str("<h3>Not tested</h3><ul>");
        for s in &r.skipped {
            let _ = write!(
                out,
                "<li data-skipped=\"{}\"><code>{}</code>: {} <span class=\"muted\">({})</span></li>",
                escape(&s.operation),
                escape(&s.operation),
                escape(&s.reason),
                if s.when == "load" {
                    "when the document was loaded"
                } else {
                    "during the run"
                }
            );
        }
        out.push_str("</ul>");
    }
    out.push_str("</section>\n");
}

fn headers_text(headers: &[(String, String)]) -> String {
    headers
        .iter()
        .map(|(k, v)| format!("{k}: {v}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn body_block(out: &mut String, what: &str, body: &ShownBody) {
    let note = if body.cut {
        format!(
            " (the first {} bytes shown of {}; <code>probe show</code> has all)",
            thousands(timeline::SHOWN_BODY as u64),
            thousands(body.bytes)
        )
    } else {
        format!(" ({} bytes)", thousands(body.bytes))
    };
    let lines = body.text.lines().count();
    if lines > FOLD_LINES || body.cut {
        let _ = write!(
            out,
            "<details><summary>{} body: {lines} lines{note}</summary><pre>{}</pre></details>",
            escape(what),
            escape_text(&body.text)
        );
    } else {
        let _ = write!(
            out,
            "<div class=\"muted\">{} body{note}</div><pre>{}</pre>",
            escape(what),
            escape_text(&body.text)
        );
    }
}

/// `420 µs`, `12.3 ms`, `2.50 s`.
fn elapsed(us: u64) -> String {
    match us {
        0..=999 => format!("{us} µs"),
        1_000..=999_999 => format!("{:.1} ms", us as f64 / 1000.0),
        _ => format!("{:.2} s", us as f64 / 1_000_000.0),
    }
}

fn exchange_block(out: &mut String, x: &Exchange) {
    let _ = write!(
        out,
        "<div class=\"ex\" data-interaction=\"{}\"><div><b>Request</b> <span class=\"muted\">(interaction <code>{}</code>, seq {})</span><pre>{} {}\n{}</pre>",
        x.interaction,
        x.interaction.short(12),
        x.seq,
        escape(&x.method),
        escape(&x.url),
        escape(&headers_text(&x.request_headers))
    );
    if let Some(b) = &x.request_body {
        body_block(out, "request", b);
    }
    out.push_str("</div><div>");
    match (x.status, &x.transport) {
        (Some(status), _) => {
            let _ = write!(
                out,
                "<b>Reply</b> <span class=\"muted\">(in {}{})</span><pre>HTTP {status}\n{}</pre>",
                elapsed(x.elapsed_us),
                if x.reply_truncated {
                    ", cut at send.maxBodyBytes"
                } else {
                    ""
                },
                escape(&headers_text(&x.reply_headers))
            );
            if let Some(b) = &x.reply_body {
                body_block(out, "reply", b);
            }
        }
        (None, transport) => {
            let _ = write!(
                out,
                "<b>No reply</b><pre>{}</pre>",
                escape(transport.as_deref().unwrap_or("no answer"))
            );
        }
    }
    out.push_str("</div></div>");
}

fn finding_block(
    out: &mut String,
    i: usize,
    f: &FindingReport,
    cause_message: &str,
    alone: bool,
    exchange: Option<&Exchange>,
    shown_limit: bool,
) {
    // The cause's heading says the lead's message; a finding says its own only when it
    // differs.
    let title = if f.message == cause_message {
        format!("<code>{}</code>", escape(&f.operation))
    } else {
        escape(&f.message)
    };
    // A cause of one finding has said it all in its heading.
    let heading = if alone {
        String::new()
    } else {
        format!(
            "<h4>{title} <span class=\"muted\">· {} time{}</span></h4>",
            f.occurrences,
            if f.occurrences == 1 { "" } else { "s" }
        )
    };
    let _ = write!(
        out,
        "<div class=\"finding\" id=\"finding-{i}\" data-oracle=\"{}\" data-operation=\"{}\" data-key=\"{}\">{heading}<dl class=\"facts\">",
        escape(&f.oracle),
        escape(&f.operation),
        escape(&f.key_by_message),
    );
    if !f.id.is_empty() {
        // What `probe show` and `probe replay` take.
        let _ = write!(
            out,
            "<dt>id</dt><dd><code class=\"finding-id\">{}</code></dd>",
            escape(&f.id)
        );
    }
    let _ = write!(
        out,
        "<dt>operation</dt><dd><code>{}</code></dd><dt>oracle</dt><dd>{}{}</dd><dt>intent</dt><dd>{}</dd>",
        escape(&f.operation),
        escape(&f.oracle),
        f.code
            .as_ref()
            .map(|c| format!(" ({})", escape(c)))
            .unwrap_or_default(),
        escape(&f.intent)
    );
    match &f.mutation {
        Some(m) => {
            let _ = write!(
                out,
                "<dt>mutation</dt><dd>{} at <code>{}</code>: {} <span class=\"muted\">(changed from case {})</span></dd>",
                escape(m.kind.as_str()),
                escape(&m.place),
                escape(&m.description),
                escape(&m.from)
            );
        }
        None => out.push_str("<dt>mutation</dt><dd>none: the request as generated</dd>"),
    }
    if let Some(series) = &f.series {
        let _ = write!(
            out,
            "<dt>series</dt><dd><code>{}</code></dd>",
            escape(&series[..12.min(series.len())])
        );
    }
    out.push_str("</dl>");
    if let Some(curl) = &f.curl {
        let _ = write!(
            out,
            "<div class=\"muted\">curl</div><pre class=\"curl\">{}</pre>",
            escape(curl)
        );
    }
    if !f.replay.is_empty() {
        let _ = write!(
            out,
            "<div class=\"muted\">replay</div><pre class=\"replay\">{}</pre>",
            escape(&f.replay)
        );
    }
    match exchange {
        Some(x) => exchange_block(out, x),
        None if shown_limit => {
            let _ = write!(
                out,
                "<p class=\"muted\">Request and reply not shown: the page shows those of the first {EXCHANGES_SHOWN} findings (<code>probe show</code> has every one).</p>"
            );
        }
        None => {}
    }
    out.push_str("</div>");
}

fn findings_section(out: &mut String, r: &RunReport, exchanges: &BTreeMap<usize, Exchange>) {
    let _ = write!(
        out,
        "<section id=\"findings\" aria-labelledby=\"h-findings\"><h2 id=\"h-findings\">Findings by cause</h2><p>{} distinct findings, {} causes (one cause: one oracle, one fault seen in one or more operations).</p>",
        r.findings.len(),
        r.causes.len()
    );
    let mut shown = 0usize;
    for (n, c) in r.causes.iter().enumerate() {
        let _ = write!(
            out,
            "<article class=\"cause\" id=\"cause-{n}\" data-oracle=\"{}\" data-findings=\"{}\"><h3><span class=\"sev\">{}</span> [{}{}] {}</h3><p class=\"muted\">seen {} time{} in {}</p>",
            escape(&c.oracle),
            c.findings.len(),
            escape(&c.severity),
            c.code
                .as_ref()
                .map(|code| format!("{} ", escape(code)))
                .unwrap_or_default(),
            escape(&c.oracle),
            escape(&c.message),
            c.occurrences,
            if c.occurrences == 1 { "" } else { "s" },
            escape(&c.operations.join(", "))
        );
        for &i in &c.findings {
            let Some(f) = r.findings.get(i) else {
                continue;
            };
            shown += 1;
            finding_block(
                out,
                i,
                f,
                &c.message,
                c.findings.len() == 1,
                exchanges.get(&i),
                shown > EXCHANGES_SHOWN,
            );
        }
        out.push_str("</article>");
    }
    if r.causes.is_empty() {
        out.push_str("<p>None.</p>");
    }
    out.push_str("</section>\n");
}

fn phases_section(out: &mut String, r: &RunReport) {
    out.push_str(
        "<section id=\"phases\" aria-labelledby=\"h-phases\"><h2 id=\"h-phases\">Phases</h2>",
    );
    if r.phases.is_empty() {
        out.push_str("<p class=\"muted\">Not recorded (a report of an earlier probe).</p>");
    } else {
        out.push_str("<div class=\"scroll\"><table><thead><tr><th scope=\"col\">phase</th><th scope=\"col\" class=\"n\">from</th><th scope=\"col\" class=\"n\">to</th><th scope=\"col\" class=\"n\">duration</th></tr></thead><tbody>");
        for p in &r.phases {
            let _ = write!(
                out,
                "<tr data-phase=\"{}\"><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
                escape(&p.name),
                escape(&p.name),
                svg::short_duration(p.from_ms),
                svg::short_duration(p.to_ms),
                svg::short_duration(p.to_ms.saturating_sub(p.from_ms))
            );
        }
        out.push_str("</tbody></table></div>");
    }
    let series: Vec<String> = r
        .oracles
        .iter()
        .filter_map(|o| {
            o.series_judged.filter(|n| *n > 0).map(|n| {
                format!(
                    "{} judged {n} series ({} ms of steps)",
                    o.name,
                    o.series_time_ms.unwrap_or(0)
                )
            })
        })
        .collect();
    if r.totals.series > 0 {
        let _ = write!(
            out,
            "<p>Series: {} recorded, {} steps, sent within the rounds; judged by:</p><ul class=\"series\">{}</ul>",
            r.totals.series,
            r.totals.series_steps,
            series
                .iter()
                .map(|s| format!("<li>{}</li>", escape(s)))
                .collect::<String>()
        );
    }
    out.push_str("</section>\n");
}

/// What each check the user wrote did: the exchanges it judged, those it found failing,
/// and those it applied to and could not judge (never counted as passes), with the first of
/// those and why; then how each program check that failed failed. The numbers are
/// report.json's `checks`, so the page and the file agree. Nothing without checks.
fn checks_section(out: &mut String, r: &RunReport) {
    if r.checks.is_empty() {
        return;
    }
    let _ = write!(
        out,
        "<section id=\"checks\" aria-labelledby=\"h-checks\"><h2 id=\"h-checks\">Your checks</h2>\
         <p>{} check{} judged this run (docs/checks.md). An exchange a check could not judge is \
         not a pass.</p><div class=\"scroll\"><table><thead><tr>",
        r.checks.len(),
        if r.checks.len() == 1 { "" } else { "s" },
    );
    for (text, numeric) in [
        ("check", false),
        ("judged", true),
        ("found failing", true),
        ("not judged", true),
        ("distinct findings", true),
        ("first not judged", false),
    ] {
        th(out, text, numeric);
    }
    out.push_str("</tr></thead><tbody>");
    for c in &r.checks {
        let findings = r.findings.iter().filter(|f| f.oracle == c.oracle).count();
        let first = c
            .first_not_judged
            .as_ref()
            .map(|n| format!("seq {}: {}", n.seq, escape(&n.reason)))
            .unwrap_or_default();
        let _ = write!(
            out,
            "<tr data-check=\"{name}\" data-judged=\"{}\" data-failed=\"{}\" data-not-judged=\"{}\" data-findings=\"{findings}\"><td>{name}</td>",
            c.judged,
            c.failed,
            c.not_judged,
            name = escape(&c.name),
        );
        for n in [c.judged, c.failed, c.not_judged, findings as u64] {
            num_cell(out, n);
        }
        let _ = write!(out, "<td>{first}</td></tr>");
    }
    out.push_str("</tbody></table></div>");
    if !r.check_failures.is_empty() {
        out.push_str(
            "<p>Program checks that failed (the run went on):</p><ul class=\"check-failures\">",
        );
        for f in &r.check_failures {
            let _ = write!(out, "<li>{}</li>", escape(f));
        }
        out.push_str("</ul>");
    }
    out.push_str("</section>\n");
}

fn oracles_section(out: &mut String, r: &RunReport) {
    out.push_str("<section id=\"oracles\" aria-labelledby=\"h-oracles\"><h2 id=\"h-oracles\">Oracles</h2><details><summary>");
    let enabled = r.oracles.iter().filter(|o| o.enabled).count();
    let _ = write!(
        out,
        "{enabled} of {} oracles judged this run</summary><div class=\"scroll\"><table><thead><tr><th scope=\"col\">oracle</th><th scope=\"col\">on</th><th scope=\"col\" class=\"n\">findings</th><th scope=\"col\" class=\"n\">occurrences</th></tr></thead><tbody>",
        r.oracles.len()
    );
    for o in &r.oracles {
        let _ = write!(
            out,
            "<tr><td>{}{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            escape(&o.name),
            o.code
                .as_ref()
                .map(|c| format!(" ({})", escape(c)))
                .unwrap_or_default(),
            if o.enabled { "yes" } else { "off" },
            o.findings,
            o.occurrences
        );
    }
    out.push_str("</tbody></table></div></details></section>\n");
}

/// What the page of two runs compared is made of.
pub struct DiffPage<'a> {
    pub diff: &'a RunDiff,
    pub a: &'a Timeline,
    pub b: &'a Timeline,
}

/// Reads both runs' curves (the findings of the finding set of each the diff compared) and renders the page of `diff`.
pub fn diff_page(store: &Store, diff: &RunDiff) -> Result<String, StoreError> {
    let firsts = |set: Option<crate::ids::FindingSetId>| -> Result<Vec<_>, StoreError> {
        Ok(match set {
            Some(id) => store
                .get::<crate::model::FindingSet>(id.0)?
                .findings
                .iter()
                .filter_map(|f| f.interactions.first().copied())
                .collect(),
            None => Vec::new(),
        })
    };
    let a = timeline::read(store, diff.a.run, &firsts(diff.a.finding_set)?)?;
    let b = timeline::read(store, diff.b.run, &firsts(diff.b.finding_set)?)?;
    Ok(render_diff(&DiffPage { diff, a: &a, b: &b }))
}

fn side_label(s: &crate::diff::RunSide) -> String {
    match &s.name {
        Some(n) => format!("{} ({n})", s.run.short(12)),
        None => s.run.short(12),
    }
}

fn entries(out: &mut String, id: &str, title: &str, list: &[&FindingEntry]) {
    let _ = write!(
        out,
        "<section id=\"{id}\" aria-labelledby=\"h-{id}\"><h3 id=\"h-{id}\">{} ({})</h3>",
        escape(title),
        list.len()
    );
    if list.is_empty() {
        out.push_str("<p class=\"muted\">None.</p>");
    } else {
        out.push_str("<ul>");
        for f in list {
            let _ = write!(
                out,
                "<li class=\"finding\" data-oracle=\"{}\" data-operation=\"{}\" data-key=\"{}\"><span class=\"sev\">{}</span> [{}{}] {} <span class=\"muted\">· <code>{}</code> · {} time{}</span></li>",
                escape(&f.oracle),
                escape(&f.operation),
                escape(&f.key_by_message),
                escape(&format!("{:?}", f.severity).to_ascii_lowercase()),
                f.code
                    .as_ref()
                    .map(|c| format!("{} ", escape(c)))
                    .unwrap_or_default(),
                escape(&f.oracle),
                escape(&f.message),
                escape(&f.operation),
                f.occurrences,
                if f.occurrences == 1 { "" } else { "s" }
            );
        }
        out.push_str("</ul>");
    }
    out.push_str("</section>");
}

/// The page of two runs compared: A is the earlier, B the newer ("gained": in B only).
pub fn render_diff(page: &DiffPage<'_>) -> String {
    let d = page.diff;
    let (la, lb) = (side_label(&d.a), side_label(&d.b));
    let mut out = String::with_capacity(32 * 1024);
    open_page(&mut out, &format!("probe diff {la} → {lb}"));
    let _ = write!(
        out,
        "<header><h1>probe diff <span class=\"muted\">A</span> {} → <span class=\"muted\">B</span> {}</h1>",
        escape(&la),
        escape(&lb)
    );
    nav(
        &mut out,
        &[
            ("summary", "Summary"),
            ("curves", "Curves"),
            ("findings", "Findings"),
            ("operations", "Operations"),
        ],
    );
    out.push_str("</header>\n<main id=\"main\"><section id=\"summary\" aria-labelledby=\"h-summary\"><h2 id=\"h-summary\">Summary</h2><div class=\"scroll\"><table id=\"sides\"><thead><tr><th scope=\"col\"></th><th scope=\"col\" class=\"n\">A</th><th scope=\"col\" class=\"n\">B</th></tr></thead><tbody>");
    diff_summary(&mut out, d);
    diff_curves(&mut out, page);
    diff_findings(&mut out, page);
    diff_operations(&mut out, d);
    out.push_str("</section></main>\n");
    close_page(&mut out);
    out
}

/// The two sides' facts in a table, and the cards of findings gained, lost and kept.
fn diff_summary(out: &mut String, d: &RunDiff) {
    let ms = |v: Option<u64>| v.map_or("unfinished".to_owned(), seconds);
    let rate = |v: Option<f64>| v.map_or("-".to_owned(), |r| format!("{r:.0}/s"));
    let rows = [
        (
            "run",
            format!("<span title=\"{}\">{}</span>", d.a.run, d.a.run.short(12)),
            format!("<span title=\"{}\">{}</span>", d.b.run, d.b.run.short(12)),
        ),
        ("seed", d.a.seed.to_string(), d.b.seed.to_string()),
        ("requests", thousands(d.a.requests), thousands(d.b.requests)),
        ("time", ms(d.a.elapsed_ms), ms(d.b.elapsed_ms)),
        ("rate", rate(d.a.rate), rate(d.b.rate)),
        (
            "findings",
            d.a.findings.to_string(),
            d.b.findings.to_string(),
        ),
        (
            "outcome",
            escape(d.a.outcome.as_deref().unwrap_or("unfinished")),
            escape(d.b.outcome.as_deref().unwrap_or("unfinished")),
        ),
    ];
    for (k, a, b) in rows {
        let _ = write!(
            out,
            "<tr><th scope=\"row\">{k}</th><td class=\"n\"><code>{a}</code></td><td class=\"n\"><code>{b}</code></td></tr>"
        );
    }
    out.push_str("</tbody></table></div>");
    let f = &d.findings;
    let _ = write!(out, "<div class=\"cards\" id=\"totals\">");
    card(
        out,
        "gained",
        &f.gained.len().to_string(),
        "findings gained (B only)",
    );
    card(
        out,
        "lost",
        &f.lost.len().to_string(),
        "findings lost (A only)",
    );
    card(out, "kept", &f.kept.len().to_string(), "findings kept");
    out.push_str("</div></section>\n");
}

/// The curves of both runs, each over its own clock.
fn diff_curves(out: &mut String, page: &DiffPage<'_>) {
    out.push_str("<section id=\"curves\" aria-labelledby=\"h-curves\"><h2 id=\"h-curves\">Curves over each run's clock</h2><p class=\"muted\">A dashed, B solid; each line ends at its run's end.</p><div class=\"charts\">");
    let pair = |ca, cb| {
        [
            Line {
                label: "A",
                curve: ca,
                end_ms: page.a.end_ms,
                stroke: Stroke::Dashed,
            },
            Line {
                label: "B",
                curve: cb,
                end_ms: page.b.end_ms,
                stroke: Stroke::Solid,
            },
        ]
    };
    curve_figure(
        out,
        "operations answered 2xx",
        "operation",
        &pair(&page.a.operations_2xx, &page.b.operations_2xx),
    );
    curve_figure(
        out,
        "distinct findings",
        "finding",
        &pair(&page.a.findings, &page.b.findings),
    );
    curve_figure(
        out,
        "requests sent",
        "request",
        &pair(&page.a.requests, &page.b.requests),
    );
    out.push_str("</div></section>\n");
}

/// The finding sets compared, and the findings gained, lost and kept.
fn diff_findings(out: &mut String, page: &DiffPage<'_>) {
    let f = &page.diff.findings;
    out.push_str("<section id=\"findings\" aria-labelledby=\"h-findings\"><h2 id=\"h-findings\">Findings</h2><p class=\"muted\">Compared by oracle, operation and message key.</p><ul class=\"sets\">");
    for (name, side) in [("A", &page.diff.a), ("B", &page.diff.b)] {
        let set = match side.finding_set {
            Some(id) => format!(
                "finding set <code>{}</code> ({}; probe {}, {} oracles, {} findings)",
                id.short(12),
                side.finding_set_choice.map_or("-", |c| c.as_str()),
                escape_text(side.finding_set_judged_by.as_deref().unwrap_or("?")),
                side.finding_set_oracles.len(),
                side.findings
            ),
            None => "no finding set".to_owned(),
        };
        out.push_str(&format!("<li>{name}: {set}</li>"));
    }
    out.push_str("</ul>");
    entries(
        out,
        "gained",
        "Gained: in B, not in A",
        &f.gained.iter().collect::<Vec<_>>(),
    );
    entries(
        out,
        "lost",
        "Lost: in A, not in B",
        &f.lost.iter().collect::<Vec<_>>(),
    );
    let _ = write!(
        out,
        "<section id=\"kept\" aria-labelledby=\"h-kept\"><h3 id=\"h-kept\">Kept ({})</h3>",
        f.kept.len()
    );
    if f.kept.is_empty() {
        out.push_str("<p class=\"muted\">None.</p>");
    } else {
        out.push_str("<details><summary>Show the findings on both sides</summary><ul>");
        for k in &f.kept {
            let _ = write!(
                out,
                "<li class=\"finding\" data-oracle=\"{}\" data-operation=\"{}\" data-key=\"{}\">[{}] {} <span class=\"muted\">· {} → {} times</span></li>",
                escape(&k.finding.oracle),
                escape(&k.finding.operation),
                escape(&k.finding.key_by_message),
                escape(&k.finding.oracle),
                escape(&k.finding.message),
                k.before,
                k.after
            );
        }
        out.push_str("</ul></details>");
    }
    out.push_str("</section></section>\n");
}

/// The operations whose status classes differ between the sides.
fn diff_operations(out: &mut String, d: &RunDiff) {
    out.push_str(
        "<section id=\"operations\" aria-labelledby=\"h-ops\"><h2 id=\"h-ops\">Operations</h2>",
    );
    if d.ok_gained.is_empty() && d.ok_lost.is_empty() {
        out.push_str("<p>Operations answered 2xx: the same on both sides.</p>");
    } else {
        let _ = write!(
            out,
            "<p>Answered 2xx in B only: <span id=\"ok-gained\">{}</span>. In A only: <span id=\"ok-lost\">{}</span>.</p>",
            escape(&d.ok_gained.join(", ")),
            escape(&d.ok_lost.join(", "))
        );
    }
    let changed: Vec<_> = d.operations.iter().filter(|o| o.a != o.b).collect();
    let _ = write!(
        out,
        "<p>Status classes: {} of {} operations differ.</p>",
        changed.len(),
        d.operations.len()
    );
    if !changed.is_empty() {
        out.push_str(
            "<div class=\"scroll\"><table class=\"sortable\" id=\"classes-table\"><thead><tr>",
        );
        th(out, "operation", false);
        for h in ["2xx A→B", "3xx A→B", "4xx A→B", "5xx A→B", "no answer A→B"] {
            th(out, h, true);
        }
        out.push_str("</tr></thead><tbody>");
        for o in changed {
            let _ = write!(
                out,
                "<tr data-operation=\"{}\"><td data-v=\"{}\"><code>{}</code></td>",
                escape(&o.operation),
                escape(&o.operation),
                escape(&o.operation)
            );
            for i in [2usize, 3, 4, 5, 0] {
                let delta = o.b[i] as i64 - o.a[i] as i64;
                let _ = write!(
                    out,
                    "<td class=\"n\" data-v=\"{delta}\">{} → {}{}</td>",
                    thousands(o.a[i]),
                    thousands(o.b[i]),
                    if delta == 0 {
                        String::new()
                    } else {
                        format!(" <span class=\"muted\">({delta:+})</span>")
                    }
                );
            }
            out.push_str("</tr>");
        }
        out.push_str("</tbody></table></div>");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_leaves_no_markup_and_no_way_out_of_an_attribute() {
        assert_eq!(
            escape(r#"<img src=x onerror="alert('1')"> & co"#),
            "&lt;img src=x onerror=&quot;alert(&#39;1&#39;)&quot;&gt; &amp; co"
        );
        assert_eq!(escape("a\u{0}b\u{1b}[31m\tc\n"), "a\\u{0}b\\u{1b}[31m\tc\n");
        assert_eq!(escape("<probe:secret>"), "&lt;probe:secret&gt;");
        assert_eq!(escape("ünïcode ✓"), "ünïcode ✓");
        assert_eq!(
            escape_text(r#"{"a": "<b>&</b>"}"#),
            r#"{"a": "&lt;b&gt;&amp;&lt;/b&gt;"}"#
        );
        assert_eq!(escape_text("\"quoted\"\u{7}"), "\"quoted\"\\u{7}");
    }

    #[test]
    fn numbers_are_grouped_by_thousands() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
    }

    #[test]
    fn only_settings_that_differ_from_the_defaults_are_named() {
        let mut settings: BTreeMap<String, String> = crate::catalogue::all()
            .map(|d| (d.name.to_owned(), d.default.to_owned()))
            .collect();
        assert!(changed_settings(&settings).is_empty());
        settings.insert("send.timeout".into(), "2s".into());
        settings.insert("from.the.future".into(), "1".into());
        assert_eq!(
            changed_settings(&settings),
            vec![
                ("from.the.future".into(), "1".into(), None),
                ("send.timeout".into(), "2s".into(), Some("10s".into())),
            ]
        );
    }
}
