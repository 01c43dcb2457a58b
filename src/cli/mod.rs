//! The command line: clap definitions only. Doc comments are the help text.
//!
//! Turning these options into engine options happens in [`crate::app`].
//!
//! Depends on: nothing else in probe.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// probe: test a REST API from its OpenAPI document, and keep every request it sent.
#[derive(Debug, Parser)]
#[command(
    name = "probe",
    version = VERSION,
    about,
    propagate_version = true,
    after_help = "Example:\n  probe demo                     a bundled API with planted faults, tested for a few seconds\n  probe run --spec openapi.yaml --url http://127.0.0.1:8080\n\n`probe help COMMAND` shows a command's options and an example; `probe man` prints the manual page."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalOpts,
    #[command(subcommand)]
    pub command: Command,
}

/// What `probe --version` prints: the package's version, and the commit and its date when
/// built from a git clone (`build.rs`).
pub const VERSION: &str = env!("PROBE_BUILD_VERSION");

/// Options every command takes.
#[derive(Debug, Args)]
pub struct GlobalOpts {
    /// The store: a directory, or `s3://bucket/prefix` for one on object storage [default:
    /// `.probe` in the current directory; or `store` in probe.toml]
    #[arg(long, global = true, env = "PROBE_STORE", value_name = "DIR|URL")]
    pub store: Option<PathBuf>,
    /// The project file: settings, identities, checks, and `spec`, `url`, `store` [default:
    /// the first probe.toml found from the current directory up to the repository's top]
    #[arg(long, global = true, env = "PROBE_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Colour severities and verdicts: `auto` on a terminal unless NO_COLOR is set
    /// (CLICOLOR_FORCE: through pipes too)
    #[arg(
        long,
        global = true,
        value_enum,
        value_name = "WHEN",
        default_value = "auto"
    )]
    pub color: ColorWhen,
    /// Never draw a progress bar.
    #[arg(long, global = true, env = "PROBE_NO_PROGRESS", value_parser = clap::builder::BoolishValueParser::new())]
    pub no_progress: bool,
}

/// When to colour the output (`--color`). The values have no help of their own: clap
/// would then print every command's help in its long layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorWhen {
    // On a terminal, unless NO_COLOR is set; CLICOLOR_FORCE turns it on anywhere.
    Auto,
    // Always, through pipes too.
    Always,
    Never,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Test an API and record the campaign.
    #[command(
        after_help = "Example:\n  probe run --spec openapi.yaml --url http://127.0.0.1:8080 --budget 2m --junit junit.xml"
    )]
    Run(Box<RunOpts>),
    /// Run a short campaign against a bundled API with planted faults.
    #[command(after_help = "Example:\n  probe demo --seed 7")]
    Demo(DemoOpts),
    /// Load a document and list its operations, each testable or skipped with the reason.
    #[command(after_help = "Example:\n  probe spec openapi.yaml")]
    Spec(SpecOpts),
    /// List recorded runs, newest first.
    #[command(after_help = "Example:\n  probe log -n 5")]
    Log(LogOpts),
    /// Show any stored object by id (or shortest unique prefix).
    #[command(
        after_help = "Example:\n  probe show 3f2a9c1e:1 --as curl     a finding's reproducer as a curl command line"
    )]
    Show(ShowOpts),
    /// Inspect and maintain the store.
    #[command(subcommand, after_help = "Example:\n  probe store verify")]
    Store(StoreCommand),
    /// Judge stored runs again with this build's oracles; sends nothing.
    ///
    /// Writes a new finding set beside each run (the run itself is never changed) and
    /// prints what changed against the findings recorded at run time. Exits 1 when a
    /// recheck found a distinct finding the run-time judging did not.
    #[command(after_help = "Example:\n  probe recheck --since 30d --oracle server_error")]
    Recheck(RecheckOpts),
    /// Compare two runs: findings, operations answered 2xx, status classes, test cases.
    ///
    /// B is the newer state: "gained" means in B and not in A.
    #[command(
        after_help = "Example:\n  probe diff tag:branch=main tag:branch=feature --fail-on new-findings"
    )]
    Diff(DiffOpts),
    /// Re-send a recorded interaction, finding or run and compare the answers.
    #[command(after_help = "Example:\n  probe replay 3f2a9c1e:1 --times 5 --exit-code")]
    Replay(ReplayOpts),
    /// Write the page of a recorded run: one self-contained HTML file.
    #[command(after_help = "Example:\n  probe report nightly --html nightly.html")]
    Report(ReportOpts),
    /// Write a recorded run in another format: HAR 1.2 (every interaction, credentials as
    /// `<probe:secret>`); its findings as SARIF 2.1.0, a Web Fuzzing Commons report or the
    /// Markdown summary.
    #[command(after_help = "Example:\n  probe export nightly --format har -o nightly.har")]
    Export(ExportOpts),
    /// Answer HTTP requests with the responses a run recorded.
    #[command(after_help = "Example:\n  probe serve nightly --port 8080")]
    Serve(ServeOpts),
    /// Print a shell's completion script for probe on standard output.
    #[command(
        after_help = "Example:\n  probe completions bash > ~/.local/share/bash-completion/completions/probe\n  probe completions zsh > ~/.zfunc/_probe\n  probe completions fish > ~/.config/fish/completions/probe.fish"
    )]
    Completions(CompletionsOpts),
    /// Print probe's manual page (roff) on standard output, or write every page to a
    /// directory.
    #[command(
        after_help = "Example:\n  probe man | man -l -\n  probe man run | man -l -\n  probe man --dir /usr/local/share/man/man1"
    )]
    Man(ManOpts),
    /// Print one of probe's guides (Markdown) on standard output, or list them.
    #[command(
        after_help = "Example:\n  probe docs            the guides, one line each\n  probe docs checks     how to write your own checks"
    )]
    Docs(DocsOpts),
}

#[derive(Debug, Args)]
pub struct DocsOpts {
    /// The guide to print (`checks`, `settings`, `security`, ...); none: the list.
    #[arg(value_name = "TOPIC")]
    pub topic: Option<String>,
}

#[derive(Debug, Args)]
pub struct CompletionsOpts {
    /// The shell to complete in.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManOpts {
    /// The command whose page to print (`run`, `store gc`); none: probe's own page.
    #[arg(value_name = "COMMAND")]
    pub command: Vec<String>,
    /// Write every page here instead (`probe.1`, `probe-run.1`, ...).
    #[arg(long, value_name = "DIR", conflicts_with = "command")]
    pub dir: Option<PathBuf>,
}

/// Options shared by `run` and `demo`.
#[derive(Debug, Args, Clone)]
pub struct CampaignOpts {
    /// Stop after this long (e.g. `60s`, `5m`) [default: run: 60s unless --requests is
    /// given; demo: 30s or 400 requests, whichever comes first]
    #[arg(long, value_name = "DURATION")]
    pub budget: Option<String>,
    /// A file of your own checks, `[[check]]` tables in CEL, judged beside the oracles;
    /// repeatable. probe.toml's `[[check]]` tables are judged too.
    #[arg(long = "checks", value_name = "FILE")]
    pub checks: Vec<PathBuf>,
    /// Stop after this many requests [default: no limit but the budget]
    #[arg(long, value_name = "N")]
    pub requests: Option<u64>,
    /// Stop once this many distinct findings are found; the run ends as when its budget is
    /// spent (requests in flight cancelled, reports written).
    #[arg(long, value_name = "N")]
    pub max_findings: Option<u64>,
    /// Seed of every random choice; the same seed repeats the run [default: from the clock,
    /// printed in the summary]
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Requests in flight at once.
    #[arg(long, value_name = "N", default_value = "4")]
    pub workers: Option<usize>,
    /// At most this many requests per second (`10`, `600/m`): `--set send.rateLimit=RATE`
    /// [default: no limit]
    #[arg(long, value_name = "RATE")]
    pub rate_limit: Option<String>,
    /// Write report.json here (it is also kept inside the store).
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Write JUnit XML here, for CI.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Write the findings as SARIF 2.1.0 here, for GitHub code scanning and GitLab.
    #[arg(long, value_name = "FILE")]
    pub report_sarif: Option<PathBuf>,
    /// Write a Markdown summary here, for a CI job's summary page; under GitHub Actions it
    /// is also appended to `$GITHUB_STEP_SUMMARY`.
    #[arg(long, value_name = "FILE")]
    pub summary_md: Option<PathBuf>,
    /// Write the run's events here as they happen, one JSON object a line; `-` is standard
    /// output (the summary then goes to standard error).
    #[arg(long, value_name = "FILE")]
    pub events: Option<PathBuf>,
    /// A setting, `group.name=value` (repeatable).
    #[arg(long = "set", value_name = "GROUP.NAME=VALUE")]
    pub settings: Vec<String>,
    /// Requests of a HAR file answered 2xx, as accepted requests for the mutation strategy:
    /// `--set mutation.seedRequests=FILE`.
    #[arg(long, value_name = "FILE.har")]
    pub seed_requests: Option<PathBuf>,
    /// A name to refer to this campaign by.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// A tag `k=v` (repeatable).
    #[arg(long = "tag", value_name = "K=V")]
    pub tags: Vec<String>,
}

#[derive(Debug, Args)]
pub struct RunOpts {
    /// The OpenAPI document: a file, or an http(s) URL [required, unless probe.toml has
    /// `spec`]
    #[arg(long, value_name = "FILE|URL")]
    pub spec: Option<String>,
    /// Base URL of the API under test; wins over the document's `servers` [required,
    /// unless probe.toml has `url`]
    #[arg(long, value_name = "BASE")]
    pub url: Option<String>,
    #[command(flatten)]
    pub credentials: CredentialOpts,
    #[command(flatten)]
    pub network: NetworkOpts,
    /// Only these operations: operation id, `METHOD /path`, path prefix or tag (repeatable).
    #[arg(long, value_name = "SELECTOR")]
    pub include: Vec<String>,
    /// Never these operations: operation id, `METHOD /path`, path prefix or tag (repeatable).
    #[arg(long, value_name = "SELECTOR")]
    pub exclude: Vec<String>,
    /// Run only the K-th of N parts of the campaign (each part whole path families); without
    /// it, read from `JOB_COMPLETION_INDEX` and `PROBE_PARTITIONS` (Kubernetes) or `CI_NODE_INDEX`
    /// and `CI_NODE_TOTAL` (GitLab).
    #[arg(long, value_name = "K/N")]
    pub partition: Option<String>,
    /// A name the parts of one split campaign share, part of its id.
    #[arg(long = "campaign", value_name = "NAME")]
    pub campaign_name: Option<String>,
    #[command(flatten)]
    pub campaign: CampaignOpts,
}

/// Credentials of this invocation; never stored (the store keeps `<probe:secret>`).
#[derive(Debug, Args, Clone)]
pub struct CredentialOpts {
    /// An extra header on every request, `'Name: value'` (repeatable). Never stored, unless
    /// it is a standard header that carries no credential (Accept, Content-Type, ...).
    #[arg(long = "header", short = 'H', value_name = "'K: V'")]
    pub headers: Vec<String>,
    /// Bearer token for the document's bearer/OAuth2 schemes. Never stored.
    #[arg(
        long,
        env = "PROBE_BEARER",
        value_name = "TOKEN",
        hide_env_values = true
    )]
    pub bearer: Option<String>,
    /// `user:password` for the document's basic scheme. Never stored.
    #[arg(
        long,
        env = "PROBE_BASIC",
        value_name = "USER:PASS",
        hide_env_values = true
    )]
    pub basic: Option<String>,
    /// API key for the document's apiKey schemes. Never stored.
    #[arg(
        long,
        env = "PROBE_API_KEY",
        value_name = "KEY",
        hide_env_values = true
    )]
    pub api_key: Option<String>,
    /// Another identity to send as, `NAME=KIND:VALUE` (repeatable): `bearer:TOKEN`,
    /// `basic:USER:PASS`, `api-key:KEY` or `header:NAME:VALUE`; a value `env:VAR` is read
    /// from that variable. The first identity is the default (the flags above make one named
    /// `default`); with two, probe asks whether one can read or change what the other made.
    /// Logins: `[[identity]]` tables in probe.toml. Never stored.
    #[arg(long = "identity", value_name = "NAME=KIND:VALUE")]
    pub identities: Vec<String>,
}

/// How requests reach the API: TLS trust, a client certificate, a proxy, HTTP/2. Each flag
/// is a `send.*` setting (docs/settings.md), so probe.toml can hold them too.
#[derive(Debug, Args, Clone, Default)]
pub struct NetworkOpts {
    /// Trust the CA certificates of this PEM file too, for an API on a private or
    /// self-signed CA: `--set send.caCert=FILE`.
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// Present this client certificate (PEM, with its chain) for mutual TLS:
    /// `--set send.clientCert=FILE`; needs --client-key.
    #[arg(long, value_name = "FILE", requires = "client_key")]
    pub client_cert: Option<PathBuf>,
    /// The client certificate's private key (PEM; may be the --client-cert file):
    /// `--set send.clientKey=FILE`.
    #[arg(long, value_name = "FILE", requires = "client_cert")]
    pub client_key: Option<PathBuf>,
    /// Verify no TLS certificate at all (said in the summary and report.json):
    /// `--set send.insecure=true`.
    #[arg(long)]
    pub insecure: bool,
    /// Send through this proxy (`http://127.0.0.1:8080`), or `env` for HTTPS_PROXY,
    /// HTTP_PROXY, ALL_PROXY and NO_PROXY; without it the environment's proxy is not used:
    /// `--set send.proxy=URL`.
    #[arg(long, value_name = "URL|env")]
    pub proxy: Option<String>,
    /// Use HTTP/2 when an https API offers it (ALPN): `--set send.http2=true`.
    #[arg(long)]
    pub http2: bool,
}

impl NetworkOpts {
    /// The settings these flags stand for, as `--set` would give them.
    pub fn settings(&self) -> Vec<String> {
        let mut out = Vec::new();
        let path = |name: &str, p: &Option<PathBuf>, out: &mut Vec<String>| {
            if let Some(p) = p {
                out.push(format!("{name}={}", p.display()));
            }
        };
        path("send.caCert", &self.cacert, &mut out);
        path("send.clientCert", &self.client_cert, &mut out);
        path("send.clientKey", &self.client_key, &mut out);
        if self.insecure {
            out.push("send.insecure=true".into());
        }
        if let Some(proxy) = &self.proxy {
            out.push(format!("send.proxy={proxy}"));
        }
        if self.http2 {
            out.push("send.http2=true".into());
        }
        out
    }
}

#[derive(Debug, Args)]
pub struct DemoOpts {
    #[command(flatten)]
    pub campaign: CampaignOpts,
}

#[derive(Debug, Args)]
pub struct SpecOpts {
    /// The OpenAPI document: a file, or an http(s) URL.
    pub document: String,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct LogOpts {
    /// Print JSON Lines instead of a table.
    #[arg(long)]
    pub json: bool,
    /// At most this many runs.
    #[arg(long, short = 'n', value_name = "N")]
    pub limit: Option<usize>,
}

#[derive(Debug, Args)]
pub struct ShowOpts {
    /// Object id or shortest unique prefix, a run name (the newest run of that name), or a
    /// finding: `<finding set id>:<n>`, as the run's summary, `probe show <set>` and the
    /// page print it.
    pub id: String,
    /// Print JSON.
    #[arg(long, conflicts_with = "reproducer")]
    pub json: bool,
    /// Print a reproducer of an interaction, or of a finding (`<finding set id>:<n>`, or
    /// its reproducer's id): a command line, or for a finding of a series a shell script
    /// of the whole series. Credentials are read from `PROBE_SECRET_<NAME>` variables.
    #[arg(long = "as", value_enum, value_name = "FORM")]
    pub reproducer: Option<ReproducerForm>,
    /// For a run: list its interactions too (the summary lists its finding sets and
    /// findings only).
    #[arg(long)]
    pub interactions: bool,
    /// For a run: list its first N interactions.
    #[arg(short = 'n', value_name = "N")]
    pub first: Option<usize>,
}

/// The forms of `probe show --as`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReproducerForm {
    /// A curl command line (a POSIX shell script for a series).
    Curl,
    /// An HTTPie command line.
    Httpie,
    /// A Python snippet using `requests`.
    Python,
}

#[derive(Debug, Args)]
pub struct ReportOpts {
    /// The run: id prefix, run name, or `tag:k=v` (the newest run with that tag); or a
    /// campaign, its parts on one page (`campaign:latest`, `campaign:tag:k=v`,
    /// `campaign:ID`).
    pub run: String,
    /// Write the page here: curves, operations, findings with their requests and replies.
    #[arg(long, value_name = "FILE")]
    pub html: PathBuf,
}

/// The formats of `probe export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// HTTP Archive 1.2 (JSON).
    Har,
    /// SARIF 2.1.0: the findings, for code scanning.
    Sarif,
    /// A Web Fuzzing Commons report, schema 0.6.0.
    Wfc,
    /// The Markdown summary a run writes with `--summary-md`.
    Markdown,
}

#[derive(Debug, Args)]
pub struct ExportOpts {
    /// The run: id prefix, run name, or `tag:k=v` (the newest run with that tag).
    pub run: String,
    /// The format to write.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: ExportFormat,
    /// Write here instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// `probe replay`.
///
/// Re-sends what was recorded, with credentials from this invocation only, and shows
/// recorded versus now. A test case whose values came from earlier answers has those
/// re-sent first, and the new values flow in. The replay is recorded as a run of its own.
#[derive(Debug, Args)]
pub struct ReplayOpts {
    /// What to replay: an interaction id (a finding is named by its reproducer, as
    /// reports print it), `<finding set id>:<n>`, a finding set, a run (id prefix or name),
    /// or a campaign, part after part (`campaign:latest`, `campaign:tag:k=v`, `campaign:ID`).
    pub target: String,
    /// Base URL to send to (default: the recorded run's base URL).
    #[arg(long, value_name = "BASE")]
    pub url: Option<String>,
    #[command(flatten)]
    pub credentials: CredentialOpts,
    #[command(flatten)]
    pub network: NetworkOpts,
    /// Re-send this many times and report how often it reproduced (flakiness).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub times: u32,
    /// Exit 1 when the finding is reproduced (default: exit 0 whatever the verdict).
    #[arg(long)]
    pub exit_code: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Replay even though this invocation lacks credentials the run sent (without this, such
    /// a replay stops, exit 2, naming them): the verdict then says it was made without them.
    #[arg(long)]
    pub without_credentials: bool,
    /// Write the replay's events here as they happen, one JSON object a line; `-` is
    /// standard output (the replay's own output then goes to standard error).
    #[arg(long, value_name = "FILE")]
    pub events: Option<PathBuf>,
}

/// `probe serve`.
///
/// Answers each request with the response recorded for the same request (method, path,
/// query and body; headers are ignored), in recorded order when one request was recorded
/// several times; a 404 with the closest recorded request otherwise. Listens on
/// 127.0.0.1 only, until Ctrl-C.
#[derive(Debug, Args)]
pub struct ServeOpts {
    /// The run to serve: id prefix or name.
    pub run: String,
    /// Port on 127.0.0.1; 0 takes any free port.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub port: u16,
}

#[derive(Debug, Args)]
pub struct RecheckOpts {
    /// Runs to recheck: id prefix, run name, or `tag:k=v` (the newest run with that tag); a
    /// campaign (`campaign:latest`, `campaign:tag:k=v`, `campaign:ID`) is each of its parts.
    #[arg(value_name = "RUN", required_unless_present_any = ["since", "every_tag", "every_named", "all"])]
    pub runs: Vec<String>,
    /// Every run started within this time, e.g. `30d`, `12h` (oldest first; with
    /// `--tag`, `--named`, only those that match them too).
    #[arg(long, value_name = "DURATION", value_parser = parse_age)]
    pub since: Option<std::time::Duration>,
    /// Every run with this tag, `k=v` (repeatable: runs with all of them).
    #[arg(long = "tag", value_name = "K=V", value_parser = parse_tag)]
    pub every_tag: Vec<(String, String)>,
    /// Every run of this name: a campaign run again and again under one name.
    #[arg(long = "named", value_name = "NAME")]
    pub every_named: Option<String>,
    /// Every run in the store.
    #[arg(long, conflicts_with_all = ["since", "every_tag", "every_named"])]
    pub all: bool,
    /// A `checks.*` setting over the run's stored settings, e.g. `checks.server_error=true`
    /// (repeatable).
    #[arg(long = "set", value_name = "checks.NAME=VALUE")]
    pub settings: Vec<String>,
    /// Apply only this oracle, by name or code (`server_error`, `F100`); repeatable.
    #[arg(long = "oracle", value_name = "NAME|CODE")]
    pub oracles: Vec<String>,
    /// A file of your own checks, `[[check]]` tables in CEL, judged beside the oracles;
    /// repeatable. probe.toml's `[[check]]` tables are judged too.
    #[arg(long = "checks", value_name = "FILE")]
    pub checks: Vec<PathBuf>,
    /// Worker threads judging in parallel (the result does not depend on it).
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub threads: usize,
    /// Print JSON Lines (one `{"type":"recheck","data":…}` per run).
    #[arg(long)]
    pub json: bool,
    /// Write the recheck's events here, one JSON object a line; `-` is standard output (the
    /// recheck's own output then goes to standard error).
    #[arg(long, value_name = "FILE")]
    pub events: Option<PathBuf>,
    /// Write the findings of the recheck as SARIF 2.1.0 here (one run only).
    #[arg(long, value_name = "FILE")]
    pub report_sarif: Option<PathBuf>,
}

/// When `probe diff` exits 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    /// B has a distinct finding A has not.
    NewFindings,
    /// Anything but timing differs: findings, 2xx operations, status counts, test cases.
    AnyChange,
}

#[derive(Debug, Args)]
pub struct DiffOpts {
    /// The earlier run: id prefix, run name (the newest run of that name), `tag:k=v` (the
    /// newest run with that tag), or a finding set's id (that set, and the run it judges); or
    /// a campaign, its parts together (`campaign:latest`, `campaign:tag:k=v`, `campaign:ID`).
    #[arg(value_name = "RUN_A")]
    pub a: String,
    /// The later run, named the same ways.
    #[arg(value_name = "RUN_B")]
    pub b: String,
    /// Exit 1 when this is true (for CI); without it, diff exits 0.
    #[arg(long, value_enum, value_name = "WHAT")]
    pub fail_on: Option<FailOn>,
    /// Print one JSON object `{"type":"diff","data":…}`.
    #[arg(long)]
    pub json: bool,
    /// Also write the comparison as a page: both runs' curves, findings gained, lost and
    /// kept, operations whose status classes changed.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Compare this finding set of run A (an id prefix; `probe show <run>` lists them)
    /// instead of its run-time set or newest full recheck.
    #[arg(long, value_name = "SET")]
    pub finding_set_a: Option<String>,
    /// The same for run B.
    #[arg(long, value_name = "SET")]
    pub finding_set_b: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Re-hash every object and check every reference; non-zero exit on any problem.
    #[command(after_help = "Example:\n  probe store verify --json")]
    Verify(StoreJsonOpts),
    /// Objects by kind, bytes raw vs stored, dedup ratio.
    #[command(after_help = "Example:\n  probe store stats")]
    Stats(StoreJsonOpts),
    /// Drop objects that no run reaches. Needs the store alone: refused while another
    /// process has it open (on object storage: while a writer holds a lock).
    #[command(
        after_help = "Examples:\n  probe store gc\n  probe --store s3://team-probe/ci store gc --grace 2h"
    )]
    Gc(GcOpts),
    /// Rebuild the SQLite index from the objects alone (a damaged index is moved aside
    /// first). Needs the store alone, as gc does.
    #[command(after_help = "Example:\n  probe store reindex")]
    Reindex(StoreJsonOpts),
    /// Rewrite a format-1 store as format 2 (blocks, a smaller index), verified before it
    /// takes the place of the old files. Needs the store alone, as gc does.
    #[command(after_help = "Example:\n  probe store upgrade --keep-old")]
    Upgrade(UpgradeOpts),
    /// Upload what a local store holds that an object store lacks.
    ///
    /// Sends only whole blocks not sent before from this store; what is there already is
    /// not sent again. Completes the upload of a run whose store went away mid-run.
    #[command(after_help = "Example:\n  probe store push .probe s3://team-probe/api")]
    Push(PushOpts),
    /// Download runs of an object store into a local store.
    ///
    /// Every run, or one run (`--run`) or the runs of a tag (`--tag`), with what they
    /// need; packs the local store has already are not downloaded again.
    #[command(
        after_help = "Example:\n  probe store pull s3://team-probe/api .probe --tag branch=main"
    )]
    Pull(PullOpts),
    /// Join local stores into one: every run of each STORE copied into `-o DIR` (created
    /// when absent), a union by content address (an object DIR holds is not copied again).
    #[command(
        after_help = "Example:\n  probe store merge part-1 part-2 part-3 part-4 -o campaign"
    )]
    Merge(MergeOpts),
    /// Write a synthetic run (for benchmarks and crash tests; feature `dev-tools`).
    #[cfg(feature = "dev-tools")]
    #[command(hide = true)]
    Synth(SynthOpts),
}

#[derive(Debug, Args)]
pub struct UpgradeOpts {
    /// Leave the format-1 files (`packs/`, `dicts/`, `index.sqlite`) beside the new ones.
    #[arg(long)]
    pub keep_old: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct PushOpts {
    /// The local store to upload from.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// The object store: `s3://bucket/prefix`.
    #[arg(value_name = "URL")]
    pub url: String,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct PullOpts {
    /// The object store: `s3://bucket/prefix`.
    #[arg(value_name = "URL")]
    pub url: String,
    /// The local store to download into (created when absent).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Only this run (an id prefix of at least 4 hex digits, or a run name).
    #[arg(long, value_name = "RUN", conflicts_with = "tag")]
    pub run: Option<String>,
    /// Only the runs tagged `key=value`.
    #[arg(long, value_name = "K=V", value_parser = parse_tag)]
    pub tag: Option<(String, String)>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct MergeOpts {
    /// The stores to copy from.
    #[arg(required = true, value_name = "STORE")]
    pub sources: Vec<PathBuf>,
    /// The store to copy into.
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    pub output: PathBuf,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct GcOpts {
    /// On object storage: delete nothing written less than this long ago (a writer that
    /// started recently may name it). Default 30min, a lock's expiry.
    #[arg(long, value_name = "AGE", value_parser = parse_age)]
    pub grace: Option<std::time::Duration>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct StoreJsonOpts {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[cfg(feature = "dev-tools")]
#[derive(Debug, Args)]
pub struct SynthOpts {
    /// Interactions to write.
    #[arg(long, default_value_t = 1000)]
    pub interactions: u64,
    /// Print each interaction id once it is durably recorded.
    #[arg(long)]
    pub print_acks: bool,
    /// Seed of the synthetic data.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// After every this many interactions, a series naming them (0: none), recorded as
    /// the engine records one once its steps are answered.
    #[arg(long, default_value_t = 0)]
    pub series_every: u64,
}

/// Parses the process arguments.
pub fn parse() -> Cli {
    Cli::parse()
}

/// A duration such as `30d`, `12h` or `90min`.
fn parse_age(text: &str) -> Result<std::time::Duration, String> {
    humantime::parse_duration(text.trim())
        .map_err(|e| format!("`{text}` is not a duration ({e}); write e.g. `30d`, `12h`, `90min`"))
}

/// A tag, `key=value`.
fn parse_tag(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.trim().to_owned())),
        _ => Err(format!("`{text}` is not a tag; write it as key=value")),
    }
}
