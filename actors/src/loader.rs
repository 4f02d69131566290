//! Loading the workspaces at start: each is read from the store into a fresh state
//! ([`WorkspaceState::load`]) and installed in the directory, which starts its actor.
//! A workspace whose load fails is tried again with backoff until it loads, and the
//! loader says which ones wait and why (the admin interface's `ready`, the metrics).

use crate::actor::SweepBlobs;
use crate::checkpoint::keeper::Keeper;
use crate::model::Workspace;
use crate::registry::Registry;
use crate::state::WorkspaceState;
use crate::store::{Store, StoreError};
use dashmap::DashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use uuid::Uuid;

/// Why a workspace is not loaded yet: its last load attempt failed.
#[derive(Clone, Debug)]
pub struct LoadFailure {
    /// Failed attempts so far.
    pub attempts: u32,
    /// The last attempt's error.
    pub error: StoreError,
    /// When the next attempt starts.
    pub retry_at: Instant,
}

/// First wait before a failed workspace load is tried again; doubled after every
/// failure up to `LOAD_RETRY_MAX`.
pub const LOAD_RETRY_FIRST: Duration = Duration::from_millis(500);
pub const LOAD_RETRY_MAX: Duration = Duration::from_secs(30);

pub struct Loader {
    store: Arc<dyn Store>,
    registry: Arc<Registry>,
    /// Where checkpoints are read from (and who writes them), when they are kept.
    checkpoints: Option<Arc<Keeper>>,
    /// Workspaces whose last load attempt failed, and why; retried with backoff.
    failures: DashMap<Uuid, LoadFailure>,
    /// Whether a loaded workspace's blob store may be swept now (see
    /// [`Loader::sweep_only_when`]); always, when unset.
    may_sweep: std::sync::OnceLock<SweepGate>,
}

/// Says whether a workspace's blob store may be swept of objects its state does not
/// name.
pub type SweepGate = Arc<dyn Fn() -> bool + Send + Sync>;

impl Loader {
    pub fn new(store: Arc<dyn Store>, registry: Arc<Registry>) -> Arc<Self> {
        Self::with_checkpoints(store, registry, None)
    }

    /// A loader that first tries each workspace's checkpoint (see [`crate::checkpoint`]).
    pub fn with_checkpoints(
        store: Arc<dyn Store>,
        registry: Arc<Registry>,
        checkpoints: Option<Arc<Keeper>>,
    ) -> Arc<Self> {
        Arc::new(Loader {
            store,
            registry,
            checkpoints,
            failures: DashMap::new(),
            may_sweep: std::sync::OnceLock::new(),
        })
    }

    /// Sweeps a loaded workspace's blob store only when `gate` says so (set once, before
    /// loading; later calls change nothing). With several servers on one store, an
    /// import on another writes its objects before it commits their records, and a
    /// sweep from a state that lacks them would remove them.
    pub fn sweep_only_when(&self, gate: SweepGate) {
        let _ = self.may_sweep.set(gate);
    }

    /// One workspace's state: from its checkpoint when one holds at the store's current
    /// commit position, otherwise read from the store.
    async fn load(&self, w: Workspace) -> Result<WorkspaceState, StoreError> {
        if let Some(keeper) = &self.checkpoints {
            let position = self.store.position(w.id).await?;
            let started = Instant::now();
            match keeper.dir().load(&w, position) {
                Ok(Some(mut state)) => {
                    // Not in the checkpoint: few, and read in one query.
                    state.tombstones =
                        crate::tombstones::Tombstones::build(self.store.tombstones(w.id).await?);
                    keeper.on_disk(w.id, position);
                    tracing::info!(workspace = %w.id, %position, elapsed_ms = started.elapsed().as_millis() as u64, "restored from the checkpoint");
                    return Ok(state);
                }
                Ok(None) => {}
                Err(why) => {
                    tracing::info!(workspace = %w.id, %why, "checkpoint not used; loading from the store")
                }
            }
        }
        WorkspaceState::load(&*self.store, w).await
    }

    /// Reads a loaded workspace afresh from the store (its checkpoint when one holds at
    /// the store's position) and puts the new copy in place of the old one: for a copy
    /// that fell behind the store (another server wrote the workspace meanwhile).
    pub async fn reload(&self, id: Uuid) -> Result<(), StoreError> {
        let workspace =
            match self.registry.handle(id) {
                Some(h) => (*h.state().workspace).clone(),
                None => self.store.workspace(id).await?.ok_or_else(|| {
                    StoreError::Other(format!("workspace {id} is not in the store"))
                })?,
            };
        let started = Instant::now();
        let state = self.load(workspace).await?;
        let records = state.stored_records();
        self.registry.install(state);
        crate::memory::return_free_memory();
        tracing::info!(workspace = %id, records, elapsed_ms = started.elapsed().as_millis() as u64, "workspace reloaded");
        Ok(())
    }

    /// Lists the workspaces and marks them loading in the directory. Call before
    /// accepting requests.
    pub async fn discover(&self) -> Result<Vec<Workspace>, StoreError> {
        self.discover_where(|_| true).await
    }

    /// As [`Loader::discover`], for the workspaces `hold` keeps only (with several
    /// servers on one store, those placed on this one).
    pub async fn discover_where(
        &self,
        hold: impl Fn(&Workspace) -> bool,
    ) -> Result<Vec<Workspace>, StoreError> {
        let mut list = self.store.workspaces().await?;
        list.retain(|w| hold(w));
        self.registry.expect(&list);
        if list.is_empty() {
            self.registry.set_ready();
        }
        Ok(list)
    }

    /// Loads each discovered workspace in turn, publishing each as soon as it is ready.
    /// A workspace whose load fails (the store went away, a record does not decode) is
    /// tried again after the others, with a backoff from `LOAD_RETRY_FIRST` doubling to
    /// `LOAD_RETRY_MAX`, until it loads: it never stays "loading" for good, and
    /// [`failures`](Self::failures) says which ones wait and why. Building the state is
    /// CPU work: run this on a thread of its own.
    pub async fn load_all(&self, list: Vec<Workspace>) {
        let mut pending = list;
        let mut backoff = LOAD_RETRY_FIRST;
        loop {
            let mut failed = Vec::new();
            for w in pending {
                let started = Instant::now();
                match self.load(w.clone()).await {
                    Ok(state) => {
                        let id = state.id();
                        let records = state.stored_records();
                        let handle = self.registry.install(state);
                        crate::memory::return_free_memory();
                        // Off the path to ready: the actor sweeps the blob store before
                        // it takes any import (the only writer of blobs).
                        if self.may_sweep.get().is_none_or(|may| may()) {
                            handle.addr.do_send(SweepBlobs);
                        } else {
                            tracing::info!(workspace = %id, "blob sweep left for a later start: other servers use the store");
                        }
                        self.failures.remove(&id);
                        tracing::info!(workspace = %id, records, elapsed_ms = started.elapsed().as_millis() as u64, "workspace loaded");
                    }
                    Err(error) => {
                        let attempts = self.failures.get(&w.id).map_or(0, |f| f.attempts) + 1;
                        tracing::error!(workspace = %w.id, attempts, retry_in_ms = backoff.as_millis() as u64, error = %error, "loading the workspace failed; trying again");
                        self.failures.insert(
                            w.id,
                            LoadFailure {
                                attempts,
                                error,
                                retry_at: Instant::now() + backoff,
                            },
                        );
                        failed.push(w);
                    }
                }
            }
            if failed.is_empty() {
                break;
            }
            pending = failed;
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(LOAD_RETRY_MAX);
        }
        self.registry.set_ready();
    }

    /// Workspaces not loaded yet because their last load attempt failed.
    pub fn failures(&self) -> Vec<(Uuid, LoadFailure)> {
        let mut v: Vec<_> = self
            .failures
            .iter()
            .map(|e| (*e.key(), e.value().clone()))
            .collect();
        v.sort_by_key(|(id, _)| *id);
        v
    }
}
