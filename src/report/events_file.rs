//! `--events FILE`: the run's event stream written as it happens, one JSON object a line
//! (docs/events.md). One consumer of [`crate::events`], beside the progress bar.
//!
//! Depends on: `events`.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::events::{Event, EventSink, Record};

/// An open events file (or standard output, for `-`).
pub struct EventsFile {
    writer: Arc<Mutex<Writer>>,
}

struct Writer {
    out: BufWriter<Box<dyn Write + Send>>,
    /// The first write that failed: the run goes on, and the command reports it at the end.
    failed: Option<io::Error>,
    line: Vec<u8>,
}

impl EventsFile {
    /// Creates (or truncates) `path`; `-` is standard output.
    pub fn create(path: &Path) -> io::Result<EventsFile> {
        let out: Box<dyn Write + Send> = if path.as_os_str() == "-" {
            // Through the terminal's one way: a bar drawn on the same terminal is lifted
            // around each write, and standard output is never locked between writes.
            Box::new(crate::report::terminal::stdout())
        } else {
            Box::new(File::create(path)?)
        };
        Ok(EventsFile {
            writer: Arc::new(Mutex::new(Writer {
                out: BufWriter::with_capacity(64 * 1024, out),
                failed: None,
                line: Vec::with_capacity(512),
            })),
        })
    }

    /// The sink that writes each event as one line.
    pub fn sink(&self) -> EventSink {
        let writer = self.writer.clone();
        Arc::new(move |event: &Event<'_>| {
            let Ok(mut w) = writer.lock() else { return };
            if w.failed.is_some() {
                return;
            }
            let w = &mut *w;
            w.line.clear();
            let written = serde_json::to_writer(&mut w.line, &Record::from(event))
                .map_err(io::Error::from)
                .and_then(|()| {
                    w.line.push(b'\n');
                    w.out.write_all(&w.line)
                });
            if let Err(e) = written {
                w.failed = Some(e);
            }
        })
    }

    /// Writes out what is buffered; the first error of the whole stream, if any.
    pub fn finish(&self) -> io::Result<()> {
        let mut w = self
            .writer
            .lock()
            .map_err(|_| io::Error::other("the events writer was poisoned"))?;
        if let Some(e) = w.failed.take() {
            return Err(e);
        }
        w.out.flush()
    }
}
