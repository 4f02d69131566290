//! Cached renderings against fresh ones, across every dependency a view has.
use super::*;
use crate::model::*;
use crate::snapshot::{parse_slice, plan_import, NoKeys};
use crate::state::WorkspaceState;
use crate::time::Stamp;
use crate::views::{ApplicationView, View};
use std::collections::BTreeMap;
use uuid::Uuid;

fn fixture() -> WorkspaceState {
    let snap = parse_slice(include_bytes!(
        "../../../tests/fixtures/snapshot-small.json"
    ))
    .unwrap();
    plan_import(None, snap, &NoKeys, true)
        .unwrap()
        .next
        .unwrap()
}

fn id(s: &str) -> Uuid {
    Uuid::parse_str(s).unwrap()
}

const STAGED_ROW: &str = "b509f583-def1-5a25-9cb1-a1532b926c94";
const CV_ROW: &str = "a214ca67-7691-5c62-8910-a410373e10c9";
const JOB: &str = "2fae0fc8-6eee-55da-8a7e-f15794b7515f";
const STAGE: &str = "ba0c6ea4-37e1-54cd-b789-82a272717f81";
const OWNER: &str = "c26c9743-a728-5f14-b348-d08024212444";
const COMPANY: &str = "71ff7925-38fa-57bd-b38e-c2e5e183f050";
const CONTACT: &str = "c39ca419-8ea8-58e1-a02b-11d9dec22eb3";
const CV: &str = "cv:91b2d50e-a6b0-5581-b491-530642265a44";
const CONTACT_NOTE: &str = "05ace384-620b-5866-bfb7-3cdd82c2fe5e";

/// One table's visible rows through the cache, each checked against a fresh
/// rendering of the same state.
fn table<'s, K, V, T>(
    ws: &WorkspaceState,
    out: &mut BTreeMap<String, String>,
    entity: &str,
    t: &'s crate::state::Table<K, V>,
    view: impl Fn(&'s V) -> T,
) where
    K: std::hash::Hash + Eq + Ord + Clone + crate::state::MinKey + ToString,
    T: Rendered,
{
    for (_, k, row) in t.rows_from(None, None) {
        let v = view(&row.rec);
        let mut cached = Vec::new();
        row.write_json(&ws.derived, &view, &mut cached).unwrap();
        let fresh = serde_json::to_vec(&v).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&cached),
            String::from_utf8_lossy(&fresh),
            "{entity} {} served stale JSON",
            k.to_string()
        );
        assert!(row.rendered.is_filled());
        out.insert(
            format!("{entity} {}", k.to_string()),
            String::from_utf8(fresh).unwrap(),
        );
    }
}

/// Every visible record of every entity, through the cache and checked.
fn render_all(ws: &WorkspaceState) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    table(ws, &mut out, "candidates", &ws.candidates, |r| {
        View::new(ws, r)
    });
    table(ws, &mut out, "applications", &ws.applications, |r| {
        ApplicationView(View::new(ws, r))
    });
    table(ws, &mut out, "contacts", &ws.contacts, |r| View::new(ws, r));
    table(ws, &mut out, "companies", &ws.companies, |r| {
        View::new(ws, r)
    });
    table(ws, &mut out, "jobs", &ws.jobs, |r| View::new(ws, r));
    table(ws, &mut out, "notes", &ws.notes, |r| View::new(ws, r));
    table(ws, &mut out, "tasks", &ws.tasks, |r| View::new(ws, r));
    table(ws, &mut out, "attachments", &ws.attachments, |r| {
        View::new(ws, r)
    });
    table(ws, &mut out, "users", &ws.users, |r| View::new(ws, r));
    out
}

/// Applies `edit` to a copy of `before` (sharing its rows and caches) and checks
/// that both states still render exactly, that `changed` records show something new
/// and that nothing else does.
fn step(
    before: &WorkspaceState,
    changed: &[&str],
    edit: impl FnOnce(&mut WorkspaceState),
) -> WorkspaceState {
    let old = render_all(before);
    let mut next = before.clone();
    edit(&mut next);
    let new = render_all(&next);
    // The older state, read again after the newer one replaced shared caches.
    assert_eq!(render_all(before), old);
    assert_eq!(render_all(&next), new);
    let differ: Vec<&String> = new
        .iter()
        .filter(|(k, v)| old.get(*k) != Some(*v))
        .map(|(k, _)| k)
        .chain(old.keys().filter(|k| !new.contains_key(*k)))
        .collect();
    for c in changed {
        assert!(
            differ.iter().any(|d| d.as_str() == *c),
            "{c} should have changed; changed: {differ:?}"
        );
    }
    next
}

#[test]
fn cached_json_follows_every_record_a_view_reads() {
    let s0 = fixture();
    let stamp = Stamp::parse_rfc3339("2026-11-01T10:00:00.000Z").unwrap();
    // A stage renamed: the candidate row at it and its application.
    let s1 = step(
        &s0,
        &[
            &format!("candidates {STAGED_ROW}"),
            &format!("applications {STAGED_ROW}"),
        ],
        |ws| {
            let mut st = (**ws.stages.get(&id(STAGE)).unwrap()).clone();
            st.name = Some("Final interview".into());
            ws.put(Record::Stage(st));
        },
    );
    // The job's recruiter replaced: the row's owning recruiter follows.
    let s2 = step(&s1, &[&format!("candidates {STAGED_ROW}")], |ws| {
        let mut j = (**ws.jobs.get(&id(JOB)).unwrap()).clone();
        j.assigned_recruiter_id = Some(id(OWNER));
        j.updated_at = stamp;
        ws.put(Record::Job(j));
    });
    // That recruiter no longer active: no owning recruiter.
    let s3 = step(&s2, &[&format!("candidates {STAGED_ROW}")], |ws| {
        let mut u = (**ws.users.get(&id(OWNER)).unwrap()).clone();
        u.status = UserStatus::Invited;
        u.updated_at = stamp;
        ws.put(Record::User(u));
    });
    // A company renamed: its contact's and its job's `company`.
    let s4 = step(
        &s3,
        &[&format!("contacts {CONTACT}"), &format!("jobs {JOB}")],
        |ws| {
            let mut c = (**ws.companies.get(&id(COMPANY)).unwrap()).clone();
            c.name = Some("Fabrikam Group".into());
            c.updated_at = stamp;
            ws.put(Record::Company(c));
        },
    );
    // A contact note without its own company takes the contact's, which moves.
    let note = id("00000000-0000-4000-8000-000000000001");
    let s5 = step(&s4, &[&format!("notes {note}")], |ws| {
        let mut n = (**ws.notes.get(&id(CONTACT_NOTE)).unwrap()).clone();
        n.id = note;
        n.company_id = None;
        n.is_private = false;
        ws.put(Record::Note(n));
    });
    let other_company = id("00000000-0000-4000-8000-000000000002");
    let s6 = step(&s5, &[&format!("notes {note}")], |ws| {
        let mut co = (**ws.companies.get(&id(COMPANY)).unwrap()).clone();
        co.id = other_company;
        ws.put(Record::Company(co));
        let mut c = ws.contacts.get(&id(CONTACT)).unwrap().raw.clone();
        c.company_id = other_company;
        c.updated_at = stamp;
        ws.put(Record::Contact(c));
    });
    // A cv takes its candidate row's timestamps.
    let s7 = step(&s6, &[&format!("attachments {CV}")], |ws| {
        let mut c = ws.candidates.get(&id(CV_ROW)).unwrap().raw();
        c.job_title = Some("Staff Engineer".into());
        c.updated_at = stamp;
        ws.put(Record::Candidate(Box::new(c)));
    });
    let s8 = step(&s7, &[&format!("attachments {CV}")], |ws| {
        assert!(ws.delete(RecordKind::Candidate, CV_ROW));
    });
    // A deleted company: its job has no `company` name any more.
    step(&s8, &[&format!("jobs {JOB}")], |ws| {
        assert!(ws.delete(RecordKind::Company, COMPANY));
    });
}

#[test]
fn a_rendering_is_reused_only_under_the_same_inputs() {
    let cache = RenderCache::default();
    let render = |json: &'static [u8]| {
        move |out: &mut Vec<u8>| -> Result<Reads, ()> {
            out.extend_from_slice(json);
            Ok(Reads::USERS.and(Reads::JOBS))
        }
    };
    let mut d = DerivedInputs::default();
    let mut out = b"[".to_vec();
    cache.write(&d, &mut out, render(b"1")).unwrap();
    cache
        .write(&d, &mut out, |_| -> Result<Reads, ()> {
            panic!("rendered again under the same inputs")
        })
        .unwrap();
    // A table the rendering did not read moves: still the same rendering.
    d.stages += 1;
    cache.write(&d, &mut out, render(b"2")).unwrap();
    d.jobs += 1;
    cache.write(&d, &mut out, render(b"3")).unwrap();
    cache.write(&d, &mut out, render(b"4")).unwrap();
    assert_eq!(out, b"[11133");
    // A failed rendering leaves the cache as it was.
    d.users += 1;
    assert_eq!(cache.write(&d, &mut out, |_| Err(())), Err(()));
    d.users -= 1;
    cache.write(&d, &mut out, render(b"5")).unwrap();
    assert_eq!(out, b"[111333");
}
