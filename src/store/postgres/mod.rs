//! The production store: PostgreSQL, selected with `--database-url postgres://…`.
//!
//! # Bulk writes
//! A commit sends its records as arrays, a few thousand rows per statement:
//! `INSERT … SELECT … FROM UNNEST($2::text[], $3::text[], $4::text[]) ON CONFLICT … DO
//! UPDATE`. One statement (and one round trip) per chunk, no bind-parameter limit, and
//! the statement text is the same for every chunk, so it is prepared once per
//! connection. Deletes use the same shape (`DELETE … USING UNNEST(…)`). Records go out
//! in primary-key order (`in_key_order`), and an upsert that would not change a body
//! does not write a new row version, so re-importing a snapshot costs little more than
//! reading it. An import commits in transactions of a few hundred records while other
//! commits run, so that its WAL is flushed as it goes rather than by the commits of
//! other workspaces, and of a few thousand while none do (`commit_import`); only the
//! last of each call waits for its flush. Alone
//! (`ImportPacing::Alone`: `recruitd import`), it commits a part per transaction.
//!
//! # Body type
//! `records.body` is TEXT rather than JSONB; see the note in
//! `migrations/postgres/0001_init.sql` for the measurements and the `\u0000` problem.
//!
//! # Connections
//! A handful of pooled connections, each acquisition bounded by `ACQUIRE_TIMEOUT`, so a
//! dead server is reported as `Unavailable` within seconds.

mod prune;
mod statements;
mod webhooks;

use super::commit::{parts_of, sorted_deletes};
use super::fence::Fences;
use super::{
    commit_position, decode_workspace, in_key_order, key_from_row, load_rows, reads, ImportPacing,
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
use parking_lot::Mutex;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use statements::{check_lease, InFlight, DELETE_CHUNK, SETTLE_POLL, STARTING_WAIT};
use std::collections::HashMap;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use uuid::Uuid;

/// Most records an import writes in one transaction (see `commit_import`): a few
/// hundred kilobytes of WAL, or a few megabytes just after a checkpoint starts (when
/// every page's first change is logged whole), which is what a commit of another
/// workspace may have to flush with its own. The import takes no longer for it.
const IMPORT_TX_RECORDS: usize = 250;
/// Records per import transaction while no other commit has run for `QUIET`: with no
/// commit to flush the import's WAL, larger transactions cost nothing to anyone, and a
/// million people's import runs 25,000 fewer of them (114 -> 84 s through the admin
/// interface).
const QUIET_IMPORT_TX_RECORDS: usize = 5_000;
const QUIET: Duration = Duration::from_secs(1);

/// Pooled connections: one per concurrent workspace commit or load is plenty; the
/// workspace actors serialise writes per workspace anyway.
const MAX_CONNECTIONS: u32 = 8;

/// How long a commit transaction may wait idle for its client before the server ends it
/// (no healthy commit pauses between its statements for anything near this).
const IDLE_IN_TRANSACTION_LIMIT: &str = "5s";

/// The key columns, in the order `key_from_row` reads them.
const KEY_COLUMNS: &str =
    "id, workspace_id, secret_hash, scopes, created_by, revoked, rate_limit_per_minute, \
     to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')";

/// PostgreSQL behind the Store port.
pub struct PostgresStore {
    pool: PgPool,
    /// Each batch whose commit has not reported its outcome: `Starting` until its first
    /// statement answers, then the transaction that carries it; cleared once the outcome
    /// is known.
    in_flight: Mutex<HashMap<Uuid, InFlight>>,
    /// Records per import transaction (`paced`) while other commits run beside it.
    import_tx_records: usize,
    /// When the last commit other than an import's ran, in milliseconds since `opened`
    /// (`u64::MAX`: none yet).
    last_commit_beside: AtomicU64,
    opened: Instant,
    /// The writer leases this server holds, when it shares the store with other servers
    /// (see [`super::fence`]): every commit checks its lease. `None`: commits unchecked
    /// (offline commands, which hold the store alone).
    fences: Option<Arc<Fences>>,
}

/// Begins a transaction that writes `workspace`'s rows outside a commit (attachment
/// bytes, retention's deletes): on a fenced store it first checks, as a commit does,
/// that this server holds the workspace's lease, and keeps it share-locked, so that a
/// server that lost the workspace removes and writes nothing of it.
async fn fenced_tx<'a>(
    pool: &'a PgPool,
    fences: Option<&Fences>,
    workspace: Uuid,
    fail: &impl Fn(sqlx::Error) -> StoreError,
) -> StoreResult<sqlx::Transaction<'a, sqlx::Postgres>> {
    let mut tx = pool.begin().await.map_err(fail)?;
    if let Some(fences) = fences {
        check_lease(&mut tx, &workspace.to_string(), workspace, fences).await?;
    }
    Ok(tx)
}

/// A workspace id as the store keeps it, read back.
fn workspace_id(ws: &str) -> StoreResult<Uuid> {
    Uuid::parse_str(ws).map_err(|_| StoreError::Corrupt(format!("workspace id {ws:?}")))
}

/// One workspace's row (`ws` as stored), through `db` (the pool, or a transaction).
async fn workspace_row<'e>(
    db: impl sqlx::PgExecutor<'e>,
    ws: &str,
    fail: impl Fn(sqlx::Error) -> StoreError,
) -> StoreResult<Option<Workspace>> {
    let row: Option<(String, Option<String>, Option<String>)> = sqlx::query_as(
        "SELECT workspace_id, name, default_region FROM workspaces WHERE workspace_id = $1",
    )
    .bind(ws)
    .fetch_optional(db)
    .await
    .map_err(fail)?;
    row.map(|(id, name, region)| decode_workspace(&id, name, region))
        .transpose()
}

impl PostgresStore {
    /// The store with imports split as `pacing` says: alone, a transaction per commit
    /// part.
    pub fn paced(mut self, pacing: ImportPacing) -> Self {
        self.import_tx_records = match pacing {
            ImportPacing::Shared => IMPORT_TX_RECORDS,
            ImportPacing::Alone => ALONE_IMPORT_TX_RECORDS,
        };
        self
    }

    /// The store with every commit checked against the writer leases `fences` holds
    /// (see [`super::fence`]).
    pub fn fenced(mut self, fences: Arc<Fences>) -> Self {
        self.fences = Some(fences);
        self
    }

    /// Connects (failing within `ACQUIRE_TIMEOUT` when the server cannot be reached) and
    /// applies the migrations.
    pub async fn open(url: &str) -> anyhow::Result<Self> {
        let store = Self::connect_lazy(url, ACQUIRE_TIMEOUT)?;
        // One connection first, on its own: the pool would retry until its deadline and
        // report only that it timed out, not why.
        {
            use sqlx::{ConnectOptions, Connection};
            let options = PgConnectOptions::from_str(url)
                .map_err(|e| anyhow::anyhow!("invalid PostgreSQL URL: {e}"))?;
            let conn = tokio::time::timeout(ACQUIRE_TIMEOUT, options.connect())
                .await
                .map_err(|_| {
                    super::postgres_unreachable(
                        &options,
                        &sqlx::Error::Io(std::io::ErrorKind::TimedOut.into()),
                    )
                })?
                .map_err(|e| super::postgres_unreachable(&options, &e))?;
            conn.close().await.ok();
        }
        sqlx::migrate!("./migrations/postgres")
            .run(&store.pool)
            .await
            .map_err(|e| anyhow::anyhow!("migrating PostgreSQL store: {e}"))?;
        Ok(store)
    }

    /// A store whose connections are made on first use, without migrating: for callers
    /// that must start while the database is down, and for tests of outage handling.
    pub fn connect_lazy(url: &str, acquire_timeout: Duration) -> anyhow::Result<Self> {
        let options = PgConnectOptions::from_str(url)
            .map_err(|e| anyhow::anyhow!("invalid PostgreSQL URL: {e}"))?;
        // A transaction whose client stopped (a process frozen by SIGSTOP, a pause) is
        // ended by the server rather than left holding its locks: among them its writer
        // lease's, which a new writer waits for (see `super::fence`).
        let options = super::quiet_slow_statements(options).options([(
            "idle_in_transaction_session_timeout",
            IDLE_IN_TRANSACTION_LIMIT,
        )]);
        let pool = PgPoolOptions::new()
            .max_connections(MAX_CONNECTIONS)
            .acquire_timeout(acquire_timeout)
            .connect_lazy_with(options);
        Ok(PostgresStore {
            pool,
            in_flight: Mutex::new(HashMap::new()),
            import_tx_records: IMPORT_TX_RECORDS,
            last_commit_beside: AtomicU64::new(u64::MAX),
            opened: Instant::now(),
            fences: None,
        })
    }

    /// Closes every connection; later calls fail as `Unavailable`.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// Whether a database error is the server's state rather than the statement's: every
/// SQLSTATE but those that judge the statement or its data is "try again later" (503):
/// connection loss (08), a read-only server after a failover (25006), serialization
/// failures and deadlocks (40), resources (53), locks (55), shutdowns and cancels (57),
/// I/O (58), and whatever else a server in trouble may say. The statement-judging
/// classes — cardinality (21), data (22), constraints (23), invalid transaction and
/// statement states (24–2F, but 25006), syntax and access rules (42), unsupported
/// features (0A) — are bugs here, since the domain validates every input before it
/// reaches the store.
fn transient(e: &dyn sqlx::error::DatabaseError) -> bool {
    let Some(code) = e.code() else {
        return true;
    };
    // 25006: read-only transaction (a standby promoted meanwhile); 25P03: the server
    // ended a transaction left idle (its client was frozen): both pass.
    if code == "25006" || code == "25P03" {
        return true;
    }
    !matches!(
        code.get(..2),
        Some(
            "0A" | "21"
                | "22"
                | "23"
                | "24"
                | "25"
                | "26"
                | "27"
                | "28"
                | "2B"
                | "2D"
                | "2F"
                | "42"
        )
    )
}

crate::store::sql::sql_on!(sqlx::Postgres, transient);

fn err(context: &'static str) -> impl Fn(sqlx::Error) -> StoreError {
    super::sql::failed::<sqlx::Postgres>(context)
}

#[async_trait]
impl Store for PostgresStore {
    fn webhook_rows(&self) -> Option<&dyn actors::store::WebhookRows> {
        Some(self)
    }

    async fn close(&self) {
        PostgresStore::close(self).await
    }

    fn is_closed(&self) -> bool {
        self.pool.is_closed()
    }

    async fn put_blobs(&self, workspace: Uuid, items: &[(String, &[u8])]) -> StoreResult<()> {
        let fail = err("writing attachment bytes");
        let ws = workspace.to_string();
        // Statements of a few megabytes, each its own transaction: nothing names the
        // bytes until the records that do are committed, after this returns.
        for chunk in super::blob_transactions(items) {
            let names: Vec<&str> = chunk.iter().map(|(n, _)| n.as_str()).collect();
            let bytes: Vec<&[u8]> = chunk.iter().map(|(_, b)| *b).collect();
            let mut tx = fenced_tx(&self.pool, self.fences.as_deref(), workspace, &fail).await?;
            sqlx::query(
                "INSERT INTO blobs (workspace_id, name, bytes) \
                 SELECT $1, n, b FROM UNNEST($2::text[], $3::bytea[]) AS t(n, b) \
                 ON CONFLICT (workspace_id, name) DO UPDATE SET bytes = EXCLUDED.bytes",
            )
            .bind(&ws)
            .bind(&names)
            .bind(&bytes)
            .execute(&mut *tx)
            .await
            .map_err(&fail)?;
            tx.commit().await.map_err(&fail)?;
        }
        Ok(())
    }

    async fn blob_len(&self, workspace: Uuid, name: &str) -> StoreResult<Option<u64>> {
        reads::blob_len(&self.pool, workspace, name).await
    }

    async fn blob(&self, workspace: Uuid, name: &str) -> StoreResult<Option<Vec<u8>>> {
        reads::blob(&self.pool, workspace, name).await
    }

    async fn delete_blobs(&self, workspace: Uuid, names: &[String]) -> StoreResult<Reclaimed> {
        let fail = err("removing attachment bytes");
        let ws = workspace.to_string();
        let mut done = Reclaimed::default();
        for chunk in names.chunks(DELETE_CHUNK) {
            let mut tx = fenced_tx(&self.pool, self.fences.as_deref(), workspace, &fail).await?;
            let lens: Vec<i32> = sqlx::query_scalar(
                "DELETE FROM blobs WHERE workspace_id = $1 AND name = ANY($2::text[]) \
                 RETURNING octet_length(bytes)",
            )
            .bind(&ws)
            .bind(chunk)
            .fetch_all(&mut *tx)
            .await
            .map_err(&fail)?;
            tx.commit().await.map_err(&fail)?;
            done += Reclaimed::of_lengths(lens.into_iter().map(|l| l as u64));
        }
        Ok(done)
    }

    async fn blob_names(&self, ws: Uuid, after: &str, limit: usize) -> StoreResult<Vec<String>> {
        reads::blob_names(&self.pool, ws, after, limit).await
    }

    async fn workspaces(&self) -> StoreResult<Vec<Workspace>> {
        let rows: Vec<(String, Option<String>, Option<String>)> = sqlx::query_as(
            "SELECT workspace_id, name, default_region FROM workspaces ORDER BY workspace_id",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(err("listing workspaces"))?;
        rows.into_iter()
            .map(|(id, name, region)| decode_workspace(&id, name, region))
            .collect()
    }

    async fn workspace(&self, id: Uuid) -> StoreResult<Option<Workspace>> {
        workspace_row(&self.pool, &id.to_string(), err("reading a workspace")).await
    }

    async fn load_records(&self, workspace: Uuid, sink: RecordSink<'_>) -> StoreResult<()> {
        // Rows are read off the socket as they arrive: the server streams the result and
        // TCP flow control holds it back while the sink is busy.
        reads::load_records(&self.pool, workspace, None, sink).await
    }

    async fn load_records_of(
        &self,
        workspaces: &[Uuid],
        sink: &mut (dyn FnMut(Uuid, Record) + Send),
    ) -> StoreResult<()> {
        if let [w] = workspaces {
            // A workspace alone (a large one, or a reload): its own read, with no
            // workspace column to carry and parse for each of its rows.
            return self.load_records(*w, &mut |r| sink(*w, r)).await;
        }
        let ids: Vec<String> = workspaces.iter().map(Uuid::to_string).collect();
        let rows = sqlx::query(
            "SELECT workspace_id, kind, id, body FROM records WHERE workspace_id = ANY($1)",
        )
        .bind(&ids)
        .fetch(&self.pool);
        super::load_rows(rows, true, sink, err("loading records")).await
    }

    async fn positions(&self, workspaces: &[Uuid]) -> StoreResult<Vec<CommitPosition>> {
        let ids: Vec<String> = workspaces.iter().map(Uuid::to_string).collect();
        let rows: Vec<(String, i64, String)> = sqlx::query_as(
            "SELECT workspace_id, position, tag FROM commit_positions WHERE workspace_id = ANY($1)",
        )
        .bind(&ids)
        .fetch_all(&self.pool)
        .await
        .map_err(err("reading commit positions"))?;
        let mut found: std::collections::HashMap<String, CommitPosition> =
            std::collections::HashMap::with_capacity(rows.len());
        for (w, seq, tag) in rows {
            found.insert(w, commit_position(seq, &tag)?);
        }
        Ok(ids
            .iter()
            .map(|w| found.remove(w).unwrap_or_default())
            .collect())
    }

    async fn tombstones_of(
        &self,
        workspaces: &[Uuid],
    ) -> StoreResult<Vec<Vec<(actors::entries::Change, actors::time::Stamp)>>> {
        let ids: Vec<String> = workspaces.iter().map(Uuid::to_string).collect();
        let rows: Vec<(String, i16, String, i64)> = sqlx::query_as(
            "SELECT workspace_id, entity, id, deleted_at FROM tombstones \
             WHERE workspace_id = ANY($1)",
        )
        .bind(&ids)
        .fetch_all(&self.pool)
        .await
        .map_err(err("reading the tombstones"))?;
        let mut by: std::collections::HashMap<String, Vec<(i64, String, i64)>> =
            std::collections::HashMap::new();
        for (w, e, i, a) in rows {
            by.entry(w).or_default().push((e.into(), i, a));
        }
        ids.iter()
            .map(|w| reads::tombstone_rows(by.remove(w).unwrap_or_default()))
            .collect()
    }

    async fn load_kind(&self, ws: Uuid, kind: RecordKind, sink: RecordSink<'_>) -> StoreResult<()> {
        reads::load_records(&self.pool, ws, Some(kind), sink).await
    }

    async fn commit(&self, workspace: Uuid, changes: &ChangeSet) -> StoreResult<()> {
        if changes.is_empty() {
            return Ok(());
        }
        let now = self.opened.elapsed().as_millis() as u64;
        self.last_commit_beside.store(now, Ordering::Relaxed);
        self.write_changes(workspace, changes).await
    }

    /// In transactions of at most `IMPORT_TX_RECORDS` records each. PostgreSQL lets other
    /// commits run beside a long transaction, but every commit must flush the WAL up to
    /// its own record, so a commit of another workspace would flush whatever the import
    /// wrote since the last flush: tens of megabytes in one transaction, hundreds of
    /// milliseconds. An import that commits every few hundred records flushes its own
    /// WAL as it goes. Its data pages, too: the import's backend writes out the pages it
    /// evicts from the server's buffers, and by default leaves them to the kernel, which
    /// lets hundreds of megabytes gather and then writes them in one burst that every
    /// WAL flush on the disk waits behind (measured: 350 MB at once, half-second
    /// commits); `backend_flush_after` makes it start their write-back every 256 kB,
    /// for its transactions only. While no other commit has run for a second, the
    /// import's transactions are larger (`QUIET_IMPORT_TX_RECORDS`): there is no commit
    /// to flush their WAL, and the next one to come waits for at most one of them
    /// before the import's transactions are small again. The workspace row goes first (a
    /// later import that failed part way leaves a workspace still found and loaded), or
    /// last in a first import (`ChangeSet::unlogged`: no server finds the workspace
    /// before all of it is in); the mark and keys last. Every transaction is tracked
    /// under the batch, so `committed` settles whichever is in doubt.
    async fn commit_import(&self, workspace: Uuid, changes: &ChangeSet) -> StoreResult<()> {
        if changes.upserts.len() + changes.deletes.len() <= self.import_tx_records {
            return self.write_changes(workspace, changes).await;
        }
        let upserts = in_key_order(changes);
        let deletes = sorted_deletes(changes);
        let size = || {
            let last = self.last_commit_beside.load(Ordering::Relaxed);
            let now = self.opened.elapsed().as_millis() as u64;
            let quiet = last == u64::MAX || now.saturating_sub(last) >= QUIET.as_millis() as u64;
            if quiet {
                self.import_tx_records.max(QUIET_IMPORT_TX_RECORDS)
            } else {
                self.import_tx_records
            }
        };
        let mut size = size;
        let marker = changes.touched.as_ref().map(|t| t.encode());
        for part in parts_of(
            changes,
            &upserts,
            &deletes,
            marker.as_deref(),
            Some(&mut size),
        ) {
            self.write_tracked(workspace, part).await?;
        }
        Ok(())
    }

    async fn flush_touched(&self, ws: Uuid, position: u64, rows: &[Record]) -> StoreResult<()> {
        self.write_touched(ws, position, rows).await
    }

    async fn touches(&self, workspaces: &[Uuid]) -> StoreResult<Vec<Option<TouchMarker>>> {
        reads::touches(&self.pool, workspaces).await
    }

    async fn read_changes(&self, workspace: Uuid, window: LogWindow) -> StoreResult<LogRead> {
        reads::read_changes(&self.pool, workspace, window).await
    }

    async fn count_entries(&self, ws: Uuid, after: (u64, u32), upto: u64) -> StoreResult<u64> {
        super::change_log::count_entries(&self.pool, ws, after, upto).await
    }

    async fn tombstones(&self, workspace: Uuid) -> StoreResult<Vec<(Change, Stamp)>> {
        reads::tombstones(&self.pool, workspace).await
    }

    /// In one read-only transaction at one snapshot, four statements each within the
    /// workspace: the marker and the records it names are read as of one moment.
    async fn read_current(
        &self,
        workspace: Uuid,
        changes: &[actors::entries::Change],
    ) -> StoreResult<actors::store::Current> {
        let keys = actors::entries::stored_keys(changes);
        let fail = err("reading records to follow");
        let ws = workspace.to_string();
        let mut tx = self.pool.begin().await.map_err(&fail)?;
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            .execute(&mut *tx)
            .await
            .map_err(&fail)?;
        let row = workspace_row(&mut *tx, &ws, &fail).await?;
        let marker: Option<(i64, Option<String>)> = sqlx::query_as(
            "SELECT position, touched FROM commit_positions WHERE workspace_id = $1",
        )
        .bind(&ws)
        .fetch_optional(&mut *tx)
        .await
        .map_err(&fail)?;
        let touched = match marker {
            Some((position, Some(text))) => Some(actors::store::TouchMarker {
                position: position as u64,
                touched: actors::store::Touched::decode(&text)?,
            }),
            _ => None,
        };
        let kinds: Vec<&str> = keys.iter().map(|(k, _)| k.as_str()).collect();
        let ids: Vec<&str> = keys.iter().map(|(_, id)| id.as_str()).collect();
        let mut found = Vec::new();
        {
            // Two index lookups (an OR of both would let the planner scan the whole
            // workspace's records).
            let rows = sqlx::query(
                "SELECT kind, id, body FROM records WHERE workspace_id = $1 AND kind = $4 \
                 UNION ALL \
                 SELECT r.kind, r.id, r.body FROM UNNEST($2::text[], $3::text[]) AS k(kind, id) \
                 JOIN records r ON r.workspace_id = $1 AND r.kind = k.kind AND r.id = k.id",
            )
            .bind(&ws)
            .bind(&kinds)
            .bind(&ids)
            .bind(RecordKind::Stage.as_str())
            .fetch(&mut *tx);
            load_rows(rows, false, &mut |_, r| found.push(r), &fail).await?;
        }
        let (stages, records) = found
            .into_iter()
            .partition(|r| r.kind() == RecordKind::Stage);
        let entities: Vec<i16> = changes.iter().map(|c| i16::from(c.entity.tag())).collect();
        let logged: Vec<String> = changes.iter().map(|c| c.id.to_string()).collect();
        let rows: Vec<(i16, String, i64)> = sqlx::query_as(
            "SELECT t.entity, t.id, t.deleted_at FROM UNNEST($2::smallint[], $3::text[]) AS k(entity, id) \
             JOIN tombstones t ON t.workspace_id = $1 AND t.entity = k.entity AND t.id = k.id",
        )
        .bind(&ws)
        .bind(&entities)
        .bind(&logged)
        .fetch_all(&mut *tx)
        .await
        .map_err(&fail)?;
        tx.commit().await.map_err(&fail)?;
        Ok(actors::store::Current {
            keys,
            records,
            stages,
            workspace: row,
            tombstones: reads::tombstone_rows(
                rows.into_iter().map(|(e, i, a)| (e.into(), i, a)).collect(),
            )?,
            touched,
        })
    }

    async fn prune_changes(
        &self,
        workspace: Uuid,
        before_ms: i64,
    ) -> StoreResult<actors::store::Pruned> {
        super::change_log::prune_changes(self, workspace, before_ms).await
    }

    /// Certain, never a guess: a transaction still in progress (its COMMIT stalled on a
    /// slow disk, a synchronous standby that does not answer, a frozen backend or a lost
    /// connection) could commit after any read of the mark. So while it is in progress
    /// its backend is ended (`pg_terminate_backend`, matched on pid *and* transaction id
    /// so that no other session is touched), and the answer is read only once the
    /// transaction has ended: `pg_xact_status` says committed or aborted. A backend ended
    /// while waiting for a standby finishes its commit locally first, so the batch is
    /// then committed (and the standby catches up later).
    ///
    /// A commit still before its first answer is waited for (up to `STARTING_WAIT`). A
    /// batch not recorded at all has ended: either its commit reported its outcome, or
    /// it never got an answer to its first statement, so never sent COMMIT; the mark
    /// tells which.
    async fn committed(&self, workspace: Uuid, batch: Uuid) -> StoreResult<bool> {
        let waiting_since = std::time::Instant::now();
        loop {
            let recorded = self.in_flight.lock().get(&batch).cloned();
            match recorded {
                Some(InFlight::Starting) => {
                    if waiting_since.elapsed() > STARTING_WAIT {
                        return Err(StoreError::Unavailable(
                            "the commit has not reached the store yet".into(),
                        ));
                    }
                    tokio::time::sleep(SETTLE_POLL).await;
                }
                Some(InFlight::Running { pid, xid, marks }) => {
                    let status = self.settle_transaction(pid, &xid).await?;
                    if let (Some(committed), true) = (status, marks) {
                        self.in_flight.lock().remove(&batch);
                        return Ok(committed);
                    }
                    // Too old for the commit log to say, or not the transaction that
                    // marks the batch (ended now, either way): the mark says.
                    break;
                }
                None => break,
            }
        }
        let mark = reads::commit_mark(&self.pool, workspace).await?;
        self.in_flight.lock().remove(&batch);
        Ok(mark.as_deref() == Some(batch.to_string().as_str()))
    }

    async fn position(&self, workspace: Uuid) -> StoreResult<CommitPosition> {
        reads::position(&self.pool, workspace).await
    }

    async fn keys(&self) -> StoreResult<Vec<ApiKey>> {
        let rows = sqlx::query(&format!("SELECT {KEY_COLUMNS} FROM api_keys ORDER BY id"))
            .fetch_all(&self.pool)
            .await
            .map_err(err("listing keys"))?;
        rows.iter().map(key_from_row).collect()
    }

    async fn revoke_key(&self, id: &str) -> StoreResult<Option<ApiKey>> {
        let row = sqlx::query(&format!(
            "UPDATE api_keys SET revoked = TRUE WHERE id = $1 RETURNING {KEY_COLUMNS}"
        ))
        .bind(id)
        .fetch_optional(&self.pool)
        .await
        .map_err(err("revoking key"))?;
        row.as_ref().map(key_from_row).transpose()
    }
}
