//! `probe export <run> --format har|sarif|wfc|markdown [-o FILE]`: a recorded run as HAR
//! 1.2 (docs/har.md), or its findings as SARIF 2.1.0, a Web Fuzzing Commons report or the
//! Markdown summary (docs/ci.md), these three from the report.json the store keeps.
//!
//! HAR streams the run's interactions page by page ([`crate::har::write_har`]); a file is
//! written beside its final name and renamed once complete, so a failed export leaves no
//! half file.
//!
//! Depends on: `har`, `report` (sarif, wfc, summary), `store`, `cli`, `error`.

use std::io::{BufWriter, Write};
use std::path::Path;

use crate::cli::{ExportFormat, ExportOpts};
use crate::error::CliError;

use super::Out;
use crate::exit;
use crate::har::{write_har, HarError};
use crate::store::Store;

/// Runs `probe export`.
pub fn exec_export(
    opts: &ExportOpts,
    store_dir: &Path,
    out: &mut Out<'_>,
    err: &mut dyn Write,
) -> Result<u8, CliError> {
    let store = Store::open_existing(store_dir)?;
    let run = store.resolve_run(&opts.run).map_err(CliError::lookup)?;
    let of_report = match opts.format {
        ExportFormat::Har => None,
        ExportFormat::Sarif => {
            let report = super::report::kept_report(&store, run)?;
            let log = crate::report::sarif::of_run(&store, run, &report)?;
            Some(crate::report::sarif::to_bytes(&log))
        }
        ExportFormat::Wfc => {
            let report = super::report::kept_report(&store, run)?;
            let wfc = crate::report::wfc::render(&report, crate::clock::now_ms());
            let mut bytes = serde_json::to_vec_pretty(&wfc).unwrap_or_default();
            bytes.push(b'\n');
            Some(bytes)
        }
        ExportFormat::Markdown => {
            let report = super::report::kept_report(&store, run)?;
            Some(crate::report::summary::render(&report).into_bytes())
        }
    };
    if let Some(bytes) = of_report {
        match &opts.output {
            None => out.raw().write_all(&bytes).map_err(CliError::output)?,
            Some(path) => {
                super::report::write_file(path, &bytes)?;
                let _ = writeln!(
                    err,
                    "probe: wrote the findings of run {} to {}",
                    run.short(12),
                    path.display()
                );
            }
        }
        return Ok(exit::OK);
    }
    let failed = |e: HarError, whereto: &str| match e {
        HarError::Store(s) => CliError::Store(s),
        HarError::Write(io) if whereto == "standard output" => CliError::output(io),
        other => CliError::internal(
            format!("cannot export run {} as HAR to {whereto}", run.short(12)),
            other,
        ),
    };
    match &opts.output {
        None => {
            let mut buffered = BufWriter::with_capacity(1 << 16, out.raw());
            write_har(&store, run, &mut buffered).map_err(|e| failed(e, "standard output"))?;
        }
        Some(path) => {
            let shown = path.display().to_string();
            let partial = path.with_extension("har.partial");
            let file = std::fs::File::create(&partial).map_err(|e| {
                CliError::internal(format!("cannot create {}", partial.display()), e)
            })?;
            let mut buffered = BufWriter::with_capacity(1 << 16, file);
            let stats = match write_har(&store, run, &mut buffered) {
                Ok(stats) => stats,
                Err(e) => {
                    drop(buffered);
                    let _ = std::fs::remove_file(&partial);
                    return Err(failed(e, &shown));
                }
            };
            drop(buffered);
            std::fs::rename(&partial, path)
                .map_err(|e| CliError::internal(format!("cannot write {shown}"), e))?;
            let _ = writeln!(
                err,
                "probe: wrote {} entries of run {} to {shown}",
                stats.entries,
                run.short(12)
            );
        }
    }
    Ok(exit::OK)
}
