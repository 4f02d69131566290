//! Following another server's commits of a workspace: with several servers on one
//! store, a server that holds a workspace without writing it keeps its copy current
//! from the change log.
//!
//! The log says which records each commit changed, in commit order and without gaps
//! (`crate::changes`), not how. So a follower at position `p` reads the store's position
//! `q`, every log part after `p` up to `q`, and then the records those parts name as
//! the store holds them now (with the workspace's stages and row, which the log does not
//! name, and the tombstones of the changes named): a record found is put, one not found
//! is deleted, and each change's tombstone is set or cleared as the store has it. The
//! copy is then at `q`.
//!
//! The records are read after the log, so a commit after `q` may already show in them:
//! the copy is then a little ahead of `q`, never behind it, and the next read names
//! those records again (the log after `q`), so it converges on the writer's state. A copy
//! paired with a position for a checkpoint is read at the store's position only when no
//! commit came since (`ReadPosition`), when the records read are exactly those at `q`.
//!
//! A record the writer's last commit only touched (a derived change moved its
//! `updated_at`) may be read back before its row is stored again: the store's marker of
//! that commit, read before the records, gives it its stamp ([`crate::store::Touched`]).
//!
//! A follower whose position is 0 (it loaded the workspace before its first import,
//! which writes no log) or whose log has been pruned past its position cannot bridge
//! the gap from the log: it loads the workspace afresh ([`Read::Reload`]).

use crate::entries::Change;
use crate::model::{Record, RecordKind};
use crate::state::WorkspaceState;
use crate::store::{Current, LogWindow, Store, StoreError};
use std::collections::{HashMap, HashSet};
use uuid::Uuid;

/// Log parts read per store round trip while catching up.
const PARTS_PER_READ: usize = 256;

/// What the commits after a follower's position changed.
#[derive(Debug)]
pub enum Read {
    /// No commit since: the store is at this position.
    Current(u64),
    /// The log cannot bridge the gap: load the workspace afresh.
    Reload,
    /// The commits up to `position`, to [`apply`] (boxed: records and keys, beside a
    /// number).
    Changes(Box<Stretch>),
}

/// The commits after a follower's position, up to `position`.
#[derive(Debug)]
pub struct Stretch {
    pub position: u64,
    /// When each commit with log parts was made (milliseconds since the epoch), in
    /// commit order: how far behind the follower was.
    pub committed_at_ms: Vec<i64>,
    /// The changes the commits name, each once.
    pub changes: Vec<Change>,
    /// The records they name, as the store holds them now.
    pub current: Current,
}

/// Reads what the commits of `workspace` after position `after` changed.
pub async fn read(store: &dyn Store, workspace: Uuid, after: u64) -> Result<Read, StoreError> {
    let position = store.position(workspace).await?.seq;
    if position <= after {
        return Ok(Read::Current(position));
    }
    if after == 0 {
        return Ok(Read::Reload);
    }
    let mut from = (after, u32::MAX);
    let mut changes = HashSet::new();
    let mut committed_at_ms = Vec::new();
    loop {
        let read = store
            .read_changes(
                workspace,
                LogWindow {
                    after: from,
                    upto: position,
                    max_parts: PARTS_PER_READ,
                },
            )
            .await?;
        if read.pruned_through > after {
            return Ok(Read::Reload);
        }
        let Some(last) = read.parts.last() else {
            break;
        };
        from = (last.position, last.part);
        for part in &read.parts {
            if part.part == 0 {
                committed_at_ms.push(part.committed_at_ms);
            }
            let decoded = crate::entries::decode(&part.entries).map_err(|e| {
                StoreError::Corrupt(format!(
                    "change log part {}.{} of workspace {workspace}: {e}",
                    part.position, part.part
                ))
            })?;
            changes.extend(decoded);
        }
        if read.parts.len() < PARTS_PER_READ {
            break;
        }
    }
    let changes: Vec<Change> = changes.into_iter().collect();
    let current = store.read_current(workspace, &changes).await?;
    Ok(Read::Changes(Box::new(Stretch {
        position,
        committed_at_ms,
        changes,
        current,
    })))
}

/// Brings `state` to the stretch's position: the records it names as read, the stages
/// and workspace row as read, and the tombstones of its changes as read.
pub fn apply(state: &mut WorkspaceState, stretch: Stretch) {
    let Stretch {
        position,
        changes,
        current,
        ..
    } = stretch;
    if let Some(ws) = current.workspace {
        if *state.workspace != ws {
            state.set_workspace(ws);
        }
    }
    let stages: HashSet<Uuid> = current.stages.iter().filter_map(Record::uuid).collect();
    let gone: Vec<Uuid> = state
        .stages
        .iter()
        .map(|(id, _)| *id)
        .filter(|id| !stages.contains(id))
        .collect();
    for id in gone {
        state.delete(RecordKind::Stage, &id.to_string());
    }
    for stage in current.stages {
        state.put(stage);
    }

    let mut found: HashMap<(RecordKind, String), Record> = current
        .records
        .into_iter()
        .map(|r| ((r.kind(), r.id_string()), r))
        .collect();
    let keys = current.keys;
    // Deletions first, dependents before what they hang on; then puts, in load order.
    for (kind, id) in keys.iter().rev() {
        if !found.contains_key(&(*kind, id.clone())) {
            state.delete(*kind, id);
        }
    }
    for key in keys {
        if let Some(record) = found.remove(&key) {
            state.put(record);
        }
    }
    // The writer's last commit may have touched records whose rows are not stored again
    // yet: they are read back as they were, and take the marker's stamp.
    if let Some(marker) = &current.touched {
        marker.touched.apply(state);
    }

    let left: HashMap<Change, crate::time::Stamp> = current.tombstones.into_iter().collect();
    for change in changes {
        match left.get(&change) {
            Some(at) => {
                state.advance_clock(*at);
                state.tombstones.set(change, *at);
            }
            None => state.tombstones.clear(&change),
        }
    }
    state.position = position;
}
