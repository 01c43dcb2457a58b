//! Engine events (placeholder until it lands).
