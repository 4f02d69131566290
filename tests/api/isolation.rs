//! One workspace never stalls another: while a large import runs in one workspace, API
//! writes to another keep being answered, and none is refused. (How quickly: see
//! `loadtest/run-isolation.sh`, which measures it at 100,000 people in a release build.)

use crate::helpers::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// People in the import: some 20,000 records, far more than a store writes in one
/// transaction of an import, and a plan that takes a while to make.
const PEOPLE: usize = 3_000;

async fn an_import_never_stalls_another_workspace(b: Backend) {
    let app = Arc::new(spawn_app(b).await);
    app.import_ok(&example()).await;
    let bytes =
        recruitd::generate::snapshot_bytes(&recruitd::generate::GenerateOptions::new(PEOPLE, 11));

    // The import, through the admin interface, in another workspace.
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

    // Meanwhile one client writes notes to the example workspace, one after another.
    let (mut during, mut total, mut slowest) = (0, 0, Duration::ZERO);
    while importing.load(Ordering::SeqCst) {
        let started = Instant::now();
        let (s, _, body) = app
            .post_company_note(&format!("during the import {total}"))
            .await;
        assert_eq!(s, 201, "write {total} to another workspace refused: {body}");
        slowest = slowest.max(started.elapsed());
        total += 1;
        if importing.load(Ordering::SeqCst) {
            during += 1;
        }
    }
    let took = import.await.unwrap();
    eprintln!(
        "{:?}: import of {PEOPLE} people took {took:?}; {during} writes to another workspace answered during it, the slowest in {slowest:?}",
        app.backend
    );
    // Writes kept being answered all along: not merely before and after the import.
    assert!(
        during >= 10,
        "only {during} writes answered during an import of {took:?}"
    );
    let (_, counts) = app.get("/v1/counts?entities=notes", READ_KEY).await;
    assert!(counts["data"]["notes"].as_u64().unwrap() >= total as u64);
}

store_test!(an_import_never_stalls_another_workspace);
