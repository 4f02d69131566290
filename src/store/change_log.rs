//! The change log as both adapters keep it: the parts a transaction writes
//! ([`log_parts`]), `Store::count_entries` ([`count_entries`]) and retention's steps
//! ([`prune_changes`] over [`LogPruning`]).

use super::sql::{Sql, Value};
use super::Upsert;
use actors::model::RecordKind;
use actors::store::{StoreError, StoreResult};
use uuid::Uuid;

/// The change log's parts of one transaction: its upserts and deletes, and the derived
/// changes it carries (see `actors::changes`).
pub(crate) fn log_parts<'a, D>(
    upserts: &'a [Upsert<'a>],
    deletes: D,
    derived: &[actors::entries::Change],
) -> Vec<actors::entries::EncodedEntries>
where
    D: IntoIterator<Item = (RecordKind, &'a str)>,
    D::IntoIter: 'a,
{
    actors::entries::encode_parts(upserts.iter().map(|u| u.record), deletes, derived)
}

/// `Store::count_entries`'s statements, in SQL both dialects take (see
/// `super::reads`). Each binds the workspace id (as stored), then the position and
/// part the window starts after, and the last position it covers.
pub(crate) mod count_sql {
    /// The sum of the window's parts' counts, and how many of its parts have none
    /// (written before counts were kept). SQLite answers it from the index
    /// `change_log_counts` alone, no part's row.
    pub const COUNTED: &str = "SELECT CAST(coalesce(sum(entries_count), 0) AS BIGINT), \
                               count(*) - count(entries_count) FROM change_log \
                               WHERE workspace_id = $1 AND (position, part) > ($2, $3) \
                               AND position <= $4";
    /// The window's parts without a count, in order: position, part (64-bit), entries.
    /// A fifth number binds how many at most.
    pub const UNCOUNTED: &str = "SELECT position, CAST(part AS BIGINT), entries FROM change_log \
                                 WHERE workspace_id = $1 AND (position, part) > ($2, $3) \
                                 AND position <= $4 AND entries_count IS NULL \
                                 ORDER BY position, part LIMIT $5";
}

/// Parts without a count read per round trip of [`count_entries`].
const UNCOUNTED_PER_READ: i64 = 256;

/// `Store::count_entries`, on `pool`: the sum of the parts' counts, and the entries of
/// any part written without one, read and counted.
pub(crate) async fn count_entries<DB: Sql>(
    pool: &sqlx::Pool<DB>,
    workspace: Uuid,
    after: (u64, u32),
    upto: u64,
) -> StoreResult<u64> {
    let fail = super::sql::failed::<DB>("counting the change log");
    let ws = workspace.to_string();
    let window = [after.0 as i64, i64::from(after.1), upto as i64];
    let sums = read_numbers(pool, &ws, count_sql::COUNTED, &window)
        .await
        .map_err(&fail)?;
    let mut total = sums.first().copied().flatten().unwrap_or(0);
    let mut uncounted = sums.get(1).copied().flatten().unwrap_or(0);
    let mut from = (window[0], window[1]);
    while uncounted > 0 {
        let values = [
            Value::Text(&ws),
            Value::Number(from.0),
            Value::Number(from.1),
            Value::Number(window[2]),
            Value::Number(UNCOUNTED_PER_READ),
        ];
        let rows = DB::rows(pool, count_sql::UNCOUNTED, &values)
            .await
            .map_err(&fail)?;
        for row in &rows {
            // Both columns are keys of the log: a NULL is a damaged row, never a 0.
            let key =
                |i| super::reads::present(DB::number(row, i), "a change log part's key", &fail);
            let (position, part) = (key(0)?, key(1)?);
            let entries = DB::bytes(row, 2).map_err(&fail)?.unwrap_or_default();
            total +=
                actors::store::count_of(&super::reads::log_part((position, part, 0, entries)))?;
            from = (position, part);
        }
        // Fewer than asked: none is left (retention may have removed some meanwhile).
        if (rows.len() as i64) < UNCOUNTED_PER_READ {
            break;
        }
        uncounted = uncounted.saturating_sub(rows.len() as u64);
    }
    Ok(total)
}

/// Change log parts deleted per transaction when retention prunes (each some tens of
/// kilobytes): short enough that commits never wait long behind a prune.
pub(crate) const PRUNE_PARTS_PER_TX: usize = 64;

/// Retention's statements in one adapter's SQL. Each binds the workspace id (as stored)
/// first, then the numbers its field names.
pub(crate) struct PruneStatements {
    /// Deletes the tombstones of records that left before a time.
    pub delete_tombstones_before: &'static str,
    /// The newest position with a log part committed before a time (null: none).
    pub newest_position_before: &'static str,
    /// Moves the pruned-through mark up to a position (never down).
    pub mark_pruned_through: &'static str,
    /// Deletes at most a number of parts at or before a position.
    pub delete_parts_through: &'static str,
    /// The parts left, and the bytes of their entries.
    pub log_size: &'static str,
}

/// What an adapter gives retention: its statements, and how it runs them. Their order
/// and batching are [`prune_changes`]'s, the same for both stores. `ws` is the
/// workspace id as stored.
#[async_trait::async_trait]
pub(crate) trait LogPruning {
    type Db: Sql;
    const STATEMENTS: PruneStatements;
    /// Runs a write of [`PruneStatements`] with `ws` and the numbers `n` bound, in a
    /// transaction of its own as a commit's writes are kept apart; the rows it touched.
    async fn prune_write(&self, ws: &str, sql: &'static str, n: &[i64]) -> StoreResult<u64>;
    /// Where the reads of [`PruneStatements`] run.
    fn readers(&self) -> &sqlx::Pool<Self::Db>;
    /// A failed read, as the adapter judges its errors.
    fn failed(e: sqlx::Error) -> StoreError;
}

/// Runs a read with `ws` and `numbers` bound: its one row's columns, as counts or
/// positions.
async fn read_numbers<DB: Sql>(
    pool: &sqlx::Pool<DB>,
    ws: &str,
    sql: &str,
    numbers: &[i64],
) -> Result<Vec<Option<u64>>, sqlx::Error> {
    let values: Vec<Value<'_>> = std::iter::once(Value::Text(ws))
        .chain(numbers.iter().map(|n| Value::Number(*n)))
        .collect();
    let row = super::sql::numbers(pool, sql, &values).await?;
    Ok(row.into_iter().map(|n| n.map(|n| n as u64)).collect())
}

/// `Store::prune_changes` over an adapter's steps: the tombstones, then the mark (a
/// reader that finds parts missing is told it is behind), then the parts, a few per
/// transaction so that no commit waits long behind the prune.
pub(crate) async fn prune_changes<L: LogPruning>(
    log: &L,
    workspace: Uuid,
    before_ms: i64,
) -> StoreResult<actors::store::Pruned> {
    let ws = workspace.to_string();
    let sql = &L::STATEMENTS;
    let tombstones_removed = log
        .prune_write(&ws, sql.delete_tombstones_before, &[before_ms])
        .await?;
    let mut parts_removed = 0;
    let newest = read_numbers(log.readers(), &ws, sql.newest_position_before, &[before_ms])
        .await
        .map_err(L::failed)?;
    let through = match newest.first().copied().flatten() {
        Some(through) => {
            log.prune_write(&ws, sql.mark_pruned_through, &[through as i64])
                .await?;
            loop {
                let limit = PRUNE_PARTS_PER_TX as i64;
                let deleted = log
                    .prune_write(&ws, sql.delete_parts_through, &[through as i64, limit])
                    .await?;
                if deleted == 0 {
                    break;
                }
                parts_removed += deleted;
            }
            through
        }
        None => super::reads::pruned_through(log.readers(), &ws).await?,
    };
    let size = read_numbers(log.readers(), &ws, sql.log_size, &[])
        .await
        .map_err(L::failed)?;
    let column = |i: usize| size.get(i).copied().flatten().unwrap_or(0);
    let (parts_left, bytes_left) = (column(0), column(1));
    Ok(actors::store::Pruned {
        through,
        parts_removed,
        tombstones_removed,
        parts_left,
        bytes_left,
    })
}
