//! Per-key rate limits over HTTPS: exact budgets, `Retry-After`, the draft `RateLimit`
//! headers, independent keys.

use crate::helpers::*;
use recruitd::clock::Clock;
use reqwest::Method;
use serde_json::json;

const T0: i64 = 1_790_000_000;

async fn app_with(b: Backend, clock: &Clock, default_budget: u32) -> TestApp {
    let clock = clock.clone();
    let app = spawn_app_with(b, tempfile::tempdir().unwrap(), move |s| {
        s.clock = clock;
        s.rate_limit_per_minute = default_budget;
    })
    .await;
    app.import_ok(&example()).await;
    app
}

/// A read key with its own budget (or the server default when `None`).
async fn key(app: &TestApp, budget: Option<u32>) -> String {
    let (s, body) = app
        .admin(
            Method::POST,
            "/admin/v1/keys",
            Some(&json!({
                "workspace_id": "b2574901-bbf6-5245-9d3f-3dd074396143",
                "created_by_email": "olivia@northwind.example",
                "scopes": [], "rate_limit_per_minute": budget
            })),
        )
        .await;
    assert_eq!(s, 200, "{body}");
    body["data"]["secret"].as_str().unwrap().to_string()
}

/// `n` concurrent GETs; returns (status, Retry-After, RateLimit-Policy, RateLimit) each.
async fn burst(app: &TestApp, key: &str, n: usize) -> Vec<(u16, Option<String>, String, String)> {
    let mut tasks = Vec::new();
    for _ in 0..n {
        let req = app.req(Method::GET, "/v1/counts?entities=users", Some(key));
        tasks.push(actix_web::rt::spawn(async move {
            let res = req.send().await.unwrap();
            let h = |name: &str| {
                res.headers()
                    .get(name)
                    .map(|v| v.to_str().unwrap().to_string())
            };
            assert!(
                h("strict-transport-security").is_some_and(|v| v.starts_with("max-age=")),
                "HSTS on every HTTPS response"
            );
            assert!(h("server").is_none(), "no server banner");
            let out = (
                res.status().as_u16(),
                h("retry-after"),
                h("ratelimit-policy").expect("RateLimit-Policy on every response"),
                h("ratelimit").expect("RateLimit on every response"),
            );
            let (status, body) = json_of(res).await;
            if status == 429 {
                assert_error(status, &body, 429, "RATE_LIMITED");
            }
            out
        }));
    }
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

async fn a_burst_admits_exactly_the_budget(b: Backend) {
    let clock = Clock::manual(T0);
    let app = app_with(b, &clock, 600).await;
    let own = key(&app, Some(25)).await;
    let results = burst(&app, &own, 125).await;
    assert_eq!(results.iter().filter(|r| r.0 == 200).count(), 25);
    assert_eq!(results.iter().filter(|r| r.0 == 429).count(), 100);
    for (status, retry, policy, state) in &results {
        assert_eq!(policy, "\"per-key\";q=25;w=60");
        assert!(state.starts_with("\"per-key\";r="), "{state}");
        if *status == 429 {
            let r: u64 = retry
                .as_deref()
                .unwrap()
                .parse()
                .expect("integer Retry-After");
            assert!((1..=61).contains(&r));
            assert!(state.contains("r=0"));
        }
    }
    let retry: i64 = results
        .iter()
        .find(|r| r.0 == 429)
        .unwrap()
        .1
        .as_deref()
        .unwrap()
        .parse()
        .unwrap();
    // Another key is unaffected.
    let other = key(&app, Some(25)).await;
    assert_eq!(app.get("/v1/counts", &other).await.0, 200);
    // One second before Retry-After: still refused. At Retry-After: the identical request
    // succeeds.
    clock.set(T0 + retry - 1);
    assert_eq!(burst(&app, &own, 1).await[0].0, 429);
    clock.set(T0 + retry);
    assert_eq!(burst(&app, &own, 1).await[0].0, 200);
}

async fn the_server_default_applies_without_an_override(b: Backend) {
    let clock = Clock::manual(T0);
    let app = app_with(b, &clock, 600).await;
    let k = key(&app, None).await;
    let results = burst(&app, &k, 700).await;
    assert_eq!(results.iter().filter(|r| r.0 == 200).count(), 600);
    assert!(results.iter().all(|r| r.2 == "\"per-key\";q=600;w=60"));
    // Refusals count nothing: a minute later the full budget is back.
    clock.set(T0 + 61);
    let again = burst(&app, &k, 600).await;
    assert!(again.iter().all(|r| r.0 == 200));
}

store_test!(
    a_burst_admits_exactly_the_budget,
    the_server_default_applies_without_an_override
);

/// Requests without a valid key are limited per peer address: past the budget of 401s
/// in a minute, that address's keyless and wrong-key requests are answered 429 with
/// `Retry-After`, while a valid key from the same address is served as ever; a minute
/// later the address has room again.
#[actix_web::test]
async fn requests_without_a_valid_key_are_limited_per_peer() {
    let clock = Clock::manual(T0);
    let c = clock.clone();
    let app = spawn_app_with(Backend::Sqlite, tempfile::tempdir().unwrap(), move |s| {
        s.clock = c;
        s.failed_auth_per_minute = 20;
    })
    .await;
    app.import_ok(&example()).await;
    let mut statuses = Vec::new();
    for i in 0..30 {
        let key = (i % 2 == 0).then_some("rk_guess_0123456789abcdef");
        let res = app
            .req(Method::GET, "/v1/candidates", key)
            .send()
            .await
            .unwrap();
        let retry = res.headers().get("retry-after").cloned();
        let (s, body) = json_of(res).await;
        if s == 429 {
            assert_eq!(body["error"]["code"], "RATE_LIMITED", "{body}");
            assert!(retry.is_some(), "a 429 says when to retry");
        }
        statuses.push(s.as_u16());
    }
    assert_eq!(statuses[..20], [401; 20]);
    assert_eq!(statuses[20..], [429; 10]);
    // A valid key from the same address is not refused for its neighbours' failures.
    assert_eq!(app.get("/v1/candidates", READ_KEY).await.0, 200);
    clock.advance_ms(61_000);
    let res = app
        .req(Method::GET, "/v1/candidates", None)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
}
