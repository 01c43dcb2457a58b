//! `probe store stats` of a format-2 store: every indexed block decoded once, its objects
//! counted by kind. A block's stored bytes are shared among its kinds in proportion to
//! their raw bytes (a block mixes test cases and interactions in one frame).
//!
//! Depends on: `model`, `store` (stats types, kinds, errors), `v2::{index2, layout}`.

use std::collections::BTreeMap;

use crate::ids::Digest;
use crate::model::{BodyBytes, Interaction, Outcome};
use crate::store::context::Context;
use crate::store::error::StoreError;
use crate::store::format::ObjectKind;
use crate::store::index::sql_err;
use crate::store::maintenance::stats_of;
use crate::store::object::StoredObject;
use crate::store::reports::StoreStats;

use super::layout::V2;

/// [`crate::store::Store::stats`] of a format-2 store.
pub(crate) fn stats_2(ctx: &Context, v2: &V2) -> Result<StoreStats, StoreError> {
    let inner = ctx;
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
    let totals = kinds
        .into_iter()
        .map(|(tag, (count, raw, stored))| (tag, count, raw, stored.round() as u64))
        .collect();
    stats_of(ctx, totals, blob_references)
}
