//! The user's checks of one command: the `[[check]]` tables of `probe.toml` and of every
//! `--checks FILE`, read and compiled before anything is sent or judged. A mistake stops
//! the command with exit 2, naming the file, line and column (docs/checks.md).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::check::{self, Check};
use crate::error::CliError;
use crate::settings::ProjectFile;

/// Reads the project file's checks (`probe.toml`, when one was found) and `files`.
pub fn read(project: Option<&ProjectFile>, files: &[PathBuf]) -> Result<Arc<Vec<Check>>, CliError> {
    let mut checks: Vec<Check> = Vec::new();
    if let Some(file) = project {
        checks.extend(check::read_project(&file.path, &file.text).map_err(usage)?);
    }
    for file in files {
        let text = read_text(file)?;
        let shown = file.display().to_string();
        for c in check::read_file(&shown, &text).map_err(usage)? {
            if let Some(first) = checks.iter().find(|k| k.name == c.name) {
                return Err(CliError::Usage {
                    message: format!(
                        "{}: a second check named `{}` (the first is at {})",
                        c.origin, c.name, first.origin
                    ),
                    hint: Some("give each check a name of its own".into()),
                });
            }
            checks.push(c);
        }
    }
    Ok(Arc::new(checks))
}

fn read_text(path: &Path) -> Result<String, CliError> {
    std::fs::read_to_string(path).map_err(|e| CliError::Usage {
        message: format!("{}: {e}", path.display()),
        hint: Some("--checks takes a TOML file of [[check]] tables (`probe docs checks`)".into()),
    })
}

fn usage(e: check::CheckFileError) -> CliError {
    CliError::Usage {
        message: e.to_string(),
        hint: Some("`probe docs checks` describes checks and the exchange model".into()),
    }
}
