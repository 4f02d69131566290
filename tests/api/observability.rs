//! Metrics on the admin interface, and the caps on request size.

use crate::helpers::*;
use reqwest::Method;
use serde_json::json;

/// The value of the first sample line starting with `prefix`.
fn sample(text: &str, prefix: &str) -> f64 {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no sample {prefix} in:\n{text}"))
        .rsplit(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

async fn metrics_cover_requests_commits_limits_and_indexes(b: Backend) {
    let app = spawn_app(b).await;
    app.import_ok(&example()).await;
    app.lookups_and_a_miss(3).await;
    assert_eq!(app.post_company_note("x").await.0, 201);
    let text = app.metrics_text().await;
    assert_eq!(
        sample(
            &text,
            "recruitd_http_requests_total{route=\"/v1/search/phone\",entity=\"\",method=\"GET\",status=\"200\"}"
        ),
        3.0
    );
    assert_eq!(
        sample(
            &text,
            "recruitd_http_requests_total{route=\"/v1/{entity}/{id}\",entity=\"candidates\",method=\"GET\",status=\"404\"}"
        ),
        1.0
    );
    assert_eq!(
        sample(
            &text,
            "recruitd_http_request_duration_seconds_count{route=\"/v1/search/phone\",entity=\"\",method=\"GET\",status=\"200\"}"
        ),
        3.0
    );
    assert!(
        sample(
            &text,
            "recruitd_store_commit_duration_seconds_count{kind=\"writes\",outcome=\"ok\"}"
        ) >= 1.0
    );
    assert!(
        sample(
            &text,
            "recruitd_store_commit_duration_seconds_count{kind=\"import\",outcome=\"ok\"}"
        ) >= 1.0
    );
    assert_eq!(sample(&text, "recruitd_workspaces{state=\"ready\"}"), 1.0);
    // The example's 15 records and the note written above, held in memory; the
    // process's resident memory, which holds them.
    assert_eq!(
        sample(
            &text,
            "recruitd_workspace_records{workspace=\"b2574901-bbf6-5245-9d3f-3dd074396143\"}"
        ),
        16.0
    );
    assert!(sample(&text, "recruitd_process_resident_memory_bytes") > 1_000_000.0);
    // A small import lands in the index's delta; a large one in its base.
    let labels = "{workspace=\"b2574901-bbf6-5245-9d3f-3dd074396143\",index=\"phone\"}";
    let indexed = sample(&text, &format!("recruitd_search_index_keys{labels}"))
        + sample(&text, &format!("recruitd_search_index_delta_keys{labels}"));
    assert!(indexed >= 3.0, "{indexed}");
    // No secret, ever.
    assert!(!text.contains(READ_KEY) && !text.contains(&app.admin_token));
    // Rate-limit refusals are counted per key id.
    let tiny = {
        let (s, body) = app
            .admin(
                Method::POST,
                "/admin/v1/keys",
                Some(
                    &json!({"workspace_id": "b2574901-bbf6-5245-9d3f-3dd074396143",
                    "created_by_email": "olivia@northwind.example", "rate_limit_per_minute": 1}),
                ),
            )
            .await;
        assert_eq!(s, 200);
        (
            body["data"]["id"].as_str().unwrap().to_string(),
            body["data"]["secret"].as_str().unwrap().to_string(),
        )
    };
    assert_eq!(app.get("/v1/counts", &tiny.1).await.0, 200);
    assert_eq!(app.get("/v1/counts", &tiny.1).await.0, 429);
    let text = app.metrics_text().await;
    assert_eq!(
        sample(
            &text,
            &format!("recruitd_rate_limited_total{{key_id=\"{}\"}}", tiny.0)
        ),
        1.0
    );
    // The admin token guards the metrics too.
    let res = app
        .client
        .get(format!("{}/metrics", app.admin_base))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
}

async fn oversized_requests_are_refused_with_the_envelope(b: Backend) {
    let app = spawn_app(b).await;
    app.import_ok(&example()).await;
    let long = "9".repeat(9 * 1024);
    let (s, body) = app
        .get(&format!("/v1/search/phone?number={long}"), READ_KEY)
        .await;
    let msg = assert_error(s, &body, 400, "BAD_REQUEST");
    assert!(msg.contains("URL"), "{msg}");
    let res = app
        .req(Method::GET, "/v1/counts", Some(READ_KEY))
        .header("x-padding", "p".repeat(17 * 1024))
        .send()
        .await
        .unwrap();
    let status = res.status();
    if status == 400 {
        let (s, body) = json_of(res).await;
        let msg = assert_error(s, &body, 400, "BAD_REQUEST");
        assert!(msg.contains("headers"), "{msg}");
    } else {
        // The HTTP layer may refuse a head this large before the service sees it.
        assert_eq!(status, 431, "oversized headers must be refused");
    }
}

store_test!(
    metrics_cover_requests_commits_limits_and_indexes,
    oversized_requests_are_refused_with_the_envelope
);
