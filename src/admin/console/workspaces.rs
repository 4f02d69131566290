//! The console's workspaces: `GET /admin/v1/console/workspaces?q=` finds workspaces
//! of the store by id or name, and `GET /admin/v1/console/workspaces/{id}` shows one.
//!
//! One workspace is shown in two parts. `cluster`: its writer, the store's commit
//! position and its holders with their positions and lags, from the overview (so from
//! the store). `copy`: what a copy of it says (`crate::http::report`: counts, records,
//! the pruned point, webhook endpoints with their backlog, keys), made by this node
//! when it holds a copy, otherwise by a node that does (its writer, else any holder),
//! asked over the node-to-node channel (`crate::cluster::relay::CONSOLE_COPY`). When no
//! live node holds one, `copy` is `null` and `copy_error` says why.

use super::super::AdminState;
use super::overview;
use crate::cluster::relay::{PassTo, CONSOLE_COPY};
use crate::http::errors::ApiError;
use crate::http::request::RequestId;
use actix_web::{web, HttpRequest, HttpResponse};
use actors::registry::Slot;
use serde_json::{json, Value};
use uuid::Uuid;

/// Most workspaces a search answers.
pub const MOST_FOUND: usize = 50;

/// `GET /admin/v1/console/workspaces?q=`: the workspaces whose id starts with `q` or
/// whose name contains it (case aside), by name; every workspace without `q`.
pub async fn search(
    req: HttpRequest,
    state: web::Data<AdminState>,
    rid: RequestId,
) -> Result<HttpResponse, ApiError> {
    super::check_reader(&req, &state)?;
    let q = url::form_urlencoded::parse(req.query_string().as_bytes())
        .find(|(name, _)| name == "q")
        .map(|(_, v)| v.trim().to_lowercase())
        .unwrap_or_default();
    let names = overview::names(&state, &[]).await?;
    let overview = overview::current(&state).await?;
    let mut found: Vec<&actors::model::Workspace> = names
        .iter()
        .filter(|w| {
            q.is_empty()
                || w.id.to_string().starts_with(&q)
                || w.name
                    .as_deref()
                    .is_some_and(|n| n.to_lowercase().contains(&q))
        })
        .collect();
    found.sort_by(|a, b| a.name.cmp(&b.name).then(a.id.cmp(&b.id)));
    let total = found.len();
    let rows: Vec<Value> = found
        .iter()
        .take(MOST_FOUND)
        .map(|w| {
            let row = overview.workspaces.iter().find(|r| r.id == w.id);
            json!({
                "id": w.id,
                "name": w.name,
                "writer": row.and_then(|r| r.writer.clone()),
                "position": row.and_then(|r| r.position),
                "holders": row.map_or(json!([]), |r| json!(r.holders)),
            })
        })
        .collect();
    crate::http::envelope::Envelope::of(&json!({"found": total, "workspaces": rows}))?
        .respond(rid.as_str())
}

/// `GET /admin/v1/console/workspaces/{id}`.
pub async fn get(
    req: HttpRequest,
    path: web::Path<String>,
    state: web::Data<AdminState>,
    rid: RequestId,
) -> Result<HttpResponse, ApiError> {
    super::check_reader(&req, &state)?;
    let id = Uuid::parse_str(&path.into_inner())
        .map_err(|_| ApiError::bad_request("not a workspace id"))?;
    let names = overview::names(&state, &[id]).await?;
    let known = names
        .binary_search_by(|w| w.id.cmp(&id))
        .ok()
        .map(|i| &names[i]);
    let held_here = matches!(state.registry.slot(id), Some(Slot::Ready(_)));
    if known.is_none() && !held_here {
        return Err(ApiError::not_found(format!("no workspace {id}")));
    }
    let overview = overview::current(&state).await?;
    let row = overview.workspaces.iter().find(|r| r.id == id);
    let (copy, copy_error) = match copy_of(&state, id, &rid).await {
        Ok(copy) => (copy, None),
        Err(why) => (Value::Null, Some(why)),
    };
    let data = json!({
        "id": id,
        "name": known.and_then(|w| w.name.clone()),
        "cluster": {
            "writer": row.and_then(|r| r.writer.clone()),
            "position": row.and_then(|r| r.position),
            "holders": row.map(|r| &r.holders),
        },
        "copy": copy,
        "copy_error": copy_error,
    });
    crate::http::envelope::Envelope::of(&data)?.respond(rid.as_str())
}

/// What a copy of the workspace says of it: this node's, or a holder's (see the module's
/// docs); `Err` says why there is none.
async fn copy_of(state: &AdminState, id: Uuid, rid: &RequestId) -> Result<Value, String> {
    if let Some(Slot::Ready(handle)) = state.registry.slot(id) {
        let sources = crate::http::report::Sources {
            node: &state.membership.me().name,
            keys: &state.key_ring,
            store: &*state.store,
            webhooks: &state.webhooks,
        };
        return crate::http::report::describe(&sources, &handle.state())
            .await
            .map_err(|e| e.message.to_string());
    }
    let body = bytes::Bytes::from(id.to_string());
    match state
        .membership
        .pass(PassTo::Holder, id, CONSOLE_COPY, body, rid.as_str())
        .await
    {
        None => Err("no live node holds a copy of this workspace".into()),
        Some(Err(refusal)) => Err(refusal.to_string()),
        Some(Ok(answer)) if answer.status == 200 => serde_json::from_slice::<Value>(&answer.body)
            .ok()
            .and_then(|mut v| v.get_mut("data").map(Value::take))
            .ok_or_else(|| "the holder's answer did not parse".to_string()),
        Some(Ok(answer)) => Err(format!("the holder answered {}", answer.status)),
    }
}
