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

use dashmap::DashMap;
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

/// The writer leases this server holds (see the module's docs).
pub struct Fences {
    /// This server's node name, as `workspace_leases.holder` says it.
    pub node: String,
    /// This start's id, as `workspace_leases.incarnation` says it.
    pub incarnation: String,
    /// How long a lease lasts unrenewed (a lease a first commit takes included).
    pub lease: Duration,
    /// Per workspace written, its lease's epoch and when it was held (a tick of
    /// `ticks`).
    held: DashMap<Uuid, (u64, u64)>,
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

    /// The epoch of the workspace's lease, when this server holds it.
    pub fn epoch(&self, workspace: Uuid) -> Option<u64> {
        self.held.get(&workspace).map(|e| e.0)
    }

    /// Holds the workspace's lease at `epoch` (taken, and the state caught up).
    pub fn hold(&self, workspace: Uuid, epoch: u64) {
        let tick = self.tick();
        self.held.insert(workspace, (epoch, tick));
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
    /// this server still holds), and those held after the renewal's `tick`: a lease
    /// taken while the renewal ran is not in what it read, and is this server's all
    /// the same.
    pub fn keep_only(&self, still: &std::collections::HashMap<Uuid, u64>, tick: u64) {
        self.held
            .retain(|ws, (epoch, held_at)| *held_at > tick || still.get(ws) == Some(epoch));
    }

    /// Holds nothing from now on (a server that leaves).
    pub fn drop_all(&self) {
        self.held.clear();
    }
}
