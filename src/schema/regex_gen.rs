//! Strings that match a regular expression, for `pattern` (and for mutation, which reuses it).
//!
//! The pattern is parsed with `regex-syntax` into a HIR and the HIR is walked once, choosing
//! alternatives and repetition counts from the RNG. Nothing backtracks: unbounded repetition
//! (`*`, `+`, `{n,}`) is capped at a few extra rounds and every optional round is skipped when
//! the length budget is spent, so a hostile pattern such as `(a*)*b` costs no more than a plain
//! one. Constructs the HIR cannot express (look-around, backreferences) are refused with
//! [`PatternError::Unsupported`]. Anchors emit nothing: JSON Schema patterns are unanchored,
//! and a full match of the pattern is also a match.
//!
//! Characters are drawn from printable ASCII where a class allows it, because `regex-syntax`
//! reads `\d`, `\w` and `\s` as Unicode classes while ECMA-262 (which JSON Schema names) reads
//! them as ASCII; an ASCII choice satisfies both.
//!
//! Depends on nothing else in probe.

use rand::Rng;
use regex_syntax::hir::{Class, Hir, HirKind, Look};

/// Why no string could be built for a pattern.
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
pub enum PatternError {
    /// The pattern does not parse (as `regex-syntax` reads it).
    #[error("pattern {pattern:?} does not parse: {message}")]
    Syntax { pattern: String, message: String },
    /// The pattern uses a construct the generator does not support.
    #[error("pattern {pattern:?} uses an unsupported construct: {message}")]
    Unsupported { pattern: String, message: String },
    /// Every match of the pattern is longer than allowed.
    #[error("pattern {pattern:?} has no match of at most {max_len} characters")]
    TooLong { pattern: String, max_len: usize },
    /// No string was found between the length bounds.
    #[error("pattern {pattern:?}: no match found with {min_len} to {max_len} characters")]
    NoMatch {
        pattern: String,
        min_len: usize,
        max_len: usize,
    },
}

/// A match of `pattern` with at most `max_len` characters (code points).
pub fn generate_matching<R: Rng + ?Sized>(
    pattern: &str,
    rng: &mut R,
    max_len: usize,
) -> Result<String, PatternError> {
    RegexGen::new(pattern)?.generate(rng, 0, max_len, 3)
}

/// A parsed pattern, reusable for many strings.
#[derive(Clone, Debug)]
pub struct RegexGen {
    pattern: String,
    hir: Hir,
    anchored_start: bool,
    anchored_end: bool,
}

/// Beyond this many characters a walk stops, whatever the pattern demands.
const HARD_LIMIT: usize = 100_000;

impl RegexGen {
    pub fn new(pattern: &str) -> Result<RegexGen, PatternError> {
        let hir = regex_syntax::ParserBuilder::new()
            .build()
            .parse(pattern)
            .map_err(|e| {
                let message = e.to_string();
                let lower = message.to_lowercase();
                // regex-syntax says "look-around ... is not supported" and "backreferences are
                // not supported": those are the generator's limits, not the pattern's fault.
                if lower.contains("not supported") || lower.contains("unsupported") {
                    PatternError::Unsupported {
                        pattern: pattern.to_string(),
                        message: first_line(&message),
                    }
                } else {
                    PatternError::Syntax {
                        pattern: pattern.to_string(),
                        message: first_line(&message),
                    }
                }
            })?;
        let props = hir.properties();
        let anchored_start = props.look_set_prefix().contains(Look::Start)
            || props.look_set_prefix().contains(Look::StartLF)
            || props.look_set_prefix().contains(Look::StartCRLF);
        let anchored_end = props.look_set_suffix().contains(Look::End)
            || props.look_set_suffix().contains(Look::EndLF)
            || props.look_set_suffix().contains(Look::EndCRLF);
        Ok(RegexGen {
            pattern: pattern.to_string(),
            hir,
            anchored_start,
            anchored_end,
        })
    }

    /// The length of the shortest match, in bytes (an upper bound on its characters).
    pub fn min_len(&self) -> usize {
        self.hir.properties().minimum_len().unwrap_or(0)
    }

    /// Whether every match starts at the start of the text (`^...`).
    pub fn anchored_start(&self) -> bool {
        self.anchored_start
    }

    /// Whether every match ends at the end of the text (`...$`).
    pub fn anchored_end(&self) -> bool {
        self.anchored_end
    }

    /// A match with `min_len..=max_len` characters. `rep_cap` bounds the extra rounds an
    /// unbounded repetition takes on a first try; later tries raise it to reach `min_len`.
    pub fn generate<R: Rng + ?Sized>(
        &self,
        rng: &mut R,
        min_len: usize,
        max_len: usize,
        rep_cap: u32,
    ) -> Result<String, PatternError> {
        let min_needed = self.hir.properties().minimum_len().unwrap_or(0);
        if min_needed > max_len.saturating_mul(4) {
            return Err(PatternError::TooLong {
                pattern: self.pattern.clone(),
                max_len,
            });
        }
        let caps = [
            rep_cap,
            rep_cap.max(8),
            (min_len as u32).max(16),
            (min_len as u32).saturating_mul(2).max(32),
        ];
        let mut last_err = None;
        for (i, cap) in caps.iter().enumerate() {
            let mut walk = Walk {
                rng: &mut *rng,
                cap: *cap,
                fill: i > 0,
                max_len,
                len: 0,
                out: String::new(),
            };
            match walk.node(&self.hir, 0) {
                Ok(()) => {}
                Err(WalkError::Unsatisfiable(m)) => {
                    return Err(PatternError::Unsupported {
                        pattern: self.pattern.clone(),
                        message: m,
                    })
                }
                Err(WalkError::TooLong) => {
                    last_err = Some(PatternError::TooLong {
                        pattern: self.pattern.clone(),
                        max_len,
                    });
                    continue;
                }
            }
            let mut out = walk.out;
            let mut len = walk.len;
            // Search semantics: text around an unanchored pattern still matches, so pad to
            // reach `min_len` where the pattern leaves room.
            if len < min_len && !(self.anchored_start && self.anchored_end) {
                let pad: String = (0..min_len - len).map(|_| filler(rng)).collect();
                out = if self.anchored_end {
                    pad + &out
                } else {
                    out + &pad
                };
                len = min_len;
            }
            if len >= min_len && len <= max_len {
                return Ok(out);
            }
        }
        Err(last_err.unwrap_or(PatternError::NoMatch {
            pattern: self.pattern.clone(),
            min_len,
            max_len,
        }))
    }
}

fn first_line(s: &str) -> String {
    // regex-syntax errors draw the pattern with a caret under it; the last line says what.
    s.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or(s)
        .trim()
        .trim_start_matches("error: ")
        .to_string()
}

fn filler<R: Rng + ?Sized>(rng: &mut R) -> char {
    const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    CHARS[rng.gen_range(0..CHARS.len())] as char
}

enum WalkError {
    TooLong,
    Unsatisfiable(String),
}

struct Walk<'r, R: Rng + ?Sized> {
    rng: &'r mut R,
    cap: u32,
    /// Take the longest repetition the budget allows (used to reach `minLength`).
    fill: bool,
    max_len: usize,
    /// Characters in `out`.
    len: usize,
    out: String,
}

impl<R: Rng + ?Sized> Walk<'_, R> {
    /// Emits a match of `hir`, leaving room for `reserve` characters that must follow.
    fn node(&mut self, hir: &Hir, reserve: usize) -> Result<(), WalkError> {
        match hir.kind() {
            HirKind::Empty | HirKind::Look(_) => Ok(()),
            HirKind::Literal(lit) => {
                let s = String::from_utf8_lossy(&lit.0);
                self.push_str(&s)
            }
            HirKind::Class(class) => {
                let c = self.pick_class(class)?;
                self.push(c)
            }
            HirKind::Capture(cap) => self.node(&cap.sub, reserve),
            HirKind::Concat(parts) => {
                // Room each part must leave for the minimum of everything after it.
                let mut after: Vec<usize> = vec![0; parts.len()];
                let mut acc = reserve;
                for (i, p) in parts.iter().enumerate().rev() {
                    after[i] = acc;
                    acc = acc.saturating_add(p.properties().minimum_len().unwrap_or(0));
                }
                for (p, r) in parts.iter().zip(after) {
                    self.node(p, r)?;
                }
                Ok(())
            }
            HirKind::Alternation(alts) => {
                let room = self.room(reserve);
                let fitting: Vec<&Hir> = alts
                    .iter()
                    .filter(|a| a.properties().minimum_len().is_some_and(|m| m <= room))
                    .collect();
                let choice = if fitting.is_empty() {
                    // Nothing fits: take the shortest and let the length check refuse it.
                    alts.iter()
                        .min_by_key(|a| a.properties().minimum_len().unwrap_or(usize::MAX))
                } else {
                    Some(fitting[self.rng.gen_range(0..fitting.len())])
                };
                match choice {
                    Some(a) => self.node(a, reserve),
                    None => Err(WalkError::Unsatisfiable("empty alternation".into())),
                }
            }
            HirKind::Repetition(rep) => {
                let sub_min = rep.sub.properties().minimum_len().unwrap_or(0);
                let extra_max = match rep.max {
                    Some(max) => max.saturating_sub(rep.min).min(self.cap.max(1) * 4),
                    None => self.cap,
                };
                let extra_max = if rep.max.is_some() && !self.fill {
                    extra_max.min(self.cap.max(1))
                } else {
                    extra_max
                };
                let extra = if self.fill {
                    extra_max
                } else {
                    self.rng.gen_range(0..=extra_max)
                };
                for _ in 0..rep.min {
                    // The mandatory rounds reserve room for each other.
                    self.node(&rep.sub, reserve)?;
                }
                for _ in 0..extra {
                    // An optional round only when its minimum still fits; a zero-width sub
                    // adds nothing, so stop at once.
                    if sub_min == 0 && rep.sub.properties().maximum_len() == Some(0) {
                        break;
                    }
                    if sub_min.max(1) > self.room(reserve) {
                        break;
                    }
                    let before = (self.out.len(), self.len);
                    match self.node(&rep.sub, reserve) {
                        Ok(()) => {}
                        Err(WalkError::TooLong) => {
                            // Undo the partial round: the rest of the pattern needs the room.
                            self.out.truncate(before.0);
                            self.len = before.1;
                            break;
                        }
                        Err(e) => return Err(e),
                    }
                    if self.len + reserve > self.max_len {
                        self.out.truncate(before.0);
                        self.len = before.1;
                        break;
                    }
                }
                Ok(())
            }
        }
    }

    fn room(&self, reserve: usize) -> usize {
        self.max_len
            .saturating_sub(self.len)
            .saturating_sub(reserve)
    }

    fn push(&mut self, c: char) -> Result<(), WalkError> {
        self.out.push(c);
        self.len += 1;
        if self.len > self.max_len || self.len > HARD_LIMIT {
            return Err(WalkError::TooLong);
        }
        Ok(())
    }

    fn push_str(&mut self, s: &str) -> Result<(), WalkError> {
        self.out.push_str(s);
        self.len += s.chars().count();
        if self.len > self.max_len || self.len > HARD_LIMIT {
            return Err(WalkError::TooLong);
        }
        Ok(())
    }

    fn pick_class(&mut self, class: &Class) -> Result<char, WalkError> {
        match class {
            Class::Unicode(u) => {
                let ranges: Vec<(u32, u32)> = u
                    .ranges()
                    .iter()
                    .map(|r| (r.start() as u32, r.end() as u32))
                    .collect();
                self.pick_ranges(&ranges)
            }
            Class::Bytes(b) => {
                let ranges: Vec<(u32, u32)> = b
                    .ranges()
                    .iter()
                    .filter(|r| r.start() < 0x80)
                    .map(|r| (r.start() as u32, (r.end() as u32).min(0x7f)))
                    .collect();
                self.pick_ranges(&ranges)
            }
        }
    }

    /// A character from `ranges`, printable ASCII when the class has any.
    fn pick_ranges(&mut self, ranges: &[(u32, u32)]) -> Result<char, WalkError> {
        let ascii: Vec<(u32, u32)> = ranges
            .iter()
            .filter_map(|&(a, b)| {
                let (a, b) = (a.max(0x20), b.min(0x7e));
                (a <= b).then_some((a, b))
            })
            .collect();
        let pool = if ascii.is_empty() { ranges } else { &ascii };
        let total: u64 = pool.iter().map(|&(a, b)| u64::from(b - a) + 1).sum();
        if total == 0 {
            return Err(WalkError::Unsatisfiable(
                "a character class matches nothing".into(),
            ));
        }
        let mut i = self.rng.gen_range(0..total);
        for &(a, b) in pool {
            let size = u64::from(b - a) + 1;
            if i < size {
                // Ranges come from `char`s, so every value in them is a valid char
                // (regex-syntax never spans the surrogate gap with a valid scalar).
                return char::from_u32(a + i as u32)
                    .or_else(|| char::from_u32(a))
                    .ok_or_else(|| WalkError::Unsatisfiable("invalid character range".into()));
            }
            i -= size;
        }
        Err(WalkError::Unsatisfiable(
            "a character class matches nothing".into(),
        ))
    }
}
