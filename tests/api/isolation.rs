//! One workspace never stalls another: while a large import runs in one workspace, API
//! writes to another are answered as quickly as ever and none is refused.

use crate::helpers::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// People in the large import (about 740,000 records).
const PEOPLE: usize = 100_000;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1]
}

async fn an_import_never_stalls_another_workspace(b: Backend) {
    let app = Arc::new(spawn_app(b).await);
    app.import_ok(&example()).await;
    let bytes = recruitd::generate::snapshot_bytes(&recruitd::generate::GenerateOptions {
        people: PEOPLE,
        seed: 11,
    });
    let snapshot: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    let other = snapshot["workspace"]["id"].as_str().unwrap().to_string();
    drop(snapshot);

    // The import, through the admin interface, in the other workspace.
    let importing = Arc::new(AtomicBool::new(true));
    let import = {
        let (app, importing) = (app.clone(), importing.clone());
        actix_web::rt::spawn(async move {
            let started = Instant::now();
            let res = app
                .client
                .post(format!("{}/admin/v1/import", app.admin_base))
                .bearer_auth(&app.admin_token)
                .header("content-type", "application/json")
                .body(bytes)
                .send()
                .await
                .unwrap();
            let (s, body) = json_of(res).await;
            importing.store(false, Ordering::SeqCst);
            assert_eq!(s, 200, "{body}");
            started.elapsed()
        })
    };

    // Meanwhile, one client writes notes to the example workspace, one after another.
    let mut latencies = Vec::new();
    let mut i = 0;
    while importing.load(Ordering::SeqCst) || latencies.len() < 50 {
        let started = Instant::now();
        let (s, _, body) = app
            .post_company_note(&format!("during the import {i}"))
            .await;
        latencies.push(started.elapsed());
        assert_eq!(s, 201, "write {i} to another workspace refused: {body}");
        i += 1;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let took = import.await.unwrap();
    let (_, counts) = app.get("/v1/counts?entities=candidates", READ_KEY).await;
    assert!(counts["data"]["candidates"].as_u64().is_some());
    latencies.sort();
    let (p50, p99, max) = (
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
        *latencies.last().unwrap(),
    );
    eprintln!(
        "{:?}: import of {PEOPLE} people took {took:?}; {} writes to another workspace meanwhile: p50 {p50:?}, p99 {p99:?}, max {max:?}",
        app.backend,
        latencies.len()
    );
    assert!(
        p99 < Duration::from_millis(50),
        "writes to another workspace slowed by an import: p99 {p99:?} (max {max:?})"
    );
    assert!(!other.is_empty());
}

store_test!(an_import_never_stalls_another_workspace);
