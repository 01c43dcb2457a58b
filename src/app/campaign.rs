//! Campaigns in the store: the runs that are the parts of one split campaign
//! (`probe run --partition k/n`), found by the tags every part carries
//! (`probe.campaign`, `probe.partition`), and the `campaign:` names that `diff`, `recheck`,
//! `report` and `replay` take for one side ([partitions.md](../../docs/partitions.md)).
//!
//! A run that was not split is a campaign of one part, named by its run id: so
//! `campaign:tag:branch=main` names main's newest campaign whether or not main splits its
//! runs.
//!
//! Depends on: `store`, `partition` (the tags), `error`.

use std::collections::BTreeMap;
use std::io::Write;

use crate::error::CliError;
use crate::ids::RunId;
use crate::partition::{Partition, CAMPAIGN_TAG, PART_TAG};
use crate::store::{RunSummary, Store};

/// The prefix of a name that means a campaign.
pub const PREFIX: &str = "campaign:";

/// One campaign as the store holds it.
#[derive(Clone, Debug)]
pub struct CampaignRuns {
    /// The campaign id (a split campaign's), or the run id of a run that was not split.
    pub id: String,
    /// The number of parts the campaign was split into (1 for a run not split).
    pub count: u32,
    /// The runs of its parts, by part (from 1), the newest run of each part where a part
    /// was run more than once (a CI job retried).
    pub parts: BTreeMap<u32, RunSummary>,
    /// Runs of a part that a newer run of the same part stands in for.
    pub superseded: Vec<RunId>,
}

impl CampaignRuns {
    /// The part runs, by part.
    pub fn runs(&self) -> Vec<RunId> {
        self.parts.values().map(|r| r.id).collect()
    }

    /// The parts no run of which is in the store.
    pub fn missing(&self) -> Vec<u32> {
        (1..=self.count)
            .filter(|k| !self.parts.contains_key(k))
            .collect()
    }

    /// When its newest part started.
    pub fn started_ms(&self) -> u64 {
        self.parts.values().map(|r| r.started_ms).max().unwrap_or(0)
    }

    /// Says on `err` which parts are missing, if any (a note: a campaign whose parts have
    /// not all been merged into this store is still read, as what it has).
    pub fn note_missing(&self, err: &mut dyn Write) {
        let missing = self.missing();
        if !missing.is_empty() {
            let list: Vec<String> = missing
                .iter()
                .map(|k| format!("{k}/{}", self.count))
                .collect();
            let _ = writeln!(
                err,
                "note: campaign {} has {} of its {} parts; missing {} (merge their stores: probe store merge)",
                short(&self.id),
                self.parts.len(),
                self.count,
                list.join(", ")
            );
        }
    }
}

/// A campaign id shortened for a table.
pub fn short(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}

/// The campaign and part a run's tags name; `None` for a run not split.
pub fn part_of(run: &RunSummary) -> Option<(String, Partition)> {
    let id = run.tags.get(CAMPAIGN_TAG)?;
    let part = Partition::parse(run.tags.get(PART_TAG)?).ok()?;
    Some((id.clone(), part))
}

/// Every campaign of the store, newest first (by the newest start among its parts); a
/// run not split and not a replay is a campaign of its own.
pub fn all(store: &Store) -> Result<Vec<CampaignRuns>, CliError> {
    Ok(group(store.runs()?))
}

fn group(runs: Vec<RunSummary>) -> Vec<CampaignRuns> {
    let mut out: Vec<CampaignRuns> = Vec::new();
    // Runs come newest first: the first run met for a part is the one that counts.
    for run in runs {
        if run.kind != "run" {
            continue;
        }
        let (id, part) = match part_of(&run) {
            Some(p) => p,
            None => (run.id.0.to_hex(), Partition { index: 1, count: 1 }),
        };
        let at = match out.iter().position(|c| c.id == id && c.count == part.count) {
            Some(at) => at,
            None => {
                out.push(CampaignRuns {
                    id,
                    count: part.count,
                    parts: BTreeMap::new(),
                    superseded: Vec::new(),
                });
                out.len() - 1
            }
        };
        let campaign = &mut out[at];
        match campaign.parts.entry(part.index) {
            std::collections::btree_map::Entry::Occupied(_) => campaign.superseded.push(run.id),
            std::collections::btree_map::Entry::Vacant(v) => {
                v.insert(run);
            }
        }
    }
    out.sort_by_key(|c| std::cmp::Reverse(c.started_ms()));
    out
}

/// Whether `text` names a campaign (`campaign:…`).
pub fn names_campaign(text: &str) -> bool {
    text.trim().starts_with(PREFIX)
}

/// The campaign `text` names: `campaign:latest` or `campaign:@latest` (the newest),
/// `campaign:tag:k=v` (the newest with a part tagged `k=v`), `campaign:NAME` (the newest
/// whose part is a run of that name) or `campaign:ID` (a campaign id, or a part's run id,
/// or a prefix of either); `@latest` after a tag or a name changes nothing.
pub fn resolve(store: &Store, text: &str) -> Result<CampaignRuns, CliError> {
    let Some(what) = text.trim().strip_prefix(PREFIX) else {
        return Err(CliError::usage(format!(
            "`{text}` does not name a campaign"
        )));
    };
    // `@latest` after a name or a tag says what they mean already: the newest.
    let what = what.trim();
    let what = match what.strip_suffix(crate::store::LATEST) {
        Some("") => "latest",
        Some(base) => base,
        None => what,
    };
    let campaigns = all(store)?;
    let not_found = |detail: String| {
        CliError::lookup(crate::store::StoreError::NotFound {
            id: format!("campaign {detail}"),
        })
    };
    if what == "latest" {
        return campaigns
            .into_iter()
            .next()
            .ok_or_else(|| not_found("(the store has no runs)".into()));
    }
    if let Some(tag) = what.strip_prefix("tag:") {
        let (k, v) = tag.split_once('=').ok_or_else(|| {
            CliError::usage(format!("`{text}`: write a tag as campaign:tag:key=value"))
        })?;
        let (k, v) = (k.trim(), v.trim());
        return campaigns
            .into_iter()
            .find(|c| {
                c.parts
                    .values()
                    .any(|r| r.tags.get(k).is_some_and(|t| t == v))
            })
            .ok_or_else(|| not_found(format!("with a run tagged {k}={v}")));
    }
    if let Some(c) = campaigns
        .iter()
        .find(|c| c.parts.values().any(|r| r.name.as_deref() == Some(what)))
    {
        return Ok(c.clone());
    }
    let lower = what.to_ascii_lowercase();
    if lower.len() < 4 || !lower.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(not_found(format!(
            "`{what}` (write campaign:latest, campaign:tag:k=v, a run name or at least 4 hex digits of an id)"
        )));
    }
    let matching: Vec<&CampaignRuns> = campaigns
        .iter()
        .filter(|c| {
            c.id.starts_with(&lower)
                || c.parts
                    .values()
                    .any(|r| r.id.0.to_hex().starts_with(&lower))
        })
        .collect();
    match matching.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(not_found(format!("`{what}`"))),
        many => Err(CliError::usage(format!(
            "`{what}` names {} campaigns ({}); give more of the id",
            many.len(),
            many.iter()
                .map(|c| short(&c.id).to_owned())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}
