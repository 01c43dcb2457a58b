//! One function per command: turns parsed options into work and writes the output.
//!
//! This is the only layer that wires spec, engine, store and reports together and that
//! decides an exit code.
//!
//! Depends on: everything.

mod campaign;
mod checks;
pub mod diff;
mod docs;
mod events;
pub mod export;
pub mod log;
mod merge;
mod out;
pub mod process;
mod project;
pub mod recheck;
pub mod remote;
pub mod replay;
pub mod report;
pub mod run;
pub mod serve;
mod shell;
pub mod show;
mod signals;
mod since;
pub mod spec;
pub mod store;

use std::io::Write;

use crate::cli::{Cli, Command};
use crate::error::CliError;
pub use out::Out;

/// Runs one command; returns the exit code on success.
pub fn run(mut cli: Cli, out: &mut dyn Write, err: &mut dyn Write) -> Result<u8, CliError> {
    crate::report::colour::choose(match cli.global.color {
        crate::cli::ColorWhen::Auto => crate::report::colour::When::Auto,
        crate::cli::ColorWhen::Always => crate::report::colour::When::Always,
        crate::cli::ColorWhen::Never => crate::report::colour::When::Never,
    });
    match &cli.command {
        // These print what the build knows: no project file is needed, and a broken one
        // must not stop them.
        Command::Completions(_) | Command::Man(_) | Command::Docs(_) => {}
        // Before the store is chosen: probe.toml may name it, an `s3://` one too.
        _ => project::settle(&mut cli.global)?,
    }
    match remote::remote_of(&cli)? {
        Some(url) => remote::run_remote(cli, url, out, err),
        None => run_local(cli, out, err),
    }
}

/// Runs one command on a local store (a remote store's cache among them).
fn run_local(cli: Cli, out: &mut dyn Write, err: &mut dyn Write) -> Result<u8, CliError> {
    let global = cli.global;
    let store_dir = run::store_dir(&global);
    let out = &mut Out::new(out);
    match cli.command {
        Command::Run(opts) => run::exec_run(*opts, &global, out, err),
        Command::Demo(opts) => run::exec_demo(opts, &global, out, err),
        Command::Spec(o) => spec::exec_spec(&o, out),
        Command::Log(o) => log::exec_log(&o, &store_dir, out),
        Command::Show(o) => show::exec_show(&o, &store_dir, out, err),
        Command::Recheck(o) => recheck::exec_recheck(&o, &global, &store_dir, out, err),
        Command::Diff(o) => diff::exec_diff(&o, &store_dir, out, err),
        Command::Store(c) => store::exec_store(&c, &store_dir, out),
        Command::Replay(o) => replay::exec_replay(&o, &global, &store_dir, out, err),
        Command::Serve(o) => serve::exec_serve(&o, &store_dir, out),
        Command::Export(o) => export::exec_export(&o, &store_dir, out, err),
        Command::Report(o) => report::exec_report(&o, &store_dir, err),
        Command::Completions(o) => shell::exec_completions(&o, out),
        Command::Man(o) => shell::exec_man(&o, out),
        Command::Docs(o) => docs::exec_docs(&o, out),
    }
}

/// When `text` names several runs, says on `err` which one was taken: the newest of that
/// name, the one rule of every command that takes a run (docs/cli.md, naming runs).
pub(crate) fn note_run_name(store: &crate::store::Store, text: &str, err: &mut dyn Write) {
    let Ok(named) = store.runs_named(text.trim()) else {
        return;
    };
    if let [newest, _, ..] = named.as_slice() {
        let started = store
            .get::<crate::model::RunStart>(*newest)
            .map(|s| format!(", started {}", log::when(s.started_ms)))
            .unwrap_or_default();
        // A note only: the command's own output and exit code are what count.
        let _ = writeln!(
            err,
            "note: {} runs are named `{}`; taking the newest, {}{started}",
            named.len(),
            text.trim(),
            newest.short(12)
        );
    }
}
