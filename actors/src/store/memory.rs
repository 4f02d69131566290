//! `MemoryStore`: the Store port in memory, for the domain's own tests. Apart from the
//! port so that the port reads as the contract alone.

use super::StoreResult;
use super::{
    now_ms, ChangeSet, CommitPosition, Current, LogPart, LogRead, LogWindow, Pruned, RecordSink,
    Store, StoreError, TouchMarker,
};
use crate::entries::Change;
use crate::model::{ApiKey, Record, RecordKind, Workspace};
use crate::time::Stamp;
use async_trait::async_trait;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::Arc;
use uuid::Uuid;

/// A store in memory, for the domain's own tests.
#[derive(Default)]
pub struct MemoryStore {
    // One mutex over everything: commits must be atomic, and tests are small.
    inner: Mutex<MemoryInner>,
    /// When set, every call fails as `Unavailable` (to test outage handling).
    pub fail: std::sync::atomic::AtomicBool,
}

#[derive(Default)]
struct MemoryInner {
    marks: BTreeMap<Uuid, Uuid>,
    positions: BTreeMap<Uuid, CommitPosition>,
    workspaces: BTreeMap<Uuid, Workspace>,
    records: BTreeMap<(Uuid, RecordKind, String), Record>,
    keys: BTreeMap<String, ApiKey>,
    log: BTreeMap<(Uuid, u64, u32), LogPart>,
    pruned: BTreeMap<Uuid, u64>,
    tombstones: BTreeMap<(Uuid, Change), Stamp>,
    touches: BTreeMap<Uuid, TouchMarker>,
}

impl MemoryStore {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    fn check(&self) -> StoreResult<()> {
        if self.fail.load(std::sync::atomic::Ordering::SeqCst) {
            Err(StoreError::Unavailable("memory store set to fail".into()))
        } else {
            Ok(())
        }
    }
}

#[async_trait]
impl Store for MemoryStore {
    async fn workspaces(&self) -> StoreResult<Vec<Workspace>> {
        self.check()?;
        Ok(self.inner.lock().workspaces.values().cloned().collect())
    }

    async fn load_records(&self, workspace: Uuid, sink: RecordSink<'_>) -> StoreResult<()> {
        self.check()?;
        let records: Vec<Record> = self
            .inner
            .lock()
            .records
            .iter()
            .filter(|((w, _, _), _)| *w == workspace)
            .map(|(_, r)| r.clone())
            .collect();
        records.into_iter().for_each(sink);
        Ok(())
    }

    async fn commit(&self, workspace: Uuid, changes: &ChangeSet) -> StoreResult<()> {
        self.check()?;
        let mut g = self.inner.lock();
        if changes.moves_position() {
            if let Some(marker) = g.touches.get(&workspace) {
                return Err(StoreError::TouchPending(format!(
                    "position {}",
                    marker.position
                )));
            }
        }
        if let Some(w) = &changes.workspace {
            g.workspaces.insert(w.id, w.clone());
        }
        for r in &changes.upserts {
            g.records
                .insert((workspace, r.kind(), r.id_string()), r.clone());
        }
        for (k, id) in &changes.deletes {
            g.records.remove(&(workspace, *k, id.clone()));
        }
        for k in &changes.keys {
            g.keys.insert(k.id.clone(), k.clone());
        }
        if let Some(b) = changes.batch {
            g.marks.insert(workspace, b);
        }
        if changes.moves_position() {
            let at = g.positions.entry(workspace).or_default();
            at.seq += 1;
            at.tag = Uuid::new_v4();
            let position = at.seq;
            if let Some(touched) = &changes.touched {
                g.touches.insert(
                    workspace,
                    TouchMarker {
                        position,
                        touched: touched.clone(),
                    },
                );
            }
            let committed_at_ms = now_ms();
            for (change, left) in &changes.tombstones {
                match left {
                    Some(left) => g.tombstones.insert((workspace, change.clone()), *left),
                    None => g.tombstones.remove(&(workspace, change.clone())),
                };
            }
            for (part, entries) in changes.log_parts().into_iter().enumerate() {
                g.log.insert(
                    (workspace, position, part as u32),
                    LogPart {
                        position,
                        part: part as u32,
                        committed_at_ms,
                        entries: entries.into_bytes(),
                    },
                );
            }
        }
        Ok(())
    }

    async fn flush_touched(
        &self,
        workspace: Uuid,
        position: u64,
        rows: &[Record],
    ) -> StoreResult<()> {
        self.check()?;
        let mut g = self.inner.lock();
        if g.touches.get(&workspace).map(|m| m.position) != Some(position) {
            return Ok(());
        }
        for r in rows {
            g.records
                .insert((workspace, r.kind(), r.id_string()), r.clone());
        }
        g.touches.remove(&workspace);
        Ok(())
    }

    async fn touches(&self, workspaces: &[Uuid]) -> StoreResult<Vec<Option<TouchMarker>>> {
        self.check()?;
        let g = self.inner.lock();
        Ok(workspaces
            .iter()
            .map(|w| g.touches.get(w).cloned())
            .collect())
    }

    async fn read_changes(&self, workspace: Uuid, window: LogWindow) -> StoreResult<LogRead> {
        use std::ops::Bound;
        self.check()?;
        let g = self.inner.lock();
        let parts = g
            .log
            .range((
                Bound::Excluded((workspace, window.after.0, window.after.1)),
                Bound::Included((workspace, window.upto, u32::MAX)),
            ))
            .take(window.max_parts)
            .map(|(_, p)| p.clone())
            .collect();
        Ok(LogRead {
            pruned_through: g.pruned.get(&workspace).copied().unwrap_or(0),
            parts,
        })
    }

    async fn read_current(&self, workspace: Uuid, changes: &[Change]) -> StoreResult<Current> {
        let keys = crate::entries::stored_keys(changes);
        self.check()?;
        let g = self.inner.lock();
        Ok(Current {
            records: keys
                .iter()
                .filter_map(|(k, id)| g.records.get(&(workspace, *k, id.clone())).cloned())
                .collect(),
            stages: g
                .records
                .iter()
                .filter(|((w, k, _), _)| *w == workspace && *k == RecordKind::Stage)
                .map(|(_, r)| r.clone())
                .collect(),
            workspace: g.workspaces.get(&workspace).cloned(),
            tombstones: changes
                .iter()
                .filter_map(|c| Some((c.clone(), *g.tombstones.get(&(workspace, c.clone()))?)))
                .collect(),
            keys,
            touched: g.touches.get(&workspace).cloned(),
        })
    }

    async fn tombstones(&self, workspace: Uuid) -> StoreResult<Vec<(Change, Stamp)>> {
        self.check()?;
        Ok(self
            .inner
            .lock()
            .tombstones
            .iter()
            .filter(|((w, _), _)| *w == workspace)
            .map(|((_, c), at)| (c.clone(), *at))
            .collect())
    }

    async fn prune_changes(&self, workspace: Uuid, before_ms: i64) -> StoreResult<Pruned> {
        self.check()?;
        let mut g = self.inner.lock();
        let tombstones = g.tombstones.len();
        g.tombstones
            .retain(|(w, _), at| *w != workspace || at.millis() >= before_ms);
        let tombstones_removed = (tombstones - g.tombstones.len()) as u64;
        let doomed: Vec<(Uuid, u64, u32)> = g
            .log
            .iter()
            .filter(|((w, _, _), p)| *w == workspace && p.committed_at_ms < before_ms)
            .map(|(k, _)| *k)
            .collect();
        let mut through = g.pruned.get(&workspace).copied().unwrap_or(0);
        let parts_removed = doomed.len() as u64;
        for k in doomed {
            through = through.max(k.1);
            g.log.remove(&k);
        }
        g.pruned.insert(workspace, through);
        let left = g.log.iter().filter(|((w, _, _), _)| *w == workspace);
        let (parts_left, bytes_left) =
            left.fold((0, 0), |(n, b), (_, p)| (n + 1, b + p.entries.len() as u64));
        Ok(Pruned {
            through,
            parts_removed,
            tombstones_removed,
            parts_left,
            bytes_left,
        })
    }

    async fn position(&self, workspace: Uuid) -> StoreResult<CommitPosition> {
        self.check()?;
        Ok(self
            .inner
            .lock()
            .positions
            .get(&workspace)
            .copied()
            .unwrap_or_default())
    }

    async fn committed(&self, workspace: Uuid, batch: Uuid) -> StoreResult<bool> {
        self.check()?;
        Ok(self.inner.lock().marks.get(&workspace) == Some(&batch))
    }

    async fn keys(&self) -> StoreResult<Vec<ApiKey>> {
        self.check()?;
        Ok(self.inner.lock().keys.values().cloned().collect())
    }

    async fn revoke_key(&self, id: &str) -> StoreResult<Option<ApiKey>> {
        self.check()?;
        let mut g = self.inner.lock();
        Ok(g.keys.get_mut(id).map(|k| {
            k.revoked = true;
            k.clone()
        }))
    }
}
