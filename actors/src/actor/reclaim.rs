//! Removing the blobs an import released, after its commit and publish, and sweeping
//! the leftovers once a workspace has loaded.

use super::{SweepBlobs, WorkspaceActor};
use crate::env::ReclaimedBy;
use crate::reclaim::LiveObjects;
use actix::{ActorFutureExt, AsyncContext, Context, Handler, WrapFuture};

impl Handler<SweepBlobs> for WorkspaceActor {
    type Result = ();

    /// Sweeps on a blocking thread (the live set is hashed there too: a million
    /// attachments take a while), holding imports back until it is over, so that no
    /// object an import writes meanwhile can be taken.
    fn handle(&mut self, _: SweepBlobs, ctx: &mut Context<Self>) {
        self.reclaiming = true;
        let (blobs, state) = (self.env.blobs.clone(), self.view.load_full());
        let sweep = async move {
            tokio::task::spawn_blocking(move || {
                crate::reclaim::sweep(&*blobs, &LiveObjects::of(&state))
            })
            .await
        };
        ctx.spawn(sweep.into_actor(self).map(|res, act, ctx| {
            act.reclaiming = false;
            match res {
                Ok(Ok(done)) => {
                    if !done.is_empty() {
                        tracing::info!(workspace = %act.id, objects = done.objects, bytes = done.bytes, "swept blobs no attachment names");
                        act.env.observer.reclaimed(ReclaimedBy::Sweep, done);
                    }
                }
                // The server is stopping (it closed the store under the sweep).
                Ok(Err(e)) if act.env.store.is_closed() => {
                    tracing::info!(workspace = %act.id, error = %e, "blob sweep stopped as the server stops; blobs stay until the next start")
                }
                Ok(Err(e)) => {
                    tracing::warn!(workspace = %act.id, error = %e, "sweeping blobs failed; they stay until the next start")
                }
                Err(e) => {
                    tracing::warn!(workspace = %act.id, error = %e, "the blob sweep task failed; blobs stay until the next start")
                }
            }
            act.pump(ctx);
        }));
    }
}

impl WorkspaceActor {
    /// Removes `keys` (from [`crate::snapshot::released_objects`] of an import whose commit
    /// succeeded and whose state is published) on a blocking thread. No further import
    /// starts until the removal is over (API writes never write blobs): the next import
    /// may re-add one of these
    /// attachments, and its bytes, written under the same key before its commit, must not
    /// be taken by this removal. A failed or interrupted removal leaves objects no
    /// attachment names, which the sweep at the next start collects.
    pub(super) fn reclaim(&mut self, keys: Vec<String>, ctx: &mut Context<Self>) {
        if keys.is_empty() {
            return;
        }
        self.reclaiming = true;
        let blobs = self.env.blobs.clone();
        let removal = async move { tokio::task::spawn_blocking(move || blobs.delete(&keys)).await };
        ctx.spawn(removal.into_actor(self).map(|res, act, ctx| {
            act.reclaiming = false;
            match res {
                Ok(Ok(done)) => {
                    tracing::debug!(workspace = %act.id, objects = done.objects, bytes = done.bytes, "reclaimed the blobs of deleted attachments");
                    act.env.observer.reclaimed(ReclaimedBy::Import, done);
                }
                Ok(Err(e)) => {
                    tracing::warn!(workspace = %act.id, error = %e, "removing the blobs of deleted attachments failed; the next start sweeps them")
                }
                Err(e) => {
                    tracing::warn!(workspace = %act.id, error = %e, "the blob removal task failed; the next start sweeps them")
                }
            }
            act.pump(ctx);
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Import, WorkspaceActor, WorkspaceHandle};
    use crate::env::{ActorEnv, CommitKind, CommitObserver, ReclaimedBy};
    use crate::keys::KeyRing;
    use crate::loader::Loader;
    use crate::registry::Registry;
    use crate::snapshot::{parse_slice, plan_import, NoKeys, Snapshot};
    use crate::state::WorkspaceState;
    use crate::store::{
        Blob, BlobMeta, BlobStore, MemoryBlobs, MemoryStore, Reclaimed, Store, StoreError,
    };
    use base64::Engine;
    use parking_lot::Mutex;
    use serde_json::{json, Value};
    use std::sync::Arc;
    use std::time::Duration;
    use uuid::Uuid;

    const FIXTURE: &[u8] = include_bytes!("../../../tests/fixtures/snapshot-small.json");
    const CV: &str = "cv:91b2d50e-a6b0-5581-b491-530642265a44";

    /// Memory blobs whose removals take a while: long enough for a next import's writes
    /// to land in the middle of one, were they not held back.
    struct SlowRemovals {
        inner: MemoryBlobs,
        delay: Duration,
    }

    impl BlobStore for SlowRemovals {
        fn put(&self, ws: Uuid, id: &str, bytes: &[u8]) -> Result<(), StoreError> {
            self.inner.put(ws, id, bytes)
        }
        fn stat(&self, ws: Uuid, id: &str) -> Result<Option<BlobMeta>, StoreError> {
            self.inner.stat(ws, id)
        }
        fn open(&self, ws: Uuid, id: &str) -> Result<Option<Blob>, StoreError> {
            self.inner.open(ws, id)
        }
        fn delete(&self, keys: &[String]) -> Result<Reclaimed, StoreError> {
            std::thread::sleep(self.delay);
            self.inner.delete(keys)
        }
        fn sweep(
            &self,
            ws: Uuid,
            keep: &(dyn Fn(&str) -> bool + Sync),
        ) -> Result<Reclaimed, StoreError> {
            self.inner.sweep(ws, keep)
        }
    }

    #[derive(Default)]
    struct Seen(Mutex<Vec<(ReclaimedBy, Reclaimed)>>);

    impl CommitObserver for Seen {
        fn commit(&self, _: CommitKind, _: Duration, _: bool) {}
        fn reclaimed(&self, by: ReclaimedBy, done: Reclaimed) {
            self.0.lock().push((by, done));
        }
    }

    fn example() -> Value {
        serde_json::from_slice(FIXTURE).unwrap()
    }

    fn snapshot(v: &Value) -> Snapshot {
        parse_slice(&serde_json::to_vec(v).unwrap()).unwrap()
    }

    fn attachments(list: Value) -> Snapshot {
        snapshot(&json!({"format": "recruit-snapshot/1",
                         "workspace": example()["workspace"].clone(), "attachments": list}))
    }

    fn cv_with(bytes: &[u8]) -> Value {
        let mut cv = example()["attachments"][0].clone();
        cv["content_base64"] = json!(base64::engine::general_purpose::STANDARD.encode(bytes));
        cv
    }

    /// An environment over `store` and `blobs` whose observer is `seen`.
    fn env(store: Arc<dyn Store>, blobs: Arc<dyn BlobStore>, seen: &Arc<Seen>) -> Arc<ActorEnv> {
        Arc::new(ActorEnv {
            observer: seen.clone(),
            ..ActorEnv::new(store, blobs, Arc::new(KeyRing::default()))
        })
    }

    async fn workspace(delay: Duration) -> (Arc<SlowRemovals>, Arc<Seen>, WorkspaceHandle) {
        let blobs = Arc::new(SlowRemovals {
            inner: MemoryBlobs::default(),
            delay,
        });
        let seen = Arc::new(Seen::default());
        let env = env(MemoryStore::new(), blobs.clone(), &seen);
        let snap = snapshot(&example());
        let h = WorkspaceActor::spawn(
            WorkspaceState::new(snap.workspace.clone().unwrap()),
            env,
            &actix::Arbiter::current(),
        );
        h.addr.send(Import(snap)).await.unwrap().unwrap();
        (blobs, seen, h)
    }

    #[actix::test]
    async fn a_deletion_reclaims_its_bytes_after_the_commit() {
        let (blobs, seen, h) = workspace(Duration::ZERO).await;
        let ws = h.state().id();
        assert!(blobs.inner.get(ws, CV).is_some());
        h.addr
            .send(Import(attachments(json!([{"id": CV, "deleted": true}]))))
            .await
            .unwrap()
            .unwrap();
        // The next job starts once the removal is over.
        h.addr
            .send(Import(attachments(json!([]))))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(blobs.inner.get(ws, CV), None);
        assert_eq!(
            *seen.0.lock(),
            [(
                ReclaimedBy::Import,
                Reclaimed {
                    objects: 1,
                    bytes: 54
                }
            )]
        );
    }

    #[actix::test]
    async fn an_import_queued_behind_a_removal_keeps_its_bytes() {
        let (blobs, _seen, h) = workspace(Duration::from_millis(300)).await;
        let ws = h.state().id();
        // Deleted by one import, re-added by the next, both queued at once: the second
        // one's bytes are written under the key the first one's removal deletes.
        let delete = h
            .addr
            .send(Import(attachments(json!([{"id": CV, "deleted": true}]))));
        let readd = h.addr.send(Import(attachments(json!([cv_with(b"new")]))));
        let (delete, readd) = tokio::join!(delete, readd);
        delete.unwrap().unwrap();
        readd.unwrap().unwrap();
        // Whatever removal there was is over by now.
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert!(h.state().attachments.get_visible(&CV.into()).is_some());
        assert_eq!(blobs.inner.get(ws, CV).as_deref(), Some(&b"new"[..]));
    }

    #[actix::test]
    async fn loading_sweeps_what_no_attachment_names() {
        let store = MemoryStore::new();
        let plan = plan_import(None, snapshot(&example()), &NoKeys, false).unwrap();
        let ws = plan.workspace.id;
        store.commit(ws, &plan.change_set()).await.unwrap();
        let blobs = Arc::new(MemoryBlobs::default());
        blobs.put_many(ws, &plan.blobs).unwrap();
        blobs
            .put(ws, "cv:deleted-before-a-crash", b"orphan")
            .unwrap();
        let seen = Arc::new(Seen::default());
        let registry = Registry::new(
            env(store.clone(), blobs.clone(), &seen),
            actix::Arbiter::current(),
        );
        let loader = Loader::new(store, registry.clone());
        let list = loader.discover().await.unwrap();
        loader.load_all(list).await;
        assert!(registry.is_ready());
        // The sweep runs in the workspace's actor once it has loaded.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while blobs.get(ws, "cv:deleted-before-a-crash").is_some() {
            assert!(std::time::Instant::now() < deadline, "never swept");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(
            blobs.get(ws, CV).is_some(),
            "a live attachment's bytes stay"
        );
        assert_eq!(
            *seen.0.lock(),
            [(
                ReclaimedBy::Sweep,
                Reclaimed {
                    objects: 1,
                    bytes: 6
                }
            )]
        );
    }
}
