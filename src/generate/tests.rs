//! The generator's promises: determinism, shapes, proportions, every rule of the format.

use super::*;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashSet};

fn bytes(people: usize, seed: u64) -> Vec<u8> {
    snapshot_bytes(&GenerateOptions::new(people, seed))
}

fn doc(people: usize, seed: u64) -> Value {
    serde_json::from_slice(&bytes(people, seed)).expect("output is JSON")
}

fn arr<'a>(d: &'a Value, key: &str) -> &'a [Value] {
    d[key].as_array().map(Vec::as_slice).unwrap_or(&[])
}

fn s<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn ids(d: &Value, key: &str) -> HashSet<String> {
    arr(d, key)
        .iter()
        .map(|r| s(r, "id").expect("id").to_string())
        .collect()
}

fn ratio(part: usize, whole: usize) -> f64 {
    part as f64 / whole.max(1) as f64
}

#[test]
fn same_seed_same_bytes_other_seed_other_bytes() {
    let a = bytes(400, 7);
    assert_eq!(a, bytes(400, 7));
    assert_ne!(a, bytes(400, 8));
    // Independent of how the bytes are chunked on the way out.
    let mut unbuffered = Vec::new();
    write_snapshot(
        &GenerateOptions::new(400, 7),
        &mut unbuffered,
        &mut |_, _| {},
    )
    .unwrap();
    assert_eq!(a, unbuffered);
}

#[test]
fn cli_writes_the_same_bytes_to_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snap.json");
    let opts = GenerateOptions::new(120, 5);
    run_cli(&opts, Some(&path)).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), snapshot_bytes(&opts));
    let missing = dir.path().join("no/such/dir/snap.json");
    assert!(run_cli(&opts, Some(&missing)).is_err());
}

#[test]
fn time_constants_are_the_documented_dates() {
    let at = |s: &str| Stamp::parse_rfc3339(s).unwrap().millis();
    assert_eq!(START, at("2025-06-01T00:00:00Z"));
    assert_eq!(END, at("2026-11-01T00:00:00Z"));
    assert_eq!(TRACK, at("2026-08-13T00:00:00Z"));
}

#[test]
fn top_level_shape() {
    let bytes = bytes(50, 1);
    assert!(bytes.ends_with(b"}\n"));
    // Compact: the only newline is the final one.
    assert_eq!(bytes.iter().filter(|b| **b == b'\n').count(), 1);
    let d: Value = serde_json::from_slice(&bytes).unwrap();
    let keys: BTreeSet<&str> = d.as_object().unwrap().keys().map(String::as_str).collect();
    let expected: BTreeSet<&str> = [
        "format",
        "workspace",
        "users",
        "pipeline_stages",
        "companies",
        "contacts",
        "jobs",
        "candidates",
        "notes",
        "tasks",
        "attachments",
    ]
    .into_iter()
    .collect();
    assert_eq!(keys, expected);
    assert_eq!(d["format"], "recruit-snapshot/1");
    assert_eq!(d["workspace"]["default_region"], "GB");
    assert!(Uuid::parse_str(s(&d["workspace"], "id").unwrap()).is_ok());
    assert!(s(&d["workspace"], "name").is_some());
}

#[test]
fn zero_people_is_still_a_valid_workspace() {
    let d = doc(0, 3);
    assert!(arr(&d, "candidates").is_empty());
    assert!(arr(&d, "users").len() >= 5);
    assert!(!arr(&d, "companies").is_empty());
    check_references(&d);
}

/// The domain's own raw types reject unknown fields and wrong types, so a round
/// trip through them checks field names and value formats.
#[test]
fn records_deserialise_into_the_domain_types() {
    use actors::model;
    fn each<T: serde::de::DeserializeOwned>(d: &Value, key: &str) {
        for (i, r) in arr(d, key).iter().enumerate() {
            if let Err(e) = serde_json::from_value::<T>(r.clone()) {
                panic!("{key}[{i}]: {e}\n{r}");
            }
        }
    }
    let d = doc(600, 11);
    serde_json::from_value::<model::Workspace>(d["workspace"].clone()).unwrap();
    each::<model::User>(&d, "users");
    each::<model::PipelineStage>(&d, "pipeline_stages");
    each::<model::Company>(&d, "companies");
    each::<model::Contact>(&d, "contacts");
    each::<model::Job>(&d, "jobs");
    each::<model::Candidate>(&d, "candidates");
    each::<model::Note>(&d, "notes");
    each::<model::Task>(&d, "tasks");
    let allowed: BTreeSet<&str> = [
        "id",
        "parent_type",
        "parent_id",
        "filename",
        "content_type",
        "size",
        "kind",
        "storage_ref",
        "content_base64",
        "created_at",
        "updated_at",
    ]
    .into_iter()
    .collect();
    for a in arr(&d, "attachments") {
        for k in a.as_object().unwrap().keys() {
            assert!(allowed.contains(k.as_str()), "attachment field {k}");
        }
    }
}

#[test]
fn every_reference_resolves_and_rules_hold() {
    for (people, seed) in [(1, 1), (7, 2), (300, 3), (2000, 4)] {
        check_references(&doc(people, seed));
    }
}

fn check_timestamps(array: &str, r: &Value) {
    let mut created = None;
    for (k, v) in r.as_object().unwrap() {
        if !k.ends_with("_at") || v.is_null() {
            continue;
        }
        let t = v.as_str().unwrap();
        assert!(
            t.len() == 24 && t.ends_with('Z'),
            "{array}.{k} = {t} is not ms UTC"
        );
        assert!(Stamp::parse_rfc3339(t).is_some(), "{array}.{k} = {t}");
        if k == "created_at" {
            created = Some(t);
        }
    }
    let c = created.expect("created_at");
    let u = s(r, "updated_at").expect("updated_at");
    assert!(u >= c, "{array}: updated_at {u} < created_at {c}");
    if u != c {
        assert!(
            Stamp::parse_rfc3339(u).unwrap().millis() >= TRACK,
            "{array}: edit {u} before change tracking"
        );
    }
}

fn check_references(d: &Value) {
    // Unique ids per array.
    for key in [
        "users",
        "pipeline_stages",
        "companies",
        "contacts",
        "jobs",
        "candidates",
        "notes",
        "tasks",
        "attachments",
    ] {
        let all = arr(d, key);
        assert_eq!(ids(d, key).len(), all.len(), "duplicate id in {key}");
        for r in all {
            let id = s(r, "id").unwrap();
            if key == "attachments" {
                let (prefix, rest) = actors::model::split_attachment_id(id).expect(id);
                assert!(Uuid::parse_str(rest).is_ok(), "{prefix}");
            } else {
                let u = Uuid::parse_str(id).unwrap();
                assert_eq!(u.to_string(), id, "ids are lower-case");
            }
            if key != "pipeline_stages" {
                check_timestamps(key, r);
            }
        }
    }

    // Users: owner first, all statuses, unique e-mails.
    let users = arr(d, "users");
    assert_eq!(s(&users[0], "role"), Some("owner"));
    assert_eq!(s(&users[0], "status"), Some("active"));
    let status: BTreeMap<&str, &str> = users
        .iter()
        .map(|u| (s(u, "id").unwrap(), s(u, "status").unwrap()))
        .collect();
    for st in ["active", "invited", "removed"] {
        assert!(status.values().any(|v| *v == st), "no {st} user");
    }
    let emails: HashSet<String> = users
        .iter()
        .map(|u| s(u, "email").unwrap().to_lowercase())
        .collect();
    assert_eq!(emails.len(), users.len());
    let user = |v: &Value, field: &str, nullable: bool| match v.get(field).and_then(Value::as_str) {
        Some(id) => assert!(status.contains_key(id), "{field} {id} is no user"),
        None => assert!(nullable, "{field} missing"),
    };

    let stages = ids(d, "pipeline_stages");
    assert!((5..=7).contains(&stages.len()));
    let stage_types: BTreeSet<&str> = arr(d, "pipeline_stages")
        .iter()
        .map(|st| s(st, "stage_type").unwrap())
        .collect();
    for t in &stage_types {
        assert!(["applied", "screening", "interview", "offer", "placed"].contains(t));
    }

    let companies = ids(d, "companies");
    for c in arr(d, "companies") {
        user(c, "owner_id", true);
    }
    let mut mains: BTreeMap<&str, usize> = BTreeMap::new();
    let mut contact_company: BTreeMap<&str, &str> = BTreeMap::new();
    for c in arr(d, "contacts") {
        let co = s(c, "company_id").unwrap();
        assert!(companies.contains(co));
        user(c, "owner_id", true);
        contact_company.insert(s(c, "id").unwrap(), co);
        *mains.entry(co).or_default() += usize::from(c["is_main_contact"] == true);
    }
    assert_eq!(mains.len(), companies.len(), "a company without contacts");
    assert!(
        mains.values().all(|n| *n == 1),
        "one main contact per company"
    );

    let jobs = ids(d, "jobs");
    for j in arr(d, "jobs") {
        if let Some(co) = s(j, "company_id") {
            assert!(companies.contains(co));
        }
        user(j, "assigned_recruiter_id", true);
        user(j, "created_by", false);
        assert!(j["salary"]["amount"].is_number());
    }

    // Candidates: one primary row per person, equal personal attributes.
    let mut people: BTreeMap<&str, Vec<&Value>> = BTreeMap::new();
    let mut rows: BTreeMap<&str, &Value> = BTreeMap::new();
    for c in arr(d, "candidates") {
        people
            .entry(s(c, "person_id").unwrap())
            .or_default()
            .push(c);
        rows.insert(s(c, "id").unwrap(), c);
        user(c, "owner_id", true);
        match s(c, "job_id") {
            None => assert!(c["stage_id"].is_null() && c["outcome"].is_null()),
            Some(job) => {
                assert!(jobs.contains(job));
                assert!(stages.contains(s(c, "stage_id").expect("stage on job row")));
            }
        }
        match s(c, "outcome") {
            Some("rejected") => assert!(s(c, "rejected_at").is_some()),
            Some("placed") | None => assert!(c["rejected_at"].is_null()),
            Some(o) => panic!("outcome {o}"),
        }
    }
    let mut person_emails = HashSet::new();
    for (person, rs) in &people {
        let primaries = rs.iter().filter(|r| r["job_id"].is_null()).count();
        assert_eq!(primaries, 1, "person {person}");
        assert!(rs.len() <= 6);
        let distinct_jobs: HashSet<&str> = rs.iter().filter_map(|r| s(r, "job_id")).collect();
        assert_eq!(
            distinct_jobs.len(),
            rs.len() - 1,
            "a job twice for {person}"
        );
        for field in ["name", "email", "phone", "mobile", "salary", "consent"] {
            assert!(
                rs.iter().all(|r| r[field] == rs[0][field]),
                "{field} differs"
            );
        }
        if let Some(e) = s(rs[0], "email") {
            assert_eq!(e, e.to_lowercase());
            assert!(e.contains('@') && e.is_ascii());
            assert!(person_emails.insert(e.to_string()), "e-mail {e} reused");
        }
    }

    // Notes.
    let contacts = ids(d, "contacts");
    for n in arr(d, "notes") {
        let parent = s(n, "parent_id").unwrap();
        let o = n.as_object().unwrap();
        match s(n, "parent_type").unwrap() {
            "candidate" => {
                let row = rows.get(parent).expect("note on a candidate row");
                // Written where the row has a job; absent means null.
                assert_eq!(o.get("job_id").unwrap_or(&Value::Null), &row["job_id"]);
                assert!(!o.contains_key("company_id"));
            }
            "contact" => {
                assert!(contacts.contains(parent));
                assert_eq!(s(n, "company_id"), contact_company.get(parent).copied());
                assert!(!o.contains_key("job_id"));
            }
            "company" => assert!(companies.contains(parent)),
            "job" => assert!(jobs.contains(parent)),
            t => panic!("note parent_type {t}"),
        }
        if s(n, "parent_type") != Some("candidate") {
            assert!(!o.contains_key("job_id"));
        }
        user(n, "author_id", false);
        assert_ne!(status[s(n, "author_id").unwrap()], "invited");
    }

    // Tasks.
    for t in arr(d, "tasks") {
        let parent = s(t, "parent_id").unwrap();
        match s(t, "parent_type").unwrap() {
            "candidate" => assert!(rows.contains_key(parent)),
            "contact" => assert!(contacts.contains(parent)),
            "company" => assert!(companies.contains(parent)),
            other => panic!("task parent_type {other}"),
        }
        user(t, "owner_id", true);
        match s(t, "status").unwrap() {
            "completed" => assert!(s(t, "completed_at").is_some()),
            "open" | "cancelled" => assert!(t["completed_at"].is_null()),
            other => panic!("task status {other}"),
        }
        if let Some(due) = s(t, "due_date") {
            assert!(actors::time::Date::parse(due).is_some(), "{due}");
        }
        if let Some(row) = s(t, "placement_row_id") {
            assert_eq!(s(rows[row], "outcome"), Some("placed"));
        }
    }

    // Attachments.
    let slug = slug(s(&d["workspace"], "name").unwrap());
    for a in arr(d, "attachments") {
        let id = s(a, "id").unwrap();
        let parent = s(a, "parent_id").unwrap();
        let (prefix, _) = id.split_once(':').unwrap();
        let kind = s(a, "kind").unwrap();
        let expected_kind = match prefix {
            "cv" => "cv",
            "cvdoc" => "generated_cv",
            _ => "document",
        };
        assert_eq!(kind, expected_kind, "{id}");
        match s(a, "parent_type").unwrap() {
            "candidate" => {
                let row = rows.get(parent).expect("attachment on a candidate row");
                assert_ne!(prefix, "clientfile");
                if kind == "cv" {
                    assert_eq!(a["created_at"], row["created_at"]);
                    assert_eq!(a["updated_at"], row["updated_at"]);
                }
            }
            "company" => {
                assert!(companies.contains(parent));
                assert_eq!(prefix, "clientfile");
            }
            other => panic!("attachment parent_type {other}"),
        }
        let storage = s(a, "storage_ref").unwrap();
        assert!(storage.contains(&format!("/{slug}/")), "{storage}");
        assert!(!storage.contains(' ') && !storage.contains("://"));
        if let Some(b64) = s(a, "content_base64") {
            let raw = base64::engine::general_purpose::STANDARD
                .decode(b64)
                .unwrap();
            assert!(!raw.is_empty() && raw.len() <= 400, "{} bytes", raw.len());
            assert!(a.get("size").is_none(), "size given with content");
        }
    }
}

/// Every number a person, contact or company carries, normalised the way the
/// server does it, mapped to its holders.
/// Normalised number -> its holders; and every (as typed, normalised) pair.
type Holders = (BTreeMap<String, BTreeSet<String>>, Vec<(String, String)>);

fn holders(d: &Value) -> Holders {
    let region = actors::phone::parse_region("GB");
    let mut by_number: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut raw = Vec::new();
    let mut add = |holder: &str, v: &Value, field: &str| {
        if let Some(p) = s(v, field) {
            let n = actors::phone::normalise_phone(p, region).unwrap();
            raw.push((p.to_string(), n.clone()));
            by_number.entry(n).or_default().insert(holder.to_string());
        }
    };
    for c in arr(d, "candidates") {
        let person = s(c, "person_id").unwrap();
        add(person, c, "phone");
        add(person, c, "mobile");
    }
    for c in arr(d, "contacts") {
        add(s(c, "id").unwrap(), c, "phone");
        add(s(c, "id").unwrap(), c, "mobile");
    }
    for c in arr(d, "companies") {
        add(s(c, "id").unwrap(), c, "phone");
    }
    (by_number, raw)
}

#[test]
fn about_five_percent_of_people_share_a_number() {
    let d = doc(2000, 5);
    let (by_number, raw) = holders(&d);
    let mut people: BTreeSet<&str> = arr(&d, "candidates")
        .iter()
        .map(|c| s(c, "person_id").unwrap())
        .collect();
    people.extend(arr(&d, "contacts").iter().map(|c| s(c, "id").unwrap()));
    let sharing: BTreeSet<&String> = by_number
        .values()
        .filter(|h| h.len() > 1)
        .flatten()
        .filter(|h| people.contains(h.as_str()))
        .collect();
    let share = ratio(sharing.len(), people.len());
    assert!((0.035..=0.07).contains(&share), "{share}");

    // Numbers are typed many ways, and still normalise to E.164.
    let e164 = raw.iter().filter(|(_, n)| n.starts_with('+')).count();
    let bad: Vec<&String> = raw
        .iter()
        .filter(|(_, n)| !n.starts_with('+'))
        .map(|(p, _)| p)
        .take(10)
        .collect();
    assert!(ratio(e164, raw.len()) > 0.99, "not E.164: {bad:?}");
    let shapes: BTreeSet<String> = raw
        .iter()
        .map(|(p, _)| {
            p.chars()
                .map(|c| if c.is_ascii_digit() { '9' } else { c })
                .collect()
        })
        .collect();
    assert!(shapes.len() >= 25, "{} shapes", shapes.len());
    for sample in [
        "+44 7",
        "(0)7",
        "+1 (",
        "+1 ",
        "+33 ",
        "+44 (0)20 ",
        " ext. ",
        " x",
        "#",
    ] {
        assert!(
            raw.iter().any(|(p, _)| p.contains(sample)),
            "no number like {sample}"
        );
    }
    let people_rows: Vec<&Value> = arr(&d, "candidates")
        .iter()
        .filter(|c| c["job_id"].is_null())
        .collect();
    let no_mobile = people_rows.iter().filter(|c| c["mobile"].is_null()).count();
    assert!((0.3..=0.8).contains(&ratio(no_mobile, people_rows.len())));
}

#[test]
fn realistic_proportions() {
    let opts = GenerateOptions::new(3000, 9);
    let mut out = Vec::new();
    let mut calls = Vec::new();
    let stats = write_snapshot(&opts, &mut out, &mut |done, total| {
        calls.push((done, total))
    })
    .unwrap();
    assert!(
        calls.windows(2).all(|w| w[0].0 <= w[1].0),
        "progress goes back"
    );
    assert_eq!(calls.last(), Some(&(3000, 3000)));
    let d: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(stats.candidate_rows, arr(&d, "candidates").len());
    assert_eq!(stats.notes, arr(&d, "notes").len());
    assert_eq!(stats.tasks, arr(&d, "tasks").len());
    assert_eq!(stats.attachments, arr(&d, "attachments").len());
    assert_eq!(stats.users, arr(&d, "users").len());
    assert_eq!(stats.companies, arr(&d, "companies").len());
    assert_eq!(stats.contacts, arr(&d, "contacts").len());
    assert_eq!(stats.jobs, arr(&d, "jobs").len());
    assert_eq!(stats.users, 60);
    assert_eq!(stats.companies, 150);
    assert_eq!(stats.jobs, 300);
    let per_person = |n: usize| n as f64 / 3000.0;
    assert!((1.8..=2.8).contains(&per_person(stats.candidate_rows)));
    assert!((1.7..=2.6).contains(&per_person(stats.notes)));
    assert!((0.35..=0.7).contains(&per_person(stats.tasks)));
    assert!((0.8..=1.3).contains(&per_person(stats.attachments)));

    let count =
        |key: &str, f: &dyn Fn(&Value) -> bool| arr(&d, key).iter().filter(|r| f(r)).count();
    let private = count("notes", &|n| n["is_private"] == true);
    assert!((0.07..=0.13).contains(&ratio(private, stats.notes)));
    assert!(count("tasks", &|t| t["is_private"] == true) > 0);
    let no_bytes = count("attachments", &|a| a.get("content_base64").is_none());
    assert!((0.15..=0.25).contains(&ratio(no_bytes, stats.attachments)));
    for prefix in ["cv:", "cvdoc:", "file:", "clientfile:"] {
        assert!(count("attachments", &|a| s(a, "id").unwrap().starts_with(prefix)) > 0);
    }
    assert!(count("attachments", &|a| a["content_type"].is_null()) > 0);
    assert!(count("candidates", &|c| s(c, "outcome") == Some("placed")) > 0);
    assert!(count("candidates", &|c| s(c, "outcome") == Some("rejected")) > 0);
    assert!(count("candidates", &|c| c["owner_id"].is_null()) > 0);
    assert!(count("tasks", &|t| !t["placement_row_id"].is_null()) > 0);
    for st in ["open", "completed", "cancelled"] {
        assert!(count("tasks", &|t| s(t, "status") == Some(st)) > 0);
    }
    assert!(count("companies", &|c| c["is_archived"] == true) > 0);
    assert!(count("companies", &|c| c["owner_id"].is_null()) > 0);
    assert!(count("jobs", &|j| j["company_id"].is_null()) > 0);
    assert!(count("jobs", &|j| j["assigned_recruiter_id"].is_null()) > 0);
    assert!(count("jobs", &|j| j["is_archived"] == true) > 0);
    assert!(count("jobs", &|j| j["on_careers_page"] == true) > 0);
    for key in ["candidates", "notes", "companies"] {
        let same = count(key, &|r| r["created_at"] == r["updated_at"]);
        let share = ratio(same, arr(&d, key).len());
        assert!((0.2..=0.95).contains(&share), "{key}: {share}");
    }
    let late = count("candidates", &|c| {
        Stamp::parse_rfc3339(s(c, "updated_at").unwrap())
            .unwrap()
            .millis()
            >= TRACK
    });
    assert!(late > 0);
}

/// The importer accepts the file whole: every record parses, every reference
/// resolves, every rule of the format holds.
#[test]
fn the_importer_accepts_a_generated_snapshot() {
    use actors::snapshot::{parse_slice, plan_import, NoKeys};
    let bytes = bytes(300, 12);
    let snap = parse_slice(&bytes).unwrap_or_else(|e| panic!("{e}"));
    let plan = plan_import(None, snap, &NoKeys, true).unwrap_or_else(|e| panic!("{e}"));
    let d: Value = serde_json::from_slice(&bytes).unwrap();
    for key in [
        "users",
        "pipeline_stages",
        "companies",
        "contacts",
        "jobs",
        "candidates",
        "notes",
        "tasks",
        "attachments",
    ] {
        assert_eq!(
            plan.upserted.get(key).copied(),
            Some(arr(&d, key).len()),
            "{key}"
        );
    }
    let with_bytes = arr(&d, "attachments")
        .iter()
        .filter(|a| a.get("content_base64").is_some())
        .count();
    assert_eq!(plan.blobs.len(), with_bytes);
}

#[test]
fn phone_templates_fit_their_numbers() {
    let mut rng = stream(1, Family::World, 99);
    for kind in [
        NumKind::UkMobile,
        NumKind::London,
        NumKind::UkCity,
        NumKind::Us,
        NumKind::Fr,
    ] {
        let n = PhoneNum::random(&mut rng, kind);
        for t in n.styles() {
            assert_eq!(
                t.matches('#').count(),
                n.nsn.to_string().len(),
                "{kind:?} {t}"
            );
        }
    }
}

/// Measures by hand: `GEN_PEOPLE=1000000 cargo test --release -- --ignored measure`
/// (writes to `GEN_OUT`, default `/tmp/recruit-generate.json`).
#[test]
#[ignore]
fn measure() {
    let people = std::env::var("GEN_PEOPLE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let path = std::env::var("GEN_OUT").unwrap_or_else(|_| "/tmp/recruit-generate.json".into());
    /// Counts bytes; `GEN_OUT=-` measures generation without the disk.
    struct Count<W>(W, u64);
    impl<W: Write> Write for Count<W> {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            let n = self.0.write(b)?;
            self.1 += n as u64;
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            self.0.flush()
        }
    }
    let started = std::time::Instant::now();
    let opts = GenerateOptions::new(people, 42);
    let (stats, size) = if path == "-" {
        let mut out = Count(io::sink(), 0);
        (
            write_snapshot(&opts, &mut out, &mut |_, _| {}).unwrap(),
            out.1,
        )
    } else {
        let mut out = Count(std::fs::File::create(&path).unwrap(), 0);
        (
            write_snapshot(&opts, &mut out, &mut |_, _| {}).unwrap(),
            out.1,
        )
    };
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{people} people: {secs:.1}s, {size} bytes ({:.1} MiB) -> {path}\n{stats:?}",
        size as f64 / 1048576.0
    );
}

/// Every record of a generated workspace, written as the API writes it, is byte for byte
/// what serde makes of its view (the writer's reference).
#[test]
fn every_generated_record_is_written_as_its_view_serialises() {
    use actors::entities::{self, EntityVisitor};
    use actors::model::Entity;
    use actors::rendered::Rendered;
    use actors::state::WorkspaceState;
    struct Check(usize);
    impl<'s> EntityVisitor<'s> for &mut Check {
        type Out = ();
        fn visit<K: actors::table::TableKey, V: ?Sized, T: Rendered>(
            self,
            table: actors::table::TableRef<'s, K, V>,
            view: impl Fn(&'s V) -> T + Copy,
        ) {
            for (_, _, row) in table.rows_from(None, None) {
                let mut written = Vec::new();
                row.write_json(view, &mut written).unwrap();
                let serialised = serde_json::to_vec(&view(&row.rec)).unwrap();
                assert_eq!(
                    String::from_utf8_lossy(&written),
                    String::from_utf8_lossy(&serialised)
                );
                self.0 += 1;
            }
        }
    }
    let snapshot = actors::snapshot::parse_slice(&bytes(300, 11)).unwrap();
    let ws: WorkspaceState =
        actors::snapshot::plan_import(None, snapshot, &actors::snapshot::NoKeys, true)
            .unwrap()
            .next
            .unwrap();
    let mut check = Check(0);
    for e in Entity::ALL {
        entities::visit(&ws, e, &mut check);
    }
    assert!(check.0 > 2000, "{} records checked", check.0);
}
