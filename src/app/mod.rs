//! One function per command: turns parsed options into work and writes the output.
//!
//! This is the only layer that wires spec, engine, store and reports together and that
//! decides an exit code.
//!
//! Depends on: everything.

pub mod spec;

use std::io::Write;

use crate::cli::{Cli, Command};
use crate::error::CliError;

/// Runs one command; returns the exit code on success.
pub fn run(cli: Cli, _out: &mut dyn Write, _err: &mut dyn Write) -> Result<u8, CliError> {
    match cli.command {
        Command::Spec(opts) => spec::exec_spec(&opts, _out),
        Command::Run(_)
        | Command::Demo(_)
        | Command::Log(_)
        | Command::Show(_)
        | Command::Store(_) => Err(CliError::usage("this command is not built yet")),
    }
}
