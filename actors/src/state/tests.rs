//! A bulk fill ends in the state that putting and deleting the same records one by one
//! gives: the sync orders, the one-to-many indexes (persons, cvs, parents' notes and
//! attachments) and the search indexes alike, whatever order the records came in.

use super::bulk::SearchBuild;
use super::*;
use crate::snapshot::{parse_slice, plan_import, NoKeys};
use crate::time::CHANGE_TRACKING_START;

fn example_records() -> (Workspace, Vec<Record>) {
    let bytes = include_bytes!("../../../tests/fixtures/snapshot-small.json");
    let plan = plan_import(None, parse_slice(bytes).unwrap(), &NoKeys, false).unwrap();
    (plan.workspace.clone(), plan.change_set().upserts)
}

/// The example's records, plus generated ones around its first candidate row and
/// company: persons with several rows, cvs and other files, notes on rows and on the
/// company (some private), with timestamps on both sides of the change-tracking start.
fn records() -> (Workspace, Vec<Record>) {
    let (w, mut records) = example_records();
    let row = records
        .iter()
        .find_map(|r| match r {
            Record::Candidate(c) => Some((**c).clone()),
            _ => None,
        })
        .expect("the example has a candidate row");
    let company = records
        .iter()
        .find_map(|r| match r {
            Record::Company(c) => Some(c.id),
            _ => None,
        })
        .expect("the example has a company");
    let job = records
        .iter()
        .find_map(|r| match r {
            Record::Job(j) => Some(j.id),
            _ => None,
        })
        .expect("the example has a job");
    let stamp = |n: i64| Stamp::from_millis(CHANGE_TRACKING_START.millis() + (n - 20) * 3_600_000);
    let id = |n: u128| Uuid::from_u128(0xb000_0000 + n);
    for p in 0..12u128 {
        for r in 0..(p % 3 + 1) {
            let n = p * 10 + r;
            let mut c = row.clone();
            c.id = id(n);
            c.person_id = id(1000 + p);
            // A person's first row is in the talent pool, the others are applications.
            c.job_id = (r > 0).then_some(job);
            c.phone = Some(format!("+44 7700 900{:03}", p));
            c.email = Some(format!("person{p}@example.com"));
            c.created_at = stamp(n as i64 % 7);
            c.updated_at = stamp(n as i64 % 40);
            records.push(Record::Candidate(Box::new(c)));
            let mut cv = Attachment {
                id: format!("cv:{}", id(5000 + n)),
                parent_type: ParentType::Candidate,
                parent_id: id(n),
                filename: Some(format!("cv-{n}.pdf")),
                content_type: Some("application/pdf".into()),
                size: Some(100 + n as u64),
                kind: AttachmentKind::Cv,
                storage_ref: None,
                has_content: true,
                created_at: stamp(3),
                updated_at: stamp(3),
            };
            records.push(Record::Attachment(cv.clone()));
            cv.id = format!("file:{}", id(6000 + n));
            cv.kind = AttachmentKind::Document;
            records.push(Record::Attachment(cv));
            for k in 0..2u128 {
                records.push(Record::Note(Note {
                    id: id(7000 + n * 2 + k),
                    parent_type: if k == 0 {
                        ParentType::Candidate
                    } else {
                        ParentType::Company
                    },
                    parent_id: if k == 0 { id(n) } else { company },
                    title: None,
                    body_html: Some(format!("<p>note {n}/{k}</p>")),
                    label: None,
                    is_private: n % 5 == 0,
                    author_id: None,
                    job_id: None,
                    company_id: None,
                    reference: None,
                    reference_key: None,
                    // Ties on created_at, broken by id.
                    created_at: stamp((n % 4) as i64),
                    updated_at: stamp(30 + (n % 9) as i64),
                }));
            }
        }
    }
    (w, records)
}

/// Changes after the fill: a row moved to another person, a row with a cv removed, a
/// row edited (its cv follows it), a note made private, a cv removed.
fn changes(records: &[Record]) -> Vec<Result<Record, (RecordKind, String)>> {
    let id = |n: u128| Uuid::from_u128(0xb000_0000 + n);
    let candidate = |n: u128| {
        records
            .iter()
            .find_map(|r| match r {
                Record::Candidate(c) if c.id == id(n) => Some((**c).clone()),
                _ => None,
            })
            .unwrap()
    };
    let mut moved = candidate(21);
    moved.person_id = id(1003);
    // No longer an application; the talent-pool row 30 becomes one.
    let job = moved.job_id.take().expect("row 21 is an application");
    let mut edited = candidate(30);
    edited.updated_at = Stamp::from_millis(CHANGE_TRACKING_START.millis() + 99_000_000);
    edited.job_id = Some(job);
    let mut private = records
        .iter()
        .find_map(|r| match r {
            Record::Note(n) if n.id == id(7000 + 51 * 2) => Some(n.clone()),
            _ => None,
        })
        .unwrap();
    private.is_private = true;
    vec![
        Ok(Record::Candidate(Box::new(moved))),
        Err((RecordKind::Candidate, id(60).to_string())),
        Ok(Record::Candidate(Box::new(edited))),
        Ok(Record::Note(private)),
        Err((RecordKind::Attachment, format!("cv:{}", id(5000 + 50)))),
    ]
}

fn apply(state: &mut WorkspaceState, ops: Vec<Result<Record, (RecordKind, String)>>) {
    for op in ops {
        match op {
            Ok(r) => state.put(r),
            Err((kind, id)) => assert!(state.delete(kind, &id), "{kind:?} {id}"),
        }
    }
}

#[test]
fn a_bulk_fill_ends_where_puts_one_by_one_end() {
    let (w, records) = records();
    let changes = changes(&records);
    // Attachments first, as a store that reads kinds alphabetically gives them.
    let mut scrambled = records.clone();
    scrambled.sort_by_key(|r| r.kind().as_str());
    for order in [records.clone(), scrambled] {
        let mut one_by_one = WorkspaceState::new(w.clone());
        apply(&mut one_by_one, order.iter().cloned().map(Ok).collect());
        apply(&mut one_by_one, changes.clone());

        let mut bulk = WorkspaceState::new(w.clone());
        bulk.begin_bulk();
        apply(&mut bulk, order.iter().cloned().map(Ok).collect());
        bulk.end_bulk();
        apply(&mut bulk, changes.clone());
        assert_eq!(bulk.describe(), one_by_one.describe());

        // The changes in the bulk fill too (a bulk import into a held workspace).
        let mut all_bulk = WorkspaceState::new(w.clone());
        all_bulk.begin_bulk();
        apply(&mut all_bulk, order.iter().cloned().map(Ok).collect());
        apply(&mut all_bulk, changes.clone());
        all_bulk.end_bulk();
        assert_eq!(all_bulk.describe(), one_by_one.describe());
    }
}

#[test]
fn the_indexes_answer_what_the_records_say() {
    let (w, records) = records();
    let mut state = WorkspaceState::new(w);
    apply(&mut state, records.iter().cloned().map(Ok).collect());
    apply(&mut state, changes(&records));
    let id = |n: u128| Uuid::from_u128(0xb000_0000 + n);
    // Person 3 has its own row and the one moved to it; person 2 lost it.
    let rows = |p: u128| {
        let mut rows: Vec<Uuid> = state
            .person_rows_all(id(1000 + p))
            .map(|(r, _)| *r)
            .collect();
        rows.sort();
        rows
    };
    assert_eq!(rows(3), vec![id(21), id(30)]);
    assert_eq!(rows(2), vec![id(20), id(22)]);
    // Person 6's only row is gone: no longer a person.
    assert!(!state.is_person(id(1006)));
    assert!(state.is_person(id(1003)));
    // The edited row's cv moved with it.
    let cv = state
        .attachments
        .get(&Arc::from(format!("cv:{}", id(5000 + 30))))
        .unwrap()
        .clone();
    assert_eq!(
        cv.timestamps_in(&state).1,
        Stamp::from_millis(CHANGE_TRACKING_START.millis() + 99_000_000)
    );
    // Applications: the rows with a job, in the sync order, and only those.
    let applications: Vec<Uuid> = state
        .applications()
        .iter_from(None, None)
        .map(|(_, id, _)| *id)
        .collect();
    let mut want: Vec<(Stamp, Uuid)> = state
        .candidates
        .iter_from(None, None)
        .filter(|(_, _, r)| r.job_id().is_some())
        .map(|(stamp, id, _)| (stamp, *id))
        .collect();
    want.sort();
    assert_eq!(
        applications,
        want.iter().map(|(_, id)| *id).collect::<Vec<_>>()
    );
    assert!(applications.contains(&id(22)) && !applications.contains(&id(20)));
    assert!(applications.contains(&id(30)) && !applications.contains(&id(21)));
    assert!(state.applications().get_visible(&id(20)).is_none());
    assert!(state.applications().get_visible(&id(21)).is_none());
    assert!(state.applications().get_visible(&id(30)).is_some());
    assert_eq!(state.applications().visible_len(), applications.len());
    // The note made private left its parent's list; the row's other notes stay.
    let notes = state.notes_of(&[(ParentType::Candidate, id(51))], 10);
    assert_eq!(notes.total, 0);
    let notes = state.notes_of(&[(ParentType::Candidate, id(21))], 10);
    assert_eq!(notes.total, 1);
    // A person's files: both rows' cv and other file, the removed cv gone.
    let files = state.attachments_of(&[(ParentType::Candidate, id(50))], 10);
    assert_eq!(files.total, 1);
}

/// Every key of both search indexes with its owners (sorted), base and delta alike.
fn index_contents(s: &WorkspaceState) -> Vec<(&'static str, Vec<u8>, Vec<Owner>)> {
    let mut out = Vec::new();
    s.search.phone.for_each_with_prefix(b"", |key, owners| {
        let mut owners = owners.to_vec();
        owners.sort();
        out.push(("phone", key.to_vec(), owners));
    });
    s.search.email.for_each_with_prefix(b"", |key, owners| {
        let mut owners = owners.to_vec();
        owners.sort();
        out.push(("email", key.to_vec(), owners));
    });
    out.sort();
    out
}

/// A bulk fill's search indexes, built on two threads or one after the other, hold
/// every key and owner that putting the records one by one gives.
#[test]
fn search_indexes_built_together_or_in_turn_are_those_of_puts_one_by_one() {
    let (w, records) = records();
    let mut one_by_one = WorkspaceState::new(w.clone());
    apply(&mut one_by_one, records.iter().cloned().map(Ok).collect());
    let want = index_contents(&one_by_one);
    assert!(want.iter().any(|(kind, _, _)| *kind == "phone"));
    assert!(want
        .iter()
        .any(|(kind, _, owners)| *kind == "email" && owners.len() == 1));
    for how in [SearchBuild::Together, SearchBuild::OneAfterTheOther] {
        let mut bulk = WorkspaceState::new(w.clone());
        bulk.begin_bulk();
        apply(&mut bulk, records.iter().cloned().map(Ok).collect());
        bulk.end_bulk_with(how);
        assert_eq!(index_contents(&bulk), want, "{how:?}");
    }
}

#[test]
fn a_row_restamped_in_place_is_the_row_put_again_with_that_stamp() {
    let (w, records) = records();
    let mut state = WorkspaceState::new(w);
    apply(&mut state, records.iter().cloned().map(Ok).collect());
    let id = |n: u128| Uuid::from_u128(0xb000_0000 + n);
    let stamp = Stamp::from_millis(CHANGE_TRACKING_START.millis() + 77_000_000);
    let (mut restamped, mut put_again) = (state.clone(), state.clone());
    // A talent-pool row and an application, both with CVs (which show their stamps).
    for n in [20, 21] {
        let rec = restamped.restamp_candidate(id(n), stamp).expect("a row");
        assert_eq!(rec.updated_at(), stamp);
        let mut raw = put_again.candidates.get(&id(n)).unwrap().raw();
        raw.updated_at = stamp;
        assert_eq!(rec.raw(), raw);
        put_again.put(Record::Candidate(Box::new(raw)));
    }
    assert_eq!(restamped.describe(), put_again.describe());
    assert_ne!(restamped.describe(), state.describe());
    assert!(restamped.restamp_candidate(id(9_999), stamp).is_none());
}
