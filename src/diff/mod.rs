//! Comparisons of stored judgements and runs: what `probe recheck` and `probe diff` print.
//!
//! - [`FindingsDelta`]: two lists of distinct findings compared by
//!   `(oracle, operation, key_by_message)`, the identity of a distinct finding (docs/oracles.md, distinct findings):
//!   gained, lost and kept, with tallies by oracle and by operation.
//! - [`RunDiff`]: two runs side by side: the findings of one finding set of each (the
//!   run-time set or the newest full recheck, [`default_finding_set`], unless one is given),
//!   operations answered 2xx, status-class counts per operation, requests, time and rate,
//!   and the test cases position by position and as sets.
//!
//! A run diff reads the index (status classes, case ids, run summaries) and only the two
//! finding-set objects, never the interactions, so it stays fast on large runs.
//!
//! Depends on: `ids`, `model`, `store`.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use serde::Serialize;

use crate::ids::{CaseId, FindingSetId, RunId};
use crate::model::{Finding, FindingSet, Severity};
use crate::store::{RunTally, Store, StoreError};

/// Why two runs cannot be compared.
#[derive(Debug, thiserror::Error)]
pub enum DiffError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("finding set {set} judges run {of}, not run {run}")]
    SetOfAnotherRun {
        set: FindingSetId,
        of: RunId,
        run: RunId,
    },
}

impl DiffError {
    /// How to fix it, where there is a known way.
    pub fn hint(&self) -> Option<String> {
        match self {
            DiffError::Store(e) => e.hint(),
            DiffError::SetOfAnotherRun { run, .. } => Some(format!(
                "`probe show {}` lists the finding sets of that run",
                run.short(12)
            )),
        }
    }
}

/// Why a finding set is the one a comparison takes for its run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SetChoice {
    /// The set the run's end manifest names, made while it ran.
    RunTime,
    /// The newest recheck that applied every oracle the run-time set applied (and maybe
    /// more): the run judged again as a whole, by this or another build.
    FullRecheck,
    /// Named by the user (`--finding-set-a` / `--finding-set-b`, or a set id as the run).
    Given,
}

impl SetChoice {
    /// How a person reads it.
    pub fn as_str(self) -> &'static str {
        match self {
            SetChoice::RunTime => "run-time",
            SetChoice::FullRecheck => "newest full recheck",
            SetChoice::Given => "given",
        }
    }
}

/// The finding set a comparison of `run` takes when it is not told which: the newest of
/// the run-time set and the rechecks that applied at least every oracle it applied. A
/// partial recheck (`probe recheck --oracle X`) is never taken: it would make every finding
/// of the other oracles look gained. A run with no end manifest has no run-time set; the
/// sets that applied the most oracles stand in for it.
pub fn default_finding_set(
    store: &Store,
    run: RunId,
) -> Result<Option<(FindingSetId, SetChoice)>, DiffError> {
    let run_time = store.run_end(run)?.map(|end| end.findings);
    let written = store.finding_sets_written(run)?;
    let mut sets: Vec<(FindingSetId, BTreeSet<String>)> = Vec::with_capacity(written.len());
    for (id, _) in &written {
        let set: FindingSet = store.get(id.0)?;
        sets.push((*id, set.oracles.into_keys().collect()));
    }
    let reference: BTreeSet<String> = match run_time {
        Some(id) => match sets.iter().find(|(s, _)| *s == id) {
            Some((_, oracles)) => oracles.clone(),
            None => store.get::<FindingSet>(id.0)?.oracles.into_keys().collect(),
        },
        None => sets
            .iter()
            .max_by_key(|(_, o)| o.len())
            .map(|(_, o)| o.clone())
            .unwrap_or_default(),
    };
    let newest_full = sets
        .iter()
        .rev()
        .find(|(_, oracles)| oracles.is_superset(&reference))
        .map(|(id, _)| *id);
    Ok(match (newest_full, run_time) {
        (Some(id), Some(rt)) if id == rt => Some((id, SetChoice::RunTime)),
        (Some(id), _) => Some((id, SetChoice::FullRecheck)),
        (None, Some(rt)) => Some((rt, SetChoice::RunTime)),
        (None, None) => None,
    })
}

/// One distinct finding, as a comparison shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FindingEntry {
    pub oracle: String,
    pub code: Option<String>,
    pub operation: String,
    pub severity: Severity,
    pub message: String,
    pub key_by_message: String,
    /// Interactions that showed it.
    pub occurrences: u64,
    /// Its place in the list it came from, counted from 1: the `n` of its short id when
    /// that list is a whole finding set.
    #[serde(skip)]
    pub n: usize,
    /// The finding set `n` counts in, where a side is the union of several (a campaign's
    /// parts); `None` when it is the side's one set.
    #[serde(skip)]
    pub set: Option<FindingSetId>,
    /// For a finding of a user check whose definition is not the same on both sides: how
    /// it differs. Such a finding tells of the check, not of the API.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub check: Option<CheckChange>,
}

/// How a user check (`check:<name>`) differs between the two finding sets compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckChange {
    /// Both sides applied a check of that name, with different definitions.
    Changed,
    /// Only the second side applied it.
    Added,
    /// Only the first side applied it.
    Removed,
}

impl CheckChange {
    /// How a person reads it, after a finding.
    pub fn as_str(self) -> &'static str {
        match self {
            CheckChange::Changed => "the check changed",
            CheckChange::Added => "the check is new",
            CheckChange::Removed => "the check was dropped",
        }
    }
}

/// The user checks whose definitions differ between set `a` and set `b`, by oracle name:
/// stored in both and different, or stored in one and not applied by the other. A set
/// stored before definitions were (object format 1.5) names none, so nothing is said of it.
pub fn check_changes(a: &FindingSet, b: &FindingSet) -> BTreeMap<String, CheckChange> {
    let mut out = BTreeMap::new();
    for (name, text) in &b.checks {
        match a.checks.get(name) {
            Some(old) if old != text => {
                out.insert(name.clone(), CheckChange::Changed);
            }
            None if !a.oracles.contains_key(name) => {
                out.insert(name.clone(), CheckChange::Added);
            }
            _ => {}
        }
    }
    for name in a.checks.keys() {
        if !b.checks.contains_key(name) && !b.oracles.contains_key(name) {
            out.insert(name.clone(), CheckChange::Removed);
        }
    }
    out
}

impl FindingEntry {
    fn of(f: &Finding, n: usize) -> FindingEntry {
        FindingEntry {
            n,
            set: None,
            oracle: f.oracle.clone(),
            code: f.code.clone(),
            operation: f.operation.clone(),
            severity: f.severity,
            message: f.message.clone(),
            key_by_message: f.key_by_message.clone(),
            occurrences: f.occurrences(),
            check: None,
        }
    }
}

/// A finding on both sides, with its occurrences on each.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KeptEntry {
    /// As the second side describes it.
    pub finding: FindingEntry,
    pub before: u64,
    pub after: u64,
}

/// Distinct findings gained, lost and kept.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    pub gained: u64,
    pub lost: u64,
    pub kept: u64,
}

/// Two lists of distinct findings compared.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FindingsDelta {
    /// In the second list only.
    pub gained: Vec<FindingEntry>,
    /// In the first list only.
    pub lost: Vec<FindingEntry>,
    pub kept: Vec<KeptEntry>,
    pub by_oracle: BTreeMap<String, Tally>,
    pub by_operation: BTreeMap<String, Tally>,
    /// The user checks whose definitions differ between the two sides
    /// ([`FindingsDelta::mark_checks`]); their findings say so.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub checks: BTreeMap<String, CheckChange>,
}

type Key<'a> = (&'a str, &'a str, &'a str);

fn key(f: &Finding) -> Key<'_> {
    (&f.oracle, &f.operation, &f.key_by_message)
}

impl FindingsDelta {
    /// Compares `before` with `after` by `(oracle, operation, key_by_message)`. Entries
    /// come out in that key order.
    pub fn between(before: &[Finding], after: &[Finding]) -> FindingsDelta {
        let a: BTreeMap<Key<'_>, (usize, &Finding)> = before
            .iter()
            .enumerate()
            .map(|(i, f)| (key(f), (i + 1, f)))
            .collect();
        let b: BTreeMap<Key<'_>, (usize, &Finding)> = after
            .iter()
            .enumerate()
            .map(|(i, f)| (key(f), (i + 1, f)))
            .collect();
        let mut delta = FindingsDelta::default();
        for (k, &(n, f)) in &b {
            let oracle = delta.by_oracle.entry(f.oracle.clone()).or_default();
            let operation = delta.by_operation.entry(f.operation.clone()).or_default();
            match a.get(k) {
                Some((_, old)) => {
                    oracle.kept += 1;
                    operation.kept += 1;
                    delta.kept.push(KeptEntry {
                        finding: FindingEntry::of(f, n),
                        before: old.occurrences(),
                        after: f.occurrences(),
                    });
                }
                None => {
                    oracle.gained += 1;
                    operation.gained += 1;
                    delta.gained.push(FindingEntry::of(f, n));
                }
            }
        }
        for (k, &(n, f)) in &a {
            if !b.contains_key(k) {
                delta.by_oracle.entry(f.oracle.clone()).or_default().lost += 1;
                delta
                    .by_operation
                    .entry(f.operation.clone())
                    .or_default()
                    .lost += 1;
                delta.lost.push(FindingEntry::of(f, n));
            }
        }
        delta
    }

    /// Marks the findings of each check in `changes` (from [`check_changes`]): what they
    /// gained or lost is the check's doing, not the API's.
    pub fn mark_checks(&mut self, changes: BTreeMap<String, CheckChange>) {
        let entries = self
            .gained
            .iter_mut()
            .chain(self.lost.iter_mut())
            .chain(self.kept.iter_mut().map(|k| &mut k.finding));
        for entry in entries {
            entry.check = changes.get(&entry.oracle).copied();
        }
        self.checks = changes;
    }

    /// Findings in the second list only that tell of the API: those of a check that
    /// changed are left out.
    pub fn gained_by_the_api(&self) -> impl Iterator<Item = &FindingEntry> {
        self.gained.iter().filter(|f| f.check.is_none())
    }

    /// No distinct finding gained or lost.
    pub fn is_unchanged(&self) -> bool {
        self.gained.is_empty() && self.lost.is_empty()
    }

    /// Kept findings whose number of interactions changed.
    pub fn changed_counts(&self) -> impl Iterator<Item = &KeptEntry> {
        self.kept.iter().filter(|k| k.before != k.after)
    }
}

/// One run as a diff shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunSide {
    pub run: RunId,
    pub name: Option<String>,
    pub seed: u64,
    pub started_ms: u64,
    pub ended_ms: Option<u64>,
    /// `None` for an unfinished run.
    pub outcome: Option<String>,
    pub requests: u64,
    /// From the start manifest to the end manifest.
    pub elapsed_ms: Option<u64>,
    /// Requests per second over `elapsed_ms`.
    pub rate: Option<f64>,
    /// The finding set compared ([`default_finding_set`], unless one was given).
    pub finding_set: Option<FindingSetId>,
    /// Why that set: `run_time`, `full_recheck` or `given`.
    pub finding_set_choice: Option<SetChoice>,
    /// The probe version that made that set, and the oracles it applied.
    pub finding_set_judged_by: Option<String>,
    pub finding_set_oracles: Vec<String>,
    pub findings: u64,
    /// For a side that is a split campaign: its id and the runs of its parts (the first is
    /// `run`); absent for a run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub campaign: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<RunId>,
}

/// Requests of one operation by status class on each side: index 0 transport errors,
/// 1..=5 the classes 1xx..5xx.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OperationClasses {
    pub operation: String,
    pub a: [u64; 6],
    pub b: [u64; 6],
}

/// The first position where the runs' test cases differ.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FirstDifference {
    /// Position in seq order (equal to the seq in a run with no gaps).
    pub position: u64,
    pub seq_a: Option<u64>,
    pub seq_b: Option<u64>,
    pub case_a: Option<CaseId>,
    pub case_b: Option<CaseId>,
}

/// Test cases compared position by position (in seq order) and as sets of ids.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CasesDelta {
    pub a: u64,
    pub b: u64,
    /// Positions holding the same case id on both sides.
    pub identical: u64,
    /// Positions that differ, including those only one run reached.
    pub different: u64,
    pub first_difference: Option<FirstDifference>,
    /// Distinct case ids on both sides / only in A / only in B.
    pub common: u64,
    pub only_a: u64,
    pub only_b: u64,
}

/// Two runs compared.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunDiff {
    pub a: RunSide,
    pub b: RunSide,
    pub findings: FindingsDelta,
    /// Operations answered 2xx in B but not in A, and the other way round.
    pub ok_gained: Vec<String>,
    pub ok_lost: Vec<String>,
    pub operations: Vec<OperationClasses>,
    pub cases: CasesDelta,
}

impl RunDiff {
    /// Compares run `a` with run `b` (B is the newer state: "gained" means in B only),
    /// each by its [`default_finding_set`].
    pub fn compute(store: &Store, a: RunId, b: RunId) -> Result<RunDiff, DiffError> {
        RunDiff::compute_sets(store, (a, None), (b, None))
    }

    /// [`RunDiff::compute`], with the finding set of a side given where it is `Some`.
    pub fn compute_sets(
        store: &Store,
        a: (RunId, Option<FindingSetId>),
        b: (RunId, Option<FindingSetId>),
    ) -> Result<RunDiff, DiffError> {
        RunDiff::compute_unions(store, (None, &[a]), (None, &[b]))
    }

    /// [`RunDiff::compute_sets`] where a side may be the union of several runs: the parts
    /// of a split campaign (its id given), whose finding sets are joined, their requests
    /// and status classes added up and their test cases taken part after part.
    pub fn compute_unions(
        store: &Store,
        (campaign_a, a): (Option<&str>, &[(RunId, Option<FindingSetId>)]),
        (campaign_b, b): (Option<&str>, &[(RunId, Option<FindingSetId>)]),
    ) -> Result<RunDiff, DiffError> {
        let (side_a, set_a, offsets_a) = union_side(store, campaign_a, a)?;
        let (side_b, set_b, offsets_b) = union_side(store, campaign_b, b)?;
        let empty = Vec::new();
        let mut findings = FindingsDelta::between(
            set_a.as_ref().map_or(&empty, |s| &s.findings),
            set_b.as_ref().map_or(&empty, |s| &s.findings),
        );
        // In a union, a finding's place is in its own part's set.
        for (entries, offsets) in [
            (&mut findings.gained, &offsets_b),
            (&mut findings.lost, &offsets_a),
        ] {
            for entry in entries.iter_mut() {
                locate(entry, offsets);
            }
        }
        for kept in findings.kept.iter_mut() {
            locate(&mut kept.finding, &offsets_b);
        }
        if let (Some(set_a), Some(set_b)) = (&set_a, &set_b) {
            findings.mark_checks(check_changes(set_a, set_b));
        }
        let tally_a = union_tally(store, a)?;
        let tally_b = union_tally(store, b)?;
        let mut operations: BTreeMap<String, OperationClasses> = BTreeMap::new();
        for (which, tally) in [(0, &tally_a), (1, &tally_b)] {
            for (op, counts) in &tally.classes {
                let entry = operations
                    .entry(op.clone())
                    .or_insert_with(|| OperationClasses {
                        operation: op.clone(),
                        a: [0; 6],
                        b: [0; 6],
                    });
                if which == 0 {
                    entry.a = *counts;
                } else {
                    entry.b = *counts;
                }
            }
        }
        let ok_a: BTreeSet<&str> = operations
            .values()
            .filter(|o| o.a[2] > 0)
            .map(|o| o.operation.as_str())
            .collect();
        let ok_b: BTreeSet<&str> = operations
            .values()
            .filter(|o| o.b[2] > 0)
            .map(|o| o.operation.as_str())
            .collect();
        let ok_gained = ok_b.difference(&ok_a).map(|s| s.to_string()).collect();
        let ok_lost = ok_a.difference(&ok_b).map(|s| s.to_string()).collect();
        let cases = compare_cases(&tally_a.cases, &tally_b.cases);
        Ok(RunDiff {
            a: side_a,
            b: side_b,
            findings,
            ok_gained,
            ok_lost,
            operations: operations.into_values().collect(),
            cases,
        })
    }

    /// B has a distinct finding A has not, of an oracle or a check that is the same on
    /// both sides (a finding gained because a check changed is the check's news, not the
    /// API's).
    pub fn has_new_findings(&self) -> bool {
        self.findings.gained_by_the_api().next().is_some()
    }

    /// Anything but timing differs: findings, 2xx operations, status counts, test cases.
    pub fn has_any_change(&self) -> bool {
        !self.findings.is_unchanged()
            || !self.ok_gained.is_empty()
            || !self.ok_lost.is_empty()
            || self.operations.iter().any(|o| o.a != o.b)
            || self.cases.different > 0
            || self.cases.a != self.cases.b
    }
}

/// Where each part's findings start in a union's joined list: (first position, the part's
/// set). Empty for a side of one run.
type Offsets = Vec<(usize, FindingSetId)>;

/// Gives a union's entry its place in its own part's set.
fn locate(entry: &mut FindingEntry, offsets: &Offsets) {
    if let Some(&(start, set)) = offsets.iter().rev().find(|(start, _)| *start < entry.n) {
        entry.n -= start;
        entry.set = Some(set);
    }
}

/// The side of one run, or of a campaign's parts joined.
fn union_side(
    store: &Store,
    campaign: Option<&str>,
    runs: &[(RunId, Option<FindingSetId>)],
) -> Result<(RunSide, Option<FindingSet>, Offsets), DiffError> {
    let mut sides = Vec::with_capacity(runs.len());
    for &(run, given) in runs {
        sides.push(side(store, run, given)?);
    }
    if campaign.is_none() && sides.len() == 1 {
        let (side, set) = sides.remove(0);
        return Ok((side, set, Vec::new()));
    }
    let mut parts = sides.into_iter();
    let Some((mut joined, first_set)) = parts.next() else {
        return Err(DiffError::Store(crate::store::StoreError::NotFound {
            id: format!(
                "campaign {} (no part in the store)",
                campaign.unwrap_or("?")
            ),
        }));
    };
    let mut offsets: Offsets = Vec::new();
    let mut set = first_set;
    if let (Some(id), Some(_)) = (joined.finding_set, &set) {
        offsets.push((0, id));
    }
    joined.parts.push(joined.run);
    for (side, part_set) in parts {
        joined.parts.push(side.run);
        joined.requests += side.requests;
        joined.findings += side.findings;
        joined.started_ms = joined.started_ms.min(side.started_ms);
        joined.ended_ms = match (joined.ended_ms, side.ended_ms) {
            (Some(a), Some(b)) => Some(a.max(b)),
            _ => None,
        };
        // An unfinished part leaves the campaign unfinished; otherwise the part that did
        // not complete says how the campaign ended.
        joined.outcome = match (joined.outcome.take(), side.outcome) {
            (Some(a), Some(b)) if a == "completed" => Some(b),
            (Some(a), Some(_)) => Some(a),
            _ => None,
        };
        for oracle in side.finding_set_oracles {
            if !joined.finding_set_oracles.contains(&oracle) {
                joined.finding_set_oracles.push(oracle);
            }
        }
        let (Some(id), Some(part_set)) = (side.finding_set, part_set) else {
            continue;
        };
        match &mut set {
            Some(joined_set) => {
                offsets.push((joined_set.findings.len(), id));
                joined_set.findings.extend(part_set.findings);
                joined_set.oracles.extend(part_set.oracles);
                joined_set.checks.extend(part_set.checks);
            }
            None => {
                offsets.push((0, id));
                joined.finding_set = Some(id);
                set = Some(part_set);
            }
        }
    }
    joined.finding_set_oracles.sort();
    joined.elapsed_ms = joined
        .ended_ms
        .map(|end| end.saturating_sub(joined.started_ms));
    joined.rate = joined
        .elapsed_ms
        .filter(|ms| *ms > 0)
        .map(|ms| joined.requests as f64 / (ms as f64 / 1000.0));
    joined.campaign = campaign.map(str::to_owned);
    Ok((joined, set, offsets))
}

/// The tallies of several runs added up, their test cases one part after the other.
fn union_tally(
    store: &Store,
    runs: &[(RunId, Option<FindingSetId>)],
) -> Result<RunTally, DiffError> {
    let mut joined = RunTally::default();
    for &(run, _) in runs {
        let tally = store.tally(run)?;
        joined.cases.extend(tally.cases);
        for (op, counts) in tally.classes {
            let entry = joined.classes.entry(op).or_insert([0; 6]);
            for (sum, n) in entry.iter_mut().zip(counts) {
                *sum += n;
            }
        }
    }
    Ok(joined)
}

fn side(
    store: &Store,
    run: RunId,
    given: Option<FindingSetId>,
) -> Result<(RunSide, Option<FindingSet>), DiffError> {
    let summary = store.run_summary(run)?;
    let start: crate::model::RunStart = store.get(run.0)?;
    let chosen = match given {
        Some(id) => Some((id, SetChoice::Given)),
        None => default_finding_set(store, run)?,
    };
    let set_id = chosen.map(|(id, _)| id);
    let set = set_id.map(|id| store.get::<FindingSet>(id.0)).transpose()?;
    if let (Some(id), Some(set)) = (set_id, &set) {
        if set.run != run {
            return Err(DiffError::SetOfAnotherRun {
                set: id,
                of: set.run,
                run,
            });
        }
    }
    let elapsed_ms = summary
        .ended_ms
        .map(|end| end.saturating_sub(summary.started_ms));
    let rate = elapsed_ms
        .filter(|ms| *ms > 0)
        .map(|ms| summary.interactions as f64 / (ms as f64 / 1000.0));
    Ok((
        RunSide {
            run,
            name: summary.name,
            seed: start.seed,
            started_ms: summary.started_ms,
            ended_ms: summary.ended_ms,
            outcome: summary.outcome,
            requests: summary.interactions,
            elapsed_ms,
            rate,
            finding_set: set_id,
            finding_set_choice: chosen.map(|(_, why)| why),
            finding_set_judged_by: set.as_ref().map(|s| s.judged_by.clone()),
            finding_set_oracles: set
                .as_ref()
                .map(|s| s.oracles.keys().cloned().collect())
                .unwrap_or_default(),
            findings: set.as_ref().map_or(0, |s| s.findings.len() as u64),
            campaign: None,
            parts: Vec::new(),
        },
        set,
    ))
}

/// Compares two case sequences (each in seq order).
pub fn compare_cases(a: &[(u64, CaseId)], b: &[(u64, CaseId)]) -> CasesDelta {
    let mut delta = CasesDelta {
        a: a.len() as u64,
        b: b.len() as u64,
        ..CasesDelta::default()
    };
    for i in 0..a.len().max(b.len()) {
        let (x, y) = (a.get(i), b.get(i));
        if matches!((x, y), (Some(x), Some(y)) if x.1 == y.1) {
            delta.identical += 1;
            continue;
        }
        delta.different += 1;
        if delta.first_difference.is_none() {
            delta.first_difference = Some(FirstDifference {
                position: i as u64,
                seq_a: x.map(|x| x.0),
                seq_b: y.map(|y| y.0),
                case_a: x.map(|x| x.1),
                case_b: y.map(|y| y.1),
            });
        }
    }
    let set_a: HashSet<CaseId> = a.iter().map(|x| x.1).collect();
    let set_b: HashSet<CaseId> = b.iter().map(|x| x.1).collect();
    delta.common = set_a.intersection(&set_b).count() as u64;
    delta.only_a = (set_a.len() as u64).saturating_sub(delta.common);
    delta.only_b = (set_b.len() as u64).saturating_sub(delta.common);
    delta
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{Digest, InteractionId};

    fn finding(oracle: &str, op: &str, key: &str, n: usize) -> Finding {
        Finding {
            oracle: oracle.into(),
            code: None,
            oracle_version: 1,
            operation: op.into(),
            severity: Severity::High,
            message: format!("{op} {key}"),
            key_by_message: key.into(),
            key_by_kind: key.into(),
            interactions: (0..n)
                .map(|i| InteractionId(Digest::of(&[i as u8])))
                .collect(),
            occurrences: n as u64,
            intent: Default::default(),
            mutation: None,
            series: None,
            reproducer: None,
        }
    }

    fn set(checks: &[(&str, &str)], findings: Vec<Finding>) -> FindingSet {
        FindingSet {
            run: crate::ids::RunId(Digest::of(b"run")),
            judged_by: "test".into(),
            oracles: checks
                .iter()
                .map(|(n, _)| (n.to_string(), 1))
                .chain([("server_error".to_string(), 1)])
                .collect(),
            findings,
            checks: checks
                .iter()
                .map(|(n, t)| (n.to_string(), t.to_string()))
                .collect(),
        }
    }

    /// A check judged with another text, or on one side only, marks its findings; one with
    /// the same text, and every built-in oracle, does not; a new check's findings are not
    /// the API's news.
    #[test]
    fn the_findings_of_a_changed_check_say_so() {
        let a = set(
            &[
                ("check:same", "x"),
                ("check:edited", "old"),
                ("check:gone", "g"),
            ],
            vec![finding("check:gone", "listPets", "g1", 1)],
        );
        let b = set(
            &[
                ("check:same", "x"),
                ("check:edited", "new"),
                ("check:new", "n"),
            ],
            vec![
                finding("check:edited", "listPets", "e1", 1),
                finding("check:new", "listPets", "n1", 1),
                finding("check:same", "listPets", "s1", 1),
                finding("server_error", "listPets", "k1", 1),
            ],
        );
        let changes = check_changes(&a, &b);
        assert_eq!(
            changes.into_iter().collect::<Vec<_>>(),
            vec![
                ("check:edited".to_string(), CheckChange::Changed),
                ("check:gone".to_string(), CheckChange::Removed),
                ("check:new".to_string(), CheckChange::Added),
            ]
        );
        let mut delta = FindingsDelta::between(&a.findings, &b.findings);
        delta.mark_checks(check_changes(&a, &b));
        let marks: Vec<(&str, Option<CheckChange>)> = delta
            .gained
            .iter()
            .chain(&delta.lost)
            .map(|f| (f.oracle.as_str(), f.check))
            .collect();
        assert_eq!(
            marks,
            vec![
                ("check:edited", Some(CheckChange::Changed)),
                ("check:new", Some(CheckChange::Added)),
                ("check:same", None),
                ("server_error", None),
                ("check:gone", Some(CheckChange::Removed)),
            ]
        );
        let news: Vec<&str> = delta
            .gained_by_the_api()
            .map(|f| f.oracle.as_str())
            .collect();
        assert_eq!(news, ["check:same", "server_error"]);
    }

    #[test]
    fn findings_are_compared_by_oracle_operation_and_message_key() {
        let before = vec![
            finding("server_error", "listPets", "k1", 3),
            finding("server_error", "getPet", "k2", 1),
        ];
        let after = vec![
            finding("server_error", "listPets", "k1", 5),
            finding("content_type_declared", "getStats", "k3", 2),
        ];
        let d = FindingsDelta::between(&before, &after);
        assert_eq!(d.gained.len(), 1);
        assert_eq!(d.gained[0].operation, "getStats");
        assert_eq!(d.lost.len(), 1);
        assert_eq!(d.lost[0].operation, "getPet");
        assert_eq!(d.kept.len(), 1);
        assert_eq!((d.kept[0].before, d.kept[0].after), (3, 5));
        assert_eq!(d.changed_counts().count(), 1);
        assert_eq!(
            d.by_oracle["server_error"],
            Tally {
                gained: 0,
                lost: 1,
                kept: 1
            }
        );
        assert_eq!(d.by_operation["getStats"].gained, 1);
        assert!(!d.is_unchanged());
        assert!(FindingsDelta::between(&before, &before).is_unchanged());
    }

    #[test]
    fn cases_are_compared_by_position_and_as_sets() {
        let c = |b: u8| CaseId(Digest::of(&[b]));
        let a = vec![(0, c(1)), (1, c(2)), (2, c(3))];
        let b = vec![(0, c(1)), (1, c(3)), (2, c(2)), (3, c(4))];
        let d = compare_cases(&a, &b);
        assert_eq!((d.identical, d.different), (1, 3));
        let first = d.first_difference.expect("they differ");
        assert_eq!(first.position, 1);
        assert_eq!((first.case_a, first.case_b), (Some(c(2)), Some(c(3))));
        assert_eq!((d.common, d.only_a, d.only_b), (3, 0, 1));
        let same = compare_cases(&a, &a);
        assert_eq!((same.different, same.first_difference), (0, None));
    }
}
