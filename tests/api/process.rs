//! The real `recruitd` process under write load: killed with SIGKILL at a random moment,
//! or asked to stop with SIGTERM. Either way, after a restart what every client was told
//! holds: an acknowledged write is there with the id it was given, a refused one is not,
//! and one that got no answer is there exactly once after its client retried with the
//! same `reference`; the API's notes are the store's, note for note. SIGTERM ends the
//! process with status 0.

use crate::helpers::*;
use reqwest::Client;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
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

/// How long a started server is given to be ready.
const READY_WITHIN: Duration = Duration::from_secs(30);

impl Server {
    pub(crate) async fn start(data_dir: &Path, backend: &Backend) -> Server {
        Self::start_logging(data_dir, backend, None).await
    }

    /// Starts with JSON logs at `info` written to `log`, when given (else to a file of
    /// its own, shown if the server does not come up). The ports are picked free just
    /// before the start; another test may take one meanwhile, so a server that stops at
    /// once for an address in use is started again on fresh ports.
    pub(crate) async fn start_logging(
        data_dir: &Path,
        backend: &Backend,
        log: Option<&Path>,
    ) -> Server {
        Self::start_with(data_dir, backend, log, &[]).await
    }

    /// As [`Server::start_logging`], with `extra` arguments to `serve`.
    pub(crate) async fn start_with(
        data_dir: &Path,
        backend: &Backend,
        log: Option<&Path>,
        extra: &[&str],
    ) -> Server {
        Self::start_ready_within(data_dir, backend, log, extra, READY_WITHIN).await
    }

    /// As [`Server::start_with`], waiting up to `ready_within` for it to be ready (a
    /// node that loads a large workspace before it is, in a debug build on a busy
    /// machine).
    pub(crate) async fn start_ready_within(
        data_dir: &Path,
        backend: &Backend,
        log: Option<&Path>,
        extra: &[&str],
        ready_within: Duration,
    ) -> Server {
        let own_log = tempfile::NamedTempFile::new().unwrap();
        let log_path = log.unwrap_or(own_log.path()).to_path_buf();
        for _ in 0..3 {
            let (api, admin) = (free_port(), free_port());
            let mut cmd = command(data_dir, backend);
            cmd.args(["serve", "--listen", &format!("127.0.0.1:{api}")])
                .args(["--admin-listen", &format!("127.0.0.1:{admin}")])
                .args(extra)
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(&log_path).unwrap())
                .kill_on_drop(true);
            if log.is_some() {
                // The checkpoint keeper's looks too (`checkpoint look done`), which tests
                // wait for to know where a write falls.
                cmd.env("RECRUITD_LOG", "info,actors::checkpoint=debug")
                    .env("RECRUITD_LOG_FORMAT", "json");
            }
            let child = cmd.spawn().unwrap();
            let mut s = Server {
                child,
                api: format!("https://localhost:{api}"),
                admin: format!("http://127.0.0.1:{admin}"),
                data_dir: data_dir.to_path_buf(),
            };
            match s.wait_ready(ready_within).await {
                Ok(()) => return s,
                Err(()) => {
                    let text = std::fs::read_to_string(&log_path).unwrap_or_default();
                    if !text.contains("Address already in use") {
                        panic!("the server did not become ready; its log:\n{text}");
                    }
                }
            }
        }
        panic!("no free ports in three tries");
    }

    /// Waits until the admin interface says ready; `Err` if the process ended first, or
    /// after `within`.
    async fn wait_ready(&mut self, within: Duration) -> Result<(), ()> {
        let token_file = self.data_dir.join("admin-token");
        let deadline = Instant::now() + within;
        let http = Client::builder()
            .timeout(Duration::from_secs(5))
            .build()
            .unwrap();
        loop {
            if self.child.try_wait().unwrap().is_some() {
                return Err(());
            }
            if let Ok(token) = std::fs::read_to_string(&token_file) {
                let res = http
                    .get(format!("{}/admin/v1/ready", self.admin))
                    .bearer_auth(token.trim())
                    .send()
                    .await;
                if res.is_ok_and(|r| r.status() == 200) {
                    return Ok(());
                }
            }
            if Instant::now() >= deadline {
                return Err(());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The data dir it was started on.
    pub(crate) fn data_dir(&self) -> &Path {
        &self.data_dir
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

    /// Every note the server shows, as body → ids.
    pub(crate) async fn notes(&self) -> std::collections::HashMap<String, Vec<String>> {
        self.notes_of(READ_KEY).await
    }

    /// Every note the server shows the key `key` (of any workspace), as body → ids.
    pub(crate) async fn notes_of(
        &self,
        key: &str,
    ) -> std::collections::HashMap<String, Vec<String>> {
        let http = self.client();
        let mut out: std::collections::HashMap<String, Vec<String>> = Default::default();
        let mut cursor: Option<String> = None;
        loop {
            let mut url = format!("{}/v1/notes?limit=500", self.api);
            if let Some(c) = &cursor {
                url.push_str(&format!("&cursor={c}"));
            }
            let body: Value = http
                .get(&url)
                .bearer_auth(key)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            for n in body["data"].as_array().expect("a page of notes") {
                out.entry(n["body_html"].as_str().unwrap_or_default().to_string())
                    .or_default()
                    .push(n["id"].as_str().unwrap().to_string());
            }
            match body["next_cursor"].as_str() {
                Some(c) => cursor = Some(c.to_string()),
                None => return out,
            }
        }
    }
}

/// What a client was told about one write.
#[derive(Clone, Debug)]
enum Told {
    /// 201 with this id: committed.
    Created(String),
    /// A 4xx: refused, nothing applied.
    Refused(u16),
    /// No answer (the server died) or a 5xx: the outcome is not known to the client,
    /// which retries with the same `reference`.
    Unknown,
}

/// One write a client sent: its body, which is also its `reference`, and what it was told.
#[derive(Clone, Debug)]
struct Sent {
    body: String,
    told: Told,
}

/// The JSON of a note write whose `reference` is its body.
fn note_request(body: &str) -> Value {
    json!({"parent_type": "company", "parent_id": FABRIKAM, "body_html": body, "reference": body})
}

/// Writers posting notes until told to stop (or the server goes away); returns every
/// write each sent and what it was told.
async fn write_load(
    server: &Server,
    writers: usize,
    stop: Arc<AtomicBool>,
    acked: Arc<AtomicUsize>,
    tag: &str,
) -> Vec<tokio::task::JoinHandle<Vec<Sent>>> {
    let url = format!("{}/v1/notes", server.api);
    (0..writers)
        .map(|w| {
            let (http, url, stop, acked, tag) = (
                server.client(),
                url.clone(),
                stop.clone(),
                acked.clone(),
                tag.to_string(),
            );
            tokio::spawn(async move {
                let mut sent = Vec::new();
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    let body = format!("{tag} w{w} n{n}");
                    let res = http
                        .post(&url)
                        .bearer_auth(WRITE_KEY)
                        .json(&note_request(&body))
                        .send()
                        .await;
                    let told = match res {
                        Ok(r) if r.status() == 201 => {
                            let v: Value = r.json().await.unwrap_or(Value::Null);
                            match v["data"]["id"].as_str() {
                                Some(id) => {
                                    acked.fetch_add(1, Ordering::SeqCst);
                                    Told::Created(id.to_string())
                                }
                                // The answer was cut off: as good as none.
                                None => Told::Unknown,
                            }
                        }
                        Ok(r) if r.status().is_client_error() => Told::Refused(r.status().as_u16()),
                        Ok(_) => Told::Unknown,
                        Err(_) => Told::Unknown,
                    };
                    let unanswered = matches!(told, Told::Unknown);
                    sent.push(Sent { body, told });
                    // The server is gone (or failing): this writer's run ends here.
                    if unanswered {
                        break;
                    }
                }
                sent
            })
        })
        .collect()
}

/// The notes the store holds that the API shows (not private), as body → id, read behind
/// the server's back.
async fn stored_notes(
    dir: &Path,
    backend: &Backend,
) -> std::collections::HashMap<String, Vec<String>> {
    use sqlx::Connection;
    let bodies: Vec<String> = match backend {
        Backend::Postgres(url) => {
            let mut c = sqlx::PgConnection::connect(url).await.unwrap();
            sqlx::query_scalar("SELECT body FROM records WHERE kind = 'note'")
                .fetch_all(&mut c)
                .await
                .unwrap()
        }
        Backend::Sqlite => {
            let opts = sqlx::sqlite::SqliteConnectOptions::new()
                .filename(dir.join("recruit.db"))
                .read_only(true);
            let mut c = sqlx::SqliteConnection::connect_with(&opts).await.unwrap();
            sqlx::query_scalar("SELECT body FROM records WHERE kind = 'note'")
                .fetch_all(&mut c)
                .await
                .unwrap()
        }
    };
    let mut out: std::collections::HashMap<String, Vec<String>> = Default::default();
    for b in bodies {
        let v: Value = serde_json::from_str(&b).unwrap();
        if v["is_private"] == true {
            continue;
        }
        out.entry(v["body_html"].as_str().unwrap_or_default().to_string())
            .or_default()
            .push(v["id"].as_str().unwrap().to_string());
    }
    out
}

/// After a restart: every write's outcome is what its client was told, once a client
/// that got no answer has retried with its `reference`; and memory (the API) equals the
/// store, note for note. Returns the writes as their clients know them now (retries
/// answered).
async fn check_told_against_held(
    server: &Server,
    backend: &Backend,
    sent: &[Sent],
    when: &str,
) -> Vec<Sent> {
    let http = server.client();
    let mut retried = std::collections::HashMap::new();
    for s in sent.iter().filter(|s| matches!(s.told, Told::Unknown)) {
        let res = http
            .post(format!("{}/v1/notes", server.api))
            .bearer_auth(WRITE_KEY)
            .json(&note_request(&s.body))
            .send()
            .await
            .unwrap();
        let status = res.status().as_u16();
        let v: Value = res.json().await.unwrap();
        assert!(
            status == 200 || status == 201,
            "{when}: retry of {:?} answered {status}: {v}",
            s.body
        );
        retried.insert(
            s.body.clone(),
            v["data"]["id"].as_str().unwrap().to_string(),
        );
    }
    let api = server.notes().await;
    let store = stored_notes(&server.data_dir, backend).await;
    for s in sent {
        let ids = api.get(&s.body).cloned().unwrap_or_default();
        match &s.told {
            Told::Created(id) => assert_eq!(
                ids,
                vec![id.clone()],
                "{when}: {:?} was acknowledged as {id}",
                s.body
            ),
            Told::Refused(status) => assert!(
                ids.is_empty(),
                "{when}: {:?} was refused ({status}) but is held",
                s.body
            ),
            Told::Unknown => assert_eq!(
                ids,
                vec![retried[&s.body].clone()],
                "{when}: {:?} after its retry",
                s.body
            ),
        }
    }
    let mut api_sorted: Vec<_> = api.into_iter().collect();
    let mut store_sorted: Vec<_> = store.into_iter().collect();
    api_sorted.sort();
    store_sorted.sort();
    assert_eq!(
        api_sorted, store_sorted,
        "{when}: the API's notes are the store's"
    );
    sent.iter()
        .map(|s| match &s.told {
            Told::Unknown => Sent {
                body: s.body.clone(),
                told: Told::Created(retried[&s.body].clone()),
            },
            _ => s.clone(),
        })
        .collect()
}

/// A data dir (and, for PostgreSQL, the backend's schema) holding the example snapshot,
/// imported offline.
pub(crate) async fn prepare(backend: &Backend) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    import(dir.path(), backend, "snap.json", &example()).await;
    dir
}

/// Imports `snapshot` offline into the store of `data_dir` (written there as `name`).
pub(crate) async fn import(
    data_dir: &Path,
    backend: &Backend,
    name: &str,
    snapshot: &serde_json::Value,
) {
    let file = data_dir.join(name);
    std::fs::write(&file, serde_json::to_vec(snapshot).unwrap()).unwrap();
    let out = command(data_dir, backend)
        .args(["import", file.to_str().unwrap()])
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
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
    let mut all_sent: Vec<Sent> = Vec::new();
    for trial in 0..CRASH_TRIALS {
        let server = Server::start(dir.path(), &b).await;
        let stop = Arc::new(AtomicBool::new(false));
        let acked = Arc::new(AtomicUsize::new(0));
        let writers = write_load(
            &server,
            8,
            stop.clone(),
            acked.clone(),
            &format!("t{trial}"),
        )
        .await;
        tokio::time::sleep(Duration::from_millis(delay_ms(trial))).await;
        // On a busy machine the first answers can take longer than the delay: the kill
        // comes once some write has been acknowledged, at a moment that still varies.
        let deadline = Instant::now() + Duration::from_secs(30);
        while acked.load(Ordering::SeqCst) == 0 {
            assert!(
                Instant::now() < deadline,
                "trial {trial}: no write acknowledged in 30 s"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        server.signal("-KILL");
        stop.store(true, Ordering::Relaxed);
        let mut sent_now = Vec::new();
        for w in writers {
            sent_now.extend(w.await.unwrap());
        }
        assert!(
            sent_now.iter().any(|s| matches!(s.told, Told::Created(_))),
            "trial {trial}: no write was acknowledged before the kill"
        );
        drop(server);
        let restarted = Server::start(dir.path(), &b).await;
        let settled =
            check_told_against_held(&restarted, &b, &sent_now, &format!("trial {trial}")).await;
        all_sent.extend(settled);
        check_told_against_held(&restarted, &b, &all_sent, &format!("after trial {trial}")).await;
        drop(restarted);
    }
}

async fn sigterm_finishes_in_flight_writes_and_exits_zero(b: Backend) {
    let dir = prepare(&b).await;
    let mut server = Server::start(dir.path(), &b).await;
    let stop = Arc::new(AtomicBool::new(false));
    let writers = write_load(
        &server,
        8,
        stop.clone(),
        Arc::new(AtomicUsize::new(0)),
        "term",
    )
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    server.signal("-TERM");
    let status = tokio::time::timeout(Duration::from_secs(30), server.child.wait())
        .await
        .expect("exits within 30 s")
        .unwrap();
    stop.store(true, Ordering::Relaxed);
    assert_eq!(status.code(), Some(0), "{status:?}");
    let mut sent = Vec::new();
    for w in writers {
        sent.extend(w.await.unwrap());
    }
    assert!(sent.iter().any(|s| matches!(s.told, Told::Created(_))));
    let restarted = Server::start(dir.path(), &b).await;
    check_told_against_held(&restarted, &b, &sent, "after SIGTERM").await;
    drop(restarted);
}

/// Ctrl-C is as graceful as SIGTERM: a write whose body is still uploading when SIGINT
/// arrives is read to its end, committed and answered, and the server exits 0.
async fn sigint_lets_a_slow_upload_finish(b: Backend) {
    slow_upload_across(b, "INT").await;
}

async fn sigterm_lets_a_slow_upload_finish(b: Backend) {
    slow_upload_across(b, "TERM").await;
}

async fn slow_upload_across(b: Backend, sig: &str) {
    use futures_util::StreamExt;
    let dir = prepare(&b).await;
    let log = dir.path().join("server.log");
    let mut server = Server::start_logging(dir.path(), &b, Some(&log)).await;
    let text = format!("uploaded across SIG{sig}");
    let body = serde_json::to_vec(&note_request(&text)).unwrap();
    let (first, rest) = body.split_at(body.len() / 2);
    let chunks = vec![first.to_vec(), rest.to_vec()];
    let slow =
        futures_util::stream::iter(chunks.into_iter().enumerate()).then(|(i, chunk)| async move {
            if i > 0 {
                tokio::time::sleep(Duration::from_millis(1500)).await;
            }
            Ok::<_, std::io::Error>(chunk)
        });
    let request = server
        .client()
        .post(format!("{}/v1/notes", server.api))
        .bearer_auth(WRITE_KEY)
        .header("content-type", "application/json")
        .header("content-length", body.len())
        .body(reqwest::Body::wrap_stream(slow))
        .send();
    let upload = tokio::spawn(request);
    // The headers and the first half are in; the rest comes 1.5 s later.
    tokio::time::sleep(Duration::from_millis(500)).await;
    server.signal(&format!("-{sig}"));
    let res = upload
        .await
        .unwrap()
        .expect("an answer, not a cut connection");
    assert_eq!(res.status(), 201);
    let created: Value = res.json().await.unwrap();
    assert!(created["data"]["id"].is_string(), "{created}");
    let status = tokio::time::timeout(Duration::from_secs(30), server.child.wait())
        .await
        .expect("exits within 30 s")
        .unwrap();
    assert_eq!(status.code(), Some(0), "{status:?}");
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        logged.contains(&format!("SIG{sig} received; starting graceful shutdown")),
        "{logged}"
    );
    assert!(!logged.contains("forced shutdown"), "{logged}");
    // It was committed, not just answered.
    let restarted = Server::start(dir.path(), &b).await;
    let notes = restarted.notes().await;
    assert_eq!(
        notes.get(&text).map(Vec::len),
        Some(1),
        "the note is stored once"
    );
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
    // PostgreSQL's notices on a normal start (the migrations table exists) are noise.
    assert!(!text.contains("_sqlx_migrations"), "{text}");
    let token = std::fs::read_to_string(dir.path().join("admin-token")).unwrap();
    assert!(
        !text.contains(token.trim()),
        "the admin token reached the log"
    );
}

/// A flood of requests without a valid key leaves a short log: the first refusals of
/// the address are logged, then one warning, then nothing more that minute; the metrics
/// still count every one.
async fn a_flood_of_bad_keys_is_logged_in_sample(b: Backend) {
    let dir = prepare(&b).await;
    let log = dir.path().join("server.log");
    let mut server = Server::start_logging(dir.path(), &b, Some(&log)).await;
    let http = server.client();
    for i in 0..40 {
        let res = http
            .get(format!("{}/v1/candidates", server.api))
            .bearer_auth(format!("rk_flood_{i:04}_0123456789abcdef"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 401);
    }
    let res = http
        .get(format!("{}/v1/candidates", server.api))
        .bearer_auth(READ_KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    server.signal("-TERM");
    server.child.wait().await.unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    let access: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["target"] == "recruitd::access")
        .collect();
    let refusals = access.iter().filter(|l| l["status"] == 401).count();
    assert_eq!(refusals, 10, "{text}");
    let notes = access
        .iter()
        .filter(|l| {
            l["message"]
                .as_str()
                .is_some_and(|m| m.contains("not logged"))
        })
        .count();
    assert_eq!(notes, 1, "{text}");
    assert!(access.iter().any(|l| l["status"] == 200));
}

store_test!(
    access_logs_are_structured_and_keep_secrets_out,
    a_flood_of_bad_keys_is_logged_in_sample,
    sigint_lets_a_slow_upload_finish,
    sigterm_lets_a_slow_upload_finish,
    sigkill_under_write_load_loses_no_acknowledged_write,
    sigterm_finishes_in_flight_writes_and_exits_zero
);
