//! The cluster of a node alone on its store for good (the embedded SQLite store, whose
//! lock refuses a second server): the node is the whole cluster, holds every lease it
//! asks for and every copy it reports, and nothing changes behind its back. Kept in
//! memory; nothing of it is stored.

use super::budgets::KeyWindow;
use super::port::{ClusterStore, HoldingRow, LeaseRow, Me, NodeRow, NodeStatus, PortError, Since};
use parking_lot::Mutex;
use std::collections::HashMap;
use uuid::Uuid;

/// See the module's docs.
#[derive(Default)]
pub struct Solo {
    me: Mutex<Option<NodeRow>>,
    leases: Mutex<HashMap<Uuid, u64>>,
}

#[async_trait::async_trait]
impl ClusterStore for Solo {
    fn shared(&self) -> bool {
        false
    }

    async fn take_name(&self, me: &Me, _: u64) -> Result<bool, PortError> {
        *self.me.lock() = Some(NodeRow {
            name: me.name.clone(),
            advertise_url: me.advertise_url.clone(),
            incarnation: me.incarnation.clone(),
            cert_sha256: me.cert_sha256.clone(),
            secret_sha256: me.secret_sha256.clone(),
        });
        Ok(true)
    }

    async fn renew(&self, _: &Me, _: u64) -> Result<bool, PortError> {
        Ok(true)
    }

    async fn holder_of_name(&self, _: &str) -> Result<Option<String>, PortError> {
        Ok(None)
    }

    async fn leave(&self, _: &Me) -> Result<(), PortError> {
        self.leases.lock().clear();
        Ok(())
    }

    async fn live_nodes(&self) -> Result<Vec<NodeRow>, PortError> {
        Ok(self.me.lock().iter().cloned().collect())
    }

    async fn all_nodes(&self) -> Result<Vec<NodeStatus>, PortError> {
        Ok(self
            .me
            .lock()
            .iter()
            .map(|n| NodeStatus {
                row: n.clone(),
                alive: true,
                version: Some(crate::VERSION.to_string()),
                renewed_ms_ago: Some(0),
            })
            .collect())
    }

    async fn workspace_ids(&self) -> Result<Vec<Uuid>, PortError> {
        // The node's loader found them all; nothing appears but through it.
        Ok(Vec::new())
    }

    async fn existing(&self, ids: &[Uuid]) -> Result<Vec<Uuid>, PortError> {
        Ok(ids.to_vec())
    }

    async fn positions_of(&self, _: &[Uuid]) -> Result<Vec<(Uuid, u64)>, PortError> {
        Ok(Vec::new())
    }

    async fn positions_since(&self, horizon: i64) -> Result<Since<(Uuid, u64)>, PortError> {
        // Nobody else commits: nothing to follow.
        Ok(Since {
            rows: Vec::new(),
            next: horizon,
        })
    }

    async fn leases_since(&self, horizon: i64) -> Result<Since<LeaseRow>, PortError> {
        // Only this node takes leases, and it knows what it took.
        Ok(Since {
            rows: Vec::new(),
            next: horizon,
        })
    }

    async fn take(
        &self,
        _: &Me,
        workspaces: &[Uuid],
    ) -> Result<(Vec<(Uuid, u64)>, std::time::Instant), PortError> {
        let began = std::time::Instant::now();
        let mut leases = self.leases.lock();
        let taken = workspaces
            .iter()
            .map(|w| (*w, *leases.entry(*w).or_insert(1)))
            .collect();
        Ok((taken, began))
    }

    async fn release(&self, _: &Me, workspaces: &[Uuid]) -> Result<Vec<Uuid>, PortError> {
        let mut leases = self.leases.lock();
        Ok(workspaces
            .iter()
            .filter(|w| leases.remove(w).is_some())
            .copied()
            .collect())
    }

    async fn release_all(&self, _: &Me) -> Result<Vec<Uuid>, PortError> {
        Ok(self.leases.lock().drain().map(|(w, _)| w).collect())
    }

    async fn report(&self, _: &Me, _: &[(Uuid, Option<u64>)]) -> Result<(), PortError> {
        Ok(())
    }

    async fn holdings_since(&self, horizon: i64) -> Result<Since<HoldingRow>, PortError> {
        Ok(Since {
            rows: Vec::new(),
            next: horizon,
        })
    }

    async fn drop_holdings(&self, _: &Me) -> Result<(), PortError> {
        Ok(())
    }

    async fn lags(&self) -> Result<Vec<(Uuid, String, u64)>, PortError> {
        Ok(Vec::new())
    }

    async fn publish_key(&self, _: &Me, _: &str, _: &[u8]) -> Result<(), PortError> {
        Ok(())
    }

    async fn public_keys(&self) -> Result<Vec<Vec<u8>>, PortError> {
        Ok(Vec::new())
    }

    async fn write_windows(&self, _: &Me, _: &[KeyWindow], _: i64) -> Result<(), PortError> {
        Ok(())
    }

    async fn windows_of(&self, _: &[Uuid], _: i64) -> Result<Vec<KeyWindow>, PortError> {
        Ok(Vec::new())
    }
}
