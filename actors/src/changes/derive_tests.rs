//! The indexed derivation finds exactly what scanning every table finds, over random
//! commits of every kind a derived change follows.

use super::*;
use crate::model::*;
use crate::snapshot::{parse_slice, plan_import, NoKeys};
use crate::time::CHANGE_TRACKING_START;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::HashSet;

/// The derivation as it was first written, by scanning the tables: the oracle the
/// indexed one must agree with.
fn derived_by_scan(
    before: &WorkspaceState,
    after: &WorkspaceState,
    written: impl IntoIterator<Item = (RecordKind, Uuid)>,
) -> Vec<Change> {
    let mut companies = HashSet::new();
    let mut contacts = HashSet::new();
    let mut jobs = HashSet::new();
    let mut users = HashSet::new();
    let mut stages = HashSet::new();
    let mut rows = Vec::new();
    for (kind, u) in written {
        match kind {
            RecordKind::Company => {
                companies.insert(u);
            }
            RecordKind::Contact => {
                contacts.insert(u);
            }
            RecordKind::Job => {
                jobs.insert(u);
            }
            RecordKind::User => {
                users.insert(u);
            }
            RecordKind::Stage => {
                stages.insert(u);
            }
            RecordKind::Candidate => {
                let stamps = |ws: &WorkspaceState| {
                    ws.candidates
                        .get(&u)
                        .map(|r| (r.created_at(), r.updated_at()))
                };
                if let Some(was) = stamps(before) {
                    if stamps(after) != Some(was) {
                        rows.push(u);
                    }
                }
            }
            _ => {}
        }
    }
    // Dependents are looked for among the records as they are after the commit, and
    // kept only when the commit left them alone (the same record, not a copy, in both
    // states): a record written, created or deleted is in the log already.
    let mut out: Vec<Change> = Vec::new();
    let mut add = |entity: Entity, id: LoggedId| out.push(Change { entity, id });
    fn kept<T: ?Sized>(a: Option<&std::sync::Arc<T>>, b: &std::sync::Arc<T>) -> bool {
        a.is_some_and(|a| std::sync::Arc::ptr_eq(a, b))
    }
    if !companies.is_empty() {
        for (id, job) in after.jobs.iter() {
            if job.company_id.is_some_and(|c| companies.contains(&c))
                && kept(before.jobs.get(id), job)
            {
                add(Entity::Jobs, LoggedId::Uuid(*id));
            }
        }
        for (id, contact) in after.contacts.iter() {
            if companies.contains(&contact.raw.company_id) && kept(before.contacts.get(id), contact)
            {
                add(Entity::Contacts, LoggedId::Uuid(*id));
            }
        }
    }
    if !contacts.is_empty() {
        for (id, note) in after.notes.iter() {
            if contacts.contains(&note.parent_id()) && kept(before.notes.get(id), note) {
                add(Entity::Notes, LoggedId::Uuid(*id));
            }
        }
    }
    if !jobs.is_empty() || !users.is_empty() || !stages.is_empty() {
        for (id, row) in after.candidates.iter() {
            let on_job = row.job_id();
            // The recruiter of the row's job before or after: either may be the one the
            // row showed, or shows now.
            let recruiter = |ws: &WorkspaceState| {
                on_job
                    .and_then(|j| ws.jobs.get(&j))
                    .and_then(|j| j.assigned_recruiter_id)
            };
            // Each test only when its set has members: a job's PATCH tests every row
            // against the jobs alone, not two job lookups a row for users nobody wrote.
            let touched = on_job.is_some_and(|j| jobs.contains(&j))
                || (!users.is_empty()
                    && (row.owner_id().is_some_and(|o| users.contains(&o))
                        || recruiter(before).is_some_and(|r| users.contains(&r))
                        || recruiter(after).is_some_and(|r| users.contains(&r))))
                || (!stages.is_empty() && row.stage_id().is_some_and(|s| stages.contains(&s)));
            if touched && kept(before.candidates.get(id), row) {
                add(Entity::Candidates, LoggedId::Uuid(*id));
                if on_job.is_some() {
                    add(Entity::Applications, LoggedId::Uuid(*id));
                }
            }
        }
    }
    for row in &rows {
        for at in after.cv_by_row.of(*row) {
            if let Some((cv, rec)) = after.attachments.at_row(at) {
                if kept(before.attachments.get(cv), rec) {
                    add(Entity::Attachments, LoggedId::parse(cv));
                }
            }
        }
    }
    // The scans above find what may have changed (a job's applications, whatever of the
    // job changed); only what the API now shows differently is a change: each is
    // rendered in both states and compared.
    let shown = |ws: &WorkspaceState, c: &Change| {
        let mut out = Vec::new();
        rendered(ws, c, &mut out).then_some(out)
    };
    out.retain(|c| shown(before, c) != shown(after, c));
    out
}

/// A workspace of a few of each kind, linked at random.
struct World {
    users: Vec<Uuid>,
    stages: Vec<Uuid>,
    companies: Vec<Uuid>,
    contacts: Vec<Uuid>,
    jobs: Vec<Uuid>,
    rows: Vec<Uuid>,
    notes: Vec<Uuid>,
}

fn stamp(n: i64) -> Stamp {
    Stamp::from_millis(CHANGE_TRACKING_START.millis() + n * 60_000)
}

fn pick<T: Copy>(rng: &mut StdRng, from: &[T]) -> T {
    from[rng.gen_range(0..from.len())]
}

fn maybe<T: Copy>(rng: &mut StdRng, from: &[T]) -> Option<T> {
    rng.gen_bool(0.8).then(|| pick(rng, from))
}

fn world(rng: &mut StdRng) -> (WorkspaceState, World) {
    let bytes = include_bytes!("../../../tests/fixtures/snapshot-small.json");
    let plan = plan_import(None, parse_slice(bytes).unwrap(), &NoKeys, false).unwrap();
    let records = plan.change_set().upserts;
    let first = |kind: RecordKind| {
        records
            .iter()
            .find(|r| r.kind() == kind)
            .cloned()
            .expect("the example has one of each kind")
    };
    let mut n = 0u128;
    let mut id = || {
        n += 1;
        Uuid::from_u128(0xd000_0000 + n)
    };
    let ids =
        |count: usize, id: &mut dyn FnMut() -> Uuid| (0..count).map(|_| id()).collect::<Vec<_>>();
    let w = World {
        users: ids(5, &mut id),
        stages: ids(4, &mut id),
        companies: ids(3, &mut id),
        contacts: ids(6, &mut id),
        jobs: ids(6, &mut id),
        rows: ids(60, &mut id),
        notes: ids(30, &mut id),
    };
    let mut state = WorkspaceState::new(plan.workspace.clone());
    let Record::User(user) = first(RecordKind::User) else {
        unreachable!()
    };
    for (k, u) in w.users.iter().enumerate() {
        let mut user = user.clone();
        user.id = *u;
        user.email = Some(format!("user{k}@example.com"));
        user.status = UserStatus::Active;
        state.put(Record::User(user));
    }
    for (k, s) in w.stages.iter().enumerate() {
        state.put(Record::Stage(PipelineStage {
            id: *s,
            name: Some(format!("stage {k}")),
            stage_type: (k % 2 == 0).then(|| "interview".into()),
        }));
    }
    let Record::Company(company) = first(RecordKind::Company) else {
        unreachable!()
    };
    for (k, c) in w.companies.iter().enumerate() {
        let mut company = company.clone();
        company.id = *c;
        company.name = Some(format!("company {k}"));
        state.put(Record::Company(company));
    }
    let Record::Contact(contact) = first(RecordKind::Contact) else {
        unreachable!()
    };
    for c in &w.contacts {
        let mut contact = contact.clone();
        contact.id = *c;
        contact.company_id = pick(rng, &w.companies);
        state.put(Record::Contact(contact));
    }
    let Record::Job(job) = first(RecordKind::Job) else {
        unreachable!()
    };
    for j in &w.jobs {
        let mut job = job.clone();
        job.id = *j;
        job.company_id = maybe(rng, &w.companies);
        job.assigned_recruiter_id = maybe(rng, &w.users);
        state.put(Record::Job(job));
    }
    let Record::Candidate(row) = first(RecordKind::Candidate) else {
        unreachable!()
    };
    for (k, r) in w.rows.iter().enumerate() {
        let mut row = (*row).clone();
        row.id = *r;
        row.person_id = Uuid::from_u128(0xe000_0000 + k as u128 / 2);
        row.job_id = maybe(rng, &w.jobs);
        row.stage_id = row.job_id.and_then(|_| maybe(rng, &w.stages));
        row.owner_id = maybe(rng, &w.users);
        row.created_at = stamp(1);
        row.updated_at = stamp(2);
        state.put(Record::Candidate(Box::new(row)));
        if k % 3 == 0 {
            state.put(Record::Attachment(Attachment {
                id: format!("cv:{r}"),
                parent_type: ParentType::Candidate,
                parent_id: *r,
                filename: Some("cv.pdf".into()),
                content_type: Some("application/pdf".into()),
                size: Some(100),
                kind: AttachmentKind::Cv,
                storage_ref: None,
                has_content: true,
                created_at: stamp(1),
                updated_at: stamp(1),
            }));
        }
    }
    let Record::Note(note) = first(RecordKind::Note) else {
        unreachable!()
    };
    for (k, id) in w.notes.iter().enumerate() {
        let mut note = note.clone();
        note.id = *id;
        note.parent_type = ParentType::Contact;
        note.parent_id = pick(rng, &w.contacts);
        note.is_private = k % 4 == 0;
        note.reference = None;
        note.reference_key = None;
        state.put(Record::Note(note));
    }
    (state, w)
}

/// One random write to `state`: its kind and id.
fn write(rng: &mut StdRng, state: &mut WorkspaceState, w: &World, at: i64) -> (RecordKind, Uuid) {
    match rng.gen_range(0..7) {
        0 => {
            let id = pick(rng, &w.companies);
            let mut c = (**state.companies.get(&id).unwrap()).clone();
            c.name = Some(format!("company {at}"));
            state.put(Record::Company(c));
            (RecordKind::Company, id)
        }
        1 => {
            let id = pick(rng, &w.contacts);
            let mut c = state.contacts.get(&id).unwrap().raw.clone();
            c.company_id = pick(rng, &w.companies);
            state.put(Record::Contact(c));
            (RecordKind::Contact, id)
        }
        2 => {
            let id = pick(rng, &w.jobs);
            match state.jobs.get(&id).map(|j| (**j).clone()) {
                Some(mut j) if rng.gen_bool(0.9) => {
                    match rng.gen_range(0..3) {
                        0 => j.assigned_recruiter_id = maybe(rng, &w.users),
                        1 => j.company_id = maybe(rng, &w.companies),
                        _ => j.title = Some(format!("job {at}")),
                    }
                    state.put(Record::Job(j));
                }
                Some(_) => {
                    state.delete(RecordKind::Job, &id.to_string());
                }
                None => {}
            }
            (RecordKind::Job, id)
        }
        3 => {
            let id = pick(rng, &w.users);
            let mut u = (**state.users.get(&id).unwrap()).clone();
            if rng.gen_bool(0.7) {
                u.status = if u.status == UserStatus::Active {
                    UserStatus::Removed
                } else {
                    UserStatus::Active
                };
            } else {
                u.name = Some(format!("user {at}"));
            }
            state.put(Record::User(u));
            (RecordKind::User, id)
        }
        4 => {
            let id = pick(rng, &w.stages);
            let mut s = (**state.stages.get(&id).unwrap()).clone();
            // Sometimes written again as it was.
            if rng.gen_bool(0.7) {
                s.name = Some(format!("stage {at}"));
            }
            if rng.gen_bool(0.3) {
                s.stage_type = None;
            }
            state.put(Record::Stage(s));
            (RecordKind::Stage, id)
        }
        5 => {
            let id = pick(rng, &w.rows);
            if let Some(mut r) = state.candidates.get(&id).map(|r| r.raw()) {
                r.updated_at = stamp(at);
                match rng.gen_range(0..4) {
                    0 => r.owner_id = maybe(rng, &w.users),
                    1 => r.stage_id = maybe(rng, &w.stages),
                    2 => r.job_id = maybe(rng, &w.jobs),
                    _ => {}
                }
                if rng.gen_bool(0.1) {
                    state.delete(RecordKind::Candidate, &id.to_string());
                } else {
                    state.put(Record::Candidate(Box::new(r)));
                }
            }
            (RecordKind::Candidate, id)
        }
        _ => {
            let id = pick(rng, &w.notes);
            let mut n = state.notes.get(&id).unwrap().raw();
            n.is_private = !n.is_private;
            state.put(Record::Note(n));
            (RecordKind::Note, id)
        }
    }
}

#[test]
fn the_links_find_what_a_scan_of_every_table_finds() {
    let mut rng = StdRng::seed_from_u64(7);
    let (mut state, w) = world(&mut rng);
    let mut found = 0;
    for commit in 0..400 {
        let before = state.clone();
        let writes: Vec<(RecordKind, Uuid)> = (0..rng.gen_range(1..4))
            .map(|k| write(&mut rng, &mut state, &w, 10 + commit * 4 + k))
            .collect();
        let mut indexed = derived(&before, &state, writes.clone());
        let mut scanned = derived_by_scan(&before, &state, writes.clone());
        indexed.sort();
        scanned.sort();
        scanned.dedup();
        assert_eq!(indexed, scanned, "commit {commit}: {writes:?}");
        found += indexed.len();
    }
    // The commits change other records' representations, so the comparison compares
    // something.
    assert!(found > 400, "{found} derived changes");
}
