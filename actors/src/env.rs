//! What a workspace actor works with, built once at start-up and shared by every actor:
//! the store, the blob store, the key ring, the actors' settings, and the observer told
//! of commits and reclaimed bytes. Nothing else reaches an actor: it has no way to the
//! directory of workspaces, the loader, or the server around it.

use crate::keys::KeyRing;
use crate::store::{BlobStore, Reclaimed, Store};
use std::sync::Arc;
use std::time::Duration;

/// Most API writes committed in one transaction, unless configured otherwise.
pub const MAX_BATCH: usize = 256;

/// The actors' settings.
#[derive(Clone, Copy, Debug)]
pub struct ActorConfig {
    /// Most API writes a workspace commits in one transaction (1 turns group commit off).
    pub write_batch_max: usize,
}

impl Default for ActorConfig {
    fn default() -> Self {
        ActorConfig {
            write_batch_max: MAX_BATCH,
        }
    }
}

/// Which kind of batch a store commit carried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommitKind {
    Writes,
    Import,
    /// The rows a batch of writes touched, stored after its commit
    /// (`crate::store::Touched`).
    Touched,
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
    fn commit(&self, kind: CommitKind, elapsed: Duration, ok: bool);

    fn reclaimed(&self, _by: ReclaimedBy, _done: Reclaimed) {}
}

/// An observer that notes nothing.
pub struct NoObserver;

impl CommitObserver for NoObserver {
    fn commit(&self, _: CommitKind, _: Duration, _: bool) {}
}

/// The environment of every workspace actor.
pub struct ActorEnv {
    pub store: Arc<dyn Store>,
    pub blobs: Arc<dyn BlobStore>,
    /// Imports add the keys their snapshots carry, once committed.
    pub keys: Arc<KeyRing>,
    pub config: ActorConfig,
    pub observer: Arc<dyn CommitObserver>,
    /// States published by every actor so far: a reader that keeps what it last saw
    /// of the copies' positions asks again only when this (with the registry's own
    /// count, `Registry::generation`) moved, rather than walk thousands of idle ones.
    pub publications: std::sync::atomic::AtomicU64,
}

impl ActorEnv {
    /// An environment with the default settings and no observer.
    pub fn new(store: Arc<dyn Store>, blobs: Arc<dyn BlobStore>, keys: Arc<KeyRing>) -> Self {
        ActorEnv {
            store,
            blobs,
            keys,
            config: ActorConfig::default(),
            observer: Arc::new(NoObserver),
            publications: Default::default(),
        }
    }

    /// Most API writes committed in one transaction; at least 1.
    pub fn write_batch_max(&self) -> usize {
        self.config.write_batch_max.max(1)
    }
}
