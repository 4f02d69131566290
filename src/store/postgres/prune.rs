//! Retention's statements and steps on PostgreSQL (`crate::store::change_log::prune_changes`).

use super::{err, fenced_tx, workspace_id, PostgresStore};
use crate::store::change_log::PruneStatements;
use actors::store::StoreError;
use actors::store::StoreResult;
use async_trait::async_trait;

/// Each delete its own transaction, fenced as a commit is (see [`fenced_tx`]).
#[async_trait]
impl crate::store::change_log::LogPruning for PostgresStore {
    type Db = sqlx::Postgres;

    const STATEMENTS: PruneStatements = PruneStatements {
        delete_tombstones_before: "DELETE FROM tombstones \
                                   WHERE workspace_id = $1 AND deleted_at < $2",
        newest_position_before: "SELECT max(position) FROM change_log \
                                 WHERE workspace_id = $1 AND committed_at < $2",
        mark_pruned_through: "UPDATE commit_positions \
                              SET pruned_through = GREATEST(pruned_through, $2) \
                              WHERE workspace_id = $1",
        delete_parts_through: "DELETE FROM change_log WHERE ctid IN (SELECT ctid \
                               FROM change_log WHERE workspace_id = $1 AND position <= $2 \
                               LIMIT $3)",
        log_size: "SELECT count(*), coalesce(sum(octet_length(entries)), 0)::bigint \
                   FROM change_log WHERE workspace_id = $1",
    };

    async fn prune_write(&self, ws: &str, sql: &'static str, n: &[i64]) -> StoreResult<u64> {
        let fail = err("pruning the change log");
        let mut tx =
            fenced_tx(&self.pool, self.fences.as_deref(), workspace_id(ws)?, &fail).await?;
        let statement = n.iter().fold(sqlx::query(sql).bind(ws), |q, n| q.bind(*n));
        let affected = statement.execute(&mut *tx).await.map_err(&fail)?;
        tx.commit().await.map_err(&fail)?;
        Ok(affected.rows_affected())
    }

    fn readers(&self) -> &sqlx::Pool<sqlx::Postgres> {
        &self.pool
    }

    fn failed(e: sqlx::Error) -> StoreError {
        err("pruning the change log")(e)
    }
}
