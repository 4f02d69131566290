//! The Store port: where a workspace's raw facts live durably; and the BlobStore port
//! (`blobs`): where attachment bytes live.
//!
//! The domain defines what it needs from a store; `src/store` adapts SQLite and
//! PostgreSQL to it, and `MemoryStore` (`memory`) serves tests of the domain without a
//! database. Likewise `src/store/blobs.rs` keeps blobs in the store, and `MemoryBlobs`
//! in memory.

mod blobs;
mod memory;
#[cfg(test)]
mod tests;

pub use blobs::{
    digest_of_key, object_digest, object_key, object_name, Blob, BlobMeta, BlobStore, KeepKey,
    MemoryBlobs, Reclaimed,
};
pub use memory::MemoryStore;

use crate::entries::Change;
use crate::model::{ApiKey, Record, RecordKind, Workspace};
use crate::time::Stamp;
use async_trait::async_trait;
use uuid::Uuid;

/// What the store's calls answer.
pub type StoreResult<T> = Result<T, StoreError>;

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
    /// The commit was refused, nothing of it written: the workspace's last commit
    /// touched records whose rows are not stored again yet ([`TouchMarker`]). Store them
    /// ([`Store::flush_touched`]) and commit again.
    #[error("the workspace's last commit has touched rows to store first: {0}")]
    TouchPending(String),
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
    /// Records the commit only moves to a new `updated_at` (its derived changes' records,
    /// [`crate::changes::derive::touch`]), kept apart from `upserts`: [`Store::commit`]
    /// marks them, and their rows follow in a transaction of their own
    /// ([`Store::flush_touched`]).
    pub touched: Option<Touched>,
}

/// Records a commit moved to a new `updated_at` and changed in nothing else: the records
/// behind its derived changes, all at one stamp, by kind and id.
///
/// A job's recruiter shows on each of its applications, a user's activity on every row it
/// owns: one write touches dozens of rows, or thousands. Stored in the commit itself,
/// each is a row written again on its random page, and the client waits for all of them
/// to be written and flushed. So [`Store::commit`] stores in its transaction only a
/// marker of them (this, beside the workspace's position: [`TouchMarker`]), and the rows
/// follow in a transaction that needs no flush of its own ([`Store::flush_touched`]),
/// which clears the marker. Until it has, the store refuses the workspace's next commit
/// ([`StoreError::TouchPending`]), and whoever reads the workspace's records applies the
/// marker to them ([`Touched::apply`]): the marker is always the workspace's last
/// commit, so its stamp is the marked records' last.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Touched {
    pub stamp: Stamp,
    pub records: Vec<(RecordKind, Uuid)>,
}

impl Touched {
    /// As stores keep it beside the position: the stamp, then `kind:id` of each record,
    /// separated by spaces.
    pub fn encode(&self) -> String {
        let mut out = self.stamp.millis().to_string();
        for (kind, id) in &self.records {
            out.push(' ');
            out.push_str(kind.as_str());
            out.push(':');
            out.push_str(&id.to_string());
        }
        out
    }

    /// The marker kept as `text` ([`Self::encode`]).
    pub fn decode(text: &str) -> StoreResult<Touched> {
        let corrupt =
            |what: &str| StoreError::Corrupt(format!("a touch marker's {what}: {text:?}"));
        let mut words = text.split(' ');
        let stamp = words
            .next()
            .and_then(|w| w.parse::<i64>().ok())
            .ok_or_else(|| corrupt("stamp"))?;
        let records = words
            .map(|w| {
                let (kind, id) = w.split_once(':').ok_or_else(|| corrupt("record"))?;
                Ok((
                    RecordKind::parse(kind).ok_or_else(|| corrupt("kind"))?,
                    Uuid::try_parse(id).map_err(|_| corrupt("id"))?,
                ))
            })
            .collect::<StoreResult<_>>()?;
        Ok(Touched {
            stamp: Stamp::from_millis(stamp),
            records,
        })
    }

    /// Moves the records of `state` to the stamp, as the commit that left the marker did
    /// in its writer's memory: a store reads their rows back as they were before it.
    pub fn apply(&self, state: &mut crate::state::WorkspaceState) {
        for (kind, id) in &self.records {
            state.restamp(*kind, *id, self.stamp);
        }
    }

    /// The records as `state` holds them (with their stamp), as the store keeps them:
    /// the rows [`Store::flush_touched`] stores.
    pub fn rows_in(&self, state: &crate::state::WorkspaceState) -> Vec<Record> {
        self.records
            .iter()
            .filter_map(|(kind, id)| state.touchable(*kind, *id))
            .collect()
    }
}

/// A [`Touched`] marker standing in a store, at the position of the commit that left it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TouchMarker {
    pub position: u64,
    pub touched: Touched,
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
    /// The records the changes name ([`stored_keys`](crate::entries::stored_keys)), in
    /// that order: what the reader puts or deletes.
    pub keys: Vec<(RecordKind, String)>,
    /// The records found of those keys.
    pub records: Vec<Record>,
    /// Every pipeline stage of the workspace.
    pub stages: Vec<Record>,
    /// The workspace's row (`None`: not in the store).
    pub workspace: Option<Workspace>,
    /// The changes asked for that have a tombstone, and when their records left.
    pub tombstones: Vec<(Change, Stamp)>,
    /// The workspace's standing marker, read before the records: applied after them,
    /// it gives the marked records their stamp whether or not their rows were stored
    /// again meanwhile.
    pub touched: Option<TouchMarker>,
}

/// Which parts of the change log a read asks for: those after `(position, part)` `after`
/// (in that order) up to position `upto` included, at most `max_parts` of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogWindow {
    pub after: (u64, u32),
    pub upto: u64,
    pub max_parts: usize,
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
    async fn workspaces(&self) -> StoreResult<Vec<Workspace>>;

    /// One workspace's row, when the store holds it. Stores override this with a read
    /// of that row alone.
    async fn workspace(&self, id: Uuid) -> StoreResult<Option<Workspace>> {
        Ok(self.workspaces().await?.into_iter().find(|w| w.id == id))
    }

    /// Streams every record of a workspace into `sink`.
    async fn load_records(&self, workspace: Uuid, sink: RecordSink<'_>) -> StoreResult<()>;

    /// Streams the records of one kind of a workspace into `sink` (e.g. its users, to
    /// check a key's creator without loading the whole workspace). Stores override this
    /// with a read of just that kind.
    async fn load_kind(
        &self,
        workspace: Uuid,
        kind: crate::model::RecordKind,
        sink: RecordSink<'_>,
    ) -> StoreResult<()> {
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
    ) -> StoreResult<()> {
        for &w in workspaces {
            self.load_records(w, &mut |r| sink(w, r)).await?;
        }
        Ok(())
    }

    /// The commit positions of several workspaces, in their order (see
    /// [`position`](Self::position)). Stores override this with one read.
    async fn positions(&self, workspaces: &[Uuid]) -> StoreResult<Vec<CommitPosition>> {
        let mut out = Vec::with_capacity(workspaces.len());
        for &w in workspaces {
            out.push(self.position(w).await?);
        }
        Ok(out)
    }

    /// The tombstones of several workspaces, in their order (see
    /// [`tombstones`](Self::tombstones)). Stores override this with one read.
    async fn tombstones_of(&self, workspaces: &[Uuid]) -> StoreResult<Vec<Vec<(Change, Stamp)>>> {
        let mut out = Vec::with_capacity(workspaces.len());
        for &w in workspaces {
            out.push(self.tombstones(w).await?);
        }
        Ok(out)
    }

    /// Applies a change set to one workspace atomically: all of it or nothing. Its
    /// `touched` records are not stored with it but marked ([`Touched`]): their rows
    /// follow with [`flush_touched`](Self::flush_touched). While a marker of the
    /// workspace stands, a commit is refused with [`StoreError::TouchPending`], nothing
    /// of it written.
    async fn commit(&self, workspace: Uuid, changes: &ChangeSet) -> StoreResult<()>;

    /// Stores `rows`, the records the commit at `position` touched as they now are
    /// ([`Touched::rows_in`]), and clears its marker, in one transaction that waits for
    /// no flush of its own: the next commit's flush makes it durable, and a crash before
    /// that leaves the marker, which readers apply. While no marker stands at `position`
    /// (stored already, or another commit's), nothing is written.
    async fn flush_touched(
        &self,
        workspace: Uuid,
        position: u64,
        rows: &[Record],
    ) -> StoreResult<()>;

    /// The marker each of `workspaces` has standing ([`Touched`]), in their order.
    async fn touches(&self, workspaces: &[Uuid]) -> StoreResult<Vec<Option<TouchMarker>>>;

    /// Applies an import's change set. Unlike [`commit`](Self::commit), a store may split
    /// it into several transactions, so that a large import never holds other
    /// workspaces' commits behind it for long (SQLite has one writer). When it fails,
    /// any part of it may be in the store: the caller must not publish its planned
    /// state, but reload the workspace from what the store holds.
    async fn commit_import(&self, workspace: Uuid, changes: &ChangeSet) -> StoreResult<()> {
        self.commit(workspace, changes).await
    }

    /// Whether the change set tagged `batch` committed, asked after its `commit` did not
    /// report (cut off at a deadline, connection lost). The answer must be final: never
    /// "no" while the batch's transaction could still commit. An adapter that cannot be
    /// sure yet waits, or fails with `Unavailable`, and is asked again.
    async fn committed(&self, workspace: Uuid, batch: Uuid) -> StoreResult<bool>;

    /// Where the workspace's commits stand: every transaction that changes its records or
    /// description moves this on, in that transaction, so two equal readings mean the
    /// workspace did not change in between. What a checkpoint of the in-memory state is
    /// validated against.
    async fn position(&self, workspace: Uuid) -> StoreResult<CommitPosition>;

    /// The change log's parts in `window`, and how far the log is pruned.
    async fn read_changes(&self, workspace: Uuid, window: LogWindow) -> StoreResult<LogRead>;

    /// The workspace's tombstones (see [`crate::tombstones`]).
    async fn tombstones(&self, workspace: Uuid) -> StoreResult<Vec<(Change, Stamp)>>;

    /// What a server that follows another's commits of the workspace reads to catch up
    /// (several servers on one store, see [`crate::follow`]): the records `changes`
    /// name ([`stored_keys`](crate::entries::stored_keys)) as the store holds them now
    /// (one missing was deleted), every pipeline stage, the workspace's row, and those of
    /// `changes` that have a tombstone.
    async fn read_current(&self, workspace: Uuid, changes: &[Change]) -> StoreResult<Current> {
        let _ = (workspace, changes);
        Err(StoreError::Other(
            "this store is never shared by several servers: nothing to follow".into(),
        ))
    }

    /// How many entries the change log's parts after `after` (a `(position, part)`, as
    /// in [`LogWindow::after`]) up to position `upto` included hold: what a webhook
    /// endpoint's backlog counts. Stores answer from the count each part is written
    /// with, reading no part's entries (but those of parts written before the count
    /// was kept); this default reads and counts them.
    async fn count_entries(
        &self,
        workspace: Uuid,
        after: (u64, u32),
        upto: u64,
    ) -> StoreResult<u64> {
        const PARTS_PER_READ: usize = 256;
        let (mut after, mut total) = (after, 0u64);
        loop {
            let window = LogWindow {
                after,
                upto,
                max_parts: PARTS_PER_READ,
            };
            let read = self.read_changes(workspace, window).await?;
            for part in &read.parts {
                total += count_of(part)?;
            }
            match read.parts.last() {
                Some(last) if read.parts.len() == PARTS_PER_READ => {
                    after = (last.position, last.part)
                }
                _ => return Ok(total),
            }
        }
    }

    /// Removes the log parts written before `before_ms` (milliseconds since the epoch),
    /// and the tombstones older than that, and says what it removed and what is left
    /// (see [`Pruned`]). Pruning never blocks a commit for long: stores delete in small
    /// transactions.
    async fn prune_changes(&self, workspace: Uuid, before_ms: i64) -> StoreResult<Pruned>;

    /// Where the store keeps webhook endpoints (`src/webhooks`), if it does.
    fn webhook_rows(&self) -> Option<&dyn WebhookRows> {
        None
    }

    /// Every API key, of every workspace.
    async fn keys(&self) -> StoreResult<Vec<ApiKey>>;

    /// Marks a key revoked; the key as it now stands, or `None` for an unknown id.
    async fn revoke_key(&self, id: &str) -> StoreResult<Option<ApiKey>>;

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
    async fn put_blobs(&self, workspace: Uuid, items: &[(String, &[u8])]) -> StoreResult<()> {
        let _ = (workspace, items);
        Err(no_blobs())
    }

    /// An object's length, when the store holds it.
    async fn blob_len(&self, workspace: Uuid, name: &str) -> StoreResult<Option<u64>> {
        let _ = (workspace, name);
        Err(no_blobs())
    }

    /// An object's bytes, when the store holds it.
    async fn blob(&self, workspace: Uuid, name: &str) -> StoreResult<Option<Vec<u8>>> {
        let _ = (workspace, name);
        Err(no_blobs())
    }

    /// Removes objects (names the store does not hold are skipped); what was removed.
    async fn delete_blobs(&self, workspace: Uuid, names: &[String]) -> StoreResult<Reclaimed> {
        let _ = (workspace, names);
        Err(no_blobs())
    }

    /// Names of the workspace's objects after `after` in byte order, at most `limit` of
    /// them (a sweep pages through a workspace's objects rather than list them whole).
    async fn blob_names(&self, ws: Uuid, after: &str, limit: usize) -> StoreResult<Vec<String>> {
        let _ = (ws, after, limit);
        Err(no_blobs())
    }
}

/// Webhook endpoints' rows, which a store keeps for the server, opaque to it: each a
/// JSON body with its secrets sealed, and each endpoint's newest attempts.
#[async_trait]
pub trait WebhookRows: Send + Sync {
    /// The workspace's endpoints: `(id, body)` in id order.
    async fn endpoints(&self, workspace: Uuid) -> StoreResult<Vec<(String, String)>>;

    /// Every workspace with at least one endpoint.
    async fn workspaces(&self) -> StoreResult<Vec<Uuid>>;

    /// Applies `writes` to the workspace's rows in one transaction. On a store several
    /// servers share, only the workspace's writer may (fenced as a commit is): so two
    /// nodes never move one endpoint's acknowledged point.
    async fn write(&self, workspace: Uuid, writes: &[WebhookWrite]) -> StoreResult<()> {
        self.apply(workspace, writes, Flush::Synced).await
    }

    /// As [`write`](Self::write), for the deliveries' own records (attempts and
    /// acknowledged points), whose commit does not wait for the store's log to reach
    /// the disk. A process killed loses none of them; a machine that loses power may
    /// lose the last of them, and deliveries then resume from an earlier point: sent
    /// again, never skipped. So a delivery's round trip does not wait for a disk
    /// flush, nor hold up the workspaces' commits that share the store's writer.
    async fn record(&self, workspace: Uuid, writes: &[WebhookWrite]) -> StoreResult<()> {
        self.apply(workspace, writes, Flush::Unsynced).await
    }

    /// [`write`](Self::write) and [`record`](Self::record), told apart by `flush`.
    async fn apply(
        &self,
        workspace: Uuid,
        writes: &[WebhookWrite],
        flush: Flush,
    ) -> StoreResult<()>;

    /// The newest `limit` attempts recorded for an endpoint, newest first.
    async fn attempts(
        &self,
        workspace: Uuid,
        endpoint: &str,
        limit: u32,
    ) -> StoreResult<Vec<String>>;
}

/// Whether a commit of [`WebhookRows`] waits for the store's log to reach the disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flush {
    /// Durable when it returns.
    Synced,
    /// Durable with the store's next synced commit (see [`WebhookRows::record`]).
    Unsynced,
}

/// One write of [`Store::write_webhooks`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WebhookWrite {
    /// Creates or replaces an endpoint's row.
    Put { id: String, body: String },
    /// Removes an endpoint's row and its attempts.
    Remove { id: String },
    /// Records an attempt of an endpoint, keeping its newest `keep`.
    Attempt {
        endpoint: String,
        body: String,
        keep: u32,
    },
}

/// The entries a part holds, counted from its bytes.
pub fn count_of(part: &LogPart) -> StoreResult<u64> {
    crate::entries::count(&part.entries)
        .map(|n| n as u64)
        .map_err(|e| {
            StoreError::Corrupt(format!(
                "change log part {}/{}: {e}",
                part.position, part.part
            ))
        })
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
