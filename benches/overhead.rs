//! What the per-request machinery adds to the search path: the per-key rate limiter and
//! the access log line, each measured on top of the search handler's own work (decode the
//! query, match, write the JSON body) on a generated workspace of 20,000 people.

use actors::model::{ApiKey, Scopes};
use actors::snapshot::{parse_slice, plan_import, NoKeys};
use criterion::{black_box, criterion_group, criterion_main, Criterion};
use recruitd::clock::Clock;
use recruitd::http::ratelimit::RateLimiter;

/// The search handler's own work: the server's code, as it answers.
fn search(ws: &actors::state::WorkspaceState, query: &str) -> usize {
    recruitd::http::search::phone_answer(ws, query, "req_0123456789abcdef0123456789abcdef")
        .unwrap()
        .len()
}

fn access_line(latency_us: u64) {
    tracing::info!(
        target: "recruitd::access",
        request_id = "req_0123456789abcdef0123456789abcdef",
        method = "GET",
        route = "/v1/search/phone",
        status = 200u16,
        latency_us,
        key_id = "key_demo_read",
    );
}

fn overhead(c: &mut Criterion) {
    let bytes =
        recruitd::generate::snapshot_bytes(&recruitd::generate::GenerateOptions::new(20_000, 5));
    let ws = plan_import(None, parse_slice(&bytes).unwrap(), &NoKeys, true)
        .unwrap()
        .next
        .unwrap();
    let queries: Vec<String> = ws
        .candidates
        .iter()
        .filter_map(|(_, c)| c.phone_as_entered().map(str::to_string))
        .take(2000)
        .map(|p| {
            format!(
                "number={}",
                percent_encoding::utf8_percent_encode(&p, percent_encoding::NON_ALPHANUMERIC)
            )
        })
        .collect();
    let key = ApiKey {
        id: "key_bench".into(),
        workspace_id: ws.id(),
        secret_hash: [0; 32],
        scopes: Scopes::read_only(),
        created_by: uuid::Uuid::nil(),
        revoked: false,
        rate_limit_per_minute: Some(u32::MAX),
        created_at: None,
    };
    let limiter = RateLimiter::new(600, Clock::System);
    let mut i = 0;
    let mut g = c.benchmark_group("search_path_overhead");
    g.bench_function("search_only", |b| {
        b.iter(|| {
            i = (i + 1) % queries.len();
            black_box(search(&ws, &queries[i]))
        })
    });
    g.bench_function("search_plus_rate_limiter", |b| {
        b.iter(|| {
            i = (i + 1) % queries.len();
            black_box(limiter.check(&key).allowed);
            black_box(search(&ws, &queries[i]))
        })
    });
    // The whole hot path with its access log line, written by the subscriber in force.
    let mut logged = |b: &mut criterion::Bencher| {
        b.iter(|| {
            i = (i + 1) % queries.len();
            black_box(limiter.check(&key).allowed);
            let n = search(&ws, &queries[i]);
            access_line(n as u64);
            black_box(n)
        })
    };
    let text = tracing_subscriber::fmt()
        .with_writer(std::io::sink)
        .with_env_filter("info")
        .finish();
    tracing::subscriber::with_default(text, || {
        g.bench_function("search_plus_limiter_plus_access_log_text", &mut logged);
    });
    let json = tracing_subscriber::fmt()
        .with_writer(std::io::sink)
        .with_env_filter("info")
        .json()
        .flatten_event(true)
        .finish();
    tracing::subscriber::with_default(json, || {
        g.bench_function("search_plus_limiter_plus_access_log_json", &mut logged);
    });
    g.finish();
}

criterion_group!(benches, overhead);
criterion_main!(benches);
