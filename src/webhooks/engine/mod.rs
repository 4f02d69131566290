//! One endpoint's deliveries, run: the [`Deliverer`]'s steps carried out against a
//! workspace's published state, the change log, a receiver and a ledger.
//!
//! It runs off the actors and off the request path, one task an endpoint: it reads the
//! published state (never the actor), renders its batch on its own task, and waits on
//! the receiver alone, so a receiver that hangs or fails holds up nothing but its own
//! endpoint. It keeps in memory only the delivery in flight (its body, at most
//! [`batch::MOST_BYTES`]) and the points; everything else is in the log.
//!
//! Nothing is sent past an acknowledgement the ledger has not stored, nor before the
//! delivery itself is stored in flight: a restart, or another node taking the
//! workspace over, resumes from the stored point and sends the delivery that was in
//! flight again under its own `webhook-id`, over the same changes (a retry of it).

use super::batch::{self, Envelope, Next};
use super::deliverer::{Deliverer, Outcome, Status, Step};
use super::retry::{self, Schedule};
use super::runtime;
use super::secret::Secret;
use super::send::{Outgoing, Sender, Sent};
use actors::changes::feed::{FeedError, PartCache};
use actors::changes::tokens::FeedPoint;
use actors::model::Entity;
use actors::state::WorkspaceState;
use actors::store::Store;
use bytes::Bytes;
use rand::Rng;
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

/// What the engine reads of a workspace: its published state, and word of the next.
#[async_trait::async_trait]
pub trait Published: Send + Sync {
    fn state(&self) -> Arc<WorkspaceState>;
    /// The state once one after `position` is published, or at `deadline` the current.
    async fn after(&self, position: u64, deadline: tokio::time::Instant) -> Arc<WorkspaceState>;
}

#[async_trait::async_trait]
impl Published for actors::actor::WorkspaceHandle {
    fn state(&self) -> Arc<WorkspaceState> {
        actors::actor::WorkspaceHandle::state(self)
    }

    async fn after(&self, position: u64, deadline: tokio::time::Instant) -> Arc<WorkspaceState> {
        self.published_after(position, deadline).await
    }
}

/// One attempt, as the deliveries log keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attempt {
    pub delivery_id: String,
    pub since: FeedPoint,
    pub next: FeedPoint,
    /// 1 for the first attempt of the delivery.
    pub number: u32,
    pub sent: Sent,
    pub at_ms: i64,
}

/// Where an endpoint's deliveries are recorded. An error stops the endpoint's task: the
/// node may no longer be the workspace's writer, and its successor resumes from what
/// was stored.
#[async_trait::async_trait]
pub trait Ledger: Send + Sync {
    /// An attempt was made; `d` is the endpoint's state after it.
    async fn attempted(
        &self,
        endpoint: &str,
        attempt: &Attempt,
        d: &Deliverer,
    ) -> Result<(), String>;
    /// The endpoint's point or status moved (a 2xx, a feed with nothing for it, a
    /// disabling): stored before anything further is sent.
    async fn moved(&self, endpoint: &str, d: &Deliverer) -> Result<(), String>;
}

/// An endpoint as its task runs it.
pub struct Endpoint {
    pub workspace: Uuid,
    pub id: String,
    pub url: url::Url,
    /// The entities it receives (every one when all nine).
    pub entities: Vec<Entity>,
    /// The secrets that sign: the current one, and during a rotation the previous.
    pub secrets: Vec<Secret>,
    /// Held by an attempt sent as idle work while it runs
    /// ([`Outgoing::send_as_idle_work`]): the task's owner, having stopped the task,
    /// takes it to know that no attempt of the endpoint is still under way.
    pub sending: Arc<tokio::sync::Mutex<()>>,
}

/// Told of what deliveries do (the server's metrics).
pub trait Observer: Send + Sync {
    /// An attempt was answered: `delivered` (2xx), `gone` (410) or `failed`.
    fn attempted(&self, outcome: &'static str);
    /// Changes were acknowledged `lag` after the newest of them committed.
    fn acknowledged(&self, lag: Duration);
    /// Commits after an endpoint's acknowledged point now.
    fn behind(&self, workspace: Uuid, endpoint: &str, commits: u64);
    /// The endpoint's task ended: it has no backlog to report.
    fn gone(&self, workspace: Uuid, endpoint: &str);
}

/// Tells nothing to no one.
pub struct Unobserved;

impl Observer for Unobserved {
    fn attempted(&self, _: &'static str) {}
    fn acknowledged(&self, _: Duration) {}
    fn behind(&self, _: Uuid, _: &str, _: u64) {}
    fn gone(&self, _: Uuid, _: &str) {}
}

/// What every endpoint's task shares.
pub struct Engine {
    pub store: Arc<dyn Store>,
    pub cache: Arc<PartCache>,
    /// The pages made lately, for endpoints at the same points (one render for all).
    pub pages: batch::Pages,
    pub sender: Sender,
    pub schedule: Schedule,
    /// How feed points are written as tokens (sealed for the workspace).
    pub token: Arc<dyn Fn(Uuid, FeedPoint) -> String + Send + Sync>,
    /// Milliseconds since the epoch.
    pub now_ms: Arc<dyn Fn() -> i64 + Send + Sync>,
    /// Whether this node writes a workspace now: asked before every attempt, so that a
    /// node whose lease has passed sends nothing more while its successor takes over.
    pub writes: Arc<dyn Fn(Uuid) -> bool + Send + Sync>,
    pub observer: Arc<dyn Observer>,
    /// A count that moves with every request the API answers: while it moves, a
    /// catch-up's attempts start [`runtime::BUSY_GAP`] apart in the process.
    pub api_answered: Arc<dyn Fn() -> u64 + Send + Sync>,
}

/// How long an idle endpoint waits for a commit before it looks again.
const IDLE_WAIT: Duration = Duration::from_secs(30);

/// Why an endpoint's task ended.
#[derive(Debug)]
pub enum Ended {
    /// The endpoint is disabled (its state says why).
    Disabled(Deliverer),
    /// The ledger refused a record: this node stops delivering the endpoint.
    Ledger(String),
    /// The change log could not be read.
    Store(String),
    /// This node no longer writes the workspace: its successor delivers.
    NotWriter,
}

impl Engine {
    /// Runs `endpoint` from `d` until it is disabled or its records cannot be kept. A
    /// task to abort when the endpoint changes or goes: what it acknowledged is stored.
    pub async fn run(
        &self,
        endpoint: &Endpoint,
        mut d: Deliverer,
        workspace: &dyn Published,
        ledger: &dyn Ledger,
    ) -> Ended {
        let envelope_token = |p: FeedPoint| (self.token)(endpoint.workspace, p);
        let envelope = Envelope {
            workspace: endpoint.workspace,
            endpoint_id: &endpoint.id,
            token: &envelope_token,
        };
        // The delivery in flight: its id and body, the same on every attempt, and when
        // its newest change was committed (what its lag is measured from).
        let mut body: Option<(String, Bytes, Option<i64>)> = None;
        // Whether it is a full batch: more is waiting (a catch-up), so the next one is
        // made while it is sent. A live endpoint's small batches are not: the next is
        // made from the freshest state once this one is answered, and holds more.
        let mut full = false;
        // The API's count of answers at this endpoint's last catch-up attempt.
        let mut answered = (self.api_answered)();
        loop {
            let state = workspace.state();
            let now = (self.now_ms)();
            let behind = state.position.saturating_sub(d.acknowledged.position);
            self.observer
                .behind(endpoint.workspace, &endpoint.id, behind);
            match d.next_step(now, state.position) {
                Step::Idle => {
                    if d.status == Status::Disabled {
                        return Ended::Disabled(d);
                    }
                    let deadline = tokio::time::Instant::now() + IDLE_WAIT;
                    workspace.after(state.position, deadline).await;
                }
                Step::WaitUntil(at) => {
                    let wait = Duration::from_millis((at - now).max(0) as u64);
                    tokio::time::sleep(wait).await;
                }
                Step::Prepare(since) => {
                    let entities = &endpoint.entities;
                    let made =
                        batch::next_batch(self.feed(), &state, since, entities, &envelope).await;
                    match made {
                        Ok(Next::Batch(b)) => {
                            full = is_full(&b);
                            let id = delivery_id();
                            d.prepared(Ok((id.clone(), b.since, b.next)));
                            body = Some((id, Bytes::from(b.body), b.newest_commit_ms));
                            // Stored before its first attempt: whoever sends it again
                            // sends it as a retry, under the same id.
                            if let Err(e) = ledger.moved(&endpoint.id, &d).await {
                                return Ended::Ledger(e);
                            }
                        }
                        Ok(Next::Nothing { seen }) => {
                            d.prepared(Err(seen));
                            if let Err(e) = ledger.moved(&endpoint.id, &d).await {
                                return Ended::Ledger(e);
                            }
                        }
                        Err(e) => {
                            let failed = (endpoint.id.as_str(), &mut d, ledger, workspace);
                            if let Err(ended) = feed_failed(e, failed, state.position).await {
                                return ended;
                            }
                        }
                    }
                }
                Step::Send => {
                    if !(self.writes)(endpoint.workspace) {
                        return Ended::NotWriter;
                    }
                    let flight = d.in_flight.clone().expect("a step to send has a delivery");
                    let Some((id, payload, newest_commit_ms)) = body.clone() else {
                        // A delivery stored in flight by a task before this one: made
                        // again over the same range, under the same id.
                        let range = (flight.since, flight.next);
                        let entities = &endpoint.entities;
                        let again =
                            batch::range_batch(self.feed(), &state, range, entities, &envelope);
                        match again.await {
                            Ok(Some(b)) => {
                                full = is_full(&b);
                                let payload = Bytes::from(b.body);
                                body = Some((flight.id.clone(), payload, b.newest_commit_ms));
                            }
                            // Grown past a delivery's size: made afresh, a new delivery.
                            Ok(None) => d.in_flight = None,
                            Err(e) => {
                                let failed = (endpoint.id.as_str(), &mut d, ledger, workspace);
                                if let Err(ended) = feed_failed(e, failed, state.position).await {
                                    return ended;
                                }
                            }
                        }
                        continue;
                    };
                    debug_assert_eq!(id, flight.id);
                    let at_ms = (self.now_ms)();
                    let timestamp = at_ms.div_euclid(1000);
                    let outgoing = Outgoing {
                        sender: self.sender.clone(),
                        url: endpoint.url.clone(),
                        secrets: endpoint.secrets.clone(),
                        id: id.clone(),
                        timestamp,
                        body: payload,
                    };
                    // A full batch is a catch-up's: sent as idle work, as it was
                    // rendered, and spaced out while the API is answering requests.
                    let pace = if full {
                        let now = (self.api_answered)();
                        let busy = std::mem::replace(&mut answered, now) != now;
                        if busy {
                            runtime::BUSY_GAP
                        } else {
                            Duration::ZERO
                        }
                    } else {
                        Duration::ZERO
                    };
                    let sending = async {
                        if full {
                            outgoing.send_as_idle_work(&endpoint.sending, pace).await
                        } else {
                            outgoing.send().await
                        }
                    };
                    // While the receiver answers, the batch after this one is made
                    // (when the state already holds more): sent only once this one is
                    // acknowledged and that is stored, and dropped otherwise.
                    let ahead = async {
                        if !full || state.position < flight.next.position {
                            return None;
                        }
                        let entities = &endpoint.entities;
                        let next = flight.next;
                        let made =
                            batch::next_batch(self.feed(), &state, next, entities, &envelope);
                        Some(made.await)
                    };
                    let (sent, ahead) = tokio::join!(sending, ahead);
                    let answer = retry::judge(sent.status);
                    self.observer.attempted(match answer {
                        retry::Answer::Delivered => "delivered",
                        retry::Answer::Gone => "gone",
                        retry::Answer::Failed => "failed",
                    });
                    let jitter = rand::thread_rng().gen::<f64>();
                    let outcome = d.answered(&id, answer, &self.schedule, (self.now_ms)(), jitter);
                    let attempt = Attempt {
                        delivery_id: id,
                        since: flight.since,
                        next: flight.next,
                        number: flight.failures + 1,
                        sent,
                        at_ms,
                    };
                    if matches!(
                        outcome,
                        Some(Outcome::Acknowledged(_) | Outcome::Disabled(_))
                    ) {
                        body = None;
                    }
                    if let Some(Outcome::Acknowledged(at)) = outcome {
                        // The next delivery (made while this one was sent, or now from
                        // the freshest state) goes in flight in the same record as this
                        // acknowledgement: one write a delivery while changes keep
                        // coming.
                        let next = match ahead {
                            Some(Ok(Next::Batch(b))) if b.since == at => Some(Ok(Next::Batch(b))),
                            _ => {
                                let fresh = workspace.state();
                                if super::deliverer::behind(at, fresh.position) {
                                    let entities = &endpoint.entities;
                                    let made = batch::next_batch(
                                        self.feed(),
                                        &fresh,
                                        at,
                                        entities,
                                        &envelope,
                                    );
                                    Some(made.await)
                                } else {
                                    None
                                }
                            }
                        };
                        match next {
                            Some(Ok(Next::Batch(b))) if d.in_flight.is_none() => {
                                full = is_full(&b);
                                let id = delivery_id();
                                d.prepared(Ok((id.clone(), b.since, b.next)));
                                body = Some((id, Bytes::from(b.body), b.newest_commit_ms));
                            }
                            Some(Ok(Next::Nothing { seen })) if d.in_flight.is_none() => {
                                d.prepared(Err(seen));
                            }
                            // Anything else is met again by the next step.
                            _ => {}
                        }
                    }
                    if let (Some(Outcome::Acknowledged(_)), Some(committed_ms)) =
                        (outcome, newest_commit_ms)
                    {
                        let lag = ((self.now_ms)() - committed_ms).max(0) as u64;
                        self.observer.acknowledged(Duration::from_millis(lag));
                    }
                    if let Err(e) = ledger.attempted(&endpoint.id, &attempt, &d).await {
                        return Ended::Ledger(e);
                    }
                }
            }
        }
    }
}

/// What the feed's refusal does to an endpoint: a point older than the log keeps
/// disables it (stored; the next step ends the task), a store failure ends its task,
/// and a state behind the point (a copy not yet caught up) is waited out, until the
/// workspace moves past `position` or for [`IDLE_WAIT`].
async fn feed_failed(
    e: FeedError,
    (endpoint, d, ledger, workspace): (&str, &mut Deliverer, &dyn Ledger, &dyn Published),
    position: u64,
) -> Result<(), Ended> {
    match e {
        FeedError::Pruned => {
            d.pruned();
            ledger.moved(endpoint, d).await.map_err(Ended::Ledger)
        }
        FeedError::Ahead => {
            let deadline = tokio::time::Instant::now() + IDLE_WAIT;
            workspace.after(position, deadline).await;
            Ok(())
        }
        FeedError::Store(e) => Err(Ended::Store(e.to_string())),
    }
}

/// Whether a batch is as large as a delivery may be: more changes wait after it.
fn is_full(b: &batch::Batch) -> bool {
    b.changes >= batch::MOST_CHANGES || b.body.len() >= batch::MOST_BYTES / 2
}

/// A new delivery's `webhook-id`.
fn delivery_id() -> String {
    format!("whd_{}", Uuid::new_v4().simple())
}

impl Engine {
    /// Where batches are read from.
    fn feed(&self) -> batch::Feed<'_> {
        batch::Feed {
            store: &*self.store,
            cache: &self.cache,
            pages: &self.pages,
        }
    }
}

#[cfg(test)]
mod tests;
