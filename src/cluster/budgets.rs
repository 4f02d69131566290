//! A key's budget across a change of writer.
//!
//! Every request of a workspace is answered by its writer ([`super::router`]), so while
//! the writer stays, one limiter counts every request of the workspace's keys and the
//! budget is exact. So that the next writer (after a failover or a hand-over) goes on
//! from the same count rather than from an empty window:
//! - each node shares the windows of the keys it counted: every [`SHARE_EVERY`] it writes
//!   those that changed to `key_budgets` (one row per key and node: the node's per-second
//!   counts of the last 61 seconds), and once more when it hands its leases over, after
//!   its last requests as writer;
//! - a node that takes a workspace's writer lease merges that workspace's rows into its
//!   own windows before it answers anything as the writer
//!   ([`Membership::merge_budgets`]).
//!
//! The merge takes, second by second, the larger count: in any second a key's requests
//! are counted by the one node that writes its workspace, and a node's row carries what
//! it merged when it took over, so adding the rows up would count requests twice.
//! What a change of writer can lose is what the old writer counted after its last share:
//! nothing on a hand-over, at most the last second before a crash (`kill -9`): the
//! budget holds to ±1 s of its window, within what the cluster promises (±1 s or ±5%).

use super::Membership;
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

/// How often a node shares the windows that changed.
pub const SHARE_EVERY: Duration = Duration::from_secs(1);

/// Seconds a window covers: the current one and the 60 before it.
pub const SECONDS: usize = 61;

/// One key's requests per second as one node counted them (merged ones included).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyWindow {
    pub workspace: Uuid,
    pub key: String,
    /// The newest second counted (Unix seconds).
    pub newest: i64,
    /// `counts[i]`: requests in second `newest - 60 + i`.
    pub counts: [u32; SECONDS],
}

impl KeyWindow {
    /// The counts as stored: 61 big-endian `u32`s, oldest second first.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        self.counts.iter().flat_map(|c| c.to_be_bytes()).collect()
    }

    pub(crate) fn from_row(
        workspace: Uuid,
        key: String,
        newest: i64,
        bytes: &[u8],
    ) -> Option<KeyWindow> {
        if bytes.len() != SECONDS * 4 {
            return None;
        }
        let mut counts = [0u32; SECONDS];
        for (c, b) in counts.iter_mut().zip(bytes.chunks_exact(4)) {
            *c = u32::from_be_bytes(b.try_into().ok()?);
        }
        Some(KeyWindow {
            workspace,
            key,
            newest,
            counts,
        })
    }
}

/// The node's per-key limiter, as the cluster shares it.
pub trait Budgets: Send + Sync + 'static {
    /// The windows of the keys that counted a request since the last call.
    fn changed(&self) -> Vec<KeyWindow>;
    /// Merges windows counted elsewhere into this node's, second by second taking the
    /// larger count.
    fn merge(&self, windows: &[KeyWindow]);
    /// Unix seconds by the limiter's clock.
    fn now(&self) -> i64;
}

impl Membership {
    /// Shares this node's key budgets with the cluster (see the module's docs). Until
    /// it is called, a node's budgets are its own.
    pub fn share_budgets(&self, budgets: Arc<dyn Budgets>) {
        let _ = self.budgets.set(budgets);
    }

    /// Writes the windows that changed every [`SHARE_EVERY`] while the process runs
    /// (on its own, a node shares with nobody).
    pub async fn keep_sharing_budgets(self: Arc<Self>) {
        if !self.store.shared() {
            return;
        }
        // A tick, not a sleep after each write: a slow write must not stretch the
        // period, since what a crash can lose is what was counted since the last share.
        let mut every = tokio::time::interval(SHARE_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        every.tick().await;
        loop {
            every.tick().await;
            if let Err(e) = self.write_budgets().await {
                tracing::warn!(error = %format!("{e:#}"), "sharing the keys' budgets");
            }
        }
    }

    /// Writes the windows that changed since the last write, and deletes the rows (of
    /// any node) whose newest second has left every window.
    pub(super) async fn write_budgets(&self) -> anyhow::Result<()> {
        let Some(budgets) = self.budgets.get() else {
            return Ok(());
        };
        let changed = budgets.changed();
        self.store
            .write_windows(&self.row, &changed, budgets.now() - SECONDS as i64)
            .await
    }

    /// Merges what every node counted for the keys of `workspaces` into this node's
    /// windows: done when this node takes their writer leases, before it answers as
    /// their writer.
    pub(super) async fn merge_budgets(&self, workspaces: &[Uuid]) -> anyhow::Result<()> {
        let Some(budgets) = self.budgets.get() else {
            return Ok(());
        };
        if workspaces.is_empty() {
            return Ok(());
        }
        let windows = self
            .store
            .windows_of(workspaces, budgets.now() - SECONDS as i64)
            .await?;
        budgets.merge(&windows);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_reads_back_as_it_was_stored() {
        let mut counts = [0u32; SECONDS];
        counts[0] = 1;
        counts[60] = 70_000;
        let w = KeyWindow {
            workspace: Uuid::new_v4(),
            key: "k".into(),
            newest: 1_790_000_000,
            counts,
        };
        let back = KeyWindow::from_row(w.workspace, w.key.clone(), w.newest, &w.to_bytes());
        assert_eq!(back, Some(w.clone()));
        assert_eq!(
            KeyWindow::from_row(w.workspace, w.key, w.newest, &[0; 8]),
            None
        );
    }
}
