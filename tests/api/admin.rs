//! The admin interface and imports (live and offline).

use crate::helpers::*;
use futures_util::StreamExt;
use reqwest::Method;
use serde_json::{json, Value};

async fn ready_and_token(b: Backend) {
    let app = spawn_app(b).await;
    let (s, body) = app.admin(Method::GET, "/admin/v1/ready", None).await;
    assert_eq!(s, 200);
    assert_eq!(body["data"], json!({"ready": true}));
    let res = app
        .client
        .get(format!("{}/admin/v1/ready", app.admin_base))
        .send()
        .await
        .unwrap();
    let (s, body) = json_of(res).await;
    assert_error(s, &body, 401, "UNAUTHORIZED");
    let res = app
        .client
        .get(format!("{}/admin/v1/ready", app.admin_base))
        .bearer_auth("wrong")
        .send()
        .await
        .unwrap();
    assert!(
        res.headers()
            .get("www-authenticate")
            .is_some_and(|v| v.to_str().unwrap().starts_with("Bearer ")),
        "{:?}",
        res.headers()
    );
    let (s, body) = json_of(res).await;
    assert_error(s, &body, 401, "UNAUTHORIZED");
}

async fn import_reports_counts(b: Backend) {
    let app = spawn_app(b).await;
    let body = app.import_ok(&example()).await;
    assert_eq!(
        body["data"]["workspace_id"],
        "b2574901-bbf6-5245-9d3f-3dd074396143"
    );
    assert_eq!(body["data"]["upserted"]["candidates"], 2);
    assert_eq!(body["data"]["upserted"]["notes"], 2);
    assert_eq!(body["data"]["deleted"]["candidates"], 0);
}

/// An import's body is streamed to the parser: a wrong token is refused before any of
/// it is read (the upload here never ends), and a snapshot sent in small pieces over
/// time is imported whole.
async fn import_body_is_streamed_after_the_token(b: Backend) {
    let app = spawn_app(b).await;
    let endless = futures_util::stream::once(async {
        Ok::<_, std::io::Error>(actix_web::web::Bytes::from_static(b"{\"format\": "))
    })
    .chain(futures_util::stream::pending());
    let refused = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        app.client
            .post(format!("{}/admin/v1/import", app.admin_base))
            .bearer_auth("wrong")
            .body(reqwest::Body::wrap_stream(endless))
            .send(),
    )
    .await
    .expect("answered without the body");
    let (s, body) = json_of(refused.unwrap()).await;
    assert_error(s, &body, 401, "UNAUTHORIZED");

    let snapshot = serde_json::to_vec(&example()).unwrap();
    let pieces: Vec<Result<actix_web::web::Bytes, std::io::Error>> = snapshot
        .chunks(97)
        .map(|c| Ok(actix_web::web::Bytes::copy_from_slice(c)))
        .collect();
    let trickle = futures_util::stream::iter(pieces).then(|piece| async {
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        piece
    });
    let res = app
        .client
        .post(format!("{}/admin/v1/import", app.admin_base))
        .bearer_auth(&app.admin_token)
        .body(reqwest::Body::wrap_stream(trickle))
        .send()
        .await
        .unwrap();
    let (s, body) = json_of(res).await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(body["data"]["upserted"]["candidates"], 2);
    let (_, counts) = app.get("/v1/counts", READ_KEY).await;
    assert_eq!(counts["data"]["candidates"], 2, "{counts}");
}

async fn rejected_import_changes_nothing(b: Backend) {
    let app = spawn_app(b).await;
    app.import_ok(&example()).await;
    let (_, before) = app.get("/v1/counts", READ_KEY).await;
    let mut bad = example();
    // A valid new record first, an invalid one later: nothing of the file may land.
    bad["companies"].as_array_mut().unwrap().push(json!({
        "id": "22222222-2222-4222-8222-222222222222", "name": "New", "created_at": "2026-10-01T00:00:00Z", "updated_at": "2026-10-01T00:00:00Z"
    }));
    bad["candidates"][1]["outcome"] = json!("hired");
    let (s, body) = app.import(&bad).await;
    let msg = assert_error(s, &body, 400, "BAD_REQUEST");
    assert!(msg.contains("candidates[1].outcome"), "{msg}");
    let (_, after) = app.get("/v1/counts", READ_KEY).await;
    assert_eq!(before["data"], after["data"]);
    let (s, _) = app
        .get(
            "/v1/companies/22222222-2222-4222-8222-222222222222",
            READ_KEY,
        )
        .await;
    assert_eq!(s, 404);
    // Not JSON at all.
    let res = app
        .client
        .post(format!("{}/admin/v1/import", app.admin_base))
        .bearer_auth(&app.admin_token)
        .body("{nope")
        .send()
        .await
        .unwrap();
    let (s, body) = json_of(res).await;
    assert_error(s, &body, 400, "BAD_REQUEST");
}

async fn upserts_replace_whole_and_deletions_remove(b: Backend) {
    let app = spawn_app(b).await;
    app.import_ok(&example()).await;
    let ws = example()["workspace"].clone();
    let mut contact = example()["contacts"][0].clone();
    contact.as_object_mut().unwrap().remove("mobile");
    contact["name"] = json!("Hana H.");
    app.import_ok(&json!({
        "format": "recruit-snapshot/1", "workspace": ws,
        "contacts": [contact],
        "notes": [{"id": "f24845c5-af3b-5f5c-8fe0-e0ed4e993ef7", "deleted": true}],
    }))
    .await;
    let (_, c) = app
        .get(
            "/v1/contacts/c39ca419-8ea8-58e1-a02b-11d9dec22eb3",
            READ_KEY,
        )
        .await;
    assert_eq!(c["data"]["name"], "Hana H.");
    assert_eq!(
        c["data"]["mobile"],
        Value::Null,
        "a missing field means null"
    );
    let (s, _) = app
        .get("/v1/notes/f24845c5-af3b-5f5c-8fe0-e0ed4e993ef7", READ_KEY)
        .await;
    assert_eq!(s, 404);
    let (_, n) = app.get("/v1/counts?entities=notes", READ_KEY).await;
    assert_eq!(n["data"]["notes"], 0);
}

async fn data_survives_a_restart(b: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let dir_path = dir.path().to_path_buf();
    let app = spawn_app_in(b.clone(), dir).await;
    app.import_ok(&example()).await;
    let (_, before) = app.paginate("candidates", "limit=1", READ_KEY).await;
    let (_, counts_before) = app.get("/v1/counts", READ_KEY).await;
    app.stop().await;
    let TestApp { data_dir, .. } = app;
    let again = spawn_app_in(b, data_dir).await;
    assert_eq!(again.data_dir.path(), dir_path);
    let (_, after) = again.paginate("candidates", "limit=1", READ_KEY).await;
    let (_, counts_after) = again.get("/v1/counts", READ_KEY).await;
    assert_eq!(before, after);
    assert_eq!(counts_before["data"], counts_after["data"]);
}

async fn offline_import_is_served(b: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("snap.json");
    std::fs::write(&file, serde_json::to_vec(&example()).unwrap()).unwrap();
    let url = match &b {
        Backend::Sqlite => None,
        Backend::Postgres(u) => Some(u.clone()),
    };
    let store = recruitd::store::open(url.as_deref(), dir.path())
        .await
        .unwrap();
    recruitd::cli::offline::import_files(store, dir.path(), &[file])
        .await
        .unwrap();
    let app = spawn_app_in(b, dir).await;
    let (s, body) = app
        .get("/v1/counts?entities=candidates,attachments", READ_KEY)
        .await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(body["data"], json!({"candidates": 2, "attachments": 2}));
}

/// A single node is the whole cluster: it holds and writes every workspace, up to date;
/// the view needs the admin token.
async fn a_single_node_is_the_whole_cluster(b: Backend) {
    let app = spawn_app(b).await;
    app.import_ok(&example()).await;
    let (s, body) = app.admin(Method::GET, "/admin/v1/cluster", None).await;
    assert_eq!(s, 200, "{body}");
    let view = &body["data"];
    let me = view["node"].as_str().unwrap();
    assert!(me.contains(':'), "<hostname>:<port> by default: {me}");
    let nodes = view["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 1, "{view}");
    assert_eq!(nodes[0]["name"], me);
    assert_eq!(nodes[0]["alive"], true);
    assert_eq!(nodes[0]["workspaces_held"], 1);
    assert_eq!(nodes[0]["workspaces_owned"], 1);
    assert!(nodes[0]["advertise_url"]
        .as_str()
        .unwrap()
        .starts_with("https://127.0.0.1:"));
    assert_eq!(nodes[0]["version"], env!("CARGO_PKG_VERSION"));
    // Its copy is at the import's last commit.
    let position = view["workspaces"][0]["positions"][me].as_u64().unwrap();
    assert!(position > 0, "{view}");
    assert_eq!(
        view["workspaces"],
        json!([{
            "id": "b2574901-bbf6-5245-9d3f-3dd074396143",
            "owner": me,
            "holders": [me],
            "lag_ms": {me: 0},
            "positions": {me: position},
        }])
    );
    let res = app
        .client
        .get(format!("{}/admin/v1/cluster", app.admin_base))
        .send()
        .await
        .unwrap();
    let (s, body) = json_of(res).await;
    assert_error(s, &body, 401, "UNAUTHORIZED");
    let (s, _) = app.admin(Method::POST, "/admin/v1/cluster", None).await;
    assert_eq!(s, 405);
}

store_test!(
    a_single_node_is_the_whole_cluster,
    ready_and_token,
    import_reports_counts,
    rejected_import_changes_nothing,
    import_body_is_streamed_after_the_token,
    upserts_replace_whole_and_deletions_remove,
    data_survives_a_restart,
    offline_import_is_served,
);

/// A workspace still loading answers 503 with Retry-After.
#[actix_web::test]
async fn loading_workspace_answers_503() {
    use actix_web::test;
    // Marked loading; nothing loads it.
    let (state, registry) = memory_app_state(false).await;
    let svc = test::init_service(recruitd::http::app(state)).await;
    let req = test::TestRequest::get()
        .uri("/v1/counts")
        .insert_header(("Authorization", format!("Bearer {READ_KEY}")))
        .to_request();
    let res = test::call_service(&svc, req).await;
    assert_eq!(res.status(), 503);
    assert!(res.headers().get("retry-after").is_some());
    let body: Value = test::read_body_json(res).await;
    assert_eq!(body["error"]["code"], "SERVICE_UNAVAILABLE");
    assert!(!registry.is_ready());
}
