//! Fencing: with several servers on one PostgreSQL store, only a workspace's writer
//! commits it.
//!
//! A workspace's writer holds its row in `workspace_leases` (holder, incarnation, epoch,
//! lease), taken and renewed by the cluster (`crate::cluster`). [`Fences`] is what this
//! server holds now: for each workspace it writes, the epoch of its lease. Every commit
//! transaction of a fenced store checks its lease first, in the same transaction
//! (`holder`, `incarnation`, `epoch` as held, lease not passed by the database's clock)
//! and keeps it locked (`FOR KEY SHARE`) until it ends. A server that lost its lease (it
//! was stopped past it, and another took the workspace) commits nothing: the check fails
//! and the transaction writes nothing. Taking a lease deletes the old row and inserts
//! the next epoch, which waits for every commit that checked the old one: so a new
//! writer reads the store's position only after the last commit of the old writer has
//! ended, and never misses it.
//!
//! A workspace that has no lease row yet (created since) is taken by its first commit,
//! in that commit's transaction, at epoch 1.
//!
//! Each lease held is also timed by this server's own clock: it counts as held until
//! [`Fences::lease`] after the moment just before the transaction that took or last
//! renewed it began (so never past the store's `lease_until`, which that transaction's
//! `now()` set). A server stopped past its lease therefore knows on waking, before any
//! renewal tells it, that it may no longer write or answer as the writer: its requests
//! go to whoever writes the workspace now.

use dashmap::DashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use uuid::Uuid;

/// One lease held.
#[derive(Clone, Copy, Debug)]
struct HeldLease {
    epoch: u64,
    /// When it was held (a tick of `Fences::ticks`).
    held_at: u64,
    /// Until when it holds by this server's clock.
    until: Instant,
}

/// The writer leases this server holds (see the module's docs).
pub struct Fences {
    /// This server's node name, as `workspace_leases.holder` says it.
    pub node: String,
    /// This start's id, as `workspace_leases.incarnation` says it.
    pub incarnation: String,
    /// How long a lease lasts unrenewed (a lease a first commit takes included).
    pub lease: Duration,
    /// Per workspace written, its lease.
    held: DashMap<Uuid, HeldLease>,
    /// Orders holds against renewals: see [`Fences::keep_only`].
    ticks: std::sync::atomic::AtomicU64,
}

impl Fences {
    pub fn new(node: String, incarnation: String, lease: Duration) -> Arc<Fences> {
        Arc::new(Fences {
            node,
            incarnation,
            lease,
            held: DashMap::new(),
            ticks: Default::default(),
        })
    }

    /// The epoch of the workspace's lease, when this server holds it and it has not
    /// passed by this server's clock.
    pub fn epoch(&self, workspace: Uuid) -> Option<u64> {
        let now = Instant::now();
        self.held
            .get(&workspace)
            .filter(|l| l.until > now)
            .map(|l| l.epoch)
    }

    /// Holds the workspace's lease at `epoch` (taken, and the state caught up), by the
    /// transaction that took it, which began after `began`.
    pub fn hold(&self, workspace: Uuid, epoch: u64, began: Instant) {
        let held_at = self.tick();
        self.held.insert(
            workspace,
            HeldLease {
                epoch,
                held_at,
                until: began + self.lease,
            },
        );
    }

    /// A new tick: taken by a renewal before it reads which leases this server still
    /// holds, and by every hold.
    pub fn tick(&self) -> u64 {
        self.ticks.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
    }

    /// Holds the lease no more (given up or lost): its commits are refused from now on.
    pub fn drop_lease(&self, workspace: Uuid) {
        self.held.remove(&workspace);
    }

    /// Keeps only the leases `still` names at the epochs it gives (what a renewal found
    /// this server still holds), renewed by a transaction that began after `began`, and
    /// those held after the renewal's `tick`: a lease taken while the renewal ran is not
    /// in what it read, and is this server's all the same.
    pub fn keep_only(
        &self,
        still: &std::collections::HashMap<Uuid, u64>,
        tick: u64,
        began: Instant,
    ) {
        let until = began + self.lease;
        self.held.retain(|ws, l| {
            if l.held_at > tick {
                return true;
            }
            let renewed = still.get(ws) == Some(&l.epoch);
            if renewed {
                l.until = l.until.max(until);
            }
            renewed
        });
    }

    /// Holds nothing from now on (a server that leaves).
    pub fn drop_all(&self) {
        self.held.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn a_lease_holds_by_this_clock_until_renewed_or_passed() {
        let lease = Duration::from_millis(200);
        let fences = Fences::new("a".into(), "a-1".into(), lease);
        let (w, passed) = (Uuid::new_v4(), Uuid::new_v4());
        let now = Instant::now();
        fences.hold(w, 3, now);
        // Taken by a transaction that began longer ago than a lease: passed already.
        fences.hold(passed, 1, now - lease - Duration::from_millis(1));
        assert_eq!(fences.epoch(w), Some(3));
        assert_eq!(fences.epoch(passed), None);

        // A renewal that began later extends it; one that found it gone drops it.
        std::thread::sleep(Duration::from_millis(120));
        let tick = fences.tick();
        fences.keep_only(&HashMap::from([(w, 3), (passed, 1)]), tick, Instant::now());
        std::thread::sleep(Duration::from_millis(120));
        assert_eq!(fences.epoch(w), Some(3), "renewed past its first lease");
        assert_eq!(fences.epoch(passed), Some(1), "renewed: it holds again");
        let tick = fences.tick();
        fences.keep_only(&HashMap::from([(w, 4)]), tick, Instant::now());
        assert_eq!(fences.epoch(w), None, "another epoch is not this one");
        assert_eq!(fences.epoch(passed), None);

        // Unrenewed, a lease passes by this clock alone.
        fences.hold(w, 5, Instant::now());
        std::thread::sleep(lease + Duration::from_millis(20));
        assert_eq!(fences.epoch(w), None);
    }
}
