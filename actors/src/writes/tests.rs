//! Write planning against an in-memory state: what each write checks, stamps and
//! records, and what it refuses without a trace.

use super::*;

fn at(s: &str) -> Stamp {
    Stamp::parse_rfc3339(s).unwrap()
}

fn private_note(id: u128) -> Note {
    Note {
        id: Uuid::from_u128(id),
        parent_type: ParentType::Company,
        parent_id: Uuid::from_u128(10),
        title: Some("t".into()),
        body_html: Some("b".into()),
        label: None,
        is_private: true,
        author_id: None,
        job_id: None,
        company_id: None,
        reference: None,
        reference_key: None,
        created_at: at("2026-09-01T00:00:00Z"),
        updated_at: at("2026-09-01T00:00:00Z"),
    }
}

fn private_task(id: u128) -> Task {
    Task {
        id: Uuid::from_u128(id),
        parent_type: ParentType::Company,
        parent_id: Uuid::from_u128(10),
        title: Some("t".into()),
        body_html: None,
        status: TaskStatus::Open,
        due_date: None,
        owner_id: None,
        completed_at: None,
        is_private: true,
        placement_row_id: None,
        reference: None,
        reference_key: None,
        created_at: at("2026-09-01T00:00:00Z"),
        updated_at: at("2026-09-01T00:00:00Z"),
    }
}

#[test]
fn private_notes_and_tasks_are_not_found_by_id() {
    let mut state = WorkspaceState::new(Workspace {
        id: Uuid::from_u128(1),
        name: None,
        default_region: None,
    });
    state.put(Record::Note(private_note(2)));
    state.put(Record::Task(private_task(3)));
    let (n, t, missing) = (Uuid::from_u128(2), Uuid::from_u128(3), Uuid::from_u128(9));
    let held = |s: &WorkspaceState| (s.notes.get(&n).cloned(), s.tasks.get(&t).cloned());
    let before = held(&state);
    let publish_note = || NotePatch {
        is_private: Some(false),
        ..Default::default()
    };
    let edit_note = || NotePatch {
        body_html: Some("changed".into()),
        ..Default::default()
    };
    let publish_task = || TaskPatch {
        is_private: Some(false),
        ..Default::default()
    };
    // Checked before any field: an owner that would be refused does not tell the
    // private task from a missing one either.
    let edit_task = || TaskPatch {
        status: Some(ClientTaskStatus::Completed),
        owner_email: Some(Change::Set("nobody@mail.example".into())),
        ..Default::default()
    };
    let ops: Vec<(WriteOp, WriteOp)> = vec![
        (
            WriteOp::UpdateNote(n, publish_note()),
            WriteOp::UpdateNote(missing, publish_note()),
        ),
        (
            WriteOp::UpdateNote(n, edit_note()),
            WriteOp::UpdateNote(missing, edit_note()),
        ),
        (WriteOp::DeleteNote(n), WriteOp::DeleteNote(missing)),
        (
            WriteOp::UpdateTask(t, publish_task()),
            WriteOp::UpdateTask(missing, publish_task()),
        ),
        (
            WriteOp::UpdateTask(t, edit_task()),
            WriteOp::UpdateTask(missing, edit_task()),
        ),
        (WriteOp::DeleteTask(t), WriteOp::DeleteTask(missing)),
    ];
    for (op, unknown) in ops {
        let what = format!("{op:?}");
        let mut changes = ChangeSet::default();
        let err = plan_write(&mut state, op, &mut changes).unwrap_err();
        let unknown_err = plan_write(&mut state, unknown, &mut changes).unwrap_err();
        let (WriteError::NotFound(msg), WriteError::NotFound(unknown_msg)) = (err, unknown_err)
        else {
            panic!("{what}: not NotFound");
        };
        assert_eq!(
            msg.replace(&n.to_string(), &missing.to_string())
                .replace(&t.to_string(), &missing.to_string()),
            unknown_msg,
            "{what}"
        );
        assert!(changes.is_empty(), "{what}");
        assert_eq!(held(&state), before, "{what}");
        assert_eq!(
            crate::entities::count(&state, Entity::Notes)
                + crate::entities::count(&state, Entity::Tasks),
            0
        );
    }
}

#[test]
fn currency_list_is_sorted_and_checked() {
    assert!(CURRENCIES.windows(2).all(|w| w[0] < w[1]));
    assert!(is_currency("GBP") && is_currency("EUR") && is_currency("JPY"));
    assert!(!is_currency("gbp") && !is_currency("XXX") && !is_currency("GB"));
}

#[test]
fn emails_are_plausible() {
    assert!(is_email("ann+cv@mail.example"));
    for bad in [
        "",
        "ann",
        "ann@",
        "@mail.example",
        "a b@mail.example",
        "a@b",
        "a@@b.c",
    ] {
        assert!(!is_email(bad), "{bad}");
    }
    // The length is counted in characters, as the OpenAPI document's maxLength counts.
    let long = format!("{}@mail.example", "é".repeat(254 - 13));
    assert_eq!(long.chars().count(), 254);
    assert!(is_email(&long));
    assert!(!is_email(&format!("é{long}")));
}

// ----- Against the example workspace -------------------------------------------------

const OLIVIA: &str = "c26c9743-a728-5f14-b348-d08024212444";
const RAJ: &str = "0986a580-8fc6-5461-afb0-b69c0a512919";
const IVY: &str = "5e9ec401-b232-5127-b90a-84f811430357";
const FABRIKAM: &str = "71ff7925-38fa-57bd-b38e-c2e5e183f050";
const HANA: &str = "c39ca419-8ea8-58e1-a02b-11d9dec22eb3";
const JOB: &str = "2fae0fc8-6eee-55da-8a7e-f15794b7515f";
const LEO_PRIMARY: &str = "a214ca67-7691-5c62-8910-a410373e10c9";
const LEO_APPLICATION: &str = "b509f583-def1-5a25-9cb1-a1532b926c94";
const LEO_PERSON: &str = "21b6ca4e-64ee-5e3c-89d8-7a0806815565";
const OPEN_TASK: &str = "9b9318fa-d687-5079-970e-cb43c3d145bb";

fn uuid(s: &str) -> Uuid {
    Uuid::parse_str(s).unwrap()
}

/// The example snapshot's workspace, in memory.
fn example() -> WorkspaceState {
    let snap = crate::snapshot::parse_slice(include_bytes!(
        "../../../tests/fixtures/snapshot-small.json"
    ))
    .unwrap();
    crate::snapshot::plan_import(None, snap, &crate::snapshot::NoKeys, true)
        .unwrap()
        .next
        .unwrap()
}

fn new_note(parent_type: ParentType, parent: &str) -> NewNote {
    NewNote {
        parent_type,
        parent_id: uuid(parent),
        body_html: "<p>called</p>".into(),
        title: None,
        label: None,
        author_email: None,
        is_private: false,
        reference: None,
        reference_key: None,
    }
}

fn new_task(parent_type: ParentType, parent: &str) -> NewTask {
    NewTask {
        parent_type,
        parent_id: uuid(parent),
        title: "call back".into(),
        body_html: None,
        due_date: None,
        owner_email: None,
        is_private: false,
        reference: None,
        reference_key: None,
    }
}

/// Plans one write; the written outcome, the change set, and the state after it.
fn write(
    state: &WorkspaceState,
    op: WriteOp,
) -> Result<(Written, ChangeSet, WorkspaceState), WriteError> {
    let mut next = state.clone();
    let mut changes = ChangeSet::default();
    let written = plan_write(&mut next, op, &mut changes)?;
    Ok((written, changes, next))
}

fn refused(state: &WorkspaceState, op: WriteOp) -> WriteError {
    let mut next = state.clone();
    let mut changes = ChangeSet::default();
    let err = plan_write(&mut next, op, &mut changes).unwrap_err();
    assert!(changes.is_empty(), "a refused write records nothing: {err}");
    err
}

fn field_of(e: &WriteError) -> &'static str {
    match e {
        WriteError::Invalid { field, .. } => field,
        other => panic!("not a 400: {other}"),
    }
}

#[test]
fn a_note_on_any_row_of_a_person_goes_to_the_primary_row_and_keeps_its_job() {
    let state = example();
    for (parent, job) in [
        (LEO_PRIMARY, None),
        (LEO_APPLICATION, Some(uuid(JOB))),
        (LEO_PERSON, None),
    ] {
        let (written, changes, next) = write(
            &state,
            WriteOp::CreateNote(new_note(ParentType::Candidate, parent)),
        )
        .unwrap();
        let Written::Created(RecordKind::Note, id) = written else {
            panic!("{written:?}");
        };
        let note = next.notes.get(&id).unwrap();
        assert_eq!(note.parent_id(), uuid(LEO_PRIMARY), "{parent}");
        assert_eq!(note.job_id(), job, "{parent}");
        // Unnamed author: the workspace owner; stamped after everything before.
        assert_eq!(note.author_id(), Some(uuid(OLIVIA)));
        assert!(note.updated_at() > state.last_stamp && note.created_at() == note.updated_at());
        assert_eq!(changes.upserts.len(), 1);
        assert!(next.notes.get_visible(&id).is_some());
    }
}

#[test]
fn a_contact_note_carries_the_contact_company_and_an_invited_author_falls_back() {
    let state = example();
    let mut n = new_note(ParentType::Contact, HANA);
    n.author_email = Some("IVY@northwind.example".into());
    let (Written::Created(_, id), _, next) = write(&state, WriteOp::CreateNote(n)).unwrap() else {
        panic!()
    };
    let note = next.notes.get(&id).unwrap();
    assert_eq!(note.company_id(), Some(uuid(FABRIKAM)));
    assert_eq!(note.job_id(), None);
    // Ivy never accepted her invitation: the owner authors the note.
    assert_ne!(note.author_id(), Some(uuid(IVY)));
    assert_eq!(note.author_id(), Some(uuid(OLIVIA)));
    let mut n = new_note(ParentType::Company, FABRIKAM);
    n.author_email = Some("raj@northwind.example".into());
    let (Written::Created(_, id), _, next) = write(&state, WriteOp::CreateNote(n)).unwrap() else {
        panic!()
    };
    assert_eq!(next.notes.get(&id).unwrap().author_id(), Some(uuid(RAJ)));
}

#[test]
fn a_reference_makes_a_create_update_the_same_note() {
    let state = example();
    let mut n = new_note(ParentType::Company, FABRIKAM);
    n.reference = Some("crm-1".into());
    let (first, _, state) = write(&state, WriteOp::CreateNote(n.clone())).unwrap();
    let Written::Created(RecordKind::Note, id) = first else {
        panic!("{first:?}")
    };
    let created_at = state.notes.get(&id).unwrap().created_at();
    n.body_html = "<p>called again</p>".into();
    let (again, _, state) = write(&state, WriteOp::CreateNote(n)).unwrap();
    assert_eq!(again, Written::Updated(RecordKind::Note, id));
    let note = state.notes.get(&id).unwrap();
    assert_eq!(note.body_html(), Some("<p>called again</p>"));
    assert_eq!(note.created_at(), created_at, "created once");
    assert!(note.updated_at() > created_at);
    assert_eq!(
        crate::entities::count(&state, Entity::Notes),
        2,
        "one note more than the example's one"
    );
}

/// References are scoped per key: another key repeating a reference gets a note of its
/// own, and a private note is reached by no other key's reference (neither its id nor
/// its text comes out, nor is it overwritten); a note made by no key (an import) is
/// reached by any key's reference while it is shown.
#[test]
fn references_are_scoped_per_key() {
    let state = example();
    let mut mine = new_note(ParentType::Company, FABRIKAM);
    mine.reference = Some("crm-7".into());
    mine.reference_key = Some("key_a".into());
    mine.is_private = true;
    mine.body_html = "<p>private</p>".into();
    let (first, _, state) = write(&state, WriteOp::CreateNote(mine.clone())).unwrap();
    let Written::Created(RecordKind::Note, private_id) = first else {
        panic!("{first:?}")
    };
    let mut theirs = mine.clone();
    theirs.reference_key = Some("key_b".into());
    theirs.is_private = false;
    theirs.body_html = "<p>overwrite attempt</p>".into();
    let (second, _, state) = write(&state, WriteOp::CreateNote(theirs)).unwrap();
    let Written::Created(RecordKind::Note, other_id) = second else {
        panic!("another key's reference must not reach the private note: {second:?}")
    };
    assert_ne!(other_id, private_id);
    assert_eq!(
        state.notes.get(&private_id).unwrap().body_html(),
        Some("<p>private</p>")
    );
    // The key that made it still reaches it (a retried create is not doubled).
    let (again, _, state) = write(&state, WriteOp::CreateNote(mine)).unwrap();
    assert_eq!(again, Written::Updated(RecordKind::Note, private_id));

    // An imported note with a reference: any key's reference reaches it while shown...
    let mut imported = private_note(77);
    imported.is_private = false;
    imported.parent_id = uuid(FABRIKAM);
    imported.reference = Some("crm-imported".into());
    let mut state = state;
    state.put(Record::Note(imported.clone()));
    let mut repeat = new_note(ParentType::Company, FABRIKAM);
    repeat.reference = Some("crm-imported".into());
    repeat.reference_key = Some("key_b".into());
    let (w, _, _) = write(&state, WriteOp::CreateNote(repeat.clone())).unwrap();
    assert_eq!(w, Written::Updated(RecordKind::Note, imported.id));
    // ...but not once it is private.
    imported.is_private = true;
    state.put(Record::Note(imported.clone()));
    let (w, _, _) = write(&state, WriteOp::CreateNote(repeat)).unwrap();
    assert!(
        matches!(w, Written::Created(RecordKind::Note, id) if id != imported.id),
        "{w:?}"
    );

    // Tasks alike.
    let mut task = new_task(ParentType::Company, FABRIKAM);
    task.reference = Some("crm-task".into());
    task.reference_key = Some("key_a".into());
    task.is_private = true;
    let (w, _, state) = write(&state, WriteOp::CreateTask(task.clone())).unwrap();
    let Written::Created(RecordKind::Task, task_id) = w else {
        panic!("{w:?}")
    };
    task.reference_key = Some("key_b".into());
    let (w, _, _) = write(&state, WriteOp::CreateTask(task)).unwrap();
    assert!(
        matches!(w, Written::Created(RecordKind::Task, id) if id != task_id),
        "{w:?}"
    );
}

#[test]
fn parents_must_exist_and_tasks_never_go_on_jobs() {
    let state = example();
    let nobody = "00000000-0000-4000-8000-000000000000";
    for (t, p) in [
        (ParentType::Candidate, nobody),
        (ParentType::Contact, FABRIKAM),
        (ParentType::Company, HANA),
        (ParentType::Job, nobody),
    ] {
        let e = refused(&state, WriteOp::CreateNote(new_note(t, p)));
        assert_eq!(field_of(&e), "parent_id", "{t:?} {p}");
    }
    let e = refused(&state, WriteOp::CreateTask(new_task(ParentType::Job, JOB)));
    assert_eq!(field_of(&e), "parent_type");
}

#[test]
fn a_task_owner_must_be_an_accepted_member_and_completion_keeps_completed_at_in_step() {
    let state = example();
    let mut t = new_task(ParentType::Company, FABRIKAM);
    t.owner_email = Some("ivy@northwind.example".into());
    assert_eq!(
        field_of(&refused(&state, WriteOp::CreateTask(t.clone()))),
        "owner_email"
    );
    t.owner_email = Some("raj@northwind.example".into());
    let (Written::Created(_, id), _, state) = write(&state, WriteOp::CreateTask(t)).unwrap() else {
        panic!()
    };
    let task = state.tasks.get(&id).unwrap();
    assert_eq!(
        (task.owner_id, task.status),
        (Some(uuid(RAJ)), TaskStatus::Open)
    );
    assert_eq!(task.completed_at, None);

    let complete = || TaskPatch {
        status: Some(ClientTaskStatus::Completed),
        ..Default::default()
    };
    let (_, _, state) = write(&state, WriteOp::UpdateTask(id, complete())).unwrap();
    let done = state.tasks.get(&id).unwrap().clone();
    assert_eq!(done.status, TaskStatus::Completed);
    assert_eq!(done.completed_at, Some(done.updated_at));
    // Completed again: the first completion time stays.
    let (_, _, state) = write(&state, WriteOp::UpdateTask(id, complete())).unwrap();
    assert_eq!(
        state.tasks.get(&id).unwrap().completed_at,
        done.completed_at
    );
    let reopen = TaskPatch {
        status: Some(ClientTaskStatus::Open),
        ..Default::default()
    };
    let (_, _, state) = write(&state, WriteOp::UpdateTask(id, reopen)).unwrap();
    let open = state.tasks.get(&id).unwrap();
    assert_eq!((open.status, open.completed_at), (TaskStatus::Open, None));
    // A deleted task is gone, and deleting it again is a 404.
    let (written, changes, state) = write(&state, WriteOp::DeleteTask(uuid(OPEN_TASK))).unwrap();
    assert_eq!(written, Written::Deleted(RecordKind::Task, uuid(OPEN_TASK)));
    assert_eq!(changes.deletes, [(RecordKind::Task, OPEN_TASK.to_string())]);
    assert!(matches!(
        refused(&state, WriteOp::DeleteTask(uuid(OPEN_TASK))),
        WriteError::NotFound(_)
    ));
}

#[test]
fn personal_fields_change_on_every_row_and_the_owner_on_the_row_edited() {
    let state = example();
    let patch = CandidatePatch {
        job_title: Some(Change::Set("SRE".into())),
        owning_recruiter_id: Some(Change::Set(uuid(RAJ))),
        ..Default::default()
    };
    let (written, changes, next) = write(
        &state,
        WriteOp::PatchCandidate(uuid(LEO_APPLICATION), patch),
    )
    .unwrap();
    assert_eq!(
        written,
        Written::Updated(RecordKind::Candidate, uuid(LEO_APPLICATION))
    );
    assert_eq!(changes.upserts.len(), 2, "both rows of the person");
    let row = |id: &str| next.candidates.get(&uuid(id)).unwrap().raw();
    assert_eq!(row(LEO_PRIMARY).job_title.as_deref(), Some("SRE"));
    assert_eq!(row(LEO_APPLICATION).job_title.as_deref(), Some("SRE"));
    assert_eq!(row(LEO_APPLICATION).owner_id, Some(uuid(RAJ)));
    assert_eq!(
        row(LEO_PRIMARY).owner_id,
        state.candidates.get(&uuid(LEO_PRIMARY)).unwrap().owner_id(),
        "the owner is the row's own"
    );
    // An owner only: that row alone.
    let patch = CandidatePatch {
        owning_recruiter_id: Some(Change::Clear),
        ..Default::default()
    };
    let (_, changes, _) = write(&state, WriteOp::PatchCandidate(uuid(LEO_PRIMARY), patch)).unwrap();
    assert_eq!(changes.upserts.len(), 1);
    // An owner outside the workspace is refused, naming the field.
    let patch = CandidatePatch {
        owning_recruiter_id: Some(Change::Set(Uuid::from_u128(77))),
        ..Default::default()
    };
    let e = refused(&state, WriteOp::PatchCandidate(uuid(LEO_PRIMARY), patch));
    assert_eq!(field_of(&e), "owning_recruiter_id");
}

#[test]
fn company_references_are_checked_and_live_is_the_complement_of_archived() {
    let state = example();
    let contact = ContactPatch {
        company_id: Some(Uuid::from_u128(77)),
        ..Default::default()
    };
    let e = refused(&state, WriteOp::PatchContact(uuid(HANA), contact));
    assert_eq!(field_of(&e), "company_id");
    let job = |live| JobPatch {
        live: Some(live),
        ..Default::default()
    };
    let (_, _, archived) = write(&state, WriteOp::PatchJob(uuid(JOB), job(false))).unwrap();
    assert!(archived.jobs.get(&uuid(JOB)).unwrap().is_archived);
    let (_, _, live) = write(&archived, WriteOp::PatchJob(uuid(JOB), job(true))).unwrap();
    assert!(!live.jobs.get(&uuid(JOB)).unwrap().is_archived);
    let company = CompanyPatch {
        name: Some(Change::Set("Fabrikam Ltd".into())),
        ..Default::default()
    };
    let (_, _, renamed) = write(&state, WriteOp::PatchCompany(uuid(FABRIKAM), company)).unwrap();
    assert_eq!(
        renamed
            .companies
            .get(&uuid(FABRIKAM))
            .unwrap()
            .name
            .as_deref(),
        Some("Fabrikam Ltd")
    );
}

#[test]
fn every_write_is_stamped_after_the_previous_one() {
    let mut state = example();
    let mut last = state.last_stamp;
    for i in 0..5 {
        let mut changes = ChangeSet::default();
        let op = WriteOp::CreateNote(NewNote {
            body_html: format!("{i}"),
            ..new_note(ParentType::Company, FABRIKAM)
        });
        let Written::Created(_, id) = plan_write(&mut state, op, &mut changes).unwrap() else {
            panic!()
        };
        let stamp = state.notes.get(&id).unwrap().updated_at();
        assert!(stamp > last, "strictly after the previous stamp");
        last = stamp;
    }
}

#[test]
fn a_batch_commits_what_it_accepts_with_what_that_shows_elsewhere() {
    let state = example();
    let rename = CompanyPatch {
        name: Some(Change::Set("Fabrikam Ltd".into())),
        ..Default::default()
    };
    let batch = vec![
        (WriteOp::PatchCompany(uuid(FABRIKAM), rename), 1),
        (WriteOp::CreateNote(new_note(ParentType::Company, JOB)), 2),
        (WriteOp::DeleteTask(uuid(OPEN_TASK)), 3),
    ];
    let planned = plan_batch(&state, batch);
    let accepted: Vec<u8> = planned.accepted.iter().map(|(_, t)| *t).collect();
    let refused: Vec<u8> = planned.refused.iter().map(|(_, t)| *t).collect();
    assert_eq!((accepted, refused), (vec![1, 3], vec![2]));
    assert_eq!(field_of(&planned.refused[0].0), "parent_id");
    // The company's contact shows its new name: a derived change, touched at one new
    // stamp and kept apart from the upserts (its row is stored after the commit).
    let hana = crate::entries::Change {
        entity: Entity::Contacts,
        id: crate::entries::LoggedId::Uuid(uuid(HANA)),
    };
    assert!(
        planned.changes.derived.contains(&hana),
        "{:?}",
        planned.changes.derived
    );
    let touched = planned.changes.touched.as_ref().expect("records touched");
    assert!(touched.records.contains(&(RecordKind::Contact, uuid(HANA))));
    assert!(!planned
        .changes
        .upserts
        .iter()
        .any(|r| matches!(r, Record::Contact(c) if c.id == uuid(HANA))));
    assert_eq!(
        planned
            .next
            .contacts
            .get(&uuid(HANA))
            .unwrap()
            .raw
            .updated_at,
        touched.stamp
    );
    // The task left what the API shows: a tombstone, in the change set and the state.
    let task = crate::entries::Change {
        entity: Entity::Tasks,
        id: crate::entries::LoggedId::Uuid(uuid(OPEN_TASK)),
    };
    assert!(planned
        .changes
        .tombstones
        .iter()
        .any(|(c, left)| *c == task && left.is_some()));
    assert!(planned.next.tombstones.contains(&task));
    assert_eq!(planned.next.position, state.position + 1);
    // Nothing accepted: nothing to commit, and the state as it was.
    let none = plan_batch(
        &state,
        vec![(WriteOp::CreateNote(new_note(ParentType::Company, JOB)), ())],
    );
    assert!(none.accepted.is_empty() && none.changes.is_empty());
    assert_eq!(none.next.position, state.position);
}
