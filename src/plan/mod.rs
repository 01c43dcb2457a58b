//! Plans (in progress).
