//! Retention's steps on PostgreSQL (`crate::store::prune_changes`).

use super::{err, fenced_tx, workspace_id, PostgresStore};
use crate::store::commit::Statement;
use actors::store::StoreError;
use async_trait::async_trait;

impl PostgresStore {
    /// Runs one of retention's statements in a transaction of its own, fenced as a
    /// commit is (see [`fenced_tx`]); the rows it affected.
    async fn fenced_execute(
        &self,
        ws: &str,
        context: &'static str,
        statement: Statement<'_, sqlx::Postgres>,
    ) -> Result<u64, StoreError> {
        let fail = err(context);
        let mut tx =
            fenced_tx(&self.pool, self.fences.as_deref(), workspace_id(ws)?, &fail).await?;
        let affected = statement
            .execute(&mut *tx)
            .await
            .map_err(&fail)?
            .rows_affected();
        tx.commit().await.map_err(&fail)?;
        Ok(affected)
    }
}

/// Retention's steps (`crate::store::prune_changes`): each delete its own transaction.
#[async_trait]
impl crate::store::LogPruning for PostgresStore {
    async fn delete_tombstones_before(&self, ws: &str, before_ms: i64) -> Result<u64, StoreError> {
        let statement =
            sqlx::query("DELETE FROM tombstones WHERE workspace_id = $1 AND deleted_at < $2")
                .bind(ws)
                .bind(before_ms);
        self.fenced_execute(ws, "pruning tombstones", statement)
            .await
    }

    async fn newest_position_before(
        &self,
        ws: &str,
        before_ms: i64,
    ) -> Result<Option<u64>, StoreError> {
        let through: Option<i64> = sqlx::query_scalar(
            "SELECT max(position) FROM change_log WHERE workspace_id = $1 AND committed_at < $2",
        )
        .bind(ws)
        .bind(before_ms)
        .fetch_one(&self.pool)
        .await
        .map_err(err("pruning the change log"))?;
        Ok(through.map(|t| t as u64))
    }

    async fn pruned_through(&self, ws: &str) -> Result<u64, StoreError> {
        PostgresStore::pruned_through(self, ws)
            .await
            .map_err(err("pruning the change log"))
    }

    async fn mark_pruned_through(&self, ws: &str, through: u64) -> Result<(), StoreError> {
        let statement = sqlx::query(
            "UPDATE commit_positions SET pruned_through = GREATEST(pruned_through, $2) \
             WHERE workspace_id = $1",
        )
        .bind(ws)
        .bind(through as i64);
        self.fenced_execute(ws, "pruning the change log", statement)
            .await?;
        Ok(())
    }

    async fn delete_parts_through(
        &self,
        ws: &str,
        through: u64,
        limit: usize,
    ) -> Result<u64, StoreError> {
        let statement = sqlx::query(
            "DELETE FROM change_log WHERE ctid IN (SELECT ctid FROM change_log \
             WHERE workspace_id = $1 AND position <= $2 LIMIT $3)",
        )
        .bind(ws)
        .bind(through as i64)
        .bind(limit as i64);
        self.fenced_execute(ws, "pruning the change log", statement)
            .await
    }

    async fn log_size(&self, ws: &str) -> Result<(u64, u64), StoreError> {
        let (parts, bytes): (i64, i64) = sqlx::query_as(
            "SELECT count(*), coalesce(sum(octet_length(entries)), 0) FROM change_log \
             WHERE workspace_id = $1",
        )
        .bind(ws)
        .fetch_one(&self.pool)
        .await
        .map_err(err("sizing the change log"))?;
        Ok((parts as u64, bytes as u64))
    }
}
