//! What one delivery carries: the change feed's next answer after the endpoint's point,
//! as `GET /v1/changes` gives it, in an envelope naming the workspace, the endpoint and
//! the feed tokens before and after it.
//!
//! A batch holds at most [`MOST_CHANGES`] changes and [`MOST_BYTES`] of body. A page of
//! the feed that would be larger is picked again with half the changes, until it fits:
//! the feed's first `n` records after a point are the same whatever the page's limit,
//! so a smaller batch is a prefix of the larger one and its `next_since` continues
//! without a gap. A single change larger than the whole budget is sent alone.

use actors::changes::feed::{feed_page, FeedError, PartCache};
use actors::changes::tokens::FeedPoint;
use actors::model::Entity;
use actors::state::WorkspaceState;
use actors::store::Store;
use uuid::Uuid;

/// Most changes in one delivery.
pub const MOST_CHANGES: usize = 500;
/// Most bytes of one delivery's body.
pub const MOST_BYTES: usize = 1 << 20;

/// The next delivery of an endpoint: its body, and the points before and after it.
#[derive(Debug)]
pub struct Batch {
    pub since: FeedPoint,
    pub next: FeedPoint,
    pub changes: usize,
    pub body: Vec<u8>,
}

/// Who a batch is for, and how its feed points are written as tokens.
pub struct Envelope<'a> {
    pub workspace: Uuid,
    pub endpoint_id: &'a str,
    pub token: &'a (dyn Fn(FeedPoint) -> String + Sync),
}

/// What follows an endpoint's point.
#[derive(Debug)]
pub enum Next {
    /// A delivery to make.
    Batch(Batch),
    /// No change for the endpoint's entities up to `seen`, where the feed stopped
    /// looking: the endpoint's point may move there with nothing sent.
    Nothing { seen: FeedPoint },
}

/// The changes of `entities` after `since` as `ws` shows them, as one delivery's body,
/// or where the feed found none up to.
pub async fn next_batch(
    store: &dyn Store,
    cache: &PartCache,
    ws: &WorkspaceState,
    since: FeedPoint,
    entities: &[Entity],
    envelope: &Envelope<'_>,
) -> Result<Next, FeedError> {
    let mut limit = MOST_CHANGES;
    loop {
        let page = feed_page(store, cache, ws, since, entities, limit, Vec::new()).await?;
        if page.changes == 0 {
            return Ok(Next::Nothing { seen: page.next });
        }
        let body = body(envelope, since, page.next, &page.data);
        if body.len() <= MOST_BYTES || page.changes == 1 {
            return Ok(Next::Batch(Batch {
                since,
                next: page.next,
                changes: page.changes,
                body,
            }));
        }
        limit = page.changes / 2;
    }
}

fn body(e: &Envelope<'_>, since: FeedPoint, next: FeedPoint, data: &[u8]) -> Vec<u8> {
    let head = serde_json::json!({
        "type": "changes",
        "workspace_id": e.workspace,
        "endpoint_id": e.endpoint_id,
        "since": (e.token)(since),
        "next_since": (e.token)(next),
    })
    .to_string();
    let mut out = Vec::with_capacity(head.len() + data.len() + 10);
    out.extend_from_slice(&head.as_bytes()[..head.len() - 1]);
    out.extend_from_slice(b",\"data\":");
    out.extend_from_slice(data);
    out.push(b'}');
    out
}

#[cfg(test)]
mod tests;
