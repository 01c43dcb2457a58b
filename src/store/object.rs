//! Objects: the canonical encoding of each stored type, its identity, and compression.
//!
//! Encoding is pure CPU and needs no store, so the engine can call [`encode`] and
//! [`externalize_bodies`] on its own threads and know every id before anything is
//! written. The payload of a typed object is `rmp_serde::to_vec_named` of the value (named
//! fields, so a newer minor can add fields that older readers skip); a blob's payload is
//! its bytes. The identity hashes the uncompressed payload (see [`super::format::object_id`]),
//! so the compression level or dictionary never changes an id.
//!
//! Depends on: `ids`, `model`, `store::format`.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::ids::{BlobId, CaseId, Digest, FindingSetId, RunId};
use crate::model::{
    BodyBytes, FindingSet, Interaction, Outcome, RunEnd, RunOutcome, RunStart, Series, TestCase,
};

use super::error::StoreError;
use super::format::{object_id, ObjectKind, RecordHeader, OBJECT_FORMAT};

/// Bodies longer than this become blobs of their own (shared when identical).
pub const BLOB_THRESHOLD: usize = 256;

/// Whether a body of `len` bytes is stored as a blob of its own rather than inline in its
/// interaction ([`externalize_bodies`]).
pub fn kept_as_blob(len: usize) -> bool {
    len > BLOB_THRESHOLD
}

/// Bytes reserved for a payload before encoding it: a test case or an interaction of a
/// typical API encodes to a few hundred bytes.
const PAYLOAD_CAPACITY: usize = 512;

/// A value the store can keep.
pub trait StoredObject: Serialize + DeserializeOwned {
    /// Its kind tag.
    const KIND: ObjectKind;

    /// The canonical payload.
    fn to_payload(&self) -> Result<Vec<u8>, StoreError> {
        // `rmp_serde::to_vec_named`, into a buffer sized for a typical test case or
        // interaction: growing from empty reallocated it five times or more.
        let mut out = Vec::with_capacity(PAYLOAD_CAPACITY);
        self.serialize(&mut rmp_serde::Serializer::new(&mut out).with_struct_map())
            .map_err(|e| StoreError::Encode {
                kind: Self::KIND,
                reason: e.to_string(),
            })?;
        Ok(out)
    }

    /// Reads a payload back.
    fn from_payload(id: Digest, bytes: &[u8]) -> Result<Self, StoreError> {
        rmp_serde::from_slice(bytes).map_err(|e| StoreError::Decode {
            id,
            kind: Self::KIND,
            reason: e.to_string(),
        })
    }

    /// The index rows this object implies, beyond its location.
    fn index_row(&self) -> IndexRow {
        IndexRow::None
    }
}

/// Raw bytes stored as an object of their own (large bodies, documents).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Blob(#[serde(with = "serde_bytes")] pub Vec<u8>);

impl StoredObject for Blob {
    const KIND: ObjectKind = ObjectKind::Blob;
    fn to_payload(&self) -> Result<Vec<u8>, StoreError> {
        Ok(self.0.clone())
    }
    fn from_payload(_id: Digest, bytes: &[u8]) -> Result<Self, StoreError> {
        Ok(Blob(bytes.to_vec()))
    }
}

impl StoredObject for TestCase {
    const KIND: ObjectKind = ObjectKind::TestCase;
    fn index_row(&self) -> IndexRow {
        IndexRow::Case {
            operation: self.operation.clone(),
            method: self.method.clone(),
        }
    }
}

impl StoredObject for Interaction {
    const KIND: ObjectKind = ObjectKind::Interaction;
    fn index_row(&self) -> IndexRow {
        let blob_of = |b: Option<&BodyBytes>| match b {
            Some(BodyBytes::Blob { id, .. }) => Some(*id),
            _ => None,
        };
        IndexRow::Interaction {
            run: self.run,
            seq: self.seq,
            case: self.case,
            method: self.request.method.clone(),
            status: self.outcome.status(),
            request_body: blob_of(self.request.body.as_ref()),
            response_body: blob_of(self.outcome.response().and_then(|r| r.body.as_ref())),
        }
    }
}

impl StoredObject for RunStart {
    const KIND: ObjectKind = ObjectKind::RunStart;
    fn index_row(&self) -> IndexRow {
        IndexRow::RunStart(Box::new(self.clone()))
    }
}

impl StoredObject for RunEnd {
    const KIND: ObjectKind = ObjectKind::RunEnd;
    fn index_row(&self) -> IndexRow {
        IndexRow::RunEnd {
            run: self.run,
            ended_ms: self.ended_ms,
            outcome: self.outcome,
            interactions: self.interactions,
            findings: self.findings,
        }
    }
}

impl StoredObject for Series {
    const KIND: ObjectKind = ObjectKind::Series;
}

impl StoredObject for FindingSet {
    const KIND: ObjectKind = ObjectKind::FindingSet;
    fn index_row(&self) -> IndexRow {
        IndexRow::FindingSet(Box::new(self.clone()))
    }
}

/// What the index learns from an object besides where it lives.
#[derive(Clone, Debug, PartialEq)]
pub enum IndexRow {
    None,
    Case {
        operation: String,
        method: String,
    },
    Interaction {
        run: RunId,
        seq: u64,
        case: CaseId,
        method: String,
        status: Option<u16>,
        request_body: Option<BlobId>,
        response_body: Option<BlobId>,
    },
    RunStart(Box<RunStart>),
    RunEnd {
        run: RunId,
        ended_ms: u64,
        outcome: RunOutcome,
        interactions: u64,
        findings: FindingSetId,
    },
    FindingSet(Box<FindingSet>),
}

/// An object ready to be written: its identity and uncompressed payload.
#[derive(Clone, Debug, PartialEq)]
pub struct EncodedObject {
    pub kind: ObjectKind,
    pub id: Digest,
    pub payload: Vec<u8>,
    /// Rows for the index, computed while the value was at hand.
    pub row: IndexRow,
}

impl EncodedObject {
    /// The canonical framed bytes that are hashed: `kind tag | major | payload`.
    pub fn framed(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.payload.len() + 2);
        out.push(self.kind.tag());
        out.push(OBJECT_FORMAT.major);
        out.extend_from_slice(&self.payload);
        out
    }
}

/// Encodes a value: pure CPU, no store needed.
pub fn encode<T: StoredObject>(v: &T) -> Result<EncodedObject, StoreError> {
    let payload = v.to_payload()?;
    let kind = T::KIND;
    Ok(EncodedObject {
        kind,
        id: object_id(kind.tag(), OBJECT_FORMAT.major, &payload),
        payload,
        row: v.index_row(),
    })
}

/// Encodes raw bytes as a blob.
pub fn encode_blob(bytes: &[u8]) -> EncodedObject {
    EncodedObject {
        kind: ObjectKind::Blob,
        id: object_id(ObjectKind::Blob.tag(), OBJECT_FORMAT.major, bytes),
        payload: bytes.to_vec(),
        row: IndexRow::None,
    }
}

/// Re-derives the index rows of a payload read back from a pack (reindex uses this, so the
/// rebuilt index equals the one written live). Unknown kinds give no rows.
pub fn row_of_payload(
    kind: ObjectKind,
    id: Digest,
    payload: &[u8],
) -> Result<IndexRow, StoreError> {
    Ok(match kind {
        ObjectKind::Blob => IndexRow::None,
        ObjectKind::TestCase => TestCase::from_payload(id, payload)?.index_row(),
        ObjectKind::Interaction => Interaction::from_payload(id, payload)?.index_row(),
        ObjectKind::RunStart => RunStart::from_payload(id, payload)?.index_row(),
        ObjectKind::RunEnd => RunEnd::from_payload(id, payload)?.index_row(),
        ObjectKind::FindingSet => FindingSet::from_payload(id, payload)?.index_row(),
        ObjectKind::Series => IndexRow::None,
    })
}

/// Moves request and response bodies longer than [`BLOB_THRESHOLD`] into blobs and returns
/// the blobs (to record before the interaction). Pure CPU.
pub fn externalize_bodies(i: &mut Interaction) -> Vec<EncodedObject> {
    let mut blobs = Vec::new();
    let mut move_out = |body: &mut Option<BodyBytes>| {
        if let Some(BodyBytes::Inline(bytes)) = body {
            if kept_as_blob(bytes.len()) {
                let blob = encode_blob(bytes);
                *body = Some(BodyBytes::Blob {
                    id: BlobId(blob.id),
                    len: bytes.len() as u64,
                });
                blobs.push(blob);
            }
        }
    };
    move_out(&mut i.request.body);
    if let Outcome::Response(r) = &mut i.outcome {
        move_out(&mut r.body);
    }
    blobs
}

/// Default zstd level of direct writes.
pub const PUT_LEVEL: i32 = 3;
/// zstd level of the recorder: level 1 gives nearly the ratio of 3 at 1.3x the speed
/// (docs/design-notes.md, Measured ceilings), and the recorder must keep up with the send loop.
pub const RECORDER_LEVEL: i32 = 1;

/// Compresses a payload into a record (header + zstd frame), without a dictionary.
pub fn make_record(
    obj: &EncodedObject,
    compressor: &mut zstd::bulk::Compressor<'_>,
) -> Result<Vec<u8>, StoreError> {
    let mut out = Vec::new();
    append_record(obj, compressor, 0, &mut out)?;
    Ok(out)
}

/// Compresses a payload into a record with `compressor`, which holds dictionary `dict`
/// (0 = none), and appends it to `out`, compressed in place: the recorder puts a whole
/// batch's records in one buffer it keeps, without a buffer per frame.
pub fn append_record(
    obj: &EncodedObject,
    compressor: &mut zstd::bulk::Compressor<'_>,
    dict: u32,
    out: &mut Vec<u8>,
) -> Result<RecordHeader, StoreError> {
    let encode_err = |reason: String| StoreError::Encode {
        kind: obj.kind,
        reason,
    };
    let too_big = || encode_err("object larger than 1 GiB".to_owned());
    let raw_len = u32::try_from(obj.payload.len()).map_err(|_| too_big())?;
    if raw_len > super::format::MAX_PAYLOAD_LEN {
        return Err(too_big());
    }
    let start = out.len();
    let frame_at = start + super::format::RECORD_HEADER_LEN;
    out.resize(frame_at, 0);
    out.reserve(zstd::zstd_safe::compress_bound(obj.payload.len()));
    let mut cursor = std::io::Cursor::new(&mut *out);
    cursor.set_position(frame_at as u64);
    let compressed = compressor.compress_to_buffer(&obj.payload, &mut cursor);
    let frame_len = match compressed {
        Ok(n) => n,
        Err(e) => {
            out.truncate(start);
            return Err(encode_err(format!("zstd: {e}")));
        }
    };
    out.truncate(frame_at + frame_len);
    let header = RecordHeader {
        kind_tag: obj.kind.tag(),
        version: OBJECT_FORMAT,
        flags: 0,
        dict,
        raw_len,
        stored_len: u32::try_from(frame_len).map_err(|_| too_big())?,
        id: obj.id,
    };
    out[start..frame_at].copy_from_slice(&header.encode());
    Ok(header)
}

/// Why a record's data is not the object its header names.
#[derive(Debug)]
pub enum RecordFault {
    /// The record names a newer object format major.
    TooNew(String),
    /// The dictionary named by the record is not in the store.
    MissingDict(u32),
    /// The zstd frame does not decompress to `raw_len` bytes.
    Frame(String),
    /// The payload does not hash to the id.
    Hash(Digest),
}

thread_local! {
    /// Decompression contexts of this thread by (dictionary id, dictionary length); (0, 0)
    /// for records without a dictionary.
    static DECOMPRESSORS: std::cell::RefCell<
        std::collections::HashMap<(u32, usize), zstd::bulk::Decompressor<'static>>,
    > = std::cell::RefCell::new(std::collections::HashMap::new());
}

/// Decompresses and checks one record's data against its header.
pub fn open_record(
    header: &RecordHeader,
    data: &[u8],
    dict: Option<&[u8]>,
) -> Result<Vec<u8>, RecordFault> {
    if header.version.major > OBJECT_FORMAT.major {
        return Err(RecordFault::TooNew(header.version.to_string()));
    }
    let key = match (header.dict, dict) {
        (0, _) => (0, 0),
        (d, None) => return Err(RecordFault::MissingDict(d)),
        (d, Some(bytes)) => (d, bytes.len()),
    };
    // A zstd decompression context (with its dictionary loaded) costs more to create than
    // a small record costs to decompress, so each thread keeps one per dictionary. A
    // dictionary id is its content hash, so a context never meets another dictionary
    // under the same key (and a wrong one would fail the hash check below, not pass).
    let payload = DECOMPRESSORS
        .with(|cell| {
            let mut map = cell.borrow_mut();
            if !map.contains_key(&key) {
                if map.len() >= 16 {
                    map.clear();
                }
                let d = match dict {
                    Some(bytes) if key.0 != 0 => zstd::bulk::Decompressor::with_dictionary(bytes),
                    _ => zstd::bulk::Decompressor::new(),
                }?;
                map.insert(key, d);
            }
            match map.get_mut(&key) {
                Some(d) => d.decompress(data, header.raw_len as usize),
                None => Err(std::io::Error::other("no decompressor")),
            }
        })
        .map_err(|e| RecordFault::Frame(e.to_string()))?;
    if payload.len() != header.raw_len as usize {
        return Err(RecordFault::Frame(format!(
            "{} bytes instead of {}",
            payload.len(),
            header.raw_len
        )));
    }
    let actual = object_id(header.kind_tag, header.version.major, &payload);
    if actual != header.id {
        return Err(RecordFault::Hash(actual));
    }
    Ok(payload)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::synthetic::Synth;

    #[test]
    fn large_bodies_become_blobs_and_small_stay_inline() {
        let mut synth = Synth::new(7);
        let start = synth.run_start(0);
        let run = RunId(encode(&start).unwrap().id);
        let mut seen_blob = false;
        for seq in 0..50 {
            let (_case, mut i) = synth.pair(run, seq);
            let before = i.clone();
            let blobs = externalize_bodies(&mut i);
            for b in &blobs {
                assert!(b.payload.len() > BLOB_THRESHOLD);
                seen_blob = true;
            }
            if blobs.is_empty() {
                assert_eq!(before, i);
            }
        }
        assert!(seen_blob);
    }

    #[test]
    fn id_does_not_depend_on_compression_level() {
        let obj = encode_blob(&b"hello ".repeat(100));
        let mut fast = zstd::bulk::Compressor::new(1).unwrap();
        let mut slow = zstd::bulk::Compressor::new(19).unwrap();
        let a = make_record(&obj, &mut fast).unwrap();
        let b = make_record(&obj, &mut slow).unwrap();
        let ha = RecordHeader::decode(&a).unwrap();
        let hb = RecordHeader::decode(&b).unwrap();
        assert_eq!(ha.id, hb.id);
        let pa = open_record(&ha, &a[50..], None).unwrap();
        let pb = open_record(&hb, &b[50..], None).unwrap();
        assert_eq!(pa, pb);
    }

    #[test]
    fn a_flipped_payload_byte_is_a_hash_fault() {
        let obj = encode_blob(b"abcdefgh");
        let mut c = zstd::bulk::Compressor::new(1).unwrap();
        let rec = make_record(&obj, &mut c).unwrap();
        let mut h = RecordHeader::decode(&rec).unwrap();
        h.id = Digest::of(b"other");
        assert!(matches!(
            open_record(&h, &rec[50..], None),
            Err(RecordFault::Hash(_))
        ));
        let trunc = &rec[50..rec.len() - 2];
        let h = RecordHeader::decode(&rec).unwrap();
        assert!(open_record(&h, trunc, None).is_err());
    }
}
