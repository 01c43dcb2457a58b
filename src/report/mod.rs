//! report (placeholder until it lands).
