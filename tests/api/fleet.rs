//! A cluster run for a fleet of agencies: many workspaces, each created by its first
//! import through any node's admin interface while the cluster runs.
//!
//! A first import is answered once the workspace is whole, and every node that answers
//! for it, then or later, answers from a whole copy: one node alone takes a stream of
//! first imports while its rounds of the writer leases run (no import refused, every
//! workspace whole when answered and after a restart), and in three nodes a workspace
//! imported through one node stays whole when its writer is killed right after.

use crate::cluster::{another_workspace, on_postgres, until, view};
use crate::helpers::*;
use crate::process::{command, Server};
use serde_json::Value;
use std::time::Duration;

/// `POST /admin/v1/import` of `snapshot` through `node`: the status and the body.
async fn import_through(node: &Server, snapshot: &[u8]) -> (u16, Value) {
    let token = std::fs::read_to_string(node.data_dir().join("admin-token")).unwrap();
    let res = reqwest::Client::new()
        .post(format!("{}/admin/v1/import", node.admin))
        .bearer_auth(token.trim())
        .header("content-type", "application/json")
        .body(snapshot.to_vec())
        .timeout(Duration::from_secs(120))
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

/// `GET /v1/counts` through `node` with `key`: the status and the counts.
async fn counts(node: &Server, key: &str) -> (u16, Value) {
    let res = node
        .client()
        .get(format!("{}/v1/counts", node.api))
        .bearer_auth(key)
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    let body: Value = res.json().await.unwrap_or(Value::Null);
    match status {
        200 => (status, body["data"].clone()),
        _ => (status, body),
    }
}

#[actix_web::test]
async fn first_imports_into_one_node_are_whole_when_answered() {
    on_postgres(|b| async move {
        let dir = tempfile::tempdir().unwrap();
        let node = Server::start_with(dir.path(), &b, None, &["--node-name", "solo"]).await;
        let imports = 150;
        let mut seen = Vec::new();
        for i in 0..imports {
            let ((_, read, write), snapshot) = another_workspace(i);
            let (status, body) =
                import_through(&node, &serde_json::to_vec(&snapshot).unwrap()).await;
            assert_eq!(status, 200, "import {i}: {body}");
            // At once, as whole as it will stay: every record, and a write naming the
            // last candidate the snapshot holds.
            let (status, now) = counts(&node, &read).await;
            assert_eq!(status, 200, "counts of workspace {i}: {now}");
            let candidates = snapshot["candidates"].as_array().unwrap();
            let last = candidates.last().unwrap()["id"].as_str().unwrap();
            let res = node
                .client()
                .post(format!("{}/v1/notes", node.api))
                .bearer_auth(&write)
                .json(&serde_json::json!({
                    "parent_type": "candidate", "parent_id": last,
                    "body_html": "after the import", "reference": format!("n{i}"),
                }))
                .send()
                .await
                .unwrap();
            assert_eq!(
                res.status(),
                201,
                "a note on candidate {last} of workspace {i}"
            );
            seen.push((read, now));
        }
        // The store holds what every answer showed: a fresh start loads the same.
        node.signal("-TERM");
        let mut node = node;
        node.child.wait().await.unwrap();
        let node = Server::start_with(dir.path(), &b, None, &["--node-name", "solo"]).await;
        let (_, whole) = counts(&node, &seen[0].0).await;
        for (i, (read, then)) in seen.iter().enumerate() {
            // And the note written after the import.
            let mut then = then.clone();
            then["notes"] = (then["notes"].as_u64().unwrap() + 1).into();
            assert_eq!(then, whole, "workspace {i} as answered at once");
            assert_eq!(
                counts(&node, read).await.1,
                whole,
                "workspace {i} after a restart"
            );
        }
    })
    .await;
}

/// A generated workspace of `people` people (seed `seed`), as written by `recruitd
/// generate`, with a read key of the secret `key` made by its owner: its bytes and its
/// id.
async fn generated(
    dir: &std::path::Path,
    b: &Backend,
    people: u32,
    seed: u32,
    key: &str,
) -> (Vec<u8>, String) {
    let file = dir.join(format!("generated-{seed}.json"));
    let out = command(dir, b)
        .args([
            "generate",
            "--people",
            &people.to_string(),
            "--seed",
            &seed.to_string(),
        ])
        .arg("--out")
        .arg(&file)
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut snapshot: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let owner = snapshot["users"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["role"] == "owner")
        .unwrap()["id"]
        .clone();
    snapshot["api_keys"] = serde_json::json!([
        {"id": format!("key_{seed}"), "secret": key, "scopes": ["read"], "created_by": owner}
    ]);
    let id = snapshot["workspace"]["id"].as_str().unwrap().to_string();
    (serde_json::to_vec(&snapshot).unwrap(), id)
}

#[actix_web::test]
async fn a_first_import_into_three_nodes_stays_whole_when_its_writer_is_killed() {
    on_postgres(|b| async move {
        let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
        let mut nodes = Vec::new();
        for (name, dir) in ["a", "b", "c"].iter().zip(&dirs) {
            nodes.push(Server::start_with(dir.path(), &b, None, &["--node-name", name]).await);
        }
        for round in 0..2u32 {
            let key = format!("rk_generated_{round}_0123456789abcdef");
            let (snapshot, id) = generated(dirs[0].path(), &b, 15000, 40 + round, &key).await;
            // Through the last node started, whoever writes the workspace after.
            let through = nodes.len() - 1;
            let (status, body) = import_through(&nodes[through], &snapshot).await;
            assert_eq!(status, 200, "round {round}: {body}");
            let (status, whole) = counts(&nodes[through], &key).await;
            assert_eq!(status, 200, "{whole}");
            for node in &nodes {
                assert_eq!(
                    counts(node, &key).await.1,
                    whole,
                    "round {round}, through every node"
                );
            }
            // Its writer killed a moment later, while its holders may still be loading
            // it: the next writer answers the same.
            tokio::time::sleep(Duration::from_millis(500)).await;
            let v = view(&nodes[0], nodes[0].data_dir()).await;
            let owner = v["workspaces"]
                .as_array()
                .unwrap()
                .iter()
                .find(|w| w["id"] == id.as_str())
                .and_then(|w| w["owner"].as_str())
                .map(str::to_string);
            let Some(owner) = owner else {
                panic!("round {round}: the workspace has a writer: {v}");
            };
            let at = ["a", "b", "c"].iter().position(|n| *n == owner).unwrap();
            let mut killed = nodes.remove(at);
            killed.signal("-KILL");
            killed.child.wait().await.unwrap();
            let survivor = &nodes[0];
            until(
                survivor,
                survivor.data_dir(),
                Duration::from_secs(15),
                "a new writer",
                |v| {
                    v["workspaces"].as_array().unwrap().iter().any(|w| {
                        w["id"] == id.as_str() && w["owner"].as_str().is_some_and(|o| o != owner)
                    })
                },
            )
            .await;
            // Never a part of it: a node without a whole copy to answer from says so
            // (503, while the next writer catches up), and answers whole after.
            for node in &nodes {
                let deadline = std::time::Instant::now() + Duration::from_secs(15);
                loop {
                    let (status, now) = counts(node, &key).await;
                    if status == 200 {
                        assert_eq!(now, whole, "round {round}, after the writer died");
                        break;
                    }
                    assert_eq!(status, 503, "round {round}: {now}");
                    assert!(std::time::Instant::now() < deadline, "round {round}: {now}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
            // The killed node back, under its name, for the next round. It is ready once
            // it has loaded what is placed on it: the large workspace among them.
            if round + 1 < 2 {
                let name = owner.clone();
                let restarted = Server::start_ready_within(
                    dirs[at].path(),
                    &b,
                    None,
                    &["--node-name", &name],
                    Duration::from_secs(120),
                )
                .await;
                nodes.insert(at, restarted);
            }
        }
    })
    .await;
}
