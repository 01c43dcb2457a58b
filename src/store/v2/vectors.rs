//! The golden vectors of format-2 blocks, `store-format/vectors/block-*.json`: objects of
//! the object vectors (named by file, read from their `payload_hex`), the block content they
//! make, its header and ids, and one block this build sealed.
//!
//! The vectors pin the *content* (the splice rule and its encoding): a change to it is a
//! format change. They do not pin the zstd frame, which another libzstd may write
//! differently; the committed `block_hex` must still open and give the same content.
//!
//! `PROBE_REGENERATE=1 cargo test --lib store::v2` rewrites them, as the object vectors are
//! rewritten by `golden_vectors_match_the_encoder` (tests/store.rs).

use std::path::PathBuf;

use serde_json::{json, Value};

use super::block::{self, BlockHeader, Compression, Stream};
use super::content::{ContentBuilder, Parsed};
use crate::ids::Digest;
use crate::store::format::{object_id, OBJECT_FORMAT};

/// Each block vector: its name, its stream, and the object vectors it holds, in order.
const BLOCKS: [(&str, Stream, &[&str]); 2] = [
    // Two test cases, one a mutation of the other (`mutation.from.case`: a local
    // reference), then a test case and the interaction that sent it (its `case`: a local
    // reference; its `run`: an external id).
    (
        "block-exchange",
        Stream::Exchange,
        &[
            "test_case-pinpoint",
            "test_case-refused_value",
            "test_case",
            "interaction",
        ],
    ),
    ("block-blob", Stream::Blob, &["blob-hello", "blob-empty"]),
];

/// zstd level of the committed blocks (any level gives the same content back).
const LEVEL: i32 = 19;

fn vectors_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("store-format/vectors")
}

fn read_json(name: &str) -> Value {
    let path = vectors_dir().join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (PROBE_REGENERATE=1 writes it)", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn hex_field(v: &Value, field: &str) -> Vec<u8> {
    hex::decode(v[field].as_str().expect(field)).expect(field)
}

/// The kind tag of an object vector, from its name (as tests/store.rs reads it).
fn kind_tag(vector: &str) -> u8 {
    match vector {
        n if n.starts_with("blob") => 1,
        n if n.starts_with("test_case") => 2,
        "interaction" => 3,
        other => panic!("no kind for vector {other}"),
    }
}

fn header_json(h: &BlockHeader) -> Value {
    json!({
        "stream": h.stream.byte(),
        "flags": h.flags,
        "dict": h.dict.map_or(0, |d| d.get()),
        "count": h.count,
        "raw_len": h.raw_len,
        "stored_len": h.stored_len,
        "check": h.check,
    })
}

#[test]
fn golden_block_vectors_match_the_codec() {
    for (name, stream, sources) in BLOCKS {
        let objects: Vec<(u8, Vec<u8>)> = sources
            .iter()
            .map(|s| (kind_tag(s), hex_field(&read_json(s), "payload_hex")))
            .collect();
        let mut builder = ContentBuilder::new();
        for (kind, payload) in &objects {
            builder.add(*kind, payload).expect("fits");
        }
        let count = builder.count();
        let content = builder.finish();
        let sealed = block::seal(stream, count, &content, Compression::Level(LEVEL)).unwrap();
        let fresh = BlockHeader::decode(&sealed).unwrap();
        let parsed = Parsed::parse(content.clone(), count).unwrap();

        if std::env::var_os("PROBE_REGENERATE").is_some() {
            let v = json!({
                "stream": format!("{stream:?}").to_lowercase(),
                "objects": sources.iter().zip(&objects).zip(parsed.ids()).map(|((s, (kind, _)), id)| json!({
                    "vector": format!("{s}.json"),
                    "kind": kind,
                    "id": id.to_hex(),
                })).collect::<Vec<_>>(),
                "external": parsed.external().iter().map(Digest::to_hex).collect::<Vec<_>>(),
                "content_hex": hex::encode(&content),
                "header": header_json(&fresh),
                "block_hex": hex::encode(&sealed),
            });
            let path = vectors_dir().join(format!("{name}.json"));
            std::fs::write(&path, serde_json::to_string_pretty(&v).unwrap() + "\n").unwrap();
        }

        let v = read_json(name);
        // The encoder writes the committed content, and each object's id is its own.
        assert_eq!(
            v["content_hex"].as_str(),
            Some(hex::encode(&content).as_str()),
            "{name}: content changed"
        );
        for (i, (entry, (kind, payload))) in v["objects"]
            .as_array()
            .expect("objects")
            .iter()
            .zip(&objects)
            .enumerate()
        {
            assert_eq!(
                entry["kind"].as_u64(),
                Some(u64::from(*kind)),
                "{name} #{i}"
            );
            let id = object_id(*kind, OBJECT_FORMAT.major, payload).to_hex();
            assert_eq!(entry["id"].as_str(), Some(id.as_str()), "{name} #{i}");
        }
        let external: Vec<String> = parsed.external().iter().map(Digest::to_hex).collect();
        assert_eq!(v["external"], json!(external), "{name}: external ids");
        // The header this build seals has the committed fields, but for the frame's.
        let committed = &v["header"];
        for field in ["stream", "flags", "dict", "count", "raw_len"] {
            assert_eq!(
                committed[field],
                header_json(&fresh)[field],
                "{name}: {field}"
            );
        }

        // The committed block opens, gives the content back, and restores the payloads.
        let stored = hex_field(&v, "block_hex");
        let (header, opened) = block::open(&stored, block::no_dictionary).unwrap();
        assert_eq!(&header_json(&header), committed, "{name}: header");
        assert_eq!(header.block_len(), stored.len() as u64, "{name}");
        assert_eq!(opened, content, "{name}: the committed block");
        let back = Parsed::parse(opened, header.count).unwrap();
        for (i, (kind, payload)) in objects.iter().enumerate() {
            assert_eq!(
                back.restore(i as u32).unwrap(),
                (*kind, payload.clone()),
                "{name} #{i}"
            );
        }
        let ids: Vec<String> = back.ids().iter().map(Digest::to_hex).collect();
        let listed: Vec<&str> = v["objects"]
            .as_array()
            .expect("objects")
            .iter()
            .map(|o| o["id"].as_str().expect("id"))
            .collect();
        assert_eq!(ids, listed, "{name}: ids");
    }
}
