//! Single records and their derivations, checked field by field against the example.

use crate::helpers::*;
use serde_json::{json, Value};

const LEO_PRIMARY: &str = "a214ca67-7691-5c62-8910-a410373e10c9";
const LEO_JOB_ROW: &str = "b509f583-def1-5a25-9cb1-a1532b926c94";
const RAJ: &str = "0986a580-8fc6-5461-afb0-b69c0a512919";
const IVY: &str = "5e9ec401-b232-5127-b90a-84f811430357";
const JOB: &str = "2fae0fc8-6eee-55da-8a7e-f15794b7515f";
const CV: &str = "cv:91b2d50e-a6b0-5581-b491-530642265a44";

async fn app_with(b: Backend, snapshot: &Value) -> TestApp {
    let app = spawn_app(b).await;
    app.import_ok(snapshot).await;
    app
}

async fn data(app: &TestApp, path: &str) -> Value {
    let (s, body) = app.get(path, READ_KEY).await;
    assert_eq!(s, 200, "{path}: {body}");
    assert_eq!(
        body.as_object().unwrap().len(),
        2,
        "data and request_id only: {body}"
    );
    body["data"].clone()
}

async fn every_entity_has_exact_fields(b: Backend) {
    let app = app_with(b, &example()).await;
    let salary = json!({"current_amount": 70000, "current_currency": "GBP", "current_text": "70k + bonus",
        "expected_amount": 80000, "expected_currency": "GBP", "expected_text": "80k"});
    let consent = json!({"status": "given", "given_at": "2026-09-01T09:00:00.000Z",
        "requested_at": "2026-09-01T09:00:00.000Z", "expires_at": null});
    assert_eq!(
        data(&app, &format!("/v1/candidates/{LEO_PRIMARY}")).await,
        json!({
            "id": LEO_PRIMARY, "person_id": "21b6ca4e-64ee-5e3c-89d8-7a0806815565", "is_primary_record": true,
            "name": "Leo Lambert", "emails": ["leo.lambert@mail.example"], "phone": "+447700900123",
            "phone_as_entered": "07700 900123", "mobile": null, "job_title": "Platform Engineer",
            "company": "Contoso", "location": "Leeds", "linkedin_url": null, "stage": null, "stage_type": null,
            "status": "active", "owning_recruiter_id": null, "job_id": null, "salary": salary, "consent": consent,
            "created_at": "2026-09-01T09:00:00.000Z", "updated_at": "2026-09-01T09:00:00.000Z"
        })
    );
    let row = data(&app, &format!("/v1/candidates/{LEO_JOB_ROW}")).await;
    assert_eq!(row["is_primary_record"], false);
    assert_eq!(row["stage"], "Interview");
    assert_eq!(row["stage_type"], "interview");
    assert_eq!(row["status"], "interview");
    assert_eq!(row["job_id"], JOB);
    assert_eq!(
        row["owning_recruiter_id"], RAJ,
        "falls back to the job's active recruiter"
    );
    assert_eq!(row["updated_at"], "2026-10-02T08:05:12.345Z");
    assert_eq!(
        data(&app, &format!("/v1/applications/{LEO_JOB_ROW}")).await,
        json!({
            "id": LEO_JOB_ROW, "candidate_id": "21b6ca4e-64ee-5e3c-89d8-7a0806815565",
            "candidate_row_id": LEO_JOB_ROW, "candidate_name": "Leo Lambert", "job_id": JOB,
            "stage": "Interview", "stage_type": "interview", "status": "interview", "rejected_at": null,
            "created_at": "2026-09-15T14:30:00.000Z", "updated_at": "2026-10-02T08:05:12.345Z"
        })
    );
    assert_eq!(
        data(&app, "/v1/contacts/c39ca419-8ea8-58e1-a02b-11d9dec22eb3").await,
        json!({
            "id": "c39ca419-8ea8-58e1-a02b-11d9dec22eb3", "name": "Hana Hiring", "emails": ["hana@fabrikam.example"],
            "phone": "+442079460011", "phone_as_entered": "020 7946 0011", "mobile": "+447700900311",
            "job_title": "Head of Engineering", "department": "Engineering",
            "company_id": "71ff7925-38fa-57bd-b38e-c2e5e183f050", "company": "Fabrikam", "linkedin_url": null,
            "is_main_contact": true, "owning_recruiter_id": RAJ,
            "created_at": "2026-09-01T09:00:00.000Z", "updated_at": "2026-09-01T09:00:00.000Z"
        })
    );
    assert_eq!(
        data(&app, "/v1/companies/71ff7925-38fa-57bd-b38e-c2e5e183f050").await,
        json!({
            "id": "71ff7925-38fa-57bd-b38e-c2e5e183f050", "name": "Fabrikam", "phone": "+44 20 7946 0000",
            "website_url": "https://fabrikam.example", "linkedin_url": null, "status": "client",
            "is_archived": false, "owning_recruiter_id": RAJ,
            "created_at": "2026-09-01T09:00:00.000Z", "updated_at": "2026-09-15T14:30:00.000Z"
        })
    );
    assert_eq!(
        data(&app, &format!("/v1/jobs/{JOB}")).await,
        json!({
            "id": JOB, "title": "Site Reliability Engineer", "position": "Site Reliability Engineer",
            "company": "Fabrikam", "company_id": "71ff7925-38fa-57bd-b38e-c2e5e183f050", "status": "open",
            "role_status_id": "c5b0d298-f5e3-5ee6-bdb5-dd1ed31fc750", "live": true, "published": true,
            "is_archived": false, "salary": {"amount": 85000, "currency": "GBP", "type": "annual"},
            "owning_recruiter_id": RAJ, "hiring_manager": "Hana Hiring",
            "created_at": "2026-09-01T09:00:00.000Z", "updated_at": "2026-09-15T14:30:00.000Z"
        })
    );
    assert_eq!(
        data(&app, "/v1/notes/f24845c5-af3b-5f5c-8fe0-e0ed4e993ef7").await,
        json!({
            "id": "f24845c5-af3b-5f5c-8fe0-e0ed4e993ef7", "parent_type": "candidate", "parent_id": LEO_PRIMARY,
            "title": "Intro call", "body_html": "<p>Keen on SRE roles.</p>", "type": "call", "is_private": false,
            "author_id": RAJ, "job_id": null,
            "created_at": "2026-09-15T14:30:00.000Z", "updated_at": "2026-09-15T14:30:00.000Z"
        })
    );
    assert_eq!(
        data(&app, "/v1/tasks/9b9318fa-d687-5079-970e-cb43c3d145bb").await,
        json!({
            "id": "9b9318fa-d687-5079-970e-cb43c3d145bb", "parent_type": "candidate", "parent_id": LEO_PRIMARY,
            "title": "Send interview prep", "body_html": null, "status": "open", "due_date": "2026-10-05",
            "owner_id": RAJ, "completed_at": null, "is_private": false,
            "created_at": "2026-10-02T08:05:12.345Z", "updated_at": "2026-10-02T08:05:12.345Z"
        })
    );
    assert_eq!(
        data(&app, &format!("/v1/attachments/{CV}")).await,
        json!({
            "id": CV, "parent_type": "candidate", "parent_id": LEO_PRIMARY, "filename": "Leo Lambert CV.pdf",
            "content_type": "application/pdf", "size": 54, "kind": "cv",
            "storage_ref": "cvs/northwind/leo-lambert.pdf",
            "created_at": "2026-09-01T09:00:00.000Z", "updated_at": "2026-09-01T09:00:00.000Z"
        })
    );
    assert_eq!(
        data(&app, &format!("/v1/users/{IVY}")).await,
        json!({
            "id": IVY, "name": "Ivy Invited", "email": "ivy@northwind.example", "active": false,
            "role": "recruiter", "external_id": null,
            "created_at": "2026-09-15T14:30:00.000Z", "updated_at": "2026-09-15T14:30:00.000Z"
        })
    );
}

async fn owning_recruiter_follows_the_rules(b: Backend) {
    let mut snap = example();
    // Explicit owner still active wins on the primary row.
    snap["candidates"][0]["owner_id"] = json!(RAJ);
    // An explicit owner who never accepted is passed over for the job's recruiter.
    snap["candidates"][1]["owner_id"] = json!(IVY);
    let app = app_with(b, &snap).await;
    assert_eq!(
        data(&app, &format!("/v1/candidates/{LEO_PRIMARY}")).await["owning_recruiter_id"],
        RAJ
    );
    assert_eq!(
        data(&app, &format!("/v1/candidates/{LEO_JOB_ROW}")).await["owning_recruiter_id"],
        RAJ
    );
    // The job's recruiter inactive too: null, never the importer or the job creator.
    let mut delta = json!({"format": "recruit-snapshot/1", "workspace": snap["workspace"].clone()});
    let mut job = snap["jobs"][0].clone();
    job["assigned_recruiter_id"] = json!(IVY);
    delta["jobs"] = json!([job]);
    app.import_ok(&delta).await;
    assert_eq!(
        data(&app, &format!("/v1/candidates/{LEO_JOB_ROW}")).await["owning_recruiter_id"],
        Value::Null
    );
    // Jobs fall back to their creator when no recruiter is assigned.
    let mut job = snap["jobs"][0].clone();
    job["assigned_recruiter_id"] = Value::Null;
    delta["jobs"] = json!([job]);
    app.import_ok(&delta).await;
    assert_eq!(
        data(&app, &format!("/v1/jobs/{JOB}")).await["owning_recruiter_id"],
        "c26c9743-a728-5f14-b348-d08024212444"
    );
}

async fn derived_states(b: Backend) {
    let mut snap = example();
    snap["candidates"][1]["outcome"] = json!("rejected");
    snap["candidates"][1]["rejected_at"] = json!("2026-10-03T10:00:00Z");
    snap["jobs"][0]["is_archived"] = json!(true);
    // cv attachments take their candidate row's timestamps, whatever they carry.
    snap["attachments"][0]["created_at"] = json!("2026-01-01T00:00:00Z");
    snap["attachments"][0]["updated_at"] = json!("2026-11-01T00:00:00Z");
    snap["attachments"][0]["parent_id"] = json!(LEO_JOB_ROW);
    let app = app_with(b, &snap).await;
    let row = data(&app, &format!("/v1/candidates/{LEO_JOB_ROW}")).await;
    assert_eq!(row["status"], "rejected");
    let appl = data(&app, &format!("/v1/applications/{LEO_JOB_ROW}")).await;
    assert_eq!(appl["status"], "rejected");
    assert_eq!(appl["rejected_at"], "2026-10-03T10:00:00.000Z");
    let job = data(&app, &format!("/v1/jobs/{JOB}")).await;
    assert_eq!(
        (
            job["live"].clone(),
            job["published"].clone(),
            job["is_archived"].clone()
        ),
        (json!(false), json!(false), json!(true))
    );
    let cv = data(&app, &format!("/v1/attachments/{CV}")).await;
    assert_eq!(cv["created_at"], "2026-09-15T14:30:00.000Z");
    assert_eq!(cv["updated_at"], "2026-10-02T08:05:12.345Z");
    // Placed wins over the stage type; archived companies stay readable.
    let mut delta = json!({"format": "recruit-snapshot/1", "workspace": snap["workspace"].clone()});
    let mut r = snap["candidates"][1].clone();
    r["outcome"] = json!("placed");
    let mut co = snap["companies"][0].clone();
    co["is_archived"] = json!(true);
    delta["candidates"] = json!([r]);
    delta["companies"] = json!([co]);
    app.import_ok(&delta).await;
    let appl = data(&app, &format!("/v1/applications/{LEO_JOB_ROW}")).await;
    assert_eq!(
        (appl["status"].clone(), appl["rejected_at"].clone()),
        (json!("placed"), Value::Null)
    );
    assert_eq!(
        data(&app, "/v1/companies/71ff7925-38fa-57bd-b38e-c2e5e183f050").await["is_archived"],
        true
    );
}

async fn edits_before_tracking_report_created_at(b: Backend) {
    let mut snap = example();
    snap["companies"][0]["created_at"] = json!("2026-03-01T00:00:00Z");
    snap["companies"][0]["updated_at"] = json!("2026-08-12T23:59:59.999Z");
    let app = app_with(b, &snap).await;
    let co = data(&app, "/v1/companies/71ff7925-38fa-57bd-b38e-c2e5e183f050").await;
    assert_eq!(co["updated_at"], co["created_at"]);
    assert_eq!(co["created_at"], "2026-03-01T00:00:00.000Z");
}

async fn notes_fields_present_only_for_their_parent_kind(b: Backend) {
    let mut snap = example();
    snap["notes"][1]["is_private"] = json!(false);
    snap["notes"].as_array_mut().unwrap().push(json!({
        "id": "11111111-1111-4111-8111-111111111111", "parent_type": "job", "parent_id": JOB,
        "title": "", "body_html": "<p>x</p>", "type": null, "is_private": false, "author_id": RAJ,
        "created_at": "2026-09-20T10:00:00Z", "updated_at": "2026-09-20T10:00:00Z"
    }));
    let app = app_with(b, &snap).await;
    let contact_note = data(&app, "/v1/notes/05ace384-620b-5866-bfb7-3cdd82c2fe5e").await;
    assert_eq!(
        contact_note["company_id"],
        "71ff7925-38fa-57bd-b38e-c2e5e183f050"
    );
    assert!(
        contact_note.get("job_id").is_none(),
        "job_id absent, not null: {contact_note}"
    );
    let job_note = data(&app, "/v1/notes/11111111-1111-4111-8111-111111111111").await;
    assert!(
        job_note.get("job_id").is_none() && job_note.get("company_id").is_none(),
        "{job_note}"
    );
    let cand_note = data(&app, "/v1/notes/f24845c5-af3b-5f5c-8fe0-e0ed4e993ef7").await;
    assert!(cand_note.get("job_id").is_some() && cand_note.get("company_id").is_none());
}

async fn private_and_removed_records_are_invisible(b: Backend) {
    let mut snap = example();
    snap["tasks"][0]["is_private"] = json!(true);
    snap["users"][2]["status"] = json!("removed");
    let app = app_with(b, &snap).await;
    for path in [
        "/v1/notes/05ace384-620b-5866-bfb7-3cdd82c2fe5e".to_string(),
        "/v1/tasks/9b9318fa-d687-5079-970e-cb43c3d145bb".to_string(),
        format!("/v1/users/{IVY}"),
    ] {
        let (s, body) = app.get(&path, READ_KEY).await;
        assert_error(s, &body, 404, "NOT_FOUND");
    }
    let (_, notes) = app.get("/v1/notes", READ_KEY).await;
    assert_eq!(notes["total_count"], 1);
    assert!(notes["data"]
        .as_array()
        .unwrap()
        .iter()
        .all(|n| n["is_private"] == false));
    let (_, tasks) = app.get("/v1/tasks", READ_KEY).await;
    assert_eq!(tasks["total_count"], 0);
    let (_, users) = app.get("/v1/users", READ_KEY).await;
    assert_eq!(users["total_count"], 2);
    let counts = data(&app, "/v1/counts").await;
    assert_eq!(
        counts,
        json!({"candidates": 2, "applications": 1, "contacts": 1, "companies": 1, "jobs": 1,
               "notes": 1, "tasks": 0, "attachments": 2, "users": 2})
    );
}

async fn attachment_ids_with_or_without_prefix(b: Backend) {
    let app = app_with(b, &example()).await;
    for id in [
        CV,
        "91b2d50e-a6b0-5581-b491-530642265a44",
        "cv%3A91b2d50e-a6b0-5581-b491-530642265a44",
    ] {
        assert_eq!(
            data(&app, &format!("/v1/attachments/{id}")).await["id"],
            CV,
            "{id}"
        );
    }
    for id in [
        "file:91b2d50e-a6b0-5581-b491-530642265a44",
        "resume:91b2d50e-a6b0-5581-b491-530642265a44",
        "nope",
    ] {
        let (s, body) = app.get(&format!("/v1/attachments/{id}"), READ_KEY).await;
        assert_error(s, &body, 404, "NOT_FOUND");
    }
}

async fn counts_parameter(b: Backend) {
    let app = app_with(b, &example()).await;
    assert_eq!(
        data(&app, "/v1/counts?entities=jobs,users,jobs").await,
        json!({"jobs": 1, "users": 3})
    );
    for bad in [
        "/v1/counts?entities=jobs,people",
        "/v1/counts?entities=",
        "/v1/counts?entities=Jobs",
    ] {
        let (s, body) = app.get(bad, READ_KEY).await;
        assert_error(s, &body, 400, "BAD_REQUEST");
    }
    // Counts equal the unfiltered total_count of each list.
    let counts = data(&app, "/v1/counts").await;
    for (entity, n) in counts.as_object().unwrap() {
        let (_, list) = app
            .get(&format!("/v1/{entity}?updated_since=2000-01-01"), READ_KEY)
            .await;
        assert_eq!(&list["total_count"], n, "{entity}");
    }
}

store_test!(
    every_entity_has_exact_fields,
    owning_recruiter_follows_the_rules,
    derived_states,
    edits_before_tracking_report_created_at,
    notes_fields_present_only_for_their_parent_kind,
    private_and_removed_records_are_invisible,
    attachment_ids_with_or_without_prefix,
    counts_parameter,
);
