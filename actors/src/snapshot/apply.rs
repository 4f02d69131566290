//! Applying a planned import: one sequence for the live import (through the workspace's
//! actor) and the offline one (`recruitd import`), so both write in the same order:
//!
//! 1. the attachments' bytes, into the blob store (before any record names them);
//! 2. the change set, into the store (`Store::commit_import`, which may split each part
//!    into several transactions): the workspace row and the small kinds' records first,
//!    then the packed records, unpacked a part at a time (never all at once: unpacked,
//!    a million people's records would take several times the memory of the state),
//!    then the deletions, the keys and the batch's mark;
//! 3. the keys the snapshot carried, into the key ring (only once they are committed).
//!
//! What is left to the caller: publishing the next state (the actor), and removing the
//! bytes of the attachments the import deleted ([`Applied::released`]) once the new
//! state is what readers see.

use super::{Counts, ImportPlan};
use crate::env::{ActorEnv, CommitKind};
use crate::model::RecordKind;
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
        let started = std::time::Instant::now();
        let committed = self.commit(env, batch).await;
        env.observer
            .commit(CommitKind::Import, started.elapsed(), committed.is_ok());
        committed?;
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

/// Packed records unpacked for the store at a time (a handful in tests, so that every
/// import there is committed in several parts).
pub(super) const COMMIT_PART: usize = if cfg!(test) { 2 } else { 50_000 };

impl ImportPlan {
    /// Commits the change set in parts (see the module doc). A part may itself be
    /// several transactions, so any failure leaves the store unsure.
    async fn commit(&mut self, env: &ActorEnv, batch: Uuid) -> Result<(), ApplyError> {
        let id = self.workspace.id;
        let part = |changes: ChangeSet| async move {
            env.store
                .commit_import(id, &changes)
                .await
                .map_err(ApplyError::Unsure)
        };
        part(ChangeSet {
            workspace: self.changes.workspace.clone(),
            upserts: std::mem::take(&mut self.changes.upserts),
            ..ChangeSet::default()
        })
        .await?;
        let mut from = 0;
        while from < self.packed.len() {
            let records = self.packed.records(from, COMMIT_PART);
            from += records.len();
            part(ChangeSet {
                upserts: records,
                ..ChangeSet::default()
            })
            .await?;
        }
        part(ChangeSet {
            // Kept in the plan: the objects they release are named after the commit.
            deletes: self.changes.deletes.clone(),
            keys: self.changes.keys.clone(),
            batch: Some(batch),
            ..ChangeSet::default()
        })
        .await
    }
}

/// The object keys an import's commit releases: those of the attachments it deletes that
/// are not in the state after it (its next state, when planned with one) nor re-added by
/// it. Remove them only after the commit has succeeded.
pub fn released_objects(plan: &ImportPlan) -> Vec<String> {
    let workspace = plan.workspace.id;
    let upserted: HashSet<&str> = plan.packed.attachments.iter().map(|a| a.id()).collect();
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
