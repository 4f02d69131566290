//! Webhook rows' statements on SQLite (`crate::store::webhooks`).

use super::{err, SqliteStore, Unsynced};
use crate::store::webhooks::{run_steps, Step, WebhookStatements, WebhookTables};
use actors::store::{StoreError, StoreResult};
use uuid::Uuid;

#[async_trait::async_trait]
impl WebhookTables for SqliteStore {
    type Db = sqlx::Sqlite;

    const STATEMENTS: WebhookStatements = WebhookStatements {
        list_endpoints: "SELECT id, body FROM webhook_endpoints WHERE workspace_id = ?1 \
                         ORDER BY id",
        workspaces: "SELECT DISTINCT workspace_id FROM webhook_endpoints",
        put_endpoint: "INSERT INTO webhook_endpoints (workspace_id, id, body) \
                       VALUES (?1, ?2, ?3) \
                       ON CONFLICT (workspace_id, id) DO UPDATE SET body = excluded.body",
        remove_endpoint: "DELETE FROM webhook_endpoints WHERE workspace_id = ?1 AND id = ?2",
        remove_attempts: "DELETE FROM webhook_attempts \
                          WHERE workspace_id = ?1 AND endpoint_id = ?2",
        add_attempt: "INSERT INTO webhook_attempts (workspace_id, endpoint_id, seq, body) \
                      SELECT ?1, ?2, coalesce(max(seq), 0) + 1, ?3 FROM webhook_attempts \
                      WHERE workspace_id = ?1 AND endpoint_id = ?2",
        trim_attempts: "DELETE FROM webhook_attempts \
                        WHERE workspace_id = ?1 AND endpoint_id = ?2 AND seq <= \
                        (SELECT max(seq) FROM webhook_attempts \
                         WHERE workspace_id = ?1 AND endpoint_id = ?2) - ?3",
        list_attempts: "SELECT body FROM webhook_attempts \
                        WHERE workspace_id = ?1 AND endpoint_id = ?2 \
                        ORDER BY seq DESC LIMIT ?3",
    };

    fn readers(&self) -> &sqlx::Pool<sqlx::Sqlite> {
        &self.readers
    }

    fn failed(e: sqlx::Error) -> StoreError {
        err("webhook endpoints")(e)
    }

    async fn webhook_commit(
        &self,
        _workspace: Uuid,
        ws: &str,
        steps: &[Step<'_>],
        synced: bool,
    ) -> StoreResult<()> {
        // One writer: SQLite is never shared by several servers, so nothing to fence.
        let mut conn = self.writer.acquire().await.map_err(Self::failed)?;
        // With a rollback journal (a store opened for an import alone), a commit that
        // skips its sync risks the file itself: every one syncs.
        if synced || self.import_fold_every.is_none() {
            return run_in_tx(&mut conn, ws, steps).await.map_err(Self::failed);
        }
        let mut relaxed = Unsynced::relax(conn).await.map_err(Self::failed)?;
        let outcome = run_in_tx(relaxed.conn(), ws, steps).await;
        relaxed.restore().await.map_err(Self::failed)?;
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

crate::store::webhooks::webhook_rows!(SqliteStore, sqlx::Sqlite);
