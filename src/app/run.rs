//! `probe run` and `probe demo`: load, record the manifest, run the engine, report.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::campaign;
use crate::cli::{CampaignOpts, DemoOpts, GlobalOpts, RunOpts};
use crate::clock::now_ms;
use crate::engine::{self, RunConfig};
use crate::error::CliError;
use crate::events::CampaignKind;

use super::events::EventsOut;
use super::signals::Interrupts;
use super::Out;
use crate::exit;
use crate::fixture::{demo, RunningFixture};
use crate::ids::BlobId;
use crate::model::{RunKind, RunOutcome, RunStart, TransportErrorKind};
use crate::partition::{self, Partition};
use crate::plan::{dictionary, Plan};
use crate::report::colour::Paint;
use crate::report::{console, heartbeat::Heartbeat, junit, progress::Progress, RunReport};
use crate::send::identity;
use crate::send::{Credentials, Identities, IdentitySpec};
use crate::settings::{ProjectFile, Settings};
use crate::spec::{self, Api, Operation};
use crate::store::Store;

/// Where the store lives: `--store`, `PROBE_STORE`, else `./.probe`.
pub fn store_dir(global: &GlobalOpts) -> PathBuf {
    global
        .store
        .clone()
        .unwrap_or_else(|| PathBuf::from(crate::store::DEFAULT_DIR))
}

/// Opens the store at `dir` to write into it, creating it when absent in the format the
/// setting `store.format` names, given in this build by its environment form
/// `PROBE_STORE_FORMAT` (`1`, or `2`, the default): read only when a store is created; a
/// store that exists keeps its format.
pub fn open_store_to_write(dir: &std::path::Path) -> Result<Store, crate::store::StoreError> {
    let format = match std::env::var("PROBE_STORE_FORMAT") {
        Ok(text) => crate::store::StoreFormat::parse(&text).ok_or_else(|| {
            crate::store::StoreError::Other(format!(
                "PROBE_STORE_FORMAT is `{text}`: the store formats are 1 and 2"
            ))
        })?,
        Err(_) => crate::store::StoreFormat::default(),
    };
    Store::open_or_create(dir, format)
}

/// What to run, after the command line has been checked.
struct Campaign {
    api: Api,
    document: Vec<u8>,
    /// The document's other files, by key ([`spec::LoadedDocument::documents`]).
    documents: BTreeMap<String, Vec<u8>>,
    document_source: String,
    base_url: String,
    identities: Identities,
    /// `probe.toml`, read once for the identities and the settings.
    project: Option<ProjectFile>,
    include: Vec<String>,
    exclude: Vec<String>,
    /// The settings the network flags stand for (`--cacert`, `--proxy`, ...).
    network: Vec<String>,
    /// `--partition` and `--campaign` of `probe run`; `None` for the demo, which is never
    /// split (nor reads a CI's partition variables).
    split: Option<SplitOpts>,
    opts: CampaignOpts,
    default_requests: Option<u64>,
    default_budget: Option<Duration>,
}

pub fn exec_run(
    opts: RunOpts,
    global: &GlobalOpts,
    out: &mut Out<'_>,
    err: &mut dyn Write,
) -> Result<u8, CliError> {
    let project = super::project::load(global)?;
    let (spec, url) = super::project::spec_and_url(opts.spec, opts.url, project.as_ref())?;
    // The document's source is kept and printed with its credentials replaced.
    let (loaded, source_secrets) = crate::app::spec::load_redacted(&spec)?;
    let (base_url, userinfo) = strip_credentials(&url)?;
    let identities = identities_from(
        &opts.credentials,
        userinfo,
        &loaded.api,
        project.as_ref(),
        err,
    )?;
    // And searched out of everything else kept, as the run's own credentials are: the
    // document itself, a reply, a message.
    identities.also_secret(&source_secrets);
    let campaign = Campaign {
        api: loaded.api,
        document: loaded.bytes,
        documents: loaded.documents,
        document_source: loaded.source,
        base_url,
        identities,
        project,
        include: opts.include,
        exclude: opts.exclude,
        network: opts.network.settings(),
        split: Some(SplitOpts {
            partition: opts.partition,
            name: opts.campaign_name,
        }),
        opts: opts.campaign,
        default_requests: None,
        default_budget: Some(Duration::from_secs(60)),
    };
    execute(campaign, global, out, err)
}

pub fn exec_demo(
    opts: DemoOpts,
    global: &GlobalOpts,
    out: &mut Out<'_>,
    err: &mut dyn Write,
) -> Result<u8, CliError> {
    let api = spec::parse(
        demo::DOCUMENT.as_bytes(),
        "fixtures/demo/openapi.yaml",
        None,
    )?;
    // A wrong setting stops the demo before its API starts and says it listens.
    let env: Vec<(String, String)> = std::env::vars().collect();
    let project = super::project::load(global)?;
    Settings::resolve_with(project.as_ref(), &env, &opts.campaign.settings)?;
    // The demo's API asks for no credentials: one anonymous identity.
    let identities = Identities::new(
        vec![IdentitySpec::default_with(Credentials::default())],
        &api,
    )
    .map_err(identity_usage)?;
    let fixture = RunningFixture::start(demo::router(demo::Faults::ALL))
        .map_err(|e| CliError::internal("cannot start the demo API on 127.0.0.1", e))?;
    // With the event stream on standard output, the demo's own lines go beside the errors,
    // as the summary does: standard output is then the stream's alone.
    let events_on_stdout = opts
        .campaign
        .events
        .as_deref()
        .is_some_and(|p| p == Path::new("-"));
    {
        let to = &mut Out::new(if events_on_stdout {
            &mut *err
        } else {
            out.raw()
        });
        writeln!(
            to,
            "demo API with planted faults listening on {}",
            fixture.base_url()
        )?;
    }
    let campaign = Campaign {
        api,
        document: demo::DOCUMENT.as_bytes().to_vec(),
        documents: BTreeMap::new(),
        document_source: "fixtures/demo/openapi.yaml".into(),
        base_url: fixture.base_url(),
        identities,
        project,
        include: Vec::new(),
        exclude: Vec::new(),
        network: Vec::new(),
        split: None,
        opts: opts.campaign,
        default_requests: Some(400),
        default_budget: Some(Duration::from_secs(30)),
    };
    let code = execute(campaign, global, out, err)?;
    let to = &mut Out::new(if events_on_stdout { err } else { out.raw() });
    let store = store_dir(global);
    let store_flag = if global.store.is_some() {
        format!(" --store {}", store.display())
    } else {
        String::new()
    };
    writeln!(to)?;
    writeln!(to, "try next:")?;
    writeln!(
        to,
        "  probe{store_flag} log                    the runs in the store"
    )?;
    writeln!(
        to,
        "  probe{store_flag} show <id>              a run (its findings first), a finding (its id, like 1a2b3c4d:1) or an interaction"
    )?;
    writeln!(
        to,
        "  probe{store_flag} store verify           re-hash every stored object"
    )?;
    writeln!(
        to,
        "  probe{store_flag} recheck <run id>       judge the run again with today's oracles, sending nothing"
    )?;
    writeln!(
        to,
        "  probe{store_flag} replay <finding id>    send a finding's requests again and say whether it is fixed"
    )?;
    drop(fixture);
    Ok(code)
}

/// The credentials of this invocation: `--header 'Name: value'` lines and the scheme
/// credentials. Shared by `probe run` and `probe replay`, which take the same flags.
pub(crate) fn credentials_from(
    header_lines: &[String],
    bearer: Option<String>,
    basic: Option<String>,
    api_key: Option<String>,
) -> Result<Credentials, CliError> {
    let mut headers = Vec::new();
    for (n, h) in header_lines.iter().enumerate() {
        // The line is not echoed: without its colon, nobody can tell the name from a
        // credential that follows it (`--header 'X-Api-KeySECRET'`).
        let (k, v) = h.split_once(':').ok_or_else(|| CliError::Usage {
            message: format!(
                "--header number {} ({} characters) has no colon: it is not `Name: value`",
                n + 1,
                h.chars().count()
            ),
            hint: Some("write it as --header 'X-Tenant: acme'".into()),
        })?;
        headers.push((k.trim().to_owned(), v.trim().to_owned()));
    }
    Ok(Credentials {
        bearer,
        basic,
        api_key,
        headers,
        undeclared_authorization: None,
    })
}

/// The identities of this invocation, the default first: the one the credential flags
/// (and `user:pass@` in the URL) make, named `default`; then each `--identity`; then each
/// `[[identity]]` of `probe.toml` in `dir`. Shared by `probe run` and `probe replay`.
pub(crate) fn identities_from(
    opts: &crate::cli::CredentialOpts,
    userinfo: Option<String>,
    api: &Api,
    project: Option<&ProjectFile>,
    err: &mut dyn Write,
) -> Result<Identities, CliError> {
    let specs = identity_specs(opts, userinfo, project)?;
    let identities = Identities::new(specs, api).map_err(identity_usage)?;
    for note in identities.notes() {
        let _ = writeln!(err, "probe: note: {note}");
    }
    Ok(identities)
}

fn identity_usage(e: identity::IdentityError) -> CliError {
    let hint = match e {
        // An API key with nowhere to go.
        identity::IdentityError::Flags { .. } => {
            "send it as a header instead: --header 'X-Api-Key: <key>'"
        }
        _ => "`probe docs security` says how identities are given",
    };
    CliError::Usage {
        message: e.to_string(),
        hint: Some(hint.into()),
    }
}

/// The identities as given, the default first (see [`identities_from`]); never empty.
pub(crate) fn identity_specs(
    opts: &crate::cli::CredentialOpts,
    userinfo: Option<String>,
    project: Option<&ProjectFile>,
) -> Result<Vec<IdentitySpec>, CliError> {
    let credentials = credentials_from(
        &opts.headers,
        opts.bearer.clone(),
        opts.basic.clone().or(userinfo),
        opts.api_key.clone(),
    )?;
    let usage = identity_usage;
    let env = |name: &str| std::env::var(name).ok();
    // The flags' identity comes first when it carries a credential, or when it is all there
    // is; headers that carry none go on every identity's requests.
    let flagged = credentials.any();
    let everywhere: Vec<(String, String)> = credentials
        .headers
        .iter()
        .filter(|(k, _)| crate::send::wire::carries_no_credential(&k.to_ascii_lowercase()))
        .cloned()
        .collect();
    let plain = IdentitySpec::default_with(credentials);
    let mut others = Vec::new();
    for flag in &opts.identities {
        others.push(identity::parse_flag(flag, &env).map_err(usage)?);
    }
    if let Some(file) = project {
        others.extend(identity::from_toml(&file.path, &file.table, &env).map_err(usage)?);
    }
    for spec in &mut others {
        spec.credentials.headers.extend(everywhere.iter().cloned());
    }
    let mut specs = Vec::new();
    if flagged || others.is_empty() {
        specs.push(plain);
    }
    specs.extend(others);
    Ok(specs)
}

/// Removes `user:pass@` from a base URL; returns the URL and the credentials.
pub(crate) fn strip_credentials(url: &str) -> Result<(String, Option<String>), CliError> {
    let mut parsed = url::Url::parse(url).map_err(|e| CliError::Usage {
        message: format!("--url `{url}` is not a URL: {e}"),
        hint: Some("give the API's base URL, e.g. --url http://127.0.0.1:8080/v1".into()),
    })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(CliError::usage(format!(
            "--url `{url}` must be http or https"
        )));
    }
    let userinfo = if parsed.username().is_empty() {
        None
    } else {
        // The URL keeps userinfo percent-encoded; the credential is the decoded text.
        let decode = |s: &str| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8_lossy()
                .into_owned()
        };
        Some(format!(
            "{}:{}",
            decode(parsed.username()),
            decode(parsed.password().unwrap_or(""))
        ))
    };
    let _ = parsed.set_username("");
    let _ = parsed.set_password(None);
    Ok((parsed.as_str().trim_end_matches('/').to_owned(), userinfo))
}

/// Whether `selector` names `op`: operation id, `METHOD /path`, path prefix or tag.
pub fn selects(selector: &str, op: &Operation) -> bool {
    op.key.is_named(selector)
        || (selector.starts_with('/') && op.key.path.starts_with(selector))
        || op.tags.iter().any(|t| t == selector)
}

fn parse_tags(tags: &[String]) -> Result<BTreeMap<String, String>, CliError> {
    tags.iter()
        .map(|t| {
            let (k, v) = t
                .split_once('=')
                .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
                .ok_or_else(|| CliError::usage(format!("--tag `{t}` is not `key=value`")))?;
            // probe's own tags say which campaign a run is part of: a hand-written one
            // would join a run to a campaign it did not take part in.
            if k == partition::CAMPAIGN_TAG || k == partition::PART_TAG {
                return Err(CliError::Usage {
                    message: format!("--tag `{t}`: `{k}` is probe's own tag"),
                    hint: Some(
                        "split a campaign with --partition K/N (`probe docs partitions`)".into(),
                    ),
                });
            }
            Ok((k, v))
        })
        .collect()
}

/// What `execute` resolved from the flags and settings before anything is stored or sent.
struct Resolved {
    settings: Settings,
    /// The settings read once into what each part needs (`Settings::options`).
    options: crate::settings::Options,
    budget: Option<Duration>,
    max_requests: Option<u64>,
    tags: BTreeMap<String, String>,
    operations: Vec<usize>,
    seed: u64,
    workers: usize,
    /// The part this run is of a split campaign, and the campaign's id.
    part: Option<(Partition, String)>,
}

/// How `probe run` was asked to split its campaign.
struct SplitOpts {
    partition: Option<String>,
    name: Option<String>,
}

/// The files a run reads besides its document: the plan, the dictionaries, the seeded
/// requests.
struct Inputs {
    plan: Plan,
    dictionaries: Vec<dictionary::Dictionary>,
    seeds: Vec<(crate::model::AcceptedRef, crate::model::TestCase, u16)>,
    /// Dictionaries that could not be read, named in report.json; the run goes on.
    unreadable: Vec<String>,
    /// The files read, kept with the run (`RunStart::inputs`), as read.
    files: Vec<(String, String)>,
    /// The user's checks (`[[check]]`, `--checks`).
    checks: std::sync::Arc<Vec<crate::check::Check>>,
}

/// Who watches a run's events: the progress bar, the `--events` stream, the reports' log
/// and the heartbeat.
struct Watchers {
    progress: Progress,
    events_out: EventsOut,
    log: crate::report::RunLog,
    heartbeat: Heartbeat,
    /// How often the heartbeat speaks; `None` on a terminal, where the bar is drawn.
    beat_every: Option<Duration>,
    events: crate::events::EventSink,
}

fn execute(
    mut c: Campaign,
    global: &GlobalOpts,
    out: &mut Out<'_>,
    err: &mut dyn Write,
) -> Result<u8, CliError> {
    note_credential_parameters(&mut c, err);
    let resolved = resolve(&mut c)?;
    if let Some((part, id)) = &resolved.part {
        let _ = writeln!(
            err,
            "probe: part {part} of campaign {id} (seed {}): {} operation{}",
            resolved.seed,
            resolved.operations.len(),
            if resolved.operations.len() == 1 {
                ""
            } else {
                "s"
            }
        );
    }
    let inputs = read_inputs(&resolved.options.generation, &c, err)?;
    let store = open_store_to_write(&store_dir(global))?;
    // The seeded test cases are kept, so that a change's `from` names a stored case.
    for (_, case, _) in &inputs.seeds {
        store.put(case)?;
    }
    let start = run_start(&store, &c, &resolved, &inputs.files)?;
    let skipped_at_load: Vec<(String, String)> = c
        .api
        .skipped
        .iter()
        .map(|s| (s.key.name(), s.reason.clone()))
        .collect();
    let api = Arc::new(c.api);
    let (budget, max_requests) = (resolved.budget, resolved.max_requests);
    let resolved_report_html = resolved.options.report_html;
    let empty_part = resolved.operations.is_empty() && resolved.part.is_some();
    let config = RunConfig {
        api: api.clone(),
        operations: resolved.operations,
        base_url: c.base_url.clone(),
        seed: resolved.seed,
        workers: resolved.workers,
        budget,
        max_requests,
        identities: Arc::new(c.identities),
        settings: resolved.settings,
        plan: inputs.plan,
        dictionaries: inputs.dictionaries,
        seeds: inputs.seeds,
        stop: engine::Stop::new(),
        max_findings: c.opts.max_findings,
        checks: inputs.checks,
    };
    let stop = config.stop.clone();
    let write_page = resolved_report_html;
    let watchers = Watchers::start(global, &c.opts, max_requests, start.started_ms)?;
    // From here a signal no longer kills the process: the run, once begun, is ended.
    let interrupts = Interrupts::watch(stop)?;
    let (run, spine) = campaign::begin(
        &store,
        &start,
        campaign::Opening {
            kind: CampaignKind::Run,
            of: None,
            api_title: &api.title,
            api_version: &api.version,
            operations: config.operations.len(),
            skipped: api.skipped.len(),
        },
        watchers.events.clone(),
    )?;
    let result = drive(config, run, spine, &watchers, err)?;
    watchers.progress.finish();
    let ended = Ended {
        store: &store,
        run,
        api: &api,
        start: &start,
        watchers: &watchers,
        result: &result,
    };
    ended.close()?;
    // The run is recorded: the stream that could not be written is an IO error, said after
    // the other outputs are written, which it must not cost.
    let mut unwritten: Vec<CliError> = Vec::new();
    if let Err(e) = watchers.events_out.finish() {
        unwritten.push(e);
    }
    let mut report = ended.report(&skipped_at_load)?;
    report.unreadable_files = inputs.unreadable;
    report.check_failures = result.check_failures.clone();
    report.run.budget = budget.map(|d| humantime::format_duration(d).to_string());
    report.run.request_limit = max_requests;
    let json = report.to_json();
    let kept = store.write_report(run, &json)?;
    unwritten.extend(write_report_files(&c.opts, &json, &report, &store, run));
    // The page comes last and never fails the run: the run and its reports are written.
    let page = write_page
        .then(|| ended.page(&report, c.opts.report.as_deref(), err))
        .flatten();
    let shown = c
        .opts
        .report
        .as_ref()
        .unwrap_or(&kept)
        .display()
        .to_string();
    // With the events on standard output, the summary goes beside the errors.
    let mut output = watchers.events_out.command_output(out.raw(), err);
    let summary = &mut Out::new(&mut output);
    let paint = if watchers.events_out.on_stdout() {
        Paint::stderr()
    } else {
        Paint::stdout()
    };
    summary.with(|w| console::write_summary(w, &report, Some(&shown), paint))?;
    if let Some(page) = page {
        writeln!(summary, "page {}", page.display())?;
    }
    ended.notes(&c.opts, &c.base_url, err);
    if !unwritten.is_empty() {
        let first = unwritten.remove(0);
        for other in unwritten {
            let _ = writeln!(err, "probe: error: {other:#}");
        }
        return Err(first);
    }
    // A part that the split left without an operation has nothing to test: its empty run
    // keeps the campaign's count of parts whole, and is no failure.
    if empty_part {
        let _ = writeln!(
            err,
            "probe: this part has no operation: the document has fewer path families than parts (`probe docs partitions`)"
        );
        return Ok(exit::OK);
    }
    let tls = tls_problem(&store, run, &result);
    Ok(exit_code(&result, &interrupts, &c.base_url, tls, err))
}

/// The first TLS failure of a run that reached nothing, as the client said it, and what it
/// means when probe knows (`send::client::certificate_problem`): "the TLS handshake failed"
/// alone does not tell a self-signed certificate from a missing client certificate.
fn tls_problem(
    store: &Store,
    run: crate::ids::RunId,
    result: &engine::RunResult,
) -> Option<(String, Option<&'static str>)> {
    if result.outcome != RunOutcome::Unreachable {
        return None;
    }
    let totals = result.stats.transport_totals();
    if !totals
        .transport_by_kind()
        .any(|(k, _)| k == TransportErrorKind::Tls)
    {
        return None;
    }
    // The first requests are enough: every one of them failed.
    let page = store.interactions_page(run, 0..64).ok()?;
    page.iter()
        .filter(|item| item.row.status.is_none())
        .filter_map(|item| store.get_interaction(item).ok())
        .find_map(|interaction| match interaction.outcome {
            crate::model::Outcome::TransportError {
                kind: TransportErrorKind::Tls,
                message,
            } => {
                let words = crate::send::client::certificate_problem(&message);
                Some((message, words))
            }
            _ => None,
        })
}

/// A run the engine has ended, and what its end and its reports are made of.
struct Ended<'a> {
    store: &'a Store,
    run: crate::ids::RunId,
    api: &'a Api,
    start: &'a RunStart,
    watchers: &'a Watchers,
    result: &'a engine::RunResult,
}

impl Ended<'_> {
    /// Stores the run's end (its finding set and end manifest) and publishes `run_ended`.
    fn close(&self) -> Result<(), CliError> {
        let result = self.result;
        campaign::end(
            self.store,
            campaign::Closing {
                kind: CampaignKind::Run,
                run: self.run,
                outcome: result.outcome,
                interactions: result.interactions,
                findings: &result.findings,
                series: result.stats.series.clone(),
                stats: Some(&result.stats),
            },
            &self.watchers.events,
        )?;
        Ok(())
    }

    /// The run's report, from its event stream and the store.
    fn report(&self, skipped_at_load: &[(String, String)]) -> Result<RunReport, CliError> {
        let log = &self.watchers.log;
        RunReport::build(self.api, self.start, log, self.store, skipped_at_load).map_err(
            |e| match e {
                crate::report::ReportError::Store(s) => CliError::Store(s),
                other => CliError::internal_from(other),
            },
        )
    }

    /// Writes the run's page; a page that could not be written is a warning on `err`.
    fn page(
        &self,
        report: &RunReport,
        report_path: Option<&Path>,
        err: &mut dyn Write,
    ) -> Option<PathBuf> {
        super::report::write_run_end_page(
            self.store,
            self.run,
            report,
            report_path,
            &self.watchers.log,
        )
        .map_err(|e| writeln!(err, "probe: warning: the run's page was not written: {e}"))
        .ok()
    }

    /// What is said on `err` after the summary: a run stopped by `--max-findings`, each
    /// program check that failed, and a hint when the base URL looks wrong.
    fn notes(&self, opts: &CampaignOpts, base_url: &str, err: &mut dyn Write) {
        let result = self.result;
        if result.stopped == Some(engine::StopReason::EnoughFindings) {
            let _ = writeln!(
                err,
                "probe: stopped early: {} distinct findings (--max-findings {})",
                result.findings.findings.len(),
                opts.max_findings.unwrap_or_default()
            );
        }
        // A failed program check ends nothing: the run went on, and says what it missed.
        for failure in &result.check_failures {
            let _ = writeln!(err, "probe: warning: {failure}");
        }
        // A login again that failed: the identity sent nothing more (docs/security.md).
        for identity in &result.stats.identities {
            if let Some(u) = &identity.unusable {
                let _ = writeln!(
                    err,
                    "probe: identity `{}` could not log in again {:.2} s into the run ({}); nothing more was sent as it{}",
                    identity.name,
                    u.after_ms as f64 / 1000.0,
                    u.reason,
                    if result.stopped == Some(engine::StopReason::DefaultIdentityUnusable) {
                        "; it was the default identity, which every ordinary request is sent as, so the run ended there"
                    } else {
                        ""
                    }
                );
            }
        }
        if let Some(hint) = not_found_hint(result, self.api, base_url) {
            let _ = writeln!(err, "probe: hint: {hint}");
        }
    }
}

/// A parameter the document declares where a credential goes is the credential's: it is
/// never generated, so an API never gets two values under one name from probe.
fn note_credential_parameters(c: &mut Campaign, err: &mut dyn Write) {
    let mut taken: BTreeMap<String, usize> = BTreeMap::new();
    for (_, place) in c.identities.drop_taken_parameters(&mut c.api) {
        *taken.entry(place).or_default() += 1;
    }
    for (place, operations) in taken {
        let _ = writeln!(
            err,
            "probe: note: the {place} parameter ({operations} operation{}) is where the credentials go: they are sent in its place",
            if operations == 1 { "" } else { "s" }
        );
    }
}

/// The settings, the limits and the operations of the run, each checked before anything
/// is stored or sent.
fn resolve(c: &mut Campaign) -> Result<Resolved, CliError> {
    let env: Vec<(String, String)> = std::env::vars().collect();
    let mut overrides = c.opts.settings.clone();
    if let Some(rate) = &c.opts.rate_limit {
        overrides.push(format!("send.rateLimit={rate}"));
    }
    // A flag for a setting, as --rate-limit is: the run's settings then name the file.
    if let Some(har) = &c.opts.seed_requests {
        overrides.push(format!("mutation.seedRequests={}", har.display()));
    }
    overrides.extend(c.network.iter().cloned());
    let settings = Settings::resolve_with(c.project.as_ref(), &env, &overrides)?;
    let options = settings.options()?;
    // A certificate, key or proxy that cannot be used stops the run before it is stored.
    network_usable(&options.send)?;
    let budget = match &c.opts.budget {
        Some(text) => Some(positive_duration("--budget", text)?),
        None if c.opts.requests.is_some() => None,
        None => c.default_budget,
    };
    let max_requests = c.opts.requests.or(if c.opts.budget.is_none() {
        c.default_requests
    } else {
        None
    });
    let mut tags = parse_tags(&c.opts.tags)?;
    let mut operations = selected_operations(c)?;
    let asked = split_of(c)?;
    // The parts of a campaign must agree on the seed without talking: without `--seed`
    // they derive it from what they share.
    let seed = match (c.opts.seed, &asked) {
        (Some(seed), _) => seed,
        (None, Some((_, inputs))) => inputs.seed(),
        (None, None) => now_ms() ^ u64::from(std::process::id()).rotate_left(32),
    };
    let part = match asked {
        Some((part, inputs)) => {
            let id = inputs.id(seed);
            operations = partition::operations_of(&c.api, &operations, part);
            tags.insert(partition::CAMPAIGN_TAG.to_owned(), id.clone());
            tags.insert(partition::PART_TAG.to_owned(), part.to_string());
            Some((part, id))
        }
        None => None,
    };
    let workers = c.opts.workers.unwrap_or(4);
    check_limits(c, workers, &options)?;
    Ok(Resolved {
        settings,
        options,
        budget,
        max_requests,
        tags,
        operations,
        seed,
        workers,
        part,
    })
}

/// Whether the client the run would send with can be made: its CA, client certificate and
/// key read, its proxy a URL. Shared by `probe run` and `probe replay`.
pub(crate) fn network_usable(send: &crate::settings::SendOptions) -> Result<(), CliError> {
    crate::send::Sender::with_options(send)
        .map(drop)
        .map_err(|e| CliError::Usage {
            message: e.to_string(),
            hint: Some(
                "see `probe docs settings` for send.caCert, send.clientCert, send.clientKey and send.proxy"
                    .into(),
            ),
        })
}

/// The part `--partition` (else a CI's variables) names, with what the campaign's parts
/// share; `None` for a run that is not split.
fn split_of(c: &Campaign) -> Result<Option<(Partition, partition::CampaignInputs<'_>)>, CliError> {
    let Some(split) = &c.split else {
        return Ok(None);
    };
    let env = |name: &str| std::env::var(name).ok();
    let part = match &split.partition {
        Some(text) => Some(Partition::parse(text)),
        None => Partition::from_env(&env).transpose(),
    };
    let part = match part {
        None => {
            if split.name.is_some() {
                return Err(CliError::Usage {
                    message:
                        "--campaign names the campaign of a split run, and this run is not split"
                            .into(),
                    hint: Some("add --partition K/N (`probe docs partitions`)".into()),
                });
            }
            return Ok(None);
        }
        Some(Ok(part)) => part,
        Some(Err(e)) => {
            return Err(CliError::Usage {
                message: e.to_string(),
                hint: Some("`probe docs partitions` says how a part is named".into()),
            })
        }
    };
    Ok(Some((
        part,
        partition::CampaignInputs {
            document: &c.document,
            count: part.count,
            name: split.name.as_deref(),
            ci_run: partition::ci_run(&env),
        },
    )))
}

/// The operations `--include` and `--exclude` leave; each of them must name one.
fn selected_operations(c: &Campaign) -> Result<Vec<usize>, CliError> {
    for s in c.include.iter().chain(&c.exclude) {
        if !c.api.operations.iter().any(|op| selects(s, op)) {
            return Err(CliError::Usage {
                message: format!("`{s}` names no operation of the document"),
                hint: Some("name an operationId, `METHOD /path`, a path prefix or a tag; `probe spec` lists them".into()),
            });
        }
    }
    let operations: Vec<usize> = c
        .api
        .operations
        .iter()
        .enumerate()
        .filter(|(_, op)| c.include.is_empty() || c.include.iter().any(|s| selects(s, op)))
        .filter(|(_, op)| !c.exclude.iter().any(|s| selects(s, op)))
        .map(|(i, _)| i)
        .collect();
    if operations.is_empty() {
        return Err(CliError::usage("no operation is left to test (the document has none, or --include/--exclude left none)"));
    }
    Ok(operations)
}

/// The limits that would make a run send nothing, refused; the outputs' paths checked.
fn check_limits(
    c: &mut Campaign,
    workers: usize,
    options: &crate::settings::Options,
) -> Result<(), CliError> {
    if workers == 0 {
        return Err(CliError::Usage {
            message: "--workers 0: at least one request must be in flight".into(),
            hint: Some("give a number of requests in flight at once, e.g. --workers 4".into()),
        });
    }
    if c.opts.requests == Some(0) {
        return Err(CliError::Usage {
            message: "--requests 0: a run must send at least one request".into(),
            hint: Some("give a number of requests, e.g. --requests 500, or a --budget".into()),
        });
    }
    if options.send.timeout.is_zero() {
        return Err(CliError::Usage {
            message: "setting `send.timeout` is 0s: every request would time out before it is sent"
                .into(),
            hint: Some("give a duration such as `--set send.timeout=10s`".into()),
        });
    }
    if options.send.max_body_bytes == 0 {
        return Err(CliError::Usage {
            message: "setting `send.maxBodyBytes` is 0: no reply body could be read".into(),
            hint: Some("give a size in bytes, e.g. `--set send.maxBodyBytes=10485760`".into()),
        });
    }
    if options.send.max_credential_bytes == 0 {
        return Err(CliError::Usage {
            message: "setting `send.maxCredentialBytes` is 0: no credential could be sent".into(),
            hint: Some("give a size in bytes, e.g. `--set send.maxCredentialBytes=65536`".into()),
        });
    }
    let max_credential = usize::try_from(options.send.max_credential_bytes).unwrap_or(usize::MAX);
    c.identities
        .limit_credentials(max_credential)
        .map_err(identity_usage)?;
    if c.opts.max_findings == Some(0) {
        return Err(CliError::Usage {
            message: "--max-findings 0: the run would stop before it sent anything".into(),
            hint: Some(
                "give the number of distinct findings to stop at, e.g. --max-findings 10".into(),
            ),
        });
    }
    // Before anything is sent: a report that could not be written at the end would cost
    // the whole budget first.
    check_output_path("--report", c.opts.report.as_deref())?;
    check_output_path("--junit", c.opts.junit.as_deref())?;
    check_output_path("--report-sarif", c.opts.report_sarif.as_deref())?;
    check_output_path("--summary-md", c.opts.summary_md.as_deref())?;
    check_output_path(
        "--events",
        c.opts.events.as_deref().filter(|p| *p != Path::new("-")),
    )
}

/// The plan, the dictionaries and the seeded requests the settings name.
fn read_inputs(
    generation: &crate::settings::GenerationOptions,
    c: &Campaign,
    err: &mut dyn Write,
) -> Result<Inputs, CliError> {
    // Plan and dictionaries: a file that cannot be read stops nothing silently; it is named
    // here and in report.json, and the run goes on without it.
    let mut unreadable: Vec<String> = Vec::new();
    // The files read here are kept with the run (`RunStart::inputs`), as read.
    let mut files: Vec<(String, String)> = Vec::new();
    let plan = match generation.plan.as_str() {
        "" => Plan::default_plan(),
        path => {
            let (plan, text) =
                Plan::load_with_text(Path::new(path)).map_err(|e| CliError::Usage {
                    message: format!("plan file: {e}"),
                    hint: Some(
                        "`probe docs plan` describes the format and shows the shipped plan".into(),
                    ),
                })?;
            files.push((format!("plan:{path}"), text));
            plan
        }
    };
    let mut dictionaries = Vec::new();
    for path in generation
        .dictionaries
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
    {
        for loaded in dictionary::load_all(Path::new(path)) {
            match loaded {
                Ok(d) => {
                    for entry in dictionary::unusable_entries(&d, &c.api) {
                        let _ = writeln!(err, "probe: warning: {}: {entry}", d.file);
                    }
                    files.push((format!("dictionary:{}", d.file), d.text.clone()));
                    dictionaries.push(d);
                }
                Err(e) => {
                    let _ = writeln!(err, "probe: warning: dictionary not used: {e}");
                    unreadable.push(e.to_string());
                }
            }
        }
    }
    let seeds = read_seeds(&generation.seed_requests, c, err)?;
    let checks = super::checks::read(c.project.as_ref(), &c.opts.checks)?;
    // Each check's text is kept with the run, so that what judged it stays known.
    for check in checks.iter() {
        files.push((format!("check:{}", check.name), check.text.clone()));
    }
    Ok(Inputs {
        plan,
        dictionaries,
        seeds,
        unreadable,
        files,
        checks,
    })
}

/// Accepted requests from elsewhere: a file that cannot be read stops the run (it was
/// asked for by name); entries that match nothing are said once and skipped.
fn read_seeds(
    seed_requests: &str,
    c: &Campaign,
    err: &mut dyn Write,
) -> Result<Vec<(crate::model::AcceptedRef, crate::model::TestCase, u16)>, CliError> {
    Ok(match seed_requests {
        "" => Vec::new(),
        path => {
            let seeds = crate::har::read_seeds(Path::new(path), &c.api, &c.base_url)
                .map_err(|e| CliError::Usage {
                    message: format!("--seed-requests: {e}"),
                    hint: Some("give a HAR 1.2 file, e.g. one `probe export <run> --format har` wrote or a browser saved".into()),
                })?;
            let r = &seeds.report;
            let _ = writeln!(
                err,
                "probe: {path}: {} of {} entries seed the mutation strategy ({} not answered 2xx, {} match no operation)",
                r.seeded, r.entries, r.not_accepted, r.unmatched
            );
            if r.unmatched > 0 {
                let _ = writeln!(
                    err,
                    "probe: note: unmatched entries, first {}: {}",
                    r.unmatched_examples.len(),
                    r.unmatched_examples.join("; ")
                );
            }
            seeds.cases
        }
    })
}

/// The run's manifest, with the document, the files its references reached and the input
/// files stored as blobs.
fn run_start(
    store: &Store,
    c: &Campaign,
    resolved: &Resolved,
    input_files: &[(String, String)],
) -> Result<RunStart, CliError> {
    // The document and the files its references reached are kept with every credential
    // of this invocation searched out of them, as the input files and the traffic are: a
    // token pasted into a document's example would otherwise be kept verbatim, and shown
    // by `probe show`. (A schema that names a credential itself, in an `enum` or a
    // `pattern`, then reads the placeholder in `recheck` and `replay`.)
    let redactor = c.identities.redactor();
    let kept = |bytes: &[u8]| redactor.bytes(bytes).unwrap_or_else(|| bytes.to_vec());
    let document = BlobId(store.put_blob(&kept(&c.document))?.digest());
    let mut documents = BTreeMap::new();
    for (key, bytes) in &c.documents {
        documents.insert(key.clone(), BlobId(store.put_blob(&kept(bytes))?.digest()));
    }
    let mut inputs = BTreeMap::new();
    for (key, text) in input_files {
        let bytes = kept(text.as_bytes());
        inputs.insert(key.clone(), BlobId(store.put_blob(&bytes)?.digest()));
    }
    Ok(RunStart {
        documents,
        inputs,
        kind: RunKind::Run,
        tool_version: env!("CARGO_PKG_VERSION").into(),
        store_format: crate::store::STORE_FORMAT.to_string(),
        document,
        document_source: c.document_source.clone(),
        settings: resolved.settings.to_map(),
        seed: resolved.seed,
        base_url: c.base_url.clone(),
        started_ms: now_ms(),
        name: c.opts.name.clone(),
        tags: resolved.tags.clone(),
        replay_of: None,
    })
}

impl Watchers {
    /// The watchers of a run, joined into one sink; the `--events` path is opened here,
    /// before anything is sent: a path that cannot be written is the user's to fix.
    fn start(
        global: &GlobalOpts,
        opts: &CampaignOpts,
        max_requests: Option<u64>,
        started_ms: u64,
    ) -> Result<Watchers, CliError> {
        let progress = Progress::new(!global.no_progress, max_requests);
        let events_out = EventsOut::open(opts.events.as_deref())?;
        let mut sinks = vec![progress.sink()];
        sinks.extend(events_out.sink());
        let log = crate::report::RunLog::new(started_ms);
        sinks.push(log.sink());
        // A sign of life in a CI log, where no bar is drawn.
        let heartbeat = Heartbeat::new();
        let beat_every = Heartbeat::period(
            std::env::var(crate::report::heartbeat::PERIOD_VAR)
                .ok()
                .as_deref(),
        )
        .filter(|_| !std::io::stderr().is_terminal());
        if beat_every.is_some() {
            sinks.push(heartbeat.sink());
        }
        let events = crate::events::fan_out(sinks);
        Ok(Watchers {
            progress,
            events_out,
            log,
            heartbeat,
            beat_every,
            events,
        })
    }
}

/// Runs the engine on a two-thread runtime, the heartbeat speaking on `err` meanwhile.
fn drive(
    config: RunConfig,
    run: crate::ids::RunId,
    spine: crate::campaign::Spine,
    watchers: &Watchers,
    err: &mut dyn Write,
) -> Result<engine::RunResult, CliError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| CliError::internal("cannot start the async runtime", e))?;
    runtime
        .block_on(async {
            let engine = engine::run(config, run, spine);
            let Some(every) = watchers.beat_every else {
                return engine.await;
            };
            tokio::pin!(engine);
            let mut beats = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
            loop {
                tokio::select! {
                    result = &mut engine => return result,
                    _ = beats.tick() => {
                        let _ = writeln!(err, "{}", watchers.heartbeat.line());
                    }
                }
            }
        })
        .map_err(|e| match e {
            engine::EngineError::Store(s) => CliError::Store(s),
            engine::EngineError::Settings(m) => CliError::usage(m),
            e @ engine::EngineError::Identity(_) => CliError::Usage {
                message: e.to_string(),
                hint: Some("`probe docs security` says how identities log in".into()),
            },
            other => CliError::internal_from(other),
        })
}

/// Writes `--report`, `--junit`, `--report-sarif` and `--summary-md`, and appends the
/// summary to `$GITHUB_STEP_SUMMARY` when GitHub Actions set it; each is written whatever
/// became of the others, and those that failed are returned, to be the command's error
/// after the summary.
fn write_report_files(
    opts: &CampaignOpts,
    json: &[u8],
    report: &RunReport,
    store: &Store,
    run: crate::ids::RunId,
) -> Vec<CliError> {
    let mut unwritten = Vec::new();
    let write = |unwritten: &mut Vec<CliError>, path: &Path, what: &str, bytes: &[u8]| {
        if let Err(e) = std::fs::write(path, bytes) {
            unwritten.push(CliError::internal(
                format!("cannot write {what} to {}", path.display()),
                e,
            ));
        }
    };
    if let Some(path) = &opts.report {
        write(&mut unwritten, path, "the report", json);
    }
    if let Some(path) = &opts.junit {
        write(
            &mut unwritten,
            path,
            "JUnit XML",
            junit::render(report).as_bytes(),
        );
    }
    if let Some(path) = &opts.report_sarif {
        match crate::report::sarif::of_run(store, run, report) {
            Ok(log) => write(
                &mut unwritten,
                path,
                "SARIF",
                &crate::report::sarif::to_bytes(&log),
            ),
            Err(e) => unwritten.push(CliError::Store(e)),
        }
    }
    let markdown = crate::report::summary::render(report);
    if let Some(path) = &opts.summary_md {
        write(
            &mut unwritten,
            path,
            "the Markdown summary",
            markdown.as_bytes(),
        );
    }
    // GitHub Actions names a file per step and expects it appended to, never replaced.
    if let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(format!("{markdown}\n").as_bytes()));
        if let Err(e) = appended {
            unwritten.push(CliError::internal(
                format!(
                    "cannot append the summary to $GITHUB_STEP_SUMMARY ({})",
                    path.display()
                ),
                e,
            ));
        }
    }
    unwritten
}

/// The exit code of a recorded run, with what it means said on `err`.
fn exit_code(
    result: &engine::RunResult,
    interrupts: &Interrupts,
    base_url: &str,
    tls: Option<(String, Option<&'static str>)>,
    err: &mut dyn Write,
) -> u8 {
    match result.outcome {
        RunOutcome::Unreachable => {
            let totals = result.stats.transport_totals();
            let connection_only = totals.transport_by_kind().all(|(k, _)| {
                matches!(
                    k,
                    TransportErrorKind::Refused | TransportErrorKind::Dns | TransportErrorKind::Tls
                )
            });
            let what = if connection_only {
                format!("the API at {base_url} could not be reached")
            } else {
                format!("no request to {base_url} got an HTTP answer")
            };
            let _ = writeln!(err, "probe: error: {what}: {}", unanswered_causes(result));
            if let Some((message, words)) = tls {
                let _ = writeln!(err, "  the TLS failure: {message}");
                if let Some(words) = words {
                    let _ = writeln!(err, "  hint: {words}");
                }
            }
            exit::UNREACHABLE
        }
        RunOutcome::Refused => {
            let _ = writeln!(err, "probe: error: the API refused every request of the opening lap for credentials (401/403); the run stopped after it");
            let _ = writeln!(
                err,
                "  hint: give credentials with --bearer, --basic, --api-key or --header"
            );
            exit::REFUSED
        }
        RunOutcome::Interrupted => {
            let (signal, code) = interrupts
                .received()
                .unwrap_or(("SIGINT (Ctrl-C)", exit::INTERRUPTED));
            let _ = writeln!(
                err,
                "probe: interrupted by {signal}: the requests in flight were cancelled; the run is recorded as interrupted, with its reports"
            );
            code
        }
        _ if !result.findings.findings.is_empty() => exit::FINDINGS,
        _ => match tested_nothing(result) {
            // A run that tested nothing never passes: exit 3, the cause named.
            Some(why) => {
                let _ = writeln!(err, "probe: error: {why}; nothing of the API was tested");
                exit::UNREACHABLE
            }
            None => exit::OK,
        },
    }
}

/// Why a run with no finding tested nothing, if it did: it got no answer at all (its budget
/// ended before the first one), or every answer was 429 or 503, which says nothing of the
/// API but that it will not serve now.
fn tested_nothing(result: &engine::RunResult) -> Option<String> {
    let answered = result.stats.answered();
    if answered == 0 {
        return Some(if result.interactions == 0 {
            "the run sent no request before it ended".to_owned()
        } else {
            format!(
                "none of the run's {} requests got an answer before it ended",
                result.interactions
            )
        });
    }
    let unavailable: u64 = result
        .stats
        .per_operation
        .values()
        .map(|c| c.unavailable)
        .sum();
    (unavailable >= answered).then(|| {
        format!(
            "every one of the {answered} answers was 429 Too Many Requests or 503 Service \
             Unavailable"
        )
    })
}

/// `option`'s file must go in a directory that exists: found out only after the run, it
/// would cost the whole budget first (exit 4). `None`: nothing to check.
fn check_output_path(option: &str, path: Option<&Path>) -> Result<(), CliError> {
    let Some(path) = path else { return Ok(()) };
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let problem = if path.is_dir() {
        Some(format!("{} is a directory", path.display()))
    } else if dir.exists() && !dir.is_dir() {
        Some(format!("{} is not a directory", dir.display()))
    } else if !dir.is_dir() {
        Some(format!("the directory {} does not exist", dir.display()))
    } else {
        None
    };
    if let Some(problem) = problem {
        return Err(CliError::Usage {
            message: format!("{option} {}: {problem}; nothing was sent", path.display()),
            hint: Some("create the directory first, or give a file in one that exists".into()),
        });
    }
    // Opened for writing as the run's end will (without truncating what is there): a file
    // or directory this user may not write, or a read-only medium, is found out now. A file
    // made only to find that out is removed again.
    let existed = path.exists();
    if existed && !path.is_file() {
        // A FIFO or a device: opening one can wait for a reader, or do something; it is
        // written at the run's end as it is.
        return Ok(());
    }
    match std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
    {
        Ok(_) => {
            if !existed {
                let _ = std::fs::remove_file(path);
            }
            Ok(())
        }
        Err(e) => Err(CliError::Usage {
            message: format!(
                "{option} {}: cannot be written ({e}); nothing was sent",
                path.display()
            ),
            hint: Some("give a file this user may write".into()),
        }),
    }
}

/// When most answers were 404, the likeliest cause: the base path is missing from (or
/// wrong in) `--url`.
fn not_found_hint(result: &engine::RunResult, api: &Api, base_url: &str) -> Option<String> {
    let (mut answers, mut not_found) = (0u64, 0u64);
    for counts in result.stats.per_operation.values() {
        answers += counts.by_class[1..].iter().sum::<u64>();
        not_found += counts.not_found;
    }
    // A handful of answers says little; more than half of them 404 is no accident.
    if answers < 5 || not_found * 2 <= answers {
        return None;
    }
    let mut hint = format!(
        "{not_found} of {answers} answers were 404 Not Found: check the base path in --url {base_url}"
    );
    let path = url::Url::parse(base_url)
        .map(|u| u.path().trim_end_matches('/').to_owned())
        .unwrap_or_default();
    let base_path = api.base_path.trim_end_matches('/');
    if !base_path.is_empty() && !path.ends_with(base_path) {
        hint.push_str(&format!(
            " (the document's server {} has the base path {base_path})",
            api.servers.first().map(String::as_str).unwrap_or_default()
        ));
    } else if let Some(server) = api.servers.first() {
        hint.push_str(&format!(" against the document's servers ({server})"));
    }
    Some(hint)
}

/// A duration option that must be more than nothing: `--budget 0s` would run nothing and
/// report nothing found.
fn positive_duration(option: &str, text: &str) -> Result<Duration, CliError> {
    let hint = Some("write a duration such as 60s, 5m or 1h".to_owned());
    match humantime::parse_duration(text) {
        Ok(d) if !d.is_zero() => Ok(d),
        Ok(_) => Err(CliError::Usage {
            message: format!("{option} `{text}`: a run needs some time to send anything"),
            hint,
        }),
        Err(e) => Err(CliError::Usage {
            message: format!("{option} `{text}`: {e}"),
            hint,
        }),
    }
}

/// Why nothing answered, most frequent cause first: `120 reset (the connection was reset
/// or closed before a whole reply), 3 timeout (...)`.
fn unanswered_causes(result: &engine::RunResult) -> String {
    let totals = result.stats.transport_totals();
    let mut kinds: Vec<_> = totals.transport_by_kind().collect();
    kinds.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    let causes: Vec<String> = kinds
        .iter()
        .map(|(k, n)| format!("{n} {} ({})", k.name(), k.describe()))
        .collect();
    if causes.is_empty() {
        "nothing was sent".into()
    } else {
        causes.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_stripped_from_the_base_url() {
        let (url, creds) = strip_credentials("http://bob:secret@127.0.0.1:8080/v1/").unwrap();
        assert_eq!(url, "http://127.0.0.1:8080/v1");
        assert_eq!(creds.as_deref(), Some("bob:secret"));
        assert!(strip_credentials("ftp://x").is_err());
        assert!(strip_credentials("not a url").is_err());
    }
}
