//! The commit sequence's statements on SQLite ([`SqliteStatements`]), on the one
//! writer's connection: records through SQLite's C interface (`super::rows`), the rest
//! through sqlx.

use super::super::commit::{CommitSql, CommitStatements, Statements};
use super::super::sql::Value;
use super::super::Upsert;
use super::err;
use actors::entries::EncodedEntries;
use actors::model::RecordKind;
use actors::store::StoreResult;
use actors::tombstones::TombstoneChange;
use async_trait::async_trait;
use uuid::Uuid;

/// Ids per `DELETE … IN (…)` statement. 500 ids use 502 bind parameters, far below
/// SQLite's limit (32,766 since 3.32), and make the per-statement cost (a round trip to
/// sqlx's worker thread, a statement-cache lookup) negligible.
pub(super) const DELETE_CHUNK: usize = 500;

/// Writes a workspace's row (the columns `commit::CommitSql::upsert_workspace` names).
const UPSERT_WORKSPACE: &str =
    "INSERT INTO workspaces (id, name, default_region) VALUES (?1, ?2, ?3) \
     ON CONFLICT (id) DO UPDATE SET name = excluded.name, \
     default_region = excluded.default_region";

/// Writes an API key (the columns `commit::CommitSql::upsert_key` names).
const UPSERT_KEY: &str =
    "INSERT INTO api_keys (id, workspace_id, secret_hash, scopes, created_by, \
     revoked, rate_limit_per_minute) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
     ON CONFLICT (id) DO UPDATE SET workspace_id = excluded.workspace_id, \
     secret_hash = excluded.secret_hash, scopes = excluded.scopes, \
     created_by = excluded.created_by, revoked = excluded.revoked, \
     rate_limit_per_minute = excluded.rate_limit_per_minute";

/// Counts a transaction that changes a workspace's records or description (see
/// `Store::position`), with the marker of the records it touched; changes nothing while
/// a marker stands (`actors::store::Touched`).
const BUMP_POSITION: &str = "INSERT INTO commit_positions (workspace_id, position, tag, touched) \
     VALUES (?1, 1, ?2, ?3) \
     ON CONFLICT (workspace_id) DO UPDATE SET position = commit_positions.position + 1, \
     tag = excluded.tag, touched = excluded.touched \
     WHERE commit_positions.touched IS NULL";

/// Clears a workspace's touch marker standing at a position.
const CLEAR_TOUCH_MARKER: &str = "UPDATE commit_positions SET touched = NULL \
     WHERE workspace_id = ?1 AND position = ?2 AND touched IS NOT NULL";

/// The statements the commit sequence binds alike for both adapters.
const COMMIT_SQL: CommitSql = CommitSql {
    upsert_workspace: UPSERT_WORKSPACE,
    upsert_key: UPSERT_KEY,
    bump_position: BUMP_POSITION,
    clear_touch_marker: CLEAR_TOUCH_MARKER,
};

/// The commit sequence's statements on one SQLite transaction, on the writer.
pub(super) type SqliteStatements<'c> = Statements<'c, sqlx::Sqlite, ()>;

#[async_trait]
impl CommitStatements for SqliteStatements<'_> {
    const SQL: CommitSql = COMMIT_SQL;

    /// The mark is read back on the writer's connection (`committed`), queued behind a
    /// commit whose answer was lost: the transaction needs no name of its own.
    async fn mark(&mut self, ws: &str, batch: Uuid, last: bool) -> StoreResult<()> {
        if last {
            let batch = batch.to_string();
            self.run(
                "INSERT INTO commit_marks (workspace_id, batch_id) VALUES (?1, ?2) \
                 ON CONFLICT (workspace_id) DO UPDATE SET batch_id = excluded.batch_id",
                &[Value::Text(ws), Value::Text(&batch)],
            )
            .await?;
        }
        Ok(())
    }

    /// Rows go in order, so a repeated id simply ends with its last version.
    async fn upserts(&mut self, ws: &str, upserts: &[Upsert<'_>], _fresh: bool) -> StoreResult<()> {
        let mut handle = self.tx.lock_handle().await.map_err(err("commit"))?;
        let db = handle.as_raw_handle();
        let write = || {
            // SAFETY: sqlx lends the connection (`lock_handle`) until `handle` is
            // dropped, after this call; the transaction is open on it.
            unsafe { super::rows::upsert(db, ws, upserts) }
        };
        // Thousands of rows take milliseconds of this thread: let the runtime move
        // its other tasks elsewhere meanwhile, where it can.
        let written = match tokio::runtime::Handle::current().runtime_flavor() {
            tokio::runtime::RuntimeFlavor::MultiThread => tokio::task::block_in_place(write),
            _ => write(),
        };
        written.map_err(|e| e.into_store_error("commit"))
    }

    /// Grouped by kind (the deletes come sorted by it), so that each statement is a
    /// plain primary-key `IN` lookup.
    async fn deletes(&mut self, ws: &str, deletes: &[(RecordKind, &str)]) -> StoreResult<()> {
        for of_kind in deletes.chunk_by(|a, b| a.0 == b.0) {
            let kind = of_kind[0].0;
            for chunk in of_kind.chunks(DELETE_CHUNK) {
                let sql = delete_sql(chunk.len());
                let mut q = sqlx::query(&sql).bind(ws).bind(kind.as_str());
                for (_, id) in chunk {
                    q = q.bind(*id);
                }
                q.execute(&mut *self.tx).await.map_err(err("commit"))?;
            }
        }
        Ok(())
    }

    async fn tombstones(&mut self, ws: &str, tombstones: &[TombstoneChange]) -> StoreResult<()> {
        for (change, left) in tombstones {
            let entity = i64::from(change.entity.tag());
            let id = change.id.to_string();
            // A tombstone set binds its time as well; a cleared one, its key alone.
            let (sql, bound) = match left {
                Some(_) => (
                    "INSERT INTO tombstones (workspace_id, entity, id, deleted_at) \
                     VALUES (?1, ?2, ?3, ?4) ON CONFLICT (workspace_id, entity, id) \
                     DO UPDATE SET deleted_at = excluded.deleted_at",
                    4,
                ),
                None => (
                    "DELETE FROM tombstones WHERE workspace_id = ?1 AND entity = ?2 AND id = ?3",
                    3,
                ),
            };
            let values = [
                Value::Text(ws),
                Value::Number(entity),
                Value::Text(&id),
                Value::MaybeNumber(left.map(|at| at.millis())),
            ];
            self.run(sql, &values[..bound]).await?;
        }
        Ok(())
    }

    async fn log_parts(
        &mut self,
        ws: &str,
        committed_at_ms: i64,
        parts: &[EncodedEntries],
    ) -> StoreResult<()> {
        for (i, entries) in parts.iter().enumerate() {
            let values = [
                Value::Text(ws),
                Value::Number(i as i64),
                Value::Number(committed_at_ms),
                Value::Bytes(entries.as_bytes()),
                Value::Number(entries.len() as i64),
            ];
            self.run(
                "INSERT INTO change_log \
                 (workspace_id, position, part, committed_at, entries, entries_count) \
                 SELECT ?1, position, ?2, ?3, ?4, ?5 FROM commit_positions \
                 WHERE workspace_id = ?1",
                &values,
            )
            .await?;
        }
        Ok(())
    }
}

/// `DELETE … WHERE workspace_id = ? AND kind = ? AND id IN (?, …)` for `ids` ids
/// (anonymous parameters: sqlx looks up every parameter's name when it binds, and for
/// numbered ones SQLite answers by a linear scan, quadratic in the statement's size).
fn delete_sql(ids: usize) -> String {
    let mut sql = String::with_capacity(80 + ids * 2);
    sql.push_str("DELETE FROM records WHERE workspace_id = ? AND kind = ? AND id IN (");
    for i in 0..ids {
        if i > 0 {
            sql.push(',');
        }
        sql.push('?');
    }
    sql.push(')');
    sql
}
