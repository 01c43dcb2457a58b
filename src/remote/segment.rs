//! The objects of a remote store and their names (`store-format/FORMAT.md` section 11):
//! the `FORMAT` object, packs named by the BLAKE3 of their bytes, dictionaries by their
//! local names, and index segments (JSON) named by their time and the BLAKE3 of their bytes.
//!
//! Depends on: `remote` (errors).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::error::RemoteError;

/// The text of the `FORMAT` object of a remote store, as this build writes it.
pub const REMOTE_FORMAT: &str = "probe-remote 1.1\n";
/// The major of the remote layout this build reads.
pub const REMOTE_MAJOR: u32 = 1;
/// Where packs, dictionaries, segments and lock objects are, under the prefix.
pub const PACKS: &str = "packs";
pub const DICTS: &str = "dicts";
pub const SEGMENTS: &str = "segments";
pub const REPORTS: &str = "reports";

/// The name of the remote pack holding `bytes`: 64 hex digits of their BLAKE3, `.pack`.
pub fn pack_name(bytes: &[u8]) -> String {
    format!("{}.pack", blake3::hash(bytes).to_hex())
}

/// The name of a segment written at `created_ms` holding `bytes`.
pub fn segment_name(created_ms: u64, bytes: &[u8]) -> String {
    format!("{created_ms:013}-{}.json", blake3::hash(bytes).to_hex())
}

/// Whether `bytes` are what the object named `name` must hold (packs and segments name
/// their own hash); other names are not checked here.
pub fn matches_name(name: &str, bytes: &[u8]) -> bool {
    let hash = blake3::hash(bytes).to_hex();
    if let Some(stem) = name.strip_suffix(".pack") {
        return stem == hash.as_str();
    }
    if let Some(stem) = name.strip_suffix(".json") {
        return stem
            .split_once('-')
            .is_some_and(|(_, h)| h == hash.as_str());
    }
    true
}

/// Reads the major of a `FORMAT` object's text, refusing a newer one.
pub fn check_format(url: &str, text: &[u8]) -> Result<(), RemoteError> {
    let bad = |why: String| RemoteError::Format {
        url: url.to_owned(),
        why,
    };
    let text = std::str::from_utf8(text).map_err(|_| bad("FORMAT is not text".into()))?;
    let version = text.trim().strip_prefix("probe-remote ").ok_or_else(|| {
        bad(format!(
            "FORMAT is `{}`, not a probe remote store",
            text.trim()
        ))
    })?;
    let major: u32 = version
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .ok_or_else(|| bad(format!("FORMAT names version `{version}`")))?;
    if major > REMOTE_MAJOR {
        return Err(bad(format!(
            "remote layout {version} is newer than this probe reads ({REMOTE_MAJOR}.x)"
        )));
    }
    Ok(())
}

/// An index segment: what one push brought. Readers merge every segment; none is changed
/// once written.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Segment {
    /// The segment format, 1.
    pub format: u32,
    /// When the push wrote it (ms since the epoch).
    pub created_ms: u64,
    /// Who pushed: host and process id, for people reading a bucket.
    pub writer: String,
    /// The packs this push created (or found already there), in the order their blocks
    /// were written.
    pub packs: Vec<SegmentPack>,
    /// The dictionaries (`dicts/<name>`) the blocks of these packs are compressed with.
    pub dicts: Vec<String>,
    /// The runs these packs hold objects of.
    pub runs: Vec<SegmentRun>,
    /// Segments whose packs objects of these packs may name (those the pushing store had):
    /// a reader that takes this segment takes them too.
    #[serde(default)]
    pub needs: Vec<String>,
    /// The files of the store's `reports/` this push brought (`reports/<name>`): what a
    /// run's reporters wrote, which `probe report` shows again.
    #[serde(default)]
    pub reports: Vec<String>,
    /// Segments this one takes the place of (written by `probe store gc`, which deletes
    /// them after): a reader that needs one of them takes this one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replaces: Vec<String>,
}

/// A pack a segment names.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentPack {
    /// `<hash>.pack` under `packs/`.
    pub name: String,
    /// Its length in bytes.
    pub len: u64,
    /// Blocks in it.
    pub blocks: u64,
}

/// A run a segment holds objects of.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentRun {
    /// The run id, 64 hex digits.
    pub id: String,
    /// Its name and tags, when its start is in this segment.
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
    /// Whether its start (`RunStart`) is in this segment.
    #[serde(default)]
    pub start: bool,
    /// Whether its end (`RunEnd`) is in this segment.
    #[serde(default)]
    pub end: bool,
}

impl Segment {
    /// The JSON of a segment.
    pub fn to_bytes(&self) -> Vec<u8> {
        // A segment is plain data: serialising it cannot fail.
        serde_json::to_vec_pretty(self).unwrap_or_default()
    }

    /// Parses a segment, refusing a newer segment format.
    pub fn parse(url: &str, name: &str, bytes: &[u8]) -> Result<Segment, RemoteError> {
        let seg: Segment = serde_json::from_slice(bytes).map_err(|e| RemoteError::Format {
            url: url.to_owned(),
            why: format!("segment {name} is not a segment: {e}"),
        })?;
        if seg.format > 1 {
            return Err(RemoteError::Format {
                url: url.to_owned(),
                why: format!(
                    "segment {name} is of format {}, newer than this probe reads (1)",
                    seg.format
                ),
            });
        }
        Ok(seg)
    }

    /// The entry of run `id`, added when absent.
    pub fn run_mut(&mut self, id: &str) -> &mut SegmentRun {
        let at = match self.runs.iter().position(|r| r.id == id) {
            Some(at) => at,
            None => {
                self.runs.push(SegmentRun {
                    id: id.to_owned(),
                    ..SegmentRun::default()
                });
                self.runs.len() - 1
            }
        };
        &mut self.runs[at]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The vector of store-format/vectors/remote-segment.json: its bytes parse, its name is
    /// its time and hash, and a pack's name is the hash of its bytes.
    /// Writes the vector: a remote pack of the one block of `block-blob.json`, and the
    /// segment naming it (`PROBE_REGENERATE=1`).
    fn regenerate(path: &str) {
        let blob = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/store-format/vectors/block-blob.json"
        );
        let blob: serde_json::Value =
            serde_json::from_slice(&std::fs::read(blob).unwrap()).unwrap();
        let mut pack = crate::store::v2::pack2_header().to_vec();
        pack.extend(hex::decode(blob["block_hex"].as_str().unwrap()).unwrap());
        let created_ms = 1_765_000_000_000u64;
        let mut seg = Segment {
            format: 1,
            created_ms,
            writer: "ci-runner-7 4242".to_owned(),
            packs: vec![SegmentPack {
                name: pack_name(&pack),
                len: pack.len() as u64,
                blocks: 1,
            }],
            dicts: Vec::new(),
            runs: Vec::new(),
            needs: vec![format!("{:013}-{}.json", created_ms - 1000, "0".repeat(64))],
            reports: vec![format!("{}.json", "ab".repeat(32))],
            replaces: Vec::new(),
        };
        let run = seg.run_mut(&"ab".repeat(32));
        run.name = Some("nightly".to_owned());
        run.tags.insert("branch".to_owned(), "main".to_owned());
        run.start = true;
        let text = String::from_utf8(seg.to_bytes()).unwrap();
        let vector = serde_json::json!({
            "pack_hex": hex::encode(&pack),
            "pack_name": pack_name(&pack),
            "created_ms": created_ms,
            "segment_name": segment_name(created_ms, text.as_bytes()),
            "segment_text": text,
        });
        let mut out = serde_json::to_string_pretty(&vector).unwrap();
        out.push('\n');
        std::fs::write(path, out).unwrap();
    }

    #[test]
    fn the_remote_vectors_match_the_names_and_the_parser() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/store-format/vectors/remote-segment.json"
        );
        if std::env::var_os("PROBE_REGENERATE").is_some() {
            regenerate(path);
        }
        let vector: serde_json::Value =
            serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        let segment_text = vector["segment_text"].as_str().unwrap();
        let name = vector["segment_name"].as_str().unwrap();
        assert!(matches_name(name, segment_text.as_bytes()));
        let seg = Segment::parse("s3://b", name, segment_text.as_bytes()).unwrap();
        assert_eq!(seg.created_ms, vector["created_ms"].as_u64().unwrap());
        assert_eq!(segment_name(seg.created_ms, segment_text.as_bytes()), name);
        let pack = hex::decode(vector["pack_hex"].as_str().unwrap()).unwrap();
        assert_eq!(pack_name(&pack), vector["pack_name"].as_str().unwrap());
        assert_eq!(seg.packs[0].name, pack_name(&pack));
        assert_eq!(seg.packs[0].len, pack.len() as u64);
        assert!(!matches_name(name, b"other bytes"));
    }

    #[test]
    fn a_newer_remote_major_is_refused_and_an_older_minor_read() {
        check_format("s3://b", REMOTE_FORMAT.as_bytes()).unwrap();
        check_format("s3://b", b"probe-remote 1.7\n").unwrap();
        let e = check_format("s3://b", b"probe-remote 2.0\n").unwrap_err();
        assert!(e.to_string().contains("newer than this probe reads"), "{e}");
        assert!(check_format("s3://b", b"probe-store 2.0\n").is_err());
    }
}
