//! Retention's steps on SQLite (`crate::store::prune_changes`).

use super::{err, SqliteStore};
use crate::store::commit::Statement;
use actors::store::StoreError;
use async_trait::async_trait;

impl SqliteStore {
    /// Runs one of retention's statements on the writer; the rows it affected.
    async fn write(
        &self,
        statement: Statement<'_, sqlx::Sqlite>,
        context: &'static str,
    ) -> Result<u64, StoreError> {
        Ok(statement
            .execute(&self.writer)
            .await
            .map_err(err(context))?
            .rows_affected())
    }
}

/// Retention's steps (`crate::store::prune_changes`): deletes on the one writer, each brief.
#[async_trait]
impl crate::store::LogPruning for SqliteStore {
    async fn delete_tombstones_before(&self, ws: &str, before_ms: i64) -> Result<u64, StoreError> {
        let statement =
            sqlx::query("DELETE FROM tombstones WHERE workspace_id = ?1 AND deleted_at < ?2")
                .bind(ws)
                .bind(before_ms);
        self.write(statement, "pruning tombstones").await
    }

    async fn newest_position_before(
        &self,
        ws: &str,
        before_ms: i64,
    ) -> Result<Option<u64>, StoreError> {
        let through: Option<i64> = sqlx::query_scalar(
            "SELECT max(position) FROM change_log WHERE workspace_id = ?1 AND committed_at < ?2",
        )
        .bind(ws)
        .bind(before_ms)
        .fetch_one(&self.readers)
        .await
        .map_err(err("pruning the change log"))?;
        Ok(through.map(|t| t as u64))
    }

    async fn pruned_through(&self, ws: &str) -> Result<u64, StoreError> {
        SqliteStore::pruned_through(self, ws)
            .await
            .map_err(err("pruning the change log"))
    }

    async fn mark_pruned_through(&self, ws: &str, through: u64) -> Result<(), StoreError> {
        let statement = sqlx::query(
            "UPDATE commit_positions SET pruned_through = max(pruned_through, ?2) \
             WHERE workspace_id = ?1",
        )
        .bind(ws)
        .bind(through as i64);
        self.write(statement, "pruning the change log").await?;
        Ok(())
    }

    async fn delete_parts_through(
        &self,
        ws: &str,
        through: u64,
        limit: usize,
    ) -> Result<u64, StoreError> {
        let statement = sqlx::query(
            "DELETE FROM change_log WHERE rowid IN (SELECT rowid FROM change_log \
             WHERE workspace_id = ?1 AND position <= ?2 LIMIT ?3)",
        )
        .bind(ws)
        .bind(through as i64)
        .bind(limit as i64);
        self.write(statement, "pruning the change log").await
    }

    async fn log_size(&self, ws: &str) -> Result<(u64, u64), StoreError> {
        let (parts, bytes): (i64, i64) = sqlx::query_as(
            "SELECT count(*), coalesce(sum(length(entries)), 0) FROM change_log \
             WHERE workspace_id = ?1",
        )
        .bind(ws)
        .fetch_one(&self.readers)
        .await
        .map_err(err("sizing the change log"))?;
        Ok((parts as u64, bytes as u64))
    }
}
