//! One function per command: turns parsed options into work and writes the output.
//!
//! This is the only layer that wires spec, engine, store and reports together and that
//! decides an exit code.
//!
//! Depends on: everything.

pub mod run;

use std::io::Write;

use crate::cli::{Cli, Command};
use crate::error::CliError;

/// Runs one command; returns the exit code on success.
pub fn run(cli: Cli, out: &mut dyn Write, err: &mut dyn Write) -> Result<u8, CliError> {
    let global = cli.global;
    match cli.command {
        Command::Run(opts) => run::exec_run(opts, &global, out, err),
        Command::Demo(opts) => run::exec_demo(opts, &global, out, err),
        Command::Spec(_) | Command::Log(_) | Command::Show(_) | Command::Store(_) => {
            Err(CliError::usage("this command is not built yet"))
        }
    }
}
