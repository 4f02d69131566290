//! Reading workspaces' states from the store: positions first, then records and
//! tombstones, a batch of workspaces in one read each, and each state's indexes built
//! once its records are in.

use crate::model::Workspace;
use crate::state::WorkspaceState;
use crate::store::{CommitPosition, Store, StoreError};
use uuid::Uuid;

/// One workspace's state, read from the store whole (no checkpoint).
pub async fn read_state(store: &dyn Store, w: Workspace) -> Result<WorkspaceState, StoreError> {
    let mut states = read_states(store, std::slice::from_ref(&w), |_, _| None).await?;
    Ok(states.pop().expect("one state a workspace"))
}

/// The states of `batch`, in its order: each from `restore` (a checkpoint at the store's
/// position) when it gives one, otherwise read from the store, those read together in
/// one read of their records and one of every workspace's tombstones.
pub async fn read_states(
    store: &dyn Store,
    batch: &[Workspace],
    restore: impl Fn(&Workspace, CommitPosition) -> Option<WorkspaceState>,
) -> Result<Vec<WorkspaceState>, StoreError> {
    let ids: Vec<Uuid> = batch.iter().map(|w| w.id).collect();
    // Before the records: a commit between the reads would then only make a state
    // newer than its position says, never older (the feed stays exact).
    let positions = store.positions(&ids).await?;
    // Also before the records, applied after them: a marker read stamps its records
    // whether or not their rows were stored again in between (`crate::store::Touched`).
    let touches = store.touches(&ids).await?;
    let mut states: Vec<Option<WorkspaceState>> = Vec::with_capacity(batch.len());
    let mut from_store: Vec<usize> = Vec::new();
    for (i, (w, position)) in batch.iter().zip(&positions).enumerate() {
        let restored = restore(w, *position);
        if restored.is_none() {
            from_store.push(i);
        }
        states.push(restored);
    }
    let mut reading: Vec<WorkspaceState> = from_store
        .iter()
        .map(|&i| {
            let mut state = WorkspaceState::new(batch[i].clone());
            state.position = positions[i].seq;
            state.begin_bulk();
            state
        })
        .collect();
    if !reading.is_empty() {
        let of: std::collections::HashMap<Uuid, usize> = reading
            .iter()
            .enumerate()
            .map(|(k, s)| (s.id(), k))
            .collect();
        let read_ids: Vec<Uuid> = reading.iter().map(WorkspaceState::id).collect();
        store
            .load_records_of(&read_ids, &mut |w, r| {
                if let Some(&k) = of.get(&w) {
                    reading[k].put(r);
                }
            })
            .await?;
    }
    let mut tombstones = store.tombstones_of(&ids).await?.into_iter();
    for (k, state) in reading.into_iter().enumerate() {
        states[from_store[k]] = Some(state);
    }
    let mut out = Vec::with_capacity(batch.len());
    for (i, state) in states.into_iter().enumerate() {
        let mut state = state.expect("every workspace restored or read");
        state.tombstones =
            crate::tombstones::Tombstones::build(tombstones.next().unwrap_or_default());
        // A state restored from a checkpoint holds the marker's stamps already (a
        // checkpoint is taken with no touch outstanding, or by a follower that applied
        // it): applied again, it changes nothing.
        if let Some(marker) = &touches[i] {
            marker.touched.apply(&mut state);
        }
        if from_store.binary_search(&i).is_ok() {
            state.end_bulk();
        }
        out.push(state);
    }
    Ok(out)
}
