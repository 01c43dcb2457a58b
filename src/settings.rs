//! Settings: `group.name=value`, from `probe.toml`, `PROBE_` variables and `--set`.
//!
//! Every setting is declared once with its kind, default and help: in [`KNOWN`], or, for an
//! oracle's `checks.<name>`, in that oracle's file ([`crate::oracle`]); [`crate::catalogue`]
//! lists both and resolves settings against them (`Settings::default`, `resolve`, `set`). A
//! name given explicitly that is not declared stops the run before anything is sent, naming
//! the closest known setting. Later sources win: defaults < `probe.toml` < environment <
//! `--set`. This file is the vocabulary (kinds, declarations) and the values, below the
//! oracles that declare their switches with it.
//!
//! [`Settings::options`] resolves the values once into typed options per part (engine,
//! pace, send, series, shrink, pinpoint, oracles): the one place a setting is read by its
//! name, here rather than beside each part so that every part (even `send` and `oracle`,
//! which the engine's options must not climb to) can take its options from below. A value
//! that does not read is an error naming the setting, never a fallback (`set` and
//! `from_map` keep none, so a run meets one only through a bug). An oracle's own switch,
//! `checks.<name>`, is read by the oracle registry once ([`Settings::switch`]).
//!
//! Depends on: nothing.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// A setting that cannot be used.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SettingsError {
    #[error("unknown setting `{name}` (from {source_name}){}", suggestion.as_ref().map(|s| format!("; did you mean `{s}`?")).unwrap_or_default())]
    Unknown {
        name: String,
        source_name: String,
        suggestion: Option<String>,
    },
    #[error("setting `{name}` (from {source_name}): `{value}` is not {expected}")]
    Invalid {
        name: String,
        source_name: String,
        value: String,
        expected: &'static str,
    },
    #[error("`{text}` (from {source_name}) is not `group.name=value`")]
    Malformed { text: String, source_name: String },
    #[error("{path}: {message}")]
    File { path: String, message: String },
}

/// What values a setting takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Bool,
    Count,
    Duration,
    Ratio,
    /// Requests per second (`10`, `10/s`, `600/m`, `0.5/s`); 0 is off.
    Rate,
    /// Free text: a path, or a comma-separated list of paths.
    Text,
}

impl Kind {
    pub(crate) fn expected(&self) -> &'static str {
        match self {
            Kind::Bool => "true or false",
            Kind::Count => "a whole number",
            Kind::Duration => "a duration such as 500ms, 10s or 2m",
            Kind::Ratio => "a number between 0 and 1",
            Kind::Rate => {
                "requests per second such as 10, 10/s or 600/m, from 1/h to 1000000/s (0 is off)"
            }
            Kind::Text => "text",
        }
    }
}

/// One declared setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Declared {
    pub name: &'static str,
    pub kind: Kind,
    pub default: &'static str,
    pub help: &'static str,
}

pub const fn declared(
    name: &'static str,
    kind: Kind,
    default: &'static str,
    help: &'static str,
) -> Declared {
    Declared {
        name,
        kind,
        default,
        help,
    }
}

/// The settings probe knows besides the oracles' switches, with their defaults.
/// `docs/settings.md` lists them all.
#[rustfmt::skip]
pub const KNOWN: &[Declared] = &[
    declared("generation.maxDepth", Kind::Count, "6", "how deep nested schemas are followed"),
    declared("generation.maxStringLength", Kind::Count, "64", "longest generated string unless a minLength asks for more"),
    declared("generation.maxItems", Kind::Count, "5", "most items in a generated array unless minItems asks for more"),
    declared("generation.optionalParameters", Kind::Ratio, "0.5", "chance that a random case carries an optional parameter"),
    declared("generation.hardNestingDepth", Kind::Count, "8", "how deep the mutation operators walk into a body"),
    declared("generation.plan", Kind::Text, "", "a plan file (`probe docs plan`); empty: the shipped plan (nominal 60, mutation 30, fuzzing 10)"),
    declared("generation.dictionaries", Kind::Text, "", "dictionary files or directories, comma-separated (`probe docs dictionaries`)"),
    declared("mutation.violations", Kind::Bool, "true", "every operator that breaks a rule of the document (off: all mutation.<kind> are off)"),
    declared("mutation.seedRequests", Kind::Text, "", "a HAR file whose requests answered 2xx are accepted requests for the mutation strategy from the start (`probe docs har`); `probe run --seed-requests FILE`"),
    declared("mutation.acceptedKept", Kind::Count, "8", "accepted requests kept per operation to be changed"),
    declared("mutation.oversizedLength", Kind::Count, "10000", "length of an oversized text, digits of a number too wide"),
    declared("mutation.oversizedItems", Kind::Count, "1000", "items of an oversized list"),
    declared("mutation.dropRequired", Kind::Bool, "true", "leave out a required parameter or property"),
    declared("mutation.wrongLocation", Kind::Bool, "true", "send a required parameter in another place"),
    declared("mutation.wrongType", Kind::Bool, "true", "a value of another JSON type than declared"),
    declared("mutation.outsideABound", Kind::Bool, "true", "exactly one past a stated bound"),
    declared("mutation.breakAnEnumeration", Kind::Bool, "true", "a value outside a closed list"),
    declared("mutation.breakAPattern", Kind::Bool, "true", "a text the pattern does not match"),
    declared("mutation.breakAFormat", Kind::Bool, "true", "a text that breaks its format (2021-02-30, 256.1.1.1, ...)"),
    declared("mutation.sendNull", Kind::Bool, "true", "null where nothing on the way allows it"),
    declared("mutation.sendEmpty", Kind::Bool, "true", "an empty text, list or object where a rule forbids it"),
    declared("mutation.oversize", Kind::Bool, "true", "past a stated maxLength or maxItems"),
    declared("mutation.wrongRoot", Kind::Bool, "true", "a body of another JSON type than declared"),
    declared("mutation.emptyBody", Kind::Bool, "true", "no body where one is required"),
    declared("mutation.notJson", Kind::Bool, "true", "a body that is not JSON (cut, stray text, missing colon, ...)"),
    declared("mutation.wrongContentType", Kind::Bool, "true", "a media type the operation does not take"),
    declared("mutation.beyondItsWidth", Kind::Bool, "true", "a number past int32/int64, or thousands of digits long"),
    declared("schedule.openingLap", Kind::Bool, "true", "start with the five-step opening lap"),
    declared("schedule.slowAfter", Kind::Duration, "500ms", "a request in flight this long, or an operation whose recent answers took this long, goes to the slow lane"),
    declared("schedule.slowLane", Kind::Count, "2", "requests of slow operations in flight at once, beside the workers (at least 1)"),
    declared("series.enabled", Kind::Bool, "true", "send series of calls on one resource (create, read, update, delete) and judge them with the series oracles"),
    declared("series.perResource", Kind::Count, "0", "most life cycle series started for each resource over the run (0: no cap; they go on, variation by variation, for as long as series.share allows)"),
    declared("series.loginBurst", Kind::Count, "20", "failed logins the `login_burst` series sends in a row, when `checks.login_not_rate_limited` is on (`probe docs security`)"),
    declared("shrink.enabled", Kind::Bool, "true", "send smaller requests in place of the first one that showed each distinct finding, so its reproducer holds only what the failure needs"),
    declared("shrink.requests", Kind::Count, "40", "requests shrinking may send for one finding"),
    declared("shrink.share", Kind::Ratio, "0.1", "the most of the run's requests shrinking and pinpointing together may take (beyond their first 30)"),
    declared("pinpoint.enabled", Kind::Bool, "true", "when a valid request is refused while another for its operation was accepted, find the one value the API refuses and report both values"),
    declared("pinpoint.requests", Kind::Count, "12", "requests one search for a refused value may send"),
    declared("pinpoint.searches", Kind::Count, "3", "refused valid requests searched per operation"),
    declared("series.share", Kind::Ratio, "0.2", "the share of the run's requests series steps take (beyond their first 50): after the opening lap, series go on while they are under it"),
    declared("send.timeout", Kind::Duration, "10s", "per-request timeout"),
    declared("send.adaptiveTimeout", Kind::Bool, "true", "an operation whose recent answers were quick gets a shorter deadline (10x its slowest, at least 2s)"),
    declared("send.rateLimit", Kind::Rate, "0", "requests per second over the whole run, such as 10 or 600/m; 0 is off"),
    declared("send.rateLimitPerOperation", Kind::Rate, "0", "requests per second for each operation; 0 is off"),
    declared("send.retryAfterMax", Kind::Duration, "30s", "the longest pause a 429 or 503 with Retry-After can ask for"),
    declared("send.maxBodyBytes", Kind::Count, "1048576", "response bodies are read up to this size, then cut and marked"),
    declared("send.maxCredentialBytes", Kind::Count, "65536", "the longest credential probe takes, in bytes: a longer one given is refused, and a login answered with a longer token stops the run naming the identity and the size"),
    declared("send.caCert", Kind::Text, "", "a PEM file of CA certificates to trust beside the built-in roots, for an API on a private CA (`--cacert`)"),
    declared("send.clientCert", Kind::Text, "", "a PEM file holding the client certificate (and its chain) for mutual TLS, with send.clientKey (`--client-cert`)"),
    declared("send.clientKey", Kind::Text, "", "a PEM file holding the client certificate's private key (`--client-key`); may be the same file as send.clientCert"),
    declared("send.insecure", Kind::Bool, "false", "accept any TLS certificate, unverified (`--insecure`); the summary and report.json say so"),
    declared("send.proxy", Kind::Text, "", "send through a proxy: empty sends directly, `env` takes HTTPS_PROXY, HTTP_PROXY, ALL_PROXY and NO_PROXY, else the proxy's URL (`--proxy`)"),
    declared("send.http2", Kind::Bool, "false", "offer HTTP/2 to an https API (ALPN) and use it when the server takes it; otherwise HTTP/1.1 only (`--http2`)"),
    declared("report.html", Kind::Bool, "true", "write the run's page (`probe docs html-report`) beside report.json at the end of each run: in the store as reports/<run>.html, and beside --report FILE"),
    declared("checks.formats", Kind::Bool, "true", "response schema checks assert `format` (date-time, uuid, ...)"),
];

/// The effective settings of a run: every declared name with its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub(crate) values: BTreeMap<String, String>,
}

/// `probe.toml`, read and parsed once: its settings go to [`Settings::resolve_with`], its
/// `[[identity]]` tables to `send::identity`, its `[[check]]` tables to `check`, and its
/// top-level `spec`, `url` and `store` stand in for the flags of those names.
#[derive(Debug, Clone)]
pub struct ProjectFile {
    /// The path as shown in messages.
    pub path: String,
    pub table: toml::Table,
    /// The file's text, for the readers that point at a line (`check`).
    pub text: String,
    /// The directory the file is in: its relative paths (`spec`, `store`) are read from here.
    pub dir: std::path::PathBuf,
}

/// The top-level keys of `probe.toml` that are not tables: each stands in for its flag.
pub const PROJECT_KEYS: [&str; 3] = ["spec", "url", "store"];

/// What is wrong with a top-level `key` of `probe.toml` that is not a table, nor one of
/// [`PROJECT_KEYS`]: a misspelt key, or a setting outside its group's table.
pub(crate) fn misplaced_key(key: &str) -> String {
    let suggestion = PROJECT_KEYS
        .iter()
        .find(|k| strsim::levenshtein(k, key) <= 2)
        .map(|k| format!("; did you mean `{k}`?"))
        .unwrap_or_default();
    format!(
        "`{key}` is neither a group of settings such as [{key}] nor one of `spec`, `url`, \
         `store`{suggestion}"
    )
}

impl ProjectFile {
    /// `probe.toml` in `dir`, or `None` when there is none.
    pub fn read(dir: &Path) -> Result<Option<ProjectFile>, SettingsError> {
        let path = dir.join("probe.toml");
        if !path.is_file() {
            return Ok(None);
        }
        ProjectFile::read_file(&path, &path.display().to_string()).map(Some)
    }

    /// The first `probe.toml` from `start` upwards, through the directory that holds `.git`
    /// (the top of the repository) and no further; outside a repository, `start`'s own
    /// only. Shown relative to `start` (`../../probe.toml`).
    pub fn find(start: &Path) -> Result<Option<ProjectFile>, SettingsError> {
        let absolute = start.canonicalize().map_err(|e| SettingsError::File {
            path: start.display().to_string(),
            message: e.to_string(),
        })?;
        let ancestors: Vec<&Path> = absolute.ancestors().collect();
        // Up to and including the repository's top; outside any repository, `start` only.
        let top = ancestors
            .iter()
            .position(|d| d.join(".git").exists())
            .unwrap_or(0);
        for (up, dir) in ancestors.iter().take(top + 1).enumerate() {
            let path = dir.join("probe.toml");
            if path.is_file() {
                let shown = start.join("../".repeat(up)).join("probe.toml");
                let shown = shown.strip_prefix(".").unwrap_or(&shown);
                return ProjectFile::read_file(&path, &shown.display().to_string()).map(Some);
            }
        }
        Ok(None)
    }

    /// The project file at `path` (`--config`), shown as `shown` in messages.
    pub fn read_file(path: &Path, shown: &str) -> Result<ProjectFile, SettingsError> {
        let file_error = |message: String| SettingsError::File {
            path: shown.to_owned(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| file_error(e.to_string()))?;
        let table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| file_error(e.to_string()))?;
        // Relative to where probe runs, as the file is shown: a path it names is then shown
        // (and kept in a run's manifest) as the user would write it.
        let dir = match Path::new(shown).parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
            _ => std::path::PathBuf::from("."),
        };
        let file = ProjectFile {
            path: shown.to_owned(),
            table,
            text,
            dir,
        };
        // What is neither a group of settings, nor identities or checks, nor one of the
        // flags' keys, is a mistake every command should name, not only `run`.
        for (key, value) in &file.table {
            if PROJECT_KEYS.contains(&key.as_str()) {
                file.text_value(key)?;
            } else if !(value.is_table() || key == "identity" || key == "check") {
                return Err(file_error(misplaced_key(key)));
            }
        }
        Ok(file)
    }

    /// The top-level `key` as text, `None` when absent; any other type is an error naming
    /// the file and the key.
    fn text_value(&self, key: &str) -> Result<Option<&str>, SettingsError> {
        match self.table.get(key) {
            None => Ok(None),
            Some(toml::Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.trim())),
            Some(other) => Err(SettingsError::File {
                path: self.path.clone(),
                message: format!(
                    "`{key}` must be a non-empty string ({}), not `{other}`",
                    match key {
                        "spec" => "the OpenAPI document: a file, or an http(s) URL",
                        "url" => "the base URL of the API under test",
                        _ => "the store directory",
                    }
                ),
            }),
        }
    }

    /// `spec`: a file (read from the file's directory) or an http(s) URL.
    pub fn spec(&self) -> Option<String> {
        let spec = self.text_value("spec").ok()??;
        if spec.starts_with("http://") || spec.starts_with("https://") {
            return Some(spec.to_owned());
        }
        Some(self.beside(spec).display().to_string())
    }

    /// `relative` read from the file's directory.
    fn beside(&self, relative: &str) -> std::path::PathBuf {
        if self.dir == Path::new(".") {
            std::path::PathBuf::from(relative)
        } else {
            self.dir.join(relative)
        }
    }

    /// `url`: the base URL of the API under test.
    pub fn url(&self) -> Option<String> {
        self.text_value("url").ok()?.map(str::to_owned)
    }

    /// `store`: the store directory, read from the file's directory.
    pub fn store(&self) -> Option<std::path::PathBuf> {
        self.text_value("store").ok()?.map(|s| self.beside(s))
    }
}

impl Settings {
    /// All values, for the run manifest.
    pub fn to_map(&self) -> BTreeMap<String, String> {
        self.values.clone()
    }

    /// The value of a declared setting; an undeclared name is an error, never an empty
    /// value read as a default.
    fn raw(&self, name: &str) -> Result<&str, SettingsError> {
        self.values
            .get(name)
            .map(String::as_str)
            .ok_or_else(|| SettingsError::Unknown {
                name: name.to_owned(),
                source_name: "the resolved settings".to_owned(),
                suggestion: None,
            })
    }

    /// The value of `name` read as its kind: a value that does not read is an error naming
    /// the setting and what it should be, never a silent fallback. (`set` and `from_map`
    /// only keep values that read, so this holds for every value a run can have.)
    fn read<T>(
        &self,
        name: &str,
        kind: Kind,
        parse: impl FnOnce(&str) -> Option<T>,
    ) -> Result<T, SettingsError> {
        let raw = self.raw(name)?;
        parse(raw).ok_or_else(|| SettingsError::Invalid {
            name: name.to_owned(),
            source_name: "the resolved settings".to_owned(),
            value: raw.to_owned(),
            expected: kind.expected(),
        })
    }

    fn read_bool(&self, name: &str) -> Result<bool, SettingsError> {
        self.read(name, Kind::Bool, |v| match v {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        })
    }
    fn read_count(&self, name: &str) -> Result<u64, SettingsError> {
        self.read(name, Kind::Count, |v| v.parse().ok())
    }
    fn read_ratio(&self, name: &str) -> Result<f64, SettingsError> {
        self.read(name, Kind::Ratio, |v| v.parse().ok())
    }
    /// Requests per second of a rate setting, `None` when off (0).
    fn read_rate(&self, name: &str) -> Result<Option<f64>, SettingsError> {
        self.read(name, Kind::Rate, |v| {
            v.parse::<f64>().ok().map(|r| Some(r).filter(|r| *r > 0.0))
        })
    }
    /// A text setting (empty when unset).
    fn read_text(&self, name: &str) -> Result<String, SettingsError> {
        self.raw(name).map(str::to_owned)
    }
    /// A file named by a text setting; `None` when empty.
    fn read_path(&self, name: &str) -> Result<Option<std::path::PathBuf>, SettingsError> {
        let text = self.read_text(name)?;
        Ok((!text.trim().is_empty()).then(|| std::path::PathBuf::from(text.trim())))
    }
    fn read_duration(&self, name: &str) -> Result<Duration, SettingsError> {
        self.read(name, Kind::Duration, |v| humantime::parse_duration(v).ok())
    }

    // The reads by name that `app/` still makes (`run.rs`, `replay/execute.rs`), until
    // they take their values from [`Settings::options`]: a name that is not declared, or a
    // value that does not read, stops with its message rather than read as a default.
    fn expect<T>(read: Result<T, SettingsError>) -> T {
        read.unwrap_or_else(|e| panic!("{e}"))
    }
    pub fn bool(&self, name: &str) -> bool {
        Self::expect(self.read_bool(name))
    }
    pub fn count(&self, name: &str) -> u64 {
        Self::expect(self.read_count(name))
    }
    pub fn text(&self, name: &str) -> &str {
        Self::expect(self.raw(name))
    }
    pub fn duration(&self, name: &str) -> Duration {
        Self::expect(self.read_duration(name))
    }

    /// The raw value of any declared setting.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// Whether the oracle `oracle` is switched on by its `checks.<oracle>` (false when it
    /// has no such switch): what the oracle registry resolves its enabled set from.
    pub fn switch(&self, oracle: &str) -> bool {
        self.get(&format!("checks.{oracle}")) == Some("true")
    }

    /// [`Settings::options`] for the callers that take `Settings` whole and cannot fail
    /// (`Sender::new`, `Oracles::new`, as `recheck` and `replay` call them): every value of
    /// a `Settings` reads (`set` and `from_map` keep no other), so this stops only on a
    /// setting this build reads but does not declare, a bug, with its name.
    pub fn resolved(&self) -> Options {
        Self::expect(self.options())
    }

    /// Every setting a part of probe reads, resolved once into typed options: the one
    /// place a setting is read by its name.
    pub fn options(&self) -> Result<Options, SettingsError> {
        Ok(Options {
            generation: GenerationOptions {
                max_depth: self.read_count("generation.maxDepth")? as usize,
                max_string_length: self.read_count("generation.maxStringLength")? as usize,
                max_items: self.read_count("generation.maxItems")? as usize,
                optional_parameters: self.read_ratio("generation.optionalParameters")?,
                plan: self.read_text("generation.plan")?,
                dictionaries: self.read_text("generation.dictionaries")?,
                seed_requests: self.read_text("mutation.seedRequests")?,
                accepted_kept: self.read_count("mutation.acceptedKept")? as usize,
            },
            opening_lap: self.read_bool("schedule.openingLap")?,
            pace: PaceOptions {
                slow_after: self.read_duration("schedule.slowAfter")?,
                slow_lane: (self.read_count("schedule.slowLane")? as usize).max(1),
                timeout: self.read_duration("send.timeout")?,
                adaptive_timeout: self.read_bool("send.adaptiveTimeout")?,
                rate: self.read_rate("send.rateLimit")?,
                rate_per_operation: self.read_rate("send.rateLimitPerOperation")?,
                retry_after_max: self.read_duration("send.retryAfterMax")?,
            },
            send: SendOptions {
                timeout: self.read_duration("send.timeout")?,
                max_body_bytes: self.read_count("send.maxBodyBytes")?,
                max_credential_bytes: self.read_count("send.maxCredentialBytes")?,
                network: NetworkOptions {
                    ca_cert: self.read_path("send.caCert")?,
                    client_cert: self.read_path("send.clientCert")?,
                    client_key: self.read_path("send.clientKey")?,
                    insecure: self.read_bool("send.insecure")?,
                    proxy: match self.read_text("send.proxy")?.trim() {
                        "" => Proxy::Direct,
                        "env" => Proxy::Environment,
                        url => Proxy::Url(url.to_owned()),
                    },
                    http2: self.read_bool("send.http2")?,
                },
            },
            series: SeriesOptions {
                enabled: self.read_bool("series.enabled")?,
                per_resource: self.read_count("series.perResource")?,
                login_burst: self.read_count("series.loginBurst")?,
                share: self.read_ratio("series.share")?,
            },
            shrink: ShrinkOptions {
                enabled: self.read_bool("shrink.enabled")?,
                per_finding: self.read_count("shrink.requests")?,
                share: self.read_ratio("shrink.share")?,
            },
            pinpoint: PinpointOptions {
                enabled: self.read_bool("pinpoint.enabled")?,
                per_search: self.read_count("pinpoint.requests")?,
                per_operation: self.read_count("pinpoint.searches")?,
            },
            oracles: OracleOptions {
                max_response_time: Some(self.read_duration("checks.max_response_time")?)
                    .filter(|limit| !limit.is_zero()),
                check_formats: self.read_bool("checks.formats")?,
            },
            report_html: self.read_bool("report.html")?,
        })
    }
}

/// Every setting a part of probe reads, typed, from [`Settings::options`].
#[derive(Debug, Clone)]
pub struct Options {
    pub generation: GenerationOptions,
    /// `schedule.openingLap`.
    pub opening_lap: bool,
    pub pace: PaceOptions,
    pub send: SendOptions,
    pub series: SeriesOptions,
    pub shrink: ShrinkOptions,
    pub pinpoint: PinpointOptions,
    pub oracles: OracleOptions,
    /// `report.html`: write the run's page.
    pub report_html: bool,
}

/// How cases are generated (`generation.*`, and the accepted requests `mutation.*` keeps).
#[derive(Debug, Clone)]
pub struct GenerationOptions {
    pub max_depth: usize,
    pub max_string_length: usize,
    pub max_items: usize,
    pub optional_parameters: f64,
    /// `generation.plan`: a plan file, empty for the shipped plan.
    pub plan: String,
    /// `generation.dictionaries`: comma-separated files or directories.
    pub dictionaries: String,
    /// `mutation.seedRequests`: a HAR file, or empty.
    pub seed_requests: String,
    /// `mutation.acceptedKept`.
    pub accepted_kept: usize,
}

/// The settings pace works from (`schedule.*`, the `send.*` of timing and rates).
#[derive(Debug, Clone)]
pub struct PaceOptions {
    pub slow_after: Duration,
    /// Slow-lane requests in flight at once (at least 1).
    pub slow_lane: usize,
    pub timeout: Duration,
    pub adaptive_timeout: bool,
    /// Requests per second over the whole run.
    pub rate: Option<f64>,
    /// Requests per second for each operation.
    pub rate_per_operation: Option<f64>,
    pub retry_after_max: Duration,
}

/// The HTTP client's settings (`send.*`).
#[derive(Debug, Clone)]
pub struct SendOptions {
    /// `send.timeout`: a send's deadline when it is given none.
    pub timeout: Duration,
    pub max_body_bytes: u64,
    pub max_credential_bytes: u64,
    /// How the client reaches the API: TLS trust, client certificate, proxy, HTTP/2.
    pub network: NetworkOptions,
}

/// The settings of the network between probe and the API ([`NetworkOptions`]).
pub const NETWORK: &[&str] = &[
    "send.caCert",
    "send.clientCert",
    "send.clientKey",
    "send.insecure",
    "send.proxy",
    "send.http2",
];

/// `send.caCert`, `send.clientCert`, `send.clientKey`, `send.insecure`, `send.proxy`,
/// `send.http2`: the network between probe and the API (docs/settings.md).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetworkOptions {
    pub ca_cert: Option<std::path::PathBuf>,
    pub client_cert: Option<std::path::PathBuf>,
    pub client_key: Option<std::path::PathBuf>,
    /// Certificates are not verified at all.
    pub insecure: bool,
    pub proxy: Proxy,
    pub http2: bool,
}

/// `send.proxy`: where requests go on their way to the API.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Proxy {
    /// Straight to the API, whatever the environment says (the default: a proxy is opt-in).
    #[default]
    Direct,
    /// The proxy the usual variables name (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`,
    /// `NO_PROXY`, in either case).
    Environment,
    /// Every request through this proxy (`http://host:port`, `https://…`, `socks5://…`).
    Url(String),
}

/// `series.*`.
#[derive(Debug, Clone)]
pub struct SeriesOptions {
    pub enabled: bool,
    pub per_resource: u64,
    /// `series.loginBurst`.
    pub login_burst: u64,
    pub share: f64,
}

/// `shrink.*`.
#[derive(Debug, Clone)]
pub struct ShrinkOptions {
    pub enabled: bool,
    /// `shrink.requests`.
    pub per_finding: u64,
    /// `shrink.share`: of shrinking and pinpointing together.
    pub share: f64,
}

/// `pinpoint.*`.
#[derive(Debug, Clone)]
pub struct PinpointOptions {
    pub enabled: bool,
    /// `pinpoint.requests`.
    pub per_search: u64,
    /// `pinpoint.searches`.
    pub per_operation: u64,
}

/// What the oracles read besides their switches: the values the judges are given.
#[derive(Debug, Clone, Default)]
pub struct OracleOptions {
    /// `checks.max_response_time`, when set (0s is off).
    pub max_response_time: Option<Duration>,
    /// `checks.formats`: response schemas assert `format`.
    pub check_formats: bool,
}

/// `checks.server_error` → `PROBE_CHECKS_SERVER_ERROR`, `send.maxBodyBytes` → `PROBE_SEND_MAX_BODY_BYTES`.
pub fn env_name(name: &str) -> String {
    let mut out = String::from("PROBE_");
    for c in name.chars() {
        match c {
            '.' => out.push('_'),
            c if c.is_ascii_uppercase() => {
                out.push('_');
                out.push(c);
            }
            c => out.push(c.to_ascii_uppercase()),
        }
    }
    out
}

pub(crate) fn normalise(kind: Kind, value: &str) -> Option<String> {
    match kind {
        Kind::Bool => match value.to_ascii_lowercase().as_str() {
            "true" | "yes" | "on" | "1" => Some("true".into()),
            "false" | "no" | "off" | "0" => Some("false".into()),
            _ => None,
        },
        Kind::Count => value.parse::<u64>().ok().map(|n| n.to_string()),
        Kind::Duration => humantime::parse_duration(value)
            .ok()
            .map(|_| value.to_owned()),
        Kind::Ratio => value
            .parse::<f64>()
            .ok()
            .filter(|r| (0.0..=1.0).contains(r))
            .map(|r| r.to_string()),
        Kind::Rate => parse_rate(value).map(|r| r.to_string()),
        Kind::Text => Some(value.to_owned()),
    }
}

/// The slowest rate: one request an hour. A slower one would hold a worker past any budget
/// a person sets, and its interval (`1 / rate` seconds) could overflow a `Duration`.
const SLOWEST_RATE: f64 = 1.0 / 3600.0;

/// The fastest rate: a million requests a second, more than probe can send.
const FASTEST_RATE: f64 = 1_000_000.0;

/// Requests per second from `10`, `10/s`, `600/m` or `3600/h`; `None` unless 0 (off) or
/// between [`SLOWEST_RATE`] and [`FASTEST_RATE`].
fn parse_rate(value: &str) -> Option<f64> {
    let (number, per) = match value.trim().split_once('/') {
        Some((n, unit)) => (n.trim(), unit.trim()),
        None => (value.trim(), "s"),
    };
    let seconds = match per {
        "s" | "sec" | "second" => 1.0,
        "m" | "min" | "minute" => 60.0,
        "h" | "hour" => 3600.0,
        _ => return None,
    };
    let n: f64 = number.parse().ok()?;
    let rate = n / seconds;
    (rate == 0.0 || (SLOWEST_RATE..=FASTEST_RATE).contains(&rate)).then_some(rate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_project_file_is_found_upwards_to_the_repository_top_and_no_further() {
        let outer = tempfile::tempdir().unwrap();
        let repo = outer.path().join("repo");
        let deep = repo.join("a/b");
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::create_dir(repo.join(".git")).unwrap();
        // Above the repository: never taken.
        std::fs::write(outer.path().join("probe.toml"), "url = \"http://outer\"\n").unwrap();
        assert!(ProjectFile::find(&deep).unwrap().is_none());

        std::fs::write(
            repo.join("probe.toml"),
            "spec = \"api.yaml\"\nurl = \"http://127.0.0.1:8080\"\nstore = \"st\"\n",
        )
        .unwrap();
        let file = ProjectFile::find(&deep).unwrap().unwrap();
        let up = deep.join("../../probe.toml");
        assert_eq!(file.path, up.display().to_string());
        assert_eq!(file.url().as_deref(), Some("http://127.0.0.1:8080"));
        assert_eq!(
            file.spec(),
            Some(deep.join("../../api.yaml").display().to_string())
        );
        assert_eq!(file.store(), Some(deep.join("../../st")));
        // The nearest wins.
        std::fs::write(deep.join("probe.toml"), "").unwrap();
        let near = ProjectFile::find(&deep).unwrap().unwrap();
        assert_eq!(near.path, deep.join("probe.toml").display().to_string());
        assert_eq!(near.spec(), None);
    }

    #[test]
    fn a_project_key_of_the_wrong_type_names_the_file_and_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("probe.toml");
        std::fs::write(&path, "store = [\"a\"]\n").unwrap();
        let err = ProjectFile::read_file(&path, "conf/probe.toml").unwrap_err();
        assert_eq!(
            err.to_string(),
            "conf/probe.toml: `store` must be a non-empty string (the store directory), not `[\"a\"]`"
        );
    }
}
