//! Messages the workspace actor accepts.

use crate::search::SearchRebuilt;
pub use crate::snapshot::ImportReport;
use crate::snapshot::{Snapshot, SnapshotError};
use crate::state::WorkspaceState;
use crate::store::StoreError;
use crate::writes::{WriteError, WriteOp, Written};
use actix::Message;
use std::sync::Arc;

/// Apply a snapshot (upsert) to the workspace: memory, indexes and store move together.
#[derive(Message)]
#[rtype(result = "Result<ImportReport, ImportError>")]
pub struct Import(pub Snapshot);

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The snapshot was rejected; nothing was written.
    #[error("{0}")]
    Invalid(SnapshotError),
    /// The store failed; nothing was published.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The workspace's actor stopped before answering.
    #[error("the workspace is not accepting writes")]
    Stopped,
}

/// One API write. Answered once the batch holding it has been committed and published.
#[derive(Message)]
#[rtype(result = "Result<WriteDone, WriteError>")]
pub struct Write(pub WriteOp);

/// A committed write.
#[derive(Clone)]
pub struct WriteDone {
    pub written: Written,
    /// The state published by the commit that included the write.
    pub state: Arc<WorkspaceState>,
}

/// New search index bases, merged off-thread from a snapshot of the deltas.
#[derive(Message)]
#[rtype(result = "()")]
pub struct IndexRebuilt(pub SearchRebuilt);

/// Forget the tombstones of records that left before this time: retention has pruned
/// them from the store. Applied to the published state (or, while a batch commits, to
/// the state it publishes); answers how many were forgotten.
#[derive(Message)]
#[rtype(result = "usize")]
pub struct ForgetTombstones(pub crate::time::Stamp);

/// Sweep the workspace's blob store of objects no attachment of the current state names
/// (what a crash between an import's commit and its removals, or an import whose commit
/// failed after its bytes were written, left behind). Sent once, when the workspace has
/// loaded; imports wait for it, reads and API writes do not.
#[derive(Message)]
#[rtype(result = "()")]
pub struct SweepBlobs;

/// The published state and the store's commit position it reflects exactly: what a
/// checkpoint is written from. The actor reads the position between two batches, with
/// none in flight or in doubt, so no commit of this workspace lies between the two.
#[derive(Message)]
#[rtype(result = "Result<Positioned, StoreError>")]
pub struct ReadPosition;

/// A state and the commit position it reflects.
#[derive(Clone)]
pub struct Positioned {
    pub state: Arc<WorkspaceState>,
    pub position: crate::store::CommitPosition,
}

/// Catch up with the commits another server made (several servers on one store, see
/// [`crate::follow`]): from the change log, or by loading the workspace afresh when the
/// log cannot bridge the gap. Queued like a write, so it never runs beside a commit of
/// this actor's own; once answered `Ok`, the published state holds every commit up to
/// the position it names.
#[derive(Message)]
#[rtype(result = "Result<Followed, StoreError>")]
pub struct Follow;

/// What a [`Follow`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Followed {
    /// The copy is at this position, which the store is at (nothing to do, or done),
    /// with when each commit it applied was made (milliseconds since the epoch).
    At {
        position: u64,
        committed_at_ms: Vec<i64>,
    },
    /// The log could not bring the copy up to date: it was loaded afresh, at this
    /// position.
    Reloaded { position: u64 },
}

/// Answered once every job queued before it (writes, imports, catch-ups) is done: a
/// server that stopped passing writes to this actor (it gives the workspace's writer
/// lease up) waits for the ones it already passed to commit.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Drain;
