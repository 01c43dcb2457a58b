//! `probe serve <run>`: load the recording ([`crate::serve`]), bind 127.0.0.1, print the
//! URL and serve until the process is stopped (Ctrl-C ends it; nothing is written, so
//! there is nothing to flush).
//!
//! Depends on: `serve`, `store`, `cli`, `error`.

use std::path::Path;

use crate::cli::ServeOpts;
use crate::error::CliError;
use crate::exit;
use crate::serve::{self, Recording, ServeError};
use crate::store::Store;

use super::Out;

/// Runs `probe serve`.
pub fn exec_serve(opts: &ServeOpts, store_dir: &Path, out: &mut Out<'_>) -> Result<u8, CliError> {
    let store = Store::open_existing(store_dir)?;
    let recording = Recording::load(&store, &opts.run).map_err(|e| match e {
        ServeError::Store(s) => CliError::Store(s),
        ServeError::Lookup(s) => CliError::lookup(s),
        e @ ServeError::NotARun { .. } => CliError::usage(e.to_string()),
        other @ ServeError::BadUrl { .. } => CliError::internal_from(other),
    })?;
    // The recording holds everything it serves: the store is not needed any more.
    drop(store);
    let listener =
        std::net::TcpListener::bind(("127.0.0.1", opts.port)).map_err(|e| CliError::Usage {
            message: format!("cannot listen on 127.0.0.1:{}: {e}", opts.port),
            hint: Some("choose another --port, or leave it out for any free port".into()),
        })?;
    let listening = |e: std::io::Error| {
        CliError::internal(format!("cannot listen on 127.0.0.1:{}", opts.port), e)
    };
    listener.set_nonblocking(true).map_err(listening)?;
    let addr = listener.local_addr().map_err(listening)?;
    writeln!(
        out,
        "serving run {} ({} recorded interactions, {} distinct requests) on http://{addr}",
        recording.run.short(12),
        recording.len(),
        recording.distinct()
    )?;
    writeln!(out, "press Ctrl-C to stop")?;
    out.flush()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| CliError::internal("cannot start the async runtime", e))?;
    let router = serve::router(recording);
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener).map_err(listening)?;
        axum::serve(listener, router)
            .await
            .map_err(|e| CliError::internal(format!("serving on http://{addr} stopped"), e))
    })?;
    Ok(exit::OK)
}
