//! Webhook rows' statements on PostgreSQL (`crate::store::webhooks`).

use super::{err, fenced_tx, PostgresStore};
use crate::store::webhooks::{run_steps, Step, WebhookTables};
use actors::store::{Flush, StoreResult};
use uuid::Uuid;

#[async_trait::async_trait]
impl WebhookTables for PostgresStore {
    type Db = sqlx::Postgres;

    fn readers(&self) -> &sqlx::Pool<sqlx::Postgres> {
        &self.pool
    }

    async fn webhook_commit(&self, ws: Uuid, steps: &[Step<'_>], flush: Flush) -> StoreResult<()> {
        let fail = err("writing webhook endpoints");
        let mut tx = fenced_tx(&self.pool, self.fences.as_deref(), ws, &fail).await?;
        if flush == Flush::Unsynced {
            sqlx::query("SET LOCAL synchronous_commit = off")
                .execute(&mut *tx)
                .await
                .map_err(&fail)?;
        }
        run_steps::<sqlx::Postgres>(&mut tx, &ws.to_string(), steps)
            .await
            .map_err(Self::failed)?;
        tx.commit().await.map_err(Self::failed)
    }
}

crate::store::webhooks::webhook_rows!(PostgresStore);
