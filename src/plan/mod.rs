//! The plan: which strategies a run divides its requests between, in what shares, and which
//! value sources each asks (docs/plan.md specifies the file; docs/design-notes.md, Shares and weights, Fallback).
//!
//! - A **share** divides the run between strategies, counted against each other (1, 1, 2 is
//!   quarters), one whole request at a time.
//! - A strategy's **sources** are asked in order for each value; a **weighted group** is one
//!   position in the order whose members divide that value between them by weight.
//! - A strategy of kind `mutation` changes an accepted request (see [`crate::mutate`]) and
//!   builds from its sources when it has nothing to change; `fuzzing` asks the awkward values
//!   first; `nominal` asks only its sources.
//!
//! # The RNG discipline (what makes the fallback property hold)
//! The engine keeps separate ChaCha8 streams per (seed, operation, purpose):
//! - `plan`: exactly one [`Plan::pick_strategy`] per request, whatever happens next;
//! - `generation`: every draw made while building a request from sources;
//! - `mutation`: every draw of [`crate::mutate::mutate`] and of choosing which kept accepted
//!   request to change.
//!
//! When the mutation strategy is picked, the engine asks `mutate` with the `mutation` stream;
//! on `None` it builds from the strategy's sources with the `generation` stream, exactly as a
//! nominal strategy with the same sources would. `mutate` draws nothing when no kind is on, and
//! never touches another stream, so with `mutation.violations=false` and the same seed the run
//! draws the same strategy sequence and the same generation numbers as the plan whose mutation
//! strategy has no operators: it sends exactly the same requests (`engine_discipline` below
//! holds this with a model of the engine).
//!
//! Depends on: `plan::yaml` (and `mutate` in tests only).

pub mod dictionary;
pub mod yaml;

use std::collections::BTreeMap;
use std::path::Path;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

pub use yaml::FileError;

/// The version of the plan format this build reads.
pub const PLAN_VERSION: u32 = 1;

/// A strategy's name, as the plan writes it and test cases record it.
pub type StrategyName = String;

/// A value source a strategy may ask.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Source {
    /// The closed list the document states (`enum`, `const`).
    Enum,
    /// Values the API itself returned earlier.
    Observed,
    /// Every dictionary handed over, the lists for one value first.
    Dictionaries,
    /// One dictionary, by its `name`.
    Dictionary(String),
    /// The document's examples.
    Example,
    /// The schema's `default`.
    Default,
    /// A value built from the shape's constraints.
    Invention,
}

impl Source {
    fn parse(word: &str) -> Option<Source> {
        Some(match word {
            "enum" => Source::Enum,
            "observed" => Source::Observed,
            "dictionaries" => Source::Dictionaries,
            "example" => Source::Example,
            "default" => Source::Default,
            "invention" => Source::Invention,
            _ => return None,
        })
    }

    /// The name as written in a plan.
    pub fn name(&self) -> String {
        match self {
            Source::Enum => "enum".into(),
            Source::Observed => "observed".into(),
            Source::Dictionaries => "dictionaries".into(),
            Source::Dictionary(n) => format!("dictionary {n}"),
            Source::Example => "example".into(),
            Source::Default => "default".into(),
            Source::Invention => "invention".into(),
        }
    }
}

/// One position in a strategy's order of sources.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SourceStep {
    /// Asked alone.
    One(Source),
    /// Asked together: among those that answer, one is drawn by weight.
    Weighted(Vec<(Source, u32)>),
}

/// What a strategy does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StrategyKind {
    /// Builds from its sources.
    #[default]
    Nominal,
    /// Changes an accepted request; builds from its sources when it cannot.
    Mutation,
    /// Puts an awkward value in the request; its sources fill the rest.
    Fuzzing,
}

/// One strategy of a plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Strategy {
    pub name: StrategyName,
    pub kind: StrategyKind,
    pub share: u32,
    pub sources: Vec<SourceStep>,
}

impl Strategy {
    /// What it builds from when it has nothing to change (a mutation strategy) or for every
    /// value it does not push (a fuzzing one): its sources.
    pub fn fallback_sources(&self) -> &[SourceStep] {
        &self.sources
    }
}

/// A plan: strategies and their shares.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// Where it came from (`built-in` or the file), for messages and the run's record.
    pub source: String,
    pub strategies: Vec<Strategy>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanFile {
    version: serde_yaml::Value,
    strategies: Vec<StrategyFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StrategyFile {
    name: String,
    #[serde(default)]
    kind: Option<String>,
    share: serde_yaml::Value,
    sources: Vec<serde_yaml::Value>,
}

/// The plan probe ships, as a file (docs/plan.md shows it).
pub const DEFAULT_PLAN: &str = "\
version: 1
strategies:
  - name: nominal
    share: 60
    sources: [enum, {weighted: {observed: 2, dictionaries: 1, example: 1}}, default, invention]
  - name: mutation
    kind: mutation
    share: 30
    sources: [enum, {weighted: {observed: 2, dictionaries: 1, example: 1}}, default, invention]
  - name: fuzzing
    kind: fuzzing
    share: 10
    sources: [invention]
";

impl Plan {
    /// The shipped plan: nominal 60, mutation 30 (nominal's sources as its fallback),
    /// fuzzing 10.
    pub fn default_plan() -> Plan {
        match Plan::parse(DEFAULT_PLAN, "built-in") {
            Ok(p) => p,
            // The text is a constant that a test reads; this arm cannot be reached.
            Err(_) => Plan {
                source: "built-in".into(),
                strategies: Vec::new(),
            },
        }
    }

    /// Reads a plan file. A file that cannot be read or used is an error naming it.
    pub fn load(path: &Path) -> Result<Plan, FileError> {
        Plan::load_with_text(path).map(|(plan, _)| plan)
    }

    /// [`Plan::load`], also giving the file's text as read (a run keeps it in the store).
    pub fn load_with_text(path: &Path) -> Result<(Plan, String), FileError> {
        let text = yaml::read(path)?;
        let plan = Plan::parse(&text, &path.display().to_string())?;
        Ok((plan, text))
    }

    /// Reads a plan from text; `file` names it in messages.
    pub fn parse(text: &str, file: &str) -> Result<Plan, FileError> {
        let raw: PlanFile = yaml::strict(text, file)?;
        let err = |m: String| FileError::new(file, m);
        match raw.version.as_u64() {
            Some(v) if v == PLAN_VERSION as u64 => {}
            _ => {
                return Err(err(format!(
                    "version: this build reads plan version {PLAN_VERSION}, found {}",
                    yaml::describe(&raw.version)
                )))
            }
        }
        if raw.strategies.is_empty() {
            return Err(err("strategies: a plan needs at least one strategy".into()));
        }
        let mut strategies = Vec::new();
        let mut names = BTreeMap::new();
        for (i, s) in raw.strategies.iter().enumerate() {
            let at = format!("strategies[{i}]");
            if s.name.trim().is_empty() {
                return Err(err(format!("{at}.name: a strategy needs a name")));
            }
            if let Some(j) = names.insert(s.name.clone(), i) {
                return Err(err(format!(
                    "{at}.name: `{}` is already the name of strategies[{j}]",
                    s.name
                )));
            }
            let kind = match s.kind.as_deref() {
                None | Some("nominal") => StrategyKind::Nominal,
                Some("mutation") => StrategyKind::Mutation,
                Some("fuzzing") => StrategyKind::Fuzzing,
                Some(other) => {
                    return Err(err(format!(
                        "{at}.kind: `{other}` is not a kind; expected nominal, mutation or fuzzing"
                    )))
                }
            };
            let share = match s.share.as_u64() {
                Some(n) if n > 0 && n <= u32::MAX as u64 => n as u32,
                _ => {
                    return Err(err(format!(
                        "{at}.share: expected a whole number above 0, found {}",
                        yaml::describe(&s.share)
                    )))
                }
            };
            if s.sources.is_empty() {
                return Err(err(format!(
                    "{at}.sources: a strategy names at least one source (invention is the last resort)"
                )));
            }
            let mut steps = Vec::new();
            let mut seen: Vec<Source> = Vec::new();
            for (k, entry) in s.sources.iter().enumerate() {
                let here = format!("{at}.sources[{k}]");
                let step = source_step(entry, &here).map_err(err)?;
                let members: Vec<Source> = match &step {
                    SourceStep::One(x) => vec![x.clone()],
                    SourceStep::Weighted(g) => g.iter().map(|(x, _)| x.clone()).collect(),
                };
                for m in members {
                    if seen.contains(&m) {
                        return Err(err(format!("{here}: {} is named twice", m.name())));
                    }
                    seen.push(m);
                }
                steps.push(step);
            }
            strategies.push(Strategy {
                name: s.name.clone(),
                kind,
                share,
                sources: steps,
            });
        }
        Ok(Plan {
            source: file.to_string(),
            strategies,
        })
    }

    /// The sum of the shares.
    pub fn total_share(&self) -> u64 {
        self.strategies.iter().map(|s| s.share as u64).sum()
    }

    /// The strategy of the next request: exactly one draw from `rng`, always, so that what a
    /// strategy does afterwards never moves the choice of the next one. `None` only for a plan
    /// with no strategies, which [`Plan::parse`] never returns (nothing is drawn then).
    pub fn pick_strategy(&self, rng: &mut ChaCha8Rng) -> Option<&Strategy> {
        let total = self.total_share();
        if total == 0 {
            return None;
        }
        let mut at = rng.gen_range(0..total);
        for s in &self.strategies {
            if at < s.share as u64 {
                return Some(s);
            }
            at -= s.share as u64;
        }
        self.strategies.last()
    }

    /// The strategy called `name`.
    pub fn strategy(&self, name: &str) -> Option<&Strategy> {
        self.strategies.iter().find(|s| s.name == name)
    }

    /// Whether any strategy changes accepted requests (the memory of accepted requests is
    /// needed only then).
    pub fn mutates(&self) -> bool {
        self.strategies
            .iter()
            .any(|s| s.kind == StrategyKind::Mutation)
    }
}

fn source_step(entry: &serde_yaml::Value, at: &str) -> Result<SourceStep, String> {
    use serde_yaml::Value as Y;
    match entry {
        Y::String(word) => Source::parse(word).map(SourceStep::One).ok_or_else(|| {
            format!(
                "{at}: `{word}` is not a source; expected enum, observed, dictionaries, example, default or invention"
            )
        }),
        Y::Mapping(m) if m.len() == 1 => {
            let (k, v) = m.iter().next().ok_or_else(|| format!("{at}: empty"))?;
            match (k.as_str(), v) {
                (Some("dictionary"), Y::String(name)) if !name.is_empty() => {
                    Ok(SourceStep::One(Source::Dictionary(name.clone())))
                }
                (Some("weighted"), Y::Mapping(group)) if !group.is_empty() => {
                    let mut out = Vec::new();
                    for (name, w) in group {
                        let word = name.as_str().unwrap_or("");
                        let source = if let Some(d) = word.strip_prefix("dictionary ") {
                            Source::Dictionary(d.to_string())
                        } else {
                            Source::parse(word).ok_or_else(|| {
                                format!("{at}.weighted: `{word}` is not a source")
                            })?
                        };
                        let weight = w
                            .as_u64()
                            .filter(|n| *n > 0 && *n <= u32::MAX as u64)
                            .ok_or_else(|| {
                                format!(
                                    "{at}.weighted.{word}: expected a whole number above 0, found {}",
                                    yaml::describe(w)
                                )
                            })?;
                        out.push((source, weight as u32));
                    }
                    Ok(SourceStep::Weighted(out))
                }
                _ => Err(format!(
                    "{at}: expected a source name, {{dictionary: <name>}} or {{weighted: {{<source>: <weight>, ...}}}}"
                )),
            }
        }
        other => Err(format!(
            "{at}: expected a source name or a weighted group, found {}",
            yaml::describe(other)
        )),
    }
}

#[cfg(test)]
mod tests;
