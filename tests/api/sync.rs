//! The sync guarantee: a client following the spec's watermark rule while writers run
//! ends with exactly the server's final state — nothing missed, nothing stale.

use crate::helpers::*;
use reqwest::Method;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

const JOB: &str = "2fae0fc8-6eee-55da-8a7e-f15794b7515f";
const LEO_JOB_ROW: &str = "b509f583-def1-5a25-9cb1-a1532b926c94";

/// One client's copy of an entity, kept by the watermark rule.
struct Mirror {
    entity: &'static str,
    records: BTreeMap<String, Value>,
    watermark: Option<String>,
}

impl Mirror {
    fn new(entity: &'static str) -> Self {
        Mirror {
            entity,
            records: BTreeMap::new(),
            watermark: None,
        }
    }

    /// One incremental sync: from the watermark (inclusive), following cursors to the
    /// end, upserting by id, then moving the watermark to the last `updated_at` seen.
    async fn sync(&mut self, app: &TestApp, key: &str) {
        let mut query = "limit=7".to_string();
        if let Some(w) = &self.watermark {
            query.push_str(&format!("&updated_since={}", urlencode(w)));
        }
        let mut cursor: Option<String> = None;
        loop {
            let mut path = format!("/v1/{}?{query}", self.entity);
            if let Some(c) = &cursor {
                path.push_str(&format!("&cursor={}", urlencode(c)));
            }
            let (s, body) = app.get(&path, key).await;
            assert_eq!(s, 200, "{path}: {body}");
            for r in body["data"].as_array().unwrap() {
                self.watermark = Some(r["updated_at"].as_str().unwrap().to_string());
                self.records
                    .insert(r["id"].as_str().unwrap().to_string(), r.clone());
            }
            match body["next_cursor"].as_str() {
                Some(c) => cursor = Some(c.to_string()),
                None => break,
            }
        }
    }
}

fn urlencode(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// A writer: creates and edits notes, tasks and companies until told to stop.
async fn writer(app: Arc<TestApp>, key: String, n: u64, stop: Arc<AtomicBool>) -> usize {
    let mut rng = n
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut notes: Vec<String> = Vec::new();
    let mut tasks: Vec<String> = Vec::new();
    let mut done = 0;
    while !stop.load(Ordering::Relaxed) {
        let r = next();
        let (method, path, body) = match r % 6 {
            0 | 1 => (
                Method::POST,
                "/v1/notes".to_string(),
                json!({"parent_type": "candidate", "parent_id": LEO_JOB_ROW,
                       "body_html": format!("w{n} #{r}"), "reference": format!("w{n}-{}", r % 16)}),
            ),
            2 if !notes.is_empty() => (
                Method::PATCH,
                format!("/v1/notes/{}", notes[(r as usize / 7) % notes.len()]),
                json!({"title": format!("t{r}")}),
            ),
            3 => (
                Method::POST,
                "/v1/tasks".to_string(),
                json!({"parent_type": "company", "parent_id": FABRIKAM, "title": format!("task {r}")}),
            ),
            4 if !tasks.is_empty() => (
                Method::PATCH,
                format!("/v1/tasks/{}", tasks[(r as usize / 7) % tasks.len()]),
                json!({"status": if r % 2 == 0 { "completed" } else { "open" }}),
            ),
            _ => (
                Method::PATCH,
                format!("/v1/jobs/{JOB}"),
                json!({"title": format!("Site Reliability Engineer {r}")}),
            ),
        };
        let res = app
            .req(method, &path, Some(&key))
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = res.status();
        let body: Value = res.json().await.unwrap();
        assert!(status.is_success(), "{path}: {status} {body}");
        if path == "/v1/notes" {
            notes.push(body["data"]["id"].as_str().unwrap().to_string());
        } else if path == "/v1/tasks" {
            tasks.push(body["data"]["id"].as_str().unwrap().to_string());
        }
        done += 1;
    }
    done
}

async fn watermark_sync_misses_nothing_under_concurrent_writes(b: Backend) {
    let app = Arc::new(spawn_app(b).await);
    app.import_ok(&example()).await;
    let key = app
        .key_with_scopes(&["notes:write", "tasks:write", "records:write"])
        .await;
    // The syncing client polls far beyond the default budget of 600 requests a minute.
    let reader = app.key_with_scopes(&[]).await;
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|n| actix_web::rt::spawn(writer(app.clone(), key.clone(), n, stop.clone())))
        .collect();
    let mut mirrors = [
        Mirror::new("notes"),
        Mirror::new("tasks"),
        Mirror::new("jobs"),
    ];
    let started = std::time::Instant::now();
    while started.elapsed() < Duration::from_secs(3) {
        for m in &mut mirrors {
            m.sync(&app, &reader).await;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let mut writes = 0;
    for w in writers {
        writes += w.await.unwrap();
    }
    assert!(writes > 50, "only {writes} writes ran");
    for m in &mut mirrors {
        m.sync(&app, &reader).await;
        let (all, _) = app.paginate(m.entity, "limit=500", &reader).await;
        let truth: BTreeMap<String, Value> = all
            .into_iter()
            .map(|r| (r["id"].as_str().unwrap().to_string(), r))
            .collect();
        assert_eq!(m.records.len(), truth.len(), "{}: record count", m.entity);
        for (id, r) in &truth {
            assert_eq!(
                m.records.get(id),
                Some(r),
                "{} {id}: missed or stale",
                m.entity
            );
        }
    }
}

store_test!(watermark_sync_misses_nothing_under_concurrent_writes);
