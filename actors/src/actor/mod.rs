//! The workspace actor: the only writer of one workspace's state.
//!
//! It handles one message at a time, and a write's whole path — validate, plan the next
//! state, write blobs, commit to the store — runs as an atomic response, so no other write
//! of the workspace interleaves with it. Only after the store has committed does the actor
//! publish the next state; a failed commit leaves memory untouched.

mod handlers;
mod messages;

pub use messages::*;

use crate::registry::Registry;
use crate::state::WorkspaceState;
use actix::{Actor, AsyncContext, Context};
use arc_swap::ArcSwap;
use std::sync::Arc;
use uuid::Uuid;

pub struct WorkspaceActor {
    id: Uuid,
    /// The published state: readers load it, only this actor stores into it.
    view: Arc<ArcSwap<WorkspaceState>>,
    registry: Arc<Registry>,
    /// A search index rebuild is running on its own thread.
    rebuilding: bool,
}

impl WorkspaceActor {
    pub fn new(id: Uuid, view: Arc<ArcSwap<WorkspaceState>>, registry: Arc<Registry>) -> Self {
        WorkspaceActor {
            id,
            view,
            registry,
            rebuilding: false,
        }
    }

    /// Publishes a committed state to readers, then starts a search index rebuild if the
    /// new state's deltas have grown enough.
    fn publish(&mut self, next: WorkspaceState, ctx: &mut Context<Self>) {
        self.view.store(Arc::new(next));
        self.maybe_rebuild(ctx);
    }

    /// Merges the search deltas into new bases on a thread of its own, so neither this
    /// actor nor any reader waits; the result comes back as [`IndexRebuilt`].
    fn maybe_rebuild(&mut self, ctx: &mut Context<Self>) {
        if self.rebuilding {
            return;
        }
        let Some(job) = self.view.load().search.rebuild_job() else {
            return;
        };
        self.rebuilding = true;
        let addr = ctx.address();
        let workspace = self.id;
        let spawned = std::thread::Builder::new()
            .name("index-rebuild".into())
            .spawn(move || {
                let started = std::time::Instant::now();
                let done = job.run();
                tracing::debug!(%workspace, elapsed_ms = started.elapsed().as_millis() as u64, "search index rebuilt");
                addr.do_send(IndexRebuilt(done));
            });
        if let Err(e) = spawned {
            // The deltas keep answering correctly; the next write tries again.
            tracing::warn!(workspace = %self.id, error = %e, "could not start a search index rebuild");
            self.rebuilding = false;
        }
    }
}

impl Actor for WorkspaceActor {
    // Callers use `send`, which waits for mailbox room rather than dropping a message, so
    // the default capacity is back-pressure, not loss.
    type Context = Context<Self>;
}
