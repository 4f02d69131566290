//! The Store port: where a workspace's raw facts live durably; and the BlobStore port:
//! where attachment bytes live.
//!
//! The domain defines what it needs from a store; `src/store` adapts SQLite and
//! PostgreSQL to it, and `MemoryStore` serves tests of the domain without a database.
//! Likewise `src/store/blobs.rs` keeps blobs in files, and `MemoryBlobs` in memory.

use crate::entries::Change;
use crate::model::{ApiKey, Record, RecordKind, Workspace};
use crate::time::Stamp;
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
    /// The commit was refused, nothing of it written: this server does not hold the
    /// workspace's writer lease (several servers share the store, and another writes
    /// the workspace now). Retry later, or at the workspace's writer.
    #[error("not the workspace's writer: {0}")]
    Fenced(String),
}

/// Everything one commit writes, applied in a single transaction.
#[derive(Clone, Debug, Default)]
pub struct ChangeSet {
    /// The workspace's own description, when it is created or changed.
    pub workspace: Option<Workspace>,
    pub upserts: Vec<Record>,
    /// Empty, or for each upsert its store body (`Record::to_json`) rendered ahead, by
    /// whoever could do it off the store's thread (an import renders a part on every
    /// core while the store writes the previous one).
    pub rendered: Vec<String>,
    pub deletes: Vec<(RecordKind, String)>,
    /// Keys created or replaced (secret hashes only).
    pub keys: Vec<ApiKey>,
    /// Recorded with the change set in the same transaction, so that [`Store::committed`]
    /// can tell afterwards whether a commit whose answer was lost took effect.
    pub batch: Option<Uuid>,
    /// Records whose API representation changes though they are not written (see
    /// [`crate::changes`]): logged with the upserts and deletes, which the store logs
    /// itself.
    pub derived: Vec<Change>,
    /// Tombstones the commit sets and clears (see [`crate::tombstones`]).
    pub tombstones: Vec<crate::tombstones::TombstoneChange>,
    /// Write no change log for it: the workspace's first commit, which no reader can be
    /// behind (every reader starts from a full sync of a workspace that exists, so at or
    /// after this commit's position). The workspace's row, which makes it exist for
    /// every other reader, goes in its last transaction (`Store::commit_import`): no
    /// server loads the workspace before its first import has committed whole.
    pub unlogged: bool,
    /// Every upsert is of a record the store does not hold: the workspace's first import
    /// into a store without any of its records. A store may insert rather than upsert
    /// (PostgreSQL copies the rows in).
    pub fresh: bool,
}

impl ChangeSet {
    pub fn is_empty(&self) -> bool {
        self.workspace.is_none()
            && self.upserts.is_empty()
            && self.deletes.is_empty()
            && self.keys.is_empty()
            && self.derived.is_empty()
            && self.tombstones.is_empty()
    }

    /// Whether committing it moves the workspace's [`CommitPosition`]: it changes the
    /// workspace's records or description (keys alone do not), or what the API shows of
    /// them.
    pub fn moves_position(&self) -> bool {
        self.workspace.is_some()
            || !self.upserts.is_empty()
            || !self.deletes.is_empty()
            || !self.derived.is_empty()
            || !self.tombstones.is_empty()
    }

    /// The change log's parts of this change set (see [`crate::changes`]).
    pub fn log_parts(&self) -> Vec<crate::entries::EncodedEntries> {
        if self.unlogged {
            return Vec::new();
        }
        crate::entries::encode_parts(
            &self.upserts,
            self.deletes.iter().map(|(k, id)| (*k, id.as_str())),
            &self.derived,
        )
    }
}

/// One part of a workspace's change log as the store keeps it: the entries of one
/// transaction (or a slice of them), at the commit position that transaction moved to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogPart {
    pub position: u64,
    /// 0, 1, … within the position.
    pub part: u32,
    /// When the transaction wrote it, in milliseconds since the epoch.
    pub committed_at_ms: i64,
    /// `crate::changes` encoding.
    pub entries: Vec<u8>,
}

/// Records as the store holds them now, for a follower (see [`Store::read_current`]).
#[derive(Clone, Debug, Default)]
pub struct Current {
    /// The records found of the keys asked for.
    pub records: Vec<Record>,
    /// Every pipeline stage of the workspace.
    pub stages: Vec<Record>,
    /// The workspace's row (`None`: not in the store).
    pub workspace: Option<Workspace>,
    /// The changes asked for that have a tombstone, and when their records left.
    pub tombstones: Vec<(Change, Stamp)>,
}

/// A read of the change log: the parts asked for, and how far the log has been pruned
/// (parts at or below `pruned_through` are gone).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogRead {
    pub pruned_through: u64,
    pub parts: Vec<LogPart>,
}

/// What a pruning removed, and what the workspace's log holds after it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pruned {
    /// The position the log is pruned through: a token before it must resync.
    pub through: u64,
    pub parts_removed: u64,
    pub tombstones_removed: u64,
    /// Parts left, and the bytes of their encoded entries.
    pub parts_left: u64,
    pub bytes_left: u64,
}

/// Milliseconds since the epoch now, as the store stamps log parts.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Receives records one at a time while a workspace loads (no whole-workspace buffer).
pub type RecordSink<'a> = &'a mut (dyn FnMut(Record) + Send);

#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// Every workspace the store holds.
    async fn workspaces(&self) -> Result<Vec<Workspace>, StoreError>;

    /// One workspace's row, when the store holds it. Stores override this with a read
    /// of that row alone.
    async fn workspace(&self, id: Uuid) -> Result<Option<Workspace>, StoreError> {
        Ok(self.workspaces().await?.into_iter().find(|w| w.id == id))
    }

    /// Streams every record of a workspace into `sink`.
    async fn load_records(&self, workspace: Uuid, sink: RecordSink<'_>) -> Result<(), StoreError>;

    /// Streams the records of one kind of a workspace into `sink` (e.g. its users, to
    /// check a key's creator without loading the whole workspace). Stores override this
    /// with a read of just that kind.
    async fn load_kind(
        &self,
        workspace: Uuid,
        kind: crate::model::RecordKind,
        sink: RecordSink<'_>,
    ) -> Result<(), StoreError> {
        self.load_records(workspace, &mut |r| {
            if r.kind() == kind {
                sink(r)
            }
        })
        .await
    }

    /// Streams every record of several workspaces into `sink`, with the workspace each
    /// belongs to: a load of many small workspaces reads them together, in one round
    /// trip rather than one each. Stores override this with one read.
    async fn load_records_of(
        &self,
        workspaces: &[Uuid],
        sink: &mut (dyn FnMut(Uuid, Record) + Send),
    ) -> Result<(), StoreError> {
        for &w in workspaces {
            self.load_records(w, &mut |r| sink(w, r)).await?;
        }
        Ok(())
    }

    /// The commit positions of several workspaces, in their order (see
    /// [`position`](Self::position)). Stores override this with one read.
    async fn positions(&self, workspaces: &[Uuid]) -> Result<Vec<CommitPosition>, StoreError> {
        let mut out = Vec::with_capacity(workspaces.len());
        for &w in workspaces {
            out.push(self.position(w).await?);
        }
        Ok(out)
    }

    /// The tombstones of several workspaces, in their order (see
    /// [`tombstones`](Self::tombstones)). Stores override this with one read.
    async fn tombstones_of(
        &self,
        workspaces: &[Uuid],
    ) -> Result<Vec<Vec<(Change, Stamp)>>, StoreError> {
        let mut out = Vec::with_capacity(workspaces.len());
        for &w in workspaces {
            out.push(self.tombstones(w).await?);
        }
        Ok(out)
    }

    /// Applies a change set to one workspace atomically: all of it or nothing.
    async fn commit(&self, workspace: Uuid, changes: &ChangeSet) -> Result<(), StoreError>;

    /// Applies an import's change set. Unlike [`commit`](Self::commit), a store may split
    /// it into several transactions, so that a large import never holds other
    /// workspaces' commits behind it for long (SQLite has one writer). When it fails,
    /// any part of it may be in the store: the caller must not publish its planned
    /// state, but reload the workspace from what the store holds.
    async fn commit_import(&self, workspace: Uuid, changes: &ChangeSet) -> Result<(), StoreError> {
        self.commit(workspace, changes).await
    }

    /// Whether the change set tagged `batch` committed, asked after its `commit` did not
    /// report (cut off at a deadline, connection lost). The answer must be final: never
    /// "no" while the batch's transaction could still commit. An adapter that cannot be
    /// sure yet waits, or fails with `Unavailable`, and is asked again.
    async fn committed(&self, workspace: Uuid, batch: Uuid) -> Result<bool, StoreError>;

    /// Where the workspace's commits stand: every transaction that changes its records or
    /// description moves this on, in that transaction, so two equal readings mean the
    /// workspace did not change in between. What a checkpoint of the in-memory state is
    /// validated against.
    async fn position(&self, workspace: Uuid) -> Result<CommitPosition, StoreError>;

    /// The change log's parts after `(position, part)` (in that order) up to position
    /// `upto` included, at most `max_parts` of them, and how far the log is pruned.
    async fn read_changes(
        &self,
        workspace: Uuid,
        after: (u64, u32),
        upto: u64,
        max_parts: usize,
    ) -> Result<LogRead, StoreError>;

    /// The workspace's tombstones (see [`crate::tombstones`]).
    async fn tombstones(&self, workspace: Uuid) -> Result<Vec<(Change, Stamp)>, StoreError>;

    /// What a server that follows another's commits of the workspace reads to catch up
    /// (several servers on one store, see [`crate::follow`]): the records `keys` names
    /// as the store holds them now (a key with no record was deleted), every pipeline
    /// stage, the workspace's row, and those of `changes` that have a tombstone.
    async fn read_current(
        &self,
        workspace: Uuid,
        keys: &[(RecordKind, String)],
        changes: &[Change],
    ) -> Result<Current, StoreError> {
        let _ = (workspace, keys, changes);
        Err(StoreError::Other(
            "this store is never shared by several servers: nothing to follow".into(),
        ))
    }

    /// Removes the log parts written before `before_ms` (milliseconds since the epoch),
    /// and the tombstones older than that, and says what it removed and what is left
    /// (see [`Pruned`]). Pruning never blocks a commit for long: stores delete in small
    /// transactions.
    async fn prune_changes(&self, workspace: Uuid, before_ms: i64) -> Result<Pruned, StoreError>;

    /// Every API key, of every workspace.
    async fn keys(&self) -> Result<Vec<ApiKey>, StoreError>;

    /// Marks a key revoked; the key as it now stands, or `None` for an unknown id.
    async fn revoke_key(&self, id: &str) -> Result<Option<ApiKey>, StoreError>;

    /// Closes the store cleanly (e.g. folds SQLite's write-ahead log into the database so
    /// the next open is quick). Later calls fail as `Unavailable`.
    async fn close(&self) {}

    /// Whether [`Store::close`] has run: what fails then is the server stopping, not
    /// the store.
    fn is_closed(&self) -> bool {
        false
    }

    // Attachment bytes, by object name (the part of an [`object_key`] after the
    // workspace). A store that keeps them serves them through a `BlobStore` built on it;
    // the defaults say it keeps none.

    /// Stores (or replaces) objects, durably once it returns.
    async fn put_blobs(
        &self,
        workspace: Uuid,
        items: &[(String, &[u8])],
    ) -> Result<(), StoreError> {
        let _ = (workspace, items);
        Err(no_blobs())
    }

    /// An object's length, when the store holds it.
    async fn blob_len(&self, workspace: Uuid, name: &str) -> Result<Option<u64>, StoreError> {
        let _ = (workspace, name);
        Err(no_blobs())
    }

    /// An object's bytes, when the store holds it.
    async fn blob(&self, workspace: Uuid, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let _ = (workspace, name);
        Err(no_blobs())
    }

    /// Removes objects (names the store does not hold are skipped); what was removed.
    async fn delete_blobs(
        &self,
        workspace: Uuid,
        names: &[String],
    ) -> Result<Reclaimed, StoreError> {
        let _ = (workspace, names);
        Err(no_blobs())
    }

    /// Names of the workspace's objects after `after` in byte order, at most `limit` of
    /// them (a sweep pages through a workspace's objects rather than list them whole).
    async fn blob_names(
        &self,
        workspace: Uuid,
        after: &str,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let _ = (workspace, after, limit);
        Err(no_blobs())
    }
}

fn no_blobs() -> StoreError {
    StoreError::Other("this store keeps no attachment bytes".into())
}

/// A workspace's commit position: how many transactions have changed its records or
/// description, and a tag drawn at random by the last of them.
///
/// The count alone would let a store that was replaced (another database, a backup
/// restored and written again) pass for the one a checkpoint was written from once it
/// reached the same count; the tag of the last commit tells them apart.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CommitPosition {
    /// Transactions so far (0: none).
    pub seq: u64,
    /// Drawn by the last of them (nil before the first).
    pub tag: Uuid,
}

impl std::fmt::Display for CommitPosition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.seq, self.tag)
    }
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
    marks: BTreeMap<Uuid, Uuid>,
    positions: BTreeMap<Uuid, CommitPosition>,
    workspaces: BTreeMap<Uuid, Workspace>,
    records: BTreeMap<(Uuid, RecordKind, String), Record>,
    keys: BTreeMap<String, ApiKey>,
    log: BTreeMap<(Uuid, u64, u32), LogPart>,
    pruned: BTreeMap<Uuid, u64>,
    tombstones: BTreeMap<(Uuid, Change), Stamp>,
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
        if let Some(b) = changes.batch {
            g.marks.insert(workspace, b);
        }
        if changes.moves_position() {
            let at = g.positions.entry(workspace).or_default();
            at.seq += 1;
            at.tag = Uuid::new_v4();
            let position = at.seq;
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

    async fn read_changes(
        &self,
        workspace: Uuid,
        after: (u64, u32),
        upto: u64,
        max_parts: usize,
    ) -> Result<LogRead, StoreError> {
        use std::ops::Bound;
        self.check()?;
        let g = self.inner.lock();
        let parts = g
            .log
            .range((
                Bound::Excluded((workspace, after.0, after.1)),
                Bound::Included((workspace, upto, u32::MAX)),
            ))
            .take(max_parts)
            .map(|(_, p)| p.clone())
            .collect();
        Ok(LogRead {
            pruned_through: g.pruned.get(&workspace).copied().unwrap_or(0),
            parts,
        })
    }

    async fn read_current(
        &self,
        workspace: Uuid,
        keys: &[(RecordKind, String)],
        changes: &[Change],
    ) -> Result<Current, StoreError> {
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
        })
    }

    async fn tombstones(&self, workspace: Uuid) -> Result<Vec<(Change, Stamp)>, StoreError> {
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

    async fn prune_changes(&self, workspace: Uuid, before_ms: i64) -> Result<Pruned, StoreError> {
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

    async fn position(&self, workspace: Uuid) -> Result<CommitPosition, StoreError> {
        self.check()?;
        Ok(self
            .inner
            .lock()
            .positions
            .get(&workspace)
            .copied()
            .unwrap_or_default())
    }

    async fn committed(&self, workspace: Uuid, batch: Uuid) -> Result<bool, StoreError> {
        self.check()?;
        Ok(self.inner.lock().marks.get(&workspace) == Some(&batch))
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

/// What a blob store knows of an object without reading it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlobMeta {
    /// Length in bytes.
    pub len: u64,
}

/// An object being read: its length and a reader over its bytes. The reader sees one
/// version of the object whole, even if the object is replaced meanwhile.
pub struct Blob {
    pub len: u64,
    pub reader: Box<dyn std::io::Read + Send>,
}

impl std::fmt::Debug for Blob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Blob")
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

/// What removing objects gave back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reclaimed {
    pub objects: u64,
    pub bytes: u64,
}

impl Reclaimed {
    /// Objects of these lengths.
    pub fn of_lengths(lengths: impl IntoIterator<Item = u64>) -> Self {
        lengths
            .into_iter()
            .fold(Reclaimed::default(), |done, bytes| Reclaimed {
                objects: done.objects + 1,
                bytes: done.bytes + bytes,
            })
    }

    pub fn is_empty(&self) -> bool {
        self.objects == 0
    }
}

impl std::ops::AddAssign for Reclaimed {
    fn add_assign(&mut self, other: Reclaimed) {
        self.objects += other.objects;
        self.bytes += other.bytes;
    }
}

/// The name of an attachment's object in every blob store:
/// `<workspace id>/<sha256 of the attachment id, lower-case hex>`. Attachment ids may hold
/// any character and object names must not; one naming for every store means objects
/// move between stores (a directory tree, a bucket) by plain copying.
pub fn object_key(workspace: Uuid, attachment_id: &str) -> String {
    format!("{workspace}/{}", object_name(attachment_id))
}

/// The name part of an attachment's [`object_key`]: the SHA-256 of its id, in lower-case
/// hex (how a store that keys objects by workspace and name names them).
pub fn object_name(attachment_id: &str) -> String {
    use std::fmt::Write;
    let mut name = String::with_capacity(64);
    for b in object_digest(attachment_id) {
        write!(name, "{b:02x}").expect("writing to a String");
    }
    name
}

/// The SHA-256 of an attachment id: the name part of its [`object_key`], as bytes.
pub fn object_digest(attachment_id: &str) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    Sha256::digest(attachment_id.as_bytes()).into()
}

/// The digest an object key names, if the key is one [`object_key`] makes for `workspace`
/// (anything else, such as a write left half-way, names no attachment).
pub fn digest_of_key(workspace: Uuid, key: &str) -> Option<[u8; 32]> {
    let (ws, name) = key.split_once('/')?;
    if Uuid::try_parse(ws).ok()? != workspace || name.len() != 64 {
        return None;
    }
    let mut digest = [0u8; 32];
    for (i, pair) in name.as_bytes().chunks_exact(2).enumerate() {
        let hex = |c: u8| match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            _ => None,
        };
        digest[i] = hex(pair[0])? << 4 | hex(pair[1])?;
    }
    Some(digest)
}

/// Where attachment bytes live. Bytes are written before the commit that records them,
/// so a record never claims bytes the blob store lacks; they are removed only after the
/// commit that drops the last record naming them (`crate::reclaim`).
///
/// Objects are named by [`object_key`]. The operations are those of an S3-compatible
/// object store — `put` is a PutObject, `put_many` concurrent PutObjects, `stat` a
/// HeadObject, `open` a GetObject whose body is streamed, `delete` DeleteObjects,
/// `sweep` a paged ListObjectsV2 of the workspace's prefix with DeleteObjects of what
/// is not kept — so a bucket-backed store implements this trait as it stands. Calls may
/// block on disk or network: the server makes them from blocking threads, never from
/// its async workers.
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

    /// The object's metadata; `None` when the store holds no bytes for the attachment.
    fn stat(&self, workspace: Uuid, attachment_id: &str) -> Result<Option<BlobMeta>, StoreError>;

    /// Opens the object for reading; `None` when the store holds no bytes for it.
    fn open(&self, workspace: Uuid, attachment_id: &str) -> Result<Option<Blob>, StoreError>;

    /// Removes objects by key; a key the store does not hold is skipped. What was
    /// removed. A removal need not be durable: one a crash undoes leaves an object nothing
    /// names, which the next sweep takes.
    fn delete(&self, keys: &[String]) -> Result<Reclaimed, StoreError>;

    /// Removes every object of the workspace for which `keep(key)` is false, including
    /// whatever the store itself left unfinished there (a write a crash interrupted).
    /// Must not run while objects of the workspace are being written.
    fn sweep(
        &self,
        workspace: Uuid,
        keep: &(dyn Fn(&str) -> bool + Sync),
    ) -> Result<Reclaimed, StoreError>;
}

/// Objects in memory by (workspace, attachment id); bytes shared with open readers.
type MemoryObjects = BTreeMap<(Uuid, String), Arc<[u8]>>;

/// Blobs in memory, for tests.
#[derive(Default)]
pub struct MemoryBlobs {
    // One mutex over the map: tests are small, and no call holds it while reading bytes.
    inner: Mutex<MemoryObjects>,
}

impl MemoryBlobs {
    pub fn get(&self, workspace: Uuid, attachment_id: &str) -> Option<Vec<u8>> {
        self.inner
            .lock()
            .get(&(workspace, attachment_id.to_string()))
            .map(|b| b.to_vec())
    }

    /// Forgets an object (to test bytes that vanish).
    pub fn remove(&self, workspace: Uuid, attachment_id: &str) -> bool {
        self.inner
            .lock()
            .remove(&(workspace, attachment_id.to_string()))
            .is_some()
    }
}

impl BlobStore for MemoryBlobs {
    fn put(&self, workspace: Uuid, attachment_id: &str, bytes: &[u8]) -> Result<(), StoreError> {
        self.inner
            .lock()
            .insert((workspace, attachment_id.to_string()), Arc::from(bytes));
        Ok(())
    }

    fn stat(&self, workspace: Uuid, attachment_id: &str) -> Result<Option<BlobMeta>, StoreError> {
        Ok(self
            .inner
            .lock()
            .get(&(workspace, attachment_id.to_string()))
            .map(|b| BlobMeta {
                len: b.len() as u64,
            }))
    }

    fn open(&self, workspace: Uuid, attachment_id: &str) -> Result<Option<Blob>, StoreError> {
        // The bytes are shared, not copied: a reader keeps the version it opened.
        let bytes = self
            .inner
            .lock()
            .get(&(workspace, attachment_id.to_string()))
            .cloned();
        Ok(bytes.map(|b| Blob {
            len: b.len() as u64,
            reader: Box::new(std::io::Cursor::new(SharedBytes(b))),
        }))
    }

    fn delete(&self, keys: &[String]) -> Result<Reclaimed, StoreError> {
        let keys: std::collections::HashSet<&str> = keys.iter().map(String::as_str).collect();
        Ok(self.remove_where(|ws, id| keys.contains(object_key(ws, id).as_str())))
    }

    fn sweep(
        &self,
        workspace: Uuid,
        keep: &(dyn Fn(&str) -> bool + Sync),
    ) -> Result<Reclaimed, StoreError> {
        Ok(self.remove_where(|ws, id| ws == workspace && !keep(&object_key(ws, id))))
    }
}

impl MemoryBlobs {
    /// Removes every object `doomed` names, counting what went.
    fn remove_where(&self, doomed: impl Fn(Uuid, &str) -> bool) -> Reclaimed {
        let mut done = Reclaimed::default();
        self.inner.lock().retain(|(ws, id), bytes| {
            let drop = doomed(*ws, id);
            if drop {
                done += Reclaimed {
                    objects: 1,
                    bytes: bytes.len() as u64,
                };
            }
            !drop
        });
        done
    }
}

/// `Arc<[u8]>` as `AsRef<[u8]>`, for a `Cursor`.
struct SharedBytes(Arc<[u8]>);

impl AsRef<[u8]> for SharedBytes {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn object_keys_name_the_workspace_and_hide_the_id() {
        let key = object_key(Uuid::from_u128(7), "cv:a b/c");
        let (ws, name) = key.split_once('/').unwrap();
        assert_eq!(ws, Uuid::from_u128(7).to_string());
        assert_eq!(name.len(), 64);
        assert!(name
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
        assert_ne!(key, object_key(Uuid::from_u128(7), "cv:a b/d"));
    }

    #[test]
    fn memory_blobs_stat_open_and_remove() {
        let blobs = MemoryBlobs::default();
        let ws = Uuid::from_u128(1);
        assert_eq!(blobs.stat(ws, "cv:x").unwrap(), None);
        assert!(blobs.open(ws, "cv:x").unwrap().is_none());
        blobs.put(ws, "cv:x", b"hello").unwrap();
        assert_eq!(blobs.stat(ws, "cv:x").unwrap(), Some(BlobMeta { len: 5 }));
        let mut blob = blobs.open(ws, "cv:x").unwrap().unwrap();
        blobs.put(ws, "cv:x", b"replaced").unwrap();
        let mut read = String::new();
        blob.reader.read_to_string(&mut read).unwrap();
        assert_eq!(
            (blob.len, read.as_str()),
            (5, "hello"),
            "the opened version"
        );
        assert!(blobs.remove(ws, "cv:x"));
        assert_eq!(blobs.stat(ws, "cv:x").unwrap(), None);
    }

    #[test]
    fn digests_read_back_from_keys() {
        let ws = Uuid::from_u128(7);
        let key = object_key(ws, "cv:a b/c");
        assert_eq!(digest_of_key(ws, &key), Some(object_digest("cv:a b/c")));
        assert_eq!(
            digest_of_key(Uuid::from_u128(8), &key),
            None,
            "another workspace"
        );
        assert_eq!(digest_of_key(ws, &format!("{key}.tmp42")), None);
        assert_eq!(digest_of_key(ws, &key.to_uppercase()), None);
        assert_eq!(digest_of_key(ws, "nonsense"), None);
    }

    #[test]
    fn memory_blobs_delete_by_key_and_sweep() {
        let blobs = MemoryBlobs::default();
        let (ws, other) = (Uuid::from_u128(1), Uuid::from_u128(2));
        blobs.put(ws, "cv:gone", b"12345").unwrap();
        blobs.put(ws, "cv:kept", b"kept").unwrap();
        blobs.put(ws, "file:orphan", b"123").unwrap();
        blobs.put(other, "cv:gone", b"other workspace").unwrap();
        let done = blobs
            .delete(&[object_key(ws, "cv:gone"), object_key(ws, "cv:never")])
            .unwrap();
        assert_eq!(
            done,
            Reclaimed {
                objects: 1,
                bytes: 5
            }
        );
        assert_eq!(blobs.get(ws, "cv:gone"), None);
        assert!(
            blobs.get(other, "cv:gone").is_some(),
            "a key names one workspace"
        );
        let kept = object_key(ws, "cv:kept");
        let done = blobs.sweep(ws, &|k| k == kept).unwrap();
        assert_eq!(
            done,
            Reclaimed {
                objects: 1,
                bytes: 3
            }
        );
        assert_eq!(blobs.get(ws, "cv:kept").as_deref(), Some(&b"kept"[..]));
        assert!(
            blobs.get(other, "cv:gone").is_some(),
            "other workspaces untouched"
        );
    }
}
