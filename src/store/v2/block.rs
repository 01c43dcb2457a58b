//! Format-2 blocks: the 24-byte block header, its check value, and sealing and opening one
//! block (header + one zstd frame). Specified in `store-format/FORMAT.md`, "Format 2 blocks".
//!
//! A block is the unit a format-2 pack is made of: many objects' content
//! ([`super::content`]) compressed as one zstd frame, so small objects share one frame's
//! context instead of each paying for its own. The header says which stream the block
//! belongs to, how many objects it holds, how long its frame is, and carries a check over
//! header and frame, so a scan or verify tells a damaged block (check fails) from a torn
//! one (frame runs past the end of the file) without decompressing anything.
//!
//! Everything here reads untrusted bytes: lengths are checked against the 2^30 limit before
//! anything is allocated, and every fault is a typed error, never a panic.
//!
//! Pure: bytes in, bytes out; no files, no index. Depends on: `store::format` (the limit).

use std::num::NonZeroU32;
use std::ops::Deref;

use zstd::dict::{DecoderDictionary, EncoderDictionary};
use zstd::zstd_safe::{self, CParameter};

use crate::store::format::MAX_PAYLOAD_LEN;

/// Magic at the start of every block.
pub const BLOCK_MAGIC: [u8; 2] = *b"PB";
/// Length of a block header.
pub const BLOCK_HEADER_LEN: usize = 24;
/// Bytes of the header the check value covers (all but the check itself).
const CHECKED_HEADER_LEN: usize = 20;
/// Largest `raw-len` and `stored-len` a reader accepts (2^30, as for format-1 records): a
/// larger value is a damaged header, and never an allocation of that size.
pub const MAX_BLOCK_LEN: u32 = MAX_PAYLOAD_LEN;

/// Which objects a block holds; blocks of one stream share a dictionary and a size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stream {
    /// Test cases and interactions of one run, in sending order.
    Exchange,
    /// Blobs: large bodies and documents.
    Blob,
    /// Runs, run ends, finding sets, series, dictionaries.
    Meta,
}

impl Stream {
    /// Every stream, in byte order.
    pub const ALL: [Stream; 3] = [Stream::Exchange, Stream::Blob, Stream::Meta];

    /// The header byte.
    pub fn byte(self) -> u8 {
        match self {
            Stream::Exchange => 1,
            Stream::Blob => 2,
            Stream::Meta => 3,
        }
    }

    /// The stream of a header byte; `None` for a value format 2.0 does not define.
    pub fn from_byte(byte: u8) -> Option<Stream> {
        Stream::ALL.into_iter().find(|s| s.byte() == byte)
    }
}

/// The fixed header in front of each block's frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockHeader {
    pub stream: Stream,
    /// Reserved, 0 in format 2.0; readers ignore it.
    pub flags: u8,
    /// The key of the dictionary the frame was compressed with, if any.
    pub dict: Option<NonZeroU32>,
    /// Objects in the block's content (at least 1).
    pub count: u32,
    /// Length of the content the frame decompresses to.
    pub raw_len: u32,
    /// Length of the zstd frame after the header.
    pub stored_len: u32,
    /// First 4 bytes (LE) of BLAKE3(header bytes 0..20 ‖ frame).
    pub check: u32,
}

/// Why bytes are not a block header: what is wrong, and at which byte of the header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    /// Fewer bytes than a header: at the end of a pack, a torn tail.
    #[error("block header: only {len} bytes, a header is {BLOCK_HEADER_LEN}")]
    Short { len: usize },
    #[error("block header byte 0: magic {found:02x?}, not \"PB\"")]
    BadMagic { found: [u8; 2] },
    #[error("block header byte 2: unknown stream {value} (1 exchange, 2 blob, 3 meta)")]
    UnknownStream { value: u8 },
    #[error("block header byte 8: count 0, a block holds at least one object")]
    NoObjects,
    /// A length no writer produces.
    #[error("block header byte {at}: {field} {value} is more than 2^30")]
    TooLarge {
        at: usize,
        field: &'static str,
        value: u32,
    },
}

/// Why a block cannot be opened.
#[derive(Debug, thiserror::Error)]
pub enum BlockError {
    #[error(transparent)]
    Header(#[from] HeaderError),
    /// The frame runs past the end of the bytes: at the end of a pack, a torn tail.
    #[error("block torn: the header names a frame of {stored_len} bytes, {present} follow it")]
    Torn { stored_len: u32, present: usize },
    /// Header or frame changed since they were written.
    #[error("block damaged: check value {stored:08x} (header byte 20), computed {computed:08x}")]
    Check { stored: u32, computed: u32 },
    #[error("block compressed with dictionary {key:08x}, which is not at hand")]
    MissingDictionary { key: u32 },
    /// The frame (from header byte 24) is not one zstd frame that decompresses.
    #[error("block frame (byte 24): {reason}")]
    Frame { reason: String },
    #[error("block frame holds {actual} bytes of content, the header says {raw_len}")]
    RawLen { raw_len: u32, actual: u64 },
}

impl BlockError {
    /// Whether the block is cut short (header or frame past the end of the bytes), as an
    /// interrupted append leaves the end of a pack, rather than damaged.
    pub fn is_torn(&self) -> bool {
        matches!(
            self,
            BlockError::Torn { .. } | BlockError::Header(HeaderError::Short { .. })
        )
    }
}

/// Why content cannot be sealed into a block.
#[derive(Debug, thiserror::Error)]
pub enum SealError {
    #[error("a block holds at least one object")]
    NoObjects,
    #[error("block content of {len} bytes is more than 2^30")]
    ContentTooLarge { len: usize },
    #[error("block frame of {len} bytes is more than 2^30")]
    FrameTooLarge { len: usize },
    #[error("zstd could not compress the block: {0}")]
    Zstd(#[source] std::io::Error),
}

impl BlockHeader {
    /// The header's bytes.
    pub fn encode(&self) -> [u8; BLOCK_HEADER_LEN] {
        let mut out = [0u8; BLOCK_HEADER_LEN];
        out[0..2].copy_from_slice(&BLOCK_MAGIC);
        out[2] = self.stream.byte();
        out[3] = self.flags;
        out[4..8].copy_from_slice(&self.dict.map_or(0, NonZeroU32::get).to_le_bytes());
        out[8..12].copy_from_slice(&self.count.to_le_bytes());
        out[12..16].copy_from_slice(&self.raw_len.to_le_bytes());
        out[16..20].copy_from_slice(&self.stored_len.to_le_bytes());
        out[20..24].copy_from_slice(&self.check.to_le_bytes());
        out
    }

    /// Reads a header from the front of `bytes` (what follows it is not looked at).
    pub fn decode(bytes: &[u8]) -> Result<BlockHeader, HeaderError> {
        let Some(bytes) = bytes.first_chunk::<BLOCK_HEADER_LEN>() else {
            return Err(HeaderError::Short { len: bytes.len() });
        };
        let found = [bytes[0], bytes[1]];
        if found != BLOCK_MAGIC {
            return Err(HeaderError::BadMagic { found });
        }
        let stream =
            Stream::from_byte(bytes[2]).ok_or(HeaderError::UnknownStream { value: bytes[2] })?;
        let u32_at = |at: usize| {
            u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
        };
        let count = u32_at(8);
        if count == 0 {
            return Err(HeaderError::NoObjects);
        }
        let length = |at: usize, field: &'static str| {
            let value = u32_at(at);
            if value > MAX_BLOCK_LEN {
                return Err(HeaderError::TooLarge { at, field, value });
            }
            Ok(value)
        };
        Ok(BlockHeader {
            stream,
            flags: bytes[3],
            dict: NonZeroU32::new(u32_at(4)),
            count,
            raw_len: length(12, "raw-len")?,
            stored_len: length(16, "stored-len")?,
            check: u32_at(20),
        })
    }

    /// Bytes the whole block takes in its pack: header and frame.
    pub fn block_len(&self) -> u64 {
        BLOCK_HEADER_LEN as u64 + u64::from(self.stored_len)
    }

    /// The check value of this header (its bytes 0..20, so not `check` itself) followed by
    /// `frame`.
    pub fn check_of(&self, frame: &[u8]) -> u32 {
        let mut h = blake3::Hasher::new();
        h.update(&self.encode()[..CHECKED_HEADER_LEN]);
        h.update(frame);
        let [a, b, c, d, ..] = *h.finalize().as_bytes();
        u32::from_le_bytes([a, b, c, d])
    }
}

/// How a block's content is compressed.
#[derive(Clone, Copy)]
pub enum Compression<'a> {
    /// Without a dictionary, at this zstd level.
    Level(i32),
    /// With the dictionary object whose key is `key` (first 4 bytes of its id, LE), prepared
    /// at the level to compress at: zstd takes the level of a prepared dictionary.
    Dictionary {
        key: NonZeroU32,
        prepared: &'a EncoderDictionary<'a>,
    },
}

/// Compresses `content` (`count` objects, see [`super::content`]) into one block of
/// `stream`: the header, then one zstd frame with its checksum and content size, without
/// the dictionary id (the header names the dictionary; 4 bytes saved per block).
pub fn seal(
    stream: Stream,
    count: u32,
    content: &[u8],
    compression: Compression<'_>,
) -> Result<Vec<u8>, SealError> {
    if count == 0 {
        return Err(SealError::NoObjects);
    }
    let raw_len = u32::try_from(content.len())
        .ok()
        .filter(|&n| n <= MAX_BLOCK_LEN)
        .ok_or(SealError::ContentTooLarge { len: content.len() })?;
    let (compressor, dict) = match compression {
        Compression::Level(level) => (zstd::bulk::Compressor::new(level), None),
        Compression::Dictionary { key, prepared } => (
            zstd::bulk::Compressor::with_prepared_dictionary(prepared),
            Some(key),
        ),
    };
    let mut compressor = compressor.map_err(SealError::Zstd)?;
    // The checksum lets zstd itself catch a frame decompressed with the wrong dictionary;
    // the content size lets a reader refuse a frame whose length disagrees with the header
    // before it allocates.
    for p in [
        CParameter::ChecksumFlag(true),
        CParameter::ContentSizeFlag(true),
        CParameter::DictIdFlag(false),
    ] {
        compressor.set_parameter(p).map_err(SealError::Zstd)?;
    }
    let mut out = vec![0u8; BLOCK_HEADER_LEN];
    out.reserve(zstd_safe::compress_bound(content.len()));
    let mut cursor = std::io::Cursor::new(&mut out);
    cursor.set_position(BLOCK_HEADER_LEN as u64);
    let frame_len = compressor
        .compress_to_buffer(content, &mut cursor)
        .map_err(SealError::Zstd)?;
    out.truncate(BLOCK_HEADER_LEN + frame_len);
    let stored_len = u32::try_from(frame_len)
        .ok()
        .filter(|&n| n <= MAX_BLOCK_LEN)
        .ok_or(SealError::FrameTooLarge { len: frame_len })?;
    let mut header = BlockHeader {
        stream,
        flags: 0,
        dict,
        count,
        raw_len,
        stored_len,
        check: 0,
    };
    header.check = header.check_of(&out[BLOCK_HEADER_LEN..]);
    out[..BLOCK_HEADER_LEN].copy_from_slice(&header.encode());
    Ok(out)
}

/// The dictionary lookup of a reader that has none: blocks that name one fail with
/// [`BlockError::MissingDictionary`].
pub fn no_dictionary(_key: NonZeroU32) -> Option<&'static DecoderDictionary<'static>> {
    None
}

/// Opens the block at the front of `bytes` (what follows it is not looked at): decodes the
/// header, checks that the frame is all there and matches the check value, and decompresses
/// it, with the dictionary `dictionary` gives for the key the header names. Gives the
/// header and the content (to parse with [`super::content::Parsed::parse`]).
pub fn open<'d, D>(
    bytes: &[u8],
    dictionary: impl FnOnce(NonZeroU32) -> Option<D>,
) -> Result<(BlockHeader, Vec<u8>), BlockError>
where
    D: Deref<Target = DecoderDictionary<'d>>,
{
    let header = BlockHeader::decode(bytes)?;
    let after = &bytes[BLOCK_HEADER_LEN..];
    let Some(frame) = after.get(..header.stored_len as usize) else {
        return Err(BlockError::Torn {
            stored_len: header.stored_len,
            present: after.len(),
        });
    };
    let computed = header.check_of(frame);
    if computed != header.check {
        return Err(BlockError::Check {
            stored: header.check,
            computed,
        });
    }
    let frame_err = |reason: String| BlockError::Frame { reason };
    // Exactly one frame: zstd would also decompress frames written after the first.
    match zstd_safe::find_frame_compressed_size(frame) {
        Ok(n) if n == frame.len() => {}
        Ok(n) => {
            return Err(frame_err(format!(
                "one zstd frame of {n} bytes, then {} more",
                frame.len() - n.min(frame.len())
            )))
        }
        Err(code) => return Err(frame_err(zstd_safe::get_error_name(code).to_owned())),
    }
    match zstd_safe::get_frame_content_size(frame) {
        Ok(Some(n)) if n == u64::from(header.raw_len) => {}
        Ok(Some(n)) => {
            return Err(BlockError::RawLen {
                raw_len: header.raw_len,
                actual: n,
            })
        }
        Ok(None) => return Err(frame_err("the frame does not give its content size".into())),
        Err(_) => return Err(frame_err("not a zstd frame header".into())),
    }
    let held = match header.dict {
        Some(key) => Some(dictionary(key).ok_or(BlockError::MissingDictionary { key: key.get() })?),
        None => None,
    };
    let decompressor = match &held {
        Some(d) => zstd::bulk::Decompressor::with_prepared_dictionary(d),
        None => zstd::bulk::Decompressor::new(),
    };
    let content = decompressor
        .and_then(|mut d| d.decompress(frame, header.raw_len as usize))
        .map_err(|e| frame_err(e.to_string()))?;
    if content.len() != header.raw_len as usize {
        return Err(BlockError::RawLen {
            raw_len: header.raw_len,
            actual: content.len() as u64,
        });
    }
    Ok((header, content))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn header() -> BlockHeader {
        BlockHeader {
            stream: Stream::Exchange,
            flags: 0,
            dict: NonZeroU32::new(0xdead_beef),
            count: 3,
            raw_len: 1234,
            stored_len: 567,
            check: 0x0102_0304,
        }
    }

    fn sealed(content: &[u8]) -> Vec<u8> {
        seal(Stream::Blob, 1, content, Compression::Level(3)).expect("seal")
    }

    #[test]
    fn header_round_trips_little_endian() {
        let h = header();
        let bytes = h.encode();
        assert_eq!(&bytes[..4], b"PB\x01\x00");
        assert_eq!(&bytes[4..8], &0xdead_beef_u32.to_le_bytes());
        assert_eq!(&bytes[20..24], &[4, 3, 2, 1]);
        assert_eq!(BlockHeader::decode(&bytes), Ok(h));
        let plain = BlockHeader { dict: None, ..h };
        assert_eq!(&plain.encode()[4..8], &[0; 4]);
        assert_eq!(BlockHeader::decode(&plain.encode()), Ok(plain));
        assert_eq!(h.block_len(), 24 + 567);
        for s in Stream::ALL {
            assert_eq!(Stream::from_byte(s.byte()), Some(s));
        }
    }

    #[test]
    fn each_header_fault_is_named_with_its_byte() {
        let bytes = header().encode();
        assert_eq!(
            BlockHeader::decode(&bytes[..23]),
            Err(HeaderError::Short { len: 23 })
        );
        let mut bad = bytes;
        bad[0] = b'X';
        let err = BlockHeader::decode(&bad).unwrap_err();
        assert_eq!(err, HeaderError::BadMagic { found: *b"XB" });
        assert!(err.to_string().contains("byte 0"), "{err}");
        for value in [0, 4, 255] {
            let mut bad = bytes;
            bad[2] = value;
            let err = BlockHeader::decode(&bad).unwrap_err();
            assert_eq!(err, HeaderError::UnknownStream { value });
            assert!(err.to_string().contains("byte 2"), "{err}");
        }
        let mut bad = bytes;
        bad[8..12].copy_from_slice(&[0; 4]);
        assert_eq!(BlockHeader::decode(&bad), Err(HeaderError::NoObjects));
        // Flags are reserved and ignored.
        let mut flagged = bytes;
        flagged[3] = 0x80;
        assert_eq!(BlockHeader::decode(&flagged).map(|h| h.flags), Ok(0x80));
    }

    #[test]
    fn a_header_claiming_more_than_2_30_bytes_is_refused() {
        let bytes = header().encode();
        for (at, field) in [(12, "raw-len"), (16, "stored-len")] {
            for value in [MAX_BLOCK_LEN + 1, u32::MAX] {
                let mut bad = bytes;
                bad[at..at + 4].copy_from_slice(&value.to_le_bytes());
                let err = BlockHeader::decode(&bad).unwrap_err();
                assert_eq!(err, HeaderError::TooLarge { at, field, value });
                assert!(err.to_string().contains(&format!("byte {at}")), "{err}");
            }
            let mut limit = bytes;
            limit[at..at + 4].copy_from_slice(&MAX_BLOCK_LEN.to_le_bytes());
            assert!(BlockHeader::decode(&limit).is_ok());
        }
        // The largest length a header may claim, with a frame that is not there: torn, and
        // nothing of that size is allocated.
        let mut claim = sealed(b"x");
        claim[16..20].copy_from_slice(&MAX_BLOCK_LEN.to_le_bytes());
        assert!(open(&claim, no_dictionary).unwrap_err().is_torn());
    }

    #[test]
    fn seal_then_open_gives_the_content_back() {
        let content = b"some content, some content, some content".repeat(20);
        let block = seal(Stream::Exchange, 7, &content, Compression::Level(6)).unwrap();
        let (h, back) = open(&block, no_dictionary).unwrap();
        assert_eq!(back, content);
        assert_eq!(h.stream, Stream::Exchange);
        assert_eq!(h.count, 7);
        assert_eq!(h.dict, None);
        assert_eq!(h.raw_len as usize, content.len());
        assert_eq!(h.block_len(), block.len() as u64);
        assert!((h.stored_len as usize) < content.len());
        // Bytes after the block are not looked at.
        let mut more = block.clone();
        more.extend_from_slice(b"PB next block");
        assert_eq!(open(&more, no_dictionary).unwrap().1, content);
        // The frame says its content size and carries a checksum, not a dictionary id:
        // its descriptor (the byte after the 4-byte zstd magic) has bit 2 set, bits 0-1 clear.
        let descriptor = block[BLOCK_HEADER_LEN + 4];
        assert_eq!(descriptor & 0b111, 0b100, "{descriptor:08b}");
    }

    #[test]
    fn a_block_with_a_dictionary_needs_it() {
        let samples: Vec<Vec<u8>> = (0..200)
            .map(|i| format!("{{\"operation\":\"createOrder\",\"seq\":{i}}}").into_bytes())
            .collect();
        let raw: Vec<u8> = samples.concat();
        let key = NonZeroU32::new(42).unwrap();
        let encoder = EncoderDictionary::copy(&raw, 3);
        let content = b"{\"operation\":\"createOrder\",\"seq\":7}".to_vec();
        let block = seal(
            Stream::Exchange,
            1,
            &content,
            Compression::Dictionary {
                key,
                prepared: &encoder,
            },
        )
        .unwrap();
        let decoder = DecoderDictionary::copy(&raw);
        let (h, back) = open(&block, |k| (k == key).then_some(&decoder)).unwrap();
        assert_eq!((h.dict, back), (Some(key), content));
        assert!(matches!(
            open(&block, no_dictionary),
            Err(BlockError::MissingDictionary { key: 42 })
        ));
        // Another dictionary under the right key: zstd's checksum refuses the output.
        let other = DecoderDictionary::copy(&b"something else entirely".repeat(50));
        assert!(matches!(
            open(&block, |_| Some(&other)),
            Err(BlockError::Frame { .. })
        ));
    }

    #[test]
    fn a_torn_frame_is_torn_and_a_changed_byte_is_damage() {
        let block = sealed(&b"abcdefgh".repeat(100));
        for cut in [0, 10, 23, 24, block.len() - 1] {
            let err = open(&block[..cut], no_dictionary).unwrap_err();
            assert!(err.is_torn(), "cut at {cut}: {err}");
        }
        for at in [3, 5, 9, 13, 21, BLOCK_HEADER_LEN, block.len() - 1] {
            let mut bad = block.clone();
            bad[at] ^= 0x01;
            let err = open(&bad, no_dictionary).unwrap_err();
            assert!(!err.is_torn(), "byte {at}: {err}");
            assert!(
                matches!(
                    err,
                    BlockError::Check { .. } | BlockError::Header(HeaderError::NoObjects)
                ),
                "byte {at}: {err}"
            );
        }
    }

    #[test]
    fn a_frame_that_disagrees_with_its_header_is_refused() {
        let content = b"0123456789".repeat(10);
        let frame = zstd::bulk::compress(&content, 3).unwrap();
        let open_as = |raw_len: u32, frame: &[u8]| {
            let mut h = BlockHeader {
                stream: Stream::Meta,
                flags: 0,
                dict: None,
                count: 1,
                raw_len,
                stored_len: frame.len() as u32,
                check: 0,
            };
            h.check = h.check_of(frame);
            let mut block = h.encode().to_vec();
            block.extend_from_slice(frame);
            open(&block, no_dictionary)
        };
        assert_eq!(open_as(100, &frame).unwrap().1, content);
        assert!(matches!(
            open_as(99, &frame),
            Err(BlockError::RawLen {
                raw_len: 99,
                actual: 100
            })
        ));
        let two: Vec<u8> = [frame.clone(), frame.clone()].concat();
        assert!(matches!(open_as(200, &two), Err(BlockError::Frame { .. })));
        assert!(matches!(
            open_as(100, b"not zstd at all"),
            Err(BlockError::Frame { .. })
        ));
        // A frame that does not say its content size.
        let mut c = zstd::bulk::Compressor::new(3).unwrap();
        c.set_parameter(CParameter::ContentSizeFlag(false)).unwrap();
        let unsized_frame = c.compress(&content).unwrap();
        assert!(matches!(
            zstd_safe::get_frame_content_size(&unsized_frame),
            Ok(None)
        ));
        assert!(matches!(
            open_as(100, &unsized_frame),
            Err(BlockError::Frame { .. })
        ));
    }

    #[test]
    fn sealing_refuses_what_no_reader_would_open() {
        assert!(matches!(
            seal(Stream::Blob, 0, b"x", Compression::Level(3)),
            Err(SealError::NoObjects)
        ));
    }

    proptest! {
        /// Opening any bytes ends without a panic.
        #[test]
        fn opening_any_bytes_never_panics(bytes: Vec<u8>, with_header: bool) {
            let mut bytes = bytes;
            if with_header {
                // A header that decodes, so the frame checks run on the rest.
                let h = header();
                bytes.splice(0..0, h.encode());
            }
            let _ = open(&bytes, no_dictionary);
        }

        /// A frame changed behind a check recomputed to match (as a writer's bug would
        /// make) is refused or opened to `raw-len` bytes, never a panic.
        #[test]
        fn a_changed_frame_reaches_zstd_safely(
            content in proptest::collection::vec(any::<u8>(), 1..300),
            changes in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..4),
        ) {
            let mut block = sealed(&content);
            let frame_len = block.len() - BLOCK_HEADER_LEN;
            for (at, value) in changes {
                block[BLOCK_HEADER_LEN + at % frame_len] = value;
            }
            let mut h = BlockHeader::decode(&block).unwrap();
            h.check = h.check_of(&block[BLOCK_HEADER_LEN..]);
            block[..BLOCK_HEADER_LEN].copy_from_slice(&h.encode());
            if let Ok((h, back)) = open(&block, no_dictionary) {
                prop_assert_eq!(back.len(), h.raw_len as usize);
            }
        }
    }
}
