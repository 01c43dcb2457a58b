//! The one context a command writes its output through: `writeln!(out, ...)?` on an
//! [`Out`] returns a [`CliError`] that already says which write failed and why
//! ([`CliError::output`]), so no write wraps its `io::Error` by hand.
//!
//! A closed pipe (`probe log | head -1`) stays what it was: the error keeps its
//! `io::Error` as its source, [`CliError::is_broken_pipe`] recognises it, and `main` ends
//! quietly with success.
//!
//! Depends on: `error`.

use std::fmt;
use std::io::{self, Write};

use crate::error::CliError;

/// A command's output stream (standard output, or what stands in for it).
pub struct Out<'a> {
    to: &'a mut dyn Write,
}

impl<'a> Out<'a> {
    /// The output written to `to`.
    pub fn new(to: &'a mut dyn Write) -> Out<'a> {
        Out { to }
    }

    /// What `write!` and `writeln!` call: the text, or the error of writing it.
    pub fn write_fmt(&mut self, args: fmt::Arguments<'_>) -> Result<(), CliError> {
        self.to.write_fmt(args).map_err(CliError::output)
    }

    /// Flushes the stream (before waiting, so that a reader sees what was written).
    pub fn flush(&mut self) -> Result<(), CliError> {
        self.to.flush().map_err(CliError::output)
    }

    /// Runs a writer of the layers below, which speak `io::Result`, on this output.
    pub fn with<T>(
        &mut self,
        write: impl FnOnce(&mut dyn Write) -> io::Result<T>,
    ) -> Result<T, CliError> {
        write(&mut *self.to).map_err(CliError::output)
    }

    /// The stream itself, for a writer that keeps it (a buffer, the summary's stream).
    pub fn raw(&mut self) -> &mut dyn Write {
        &mut *self.to
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream that is closed, as standard output is under `probe log | head -1` once
    /// `head` has read its line.
    struct Closed;

    impl Write for Closed {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from(io::ErrorKind::BrokenPipe))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_failed_write_names_the_stream_and_a_closed_pipe_stays_quiet() {
        let mut closed = Closed;
        let mut out = Out::new(&mut closed);
        let e = writeln!(out, "a line").unwrap_err();
        assert!(e.is_broken_pipe(), "{e}");
        assert!(e.to_string().starts_with("cannot write to standard output"));

        let mut text = Vec::new();
        let mut out = Out::new(&mut text);
        writeln!(out, "one {}", 1).unwrap();
        out.with(|w| w.write_all(b"two\n")).unwrap();
        out.flush().unwrap();
        assert_eq!(String::from_utf8(text).unwrap(), "one 1\ntwo\n");
    }
}
