//! Retention's statements and steps on SQLite (`crate::store::change_log::prune_changes`).

use super::{err, SqliteStore};
use crate::store::change_log::PruneStatements;
use actors::store::StoreError;
use actors::store::StoreResult;
use async_trait::async_trait;

/// Deletes on the one writer, each brief.
#[async_trait]
impl crate::store::change_log::LogPruning for SqliteStore {
    type Db = sqlx::Sqlite;

    const STATEMENTS: PruneStatements = PruneStatements {
        delete_tombstones_before: "DELETE FROM tombstones \
                                   WHERE workspace_id = ?1 AND deleted_at < ?2",
        newest_position_before: "SELECT max(position) FROM change_log \
                                 WHERE workspace_id = ?1 AND committed_at < ?2",
        mark_pruned_through: "UPDATE commit_positions \
                              SET pruned_through = max(pruned_through, ?2) \
                              WHERE workspace_id = ?1",
        delete_parts_through: "DELETE FROM change_log WHERE rowid IN (SELECT rowid \
                               FROM change_log WHERE workspace_id = ?1 AND position <= ?2 \
                               LIMIT ?3)",
        log_size: "SELECT count(*), coalesce(sum(length(entries)), 0) \
                   FROM change_log WHERE workspace_id = ?1",
    };

    async fn prune_write(&self, ws: &str, sql: &'static str, n: &[i64]) -> StoreResult<u64> {
        let statement = n.iter().fold(sqlx::query(sql).bind(ws), |q, n| q.bind(*n));
        let done = statement.execute(&self.writer).await;
        Ok(done.map_err(err("pruning the change log"))?.rows_affected())
    }

    fn readers(&self) -> &sqlx::Pool<sqlx::Sqlite> {
        &self.readers
    }

    fn failed(e: sqlx::Error) -> StoreError {
        err("pruning the change log")(e)
    }
}
