//! The single integration-test binary (one link, one build): each module is one area.

mod store;
