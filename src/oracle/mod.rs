//! oracle (placeholder until it lands).
