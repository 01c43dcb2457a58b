//! `--events FILE|-` for the commands that publish a campaign's event stream (`run`,
//! `demo`, `replay`, `recheck`): the file is created before any work, so that a path that
//! cannot be written is a usage error, and closed after it, when a write that failed is an
//! IO error naming the file. With `-` the stream is standard output, and the command's own
//! output moves to standard error.
//!
//! Depends on: `report::events_file`, `events`, `error`.

use std::path::{Path, PathBuf};

use crate::error::CliError;
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
