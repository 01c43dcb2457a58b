//! The index's unit tests: rows located through their own tables, groups of rows
//! written whole or not at all, interactions found before and after their ids are indexed.

use rusqlite::{params, Connection};

use super::*;
use crate::ids::{CaseId, Digest, RunId};
use crate::store::format::{ObjectKind, RecordHeader, OBJECT_FORMAT};
use crate::store::object::IndexRow;

fn header(kind: ObjectKind, id: u8) -> RecordHeader {
    RecordHeader {
        kind_tag: kind.tag(),
        version: OBJECT_FORMAT,
        flags: 0,
        dict: 7,
        raw_len: 100 + u32::from(id),
        stored_len: 50 + u32::from(id),
        id: Digest([id; 32]),
    }
}

#[test]
fn test_cases_and_interactions_are_located_through_their_own_rows() {
    let dir = tempfile::tempdir().unwrap();
    let (mut conn, version) = open(&dir.path().join("index.sqlite")).unwrap();
    assert_eq!(version, INDEX_SCHEMA_VERSION);
    let tx = conn.transaction().unwrap();
    let pack = pack_id(&tx, "p.pack").unwrap();
    let case = header(ObjectKind::TestCase, 1);
    let case_row = IndexRow::Case {
        operation: "getItem".into(),
        method: "GET".into(),
    };
    let interaction = header(ObjectKind::Interaction, 2);
    let interaction_row = IndexRow::Interaction {
        run: RunId(Digest([9; 32])),
        seq: 0,
        case: CaseId(case.id),
        method: "GET".into(),
        status: Some(200),
        request_body: None,
        response_body: None,
    };
    let blob = header(ObjectKind::Blob, 3);
    assert!(insert_object(&tx, pack, 10, &case, &case_row).unwrap());
    assert!(insert_object(&tx, pack, 20, &interaction, &interaction_row).unwrap());
    assert!(insert_object(&tx, pack, 30, &blob, &IndexRow::None).unwrap());
    // A second copy is turned down, and the index keeps naming the first.
    assert!(!insert_object(&tx, pack, 40, &case, &case_row).unwrap());
    assert!(!insert_object(&tx, pack, 50, &interaction, &interaction_row).unwrap());
    assert!(!insert_object(&tx, pack, 60, &blob, &IndexRow::None).unwrap());
    tx.commit().unwrap();
    let in_other: i64 = conn
        .query_row("SELECT count(*) FROM other_objects", [], |r| r.get(0))
        .unwrap();
    assert_eq!(in_other, 1, "only the blob has a row of its own");
    for (h, offset) in [(&case, 10), (&interaction, 20), (&blob, 30)] {
        let at = locate(&conn, &h.id).unwrap().unwrap();
        assert_eq!(
            (at.kind_tag, at.pack.as_str(), at.offset, at.stored_len),
            (h.kind_tag, "p.pack", offset, h.stored_len)
        );
        assert_eq!(in_other_objects(&conn, &h.id).unwrap(), h.id == blob.id);
    }
    assert!(own_kinds_in_other_objects(&conn).unwrap().is_empty());
    // A query row without a location (a migrated schema-1 index) takes the first
    // location given, and only that one.
    let bare = header(ObjectKind::TestCase, 5);
    conn.execute(
        "INSERT INTO cases(id, operation, method) VALUES (?1, 'getItem', 'GET')",
        [&bare.id.0[..]],
    )
    .unwrap();
    assert!(locate(&conn, &bare.id).unwrap().is_none());
    let tx = conn.transaction().unwrap();
    assert!(insert_object(&tx, pack, 70, &bare, &case_row).unwrap());
    assert!(!insert_object(&tx, pack, 80, &bare, &case_row).unwrap());
    tx.commit().unwrap();
    assert_eq!(locate(&conn, &bare.id).unwrap().unwrap().offset, 70);
    // A test case whose payload gc could not decode is kept in `other_objects`.
    let undecoded = header(ObjectKind::TestCase, 6);
    let tx = conn.transaction().unwrap();
    assert!(insert_object(&tx, pack, 90, &undecoded, &IndexRow::None).unwrap());
    tx.commit().unwrap();
    assert!(in_other_objects(&conn, &undecoded.id).unwrap());
    assert_eq!(
        own_kinds_in_other_objects(&conn)
            .unwrap()
            .into_iter()
            .collect::<Vec<_>>(),
        vec![undecoded.id]
    );
    // gc moves keep the query rows and change the location, row by row as gc lists
    // them; a row that is not there is an error.
    let listed = located_rows(&conn).unwrap();
    let at_of = |id: &Digest| listed.iter().find(|r| r.id == *id).unwrap().at;
    assert!(matches!(at_of(&interaction.id), RowAt::Interaction(_)));
    assert!(matches!(at_of(&case.id), RowAt::Case(_)));
    assert_eq!(at_of(&blob.id), RowAt::Other);
    assert_eq!(at_of(&undecoded.id), RowAt::Other);
    let tx = conn.transaction().unwrap();
    let other = pack_id(&tx, "q.pack").unwrap();
    let mut mover = Mover::new(&tx);
    mover
        .relocate(
            at_of(&interaction.id),
            &interaction.id,
            other,
            99,
            &interaction,
        )
        .unwrap();
    mover
        .relocate(at_of(&case.id), &case.id, other, 98, &case)
        .unwrap();
    mover
        .relocate(at_of(&blob.id), &blob.id, other, 97, &blob)
        .unwrap();
    assert!(mover
        .relocate(RowAt::Case(1_000_000), &case.id, other, 1, &case)
        .is_err());
    drop(mover);
    tx.commit().unwrap();
    assert_eq!(locate(&conn, &blob.id).unwrap().unwrap().offset, 97);
    let at = locate(&conn, &interaction.id).unwrap().unwrap();
    assert_eq!((at.pack.as_str(), at.offset), ("q.pack", 99));
    assert_eq!(locate(&conn, &case.id).unwrap().unwrap().offset, 98);
    let rows: i64 = conn
        .query_row(
            "SELECT count(*) FROM interactions WHERE operation = 'getItem'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(rows, 1);
    let totals = kind_totals(&conn).unwrap();
    assert_eq!(
        totals.iter().map(|t| (t.0, t.1)).collect::<Vec<_>>(),
        vec![(1, 1), (2, 3), (3, 1)]
    );
}

/// A group of interactions or test cases goes in whole, each at its offset, or not at
/// all: a group holding an interaction the index names already, or a test case it may
/// hold, leaves the index as it was, for the caller to insert them one at a time.
#[test]
fn a_group_of_rows_goes_in_whole_or_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let (mut conn, _) = open(&dir.path().join("index.sqlite")).unwrap();
    let run = RunId(Digest([9; 32]));
    let case = header(ObjectKind::TestCase, 200);
    let case_row = IndexRow::Case {
        operation: "getItem".into(),
        method: "GET".into(),
    };
    let rows: Vec<(RecordHeader, IndexRow)> = (0..2 * ROWS_PER_INSERT as u8)
        .map(|n| {
            let row = IndexRow::Interaction {
                run,
                seq: u64::from(n),
                case: CaseId(case.id),
                method: "GET".into(),
                status: Some(200 + u16::from(n)),
                request_body: None,
                response_body: Some(crate::ids::BlobId(Digest([n; 32]))),
            };
            (header(ObjectKind::Interaction, n), row)
        })
        .collect();
    let group = |from: usize| -> Vec<(u64, &RecordHeader, &IndexRow)> {
        rows[from..from + ROWS_PER_INSERT]
            .iter()
            .map(|(h, r)| (1000 + u64::from(h.id.0[0]), h, r))
            .collect()
    };
    let count = |conn: &Connection| -> i64 {
        conn.query_row("SELECT count(*) FROM interactions", [], |r| r.get(0))
            .unwrap()
    };
    let tx = conn.transaction().unwrap();
    let pack = pack_id(&tx, "p.pack").unwrap();
    let mut context = InsertContext::default();
    assert!(insert_object_with(&tx, pack, 10, &case, &case_row, &mut context).unwrap());
    assert!(insert_group_with(&tx, pack, &group(0), &mut context).unwrap());
    // The second group begins with the last of the first: none of it goes in.
    let (last_h, last_r) = &rows[ROWS_PER_INSERT - 1];
    let mut overlapping = vec![(1, last_h, last_r)];
    overlapping.extend(group(ROWS_PER_INSERT).into_iter().skip(1));
    assert!(!insert_group_with(&tx, pack, &overlapping, &mut context).unwrap());
    assert_eq!(count(&tx), ROWS_PER_INSERT as i64);
    // Fewer than a group, or a group that is not all interactions, is left to the caller.
    assert!(!insert_group_with(&tx, pack, &group(0)[1..], &mut context).unwrap());
    let mut mixed = group(ROWS_PER_INSERT);
    mixed[3] = (5, &case, &case_row);
    assert!(!insert_group_with(&tx, pack, &mixed, &mut context).unwrap());
    assert!(insert_group_with(&tx, pack, &group(ROWS_PER_INSERT), &mut context).unwrap());
    // Test cases go in as a group only when the context knows the index lacks each.
    let cases: Vec<(RecordHeader, IndexRow)> = (100..100 + ROWS_PER_INSERT as u8)
        .map(|n| (header(ObjectKind::TestCase, n), case_row.clone()))
        .collect();
    let case_group: Vec<(u64, &RecordHeader, &IndexRow)> = cases
        .iter()
        .map(|(h, r)| (2000 + u64::from(h.id.0[0]), h, r))
        .collect();
    for (h, _) in &cases[1..] {
        context.knows_case(CaseId(h.id), None);
    }
    assert!(!insert_group_with(&tx, pack, &case_group, &mut context).unwrap());
    context.knows_case(CaseId(cases[0].0.id), None);
    assert!(insert_group_with(&tx, pack, &case_group, &mut context).unwrap());
    drop(context);
    tx.commit().unwrap();
    assert_eq!(count(&conn), 2 * ROWS_PER_INSERT as i64);
    for (h, _) in &cases {
        let at = locate(&conn, &h.id).unwrap().unwrap();
        assert_eq!(
            (at.kind_tag, at.offset, at.stored_len),
            (h.kind_tag, 2000 + u64::from(h.id.0[0]), h.stored_len)
        );
    }
    let stored_cases: i64 = conn
        .query_row("SELECT count(*) FROM cases", [], |r| r.get(0))
        .unwrap();
    assert_eq!(stored_cases, 1 + ROWS_PER_INSERT as i64);
    // Each row is the one the group gave, at its offset, with its query columns.
    for (h, r) in &rows {
        let at = locate(&conn, &h.id).unwrap().unwrap();
        assert_eq!(
            (at.kind_tag, at.pack.as_str(), at.offset, at.stored_len),
            (
                h.kind_tag,
                "p.pack",
                1000 + u64::from(h.id.0[0]),
                h.stored_len
            )
        );
        let IndexRow::Interaction { seq, status, .. } = r else {
            unreachable!()
        };
        let (operation, stored_status, body): (String, i64, Vec<u8>) = conn
            .query_row(
                "SELECT operation, status, response_body FROM interactions
                 WHERE run = (SELECT key FROM run_keys WHERE id = ?1) AND seq = ?2",
                params![&run.0 .0[..], *seq as i64],
                |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
            )
            .unwrap();
        assert_eq!(operation, "getItem");
        assert_eq!(Some(stored_status as u16), *status);
        assert_eq!(body, vec![h.id.0[0]; 32]);
    }
}

/// Interactions are found by id whether `interaction_ids` covers them yet or not, and a
/// row number freed by gc at the end of the table is never left out of both.
#[test]
fn interactions_are_found_by_id_before_and_after_their_ids_are_indexed() {
    let dir = tempfile::tempdir().unwrap();
    let (mut conn, _) = open(&dir.path().join("index.sqlite")).unwrap();
    let run = RunId(Digest([9; 32]));
    let row = |seq: u64| IndexRow::Interaction {
        run,
        seq,
        case: CaseId(Digest([1; 32])),
        method: "GET".into(),
        status: Some(200),
        request_body: None,
        response_body: None,
    };
    // Ids that share their first 8 bytes, and one that differs there.
    let id = |n: u8, head: u8| {
        let mut d = [head; 32];
        d[31] = n;
        Digest(d)
    };
    let at = |n: u8, head: u8| RecordHeader {
        id: id(n, head),
        ..header(ObjectKind::Interaction, n)
    };
    let insert = |conn: &mut Connection, n: u8, head: u8, seq: u64| {
        let tx = conn.transaction().unwrap();
        let pack = pack_id(&tx, "p.pack").unwrap();
        assert!(insert_object(&tx, pack, u64::from(n) * 10, &at(n, head), &row(seq)).unwrap());
        tx.commit().unwrap();
    };
    let found = |conn: &Connection, n: u8, head: u8| {
        let located = locate(conn, &id(n, head)).unwrap().map(|l| l.offset);
        let prefix = hex::encode(id(n, head).0);
        let by_prefix = by_prefix(conn, &prefix, 11).unwrap();
        let described = describe(conn, ObjectKind::Interaction, &id(n, head)).unwrap();
        (located, by_prefix, described)
    };
    insert(&mut conn, 1, 0xaa, 0);
    insert(&mut conn, 2, 0xaa, 1);
    insert(&mut conn, 3, 0xbb, 2);
    assert_eq!(interaction_ids_behind(&conn).unwrap(), 3);
    let in_tail = [
        found(&conn, 1, 0xaa),
        found(&conn, 2, 0xaa),
        found(&conn, 3, 0xbb),
    ];
    assert_eq!(in_tail[0].0, Some(10));
    assert_eq!(in_tail[1].1, vec![(3, id(2, 0xaa))]);
    assert!(in_tail[2].2.starts_with("#2 GET"), "{}", in_tail[2].2);
    // Indexed, they are found the same way, and through the index.
    let tx = conn.transaction().unwrap();
    assert_eq!(index_interaction_ids(&tx).unwrap(), 3);
    assert_eq!(
        index_interaction_ids(&tx).unwrap(),
        0,
        "nothing is indexed twice"
    );
    tx.commit().unwrap();
    assert_eq!(interaction_ids_behind(&conn).unwrap(), 0);
    assert_eq!(
        [
            found(&conn, 1, 0xaa),
            found(&conn, 2, 0xaa),
            found(&conn, 3, 0xbb)
        ],
        in_tail
    );
    // A prefix shared by two interactions names both.
    assert_eq!(
        by_prefix(&conn, "aaaa", 11).unwrap(),
        vec![(3, id(1, 0xaa)), (3, id(2, 0xaa))]
    );
    // gc drops the last row; the next one takes its row number, which the index passed
    // already, and is found all the same (in the tail).
    let last = located_rows(&conn)
        .unwrap()
        .into_iter()
        .find(|r| r.id == id(3, 0xbb))
        .unwrap();
    let tx = conn.transaction().unwrap();
    let mut mover = Mover::new(&tx);
    mover.forget(last.at, &last.id, last.kind_tag).unwrap();
    drop(mover);
    forget_deleted_interactions(&tx).unwrap();
    tx.commit().unwrap();
    assert_eq!(locate(&conn, &id(3, 0xbb)).unwrap(), None);
    insert(&mut conn, 4, 0xcc, 3);
    assert_eq!(
        locate(&conn, &id(4, 0xcc)).unwrap().map(|l| l.offset),
        Some(40)
    );
    let tx = conn.transaction().unwrap();
    assert_eq!(index_interaction_ids(&tx).unwrap(), 1);
    tx.commit().unwrap();
    assert_eq!(
        locate(&conn, &id(4, 0xcc)).unwrap().map(|l| l.offset),
        Some(40)
    );
    assert_eq!(locate(&conn, &id(3, 0xbb)).unwrap(), None);
    let entries: i64 = conn
        .query_row("SELECT count(*) FROM interaction_ids", [], |r| r.get(0))
        .unwrap();
    assert_eq!(entries, 3, "the dropped interaction's entry went with it");
    // Another interaction as the same step of the run is refused, naming both.
    let tx = conn.transaction().unwrap();
    let pack = pack_id(&tx, "p.pack").unwrap();
    let err = insert_object(&tx, pack, 50, &at(5, 0xdd), &row(0)).unwrap_err();
    assert!(err.to_string().contains("seq 0 of run"), "{err}");
}

proptest::proptest! {
    /// Keys order as the ids' first 8 bytes do, so a hex prefix is one range of keys.
    #[test]
    fn id_keys_keep_the_order_of_id_prefixes(a in proptest::array::uniform32(0u8..), b in proptest::array::uniform32(0u8..)) {
        proptest::prop_assert_eq!(a[..8].cmp(&b[..8]), id_key(&a).cmp(&id_key(&b)));
    }
}

#[test]
fn id_keys_span_the_signed_range() {
    assert_eq!(id_key(&[0; 32]), i64::MIN);
    assert_eq!(id_key(&[0xff; 32]), i64::MAX);
    assert_eq!(id_key(&[0x80, 0, 0, 0, 0, 0, 0, 0, 0xff]), 0);
    assert_eq!(id_key(&[0x80]), 0, "a short id reads as zero-padded");
}
