//! The change feed: `GET /v1/changes`, `changes_since` on first list pages, tokens,
//! long-poll; a client that syncs in full and then follows the feed ends with exactly
//! what a fresh full sync gives, deletions and derived changes included.

use crate::helpers::*;
use reqwest::Method;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

const TASK: &str = "9b9318fa-d687-5079-970e-cb43c3d145bb";
const PUBLIC_NOTE: &str = "f24845c5-af3b-5f5c-8fe0-e0ed4e993ef7";
const RAJ: &str = "0986a580-8fc6-5461-afb0-b69c0a512919";
const LEO_JOB_ROW: &str = "b509f583-def1-5a25-9cb1-a1532b926c94";
const JOB: &str = "2fae0fc8-6eee-55da-8a7e-f15794b7515f";

async fn app(b: Backend) -> TestApp {
    let app = spawn_app(b).await;
    app.import_ok(&example()).await;
    app
}

async fn send(app: &TestApp, method: Method, path: &str, body: &Value) -> (u16, Value) {
    let res = app
        .req(method, path, Some(WRITE_KEY))
        .json(body)
        .send()
        .await
        .unwrap();
    let (s, v) = json_of(res).await;
    (s.as_u16(), v)
}

/// What a client keeps: entity → id → record.
type Mirror = BTreeMap<String, BTreeMap<String, Value>>;

/// A full sync of every entity, and the `changes_since` of the first page read.
async fn full_sync(app: &TestApp) -> (Mirror, String) {
    let mut mirror = Mirror::new();
    let mut token = None;
    for entity in ENTITIES {
        let mut records = BTreeMap::new();
        let mut cursor: Option<String> = None;
        loop {
            let path = match &cursor {
                None => format!("/v1/{entity}?limit=2"),
                Some(c) => format!("/v1/{entity}?limit=2&cursor={c}"),
            };
            let (s, page) = app.get(&path, READ_KEY).await;
            assert_eq!(s, 200, "{page}");
            if cursor.is_none() {
                let since = page["changes_since"]
                    .as_str()
                    .expect("changes_since on a first page");
                token.get_or_insert_with(|| since.to_string());
            } else {
                assert!(
                    page.get("changes_since").is_none(),
                    "only first pages carry it"
                );
            }
            for r in page["data"].as_array().unwrap() {
                records.insert(r["id"].as_str().unwrap().to_string(), r.clone());
            }
            match page["next_cursor"].as_str() {
                Some(c) => cursor = Some(c.to_string()),
                None => break,
            }
        }
        mirror.insert(entity.to_string(), records);
    }
    (mirror, token.unwrap())
}

/// Follows the feed from `since` until it is up to date, applying every change to
/// `mirror`; returns the last `next_since` and how many changes came.
async fn follow(
    app: &TestApp,
    mirror: &mut Mirror,
    mut since: String,
    limit: usize,
) -> (String, usize) {
    let mut seen = 0;
    for _ in 0..1000 {
        let (s, page) = app
            .get(
                &format!("/v1/changes?since={since}&limit={limit}"),
                READ_KEY,
            )
            .await;
        assert_eq!(s, 200, "{page}");
        let data = page["data"].as_array().unwrap();
        assert!(data.len() <= limit);
        let mut ids = std::collections::HashSet::new();
        for c in data {
            let entity = c["entity"].as_str().unwrap().to_string();
            let id = c["id"].as_str().unwrap().to_string();
            assert!(
                ids.insert((entity.clone(), id.clone())),
                "each record once per answer: {c}"
            );
            match c["op"].as_str().unwrap() {
                "upsert" => {
                    assert_eq!(c["record"]["id"], c["id"], "{c}");
                    mirror
                        .entry(entity)
                        .or_default()
                        .insert(id, c["record"].clone());
                }
                "delete" => {
                    assert!(c["deleted_at"].as_str().unwrap().ends_with('Z'), "{c}");
                    assert!(c.get("record").is_none(), "{c}");
                    mirror.entry(entity).or_default().remove(&id);
                }
                other => panic!("op {other}"),
            }
        }
        seen += data.len();
        since = page["next_since"].as_str().unwrap().to_string();
        if data.is_empty() && page["has_more"] == false {
            return (since, seen);
        }
    }
    panic!("the feed never ran dry");
}

/// One round of the watermark loop with `include_deleted=true` over every entity:
/// pages from each entity's watermark, records stored, tombstones removed, the
/// watermark moved to the last item's `updated_at`.
async fn watermark_round(app: &TestApp, mirror: &mut Mirror, marks: &mut BTreeMap<String, String>) {
    for entity in ENTITIES {
        let mut cursor: Option<String> = None;
        // Fixed for the round: a cursor belongs to its `updated_since`.
        let since = marks.get(entity).cloned();
        loop {
            let mut path = format!("/v1/{entity}?limit=3&include_deleted=true");
            if let Some(w) = &since {
                path.push_str(&format!("&updated_since={w}"));
            }
            if let Some(c) = &cursor {
                path.push_str(&format!("&cursor={c}"));
            }
            let (s, page) = app.get(&path, READ_KEY).await;
            assert_eq!(s, 200, "{page}");
            for item in page["data"].as_array().unwrap() {
                let id = item["id"].as_str().unwrap().to_string();
                let records = mirror.entry(entity.to_string()).or_default();
                if item["deleted"] == true {
                    records.remove(&id);
                } else {
                    records.insert(id, item.clone());
                }
                marks.insert(
                    entity.to_string(),
                    item["updated_at"].as_str().unwrap().to_string(),
                );
            }
            match page["next_cursor"].as_str() {
                Some(c) => cursor = Some(c.to_string()),
                None => break,
            }
        }
    }
}

/// Entity by entity, what a mirror missed, kept stale, or kept as a ghost.
fn assert_same(name: &str, mirror: &Mirror, fresh: &Mirror) {
    for entity in ENTITIES {
        let empty = BTreeMap::new();
        let got = mirror.get(entity).unwrap_or(&empty);
        let want = fresh.get(entity).unwrap_or(&empty);
        let missed: Vec<&String> = want.keys().filter(|k| !got.contains_key(*k)).collect();
        let ghosts: Vec<&String> = got.keys().filter(|k| !want.contains_key(*k)).collect();
        let stale: Vec<&String> = want
            .iter()
            .filter(|(k, v)| got.get(*k).is_some_and(|g| g != *v))
            .map(|(k, _)| k)
            .collect();
        assert!(
            missed.is_empty() && ghosts.is_empty() && stale.is_empty(),
            "{name}, {entity}: missed {missed:?}, ghosts {ghosts:?}, stale {stale:?} {:?}",
            stale
                .iter()
                .map(|k| (&got[*k], &want[*k]))
                .collect::<Vec<_>>()
        );
    }
}

/// The changes after `since`, in one answer.
async fn changes_after(app: &TestApp, since: &str) -> Vec<Value> {
    let (s, page) = app
        .get(&format!("/v1/changes?since={since}&limit=500"), READ_KEY)
        .await;
    assert_eq!(s, 200, "{page}");
    assert_eq!(page["has_more"], false);
    page["data"].as_array().unwrap().clone()
}

/// Renames the company FABRIKAM through the API (a key with `records:write`).
async fn rename_fabrikam(app: &TestApp, name: &str) {
    let key = app.key_with_scopes(&["records:write"]).await;
    let res = app
        .req(
            Method::PATCH,
            &format!("/v1/companies/{FABRIKAM}"),
            Some(&key),
        )
        .json(&json!({ "name": name }))
        .send()
        .await
        .unwrap();
    let (s, body) = json_of(res).await;
    assert_eq!(s, 200, "{body}");
}

/// A record of the example snapshot, by its array and id (to edit and import again).
fn record_of(snapshot: &Value, array: &str, id: &str) -> Value {
    snapshot[array]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("no {array} {id} in the snapshot"))
        .clone()
}

fn find<'a>(changes: &'a [Value], entity: &str, id: &str) -> Option<&'a Value> {
    changes
        .iter()
        .find(|c| c["entity"] == entity && c["id"] == id)
}

async fn writes_deletions_and_derived_changes_reach_the_feed(b: Backend) {
    let app = app(b).await;
    let (_, since) = full_sync(&app).await;
    assert!(
        changes_after(&app, &since).await.is_empty(),
        "nothing happened yet"
    );

    let (s, created) = send(
        &app,
        Method::POST,
        "/v1/notes",
        &json!({"parent_type": "company", "parent_id": FABRIKAM, "body_html": "<p>new</p>"}),
    )
    .await;
    assert_eq!(s, 201, "{created}");
    let new_note = created["data"]["id"].as_str().unwrap().to_string();
    let (s, _) = send(
        &app,
        Method::PATCH,
        &format!("/v1/tasks/{TASK}"),
        &json!({"title": "Renamed task"}),
    )
    .await;
    assert_eq!(s, 200);
    let (s, _) = send(
        &app,
        Method::PATCH,
        &format!("/v1/notes/{PUBLIC_NOTE}"),
        &json!({"is_private": true}),
    )
    .await;
    assert_eq!(s, 200);
    let (s, _) = send(
        &app,
        Method::DELETE,
        &format!("/v1/notes/{new_note}"),
        &json!({}),
    )
    .await;
    assert!(s == 200 || s == 204, "{s}");
    rename_fabrikam(&app, "Fabrikam Renamed").await;

    let changes = changes_after(&app, &since).await;
    // A record created and deleted since: its latest state, a tombstone.
    assert_eq!(find(&changes, "notes", &new_note).unwrap()["op"], "delete");
    // Made private: a tombstone, never the private record.
    assert_eq!(
        find(&changes, "notes", PUBLIC_NOTE).unwrap()["op"],
        "delete"
    );
    // Patched: exactly what GET by id gives.
    let task = find(&changes, "tasks", TASK).unwrap();
    assert_eq!(task["op"], "upsert");
    let (_, by_id) = app.get(&format!("/v1/tasks/{TASK}"), READ_KEY).await;
    assert_eq!(task["record"], by_id["data"]);
    assert_eq!(
        find(&changes, "companies", FABRIKAM).unwrap()["record"]["name"],
        "Fabrikam Renamed"
    );
    // Derived: the company's contacts and jobs show its name, though not written.
    let (_, contacts) = app.get("/v1/contacts?limit=100", READ_KEY).await;
    let of_fabrikam: Vec<&Value> = contacts["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["company_id"] == FABRIKAM)
        .collect();
    assert!(
        !of_fabrikam.is_empty(),
        "the example has contacts at Fabrikam"
    );
    for contact in of_fabrikam {
        let change = find(&changes, "contacts", contact["id"].as_str().unwrap())
            .unwrap_or_else(|| panic!("derived change of {contact} missing from {changes:?}"));
        assert_eq!(change["record"]["company"], "Fabrikam Renamed");
    }
    // In commit order: the task's patch came before the company's.
    let at = |entity: &str, id: &str| {
        changes
            .iter()
            .position(|c| c["entity"] == entity && c["id"] == id)
            .unwrap()
    };
    assert!(at("tasks", TASK) < at("companies", FABRIKAM));
    app.stop().await;
}

async fn a_mirror_that_follows_the_feed_equals_a_fresh_full_sync(b: Backend) {
    let app = app(b).await;
    let (mut mirror, since) = full_sync(&app).await;
    let mut created = Vec::new();
    for i in 0..7 {
        let (s, body) = send(
            &app,
            Method::POST,
            "/v1/notes",
            &json!({"parent_type": "company", "parent_id": FABRIKAM, "body_html": format!("<p>{i}</p>")}),
        )
        .await;
        assert_eq!(s, 201, "{body}");
        created.push(body["data"]["id"].as_str().unwrap().to_string());
    }
    for id in created.iter().step_by(2) {
        let (s, _) = send(&app, Method::DELETE, &format!("/v1/notes/{id}"), &json!({})).await;
        assert!(s == 200 || s == 204);
    }
    send(
        &app,
        Method::PATCH,
        &format!("/v1/notes/{}", created[1]),
        &json!({"is_private": true}),
    )
    .await;
    send(
        &app,
        Method::PATCH,
        &format!("/v1/tasks/{TASK}"),
        &json!({"title": "Renamed task"}),
    )
    .await;
    rename_fabrikam(&app, "F2").await;
    // Small pages: answers end inside a commit's entries and go on from there.
    let (since, seen) = follow(&app, &mut mirror, since, 2).await;
    assert!(seen > 0);
    let (fresh, _) = full_sync(&app).await;
    assert_eq!(
        mirror, fresh,
        "the mirror missed, kept stale or kept ghost records"
    );
    // Up to date: nothing more, and the token is stable.
    let (s, page) = app
        .get(&format!("/v1/changes?since={since}"), READ_KEY)
        .await;
    assert_eq!(s, 200);
    assert_eq!(page["data"], json!([]));
    assert_eq!(page["has_more"], false);
    app.stop().await;
}

async fn entities_filter_the_feed(b: Backend) {
    let app = app(b).await;
    let (_, since) = full_sync(&app).await;
    send(
        &app,
        Method::PATCH,
        &format!("/v1/tasks/{TASK}"),
        &json!({"title": "Renamed task"}),
    )
    .await;
    rename_fabrikam(&app, "F3").await;
    let (s, page) = app
        .get(
            &format!("/v1/changes?since={since}&entities=tasks"),
            READ_KEY,
        )
        .await;
    assert_eq!(s, 200);
    let data = page["data"].as_array().unwrap();
    assert_eq!(data.len(), 1, "{page}");
    assert_eq!(data[0]["id"], TASK);
    app.stop().await;
}

async fn bad_parameters_get_400(b: Backend) {
    let app = app(b).await;
    let (_, since) = full_sync(&app).await;
    let mut tampered = since.clone().into_bytes();
    let last = tampered.len() - 1;
    tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    for query in [
        String::new(),
        "?since=".to_string(),
        "?since=not-a-token".to_string(),
        format!("?since={tampered}"),
        format!("?since={since}&entities=people"),
        format!("?since={since}&limit=0"),
        format!("?since={since}&limit=-1"),
        format!("?since={since}&wait=31"),
        format!("?since={since}&wait=1.5"),
        format!("?since={since}&wait=-1"),
    ] {
        let (s, body) = app.get(&format!("/v1/changes{query}"), READ_KEY).await;
        assert_error(s, &body, 400, "BAD_REQUEST");
        assert!(
            body["error"].get("resync_required").is_none(),
            "{query}: {body}"
        );
    }
    // A list cursor is no feed token, nor the other way round.
    let (_, page) = app.get("/v1/notes?limit=1", READ_KEY).await;
    let cursor = page["next_cursor"].as_str().unwrap();
    let (s, body) = app
        .get(&format!("/v1/changes?since={cursor}"), READ_KEY)
        .await;
    assert_error(s, &body, 400, "BAD_REQUEST");
    let (s, body) = app
        .get(&format!("/v1/notes?cursor={since}"), READ_KEY)
        .await;
    assert_error(s, &body, 400, "BAD_REQUEST");
    // Above 500 is clamped, as lists do.
    let (s, _) = app
        .get(&format!("/v1/changes?since={since}&limit=501"), READ_KEY)
        .await;
    assert_eq!(s, 200);
    let (s, body) = app
        .req(Method::POST, "/v1/changes", Some(READ_KEY))
        .send()
        .await
        .map(|r| (r.status(), r))
        .unwrap();
    assert_eq!(s, 405, "{:?}", body.headers());
    app.stop().await;
}

async fn a_long_poll_answers_when_a_change_commits(b: Backend) {
    let app = app(b).await;
    let (_, since) = full_sync(&app).await;
    // Nothing comes: the answer waits `wait` seconds, then says so.
    let started = Instant::now();
    let (s, page) = app
        .get(&format!("/v1/changes?since={since}&wait=1"), READ_KEY)
        .await;
    assert_eq!(s, 200);
    assert_eq!(page["data"], json!([]));
    assert!(started.elapsed() >= Duration::from_secs(1));

    let poll = app.req(
        Method::GET,
        &format!("/v1/changes?since={since}&wait=30"),
        Some(READ_KEY),
    );
    let waiting = actix_web::rt::spawn(async move { json_of(poll.send().await.unwrap()).await });
    actix_web::rt::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "answered before anything changed");
    let (s, _) = send(
        &app,
        Method::PATCH,
        &format!("/v1/tasks/{TASK}"),
        &json!({"title": "Renamed task"}),
    )
    .await;
    assert_eq!(s, 200);
    let (s, page) = actix_web::rt::time::timeout(Duration::from_secs(20), waiting)
        .await
        .expect("the long poll answered once the change committed")
        .unwrap();
    assert_eq!(s, 200);
    let data = page["data"].as_array().unwrap();
    assert_eq!(data.len(), 1, "{page}");
    assert_eq!(data[0]["id"], TASK);
    app.stop().await;
}

async fn an_import_shows_its_changes_and_deletions(b: Backend) {
    let app = app(b).await;
    let (mut mirror, since) = full_sync(&app).await;
    // A delta: one note deleted, a company renamed, a user removed.
    let example = example();
    let gone = PUBLIC_NOTE.to_string();
    let mut company = record_of(&example, "companies", FABRIKAM);
    company["name"] = json!("Fabrikam Imported");
    company["updated_at"] = json!("2030-01-01T00:00:00.000Z");
    // Raj, the recruiter assigned to the example's job, loses access: the candidate row
    // on that job, which showed him as its owning recruiter, changes with him.
    let mut raj = record_of(&example, "users", RAJ);
    raj["status"] = json!("removed");
    raj["updated_at"] = json!("2030-01-01T00:00:00.000Z");
    let (_, before) = app
        .get(&format!("/v1/candidates/{LEO_JOB_ROW}"), READ_KEY)
        .await;
    assert_eq!(before["data"]["owning_recruiter_id"], RAJ);
    let snap = json!({
        "format": example["format"],
        "workspace": example["workspace"],
        "users": [raj],
        "companies": [company],
        "notes": [{"id": gone, "deleted": true}],
    });
    app.import_ok(&snap).await;
    let changes = changes_after(&app, &since).await;
    assert_eq!(find(&changes, "notes", &gone).unwrap()["op"], "delete");
    assert_eq!(
        find(&changes, "companies", FABRIKAM).unwrap()["record"]["name"],
        "Fabrikam Imported"
    );
    assert_eq!(find(&changes, "users", RAJ).unwrap()["op"], "delete");
    let row = find(&changes, "candidates", LEO_JOB_ROW).expect("derived change");
    assert_eq!(row["record"]["owning_recruiter_id"], Value::Null);
    follow(&app, &mut mirror, since, 3).await;
    let (fresh, _) = full_sync(&app).await;
    assert_eq!(mirror, fresh);
    app.stop().await;
}

/// The sync guarantee, under load: while several writers create, patch and delete notes
/// and tasks, flip `is_private`, and patch candidates and jobs, and imports delete
/// records and remove a user, a client that synced in full and follows the feed with
/// `wait` ends with exactly what a fresh full sync gives: nothing missed, nothing stale,
/// no ghost.
async fn concurrent_writers_and_imports_never_lose_a_change(b: Backend) {
    let app = std::sync::Arc::new(app(b).await);
    let records_key = app.key_with_scopes(&["records:write"]).await;
    let (mirror, since) = full_sync(&app).await;
    // The second client: the watermark loop with tombstones, from the same full sync.
    let mut marks = BTreeMap::new();
    let mut watermark_mirror = Mirror::new();
    watermark_round(&app, &mut watermark_mirror, &mut marks).await;

    // The follower: long-polls until told the writers are done and it is up to date.
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let follower = {
        let (app, done) = (app.clone(), done.clone());
        actix_web::rt::spawn(async move {
            let mut mirror = mirror;
            let mut since = since;
            loop {
                let finished = done.load(std::sync::atomic::Ordering::SeqCst);
                let (s, page) = app
                    .get(
                        &format!("/v1/changes?since={since}&limit=7&wait=1"),
                        READ_KEY,
                    )
                    .await;
                assert_eq!(s, 200, "{page}");
                let data = page["data"].as_array().unwrap();
                for c in data {
                    let entity = c["entity"].as_str().unwrap().to_string();
                    let id = c["id"].as_str().unwrap().to_string();
                    if c["op"] == "upsert" {
                        mirror
                            .entry(entity)
                            .or_default()
                            .insert(id, c["record"].clone());
                    } else {
                        mirror.entry(entity).or_default().remove(&id);
                    }
                }
                since = page["next_since"].as_str().unwrap().to_string();
                if finished && data.is_empty() && page["has_more"] == false {
                    return mirror;
                }
            }
        })
    };

    let mut writers = Vec::new();
    for w in 0..3 {
        let (app, records_key) = (app.clone(), records_key.clone());
        writers.push(actix_web::rt::spawn(async move {
            let mut notes: Vec<String> = Vec::new();
            let mut tasks: Vec<String> = Vec::new();
            for i in 0..24 {
                let (method, path, body, key) = match i % 8 {
                    0 | 1 => (
                        Method::POST,
                        "/v1/notes".to_string(),
                        json!({"parent_type": "company", "parent_id": FABRIKAM, "body_html": format!("<p>{w}/{i}</p>")}),
                        WRITE_KEY.to_string(),
                    ),
                    2 => (
                        Method::PATCH,
                        format!("/v1/notes/{}", notes.last().unwrap()),
                        json!({"is_private": i % 16 == 2}),
                        WRITE_KEY.to_string(),
                    ),
                    3 => (
                        Method::DELETE,
                        format!("/v1/notes/{}", notes.remove(0)),
                        json!({}),
                        WRITE_KEY.to_string(),
                    ),
                    4 => (
                        Method::POST,
                        "/v1/tasks".to_string(),
                        json!({"parent_type": "company", "parent_id": FABRIKAM, "title": format!("t{w}/{i}")}),
                        WRITE_KEY.to_string(),
                    ),
                    5 => (
                        Method::PATCH,
                        format!("/v1/tasks/{}", tasks.last().unwrap()),
                        json!({"title": format!("t{w}/{i}!"), "is_private": i % 16 == 5}),
                        WRITE_KEY.to_string(),
                    ),
                    6 => (
                        Method::PATCH,
                        format!("/v1/candidates/{LEO_JOB_ROW}"),
                        json!({"job_title": format!("SRE {w}/{i}")}),
                        records_key.clone(),
                    ),
                    _ => (
                        Method::PATCH,
                        format!("/v1/jobs/{JOB}"),
                        json!({"title": format!("Job {w}/{i}")}),
                        records_key.clone(),
                    ),
                };
                let res = app.req(method, &path, Some(&key)).json(&body).send().await.unwrap();
                let (s, body) = json_of(res).await;
                assert!([200, 201, 204].contains(&s.as_u16()), "{path}: {s} {body}");
                if s == 201 {
                    let id = body["data"]["id"].as_str().unwrap().to_string();
                    if path == "/v1/notes" {
                        notes.push(id);
                    } else {
                        tasks.push(id);
                    }
                }
                // A note made private is out of the API's reach from then on.
                if i % 16 == 2 {
                    notes.pop();
                }
            }
        }));
    }
    // Imports beside them: one deletes a note of the example, one removes a user.
    let example = example();
    let format = example["format"].clone();
    let workspace = example["workspace"].clone();
    let mut raj = record_of(&example, "users", RAJ);
    raj["status"] = json!("removed");
    raj["updated_at"] = json!("2030-01-01T00:00:00.000Z");
    let importer = {
        let (app, format, workspace) = (app.clone(), format.clone(), workspace.clone());
        actix_web::rt::spawn(async move {
            app.import_ok(&json!({
                "format": format, "workspace": workspace,
                "notes": [{"id": PUBLIC_NOTE, "deleted": true}],
            }))
            .await;
        })
    };
    // Rounds of the watermark loop while they write.
    while writers.iter().any(|w| !w.is_finished()) || !importer.is_finished() {
        watermark_round(&app, &mut watermark_mirror, &mut marks).await;
        actix_web::rt::time::sleep(Duration::from_millis(20)).await;
    }
    for w in writers {
        w.await.unwrap();
    }
    importer.await.unwrap();
    // Last, so that no write of the row after it hides what it derives: Raj, the job's
    // recruiter, removed, changes the job row's owning_recruiter_id without writing it.
    // A newer candidate first moves the watermark past the job row (an inclusive
    // watermark would otherwise read the row again anyway).
    let mut newer = example["candidates"][0].clone();
    newer["id"] = json!("6f7d3c1e-0000-4000-8000-000000000001");
    newer["person_id"] = json!("6f7d3c1e-0000-4000-8000-000000000002");
    newer["name"] = json!("Zed Newer");
    newer["job_id"] = Value::Null;
    newer["stage_id"] = Value::Null;
    newer["email"] = Value::Null;
    newer["phone"] = Value::Null;
    newer["mobile"] = Value::Null;
    newer["created_at"] = json!("2099-01-01T00:00:00.000Z");
    newer["updated_at"] = json!("2099-01-01T00:00:00.000Z");
    app.import_ok(&json!({"format": format, "workspace": workspace, "candidates": [newer]}))
        .await;
    watermark_round(&app, &mut watermark_mirror, &mut marks).await;
    assert!(marks["candidates"].starts_with("2099"), "{marks:?}");
    app.import_ok(&json!({"format": format, "workspace": workspace, "users": [raj]}))
        .await;
    watermark_round(&app, &mut watermark_mirror, &mut marks).await;
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let mirror = actix_web::rt::time::timeout(Duration::from_secs(60), follower)
        .await
        .expect("the follower caught up")
        .unwrap();
    let (fresh, _) = full_sync(&app).await;
    assert_same("the feed client", &mirror, &fresh);
    assert_same("the watermark client", &watermark_mirror, &fresh);
    app.stop().await;
}

/// `include_deleted=true`: lists also carry tombstones `{id, deleted: true, updated_at}`
/// in their (`updated_at`, id) order, for deleted, hidden and removed records; counts
/// count shown records only; cursors keep to their listing.
async fn lists_with_include_deleted_carry_tombstones(b: Backend) {
    let app = app(b).await;
    let (_, before) = app.get("/v1/notes?limit=100", READ_KEY).await;
    let (s, created) = send(
        &app,
        Method::POST,
        "/v1/notes",
        &json!({"parent_type": "company", "parent_id": FABRIKAM, "body_html": "<p>x</p>"}),
    )
    .await;
    assert_eq!(s, 201);
    let gone = created["data"]["id"].as_str().unwrap().to_string();
    let (s, _) = send(
        &app,
        Method::DELETE,
        &format!("/v1/notes/{gone}"),
        &json!({}),
    )
    .await;
    assert!(s == 200 || s == 204);
    let (s, _) = send(
        &app,
        Method::PATCH,
        &format!("/v1/notes/{PUBLIC_NOTE}"),
        &json!({"is_private": true}),
    )
    .await;
    assert_eq!(s, 200);

    let (s, page) = app
        .get("/v1/notes?limit=100&include_deleted=true", READ_KEY)
        .await;
    assert_eq!(s, 200, "{page}");
    let data = page["data"].as_array().unwrap();
    let tombstones: Vec<&Value> = data.iter().filter(|r| r["deleted"] == true).collect();
    let ids: Vec<&str> = tombstones
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&gone.as_str()) && ids.contains(&PUBLIC_NOTE),
        "{page}"
    );
    for t in &tombstones {
        assert_eq!(t.as_object().unwrap().len(), 3, "{t}");
        assert!(t["updated_at"].as_str().unwrap().ends_with('Z'));
    }
    // Shown records only are counted; the order is (updated_at, id) throughout.
    assert_eq!(
        page["total_count"],
        before["total_count"].as_u64().unwrap() - 1
    );
    let keys: Vec<(String, String)> = data
        .iter()
        .map(|r| {
            (
                r["updated_at"].as_str().unwrap().to_string(),
                r["id"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
    // Without the flag, no tombstone; with updated_since past them, none either.
    let (_, plain) = app
        .get("/v1/notes?limit=100&include_deleted=false", READ_KEY)
        .await;
    assert!(plain["data"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r.get("deleted").is_none()));
    let (_, later) = app
        .get(
            "/v1/notes?include_deleted=true&updated_since=2099-01-01",
            READ_KEY,
        )
        .await;
    assert_eq!(later["data"], json!([]));
    // Paged one at a time, the same items; a cursor keeps to its listing.
    let mut paged = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            None => "/v1/notes?limit=1&include_deleted=true".to_string(),
            Some(c) => format!("/v1/notes?limit=1&include_deleted=true&cursor={c}"),
        };
        let (s, page) = app.get(&path, READ_KEY).await;
        assert_eq!(s, 200, "{page}");
        paged.extend(page["data"].as_array().unwrap().iter().cloned());
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    assert_eq!(&paged, data);
    let (_, first) = app
        .get("/v1/notes?limit=1&include_deleted=true", READ_KEY)
        .await;
    let c = first["next_cursor"].as_str().unwrap();
    let (s, body) = app
        .get(&format!("/v1/notes?limit=1&cursor={c}"), READ_KEY)
        .await;
    assert_error(s, &body, 400, "BAD_REQUEST");
    for bad in ["yes", "1", "TRUE", ""] {
        let (s, body) = app
            .get(&format!("/v1/notes?include_deleted={bad}"), READ_KEY)
            .await;
        assert_error(s, &body, 400, "BAD_REQUEST");
    }
    app.stop().await;
}

/// The ids of an entity's tombstones, as `include_deleted=true` lists them.
async fn tombstones(app: &TestApp, entity: &str) -> Vec<String> {
    let (_, page) = app
        .get(
            &format!("/v1/{entity}?limit=100&include_deleted=true"),
            READ_KEY,
        )
        .await;
    page["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["deleted"] == true)
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}

/// Tombstones outlive a restart: the store keeps them, and an import's deletions and a
/// removed user come back as tombstones after it.
async fn tombstones_are_kept_by_the_store(b: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let app = spawn_app_in(b.clone(), dir).await;
    app.import_ok(&example()).await;
    let example = example();
    let mut raj = record_of(&example, "users", RAJ);
    raj["status"] = json!("removed");
    raj["updated_at"] = json!("2030-01-01T00:00:00.000Z");
    app.import_ok(&json!({
        "format": example["format"], "workspace": example["workspace"],
        "users": [raj], "notes": [{"id": PUBLIC_NOTE, "deleted": true}],
    }))
    .await;
    assert_eq!(tombstones(&app, "users").await, [RAJ]);
    assert_eq!(tombstones(&app, "notes").await, [PUBLIC_NOTE]);
    app.stop().await;
    let TestApp { data_dir, .. } = app;
    let app = spawn_app_in(b, data_dir).await;
    assert_eq!(tombstones(&app, "users").await, [RAJ]);
    assert_eq!(tombstones(&app, "notes").await, [PUBLIC_NOTE]);
    app.stop().await;
}

/// Derived changes are what the API shows differently, nothing more: a job's new title
/// shows on none of its candidate rows, which keep their `updated_at` and stay out of
/// the feed; a company's new name shows on its contacts, which move.
async fn only_what_shows_differently_is_derived(b: Backend) {
    let app = app(b).await;
    let records_key = app.key_with_scopes(&["records:write"]).await;
    let (_, since) = full_sync(&app).await;
    let (_, row_before) = app
        .get(&format!("/v1/candidates/{LEO_JOB_ROW}"), READ_KEY)
        .await;
    let res = app
        .req(
            Method::PATCH,
            &format!("/v1/jobs/{JOB}"),
            Some(&records_key),
        )
        .json(&json!({"title": "Principal SRE"}))
        .send()
        .await
        .unwrap();
    assert_eq!(json_of(res).await.0, 200);
    let changes = changes_after(&app, &since).await;
    let ids: Vec<(&str, &str)> = changes
        .iter()
        .map(|c| (c["entity"].as_str().unwrap(), c["id"].as_str().unwrap()))
        .collect();
    assert_eq!(ids, [("jobs", JOB)], "{changes:?}");
    let (_, row_after) = app
        .get(&format!("/v1/candidates/{LEO_JOB_ROW}"), READ_KEY)
        .await;
    assert_eq!(row_before["data"], row_after["data"]);
    app.stop().await;
}

/// A workspace's first import logs nothing (no reader can be behind it: every reader
/// starts from a full sync of the workspace it creates); later commits do.
async fn a_workspace_s_first_import_writes_no_log(b: Backend) {
    let app = app(b.clone()).await;
    let parts = |sql: &'static str| {
        let (b, dir) = (b.clone(), app.data_dir.path().to_path_buf());
        async move { store_sql(&b, &dir, sql).await.unwrap() }
    };
    let count = "SELECT CAST(count(*) AS TEXT) FROM change_log";
    assert_eq!(parts(count).await, "0");
    let (s, _) = send(
        &app,
        Method::PATCH,
        &format!("/v1/tasks/{TASK}"),
        &json!({"title": "Renamed task"}),
    )
    .await;
    assert_eq!(s, 200);
    assert_eq!(parts(count).await, "1");
    app.stop().await;
}

/// A note created and deleted through the API: its id.
async fn create_and_delete_note(app: &TestApp) -> String {
    let (s, created) = send(
        app,
        Method::POST,
        "/v1/notes",
        &json!({"parent_type": "company", "parent_id": FABRIKAM, "body_html": "<p>brief</p>"}),
    )
    .await;
    assert_eq!(s, 201, "{created}");
    let id = created["data"]["id"].as_str().unwrap().to_string();
    let (s, body) = send(app, Method::DELETE, &format!("/v1/notes/{id}"), &json!({})).await;
    assert_eq!(s, 200, "{body}");
    id
}

/// A client reading the feed a page at a time is answered from pages made ahead of
/// its requests, but only while the workspace stands as it did when they were made: a
/// write between two requests shows in the very next answer.
async fn pages_made_ahead_answer_only_the_state_they_were_made_from(b: Backend) {
    let app = app(b).await;
    let since = token_now(&app).await;
    let token_now_before = since.clone();
    let mut notes = Vec::new();
    for i in 0..4 {
        let (s, created) = send(
            &app,
            Method::POST,
            "/v1/notes",
            &json!({"parent_type": "company", "parent_id": FABRIKAM, "body_html": format!("<p>note {i}</p>")}),
        )
        .await;
        assert_eq!(s, 201, "{created}");
        notes.push(created["data"]["id"].as_str().unwrap().to_string());
    }
    let page = |since: &str| format!("/v1/changes?since={since}&limit=1");
    let (s, first) = app.get(&page(&since), READ_KEY).await;
    assert_eq!(s, 200, "{first}");
    assert_eq!(first["data"][0]["id"], notes[0].as_str());
    assert_eq!(first["has_more"], true);
    // The pages after it are being made now; give them the time to be.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (s, patched) = send(
        &app,
        Method::PATCH,
        &format!("/v1/notes/{}", notes[1]),
        &json!({"body_html": "<p>changed</p>"}),
    )
    .await;
    assert_eq!(s, 200, "{patched}");
    let (s, second) = app
        .get(&page(first["next_since"].as_str().unwrap()), READ_KEY)
        .await;
    assert_eq!(s, 200, "{second}");
    assert_eq!(second["data"][0]["id"], notes[1].as_str());
    assert_eq!(
        second["data"][0]["record"]["body_html"], "<p>changed</p>",
        "a page made before the write is not the answer after it"
    );
    // Unchanged from here on: the pages made ahead are the answers.
    let taken_before = metric(
        &app.metrics_text().await,
        "recruitd_feed_pages_ahead_total{outcome=\"taken\"}",
    )
    .unwrap_or(0.0);
    let mut since = second["next_since"].as_str().unwrap().to_string();
    let mut rest = Vec::new();
    loop {
        // As a client that takes in each answer before it asks again.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let (s, next) = app.get(&page(&since), READ_KEY).await;
        assert_eq!(s, 200, "{next}");
        for c in next["data"].as_array().unwrap() {
            rest.push(c["id"].as_str().unwrap().to_string());
        }
        since = next["next_since"].as_str().unwrap().to_string();
        if next["has_more"] == false {
            break;
        }
    }
    assert_eq!(rest, [notes[2].clone(), notes[3].clone(), notes[1].clone()]);
    let taken = metric(
        &app.metrics_text().await,
        "recruitd_feed_pages_ahead_total{outcome=\"taken\"}",
    )
    .unwrap_or(0.0);
    assert!(
        taken - taken_before >= 2.0,
        "the pages after the write were made ahead: {taken_before} -> {taken}"
    );
    // A client that stops after one page: the pages made for it are let go once it has
    // been quiet for a while (each holds the state it was made from).
    let unused = |text: &str| {
        metric(text, "recruitd_feed_pages_ahead_total{outcome=\"unused\"}").unwrap_or(0.0)
    };
    let unused_before = unused(&app.metrics_text().await);
    let (s, again) = app.get(&page(&token_now_before), READ_KEY).await;
    assert_eq!(s, 200, "{again}");
    assert_eq!(again["has_more"], true);
    let deadline = Instant::now() + Duration::from_secs(6);
    while unused(&app.metrics_text().await) < unused_before + 1.0 {
        assert!(
            Instant::now() < deadline,
            "the pages of a quiet client are let go"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    app.stop().await;
}

/// The `changes_since` of a first list page: a token of now.
async fn token_now(app: &TestApp) -> String {
    let (_, page) = app.get("/v1/users?limit=1", READ_KEY).await;
    page["changes_since"].as_str().unwrap().to_string()
}

/// One sample of the metrics text.
fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

/// Retention prunes the log and the tombstones older than the setting, in the store and
/// in memory, and nothing newer: a tombstone older than the setting leaves the lists, a
/// newer one stays; a token from before the pruned part must resync, one after it reads
/// on; the metrics count what pruning did.
async fn retention_prunes_only_what_is_older_than_the_setting(b: Backend) {
    const RETENTION: Duration = Duration::from_secs(6);
    const GAP: Duration = Duration::from_secs(4);
    let app = spawn_app_with(b, tempfile::tempdir().unwrap(), |s| {
        s.changes_retention = RETENTION;
        s.changes_prune_every = Duration::from_millis(200);
    })
    .await;
    app.import_ok(&example()).await;
    let before = token_now(&app).await;
    let old = create_and_delete_note(&app).await;
    let old_at = Instant::now();
    tokio::time::sleep(GAP).await;
    let newer = create_and_delete_note(&app).await;
    let after = token_now(&app).await;
    assert_eq!(tombstones(&app, "notes").await.len(), 2);
    // Wait for the first deletion to pass the retention and a pruning to follow; the
    // newer one has GAP more to go.
    let deadline = old_at + RETENTION + Duration::from_secs(3);
    loop {
        let shown = tombstones(&app, "notes").await;
        if !shown.contains(&old) {
            assert_eq!(shown, std::slice::from_ref(&newer));
            break;
        }
        assert!(Instant::now() < deadline, "never pruned: {shown:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let text = app.metrics_text().await;
    app.stop().await;
    let ws = "{workspace=\"b2574901-bbf6-5245-9d3f-3dd074396143\"}";
    for (name, least) in [
        ("recruitd_change_log_pruned_parts_total", 1.0),
        ("recruitd_tombstones_pruned_total", 1.0),
        ("recruitd_change_log_pruned_through", 2.0),
        ("recruitd_change_log_position", 4.0),
        ("recruitd_tombstones", 1.0),
    ] {
        let got = metric(&text, &format!("{name}{ws}"));
        assert!(got >= Some(least), "{name}: {got:?}");
    }
    let pruned = metric(
        &text,
        "recruitd_change_log_prune_duration_seconds_count{outcome=\"ok\"}",
    );
    assert!(pruned >= Some(1.0), "{pruned:?}");
    // The store pruned too: after a restart (which prunes nothing more) the old
    // tombstone stays gone, and a token from before the pruned part must resync.
    let TestApp {
        data_dir, backend, ..
    } = app;
    let app = spawn_app_with(backend, data_dir, |s| {
        s.changes_retention = Duration::from_secs(3600);
    })
    .await;
    assert_eq!(tombstones(&app, "notes").await, [newer]);
    let (s, body) = app
        .get(&format!("/v1/changes?since={before}"), READ_KEY)
        .await;
    assert_eq!(s, 400, "{body}");
    assert_eq!(body["error"]["code"], "BAD_REQUEST", "{body}");
    assert_eq!(body["error"]["resync_required"], true, "{body}");
    let (s, body) = app
        .get(&format!("/v1/changes?since={after}"), READ_KEY)
        .await;
    assert_eq!(s, 200, "{body}");
    app.stop().await;
}

store_test!(
    pages_made_ahead_answer_only_the_state_they_were_made_from,
    retention_prunes_only_what_is_older_than_the_setting,
    writes_deletions_and_derived_changes_reach_the_feed,
    a_mirror_that_follows_the_feed_equals_a_fresh_full_sync,
    entities_filter_the_feed,
    bad_parameters_get_400,
    a_long_poll_answers_when_a_change_commits,
    an_import_shows_its_changes_and_deletions,
    concurrent_writers_and_imports_never_lose_a_change,
    lists_with_include_deleted_carry_tombstones,
    tombstones_are_kept_by_the_store,
    only_what_shows_differently_is_derived,
    a_workspace_s_first_import_writes_no_log,
);
