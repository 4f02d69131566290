//! Webhooks (`/v1/webhooks`): the change feed pushed to a receiver on loopback, signed
//! (checked here with HMAC-SHA256 computed apart from the server's code), in order,
//! complete against the feed, across receiver failures and a restart; and each rule of
//! the endpoints' API.

use crate::helpers::*;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use parking_lot::Mutex;
use reqwest::Method;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const WORKSPACE: &str = "b2574901-bbf6-5245-9d3f-3dd074396143";

/// A delivery as the receiver got it.
#[derive(Clone, Debug)]
struct Got {
    id: String,
    timestamp: i64,
    signatures: Vec<String>,
    raw: Vec<u8>,
    body: Value,
    status: u16,
}

/// A receiver on loopback answering each request with the next status of its script
/// (200 once it runs out), and keeping what it got.
#[derive(Clone)]
struct Receiver {
    url: String,
    got: Arc<Mutex<Vec<Got>>>,
    script: Arc<Mutex<VecDeque<u16>>>,
}

impl Receiver {
    async fn start() -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let r = Receiver {
            url,
            got: Arc::default(),
            script: Arc::default(),
        };
        let kept = r.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                tokio::spawn(kept.clone().answer(tcp));
            }
        });
        r
    }

    async fn answer(self, mut tcp: tokio::net::TcpStream) {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 65536];
        loop {
            let n = tcp.read(&mut chunk).await.unwrap_or(0);
            if n == 0 {
                return;
            }
            buf.extend_from_slice(&chunk[..n]);
            let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                continue;
            };
            let head = String::from_utf8_lossy(&buf[..end]).to_string();
            let header = |name: &str| {
                head.lines()
                    .find_map(|l| {
                        let (n, v) = l.split_once(':')?;
                        n.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
                    })
                    .unwrap_or_default()
            };
            let len: usize = header("content-length").parse().unwrap();
            if buf.len() < end + 4 + len {
                continue;
            }
            let raw = buf[end + 4..end + 4 + len].to_vec();
            let status = self.script.lock().pop_front().unwrap_or(200);
            self.got.lock().push(Got {
                id: header("webhook-id"),
                timestamp: header("webhook-timestamp").parse().unwrap(),
                signatures: header("webhook-signature")
                    .split(' ')
                    .map(String::from)
                    .collect(),
                body: serde_json::from_slice(&raw).unwrap(),
                raw,
                status,
            });
            let answer = format!("HTTP/1.1 {status} X\r\nContent-Length: 0\r\n\r\n");
            let _ = tcp.write_all(answer.as_bytes()).await;
            let _ = tcp.shutdown().await;
            return;
        }
    }

    fn got(&self) -> Vec<Got> {
        self.got.lock().clone()
    }

    /// The deliveries answered 2xx, in order.
    fn acknowledged(&self) -> Vec<Got> {
        self.got().into_iter().filter(|g| g.status < 300).collect()
    }

    /// Waits until the acknowledged deliveries reach `token` (their last `next_since`).
    async fn wait_for(&self, token: &str) {
        self.wait_for_after(0, token).await
    }

    /// Waits until an acknowledged delivery after the first `from` reaches `token`.
    async fn wait_for_after(&self, from: usize, token: &str) {
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(30) {
            let acked = self.acknowledged();
            let at = |g: &Got| point(&g.body["next_since"]) == point(&json!(token));
            if acked.len() > from && acked.last().is_some_and(at) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("the receiver did not get up to {token}: {:#?}", self.got());
    }
}

/// The point a feed token names, without its seal: a node seals with its own key, so
/// two nodes (or two starts of one on a shared store) write one point differently.
fn point(token: &Value) -> Vec<u8> {
    let raw = token.as_str().expect("a token");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(raw)
        .unwrap();
    bytes[..1 + 16 + 8 + 4 + 4].to_vec()
}

/// The Standard Webhooks signature of a delivery, computed apart from the server's code.
fn sign(secret: &str, id: &str, timestamp: i64, body: &[u8]) -> String {
    let key = STANDARD
        .decode(secret.strip_prefix("whsec_").unwrap())
        .unwrap();
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &key);
    let mut signed = format!("{id}.{timestamp}.").into_bytes();
    signed.extend_from_slice(body);
    format!("v1,{}", STANDARD.encode(ring::hmac::sign(&key, &signed)))
}

/// Whether the README's verification snippet (Python) accepts `got` for `secret`.
fn readme_verifies(secret: &str, got: &Got) -> bool {
    let readme = include_str!("../../README.md");
    let code = readme
        .split("```python\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("README shows the check in Python");
    let program = format!(
        "{code}\nimport sys, json\nh = json.loads(sys.argv[2])\nbody = sys.stdin.buffer.read()\nprint(verify(sys.argv[1], h, body))\n"
    );
    let headers = json!({
        "webhook-id": got.id,
        "webhook-timestamp": got.timestamp.to_string(),
        "webhook-signature": got.signatures.join(" "),
    });
    let mut child = std::process::Command::new("python3")
        .args(["-c", &program, secret, &headers.to_string()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3");
    use std::io::Write;
    child.stdin.take().unwrap().write_all(&got.raw).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).trim() == "True"
}

fn quick(s: &mut recruitd::server::Settings) {
    s.webhooks_allow_insecure = true;
    s.webhooks_schedule = recruitd::webhooks::retry::Schedule {
        first_retry: Duration::from_millis(50),
        most_between: Duration::from_millis(200),
        give_up_after: Duration::from_secs(3600),
    };
}

async fn send(
    app: &TestApp,
    key: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut r = app.req(method, path, Some(key));
    if let Some(b) = body {
        r = r.json(&b);
    }
    let (s, v) = json_of(r.send().await.unwrap()).await;
    (s.as_u16(), v)
}

/// A note written, retried as a client would while a new writer takes the workspace
/// over (a restart after a crash waits out the old lease on PostgreSQL).
async fn note(app: &TestApp, i: usize) {
    let reference = format!("webhook-note-{i}");
    let started = Instant::now();
    loop {
        let (s, _, body) = app
            .post_company_note_with(&format!("webhook note {i}"), Some(&reference))
            .await;
        if s == 503 && started.elapsed() < Duration::from_secs(30) {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        }
        assert!(s == 201 || s == 200, "{body}");
        return;
    }
}

/// The feed's changes from `since` to its end, and the token at its end.
async fn feed_from(app: &TestApp, since: &str) -> (Vec<Value>, String) {
    let mut out = Vec::new();
    let mut token = since.to_string();
    loop {
        let (s, page) = app
            .get(&format!("/v1/changes?since={token}&limit=500"), READ_KEY)
            .await;
        assert_eq!(s, 200, "{page}");
        out.extend(page["data"].as_array().unwrap().iter().cloned());
        token = page["next_since"].as_str().unwrap().to_string();
        if !page["has_more"].as_bool().unwrap() {
            return (out, token);
        }
    }
}

/// The deliveries acknowledged, checked in order: each signed with one of `secrets`,
/// each starting where the one before ended, the first at `since`. Their changes.
fn check_chain(acked: &[Got], secrets: &[&str], since: &str) -> Vec<Value> {
    let mut at = since.to_string();
    let mut changes = Vec::new();
    for g in acked {
        assert_eq!(g.body["type"], "changes");
        assert_eq!(g.body["workspace_id"], WORKSPACE);
        assert_eq!(
            point(&g.body["since"]),
            point(&json!(at)),
            "in order, without a gap"
        );
        let signed = secrets
            .iter()
            .any(|s| g.signatures.contains(&sign(s, &g.id, g.timestamp, &g.raw)));
        assert!(
            signed,
            "a delivery signed with the endpoint's secret: {g:?}"
        );
        at = g.body["next_since"].as_str().unwrap().to_string();
        changes.extend(g.body["data"].as_array().unwrap().iter().cloned());
    }
    changes
}

store_test!(
    deliveries_are_the_feed_signed_in_order_through_failures_and_a_restart,
    endpoint_rules_hold,
    urls_must_be_https_to_public_addresses
);

async fn deliveries_are_the_feed_signed_in_order_through_failures_and_a_restart(b: Backend) {
    let app = spawn_app_with(b.clone(), tempfile::tempdir().unwrap(), quick).await;
    app.import_ok(&example()).await;
    let key = app.key_with_scopes(&["webhooks:write"]).await;
    let receiver = Receiver::start().await;
    let (s, created) = send(
        &app,
        &key,
        Method::POST,
        "/v1/webhooks",
        Some(json!({"url": receiver.url, "description": "the test's"})),
    )
    .await;
    assert_eq!(s, 201, "{created}");
    let e = &created["data"];
    let id = e["id"].as_str().unwrap().to_string();
    let secret = e["secret"].as_str().unwrap().to_string();
    let start = e["position"].as_str().unwrap().to_string();
    assert!(
        secret.starts_with("whsec_") && secret.len() == 6 + 44,
        "{secret}"
    );
    assert_eq!(e["status"], "active");
    assert_eq!(e["acknowledged"], start.as_str());
    assert_eq!(e["backlog"], 0);

    // The secret is stored sealed: no row holds it.
    let row = store_file_sql(
        &b,
        app.data_dir.path(),
        "webhooks.db",
        "SELECT body FROM webhook_endpoints",
    )
    .await
    .unwrap();
    assert!(!row.contains(&secret[6..]), "{row}");
    assert!(!row.contains("whsec_"), "{row}");

    // Two failures, then the same delivery again, acknowledged.
    receiver.script.lock().extend([500, 503]);
    for i in 0..12 {
        note(&app, i).await;
    }
    let (expected, head) = feed_from(&app, &start).await;
    receiver.wait_for(&head).await;
    let got = receiver.got();
    assert_eq!(got[0].status, 500);
    assert_eq!(got[1].status, 503);
    assert_eq!(got[0].id, got[2].id, "a retry carries the same webhook-id");
    assert_eq!(got[0].raw, got[2].raw, "and the same body");
    let delivered = check_chain(&receiver.acknowledged(), &[&secret], &start);
    assert_eq!(delivered, expected, "items exactly as the feed gives them");
    let first = receiver.acknowledged()[0].clone();
    assert!(
        readme_verifies(&secret, &first),
        "README's check accepts a delivery"
    );
    let mut altered = first.clone();
    altered.raw.push(b' ');
    assert!(
        !readme_verifies(&secret, &altered),
        "and refuses an altered one"
    );

    // The endpoint and its deliveries log say so (once the server has stored the
    // answer the receiver sent).
    let one = acknowledged_at(&app, &key, &id, &head).await;
    assert_eq!(one["data"]["backlog"], 0);
    assert!(one["data"].get("secret").is_none());
    let path = format!("/v1/webhooks/{id}/deliveries");
    let (s, log) = send(&app, &key, Method::GET, &path, None).await;
    assert_eq!(s, 200, "{log}");
    let attempts = log["data"].as_array().unwrap();
    assert_eq!(attempts.len(), receiver.got().len());
    let oldest = attempts.last().unwrap();
    assert_eq!(oldest["status_code"], 500);
    assert_eq!(oldest["attempt"], 1);
    assert_eq!(oldest["since"], start.as_str());
    assert_eq!(attempts[attempts.len() - 3]["attempt"], 3);
    assert_eq!(attempts[0]["status_code"], 200);

    // The metrics count what was done.
    let metrics = app.metrics_text().await;
    for line in [
        "recruitd_webhook_deliveries_total{outcome=\"failed\"} 2",
        "recruitd_webhook_delivery_lag_seconds_count ",
        &format!("recruitd_webhook_backlog{{workspace=\"{WORKSPACE}\",endpoint=\"{id}\"}} 0"),
    ] {
        assert!(metrics.contains(line), "{line} in {metrics}");
    }
    assert!(!metrics.contains("recruitd_webhook_delivery_lag_seconds_count 0\n"));

    // A restart resumes from the stored point: what is written meanwhile and after
    // arrives, and nothing acknowledged is sent again.
    app.stop_now().await;
    let before = receiver.got().len();
    let app = spawn_app_with(b.clone(), app_dir(app), quick).await;
    for i in 12..20 {
        note(&app, i).await;
    }
    let (_, head2) = feed_from(&app, &head).await;
    receiver.wait_for(&head2).await;
    let after: Vec<Got> = receiver.got()[before..].to_vec();
    assert_eq!(
        point(&after[0].body["since"]),
        point(&json!(head)),
        "resumed from the acknowledged point"
    );
    let all = check_chain(&receiver.acknowledged(), &[&secret], &start);
    let (expected, _) = feed_from(&app, &start).await;
    assert_eq!(all, expected, "complete and in order across the restart");
    app.stop_now().await;
}

/// The endpoint once its stored acknowledged point is `token`.
async fn acknowledged_at(app: &TestApp, key: &str, id: &str, token: &str) -> Value {
    let started = Instant::now();
    loop {
        let (s, one) = send(app, key, Method::GET, &format!("/v1/webhooks/{id}"), None).await;
        assert_eq!(s, 200, "{one}");
        if point(&one["data"]["acknowledged"]) == point(&json!(token)) {
            return one;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{one}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The data dir of a stopped app, for the next start.
fn app_dir(app: TestApp) -> tempfile::TempDir {
    app.data_dir
}

async fn endpoint_rules_hold(b: Backend) {
    let app = spawn_app_with(b.clone(), tempfile::tempdir().unwrap(), quick).await;
    app.import_ok(&example()).await;
    let key = app.key_with_scopes(&["webhooks:write"]).await;
    let receiver = Receiver::start().await;
    let hook = json!({"url": receiver.url});

    // A key without the scope, or none at all.
    let (s, body) = send(&app, WRITE_KEY, Method::GET, "/v1/webhooks", None).await;
    assert_eq!(s, 403, "{body}");
    assert_eq!(body["error"]["code"], "FORBIDDEN_SCOPE");
    let (s, _) = send(
        &app,
        WRITE_KEY,
        Method::POST,
        "/v1/webhooks",
        Some(hook.clone()),
    )
    .await;
    assert_eq!(s, 403);
    let res = app
        .req(Method::GET, "/v1/webhooks", None)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);

    // Bodies: unknown fields, a missing url, unknown entities.
    for (bad, says) in [
        (json!({"url": receiver.url, "colour": "red"}), "colour"),
        (json!({"entities": ["notes"]}), "url"),
        (
            json!({"url": receiver.url, "entities": ["notes", "memos"]}),
            "entities",
        ),
        (
            json!({"url": receiver.url, "entities": "notes"}),
            "entities",
        ),
        (json!({"url": 7}), "url"),
    ] {
        let (s, body) = send(&app, &key, Method::POST, "/v1/webhooks", Some(bad.clone())).await;
        assert_eq!(s, 400, "{bad} → {body}");
        assert!(
            body["error"]["message"].as_str().unwrap().contains(says),
            "{body}"
        );
    }
    let (s, body) = send(&app, &key, Method::GET, "/v1/webhooks", None).await;
    assert_eq!(s, 200);
    assert_eq!(body["data"], json!([]), "a refused request changes nothing");

    // Notes only: a task's change is not delivered, a note's is.
    let (s, notes_only) = send(
        &app,
        &key,
        Method::POST,
        "/v1/webhooks",
        Some(json!({"url": receiver.url, "entities": ["notes"]})),
    )
    .await;
    assert_eq!(s, 201, "{notes_only}");
    assert_eq!(notes_only["data"]["entities"], json!(["notes"]));
    let first = notes_only["data"]["id"].as_str().unwrap().to_string();

    // At most 20 endpoints; the 21st is a conflict.
    for _ in 1..20 {
        let (s, body) = send(&app, &key, Method::POST, "/v1/webhooks", Some(hook.clone())).await;
        assert_eq!(s, 201, "{body}");
    }
    let (s, body) = send(&app, &key, Method::POST, "/v1/webhooks", Some(hook.clone())).await;
    assert_eq!(s, 409, "{body}");
    assert_eq!(body["error"]["code"], "CONFLICT");

    // Keyset pages.
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            None => "/v1/webhooks?limit=7".to_string(),
            Some(c) => format!("/v1/webhooks?limit=7&cursor={c}"),
        };
        let (s, page) = send(&app, &key, Method::GET, &path, None).await;
        assert_eq!(s, 200, "{page}");
        for e in page["data"].as_array().unwrap() {
            assert!(e.get("secret").is_none(), "a list shows no secret");
            seen.push(e["id"].as_str().unwrap().to_string());
        }
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    let mut sorted = seen.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!((seen.len(), sorted), (20, seen.clone()));
    let (s, _) = send(
        &app,
        &key,
        Method::GET,
        "/v1/webhooks?cursor=nonsense",
        None,
    )
    .await;
    assert_eq!(s, 400);

    // Delete all but the first; a deleted one is gone.
    for id in seen.iter().filter(|id| **id != first) {
        let path = format!("/v1/webhooks/{id}");
        let res = app
            .req(Method::DELETE, &path, Some(&key))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 204);
        let (s, _) = send(&app, &key, Method::GET, &path, None).await;
        assert_eq!(s, 404);
    }
    let (s, _) = send(&app, &key, Method::GET, "/v1/webhooks/whe_none", None).await;
    assert_eq!(s, 404);

    // Disabled: nothing is delivered; re-enabled, it resumes from where it was.
    let item = format!("/v1/webhooks/{first}");
    let (s, off) = send(
        &app,
        &key,
        Method::PATCH,
        &item,
        Some(json!({"status": "disabled"})),
    )
    .await;
    assert_eq!(s, 200, "{off}");
    assert_eq!(off["data"]["status"], "disabled");
    assert_eq!(off["data"]["disabled_reason"], "requested");
    let (s, body) = send(
        &app,
        &key,
        Method::PATCH,
        &item,
        Some(json!({"status": "paused"})),
    )
    .await;
    assert_eq!(s, 400, "{body}");
    let (s, body) = send(
        &app,
        &key,
        Method::PATCH,
        &item,
        Some(json!({"url": "ftp://x"})),
    )
    .await;
    assert_eq!(s, 400, "{body}");
    let start = notes_only["data"]["position"].as_str().unwrap().to_string();
    note(&app, 1).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        receiver.got().is_empty(),
        "a disabled endpoint gets nothing"
    );
    let (s, on) = send(
        &app,
        &key,
        Method::PATCH,
        &item,
        Some(json!({"status": "active"})),
    )
    .await;
    assert_eq!(s, 200, "{on}");
    assert_eq!(on["data"]["status"], "active");
    assert_eq!(on["data"]["disabled_reason"], Value::Null);
    let (_, head) = feed_from(&app, &start).await;
    receiver.wait_for(&head).await;
    let secret = notes_only["data"]["secret"].as_str().unwrap().to_string();
    let changes = check_chain(&receiver.acknowledged(), &[&secret], &start);
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(changes[0]["entity"], "notes");

    // A rotation: the next delivery is signed by both secrets.
    let path = format!("/v1/webhooks/{first}/rotate-secret");
    let (s, rotated) = send(&app, &key, Method::POST, &path, None).await;
    assert_eq!(s, 201, "{rotated}");
    let new_secret = rotated["data"]["secret"].as_str().unwrap().to_string();
    assert_ne!(new_secret, secret);
    note(&app, 2).await;
    let (_, head2) = feed_from(&app, &head).await;
    receiver.wait_for(&head2).await;
    let last = receiver.acknowledged().last().unwrap().clone();
    assert_eq!(last.signatures.len(), 2, "{:?}", last.signatures);
    for s in [&secret, &new_secret] {
        assert!(last
            .signatures
            .contains(&sign(s, &last.id, last.timestamp, &last.raw)));
    }

    // A replay from the start sends both notes again, in order.
    let before = receiver.acknowledged().len();
    let path = format!("/v1/webhooks/{first}/replay");
    let (s, body) = send(
        &app,
        &key,
        Method::POST,
        &path,
        Some(json!({"since": "nonsense"})),
    )
    .await;
    assert_eq!(s, 400, "{body}");
    let (s, replayed) = send(
        &app,
        &key,
        Method::POST,
        &path,
        Some(json!({"since": start})),
    )
    .await;
    assert_eq!(s, 200, "{replayed}");
    receiver.wait_for_after(before, &head2).await;
    let again = receiver.acknowledged()[before..].to_vec();
    let changes = check_chain(&again, &[&secret, &new_secret], &start);
    assert_eq!(changes.len(), 2, "{changes:?}");

    // A 410 disables the endpoint at once.
    receiver.script.lock().push_back(410);
    note(&app, 3).await;
    let started = Instant::now();
    loop {
        let (_, e) = send(&app, &key, Method::GET, &item, None).await;
        if e["data"]["status"] == "disabled" {
            assert_eq!(e["data"]["disabled_reason"], "gone");
            assert_eq!(e["data"]["backlog"], 1);
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{e}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    app.stop_now().await;
}

async fn urls_must_be_https_to_public_addresses(b: Backend) {
    // The default server: no insecure receivers.
    let app = spawn_app(b).await;
    app.import_ok(&example()).await;
    let key = app.key_with_scopes(&["webhooks:write"]).await;
    for (url, rule) in [
        ("http://example.com/hook", "https"),
        ("https://127.0.0.1/hook", "public"),
        ("https://10.1.2.3/hook", "public"),
        ("https://192.168.0.1/hook", "public"),
        ("https://169.254.169.254/latest/meta-data", "public"),
        ("https://[::1]/hook", "public"),
        ("https://[fd00::1]/hook", "public"),
        ("https://localhost/hook", "public"),
        ("https://user:pw@example.com/hook", "user name"),
        ("https://example.com/hook#frag", "fragment"),
        ("not a url", "absolute URL"),
        ("ftp://example.com/hook", "https"),
    ] {
        let (s, body) = send(
            &app,
            &key,
            Method::POST,
            "/v1/webhooks",
            Some(json!({"url": url})),
        )
        .await;
        assert_eq!(s, 400, "{url} → {body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(rule), "{url} → {message}");
    }
    let (s, body) = send(&app, &key, Method::GET, "/v1/webhooks", None).await;
    assert_eq!(s, 200);
    assert_eq!(body["data"], json!([]));
    app.stop_now().await;
}

/// A note written through `node`, sent again (with its reference) while the workspace
/// has no writer.
async fn note_through(node: &crate::process::Server, body: &str) {
    let started = Instant::now();
    loop {
        let (s, answer) = crate::cluster::post_note(node, body).await;
        if s == 201 || s == 200 {
            return;
        }
        assert!(
            s == 503 && started.elapsed() < Duration::from_secs(20),
            "{s} {answer}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The bodies of the notes the receiver's acknowledged deliveries carried.
fn delivered_notes(receiver: &Receiver) -> std::collections::BTreeSet<String> {
    receiver
        .acknowledged()
        .iter()
        .flat_map(|g| g.body["data"].as_array().unwrap().clone())
        .filter(|c| c["entity"] == "notes" && c["op"] == "upsert")
        .map(|c| c["record"]["body_html"].as_str().unwrap().to_string())
        .collect()
}

async fn wait_for_notes(receiver: &Receiver, bodies: &std::collections::BTreeSet<String>) {
    let started = Instant::now();
    while !bodies.is_subset(&delivered_notes(receiver)) {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "missing: {:?}",
            bodies
                .difference(&delivered_notes(receiver))
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The cluster hand-over, with real processes on PostgreSQL: an endpoint registered
/// through a node that does not hold the workspace is delivered by its writer; the
/// writer killed with `kill -9`, its successor resumes from the stored point, signing
/// with the same secret (every node seals with the key of the first, learned when it
/// joined), and nothing is lost or reordered; at most the delivery in flight at the
/// kill comes twice.
#[actix_web::test]
async fn a_new_writer_resumes_deliveries_from_the_stored_point() {
    crate::cluster::on_postgres(|b| async move {
        let ([writer, other, third], _dirs, _names, _keep) =
            crate::cluster::three_nodes_with(&b, &["--webhooks-allow-insecure"]).await;
        let token = std::fs::read_to_string(writer.data_dir().join("admin-token")).unwrap();
        let made: Value = reqwest::Client::new()
            .post(format!("{}/admin/v1/keys", writer.admin))
            .bearer_auth(token.trim())
            .json(&json!({
                "workspace_id": WORKSPACE, "created_by_email": "olivia@northwind.example",
                "scopes": ["webhooks:write"], "rate_limit_per_minute": 100000,
            }))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let key = made["data"]["secret"].as_str().unwrap().to_string();
        let receiver = Receiver::start().await;
        let created: Value = third
            .client()
            .post(format!("{}/v1/webhooks", third.api))
            .bearer_auth(&key)
            .json(&json!({"url": receiver.url, "entities": ["notes"]}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let secret = created["data"]["secret"]
            .as_str()
            .expect("created")
            .to_string();
        let start = created["data"]["position"].as_str().unwrap().to_string();

        let mut bodies = std::collections::BTreeSet::new();
        for i in 0..10 {
            let body = format!("before the kill {i}");
            note_through(&other, &body).await;
            bodies.insert(body);
        }
        wait_for_notes(&receiver, &bodies).await;
        let before = receiver.acknowledged().len();

        let mut writer = writer;
        writer.signal("-KILL");
        writer.child.wait().await.unwrap();
        for i in 0..10 {
            let body = format!("after the kill {i}");
            note_through(&third, &body).await;
            bodies.insert(body);
        }
        wait_for_notes(&receiver, &bodies).await;
        let acked = receiver.acknowledged();
        assert!(acked.len() > before, "deliveries went on after the kill");
        // In order and signed with the endpoint's one secret, across the hand-over:
        // each delivery starts where the one before ended, or (the one in flight at the
        // kill, sent again by the new writer) where that one started.
        let mut at = point(&json!(start));
        let mut previous_since = at.clone();
        let mut again = 0;
        for g in &acked {
            assert!(
                g.signatures
                    .contains(&sign(&secret, &g.id, g.timestamp, &g.raw)),
                "signed with the endpoint's secret: {g:?}"
            );
            let since = point(&g.body["since"]);
            if since != at {
                assert_eq!(
                    since, previous_since,
                    "only the delivery in flight comes again"
                );
                again += 1;
            }
            previous_since = since;
            at = point(&g.body["next_since"]);
        }
        assert!(again <= 1, "{again} deliveries came again");
        drop((other, third));
    })
    .await;
}
