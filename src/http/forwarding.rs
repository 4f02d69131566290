//! The cluster's hop, as a middleware of its own (inside the request context, before
//! routing): a request for a workspace is answered by the node that writes it, and a
//! node that does not passes the request there and returns the answer as it came
//! (`crate::cluster::relay`). So every request of a workspace sees one copy of it,
//! wherever it arrives: a write is read back at once through any node (read-your-writes),
//! and a key's budget is counted in one place.
//!
//! - API requests (`/v1/…`) are routed by their key's workspace; signed file URLs
//!   (`/files/<workspace>/…`) by the workspace in their path, to a node that holds it.
//! - The answering node adopts the request id the client's node gave the request, so
//!   the answer is the one this node would have given.
//! - A read whose writer cannot be reached is answered from this node's own copy (or
//!   by a node that holds one); a write waits for a writer (one is being replaced) up to
//!   `relay::WAIT_FOR_WRITER`, then is refused with 503, as is a write whose forwarding
//!   failed after it went out (its client retries with the same `reference`).
//! - A long-poll of the change feed is given its `wait` on top of the usual time to
//!   answer.
//! - Requests from another node are answered here, never passed on again; one this node
//!   is no longer the place for is refused untouched (421), for the other to look again.
//! - Node-to-node requests (`super::node`) are answered before any of this.

use super::errors::{ApiError, ErrorKind};
use super::node::{read_body_within, FromNode};
use super::request::{bearer, OwnBody, RequestId};
use super::state::AppState;
use crate::cluster::forward::{self, Outgoing, REQUEST_ID};
use crate::cluster::relay::{Refusal, Relay, Relayed, ANSWER_WITHIN};
use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::http::{header, Method};
use actix_web::middleware::Next;
use actix_web::{web, Error, HttpMessage, HttpResponse};
use std::time::Duration;
use uuid::Uuid;

/// The middleware (see the module's docs).
pub async fn forwarding(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, Error> {
    let rid = req
        .extensions()
        .get::<RequestId>()
        .cloned()
        .unwrap_or_else(RequestId::generate);
    if let Some(answer) = super::node::answer(&mut req, &rid).await {
        return Ok(req.into_response(answer));
    }
    match to_writer(&mut req, &rid).await {
        Some(Ok(answer)) => Ok(req.into_response(answer)),
        // Through `error_response`, which keeps the error for the envelope the request
        // context writes (`into_response` would leave a bare status).
        Some(Err(refusal)) => Ok(req.error_response(refusal)),
        None => Ok(next.call(req).await?.map_into_boxed_body()),
    }
}

/// The workspace a request is for, and whether it is a read: by its key for the API,
/// by its path for a signed file URL. `None` for anything else (and for an API request
/// whose key is unknown even after a fresh read: it is refused here as anywhere).
async fn workspace_of(req: &ServiceRequest, app: &AppState) -> Option<(Uuid, bool)> {
    let reads = matches!(*req.method(), Method::GET | Method::HEAD);
    let path = req.path();
    if path.starts_with(super::signed_urls::FILES_PATH) {
        let (workspace, _) = super::signed_urls::parse_files_path(path)?;
        return Some((Uuid::parse_str(&workspace).ok()?, true));
    }
    if !path.starts_with("/v1/") {
        return None;
    }
    let token = bearer(req.request()).ok()?;
    let key = match app.keys.by_secret(token) {
        Some(key) => key,
        // A key made on another node since this one read the keys (certainly so when
        // another node passed the request on: it knew the key).
        None => {
            let certain = req.extensions().contains::<FromNode>();
            if let Err(e) = app.keys.reload_for_unknown(&*app.store, certain).await {
                tracing::warn!(error = %e, "reading the API keys afresh");
            }
            app.keys.by_secret(token)?
        }
    };
    Some((key.workspace_id, reads))
}

/// Answers `req` at its workspace's writer when that is another node: `Some` answer (or
/// refusal), or `None` to answer it here.
async fn to_writer(
    req: &mut ServiceRequest,
    rid: &RequestId,
) -> Option<Result<HttpResponse, ApiError>> {
    let app = req.app_data::<web::Data<AppState>>()?.clone();
    // A node alone answers everything itself: nothing more to read or hash here (its
    // lookups pay nothing for the cluster).
    if !app.cluster.has_peers() {
        return None;
    }
    let (workspace, read) = workspace_of(req, &app).await?;
    if req.extensions().contains::<FromNode>() {
        // Passed here as to the writer (a write) or a holder (a read) by a node whose
        // directory is a moment behind: refused untouched, to be passed on afresh.
        let misdirected = if read {
            app.registry.slot(workspace).is_none()
        } else {
            !app.cluster.writes(workspace)
        };
        return misdirected.then(|| Ok(super::node::not_here()));
    }
    if app.cluster.writes(workspace) {
        return None;
    }
    let body = match read_body_within(req, super::body::MAX_BODY_BYTES).await {
        Some(body) => body,
        // Refused here as it would be there.
        None => return None,
    };
    let relay = Relay {
        workspace,
        read,
        admin: false,
        answer_within: ANSWER_WITHIN + long_poll(req),
    };
    let registry = app.registry.clone();
    let started = std::time::Instant::now();
    let relayed = app
        .cluster
        .relay(
            &relay,
            || registry.slot(workspace).is_some(),
            || outgoing(req, rid, body.clone()),
        )
        .await;
    let answer = match relayed {
        Relayed::Answered(node, answer) => {
            app.metrics.forwarded(&node, "answered", started.elapsed());
            Ok(respond(answer))
        }
        Relayed::Here | Relayed::Local => {
            // Answered here: the body read goes back to the request.
            req.set_payload(Payload::from(body));
            return None;
        }
        Relayed::Refused(refusal) => {
            let outcome = match refusal {
                Refusal::Unknown(_) => "unknown",
                Refusal::NoWriter | Refusal::NoHolder => "unreachable",
            };
            app.metrics.forwarded("-", outcome, started.elapsed());
            let message = match refusal {
                Refusal::Unknown(_) => {
                    "the workspace's writer did not answer; retry after the indicated \
                     delay (with the same reference, a write is applied at most once)"
                }
                Refusal::NoWriter => {
                    "the workspace's writer is changing; retry after the indicated delay"
                }
                Refusal::NoHolder => {
                    "the nodes that hold this workspace did not answer; retry after the \
                     indicated delay"
                }
            };
            let mut e = ApiError::new(ErrorKind::Unavailable { retry_after: 1 }, message);
            e.cause = Some(refusal.into());
            Err(e)
        }
    };
    Some(answer)
}

/// How long a change feed request says it may wait for a change (`wait`, 0–30 s): its
/// answer may take that much longer.
fn long_poll(req: &ServiceRequest) -> Duration {
    if req.path() != super::CHANGES {
        return Duration::ZERO;
    }
    let wait = req
        .query_string()
        .split('&')
        .filter_map(|p| p.strip_prefix("wait="))
        .filter_map(|w| w.parse::<u64>().ok())
        .max()
        .unwrap_or(0);
    Duration::from_secs(wait.min(super::changes::MAX_WAIT_SECS))
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

fn outgoing(req: &ServiceRequest, rid: &RequestId, body: web::Bytes) -> Outgoing {
    let mut headers: Vec<(String, Vec<u8>)> = req
        .headers()
        .iter()
        .filter(|(n, _)| !hop_by_hop(n.as_str()))
        .map(|(n, v)| (n.as_str().to_string(), v.as_bytes().to_vec()))
        .collect();
    headers.push((REQUEST_ID.to_string(), rid.as_str().as_bytes().to_vec()));
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
