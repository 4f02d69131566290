//! The `recruitd` binary: offline import and keys, and keys through a running server.

use crate::helpers::*;
use crate::process::{command, free_port, prepare, Server};
use serde_json::json;
use std::time::Duration;

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
    // What `key create` needs: the workspace's id and who may create its keys.
    assert!(
        out.contains("workspace b2574901-bbf6-5245-9d3f-3dd074396143")
            && out.contains("--created-by olivia@northwind.example"),
        "{out}"
    );
    // A rejected file names its location and changes nothing.
    let mut bad = example();
    bad["jobs"][0]["is_archived"] = json!("yes");
    let bad_file = dir.path().join("bad.json");
    std::fs::write(&bad_file, serde_json::to_vec(&bad).unwrap()).unwrap();
    let (ok, _, err) = recruitd(dir.path(), &b, &["import", bad_file.to_str().unwrap()]).await;
    assert!(!ok);
    assert!(err.contains("jobs[0].is_archived"), "{err}");
    // Keys are made by a workspace owner or administrator; Raj is a recruiter.
    let create = |by: &'static str, scopes: &'static str| {
        [
            "key",
            "create",
            "--workspace",
            "Northwind Talent",
            "--created-by",
            by,
            "--scopes",
            scopes,
            "--admin-listen",
            "127.0.0.1:9",
        ]
    };
    let (ok, _, err) = recruitd(
        dir.path(),
        &b,
        &create("raj@northwind.example", "notes:write"),
    )
    .await;
    assert!(!ok && err.contains("owner or administrator"), "{err}");
    // A bad scope is refused before anything is done: not even a data dir is made.
    let nowhere = dir.path().join("not-made");
    let (ok, _, err) = recruitd(
        &nowhere,
        &b,
        &create("olivia@northwind.example", "notes:wirte"),
    )
    .await;
    assert!(
        !ok && err.contains("unknown scope \"notes:wirte\""),
        "{err}"
    );
    assert!(!nowhere.exists(), "nothing was done");
    // The whole workspace is never loaded, only its users: a candidate that does not
    // decode (a full load would fail on it) does not stand in the way.
    let candidate = "a214ca67-7691-5c62-8910-a410373e10c9";
    let body = store_sql(
        &b,
        dir.path(),
        &format!("SELECT body FROM records WHERE id = '{candidate}'"),
    )
    .await
    .expect("the candidate is stored");
    store_sql(
        &b,
        dir.path(),
        &format!("UPDATE records SET body = '{{' WHERE id = '{candidate}'"),
    )
    .await;
    // No server runs: the key goes to the store; its secret is printed once, on its own line.
    let (ok, out, err) = recruitd(
        dir.path(),
        &b,
        &create("olivia@northwind.example", "notes:write"),
    )
    .await;
    assert!(ok, "{out}{err}");
    store_sql(
        &b,
        dir.path(),
        &format!(
            "UPDATE records SET body = '{}' WHERE id = '{candidate}'",
            body.replace('\'', "''")
        ),
    )
    .await;
    let secret = out.lines().next().unwrap().trim().to_string();
    assert!(secret.starts_with("rk_"), "{out}");
    assert!(out.lines().nth(1).unwrap().contains("key_"), "{out}");
    let out_of_create = out.clone();
    let (ok, _, err) = recruitd(
        dir.path(),
        &b,
        &[
            "key",
            "create",
            "--workspace",
            "nope",
            "--created-by",
            "olivia@northwind.example",
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
    // The list shows every key of the workspace, with scopes, creation and revocation,
    // and never a secret.
    let new_id = out_key_id(&out_of_create);
    let (ok, listed, err) = recruitd(
        dir.path(),
        &b,
        &["key", "list", "--workspace", "Northwind Talent"],
    )
    .await;
    assert!(ok, "{listed}{err}");
    let line_of = |id: &str| {
        listed
            .lines()
            .find(|l| l.starts_with(&format!("{id} ")))
            .unwrap_or_else(|| panic!("{id} not listed: {listed}"))
            .to_owned()
    };
    let created = line_of(&new_id);
    assert!(created.contains("read,notes:write"), "{created}");
    assert!(created.ends_with(" no"), "{created}");
    let year = chrono::Utc::now().format("%Y-").to_string();
    assert!(created.contains(&year), "a creation time: {created}");
    assert!(line_of("key_demo_write").ends_with(" yes"), "{listed}");
    for secret in [secret.as_str(), READ_KEY, WRITE_KEY] {
        assert!(!listed.contains(secret), "a secret was listed");
    }
    let (ok, _, err) = recruitd(dir.path(), &b, &["key", "list", "--workspace", "nope"]).await;
    assert!(!ok && err.contains("nope"), "{err}");
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

/// The example snapshot's job.
const JOB: &str = "2fae0fc8-6eee-55da-8a7e-f15794b7515f";

/// `GET path` with `key` on a `recruitd serve` child: status and JSON body.
async fn get(server: &Server, path: &str, key: &str) -> (u16, serde_json::Value) {
    let res = server
        .client()
        .get(format!("{}{path}", server.api))
        .bearer_auth(key)
        .send()
        .await
        .unwrap();
    (res.status().as_u16(), res.json().await.unwrap_or_default())
}

/// A server runs on the store but its admin interface is not where the command looks:
/// the offline writers must refuse (writing behind the server's back would leave it
/// serving, and later overwriting, what it loaded) and change nothing.
async fn offline_writers_refuse_a_store_a_server_uses(b: Backend) {
    let dir = prepare(&b).await;
    let mut server = Server::start(dir.path(), &b).await;
    let token = std::fs::read_to_string(dir.path().join("admin-token")).unwrap();
    // Nothing listens there.
    let elsewhere = format!("127.0.0.1:{}", free_port());

    let (ok, out, err) = recruitd(
        dir.path(),
        &b,
        &[
            "key",
            "revoke",
            "key_demo_write",
            "--admin-listen",
            &elsewhere,
        ],
    )
    .await;
    assert!(!ok, "revoke claimed success: {out}{err}");
    assert!(!out.contains("revoked"), "{out}");
    assert!(
        err.contains("a server is using this store") && err.contains(&elsewhere),
        "{err}"
    );
    assert_eq!(get(&server, "/v1/jobs", WRITE_KEY).await.0, 200);

    let (ok, out, err) = recruitd(
        dir.path(),
        &b,
        &[
            "key",
            "create",
            "--workspace",
            "Northwind Talent",
            "--created-by",
            "olivia@northwind.example",
            "--admin-listen",
            &elsewhere,
        ],
    )
    .await;
    assert!(!ok && out.is_empty(), "create claimed success: {out}{err}");
    assert!(err.contains("a server is using this store"), "{err}");

    let mut changed = example();
    changed["jobs"][0]["title"] = json!("Changed offline");
    let file = dir.path().join("changed.json");
    std::fs::write(&file, serde_json::to_vec(&changed).unwrap()).unwrap();
    let (ok, out, err) = recruitd(dir.path(), &b, &["import", file.to_str().unwrap()]).await;
    assert!(!ok, "import claimed success: {out}{err}");
    assert!(
        err.contains("a server is using this store") && err.contains("POST /admin/v1/import"),
        "{err}"
    );
    assert!(!err.contains(token.trim()), "the admin token was printed");

    // The store is as the server left it: a fresh server loads the key unrevoked and the
    // job unchanged.
    server.signal("-KILL");
    server.child.wait().await.unwrap();
    let mut again = Server::start(dir.path(), &b).await;
    assert_eq!(get(&again, "/v1/jobs", WRITE_KEY).await.0, 200);
    let (s, job) = get(&again, &format!("/v1/jobs/{JOB}"), READ_KEY).await;
    assert_eq!(s, 200, "{job}");
    assert_eq!(job["data"]["title"], "Site Reliability Engineer");

    // A killed server leaves no lock behind: with none running, both work offline.
    again.signal("-KILL");
    again.child.wait().await.unwrap();
    let (ok, out, err) = recruitd(dir.path(), &b, &["import", file.to_str().unwrap()]).await;
    assert!(ok, "{out}{err}");
    let (ok, out, err) = recruitd(
        dir.path(),
        &b,
        &[
            "key",
            "revoke",
            "key_demo_write",
            "--admin-listen",
            &elsewhere,
        ],
    )
    .await;
    assert!(ok && out.contains("revoked key_demo_write"), "{out}{err}");
}

store_test!(
    offline_import_and_keys,
    keys_through_a_running_server,
    offline_writers_refuse_a_store_a_server_uses
);

/// The embedded store is single-node: a second `serve` on it refuses to start, and says
/// why; the first keeps serving.
#[actix_web::test]
async fn a_second_server_on_one_sqlite_store_refuses_to_start() {
    let b = Backend::Sqlite;
    let dir = prepare(&b).await;
    let server = Server::start(dir.path(), &b).await;
    let second = command(dir.path(), &b)
        .args(["serve", "--listen", &format!("127.0.0.1:{}", free_port())])
        .args(["--admin-listen", &format!("127.0.0.1:{}", free_port())])
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(30), second)
        .await
        .expect("the second server gives up rather than run")
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("single-node"), "{err}");
    assert_eq!(get(&server, "/v1/jobs", READ_KEY).await.0, 200);
}

/// Two servers on one PostgreSQL store (nodes of one cluster), the key revoked through
/// one of them: that one tells the other before it answers, so both refuse the key on
/// its next request.
#[actix_web::test]
async fn revoking_through_one_of_two_servers_on_postgres_revokes_it_on_both() {
    let Some(b) = Backend::postgres().await else {
        eprintln!("{PG_ENV} not set: PostgreSQL variant not run");
        return;
    };
    let first = spawn_app(b.clone()).await;
    first.import_ok(&example()).await;
    let second = spawn_app(b.clone()).await;
    let admin = first.admin_base.trim_start_matches("http://").to_string();
    let (ok, out, err) = recruitd(
        first.data_dir.path(),
        &b,
        &["key", "revoke", "key_demo_write", "--admin-listen", &admin],
    )
    .await;
    assert!(ok, "{out}{err}");
    assert!(out.contains("revoked key_demo_write"), "{out}");
    for server in [&first, &second] {
        let (s, body) = server.get("/v1/jobs", WRITE_KEY).await;
        assert_error(s, &body, 401, "UNAUTHORIZED");
    }
    b.release().await;
}

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
            "olivia@northwind.example",
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

/// The key id in `key create`'s output (its second line names it).
fn out_key_id(out: &str) -> String {
    let line = out.lines().nth(1).unwrap_or_default();
    let at = line
        .find("key_")
        .unwrap_or_else(|| panic!("no key id in {out:?}"));
    line[at..]
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// `recruitd generate` names the workspace it wrote and its owner, who creates keys.
#[actix_web::test]
async fn generate_names_the_workspace_and_its_owner() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("snap.json");
    let (ok, _, err) = recruitd(
        dir.path(),
        &Backend::Sqlite,
        &["generate", "--people", "3", "--out", file.to_str().unwrap()],
    )
    .await;
    assert!(ok, "{err}");
    let snap: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let owner = snap["users"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["role"] == "owner" && u["status"] == "active")
        .unwrap();
    let ws = snap["workspace"]["id"].as_str().unwrap();
    let email = owner["email"].as_str().unwrap();
    assert!(
        err.contains(&format!("--workspace {ws} --created-by {email}")),
        "{err}"
    );
}

/// The admin token can come from a file (`--admin-token-file`), so that it appears
/// neither on the command line nor in the environment: the server takes it (and makes
/// none of its own), the key commands reach the server with it, and the process's
/// command line holds only the file's name.
#[actix_web::test]
async fn the_admin_token_can_be_given_by_file() {
    let dir = prepare(&Backend::Sqlite).await;
    let secrets = tempfile::tempdir().unwrap();
    let token_file = secrets.path().join("token");
    let token = "tok_from_a_file_0123456789abcdef";
    std::fs::write(&token_file, format!("{token}\n")).unwrap();
    let (api, admin) = (free_port(), free_port());
    let mut child = command(dir.path(), &Backend::Sqlite)
        .args(["serve", "--listen", &format!("127.0.0.1:{api}")])
        .args(["--admin-listen", &format!("127.0.0.1:{admin}")])
        .arg("--admin-token-file")
        .arg(&token_file)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let http = reqwest::Client::new();
    let ready = format!("http://127.0.0.1:{admin}/admin/v1/ready");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        assert!(child.try_wait().unwrap().is_none(), "the server stopped");
        let res = http.get(&ready).bearer_auth(token).send().await;
        if res.is_ok_and(|r| r.status() == 200) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never ready");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let wrong = http
        .get(&ready)
        .bearer_auth("tok_other")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    assert!(!dir.path().join("admin-token").exists());
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", child.id().unwrap())).unwrap();
    assert!(!String::from_utf8_lossy(&cmdline).contains(token));

    // Through the running server, the token read from the file.
    let admin_addr = format!("127.0.0.1:{admin}");
    let through = [
        "--admin-listen",
        admin_addr.as_str(),
        "--admin-token-file",
        token_file.to_str().unwrap(),
    ];
    let create = [
        &[
            "key",
            "create",
            "--workspace",
            "Northwind Talent",
            "--created-by",
            "olivia@northwind.example",
        ][..],
        &through,
    ]
    .concat();
    let (ok, out, err) = recruitd(dir.path(), &Backend::Sqlite, &create).await;
    assert!(ok && out.starts_with("rk_"), "{out}{err}");

    // An empty file is refused, naming it.
    std::fs::write(&token_file, "\n").unwrap();
    let revoke = [&["key", "revoke", "key_demo_read"][..], &through].concat();
    let (ok, _, err) = recruitd(dir.path(), &Backend::Sqlite, &revoke).await;
    assert!(!ok && err.contains("is empty"), "{err}");
    child.kill().await.unwrap();
}
