//! Process exit codes, the contract scripts and CI rely on (`docs/exit-codes.md`).
//!
//! Depends on nothing.

/// Nothing was found.
pub const OK: u8 = 0;
/// The run found at least one finding (or `diff --fail-on` matched).
pub const FINDINGS: u8 = 1;
/// Usage, document or settings error: nothing was sent.
pub const USAGE: u8 = 2;
/// The API could not be reached.
pub const UNREACHABLE: u8 = 3;
/// The store could not be opened, read or written, or failed verification.
pub const STORE: u8 = 4;
/// An IO or internal error: a file or stream could not be written, a runtime or client
/// could not start, recorded data could not be used. The same code as [`STORE`].
pub const INTERNAL: u8 = 4;
/// The API refused the whole run: every opening-lap answer was 401 or 403.
pub const REFUSED: u8 = 5;
/// `run`/`demo` ended by Ctrl-C (SIGINT): the run is recorded as `interrupted` and its
/// reports are written; or a second Ctrl-C, which exits at once. 128 + the signal's number,
/// as a shell reports a process a signal ended.
pub const INTERRUPTED: u8 = 130;
/// `run`/`demo` ended by SIGTERM (a CI job cancelled), as [`INTERRUPTED`].
pub const TERMINATED: u8 = 143;
