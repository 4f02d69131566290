//! List semantics: limit, sort, updated_since, cursors, next_cursor, total_count.

use crate::helpers::*;
use serde_json::{json, Value};

/// A workspace with `n` companies, two of them sharing each timestamp (ties broken by id).
fn companies(n: usize) -> Value {
    let mut list = Vec::new();
    for i in 0..n {
        let day = 1 + (i / 2) % 28;
        list.push(json!({
            "id": format!("00000000-0000-4000-8000-{:012x}", 1000 - i),
            "name": format!("Company {i}"),
            "created_at": "2026-08-20T00:00:00Z",
            "updated_at": format!("2026-09-{day:02}T12:00:00Z"),
        }));
    }
    let mut s = example();
    s["companies"].as_array_mut().unwrap().extend(list);
    s
}

async fn limit_parsing(b: Backend) {
    let app = spawn_app(b).await;
    app.import_ok(&companies(30)).await;
    for ok in ["1", "007", "500", "501", "99999999999999999999"] {
        let (s, body) = app
            .get(&format!("/v1/companies?limit={ok}"), READ_KEY)
            .await;
        assert_eq!(s, 200, "limit={ok}: {body}");
    }
    let (_, body) = app.get("/v1/companies?limit=2", READ_KEY).await;
    assert_eq!(body["data"].as_array().unwrap().len(), 2);
    let (_, body) = app.get("/v1/companies", READ_KEY).await;
    assert_eq!(
        body["data"].as_array().unwrap().len(),
        31,
        "default 100 covers all 31"
    );
    for bad in [
        "0", "-1", "2.5e2", "%2B250", "250.0", "%20250", "250%20", "", "ten", "1e3", "0x10",
    ] {
        let (s, body) = app
            .get(&format!("/v1/companies?limit={bad}"), READ_KEY)
            .await;
        let msg = assert_error(s, &body, 400, "BAD_REQUEST");
        assert!(msg.contains("limit"), "{bad}: {msg}");
    }
}

async fn limit_above_500_is_clamped(b: Backend) {
    let app = spawn_app(b).await;
    app.import_ok(&companies(520)).await;
    let (_, body) = app.get("/v1/companies?limit=1000", READ_KEY).await;
    assert_eq!(body["data"].as_array().unwrap().len(), 500);
    assert!(body["next_cursor"].is_string());
    assert_eq!(body["total_count"], 521);
}

async fn sort_only_updated_at(b: Backend) {
    let app = spawn_app(b).await;
    app.import_ok(&example()).await;
    assert_eq!(app.get("/v1/jobs?sort=updated_at", READ_KEY).await.0, 200);
    for bad in ["-updated_at", "created_at", "id", "UPDATED_AT", ""] {
        let (s, body) = app.get(&format!("/v1/jobs?sort={bad}"), READ_KEY).await;
        assert_error(s, &body, 400, "BAD_REQUEST");
    }
}

async fn order_and_ties(b: Backend) {
    let app = spawn_app(b).await;
    app.import_ok(&companies(40)).await;
    let (all, _) = app.paginate("companies", "limit=3", READ_KEY).await;
    assert_eq!(all.len(), 41);
    let keys: Vec<(String, String)> = all
        .iter()
        .map(|c| {
            (
                c["updated_at"].as_str().unwrap().to_string(),
                c["id"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted, "oldest first by (updated_at, id)");
}

async fn updated_since_forms(b: Backend) {
    let app = spawn_app(b).await;
    app.import_ok(&companies(40)).await;
    // 2026-09-10T12:00Z and later: companies with day >= 10, plus Fabrikam (09-15).
    let expect = |body: &Value| body["total_count"].as_u64().unwrap();
    let base = expect(
        &app.get("/v1/companies?updated_since=2026-09-10T12:00:00Z", READ_KEY)
            .await
            .1,
    );
    assert!(base > 0 && base < 41);
    for same in [
        "2026-09-10T12:00",
        "2026-09-10T12:00:00",
        "2026-09-10%2012:00:00",
        "2026-09-10T12:00:00.000",
        "2026-09-10T12:00:00.000Z",
        "2026-09-10T13:00:00%2B01:00",
        "2026-09-10T13:00:00+01:00",
        "2026-09-10T11:00:00-01:00",
    ] {
        let (s, body) = app
            .get(&format!("/v1/companies?updated_since={same}"), READ_KEY)
            .await;
        assert_eq!(s, 200, "{same}: {body}");
        assert_eq!(expect(&body), base, "{same} is the same instant, inclusive");
    }
    // One millisecond later excludes the records stamped exactly at the boundary.
    let later = expect(
        &app.get(
            "/v1/companies?updated_since=2026-09-10T12:00:00.001Z",
            READ_KEY,
        )
        .await
        .1,
    );
    assert_eq!(later, base - 2);
    // A date alone is midnight UTC.
    let (_, day) = app
        .get("/v1/companies?updated_since=2026-09-10", READ_KEY)
        .await;
    assert_eq!(expect(&day), base);
    for bad in [
        "2026",
        "2026-09",
        "10/09/2026",
        "1788220800000",
        "2026-09-10T12",
        "2026-09-10T12:00:00.1Z",
        "Thu%20Sep%2010%202026%2012:00:00%20GMT%2B0000",
        "2026-9-10",
        "2026-09-10T25:00",
        "yesterday",
    ] {
        let (s, body) = app
            .get(&format!("/v1/companies?updated_since={bad}"), READ_KEY)
            .await;
        let msg = assert_error(s, &body, 400, "BAD_REQUEST");
        assert!(msg.contains("YYYY-MM-DD"), "{bad}: {msg}");
    }
}

async fn cursors_end_and_total_count(b: Backend) {
    let app = spawn_app(b).await;
    app.import_ok(&companies(9)).await; // 10 companies
                                        // A page that fills limit exactly carries a cursor, and a final empty page follows.
    let (_, p1) = app.get("/v1/companies?limit=5", READ_KEY).await;
    assert_eq!(p1["total_count"], 10);
    let c1 = p1["next_cursor"].as_str().unwrap();
    let (_, p2) = app
        .get(&format!("/v1/companies?limit=5&cursor={c1}"), READ_KEY)
        .await;
    assert_eq!(p2["data"].as_array().unwrap().len(), 5);
    assert!(p2.get("total_count").is_none());
    let c2 = p2["next_cursor"].as_str().unwrap();
    let (_, p3) = app
        .get(&format!("/v1/companies?limit=5&cursor={c2}"), READ_KEY)
        .await;
    assert_eq!(p3["data"], json!([]));
    assert_eq!(p3["next_cursor"], Value::Null);
    // A short page ends it directly.
    let (_, q) = app.get("/v1/companies?limit=7", READ_KEY).await;
    let (_, q2) = app
        .get(
            &format!(
                "/v1/companies?limit=7&cursor={}",
                q["next_cursor"].as_str().unwrap()
            ),
            READ_KEY,
        )
        .await;
    assert_eq!(q2["data"].as_array().unwrap().len(), 3);
    assert_eq!(q2["next_cursor"], Value::Null);
}

async fn bad_cursors_are_rejected(b: Backend) {
    let app = spawn_app(b).await;
    app.import_ok(&companies(9)).await;
    let (_, p) = app
        .get("/v1/companies?limit=2&updated_since=2026-09-01", READ_KEY)
        .await;
    let c = p["next_cursor"].as_str().unwrap().to_string();
    assert_eq!(
        app.get(
            &format!("/v1/companies?limit=2&updated_since=2026-09-01&cursor={c}"),
            READ_KEY
        )
        .await
        .0,
        200
    );
    // The same instant written differently is the same updated_since.
    assert_eq!(
        app.get(
            &format!("/v1/companies?limit=2&updated_since=2026-09-01T00:00Z&cursor={c}"),
            READ_KEY
        )
        .await
        .0,
        200
    );
    let mut tampered = c.clone().into_bytes();
    let i = tampered.len() / 2;
    tampered[i] = if tampered[i] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    for path in [
        format!("/v1/companies?limit=2&updated_since=2026-09-02&cursor={c}"),
        format!("/v1/companies?limit=2&cursor={c}"),
        format!("/v1/jobs?limit=2&updated_since=2026-09-01&cursor={c}"),
        format!("/v1/companies?limit=2&updated_since=2026-09-01&cursor={tampered}"),
        "/v1/companies?cursor=not-a-cursor".to_string(),
        "/v1/companies?cursor=".to_string(),
        "/v1/companies?cursor=%FF".to_string(),
    ] {
        let (s, body) = app.get(&path, READ_KEY).await;
        let msg = assert_error(s, &body, 400, "BAD_REQUEST");
        assert!(msg.contains("cursor"), "{path}: {msg}");
    }
}

async fn records_updated_during_a_sync_are_not_skipped(b: Backend) {
    let app = spawn_app(b).await;
    let snap = companies(9);
    app.import_ok(&snap).await;
    let (_, p1) = app.get("/v1/companies?limit=4", READ_KEY).await;
    let first: Vec<Value> = p1["data"].as_array().unwrap().clone();
    // Move an already-seen record forward: it must reappear later in the same sync.
    let mut moved = first[0].clone();
    let id = moved["id"].as_str().unwrap().to_string();
    let mut raw = snap["companies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id.as_str())
        .unwrap()
        .clone();
    raw["updated_at"] = json!("2026-10-30T00:00:00Z");
    moved["updated_at"] = json!("2026-10-30T00:00:00.000Z");
    app.import_ok(&json!({"format": "recruit-snapshot/1", "workspace": snap["workspace"].clone(), "companies": [raw]})).await;
    let mut rest = Vec::new();
    let mut cursor = p1["next_cursor"].as_str().map(str::to_string);
    while let Some(c) = cursor {
        let (_, p) = app
            .get(&format!("/v1/companies?limit=4&cursor={c}"), READ_KEY)
            .await;
        rest.extend(p["data"].as_array().unwrap().iter().cloned());
        cursor = p["next_cursor"].as_str().map(str::to_string);
    }
    assert_eq!(rest.last().unwrap()["id"], id.as_str());
    assert_eq!(
        first.len() + rest.len(),
        11,
        "ten companies, the moved one seen twice"
    );
}

store_test!(
    limit_parsing,
    limit_above_500_is_clamped,
    sort_only_updated_at,
    order_and_ties,
    updated_since_forms,
    cursors_end_and_total_count,
    bad_cursors_are_rejected,
    records_updated_during_a_sync_are_not_skipped,
);
