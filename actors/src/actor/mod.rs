//! The workspace actor: the only writer of one workspace's state.
//!
//! Writes (API writes and admin imports) enter a queue. The actor commits one batch at a
//! time: every API write queued behind an in-flight commit goes into the next batch
//! (group commit), planned one after another against one working copy of the state and
//! written to the store in one transaction. Only after the store has committed does the
//! actor publish the new state and answer each write of the batch; a failed commit
//! answers every write of the batch with the store's error and leaves memory untouched.
//! An import is always a batch of its own.

mod handlers;
mod messages;
mod reclaim;
#[cfg(test)]
mod tests;

pub(crate) use handlers::lower_cpu_priority;
pub use messages::*;

use crate::env::ActorEnv;
use crate::search::SearchRebuilt;
use crate::state::WorkspaceState;
use crate::writes::{WriteError, WriteOp};
use actix::{Actor, Addr, ArbiterHandle, AsyncContext, Context};
use arc_swap::ArcSwap;
use std::collections::VecDeque;
use std::sync::Arc;
use tokio::sync::oneshot;
use uuid::Uuid;

/// A queued piece of work and where its answer goes.
enum Job {
    /// An API write, and when it was queued (see `QUEUE_TIMEOUT`).
    Write(
        WriteOp,
        oneshot::Sender<Result<WriteDone, WriteError>>,
        std::time::Instant,
    ),
    Import(
        crate::snapshot::Snapshot,
        oneshot::Sender<Result<ImportReport, ImportError>>,
    ),
    /// The published state with the store's commit position it reflects (for a
    /// checkpoint): read between batches, so the two match.
    Position(oneshot::Sender<Result<Positioned, crate::store::StoreError>>),
    /// Catching up with another server's commits (`crate::follow`).
    Follow(oneshot::Sender<Result<Followed, crate::store::StoreError>>),
    /// Answered once every job queued before it is done (`Drain`).
    Drain(oneshot::Sender<()>),
}

/// A running workspace: the actor that writes it and the state it last published.
#[derive(Clone)]
pub struct WorkspaceHandle {
    pub addr: Addr<WorkspaceActor>,
    /// Swapped by the actor after each commit; loaded by readers without locking.
    pub view: Arc<ArcSwap<WorkspaceState>>,
    /// Told after each publication: long-polling readers of the change feed wait on it.
    pub published: Arc<tokio::sync::Notify>,
}

impl WorkspaceHandle {
    /// The current state: one consistent view for as long as the caller holds it.
    pub fn state(&self) -> Arc<WorkspaceState> {
        self.view.load_full()
    }

    /// Waits until a state after `position` is published, or `deadline` passes; the
    /// state then current either way.
    pub async fn published_after(
        &self,
        position: u64,
        deadline: tokio::time::Instant,
    ) -> Arc<WorkspaceState> {
        wait_published(&self.published, || self.state(), position, deadline).await
    }
}

/// Waits until `state` gives a state after `position`, woken by `published` (told after
/// each publication), or `deadline` passes; the state then current either way. The wait
/// under [`WorkspaceHandle::published_after`], for anything that publishes as it does.
pub async fn wait_published(
    published: &tokio::sync::Notify,
    state: impl Fn() -> Arc<WorkspaceState>,
    position: u64,
    deadline: tokio::time::Instant,
) -> Arc<WorkspaceState> {
    loop {
        let notified = published.notified();
        tokio::pin!(notified);
        // Registered before the state is read: a publication between the read and the
        // wait still wakes it.
        notified.as_mut().enable();
        let now = state();
        if now.position > position {
            return now;
        }
        if tokio::time::timeout_at(deadline, notified).await.is_err() {
            return state();
        }
    }
}

pub struct WorkspaceActor {
    id: Uuid,
    /// The published state: readers load it, only this actor stores into it.
    view: Arc<ArcSwap<WorkspaceState>>,
    /// Told after each publication (see [`WorkspaceHandle::published`]).
    published: Arc<tokio::sync::Notify>,
    /// Everything the actor reaches beyond its state.
    env: Arc<ActorEnv>,
    queue: VecDeque<Job>,
    /// A batch is being committed; the next one waits for it.
    committing: bool,
    /// Blobs released by the last import are being removed, or the blob store is being
    /// swept after the load; the next import waits for it, API writes do not
    /// (`reclaim.rs`).
    reclaiming: bool,
    /// A search index rebuild is running on its own thread.
    rebuilding: bool,
    /// A finished rebuild that arrived while a batch was committing: installed into the
    /// state that batch publishes.
    rebuilt: Option<SearchRebuilt>,
    /// A batch the store did not confirm (it stopped answering mid-commit): it may or may
    /// not have committed. No further batch starts until the store says which.
    in_doubt: Option<InDoubt>,
    /// A timer is set for the oldest queued write's deadline.
    expiry_armed: bool,
    /// A retention cutoff that arrived while a batch was committing: tombstones older
    /// than it are forgotten from the state that batch publishes.
    forget_before: Option<crate::time::Stamp>,
    /// Records the last commit touched whose rows the store has yet to take
    /// (`Store::flush_touched`, see `crate::store::Touched`): stored right after that
    /// commit, before any other job, and kept here while the store cannot take them.
    unflushed: Option<Unflushed>,
    /// Whether the store may hold a touch marker this actor did not leave (one left by a
    /// server that stopped between a commit and its flush, here or on another node):
    /// true from the start and after the state is read afresh from the store, until a
    /// look or a commit of this actor's shows there is none. The store refuses to commit
    /// past a marker, so one is settled before the next write or import.
    marker_unknown: bool,
}

/// A batch whose commit outcome is unknown, and what to publish if it did commit.
struct InDoubt {
    batch: Uuid,
    next: WorkspaceState,
    /// What it touched, stored if it did commit.
    touched: Option<crate::store::Touched>,
}

/// Touched records of a commit, whose rows the store has yet to take: the marker it
/// left (stored from the published state, which holds them as that commit made them).
type Unflushed = crate::store::TouchMarker;

impl WorkspaceActor {
    /// Starts the actor of `state` on `arbiter`, publishing `state` as its first view.
    pub fn spawn(
        state: WorkspaceState,
        env: Arc<ActorEnv>,
        arbiter: &ArbiterHandle,
    ) -> WorkspaceHandle {
        let id = state.id();
        let view = Arc::new(ArcSwap::from_pointee(state));
        let published = Arc::new(tokio::sync::Notify::new());
        let actor = WorkspaceActor::new(id, view.clone(), published.clone(), env);
        let addr = WorkspaceActor::start_in_arbiter(arbiter, move |_| actor);
        WorkspaceHandle {
            addr,
            view,
            published,
        }
    }

    fn new(
        id: Uuid,
        view: Arc<ArcSwap<WorkspaceState>>,
        published: Arc<tokio::sync::Notify>,
        env: Arc<ActorEnv>,
    ) -> Self {
        WorkspaceActor {
            id,
            view,
            published,
            env,
            queue: VecDeque::new(),
            committing: false,
            reclaiming: false,
            rebuilding: false,
            rebuilt: None,
            in_doubt: None,
            expiry_armed: false,
            forget_before: None,
            unflushed: None,
            marker_unknown: true,
        }
    }

    /// Publishes a committed state to readers, then starts a search index rebuild if the
    /// new state's deltas have grown enough.
    fn publish(
        &mut self,
        mut next: WorkspaceState,
        ctx: &mut Context<Self>,
    ) -> Arc<WorkspaceState> {
        if let Some(done) = self.rebuilt.take() {
            next.search.install(done);
        }
        if let Some(cutoff) = self.forget_before.take() {
            next.tombstones.forget_before(cutoff);
        }
        let next = Arc::new(next);
        self.install_view(next.clone());
        self.published.notify_waiters();
        self.maybe_rebuild(ctx);
        next
    }

    /// Makes `next` the state readers see, and counts it (`ActorEnv::publications`).
    fn install_view(&self, next: Arc<WorkspaceState>) {
        self.view.store(next);
        self.env
            .publications
            .fetch_add(1, std::sync::atomic::Ordering::Release);
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
