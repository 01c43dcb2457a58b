//! The project file of one invocation: `--config FILE` (or `PROBE_CONFIG`), else the first
//! `probe.toml` from the current directory up to the top of the repository
//! ([`ProjectFile::find`]). Found once, before any command runs; its `store` stands in for
//! `--store`, its `spec` and `url` for `probe run`'s flags, and flags and variables win.
//!
//! Depends on: `settings` (the file), `cli`, `error`.

use std::path::{Path, PathBuf};

use crate::cli::GlobalOpts;
use crate::error::CliError;
use crate::settings::ProjectFile;

/// Finds the project file and folds it into `global`: `global.config` names the file found
/// (so that every command reads that one), and its `store` fills `global.store` when
/// neither `--store` nor `PROBE_STORE` gave one.
pub fn settle(global: &mut GlobalOpts) -> Result<(), CliError> {
    let file = match &global.config {
        Some(path) => Some(read_given(path)?),
        None => ProjectFile::find(Path::new("."))?,
    };
    if let Some(file) = file {
        if global.store.is_none() {
            global.store = file.store();
        }
        global.config = Some(PathBuf::from(&file.path));
    }
    Ok(())
}

/// The project file [`settle`] found, read again (it is small), or `None` when there is
/// none.
pub fn load(global: &GlobalOpts) -> Result<Option<ProjectFile>, CliError> {
    global.config.as_deref().map(read_given).transpose()
}

fn read_given(path: &Path) -> Result<ProjectFile, CliError> {
    let shown = path.display().to_string();
    if !path.is_file() {
        return Err(CliError::Usage {
            message: format!("--config {shown}: no such file"),
            hint: Some("name a probe.toml, or leave --config out to use the one found from the current directory up".into()),
        });
    }
    Ok(ProjectFile::read_file(path, &shown)?)
}

/// `probe run`'s `--spec` or, without it, the project file's `spec`; the same for `--url`.
pub fn spec_and_url(
    spec: Option<String>,
    url: Option<String>,
    project: Option<&ProjectFile>,
) -> Result<(String, String), CliError> {
    let missing = |flag: &str, key: &str| CliError::Usage {
        message: format!("probe run needs --{flag} (or `{key} = …` in probe.toml)"),
        hint: Some(match project {
            Some(file) => format!("{} has no `{key}`", file.path),
            None => "no probe.toml was found from the current directory up to the repository's top"
                .into(),
        }),
    };
    let spec = spec
        .or_else(|| project.and_then(ProjectFile::spec))
        .ok_or_else(|| missing("spec", "spec"))?;
    let url = url
        .or_else(|| project.and_then(ProjectFile::url))
        .ok_or_else(|| missing("url", "url"))?;
    Ok((spec, url))
}
