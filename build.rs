//! The version `probe --version` prints: the package's version, and in an optimised build
//! (`--release`, `--profile dist`) made from a git clone of probe itself, the commit and its
//! date (`0.1.0 (f867963 2026-12-07)`).
//!
//! Built from a crates tarball, or where `git` is missing, it is the package's version
//! alone: nothing here fails a build. A dev build (`cargo build`, `cargo test`) says
//! `(dev build)` and reads no commit: naming one would mean rebuilding the whole crate at
//! every commit and checkout, for a version nobody ships. Uses the standard library only (no
//! build dependency): it runs in every build, the newcomer's first one too.
//! `tests/conventions.rs` includes this file to test [`commit`] against the clone itself.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let package = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let optimised = std::env::var("PROFILE").is_ok_and(|p| p != "debug");
    let version = if !optimised {
        format!("{package} (dev build)")
    } else {
        match commit(&manifest_dir, &mut |path| {
            println!("cargo:rerun-if-changed={}", path.display())
        }) {
            Some((hash, date)) => format!("{package} ({hash} {date})"),
            None => package,
        }
    };
    println!("cargo:rustc-env=PROBE_BUILD_VERSION={version}");
    println!("cargo:rerun-if-changed=build.rs");
}

/// The short hash and date (`YYYY-MM-DD`) of the commit checked out in `dir`, when `dir` is
/// the top of a git work tree (never a repository that merely holds an unpacked tarball).
/// `watch` is given each git file whose change means another commit is checked out.
pub(crate) fn commit(dir: &Path, watch: &mut dyn FnMut(&Path)) -> Option<(String, String)> {
    let top = git(dir, &["rev-parse", "--show-toplevel"])?;
    if !same_dir(Path::new(&top), dir) {
        return None;
    }
    // A new commit, a checkout or a fetch that packs refs changes these files: the version
    // is read again then, and only then.
    let mut names = vec!["HEAD".to_owned(), "packed-refs".to_owned()];
    names.extend(git(dir, &["symbolic-ref", "-q", "HEAD"]));
    for name in names {
        // A file that does not exist is not named: cargo would then run this at every build.
        if let Some(path) = git(dir, &["rev-parse", "--git-path", &name]) {
            let path = dir.join(path);
            if path.exists() {
                watch(&path);
            }
        }
    }
    let line = git(dir, &["log", "-1", "--format=%h %cs"])?;
    let (hash, date) = line.split_once(' ')?;
    Some((hash.to_owned(), date.to_owned()))
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// `git args…` in `dir`, its output trimmed; `None` when git is missing or fails.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}
