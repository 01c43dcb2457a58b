//! Credentials, region and endpoint of a remote store, taken as the AWS command line and
//! SDKs take them, so that a CI job set up for them needs nothing more for probe:
//!
//! 1. the environment: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`,
//!    `AWS_REGION` / `AWS_DEFAULT_REGION`, `AWS_ENDPOINT_URL` (an S3-compatible server:
//!    MinIO, Ceph, moto), and every other `AWS_*` key `object_store` knows;
//! 2. where the environment has no key: the profile `AWS_PROFILE` (else `default`) of
//!    `~/.aws/credentials` and `~/.aws/config` (`AWS_SHARED_CREDENTIALS_FILE`,
//!    `AWS_CONFIG_FILE` move them): `aws_access_key_id`, `aws_secret_access_key`,
//!    `aws_session_token`, `region`, `endpoint_url`;
//! 3. else `object_store`'s own chain (web identity, container and instance credentials).
//!
//! An `http://` endpoint is allowed (a server on the loopback in tests); requests are
//! retried 3 times within 20 s, so a store that is gone is said to be gone within seconds.
//!
//! Depends on: `remote` (the URL and its errors).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use object_store::aws::{AmazonS3, AmazonS3Builder, AmazonS3ConfigKey, S3ConditionalPut};
use object_store::{BackoffConfig, ClientOptions, RetryConfig};

use super::error::RemoteError;
use super::url::RemoteUrl;

/// The S3 client for `url`, configured from the environment and the AWS profile files.
pub fn build(url: &RemoteUrl) -> Result<AmazonS3, RemoteError> {
    let env: BTreeMap<String, String> = std::env::vars()
        .filter(|(k, _)| k.starts_with("AWS_"))
        .collect();
    let mut settings = Settings::from_env(&env);
    if settings.access_key.is_none() {
        settings.fill_from_profile(&env)?;
    }
    let endpoint = settings.endpoint.clone().unwrap_or_default();
    let allow_http = endpoint.starts_with("http://")
        || env
            .get("AWS_ALLOW_HTTP")
            .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    let options = ClientOptions::new()
        .with_allow_http(allow_http)
        .with_connect_timeout(Duration::from_secs(5))
        .with_timeout(Duration::from_secs(120));
    let retry = RetryConfig {
        backoff: BackoffConfig::default(),
        max_retries: 3,
        retry_timeout: Duration::from_secs(20),
    };
    let mut builder = AmazonS3Builder::new()
        .with_client_options(options)
        .with_retry(retry)
        .with_conditional_put(S3ConditionalPut::ETagMatch);
    for (key, value) in &env {
        // Every key object_store knows, as its `from_env` would (the client options above
        // are set whole, so they are not taken from here).
        if key == "AWS_ALLOW_HTTP" {
            continue;
        }
        if let Ok(config_key) = key.to_ascii_lowercase().parse::<AmazonS3ConfigKey>() {
            builder = builder.with_config(config_key, value);
        }
    }
    if let Some(key) = &settings.access_key {
        builder = builder.with_access_key_id(key);
    }
    if let Some(secret) = &settings.secret_key {
        builder = builder.with_secret_access_key(secret);
    }
    if let Some(token) = &settings.token {
        builder = builder.with_token(token);
    }
    builder = builder.with_region(settings.region.as_deref().unwrap_or("us-east-1"));
    if let Some(endpoint) = &settings.endpoint {
        builder = builder.with_endpoint(endpoint);
    }
    builder
        .with_bucket_name(&url.bucket)
        .build()
        .map_err(|e| RemoteError::Config {
            url: url.to_string(),
            why: e.to_string(),
        })
}

/// What the environment or a profile says.
#[derive(Debug, Default, PartialEq, Eq)]
struct Settings {
    access_key: Option<String>,
    secret_key: Option<String>,
    token: Option<String>,
    region: Option<String>,
    endpoint: Option<String>,
}

impl Settings {
    fn from_env(env: &BTreeMap<String, String>) -> Settings {
        let get = |k: &str| env.get(k).filter(|v| !v.is_empty()).cloned();
        Settings {
            access_key: get("AWS_ACCESS_KEY_ID"),
            secret_key: get("AWS_SECRET_ACCESS_KEY"),
            token: get("AWS_SESSION_TOKEN"),
            region: get("AWS_REGION").or_else(|| get("AWS_DEFAULT_REGION")),
            endpoint: get("AWS_ENDPOINT_URL").or_else(|| get("AWS_ENDPOINT")),
        }
    }

    /// Fills what the environment left open from the profile files. A profile named by
    /// `AWS_PROFILE` that neither file has is an error; a missing `default` is not.
    fn fill_from_profile(&mut self, env: &BTreeMap<String, String>) -> Result<(), RemoteError> {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let file = |var: &str, rel: &str| {
            env.get(var)
                .map(PathBuf::from)
                .or_else(|| home.as_ref().map(|h| h.join(".aws").join(rel)))
        };
        let named = env.get("AWS_PROFILE").filter(|p| !p.is_empty());
        let profile = named.map_or("default", |p| p.as_str());
        let mut found = false;
        // The credentials file names sections `[name]`; the config file `[profile name]`
        // (and `[default]`).
        if let Some(text) = file("AWS_SHARED_CREDENTIALS_FILE", "credentials")
            .and_then(|p| std::fs::read_to_string(p).ok())
        {
            if let Some(section) = ini_section(&text, profile) {
                found = true;
                self.fill(&section);
            }
        }
        if let Some(text) =
            file("AWS_CONFIG_FILE", "config").and_then(|p| std::fs::read_to_string(p).ok())
        {
            let name = if profile == "default" {
                "default".to_owned()
            } else {
                format!("profile {profile}")
            };
            if let Some(section) = ini_section(&text, &name) {
                found = true;
                self.fill(&section);
            }
        }
        match named {
            Some(p) if !found => Err(RemoteError::Config {
                url: String::from("the object store"),
                why: format!(
                    "AWS_PROFILE is `{p}`, a profile neither ~/.aws/credentials nor ~/.aws/config has"
                ),
            }),
            _ => Ok(()),
        }
    }

    fn fill(&mut self, section: &BTreeMap<String, String>) {
        let take = |slot: &mut Option<String>, key: &str| {
            if slot.is_none() {
                *slot = section.get(key).cloned();
            }
        };
        take(&mut self.access_key, "aws_access_key_id");
        take(&mut self.secret_key, "aws_secret_access_key");
        take(&mut self.token, "aws_session_token");
        take(&mut self.region, "region");
        take(&mut self.endpoint, "endpoint_url");
    }
}

/// The `key = value` lines of section `[name]` of an INI text (comments `#` and `;`).
fn ini_section(text: &str, name: &str) -> Option<BTreeMap<String, String>> {
    let mut current: Option<&str> = None;
    let mut out: Option<BTreeMap<String, String>> = None;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            current = Some(header.trim());
            if current == Some(name) {
                out.get_or_insert_with(BTreeMap::new);
            }
            continue;
        }
        if current != Some(name) {
            continue;
        }
        if let (Some(map), Some((k, v))) = (out.as_mut(), line.split_once('=')) {
            map.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_profile_section_is_read_and_the_environment_wins() {
        let text = "[default]\naws_access_key_id = A\n\n[ci]\n# a comment\naws_access_key_id=B\naws_secret_access_key = S\nregion = eu-west-1\n";
        let ci = ini_section(text, "ci").unwrap();
        assert_eq!(ci.get("aws_access_key_id").map(String::as_str), Some("B"));
        assert_eq!(ci.get("region").map(String::as_str), Some("eu-west-1"));
        assert!(ini_section(text, "other").is_none());
        let mut env = BTreeMap::new();
        env.insert("AWS_REGION".to_owned(), "us-west-2".to_owned());
        let mut s = Settings::from_env(&env);
        s.fill(&ci);
        assert_eq!(s.region.as_deref(), Some("us-west-2"));
        assert_eq!(s.access_key.as_deref(), Some("B"));
        assert_eq!(s.secret_key.as_deref(), Some("S"));
    }

    #[test]
    fn a_named_profile_that_is_nowhere_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let creds = dir.path().join("credentials");
        std::fs::write(&creds, "[default]\naws_access_key_id = A\n").unwrap();
        let mut env = BTreeMap::new();
        env.insert(
            "AWS_SHARED_CREDENTIALS_FILE".to_owned(),
            creds.display().to_string(),
        );
        env.insert(
            "AWS_CONFIG_FILE".to_owned(),
            dir.path().join("config").display().to_string(),
        );
        let mut s = Settings::default();
        s.fill_from_profile(&env).unwrap();
        assert_eq!(s.access_key.as_deref(), Some("A"));
        env.insert("AWS_PROFILE".to_owned(), "missing".to_owned());
        let err = Settings::default().fill_from_profile(&env).unwrap_err();
        assert!(err.to_string().contains("`missing`"), "{err}");
    }
}
