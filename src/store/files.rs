//! Files of a store written or moved with care: a file replaced whole through a rename,
//! a damaged index moved aside.
//!
//! Depends on: `store::error`.

use std::fs;
use std::path::{Path, PathBuf};

use super::error::{io_err, StoreError};

/// Moves a damaged index file and its `-wal` and `-shm` aside, to
/// `index.sqlite.damaged-<unix seconds>` (`-<n>` added when that exists); gives the new
/// name. Only for a process that holds the store alone.
pub(crate) fn move_index_aside(index_path: &Path) -> Result<PathBuf, StoreError> {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let name = index_path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "index.sqlite".into());
    let with_suffix = |p: &Path, suffix: &str| {
        let mut s = p.as_os_str().to_owned();
        s.push(suffix);
        PathBuf::from(s)
    };
    for n in 0..1000u32 {
        let to = index_path.with_file_name(match n {
            0 => format!("{name}.damaged-{secs}"),
            n => format!("{name}.damaged-{secs}-{n}"),
        });
        if to.exists() || with_suffix(&to, "-wal").exists() {
            continue;
        }
        // The -wal and -shm first: a damaged file left behind would still be found.
        for suffix in ["-wal", "-shm"] {
            let from = with_suffix(index_path, suffix);
            if from.exists() {
                fs::rename(&from, with_suffix(&to, suffix)).map_err(io_err("move aside", &from))?;
            }
        }
        if index_path.exists() {
            fs::rename(index_path, &to).map_err(io_err("move aside", index_path))?;
        }
        return Ok(to);
    }
    Err(StoreError::Other(format!(
        "cannot find a free name to move {} aside",
        index_path.display()
    )))
}

/// Writes a file through a temporary file and a rename, so readers see old or new.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    use std::io::Write;
    let tmp = path.with_extension("tmp");
    let mut f = fs::File::create(&tmp).map_err(io_err("create", &tmp))?;
    f.write_all(bytes).map_err(io_err("write", &tmp))?;
    f.sync_all().map_err(io_err("sync", &tmp))?;
    fs::rename(&tmp, path).map_err(io_err("rename", &tmp))
}
