//! Versions and byte framing of the store: the code side of `store-format/FORMAT.md`.
//!
//! Three things carry a version, each checked on its own:
//! - the **store format** (`FORMAT` file in the store directory, `major.minor`);
//! - the **object format** (in every pack header and every record header);
//! - the **index schema** (a row of the SQLite `meta` table; see [`super::index`]).
//!
//! A newer *major* is refused with [`StoreError::VersionTooNew`]; a newer *minor* is read and
//! what it adds is ignored. Encoding and decoding of each binary header sit side by side here
//! so that they cannot drift apart.
//!
//! Depends on: `ids` and the store error.

use std::fmt;

use crate::ids::Digest;

use super::error::StoreError;
pub use super::kind::ObjectKind;

/// A `major.minor` format version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct FormatVersion {
    pub major: u8,
    pub minor: u8,
}

impl fmt::Display for FormatVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

impl FormatVersion {
    /// Parses `major.minor`.
    pub fn parse(text: &str) -> Option<FormatVersion> {
        let (major, minor) = text.trim().split_once('.')?;
        Some(FormatVersion {
            major: major.parse().ok()?,
            minor: minor.parse().ok()?,
        })
    }

    /// Refuses a version whose major is newer than `supported`.
    pub fn check_readable_by(self, supported: FormatVersion, what: &str) -> Result<(), StoreError> {
        if self.major > supported.major {
            return Err(StoreError::VersionTooNew {
                what: what.to_owned(),
                found: self.to_string(),
                supported: supported.to_string(),
            });
        }
        Ok(())
    }
}

/// The store format this build writes and reads.
///
/// Changes (keep in step with `store-format/FORMAT.md` § Changes):
/// - 1.0: first format: packs of zstd records, SQLite index schema 1, dictionaries specified
///   (records name one by id; this build writes dictionary 0 = none).
/// - 1.1: series objects; 1.2: strategy `shrink`, finding reproducers; 1.3: strategies
///   `pinpoint` and `auth`, mutation kind `refusedValue`, `TestCase.credentials` and
///   `TestCase.shrinking`; 1.4: `TestCase.identity`, series kinds `access`, `credentials` and
///   `methods`, and their step roles.
///
/// Object format 1.5 adds `Interaction.retried` (a request sent again on a fresh
/// connection), absent when the request was sent once; the store formats stay 1.4 and 2.0.
/// Object format 1.6 adds `FindingSet.checks` (the definitions of the user checks that
/// judged), absent when none did.
pub const STORE_FORMAT: FormatVersion = FormatVersion { major: 1, minor: 4 };

/// The object format this build writes (the major is part of every object's identity).
pub const OBJECT_FORMAT: FormatVersion = FormatVersion { major: 1, minor: 6 };

/// First line of the `FORMAT` file, followed by a space and `major.minor`.
pub const FORMAT_FILE_TAG: &str = "probe-store";

/// Renders the `FORMAT` file.
pub fn format_file_text(v: FormatVersion) -> String {
    format!("{FORMAT_FILE_TAG} {v}\n")
}

/// Parses the `FORMAT` file.
pub fn parse_format_file(text: &str) -> Option<FormatVersion> {
    let line = text.lines().next()?;
    let rest = line.strip_prefix(FORMAT_FILE_TAG)?.strip_prefix(' ')?;
    FormatVersion::parse(rest)
}

/// The identity of an object: BLAKE3 over `kind tag | object-format major | payload`.
///
/// The minor version is deliberately not hashed: a newer minor that encodes the same value
/// the same way keeps the same id.
pub fn object_id(kind_tag: u8, major: u8, payload: &[u8]) -> Digest {
    let mut h = blake3::Hasher::new();
    h.update(&[kind_tag, major]);
    h.update(payload);
    Digest(*h.finalize().as_bytes())
}

/// Magic at the start of every pack file.
pub const PACK_MAGIC: [u8; 8] = *b"PROBEPAK";
/// Length of a pack header: magic, major, minor, two reserved bytes.
pub const PACK_HEADER_LEN: usize = 12;

/// Encodes a pack header.
pub fn encode_pack_header(v: FormatVersion) -> [u8; PACK_HEADER_LEN] {
    let mut out = [0u8; PACK_HEADER_LEN];
    out[..8].copy_from_slice(&PACK_MAGIC);
    out[8] = v.major;
    out[9] = v.minor;
    out
}

/// Decodes a pack header; `None` when the bytes are not one.
pub fn decode_pack_header(bytes: &[u8]) -> Option<FormatVersion> {
    if bytes.len() < PACK_HEADER_LEN || bytes[..8] != PACK_MAGIC {
        return None;
    }
    Some(FormatVersion {
        major: bytes[8],
        minor: bytes[9],
    })
}

/// Magic at the start of every record.
pub const RECORD_MAGIC: [u8; 2] = *b"PO";
/// Length of a record header.
pub const RECORD_HEADER_LEN: usize = 50;
/// Largest payload a reader accepts; a bigger length is a damaged header, not an object.
pub const MAX_PAYLOAD_LEN: u32 = 1 << 30;

/// The fixed header in front of each compressed object in a pack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordHeader {
    pub kind_tag: u8,
    /// Object format the payload was encoded with.
    pub version: FormatVersion,
    /// Reserved, 0 in format 1.
    pub flags: u8,
    /// zstd dictionary the data was compressed with; 0 = none.
    pub dict: u32,
    /// Length of the uncompressed payload.
    pub raw_len: u32,
    /// Length of the zstd frame that follows the header.
    pub stored_len: u32,
    pub id: Digest,
}

/// Why bytes are not a record header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderError {
    /// Fewer bytes than a header.
    Short,
    /// The magic is wrong.
    BadMagic,
    /// A length no writer produces.
    BadLength,
}

impl RecordHeader {
    /// The header's bytes.
    pub fn encode(&self) -> [u8; RECORD_HEADER_LEN] {
        let mut out = [0u8; RECORD_HEADER_LEN];
        out[0..2].copy_from_slice(&RECORD_MAGIC);
        out[2] = self.kind_tag;
        out[3] = self.version.major;
        out[4] = self.version.minor;
        out[5] = self.flags;
        out[6..10].copy_from_slice(&self.dict.to_le_bytes());
        out[10..14].copy_from_slice(&self.raw_len.to_le_bytes());
        out[14..18].copy_from_slice(&self.stored_len.to_le_bytes());
        out[18..50].copy_from_slice(&self.id.0);
        out
    }

    /// Reads a header from the front of `bytes`.
    pub fn decode(bytes: &[u8]) -> Result<RecordHeader, HeaderError> {
        if bytes.len() < RECORD_HEADER_LEN {
            return Err(HeaderError::Short);
        }
        if bytes[0..2] != RECORD_MAGIC {
            return Err(HeaderError::BadMagic);
        }
        let u32_at = |i: usize| {
            let mut b = [0u8; 4];
            b.copy_from_slice(&bytes[i..i + 4]);
            u32::from_le_bytes(b)
        };
        let mut id = [0u8; 32];
        id.copy_from_slice(&bytes[18..50]);
        let header = RecordHeader {
            kind_tag: bytes[2],
            version: FormatVersion {
                major: bytes[3],
                minor: bytes[4],
            },
            flags: bytes[5],
            dict: u32_at(6),
            raw_len: u32_at(10),
            stored_len: u32_at(14),
            id: Digest(id),
        };
        if header.raw_len > MAX_PAYLOAD_LEN || header.stored_len > MAX_PAYLOAD_LEN {
            return Err(HeaderError::BadLength);
        }
        Ok(header)
    }

    /// Bytes the whole record takes in the pack.
    pub fn record_len(&self) -> u64 {
        RECORD_HEADER_LEN as u64 + u64::from(self.stored_len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_header_round_trips() {
        let h = RecordHeader {
            kind_tag: 3,
            version: OBJECT_FORMAT,
            flags: 0,
            dict: 0xdead_beef,
            raw_len: 1234,
            stored_len: 567,
            id: Digest::of(b"x"),
        };
        let bytes = h.encode();
        assert_eq!(RecordHeader::decode(&bytes), Ok(h));
        assert_eq!(RecordHeader::decode(&bytes[..10]), Err(HeaderError::Short));
        let mut bad = bytes;
        bad[0] = b'X';
        assert_eq!(RecordHeader::decode(&bad), Err(HeaderError::BadMagic));
    }

    #[test]
    fn format_file_round_trips_and_newer_major_is_refused() {
        let text = format_file_text(STORE_FORMAT);
        assert_eq!(text, "probe-store 1.4\n");
        assert_eq!(parse_format_file(&text), Some(STORE_FORMAT));
        assert_eq!(parse_format_file("git 1.0"), None);
        let newer = FormatVersion { major: 2, minor: 0 };
        let err = newer.check_readable_by(STORE_FORMAT, "store").unwrap_err();
        assert!(err.to_string().contains("2.0"), "{err}");
        assert!(err.to_string().contains("1.4"), "{err}");
        let newer_minor = FormatVersion { major: 1, minor: 7 };
        assert!(newer_minor.check_readable_by(STORE_FORMAT, "store").is_ok());
    }

    #[test]
    fn kinds_round_trip_through_tags() {
        for k in ObjectKind::ALL {
            assert_eq!(ObjectKind::from_tag(k.tag()), Some(k));
        }
        assert_eq!(ObjectKind::from_tag(200), None);
    }
}
