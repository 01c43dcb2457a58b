//! The `probe` binary: parse, run, map to an exit code. Everything else is in the library.

use std::io::Write;
use std::process::ExitCode;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    probe::app::process::disable_transparent_huge_pages();
    let cli = probe::cli::parse();
    // Never locked for the process's life: indicatif's tick thread needs standard error's
    // lock to draw the bar, and the event stream standard output's to flush (see
    // `probe::report::terminal`).
    let mut out = probe::report::terminal::stdout();
    let mut err = probe::report::terminal::stderr();
    match probe::app::run(cli, &mut out, &mut err) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            // A closed pipe (`probe log | head`) is not a failure.
            if e.is_broken_pipe() {
                return ExitCode::SUCCESS;
            }
            let _ = writeln!(err, "probe: error: {e:#}");
            if let Some(hint) = e.hint() {
                let _ = writeln!(err, "  hint: {hint}");
            }
            ExitCode::from(e.exit_code())
        }
    }
}
