//! The one commit sequence of both SQL stores. A change set is written in one
//! transaction (a commit), or in several (`Store::commit_import` of a large import, see
//! [`parts_of`]); each transaction runs the same steps in the same order, written once
//! here ([`write_part`]), while each adapter supplies its statements
//! ([`CommitStatements`]):
//!
//! 1. the batch's mark (or, in an import's earlier transactions, just the
//!    transaction's name), first, so that `Store::committed` can settle a commit whose
//!    outcome was never reported;
//! 2. the writer's fence, when the transaction moves the position (several nodes on one
//!    store: a node that no longer holds the writer lease commits nothing);
//! 3. the transaction's own settings (an import's pacing);
//! 4. the workspace's row; the upserts, then the deletes (as in `MemoryStore`: a record
//!    both upserted and deleted in one change set ends up deleted); the keys; the
//!    tombstones;
//! 5. the position, bumped (refused while a touch marker stands), with the marker of the
//!    records the commit touched, and the change log's parts at it.
//!
//! The touched records' rows follow in a transaction of their own ([`write_touched`]).

use super::sql::{failed, Sql, Value};
use super::Upsert;
use actors::entries::{Change, EncodedEntries};
use actors::model::{ApiKey, RecordKind, Workspace};
use actors::store::ChangeSet;
use actors::store::{StoreError, StoreResult};
use actors::tombstones::TombstoneChange;
use async_trait::async_trait;
use uuid::Uuid;

/// The statements of the commit sequence that both adapters bind alike, in one
/// adapter's SQL.
pub(crate) struct CommitSql {
    /// Writes a workspace's row: binds its id, name, default region.
    pub upsert_workspace: &'static str,
    /// Writes an API key's row: binds id, workspace id, secret hash, scopes,
    /// created by, revoked, rate limit per minute (or `NULL`).
    pub upsert_key: &'static str,
    /// Moves a workspace's position on by one (from 1 on its first commit) and sets its
    /// tag, a new one drawn at random (see `actors::store::CommitPosition`), and its
    /// touch marker, unless a marker stands: binds the workspace id (as stored), the
    /// tag, the marker (or `NULL`).
    pub bump_position: &'static str,
    /// Clears a workspace's touch marker standing at a position: binds the workspace id
    /// (as stored), the position.
    pub clear_touch_marker: &'static str,
}

/// What one transaction writes.
pub(crate) struct Part<'a> {
    pub workspace: Option<&'a Workspace>,
    /// In key order ([`super::in_key_order`]).
    pub upserts: &'a [Upsert<'a>],
    /// In key order ([`sorted_deletes`]).
    pub deletes: &'a [(RecordKind, &'a str)],
    pub keys: &'a [ApiKey],
    /// The batch the transaction belongs to.
    pub batch: Option<Uuid>,
    /// Whether it writes the batch's mark: the change set's last, or only, transaction.
    pub last: bool,
    /// Part of an import written in several transactions (see `Store::commit_import`).
    pub bulk: bool,
    /// Derived changes to log beside the direct ones (`ChangeSet::derived`).
    pub derived: &'a [Change],
    /// Tombstones set and cleared (`ChangeSet::tombstones`).
    pub tombstones: &'a [TombstoneChange],
    /// `ChangeSet::unlogged`: no change log parts.
    pub unlogged: bool,
    /// `ChangeSet::fresh`: none of the upserts can conflict.
    pub fresh: bool,
    /// The marker of the records the commit touched (`ChangeSet::touched`), kept with
    /// the position it moves to; their rows follow in [`write_touched`].
    pub touched: Option<&'a str>,
}

impl Part<'_> {
    /// Whether the transaction moves the workspace's position: everything but keys,
    /// which live beside the workspace (every node holds them all, and reads them
    /// afresh), is its writer's to commit.
    pub fn moves(&self) -> bool {
        self.workspace.is_some()
            || !self.upserts.is_empty()
            || !self.deletes.is_empty()
            || !self.derived.is_empty()
            || !self.tombstones.is_empty()
    }
}

/// A change set's deletes as (kind, id), in key order for the same reason as upserts
/// (see [`super::in_key_order`]).
pub(crate) fn sorted_deletes(changes: &ChangeSet) -> Vec<(RecordKind, &str)> {
    let mut deletes: Vec<(RecordKind, &str)> = changes
        .deletes
        .iter()
        .map(|(k, id)| (*k, id.as_str()))
        .collect();
    deletes.sort_unstable_by(|a, b| (a.0.as_str(), a.1).cmp(&(b.0.as_str(), b.1)));
    deletes
}

/// The transactions of `changes`: one for a commit (`size` `None`), or those of an
/// import split into runs of at most `size()` records each, asked as each transaction
/// comes ([`super::import_transactions`]).
/// The workspace's row goes with the first (a later import that failed part way leaves
/// a workspace still found and loaded), or with the last in a first import
/// (`ChangeSet::unlogged`: no server finds the workspace before all of it is in); the
/// keys, derived changes, tombstones and the mark with the last.
pub(crate) fn parts_of<'a>(
    changes: &'a ChangeSet,
    upserts: &'a [Upsert<'a>],
    deletes: &'a [(RecordKind, &'a str)],
    touched: Option<&'a str>,
    size: Option<&'a mut (dyn FnMut() -> usize + Send)>,
) -> Box<dyn Iterator<Item = Part<'a>> + Send + 'a> {
    let whole = Part {
        workspace: changes.workspace.as_ref(),
        upserts,
        deletes,
        keys: &changes.keys,
        batch: changes.batch,
        last: true,
        bulk: false,
        derived: &changes.derived,
        tombstones: &changes.tombstones,
        unlogged: changes.unlogged,
        fresh: changes.fresh,
        touched,
    };
    let Some(size) = size else {
        return Box::new(std::iter::once(whole));
    };
    // Sized as they are written: `size` may answer differently for each.
    let runs = super::import_transactions(upserts.len(), deletes.len(), size);
    Box::new(runs.map(move |tx| {
        Part {
            workspace: whole.workspace.filter(
                |_| {
                    if changes.unlogged {
                        tx.last
                    } else {
                        tx.first
                    }
                },
            ),
            upserts: &upserts[tx.upserts],
            deletes: &deletes[tx.deletes],
            keys: if tx.last { whole.keys } else { &[] },
            last: tx.last,
            bulk: true,
            derived: if tx.last { whole.derived } else { &[] },
            tombstones: if tx.last { whole.tombstones } else { &[] },
            touched: if tx.last { whole.touched } else { None },
            ..whole
        }
    }))
}

/// One open transaction of one store, with what its adapter's statements need of the
/// store (`S`): what [`CommitStatements`] is implemented for.
pub(crate) struct Statements<'c, DB: sqlx::Database, S> {
    pub tx: sqlx::Transaction<'c, DB>,
    pub store: S,
}

/// A transaction open on the database `Db`.
pub(crate) trait OnTransaction: Send {
    type Db: Sql;
    /// The transaction's connection.
    fn tx(&mut self) -> &mut <Self::Db as sqlx::Database>::Connection;
}

impl<DB: Sql, S: Send> OnTransaction for Statements<'_, DB, S> {
    type Db = DB;
    fn tx(&mut self) -> &mut DB::Connection {
        &mut self.tx
    }
}

/// The statements of [`write_part`]'s steps, on one open transaction of one store.
#[async_trait]
pub(crate) trait CommitStatements: OnTransaction {
    /// The adapter's statements that both bind alike.
    const SQL: CommitSql;

    /// Runs `sql` with `values` bound on the transaction; the rows it changed.
    async fn run(&mut self, sql: &str, values: &[Value<'_>]) -> StoreResult<u64> {
        let done = Self::Db::execute(self.tx(), sql, values).await;
        done.map_err(failed::<Self::Db>("commit"))
    }

    /// Names the transaction under its batch and, in the batch's last transaction
    /// (`last`), writes the batch's mark.
    async fn mark(&mut self, ws: &str, batch: Uuid, last: bool) -> StoreResult<()>;

    /// Refuses the transaction when this node does not hold the workspace's writer
    /// lease (a store several nodes share); nothing by default.
    async fn fence(&mut self, _workspace: Uuid, _ws: &str) -> StoreResult<()> {
        Ok(())
    }

    /// The transaction's own settings for `part` (an import's pacing); none by default.
    async fn settings(&mut self, _part: &Part<'_>) -> StoreResult<()> {
        Ok(())
    }

    async fn workspace_row(&mut self, w: &Workspace) -> StoreResult<()> {
        let id = w.id.to_string();
        let values = [
            Value::Text(&id),
            Value::MaybeText(w.name.as_deref()),
            Value::MaybeText(w.default_region.as_deref()),
        ];
        self.run(Self::SQL.upsert_workspace, &values)
            .await
            .map(drop)
    }

    /// The records, in key order; `fresh`: none is in the store yet.
    async fn upserts(&mut self, ws: &str, upserts: &[Upsert<'_>], fresh: bool) -> StoreResult<()>;

    /// The records, in key order.
    async fn deletes(&mut self, ws: &str, deletes: &[(RecordKind, &str)]) -> StoreResult<()>;

    async fn key(&mut self, k: &ApiKey) -> StoreResult<()> {
        let (workspace, scopes) = (k.workspace_id.to_string(), k.scopes.to_csv());
        let created_by = k.created_by.to_string();
        let values = [
            Value::Text(&k.id),
            Value::Text(&workspace),
            Value::Bytes(&k.secret_hash),
            Value::Text(&scopes),
            Value::Text(&created_by),
            Value::Flag(k.revoked),
            Value::MaybeNumber(k.rate_limit_per_minute.map(i64::from)),
        ];
        self.run(Self::SQL.upsert_key, &values).await.map(drop)
    }

    async fn tombstones(&mut self, ws: &str, tombstones: &[TombstoneChange]) -> StoreResult<()>;

    /// Moves the workspace's position on by one, and sets its touch marker to `touched`
    /// (`None`: no marker) — unless a marker stands: then it changes nothing and says so
    /// (`false`).
    async fn bump_position(&mut self, ws: &str, touched: Option<&str>) -> StoreResult<bool> {
        let tag = Uuid::new_v4().to_string();
        let values = [
            Value::Text(ws),
            Value::Text(&tag),
            Value::MaybeText(touched),
        ];
        Ok(self.run(Self::SQL.bump_position, &values).await? == 1)
    }

    /// Clears the workspace's touch marker if it stands at `position`; whether it did.
    async fn clear_touch_marker(&mut self, ws: &str, position: u64) -> StoreResult<bool> {
        let values = [Value::Text(ws), Value::Number(position as i64)];
        let sql = Self::SQL.clear_touch_marker;
        let done = Self::Db::execute(self.tx(), sql, &values).await;
        Ok(done.map_err(failed::<Self::Db>("storing touched rows"))? == 1)
    }

    /// The change log's parts at the position just bumped.
    async fn log_parts(
        &mut self,
        ws: &str,
        committed_at_ms: i64,
        parts: &[EncodedEntries],
    ) -> StoreResult<()>;
}

/// One transaction's steps (see the module's docs), on `tx`, which the caller opened and
/// commits.
pub(crate) async fn write_part(
    tx: &mut impl CommitStatements,
    workspace: Uuid,
    part: &Part<'_>,
) -> StoreResult<()> {
    let ws = workspace.to_string();
    if let Some(batch) = part.batch {
        tx.mark(&ws, batch, part.last).await?;
    }
    let moves = part.moves();
    if moves {
        tx.fence(workspace, &ws).await?;
    }
    tx.settings(part).await?;
    if let Some(w) = part.workspace {
        tx.workspace_row(w).await?;
    }
    if !part.upserts.is_empty() {
        tx.upserts(&ws, part.upserts, part.fresh).await?;
    }
    if !part.deletes.is_empty() {
        tx.deletes(&ws, part.deletes).await?;
    }
    for key in part.keys {
        tx.key(key).await?;
    }
    if !part.tombstones.is_empty() {
        tx.tombstones(&ws, part.tombstones).await?;
    }
    if moves {
        if !tx.bump_position(&ws, part.touched).await? {
            // The transaction is rolled back when the caller drops it.
            return Err(StoreError::TouchPending(format!(
                "workspace {workspace}: the rows its last commit touched are not stored yet"
            )));
        }
        if !part.unlogged {
            let parts = super::change_log::log_parts(
                part.upserts,
                part.deletes.iter().copied(),
                part.derived,
            );
            if !parts.is_empty() {
                tx.log_parts(&ws, actors::store::now_ms(), &parts).await?;
            }
        }
    }
    Ok(())
}

/// The transaction after a commit that touched records (`ChangeSet::touched`, see
/// `actors::store::Touched`), on `tx`, which the caller opened (with no flush of its own)
/// and commits: the writer's fence, the marker cleared if it stands at `position`, and
/// then, only if it did, the touched records' rows. Whether the marker stood: when it
/// did not (already stored, or another commit's), nothing is written.
pub(crate) async fn write_touched(
    tx: &mut impl CommitStatements,
    workspace: Uuid,
    position: u64,
    upserts: &[Upsert<'_>],
) -> StoreResult<bool> {
    let ws = workspace.to_string();
    tx.fence(workspace, &ws).await?;
    if !tx.clear_touch_marker(&ws, position).await? {
        return Ok(false);
    }
    if !upserts.is_empty() {
        tx.upserts(&ws, upserts, false).await?;
    }
    Ok(true)
}
