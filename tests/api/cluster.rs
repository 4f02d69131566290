//! Several nodes on one PostgreSQL, as real processes: membership by leases in the
//! store, and the cluster view (`GET /admin/v1/cluster`). A node killed with `kill -9`
//! stops being alive at once (its store session ends with it); its name is refused to
//! a second start while it lives and free again after; a node that stops cleanly leaves
//! at once. A node that
//! loads while another is alive leaves the blob store unswept (the other may be writing
//! objects for records it has yet to commit); one alone sweeps it.
//!
//! One writer per workspace, fenced: a writer frozen (SIGSTOP) past its lease is
//! replaced within seconds by a holder that first catches up with what the frozen one
//! committed; woken (SIGCONT), the old writer commits nothing, and the write it was
//! sent while frozen is answered 503.
//!
//! Under load (`Load`: writers that resend a 503'd note with its reference, and a
//! lookup client): a writer killed with `kill -9` fails no lookup, and every
//! acknowledged note is there once; a rolling restart (SIGTERM, start, one node at a
//! time) fails no request at all; a fourth node joining takes about a quarter of the
//! holdings (exactly those placement gives it) without an error. A holder follows the
//! writer from the change log, so when the writer dies its copy has every commit.

use crate::helpers::*;
use crate::process::{command, prepare, Server};
use serde_json::Value;
use std::time::{Duration, Instant};

/// The example snapshot's workspace.
const WORKSPACE: &str = "b2574901-bbf6-5245-9d3f-3dd074396143";

pub(crate) async fn view(node: &Server, dir: &std::path::Path) -> Value {
    let token = std::fs::read_to_string(dir.join("admin-token")).unwrap();
    let res = reqwest::Client::new()
        .get(format!("{}/admin/v1/cluster", node.admin))
        .bearer_auth(token.trim())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let body: Value = res.json().await.unwrap();
    assert!(body["request_id"].is_string(), "{body}");
    body["data"].clone()
}

pub(crate) fn node<'a>(view: &'a Value, name: &str) -> Option<&'a Value> {
    view["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == name)
}

pub(crate) fn workspace(view: &Value) -> &Value {
    view["workspaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["id"] == WORKSPACE)
        .unwrap_or_else(|| panic!("the workspace is held: {view}"))
}

/// The names of the two nodes of the two-node tests: `A` ranks above `B` for the example
/// workspace (rendezvous placement), so once both hold it, `A` writes it and `B` holds
/// a copy.
const A: &str = "alpha";
const B: &str = "beta";

/// Asks `node` for the view until `done` holds it (at most `within`).
pub(crate) async fn until(
    node: &Server,
    dir: &std::path::Path,
    within: Duration,
    what: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let v = view(node, dir).await;
        if done(&v) {
            return v;
        }
        assert!(Instant::now() < deadline, "{what} within {within:?}: {v}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Runs `test` on a fresh PostgreSQL backend (not at all without one), on a task of its
/// own so that its panic still lets the backend be released, then passes the panic on.
pub(crate) async fn on_postgres<F, T>(test: F)
where
    F: FnOnce(Backend) -> T,
    T: std::future::Future<Output = ()> + 'static,
{
    // One cluster of real processes at a time: each holds a dozen connections per node
    // and both cores, and two at once could exhaust the server's connections.
    static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let _turn = ONE_AT_A_TIME.lock().await;
    let Some(b) = Backend::postgres().await else {
        eprintln!("{PG_ENV} not set: cluster test not run");
        return;
    };
    let used = b.clone();
    let outcome = actix_web::rt::spawn(test(b)).await;
    used.release().await;
    if let Err(e) = outcome {
        std::panic::resume_unwind(e.into_panic());
    }
}

#[actix_web::test]
async fn nodes_on_one_postgres_see_each_other_come_and_go() {
    on_postgres(|b| async move {
        let dir_a = prepare(&b).await;
        let dir_b = tempfile::tempdir().unwrap();
        let a = Server::start_with(dir_a.path(), &b, None, &["--node-name", A]).await;
        let mut node_b = Server::start_with(dir_b.path(), &b, None, &["--node-name", B]).await;

        // Each sees both, alive, and itself as `node`; both hold the workspace, and a,
        // up first, writes it (a writer stays while it is alive and a holder).
        let v = until(
            &a,
            dir_a.path(),
            Duration::from_secs(5),
            "b holds it",
            |v| workspace(v)["holders"].as_array().unwrap().len() == 2,
        )
        .await;
        assert_eq!(v["node"], A);
        for name in [A, B] {
            let n = node(&v, name).unwrap();
            assert_eq!(n["alive"], true, "{v}");
            assert_eq!(n["workspaces_held"], 1, "{v}");
            assert!(
                n["advertise_url"]
                    .as_str()
                    .unwrap()
                    .starts_with("https://127.0.0.1:"),
                "{v}"
            );
        }
        let w = workspace(&v);
        assert_eq!(w["holders"], serde_json::json!([A, B]));
        assert_eq!(w["owner"], A);
        assert_eq!(w["lag_ms"][A], 0, "{v}");
        assert_eq!(view(&node_b, dir_b.path()).await["node"], B);

        // A second start under a live node's name is refused once that node's lease
        // has been waited for.
        let dir_c = tempfile::tempdir().unwrap();
        let started = Instant::now();
        let out = command(dir_c.path(), &b)
            .args([
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--admin-listen",
                "127.0.0.1:0",
            ])
            .args(["--node-name", A])
            .output()
            .await
            .unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("node name \"{A}\" is held by a running node")),
            "{err}"
        );
        assert!(
            started.elapsed() >= Duration::from_secs(5),
            "waited for the lease"
        );

        // kill -9: b stops being alive at once (its store session ended with it, long
        // before its lease would pass), and its holding goes with it: a is then the
        // workspace's one holder, and so its owner.
        node_b.signal("-KILL");
        node_b.child.wait().await.unwrap();
        let killed = Instant::now();
        let v = until(
            &a,
            dir_a.path(),
            Duration::from_secs(10),
            "b dead, a writes",
            |v| node(v, B).is_some_and(|n| n["alive"] == false) && workspace(v)["owner"] == A,
        )
        .await;
        assert!(
            killed.elapsed() < Duration::from_secs(3),
            "known dead, and replaced, before its lease passed: {:?}",
            killed.elapsed()
        );
        let w = workspace(&v);
        assert_eq!(w["holders"], serde_json::json!([A]));
        assert_eq!(w["owner"], A);
        assert_eq!(node(&v, A).unwrap()["workspaces_owned"], 1);
        assert_eq!(node(&v, B).unwrap()["workspaces_held"], 0);

        // Bytes no record names, as an import on another node leaves them between its
        // blob write and its commit.
        let Backend::Postgres(url) = &b else {
            unreachable!()
        };
        let store = recruitd::store::open(Some(url), dir_b.path())
            .await
            .unwrap();
        let ws = WORKSPACE.parse().unwrap();
        let orphan = actors::store::object_name("cv:not-committed-yet");
        store
            .put_blobs(ws, &[(orphan.clone(), &[7u8; 64][..])])
            .await
            .unwrap();

        // Its name is free again: b comes back, and while a is alive it sweeps nothing.
        let log_b = dir_b.path().join("b.log");
        let node_b = Server::start_with(dir_b.path(), &b, Some(&log_b), &["--node-name", B]).await;
        until(&a, dir_a.path(), Duration::from_secs(5), "b back", |v| {
            node(v, B).is_some_and(|n| n["alive"] == true)
        })
        .await;
        let deadline = Instant::now() + Duration::from_secs(5);
        while !std::fs::read_to_string(&log_b)
            .unwrap()
            .contains("blob sweep left for a later start")
        {
            assert!(Instant::now() < deadline, "b says it left the sweep");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(
            store.blob(ws, &orphan).await.unwrap().is_some(),
            "not swept"
        );

        // Killed and started again under its name and URL, a node takes its row back at
        // once: its previous start's lease is not waited for.
        let url_b = "https://b.cluster.test:1";
        let mut node_b = node_b;
        node_b.signal("-TERM");
        assert!(node_b.child.wait().await.unwrap().success());
        let node_b = Server::start_with(
            dir_b.path(),
            &b,
            None,
            &["--node-name", B, "--advertise-url", url_b],
        )
        .await;
        node_b.signal("-KILL");
        let mut node_b = node_b;
        node_b.child.wait().await.unwrap();
        let restarted = Instant::now();
        let node_b = Server::start_with(
            dir_b.path(),
            &b,
            None,
            &["--node-name", B, "--advertise-url", url_b],
        )
        .await;
        assert!(
            restarted.elapsed() < Duration::from_secs(4),
            "ready in {:?}, before the killed start's lease passed",
            restarted.elapsed()
        );
        let v = view(&a, dir_a.path()).await;
        assert_eq!(node(&v, B).unwrap()["alive"], true);
        assert_eq!(node(&v, B).unwrap()["advertise_url"], url_b);

        // A clean stop leaves at once: no lease to wait for.
        a.signal("-TERM");
        let mut a = a;
        assert!(a.child.wait().await.unwrap().success());
        let v = view(&node_b, dir_b.path()).await;
        assert!(node(&v, A).is_none(), "a left: {v}");

        // Alone, b sweeps at its next start.
        node_b.signal("-TERM");
        let mut node_b = node_b;
        assert!(node_b.child.wait().await.unwrap().success());
        let node_b = Server::start_with(dir_b.path(), &b, None, &["--node-name", B]).await;
        let deadline = Instant::now() + Duration::from_secs(10);
        while store.blob(ws, &orphan).await.unwrap().is_some() {
            assert!(Instant::now() < deadline, "swept once alone");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        store.close().await;
        drop(node_b);
    })
    .await;
}

/// Posts a note whose body and `reference` are `body`; the status and body.
/// Waits until node `a` writes the workspace and a second node holds it too.
async fn a_writes_b_holds(a: &Server, dir_a: &std::path::Path) {
    until(a, dir_a, Duration::from_secs(5), "a writes, b holds", |v| {
        workspace(v)["owner"] == A && workspace(v)["holders"].as_array().unwrap().len() == 2
    })
    .await;
}

/// Waits until node `b` writes the workspace (at most `within`).
async fn b_writes(b: &Server, dir_b: &std::path::Path, within: Duration) {
    until(b, dir_b, within, "b writes", |v| workspace(v)["owner"] == B).await;
}

pub(crate) async fn post_note(node: &Server, body: &str) -> (u16, Value) {
    let res = node
        .client()
        .post(format!("{}/v1/notes", node.api))
        .bearer_auth(WRITE_KEY)
        .json(&serde_json::json!({
            "parent_type": "company", "parent_id": FABRIKAM,
            "body_html": body, "reference": body,
        }))
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

/// The bodies of the notes `node` shows, each as often as it shows it.
async fn note_bodies(node: &Server) -> Vec<String> {
    node.notes()
        .await
        .into_iter()
        .flat_map(|(body, ids)| std::iter::repeat_n(body, ids.len()))
        .collect()
}

#[actix_web::test]
async fn a_writer_frozen_past_its_lease_commits_nothing_once_woken() {
    on_postgres(|b| async move {
        let Backend::Postgres(url) = &b else {
            unreachable!()
        };
        let dir_a = prepare(&b).await;
        let dir_b = tempfile::tempdir().unwrap();
        let a = Server::start_with(dir_a.path(), &b, None, &["--node-name", A]).await;
        let node_b = Server::start_with(dir_b.path(), &b, None, &["--node-name", B]).await;
        a_writes_b_holds(&a, dir_a.path()).await;

        // a commits; b's copy, loaded before, lacks these notes.
        for n in 0..5 {
            assert_eq!(
                post_note(&a, &format!("before the freeze {n}")).await.0,
                201
            );
        }

        // A write in a's commit when it freezes: its transaction waits for the
        // workspace's commit row, which this test holds until a is frozen.
        use sqlx::Connection;
        let mut holder = sqlx::PgConnection::connect(url).await.unwrap();
        let mut held = holder.begin().await.unwrap();
        sqlx::query("SELECT 1 FROM commit_marks WHERE workspace_id = $1 FOR UPDATE")
            .bind(WORKSPACE)
            .execute(&mut *held)
            .await
            .unwrap();
        let pending = {
            let http = a.client();
            let url = format!("{}/v1/notes", a.api);
            tokio::spawn(async move {
                let res = http
                    .post(url)
                    .bearer_auth(WRITE_KEY)
                    .json(&serde_json::json!({
                        "parent_type": "company", "parent_id": FABRIKAM,
                        "body_html": "in a's commit", "reference": "in a's commit",
                    }))
                    .send()
                    .await
                    .unwrap();
                let retry_after = res.headers().get("retry-after").is_some();
                (res.status().as_u16(), retry_after)
            })
        };
        // Frozen once its commit waits for that row.
        let mut watcher = sqlx::PgConnection::connect(url).await.unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let waiting: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' \
                 AND query LIKE 'INSERT INTO commit_marks%'",
            )
            .fetch_one(&mut watcher)
            .await
            .unwrap();
            if waiting > 0 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "a's commit never reached the store"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        a.signal("-STOP");
        let frozen = Instant::now();
        held.rollback().await.unwrap();

        // b takes the workspace over once a's lease has passed, within 10 s, and
        // catches up with what a committed before it writes.
        b_writes(&node_b, dir_b.path(), Duration::from_secs(15)).await;
        let failover = frozen.elapsed();
        assert!(
            failover >= Duration::from_secs(3),
            "not before the lease passed: {failover:?}"
        );
        assert!(
            failover < Duration::from_secs(10),
            "new writer in {failover:?}"
        );
        assert_eq!(post_note(&node_b, "after the takeover").await.0, 201);
        let shown = note_bodies(&node_b).await;
        for n in 0..5 {
            assert!(
                shown.contains(&format!("before the freeze {n}")),
                "{shown:?}"
            );
        }

        // Woken, a commits nothing: the write it held is refused, and one sent to it
        // now is passed to b.
        a.signal("-CONT");
        let (status, retry_after) = pending.await.unwrap();
        assert_eq!(status, 503, "the write in a's commit");
        assert!(retry_after, "503 with Retry-After");
        assert_eq!(post_note(&a, "through a after waking").await.0, 201);
        let shown = note_bodies(&node_b).await;
        assert!(!shown.contains(&"in a's commit".to_string()), "{shown:?}");
        for there in ["after the takeover", "through a after waking"] {
            assert_eq!(shown.iter().filter(|n| *n == there).count(), 1, "{there}");
        }
        let v = view(&node_b, dir_b.path()).await;
        assert_eq!(workspace(&v)["owner"], B, "{v}");
        drop(a);
        drop(node_b);
    })
    .await;
}

/// The node's Prometheus text (`GET /metrics` on its admin interface).
async fn metrics(node: &Server) -> String {
    let token = std::fs::read_to_string(node.data_dir().join("admin-token")).unwrap();
    reqwest::Client::new()
        .get(format!("{}/metrics", node.admin))
        .bearer_auth(token.trim())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// How many commits of another node `node` has followed (`recruitd_follower_lag_seconds`).
async fn followed(node: &Server) -> u64 {
    metrics(node)
        .await
        .lines()
        .find_map(|l| l.strip_prefix("recruitd_follower_lag_seconds_count "))
        .map_or(0, |n| n.trim().parse().unwrap())
}

#[actix_web::test]
async fn a_holder_follows_the_writer_and_has_its_commits_when_it_dies() {
    on_postgres(|b| async move {
        let dir_a = prepare(&b).await;
        let dir_b = tempfile::tempdir().unwrap();
        let log_b = tempfile::NamedTempFile::new().unwrap();
        let mut a = Server::start_with(dir_a.path(), &b, None, &["--node-name", A]).await;
        let node_b =
            Server::start_with(dir_b.path(), &b, Some(log_b.path()), &["--node-name", B]).await;
        a_writes_b_holds(&a, dir_a.path()).await;

        // Five commits of a, each followed by b from the change log.
        let before = followed(&node_b).await;
        for n in 0..5 {
            assert_eq!(post_note(&a, &format!("followed {n}")).await.0, 201);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while followed(&node_b).await < before + 5 {
            assert!(Instant::now() < deadline, "b followed a's five commits");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }

        // a dies: b answers reads from its own copy, which has them all, and takes the
        // workspace over without loading it again.
        a.signal("-KILL");
        a.child.wait().await.unwrap();
        let shown = note_bodies(&node_b).await;
        for n in 0..5 {
            assert!(shown.contains(&format!("followed {n}")), "{shown:?}");
        }
        b_writes(&node_b, dir_b.path(), Duration::from_secs(12)).await;
        assert_eq!(post_note(&node_b, "after a died").await.0, 201);
        let log = std::fs::read_to_string(log_b.path()).unwrap();
        assert!(log.contains("took writer leases"), "{log}");
        assert!(!log.contains("reloaded it"), "b's copy was current: {log}");
        drop(node_b);
    })
    .await;
}

/// What a node answers to `GET path` (with `key`): the status, the headers that are the
/// same for every request of its kind, and the body without its request id, which must
/// be the one the node gave the request (`X-Request-Id`).
async fn answer(node: &Server, path: &str, key: Option<&str>) -> (u16, Vec<String>, Value) {
    let mut req = node.client().get(format!("{}{path}", node.api));
    if let Some(key) = key {
        req = req.bearer_auth(key);
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    let headers: Vec<String> = [
        "content-type",
        "cache-control",
        "ratelimit-policy",
        "retry-after",
        "allow",
    ]
    .iter()
    .map(|h| format!("{h}: {:?}", res.headers().get(*h)))
    .collect();
    let rid = res.headers()["x-request-id"].to_str().unwrap().to_string();
    let mut body: Value = res.json().await.unwrap();
    assert_eq!(
        body["request_id"],
        rid.as_str(),
        "{path}: the entry node's request id"
    );
    body.as_object_mut().unwrap().remove("request_id");
    (status, headers, body)
}

#[actix_web::test]
async fn every_node_answers_as_the_workspace_writer_does() {
    on_postgres(|b| async move {
        let dir_a = prepare(&b).await;
        let (dir_b, dir_c) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let a = Server::start_with(dir_a.path(), &b, None, &["--node-name", A]).await;
        let node_b = Server::start_with(dir_b.path(), &b, None, &["--node-name", B]).await;
        let c = Server::start_with(dir_c.path(), &b, None, &["--node-name", "c"]).await;
        until(
            &a,
            dir_a.path(),
            Duration::from_secs(10),
            "three nodes",
            |v| v["nodes"].as_array().unwrap().len() == 3,
        )
        .await;
        // The third node changes the workspace's holders (two of three): its writer may
        // move once, in the next round of leases.
        tokio::time::sleep(Duration::from_secs(3)).await;
        let v = until(&a, dir_a.path(), Duration::from_secs(10), "a writer", |v| {
            workspace(v)["owner"].is_string()
        })
        .await;
        // Nodes in the order: the writer, then the others.
        let owner = workspace(&v)["owner"].as_str().unwrap().to_string();
        let mut named = vec![
            (A, a, dir_a.path()),
            (B, node_b, dir_b.path()),
            ("c", c, dir_c.path()),
        ];
        named.sort_by_key(|(n, _, _)| *n != owner);
        let [(_, writer, writer_dir), (other_name, other, other_dir), (_, third, _)]: [(
            &str,
            Server,
            &std::path::Path,
        );
            3] = named.try_into().ok().unwrap();
        let nodes = [&writer, &other, &third];

        // The same answer from every node, whichever it is: lists, records, counts,
        // lookups, sub-resources, the feed, and refusals.
        let company = format!("/v1/companies/{FABRIKAM}");
        let company_notes = format!("/v1/companies/{FABRIKAM}/notes");
        let mut paths: Vec<String> = ENTITIES
            .iter()
            .map(|e| format!("/v1/{e}?limit=2"))
            .collect();
        paths.extend(
            [
                "/v1/counts",
                "/v1/search/phone?number=07700900123",
                "/v1/search/email?email=nobody@example.com",
                company.as_str(),
                company_notes.as_str(),
                "/v1/changes",
                "/v1/candidates?limit=0",
                "/v1/candidates?bogus=1",
                "/v1/companies/00000000-0000-0000-0000-000000000000",
                "/v1/no-such-entity",
            ]
            .map(String::from),
        );
        for path in &paths {
            for key in [Some(READ_KEY), Some("rk_not_a_key_0123456789abcdef"), None] {
                let first = answer(nodes[0], path, key).await;
                for node in &nodes[1..] {
                    assert_eq!(answer(node, path, key).await, first, "{path} with {key:?}");
                }
            }
        }

        let v = view(&writer, writer_dir).await;
        assert_eq!(
            workspace(&v)["owner"],
            owner.as_str(),
            "the writer stayed: {v}"
        );

        // A write through any node is read back at once through every other.
        for (i, through) in nodes.iter().enumerate() {
            let (status, written) = post_note(through, &format!("through node {i}")).await;
            assert_eq!(
                status, 201,
                "node {i} of [{owner}, {other_name}]: {written}"
            );
            let id = written["data"]["id"].as_str().unwrap();
            for node in nodes {
                let (status, _, body) =
                    answer(node, &format!("/v1/notes/{id}"), Some(READ_KEY)).await;
                assert_eq!(status, 200, "note {i} read back: {body}");
                assert_eq!(body["data"]["body_html"], format!("through node {i}"));
            }
        }
        let token = std::fs::read_to_string(other_dir.join("admin-token")).unwrap();
        let metrics = metrics(&other).await;
        let counted =
            format!("recruitd_forwarded_requests_total{{node=\"{owner}\",outcome=\"answered\"}}");
        assert!(
            metrics.contains(&counted),
            "{other_name} counts what it passed on"
        );

        // A key made through one node works through every other at once; revoked
        // through one, it is refused by every node on its next request.
        let admin = reqwest::Client::new();
        let made: Value = admin
            .post(format!("{}/admin/v1/keys", third.admin))
            .bearer_auth(
                std::fs::read_to_string(third.data_dir().join("admin-token"))
                    .unwrap()
                    .trim(),
            )
            .json(&serde_json::json!({
                "workspace_id": WORKSPACE, "created_by_email": "olivia@northwind.example",
                "scopes": ["records:write"],
            }))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let (key_id, secret) = (
            made["data"]["id"].as_str().unwrap().to_string(),
            made["data"]["secret"].as_str().unwrap().to_string(),
        );
        for node in nodes {
            assert_eq!(answer(node, "/v1/counts", Some(&secret)).await.0, 200);
        }
        let revoked = admin
            .delete(format!("{}/admin/v1/keys/{key_id}", other.admin))
            .bearer_auth(token.trim())
            .send()
            .await
            .unwrap();
        assert_eq!(revoked.status(), 200);
        for node in nodes {
            assert_eq!(answer(node, "/v1/counts", Some(&secret)).await.0, 401);
        }

        // The writer killed: reads keep answering through the others, and a write waits
        // for the next writer rather than fail.
        let mut writer = writer;
        writer.signal("-KILL");
        writer.child.wait().await.unwrap();
        let killed = Instant::now();
        let (status, _, _) = answer(
            &third,
            "/v1/search/phone?number=07700900123",
            Some(READ_KEY),
        )
        .await;
        assert_eq!(status, 200, "a lookup while the writer is dead");
        let (status, written) = post_note(&other, "after the writer died").await;
        assert_eq!(status, 201, "{written}");
        assert!(
            killed.elapsed() < Duration::from_secs(12),
            "{:?}",
            killed.elapsed()
        );
        let id = written["data"]["id"].as_str().unwrap();
        let (status, _, _) = answer(&third, &format!("/v1/notes/{id}"), Some(READ_KEY)).await;
        assert_eq!(status, 200);
        drop(other);
        drop(third);
    })
    .await;
}

/// The example snapshot again as workspace `i` (its own id and keys): `(id, read key,
/// write key)` and the snapshot.
pub(crate) fn another_workspace(i: usize) -> ((String, String, String), Value) {
    let mut snap = crate::helpers::example();
    let id =
        uuid::Uuid::from_u128(0x5eed_0000_0000_0000_0000_0000_0000_0000 + i as u128).to_string();
    snap["workspace"]["id"] = Value::String(id.clone());
    snap["workspace"]["name"] = Value::String(format!("Agency {i}"));
    let (read, write) = (
        format!("rk_agency_{i}_read_0123456789abcdef"),
        format!("rk_agency_{i}_write_0123456789abcdef"),
    );
    for (key, secret) in snap["api_keys"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .zip([&read, &write])
    {
        key["id"] = Value::String(format!("{}_{i}", key["id"].as_str().unwrap()));
        key["secret"] = Value::String(secret.clone());
    }
    ((id, read, write), snap)
}

/// Which nodes hold which workspaces, as `node`'s cluster view says: (workspace, node)
/// pairs of live nodes, and each workspace's writer.
async fn holdings(
    node: &Server,
    dir: &std::path::Path,
) -> (std::collections::BTreeSet<(String, String)>, Vec<Value>) {
    let v = view(node, dir).await;
    let mut pairs = std::collections::BTreeSet::new();
    for w in v["workspaces"].as_array().unwrap() {
        for h in w["holders"].as_array().unwrap() {
            pairs.insert((
                w["id"].as_str().unwrap().to_string(),
                h.as_str().unwrap().to_string(),
            ));
        }
    }
    (pairs, v["workspaces"].as_array().unwrap().clone())
}

/// Whether every workspace of `ids` is held by exactly the nodes placement puts it on
/// among `live`, and written by the first of them: writers spread as placement does.
fn settled(
    ids: &[String],
    live: &[&str],
    pairs: &std::collections::BTreeSet<(String, String)>,
    workspaces: &[Value],
) -> bool {
    ids.iter().all(|id| {
        let ws = uuid::Uuid::parse_str(id).unwrap();
        let placed = recruitd::cluster::placement::holders(ws, live, 2);
        let held: Vec<&str> = pairs
            .iter()
            .filter(|(w, _)| w == id)
            .map(|(_, n)| n.as_str())
            .collect();
        let owner = workspaces
            .iter()
            .find(|w| w["id"] == id.as_str())
            .and_then(|w| w["owner"].as_str());
        held.len() == placed.len()
            && placed.iter().all(|p| held.contains(p))
            && owner == placed.first().copied()
    })
}

/// Waits until `ids` are [`settled`] among `live` as `node` sees them (at most 30 s):
/// the holdings.
async fn settles(
    node: &Server,
    dir: &std::path::Path,
    ids: &[String],
    live: &[&str],
) -> std::collections::BTreeSet<(String, String)> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (pairs, workspaces) = holdings(node, dir).await;
        if settled(ids, live, &pairs, &workspaces) {
            return pairs;
        }
        assert!(
            Instant::now() < deadline,
            "settled among {live:?} within 30 s: {pairs:?} {workspaces:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[actix_web::test]
async fn a_fourth_node_takes_about_a_quarter_of_the_holdings_without_errors() {
    on_postgres(|b| async move {
        // Twelve workspaces: the example and eleven more like it.
        let dir_a = prepare(&b).await;
        let mut ids = vec![WORKSPACE.to_string()];
        let mut keys = vec![(READ_KEY.to_string(), WRITE_KEY.to_string())];
        for i in 1..12 {
            let ((id, read, write), snap) = another_workspace(i);
            crate::process::import(dir_a.path(), &b, &format!("agency-{i}.json"), &snap).await;
            ids.push(id);
            keys.push((read, write));
        }
        let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
        let a = Server::start_with(dir_a.path(), &b, None, &["--node-name", "a"]).await;
        let node_b = Server::start_with(dirs[0].path(), &b, None, &["--node-name", "b"]).await;
        let c = Server::start_with(dirs[1].path(), &b, None, &["--node-name", "c"]).await;
        let before = settles(&a, dir_a.path(), &ids, &["a", "b", "c"]).await;
        assert_eq!(before.len(), 24, "two holders each");

        // Reads and writes of every workspace through the three nodes while d joins.
        let load = Load::start(&[&a, &node_b, &c], &keys, 2, Duration::from_millis(20));
        let dir_d = tempfile::tempdir().unwrap();
        let d = Server::start_with(dir_d.path(), &b, None, &["--node-name", "d"]).await;
        // Ready, d writes every workspace it should (those placed first on it, which it
        // loaded before saying so): their writers handed them over first, and no
        // workspace waits between two writers once d answers ready.
        let v = view(&d, dir_d.path()).await;
        let live = ["a", "b", "c", "d"];
        let mut its_share = 0;
        for id in &ids {
            let w = v["workspaces"]
                .as_array()
                .unwrap()
                .iter()
                .find(|w| w["id"] == id.as_str())
                .unwrap_or_else(|| panic!("{id} in the view: {v}"));
            assert!(
                w["owner"].is_string(),
                "{id} has a writer once d is ready: {v}"
            );
            let placed =
                recruitd::cluster::placement::holders(uuid::Uuid::parse_str(id).unwrap(), &live, 2);
            if placed[0] == "d" {
                its_share += 1;
                assert!(
                    w["holders"].as_array().unwrap().iter().any(|h| h == "d"),
                    "d loaded {id} before it was ready: {v}"
                );
                assert_eq!(w["owner"], "d", "d writes {id} once ready: {v}");
            }
        }
        assert!(its_share > 0, "d is placed first for some of the twelve");
        let after = settles(&a, dir_a.path(), &ids, &["a", "b", "c", "d"]).await;
        // A little more load once settled, then the tally.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let tally = load.stop().await;
        tally.assert_no_failure(true);

        // About a quarter of the holdings moved, all of them to d.
        let moved: Vec<_> = after.difference(&before).collect();
        assert!(moved.iter().all(|(_, n)| n == "d"), "{moved:?}");
        assert_eq!(after.len(), 24);
        assert!(
            (2..=12).contains(&moved.len()),
            "{} of 24 holdings moved: {moved:?}",
            moved.len()
        );
        eprintln!("a fourth node: {} of 24 holdings moved", moved.len());

        tally.assert_written_once(&d).await;

        // a killed: its holdings and writers move to the three others; started again:
        // they come back to it. Each within 30 s, every workspace written by its first
        // placed node.
        let mut a = a;
        a.signal("-KILL");
        a.child.wait().await.unwrap();
        settles(&d, dir_d.path(), &ids, &["b", "c", "d"]).await;
        let a = Server::start_with(dir_a.path(), &b, None, &["--node-name", "a"]).await;
        let again = settles(&a, dir_a.path(), &ids, &["a", "b", "c", "d"]).await;
        assert_eq!(again, after, "the holdings of before the kill");
        drop((a, node_b, c, d));
    })
    .await;
}

/// What the clients of a [`Load`] saw.
#[derive(Default)]
struct Tally {
    lookups: u64,
    lookup_failures: Vec<String>,
    /// Writes answered 503 (or with no answer) and sent again with the same reference.
    write_retries: Vec<String>,
    write_failures: Vec<String>,
    /// Acknowledged notes: the write key and the reference (its body too).
    written: Vec<(String, String)>,
}

impl Tally {
    fn add(&mut self, other: Tally) {
        self.lookups += other.lookups;
        self.lookup_failures.extend(other.lookup_failures);
        self.write_retries.extend(other.write_retries);
        self.write_failures.extend(other.write_failures);
        self.written.extend(other.written);
    }

    /// No lookup failed, no write failed, and (`no_retries`) none had to be sent again.
    fn assert_no_failure(&self, no_retries: bool) {
        assert!(
            self.lookup_failures.is_empty(),
            "{} of {} lookups failed: {:?}",
            self.lookup_failures.len(),
            self.lookups,
            self.lookup_failures
        );
        assert!(self.write_failures.is_empty(), "{:?}", self.write_failures);
        if no_retries {
            assert!(self.write_retries.is_empty(), "{:?}", self.write_retries);
        }
        assert!(self.lookups > 20, "{} lookups", self.lookups);
        assert!(self.written.len() > 5, "{} writes", self.written.len());
    }

    /// Every acknowledged note is shown once through `node` (a reference sent again is
    /// applied once).
    async fn assert_written_once(&self, node: &Server) {
        let mut shown: std::collections::HashMap<String, _> = Default::default();
        for (write, _) in &self.written {
            if !shown.contains_key(write) {
                shown.insert(write.clone(), node.notes_of(write).await);
            }
        }
        for (write, reference) in &self.written {
            let n = shown[write].get(reference).map_or(0, Vec::len);
            assert_eq!(n, 1, "{reference} shown {n} times");
        }
    }
}

/// Clients of the cluster while a test changes it, through the nodes it was given (a
/// node can be taken out of the rotation, as a load balancer does with one being
/// restarted): `writers` clients each creating notes one after another (every 100 ms,
/// a fresh reference each, sent again with the same reference after a 503 or a lost
/// answer until acknowledged, as the API asks of clients), and one client looking a
/// number up every `lookup_every`.
type Targets = std::sync::Arc<Vec<std::sync::Mutex<(String, reqwest::Client)>>>;

struct Load {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Per node given, whether clients use it.
    up: std::sync::Arc<Vec<std::sync::atomic::AtomicBool>>,
    /// Per node given, its API's URL and a client that trusts it.
    targets: Targets,
    tasks: Vec<tokio::task::JoinHandle<Tally>>,
}

impl Load {
    fn start(
        nodes: &[&Server],
        keys: &[(String, String)],
        writers: usize,
        lookup_every: Duration,
    ) -> Load {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        let stop = Arc::new(AtomicBool::new(false));
        let up: Arc<Vec<AtomicBool>> =
            Arc::new(nodes.iter().map(|_| AtomicBool::new(true)).collect());
        let targets: Targets = Arc::new(
            nodes
                .iter()
                .map(|n| std::sync::Mutex::new((n.api.clone(), n.client())))
                .collect(),
        );
        // The next node in the rotation that is up.
        fn pick(i: usize, targets: &Targets, up: &[AtomicBool]) -> (String, reqwest::Client) {
            let k = (0..targets.len())
                .map(|k| (i + k) % targets.len())
                .find(|k| up[*k].load(Ordering::SeqCst))
                .expect("a node is up");
            targets[k].lock().unwrap().clone()
        }
        let mut tasks = Vec::new();
        for w in 0..writers {
            let (stop, up, targets) = (stop.clone(), up.clone(), targets.clone());
            let keys = keys.to_vec();
            tasks.push(tokio::spawn(async move {
                let mut t = Tally::default();
                let mut i = w;
                let mut n = 0;
                while !stop.load(Ordering::SeqCst) {
                    let (_, write) = &keys[n % keys.len()];
                    let reference = format!("writer {w} note {n}");
                    loop {
                        let (url, http) = pick(i, &targets, &up);
                        i += 1;
                        let res = http
                            .post(format!("{url}/v1/notes"))
                            .bearer_auth(write)
                            .json(&serde_json::json!({
                                "parent_type": "company", "parent_id": FABRIKAM,
                                "body_html": reference, "reference": reference,
                            }))
                            .send()
                            .await;
                        match res {
                            Ok(r) if r.status() == 201 || r.status() == 200 => {
                                t.written.push((write.clone(), reference.clone()));
                                break;
                            }
                            Ok(r) if r.status() == 503 => {
                                t.write_retries.push(format!(
                                    "{reference}: 503 {}",
                                    r.text().await.unwrap_or_default()
                                ));
                            }
                            Ok(r) => {
                                t.write_failures.push(format!(
                                    "{reference}: {} {}",
                                    r.status(),
                                    r.text().await.unwrap_or_default()
                                ));
                                break;
                            }
                            Err(e) => t.write_retries.push(format!("{reference}: {e}")),
                        }
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                    n += 1;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                t
            }));
        }
        {
            let (stop, up, targets) = (stop.clone(), up.clone(), targets.clone());
            let keys = keys.to_vec();
            tasks.push(tokio::spawn(async move {
                let mut t = Tally::default();
                let mut every = tokio::time::interval(lookup_every);
                let mut i = 0;
                while !stop.load(Ordering::SeqCst) {
                    every.tick().await;
                    let (url, http) = pick(i, &targets, &up);
                    let (read, _) = &keys[i % keys.len()];
                    i += 1;
                    t.lookups += 1;
                    match http
                        .get(format!("{url}/v1/search/phone?number=07700900123"))
                        .bearer_auth(read)
                        .send()
                        .await
                    {
                        Ok(r) if r.status() == 200 => {}
                        Ok(r) => t.lookup_failures.push(format!(
                            "{url}: {} {}",
                            r.status(),
                            r.text().await.unwrap_or_default()
                        )),
                        Err(e) => t.lookup_failures.push(format!("{url}: {e}")),
                    }
                }
                t
            }));
        }
        Load {
            stop,
            up,
            targets,
            tasks,
        }
    }

    /// Takes node `i` (of those given) out of the rotation.
    fn take_out(&self, i: usize) {
        self.up[i].store(false, std::sync::atomic::Ordering::SeqCst);
    }

    /// Puts node `i` back in the rotation as `node` (started again).
    fn put_back(&self, i: usize, node: &Server) {
        *self.targets[i].lock().unwrap() = (node.api.clone(), node.client());
        self.up[i].store(true, std::sync::atomic::Ordering::SeqCst);
    }

    async fn stop(self) -> Tally {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let mut tally = Tally::default();
        for t in self.tasks {
            tally.add(t.await.unwrap());
        }
        tally
    }
}

/// A key of the example workspace that reads, with a budget no test load reaches.
async fn roomy_read_key(node: &Server) -> String {
    read_key(node, 1_000_000).await
}

/// A new key of the example workspace that reads, with `budget` requests a minute.
async fn read_key(node: &Server, budget: u32) -> String {
    read_key_and_id(node, budget).await.0
}

/// A read key as [`read_key`] makes it: its secret and its id.
async fn read_key_and_id(node: &Server, budget: u32) -> (String, String) {
    let token = std::fs::read_to_string(node.data_dir().join("admin-token")).unwrap();
    let made: Value = reqwest::Client::new()
        .post(format!("{}/admin/v1/keys", node.admin))
        .bearer_auth(token.trim())
        .json(&serde_json::json!({
            "workspace_id": WORKSPACE, "created_by_email": "olivia@northwind.example",
            "scopes": ["read"], "rate_limit_per_minute": budget,
        }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    (
        made["data"]["secret"].as_str().unwrap().to_string(),
        made["data"]["id"].as_str().unwrap().to_string(),
    )
}

/// Three nodes on the example workspace, settled, in the order: its writer, its other
/// holder, the node that does not hold it; with their data dirs and names (and the
/// temporary directories to keep).
async fn three_nodes(
    b: &Backend,
) -> (
    [Server; 3],
    [std::path::PathBuf; 3],
    [String; 3],
    Vec<tempfile::TempDir>,
) {
    three_nodes_with(b, &[]).await
}

/// As [`three_nodes`], each started with `extra` arguments too.
pub(crate) async fn three_nodes_with(
    b: &Backend,
    extra: &[&str],
) -> (
    [Server; 3],
    [std::path::PathBuf; 3],
    [String; 3],
    Vec<tempfile::TempDir>,
) {
    let dir_a = prepare(b).await;
    let (dir_b, dir_c) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let args = |name: &'static str| [&["--node-name", name][..], extra].concat();
    let a = Server::start_with(dir_a.path(), b, None, &args("a")).await;
    let node_b = Server::start_with(dir_b.path(), b, None, &args("b")).await;
    let c = Server::start_with(dir_c.path(), b, None, &args("c")).await;
    let ids = [WORKSPACE.to_string()];
    settles(&a, dir_a.path(), &ids, &["a", "b", "c"]).await;
    let v = workspace(&view(&a, dir_a.path()).await).clone();
    let owner = v["owner"].as_str().unwrap().to_string();
    let holders: Vec<String> = v["holders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap().to_string())
        .collect();
    let rank = |n: &str| {
        if n == owner {
            0
        } else if holders.iter().any(|h| h == n) {
            1
        } else {
            2
        }
    };
    let mut named = vec![
        ("a", a, dir_a.path().to_path_buf()),
        ("b", node_b, dir_b.path().to_path_buf()),
        ("c", c, dir_c.path().to_path_buf()),
    ];
    named.sort_by_key(|(n, _, _)| rank(n));
    let mut servers = Vec::new();
    let mut dirs = Vec::new();
    let mut names = Vec::new();
    for (name, server, dir) in named {
        servers.push(server);
        dirs.push(dir);
        names.push(name.to_string());
    }
    (
        servers.try_into().ok().unwrap(),
        dirs.try_into().unwrap(),
        names.try_into().unwrap(),
        vec![dir_a, dir_b, dir_c],
    )
}

#[actix_web::test]
async fn a_writer_killed_under_writes_and_lookups_loses_nothing_and_doubles_nothing() {
    on_postgres(|b| async move {
        let ([writer, other, third], dirs, names, _keep) = three_nodes(&b).await;
        let read = roomy_read_key(&other).await;
        // Eight writers and lookups at about 200/s, through the two other nodes.
        let keys = vec![(read, WRITE_KEY.to_string())];
        let load = Load::start(&[&other, &third], &keys, 8, Duration::from_millis(5));
        tokio::time::sleep(Duration::from_secs(2)).await;
        let mut writer = writer;
        writer.signal("-KILL");
        writer.child.wait().await.unwrap();
        let killed = Instant::now();
        // Writes are back within 2 s of the kill: its store session ended with it, so
        // its death is known at once, not when its lease would pass. One write at a
        // time through the node that holds nothing, each sent again until acknowledged.
        let mut sent = 0;
        loop {
            sent += 1;
            let (status, body) = post_note(&third, &format!("failover probe {sent}")).await;
            if status == 201 {
                break;
            }
            assert!(
                status == 503 && killed.elapsed() < Duration::from_secs(10),
                "{status} {body}"
            );
        }
        let writes_back = killed.elapsed();
        eprintln!("writes back {writes_back:?} after kill -9 ({sent} sent)");
        assert!(
            writes_back <= Duration::from_secs(2),
            "a write acknowledged {writes_back:?} after the writer's kill -9"
        );
        until(
            &other,
            &dirs[1],
            Duration::from_secs(10),
            "a new writer",
            |v| {
                workspace(v)["owner"]
                    .as_str()
                    .is_some_and(|o| o != names[0])
            },
        )
        .await;
        let failover = killed.elapsed();
        eprintln!("a new writer {failover:?} after kill -9");
        // Some more writes under the new writer, then the tally.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let tally = load.stop().await;
        // Writes in flight at the kill may have been answered 503 (and sent again);
        // lookups never fail.
        tally.assert_no_failure(false);
        eprintln!(
            "{} lookups, {} notes acknowledged, {} writes sent again",
            tally.lookups,
            tally.written.len(),
            tally.write_retries.len()
        );
        tally.assert_written_once(&third).await;
        drop((other, third));
    })
    .await;
}

#[actix_web::test]
async fn a_rolling_restart_fails_no_request() {
    on_postgres(|b| async move {
        let (nodes, dirs, names, _keep) = three_nodes(&b).await;
        let read = roomy_read_key(&nodes[0]).await;
        let keys = vec![(read, WRITE_KEY.to_string())];
        let mut nodes: Vec<Server> = nodes.into_iter().collect();
        let refs: Vec<&Server> = nodes.iter().collect();
        let load = Load::start(&refs, &keys, 2, Duration::from_millis(10));
        drop(refs);
        tokio::time::sleep(Duration::from_secs(1)).await;
        // Each node in turn, the writer first: out of the rotation, SIGTERM, started
        // again under its name, back in the rotation once the three have settled.
        for i in 0..3 {
            let name = ["writer", "holder", "third"][i];
            load.take_out(i);
            nodes[i].signal("-TERM");
            let status = nodes[i].child.wait().await.unwrap();
            assert!(status.success(), "{name} stopped cleanly");
            nodes[i] = Server::start_with(&dirs[i], &b, None, &["--node-name", &names[i]]).await;
            settles(
                &nodes[i],
                &dirs[i],
                &[WORKSPACE.to_string()],
                &["a", "b", "c"],
            )
            .await;
            load.put_back(i, &nodes[i]);
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        let tally = load.stop().await;
        // Not a lookup failed, and not a write: the writer handed its leases over
        // before it stopped answering.
        tally.assert_no_failure(true);
        eprintln!(
            "rolling restart: {} lookups, {} notes acknowledged",
            tally.lookups,
            tally.written.len()
        );
        tally.assert_written_once(&nodes[0]).await;
    })
    .await;
}

/// What a writer hands out holds at the next writer, with nothing shared by the
/// operator: each node seals with a key of its own and publishes the public half.
/// A cursor, a change feed token and a download URL handed out by a, which then
/// stops, are taken by b; a tampered cursor is still refused.
#[actix_web::test]
async fn cursors_feed_tokens_and_download_urls_hold_at_the_next_writer() {
    on_postgres(|b| async move {
        let dir_a = prepare(&b).await;
        let dir_b = tempfile::tempdir().unwrap();
        let mut a = Server::start_with(dir_a.path(), &b, None, &["--node-name", A]).await;
        let node_b = Server::start_with(dir_b.path(), &b, None, &["--node-name", B]).await;
        a_writes_b_holds(&a, dir_a.path()).await;
        assert_ne!(
            std::fs::read(dir_a.path().join("signing-key")).unwrap(),
            std::fs::read(dir_b.path().join("signing-key")).unwrap(),
            "each node has a signing key of its own"
        );

        let get = |node: &Server, path: String| {
            let req = node
                .client()
                .get(format!("{}{path}", node.api))
                .bearer_auth(READ_KEY);
            async move {
                let res = req.send().await.unwrap();
                let status = res.status().as_u16();
                (status, res.json::<Value>().await.unwrap())
            }
        };
        let (status, first) = get(&a, "/v1/candidates?limit=1".into()).await;
        assert_eq!(status, 200, "{first}");
        let cursor = first["next_cursor"].as_str().unwrap().to_string();
        let since = first["changes_since"].as_str().unwrap().to_string();
        let (status, link) = get(
            &a,
            "/v1/attachments/cv:91b2d50e-a6b0-5581-b491-530642265a44/download?redirect=false"
                .into(),
        )
        .await;
        assert_eq!(status, 200, "{link}");
        let url = link["data"]["url"].as_str().unwrap().to_string();
        // A note written after the first page, for the feed to show at b.
        let (status, _) = post_note(&a, "after the first page").await;
        assert_eq!(status, 201);

        // a stops (handing the workspace to b); b takes what a handed out.
        a.signal("-TERM");
        a.child.wait().await.unwrap();
        let (status, second) =
            get(&node_b, format!("/v1/candidates?limit=1&cursor={cursor}")).await;
        assert_eq!(status, 200, "{second}");
        let ids = |p: &Value| -> Vec<String> {
            p["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["id"].as_str().unwrap().to_string())
                .collect()
        };
        // The example's two candidates, one a page.
        assert_eq!(ids(&second).len(), 1);
        assert_ne!(ids(&second), ids(&first));
        let (status, feed) = get(&node_b, format!("/v1/changes?since={since}")).await;
        assert_eq!(status, 200, "{feed}");
        assert!(
            feed.to_string().contains("after the first page"),
            "the feed from a's token shows the note: {feed}"
        );
        // The URL names a's address; any node serves it (behind one public URL).
        let path = &url[url.find("/files/").unwrap()..];
        let file = node_b
            .client()
            .get(format!("{}{path}", node_b.api))
            .send()
            .await
            .unwrap();
        assert_eq!(file.status(), 200, "{url}");
        assert!(!file.bytes().await.unwrap().is_empty());
        // Altered in its last character, the cursor is refused.
        let mut tampered = cursor.clone().into_bytes();
        let last = tampered.len() - 1;
        tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(tampered).unwrap();
        let (status, refused) =
            get(&node_b, format!("/v1/candidates?limit=1&cursor={tampered}")).await;
        assert_eq!(status, 400, "{refused}");
    })
    .await;
}

/// Requests of `key` through `node`, one after another, until one is refused 429 (at
/// most `most`): how many were answered 200.
async fn spend(node: &Server, key: &str, most: usize) -> usize {
    let client = node.client();
    for answered in 0..most {
        let res = client
            .get(format!("{}/v1/candidates?limit=1", node.api))
            .bearer_auth(key)
            .send()
            .await
            .unwrap();
        match res.status().as_u16() {
            200 => {}
            429 => return answered,
            other => panic!("{other}: {}", res.text().await.unwrap()),
        }
    }
    most
}

/// A key's budget is the cluster's, not each writer's: what a key spent at a writer
/// still counts at the next one, after a hand-over (exactly) and after the writer is
/// killed (to what it had shared, once a second).
#[actix_web::test]
async fn a_keys_budget_goes_on_at_the_next_writer() {
    on_postgres(|b| async move {
        let dir_a = prepare(&b).await;
        let dir_b = tempfile::tempdir().unwrap();
        let mut a = Server::start_with(dir_a.path(), &b, None, &["--node-name", A]).await;
        let node_b = Server::start_with(dir_b.path(), &b, None, &["--node-name", B]).await;
        a_writes_b_holds(&a, dir_a.path()).await;
        let handed = read_key(&a, 100).await;
        let (killed, killed_id) = read_key_and_id(&a, 100).await;

        // 60 of 100 at a; a stops and hands the workspace to b: 40 left there.
        assert_eq!(spend(&a, &handed, 60).await, 60);
        a.signal("-TERM");
        assert!(a.child.wait().await.unwrap().success());
        b_writes(&node_b, dir_b.path(), Duration::from_secs(10)).await;
        assert_eq!(spend(&node_b, &handed, 200).await, 40, "after a hand-over");

        // a comes back, ranked first, and b hands the workspace back before a says it
        // is ready: what b counted is spent at a too.
        let mut a = Server::start_with(dir_a.path(), &b, None, &["--node-name", A]).await;
        let v = view(&a, dir_a.path()).await;
        assert_eq!(workspace(&v)["owner"], A, "a writes once ready: {v}");
        assert_eq!(spend(&a, &handed, 50).await, 0, "after a hand-over back");

        // 60 of the other key at a, a is killed: 40 left at b. a shares its counts every
        // second; on a busy machine a second can run late, so the kill waits for the
        // share itself rather than for a fixed time.
        assert_eq!(spend(&a, &killed, 60).await, 60);
        let Backend::Postgres(url) = &b else {
            unreachable!()
        };
        shared_by(url, A, &killed_id, 60, Duration::from_secs(15)).await;
        a.signal("-KILL");
        a.child.wait().await.unwrap();
        b_writes(&node_b, dir_b.path(), Duration::from_secs(15)).await;
        assert_eq!(spend(&node_b, &killed, 200).await, 40, "after a kill -9");
    })
    .await;
}

/// Waits until `node` has shared a budget of key `key_id` that counts at least
/// `requests`.
async fn shared_by(url: &str, node: &str, key_id: &str, requests: u64, within: Duration) {
    use sqlx::Connection;
    let mut store = sqlx::PgConnection::connect(url).await.unwrap();
    let deadline = Instant::now() + within;
    loop {
        let rows: Vec<Vec<u8>> =
            sqlx::query_scalar("SELECT counts FROM key_budgets WHERE node = $1 AND key_id = $2")
                .bind(node)
                .bind(key_id)
                .fetch_all(&mut store)
                .await
                .unwrap();
        let counted: u64 = rows
            .iter()
            .flat_map(|counts| counts.chunks_exact(4))
            .map(|c| u64::from(u32::from_be_bytes(c.try_into().unwrap())))
            .sum();
        if counted >= requests {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{node} shared {counted} of {requests} requests within {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The admin interface of any node takes any workspace: a key made, and a snapshot
/// imported, through the node that does not hold the workspace (and an import through
/// the holder that does not write it) are applied by its writer, work through every
/// node, and leave the holdings as they were.
#[actix_web::test]
async fn admin_requests_through_any_node_are_applied_by_the_writer() {
    on_postgres(|b| async move {
        let ([writer, holder, third], dirs, names, _keep) = three_nodes(&b).await;
        let nodes = [&writer, &holder, &third];
        let key = read_key(&third, 1000).await;
        for node in nodes {
            let res = node
                .client()
                .get(format!("{}/v1/candidates?limit=1", node.api))
                .bearer_auth(&key)
                .send()
                .await
                .unwrap();
            assert_eq!(
                res.status(),
                200,
                "the key made through c works through every node"
            );
        }
        for (i, (node, dir)) in [(&third, &dirs[2]), (&holder, &dirs[1])]
            .into_iter()
            .enumerate()
        {
            let name = format!("Fabrikam, imported through {}", node.data_dir().display());
            let mut snapshot = example();
            snapshot["companies"][0]["name"] = name.clone().into();
            snapshot["companies"][0]["updated_at"] =
                format!("2026-10-0{}T00:00:00.000Z", i + 1).into();
            let token = std::fs::read_to_string(dir.join("admin-token")).unwrap();
            let res = reqwest::Client::new()
                .post(format!("{}/admin/v1/import", node.admin))
                .bearer_auth(token.trim())
                .json(&snapshot)
                .send()
                .await
                .unwrap();
            let status = res.status();
            let body: Value = res.json().await.unwrap();
            assert_eq!(status, 200, "{body}");
            assert_eq!(body["data"]["workspace_id"], WORKSPACE, "{body}");
            assert_eq!(body["data"]["upserted"]["companies"], 1, "{body}");
            for node in nodes {
                let res = node
                    .client()
                    .get(format!("{}/v1/companies/{FABRIKAM}", node.api))
                    .bearer_auth(READ_KEY)
                    .send()
                    .await
                    .unwrap();
                let company: Value = res.json().await.unwrap();
                assert_eq!(company["data"]["name"], name.as_str(), "{company}");
            }
        }
        let v = view(&writer, &dirs[0]).await;
        assert_eq!(workspace(&v)["owner"], names[0].as_str(), "{v}");
        assert!(
            !workspace(&v)["holders"]
                .as_array()
                .unwrap()
                .iter()
                .any(|h| h == names[2].as_str()),
            "the node that passed them on holds no copy: {v}"
        );
    })
    .await;
}

/// Through the node that holds no copy of the workspace: a long-poll keeps the `wait`
/// it asked for, a signed file URL is served, and a write is passed to the writer even
/// when the address it comes from has used its whole share of the writer's connections
/// (node-to-node connections have a budget of their own).
#[actix_web::test]
async fn requests_through_a_node_that_holds_nothing_keep_their_contract() {
    on_postgres(|b| async move {
        const SHARE: usize = 4;
        let share = SHARE.to_string();
        let ([writer, _holder, third], _dirs, _names, _keep) =
            three_nodes_with(&b, &["--max-connections-per-peer", &share]).await;
        let get = |node: &Server, path: String| {
            let req = node
                .client()
                .get(format!("{}{path}", node.api))
                .bearer_auth(READ_KEY);
            async move {
                let res = req.send().await.unwrap();
                let status = res.status().as_u16();
                (status, res.json::<Value>().await.unwrap())
            }
        };
        let (status, first) = get(&writer, "/v1/candidates?limit=1".into()).await;
        assert_eq!(status, 200, "{first}");
        let since = first["changes_since"].as_str().unwrap().to_string();

        // A long-poll of the whole 30 s, through the third node: nothing changes, so it
        // is answered, empty, when its wait is over (not cut short by the hop).
        let pem = std::fs::read(third.data_dir().join("tls/cert.pem")).unwrap();
        let patient = reqwest::Client::builder()
            .use_rustls_tls()
            .add_root_certificate(reqwest::Certificate::from_pem(&pem).unwrap())
            .timeout(Duration::from_secs(90))
            .build()
            .unwrap();
        let poll = patient
            .get(format!("{}/v1/changes?since={since}&wait=30", third.api))
            .bearer_auth(READ_KEY);
        let started = Instant::now();
        let polling = actix_web::rt::spawn(async move {
            let res = poll.send().await.unwrap();
            let status = res.status().as_u16();
            (
                status,
                res.json::<Value>().await.unwrap(),
                started.elapsed(),
            )
        });

        // A signed download URL, handed out by the writer, served by the third node.
        let (status, link) = get(
            &writer,
            "/v1/attachments/cv:91b2d50e-a6b0-5581-b491-530642265a44/download?redirect=false"
                .into(),
        )
        .await;
        assert_eq!(status, 200, "{link}");
        let url = link["data"]["url"].as_str().unwrap().to_string();
        let path = &url[url.find("/files/").unwrap()..];
        let file = third
            .client()
            .get(format!("{}{path}", third.api))
            .send()
            .await
            .unwrap();
        assert_eq!(file.status(), 200, "{url}");
        assert!(!file.bytes().await.unwrap().is_empty());

        // Nothing changed meanwhile (a change would end the wait early).
        let (status, page, took) = polling.await.unwrap();
        drop(patient);
        assert_eq!(status, 200, "{page}");
        assert_eq!(page["data"], serde_json::json!([]), "{page}");
        assert!(
            took >= Duration::from_secs(29),
            "answered after {took:?}: {page}"
        );

        // This address's whole share of the writer's connections, held open.
        let mut held = Vec::new();
        for _ in 0..SHARE {
            let client = writer.client();
            let res = client
                .get(format!("{}/v1/candidates?limit=1", writer.api))
                .bearer_auth(READ_KEY)
                .send()
                .await;
            held.push(client);
            // A node's connection counted as a client's would hold one of the places.
            assert_eq!(res.map(|r| r.status().as_u16()).ok(), Some(200));
        }
        let past_share = writer
            .client()
            .get(format!("{}/v1/candidates?limit=1", writer.api))
            .bearer_auth(READ_KEY)
            .send()
            .await;
        assert!(past_share.is_err(), "a client past its share is refused");
        // Writes through the third node, at once (more connections than its pool
        // holds, within this address's share of the third node), all reach the writer
        // from the same address.
        let writes = (0..SHARE - 1).map(|i| {
            let req = third
                .client()
                .post(format!("{}/v1/notes", third.api))
                .bearer_auth(WRITE_KEY)
                .json(&serde_json::json!({
                    "parent_type": "company", "parent_id": FABRIKAM,
                    "body_html": format!("through the third node {i}"),
                    "reference": format!("third-node-{i}"),
                }));
            async move {
                let res = req.send().await.unwrap();
                (res.status().as_u16(), res.text().await.unwrap())
            }
        });
        for (status, body) in futures_util::future::join_all(writes).await {
            assert_eq!(status, 201, "{body}");
        }
        drop(held);
    })
    .await;
}
