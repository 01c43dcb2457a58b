//! `probe replay`: resolve the target, re-send it ([`crate::replay`]), show recorded versus
//! now, and decide the exit code.
//!
//! `--json` prints one line `{"type":"replay","data":{...}}`; `data` has the fields of
//! [`crate::replay::ReplayReport`] (ids as 64 hex characters), `docs/replay.md` lists them.
//! `--events FILE|-` writes the replay's event stream (docs/events.md).
//!
//! Depends on: `replay`, `store`, `cli`, `error`, `app::run` (credentials and URL checks),
//! `app::events`.

use std::io::Write;
use std::path::Path;

use crate::cli::ReplayOpts;
use crate::error::CliError;
use crate::exit;
use crate::model::RunOutcome;
use crate::replay::{
    self, Attempt, Exchanged, ReplayError, ReplayOptions, ReplayReport, Role, Verdict,
};
use crate::store::Store;

use super::events::EventsOut;
use super::log::short_of;
use super::run::{identity_specs, strip_credentials};
use super::Out;

/// Targets shown in full; beyond this, one line per interaction that differs.
const DETAILED: usize = 3;

fn cli_error(e: ReplayError) -> CliError {
    match e {
        ReplayError::Store(s) => CliError::Store(s),
        ReplayError::Lookup(s) => CliError::lookup(s),
        e @ (ReplayError::NotReplayable { .. }
        | ReplayError::NoSuchFinding { .. }
        | ReplayError::BadFindingName { .. }
        | ReplayError::Times(_)) => CliError::usage(e.to_string()),
        e @ ReplayError::MissingCredentials { .. } => CliError::Usage {
            message: e.to_string(),
            hint: Some("give them as the run did (--bearer, --basic, --api-key, --header, --identity), or --without-credentials to replay without them".into()),
        },
        // What the store holds cannot be replayed by this build: its document no longer
        // loads, or its objects do not fit together; or the client did not start.
        e @ (ReplayError::Spec { .. }
        | ReplayError::BadBinding { .. }
        | ReplayError::MissingSource { .. }
        | ReplayError::Inconsistent { .. }
        | ReplayError::UnknownOperation { .. }
        | ReplayError::Settings(_)
        | ReplayError::Client(_)) => CliError::internal_from(e),
        e @ ReplayError::Identity(_) => CliError::Usage {
            message: e.to_string(),
            hint: Some(
                "give the identity with --identity NAME=KIND:VALUE (`probe docs security`)".into(),
            ),
        },
    }
}

/// Runs `probe replay`. A campaign (`campaign:…`) is replayed part after part, each its
/// own replay run; the exit code is that of a part that could not be replayed (the API
/// unreachable, a signal), else 1 with `--exit-code` when a part reproduced, else 0.
pub fn exec_replay(
    opts: &ReplayOpts,
    global: &crate::cli::GlobalOpts,
    store_dir: &Path,
    out: &mut Out<'_>,
    err: &mut dyn Write,
) -> Result<u8, CliError> {
    if !super::campaign::names_campaign(&opts.target) {
        return replay_one(opts, global, &opts.target, store_dir, out, err);
    }
    let runs = {
        let store = Store::open_existing(store_dir)?;
        let campaign = super::campaign::resolve(&store, &opts.target)?;
        campaign.note_missing(err);
        campaign.runs()
    };
    let mut code = exit::OK;
    for run in runs {
        match replay_one(opts, global, &run.0.to_hex(), store_dir, out, err)? {
            exit::OK => {}
            exit::FINDINGS => code = exit::FINDINGS,
            other => return Ok(other),
        }
    }
    Ok(code)
}

/// Replays one target: an interaction, a finding, a finding set, a series or a run.
fn replay_one(
    opts: &ReplayOpts,
    global: &crate::cli::GlobalOpts,
    target: &str,
    store_dir: &Path,
    out: &mut Out<'_>,
    err: &mut dyn Write,
) -> Result<u8, CliError> {
    let (base_url, userinfo) = match &opts.url {
        Some(u) => {
            let (base, user) = strip_credentials(u)?;
            (Some(base), user)
        }
        None => (None, None),
    };
    let project = super::project::load(global)?;
    let identities = identity_specs(&opts.credentials, userinfo, project.as_ref())?;
    let options = ReplayOptions {
        base_url,
        identities,
        times: opts.times,
        without_credentials: opts.without_credentials,
        network: opts.network.settings(),
        stop: crate::stop::Stop::new(),
    };
    // A certificate, key or proxy that cannot be used stops the replay before anything.
    let network = crate::settings::Settings::default()
        .with_network(&options.network)
        .map_err(CliError::from)?;
    super::run::network_usable(&network.resolved().send)?;
    if opts.times == 0 || opts.times > replay::MAX_TIMES {
        return Err(cli_error(ReplayError::Times(opts.times)));
    }
    let store = Store::open_existing(store_dir)?;
    let plan = replay::plan(&store, target).map_err(cli_error)?;
    super::note_run_name(&store, target, err);
    // Before anything is sent: a path that cannot be written is the user's to fix.
    let events_out = EventsOut::open(opts.events.as_deref())?;
    let interrupts = super::signals::Interrupts::watch(options.stop.clone())?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::internal("cannot start the async runtime", e))?;
    let report = runtime
        .block_on(replay::execute(
            &store,
            &plan,
            &options,
            &events_out.sink_or_discard(),
        ))
        .map_err(cli_error)?;
    events_out.finish()?;
    let events_out_on_stdout = events_out.on_stdout();
    // With the events on standard output, the replay's own output goes beside the errors.
    let mut output = events_out.command_output(out.raw(), err);
    let out = &mut Out::new(&mut output);

    if opts.json {
        let data = serde_json::to_value(&report)
            .map_err(|e| CliError::internal("cannot encode the replay as JSON", e))?;
        let line = serde_json::json!({"type": "replay", "data": data});
        writeln!(out, "{line}")?;
    } else {
        let paint = if events_out_on_stdout {
            crate::report::colour::Paint::stderr()
        } else {
            crate::report::colour::Paint::stdout()
        };
        write_human(&report, out, paint)?;
    }
    tls_failure(&store, &report, err);
    if report.outcome == RunOutcome::Unreachable {
        let _ = writeln!(
            err,
            "probe: error: the API at {} could not be reached",
            report.base_url
        );
        return Ok(exit::UNREACHABLE);
    }
    if report.outcome == RunOutcome::Interrupted {
        let (signal, code) = interrupts
            .received()
            .unwrap_or(("SIGINT (Ctrl-C)", exit::INTERRUPTED));
        let _ = writeln!(
            err,
            "probe: interrupted by {signal}: the request in flight was cancelled; the replay is recorded as interrupted"
        );
        return Ok(code);
    }
    Ok(if opts.exit_code && report.verdict == Verdict::Reproduced {
        exit::FINDINGS
    } else {
        exit::OK
    })
}

fn status_text(s: Option<u16>) -> String {
    s.map(|s| s.to_string())
        .unwrap_or_else(|| "no answer".into())
}

fn write_human(
    r: &ReplayReport,
    out: &mut Out<'_>,
    paint: crate::report::colour::Paint,
) -> Result<(), CliError> {
    write_heading(r, out)?;
    let Some(first) = r.attempts.first() else {
        return Ok(());
    };
    write_first_attempt(first, out)?;
    for n in &r.notes {
        writeln!(out, "note: {n}")?;
    }
    if r.times > 1 {
        for (i, a) in r.attempts.iter().enumerate() {
            writeln!(out, "attempt {}: {}", i + 1, a.verdict.as_str())?;
        }
    }
    let why = verdict_reason(r, first);
    let verdict = match r.verdict {
        Verdict::Reproduced => paint.bad(r.verdict.as_str()),
        Verdict::Fixed => paint.good(r.verdict.as_str()),
        Verdict::Differs | Verdict::Same => r.verdict.as_str().to_owned(),
    };
    if r.times > 1 {
        let flaky = r.reproduced > 0 && r.reproduced < r.times;
        writeln!(
            out,
            "verdict: {verdict}{why}, reproduced {} of {} times{}",
            r.reproduced,
            r.times,
            if flaky { " (flaky)" } else { "" }
        )?;
    } else {
        writeln!(out, "verdict: {verdict}{why}")?;
    }
    if !r.without_credentials.is_empty() {
        writeln!(
            out,
            "note: the verdict was made without the credentials the run sent ({}): --without-credentials",
            r.without_credentials.join(", ")
        )?;
    }
    writeln!(
        out,
        "recorded as replay run {} (probe show {})",
        r.run.short(12),
        r.run.short(12)
    )
}

/// The first line: what is replayed, of which run, against which API.
fn write_heading(r: &ReplayReport, out: &mut Out<'_>) -> Result<(), CliError> {
    let what = match r.kind {
        replay::TargetKind::Interaction => "interaction",
        replay::TargetKind::Finding => "finding",
        replay::TargetKind::FindingSet => "finding set",
        replay::TargetKind::Run => "run",
        replay::TargetKind::Series => "series",
    };
    if r.kind == replay::TargetKind::Run {
        writeln!(
            out,
            "replaying run {} against {}",
            r.replayed_run.short(12),
            r.base_url
        )?;
    } else {
        writeln!(
            out,
            "replaying {what} {} of run {} against {}",
            short_of(&r.replay_of),
            r.replayed_run.short(12),
            r.base_url
        )?;
    }
    Ok(())
}

/// The first attempt: each exchange and finding in detail when the targets are few,
/// else the exchanges that answered differently and each finding's verdict.
fn write_first_attempt(first: &Attempt, out: &mut Out<'_>) -> Result<(), CliError> {
    let targets = first
        .exchanges
        .iter()
        .filter(|e| e.role == Role::Target)
        .count();
    if targets <= DETAILED {
        for f in &first.findings {
            writeln!(
                out,
                "  finding {}: {}{} on {}: {}",
                short_of(&f.finding),
                f.oracle,
                f.code
                    .as_deref()
                    .map(|c| format!(" ({c})"))
                    .unwrap_or_default(),
                f.operation,
                f.message
            )?;
        }
    }
    if targets <= DETAILED {
        for e in &first.exchanges {
            match e.role {
                Role::Source => write_source(e, out)?,
                Role::Target => write_detail(e, out)?,
            }
        }
    } else {
        let differing: Vec<&Exchanged> = first
            .exchanges
            .iter()
            .filter(|e| e.role == Role::Target && e.verdict == Verdict::Differs)
            .collect();
        writeln!(
            out,
            "{} interactions re-sent, {} answered differently:",
            first.exchanges.len(),
            differing.len()
        )?;
        for e in differing {
            writeln!(
                out,
                "  seq {:>5}  {:<16} {} {}  {} -> {}",
                e.recorded_seq,
                e.operation,
                e.method,
                e.url,
                status_text(e.comparison.recorded_status),
                status_text(e.comparison.now_status)
            )?;
        }
        for f in &first.findings {
            writeln!(
                out,
                "  {:<10} {} {} on {}",
                f.verdict.as_str(),
                short_of(&f.finding),
                f.oracle,
                f.operation
            )?;
        }
    }
    Ok(())
}

/// Why the verdict is what it is, in parentheses after it (or nothing).
fn verdict_reason(r: &ReplayReport, first: &Attempt) -> String {
    let count = |v: Verdict| first.findings.iter().filter(|f| f.verdict == v).count();
    match (r.verdict, first.findings.as_slice()) {
        (_, [_, _, ..]) => format!(
            " ({} findings: {} reproduced, {} fixed, {} differ)",
            first.findings.len(),
            count(Verdict::Reproduced),
            count(Verdict::Fixed),
            count(Verdict::Differs)
        ),
        (Verdict::Reproduced, [f, ..]) => format!(" ({} fires again)", f.oracle),
        (Verdict::Fixed, [f, ..]) => format!(" ({} no longer fires)", f.oracle),
        (Verdict::Differs, [f, ..]) => {
            let statuses = first
                .exchanges
                .iter()
                .find(|e| e.interaction == f.interaction)
                .map(|e| (e.comparison.recorded_status, e.comparison.now_status));
            let how = match (f.fired.as_slice(), statuses) {
                ([], Some((_, None))) | ([], None) => "no answer came".to_owned(),
                ([], Some((a, b))) => format!(
                    "the answer changed kind ({} -> {})",
                    status_text(a),
                    status_text(b)
                ),
                (fired, _) => format!("now {} fires", fired.join(", ")),
            };
            format!(" ({} no longer fires, but {how})", f.oracle)
        }
        (Verdict::Differs, []) => " (the answer differs from the recorded one)".into(),
        (Verdict::Same, _) => " (the answer matches the recorded one)".into(),
        _ => String::new(),
    }
}

fn write_source(e: &Exchanged, out: &mut Out<'_>) -> Result<(), CliError> {
    writeln!(
        out,
        "re-sent first (a later step takes a value from its answer): {} {} {} ({}, recorded seq {}): {} -> {}",
        e.operation,
        e.method,
        e.url,
        e.interaction.short(12),
        e.recorded_seq,
        status_text(e.comparison.recorded_status),
        status_text(e.comparison.now_status)
    )
}

fn write_detail(e: &Exchanged, out: &mut Out<'_>) -> Result<(), CliError> {
    writeln!(
        out,
        "{} {}  ({}, recorded seq {} as {}, now {})",
        e.method,
        e.url,
        e.operation,
        e.recorded_seq,
        e.recorded.short(12),
        e.interaction.short(12)
    )?;
    for b in &e.bound {
        if b.rebound {
            writeln!(
                out,
                "  {}: {} -> {} (from the new answer of recorded seq {}, at {})",
                b.parameter, b.recorded, b.now, b.from_seq, b.pointer
            )?;
        }
    }
    let c = &e.comparison;
    writeln!(
        out,
        "  {:<16} {} -> {}",
        "status",
        status_text(c.recorded_status),
        status_text(c.now_status)
    )?;
    if let Some(m) = &c.now_error {
        writeln!(out, "  {:<16} {m}", "now no answer")?;
    }
    for h in &c.headers {
        writeln!(
            out,
            "  {:<16} {} -> {}",
            h.name,
            h.recorded.as_deref().unwrap_or("(none)"),
            h.now.as_deref().unwrap_or("(none)")
        )?;
    }
    match &c.body_diff {
        None => writeln!(out, "  body: the same (volatile values normalised)")?,
        Some(d) => {
            writeln!(out, "  body (volatile values normalised):")?;
            for line in d.lines() {
                writeln!(out, "    {line}")?;
            }
        }
    }
    if !e.fired.is_empty() {
        writeln!(out, "  oracles firing now: {}", e.fired.join(", "))?;
    }
    Ok(())
}

/// The first TLS failure of a replay, as the client said it, and what it means when probe
/// knows: a replay sends with this invocation's network flags, and a run's CA may not be
/// given again (as `probe run` says it, `send::client::certificate_problem`).
fn tls_failure(store: &Store, report: &replay::ReplayReport, err: &mut dyn Write) {
    let tls = report
        .attempts
        .iter()
        .flat_map(|a| &a.exchanges)
        .filter_map(|e| store.get::<crate::model::Interaction>(e.interaction.0).ok())
        .find_map(|i| match i.outcome {
            crate::model::Outcome::TransportError {
                kind: crate::model::TransportErrorKind::Tls,
                message,
            } => Some(message),
            _ => None,
        });
    if let Some(message) = tls {
        let _ = writeln!(err, "probe: note: the TLS failure: {message}");
        if let Some(words) = crate::send::client::certificate_problem(&message) {
            let _ = writeln!(err, "  hint: {words}");
        }
    }
}
