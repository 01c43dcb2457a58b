//! `probe store merge A B … -o C`: local stores joined into one (`store::merge`), for the
//! parts of a campaign recorded on several machines (docs/partitions.md).
//!
//! Every source is verified before anything is copied from it: a damaged source is
//! refused ([`exit::STORE`]) rather than spread. The destination is created when absent.
//!
//! Depends on: `store`, `cli`, `error`.

use crate::cli::MergeOpts;
use crate::error::CliError;
use crate::exit;
use crate::store::{MergeReport, Store};

use super::Out;

/// Runs `probe store merge`.
pub fn exec_merge(o: &MergeOpts, out: &mut Out<'_>) -> Result<u8, CliError> {
    let same = |a: &std::path::Path| match (a.canonicalize(), o.output.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    let mut sources = Vec::with_capacity(o.sources.len());
    for dir in &o.sources {
        // Merging a store into itself copies nothing.
        if same(dir) {
            continue;
        }
        let store = Store::open_existing(dir)?;
        let verified = store.verify()?;
        if let Some(first) = verified.problems.first() {
            // A damaged store is a store problem (exit 4), not a usage error.
            return Err(CliError::Internal {
                message: format!(
                    "{} does not verify ({} problems; the first: {}); nothing was merged (`probe --store {} store verify` lists them)",
                    dir.display(),
                    verified.problems.len(),
                    first.message,
                    dir.display()
                ),
                source: None,
            });
        }
        sources.push((dir, store));
    }
    let into = Store::open(&o.output)?;
    let mut report = MergeReport::default();
    for (dir, store) in &sources {
        into.merge_from(store, &mut report)
            .map_err(|e| CliError::internal(format!("cannot merge {}", dir.display()), e))?;
    }
    if o.json {
        let text = serde_json::to_string(&report)
            .map_err(|e| CliError::internal("cannot encode the result as JSON", e))?;
        writeln!(out, "{text}")?;
    } else {
        writeln!(
            out,
            "merged {} store{} into {}: {} runs ({} already there), {} objects copied, {} already there ({} bytes)",
            sources.len(),
            if sources.len() == 1 { "" } else { "s" },
            o.output.display(),
            report.runs,
            report.runs_present,
            report.objects_copied,
            report.objects_present,
            report.bytes_copied
        )?;
    }
    Ok(exit::OK)
}
