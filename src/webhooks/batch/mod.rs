//! What one delivery carries: the change feed's next answer after the endpoint's point,
//! as `GET /v1/changes` gives it, in an envelope naming the workspace, the endpoint and
//! the feed tokens before and after it.
//!
//! A batch holds at most [`MOST_CHANGES`] changes and [`MOST_BYTES`] of body. A page of
//! the feed that would be larger is picked again with half the changes, until it fits:
//! the feed's first `n` records after a point are the same whatever the page's limit,
//! so a smaller batch is a prefix of the larger one and its `next_since` continues
//! without a gap. A single change larger than the whole budget is sent alone.

use super::runtime;
use actors::changes::feed::{feed_pick, feed_range, FeedError, FeedPage, PartCache, Picked};
use actors::changes::tokens::{FeedPoint, WHOLE_PART};
use actors::model::Entity;
use actors::state::WorkspaceState;
use actors::store::{LogWindow, Store, StoreError};
use std::sync::Arc;
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
    ws: &Arc<WorkspaceState>,
    since: FeedPoint,
    entities: &[Entity],
    envelope: &Envelope<'_>,
) -> Result<Next, FeedError> {
    let mut limit = MOST_CHANGES;
    loop {
        let picked = feed_pick(store, cache, ws, since, entities, limit).await?;
        let page = render(ws, picked).await?;
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

/// The delivery between `since` and `next` made again (a delivery in flight whose body
/// was lost with the node that made it): the same changes, each record as `ws` shows
/// it now. `None` when it no longer fits in [`MOST_BYTES`] (its records grew): it is
/// then made afresh, as a new delivery.
pub async fn range_batch(
    store: &dyn Store,
    cache: &PartCache,
    ws: &Arc<WorkspaceState>,
    (since, next): (FeedPoint, FeedPoint),
    entities: &[Entity],
    envelope: &Envelope<'_>,
) -> Result<Option<Batch>, FeedError> {
    let picked = feed_range(store, cache, ws, since, next, entities).await?;
    let page = render(ws, picked).await?;
    let body = body(envelope, since, next, &page.data);
    if body.len() > MOST_BYTES && page.changes > 1 {
        return Ok(None);
    }
    Ok(Some(Batch {
        since,
        next,
        changes: page.changes,
        body,
    }))
}

/// Changes committed after `point` up to position `head`: the entries of the log's
/// parts after it (an endpoint's `backlog`). What remains of a part the point is inside
/// is counted from that part, read; the parts after it are counted by the store
/// ([`Store::count_entries`]), from the count kept beside each, none read: the cost is
/// the parts', not the changes'. A point the log no longer holds counts what is left.
pub async fn backlog(
    store: &dyn Store,
    ws: Uuid,
    point: FeedPoint,
    head: u64,
) -> Result<u64, StoreError> {
    let mut total = 0;
    if point.index != WHOLE_PART && point.position <= head {
        let before = if point.part > 0 {
            (point.position, point.part - 1)
        } else {
            (point.position.saturating_sub(1), u32::MAX)
        };
        let window = LogWindow {
            after: before,
            upto: head,
            max_parts: 1,
        };
        let read = store.read_changes(ws, window).await?;
        if let Some(part) = read
            .parts
            .first()
            .filter(|p| (p.position, p.part) == (point.position, point.part))
        {
            total += actors::store::count_of(part)?.saturating_sub(u64::from(point.index));
        }
    }
    let after = store
        .count_entries(ws, (point.position, point.part), head)
        .await?;
    Ok(total + after)
}

/// Changes from which a batch is rendered on the low-priority pool (a catch-up's),
/// rather than on the delivery's task (a live endpoint's few, at once).
const BULK_FROM: usize = 256;

/// The changes picked, rendered as `ws` shows them: a large batch on
/// [`runtime::bulk`], below the API's priority, and awaited without holding a thread.
async fn render(ws: &Arc<WorkspaceState>, picked: Picked) -> Result<FeedPage, FeedError> {
    if picked.len() < BULK_FROM {
        return picked.render(ws, Vec::new());
    }
    let (done, rendered) = tokio::sync::oneshot::channel();
    let ws = ws.clone();
    runtime::bulk().spawn(move || {
        let _ = done.send(picked.render(&ws, Vec::new()));
    });
    rendered
        .await
        .map_err(|_| FeedError::Store(StoreError::Other("a batch's render stopped".into())))?
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
