//! The hub's looks: what they read of the store, alone and as a node of a cluster.

use super::*;
use actors::changes::tokens::FeedPoint;
use actors::model::{ApiKey, Workspace};
use actors::store::{
    ChangeSet, CommitPosition, LogRead, LogWindow, MemoryStore, Pruned, RecordSink, StoreResult,
};
use std::sync::atomic::{AtomicU64, Ordering};

/// A store in memory whose webhook rows count the reads a look makes.
struct Counted {
    inner: Arc<MemoryStore>,
    /// The endpoints' bodies, by workspace.
    rows: Mutex<HashMap<Uuid, Vec<(String, String)>>>,
    /// Reads of every workspace with endpoints, and of one workspace's endpoints.
    scans: AtomicU64,
    reads: AtomicU64,
}

#[async_trait::async_trait]
impl WebhookRows for Counted {
    async fn endpoints(&self, ws: Uuid) -> StoreResult<Vec<(String, String)>> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        Ok(self.rows.lock().get(&ws).cloned().unwrap_or_default())
    }
    async fn workspaces(&self) -> StoreResult<Vec<Uuid>> {
        self.scans.fetch_add(1, Ordering::SeqCst);
        Ok(self.rows.lock().keys().copied().collect())
    }
    async fn apply(&self, _: Uuid, _: &[WebhookWrite], _: actors::store::Flush) -> StoreResult<()> {
        Ok(())
    }
    async fn attempts(&self, _: Uuid, _: &str, _: u32) -> StoreResult<Vec<String>> {
        Ok(Vec::new())
    }
}

#[async_trait::async_trait]
impl actors::store::Store for Counted {
    fn webhook_rows(&self) -> Option<&dyn WebhookRows> {
        Some(self)
    }
    async fn workspaces(&self) -> StoreResult<Vec<Workspace>> {
        self.inner.workspaces().await
    }
    async fn load_records(&self, ws: Uuid, sink: RecordSink<'_>) -> StoreResult<()> {
        self.inner.load_records(ws, sink).await
    }
    async fn commit(&self, ws: Uuid, changes: &ChangeSet) -> StoreResult<()> {
        self.inner.commit(ws, changes).await
    }
    async fn committed(&self, ws: Uuid, batch: Uuid) -> StoreResult<bool> {
        self.inner.committed(ws, batch).await
    }
    async fn flush_touched(
        &self,
        ws: Uuid,
        position: u64,
        rows: &[actors::model::Record],
    ) -> StoreResult<()> {
        self.inner.flush_touched(ws, position, rows).await
    }
    async fn touches(
        &self,
        workspaces: &[Uuid],
    ) -> StoreResult<Vec<Option<actors::store::TouchMarker>>> {
        self.inner.touches(workspaces).await
    }
    async fn position(&self, ws: Uuid) -> StoreResult<CommitPosition> {
        self.inner.position(ws).await
    }
    async fn read_changes(&self, ws: Uuid, window: LogWindow) -> StoreResult<LogRead> {
        self.inner.read_changes(ws, window).await
    }
    async fn tombstones(
        &self,
        ws: Uuid,
    ) -> StoreResult<Vec<(actors::entries::Change, actors::time::Stamp)>> {
        self.inner.tombstones(ws).await
    }
    async fn prune_changes(&self, ws: Uuid, before_ms: i64) -> StoreResult<Pruned> {
        self.inner.prune_changes(ws, before_ms).await
    }
    async fn keys(&self) -> StoreResult<Vec<ApiKey>> {
        self.inner.keys().await
    }
    async fn revoke_key(&self, id: &str) -> StoreResult<Option<ApiKey>> {
        self.inner.revoke_key(id).await
    }
}

/// The leases a test hands the node, and the count of their changes.
#[derive(Default)]
struct Leases {
    held: Mutex<Vec<(Uuid, u64)>>,
    moved: AtomicU64,
}

impl Leases {
    fn set(&self, held: &[(Uuid, u64)]) {
        *self.held.lock() = held.to_vec();
        self.moved.fetch_add(1, Ordering::SeqCst);
    }
}

impl Writers for Leases {
    fn writes(&self, ws: Uuid) -> bool {
        self.held.lock().iter().any(|(w, _)| *w == ws)
    }
    fn moved(&self) -> u64 {
        self.moved.load(Ordering::SeqCst)
    }
    fn held(&self) -> Option<Vec<(Uuid, u64)>> {
        Some(self.held.lock().clone())
    }
}

/// A hub over `workspaces` workspaces, all loaded, the first `with_endpoints` of them
/// with an endpoint (disabled: a look reads it, no task runs).
async fn hub(
    workspaces: usize,
    with_endpoints: usize,
    writing: Arc<dyn Writers>,
) -> (Arc<Hub>, Arc<Counted>, Vec<Uuid>) {
    let memory = MemoryStore::new();
    let store = Arc::new(Counted {
        inner: memory.clone(),
        rows: Mutex::default(),
        scans: AtomicU64::new(0),
        reads: AtomicU64::new(0),
    });
    let env = Arc::new(actors::env::ActorEnv::new(
        store.clone(),
        Arc::new(actors::store::MemoryBlobs::default()),
        Arc::new(actors::keys::KeyRing::default()),
    ));
    let registry = Registry::new(env, actix::Arbiter::current());
    let mut ids = Vec::new();
    for i in 0..workspaces {
        let w = Workspace {
            id: Uuid::new_v4(),
            name: None,
            default_region: None,
        };
        registry.handle_or_create(&w).expect("created ready");
        if i < with_endpoints {
            let mut row = StoredEndpoint::example(&format!("whe_{i}"), FeedPoint::at(0));
            let mut d = row.deliverer();
            d.disable(Reason::Requested);
            row.follow(&d);
            store
                .rows
                .lock()
                .insert(w.id, vec![(row.id.clone(), row.to_body())]);
        }
        ids.push(w.id);
    }
    let engine = Engine {
        store: store.clone(),
        cache: Default::default(),
        pages: Default::default(),
        sender: crate::webhooks::send::Sender::new(Default::default()),
        schedule: crate::webhooks::retry::Schedule::CONTRACT,
        token: Arc::new(|_, p| format!("{}", p.position)),
        now_ms: Arc::new(actors::store::now_ms),
        writes: Arc::new(|_| true),
        observer: Arc::new(crate::webhooks::engine::Unobserved),
        api_answered: Arc::new(|| 0),
    };
    let hub = Hub::new(
        Arc::new(engine),
        registry,
        None,
        writing,
        tokio::runtime::Handle::current(),
    );
    (hub, store, ids)
}

fn counts(store: &Counted) -> (u64, u64) {
    (
        store.scans.load(Ordering::SeqCst),
        store.reads.load(Ordering::SeqCst),
    )
}

/// Alone, a node reads which workspaces have endpoints once, at its first look, and
/// their rows once; after that its looks read nothing, however many workspaces it
/// holds.
#[actix_web::test]
async fn alone_a_look_reads_the_rows_once() {
    let (hub, store, _) = hub(200, 3, Arc::new(Alone)).await;
    hub.look().await.unwrap();
    assert_eq!(counts(&store), (1, 3));
    for _ in 0..5 {
        hub.look().await.unwrap();
    }
    assert_eq!(counts(&store), (1, 3), "idle looks read nothing");
}

/// In a cluster a node never scans for endpoints: it reads a workspace's rows when it
/// comes to hold its lease (again under a new epoch: another node may have moved
/// them meanwhile), and nothing while its leases stay as they are.
#[actix_web::test]
async fn a_node_reads_a_workspaces_rows_when_it_comes_to_write_it() {
    let leases = Arc::new(Leases::default());
    let (hub, store, ids) = hub(200, 2, leases.clone()).await;
    hub.look().await.unwrap();
    assert_eq!(counts(&store), (0, 0), "holding nothing, it reads nothing");
    leases.set(&[(ids[0], 1), (ids[1], 1), (ids[5], 1)]);
    hub.look().await.unwrap();
    assert_eq!(counts(&store), (0, 3), "the rows of each workspace taken");
    for _ in 0..5 {
        hub.look().await.unwrap();
    }
    assert_eq!(counts(&store), (0, 3), "idle looks read nothing");
    leases.set(&[(ids[0], 1), (ids[5], 1)]);
    hub.look().await.unwrap();
    assert_eq!(counts(&store), (0, 3), "one given up: nothing to read");
    leases.set(&[(ids[0], 2), (ids[5], 1), (ids[1], 3)]);
    hub.look().await.unwrap();
    assert_eq!(
        counts(&store),
        (0, 5),
        "one taken again under a new epoch, one taken back"
    );
}
