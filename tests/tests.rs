//! The integration tests: one binary (see `Cargo.toml`), one module per area. Each test
//! starts its fixture APIs on 127.0.0.1 (ephemeral ports) and runs the real `probe` binary
//! or library against them.

mod access;
mod address;
mod architecture;
mod auth;
mod checks;
mod ci;
mod connections;
mod conventions;
mod corpus;
mod credentials;
mod diff;
mod exposure;
mod findings;
mod gc;
mod har;
mod html;
mod injection;
mod leaks;
mod login;
mod mutation;
mod network;
mod outputs;
mod own_data;
mod pace;
mod partitions;
mod pinpoint;
mod pipelines;
mod program_checks;
mod recheck;
mod remote;
mod replay;
mod resources;
mod run;
mod security;
mod sequences;
mod series;
mod signals;
mod since;
mod snapshots;
mod store;
mod takeover;
#[cfg(target_os = "linux")]
mod terminal;
mod trust;
mod upgrade;
mod util;
mod values;
mod variety;
