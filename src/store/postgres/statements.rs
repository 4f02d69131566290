//! The commit sequence's statements on PostgreSQL ([`PgStatements`]): arrays of a few
//! thousand rows per statement, a binary `COPY` for a fresh import's rows, and the
//! writer lease's check ([`check_lease`]) that fences a commit.

use super::super::commit::{
    parts_of, sorted_deletes, CommitSql, CommitStatements, Part, Statements,
};
use super::super::fence::Fences;
use super::super::in_key_order;
use super::super::Upsert;
use super::{err, PostgresStore};
use actors::entries::EncodedEntries;
use actors::model::RecordKind;
use actors::store::ChangeSet;
use actors::store::StoreError;
use actors::store::StoreResult;
use actors::tombstones::TombstoneChange;
use async_trait::async_trait;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::time::Duration;
use uuid::Uuid;

/// Rows per upsert statement: large enough that round trips do not matter, small enough
/// that one statement's arrays (a few MB of JSON) stay modest in memory on both sides.
/// 1,000, 5,000 and 20,000 imported 1,000,000 records equally fast (the server's insert
/// work dominates).
const UPSERT_CHUNK: usize = 5000;

/// Ids per delete statement.
pub(super) const DELETE_CHUNK: usize = 5000;

/// Writes a workspace's row (the columns `commit::CommitSql::upsert_workspace` names).
const UPSERT_WORKSPACE: &str =
    "INSERT INTO workspaces (workspace_id, name, default_region) VALUES ($1, $2, $3) \
     ON CONFLICT (workspace_id) DO UPDATE SET name = EXCLUDED.name, \
     default_region = EXCLUDED.default_region";

/// Writes an API key (the columns `commit::CommitSql::upsert_key` names).
const UPSERT_KEY: &str =
    "INSERT INTO api_keys (id, workspace_id, secret_hash, scopes, created_by, \
     revoked, rate_limit_per_minute) VALUES ($1, $2, $3, $4, $5, $6, $7) \
     ON CONFLICT (workspace_id, id) DO UPDATE SET \
     secret_hash = EXCLUDED.secret_hash, scopes = EXCLUDED.scopes, \
     created_by = EXCLUDED.created_by, revoked = EXCLUDED.revoked, \
     rate_limit_per_minute = EXCLUDED.rate_limit_per_minute";

/// Counts a transaction that changes a workspace's records or description (see
/// `Store::position`). Last in the transaction: the row lock it takes orders concurrent
/// committers of one workspace and is held only until the commit.
/// The transaction's id goes with it, for the nodes that follow the workspace's commits
/// (`crate::store::cluster`: horizon reads).
/// With the marker of the records the transaction touched; it changes nothing while a
/// marker stands (`actors::store::Touched`).
pub(super) const BUMP_POSITION: &str =
    "INSERT INTO commit_positions (workspace_id, position, tag, xid, touched) \
     VALUES ($1, 1, $2, pg_current_xact_id()::text::bigint, $3) \
     ON CONFLICT (workspace_id) DO UPDATE SET position = commit_positions.position + 1, \
     tag = EXCLUDED.tag, xid = EXCLUDED.xid, touched = EXCLUDED.touched \
     WHERE commit_positions.touched IS NULL";

/// Clears a workspace's touch marker standing at a position.
const CLEAR_TOUCH_MARKER: &str = "UPDATE commit_positions SET touched = NULL \
     WHERE workspace_id = $1 AND position = $2 AND touched IS NOT NULL";

/// The statements the commit sequence binds alike for both adapters.
const COMMIT_SQL: CommitSql = CommitSql {
    upsert_workspace: UPSERT_WORKSPACE,
    upsert_key: UPSERT_KEY,
    bump_position: BUMP_POSITION,
    clear_touch_marker: CLEAR_TOUCH_MARKER,
};

/// A statement as this adapter builds it with sqlx (one that binds arrays).
type Statement<'q> = sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>;

/// Writes a transaction's change log parts at the position `BUMP_POSITION` just set.
const INSERT_LOG_PARTS: &str =
    "INSERT INTO change_log (workspace_id, position, part, committed_at, entries, entries_count) \
     SELECT $1, c.position, p.part, $2, p.entries, p.n \
     FROM commit_positions c, UNNEST($3::int[], $4::bytea[], $5::int[]) AS p(part, entries, n) \
     WHERE c.workspace_id = $1";

const UPSERT_RECORDS: &str = "INSERT INTO records (workspace_id, kind, id, body) \
     SELECT $1, k, i, b FROM UNNEST($2::text[], $3::text[], $4::text[]) AS t(k, i, b) \
     ON CONFLICT (workspace_id, kind, id) DO UPDATE SET body = EXCLUDED.body \
     WHERE records.body <> EXCLUDED.body";

const DELETE_RECORDS: &str = "DELETE FROM records r \
     USING UNNEST($2::text[], $3::text[]) AS d(k, i) \
     WHERE r.workspace_id = $1 AND r.kind = d.k AND r.id = d.i";

/// A fenced commit's first statement (see [`crate::store::fence`]): checks that this server
/// holds the workspace's lease, at the epoch it took, and that its node's row is alive
/// under the incarnation the lease names; and keeps the lease row share-locked until the
/// transaction ends, so that a take or a release waits for the commit. Refused, with
/// nothing written, when this server does not hold it (another writes the workspace,
/// or none does yet).
pub(super) async fn check_lease(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    ws: &str,
    workspace: Uuid,
    fences: &Fences,
) -> StoreResult<()> {
    let fail = err("checking the writer lease");
    let refused = || {
        StoreError::Fenced(format!(
            "this server ({}) does not hold workspace {workspace}'s writer lease",
            fences.node
        ))
    };
    let epoch = fences.epoch(workspace).ok_or_else(refused)?;
    let held: Option<i64> = sqlx::query_scalar(
        "SELECT l.epoch FROM workspace_leases l JOIN cluster_nodes n \
           ON n.name = l.holder AND n.incarnation = l.incarnation \
         WHERE l.workspace_id = $1 AND l.holder = $2 AND l.incarnation = $3 AND l.epoch = $4 \
           AND n.lease_until > clock_timestamp() \
         FOR SHARE OF l",
    )
    .bind(ws)
    .bind(&fences.node)
    .bind(&fences.incarnation)
    .bind(epoch as i64)
    .fetch_optional(&mut **tx)
    .await
    .map_err(&fail)?;
    held.map(drop).ok_or_else(refused)
}

/// The binary `COPY` stream's signature, flags and header extension length.
const COPY_HEADER: &[u8] = b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0";

/// The commit sequence's statements on one PostgreSQL transaction.
pub(super) type PgStatements<'s> = Statements<'static, sqlx::Postgres, &'s PostgresStore>;

impl PgStatements<'_> {
    /// Runs one statement of the commit, one that binds arrays, on its transaction.
    async fn run_query(&mut self, statement: Statement<'_>) -> StoreResult<()> {
        statement
            .execute(&mut *self.tx)
            .await
            .map_err(err("commit"))?;
        Ok(())
    }
}

#[async_trait]
impl CommitStatements for PgStatements<'_> {
    const SQL: CommitSql = COMMIT_SQL;

    /// The mark's answer names the transaction (backend pid and transaction id), recorded
    /// before anything else can stall, so that `committed` can settle this batch with a
    /// certain answer if its outcome is never reported. Its row lock also orders
    /// concurrent committers of one workspace.
    async fn mark(&mut self, ws: &str, batch: Uuid, last: bool) -> StoreResult<()> {
        let (pid, xid): (i32, String) = if last {
            sqlx::query_as(
                "INSERT INTO commit_marks (workspace_id, batch_id) VALUES ($1, $2) \
                 ON CONFLICT (workspace_id) DO UPDATE SET batch_id = EXCLUDED.batch_id \
                 RETURNING pg_backend_pid(), pg_current_xact_id()::text",
            )
            .bind(ws)
            .bind(batch.to_string())
            .fetch_one(&mut *self.tx)
            .await
        } else {
            sqlx::query_as("SELECT pg_backend_pid(), pg_current_xact_id()::text")
                .fetch_one(&mut *self.tx)
                .await
        }
        .map_err(err("commit"))?;
        self.store.in_flight.lock().insert(
            batch,
            InFlight::Running {
                pid,
                xid,
                marks: last,
            },
        );
        Ok(())
    }

    async fn fence(&mut self, workspace: Uuid, ws: &str) -> StoreResult<()> {
        match &self.store.fences {
            Some(fences) => check_lease(&mut self.tx, ws, workspace, fences).await,
            None => Ok(()),
        }
    }

    /// An import's transactions push the data pages they write out to disk as they go
    /// (see `commit_import`), and all but its last commit without waiting for their WAL
    /// flush: the last one's flush covers them (the WAL is flushed in order), so the
    /// call is durable when it returns. A crash before it loses some of the import's
    /// transactions, which a failed import may leave anyway.
    async fn settings(&mut self, part: &Part<'_>) -> StoreResult<()> {
        if part.bulk {
            self.run("SET LOCAL backend_flush_after = '256kB'", &[])
                .await?;
        }
        if part.bulk && !part.last {
            self.run("SET LOCAL synchronous_commit = off", &[]).await?;
        }
        Ok(())
    }

    async fn upserts(&mut self, ws: &str, upserts: &[Upsert<'_>], fresh: bool) -> StoreResult<()> {
        if fresh {
            return copy_records(&mut self.tx, ws, upserts)
                .await
                .map_err(err("commit"));
        }
        for chunk in upserts.chunks(UPSERT_CHUNK) {
            // ON CONFLICT DO UPDATE refuses to touch one row twice in a statement. The
            // stable sort put repeats of a key side by side in change-set order, so the
            // last of each run is kept. Repeats split across chunks need nothing:
            // statements run in order and the later one wins.
            let mut kinds: Vec<&str> = Vec::with_capacity(chunk.len());
            let mut ids: Vec<String> = Vec::with_capacity(chunk.len());
            let mut bodies = Vec::with_capacity(chunk.len());
            for u in chunk {
                let r = u.record;
                let (kind, id) = (r.kind().as_str(), r.id_string());
                if kinds.last() == Some(&kind) && ids.last() == Some(&id) {
                    kinds.pop();
                    ids.pop();
                    bodies.pop();
                }
                kinds.push(kind);
                ids.push(id);
                bodies.push(u.body());
            }
            let bodies: Vec<&str> = bodies.iter().map(|b| b.as_ref()).collect();
            self.run_query(
                sqlx::query(UPSERT_RECORDS)
                    .bind(ws)
                    .bind(kinds)
                    .bind(ids)
                    .bind(bodies),
            )
            .await?;
        }
        Ok(())
    }

    async fn deletes(&mut self, ws: &str, deletes: &[(RecordKind, &str)]) -> StoreResult<()> {
        for chunk in deletes.chunks(DELETE_CHUNK) {
            let kinds: Vec<&str> = chunk.iter().map(|(k, _)| k.as_str()).collect();
            let ids: Vec<&str> = chunk.iter().map(|(_, id)| *id).collect();
            self.run_query(sqlx::query(DELETE_RECORDS).bind(ws).bind(kinds).bind(ids))
                .await?;
        }
        Ok(())
    }

    async fn tombstones(&mut self, ws: &str, tombstones: &[TombstoneChange]) -> StoreResult<()> {
        let fail = err("commit");
        let (mut set, mut cleared) = (Vec::new(), Vec::new());
        for (change, left) in tombstones {
            let entity = i16::from(change.entity.tag());
            match left {
                Some(at) => set.push((entity, change.id.to_string(), at.millis())),
                None => cleared.push((entity, change.id.to_string())),
            }
        }
        let (entities, ids): (Vec<i16>, Vec<String>) = cleared.into_iter().unzip();
        sqlx::query(
            "DELETE FROM tombstones t USING UNNEST($2::smallint[], $3::text[]) AS d(e, i) \
             WHERE t.workspace_id = $1 AND t.entity = d.e AND t.id = d.i",
        )
        .bind(ws)
        .bind(&entities)
        .bind(&ids)
        .execute(&mut *self.tx)
        .await
        .map_err(&fail)?;
        let entities: Vec<i16> = set.iter().map(|s| s.0).collect();
        let ids: Vec<&str> = set.iter().map(|s| s.1.as_str()).collect();
        let ats: Vec<i64> = set.iter().map(|s| s.2).collect();
        sqlx::query(
            "INSERT INTO tombstones (workspace_id, entity, id, deleted_at) \
             SELECT $1, e, i, a FROM UNNEST($2::smallint[], $3::text[], $4::bigint[]) AS t(e, i, a) \
             ON CONFLICT (workspace_id, entity, id) DO UPDATE SET deleted_at = EXCLUDED.deleted_at",
        )
        .bind(ws)
        .bind(&entities)
        .bind(&ids)
        .bind(&ats)
        .execute(&mut *self.tx)
        .await
        .map_err(&fail)?;
        Ok(())
    }

    async fn log_parts(
        &mut self,
        ws: &str,
        committed_at_ms: i64,
        parts: &[EncodedEntries],
    ) -> StoreResult<()> {
        let numbers: Vec<i32> = (0..parts.len() as i32).collect();
        let entries: Vec<&[u8]> = parts.iter().map(|p| p.as_bytes()).collect();
        let counts: Vec<i32> = parts.iter().map(|p| p.len() as i32).collect();
        self.run_query(
            sqlx::query(INSERT_LOG_PARTS)
                .bind(ws)
                .bind(committed_at_ms)
                .bind(&numbers)
                .bind(&entries)
                .bind(&counts),
        )
        .await?;
        Ok(())
    }
}

/// Bytes of `COPY` data sent at a time.
const COPY_CHUNK: usize = 1 << 20;

/// Inserts `rows` (in key order, none of them in the table) with one binary `COPY`:
/// several times cheaper for the server than the upsert, which looks each key up, and
/// no arrays to build on either side. A repeated key keeps its last version, as in the
/// upsert.
async fn copy_records(
    conn: &mut sqlx::PgConnection,
    ws: &str,
    rows: &[Upsert<'_>],
) -> Result<(), sqlx::Error> {
    if rows.is_empty() {
        return Ok(());
    }
    fn field(buf: &mut Vec<u8>, bytes: &[u8]) {
        buf.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
        buf.extend_from_slice(bytes);
    }
    let mut copy = conn
        .copy_in_raw("COPY records (workspace_id, kind, id, body) FROM STDIN (FORMAT binary)")
        .await?;
    let mut buf = Vec::with_capacity(COPY_CHUNK + 64 * 1024);
    buf.extend_from_slice(COPY_HEADER);
    // Of a run of one key (side by side after the stable sort), the last is written.
    let mut pending: Option<(RecordKind, String, &Upsert<'_>)> = None;
    for row in rows.iter().map(Some).chain([None]) {
        let next = row.map(|u| (u.record.kind(), u.record.id_string(), u));
        let same_key = matches!((&pending, &next), (Some((pk, pid, _)), Some((k, id, _))) if pk == k && pid == id);
        if let Some((kind, id, upsert)) = std::mem::replace(&mut pending, next) {
            if same_key {
                continue;
            }
            buf.extend_from_slice(&4i16.to_be_bytes());
            field(&mut buf, ws.as_bytes());
            field(&mut buf, kind.as_str().as_bytes());
            field(&mut buf, id.as_bytes());
            field(&mut buf, upsert.body().as_bytes());
            if buf.len() >= COPY_CHUNK {
                copy.send(std::mem::take(&mut buf)).await?;
                buf.reserve(COPY_CHUNK + 64 * 1024);
            }
        }
    }
    buf.extend_from_slice(&(-1i16).to_be_bytes());
    copy.send(buf).await?;
    copy.finish().await?;
    Ok(())
}

/// Where a batch's commit is: enough to wait for it, end it and ask how it ended.
#[derive(Clone, Debug)]
pub(super) enum InFlight {
    /// Before its first statement answered (acquiring a connection, BEGIN, the mark):
    /// no COMMIT has been sent, but the commit may still go on to send one.
    Starting,
    Running {
        /// The backend serving the commit's connection.
        pid: i32,
        /// Its transaction id (`xid8`, as text).
        xid: String,
        /// Whether the transaction writes the batch's mark; if not (an import's earlier
        /// transaction), its outcome is not the batch's, and the mark says that.
        marks: bool,
    },
}

/// Clears a batch still `Starting` when its commit ends or is dropped: a commit that
/// never got its first answer never sent COMMIT, and never will.
struct StartGuard<'a> {
    in_flight: &'a Mutex<HashMap<Uuid, InFlight>>,
    batch: Uuid,
}

impl Drop for StartGuard<'_> {
    fn drop(&mut self) {
        let mut map = self.in_flight.lock();
        if matches!(map.get(&self.batch), Some(InFlight::Starting)) {
            map.remove(&self.batch);
        }
    }
}

/// Longest `committed` waits for a commit still `Starting` before it answers
/// `Unavailable` (and is asked again).
pub(super) const STARTING_WAIT: Duration = Duration::from_secs(2);

/// How often `committed` looks again while an ended backend finishes its transaction.
pub(super) const SETTLE_POLL: Duration = Duration::from_millis(20);

/// Commits, each tracked under its batch until its outcome is known.
impl PostgresStore {
    /// One commit's transaction: the whole change set.
    pub(super) async fn write_changes(
        &self,
        workspace: Uuid,
        changes: &ChangeSet,
    ) -> StoreResult<()> {
        let upserts = in_key_order(changes);
        let deletes = sorted_deletes(changes);
        let marker = changes.touched.as_ref().map(|t| t.encode());
        for part in parts_of(changes, &upserts, &deletes, marker.as_deref(), None) {
            self.write_tracked(workspace, part).await?;
        }
        Ok(())
    }

    /// The rows of a commit's touched records and its marker cleared, in one transaction
    /// fenced like a commit and committed without waiting for the WAL's flush
    /// (`synchronous_commit = off`): durable with the next commit's flush, and a crash
    /// before it leaves the marker, which readers apply.
    pub(super) async fn write_touched(
        &self,
        workspace: Uuid,
        position: u64,
        rows: &[actors::model::Record],
    ) -> StoreResult<()> {
        let fail = err("storing touched rows");
        let upserts = super::super::records_in_key_order(rows, None);
        let tx = self.pool.begin().await.map_err(&fail)?;
        let mut statements = PgStatements { tx, store: self };
        statements
            .run("SET LOCAL synchronous_commit = off", &[])
            .await?;
        super::super::commit::write_touched(&mut statements, workspace, position, &upserts).await?;
        statements.tx.commit().await.map_err(&fail)
    }

    /// `write_part`, with the transaction tracked in `in_flight` under its batch until
    /// its outcome is known (see `committed`).
    pub(super) async fn write_tracked(&self, workspace: Uuid, part: Part<'_>) -> StoreResult<()> {
        let batch = part.batch;
        let _guard = batch.map(|batch| {
            self.in_flight.lock().insert(batch, InFlight::Starting);
            StartGuard {
                in_flight: &self.in_flight,
                batch,
            }
        });
        let res = self.write_part(workspace, part).await;
        if let Some(batch) = batch {
            // The outcome is known, unless the connection broke or the server stopped
            // answering on the way: such a batch stays recorded for `committed`.
            if !matches!(res, Err(StoreError::Unavailable(_))) {
                self.in_flight.lock().remove(&batch);
            }
        }
        res
    }

    /// One transaction of `part`: the commit sequence (`super::commit`) over
    /// [`PgStatements`].
    async fn write_part(&self, workspace: Uuid, part: Part<'_>) -> StoreResult<()> {
        let fail = err("commit");
        let tx = self.pool.begin().await.map_err(&fail)?;
        let mut statements = PgStatements { tx, store: self };
        super::super::commit::write_part(&mut statements, workspace, &part).await?;
        statements.tx.commit().await.map_err(&fail)
    }

    /// Ends the transaction `xid` if it is still in progress and waits until it has
    /// ended; `Some(true)` if it committed, `Some(false)` if it aborted, `None` when the
    /// server no longer knows (a transaction older than the commit log keeps). The
    /// caller bounds the wait.
    pub(super) async fn settle_transaction(
        &self,
        pid: i32,
        xid: &str,
    ) -> StoreResult<Option<bool>> {
        let fail = err("settling an unconfirmed commit");
        loop {
            let status: Option<String> = sqlx::query_scalar("SELECT pg_xact_status($1::xid8)")
                .bind(xid)
                .fetch_one(&self.pool)
                .await
                .map_err(&fail)?;
            match status.as_deref() {
                Some("committed") => return Ok(Some(true)),
                Some("aborted") => return Ok(Some(false)),
                Some(_) => {
                    // `backend_xid` is the 32-bit form of the `xid8`: only the backend
                    // still running this very transaction is ended.
                    sqlx::query(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                         WHERE pid = $1 AND backend_xid::text = ($2::xid8::text::numeric % 4294967296)::text",
                    )
                    .bind(pid)
                    .bind(xid)
                    .execute(&self.pool)
                    .await
                    .map_err(&fail)?;
                    tokio::time::sleep(SETTLE_POLL).await;
                }
                None => return Ok(None),
            }
        }
    }
}
