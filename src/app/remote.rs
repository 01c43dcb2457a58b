//! Commands on a store on object storage (`--store s3://…`, docs/remote-store.md), and
//! `probe store push|pull`.
//!
//! Every command works on the local cache of the remote store: a reading command first
//! pulls what the cache lacks; `run` and `demo` record into the cache while a background
//! uploader sends full chunks, and push the rest at the end; `recheck` and `replay` pull,
//! then push what they wrote. A push that fails leaves everything recorded in the cache:
//! the command says how much was not uploaded, exits with [`exit::STORE`], and
//! `probe store push` completes it later.
//!
//! Depends on: `remote`, `cli`, `error`, `exit`, `store`.

use std::io::Write;
use std::path::Path;

use crate::cli::{Cli, Command, GcOpts, PullOpts, PushOpts, StoreCommand};
use crate::error::CliError;
use crate::exit;
use crate::remote::lock::RemoteLock;
use crate::remote::sync::{self, Select};
use crate::remote::upload::{Uploader, WRITER_WAIT};
use crate::remote::{is_remote, Remote, RemoteUrl};

use super::Out;

/// The remote store `--store` names, if it names one.
pub fn remote_of(cli: &Cli) -> Result<Option<RemoteUrl>, CliError> {
    match cli.global.store.as_ref().and_then(|p| p.to_str()) {
        Some(text) if is_remote(text) => Ok(Some(RemoteUrl::parse(text)?)),
        _ => Ok(None),
    }
}

/// What a command does with a remote store around its local run.
enum Around {
    /// Needs no store (`spec`), or names its stores itself (`store push|pull`).
    Nothing,
    /// Pulls every run first.
    Pull,
    /// Pulls every run first, pushes what it wrote after (`recheck`, `replay`).
    PullPush,
    /// Records with a background uploader (`run`, `demo`).
    Record,
    /// `store verify`: pulls, checks the remote objects, verifies the cache.
    Verify,
    /// `store gc`: under the store's exclusive lock ([`crate::remote::gc`]).
    Gc,
    /// A maintenance command of local stores only.
    LocalOnly(&'static str),
}

fn around(command: &Command) -> Around {
    match command {
        // Need no store, or name their stores themselves (`store merge`).
        Command::Spec(_) | Command::Completions(_) | Command::Man(_) | Command::Docs(_) => {
            Around::Nothing
        }
        Command::Store(StoreCommand::Merge(_)) => Around::Nothing,
        Command::Run(_) | Command::Demo(_) => Around::Record,
        Command::Recheck(_) | Command::Replay(_) => Around::PullPush,
        Command::Store(StoreCommand::Push(_) | StoreCommand::Pull(_)) => Around::Nothing,
        Command::Store(StoreCommand::Verify(_)) => Around::Verify,
        Command::Store(StoreCommand::Gc(_)) => Around::Gc,
        Command::Store(StoreCommand::Reindex(_)) => Around::LocalOnly("reindex"),
        Command::Store(StoreCommand::Upgrade(_)) => Around::LocalOnly("upgrade"),
        _ => Around::Pull,
    }
}

/// Runs `cli` on remote store `url` through its local cache.
pub fn run_remote(
    mut cli: Cli,
    url: RemoteUrl,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, CliError> {
    let cache = url.cache_dir();
    let mode = around(&cli.command);
    cli.global.store = Some(cache.clone());
    match mode {
        Around::Nothing => super::run_local(cli, out, err),
        Around::LocalOnly(what) => Err(CliError::Usage {
            message: format!("`probe store {what}` works on a local store, not on {url}"),
            hint: Some(format!(
                "`probe store pull {url} DIR`, then `probe --store DIR store {what}`; a remote store is never changed in place (`probe docs remote-store`)"
            )),
        }),
        Around::Gc => {
            let Command::Store(StoreCommand::Gc(o)) = &cli.command else {
                return Ok(exit::INTERNAL);
            };
            exec_remote_gc(o, &url, &cache, &mut Out::new(out))
        }
        Around::Pull => {
            pull_all(&cache, &url)?;
            super::run_local(cli, out, err)
        }
        Around::PullPush => {
            pull_all(&cache, &url)?;
            let code = super::run_local(cli, out, err)?;
            match locked_push(&cache, &url, "recheck") {
                Ok(_) => Ok(code),
                Err(e) => not_uploaded(&cache, &url, &e, err),
            }
        }
        Around::Record => {
            let uploader = Uploader::start(cache.clone(), &url)?;
            let result = super::run_local(cli, out, err);
            let (pushed, _) = uploader.finish(&cache);
            let code = result?;
            match pushed {
                Ok(_) => Ok(code),
                Err(e) => not_uploaded(&cache, &url, &e, err),
            }
        }
        Around::Verify => {
            let remote = Remote::connect(&url)?;
            sync::pull(&cache, &remote, &Select::All)?;
            let (problems, notes) = sync::check_remote(&remote, &cache)?;
            let mut o = Out::new(out);
            for note in &notes {
                writeln!(o, "note: remote: {note}")?;
            }
            for problem in &problems {
                writeln!(o, "problem: remote: {problem}")?;
            }
            let code = super::run_local(cli, out, err)?;
            Ok(if problems.is_empty() { code } else { exit::STORE })
        }
    }
}

/// Pushes store `dir` into `url` under a shared lock (waiting for a gc to end).
fn locked_push(
    dir: &Path,
    url: &RemoteUrl,
    command: &str,
) -> Result<(sync::PushReport, u64), crate::remote::RemoteError> {
    let lock = RemoteLock::take_shared_waiting(url, command, WRITER_WAIT)?;
    let remote = Remote::connect(url)?;
    let pushed = sync::push(dir, &remote, true);
    lock.release();
    pushed.map(|r| (r, remote.requests()))
}

/// `probe store gc` of a remote store.
fn exec_remote_gc(
    o: &GcOpts,
    url: &RemoteUrl,
    cache: &Path,
    out: &mut Out<'_>,
) -> Result<u8, CliError> {
    let grace = o.grace.unwrap_or(crate::remote::gc::GRACE);
    // The scratch store beside the cache: on the same disk, never inside it.
    let scratch = cache.with_extension(format!("gc-{}", std::process::id()));
    let r = crate::remote::gc::gc(url, &scratch, grace)?;
    if o.json {
        let text = serde_json::to_string(&r)
            .map_err(|e| CliError::internal("cannot encode the result as JSON", e))?;
        writeln!(out, "{text}")?;
        return Ok(exit::OK);
    }
    writeln!(
        out,
        "{url}: deleted {} packs ({} bytes; {} named by no segment), kept {}; replaced {} of {} segments, uploading {} rewritten packs ({} bytes); {} objects no run reaches, {} second copies",
        r.packs_deleted + r.unnamed_packs_deleted,
        r.bytes_deleted,
        r.unnamed_packs_deleted,
        r.packs_kept,
        r.segments_replaced,
        r.segments,
        r.packs_written,
        r.bytes_written,
        r.objects_removed,
        r.duplicates_dropped,
    )?;
    if r.young_left > 0 {
        writeln!(
            out,
            "note: left {} objects written less than {} ago (`--grace`): a writer that started recently may name them",
            r.young_left,
            humantime::format_duration(grace)
        )?;
    }
    if r.stale_locks_deleted > 0 {
        writeln!(
            out,
            "note: deleted {} stale locks (not renewed for 30 minutes)",
            r.stale_locks_deleted
        )?;
    }
    Ok(exit::OK)
}

/// Brings every run of `url` into its cache.
fn pull_all(cache: &Path, url: &RemoteUrl) -> Result<(), CliError> {
    let remote = Remote::connect(url)?;
    sync::pull(cache, &remote, &Select::All)?;
    Ok(())
}

/// Says that what was recorded is in the cache but not (all) uploaded, and how to finish
/// the upload; the exit code of a store problem.
fn not_uploaded(
    cache: &Path,
    url: &RemoteUrl,
    e: &crate::remote::RemoteError,
    err: &mut dyn Write,
) -> Result<u8, CliError> {
    let pending = sync::pending_bytes(cache, url).unwrap_or(0);
    let _ = writeln!(
        err,
        "probe: error: the upload to {url} failed: {e}\n  everything is recorded in {}; {} bytes of it are not uploaded\n  hint: `probe store push {} {url}` uploads them once the object store answers",
        cache.display(),
        pending,
        cache.display(),
    );
    Ok(exit::STORE)
}

/// `probe store push DIR URL`.
pub fn exec_push(o: &PushOpts, out: &mut Out<'_>) -> Result<u8, CliError> {
    let url = RemoteUrl::parse(&o.url)?;
    if !o.dir.join("FORMAT").exists() {
        return Err(CliError::usage(format!(
            "{} is not a store (no FORMAT file)",
            o.dir.display()
        )));
    }
    let (r, requests) = locked_push(&o.dir, &url, "store push")?;
    if o.json {
        let v = serde_json::json!({
            "packs": r.packs, "packs_there": r.packs_there, "bytes": r.bytes,
            "segment": r.segment, "pending": r.pending, "requests": requests,
        });
        writeln!(out, "{v}")?;
    } else if r.segment.is_none() {
        writeln!(
            out,
            "nothing to push: {url} has everything of {}",
            o.dir.display()
        )?;
    } else {
        writeln!(
            out,
            "pushed {} packs ({} bytes) to {url}{}",
            r.packs,
            r.bytes,
            if r.packs_there > 0 {
                format!("; {} were there already", r.packs_there)
            } else {
                String::new()
            }
        )?;
    }
    if r.pending > 0 && !o.json {
        writeln!(
            out,
            "note: {} bytes are not whole blocks yet (a writer is still appending): the next push sends them",
            r.pending
        )?;
    }
    Ok(exit::OK)
}

/// `probe store pull URL DIR [--run R | --tag K=V]`.
pub fn exec_pull(o: &PullOpts, out: &mut Out<'_>) -> Result<u8, CliError> {
    let url = RemoteUrl::parse(&o.url)?;
    let select = match (&o.run, &o.tag) {
        (Some(run), _) => Select::Run(run.clone()),
        (None, Some((k, v))) => Select::Tag(k.clone(), v.clone()),
        (None, None) => Select::All,
    };
    let remote = Remote::connect(&url)?;
    let r = sync::pull(&o.dir, &remote, &select)?;
    if select != Select::All && r.segments == 0 {
        return Err(CliError::usage(format!(
            "no run of {url} matches the selection"
        )));
    }
    if o.json {
        let v = serde_json::json!({
            "segments": r.segments, "segments_read": r.segments_read, "packs": r.packs,
            "bytes": r.bytes, "packs_had": r.packs_had, "requests": remote.requests(),
        });
        writeln!(out, "{v}")?;
    } else {
        writeln!(
            out,
            "pulled {} packs ({} bytes) from {url} into {}; {} were there already",
            r.packs,
            r.bytes,
            o.dir.display(),
            r.packs_had
        )?;
    }
    Ok(exit::OK)
}
