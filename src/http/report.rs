//! What a node's copy of a workspace says of it, for the operator console: the API's
//! counts, the records held, the commit position and how far the change log is pruned,
//! the webhook endpoints (status, backlog) and the API keys (never a secret or its
//! hash). Made by a node that holds the workspace: the console's own node when it
//! does, otherwise the node the console asks over the node-to-node channel
//! (`crate::cluster::relay::CONSOLE_COPY`, answered in [`super::node`]).

use super::errors::ApiError;
use actors::keys::KeyRing;
use actors::model::Entity;
use actors::state::WorkspaceState;
use actors::store::{LogWindow, Store};
use serde_json::{json, Value};

/// What [`describe`] reads besides the copy.
pub struct Sources<'a> {
    /// The node whose copy it is.
    pub node: &'a str,
    pub keys: &'a KeyRing,
    pub store: &'a dyn Store,
    pub webhooks: &'a crate::webhooks::hub::Hub,
}

/// The copy's description (see the module's docs).
pub async fn describe(src: &Sources<'_>, state: &WorkspaceState) -> Result<Value, ApiError> {
    let ws = state.id();
    let counts: serde_json::Map<String, Value> = Entity::ALL
        .iter()
        .map(|e| {
            (
                e.name().to_string(),
                actors::entities::count(state, *e).into(),
            )
        })
        .collect();
    // An empty window: the read names no part, only the point the log is pruned through.
    let window = LogWindow {
        after: (state.position, u32::MAX),
        upto: state.position,
        max_parts: 1,
    };
    let pruned_through = src.store.read_changes(ws, window).await?.pruned_through;
    let (webhooks, webhooks_error) = match src.webhooks.list(ws).await {
        Ok(rows) => (
            rows.iter()
                .map(|row| endpoint(row, state.position))
                .collect(),
            None,
        ),
        Err(crate::webhooks::hub::HubError::Store(e)) => (Vec::new(), Some(e.to_string())),
        Err(e) => (Vec::new(), Some(format!("{e:?}"))),
    };
    let keys: Vec<Value> = src
        .keys
        .of_workspace(ws)
        .iter()
        .map(|k| {
            let creator = state.users.get(&k.created_by);
            json!({
                "id": k.id,
                "scopes": k.scopes.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
                "created_by": k.created_by,
                "created_by_email": creator.and_then(|u| u.email.clone()),
                "created_at": k.created_at.map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
                "revoked": k.revoked,
                "rate_limit_per_minute": k.rate_limit_per_minute,
            })
        })
        .collect();
    Ok(json!({
        "node": src.node,
        "name": state.workspace.name,
        "position": state.position,
        "pruned_through": pruned_through,
        "records": state.stored_records(),
        "tombstones": state.tombstones.len(),
        "counts": counts,
        "webhooks": webhooks,
        "webhooks_error": webhooks_error,
        "keys": keys,
    }))
}

/// An endpoint as the console shows it: its URL without query or user information
/// (either may hold a credential of the receiver's), its status, and its backlog in
/// commits after its acknowledged point (as `recruitd_webhook_backlog` counts it).
fn endpoint(row: &crate::webhooks::stored::StoredEndpoint, position: u64) -> Value {
    let attempt = row.last_attempt.as_ref().map(|a| {
        json!({
            "status_code": a.status,
            "error": a.error,
            "duration_ms": a.duration_ms,
            "at_ms": a.at_ms,
        })
    });
    json!({
        "id": row.id,
        "url": shown_url(&row.url),
        "status": row.status,
        "disabled_reason": row.disabled_reason,
        "acknowledged_position": row.acknowledged.position,
        "backlog_commits": position.saturating_sub(row.acknowledged.position),
        "failing_since_ms": row.in_flight.as_ref().and_then(|f| f.failing_since_ms),
        "last_attempt": attempt,
    })
}

/// A URL's scheme, host, port and path: what names the receiver, and nothing that may
/// authenticate to it.
fn shown_url(raw: &str) -> String {
    match url::Url::parse(raw) {
        Ok(mut u) => {
            let hidden = u.query().is_some() || !u.username().is_empty() || u.password().is_some();
            u.set_query(None);
            u.set_fragment(None);
            let _ = u.set_username("");
            let _ = u.set_password(None);
            let mut shown = u.to_string();
            if hidden {
                shown.push_str(" (query or user hidden)");
            }
            shown
        }
        Err(_) => "(not a URL)".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::shown_url;

    #[test]
    fn a_shown_url_keeps_no_query_or_user() {
        assert_eq!(
            shown_url("https://hooks.example.com/in/42"),
            "https://hooks.example.com/in/42"
        );
        assert_eq!(
            shown_url("https://bob:pw@hooks.example.com:8443/in?token=s3cret#x"),
            "https://hooks.example.com:8443/in (query or user hidden)"
        );
        assert_eq!(shown_url("::"), "(not a URL)");
    }
}
