//! What a stored object is ([`ObjectKind`]): its tag byte, part of its identity, and its
//! name. Kept apart from the rest of the format so that the store's error can name a kind
//! without depending on what reports errors.
//!
//! Depends on: nothing.

use std::fmt;

/// What a stored object is. The tag byte is part of the object's identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ObjectKind {
    /// Raw bytes: a large body, a document.
    Blob,
    TestCase,
    Interaction,
    RunStart,
    RunEnd,
    FindingSet,
    /// A series of calls on one resource (store format 1.1).
    Series,
}

impl ObjectKind {
    /// Every kind, in tag order.
    pub const ALL: [ObjectKind; 7] = [
        ObjectKind::Blob,
        ObjectKind::TestCase,
        ObjectKind::Interaction,
        ObjectKind::RunStart,
        ObjectKind::RunEnd,
        ObjectKind::FindingSet,
        ObjectKind::Series,
    ];

    /// The tag byte.
    pub fn tag(self) -> u8 {
        match self {
            ObjectKind::Blob => 1,
            ObjectKind::TestCase => 2,
            ObjectKind::Interaction => 3,
            ObjectKind::RunStart => 4,
            ObjectKind::RunEnd => 5,
            ObjectKind::FindingSet => 6,
            ObjectKind::Series => 7,
        }
    }

    /// The kind of a tag byte; `None` for a tag of a newer minor version.
    pub fn from_tag(tag: u8) -> Option<ObjectKind> {
        ObjectKind::ALL.into_iter().find(|k| k.tag() == tag)
    }

    /// Name for people and JSON: `blob`, `test_case`, `interaction`, `run`, `run_end`,
    /// `finding_set`.
    pub fn name(self) -> &'static str {
        match self {
            ObjectKind::Blob => "blob",
            ObjectKind::TestCase => "test_case",
            ObjectKind::Interaction => "interaction",
            ObjectKind::RunStart => "run",
            ObjectKind::RunEnd => "run_end",
            ObjectKind::FindingSet => "finding_set",
            ObjectKind::Series => "series",
        }
    }
}

impl fmt::Display for ObjectKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
