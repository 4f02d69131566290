//! Authentication: the bearer header only, hashed keys, revocation, creators losing
//! access, one key one workspace.

use crate::helpers::*;
use reqwest::Method;
use serde_json::json;

async fn app(b: Backend) -> TestApp {
    let app = spawn_app(b).await;
    app.import_ok(&example()).await;
    app
}

async fn only_the_bearer_header_is_accepted(b: Backend) {
    let app = app(b).await;
    let (s, _) = app.get("/v1/counts", READ_KEY).await;
    assert_eq!(s, 200);
    let url = app.url("/v1/counts");
    let cases = vec![
        app.client.get(&url),
        app.client.get(format!("{url}?api_key={READ_KEY}")),
        app.client.get(format!("{url}?key={READ_KEY}")),
        app.client.get(&url).header("X-Api-Key", READ_KEY),
        app.client.get(&url).header("Authorization", READ_KEY),
        app.client
            .get(&url)
            .header("Authorization", format!("Token {READ_KEY}")),
        app.client
            .get(&url)
            .header("Authorization", format!("Basic {READ_KEY}")),
        app.client.get(&url).header("Authorization", "Bearer"),
        app.client.get(&url).header("Authorization", "Bearer "),
        app.client.get(&url).bearer_auth("rk_not_a_key"),
        app.client.get(&url).bearer_auth(format!("{READ_KEY}x")),
    ];
    for rb in cases {
        let res = rb.send().await.unwrap();
        // RFC 6750: the answer names the scheme to authenticate with.
        let challenge = res
            .headers()
            .get("www-authenticate")
            .map(|v| v.to_str().unwrap().to_owned());
        assert!(
            challenge
                .as_deref()
                .is_some_and(|c| c.starts_with("Bearer ")),
            "WWW-Authenticate: {challenge:?}"
        );
        let (s, body) = json_of(res).await;
        assert_error(s, &body, 401, "UNAUTHORIZED");
    }
}

async fn revocation_takes_effect_on_the_next_request(b: Backend) {
    let app = app(b).await;
    assert_eq!(app.get("/v1/counts", WRITE_KEY).await.0, 200);
    let (s, body) = app
        .admin(Method::DELETE, "/admin/v1/keys/key_demo_write", None)
        .await;
    assert_eq!(s, 200, "{body}");
    let (s, body) = app.get("/v1/counts", WRITE_KEY).await;
    assert_error(s, &body, 401, "UNAUTHORIZED");
    // The other key is untouched.
    assert_eq!(app.get("/v1/counts", READ_KEY).await.0, 200);
    let (s, body) = app
        .admin(Method::DELETE, "/admin/v1/keys/key_missing", None)
        .await;
    assert_error(s, &body, 404, "NOT_FOUND");
}

async fn keys_stop_when_their_creator_loses_access(b: Backend) {
    let app = app(b).await;
    let mut snap = example();
    let owner = snap["users"][0].clone();
    let mut removed = owner.clone();
    removed["status"] = json!("removed");
    let delta = json!({"format": "recruit-snapshot/1", "workspace": snap["workspace"].clone(), "users": [removed]});
    app.import_ok(&delta).await;
    let (s, body) = app.get("/v1/counts", READ_KEY).await;
    assert_error(s, &body, 401, "UNAUTHORIZED");
    // Access restored: the key works again.
    snap["users"] = json!([owner]);
    let delta = json!({"format": "recruit-snapshot/1", "workspace": snap["workspace"].clone(), "users": snap["users"].clone()});
    app.import_ok(&delta).await;
    assert_eq!(app.get("/v1/counts", READ_KEY).await.0, 200);
}

/// A snapshot's key whose creator is a recruiter now (an administrator demoted since
/// the key was made in the product) is imported and works: its creator has not lost
/// access. It stops, like any key, when they do. Keys made through recruitd keep the
/// owner-or-administrator rule (below).
async fn an_imported_key_works_whatever_its_creators_role_now(b: Backend) {
    let app = app(b).await;
    let snap = example();
    let recruiter = snap["users"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["role"] == "recruiter" && u["status"] == "active")
        .expect("the example has an active recruiter")
        .clone();
    let secret = "rk_made_by_a_former_admin_0123456789";
    let keys = json!({"format": "recruit-snapshot/1", "workspace": snap["workspace"].clone(),
        "api_keys": [{"id": "key_former_admin", "secret": secret, "scopes": ["read"],
                      "created_by": recruiter["id"].clone()}]});
    app.import_ok(&keys).await;
    assert_eq!(app.get("/v1/counts", secret).await.0, 200);
    let mut removed = recruiter.clone();
    removed["status"] = json!("removed");
    let delta = json!({"format": "recruit-snapshot/1", "workspace": snap["workspace"].clone(),
        "users": [removed]});
    app.import_ok(&delta).await;
    let (s, body) = app.get("/v1/counts", secret).await;
    assert_error(s, &body, 401, "UNAUTHORIZED");
}

async fn created_keys_work_and_secrets_are_not_stored(b: Backend) {
    let app = app(b).await;
    let (s, body) = app
        .admin(
            Method::POST,
            "/admin/v1/keys",
            Some(
                &json!({"workspace_id": "b2574901-bbf6-5245-9d3f-3dd074396143",
                "created_by_email": "OLIVIA@northwind.example", "scopes": ["notes:write"]}),
            ),
        )
        .await;
    assert_eq!(s, 200, "{body}");
    let secret = body["data"]["secret"].as_str().unwrap().to_string();
    assert!(body["data"]["id"].as_str().is_some());
    assert_eq!(app.get("/v1/users", &secret).await.0, 200);
    // Invited users and members who are neither owner nor administrator cannot create
    // keys; unknown workspaces and scopes are rejected.
    for (bad, why) in [
        (
            json!({"workspace_id": "b2574901-bbf6-5245-9d3f-3dd074396143", "created_by_email": "ivy@northwind.example", "scopes": []}),
            "not an active member",
        ),
        (
            json!({"workspace_id": "b2574901-bbf6-5245-9d3f-3dd074396143", "created_by_email": "raj@northwind.example", "scopes": []}),
            "owner or administrator",
        ),
        (
            json!({"workspace_id": "b2574901-bbf6-5245-9d3f-3dd074396143", "created_by_email": "olivia@northwind.example", "scopes": ["admin"]}),
            "unknown scope",
        ),
        (
            json!({"workspace_id": "00000000-0000-4000-8000-000000000000", "created_by_email": "olivia@northwind.example", "scopes": []}),
            "no workspace",
        ),
        (
            json!({"workspace_id": "b2574901-bbf6-5245-9d3f-3dd074396143", "created_by_email": "olivia@northwind.example", "extra": 1}),
            "unknown field",
        ),
    ] {
        let (s, body) = app.admin(Method::POST, "/admin/v1/keys", Some(&bad)).await;
        let message = assert_error(s, &body, 400, "BAD_REQUEST");
        assert!(message.contains(why), "{bad}: {message}");
    }
    // Neither this secret nor the imported ones appear anywhere in the data dir's store.
    if let Backend::Sqlite = app.backend {
        let db = std::fs::read(app.data_dir.path().join("recruit.db")).unwrap();
        let wal = std::fs::read(app.data_dir.path().join("recruit.db-wal")).unwrap_or_default();
        for s in [secret.as_str(), READ_KEY, WRITE_KEY] {
            let needle = s.as_bytes();
            assert!(
                !db.windows(needle.len()).any(|w| w == needle),
                "secret stored in plain form"
            );
            assert!(
                !wal.windows(needle.len()).any(|w| w == needle),
                "secret stored in plain form"
            );
        }
    }
}

async fn one_key_reaches_one_workspace(b: Backend) {
    let app = app(b).await;
    let other = json!({
        "format": "recruit-snapshot/1",
        "workspace": {"id": "3e1c0de0-0000-4000-8000-000000000001", "name": "Other", "default_region": "US"},
        "users": [{"id": "3e1c0de0-0000-4000-8000-0000000000a1", "name": "O", "email": "o@other.example", "role": "owner",
                   "status": "active", "created_at": "2026-09-01T00:00:00Z", "updated_at": "2026-09-01T00:00:00Z"}],
        "api_keys": [{"id": "key_other", "secret": "rk_other_secret_0123456789", "scopes": ["read"],
                      "created_by": "3e1c0de0-0000-4000-8000-0000000000a1"}]
    });
    app.import_ok(&other).await;
    let (_, mine) = app.get("/v1/users", READ_KEY).await;
    let (_, theirs) = app.get("/v1/users", "rk_other_secret_0123456789").await;
    assert_eq!(mine["total_count"], 3);
    assert_eq!(theirs["total_count"], 1);
    let (s, body) = app
        .get(
            "/v1/users/c26c9743-a728-5f14-b348-d08024212444",
            "rk_other_secret_0123456789",
        )
        .await;
    assert_error(s, &body, 404, "NOT_FOUND");
    // A key id of one workspace cannot be taken over by another's snapshot.
    let mut steal = other.clone();
    steal["api_keys"][0]["id"] = json!("key_demo_read");
    steal["api_keys"][0]["secret"] = json!("rk_stolen_0123456789");
    let (s, body) = app.import(&steal).await;
    assert_error(s, &body, 400, "BAD_REQUEST");
}

store_test!(
    only_the_bearer_header_is_accepted,
    revocation_takes_effect_on_the_next_request,
    keys_stop_when_their_creator_loses_access,
    an_imported_key_works_whatever_its_creators_role_now,
    created_keys_work_and_secrets_are_not_stored,
    one_key_reaches_one_workspace,
);

/// Scopes are deny-by-default: each extractor admits exactly the keys holding its scope.
#[actix_web::test]
async fn scopes_are_deny_by_default() {
    use actix_web::{test, web, HttpResponse};
    use recruitd::http::auth::{Authed, NotesWrite, Read, RecordsWrite, TasksWrite};
    let (state, _) = memory_app_state(true).await;
    async fn read(_: Authed<Read>) -> HttpResponse {
        HttpResponse::Ok().finish()
    }
    async fn notes(_: Authed<NotesWrite>) -> HttpResponse {
        HttpResponse::Ok().finish()
    }
    async fn tasks(_: Authed<TasksWrite>) -> HttpResponse {
        HttpResponse::Ok().finish()
    }
    async fn records(_: Authed<RecordsWrite>) -> HttpResponse {
        HttpResponse::Ok().finish()
    }
    let svc = test::init_service(
        actix_web::App::new()
            .app_data(state)
            .route("/read", web::get().to(read))
            .route("/notes", web::get().to(notes))
            .route("/tasks", web::get().to(tasks))
            .route("/records", web::get().to(records))
            .wrap(actix_web::middleware::from_fn(
                recruitd::http::context::request_context,
            )),
    )
    .await;
    // key_demo_read: read only; key_demo_write: read, notes:write, tasks:write.
    for (key, path, want) in [
        (READ_KEY, "/read", 200),
        (READ_KEY, "/notes", 403),
        (READ_KEY, "/tasks", 403),
        (READ_KEY, "/records", 403),
        (WRITE_KEY, "/read", 200),
        (WRITE_KEY, "/notes", 200),
        (WRITE_KEY, "/tasks", 200),
        (WRITE_KEY, "/records", 403),
    ] {
        let req = test::TestRequest::get()
            .uri(path)
            .insert_header(("Authorization", format!("Bearer {key}")))
            .to_request();
        let res = test::call_service(&svc, req).await;
        assert_eq!(res.status().as_u16(), want, "{key} {path}");
        if want == 403 {
            let body: serde_json::Value = test::read_body_json(res).await;
            assert_eq!(body["error"]["code"], "FORBIDDEN_SCOPE");
        }
    }
}
