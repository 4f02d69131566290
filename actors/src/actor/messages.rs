//! Messages the workspace actor accepts.

use crate::search::SearchRebuilt;
use crate::snapshot::{Counts, Snapshot, SnapshotError};
use crate::store::StoreError;
use actix::Message;
use uuid::Uuid;

/// Apply a snapshot (upsert) to the workspace: memory, indexes and store move together.
#[derive(Message)]
#[rtype(result = "Result<ImportReport, ImportError>")]
pub struct Import(pub Snapshot);

#[derive(Debug, Clone)]
pub struct ImportReport {
    pub workspace_id: Uuid,
    pub upserted: Counts,
    pub deleted: Counts,
}

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The snapshot was rejected; nothing was written.
    #[error("{0}")]
    Invalid(SnapshotError),
    /// The store failed; nothing was published.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// New search index bases, merged off-thread from a snapshot of the deltas.
#[derive(Message)]
#[rtype(result = "()")]
pub struct IndexRebuilt(pub SearchRebuilt);
