//! Where a request for a workspace is answered: here, when this node writes the
//! workspace; otherwise at its writer ([`Route::To`]), reached as the directory of live
//! nodes says (advertised URL, pinned certificate), and trusted back by the secret this
//! start presents.
//!
//! The directory is read with each round of the writer leases (every second), and once
//! more when a request names a node it does not know yet (a node that has just joined).

use super::forward::{sha256_hex, Peer};
use super::{Membership, Shared};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use uuid::Uuid;

/// The path on which a node tells another that the API keys changed (node to node
/// only: no client's request reaches it).
pub const KEYS_CHANGED: &str = "/cluster/v1/keys-changed";

/// The path on which a node passes an API key request of its admin interface to the
/// workspace's writer, when it does not hold the workspace (node to node only).
pub const PASSED_KEYS: &str = "/cluster/v1/admin/keys";

/// The path on which a node passes an import of its admin interface to the
/// workspace's writer (node to node only).
pub const PASSED_IMPORT: &str = "/cluster/v1/admin/import";

/// How long an admin request waits for its workspace to have a writer.
const WAIT_FOR_WRITER: Duration = Duration::from_secs(10);

/// Why an admin request could not be passed to the workspace's writer.
#[derive(Debug, thiserror::Error)]
pub enum PassFailure {
    #[error("the workspace has no writer now (one is being replaced); retry")]
    NoWriter,
    #[error("{0}")]
    Forward(#[from] super::forward::Failure),
}

/// Where a workspace's requests are answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// This node writes the workspace (or is the whole cluster).
    Here,
    /// Another live node writes it.
    To(Arc<Peer>),
    /// No live node holds its lease now (a writer is being replaced).
    Nobody,
}

/// The live nodes and the workspaces' writers, as of the last read.
#[derive(Default)]
pub struct Directory {
    /// By name: how to reach the node, and the SHA-256 of its start's secret.
    nodes: HashMap<String, (Arc<Peer>, String)>,
    /// By workspace: the node whose lease holds.
    writers: HashMap<Uuid, String>,
    /// By workspace: the live nodes that report it loaded.
    holders: HashMap<Uuid, Vec<String>>,
    /// When it was read (`None`: never).
    read_at: Option<Instant>,
}

/// A live node's row, as the directory reads it.
pub(super) struct NodeRow {
    pub name: String,
    pub advertise_url: String,
    pub cert_sha256: String,
    pub secret_sha256: String,
}

impl Directory {
    pub(super) fn new(
        nodes: &[NodeRow],
        writers: impl IntoIterator<Item = (Uuid, String)>,
        holders: HashMap<Uuid, Vec<String>>,
    ) -> Directory {
        Directory {
            nodes: nodes
                .iter()
                .filter_map(|n| {
                    let peer = Peer::new(n.name.clone(), &n.advertise_url, &n.cert_sha256)?;
                    Some((n.name.clone(), (Arc::new(peer), n.secret_sha256.clone())))
                })
                .collect(),
            writers: writers.into_iter().collect(),
            holders,
            read_at: Some(Instant::now()),
        }
    }
}

impl Shared {
    /// The live nodes' rows, in name order.
    pub(super) async fn node_rows(&self) -> Result<Vec<NodeRow>, sqlx::Error> {
        let rows: Vec<(String, String, String, String)> = sqlx::query_as(
            "SELECT name, advertise_url, cert_sha256, secret_sha256 FROM cluster_nodes \
             WHERE lease_until > now() ORDER BY name",
        )
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .into_iter()
            .map(
                |(name, advertise_url, cert_sha256, secret_sha256)| NodeRow {
                    name,
                    advertise_url,
                    cert_sha256,
                    secret_sha256,
                },
            )
            .collect())
    }
}

impl Membership {
    /// Where requests for `workspace` are answered now.
    pub fn route(&self, workspace: Uuid) -> Route {
        let Some(s) = &self.shared else {
            return Route::Here;
        };
        // A node handing its leases over takes no more requests as the writer: they
        // wait for the next one (its own commits in flight finish meanwhile).
        if s.fences.epoch(workspace).is_some()
            && !s.handing_over.load(std::sync::atomic::Ordering::SeqCst)
        {
            return Route::Here;
        }
        let directory = s.directory.load();
        match directory.writers.get(&workspace) {
            Some(name) if *name != self.me.name => match directory.nodes.get(name) {
                Some((peer, _)) => Route::To(peer.clone()),
                None => Route::Nobody,
            },
            _ => Route::Nobody,
        }
    }

    /// Passes an admin request (`target`: [`PASSED_KEYS`], [`PASSED_IMPORT`]) for
    /// `workspace` to its writer, waiting up to 10 s for one while it is replaced, and
    /// returns the writer's answer. `None` when it is this node's to do: alone, this
    /// node writes the workspace, or no node holds or writes it (a new workspace).
    pub async fn pass_to_writer(
        &self,
        workspace: Uuid,
        target: &str,
        body: bytes::Bytes,
        request_id: &str,
    ) -> Option<Result<super::forward::Answer, PassFailure>> {
        let s = self.shared.as_ref()?;
        if !self.has_peers() {
            return None;
        }
        let deadline = Instant::now() + WAIT_FOR_WRITER;
        loop {
            let peer = match self.route(workspace) {
                Route::Here => return None,
                Route::To(peer) => Some(peer),
                Route::Nobody => {
                    let directory = s.directory.load();
                    if !directory.holders.contains_key(&workspace) {
                        return None;
                    }
                    None
                }
            };
            if let Some(peer) = peer {
                let request = super::forward::Outgoing {
                    method: "POST".into(),
                    target: target.into(),
                    headers: vec![
                        (
                            super::forward::NODE.into(),
                            self.me.name.clone().into_bytes(),
                        ),
                        (
                            super::forward::NODE_SECRET.into(),
                            s.secret.clone().into_bytes(),
                        ),
                        (
                            super::forward::REQUEST_ID.into(),
                            request_id.as_bytes().to_vec(),
                        ),
                        ("content-type".into(), b"application/json".to_vec()),
                    ],
                    body: body.clone(),
                };
                match super::forward::send(&peer, request).await {
                    // It no longer writes the workspace: look again.
                    Ok(a)
                        if a.status == 421
                            && a.headers.iter().any(|(n, _)| n == super::forward::NOT_HERE) => {}
                    Ok(answer) => return Some(Ok(answer)),
                    // Not sent: the next writer may be reachable.
                    Err(super::forward::Failure::Unreachable(..)) => {}
                    Err(e) => return Some(Err(e.into())),
                }
            }
            if Instant::now() >= deadline {
                return Some(Err(PassFailure::NoWriter));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            self.read_directory().await;
        }
    }

    /// A live node other than this one (and those named in `skip`) that holds
    /// `workspace` loaded, the first in name order: where a read goes that this node
    /// cannot answer from a copy of its own while the workspace has no writer.
    pub fn holder_of(&self, workspace: Uuid, skip: &[String]) -> Option<Arc<Peer>> {
        let s = self.shared.as_ref()?;
        let directory = s.directory.load();
        let mut holders: Vec<&String> = directory.holders.get(&workspace)?.iter().collect();
        holders.sort();
        holders
            .into_iter()
            .filter(|n| **n != self.me.name && !skip.contains(n))
            .find_map(|n| directory.nodes.get(n).map(|(peer, _)| peer.clone()))
    }

    /// Whether the directory names a live node other than this one (never, on its
    /// own): until it does, every request is this node's to answer.
    pub fn has_peers(&self) -> bool {
        self.shared.as_ref().is_some_and(|s| {
            s.directory
                .load()
                .nodes
                .keys()
                .any(|name| *name != self.me.name)
        })
    }

    /// What this node presents to others: its name and this start's secret (`None` on
    /// its own).
    pub fn credentials(&self) -> Option<(&str, &str)> {
        let s = self.shared.as_ref()?;
        Some((self.me.name.as_str(), s.secret.as_str()))
    }

    /// Whether `secret` is the secret of the live node `name` (the directory is read
    /// again first when it does not know the node yet).
    pub async fn is_node(&self, name: &str, secret: &str) -> bool {
        let Some(s) = &self.shared else {
            return false;
        };
        let presented = sha256_hex(secret.as_bytes());
        let matches = |d: &Directory| {
            d.nodes.get(name).map(|(_, hash)| {
                bool::from(subtle::ConstantTimeEq::ct_eq(
                    hash.as_bytes(),
                    presented.as_bytes(),
                ))
            })
        };
        if let Some(known) = matches(&s.directory.load()) {
            return known;
        }
        self.read_directory().await;
        matches(&s.directory.load()).unwrap_or(false)
    }

    /// Tells every other live node to read the API keys afresh (a key was made or
    /// revoked here), and waits for their answers: so a revoked key is refused on every
    /// node from the next request on. The nodes that did not confirm it (dead, or
    /// unreachable), by name.
    pub async fn tell_keys_changed(&self) -> Vec<String> {
        let Some(s) = &self.shared else {
            return Vec::new();
        };
        self.read_directory().await;
        let directory = s.directory.load();
        let told = directory
            .nodes
            .iter()
            .filter(|(name, _)| **name != self.me.name)
            .map(|(_, (peer, _))| {
                let request = super::forward::Outgoing {
                    method: "POST".into(),
                    target: KEYS_CHANGED.into(),
                    headers: vec![
                        (super::forward::NODE.into(), self.me.name.clone().into_bytes()),
                        (super::forward::NODE_SECRET.into(), s.secret.clone().into_bytes()),
                    ],
                    body: Default::default(),
                };
                async move {
                    match super::forward::send(peer, request).await {
                        Ok(a) if a.status == 204 => None,
                        Ok(a) => {
                            tracing::warn!(node = %peer.name, status = a.status, "a node did not take the changed keys");
                            Some(peer.name.clone())
                        }
                        Err(e) => {
                            tracing::warn!(node = %peer.name, error = %e, "telling a node the keys changed");
                            Some(peer.name.clone())
                        }
                    }
                }
            });
        futures_util::future::join_all(told)
            .await
            .into_iter()
            .flatten()
            .collect()
    }

    /// Reads the directory afresh unless it was read less than `age` ago: a request
    /// that finds no writer for its workspace (this node's lease passed by its clock,
    /// say, as it woke from a stop) looks again before it answers from this node's copy.
    /// Requests that ask together share one read.
    pub async fn read_directory_if_older(&self, age: Duration) {
        let Some(s) = &self.shared else {
            return;
        };
        let fresh = |s: &Shared| {
            s.directory
                .load()
                .read_at
                .is_some_and(|at| at.elapsed() < age)
        };
        if fresh(s) {
            return;
        }
        let _reading = s.directory_read.lock().await;
        if !fresh(s) {
            self.read_directory().await;
        }
    }

    /// Reads the directory afresh (on its own, there is none to read).
    pub async fn read_directory(&self) {
        let Some(s) = &self.shared else {
            return;
        };
        let read = async {
            let nodes = s.node_rows().await?;
            let leases = s.leases().await?;
            let loaded = s.loaded_by().await?;
            anyhow::Ok((nodes, leases, loaded))
        };
        match read.await {
            Ok((nodes, leases, loaded)) => s.publish_directory(&nodes, &leases, &loaded),
            Err(e) => tracing::warn!(error = %e, "reading the cluster's directory"),
        }
    }
}

impl Shared {
    /// Publishes what a read of the nodes and leases found.
    pub(super) fn publish_directory(
        &self,
        nodes: &[NodeRow],
        leases: &HashMap<Uuid, super::writers::Lease>,
        loaded: &HashMap<Uuid, Vec<String>>,
    ) {
        let writers = leases
            .iter()
            .filter(|(_, l)| l.holds)
            .map(|(ws, l)| (*ws, l.holder.clone()));
        self.directory
            .store(Arc::new(Directory::new(nodes, writers, loaded.clone())));
    }
}
