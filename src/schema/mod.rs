//! JSON Schema value generation and validation (placeholder until it lands).
