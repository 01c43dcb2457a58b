//! "Since when?": which runs a recheck of many runs found a check firing in, and the first
//! of them (`probe recheck --since 30d --checks mine.toml`, docs/checks.md).
//!
//! The runs are chosen by [`select_runs`] (every run started within a time, with tags, of
//! a name, or all) and judged one after the other, oldest first, by the caller; each
//! result is folded into [`SinceWhen`] and dropped, so what is kept does not grow with the
//! number of runs: per watched oracle, two counts and two firings (the first and the
//! latest). The runs a check fires in are named as they are judged, one line per run.
//!
//! Watched are the oracles the user asked about: every user check (`check:<name>`) and
//! every `--oracle`. With neither, nothing is summed up.
//!
//! Depends on: `recheck`, `store`, `model`, `ids`, `oracle` (names), `report` (reproducers,
//! times), `cli`, `error`, `clock`.

use std::collections::BTreeMap;
use std::io::Write;

use serde_json::json;

use crate::cli::RecheckOpts;
use crate::error::CliError;
use crate::ids::{finding_id, FindingSetId, RunId};
use crate::model::Interaction;
use crate::recheck::{Recheck, RecheckOptions};
use crate::report::reproduce::{self, Form};
use crate::report::terminal::printable;
use crate::store::{RunSummary, Store};

use super::log::when;
use super::Out;

/// The runs a recheck judges, and whether they were chosen as a set (`--since`, `--tag`,
/// `--named`, `--all`) rather than one by one: a set is judged oldest first and reported
/// one line per run.
pub(crate) fn select_runs(
    store: &Store,
    opts: &RecheckOpts,
    err: &mut dyn Write,
) -> Result<(Vec<RunId>, bool), CliError> {
    let mut named = Vec::new();
    let mut several = false;
    for text in &opts.runs {
        // A campaign is its parts' runs, each judged again.
        if super::campaign::names_campaign(text) {
            let campaign = super::campaign::resolve(store, text)?;
            campaign.note_missing(err);
            several |= campaign.parts.len() > 1;
            for run in campaign.runs() {
                if !named.contains(&run) {
                    named.push(run);
                }
            }
            continue;
        }
        let run = store.resolve_run(text).map_err(CliError::lookup)?;
        super::note_run_name(store, text, err);
        if !named.contains(&run) {
            named.push(run);
        }
    }
    let as_set = opts.all
        || opts.since.is_some()
        || !opts.every_tag.is_empty()
        || opts.every_named.is_some();
    if !as_set {
        return Ok((named, several));
    }
    let cutoff = opts
        .since
        .map(|age| crate::clock::now_ms().saturating_sub(age.as_millis() as u64));
    let mut chosen: Vec<(u64, RunId)> = Vec::new();
    for run in store.runs()? {
        let matches = named.contains(&run.id)
            || (run.kind == "run"
                && cutoff.is_none_or(|c| run.started_ms >= c)
                && opts
                    .every_tag
                    .iter()
                    .all(|(k, v)| run.tags.get(k) == Some(v))
                && opts
                    .every_named
                    .as_ref()
                    .is_none_or(|n| run.name.as_deref() == Some(n.as_str())));
        if matches {
            chosen.push((run.started_ms, run.id));
        }
    }
    if chosen.is_empty() {
        return Err(CliError::Usage {
            message: format!("no stored run matches {}", describe_selection(opts)),
            hint: Some("`probe log` lists the stored runs, their names and tags".into()),
        });
    }
    // Oldest first: the first run a check fires in is the first one met.
    chosen.sort_by(|a, b| a.0.cmp(&b.0).then(a.1 .0.cmp(&b.1 .0)));
    Ok((chosen.into_iter().map(|(_, id)| id).collect(), true))
}

fn describe_selection(opts: &RecheckOpts) -> String {
    let mut parts = Vec::new();
    if let Some(age) = opts.since {
        parts.push(format!("--since {}", humantime::format_duration(age)));
    }
    for (k, v) in &opts.every_tag {
        parts.push(format!("--tag {k}={v}"));
    }
    if let Some(n) = &opts.every_named {
        parts.push(format!("--named {n}"));
    }
    if parts.is_empty() {
        "--all (the store holds no run)".into()
    } else {
        parts.join(" ")
    }
}

/// One firing of a watched oracle: the run, and its first finding of that oracle.
#[derive(Clone, Debug)]
struct Firing {
    run: RunId,
    started_ms: u64,
    name: Option<String>,
    tags: BTreeMap<String, String>,
    set: FindingSetId,
    /// The finding's place in its set, from 1.
    n: usize,
    operation: String,
    message: String,
    occurrences: u64,
    /// Its distinct findings of that oracle in that run.
    findings: usize,
    /// The interaction its reproducer is written from (none for a finding of a series).
    reproducer: Option<crate::ids::InteractionId>,
}

#[derive(Debug, Default)]
struct Watch {
    /// Runs it fired in.
    fired: u64,
    first: Option<Firing>,
    latest: Option<Firing>,
    /// Runs judged after its first firing in which it did not fire.
    silent_after_first: u64,
}

/// What the watched oracles did over the runs judged so far.
pub(crate) struct SinceWhen {
    watched: BTreeMap<String, Watch>,
    runs: u64,
    first_started: Option<u64>,
    last_started: Option<u64>,
}

impl SinceWhen {
    /// Watches every user check and every oracle named by `--oracle` (names or codes).
    pub(crate) fn new(options: &RecheckOptions, oracles: &[String]) -> SinceWhen {
        let mut watched = BTreeMap::new();
        for check in options.checks.iter() {
            watched.insert(
                format!("{}{}", crate::oracle::user::PREFIX, check.name),
                Watch::default(),
            );
        }
        for name in oracles {
            if let Some(info) = crate::oracle::find(name.trim()) {
                watched.insert(info.name.to_owned(), Watch::default());
            }
        }
        SinceWhen {
            watched,
            runs: 0,
            first_started: None,
            last_started: None,
        }
    }

    /// Folds in one run's recheck.
    pub(crate) fn add(&mut self, run: &RunSummary, result: &Recheck) {
        self.runs += 1;
        self.first_started = Some(
            self.first_started
                .map_or(run.started_ms, |s| s.min(run.started_ms)),
        );
        self.last_started = Some(
            self.last_started
                .map_or(run.started_ms, |s| s.max(run.started_ms)),
        );
        for (oracle, watch) in &mut self.watched {
            let mut of_oracle = result
                .set
                .findings
                .iter()
                .enumerate()
                .filter(|(_, f)| &f.oracle == oracle);
            let Some((index, finding)) = of_oracle.next() else {
                if watch.first.is_some() {
                    watch.silent_after_first += 1;
                }
                continue;
            };
            let firing = Firing {
                run: run.id,
                started_ms: run.started_ms,
                name: run.name.clone(),
                tags: run.tags.clone(),
                set: result.set_id,
                n: index + 1,
                operation: finding.operation.clone(),
                message: finding.message.clone(),
                occurrences: finding.occurrences(),
                findings: 1 + of_oracle.count(),
                reproducer: if finding.series.is_some() {
                    None
                } else {
                    finding
                        .reproducer
                        .or_else(|| finding.interactions.first().copied())
                },
            };
            watch.fired += 1;
            if watch.first.is_none() {
                watch.first = Some(firing.clone());
            }
            watch.latest = Some(firing);
        }
    }

    /// The watched oracles that fired in the run just added, with their distinct findings:
    /// for the run's line.
    fn fired_in(&self, run: RunId) -> Vec<(&str, usize)> {
        self.watched
            .iter()
            .filter_map(|(name, w)| {
                let latest = w.latest.as_ref().filter(|f| f.run == run)?;
                Some((name.as_str(), latest.findings))
            })
            .collect()
    }

    /// One line for a run judged as one of a set.
    pub(crate) fn write_run_line(
        &self,
        out: &mut Out<'_>,
        run: &RunSummary,
        result: &Recheck,
    ) -> Result<(), CliError> {
        let label = run
            .name
            .as_deref()
            .map(|n| format!(" {n}"))
            .unwrap_or_default();
        let fired: Vec<String> = self
            .fired_in(run.id)
            .into_iter()
            .map(|(name, n)| format!("{name} ({n})"))
            .collect();
        let fired = if fired.is_empty() {
            String::new()
        } else {
            format!(" · fires: {}", fired.join(", "))
        };
        writeln!(
            out,
            "{} run {}{label}: {} interactions, {} findings (+{} -{}){}{fired}",
            when(run.started_ms),
            run.id.short(12),
            result.stats.interactions,
            result.set.findings.len(),
            result.delta.gained.len(),
            result.delta.lost.len(),
            if result.new_set {
                ""
            } else {
                ", already stored"
            },
        )
    }

    /// The summary per watched oracle, after the runs.
    pub(crate) fn write_human(&self, store: &Store, out: &mut Out<'_>) -> Result<(), CliError> {
        if self.watched.is_empty() || self.runs < 2 {
            return Ok(());
        }
        let (Some(from), Some(to)) = (self.first_started, self.last_started) else {
            return Ok(());
        };
        writeln!(
            out,
            "\nsince when, over {} runs started {} to {}:",
            self.runs,
            when(from),
            when(to)
        )?;
        for (oracle, watch) in &self.watched {
            let Some(first) = &watch.first else {
                writeln!(out, "  {oracle}: fires in none of them")?;
                continue;
            };
            let after = watch.fired + watch.silent_after_first;
            let since = if watch.silent_after_first == 0 {
                format!("in every run since ({after} of {after})")
            } else {
                format!(
                    "in {} of the {after} runs since",
                    after - watch.silent_after_first
                )
            };
            writeln!(
                out,
                "  {oracle}: fires in {} of {} runs; first in run {} ({}{}), {since}",
                watch.fired,
                self.runs,
                first.run.short(12),
                when(first.started_ms),
                describe_run(first),
            )?;
            writeln!(
                out,
                "    {} {}: {} ({}×) · {}",
                finding_id(first.set, first.n),
                first.operation,
                printable(&first.message),
                first.occurrences,
                if first.findings > 1 {
                    format!("{} distinct findings", first.findings)
                } else {
                    "1 distinct finding".into()
                }
            )?;
            if let Some(line) = reproducer_line(store, first)? {
                writeln!(out, "    {line}")?;
            }
            writeln!(
                out,
                "    probe show {} --as curl",
                finding_id(first.set, first.n)
            )?;
        }
        Ok(())
    }

    /// The summary as JSON Lines: one `{"type":"since","data":{…}}` per watched oracle.
    pub(crate) fn write_json(&self, store: &Store, out: &mut Out<'_>) -> Result<(), CliError> {
        // One run's recheck line says it all, as for a person.
        if self.watched.is_empty() || self.runs < 2 {
            return Ok(());
        }
        for (oracle, watch) in &self.watched {
            let firing = |f: &Option<Firing>| -> Result<serde_json::Value, CliError> {
                let Some(f) = f else {
                    return Ok(serde_json::Value::Null);
                };
                Ok(json!({
                    "run": f.run,
                    "started_ms": f.started_ms,
                    "name": f.name,
                    "tags": f.tags,
                    "finding_set": f.set,
                    "finding": finding_id(f.set, f.n),
                    "operation": f.operation,
                    "message": f.message,
                    "occurrences": f.occurrences,
                    "findings": f.findings,
                    "reproducer": reproducer_line(store, f)?,
                }))
            };
            let line = json!({
                "type": "since",
                "data": {
                    "oracle": oracle,
                    "runs": self.runs,
                    "fired": watch.fired,
                    "silent_after_first": watch.silent_after_first,
                    "first": firing(&watch.first)?,
                    "latest": firing(&watch.latest)?,
                }
            });
            writeln!(out, "{line}")?;
        }
        Ok(())
    }
}

fn describe_run(f: &Firing) -> String {
    let mut parts = Vec::new();
    if let Some(name) = &f.name {
        parts.push(format!("named {name}"));
    }
    if !f.tags.is_empty() {
        let tags: Vec<String> = f.tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
        parts.push(format!("tags {}", tags.join(",")));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(", {}", parts.join(", "))
    }
}

/// The curl line of a firing's reproducer, when it is one request.
fn reproducer_line(store: &Store, f: &Firing) -> Result<Option<String>, CliError> {
    let Some(id) = f.reproducer else {
        return Ok(None);
    };
    let interaction = store.get::<Interaction>(id.0)?;
    Ok(Some(reproduce::of_interaction(
        store,
        &interaction,
        Form::Curl,
    )?))
}
