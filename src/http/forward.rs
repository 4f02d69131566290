//! In a cluster, a request for a workspace is answered by the node that writes it: a
//! node that does not passes the request there and returns the answer as it came
//! (`crate::cluster::routing`, `crate::cluster::forward`). So every request of a
//! workspace sees one copy of it, wherever it arrives: a write is read back at once
//! through any node (read-your-writes), and a key's budget is counted in one place.
//!
//! - The answering node adopts the request id the client's node gave the request, so
//!   the answer is the one this node would have given.
//! - A read whose writer cannot be reached (or that has none, after one look at the
//!   directory no older than [`LOOK_AGAIN`]) is answered from this node's own copy; a
//!   write waits for a writer (one is being replaced) up to [`WAIT_FOR_WRITER`], then
//!   is refused with 503, as is a write whose forwarding failed after it went out (its
//!   client retries with the same `reference`).
//! - Requests from another node are answered here, never passed on again.

use super::errors::{ApiError, ErrorKind};
use super::request::{bearer, OwnBody, RequestId};
use super::AppState;
use crate::cluster::forward::{self, Failure, Outgoing, NODE, NODE_SECRET, NOT_HERE, REQUEST_ID};
use crate::cluster::routing::{Route, KEYS_CHANGED, PASSED_IMPORT, PASSED_KEYS};
use actix_web::dev::{Payload, ServiceRequest};
use actix_web::http::{header, Method};
use actix_web::{web, HttpMessage, HttpResponse};
use actors::registry::Slot;
use actors::snapshot::{Snapshot, SnapshotError};
use futures_util::StreamExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Longest a write waits for its workspace to have a writer.
pub const WAIT_FOR_WRITER: Duration = Duration::from_secs(10);

/// How often a write waiting for a writer looks again.
const LOOK_AGAIN: Duration = Duration::from_millis(100);

/// Set on a request another node passed here (its node checked).
#[derive(Clone, Copy, Debug)]
pub struct FromNode;

/// Whether a request comes from another node of the cluster (its name and secret
/// checked against the store's directory), and the request id its client was given
/// there, when it carries one.
pub async fn from_node(req: &ServiceRequest) -> Option<Option<RequestId>> {
    let name = req.headers().get(NODE)?.to_str().ok()?;
    let secret = req.headers().get(NODE_SECRET)?.to_str().ok()?;
    let app = req.app_data::<web::Data<AppState>>()?;
    if !app.cluster.is_node(name, secret).await {
        tracing::warn!(node = name, "a request named a node with the wrong secret");
        return None;
    }
    let id = req
        .headers()
        .get(REQUEST_ID)
        .and_then(|id| id.to_str().ok())
        .filter(|id| {
            id.len() == 36
                && id.starts_with("req_")
                && id[4..].bytes().all(|b| b.is_ascii_hexdigit())
        });
    Some(id.map(RequestId::adopt))
}

/// Answers what one node asks of another (not the API): `Some` answer for such a
/// request from a node of the cluster, `None` for anything else.
/// - [`KEYS_CHANGED`]: reads the API keys afresh.
/// - [`PASSED_KEYS`], [`PASSED_IMPORT`]: an admin request another node's admin
///   interface was given for a workspace this node writes (or, for a key, holds),
///   answered as this node's admin interface would; refused untouched (421) when this
///   node no longer does.
pub async fn node_to_node(req: &mut ServiceRequest, rid: &RequestId) -> Option<HttpResponse> {
    if req.method() != Method::POST || !req.extensions().contains::<FromNode>() {
        return None;
    }
    let app = req.app_data::<web::Data<AppState>>()?.clone();
    let answer = match req.path() {
        KEYS_CHANGED => match app.keys.load(&*app.store).await {
            Ok(_) => return Some(HttpResponse::NoContent().finish()),
            Err(e) => Err(ApiError::from(e)),
        },
        PASSED_KEYS => match read_body_within(req, super::body::MAX_BODY_BYTES).await {
            Some(body) => passed_key(&app, &body).await,
            None => Err(ApiError::bad_request("the key request is too large")),
        },
        PASSED_IMPORT => match read_body_within(req, super::body::MAX_IMPORT_BYTES).await {
            Some(body) => passed_import(&app, body).await,
            None => Err(ApiError::bad_request("the snapshot is too large")),
        },
        _ => return None,
    };
    let answer = answer.and_then(|a| match a {
        Some(data) => Ok(super::envelope::Envelope::of(&data)?.respond(rid.as_str())?),
        None => Ok(not_here()),
    });
    Some(answer.unwrap_or_else(|e| {
        // Logged as this node's admin interface would.
        if matches!(e.kind, ErrorKind::Internal) {
            tracing::error!(request_id = rid.as_str(), error = ?e.cause, "a passed admin request failed");
        }
        HttpResponse::from_error(e)
    }))
}

/// The answer to a request this node is no longer the place for (see [`NOT_HERE`]).
fn not_here() -> HttpResponse {
    HttpResponse::MisdirectedRequest()
        .insert_header((NOT_HERE, "1"))
        .finish()
}

/// A key made here for another node's admin interface: its `data`, or `None` when
/// this node does not hold the workspace.
async fn passed_key(app: &AppState, body: &[u8]) -> Result<Option<serde_json::Value>, ApiError> {
    let (workspace, new_key) =
        actors::keys::parse_key_request(body).map_err(ApiError::bad_request)?;
    let Some(Slot::Ready(handle)) = app.registry.slot(workspace) else {
        return Ok(None);
    };
    let (key, secret) = actors::keys::KeyService::new(app.store.clone(), app.keys.clone())
        .create_in(&handle.state(), &new_key)
        .await?;
    app.cluster.tell_keys_changed().await;
    Ok(Some(serde_json::json!({"id": key.id, "secret": secret})))
}

/// An import applied here for another node's admin interface: its `data`, or `None`
/// when this node does not write the workspace.
async fn passed_import(
    app: &AppState,
    body: web::Bytes,
) -> Result<Option<serde_json::Value>, ApiError> {
    let snap = parsed(web::block(move || actors::snapshot::parse_slice(&body)).await)?;
    if app.cluster.route(workspace_of(&snap).id) != Route::Here {
        return Ok(None);
    }
    import_here(&app.registry, snap).await.map(Some)
}

/// A snapshot parsed on a blocking thread, or the refusal of what did not parse.
pub(crate) fn parsed(
    outcome: Result<Result<Snapshot, SnapshotError>, actix_web::error::BlockingError>,
) -> Result<Snapshot, ApiError> {
    outcome
        .map_err(ApiError::internal)?
        .map_err(|e| ApiError::bad_request(e.to_string()))
}

/// The workspace a parsed snapshot is of.
pub(crate) fn workspace_of(snap: &Snapshot) -> &actors::model::Workspace {
    snap.workspace
        .as_ref()
        .expect("parser requires the workspace")
}

/// Applies a snapshot through its workspace's actor (made when the workspace is new to
/// this node): the answer's `data`, as `POST /admin/v1/import` gives it.
pub(crate) async fn import_here(
    registry: &actors::registry::Registry,
    snap: Snapshot,
) -> Result<serde_json::Value, ApiError> {
    let handle = registry
        .handle_or_create(workspace_of(&snap))
        .ok_or_else(|| ApiError::unavailable("the workspace is still loading"))?;
    let report = handle.addr.send(actors::actor::Import(snap)).await??;
    Ok(report.to_json())
}

/// Answers `req` at its workspace's writer when that is another node: `Some` answer (or
/// refusal), or `None` to answer it here.
pub async fn to_writer(
    req: &mut ServiceRequest,
    rid: &RequestId,
) -> Option<Result<HttpResponse, ApiError>> {
    if !req.path().starts_with("/v1/") {
        return None;
    }
    let app = req.app_data::<web::Data<AppState>>()?.clone();
    // A node alone answers everything itself: nothing more to read or hash here (its
    // lookups pay nothing for the cluster).
    if !app.cluster.has_peers() {
        return None;
    }
    let from_node = req.extensions().contains::<FromNode>();
    let known = app.keys.by_secret(bearer(req.request()).ok()?);
    let key = match known {
        Some(key) => key,
        // A key made on another node since this one loaded the keys (certainly so when
        // another node passed the request on: it knew the key).
        None => {
            let token = bearer(req.request()).ok()?.to_string();
            reload_keys(&app, from_node).await;
            app.keys.by_secret(&token)?
        }
    };
    let workspace = key.workspace_id;
    let reads = matches!(*req.method(), Method::GET | Method::HEAD);
    if from_node {
        // Passed here as to the writer (a write) or a holder (a read) by a node whose
        // directory is a moment behind: refused untouched, to be passed on afresh.
        let misdirected = if reads {
            app.registry.slot(workspace).is_none()
        } else {
            app.cluster.route(workspace) != Route::Here
        };
        return misdirected.then(|| Ok(not_here()));
    }
    let deadline = Instant::now() + WAIT_FOR_WRITER;
    let mut body: Option<web::Bytes> = None;
    let mut looked_again = false;
    let mut tried_holder = false;
    let mut writer_down = false;
    // This node writes the workspace: nothing more to check below.
    let mut here = false;
    // Nodes that did not answer this request.
    let mut down: Vec<String> = Vec::new();
    loop {
        let route = match app.cluster.route(workspace) {
            // A read whose writer did not answer: as if there were none.
            Route::To(_) if reads && writer_down => Route::Nobody,
            route => route,
        };
        let peer = match route {
            Route::Here => {
                here = true;
                break;
            }
            Route::To(peer) => peer,
            // The directory may be behind (this node woke from a stop past its lease,
            // and the next round has yet to run): once more with one read lately.
            Route::Nobody if reads && !looked_again => {
                looked_again = true;
                app.cluster.read_directory_if_older(LOOK_AGAIN).await;
                continue;
            }
            // No writer now: a read is answered from this node's copy, or by a node that
            // holds one when this node holds none (the workspace is placed elsewhere).
            Route::Nobody if reads => match app.cluster.holder_of(workspace, &down) {
                Some(holder) if app.registry.slot(workspace).is_none() && !tried_holder => {
                    tried_holder = true;
                    holder
                }
                _ => break,
            },
            Route::Nobody => {
                if Instant::now() >= deadline {
                    break;
                }
                tokio::time::sleep(LOOK_AGAIN).await;
                app.cluster.read_directory().await;
                continue;
            }
        };
        if body.is_none() {
            match read_body(req).await {
                Some(b) => body = Some(b),
                // Refused here as it would be there.
                None => return None,
            }
        }
        let outgoing = outgoing(req, rid, &app, body.clone().unwrap_or_default());
        let started = Instant::now();
        let sent = match forward::send(&peer, outgoing).await {
            Ok(answer)
                if answer.status == 421 && answer.headers.iter().any(|(n, _)| n == NOT_HERE) =>
            {
                Err(Failure::Unreachable(
                    peer.name.clone(),
                    "it no longer writes or holds the workspace".into(),
                ))
            }
            sent => sent,
        };
        match sent {
            Ok(answer) => {
                app.metrics
                    .forwarded(&peer.name, "answered", started.elapsed());
                return Some(Ok(respond(answer)));
            }
            Err(failure) => {
                let unsent = matches!(failure, Failure::Unreachable(..));
                let outcome = if unsent { "unreachable" } else { "unknown" };
                app.metrics
                    .forwarded(&peer.name, outcome, started.elapsed());
                tracing::warn!(request_id = rid.as_str(), %workspace, error = %failure, "forwarding to the workspace's writer failed");
                down.push(peer.name.clone());
                if reads {
                    if writer_down || app.registry.slot(workspace).is_some() {
                        break;
                    }
                    // No copy here: one more try, at a node that holds one.
                    writer_down = true;
                    looked_again = true;
                    continue;
                }
                if !unsent || Instant::now() >= deadline {
                    let mut e = ApiError::new(
                        ErrorKind::Unavailable { retry_after: 1 },
                        "the workspace's writer did not answer; retry after the indicated \
                         delay (with the same reference, a write is applied at most once)",
                    );
                    e.cause = Some(failure.into());
                    return Some(Err(e));
                }
                // The writer is gone: wait for the next one.
                tokio::time::sleep(LOOK_AGAIN).await;
                app.cluster.read_directory().await;
            }
        }
    }
    // Held by other nodes only, none of which answered: not this node's to refuse as
    // unknown.
    if !here
        && app.registry.slot(workspace).is_none()
        && app.cluster.holder_of(workspace, &[]).is_some()
    {
        return Some(Err(ApiError::new(
            ErrorKind::Unavailable { retry_after: 1 },
            "the nodes that hold this workspace did not answer; retry after the indicated delay",
        )));
    }
    // Answered here: the body read (if any) goes back to the request.
    if let Some(b) = body {
        req.set_payload(Payload::from(b));
    }
    None
}

/// The request's body, whole (bodies the API takes are small: `body::MAX_BODY_BYTES`).
/// `None` for a body larger than that, or one that breaks off: the request then has its
/// body back as it came (what was read, then the rest), to be refused here.
async fn read_body(req: &mut ServiceRequest) -> Option<web::Bytes> {
    read_body_within(req, super::body::MAX_BODY_BYTES).await
}

/// The request's body, whole, when it is at most `limit` bytes (else `None`, the body
/// left to be refused as it would be).
async fn read_body_within(req: &mut ServiceRequest, limit: usize) -> Option<web::Bytes> {
    let mut payload = req.take_payload();
    let mut bytes = web::BytesMut::new();
    while let Some(chunk) = payload.next().await {
        let failed = match chunk {
            Ok(chunk) if bytes.len() + chunk.len() <= limit => {
                bytes.extend_from_slice(&chunk);
                continue;
            }
            Ok(chunk) => {
                bytes.extend_from_slice(&chunk);
                Ok(bytes.freeze())
            }
            Err(e) => Err(e),
        };
        let head = futures_util::stream::iter([failed]);
        let rest: actix_http::BoxedPayloadStream = Box::pin(head.chain(payload));
        req.set_payload(Payload::from(rest));
        return None;
    }
    Some(bytes.freeze())
}

/// Headers of one connection, not of the request or answer: never passed on.
fn hop_by_hop(name: &str) -> bool {
    matches!(
        name,
        "connection"
            | "keep-alive"
            | "proxy-connection"
            | "transfer-encoding"
            | "te"
            | "trailer"
            | "upgrade"
            | "host"
            | "content-length"
            | "date"
    ) || name.starts_with("x-recruitd-")
}

fn outgoing(req: &ServiceRequest, rid: &RequestId, app: &AppState, body: web::Bytes) -> Outgoing {
    let mut headers: Vec<(String, Vec<u8>)> = req
        .headers()
        .iter()
        .filter(|(n, _)| !hop_by_hop(n.as_str()))
        .map(|(n, v)| (n.as_str().to_string(), v.as_bytes().to_vec()))
        .collect();
    if let Some((node, secret)) = app.cluster.credentials() {
        for (name, value) in [
            (NODE, node),
            (NODE_SECRET, secret),
            (REQUEST_ID, rid.as_str()),
        ] {
            headers.push((name.to_string(), value.as_bytes().to_vec()));
        }
    }
    Outgoing {
        method: req.method().as_str().to_string(),
        target: req
            .uri()
            .path_and_query()
            .map_or_else(|| req.path().to_string(), |pq| pq.as_str().to_string()),
        headers,
        body,
    }
}

/// The writer's answer, as it came (its body already says everything, errors included).
pub(crate) fn respond(answer: forward::Answer) -> HttpResponse {
    let status = actix_web::http::StatusCode::from_u16(answer.status)
        .unwrap_or(actix_web::http::StatusCode::BAD_GATEWAY);
    let mut res = HttpResponse::build(status);
    for (name, value) in answer.headers.iter().filter(|(n, _)| !hop_by_hop(n)) {
        if let (Ok(n), Ok(v)) = (
            header::HeaderName::try_from(name.as_str()),
            header::HeaderValue::from_bytes(value),
        ) {
            res.append_header((n, v));
        }
    }
    let mut res = res.body(answer.body);
    res.extensions_mut().insert(OwnBody);
    res
}

/// Reads the API keys afresh from the store: at once for a key another node knew
/// (`certain`), otherwise at most once a second (a request with an unknown key may
/// name a key made on another node, but a flood of bad keys must not become a flood of
/// reads).
async fn reload_keys(app: &AppState, certain: bool) {
    static LAST: AtomicU64 = AtomicU64::new(0);
    let now = actors::store::now_ms() as u64;
    let last = LAST.load(Ordering::Relaxed);
    let throttled = now.saturating_sub(last) < 1000
        || LAST
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_err();
    if throttled && !certain {
        return;
    }
    if let Err(e) = app.keys.load(&*app.store).await {
        tracing::warn!(error = %e, "reading the API keys afresh");
    }
}
