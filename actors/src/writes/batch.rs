//! A batch of API writes planned as one commit: each write checked and applied to one
//! working copy of the state (a refused write leaves no trace), then what the batch shows
//! beyond its own records (derived changes, tombstones) and the position it moves. The
//! actor commits the result and publishes its state; nothing here touches the store.

use super::{plan_write, WriteError, WriteOp, Written};
use crate::state::WorkspaceState;
use crate::store::ChangeSet;

/// A planned batch: the state after it, the change set that commits it, and each write's
/// outcome with what the caller gave along with it (its reply).
pub struct PlannedBatch<R> {
    pub next: WorkspaceState,
    pub changes: ChangeSet,
    pub accepted: Vec<(Written, R)>,
    pub refused: Vec<(WriteError, R)>,
}

/// Plans `batch` against `before`, in order. With nothing accepted, `changes` is empty
/// and `next` is `before` as it was.
pub fn plan_batch<R>(before: &WorkspaceState, batch: Vec<(WriteOp, R)>) -> PlannedBatch<R> {
    let mut next = before.clone();
    let mut changes = ChangeSet::default();
    let mut accepted = Vec::with_capacity(batch.len());
    let mut refused = Vec::new();
    for (op, reply) in batch {
        let checkpoint = next.clone();
        let marks = (changes.upserts.len(), changes.deletes.len());
        match plan_write(&mut next, op, &mut changes) {
            Ok(written) => accepted.push((written, reply)),
            Err(e) => {
                next = checkpoint;
                changes.upserts.truncate(marks.0);
                changes.deletes.truncate(marks.1);
                refused.push((e, reply));
            }
        }
    }
    if !accepted.is_empty() {
        crate::changes::derive::complete(
            before,
            &mut next,
            &mut changes,
            crate::changes::derive::TouchedRows::Apart,
            [],
            [],
        );
        if changes.moves_position() {
            // One transaction: the store's position moves by one (`Store::commit`).
            next.position += 1;
        }
    }
    PlannedBatch {
        next,
        changes,
        accepted,
        refused,
    }
}
