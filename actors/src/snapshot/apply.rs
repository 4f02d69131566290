//! Applying a planned import: one sequence for the live import (through the workspace's
//! actor) and the offline one (`recruitd import`), so both write in the same order:
//!
//! 1. the attachments' bytes, into the blob store, by a thread of their own;
//! 2. meanwhile the change set, into the store (`Store::commit_import`, which may split
//!    each part into several transactions): the workspace row and the small kinds'
//!    records first, then the packed records, unpacked a part at a time (never all at
//!    once: unpacked, a million people's records would take several times the memory of
//!    the state), then the deletions, the keys and the batch's mark. The parts with
//!    attachments, and the mark, wait until the bytes are durable, so no record in the
//!    store names bytes the blob store lacks;
//! 3. meanwhile too, by a thread of its own, the state after the import, when the plan
//!    left it to be built now (an import into a workspace that holds nothing, where it
//!    derives nothing from what was there), from the same shared records; and whatever
//!    the caller asks to do with that state ([`ImportPlan::apply_beside`]);
//! 4. the keys the snapshot carried, into the key ring (only once they are committed).
//!
//! What is left to the caller: publishing the next state (the actor), and removing the
//! bytes of the attachments the import deleted ([`Applied::released`]) once the new
//! state is what readers see.

use super::{Counts, ImportPlan, PackedUpserts};
use crate::env::{ActorEnv, CommitKind};
use crate::model::{Record, RecordKind};
use crate::state::WorkspaceState;
use crate::store::{object_key, ChangeSet, StoreError};
use std::collections::HashSet;
use std::sync::Arc;
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

impl ImportReport {
    /// The answer of `POST /admin/v1/import`'s `data`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "workspace_id": self.workspace_id,
            "upserted": self.upserted,
            "deleted": self.deleted,
        })
    }
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
    /// The records the import writes or deletes.
    fn records(&self) -> usize {
        self.changes.upserts.len() + self.changes.deletes.len() + self.packed.len()
    }

    /// Writes the plan: blobs, store, key ring (see the module doc). `batch` names the
    /// commit for `Store::committed`. Blocking I/O (the blob writes): run it where a
    /// thread may block.
    pub async fn apply(self, env: &ActorEnv, batch: Uuid) -> Result<Applied, ApplyError> {
        let (applied, _) = self.apply_beside(env, batch, |_| ()).await?;
        Ok(applied)
    }

    /// [`apply`](Self::apply), and meanwhile, on a thread of its own, `beside` on the
    /// state after the import, once it is built (built then too, when the plan left it
    /// to the commit: [`super::BuildNext::WhileCommitting`]): the offline import writes
    /// the workspace's checkpoint so while the store writes. What `beside` returns comes
    /// back with the import; `None` when the plan has no next state.
    pub async fn apply_beside<T: Send + 'static>(
        mut self,
        env: &ActorEnv,
        batch: Uuid,
        beside: impl FnOnce(&WorkspaceState) -> T + Send + 'static,
    ) -> Result<(Applied, Option<T>), ApplyError> {
        let id = self.workspace.id;
        let records = self.records();
        let blobs = std::mem::take(&mut self.blobs);
        let blob_count = blobs.len();
        let blob_store = env.blobs.clone();
        let writing = tokio::task::spawn_blocking(move || {
            let started = std::time::Instant::now();
            // The bytes are dropped with the task: held no longer than they are needed.
            blob_store.put_many(id, &blobs).map(|()| started.elapsed())
        });
        let started = std::time::Instant::now();
        let mut blobs = BlobWrite {
            writing: Some(writing),
            took: None,
            records,
        };
        let packed = Arc::new(std::mem::take(&mut self.packed));
        // What the parse and the plan freed (the document's buffers, the snapshot's
        // arrays) goes back to the system before the commit and the next state add theirs.
        crate::memory::after_bulk(records);
        // The small kinds' records, handed to the builder of the next state once the
        // commit is done with them.
        let (small_kinds, small_kinds_committed) = std::sync::mpsc::sync_channel(1);
        let building = self.build_next_beside(packed.clone(), small_kinds_committed, beside);
        let committed = self
            .commit(env, batch, &packed, &mut blobs, small_kinds)
            .await;
        // A commit that failed first still waits for the blob writer and the builder:
        // nothing of this import may be written after its outcome is reported.
        let _ = blobs.wait().await;
        let built = match building {
            Some(building) => building.await,
            None => Ok(None),
        };
        env.observer
            .commit(CommitKind::Import, started.elapsed(), committed.is_ok());
        committed?;
        let built = built.map_err(|e| {
            // In the store, not in memory: the caller makes memory what the store holds.
            ApplyError::Unsure(StoreError::Other(format!(
                "building the state after the import failed: {e}"
            )))
        })?;
        // Every task that shared the records is done.
        self.packed = Arc::try_unwrap(packed).unwrap_or_else(|shared| (*shared).clone());
        let beside = built.map(|(next, beside)| {
            self.next = Some(next);
            beside
        });
        tracing::debug!(
            workspace = %id,
            blobs = blob_count,
            blobs_ms = blobs.took.map_or(0, |d| d.as_millis() as u64),
            commit_ms = started.elapsed().as_millis() as u64,
            "import written"
        );
        for k in &self.changes.keys {
            env.keys.put(k.clone());
        }
        let released = released_objects(&self);
        let applied = Applied {
            released,
            report: ImportReport {
                workspace_id: id,
                upserted: self.upserted,
                deleted: self.deleted,
                records: self.records_after,
            },
            next: self.next,
            changes: self.changes,
        };
        Ok((applied, beside))
    }

    /// Starts the thread that runs `beside` on the next state: the plan's, or one built
    /// from `next_base` and the records of the import (the small kinds' once the commit
    /// sends them: it takes them first). `None` when the plan has no next state; the
    /// thread's answer is `None` when the commit failed before it sent them.
    fn build_next_beside<T: Send + 'static>(
        &mut self,
        packed: Arc<PackedUpserts>,
        small_kinds: std::sync::mpsc::Receiver<Vec<Record>>,
        beside: impl FnOnce(&WorkspaceState) -> T + Send + 'static,
    ) -> Option<tokio::task::JoinHandle<Option<(WorkspaceState, T)>>> {
        if let Some(next) = self.next.take() {
            return Some(tokio::task::spawn_blocking(move || {
                let out = beside(&next);
                Some((next, out))
            }));
        }
        let base = self.next_base.take()?;
        let workspace = self.workspace.clone();
        let deletes = self.changes.deletes.clone();
        let records = self.changes.upserts.len() + deletes.len() + packed.len();
        Some(tokio::task::spawn_blocking(move || {
            let upserts = small_kinds.recv().ok()?;
            let started = std::time::Instant::now();
            // Beside the commit, which holds memory of its own: the lower peak.
            let search = crate::state::bulk::SearchBuild::OneAfterTheOther;
            let next = super::plan::next_state(
                search,
                base,
                &workspace,
                upserts.into_iter(),
                &packed,
                &deletes,
            );
            drop(packed);
            // The index builds' sort vectors.
            crate::memory::after_bulk(records);
            tracing::debug!(
                workspace = %workspace.id,
                next_ms = started.elapsed().as_millis() as u64,
                "state after the import built"
            );
            let out = beside(&next);
            Some((next, out))
        }))
    }
}

/// Packed records unpacked for the store at a time (a handful in tests, so that every
/// import there is committed in several parts).
pub(super) const COMMIT_PART: usize = if cfg!(test) { 2 } else { 50_000 };

/// The attachments' bytes being written beside the commit (see `ImportPlan::commit`).
struct BlobWrite {
    writing: Option<tokio::task::JoinHandle<Result<std::time::Duration, StoreError>>>,
    /// How long the write took, once it has succeeded.
    took: Option<std::time::Duration>,
    /// The import's size (see [`crate::memory::after_bulk`]).
    records: usize,
}

impl BlobWrite {
    /// Waits for the writer (once); why it failed, if it did.
    async fn wait(&mut self) -> Result<(), StoreError> {
        if let Some(writing) = self.writing.take() {
            let result = writing
                .await
                .unwrap_or_else(|e| Err(StoreError::Other(format!("the blob writer failed: {e}"))));
            self.took = Some(result?);
            // The attachments' bytes, freed by the writer.
            crate::memory::after_bulk(self.records);
        }
        Ok(())
    }
}

impl ImportPlan {
    /// Commits the change set in parts (see the module doc). A part may itself be
    /// several transactions, so any failure leaves the store unsure.
    ///
    /// The attachments' bytes are written meanwhile, by another thread: the candidate
    /// rows and notes go in first, and the bytes must be durable only before the first
    /// part with attachments (and before the last part, which marks the import
    /// committed). A blob write that fails before any part was committed leaves the
    /// store as it was; one that fails later leaves it unsure.
    async fn commit(
        &mut self,
        env: &ActorEnv,
        batch: Uuid,
        packed: &Arc<PackedUpserts>,
        blobs: &mut BlobWrite,
        small_kinds: std::sync::mpsc::SyncSender<Vec<Record>>,
    ) -> Result<(), ApplyError> {
        let id = self.workspace.id;
        let (unlogged, fresh) = (self.changes.unlogged, self.changes.fresh);
        let part = async |mut changes: ChangeSet| {
            changes.unlogged = unlogged;
            changes.fresh = fresh;
            env.store
                .commit_import(id, &changes)
                .await
                .map_err(ApplyError::Unsure)?;
            Ok(changes)
        };
        // A workspace's first import writes its row last: until then no other server
        // finds the workspace (`Store::workspaces`), so none loads a copy of it half
        // imported, which a log it does not write could never complete. A later import
        // writes it first: one that fails part way leaves it findable, and followers
        // complete their copies from its log.
        let (row_first, row_last) = match unlogged {
            true => (None, self.changes.workspace.clone()),
            false => (self.changes.workspace.clone(), None),
        };
        let first = ChangeSet {
            workspace: row_first,
            upserts: std::mem::take(&mut self.changes.upserts),
            ..ChangeSet::default()
        };
        let mut committed_any = !first.is_empty();
        let first = if committed_any {
            part(first).await?
        } else {
            first
        };
        // No one listens when the plan has its next state, or none.
        let _ = small_kinds.send(first.upserts);
        let before_attachments = packed.candidates.len() + packed.notes.len();
        // Each part is unpacked and rendered on the other threads while the store writes
        // the one before it.
        let prepare = |from: usize| {
            let packed = packed.clone();
            tokio::task::spawn_blocking(move || packed.part(from, COMMIT_PART))
        };
        let mut next = (!packed.is_empty()).then(|| prepare(0));
        let mut from = 0;
        while let Some(preparing) = next.take() {
            let changes = preparing.await.map_err(|e| {
                let e = StoreError::Other(format!("preparing a part of the import failed: {e}"));
                failed_beside_the_commit(e, committed_any)
            })?;
            from += changes.upserts.len();
            if from < packed.len() {
                next = Some(prepare(from));
            }
            if from > before_attachments {
                blobs_written(blobs, committed_any).await?;
            }
            committed_any = true;
            part(changes).await?;
        }
        blobs_written(blobs, committed_any).await?;
        part(ChangeSet {
            workspace: row_last,
            // Kept in the plan: the objects they release are named after the commit.
            deletes: self.changes.deletes.clone(),
            keys: self.changes.keys.clone(),
            batch: Some(batch),
            derived: std::mem::take(&mut self.changes.derived),
            tombstones: std::mem::take(&mut self.changes.tombstones),
            ..ChangeSet::default()
        })
        .await
        .map(drop)
    }
}

/// Waits until the attachments' bytes are durable.
async fn blobs_written(blobs: &mut BlobWrite, committed_any: bool) -> Result<(), ApplyError> {
    blobs
        .wait()
        .await
        .map_err(|e| failed_beside_the_commit(e, committed_any))
}

/// A failure outside the store's commit: the import is as sure as the store is
/// (`committed_any`: whether a part is in it).
fn failed_beside_the_commit(e: StoreError, committed_any: bool) -> ApplyError {
    if committed_any {
        ApplyError::Unsure(e)
    } else {
        ApplyError::NotWritten(e)
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
