//! What the cluster keeps in the store, as the cluster needs it: the port its rounds,
//! followers and routing go through. `crate::store::cluster` implements it on
//! PostgreSQL (the SQL lives there); [`super::solo`] for a node alone on its store for
//! good (SQLite), where it is the whole cluster and every answer is its own.
//!
//! Reads of what changed are **horizon reads**: each returns the rows written since the
//! caller's horizon and the next horizon to ask from, so a node's cost does not grow
//! with the number of workspaces while nothing changes (see `crate::store::cluster` for
//! why no change can be missed).
//!
//! The concerns, each a few methods: the node's own row ([`ClusterStore::take_name`],
//! `renew`, `leave`), the live nodes, writer leases, holdings (which copies each node
//! has loaded), commit positions (what followers follow), signing keys and key budgets.

use super::budgets::KeyWindow;
use uuid::Uuid;

/// Errors of the port: the store's own (connection, statement), as text with context.
pub type PortError = anyhow::Error;

/// A node's row as the others see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeRow {
    pub name: String,
    pub advertise_url: String,
    /// This start's id: leases and holdings of another start of the node are not its.
    pub incarnation: String,
    pub cert_sha256: String,
    pub secret_sha256: String,
}

/// A node's row as the cluster view shows it: alive or not, and what it says of itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeStatus {
    pub row: NodeRow,
    pub alive: bool,
    /// The build it runs (`None`: an earlier build, which does not say).
    pub version: Option<String>,
    /// How long ago it last renewed its lease, by the store's clock (`None`: not said).
    pub renewed_ms_ago: Option<u64>,
}

/// A workspace's writer lease. It holds while its holder's node row does, under the
/// same incarnation (so a node's one renewal renews all its leases); a lease given up
/// has an empty incarnation. Epochs only grow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseRow {
    pub workspace: Uuid,
    pub holder: String,
    pub incarnation: String,
    pub epoch: u64,
}

/// A copy a node reports: loaded at `position` (`None`: let go since).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HoldingRow {
    pub workspace: Uuid,
    pub node: String,
    pub incarnation: String,
    pub position: Option<u64>,
}

/// Rows written since a horizon, and the horizon to ask from next.
#[derive(Clone, Debug, Default)]
pub struct Since<T> {
    pub rows: Vec<T>,
    pub next: i64,
}

/// What this start is, as its row says: name and incarnation (the port's methods act
/// for it).
#[derive(Clone, Debug)]
pub struct Me {
    pub name: String,
    pub advertise_url: String,
    pub incarnation: String,
    pub cert_sha256: String,
    pub secret_sha256: String,
}

#[async_trait::async_trait]
pub trait ClusterStore: Send + Sync + 'static {
    /// Whether other nodes may ever share this store (never, for a node alone).
    fn shared(&self) -> bool;

    // --- the node's own row ---

    /// Takes the node's name for this start when no live node holds it (or a row of the
    /// same name advertises the same URL: the node itself, restarted), with a lease of
    /// `lease_ms`. `Ok(false)` while another live start holds it. Holdings reported by
    /// earlier starts of the name are dropped.
    async fn take_name(&self, me: &Me, lease_ms: u64) -> Result<bool, PortError>;

    /// Renews the node's lease (and so every writer lease it holds): `Ok(false)` when
    /// another start took its name.
    async fn renew(&self, me: &Me, lease_ms: u64) -> Result<bool, PortError>;

    /// The advertised URL of the node holding `name` now, if any (for a refusal).
    async fn holder_of_name(&self, name: &str) -> Result<Option<String>, PortError>;

    /// Leaves: the row, its holdings and its leases go at once.
    async fn leave(&self, me: &Me) -> Result<(), PortError>;

    /// The live nodes (lease not passed, and their store session still there: a killed
    /// process's session ends with it), in name order.
    async fn live_nodes(&self) -> Result<Vec<NodeRow>, PortError>;

    // --- workspaces and their commits ---

    /// Every workspace of the store (a start reads them once).
    async fn workspace_ids(&self) -> Result<Vec<Uuid>, PortError>;

    /// Which of `ids` are workspaces of the store (a first import's commits move its
    /// position before its row exists).
    async fn existing(&self, ids: &[Uuid]) -> Result<Vec<Uuid>, PortError>;

    /// The commit positions of `ids` (of those that have one).
    async fn positions_of(&self, ids: &[Uuid]) -> Result<Vec<(Uuid, u64)>, PortError>;

    /// The commit positions that moved since `horizon` (a follower's one read).
    async fn positions_since(&self, horizon: i64) -> Result<Since<(Uuid, u64)>, PortError>;

    // --- writer leases ---

    /// The leases written since `horizon`.
    async fn leases_since(&self, horizon: i64) -> Result<Since<LeaseRow>, PortError>;

    /// Takes the leases of `workspaces` that are free (given up, or their holder no
    /// longer lives), at their next epoch, and confirms those this start holds: the
    /// epochs held, by workspace. One a commit still holds (a writer frozen mid-commit)
    /// is skipped, for a later round. The instant is a moment before the store read
    /// its clock.
    async fn take(
        &self,
        me: &Me,
        workspaces: &[Uuid],
    ) -> Result<(Vec<(Uuid, u64)>, std::time::Instant), PortError>;

    /// Gives leases up: they are free at once; each waits for the commits that checked
    /// it.
    async fn release(&self, me: &Me, workspaces: &[Uuid]) -> Result<Vec<Uuid>, PortError>;

    /// Gives every lease of this start up: the workspaces released.
    async fn release_all(&self, me: &Me) -> Result<Vec<Uuid>, PortError>;

    // --- holdings ---

    /// Reports copies loaded (with their positions) or let go (`None`), in one statement.
    async fn report(&self, me: &Me, changes: &[(Uuid, Option<u64>)]) -> Result<(), PortError>;

    /// The holdings written since `horizon`.
    async fn holdings_since(&self, horizon: i64) -> Result<Since<HoldingRow>, PortError>;

    /// Drops every holding of this node (it hands over, or leaves).
    async fn drop_holdings(&self, me: &Me) -> Result<(), PortError>;

    /// Per live holder of each workspace, how many milliseconds ago the first commit it
    /// lacks was made (0 when it holds the latest): the cluster view's lag.
    async fn lags(&self) -> Result<Vec<(Uuid, String, u64)>, PortError>;

    /// Every node row, live or not, with whether it is alive (the cluster view).
    async fn all_nodes(&self) -> Result<Vec<NodeStatus>, PortError>;

    // --- signing keys ---

    /// Publishes this node's public key.
    async fn publish_key(&self, me: &Me, key_id: &str, public_key: &[u8]) -> Result<(), PortError>;

    /// Every published public key.
    async fn public_keys(&self) -> Result<Vec<Vec<u8>>, PortError>;

    // --- key budgets ---

    /// Writes this node's windows of the keys that counted since the last write, and
    /// drops every row whose newest second is before `oldest`.
    async fn write_windows(
        &self,
        me: &Me,
        windows: &[KeyWindow],
        oldest: i64,
    ) -> Result<(), PortError>;

    /// Every node's windows of the keys of `workspaces` whose newest second is `oldest`
    /// or later.
    async fn windows_of(
        &self,
        workspaces: &[Uuid],
        oldest: i64,
    ) -> Result<Vec<KeyWindow>, PortError>;
}
