//! `GET /v1/changes`: the change feed (`actors::changes` keeps the log and answers from
//! it), and the tokens that name points of it, which the first page of every list
//! hands out as `changes_since`.
//!
//! A client catching up cannot ask for its next page before it has read the whole of
//! this one (the token is at its end), so the server would sit idle while the answer
//! travels and the client would while the next is made. An answer that says
//! `has_more` therefore starts the next page at once, on the rayon pool
//! (`ahead::PagesAhead`); the client's next request takes it if it asks for exactly that
//! page of exactly the state it was made from, and otherwise it is dropped and the page
//! made afresh: an answer is the same either way.

pub mod ahead;

use super::auth::{Authed, Read};
use super::envelope::Envelope;
use super::errors::{ApiError, ErrorKind};
use super::query::{LimitParam, QueryParams};
use super::request::RequestId;
use super::state::AppState;
use actix_web::{web, HttpResponse};
use actors::changes::{
    feed::{feed_pick, FeedError, FeedPage, Picked},
    tokens::{decode_token, encode_token, FeedPoint, TokenError},
};
use ahead::{Ahead, Asked, Chain, CHAIN_IDLE, PAGES_PER_CHAIN};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;

/// `limit` of the feed: as lists take it.
pub type FeedLimit = LimitParam<100, 500>;

/// Longest `wait`, in seconds.
pub const MAX_WAIT_SECS: u64 = 30;

/// The token a list's first page carries: the point its state stands at. The same
/// for every first page until the next commit, and a seal costs tens of microseconds
/// (`actors::signing`), so each workspace's latest is kept.
pub fn changes_since(app: &AppState, state: &actors::state::WorkspaceState) -> String {
    let (workspace, position) = (state.id(), state.position);
    if let Some(kept) = app.feed.since_tokens.0.get(&workspace) {
        if kept.0 == position {
            return kept.1.to_string();
        }
    }
    let token = encode_token(&app.cursor_key, workspace, FeedPoint::at(position));
    app.feed
        .since_tokens
        .0
        .insert(workspace, (position, Arc::from(token.as_str())));
    token
}

/// A `since` token of `workspace`, checked: a point of its change log this server
/// (or another node of its cluster) handed out.
pub async fn since_token(
    app: &AppState,
    workspace: uuid::Uuid,
    raw: &str,
) -> Result<FeedPoint, ApiError> {
    app.check_token(raw, || decode_token(&app.cursor_key, workspace, raw))
        .await
        .map_err(|e| match e {
            TokenError::Invalid => ApiError::bad_request(
                "since is not a valid token: pass back next_since or changes_since verbatim",
            ),
            TokenError::OtherWorkspace => {
                ApiError::bad_request("since was issued for another workspace")
            }
        })
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
    let raw = q.get("since")?.ok_or_else(|| {
        ApiError::bad_request(
            "since is required: a token from next_since, or from a list's changes_since",
        )
    })?;
    let since = since_token(&app, workspace, raw).await?;
    let entities = super::query::entities_param(q.get("entities")?)?;
    let wait = parse_wait(q.get("wait")?)?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(wait);

    let mut state = caller.state.clone();
    loop {
        let asked = Asked {
            state: state.clone(),
            since,
            entities: entities.clone(),
            limit: limit.0,
        };
        let mut chained = false;
        let page = match app.feed.pages_ahead.take_page(&asked, &app.metrics).await {
            Some(Ok(page)) => {
                // Its chain makes the pages after it.
                chained = true;
                Ok(page)
            }
            // Made ahead but failed (the store, say): made afresh, and failing here
            // if it still does.
            Some(Err(_)) | None => page_of(&app, &asked).await,
        }
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
            if page.has_more && !chained {
                start_chain(
                    &app,
                    Asked {
                        since: page.next,
                        ..asked
                    },
                );
            }
            let next = encode_token(&app.cursor_key, workspace, page.next);
            let mut body = Envelope::resume(page.data);
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

/// The page `asked` names, its data written into an envelope's buffer.
async fn page_of(app: &AppState, asked: &Asked) -> Result<FeedPage, FeedError> {
    pick(app, asked)
        .await?
        .render(&asked.state, Envelope::start())
}

/// The changes the page `asked` names shows, read from the log.
async fn pick(app: &AppState, asked: &Asked) -> Result<Picked, FeedError> {
    feed_pick(
        &*app.store,
        &app.feed.log_parts,
        &asked.state,
        asked.since,
        &asked.entities,
        asked.limit,
    )
    .await
}

/// Starts a chain of pages from the one `asked` names: each page's log read on this
/// thread (mostly from the part cache), its records rendered on the rayon pool,
/// beside the thread that sends the answer before it.
fn start_chain(app: &web::Data<AppState>, asked: Asked) {
    let app = app.clone();
    let chain = Arc::new(Chain::default());
    let room = Arc::new(tokio::sync::Semaphore::new(PAGES_PER_CHAIN));
    actix_web::rt::spawn(async move {
        run_chain(&app, &chain, &room, asked).await;
        // Its pages not taken by the time its client has been quiet for a while are
        // forgotten: each holds the state it was made from, which would otherwise
        // stay in memory until other chains pushed it out.
        let all = PAGES_PER_CHAIN as u32;
        let _ = tokio::time::timeout(CHAIN_IDLE, room.acquire_many(all)).await;
        app.feed.pages_ahead.forget(&chain, &app.metrics);
    });
}

/// Makes the chain's pages while its client takes them (see `ahead::Chain`).
async fn run_chain(
    app: &web::Data<AppState>,
    chain: &Arc<Chain>,
    room: &Arc<tokio::sync::Semaphore>,
    mut asked: Asked,
) {
    use std::sync::atomic::Ordering;
    loop {
        let Ok(Ok(slot)) = tokio::time::timeout(CHAIN_IDLE, room.clone().acquire_owned()).await
        else {
            return;
        };
        if chain.dropped.load(Ordering::Relaxed) {
            return;
        }
        let (tx, rx) = oneshot::channel();
        app.feed.pages_ahead.put(
            Ahead {
                asked: asked.clone(),
                page: rx,
                chain: chain.clone(),
                _room: slot,
            },
            &app.metrics,
        );
        let picked = match pick(app, &asked).await {
            Ok(picked) => picked,
            Err(e) => {
                let _ = tx.send(Err(e));
                return;
            }
        };
        let (more, next) = (picked.has_more(), picked.next());
        let state = asked.state.clone();
        rayon::spawn(move || {
            let _ = tx.send(picked.render(&state, Envelope::start()));
        });
        if !more {
            return;
        }
        asked = Asked {
            since: next,
            ..asked
        };
    }
}
