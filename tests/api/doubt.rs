//! Commits whose outcome the server did not learn in time, produced for real on a
//! throwaway PostgreSQL cluster: a COMMIT held by a synchronous standby that never
//! connects (durable locally, invisible to other sessions until it ends), and a server
//! turned read-only as after a failover. The client is told 503, settles by retrying with
//! its `reference`, and no write is ever counted twice: one note per reference in the API
//! and in the store, the API's notes equal the store's, and a restart changes nothing a
//! client sees.

use crate::helpers::*;
use crate::pgcluster::ThrowawayPostgres;
use reqwest::Method;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// A note on the example company with a `reference`; status, Retry-After and body.
async fn post_note(app: &TestApp, text: &str, reference: &str) -> (u16, Option<String>, Value) {
    app.post_company_note_with(text, Some(reference)).await
}

/// The answer is 503 SERVICE_UNAVAILABLE with an integer `Retry-After`.
fn assert_retry_later((status, retry, body): &(u16, Option<String>, Value)) {
    assert_error(
        reqwest::StatusCode::from_u16(*status).unwrap(),
        body,
        503,
        "SERVICE_UNAVAILABLE",
    );
    assert!(
        retry.as_deref().is_some_and(|r| r.parse::<u64>().is_ok()),
        "Retry-After"
    );
}

/// Every note the API lists, as (id, updated_at, body_html), in sync order.
async fn api_notes(app: &TestApp) -> Vec<(String, String, String)> {
    let (notes, _) = app.paginate("notes", "limit=500", READ_KEY).await;
    notes
        .iter()
        .map(|n| {
            (
                n["id"].as_str().unwrap().to_string(),
                n["updated_at"].as_str().unwrap().to_string(),
                n["body_html"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// The notes the store holds that are not private, as (id, body_html), and how many of
/// them carry `reference`.
async fn store_notes(url: &str, reference: &str) -> (Vec<(String, String)>, usize) {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
    let bodies: Vec<String> =
        sqlx::query_scalar("SELECT body FROM records WHERE kind = 'note' ORDER BY id")
            .fetch_all(&mut conn)
            .await
            .unwrap();
    conn.close().await.ok();
    let mut shown = Vec::new();
    let mut with_reference = 0;
    for b in bodies {
        let v: Value = serde_json::from_str(&b).unwrap();
        if v["reference"] == reference {
            with_reference += 1;
        }
        if v["is_private"] != true {
            shown.push((
                v["id"].as_str().unwrap().to_string(),
                v["body_html"].as_str().unwrap_or_default().to_string(),
            ));
        }
    }
    shown.sort();
    (shown, with_reference)
}

/// API notes as the store's pairs.
fn as_store_pairs(api: &[(String, String, String)]) -> Vec<(String, String)> {
    let mut v: Vec<_> = api.iter().map(|(i, _, b)| (i.clone(), b.clone())).collect();
    v.sort();
    v
}

#[actix_web::test]
async fn a_commit_that_ends_after_its_deadline_is_counted_once() {
    let Some(pg) = ThrowawayPostgres::start() else {
        return;
    };
    let backend = Backend::Postgres(pg.url());
    let app = spawn_app(backend.clone()).await;
    app.import_ok(&example()).await;
    let (s, _, first) = post_note(&app, "before the stall", "crm-before").await;
    assert_eq!(s, 201, "{first}");

    // Every COMMIT now waits for a standby that never connects: durable locally, not
    // visible to other sessions, never confirmed to recruitd.
    pg.stall_commits().await;
    let started = Instant::now();
    assert_retry_later(&post_note(&app, "in doubt", "crm-doubt").await);
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "answered in bounded time, not in {:?}",
        started.elapsed()
    );

    // The server settles the batch while the COMMIT is still held (today's standby never
    // comes); only then is the standby released, as an operator would.
    tokio::time::sleep(Duration::from_secs(4)).await;
    pg.release_commits().await;

    // The client retries the identical request, as told to: the same note, not a second.
    let deadline = Instant::now() + Duration::from_secs(20);
    let retried = loop {
        let (s, _, body) = post_note(&app, "in doubt", "crm-doubt").await;
        match s {
            200 | 201 => break body,
            503 => {
                assert!(Instant::now() < deadline, "still 503: {body}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            _ => panic!("retry answered {s}: {body}"),
        }
    };
    let id = retried["data"]["id"].as_str().unwrap().to_string();

    let api = api_notes(&app).await;
    let in_doubt: Vec<_> = api.iter().filter(|(_, _, b)| b == "in doubt").collect();
    assert_eq!(in_doubt.len(), 1, "one note in the API: {api:?}");
    assert_eq!(in_doubt[0].0, id);
    let (stored, with_reference) = store_notes(&pg.url(), "crm-doubt").await;
    assert_eq!(with_reference, 1, "one note per reference in the store");
    assert_eq!(
        as_store_pairs(&api),
        stored,
        "the API's notes are the store's"
    );

    // A restart: every client sees the same notes, with the same updated_at.
    app.stop_now().await;
    let TestApp { data_dir, .. } = app;
    let again = spawn_app_in(backend, data_dir).await;
    assert_eq!(api_notes(&again).await, api, "a restart changes nothing");
    let (s, _, body) = post_note(&again, "in doubt", "crm-doubt").await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(body["data"]["id"], id.as_str());
    again.stop_now().await;
}

#[actix_web::test]
async fn a_read_only_store_answers_503_and_changes_nothing() {
    let Some(pg) = ThrowawayPostgres::start() else {
        return;
    };
    let app = spawn_app(Backend::Postgres(pg.url())).await;
    app.import_ok(&example()).await;
    let before = api_notes(&app).await;

    // As after a failover to a server that is still a standby, or read-only by setting.
    pg.set("default_transaction_read_only", Some("on")).await;
    for i in 0..3 {
        assert_retry_later(&post_note(&app, "refused", &format!("ro-{i}")).await);
    }
    let (s, body) = app
        .admin(
            Method::POST,
            "/admin/v1/keys",
            Some(&json!({"workspace_id": "b2574901-bbf6-5245-9d3f-3dd074396143", "created_by_email": "olivia@northwind.example", "scopes": []})),
        )
        .await;
    assert_error(s, &body, 503, "SERVICE_UNAVAILABLE");
    assert_eq!(api_notes(&app).await, before, "nothing changed");

    // Writable again: writes succeed without a restart.
    pg.set("default_transaction_read_only", None).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (s, _, body) = post_note(&app, "accepted", "ro-after").await;
        if s == 201 {
            break;
        }
        assert_eq!(s, 503, "{body}");
        assert!(Instant::now() < deadline, "still refused: {body}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let after = api_notes(&app).await;
    assert_eq!(after.len(), before.len() + 1);
    let (stored, _) = store_notes(&pg.url(), "ro-after").await;
    assert_eq!(as_store_pairs(&after), stored);
    assert!(!pg.log().is_empty());
    app.stop_now().await;
}
