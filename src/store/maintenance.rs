//! What every layout's maintenance shares: the references between objects (the one list
//! verify checks and gc follows), the end of every verify (references, unfinished runs)
//! and the sizes every stats reports.
//!
//! All maintenance starts from the packs, not the index: the packs are the truth and the
//! index is derived from them. The facade's side (`Store::verify`, `ExclusiveStore::gc`, ...)
//! is `store/exclusive.rs`; each format's own steps are in its folder (format 1's in
//! `v1/maintain.rs`; format 2's in `v2::verify`, `v2::maintain`, `v2::gc`, `v2::stats`).
//!
//! Depends on: `store::{context, dict, error, format, index, reports}`, `ids`, `model`.

use std::collections::HashMap;
use std::fs;

use crate::ids::Digest;
use crate::model::{FindingSet, Interaction, Outcome, RunEnd, RunStart, TestCase};

use super::context::Context;
use super::dict;
use super::error::StoreError;
use super::format::ObjectKind;
use super::index::RunSummary;
use super::object::StoredObject;
use super::reports::{KindStats, Problem, StoreStats, VerifyReport};

/// A reference from one object to another, to check once all objects are known.
pub(crate) struct Ref {
    from: Digest,
    from_kind: ObjectKind,
    to: Digest,
    to_kind: ObjectKind,
    role: &'static str,
}

pub(crate) fn refs_of(
    kind: ObjectKind,
    id: Digest,
    payload: &[u8],
    out: &mut Vec<Ref>,
) -> Result<(), StoreError> {
    for (to, to_kind, role) in references(kind, id, payload)? {
        out.push(Ref {
            from: id,
            from_kind: kind,
            to,
            to_kind,
            role,
        });
    }
    Ok(())
}

/// Every object one object names, with the kind it must be and the role it plays
/// (FORMAT.md section 4, "References that verify checks"). The one list of reference
/// kinds: verify checks each, and gc keeps what each names
/// ([`follow_references`]), so the two can never disagree about what a store needs.
pub(crate) fn references(
    kind: ObjectKind,
    id: Digest,
    payload: &[u8],
) -> Result<Vec<(Digest, ObjectKind, &'static str)>, StoreError> {
    let mut out = Vec::new();
    let mut push = |to: Digest, to_kind: ObjectKind, role: &'static str| {
        out.push((to, to_kind, role));
    };
    match kind {
        ObjectKind::Blob => {}
        ObjectKind::TestCase => {
            let c = TestCase::from_payload(id, payload)?;
            if let Some(m) = c.mutation {
                push(m.from.case.0, ObjectKind::TestCase, "accepted test case");
            }
        }
        ObjectKind::Interaction => {
            let i = Interaction::from_payload(id, payload)?;
            push(i.run.0, ObjectKind::RunStart, "run");
            push(i.case.0, ObjectKind::TestCase, "test case");
            if let Some(crate::model::BodyBytes::Blob { id: b, .. }) = &i.request.body {
                push(b.0, ObjectKind::Blob, "request body");
            }
            if let Outcome::Response(r) = &i.outcome {
                if let Some(crate::model::BodyBytes::Blob { id: b, .. }) = &r.body {
                    push(b.0, ObjectKind::Blob, "response body");
                }
            }
        }
        ObjectKind::RunStart => {
            let r = RunStart::from_payload(id, payload)?;
            push(r.document.0, ObjectKind::Blob, "document");
            for blob in r.documents.values() {
                push(blob.0, ObjectKind::Blob, "document file");
            }
            for blob in r.inputs.values() {
                push(blob.0, ObjectKind::Blob, "input file");
            }
        }
        ObjectKind::RunEnd => {
            let e = RunEnd::from_payload(id, payload)?;
            push(e.run.0, ObjectKind::RunStart, "run");
            push(e.findings.0, ObjectKind::FindingSet, "finding set");
            for series in &e.series {
                push(series.0, ObjectKind::Series, "series");
            }
        }
        ObjectKind::Series => {
            let s = crate::model::Series::from_payload(id, payload)?;
            push(s.run.0, ObjectKind::RunStart, "run");
            for step in &s.steps {
                push(step.interaction.0, ObjectKind::Interaction, "series step");
            }
        }
        ObjectKind::FindingSet => {
            let s = FindingSet::from_payload(id, payload)?;
            push(s.run.0, ObjectKind::RunStart, "run");
            for f in &s.findings {
                for i in &f.interactions {
                    push(i.0, ObjectKind::Interaction, "finding interaction");
                }
                if let Some(r) = &f.reproducer {
                    push(r.0, ObjectKind::Interaction, "finding reproducer");
                }
            }
        }
    }
    Ok(out)
}

/// gc's walk past the index: reads each object of `todo` and keeps (`keep` returns true
/// for an object it had not kept yet) everything it names by [`references`], then what
/// those name in turn, so that gc keeps every object a kept object names. The index finds
/// the roots and the common edges cheaply (an interaction's test case and bodies); only
/// payloads say the rest (a changed test case's accepted one, a seeded case no run sent
/// among them; a series' steps; a finding's interactions and reproducer). An object that
/// is not in the store is skipped (verify names it); one that cannot be read stops gc:
/// what it names cannot be known.
///
/// Objects are read in the order given, then in the order found: the order the store holds
/// them in, so that a format-2 read finds most objects in the block it read last (in hash
/// order, each read decoded a block again: 20 times as slow at 100,000 interactions).
pub(crate) fn follow_references(
    read: &dyn Fn(Digest) -> Result<(ObjectKind, Vec<u8>), StoreError>,
    mut todo: Vec<Digest>,
    keep: &mut dyn FnMut(&Digest) -> bool,
) -> Result<(), StoreError> {
    let mut at = 0;
    while let Some(&id) = todo.get(at) {
        at += 1;
        let (kind, payload) = match read(id) {
            Ok(read) => read,
            Err(StoreError::NotFound { .. }) => continue,
            Err(e) => return Err(e),
        };
        for (to, to_kind, _) in references(kind, id, &payload)? {
            if keep(&to) && to_kind != ObjectKind::Blob {
                todo.push(to);
            }
        }
    }
    Ok(())
}

/// Each reference's target must be a valid object of the kind it names.
fn check_refs(refs: &[Ref], valid: &HashMap<Digest, u8>, report: &mut VerifyReport) {
    for r in refs {
        match valid.get(&r.to) {
            Some(tag) if *tag == r.to_kind.tag() => {}
            Some(tag) => report.problems.push(Problem {
                id: Some(r.from),
                message: format!(
                    "{} {}: its {} {} is a {}, not a {}",
                    r.from_kind,
                    r.from,
                    r.role,
                    r.to,
                    kind_name(*tag),
                    r.to_kind
                ),
            }),
            None => report.problems.push(Problem {
                id: Some(r.from),
                message: format!(
                    "{} {} references missing {} {} ({})",
                    r.from_kind, r.from, r.to_kind, r.to, r.role
                ),
            }),
        }
    }
}

pub(crate) fn kind_name(tag: u8) -> String {
    ObjectKind::from_tag(tag).map_or_else(|| format!("kind {tag}"), |k| k.name().to_owned())
}

/// The end of every layout's verify: every reference between the valid objects checked,
/// and each run without an end manifest noted.
pub(crate) fn check_refs_and_runs(
    refs: &[Ref],
    valid: &HashMap<Digest, u8>,
    runs: &[RunSummary],
    report: &mut VerifyReport,
) -> Result<(), StoreError> {
    check_refs(refs, valid, report);
    // Unfinished runs are a fact, not a problem: a crash leaves one.
    for run in runs {
        if run.ended_ms.is_none() {
            report.notes.push(format!(
                "run {} has no end manifest (still running, or interrupted)",
                run.id.short(12)
            ));
        }
    }
    Ok(())
}

/// The stats of per-kind totals (tag, count, raw bytes, stored bytes) and the number of
/// body references to blobs, with the store's pack, index and dictionary sizes: both
/// formats'.
pub(crate) fn stats_of(
    ctx: &Context,
    totals: Vec<(u8, u64, u64, u64)>,
    blob_refs: u64,
) -> Result<StoreStats, StoreError> {
    let inner = ctx;
    let mut stats = StoreStats {
        kinds: Vec::new(),
        objects: 0,
        raw_bytes: 0,
        stored_bytes: 0,
        pack_bytes: 0,
        packs: 0,
        index_bytes: fs::metadata(&inner.index_path)
            .map(|m| m.len())
            .unwrap_or(0),
        dicts: 0,
        dict_bytes: 0,
        blob_references: blob_refs,
        dedup_ratio: 1.0,
        compression_ratio: 1.0,
    };
    let mut blobs = 0;
    for (tag, count, raw, stored) in totals {
        if tag == ObjectKind::Blob.tag() {
            blobs = count;
        }
        stats.objects += count;
        stats.raw_bytes += raw;
        stats.stored_bytes += stored;
        stats.kinds.push(KindStats {
            kind: kind_name(tag),
            count,
            raw_bytes: raw,
            stored_bytes: stored,
        });
    }
    for pack in inner.backend.packs()? {
        stats.packs += 1;
        stats.pack_bytes += inner.backend.open_pack(&pack)?.1;
    }
    if let Ok(entries) = fs::read_dir(inner.dicts_dir()) {
        for entry in entries.flatten() {
            if entry
                .file_name()
                .to_str()
                .and_then(dict::parse_file_name)
                .is_some()
            {
                stats.dicts += 1;
                stats.dict_bytes += entry.metadata().map(|m| m.len()).unwrap_or(0);
            }
        }
    }
    if blobs > 0 {
        stats.dedup_ratio = blob_refs as f64 / blobs as f64;
    }
    if stats.stored_bytes > 0 {
        stats.compression_ratio = stats.raw_bytes as f64 / stats.stored_bytes as f64;
    }
    Ok(stats)
}
