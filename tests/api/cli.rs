//! The `recruitd` binary: offline import and keys, and keys through a running server.

use crate::helpers::*;
use serde_json::json;

async fn recruitd(
    data_dir: &std::path::Path,
    backend: &Backend,
    args: &[&str],
) -> (bool, String, String) {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_recruitd"));
    cmd.arg("--data-dir").arg(data_dir);
    if let Backend::Postgres(url) = backend {
        cmd.arg("--database-url").arg(url);
    }
    cmd.env_remove("RECRUITD_ADMIN_TOKEN")
        .env_remove("RECRUITD_DATABASE_URL");
    let out = cmd.args(args).output().await.unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

async fn offline_import_and_keys(b: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("snap.json");
    std::fs::write(&file, serde_json::to_vec(&example()).unwrap()).unwrap();
    let (ok, out, err) = recruitd(dir.path(), &b, &["import", file.to_str().unwrap()]).await;
    assert!(ok, "{out}{err}");
    // A rejected file names its location and changes nothing.
    let mut bad = example();
    bad["jobs"][0]["is_archived"] = json!("yes");
    let bad_file = dir.path().join("bad.json");
    std::fs::write(&bad_file, serde_json::to_vec(&bad).unwrap()).unwrap();
    let (ok, _, err) = recruitd(dir.path(), &b, &["import", bad_file.to_str().unwrap()]).await;
    assert!(!ok);
    assert!(err.contains("jobs[0].is_archived"), "{err}");
    // No server runs: the key goes to the store; its secret is printed once, on its own line.
    let (ok, out, err) = recruitd(
        dir.path(),
        &b,
        &[
            "key",
            "create",
            "--workspace",
            "Northwind Talent",
            "--created-by",
            "raj@northwind.example",
            "--scopes",
            "notes:write",
            "--admin-listen",
            "127.0.0.1:9",
        ],
    )
    .await;
    assert!(ok, "{out}{err}");
    let secret = out.lines().next().unwrap().trim().to_string();
    assert!(secret.starts_with("rk_"), "{out}");
    assert!(out.lines().nth(1).unwrap().contains("key_"), "{out}");
    let (ok, _, err) = recruitd(
        dir.path(),
        &b,
        &[
            "key",
            "create",
            "--workspace",
            "nope",
            "--created-by",
            "raj@northwind.example",
            "--admin-listen",
            "127.0.0.1:9",
        ],
    )
    .await;
    assert!(!ok && err.contains("nope"), "{err}");
    let (ok, _, _) = recruitd(
        dir.path(),
        &b,
        &[
            "key",
            "revoke",
            "key_demo_write",
            "--admin-listen",
            "127.0.0.1:9",
        ],
    )
    .await;
    assert!(ok);
    let app = spawn_app_in(b, dir).await;
    assert_eq!(app.get("/v1/jobs", &secret).await.0, 200);
    let (s, body) = app.get("/v1/jobs", WRITE_KEY).await;
    assert_error(s, &body, 401, "UNAUTHORIZED");
    let (_, jobs) = app.get("/v1/jobs", READ_KEY).await;
    assert_eq!(
        jobs["data"][0]["is_archived"], false,
        "the rejected file changed nothing"
    );
}

async fn keys_through_a_running_server(b: Backend) {
    let app = spawn_app(b.clone()).await;
    app.import_ok(&example()).await;
    let admin = app.admin_base.trim_start_matches("http://").to_string();
    let (ok, out, err) = recruitd(
        app.data_dir.path(),
        &b,
        &[
            "key",
            "create",
            "--workspace",
            "b2574901-bbf6-5245-9d3f-3dd074396143",
            "--created-by",
            "olivia@northwind.example",
            "--admin-listen",
            &admin,
        ],
    )
    .await;
    assert!(ok, "{out}{err}");
    let secret = out.lines().next().unwrap().trim().to_string();
    let id = out
        .lines()
        .nth(1)
        .unwrap()
        .trim_start_matches("id: ")
        .trim()
        .to_string();
    // The running server knows the key at once…
    assert_eq!(app.get("/v1/users", &secret).await.0, 200);
    // …and a revocation takes effect on the next request.
    let (ok, out, err) = recruitd(
        app.data_dir.path(),
        &b,
        &["key", "revoke", &id, "--admin-listen", &admin],
    )
    .await;
    assert!(ok, "{out}{err}");
    let (s, body) = app.get("/v1/users", &secret).await;
    assert_error(s, &body, 401, "UNAUTHORIZED");
    let (ok, _, err) = recruitd(
        app.data_dir.path(),
        &b,
        &["key", "revoke", "key_nope", "--admin-listen", &admin],
    )
    .await;
    assert!(!ok && err.contains("key_nope"), "{err}");
}

store_test!(offline_import_and_keys, keys_through_a_running_server);

/// `recruitd key create | head -n1` takes the secret and leaves: the command must not
/// fail (it used to panic writing the id line to the closed pipe).
#[actix_web::test]
async fn key_create_into_a_pipe_closed_early() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("snap.json");
    std::fs::write(&file, serde_json::to_vec(&example()).unwrap()).unwrap();
    let (ok, out, err) = recruitd(
        dir.path(),
        &Backend::Sqlite,
        &["import", file.to_str().unwrap()],
    )
    .await;
    assert!(ok, "{out}{err}");
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_recruitd"))
        .arg("--data-dir")
        .arg(dir.path())
        .args([
            "key",
            "create",
            "--workspace",
            "Northwind Talent",
            "--created-by",
            "raj@northwind.example",
            "--admin-listen",
            "127.0.0.1:9",
        ])
        .env_remove("RECRUITD_ADMIN_TOKEN")
        .env_remove("RECRUITD_DATABASE_URL")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The reader leaves before anything is printed (the command opens the store first).
    drop(child.stdout.take());
    let out = child.wait_with_output().await.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    assert!(!stderr.contains("panicked"), "{stderr}");
}
