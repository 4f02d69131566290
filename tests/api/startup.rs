//! Starting the real binary as an operator does: a normal start logs quietly (no "slow
//! statement" for a bulk load), with JSON logs every line of stderr is JSON, the record
//! count is one number at import and at load, and a start that cannot succeed says why
//! (where PostgreSQL was looked for; which address is in use) and leaves no half-made
//! data dir behind.

use crate::helpers::*;
use crate::process::{command, free_port};
use serde_json::Value;
use std::time::{Duration, Instant};

/// Every line of `text` as JSON (each must be).
fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

async fn a_normal_start_is_quiet_and_counts_records_once(b: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // Enough people that loading them takes over a second even in a release build's
    // worst case here: the load's one statement streams every record.
    let snapshot = dir.path().join("snap.json");
    std::fs::write(
        &snapshot,
        recruitd::generate::snapshot_bytes(&recruitd::generate::GenerateOptions::new(5_000, 3)),
    )
    .unwrap();
    let out = command(&data, &b)
        .env("RECRUITD_LOG", "info")
        .env("RECRUITD_LOG_FORMAT", "json")
        .arg("import")
        .arg(&snapshot)
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let imported = json_lines(&stderr)
        .into_iter()
        .find(|l| l["message"] == "import applied")
        .expect("the import's log line");
    let records = imported["records"].as_u64().unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&format!("it holds {records} records")),
        "the import's summary gives the same count"
    );

    // A start with `--demo` on data that is already there: it loads, says how to make a
    // key, and stops on SIGTERM; with JSON logs, all of it as JSON lines.
    let log = dir.path().join("serve.log");
    let (api, admin) = (free_port(), free_port());
    let mut server = command(&data, &b)
        .env("RECRUITD_LOG", "info")
        .env("RECRUITD_LOG_FORMAT", "json")
        .args(["serve", "--demo", "--listen", &format!("127.0.0.1:{api}")])
        .args(["--admin-listen", &format!("127.0.0.1:{admin}")])
        .stderr(std::fs::File::create(&log).unwrap())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !std::fs::read_to_string(&log)
        .unwrap()
        .contains(" key create ")
    {
        assert!(
            Instant::now() < deadline,
            "no key hint: {}",
            std::fs::read_to_string(&log).unwrap()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let pid = server.id().unwrap().to_string();
    assert!(std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    assert!(server.wait().await.unwrap().success());
    let text = std::fs::read_to_string(&log).unwrap();
    let lines = json_lines(&text);
    let loaded = lines
        .iter()
        .find(|l| l["message"] == "workspace loaded")
        .expect("the load's log line");
    assert_eq!(
        loaded["records"].as_u64(),
        Some(records),
        "one record count"
    );
    assert!(
        !text.contains("slow statement"),
        "a normal start warns of nothing: {text}"
    );
    assert!(
        !lines
            .iter()
            .any(|l| l["level"] == "WARN" || l["level"] == "ERROR"),
        "{text}"
    );
}

async fn failed_starts_say_why_and_leave_nothing_behind(b: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");

    // An address in use: the start fails naming it, and makes no data dir.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken_addr = taken.local_addr().unwrap().to_string();
    let out = command(&data, &b)
        .args(["serve", "--listen", &taken_addr])
        .args(["--admin-listen", &format!("127.0.0.1:{}", free_port())])
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains(&format!("binding {taken_addr}")),
        "{stderr}"
    );
    assert!(!data.exists(), "a failed start leaves no data dir");

    // PostgreSQL where nothing listens: said as such, with the address, by every command.
    let port = free_port();
    let nowhere = format!("postgres://postgres@127.0.0.1:{port}/test");
    for args in [
        vec![
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--admin-listen",
            "127.0.0.1:0",
        ],
        vec!["key", "list"],
    ] {
        let out = command(&data, &Backend::Postgres(nowhere.clone()))
            .args(&args)
            .output()
            .await
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(
            stderr.contains(&format!("connection refused at 127.0.0.1:{port}")),
            "{args:?}: {stderr}"
        );
        assert!(!data.exists(), "{args:?} leaves no data dir");
    }
}

store_test!(a_normal_start_is_quiet_and_counts_records_once);

#[actix_web::test]
async fn failed_starts_say_why() {
    failed_starts_say_why_and_leave_nothing_behind(Backend::Sqlite).await
}
