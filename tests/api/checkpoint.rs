//! The real `recruitd` process restarts from its checkpoint: an offline import leaves
//! one, the server writes one once the workspaces have loaded from the store and again
//! at shutdown, and a start that finds it matching the store reads it instead of the
//! store and answers exactly as the store would have it. A checkpoint the
//! store has moved past (a write, then SIGKILL) or a damaged one is not used: the start
//! loads from the store, and nothing is lost.

use crate::helpers::*;
use crate::process::{prepare, Server};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const WORKSPACE: &str = "b2574901-bbf6-5245-9d3f-3dd074396143";

/// Every record of every entity as the API lists it, and a phone search.
async fn everything(server: &Server) -> BTreeMap<String, Vec<Value>> {
    let http = server.client();
    let mut out = BTreeMap::new();
    for entity in [
        "users",
        "companies",
        "contacts",
        "jobs",
        "candidates",
        "applications",
        "notes",
        "tasks",
        "attachments",
    ] {
        let mut records = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut url = format!("{}/v1/{entity}?limit=500", server.api);
            if let Some(c) = &cursor {
                url.push_str(&format!("&cursor={c}"));
            }
            let res = http.get(&url).bearer_auth(READ_KEY).send().await.unwrap();
            assert_eq!(res.status(), 200, "{entity}");
            let body: Value = res.json().await.unwrap();
            records.extend(body["data"].as_array().expect("a page").iter().cloned());
            match body["next_cursor"].as_str() {
                Some(c) => cursor = Some(c.to_string()),
                None => break,
            }
        }
        out.insert(entity.to_string(), records);
    }
    let res = http
        .get(format!("{}/v1/search/phone?number=07700900123", server.api))
        .bearer_auth(READ_KEY)
        .send()
        .await
        .unwrap();
    let mut search: Value = res.json().await.unwrap();
    search["request_id"] = Value::Null;
    out.insert("search".into(), vec![search]);
    out
}

async fn add_note(server: &Server, body: &str) -> String {
    let res = server
        .client()
        .post(format!("{}/v1/notes", server.api))
        .bearer_auth(WRITE_KEY)
        .json(&json!({
            "parent_type": "candidate",
            "parent_id": "a214ca67-7691-5c62-8910-a410373e10c9",
            "body_html": body,
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    let created: Value = res.json().await.unwrap();
    created["data"]["id"].as_str().unwrap().to_string()
}

fn checkpoint(dir: &Path) -> PathBuf {
    dir.join("checkpoints").join(format!("{WORKSPACE}.ckpt"))
}

/// The `message` of every log line of `log` with this target.
fn messages(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .collect()
}

fn logged(log: &Path, message: &str) -> Option<Value> {
    messages(log)
        .into_iter()
        .find(|l| l["message"].as_str() == Some(message))
}

/// Waits until the log says `message` (the keeper writes in the background).
async fn wait_logged(log: &Path, message: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(line) = logged(log, message) {
            return line;
        }
        assert!(Instant::now() < deadline, "never logged {message:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn stop(mut server: Server, sig: &str) {
    server.signal(sig);
    let status = tokio::time::timeout(Duration::from_secs(30), server.child.wait())
        .await
        .expect("stops within 30 s")
        .unwrap();
    if sig == "-TERM" {
        assert_eq!(status.code(), Some(0), "{status:?}");
    }
}

async fn a_restart_reads_a_matching_checkpoint_and_only_a_matching_one(b: Backend) {
    let dir = prepare(&b).await;
    let log = |n: u32| dir.path().join(format!("server-{n}.log"));

    // The import left a checkpoint: the first start reads it, and answers as the store
    // would have it.
    assert!(checkpoint(dir.path()).exists());
    let server = Server::start_logging(dir.path(), &b, Some(&log(1))).await;
    wait_logged(&log(1), "restored from the checkpoint").await;
    let imported = everything(&server).await;
    assert!(!imported["candidates"].is_empty());
    // A write moves the store past it; SIGTERM writes it again.
    let kept = add_note(&server, "<p>before the restart</p>").await;
    let before = everything(&server).await;
    assert_ne!(before, imported);
    stop(server, "-TERM").await;
    let written: Vec<Value> = messages(&log(1))
        .into_iter()
        .filter(|l| l["message"] == "checkpoint written")
        .collect();
    assert_eq!(written.len(), 1, "{written:?}");

    // Restored from it, and the same answers.
    let server = Server::start_logging(dir.path(), &b, Some(&log(2))).await;
    let restored = wait_logged(&log(2), "restored from the checkpoint").await;
    assert_eq!(restored["position"], written[0]["position"]);
    assert_eq!(everything(&server).await, before);
    assert!(before["notes"].iter().any(|n| n["id"] == kept.as_str()));

    // A write, then SIGKILL: the checkpoint is behind the store and is not used. (The
    // write comes after the keeper's first look, which would otherwise catch it.)
    wait_logged(&log(2), "checkpoint look done").await;
    let added = add_note(&server, "<p>after the checkpoint</p>").await;
    let after = everything(&server).await;
    stop(server, "-KILL").await;
    let server = Server::start_logging(dir.path(), &b, Some(&log(3))).await;
    let refused = logged(&log(3), "checkpoint not used; loading from the store").expect("refused");
    assert!(
        refused["why"].as_str().unwrap().starts_with("stale"),
        "{refused}"
    );
    assert!(logged(&log(3), "restored from the checkpoint").is_none());
    assert_eq!(everything(&server).await, after);
    assert!(after["notes"].iter().any(|n| n["id"] == added.as_str()));
    // The keeper brings it up to date once loaded.
    wait_logged(&log(3), "checkpoint written").await;
    stop(server, "-KILL").await;

    // Damaged (one byte changed): not used either.
    let path = checkpoint(dir.path());
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x20;
    std::fs::write(&path, &bytes).unwrap();
    let server = Server::start_logging(dir.path(), &b, Some(&log(4))).await;
    let refused = logged(&log(4), "checkpoint not used; loading from the store").expect("refused");
    assert!(
        refused["why"].as_str().unwrap().starts_with("damaged"),
        "{refused}"
    );
    assert_eq!(everything(&server).await, after);
    stop(server, "-TERM").await;
}

store_test!(a_restart_reads_a_matching_checkpoint_and_only_a_matching_one);
