//! Several nodes on one PostgreSQL, as real processes: membership by leases in the
//! store, and the cluster view (`GET /admin/v1/cluster`). A node killed with `kill -9`
//! stops being alive once its lease passes; its name is refused to a second start
//! while it lives and free again after (at once to a start of the same name and URL:
//! the node itself, restarted); a node that stops cleanly leaves at once. A node that
//! loads while another is alive leaves the blob store unswept (the other may be writing
//! objects for records it has yet to commit); one alone sweeps it.

use crate::helpers::*;
use crate::process::{command, prepare, Server};
use serde_json::Value;
use std::time::{Duration, Instant};

/// The example snapshot's workspace.
const WORKSPACE: &str = "b2574901-bbf6-5245-9d3f-3dd074396143";

async fn view(node: &Server, dir: &std::path::Path) -> Value {
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

fn node<'a>(view: &'a Value, name: &str) -> Option<&'a Value> {
    view["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == name)
}

fn workspace(view: &Value) -> &Value {
    view["workspaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["id"] == WORKSPACE)
        .unwrap_or_else(|| panic!("the workspace is held: {view}"))
}

/// Asks `node` for the view until `done` holds it (at most `within`).
async fn until(
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

#[actix_web::test]
async fn nodes_on_one_postgres_see_each_other_come_and_go() {
    let Some(b) = Backend::postgres().await else {
        eprintln!("{PG_ENV} not set: cluster test not run");
        return;
    };
    let used = b.clone();
    let outcome = actix_web::rt::spawn(async move {
        let dir_a = prepare(&b).await;
        let dir_b = tempfile::tempdir().unwrap();
        let a = Server::start_with(dir_a.path(), &b, None, &["--node-name", "a"]).await;
        let mut node_b = Server::start_with(dir_b.path(), &b, None, &["--node-name", "b"]).await;

        // Each sees both, alive, and itself as `node`; both hold the workspace, and
        // (with no writer leases) it has no single owner while two nodes write it.
        let v = until(
            &a,
            dir_a.path(),
            Duration::from_secs(5),
            "b holds it",
            |v| workspace(v)["holders"].as_array().unwrap().len() == 2,
        )
        .await;
        assert_eq!(v["node"], "a");
        for name in ["a", "b"] {
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
        assert_eq!(w["holders"], serde_json::json!(["a", "b"]));
        assert_eq!(w["owner"], Value::Null);
        assert_eq!(w["lag_ms"]["a"], 0, "{v}");
        assert_eq!(view(&node_b, dir_b.path()).await["node"], "b");

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
            .args(["--node-name", "a"])
            .output()
            .await
            .unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("node name \"a\" is held by a running node"),
            "{err}"
        );
        assert!(
            started.elapsed() >= Duration::from_secs(5),
            "waited for the lease"
        );

        // kill -9: b stops being alive once its lease passes, and its holding goes
        // with it: a is then the workspace's one holder, and so its owner.
        node_b.signal("-KILL");
        node_b.child.wait().await.unwrap();
        let killed = Instant::now();
        let v = until(&a, dir_a.path(), Duration::from_secs(10), "b dead", |v| {
            node(v, "b").is_some_and(|n| n["alive"] == false)
        })
        .await;
        assert!(
            killed.elapsed() >= Duration::from_secs(3),
            "not before its lease passed"
        );
        let w = workspace(&v);
        assert_eq!(w["holders"], serde_json::json!(["a"]));
        assert_eq!(w["owner"], "a");
        assert_eq!(node(&v, "a").unwrap()["workspaces_owned"], 1);
        assert_eq!(node(&v, "b").unwrap()["workspaces_held"], 0);

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
        let node_b =
            Server::start_with(dir_b.path(), &b, Some(&log_b), &["--node-name", "b"]).await;
        until(&a, dir_a.path(), Duration::from_secs(5), "b back", |v| {
            node(v, "b").is_some_and(|n| n["alive"] == true)
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
            &["--node-name", "b", "--advertise-url", url_b],
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
            &["--node-name", "b", "--advertise-url", url_b],
        )
        .await;
        assert!(
            restarted.elapsed() < Duration::from_secs(4),
            "ready in {:?}, before the killed start's lease passed",
            restarted.elapsed()
        );
        let v = view(&a, dir_a.path()).await;
        assert_eq!(node(&v, "b").unwrap()["alive"], true);
        assert_eq!(node(&v, "b").unwrap()["advertise_url"], url_b);

        // A clean stop leaves at once: no lease to wait for.
        a.signal("-TERM");
        let mut a = a;
        assert!(a.child.wait().await.unwrap().success());
        let v = view(&node_b, dir_b.path()).await;
        assert!(node(&v, "a").is_none(), "a left: {v}");

        // Alone, b sweeps at its next start.
        node_b.signal("-TERM");
        let mut node_b = node_b;
        assert!(node_b.child.wait().await.unwrap().success());
        let node_b = Server::start_with(dir_b.path(), &b, None, &["--node-name", "b"]).await;
        let deadline = Instant::now() + Duration::from_secs(10);
        while store.blob(ws, &orphan).await.unwrap().is_some() {
            assert!(Instant::now() < deadline, "swept once alone");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        store.close().await;
        drop(node_b);
    })
    .await;
    used.release().await;
    if let Err(e) = outcome {
        std::panic::resume_unwind(e.into_panic());
    }
}
