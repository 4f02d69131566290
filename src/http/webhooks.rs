//! `/v1/webhooks`: a workspace's webhook endpoints (scope `webhooks:write`), which push
//! its change feed to integrators (`crate::webhooks`).
//!
//! Every request of a workspace reaches its writer (`forwarding`), the node that
//! delivers its endpoints, so these handlers change the endpoints where their tasks
//! run (`crate::webhooks::hub`).
//!
//! An endpoint as the API shows it: `id`, `url`, `entities`, `description`, `status`,
//! `disabled_reason`, `acknowledged` (the feed token of the last change a 2xx
//! confirmed), `backlog` (changes committed after it), `last_attempt`, `created_at`,
//! `updated_at`; at creation and rotation, also its `secret`, shown then only, and at
//! creation `position`, the token it starts after.

use super::auth::{Authed, WebhooksWrite};
use super::body::{read_object, Fields};
use super::envelope::Envelope;
use super::errors::{ApiError, ErrorKind};
use super::query::{entities_param, LimitParam, QueryParams};
use super::request::RequestId;
use super::state::AppState;
use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use actors::changes::tokens::{encode_token, FeedPoint, WHOLE_PART};
use actors::model::Entity;
use actors::state::WorkspaceState;
use actors::store::LogWindow;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::webhooks::address;
use crate::webhooks::batch;
use crate::webhooks::deliverer::Reason;
use crate::webhooks::hub::HubError;
use crate::webhooks::stored::{StoredAttempt, StoredEndpoint, OLD_SECRET_SIGNS_FOR_MS};

/// What every handler here takes: the caller (with the scope), the request's id, and
/// the server's state.
type Call = (Authed<WebhooksWrite>, RequestId, web::Data<AppState>);

/// The most endpoints a workspace may have.
pub const MOST_ENDPOINTS: usize = 20;
/// The longest description.
pub const MAX_DESCRIPTION_LEN: usize = 1000;

/// `limit` of the endpoints' list and of the deliveries log.
pub type HooksLimit = LimitParam<20, 100>;

pub const NEW_FIELDS: &[&str] = &["url", "entities", "description"];
pub const PATCH_FIELDS: &[&str] = &["url", "entities", "description", "status"];
pub const REPLAY_FIELDS: &[&str] = &["since"];
const CURSOR_DOMAIN: &[u8] = b"recruitd-webhooks-cursor";

impl From<HubError> for ApiError {
    fn from(e: HubError) -> Self {
        match e {
            HubError::NotFound => ApiError::not_found("no webhook endpoint with this id"),
            HubError::TooMany => ApiError::new(
                ErrorKind::Conflict,
                format!("the workspace has its most webhook endpoints ({MOST_ENDPOINTS})"),
            ),
            HubError::NoKey => ApiError::internal(anyhow::anyhow!(
                "this node has no data key to seal webhook secrets with"
            )),
            HubError::Store(e) => e.into(),
        }
    }
}

/// The endpoint's `url`, checked against the server's policy: its form, and the
/// addresses its name resolves to now (each delivery resolves and checks it again).
async fn url_of(app: &AppState, raw: String) -> Result<String, ApiError> {
    let refused = |refusal: address::Refusal| ApiError::bad_request(refusal.to_string());
    let url = address::check(&raw, app.webhook_policy).map_err(refused)?;
    address::resolve(&url, app.webhook_policy)
        .await
        .map_err(refused)?;
    Ok(url.into())
}

/// `entities`: an array of entity names (empty or absent: all nine).
fn entities_of(f: &mut Fields) -> Result<Option<Vec<String>>, ApiError> {
    let Some(value) = f.value("entities") else {
        return Ok(None);
    };
    let bad = || ApiError::bad_request("entities: must be an array of entity names");
    if value.is_null() {
        return Ok(Some(Vec::new()));
    }
    let Value::Array(items) = value else {
        return Err(bad());
    };
    let mut names = Vec::new();
    for item in items {
        let Value::String(name) = item else {
            return Err(bad());
        };
        names.push(name);
    }
    // Checked as the feed's parameter is, with its message.
    let joined = names.join(",");
    let entities = entities_param(Some(joined.as_str()).filter(|s| !s.is_empty()))?;
    if names.is_empty() || entities.len() == Entity::ALL.len() {
        return Ok(Some(Vec::new()));
    }
    Ok(Some(
        entities.iter().map(|e| e.name().to_string()).collect(),
    ))
}

fn description_of(f: &mut Fields) -> Result<Option<Option<String>>, ApiError> {
    let Some(change) = f.text("description")? else {
        return Ok(None);
    };
    let text = match change {
        actors::writes::Change::Set(t) => Some(t),
        actors::writes::Change::Clear => None,
    };
    if text
        .as_ref()
        .is_some_and(|t| t.chars().count() > MAX_DESCRIPTION_LEN)
    {
        return Err(ApiError::bad_request(format!(
            "description: at most {MAX_DESCRIPTION_LEN} characters"
        )));
    }
    Ok(Some(text))
}

fn iso(ms: i64) -> String {
    let mut buf = [0u8; 24];
    actors::time::Stamp::from_millis(ms)
        .write_iso(&mut buf)
        .to_string()
}

/// How the API shows an attempt.
fn attempt_view(app: &AppState, ws: Uuid, a: &StoredAttempt) -> Value {
    json!({
        "id": a.id,
        "since": encode_token(&app.cursor_key, ws, a.since.into()),
        "next_since": encode_token(&app.cursor_key, ws, a.next.into()),
        "attempt": a.attempt,
        "status_code": a.status,
        "error": a.error,
        "duration_ms": a.duration_ms,
        "attempted_at": iso(a.at_ms),
    })
}

/// How the API shows an endpoint.
async fn endpoint_view(
    app: &AppState,
    state: &WorkspaceState,
    row: &StoredEndpoint,
) -> Result<Value, ApiError> {
    let ws = state.id();
    let entities: Vec<&str> = row.entity_filter().iter().map(|e| e.name()).collect();
    let backlog = batch::backlog(&*app.store, ws, row.acknowledged.into(), state.position).await?;
    Ok(json!({
        "id": row.id,
        "url": row.url,
        "entities": entities,
        "description": row.description,
        "status": row.status,
        "disabled_reason": row.disabled_reason,
        "acknowledged": encode_token(&app.cursor_key, ws, row.acknowledged.into()),
        "backlog": backlog,
        "last_attempt": row.last_attempt.as_ref().map(|a| attempt_view(app, ws, a)),
        "created_at": iso(row.created_at_ms),
        "updated_at": iso(row.updated_at_ms),
    }))
}

fn answer(status: StatusCode, data: &Value, rid: &RequestId) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::build(status)
        .content_type("application/json")
        .body(Envelope::of(data)?.close(rid.as_str())?))
}

/// `POST /v1/webhooks`.
pub async fn create(
    (caller, rid, app): Call,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let mut f = read_object(&req, payload, NEW_FIELDS).await?;
    let url = url_of(&app, f.required_string("url")?).await?;
    let entities = entities_of(&mut f)?.unwrap_or_default();
    let description = description_of(&mut f)?.flatten();
    let state = caller.state.clone();
    let now = (app.webhooks.engine().now_ms)();
    let row = StoredEndpoint {
        id: format!("whe_{}", Uuid::new_v4().simple()),
        url,
        entities,
        description,
        created_at_ms: now,
        updated_at_ms: now,
        key: String::new(),
        secrets: Vec::new(),
        status: "active".into(),
        disabled_reason: None,
        acknowledged: FeedPoint::at(state.position).into(),
        last_attempt: None,
        in_flight: None,
    };
    let (row, secret) = app.webhooks.create(state.id(), row, MOST_ENDPOINTS).await?;
    let mut view = endpoint_view(&app, &state, &row).await?;
    view["secret"] = json!(secret.reveal());
    view["position"] = view["acknowledged"].clone();
    answer(StatusCode::CREATED, &view, &rid)
}

/// `GET /v1/webhooks`: keyset pages in id order.
pub async fn list(
    (caller, rid, app): Call,
    q: QueryParams,
    limit: HooksLimit,
) -> Result<HttpResponse, ApiError> {
    let after = match q.get("cursor")? {
        Some(raw) => Some(decode_cursor(&app, raw)?),
        None => None,
    };
    let rows = app.webhooks.list(caller.state.id()).await?;
    let page: Vec<&StoredEndpoint> = rows
        .iter()
        .filter(|r| after.as_deref().is_none_or(|a| r.id.as_str() > a))
        .take(limit.0 + 1)
        .collect();
    let more = page.len() > limit.0;
    let mut views = Vec::new();
    for row in page.iter().take(limit.0) {
        views.push(endpoint_view(&app, &caller.state, row).await?);
    }
    let next = more.then(|| encode_cursor(&app, &page[limit.0 - 1].id));
    let mut body = Envelope::of(&views)?;
    body.next_cursor(next.as_deref())?;
    body.respond(rid.as_str())
}

fn encode_cursor(app: &AppState, id: &str) -> String {
    let seal = app.cursor_key.seal(CURSOR_DOMAIN, id.as_bytes());
    let mut bytes = seal.to_vec();
    bytes.extend_from_slice(id.as_bytes());
    URL_SAFE_NO_PAD.encode(bytes)
}

fn decode_cursor(app: &AppState, raw: &str) -> Result<String, ApiError> {
    let bad = || ApiError::bad_request("cursor is not valid: pass back next_cursor verbatim");
    let bytes = URL_SAFE_NO_PAD.decode(raw).map_err(|_| bad())?;
    let len = actors::signing::SEAL_LEN;
    if bytes.len() <= len {
        return Err(bad());
    }
    let (seal, id) = bytes.split_at(len);
    if !app.cursor_key.check(CURSOR_DOMAIN, id, seal) {
        return Err(bad());
    }
    String::from_utf8(id.to_vec()).map_err(|_| bad())
}

/// `GET /v1/webhooks/{id}`.
pub async fn get(
    (caller, rid, app): Call,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let row = app.webhooks.get(caller.state.id(), &path).await?;
    let view = endpoint_view(&app, &caller.state, &row).await?;
    answer(StatusCode::OK, &view, &rid)
}

/// `PATCH /v1/webhooks/{id}`: `url`, `entities`, `description`, `status` (`active`
/// resumes from the acknowledged point; `disabled` stops deliveries).
pub async fn patch(
    (caller, rid, app): Call,
    req: HttpRequest,
    path: web::Path<String>,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let mut f = read_object(&req, payload, PATCH_FIELDS).await?;
    let url = match f.string_value_only("url")? {
        Some(raw) => Some(url_of(&app, raw).await?),
        None => None,
    };
    let entities = entities_of(&mut f)?;
    let description = description_of(&mut f)?;
    let status = match f.string_value_only("status")?.as_deref() {
        None => None,
        Some("active") => Some(true),
        Some("disabled") => Some(false),
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "status: {other:?} is not one of active, disabled"
            )))
        }
    };
    changed(&app, &caller.state, &path, &rid, |row| {
        if let Some(url) = url {
            row.url = url;
        }
        if let Some(entities) = entities {
            row.entities = entities;
        }
        if let Some(description) = description {
            row.description = description;
        }
        match status {
            Some(true) => {
                let mut d = row.deliverer();
                d.enable();
                row.follow(&d);
            }
            Some(false) => {
                let mut d = row.deliverer();
                d.disable(Reason::Requested);
                row.follow(&d);
            }
            None => {}
        }
    })
    .await
}

/// Changes an endpoint with `change` and answers it as it then stands.
async fn changed(
    app: &AppState,
    state: &WorkspaceState,
    id: &str,
    rid: &RequestId,
    change: impl FnOnce(&mut StoredEndpoint),
) -> Result<HttpResponse, ApiError> {
    let (row, ()) = app
        .webhooks
        .change(state.id(), id, |row, _| {
            change(row);
            Ok(())
        })
        .await?;
    let view = endpoint_view(app, state, &row).await?;
    answer(StatusCode::OK, &view, rid)
}

/// `DELETE /v1/webhooks/{id}`.
pub async fn delete(
    (caller, _, app): Call,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    app.webhooks.delete(caller.state.id(), &path).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// `POST /v1/webhooks/{id}/replay` `{since}`: deliveries start again after `since`.
pub async fn replay(
    (caller, rid, app): Call,
    req: HttpRequest,
    path: web::Path<String>,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let mut f = read_object(&req, payload, REPLAY_FIELDS).await?;
    let raw = f.required_string("since")?;
    let state = caller.state.clone();
    let ws = state.id();
    let since = super::changes::since_token(&app, ws, &raw).await?;
    if since.position > state.position {
        return Err(ApiError::bad_request(
            "since names a point this workspace has not reached",
        ));
    }
    let window = LogWindow {
        after: (since.position, u32::MAX),
        upto: since.position,
        max_parts: 1,
    };
    let pruned = app.store.read_changes(ws, window).await?.pruned_through;
    let inside = since.part != u32::MAX || since.index != WHOLE_PART;
    if pruned > since.position || (inside && pruned >= since.position) {
        return Err(ApiError::new(
            ErrorKind::ResyncRequired,
            "since is older than the change history kept: replay from a later token",
        ));
    }
    changed(&app, &state, &path, &rid, |row| {
        let mut d = row.deliverer();
        d.replay(since);
        row.follow(&d);
    })
    .await
}

/// `POST /v1/webhooks/{id}/rotate-secret`: a new secret; the old one signs beside it
/// for 24 hours.
pub async fn rotate_secret(
    (caller, rid, app): Call,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let state = caller.state.clone();
    let now = (app.webhooks.engine().now_ms)();
    let (row, secret) = app
        .webhooks
        .change(state.id(), &path, |row, key| {
            let secret = crate::webhooks::secret::Secret::generate();
            row.set_secret(key, &secret, now, now + OLD_SECRET_SIGNS_FOR_MS);
            Ok(secret)
        })
        .await?;
    let mut view = endpoint_view(&app, &state, &row).await?;
    view["secret"] = json!(secret.reveal());
    answer(StatusCode::CREATED, &view, &rid)
}

/// `GET /v1/webhooks/{id}/deliveries`: the newest attempts, newest first.
pub async fn deliveries(
    (caller, rid, app): Call,
    path: web::Path<String>,
    limit: HooksLimit,
) -> Result<HttpResponse, ApiError> {
    let ws = caller.state.id();
    let attempts = app.webhooks.deliveries(ws, &path, limit.0 as u32).await?;
    let views: Vec<Value> = attempts.iter().map(|a| attempt_view(&app, ws, a)).collect();
    answer(StatusCode::OK, &json!(views), &rid)
}
