//! Writer leases: which node commits each workspace.
//!
//! Every node decides alone, from the same rows, who should write each workspace it
//! holds: the holder of the workspace's lease while that lease holds, its node is alive
//! and still one of the workspace's holders by [`placement`]; otherwise the first of
//! those holders. A writer stays while it can, so a node joining moves only the
//! workspaces whose holders it changes.
//!
//! - The node that should write a workspace and does not hold its lease takes it once
//!   the old lease has passed or its holder's start is gone (`take`), then brings its
//!   copy up to the store's position before its first commit (`Held::reload` when it
//!   is behind: the old writer committed since it loaded), and only then holds it in
//!   [`Fences`], which its commits are checked against (`crate::store::fence`).
//! - A node that holds a lease it should not (the workspace's holders changed) gives
//!   it up: its commits stop at once, and the new writer takes it on its next round.
//! - Leases are renewed with the node's own lease (`Membership::renew`); what a
//!   renewal finds still held is what [`Fences`] keeps.

use super::{placement, Holding, Membership, Shared, LEASE};
use crate::store::fence::Fences;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;
use uuid::Uuid;

/// What the cluster needs of the workspaces a node holds in memory.
#[async_trait::async_trait]
pub trait Held: Send + Sync + 'static {
    /// Workspaces held and loaded, with the commit position each stands at.
    fn held(&self) -> Vec<Holding>;
    /// Workspaces known to this node but still loading.
    fn loading(&self) -> Vec<Uuid>;
    /// Replaces the workspace's copy with one read from the store now.
    async fn reload(&self, workspace: Uuid) -> anyhow::Result<()>;
    /// The store's commit position of the workspace (`Store::position`'s `seq`).
    async fn store_position(&self, workspace: Uuid) -> anyhow::Result<u64>;
    /// Brings the workspace's copy up to the store's commits (another node writes it),
    /// from the change log, or by loading it afresh when the log cannot.
    async fn follow(&self, workspace: Uuid) -> anyhow::Result<()>;
    /// Workspaces this node knows, loaded or loading.
    fn known(&self) -> Vec<Uuid>;
    /// Loads a workspace of the store this node does not hold yet.
    async fn load(&self, workspace: Uuid) -> anyhow::Result<()>;
    /// Lets a held workspace go; whether it was held.
    fn unload(&self, workspace: Uuid) -> bool;
}

/// A workspace's lease as the store has it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    pub holder: String,
    pub epoch: u64,
    /// Not passed, and held by a start of its node that is alive.
    pub holds: bool,
}

impl Shared {
    /// Every lease, and whether it still holds (background: reads all workspaces).
    pub(super) async fn leases(&self) -> Result<HashMap<Uuid, Lease>, sqlx::Error> {
        let rows: Vec<(String, String, i64, bool)> = sqlx::query_as(
            "SELECT l.workspace_id, l.holder, l.epoch, l.lease_until > now() AND EXISTS ( \
                 SELECT 1 FROM cluster_nodes n WHERE n.name = l.holder \
                 AND n.incarnation = l.incarnation AND n.lease_until > now()) \
             FROM workspace_leases l",
        )
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .into_iter()
            .filter_map(|(ws, holder, epoch, holds)| {
                Some((
                    Uuid::parse_str(&ws).ok()?,
                    Lease {
                        holder,
                        epoch: epoch as u64,
                        holds,
                    },
                ))
            })
            .collect())
    }

    /// Takes the workspace's lease for this start, or confirms it holds it: the epoch
    /// held and a moment before the transaction that took it began (its lease runs from
    /// then by this node's clock), or `None` while another node's lease holds. Deleting the old row waits
    /// for the commits that checked it (they lock it), and gives up after a while (a
    /// frozen writer's transaction is ended by the store, see `crate::store::postgres`).
    async fn take(
        &self,
        fences: &Fences,
        workspace: Uuid,
    ) -> Result<Option<(u64, Instant)>, sqlx::Error> {
        let ws = workspace.to_string();
        let lease_ms = LEASE.as_millis() as i64;
        let began = Instant::now();
        let mut tx = self.pool.begin().await?;
        sqlx::query("SET LOCAL lock_timeout = '2s'")
            .execute(&mut *tx)
            .await?;
        let mine: Option<i64> = sqlx::query_scalar(
            "UPDATE workspace_leases SET lease_until = now() + $4 * interval '1 millisecond' \
             WHERE workspace_id = $1 AND holder = $2 AND incarnation = $3 RETURNING epoch",
        )
        .bind(&ws)
        .bind(&fences.node)
        .bind(&fences.incarnation)
        .bind(lease_ms)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some(epoch) = mine {
            tx.commit().await?;
            return Ok(Some((epoch as u64, began)));
        }
        // The conditions again in the DELETE itself: after waiting for the row's
        // lockers it checks the row as it then stands (a renewal in between keeps it).
        let old: Option<i64> = sqlx::query_scalar(
            "DELETE FROM workspace_leases l WHERE l.workspace_id = $1 \
             AND (l.lease_until < now() OR NOT EXISTS ( \
                 SELECT 1 FROM cluster_nodes n WHERE n.name = l.holder \
                 AND n.incarnation = l.incarnation AND n.lease_until > now())) \
             RETURNING l.epoch",
        )
        .bind(&ws)
        .fetch_optional(&mut *tx)
        .await?;
        let epoch = match old {
            Some(old) => old + 1,
            None => {
                let exists: bool = sqlx::query_scalar(
                    "SELECT EXISTS (SELECT 1 FROM workspace_leases WHERE workspace_id = $1)",
                )
                .bind(&ws)
                .fetch_one(&mut *tx)
                .await?;
                if exists {
                    tx.rollback().await?;
                    return Ok(None);
                }
                1
            }
        };
        let taken: Option<i64> = sqlx::query_scalar(
            "INSERT INTO workspace_leases (workspace_id, holder, incarnation, epoch, lease_until) \
             VALUES ($1, $2, $3, $4, now() + $5 * interval '1 millisecond') \
             ON CONFLICT (workspace_id) DO NOTHING RETURNING epoch",
        )
        .bind(&ws)
        .bind(&fences.node)
        .bind(&fences.incarnation)
        .bind(epoch)
        .bind(lease_ms)
        .fetch_optional(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(taken.map(|e| (e as u64, began)))
    }

    /// Gives the workspace's lease up: it has passed for whoever takes it next, and no
    /// renewal of this start's leases extends it again (its incarnation is cleared). The
    /// row stays, so epochs only ever grow.
    async fn release(&self, fences: &Fences, workspace: Uuid) -> Result<(), sqlx::Error> {
        sqlx::query(
            "UPDATE workspace_leases SET lease_until = now() - interval '1 millisecond', \
             incarnation = '' WHERE workspace_id = $1 AND holder = $2 AND incarnation = $3",
        )
        .bind(workspace.to_string())
        .bind(&fences.node)
        .bind(&fences.incarnation)
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}

/// Which node should write `workspace`: the holder of its lease while the lease holds
/// and it is one of the workspace's holders among `live` (or none of those has the
/// workspace loaded yet: it stays until one has); otherwise the first holder that has
/// it loaded, or any live node that has (a holder still loading it cannot write), or
/// the first holder. `loaded` names the live nodes that report the workspace loaded.
pub fn writer<'a>(
    workspace: Uuid,
    live: &[&'a str],
    replicas: usize,
    lease: Option<&'a Lease>,
    loaded: &[String],
) -> Option<&'a str> {
    let holders = placement::holders(workspace, live, replicas);
    let has_it = |n: &str| loaded.iter().any(|l| l == n);
    if let Some(l) = lease.filter(|l| l.holds) {
        if holders.contains(&l.holder.as_str()) || !holders.iter().any(|h| has_it(h)) {
            return Some(l.holder.as_str());
        }
    }
    let ranked = placement::holders(workspace, live, live.len());
    holders
        .iter()
        .copied()
        .find(|h| has_it(h))
        .or_else(|| ranked.iter().copied().find(|n| has_it(n)))
        .or_else(|| holders.first().copied())
}

impl Membership {
    /// One round of the writer leases (see the module's docs): takes the leases this
    /// node should hold and gives up those it should not. At start (`starting`), before
    /// any workspace loads, it takes them for the workspaces still loading too (their
    /// loads read the store after the lease is held) and waits for every take; later,
    /// takes run beside the node's other work (a copy that is behind reloads first).
    pub async fn place_writers(self: &Arc<Self>, held: &Arc<dyn Held>, starting: bool) {
        let Some(s) = &self.shared else {
            return;
        };
        if self.handing_over() {
            // Stopping: the directory still matters (requests are passed on), the
            // leases and holdings no longer do.
            self.read_directory().await;
            return;
        }
        let round = async {
            let nodes = s.node_rows().await?;
            let leases = s.leases().await?;
            let loaded = s.loaded_by().await?;
            let all = if starting {
                Vec::new()
            } else {
                s.workspace_ids().await?
            };
            anyhow::Ok((nodes, leases, loaded, all))
        };
        let (nodes, leases, loaded, all) = match round.await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "reading the writer leases");
                return;
            }
        };
        s.publish_directory(&nodes, &leases, &loaded);
        let live: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
        if !live.contains(&self.me.name.as_str()) {
            // This node's own lease has passed (its renewals do not commit: the store
            // stalls, or another start took its name): it decides nothing on a view
            // without itself, which would have it let go of everything.
            return;
        }
        if !starting {
            self.place_holdings(held, &live, &loaded, &all);
        }
        let me = self.me.name.as_str();
        let none = Vec::new();
        let mut wanted: Vec<(Uuid, Option<u64>)> = held
            .held()
            .into_iter()
            .map(|(ws, position)| (ws, Some(position)))
            .collect();
        if starting {
            wanted.extend(held.loading().into_iter().map(|ws| (ws, None)));
        }
        let mut takes = Vec::new();
        for (ws, position) in wanted {
            let has_it = loaded.get(&ws).unwrap_or(&none);
            let should = writer(ws, &live, self.me.replicas, leases.get(&ws), has_it) == Some(me);
            let holds = s.fences.epoch(ws).is_some();
            if should && !holds {
                if s.acquiring.lock().insert(ws) {
                    takes.push(self.clone().acquire(held.clone(), ws, position));
                }
            } else if !should && holds {
                s.fences.drop_lease(ws);
                match s.release(&s.fences, ws).await {
                    Ok(()) => tracing::info!(workspace = %ws, "gave up the writer lease"),
                    Err(e) => {
                        tracing::warn!(workspace = %ws, error = %e, "giving up the writer lease (it will pass)")
                    }
                }
            }
        }
        if starting {
            futures_util::future::join_all(takes).await;
        } else {
            for take in takes {
                actix_web::rt::spawn(take);
            }
        }
    }

    /// Takes the workspace's lease, brings the copy at `position` (`None`: loading, so
    /// current once loaded) up to the store's, and holds it.
    async fn acquire(self: Arc<Self>, held: Arc<dyn Held>, ws: Uuid, position: Option<u64>) {
        let Some(s) = &self.shared else {
            return;
        };
        let outcome = async {
            let Some((epoch, began)) = s.take(&s.fences, ws).await? else {
                return anyhow::Ok(None);
            };
            if let Some(position) = position {
                let now = held.store_position(ws).await?;
                if now != position {
                    tracing::info!(workspace = %ws, held = position, store = now, "the copy is behind the store: reloading it before writing");
                    held.reload(ws).await?;
                }
            }
            // The keys' budgets go on from what the previous writer counted.
            self.merge_budgets(ws).await?;
            s.fences.hold(ws, epoch, began);
            Ok(Some(epoch))
        }
        .await;
        s.acquiring.lock().remove(&ws);
        match outcome {
            Ok(Some(epoch)) => tracing::info!(workspace = %ws, epoch, "took the writer lease"),
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(workspace = %ws, error = %e, "taking the writer lease (tried again next round)")
            }
        }
    }
}

/// The leases a renewal found this start still holds, by workspace.
pub(super) async fn renew_leases(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    fences: &Fences,
) -> Result<HashMap<Uuid, u64>, sqlx::Error> {
    let rows: Vec<(String, i64)> = sqlx::query_as(
        "UPDATE workspace_leases SET lease_until = now() + $3 * interval '1 millisecond' \
         WHERE holder = $1 AND incarnation = $2 RETURNING workspace_id, epoch",
    )
    .bind(&fences.node)
    .bind(&fences.incarnation)
    .bind(LEASE.as_millis() as i64)
    .fetch_all(&mut **tx)
    .await?;
    Ok(rows
        .into_iter()
        .filter_map(|(ws, e)| Some((Uuid::parse_str(&ws).ok()?, e as u64)))
        .collect())
}
