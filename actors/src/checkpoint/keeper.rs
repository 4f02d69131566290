//! The keeper: writes each loaded workspace's checkpoint when the store has moved past
//! the one on disk. It looks once every workspace has loaded (so a full load is followed
//! by a checkpoint), then every `interval`, and once more at shutdown ([`Keeper::flush`]).
//!
//! A look costs one read of the store's commit position per workspace. A write takes
//! the published state and its exact position from the workspace's actor (a store round
//! trip between two batches, see `ReadPosition`) and writes the file on a thread of its
//! own at a lower CPU priority; the state is a persistent value, so the actor and the
//! readers go on meanwhile. Writes of one keeper never overlap.

use super::files::CheckpointDir;
use crate::actor::{Positioned, ReadPosition};
use crate::registry::Registry;
use crate::store::{CommitPosition, Store};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use uuid::Uuid;

pub struct Keeper {
    store: Arc<dyn Store>,
    registry: Arc<Registry>,
    dir: CheckpointDir,
    interval: Duration,
    /// The position of each workspace's checkpoint on disk, once known (written, or
    /// restored from).
    on_disk: Mutex<HashMap<Uuid, CommitPosition>>,
    /// One look at a time (the periodic one and the one at shutdown).
    looking: tokio::sync::Mutex<()>,
}

impl Keeper {
    pub fn new(
        store: Arc<dyn Store>,
        registry: Arc<Registry>,
        dir: CheckpointDir,
        interval: Duration,
    ) -> Arc<Self> {
        Arc::new(Keeper {
            store,
            registry,
            dir,
            interval,
            on_disk: Mutex::new(HashMap::new()),
            looking: tokio::sync::Mutex::new(()),
        })
    }

    pub fn dir(&self) -> &CheckpointDir {
        &self.dir
    }

    /// Records that the workspace's checkpoint on disk is at `position` (it was just
    /// restored from).
    pub fn on_disk(&self, workspace: Uuid, position: CommitPosition) {
        self.on_disk.lock().insert(workspace, position);
    }

    /// Runs until the process ends: a look once every workspace has loaded, then one
    /// every `interval`.
    pub async fn run(self: Arc<Self>) {
        while !self.registry.is_ready() {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        loop {
            self.look().await;
            // Says when a write is sure to be left to the next look (or the shutdown).
            tracing::debug!(next_in_s = self.interval.as_secs(), "checkpoint look done");
            tokio::time::sleep(self.interval).await;
        }
    }

    /// The last look, at shutdown, given at most `limit`: a restart then starts from the
    /// state the server stopped with. A write cut off by the limit leaves the previous
    /// checkpoint in place.
    pub async fn flush(&self, limit: Duration) {
        if tokio::time::timeout(limit, self.look()).await.is_err() {
            tracing::warn!(
                limit_s = limit.as_secs(),
                "writing checkpoints at shutdown took too long; the next start may load from the store"
            );
        }
    }

    /// Writes the checkpoint of every loaded workspace whose store position moved past
    /// the one on disk. Failures are logged; the next look tries again.
    pub async fn look(&self) {
        let _one = self.looking.lock().await;
        for (id, _) in self.registry.slots() {
            let Some(handle) = self.registry.handle(id) else {
                continue;
            };
            let known = self.on_disk.lock().get(&id).copied();
            match self.store.position(id).await {
                Ok(now) if Some(now) == known => continue,
                Ok(_) => {}
                Err(e) => {
                    tracing::debug!(workspace = %id, error = %e, "checkpoint: reading the commit position failed");
                    continue;
                }
            }
            let Positioned { state, position } = match handle.addr.send(ReadPosition).await {
                Ok(Ok(p)) => p,
                Ok(Err(e)) => {
                    tracing::debug!(workspace = %id, error = %e, "checkpoint: reading the commit position failed");
                    continue;
                }
                Err(_) => continue,
            };
            if Some(position) == known {
                continue;
            }
            let started = Instant::now();
            let dir = self.dir.clone();
            let (done, saved) = tokio::sync::oneshot::channel();
            let spawned = std::thread::Builder::new()
                .name("checkpoint".into())
                .spawn(move || {
                    crate::actor::lower_cpu_priority();
                    let _ = done.send(dir.save(&state, position));
                    // Dropping the last hold on an old state frees its records: here, not
                    // on the runtime.
                    drop(state);
                });
            if let Err(e) = spawned {
                tracing::warn!(workspace = %id, error = %e, "could not start writing a checkpoint");
                continue;
            }
            match saved.await {
                Ok(Ok(saved)) => {
                    self.on_disk.lock().insert(id, position);
                    tracing::info!(
                        workspace = %id,
                        %position,
                        records = saved.records,
                        bytes = saved.bytes,
                        elapsed_ms = started.elapsed().as_millis() as u64,
                        "checkpoint written"
                    );
                }
                Ok(Err(e)) => {
                    tracing::warn!(workspace = %id, error = %e, "writing a checkpoint failed")
                }
                Err(_) => tracing::warn!(workspace = %id, "writing a checkpoint failed"),
            }
        }
    }
}
