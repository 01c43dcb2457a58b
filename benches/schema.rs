//! Schema benchmark: how fast values are generated and validated, and what compiling a
//! validator costs when the document has many shared schemas.
//!
//! Run with `cargo bench --bench schema` (5,000 values per schema; `-- --quick` for 500).
//! Two measurements, printed:
//! - **generation rate**: per schema (a bounded string, a pattern, the pet shop's `Pet`, a
//!   recursive tree), the time to generate one value, the share of it that is validating a
//!   value, and the time to look a cached validator up;
//! - **validator compile cost**: compiling a validator for a schema among 300 shared ones
//!   (chains of ten `$ref`s), the first generation (which compiles), and a cached one.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

use probe::schema::{GenerateOptions, Generator, Mode, ValidateOptions, Validator};
use probe::spec::SchemaSet;

/// A set of shared schemas, as `$defs`.
fn set(defs: Value) -> SchemaSet {
    let mut s = SchemaSet::default();
    if let Value::Object(m) = defs {
        for (k, v) in m {
            s.defs.insert(k, v);
        }
    }
    s
}

fn generation_rate(n: u32) {
    let defs = set(json!({
        "Category": { "type": "object", "properties": { "id": { "type": "integer", "format": "int64" }, "name": { "type": "string" } } },
        "Tag": { "type": "object", "properties": { "id": { "type": "integer" }, "name": { "type": "string" } } },
        "Pet": { "type": "object", "required": ["name", "photoUrls"], "properties": {
            "id": { "type": "integer", "format": "int64", "readOnly": true },
            "category": { "$ref": "#/$defs/Category" },
            "name": { "type": "string", "example": "doggie" },
            "photoUrls": { "type": "array", "items": { "type": "string", "format": "uri" } },
            "tags": { "type": "array", "items": { "$ref": "#/$defs/Tag" } },
            "status": { "type": "string", "enum": ["available", "pending", "sold"] }
        } },
        "Tree": { "type": "object", "required": ["value"], "properties": {
            "value": { "type": "integer" },
            "children": { "type": "array", "items": { "$ref": "#/$defs/Tree" } } } }
    }));
    let g = Generator::new(&defs, GenerateOptions::default());
    for (name, schema) in [
        (
            "string",
            json!({ "type": "string", "minLength": 3, "maxLength": 20 }),
        ),
        (
            "pattern",
            json!({ "type": "string", "pattern": "^[A-Z]{2}-\\d{3}$" }),
        ),
        ("pet", json!({ "$ref": "#/$defs/Pet" })),
        ("tree", json!({ "$ref": "#/$defs/Tree" })),
    ] {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let _ = g.generate(&schema, Mode::Random, &mut rng);
        let start = std::time::Instant::now();
        for _ in 0..n {
            let _ = g
                .generate(&schema, Mode::Random, &mut rng)
                .expect("generates");
        }
        let el = start.elapsed();
        // The share of it that is re-validation.
        let value = g
            .generate(&schema, Mode::Random, &mut rng)
            .expect("generates");
        let validator = g.validator(&schema).expect("compiles");
        let vstart = std::time::Instant::now();
        for _ in 0..n {
            assert!(validator.is_valid(&value));
        }
        let vel = vstart.elapsed();
        let lstart = std::time::Instant::now();
        for _ in 0..n {
            let _ = g.validator(&schema).expect("compiles");
        }
        let lel = lstart.elapsed();
        println!(
            "{name}: {:.1} µs/value, {:.0} values/s (validating one value: {:.1} µs, validator lookup {:.1} µs)",
            el.as_secs_f64() * 1e6 / n as f64,
            n as f64 / el.as_secs_f64(),
            vel.as_secs_f64() * 1e6 / n as f64,
            lel.as_secs_f64() * 1e6 / n as f64
        );
    }
}

fn validator_compile_cost_with_many_defs() {
    let mut defs = serde_json::Map::new();
    for i in 0..300 {
        let mut props = serde_json::Map::new();
        for j in 0..10 {
            props.insert(
                format!("f{j}"),
                json!({ "type": "string", "maxLength": 20 }),
            );
        }
        // Chains of ten: a typical schema reaches a few shared schemas, not all of them.
        if i % 10 != 9 {
            props.insert(
                "next".into(),
                json!({ "$ref": format!("#/$defs/S{}", i + 1) }),
            );
        }
        defs.insert(
            format!("S{i}"),
            json!({ "type": "object", "properties": props }),
        );
    }
    let defs = set(Value::Object(defs));
    let start = std::time::Instant::now();
    for i in 0..20 {
        let _ = Validator::new(
            &defs,
            &json!({ "$ref": format!("#/$defs/S{i}") }),
            ValidateOptions::default(),
        )
        .expect("compiles");
    }
    println!(
        "compile with 300 defs: {:.2} ms each",
        start.elapsed().as_secs_f64() * 1e3 / 20.0
    );
    let g = Generator::new(&defs, GenerateOptions::default());
    let schema = json!({ "$ref": "#/$defs/S0" });
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let start = std::time::Instant::now();
    let _ = g
        .generate(&schema, Mode::Random, &mut rng)
        .expect("generates");
    println!(
        "first generation (compiles): {:.2} ms",
        start.elapsed().as_secs_f64() * 1e3
    );
    let start = std::time::Instant::now();
    for _ in 0..200 {
        let _ = g
            .generate(&schema, Mode::Random, &mut rng)
            .expect("generates");
    }
    println!(
        "cached: {:.1} µs each",
        start.elapsed().as_secs_f64() * 1e6 / 200.0
    );
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    generation_rate(if quick { 500 } else { 5000 });
    validator_compile_cost_with_many_defs();
}
