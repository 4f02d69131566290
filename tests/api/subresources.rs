//! `GET /v1/{entity}/{id}/notes` and `GET /v1/{entity}/{id}/attachments`: whole persons
//! for candidates and applications, newest first, `limit` and `total_count`, private notes
//! never counted, unknown ids empty, unsupported entities 400.

use crate::helpers::*;
use reqwest::Method;
use serde_json::{json, Value};

const LEO_PRIMARY: &str = "a214ca67-7691-5c62-8910-a410373e10c9";
const LEO_JOB_ROW: &str = "b509f583-def1-5a25-9cb1-a1532b926c94";
const CONTACT: &str = "c39ca419-8ea8-58e1-a02b-11d9dec22eb3";
const COMPANY: &str = "71ff7925-38fa-57bd-b38e-c2e5e183f050";
const JOB: &str = "2fae0fc8-6eee-55da-8a7e-f15794b7515f";
const RAJ: &str = "0986a580-8fc6-5461-afb0-b69c0a512919";
/// The example's note on Leo's primary row (2026-09-15T14:30).
const LEO_NOTE: &str = "f24845c5-af3b-5f5c-8fe0-e0ed4e993ef7";
/// The example's private note on the contact.
const PRIVATE_NOTE: &str = "05ace384-620b-5866-bfb7-3cdd82c2fe5e";
const CV: &str = "cv:91b2d50e-a6b0-5581-b491-530642265a44";
const TERMS: &str = "clientfile:153147d7-ad43-526a-a42c-bd7e89dcfc12";
/// A second person, added by [`with_mia`].
const MIA: &str = "6d1b1a3e-0000-4000-8000-00000000a001";

fn uuid(n: u64) -> String {
    format!("00000000-0000-4000-8000-{n:012x}")
}

fn note(id: &str, parent_type: &str, parent_id: &str, created: &str) -> Value {
    json!({
        "id": id, "parent_type": parent_type, "parent_id": parent_id, "title": "t",
        "body_html": "<p>b</p>", "type": null, "is_private": false, "author_id": RAJ,
        "created_at": created, "updated_at": created
    })
}

fn private(mut n: Value) -> Value {
    n["is_private"] = json!(true);
    n
}

fn attachment(id: &str, parent_type: &str, parent_id: &str, created: &str) -> Value {
    json!({
        "id": id, "parent_type": parent_type, "parent_id": parent_id, "filename": "f.txt",
        "content_type": "text/plain", "kind": "document", "storage_ref": "files/f.txt",
        "created_at": created, "updated_at": created
    })
}

/// The example plus a second person (one primary row) with a note of her own.
fn with_mia() -> Value {
    let mut snap = example();
    let mut mia = snap["candidates"][0].clone();
    mia["id"] = json!(MIA);
    mia["person_id"] = json!("6d1b1a3e-0000-4000-8000-00000000b001");
    mia["name"] = json!("Mia Moss");
    mia["email"] = json!("mia@mail.example");
    mia["phone"] = json!("07700 900999");
    snap["candidates"].as_array_mut().unwrap().push(mia);
    snap["notes"].as_array_mut().unwrap().push(note(
        &uuid(900),
        "candidate",
        MIA,
        "2026-10-09T00:00:00Z",
    ));
    snap
}

fn delta(snap: &Value) -> Value {
    json!({"format": "recruit-snapshot/1", "workspace": snap["workspace"].clone()})
}

async fn app_with(b: Backend, snapshot: &Value) -> TestApp {
    let app = spawn_app(b).await;
    app.import_ok(snapshot).await;
    app
}

/// A sub-resource answer: exactly `data`, `total_count` and `request_id`.
async fn sub(app: &TestApp, path: &str) -> (Vec<Value>, u64) {
    let (s, body) = app.get(path, READ_KEY).await;
    assert_eq!(s, 200, "{path}: {body}");
    let obj = body.as_object().unwrap();
    assert_eq!(
        obj.keys().map(String::as_str).collect::<Vec<_>>(),
        ["data", "request_id", "total_count"],
        "{path}: {body}"
    );
    assert!(body["request_id"].as_str().unwrap().starts_with("req_"));
    (
        body["data"].as_array().unwrap().clone(),
        body["total_count"].as_u64().unwrap(),
    )
}

fn ids(items: &[Value]) -> Vec<&str> {
    items.iter().map(|v| v["id"].as_str().unwrap()).collect()
}

async fn notes_cover_the_whole_person(b: Backend) {
    let mut snap = with_mia();
    let notes = snap["notes"].as_array_mut().unwrap();
    notes.push(note(
        &uuid(1),
        "candidate",
        LEO_JOB_ROW,
        "2026-10-02T09:00:00Z",
    ));
    notes.push(note(
        &uuid(2),
        "candidate",
        LEO_PRIMARY,
        "2026-09-01T10:00:00Z",
    ));
    notes.push(private(note(
        &uuid(3),
        "candidate",
        LEO_JOB_ROW,
        "2026-10-05T00:00:00Z",
    )));
    let app = app_with(b, &snap).await;
    let want = [uuid(1), LEO_NOTE.to_string(), uuid(2)];
    let mut seen = Vec::new();
    for path in [
        format!("/v1/candidates/{LEO_PRIMARY}/notes"),
        format!("/v1/candidates/{LEO_JOB_ROW}/notes"),
        format!("/v1/applications/{LEO_JOB_ROW}/notes"),
        format!("/v1/candidates/{LEO_PRIMARY}/notes?sort=-created_at"),
    ] {
        let (data, total) = sub(&app, &path).await;
        assert_eq!(total, 3, "{path}: the private note is not counted");
        assert_eq!(ids(&data), want, "{path}: newest first, whole person");
        seen.push(data);
    }
    assert!(
        seen.windows(2).all(|w| w[0] == w[1]),
        "the same set every way"
    );
    // parent_id says which row each note hangs on; items are the notes as shown by id.
    let parents: Vec<&str> = seen[0]
        .iter()
        .map(|n| n["parent_id"].as_str().unwrap())
        .collect();
    assert_eq!(parents, [LEO_JOB_ROW, LEO_PRIMARY, LEO_PRIMARY]);
    for n in &seen[0] {
        let (s, one) = app
            .get(
                &format!("/v1/notes/{}", n["id"].as_str().unwrap()),
                READ_KEY,
            )
            .await;
        assert_eq!(s, 200);
        assert_eq!(&one["data"], n);
    }
    // Another person's notes are hers alone.
    let (data, total) = sub(&app, &format!("/v1/candidates/{MIA}/notes")).await;
    assert_eq!((ids(&data), total), (vec![uuid(900).as_str()], 1));
}

async fn other_records_list_only_their_own_notes(b: Backend) {
    let mut snap = example();
    let notes = snap["notes"].as_array_mut().unwrap();
    notes.push(note(&uuid(1), "company", COMPANY, "2026-09-20T00:00:00Z"));
    notes.push(note(&uuid(2), "job", JOB, "2026-09-21T00:00:00Z"));
    notes.push(note(&uuid(3), "contact", CONTACT, "2026-09-22T00:00:00Z"));
    notes.push(private(note(
        &uuid(4),
        "company",
        COMPANY,
        "2026-09-23T00:00:00Z",
    )));
    // A candidate note about the job is the candidate's, not the job's.
    let mut about_job = note(&uuid(5), "candidate", LEO_JOB_ROW, "2026-09-24T00:00:00Z");
    about_job["job_id"] = json!(JOB);
    notes.push(about_job);
    let app = app_with(b, &snap).await;
    for (path, want) in [
        (format!("/v1/companies/{COMPANY}/notes"), uuid(1)),
        (format!("/v1/jobs/{JOB}/notes"), uuid(2)),
        (format!("/v1/contacts/{CONTACT}/notes"), uuid(3)),
    ] {
        let (data, total) = sub(&app, &path).await;
        assert_eq!((ids(&data), total), (vec![want.as_str()], 1), "{path}");
    }
    let (data, _) = sub(&app, &format!("/v1/contacts/{CONTACT}/notes")).await;
    assert_eq!(
        data[0]["company_id"], COMPANY,
        "contact notes carry company_id"
    );
    assert!(data[0].get("job_id").is_none());
    assert!(!ids(&data).contains(&PRIVATE_NOTE));
}

async fn notes_limit_and_sort(b: Backend) {
    let mut snap = example();
    let notes = snap["notes"].as_array_mut().unwrap();
    // 502 notes on the company, one per minute, inserted in a scrambled order.
    for i in (0..502u64).map(|i| (i * 211) % 502) {
        let at = format!("2026-09-20T{:02}:{:02}:00Z", i / 60, i % 60);
        notes.push(note(&uuid(1000 + i), "company", COMPANY, &at));
    }
    let app = app_with(b, &snap).await;
    let base = format!("/v1/companies/{COMPANY}/notes");
    let (data, total) = sub(&app, &base).await;
    assert_eq!((data.len(), total), (100, 502), "default limit 100");
    let newest: Vec<String> = (0..100).map(|i| uuid(1000 + 501 - i)).collect();
    assert_eq!(ids(&data), newest);
    let (data, total) = sub(&app, &format!("{base}?limit=3")).await;
    assert_eq!(
        (ids(&data), total),
        (vec![&*uuid(1501), &*uuid(1500), &*uuid(1499)], 502)
    );
    for clamped in ["500", "501", "100000", "99999999999999999999999"] {
        let (data, total) = sub(&app, &format!("{base}?limit={clamped}")).await;
        assert_eq!((data.len(), total), (500, 502), "limit={clamped}");
    }
    let (data, _) = sub(&app, &format!("{base}?limit=007")).await;
    assert_eq!(data.len(), 7);
    for bad in [
        "limit=0",
        "limit=",
        "limit=2.5e2",
        "limit=%2B250",
        "limit=250.0",
        "limit=%20250",
        "limit=-1",
        "limit=ten",
        "limit=1&limit=2",
        "sort=created_at",
        "sort=updated_at",
        "sort=-updated_at",
        "sort=",
        "sort=-created_at&sort=-created_at",
        "limit=%zz",
    ] {
        let (s, body) = app.get(&format!("{base}?{bad}"), READ_KEY).await;
        assert_error(s, &body, 400, "BAD_REQUEST");
    }
}

async fn attachments_cover_the_whole_person(b: Backend) {
    let mut snap = with_mia();
    let atts = snap["attachments"].as_array_mut().unwrap();
    atts.push(attachment(
        "file:leo-later",
        "candidate",
        LEO_JOB_ROW,
        "2026-10-03T00:00:00Z",
    ));
    atts.push(attachment(
        "cvdoc:leo-earlier",
        "candidate",
        LEO_PRIMARY,
        "2026-08-20T00:00:00Z",
    ));
    atts.push(attachment(
        "file:mia",
        "candidate",
        MIA,
        "2026-10-04T00:00:00Z",
    ));
    atts.push(attachment(
        "clientfile:newer",
        "company",
        COMPANY,
        "2026-10-01T00:00:00Z",
    ));
    let app = app_with(b, &snap).await;
    // The cv takes its row's created_at (2026-09-01T09:00).
    let want = ["file:leo-later", CV, "cvdoc:leo-earlier"];
    let mut seen = Vec::new();
    for path in [
        format!("/v1/candidates/{LEO_PRIMARY}/attachments"),
        format!("/v1/candidates/{LEO_JOB_ROW}/attachments"),
        format!("/v1/applications/{LEO_JOB_ROW}/attachments"),
    ] {
        let (data, total) = sub(&app, &path).await;
        assert_eq!((ids(&data), total), (want.to_vec(), 3), "{path}");
        seen.push(data);
    }
    assert!(seen.windows(2).all(|w| w[0] == w[1]));
    for a in &seen[0] {
        let (_, one) = app
            .get(
                &format!("/v1/attachments/{}", a["id"].as_str().unwrap()),
                READ_KEY,
            )
            .await;
        assert_eq!(&one["data"], a, "items are the attachments as shown by id");
    }
    let (data, total) = sub(&app, &format!("/v1/companies/{COMPANY}/attachments")).await;
    assert_eq!((ids(&data), total), (vec!["clientfile:newer", TERMS], 2));
    let (data, total) = sub(
        &app,
        &format!("/v1/companies/{COMPANY}/attachments?limit=1"),
    )
    .await;
    assert_eq!((ids(&data), total), (vec!["clientfile:newer"], 2));
    let (data, _) = sub(&app, &format!("/v1/candidates/{MIA}/attachments")).await;
    assert_eq!(ids(&data), ["file:mia"]);
    for bad in ["limit=0", "limit=1.0", "limit=%2B1", "limit=1&limit=1"] {
        let (s, body) = app
            .get(
                &format!("/v1/companies/{COMPANY}/attachments?{bad}"),
                READ_KEY,
            )
            .await;
        assert_error(s, &body, 400, "BAD_REQUEST");
    }
}

async fn attachments_limit_defaults_to_500(b: Backend) {
    let mut snap = example();
    let atts = snap["attachments"].as_array_mut().unwrap();
    for i in 0..501u64 {
        let at = format!("2026-10-01T{:02}:{:02}:00Z", i / 60, i % 60);
        atts.push(attachment(&format!("file:{i:04}"), "company", COMPANY, &at));
    }
    let app = app_with(b, &snap).await;
    let base = format!("/v1/companies/{COMPANY}/attachments");
    let (data, total) = sub(&app, &base).await;
    assert_eq!((data.len(), total), (500, 502));
    assert_eq!(data[0]["id"], "file:0500");
    let (data, _) = sub(&app, &format!("{base}?limit=600")).await;
    assert_eq!(data.len(), 500, "clamped");
}

async fn unknown_and_foreign_ids_are_empty(b: Backend) {
    let app = app_with(b, &with_mia()).await;
    let mut other = json!({
        "format": "recruit-snapshot/1",
        "workspace": {"id": "3e1c0de0-0000-4000-8000-000000000001", "name": "Other"},
        "users": [{"id": "3e1c0de0-0000-4000-8000-0000000000a1", "name": "O", "email": "o@other.example",
                   "role": "owner", "status": "active",
                   "created_at": "2026-09-01T00:00:00Z", "updated_at": "2026-09-01T00:00:00Z"}],
        "companies": [{"id": "3e1c0de0-0000-4000-8000-0000000000c1", "name": "Theirs",
                       "created_at": "2026-09-01T00:00:00Z", "updated_at": "2026-09-01T00:00:00Z"}],
        "notes": [note("3e1c0de0-0000-4000-8000-0000000000d1", "company",
                       "3e1c0de0-0000-4000-8000-0000000000c1", "2026-09-02T00:00:00Z")],
        "attachments": [attachment("file:theirs", "company", "3e1c0de0-0000-4000-8000-0000000000c1",
                                   "2026-09-02T00:00:00Z")],
        "api_keys": [{"id": "key_other", "secret": "rk_other_secret_0123456789", "scopes": ["read"],
                      "created_by": "3e1c0de0-0000-4000-8000-0000000000a1"}]
    });
    other["notes"][0]["author_id"] = json!("3e1c0de0-0000-4000-8000-0000000000a1");
    app.import_ok(&other).await;
    let foreign = "3e1c0de0-0000-4000-8000-0000000000c1";
    // Their key sees their company's children; ours sees nothing there.
    let (s, theirs) = app
        .get(
            &format!("/v1/companies/{foreign}/notes"),
            "rk_other_secret_0123456789",
        )
        .await;
    assert_eq!((s.as_u16(), &theirs["total_count"]), (200, &json!(1)));
    for path in [
        format!("/v1/companies/{foreign}/notes"),
        format!("/v1/companies/{foreign}/attachments"),
        format!("/v1/candidates/{}/notes", uuid(424242)),
        format!("/v1/candidates/{}/attachments", uuid(424242)),
        format!("/v1/jobs/{}/notes", uuid(1)),
        "/v1/candidates/not-a-uuid/notes".to_string(),
        "/v1/candidates/not-a-uuid/attachments".to_string(),
        format!("/v1/candidates/{}/notes", LEO_PRIMARY.replace('-', "")),
        "/v1/candidates/%ff/notes".to_string(),
        // An id of another entity is not a record of this one.
        format!("/v1/contacts/{COMPANY}/notes"),
        format!("/v1/companies/{LEO_PRIMARY}/attachments"),
        // A primary row is a candidate record, not an application.
        format!("/v1/applications/{LEO_PRIMARY}/notes"),
        format!("/v1/applications/{MIA}/attachments"),
    ] {
        let (data, total) = sub(&app, &path).await;
        assert_eq!((data.len(), total), (0, 0), "{path}");
    }
}

async fn unsupported_entities_and_paths(b: Backend) {
    let app = app_with(b, &example()).await;
    for path in [
        format!("/v1/users/{RAJ}/notes"),
        format!("/v1/notes/{LEO_NOTE}/notes"),
        "/v1/tasks/9b9318fa-d687-5079-970e-cb43c3d145bb/notes".to_string(),
        format!("/v1/attachments/{CV}/notes"),
        format!("/v1/contacts/{CONTACT}/attachments"),
        format!("/v1/jobs/{JOB}/attachments"),
        format!("/v1/users/{RAJ}/attachments"),
        format!("/v1/notes/{LEO_NOTE}/attachments"),
        format!("/v1/tasks/{}/attachments", uuid(1)),
        format!("/v1/attachments/{CV}/attachments"),
    ] {
        let (s, body) = app.get(&path, READ_KEY).await;
        assert_error(s, &body, 400, "BAD_REQUEST");
    }
    for path in [
        format!("/v1/people/{LEO_PRIMARY}/notes"),
        format!("/v1/candidates/{LEO_PRIMARY}/files"),
        format!("/v1/candidates/{LEO_PRIMARY}/notes/extra"),
    ] {
        let (s, body) = app.get(&path, READ_KEY).await;
        assert_error(s, &body, 404, "NOT_FOUND");
    }
    for sub in ["notes", "attachments"] {
        let path = format!("/v1/candidates/{LEO_PRIMARY}/{sub}");
        for m in [Method::POST, Method::PATCH, Method::DELETE] {
            let res = app.req(m, &path, Some(READ_KEY)).send().await.unwrap();
            assert_eq!(res.headers()["allow"], "GET");
            let (s, body) = json_of(res).await;
            assert_error(s, &body, 405, "METHOD_NOT_ALLOWED");
        }
        let (s, body) = json_of(app.req(Method::GET, &path, None).send().await.unwrap()).await;
        assert_error(s, &body, 401, "UNAUTHORIZED");
    }
}

async fn subresources_follow_writes_and_restarts(b: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let app = spawn_app_in(b.clone(), dir).await;
    let mut snap = example();
    snap["notes"].as_array_mut().unwrap().push(note(
        &uuid(1),
        "candidate",
        LEO_JOB_ROW,
        "2026-10-01T00:00:00Z",
    ));
    app.import_ok(&snap).await;
    let leo = format!("/v1/candidates/{LEO_PRIMARY}/notes");
    assert_eq!(sub(&app, &leo).await.1, 2);

    // Made private: no longer counted. The contact's private note made public: counted.
    let mut d = delta(&snap);
    let mut public = snap["notes"][1].clone();
    public["is_private"] = json!(false);
    d["notes"] = json!([
        private(note(
            &uuid(1),
            "candidate",
            LEO_JOB_ROW,
            "2026-10-01T00:00:00Z"
        )),
        public
    ]);
    app.import_ok(&d).await;
    let (data, total) = sub(&app, &leo).await;
    assert_eq!((ids(&data), total), (vec![LEO_NOTE], 1));
    let (data, _) = sub(&app, &format!("/v1/contacts/{CONTACT}/notes")).await;
    assert_eq!(ids(&data), [PRIVATE_NOTE]);

    // Moved to another parent, deleted, and an attachment moved.
    let mut d = delta(&snap);
    d["notes"] = json!([
        note(LEO_NOTE, "job", JOB, "2026-09-15T14:30:00Z"),
        {"id": PRIVATE_NOTE, "deleted": true}
    ]);
    let mut terms = snap["attachments"][1].clone();
    terms["parent_type"] = json!("candidate");
    terms["parent_id"] = json!(LEO_JOB_ROW);
    d["attachments"] = json!([terms]);
    app.import_ok(&d).await;
    after_moves(&app).await;

    // The indexes are rebuilt from the store on start.
    app.stop().await;
    let TestApp { data_dir, .. } = app;
    let again = spawn_app_in(b, data_dir).await;
    after_moves(&again).await;
}

/// What `subresources_follow_writes_and_restarts` expects after its last import.
async fn after_moves(app: &TestApp) {
    let (data, total) = sub(app, &format!("/v1/candidates/{LEO_PRIMARY}/notes")).await;
    assert_eq!((data.len(), total), (0, 0));
    let (data, _) = sub(app, &format!("/v1/jobs/{JOB}/notes")).await;
    assert_eq!(ids(&data), [LEO_NOTE]);
    let (data, total) = sub(app, &format!("/v1/contacts/{CONTACT}/notes")).await;
    assert_eq!((data.len(), total), (0, 0));
    let (data, _) = sub(app, &format!("/v1/applications/{LEO_JOB_ROW}/attachments")).await;
    assert_eq!(ids(&data), [TERMS, CV]);
    let (data, total) = sub(app, &format!("/v1/companies/{COMPANY}/attachments")).await;
    assert_eq!((data.len(), total), (0, 0));
}

store_test!(
    notes_cover_the_whole_person,
    other_records_list_only_their_own_notes,
    notes_limit_and_sort,
    attachments_cover_the_whole_person,
    attachments_limit_defaults_to_500,
    unknown_and_foreign_ids_are_empty,
    unsupported_entities_and_paths,
    subresources_follow_writes_and_restarts,
);
