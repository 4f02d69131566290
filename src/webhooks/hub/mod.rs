//! A node's webhooks: the endpoints of the workspaces it writes, each delivered by a
//! task of its own, and the API's operations on them.
//!
//! - **Who delivers.** A workspace's endpoints are delivered by its writer, the node
//!   every `/v1/` request of the workspace reaches. The store refuses an
//!   acknowledgement from a node that has lost the lease (fenced as a commit is), and
//!   such a refusal stops the task at once: two nodes never move one endpoint's point.
//! - **How the node learns of endpoints**, without a look at every workspace's rows: it
//!   makes them itself (the API's create reaches the writer), and reads a workspace's
//!   rows once when it comes to write it. A look every [`LOOK_EVERY`] reads the node's
//!   writer leases only when their count has moved ([`Writers::moved`]): it stops the
//!   tasks of workspaces it no longer holds, and reads the rows of those it has come to
//!   hold (resuming each endpoint from its stored point). Alone on its store, the node
//!   writes every workspace it holds for good: it reads which workspaces have endpoints
//!   once, at its first look, and starts each as it has loaded. A task that ends other
//!   than disabled is started again from its row at the next look, while the node
//!   writes its workspace. So an idle node's look costs the same however many
//!   workspaces and endpoints there are.
//! - **Changes to an endpoint** (the API's create, patch, delete, replay, rotation) stop
//!   its task, write the row, and start it again from the row: one writer of a row at a
//!   time, and the endpoint's operations one at a time per workspace.
//! - **Memory.** A task holds its endpoint's row, its points and the delivery in flight;
//!   the changes waiting are in the log, read when their batch is made.

use super::deliverer::{Deliverer, Reason};
use super::engine::{Attempt, Ended, Endpoint, Engine, Ledger};
use super::sealing::{DataKey, Keyring};
use super::secret::Secret;
use super::stored::{StoredAttempt, StoredEndpoint, ATTEMPTS_KEPT};
use actors::registry::Registry;
use actors::store::{StoreError, WebhookRows, WebhookWrite};
use dashmap::DashMap;
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use uuid::Uuid;

/// How often the node looks for workspaces whose deliveries it should start or stop.
pub const LOOK_EVERY: Duration = Duration::from_secs(1);

/// What the hub knows of the workspaces this node writes.
pub trait Writers: Send + Sync {
    /// Whether this node writes `ws` now.
    fn writes(&self, ws: Uuid) -> bool;
    /// A count that moves on whenever the writer leases this node holds change: the
    /// hub reads them ([`Writers::held`]) only then.
    fn moved(&self) -> u64;
    /// The workspaces whose writer leases this node holds, each with its lease's epoch;
    /// `None` alone on its store, where it writes every workspace it holds, for good.
    fn held(&self) -> Option<Vec<(Uuid, u64)>>;
}

/// A node alone on its store: it writes every workspace, for good.
pub struct Alone;

impl Writers for Alone {
    fn writes(&self, _: Uuid) -> bool {
        true
    }

    fn moved(&self) -> u64 {
        0
    }

    fn held(&self) -> Option<Vec<(Uuid, u64)>> {
        None
    }
}

/// What the API's operations fail with.
#[derive(Debug)]
pub enum HubError {
    /// No such endpoint in the workspace.
    NotFound,
    /// The workspace has its most endpoints.
    TooMany,
    /// The node has no data key to seal secrets with.
    NoKey,
    Store(StoreError),
}

impl From<StoreError> for HubError {
    fn from(e: StoreError) -> Self {
        HubError::Store(e)
    }
}

/// A running task.
struct Running {
    task: JoinHandle<()>,
    /// Held by its attempt under way on the idle runtime, if any ([`Endpoint::sending`]).
    sending: Arc<tokio::sync::Mutex<()>>,
}

impl Running {
    /// Stops the task and waits until it has ended, with any attempt it had under way
    /// elsewhere: nothing of the endpoint is sent or written after this.
    async fn stop(self) {
        self.task.abort();
        let _ = self.task.await;
        let _ = self.sending.lock().await;
    }
}

/// A task that ended by itself: its workspace and endpoint, and whether its endpoint
/// is disabled (not started again).
type EndedTask = (Uuid, String, bool);

/// What the looks go by (see the module's docs).
#[derive(Default)]
struct Looks {
    /// Workspaces whose rows were read since this node came to write them, with the
    /// epoch of the lease it then held (0 alone).
    read: HashMap<Uuid, u64>,
    /// Workspaces whose rows are to be read once the node writes them and has them
    /// loaded: newly held, known at the start to have endpoints, or with a task that
    /// ended.
    pending: HashSet<Uuid>,
    /// [`Writers::moved`] when the leases were last read (`None`: never), and what they
    /// were: each workspace's epoch.
    moved: Option<u64>,
    held: HashMap<Uuid, u64>,
    /// Whether the node is alone on its store (no leases: it writes every workspace).
    alone: bool,
    /// Alone: whether the workspaces with endpoints have been read (at the first look).
    known: bool,
}

/// The node's webhooks (see the module's docs).
pub struct Hub {
    engine: Arc<Engine>,
    registry: Arc<Registry>,
    keys: Option<Arc<Keyring>>,
    writing: Arc<dyn Writers>,
    /// Tasks by workspace and endpoint.
    running: Mutex<HashMap<(Uuid, String), Running>>,
    /// Where tasks that end by themselves say so, for the next look.
    ended: tokio::sync::mpsc::UnboundedSender<EndedTask>,
    ended_rx: Mutex<tokio::sync::mpsc::UnboundedReceiver<EndedTask>>,
    looks: Mutex<Looks>,
    /// One look at a time.
    looking: tokio::sync::Mutex<()>,
    /// One change to a workspace's endpoints at a time.
    changing: DashMap<Uuid, Arc<tokio::sync::Mutex<()>>>,
    /// Each workspace's endpoints' records, committed together.
    writers: DashMap<Uuid, Arc<GroupWriter>>,
    /// Where the tasks run (the server's runtime: they end with it).
    runtime: tokio::runtime::Handle,
}

impl Hub {
    pub fn new(
        engine: Arc<Engine>,
        registry: Arc<Registry>,
        keys: Option<Arc<Keyring>>,
        writing: Arc<dyn Writers>,
        runtime: tokio::runtime::Handle,
    ) -> Arc<Hub> {
        let (ended, ended_rx) = tokio::sync::mpsc::unbounded_channel();
        Arc::new(Hub {
            engine,
            registry,
            keys,
            writing,
            running: Mutex::default(),
            ended,
            ended_rx: Mutex::new(ended_rx),
            looks: Mutex::default(),
            looking: tokio::sync::Mutex::new(()),
            changing: DashMap::new(),
            writers: DashMap::new(),
            runtime,
        })
    }

    /// The data keys this node knows.
    pub fn keyring(&self) -> Result<&Arc<Keyring>, HubError> {
        self.keys.as_ref().ok_or(HubError::NoKey)
    }

    /// What every endpoint's task reads and sends with.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Starts and stops tasks every [`LOOK_EVERY`] until the returned task is aborted.
    pub fn start(self: &Arc<Self>) -> JoinHandle<()> {
        let hub = self.clone();
        self.runtime.spawn(async move {
            loop {
                if let Err(e) = hub.look().await {
                    tracing::warn!(error = %e, "looking for webhook endpoints to deliver");
                }
                tokio::time::sleep(LOOK_EVERY).await;
            }
        })
    }

    /// One look (see the module's docs).
    pub async fn look(self: &Arc<Self>) -> Result<(), StoreError> {
        let _one = self.looking.lock().await;
        // Tasks that ended by themselves: a disabled endpoint's for good; any other's
        // again from its row, once its workspace is written here.
        let ended: Vec<EndedTask> = {
            let mut rx = self.ended_rx.lock();
            std::iter::from_fn(|| rx.try_recv().ok()).collect()
        };
        for (ws, id, disabled) in ended {
            {
                let mut running = self.running.lock();
                let key = (ws, id);
                if running.get(&key).is_some_and(|r| r.task.is_finished()) {
                    running.remove(&key);
                }
            }
            if !disabled {
                self.looks.lock().pending.insert(ws);
            }
        }
        // The leases, read again only when they moved.
        let moved = self.writing.moved();
        let last = self.looks.lock().moved;
        if last != Some(moved) {
            let held = self.writing.held();
            self.looks.lock().alone = held.is_none();
            if let Some(held) = held {
                let held: HashMap<Uuid, u64> = held.into_iter().collect();
                // A workspace no longer held, or held again under another lease (another
                // node may have delivered its endpoints meanwhile): its tasks stop, and
                // its rows are read again while it is held.
                let gone: Vec<Uuid> = {
                    let mut looks = self.looks.lock();
                    let mut gone: HashSet<Uuid> = looks
                        .read
                        .iter()
                        .filter(|(ws, epoch)| held.get(ws) != Some(epoch))
                        .map(|(ws, _)| *ws)
                        .collect();
                    gone.extend(
                        self.running
                            .lock()
                            .keys()
                            .map(|(ws, _)| *ws)
                            .filter(|ws| !held.contains_key(ws)),
                    );
                    looks.pending.retain(|ws| held.contains_key(ws));
                    gone.into_iter().collect()
                };
                for ws in gone {
                    self.stop_workspace(ws).await;
                }
                let mut looks = self.looks.lock();
                let new: Vec<Uuid> = held
                    .keys()
                    .filter(|ws| !looks.read.contains_key(ws))
                    .copied()
                    .collect();
                looks.pending.extend(new);
                looks.held = held;
            }
            self.looks.lock().moved = Some(moved);
        }
        // Alone: the workspaces with endpoints, read once.
        let unknown = {
            let looks = self.looks.lock();
            looks.alone && !looks.known
        };
        if unknown {
            let with_endpoints = self.rows()?.workspaces().await?;
            let mut looks = self.looks.lock();
            looks.pending.extend(with_endpoints);
            looks.known = true;
        }
        let pending: Vec<Uuid> = self.looks.lock().pending.iter().copied().collect();
        let mut failed = None;
        for ws in pending {
            // Not written here now (a lease held but passed by this node's clock, or
            // being handed over), or not loaded yet: looked at again next time.
            if !self.writing.writes(ws) || self.registry.handle(ws).is_none() {
                continue;
            }
            // The lease's epoch before the rows are read: a later one is seen as a
            // change at the next look.
            let epoch = self.epoch_of(ws);
            if let Err(e) = self.start_workspace(ws).await {
                failed = Some(e);
                continue;
            }
            let mut looks = self.looks.lock();
            looks.pending.remove(&ws);
            looks.read.insert(ws, epoch);
        }
        failed.map_or(Ok(()), Err)
    }

    /// The epoch of the lease this node holds on `ws` as last read (0 alone).
    fn epoch_of(&self, ws: Uuid) -> u64 {
        let looks = self.looks.lock();
        looks.held.get(&ws).copied().unwrap_or(0)
    }

    /// Reads a workspace's rows and starts the task of each endpoint that has none.
    async fn start_workspace(self: &Arc<Self>, ws: Uuid) -> Result<(), StoreError> {
        let lock = self.lock(ws);
        let _held = lock.lock().await;
        for (_, body) in self.rows()?.endpoints(ws).await? {
            match StoredEndpoint::parse(&body) {
                Ok(row) => self.run(ws, row),
                Err(e) => tracing::error!(workspace = %ws, error = %e, "skipping an endpoint"),
            }
        }
        Ok(())
    }

    /// Stops every task of a workspace (this node no longer writes it).
    async fn stop_workspace(&self, ws: Uuid) {
        let tasks: Vec<((Uuid, String), Running)> = {
            let mut running = self.running.lock();
            let keys: Vec<_> = running.keys().filter(|k| k.0 == ws).cloned().collect();
            keys.into_iter()
                .filter_map(|k| running.remove(&k).map(|r| (k, r)))
                .collect()
        };
        for ((ws, id), r) in tasks {
            r.stop().await;
            self.engine.observer.gone(ws, &id);
        }
        let mut looks = self.looks.lock();
        looks.read.remove(&ws);
        looks.pending.remove(&ws);
    }

    /// Stops every task (the server is stopping).
    pub async fn stop_everything(&self) {
        let tasks: Vec<Running> = self.running.lock().drain().map(|(_, r)| r).collect();
        for r in tasks {
            r.stop().await;
        }
        *self.looks.lock() = Looks::default();
    }

    /// Stops one endpoint's task and waits until it has ended: no write of its row is
    /// under way after this.
    async fn stop(&self, ws: Uuid, id: &str) {
        let task = self.running.lock().remove(&(ws, id.to_string()));
        if let Some(r) = task {
            r.stop().await;
            self.engine.observer.gone(ws, id);
        }
    }

    /// Starts `row`'s task, unless it is disabled, its workspace is not loaded here, or
    /// its secrets do not open with this node's key.
    fn run(self: &Arc<Self>, ws: Uuid, row: StoredEndpoint) {
        let running_key = (ws, row.id.clone());
        if self
            .running
            .lock()
            .get(&running_key)
            .is_some_and(|r| !r.task.is_finished())
        {
            return;
        }
        let d = row.deliverer();
        if d.status == super::deliverer::Status::Disabled {
            return;
        }
        let Some(handle) = self.registry.handle(ws) else {
            return;
        };
        let Ok(keys) = self.keyring().cloned() else {
            tracing::error!(workspace = %ws, endpoint = %row.id,
                "no webhook data key on this node: the endpoint is not delivered");
            return;
        };
        let Ok(url) = url::Url::parse(&row.url) else {
            tracing::error!(workspace = %ws, endpoint = %row.id, "the endpoint's url is unreadable");
            return;
        };
        let (id, entities, row_key) = (row.id.clone(), row.entity_filter(), row.key.clone());
        let engine = self.engine.clone();
        let ended = self.ended.clone();
        let ledger = RowLedger {
            writer: self.group_writer(ws),
            row: Mutex::new(row),
            stored: Mutex::new(None),
        };
        let sending = Arc::new(tokio::sync::Mutex::new(()));
        let attempts = sending.clone();
        let task = self.runtime.spawn(async move {
            // The key the row was sealed under: this node's, or learned from the node
            // that sealed it.
            let now = (engine.now_ms)();
            let secrets = match keys.get(&row_key).await {
                Some(key) => row_secrets(&ledger, &key, now),
                None => None,
            };
            let Some(secrets) = secrets else {
                tracing::error!(workspace = %ws, endpoint = %id,
                    "the endpoint's secrets do not open with any webhook key this node can \
                     get: not delivered until its secret is rotated");
                // Not started again until a change to it (its rotation) starts it.
                let _ = ended.send((ws, id, true));
                return;
            };
            let endpoint = Endpoint {
                workspace: ws,
                id,
                url,
                entities,
                secrets,
                sending: attempts,
            };
            let outcome = engine.run(&endpoint, d, &handle, &ledger).await;
            engine.observer.gone(ws, &endpoint.id);
            let disabled = matches!(outcome, Ended::Disabled(_));
            let _ = ended.send((ws, endpoint.id.clone(), disabled));
            match &outcome {
                Ended::Disabled(d) => tracing::info!(workspace = %ws, endpoint = %endpoint.id,
                    reason = d.reason.map(Reason::as_str), "webhook endpoint disabled"),
                Ended::Ledger(e) | Ended::Store(e) => {
                    tracing::warn!(workspace = %ws, endpoint = %endpoint.id, error = %e,
                        "webhook deliveries stopped on this node")
                }
                Ended::NotWriter => tracing::info!(workspace = %ws, endpoint = %endpoint.id,
                    "webhook deliveries handed to the workspace's next writer"),
            }
        });
        self.running
            .lock()
            .insert(running_key, Running { task, sending });
    }

    fn rows(&self) -> Result<&dyn WebhookRows, StoreError> {
        rows(&*self.engine.store)
    }

    /// The workspace's group writer, started on first use.
    fn group_writer(&self, ws: Uuid) -> Arc<GroupWriter> {
        self.writers
            .entry(ws)
            .or_insert_with(|| GroupWriter::start(&self.runtime, self.engine.store.clone(), ws))
            .clone()
    }

    fn lock(&self, ws: Uuid) -> Arc<tokio::sync::Mutex<()>> {
        self.changing.entry(ws).or_default().clone()
    }

    /// The workspace's endpoints, in id order.
    pub async fn list(&self, ws: Uuid) -> Result<Vec<StoredEndpoint>, HubError> {
        let rows = self.rows()?.endpoints(ws).await?;
        rows.iter()
            .map(|(_, body)| StoredEndpoint::parse(body).map_err(corrupt))
            .collect()
    }

    /// One endpoint.
    pub async fn get(&self, ws: Uuid, id: &str) -> Result<StoredEndpoint, HubError> {
        let rows = self.rows()?.endpoints(ws).await?;
        let (_, body) = rows
            .iter()
            .find(|(i, _)| i == id)
            .ok_or(HubError::NotFound)?;
        StoredEndpoint::parse(body).map_err(corrupt)
    }

    /// Adds an endpoint (`row` without secrets) with a new secret, which is returned.
    pub async fn create(
        self: &Arc<Self>,
        ws: Uuid,
        mut row: StoredEndpoint,
        most: usize,
    ) -> Result<(StoredEndpoint, Secret), HubError> {
        let key = self.keyring()?.own();
        let lock = self.lock(ws);
        let _held = lock.lock().await;
        if self.rows()?.endpoints(ws).await?.len() >= most {
            return Err(HubError::TooMany);
        }
        let secret = Secret::generate();
        row.set_secret(&key, &secret, row.created_at_ms, row.created_at_ms);
        self.put(ws, &row).await?;
        self.run(ws, row.clone());
        Ok((row, secret))
    }

    /// Changes an endpoint with `change` (which may fail, changing nothing), its task
    /// stopped meanwhile and started again from the row written.
    pub async fn change<T>(
        self: &Arc<Self>,
        ws: Uuid,
        id: &str,
        change: impl FnOnce(&mut StoredEndpoint, &DataKey) -> Result<T, HubError>,
    ) -> Result<(StoredEndpoint, T), HubError> {
        let keys = self.keyring()?.clone();
        let key = keys.own();
        let lock = self.lock(ws);
        let _held = lock.lock().await;
        self.stop(ws, id).await;
        let mut row = match self.get(ws, id).await {
            Ok(row) => row,
            Err(e) => {
                // Its task is started again by the next look, if it exists.
                self.looks.lock().pending.insert(ws);
                return Err(e);
            }
        };
        let before = row.clone();
        if row.key != key.fingerprint() {
            // Sealed by another node: sealed again under this node's key, so that the
            // row's secrets stay with the keys of nodes alive.
            let from = keys.get(&row.key).await;
            row.reseal(from.as_deref(), &key, (self.engine.now_ms)());
        }
        let out = change(&mut row, &key);
        let out = match out {
            Ok(out) => out,
            Err(e) => {
                self.run(ws, before);
                return Err(e);
            }
        };
        if (row.acknowledged, &row.entities, &row.status)
            != (before.acknowledged, &before.entities, &before.status)
        {
            // Its range or its endpoint's lot changed: what was in flight is made again
            // from the point the change left, as a delivery of its own.
            row.in_flight = None;
        }
        row.updated_at_ms = (self.engine.now_ms)();
        if let Err(e) = self.put(ws, &row).await {
            self.run(ws, before);
            return Err(e.into());
        }
        self.run(ws, row.clone());
        Ok((row, out))
    }

    /// Removes an endpoint: no delivery of it starts after this returns.
    pub async fn delete(&self, ws: Uuid, id: &str) -> Result<(), HubError> {
        let lock = self.lock(ws);
        let _held = lock.lock().await;
        self.get(ws, id).await?;
        self.stop(ws, id).await;
        let remove = WebhookWrite::Remove { id: id.to_string() };
        self.rows()?.write(ws, &[remove]).await?;
        Ok(())
    }

    /// The endpoint's newest attempts, newest first.
    pub async fn deliveries(
        &self,
        ws: Uuid,
        id: &str,
        limit: u32,
    ) -> Result<Vec<StoredAttempt>, HubError> {
        self.get(ws, id).await?;
        let bodies = self.rows()?.attempts(ws, id, limit).await?;
        bodies
            .iter()
            .map(|b| serde_json::from_str(b).map_err(|e| corrupt(e.to_string())))
            .collect()
    }

    async fn put(&self, ws: Uuid, row: &StoredEndpoint) -> Result<(), StoreError> {
        let put = WebhookWrite::Put {
            id: row.id.clone(),
            body: row.to_body(),
        };
        self.rows()?.write(ws, &[put]).await
    }
}

/// The secrets that sign for the ledger's row now, opened with `key`.
fn row_secrets(ledger: &RowLedger, key: &DataKey, now_ms: i64) -> Option<Vec<Secret>> {
    ledger.row.lock().signing_secrets(key, now_ms)
}

/// Where the store keeps the endpoints.
fn rows(store: &dyn actors::store::Store) -> Result<&dyn WebhookRows, StoreError> {
    store
        .webhook_rows()
        .ok_or_else(|| StoreError::Other("this store keeps no webhook endpoints".into()))
}

fn corrupt(e: String) -> HubError {
    HubError::Store(StoreError::Corrupt(e))
}

/// The engine's ledger on the store: the endpoint's row, moved with each record, its
/// writes committed with the other endpoints' of the workspace ([`GroupWriter`]).
struct RowLedger {
    writer: Arc<GroupWriter>,
    row: Mutex<StoredEndpoint>,
    /// The row's body as last stored: a move that changes nothing is not written again.
    stored: Mutex<Option<String>>,
}

impl RowLedger {
    fn row_after(&self, d: &Deliverer, attempt: Option<&Attempt>) -> StoredEndpoint {
        let mut row = self.row.lock();
        row.follow(d);
        if let Some(a) = attempt {
            row.last_attempt = Some(a.into());
        }
        row.clone()
    }

    async fn write(&self, mut writes: Vec<WebhookWrite>, body: String) -> Result<(), String> {
        let id = self.row.lock().id.clone();
        writes.push(WebhookWrite::Put {
            id,
            body: body.clone(),
        });
        self.writer.write(writes).await.map_err(|e| e.to_string())?;
        *self.stored.lock() = Some(body);
        Ok(())
    }
}

/// One job of a [`GroupWriter`]: its writes, and where their outcome goes.
type GroupJob = (
    Vec<WebhookWrite>,
    tokio::sync::oneshot::Sender<Result<(), StoreError>>,
);

/// Commits a workspace's endpoints' records together: the writes that queued while a
/// transaction ran go in the next one, so ten endpoints acknowledging at once cost
/// one transaction, not ten (a store's writer is shared with the workspaces' commits).
struct GroupWriter {
    queue: tokio::sync::mpsc::UnboundedSender<GroupJob>,
}

/// Most writes one group transaction takes.
const GROUP_MOST: usize = 256;

impl GroupWriter {
    fn start(
        runtime: &tokio::runtime::Handle,
        store: Arc<dyn actors::store::Store>,
        workspace: Uuid,
    ) -> Arc<GroupWriter> {
        let (queue, mut jobs) = tokio::sync::mpsc::unbounded_channel::<GroupJob>();
        runtime.spawn(async move {
            while let Some(first) = jobs.recv().await {
                let mut group = vec![first];
                while group.len() < GROUP_MOST {
                    match jobs.try_recv() {
                        Ok(job) => group.push(job),
                        Err(_) => break,
                    }
                }
                let writes: Vec<WebhookWrite> =
                    group.iter().flat_map(|(w, _)| w.iter().cloned()).collect();
                let outcome = match rows(&*store) {
                    Ok(rows) => rows.record(workspace, &writes).await,
                    Err(e) => Err(e),
                };
                for (_, done) in group {
                    let _ = done.send(outcome.clone());
                }
            }
        });
        Arc::new(GroupWriter { queue })
    }

    async fn write(&self, writes: Vec<WebhookWrite>) -> Result<(), StoreError> {
        let (done, outcome) = tokio::sync::oneshot::channel();
        let stopped = || StoreError::Unavailable("the webhook writer stopped".into());
        self.queue.send((writes, done)).map_err(|_| stopped())?;
        outcome.await.map_err(|_| stopped())?
    }
}

#[async_trait::async_trait]
impl Ledger for RowLedger {
    async fn attempted(
        &self,
        endpoint: &str,
        attempt: &Attempt,
        d: &Deliverer,
    ) -> Result<(), String> {
        let row = self.row_after(d, Some(attempt));
        let stored = StoredAttempt::from(attempt);
        let record = WebhookWrite::Attempt {
            endpoint: endpoint.to_string(),
            body: serde_json::to_string(&stored).expect("an attempt serialises"),
            keep: ATTEMPTS_KEPT,
        };
        self.write(vec![record], row.to_body()).await
    }

    async fn moved(&self, _endpoint: &str, d: &Deliverer) -> Result<(), String> {
        let body = self.row_after(d, None).to_body();
        if self.stored.lock().as_deref() == Some(body.as_str()) {
            // Stored with the attempt that moved it.
            return Ok(());
        }
        self.write(Vec::new(), body).await
    }
}

#[cfg(test)]
mod tests;
