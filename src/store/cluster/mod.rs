//! The cluster's rows on PostgreSQL: `crate::cluster::port::ClusterStore`.
//!
//! # Liveness
//! A node is alive while its row's lease has not passed by PostgreSQL's clock **and**
//! the store session it renews on is still there (`session_pid`, `session_started`,
//! checked against `pg_stat_activity`). A killed process's session ends with it, so its
//! death is known at once; a frozen or cut-off one keeps its session until its lease
//! passes (or PostgreSQL's TCP keepalives give it up). The renewal runs on that one
//! session, and a session lost under a live node is replaced by the next renewal.
//!
//! A writer lease (`workspace_leases`) holds while its holder's row is alive under the
//! incarnation the lease names: the node's one renewal a second renews all of them.
//! Every commit checks its lease in its own transaction and keeps the row share-locked
//! until it ends (`super::postgres`); taking or giving up a lease updates the row, and
//! so waits for those commits.
//!
//! # Horizon reads
//! Leases, holdings and commit positions carry the id of the transaction that last
//! wrote them (`xid`, indexed). A reader asks for the rows whose `xid` is at least its
//! horizon and, in the same statement, for the oldest transaction still running
//! (`pg_snapshot_xmin` of the statement's snapshot): the next horizon. Every transaction
//! older than that had ended before the statement ran, so its rows were visible to it;
//! every one that had not is at or past the horizon and is read next time. So nothing is
//! missed, a row is read again only while an older transaction runs, and a node that
//! finds nothing changed reads no row at all. (Not for Citus: its workers number their
//! transactions each on its own.)
//!
//! # Layout
//! `PgCluster` (here) runs every statement on the node's runtime; the statements
//! themselves, and the node's session they renew on, are `rows`.

mod rows;

use crate::cluster::budgets::KeyWindow;
use crate::cluster::port::{
    ClusterStore, HoldingRow, LeaseRow, Me, NodeRow, NodeStatus, PortError, Since,
};
use anyhow::Context;
use rows::Rows;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Instant;
use uuid::Uuid;

/// The cluster's rows on PostgreSQL (see the module's docs).
pub struct PgCluster {
    inner: Arc<Rows>,
    /// The runtime every statement runs on: the node's own, which lives as long as the
    /// process. (Connections belong to the runtime that opened them; one opened on a
    /// request's worker thread would die with that thread's runtime at shutdown, under
    /// the node's last statements.)
    home: tokio::runtime::Handle,
}

impl PgCluster {
    /// Connects to the (migrated) store at `url`.
    pub async fn connect(url: &str) -> anyhow::Result<PgCluster> {
        let options = PgConnectOptions::from_str(url)
            .map_err(|e| anyhow::anyhow!("invalid PostgreSQL URL: {e}"))?;
        // Every statement here is meant to read rows through an index (a horizon read
        // the few rows past its horizon, through `xid`): planned for its own values, and
        // never as a scan of the whole table, which the planner would choose for a
        // table of a few hundred rows, and which would read them all ten times a second.
        let options = super::quiet_slow_statements(options).options([
            ("plan_cache_mode", "force_custom_plan"),
            ("enable_seqscan", "off"),
        ]);
        let pool = PgPoolOptions::new()
            // Rounds, follower reads, takes and releases, the cluster view: all on one
            // runtime, a few at a time.
            .max_connections(3)
            .acquire_timeout(super::ACQUIRE_TIMEOUT)
            .connect_with(options.clone())
            .await
            .context("connecting for the cluster's membership")?;
        // The node's session asks for TCP keepalives: a vanished host's session is
        // given up in about 30 s.
        let options = options.options([
            ("tcp_keepalives_idle", "10"),
            ("tcp_keepalives_interval", "5"),
            ("tcp_keepalives_count", "4"),
        ]);
        Ok(PgCluster {
            inner: Arc::new(Rows {
                pool,
                options,
                session: Default::default(),
            }),
            home: tokio::runtime::Handle::current(),
        })
    }

    /// Runs `work` on the node's runtime (see [`PgCluster::home`]).
    async fn at_home<T: Send + 'static>(
        &self,
        work: impl std::future::Future<Output = Result<T, PortError>> + Send + 'static,
    ) -> Result<T, PortError> {
        self.home
            .spawn(work)
            .await
            .map_err(|e| anyhow::anyhow!("a cluster statement's task failed: {e}"))?
    }
}

/// Every method runs its statements on the node's runtime (see [`PgCluster::home`]).
#[async_trait::async_trait]
impl ClusterStore for PgCluster {
    fn shared(&self) -> bool {
        true
    }

    async fn take_name(&self, me: &Me, lease_ms: u64) -> Result<bool, PortError> {
        let (rows, me) = (self.inner.clone(), me.clone());
        self.at_home(async move { rows.take_name(&me, lease_ms).await })
            .await
    }

    async fn renew(&self, me: &Me, lease_ms: u64) -> Result<bool, PortError> {
        let (rows, me) = (self.inner.clone(), me.clone());
        self.at_home(async move { rows.renew(&me, lease_ms).await })
            .await
    }

    async fn holder_of_name(&self, name: &str) -> Result<Option<String>, PortError> {
        let (rows, name) = (self.inner.clone(), name.to_string());
        self.at_home(async move { rows.holder_of_name(&name).await })
            .await
    }

    async fn leave(&self, me: &Me) -> Result<(), PortError> {
        let (rows, me) = (self.inner.clone(), me.clone());
        self.at_home(async move { rows.leave(&me).await }).await
    }

    async fn live_nodes(&self) -> Result<Vec<NodeRow>, PortError> {
        let rows = self.inner.clone();
        self.at_home(async move { rows.live_nodes().await }).await
    }

    async fn all_nodes(&self) -> Result<Vec<NodeStatus>, PortError> {
        let rows = self.inner.clone();
        self.at_home(async move { rows.all_nodes().await }).await
    }

    async fn workspace_ids(&self) -> Result<Vec<Uuid>, PortError> {
        let rows = self.inner.clone();
        self.at_home(async move { rows.workspace_ids().await })
            .await
    }

    async fn existing(&self, ids: &[Uuid]) -> Result<Vec<Uuid>, PortError> {
        let (rows, ids) = (self.inner.clone(), ids.to_vec());
        self.at_home(async move { rows.existing(&ids).await }).await
    }

    async fn positions_of(&self, ids: &[Uuid]) -> Result<Vec<(Uuid, u64)>, PortError> {
        let (rows, ids) = (self.inner.clone(), ids.to_vec());
        self.at_home(async move { rows.positions_of(&ids).await })
            .await
    }

    async fn positions_since(&self, horizon: i64) -> Result<Since<(Uuid, u64)>, PortError> {
        let rows = self.inner.clone();
        self.at_home(async move { rows.positions_since(horizon).await })
            .await
    }

    async fn leases_since(&self, horizon: i64) -> Result<Since<LeaseRow>, PortError> {
        let rows = self.inner.clone();
        self.at_home(async move { rows.leases_since(horizon).await })
            .await
    }

    async fn take(
        &self,
        me: &Me,
        workspaces: &[Uuid],
    ) -> Result<(Vec<(Uuid, u64)>, Instant), PortError> {
        let (rows, me, ids) = (self.inner.clone(), me.clone(), workspaces.to_vec());
        self.at_home(async move { rows.take(&me, &ids).await })
            .await
    }

    async fn release(&self, me: &Me, workspaces: &[Uuid]) -> Result<Vec<Uuid>, PortError> {
        let (rows, me, ids) = (self.inner.clone(), me.clone(), workspaces.to_vec());
        self.at_home(async move { rows.release(&me, &ids).await })
            .await
    }

    async fn release_all(&self, me: &Me) -> Result<Vec<Uuid>, PortError> {
        let (rows, me) = (self.inner.clone(), me.clone());
        self.at_home(async move { rows.release_all(&me).await })
            .await
    }

    async fn report(&self, me: &Me, changes: &[(Uuid, Option<u64>)]) -> Result<(), PortError> {
        let (rows, me, changes) = (self.inner.clone(), me.clone(), changes.to_vec());
        self.at_home(async move { rows.report(&me, &changes).await })
            .await
    }

    async fn holdings_since(&self, horizon: i64) -> Result<Since<HoldingRow>, PortError> {
        let rows = self.inner.clone();
        self.at_home(async move { rows.holdings_since(horizon).await })
            .await
    }

    async fn drop_holdings(&self, me: &Me) -> Result<(), PortError> {
        let (rows, me) = (self.inner.clone(), me.clone());
        self.at_home(async move { rows.drop_holdings(&me).await })
            .await
    }

    async fn lags(&self) -> Result<Vec<(Uuid, String, u64)>, PortError> {
        let rows = self.inner.clone();
        self.at_home(async move { rows.lags().await }).await
    }

    async fn publish_key(&self, me: &Me, key_id: &str, public_key: &[u8]) -> Result<(), PortError> {
        let (rows, me) = (self.inner.clone(), me.clone());
        let (key_id, public_key) = (key_id.to_string(), public_key.to_vec());
        self.at_home(async move { rows.publish_key(&me, &key_id, &public_key).await })
            .await
    }

    async fn public_keys(&self) -> Result<Vec<Vec<u8>>, PortError> {
        let rows = self.inner.clone();
        self.at_home(async move { rows.public_keys().await }).await
    }

    async fn write_windows(
        &self,
        me: &Me,
        windows: &[KeyWindow],
        oldest: i64,
    ) -> Result<(), PortError> {
        let (rows, me, windows) = (self.inner.clone(), me.clone(), windows.to_vec());
        self.at_home(async move { rows.write_windows(&me, &windows, oldest).await })
            .await
    }

    async fn windows_of(
        &self,
        workspaces: &[Uuid],
        oldest: i64,
    ) -> Result<Vec<KeyWindow>, PortError> {
        let (rows, ids) = (self.inner.clone(), workspaces.to_vec());
        self.at_home(async move { rows.windows_of(&ids, oldest).await })
            .await
    }
}
