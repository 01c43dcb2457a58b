//! engine (placeholder until it lands).
