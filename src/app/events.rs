//! `--events FILE|-` for the commands that publish a campaign's event stream (`run`,
//! `demo`, `replay`, `recheck`): the file is created before any work, so that a path that
//! cannot be written is a usage error, and closed after it, when a write that failed is an
//! IO error naming the file. With `-` the stream is standard output, and the command's own
//! output moves to standard error.
//!
//! Depends on: `report::events_file`, `events`, `error`.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::error::{CliError, OnStream};
use crate::events::{self, EventSink};
use crate::report::events_file::EventsFile;

/// The events output of one command: a file, standard output, or nothing.
pub(crate) struct EventsOut {
    file: Option<(EventsFile, PathBuf)>,
}

impl EventsOut {
    /// Creates `path` (or takes standard output for `-`); nothing for `None`.
    pub(crate) fn open(path: Option<&Path>) -> Result<EventsOut, CliError> {
        let file = match path {
            None => None,
            Some(path) => {
                let file = EventsFile::create(path).map_err(|e| CliError::Usage {
                    message: format!("cannot write events to {}: {e}", path.display()),
                    hint: Some(
                        "give a file in a directory that exists, or - for standard output".into(),
                    ),
                })?;
                Some((file, path.to_owned()))
            }
        };
        Ok(EventsOut { file })
    }

    /// The sink that writes the stream, if there is one.
    pub(crate) fn sink(&self) -> Option<EventSink> {
        self.file.as_ref().map(|(file, _)| file.sink())
    }

    /// The sink that writes the stream, or one that drops everything.
    pub(crate) fn sink_or_discard(&self) -> EventSink {
        self.sink().unwrap_or_else(events::discard)
    }

    /// Whether the stream is standard output (the command's output then goes to standard
    /// error).
    pub(crate) fn on_stdout(&self) -> bool {
        self.file
            .as_ref()
            .is_some_and(|(_, path)| path.as_path() == Path::new("-"))
    }

    /// Where the command's own output goes: standard output, or standard error when the
    /// stream took standard output (a write that fails there then says standard error).
    pub(crate) fn command_output<'a>(
        &self,
        out: &'a mut dyn Write,
        err: &'a mut dyn Write,
    ) -> CommandOutput<'a> {
        if self.on_stdout() {
            CommandOutput {
                to: err,
                stream: Some("standard error"),
            }
        } else {
            CommandOutput {
                to: out,
                stream: None,
            }
        }
    }

    /// Writes out the stream; the work is done, so a write that failed is an IO error.
    pub(crate) fn finish(&self) -> Result<(), CliError> {
        match &self.file {
            None => Ok(()),
            Some((file, path)) => file.finish().map_err(|e| {
                CliError::internal(format!("cannot write events to {}", path.display()), e)
            }),
        }
    }
}

/// A command's own output, [`EventsOut::command_output`]: its write errors name the
/// stream when it is not standard output ([`OnStream`]).
pub(crate) struct CommandOutput<'a> {
    to: &'a mut dyn Write,
    stream: Option<&'static str>,
}

impl CommandOutput<'_> {
    fn mark(&self, e: io::Error) -> io::Error {
        match self.stream {
            Some(stream) => OnStream::wrap(stream, e),
            None => e,
        }
    }
}

impl Write for CommandOutput<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.to.write(buf).map_err(|e| self.mark(e))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.to.flush().map_err(|e| self.mark(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream whose every write fails.
    struct Full;

    impl Write for Full {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::other("disk full"))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn output_moved_to_standard_error_says_so_when_it_cannot_be_written() {
        let events = EventsOut::open(Some(Path::new("-"))).unwrap();
        let (mut out, mut err) = (Vec::new(), Full);
        let mut output = events.command_output(&mut out, &mut err);
        let e = writeln!(output, "summary").unwrap_err();
        assert_eq!(
            CliError::output(e).to_string(),
            "cannot write to standard error: disk full"
        );

        let events = EventsOut::open(None).unwrap();
        let (mut out, mut err) = (Full, Vec::new());
        let mut output = events.command_output(&mut out, &mut err);
        let e = writeln!(output, "summary").unwrap_err();
        assert_eq!(
            CliError::output(e).to_string(),
            "cannot write to standard output: disk full"
        );
    }
}
