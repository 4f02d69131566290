//! The embedded default store: the SQLite file `<data-dir>/recruit.db`, and beside it
//! `webhooks.db`, the webhook endpoints' rows and their deliveries' records
//! ([`webhooks`]), with a writer of their own.
//!
//! # Connections
//! SQLite admits one writer at a time, so writes go through a pool of exactly one
//! connection: writers queue in the pool (bounded by `ACQUIRE_TIMEOUT`) rather than in
//! SQLite's busy handler. Reads use a separate small pool; in WAL mode they run beside
//! the writer and see the last committed state, so a long workspace load never blocks a
//! commit.
//!
//! # Durability
//! WAL journal with `synchronous=FULL`: a commit returns only after its WAL frames are
//! fsynced, so an acknowledged write survives not only a crash or `kill -9` of the
//! process but an OS crash or power loss too — the same promise PostgreSQL's default
//! `synchronous_commit=on` makes. The flush is paid once per transaction, and the
//! workspace actors group the writes queued behind a commit into the next transaction,
//! so under concurrent writers the cost is shared (measured: about 15% of write
//! throughput against `NORMAL`).
//!
//! # Checkpoints
//! Folding the WAL back into the database file (a checkpoint) writes pages all over a
//! file of up to a gigabyte and syncs it: hundreds of milliseconds on a busy disk. Left
//! to SQLite, it runs inside whichever commit crosses the WAL's size threshold, and every
//! write queued behind that commit waits for it. So the writer never checkpoints
//! (`wal_autocheckpoint=0`); a background task does, on a connection of its own, every
//! `CHECKPOINT_EVERY`, in `PASSIVE` mode, which neither waits for nor blocks the writer
//! or the readers. The WAL is reused from its start once a checkpoint has folded all of
//! it in, so it stays small. A large import is the exception that rule needs help with:
//! it writes without pause, so it folds the WAL in itself every few transactions, with
//! the writer held for the moment (`fold_wal`).
//!
//! # Alone
//! `recruitd import` has the file to itself (the data dir's lock keeps servers out), and
//! opens it with a rollback journal instead (`SqliteStore::open_paced`): a bulk import
//! then writes each new page once rather than to the WAL and again into the file.

mod files;
mod prune;
mod rows;
mod statements;
pub mod webhooks;

use super::commit::{parts_of, sorted_deletes, Part};
use super::{
    decode_workspace, in_key_order, key_from_row, reads, records_in_key_order, ImportPacing,
    ACQUIRE_TIMEOUT, ALONE_IMPORT_TX_RECORDS,
};
use actors::entries::Change;
use actors::model::{ApiKey, Record, RecordKind, Workspace};
use actors::store::StoreResult;
use actors::store::{
    ChangeSet, CommitPosition, LogRead, LogWindow, Reclaimed, RecordSink, Store, StoreError,
    TouchMarker,
};
use actors::time::Stamp;
use async_trait::async_trait;
use files::{checkpoints, close_pools, read_pools, recover};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use statements::SqliteStatements;
use std::path::Path;
use uuid::Uuid;

/// Most records an import writes in one transaction beside a server's other commits
/// (see `commit_import`). One such transaction takes some milliseconds, which is what a
/// write of another workspace may wait behind it. (Alone, `ImportPacing::Alone`, an
/// import writes a part per transaction.)
const IMPORT_TX_RECORDS: usize = 500;

/// Transactions of an import between two checkpoints it waits for (see `fold_wal`):
/// about a megabyte of WAL.
const IMPORT_FOLD_EVERY: usize = 2;

/// The writer's connection while it commits without syncing (`synchronous=NORMAL`: in
/// WAL mode such a commit is lost by no crash of the process, only by one of the
/// machine, and is durable once any later commit's sync is done, the log being synced
/// in order). Every other commit on the connection must sync again: unless the setting
/// is restored ([`Unsynced::restore`]), the connection is closed rather than reused,
/// also when a future holding it is dropped part way.
struct Unsynced(Option<sqlx::pool::PoolConnection<sqlx::Sqlite>>);

impl Unsynced {
    async fn relax(
        mut conn: sqlx::pool::PoolConnection<sqlx::Sqlite>,
    ) -> Result<Unsynced, sqlx::Error> {
        sqlx::query("PRAGMA synchronous = NORMAL")
            .execute(&mut *conn)
            .await?;
        Ok(Unsynced(Some(conn)))
    }

    fn conn(&mut self) -> &mut sqlx::pool::PoolConnection<sqlx::Sqlite> {
        self.0.as_mut().expect("held until restored")
    }

    /// Every commit after this syncs again; the connection goes back to the pool.
    async fn restore(mut self) -> Result<(), sqlx::Error> {
        sqlx::query("PRAGMA synchronous = FULL")
            .execute(&mut **self.conn())
            .await?;
        self.0.take();
        Ok(())
    }
}

impl Drop for Unsynced {
    fn drop(&mut self) {
        if let Some(conn) = &mut self.0 {
            conn.close_on_drop();
        }
    }
}

/// Connections of the read pool: loads at start-up run one per workspace, concurrently.
const READERS: u32 = 4;

/// How often the background task folds the WAL into the database file.
const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

/// The key columns, in the order `key_from_row` reads them.
const KEY_COLUMNS: &str =
    "id, workspace_id, secret_hash, scopes, created_by, revoked, rate_limit_per_minute, \
     created_at";

/// SQLite behind the Store port. See the module doc for the connection layout.
pub struct SqliteStore {
    /// The only connection that writes (a pool of one, so that writers queue with a
    /// bounded wait).
    writer: SqlitePool,
    /// Connections that only read.
    readers: SqlitePool,
    /// The background checkpointer's connection (see the module doc).
    checkpointer: SqlitePool,
    /// Records per import transaction.
    import_tx_records: usize,
    /// Import transactions between two folds of the WAL; `None` with a rollback journal
    /// (`ImportPacing::Alone`), where there is no log to fold.
    import_fold_every: Option<usize>,
    /// The webhook rows, in a file of their own (`webhooks`).
    webhooks: webhooks::SqliteWebhooks,
}

impl SqliteStore {
    /// Opens (creating when missing) the database file and applies the migrations, for
    /// a server: WAL journal, imports in short transactions (`ImportPacing::Shared`).
    pub async fn open(path: &Path) -> anyhow::Result<Self> {
        Self::open_paced(path, ImportPacing::Shared).await
    }

    /// `open`, with imports split as `pacing` says.
    ///
    /// Alone (`recruitd import`, which holds the data dir's lock, so no other process
    /// has the file open), the store uses a rollback journal instead of the WAL. A bulk
    /// import mostly appends pages past the end of the file, and SQLite journals only
    /// pages that existed when the transaction began, so those pages are written once,
    /// where in WAL mode each goes to the log and again into the database file when the
    /// log is folded in: half of the import's writes (a million people: 5.3 GB fewer).
    /// Each transaction is as durable as in WAL mode (journal synced before the
    /// database is written). The next `open` for a server switches the file back to WAL.
    pub async fn open_paced(path: &Path, pacing: ImportPacing) -> anyhow::Result<Self> {
        let journal = match pacing {
            ImportPacing::Shared => SqliteJournalMode::Wal,
            ImportPacing::Alone => SqliteJournalMode::Truncate,
        };
        let base = super::quiet_slow_statements(SqliteConnectOptions::new())
            .filename(path)
            .create_if_missing(true)
            .journal_mode(journal)
            .synchronous(SqliteSynchronous::Full)
            // A second process (e.g. `recruitd import` next to a running server) may
            // hold the write lock; wait for it as long as for a pooled connection.
            .busy_timeout(ACQUIRE_TIMEOUT)
            // The domain validates references; the schema declares none anyway.
            .foreign_keys(false);
        recover(&base, path).await?;
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(
                base.clone()
                    // 64 MiB page cache (default 2 MiB): imports write in key order, but
                    // updates and deletes land anywhere in a primary-key b-tree of up to
                    // a gigabyte; this keeps its inner pages cached.
                    .pragma("cache_size", "-65536")
                    // After a checkpoint, shrink the WAL back (a bulk import grows it to
                    // the size of the whole import).
                    .pragma("journal_size_limit", "67108864")
                    // A multi-row upsert keeps a statement journal (to undo just that
                    // statement on error); keep it in memory rather than a temp file.
                    .pragma("temp_store", "memory")
                    // Checkpoints run in the background, never inside a commit.
                    .pragma("wal_autocheckpoint", "0"),
            )
            .await
            .map_err(|e| anyhow::anyhow!("cannot open SQLite store {}: {e}", path.display()))?;
        sqlx::migrate!("./migrations/sqlite")
            .run(&writer)
            .await
            .map_err(|e| anyhow::anyhow!("migrating SQLite store {}: {e}", path.display()))?;
        let (readers, checkpointer) = read_pools(&base, READERS, path).await?;
        let (import_tx_records, import_fold_every) = match pacing {
            ImportPacing::Shared => {
                tokio::spawn(checkpoints(checkpointer.clone(), CHECKPOINT_EVERY));
                (IMPORT_TX_RECORDS, Some(IMPORT_FOLD_EVERY))
            }
            ImportPacing::Alone => (ALONE_IMPORT_TX_RECORDS, None),
        };
        // Beside it, whatever the pacing: an import alone moves in what an older data
        // dir holds as a server would (it has the data dir to itself too).
        let webhooks = webhooks::SqliteWebhooks::open(path, &writer).await?;
        Ok(SqliteStore {
            writer,
            readers,
            checkpointer,
            import_tx_records,
            import_fold_every,
            webhooks,
        })
    }

    /// A setting of the writer connection (`synchronous`: 2 is FULL; `journal_mode`:
    /// `wal`, `truncate`, …).
    #[cfg(test)]
    pub(crate) async fn writer_pragma<T: Pragma>(&self, name: &str) -> T {
        pragma(&self.writer, name).await
    }

    /// The writer's connection, held until dropped: a commit in progress, for as long
    /// as a test wants one.
    #[cfg(test)]
    pub(crate) async fn hold_writer(&self) -> sqlx::pool::PoolConnection<sqlx::Sqlite> {
        self.writer.acquire().await.unwrap()
    }

    /// Between an import's transactions (every `IMPORT_FOLD_EVERY`): folds the WAL into
    /// the database file. Otherwise the
    /// WAL grows to the size of the whole import: SQLite rewinds it only when a
    /// transaction starts with all of it folded in, and a background checkpoint always
    /// runs beside some commit in progress. Its end then brings one long checkpoint and a
    /// truncation of hundreds of megabytes, which every commit behind them waits for.
    /// Folded in steps, with the writer held so that no commit adds to the log
    /// meanwhile, the next transaction rewinds it, and the disk never has more than a
    /// megabyte or so to flush at once; other commits wait for one such checkpoint at
    /// most (milliseconds). A checkpoint that fails does not fail the import: the WAL
    /// just grows.
    async fn fold_wal(&self) -> Result<(), sqlx::Error> {
        // The checkpointer's connection first: a background round in progress is waited
        // for without holding the writer.
        let mut checkpointer = self.checkpointer.acquire().await?;
        let _writer = self.writer.acquire().await?;
        sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
            .execute(&mut *checkpointer)
            .await?;
        Ok(())
    }

    /// One transaction of `part` on the writer. It syncs the log (`synchronous=FULL`)
    /// unless it is one of an import's transactions but its last: in WAL mode a commit is
    /// durable once any later commit's sync is done, since the log is synced in order, so
    /// the last one makes the whole call durable. A crash before it loses some of the
    /// import's transactions, which is what a failed import may leave anyway
    /// (`Store::commit_import`). With a rollback journal, a commit that skips a sync
    /// risks the file itself on power loss, not just the latest transactions: every
    /// transaction syncs.
    async fn write_part(&self, workspace: Uuid, part: Part<'_>) -> StoreResult<()> {
        let fail = err("commit");
        let mut conn = self.writer.acquire().await.map_err(&fail)?;
        if !part.bulk || part.last || self.import_fold_every.is_none() {
            return Self::write_part_on(&mut conn, workspace, part).await;
        }
        let mut relaxed = Unsynced::relax(conn).await.map_err(&fail)?;
        let outcome = Self::write_part_on(relaxed.conn(), workspace, part).await;
        relaxed.restore().await.map_err(&fail)?;
        outcome
    }

    /// `write_part`'s transaction, on the writer's connection: the commit sequence
    /// (`super::commit`) over [`SqliteStatements`].
    async fn write_part_on(
        conn: &mut sqlx::pool::PoolConnection<sqlx::Sqlite>,
        workspace: Uuid,
        part: Part<'_>,
    ) -> StoreResult<()> {
        use sqlx::Connection;
        let fail = err("commit");
        // IMMEDIATE takes the write lock up front: if a writer in another process holds
        // it, we wait (busy_timeout) before doing any work rather than at the first
        // write, and a read never has to be upgraded to a write (which SQLite may refuse
        // with BUSY at once, without waiting).
        let tx = conn.begin_with("BEGIN IMMEDIATE").await.map_err(&fail)?;
        let mut statements = SqliteStatements { tx, store: () };
        super::commit::write_part(&mut statements, workspace, &part).await?;
        statements.tx.commit().await.map_err(&fail)
    }

    /// Closes every connection, folding the WAL into the database first; later calls
    /// fail as `Unavailable`.
    pub async fn close(&self) {
        self.webhooks.close().await;
        close_pools(
            &self.writer,
            &self.readers,
            &self.checkpointer,
            "recruit.db",
        )
        .await;
    }
}

/// What a test reads a setting as.
#[cfg(test)]
pub(crate) trait Pragma:
    for<'r> sqlx::Decode<'r, sqlx::Sqlite> + sqlx::Type<sqlx::Sqlite> + Send + Unpin
{
}

#[cfg(test)]
impl<T> Pragma for T where
    T: for<'r> sqlx::Decode<'r, sqlx::Sqlite> + sqlx::Type<sqlx::Sqlite> + Send + Unpin
{
}

/// A setting of a pool's connection.
#[cfg(test)]
async fn pragma<T: Pragma>(pool: &SqlitePool, name: &str) -> T {
    sqlx::query_scalar(&format!("PRAGMA {name}"))
        .fetch_one(pool)
        .await
        .unwrap()
}

/// Whether a result code is the database's state rather than the statement's (primary
/// code = low byte of the extended one). Only the codes that judge the statement or its
/// data — ERROR (1: SQL error), INTERNAL (2), TOOBIG (18), CONSTRAINT (19), MISMATCH
/// (20), MISUSE (21), RANGE (25) — are bugs here, since the domain validates every input
/// first; every other code (BUSY, LOCKED, NOMEM, READONLY, INTERRUPT, IOERR, CORRUPT,
/// FULL, CANTOPEN, PROTOCOL, SCHEMA, …) means "try again later" (503).
fn transient(e: &dyn sqlx::error::DatabaseError) -> bool {
    e.code()
        .and_then(|c| c.parse::<i64>().ok())
        .is_none_or(|c| !rows::judges_the_statement(c))
}

crate::store::sql::sql_on!(sqlx::Sqlite, transient);

fn err(context: &'static str) -> impl Fn(sqlx::Error) -> StoreError {
    super::sql::failed::<sqlx::Sqlite>(context)
}

#[async_trait]
impl Store for SqliteStore {
    fn webhook_rows(&self) -> Option<&dyn actors::store::WebhookRows> {
        Some(&self.webhooks)
    }

    async fn close(&self) {
        SqliteStore::close(self).await
    }

    fn is_closed(&self) -> bool {
        // Closing closes the readers first.
        self.readers.is_closed()
    }

    async fn put_blobs(&self, workspace: Uuid, items: &[(String, &[u8])]) -> StoreResult<()> {
        use sqlx::Connection;
        let fail = err("writing attachment bytes");
        let ws = workspace.to_string();
        // Transactions of a few megabytes: the writer is shared with every workspace's
        // commits, which wait no longer than one of them.
        for chunk in super::blob_transactions(items) {
            let mut conn = self.writer.acquire().await.map_err(&fail)?;
            let mut tx = conn.begin_with("BEGIN IMMEDIATE").await.map_err(&fail)?;
            {
                let mut handle = tx.lock_handle().await.map_err(&fail)?;
                let db = handle.as_raw_handle();
                // SAFETY: sqlx lends the connection until `handle` is dropped, after this
                // call; the transaction above is open on it.
                let write = || unsafe { rows::put_blobs(db, &ws, chunk) };
                match tokio::runtime::Handle::current().runtime_flavor() {
                    tokio::runtime::RuntimeFlavor::MultiThread => {
                        tokio::task::block_in_place(write)
                    }
                    _ => write(),
                }
                .map_err(|e| e.into_store_error("writing attachment bytes"))?;
            }
            tx.commit().await.map_err(&fail)?;
        }
        Ok(())
    }

    async fn blob_len(&self, workspace: Uuid, name: &str) -> StoreResult<Option<u64>> {
        reads::blob_len(&self.readers, workspace, name).await
    }

    async fn blob(&self, workspace: Uuid, name: &str) -> StoreResult<Option<Vec<u8>>> {
        reads::blob(&self.readers, workspace, name).await
    }

    async fn delete_blobs(&self, workspace: Uuid, names: &[String]) -> StoreResult<Reclaimed> {
        let fail = err("removing attachment bytes");
        let ws = workspace.to_string();
        let mut done = Reclaimed::default();
        for chunk in names.chunks(statements::DELETE_CHUNK) {
            let mut sql = String::from("DELETE FROM blobs WHERE workspace_id = ? AND name IN (");
            for i in 0..chunk.len() {
                sql.push_str(if i == 0 { "?" } else { ",?" });
            }
            sql.push_str(") RETURNING length(bytes)");
            let mut q = sqlx::query_scalar::<_, i64>(&sql).bind(&ws);
            for name in chunk {
                q = q.bind(name);
            }
            let lens = q.fetch_all(&self.writer).await.map_err(&fail)?;
            done += Reclaimed::of_lengths(lens.into_iter().map(|l| l as u64));
        }
        Ok(done)
    }

    async fn blob_names(&self, ws: Uuid, after: &str, limit: usize) -> StoreResult<Vec<String>> {
        reads::blob_names(&self.readers, ws, after, limit).await
    }

    async fn workspaces(&self) -> StoreResult<Vec<Workspace>> {
        let rows: Vec<(String, Option<String>, Option<String>)> =
            sqlx::query_as("SELECT id, name, default_region FROM workspaces ORDER BY id")
                .fetch_all(&self.readers)
                .await
                .map_err(err("listing workspaces"))?;
        rows.into_iter()
            .map(|(id, name, region)| decode_workspace(&id, name, region))
            .collect()
    }

    async fn load_records(&self, workspace: Uuid, sink: RecordSink<'_>) -> StoreResult<()> {
        reads::load_records(&self.readers, workspace, None, sink).await
    }

    async fn load_kind(&self, ws: Uuid, kind: RecordKind, sink: RecordSink<'_>) -> StoreResult<()> {
        reads::load_records(&self.readers, ws, Some(kind), sink).await
    }

    async fn commit(&self, workspace: Uuid, changes: &ChangeSet) -> StoreResult<()> {
        if changes.is_empty() {
            return Ok(());
        }
        let upserts = in_key_order(changes);
        let deletes = sorted_deletes(changes);
        let marker = changes.touched.as_ref().map(|t| t.encode());
        for part in parts_of(changes, &upserts, &deletes, marker.as_deref(), None) {
            self.write_part(workspace, part).await?;
        }
        Ok(())
    }

    /// On the writer, without a sync of its own (see `Unsynced`): durable with the next
    /// commit's sync, and a crash before it leaves the marker, which loads apply.
    async fn flush_touched(&self, ws: Uuid, position: u64, rows: &[Record]) -> StoreResult<()> {
        let fail = err("storing touched rows");
        let upserts = records_in_key_order(rows, None);
        let conn = self.writer.acquire().await.map_err(&fail)?;
        let mut relaxed = Unsynced::relax(conn).await.map_err(&fail)?;
        let outcome = async {
            use sqlx::Connection;
            let tx = relaxed
                .conn()
                .begin_with("BEGIN IMMEDIATE")
                .await
                .map_err(&fail)?;
            let mut statements = SqliteStatements { tx, store: () };
            super::commit::write_touched(&mut statements, ws, position, &upserts).await?;
            statements.tx.commit().await.map_err(&fail)
        }
        .await;
        relaxed.restore().await.map_err(&fail)?;
        outcome
    }

    async fn touches(&self, workspaces: &[Uuid]) -> StoreResult<Vec<Option<TouchMarker>>> {
        reads::touches(&self.readers, workspaces).await
    }

    /// In transactions of at most `IMPORT_TX_RECORDS` records each, so that the one
    /// writer connection is free between them and other workspaces' commits, queued in
    /// the writer pool, go in between: a large import never holds them for more than one
    /// such transaction. The workspace row goes first (a later import that failed part
    /// way leaves a workspace still found and loaded), or last in a first import
    /// (`ChangeSet::unlogged`), the mark and keys last.
    async fn commit_import(&self, workspace: Uuid, changes: &ChangeSet) -> StoreResult<()> {
        if changes.upserts.len() + changes.deletes.len() <= self.import_tx_records {
            return self.commit(workspace, changes).await;
        }
        let upserts = in_key_order(changes);
        let deletes = sorted_deletes(changes);
        let mut size = || self.import_tx_records;
        let marker = changes.touched.as_ref().map(|t| t.encode());
        let parts = parts_of(
            changes,
            &upserts,
            &deletes,
            marker.as_deref(),
            Some(&mut size),
        );
        for (i, part) in parts.enumerate() {
            if self
                .import_fold_every
                .is_some_and(|every| i > 0 && i % every == 0)
            {
                if let Err(e) = self.fold_wal().await {
                    tracing::debug!("checkpoint between import transactions failed: {e}");
                }
            }
            self.write_part(workspace, part).await?;
        }
        Ok(())
    }

    async fn committed(&self, workspace: Uuid, batch: Uuid) -> StoreResult<bool> {
        // The writer connection: a read of the last committed state, never queued behind
        // a long load on the readers.
        let mark = reads::commit_mark(&self.writer, workspace).await?;
        Ok(mark.as_deref() == Some(batch.to_string().as_str()))
    }

    async fn position(&self, workspace: Uuid) -> StoreResult<CommitPosition> {
        reads::position(&self.readers, workspace).await
    }

    async fn read_changes(&self, workspace: Uuid, window: LogWindow) -> StoreResult<LogRead> {
        reads::read_changes(&self.readers, workspace, window).await
    }

    async fn count_entries(&self, ws: Uuid, after: (u64, u32), upto: u64) -> StoreResult<u64> {
        super::change_log::count_entries(&self.readers, ws, after, upto).await
    }

    async fn tombstones(&self, workspace: Uuid) -> StoreResult<Vec<(Change, Stamp)>> {
        reads::tombstones(&self.readers, workspace).await
    }

    async fn prune_changes(
        &self,
        workspace: Uuid,
        before_ms: i64,
    ) -> StoreResult<actors::store::Pruned> {
        super::change_log::prune_changes(self, workspace, before_ms).await
    }

    async fn keys(&self) -> StoreResult<Vec<ApiKey>> {
        let rows = sqlx::query(&format!("SELECT {KEY_COLUMNS} FROM api_keys ORDER BY id"))
            .fetch_all(&self.readers)
            .await
            .map_err(err("listing keys"))?;
        rows.iter().map(key_from_row).collect()
    }

    async fn revoke_key(&self, id: &str) -> StoreResult<Option<ApiKey>> {
        let row = sqlx::query(&format!(
            "UPDATE api_keys SET revoked = TRUE WHERE id = ?1 RETURNING {KEY_COLUMNS}"
        ))
        .bind(id)
        .fetch_optional(&self.writer)
        .await
        .map_err(err("revoking key"))?;
        row.as_ref().map(key_from_row).transpose()
    }
}
