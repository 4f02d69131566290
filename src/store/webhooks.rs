//! Webhook endpoints' rows (`actors::store::WebhookRows`), written once over
//! the adapters' statements: each adapter supplies its SQL and a transaction to run a
//! list of steps in (PostgreSQL's fenced by the workspace's writer lease).

use super::sql::{Sql, Value};
use actors::store::{Flush, StoreError, StoreResult, WebhookWrite};
use uuid::Uuid;

/// The statements of webhook rows. Each binds the workspace id (as stored) first, then
/// the texts and the number its doc names.
pub(crate) struct WebhookStatements {
    /// `(id, body)` of a workspace's endpoints, in id order.
    pub list_endpoints: &'static str,
    /// Every workspace with an endpoint (binds nothing).
    pub workspaces: &'static str,
    /// Creates or replaces an endpoint: id, body.
    pub put_endpoint: &'static str,
    /// Removes an endpoint: id.
    pub remove_endpoint: &'static str,
    /// Removes an endpoint's attempts: id.
    pub remove_attempts: &'static str,
    /// Records an attempt after the endpoint's newest: endpoint id, body.
    pub add_attempt: &'static str,
    /// Keeps an endpoint's newest attempts: endpoint id, how many.
    pub trim_attempts: &'static str,
    /// An endpoint's newest attempts' bodies, newest first: endpoint id, how many.
    pub list_attempts: &'static str,
}

/// The webhook rows' statements, in SQL both dialects take (see `super::reads`).
pub(crate) const STATEMENTS: WebhookStatements = WebhookStatements {
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

/// One statement of a write: its SQL, the texts bound after the workspace id, and a
/// number bound after them.
pub(crate) struct Step<'a> {
    pub sql: &'static str,
    pub texts: Vec<&'a str>,
    pub number: Option<i64>,
}

/// The statements [`WebhookRows::write`](actors::store::WebhookRows::write) runs,
/// in order, for `writes`.
pub(crate) fn steps<'a>(sql: &WebhookStatements, writes: &'a [WebhookWrite]) -> Vec<Step<'a>> {
    let mut out = Vec::new();
    for w in writes {
        match w {
            WebhookWrite::Put { id, body } => out.push(Step {
                sql: sql.put_endpoint,
                texts: vec![id, body],
                number: None,
            }),
            WebhookWrite::Remove { id } => {
                for statement in [sql.remove_attempts, sql.remove_endpoint] {
                    out.push(Step {
                        sql: statement,
                        texts: vec![id],
                        number: None,
                    });
                }
            }
            WebhookWrite::Attempt {
                endpoint,
                body,
                keep,
            } => {
                out.push(Step {
                    sql: sql.add_attempt,
                    texts: vec![endpoint, body],
                    number: None,
                });
                out.push(Step {
                    sql: sql.trim_attempts,
                    texts: vec![endpoint],
                    number: Some(i64::from(*keep)),
                });
            }
        }
    }
    out
}

/// A step's values: the workspace id, its texts, then its number.
fn values<'a>(ws: &'a str, step: &'a Step<'a>) -> Vec<Value<'a>> {
    std::iter::once(Value::Text(ws))
        .chain(step.texts.iter().map(|t| Value::Text(t)))
        .chain(step.number.map(Value::Number))
        .collect()
}

/// Runs `steps` in order on `conn` (a transaction's connection).
pub(crate) async fn run_steps<DB: Sql>(
    conn: &mut DB::Connection,
    ws: &str,
    steps: &[Step<'_>],
) -> Result<(), sqlx::Error> {
    for step in steps {
        DB::execute(&mut *conn, step.sql, &values(ws, step)).await?;
    }
    Ok(())
}

/// Reads text rows of one or two columns: `(first, second)`, the second empty when
/// the statement has one column.
pub(crate) async fn read_texts<DB: Sql>(
    pool: &sqlx::Pool<DB>,
    sql: &'static str,
    texts: &[&str],
    number: Option<i64>,
) -> Result<Vec<(String, String)>, sqlx::Error> {
    let values: Vec<Value<'_>> = texts
        .iter()
        .map(|t| Value::Text(t))
        .chain(number.map(Value::Number))
        .collect();
    let rows = DB::rows(pool, sql, &values).await?;
    rows.iter()
        .map(|row| {
            let first = DB::text(row, 0)?.unwrap_or_default();
            let second = if DB::width(row) > 1 {
                DB::text(row, 1)?.unwrap_or_default()
            } else {
                String::new()
            };
            Ok((first, second))
        })
        .collect()
}

/// Workspace ids as stored, read back.
pub(crate) fn workspace_ids(rows: Vec<(String, String)>) -> StoreResult<Vec<Uuid>> {
    rows.into_iter()
        .map(|(ws, _)| {
            Uuid::parse_str(&ws)
                .map_err(|_| StoreError::Corrupt(format!("webhook row of workspace {ws:?}")))
        })
        .collect()
}

/// What an adapter gives the webhook rows: where reads run, how it judges a failed
/// statement, and the transaction its writes run in.
#[async_trait::async_trait]
pub(crate) trait WebhookTables {
    type Db: Sql;
    fn readers(&self) -> &sqlx::Pool<Self::Db>;
    /// A failed statement of the webhook rows, as the adapter's database judges it.
    fn failed(e: sqlx::Error) -> StoreError {
        super::sql::failed::<Self::Db>("webhook endpoints")(e)
    }
    /// Runs `steps` (bound after the workspace's id as stored) in one transaction: on a
    /// shared store fenced by the workspace's writer lease, as a commit is, and flushed
    /// as `flush` says.
    async fn webhook_commit(
        &self,
        workspace: Uuid,
        steps: &[Step<'_>],
        flush: Flush,
    ) -> StoreResult<()>;
}

/// [`WebhookRows`](actors::store::WebhookRows) for an adapter that implements
/// [`WebhookTables`].
macro_rules! webhook_rows {
    ($adapter:ty) => {
        #[async_trait::async_trait]
        impl actors::store::WebhookRows for $adapter {
            async fn endpoints(
                &self,
                workspace: uuid::Uuid,
            ) -> actors::store::StoreResult<Vec<(String, String)>> {
                use crate::store::webhooks::{WebhookTables, STATEMENTS};
                let (ws, sql) = (workspace.to_string(), STATEMENTS.list_endpoints);
                crate::store::webhooks::read_texts(self.readers(), sql, &[&ws], None)
                    .await
                    .map_err(Self::failed)
            }

            async fn workspaces(&self) -> actors::store::StoreResult<Vec<uuid::Uuid>> {
                use crate::store::webhooks::{WebhookTables, STATEMENTS};
                let sql = STATEMENTS.workspaces;
                let rows = crate::store::webhooks::read_texts(self.readers(), sql, &[], None)
                    .await
                    .map_err(Self::failed)?;
                crate::store::webhooks::workspace_ids(rows)
            }

            async fn apply(
                &self,
                workspace: uuid::Uuid,
                writes: &[actors::store::WebhookWrite],
                flush: actors::store::Flush,
            ) -> actors::store::StoreResult<()> {
                use crate::store::webhooks::{steps, WebhookTables, STATEMENTS};
                let steps = steps(&STATEMENTS, writes);
                self.webhook_commit(workspace, &steps, flush).await
            }

            async fn attempts(
                &self,
                workspace: uuid::Uuid,
                endpoint: &str,
                limit: u32,
            ) -> actors::store::StoreResult<Vec<String>> {
                use crate::store::webhooks::{WebhookTables, STATEMENTS};
                let (ws, sql) = (workspace.to_string(), STATEMENTS.list_attempts);
                let n = Some(i64::from(limit));
                let rows =
                    crate::store::webhooks::read_texts(self.readers(), sql, &[&ws, endpoint], n)
                        .await
                        .map_err(Self::failed)?;
                Ok(rows.into_iter().map(|(body, _)| body).collect())
            }
        }
    };
}
pub(crate) use webhook_rows;
