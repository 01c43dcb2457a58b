//! One function per command: turns parsed options into work and writes the output.
//!
//! This is the only layer that wires spec, engine, store and reports together and that
//! decides an exit code.
//!
//! Depends on: everything.

pub mod log;
pub mod show;
pub mod store;

use std::io::Write;
use std::path::PathBuf;

use crate::cli::{Cli, Command};
use crate::error::CliError;

/// Runs one command; returns the exit code on success.
pub fn run(cli: Cli, out: &mut dyn Write, _err: &mut dyn Write) -> Result<u8, CliError> {
    // `--store` / PROBE_STORE, else `./.probe`.
    let store_dir = cli
        .global
        .store
        .clone()
        .unwrap_or_else(|| PathBuf::from(crate::store::DEFAULT_DIR));
    match &cli.command {
        Command::Log(o) => log::exec_log(o, &store_dir, out),
        Command::Show(o) => show::exec_show(o, &store_dir, out),
        Command::Store(c) => store::exec_store(c, &store_dir, out),
        Command::Run(_) | Command::Demo(_) | Command::Spec(_) => {
            Err(CliError::usage("this command is not built yet"))
        }
    }
}
