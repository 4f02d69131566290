//! The webhook rows of the embedded store (`crate::store::webhooks`), in a file of their
//! own: `<data-dir>/webhooks.db`, beside `recruit.db`.
//!
//! # Why a file of its own
//! SQLite has one writer per file. Every delivery records its attempt and the move of
//! its endpoint's point before anything further is sent; on `recruit.db` those records
//! queued on the one writer connection behind the workspaces' commits and their flushes
//! (and the commits behind a catch-up's records). In a file of its own, with its own
//! writer connection and read pool, neither waits for the other. Nothing needs the two
//! in one transaction: an endpoint's row names points of the change log, which only
//! grows, and a point the store has not reached is waited for, never trusted.
//!
//! # Durability
//! WAL, `synchronous=NORMAL` on the writer: the deliveries' own records
//! ([`WebhookRows::record`](actors::store::WebhookRows::record)) commit without waiting
//! for a flush (a crash of the process loses none; one of the machine may lose the
//! last, and deliveries then resume from an earlier point: sent again, never skipped).
//! The API's writes of an endpoint
//! ([`WebhookRows::write`](actors::store::WebhookRows::write)) commit with
//! `synchronous=FULL`, flushing the log (and every record before them with it) before
//! they are answered. The WAL is folded into the file in the background, as
//! `recruit.db`'s is (`super::checkpoints`).
//!
//! # The move from `recruit.db`
//! An earlier release kept these rows in `recruit.db`'s tables of the same names. The
//! first open of such a data dir moves them here ([`move_in`]): copied in one
//! transaction of this file that also records the move (`moved_in`), then cleared from
//! `recruit.db` in one of its own. Interrupted before the first commits, nothing has
//! moved and the next open starts again; after it, the next open finds the move recorded
//! and only clears the old rows. Nothing is lost or found twice. `recruit.db`'s tables
//! stay, empty.

use super::files::recover;
use super::CHECKPOINT_EVERY;
use crate::store::webhooks::{run_steps, Step, WebhookTables};
use crate::store::ACQUIRE_TIMEOUT;
use actors::store::{Flush, StoreResult};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use std::path::{Path, PathBuf};
use uuid::Uuid;

/// The file's name, in the directory of `recruit.db`.
pub const FILE: &str = "webhooks.db";

/// Connections of the read pool: the API's reads of endpoints and attempts, and a
/// node's look at the workspaces with endpoints when it starts.
const READERS: u32 = 2;

/// Where the webhook rows of the store at `main` (its `recruit.db`) live.
pub fn path_beside(main: &Path) -> PathBuf {
    main.with_file_name(FILE)
}

/// The webhook rows' file: one writer connection, a read pool, and the background
/// checkpointer's connection (see the module's docs).
pub struct SqliteWebhooks {
    writer: SqlitePool,
    readers: SqlitePool,
    checkpointer: SqlitePool,
}

impl SqliteWebhooks {
    /// Opens (creating when missing) the file beside `main`, applies its migrations,
    /// moves in the rows `main_writer` (`recruit.db`'s writer) still holds, and folds
    /// its WAL in from then on.
    pub(super) async fn open(main: &Path, main_writer: &SqlitePool) -> anyhow::Result<Self> {
        let file = Self::open_file(main).await?;
        move_in(&file, main, main_writer).await?;
        tokio::spawn(super::files::checkpoints(
            file.checkpointer.clone(),
            CHECKPOINT_EVERY,
        ));
        Ok(file)
    }

    /// The file beside `main`, opened and migrated, nothing moved in.
    pub(crate) async fn open_file(main: &Path) -> anyhow::Result<Self> {
        let path = path_beside(main);
        let base = crate::store::quiet_slow_statements(SqliteConnectOptions::new())
            .filename(&path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(ACQUIRE_TIMEOUT)
            .foreign_keys(false);
        recover(&base, &path).await?;
        let cannot = |e: sqlx::Error| anyhow::anyhow!("cannot open {}: {e}", path.display());
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(
                base.clone()
                    .pragma("temp_store", "memory")
                    // Checkpoints run in the background, never inside a record.
                    .pragma("wal_autocheckpoint", "0"),
            )
            .await
            .map_err(cannot)?;
        sqlx::migrate!("./migrations/sqlite-webhooks")
            .run(&writer)
            .await
            .map_err(|e| anyhow::anyhow!("migrating {}: {e}", path.display()))?;
        let (readers, checkpointer) = super::files::read_pools(&base, READERS, &path).await?;
        Ok(SqliteWebhooks {
            writer,
            readers,
            checkpointer,
        })
    }

    /// Closes every connection, folding the WAL into the file first.
    pub(crate) async fn close(&self) {
        super::files::close_pools(&self.writer, &self.readers, &self.checkpointer, FILE).await;
    }

    /// A setting of the writer connection (`synchronous`: 1 is NORMAL, 2 FULL).
    #[cfg(test)]
    pub(crate) async fn writer_pragma<T: super::Pragma>(&self, name: &str) -> T {
        super::pragma(&self.writer, name).await
    }
}

/// `moved_in.source` of the rows `recruit.db` held.
const FROM_MAIN: &str = "recruit.db";

/// Moves the rows `recruit.db` (at `main`, written by `main_writer`) still holds into
/// `file` (see the module's docs): what it moved, `(endpoints, attempts)`, or nothing
/// when it held none.
pub(crate) async fn move_in(
    file: &SqliteWebhooks,
    main: &Path,
    main_writer: &SqlitePool,
) -> anyhow::Result<Option<(u64, u64)>> {
    let left: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM webhook_endpoints) \
         OR EXISTS (SELECT 1 FROM webhook_attempts)",
    )
    .fetch_one(main_writer)
    .await
    .map_err(|e| anyhow::anyhow!("reading recruit.db's webhook rows: {e}"))?;
    if !left {
        return Ok(None);
    }
    let moved = copy_in(file, main).await?;
    clear_main(main_writer).await?;
    if let Some((endpoints, attempts)) = moved {
        tracing::info!(
            endpoints,
            attempts,
            "moved the webhook rows recruit.db held into {FILE}"
        );
    }
    Ok(moved)
}

/// The first step of [`move_in`]: copies `recruit.db`'s rows into `file` with the move's
/// record, in one transaction of `file`, flushed; `None` when the move was recorded
/// already (by an open interrupted before it cleared them).
pub(crate) async fn copy_in(
    file: &SqliteWebhooks,
    main: &Path,
) -> anyhow::Result<Option<(u64, u64)>> {
    use sqlx::Connection;
    let fail = |e: sqlx::Error| anyhow::anyhow!("moving recruit.db's webhook rows: {e}");
    let mut conn = file.writer.acquire().await.map_err(fail)?;
    let recorded: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM moved_in WHERE source = ?1)")
            .bind(FROM_MAIN)
            .fetch_one(&mut *conn)
            .await
            .map_err(fail)?;
    if recorded {
        return Ok(None);
    }
    // An attached database stays with its connection: this one is closed, not pooled
    // again, whatever happens.
    conn.close_on_drop();
    sqlx::query("PRAGMA synchronous = FULL")
        .execute(&mut *conn)
        .await
        .map_err(fail)?;
    sqlx::query("ATTACH DATABASE ?1 AS old")
        .bind(main.to_string_lossy().into_owned())
        .execute(&mut *conn)
        .await
        .map_err(fail)?;
    let mut tx = conn.begin().await.map_err(fail)?;
    let endpoints = sqlx::query(
        "INSERT INTO main.webhook_endpoints (workspace_id, id, body) \
         SELECT workspace_id, id, body FROM old.webhook_endpoints",
    )
    .execute(&mut *tx)
    .await
    .map_err(fail)?
    .rows_affected();
    let attempts = sqlx::query(
        "INSERT INTO main.webhook_attempts (workspace_id, endpoint_id, seq, body) \
         SELECT workspace_id, endpoint_id, seq, body FROM old.webhook_attempts",
    )
    .execute(&mut *tx)
    .await
    .map_err(fail)?
    .rows_affected();
    sqlx::query(
        "INSERT INTO main.moved_in (source, moved_at, endpoints, attempts) \
         VALUES (?1, ?2, ?3, ?4)",
    )
    .bind(FROM_MAIN)
    .bind(actors::store::now_ms())
    .bind(endpoints as i64)
    .bind(attempts as i64)
    .execute(&mut *tx)
    .await
    .map_err(fail)?;
    tx.commit().await.map_err(fail)?;
    Ok(Some((endpoints, attempts)))
}

/// The second step of [`move_in`]: the rows `recruit.db` holds, removed in one
/// transaction (flushed, as every commit of its writer is).
async fn clear_main(main_writer: &SqlitePool) -> anyhow::Result<()> {
    use sqlx::Connection;
    let fail = |e: sqlx::Error| anyhow::anyhow!("clearing recruit.db's webhook rows: {e}");
    let mut conn = main_writer.acquire().await.map_err(fail)?;
    let mut tx = conn.begin_with("BEGIN IMMEDIATE").await.map_err(fail)?;
    for table in ["webhook_attempts", "webhook_endpoints"] {
        sqlx::query(&format!("DELETE FROM {table}"))
            .execute(&mut *tx)
            .await
            .map_err(fail)?;
    }
    tx.commit().await.map_err(fail)
}

#[async_trait::async_trait]
impl WebhookTables for SqliteWebhooks {
    type Db = sqlx::Sqlite;

    fn readers(&self) -> &sqlx::Pool<sqlx::Sqlite> {
        &self.readers
    }

    async fn webhook_commit(&self, ws: Uuid, steps: &[Step<'_>], flush: Flush) -> StoreResult<()> {
        let ws = &ws.to_string();
        // One writer, of this file alone: SQLite is never shared by several servers, so
        // nothing to fence, and no workspace's commit to wait behind.
        let mut conn = self.writer.acquire().await.map_err(Self::failed)?;
        if flush == Flush::Unsynced {
            return run_in_tx(&mut conn, ws, steps).await.map_err(Self::failed);
        }
        sqlx::query("PRAGMA synchronous = FULL")
            .execute(&mut *conn)
            .await
            .map_err(Self::failed)?;
        let outcome = run_in_tx(&mut conn, ws, steps).await;
        // Back to NORMAL for the records after it. A connection left at FULL (this
        // failed, or the future was dropped part way) only flushes more than it need.
        if let Err(e) = sqlx::query("PRAGMA synchronous = NORMAL")
            .execute(&mut *conn)
            .await
        {
            tracing::debug!("webhook rows' writer left at synchronous=FULL: {e}");
        }
        outcome.map_err(Self::failed)
    }
}

/// `steps` in one transaction on the writer's connection.
async fn run_in_tx(
    conn: &mut sqlx::pool::PoolConnection<sqlx::Sqlite>,
    ws: &str,
    steps: &[Step<'_>],
) -> Result<(), sqlx::Error> {
    use sqlx::Connection;
    let mut tx = conn.begin().await?;
    run_steps::<sqlx::Sqlite>(&mut tx, ws, steps).await?;
    tx.commit().await
}

crate::store::webhooks::webhook_rows!(SqliteWebhooks);

#[cfg(test)]
impl super::SqliteStore {
    /// The webhook rows' file.
    pub(crate) fn webhooks(&self) -> &SqliteWebhooks {
        &self.webhooks
    }
}
