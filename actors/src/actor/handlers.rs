//! How the workspace actor handles each message.

use super::{Import, ImportError, ImportReport, IndexRebuilt, WorkspaceActor};
use crate::snapshot::plan_import;
use actix::{ActorFutureExt, AtomicResponse, Context, Handler, WrapFuture};
use std::sync::Arc;

impl Handler<Import> for WorkspaceActor {
    type Result = AtomicResponse<Self, Result<ImportReport, ImportError>>;

    fn handle(&mut self, msg: Import, _: &mut Self::Context) -> Self::Result {
        let current = self.view.load_full();
        let plan = plan_import(Some(&current), msg.0, &self.registry.keys, true);
        let registry = self.registry.clone();
        let id = self.id;
        let commit = async move {
            let plan = plan.map_err(ImportError::Invalid)?;
            registry.blobs.put_many(id, &plan.blobs)?;
            registry.store.commit(id, &plan.changes).await?;
            Ok(plan)
        };
        AtomicResponse::new(Box::pin(commit.into_actor(self).map(
            |res: Result<_, ImportError>, act, ctx| {
                let plan = res?;
                for k in &plan.changes.keys {
                    act.registry.keys.put(k.clone());
                }
                act.publish(plan.next.expect("planned with the next state"), ctx);
                Ok(ImportReport {
                    workspace_id: act.id,
                    upserted: plan.upserted,
                    deleted: plan.deleted,
                })
            },
        )))
    }
}

impl Handler<IndexRebuilt> for WorkspaceActor {
    type Result = ();

    /// Swaps the new bases in. Writes are atomic responses, so this never runs between a
    /// write's plan and its publish; delta entries written since the snapshot are kept.
    fn handle(&mut self, msg: IndexRebuilt, ctx: &mut Context<Self>) {
        self.rebuilding = false;
        let mut next = (*self.view.load_full()).clone();
        if next.search.install(msg.0) {
            self.view.store(Arc::new(next));
        }
        self.maybe_rebuild(ctx);
    }
}
