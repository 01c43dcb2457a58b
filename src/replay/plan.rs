//! Which recorded interactions a replay sends again: the targets a name stands for, and
//! the interactions their bound values came from, read from the store.
//!
//! Depends on: `store`, `model` (`Binding` among them), `spec`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::ids::{FindingSetId, InteractionId, RunId, SeriesId};
use crate::model::Binding;
use crate::model::{Finding, FindingSet, Interaction, RunStart, Series, TestCase};
use crate::spec::{self, Api};
use crate::store::{ObjectKind, Store};

use super::{ReplayError, TargetKind};

/// A finding being replayed.
#[derive(Clone, Debug)]
pub struct FindingRef {
    /// `<finding set id>:<n>`, counted from 1.
    pub label: String,
    pub finding: Finding,
    /// Seq of its first interaction in the recorded run.
    pub seq: u64,
}
/// One recorded interaction with its test case.
#[derive(Clone, Debug)]
pub(super) struct Original {
    pub(super) id: InteractionId,
    pub(super) interaction: Interaction,
    pub(super) case: TestCase,
    /// Bindings parsed: parameter name → where its value came from.
    pub(super) bindings: Vec<(String, Binding)>,
}
/// What to send again, read from the store by [`plan`].
#[derive(Debug)]
pub struct Plan {
    pub kind: TargetKind,
    /// Full id of what is replayed (`<set>:<n>` for a finding), kept in the replay's manifest.
    pub replay_of: String,
    pub run: RunId,
    pub start: RunStart,
    /// Seqs of the recorded interactions compared, ascending.
    pub targets: Vec<u64>,
    /// Every seq sent per attempt (targets and their sources), ascending.
    pub chain: Vec<u64>,
    pub findings: Vec<FindingRef>,
    /// The series replayed (a series, or a finding of a series oracle): its steps are
    /// judged together again once they are sent.
    pub series: Option<Series>,
    pub(super) originals: BTreeMap<u64, Original>,
}

impl Plan {
    /// The recorded interaction sent as `seq`.
    pub fn recorded(&self, seq: u64) -> Option<(InteractionId, &Interaction, &TestCase)> {
        self.originals
            .get(&seq)
            .map(|o| (o.id, &o.interaction, &o.case))
    }
}
/// Reads what `text` names and what must be sent again.
pub fn plan(store: &Store, text: &str) -> Result<Plan, ReplayError> {
    let text = text.trim();
    // `<finding set>:<n>`; a run name may hold a `:` too, so only a hex prefix counts.
    let finding_name = text
        .split_once(':')
        .filter(|(set, _)| !set.is_empty() && set.bytes().all(|b| b.is_ascii_hexdigit()));
    let (kind, id, findings) = if let Some((set_text, n_text)) = finding_name {
        let (kind, id) = store.resolve(set_text).map_err(ReplayError::Lookup)?;
        if kind != ObjectKind::FindingSet {
            return Err(ReplayError::NotReplayable {
                text: text.to_owned(),
                kind: kind.name().to_owned(),
            });
        }
        let n: usize = n_text.parse().map_err(|_| ReplayError::BadFindingName {
            text: text.to_owned(),
        })?;
        let set = store.get::<FindingSet>(id)?;
        let finding = n.checked_sub(1).and_then(|i| set.findings.get(i)).ok_or(
            ReplayError::NoSuchFinding {
                text: text.to_owned(),
                set: FindingSetId(id),
                len: set.findings.len(),
            },
        )?;
        let label = format!("{}:{n}", id.to_hex());
        (TargetKind::Finding, set.run, vec![(label, finding.clone())])
    } else {
        let (kind, id) = store.resolve(text).map_err(ReplayError::Lookup)?;
        match kind {
            ObjectKind::Interaction => {
                let i = store.get::<Interaction>(id)?;
                let set = judging_set(store, i.run)?;
                let found: Vec<(String, Finding)> = match &set {
                    Some((set_id, set)) => set
                        .findings
                        .iter()
                        .enumerate()
                        .filter(|(_, f)| {
                            f.interactions.contains(&InteractionId(id))
                                || f.reproducer == Some(InteractionId(id))
                        })
                        .map(|(n, f)| (format!("{}:{}", set_id.0.to_hex(), n + 1), f.clone()))
                        .collect(),
                    None => Vec::new(),
                };
                let kind = if found.is_empty() {
                    TargetKind::Interaction
                } else {
                    TargetKind::Finding
                };
                let mut p = plan_for(
                    store,
                    kind,
                    id.to_hex(),
                    i.run,
                    Some(vec![i.seq]),
                    found,
                    None,
                )?;
                // The named interaction showed each of these findings: judge them on it,
                // whether or not it was the finding's first.
                for f in &mut p.findings {
                    f.seq = i.seq;
                }
                return Ok(p);
            }
            ObjectKind::FindingSet => {
                let set = store.get::<FindingSet>(id)?;
                let found = labelled(FindingSetId(id), &set);
                (TargetKind::FindingSet, set.run, found)
            }
            ObjectKind::Series => {
                let series = store.get::<Series>(id)?;
                let found: Vec<(String, Finding)> = match judging_set(store, series.run)? {
                    Some((set_id, set)) => labelled(set_id, &set)
                        .into_iter()
                        .filter(|(_, f)| f.series == Some(SeriesId(id)))
                        .collect(),
                    None => Vec::new(),
                };
                let steps = series.steps.iter().map(|s| s.seq).collect();
                return plan_for(
                    store,
                    TargetKind::Series,
                    id.to_hex(),
                    series.run,
                    Some(steps),
                    found,
                    Some(series),
                );
            }
            ObjectKind::RunStart => {
                let run = RunId(id);
                let found = match judging_set(store, run)? {
                    Some((set_id, set)) => labelled(set_id, &set),
                    None => Vec::new(),
                };
                return plan_for(store, TargetKind::Run, id.to_hex(), run, None, found, None);
            }
            other => {
                return Err(ReplayError::NotReplayable {
                    text: text.to_owned(),
                    kind: other.name().to_owned(),
                })
            }
        }
    };
    let replay_of = match kind {
        TargetKind::Finding => findings.first().map(|(l, _)| l.clone()).unwrap_or_default(),
        _ => store.resolve(text)?.1.to_hex(),
    };
    // A finding of a series oracle is shown by its whole series: every step is sent again.
    let series = match (kind, findings.as_slice()) {
        (
            TargetKind::Finding,
            [(
                _,
                Finding {
                    series: Some(s), ..
                },
            )],
        ) => Some(store.get::<Series>(s.0)?),
        _ => None,
    };
    let only = series
        .as_ref()
        .map(|s| s.steps.iter().map(|s| s.seq).collect());
    plan_for(store, kind, replay_of, id, only, findings, series)
}

fn labelled(set_id: FindingSetId, set: &FindingSet) -> Vec<(String, Finding)> {
    set.findings
        .iter()
        .enumerate()
        .map(|(n, f)| (format!("{}:{}", set_id.0.to_hex(), n + 1), f.clone()))
        .collect()
}

/// The finding set that judged a run at run time (else the first one written).
fn judging_set(
    store: &Store,
    run: RunId,
) -> Result<Option<(FindingSetId, FindingSet)>, ReplayError> {
    let id = match store.run_end(run)? {
        Some(end) => Some(end.findings),
        None => store.finding_sets_of(run)?.first().copied(),
    };
    Ok(match id {
        Some(id) => Some((id, store.get::<FindingSet>(id.0)?)),
        None => None,
    })
}

/// Loads the recorded interactions a plan needs. `only` narrows the targets to these seqs;
/// otherwise the targets are the findings' reproducers (docs/shrinking.md: the smallest
/// request that showed each, else its first interaction), or every interaction of
/// the run when no finding narrows it (a run).
fn plan_for(
    store: &Store,
    kind: TargetKind,
    replay_of: String,
    run: RunId,
    only: Option<Vec<u64>>,
    findings: Vec<(String, Finding)>,
    series: Option<Series>,
) -> Result<Plan, ReplayError> {
    let start = store.get::<RunStart>(run.0)?;
    let rows: BTreeMap<u64, InteractionId> = store
        .interactions_of(run)?
        .into_iter()
        .rev()
        .map(|r| (r.seq, r.id))
        .collect();
    let mut originals: BTreeMap<u64, Original> = BTreeMap::new();
    let mut finding_refs = Vec::new();
    for (label, finding) in findings {
        let first = *finding
            .reproducer
            .as_ref()
            .or(finding.interactions.first())
            .ok_or_else(|| ReplayError::Inconsistent {
                id: run.0,
                reason: format!("finding {label} names no interaction"),
            })?;
        let o = load_original(store, first)?;
        if o.interaction.run != run {
            return Err(ReplayError::Inconsistent {
                id: first.0,
                reason: format!(
                    "finding {label} judges run {run}, but its interaction belongs to run {}",
                    o.interaction.run
                ),
            });
        }
        finding_refs.push(FindingRef {
            label,
            finding,
            seq: o.interaction.seq,
        });
        originals.insert(o.interaction.seq, o);
    }
    let targets: Vec<u64> = match (only, kind) {
        (Some(seqs), _) => seqs,
        (None, TargetKind::Run) => rows.keys().copied().collect(),
        (None, _) => finding_refs
            .iter()
            .map(|f| f.seq)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect(),
    };
    // Close over the sources: each source has a smaller seq than the step it feeds, so a
    // walk from the highest seq down visits each once, and the walk is bounded by the run.
    let mut needed: BTreeSet<u64> = targets.iter().copied().collect();
    let mut pending: Vec<u64> = targets.clone();
    while let Some(seq) = pending.pop() {
        if let std::collections::btree_map::Entry::Vacant(slot) = originals.entry(seq) {
            let id = *rows.get(&seq).ok_or_else(|| ReplayError::Inconsistent {
                id: run.0,
                reason: format!("the run holds no interaction with seq {seq}"),
            })?;
            slot.insert(load_original(store, id)?);
        }
        let Some(o) = originals.get(&seq) else {
            continue;
        };
        for (_, b) in &o.bindings {
            if b.seq >= seq || !rows.contains_key(&b.seq) {
                return Err(ReplayError::MissingSource {
                    interaction: o.id,
                    seq,
                    source_seq: b.seq,
                    run,
                });
            }
            if needed.insert(b.seq) {
                pending.push(b.seq);
            }
        }
    }
    Ok(Plan {
        kind,
        replay_of,
        run,
        start,
        targets,
        chain: needed.into_iter().collect(),
        findings: finding_refs,
        series,
        originals,
    })
}

fn load_original(store: &Store, id: InteractionId) -> Result<Original, ReplayError> {
    let interaction = store.get::<Interaction>(id.0)?;
    let case = store.get::<TestCase>(interaction.case.0)?;
    let mut bindings = Vec::new();
    if let Some(step) = &case.series_step {
        for (parameter, text) in &step.bindings {
            let b = Binding::parse(text).ok_or_else(|| ReplayError::BadBinding {
                case: interaction.case,
                parameter: parameter.clone(),
                binding: text.clone(),
            })?;
            bindings.push((parameter.clone(), b));
        }
    }
    Ok(Original {
        id,
        interaction,
        case,
        bindings,
    })
}

/// The run's document, loaded again from its blob. Relative `$ref`s resolve among the
/// other files stored with the run; for a run stored before those were, against the
/// directory it was loaded from, when that is still there.
pub fn load_api(store: &Store, run: RunId, start: &RunStart) -> Result<Api, ReplayError> {
    let bytes = store.get_blob(start.document)?;
    let source = &start.document_source;
    let documents = store.run_documents(start)?;
    let dir = Path::new(source)
        .parent()
        .filter(|d| !source.contains("://") && d.is_dir())
        .map(Path::to_path_buf);
    spec::parse_stored(&bytes, source, documents, dir.as_deref())
        .map_err(|source| ReplayError::Spec { run, source })
}
