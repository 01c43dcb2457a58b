//! `blocks.cols`: the query columns of an exchange block (FORMAT.md §10.3), what page queries,
//! `tally` and summaries read instead of decoding payloads.
//!
//! A zstd frame (level 9) of, in block order: `count` kind tags, then per interaction
//! `seq − previous seq` (zigzag varint, the first from 0), `status` (0: a transport
//! error), `case` (a [`Target`]: a §3.2 reference + 1, or 0 and the id's 32 bytes),
//! `operation` and `method` (`strings.id`), the request and response body blobs (0: none,
//! 1 and the id's 32 bytes, or a reference + 2); per test case `operation` and `method`;
//! nothing for other kinds. Ids themselves come from the decoded block (its objects hashed,
//! its external table).
//!
//! Why an id may be written out: the splice rule (FORMAT.md §9.3) knows no schema, so a
//! false marker just before an id (a seq of 0xc420 encodes as `cd c4 20`) swallows the
//! id's own marker, and the id stays in the payload instead of becoming a reference.
//!
//! Columns are derived data: the writer makes them from the rows it has at hand
//! ([`Draft`]), `reindex` from the decoded objects, and both must give the same bytes.
//!
//! Depends on: `ids`, `store` (kinds, rows, errors), `v2::{content, varint}`.

use std::collections::HashMap;

use crate::ids::Digest;
use crate::store::error::StoreError;
use crate::store::format::ObjectKind;
use crate::store::object::{row_of_payload, IndexRow};

use super::content::{ContentBuilder, Parsed};
use super::varint;

/// zstd level of the columns frame, decoded on every page. Level 9 makes the columns of
/// real fuzzing traffic 8% smaller than level 3 (about 0.4 bytes an interaction) for a few
/// milliseconds a 4 MiB block.
const COLS_LEVEL: i32 = 9;
/// Most bytes a columns frame may decompress to: 11 varints of at most 10 bytes and a
/// kind per object of a 2^30-byte block would be less; anything larger is damage.
const MAX_COLS_LEN: usize = 64 << 20;

/// What a column names: an object by a §3.2 reference of the block's content (`2i` object
/// *i*, `2j + 1` external id *j*), or by its id written out when no splice took it out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Ref(u64),
    Id(Digest),
}

impl Target {
    /// `id`, named by the reference `builder` has for it, else written out.
    fn of(id: &Digest, reference: Option<u64>) -> Target {
        reference.map_or(Target::Id(*id), Target::Ref)
    }
}

/// One object's columns before its strings are interned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DraftEntry {
    Interaction {
        seq: u64,
        status: Option<u16>,
        /// The test case.
        case: Target,
        operation: String,
        method: String,
        request: Option<Target>,
        response: Option<Target>,
    },
    Case {
        operation: String,
        method: String,
    },
    Other(u8),
}

/// The columns of one block as a writer collects them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Draft {
    pub entries: Vec<DraftEntry>,
}

impl Draft {
    /// Notes the object just added to `builder` with `row`; `operation` is the operation of
    /// an interaction's test case (an interaction does not carry it).
    pub fn note(
        &mut self,
        builder: &ContentBuilder,
        kind: ObjectKind,
        row: &IndexRow,
        operation: &str,
    ) -> Result<(), StoreError> {
        let entry = match row {
            IndexRow::Interaction {
                seq,
                case,
                method,
                status,
                request_body,
                response_body,
                ..
            } => {
                let target = |id: &Digest| Target::of(id, builder.reference_of(id));
                DraftEntry::Interaction {
                    seq: *seq,
                    status: *status,
                    case: target(&case.0),
                    operation: operation.to_owned(),
                    method: method.clone(),
                    request: request_body.map(|b| target(&b.0)),
                    response: response_body.map(|b| target(&b.0)),
                }
            }
            IndexRow::Case { operation, method } => DraftEntry::Case {
                operation: operation.clone(),
                method: method.clone(),
            },
            _ => DraftEntry::Other(kind.tag()),
        };
        self.entries.push(entry);
        Ok(())
    }

    /// The columns of a decoded block, as its writer made them. `operations` gives the
    /// operation of test cases of earlier blocks (and learns those of this one); an
    /// interaction whose test case it does not know gets an empty operation, and its case
    /// id is listed in the answer so that the caller can fill it in later.
    pub fn of_block(
        parsed: &Parsed,
        operations: &mut HashMap<Digest, String>,
    ) -> Result<(Draft, Vec<(usize, Digest)>), String> {
        let ids = parsed.ids();
        let mut local: HashMap<Digest, u32> = HashMap::new();
        let external: HashMap<Digest, u32> = parsed
            .external()
            .iter()
            .enumerate()
            .map(|(j, id)| (*id, j as u32))
            .collect();
        let mut draft = Draft::default();
        let mut unknown = Vec::new();
        for (ordinal, id) in ids.iter().enumerate() {
            let ordinal = ordinal as u32;
            let tag = parsed.kind(ordinal).unwrap_or(0);
            let reference = |id: &Digest, local: &HashMap<Digest, u32>| {
                local
                    .get(id)
                    .map(|i| 2 * u64::from(*i))
                    .or_else(|| external.get(id).map(|j| 2 * u64::from(*j) + 1))
            };
            let entry = match ObjectKind::from_tag(tag) {
                Some(kind @ (ObjectKind::Interaction | ObjectKind::TestCase)) => {
                    let (_, payload) = parsed.restore(ordinal).map_err(|e| e.to_string())?;
                    let row = row_of_payload(kind, *id, &payload)
                        .map_err(|e| format!("object {ordinal} ({kind}): {e}"))?;
                    match row {
                        IndexRow::Interaction {
                            seq,
                            case,
                            method,
                            status,
                            request_body,
                            response_body,
                            ..
                        } => {
                            let operation = match operations.get(&case.0) {
                                Some(op) => op.clone(),
                                None => {
                                    unknown.push((draft.entries.len(), case.0));
                                    String::new()
                                }
                            };
                            let target = |id: &Digest| Target::of(id, reference(id, &local));
                            DraftEntry::Interaction {
                                seq,
                                status,
                                case: target(&case.0),
                                operation,
                                method,
                                request: request_body.map(|b| target(&b.0)),
                                response: response_body.map(|b| target(&b.0)),
                            }
                        }
                        IndexRow::Case { operation, method } => {
                            operations.insert(*id, operation.clone());
                            DraftEntry::Case { operation, method }
                        }
                        _ => DraftEntry::Other(tag),
                    }
                }
                _ => DraftEntry::Other(tag),
            };
            // The first copy keeps the id, as content references name the earliest object.
            local.entry(*id).or_insert(ordinal);
            draft.entries.push(entry);
        }
        Ok((draft, unknown))
    }

    /// The `cols` bytes, interning each operation and method through `intern`.
    pub fn encode(
        &self,
        intern: &mut dyn FnMut(&str) -> Result<i64, StoreError>,
    ) -> Result<Vec<u8>, StoreError> {
        let mut raw = Vec::with_capacity(self.entries.len() * 8);
        for e in &self.entries {
            raw.push(match e {
                DraftEntry::Interaction { .. } => ObjectKind::Interaction.tag(),
                DraftEntry::Case { .. } => ObjectKind::TestCase.tag(),
                DraftEntry::Other(tag) => *tag,
            });
        }
        let mut previous = 0u64;
        for e in &self.entries {
            match e {
                DraftEntry::Interaction {
                    seq,
                    status,
                    case,
                    operation,
                    method,
                    request,
                    response,
                } => {
                    varint::write(&mut raw, zigzag(seq.wrapping_sub(previous) as i64));
                    previous = *seq;
                    varint::write(&mut raw, u64::from(status.unwrap_or(0)));
                    match case {
                        Target::Ref(r) => varint::write(&mut raw, r + 1),
                        Target::Id(id) => {
                            raw.push(0);
                            raw.extend_from_slice(&id.0);
                        }
                    }
                    varint::write(&mut raw, intern(operation)? as u64);
                    varint::write(&mut raw, intern(method)? as u64);
                    for body in [request, response] {
                        match body {
                            None => raw.push(0),
                            Some(Target::Id(id)) => {
                                raw.push(1);
                                raw.extend_from_slice(&id.0);
                            }
                            Some(Target::Ref(r)) => varint::write(&mut raw, r + 2),
                        }
                    }
                }
                DraftEntry::Case { operation, method } => {
                    varint::write(&mut raw, intern(operation)? as u64);
                    varint::write(&mut raw, intern(method)? as u64);
                }
                DraftEntry::Other(_) => {}
            }
        }
        zstd::bulk::compress(&raw, COLS_LEVEL)
            .map_err(|e| StoreError::Other(format!("cannot compress query columns: {e}")))
    }
}

/// One object's columns as read back, strings as `strings.id`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Col {
    Interaction {
        seq: u64,
        status: Option<u16>,
        case: Target,
        operation: i64,
        method: i64,
        request: Option<Target>,
        response: Option<Target>,
    },
    Case {
        operation: i64,
        method: i64,
    },
    Other(u8),
}

/// Reads columns left to right.
struct Reader<'a> {
    raw: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn varint(&mut self, field: &str) -> Result<u64, String> {
        let (v, after) = varint::read(self.raw, self.at)
            .map_err(|e| format!("columns end in {field}: {e:?}"))?;
        self.at = after;
        Ok(v)
    }

    /// An id written out: 32 bytes.
    fn id(&mut self, field: &str) -> Result<Digest, String> {
        let bytes = self
            .raw
            .get(self.at..)
            .and_then(|rest| rest.first_chunk::<32>())
            .ok_or_else(|| format!("columns end in the id of {field}"))?;
        self.at += 32;
        Ok(Digest(*bytes))
    }

    fn string(&mut self, field: &str) -> Result<i64, String> {
        let v = self.varint(field)?;
        i64::try_from(v).map_err(|_| format!("string id {v} out of range"))
    }

    /// A test case: reference + 1, or 0 and its id.
    fn case(&mut self) -> Result<Target, String> {
        match self.varint("case")? {
            0 => Ok(Target::Id(self.id("case")?)),
            v => Ok(Target::Ref(v - 1)),
        }
    }

    /// A body blob: 0 none, 1 and its id, or reference + 2.
    fn body(&mut self, field: &str) -> Result<Option<Target>, String> {
        match self.varint(field)? {
            0 => Ok(None),
            1 => Ok(Some(Target::Id(self.id(field)?))),
            v => Ok(Some(Target::Ref(v - 2))),
        }
    }
}

/// Decodes `cols` of a block of `count` objects; the error says what is wrong.
pub fn decode(bytes: &[u8], count: u32) -> Result<Vec<Col>, String> {
    let raw = zstd::bulk::decompress(bytes, MAX_COLS_LEN)
        .map_err(|e| format!("the columns frame does not decompress: {e}"))?;
    let count = count as usize;
    let kinds = raw
        .get(..count)
        .ok_or_else(|| format!("{} bytes of columns for {count} objects", raw.len()))?;
    let mut r = Reader {
        raw: &raw,
        at: count,
    };
    let mut previous = 0u64;
    let mut out = Vec::with_capacity(count);
    for &kind in kinds {
        out.push(if kind == ObjectKind::Interaction.tag() {
            let seq = previous.wrapping_add(unzigzag(r.varint("seq")?) as u64);
            previous = seq;
            let status = r.varint("status")?;
            let status = u16::try_from(status).map_err(|_| format!("status {status}"))?;
            Col::Interaction {
                seq,
                status: (status != 0).then_some(status),
                case: r.case()?,
                operation: r.string("operation")?,
                method: r.string("method")?,
                request: r.body("request")?,
                response: r.body("response")?,
            }
        } else if kind == ObjectKind::TestCase.tag() {
            Col::Case {
                operation: r.string("operation")?,
                method: r.string("method")?,
            }
        } else {
            Col::Other(kind)
        });
    }
    Ok(out)
}

/// The id `target` names in `parsed`.
pub fn resolve(parsed: &Parsed, target: Target) -> Option<Digest> {
    let reference = match target {
        Target::Id(id) => return Some(id),
        Target::Ref(reference) => reference,
    };
    let index = usize::try_from(reference / 2).ok()?;
    if reference.is_multiple_of(2) {
        parsed.ids().get(index).copied()
    } else {
        parsed.external().get(index).copied()
    }
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zigzag_round_trips_both_signs() {
        for v in [0i64, 1, -1, 63, -64, i64::MAX, i64::MIN] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
    }

    #[test]
    fn damaged_columns_are_an_error_not_a_panic() {
        for bytes in [&b""[..], b"\x28\xb5\x2f\xfd", b"not zstd at all"] {
            assert!(decode(bytes, 3).is_err());
        }
        let short = zstd::bulk::compress(&[ObjectKind::Interaction.tag(), 2], 3).unwrap();
        assert!(decode(&short, 1).is_err());
        assert!(decode(&short, 5).is_err());
    }
}
