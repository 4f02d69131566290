//! How the workspace actor handles each message, and its commit loop.

use super::{
    Import, ImportError, ImportReport, IndexRebuilt, Job, WorkspaceActor, Write, WriteDone,
};
use crate::snapshot::plan_import;
use crate::store::ChangeSet;
use crate::writes::{plan_write, WriteError};
use actix::{ActorFutureExt, AsyncContext, Context, Handler, ResponseFuture, WrapFuture};
use tokio::sync::oneshot;

impl Handler<Write> for WorkspaceActor {
    type Result = ResponseFuture<Result<WriteDone, WriteError>>;

    fn handle(&mut self, msg: Write, ctx: &mut Context<Self>) -> Self::Result {
        let (tx, rx) = oneshot::channel();
        self.queue.push_back(Job::Write(msg.0, tx));
        self.pump(ctx);
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
            self.view.store(std::sync::Arc::new(next));
        }
        self.maybe_rebuild(ctx);
    }
}

type WriteReply = oneshot::Sender<Result<WriteDone, WriteError>>;

impl WorkspaceActor {
    /// Starts committing the next batch unless one is in flight.
    fn pump(&mut self, ctx: &mut Context<Self>) {
        while !self.committing {
            match self.queue.pop_front() {
                None => return,
                Some(Job::Import(snap, reply)) => self.commit_import(snap, reply, ctx),
                Some(Job::Write(op, reply)) => {
                    let max = self.registry.write_batch_max();
                    let mut batch = vec![(op, reply)];
                    while batch.len() < max {
                        match self.queue.front() {
                            Some(Job::Write(..)) => match self.queue.pop_front() {
                                Some(Job::Write(op, reply)) => batch.push((op, reply)),
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

    /// Plans each write against one working copy of the state (a refused write is
    /// answered at once and leaves no trace), then commits the rest in one transaction.
    fn commit_writes(
        &mut self,
        batch: Vec<(crate::writes::WriteOp, WriteReply)>,
        ctx: &mut Context<Self>,
    ) {
        let mut next = (*self.view.load_full()).clone();
        let mut changes = ChangeSet::default();
        let mut accepted = Vec::with_capacity(batch.len());
        for (op, reply) in batch {
            let checkpoint = next.clone();
            let marks = (changes.upserts.len(), changes.deletes.len());
            match plan_write(&mut next, op, &mut changes) {
                Ok(written) => accepted.push((written, reply)),
                Err(e) => {
                    next = checkpoint;
                    changes.upserts.truncate(marks.0);
                    changes.deletes.truncate(marks.1);
                    let _ = reply.send(Err(e));
                }
            }
        }
        if accepted.is_empty() {
            return;
        }
        self.committing = true;
        let store = self.registry.store.clone();
        let id = self.id;
        let commit = async move { store.commit(id, &changes).await };
        ctx.spawn(commit.into_actor(self).map(move |res, act, ctx| {
            act.committing = false;
            match res {
                Ok(()) => {
                    let state = act.publish(next, ctx);
                    for (written, reply) in accepted {
                        let _ = reply.send(Ok(WriteDone {
                            written,
                            state: state.clone(),
                        }));
                    }
                }
                Err(e) => {
                    tracing::warn!(workspace = %act.id, error = %e, writes = accepted.len(), "commit failed; nothing applied");
                    for (_, reply) in accepted {
                        let _ = reply.send(Err(WriteError::Store(e.clone())));
                    }
                }
            }
            act.pump(ctx);
        }));
    }

    fn commit_import(
        &mut self,
        snap: crate::snapshot::Snapshot,
        reply: oneshot::Sender<Result<ImportReport, ImportError>>,
        ctx: &mut Context<Self>,
    ) {
        let current = self.view.load_full();
        let plan = match plan_import(Some(&current), snap, &self.registry.keys, true) {
            Ok(p) => p,
            Err(e) => {
                let _ = reply.send(Err(ImportError::Invalid(e)));
                return;
            }
        };
        self.committing = true;
        let registry = self.registry.clone();
        let id = self.id;
        let commit = async move {
            registry.blobs.put_many(id, &plan.blobs)?;
            registry.store.commit(id, &plan.changes).await?;
            Ok::<_, ImportError>(plan)
        };
        ctx.spawn(commit.into_actor(self).map(move |res, act, ctx| {
            act.committing = false;
            let answer = res.map(|plan| {
                for k in &plan.changes.keys {
                    act.registry.keys.put(k.clone());
                }
                act.publish(plan.next.expect("planned with the next state"), ctx);
                ImportReport {
                    workspace_id: act.id,
                    upserted: plan.upserted,
                    deleted: plan.deleted,
                }
            });
            let _ = reply.send(answer);
            act.pump(ctx);
        }));
    }
}
