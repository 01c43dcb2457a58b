//! Synthetic campaigns: realistic test cases and interactions without an API.
//!
//! Used by `probe store synth` (crash tests, benchmarks), the unit tests, the fixture
//! generators and the sample store. Built only for those: with the feature `dev-tools`
//! (which the tests and benchmarks turn on) or in the library's own unit tests. Data follow the shape measured in docs/design-notes.md, Measured ceilings:
//! 11 operations on users/orders/products, 7-9 request headers, JSON request bodies on
//! writes, JSON responses from fixed pools (so many response bodies repeat and are stored
//! once), a status mix of mostly 2xx with 4xx and some 5xx. Deterministic per seed.
//!
//! Depends on: `ids`, `model`, `store::object`.

use std::collections::BTreeMap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

use crate::ids::{BlobId, CaseId, FindingSetId, InteractionId, RunId};
use crate::model::{
    canonical_json, BodyBytes, CaseBody, FindingSet, Intent, Interaction, Location, Outcome,
    ParameterValue, RequestRecord, ResponseRecord, RunEnd, RunKind, RunOutcome, RunStart, Series,
    SeriesKind, SeriesStepRecord, StepRole, TestCase, Timing, TransportErrorKind, ValueOrigin,
};

use super::object::{encode, encode_blob};

const OPERATIONS: [(&str, &str, &str); 11] = [
    ("listUsers", "GET", "/users"),
    ("getUser", "GET", "/users/{id}"),
    ("createUser", "POST", "/users"),
    ("updateUser", "PUT", "/users/{id}"),
    ("deleteUser", "DELETE", "/users/{id}"),
    ("listOrders", "GET", "/orders"),
    ("getOrder", "GET", "/orders/{id}"),
    ("createOrder", "POST", "/orders"),
    ("patchOrder", "PATCH", "/orders/{id}"),
    ("listProducts", "GET", "/products"),
    ("getProduct", "GET", "/products/{id}"),
];

/// A deterministic source of synthetic runs.
pub struct Synth {
    rng: ChaCha8Rng,
    seed: u64,
}

impl Synth {
    pub fn new(seed: u64) -> Synth {
        Synth {
            rng: ChaCha8Rng::seed_from_u64(seed),
            seed,
        }
    }

    /// The OpenAPI document the synthetic run claims to test: a real OpenAPI 3.1 document
    /// whose operations, response schemas and declared statuses match the synthetic
    /// answers closely but not exactly (403 and 500 are undeclared, list bodies of orders
    /// and products hold users), so rechecking a synthetic run does the work of a real one
    /// and finds something.
    pub fn document(&self) -> Vec<u8> {
        let error = json!({"$ref": "#/components/schemas/Error"});
        let mut paths = serde_json::Map::new();
        for (op, method, path) in OPERATIONS {
            let entity = if op.contains("Order") {
                "Order"
            } else if op.contains("Product") {
                "Product"
            } else {
                "User"
            };
            let entity = json!({"$ref": format!("#/components/schemas/{entity}")});
            let ok_schema = if method == "GET" && !path.contains("{id}") {
                json!({"type": "array", "items": entity})
            } else {
                entity.clone()
            };
            let media = |schema: &Value| json!({"application/json": {"schema": schema}});
            let mut operation = json!({
                "operationId": op,
                "responses": {
                    "200": {
                        "description": "ok",
                        "headers": {"X-Request-Id": {"required": true, "schema": {"type": "string"}}},
                        "content": media(&ok_schema),
                    },
                    "400": {"description": "bad request", "content": media(&error)},
                    "404": {"description": "not found", "content": media(&error)},
                    "422": {"description": "invalid", "content": media(&error)},
                },
            });
            if path.contains("{id}") {
                operation["parameters"] = json!([{
                    "name": "id", "in": "path", "required": true,
                    "schema": {"type": "integer", "minimum": 0},
                }]);
            } else if method == "GET" {
                operation["parameters"] = json!([{
                    "name": "limit", "in": "query",
                    "schema": {"type": "integer", "minimum": 1, "maximum": 50},
                }]);
            }
            if matches!(method, "POST" | "PUT" | "PATCH") {
                operation["requestBody"] = json!({"required": true, "content": media(&entity)});
            }
            let item = paths.entry(path.to_owned()).or_insert_with(|| json!({}));
            item[method.to_ascii_lowercase()] = operation;
        }
        serde_json::to_vec_pretty(&json!({
            "openapi": "3.1.0",
            "info": {"title": "synthetic shop", "version": "1.0"},
            "paths": paths,
            "components": {"schemas": {
                "User": {
                    "type": "object",
                    "required": ["id", "name", "email"],
                    "properties": {
                        "id": {"type": "integer", "minimum": 0},
                        "name": {"type": "string", "maxLength": 64},
                        "email": {"type": "string", "format": "email"},
                        "roles": {"type": "array", "items": {"type": "string", "enum": ["reader", "writer", "guest"]}},
                        "address": {
                            "type": "object",
                            "properties": {
                                "city": {"type": "string"},
                                "street": {"type": "string"},
                                "zip": {"type": "string", "pattern": "^[0-9]{5}$"},
                            },
                        },
                        "created_at": {"type": "string", "format": "date-time"},
                    },
                },
                "Order": {
                    "type": "object",
                    "required": ["id", "user", "items", "status"],
                    "properties": {
                        "id": {"type": "integer"},
                        "user": {"type": "integer"},
                        "items": {"type": "array", "minItems": 1, "items": {
                            "type": "object",
                            "required": ["product", "quantity"],
                            "properties": {
                                "product": {"type": "integer"},
                                "quantity": {"type": "integer", "minimum": 1},
                            },
                        }},
                        "status": {"type": "string", "enum": ["open", "paid", "shipped"]},
                        "total": {"type": "number", "minimum": 0},
                    },
                },
                "Product": {
                    "type": "object",
                    "required": ["id", "title", "price"],
                    "properties": {
                        "id": {"type": "integer"},
                        "title": {"type": "string"},
                        "price": {"type": "number", "exclusiveMinimum": 0},
                        "tags": {"type": "array", "items": {"type": "string"}},
                        "stock": {"type": "integer", "minimum": 0},
                    },
                },
                "Error": {
                    "type": "object",
                    "required": ["error"],
                    "properties": {
                        "error": {"type": "string"},
                        "status": {"type": "integer"},
                        "detail": {"type": "string"},
                    },
                },
            }},
        }))
        .expect("a JSON value serialises")
    }

    /// The run manifest (its document blob is [`Synth::document`]).
    pub fn run_start(&self, started_ms: u64) -> RunStart {
        let mut settings = BTreeMap::new();
        settings.insert("send.workers".to_owned(), "16".to_owned());
        settings.insert("generation.mode".to_owned(), "random".to_owned());
        RunStart {
            kind: RunKind::Run,
            tool_version: env!("CARGO_PKG_VERSION").to_owned(),
            store_format: super::format::STORE_FORMAT.to_string(),
            document: BlobId(encode_blob(&self.document()).id),
            document_source: "synthetic-shop.json".to_owned(),
            settings,
            seed: self.seed,
            base_url: "http://127.0.0.1:8080".to_owned(),
            started_ms,
            name: Some(format!("synth-{}", self.seed)),
            tags: BTreeMap::from([("kind".to_owned(), "synthetic".to_owned())]),
            replay_of: None,
            documents: BTreeMap::new(),
            inputs: BTreeMap::new(),
        }
    }

    fn user(&mut self, id: u64) -> Value {
        json!({
            "id": id,
            "name": format!("user {id}"),
            "email": format!("user{id}@example.com"),
            "roles": ["reader", if id.is_multiple_of(3) { "writer" } else { "guest" }],
            "address": {"city": "Lyon", "street": format!("{} rue de la Paix", id % 90), "zip": "69001"},
            "created_at": "2026-01-01T00:00:00Z",
        })
    }

    fn entity(&mut self, op: &str) -> Value {
        let id = self.rng.gen_range(0..1000u64);
        if op.contains("Order") {
            json!({"id": id, "user": id % 97, "items": [{"product": id % 50, "quantity": 1 + id % 4}],
                   "status": "open", "total": (id * 37 % 10000) as f64 / 100.0})
        } else if op.contains("Product") {
            json!({"id": id % 500, "title": format!("product {}", id % 500), "price": 9.99,
                   "tags": ["a", "b"], "stock": id % 20})
        } else {
            self.user(id)
        }
    }

    /// Test case and interaction number `seq` of `run` (bodies inline; call
    /// [`super::object::externalize_bodies`] before encoding).
    pub fn pair(&mut self, run: RunId, seq: u64) -> (TestCase, Interaction) {
        let (op, method, path) = OPERATIONS[self.rng.gen_range(0..OPERATIONS.len())];
        let id = self.rng.gen_range(0..1000u64);
        let mut parameters = Vec::new();
        if path.contains("{id}") {
            parameters.push(ParameterValue {
                location: Location::Path,
                name: "id".into(),
                value: json!(id),
            });
        }
        if method == "GET" && !path.contains("{id}") {
            parameters.push(ParameterValue {
                location: Location::Query,
                name: "limit".into(),
                value: json!(self.rng.gen_range(1..50)),
            });
        }
        let body = if matches!(method, "POST" | "PUT" | "PATCH") {
            Some(CaseBody {
                media_type: "application/json".into(),
                value: canonical_json(self.entity(op)),
                sent_as: None,
            })
        } else {
            None
        };
        let case = TestCase {
            operation: op.into(),
            method: method.into(),
            path: path.into(),
            parameters,
            body: body.clone(),
            strategy: crate::model::Strategy::Fuzzing,
            mode: "random".into(),
            origins: BTreeMap::from([("id".to_owned(), ValueOrigin::Invention)]),
            intent: Intent::Unknown,
            mutation: None,
            series_step: None,
            credentials: None,
            shrinking: None,
            identity: None,
        };
        let case_id = CaseId(encode(&case).expect("a test case encodes").id);
        let url = format!(
            "http://127.0.0.1:8080{}",
            path.replace("{id}", &id.to_string())
        );
        let request = RequestRecord {
            method: method.into(),
            url,
            headers: vec![
                ("accept".into(), "application/json".into()),
                (
                    "authorization".into(),
                    crate::model::SECRET_PLACEHOLDER.into(),
                ),
                ("user-agent".into(), "probe/0.1".into()),
                (
                    "x-request-id".into(),
                    format!("{:016x}", self.rng.gen::<u64>()),
                ),
                ("x-trace".into(), format!("{seq}")),
                ("accept-encoding".into(), "identity".into()),
                ("connection".into(), "keep-alive".into()),
            ],
            body: body.map(|b| BodyBytes::Inline(b.value.to_string().into_bytes())),
        };
        let roll = self.rng.gen_range(0..100);
        let outcome = if roll == 99 {
            Outcome::TransportError {
                kind: TransportErrorKind::Timeout,
                message: "timed out after 10s".into(),
            }
        } else {
            let status = match roll {
                0..=54 => 200,
                55..=74 => 400,
                75..=84 => 422,
                85..=94 => 404,
                95..=96 => 403,
                _ => 500,
            };
            let body = if status == 200 && method == "GET" && !path.contains("{id}") {
                // Lists come from a small pool, so identical bodies repeat across runs.
                let n = self.rng.gen_range(1..6);
                let first = self.rng.gen_range(0..20u64) * 5;
                Value::Array((first..first + n).map(|i| self.user(i)).collect())
            } else if status == 200 {
                self.entity(op)
            } else if status == 500 {
                json!({"error": "internal", "trace": "java.lang.NullPointerException at Shop.handle(Shop.java:42)"})
            } else {
                json!({"error": "bad request", "status": status, "detail": format!("field {} invalid", self.rng.gen_range(0..5))})
            };
            Outcome::Response(ResponseRecord {
                status,
                headers: vec![
                    ("content-type".into(), "application/json".into()),
                    (
                        "x-request-id".into(),
                        format!("{:016x}", self.rng.gen::<u64>()),
                    ),
                    ("etag".into(), format!("\"{:08x}\"", id)),
                ],
                body: Some(BodyBytes::Inline(
                    canonical_json(body).to_string().into_bytes(),
                )),
                truncated: false,
            })
        };
        let interaction = Interaction {
            run,
            seq,
            case: case_id,
            request,
            outcome,
            timing: Timing {
                started_ms: 1_780_000_000_000 + seq,
                elapsed_us: self.rng.gen_range(100..5000),
            },
            retried: None,
        };
        (case, interaction)
    }

    /// A series over interactions just recorded, `(seq, id)` in step order, as the engine
    /// records one once its last step is answered: the crash tests need objects that name
    /// interactions written shortly before them.
    pub fn series(&self, run: RunId, steps: &[(u64, InteractionId)]) -> Series {
        Series {
            run,
            name: format!("lifecycle-{}", steps.first().map_or(0, |s| s.0)),
            kind: SeriesKind::Lifecycle,
            resource: "/users/{id}".to_owned(),
            steps: steps
                .iter()
                .enumerate()
                .map(|(at, &(seq, interaction))| SeriesStepRecord {
                    role: if at == 0 {
                        StepRole::Create
                    } else {
                        StepRole::Read
                    },
                    seq,
                    interaction,
                })
                .collect(),
        }
    }

    /// An empty finding set for a run.
    pub fn finding_set(&self, run: RunId) -> FindingSet {
        FindingSet {
            run,
            judged_by: env!("CARGO_PKG_VERSION").to_owned(),
            oracles: BTreeMap::new(),
            findings: Vec::new(),
            checks: BTreeMap::new(),
        }
    }

    /// The end manifest of a run.
    pub fn run_end(&self, run: RunId, interactions: u64, findings: FindingSetId) -> RunEnd {
        RunEnd {
            series: Vec::new(),
            run,
            ended_ms: 1_780_000_100_000,
            outcome: RunOutcome::Completed,
            interactions,
            findings,
        }
    }
}

/// Writes a whole synthetic run of `n` interactions through a recorder, in write order
/// (document, RunStart, interactions, FindingSet, RunEnd). Returns the run id.
pub fn write_run(
    store: &super::handle::Store,
    seed: u64,
    n: u64,
    started_ms: u64,
) -> Result<RunId, super::error::StoreError> {
    write_run_with(
        store,
        seed,
        n,
        started_ms,
        super::recorder::RecorderOptions::default(),
    )
}

/// [`write_run`] with explicit recorder options (a low `train_after` makes a small run
/// train and use dictionaries).
pub fn write_run_with(
    store: &super::handle::Store,
    seed: u64,
    n: u64,
    started_ms: u64,
    options: super::recorder::RecorderOptions,
) -> Result<RunId, super::error::StoreError> {
    let mut synth = Synth::new(seed);
    store.put_blob(&synth.document())?;
    let run = RunId(store.put(&synth.run_start(started_ms))?);
    let recorder = store.recorder_with(options)?;
    for seq in 0..n {
        recorder.record(synth_objects(&mut synth, run, seq)?)?;
    }
    recorder.finish()?;
    let set = FindingSetId(store.put(&synth.finding_set(run))?);
    store.put(&synth.run_end(run, n, set))?;
    Ok(run)
}

/// The objects of one synthetic interaction, in record order (blobs, case, interaction).
pub fn synth_objects(
    synth: &mut Synth,
    run: RunId,
    seq: u64,
) -> Result<Vec<super::object::EncodedObject>, super::error::StoreError> {
    let (case, mut interaction) = synth.pair(run, seq);
    let mut objects = super::object::externalize_bodies(&mut interaction);
    objects.push(encode(&case)?);
    objects.push(encode(&interaction)?);
    Ok(objects)
}
