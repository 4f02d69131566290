//! What the feed keeps between requests, owned by the feed: pages made ahead of their
//! requests ([`PagesAhead`]) and each workspace's latest first-page token
//! ([`SinceTokens`]). All of it a cache: dropped, it is made again.

use crate::telemetry::metrics::Metrics;
use actors::changes::feed::{FeedError, FeedPage};
use actors::changes::tokens::FeedPoint;
use actors::model::Entity;
use actors::state::WorkspaceState;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;

/// What the feed keeps between requests, all of it a cache: dropped, it is made again.
#[derive(Default)]
pub struct FeedCaches {
    /// The change log parts read last, decoded (`actors::changes::feed::PartCache`).
    pub log_parts: actors::changes::feed::PartCache,
    /// Pages made before they were asked for ([`PagesAhead`]).
    pub pages_ahead: PagesAhead,
    /// The latest first-page feed token of each workspace ([`changes_since`]).
    pub since_tokens: SinceTokens,
}

/// Each workspace's latest first-page token, with the position it names.
#[derive(Default)]
pub struct SinceTokens(pub(super) dashmap::DashMap<uuid::Uuid, (u64, Arc<str>)>);

/// What an answer of the feed is made from: the page after `since` of `state`.
#[derive(Clone)]
pub(super) struct Asked {
    pub(super) state: Arc<WorkspaceState>,
    pub(super) since: FeedPoint,
    pub(super) entities: Vec<Entity>,
    pub(super) limit: usize,
}

impl Asked {
    pub(super) fn same_page(&self, other: &Asked) -> bool {
        // The very state (not merely its position): the answer is exactly the one
        // this request would make.
        Arc::ptr_eq(&self.state, &other.state)
            && self.since == other.since
            && self.entities == other.entities
            && self.limit == other.limit
    }
}

/// Pages being made, or made, before they were asked for (see the module's docs).
/// Holds the last few (a page is up to some 500 KB).
#[derive(Default)]
pub struct PagesAhead {
    pages: parking_lot::Mutex<VecDeque<Ahead>>,
}

pub(super) struct Ahead {
    pub(super) asked: Asked,
    pub(super) page: oneshot::Receiver<Result<FeedPage, FeedError>>,
    /// The chain that made it: told when the page goes untaken.
    pub(super) chain: Arc<Chain>,
    /// The chain's room for this page, given back when it is taken (or dropped).
    pub(super) _room: tokio::sync::OwnedSemaphorePermit,
}

/// Pages one chain (one client catching up) makes ahead of its requests: enough that the
/// next is ready when the client asks for it, while the answer before it travels and the
/// client takes it in (2 ahead reached 283k changes/s on PostgreSQL, 3 reached 365k:
/// the store's reads of log parts come in bursts).
pub(super) const PAGES_PER_CHAIN: usize = 3;

/// Pages [`PagesAhead`] keeps; the oldest goes first.
const PAGES_AHEAD: usize = 8;

/// How long a chain waits for its client to take a page before it stops.
pub(super) const CHAIN_IDLE: Duration = Duration::from_secs(2);

/// One client's pages in the making: it goes on from page to page while its client
/// takes them, and stops at the end of the log, on an error, when a page of it is
/// dropped untaken, or when its client stops asking.
#[derive(Default)]
pub(super) struct Chain {
    pub(super) dropped: std::sync::atomic::AtomicBool,
}

impl PagesAhead {
    /// Drops `chain`'s pages that are still here, untaken.
    pub(super) fn forget(&self, chain: &Arc<Chain>, metrics: &Metrics) {
        let mut pages = self.pages.lock();
        let before = pages.len();
        pages.retain(|a| !Arc::ptr_eq(&a.chain, chain));
        let forgotten = before - pages.len();
        drop(pages);
        for _ in 0..forgotten {
            metrics.page_ahead(false);
        }
    }

    pub(super) fn put(&self, ahead: Ahead, metrics: &Metrics) {
        let mut pages = self.pages.lock();
        let mut unused = Vec::new();
        if let Some(at) = pages.iter().position(|a| a.asked.same_page(&ahead.asked)) {
            unused.extend(pages.remove(at));
        }
        if pages.len() == PAGES_AHEAD {
            unused.extend(pages.pop_front());
        }
        pages.push_back(ahead);
        drop(pages);
        for old in unused {
            old.chain
                .dropped
                .store(true, std::sync::atomic::Ordering::Relaxed);
            metrics.page_ahead(false);
        }
    }

    /// The page `asked` names when it was made ahead, waited for if still being made.
    /// `None` when it was not made ahead (or its maker is gone).
    pub(super) async fn take_page(
        &self,
        asked: &Asked,
        metrics: &Metrics,
    ) -> Option<Result<FeedPage, FeedError>> {
        let ahead = {
            let mut pages = self.pages.lock();
            let at = pages.iter().position(|a| a.asked.same_page(asked))?;
            pages.remove(at)?
        };
        metrics.page_ahead(true);
        ahead.page.await.ok()
    }
}
