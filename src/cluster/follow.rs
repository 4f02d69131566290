//! Followers: a node that holds a workspace it does not write keeps its copy in step
//! with the writer's commits, from the change log (`actors::follow`).
//!
//! Every [`FOLLOW_EVERY`] (every [`FOLLOW_QUIET`] once nothing has been committed for
//! a while) the node asks the store, in one statement, which commit positions moved
//! since it last asked (a horizon read: no row at all while nothing is written, however
//! many workspaces there are), and has each copy it follows that is
//! behind catch up (its actor reads the log after its position and the records it
//! names). So a write committed by the writer is in every holder's copy a few tens of
//! milliseconds later: reads a node answers from its own copy (its writer unreachable)
//! see it, and a holder that becomes the writer is already at the store's position. A
//! catch-up that fails is tried again at the next read.
//!
//! The same read finds new workspaces: a position that moved for a workspace this node
//! does not know is a first import that committed (once the workspace's row exists,
//! which the import writes last), and the rounds place it at once.

use super::leases::Held;
use super::Membership;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

/// How often a node looks for commits to follow while commits come.
pub const FOLLOW_EVERY: Duration = Duration::from_millis(20);

/// How often it looks once none has come for [`QUIET_AFTER`] looks: the first commit
/// after a quiet spell is followed up to this much later (a node that takes a
/// workspace over catches up first anyway), and an idle node asks the store ten times a
/// second rather than fifty.
pub const FOLLOW_QUIET: Duration = Duration::from_millis(100);
const QUIET_AFTER: u32 = 50;

/// Most copies caught up at once.
const FOLLOWS_AT_ONCE: usize = 8;

impl Membership {
    /// Follows the writers of the workspaces this node holds and does not write, and
    /// finds new workspaces, for as long as the process runs (on its own, there is
    /// nothing to follow).
    pub async fn follow_writers(self: Arc<Self>, held: Arc<dyn Held>) {
        if !self.store.shared() {
            return;
        }
        let mut horizon = 0;
        // Positions seen and not yet followed (or whose catch-up failed).
        let mut behind: HashMap<Uuid, u64> = HashMap::new();
        let mut failing = false;
        let mut empty = 0u32;
        loop {
            let pause = if empty >= QUIET_AFTER {
                FOLLOW_QUIET
            } else {
                FOLLOW_EVERY
            };
            tokio::time::sleep(pause).await;
            match self.store.positions_since(horizon).await {
                Ok(since) => {
                    failing = false;
                    horizon = since.next;
                    empty = if since.rows.is_empty() {
                        empty.saturating_add(1)
                    } else {
                        0
                    };
                    for (w, p) in since.rows {
                        let at = behind.entry(w).or_insert(p);
                        *at = (*at).max(p);
                    }
                }
                Err(e) => {
                    if !std::mem::replace(&mut failing, true) {
                        tracing::warn!(error = %format!("{e:#}"), "reading the commit positions to follow");
                    }
                    continue;
                }
            }
            if behind.is_empty() {
                continue;
            }
            let mut follow = Vec::new();
            let mut unknown = Vec::new();
            for (w, p) in behind.drain() {
                if self.fences.epoch(w).is_some() {
                    // Written here: nothing to follow.
                    continue;
                }
                match held.position(w) {
                    Some(at) if at < p => follow.push(w),
                    Some(_) => {}
                    None if !self.knows(w).await => unknown.push(w),
                    None => {}
                }
            }
            let failed = futures_util::future::join_all(
                follow
                    .chunks(follow.len().div_ceil(FOLLOWS_AT_ONCE).max(1))
                    .map(|chunk| {
                        let held = held.clone();
                        async move {
                            let mut failed = Vec::new();
                            for w in chunk {
                                if let Err(e) = held.follow(*w).await {
                                    tracing::warn!(workspace = %w, error = %format!("{e:#}"), "following the workspace's writer");
                                    failed.push(*w);
                                }
                            }
                            failed
                        }
                    }),
            )
            .await;
            for w in failed.into_iter().flatten() {
                // Tried again at the next read, whatever it brings.
                behind.insert(w, u64::MAX);
            }
            if !unknown.is_empty() {
                match self.store.existing(&unknown).await {
                    Ok(found) => self.found(found).await,
                    Err(e) => {
                        tracing::warn!(error = %format!("{e:#}"), "looking for new workspaces");
                        behind.extend(unknown.into_iter().map(|w| (w, 0)));
                    }
                }
            }
        }
    }
}
