//! `spawn_app()`: the real application on random ports, with a fresh store per test.

use recruitd::server::{Application, Settings};
use reqwest::{Client, Method, RequestBuilder, Response, StatusCode};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Once;
use tempfile::TempDir;

/// Which store a test runs against.
#[derive(Clone, Debug)]
pub enum Backend {
    Sqlite,
    Postgres(String),
}

/// Env var naming a PostgreSQL server for the PostgreSQL variants of the store tests.
pub const PG_ENV: &str = "RECRUITD_TEST_DATABASE_URL";

impl Backend {
    /// A fresh PostgreSQL schema, or `None` (with a note) when no server is configured.
    pub async fn postgres() -> Option<Backend> {
        let base = std::env::var(PG_ENV).ok().filter(|s| !s.is_empty())?;
        let url = recruitd::store::testing::fresh_postgres_url(&base)
            .await
            .expect("creating a fresh PostgreSQL schema");
        Some(Backend::Postgres(url))
    }

    /// Closes, server side, the PostgreSQL connections of this backend's schema once its
    /// test is over, then drops the schema. A finished test's application is never torn
    /// down (its threads outlive the test's runtime), so its idle pool would otherwise
    /// hold connections until the whole run ends, and a long suite would exhaust
    /// `max_connections`; and a run would leave a schema per test behind (a later run's
    /// sweep is the fallback, for a process killed mid-test).
    pub async fn release(&self) {
        let Backend::Postgres(url) = self else {
            return;
        };
        let (Some(schema), Ok(base)) = (
            recruitd::store::testing::schema_of(url),
            std::env::var(PG_ENV),
        ) else {
            return;
        };
        use sqlx::Connection;
        let Ok(mut conn) = sqlx::PgConnection::connect(&base).await else {
            return;
        };
        let _ = sqlx::query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE application_name = $1 AND pid <> pg_backend_pid()",
        )
        .bind(schema)
        .execute(&mut conn)
        .await;
        // A pool that reconnects meanwhile could hold a table lock a moment: wait for it
        // a little, and leave the schema to the sweep rather than hang.
        let _ = sqlx::query("SET lock_timeout = '5s'")
            .execute(&mut conn)
            .await;
        let _ = sqlx::query(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
            .execute(&mut conn)
            .await;
        let _ = conn.close().await;
    }
}

fn init_logs() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if std::env::var("TEST_LOG").is_ok() {
            tracing_subscriber::fmt()
                .with_env_filter(tracing_subscriber::EnvFilter::new(
                    std::env::var("TEST_LOG").unwrap(),
                ))
                .with_test_writer()
                .init();
        }
    });
}

pub struct TestApp {
    pub base: String,
    pub admin_base: String,
    pub admin_token: String,
    pub client: Client,
    pub data_dir: TempDir,
    pub registry: std::sync::Arc<actors::registry::Registry>,
    pub store: std::sync::Arc<dyn actors::store::Store>,
    pub backend: Backend,
    /// The server's certificate (PEM), for clients of its own.
    pub tls_cert_pem: Vec<u8>,
    handles: (actix_web::dev::ServerHandle, actix_web::dev::ServerHandle),
    pub membership: std::sync::Arc<recruitd::cluster::Membership>,
}

pub const READ_KEY: &str = "rk_example_read_0123456789abcdef";
pub const WRITE_KEY: &str = "rk_example_write_0123456789abcdef";
/// The example snapshot's company.
/// The nine entities' names, in the API's order.
pub const ENTITIES: [&str; 9] = [
    "candidates",
    "applications",
    "contacts",
    "companies",
    "jobs",
    "notes",
    "tasks",
    "attachments",
    "users",
];

pub const FABRIKAM: &str = "71ff7925-38fa-57bd-b38e-c2e5e183f050";

/// The small example snapshot of `docs/snapshot-format.md`.
pub fn example() -> Value {
    serde_json::from_str(include_str!("../fixtures/snapshot-small.json")).unwrap()
}

pub async fn spawn_app(backend: Backend) -> TestApp {
    spawn_app_in(backend, tempfile::tempdir().unwrap()).await
}

pub async fn spawn_app_in(backend: Backend, data_dir: TempDir) -> TestApp {
    spawn_app_with(backend, data_dir, |_| {}).await
}

/// [`spawn_app_in`] with settings adjusted by `adjust` (a manual clock, a public URL).
pub async fn spawn_app_with(
    backend: Backend,
    data_dir: TempDir,
    adjust: impl FnOnce(&mut Settings),
) -> TestApp {
    let t = start_app(backend, data_dir, adjust).await;
    t.wait_ready().await;
    t
}

/// [`spawn_app_in`] without waiting for the workspaces to load.
pub async fn spawn_app_loading(backend: Backend, data_dir: TempDir) -> TestApp {
    start_app(backend, data_dir, |_| {}).await
}

async fn start_app(
    backend: Backend,
    data_dir: TempDir,
    adjust: impl FnOnce(&mut Settings),
) -> TestApp {
    init_logs();
    let mut s = Settings::new(PathBuf::from(data_dir.path()));
    s.listen = "127.0.0.1:0".parse().unwrap();
    s.admin_listen = "127.0.0.1:0".parse().unwrap();
    s.workers = Some(1);
    // Tests that tamper with the store behind a stopped server expect the next start to
    // read the store; the checkpoint tests turn them on.
    s.checkpoint_interval = None;
    s.database_url = match &backend {
        Backend::Sqlite => None,
        Backend::Postgres(url) => Some(url.clone()),
    };
    adjust(&mut s);
    let app = Application::build(s).await.expect("application starts");
    let base = format!("https://localhost:{}", app.api_addr().port());
    let admin_base = format!("http://{}", app.admin_addr());
    let cert = reqwest::Certificate::from_pem(&app.tls_cert_pem).expect("our certificate");
    // Redirects are not followed: tests look at them (downloads) and follow by hand.
    let client = Client::builder()
        .use_rustls_tls()
        .add_root_certificate(cert)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let handles = app.handles();
    let admin_token = app.admin_token.clone();
    let registry = app.registry.clone();
    let store = app.store();
    let membership = app.membership();
    let tls_cert_pem = app.tls_cert_pem.clone();
    actix_web::rt::spawn(app.run_until_stopped());
    TestApp {
        base,
        admin_base,
        admin_token,
        client,
        data_dir,
        registry,
        store,
        backend,
        tls_cert_pem,
        handles,
        membership,
    }
}

impl TestApp {
    pub async fn wait_ready(&self) {
        for _ in 0..500 {
            // Loaded, and (on PostgreSQL) the writer of what it loaded.
            if self.registry.is_ready() && self.membership.is_settled() {
                return;
            }
            actix_web::rt::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        panic!("application did not become ready");
    }

    pub async fn stop(&self) {
        self.handles.0.stop(true).await;
        self.handles.1.stop(true).await;
        self.await_left().await;
    }

    /// Waits (a little) until the stopped application has left the cluster, so that
    /// the next one on the same store starts alone.
    async fn await_left(&self) {
        for _ in 0..500 {
            if self.membership.has_left() {
                return;
            }
            actix_web::rt::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }

    /// Stops at once, without waiting for idle keep-alive connections to close (a
    /// graceful stop waits for the test client's pooled connection to time out).
    pub async fn stop_now(&self) {
        self.handles.0.stop(false).await;
        self.handles.1.stop(false).await;
        self.await_left().await;
    }

    /// The admin interface's `GET /metrics` text (checked: 200, plain text).
    pub async fn metrics_text(&self) -> String {
        let res = self
            .client
            .get(format!("{}/metrics", self.admin_base))
            .bearer_auth(&self.admin_token)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        assert!(res.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain"));
        res.text().await.unwrap()
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    pub fn req(&self, method: Method, path: &str, key: Option<&str>) -> RequestBuilder {
        let r = self.client.request(method, self.url(path));
        match key {
            Some(k) => r.bearer_auth(k),
            None => r,
        }
    }

    /// `POST /v1/notes` of a note on the example company with the write key; returns the
    /// status, the `Retry-After` header and the JSON body.
    pub async fn post_company_note(&self, text: &str) -> (u16, Option<String>, Value) {
        self.post_company_note_with(text, None).await
    }

    /// [`post_company_note`](Self::post_company_note) with an optional `reference`.
    pub async fn post_company_note_with(
        &self,
        text: &str,
        reference: Option<&str>,
    ) -> (u16, Option<String>, Value) {
        let mut body =
            serde_json::json!({"parent_type": "company", "parent_id": FABRIKAM, "body_html": text});
        if let Some(r) = reference {
            body["reference"] = r.into();
        }
        let res = self
            .req(Method::POST, "/v1/notes", Some(WRITE_KEY))
            .json(&body)
            .send()
            .await
            .unwrap();
        let retry = res
            .headers()
            .get("retry-after")
            .map(|v| v.to_str().unwrap().to_string());
        let (s, body) = json_of(res).await;
        (s.as_u16(), retry, body)
    }

    /// `lookups` phone searches that find someone, then a GET of a malformed id (a
    /// 404): traffic of two routes for the metrics to count.
    pub async fn lookups_and_a_miss(&self, lookups: usize) {
        for _ in 0..lookups {
            let (s, _) = self
                .get("/v1/search/phone?number=07700900123", READ_KEY)
                .await;
            assert_eq!(s, 200);
        }
        let (s, _) = self.get("/v1/candidates/not-an-id", READ_KEY).await;
        assert_eq!(s, 404);
    }

    /// GET with a key; returns status and JSON body.
    pub async fn get(&self, path: &str, key: &str) -> (StatusCode, Value) {
        let res = self.req(Method::GET, path, Some(key)).send().await.unwrap();
        json_of(res).await
    }

    pub async fn admin(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> (StatusCode, Value) {
        let mut r = self
            .client
            .request(method, format!("{}{}", self.admin_base, path))
            .bearer_auth(&self.admin_token);
        if let Some(b) = body {
            r = r.json(b);
        }
        json_of(r.send().await.unwrap()).await
    }

    /// A new key of the example workspace with `scopes` and a budget no test exhausts,
    /// made through the admin interface; returns its secret.
    pub async fn key_with_scopes(&self, scopes: &[&str]) -> String {
        let (s, body) = self
            .admin(
                Method::POST,
                "/admin/v1/keys",
                Some(&serde_json::json!({
                    "workspace_id": "b2574901-bbf6-5245-9d3f-3dd074396143",
                    "created_by_email": "olivia@northwind.example",
                    "scopes": scopes,
                    "rate_limit_per_minute": 1_000_000
                })),
            )
            .await;
        assert_eq!(s, StatusCode::OK, "{body}");
        body["data"]["secret"].as_str().unwrap().to_string()
    }

    pub async fn import(&self, snapshot: &Value) -> (StatusCode, Value) {
        self.admin(Method::POST, "/admin/v1/import", Some(snapshot))
            .await
    }

    /// Imports and insists on success.
    pub async fn import_ok(&self, snapshot: &Value) -> Value {
        let (s, body) = self.import(snapshot).await;
        assert_eq!(s, StatusCode::OK, "import failed: {body}");
        body
    }

    /// Follows `next_cursor` to the end; returns every record and the number of pages.
    pub async fn paginate(&self, entity: &str, query: &str, key: &str) -> (Vec<Value>, usize) {
        let mut out = Vec::new();
        let mut cursor: Option<String> = None;
        let mut pages = 0;
        loop {
            let mut path = format!("/v1/{entity}?{query}");
            if let Some(c) = &cursor {
                path.push_str(&format!("&cursor={c}"));
            }
            let (s, body) = self.get(&path, key).await;
            assert_eq!(s, StatusCode::OK, "{path}: {body}");
            pages += 1;
            if cursor.is_some() {
                assert!(
                    body.get("total_count").is_none(),
                    "total_count only on the first page"
                );
            }
            out.extend(body["data"].as_array().unwrap().iter().cloned());
            match body["next_cursor"].as_str() {
                Some(c) => cursor = Some(c.to_string()),
                None => break,
            }
            assert!(pages < 100_000, "runaway pagination");
        }
        (out, pages)
    }
}

pub async fn json_of(res: Response) -> (StatusCode, Value) {
    let status = res.status();
    let ct = res
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string());
    let text = res.text().await.unwrap();
    if text.is_empty() {
        return (status, Value::Null);
    }
    assert_eq!(ct.as_deref(), Some("application/json"), "body: {text}");
    (
        status,
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}")),
    )
}

/// Asserts the exact error envelope and returns the message.
pub fn assert_error(status: StatusCode, body: &Value, want_status: u16, want_code: &str) -> String {
    assert_eq!(status.as_u16(), want_status, "body: {body}");
    let obj = body.as_object().expect("error body is an object");
    assert_eq!(
        obj.len(),
        2,
        "envelope has exactly error and request_id: {body}"
    );
    let err = body["error"].as_object().expect("error object");
    assert_eq!(err.len(), 2, "error has exactly code and message: {body}");
    assert_eq!(body["error"]["code"], want_code, "body: {body}");
    assert!(body["request_id"].as_str().is_some_and(|r| !r.is_empty()));
    body["error"]["message"].as_str().unwrap().to_string()
}

/// Runs one statement on the backend's store behind the server's back.
pub async fn store_sql(b: &Backend, dir: &std::path::Path, sql: &str) -> Option<String> {
    store_file_sql(b, dir, "recruit.db", sql).await
}

/// [`store_sql`], on SQLite in the data dir's file `file` (the webhook rows have one of
/// their own, `webhooks.db`).
pub async fn store_file_sql(
    b: &Backend,
    dir: &std::path::Path,
    file: &str,
    sql: &str,
) -> Option<String> {
    use sqlx::Connection;
    match b {
        Backend::Postgres(url) => {
            let mut c = sqlx::PgConnection::connect(url).await.unwrap();
            sqlx::query_scalar(sql)
                .fetch_optional(&mut c)
                .await
                .unwrap()
        }
        Backend::Sqlite => {
            let opts = sqlx::sqlite::SqliteConnectOptions::new().filename(dir.join(file));
            let mut c = sqlx::SqliteConnection::connect_with(&opts).await.unwrap();
            sqlx::query_scalar(sql)
                .fetch_optional(&mut c)
                .await
                .unwrap()
        }
    }
}

/// The API's shared state over an in-memory store holding the example snapshot, for
/// tests that drive the handlers without a server; its workspace is loaded when `load`,
/// else left "loading".
pub async fn memory_app_state(
    load: bool,
) -> (
    actix_web::web::Data<recruitd::http::state::AppState>,
    std::sync::Arc<actors::registry::Registry>,
) {
    use actors::store::{MemoryBlobs, MemoryStore, Store};
    use std::sync::Arc;
    let store = MemoryStore::new();
    let snap = actors::snapshot::parse_slice(&serde_json::to_vec(&example()).unwrap()).unwrap();
    let plan = actors::snapshot::plan_import(None, snap, &actors::snapshot::NoKeys, false).unwrap();
    store
        .commit(plan.workspace.id, &plan.change_set())
        .await
        .unwrap();
    let keys = Arc::new(actors::keys::KeyRing::default());
    keys.load(&*store).await.unwrap();
    let blobs: Arc<dyn actors::store::BlobStore> = Arc::new(MemoryBlobs::default());
    let env = Arc::new(actors::env::ActorEnv::new(
        store.clone(),
        blobs.clone(),
        keys.clone(),
    ));
    let registry = actors::registry::Registry::new(env, actix::Arbiter::current());
    let loader = actors::loader::Loader::new(store.clone(), registry.clone());
    let list = loader.discover().await.unwrap();
    if load {
        loader.load_all(list).await;
    }
    let policy = recruitd::webhooks::address::Policy::default();
    let engine = recruitd::webhooks::engine::Engine {
        store: store.clone(),
        cache: Arc::new(actors::changes::feed::PartCache::default()),
        pages: Default::default(),
        sender: recruitd::webhooks::send::Sender::new(policy),
        schedule: recruitd::webhooks::retry::Schedule::CONTRACT,
        token: Arc::new(|_, p| format!("{}", p.position)),
        now_ms: Arc::new(actors::store::now_ms),
        writes: Arc::new(|_| true),
        observer: Arc::new(recruitd::webhooks::engine::Unobserved),
        api_answered: Arc::new(|| 0),
    };
    // An in-memory store keeps no endpoints: the webhooks API answers 500 here.
    let webhooks = recruitd::webhooks::hub::Hub::new(
        Arc::new(engine),
        registry.clone(),
        None,
        Arc::new(recruitd::webhooks::hub::Alone),
        tokio::runtime::Handle::current(),
    );
    let state = actix_web::web::Data::new(recruitd::http::state::AppState {
        registry: registry.clone(),
        keys,
        blobs,
        store,
        webhooks,
        webhook_policy: policy,
        feed: Default::default(),
        cursor_key: actors::query::CursorKey::new([1; 32]),
        downloads: recruitd::http::state::Downloads {
            signer: recruitd::http::signed_urls::UrlSigner::new(
                std::sync::Arc::new(actors::signing::Signer::from_secret(&[2; 32])),
                "https://localhost",
            ),
            clock: recruitd::clock::Clock::System,
        },
        limiter: std::sync::Arc::new(recruitd::http::ratelimit::RateLimiter::new(
            600,
            recruitd::clock::Clock::System,
        )),
        peer_failures: recruitd::http::ratelimit::PeerFailures::new(
            recruitd::http::ratelimit::DEFAULT_FAILED_AUTH_PER_MINUTE,
            recruitd::clock::Clock::System,
        ),
        metrics: std::sync::Arc::new(recruitd::telemetry::metrics::Metrics::new()),
        cluster: recruitd::cluster::Membership::alone(
            recruitd::cluster::Identity::new(
                Some("test".into()),
                None,
                1,
                "127.0.0.1:8443".parse().unwrap(),
            )
            .unwrap(),
            std::sync::Arc::new(actors::signing::Signer::alone(&[2; 32])),
        )
        .await,
    });
    (state, registry)
}
