//! A SQLite file's life beside its connections: recovering the write-ahead log a
//! crash left before the pools open ([`recover`]), the readers' and the checkpointer's
//! pools ([`read_pools`]), the background checkpoints ([`checkpoints`], see the
//! module doc of [`super`]) and closing it all, the writer last ([`close_pools`]).

use crate::store::ACQUIRE_TIMEOUT;
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool, SqlitePoolOptions};
use std::path::Path;

/// Recovers and folds in a write-ahead log left by a process that did not close the
/// file at `path` (a crash, or an interrupted import), and makes the file and the
/// journals SQLite makes beside it private. That can take far longer than a pooled
/// connection may wait, so it happens once, on a connection of its own, without a
/// deadline, before the pools open.
pub(super) async fn recover(base: &SqliteConnectOptions, path: &Path) -> anyhow::Result<()> {
    use sqlx::{ConnectOptions, Connection};
    let mut conn = base
        .clone()
        .connect()
        .await
        .map_err(|e| anyhow::anyhow!("cannot open SQLite store {}: {e}", path.display()))?;
    let started = std::time::Instant::now();
    sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
        .execute(&mut conn)
        .await
        .map_err(|e| anyhow::anyhow!("recovering SQLite store {}: {e}", path.display()))?;
    conn.close().await.ok();
    // Private to this user, with the journals SQLite makes beside it (it gives them the
    // database file's mode), also in a data dir made before the rule.
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let file = std::path::PathBuf::from(format!("{}{suffix}", path.display()));
        match actors::private_files::restrict(&file, actors::private_files::FILE_MODE) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                anyhow::bail!("cannot make {} private: {e}", file.display())
            }
            _ => {}
        }
    }
    if started.elapsed() > std::time::Duration::from_millis(100) {
        tracing::info!(
            file = %path.display(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "folded the write-ahead log the store was left with into the database"
        );
    }
    Ok(())
}

/// The pools beside a file's writer: `readers` connections that only read, and the
/// background checkpointer's (see the module doc).
pub(super) async fn read_pools(
    base: &SqliteConnectOptions,
    readers: u32,
    path: &Path,
) -> anyhow::Result<(SqlitePool, SqlitePool)> {
    let cannot = |e| anyhow::anyhow!("cannot open SQLite store {}: {e}", path.display());
    let reading = SqlitePoolOptions::new()
        .max_connections(readers)
        .acquire_timeout(ACQUIRE_TIMEOUT)
        .connect_with(base.clone().create_if_missing(false))
        .await
        .map_err(cannot)?;
    let checkpointer = SqlitePoolOptions::new()
        .max_connections(1)
        .connect_with(base.clone().create_if_missing(false))
        .await
        .map_err(cannot)?;
    Ok((reading, checkpointer))
}

/// Closes a file's pools, its writer last, once it has folded the WAL into the file.
pub(super) async fn close_pools(
    writer: &SqlitePool,
    readers: &SqlitePool,
    checkpointer: &SqlitePool,
    file: &str,
) {
    checkpointer.close().await;
    readers.close().await;
    if let Err(e) = sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
        .execute(writer)
        .await
    {
        tracing::warn!("checkpoint of {file} on close failed: {e}");
    }
    writer.close().await;
}

/// Folds the WAL into the database file every `every` until the pool closes.
/// A failure is logged once until a checkpoint succeeds again; commits do not depend on
/// checkpoints (the WAL just grows meanwhile).
pub(super) async fn checkpoints(pool: SqlitePool, every: std::time::Duration) {
    let mut failing = false;
    loop {
        tokio::time::sleep(every).await;
        if pool.is_closed() {
            return;
        }
        let started = std::time::Instant::now();
        match sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
            .execute(&pool)
            .await
        {
            Ok(_) => {
                failing = false;
                let elapsed = started.elapsed();
                if elapsed > std::time::Duration::from_secs(1) {
                    // Off every commit's path, but a sign of a disk behind on its writes.
                    tracing::debug!(
                        elapsed_ms = elapsed.as_millis() as u64,
                        "slow background checkpoint"
                    );
                }
            }
            Err(sqlx::Error::PoolClosed) => return,
            Err(e) => {
                if !failing {
                    tracing::warn!("background checkpoint failed: {e}");
                }
                failing = true;
            }
        }
    }
}
