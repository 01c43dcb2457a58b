//! `probe show <id>`: any stored object, for a person or as JSON.
//!
//! The id may be a full id, a unique prefix of at least 4 hex characters, a run name (the
//! newest run of that name, said on stderr when several share it), or a finding's id
//! `<finding set id>:<n>` ([`crate::ids::finding_id`]). Bodies are shown as text when they
//! are UTF-8, else as base64; in JSON a body is `{"text": …}` or `{"bytes": base64}` (plus
//! `"blob"` and `"len"` when stored as a blob).
//!
//! A run is a summary: its finding sets labelled (run-time or recheck, when, which probe,
//! which oracles, how many findings; the one `probe diff` compares marked), that set's
//! findings with their ids, and its interactions only with `--interactions` or `-n N`.
//!
//! With `--as curl|httpie|python` it prints a reproducer instead (`report::reproduce`): of
//! an interaction, of a finding (`<finding set id>:<n>`: its first interaction, or for a
//! series oracle's finding a shell script of the whole series), or of a series.
//!
//! Depends on: `store`, `model`, `ids`, `cli`, `error`, `report::reproduce`, `diff` (which
//! set a comparison takes), `recheck` and `oracle` (the oracles a run's settings switch on).

use crate::report::terminal::printable;
use std::io::Write;
use std::path::Path;

use base64::Engine;
use serde_json::{json, Value};

use crate::cli::{ReproducerForm, ShowOpts};
use crate::error::CliError;
use crate::exit;
use crate::ids::{finding_id, Digest, FindingSetId, RunId};
use crate::model::{BodyBytes, FindingSet, Interaction, Outcome, RunEnd, RunStart, TestCase};
use crate::report::reproduce::{self, Form};
use crate::store::{Blob, ObjectKind, Store};

use super::log::when;
use super::Out;

fn to_json(v: &impl serde::Serialize) -> Result<Value, CliError> {
    serde_json::to_value(v).map_err(|e| CliError::internal("cannot encode the object as JSON", e))
}

/// Text when UTF-8, else base64.
fn render(bytes: &[u8]) -> (bool, String) {
    match std::str::from_utf8(bytes) {
        Ok(t) => (true, t.to_owned()),
        Err(_) => (
            false,
            base64::engine::general_purpose::STANDARD.encode(bytes),
        ),
    }
}

fn body_json(store: &Store, b: &BodyBytes) -> Result<Value, CliError> {
    let bytes = store.body_bytes(b)?;
    let (text, shown) = render(&bytes);
    let mut v = if text {
        json!({"text": shown})
    } else {
        json!({"bytes": shown})
    };
    if let BodyBytes::Blob { id, len } = b {
        v["blob"] = json!(id.to_string());
        v["len"] = json!(len);
    }
    Ok(v)
}

fn write_body(store: &Store, out: &mut Out<'_>, b: &BodyBytes) -> Result<(), CliError> {
    let bytes = store.body_bytes(b)?;
    let (text, shown) = render(&bytes);
    if let BodyBytes::Blob { id, .. } = b {
        writeln!(out, "  (blob {}, {} bytes)", id.short(12), bytes.len())?;
    }
    if !text {
        writeln!(out, "  (base64)")?;
    }
    writeln!(out, "{shown}")
}

/// Runs `probe show`.
pub fn exec_show(
    opts: &ShowOpts,
    store_dir: &Path,
    out: &mut Out<'_>,
    err: &mut dyn Write,
) -> Result<u8, CliError> {
    let store = Store::open_existing(store_dir)?;
    if let Some(form) = opts.reproducer {
        let text = reproducer(&store, &opts.id, form)?;
        write!(out, "{text}")?;
        if !text.ends_with('\n') {
            writeln!(out)?;
        }
        return Ok(exit::OK);
    }
    if let Some((set_id, n, set)) = finding_named(&store, &opts.id)? {
        let f = &set.findings[n - 1];
        if opts.json {
            let line = json!({
                "type": "finding",
                "id": format!("{}:{n}", set_id.0.to_hex()),
                "data": to_json(f)?,
            });
            writeln!(out, "{line}")?;
        } else {
            show_finding(&set, set_id, n, out)?;
        }
        return Ok(exit::OK);
    }
    let (kind, id) = store.resolve(&opts.id).map_err(CliError::lookup)?;
    if kind == ObjectKind::RunStart {
        super::note_run_name(&store, &opts.id, err);
    }
    if opts.json {
        let data = show_json(&store, kind, id)?;
        let line = json!({"type": kind.name(), "id": id.to_hex(), "data": data});
        writeln!(out, "{line}")?;
    } else {
        let listed = match (opts.interactions, opts.first) {
            (_, Some(n)) => Some(n),
            (true, None) => Some(usize::MAX),
            (false, None) => None,
        };
        show_human(&store, kind, id, listed, out)?;
    }
    Ok(exit::OK)
}

/// The finding `text` names as `<finding set id>:<n>` (n counted from 1), with its set;
/// `None` when `text` is not of that form. A run name may hold a `:` too, so only a hex
/// prefix before it counts.
pub(crate) fn finding_named(
    store: &Store,
    text: &str,
) -> Result<Option<(FindingSetId, usize, FindingSet)>, CliError> {
    let text = text.trim();
    let Some((set_text, n_text)) = text
        .split_once(':')
        .filter(|(set, _)| !set.is_empty() && set.bytes().all(|b| b.is_ascii_hexdigit()))
    else {
        return Ok(None);
    };
    let (kind, id) = store.resolve(set_text).map_err(CliError::lookup)?;
    if kind != ObjectKind::FindingSet {
        return Err(CliError::usage(format!(
            "`{set_text}` is a {}, not a finding set: name a finding as <finding set id>:<n>",
            kind.name()
        )));
    }
    let set = store.get::<FindingSet>(id)?;
    let n = n_text
        .parse::<usize>()
        .ok()
        .filter(|n| (1..=set.findings.len()).contains(n))
        .ok_or_else(|| {
            CliError::usage(format!(
                "finding set {} has findings 1 to {}; `{n_text}` is none of them",
                id.short(12),
                set.findings.len()
            ))
        })?;
    Ok(Some((FindingSetId(id), n, set)))
}

/// One finding for a person: what it is, where it was seen, how to reproduce it.
fn show_finding(
    set: &FindingSet,
    set_id: FindingSetId,
    n: usize,
    out: &mut Out<'_>,
) -> Result<(), CliError> {
    let f = &set.findings[n - 1];
    let short = finding_id(set_id, n);
    writeln!(
        out,
        "finding {short} (finding {n} of {} in set {set_id})",
        set.findings.len()
    )?;
    writeln!(
        out,
        "run {} judged by probe {}",
        set.run.short(12),
        set.judged_by
    )?;
    writeln!(out, "{}", finding_head(f))?;
    writeln!(
        out,
        "seen {} times; intent {}",
        f.occurrences(),
        f.intent.as_str()
    )?;
    if let Some(m) = &f.mutation {
        writeln!(
            out,
            "changed: {} at {} ({})",
            m.kind, m.place, m.description
        )?;
    }
    if let Some(series) = &f.series {
        writeln!(out, "series:      {}", series.short(12))?;
    }
    if let Some(r) = &f.reproducer {
        writeln!(out, "reproducer:  {}", r.short(12))?;
    }
    let first: Vec<String> = f.interactions.iter().take(5).map(|i| i.short(12)).collect();
    if !first.is_empty() {
        let more = f.interactions.len() - first.len();
        writeln!(
            out,
            "interactions: {}{}",
            first.join(" "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        )?;
    }
    writeln!(
        out,
        "reproduce: probe show {short} --as curl · probe replay {short}"
    )
}

/// The reproducer of what `text` names: an interaction; a series (a script of its steps);
/// a finding, `<finding set id>:<n>` (1-based), by its series or its first interaction.
fn reproducer(store: &Store, text: &str, form: ReproducerForm) -> Result<String, CliError> {
    let form = match form {
        ReproducerForm::Curl => Form::Curl,
        ReproducerForm::Httpie => Form::Httpie,
        ReproducerForm::Python => Form::Python,
    };
    let text = text.trim();
    let (kind, id) = if let Some((_, n, set)) = finding_named(store, text)? {
        let finding = &set.findings[n - 1];
        // The smallest request that showed it (docs/shrinking.md), else the first.
        let request = finding.reproducer.as_ref().or(finding.interactions.first());
        match (finding.series, request) {
            (Some(series), _) => (ObjectKind::Series, series.0),
            (None, Some(first)) => (ObjectKind::Interaction, first.0),
            (None, None) => {
                return Err(CliError::usage(format!(
                    "finding {text} lists no interaction to reproduce"
                )))
            }
        }
    } else {
        store.resolve(text).map_err(CliError::lookup)?
    };
    match kind {
        ObjectKind::Interaction => {
            let interaction = store.get::<Interaction>(id)?;
            Ok(reproduce::of_interaction(store, &interaction, form)?)
        }
        ObjectKind::Series if form == Form::Curl => {
            Ok(reproduce::series_script(store, crate::ids::SeriesId(id))?)
        }
        ObjectKind::Series => Err(CliError::Usage {
            message: "a series is reproduced as a shell script of curl steps only".into(),
            hint: Some("use --as curl".into()),
        }),
        other => Err(CliError::Usage {
            message: format!(
                "`{text}` is a {}: --as reproduces an interaction, a series or a finding",
                other.name()
            ),
            hint: Some(
                "name a finding as <finding set id>:<n>, or give an interaction id from a report"
                    .into(),
            ),
        }),
    }
}

fn show_json(store: &Store, kind: ObjectKind, id: Digest) -> Result<Value, CliError> {
    Ok(match kind {
        ObjectKind::Blob => {
            let b = store.get::<Blob>(id)?;
            let (text, shown) = render(&b.0);
            if text {
                json!({"text": shown})
            } else {
                json!({"bytes": shown})
            }
        }
        ObjectKind::TestCase => to_json(&store.get::<TestCase>(id)?)?,
        ObjectKind::Interaction => {
            let i = store.get::<Interaction>(id)?;
            let mut v = to_json(&i)?;
            if let Some(b) = &i.request.body {
                v["request"]["body"] = body_json(store, b)?;
            }
            if let Outcome::Response(r) = &i.outcome {
                if let Some(b) = &r.body {
                    v["outcome"]["response"]["body"] = body_json(store, b)?;
                }
            }
            v
        }
        ObjectKind::RunStart => {
            let run = RunId(id);
            let mut v = to_json(&store.get::<RunStart>(id)?)?;
            v["end"] = to_json(&store.run_end(run)?)?;
            v["finding_sets"] = to_json(&store.finding_sets_of(run)?)?;
            // The set `probe diff` compares for this run (docs/cli.md, probe diff).
            let compared = crate::diff::default_finding_set(store, run)
                .map_err(|e| match e {
                    crate::diff::DiffError::Store(s) => CliError::Store(s),
                    other => CliError::internal_from(other),
                })?
                .map(|(id, _)| id);
            v["finding_set_compared"] = to_json(&compared)?;
            v["interactions"] = to_json(&store.interactions_of(run)?)?;
            v
        }
        ObjectKind::RunEnd => to_json(&store.get::<RunEnd>(id)?)?,
        ObjectKind::FindingSet => to_json(&store.get::<FindingSet>(id)?)?,
        ObjectKind::Series => to_json(&store.get::<crate::model::Series>(id)?)?,
    })
}

fn show_human(
    store: &Store,
    kind: ObjectKind,
    id: Digest,
    listed: Option<usize>,
    out: &mut Out<'_>,
) -> Result<(), CliError> {
    match kind {
        ObjectKind::Blob => {
            let b = store.get::<Blob>(id)?;
            writeln!(out, "blob {id} ({} bytes)", b.0.len())?;
            write_body(store, out, &BodyBytes::Inline(b.0))
        }
        ObjectKind::TestCase => show_test_case(store, id, out),
        ObjectKind::Interaction => show_interaction(store, id, out),
        ObjectKind::RunStart => show_run(store, id, listed, out),
        ObjectKind::RunEnd => {
            let e = store.get::<RunEnd>(id)?;
            writeln!(
                out,
                "run end {id}\nrun {} ended {} ({:?}), {} interactions, findings {}",
                e.run.short(12),
                when(e.ended_ms),
                e.outcome,
                e.interactions,
                e.findings.short(12)
            )
        }
        ObjectKind::FindingSet => show_finding_set(store, id, out),
        ObjectKind::Series => show_series(store, id, out),
    }
}

/// A test case: its operation, strategy, parameters, body and the change it is of.
fn show_test_case(store: &Store, id: Digest, out: &mut Out<'_>) -> Result<(), CliError> {
    let c = store.get::<TestCase>(id)?;
    writeln!(out, "test case {id}")?;
    writeln!(out, "operation: {} ({} {})", c.operation, c.method, c.path)?;
    writeln!(
        out,
        "strategy:  {} / {}; intent: {}",
        c.strategy,
        c.mode,
        c.intent.as_str()
    )?;
    for p in &c.parameters {
        writeln!(out, "  {} {} = {}", p.location.as_str(), p.name, p.value)?;
    }
    if let Some(b) = &c.body {
        writeln!(
            out,
            "body ({}): {}",
            b.media_type,
            b.sent_as.clone().unwrap_or_else(|| b.value.to_string())
        )?;
    }
    if let Some(m) = &c.mutation {
        writeln!(
            out,
            "mutation: {} at {} of test case {} (sent as seq {}): {}",
            m.kind,
            m.place,
            m.from.case.short(12),
            m.from.seq,
            m.description
        )?;
    }
    Ok(())
}

/// An interaction: the request as sent, the answer (or the transport error), the time.
fn show_interaction(store: &Store, id: Digest, out: &mut Out<'_>) -> Result<(), CliError> {
    let i = store.get::<Interaction>(id)?;
    writeln!(out, "interaction {id}")?;
    writeln!(
        out,
        "run {} seq {} case {}",
        i.run.short(12),
        i.seq,
        i.case.short(12)
    )?;
    writeln!(out, "> {} {}", i.request.method, i.request.url)?;
    for (k, v) in &i.request.headers {
        writeln!(out, "> {k}: {v}")?;
    }
    if let Some(b) = &i.request.body {
        write_body(store, out, b)?;
    }
    if let Some(first) = &i.retried {
        writeln!(
            out,
            "! sent again on a fresh connection; the first attempt, on a reused one, \
             failed: {} ({}): {}",
            first.kind.describe(),
            first.kind.name(),
            printable(&first.message)
        )?;
    }
    match &i.outcome {
        Outcome::Response(r) => {
            writeln!(
                out,
                "< {}{}",
                r.status,
                if r.truncated { " (body truncated)" } else { "" }
            )?;
            for (k, v) in &r.headers {
                writeln!(out, "< {}: {}", printable(k), printable(v))?;
            }
            if let Some(b) = &r.body {
                write_body(store, out, b)?;
            }
        }
        Outcome::TransportError { kind, message } => {
            writeln!(out, "! transport error ({kind:?}): {}", printable(message))?;
        }
    }
    writeln!(
        out,
        "took {} us, started {}",
        i.timing.elapsed_us,
        when(i.timing.started_ms)
    )?;
    Ok(())
}

/// A run's manifest, its end, its findings and (with `--interactions`) its first
/// `listed` interactions.
fn show_run(
    store: &Store,
    id: Digest,
    listed: Option<usize>,
    out: &mut Out<'_>,
) -> Result<(), CliError> {
    let run = RunId(id);
    let s = store.get::<RunStart>(id)?;
    writeln!(out, "run {id}")?;
    if let Some(n) = &s.name {
        writeln!(out, "name:     {n}")?;
    }
    if let Some(of) = &s.replay_of {
        writeln!(out, "replay of {of}")?;
    }
    writeln!(out, "api:      {} at {}", s.document_source, s.base_url)?;
    // Each file the run read, as a blob `probe show` prints.
    writeln!(
        out,
        "read:     {} {}",
        s.document.short(12),
        s.document_source
    )?;
    for (key, blob) in &s.documents {
        writeln!(out, "read:     {} {key}", blob.short(12))?;
    }
    for (key, blob) in &s.inputs {
        writeln!(out, "read:     {} {key}", blob.short(12))?;
    }
    writeln!(
        out,
        "started:  {} (probe {}, seed {})",
        when(s.started_ms),
        s.tool_version,
        s.seed
    )?;
    match store.run_end(run)? {
        Some(e) => writeln!(
            out,
            "ended:    {} ({:?}, {} interactions)",
            when(e.ended_ms),
            e.outcome,
            e.interactions
        ),
        None => writeln!(out, "ended:    no end manifest (running, or interrupted)"),
    }?;
    show_run_findings(store, run, &s, out)?;
    let rows = store.interactions_of(run)?;
    match listed {
        None => writeln!(
            out,
            "\n{} interactions: `probe show {} --interactions` lists them, `-n N` the first N",
            rows.len(),
            run.short(12)
        )?,
        Some(n) => {
            writeln!(
                out,
                "\ninteractions ({} of {}):",
                n.min(rows.len()),
                rows.len()
            )?;
            for row in rows.iter().take(n) {
                writeln!(
                    out,
                    "  {:>6} {} {:<7} {:<24} {}",
                    row.seq,
                    row.id.short(12),
                    row.method,
                    row.operation,
                    row.status.map_or("error".to_owned(), |s| s.to_string())
                )?;
            }
        }
    }
    Ok(())
}

/// A finding set and each finding, with its short id.
fn show_finding_set(store: &Store, id: Digest, out: &mut Out<'_>) -> Result<(), CliError> {
    let s = store.get::<FindingSet>(id)?;
    writeln!(
        out,
        "finding set {id}\nrun {} judged by probe {}, {} findings",
        s.run.short(12),
        s.judged_by,
        s.findings.len()
    )?;
    for (i, f) in s.findings.iter().enumerate() {
        writeln!(
            out,
            "  {:<11} [{:?}] {} {} {}: {} ({} interactions)",
            finding_id(FindingSetId(id), i + 1),
            f.severity,
            f.code.as_deref().unwrap_or("-"),
            f.oracle,
            f.operation,
            printable(&f.message),
            f.occurrences()
        )?;
    }
    // The checks that judged, as they were written: what made each `check:` finding.
    for (oracle, text) in &s.checks {
        writeln!(out, "{oracle}, as written:")?;
        for line in text.lines() {
            writeln!(out, "    {}", printable(line))?;
        }
    }
    Ok(())
}

/// A series: its kind and resource, and each step's interaction.
fn show_series(store: &Store, id: Digest, out: &mut Out<'_>) -> Result<(), CliError> {
    let s = store.get::<crate::model::Series>(id)?;
    writeln!(
        out,
        "series {id}
    run {}: {} of {} ({}), {} steps",
        s.run.short(12),
        s.kind.as_str(),
        s.resource,
        s.name,
        s.steps.len()
    )?;
    for step in &s.steps {
        let described = store
            .describe(ObjectKind::Interaction, step.interaction.0)
            .unwrap_or_default();
        writeln!(
            out,
            "  {:<24} {} {described}",
            step.role.as_str(),
            step.interaction.short(12)
        )?;
    }
    Ok(())
}

/// A run's finding sets, each labelled (which it is, when it was made, by which probe,
/// with which oracles, how many findings), then the findings of the one `probe diff`
/// compares, each with its short id.
fn show_run_findings(
    store: &Store,
    run: RunId,
    start: &RunStart,
    out: &mut Out<'_>,
) -> Result<(), CliError> {
    let end = store.run_end(run)?;
    let run_time = end.as_ref().map(|e| e.findings);
    let mut written = store.finding_sets_written(run)?;
    // The run-time set first, then the rechecks in the order they were made.
    written.sort_by_key(|(id, _)| Some(*id) != run_time);
    let chosen = crate::diff::default_finding_set(store, run)
        .map_err(|e| match e {
            crate::diff::DiffError::Store(s) => CliError::Store(s),
            other => CliError::internal_from(other),
        })?
        .map(|(id, _)| id);
    // What the whole catalogue is for this run: every oracle its settings switch on.
    let catalogue: Vec<&str> = match crate::recheck::settings_for(start, &[]) {
        Ok(settings) => crate::oracle::switched_on(&settings)
            .iter()
            .map(|o| o.name)
            .collect(),
        Err(_) => Vec::new(),
    };
    if written.is_empty() {
        writeln!(out, "findings: no finding set (the run never ended)")?;
    }
    let mut shown: Option<(FindingSetId, FindingSet)> = None;
    for (set_id, written_ms) in written {
        let set = store.get::<FindingSet>(set_id.0)?;
        let what = if Some(set_id) == run_time {
            "run-time"
        } else {
            "recheck"
        };
        let made = match (Some(set_id) == run_time, &end, written_ms) {
            (true, Some(e), _) => when(e.ended_ms),
            (_, _, Some(ms)) => when(ms),
            _ => "time unknown".to_owned(),
        };
        let names: Vec<&str> = set.oracles.keys().map(String::as_str).collect();
        let oracles = if !catalogue.is_empty() && catalogue.iter().all(|c| names.contains(c)) {
            format!("all {} oracles", names.len())
        } else {
            format!(
                "{} of {} oracles: {}",
                names.len(),
                catalogue.len(),
                names.join(", ")
            )
        };
        let mark = if Some(set_id) == chosen {
            " ← compared by diff"
        } else {
            ""
        };
        writeln!(
            out,
            "findings: {} {what}, made {made} by probe {}, {oracles}, {} finding{}{mark}",
            set_id.short(12),
            set.judged_by,
            set.findings.len(),
            if set.findings.len() == 1 { "" } else { "s" },
        )?;
        if Some(set_id) == chosen {
            shown = Some((set_id, set));
        }
    }
    if let Some((set_id, set)) = shown {
        if !set.findings.is_empty() {
            writeln!(
                out,
                "\nfindings of {} (`probe show <id>` for one):",
                set_id.short(12)
            )?;
        }
        for (i, f) in set.findings.iter().enumerate() {
            writeln!(
                out,
                "  {:<11} {}",
                finding_id(set_id, i + 1),
                finding_head(f)
            )?;
        }
    }
    Ok(())
}

/// One finding on one line, as `show` prints it alone and in a run's list:
/// `[Severity] CODE oracle operation: message`, the message made printable (it can quote
/// what the API sent).
fn finding_head(f: &crate::model::Finding) -> String {
    let code = f
        .code
        .as_deref()
        .map(|c| format!("{c} "))
        .unwrap_or_default();
    format!(
        "[{:?}] {code}{} {}: {}",
        f.severity,
        f.oracle,
        f.operation,
        printable(&f.message)
    )
}
