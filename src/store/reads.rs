//! The store's reads that both adapters run alike, each statement written once: in SQL
//! both dialects take as it is (values bound by position as `$1`, `$2`, …, which
//! sqlx's SQLite driver binds by their number as PostgreSQL does; integers cast to
//! `BIGINT` where a PostgreSQL column is narrower), run on the pool the adapter names
//! (PostgreSQL's one pool; SQLite's readers, or its writer where a read must see the
//! last commit and never wait behind a long load).
//!
//! What differs by dialect stays in the adapters: reads of several workspaces at once
//! (PostgreSQL binds arrays), keys (each formats its timestamps), and the workspace row
//! (its id column is named differently).

use super::sql::{failed, Sql, Value};
use actors::store::{CommitPosition, LogRead, LogWindow, StoreError, StoreResult, TouchMarker};
use sqlx::Pool;
use uuid::Uuid;

/// A column the schema keeps `NOT NULL`, read: a `NULL` is a damaged row, never a
/// default.
pub(crate) fn present<T>(
    cell: Result<Option<T>, sqlx::Error>,
    what: &str,
    fail: &impl Fn(sqlx::Error) -> StoreError,
) -> StoreResult<T> {
    match cell {
        Ok(Some(value)) => Ok(value),
        Ok(None) => Err(StoreError::Corrupt(format!("{what} without a value"))),
        Err(e) => Err(fail(e)),
    }
}

/// `Store::blob_len`: the stored length, the bytes unread.
pub(crate) async fn blob_len<DB: Sql>(
    pool: &Pool<DB>,
    workspace: Uuid,
    name: &str,
) -> StoreResult<Option<u64>> {
    let fail = failed::<DB>("reading attachment bytes");
    let ws = workspace.to_string();
    let sql = "SELECT CAST(length(bytes) AS BIGINT) FROM blobs \
               WHERE workspace_id = $1 AND name = $2";
    let rows = DB::rows(pool, sql, &[Value::Text(&ws), Value::Text(name)])
        .await
        .map_err(&fail)?;
    match rows.first() {
        Some(row) => Ok(Some(
            present(DB::number(row, 0), "a blob's length", &fail)? as u64
        )),
        None => Ok(None),
    }
}

/// `Store::blob`.
pub(crate) async fn blob<DB: Sql>(
    pool: &Pool<DB>,
    workspace: Uuid,
    name: &str,
) -> StoreResult<Option<Vec<u8>>> {
    let fail = failed::<DB>("reading attachment bytes");
    let ws = workspace.to_string();
    let sql = "SELECT bytes FROM blobs WHERE workspace_id = $1 AND name = $2";
    let rows = DB::rows(pool, sql, &[Value::Text(&ws), Value::Text(name)])
        .await
        .map_err(&fail)?;
    match rows.first() {
        Some(row) => Ok(Some(present(DB::bytes(row, 0), "a blob", &fail)?)),
        None => Ok(None),
    }
}

/// `Store::blob_names`.
pub(crate) async fn blob_names<DB: Sql>(
    pool: &Pool<DB>,
    workspace: Uuid,
    after: &str,
    limit: usize,
) -> StoreResult<Vec<String>> {
    let fail = failed::<DB>("listing attachment bytes");
    let ws = workspace.to_string();
    let sql = "SELECT name FROM blobs WHERE workspace_id = $1 AND name > $2 \
               ORDER BY name LIMIT $3";
    let values = [
        Value::Text(&ws),
        Value::Text(after),
        Value::Number(limit as i64),
    ];
    let rows = DB::rows(pool, sql, &values).await.map_err(&fail)?;
    rows.iter()
        .map(|row| present(DB::text(row, 0), "a blob's name", &fail))
        .collect()
}

/// `Store::load_records` (`kind`: `Store::load_kind`), streamed as the database sends
/// the rows.
/// The rows are decoded as they come by [`load_rows`](super::load_rows), which reads
/// their text in place: hence the bounds of sqlx's own, for this read alone.
pub(crate) async fn load_records<DB>(
    pool: &Pool<DB>,
    workspace: Uuid,
    kind: Option<actors::model::RecordKind>,
    sink: actors::store::RecordSink<'_>,
) -> StoreResult<()>
where
    DB: Sql,
    for<'e> &'e Pool<DB>: sqlx::Executor<'e, Database = DB>,
    for<'q> DB::Arguments<'q>: sqlx::IntoArguments<'q, DB>,
    for<'q> &'q str: sqlx::Encode<'q, DB> + sqlx::Decode<'q, DB> + sqlx::Type<DB>,
    usize: sqlx::ColumnIndex<DB::Row>,
{
    let ws = workspace.to_string();
    let rows = match kind {
        None => sqlx::query("SELECT kind, id, body FROM records WHERE workspace_id = $1")
            .bind(ws.as_str()),
        Some(kind) => {
            sqlx::query("SELECT kind, id, body FROM records WHERE workspace_id = $1 AND kind = $2")
                .bind(ws.as_str())
                .bind(kind.as_str())
        }
    }
    .fetch(pool);
    let fail = failed::<DB>("loading records");
    super::load_rows(rows, false, &mut |_, r| sink(r), fail).await
}

/// `Store::touches`, through the partial index of standing markers: nearly always none
/// at all.
pub(crate) async fn touches<DB: Sql>(
    pool: &Pool<DB>,
    workspaces: &[Uuid],
) -> StoreResult<Vec<Option<TouchMarker>>> {
    let fail = failed::<DB>("reading touch markers");
    let sql = "SELECT workspace_id, position, touched FROM commit_positions \
               WHERE touched IS NOT NULL";
    let rows = DB::rows(pool, sql, &[]).await.map_err(&fail)?;
    let rows = rows
        .iter()
        .map(|row| {
            Ok((
                present(DB::text(row, 0), "a touch marker's workspace", &fail)?,
                present(DB::number(row, 1), "a touch marker's position", &fail)?,
                present(DB::text(row, 2), "a touch marker", &fail)?,
            ))
        })
        .collect::<StoreResult<Vec<_>>>()?;
    super::touch_markers(workspaces, rows)
}

/// `Store::position`.
pub(crate) async fn position<DB: Sql>(
    pool: &Pool<DB>,
    workspace: Uuid,
) -> StoreResult<CommitPosition> {
    let fail = failed::<DB>("reading the commit position");
    let ws = workspace.to_string();
    let sql = "SELECT position, tag FROM commit_positions WHERE workspace_id = $1";
    let rows = DB::rows(pool, sql, &[Value::Text(&ws)])
        .await
        .map_err(&fail)?;
    match rows.first() {
        Some(row) => {
            let seq = present(DB::number(row, 0), "a commit position", &fail)?;
            let tag = present(DB::text(row, 1), "a commit position's tag", &fail)?;
            super::commit_position(seq, &tag)
        }
        None => Ok(CommitPosition::default()),
    }
}

/// The batch a workspace's last commit marked (none before its first): what
/// `Store::committed` answers from once no transaction of the batch can still commit.
pub(crate) async fn commit_mark<DB: Sql>(
    pool: &Pool<DB>,
    workspace: Uuid,
) -> StoreResult<Option<String>> {
    let fail = failed::<DB>("reading the commit mark");
    let ws = workspace.to_string();
    let sql = "SELECT batch_id FROM commit_marks WHERE workspace_id = $1";
    let rows = DB::rows(pool, sql, &[Value::Text(&ws)])
        .await
        .map_err(&fail)?;
    rows.first()
        .map(|row| present(DB::text(row, 0), "a commit mark", &fail))
        .transpose()
}

/// The position a workspace's change log is pruned through (0: never pruned).
pub(crate) async fn pruned_through<DB: Sql>(pool: &Pool<DB>, workspace: &str) -> StoreResult<u64> {
    let fail = failed::<DB>("reading the change log");
    let sql = "SELECT pruned_through FROM commit_positions WHERE workspace_id = $1";
    let through = super::sql::numbers(pool, sql, &[Value::Text(workspace)])
        .await
        .map_err(&fail)?;
    Ok(through.first().copied().flatten().unwrap_or(0) as u64)
}

/// `Store::read_changes`: the parts, then how far the log is pruned, read after them
/// (pruning moves the mark before it deletes anything, so a part missing from the
/// parts read shows here).
pub(crate) async fn read_changes<DB: Sql>(
    pool: &Pool<DB>,
    workspace: Uuid,
    window: LogWindow,
) -> StoreResult<LogRead> {
    let fail = failed::<DB>("reading the change log");
    let ws = workspace.to_string();
    let sql = "SELECT position, CAST(part AS BIGINT), committed_at, entries FROM change_log \
               WHERE workspace_id = $1 AND (position, part) > ($2, $3) AND position <= $4 \
               ORDER BY position, part LIMIT $5";
    let values = [
        Value::Text(&ws),
        Value::Number(window.after.0 as i64),
        Value::Number(i64::from(window.after.1)),
        Value::Number(window.upto as i64),
        Value::Number(window.max_parts as i64),
    ];
    let rows = DB::rows(pool, sql, &values).await.map_err(&fail)?;
    let parts = rows
        .iter()
        .map(|row| {
            let number = |i, what| present(DB::number(row, i), what, &fail);
            Ok(log_part((
                number(0, "a change log part's position")?,
                number(1, "a change log part's number")?,
                number(2, "a change log part's time")?,
                present(DB::bytes(row, 3), "a change log part", &fail)?,
            )))
        })
        .collect::<StoreResult<Vec<_>>>()?;
    Ok(LogRead {
        pruned_through: pruned_through(pool, &ws).await?,
        parts,
    })
}

/// `Store::tombstones`.
pub(crate) async fn tombstones<DB: Sql>(
    pool: &Pool<DB>,
    workspace: Uuid,
) -> StoreResult<Vec<(actors::entries::Change, actors::time::Stamp)>> {
    let fail = failed::<DB>("reading the tombstones");
    let ws = workspace.to_string();
    let sql = "SELECT CAST(entity AS BIGINT), id, deleted_at FROM tombstones \
               WHERE workspace_id = $1";
    let rows = DB::rows(pool, sql, &[Value::Text(&ws)])
        .await
        .map_err(&fail)?;
    let rows = rows
        .iter()
        .map(|row| {
            Ok((
                present(DB::number(row, 0), "a tombstone's entity", &fail)?,
                present(DB::text(row, 1), "a tombstone's id", &fail)?,
                present(DB::number(row, 2), "a tombstone's time", &fail)?,
            ))
        })
        .collect::<StoreResult<Vec<_>>>()?;
    tombstone_rows(rows)
}

/// A change log row as both stores read it: position, part, committed_at, entries.
pub(crate) fn log_part(row: (i64, i64, i64, Vec<u8>)) -> actors::store::LogPart {
    actors::store::LogPart {
        position: row.0 as u64,
        part: row.1 as u32,
        committed_at_ms: row.2,
        entries: row.3,
    }
}

/// Tombstone rows as both stores read them (entity index, id, deleted_at).
pub(crate) fn tombstone_rows(
    rows: Vec<(i64, String, i64)>,
) -> StoreResult<Vec<(actors::entries::Change, actors::time::Stamp)>> {
    rows.into_iter()
        .map(|(entity, id, at)| {
            let entity = actors::entries::entity_of_index(entity)
                .ok_or_else(|| StoreError::Corrupt(format!("a tombstone names entity {entity}")))?;
            Ok((
                actors::entries::Change {
                    entity,
                    id: actors::entries::LoggedId::parse(&id),
                },
                actors::time::Stamp::from_millis(at),
            ))
        })
        .collect()
}
