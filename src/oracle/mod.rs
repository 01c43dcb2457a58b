//! Oracles: pure judges of one recorded interaction against the operation model.
//!
//! An oracle sees the operation, the test case and the interaction (with its response body
//! bytes) and nothing else: no clock, no network, no store. The run judges each
//! interaction right after recording it, and `recheck` calls the very same code over a
//! stored run, so a finding never depends on when it was judged.
//!
//! Every oracle has a stable name, a version (bumped whenever what it reports changes), a
//! `checks.<name>` switch and, where one exists, its Web Fuzzing Commons code
//! (`docs/oracles.md` lists them). Each lives in a file of its own here (`server_error.rs`,
//! ...) as a [`Judge`], registered once in [`REGISTRY`]; a test holds that every registered
//! oracle has its setting and its page. Findings are made distinct by [`collect`].
//!
//! Depends on: `spec` (operation model), `schema` (validation), `model`, `settings`, `pinpoint`
//! (whether the document explains a refusal), and
//! `mutate` for the names of its kinds and the SQL waits its pushing values carry, and
//! `check` for the checks a user wrote (`user.rs`), `jwt` for the weak key that signed a
//! forged token (`token_forgery.rs`).

pub mod collect;
pub mod normalise;
pub mod programs;
pub mod series;
pub mod traffic;
pub mod user;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::model::{
    Intent, Interaction, Outcome, ResponseRecord, Severity, TestCase, TransportErrorKind,
};
use crate::schema::{Direction, ValidateOptions, Validator};
use crate::settings::{declared, Declared, Kind, OracleOptions, Settings};
use crate::spec::{Api, Operation};

pub use crate::spec::is_json;
pub use collect::FindingCollector;
pub use content_type_declared::INFO as CONTENT_TYPE_DECLARED;
pub use credential_reflected::INFO as CREDENTIAL_REFLECTED;
pub use duplicate_value_unhandled::implies_uniqueness;
pub use ignored_authentication::declares_security;
pub use invalid_data_accepted::INFO as INVALID_DATA_ACCEPTED;
pub use login_not_rate_limited::login_refused;
pub use max_response_time::INFO as MAX_RESPONSE_TIME;
pub use programs::{Late, ProgramChecks};
pub use required_header_missing::INFO as REQUIRED_HEADER_MISSING;
pub use response_schema_conformance::INFO as RESPONSE_SCHEMA_CONFORMANCE;
pub use server_error::INFO as SERVER_ERROR;
pub use status_code_declared::INFO as STATUS_CODE_DECLARED;
pub use transport_failure::INFO as TRANSPORT_FAILURE;
pub use user::{CheckCounts, UserChecks};
pub use valid_data_refused::{refuses_the_values, INFO as VALID_DATA_REFUSED};

/// What an oracle is: its identity in findings and in settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OracleInfo {
    /// Stable name, also the setting `checks.<name>`.
    pub name: &'static str,
    /// Web Fuzzing Commons code, where one exists.
    pub code: Option<&'static str>,
    /// Bumped whenever what the oracle reports changes.
    pub version: u32,
    pub severity: Severity,
    /// One line for `docs/oracles.md` and the reports.
    pub title: &'static str,
    /// Its switch, `checks.<name>`: declared here, listed by [`crate::catalogue::all`].
    pub setting: Declared,
}

/// One judge of what an API answered. Each oracle is a file of its own in `oracle/`, with
/// its [`OracleInfo`] and its `checks.<name>` setting; adding one is that file and a line
/// in [`REGISTRY`].
trait Judge: Sync {
    fn info(&self) -> &'static OracleInfo;

    /// Judges a reply.
    fn reply(&self, _ctx: &Context<'_>, _with: &Oracles) -> Option<Observation> {
        None
    }

    /// Judges a reply that may show several findings at once (one per field, say); by
    /// default, what [`Judge::reply`] sees.
    fn replies(&self, ctx: &Context<'_>, with: &Oracles) -> Vec<Observation> {
        self.reply(ctx, with).into_iter().collect()
    }

    /// The steps a series needs, answered, for this series oracle to judge it (empty for
    /// an exchange oracle): what the report counts as a scenario it ran.
    fn series_needs(&self) -> &'static [crate::model::StepRole] {
        &[]
    }

    /// Judges the steps of a series together (a series oracle).
    fn series(&self, _view: &series::SeriesView<'_>) -> Vec<series::SeriesObservation> {
        Vec::new()
    }

    /// Judges a request that got no HTTP answer.
    fn no_reply(&self, _exchange: &Exchange<'_>, _kind: TransportErrorKind) -> Option<Observation> {
        None
    }

    /// Whether the settings switch it on (`checks.<name>`, by default).
    fn enabled_by(&self, settings: &Settings, _options: &OracleOptions) -> bool {
        settings.switch(self.info().name)
    }

    /// Whether a smaller request could show its finding as well (the shrinker sends
    /// smaller ones only then); not for a finding about timing or the transport.
    fn shrinks(&self) -> bool {
        true
    }

    /// Whether it judges the reply to a body sent under a media type the operation does
    /// not take (which is not held to what the document declares for bodies it takes).
    fn judges_foreign_media(&self) -> bool {
        true
    }

    /// Whether it judges an answer that asks probe to wait (429, or 503 with
    /// `Retry-After`): the API pacing its clients, obeyed rather than judged.
    fn judges_throttled(&self) -> bool {
        false
    }
}

/// Declares each oracle's module and lists its judge in [`REGISTRY`]: one line an oracle.
macro_rules! registry {
    ($($module:ident :: $judge:ident),* $(,)?) => {
        $(mod $module;)*

        /// Every oracle of this build, in report order.
        static REGISTRY: &[&dyn Judge] = &[$(&$module::$judge),*];
    };
}

registry! {
    server_error::ServerError,
    status_code_declared::StatusCodeDeclared,
    content_type_declared::ContentTypeDeclared,
    response_schema_conformance::ResponseSchemaConformance,
    required_header_missing::RequiredHeaderMissing,
    invalid_data_accepted::InvalidDataAccepted,
    valid_data_refused::ValidDataRefused,
    transport_failure::TransportFailure,
    credential_reflected::CredentialReflected,
    reply_leaks::ReplyLeaks,
    reflected_markup::ReflectedMarkup,
    ignored_authentication::IgnoredAuthentication,
    max_response_time::MaxResponseTime,
    body_missing::BodyMissing,
    created_not_retrievable::CreatedNotRetrievable,
    updated_not_found::UpdatedNotFound,
    deleted_still_available::DeletedStillAvailable,
    repeated_create_put::RepeatedCreatePut,
    misleading_create_put::MisleadingCreatePut,
    partial_update_put::PartialUpdatePut,
    non_idempotent_put::NonIdempotentPut,
    invalid_merge_patch::InvalidMergePatch,
    invalid_location::InvalidLocation,
    invalid_allow::InvalidAllow,
    failed_update_side_effects::FailedUpdateSideEffects,
    failed_create_side_effects::FailedCreateSideEffects,
    other_identity_access::OtherIdentityAccess,
    existence_leaked::ExistenceLeaked,
    valid_credentials_refused::ValidCredentialsRefused,
    mass_assignment::MassAssignment,
    hidden_endpoint::HiddenEndpoint,
    time_based_injection::TimeBasedInjection,
    secret_in_reply::SecretInReply,
    user_enumeration::UserEnumeration,
    login_not_rate_limited::LoginNotRateLimited,
    token_forgery::TokenForgery,
    duplicate_value_unhandled::DuplicateValueUnhandled,
    credential_changed_by_other::CredentialChangedByOther,
}

/// Every oracle of this build, in report order.
pub static CATALOGUE: std::sync::LazyLock<Vec<&'static OracleInfo>> =
    std::sync::LazyLock::new(|| REGISTRY.iter().map(|j| j.info()).collect());

/// Whether the oracle `name` judges series (rather than one exchange).
pub fn judges_series(name: &str) -> bool {
    REGISTRY
        .iter()
        .any(|j| j.info().name == name && !j.series_needs().is_empty())
}

/// The steps the series oracle `name` needs answered to judge a series (empty for an
/// exchange oracle or a name this build does not know).
pub fn series_needs(name: &str) -> &'static [crate::model::StepRole] {
    REGISTRY
        .iter()
        .find(|j| j.info().name == name)
        .map_or(&[], |j| j.series_needs())
}

/// Whether a smaller request could show a finding of the oracle `name` as well (false for
/// findings about timing or the transport, and for a name this build does not know). A
/// declarative check the user wrote (`check:<name>`) shrinks: each candidate is judged by
/// it in its own step, so a candidate replaces the request only when the check says it
/// still fails, with the same message.
pub fn shrinks(name: &str) -> bool {
    match REGISTRY.iter().find(|j| j.info().name == name) {
        Some(j) => j.shrinks(),
        None => user::is_declarative(name),
    }
}

/// The oracles `settings` switch on (`checks.<name>`): what a judging with the whole
/// catalogue applies, whatever the operation model.
pub fn switched_on(settings: &Settings) -> Vec<&'static OracleInfo> {
    let options = settings.resolved().oracles;
    REGISTRY
        .iter()
        .filter(|j| j.enabled_by(settings, &options))
        .map(|j| j.info())
        .collect()
}

/// Looks an oracle up by name or code.
pub fn find(name_or_code: &str) -> Option<&'static OracleInfo> {
    CATALOGUE.iter().copied().find(|o| {
        o.name == name_or_code || o.code.is_some_and(|c| c.eq_ignore_ascii_case(name_or_code))
    })
}

/// One thing an oracle saw in one interaction.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    pub oracle: &'static OracleInfo,
    pub message: String,
    pub key_by_message: String,
    pub key_by_kind: String,
    /// Which observation of one finding describes it: the highest rank, then the earliest
    /// interaction (0 for every oracle but `max_response_time`, whose rank is the time, so
    /// its finding names the slowest answer).
    pub rank: u64,
}

/// What one judgement looks at.
pub struct Exchange<'a> {
    /// The interaction's id in the store (a program check names it in a late finding).
    pub id: crate::ids::InteractionId,
    pub operation: &'a Operation,
    pub case: &'a TestCase,
    pub interaction: &'a Interaction,
    /// The response body bytes (resolved from the store when it was a blob).
    pub response_body: Option<&'a [u8]>,
    /// The response body read as JSON, when the caller has read it already (`probe run`
    /// reads each 2xx body to learn from it): judging then does not read it again.
    pub response_json: Option<&'a Value>,
}

/// (operation, response entry, media type) indices: one compiled response schema.
type ResponseSlot = (usize, usize, usize);

/// The oracles switched on for one judging, with their compiled schemas.
pub struct Oracles {
    api: Arc<Api>,
    judges: Vec<&'static dyn Judge>,
    enabled: Vec<&'static OracleInfo>,
    /// What the judges read besides their switches.
    options: OracleOptions,
    /// Looked up for every answer: foldhash rather than SipHash (keys come from the
    /// document, not from the API under test).
    operations: HashMap<String, usize, foldhash::fast::RandomState>,
    validators: Mutex<HashMap<ResponseSlot, Option<Arc<Validator>>, foldhash::fast::RandomState>>,
    /// The checks the user wrote (`[[check]]`, `--checks`), judged after the oracles.
    user: Option<UserChecks>,
    /// Those of them that are programs, running beside the judging.
    programs: Option<ProgramChecks>,
    /// The exchanges the sequence oracles judge over ordinary traffic, noted as they are
    /// judged and judged together at [`Oracles::finish`] (`traffic.rs`); `None` when
    /// neither of those oracles is on.
    traffic: Option<Mutex<Vec<traffic::Visit>>>,
}

impl Oracles {
    /// The oracles `settings` switch on (`checks.<name>`), optionally only `only`.
    pub fn new(
        api: Arc<Api>,
        settings: &Settings,
        only: Option<&[&'static OracleInfo]>,
    ) -> Oracles {
        Oracles::with_options(api, settings, settings.resolved().oracles, only)
    }

    /// The oracles `settings` switch on, given the options resolved from them once (by
    /// [`Settings::options`]): the registry resolves its enabled set here.
    pub fn with_options(
        api: Arc<Api>,
        settings: &Settings,
        options: OracleOptions,
        only: Option<&[&'static OracleInfo]>,
    ) -> Oracles {
        let judges: Vec<&'static dyn Judge> = REGISTRY
            .iter()
            .copied()
            .filter(|j| j.enabled_by(settings, &options))
            .filter(|j| only.is_none_or(|list| list.iter().any(|x| x.name == j.info().name)))
            .collect();
        let enabled: Vec<&'static OracleInfo> = judges.iter().map(|j| j.info()).collect();
        let switches = traffic_switches(&enabled);
        let traffic = (switches.deleted_still_available || switches.created_not_retrievable)
            .then(|| Mutex::new(Vec::new()));
        let operations = api
            .operations
            .iter()
            .enumerate()
            .map(|(i, op)| (op.key.name(), i))
            .collect();
        Oracles {
            api,
            judges,
            enabled,
            options,
            operations,
            validators: Mutex::new(HashMap::default()),
            user: None,
            programs: None,
            traffic,
        }
    }

    /// Judges with the user's checks too (`check:<name>` oracles).
    pub fn with_checks(mut self, checks: Arc<Vec<crate::check::Check>>) -> Oracles {
        if checks.is_empty() {
            return self;
        }
        self.programs = ProgramChecks::new(&checks);
        let user = UserChecks::new(checks);
        self.enabled.extend(user.infos());
        self.user = Some(user);
        self
    }

    /// Program checks wait for room in their queue (up to their deadline) rather than keep
    /// exchanges for the end: for a recheck, where nothing is sent and waiting costs
    /// nothing.
    pub fn waiting_for_programs(mut self) -> Oracles {
        self.programs = self.programs.map(ProgramChecks::waiting);
        self
    }

    /// Observations of exchanges judged earlier, made since the last call (a program
    /// check's verdicts come when the program gives them); the caller collects each with
    /// the exchange it names.
    pub fn late(&self) -> Vec<Late> {
        self.programs
            .as_ref()
            .map(ProgramChecks::late)
            .unwrap_or_default()
    }

    /// Ends what judges beside the judging (program checks) and gives its last late
    /// observations: called once, when every exchange has been judged and before the
    /// finding set is made.
    pub fn finish(&self) -> Vec<Late> {
        let mut late = self
            .programs
            .as_ref()
            .map(ProgramChecks::finish)
            .unwrap_or_default();
        if let Some(traffic) = &self.traffic {
            let visits = match traffic.lock() {
                Ok(mut v) => std::mem::take(&mut *v),
                Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
            };
            let on = traffic_switches(&self.enabled);
            late.extend(traffic::judge(&self.api, visits, &on));
        }
        late
    }

    /// How each program check that failed (crashed, hung, wrote garbage, ended early)
    /// failed, naming the check, with the exchanges it did not judge.
    pub fn check_failures(&self) -> Vec<String> {
        self.programs
            .as_ref()
            .map(ProgramChecks::failures)
            .unwrap_or_default()
    }

    /// What each user check did so far (empty without checks).
    pub fn check_counts(&self) -> Vec<CheckCounts> {
        let mut counts = self
            .user
            .as_ref()
            .map(UserChecks::counts)
            .unwrap_or_default();
        if let Some(programs) = &self.programs {
            let mut of_programs = programs.counts();
            for c in &mut counts {
                if let Some(p) = of_programs.remove(&c.name) {
                    *c = p;
                }
            }
        }
        counts
    }

    /// The user checks' definitions (oracle name → text), stored with the finding set.
    pub fn check_definitions(&self) -> Vec<(String, String)> {
        self.user
            .iter()
            .flat_map(|u| u.definitions())
            .map(|(n, t)| (n.to_string(), t.to_string()))
            .collect()
    }

    /// The oracles applied, for the finding set.
    pub fn enabled(&self) -> &[&'static OracleInfo] {
        &self.enabled
    }

    /// Whether the oracle `name` is applied: what the engine asks before it plans the
    /// requests only that oracle judges.
    pub fn applies(&self, name: &str) -> bool {
        self.enabled.iter().any(|o| o.name == name)
    }

    /// What the judges read besides their switches.
    fn options(&self) -> &OracleOptions {
        &self.options
    }

    /// The operation a case names.
    pub fn operation(&self, name: &str) -> Option<&Operation> {
        self.operations.get(name).map(|&i| &self.api.operations[i])
    }

    /// Judges one exchange with every enabled oracle.
    pub fn judge(&self, exchange: &Exchange<'_>) -> Vec<Observation> {
        let json = ResponseJson::new(exchange);
        let mut observations = self.judge_builtin(exchange, &json);
        if let Some(user) = &self.user {
            observations.extend(user.judge(exchange, &json));
        }
        if let Some(programs) = &self.programs {
            programs.submit(exchange);
        }
        if let Some(traffic) = &self.traffic {
            if let Some(visit) = traffic::visit(exchange) {
                match traffic.lock() {
                    Ok(mut v) => v.push(visit),
                    Err(poisoned) => poisoned.into_inner().push(visit),
                }
            }
        }
        observations
    }

    fn judge_builtin(&self, exchange: &Exchange<'_>, json: &ResponseJson<'_>) -> Vec<Observation> {
        let response = match &exchange.interaction.outcome {
            Outcome::Response(response) => response,
            Outcome::TransportError { kind, .. } => {
                return self
                    .judges
                    .iter()
                    .filter_map(|j| j.no_reply(exchange, *kind))
                    .collect();
            }
        };
        // A method or a path the document does not declare for the operation (a series'
        // `OPTIONS`, or a `Location` it follows) has no declared answer to be held to: only
        // series oracles read its reply.
        if !exchange
            .case
            .method
            .eq_ignore_ascii_case(&exchange.operation.key.method)
            || exchange.case.path != exchange.operation.key.path
        {
            return Vec::new();
        }
        let ctx = Context::new(exchange, response, json);
        let foreign_media = exchange
            .case
            .mutation
            .as_ref()
            .is_some_and(|m| m.kind == crate::model::MutationKind::WrongContentType);
        let throttled = response.asks_to_wait();
        self.judges
            .iter()
            .filter(|j| !foreign_media || j.judges_foreign_media())
            .filter(|j| !throttled || j.judges_throttled())
            .flat_map(|j| j.replies(&ctx, self))
            .collect()
    }

    /// Judges the steps of one series with every enabled series oracle; each observation
    /// names the step (an index into `steps`) it is about.
    pub fn judge_series(
        &self,
        series: &crate::model::Series,
        steps: &[series::StepData],
    ) -> Vec<series::SeriesObservation> {
        let view = series::SeriesView {
            api: &self.api,
            series,
            steps: steps
                .iter()
                .map(|s| series::StepView {
                    role: s.role,
                    operation: self.operation(&s.case.operation),
                    case: &s.case,
                    interaction: &s.interaction,
                    body: s.body.as_deref(),
                })
                .collect(),
        };
        self.judges.iter().flat_map(|j| j.series(&view)).collect()
    }

    /// The series oracles that could judge a series with these steps (each step it needs
    /// is there and answered).
    pub fn series_judged_by(&self, steps: &[series::StepData]) -> Vec<&'static OracleInfo> {
        self.judges
            .iter()
            .filter(|j| {
                let needs = j.series_needs();
                !needs.is_empty()
                    && needs.iter().all(|role| {
                        steps
                            .iter()
                            .any(|s| s.role == *role && s.interaction.outcome.status().is_some())
                    })
            })
            .map(|j| j.info())
            .collect()
    }

    /// The API judged against.
    pub fn api(&self) -> &Api {
        &self.api
    }

    fn validator(
        &self,
        op: usize,
        resp: usize,
        media: usize,
        schema: &Value,
    ) -> Option<Arc<Validator>> {
        let key = (op, resp, media);
        if let Some(v) = self.validators.lock().ok()?.get(&key) {
            return v.clone();
        }
        // Compiled outside the lock: compilation can be slow for large documents.
        let compiled = Validator::new_for(
            &self.api.schemas,
            schema,
            ValidateOptions {
                check_formats: self.options.check_formats,
            },
            Direction::Response,
        )
        .ok()
        .map(Arc::new);
        self.validators.lock().ok()?.insert(key, compiled.clone());
        compiled
    }
}

/// The response body read as JSON at most once per judging, by whichever judge asks first
/// (a built-in oracle or a user check): in a recheck, the schema's oracle, the secrets'
/// oracle and the checks each parsed it again.
pub(crate) struct ResponseJson<'a> {
    /// What the caller read already ([`Exchange::response_json`]).
    given: Option<&'a Value>,
    body: Option<&'a [u8]>,
    read: std::cell::OnceCell<Result<Value, serde_json::Error>>,
}

impl<'a> ResponseJson<'a> {
    pub(crate) fn new(exchange: &Exchange<'a>) -> ResponseJson<'a> {
        ResponseJson {
            given: exchange.response_json,
            body: exchange.response_body.filter(|b| !b.is_empty()),
            read: std::cell::OnceCell::new(),
        }
    }

    /// The body as JSON, or why it is not JSON; `None` when there is no body.
    pub(crate) fn get(&self) -> Option<Result<&Value, &serde_json::Error>> {
        if let Some(value) = self.given {
            return Some(Ok(value));
        }
        let body = self.body?;
        Some(
            self.read
                .get_or_init(|| serde_json::from_slice(body))
                .as_ref(),
        )
    }
}

/// Facts about one response every oracle needs.
struct Context<'a> {
    exchange: &'a Exchange<'a>,
    response: &'a ResponseRecord,
    body: Option<&'a [u8]>,
    /// The body as JSON, read once for the oracles (and checks) that ask.
    json: &'a ResponseJson<'a>,
    /// The media type of the response, lower-case, without parameters; read once for the
    /// oracles that ask.
    content_type: std::cell::OnceCell<Option<std::borrow::Cow<'a, str>>>,
}

impl<'a> Context<'a> {
    fn new(
        exchange: &'a Exchange<'a>,
        response: &'a ResponseRecord,
        json: &'a ResponseJson<'a>,
    ) -> Self {
        Context {
            exchange,
            response,
            body: exchange.response_body.filter(|b| !b.is_empty()),
            json,
            content_type: std::cell::OnceCell::new(),
        }
    }

    fn content_type(&self) -> Option<&str> {
        self.content_type
            .get_or_init(|| {
                self.response
                    .header("content-type")
                    .map(essence)
                    .filter(|v| !v.is_empty())
                    // Most servers write it in lower case already: copied only when not.
                    .map(|v| match v.bytes().any(|b| b.is_ascii_uppercase()) {
                        true => std::borrow::Cow::Owned(v.to_ascii_lowercase()),
                        false => std::borrow::Cow::Borrowed(v),
                    })
            })
            .as_deref()
    }

    fn observation(
        &self,
        oracle: &'static OracleInfo,
        message: String,
        detail: &str,
    ) -> Observation {
        let op = &self.exchange.case.operation;
        let status = self.response.status;
        // The reply's text, read only where a key needs it (a copy of the body for every
        // observation was most of what judging an answer cost against a fast API).
        let read = std::cell::OnceCell::new();
        let text = || {
            read.get_or_init(|| {
                self.body
                    .map(|b| String::from_utf8_lossy(&b[..b.len().min(OBSERVED_TEXT)]))
                    .unwrap_or_default()
            })
            .as_ref()
        };
        // The parsed body stands for the text only when the text is the whole body.
        let parsed = self
            .exchange
            .response_json
            .filter(|_| self.body.is_some_and(|b| b.len() <= OBSERVED_TEXT));
        // Both keys start alike: `oracle|operation|status|detail|`.
        let mut by_message =
            String::with_capacity(oracle.name.len() + op.len() + detail.len() + 16);
        let _ = write!(by_message, "{}|{}|{}|{}|", oracle.name, op, status, detail);
        let mut by_kind = by_message.clone();
        // The reply's text tells server errors apart (one stack trace from another); for
        // the other oracles the detail (schema place, content type, header) already does,
        // and the body would split one fault into one finding per generated value.
        if oracle.name == SERVER_ERROR.name {
            let echoes = normalise::sent_strings(self.exchange.case);
            by_message.push_str(&normalise::cause(text(), parsed, &echoes));
        }
        // A parsed object names its title itself; other replies are read as text.
        let title = match parsed {
            Some(json) if json.is_object() => normalise::error_title_with("", Some(json)),
            _ => normalise::error_title_with(text(), parsed),
        };
        by_kind.push_str(&title);
        Observation {
            oracle,
            message,
            key_by_message: by_message,
            key_by_kind: by_kind,
            rank: 0,
        }
    }
}

/// An observation whose keys are `oracle|operation|detail`: one distinct finding per
/// operation and detail, whatever the status or the reply.
/// Which sequence oracles over ordinary traffic `enabled` switches on.
fn traffic_switches(enabled: &[&'static OracleInfo]) -> traffic::Switches {
    let on = |info: &OracleInfo| enabled.iter().any(|e| e.name == info.name);
    traffic::Switches {
        deleted_still_available: on(&deleted_still_available::INFO),
        created_not_retrievable: on(&created_not_retrievable::INFO),
    }
}

fn per_operation(
    oracle: &'static OracleInfo,
    operation: &str,
    detail: &str,
    message: String,
) -> Observation {
    let key = format!("{}|{operation}|{detail}", oracle.name);
    Observation {
        oracle,
        message,
        key_by_message: key.clone(),
        key_by_kind: key,
        rank: 0,
    }
}

/// The bytes of a body an observation reads as text for its keys.
const OBSERVED_TEXT: usize = 4096;

/// `: <title>` of the error the body names (empty when it names none), for a message.
fn error_title_suffix(ctx: &Context<'_>) -> String {
    let title = normalise::raw_error_title_with(
        &ctx.body
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default(),
        ctx.exchange.response_json,
    );
    if title.is_empty() {
        String::new()
    } else {
        format!(": {title}")
    }
}

/// Whether a response's media type (lower case, no parameters) falls under a declared one,
/// which may use wildcards (`*/*`, `application/*`) and parameters.
pub fn media_matches(declared: &str, actual: &str) -> bool {
    // Compared in place, without a lower-case copy: this runs for every answer.
    let declared = essence(declared);
    if declared.is_empty() || declared == "*/*" || declared.eq_ignore_ascii_case(actual) {
        return true;
    }
    match (declared.split_once('/'), actual.split_once('/')) {
        (Some((dt, ds)), Some((at, as_))) => {
            (dt == "*" || dt.eq_ignore_ascii_case(at))
                && (ds == "*"
                    || ds.eq_ignore_ascii_case(as_)
                    || (ds.starts_with("*+") && ends_with_ignore_case(as_, &ds[1..])))
        }
        _ => false,
    }
}

/// A media type without its parameters or surrounding space, as written.
fn essence(media_type: &str) -> &str {
    media_type.split(';').next().unwrap_or("").trim()
}

fn ends_with_ignore_case(text: &str, suffix: &str) -> bool {
    text.len() >= suffix.len()
        && text.as_bytes()[text.len() - suffix.len()..].eq_ignore_ascii_case(suffix.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_findings_about_what_was_sent_shrink() {
        assert!(shrinks("server_error"));
        assert!(shrinks("valid_data_refused"));
        assert!(!shrinks("transport_failure"));
        assert!(!shrinks("max_response_time"));
        assert!(!shrinks("no_such_oracle"));
    }

    #[test]
    fn media_types_match_with_wildcards_and_parameters() {
        assert!(media_matches("application/json", "application/json"));
        assert!(media_matches(
            "application/json; charset=utf-8",
            "application/json"
        ));
        assert!(media_matches("application/*", "application/json"));
        assert!(media_matches("*/*", "text/plain"));
        assert!(media_matches(
            "application/*+json",
            "application/problem+json"
        ));
        assert!(!media_matches("application/json", "text/plain"));
        assert!(!media_matches("application/xml", "application/json"));
        // A document may write a media type in any case; answers are read in lower case.
        assert!(media_matches("Application/JSON", "application/json"));
        assert!(media_matches(
            "APPLICATION/*+JSON",
            "application/problem+json"
        ));
        assert!(media_matches(
            " application/json ;charset=utf-8",
            "application/json"
        ));
        assert!(!media_matches("application/*+json", "application/json"));
        assert!(!media_matches("text/*", "application/json"));
    }

    #[test]
    fn json_media_types() {
        assert!(is_json("application/json"));
        assert!(is_json("application/problem+json"));
        assert!(is_json("Application/JSON; charset=utf-8"));
        assert!(is_json("application/vnd.api+JSON"));
        assert!(is_json("text/json"));
        assert!(!is_json("text/plain"));
        assert!(!is_json("json"));
        assert!(!is_json("application/jsonl"));
    }

    /// The document the observation-key tests judge against: one GET whose 200 declares a
    /// JSON object with an integer `id` and a required header.
    const KEYS_DOCUMENT: &[u8] = br#"
openapi: 3.1.0
info: { title: keys, version: "1" }
paths:
  /items/{id}:
    get:
      operationId: getItem
      parameters:
        - { name: id, in: path, required: true, schema: { type: integer } }
      responses:
        "200":
          description: ok
          headers:
            X-Rate: { required: true, schema: { type: integer } }
          content:
            application/json:
              schema:
                type: object
                required: [id]
                properties: { id: { type: integer } }
"#;

    /// The oracles (default settings) and the API of `KEYS_DOCUMENT`.
    fn keys_oracles() -> (Arc<crate::spec::Api>, Oracles) {
        let api =
            Arc::new(crate::spec::parse(KEYS_DOCUMENT, "keys.yaml", None).expect("document loads"));
        let oracles = Oracles::new(api.clone(), &Settings::default(), None);
        (api, oracles)
    }

    /// A GET of `op` with no parameters, sent with `intent` (and `mutation`, when changed).
    fn keys_case(
        op: &Operation,
        intent: Intent,
        mutation: Option<crate::model::Mutation>,
    ) -> TestCase {
        TestCase {
            operation: op.key.name(),
            method: "GET".into(),
            path: op.key.path.clone(),
            parameters: Vec::new(),
            body: None,
            strategy: crate::model::Strategy::Mutation,
            mode: "random".into(),
            origins: Default::default(),
            intent,
            mutation,
            series_step: None,
            credentials: None,
            shrinking: None,
            identity: None,
        }
    }

    /// What the oracles find in one answer, a line per finding: its message, its key by
    /// message, its key by kind (a long line as its head and a hash of the whole).
    fn judge_keys(
        oracles: &Oracles,
        op: &Operation,
        case: &TestCase,
        status: u16,
        content_type: &str,
        body: &[u8],
    ) -> Vec<String> {
        use crate::ids::{CaseId, Digest, RunId};
        use crate::model::{BodyBytes, RequestRecord, ResponseRecord, Timing};
        let interaction = Interaction {
            run: RunId(Digest::of(b"run")),
            seq: 0,
            case: CaseId(Digest::of(b"case")),
            request: RequestRecord {
                method: "GET".into(),
                url: "http://127.0.0.1/items/1".into(),
                headers: Vec::new(),
                body: None,
            },
            outcome: Outcome::Response(ResponseRecord {
                status,
                headers: vec![("content-type".into(), content_type.into())],
                body: (!body.is_empty()).then(|| BodyBytes::Inline(body.to_vec())),
                truncated: false,
            }),
            timing: Timing {
                started_ms: 0,
                elapsed_us: 0,
            },
            retried: None,
        };
        let json: Option<Value> = serde_json::from_slice(body).ok();
        oracles
            .judge(&Exchange {
                id: crate::ids::InteractionId(crate::ids::Digest::of(b"i")),
                operation: op,
                case,
                interaction: &interaction,
                response_body: (!body.is_empty()).then_some(body),
                response_json: json.as_ref(),
            })
            .into_iter()
            .map(|o| {
                let line = format!("{} ## {} ## {}", o.message, o.key_by_message, o.key_by_kind);
                // Long lines as a head and a hash of the whole.
                if line.len() > 300 {
                    let head: String = line.chars().take(60).collect();
                    format!("{head}… {}", &Digest::of(line.as_bytes()).to_hex()[..16])
                } else {
                    line
                }
            })
            .collect::<Vec<_>>()
    }

    fn assert_keys(got: Vec<Vec<String>>, expected: &[&[&str]]) {
        let expected: Vec<Vec<&str>> = expected.iter().map(|v| v.to_vec()).collect();
        assert_eq!(got, expected, "\n{got:#?}");
    }

    // The keys findings are deduplicated by are kept in finding sets, and `diff` and
    // `recheck` compare them across builds: they must not change silently. One exchange
    // per way a key reads the reply (JSON object, JSON that is not an object, text, HTML,
    // no body, a body longer than the part read), in the two tests below.

    /// The keys of server errors, one per way the key reads the reply.
    #[test]
    fn observation_keys_are_stable() {
        let (api, oracles) = keys_oracles();
        let op = &api.operations[0];
        let plain = keys_case(op, Intent::Acceptable, None);
        let judge = |status: u16, content_type: &str, body: &[u8]| {
            judge_keys(&oracles, op, &plain, status, content_type, body)
        };
        let long_text = format!("Trace 0x7f3a: {}", "x".repeat(5000));
        let got: Vec<Vec<String>> = vec![
            judge(
                500,
                "application/json",
                br#"{"error":"Boom at 2026-01-01 id 42"}"#,
            ),
            judge(503, "application/json", br#"["down", 7]"#),
            judge(500, "text/plain", b"Internal error 1234\nat line 9"),
            judge(
                502,
                "text/html",
                b"<html><title>502 Bad Gateway</title></html>",
            ),
            judge(500, "text/plain", b""),
            judge(500, "text/plain", long_text.as_bytes()),
        ];
        assert_keys(
            got,
            &[
                &[
                    "getItem answered 500: Boom at 2026-01-01 id 42 ## server_error|getItem|500||Boom at id ## server_error|getItem|500||Boom at # id #",
                ],
                &[
                    // Quoted text reads as nothing in a cause (issue 48: one cause
                    // whatever quotes its echo has); the kind keeps its title as it was.
                    "getItem answered 503: [\"down\", 7] ## server_error|getItem|503||[,#] ## server_error|getItem|503||[\"…\", #]",
                ],
                &[
                    "getItem answered 500: Internal error 1234 ## server_error|getItem|500||Internal error ## server_error|getItem|500||Internal error #",
                ],
                &[
                    "getItem answered 502: 502 Bad Gateway ## server_error|getItem|502||Bad Gateway ## server_error|getItem|502||# Bad Gateway",
                ],
                &[
                    "getItem answered 500 ## server_error|getItem|500|| ## server_error|getItem|500||",
                ],
                &[
                    "getItem answered 500: Trace 0x7f3a: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx ## server_error|getItem|500||Trace #: … ## server_error|getItem|500||Trace #: …",
                ],
            ],
        );
    }

    /// The keys of findings other than server errors: a changed case accepted, undeclared
    /// statuses and types, a missing header, a missing body.
    #[test]
    fn observation_keys_of_other_findings_are_stable() {
        let (api, oracles) = keys_oracles();
        let op = &api.operations[0];
        let plain = keys_case(op, Intent::Acceptable, None);
        let changed = keys_case(
            op,
            Intent::RefusalExpected,
            Some(crate::model::Mutation {
                from: crate::model::AcceptedRef {
                    case: crate::ids::CaseId(crate::ids::Digest::of(b"accepted")),
                    seq: 3,
                },
                kind: crate::model::MutationKind::WrongType,
                place: "path.id".into(),
                description: "a string where an integer is declared".into(),
            }),
        );
        let judge = |case: &TestCase, status: u16, content_type: &str, body: &[u8]| {
            judge_keys(&oracles, op, case, status, content_type, body)
        };
        let got: Vec<Vec<String>> = vec![
            judge(&changed, 200, "application/json", br#"{"id":"seven"}"#),
            judge(&plain, 418, "application/xml", b"<teapot/>"),
            judge(
                &plain,
                422,
                "application/problem+json",
                br#"{"title":"Bad id 12"}"#,
            ),
            judge(&plain, 200, "Text/Plain; charset=UTF-8", b"id 7"),
            judge(&plain, 200, "application/json", b""),
        ];
        assert_keys(
            got,
            &[
                &[
                    "getItem answered 200: body at `/id` does not match the schema (\"seven\" is not of type \"integer\") ## response_schema_conformance|getItem|200|/properties/id/type:/id| ## response_schema_conformance|getItem|200|/properties/id/type:/id|",
                    "getItem answered 200 without the required header X-Rate ## required_header_missing|getItem|200|x-rate| ## required_header_missing|getItem|200|x-rate|",
                    "getItem accepted wrongType at `path.id` (a string where an integer is declared) with 200 ## invalid_data_accepted|getItem|200|wrongType@path.id| ## invalid_data_accepted|getItem|200|wrongType@path.id|",
                ],
                &[
                    "getItem answered 418, which is not declared (declared: 200) ## status_code_declared|getItem|418|| ## status_code_declared|getItem|418||<teapot/>",
                    "getItem refused a request built from the document's own values with 418: <teapot/> ## valid_data_refused|getItem|418|| ## valid_data_refused|getItem|418||<teapot/>",
                ],
                &[
                    "getItem answered 422, which is not declared (declared: 200) ## status_code_declared|getItem|422|| ## status_code_declared|getItem|422||Bad id #",
                    "getItem refused a request built from the document's own values with 422: Bad id 12 ## valid_data_refused|getItem|422|| ## valid_data_refused|getItem|422||Bad id #",
                ],
                &[
                    "getItem answered 200 with `text/plain`, which is not declared (declared: application/json) ## content_type_declared|getItem|200|text/plain| ## content_type_declared|getItem|200|text/plain|id #",
                    "getItem answered 200 without the required header X-Rate ## required_header_missing|getItem|200|x-rate| ## required_header_missing|getItem|200|x-rate|id #",
                ],
                &[
                    "getItem answered 200 without the required header X-Rate ## required_header_missing|getItem|200|x-rate| ## required_header_missing|getItem|200|x-rate|",
                    "getItem answered 200 with no body, where the document declares one (application/json) ## body_missing|getItem|200|| ## body_missing|getItem|200||",
                ],
            ],
        );
    }

    #[test]
    fn every_registered_oracle_has_its_setting_and_its_page() {
        let page = include_str!("../../docs/oracles.md");
        let mut names = std::collections::BTreeSet::new();
        for info in CATALOGUE.iter() {
            assert!(names.insert(info.name), "{} registered twice", info.name);
            let setting = format!("checks.{}", info.name);
            assert!(
                info.setting.name == setting,
                "{} declares `{}`, not `{setting}`",
                info.name,
                info.setting.name
            );
            assert!(
                page.contains(&format!("`{}`", info.name)),
                "docs/oracles.md does not describe `{}`",
                info.name
            );
        }
    }

    #[test]
    fn series_oracles_are_told_apart() {
        assert!(judges_series("non_idempotent_put"));
        assert!(judges_series("failed_create_side_effects"));
        assert!(!judges_series("server_error"));
        assert!(!judges_series("nope"));
    }

    #[test]
    fn oracles_are_found_by_name_and_code() {
        assert_eq!(find("F100").map(|o| o.name), Some("server_error"));
        assert_eq!(find("status_code_declared").map(|o| o.version), Some(1));
        assert!(find("nope").is_none());
    }
}
