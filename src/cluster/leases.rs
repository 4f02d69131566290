//! Writer leases: taking them, handing them over, claiming one for an import.
//!
//! A node takes a workspace's lease when the directory says it should write it (it is
//! the best placed node with the workspace loaded, see `Directory::should_write`), and
//! only once the lease is free: given up, or its holder dead. Before its first answer
//! as the writer it brings its copy up to the store's position through the workspace's
//! actor (`Held::follow`: from the log, or loaded afresh, between the actor's own
//! commits), merges the keys' budgets the previous writer counted, and only then holds
//! the lease in [`Fences`](crate::store::fence::Fences), which its commits are checked
//! against. Takes go in batches: one statement for every lease a round takes.
//!
//! A node that holds a lease another should hold hands it over: it stops answering as
//! the writer, lets the writes it already passed to the actor commit under the lease
//! (`Drain`), shares its keys' budgets, gives the lease up (which waits for any commit
//! still checking it), and tells the next writer, which takes it at once rather than
//! at its next round. Requests meanwhile wait for the new writer (a few milliseconds);
//! none is refused.

use super::{Holding, Membership};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use uuid::Uuid;

/// What the cluster needs of the workspaces a node holds in memory.
#[async_trait::async_trait]
pub trait Held: Send + Sync + 'static {
    /// Workspaces held and loaded, with the commit position each stands at.
    fn held(&self) -> Vec<Holding>;
    /// A number that moves whenever [`Held::held`] may answer otherwise: equal twice,
    /// nothing loaded, let go or moved on in between.
    fn generation(&self) -> u64;
    /// The commit position of the workspace's copy, when one is loaded here.
    fn position(&self, workspace: Uuid) -> Option<u64>;
    /// Workspaces this node knows, loaded or loading.
    fn known(&self) -> Vec<Uuid>;
    /// Brings the workspace's copy up to the store's commits, from the change log, or by
    /// loading it afresh when the log cannot: through the workspace's actor, between its
    /// own commits (`actors::actor::Follow`).
    async fn follow(&self, workspace: Uuid) -> anyhow::Result<()>;
    /// Waits until every job passed to the workspace's actor so far is done
    /// (`actors::actor::Drain`).
    async fn drain(&self, workspace: Uuid);
    /// Loads a workspace of the store this node does not hold yet (never replacing a
    /// copy it got meanwhile).
    async fn load(&self, workspace: Uuid) -> anyhow::Result<()>;
    /// Lets held workspaces go; those that were held.
    fn unload(&self, workspaces: &[Uuid]) -> Vec<Uuid>;
}

/// How long a node that stops passing writes to an actor waits before it drains it: a
/// request routed here a moment before may still be on its way to the actor.
const IN_FLIGHT: Duration = Duration::from_millis(100);

/// Most copies brought up to date at once while taking leases.
const CATCH_UPS_AT_ONCE: usize = 8;

/// Longest a claim waits for a take or a release of the same workspace already under
/// way.
const CLAIM_WAIT: Duration = Duration::from_secs(5);

/// Why [`Membership::claim`] could not make this node a workspace's writer.
#[derive(Debug, thiserror::Error)]
pub enum ClaimRefused {
    /// Another node's lease holds, or a take did not finish in time.
    #[error("another node writes the workspace now")]
    Busy,
    #[error("taking the workspace's writer lease failed: {0:#}")]
    Failed(anyhow::Error),
}

impl Membership {
    /// Marks `workspaces` busy (a take or release under way), leaving out those that
    /// already are: the ones marked.
    fn mark_busy(&self, workspaces: impl IntoIterator<Item = Uuid>) -> Vec<Uuid> {
        let mut busy = self.busy.lock();
        workspaces.into_iter().filter(|w| busy.insert(*w)).collect()
    }

    fn unmark_busy(&self, workspaces: &[Uuid]) {
        let mut busy = self.busy.lock();
        for w in workspaces {
            busy.remove(w);
        }
    }

    pub(super) fn is_busy(&self, workspace: Uuid) -> bool {
        self.busy.lock().contains(&workspace)
    }

    /// Takes the leases of `workspaces` that are free, catches each copy up, merges the
    /// keys' budgets, and holds them: the workspaces now written here.
    pub(super) async fn take(&self, held: &Arc<dyn Held>, workspaces: Vec<Uuid>) -> Vec<Uuid> {
        let marked = self.mark_busy(workspaces);
        if marked.is_empty() {
            return Vec::new();
        }
        let taken = self.take_marked(held, &marked).await;
        self.unmark_busy(&marked);
        match taken {
            Ok(taken) => {
                if !taken.is_empty() {
                    tracing::info!(workspaces = taken.len(), first = %taken[0], "took writer leases");
                }
                taken
            }
            Err(e) => {
                tracing::warn!(error = %format!("{e:#}"), workspaces = marked.len(), "taking writer leases (tried again next round)");
                Vec::new()
            }
        }
    }

    async fn take_marked(
        &self,
        held: &Arc<dyn Held>,
        workspaces: &[Uuid],
    ) -> anyhow::Result<Vec<Uuid>> {
        let (mut taken, _) = self.store.take(&self.row, workspaces).await?;
        if taken.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<Uuid> = taken.iter().map(|(w, _)| *w).collect();
        // Every commit of the old writer ended before the take: a copy at the store's
        // position has them all; one behind catches up first.
        if self.store.shared() {
            let store_at: HashMap<Uuid, u64> =
                self.store.positions_of(&ids).await?.into_iter().collect();
            let behind: Vec<Uuid> = ids
                .iter()
                .copied()
                .filter(|w| held.position(*w) != Some(store_at.get(w).copied().unwrap_or(0)))
                .collect();
            let caught_up = futures_util::future::join_all(behind.chunks(CATCH_UPS_AT_ONCE).map(
                |chunk| async move {
                    let mut failed = Vec::new();
                    for w in chunk {
                        if let Err(e) = held.follow(*w).await {
                            tracing::warn!(workspace = %w, error = %format!("{e:#}"), "catching up a copy before writing it (given up, for a later round)");
                            failed.push(*w);
                        }
                    }
                    failed
                },
            ))
            .await;
            let failed: Vec<Uuid> = caught_up.into_iter().flatten().collect();
            if !failed.is_empty() {
                // Held by the store for this start, not by a whole copy: given up, so
                // that a later round (here or elsewhere) takes it afresh.
                self.store.release(&self.row, &failed).await?;
                taken.retain(|(w, _)| !failed.contains(w));
            }
        }
        let ids: Vec<Uuid> = taken.iter().map(|(w, _)| *w).collect();
        self.merge_budgets(&ids).await?;
        for (w, epoch) in &taken {
            self.fences.hold(*w, *epoch);
        }
        Ok(ids)
    }

    /// Hands the leases of `workspaces` over: stops answering as their writer, lets the
    /// writes already passed on commit, gives the leases up, and tells each next writer
    /// (`next`, by workspace) to take them now.
    pub(super) async fn hand_over_to(
        self: &Arc<Self>,
        held: &Arc<dyn Held>,
        next: Vec<(Uuid, Option<String>)>,
    ) {
        let marked = self.mark_busy(next.iter().map(|(w, _)| *w));
        if marked.is_empty() {
            return;
        }
        // Requests stop being answered here; those already passed to the actors commit
        // under the lease, which is dropped only once they are done.
        self.leaving.lock().extend(marked.iter().copied());
        tokio::time::sleep(IN_FLIGHT).await;
        futures_util::future::join_all(marked.iter().map(|w| held.drain(*w))).await;
        for w in &marked {
            self.fences.drop_lease(*w);
        }
        {
            let mut leaving = self.leaving.lock();
            for w in &marked {
                leaving.remove(w);
            }
        }
        // What the keys spent here up to the last request as the writer, for the next
        // writer to merge when it takes the leases (it would otherwise miss the counts
        // since the last share).
        if let Err(e) = self.write_budgets().await {
            tracing::warn!(error = %format!("{e:#}"), "handing the keys' budgets over");
        }
        match self.store.release(&self.row, &marked).await {
            Ok(released) => {
                tracing::info!(workspaces = released.len(), "handed writer leases over");
                let mut to: HashMap<String, usize> = HashMap::new();
                for (w, n) in next {
                    if let Some(n) = n.filter(|_| marked.contains(&w)) {
                        *to.entry(n).or_default() += 1;
                    }
                }
                self.tell_to_take(to.into_keys().collect());
            }
            Err(e) => {
                // Not held here any more either way: its lease passes with this node's.
                tracing::warn!(error = %format!("{e:#}"), "giving writer leases up (they pass with this node's)");
            }
        }
        self.unmark_busy(&marked);
    }

    /// Makes this node the writer of `workspace` before an import it was sent (a new
    /// workspace, or one with no writer now): takes the lease as a round would, with
    /// `catch_up` bringing the copy up to the store's position first. `Ok` at once when
    /// it holds the lease already; refused while another node's lease holds.
    pub async fn claim(
        &self,
        workspace: Uuid,
        catch_up: impl std::future::Future<Output = anyhow::Result<()>>,
    ) -> Result<(), ClaimRefused> {
        let deadline = Instant::now() + CLAIM_WAIT;
        loop {
            if self.fences.epoch(workspace).is_some() {
                return Ok(());
            }
            if !self.mark_busy([workspace]).is_empty() {
                break;
            }
            if Instant::now() >= deadline {
                return Err(ClaimRefused::Busy);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let outcome = async {
            let (taken, _) = self.store.take(&self.row, &[workspace]).await?;
            let Some((_, epoch)) = taken.first().copied() else {
                return anyhow::Ok(None);
            };
            catch_up.await?;
            self.merge_budgets(&[workspace]).await?;
            self.fences.hold(workspace, epoch);
            Ok(Some(epoch))
        }
        .await;
        self.unmark_busy(&[workspace]);
        match outcome {
            Ok(Some(epoch)) => {
                tracing::info!(%workspace, epoch, "took the writer lease (an import was sent here)");
                Ok(())
            }
            Ok(None) => Err(ClaimRefused::Busy),
            Err(e) => Err(ClaimRefused::Failed(e)),
        }
    }

    /// Gives every writer lease up before a graceful stop, while this node still answers
    /// (passing each request to the workspace's next writer), and waits until other
    /// nodes write them (at most `within`): so a rolling restart costs a client no
    /// error.
    pub async fn hand_over(self: &Arc<Self>, held: &Arc<dyn Held>, within: Duration) {
        // Alone, there is nobody to hand over to: it writes until it stops.
        if !self.has_peers() || self.handing_over.swap(true, Ordering::SeqCst) {
            return;
        }
        // New requests no longer come here as to the writer (`route`); the writes
        // already here commit before the leases go.
        let mine = self.fences.held();
        tokio::time::sleep(IN_FLIGHT).await;
        futures_util::future::join_all(mine.iter().map(|w| held.drain(*w))).await;
        self.fences.drop_all();
        // What its keys spent here, up to its last request as the writer, for the next
        // writers to go on from.
        if let Err(e) = self.write_budgets().await {
            tracing::warn!(error = %format!("{e:#}"), "handing the keys' budgets over");
        }
        // Its copies are no longer counted on (so the next writers are among the
        // others), then its leases are free at once.
        if let Err(e) = self.store.drop_holdings(&self.row).await {
            tracing::warn!(error = %format!("{e:#}"), "handing the holdings over");
        }
        let released = match self.store.release_all(&self.row).await {
            Ok(ids) => ids,
            Err(e) => {
                tracing::warn!(error = %format!("{e:#}"), "handing the writer leases over (they will pass)");
                return;
            }
        };
        let _ = self.read_directory().await;
        let directory = self.directory();
        let next: std::collections::HashSet<String> = released
            .iter()
            .filter_map(|w| {
                let placed = directory.placed(*w, self.me.replicas);
                let placed: Vec<&str> = placed.into_iter().filter(|n| *n != self.me.name).collect();
                placed
                    .iter()
                    .find(|n| directory.loaded(*w, n))
                    .map(|n| n.to_string())
            })
            .collect();
        self.tell_to_take(next.into_iter().collect());
        let deadline = tokio::time::Instant::now() + within;
        while tokio::time::Instant::now() < deadline {
            let _ = self.read_directory().await;
            let directory = self.directory();
            let taken = released
                .iter()
                .all(|w| directory.writer(*w).is_some_and(|n| n != self.me.name));
            if taken {
                // One more round of every node's directory, so that none still passes
                // requests here when this node stops accepting them.
                tokio::time::sleep(super::RENEW_EVERY + Duration::from_millis(200)).await;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        tracing::info!(node = %self.me.name, workspaces = released.len(), "handed the writer leases over");
    }
}
