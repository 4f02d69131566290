//! Several nodes on one PostgreSQL: the cluster.
//!
//! Every `serve` started on the same PostgreSQL store is a node of one cluster; the
//! store is the one source of truth, and what the nodes agree on are its rows and
//! transactions (no consensus of their own). The embedded SQLite store is single-node
//! (its store lock refuses a second server): there, the node is the whole cluster.
//!
//! - [`Membership`]: each node's row in `cluster_nodes`, held by a lease it renews every
//!   [`RENEW_EVERY`], alive while the lease has not passed by PostgreSQL's clock.
//!   A name is held by one running node at a time: a start under the name of a live
//!   node waits for its lease to pass and is refused if it does not (a node restarted
//!   after `kill -9` under its name and URL takes its row back at once).
//! - Each node reports the workspaces it holds in memory and the commit position each
//!   stands at (`cluster_holdings`), with every renewal: the cluster view's holders
//!   and their lag are those reports, not a guess.
//! - [`placement`]: which nodes a workspace belongs on (rendezvous hashing).
//! - [`writers`]: which node writes each workspace (leases with epochs, which every
//!   commit checks: `crate::store::fence`).
//! - [`routing`]: where a workspace's requests are answered (its writer), and
//!   [`forward`]: passing them there, node to node over HTTPS.
//! - [`holding`]: what each node loads (its placed workspaces) and lets go.
//! - [`follow`]: the other holders keep their copies in step from the change log.
//! - [`budgets`]: a key's budget goes on at the next writer of its workspace.

pub mod budgets;
pub mod follow;
pub mod forward;
pub mod holding;
pub mod placement;
pub mod routing;
pub mod writers;

use crate::store::fence::Fences;
use anyhow::Context;
use serde::Serialize;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use std::net::SocketAddr;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

/// How long a node's row stays alive without a renewal.
pub const LEASE: Duration = Duration::from_secs(5);

/// How often a node renews its lease (and reports its holdings).
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
}

/// A workspace as the cluster view shows it.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct HeldWorkspace {
    pub id: Uuid,
    /// The node that writes it: the one live holder while a workspace has one.
    pub owner: Option<String>,
    pub holders: Vec<String>,
    /// Per holder, how far behind the store's last commit it stands (0: up to date).
    pub lag_ms: std::collections::BTreeMap<String, u64>,
}

/// The cluster as one node sees it (`GET /admin/v1/cluster`).
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct ClusterView {
    pub node: String,
    pub nodes: Vec<Node>,
    pub workspaces: Vec<HeldWorkspace>,
}

/// A workspace this node holds, and the commit position its state stands at.
pub type Holding = (Uuid, u64);

/// This node's membership (see the module's docs).
pub struct Membership {
    me: Identity,
    shared: Option<Shared>,
}

struct Shared {
    pool: PgPool,
    /// This start's id (text, as the store keeps ids).
    incarnation: String,
    /// The writer leases this start holds (its store checks every commit against them).
    fences: Arc<Fences>,
    /// Workspaces whose lease is being taken now (one take at a time each).
    acquiring: parking_lot::Mutex<std::collections::HashSet<Uuid>>,
    /// Workspaces being loaded here now because they were placed here (`holding`).
    holding_changes: parking_lot::Mutex<std::collections::HashSet<Uuid>>,
    /// What this start presents to other nodes (hex); its SHA-256 is in its row.
    secret: String,
    /// SHA-256 of this node's TLS certificate (hex), published in its row.
    cert_sha256: String,
    /// The live nodes and the workspaces' writers (see [`routing`]).
    directory: arc_swap::ArcSwap<routing::Directory>,
    /// Held while a request reads the directory afresh (one read for all that wait).
    directory_read: tokio::sync::Mutex<()>,
    /// Set while another start holds this node's name (this one was stopped past its
    /// lease): logged once, cleared when the name is back.
    lost: AtomicBool,
    /// Whether another node was alive at the last look (the join, then each renewal).
    others: AtomicBool,
    /// Set once this node has left (or tried to).
    left: AtomicBool,
    /// When this node joined.
    joined: std::time::Instant,
    /// Set once this node has handed its writer leases over (it is stopping): it takes
    /// none again, loads nothing more, and lets nothing go.
    handing_over: AtomicBool,
    /// What seals this node's cursors, feed tokens and download URLs, and learns the
    /// other nodes' public keys (`actors::signing`; published in `signing_keys`).
    signer: Arc<actors::signing::Signer>,
    /// Held while the public keys are read on demand; when they last were.
    signers_read: tokio::sync::Mutex<Option<std::time::Instant>>,
    /// The node's per-key limiter, once the server shares it ([`budgets`]).
    budgets: std::sync::OnceLock<Arc<dyn budgets::Budgets>>,
}

/// How long a node handing its leases over lets the writes it took commit first (a
/// commit takes milliseconds; one slower than this is refused, and retried by its
/// client).
const WRITES_IN_FLIGHT: Duration = Duration::from_millis(500);

/// How often a node reads the published public keys on demand, at most.
const SIGNERS_READ_EVERY: Duration = Duration::from_millis(250);

/// How long a start waits for a stopped node's lease on its name to pass.
const NAME_WAIT: Duration = Duration::from_millis(LEASE.as_millis() as u64 + 1000);

impl Membership {
    /// A node on its own (SQLite).
    pub fn alone(me: Identity) -> Arc<Membership> {
        Arc::new(Membership { me, shared: None })
    }

    /// The fences of a node that will join as `me`: what its store checks commits
    /// against, and whose incarnation its membership is.
    pub fn fences_for(me: &Identity) -> Arc<Fences> {
        Fences::new(me.name.clone(), Uuid::new_v4().to_string(), LEASE)
    }

    /// Joins the cluster of the PostgreSQL store at `url` (migrated already) as the
    /// start `fences` names (see [`Membership::fences_for`]). A live node of the same
    /// name is waited for up to its lease, then refused.
    /// `cert_sha256` is the SHA-256 (hex) of the node's TLS certificate, which other
    /// nodes pin; `signer` seals what the node hands out, and its public key is
    /// published for the other nodes to check those seals with.
    pub async fn join(
        url: &str,
        me: Identity,
        fences: Arc<Fences>,
        cert_sha256: String,
        signer: Arc<actors::signing::Signer>,
    ) -> anyhow::Result<Arc<Membership>> {
        let options = PgConnectOptions::from_str(url)
            .map_err(|e| anyhow::anyhow!("invalid PostgreSQL URL: {e}"))?;
        let pool = PgPoolOptions::new()
            // Renewals, the writer leases' rounds and takes, the cluster view.
            .max_connections(4)
            .acquire_timeout(crate::store::ACQUIRE_TIMEOUT)
            .connect_with(options)
            .await
            .context("connecting for the cluster's membership")?;
        let shared = Shared {
            pool,
            incarnation: fences.incarnation.clone(),
            fences,
            acquiring: Default::default(),
            holding_changes: Default::default(),
            secret: forward::hex(&rand::random::<[u8; 32]>()),
            cert_sha256,
            directory: Default::default(),
            directory_read: Default::default(),
            lost: AtomicBool::new(false),
            others: AtomicBool::new(true),
            left: AtomicBool::new(false),
            handing_over: AtomicBool::new(false),
            budgets: Default::default(),
            signer,
            signers_read: Default::default(),
            joined: std::time::Instant::now(),
        };
        let deadline = tokio::time::Instant::now() + NAME_WAIT;
        loop {
            if shared.take_name(&me).await? {
                break;
            }
            if tokio::time::Instant::now() >= deadline {
                let holder: Option<(String,)> =
                    sqlx::query_as("SELECT advertise_url FROM cluster_nodes WHERE name = $1")
                        .bind(&me.name)
                        .fetch_optional(&shared.pool)
                        .await?;
                anyhow::bail!(
                    "node name {:?} is held by a running node (advertising {}): give this node \
                     another --node-name, or stop that one",
                    me.name,
                    holder.map_or_else(|| "?".into(), |h| h.0)
                );
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        // Before this node seals anything, the others can learn its key; it learns theirs.
        sqlx::query(
            "INSERT INTO signing_keys (key_id, public_key, node) VALUES ($1, $2, $3) \
             ON CONFLICT (key_id) DO UPDATE SET node = EXCLUDED.node",
        )
        .bind(forward::hex(&shared.signer.key_id()))
        .bind(shared.signer.public_key())
        .bind(&me.name)
        .execute(&shared.pool)
        .await
        .context("publishing the node's public key")?;
        shared.learn_signers().await?;
        let others = shared.others_alive(&me).await?;
        shared.others.store(others, Ordering::Relaxed);
        tracing::info!(node = %me.name, advertise_url = %me.advertise_url, others_alive = others, "joined the cluster");
        Ok(Arc::new(Membership {
            me,
            shared: Some(shared),
        }))
    }

    pub fn me(&self) -> &Identity {
        &self.me
    }

    /// Whether another node was alive at the last look (never, on its own).
    pub fn others_alive(&self) -> bool {
        self.shared
            .as_ref()
            .is_some_and(|s| s.others.load(Ordering::Relaxed))
    }

    /// Whether [`Membership::leave`] has run (on its own, a node has nothing to leave).
    pub fn has_left(&self) -> bool {
        self.shared
            .as_ref()
            .is_none_or(|s| s.left.load(Ordering::Relaxed))
    }

    /// Renews the lease and reports `held` (on its own, a node has nothing to renew).
    /// `Ok(false)` when another start holds this node's name.
    pub async fn renew(&self, held: &[Holding]) -> Result<bool, sqlx::Error> {
        let Some(s) = &self.shared else {
            return Ok(true);
        };
        // The leases renewed hold from before the transaction's `now()` by this clock.
        let began = std::time::Instant::now();
        let mut tx = s.pool.begin().await?;
        let renewed = sqlx::query(
            "UPDATE cluster_nodes SET lease_until = now() + $3 * interval '1 millisecond' \
             WHERE name = $1 AND incarnation = $2",
        )
        .bind(&self.me.name)
        .bind(&s.incarnation)
        .bind(LEASE.as_millis() as i64)
        .execute(&mut *tx)
        .await?
        .rows_affected()
            == 1;
        if !renewed {
            tx.rollback().await?;
            return Ok(false);
        }
        // A node handing over reports nothing held: no node counts on its copies.
        let held = if s.handing_over.load(Ordering::SeqCst) {
            &[][..]
        } else {
            held
        };
        let (ids, positions): (Vec<String>, Vec<i64>) = held
            .iter()
            .map(|(id, p)| (id.to_string(), i64::try_from(*p).unwrap_or(i64::MAX)))
            .unzip();
        sqlx::query(
            "DELETE FROM cluster_holdings WHERE node = $1 AND workspace_id <> ALL($2::text[])",
        )
        .bind(&self.me.name)
        .bind(&ids)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "INSERT INTO cluster_holdings (workspace_id, node, position) \
             SELECT * FROM UNNEST($2::text[], array_fill($1::text, ARRAY[cardinality($2::text[])]), $3::bigint[]) \
             ON CONFLICT (workspace_id, node) DO UPDATE SET position = EXCLUDED.position",
        )
        .bind(&self.me.name)
        .bind(&ids)
        .bind(&positions)
        .execute(&mut *tx)
        .await?;
        let tick = s.fences.tick();
        let leases = writers::renew_leases(&mut tx, &s.fences).await?;
        tx.commit().await?;
        s.fences.keep_only(&leases, tick, began);
        s.others
            .store(s.others_alive(&self.me).await?, Ordering::Relaxed);
        Ok(true)
    }

    /// Renews the lease every [`RENEW_EVERY`] while the process runs, reporting what
    /// `held` holds then, and places the writers of what it holds
    /// ([`Membership::place_writers`]). A node whose name another start took (it was
    /// stopped past its lease) says so and takes the name back as soon as that start's
    /// lease passes.
    pub async fn keep_alive(self: Arc<Self>, held: Arc<dyn writers::Held>) {
        let Some(s) = &self.shared else {
            return;
        };
        loop {
            tokio::time::sleep(RENEW_EVERY).await;
            match self.renew(&held.held()).await {
                Ok(true) => {
                    if s.lost.swap(false, Ordering::Relaxed) {
                        tracing::warn!(node = %self.me.name, "holds its node name again");
                    }
                    if let Err(e) = s.learn_signers().await {
                        tracing::warn!(error = %e, "reading the nodes' public keys");
                    }
                    self.place_writers(&held, false).await;
                }
                Ok(false) => {
                    if !s.lost.swap(true, Ordering::Relaxed) {
                        tracing::error!(
                            node = %self.me.name,
                            "another start holds this node's name (this one was stopped past \
                             its lease): its membership is lost until that lease passes"
                        );
                    }
                    if let Err(e) = s.take_name(&self.me).await {
                        tracing::warn!(error = %e, "taking the node name back");
                    }
                }
                Err(e) => {
                    tracing::warn!(node = %self.me.name, error = %e, "renewing the node's lease")
                }
            }
        }
    }

    /// Gives every writer lease up before a graceful stop, while this node still answers
    /// (passing each request to the workspace's next writer), and waits until other
    /// nodes write them (at most `within`): so a rolling restart costs a client no
    /// error. Writes in flight here when it runs are refused (503: their clients retry
    /// with the same `reference`).
    pub async fn hand_over(&self, within: Duration) {
        let Some(s) = &self.shared else {
            return;
        };
        // Alone, there is nobody to hand over to: it writes until it stops.
        if !self.has_peers() || s.handing_over.swap(true, Ordering::SeqCst) {
            return;
        }
        // New requests no longer come here as to the writer (`route`); the writes
        // already here commit before the leases go.
        tokio::time::sleep(WRITES_IN_FLIGHT).await;
        s.fences.drop_all();
        // What its keys spent here, up to its last request as the writer, for the next
        // writers to go on from.
        if let Err(e) = self.write_budgets().await {
            tracing::warn!(error = %e, "handing the keys' budgets over");
        }
        // Its copies are no longer counted on (so the next writers are among the
        // others), then its leases pass at once.
        if let Err(e) = sqlx::query("DELETE FROM cluster_holdings WHERE node = $1")
            .bind(&self.me.name)
            .execute(&s.pool)
            .await
        {
            tracing::warn!(error = %e, "handing the holdings over");
        }
        let released = sqlx::query_scalar::<_, String>(
            "UPDATE workspace_leases SET lease_until = now() - interval '1 millisecond', \
             incarnation = '' WHERE holder = $1 AND incarnation = $2 RETURNING workspace_id",
        )
        .bind(&self.me.name)
        .bind(&s.incarnation)
        .fetch_all(&s.pool)
        .await;
        let released: Vec<Uuid> = match released {
            Ok(ids) => ids
                .iter()
                .filter_map(|id| Uuid::parse_str(id).ok())
                .collect(),
            Err(e) => {
                tracing::warn!(error = %e, "handing the writer leases over (they will pass)");
                return;
            }
        };
        let deadline = tokio::time::Instant::now() + within;
        while tokio::time::Instant::now() < deadline {
            self.read_directory().await;
            let taken = released
                .iter()
                .all(|ws| matches!(self.route(*ws), routing::Route::To(_)));
            if taken {
                // One more round of every node's directory, so that none still passes
                // requests here when this node stops accepting them.
                tokio::time::sleep(RENEW_EVERY + Duration::from_millis(200)).await;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        tracing::info!(node = %self.me.name, workspaces = released.len(), "handed the writer leases over");
    }

    /// Learns the public key `id` names when this node does not know it yet (a node
    /// joined since the last round's read): reads the published keys at once, at most
    /// every [`SIGNERS_READ_EVERY`] however many unknown ids are presented.
    pub async fn learn_signer(&self, id: &actors::signing::KeyId) {
        let Some(s) = &self.shared else {
            return;
        };
        if s.signer.knows(id) {
            return;
        }
        let mut last = s.signers_read.lock().await;
        if s.signer.knows(id) || last.is_some_and(|t| t.elapsed() < SIGNERS_READ_EVERY) {
            return;
        }
        if let Err(e) = s.learn_signers().await {
            tracing::warn!(error = %e, "reading the nodes' public keys");
        }
        *last = Some(std::time::Instant::now());
    }

    /// Whether this node is handing its leases over (it is stopping).
    fn handing_over(&self) -> bool {
        self.shared
            .as_ref()
            .is_some_and(|s| s.handing_over.load(Ordering::SeqCst))
    }

    /// Leaves the cluster (a shutdown): the row and the holdings go at once, so the
    /// others need not wait for the lease.
    pub async fn leave(&self) {
        let Some(s) = &self.shared else {
            return;
        };
        // No commit from here on, whatever the store says of the leases.
        s.fences.drop_all();
        let left = async {
            let mut tx = s.pool.begin().await?;
            let gone =
                sqlx::query("DELETE FROM cluster_nodes WHERE name = $1 AND incarnation = $2")
                    .bind(&self.me.name)
                    .bind(&s.incarnation)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
            if gone == 1 {
                sqlx::query("DELETE FROM cluster_holdings WHERE node = $1")
                    .bind(&self.me.name)
                    .execute(&mut *tx)
                    .await?;
            }
            // Its leases pass at once: the next writers need not wait for them.
            sqlx::query(
                "UPDATE workspace_leases SET lease_until = now() - interval '1 millisecond', \
                 incarnation = '' WHERE holder = $1 AND incarnation = $2",
            )
            .bind(&self.me.name)
            .bind(&s.incarnation)
            .execute(&mut *tx)
            .await?;
            tx.commit().await
        };
        match tokio::time::timeout(Duration::from_secs(2), left).await {
            Ok(Ok(())) => tracing::info!(node = %self.me.name, "left the cluster"),
            Ok(Err(e)) => tracing::warn!(error = %e, "leaving the cluster (its lease will pass)"),
            Err(_) => tracing::warn!("leaving the cluster timed out (its lease will pass)"),
        }
        s.left.store(true, Ordering::Relaxed);
    }

    /// The cluster as the store says it is, this node's holdings (`held`) reported
    /// first; on its own, `held` is the whole of it.
    pub async fn view(&self, held: &[Holding]) -> Result<ClusterView, sqlx::Error> {
        let Some(s) = &self.shared else {
            let me = &self.me.name;
            return Ok(ClusterView {
                node: me.clone(),
                nodes: vec![Node {
                    name: me.clone(),
                    advertise_url: self.me.advertise_url.clone(),
                    alive: true,
                    workspaces_held: held.len(),
                    workspaces_owned: held.len(),
                }],
                workspaces: held
                    .iter()
                    .map(|(id, _)| HeldWorkspace {
                        id: *id,
                        owner: Some(me.clone()),
                        holders: vec![me.clone()],
                        lag_ms: [(me.clone(), 0)].into(),
                    })
                    .collect(),
            });
        };
        // This node's own report brought up to date first: what it holds now, rather
        // than as of its last renewal.
        self.renew(held).await?;
        let nodes: Vec<(String, String, bool)> = sqlx::query_as(
            "SELECT name, advertise_url, lease_until > now() FROM cluster_nodes ORDER BY name",
        )
        .fetch_all(&s.pool)
        .await?;
        // Each live node's holdings, and how long ago the first commit it lacks was made
        // (commit times are the committing node's milliseconds: a lag below 0, which
        // only clock skew makes, shows as 0).
        let holdings: Vec<(String, String, i64)> = sqlx::query_as(
            "SELECT h.workspace_id, h.node, \
                    COALESCE((SELECT (extract(epoch FROM now()) * 1000)::bigint - min(l.committed_at) \
                              FROM change_log l \
                              WHERE l.workspace_id = h.workspace_id AND l.position > h.position), 0) \
             FROM cluster_holdings h JOIN cluster_nodes n ON n.name = h.node \
             WHERE n.lease_until > now() \
             ORDER BY h.workspace_id, h.node",
        )
        .fetch_all(&s.pool)
        .await?;
        let mut workspaces: Vec<HeldWorkspace> = Vec::new();
        for (id, node, lag) in holdings {
            // Written by a node from a UUID: anything else is no workspace of this store.
            let Ok(id) = Uuid::parse_str(&id) else {
                continue;
            };
            if workspaces.last().is_none_or(|w| w.id != id) {
                workspaces.push(HeldWorkspace {
                    id,
                    owner: None,
                    holders: Vec::new(),
                    lag_ms: Default::default(),
                });
            }
            let w = workspaces.last_mut().expect("pushed");
            w.lag_ms
                .insert(node.clone(), u64::try_from(lag.max(0)).unwrap_or(0));
            w.holders.push(node);
        }
        // A workspace's owner: the holder of its writer lease while the lease holds.
        let leases = s.leases().await?;
        for w in &mut workspaces {
            w.owner = leases
                .get(&w.id)
                .filter(|l| l.holds)
                .map(|l| l.holder.clone());
        }
        let nodes = nodes
            .into_iter()
            .map(|(name, advertise_url, alive)| {
                let held = workspaces
                    .iter()
                    .filter(|w| w.holders.contains(&name))
                    .count();
                let owned = workspaces
                    .iter()
                    .filter(|w| w.owner.as_ref() == Some(&name))
                    .count();
                Node {
                    name,
                    advertise_url,
                    alive,
                    workspaces_held: held,
                    workspaces_owned: owned,
                }
            })
            .collect();
        Ok(ClusterView {
            node: self.me.name.clone(),
            nodes,
            workspaces,
        })
    }
}

impl Shared {
    /// Learns every published public key (the table holds one per data dir that ever
    /// joined: a few rows).
    async fn learn_signers(&self) -> Result<(), sqlx::Error> {
        let keys: Vec<Vec<u8>> = sqlx::query_scalar("SELECT public_key FROM signing_keys")
            .fetch_all(&self.pool)
            .await?;
        let new = self.signer.learn(keys.iter().map(Vec::as_slice));
        if new > 0 {
            tracing::info!(new, "learned other nodes' public keys");
        }
        Ok(())
    }

    /// Whether a node other than `me` holds a lease that has not passed.
    async fn others_alive(&self, me: &Identity) -> Result<bool, sqlx::Error> {
        sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM cluster_nodes WHERE name <> $1 AND lease_until > now())",
        )
        .bind(&me.name)
        .fetch_one(&self.pool)
        .await
    }

    /// Takes `me`'s name for this start when no live node holds it. A row of the same
    /// name that advertises the same URL is this node's previous start (killed, its
    /// lease not passed yet): a live one would hold the port this start has bound, so it
    /// is taken at once rather than waited for. (Several hosts given one name and one
    /// advertised URL are the operator's mistake this cannot see.)
    async fn take_name(&self, me: &Identity) -> Result<bool, sqlx::Error> {
        let taken: Option<(String,)> = sqlx::query_as(
            "INSERT INTO cluster_nodes (name, advertise_url, incarnation, started_at, lease_until, \
                 cert_sha256, secret_sha256) \
             VALUES ($1, $2, $3, now(), now() + $4 * interval '1 millisecond', $5, $6) \
             ON CONFLICT (name) DO UPDATE SET advertise_url = EXCLUDED.advertise_url, \
                 incarnation = EXCLUDED.incarnation, started_at = EXCLUDED.started_at, \
                 lease_until = EXCLUDED.lease_until, cert_sha256 = EXCLUDED.cert_sha256, \
                 secret_sha256 = EXCLUDED.secret_sha256 \
             WHERE cluster_nodes.lease_until < now() OR cluster_nodes.incarnation = $3 \
                OR cluster_nodes.advertise_url = $2 \
             RETURNING incarnation",
        )
        .bind(&me.name)
        .bind(&me.advertise_url)
        .bind(&self.incarnation)
        .bind(LEASE.as_millis() as i64)
        .bind(&self.cert_sha256)
        .bind(forward::sha256_hex(self.secret.as_bytes()))
        .fetch_optional(&self.pool)
        .await?;
        Ok(taken.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api() -> SocketAddr {
        "127.0.0.1:8443".parse().unwrap()
    }

    #[test]
    fn an_identity_defaults_to_the_host_and_the_bound_address() {
        let me = Identity::new(None, None, 2, api()).unwrap();
        assert!(me.name.ends_with(":8443"), "{}", me.name);
        assert_eq!(me.advertise_url, "https://127.0.0.1:8443");
        let named = Identity::new(
            Some("a".into()),
            Some("https://a.internal:9443/".into()),
            3,
            api(),
        )
        .unwrap();
        assert_eq!(named.advertise_url, "https://a.internal:9443");
        assert_eq!((named.name.as_str(), named.replicas), ("a", 3));
    }

    #[test]
    fn bad_identities_are_refused() {
        for (name, url, replicas) in [
            (Some(""), None, 2),
            (Some("a\nb"), None, 2),
            (None, Some("ftp://x"), 2),
            (None, Some("https://"), 2),
            (None, Some("https://x/?q"), 2),
            (None, None, 0),
        ] {
            assert!(
                Identity::new(
                    name.map(str::to_string),
                    url.map(str::to_string),
                    replicas,
                    api()
                )
                .is_err(),
                "{name:?} {url:?} {replicas}"
            );
        }
    }

    /// Each node publishes its public key when it joins and learns those published
    /// before; a key published since is learned when a token naming it is presented
    /// (at most every `SIGNERS_READ_EVERY`), or with the next renewal round.
    #[tokio::test]
    async fn a_node_learns_the_public_keys_of_the_others() {
        let Ok(base) = std::env::var("RECRUITD_TEST_DATABASE_URL") else {
            println!("RECRUITD_TEST_DATABASE_URL is not set: PostgreSQL variant skipped");
            return;
        };
        let url = crate::store::testing::fresh_postgres_url(&base)
            .await
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let join = |name: &str, secret: u8| {
            let me = Identity::new(Some(name.into()), None, 2, api()).unwrap();
            let fences = Membership::fences_for(&me);
            let signer = Arc::new(actors::signing::Signer::from_secret(&[secret; 32]));
            let (url, dir) = (url.clone(), dir.path().to_path_buf());
            async move {
                let store = crate::store::open_fenced(Some(&url), &dir, fences.clone())
                    .await
                    .unwrap();
                let m = Membership::join(&url, me, fences, String::new(), signer.clone())
                    .await
                    .unwrap();
                (m, signer, store)
            }
        };
        let (a, a_signer, store) = join("a", 1).await;
        let (b, b_signer, _) = join("b", 2).await;
        // b joined after a: it knows a's key; a does not know b's yet.
        assert!(b_signer.knows(&a_signer.key_id()));
        assert!(!a_signer.knows(&b_signer.key_id()));
        let seal = b_signer.seal(b"t", b"p");
        assert!(!a_signer.check(b"t", b"p", &seal));
        // Presented b's token, a reads the published keys.
        a.learn_signer(&b_signer.key_id()).await;
        assert!(a_signer.check(b"t", b"p", &seal));
        // An id nobody published: one read, then none until the pause has passed.
        let unknown = [9u8; actors::signing::KEY_ID_LEN];
        a.learn_signer(&unknown).await;
        let read_at = *a.shared.as_ref().unwrap().signers_read.lock().await;
        assert!(read_at.is_some(), "the unknown id was looked for");
        a.learn_signer(&unknown).await;
        assert_eq!(
            *a.shared.as_ref().unwrap().signers_read.lock().await,
            read_at
        );
        a.leave().await;
        b.leave().await;
        store.close().await;
    }

    #[tokio::test]
    async fn a_node_alone_holds_and_writes_everything_it_holds() {
        let me = Identity::new(Some("solo".into()), None, 2, api()).unwrap();
        let m = Membership::alone(me);
        assert!(m.renew(&[]).await.unwrap());
        let ws = Uuid::new_v4();
        let view = m.view(&[(ws, 7)]).await.unwrap();
        assert_eq!(view.node, "solo");
        assert_eq!(view.nodes.len(), 1);
        assert!(view.nodes[0].alive);
        assert_eq!(
            (
                view.nodes[0].workspaces_held,
                view.nodes[0].workspaces_owned
            ),
            (1, 1)
        );
        assert_eq!(view.workspaces[0].owner.as_deref(), Some("solo"));
        assert_eq!(view.workspaces[0].lag_ms["solo"], 0);
    }
}
