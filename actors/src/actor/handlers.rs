//! How the workspace actor handles each message, and its commit loop.

use super::{
    Drain, Follow, Followed, ForgetTombstones, Import, ImportError, ImportReport, IndexRebuilt,
    Job, Positioned, ReadPosition, WorkspaceActor, Write, WriteDone,
};
use super::{InDoubt, Unflushed};
use crate::env::CommitKind;
use crate::loader::{LOAD_RETRY_FIRST, LOAD_RETRY_MAX};
use crate::snapshot::{plan_import, Applied, ApplyError, BuildNext};
use crate::state::WorkspaceState;
use crate::store::StoreError;
use crate::writes::{plan_batch, PlannedBatch, WriteError};
use actix::{ActorFutureExt, AsyncContext, Context, Handler, ResponseFuture, WrapFuture};
use std::collections::VecDeque;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;
use uuid::Uuid;

impl Handler<Write> for WorkspaceActor {
    type Result = ResponseFuture<Result<WriteDone, WriteError>>;

    fn handle(&mut self, msg: Write, ctx: &mut Context<Self>) -> Self::Result {
        let (tx, rx) = oneshot::channel();
        self.queue.push_back(Job::Write(msg.0, tx, Instant::now()));
        self.pump(ctx);
        self.expire_later(ctx);
        Box::pin(async move { rx.await.unwrap_or(Err(WriteError::Stopped)) })
    }
}

impl Handler<Import> for WorkspaceActor {
    type Result = ResponseFuture<Result<ImportReport, ImportError>>;

    fn handle(&mut self, msg: Import, ctx: &mut Context<Self>) -> Self::Result {
        let (tx, rx) = oneshot::channel();
        self.queue.push_back(Job::Import(msg.0, tx));
        self.pump(ctx);
        Box::pin(async move { rx.await.unwrap_or(Err(ImportError::Stopped)) })
    }
}

impl Handler<ReadPosition> for WorkspaceActor {
    type Result = ResponseFuture<Result<Positioned, StoreError>>;

    fn handle(&mut self, _: ReadPosition, ctx: &mut Context<Self>) -> Self::Result {
        let (tx, rx) = oneshot::channel();
        self.queue.push_back(Job::Position(tx));
        self.pump(ctx);
        Box::pin(async move {
            rx.await
                .unwrap_or_else(|_| Err(StoreError::Unavailable("the workspace stopped".into())))
        })
    }
}

impl Handler<Follow> for WorkspaceActor {
    type Result = ResponseFuture<Result<Followed, StoreError>>;

    fn handle(&mut self, _: Follow, ctx: &mut Context<Self>) -> Self::Result {
        let (tx, rx) = oneshot::channel();
        self.queue.push_back(Job::Follow(tx));
        self.pump(ctx);
        Box::pin(async move {
            rx.await
                .unwrap_or_else(|_| Err(StoreError::Unavailable("the workspace stopped".into())))
        })
    }
}

impl Handler<Drain> for WorkspaceActor {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _: Drain, ctx: &mut Context<Self>) -> Self::Result {
        let (tx, rx) = oneshot::channel();
        self.queue.push_back(Job::Drain(tx));
        self.pump(ctx);
        Box::pin(async move {
            let _ = rx.await;
        })
    }
}

impl Handler<IndexRebuilt> for WorkspaceActor {
    type Result = ();

    /// Swaps the new bases in; delta entries written since the snapshot are kept. While a
    /// batch is committing, its next state (planned from the current one) would undo the
    /// swap, so the result waits and goes into that state instead.
    fn handle(&mut self, msg: IndexRebuilt, ctx: &mut Context<Self>) {
        self.rebuilding = false;
        if self.committing {
            self.rebuilt = Some(msg.0);
            return;
        }
        let mut next = (*self.view.load_full()).clone();
        if next.search.install(msg.0) {
            self.install_view(std::sync::Arc::new(next));
        }
        self.maybe_rebuild(ctx);
    }
}

impl Handler<ForgetTombstones> for WorkspaceActor {
    type Result = usize;

    /// As [`IndexRebuilt`]: while a batch commits, its next state (planned from the
    /// current one) would bring them back, so the cutoff goes into that state instead.
    fn handle(&mut self, msg: ForgetTombstones, _: &mut Context<Self>) -> usize {
        if self.committing {
            let cutoff = self.forget_before.map_or(msg.0, |c| c.max(msg.0));
            self.forget_before = Some(cutoff);
            return 0;
        }
        let current = self.view.load_full();
        let mut tombstones = current.tombstones.clone();
        let forgotten = tombstones.forget_before(msg.0);
        if forgotten > 0 {
            let mut next = (*current).clone();
            next.tombstones = tombstones;
            self.install_view(std::sync::Arc::new(next));
        }
        forgotten
    }
}

type WriteReply = oneshot::Sender<Result<WriteDone, WriteError>>;

/// Longest wait for the store to confirm a batch of API writes.
pub const WRITE_COMMIT_TIMEOUT: Duration = Duration::from_secs(5);
/// A batch of API writes whose commit takes longer is logged as slow.
pub const SLOW_COMMIT: Duration = Duration::from_secs(1);

/// Imports of at most this many records are planned at the priority of the threads that
/// answer requests: a user renamed or a stage brought up to date is a write like any
/// other, and at a lowered priority it waited behind whatever else ran (beside 100
/// writes a second, one user's import had a p99 above 5 ms where a PATCH had 3-4 ms).
/// Larger ones give way to the API while they plan and encode.
pub const SMALL_IMPORT_RECORDS: usize = 1_000;
/// Longest wait for the store to say whether an unconfirmed batch took effect.
pub const SETTLE_TIMEOUT: Duration = Duration::from_secs(3);
/// How soon an unconfirmed batch is settled when no write arrives to prompt it.
pub const SETTLE_RETRY: Duration = Duration::from_secs(2);
/// Longest an API write waits in the queue (behind an import, a slow commit or a batch
/// being settled) before it is refused with 503: its client gets the same bounded answer
/// as one whose commit the store does not confirm, and it is certain that nothing of it
/// was applied, since it never left the queue.
pub const QUEUE_TIMEOUT: Duration = WRITE_COMMIT_TIMEOUT;

/// Runs a store call as a task of its own and waits for it at most `limit`. The task is
/// never cancelled (a statement cut off would leave its connection in an unknown
/// state): a late answer is simply not used.
async fn bounded<T: Send + 'static>(
    limit: Duration,
    what: &'static str,
    call: impl std::future::Future<Output = Result<T, StoreError>> + Send + 'static,
) -> Result<T, StoreError> {
    match tokio::time::timeout(limit, tokio::spawn(call)).await {
        Ok(Ok(res)) => res,
        Ok(Err(e)) => Err(StoreError::Unavailable(format!("{what} failed: {e}"))),
        Err(_) => Err(StoreError::Unavailable(
            "the store did not answer in time".into(),
        )),
    }
}

impl WorkspaceActor {
    /// Starts committing the next batch unless one is in flight. While blobs are being
    /// reclaimed or swept, an import waits (it writes blobs); API writes do not. A
    /// commit whose outcome is unknown is settled first.
    pub(super) fn pump(&mut self, ctx: &mut Context<Self>) {
        while !self.committing {
            if self.reclaiming && matches!(self.queue.front(), Some(Job::Import(..))) {
                return;
            }
            if self.in_doubt.is_some() {
                if !self.queue.is_empty() {
                    self.settle(ctx);
                }
                return;
            }
            let commits_next = matches!(self.queue.front(), Some(Job::Write(..) | Job::Import(..)));
            if self.unflushed.is_some() || (self.marker_unknown && commits_next) {
                self.flush_touched(ctx);
                return;
            }
            match self.queue.pop_front() {
                None => return,
                Some(Job::Import(snap, reply)) => self.commit_import(snap, reply, ctx),
                Some(Job::Position(reply)) => self.read_position(reply, ctx),
                Some(Job::Follow(reply)) => self.follow(reply, ctx),
                Some(Job::Drain(reply)) => {
                    let _ = reply.send(());
                }
                Some(Job::Write(op, reply, _)) => {
                    let max = self.env.write_batch_max();
                    let mut batch = vec![(op, reply)];
                    while batch.len() < max {
                        match self.queue.front() {
                            Some(Job::Write(..)) => match self.queue.pop_front() {
                                Some(Job::Write(op, reply, _)) => batch.push((op, reply)),
                                _ => unreachable!("front was a write"),
                            },
                            _ => break,
                        }
                    }
                    self.commit_writes(batch, ctx);
                }
            }
        }
    }

    /// Plans the batch ([`plan_batch`]: a refused write is answered at once and leaves no
    /// trace), then commits the rest in one transaction and publishes its state.
    fn commit_writes(
        &mut self,
        batch: Vec<(crate::writes::WriteOp, WriteReply)>,
        ctx: &mut Context<Self>,
    ) {
        let before = self.view.load_full();
        let PlannedBatch {
            next,
            mut changes,
            accepted,
            refused,
        } = plan_batch(&before, batch);
        drop(before);
        for (e, reply) in refused {
            let _ = reply.send(Err(e));
        }
        if accepted.is_empty() {
            return;
        }
        self.committing = true;
        let batch = Uuid::new_v4();
        changes.batch = Some(batch);
        let touched = changes.touched.clone();
        let store = self.env.store.clone();
        let id = self.id;
        let writes = accepted.len();
        // Bounded: a store that stopped answering (frozen, unreachable) must not hold the
        // clients; they get 503 and the batch's outcome is settled later.
        let env = self.env.clone();
        let commit = async move {
            let started = std::time::Instant::now();
            // The commit runs as a task of its own that the deadline stops waiting for but
            // never cancels: a transaction cut off mid-statement would leave its
            // connection in an unknown state, and it is settled by asking the store
            // anyway (`settle`), which waits for or ends whatever is still in flight.
            let running = tokio::spawn(async move { store.commit(id, &changes).await });
            let res = match tokio::time::timeout(WRITE_COMMIT_TIMEOUT, running).await {
                Ok(Ok(res)) => res,
                Ok(Err(e)) => Err(StoreError::Unavailable(format!(
                    "the commit task failed: {e}"
                ))),
                Err(_) => Err(StoreError::Unavailable(format!(
                    "the store did not confirm the commit within {} s",
                    WRITE_COMMIT_TIMEOUT.as_secs()
                ))),
            };
            let elapsed = started.elapsed();
            env.observer
                .commit(CommitKind::Writes, elapsed, res.is_ok());
            if elapsed > SLOW_COMMIT {
                tracing::warn!(workspace = %id, writes, elapsed_ms = elapsed.as_millis() as u64, ok = res.is_ok(), "slow commit");
            }
            res
        };
        ctx.spawn(commit.into_actor(self).map(move |res, act, ctx| {
            act.committing = false;
            if let Err(StoreError::Unavailable(_)) = &res {
                // The transaction may or may not have committed: keep its state aside
                // until the store can say (`settle`).
                act.in_doubt = Some(InDoubt {
                    batch,
                    next: next.clone(),
                    touched: touched.clone(),
                });
                act.settle_later(ctx);
            }
            match res {
                Ok(()) => {
                    let state = act.publish(next, ctx);
                    act.committed_with(state.position, touched);
                    for (written, reply) in accepted {
                        let _ = reply.send(Ok(WriteDone {
                            written,
                            state: state.clone(),
                        }));
                    }
                }
                Err(e) => {
                    if matches!(e, StoreError::TouchPending(_)) {
                        act.marker_unknown = true;
                    }
                    tracing::warn!(workspace = %act.id, error = %e, writes = accepted.len(), "commit failed; nothing applied");
                    for (_, reply) in accepted {
                        let _ = reply.send(Err(WriteError::Store(e.clone())));
                    }
                }
            }
            act.pump(ctx);
        }));
    }

    /// Asks the store whether the unconfirmed batch committed: if so its state is
    /// published (the writes are durable, though their clients were told 503), if not it
    /// is dropped; either way the queue moves on. While the store cannot answer, every
    /// queued job is refused with the store's error, promptly, and the question is asked
    /// again when the next job arrives.
    fn settle(&mut self, ctx: &mut Context<Self>) {
        let Some(doubt) = &self.in_doubt else {
            return;
        };
        self.committing = true;
        let (store, id, batch) = (self.env.store.clone(), self.id, doubt.batch);
        let ask = async move {
            // Not cancelled at the deadline either (see `commit_writes`): a late answer is
            // simply not used, and the question is asked again.
            bounded(SETTLE_TIMEOUT, "the settle task", async move {
                store.committed(id, batch).await
            })
            .await
        };
        ctx.spawn(ask.into_actor(self).map(move |res, act, ctx| {
            act.committing = false;
            match res {
                Ok(committed) => {
                    let doubt = act.in_doubt.take().expect("settling");
                    tracing::info!(workspace = %act.id, batch = %doubt.batch, committed, "settled a commit whose outcome was unknown");
                    if committed {
                        let state = act.publish(doubt.next, ctx);
                        act.committed_with(state.position, doubt.touched);
                    }
                }
                Err(e) => {
                    act.settle_later(ctx);
                    act.refuse_queued(&e);
                }
            }
            act.pump(ctx);
        }));
    }

    /// Reads the store's commit position with no batch in flight or in doubt (the queue
    /// waits meanwhile, a store round trip), and answers it with the published state:
    /// the state reflects exactly the commits up to that position.
    fn read_position(
        &mut self,
        reply: oneshot::Sender<Result<Positioned, StoreError>>,
        ctx: &mut Context<Self>,
    ) {
        self.committing = true;
        let (store, id) = (self.env.store.clone(), self.id);
        let read = bounded(SETTLE_TIMEOUT, "reading the commit position", async move {
            store.position(id).await
        });
        ctx.spawn(read.into_actor(self).map(move |res, act, ctx| {
            act.committing = false;
            let state = act.view.load_full();
            // The state is at the store's position only if nothing else wrote the
            // workspace since it was loaded: with several servers on one store, one that
            // does not write it holds a copy the store has moved past, which must never
            // be paired with the newer position (a checkpoint of it would load as current).
            let _ = reply.send(res.and_then(|position| {
                if position.seq != state.position {
                    return Err(StoreError::Other(format!(
                        "the state is at position {} and the store at {position}: another \
                         server writes the workspace",
                        state.position
                    )));
                }
                Ok(Positioned { state, position })
            }));
            act.pump(ctx);
        }));
    }

    /// Catches up with the commits another server made since the published state's
    /// position (`crate::follow`), between two batches of this actor's own: the queue
    /// waits meanwhile (a few store round trips). When the log cannot bridge the gap (a
    /// copy at position 0, or one behind a pruned log), the actor loads the workspace
    /// afresh itself, still with the queue waiting: so a reload never races a commit of
    /// this actor's own (an import still committing would otherwise be overwritten by a
    /// copy read half-way through it).
    fn follow(
        &mut self,
        reply: oneshot::Sender<Result<Followed, StoreError>>,
        ctx: &mut Context<Self>,
    ) {
        self.committing = true;
        let (store, id) = (self.env.store.clone(), self.id);
        let after = self.view.load().position;
        let read = bounded(
            WRITE_COMMIT_TIMEOUT,
            "reading the commits to follow",
            async move { crate::follow::read(&*store, id, after).await },
        );
        ctx.spawn(read.into_actor(self).map(move |res, act, ctx| {
            let followed = match res {
                Ok(crate::follow::Read::Reload) => return act.reload(reply, ctx),
                Ok(crate::follow::Read::Current(position)) => Ok(Followed::At {
                    position,
                    committed_at_ms: Vec::new(),
                }),
                Ok(crate::follow::Read::Changes(stretch)) => {
                    let mut next = (*act.view.load_full()).clone();
                    let (position, committed_at_ms) =
                        (stretch.position, stretch.committed_at_ms.clone());
                    crate::follow::apply(&mut next, *stretch);
                    act.publish(next, ctx);
                    // The writer may have left a marker: this state holds its stamps.
                    act.marker_unknown = true;
                    Ok(Followed::At {
                        position,
                        committed_at_ms,
                    })
                }
                Err(e) => Err(e),
            };
            act.committing = false;
            let _ = reply.send(followed);
            act.pump(ctx);
        }));
    }

    /// Loads the workspace afresh from the store and publishes it, the queue waiting
    /// meanwhile (see [`WorkspaceActor::follow`]).
    fn reload(
        &mut self,
        reply: oneshot::Sender<Result<Followed, StoreError>>,
        ctx: &mut Context<Self>,
    ) {
        self.committing = true;
        let load = load_afresh(self.env.clone(), (*self.view.load().workspace).clone());
        ctx.spawn(load.into_actor(self).map(move |res, act, ctx| {
            act.committing = false;
            let followed = res.map(|state| {
                let position = state.position;
                tracing::info!(workspace = %act.id, position, records = state.stored_records(), "the change log could not bring the copy up to date: reloaded it");
                act.publish(state, ctx);
                act.marker_unknown = true;
                Followed::Reloaded { position }
            });
            let _ = reply.send(followed);
            act.pump(ctx);
        }));
    }

    /// After a commit of this actor's: no marker stands but the one it may have left,
    /// whose rows are stored next (`flush_touched`).
    fn committed_with(&mut self, position: u64, touched: Option<crate::store::Touched>) {
        self.marker_unknown = false;
        self.unflushed = touched.map(|touched| Unflushed { position, touched });
    }

    /// Stores the rows of the records the last commit touched, as the published state
    /// holds them, the queue waiting (a transaction without a flush of its own). When the
    /// store may hold a marker this actor did not leave (`marker_unknown`), it looks
    /// first: a marker at the published state's position is stored the same way, that
    /// state holding the marked records with their stamp (the loader and the follower
    /// applied it). While the store cannot take them, every queued job is refused with
    /// its error, as while a commit's outcome is unknown, and the flush is tried again
    /// when the next job arrives.
    fn flush_touched(&mut self, ctx: &mut Context<Self>) {
        self.committing = true;
        let (store, id) = (self.env.store.clone(), self.id);
        let Some(unflushed) = &self.unflushed else {
            let look = bounded(SETTLE_TIMEOUT, "looking for a touch marker", async move {
                store.touches(&[id]).await
            });
            ctx.spawn(look.into_actor(self).map(move |res, act, ctx| {
                act.committing = false;
                let position = act.view.load().position;
                match res.map(|mut m| m.pop().flatten()) {
                    Ok(None) => act.marker_unknown = false,
                    Ok(Some(marker)) if marker.position == position => {
                        tracing::info!(workspace = %act.id, position, "storing the rows a commit touched before this actor wrote the workspace");
                        act.marker_unknown = false;
                        act.unflushed = Some(marker);
                    }
                    // Not reached by a writer, which holds the store's last commit; a
                    // commit from this state would be refused anyway.
                    Ok(Some(marker)) => act.refuse_queued(&StoreError::Other(format!(
                        "a touch marker at position {} and the state at {position}",
                        marker.position
                    ))),
                    Err(e) => act.refuse_queued(&e),
                }
                act.pump_when_unflushed(ctx);
            }));
            return;
        };
        let position = unflushed.position;
        let rows = unflushed.touched.rows_in(&self.view.load());
        let env = self.env.clone();
        let flush = bounded(WRITE_COMMIT_TIMEOUT, "storing touched rows", async move {
            let started = Instant::now();
            let res = store.flush_touched(id, position, &rows).await;
            env.observer
                .commit(CommitKind::Touched, started.elapsed(), res.is_ok());
            res
        });
        ctx.spawn(flush.into_actor(self).map(move |res, act, ctx| {
            act.committing = false;
            match res {
                Ok(()) => act.unflushed = None,
                Err(e) => {
                    tracing::warn!(workspace = %act.id, error = %e, "could not store the rows the last commit touched; trying again");
                    act.refuse_queued(&e);
                }
            }
            act.pump_when_unflushed(ctx);
        }));
    }

    /// Pumps on, or, while touched rows are still to be stored or a marker to be looked
    /// for, tries again later even if no job arrives meanwhile.
    fn pump_when_unflushed(&mut self, ctx: &mut Context<Self>) {
        if self.unflushed.is_some() {
            ctx.run_later(SETTLE_RETRY, |act, ctx| act.pump(ctx));
            if self.queue.is_empty() {
                return;
            }
        }
        self.pump(ctx);
    }

    /// Refuses every queued job with `e`, promptly (the store cannot take them now).
    fn refuse_queued(&mut self, e: &StoreError) {
        for job in self.queue.drain(..) {
            match job {
                Job::Write(_, reply, _) => {
                    let _ = reply.send(Err(WriteError::Store(e.clone())));
                }
                Job::Import(_, reply) => {
                    let _ = reply.send(Err(ImportError::Store(e.clone())));
                }
                Job::Position(reply) => {
                    let _ = reply.send(Err(e.clone()));
                }
                Job::Follow(reply) => {
                    let _ = reply.send(Err(e.clone()));
                }
                Job::Drain(reply) => {
                    let _ = reply.send(());
                }
            }
        }
    }

    /// Settles an unconfirmed batch a little later even if no write arrives meanwhile, so
    /// that readers do not stay behind a commit the store did make.
    fn settle_later(&mut self, ctx: &mut Context<Self>) {
        ctx.run_later(SETTLE_RETRY, |act, ctx| {
            if act.in_doubt.is_some() && !act.committing {
                act.settle(ctx);
            }
        });
    }

    /// Arms one timer for the oldest queued write's deadline, unless one is armed.
    fn expire_later(&mut self, ctx: &mut Context<Self>) {
        if self.expiry_armed {
            return;
        }
        let oldest = self.queue.iter().find_map(|job| match job {
            Job::Write(_, _, queued) => Some(*queued),
            Job::Import(..) | Job::Position(..) | Job::Follow(..) | Job::Drain(..) => None,
        });
        let Some(oldest) = oldest else {
            return;
        };
        self.expiry_armed = true;
        let wait = (oldest + QUEUE_TIMEOUT).saturating_duration_since(Instant::now());
        ctx.run_later(wait, |act, ctx| {
            act.expiry_armed = false;
            act.expire_queued();
            act.expire_later(ctx);
        });
    }

    /// Refuses, with 503, every write that has waited in the queue for `QUEUE_TIMEOUT`.
    fn expire_queued(&mut self) {
        let now = Instant::now();
        let mut kept = VecDeque::with_capacity(self.queue.len());
        let mut refused = 0usize;
        for job in self.queue.drain(..) {
            match job {
                Job::Write(_, reply, queued) if now.duration_since(queued) >= QUEUE_TIMEOUT => {
                    refused += 1;
                    let _ = reply.send(Err(WriteError::Busy(format!(
                        "the workspace could not start this write within {} s (busy with an import or a slow store); nothing was applied",
                        QUEUE_TIMEOUT.as_secs()
                    ))));
                }
                job => kept.push_back(job),
            }
        }
        self.queue = kept;
        if refused > 0 {
            tracing::warn!(workspace = %self.id, refused, "writes waited too long in the queue; refused");
        }
    }

    /// After an import whose commit failed: part of it, or all of it, may be in the
    /// store, so memory is made what the store holds. First the store is asked about the
    /// import's batch, which answers only once nothing of it can still be in flight (see
    /// `Store::committed`); then the keys and the workspace are read back (on a blocking
    /// thread: building a state is CPU work) and published. Until that succeeds (retried
    /// with backoff) no job starts: queued writes get their 503 at `QUEUE_TIMEOUT`.
    fn recover(&mut self, batch: Uuid, ctx: &mut Context<Self>) {
        self.recover_after(batch, LOAD_RETRY_FIRST, ctx);
    }

    fn recover_after(&mut self, batch: Uuid, backoff: Duration, ctx: &mut Context<Self>) {
        self.committing = true;
        let env = self.env.clone();
        let workspace = (*self.view.load().workspace).clone();
        let id = self.id;
        let reload = async move {
            env.store.committed(id, batch).await?;
            env.keys.load(&*env.store).await?;
            load_afresh(env, workspace).await
        };
        ctx.spawn(reload.into_actor(self).map(move |res, act, ctx| match res {
            Ok(state) => {
                act.committing = false;
                tracing::info!(workspace = %act.id, "reloaded from the store after a failed import");
                act.publish(state, ctx);
                act.pump(ctx);
            }
            Err(e) => {
                tracing::warn!(workspace = %act.id, error = %e, retry_in_ms = backoff.as_millis() as u64, "reloading after a failed import failed; trying again");
                ctx.run_later(backoff, move |act, ctx| {
                    act.recover_after(
                        batch,
                        (backoff * 2).min(LOAD_RETRY_MAX),
                        ctx,
                    )
                });
            }
        }));
    }

    /// Plans the import and applies it (`ImportPlan::apply`: blobs, store, key ring).
    /// Planning (validation, the next state, search index builds), blob writes (with
    /// fsync) and the commit's encoding are CPU and disk work that can take minutes: they
    /// run on a thread of their own, at a lower priority unless the import is small
    /// ([`SMALL_IMPORT_RECORDS`]), so the arbiter that runs every
    /// workspace's actor keeps serving the others meanwhile, and so do the threads that
    /// answer requests. The actor then publishes the next state and removes the bytes
    /// of the attachments the import deleted.
    fn commit_import(
        &mut self,
        snap: crate::snapshot::Snapshot,
        reply: oneshot::Sender<Result<ImportReport, ImportError>>,
        ctx: &mut Context<Self>,
    ) {
        self.committing = true;
        let current = self.view.load_full();
        let env = self.env.clone();
        let batch = Uuid::new_v4();
        let began = Instant::now();
        // An import is not given a deadline: a large one takes minutes.
        let runtime = tokio::runtime::Handle::current();
        let large = snap.len() > SMALL_IMPORT_RECORDS;
        let run = move || -> Result<Applied, ImportFailed> {
            if large {
                lower_cpu_priority();
            }
            let plan = plan_import(Some(&current), snap, &*env.keys, BuildNext::WhileCommitting)
                .map_err(|e| ImportFailed::Nothing(ImportError::Invalid(e)))?;
            // Driven from here too (by this arbiter's runtime): ordering and encoding
            // hundreds of thousands of records is CPU work as well.
            let mut applied = runtime
                .block_on(plan.apply(&env, batch))
                .map_err(|e| match e {
                    ApplyError::NotWritten(e) => ImportFailed::Nothing(ImportError::Store(e)),
                    ApplyError::Unsure(e) => ImportFailed::Unsure(ImportError::Store(e)),
                })?;
            // The import's transactions moved the store's position by as many as the store
            // cut it into: the next state reflects the position it reads now (nothing else
            // writes this workspace meanwhile). Unread, the state is reloaded instead.
            let position = runtime
                .block_on(env.store.position(current.id()))
                .map_err(|e| ImportFailed::Unsure(ImportError::Store(e)))?;
            if let Some(next) = &mut applied.next {
                next.position = position.seq;
            }
            Ok(applied)
        };
        let (done, answer) = oneshot::channel();
        let spawned = std::thread::Builder::new()
            .name("import".into())
            .spawn(move || {
                let _ = done.send(run());
            });
        let work = async move {
            if let Err(e) = spawned {
                let failed = StoreError::Unavailable(format!("could not start the import: {e}"));
                return Err(ImportFailed::Nothing(ImportError::Store(failed)));
            }
            answer.await.unwrap_or_else(|_| {
                // It may have stopped during the commit: settle as if it had.
                let failed = StoreError::Other("the import's thread failed".into());
                Err(ImportFailed::Unsure(ImportError::Store(failed)))
            })
        };
        ctx.spawn(work.into_actor(self).map(move |res, act, ctx| {
            act.committing = false;
            let answer = match res {
                Ok(Applied {
                    next,
                    released,
                    report,
                    changes,
                }) => {
                    tracing::info!(
                        workspace = %act.id,
                        upserted = report.upserted.values().sum::<usize>(),
                        deleted = report.deleted.values().sum::<usize>(),
                        records = report.records,
                        elapsed_ms = began.elapsed().as_millis() as u64,
                        "import applied"
                    );
                    act.publish(next.expect("planned with the next state"), ctx);
                    // Its commits passed the store's check: no marker stands.
                    act.marker_unknown = false;
                    act.reclaim(released, ctx);
                    // Freeing a large import's records takes a while too: not on the
                    // arbiter.
                    tokio::task::spawn_blocking(move || drop(changes));
                    Ok(report)
                }
                Err(ImportFailed::Unsure(e)) => {
                    act.recover(batch, ctx);
                    Err(e)
                }
                Err(ImportFailed::Nothing(e)) => {
                    if matches!(e, ImportError::Store(StoreError::TouchPending(_))) {
                        act.marker_unknown = true;
                    }
                    Err(e)
                }
            };
            let _ = reply.send(answer);
            act.pump(ctx);
        }));
    }
}

/// The workspace as the store holds it now, its row included when the store has one
/// (`workspace` otherwise: the row of a workspace whose first import never finished is
/// not written yet). Building a state is CPU work: it runs on a blocking thread.
async fn load_afresh(
    env: std::sync::Arc<crate::env::ActorEnv>,
    workspace: crate::model::Workspace,
) -> Result<WorkspaceState, StoreError> {
    let workspace = env
        .store
        .workspace(workspace.id)
        .await?
        .unwrap_or(workspace);
    let runtime = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        runtime.block_on(crate::loader::read::read_state(&*env.store, workspace))
    })
    .await
    .unwrap_or_else(|e| {
        Err(StoreError::Other(format!(
            "loading the workspace failed: {e}"
        )))
    })
}

/// How an import failed: whether any of it may be in the store.
enum ImportFailed {
    /// Nothing of it is in the store; the workspace is as it was.
    Nothing(ImportError),
    /// Part of it, or all of it, may be in the store (see `recover`).
    Unsure(ImportError),
}

/// Lowers the calling thread's CPU priority (nice 10; the threads it starts inherit it).
/// An import's planning, blob writes and encoding keep a core busy for seconds to
/// minutes; at a lower priority they give way to the threads that answer requests,
/// which would otherwise wait in the run queue behind them, and take the cores that
/// requests leave idle. The thread is one of its own: a thread's priority cannot be
/// raised back without privilege, so it must not return to a pool.
pub(crate) fn lower_cpu_priority() {
    #[cfg(target_os = "linux")]
    if let Err(e) = rustix::process::setpriority_process(None, 10) {
        tracing::debug!(error = %e, "could not lower the import thread's priority");
    }
}
