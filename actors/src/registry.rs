//! The registry: workspace id → its actor and published read view, and the key ring.

use crate::actor::WorkspaceActor;
use crate::model::{hash_secret, ApiKey, Workspace};
use crate::snapshot::KeyDirectory;
use crate::state::WorkspaceState;
use crate::store::{BlobStore, Reclaimed, Store, StoreError};
use actix::{Actor, Addr, ArbiterHandle};
use arc_swap::ArcSwap;
use dashmap::DashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use uuid::Uuid;

/// A loaded workspace: the actor that writes it and the state it last published.
#[derive(Clone)]
pub struct WorkspaceHandle {
    pub addr: Addr<WorkspaceActor>,
    /// Swapped by the actor after each commit; loaded by readers without locking.
    pub view: Arc<ArcSwap<WorkspaceState>>,
}

impl WorkspaceHandle {
    /// The current state: one consistent view for as long as the caller holds it.
    pub fn state(&self) -> Arc<WorkspaceState> {
        self.view.load_full()
    }
}

/// A workspace as the registry knows it.
#[derive(Clone)]
pub enum Slot {
    /// Still being read from the store: requests answer 503 with Retry-After.
    Loading,
    Ready(WorkspaceHandle),
}

/// All API keys, by secret hash (the authentication path) and by id (admin paths).
#[derive(Default)]
pub struct KeyRing {
    by_hash: DashMap<[u8; 32], Arc<ApiKey>>,
    by_id: DashMap<String, Arc<ApiKey>>,
}

impl KeyRing {
    /// Inserts or replaces a key (after the store has committed it).
    pub fn put(&self, key: ApiKey) {
        let key = Arc::new(key);
        if let Some(old) = self.by_id.insert(key.id.clone(), key.clone()) {
            if old.secret_hash != key.secret_hash {
                self.by_hash.remove(&old.secret_hash);
            }
        }
        self.by_hash.insert(key.secret_hash, key);
    }

    /// The key a client presented, by its secret (revoked keys included; callers check).
    pub fn by_secret(&self, secret: &str) -> Option<Arc<ApiKey>> {
        self.by_hash
            .get(&hash_secret(secret))
            .map(|k| k.value().clone())
    }

    pub fn by_id(&self, id: &str) -> Option<Arc<ApiKey>> {
        self.by_id.get(id).map(|k| k.value().clone())
    }
}

impl KeyDirectory for KeyRing {
    fn key(&self, key_id: &str) -> Option<ApiKey> {
        self.by_id(key_id).map(|k| (*k).clone())
    }
    fn key_by_hash(&self, hash: &[u8; 32]) -> Option<String> {
        self.by_hash.get(hash).map(|k| k.id.clone())
    }
}

/// Which kind of batch a store commit carried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommitKind {
    Writes,
    Import,
}

/// What removed attachment bytes from the blob store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReclaimedBy {
    /// An import's deletions, after its commit.
    Import,
    /// The sweep of a workspace as it loads (what a crash or a failed commit left).
    Sweep,
}

/// Told about every store commit, and about blob bytes reclaimed (for metrics); must be
/// cheap and never block.
pub trait CommitObserver: Send + Sync {
    fn commit(&self, kind: CommitKind, elapsed: std::time::Duration, ok: bool);

    fn reclaimed(&self, _by: ReclaimedBy, _done: Reclaimed) {}
}

pub struct Registry {
    pub store: Arc<dyn Store>,
    pub blobs: Arc<dyn BlobStore>,
    pub keys: KeyRing,
    workspaces: DashMap<Uuid, Slot>,
    /// Where workspace actors run: one arbiter (thread) for all of them, apart from the
    /// HTTP workers, so that a long import never stalls request handling.
    actors: ArbiterHandle,
    /// Set once every workspace found at start has loaded.
    ready: AtomicBool,
    /// Most API writes a workspace commits in one transaction (1 turns group commit off).
    write_batch_max: AtomicUsize,
    observer: parking_lot::RwLock<Option<Arc<dyn CommitObserver>>>,
    /// Workspaces whose last load attempt failed, and why; retried with backoff.
    load_failures: DashMap<Uuid, LoadFailure>,
}

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

impl Registry {
    pub fn new(
        store: Arc<dyn Store>,
        blobs: Arc<dyn BlobStore>,
        actors: ArbiterHandle,
    ) -> Arc<Self> {
        Arc::new(Registry {
            store,
            blobs,
            keys: KeyRing::default(),
            workspaces: DashMap::new(),
            actors,
            ready: AtomicBool::new(false),
            write_batch_max: AtomicUsize::new(crate::actor::MAX_BATCH),
            observer: parking_lot::RwLock::new(None),
            load_failures: DashMap::new(),
        })
    }

    /// Most API writes committed in one transaction; at least 1.
    pub fn write_batch_max(&self) -> usize {
        self.write_batch_max.load(Ordering::Relaxed).max(1)
    }

    pub fn set_write_batch_max(&self, n: usize) {
        self.write_batch_max.store(n.max(1), Ordering::Relaxed);
    }

    /// Reports every store commit to `observer` from now on.
    pub fn set_observer(&self, observer: Arc<dyn CommitObserver>) {
        *self.observer.write() = Some(observer);
    }

    pub(crate) fn observe_commit(&self, kind: CommitKind, elapsed: std::time::Duration, ok: bool) {
        if let Some(o) = &*self.observer.read() {
            o.commit(kind, elapsed, ok);
        }
    }

    pub(crate) fn observe_reclaimed(&self, by: ReclaimedBy, done: Reclaimed) {
        if let Some(o) = &*self.observer.read() {
            o.reclaimed(by, done);
        }
    }

    /// Every known workspace and its state (a snapshot of the map).
    pub fn slots(&self) -> Vec<(Uuid, Slot)> {
        self.workspaces
            .iter()
            .map(|e| (*e.key(), e.value().clone()))
            .collect()
    }

    pub fn slot(&self, id: Uuid) -> Option<Slot> {
        self.workspaces.get(&id).map(|s| s.value().clone())
    }

    pub fn handle(&self, id: Uuid) -> Option<WorkspaceHandle> {
        match self.slot(id)? {
            Slot::Ready(h) => Some(h),
            Slot::Loading => None,
        }
    }

    /// True once every workspace present at start-up is loaded.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// Reads every key from the store into the key ring.
    pub async fn load_keys(&self) -> Result<usize, StoreError> {
        let keys = self.store.keys().await?;
        let n = keys.len();
        for k in keys {
            self.keys.put(k);
        }
        Ok(n)
    }

    /// Lists the workspaces and marks them loading. Call before accepting requests.
    pub async fn discover(&self) -> Result<Vec<Workspace>, StoreError> {
        let list = self.store.workspaces().await?;
        for w in &list {
            self.workspaces.entry(w.id).or_insert(Slot::Loading);
        }
        if list.is_empty() {
            self.ready.store(true, Ordering::Release);
        }
        Ok(list)
    }

    /// Loads each discovered workspace in turn, publishing each as soon as it is ready.
    /// A workspace whose load fails (the store went away, a record does not decode) is
    /// tried again after the others, with a backoff from `LOAD_RETRY_FIRST` doubling to
    /// `LOAD_RETRY_MAX`, until it loads: it never stays "loading" for good, and
    /// [`load_failures`](Self::load_failures) says which ones wait and why. Building the
    /// state is CPU work: run this on a thread of its own.
    pub async fn load_all(self: &Arc<Self>, list: Vec<Workspace>) {
        let mut pending = list;
        let mut backoff = LOAD_RETRY_FIRST;
        loop {
            let mut failed = Vec::new();
            for w in pending {
                let started = Instant::now();
                match Self::load_state(&*self.store, w.clone()).await {
                    Ok(state) => {
                        let id = state.id();
                        let records = state.stored_records();
                        let handle = self.install(state);
                        // Off the path to ready: the actor sweeps the blob store before
                        // it takes any import (the only writer of blobs).
                        handle.addr.do_send(crate::actor::SweepBlobs);
                        self.load_failures.remove(&id);
                        tracing::info!(workspace = %id, records, elapsed_ms = started.elapsed().as_millis() as u64, "workspace loaded");
                    }
                    Err(error) => {
                        let attempts = self.load_failures.get(&w.id).map_or(0, |f| f.attempts) + 1;
                        tracing::error!(workspace = %w.id, attempts, retry_in_ms = backoff.as_millis() as u64, error = %error, "loading the workspace failed; trying again");
                        self.load_failures.insert(
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
        self.ready.store(true, Ordering::Release);
    }

    /// Workspaces not loaded yet because their last load attempt failed.
    pub fn load_failures(&self) -> Vec<(Uuid, LoadFailure)> {
        let mut v: Vec<_> = self
            .load_failures
            .iter()
            .map(|e| (*e.key(), e.value().clone()))
            .collect();
        v.sort_by_key(|(id, _)| *id);
        v
    }

    /// Reads one workspace's records into a fresh state.
    pub async fn load_state(store: &dyn Store, w: Workspace) -> Result<WorkspaceState, StoreError> {
        let mut state = WorkspaceState::new(w);
        let id = state.id();
        // The indexes are built once at the end: a base from every record, no delta.
        state.defer_search();
        store.load_records(id, &mut |r| state.put(r)).await?;
        state.rebuild_search();
        Ok(state)
    }

    fn start_actor(self: &Arc<Self>, state: WorkspaceState) -> WorkspaceHandle {
        let id = state.id();
        let view = Arc::new(ArcSwap::from_pointee(state));
        let actor = WorkspaceActor::new(id, view.clone(), self.clone());
        let addr = WorkspaceActor::start_in_arbiter(&self.actors, move |_| actor);
        WorkspaceHandle { addr, view }
    }

    /// Starts the actor for a loaded state and publishes it.
    pub fn install(self: &Arc<Self>, state: WorkspaceState) -> WorkspaceHandle {
        let id = state.id();
        let handle = self.start_actor(state);
        self.workspaces.insert(id, Slot::Ready(handle.clone()));
        handle
    }

    /// The handle of a workspace, created empty when it does not exist yet (a first
    /// import). `None` while it is still loading. Concurrent first imports of one new
    /// workspace get the same actor (the map entry is held while it is created).
    pub fn handle_or_create(self: &Arc<Self>, w: &Workspace) -> Option<WorkspaceHandle> {
        let slot = self
            .workspaces
            .entry(w.id)
            .or_insert_with(|| Slot::Ready(self.start_actor(WorkspaceState::new(w.clone()))))
            .value()
            .clone();
        match slot {
            Slot::Ready(h) => Some(h),
            Slot::Loading => None,
        }
    }
}
