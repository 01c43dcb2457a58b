//! Format-2 block content: the objects of one block, with the ids inside their payloads
//! replaced by references ("splices"). Specified in `store-format/FORMAT.md`, "Format 2
//! blocks".
//!
//! A test case or interaction carries the 32-byte ids of its run, its test case, its body
//! blobs: random bytes that no compressor can shrink, and that cost more than the rest of a
//! compressed interaction. In a block most of them name an object of the same block (an
//! interaction's test case sits just before it) or repeat an id already seen (the run).
//! [`ContentBuilder::add`] takes every 32-byte value that follows the MessagePack `bin8`
//! marker `c4 20` out of the payload and writes a reference in its place: to an earlier
//! object of the block, whose id is recomputed by hashing, or to the block's table of
//! external ids, where each is written once. It needs no schema: a marker that is not an id
//! (inside an inline body) is spliced all the same and restored exactly, so the rule costs
//! bytes at worst, never correctness.
//!
//! [`Parsed::parse`] reads content back (every length and reference checked, typed errors
//! naming the object and the byte), [`Parsed::restore`] gives the exact canonical payload,
//! [`Parsed::ids`] the ids of all objects, hashed once.
//!
//! Pure CPU. Depends on: `ids`, `store::format` (identity), `v2::varint`, `v2::block` (the
//! 2^30 limit).

use std::sync::OnceLock;

use crate::ids::{Digest, IdMap, DIGEST_LEN};
use crate::store::format::{object_id, OBJECT_FORMAT};

use super::block::MAX_BLOCK_LEN;
use super::varint::{self, VarintError};

/// What precedes a spliced value: MessagePack `bin8` of 32 bytes, how every id is encoded.
pub const ID_MARKER: [u8; 2] = [0xc4, 0x20];

/// Fewest bytes an object takes in content: its kind and two one-byte varints.
const MIN_OBJECT_LEN: usize = 3;

/// Why an object cannot be added to a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "an object of {payload_len} bytes does not fit in the block: content and payloads are at \
     most 2^30 bytes, and the content would be {would_be}"
)]
pub struct ContentFull {
    pub payload_len: usize,
    pub would_be: u64,
}

/// Writes the content of one block, object by object.
#[derive(Debug, Default)]
pub struct ContentBuilder {
    out: Vec<u8>,
    count: u32,
    /// The id of each object added so far, to its first ordinal.
    local: IdMap<Digest, u32>,
    /// Each external id written so far, to its index.
    external: IdMap<Digest, u32>,
    /// The splices of the object being added (kept to reuse its allocation).
    pending: Vec<Pending>,
}

/// One id taken out of the payload being added.
#[derive(Clone, Copy, Debug)]
struct Pending {
    /// Offset of the id in the payload.
    at: usize,
    /// `2i` (object i) or `2j + 1` (external id j).
    reference: u64,
    /// Whether this splice defines external id j (writes its 32 bytes).
    defines: Option<Digest>,
}

impl ContentBuilder {
    /// An empty block.
    pub fn new() -> ContentBuilder {
        ContentBuilder::default()
    }

    /// Adds an object (its kind tag and canonical payload); gives its ordinal in the block.
    ///
    /// The kind is a tag byte, not an `ObjectKind`, so that gc and upgrade carry objects of
    /// a kind this build does not know through unchanged.
    pub fn add(&mut self, kind_tag: u8, payload: &[u8]) -> Result<u32, ContentFull> {
        let full = |would_be: u64| ContentFull {
            payload_len: payload.len(),
            would_be,
        };
        if payload.len() > MAX_BLOCK_LEN as usize {
            return Err(full((self.out.len() + payload.len()) as u64));
        }
        let defined_before = self.external.len();
        self.find_splices(payload);
        let start = self.out.len();
        let spliced = self.pending.len() * DIGEST_LEN;
        self.out.push(kind_tag);
        varint::write(&mut self.out, (payload.len() - spliced) as u64);
        varint::write(&mut self.out, self.pending.len() as u64);
        let mut previous_end = 0;
        for p in &self.pending {
            varint::write(&mut self.out, (p.at - previous_end) as u64);
            varint::write(&mut self.out, p.reference);
            if let Some(id) = p.defines {
                self.out.extend_from_slice(&id.0);
            }
            previous_end = p.at + DIGEST_LEN;
        }
        let mut previous_end = 0;
        for p in &self.pending {
            self.out.extend_from_slice(&payload[previous_end..p.at]);
            previous_end = p.at + DIGEST_LEN;
        }
        self.out.extend_from_slice(&payload[previous_end..]);
        if self.out.len() > MAX_BLOCK_LEN as usize {
            let would_be = self.out.len() as u64;
            self.out.truncate(start);
            for p in &self.pending {
                if let Some(id) = p.defines {
                    self.external.remove(&id);
                }
            }
            debug_assert_eq!(self.external.len(), defined_before);
            return Err(full(would_be));
        }
        let ordinal = self.count;
        // At most 2^30 / 3 objects fit in the content, so the count cannot overflow.
        self.count += 1;
        let id = object_id(kind_tag, OBJECT_FORMAT.major, payload);
        // The first copy keeps the id: later references name the earliest object.
        self.local.entry(id).or_insert(ordinal);
        Ok(ordinal)
    }

    /// Fills `pending` with the ids of `payload`: left to right, each 32 bytes after a
    /// marker that has them, the search going on after those 32 bytes.
    fn find_splices(&mut self, payload: &[u8]) {
        self.pending.clear();
        let mut from = 0;
        while let Some(found) = memchr::memmem::find(&payload[from..], &ID_MARKER) {
            let at = from + found + ID_MARKER.len();
            // A marker less than 32 bytes from the end is body: so is every later one.
            let Some(bytes) = payload
                .get(at..)
                .and_then(|rest| rest.first_chunk::<DIGEST_LEN>())
            else {
                break;
            };
            let id = Digest(*bytes);
            let (reference, defines) = if let Some(&i) = self.local.get(&id) {
                (2 * u64::from(i), None)
            } else if let Some(&j) = self.external.get(&id) {
                (2 * u64::from(j) + 1, None)
            } else {
                // Fewer external ids than objects' bytes / 34, so they fit in a u32.
                let j = self.external.len() as u32;
                self.external.insert(id, j);
                (2 * u64::from(j) + 1, Some(id))
            };
            self.pending.push(Pending {
                at,
                reference,
                defines,
            });
            from = at + DIGEST_LEN;
        }
    }

    /// How content refers to `id` once an object naming it was added: `2i` for object *i*
    /// of the block, `2j + 1` for external id *j* (a §3.2 reference); `None` when no
    /// object of the block is or names `id`.
    pub fn reference_of(&self, id: &Digest) -> Option<u64> {
        if let Some(&i) = self.local.get(id) {
            return Some(2 * u64::from(i));
        }
        self.external.get(id).map(|&j| 2 * u64::from(j) + 1)
    }

    /// Objects added so far.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// Bytes of content so far (a writer seals the block when this reaches its size).
    pub fn len(&self) -> usize {
        self.out.len()
    }

    /// Whether no object was added.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The content, to seal with [`super::block::seal`] and [`Self::count`] objects.
    pub fn finish(self) -> Vec<u8> {
        self.out
    }
}

/// Why content is not `count` objects.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ContentError {
    #[error("block content of {len} bytes is more than 2^30")]
    TooLong { len: usize },
    #[error("object {ordinal}: the content ends inside its {field} (byte {at})")]
    Truncated {
        ordinal: u32,
        field: &'static str,
        at: usize,
    },
    #[error("object {ordinal}: its {field} at byte {at} is not a shortest-form varint of 64 bits at most")]
    BadVarint {
        ordinal: u32,
        field: &'static str,
        at: usize,
    },
    #[error("object {ordinal}: restored, it would be {len} bytes (byte {at}), more than 2^30")]
    PayloadTooLarge { ordinal: u32, at: usize, len: u64 },
    #[error("object {ordinal}: its splice at byte {at} goes {past} bytes past the end of its {body_len}-byte body")]
    GapPastBody {
        ordinal: u32,
        at: usize,
        past: u64,
        body_len: u64,
    },
    #[error("object {ordinal}: its splice at byte {at} names object {target}, not an earlier object of the block")]
    NotEarlier {
        ordinal: u32,
        at: usize,
        target: u64,
    },
    #[error("object {ordinal}: its splice at byte {at} names external id {index}, but only {defined} are defined")]
    UndefinedExternal {
        ordinal: u32,
        at: usize,
        index: u64,
        defined: usize,
    },
    #[error("{extra} bytes after the last of the block's {count} objects, from byte {at}")]
    Trailing { count: u32, at: usize, extra: usize },
    #[error("no object {ordinal} in a block of {count}")]
    NoSuchObject { ordinal: u32, count: u32 },
}

/// Where an object of a block sits in its content.
#[derive(Clone, Copy, Debug)]
struct Entry {
    kind: u8,
    /// Offset and length of its body in the content.
    body: u32,
    body_len: u32,
    /// Its splices: `splices[first_splice..first_splice + n_splices]` of the block.
    first_splice: u32,
    n_splices: u32,
}

/// One id to put back into a payload.
#[derive(Clone, Copy, Debug)]
struct Splice {
    /// Body bytes between the previous id (or the start) and this one.
    gap: u32,
    target: Target,
}

#[derive(Clone, Copy, Debug)]
enum Target {
    /// The id of an earlier object of the block.
    Local(u32),
    /// An id of the block's external table.
    External(u32),
}

/// A block's content, read and checked: every object can be restored without a further
/// check.
#[derive(Debug)]
pub struct Parsed {
    content: Vec<u8>,
    objects: Vec<Entry>,
    splices: Vec<Splice>,
    external: Vec<Digest>,
    /// The ids of all objects, hashed the first time one is needed.
    ids: OnceLock<Vec<Digest>>,
}

/// A cursor over content that names the object it reads in its errors.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    ordinal: u32,
}

impl Reader<'_> {
    fn truncated(&self, field: &'static str) -> ContentError {
        ContentError::Truncated {
            ordinal: self.ordinal,
            field,
            at: self.at,
        }
    }

    fn byte(&mut self, field: &'static str) -> Result<u8, ContentError> {
        let b = *self.bytes.get(self.at).ok_or(self.truncated(field))?;
        self.at += 1;
        Ok(b)
    }

    fn varint(&mut self, field: &'static str) -> Result<u64, ContentError> {
        match varint::read(self.bytes, self.at) {
            Ok((value, next)) => {
                self.at = next;
                Ok(value)
            }
            Err(VarintError::Truncated) => Err(self.truncated(field)),
            Err(VarintError::Overlong) => Err(ContentError::BadVarint {
                ordinal: self.ordinal,
                field,
                at: self.at,
            }),
        }
    }

    /// Steps over `len` bytes.
    fn skip(&mut self, len: usize, field: &'static str) -> Result<(), ContentError> {
        match self.at.checked_add(len) {
            Some(end) if end <= self.bytes.len() => {
                self.at = end;
                Ok(())
            }
            _ => Err(self.truncated(field)),
        }
    }

    fn id(&mut self) -> Result<Digest, ContentError> {
        let bytes = self
            .bytes
            .get(self.at..)
            .and_then(|rest| rest.first_chunk::<DIGEST_LEN>());
        let id = Digest(*bytes.ok_or(self.truncated("id"))?);
        self.at += DIGEST_LEN;
        Ok(id)
    }
}

impl Parsed {
    /// Reads `count` objects from `content`, checking every length and reference, so that
    /// [`Parsed::restore`] cannot fail on an object that exists.
    pub fn parse(content: Vec<u8>, count: u32) -> Result<Parsed, ContentError> {
        if content.len() > MAX_BLOCK_LEN as usize {
            return Err(ContentError::TooLong { len: content.len() });
        }
        // `count` comes from a header: reserve no more than the content can hold.
        let room = (count as usize).min(content.len() / MIN_OBJECT_LEN);
        let mut objects = Vec::with_capacity(room);
        let mut splices = Vec::new();
        let mut external: Vec<Digest> = Vec::new();
        let mut at = 0;
        for ordinal in 0..count {
            let mut r = Reader {
                bytes: &content,
                at,
                ordinal,
            };
            let kind = r.byte("kind")?;
            let lengths_at = r.at;
            let body_len = r.varint("body-len")?;
            let n_splices = r.varint("n-splice")?;
            let restored = n_splices
                .checked_mul(DIGEST_LEN as u64)
                .and_then(|ids| ids.checked_add(body_len))
                .unwrap_or(u64::MAX);
            if restored > u64::from(MAX_BLOCK_LEN) {
                return Err(ContentError::PayloadTooLarge {
                    ordinal,
                    at: lengths_at,
                    len: restored,
                });
            }
            let first_splice = splices.len();
            let mut used = 0u64;
            for _ in 0..n_splices {
                let gap_at = r.at;
                let gap = r.varint("gap")?;
                used = used.saturating_add(gap);
                if used > body_len {
                    return Err(ContentError::GapPastBody {
                        ordinal,
                        at: gap_at,
                        past: used - body_len,
                        body_len,
                    });
                }
                let ref_at = r.at;
                let reference = r.varint("ref")?;
                let index = reference >> 1;
                let target = if reference & 1 == 0 {
                    if index >= u64::from(ordinal) {
                        return Err(ContentError::NotEarlier {
                            ordinal,
                            at: ref_at,
                            target: index,
                        });
                    }
                    Target::Local(index as u32)
                } else if index < external.len() as u64 {
                    Target::External(index as u32)
                } else if index == external.len() as u64 {
                    external.push(r.id()?);
                    Target::External(index as u32)
                } else {
                    return Err(ContentError::UndefinedExternal {
                        ordinal,
                        at: ref_at,
                        index,
                        defined: external.len(),
                    });
                };
                // `used <= body_len <= 2^30`, so every gap fits in a u32.
                splices.push(Splice {
                    gap: gap as u32,
                    target,
                });
            }
            // `body_len <= 2^30` (checked above), and so is the content.
            let body = r.at as u32;
            r.skip(body_len as usize, "body")?;
            objects.push(Entry {
                kind,
                body,
                body_len: body_len as u32,
                first_splice: first_splice as u32,
                n_splices: n_splices as u32,
            });
            at = r.at;
        }
        if at != content.len() {
            return Err(ContentError::Trailing {
                count,
                at,
                extra: content.len() - at,
            });
        }
        Ok(Parsed {
            content,
            objects,
            splices,
            external,
            ids: OnceLock::new(),
        })
    }

    /// Objects in the block.
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    /// Bytes of content the block holds (what a cache of parsed blocks counts).
    pub fn content_len(&self) -> usize {
        self.content.len()
    }

    /// Whether the block holds no object (a header never says so; content may).
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// For each object, whether a later object of the block names it by a local reference
    /// (an interaction its test case, a test case the one it was changed from).
    pub fn named_locally(&self) -> Vec<bool> {
        let mut named = vec![false; self.objects.len()];
        for splice in &self.splices {
            if let Target::Local(i) = splice.target {
                if let Some(slot) = named.get_mut(i as usize) {
                    *slot = true;
                }
            }
        }
        named
    }

    /// The kind tag of object `ordinal`.
    pub fn kind(&self, ordinal: u32) -> Option<u8> {
        self.objects.get(ordinal as usize).map(|e| e.kind)
    }

    /// The block's external ids, in the order they were defined.
    pub fn external(&self) -> &[Digest] {
        &self.external
    }

    /// The kind tag and exact canonical payload of object `ordinal`.
    pub fn restore(&self, ordinal: u32) -> Result<(u8, Vec<u8>), ContentError> {
        let entry = self
            .objects
            .get(ordinal as usize)
            .ok_or(ContentError::NoSuchObject {
                ordinal,
                count: self.objects.len() as u32,
            })?;
        // Only a payload naming an earlier object of the block needs the block's ids.
        let needs_ids = self
            .splices_of(entry)
            .iter()
            .any(|s| matches!(s.target, Target::Local(_)));
        let ids = if needs_ids { self.ids() } else { &[] };
        let mut payload = Vec::new();
        self.restore_into(entry, ids, &mut payload);
        Ok((entry.kind, payload))
    }

    /// The id of every object, in block order: BLAKE3(kind | object-format major |
    /// restored payload), computed once, in one pass (each object's local references
    /// name objects hashed before it).
    pub fn ids(&self) -> &[Digest] {
        self.ids.get_or_init(|| {
            let mut ids = Vec::with_capacity(self.objects.len());
            let mut payload = Vec::new();
            for entry in &self.objects {
                self.restore_into(entry, &ids, &mut payload);
                ids.push(object_id(entry.kind, OBJECT_FORMAT.major, &payload));
            }
            ids
        })
    }

    fn splices_of(&self, entry: &Entry) -> &[Splice] {
        let first = entry.first_splice as usize;
        &self.splices[first..first + entry.n_splices as usize]
    }

    /// Writes the payload of `entry` into `out`. `ids` holds at least the ids of the
    /// objects before it; [`Parsed::parse`] proved every range and index used here.
    fn restore_into(&self, entry: &Entry, ids: &[Digest], out: &mut Vec<u8>) {
        let start = entry.body as usize;
        let mut rest = &self.content[start..start + entry.body_len as usize];
        out.clear();
        out.reserve(rest.len() + entry.n_splices as usize * DIGEST_LEN);
        for splice in self.splices_of(entry) {
            let (before, after) = rest.split_at(splice.gap as usize);
            out.extend_from_slice(before);
            let id = match splice.target {
                Target::Local(i) => &ids[i as usize],
                Target::External(j) => &self.external[j as usize],
            };
            out.extend_from_slice(&id.0);
            rest = after;
        }
        out.extend_from_slice(rest);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn id_of(kind: u8, payload: &[u8]) -> Digest {
        object_id(kind, OBJECT_FORMAT.major, payload)
    }

    /// A payload with `ids` as MessagePack bin8 values between short strings.
    fn payload_naming(ids: &[Digest]) -> Vec<u8> {
        let mut p = b"\x82\xa3run".to_vec();
        for id in ids {
            p.extend_from_slice(&ID_MARKER);
            p.extend_from_slice(&id.0);
            p.extend_from_slice(b"\xa4case");
        }
        p
    }

    fn build(objects: &[(u8, Vec<u8>)]) -> Vec<u8> {
        let mut b = ContentBuilder::new();
        for (i, (kind, payload)) in objects.iter().enumerate() {
            assert_eq!(b.add(*kind, payload), Ok(i as u32));
        }
        assert_eq!(b.count() as usize, objects.len());
        b.finish()
    }

    fn assert_restores(objects: &[(u8, Vec<u8>)]) -> Parsed {
        let content = build(objects);
        let parsed = Parsed::parse(content, objects.len() as u32).expect("parse");
        assert_eq!(parsed.len(), objects.len());
        for (i, (kind, payload)) in objects.iter().enumerate() {
            assert_eq!(
                &parsed.restore(i as u32).unwrap(),
                &(*kind, payload.clone())
            );
            assert_eq!(parsed.ids()[i], id_of(*kind, payload));
        }
        parsed
    }

    fn occurrences(haystack: &[u8], needle: &[u8]) -> usize {
        memchr::memmem::find_iter(haystack, needle).count()
    }

    #[test]
    fn an_id_of_an_earlier_object_becomes_a_local_reference() {
        let case = (2, b"\x81\xa9operation\xa5getIt".to_vec());
        let case_id = id_of(case.0, &case.1);
        let interaction = (3, payload_naming(&[case_id]));
        let content = build(&[case.clone(), interaction.clone()]);
        assert_eq!(occurrences(&content, &case_id.0), 0);
        // Object 1: kind 3, body-len (payload without the id), one splice: gap 7 (the
        // map's first bytes and the marker), ref 0 (object 0), then the body.
        let second = &content[1 + 1 + 1 + case.1.len()..];
        assert_eq!(
            second[..5],
            [3, (interaction.1.len() - 32) as u8, 1, 7, 0][..]
        );
        let parsed = assert_restores(&[case, interaction]);
        assert!(parsed.external().is_empty());
    }

    #[test]
    fn an_unknown_id_is_external_and_written_once() {
        let run = Digest::of(b"a run elsewhere");
        let objects = [
            (3, payload_naming(&[run, run])),
            (3, payload_naming(&[run])),
        ];
        let content = build(&objects);
        assert_eq!(occurrences(&content, &run.0), 1);
        let parsed = assert_restores(&objects);
        assert_eq!(parsed.external(), &[run]);
    }

    #[test]
    fn a_false_marker_in_an_inline_body_restores_exactly() {
        // An inline body that happens to hold `c4 20` and 32 more bytes of text: spliced
        // as an external "id" all the same, and put back where it was.
        let mut payload = b"\x81\xa6inline\xc4\x40".to_vec();
        payload.extend_from_slice(b"text \xc4\x20 not an id, only 32 bytes of text..... the end");
        let parsed = assert_restores(&[(3, payload.clone())]);
        assert_eq!(parsed.external().len(), 1);
        // A marker inside a spliced id is part of the id, not a second marker.
        let mut tricky = ID_MARKER.to_vec();
        tricky.extend_from_slice(&[0xc4, 0x20].repeat(16));
        tricky.extend_from_slice(&[0x20; 40]);
        let parsed = assert_restores(&[(1, tricky)]);
        assert_eq!(parsed.external().len(), 1);
    }

    #[test]
    fn a_marker_near_the_end_stays_in_the_body() {
        for tail in [0usize, 1, 31, 32, 33] {
            let mut payload = b"abc".to_vec();
            payload.extend_from_slice(&ID_MARKER);
            payload.extend(std::iter::repeat_n(0x5a, tail));
            let objects = [(1, payload.clone())];
            let content = build(&objects);
            let spliced = tail >= 32;
            // kind, body-len, n-splice.
            assert_eq!(content[2], u8::from(spliced), "tail {tail}");
            let parsed = assert_restores(&objects);
            assert_eq!(parsed.external().len(), usize::from(spliced), "tail {tail}");
        }
        // Too short for any id, and empty.
        assert_restores(&[(1, vec![0xc4]), (1, vec![]), (1, ID_MARKER.to_vec())]);
    }

    #[test]
    fn an_object_that_repeats_an_earlier_one_is_named_by_the_first() {
        let blob = (1, b"same bytes".to_vec());
        let id = id_of(blob.0, &blob.1);
        let objects = [blob.clone(), blob, (3, payload_naming(&[id]))];
        let content = build(&objects);
        // The last object's only splice names object 0 (ref 0), not 1 (ref 2).
        let last = &content[content.len() - (objects[2].1.len() - 32) - 2..];
        assert_eq!(&last[..2], &[7, 0]);
        assert_restores(&objects);
    }

    #[test]
    fn unknown_kinds_are_carried_and_hashed_as_they_are() {
        assert_restores(&[(200, b"a kind of a later minor".to_vec())]);
    }

    #[test]
    fn a_full_block_refuses_the_object_and_stays_as_it_was() {
        let mut b = ContentBuilder::new();
        b.add(1, b"x").unwrap();
        let big = vec![0u8; MAX_BLOCK_LEN as usize + 1];
        let err = b.add(1, &big).unwrap_err();
        assert_eq!(err.payload_len, big.len());
        assert_eq!(b.count(), 1);
        assert_eq!(b.finish(), [1, 1, 0, b'x']);
    }

    #[test]
    fn each_content_fault_names_its_object_and_byte() {
        let case = (2, b"case".to_vec());
        let case_id = id_of(2, b"case");
        let good = build(&[case, (3, payload_naming(&[case_id, Digest::of(b"r")]))]);
        let parse = |bytes: &[u8], count| Parsed::parse(bytes.to_vec(), count).unwrap_err();

        let body_len = payload_naming(&[case_id, Digest::of(b"r")]).len() - 64;
        assert_eq!(
            parse(&good[..good.len() - 1], 2),
            ContentError::Truncated {
                ordinal: 1,
                field: "body",
                at: good.len() - body_len,
            }
        );
        assert_eq!(
            parse(&[], 1),
            ContentError::Truncated {
                ordinal: 0,
                field: "kind",
                at: 0
            }
        );
        assert_eq!(
            parse(&[2, 0x80], 1),
            ContentError::Truncated {
                ordinal: 0,
                field: "body-len",
                at: 1
            }
        );
        assert_eq!(
            parse(&[2, 0x81, 0x00, 0], 1),
            ContentError::BadVarint {
                ordinal: 0,
                field: "body-len",
                at: 1
            }
        );
        // A body of 2^30 + 1 bytes.
        assert_eq!(
            parse(&[2, 0x81, 0x80, 0x80, 0x80, 0x04, 0], 1),
            ContentError::PayloadTooLarge {
                ordinal: 0,
                at: 1,
                len: (1 << 30) + 1
            }
        );
        // 2^26 splices restore to 2^31 bytes: refused before reading any of them.
        assert_eq!(
            parse(&[2, 0, 0x80, 0x80, 0x80, 0x20], 1),
            ContentError::PayloadTooLarge {
                ordinal: 0,
                at: 1,
                len: 1 << 31
            }
        );
        // One splice whose gap runs past a body of 1 byte.
        assert_eq!(
            parse(&[2, 1, 1, 2, 1], 1),
            ContentError::GapPastBody {
                ordinal: 0,
                at: 3,
                past: 1,
                body_len: 1
            }
        );
        // Object 0 names object 0 (itself), then object 1 names object 1.
        assert_eq!(
            parse(&[2, 0, 1, 0, 0], 1),
            ContentError::NotEarlier {
                ordinal: 0,
                at: 4,
                target: 0
            }
        );
        assert_eq!(
            parse(&[2, 0, 0, 2, 0, 1, 0, 2], 2),
            ContentError::NotEarlier {
                ordinal: 1,
                at: 7,
                target: 1
            }
        );
        // External id 1 before id 0 was defined.
        assert_eq!(
            parse(&[2, 0, 1, 0, 3], 1),
            ContentError::UndefinedExternal {
                ordinal: 0,
                at: 4,
                index: 1,
                defined: 0
            }
        );
        // External id 0 defined, but its 32 bytes cut short.
        assert_eq!(
            parse(&[2, 0, 1, 0, 1, 0xaa, 0xbb], 1),
            ContentError::Truncated {
                ordinal: 0,
                field: "id",
                at: 5
            }
        );
        let mut more = good.clone();
        more.push(0);
        assert_eq!(
            parse(&more, 2),
            ContentError::Trailing {
                count: 2,
                at: good.len(),
                extra: 1
            }
        );
        assert!(matches!(
            parse(&good, 3),
            ContentError::Truncated {
                ordinal: 2,
                field: "kind",
                ..
            }
        ));
        let parsed = Parsed::parse(good, 2).unwrap();
        assert_eq!(
            parsed.restore(2).unwrap_err(),
            ContentError::NoSuchObject {
                ordinal: 2,
                count: 2
            }
        );
        assert_eq!(parsed.kind(1), Some(3));
        assert_eq!(parsed.kind(2), None);
    }

    /// One piece of a generated payload.
    #[derive(Clone, Debug)]
    enum Piece {
        Bytes(Vec<u8>),
        /// `c4 20` and an id: of an earlier object (by this number modulo the objects
        /// before), or else one of a few ids from elsewhere, so that some repeat.
        Id {
            earlier: bool,
            pick: usize,
        },
        /// `c4 20` followed by fewer than 32 bytes: last in the payload, it stays body.
        ShortTail(Vec<u8>),
    }

    fn piece() -> impl Strategy<Value = Piece> {
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..40).prop_map(Piece::Bytes),
            // Bytes where the marker is likely: its two bytes and their neighbours.
            proptest::collection::vec(prop_oneof![Just(0xc4u8), Just(0x20), Just(0x00)], 0..40)
                .prop_map(Piece::Bytes),
            (any::<bool>(), any::<usize>()).prop_map(|(earlier, pick)| Piece::Id { earlier, pick }),
            proptest::collection::vec(any::<u8>(), 0..32).prop_map(Piece::ShortTail),
        ]
    }

    fn generate(plan: &[(u8, Vec<Piece>)]) -> Vec<(u8, Vec<u8>)> {
        let elsewhere: Vec<Digest> = (0u8..5).map(|i| Digest::of(&[i])).collect();
        let mut objects: Vec<(u8, Vec<u8>)> = Vec::new();
        for (kind, pieces) in plan {
            let mut payload = Vec::new();
            for p in pieces {
                match p {
                    Piece::Bytes(b) => payload.extend_from_slice(b),
                    Piece::Id { earlier, pick } => {
                        let id = if *earlier && !objects.is_empty() {
                            let (k, p) = &objects[pick % objects.len()];
                            id_of(*k, p)
                        } else {
                            elsewhere[pick % elsewhere.len()]
                        };
                        payload.extend_from_slice(&ID_MARKER);
                        payload.extend_from_slice(&id.0);
                    }
                    Piece::ShortTail(b) => {
                        payload.extend_from_slice(&ID_MARKER);
                        payload.extend_from_slice(b);
                    }
                }
            }
            objects.push((*kind, payload));
        }
        objects
    }

    proptest! {
        /// Whatever the payloads, markers and references, every object restores byte for
        /// byte, and the ids the block computes are those of the payloads.
        #[test]
        fn every_payload_restores_exactly(
            plan in proptest::collection::vec(
                (1u8..9, proptest::collection::vec(piece(), 0..8)),
                1..24,
            ),
        ) {
            let objects = generate(&plan);
            let content = build(&objects);
            let parsed = Parsed::parse(content, objects.len() as u32).expect("parse");
            for (i, (kind, payload)) in objects.iter().enumerate() {
                let (k, p) = parsed.restore(i as u32).expect("restore");
                prop_assert_eq!(k, *kind);
                prop_assert_eq!(&p, payload);
                prop_assert_eq!(parsed.ids()[i], id_of(*kind, payload));
            }
            // Each external id is written once.
            for id in parsed.external() {
                prop_assert_eq!(
                    parsed.external().iter().filter(|e| *e == id).count(),
                    1
                );
            }
        }

        /// Parsing any bytes ends without a panic, and so does restoring what parsed.
        #[test]
        fn parsing_any_bytes_never_panics(bytes: Vec<u8>, count in 0u32..64) {
            exercise(bytes, count);
        }

        /// Nor does parsing real content with bytes changed, cut or added.
        #[test]
        fn parsing_damaged_content_never_panics(
            plan in proptest::collection::vec(
                (1u8..9, proptest::collection::vec(piece(), 0..6)),
                1..8,
            ),
            changes in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..4),
            cut in any::<usize>(),
            count_delta in -1i64..2,
        ) {
            let objects = generate(&plan);
            let mut content = build(&objects);
            for (at, value) in changes {
                if !content.is_empty() {
                    let at = at % content.len();
                    content[at] = value;
                }
            }
            if cut % 3 == 0 && !content.is_empty() {
                content.truncate(cut % content.len());
            }
            let count = (objects.len() as i64 + count_delta).max(0) as u32;
            exercise(content, count);
        }
    }

    fn exercise(bytes: Vec<u8>, count: u32) {
        if let Ok(parsed) = Parsed::parse(bytes, count) {
            let ids = parsed.ids().to_vec();
            for i in 0..=count {
                if let Ok((kind, payload)) = parsed.restore(i) {
                    assert_eq!(ids[i as usize], id_of(kind, &payload));
                }
            }
        }
    }
}
