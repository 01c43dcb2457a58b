//! Settings: `group.name=value`, from `probe.toml`, `PROBE_` variables and `--set`.
//!
//! Every setting is declared once with its kind, default and help: in [`KNOWN`], or, for an
//! oracle's `checks.<name>`, in that oracle's file ([`crate::oracle`]); [`all`] lists both. A name given
//! explicitly that is not declared stops the run before anything is sent, naming the
//! closest known setting. Later sources win: defaults < `probe.toml` < environment <
//! `--set`.
//!
//! Depends on `oracle` (for the catalogue of its switches) only.

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
    fn expected(&self) -> &'static str {
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
    declared("generation.plan", Kind::Text, "", "a plan file (docs/plan.md); empty: the shipped plan (nominal 60, mutation 30, fuzzing 10)"),
    declared("generation.dictionaries", Kind::Text, "", "dictionary files or directories, comma-separated (docs/dictionaries.md)"),
    declared("mutation.violations", Kind::Bool, "true", "every operator that breaks a rule of the document (off: all mutation.<kind> are off)"),
    declared("mutation.seedRequests", Kind::Text, "", "a HAR file whose requests answered 2xx are accepted requests for the mutation strategy from the start (docs/har.md); `probe run --seed-requests FILE`"),
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
    declared("series.perResource", Kind::Count, "2", "series started for each resource over the run"),
    declared("shrink.enabled", Kind::Bool, "true", "send smaller requests in place of the first one that showed each distinct finding, so its reproducer holds only what the failure needs"),
    declared("shrink.requests", Kind::Count, "40", "requests shrinking may send for one finding"),
    declared("shrink.share", Kind::Ratio, "0.1", "the most of the run's requests shrinking and pinpointing together may take (beyond their first 30)"),
    declared("pinpoint.enabled", Kind::Bool, "true", "when a valid request is refused while another for its operation was accepted, find the one value the API refuses and report both values"),
    declared("pinpoint.requests", Kind::Count, "12", "requests one search for a refused value may send"),
    declared("pinpoint.searches", Kind::Count, "3", "refused valid requests searched per operation"),
    declared("series.share", Kind::Ratio, "0.2", "the most of the run's requests series steps may take (beyond their first 50)"),
    declared("send.timeout", Kind::Duration, "10s", "per-request timeout"),
    declared("send.adaptiveTimeout", Kind::Bool, "true", "an operation whose recent answers were quick gets a shorter deadline (10x its slowest, at least 2s)"),
    declared("send.rateLimit", Kind::Rate, "0", "requests per second over the whole run, such as 10 or 600/m; 0 is off"),
    declared("send.rateLimitPerOperation", Kind::Rate, "0", "requests per second for each operation; 0 is off"),
    declared("send.retryAfterMax", Kind::Duration, "30s", "the longest pause a 429 or 503 with Retry-After can ask for"),
    declared("send.maxBodyBytes", Kind::Count, "1048576", "response bodies are read up to this size, then cut and marked"),
    declared("send.maxCredentialBytes", Kind::Count, "65536", "the longest credential probe takes, in bytes: a longer one given is refused, and a login answered with a longer token stops the run naming the identity and the size"),
    declared("report.html", Kind::Bool, "true", "write the run's page (docs/html-report.md) beside report.json at the end of each run: in the store as reports/<run>.html, and beside --report FILE"),
    declared("checks.formats", Kind::Bool, "true", "response schema checks assert `format` (date-time, uuid, ...)"),
];

/// Every setting probe knows: [`KNOWN`], then each oracle's `checks.<name>`.
pub fn all() -> impl Iterator<Item = &'static Declared> {
    KNOWN
        .iter()
        .chain(crate::oracle::CATALOGUE.iter().map(|o| &o.setting))
}

/// The effective settings of a run: every declared name with its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    values: BTreeMap<String, String>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            values: all()
                .map(|d| (d.name.to_owned(), d.default.to_owned()))
                .collect(),
        }
    }
}

/// `probe.toml`, read and parsed once: its settings go to [`Settings::resolve_with`], its
/// `[[identity]]` tables to `send::identity`.
#[derive(Debug, Clone)]
pub struct ProjectFile {
    /// The path as shown in messages.
    pub path: String,
    pub table: toml::Table,
}

impl ProjectFile {
    /// `probe.toml` in `dir`, or `None` when there is none.
    pub fn read(dir: &Path) -> Result<Option<ProjectFile>, SettingsError> {
        let path = dir.join("probe.toml");
        if !path.is_file() {
            return Ok(None);
        }
        let shown = path.display().to_string();
        let file_error = |message: String| SettingsError::File {
            path: shown.clone(),
            message,
        };
        let text = std::fs::read_to_string(&path).map_err(|e| file_error(e.to_string()))?;
        let table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| file_error(e.to_string()))?;
        Ok(Some(ProjectFile { path: shown, table }))
    }
}

impl Settings {
    /// Defaults, then `probe.toml` in `dir` (if present), then `PROBE_*` variables, then `overrides`.
    pub fn resolve(
        dir: &Path,
        env: &[(String, String)],
        overrides: &[String],
    ) -> Result<Settings, SettingsError> {
        Settings::resolve_with(ProjectFile::read(dir)?.as_ref(), env, overrides)
    }

    /// Defaults, then `file`'s settings, then `PROBE_*` variables, then `overrides`.
    pub fn resolve_with(
        file: Option<&ProjectFile>,
        env: &[(String, String)],
        overrides: &[String],
    ) -> Result<Settings, SettingsError> {
        let mut settings = Settings::default();
        if let Some(file) = file {
            settings.apply_project_file(file)?;
        }
        settings.apply_env(env)?;
        for text in overrides {
            settings.apply_assignment(text, "--set")?;
        }
        Ok(settings)
    }

    /// Applies one `group.name=value`.
    pub fn apply_assignment(&mut self, text: &str, source_name: &str) -> Result<(), SettingsError> {
        let (name, value) = text
            .split_once('=')
            .ok_or_else(|| SettingsError::Malformed {
                text: text.to_owned(),
                source_name: source_name.to_owned(),
            })?;
        self.set(name.trim(), value.trim(), source_name)
    }

    /// Sets `name` to `value`, checking both.
    pub fn set(&mut self, name: &str, value: &str, source_name: &str) -> Result<(), SettingsError> {
        let declared = lookup(name).ok_or_else(|| SettingsError::Unknown {
            name: name.to_owned(),
            source_name: source_name.to_owned(),
            suggestion: closest(name).map(str::to_owned),
        })?;
        let normalised = normalise(declared.kind, value).ok_or_else(|| SettingsError::Invalid {
            name: name.to_owned(),
            source_name: source_name.to_owned(),
            value: value.to_owned(),
            expected: declared.kind.expected(),
        })?;
        self.values.insert(declared.name.to_owned(), normalised);
        Ok(())
    }

    fn apply_project_file(&mut self, file: &ProjectFile) -> Result<(), SettingsError> {
        let file_error = |message: String| SettingsError::File {
            path: file.path.clone(),
            message,
        };
        let source_name = file.path.as_str();
        for (group, entries) in &file.table {
            // Identities are not settings: `send::identity` reads them.
            if group == "identity" {
                continue;
            }
            let Some(entries) = entries.as_table() else {
                return Err(file_error(format!(
                    "`{group}` must be a table such as [{group}]"
                )));
            };
            for (name, value) in entries {
                let text = match value {
                    toml::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                self.set(&format!("{group}.{name}"), &text, source_name)?;
            }
        }
        Ok(())
    }

    fn apply_env(&mut self, env: &[(String, String)]) -> Result<(), SettingsError> {
        for declared in all() {
            let var = env_name(declared.name);
            if let Some((_, value)) = env.iter().find(|(k, _)| *k == var) {
                self.set(declared.name, value, &var)?;
            }
        }
        Ok(())
    }

    /// All values, for the run manifest.
    pub fn to_map(&self) -> BTreeMap<String, String> {
        self.values.clone()
    }

    /// Rebuilds settings from a stored manifest's map (unknown names from newer builds are ignored).
    pub fn from_map(map: &BTreeMap<String, String>) -> Settings {
        let mut settings = Settings::default();
        for (k, v) in map {
            if let Some(d) = lookup(k) {
                if let Some(n) = normalise(d.kind, v) {
                    settings.values.insert(d.name.to_owned(), n);
                }
            }
        }
        settings
    }

    fn raw(&self, name: &str) -> &str {
        // Every declared name has a value from `Default`; callers pass declared names only.
        self.values.get(name).map(String::as_str).unwrap_or("")
    }

    pub fn bool(&self, name: &str) -> bool {
        self.raw(name) == "true"
    }
    pub fn count(&self, name: &str) -> u64 {
        self.raw(name).parse().unwrap_or(0)
    }
    pub fn ratio(&self, name: &str) -> f64 {
        self.raw(name).parse().unwrap_or(0.0)
    }
    /// Requests per second of a rate setting, `None` when off (0).
    pub fn rate(&self, name: &str) -> Option<f64> {
        self.raw(name).parse::<f64>().ok().filter(|r| *r > 0.0)
    }
    /// A text setting (empty when unset).
    pub fn text(&self, name: &str) -> &str {
        self.raw(name)
    }

    /// The raw value of any declared setting.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    pub fn duration(&self, name: &str) -> Duration {
        humantime::parse_duration(self.raw(name)).unwrap_or(Duration::from_secs(10))
    }
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

fn lookup(name: &str) -> Option<&'static Declared> {
    all().find(|d| d.name.eq_ignore_ascii_case(name))
}

fn normalise(kind: Kind, value: &str) -> Option<String> {
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

/// The declared name closest to `name` by edit distance, if any is reasonably close.
pub fn closest(name: &str) -> Option<&'static str> {
    let lower = name.to_ascii_lowercase();
    all()
        .map(|d| {
            (
                strsim::levenshtein(&lower, &d.name.to_ascii_lowercase()),
                d.name,
            )
        })
        .filter(|(dist, _)| *dist <= (lower.len() / 3).max(3))
        .min_by_key(|(dist, _)| *dist)
        .map(|(_, n)| n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_read_per_second_minute_or_hour() {
        let mut s = Settings::default();
        assert_eq!(s.rate("send.rateLimit"), None, "off by default");
        for (text, per_second) in [
            ("10", 10.0),
            ("10/s", 10.0),
            ("600/m", 10.0),
            ("36/h", 0.01),
        ] {
            s.set("send.rateLimit", text, "--set").unwrap();
            assert_eq!(s.rate("send.rateLimit"), Some(per_second), "{text}");
        }
        s.set("send.rateLimit", "0", "--set").unwrap();
        assert_eq!(s.rate("send.rateLimit"), None);
        s.set("send.rateLimit", "1/h", "--set").unwrap();
        for bad in [
            "fast", "-1", "10/day", "NaN", "inf", "1e-308", "0.0001", "0.9/h", "2000000",
        ] {
            assert!(s.set("send.rateLimit", bad, "--set").is_err(), "{bad}");
        }
    }

    #[test]
    fn unknown_setting_names_the_closest() {
        let mut s = Settings::default();
        let err = s.set("checks.server_eror", "false", "--set").unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown setting `checks.server_eror` (from --set); did you mean `checks.server_error`?"
        );
    }

    #[test]
    fn invalid_value_says_what_is_expected() {
        let mut s = Settings::default();
        let err = s.set("send.timeout", "soon", "--set").unwrap_err();
        assert!(err.to_string().contains("a duration"), "{err}");
    }

    #[test]
    fn later_sources_win() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("probe.toml"),
            "[send]\ntimeout = \"3s\"\n[checks]\nformats = false\n",
        )
        .unwrap();
        let env = vec![("PROBE_SEND_TIMEOUT".to_owned(), "4s".to_owned())];
        let s = Settings::resolve(dir.path(), &env, &["send.maxBodyBytes=10".into()]).unwrap();
        assert_eq!(s.duration("send.timeout"), Duration::from_secs(4));
        assert!(!s.bool("checks.formats"));
        assert_eq!(s.count("send.maxBodyBytes"), 10);
    }

    #[test]
    fn docs_list_every_setting() {
        let doc = include_str!("../docs/settings.md");
        for d in all() {
            assert!(
                doc.contains(&format!("| `{}` |", d.name)),
                "docs/settings.md lacks `{}`",
                d.name
            );
        }
    }

    #[test]
    fn env_names_are_screaming_snake() {
        assert_eq!(env_name("send.maxBodyBytes"), "PROBE_SEND_MAX_BODY_BYTES");
        assert_eq!(env_name("checks.server_error"), "PROBE_CHECKS_SERVER_ERROR");
    }

    #[test]
    fn unknown_name_in_probe_toml_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("probe.toml"), "[send]\ntimeot = \"3s\"\n").unwrap();
        let err = Settings::resolve(dir.path(), &[], &[]).unwrap_err();
        assert!(
            err.to_string().contains("did you mean `send.timeout`"),
            "{err}"
        );
    }
}
