//! Written JSON against serde's, for every record, across every dependency a view has.
use super::*;
use crate::model::*;
use crate::model::{ApplicationView, View};
use crate::snapshot::{parse_slice, plan_import, NoKeys};
use crate::state::WorkspaceState;
use crate::time::Stamp;
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

/// The top-level member names of a JSON object, in the order written.
fn member_names(json: &[u8]) -> Vec<String> {
    let (mut depth, mut names, mut at_key) = (0usize, Vec::new(), false);
    let mut i = 0;
    while i < json.len() {
        match json[i] {
            b'{' | b'[' => {
                depth += 1;
                at_key = json[i] == b'{' && depth == 1;
            }
            b'}' | b']' => depth -= 1,
            b',' if depth == 1 => at_key = true,
            b'"' => {
                let start = i + 1;
                i += 1;
                while json[i] != b'"' {
                    i += if json[i] == b'\\' { 2 } else { 1 };
                }
                if at_key {
                    names.push(String::from_utf8(json[start..i].to_vec()).unwrap());
                    at_key = false;
                }
            }
            _ => {}
        }
        i += 1;
    }
    names
}

/// A written record holds its kind's declared members (`ApiField`), in their order,
/// each one written on every record unless declared `sometimes`; so do its objects.
fn holds_declared(json: &[u8], fields: &[ApiField], what: &str) {
    let names = member_names(json);
    let mut declared = fields
        .iter()
        .filter(|f| f.always || names.iter().any(|n| n == f.name));
    assert!(
        names
            .iter()
            .map(String::as_str)
            .eq(declared.by_ref().map(|f| f.name)),
        "{what}: wrote {names:?}, declared {:?}",
        fields.iter().map(|f| f.name).collect::<Vec<_>>()
    );
    let members: BTreeMap<String, &serde_json::value::RawValue> =
        serde_json::from_slice(json).unwrap();
    for f in fields {
        if let (Shape::NullableObject(inner), Some(o)) = (f.shape, members.get(f.name)) {
            if o.get() != "null" {
                holds_declared(o.get().as_bytes(), inner, what);
            }
        }
    }
}

/// One table's visible rows, each written directly, checked against serde's
/// serialisation of the same view and against the members its kind declares.
fn table<'s, K, V: ?Sized, T>(
    out: &mut BTreeMap<String, String>,
    (entity, fields): (&str, &[ApiField]),
    t: crate::table::TableRef<'s, K, V>,
    view: impl Fn(&'s V) -> T,
) where
    K: std::hash::Hash + Eq + Ord + Clone + crate::state::MinKey + ToString + 'static,
    T: Rendered,
{
    for (_, k, row) in t.rows_from(None, None) {
        let mut written = Vec::new();
        row.write_json(&view, &mut written).unwrap();
        let serialised = serde_json::to_vec(&view(&row.rec)).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&written),
            String::from_utf8_lossy(&serialised),
            "{entity} {}",
            k.to_string()
        );
        holds_declared(&written, fields, &format!("{entity} {}", k.to_string()));
        out.insert(
            format!("{entity} {}", k.to_string()),
            String::from_utf8(written).unwrap(),
        );
    }
}

/// Every visible record of every entity, written and checked.
pub(crate) fn render_all(ws: &WorkspaceState) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    table(
        &mut out,
        ("candidates", candidate::API_FIELDS),
        ws.candidates.all(),
        |r| View::new(ws, r),
    );
    table(
        &mut out,
        ("applications", candidate::APPLICATION_API_FIELDS),
        ws.applications(),
        |r| ApplicationView(View::new(ws, r)),
    );
    table(
        &mut out,
        ("contacts", contact::API_FIELDS),
        ws.contacts.all(),
        |r| View::new(ws, r),
    );
    table(
        &mut out,
        ("companies", company::API_FIELDS),
        ws.companies.all(),
        |r| View::new(ws, r),
    );
    table(&mut out, ("jobs", job::API_FIELDS), ws.jobs.all(), |r| {
        View::new(ws, r)
    });
    table(&mut out, ("notes", note::API_FIELDS), ws.notes.all(), |r| {
        View::new(ws, r)
    });
    table(&mut out, ("tasks", task::API_FIELDS), ws.tasks.all(), |r| {
        View::new(ws, r)
    });
    table(
        &mut out,
        ("attachments", attachment::API_FIELDS),
        ws.attachments.all(),
        |r| View::new(ws, r),
    );
    table(&mut out, ("users", user::API_FIELDS), ws.users.all(), |r| {
        View::new(ws, r)
    });
    out
}

/// Applies `edit` to a copy of `before` (sharing its rows) and checks that both states
/// still render exactly and that `changed` records show something new.
fn step(
    before: &WorkspaceState,
    changed: &[&str],
    edit: impl FnOnce(&mut WorkspaceState),
) -> WorkspaceState {
    let old = render_all(before);
    let mut next = before.clone();
    edit(&mut next);
    let new = render_all(&next);
    // The older state, read again after the newer one was built beside it.
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
fn written_json_follows_every_record_a_view_reads() {
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
        let mut n = ws.notes.get(&id(CONTACT_NOTE)).unwrap().raw();
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

/// Texts JSON must escape (quotes, backslashes, controls), non-ASCII, numbers and the
/// optional parts of every kind, written as serde writes them.
#[test]
fn written_json_escapes_as_serde_does() {
    let mut ws = fixture();
    let odd = "Zoë \"Z\" O'Neil\\\n\t\u{1}\u{7f} ünïcødé ✓";
    let stamp = Stamp::parse_rfc3339("2026-11-02T10:00:00.000Z").unwrap();
    let mut c = ws.candidates.get(&id(CV_ROW)).unwrap().raw();
    c.name = Some(odd.into());
    c.email = Some(String::new());
    c.location = Some(odd.into());
    c.salary = Some(CandidateSalary {
        current_amount: Some(serde_json::from_str("55000.5").unwrap()),
        current_currency: Some(odd.into()),
        current_text: None,
        expected_amount: Some(serde_json::from_str("-12").unwrap()),
        expected_currency: None,
        expected_text: Some(String::new()),
    });
    c.consent = Some(Consent {
        status: Some("given".into()),
        given_at: Some(stamp),
        requested_at: None,
        expires_at: Some(stamp),
    });
    c.updated_at = stamp;
    ws.put(Record::Candidate(Box::new(c)));
    let mut n = ws.notes.get(&id(CONTACT_NOTE)).unwrap().raw();
    n.title = Some(odd.into());
    n.body_html = Some(format!("<p>{odd}</p>"));
    n.is_private = false;
    ws.put(Record::Note(n));
    let mut j = (**ws.jobs.get(&id(JOB)).unwrap()).clone();
    j.title = Some(odd.into());
    j.salary = Some(JobSalary {
        amount: Some(serde_json::from_str("1e3").unwrap()),
        currency: Some("GBP".into()),
        kind: Some(odd.into()),
    });
    ws.put(Record::Job(j));
    let all = render_all(&ws);
    assert!(all.values().filter(|v| v.contains("\\\"Z\\\"")).count() >= 3);
}
