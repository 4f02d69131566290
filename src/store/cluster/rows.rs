//! The cluster's statements on PostgreSQL (`Rows`), and the node's own session, on
//! which its row is taken and renewed. Apart from `PgCluster`, which only carries each
//! call to the node's runtime, so that the SQL reads on its own.

use crate::cluster::budgets::KeyWindow;
use crate::cluster::port::{HoldingRow, LeaseRow, Me, NodeRow, NodeStatus, PortError, Since};
use anyhow::Context;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool};
use sqlx::{ConnectOptions, Connection};
use std::time::{Duration, Instant};
use uuid::Uuid;

/// Whether node row `n` is alive: its lease holds and its session is there.
const ALIVE: &str = "(n.lease_until > now() AND EXISTS (SELECT 1 FROM pg_stat_activity a \
     WHERE a.pid = n.session_pid AND a.backend_start = n.session_started))";

/// The transaction's id, as stored in `xid` columns.
pub(crate) const XID: &str = "pg_current_xact_id()::text::bigint";

/// Longest a renewal may take before its session is given up for lost.
const RENEW_WITHIN: Duration = Duration::from_secs(2);

/// The statements, on the pool and the node's session.
pub(super) struct Rows {
    pub(super) pool: PgPool,
    pub(super) options: PgConnectOptions,
    /// The session the node's row names, on which it renews.
    pub(super) session: tokio::sync::Mutex<Option<PgConnection>>,
}

/// The node's session, opened when there is none.
async fn session<'s>(
    session: &'s tokio::sync::Mutex<Option<PgConnection>>,
    options: &PgConnectOptions,
) -> Result<tokio::sync::MutexGuard<'s, Option<PgConnection>>, PortError> {
    let mut session = session.lock().await;
    if session.is_none() {
        let conn = tokio::time::timeout(RENEW_WITHIN, open_session(options.clone()))
            .await
            .context("opening the node's session: timed out")?
            .context("opening the node's session")?;
        *session = Some(conn);
    }
    Ok(session)
}

/// A new session. (Boxed, so that the future is `Send` whatever the lifetimes: sqlx's
/// executor for a connection is not general enough for the compiler to prove it of an
/// `async fn` inside the port's.)
fn open_session(
    options: PgConnectOptions,
) -> futures_util::future::BoxFuture<'static, Result<PgConnection, sqlx::Error>> {
    Box::pin(async move { options.connect().await })
}

/// The outcome of a statement on the node's session (bounded by [`RENEW_WITHIN`]): a
/// session that failed or stalled is dropped, for the next call to replace.
fn on_session<T>(
    session: &mut Option<PgConnection>,
    outcome: Result<Result<T, sqlx::Error>, tokio::time::error::Elapsed>,
) -> Result<T, PortError> {
    match outcome {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => {
            *session = None;
            Err(e).context("on the node's session")
        }
        Err(_) => {
            *session = None;
            anyhow::bail!("the node's session did not answer within {RENEW_WITHIN:?}")
        }
    }
}

/// Takes the node's name on its session (see `ClusterStore::take_name`).
/// (Boxed: see [`open_session`].)
fn take_name_on<'a>(
    conn: &'a mut PgConnection,
    me: &'a Me,
    lease_ms: u64,
) -> futures_util::future::BoxFuture<'a, Result<bool, sqlx::Error>> {
    Box::pin(async move {
        let taken: Option<String> = sqlx::query_scalar(&format!(
            "INSERT INTO cluster_nodes AS n (name, advertise_url, incarnation, started_at, \
             lease_until, cert_sha256, secret_sha256, session_pid, session_started, \
             version, renewed_at) \
         SELECT $1, $2, $3, now(), now() + $4 * interval '1 millisecond', $5, $6, \
             pg_backend_pid(), backend_start, $7, now() \
         FROM pg_stat_activity WHERE pid = pg_backend_pid() \
         ON CONFLICT (name) DO UPDATE SET advertise_url = EXCLUDED.advertise_url, \
             incarnation = EXCLUDED.incarnation, started_at = EXCLUDED.started_at, \
             lease_until = EXCLUDED.lease_until, cert_sha256 = EXCLUDED.cert_sha256, \
             secret_sha256 = EXCLUDED.secret_sha256, \
             session_pid = EXCLUDED.session_pid, \
             session_started = EXCLUDED.session_started, \
             version = EXCLUDED.version, renewed_at = EXCLUDED.renewed_at \
         WHERE NOT {ALIVE} OR n.incarnation = $3 OR n.advertise_url = $2 \
         RETURNING incarnation"
        ))
        .bind(&me.name)
        .bind(&me.advertise_url)
        .bind(&me.incarnation)
        .bind(lease_ms as i64)
        .bind(&me.cert_sha256)
        .bind(&me.secret_sha256)
        .bind(crate::VERSION)
        .fetch_optional(conn)
        .await?;
        Ok(taken.is_some())
    })
}

/// Renews the node's row on its session, naming the session afresh (after a lost one,
/// the new one); whether this start still holds the name.
fn renew_on<'a>(
    conn: &'a mut PgConnection,
    me: &'a Me,
    lease_ms: u64,
) -> futures_util::future::BoxFuture<'a, Result<bool, sqlx::Error>> {
    Box::pin(async move {
        let renewed = sqlx::query(
            "UPDATE cluster_nodes SET lease_until = now() + $3 * interval '1 millisecond', \
             renewed_at = now(), session_pid = pg_backend_pid(), \
             session_started = (SELECT backend_start FROM pg_stat_activity \
                                WHERE pid = pg_backend_pid()) \
         WHERE name = $1 AND incarnation = $2",
        )
        .bind(&me.name)
        .bind(&me.incarnation)
        .bind(lease_ms as i64)
        .execute(conn)
        .await?
        .rows_affected();
        Ok(renewed == 1)
    })
}

/// The next horizon and the rows of a horizon read (see the module's docs): every row
/// of the statement carries the horizon, and a statement with no changed row still
/// returns one, of the horizon alone.
fn since<R, T>(rows: Vec<(i64, Option<R>)>, to: impl Fn(R) -> Option<T>) -> Since<T> {
    let next = rows.first().map_or(0, |r| r.0);
    Since {
        rows: rows
            .into_iter()
            .filter_map(|(_, r)| r.and_then(&to))
            .collect(),
        next,
    }
}

/// A horizon read's row of three texts and a number (a lease, a holding), as the left
/// join returns it: all `None` on the row of the horizon alone.
type JoinedTextsAndNumber = (
    i64,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<i64>,
);

/// A row of [`JoinedTextsAndNumber`] that is there: its three texts, and its number (which
/// may be null: a holding that holds no copy).
type TextsAndNumber = (String, String, String, Option<i64>);

fn uuid(s: &str) -> Option<Uuid> {
    Uuid::parse_str(s).ok()
}

fn texts(ids: &[Uuid]) -> Vec<String> {
    ids.iter().map(Uuid::to_string).collect()
}

impl Rows {
    /// A horizon read of three texts and a number (a lease, a holding), each row that
    /// is there as `to` makes it.
    async fn three_texts_and_number_since<T>(
        &self,
        table: &str,
        columns: &str,
        horizon: i64,
        to: impl Fn(TextsAndNumber) -> Option<T>,
    ) -> Result<Since<T>, PortError> {
        let rows: Vec<JoinedTextsAndNumber> = self.read_since(table, columns, horizon).await?;
        let rows = rows
            .into_iter()
            .map(|(x, a, b, c, n)| (x, a.zip(b).zip(c).map(|((a, b), c)| (a, b, c, n))))
            .collect();
        Ok(since(rows, to))
    }

    /// A horizon read (see the module's docs): `columns` of the rows of `table` (as
    /// `t`) that transactions at or past `horizon` wrote, each beside the next horizon;
    /// with no such row, one row of the next horizon alone.
    async fn read_since<R>(
        &self,
        table: &str,
        columns: &str,
        horizon: i64,
    ) -> Result<Vec<R>, PortError>
    where
        R: for<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow> + Send + Unpin,
    {
        Ok(sqlx::query_as(&format!(
            "WITH h AS (SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS x) \
             SELECT h.x, {columns} FROM h LEFT JOIN {table} t ON t.xid >= $1"
        ))
        .bind(horizon)
        .fetch_all(&self.pool)
        .await?)
    }

    async fn session(
        &self,
    ) -> Result<tokio::sync::MutexGuard<'_, Option<PgConnection>>, PortError> {
        session(&self.session, &self.options).await
    }

    pub(super) async fn take_name(&self, me: &Me, lease_ms: u64) -> Result<bool, PortError> {
        let mut session = self.session().await?;
        let conn = session.as_mut().expect("opened");
        let outcome = tokio::time::timeout(RENEW_WITHIN, take_name_on(conn, me, lease_ms)).await;
        let taken = on_session(&mut session, outcome)?;
        drop(session);
        if taken {
            // What earlier starts of the name reported holds no longer.
            sqlx::query("DELETE FROM cluster_holdings WHERE node = $1 AND incarnation <> $2")
                .bind(&me.name)
                .bind(&me.incarnation)
                .execute(&self.pool)
                .await
                .context("dropping an earlier start's holdings")?;
        }
        Ok(taken)
    }

    pub(super) async fn renew(&self, me: &Me, lease_ms: u64) -> Result<bool, PortError> {
        // A session lost since the last renewal (cut, or ended by the server) is found
        // lost by this one, and replaced at once: tried again on a new one.
        let mut last = None;
        for _ in 0..2 {
            let mut session = self.session().await?;
            let conn = session.as_mut().expect("opened");
            let outcome = tokio::time::timeout(RENEW_WITHIN, renew_on(conn, me, lease_ms)).await;
            match on_session(&mut session, outcome) {
                Ok(renewed) => return Ok(renewed),
                Err(e) => last = Some(e),
            }
        }
        Err(last.expect("tried"))
    }

    pub(super) async fn holder_of_name(&self, name: &str) -> Result<Option<String>, PortError> {
        Ok(
            sqlx::query_scalar("SELECT advertise_url FROM cluster_nodes WHERE name = $1")
                .bind(name)
                .fetch_optional(&self.pool)
                .await?,
        )
    }

    pub(super) async fn leave(&self, me: &Me) -> Result<(), PortError> {
        let mut tx = self.pool.begin().await?;
        let gone = sqlx::query("DELETE FROM cluster_nodes WHERE name = $1 AND incarnation = $2")
            .bind(&me.name)
            .bind(&me.incarnation)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        if gone == 1 {
            sqlx::query("DELETE FROM cluster_holdings WHERE node = $1")
                .bind(&me.name)
                .execute(&mut *tx)
                .await?;
        }
        sqlx::query(&format!(
            "UPDATE workspace_leases SET incarnation = '', xid = {XID} \
             WHERE holder = $1 AND incarnation = $2"
        ))
        .bind(&me.name)
        .bind(&me.incarnation)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        // Its session ends too: nothing of this start stays alive.
        if let Some(c) = self.session.lock().await.take() {
            let _ = tokio::time::timeout(RENEW_WITHIN, c.close()).await;
        }
        Ok(())
    }

    pub(super) async fn live_nodes(&self) -> Result<Vec<NodeRow>, PortError> {
        let rows: Vec<(String, String, String, String, String)> = sqlx::query_as(&format!(
            "SELECT name, advertise_url, incarnation, cert_sha256, secret_sha256 \
             FROM cluster_nodes n WHERE {ALIVE} ORDER BY name"
        ))
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .into_iter()
            .map(
                |(name, advertise_url, incarnation, cert_sha256, secret_sha256)| NodeRow {
                    name,
                    advertise_url,
                    incarnation,
                    cert_sha256,
                    secret_sha256,
                },
            )
            .collect())
    }

    pub(super) async fn all_nodes(&self) -> Result<Vec<NodeStatus>, PortError> {
        type Row = (
            String,
            String,
            String,
            String,
            String,
            bool,
            String,
            Option<i64>,
        );
        let rows: Vec<Row> = sqlx::query_as(&format!(
            "SELECT name, advertise_url, incarnation, cert_sha256, secret_sha256, {ALIVE}, \
                    version, (extract(epoch FROM now() - renewed_at) * 1000)::bigint \
                 FROM cluster_nodes n ORDER BY name"
        ))
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .into_iter()
            .map(
                |(
                    name,
                    advertise_url,
                    incarnation,
                    cert_sha256,
                    secret_sha256,
                    alive,
                    version,
                    renewed,
                )| {
                    NodeStatus {
                        row: NodeRow {
                            name,
                            advertise_url,
                            incarnation,
                            cert_sha256,
                            secret_sha256,
                        },
                        alive,
                        version: Some(version).filter(|v| !v.is_empty()),
                        renewed_ms_ago: renewed.map(|ms| ms.max(0) as u64),
                    }
                },
            )
            .collect())
    }

    pub(super) async fn workspace_ids(&self) -> Result<Vec<Uuid>, PortError> {
        let rows: Vec<String> = sqlx::query_scalar("SELECT workspace_id FROM workspaces")
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.iter().filter_map(|id| uuid(id)).collect())
    }

    pub(super) async fn existing(&self, ids: &[Uuid]) -> Result<Vec<Uuid>, PortError> {
        let rows: Vec<String> =
            sqlx::query_scalar("SELECT workspace_id FROM workspaces WHERE workspace_id = ANY($1)")
                .bind(texts(ids))
                .fetch_all(&self.pool)
                .await?;
        Ok(rows.iter().filter_map(|id| uuid(id)).collect())
    }

    pub(super) async fn positions_of(&self, ids: &[Uuid]) -> Result<Vec<(Uuid, u64)>, PortError> {
        let rows: Vec<(String, i64)> = sqlx::query_as(
            "SELECT workspace_id, position FROM commit_positions WHERE workspace_id = ANY($1)",
        )
        .bind(texts(ids))
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .into_iter()
            .filter_map(|(w, p)| Some((uuid(&w)?, p as u64)))
            .collect())
    }

    pub(super) async fn positions_since(
        &self,
        horizon: i64,
    ) -> Result<Since<(Uuid, u64)>, PortError> {
        let rows: Vec<(i64, Option<String>, Option<i64>)> = self
            .read_since("commit_positions", "t.workspace_id, t.position", horizon)
            .await?;
        let rows = rows.into_iter().map(|(x, w, p)| (x, w.zip(p))).collect();
        Ok(since(rows, |(w, p)| Some((uuid(&w)?, p as u64))))
    }

    pub(super) async fn leases_since(&self, horizon: i64) -> Result<Since<LeaseRow>, PortError> {
        let columns = "t.workspace_id, t.holder, t.incarnation, t.epoch";
        self.three_texts_and_number_since("workspace_leases", columns, horizon, |row| {
            let (w, holder, incarnation, epoch) = row;
            Some(LeaseRow {
                workspace: uuid(&w)?,
                holder,
                incarnation,
                epoch: epoch? as u64,
            })
        })
        .await
    }

    pub(super) async fn take(
        &self,
        me: &Me,
        workspaces: &[Uuid],
    ) -> Result<(Vec<(Uuid, u64)>, Instant), PortError> {
        let began = Instant::now();
        let ids = texts(workspaces);
        let mut tx = self.pool.begin().await?;
        // Those this start holds already.
        let mut held: Vec<(String, i64)> = sqlx::query_as(
            "SELECT workspace_id, epoch FROM workspace_leases \
             WHERE workspace_id = ANY($1) AND holder = $2 AND incarnation = $3",
        )
        .bind(&ids)
        .bind(&me.name)
        .bind(&me.incarnation)
        .fetch_all(&mut *tx)
        .await?;
        // The free ones, locked; one a commit still holds is skipped (its writer froze
        // mid-commit: PostgreSQL ends that transaction within seconds).
        let free: Vec<String> = sqlx::query_scalar(&format!(
            "SELECT l.workspace_id FROM workspace_leases l \
             WHERE l.workspace_id = ANY($1) AND NOT (l.holder = $2 AND l.incarnation = $3) \
             AND NOT EXISTS (SELECT 1 FROM cluster_nodes n \
                             WHERE n.name = l.holder AND n.incarnation = l.incarnation AND {ALIVE}) \
             FOR UPDATE SKIP LOCKED"
        ))
        .bind(&ids)
        .bind(&me.name)
        .bind(&me.incarnation)
        .fetch_all(&mut *tx)
        .await?;
        let taken: Vec<(String, i64)> = sqlx::query_as(&format!(
            "UPDATE workspace_leases SET holder = $2, incarnation = $3, epoch = epoch + 1, \
             xid = {XID} WHERE workspace_id = ANY($1) RETURNING workspace_id, epoch"
        ))
        .bind(&free)
        .bind(&me.name)
        .bind(&me.incarnation)
        .fetch_all(&mut *tx)
        .await?;
        // Workspaces that never had a writer (new ones) start at epoch 1.
        let new: Vec<(String, i64)> = sqlx::query_as(&format!(
            "INSERT INTO workspace_leases (workspace_id, holder, incarnation, epoch, xid) \
             SELECT w, $2, $3, 1, {XID} FROM UNNEST($1::text[]) AS w \
             ON CONFLICT (workspace_id) DO NOTHING RETURNING workspace_id, epoch"
        ))
        .bind(&ids)
        .bind(&me.name)
        .bind(&me.incarnation)
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        held.extend(taken);
        held.extend(new);
        Ok((
            held.into_iter()
                .filter_map(|(w, e)| Some((uuid(&w)?, e as u64)))
                .collect(),
            began,
        ))
    }

    pub(super) async fn release(
        &self,
        me: &Me,
        workspaces: &[Uuid],
    ) -> Result<Vec<Uuid>, PortError> {
        let released: Vec<String> = sqlx::query_scalar(&format!(
            "UPDATE workspace_leases SET incarnation = '', xid = {XID} \
             WHERE workspace_id = ANY($1) AND holder = $2 AND incarnation = $3 \
             RETURNING workspace_id"
        ))
        .bind(texts(workspaces))
        .bind(&me.name)
        .bind(&me.incarnation)
        .fetch_all(&self.pool)
        .await?;
        Ok(released.iter().filter_map(|w| uuid(w)).collect())
    }

    pub(super) async fn release_all(&self, me: &Me) -> Result<Vec<Uuid>, PortError> {
        let released: Vec<String> = sqlx::query_scalar(&format!(
            "UPDATE workspace_leases SET incarnation = '', xid = {XID} \
             WHERE holder = $1 AND incarnation = $2 RETURNING workspace_id"
        ))
        .bind(&me.name)
        .bind(&me.incarnation)
        .fetch_all(&self.pool)
        .await?;
        Ok(released.iter().filter_map(|w| uuid(w)).collect())
    }

    pub(super) async fn report(
        &self,
        me: &Me,
        changes: &[(Uuid, Option<u64>)],
    ) -> Result<(), PortError> {
        if changes.is_empty() {
            return Ok(());
        }
        let (ids, positions): (Vec<String>, Vec<Option<i64>>) = changes
            .iter()
            .map(|(w, p)| {
                (
                    w.to_string(),
                    p.map(|p| i64::try_from(p).unwrap_or(i64::MAX)),
                )
            })
            .unzip();
        sqlx::query(&format!(
            "INSERT INTO cluster_holdings (workspace_id, node, incarnation, position, xid) \
             SELECT w, $1, $2, p, {XID} FROM UNNEST($3::text[], $4::bigint[]) AS u(w, p) \
             ON CONFLICT (workspace_id, node) DO UPDATE SET incarnation = EXCLUDED.incarnation, \
                 position = EXCLUDED.position, xid = EXCLUDED.xid"
        ))
        .bind(&me.name)
        .bind(&me.incarnation)
        .bind(&ids)
        .bind(&positions)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    pub(super) async fn holdings_since(
        &self,
        horizon: i64,
    ) -> Result<Since<HoldingRow>, PortError> {
        let columns = "t.workspace_id, t.node, t.incarnation, t.position";
        self.three_texts_and_number_since("cluster_holdings", columns, horizon, |row| {
            let (w, node, incarnation, position) = row;
            Some(HoldingRow {
                workspace: uuid(&w)?,
                node,
                incarnation,
                position: position.and_then(|p| u64::try_from(p).ok()),
            })
        })
        .await
    }

    pub(super) async fn drop_holdings(&self, me: &Me) -> Result<(), PortError> {
        sqlx::query(&format!(
            "UPDATE cluster_holdings SET position = NULL, xid = {XID} \
             WHERE node = $1 AND position IS NOT NULL"
        ))
        .bind(&me.name)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    pub(super) async fn lags(&self) -> Result<Vec<(Uuid, String, u64)>, PortError> {
        // Commit times are the committing node's milliseconds: a lag below 0, which only
        // clock skew makes, shows as 0.
        let rows: Vec<(String, String, i64)> = sqlx::query_as(&format!(
            "SELECT h.workspace_id, h.node, \
                    COALESCE((SELECT (extract(epoch FROM now()) * 1000)::bigint - min(l.committed_at) \
                              FROM change_log l \
                              WHERE l.workspace_id = h.workspace_id AND l.position > h.position), 0) \
             FROM cluster_holdings h JOIN cluster_nodes n \
               ON n.name = h.node AND n.incarnation = h.incarnation \
             WHERE h.position IS NOT NULL AND {ALIVE} \
             ORDER BY h.workspace_id, h.node"
        ))
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .into_iter()
            .filter_map(|(w, node, lag)| Some((uuid(&w)?, node, u64::try_from(lag.max(0)).ok()?)))
            .collect())
    }

    pub(super) async fn publish_key(
        &self,
        me: &Me,
        key_id: &str,
        public_key: &[u8],
    ) -> Result<(), PortError> {
        sqlx::query(
            "INSERT INTO signing_keys (key_id, public_key, node) VALUES ($1, $2, $3) \
             ON CONFLICT (key_id) DO UPDATE SET node = EXCLUDED.node",
        )
        .bind(key_id)
        .bind(public_key)
        .bind(&me.name)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    pub(super) async fn public_keys(&self) -> Result<Vec<Vec<u8>>, PortError> {
        Ok(sqlx::query_scalar("SELECT public_key FROM signing_keys")
            .fetch_all(&self.pool)
            .await?)
    }

    pub(super) async fn write_windows(
        &self,
        me: &Me,
        windows: &[KeyWindow],
        oldest: i64,
    ) -> Result<(), PortError> {
        if !windows.is_empty() {
            let mut workspaces = Vec::with_capacity(windows.len());
            let mut keys = Vec::with_capacity(windows.len());
            let mut newest = Vec::with_capacity(windows.len());
            let mut counts = Vec::with_capacity(windows.len());
            for w in windows {
                workspaces.push(w.workspace.to_string());
                keys.push(w.key.clone());
                newest.push(w.newest);
                counts.push(w.to_bytes());
            }
            sqlx::query(
                "INSERT INTO key_budgets (workspace_id, key_id, node, newest, counts) \
                 SELECT w, k, $1, n, c FROM UNNEST($2::text[], $3::text[], $4::bigint[], $5::bytea[]) AS u(w, k, n, c) \
                 ON CONFLICT (workspace_id, key_id, node) DO UPDATE \
                 SET newest = EXCLUDED.newest, counts = EXCLUDED.counts",
            )
            .bind(&me.name)
            .bind(&workspaces)
            .bind(&keys)
            .bind(&newest)
            .bind(&counts)
            .execute(&self.pool)
            .await?;
        }
        sqlx::query("DELETE FROM key_budgets WHERE newest < $1")
            .bind(oldest)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    pub(super) async fn windows_of(
        &self,
        workspaces: &[Uuid],
        oldest: i64,
    ) -> Result<Vec<KeyWindow>, PortError> {
        let rows: Vec<(String, String, i64, Vec<u8>)> = sqlx::query_as(
            "SELECT workspace_id, key_id, newest, counts FROM key_budgets \
             WHERE workspace_id = ANY($1) AND newest >= $2",
        )
        .bind(texts(workspaces))
        .bind(oldest)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .into_iter()
            .filter_map(|(w, key, newest, bytes)| {
                KeyWindow::from_row(uuid(&w)?, key, newest, &bytes)
            })
            .collect())
    }
}
