//! Loading the workspaces at start: each is read from the store into a fresh state
//! (from its checkpoint, or from the store in batches read together) and installed in
//! the directory, which starts its actor.
//! A workspace whose load fails is tried again with backoff until it loads, and the
//! loader says which ones wait and why (the admin interface's `ready`, the metrics).
//! How a batch of states is read from the store is [`read`]'s, which an actor reloading
//! its copy uses too.

pub mod read;

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

/// Workspaces [`Loader::load_all`] reads from the store together (see
/// [`Loader::load_batch`]).
const LOADED_TOGETHER: usize = 32;

/// Batches [`Loader::load_all`] reads at once, so that one's store reads overlap
/// another's building.
const BATCHES_AT_ONCE: usize = 2;

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
    /// commit position, otherwise read from the store (a batch of one).
    async fn load(&self, w: Workspace) -> Result<WorkspaceState, StoreError> {
        let mut states = self.read_batch(std::slice::from_ref(&w)).await?;
        Ok(states.pop().expect("one state a workspace"))
    }

    /// Several workspaces' states, read together: their positions, records and
    /// tombstones in one read each (those restored from a checkpoint read only their
    /// tombstones), so that thousands of small workspaces cost a few round trips per
    /// batch rather than four each. When a read of the batch fails, each is loaded on
    /// its own, so that a failure is its workspace's alone.
    async fn load_batch(
        &self,
        batch: Vec<Workspace>,
    ) -> Vec<(Workspace, Result<WorkspaceState, StoreError>, Instant)> {
        let started = Instant::now();
        match self.read_batch(&batch).await {
            Ok(states) => batch
                .into_iter()
                .zip(states)
                .map(|(w, s)| (w, Ok(s), started))
                .collect(),
            Err(error) => {
                tracing::debug!(workspaces = batch.len(), %error, "a batch of loads failed; loading each on its own");
                let mut out = Vec::with_capacity(batch.len());
                for w in batch {
                    let started = Instant::now();
                    let loaded = self.load(w.clone()).await;
                    out.push((w, loaded, started));
                }
                out
            }
        }
    }

    async fn read_batch(&self, batch: &[Workspace]) -> Result<Vec<WorkspaceState>, StoreError> {
        read::read_states(&*self.store, batch, |w, position| {
            let keeper = self.checkpoints.as_ref()?;
            match keeper.dir().load(w, position) {
                Ok(Some(state)) => {
                    keeper.on_disk(w.id, position);
                    tracing::info!(workspace = %w.id, %position, "restored from the checkpoint");
                    Some(state)
                }
                Ok(None) => None,
                Err(why) => {
                    tracing::info!(workspace = %w.id, %why, "checkpoint not used; loading from the store");
                    None
                }
            }
        })
        .await
    }

    /// Loads a workspace of the store this server does not hold yet (it became placed
    /// here) and installs it, unless it got an actor meanwhile
    /// ([`Registry::install_if_absent`]). A copy already held is never replaced from
    /// here: its actor catches up itself (`crate::actor::Follow`), between its own
    /// commits.
    pub async fn load_absent(&self, id: Uuid) -> Result<(), StoreError> {
        let workspace = self
            .store
            .workspace(id)
            .await?
            .ok_or_else(|| StoreError::Other(format!("workspace {id} is not in the store")))?;
        let started = Instant::now();
        let state = self.load(workspace).await?;
        let records = state.stored_records();
        let installed = self.registry.install_if_absent(state).is_some();
        crate::memory::after_bulk(records);
        if installed {
            tracing::info!(workspace = %id, records, elapsed_ms = started.elapsed().as_millis() as u64, "workspace loaded");
        }
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

    /// Loads the discovered workspaces in batches read together ([`Loader::load_batch`]),
    /// publishing each as soon as it is ready.
    /// A workspace whose load fails (the store went away, a record does not decode) is
    /// tried again after the others, with a backoff from `LOAD_RETRY_FIRST` doubling to
    /// `LOAD_RETRY_MAX`, until it loads: it never stays "loading" for good, and
    /// [`failures`](Self::failures) says which ones wait and why. Building the state is
    /// CPU work: run this on a thread of its own.
    pub async fn load_all(&self, list: Vec<Workspace>) {
        use futures_util::StreamExt;
        let mut pending = list;
        let mut backoff = LOAD_RETRY_FIRST;
        loop {
            let mut failed = Vec::new();
            let batches: Vec<Vec<Workspace>> = pending
                .chunks(LOADED_TOGETHER)
                .map(<[Workspace]>::to_vec)
                .collect();
            let mut loads = futures_util::stream::iter(batches)
                .map(|batch| self.load_batch(batch))
                .buffer_unordered(BATCHES_AT_ONCE)
                .flat_map(futures_util::stream::iter);
            while let Some((w, loaded, started)) = loads.next().await {
                match loaded {
                    Ok(state) => {
                        let id = state.id();
                        let records = state.stored_records();
                        let handle = self.registry.install(state);
                        crate::memory::after_bulk(records);
                        // Off the path to ready: the actor sweeps the blob store before
                        // it takes any import (the only writer of blobs). Where the gate
                        // says no, whoever set it sweeps later, and says so.
                        if self.may_sweep.get().is_none_or(|may| may()) {
                            handle.addr.do_send(SweepBlobs);
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
            drop(loads);
            // Small loads leave a few kilobytes each: given back once for them all.
            crate::memory::return_free_memory();
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
