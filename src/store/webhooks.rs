//! Webhook endpoints' rows (`actors::store::WebhookRows`), written once over
//! the adapters' statements: each adapter supplies its SQL and a transaction to run a
//! list of steps in (PostgreSQL's fenced by the workspace's writer lease).

use actors::store::{StoreError, StoreResult, WebhookWrite};
use uuid::Uuid;

/// The statements of webhook rows in one adapter's SQL. Each binds the workspace id
/// (as stored) first, then the texts and the number its doc names.
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

/// Binds a step onto its query.
pub(crate) fn bind<'q, DB>(
    ws: &'q str,
    step: &'q Step<'q>,
) -> sqlx::query::Query<'q, DB, <DB as sqlx::Database>::Arguments<'q>>
where
    DB: sqlx::Database,
    &'q str: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    i64: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
{
    let q = step
        .texts
        .iter()
        .fold(sqlx::query(step.sql).bind(ws), |q, t| q.bind(*t));
    match step.number {
        Some(n) => q.bind(n),
        None => q,
    }
}

/// Runs `steps` in order on `conn` (a transaction's connection).
pub(crate) async fn run_steps<DB>(
    conn: &mut DB::Connection,
    ws: &str,
    steps: &[Step<'_>],
) -> Result<(), sqlx::Error>
where
    DB: sqlx::Database,
    for<'q> DB::Arguments<'q>: sqlx::IntoArguments<'q, DB>,
    for<'c> &'c mut DB::Connection: sqlx::Executor<'c, Database = DB>,
    for<'q> &'q str: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    i64: for<'q> sqlx::Encode<'q, DB> + sqlx::Type<DB>,
{
    for step in steps {
        bind::<DB>(ws, step).execute(&mut *conn).await?;
    }
    Ok(())
}

/// Reads text rows of one or two columns: `(first, second)`, the second empty when
/// the statement has one column.
pub(crate) async fn read_texts<DB>(
    pool: &sqlx::Pool<DB>,
    sql: &'static str,
    texts: &[&str],
    number: Option<i64>,
) -> Result<Vec<(String, String)>, sqlx::Error>
where
    DB: sqlx::Database,
    for<'q> DB::Arguments<'q>: sqlx::IntoArguments<'q, DB>,
    for<'c> &'c mut DB::Connection: sqlx::Executor<'c, Database = DB>,
    for<'q> &'q str: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    String: for<'r> sqlx::Decode<'r, DB> + sqlx::Type<DB>,
    i64: for<'q> sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    usize: sqlx::ColumnIndex<DB::Row>,
{
    use sqlx::Row;
    let q = texts.iter().fold(sqlx::query(sql), |q, t| q.bind(*t));
    let q = match number {
        Some(n) => q.bind(n),
        None => q,
    };
    let rows = q.fetch_all(pool).await?;
    rows.iter()
        .map(|row| {
            let first: String = row.try_get(0)?;
            let second = if row.len() > 1 {
                row.try_get(1)?
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

/// What an adapter gives the webhook rows: its statements, where reads run, how it
/// judges a failed statement, and the transaction its writes run in.
#[async_trait::async_trait]
pub(crate) trait WebhookTables {
    type Db: sqlx::Database;
    const STATEMENTS: WebhookStatements;
    fn readers(&self) -> &sqlx::Pool<Self::Db>;
    fn failed(e: sqlx::Error) -> StoreError;
    /// Runs `steps` (bound after `ws`, the workspace id as stored) in one transaction:
    /// on a shared store fenced by the workspace's writer lease, as a commit is, and
    /// flushed as `flush` says.
    async fn webhook_commit(
        &self,
        workspace: Uuid,
        ws: &str,
        steps: &[Step<'_>],
        flush: actors::store::Flush,
    ) -> StoreResult<()>;
}

/// [`WebhookRows`](actors::store::WebhookRows) for an adapter that implements
/// [`WebhookTables`] over the database `$db`.
macro_rules! webhook_rows {
    ($adapter:ty, $db:ty) => {
        #[async_trait::async_trait]
        impl actors::store::WebhookRows for $adapter {
            async fn endpoints(
                &self,
                workspace: uuid::Uuid,
            ) -> actors::store::StoreResult<Vec<(String, String)>> {
                use crate::store::webhooks::WebhookTables;
                let (ws, sql) = (workspace.to_string(), Self::STATEMENTS.list_endpoints);
                crate::store::webhooks::read_texts(self.readers(), sql, &[&ws], None)
                    .await
                    .map_err(Self::failed)
            }

            async fn workspaces(&self) -> actors::store::StoreResult<Vec<uuid::Uuid>> {
                use crate::store::webhooks::WebhookTables;
                let sql = Self::STATEMENTS.workspaces;
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
                use crate::store::webhooks::{steps, WebhookTables};
                let ws = workspace.to_string();
                let steps = steps(&Self::STATEMENTS, writes);
                self.webhook_commit(workspace, &ws, &steps, flush).await
            }

            async fn attempts(
                &self,
                workspace: uuid::Uuid,
                endpoint: &str,
                limit: u32,
            ) -> actors::store::StoreResult<Vec<String>> {
                use crate::store::webhooks::WebhookTables;
                let (ws, sql) = (workspace.to_string(), Self::STATEMENTS.list_attempts);
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
