//! A workspace whose load fails at start-up (a store error mid-load) is tried again with
//! backoff until it loads; meanwhile its requests answer 503 with Retry-After, and the
//! admin `ready` endpoint and the metrics say which workspace is not loaded and why.

use crate::helpers::*;
use reqwest::Method;
use std::time::{Duration, Instant};

const WORKSPACE: &str = "b2574901-bbf6-5245-9d3f-3dd074396143";
const NOTE: &str = "f24845c5-af3b-5f5c-8fe0-e0ed4e993ef7";

async fn a_failed_load_is_retried_and_reported(b: Backend) {
    let app = spawn_app(b.clone()).await;
    app.import_ok(&example()).await;
    let (_, notes_before) = app.paginate("notes", "limit=500", READ_KEY).await;
    app.stop_now().await;
    let TestApp { data_dir, .. } = app;
    let dir = data_dir.path().to_path_buf();

    // A record that does not decode: the load fails part way through.
    let body = store_sql(
        &b,
        &dir,
        &format!("SELECT body FROM records WHERE id = '{NOTE}'"),
    )
    .await
    .expect("the note is stored");
    store_sql(
        &b,
        &dir,
        &format!("UPDATE records SET body = '{{not json' WHERE id = '{NOTE}'"),
    )
    .await;

    let app = spawn_app_loading(b.clone(), data_dir).await;
    // Reported while it waits: ready names the workspace and the error, the metric too.
    let deadline = Instant::now() + Duration::from_secs(20);
    let message = loop {
        let (s, body) = app.admin(Method::GET, "/admin/v1/ready", None).await;
        let m = assert_error(s, &body, 503, "SERVICE_UNAVAILABLE");
        if m.contains(WORKSPACE) {
            break m;
        }
        assert!(Instant::now() < deadline, "no failure reported: {m}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(message.contains("corrupt"), "{message}");
    let metrics = app.metrics_text().await;
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("recruitd_workspace_load_failures{")
                && l.contains(WORKSPACE)
                && l.contains("error=\"corrupt\"")),
        "{metrics}"
    );
    assert!(
        metrics.contains("recruitd_workspaces{state=\"failing\"} 1"),
        "{metrics}"
    );
    let res = app
        .req(Method::GET, "/v1/notes", Some(READ_KEY))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 503);
    assert!(res.headers().contains_key("retry-after"));

    // Repaired: the next attempt loads it, with nothing restarted.
    let restore = format!(
        "UPDATE records SET body = '{}' WHERE id = '{NOTE}'",
        body.replace('\'', "''")
    );
    store_sql(&b, &dir, &restore).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while !(app.registry.is_ready() && app.membership.is_settled()) {
        assert!(Instant::now() < deadline, "never loaded after the repair");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (s, body) = app.admin(Method::GET, "/admin/v1/ready", None).await;
    assert_eq!(s, 200, "{body}");
    let (_, notes_after) = app.paginate("notes", "limit=500", READ_KEY).await;
    assert_eq!(notes_before, notes_after);
    let metrics = app.metrics_text().await;
    assert!(
        !metrics.contains("recruitd_workspace_load_failures{"),
        "{metrics}"
    );
    app.stop_now().await;
}

store_test!(a_failed_load_is_retried_and_reported);
