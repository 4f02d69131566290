//! Applying a planned import: one sequence for the live import (through the workspace's
//! actor) and the offline one (`recruitd import`), so both write in the same order:
//!
//! 1. the attachments' bytes, into the blob store (before any record names them);
//! 2. the change set, into the store (`Store::commit_import`: in import-sized
//!    transactions);
//! 3. the keys the snapshot carried, into the key ring (only once they are committed).
//!
//! What is left to the caller: publishing the next state (the actor), and removing the
//! bytes of the attachments the import deleted ([`Applied::released`]) once the new
//! state is what readers see.

use super::{Counts, ImportPlan};
use crate::env::{ActorEnv, CommitKind};
use crate::model::{Record, RecordKind};
use crate::state::WorkspaceState;
use crate::store::{object_key, ChangeSet, StoreError};
use std::collections::HashSet;
use uuid::Uuid;

/// What an import did, as the admin interface and the command line report it.
#[derive(Debug, Clone)]
pub struct ImportReport {
    pub workspace_id: Uuid,
    pub upserted: Counts,
    pub deleted: Counts,
    /// How many raw records the workspace holds after the import.
    pub records: usize,
}

/// An import that is in the store.
pub struct Applied {
    /// The workspace after the import, when it was planned with one.
    pub next: Option<WorkspaceState>,
    /// Object keys of the attachments the import deleted: to remove once the next state
    /// is published (never before: a crash in between leaks them, it loses nothing).
    pub released: Vec<String>,
    pub report: ImportReport,
    /// The committed change set; large, so its owner may free it off a busy thread.
    pub changes: ChangeSet,
}

/// Why an import was not applied.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// Nothing reached the store (some bytes may have reached the blob store, which the
    /// sweep at the next start collects): the workspace is as it was.
    #[error(transparent)]
    NotWritten(StoreError),
    /// The store failed during the commit: none, part or all of the import may be in it,
    /// so the caller must make memory what the store holds.
    #[error(transparent)]
    Unsure(StoreError),
}

impl ImportPlan {
    /// Writes the plan: blobs, store, key ring (see the module doc). `batch` names the
    /// commit for `Store::committed`. Blocking I/O (the blob writes): run it where a
    /// thread may block.
    pub async fn apply(mut self, env: &ActorEnv, batch: Uuid) -> Result<Applied, ApplyError> {
        let id = self.workspace.id;
        let (blobs_started, blob_count) = (std::time::Instant::now(), self.blobs.len());
        env.blobs
            .put_many(id, &self.blobs)
            .map_err(ApplyError::NotWritten)?;
        let blobs_took = blobs_started.elapsed();
        // The bytes are in the blob store; no need to hold them any longer.
        self.blobs = Vec::new();
        self.changes.batch = Some(batch);
        let started = std::time::Instant::now();
        let committed = env.store.commit_import(id, &self.changes).await;
        env.observer
            .commit(CommitKind::Import, started.elapsed(), committed.is_ok());
        committed.map_err(ApplyError::Unsure)?;
        tracing::debug!(
            workspace = %id,
            blobs = blob_count,
            blobs_ms = blobs_took.as_millis() as u64,
            commit_ms = started.elapsed().as_millis() as u64,
            "import written"
        );
        for k in &self.changes.keys {
            env.keys.put(k.clone());
        }
        let released = released_objects(&self);
        Ok(Applied {
            released,
            report: ImportReport {
                workspace_id: id,
                upserted: self.upserted,
                deleted: self.deleted,
                records: self.records_after,
            },
            next: self.next,
            changes: self.changes,
        })
    }
}

/// The object keys an import's commit releases: those of the attachments it deletes that
/// are not in the state after it (its next state, when planned with one) nor re-added by
/// it. Remove them only after the commit has succeeded.
pub fn released_objects(plan: &ImportPlan) -> Vec<String> {
    let workspace = plan.workspace.id;
    let upserted: HashSet<&str> = plan
        .changes
        .upserts
        .iter()
        .filter_map(|r| match r {
            Record::Attachment(a) => Some(a.id.as_str()),
            _ => None,
        })
        .collect();
    let mut keys: Vec<String> = plan
        .changes
        .deletes
        .iter()
        .filter(|(kind, _)| *kind == RecordKind::Attachment)
        .map(|(_, id)| id.as_str())
        .filter(|id| !upserted.contains(id))
        .filter(|id| {
            plan.next
                .as_ref()
                .is_none_or(|next| !next.attachments.contains(*id))
        })
        .map(|id| object_key(workspace, id))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}
