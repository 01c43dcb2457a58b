//! The one way to the terminal: every line probe writes while a progress bar is drawn goes
//! through here, so the bar, the event stream on standard output and the console never hold
//! each other up or write over each other.
//!
//! The process never keeps standard output or standard error locked: each write takes the
//! stream's lock for the time of that write alone. indicatif's tick thread takes the bar's
//! state and then standard error's lock to draw; a writer that held standard error for the
//! whole process while it waited for the bar's state (to print a line above the bar) would
//! wait for ever. Here a write takes the bar's state first, through
//! [`indicatif::ProgressBar::suspend`] (which clears the bar, runs the write, and draws the
//! bar again), and a stream's lock second: the same order as the tick thread's.
//!
//! Depends on: nothing in probe; on `indicatif`.

use std::borrow::Cow;
use std::io::{self, IsTerminal, Write};
use std::sync::Mutex;

use indicatif::ProgressBar;

/// The bar drawn now, if any ([`Shown`]).
static BAR: Mutex<Option<ProgressBar>> = Mutex::new(None);

/// Which standard stream a [`TerminalWriter`] writes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// Standard output or standard error, taking the stream's lock for each write only, and
/// lifting the bar (if one is drawn) around a write that reaches the terminal it is drawn on.
#[derive(Clone, Copy, Debug)]
pub struct TerminalWriter {
    stream: Stream,
    /// Whether this stream is a terminal: a bar is drawn on standard error only when that is
    /// a terminal, and only a write to a terminal can overwrite it.
    terminal: bool,
}

/// Standard output, through the terminal's one way.
pub fn stdout() -> TerminalWriter {
    TerminalWriter {
        stream: Stream::Stdout,
        terminal: io::stdout().is_terminal(),
    }
}

/// Standard error, through the terminal's one way.
pub fn stderr() -> TerminalWriter {
    TerminalWriter {
        stream: Stream::Stderr,
        terminal: io::stderr().is_terminal(),
    }
}

impl TerminalWriter {
    fn with_bar_lifted<T>(&self, write: impl FnOnce() -> T) -> T {
        if !self.terminal {
            return write();
        }
        // The bar is cloned out so that no lock of this module is held while the bar's state
        // is: a sink that draws the bar never waits for `BAR`.
        let bar = BAR.lock().map(|b| b.clone()).unwrap_or(None);
        match bar {
            Some(bar) if !bar.is_hidden() => bar.suspend(write),
            _ => write(),
        }
    }
}

impl Write for TerminalWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.with_bar_lifted(|| match self.stream {
            Stream::Stdout => io::stdout().write(buf),
            Stream::Stderr => io::stderr().write(buf),
        })
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        // One lift for the whole buffer, so that a line is never split by a redraw.
        self.with_bar_lifted(|| match self.stream {
            Stream::Stdout => io::stdout().lock().write_all(buf),
            Stream::Stderr => io::stderr().lock().write_all(buf),
        })
    }

    fn flush(&mut self) -> io::Result<()> {
        self.with_bar_lifted(|| match self.stream {
            Stream::Stdout => io::stdout().flush(),
            Stream::Stderr => io::stderr().flush(),
        })
    }
}

/// A bar registered as the one drawn now; it is unregistered when this is dropped.
pub struct Shown(());

/// Registers `bar` as the one drawn now: writes through [`TerminalWriter`] lift it.
pub fn show(bar: &ProgressBar) -> Shown {
    if let Ok(mut shown) = BAR.lock() {
        *shown = Some(bar.clone());
    }
    Shown(())
}

impl Drop for Shown {
    fn drop(&mut self) {
        if let Ok(mut shown) = BAR.lock() {
            *shown = None;
        }
    }
}

/// `text` made safe to print on one line of a terminal or a CI log: every control
/// character (C0, DEL and C1, newlines included) written as an escape (`\x1b`, `\n`), so
/// that what an API sent (a finding's message quoting a body, a header, a curl line) can
/// neither move the cursor, set the window title, clear a log's screen nor forge a line.
pub fn printable(text: &str) -> Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() || is_bidi_control(c);
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() && (c as u32) < 0x100 => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c if unsafe_char(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// The bidirectional overrides and isolates, which reorder what a terminal shows.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_the_rest_kept() {
        assert!(matches!(printable("plain · text"), Cow::Borrowed(_)));
        assert_eq!(
            printable("a\u{1b}]0;owned\u{7}b\u{1b}[2Jc\nd\u{9b}e"),
            "a\\x1b]0;owned\\x07b\\x1b[2Jc\\nd\\x9be"
        );
        assert_eq!(printable("x\u{202e}y"), "x\\u{202e}y");
    }

    /// One test, for `BAR` is the process's.
    #[test]
    fn writes_go_through_while_a_bar_is_shown_and_the_bar_is_forgotten_after() {
        let bar = ProgressBar::hidden();
        {
            let _shown = show(&bar);
            assert!(BAR.lock().unwrap().is_some());
            let mut err = stderr();
            err.write_all(b"").unwrap();
            err.flush().unwrap();
        }
        assert!(BAR.lock().unwrap().is_none());
    }
}
