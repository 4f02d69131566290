//! Store adapters: SQLite (embedded default) and PostgreSQL behind `actors::store::Store`.
//!
//! # Layout
//! - [`open`] picks the backend from the command line's `--database-url` and applies
//!   that backend's migrations (`migrations/sqlite`, `migrations/postgres`).
//! - `commit`: the one commit sequence both adapters run, each with its own statements.
//! - `change_log`: the change log as both adapters read and prune it: the parts of a
//!   transaction, counting entries, retention's steps, tombstone rows.
//! - `sql` and `reads`: what the SQL written once asks of a database (the `Sql` trait),
//!   and the reads both adapters run alike, each statement written once in SQL both
//!   dialects take (blobs, loads, positions, marks, the change log, tombstones).
//! - [`sqlite`] and [`postgres`]: the two adapters. Both keep the same tables:
//!   `workspaces`, `records` (one JSON body per raw record, keyed by workspace, kind and
//!   id), `api_keys` (secret hashes only), `commit_marks` (the last batch committed per
//!   workspace), `commit_positions` (per workspace, how many transactions changed
//!   it: what checkpoints are checked against), `change_log` (each part with the count
//!   of its entries) and the webhook rows (`webhooks`; SQLite keeps them in a file of
//!   their own, `sqlite::webhooks`).
//! - [`lock`]: the store lock every `serve` holds and offline writers need exclusively,
//!   so that nothing writes a store behind a running server's back.
//! - [`testing`]: a fresh PostgreSQL schema per test, and the sweep of old ones.
//!
//! # Invariants
//! - A `commit` is one database transaction: all of a change set or none of it.
//! - Every transaction that writes a workspace's records or its row moves the
//!   workspace's commit position on, in that transaction (`Store::position`).
//! - A dead or unreachable database yields `StoreError::Unavailable` within a bounded
//!   time (every pool has an `acquire_timeout`), never a hang.
//! - Key secrets never reach the store; only `ApiKey::secret_hash` does.
//! - Commits write records in primary-key order (`in_key_order`): what makes bulk
//!   imports of millions of records take minutes rather than a quarter of an hour.

pub mod blobs;
pub(crate) mod change_log;
pub mod cluster;
mod commit;
pub mod fence;
pub mod lock;
pub mod postgres;
mod reads;
mod sql;
pub mod sqlite;
mod webhooks;

use actors::model::{ApiKey, Record, RecordKind, Scopes, Workspace};
use actors::store::StoreResult;
use actors::store::{Store, StoreError};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

/// How long a caller waits for a pooled connection (and so for a dead database to be
/// reported as `Unavailable`). The domain answers 503 with Retry-After on `Unavailable`,
/// so a short wait beats a request that hangs until the client gives up.
pub const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(5);

/// Opens the store the operator chose: PostgreSQL for `Some(url)`, otherwise SQLite at
/// `<data_dir>/recruit.db` (directory and file created when missing). Migrations are
/// applied before the store is returned.
/// Connection options without sqlx's "slow statement" warnings. Loads, imports and
/// checkpoints run long by nature and are measured as what they are ("workspace loaded",
/// "import applied", the commit metrics and the actor's "slow commit" warning); a
/// warning that only names a statement would sound an alarm on every normal start.
/// Statements are still logged at `debug` (`RECRUITD_LOG=sqlx=debug`).
pub(crate) fn quiet_slow_statements<O: sqlx::ConnectOptions>(options: O) -> O {
    options.log_slow_statements(log::LevelFilter::Off, std::time::Duration::ZERO)
}

pub async fn open(database_url: Option<&str>, data_dir: &Path) -> anyhow::Result<Arc<dyn Store>> {
    open_paced(database_url, data_dir, ImportPacing::Shared, None).await
}

/// As [`open`], for a server: on PostgreSQL, which other servers may share, every
/// commit is checked against the writer leases `fences` holds (see [`fence`]).
pub async fn open_fenced(
    database_url: Option<&str>,
    data_dir: &Path,
    fences: Arc<fence::Fences>,
) -> anyhow::Result<Arc<dyn Store>> {
    open_paced(database_url, data_dir, ImportPacing::Shared, Some(fences)).await
}

/// How a store splits an import into transactions (`Store::commit_import`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImportPacing {
    /// Beside a server's other commits: transactions of a few hundred records, so that
    /// no commit of another workspace waits behind the import for long.
    Shared,
    /// The process has the store to itself (`recruitd import`, which holds the data
    /// dir's lock and refuses to run beside a server): transactions of tens of thousands
    /// of records, each synced; SQLite writes them through a rollback journal rather
    /// than the WAL (`SqliteStore::open_paced`).
    Alone,
}

/// Records per import transaction when the store is `ImportPacing::Alone`: a commit
/// part (`actors::snapshot`) in one transaction.
pub(crate) const ALONE_IMPORT_TX_RECORDS: usize = 50_000;

/// As [`open`], with the import pacing given.
pub async fn open_paced(
    database_url: Option<&str>,
    data_dir: &Path,
    pacing: ImportPacing,
    fences: Option<Arc<fence::Fences>>,
) -> anyhow::Result<Arc<dyn Store>> {
    match database_url {
        Some(url) => {
            if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
                anyhow::bail!(
                    "unsupported database URL (expected postgres:// or postgresql://); \
                     leave it unset for the embedded SQLite store"
                );
            }
            let store = postgres::PostgresStore::open(url).await?.paced(pacing);
            Ok(Arc::new(match fences {
                Some(fences) => store.fenced(fences),
                None => store,
            }))
        }
        None => {
            actors::private_files::create_dir(data_dir).map_err(|e| {
                anyhow::anyhow!("cannot create data directory {}: {e}", data_dir.display())
            })?;
            let path = data_dir.join("recruit.db");
            Ok(Arc::new(
                sqlite::SqliteStore::open_paced(&path, pacing).await?,
            ))
        }
    }
}

/// Most bytes one transaction (or statement) of `Store::put_blobs` writes (an object
/// larger than this goes alone), counting 64 per object for its name and row.
const BLOB_TX_BYTES: usize = 8 << 20;

/// `items` cut into the transactions of `Store::put_blobs`: consecutive runs of at most
/// `BLOB_TX_BYTES`, never empty.
pub(crate) fn blob_transactions<'a, 'b>(
    items: &'a [(String, &'b [u8])],
) -> impl Iterator<Item = &'a [(String, &'b [u8])]> {
    let mut rest = items;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut bytes = 0;
        let n = rest
            .iter()
            .take_while(|(_, b)| {
                bytes += b.len() + 64;
                bytes <= BLOB_TX_BYTES
            })
            .count()
            .max(1);
        let (chunk, tail) = rest.split_at(n);
        rest = tail;
        Some(chunk)
    })
}

/// Maps a sqlx error to the port's error kinds. `transient` recognises the backend's own
/// "try again later" database errors (each adapter knows its codes); everything that
/// means the database could not be reached or answered in time is `Unavailable`.
pub(crate) fn map_error(
    context: &str,
    e: sqlx::Error,
    transient: fn(&dyn sqlx::error::DatabaseError) -> bool,
) -> StoreError {
    let unavailable = match &e {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed
        // A stream out of step (a connection broken mid-message) is the connection's
        // state, never the statement's.
        | sqlx::Error::Protocol(_) => true,
        sqlx::Error::Database(db) => transient(db.as_ref()),
        _ => false,
    };
    if unavailable {
        StoreError::Unavailable(format!("{context}: {e}"))
    } else {
        StoreError::Other(format!("{context}: {e}"))
    }
}

/// Why PostgreSQL could not be reached, naming where it was looked for: "connection
/// refused at 127.0.0.1:5433" says what to check, where a pool's "timed out" does not.
pub(crate) fn postgres_unreachable(
    options: &sqlx::postgres::PgConnectOptions,
    e: &sqlx::Error,
) -> anyhow::Error {
    let at = format!("{}:{}", options.get_host(), options.get_port());
    let why = match e {
        sqlx::Error::Io(io) => match io.kind() {
            std::io::ErrorKind::ConnectionRefused => format!(
                "connection refused at {at} (is PostgreSQL running there, and is that its \
                 address and port?)"
            ),
            std::io::ErrorKind::TimedOut => format!("no answer from {at} (timed out)"),
            _ => format!("{io} (at {at})"),
        },
        other => format!("{other} (at {at})"),
    };
    anyhow::anyhow!("cannot connect to PostgreSQL: {why}")
}

/// Reads a stored record back; a body that does not parse, an unknown kind or a body
/// whose id differs from its row's id is `Corrupt`, naming kind and id.
pub(crate) fn decode_record(kind: &str, id: &str, body: &str) -> StoreResult<Record> {
    let k = RecordKind::parse(kind)
        .ok_or_else(|| StoreError::Corrupt(format!("record {kind}/{id}: unknown kind")))?;
    let record = Record::from_json(k, body)
        .map_err(|e| StoreError::Corrupt(format!("record {kind}/{id}: {e}")))?;
    if record.id_string() != id {
        return Err(StoreError::Corrupt(format!(
            "record {kind}/{id}: body carries id {:?}",
            record.id_string()
        )));
    }
    Ok(record)
}

/// A record's id, borrowed: a UUID, or the string id of an attachment.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum IdKey<'a> {
    Uuid(&'a Uuid),
    Str(&'a str),
}

fn id_key(r: &Record) -> IdKey<'_> {
    match r {
        Record::User(x) => IdKey::Uuid(&x.id),
        Record::Stage(x) => IdKey::Uuid(&x.id),
        Record::Company(x) => IdKey::Uuid(&x.id),
        Record::Contact(x) => IdKey::Uuid(&x.id),
        Record::Job(x) => IdKey::Uuid(&x.id),
        Record::Candidate(x) => IdKey::Uuid(&x.id),
        Record::Note(x) => IdKey::Uuid(&x.id),
        Record::Task(x) => IdKey::Uuid(&x.id),
        Record::Attachment(x) => IdKey::Str(&x.id),
    }
}

/// The records of a change set in primary-key order (`kind` text, then id), which is
/// the order both schemas' `records` index keeps them in.
///
/// Bulk imports write in this order because inserting in key order touches each index
/// page once, while the arbitrary order of a snapshot (random UUIDs) touches a random
/// leaf per row: with 8 million records SQLite wrote 28 GB for a 6 GB database and took
/// 414 s; in key order it takes 126 s. A UUID compares as
/// its lower-case text does (hex digits keep byte order, hyphens sit at fixed places),
/// so no id is formatted to sort. The sort is stable: a record repeated in one change
/// set still ends with its last version.
pub(crate) fn in_key_order(changes: &actors::store::ChangeSet) -> Vec<Upsert<'_>> {
    // Bodies rendered ahead are used only when there is one per upsert.
    let rendered = (changes.rendered.len() == changes.upserts.len()).then_some(&changes.rendered);
    records_in_key_order(&changes.upserts, rendered.map(|r| &r[..]))
}

/// `records` as upserts in key order (see [`in_key_order`]), with their bodies rendered
/// ahead when `rendered` has one for each.
pub(crate) fn records_in_key_order<'a>(
    records: &'a [Record],
    rendered: Option<&'a [String]>,
) -> Vec<Upsert<'a>> {
    let mut sorted: Vec<Upsert<'a>> = records
        .iter()
        .enumerate()
        .map(|(i, record)| Upsert {
            record,
            rendered: rendered.map(|r| r[i].as_str()),
        })
        .collect();
    sorted.sort_by(|a, b| {
        let (a, b) = (a.record, b.record);
        (a.kind().as_str(), id_key(a)).cmp(&(b.kind().as_str(), id_key(b)))
    });
    sorted
}

/// An upsert as a store writes it: the record, and its body when the change set
/// carries it rendered ahead (`ChangeSet::rendered`).
#[derive(Clone, Copy)]
pub(crate) struct Upsert<'a> {
    pub record: &'a Record,
    rendered: Option<&'a str>,
}

impl<'a> Upsert<'a> {
    /// The row's body: `Record::to_json`, rendered now unless it was ahead.
    pub fn body(&self) -> std::borrow::Cow<'a, str> {
        match self.rendered {
            Some(body) => std::borrow::Cow::Borrowed(body),
            None => std::borrow::Cow::Owned(self.record.to_json()),
        }
    }
}

/// One transaction of a large import, as both stores split it (`commit_import`): a run
/// of the upserts (in key order), then of the deletes, at most a set number of records
/// each, and a last transaction for the keys and the batch's mark. The workspace row
/// goes with the first, so a workspace whose first import failed part way is still
/// found and loaded.
pub(crate) struct ImportTransaction {
    pub upserts: std::ops::Range<usize>,
    pub deletes: std::ops::Range<usize>,
    pub first: bool,
    pub last: bool,
}

/// The transactions of an import of `upserts` upserts and `deletes` deletes, each of at
/// most as many records as `size` says when it is cut: upserts before deletes, as in
/// one transaction.
pub(crate) fn import_transactions(
    upserts: usize,
    deletes: usize,
    mut size: impl FnMut() -> usize,
) -> impl Iterator<Item = ImportTransaction> {
    let (mut upserted, mut deleted, mut first, mut done) = (0, 0, true, false);
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        let mut run = |at: &mut usize, of: usize| {
            let run = *at..(*at + size().max(1)).min(of);
            *at = run.end;
            run
        };
        let (upserts, deletes) = if upserted < upserts {
            (run(&mut upserted, upserts), 0..0)
        } else if deleted < deletes {
            (0..0, run(&mut deleted, deletes))
        } else {
            done = true;
            (0..0, 0..0)
        };
        let tx = ImportTransaction {
            upserts,
            deletes,
            first,
            last: done,
        };
        first = false;
        Some(tx)
    })
}

/// Rebuilds a workspace description from its columns.
pub(crate) fn decode_workspace(
    id: &str,
    name: Option<String>,
    default_region: Option<String>,
) -> StoreResult<Workspace> {
    let id = Uuid::parse_str(id)
        .map_err(|e| StoreError::Corrupt(format!("workspace id {id:?}: {e}")))?;
    Ok(Workspace {
        id,
        name,
        default_region,
    })
}

/// An `api_keys` row's columns, as both schemas keep them (`created_at` as RFC 3339 text).
pub(crate) struct KeyRow<'a> {
    pub id: String,
    pub workspace_id: &'a str,
    pub secret_hash: &'a [u8],
    pub scopes: &'a str,
    pub created_by: &'a str,
    pub revoked: bool,
    pub rate_limit_per_minute: Option<i64>,
    pub created_at: Option<&'a str>,
}

/// Reads an API key from a row of the key columns (`id, workspace_id, secret_hash,
/// scopes, created_by, revoked, rate_limit_per_minute, created_at`), whichever database
/// it came from.
pub(crate) fn key_from_row<'r, R: sqlx::Row>(row: &'r R) -> StoreResult<ApiKey>
where
    usize: sqlx::ColumnIndex<R>,
    String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    &'r str: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    &'r [u8]: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    bool: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    let get = |e: sqlx::Error| StoreError::Corrupt(format!("api_keys row: {e}"));
    decode_key(KeyRow {
        id: row.try_get(0).map_err(get)?,
        workspace_id: row.try_get(1).map_err(get)?,
        secret_hash: row.try_get(2).map_err(get)?,
        scopes: row.try_get(3).map_err(get)?,
        created_by: row.try_get(4).map_err(get)?,
        revoked: row.try_get(5).map_err(get)?,
        rate_limit_per_minute: row.try_get(6).map_err(get)?,
        created_at: row.try_get(7).map_err(get)?,
    })
}

/// Rows of a load decoded together: large enough that spreading a batch over the cores
/// pays, small enough that a batch's text is a few megabytes.
const DECODE_BATCH: usize = 8192;

/// Rows a last batch has fewer of to be decoded on the loading thread, not on the pool.
const DECODE_HERE_BELOW: usize = 1024;

/// A batch of stored rows, owned: their text in one buffer, and where each row's kind,
/// id and body lie in it (and the workspace of each, for a load of several).
#[derive(Default)]
struct RowBatch {
    text: String,
    rows: Vec<[std::ops::Range<usize>; 3]>,
    workspaces: Vec<Uuid>,
}

/// A decoded row: its workspace (nil for a load of one) and its record.
type Decoded = (Uuid, StoreResult<Record>);

impl RowBatch {
    fn push(&mut self, workspace: Uuid, kind: &str, id: &str, body: &str) {
        let mut field = |s: &str| {
            let start = self.text.len();
            self.text.push_str(s);
            start..self.text.len()
        };
        let row = [field(kind), field(id), field(body)];
        self.rows.push(row);
        self.workspaces.push(workspace);
    }

    fn decode_one(&self, i: usize) -> Decoded {
        let [k, id, b] = &self.rows[i];
        (
            self.workspaces[i],
            decode_record(
                &self.text[k.clone()],
                &self.text[id.clone()],
                &self.text[b.clone()],
            ),
        )
    }

    /// Every row decoded, on every core, in the batch's order.
    fn decode(&self) -> Vec<Decoded> {
        use rayon::prelude::*;
        (0..self.rows.len())
            .into_par_iter()
            .map(|i| self.decode_one(i))
            .collect()
    }
}

/// The load loop of both adapters: rows of `(kind, id, body)`, or with `with_workspace`
/// of `(workspace_id, kind, id, body)` of several workspaces, streamed as the database
/// sends them, decoded in batches of [`DECODE_BATCH`] on every core while the previous
/// batch goes to `sink` on this thread (no whole-workspace buffer). Records reach `sink`
/// in the order the rows came, each with its workspace (nil without `with_workspace`).
pub(crate) async fn load_rows<R, S>(
    mut rows: S,
    with_workspace: bool,
    sink: &mut (dyn FnMut(Uuid, Record) + Send),
    fail: impl Fn(sqlx::Error) -> StoreError,
) -> StoreResult<()>
where
    S: futures_util::Stream<Item = Result<R, sqlx::Error>> + Unpin,
    R: sqlx::Row,
    usize: sqlx::ColumnIndex<R>,
    for<'r> &'r str: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    use futures_util::TryStreamExt;
    let first = usize::from(with_workspace);
    let mut decoded: Vec<Decoded> = Vec::new();
    let mut put = |decoded: Vec<Decoded>| -> StoreResult<()> {
        for (w, r) in decoded {
            sink(w, r?);
        }
        Ok(())
    };
    loop {
        let mut batch = RowBatch::default();
        while batch.rows.len() < DECODE_BATCH {
            let Some(row) = rows.try_next().await.map_err(&fail)? else {
                break;
            };
            let get = |e: sqlx::Error| StoreError::Corrupt(format!("records row: {e}"));
            let workspace = if with_workspace {
                let w: &str = row.try_get(0).map_err(get)?;
                Uuid::parse_str(w)
                    .map_err(|e| StoreError::Corrupt(format!("records row's workspace: {e}")))?
            } else {
                Uuid::nil()
            };
            let kind: &str = row.try_get(first).map_err(get)?;
            let id: &str = row.try_get(first + 1).map_err(get)?;
            let body: &str = row.try_get(first + 2).map_err(get)?;
            batch.push(workspace, kind, id, body);
        }
        let last = batch.rows.len() < DECODE_BATCH;
        if last && batch.rows.len() < DECODE_HERE_BELOW {
            // A small workspace (or a small last batch): decoded here, where threads
            // would cost more than the decoding.
            put(std::mem::take(&mut decoded))?;
            return put((0..batch.rows.len()).map(|i| batch.decode_one(i)).collect());
        }
        // This batch decodes on the pool while the previous one is put in memory here.
        let previous = std::mem::take(&mut decoded);
        let (next, sunk) = std::thread::scope(|s| {
            let decoding = s.spawn(|| batch.decode());
            let sunk = put(previous);
            (decoding.join().expect("decoding does not panic"), sunk)
        });
        sunk?;
        decoded = next;
        if last {
            return put(std::mem::take(&mut decoded));
        }
    }
}

/// The standing touch markers `rows` (workspace, position, marker) of `workspaces`, in
/// their order, as both adapters read them.
pub(crate) fn touch_markers(
    workspaces: &[Uuid],
    rows: Vec<(String, i64, String)>,
) -> StoreResult<Vec<Option<actors::store::TouchMarker>>> {
    let mut standing = std::collections::HashMap::new();
    for (ws, position, text) in rows {
        let Ok(ws) = Uuid::parse_str(&ws) else {
            continue;
        };
        let marker = actors::store::TouchMarker {
            position: position as u64,
            touched: actors::store::Touched::decode(&text)?,
        };
        standing.insert(ws, marker);
    }
    Ok(workspaces.iter().map(|w| standing.remove(w)).collect())
}

/// A `commit_positions` row's position and tag, as both adapters read them.
pub(crate) fn commit_position(seq: i64, tag: &str) -> StoreResult<actors::store::CommitPosition> {
    Ok(actors::store::CommitPosition {
        seq: seq as u64,
        tag: Uuid::parse_str(tag)
            .map_err(|e| StoreError::Other(format!("a commit position's tag: {e}")))?,
    })
}

/// Rebuilds an API key from its row.
pub(crate) fn decode_key(row: KeyRow<'_>) -> StoreResult<ApiKey> {
    let id = &row.id;
    let corrupt = |what: String| StoreError::Corrupt(format!("api key {id:?}: {what}"));
    let text_uuid = |column: &str, text: &str| {
        Uuid::parse_str(text).map_err(|e| corrupt(format!("{column} {text:?}: {e}")))
    };
    Ok(ApiKey {
        workspace_id: text_uuid("workspace_id", row.workspace_id)?,
        secret_hash: row
            .secret_hash
            .try_into()
            .map_err(|_| corrupt(format!("secret_hash has {} bytes", row.secret_hash.len())))?,
        scopes: Scopes::from_csv(row.scopes).map_err(|e| corrupt(format!("scopes: {e}")))?,
        created_by: text_uuid("created_by", row.created_by)?,
        revoked: row.revoked,
        rate_limit_per_minute: row
            .rate_limit_per_minute
            .map(u32::try_from)
            .transpose()
            .map_err(|e| corrupt(format!("rate_limit_per_minute: {e}")))?,
        created_at: row
            .created_at
            .map(|t| {
                chrono::DateTime::parse_from_rfc3339(t)
                    .map(|t| t.with_timezone(&chrono::Utc))
                    .map_err(|e| corrupt(format!("created_at {t:?}: {e}")))
            })
            .transpose()?,
        // Last: the messages above name the key by it.
        id: row.id,
    })
}

/// Helpers for tests that need a real PostgreSQL.
pub mod testing {
    use sqlx::{Connection, PgConnection};
    use std::time::{SystemTime, UNIX_EPOCH};
    use tokio::sync::OnceCell;

    /// Every test schema starts with this, followed by `<unix seconds>_<random>`.
    pub const SCHEMA_PREFIX: &str = "recruitd_test_";

    /// A leftover is dropped once it is this old and no session is connected to it. The
    /// age spares a schema whose test has made it but not yet connected (or is between
    /// two stores); the session check spares test runs still going on (another
    /// developer's, or a parallel CI job on the same server).
    const LEFTOVER_AGE_SECS: u64 = 600;

    /// Cleanup runs once per process (tests may run on many runtimes; the cell is async
    /// so that concurrent first callers wait for the one sweep rather than repeat it).
    static SWEPT: OnceCell<()> = OnceCell::const_new();

    /// Creates an empty, uniquely named schema in the database of `base_url` and returns
    /// a URL whose connections use it.
    ///
    /// The URL appends `application_name=<schema>` (so that a sweep can tell which
    /// schemas have sessions) and, last, `options=-c search_path=<schema>`, which sqlx's
    /// `PgConnectOptions` (and libpq) send as the startup `options`: every unqualified
    /// table (the migrations' and sqlx's own `_sqlx_migrations`) lands in the schema.
    /// Once per process it first drops leftovers of earlier runs (see
    /// `LEFTOVER_AGE_SECS`).
    pub async fn fresh_postgres_url(base_url: &str) -> anyhow::Result<String> {
        let mut conn = PgConnection::connect(base_url).await?;
        let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
        SWEPT
            .get_or_try_init(|| async {
                sweep_leftovers(&mut conn, now).await?;
                Ok::<(), anyhow::Error>(())
            })
            .await?;
        let schema = format!("{SCHEMA_PREFIX}{now}_{}", uuid::Uuid::new_v4().simple());
        // The name is ours (prefix, digits, hex), so quoting is only belt and braces.
        sqlx::query(&format!("CREATE SCHEMA \"{schema}\""))
            .execute(&mut conn)
            .await?;
        conn.close().await?;
        let sep = if base_url.contains('?') { '&' } else { '?' };
        Ok(format!(
            "{base_url}{sep}application_name={schema}&options=-c%20search_path%3D{schema}"
        ))
    }

    /// The schema a URL from [`fresh_postgres_url`] selects.
    pub fn schema_of(url: &str) -> Option<&str> {
        url.rsplit_once("search_path%3D").map(|(_, s)| s)
    }

    pub(super) async fn sweep_leftovers(conn: &mut PgConnection, now: u64) -> anyhow::Result<()> {
        // application_name is visible in pg_stat_activity for every user's sessions.
        let names: Vec<(String, bool)> = sqlx::query_as(
            "SELECT n.nspname::text, EXISTS (SELECT 1 FROM pg_stat_activity a \
                 WHERE a.application_name = n.nspname::text) \
             FROM pg_namespace n WHERE starts_with(n.nspname::text, $1)",
        )
        .bind(SCHEMA_PREFIX)
        .fetch_all(&mut *conn)
        .await?;
        for (name, in_use) in names {
            let created = name
                .strip_prefix(SCHEMA_PREFIX)
                .and_then(|rest| rest.split('_').next())
                .and_then(|secs| secs.parse::<u64>().ok());
            // Only names of our own shape are touched; anything else is not ours.
            let Some(created) = created else { continue };
            if in_use || now.saturating_sub(created) < LEFTOVER_AGE_SECS {
                continue;
            }
            // Another process may sweep the same schema at the same moment: IF EXISTS,
            // and a failure here must not fail the test that happened to sweep.
            let drop = format!("DROP SCHEMA IF EXISTS \"{name}\" CASCADE");
            if let Err(e) = sqlx::query(&drop).execute(&mut *conn).await {
                tracing::warn!(schema = %name, error = %e, "could not drop old test schema");
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
