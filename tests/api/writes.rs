//! Writes: notes, tasks and record edits — validation, semantics, scopes, idempotency,
//! read-your-writes, and store outages.

use crate::helpers::*;
use actors::model::{Note, Task};
use actors::state::WorkspaceState;
use futures_util::StreamExt;
use reqwest::Method;
use serde_json::{json, Value};
use uuid::Uuid;

const OLIVIA: &str = "c26c9743-a728-5f14-b348-d08024212444";
const RAJ: &str = "0986a580-8fc6-5461-afb0-b69c0a512919";
const LEO_PERSON: &str = "21b6ca4e-64ee-5e3c-89d8-7a0806815565";
const LEO_PRIMARY: &str = "a214ca67-7691-5c62-8910-a410373e10c9";
const LEO_JOB_ROW: &str = "b509f583-def1-5a25-9cb1-a1532b926c94";
const JOB: &str = "2fae0fc8-6eee-55da-8a7e-f15794b7515f";
const HANA: &str = "c39ca419-8ea8-58e1-a02b-11d9dec22eb3";
const TASK: &str = "9b9318fa-d687-5079-970e-cb43c3d145bb";
const PUBLIC_NOTE: &str = "f24845c5-af3b-5f5c-8fe0-e0ed4e993ef7";
/// The example's private note (on the contact HANA).
const PRIVATE_NOTE: &str = "05ace384-620b-5866-bfb7-3cdd82c2fe5e";
const UNKNOWN: &str = "00000000-0000-4000-8000-000000000000";
const WORKSPACE: &str = "b2574901-bbf6-5245-9d3f-3dd074396143";

async fn app(b: Backend) -> TestApp {
    let app = spawn_app(b).await;
    app.import_ok(&example()).await;
    app
}

/// Sends a JSON body; returns status and JSON body.
async fn send(
    app: &TestApp,
    method: Method,
    path: &str,
    key: &str,
    body: &Value,
) -> (reqwest::StatusCode, Value) {
    let res = app
        .req(method, path, Some(key))
        .json(body)
        .send()
        .await
        .unwrap();
    json_of(res).await
}

/// A key with every scope.
async fn records_key(app: &TestApp) -> String {
    app.key_with_scopes(&["notes:write", "tasks:write", "records:write"])
        .await
}

async fn count(app: &TestApp, entity: &str) -> u64 {
    let (_, body) = app
        .get(&format!("/v1/counts?entities={entity}"), READ_KEY)
        .await;
    body["data"][entity].as_u64().unwrap()
}

async fn get_data(app: &TestApp, path: &str) -> Value {
    let (s, body) = app.get(path, READ_KEY).await;
    assert_eq!(s, 200, "{path}: {body}");
    body["data"].clone()
}

async fn notes_land_where_the_spec_says(b: Backend) {
    let app = app(b).await;
    // On a job row: the note belongs to the person's primary row and keeps the job.
    let (s, body) = send(
        &app,
        Method::POST,
        "/v1/notes",
        WRITE_KEY,
        &json!({
            "parent_type": "candidate", "parent_id": LEO_JOB_ROW, "body_html": "<p>Called back</p>",
            "title": "Call", "type": "call"
        }),
    )
    .await;
    assert_eq!(s, 201, "{body}");
    assert_eq!(body.as_object().unwrap().len(), 2, "{body}");
    let data = body["data"].as_object().unwrap();
    assert_eq!(data.len(), 1, "only the id: {body}");
    let id = data["id"].as_str().unwrap().to_string();
    let note = get_data(&app, &format!("/v1/notes/{id}")).await;
    assert_eq!(note["parent_type"], "candidate");
    assert_eq!(note["parent_id"], LEO_PRIMARY);
    assert_eq!(note["job_id"], JOB);
    assert_eq!(
        note["author_id"], OLIVIA,
        "no author_email: the workspace owner"
    );
    assert_eq!(note["title"], "Call");
    assert_eq!(note["type"], "call");
    assert_eq!(note["body_html"], "<p>Called back</p>");
    assert_eq!(note["is_private"], false);
    assert!(note.get("company_id").is_none());
    assert_eq!(note["created_at"], note["updated_at"]);
    // The person's notes include it at once, through any of the person's records.
    for row in [LEO_PRIMARY, LEO_JOB_ROW] {
        let sub = app
            .get(&format!("/v1/candidates/{row}/notes"), READ_KEY)
            .await
            .1;
        assert_eq!(sub["data"][0]["id"], id.as_str(), "newest first: {sub}");
        assert_eq!(sub["total_count"], 2);
    }
    // On the primary row: job_id present and null. An accepted member authors it.
    let (_, body) = send(
        &app,
        Method::POST,
        "/v1/notes",
        WRITE_KEY,
        &json!({
            "parent_type": "candidate", "parent_id": LEO_PRIMARY, "body_html": "x",
            "author_email": "RAJ@northwind.example"
        }),
    )
    .await;
    let note = get_data(
        &app,
        &format!("/v1/notes/{}", body["data"]["id"].as_str().unwrap()),
    )
    .await;
    assert_eq!(note["job_id"], Value::Null);
    assert_eq!(note["author_id"], RAJ);
    assert_eq!(note["title"], Value::Null);
    // An invited (never accepted) member does not author: the owner does.
    let (_, body) = send(
        &app,
        Method::POST,
        "/v1/notes",
        WRITE_KEY,
        &json!({
            "parent_type": "contact", "parent_id": HANA, "body_html": "x",
            "author_email": "ivy@northwind.example"
        }),
    )
    .await;
    let note = get_data(
        &app,
        &format!("/v1/notes/{}", body["data"]["id"].as_str().unwrap()),
    )
    .await;
    assert_eq!(note["author_id"], OLIVIA);
    assert_eq!(
        note["company_id"], FABRIKAM,
        "a contact note records the company"
    );
    assert!(note.get("job_id").is_none());
    // Companies and jobs carry neither.
    for (pt, pid) in [("company", FABRIKAM), ("job", JOB)] {
        let (s, body) = send(
            &app,
            Method::POST,
            "/v1/notes",
            WRITE_KEY,
            &json!({
                "parent_type": pt, "parent_id": pid, "body_html": "x"
            }),
        )
        .await;
        assert_eq!(s, 201);
        let note = get_data(
            &app,
            &format!("/v1/notes/{}", body["data"]["id"].as_str().unwrap()),
        )
        .await;
        assert!(
            note.get("job_id").is_none() && note.get("company_id").is_none(),
            "{note}"
        );
    }
    assert_eq!(count(&app, "notes").await, 6);
    // A private note is stored but never shown, and never counted.
    let (s, body) = send(
        &app,
        Method::POST,
        "/v1/notes",
        WRITE_KEY,
        &json!({
            "parent_type": "job", "parent_id": JOB, "body_html": "secret", "is_private": true
        }),
    )
    .await;
    assert_eq!(s, 201);
    let (s, res) = app
        .get(
            &format!("/v1/notes/{}", body["data"]["id"].as_str().unwrap()),
            READ_KEY,
        )
        .await;
    assert_error(s, &res, 404, "NOT_FOUND");
    assert_eq!(count(&app, "notes").await, 6);
}

async fn note_validation(b: Backend) {
    let app = app(b).await;
    let ok = json!({"parent_type": "company", "parent_id": FABRIKAM, "body_html": "x"});
    let with = |k: &str, v: Value| {
        let mut b = ok.clone();
        b[k] = v;
        b
    };
    let without = |k: &str| {
        let mut b = ok.clone();
        b.as_object_mut().unwrap().remove(k);
        b
    };
    let cases: Vec<(Value, &str)> = vec![
        (without("parent_type"), "parent_type"),
        (without("parent_id"), "parent_id"),
        (without("body_html"), "body_html"),
        (with("parent_type", json!("task")), "parent_type"),
        (with("parent_type", json!("Company")), "parent_type"),
        (with("parent_id", json!("not-a-uuid")), "parent_id"),
        (with("parent_id", json!(12)), "parent_id"),
        (
            with("parent_id", json!("00000000-0000-4000-8000-000000000000")),
            "parent_id",
        ),
        (with("parent_id", json!(HANA)), "parent_id"), // a contact, not a company
        (with("body_html", json!(5)), "body_html"),
        (with("body_html", json!("")), "body_html"),
        (with("body_html", Value::Null), "body_html"),
        (with("is_private", json!("true")), "is_private"),
        (with("is_private", json!(1)), "is_private"),
        (with("is_private", Value::Null), "is_private"),
        (with("title", json!(5)), "title"),
        (with("type", json!(["call"])), "type"),
        (with("author_email", json!(7)), "author_email"),
        (with("reference", json!("")), "reference"),
        (with("reference", json!("r".repeat(300))), "reference"),
        (with("colour", json!("red")), "colour"),
        (json!({}), "no fields"),
    ];
    for (body, field) in cases {
        let (s, res) = send(&app, Method::POST, "/v1/notes", WRITE_KEY, &body).await;
        let msg = assert_error(s, &res, 400, "BAD_REQUEST");
        assert!(msg.contains(field), "{body} → {msg}");
    }
    // Bodies that are not a JSON object, or not JSON at all, or too big.
    for (ct, raw) in [
        ("application/json", "[1, 2]".to_string()),
        ("application/json", "{\"parent_type\": ".to_string()),
        ("application/json", "".to_string()),
        ("application/json", "\"text\"".to_string()),
        ("text/plain", ok.to_string()),
        (
            "application/x-www-form-urlencoded",
            "parent_type=company".to_string(),
        ),
        (
            "application/json",
            format!(
                "{{\"parent_type\":\"company\",\"parent_id\":\"{FABRIKAM}\",\"body_html\":\"{}\"}}",
                "x".repeat(2 << 20)
            ),
        ),
    ] {
        let res = app
            .req(Method::POST, "/v1/notes", Some(WRITE_KEY))
            .header("content-type", ct)
            .body(raw.clone())
            .send()
            .await
            .unwrap();
        let (s, body) = json_of(res).await;
        assert_error(s, &body, 400, "BAD_REQUEST");
    }
    let res = app
        .req(Method::POST, "/v1/notes", Some(WRITE_KEY))
        .body(ok.to_string())
        .send()
        .await
        .unwrap();
    let (s, body) = json_of(res).await;
    let msg = assert_error(s, &body, 400, "BAD_REQUEST");
    assert!(msg.contains("Content-Type"), "{msg}");
    // Nothing was written by any of them.
    assert_eq!(count(&app, "notes").await, 1);
    let (s, _) = send(&app, Method::POST, "/v1/notes", WRITE_KEY, &ok).await;
    assert_eq!(s, 201);
}

async fn note_patch_and_delete(b: Backend) {
    let app = app(b).await;
    let path = format!("/v1/notes/{PUBLIC_NOTE}");
    let before = get_data(&app, &path).await;
    let (s, body) = send(
        &app,
        Method::PATCH,
        &path,
        WRITE_KEY,
        &json!({
            "title": "", "body_html": "<p>Updated</p>", "type": null
        }),
    )
    .await;
    assert_eq!(s, 200, "{body}");
    let after = get_data(&app, &path).await;
    assert_eq!(
        body["data"], after,
        "the PATCH answers the note as GET shows it"
    );
    assert_eq!(after["title"], "");
    assert_eq!(after["type"], Value::Null);
    assert_eq!(after["body_html"], "<p>Updated</p>");
    assert_eq!(after["created_at"], before["created_at"]);
    assert!(after["updated_at"].as_str() > before["updated_at"].as_str());
    for (bad, field) in [
        (json!({}), "no fields"),
        (json!({"parent_id": FABRIKAM}), "parent_id"),
        (json!({"is_private": "yes"}), "is_private"),
        (json!({"body_html": null}), "body_html"),
        (json!({"title": 3}), "title"),
    ] {
        let (s, res) = send(&app, Method::PATCH, &path, WRITE_KEY, &bad).await;
        let msg = assert_error(s, &res, 400, "BAD_REQUEST");
        assert!(msg.contains(field), "{bad} → {msg}");
    }
    assert_eq!(
        get_data(&app, &path).await,
        after,
        "refused patches changed nothing"
    );
    // Unknown and malformed ids.
    for p in [
        "/v1/notes/00000000-0000-4000-8000-000000000000",
        "/v1/notes/nope",
    ] {
        let (s, res) = send(&app, Method::PATCH, p, WRITE_KEY, &json!({"title": "t"})).await;
        assert_error(s, &res, 404, "NOT_FOUND");
    }
    // Made private: it disappears, and the answer shows only the id.
    let (s, body) = send(
        &app,
        Method::PATCH,
        &path,
        WRITE_KEY,
        &json!({"is_private": true}),
    )
    .await;
    assert_eq!(s, 200);
    assert_eq!(body["data"], json!({"id": PUBLIC_NOTE}));
    let (s, res) = app.get(&path, READ_KEY).await;
    assert_error(s, &res, 404, "NOT_FOUND");
    assert_eq!(count(&app, "notes").await, 0);
    // Now private, it is out of reach by id: no DELETE either.
    let res = app
        .req(Method::DELETE, &path, Some(WRITE_KEY))
        .send()
        .await
        .unwrap();
    let (s, body) = json_of(res).await;
    assert_error(s, &body, 404, "NOT_FOUND");
    // Delete a visible note, then delete it again.
    let (s, _, body) = app.post_company_note("to delete").await;
    assert_eq!(s, 201, "{body}");
    let path = format!("/v1/notes/{}", body["data"]["id"].as_str().unwrap());
    let res = app
        .req(Method::DELETE, &path, Some(WRITE_KEY))
        .send()
        .await
        .unwrap();
    let (s, body) = json_of(res).await;
    assert_eq!(s, 200);
    assert_eq!(body["data"], json!({"deleted": true}));
    assert_eq!(count(&app, "notes").await, 0);
    let res = app
        .req(Method::DELETE, &path, Some(WRITE_KEY))
        .send()
        .await
        .unwrap();
    let (s, body) = json_of(res).await;
    assert_error(s, &body, 404, "NOT_FOUND");
}

/// A note and a task as the workspace's memory holds them, and as the store holds them
/// (read afresh, as a restart reads them).
async fn held(app: &TestApp, note: &str, task: &str) -> [(Option<Note>, Option<Task>); 2] {
    let (note, task) = (
        Uuid::parse_str(note).unwrap(),
        Uuid::parse_str(task).unwrap(),
    );
    let ws = Uuid::parse_str(WORKSPACE).unwrap();
    let pick = |s: &WorkspaceState| {
        (
            s.notes.get(&note).map(|n| n.raw()),
            s.tasks.get(&task).map(|t| (**t).clone()),
        )
    };
    let memory = pick(&app.registry.handle(ws).unwrap().state());
    let store = &*app.store;
    let w = store
        .workspaces()
        .await
        .unwrap()
        .into_iter()
        .find(|w| w.id == ws)
        .unwrap();
    let stored = pick(&actors::loader::read::read_state(store, w).await.unwrap());
    [memory, stored]
}

/// PATCH or DELETE (no body) of an item path; returns status and JSON body.
async fn write_item(
    app: &TestApp,
    method: &Method,
    path: &str,
    key: &str,
    body: &Value,
) -> (reqwest::StatusCode, Value) {
    if *method == Method::DELETE {
        json_of(
            app.req(Method::DELETE, path, Some(key))
                .send()
                .await
                .unwrap(),
        )
        .await
    } else {
        send(app, method.clone(), path, key, body).await
    }
}

async fn private_items_cannot_be_written_by_id(b: Backend) {
    let app = app(b).await;
    let (s, body) = send(
        &app,
        Method::POST,
        "/v1/tasks",
        WRITE_KEY,
        &json!({
            "parent_type": "company", "parent_id": FABRIKAM, "title": "secret",
            "is_private": true, "reference": "private-task"
        }),
    )
    .await;
    assert_eq!(s, 201, "{body}");
    assert_eq!(
        body["data"].as_object().unwrap().len(),
        1,
        "only the id: {body}"
    );
    let task = body["data"]["id"].as_str().unwrap().to_string();
    let before = held(&app, PRIVATE_NOTE, &task).await;
    for (note, task) in &before {
        assert!(note.as_ref().is_some_and(|n| n.is_private), "{note:?}");
        assert!(task.as_ref().is_some_and(|t| t.is_private), "{task:?}");
    }
    assert_eq!(before[0], before[1], "memory is what the store holds");
    let (_, counts) = app.get("/v1/counts", READ_KEY).await;

    // Publishing, editing or deleting a private item by id answers exactly as for an
    // unknown id (the message differs only by the id it quotes), whatever the scopes.
    let every_scope = records_key(&app).await;
    for key in [WRITE_KEY, every_scope.as_str()] {
        for (entity, id) in [("notes", PRIVATE_NOTE), ("tasks", task.as_str())] {
            for (method, body) in [
                (Method::PATCH, json!({"is_private": false})),
                (
                    Method::PATCH,
                    json!({"title": "changed", "is_private": true}),
                ),
                (Method::PATCH, json!({"body_html": "<p>changed</p>"})),
                (Method::DELETE, Value::Null),
            ] {
                let path = format!("/v1/{entity}/{id}");
                let (s, res) = write_item(&app, &method, &path, key, &body).await;
                let msg = assert_error(s, &res, 404, "NOT_FOUND");
                let unknown = format!("/v1/{entity}/{UNKNOWN}");
                let (s, res) = write_item(&app, &method, &unknown, key, &body).await;
                let unknown_msg = assert_error(s, &res, 404, "NOT_FOUND");
                assert_eq!(msg.replace(id, UNKNOWN), unknown_msg, "{method} {path}");
            }
        }
    }

    // Nothing changed: still hidden everywhere, and held as before in memory and store.
    for path in [
        format!("/v1/notes/{PRIVATE_NOTE}"),
        format!("/v1/tasks/{task}"),
    ] {
        let (s, res) = app.get(&path, READ_KEY).await;
        assert_error(s, &res, 404, "NOT_FOUND");
    }
    for (entity, id) in [("notes", PRIVATE_NOTE), ("tasks", task.as_str())] {
        let (records, _) = app.paginate(entity, "limit=500", READ_KEY).await;
        assert!(
            records.iter().all(|r| r["id"] != id),
            "{entity}: {records:?}"
        );
    }
    let (_, sub) = app
        .get(&format!("/v1/contacts/{HANA}/notes"), READ_KEY)
        .await;
    assert_eq!((&sub["data"], &sub["total_count"]), (&json!([]), &json!(0)));
    assert_eq!(
        app.get("/v1/counts", READ_KEY).await.1["data"],
        counts["data"]
    );
    assert_eq!(held(&app, PRIVATE_NOTE, &task).await, before);

    // A create repeating a private item's `reference` still updates it, answering only
    // the id.
    let (s, body) = send(
        &app,
        Method::POST,
        "/v1/tasks",
        WRITE_KEY,
        &json!({
            "parent_type": "company", "parent_id": FABRIKAM, "title": "still secret",
            "is_private": true, "reference": "private-task"
        }),
    )
    .await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(body["data"], json!({"id": task}));
    for (_, t) in held(&app, PRIVATE_NOTE, &task).await {
        let t = t.unwrap();
        assert_eq!(t.title.as_deref(), Some("still secret"));
        assert!(t.is_private);
    }
    // Likewise for a note, which stays out of reach by id.
    let private_note = |text: &str| json!({"parent_type": "company", "parent_id": FABRIKAM, "body_html": text, "is_private": true, "reference": "private-note"});
    let (s, first) = send(
        &app,
        Method::POST,
        "/v1/notes",
        WRITE_KEY,
        &private_note("one"),
    )
    .await;
    assert_eq!(s, 201, "{first}");
    let (s, again) = send(
        &app,
        Method::POST,
        "/v1/notes",
        WRITE_KEY,
        &private_note("two"),
    )
    .await;
    assert_eq!(s, 200, "{again}");
    assert_eq!(again["data"], first["data"]);
    let note = first["data"]["id"].as_str().unwrap();
    for (n, _) in held(&app, note, &task).await {
        let n = n.unwrap();
        assert_eq!(n.body_html.as_deref(), Some("two"));
        assert!(n.is_private);
    }
    let path = format!("/v1/notes/{note}");
    let (s, res) = send(
        &app,
        Method::PATCH,
        &path,
        WRITE_KEY,
        &json!({"is_private": false}),
    )
    .await;
    assert_error(s, &res, 404, "NOT_FOUND");
    assert_eq!(count(&app, "notes").await, 1);
}

async fn references_are_idempotent(b: Backend) {
    let app = app(b).await;
    let body = |text: &str| json!({"parent_type": "company", "parent_id": FABRIKAM, "body_html": text, "reference": "crm-1"});
    let (s1, first) = send(&app, Method::POST, "/v1/notes", WRITE_KEY, &body("one")).await;
    let (s2, second) = send(&app, Method::POST, "/v1/notes", WRITE_KEY, &body("two")).await;
    assert_eq!((s1.as_u16(), s2.as_u16()), (201, 200));
    assert_eq!(first["data"]["id"], second["data"]["id"]);
    let note = get_data(
        &app,
        &format!("/v1/notes/{}", first["data"]["id"].as_str().unwrap()),
    )
    .await;
    assert_eq!(
        note["body_html"], "two",
        "repeating the reference updated the note"
    );
    assert_eq!(count(&app, "notes").await, 2);
    // The length limit counts characters, as the OpenAPI document's maxLength does: 256
    // two-byte characters are a reference, 257 are not.
    let long = |n: usize| json!({"parent_type": "company", "parent_id": FABRIKAM, "body_html": "x", "reference": "é".repeat(n)});
    let (s, body) = send(&app, Method::POST, "/v1/notes", WRITE_KEY, &long(256)).await;
    assert_eq!(s.as_u16(), 201, "{body}");
    let (s, body) = send(&app, Method::POST, "/v1/notes", WRITE_KEY, &long(257)).await;
    assert!(assert_error(s, &body, 400, "BAD_REQUEST").starts_with("reference"));
    assert_eq!(count(&app, "notes").await, 3);
    // Concurrent retries of a new reference: one record, one id.
    let mut handles = Vec::new();
    for i in 0..16 {
        let client = app.client.clone();
        let url = app.url("/v1/notes");
        handles.push(actix_web::rt::spawn(async move {
            let res = client
                .post(url)
                .bearer_auth(WRITE_KEY)
                .json(&json!({"parent_type": "job", "parent_id": JOB, "body_html": format!("try {i}"), "reference": "retry-9"}))
                .send()
                .await
                .unwrap();
            let status = res.status().as_u16();
            let body: Value = res.json().await.unwrap();
            (status, body["data"]["id"].as_str().unwrap().to_string())
        }));
    }
    let mut ids = Vec::new();
    let mut created = 0;
    for h in handles {
        let (status, id) = h.await.unwrap();
        created += (status == 201) as u32;
        ids.push(id);
    }
    assert_eq!(created, 1);
    ids.dedup();
    assert_eq!(ids.len(), 1);
    assert_eq!(count(&app, "notes").await, 4);
    // Tasks keep their own references: the same string makes a task, not a note update.
    let (s, t) = send(
        &app,
        Method::POST,
        "/v1/tasks",
        WRITE_KEY,
        &json!({
            "parent_type": "company", "parent_id": FABRIKAM, "title": "t", "reference": "crm-1"
        }),
    )
    .await;
    assert_eq!(s, 201);
    assert_ne!(t["data"]["id"], first["data"]["id"]);
}

async fn tasks(b: Backend) {
    let app = app(b).await;
    let (s, body) = send(&app, Method::POST, "/v1/tasks", WRITE_KEY, &json!({
        "parent_type": "candidate", "parent_id": LEO_JOB_ROW, "title": "Chase references",
        "due_date": "2026-12-01", "owner_email": "raj@northwind.example", "body_html": "<p>two</p>"
    }))
    .await;
    assert_eq!(s, 201, "{body}");
    let task = body["data"].clone();
    let id = task["id"].as_str().unwrap().to_string();
    assert_eq!(task, get_data(&app, &format!("/v1/tasks/{id}")).await);
    assert_eq!(task["status"], "open");
    assert_eq!(task["completed_at"], Value::Null);
    assert_eq!(task["owner_id"], RAJ);
    assert_eq!(task["due_date"], "2026-12-01");
    assert_eq!(task["parent_id"], LEO_PRIMARY, "the canonical person");
    let path = format!("/v1/tasks/{id}");
    // Completed: completed_at in step with the write.
    let (s, done) = send(
        &app,
        Method::PATCH,
        &path,
        WRITE_KEY,
        &json!({"status": "completed"}),
    )
    .await;
    assert_eq!(s, 200);
    assert_eq!(done["data"]["status"], "completed");
    assert_eq!(done["data"]["completed_at"], done["data"]["updated_at"]);
    // Reopened: cleared.
    let (_, open) = send(
        &app,
        Method::PATCH,
        &path,
        WRITE_KEY,
        &json!({"status": "open", "due_date": null, "owner_email": null}),
    )
    .await;
    assert_eq!(open["data"]["status"], "open");
    assert_eq!(open["data"]["completed_at"], Value::Null);
    assert_eq!(open["data"]["due_date"], Value::Null);
    assert_eq!(open["data"]["owner_id"], Value::Null);
    for (bad, field) in [
        (json!({"status": "cancelled"}), "status"),
        (json!({"status": "done"}), "status"),
        (json!({"due_date": "01/12/2026"}), "due_date"),
        (json!({"due_date": "2026-02-30"}), "due_date"),
        (json!({"due_date": 20261201}), "due_date"),
        (
            json!({"owner_email": "nobody@northwind.example"}),
            "owner_email",
        ),
        (
            json!({"owner_email": "ivy@northwind.example"}),
            "owner_email",
        ),
        (json!({"title": null}), "title"),
        (json!({"is_private": null}), "is_private"),
        (
            json!({"completed_at": "2026-01-01T00:00:00Z"}),
            "completed_at",
        ),
    ] {
        let (s, res) = send(&app, Method::PATCH, &path, WRITE_KEY, &bad).await;
        let msg = assert_error(s, &res, 400, "BAD_REQUEST");
        assert!(msg.contains(field), "{bad} → {msg}");
    }
    for (bad, field) in [
        (
            json!({"parent_type": "job", "parent_id": JOB, "title": "t"}),
            "parent_type",
        ),
        (
            json!({"parent_type": "company", "parent_id": FABRIKAM}),
            "title",
        ),
        (
            json!({"parent_type": "company", "parent_id": FABRIKAM, "title": "t", "due_date": "tomorrow"}),
            "due_date",
        ),
        (
            json!({"parent_type": "company", "parent_id": FABRIKAM, "title": "t", "type": "x"}),
            "type",
        ),
    ] {
        let (s, res) = send(&app, Method::POST, "/v1/tasks", WRITE_KEY, &bad).await;
        let msg = assert_error(s, &res, 400, "BAD_REQUEST");
        assert!(msg.contains(field), "{bad} → {msg}");
    }
    assert_eq!(count(&app, "tasks").await, 2);
    // Delete.
    let res = app
        .req(
            Method::DELETE,
            &format!("/v1/tasks/{TASK}"),
            Some(WRITE_KEY),
        )
        .send()
        .await
        .unwrap();
    let (s, body) = json_of(res).await;
    assert_eq!(
        (s.as_u16(), &body["data"]),
        (200, &json!({"deleted": true}))
    );
    assert_eq!(count(&app, "tasks").await, 1);
}

async fn candidate_edits_apply_to_the_person(b: Backend) {
    let app = app(b).await;
    let key = records_key(&app).await;
    let (s, body) = send(
        &app,
        Method::PATCH,
        &format!("/v1/candidates/{LEO_JOB_ROW}"),
        &key,
        &json!({
            "name": "Leo Lambert-Ng", "phone": "07700 900999", "email": "leo@new.example",
            "current_salary_amount": 72500.5, "current_salary_currency": "EUR", "job_title": null,
            "owning_recruiter_id": OLIVIA
        }),
    )
    .await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(
        body["data"],
        get_data(&app, &format!("/v1/candidates/{LEO_JOB_ROW}")).await
    );
    for row in [LEO_PRIMARY, LEO_JOB_ROW] {
        let c = get_data(&app, &format!("/v1/candidates/{row}")).await;
        assert_eq!(c["name"], "Leo Lambert-Ng", "{row}");
        assert_eq!(c["phone"], "+447700900999");
        assert_eq!(c["phone_as_entered"], "07700 900999");
        assert_eq!(c["emails"], json!(["leo@new.example"]));
        assert_eq!(c["salary"]["current_amount"], 72500.5);
        assert_eq!(c["salary"]["current_currency"], "EUR");
        assert_eq!(c["salary"]["current_text"], "70k + bonus", "untouched");
        assert_eq!(c["job_title"], Value::Null);
    }
    // The owner belongs to the row edited.
    assert_eq!(
        get_data(&app, &format!("/v1/candidates/{LEO_JOB_ROW}")).await["owning_recruiter_id"],
        OLIVIA
    );
    assert_eq!(
        get_data(&app, &format!("/v1/candidates/{LEO_PRIMARY}")).await["owning_recruiter_id"],
        Value::Null
    );
    // The indexes follow at once.
    let s = get_data(&app, "/v1/search/phone?number=07700900999").await;
    assert_eq!(s["candidates"][0]["person_id"], LEO_PERSON);
    assert_eq!(s["candidates"][0]["name"], "Leo Lambert-Ng");
    assert_eq!(
        get_data(&app, "/v1/search/phone?number=07700900123").await["match_confidence"],
        "none"
    );
    assert_eq!(
        get_data(&app, "/v1/search/email?address=LEO@new.example").await["match_confidence"],
        "exact"
    );
    assert_eq!(
        get_data(&app, "/v1/search/email?address=leo.lambert@mail.example").await
            ["match_confidence"],
        "none"
    );
    let path = format!("/v1/candidates/{LEO_PRIMARY}");
    for (bad, field) in [
        (json!({"mobile": "07700 900000"}), "mobile"),
        (json!({"status": "placed"}), "status"),
        (json!({"name": ""}), "name"),
        (json!({"name": 5}), "name"),
        (json!({"email": "not-an-address"}), "email"),
        (json!({"phone": "none"}), "phone"),
        (
            json!({"current_salary_amount": "70000"}),
            "current_salary_amount",
        ),
        (
            json!({"current_salary_amount": -1}),
            "current_salary_amount",
        ),
        (
            json!({"expected_salary_currency": "gbp"}),
            "expected_salary_currency",
        ),
        (
            json!({"expected_salary_currency": "XXX"}),
            "expected_salary_currency",
        ),
        (
            json!({"owning_recruiter_id": "00000000-0000-4000-8000-000000000000"}),
            "owning_recruiter_id",
        ),
        (json!({"owning_recruiter_id": "raj"}), "owning_recruiter_id"),
        (json!({}), "no fields"),
    ] {
        let (s, res) = send(&app, Method::PATCH, &path, &key, &bad).await;
        let msg = assert_error(s, &res, 400, "BAD_REQUEST");
        assert!(msg.contains(field), "{bad} → {msg}");
    }
    let (s, res) = send(
        &app,
        Method::PATCH,
        "/v1/candidates/00000000-0000-4000-8000-000000000000",
        &key,
        &json!({"name": "x"}),
    )
    .await;
    assert_error(s, &res, 404, "NOT_FOUND");
}

async fn contact_company_and_job_edits(b: Backend) {
    let app = app(b).await;
    let key = records_key(&app).await;
    // A second company to move Hana to.
    let mut s = example();
    s["companies"].as_array_mut().unwrap().push(json!({
        "id": "20000000-0000-4000-8000-000000000001", "name": "Contoso",
        "created_at": "2026-09-01T09:00:00.000Z", "updated_at": "2026-09-01T09:00:00.000Z"
    }));
    app.import_ok(&s).await;
    let contact = format!("/v1/contacts/{HANA}");
    let (st, body) = send(&app, Method::PATCH, &contact, &key, &json!({
        "company_id": "20000000-0000-4000-8000-000000000001", "phone": "+44 20 7946 0123", "owning_recruiter_id": null
    }))
    .await;
    assert_eq!(st, 200, "{body}");
    assert_eq!(body["data"]["company"], "Contoso");
    assert_eq!(body["data"]["phone"], "+442079460123");
    assert_eq!(body["data"]["owning_recruiter_id"], Value::Null);
    for (bad, field) in [
        (json!({"company_id": null}), "company_id"),
        (
            json!({"company_id": "00000000-0000-4000-8000-000000000000"}),
            "company_id",
        ),
        (json!({"mobile": null}), "mobile"),
    ] {
        let (st, res) = send(&app, Method::PATCH, &contact, &key, &bad).await;
        let msg = assert_error(st, &res, 400, "BAD_REQUEST");
        assert!(msg.contains(field), "{bad} → {msg}");
    }
    // A company's new name shows on its contacts and jobs at once.
    let (st, body) = send(
        &app,
        Method::PATCH,
        &format!("/v1/companies/{FABRIKAM}"),
        &key,
        &json!({"name": "Fabrikam Ltd"}),
    )
    .await;
    assert_eq!(st, 200);
    assert_eq!(body["data"]["name"], "Fabrikam Ltd");
    assert_eq!(
        get_data(&app, &format!("/v1/jobs/{JOB}")).await["company"],
        "Fabrikam Ltd"
    );
    // Jobs: live false archives and unpublishes; live true restores.
    let job = format!("/v1/jobs/{JOB}");
    let (_, body) = send(
        &app,
        Method::PATCH,
        &job,
        &key,
        &json!({"live": false, "salary_amount": 90000, "salary_currency": "GBP"}),
    )
    .await;
    let j = &body["data"];
    assert_eq!(
        (&j["live"], &j["is_archived"], &j["published"]),
        (&json!(false), &json!(true), &json!(false))
    );
    assert_eq!(j["salary"]["amount"], 90000);
    let (_, body) = send(&app, Method::PATCH, &job, &key, &json!({"live": true})).await;
    let j = &body["data"];
    assert_eq!(
        (&j["live"], &j["is_archived"], &j["published"]),
        (&json!(true), &json!(false), &json!(true))
    );
    // Clearing the assigned recruiter falls back to the job's creator.
    let (_, body) = send(
        &app,
        Method::PATCH,
        &job,
        &key,
        &json!({"owning_recruiter_id": null}),
    )
    .await;
    assert_eq!(body["data"]["owning_recruiter_id"], OLIVIA);
    for (bad, field) in [
        (json!({"live": "false"}), "live"),
        (json!({"salary_amount": -5}), "salary_amount"),
        (json!({"salary_currency": "POUND"}), "salary_currency"),
        (json!({"status": "closed"}), "status"),
        (json!({"company_id": 5}), "company_id"),
    ] {
        let (st, res) = send(&app, Method::PATCH, &job, &key, &bad).await;
        let msg = assert_error(st, &res, 400, "BAD_REQUEST");
        assert!(msg.contains(field), "{bad} → {msg}");
    }
    // An edit moves the record to the end of the sync order.
    let (records, _) = app.paginate("jobs", "limit=500", READ_KEY).await;
    assert_eq!(records.last().unwrap()["id"], JOB);
}

async fn scopes_and_methods(b: Backend) {
    let app = app(b).await;
    let note = json!({"parent_type": "company", "parent_id": FABRIKAM, "body_html": "x"});
    let task = json!({"parent_type": "company", "parent_id": FABRIKAM, "title": "x"});
    let writes: Vec<(Method, String, Value)> = vec![
        (Method::POST, "/v1/notes".into(), note.clone()),
        (
            Method::PATCH,
            format!("/v1/notes/{PUBLIC_NOTE}"),
            json!({"title": "x"}),
        ),
        (
            Method::DELETE,
            format!("/v1/notes/{PUBLIC_NOTE}"),
            json!({}),
        ),
        (Method::POST, "/v1/tasks".into(), task.clone()),
        (
            Method::PATCH,
            format!("/v1/tasks/{TASK}"),
            json!({"title": "x"}),
        ),
        (Method::DELETE, format!("/v1/tasks/{TASK}"), json!({})),
        (
            Method::PATCH,
            format!("/v1/candidates/{LEO_PRIMARY}"),
            json!({"name": "x"}),
        ),
        (
            Method::PATCH,
            format!("/v1/contacts/{HANA}"),
            json!({"name": "x"}),
        ),
        (
            Method::PATCH,
            format!("/v1/companies/{FABRIKAM}"),
            json!({"name": "x"}),
        ),
        (
            Method::PATCH,
            format!("/v1/jobs/{JOB}"),
            json!({"title": "x"}),
        ),
    ];
    for (m, path, body) in &writes {
        let (s, res) = send(&app, m.clone(), path, READ_KEY, body).await;
        assert_error(s, &res, 403, "FORBIDDEN_SCOPE");
        let res = app
            .req(m.clone(), path, None)
            .json(body)
            .send()
            .await
            .unwrap();
        let (s, res) = json_of(res).await;
        assert_error(s, &res, 401, "UNAUTHORIZED");
    }
    // The write key lacks records:write.
    let (s, res) = send(
        &app,
        Method::PATCH,
        &format!("/v1/jobs/{JOB}"),
        WRITE_KEY,
        &json!({"title": "x"}),
    )
    .await;
    assert_error(s, &res, 403, "FORBIDDEN_SCOPE");
    // Methods not served on existing paths.
    for (m, path, allow) in [
        (Method::POST, "/v1/candidates".to_string(), "GET"),
        (Method::DELETE, "/v1/notes".to_string(), "GET, POST"),
        (Method::PATCH, format!("/v1/users/{OLIVIA}"), "GET"),
        (
            Method::PATCH,
            format!("/v1/applications/{LEO_JOB_ROW}"),
            "GET",
        ),
        (
            Method::DELETE,
            format!("/v1/candidates/{LEO_PRIMARY}"),
            "GET, PATCH",
        ),
        (
            Method::PUT,
            format!("/v1/notes/{PUBLIC_NOTE}"),
            "GET, PATCH, DELETE",
        ),
    ] {
        let res = app
            .req(m.clone(), &path, Some(WRITE_KEY))
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.headers()["allow"], allow, "{m} {path}");
        let (s, body) = json_of(res).await;
        assert_error(s, &body, 405, "METHOD_NOT_ALLOWED");
    }
}

async fn writes_wait_for_the_store(b: Backend) {
    let app = app(b).await;
    app.store.close().await;
    let (s, retry, body) = app.post_company_note("x").await;
    assert_error(
        reqwest::StatusCode::from_u16(s).unwrap(),
        &body,
        503,
        "SERVICE_UNAVAILABLE",
    );
    assert!(retry.is_some_and(|r| r.parse::<u64>().is_ok()));
    // Memory is untouched, and reads still answer.
    assert_eq!(count(&app, "notes").await, 1);
    let (s, _) = app.get("/v1/notes", READ_KEY).await;
    assert_eq!(s, 200);
}

store_test!(
    notes_land_where_the_spec_says,
    note_validation,
    note_patch_and_delete,
    private_items_cannot_be_written_by_id,
    references_are_idempotent,
    tasks,
    candidate_edits_apply_to_the_person,
    contact_company_and_job_edits,
    scopes_and_methods,
    writes_wait_for_the_store,
);

/// A write body that trickles (half of it, then nothing) is cut off after
/// `BODY_DEADLINE` with a 400 saying so, and nothing is written.
#[actix_web::test]
async fn a_body_that_never_arrives_is_refused_in_bounded_time() {
    let app = spawn_app(Backend::Sqlite).await;
    app.import_ok(&example()).await;
    let body = serde_json::to_vec(
        &json!({"parent_type": "company", "parent_id": FABRIKAM, "body_html": "never whole"}),
    )
    .unwrap();
    let first = body[..body.len() / 2].to_vec();
    let stalled = futures_util::stream::once(async move { Ok::<_, std::io::Error>(first) })
        .chain(futures_util::stream::pending());
    let started = std::time::Instant::now();
    let send = app
        .req(Method::POST, "/v1/notes", Some(WRITE_KEY))
        .header("content-type", "application/json")
        .header("content-length", body.len())
        .body(reqwest::Body::wrap_stream(stalled))
        .send();
    let res = tokio::time::timeout(std::time::Duration::from_secs(30), send)
        .await
        .expect("an answer while the body is still awaited")
        .unwrap();
    let waited = started.elapsed();
    let (status, answer) = json_of(res).await;
    let message = assert_error(status, &answer, 400, "BAD_REQUEST");
    assert!(message.contains("did not arrive within 10 s"), "{message}");
    assert!(
        waited >= std::time::Duration::from_secs(10) && waited < std::time::Duration::from_secs(20),
        "answered after {waited:?}"
    );
    let (_, notes) = app.get("/v1/notes?limit=100", READ_KEY).await;
    assert!(!notes.to_string().contains("never whole"));
}

/// References are scoped per key: a second client repeating the reference of a private
/// note gets a note of its own (201, another id), learning nothing of the first; the
/// first client's retry still reaches its own note (200, the same id).
async fn another_keys_reference_never_reaches_a_private_note(b: Backend) {
    let app = spawn_app(b).await;
    app.import_ok(&example()).await;
    let other = app.key_with_scopes(&["notes:write"]).await;
    let post = |key: String, private: bool, text: &'static str| {
        let app = &app;
        async move {
            let body = json!({"parent_type": "company", "parent_id": FABRIKAM,
                              "body_html": text, "is_private": private,
                              "reference": "crm-private-1"});
            let res = app
                .req(Method::POST, "/v1/notes", Some(&key))
                .json(&body)
                .send()
                .await
                .unwrap();
            let (s, v) = json_of(res).await;
            (
                s.as_u16(),
                v["data"]["id"].as_str().unwrap_or_default().to_string(),
            )
        }
    };
    let (s, private_id) = post(WRITE_KEY.to_string(), true, "<p>private</p>").await;
    assert_eq!(s, 201);
    let (s, other_id) = post(other.clone(), false, "<p>another client</p>").await;
    assert_eq!(s, 201, "another key's reference creates its own note");
    assert_ne!(
        other_id, private_id,
        "the private note's id is not revealed"
    );
    let (s, again) = post(WRITE_KEY.to_string(), true, "<p>private, retried</p>").await;
    assert_eq!((s, again.as_str()), (200, private_id.as_str()));
    let (s, again) = post(other, false, "<p>another client, retried</p>").await;
    assert_eq!((s, again.as_str()), (200, other_id.as_str()));
}

store_test!(another_keys_reference_never_reaches_a_private_note);
