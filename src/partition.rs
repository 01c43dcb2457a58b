//! Campaigns split across machines: which operations the k-th of n parts tests, what the
//! parts share (the campaign id, the seed), and the part read from a CI's environment
//! ([partitions.md](../docs/partitions.md)).
//!
//! The unit a part gets is a *family*: the operations whose paths share everything before
//! their first path parameter (`/pets`, `/pets/{petId}` and `/pets/{petId}/photos` are the
//! family `/pets`). A family holds a resource's producers (`POST /pets`) and its consumers
//! (`GET /pets/{petId}`), so the memory of answers, the life-cycle series and the access
//! series of a resource stay in one part and see what they would see in one run. Families
//! go to parts by a balanced split that depends only on the document (largest first, then
//! document order, each to the part with the fewest operations so far): every machine
//! computes the same split, and the same operation stays in the same part whatever the
//! seed, so the parts of two campaigns compare part by part.
//!
//! Pure: no clock, no store, no environment (the caller hands the variables in).
//!
//! Depends on: `spec` (the operation model).

use std::fmt;

use crate::spec::Api;

/// The environment variable that names the number of parts beside Kubernetes'
/// `JOB_COMPLETION_INDEX` (an Indexed Job gives the index, not the count).
pub const PARTITIONS_VAR: &str = "PROBE_PARTITIONS";

/// The CI variables whose value is the same in every job of one pipeline and differs
/// between pipelines, first found wins: GitHub Actions, GitLab CI, Buildkite, CircleCI,
/// Jenkins. A part reads it into the campaign id, so the parts of one pipeline meet and
/// two pipelines with the same seed do not.
pub const CI_RUN_VARS: [&str; 5] = [
    "GITHUB_RUN_ID",
    "CI_PIPELINE_ID",
    "BUILDKITE_BUILD_ID",
    "CIRCLE_WORKFLOW_ID",
    "BUILD_TAG",
];

/// The tag that names a run's campaign.
pub const CAMPAIGN_TAG: &str = "probe.campaign";
/// The tag that names a run's part, `k/n`.
pub const PART_TAG: &str = "probe.partition";

/// The k-th of n parts (k from 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Partition {
    pub index: u32,
    pub count: u32,
}

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// A partition that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PartitionError {
    #[error("`{text}` is not a partition; write k/n with 1 ≤ k ≤ n, e.g. 2/4")]
    Malformed { text: String },
    #[error("{var}={value} is not a number")]
    NotANumber { var: String, value: String },
    #[error(
        "{index_var} is set but {count_var} is not: the part's index needs the number of parts"
    )]
    CountMissing {
        index_var: &'static str,
        count_var: &'static str,
    },
    #[error(
        "part {index} of {count} does not exist ({source_name}); parts are numbered 1 to {count}"
    )]
    OutOfRange {
        index: u64,
        count: u64,
        source_name: String,
    },
}

impl Partition {
    /// `k/n`, 1 ≤ k ≤ n.
    pub fn parse(text: &str) -> Result<Partition, PartitionError> {
        let malformed = || PartitionError::Malformed {
            text: text.to_owned(),
        };
        let (k, n) = text.trim().split_once('/').ok_or_else(malformed)?;
        let k: u32 = k.trim().parse().map_err(|_| malformed())?;
        let n: u32 = n.trim().parse().map_err(|_| malformed())?;
        if k == 0 || n == 0 || k > n {
            return Err(malformed());
        }
        Ok(Partition { index: k, count: n })
    }

    /// The part a CI job is, from its environment: Kubernetes Indexed Jobs
    /// (`JOB_COMPLETION_INDEX`, from 0, with [`PARTITIONS_VAR`] for the count), then GitLab's
    /// `parallel:` (`CI_NODE_INDEX` from 1, `CI_NODE_TOTAL`). `None` when neither is set.
    pub fn from_env(
        var: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<Partition>, PartitionError> {
        let number = |name: &str| -> Result<Option<u64>, PartitionError> {
            match var(name).filter(|v| !v.trim().is_empty()) {
                None => Ok(None),
                Some(v) => {
                    v.trim()
                        .parse::<u64>()
                        .map(Some)
                        .map_err(|_| PartitionError::NotANumber {
                            var: name.to_owned(),
                            value: v,
                        })
                }
            }
        };
        let sources: [(&'static str, &'static str, u64); 2] = [
            ("JOB_COMPLETION_INDEX", PARTITIONS_VAR, 1),
            ("CI_NODE_INDEX", "CI_NODE_TOTAL", 0),
        ];
        for (index_var, count_var, offset) in sources {
            let Some(index) = number(index_var)? else {
                continue;
            };
            let count = number(count_var)?.ok_or(PartitionError::CountMissing {
                index_var,
                count_var,
            })?;
            let k = index.saturating_add(offset);
            let out_of_range = || PartitionError::OutOfRange {
                index: k,
                count,
                source_name: format!("{index_var}={index}, {count_var}={count}"),
            };
            if k == 0 || k > count {
                return Err(out_of_range());
            }
            let (Ok(index), Ok(count)) = (u32::try_from(k), u32::try_from(count)) else {
                return Err(out_of_range());
            };
            return Ok(Some(Partition { index, count }));
        }
        Ok(None)
    }
}

/// The family of an operation's path: everything before its first path parameter, without
/// a trailing slash (`/pets/{petId}/photos` → `/pets`; `/{tenant}/pets` → ``).
pub fn family_of(path: &str) -> &str {
    let end = path.find("/{").unwrap_or(path.len());
    path[..end].trim_end_matches('/')
}

/// The operations of `selected` (indices into `api.operations`, in document order) that
/// part `part` tests, in document order. The parts of one partition are disjoint and
/// together are `selected`; a part gets no operation when there are fewer families than
/// parts.
pub fn operations_of(api: &Api, selected: &[usize], part: Partition) -> Vec<usize> {
    let owner = assign(api, selected, part.count);
    selected
        .iter()
        .zip(owner)
        .filter(|(_, p)| *p == part.index)
        .map(|(i, _)| *i)
        .collect()
}

/// For each operation of `selected`, the part (from 1) it belongs to among `count`.
pub fn assign(api: &Api, selected: &[usize], count: u32) -> Vec<u32> {
    // Families in order of first appearance, each with its operations' positions.
    let mut families: Vec<(&str, Vec<usize>)> = Vec::new();
    for (pos, &i) in selected.iter().enumerate() {
        let family = api
            .operations
            .get(i)
            .map_or("", |op| family_of(&op.key.path));
        match families.iter_mut().find(|(f, _)| *f == family) {
            Some((_, members)) => members.push(pos),
            None => families.push((family, vec![pos])),
        }
    }
    // Largest first (a stable sort keeps document order among equals), each to the part
    // with the fewest operations so far, the lowest such part on a tie.
    let mut order: Vec<usize> = (0..families.len()).collect();
    order.sort_by_key(|&f| std::cmp::Reverse(families[f].1.len()));
    let count = count.max(1) as usize;
    let mut load = vec![0usize; count];
    let mut owner = vec![1u32; selected.len()];
    for f in order {
        let part = (0..count).min_by_key(|&p| (load[p], p)).unwrap_or(0);
        load[part] += families[f].1.len();
        for &pos in &families[f].1 {
            owner[pos] = part as u32 + 1;
        }
    }
    owner
}

/// What every part of one campaign knows without talking to the others.
#[derive(Clone, Debug)]
pub struct CampaignInputs<'a> {
    /// The document as read (the main file's bytes).
    pub document: &'a [u8],
    pub count: u32,
    /// `--campaign NAME`.
    pub name: Option<&'a str>,
    /// The CI pipeline's id ([`CI_RUN_VARS`]), as `VAR=value`.
    pub ci_run: Option<String>,
}

impl CampaignInputs<'_> {
    fn hash(&self, purpose: &str, seed: Option<u64>) -> blake3::Hash {
        let mut h = blake3::Hasher::new();
        // Each field framed by its length, so that no two inputs run into each other.
        let mut field = |bytes: &[u8]| {
            h.update(&(bytes.len() as u64).to_le_bytes());
            h.update(bytes);
        };
        field(purpose.as_bytes());
        field(blake3::hash(self.document).as_bytes());
        field(&self.count.to_le_bytes());
        field(self.name.unwrap_or("").as_bytes());
        field(self.ci_run.as_deref().unwrap_or("").as_bytes());
        if let Some(seed) = seed {
            field(&seed.to_le_bytes());
        }
        h.finalize()
    }

    /// The seed of a campaign run without `--seed`: every part derives the same one.
    pub fn seed(&self) -> u64 {
        let hash = self.hash("probe campaign seed 1", None);
        let mut first = [0u8; 8];
        first.copy_from_slice(&hash.as_bytes()[..8]);
        u64::from_le_bytes(first)
    }

    /// The campaign id: 32 hex characters of BLAKE3 over the inputs and the seed.
    pub fn id(&self, seed: u64) -> String {
        self.hash("probe campaign id 1", Some(seed)).to_hex()[..32].to_owned()
    }
}

/// The first of [`CI_RUN_VARS`] set, as `VAR=value`.
pub fn ci_run(var: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    CI_RUN_VARS.iter().find_map(|name| {
        var(name)
            .filter(|v| !v.trim().is_empty())
            .map(|v| format!("{name}={}", v.trim()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k: &str| map.get(k).cloned()
    }

    #[test]
    fn a_partition_is_k_of_n_from_one() {
        assert_eq!(
            Partition::parse("2/4"),
            Ok(Partition { index: 2, count: 4 })
        );
        for bad in ["0/4", "5/4", "2", "a/4", "2/0", ""] {
            assert!(Partition::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn kubernetes_counts_from_zero_and_gitlab_from_one() {
        let k8s = env(&[("JOB_COMPLETION_INDEX", "0"), ("PROBE_PARTITIONS", "3")]);
        assert_eq!(
            Partition::from_env(&k8s),
            Ok(Some(Partition { index: 1, count: 3 }))
        );
        let gitlab = env(&[("CI_NODE_INDEX", "3"), ("CI_NODE_TOTAL", "3")]);
        assert_eq!(
            Partition::from_env(&gitlab),
            Ok(Some(Partition { index: 3, count: 3 }))
        );
        assert_eq!(Partition::from_env(&env(&[])), Ok(None));
        let no_count = env(&[("JOB_COMPLETION_INDEX", "1")]);
        assert!(matches!(
            Partition::from_env(&no_count),
            Err(PartitionError::CountMissing { .. })
        ));
        let past = env(&[("JOB_COMPLETION_INDEX", "3"), ("PROBE_PARTITIONS", "3")]);
        assert!(matches!(
            Partition::from_env(&past),
            Err(PartitionError::OutOfRange { .. })
        ));
    }

    #[test]
    fn a_family_is_the_path_before_its_first_parameter() {
        assert_eq!(family_of("/pets"), "/pets");
        assert_eq!(family_of("/pets/{petId}"), "/pets");
        assert_eq!(family_of("/pets/{petId}/photos"), "/pets");
        assert_eq!(family_of("/v1/owners/"), "/v1/owners");
        assert_eq!(family_of("/{tenant}/pets"), "");
    }

    #[test]
    fn the_campaign_id_changes_with_every_input_and_only_with_them() {
        let doc = b"openapi: 3.0.0";
        let base = CampaignInputs {
            document: doc,
            count: 4,
            name: None,
            ci_run: None,
        };
        let id = base.id(7);
        assert_eq!(id, base.clone().id(7));
        assert_eq!(id.len(), 32);
        assert_ne!(id, base.id(8));
        assert_ne!(
            id,
            CampaignInputs {
                count: 2,
                ..base.clone()
            }
            .id(7)
        );
        assert_ne!(
            id,
            CampaignInputs {
                name: Some("nightly"),
                ..base.clone()
            }
            .id(7)
        );
        assert_ne!(
            id,
            CampaignInputs {
                ci_run: Some("GITHUB_RUN_ID=1".into()),
                ..base.clone()
            }
            .id(7)
        );
        assert_ne!(
            base.seed(),
            CampaignInputs {
                ci_run: Some("CI_PIPELINE_ID=9".into()),
                ..base.clone()
            }
            .seed()
        );
    }

    #[test]
    fn the_parts_cover_the_demo_once_and_keep_a_resource_together() {
        let api = crate::spec::parse(crate::fixture::demo::DOCUMENT.as_bytes(), "demo", None)
            .expect("the demo document loads");
        let all: Vec<usize> = (0..api.operations.len()).collect();
        for n in [1u32, 2, 3, 4] {
            let mut union: Vec<usize> = Vec::new();
            for k in 1..=n {
                let part = operations_of(&api, &all, Partition { index: k, count: n });
                let families: std::collections::BTreeSet<&str> = part
                    .iter()
                    .map(|&i| family_of(&api.operations[i].key.path))
                    .collect();
                for f in &families {
                    let whole = all
                        .iter()
                        .filter(|&&i| family_of(&api.operations[i].key.path) == *f)
                        .count();
                    let here = part
                        .iter()
                        .filter(|&&i| family_of(&api.operations[i].key.path) == *f)
                        .count();
                    assert_eq!(whole, here, "family {f} is whole in part {k}/{n}");
                }
                union.extend(part);
            }
            union.sort_unstable();
            assert_eq!(union, all, "the {n} parts cover every operation once");
        }
        // Five /pets operations and /stats: the larger family goes to part 1.
        let two = assign(&api, &all, 2);
        let stats = api
            .operations
            .iter()
            .position(|o| o.key.path == "/stats")
            .unwrap();
        assert_eq!(two[stats], 2);
        assert_eq!(two.iter().filter(|&&p| p == 1).count(), 5);
    }
}
