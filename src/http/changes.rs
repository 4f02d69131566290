//! `GET /v1/changes`: the change feed (`actors::changes` keeps the log and answers from
//! it), and the tokens that name points of it, which the first page of every list
//! hands out as `changes_since`.

use super::auth::{Authed, Read};
use super::context::RequestId;
use super::envelope::Envelope;
use super::errors::{ApiError, ErrorKind};
use super::query::{LimitParam, QueryParams};
use super::AppState;
use actix_web::{web, HttpResponse};
use actors::changes::{decode_token, encode_token, feed_page, FeedError, FeedPoint, TokenError};
use std::time::Duration;

/// `limit` of the feed: as lists take it.
pub type FeedLimit = LimitParam<100, 500>;

/// Longest `wait`, in seconds.
pub const MAX_WAIT_SECS: u64 = 30;

/// The token a list's first page carries: the point its state stands at.
pub fn changes_since(app: &AppState, state: &actors::state::WorkspaceState) -> String {
    encode_token(&app.cursor_key, state.id(), FeedPoint::at(state.position))
}

fn parse_wait(raw: Option<&str>) -> Result<u64, ApiError> {
    let Some(raw) = raw else {
        return Ok(0);
    };
    let bad = || {
        ApiError::bad_request(format!(
            "wait must be a whole number of seconds from 0 to {MAX_WAIT_SECS}, got {raw:?}"
        ))
    };
    if raw.is_empty() || raw.len() > 3 || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let n: u64 = raw.parse().map_err(|_| bad())?;
    if n > MAX_WAIT_SECS {
        return Err(bad());
    }
    Ok(n)
}

pub async fn changes(
    caller: Authed<Read>,
    q: QueryParams,
    limit: FeedLimit,
    rid: RequestId,
    app: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let workspace = caller.state.id();
    let since = q
        .get("since")?
        .ok_or_else(|| {
            ApiError::bad_request(
                "since is required: a token from next_since, or from a list's changes_since",
            )
        })
        .and_then(|raw| {
            decode_token(&app.cursor_key, workspace, raw).map_err(|e| match e {
                TokenError::Invalid => ApiError::bad_request(
                    "since is not a valid token: pass back next_since or changes_since verbatim",
                ),
                TokenError::OtherWorkspace => {
                    ApiError::bad_request("since was issued for another workspace")
                }
            })
        })?;
    let entities = super::query::entities_param(q.get("entities")?)?;
    let wait = parse_wait(q.get("wait")?)?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(wait);

    let mut state = caller.state.clone();
    loop {
        let page = feed_page(
            &*app.store,
            &app.log_parts,
            &state,
            since,
            &entities,
            limit.0,
        )
        .await
        .map_err(|e| match e {
            FeedError::Pruned => ApiError::new(
                ErrorKind::ResyncRequired,
                "since is older than the change history kept: sync afresh (a full list \
                     sync, then the feed from its changes_since)",
            ),
            FeedError::Ahead => ApiError::bad_request(
                "since names a point this workspace has not reached: pass back a token \
                     this server issued",
            ),
            FeedError::Store(e) => e.into(),
        })?;
        let now = tokio::time::Instant::now();
        if page.changes > 0 || page.has_more || now >= deadline {
            let mut body = Envelope::new(page.data.len() + 256);
            body.data_buf().extend_from_slice(&page.data);
            let next = encode_token(&app.cursor_key, workspace, page.next);
            body.member("next_since", &next)?;
            body.member("has_more", &page.has_more)?;
            return body.respond(rid.as_str());
        }
        // Nothing yet: wait for the workspace's next publication (or the deadline), then
        // answer from that state. `since` stays: the answer covers all up to the state.
        state = caller
            .workspace
            .published_after(state.position, deadline)
            .await;
    }
}
