//! Helpers shared by the integration tests: the built binary in a throwaway directory.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A command running the built `probe` in `dir`, with progress off.
pub fn probe(dir: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_probe"));
    cmd.current_dir(dir)
        .env("PROBE_NO_PROGRESS", "1")
        .env_remove("PROBE_STORE");
    cmd
}

/// Runs and returns the output, printing it when the test fails later.
pub fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("the probe binary runs");
    eprintln!("--- stdout\n{}", String::from_utf8_lossy(&out.stdout));
    eprintln!("--- stderr\n{}", String::from_utf8_lossy(&out.stderr));
    out
}

/// The exit code.
pub fn code(out: &Output) -> i32 {
    out.status.code().unwrap_or(-1)
}

/// The demo document's path.
pub fn demo_spec() -> PathBuf {
    repo().join("fixtures/demo/openapi.yaml")
}

/// Reads a JSON file.
pub fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
