//! A node's rounds: every [`RENEW_EVERY`](super::RENEW_EVERY), or at once when told
//! (`Membership::wake`), a node
//! 1. renews its row, and with it every writer lease it holds (one statement; on a
//!    timer of its own, so that a long round never lets its leases pass);
//! 2. reports what changed of its copies: loaded, let go, or moved on (one statement,
//!    none when nothing did);
//! 3. reads what changed of the others' (the live nodes, and the leases and holdings
//!    written since its last read: horizon reads, no row at all when nothing did);
//! 4. when anything changed, decides for every workspace it knows, from the directory
//!    alone, and carries it out:
//!    - a workspace placed here and not held is loaded (a few at a time, the next as
//!      soon as one is done);
//!    - a workspace held here and placed elsewhere is let go once every node it is
//!      placed on has it loaded and this node does not write it (until then this copy
//!      is one the workspace may need: its reads while the writer is replaced, or its
//!      next writer);
//!    - the lease of a workspace this node should write (`Directory::should_write`) is
//!      taken, and one it should not is handed over (`super::leases`).
//!
//! So a node joining takes about `replicas / N` of the holdings, loading each before the
//! node it replaces lets it go, and writers follow as each placed node has its copy:
//! within a round of each load, every workspace is written by its best placed node that
//! has it, and by none that lacks it. An idle cluster reads and writes a few rows a
//! second per node, however many workspaces it holds.

use super::leases::Held;
use super::{Membership, LEASE, RENEW_EVERY};
use smallvec::SmallVec;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use uuid::Uuid;

/// A node lets nothing go during its first seconds: until the leases of nodes that died
/// just before it started have passed, the directory still counts their copies.
const UNLOAD_AFTER: Duration = Duration::from_millis(LEASE.as_millis() as u64 + 2000);

/// Longest a starting node waits for its peers to hand over the leases it should hold
/// before it says it is ready: a peer's round comes within a second, and a lease
/// whose holder was killed passes within [`LEASE`].
const SETTLE_WITHIN: Duration = Duration::from_millis(LEASE.as_millis() as u64 + 2000);

/// Most workspaces a node loads at once because they became placed on it: the rest wait
/// for these (the node's memory and cores are its requests' first).
const LOADS_AT_ONCE: usize = 4;

/// What a node's rounds keep between them.
#[derive(Default)]
pub struct RoundState {
    /// Every workspace of the store this node knows of: read once at start, then found
    /// as their first commits land (`super::follow`).
    known: HashSet<Uuid>,
    /// What this node last reported of its copies: workspace → position.
    reported: HashMap<Uuid, u64>,
    /// `Held::generation` when the rounds last reported: while it stays, nothing of
    /// the copies changed, and no round walks them.
    reported_generation: Option<u64>,
    /// Where each known workspace is placed, for the live nodes of `placed_among`.
    placed: HashMap<Uuid, SmallVec<[Arc<str>; 3]>>,
    placed_among: Vec<String>,
    /// Workspaces being loaded because they are placed here.
    loading: HashSet<Uuid>,
    /// Whether something changed since the last decisions (or they left work undone).
    dirty: bool,
    /// Whether the decisions have let copies go yet (not in the first seconds).
    unloads_allowed: bool,
}

impl Membership {
    /// Renews the node's row every [`RENEW_EVERY`], and runs the rounds, for as long as
    /// the process runs (on its own, a node has nothing to renew, report or decide).
    /// The renewals run on their own: a round that takes long (many leases taken, each
    /// copy caught up first) never lets the node's lease, and with it every lease it
    /// holds, pass.
    pub async fn keep_alive(self: Arc<Self>, held: Arc<dyn Held>) {
        if !self.store.shared() {
            return;
        }
        actix_web::rt::spawn(self.clone().keep_renewing());
        loop {
            tokio::select! {
                () = tokio::time::sleep(RENEW_EVERY) => {}
                () = self.wake.notified() => {}
            }
            if self.leaving_cluster.load(Ordering::Acquire) {
                return;
            }
            self.round(&held).await;
        }
    }

    /// Renews the node's row every [`RENEW_EVERY`].
    async fn keep_renewing(self: Arc<Self>) {
        loop {
            tokio::time::sleep(RENEW_EVERY).await;
            if self.leaving_cluster.load(Ordering::Acquire) {
                return;
            }
            self.renew().await;
        }
    }

    /// Renews the node's row (and so every lease it holds): whether it still holds its
    /// name. One whose name another start took (it was stopped past its lease) says so,
    /// holds no lease from then on, and takes the name back as soon as that start's
    /// lease passes.
    async fn renew(&self) -> bool {
        let began = Instant::now();
        match self.store.renew(&self.row, LEASE.as_millis() as u64).await {
            Ok(true) => {
                self.fences.renewed(began);
                if self.lost.swap(false, Ordering::Relaxed) {
                    tracing::warn!(node = %self.me.name, "holds its node name again");
                }
                true
            }
            Ok(false) if self.leaving_cluster.load(Ordering::Acquire) => false,
            Ok(false) => {
                if !self.lost.swap(true, Ordering::Relaxed) {
                    tracing::error!(
                        node = %self.me.name,
                        "another start holds this node's name (this one was stopped past \
                         its lease): its membership is lost until that lease passes"
                    );
                }
                self.fences.drop_all();
                if let Err(e) = self
                    .store
                    .take_name(&self.row, LEASE.as_millis() as u64)
                    .await
                {
                    tracing::warn!(error = %format!("{e:#}"), "taking the node name back");
                }
                false
            }
            Err(e) => {
                tracing::warn!(node = %self.me.name, error = %format!("{e:#}"), "renewing the node's lease");
                false
            }
        }
    }

    /// Whether a workspace is placed on this node among the live nodes now (on its own,
    /// every workspace is): what a start loads. A node killed a moment ago is not live
    /// (its store session ended with it), so what it held is this start's to load.
    pub fn placed_here(&self) -> impl Fn(Uuid) -> bool + use<> {
        let directory = self.directory();
        let (me, replicas) = (self.me.name.clone(), self.me.replicas);
        move |ws| {
            let placed = directory.placed(ws, replicas);
            placed.is_empty() || placed.contains(&me.as_str())
        }
    }

    /// The workspaces of the store this node starts with (read once): what its rounds
    /// place.
    pub async fn know(&self, workspaces: impl IntoIterator<Item = Uuid>) {
        let mut st = self.rounds.lock().await;
        st.known.extend(workspaces);
        st.dirty = true;
    }

    /// Whether this node knows `workspace` as one of the store's.
    pub(super) async fn knows(&self, workspace: Uuid) -> bool {
        self.rounds.lock().await.known.contains(&workspace)
    }

    /// Workspaces found since the start (their first import committed): known from now
    /// on, and placed at once.
    pub(super) async fn found(&self, workspaces: Vec<Uuid>) {
        if workspaces.is_empty() {
            return;
        }
        {
            let mut st = self.rounds.lock().await;
            st.known.extend(workspaces);
            st.dirty = true;
        }
        self.wake.notify_one();
    }

    /// Runs rounds until this node writes what it should (the start runs this once its
    /// loads are done, before it says it is ready). The leases free now are taken in
    /// the first round; those other nodes write are handed over once their next round
    /// reads this node's copies, and this node takes them when told (`take_now`). So a
    /// node that says it is ready carries its share, and no workspace is left between
    /// writers by its join after that. A peer that does not hand over (stalled, or
    /// killed a moment ago with its leases still running) is waited for at most
    /// [`SETTLE_WITHIN`]; its leases are then taken by the rounds as they pass.
    /// Rounds never overlap.
    pub async fn settle(self: &Arc<Self>, held: &Arc<dyn Held>) {
        if self.store.shared() {
            let deadline = Instant::now() + SETTLE_WITHIN;
            self.round(held).await;
            loop {
                let waiting = self.writes_to_come(held);
                if waiting == 0 {
                    break;
                }
                if Instant::now() >= deadline {
                    tracing::info!(
                        workspaces = waiting,
                        "ready before writing every workspace it should: their writers \
                         have not handed them over yet"
                    );
                    break;
                }
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(200)) => {}
                    () = self.wake.notified() => {}
                }
                self.round(held).await;
            }
        }
        self.settled.store(true, Ordering::Release);
    }

    /// How many workspaces loaded here this node should write by the directory and does
    /// not write yet.
    fn writes_to_come(&self, held: &Arc<dyn Held>) -> usize {
        let d = self.directory();
        let me = self.me.name.as_str();
        if !d.live().any(|n| n == me) {
            return 0;
        }
        held.held()
            .into_iter()
            .filter(|(ws, _)| {
                let placed = d.placed(*ws, self.me.replicas);
                d.should_write(*ws, &placed) == Some(me) && self.fences.epoch(*ws).is_none()
            })
            .count()
    }

    /// One round (see the module's docs). The first, at start, renews the row first.
    async fn round(self: &Arc<Self>, held: &Arc<dyn Held>) {
        let _one_at_a_time = self.round_running.lock().await;
        if !self.is_settled() && !self.renew().await {
            return;
        }
        if self.lost.load(Ordering::Relaxed) {
            return;
        }
        if self.handing_over() {
            // Stopping: the directory still matters (requests are passed on), the
            // leases and holdings no longer do.
            let _ = self.read_directory().await;
            return;
        }
        // Only when a copy was loaded, let go or moved on since the last report: an
        // idle node walks none of its thousands of copies.
        let generation = held.generation();
        if self.rounds.lock().await.reported_generation != Some(generation) {
            match self.report(&held.held()).await {
                Ok(()) => self.rounds.lock().await.reported_generation = Some(generation),
                Err(e) => tracing::warn!(error = %format!("{e:#}"), "reporting the node's copies"),
            }
        }
        if let Err(e) = self.read_directory().await {
            tracing::warn!(error = %format!("{e:#}"), "reading the cluster's directory");
            return;
        }
        self.place(held).await;
    }

    /// Reports what changed of this node's copies since the last report (`held`: what
    /// it holds now). Reports nothing of a node handing over: no node counts on its
    /// copies any more.
    pub(super) async fn report(&self, held: &[super::Holding]) -> anyhow::Result<()> {
        if !self.store.shared() || self.handing_over() {
            return Ok(());
        }
        let mut st = self.rounds.lock().await;
        let now: HashMap<Uuid, u64> = held.iter().copied().collect();
        let mut changes: Vec<(Uuid, Option<u64>)> = now
            .iter()
            .filter(|(w, p)| st.reported.get(w) != Some(p))
            .map(|(w, p)| (*w, Some(*p)))
            .collect();
        changes.extend(
            st.reported
                .keys()
                .filter(|w| !now.contains_key(w))
                .map(|w| (*w, None)),
        );
        if changes.is_empty() {
            return Ok(());
        }
        self.store.report(&self.row, &changes).await?;
        // A copy loaded or let go changes decisions; a copy that moved on does not.
        if changes
            .iter()
            .any(|(w, p)| p.is_none() || !st.reported.contains_key(w))
        {
            st.dirty = true;
        }
        st.reported = now;
        Ok(())
    }

    /// Reads what changed of the live nodes, leases and holdings since the last read,
    /// and publishes the directory (one read at a time). A lease the store now gives
    /// another node is no longer held here.
    pub async fn read_directory(&self) -> anyhow::Result<()> {
        let _reading = self.reading.lock().await;
        let mut d = (*self.directory.load_full()).clone();
        let nodes = self.store.live_nodes().await?;
        let leases = self.store.leases_since(d.lease_horizon).await?;
        let holdings = self.store.holdings_since(d.holding_horizon).await?;
        let nodes_changed = d.set_nodes(&nodes);
        let changed = nodes_changed || !leases.rows.is_empty() || !holdings.rows.is_empty();
        for l in &leases.rows {
            let mine = l.holder == self.me.name && l.incarnation == self.row.incarnation;
            if self.fences.superseded(l.workspace, l.epoch, mine) {
                tracing::warn!(workspace = %l.workspace, holder = %l.holder, epoch = l.epoch, "another node took the writer lease");
            }
        }
        d.apply_leases(leases.rows);
        d.apply_holdings(holdings.rows);
        d.lease_horizon = leases.next;
        d.holding_horizon = holdings.next;
        d.read_at = Some(Instant::now());
        self.directory.store(Arc::new(d));
        drop(_reading);
        if changed {
            self.rounds.lock().await.dirty = true;
        }
        if nodes_changed && self.store.shared() {
            // A node that joined published its key before its row.
            if let Err(e) = self.learn_signers().await {
                tracing::warn!(error = %format!("{e:#}"), "reading the nodes' public keys");
            }
        }
        Ok(())
    }

    /// Reads the directory afresh unless it was read less than `age` ago: a request
    /// that finds no writer, or was refused by the node it passed it to, looks again.
    /// Requests that ask together share one read.
    pub async fn read_directory_if_older(&self, age: Duration) {
        let fresh = |m: &Membership| {
            m.directory
                .load()
                .read_at
                .is_some_and(|at| at.elapsed() < age)
        };
        if fresh(self) {
            return;
        }
        let _waiting = self.reading.lock().await;
        if fresh(self) {
            return;
        }
        drop(_waiting);
        if let Err(e) = self.read_directory().await {
            tracing::warn!(error = %format!("{e:#}"), "reading the cluster's directory");
        }
    }

    /// Decides for every workspace this node knows and carries it out (see the module's
    /// docs); nothing when nothing changed since the last decisions.
    async fn place(self: &Arc<Self>, held: &Arc<dyn Held>) {
        let d = self.directory();
        let me = self.me.name.as_str();
        if !d.live().any(|n| n == me) {
            // This node's own lease has passed by the store's word (its renewals do not
            // commit, or its session was lost a moment): it decides nothing on a view
            // without itself, which would have it let go of everything.
            return;
        }
        let may_unload = self.joined.elapsed() > UNLOAD_AFTER;
        let (mut take, mut hand, mut load, mut unload) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        {
            let mut st = self.rounds.lock().await;
            // Once the first seconds have passed, copies may go: decided once then
            // whatever else changed.
            let unloads_now = may_unload && !st.unloads_allowed;
            st.unloads_allowed |= may_unload;
            if !st.dirty && !unloads_now {
                return;
            }
            st.dirty = false;
            let loaded: HashSet<Uuid> = held.held().into_iter().map(|(w, _)| w).collect();
            let known_here: HashSet<Uuid> = held.known().into_iter().collect();
            let mine: HashSet<Uuid> = self.fences.held().into_iter().collect();
            let live: Vec<String> = d.live().map(str::to_string).collect();
            if live != st.placed_among {
                st.placed.clear();
                st.placed_among = live;
            }
            let mut all: HashSet<Uuid> = st.known.clone();
            all.extend(loaded.iter().copied());
            all.extend(mine.iter().copied());
            for ws in all {
                let placed: SmallVec<[Arc<str>; 3]> = st
                    .placed
                    .entry(ws)
                    .or_insert_with(|| {
                        d.placed(ws, self.me.replicas)
                            .into_iter()
                            .map(Arc::from)
                            .collect()
                    })
                    .clone();
                let placed: SmallVec<[&str; 3]> = placed.iter().map(|n| &**n).collect();
                let here = placed.contains(&me);
                let should = d.should_write(ws, &placed);
                let writes = mine.contains(&ws);
                if should == Some(me) && !writes && loaded.contains(&ws) {
                    take.push(ws);
                } else if writes && should.is_some_and(|n| n != me) {
                    hand.push((ws, should.map(str::to_string)));
                }
                if here && !known_here.contains(&ws) && !st.loading.contains(&ws) {
                    load.push(ws);
                } else if !here
                    && may_unload
                    && loaded.contains(&ws)
                    && !writes
                    && !placed.is_empty()
                    && placed.iter().all(|n| d.loaded(ws, n))
                    && !self.is_busy(ws)
                {
                    unload.push(ws);
                }
            }
            let room = LOADS_AT_ONCE.saturating_sub(st.loading.len());
            if load.len() > room {
                // The rest when these are done.
                load.truncate(room);
                st.dirty = true;
            }
            st.loading.extend(load.iter().copied());
        }
        if !unload.is_empty() {
            let gone = held.unload(&unload);
            if let Some(first) = gone.first() {
                tracing::info!(workspaces = gone.len(), %first, "no longer holds workspaces (placed elsewhere, held there)");
            }
        }
        for ws in load {
            let (this, held) = (self.clone(), held.clone());
            actix_web::rt::spawn(async move {
                match held.load(ws).await {
                    Ok(()) => tracing::info!(workspace = %ws, "holds the workspace (placed here)"),
                    Err(e) => {
                        tracing::warn!(workspace = %ws, error = %format!("{e:#}"), "loading a workspace placed here (tried again next round)")
                    }
                }
                {
                    let mut st = this.rounds.lock().await;
                    st.loading.remove(&ws);
                    st.dirty = true;
                }
                // Reported, and its lease decided, at once rather than next round.
                this.wake.notify_one();
            });
        }
        if !hand.is_empty() {
            let (this, held) = (self.clone(), held.clone());
            actix_web::rt::spawn(async move { this.hand_over_to(&held, hand).await });
        }
        if !take.is_empty() {
            let wanted = take.len();
            let taken = self.take(held, take).await;
            if taken.len() < wanted {
                // Not free yet (their holders still live, or a commit holds one): again
                // next round.
                self.rounds.lock().await.dirty = true;
            }
        }
    }
}
