//! Fencing: with several servers on one PostgreSQL store, only a workspace's writer
//! commits it.
//!
//! A workspace's writer holds its row in `workspace_leases` (holder, incarnation,
//! epoch), taken by the cluster (`crate::cluster`); the lease holds while the holder's
//! node row is alive under that incarnation (`super::cluster`). [`Fences`] is what this
//! server holds now: for each workspace it writes, the epoch of its lease. Every commit
//! transaction of a fenced store checks its lease first, in the same transaction
//! (holder, incarnation and epoch as held, and the node's lease not passed by the
//! database's clock) and keeps the row share-locked until it ends. A server that lost
//! its lease (it was stopped past its node's lease, and another took the workspace)
//! commits nothing: the check fails and the transaction writes nothing. Taking or giving
//! up a lease updates its row, which waits for every commit that checked it: so a new
//! writer reads the store's position only after the last commit of the old writer has
//! ended, and never misses it. A workspace no server has taken yet is refused too: its
//! first writer takes it deliberately (an import makes its node the writer first).
//!
//! The leases held are also timed by this server's own clock: they count as held until
//! [`Fences::lease`] after the moment just before the transaction that last renewed the
//! node's row began (so never past the store's `lease_until`, which that transaction's
//! `now()` set). A server stopped past its lease therefore knows on waking, before any
//! renewal tells it, that it may no longer write or answer as the writer: its requests
//! go to whoever writes the workspace now.

use dashmap::DashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use uuid::Uuid;

/// The writer leases this server holds (see the module's docs).
pub struct Fences {
    /// This server's node name, as `workspace_leases.holder` says it.
    pub node: String,
    /// This start's id, as `workspace_leases.incarnation` says it.
    pub incarnation: String,
    /// How long the node's row holds unrenewed.
    pub lease: Duration,
    /// Per workspace written, the epoch of its lease.
    held: DashMap<Uuid, u64>,
    /// Until when the node's row holds by this server's clock, in nanoseconds after
    /// `base` (0: never renewed).
    until: AtomicU64,
    base: Instant,
    /// Moved on by every change to `held` (see [`Fences::changes`]).
    changes: AtomicU64,
}

impl Fences {
    pub fn new(node: String, incarnation: String, lease: Duration) -> Arc<Fences> {
        Arc::new(Fences {
            node,
            incarnation,
            lease,
            held: DashMap::new(),
            until: AtomicU64::new(0),
            base: Instant::now(),
            changes: AtomicU64::new(0),
        })
    }

    fn nanos(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.base).as_nanos() as u64
    }

    /// Whether the node's row holds by this server's clock.
    pub fn alive(&self) -> bool {
        self.nanos(Instant::now()) < self.until.load(Ordering::Acquire)
    }

    /// The epoch of the workspace's lease, when this server holds it and its node's row
    /// has not passed by this server's clock.
    pub fn epoch(&self, workspace: Uuid) -> Option<u64> {
        if !self.alive() {
            return None;
        }
        self.held.get(&workspace).map(|e| *e)
    }

    /// The node's row was renewed (or taken) by a transaction that began after `began`:
    /// every lease held holds until `began` plus the lease.
    pub fn renewed(&self, began: Instant) {
        self.until
            .fetch_max(self.nanos(began + self.lease), Ordering::AcqRel);
    }

    /// A count that moves on whenever the set of leases held changes (one taken, given
    /// up, lost or dropped): who acts on what this server writes reads the set again
    /// only when it moved, so an idle server's look costs nothing per workspace.
    pub fn changes(&self) -> u64 {
        self.changes.load(Ordering::Acquire)
    }

    fn changed(&self) {
        self.changes.fetch_add(1, Ordering::AcqRel);
    }

    /// Holds the workspace's lease at `epoch` (taken, and the copy caught up).
    pub fn hold(&self, workspace: Uuid, epoch: u64) {
        self.held.insert(workspace, epoch);
        self.changed();
    }

    /// Holds the lease no more (given up): its commits are refused from now on.
    pub fn drop_lease(&self, workspace: Uuid) {
        if self.held.remove(&workspace).is_some() {
            self.changed();
        }
    }

    /// Drops the workspace's lease if the store's row says another holds it now: a
    /// later epoch, or this epoch under another holder. A row read before this server
    /// took the lease (an earlier epoch) changes nothing.
    pub fn superseded(&self, workspace: Uuid, epoch: u64, mine: bool) -> bool {
        let dropped = self.held.remove_if(&workspace, |_, held| {
            epoch > *held || (epoch == *held && !mine)
        });
        if dropped.is_some() {
            self.changed();
        }
        dropped.is_some()
    }

    /// The workspaces whose leases this server holds (by the store's last word).
    pub fn held(&self) -> Vec<Uuid> {
        self.held.iter().map(|e| *e.key()).collect()
    }

    /// The leases this server holds, each workspace with its epoch (by the store's last
    /// word).
    pub fn epochs(&self) -> Vec<(Uuid, u64)> {
        self.held.iter().map(|e| (*e.key(), *e.value())).collect()
    }

    /// Holds nothing from now on (a server that leaves).
    pub fn drop_all(&self) {
        self.held.clear();
        self.changed();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leases_hold_by_this_clock_while_the_node_is_renewed() {
        let lease = Duration::from_millis(200);
        let fences = Fences::new("a".into(), "a-1".into(), lease);
        let w = Uuid::new_v4();
        fences.hold(w, 3);
        assert_eq!(fences.epoch(w), None, "a node never renewed holds nothing");
        fences.renewed(Instant::now());
        assert_eq!(fences.epoch(w), Some(3));
        // A renewal that began longer ago than a lease extends nothing.
        std::thread::sleep(Duration::from_millis(120));
        fences.renewed(Instant::now() - lease - Duration::from_millis(1));
        std::thread::sleep(Duration::from_millis(120));
        assert_eq!(fences.epoch(w), None, "passed by this clock alone");
        fences.renewed(Instant::now());
        assert_eq!(fences.epoch(w), Some(3), "renewed: it holds again");

        // A row of an earlier epoch changes nothing; a later one, or this epoch under
        // another holder, drops it.
        assert!(!fences.superseded(w, 2, false));
        assert!(!fences.superseded(w, 3, true));
        assert_eq!(fences.epoch(w), Some(3));
        assert!(fences.superseded(w, 3, false));
        assert_eq!(fences.epoch(w), None);
        fences.hold(w, 5);
        assert!(fences.superseded(w, 6, true));
        assert_eq!(fences.held(), Vec::<Uuid>::new());
    }

    #[test]
    fn every_change_to_the_leases_held_moves_the_count() {
        let fences = Fences::new("a".into(), "a-1".into(), Duration::from_secs(5));
        let (w, v) = (Uuid::new_v4(), Uuid::new_v4());
        let mut last = fences.changes();
        let mut moved = |fences: &Fences| {
            let now = fences.changes();
            let did = now != last;
            last = now;
            did
        };
        fences.hold(w, 1);
        assert!(moved(&fences), "taken");
        fences.renewed(Instant::now());
        assert!(!moved(&fences), "a renewal changes no lease");
        assert!(!fences.superseded(w, 1, true));
        assert!(!moved(&fences), "a row of its own epoch");
        fences.hold(v, 1);
        assert!(moved(&fences), "taken");
        assert!(fences.superseded(v, 2, false));
        assert!(moved(&fences), "lost");
        fences.drop_lease(v);
        assert!(!moved(&fences), "not held: nothing to drop");
        fences.drop_lease(w);
        assert!(moved(&fences), "given up");
        fences.hold(w, 2);
        fences.drop_all();
        assert!(moved(&fences), "all dropped");
    }
}
