//! Webhook rows' statements on PostgreSQL (`crate::store::webhooks`).

use super::{err, fenced_tx, PostgresStore};
use crate::store::webhooks::{run_steps, Step, WebhookStatements, WebhookTables};
use actors::store::{Flush, StoreResult};
use uuid::Uuid;

#[async_trait::async_trait]
impl WebhookTables for PostgresStore {
    type Db = sqlx::Postgres;

    const STATEMENTS: WebhookStatements = WebhookStatements {
        list_endpoints: "SELECT id, body FROM webhook_endpoints WHERE workspace_id = $1 \
                         ORDER BY id",
        workspaces: "SELECT DISTINCT workspace_id FROM webhook_endpoints",
        put_endpoint: "INSERT INTO webhook_endpoints (workspace_id, id, body) \
                       VALUES ($1, $2, $3) \
                       ON CONFLICT (workspace_id, id) DO UPDATE SET body = EXCLUDED.body",
        remove_endpoint: "DELETE FROM webhook_endpoints WHERE workspace_id = $1 AND id = $2",
        remove_attempts: "DELETE FROM webhook_attempts \
                          WHERE workspace_id = $1 AND endpoint_id = $2",
        add_attempt: "INSERT INTO webhook_attempts (workspace_id, endpoint_id, seq, body) \
                      SELECT $1, $2, coalesce(max(seq), 0) + 1, $3 FROM webhook_attempts \
                      WHERE workspace_id = $1 AND endpoint_id = $2",
        trim_attempts: "DELETE FROM webhook_attempts \
                        WHERE workspace_id = $1 AND endpoint_id = $2 AND seq <= \
                        (SELECT max(seq) FROM webhook_attempts \
                         WHERE workspace_id = $1 AND endpoint_id = $2) - $3",
        list_attempts: "SELECT body FROM webhook_attempts \
                        WHERE workspace_id = $1 AND endpoint_id = $2 \
                        ORDER BY seq DESC LIMIT $3",
    };

    fn readers(&self) -> &sqlx::Pool<sqlx::Postgres> {
        &self.pool
    }

    async fn webhook_commit(
        &self,
        workspace: Uuid,
        steps: &[Step<'_>],
        flush: Flush,
    ) -> StoreResult<()> {
        let ws = workspace.to_string();
        let fail = err("writing webhook endpoints");
        let mut tx = fenced_tx(&self.pool, self.fences.as_deref(), workspace, &fail).await?;
        if flush == Flush::Unsynced {
            sqlx::query("SET LOCAL synchronous_commit = off")
                .execute(&mut *tx)
                .await
                .map_err(&fail)?;
        }
        run_steps::<sqlx::Postgres>(&mut tx, &ws, steps)
            .await
            .map_err(Self::failed)?;
        tx.commit().await.map_err(Self::failed)
    }
}

crate::store::webhooks::webhook_rows!(PostgresStore, sqlx::Postgres);
