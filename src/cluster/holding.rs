//! Which workspaces this node holds in memory: those [`placement`] puts on it among the
//! live nodes, and, for a while, those it held before the live nodes changed.
//!
//! Each round of the writer leases (every second) also compares what this node holds
//! with where the workspaces belong:
//! - a workspace placed here and not held (a node left, or the workspace is new) is
//!   loaded (`Held::load`) beside the node's work, a few at a time;
//!   once loaded, the node reports it held and follows its writer (`follow`);
//! - a workspace held here and placed elsewhere is dropped (`Held::unload`) only once
//!   every node it is placed on reports it held and this node does not write it: until
//!   then this copy is one the workspace may need (its reads while the writer is
//!   replaced, or its next writer, see `writers::writer`).
//!
//! So a node joining takes about `replicas / N` of the holdings, loading each before
//! the node it replaces lets it go, and no workspace is ever without a loaded holder
//! while one lives.

use super::{placement, Membership, Shared};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use uuid::Uuid;

use super::writers::Held;
use std::time::Duration;

/// A node lets nothing go during its first seconds: until the leases of nodes that
/// died just before it started have passed, their reports still say they hold what
/// they held.
const UNLOAD_AFTER: Duration = Duration::from_millis(super::LEASE.as_millis() as u64 + 2000);

/// Most workspaces a node loads at once because they became placed on it (a node
/// that left hands many over together): the rest wait for the next rounds, and the
/// node's memory and cores for its own requests.
const LOADS_AT_ONCE: usize = 2;

/// Whether a node's advertised address accepts a connection now (a killed process's
/// port refuses at once; a frozen one's still accepts).
async fn reachable(advertise_url: &str) -> bool {
    let Some((_, authority)) = super::forward::address_of(advertise_url) else {
        return false;
    };
    matches!(
        tokio::time::timeout(
            Duration::from_millis(500),
            tokio::net::TcpStream::connect(&authority)
        )
        .await,
        Ok(Ok(_))
    )
}

impl Shared {
    /// Every workspace of the store (background: reads them all).
    pub(super) async fn workspace_ids(&self) -> Result<Vec<Uuid>, sqlx::Error> {
        let rows: Vec<String> = sqlx::query_scalar("SELECT workspace_id FROM workspaces")
            .fetch_all(&self.pool)
            .await?;
        Ok(rows
            .iter()
            .filter_map(|id| Uuid::parse_str(id).ok())
            .collect())
    }

    /// Per workspace, the live nodes that report it held (loaded), as of their last
    /// renewal.
    pub(super) async fn loaded_by(&self) -> Result<HashMap<Uuid, Vec<String>>, sqlx::Error> {
        let rows: Vec<(String, String)> = sqlx::query_as(
            "SELECT h.workspace_id, h.node FROM cluster_holdings h \
             JOIN cluster_nodes n ON n.name = h.node WHERE n.lease_until > now()",
        )
        .fetch_all(&self.pool)
        .await?;
        let mut by: HashMap<Uuid, Vec<String>> = HashMap::new();
        for (ws, node) in rows {
            if let Ok(ws) = Uuid::parse_str(&ws) {
                by.entry(ws).or_default().push(node);
            }
        }
        Ok(by)
    }
}

impl Membership {
    /// Whether `workspace` is placed on this node among the live nodes now (on its own,
    /// every workspace is): what a start loads. Live here means also reachable: a node
    /// killed a moment ago still holds its lease, but refuses connections, and what it
    /// held is this start's to load (a process restarted after a crash, under a name of
    /// its new port, must not leave its workspaces to its own dead predecessor).
    pub async fn placed_here(&self) -> anyhow::Result<impl Fn(Uuid) -> bool + use<>> {
        let live: Vec<String> = match &self.shared {
            Some(s) => {
                let rows = s.node_rows().await?;
                let probes = rows.into_iter().map(|n| async move {
                    let answers = n.name == self.me.name || reachable(&n.advertise_url).await;
                    answers.then_some(n.name)
                });
                futures_util::future::join_all(probes)
                    .await
                    .into_iter()
                    .flatten()
                    .collect()
            }
            None => Vec::new(),
        };
        let (me, replicas) = (self.me.name.clone(), self.me.replicas);
        Ok(move |ws: Uuid| {
            if live.is_empty() {
                return true;
            }
            let live: Vec<&str> = live.iter().map(String::as_str).collect();
            placement::holders(ws, &live, replicas).contains(&me.as_str())
        })
    }

    /// Loads what is placed here and not held, and drops what is held and placed
    /// elsewhere once its placed nodes hold it (see the module's docs).
    pub(super) fn place_holdings(
        self: &Arc<Self>,
        held: &Arc<dyn Held>,
        live: &[&str],
        loaded: &HashMap<Uuid, Vec<String>>,
        all: &[Uuid],
    ) {
        let Some(s) = &self.shared else {
            return;
        };
        let me = self.me.name.as_str();
        let known: HashSet<Uuid> = held.known().into_iter().collect();
        let mine: HashSet<Uuid> = held.held().into_iter().map(|(ws, _)| ws).collect();
        for ws in all {
            let placed = placement::holders(*ws, live, self.me.replicas);
            if placed.contains(&me) {
                let may_start = |loading: &mut HashSet<Uuid>| {
                    loading.len() < LOADS_AT_ONCE && loading.insert(*ws)
                };
                if !known.contains(ws) && may_start(&mut s.holding_changes.lock()) {
                    let (this, held, ws) = (self.clone(), held.clone(), *ws);
                    actix_web::rt::spawn(async move {
                        match held.load(ws).await {
                            Ok(()) => {
                                tracing::info!(workspace = %ws, "holds the workspace (placed here)")
                            }
                            Err(e) => {
                                tracing::warn!(workspace = %ws, error = %e, "loading a workspace placed here (tried again next round)")
                            }
                        }
                        if let Some(s) = &this.shared {
                            s.holding_changes.lock().remove(&ws);
                        }
                    });
                }
                continue;
            }
            let others_hold = !placed.is_empty()
                && placed
                    .iter()
                    .all(|n| loaded.get(ws).is_some_and(|by| by.iter().any(|b| b == n)));
            if mine.contains(ws)
                && others_hold
                && s.joined.elapsed() > UNLOAD_AFTER
                && s.fences.epoch(*ws).is_none()
                && !s.acquiring.lock().contains(ws)
                && !s.holding_changes.lock().contains(ws)
                && held.unload(*ws)
            {
                tracing::info!(workspace = %ws, holders = ?placed, "no longer holds the workspace (placed elsewhere, held there)");
            }
        }
    }
}
