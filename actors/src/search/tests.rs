//! The indexes against a brute-force scan of the same records: numbers in many formats,
//! any sequence of upserts and deletes, with compactions and background rebuilds
//! interleaved.

use super::results::{search_email, search_phone, Confidence, Strategy as Pass};
use crate::model::*;
use crate::phone::normalise_phone;
use crate::state::WorkspaceState;
use proptest::prelude::*;
use serde_json::json;
use std::collections::BTreeSet;
use uuid::Uuid;

const REGION: &str = "GB";

fn id(kind: u8, n: usize, row: usize) -> Uuid {
    let mut b = [0u8; 16];
    b[0] = kind;
    b[1] = n as u8;
    b[2] = row as u8;
    Uuid::from_bytes(b)
}

fn person(n: usize) -> Uuid {
    id(1, n, 0)
}
fn row(n: usize, r: usize) -> Uuid {
    id(2, n, r)
}
fn contact(n: usize) -> Uuid {
    id(3, n, 0)
}
fn company(n: usize) -> Uuid {
    id(4, n, 0)
}

fn state() -> WorkspaceState {
    let ws: Workspace = serde_json::from_value(json!({
        "id": Uuid::from_bytes([9; 16]), "name": "Test", "default_region": REGION
    }))
    .unwrap();
    let mut s = WorkspaceState::new(ws);
    for k in 0..3 {
        s.put(company_rec(k, None));
    }
    s
}

fn stamp() -> &'static str {
    "2026-09-01T10:00:00.000Z"
}

fn company_rec(k: usize, phone: Option<String>) -> Record {
    Record::Company(
        serde_json::from_value(json!({
            "id": company(k), "name": format!("Company {k}"), "phone": phone,
            "created_at": stamp(), "updated_at": stamp()
        }))
        .unwrap(),
    )
}

fn contact_rec(
    n: usize,
    phone: Option<String>,
    mobile: Option<String>,
    email: Option<String>,
) -> Record {
    Record::Contact(
        serde_json::from_value(json!({
            "id": contact(n), "name": format!("Contact {n}"), "company_id": company(n % 3),
            "phone": phone, "mobile": mobile, "email": email,
            "created_at": stamp(), "updated_at": stamp()
        }))
        .unwrap(),
    )
}

fn candidate_rec(
    n: usize,
    r: usize,
    phone: Option<String>,
    mobile: Option<String>,
    email: Option<String>,
) -> Record {
    candidate_rec_of(n, r, n, (phone, mobile, email))
}

/// Row `r` first made for person `n`, now of person `of`.
fn candidate_rec_of(n: usize, r: usize, of: usize, numbers: Numbers) -> Record {
    let (phone, mobile, email) = numbers;
    let job = (r > 0).then(|| id(5, r, 0));
    Record::Candidate(Box::new(
        serde_json::from_value(json!({
            "id": row(n, r), "person_id": person(of), "job_id": job,
            "name": format!("Person {n}"), "phone": phone, "mobile": mobile, "email": email,
            "created_at": stamp(), "updated_at": stamp()
        }))
        .unwrap(),
    ))
}

/// Numbers over a two-digit alphabet in many written forms, so that nine- and
/// eight-digit suffixes collide often.
fn number() -> impl Strategy<Value = String> {
    let core = proptest::collection::vec(prop_oneof![Just('1'), Just('2')], 6..11);
    let prefix = prop_oneof![
        Just(""),
        Just("0"),
        Just("07"),
        Just("+44 7"),
        Just("+1 "),
        Just("44"),
    ];
    let style = 0u8..5;
    (prefix, core, style).prop_map(|(p, core, style)| {
        let digits: String = core.into_iter().collect();
        let body = match style {
            0 => digits,
            1 => format!("{} {}", &digits[..3], &digits[3..]),
            2 => format!("({})-{}", &digits[..2], &digits[2..]),
            3 => format!("{digits} ext. 12"),
            _ => format!("{}.{}#7", &digits[..4], &digits[4..]),
        };
        format!("{p}{body}")
    })
}

fn email() -> impl Strategy<Value = String> {
    (0u8..4, any::<bool>()).prop_map(|(n, upper)| {
        let e = format!("person{n}+cv@example.com");
        if upper {
            e.to_uppercase()
        } else {
            e
        }
    })
}

/// A row's phone, mobile and e-mail.
type Numbers = (Option<String>, Option<String>, Option<String>);

#[derive(Clone, Debug)]
enum Op {
    Row(usize, usize, Option<String>, Option<String>, Option<String>),
    /// The row written again with the numbers it has (as a derived change touches it).
    Again(usize, usize),
    /// The row, with the numbers it has, moved to another person.
    Moved(usize, usize, usize),
    DeleteRow(usize, usize),
    Contact(usize, Option<String>, Option<String>, Option<String>),
    DeleteContact(usize),
    Company(usize, Option<String>),
    DeleteCompany(usize),
    Compact,
    FullRebuild,
    /// Snapshot for a background rebuild, installed after the next `k` ops.
    StartRebuild(usize),
}

fn op() -> impl Strategy<Value = Op> {
    let n = || proptest::option::of(number());
    let e = || proptest::option::of(email());
    prop_oneof![
        6 => (0usize..4, 0usize..3, n(), n(), e())
            .prop_map(|(p, r, a, b, c)| Op::Row(p, r, a, b, c)),
        2 => (0usize..4, 0usize..3).prop_map(|(p, r)| Op::DeleteRow(p, r)),
        2 => (0usize..4, 0usize..3).prop_map(|(p, r)| Op::Again(p, r)),
        1 => (0usize..4, 0usize..3, 0usize..4).prop_map(|(p, r, m)| Op::Moved(p, r, m)),
        3 => (0usize..3, n(), n(), e()).prop_map(|(c, a, b, e)| Op::Contact(c, a, b, e)),
        1 => (0usize..3).prop_map(Op::DeleteContact),
        2 => (0usize..3, n()).prop_map(|(k, p)| Op::Company(k, p)),
        1 => (0usize..3).prop_map(Op::DeleteCompany),
        1 => Just(Op::Compact),
        1 => Just(Op::FullRebuild),
        1 => (0usize..4).prop_map(Op::StartRebuild),
    ]
}

fn digits(s: &str) -> String {
    s.chars().filter(char::is_ascii_digit).collect()
}

type Found = (
    Option<Pass>,
    Option<String>,
    BTreeSet<Uuid>,
    BTreeSet<Uuid>,
    BTreeSet<Uuid>,
);

/// The spec's rules applied by scanning every record.
fn brute_phone(s: &WorkspaceState, query: &str) -> Found {
    let d = digits(query);
    if d.len() < 8 {
        return (
            None,
            None,
            BTreeSet::new(),
            BTreeSet::new(),
            BTreeSet::new(),
        );
    }
    let region = crate::phone::parse_region(REGION);
    let scan = |suffix: &str| {
        let hit = |n: Option<&str>| n.is_some_and(|n| digits(n).ends_with(suffix));
        let persons: BTreeSet<Uuid> = s
            .candidates
            .iter()
            .filter(|(_, c)| hit(c.phone()) || hit(c.mobile()))
            .map(|(_, c)| c.person_id())
            .collect();
        let contacts: BTreeSet<Uuid> = s
            .contacts
            .iter()
            .filter(|(_, c)| hit(c.phone.as_deref()) || hit(c.mobile.as_deref()))
            .map(|(id, _)| *id)
            .collect();
        let companies: BTreeSet<Uuid> = s
            .companies
            .iter()
            .filter(|(_, c)| {
                hit(c
                    .phone
                    .as_deref()
                    .and_then(|p| normalise_phone(p, region))
                    .as_deref())
            })
            .map(|(id, _)| *id)
            .collect();
        (persons, contacts, companies)
    };
    if d.len() >= 9 {
        let nine = &d[d.len() - 9..];
        let (p, c, k) = scan(nine);
        if !p.is_empty() || !c.is_empty() {
            return (Some(Pass::Last9), Some(nine.to_string()), p, c, k);
        }
    }
    let eight = &d[d.len() - 8..];
    let (p, c, k) = scan(eight);
    (Some(Pass::Last8Fallback), Some(eight.to_string()), p, c, k)
}

fn indexed_phone(s: &WorkspaceState, query: &str) -> Found {
    let r = search_phone(s, query, 100);
    if r.confidence == Confidence::Invalid {
        assert!(r.match_key.is_none());
        return (
            None,
            None,
            BTreeSet::new(),
            BTreeSet::new(),
            BTreeSet::new(),
        );
    }
    let people = r.hits.persons.len() + r.hits.contacts.len();
    let want = match people {
        0 => Confidence::None,
        1 => Confidence::Exact,
        _ => Confidence::Ambiguous,
    };
    assert_eq!(r.confidence, want);
    (
        Some(r.strategy),
        r.match_key.map(|k| String::from_utf8(k.to_vec()).unwrap()),
        r.hits.persons.iter().map(|p| p.person_id).collect(),
        r.hits.contacts.iter().map(|c| c.raw.id).collect(),
        r.hits.companies.iter().map(|c| c.id).collect(),
    )
}

fn brute_email(s: &WorkspaceState, query: &str) -> (BTreeSet<Uuid>, BTreeSet<Uuid>) {
    let q = query.trim().to_lowercase();
    let hit = |e: Option<&str>| e.is_some_and(|e| !q.is_empty() && e.trim().to_lowercase() == q);
    let persons = s
        .candidates
        .iter()
        .filter(|(_, c)| hit(c.email()))
        .map(|(_, c)| c.person_id())
        .collect();
    let contacts = s
        .contacts
        .iter()
        .filter(|(_, c)| hit(c.raw.email.as_deref()))
        .map(|(id, _)| *id)
        .collect();
    (persons, contacts)
}

fn check(s: &WorkspaceState, extra: &[String]) {
    let mut queries: Vec<String> = extra.to_vec();
    for (_, c) in s.candidates.iter() {
        queries.extend(c.phone_as_entered().map(str::to_string));
        queries.extend(c.mobile_as_entered().map(str::to_string));
    }
    for (_, c) in s.contacts.iter() {
        queries.extend(c.raw.phone.clone());
    }
    for (_, c) in s.companies.iter() {
        queries.extend(c.phone.clone());
    }
    for q in &queries {
        assert_eq!(indexed_phone(s, q), brute_phone(s, q), "phone query {q:?}");
    }
    for n in 0..5 {
        for q in [
            format!("person{n}+cv@example.com"),
            format!("PERSON{n}+CV@EXAMPLE.COM "),
        ] {
            let r = search_email(s, &q, 100);
            let got = (
                r.hits.persons.iter().map(|p| p.person_id).collect(),
                r.hits.contacts.iter().map(|c| c.raw.id).collect(),
            );
            assert_eq!(got, brute_email(s, &q), "email query {q:?}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn indexes_answer_like_a_scan(
        ops in proptest::collection::vec(op(), 1..40),
        extra in proptest::collection::vec(number(), 0..6),
    ) {
        let mut s = state();
        let mut pending: Option<(super::SearchRebuild, usize)> = None;
        // Each row's numbers and person, as last written.
        let mut rows: std::collections::HashMap<(usize, usize), (Numbers, usize)> =
            Default::default();
        for op in ops {
            match op {
                Op::Row(p, r, a, b, e) => {
                    rows.insert((p, r), ((a.clone(), b.clone(), e.clone()), p));
                    s.put(candidate_rec(p, r, a, b, e));
                }
                Op::Again(p, r) => {
                    if let Some((numbers, of)) = rows.get(&(p, r)) {
                        s.put(candidate_rec_of(p, r, *of, numbers.clone()));
                    }
                }
                Op::Moved(p, r, m) => {
                    if let Some((numbers, of)) = rows.get_mut(&(p, r)) {
                        *of = m;
                        s.put(candidate_rec_of(p, r, m, numbers.clone()));
                    }
                }
                Op::DeleteRow(p, r) => {
                    rows.remove(&(p, r));
                    s.delete(RecordKind::Candidate, &row(p, r).to_string());
                }
                Op::Contact(c, a, b, e) => s.put(contact_rec(c, a, b, e)),
                Op::DeleteContact(c) => {
                    s.delete(RecordKind::Contact, &contact(c).to_string());
                }
                Op::Company(k, p) => s.put(company_rec(k, p)),
                Op::DeleteCompany(k) => {
                    s.delete(RecordKind::Company, &company(k).to_string());
                }
                Op::Compact => {
                    s.search.phone.compact();
                    s.search.email.compact();
                }
                Op::FullRebuild => s.rebuild_search(),
                Op::StartRebuild(after) => {
                    if pending.is_none() {
                        pending = Some((
                            super::SearchRebuild {
                                phone: Some(s.search.phone.rebuild_job()),
                                email: Some(s.search.email.rebuild_job()),
                            },
                            after,
                        ));
                    }
                }
            }
            if let Some((_, left)) = &mut pending {
                if *left == 0 {
                    let (job, _) = pending.take().unwrap();
                    s.search.install(job.run());
                } else {
                    *left -= 1;
                }
            }
            check(&s, &extra);
        }
        // A fresh build from the same records answers the same.
        let mut fresh = s.clone();
        fresh.rebuild_search();
        check(&fresh, &extra);
    }
}

#[test]
fn a_region_change_renormalises_and_reindexes() {
    let mut s = state();
    s.put(candidate_rec(
        0,
        0,
        Some("020 7946 0000".into()),
        None,
        None,
    ));
    // With GB, "020 7946 0000" is +44 20 7946 0000; its last nine digits are 207946000.
    assert_eq!(
        search_phone(&s, "+44 20 7946 0000", 100).hits.persons.len(),
        1
    );
    let ws: Workspace = serde_json::from_value(json!({
        "id": Uuid::from_bytes([9; 16]), "name": "Test", "default_region": "US"
    }))
    .unwrap();
    s.set_workspace(ws);
    assert_eq!(s.search.phone.delta_len(), 0, "rebuilt whole");
    let r = search_phone(&s, "02079460000", 100);
    assert_eq!(r.hits.persons.len(), 1);
}
