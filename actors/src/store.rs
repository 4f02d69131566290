//! The Store port: where a workspace's raw facts live durably.
//!
//! The domain defines what it needs from a store; `src/store` adapts SQLite and
//! PostgreSQL to it, and `MemoryStore` serves tests of the domain without a database.

use crate::model::{ApiKey, Record, RecordKind, Workspace};
use async_trait::async_trait;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::Arc;
use uuid::Uuid;

/// Why the store failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// The store cannot be reached or did not answer in time: retry later.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// Stored data could not be read back (a bug or a hand-edited database).
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    /// Anything else the store reported.
    #[error("store error: {0}")]
    Other(String),
}

/// Everything one commit writes, applied in a single transaction.
#[derive(Clone, Debug, Default)]
pub struct ChangeSet {
    /// The workspace's own description, when it is created or changed.
    pub workspace: Option<Workspace>,
    pub upserts: Vec<Record>,
    pub deletes: Vec<(RecordKind, String)>,
    /// Keys created or replaced (secret hashes only).
    pub keys: Vec<ApiKey>,
}

impl ChangeSet {
    pub fn is_empty(&self) -> bool {
        self.workspace.is_none()
            && self.upserts.is_empty()
            && self.deletes.is_empty()
            && self.keys.is_empty()
    }
}

/// Receives records one at a time while a workspace loads (no whole-workspace buffer).
pub type RecordSink<'a> = &'a mut (dyn FnMut(Record) + Send);

#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// Every workspace the store holds.
    async fn workspaces(&self) -> Result<Vec<Workspace>, StoreError>;

    /// Streams every record of a workspace into `sink`.
    async fn load_records(&self, workspace: Uuid, sink: RecordSink<'_>) -> Result<(), StoreError>;

    /// Applies a change set to one workspace atomically: all of it or nothing.
    async fn commit(&self, workspace: Uuid, changes: &ChangeSet) -> Result<(), StoreError>;

    /// Every API key, of every workspace.
    async fn keys(&self) -> Result<Vec<ApiKey>, StoreError>;

    /// Marks a key revoked; the key as it now stands, or `None` for an unknown id.
    async fn revoke_key(&self, id: &str) -> Result<Option<ApiKey>, StoreError>;

    /// Closes the store cleanly (e.g. folds SQLite's write-ahead log into the database so
    /// the next open is quick). Later calls fail as `Unavailable`.
    async fn close(&self) {}
}

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
    workspaces: BTreeMap<Uuid, Workspace>,
    records: BTreeMap<(Uuid, RecordKind, String), Record>,
    keys: BTreeMap<String, ApiKey>,
}

impl MemoryStore {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    fn check(&self) -> Result<(), StoreError> {
        if self.fail.load(std::sync::atomic::Ordering::SeqCst) {
            Err(StoreError::Unavailable("memory store set to fail".into()))
        } else {
            Ok(())
        }
    }
}

#[async_trait]
impl Store for MemoryStore {
    async fn workspaces(&self) -> Result<Vec<Workspace>, StoreError> {
        self.check()?;
        Ok(self.inner.lock().workspaces.values().cloned().collect())
    }

    async fn load_records(&self, workspace: Uuid, sink: RecordSink<'_>) -> Result<(), StoreError> {
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

    async fn commit(&self, workspace: Uuid, changes: &ChangeSet) -> Result<(), StoreError> {
        self.check()?;
        let mut g = self.inner.lock();
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
        Ok(())
    }

    async fn keys(&self) -> Result<Vec<ApiKey>, StoreError> {
        self.check()?;
        Ok(self.inner.lock().keys.values().cloned().collect())
    }

    async fn revoke_key(&self, id: &str) -> Result<Option<ApiKey>, StoreError> {
        self.check()?;
        let mut g = self.inner.lock();
        Ok(g.keys.get_mut(id).map(|k| {
            k.revoked = true;
            k.clone()
        }))
    }
}

/// Where attachment bytes live. Bytes are written before the commit that records them,
/// so a record never claims bytes the blob store lacks.
pub trait BlobStore: Send + Sync + 'static {
    /// Stores (or replaces) the bytes of one attachment, durably.
    fn put(&self, workspace: Uuid, attachment_id: &str, bytes: &[u8]) -> Result<(), StoreError>;

    /// Stores many attachments, durably once it returns. Stores override this when a
    /// batch can be made durable more cheaply than item by item.
    fn put_many(&self, workspace: Uuid, items: &[(String, Vec<u8>)]) -> Result<(), StoreError> {
        for (id, bytes) in items {
            self.put(workspace, id, bytes)?;
        }
        Ok(())
    }
}

/// Blobs in memory, for tests.
#[derive(Default)]
pub struct MemoryBlobs {
    inner: Mutex<BTreeMap<(Uuid, String), Vec<u8>>>,
}

impl MemoryBlobs {
    pub fn get(&self, workspace: Uuid, attachment_id: &str) -> Option<Vec<u8>> {
        self.inner
            .lock()
            .get(&(workspace, attachment_id.to_string()))
            .cloned()
    }
}

impl BlobStore for MemoryBlobs {
    fn put(&self, workspace: Uuid, attachment_id: &str, bytes: &[u8]) -> Result<(), StoreError> {
        self.inner
            .lock()
            .insert((workspace, attachment_id.to_string()), bytes.to_vec());
        Ok(())
    }
}
