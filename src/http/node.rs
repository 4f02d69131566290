//! What one node of the cluster asks of another, outside the API: requests that carry a
//! node's name and this start's secret ([`from_node`]), checked against the directory
//! as last read (a name it does not know costs nothing: the request is a client's), and
//! the node-to-node paths:
//! - [`KEYS_CHANGED`]: reads the API keys afresh;
//! - [`PASSED_KEYS`], [`PASSED_IMPORT`]: an admin request another node's admin interface
//!   was given for a workspace this node writes (or, for a key, holds), answered as this
//!   node's admin interface would; refused untouched (421) when this node no longer
//!   does;
//! - [`TAKE_NOW`]: another node gave leases up for this one to take: a round runs now;
//! - [`WEBHOOKS_KEY`]: the webhook data key with a fingerprint, when this node holds it
//!   (a new writer of a workspace opens its endpoints' secrets with it);
//! - [`CONSOLE_COPY`]: what this node's copy of a workspace says of it (`super::report`),
//!   for another node's operator console; refused untouched (421) without a copy.
//!
//! Imports applied here, for this node's admin interface or another's, go through
//! [`import_here`].

use super::errors::{ApiError, ErrorKind};
use super::request::RequestId;
use super::state::AppState;
use crate::cluster::forward::{NODE, NODE_SECRET, NOT_HERE, REQUEST_ID};
use crate::cluster::relay::{
    CONSOLE_COPY, KEYS_CHANGED, PASSED_IMPORT, PASSED_KEYS, TAKE_NOW, WEBHOOKS_KEY,
};
use actix_web::dev::{Payload, ServiceRequest};
use actix_web::http::Method;
use actix_web::{web, HttpMessage, HttpResponse};
use actors::registry::Slot;
use actors::snapshot::{Snapshot, SnapshotError};
use futures_util::StreamExt;

/// Set on a request another node passed here (its node checked).
#[derive(Clone, Copy, Debug)]
pub struct FromNode;

/// Whether a request comes from another node of the cluster (its name and secret
/// checked against the directory), and the request id its client was given there, when
/// it carries one. Headers that name no live node, or carry the wrong secret, are as if
/// absent.
pub fn from_node(req: &ServiceRequest) -> Option<Option<RequestId>> {
    let name = req.headers().get(NODE)?.to_str().ok()?;
    let secret = req.headers().get(NODE_SECRET)?.to_str().ok()?;
    let app = req.app_data::<web::Data<AppState>>()?;
    if !app.cluster.is_node(name, secret) {
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

/// Answers a node-to-node request (see the module's docs): `Some` answer for one from a
/// node of the cluster, `None` for anything else.
pub async fn answer(req: &mut ServiceRequest, rid: &RequestId) -> Option<HttpResponse> {
    if req.method() != Method::POST || !req.extensions().contains::<FromNode>() {
        return None;
    }
    let app = req.app_data::<web::Data<AppState>>()?.clone();
    let answer = match req.path() {
        KEYS_CHANGED => match app.keys.load(&*app.store).await {
            Ok(_) => return Some(HttpResponse::NoContent().finish()),
            Err(e) => Err(ApiError::from(e)),
        },
        TAKE_NOW => {
            app.cluster.take_now();
            return Some(HttpResponse::NoContent().finish());
        }
        WEBHOOKS_KEY => {
            let body = read_body_within(req, 64).await.unwrap_or_default();
            let fingerprint = String::from_utf8_lossy(&body);
            let held = app.webhooks.keyring().ok()?.hand_over(&fingerprint);
            return Some(match held {
                Some(bytes) => HttpResponse::Ok().body(bytes.to_vec()),
                None => HttpResponse::NotFound().finish(),
            });
        }
        PASSED_KEYS => match read_body_within(req, super::body::MAX_BODY_BYTES).await {
            Some(body) => passed_key(&app, &body).await,
            None => Err(ApiError::bad_request("the key request is too large")),
        },
        CONSOLE_COPY => match read_body_within(req, 64).await {
            Some(body) => console_copy(&app, &body).await,
            None => Err(ApiError::bad_request("the workspace id is too long")),
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
pub fn not_here() -> HttpResponse {
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

/// What this node's copy of a workspace (its id, the body) says of it, for another
/// node's console: `None` when this node has no copy loaded.
async fn console_copy(app: &AppState, body: &[u8]) -> Result<Option<serde_json::Value>, ApiError> {
    let workspace = std::str::from_utf8(body)
        .ok()
        .and_then(|s| uuid::Uuid::parse_str(s.trim()).ok())
        .ok_or_else(|| ApiError::bad_request("not a workspace id"))?;
    let Some(Slot::Ready(handle)) = app.registry.slot(workspace) else {
        return Ok(None);
    };
    let sources = super::report::Sources {
        node: &app.cluster.me().name,
        keys: &app.keys,
        store: &*app.store,
        webhooks: &app.webhooks,
    };
    super::report::describe(&sources, &handle.state())
        .await
        .map(Some)
}

/// An import applied here for another node's admin interface: its `data`, or `None`
/// when this node does not write the workspace.
async fn passed_import(
    app: &AppState,
    body: web::Bytes,
) -> Result<Option<serde_json::Value>, ApiError> {
    let snap = parsed(web::block(move || actors::snapshot::parse_slice(&body)).await)?;
    if !app.cluster.writes(workspace_of(&snap).id) {
        return Ok(None);
    }
    import_here(&app.registry, &app.cluster, snap)
        .await
        .map(Some)
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
///
/// In a cluster this node first becomes the workspace's writer (`Membership::claim`),
/// so that no round of the leases takes the workspace from under the import. A copy at
/// position 0 (made here just now, or never written) is first brought up to what the
/// store holds of the workspace: a first import that never finished leaves records
/// without the workspace's row, which the import then goes on from rather than ignores.
pub(crate) async fn import_here(
    registry: &actors::registry::Registry,
    cluster: &crate::cluster::Membership,
    snap: Snapshot,
) -> Result<serde_json::Value, ApiError> {
    let handle = registry
        .handle_or_create(workspace_of(&snap))
        .ok_or_else(|| ApiError::unavailable("the workspace is still loading"))?;
    let catch_up = async {
        if handle.state().position == 0 {
            handle.addr.send(actors::actor::Follow).await??;
        }
        anyhow::Ok(())
    };
    let workspace = handle.state().id();
    match cluster.claim(workspace, catch_up).await {
        Ok(()) => {}
        Err(crate::cluster::leases::ClaimRefused::Busy) => {
            return Err(ApiError::new(
                ErrorKind::Unavailable { retry_after: 1 },
                "another node writes this workspace now; retry after the indicated delay",
            ))
        }
        Err(crate::cluster::leases::ClaimRefused::Failed(e)) => {
            let mut refusal = ApiError::unavailable(
                "the store is temporarily unavailable; retry after the indicated delay",
            );
            refusal.cause = Some(e);
            return Err(refusal);
        }
    }
    let report = handle.addr.send(actors::actor::Import(snap)).await??;
    Ok(report.to_json())
}

/// The request's body, whole, when it is at most `limit` bytes (else `None`, the body
/// left to be refused as it would be: what was read, then the rest).
pub(crate) async fn read_body_within(req: &mut ServiceRequest, limit: usize) -> Option<web::Bytes> {
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
