//! Series: short sequences of calls on one resource, each step built from the answers
//! before it, judged together by the series oracles (docs/series.md).
//!
//! The life cycles are found once from the document: a resource is an item path (its last
//! segment a parameter) with a GET, and something that creates it (a POST on its
//! collection, or a PUT on the item). A creation answered 2xx by an ordinary request starts
//! a series about a fresh resource of the same kind: the same creation is sent again (with
//! name-like strings given a suffix, so that APIs keyed by name make a new one), then read,
//! updated, read, deleted, read and deleted again. The series keeps its own memory of what
//! its creation answered, never shared with the run's: no ordinary request touches the
//! resource a series is about, so two reads of it differ only by what the series did.
//!
//! Which series start is decided where answers are learned (in sequence order); each
//! series draws from its own ChaCha stream, so a series is the same given the same answers.
//! The scheduler sends the ready steps of every series as a small batch of their own and
//! waits for them before it goes on with the rounds.
//!
//! Depends on: `model`, `spec`, `schema`, `generate::{memory, cases}`.

use std::collections::BTreeMap;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

use crate::ids::InteractionId;
use crate::model::{
    Intent, Interaction, Location, ParameterValue, SeriesKind, SeriesStep, StepRole, Strategy,
    TestCase, ValueOrigin,
};
use crate::oracle::series::name_like;
use crate::oracle::Oracles;
use crate::plan::{Source, SourceStep};
use crate::schema::Mode;
use crate::send::wire;
use crate::settings::SeriesOptions;
use crate::spec::{Api, Operation};

use crate::generate::cases::{build_case, CasePlan};
use crate::generate::memory::{self, Memory};
use crate::generate::strategy::Strategies;

/// Most series in progress at once.
const PARALLEL: usize = 8;

/// `timing` series started in a run at most: each costs its waits when the API does wait.
const TIMING_SERIES: usize = 8;

/// The wait, in seconds, a `timing` series asks for, then the longer one.
const TIMING_DELAY: u32 = 2;
const TIMING_LONGER_DELAY: u32 = 3;

/// Series steps always allowed, before `series.share` applies.
const FREE_STEPS: u64 = 50;

/// The life cycle of one kind of resource, found from the document.
#[derive(Debug, Clone)]
struct Lifecycle {
    /// The item path of its read, e.g. `/pets/{petId}`.
    resource: String,
    read: usize,
    /// The POST on its collection, and the GET of the collection.
    post: Option<usize>,
    list: Option<usize>,
    put: Option<usize>,
    patch: Option<usize>,
    delete: Option<usize>,
    /// Series started so far.
    started: u64,
    /// Whether its access series has started.
    access_started: bool,
    /// Whether it has an update and its read declares a property only the server writes
    /// (`readOnly`), which a series sends to ask whether the API takes it anyway.
    read_only_settable: bool,
    /// The methods the document does not declare for the item path, in the order a
    /// `methods` series sends them (DELETE last); empty when `checks.hidden_endpoint` is off.
    undeclared: Vec<&'static str>,
    /// Whether its `methods` series has started.
    methods_started: bool,
}

/// The step a step of a life cycle judges the effect of, which a shorter series must keep
/// before it.
fn comes_after(role: StepRole) -> Option<StepRole> {
    Some(match role {
        StepRole::CreateAgain | StepRole::FollowLocation => StepRole::Create,
        StepRole::ListAfterFailedCreate => StepRole::FailedCreate,
        StepRole::ReadAfterFailedUpdate => StepRole::FailedUpdate,
        StepRole::ReadAfterUpdate | StepRole::UpdateAgain => StepRole::Update,
        StepRole::ReadAfterUpdateAgain => StepRole::UpdateAgain,
        StepRole::ReadAfterPatch => StepRole::Patch,
        StepRole::ReadAfterDelete | StepRole::DeleteAgain => StepRole::Delete,
        // A change of a deleted resource tells something only once a read showed it gone.
        StepRole::UpdateAfterDelete => StepRole::ReadAfterDelete,
        StepRole::ReadAfterUpdateAfterDelete => StepRole::UpdateAfterDelete,
        StepRole::ReadAfterUpdateReadOnly => StepRole::UpdateReadOnly,
        _ => return None,
    })
}

/// `/pets/{petId}/` → `/pets/{}`: paths that name the same resource whatever their
/// parameters are called.
fn shape(path: &str) -> String {
    path.trim_end_matches('/')
        .split('/')
        .map(|s| {
            if s.starts_with('{') && s.ends_with('}') {
                "{}"
            } else {
                s
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// The names of a path template's parameters, in order.
fn path_parameters(path: &str) -> Vec<&str> {
    path.split('/')
        .filter_map(|s| s.strip_prefix('{')?.strip_suffix('}'))
        .collect()
}

/// One step sent, and what came back once it did.
#[derive(Debug)]
pub struct SentStep {
    pub role: StepRole,
    pub seq: u64,
    pub case: TestCase,
    pub answer: Option<Box<StepAnswer>>,
}

/// A step's recorded interaction, for the series oracles.
#[derive(Debug)]
pub struct StepAnswer {
    pub id: InteractionId,
    pub interaction: Interaction,
    pub body: Option<Vec<u8>>,
}

/// One series in progress.
#[derive(Debug)]
pub struct SeriesRun {
    pub name: String,
    pub kind: SeriesKind,
    pub resource: String,
    /// Its place in the run's list of life cycles; `None` for an `OPTIONS` series.
    lifecycle: Option<usize>,
    /// The roles still to send, in order.
    roles: Vec<StepRole>,
    /// The step in flight, by seq.
    in_flight: Option<u64>,
    pub steps: Vec<SentStep>,
    /// The first step's case.
    create: Option<TestCase>,
    /// The item's path values by position, with where each came from.
    item: Vec<(Value, Option<String>)>,
    memory: Memory,
    rng: ChaCha8Rng,
    /// The ordinary creation a life cycle started from, and its operation: a shorter series
    /// starts from it again.
    source: Option<(usize, TestCase)>,
    /// Whether it is a shorter series (one shortened again would be no shorter).
    shorter: bool,
}

/// What a shorter series of an ended life cycle starts from.
pub struct Shortening {
    lifecycle: usize,
    op: usize,
    source: TestCase,
    /// The roles the ended series sent and got answered, in order.
    roles: Vec<StepRole>,
}

impl SeriesRun {
    /// A series that has sent nothing yet, to send `roles` in this order.
    fn new(
        name: String,
        rng: ChaCha8Rng,
        kind: SeriesKind,
        resource: String,
        lifecycle: Option<usize>,
        mut roles: Vec<StepRole>,
        create: Option<TestCase>,
    ) -> SeriesRun {
        // Kept last first: the next role is popped off the end.
        roles.reverse();
        SeriesRun {
            name,
            kind,
            resource,
            lifecycle,
            roles,
            in_flight: None,
            steps: Vec::new(),
            create,
            item: Vec::new(),
            memory: Memory::default(),
            rng,
            source: None,
            shorter: false,
        }
    }

    fn over(&self) -> bool {
        self.in_flight.is_none() && self.roles.is_empty()
    }
}

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
}

/// What the access series of a run may do (docs/security.md).
#[derive(Debug, Clone, Default)]
pub struct Access {
    /// The identity that is not the default, for the steps "as another identity".
    pub other: Option<String>,
    /// Whether the default identity sends credentials, for the change sent without them.
    pub anonymous: bool,
    /// Whether a 401 to a request with the default identity's credentials is asked about
    /// (a `credentials` series).
    pub refused: bool,
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
                patch: find("PATCH", &item),
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
                read_only_settable: oracles.applies("mass_assignment")
                    && (find("PUT", &item).is_some() || find("PATCH", &item).is_some())
                    && !settable_read_only(api, op).is_empty(),
            });
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
        }
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
        // By index: starting a series needs `self` whole, and a creation is answered often.
        for i in 0..creates {
            let at = self.creators[&op][i];
            if self.lifecycles[at].started >= self.per_resource || self.active.len() >= PARALLEL {
                continue;
            }
            self.lifecycles[at].started += 1;
            let lifecycle = &self.lifecycles[at];
            let creating_put = method == "PUT";
            let mut roles = vec![StepRole::Create];
            if creating_put {
                roles.push(StepRole::CreateAgain);
            }
            roles.extend([StepRole::FollowLocation, StepRole::Read]);
            if lifecycle.started == 1 {
                roles.push(StepRole::Options);
            }
            if lifecycle.post.is_some() && lifecycle.list.is_some() {
                roles.extend([StepRole::FailedCreate, StepRole::ListAfterFailedCreate]);
            }
            if lifecycle.put.is_some() || lifecycle.patch.is_some() {
                roles.extend([StepRole::FailedUpdate, StepRole::ReadAfterFailedUpdate]);
            }
            if lifecycle.put.is_some() {
                roles.extend([
                    StepRole::Update,
                    StepRole::ReadAfterUpdate,
                    StepRole::UpdateAgain,
                    StepRole::ReadAfterUpdateAgain,
                ]);
            }
            if lifecycle.patch.is_some() {
                roles.extend([StepRole::Patch, StepRole::ReadAfterPatch]);
            }
            if lifecycle.read_only_settable {
                roles.extend([StepRole::UpdateReadOnly, StepRole::ReadAfterUpdateReadOnly]);
            }
            if lifecycle.delete.is_some() {
                roles.extend([
                    StepRole::Delete,
                    StepRole::ReadAfterDelete,
                    StepRole::DeleteAgain,
                ]);
                if lifecycle.patch.is_some() || lifecycle.put.is_some() {
                    roles.extend([
                        StepRole::UpdateAfterDelete,
                        StepRole::ReadAfterUpdateAfterDelete,
                    ]);
                }
            }
            let run = self.start_on_fresh(api, op, case, at, SeriesKind::Lifecycle, roles);
            run.source = Some((op, case.clone()));
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
            let roles = self.access_roles(api, at);
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

    /// The roles of the access series of life cycle `at`: none when there is no other
    /// identity and nothing to withhold, or nothing to ask.
    fn access_roles(&self, api: &Api, at: usize) -> Vec<StepRole> {
        let l = &self.lifecycles[at];
        let other = self.access.other.is_some();
        let update = l.put.or(l.patch);
        let protected = |op: usize| {
            api.operations
                .get(op)
                .is_some_and(|o| crate::oracle::declares_security(api, o))
        };
        let mut roles = vec![StepRole::Create, StepRole::Read];
        if other {
            roles.push(StepRole::ReadAsOther);
        }
        if self.access.anonymous && update.is_some_and(protected) {
            roles.extend([
                StepRole::UpdateAnonymous,
                StepRole::ReadAfterUpdateAnonymous,
            ]);
        }
        if other && update.is_some() {
            roles.extend([StepRole::UpdateAsOther, StepRole::ReadAfterUpdateAsOther]);
        }
        if other && l.delete.is_some() {
            roles.extend([
                StepRole::DeleteAsOther,
                StepRole::ReadAfterDeleteAsOther,
                StepRole::Delete,
                StepRole::ReadDeletedAsOther,
            ]);
        }
        if roles.len() == 2 {
            return Vec::new();
        }
        roles
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
        let mut wanted: Vec<StepRole> = needs
            .iter()
            .copied()
            .chain([StepRole::Create, at])
            .collect();
        let mut i = 0;
        while i < wanted.len() {
            if let Some(before) = comes_after(wanted[i]) {
                if !wanted.contains(&before) {
                    wanted.push(before);
                }
            }
            i += 1;
        }
        // The read that shows what the finding's step did.
        let shows = |r: &StepRole| {
            comes_after(*r) == Some(at)
                && (r.as_str().starts_with("read_after") || r.as_str().starts_with("list_after"))
        };
        let roles: Vec<StepRole> = plan
            .roles
            .iter()
            .copied()
            .filter(|r| wanted.contains(r) || shows(r))
            .collect();
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
        true
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
            StepRole::Create if !success || !learn_creation(api, run, seq) => run.roles.clear(),
            StepRole::Read if !success => run.roles.clear(),
            // Accepted after all (or no answer): the list after it judges nothing.
            StepRole::FailedCreate if success || status.is_none() => skip_until(
                run,
                &[
                    StepRole::FailedUpdate,
                    StepRole::Update,
                    StepRole::Patch,
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
                    StepRole::Delete,
                ],
            ),
            StepRole::Update | StepRole::UpdateAgain if !success => skip_until(
                run,
                &[StepRole::Patch, StepRole::UpdateReadOnly, StepRole::Delete],
            ),
            StepRole::Patch if !success => {
                skip_until(run, &[StepRole::UpdateReadOnly, StepRole::Delete])
            }
            StepRole::UpdateReadOnly if !success => skip_until(run, &[StepRole::Delete]),
            // Another identity may have deleted it already: who may read what is gone is
            // still asked.
            StepRole::Delete if run.kind == SeriesKind::Access => {}
            // Not refused this time: nothing to ask.
            StepRole::RefusedWithCredentials if status != Some(401) => run.roles.clear(),
            StepRole::Delete if !success || status == Some(202) => run.roles.clear(),
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
        let mut out = Vec::new();
        for run in &mut self.active {
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

/// See [`SeriesBook::still_accepted`].
fn still_accepted(
    accepted: &BTreeMap<usize, TestCase>,
    api: &Api,
    op: usize,
) -> Option<(usize, TestCase)> {
    let names_no_item = |i: &usize, method: Option<&str>| {
        api.operations
            .get(*i)
            .is_some_and(|o| !o.key.path.contains('{') && method.is_none_or(|m| o.key.method == m))
    };
    let (i, case) = accepted
        .iter()
        .find(|(i, _)| names_no_item(i, Some("GET")))
        .or_else(|| accepted.iter().find(|(i, _)| names_no_item(i, None)))
        .or_else(|| accepted.get_key_value(&op))?;
    let mut case = case.clone();
    case.series_step = None;
    Some((*i, case))
}

/// Learns the creation's answer into the series' memory and finds the item's path values;
/// false when the answer does not say which resource it made.
fn learn_creation(api: &Api, run: &mut SeriesRun, seq: u64) -> bool {
    let Some(step) = run.steps.last() else {
        return false;
    };
    let Some(answer) = &step.answer else {
        return false;
    };
    let Some(op) = api
        .operations
        .iter()
        .find(|o| o.key.name() == step.case.operation)
    else {
        return false;
    };
    let resource_op = api.operations.iter().find(|o| o.key.path == run.resource);
    let Some(resource_op) = resource_op else {
        return false;
    };
    let body: Option<Value> = answer
        .body
        .as_deref()
        .and_then(|b| serde_json::from_slice(b).ok());
    let location = answer
        .interaction
        .outcome
        .response()
        .and_then(|r| r.header("location"))
        .map(str::to_owned);
    let path_values: Vec<(&str, &Value)> = step
        .case
        .parameters
        .iter()
        .filter(|p| p.location == Location::Path)
        .map(|p| (p.name.as_str(), &p.value))
        .collect();
    let links = memory::links_of(api, op, answer.interaction.outcome.status());
    run.memory.learn_answer(&memory::Answer {
        method: &op.key.method,
        path: &op.key.path,
        seq,
        body: body.as_ref(),
        location: location.as_deref(),
        path_values: path_values.clone(),
        request: Some(&step.case),
        links: &links,
    });
    // Parents: the creation's own path values, by position; the item: what it answered
    // (or, for a PUT, the key it was sent to).
    let bindings = step
        .case
        .series_step
        .as_ref()
        .map(|s| s.bindings.clone())
        .unwrap_or_default();
    let created_names = path_parameters(&op.key.path);
    let item_names = path_parameters(&resource_op.key.path);
    let mut item = Vec::new();
    for (i, name) in item_names.iter().enumerate() {
        let last = i + 1 == item_names.len();
        if !last || op.key.method == "PUT" {
            let Some(from) = created_names.get(i) else {
                return false;
            };
            let Some((_, value)) = path_values.iter().find(|(n, _)| n == from) else {
                return false;
            };
            item.push(((*value).clone(), bindings.get(*from).cloned()));
            continue;
        }
        let fits = |v: &Value| matches!(v, Value::String(_) | Value::Number(_)).then(|| v.clone());
        let recalled = run.memory.recall(
            &resource_op.key.name(),
            name,
            Location::Path,
            &resource_op.key.path,
            &mut run.rng,
            &fits,
        );
        match recalled {
            Some((value, source)) => item.push((value, source.map(|b| b.to_text()))),
            None => return false,
        }
    }
    run.item = item;
    true
}

/// Builds the case of one step, or `None` when the step does not apply (and is skipped).
fn build_step(
    api: &Api,
    strategies: &Strategies<'_>,
    base_url: &str,
    run: &mut SeriesRun,
    lifecycle: Option<&Lifecycle>,
    updates: &BTreeMap<usize, TestCase>,
    role: StepRole,
) -> Option<(usize, TestCase)> {
    let index = run.steps.len() as u32;
    let (op, mut case) = match role {
        StepRole::Create
        | StepRole::RefusedWithCredentials
        | StepRole::WithoutDelay
        | StepRole::WithDelay
        | StepRole::WithLongerDelay
        | StepRole::AcceptedAfterRefusal
        | StepRole::CreateAgain
        | StepRole::UpdateAgain => resent_step(api, run, role)?,
        StepRole::FollowLocation => {
            return follow_location(api, strategies, base_url, run, lifecycle?.read, index)
        }
        StepRole::Options => options_step(api, strategies, run, lifecycle)?,
        StepRole::FailedCreate => failed_create_step(api, run, lifecycle?, updates)?,
        StepRole::ListAfterFailedCreate => {
            list_after_failed_create(api, strategies, run, lifecycle?)?
        }
        StepRole::FailedUpdate => {
            let l = lifecycle?;
            let update = l.put.or(l.patch)?;
            let mut case = item_case(api, strategies, run, update, updates.get(&update).cloned())?;
            break_one_field(api, &api.operations[update], &mut case, &[], &mut run.rng)?;
            (update, case)
        }
        StepRole::Read
        | StepRole::ReadAfterFailedUpdate
        | StepRole::ReadAfterUpdate
        | StepRole::ReadAfterUpdateAgain
        | StepRole::ReadAfterPatch
        | StepRole::ReadAfterDelete
        | StepRole::ReadAfterUpdateAfterDelete
        | StepRole::ReadAsOther
        | StepRole::ReadAfterUpdateAsOther
        | StepRole::ReadAfterUpdateAnonymous
        | StepRole::ReadAfterDeleteAsOther
        | StepRole::ReadDeletedAsOther
        | StepRole::ReadAfterUpdateReadOnly => {
            let read = lifecycle?.read;
            (read, item_case(api, strategies, run, read, None)?)
        }
        StepRole::Update | StepRole::Patch => {
            update_step(api, strategies, run, lifecycle?, updates, role)?
        }
        StepRole::UndeclaredMethod => undeclared_method_step(api, strategies, run, lifecycle?)?,
        StepRole::UpdateReadOnly => {
            update_read_only_step(api, strategies, run, lifecycle?, updates)?
        }
        StepRole::UpdateAsOther | StepRole::UpdateAnonymous => {
            // A PUT when there is one: it sends every field, so a read shows what changed.
            let l = lifecycle?;
            let update = l.put.or(l.patch)?;
            let base = updates.get(&update).cloned();
            (update, item_case(api, strategies, run, update, base)?)
        }
        StepRole::UpdateAfterDelete => {
            // A PATCH, which changes what exists; a PUT may create (and answer 2xx).
            let l = lifecycle?;
            let update = l.patch.or(l.put)?;
            let base = updates.get(&update).cloned();
            (update, item_case(api, strategies, run, update, base)?)
        }
        StepRole::Delete | StepRole::DeleteAgain | StepRole::DeleteAsOther => {
            let delete = lifecycle?.delete?;
            (delete, item_case(api, strategies, run, delete, None)?)
        }
        StepRole::Other => return None,
    };
    set_step(&mut case, &run.name, index);
    Some((op, case))
}

/// A step that sends again a case the series already has: its creation (as it is, or
/// asking for a delay), the case a refusal was about, the first step, or the last update.
fn resent_step(api: &Api, run: &SeriesRun, role: StepRole) -> Option<(usize, TestCase)> {
    let op_of = |name: &str| api.operations.iter().position(|o| o.key.name() == name);
    let case = match role {
        StepRole::AcceptedAfterRefusal => return run.source.clone(),
        StepRole::CreateAgain => run.steps.first()?.case.clone(),
        StepRole::UpdateAgain => run
            .steps
            .iter()
            .rfind(|s| s.role == StepRole::Update)?
            .case
            .clone(),
        StepRole::WithoutDelay | StepRole::WithDelay | StepRole::WithLongerDelay => {
            let mut case = run.create.clone()?;
            let seconds = match role {
                StepRole::WithoutDelay => 0,
                StepRole::WithDelay => TIMING_DELAY,
                _ => TIMING_LONGER_DELAY,
            };
            crate::mutate::awkward::set_delay(&mut case, seconds);
            case
        }
        // Create, RefusedWithCredentials.
        _ => run.create.clone()?,
    };
    Some((op_of(&case.operation)?, case))
}

/// An OPTIONS of the item (or, without a life cycle, of the resource path), with only its
/// path parameters.
fn options_step(
    api: &Api,
    strategies: &Strategies<'_>,
    run: &mut SeriesRun,
    lifecycle: Option<&Lifecycle>,
) -> Option<(usize, TestCase)> {
    let (op, mut case) = match lifecycle {
        Some(l) => {
            let case = item_case(api, strategies, run, l.read, None)?;
            (l.read, case)
        }
        None => {
            let op = api
                .operations
                .iter()
                .position(|o| o.key.path == run.resource)?;
            let case = plain_case(api, strategies, op, &mut run.rng)?;
            (op, case)
        }
    };
    case.method = "OPTIONS".into();
    case.body = None;
    case.parameters.retain(|p| p.location == Location::Path);
    Some((op, case))
}

/// The creation sent again with its names marked and one field of the wrong type: a
/// request the document says must be refused.
fn failed_create_step(
    api: &Api,
    run: &mut SeriesRun,
    lifecycle: &Lifecycle,
    updates: &BTreeMap<usize, TestCase>,
) -> Option<(usize, TestCase)> {
    let post = lifecycle.post?;
    let mut case = updates.get(&post).cloned()?;
    mark_names(api, &api.operations[post], &mut case, "-refused")?;
    let marked: Vec<String> = name_like_strings(&case);
    break_one_field(api, &api.operations[post], &mut case, &marked, &mut run.rng)?;
    Some((post, case))
}

/// A GET of the collection the refused creation was sent to.
fn list_after_failed_create(
    api: &Api,
    strategies: &Strategies<'_>,
    run: &mut SeriesRun,
    lifecycle: &Lifecycle,
) -> Option<(usize, TestCase)> {
    let list = lifecycle.list?;
    let failed = run
        .steps
        .iter()
        .rfind(|s| s.role == StepRole::FailedCreate)?
        .case
        .clone();
    let mut case = plain_case(api, strategies, list, &mut run.rng)?;
    // The collection of the refused creation: its path values, by position.
    let names = path_parameters(&api.operations[list].key.path);
    let values: Vec<&ParameterValue> = failed
        .parameters
        .iter()
        .filter(|p| p.location == Location::Path)
        .collect();
    let from = path_parameters(&failed.path);
    let mut bindings = BTreeMap::new();
    for (name, source) in names.iter().zip(&from) {
        let value = values.iter().find(|p| p.name == *source)?;
        if let Some(b) = failed
            .series_step
            .as_ref()
            .and_then(|s| s.bindings.get(*source))
        {
            bindings.insert((*name).to_owned(), b.clone());
        }
        case.parameters
            .retain(|p| !(p.location == Location::Path && p.name == *name));
        case.parameters.push(ParameterValue {
            location: Location::Path,
            name: (*name).to_owned(),
            value: value.value.clone(),
        });
    }
    case.parameters
        .sort_by(|a, b| (a.location, &a.name).cmp(&(b.location, &b.name)));
    case.series_step = Some(SeriesStep {
        series: String::new(),
        index: 0,
        bindings,
    });
    Some((list, case))
}

/// A PUT (`Update`) or a merge PATCH of one field (`Patch`) of the item.
fn update_step(
    api: &Api,
    strategies: &Strategies<'_>,
    run: &mut SeriesRun,
    lifecycle: &Lifecycle,
    updates: &BTreeMap<usize, TestCase>,
    role: StepRole,
) -> Option<(usize, TestCase)> {
    let update = if role == StepRole::Update {
        lifecycle.put?
    } else {
        lifecycle.patch?
    };
    let mut base = updates.get(&update).cloned();
    if role == StepRole::Patch {
        // A merge patch of one field: what it leaves out must stay as it was.
        if let Some(body) = base.as_mut().and_then(|c| c.body.as_mut()) {
            if let Value::Object(map) = &mut body.value {
                if map.len() > 1 {
                    let keep = run.rng.gen_range(0..map.len());
                    let key = map.keys().nth(keep).cloned().unwrap_or_default();
                    map.retain(|k, _| *k == key);
                }
            }
            body.sent_as = None;
        }
    }
    Some((update, item_case(api, strategies, run, update, base)?))
}

/// The next method the document does not declare for the item, sent to it (a PUT or a
/// PATCH with what the series last read).
fn undeclared_method_step(
    api: &Api,
    strategies: &Strategies<'_>,
    run: &mut SeriesRun,
    lifecycle: &Lifecycle,
) -> Option<(usize, TestCase)> {
    let sent = run
        .steps
        .iter()
        .filter(|s| s.role == StepRole::UndeclaredMethod)
        .count();
    let method = *lifecycle.undeclared.get(sent)?;
    let mut case = item_case(api, strategies, run, lifecycle.read, None)?;
    case.method = method.to_owned();
    case.parameters.retain(|p| p.location == Location::Path);
    // What a client would send to a PUT or PATCH it guessed: what it read.
    let read = run
        .steps
        .iter()
        .rev()
        .filter(|s| s.role == StepRole::Read)
        .find_map(|s| serde_json::from_slice::<Value>(s.answer.as_ref()?.body.as_deref()?).ok());
    case.body = match (method, read) {
        ("PUT" | "PATCH", Some(value)) => Some(crate::model::CaseBody {
            media_type: "application/json".into(),
            value,
            sent_as: None,
        }),
        _ => None,
    };
    Some((lifecycle.read, case))
}

/// The body of the last read of the item answered 2xx, before any update of read-only
/// fields.
fn last_good_read(run: &SeriesRun) -> Option<Value> {
    run.steps
        .iter()
        .rev()
        .filter(|s| {
            matches!(
                s.role,
                StepRole::Read
                    | StepRole::ReadAfterUpdate
                    | StepRole::ReadAfterUpdateAgain
                    | StepRole::ReadAfterPatch
                    | StepRole::ReadAfterFailedUpdate
            )
        })
        .find_map(|s| {
            let answer = s.answer.as_ref()?;
            let ok = answer
                .interaction
                .outcome
                .status()
                .is_some_and(|st| (200..300).contains(&st));
            ok.then(|| serde_json::from_slice::<Value>(answer.body.as_deref()?).ok())
                .flatten()
        })
}

/// An update that sets, to other values, the fields the read declares `readOnly`; `None`
/// when there is none to set.
fn update_read_only_step(
    api: &Api,
    strategies: &Strategies<'_>,
    run: &mut SeriesRun,
    lifecycle: &Lifecycle,
    updates: &BTreeMap<usize, TestCase>,
) -> Option<(usize, TestCase)> {
    // A PATCH when there is one: it changes only what it sends.
    let update = lifecycle.patch.or(lifecycle.put)?;
    let before = last_good_read(run)?;
    let base = updates.get(&update).cloned();
    let mut case = item_case(api, strategies, run, update, base)?;
    let item_values: Vec<Value> = run.item.iter().map(|(v, _)| v.clone()).collect();
    let body = case.body.as_mut()?;
    let map = body.value.as_object_mut()?;
    let mut set = 0;
    for (name, schema) in settable_read_only(api, &api.operations[lifecycle.read]) {
        let Some(old) = before.get(&name) else {
            continue;
        };
        // The item's own key moves the resource: not asked.
        if item_values
            .iter()
            .any(|v| crate::oracle::series::same_value(v, old))
        {
            continue;
        }
        if let Some(new) = other_value(&schema, old) {
            map.insert(name, new);
            set += 1;
        }
    }
    if set == 0 {
        return None;
    }
    body.sent_as = None;
    Some((update, case))
}

/// The top-level scalar properties the 2xx reply of `read` declares `readOnly`, with
/// their schemas: what a mass-assignment step sets (fields named like clocks or versions
/// aside, which change by themselves).
fn settable_read_only(api: &Api, read: &Operation) -> Vec<(String, Value)> {
    use crate::oracle::series;
    let mut out = Vec::new();
    for status in [200u16, 201] {
        for (name, schema) in series::reply_properties(api, read, status) {
            if !series::read_only(api, schema) || series::changes_by_itself(name) {
                continue;
            }
            let resolved = api.schemas.deref(schema, 64).unwrap_or(schema);
            let scalar = matches!(
                resolved.get("type").and_then(Value::as_str),
                Some("string" | "integer" | "number" | "boolean")
            );
            if scalar && !out.iter().any(|(n, _): &(String, Value)| n == name) {
                out.push((name.to_owned(), resolved.clone()));
            }
        }
        if !out.is_empty() {
            break;
        }
    }
    out
}

/// A value of `schema`'s type that differs from `old` and that a server would not make up
/// by itself; `None` for a string with a format probe cannot vary or an enumeration of one.
fn other_value(schema: &Value, old: &Value) -> Option<Value> {
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        return options
            .iter()
            .find(|v| !crate::oracle::series::same_value(v, old))
            .cloned();
    }
    match (schema.get("type").and_then(Value::as_str)?, old) {
        ("boolean", Value::Bool(b)) => Some(Value::Bool(!b)),
        ("integer", Value::Number(n)) => {
            Some(Value::from(n.as_i64().unwrap_or(0).wrapping_add(7919)))
        }
        ("number", Value::Number(n)) => {
            serde_json::Number::from_f64(n.as_f64().unwrap_or(0.0) + 7919.5).map(Value::Number)
        }
        ("integer", _) => Some(Value::from(7919)),
        ("string", _) => {
            let value = match schema.get("format").and_then(Value::as_str) {
                None => "probe-set-by-client",
                Some("uuid") => "0000f203-0000-4000-8000-00000000f203",
                Some("date-time") => "2001-02-03T04:05:06Z",
                Some("date") => "2001-02-03",
                Some("email") => "set-by-client@example.com",
                Some(_) => return None,
            };
            (old.as_str() != Some(value)).then(|| Value::String(value.to_owned()))
        }
        _ => None,
    }
}

/// Marks a case as step `index` of series `name`.
fn set_step(case: &mut TestCase, name: &str, index: u32) {
    let bindings = case
        .series_step
        .take()
        .map(|s| s.bindings)
        .unwrap_or_default();
    case.series_step = Some(SeriesStep {
        series: name.to_owned(),
        index,
        bindings,
    });
    case.strategy = Strategy::Series;
    case.intent = Intent::Unknown;
    case.mutation = None;
}

/// A case of operation `op` with only its required parameters, from the nominal sources.
fn plain_case(
    api: &Api,
    strategies: &Strategies<'_>,
    op: usize,
    rng: &mut ChaCha8Rng,
) -> Option<TestCase> {
    let plan = CasePlan {
        mode: Mode::Min,
        optional_ratio: 0.0,
    };
    let sources = [
        SourceStep::One(Source::Example),
        SourceStep::One(Source::Dictionaries),
        SourceStep::One(Source::Invention),
    ];
    build_case(
        &api.operations[op],
        &strategies.generator,
        plan,
        &Memory::default(),
        &strategies.dictionaries,
        &sources,
        rng,
    )
    .ok()
}

/// A case of operation `op` on the series' resource: `base` (or a new case with only the
/// required parameters) with the item's path values.
fn item_case(
    api: &Api,
    strategies: &Strategies<'_>,
    run: &mut SeriesRun,
    op: usize,
    base: Option<TestCase>,
) -> Option<TestCase> {
    let operation = &api.operations[op];
    let mut case = match base {
        Some(case) => case,
        None => plain_case(api, strategies, op, &mut run.rng)?,
    };
    let names = path_parameters(&operation.key.path);
    if names.len() != run.item.len() {
        return None;
    }
    let mut bindings = case
        .series_step
        .take()
        .map(|s| s.bindings)
        .unwrap_or_default();
    for (name, (value, binding)) in names.iter().zip(&run.item) {
        bindings.remove(*name);
        if let Some(b) = binding {
            bindings.insert((*name).to_owned(), b.clone());
        }
        case.origins
            .insert((*name).to_owned(), ValueOrigin::Observed);
        match case
            .parameters
            .iter_mut()
            .find(|p| p.location == Location::Path && p.name == *name)
        {
            Some(p) => p.value = value.clone(),
            None => case.parameters.push(ParameterValue {
                location: Location::Path,
                name: (*name).to_owned(),
                value: value.clone(),
            }),
        }
    }
    case.parameters
        .sort_by(|a, b| (a.location, &a.name).cmp(&(b.location, &b.name)));
    case.series_step = Some(SeriesStep {
        series: String::new(),
        index: 0,
        bindings,
    });
    Some(case)
}

/// A GET of the `Location` the creation answered, when it points into the API at a path a
/// GET of the document serves. A location elsewhere is never followed: probe sends only to
/// the API it was given.
fn follow_location(
    api: &Api,
    strategies: &Strategies<'_>,
    base_url: &str,
    run: &mut SeriesRun,
    read: usize,
    index: u32,
) -> Option<(usize, TestCase)> {
    let create = run.steps.first()?;
    let location = create
        .answer
        .as_ref()?
        .interaction
        .outcome
        .response()?
        .header("location")?
        .to_owned();
    // Carried by the GET the location names, else by the read's operation; either way
    // its path is the location itself, so no declaration judges it, and a replay follows
    // the location its creation answers then (`located`).
    let carrier = wire::location_path(&location, base_url, &api.base_path)
        .and_then(|path| get_serving(api, &path))
        .unwrap_or(read);
    let mut case = plain_case(api, strategies, carrier, &mut run.rng)?;
    case.parameters.retain(|p| p.location != Location::Path);
    case.origins
        .retain(|name, _| case.parameters.iter().any(|p| &p.name == name));
    let mut case = wire::located(case, &location, base_url, &api.base_path)?;
    set_step(&mut case, &run.name, index);
    Some((carrier, case))
}

/// Gives one field of a JSON object body a value of another type than the one its schema
/// declares (a string for a number or a boolean, a number for a string), so the document
/// says the request must be refused. `None` when the body has no such field.
fn break_one_field(
    api: &Api,
    op: &Operation,
    case: &mut TestCase,
    keep: &[String],
    rng: &mut ChaCha8Rng,
) -> Option<()> {
    let declared = crate::oracle::series::request_properties(api, op);
    let body = case.body.as_mut()?;
    let Value::Object(map) = &mut body.value else {
        return None;
    };
    let breakable: Vec<(String, Value)> = map
        .keys()
        .filter(|k| !keep.contains(k))
        .filter_map(|k| {
            let schema = api.schemas.deref(declared.get(k.as_str())?, 64)?;
            let wrong = match schema.get("type").and_then(Value::as_str)? {
                "string" => Value::from(12345),
                "integer" | "number" | "boolean" => Value::from("not-a-value"),
                _ => return None,
            };
            Some((k.clone(), wrong))
        })
        .collect();
    if breakable.is_empty() {
        return None;
    }
    let (key, wrong) = breakable[rng.gen_range(0..breakable.len())].clone();
    map.insert(key, wrong);
    body.sent_as = None;
    Some(())
}

/// The name-like fields of a JSON object body that hold strings.
fn name_like_strings(case: &TestCase) -> Vec<String> {
    match case.body.as_ref().map(|b| &b.value) {
        Some(Value::Object(map)) => map
            .iter()
            .filter(|(k, v)| name_like(k) && v.is_string())
            .map(|(k, _)| k.clone())
            .collect(),
        _ => Vec::new(),
    }
}

/// Appends `suffix` to every free name-like string of a JSON object body (where the schema
/// leaves room); `None` when there is none, so nothing would tell the result apart.
fn mark_names(api: &Api, op: &Operation, case: &mut TestCase, suffix: &str) -> Option<()> {
    let declared = crate::oracle::series::request_properties(api, op);
    let body = case.body.as_mut().filter(|b| b.sent_as.is_none())?;
    let Value::Object(map) = &mut body.value else {
        return None;
    };
    let mut marked = false;
    for (name, schema) in declared {
        if !name_like(name) {
            continue;
        }
        let Some(schema) = api.schemas.deref(schema, 64) else {
            continue;
        };
        let free = ["enum", "const", "format", "pattern"]
            .iter()
            .all(|k| schema.get(*k).is_none());
        if let (true, Some(Value::String(text))) = (free, map.get_mut(name)) {
            let room = schema
                .get("maxLength")
                .and_then(Value::as_u64)
                .is_none_or(|max| (text.chars().count() + suffix.len()) as u64 <= max);
            if room {
                text.push_str(suffix);
                marked = true;
            }
        }
    }
    marked.then_some(())
}

/// The GET of the document whose path template matches `path`.
fn get_serving(api: &Api, path: &str) -> Option<usize> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    api.operations.iter().position(|o| {
        let template: Vec<&str> = o.key.path.trim_matches('/').split('/').collect();
        o.key.method == "GET"
            && template.len() == segments.len()
            && template
                .iter()
                .zip(&segments)
                .all(|(t, s)| t == s || (t.starts_with('{') && t.ends_with('}') && !s.is_empty()))
    })
}

/// Makes the creation a new resource: name-like strings of a JSON body get the series'
/// number as a suffix (APIs that key resources by name would otherwise answer with the
/// one the ordinary request made), and a creating PUT gets a key of its own.
fn freshen(
    api: &Api,
    op: &Operation,
    case: &mut TestCase,
    n: u64,
    creating_put: bool,
    rng: &mut ChaCha8Rng,
) {
    // No name-like string to mark: the creation is sent as it was accepted.
    let _ = mark_names(api, op, case, &format!("-s{n}"));
    if creating_put {
        // The key: the item's own (last) path parameter, generated anew.
        let Some(last) = path_parameters(&op.key.path).last().map(|s| s.to_string()) else {
            return;
        };
        let Some(parameter) = op.parameters.iter().find(|p| p.name == last) else {
            return;
        };
        let generator = crate::schema::Generator::new(
            &api.schemas,
            crate::schema::GenerateOptions {
                max_depth: 4,
                max_string: 24,
                max_items: 2,
                direction: crate::schema::Direction::Request,
            },
        );
        if let Ok(value) = generator.generate_path_value(&parameter.schema, Mode::Random, rng) {
            if let Some(p) = case
                .parameters
                .iter_mut()
                .find(|p| p.location == Location::Path && p.name == last)
            {
                p.value = crate::model::canonical_json(value);
                case.origins.insert(last.clone(), ValueOrigin::Invention);
                if let Some(step) = case.series_step.as_mut() {
                    step.bindings.remove(&last);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_ignore_parameter_names() {
        assert_eq!(shape("/pets/{petId}/"), "/pets/{}");
        assert_eq!(shape("/a/{x}/b/{y}"), shape("/a/{id}/b/{bid}"));
        assert_eq!(path_parameters("/a/{x}/b/{y}"), vec!["x", "y"]);
    }
}
