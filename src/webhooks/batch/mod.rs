//! What one delivery carries: the change feed's next answer after the endpoint's point,
//! as `GET /v1/changes` gives it, in an envelope naming the workspace, the endpoint and
//! the feed tokens before and after it.
//!
//! A batch holds at most [`MOST_CHANGES`] changes and [`MOST_BYTES`] of body. A page of
//! the feed that would be larger is picked again with half the changes, until it fits:
//! the feed's first `n` records after a point are the same whatever the page's limit,
//! so a smaller batch is a prefix of the larger one and its `next_since` continues
//! without a gap. A single change larger than the whole budget is sent alone.
//!
//! # One render for endpoints at one point
//! Endpoints that stand at the same point with the same entities ask for the same
//! page: ten replayed from one token walk the same points batch after batch, and ten
//! caught up wake on the same commit. [`Pages`] keeps each page the feed made for one
//! of them a moment (at most [`PAGE_KEPT`], [`PAGES_KEPT_BYTES`] in all), and the others
//! take it rather than render it again; one that asks while it is being made waits for
//! it. Each still writes its own envelope around the page's `data` and checks its own
//! body against [`MOST_BYTES`], and holds that body for every retry of its delivery.
//! Sound because a page is a feed answer as a published state gives it, and is taken
//! only where that answer is one the endpoint could have had:
//! - at the same commit position as the endpoint's state: the answer it would make;
//! - or, for a page that stopped at its limit with more after it, at an earlier
//!   position than the endpoint's: the first `limit` changes after a point are the
//!   log's, the same for any later state, and each record is shown as that earlier
//!   published state showed it. Its later versions are changes after the page's end,
//!   delivered next. A page that ended at its state's head is never taken by an
//!   endpoint whose state has more, which would get less than it could.

use super::runtime;
use actors::changes::feed::{feed_pick, feed_range, FeedError, FeedPage, PartCache, Picked};
use actors::changes::tokens::{FeedPoint, WHOLE_PART};
use actors::model::Entity;
use actors::state::WorkspaceState;
use actors::store::{LogWindow, Store, StoreError};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
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
    /// When the newest of its changes was committed (ms since the epoch).
    pub newest_commit_ms: Option<i64>,
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

/// Where a batch's page is read from: the store and its part cache, and the pages
/// made lately for endpoints at the same points.
#[derive(Clone, Copy)]
pub struct Feed<'a> {
    pub store: &'a dyn Store,
    pub cache: &'a PartCache,
    pub pages: &'a Pages,
}

/// The changes of `entities` after `since` as `ws` shows them, as one delivery's body,
/// or where the feed found none up to.
pub async fn next_batch(
    feed: Feed<'_>,
    ws: &Arc<WorkspaceState>,
    since: FeedPoint,
    entities: &[Entity],
    envelope: &Envelope<'_>,
) -> Result<Next, FeedError> {
    let mut limit = MOST_CHANGES;
    loop {
        let page = feed.pages.page(feed, ws, since, entities, limit).await?;
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
                newest_commit_ms: page.newest_commit_ms,
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
    feed: Feed<'_>,
    ws: &Arc<WorkspaceState>,
    (since, next): (FeedPoint, FeedPoint),
    entities: &[Entity],
    envelope: &Envelope<'_>,
) -> Result<Option<Batch>, FeedError> {
    let picked = feed_range(feed.store, feed.cache, ws, since, next, entities).await?;
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
        newest_commit_ms: page.newest_commit_ms,
    }))
}

/// How long a page is kept for other endpoints (see the module's docs).
pub const PAGE_KEPT: Duration = Duration::from_secs(1);
/// Most bytes of pages kept: the oldest go first past it.
pub const PAGES_KEPT_BYTES: usize = 8 << 20;

/// The pages made lately, for endpoints at the same points (see the module's docs).
#[derive(Default)]
pub struct Pages {
    kept: Mutex<VecDeque<Arc<Kept>>>,
    renders: AtomicU64,
}

/// What a page is asked for by: which workspace, after which point, of which entities
/// (a set, as bits of their tags), at most how many.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PageKey {
    workspace: Uuid,
    since: FeedPoint,
    entities: u32,
    limit: usize,
}

/// A page kept, or being made.
struct Kept {
    key: PageKey,
    /// The commit position of the state it is made from.
    position: u64,
    made_at: Instant,
    page: tokio::sync::OnceCell<Arc<FeedPage>>,
}

impl Kept {
    /// Whether an endpoint whose state is at `position` may take this page (see the
    /// module's docs); one still being made is waited for only at its own position.
    fn serves(&self, position: u64) -> bool {
        match self.page.get() {
            None => self.position == position,
            Some(page) => self.position == position || (page.has_more && self.position <= position),
        }
    }

    fn bytes(&self) -> usize {
        self.page.get().map_or(0, |p| p.data.len())
    }
}

impl Pages {
    /// The feed's page of at most `limit` changes of `entities` after `since`, as `ws`
    /// or a state it may take a page from shows them (see the module's docs).
    async fn page(
        &self,
        feed: Feed<'_>,
        ws: &Arc<WorkspaceState>,
        since: FeedPoint,
        entities: &[Entity],
        limit: usize,
    ) -> Result<Arc<FeedPage>, FeedError> {
        let key = PageKey {
            workspace: ws.id(),
            since,
            entities: entities.iter().fold(0, |bits, e| bits | 1 << e.tag()),
            limit,
        };
        let kept = self.find_or_add(key, ws.position);
        let page = kept
            .page
            .get_or_try_init(|| async {
                self.renders.fetch_add(1, Ordering::Relaxed);
                let picked = feed_pick(feed.store, feed.cache, ws, since, entities, limit).await?;
                render(ws, picked).await.map(Arc::new)
            })
            .await?;
        self.trim();
        Ok(page.clone())
    }

    /// The page kept for `key` that a state at `position` may take, or a new one to be
    /// made at it.
    fn find_or_add(&self, key: PageKey, position: u64) -> Arc<Kept> {
        let mut kept = self.kept.lock();
        let now = Instant::now();
        kept.retain(|k| now.duration_since(k.made_at) < PAGE_KEPT);
        if let Some(k) = kept.iter().find(|k| k.key == key && k.serves(position)) {
            return k.clone();
        }
        let k = Arc::new(Kept {
            key,
            position,
            made_at: now,
            page: tokio::sync::OnceCell::new(),
        });
        kept.push_back(k.clone());
        k
    }

    /// The oldest pages dropped while those kept hold more than [`PAGES_KEPT_BYTES`].
    fn trim(&self) {
        let mut kept = self.kept.lock();
        let mut bytes: usize = kept.iter().map(|k| k.bytes()).sum();
        while bytes > PAGES_KEPT_BYTES {
            let Some(old) = kept.pop_front() else { break };
            bytes -= old.bytes();
        }
    }

    /// How many pages have been rendered.
    pub fn renders(&self) -> u64 {
        self.renders.load(Ordering::Relaxed)
    }
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
        // Caught, or rayon would abort the process: a render that panics drops `done`
        // unsent, and the batch fails as one whose store read failed (tried again).
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
            let _ = done.send(picked.render(&ws, Vec::new()));
        }));
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
