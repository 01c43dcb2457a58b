//! `probe store stats` of a format-2 store: every indexed block decoded once, its objects
//! counted by kind. A block's stored bytes are shared among its kinds in proportion to
//! their raw bytes (a block mixes test cases and interactions in one frame).
//!
//! Depends on: `model`, `store` (stats types, kinds, errors), `v2::{index2, layout}`.

use std::collections::BTreeMap;
use std::fs;

use crate::ids::Digest;
use crate::model::{BodyBytes, Interaction, Outcome};
use crate::store::index::sql_err;
use crate::store::maintenance::{KindStats, StoreStats};
use crate::store::{ObjectKind, Store, StoreError, StoredObject};

use super::layout::V2;

impl Store {
    /// [`Store::stats`] of a format-2 store.
    pub(crate) fn stats_2(&self, v2: &V2) -> Result<StoreStats, StoreError> {
        let inner = &self.inner;
        let blocks: Vec<(i64, u64)> = {
            let conn = v2.conn()?;
            let mut st = conn
                .prepare("SELECT id, stored_len FROM blocks ORDER BY id")
                .map_err(sql_err(&v2.index_path))?;
            let rows = st
                .query_map([], |r| {
                    Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)? as u64))
                })
                .map_err(sql_err(&v2.index_path))?;
            rows.collect::<Result<_, _>>()
                .map_err(sql_err(&v2.index_path))?
        };
        // Per kind tag: count, raw bytes, stored bytes (shared out).
        let mut kinds: BTreeMap<u8, (u64, u64, f64)> = BTreeMap::new();
        let mut blob_references = 0u64;
        for (block, stored) in blocks {
            let parsed = v2.block(inner.backend.as_ref(), block)?;
            let ids = parsed.ids();
            let mut raw_by_kind: BTreeMap<u8, u64> = BTreeMap::new();
            for ordinal in 0..parsed.len() as u32 {
                let (tag, payload) =
                    parsed
                        .restore(ordinal)
                        .map_err(|e| StoreError::DamagedObject {
                            id: ids
                                .get(ordinal as usize)
                                .copied()
                                .unwrap_or(Digest([0; 32])),
                            reason: e.to_string(),
                        })?;
                if tag == ObjectKind::Interaction.tag() {
                    let id = ids
                        .get(ordinal as usize)
                        .copied()
                        .unwrap_or(Digest([0; 32]));
                    let i = Interaction::from_payload(id, &payload)?;
                    let response = match &i.outcome {
                        Outcome::Response(r) => r.body.as_ref(),
                        _ => None,
                    };
                    blob_references += [i.request.body.as_ref(), response]
                        .into_iter()
                        .flatten()
                        .filter(|b| matches!(b, BodyBytes::Blob { .. }))
                        .count() as u64;
                }
                let entry = kinds.entry(tag).or_default();
                entry.0 += 1;
                entry.1 += payload.len() as u64;
                *raw_by_kind.entry(tag).or_default() += payload.len() as u64;
            }
            let raw_total: u64 = raw_by_kind.values().sum();
            for (tag, raw) in raw_by_kind {
                let share = raw as f64 / raw_total.max(1) as f64;
                kinds.entry(tag).or_default().2 += share * stored as f64;
            }
        }
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
            blob_references,
            dedup_ratio: 1.0,
            compression_ratio: 1.0,
        };
        let mut blobs = 0;
        for (tag, (count, raw, stored)) in kinds {
            if tag == ObjectKind::Blob.tag() {
                blobs = count;
            }
            let stored = stored.round() as u64;
            stats.objects += count;
            stats.raw_bytes += raw;
            stats.stored_bytes += stored;
            stats.kinds.push(KindStats {
                kind: ObjectKind::from_tag(tag)
                    .map_or_else(|| format!("kind {tag}"), |k| k.name().to_owned()),
                count,
                raw_bytes: raw,
                stored_bytes: stored,
            });
        }
        for pack in inner.backend.packs()? {
            stats.packs += 1;
            stats.pack_bytes += inner.backend.open_pack(&pack)?.1;
        }
        if blobs > 0 {
            stats.dedup_ratio = blob_references as f64 / blobs as f64;
        }
        if stats.stored_bytes > 0 {
            stats.compression_ratio = stats.raw_bytes as f64 / stats.stored_bytes as f64;
        }
        Ok(stats)
    }
}
