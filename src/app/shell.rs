//! What a command-line tool owes its shell: `probe completions SHELL` (clap_complete's
//! scripts) and `probe man` (clap_mangen's roff pages), both made from the command line's
//! own definitions, so they never drift from `--help`.
//!
//! Depends on: `cli`, `error`, `app::out`.

use std::path::Path;

use clap::CommandFactory;

use crate::cli::{Cli, CompletionsOpts, ManOpts};
use crate::error::CliError;

use super::Out;

/// Runs `probe completions SHELL`: the script on standard output.
pub fn exec_completions(opts: &CompletionsOpts, out: &mut Out<'_>) -> Result<u8, CliError> {
    let mut command = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(opts.shell, &mut command, "probe", &mut script);
    out.with(|w| w.write_all(&script))?;
    Ok(crate::exit::OK)
}

/// Runs `probe man`: one page on standard output (probe's, or a command's), or every page
/// written to `--dir`.
pub fn exec_man(opts: &ManOpts, out: &mut Out<'_>) -> Result<u8, CliError> {
    let mut command = Cli::command();
    command.build();
    if let Some(dir) = &opts.dir {
        write_pages(&command, dir)?;
        writeln!(out, "wrote the manual pages to {}", dir.display())?;
        return Ok(crate::exit::OK);
    }
    let mut page = command;
    let mut name = String::from("probe");
    for word in &opts.command {
        let Some(sub) = page
            .get_subcommands()
            .find(|c| has_page(c) && c.get_name() == word)
            .cloned()
        else {
            let known: Vec<&str> = page
                .get_subcommands()
                .filter(|c| has_page(c))
                .map(|c| c.get_name())
                .collect();
            return Err(CliError::Usage {
                message: format!("`{name}` has no command `{word}`"),
                hint: Some(format!("its commands: {}", known.join(", "))),
            });
        };
        // Built, each command already carries its page's name (`probe-run`) and the
        // words that call it (`probe run`).
        name = format!("{name} {word}");
        page = sub;
    }
    out.with(|w| {
        clap_mangen::Man::new(page)
            .source(format!("probe {}", crate::cli::VERSION))
            .render(w)
    })?;
    Ok(crate::exit::OK)
}

/// Every page, `probe.1` and one per command (`probe-run.1`, `probe-store-gc.1`), in `dir`.
fn write_pages(command: &clap::Command, dir: &Path) -> Result<(), CliError> {
    let failed = |e: std::io::Error| CliError::Usage {
        message: format!("--dir {}: {e}", dir.display()),
        hint: None,
    };
    std::fs::create_dir_all(dir).map_err(failed)?;
    let mut pending = vec![command.clone()];
    while let Some(page) = pending.pop() {
        pending.extend(page.get_subcommands().filter(|c| has_page(c)).cloned());
        let name = page
            .get_display_name()
            .unwrap_or(page.get_name())
            .to_owned();
        let mut roff = Vec::new();
        clap_mangen::Man::new(page)
            .source(format!("probe {}", crate::cli::VERSION))
            .render(&mut roff)
            .map_err(failed)?;
        std::fs::write(dir.join(format!("{name}.1")), roff).map_err(failed)?;
    }
    Ok(())
}

/// Whether a command gets a page: not a hidden one (a test tool), nor clap's `help`.
fn has_page(command: &clap::Command) -> bool {
    !command.is_hide_set() && command.get_name() != "help"
}
