//! Every setting probe knows, and settings resolved against them: [`crate::settings::KNOWN`]
//! and each oracle's `checks.<name>` (declared in that oracle's file, listed in
//! [`crate::oracle::CATALOGUE`]); [`all`] lists both. `Settings::default`, `resolve`, `set`
//! and `from_map` live here, above the oracles, so that `settings` (the vocabulary and the
//! values) stays below them: an oracle reads its switch through `settings`, and only this
//! file names every oracle.
//!
//! Depends on: `settings`, `oracle` (the catalogue of its switches).

use std::collections::BTreeMap;
use std::path::Path;

use crate::settings::{
    env_name, normalise, Declared, ProjectFile, Settings, SettingsError, KNOWN, PROJECT_KEYS,
};

/// Every setting probe knows: [`KNOWN`], then each oracle's `checks.<name>`.
pub fn all() -> impl Iterator<Item = &'static Declared> {
    KNOWN
        .iter()
        .chain(crate::oracle::CATALOGUE.iter().map(|o| &o.setting))
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

    /// These settings with the network's ([`crate::settings::NETWORK`]) taken from `flags`
    /// alone (`name=value`, as the network flags give them), each one not given back at its
    /// default: what `probe replay` sends with, since a run's CA file or proxy belongs to
    /// the machine and the moment it ran on, as its credentials do.
    pub fn with_network(&self, flags: &[String]) -> Result<Settings, SettingsError> {
        let mut settings = self.clone();
        for name in crate::settings::NETWORK {
            if let Some(declared) = lookup(name) {
                settings
                    .values
                    .insert(declared.name.to_owned(), declared.default.to_owned());
            }
        }
        for text in flags {
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
            // Identities and checks are not settings: `send::identity` and `check` read
            // them; `spec`, `url` and `store` stand in for their flags (`ProjectFile`).
            if group == "identity" || group == "check" || PROJECT_KEYS.contains(&group.as_str()) {
                continue;
            }
            let Some(entries) = entries.as_table() else {
                return Err(file_error(crate::settings::misplaced_key(group)));
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
}

fn lookup(name: &str) -> Option<&'static Declared> {
    all().find(|d| d.name.eq_ignore_ascii_case(name))
}

/// The declared name closest to `name` by edit distance, if any is reasonably close.
pub fn closest(name: &str) -> Option<&'static str> {
    crate::text::closest(name, all().map(|d| d.name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::*;
    use std::time::Duration;

    #[test]
    fn rates_read_per_second_minute_or_hour() {
        let mut s = Settings::default();
        assert_eq!(s.options().unwrap().pace.rate, None, "off by default");
        for (text, per_second) in [
            ("10", 10.0),
            ("10/s", 10.0),
            ("600/m", 10.0),
            ("36/h", 0.01),
        ] {
            s.set("send.rateLimit", text, "--set").unwrap();
            assert_eq!(s.options().unwrap().pace.rate, Some(per_second), "{text}");
        }
        s.set("send.rateLimit", "0", "--set").unwrap();
        assert_eq!(s.options().unwrap().pace.rate, None);
        s.set("send.rateLimit", "1/h", "--set").unwrap();
        for bad in [
            "fast", "-1", "10/day", "NaN", "inf", "1e-308", "0.0001", "0.9/h", "2000000",
        ] {
            assert!(s.set("send.rateLimit", bad, "--set").is_err(), "{bad}");
        }
    }

    #[test]
    fn a_value_that_does_not_read_is_an_error_naming_the_setting() {
        let mut s = Settings::default();
        assert!(s.options().is_ok());
        // `set` refuses such a value; one that got past it is refused when resolved,
        // never read as a default.
        s.values.insert("send.timeout".into(), "soon".into());
        let err = s.options().unwrap_err();
        assert_eq!(
            err.to_string(),
            "setting `send.timeout` (from the resolved settings): `soon` is not a duration such as 500ms, 10s or 2m"
        );
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
        let options = s.options().unwrap();
        assert_eq!(options.send.timeout, Duration::from_secs(4));
        assert!(!options.oracles.check_formats);
        assert_eq!(options.send.max_body_bytes, 10);
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
