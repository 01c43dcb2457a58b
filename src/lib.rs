//! probe: a REST API tester that keeps everything.
//!
//! probe reads an OpenAPI document, generates requests for the API it describes, sends
//! them, judges every answer with oracles, and writes every test case and interaction into
//! a versioned, content-addressed store (see `store-format/FORMAT.md`). Because the store
//! holds everything, an old run can be re-judged, replayed and compared.
//!
//! # Architecture
//! ```text
//! document ─> spec ─> engine (schedule, generate, send) ─> events ─> store recorder
//!                                     │                        └──> reporters
//!                                     └─> oracle ─> findings
//! ```
//! - [`ids`], [`model`]: stored types and their identities.
//! - [`clock`]: the wall clock every record is stamped with.
//! - [`spec`]: OpenAPI loading into an operation model.
//! - [`schema`]: JSON Schema value generation and validation.
//! - [`store`]: the on-disk store.
//! - [`engine`]: scheduling, sending, judging; emits [`events::Event`]s.
//! - [`generate`]: what to send next and how a test case is built (strategies, cases, the
//!   memory of answers).
//! - [`send`]: the wire form of a test case, credentials, the HTTP client.
//! - [`oracle`]: pure judges over stored data.
//! - [`recheck`]: judging a stored run again, sending nothing; [`diff`]: comparing
//!   finding sets and runs.
//! - [`report`]: console, report.json and JUnit output.
//! - [`redact`]: credentials replaced by a placeholder in everything kept or printed.
//! - [`settings`]: declared settings and their values; [`catalogue`]: every setting probe
//!   knows (the oracles' switches too), and settings resolved against them.
//! - The layers and what each module may use: docs/architecture.md, kept by
//!   `tests/architecture.rs`.
//! - [`shrink`]: the smaller requests worth trying in place of one that showed a finding.
//! - [`replay`]: re-sending recorded interactions; [`serve`]: answering from a recorded run.
//! - [`app`]: one function per command, wiring the rest; [`cli`]: clap only.
//!
//! Nothing below [`app`] prints, parses arguments or decides an exit code.

pub mod app;
pub mod campaign;
pub mod catalogue;
pub mod check;
pub mod cli;
pub mod clock;
pub mod diff;
pub mod engine;
pub mod error;
pub mod events;
pub mod exit;
pub mod fixture;
pub mod generate;
pub mod har;
pub mod ids;
pub mod jwt;
pub mod model;
pub mod mutate;
pub mod oracle;
pub mod partition;
pub mod pinpoint;
pub mod plan;
pub mod recheck;
pub mod redact;
pub mod remote;
pub mod replay;
pub mod report;
pub mod schema;
pub mod send;
pub mod serve;
pub mod settings;
pub mod shrink;
pub mod spec;
pub mod step;
pub mod stop;
pub mod store;
pub mod text;
