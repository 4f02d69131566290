//! The real `recruitd` process under write load: killed with SIGKILL at a random moment,
//! or asked to stop with SIGTERM. Either way, every write a client saw acknowledged is
//! there after a restart; SIGTERM ends the process with status 0.

use crate::helpers::*;
use reqwest::Client;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A `recruitd serve` child process on free ports.
pub(crate) struct Server {
    pub(crate) child: tokio::process::Child,
    pub(crate) api: String,
    pub(crate) admin: String,
    data_dir: PathBuf,
}

pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub(crate) fn command(data_dir: &Path, backend: &Backend) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_recruitd"));
    cmd.arg("--data-dir").arg(data_dir);
    if let Backend::Postgres(url) = backend {
        cmd.arg("--database-url").arg(url);
    }
    cmd.env_remove("RECRUITD_ADMIN_TOKEN")
        .env_remove("RECRUITD_DATABASE_URL")
        .env("RECRUITD_LOG", "warn");
    cmd
}

impl Server {
    pub(crate) async fn start(data_dir: &Path, backend: &Backend) -> Server {
        Self::start_logging(data_dir, backend, None).await
    }

    /// Starts with JSON logs at `info` written to `log`, when given.
    async fn start_logging(data_dir: &Path, backend: &Backend, log: Option<&Path>) -> Server {
        let (api, admin) = (free_port(), free_port());
        let mut cmd = command(data_dir, backend);
        cmd.args(["serve", "--listen", &format!("127.0.0.1:{api}")])
            .args(["--admin-listen", &format!("127.0.0.1:{admin}")])
            .stdout(Stdio::null())
            .kill_on_drop(true);
        match log {
            Some(path) => {
                cmd.env("RECRUITD_LOG", "info")
                    .env("RECRUITD_LOG_FORMAT", "json")
                    .stderr(std::fs::File::create(path).unwrap());
            }
            None => {
                cmd.stderr(Stdio::null());
            }
        }
        let child = cmd.spawn().unwrap();
        let s = Server {
            child,
            api: format!("https://localhost:{api}"),
            admin: format!("http://127.0.0.1:{admin}"),
            data_dir: data_dir.to_path_buf(),
        };
        s.wait_ready().await;
        s
    }

    async fn wait_ready(&self) {
        let token_file = self.data_dir.join("admin-token");
        let deadline = Instant::now() + Duration::from_secs(30);
        let http = Client::new();
        loop {
            if let Ok(token) = std::fs::read_to_string(&token_file) {
                let res = http
                    .get(format!("{}/admin/v1/ready", self.admin))
                    .bearer_auth(token.trim())
                    .send()
                    .await;
                if res.is_ok_and(|r| r.status() == 200) {
                    return;
                }
            }
            assert!(Instant::now() < deadline, "server did not become ready");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub(crate) fn client(&self) -> Client {
        let pem = std::fs::read(self.data_dir.join("tls/cert.pem")).unwrap();
        Client::builder()
            .use_rustls_tls()
            .add_root_certificate(reqwest::Certificate::from_pem(&pem).unwrap())
            .timeout(Duration::from_secs(20))
            .build()
            .unwrap()
    }

    pub(crate) fn signal(&self, sig: &str) {
        let pid = self.child.id().expect("running").to_string();
        let ok = std::process::Command::new("kill")
            .args([sig, &pid])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill {sig} {pid}");
    }

    /// Every note body the server holds.
    async fn note_bodies(&self) -> std::collections::HashSet<String> {
        let http = self.client();
        let mut out = std::collections::HashSet::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut url = format!("{}/v1/notes?limit=500", self.api);
            if let Some(c) = &cursor {
                url.push_str(&format!("&cursor={c}"));
            }
            let body: Value = http
                .get(&url)
                .bearer_auth(READ_KEY)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            for n in body["data"].as_array().expect("a page of notes") {
                out.insert(n["body_html"].as_str().unwrap().to_string());
            }
            match body["next_cursor"].as_str() {
                Some(c) => cursor = Some(c.to_string()),
                None => return out,
            }
        }
    }
}

/// Writers posting notes until told to stop (or the server goes away); returns the
/// bodies the server acknowledged.
async fn write_load(
    server: &Server,
    writers: usize,
    stop: Arc<AtomicBool>,
    tag: &str,
) -> Vec<tokio::task::JoinHandle<Vec<String>>> {
    let url = format!("{}/v1/notes", server.api);
    (0..writers)
        .map(|w| {
            let (http, url, stop, tag) = (server.client(), url.clone(), stop.clone(), tag.to_string());
            tokio::spawn(async move {
                let mut acked = Vec::new();
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    let body = format!("{tag} w{w} n{n}");
                    let res = http
                        .post(&url)
                        .bearer_auth(WRITE_KEY)
                        .json(&json!({"parent_type": "company", "parent_id": FABRIKAM, "body_html": body}))
                        .send()
                        .await;
                    match res {
                        Ok(r) if r.status() == 201 => acked.push(body),
                        Ok(_) => {}
                        // The server is gone: nothing more will be acknowledged.
                        Err(_) => break,
                    }
                }
                acked
            })
        })
        .collect()
}

/// A data dir (and, for PostgreSQL, the backend's schema) holding the example snapshot,
/// imported offline.
pub(crate) async fn prepare(backend: &Backend) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("snap.json");
    std::fs::write(&file, serde_json::to_vec(&example()).unwrap()).unwrap();
    let out = command(dir.path(), backend)
        .args(["import", file.to_str().unwrap()])
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir
}

/// A small deterministic sequence of "random" delays, different per trial.
fn delay_ms(trial: u64) -> u64 {
    let mut x = trial.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    x ^= x >> 29;
    150 + x % 900
}

pub const CRASH_TRIALS: u64 = 4;

async fn sigkill_under_write_load_loses_no_acknowledged_write(b: Backend) {
    let dir = prepare(&b).await;
    let mut all_acked: Vec<String> = Vec::new();
    for trial in 0..CRASH_TRIALS {
        let server = Server::start(dir.path(), &b).await;
        let stop = Arc::new(AtomicBool::new(false));
        let writers = write_load(&server, 8, stop.clone(), &format!("t{trial}")).await;
        tokio::time::sleep(Duration::from_millis(delay_ms(trial))).await;
        server.signal("-KILL");
        stop.store(true, Ordering::Relaxed);
        let mut acked_now = 0;
        for w in writers {
            let acked = w.await.unwrap();
            acked_now += acked.len();
            all_acked.extend(acked);
        }
        assert!(
            acked_now > 0,
            "trial {trial}: no write was acknowledged before the kill"
        );
        drop(server);
        let restarted = Server::start(dir.path(), &b).await;
        let held = restarted.note_bodies().await;
        let missing: Vec<&String> = all_acked.iter().filter(|a| !held.contains(*a)).collect();
        assert!(
            missing.is_empty(),
            "trial {trial}: acknowledged but lost: {missing:?}"
        );
        drop(restarted);
    }
}

async fn sigterm_finishes_in_flight_writes_and_exits_zero(b: Backend) {
    let dir = prepare(&b).await;
    let mut server = Server::start(dir.path(), &b).await;
    let stop = Arc::new(AtomicBool::new(false));
    let writers = write_load(&server, 8, stop.clone(), "term").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    server.signal("-TERM");
    let status = tokio::time::timeout(Duration::from_secs(30), server.child.wait())
        .await
        .expect("exits within 30 s")
        .unwrap();
    stop.store(true, Ordering::Relaxed);
    assert_eq!(status.code(), Some(0), "{status:?}");
    let mut acked = Vec::new();
    for w in writers {
        acked.extend(w.await.unwrap());
    }
    assert!(!acked.is_empty());
    let restarted = Server::start(dir.path(), &b).await;
    let held = restarted.note_bodies().await;
    let missing: Vec<&String> = acked.iter().filter(|a| !held.contains(*a)).collect();
    assert!(missing.is_empty(), "acknowledged but lost: {missing:?}");
    drop(restarted);
}

async fn access_logs_are_structured_and_keep_secrets_out(b: Backend) {
    let dir = prepare(&b).await;
    let log = dir.path().join("server.log");
    let mut server = Server::start_logging(dir.path(), &b, Some(&log)).await;
    let http = server.client();
    let res = http
        .get(format!("{}/v1/search/phone?number=07700900123", server.api))
        .bearer_auth(READ_KEY)
        .send()
        .await
        .unwrap();
    let rid = res.headers()["x-request-id"].to_str().unwrap().to_string();
    assert_eq!(res.status(), 200);
    let res = http
        .get(format!("{}/v1/nothing-here", server.api))
        .bearer_auth(WRITE_KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 404);
    server.signal("-TERM");
    server.child.wait().await.unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let access: Vec<&Value> = lines
        .iter()
        .filter(|l| l["target"] == "recruitd::access")
        .collect();
    let search = access
        .iter()
        .find(|l| l["request_id"] == rid.as_str())
        .expect("the search's access line");
    assert_eq!(search["route"], "/v1/search/phone");
    assert_eq!(search["entity"], "");
    assert_eq!(search["status"], 200);
    assert_eq!(search["method"], "GET");
    assert_eq!(search["key_id"], "key_demo_read");
    assert!(search["latency_us"].as_u64().is_some());
    assert!(access.iter().any(|l| l["status"] == 404));
    for secret in [READ_KEY, WRITE_KEY] {
        assert!(!text.contains(secret), "a key secret reached the log");
    }
    let token = std::fs::read_to_string(dir.path().join("admin-token")).unwrap();
    assert!(
        !text.contains(token.trim()),
        "the admin token reached the log"
    );
}

store_test!(
    access_logs_are_structured_and_keep_secrets_out,
    sigkill_under_write_load_loses_no_acknowledged_write,
    sigterm_finishes_in_flight_writes_and_exits_zero
);
