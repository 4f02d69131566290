//! The admin interface: plain HTTP on loopback, bearer admin token.
//!
//! `GET /admin/v1/ready`, `POST /admin/v1/import`, `POST /admin/v1/keys`,
//! `DELETE /admin/v1/keys/{id}`, `GET /admin/v1/cluster`, `GET /metrics` — see
//! `docs/operations.md`. Same envelope as the API. [`console`]: the operator console, a
//! read-only page with its own login.

pub mod client;
pub mod console;

use crate::cluster::relay::{PassTo, PASSED_IMPORT, PASSED_KEYS};
use crate::http::context::request_context;
use crate::http::envelope::Envelope;
use crate::http::errors::{ApiError, ErrorKind};
use crate::http::forwarding::respond;
use crate::http::node;
use crate::http::request::RequestId;
use crate::http::{no_such_path, refuse_methods_but, AppServiceFactory};
use actix_web::{middleware, web, HttpRequest, HttpResponse};
use actors::keys::{parse_key_request, KeyService};
use actors::loader::Loader;
use actors::registry::{Registry, Slot};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use subtle::ConstantTimeEq;

pub use crate::http::body::MAX_IMPORT_BYTES;

pub struct AdminState {
    pub registry: Arc<Registry>,
    pub loader: Arc<Loader>,
    pub keys: KeyService,
    pub token: String,
    /// Set once the API listener is accepting.
    pub api_accepting: Arc<AtomicBool>,
    pub metrics: Arc<crate::telemetry::metrics::Metrics>,
    /// This node in the cluster (`GET /admin/v1/cluster`).
    pub membership: Arc<crate::cluster::Membership>,
    /// What the console reads besides: the store, the keys, the webhook endpoints.
    pub store: Arc<dyn actors::store::Store>,
    pub key_ring: Arc<actors::keys::KeyRing>,
    pub webhooks: Arc<crate::webhooks::hub::Hub>,
    pub console: console::Console,
}

/// The workspaces this node holds in memory, each with the position its state stands
/// at (those still loading hold nothing yet).
pub fn holdings(registry: &Registry) -> Vec<crate::cluster::Holding> {
    registry.positions()
}

/// `GET /admin/v1/cluster`: the nodes, and which of them hold and write each workspace.
async fn cluster(
    req: HttpRequest,
    state: web::Data<AdminState>,
    rid: RequestId,
) -> Result<HttpResponse, ApiError> {
    check_token(&req, &state)?;
    let view = state
        .membership
        .view(&holdings(&state.registry))
        .await
        .map_err(|e| ApiError::internal(anyhow::anyhow!(e).context("reading the cluster view")))?;
    Envelope::of(&view)?.respond(rid.as_str())
}

/// `GET /metrics`: Prometheus text exposition (admin token required, as everywhere here).
async fn metrics(req: HttpRequest, state: web::Data<AdminState>) -> Result<HttpResponse, ApiError> {
    check_token(&req, &state)?;
    Ok(HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(state.metrics.render(&state.registry, &state.loader)))
}

/// Whether a request carries the admin token as a bearer: what every admin path but the
/// console's reads requires (a console session is no substitute).
fn check_token(req: &HttpRequest, state: &AdminState) -> Result<(), ApiError> {
    // The same header rules as API keys; only the comparison differs (constant time
    // against the one token, where API keys are looked up by hash).
    match crate::http::auth::bearer(req) {
        Ok(t) if token_matches(t, &state.token) => Ok(()),
        _ => Err(ApiError::unauthorized("missing or wrong admin token")),
    }
}

/// Whether `presented` is the admin token, compared in constant time (its length
/// aside).
fn token_matches(presented: &str, token: &str) -> bool {
    bool::from(presented.as_bytes().ct_eq(token.as_bytes()))
}

async fn ready(
    req: HttpRequest,
    state: web::Data<AdminState>,
    rid: RequestId,
) -> Result<HttpResponse, ApiError> {
    check_token(&req, &state)?;
    if state.registry.is_ready()
        && state.membership.is_settled()
        && state.api_accepting.load(Ordering::Acquire)
    {
        Envelope::of(&serde_json::json!({"ready": true}))?.respond(rid.as_str())
    } else {
        Err(ApiError::new(
            ErrorKind::Unavailable { retry_after: 1 },
            not_ready_message(&state),
        ))
    }
}

/// Which workspaces are not loaded yet, and why: those whose load failed are named with
/// the error and the next attempt (the admin interface is the operator's own, so the
/// store's message is shown).
fn not_ready_message(state: &AdminState) -> String {
    let loading = state
        .registry
        .slots()
        .iter()
        .filter(|(_, s)| matches!(s, Slot::Loading))
        .count();
    if loading == 0 && !state.membership.is_settled() {
        return "not ready: taking the writer leases of the workspaces loaded".into();
    }
    if loading == 0 {
        return "not ready: the API listener is not accepting yet".into();
    }
    let failures = state.loader.failures();
    let mut msg = format!("not ready: {loading} workspace(s) still loading");
    if !failures.is_empty() {
        let now = std::time::Instant::now();
        let named: Vec<String> = failures
            .iter()
            .map(|(id, f)| {
                format!(
                    "{id} failed {} time(s), next attempt in {} ms: {}",
                    f.attempts,
                    f.retry_at.saturating_duration_since(now).as_millis(),
                    f.error
                )
            })
            .collect();
        msg.push_str(&format!("; {}", named.join("; ")));
    }
    msg
}

/// Body chunks in flight between the upload and the parser of an import: a few
/// megabytes at most, however large the snapshot.
const IMPORT_CHUNKS_IN_FLIGHT: usize = 64;

/// The body of an import, read by the parser (on a blocking thread) as the upload
/// streams in: the snapshot is never held whole, and the token is checked before any
/// of it is read.
struct UploadReader {
    chunks: tokio::sync::mpsc::Receiver<Result<web::Bytes, std::io::Error>>,
    current: web::Bytes,
}

impl std::io::Read for UploadReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.current.is_empty() {
            match self.chunks.blocking_recv() {
                Some(chunk) => self.current = chunk?,
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current.split_to(n));
        Ok(n)
    }
}

async fn import(
    req: HttpRequest,
    mut body: web::Payload,
    state: web::Data<AdminState>,
    rid: RequestId,
) -> Result<HttpResponse, ApiError> {
    use futures_util::StreamExt;
    check_token(&req, &state)?;
    // In a cluster the import may be the writer's to apply (found once it is parsed):
    // the body is kept to pass it on.
    let keep = state.membership.has_peers();
    let (chunks, received) = tokio::sync::mpsc::channel(IMPORT_CHUNKS_IN_FLIGHT);
    let parsing = web::block(move || {
        let reader = UploadReader {
            chunks: received,
            current: web::Bytes::new(),
        };
        actors::snapshot::parse_reader(std::io::BufReader::with_capacity(1 << 20, reader))
    });
    let upload = async move {
        let mut total = 0usize;
        let mut kept = web::BytesMut::new();
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(|e| std::io::Error::other(e.to_string()));
            total += chunk.as_ref().map_or(0, |c| c.len());
            if let (true, Ok(c)) = (keep, &chunk) {
                kept.extend_from_slice(c);
            }
            let chunk = if total > MAX_IMPORT_BYTES {
                Err(std::io::Error::other(format!(
                    "the snapshot is larger than {MAX_IMPORT_BYTES} bytes"
                )))
            } else {
                chunk
            };
            let last = chunk.is_err();
            // A parser that stopped (a bad snapshot) reads no further.
            if chunks.send(chunk).await.is_err() || last {
                break;
            }
        }
        kept.freeze()
    };
    let (parsed, kept) = futures_util::future::join(parsing, upload).await;
    let snap = node::parsed(parsed)?;
    if keep {
        let workspace = node::workspace_of(&snap).id;
        let passed = state
            .membership
            .pass(PassTo::Writer, workspace, PASSED_IMPORT, kept, rid.as_str())
            .await;
        if let Some(answer) = passed {
            return Ok(respond(answer?));
        }
    }
    let data = node::import_here(&state.registry, &state.membership, snap).await?;
    Envelope::of(&data)?.respond(rid.as_str())
}

async fn create_key(
    req: HttpRequest,
    body: web::Bytes,
    state: web::Data<AdminState>,
    rid: RequestId,
) -> Result<HttpResponse, ApiError> {
    check_token(&req, &state)?;
    let (workspace, new_key) = parse_key_request(&body).map_err(ApiError::bad_request)?;
    let handle = match state.registry.slot(workspace) {
        Some(Slot::Ready(h)) => h,
        Some(Slot::Loading) => return Err(ApiError::unavailable("the workspace is still loading")),
        // In a cluster, a workspace placed on other nodes: its writer makes the key.
        None => {
            let passed = state
                .membership
                .pass(PassTo::Writer, workspace, PASSED_KEYS, body, rid.as_str())
                .await;
            return match passed {
                Some(answer) => Ok(respond(answer?)),
                None => Err(ApiError::bad_request(format!("no workspace {workspace}"))),
            };
        }
    };
    let (key, secret) = state.keys.create_in(&handle.state(), &new_key).await?;
    // Other nodes also find a key they do not know in the store; telling them spares
    // the first request that read.
    state.membership.tell_keys_changed().await;
    Envelope::of(&serde_json::json!({"id": key.id, "secret": secret}))?.respond(rid.as_str())
}

async fn revoke_key(
    req: HttpRequest,
    path: web::Path<String>,
    state: web::Data<AdminState>,
    rid: RequestId,
) -> Result<HttpResponse, ApiError> {
    check_token(&req, &state)?;
    let id = path.into_inner();
    match state.keys.revoke(&id).await? {
        Some(_) => {
            // Refused by every node from the next request on: never an answer of success
            // while a node that did not hear of it may still accept the key.
            let unconfirmed = state.membership.tell_keys_changed().await;
            if !unconfirmed.is_empty() {
                return Err(ApiError::unavailable(format!(
                    "key {id} is revoked in the store, but node(s) {} did not confirm it \
                     (they read it at their next start); retry to tell them again",
                    unconfirmed.join(", ")
                )));
            }
            Envelope::of(&serde_json::json!({"id": id, "revoked": true}))?.respond(rid.as_str())
        }
        None => Err(ApiError::not_found(format!("no key with id {id:?}"))),
    }
}

pub fn app(state: web::Data<AdminState>) -> actix_web::App<impl AppServiceFactory> {
    actix_web::App::new()
        .app_data(state)
        // Key requests are small; an import's body is streamed (`import`), bounded by
        // `MAX_IMPORT_BYTES` as it is read.
        .app_data(web::PayloadConfig::new(64 << 10))
        .service(
            web::resource("/admin/v1/ready")
                .route(web::get().to(ready))
                .default_service(refuse_methods_but("GET")),
        )
        .service(
            web::resource("/admin/v1/cluster")
                .route(web::get().to(cluster))
                .default_service(refuse_methods_but("GET")),
        )
        .service(
            web::resource("/metrics")
                .route(web::get().to(metrics))
                .default_service(refuse_methods_but("GET")),
        )
        .service(
            web::resource("/admin/v1/import")
                .route(web::post().to(import))
                .default_service(refuse_methods_but("POST")),
        )
        .service(
            web::resource("/admin/v1/keys")
                .route(web::post().to(create_key))
                .default_service(refuse_methods_but("POST")),
        )
        .service(
            web::resource("/admin/v1/keys/{id}")
                .route(web::delete().to(revoke_key))
                .default_service(refuse_methods_but("DELETE")),
        )
        .configure(console::routes)
        .default_service(web::to(no_such_path))
        .wrap(middleware::from_fn(request_context))
}
