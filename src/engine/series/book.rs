//! The book of a run's series: the life cycles the document has (found once), which
//! series start on which answers, which are in progress and which have ended, and the
//! next step of each (built by `step.rs`, in the order `plan.rs` gives).
//!
//! Depends on: `model`, `spec`, `oracle` (which oracles apply), `settings`, `generate`.

use std::collections::BTreeMap;
use std::sync::Arc;

use rand_chacha::ChaCha8Rng;

use crate::events::SeriesVariations;
use crate::generate::strategy::Strategies;
use crate::generate::vocabulary::Vocabulary;
use crate::model::{Intent, SeriesKind, StepRole, Strategy, TestCase};
use crate::oracle::Oracles;
use crate::settings::SeriesOptions;
use crate::spec::Api;

use super::plan;
use super::step::{build_step, freshen, learn_creation, settable_read_only};
use super::variety::{self, Change};
use super::{
    path_parameters, shape, Access, Lifecycle, LoginTarget, SentStep, SeriesRun, Shortening,
    StepAnswer, FREE_STEPS, GIVE_WAY, LIFECYCLES_AT_ONCE, PARALLEL, TIMING_LONGER_DELAY,
    TIMING_SERIES,
};

/// Every series of a run: which may start, which are in progress, which have ended.
pub struct SeriesBook {
    enabled: bool,
    per_resource: u64,
    share: f64,
    seed: u64,
    lifecycles: Vec<Lifecycle>,
    /// Creating operation → the life cycles it starts.
    creators: BTreeMap<usize, Vec<usize>>,
    /// An accepted update of each update operation, to send as a series' update.
    updates: BTreeMap<usize, TestCase>,
    active: Vec<SeriesRun>,
    ended: Vec<SeriesRun>,
    started: u64,
    sent: u64,
    options_started: bool,
    /// Who the access series send as: the identity other than the default, and whether
    /// the run has credentials to withhold.
    access: Access,
    /// The latest request of each operation accepted with the default identity.
    accepted: BTreeMap<usize, TestCase>,
    /// Operations whose 401 a `credentials` series asked about.
    refusals_asked: std::collections::BTreeSet<usize>,
    /// Whether `timing` series are asked (their oracle is on and `send.timeout` leaves
    /// room for the longer wait).
    timing: bool,
    /// The operations and places a `timing` series asked about.
    timings_asked: std::collections::BTreeSet<(usize, String)>,
    /// The names the document's parameters take, which each series' memory learns.
    vocabulary: Arc<Vocabulary>,
    /// The login an `enumeration` series sends, until it has started (once a run).
    login: Option<LoginTarget>,
    /// The latest accepted creation of each creating operation built to be valid (nominal,
    /// unchanged, acceptable where one was): what a life cycle series starts from.
    sources: BTreeMap<usize, (bool, TestCase)>,
    /// The login a `login_burst` series sends, and how often, until it has started (once
    /// a run).
    burst: Option<(LoginTarget, u64)>,
    /// How a `forgery` series forges the default identity's bearer token, until it has
    /// started (once a run); empty when it is no JWT or the oracle is off.
    forgeries: Vec<crate::model::CredentialProbe>,
    /// What `credential_change` series ask about (docs/security.md).
    takeover: Option<super::Takeover>,
}

impl SeriesBook {
    /// The series of `operations`, as `options` allow; `oracles` say which series are
    /// worth planning (those only a switched-off oracle would judge are not), `timeout`
    /// whether a `timing` series' longer wait can be told from a timeout.
    pub fn new(
        api: &Api,
        operations: &[usize],
        options: &SeriesOptions,
        oracles: &Oracles,
        timeout: std::time::Duration,
        seed: u64,
    ) -> SeriesBook {
        let tested = |i: &usize| operations.contains(i);
        let mut lifecycles: Vec<Lifecycle> = Vec::new();
        let mut creators: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (read, op) in api.operations.iter().enumerate() {
            let is_item = op
                .key
                .path
                .trim_end_matches('/')
                .rsplit('/')
                .next()
                .is_some_and(|s| s.starts_with('{') && s.ends_with('}'));
            if op.key.method != "GET" || !is_item || !tested(&read) {
                continue;
            }
            let item = shape(&op.key.path);
            if lifecycles.iter().any(|l| shape(&l.resource) == item) {
                continue;
            }
            let collection = item.rsplit_once('/').map_or("", |(c, _)| c).to_owned();
            let find = |method: &str, at: &str| {
                api.operations
                    .iter()
                    .enumerate()
                    .find(|(i, o)| o.key.method == method && shape(&o.key.path) == at && tested(i))
                    .map(|(i, _)| i)
            };
            let put = find("PUT", &item);
            let post = find("POST", &collection);
            let patch = find("PATCH", &item);
            let creates: Vec<usize> = post.into_iter().chain(put).collect();
            if creates.is_empty() {
                continue;
            }
            let at = lifecycles.len();
            for c in creates {
                creators.entry(c).or_default().push(at);
            }
            lifecycles.push(Lifecycle {
                resource: op.key.path.clone(),
                read,
                post,
                list: find("GET", &collection),
                put,
                patch,
                delete: find("DELETE", &item),
                started: 0,
                access_started: false,
                undeclared: if oracles.applies("hidden_endpoint") {
                    ["GET", "PATCH", "PUT", "DELETE"]
                        .into_iter()
                        .filter(|m| {
                            !api.operations
                                .iter()
                                .any(|o| o.key.method == *m && shape(&o.key.path) == item)
                        })
                        .collect()
                } else {
                    Vec::new()
                },
                methods_started: false,
                duplicate: oracles.applies("duplicate_value_unhandled")
                    && post.is_some_and(|p| {
                        crate::oracle::series::request_properties(api, &api.operations[p])
                            .iter()
                            .any(|(name, schema)| {
                                let schema = api.schemas.deref(schema, 64).unwrap_or(schema);
                                crate::oracle::implies_uniqueness(name, schema)
                            })
                    }),
                read_only_settable: oracles.applies("mass_assignment")
                    && (find("PUT", &item).is_some() || find("PATCH", &item).is_some())
                    && !settable_read_only(api, op).is_empty(),
                actions: actions_under(api, &item, &tested),
                changes: variety::variations(
                    api,
                    post.or(put),
                    put.or(patch),
                    post.is_some() && put.is_some(),
                ),
                tries: Vec::new(),
            });
            let last = lifecycles.len() - 1;
            lifecycles[last].tries = vec![(0, 0); lifecycles[last].changes.len()];
        }
        SeriesBook {
            enabled: options.enabled,
            per_resource: options.per_resource,
            share: options.share,
            seed,
            lifecycles,
            creators,
            updates: BTreeMap::new(),
            active: Vec::new(),
            ended: Vec::new(),
            started: 0,
            sent: 0,
            options_started: false,
            access: Access::default(),
            accepted: BTreeMap::new(),
            refusals_asked: Default::default(),
            timing: oracles.applies("time_based_injection")
                && timeout >= std::time::Duration::from_secs(u64::from(TIMING_LONGER_DELAY) * 2),
            timings_asked: Default::default(),
            vocabulary: Arc::new(Vocabulary::of(api)),
            login: None,
            sources: BTreeMap::new(),
            burst: None,
            forgeries: Vec::new(),
            takeover: None,
        }
    }

    /// Lets the book start one `enumeration` series, on the first answered request of the
    /// login's operation (docs/security.md).
    pub fn with_login(mut self, login: Option<LoginTarget>) -> SeriesBook {
        self.login = login;
        self
    }

    /// Lets the book start one `login_burst` series of `n` failed logins, on the first
    /// answered request of the login's operation (docs/security.md).
    pub fn with_burst(mut self, login: Option<LoginTarget>, n: u64) -> SeriesBook {
        self.burst = login.filter(|_| n > 0).map(|l| (l, n));
        self
    }

    /// Lets the book start one `forgery` series, sending the default identity's token
    /// forged each way of `forgeries` (docs/security.md).
    pub fn with_forgeries(mut self, forgeries: Vec<crate::model::CredentialProbe>) -> SeriesBook {
        self.forgeries = forgeries;
        self
    }

    /// Starts the `login_burst` series from `case`, an ordinary request of the login's
    /// operation: the known user's login with a wrong password, sent `n` times without
    /// the run's credentials.
    fn start_burst(&mut self, api: &Api, op: usize, case: &TestCase) {
        if self.burst.as_ref().is_none_or(|(l, _)| l.op != op) || self.active.len() >= PARALLEL {
            return;
        }
        let Some((login, n)) = self.burst.take() else {
            return;
        };
        let template = login_template(case, login.body);
        let (_, name, rng) = self.next_name();
        self.active.push(SeriesRun::new(
            name,
            rng,
            SeriesKind::LoginBurst,
            api.operations[op].key.path.clone(),
            None,
            // At most 1,000: a setting is no reason to hold millions of steps.
            vec![StepRole::FailedLogin; usize::try_from(n.min(1000)).unwrap_or(1000)],
            Some(template),
        ));
    }

    /// Starts the `forgery` series from `case`, a GET the default identity's token was
    /// accepted on, of an operation that declares security: sent again with the token,
    /// without it, and with each forgery.
    fn start_forgery(&mut self, api: &Api, op: usize, case: &TestCase) {
        let operation = &api.operations[op];
        if self.forgeries.is_empty()
            || operation.key.method != "GET"
            || !crate::oracle::declares_security(api, operation)
            || self.active.len() >= PARALLEL
        {
            return;
        }
        let forgeries = std::mem::take(&mut self.forgeries);
        let mut template = case.clone();
        template.series_step = None;
        let mut roles = vec![StepRole::WithToken, StepRole::WithoutToken];
        roles.extend(forgeries.iter().map(|_| StepRole::ForgedToken));
        let (_, name, rng) = self.next_name();
        let mut run = SeriesRun::new(
            name,
            rng,
            SeriesKind::Forgery,
            operation.key.path.clone(),
            None,
            roles,
            Some(template),
        );
        run.forgeries = forgeries;
        self.active.push(run);
    }

    /// Lets the book start `credential_change` series (docs/security.md).
    pub fn with_takeover(mut self, takeover: Option<super::Takeover>) -> SeriesBook {
        self.takeover = takeover;
        self
    }

    /// Starts a `credential_change` series from `case`, an ordinary request of operation
    /// `op` that was answered, when `op` changes a user's credential, its series has not
    /// started, and no other is in progress (each changes the same account).
    fn start_takeover(&mut self, api: &Api, op: usize, case: &TestCase) {
        if self.active.len() >= PARALLEL
            || self
                .active
                .iter()
                .any(|r| r.kind == SeriesKind::CredentialChange)
        {
            return;
        }
        if !self.takeover.as_ref().is_some_and(|t| t.waits_for(op)) {
            return;
        }
        let (_, name, mut rng) = self.next_name();
        let tag = super::takeover::tag(&mut rng);
        let Some(plan) = self.takeover.as_mut().and_then(|t| t.offer(op, case, tag)) else {
            return;
        };
        let mut run = SeriesRun::new(
            name,
            rng,
            SeriesKind::CredentialChange,
            api.operations[op].key.path.clone(),
            None,
            super::Takeover::roles(),
            None,
        );
        run.takeover = Some(Box::new(plan));
        self.active.push(run);
    }

    /// Starts the `enumeration` series from `case`, an ordinary request of the login's
    /// operation: its parameters, with the login's body (its password wrong), sent without
    /// the run's credentials (a 401 to it says nothing of a token).
    fn start_enumeration(&mut self, api: &Api, op: usize, case: &TestCase) {
        if self.login.as_ref().is_none_or(|l| l.op != op) || self.active.len() >= PARALLEL {
            return;
        }
        let Some(login) = self.login.take() else {
            return;
        };
        let template = login_template(case, login.body);
        let (_, name, rng) = self.next_name();
        self.active.push(SeriesRun::new(
            name,
            rng,
            SeriesKind::Enumeration,
            api.operations[op].key.path.clone(),
            None,
            vec![
                StepRole::KnownUserWrongPassword,
                StepRole::UnknownUserWrongPassword,
                StepRole::UnknownUserAgain,
            ],
            Some(template),
        ));
    }

    /// Lets the book start access series: one per resource, on its first creation, when
    /// `access` has another identity or credentials to withhold.
    pub fn with_access(mut self, access: Access) -> SeriesBook {
        self.access = access;
        self
    }

    /// Learns from an ordinary request answered `status`: a creation may start a series,
    /// an accepted update is kept for the series' updates.
    pub fn offer(&mut self, api: &Api, op: usize, case: &TestCase, status: Option<u16>) {
        if self.enabled && status.is_some() && self.login.is_some() {
            self.start_enumeration(api, op, case);
        }
        if self.enabled && status.is_some() && self.burst.is_some() {
            self.start_burst(api, op, case);
        }
        if self.enabled
            && !self.forgeries.is_empty()
            && case.strategy == Strategy::Nominal
            && case.mutation.is_none()
            && case.identity.is_none()
            && case.credentials.is_none()
            && status.is_some_and(|s| (200..300).contains(&s))
        {
            self.start_forgery(api, op, case);
        }
        if self.enabled
            && status.is_some()
            && self.takeover.is_some()
            && case.strategy == Strategy::Nominal
            && case.mutation.is_none()
            && case
                .series_step
                .as_ref()
                .is_none_or(|s| s.series == crate::model::SERIES_MEMORY)
        {
            self.start_takeover(api, op, case);
        }
        if self.enabled
            && self.access.refused
            && status == Some(401)
            && case.credentials.is_none()
            && case.identity.is_none()
        {
            self.offer_refused(api, op, case);
        }
        if self.enabled
            && case.strategy == Strategy::Nominal
            && case.mutation.is_none()
            && case.identity.is_none()
            && case.credentials.is_none()
            && status.is_some_and(|s| (200..300).contains(&s))
        {
            // The latest: the likeliest to name what still exists.
            self.accepted.insert(op, case.clone());
        }
        if !self.enabled
            || case.strategy != Strategy::Nominal
            || !status.is_some_and(|s| (200..300).contains(&s))
        {
            return;
        }
        let method = api.operations[op].key.method.as_str();
        // An accepted request of each writing operation: a series' updates and refused
        // creations start from one.
        if matches!(method, "PUT" | "PATCH" | "POST") && !self.updates.contains_key(&op) {
            self.updates.insert(op, case.clone());
        }
        let creates = self.creators.get(&op).map_or(0, Vec::len);
        // A creation built to be valid and sent unchanged: what life cycle series start
        // from (`start_more`), the latest, an acceptable one over one with invented values.
        if creates > 0 && case.mutation.is_none() && case.identity.is_none() {
            let acceptable = case.intent == Intent::Acceptable;
            let keep = matches!(case.intent, Intent::Acceptable | Intent::Unknown)
                && self.sources.get(&op).is_none_or(|(a, _)| acceptable || !a);
            if keep {
                self.sources.insert(op, (acceptable, case.clone()));
            }
        }
        for i in 0..creates {
            let at = self.creators[&op][i];
            if self.lifecycles[at].access_started || self.active.len() >= PARALLEL {
                continue;
            }
            if !self.lifecycles[at].methods_started
                && !self.lifecycles[at].undeclared.is_empty()
                && self.active.len() < PARALLEL
            {
                self.lifecycles[at].methods_started = true;
                let mut roles = vec![StepRole::Create, StepRole::Read];
                roles.extend(
                    self.lifecycles[at]
                        .undeclared
                        .iter()
                        .map(|_| StepRole::UndeclaredMethod),
                );
                self.start_on_fresh(api, op, case, at, SeriesKind::Methods, roles);
            }
            let roles = plan::access_roles(api, &self.lifecycles[at], &self.access);
            if roles.is_empty() {
                continue;
            }
            self.lifecycles[at].access_started = true;
            self.start_on_fresh(api, op, case, at, SeriesKind::Access, roles);
        }
    }

    /// A request about to be sent asks an SQL database to wait: once per operation and
    /// place, a `timing` series sends it again asking for no wait, the wait, no wait and a
    /// longer one (docs/security.md). Asked when the request is planned, not when it is
    /// answered: whether a series runs depends on what was sent, never on how fast the API
    /// answered, and an API that waits gets its series while the run goes on.
    pub fn offer_wait(&mut self, api: &Api, op: usize, case: &TestCase) {
        if !self.enabled || !self.timing {
            return;
        }
        let Some((place, seconds)) = crate::mutate::awkward::wait_asked(case) else {
            return;
        };
        if seconds == 0
            || self.timings_asked.len() >= TIMING_SERIES
            || self.active.len() >= PARALLEL
            || !self.timings_asked.insert((op, place))
        {
            return;
        }
        let (_, name, rng) = self.next_name();
        let mut template = case.clone();
        template.series_step = None;
        self.active.push(SeriesRun::new(
            name,
            rng,
            SeriesKind::Timing,
            api.operations[op].key.path.clone(),
            None,
            vec![
                StepRole::WithoutDelay,
                StepRole::WithDelay,
                StepRole::WithoutDelay,
                StepRole::WithLongerDelay,
            ],
            Some(template),
        ));
    }

    /// A request sent with the default identity's credentials was answered 401: once per
    /// operation, when a request with them was accepted before, a `credentials` series
    /// sends the refused request again and then the accepted one.
    fn offer_refused(&mut self, api: &Api, op: usize, refused: &TestCase) {
        let Some((accepted_op, accepted)) = self.still_accepted(api, op) else {
            return;
        };
        if self.active.len() >= PARALLEL || !self.refusals_asked.insert(op) {
            return;
        }
        let (_, name, rng) = self.next_name();
        // Each step sends its values as they are: what they were bound to belongs to the run.
        let mut refused = refused.clone();
        refused.series_step = None;
        let mut run = SeriesRun::new(
            name,
            rng,
            SeriesKind::Credentials,
            api.operations[op].key.path.clone(),
            None,
            vec![
                StepRole::RefusedWithCredentials,
                StepRole::AcceptedAfterRefusal,
            ],
            Some(refused),
        );
        run.source = Some((accepted_op, accepted));
        self.active.push(run);
    }

    /// What shows the credentials refused by operation `op` still work: the latest accepted
    /// request of an operation that names no item (what other requests delete cannot make
    /// it fail), a GET first; else the latest accepted request of `op`.
    fn still_accepted(&self, api: &Api, op: usize) -> Option<(usize, TestCase)> {
        still_accepted(&self.accepted, api, op)
    }

    /// Starts a series of `kind` about a fresh resource of life cycle `at`, made by the
    /// accepted creation `case` of operation `op` sent again (freshened: name-like strings
    /// suffixed, a creating PUT a key of its own); returns it, to be told more.
    fn start_on_fresh(
        &mut self,
        api: &Api,
        op: usize,
        case: &TestCase,
        at: usize,
        kind: SeriesKind,
        roles: Vec<StepRole>,
    ) -> &mut SeriesRun {
        let (n, name, mut rng) = self.next_name();
        let mut create = case.clone();
        let operation = &api.operations[op];
        freshen(
            api,
            operation,
            &mut create,
            n,
            operation.key.method == "PUT",
            &mut rng,
        );
        self.active.push(SeriesRun::new(
            name,
            rng,
            kind,
            self.lifecycles[at].resource.clone(),
            Some(at),
            roles,
            Some(create),
        ));
        let pushed = self.active.len() - 1;
        &mut self.active[pushed]
    }

    /// What a shorter series of `run` (an ended life cycle) would start from; `None` for an
    /// `OPTIONS` series or one that is already shorter.
    pub fn shortening(&self, run: &SeriesRun) -> Option<Shortening> {
        if run.shorter {
            return None;
        }
        let (op, source) = run.source.clone()?;
        Some(Shortening {
            lifecycle: run.lifecycle?,
            op,
            source,
            variation: run.variation.clone(),
            action: run.action,
            roles: run
                .steps
                .iter()
                .filter(|s| s.answer.is_some())
                .map(|s| s.role)
                .collect(),
        })
    }

    /// Starts the life cycle of `plan` again with only the steps a series oracle `needs`,
    /// the step its finding is at (`at`) and the read after it, the steps those come after,
    /// and the creation, in
    /// the order they were sent: the same request a fresh resource, so that a finding of
    /// that oracle can be shown by fewer steps. Nothing when that leaves out no step, or
    /// when the needs were not all sent.
    pub fn start_shorter(
        &mut self,
        api: &Api,
        plan: &Shortening,
        needs: &[StepRole],
        at: StepRole,
    ) -> bool {
        if !self.enabled || needs.is_empty() {
            return false;
        }
        let roles = super::plan::shorter_roles(&plan.roles, needs, at);
        if roles.len() >= plan.roles.len()
            || roles.first() != Some(&StepRole::Create)
            || !needs.iter().all(|n| roles.contains(n))
        {
            return false;
        }
        if api.operations.get(plan.op).is_none() {
            return false;
        }
        let run = self.start_on_fresh(
            api,
            plan.op,
            &plan.source,
            plan.lifecycle,
            SeriesKind::Lifecycle,
            roles,
        );
        run.source = Some((plan.op, plan.source.clone()));
        run.shorter = true;
        // The same variation, not counted again: it is the same question asked shorter.
        run.variation.clone_from(&plan.variation);
        run.action = plan.action;
        true
    }

    /// Starts life cycle series while fewer than [`LIFECYCLES_AT_ONCE`] life cycles and
    /// [`PARALLEL`] series in all are in progress: each
    /// on the resource that has had the fewest, at the variation that is the most new to
    /// it (untried first; one that showed nothing new gives way after [`GIVE_WAY`] tries,
    /// one that did gets that many more), from the latest accepted creation of the
    /// variation's creating operation. `series.perResource`, when not 0, caps each
    /// resource's series.
    fn start_more(&mut self, api: &Api) {
        let mut waiting: Vec<usize> = (0..self.lifecycles.len()).collect();
        let lifecycles = |active: &[SeriesRun]| {
            active
                .iter()
                .filter(|r| r.kind == SeriesKind::Lifecycle)
                .count()
        };
        while self.active.len() < PARALLEL
            && lifecycles(&self.active) < LIFECYCLES_AT_ONCE
            && !waiting.is_empty()
        {
            let started = |l: &Lifecycle| l.tries.iter().map(|t| t.0).sum::<u64>();
            let pick = waiting
                .iter()
                .enumerate()
                .min_by_key(|(_, &at)| (started(&self.lifecycles[at]), at))
                .map(|(i, &at)| (i, at));
            let Some((i, at)) = pick else { break };
            waiting.remove(i);
            let l = &self.lifecycles[at];
            if self.per_resource > 0 && started(l) >= self.per_resource {
                continue;
            }
            let creator = |c: &Change| match c {
                Change::CreatedByPut => l.put,
                _ => l.post.or(l.put),
            };
            let choice = l
                .changes
                .iter()
                .enumerate()
                .filter(|(_, c)| creator(c).is_some_and(|op| self.sources.contains_key(&op)))
                .min_by_key(|(k, _)| {
                    let (tried, showed) = l.tries[*k];
                    (tried.saturating_sub(GIVE_WAY * showed), tried, *k)
                })
                .map(|(k, c)| (k, c.clone()));
            let Some((k, change)) = choice else { continue };
            let Some(op) = creator(&change) else { continue };
            let Some((_, case)) = self.sources.get(&op).cloned() else {
                continue;
            };
            let action =
                (!l.actions.is_empty()).then(|| l.actions[(started(l) as usize) % l.actions.len()]);
            let is_put = |i: usize| api.operations.get(i).is_some_and(|o| o.key.method == "PUT");
            self.lifecycles[at].tries[k].0 += 1;
            self.lifecycles[at].started += 1;
            let roles = plan::lifecycle_roles(&self.lifecycles[at], is_put(op), action.map(is_put));
            let run = self.start_on_fresh(api, op, &case, at, SeriesKind::Lifecycle, roles);
            run.source = Some((op, case));
            run.variation = Some((k, change));
            run.action = action;
            // Another resource may start one before this one starts a second.
            waiting.push(at);
        }
    }

    /// A life cycle series ended and was judged: whether it showed something new counts
    /// for its variation.
    pub fn judged(&mut self, lifecycle: Option<usize>, variation: Option<usize>, new: bool) {
        let (Some(at), Some(k)) = (lifecycle, variation) else {
            return;
        };
        if let Some(t) = self.lifecycles.get_mut(at).and_then(|l| l.tries.get_mut(k)) {
            t.1 += u64::from(new);
        }
    }

    /// The variations each resource's series got, in the order of the document, those
    /// never tried left out.
    pub fn variations(&self) -> Vec<SeriesVariations> {
        self.lifecycles
            .iter()
            .map(|l| SeriesVariations {
                resource: l.resource.clone(),
                variations: l
                    .changes
                    .iter()
                    .zip(&l.tries)
                    .filter(|(_, t)| t.0 > 0)
                    .map(|(c, t)| (c.label(), t.0, t.1))
                    .collect(),
            })
            .filter(|r| !r.variations.is_empty())
            .collect()
    }

    /// The number, name and random stream of the next series to start.
    fn next_name(&mut self) -> (u64, String, ChaCha8Rng) {
        let n = self.started;
        self.started += 1;
        let name = format!("s{n}");
        let rng = crate::generate::stream(self.seed, &name, "series");
        (n, name, rng)
    }

    /// Moves the series that are over from the active list to the ended one.
    fn retire_over(&mut self) {
        let (over, going): (Vec<SeriesRun>, Vec<SeriesRun>) = std::mem::take(&mut self.active)
            .into_iter()
            .partition(SeriesRun::over);
        self.active = going;
        self.ended.extend(over);
    }

    /// Starts one `OPTIONS` series for each path without parameters (once a run).
    fn start_options(&mut self, api: &Api, operations: &[usize]) {
        if self.options_started {
            return;
        }
        self.options_started = true;
        let mut seen = std::collections::BTreeSet::new();
        for &i in operations {
            let op = &api.operations[i];
            if op.key.path.contains('{') || !seen.insert(op.key.path.clone()) {
                continue;
            }
            let (_, name, rng) = self.next_name();
            let run = SeriesRun::new(
                name,
                rng,
                SeriesKind::Options,
                op.key.path.clone(),
                None,
                vec![StepRole::Options],
                None,
            );
            self.active.push(run);
        }
    }

    /// Takes a series step's answer.
    pub fn answered(
        &mut self,
        api: &Api,
        seq: u64,
        case: TestCase,
        answer: Option<Box<StepAnswer>>,
    ) {
        let Some(run) = self.active.iter_mut().find(|r| r.in_flight == Some(seq)) else {
            return;
        };
        run.in_flight = None;
        let role = run.steps.last().filter(|s| s.seq == seq).map(|s| s.role);
        let Some(role) = role else { return };
        let status = answer.as_ref().and_then(|a| a.interaction.outcome.status());
        let success = status.is_some_and(|s| (200..300).contains(&s));
        if let Some(step) = run.steps.last_mut() {
            step.case = case;
            step.answer = answer;
        }
        // What the answer means for the steps left.
        let skip_until = |run: &mut SeriesRun, keep: &[StepRole]| {
            while run.roles.last().is_some_and(|r| !keep.contains(r)) {
                run.roles.pop();
            }
        };
        match role {
            StepRole::Create if !success || !learn_creation(api, run, seq, &self.vocabulary) => {
                run.roles.clear()
            }
            StepRole::Read if !success => run.roles.clear(),
            // Accepted after all (or no answer): the list after it judges nothing.
            StepRole::FailedCreate if success || status.is_none() => skip_until(
                run,
                &[
                    StepRole::FailedUpdate,
                    StepRole::Update,
                    StepRole::Patch,
                    StepRole::Action,
                    StepRole::Delete,
                ],
            ),
            // Accepted after all: the read after it judges nothing, and what the resource
            // holds now is what the updates start from.
            StepRole::FailedUpdate if success || status.is_none() => skip_until(
                run,
                &[
                    StepRole::Update,
                    StepRole::Patch,
                    StepRole::UpdateReadOnly,
                    StepRole::Action,
                    StepRole::Delete,
                ],
            ),
            StepRole::Update | StepRole::UpdateAgain if !success => skip_until(
                run,
                &[
                    StepRole::Patch,
                    StepRole::UpdateReadOnly,
                    StepRole::Action,
                    StepRole::Delete,
                ],
            ),
            StepRole::Patch if !success => skip_until(
                run,
                &[StepRole::UpdateReadOnly, StepRole::Action, StepRole::Delete],
            ),
            StepRole::UpdateReadOnly if !success => {
                skip_until(run, &[StepRole::Action, StepRole::Delete])
            }
            StepRole::Action | StepRole::ActionAgain if !success => {
                skip_until(run, &[StepRole::Delete])
            }
            // Another identity may have deleted it already: who may read what is gone is
            // still asked.
            StepRole::Delete if run.kind == SeriesKind::Access => {}
            // Not refused this time: nothing to ask.
            StepRole::RefusedWithCredentials if status != Some(401) => run.roles.clear(),
            // The API slowed the burst down or stopped it: nothing more to ask.
            StepRole::FailedLogin if !burst_refused(run) => run.roles.clear(),
            // The token no longer accepted, or not needed: forgeries would tell nothing.
            StepRole::WithToken if !success => run.roles.clear(),
            StepRole::WithoutToken if success || status.is_none() => run.roles.clear(),
            StepRole::Delete if !success || status == Some(202) => run.roles.clear(),
            // The other identity's login does not work, or the change was refused:
            // nothing to judge, and nothing to undo.
            StepRole::OtherLogin | StepRole::ChangeOtherCredential if !success => run.roles.clear(),
            _ if status.is_none() => run.roles.clear(),
            _ => {}
        }
    }

    /// The next step of every series that waits for none, as (operation, case), each
    /// numbered from `next_seq` on; at most what `series.share` still allows.
    pub fn ready(
        &mut self,
        api: &Api,
        operations: &[usize],
        strategies: &Strategies<'_>,
        base_url: &str,
        next_seq: u64,
    ) -> Vec<(usize, TestCase)> {
        if !self.enabled {
            return Vec::new();
        }
        self.start_options(api, operations);
        let allowed =
            (FREE_STEPS + (self.share * next_seq as f64) as u64).saturating_sub(self.sent);
        if allowed > 0 {
            self.start_more(api);
        }
        let mut out = Vec::new();
        // Shorter series first: each completes the evidence of a finding already shown, and
        // a run's budget may end before every series in progress has sent its next step.
        let (shorter, longer): (Vec<usize>, Vec<usize>) =
            (0..self.active.len()).partition(|&i| self.active[i].shorter);
        for i in shorter.into_iter().chain(longer) {
            let run = &mut self.active[i];
            if out.len() as u64 >= allowed {
                break;
            }
            if run.in_flight.is_some() {
                continue;
            }
            while let Some(role) = run.roles.pop() {
                // The latest accepted request, as late as can be: the one chosen when the
                // series started may name what has been deleted since.
                if role == StepRole::AcceptedAfterRefusal {
                    // The refused request is the series' first.
                    let refused_op = run.create.as_ref().and_then(|c| {
                        api.operations
                            .iter()
                            .position(|o| o.key.name() == c.operation)
                    });
                    if let Some(fresh) =
                        refused_op.and_then(|op| still_accepted(&self.accepted, api, op))
                    {
                        run.source = Some(fresh);
                    }
                }
                let lifecycle = run.lifecycle.map(|at| &self.lifecycles[at]);
                if let Some((op, case)) = build_step(
                    api,
                    strategies,
                    base_url,
                    run,
                    lifecycle,
                    &self.updates,
                    role,
                ) {
                    let mut case = case;
                    match role {
                        StepRole::ReadAsOther
                        | StepRole::UpdateAsOther
                        | StepRole::DeleteAsOther
                        | StepRole::ReadDeletedAsOther => {
                            case.identity.clone_from(&self.access.other)
                        }
                        StepRole::UpdateAnonymous => {
                            case.credentials = Some(crate::model::CredentialProbe::Withheld)
                        }
                        _ => {}
                    }
                    let seq = next_seq + out.len() as u64;
                    run.in_flight = Some(seq);
                    run.steps.push(SentStep {
                        role,
                        seq,
                        case: case.clone(),
                        answer: None,
                    });
                    out.push((op, case));
                    break;
                }
            }
        }
        self.sent += out.len() as u64;
        self.retire_over();
        out
    }

    /// The series that have ended since the last call.
    pub fn take_ended(&mut self) -> Vec<SeriesRun> {
        self.retire_over();
        std::mem::take(&mut self.ended)
    }

    /// Every series, ended or not: the run is over.
    pub fn take_all(&mut self) -> Vec<SeriesRun> {
        let mut all = std::mem::take(&mut self.ended);
        all.append(&mut self.active);
        all
    }

    /// Series steps sent so far.
    pub fn sent(&self) -> u64 {
        self.sent
    }
}

/// A login series' template: the ordinary request `case` of the login's operation with
/// the login's `body` (its password wrong), sent without the run's credentials (a 401 to
/// it says nothing of a token).
fn login_template(case: &TestCase, body: serde_json::Value) -> TestCase {
    let mut template = case.clone();
    template.series_step = None;
    template.mutation = None;
    template.shrinking = None;
    template.identity = None;
    template.credentials = Some(crate::model::CredentialProbe::Withheld);
    template.body = Some(crate::model::CaseBody {
        media_type: "application/json".into(),
        value: body,
        sent_as: None,
    });
    template
}

/// See [`SeriesBook::still_accepted`].
fn still_accepted(
    accepted: &BTreeMap<usize, TestCase>,
    api: &Api,
    op: usize,
) -> Option<(usize, TestCase)> {
    let chosen = reference_read(api, accepted.keys().copied(), op)?;
    let mut case = accepted.get(&chosen)?.clone();
    case.series_step = None;
    Some((chosen, case))
}

/// Of the operations with an accepted request (`accepted`, in order), the one whose
/// request shows credentials still work: a GET of a collection the document has items
/// under (`GET /books` beside `/books/{title}`: a read, by its shape as well as its
/// method), else any GET that names no item, else any operation that names no item, else
/// `op` itself. A GET that names nothing may still act (`GET /createdb` resets a database
/// in one API), which the collection read is least likely to.
fn reference_read(api: &Api, accepted: impl Iterator<Item = usize>, op: usize) -> Option<usize> {
    let accepted: Vec<usize> = accepted.collect();
    let names_no_item = |i: usize, method: Option<&str>| {
        api.operations
            .get(i)
            .is_some_and(|o| !o.key.path.contains('{') && method.is_none_or(|m| o.key.method == m))
    };
    let collection = |i: usize| {
        let path = api.operations[i].key.path.trim_end_matches('/');
        let under = format!("{path}/{{");
        api.operations
            .iter()
            .any(|o| o.key.path.starts_with(&under))
    };
    let first = |keep: &dyn Fn(usize) -> bool| accepted.iter().copied().find(|&i| keep(i));
    first(&|i| names_no_item(i, Some("GET")) && collection(i))
        .or_else(|| first(&|i| names_no_item(i, Some("GET"))))
        .or_else(|| first(&|i| names_no_item(i, None)))
        .or_else(|| accepted.contains(&op).then_some(op))
}

/// The operations on paths right under the item path `item` (its shape) that carry no
/// parameter of their own and have no read of their own, nor a read of an item under
/// them: actions on the item (`PUT /things/{id}/archive`), not child collections. A
/// DELETE there is left out: it would end the life cycle before its last steps.
fn actions_under(api: &Api, item: &str, tested: &dyn Fn(&usize) -> bool) -> Vec<usize> {
    let prefix = format!("{item}/");
    let parameters = path_parameters(item).len();
    let mut out = Vec::new();
    for (i, o) in api.operations.iter().enumerate() {
        let at = shape(&o.key.path);
        let under = at.starts_with(&prefix)
            && path_parameters(&at).len() == parameters
            && matches!(o.key.method.as_str(), "PUT" | "POST" | "PATCH");
        if !under || !tested(&i) {
            continue;
        }
        let child_item = format!("{at}/{{}}");
        let read = api.operations.iter().any(|r| {
            r.key.method == "GET" && (shape(&r.key.path) == at || shape(&r.key.path) == child_item)
        });
        if !read {
            out.push(i);
        }
    }
    out
}

/// Whether the last answer of a `login_burst` series refused its wrong password (by its
/// status, or by its content for an API that answers `200 {"status": "fail"}`): else the
/// API slowed the burst down, stopped it, or let the login in, and nothing more is asked.
fn burst_refused(run: &SeriesRun) -> bool {
    let Some(answer) = run.steps.last().and_then(|s| s.answer.as_deref()) else {
        return false;
    };
    match &answer.interaction.outcome {
        crate::model::Outcome::Response(r) => {
            crate::oracle::login_refused(r.status, &r.headers, answer.body.as_deref())
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::reference_read;

    const DOC: &str = r#"
openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /createdb:
    get: {operationId: createDb, responses: {"200": {description: ok}}}
  /books:
    get: {operationId: listBooks, responses: {"200": {description: ok}}}
  /books/{title}:
    get:
      operationId: getBook
      parameters: [{name: title, in: path, required: true, schema: {type: string}}]
      responses: {"200": {description: ok}}
  /me:
    post: {operationId: touchMe, responses: {"200": {description: ok}}}
"#;

    #[test]
    fn the_reference_read_is_a_collection_before_any_other_get() {
        let api = crate::spec::parse(DOC.as_bytes(), "t.yaml", None).unwrap();
        let index = |id: &str| {
            api.operations
                .iter()
                .position(|o| o.key.id.as_deref() == Some(id))
                .unwrap()
        };
        let (db, list, get, me) = (
            index("createDb"),
            index("listBooks"),
            index("getBook"),
            index("touchMe"),
        );
        let all = [db, list, get, me];
        assert_eq!(reference_read(&api, all.into_iter(), get), Some(list));
        assert_eq!(
            reference_read(&api, [db, get, me].into_iter(), get),
            Some(db)
        );
        assert_eq!(reference_read(&api, [get, me].into_iter(), get), Some(me));
        assert_eq!(reference_read(&api, [get].into_iter(), get), Some(get));
        assert_eq!(reference_read(&api, [me].into_iter(), get), Some(me));
        assert_eq!(reference_read(&api, std::iter::empty(), get), None);
    }
}
