//! Object identities: BLAKE3 digests and one newtype per kind of stored thing.
//!
//! Every object in the store is named by the BLAKE3 hash of its framed, uncompressed
//! encoding (see `store-format/FORMAT.md`). The newtypes keep a test-case id from being
//! passed where a run id is expected; all of them print as lowercase hex and are accepted
//! on the command line by their shortest unique prefix (the lookup lives in the store index).
//!
//! Depends on nothing else in probe.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Hash sets and maps keyed by ids, for the recorder's per-object bookkeeping: foldhash,
/// seeded per process, in place of std's SipHash, which was a percent of a run's CPU
/// against a fast API. Still seeded, since ids are hashes of what a server sent.
pub type IdHasher = foldhash::fast::RandomState;
pub type IdSet<T> = std::collections::HashSet<T, IdHasher>;
pub type IdMap<K, V> = std::collections::HashMap<K, V, IdHasher>;

/// Length of a digest in bytes.
pub const DIGEST_LEN: usize = 32;

/// A BLAKE3 digest, the identity of one stored object.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest(pub [u8; DIGEST_LEN]);

impl Digest {
    /// Hashes `bytes` with BLAKE3.
    pub fn of(bytes: &[u8]) -> Digest {
        Digest(*blake3::hash(bytes).as_bytes())
    }

    /// The digest as 64 lowercase hex characters.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// The first `n` hex characters, for display.
    pub fn short(&self, n: usize) -> String {
        let mut s = self.to_hex();
        s.truncate(n.min(DIGEST_LEN * 2));
        s
    }

    /// Parses exactly 64 hex characters.
    pub fn from_hex(text: &str) -> Result<Digest, ParseDigestError> {
        if text.len() != DIGEST_LEN * 2 {
            return Err(ParseDigestError {
                text: text.to_owned(),
            });
        }
        let mut out = [0u8; DIGEST_LEN];
        hex::decode_to_slice(text, &mut out).map_err(|_| ParseDigestError {
            text: text.to_owned(),
        })?;
        Ok(Digest(out))
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({})", self.short(12))
    }
}

impl FromStr for Digest {
    type Err = ParseDigestError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Digest::from_hex(s)
    }
}

// Digests are stored as 32 raw bytes (a MessagePack bin), not as a 32-element array:
// the array form is larger and much slower to encode and decode. Human-readable formats
// (JSON output of `probe show --json`) get the hex string instead of a list of numbers.
impl Serialize for Digest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            serializer.serialize_str(&self.to_hex())
        } else {
            serializer.serialize_bytes(&self.0)
        }
    }
}

impl<'de> Deserialize<'de> for Digest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if deserializer.is_human_readable() {
            let text = String::deserialize(deserializer)?;
            return Digest::from_hex(&text).map_err(serde::de::Error::custom);
        }
        let bytes: serde_bytes::ByteBuf = serde_bytes::ByteBuf::deserialize(deserializer)?;
        let array: [u8; DIGEST_LEN] = bytes.as_slice().try_into().map_err(|_| {
            serde::de::Error::invalid_length(bytes.len(), &"a 32-byte BLAKE3 digest")
        })?;
        Ok(Digest(array))
    }
}

/// Hex characters of a finding set's id in a finding's short id.
pub const FINDING_ID_HEX: usize = 8;

/// The short id of the `n`th finding (counted from 1) of a finding set:
/// `<first 8 hex of the set's id>:<n>`. Stable, since a finding set never changes; it is
/// what the console, `probe show`, the page and `probe replay` print and take.
pub fn finding_id(set: FindingSetId, n: usize) -> String {
    format!("{}:{n}", set.short(FINDING_ID_HEX))
}

/// A string that is not a 64-character hex digest.
#[derive(Debug, Clone, thiserror::Error)]
#[error("`{text}` is not a 64-character hex object id")]
pub struct ParseDigestError {
    text: String,
}

macro_rules! define_id {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub Digest);

        impl $name {
            /// The underlying digest.
            pub fn digest(&self) -> Digest {
                self.0
            }
            /// The first `n` hex characters, for display.
            pub fn short(&self, n: usize) -> String {
                self.0.short(n)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!(stringify!($name), "({})"), self.0.short(12))
            }
        }

        impl From<Digest> for $name {
            fn from(d: Digest) -> Self {
                $name(d)
            }
        }
    };
}

define_id!(
    /// Identity of a stored [`crate::model::TestCase`].
    CaseId
);
define_id!(
    /// Identity of a stored [`crate::model::Interaction`].
    InteractionId
);
define_id!(
    /// Identity of a run: the id of its [`crate::model::RunStart`] object.
    RunId
);
define_id!(
    /// Identity of a stored body or document (raw bytes).
    BlobId
);
define_id!(
    /// Identity of a stored [`crate::model::FindingSet`].
    FindingSetId
);
define_id!(
    /// Identity of a stored [`crate::model::RunEnd`] object.
    RunEndId
);
define_id!(
    /// Identity of a stored [`crate::model::Series`].
    SeriesId
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips() {
        let d = Digest::of(b"probe");
        assert_eq!(Digest::from_hex(&d.to_hex()).unwrap(), d);
        assert_eq!(d.short(8).len(), 8);
    }

    #[test]
    fn bad_hex_is_refused_with_the_text() {
        let err = Digest::from_hex("abc").unwrap_err();
        assert!(err.to_string().contains("`abc`"));
        assert!(Digest::from_hex(&"zz".repeat(32)).is_err());
    }

    #[test]
    fn blake3_of_empty_input_is_the_published_value() {
        assert_eq!(
            Digest::of(b"").to_hex(),
            "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
        );
    }

    #[test]
    fn digest_encodes_as_msgpack_bin() {
        let d = Digest::of(b"x");
        let bytes = rmp_serde::to_vec(&d).unwrap();
        assert_eq!(bytes[0], 0xc4); // bin8
        assert_eq!(bytes[1], 32);
        let back: Digest = rmp_serde::from_slice(&bytes).unwrap();
        assert_eq!(back, d);
    }

    #[test]
    fn digest_is_hex_in_json() {
        let d = Digest::of(b"x");
        let text = serde_json::to_string(&d).unwrap();
        assert_eq!(text, format!("\"{}\"", d.to_hex()));
        let back: Digest = serde_json::from_str(&text).unwrap();
        assert_eq!(back, d);
    }
}
