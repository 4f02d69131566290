//! How the workspace actor handles each message.

use super::{Import, ImportError, ImportReport, WorkspaceActor};
use crate::snapshot::plan_import;
use actix::{ActorFutureExt, AtomicResponse, Handler, WrapFuture};
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
            |res: Result<_, ImportError>, act, _| {
                let plan = res?;
                for k in &plan.changes.keys {
                    act.registry.keys.put(k.clone());
                }
                act.view
                    .store(Arc::new(plan.next.expect("planned with the next state")));
                Ok(ImportReport {
                    workspace_id: act.id,
                    upserted: plan.upserted,
                    deleted: plan.deleted,
                })
            },
        )))
    }
}
