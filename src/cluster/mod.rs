//! Several nodes on one PostgreSQL: the cluster.
//!
//! Every `serve` started on the same PostgreSQL store is a node of one cluster; the
//! store is the one source of truth, and what the nodes agree on are its rows and
//! transactions (no consensus of their own). The embedded SQLite store is single-node
//! (its store lock refuses a second server): there, the node is the whole cluster
//! ([`solo`]).
//!
//! The rooms, each one concern:
//! - [`port`]: what the cluster keeps in the store (the SQL is `crate::store::cluster`).
//! - [`directory`]: the live nodes, the writer leases and the loaded copies as this node
//!   last read them; [`placement`]: which nodes a workspace belongs on (rendezvous).
//! - [`rounds`]: once a second (or when told), a node renews its row (and so every
//!   lease it holds), reports its copies, reads what changed, and carries out what the
//!   directory says: loads what is placed here, lets go of what is held elsewhere,
//!   takes the leases it should hold and hands over those it should not
//!   ([`leases`]: taking, catching up, handing over, claiming for an import).
//! - [`follow`]: copies this node holds and does not write follow the writer's commits.
//! - [`router`]: where a workspace's request is answered (a pure decision), and
//!   [`relay`]: passing it there, node to node over HTTPS ([`forward`]: the client).
//! - [`budgets`]: a key's budget goes on at the next writer; [`signers`]: the nodes'
//!   public keys.

pub mod budgets;
pub mod directory;
pub mod follow;
pub mod forward;
pub mod leases;
pub mod placement;
pub mod port;
pub mod relay;
pub mod rounds;
pub mod router;
pub mod signers;
pub mod solo;

use crate::store::fence::Fences;
use directory::Directory;
use port::{ClusterStore, Me};
use serde::Serialize;
use sha2::Digest;
use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

/// How long a node's row (and so every lease it holds) stays alive without a renewal.
pub const LEASE: Duration = Duration::from_secs(5);

/// How often a node renews its row and runs a round.
pub const RENEW_EVERY: Duration = Duration::from_secs(1);

/// `--replicas`' default.
pub const DEFAULT_REPLICAS: usize = 2;

/// Longest node name.
const MAX_NAME: usize = 200;

/// Who this node is in the cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    /// Unique within the cluster (`--node-name`).
    pub name: String,
    /// How other nodes reach this node's API (`--advertise-url`).
    pub advertise_url: String,
    /// How many nodes hold each workspace (`--replicas`).
    pub replicas: usize,
}

impl Identity {
    /// The identity `--node-name`, `--advertise-url` and `--replicas` give, for a node
    /// whose API is bound to `api`: by default `<hostname>:<port>` and `https://<api>`.
    pub fn new(
        name: Option<String>,
        advertise_url: Option<String>,
        replicas: usize,
        api: SocketAddr,
    ) -> anyhow::Result<Identity> {
        let name = name.unwrap_or_else(|| format!("{}:{}", hostname(), api.port()));
        if name.is_empty() || name.len() > MAX_NAME || name.chars().any(char::is_control) {
            anyhow::bail!(
                "--node-name {name:?} must be 1 to {MAX_NAME} bytes without control characters"
            );
        }
        let advertise_url = advertise_url.unwrap_or_else(|| format!("https://{api}"));
        let rest = advertise_url
            .strip_prefix("https://")
            .or_else(|| advertise_url.strip_prefix("http://"));
        if rest.is_none_or(|r| r.is_empty() || r.contains(['?', '#', ' '])) {
            anyhow::bail!(
                "--advertise-url {advertise_url:?} must be an http(s) URL without query or fragment"
            );
        }
        if replicas == 0 {
            anyhow::bail!("--replicas must be at least 1");
        }
        Ok(Identity {
            name,
            advertise_url: advertise_url.trim_end_matches('/').to_string(),
            replicas,
        })
    }
}

/// This machine's host name, or `localhost` when it has none to give.
fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname writes at most that.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    match std::str::from_utf8(&buf[..end]) {
        Ok(h) if rc == 0 && !h.is_empty() => h.to_string(),
        _ => "localhost".to_string(),
    }
}

/// A node as the cluster view shows it.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Node {
    pub name: String,
    pub advertise_url: String,
    pub alive: bool,
    pub workspaces_held: usize,
    pub workspaces_owned: usize,
    /// The build it runs (`null`: an earlier build, which does not say).
    pub version: Option<String>,
    /// How long ago it last renewed its lease, by the store's clock: past the lease
    /// (`LEASE`) it is dead, whatever its session.
    pub renewed_ms_ago: Option<u64>,
}

/// A workspace as the cluster view shows it.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct HeldWorkspace {
    pub id: Uuid,
    /// The node that writes it: the one live holder of its lease, while one holds it.
    pub owner: Option<String>,
    pub holders: Vec<String>,
    /// Per holder, how far behind the store's last commit it stands (0: up to date).
    pub lag_ms: std::collections::BTreeMap<String, u64>,
    /// Per holder, the commit position its copy stands at, as it last reported it.
    pub positions: std::collections::BTreeMap<String, u64>,
}

/// The cluster as one node sees it (`GET /admin/v1/cluster`).
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct ClusterView {
    pub node: String,
    pub nodes: Vec<Node>,
    pub workspaces: Vec<HeldWorkspace>,
}

/// A workspace this node holds, and the commit position its copy stands at.
pub type Holding = (Uuid, u64);

/// This node's membership (see the module's docs): who it is, what it holds, and the
/// directory it routes by.
pub struct Membership {
    me: Identity,
    /// This start's row, as the port writes it.
    row: Me,
    store: Arc<dyn ClusterStore>,
    /// The writer leases this start holds (its store checks every commit against them).
    fences: Arc<Fences>,
    /// What this start presents to other nodes (hex); its SHA-256 is in its row.
    secret: String,
    /// The directory, as last read: what requests are routed by.
    directory: arc_swap::ArcSwap<Directory>,
    /// One directory read at a time (rounds, and requests that must look again).
    reading: tokio::sync::Mutex<()>,
    /// Workspaces whose lease is being taken or given up now (one at a time each).
    busy: parking_lot::Mutex<HashSet<Uuid>>,
    /// Workspaces whose leases this node is handing over: no longer answered here as
    /// their writer, while the writes already passed to their actors commit under the
    /// lease still held.
    leaving: parking_lot::Mutex<HashSet<Uuid>>,
    /// Wakes the rounds before their time (a lease handed to this node, a new
    /// workspace found, a node named that the directory does not know yet).
    wake: tokio::sync::Notify,
    /// When a name the directory does not know last woke the rounds (milliseconds since
    /// `joined`): at most once a [`RENEW_EVERY`], so that headers sent by anyone cost
    /// no more rounds than the timer runs.
    unknown_name_woke: std::sync::atomic::AtomicU64,
    /// The rounds' own state (`rounds`).
    rounds: tokio::sync::Mutex<rounds::RoundState>,
    /// Held while a round runs: rounds never overlap.
    round_running: tokio::sync::Mutex<()>,
    /// Set once the first round after the start's loads has run (see `settle`).
    settled: AtomicBool,
    /// Set while another start holds this node's name (this one was stopped past its
    /// lease): logged once, cleared when the name is back.
    lost: AtomicBool,
    /// Set once this node has left (or tried to).
    left: AtomicBool,
    /// Set when this node starts to leave: its renewals and rounds stop, so that a node
    /// that has left never takes its name or a lease again (a process may live on after
    /// its server stopped: tests, or a slow exit).
    leaving_cluster: AtomicBool,
    /// Set once this node has started handing its leases over (it is stopping): it
    /// takes none again, loads nothing more, and lets nothing go.
    handing_over: AtomicBool,
    /// When this node joined.
    joined: std::time::Instant,
    /// What seals this node's cursors, feed tokens and download URLs, and learns the
    /// other nodes' public keys (`actors::signing`; published through the port).
    signer: Arc<actors::signing::Signer>,
    /// Held while the public keys are read on demand; when they last were.
    signers_read: tokio::sync::Mutex<Option<std::time::Instant>>,
    /// The node's per-key limiter, once the server shares it ([`budgets`]).
    budgets: std::sync::OnceLock<Arc<dyn budgets::Budgets>>,
    /// What the node presents as a TLS client to the others (see
    /// [`forward::ClientIdentity`]).
    identity: Option<forward::ClientIdentity>,
}

/// How long a start waits for a stopped node's lease on its name to pass.
const NAME_WAIT: Duration = Duration::from_millis(LEASE.as_millis() as u64 + 1000);

impl Membership {
    /// The fences of a node that will join as `me`: what its store checks commits
    /// against, and whose incarnation its membership is.
    pub fn fences_for(me: &Identity) -> Arc<Fences> {
        Fences::new(me.name.clone(), Uuid::new_v4().to_string(), LEASE)
    }

    /// A node alone on its store for good (SQLite): the whole cluster.
    pub async fn alone(me: Identity, signer: Arc<actors::signing::Signer>) -> Arc<Membership> {
        let fences = Self::fences_for(&me);
        let m = Self::join(
            Arc::new(solo::Solo::default()),
            me,
            fences,
            String::new(),
            signer,
            None,
        )
        .await
        .expect("a node alone joins its own cluster");
        m.settled.store(true, Ordering::Release);
        m
    }

    /// Joins the cluster of `store` as the start `fences` names (see
    /// [`Membership::fences_for`]). A live node of the same name is waited for up to its
    /// lease, then refused. `cert_sha256` is the SHA-256 (hex) of the node's TLS
    /// certificate, which other nodes pin; `signer` seals what the node hands out, and
    /// its public key is published for the other nodes to check those seals with.
    pub async fn join(
        store: Arc<dyn ClusterStore>,
        me: Identity,
        fences: Arc<Fences>,
        cert_sha256: String,
        signer: Arc<actors::signing::Signer>,
        identity: Option<forward::ClientIdentity>,
    ) -> anyhow::Result<Arc<Membership>> {
        let secret = forward::hex(&rand::random::<[u8; 32]>());
        let row = Me {
            name: me.name.clone(),
            advertise_url: me.advertise_url.clone(),
            incarnation: fences.incarnation.clone(),
            cert_sha256,
            secret_sha256: forward::sha256_hex(secret.as_bytes()),
        };
        let deadline = tokio::time::Instant::now() + NAME_WAIT;
        loop {
            let began = std::time::Instant::now();
            if store.take_name(&row, LEASE.as_millis() as u64).await? {
                fences.renewed(began);
                break;
            }
            if tokio::time::Instant::now() >= deadline {
                let holder = store.holder_of_name(&me.name).await?;
                anyhow::bail!(
                    "node name {:?} is held by a running node (advertising {}): give this node \
                     another --node-name, or stop that one",
                    me.name,
                    holder.unwrap_or_else(|| "?".into())
                );
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        let m = Arc::new(Membership {
            me,
            row,
            store,
            fences,
            secret,
            directory: Default::default(),
            reading: Default::default(),
            busy: Default::default(),
            leaving: Default::default(),
            wake: Default::default(),
            unknown_name_woke: Default::default(),
            rounds: Default::default(),
            round_running: Default::default(),
            settled: AtomicBool::new(false),
            lost: AtomicBool::new(false),
            left: AtomicBool::new(false),
            leaving_cluster: AtomicBool::new(false),
            handing_over: AtomicBool::new(false),
            joined: std::time::Instant::now(),
            signer,
            signers_read: Default::default(),
            budgets: Default::default(),
            identity,
        });
        // Before this node seals anything, the others can learn its key; it learns theirs.
        m.publish_signer().await?;
        m.read_directory().await?;
        if m.store.shared() {
            tracing::info!(node = %m.me.name, advertise_url = %m.me.advertise_url, others_alive = m.others_alive(), "joined the cluster");
        }
        Ok(m)
    }

    pub fn me(&self) -> &Identity {
        &self.me
    }

    /// Whether other nodes may ever share this node's store (not on SQLite).
    pub fn shared(&self) -> bool {
        self.store.shared()
    }

    /// Whether another node was alive at the last look (never, on its own).
    pub fn others_alive(&self) -> bool {
        self.has_peers()
    }

    /// Whether the directory names a live node other than this one (never, on its
    /// own): until it does, every request is this node's to answer.
    pub fn has_peers(&self) -> bool {
        self.directory.load().has_peers(&self.me.name)
    }

    /// Whether [`Membership::leave`] has run.
    pub fn has_left(&self) -> bool {
        self.left.load(Ordering::Relaxed)
    }

    /// Whether the first round after the start's loads has run: the node has taken the
    /// leases it should hold and reported what it holds (always, on its own).
    pub fn is_settled(&self) -> bool {
        self.settled.load(Ordering::Acquire)
    }

    /// Whether this node is handing its leases over (it is stopping).
    fn handing_over(&self) -> bool {
        self.handing_over.load(Ordering::SeqCst)
    }

    /// What this node presents to others: its name and this start's secret.
    pub fn credentials(&self) -> (&str, &str) {
        (self.me.name.as_str(), self.secret.as_str())
    }

    /// The directory as last read.
    pub fn directory(&self) -> Arc<Directory> {
        self.directory.load_full()
    }

    /// Whether a TLS certificate (DER) is a live node's, by the directory as last read.
    pub fn is_node_certificate(&self, der: &[u8]) -> bool {
        let seen: [u8; 32] = sha2::Sha256::digest(der).into();
        let directory = self.directory.load();
        let found = directory
            .live()
            .filter_map(|n| directory.node(n))
            .any(|n| n.peer.cert_sha256 == seen);
        found
    }

    /// Whether `secret` is the secret of the live node `name`, by the directory as last
    /// read: a name it does not know costs no store read (a client may send any), and
    /// has the next round run early, at most once a [`RENEW_EVERY`] (a node that has
    /// just joined is known then; a client sending names costs no extra round).
    pub fn is_node(&self, name: &str, secret: &str) -> bool {
        let presented = forward::sha256_hex(secret.as_bytes());
        match self.directory.load().node(name) {
            Some(n) => bool::from(subtle::ConstantTimeEq::ct_eq(
                n.secret_sha256.as_bytes(),
                presented.as_bytes(),
            )),
            None => {
                let now = self.joined.elapsed().as_millis() as u64;
                let last = self.unknown_name_woke.load(Ordering::Relaxed);
                let due = last == 0 || now.saturating_sub(last) >= RENEW_EVERY.as_millis() as u64;
                if due
                    && self
                        .unknown_name_woke
                        .compare_exchange(last, now.max(1), Ordering::Relaxed, Ordering::Relaxed)
                        .is_ok()
                {
                    self.wake.notify_one();
                }
                false
            }
        }
    }

    /// Leaves the cluster (a shutdown): the row, the holdings and the leases go at once,
    /// so the others need not wait for the lease.
    pub async fn leave(&self) {
        self.leaving_cluster.store(true, Ordering::Release);
        // No commit from here on, whatever the store says of the leases.
        self.fences.drop_all();
        if self.store.shared() {
            match tokio::time::timeout(Duration::from_secs(2), self.store.leave(&self.row)).await {
                Ok(Ok(())) => tracing::info!(node = %self.me.name, "left the cluster"),
                Ok(Err(e)) => {
                    tracing::warn!(error = %format!("{e:#}"), "leaving the cluster (its lease will pass)")
                }
                Err(_) => tracing::warn!("leaving the cluster timed out (its lease will pass)"),
            }
        }
        self.left.store(true, Ordering::Relaxed);
    }

    /// The store's commit positions of `ids` (of those that have one; none on a node
    /// alone, whose copies are at the store's positions).
    pub async fn store_positions(&self, ids: &[Uuid]) -> anyhow::Result<Vec<(Uuid, u64)>> {
        if !self.store.shared() {
            return Ok(Vec::new());
        }
        self.store.positions_of(ids).await
    }

    /// The cluster as the store says it is, this node's holdings (`held`) reported
    /// first.
    pub async fn view(&self, held: &[Holding]) -> anyhow::Result<ClusterView> {
        if !self.store.shared() {
            let me = &self.me.name;
            return Ok(ClusterView {
                node: me.clone(),
                nodes: vec![Node {
                    name: me.clone(),
                    advertise_url: self.me.advertise_url.clone(),
                    alive: true,
                    workspaces_held: held.len(),
                    workspaces_owned: held.len(),
                    version: Some(crate::VERSION.to_string()),
                    renewed_ms_ago: Some(0),
                }],
                workspaces: held
                    .iter()
                    .map(|(id, position)| HeldWorkspace {
                        id: *id,
                        owner: Some(me.clone()),
                        holders: vec![me.clone()],
                        lag_ms: [(me.clone(), 0)].into(),
                        positions: [(me.clone(), *position)].into(),
                    })
                    .collect(),
            });
        }
        // This node's own report brought up to date first, and the leases read afresh.
        self.report(held).await?;
        self.read_directory().await?;
        let directory = self.directory();
        let mut workspaces: Vec<HeldWorkspace> = Vec::new();
        for (id, node, lag) in self.store.lags().await? {
            if workspaces.last().is_none_or(|w| w.id != id) {
                workspaces.push(HeldWorkspace {
                    id,
                    owner: directory.writer(id).map(str::to_string),
                    holders: Vec::new(),
                    lag_ms: Default::default(),
                    positions: Default::default(),
                });
            }
            let w = workspaces.last_mut().expect("pushed");
            w.lag_ms.insert(node.clone(), lag);
            if let Some(copy) = directory.copies(id).find(|c| *c.node == *node) {
                w.positions.insert(node.clone(), copy.position);
            }
            w.holders.push(node);
        }
        let all_nodes = self.store.all_nodes().await?;
        held_by_the_living(&mut workspaces, &all_nodes);
        let nodes = all_nodes
            .into_iter()
            .map(|n| Node {
                workspaces_held: workspaces
                    .iter()
                    .filter(|w| w.holders.contains(&n.row.name))
                    .count(),
                workspaces_owned: workspaces
                    .iter()
                    .filter(|w| w.owner.as_ref() == Some(&n.row.name))
                    .count(),
                name: n.row.name,
                advertise_url: n.row.advertise_url,
                alive: n.alive,
                version: n.version,
                renewed_ms_ago: n.renewed_ms_ago,
            })
            .collect();
        Ok(ClusterView {
            node: self.me.name.clone(),
            nodes,
            workspaces,
        })
    }
}

/// Drops from `workspaces` the holdings of the nodes `nodes` finds dead, and the
/// workspaces left with no holder. The holdings and the nodes are two reads, the nodes
/// the later: a node that died between them holds nothing in the view, so that no view
/// shows a dead node holding a copy.
fn held_by_the_living(workspaces: &mut Vec<HeldWorkspace>, nodes: &[port::NodeStatus]) {
    let dead: Vec<&str> = nodes
        .iter()
        .filter(|n| !n.alive)
        .map(|n| n.row.name.as_str())
        .collect();
    if dead.is_empty() {
        return;
    }
    let living = |h: &String| !dead.contains(&h.as_str());
    for w in workspaces.iter_mut() {
        w.holders.retain(living);
        w.lag_ms.retain(|h, _| living(h));
        w.positions.retain(|h, _| living(h));
    }
    workspaces.retain(|w| !w.holders.is_empty());
}

#[cfg(test)]
mod tests;
