//! Colour for what a person reads at a terminal: a finding's severity and a verdict.
//!
//! Decided once per process and per stream ([`choose`]): `--color always` or `never` as
//! given; `auto` colours a stream that is a terminal, unless `NO_COLOR` is set (any
//! non-empty value, no-color.org), `CLICOLOR=0`, or `TERM=dumb`; `CLICOLOR_FORCE` (any
//! value but `0`) colours pipes too, and `NO_COLOR` wins over it. A writer that colours
//! asks for a [`Paint`] for the stream it writes to; tests and files get [`Paint::OFF`].
//! Colour only ever wraps text already made printable: the escapes are probe's own.
//!
//! Depends on: nothing in probe.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};

/// `--color`: when to colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    Auto,
    Always,
    Never,
}

/// Whether standard output is coloured; off until [`choose`] says otherwise.
static STDOUT: AtomicBool = AtomicBool::new(false);
/// Whether standard error is coloured.
static STDERR: AtomicBool = AtomicBool::new(false);

/// Decides, once for the process, whether standard output and standard error are coloured.
pub fn choose(when: When) {
    let env = |name: &str| std::env::var(name).ok();
    STDOUT.store(
        decide(when, std::io::stdout().is_terminal(), env),
        Ordering::Relaxed,
    );
    STDERR.store(
        decide(when, std::io::stderr().is_terminal(), env),
        Ordering::Relaxed,
    );
}

/// Whether a stream is coloured: `terminal` is whether it is one, `env` reads a variable.
pub fn decide(when: When, terminal: bool, env: impl Fn(&str) -> Option<String>) -> bool {
    match when {
        When::Always => true,
        When::Never => false,
        When::Auto => {
            let set = |name: &str| env(name).filter(|v| !v.is_empty());
            if set("NO_COLOR").is_some() {
                false
            } else if set("CLICOLOR_FORCE").is_some_and(|v| v != "0") {
                true
            } else if set("CLICOLOR").is_some_and(|v| v == "0")
                || set("TERM").is_some_and(|v| v == "dumb")
            {
                false
            } else {
                terminal
            }
        }
    }
}

/// Colours text, or leaves it as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Paint {
    on: bool,
}

const RESET: &str = "\u{1b}[0m";
const BOLD_RED: &str = "\u{1b}[1;31m";
const YELLOW: &str = "\u{1b}[33m";
const CYAN: &str = "\u{1b}[36m";
const BOLD_GREEN: &str = "\u{1b}[1;32m";
const BOLD: &str = "\u{1b}[1m";

impl Paint {
    /// No colour: for files, buffers and tests.
    pub const OFF: Paint = Paint { on: false };

    /// Colour, whatever the stream.
    pub const ON: Paint = Paint { on: true };

    /// As [`choose`] decided for standard output.
    pub fn stdout() -> Paint {
        Paint {
            on: STDOUT.load(Ordering::Relaxed),
        }
    }

    /// As [`choose`] decided for standard error.
    pub fn stderr() -> Paint {
        Paint {
            on: STDERR.load(Ordering::Relaxed),
        }
    }

    /// Whether this colours at all.
    pub fn is_on(self) -> bool {
        self.on
    }

    fn wrap(self, style: &str, text: &str) -> String {
        if self.on && !text.is_empty() {
            format!("{style}{text}{RESET}")
        } else {
            text.to_owned()
        }
    }

    /// `text` in the colour of a finding's severity (`high`, `medium`, `low`, as
    /// report.json writes it; any case): bold red, yellow, cyan.
    pub fn severity(self, severity: &str, text: &str) -> String {
        let style = match severity.to_ascii_lowercase().as_str() {
            "high" => BOLD_RED,
            "medium" => YELLOW,
            _ => CYAN,
        };
        self.wrap(style, text)
    }

    /// A verdict that fails: findings, a reproduced fault.
    pub fn bad(self, text: &str) -> String {
        self.wrap(BOLD_RED, text)
    }

    /// A verdict that passes: no findings, a fixed fault.
    pub fn good(self, text: &str) -> String {
        self.wrap(BOLD_GREEN, text)
    }

    /// A heading.
    pub fn strong(self, text: &str) -> String {
        self.wrap(BOLD, text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn auto_colours_a_terminal_only_and_the_variables_turn_it_off_or_on() {
        assert!(decide(When::Auto, true, env(&[])));
        assert!(!decide(When::Auto, false, env(&[])), "a pipe");
        assert!(!decide(When::Auto, true, env(&[("NO_COLOR", "1")])));
        assert!(
            decide(When::Auto, true, env(&[("NO_COLOR", "")])),
            "an empty NO_COLOR is unset"
        );
        assert!(decide(When::Auto, false, env(&[("CLICOLOR_FORCE", "1")])));
        assert!(!decide(When::Auto, false, env(&[("CLICOLOR_FORCE", "0")])));
        assert!(
            !decide(
                When::Auto,
                true,
                env(&[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")])
            ),
            "NO_COLOR wins"
        );
        assert!(!decide(When::Auto, true, env(&[("TERM", "dumb")])));
        assert!(!decide(When::Auto, true, env(&[("CLICOLOR", "0")])));
    }

    #[test]
    fn always_and_never_ignore_the_stream_and_the_variables() {
        assert!(decide(When::Always, false, env(&[("NO_COLOR", "1")])));
        assert!(!decide(When::Never, true, env(&[("CLICOLOR_FORCE", "1")])));
    }

    #[test]
    fn paint_wraps_only_when_on() {
        assert_eq!(Paint::OFF.severity("high", "F100"), "F100");
        assert_eq!(
            Paint::ON.severity("high", "F100"),
            "\u{1b}[1;31mF100\u{1b}[0m"
        );
        assert_eq!(Paint::ON.severity("Medium", "x"), "\u{1b}[33mx\u{1b}[0m");
        assert_eq!(Paint::ON.good(""), "", "nothing to colour");
    }
}
