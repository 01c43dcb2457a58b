//! Single-violation negatives (in progress).
