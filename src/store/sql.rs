//! What the SQL written once for both stores asks of a database: run a statement with
//! its values bound, read a row's columns, judge a failure ([`Sql`]). One macro
//! ([`sql_on`]), invoked by each adapter with its judgement of failures, implements it
//! for PostgreSQL and for SQLite over their own types, so code generic over the
//! database (the change log's counts and retention, the webhook rows, the commit's
//! workspace row, keys and position) names one bound, `DB: Sql`, where sqlx would have
//! it name an encoding bound per value type and an executor bound per call.
//!
//! Each statement's values are a slice of [`Value`]s, bound in order: statements name
//! theirs by position, `$1`, `$2`, … (which sqlx's SQLite driver binds by their number
//! as PostgreSQL does, so one text serves both where the dialects agree; SQLite's own
//! statements may write `?1`).

use actors::store::StoreError;
use futures_util::future::BoxFuture;

/// A value bound to a statement.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Value<'a> {
    Text(&'a str),
    /// Text or `NULL`.
    MaybeText(Option<&'a str>),
    /// A 64-bit integer (`BIGINT` in PostgreSQL).
    Number(i64),
    /// A 64-bit integer or `NULL`.
    MaybeNumber(Option<i64>),
    Bytes(&'a [u8]),
    Flag(bool),
}

/// A database the shared SQL runs on; see the module docs.
pub(crate) trait Sql: sqlx::Database {
    /// Whether a failed statement may pass when tried again (unavailable, a 503), or
    /// is a bug here (a 500); each adapter judges its database's codes.
    fn transient(e: &dyn sqlx::error::DatabaseError) -> bool;

    /// The rows of `sql`, with `values` bound, read on `pool`.
    fn rows<'a>(
        pool: &'a sqlx::Pool<Self>,
        sql: &'a str,
        values: &'a [Value<'a>],
    ) -> BoxFuture<'a, Result<Vec<Self::Row>, sqlx::Error>>;

    /// Runs `sql`, with `values` bound, on `conn` (a transaction's connection); the rows
    /// it changed.
    fn execute<'a>(
        conn: &'a mut Self::Connection,
        sql: &'a str,
        values: &'a [Value<'a>],
    ) -> BoxFuture<'a, Result<u64, sqlx::Error>>;

    /// Column `i` of `row`, a 64-bit integer or `NULL`.
    fn number(row: &Self::Row, i: usize) -> Result<Option<i64>, sqlx::Error>;
    /// Column `i` of `row`, text or `NULL`.
    fn text(row: &Self::Row, i: usize) -> Result<Option<String>, sqlx::Error>;
    /// Column `i` of `row`, bytes or `NULL`.
    fn bytes(row: &Self::Row, i: usize) -> Result<Option<Vec<u8>>, sqlx::Error>;
    /// How many columns `row` has.
    fn width(row: &Self::Row) -> usize;
}

/// Implements [`Sql`] for the database `$db`, whose failures `$transient` judges (each
/// adapter invokes it with its own judgement).
macro_rules! sql_on {
    ($db:ty, $transient:path) => {
        impl $crate::store::sql::Sql for $db {
            fn transient(e: &dyn sqlx::error::DatabaseError) -> bool {
                $transient(e)
            }

            fn rows<'a>(
                pool: &'a sqlx::Pool<Self>,
                sql: &'a str,
                values: &'a [$crate::store::sql::Value<'a>],
            ) -> futures_util::future::BoxFuture<'a, Result<Vec<Self::Row>, sqlx::Error>> {
                Box::pin($crate::store::sql::bound::<$db>(sql, values).fetch_all(pool))
            }

            fn execute<'a>(
                conn: &'a mut Self::Connection,
                sql: &'a str,
                values: &'a [$crate::store::sql::Value<'a>],
            ) -> futures_util::future::BoxFuture<'a, Result<u64, sqlx::Error>> {
                Box::pin(async move {
                    let done = $crate::store::sql::bound::<$db>(sql, values)
                        .execute(conn)
                        .await?;
                    Ok(done.rows_affected())
                })
            }

            fn number(row: &Self::Row, i: usize) -> Result<Option<i64>, sqlx::Error> {
                sqlx::Row::try_get(row, i)
            }

            fn text(row: &Self::Row, i: usize) -> Result<Option<String>, sqlx::Error> {
                sqlx::Row::try_get(row, i)
            }

            fn bytes(row: &Self::Row, i: usize) -> Result<Option<Vec<u8>>, sqlx::Error> {
                sqlx::Row::try_get(row, i)
            }

            fn width(row: &Self::Row) -> usize {
                sqlx::Row::len(row)
            }
        }
    };
}
pub(crate) use sql_on;

/// `sql` with `values` bound in order.
pub(crate) fn bound<'a, DB>(
    sql: &'a str,
    values: &'a [Value<'a>],
) -> sqlx::query::Query<'a, DB, <DB as sqlx::Database>::Arguments<'a>>
where
    DB: sqlx::Database,
    &'a str: sqlx::Encode<'a, DB> + sqlx::Type<DB>,
    Option<&'a str>: sqlx::Encode<'a, DB> + sqlx::Type<DB>,
    i64: sqlx::Encode<'a, DB> + sqlx::Type<DB>,
    Option<i64>: sqlx::Encode<'a, DB> + sqlx::Type<DB>,
    &'a [u8]: sqlx::Encode<'a, DB> + sqlx::Type<DB>,
    bool: sqlx::Encode<'a, DB> + sqlx::Type<DB>,
{
    values.iter().fold(sqlx::query(sql), |q, v| match *v {
        Value::Text(t) => q.bind(t),
        Value::MaybeText(t) => q.bind(t),
        Value::Number(n) => q.bind(n),
        Value::MaybeNumber(n) => q.bind(n),
        Value::Bytes(b) => q.bind(b),
        Value::Flag(f) => q.bind(f),
    })
}

/// A failed statement as a store error, under `context` (what was being done), as
/// `DB` judges it.
pub(crate) fn failed<DB: Sql>(context: &'static str) -> impl Fn(sqlx::Error) -> StoreError {
    move |e| super::map_error(context, e, DB::transient)
}

/// The first row's columns of `sql` (none without a row), as 64-bit integers: for
/// statements of one row (aggregates), so that reading every row costs nothing more.
pub(crate) async fn numbers<DB: Sql>(
    pool: &sqlx::Pool<DB>,
    sql: &str,
    values: &[Value<'_>],
) -> Result<Vec<Option<i64>>, sqlx::Error> {
    let rows = DB::rows(pool, sql, values).await?;
    match rows.first() {
        Some(row) => (0..DB::width(row)).map(|i| DB::number(row, i)).collect(),
        None => Ok(Vec::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn values_bind_in_order_and_columns_read_back_as_written() {
        let pool = sqlx::sqlite::SqlitePoolOptions::new()
            .max_connections(1)
            .connect("sqlite::memory:")
            .await
            .unwrap();
        let mut conn = pool.acquire().await.unwrap();
        let create = "CREATE TABLE t (a TEXT, b INTEGER, c BLOB, d INTEGER, e TEXT)";
        sqlx::Sqlite::execute(&mut conn, create, &[]).await.unwrap();
        let insert = "INSERT INTO t VALUES (?1, ?2, ?3, ?4, ?5)";
        let rows = [
            [
                Value::Text("one"),
                Value::Number(1),
                Value::Bytes(b"\x00\x01"),
                Value::Flag(true),
                Value::MaybeText(None),
            ],
            [
                Value::MaybeText(Some("two")),
                Value::MaybeNumber(None),
                Value::Bytes(b""),
                Value::Flag(false),
                Value::Text("e"),
            ],
        ];
        for row in &rows {
            let changed = sqlx::Sqlite::execute(&mut conn, insert, row).await.unwrap();
            assert_eq!(changed, 1);
        }
        drop(conn);
        let read = "SELECT a, b, c, d, e FROM t WHERE a >= ?1 ORDER BY a";
        let got = sqlx::Sqlite::rows(&pool, read, &[Value::Text("o")])
            .await
            .unwrap();
        let row = |r: &sqlx::sqlite::SqliteRow| {
            (
                sqlx::Sqlite::text(r, 0).unwrap(),
                sqlx::Sqlite::number(r, 1).unwrap(),
                sqlx::Sqlite::bytes(r, 2).unwrap(),
                sqlx::Sqlite::number(r, 3).unwrap(),
                sqlx::Sqlite::text(r, 4).unwrap(),
            )
        };
        let got: Vec<_> = got.iter().map(row).collect();
        assert_eq!(
            got,
            [
                (Some("one".into()), Some(1), Some(vec![0, 1]), Some(1), None),
                (
                    Some("two".into()),
                    None,
                    Some(vec![]),
                    Some(0),
                    Some("e".into())
                ),
            ]
        );
        let first = numbers(&pool, "SELECT b, d FROM t ORDER BY a", &[])
            .await
            .unwrap();
        assert_eq!(first, [Some(1), Some(1)]);
        let none = numbers(&pool, "SELECT b FROM t WHERE a = ?1", &[Value::Text("x")]);
        assert!(none.await.unwrap().is_empty());
    }
}
