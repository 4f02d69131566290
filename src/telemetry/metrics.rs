//! Prometheus metrics, served as text at `GET /metrics` on the admin interface.
//!
//! - `recruitd_http_requests_total{route,entity,method,status}` and
//!   `recruitd_http_request_duration_seconds{…}`: every API request; `route` is the
//!   registered pattern (`/v1/{entity}/{id}`) and `entity` the entity it names, so the
//!   label set stays small whatever the ids (and building it allocates nothing).
//! - `recruitd_rate_limited_total{key_id}`: requests refused by a key's budget.
//! - `recruitd_store_commit_duration_seconds{kind,outcome}`: store transactions of
//!   write batches and imports.
//! - `recruitd_blobs_reclaimed_objects_total{by}` and `recruitd_blobs_reclaimed_bytes_total{by}`:
//!   attachment bytes removed from the blob store, `by` an import's deletions (`import`)
//!   or the sweep of a loading workspace (`sweep`).
//! - `recruitd_workspaces{state}` (loading, failing, ready),
//!   `recruitd_workspace_load_failures{workspace,error}`,
//!   `recruitd_search_index_keys{workspace,index}`, `recruitd_search_index_bytes{…}`,
//!   `recruitd_search_index_delta_keys{…}`: read from the registry when scraped.
//! - `recruitd_change_log_position{workspace}` (the last commit's position) and
//!   `recruitd_tombstones{workspace}` (tombstones held): read when scraped. These, the
//!   index sizes and the records below name the workspaces this node holds then alone.
//! - `recruitd_change_log_pruned_through{workspace}` (a token before it must resync),
//!   `recruitd_change_log_parts{workspace}` and `recruitd_change_log_bytes{workspace}`
//!   (the log's size), as of the last pruning (hourly);
//!   `recruitd_change_log_pruned_parts_total{workspace}`,
//!   `recruitd_tombstones_pruned_total{workspace}` and
//!   `recruitd_change_log_prune_duration_seconds{outcome}`: what pruning did.
//! - `recruitd_forwarded_requests_total{node,outcome}` and
//!   `recruitd_forward_duration_seconds{node,outcome}`: requests passed to the node that
//!   writes their workspace (`http::forwarding`): `answered`, `unreachable` (not sent) or
//!   `unknown` (sent, no answer).
//! - `recruitd_follower_lag_seconds`: per commit another node made, from when it was
//!   made to when this node's copy held it (`cluster::follow`).
//! - `recruitd_webhook_deliveries_total{outcome}` (`delivered`, `failed`, `gone`):
//!   webhook attempts by how they were answered; `recruitd_webhook_delivery_lag_seconds`:
//!   from a change's commit to the 2xx that acknowledged it;
//!   `recruitd_webhook_backlog{workspace,endpoint}`: commits after each endpoint's
//!   acknowledged point, on this node (the workspace's writer).
//! - `recruitd_feed_pages_ahead_total{outcome}`: feed pages made before they were asked
//!   for (`http::changes::PagesAhead`), `taken` by the request they were made for or
//!   `unused` (the workspace changed first, or the client stopped).
//! - `recruitd_workspace_records{workspace}`: the records a workspace holds in memory
//!   (hidden ones included), and `recruitd_process_resident_memory_bytes`: the
//!   process's resident memory; read when scraped. Records are what a workspace's
//!   memory grows with (its search indexes are `recruitd_search_index_bytes`); no
//!   figure of bytes per workspace is kept, since measuring one walks every record.
//!
//! [`Metrics::traffic_text`] renders the request latencies alone, for the operator
//! console's samples of live traffic (`crate::admin::console::traffic`).

use actors::env::{CommitKind, CommitObserver, ReclaimedBy};
use actors::loader::Loader;
use actors::registry::{Registry, Slot};
use actors::state::WorkspaceState;
use actors::store::{Reclaimed, StoreError};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use std::time::Duration;
use uuid::Uuid;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// The registered route pattern.
    pub route: &'static str,
    /// The entity of an entity route, else empty.
    pub entity: &'static str,
    pub method: &'static str,
    pub status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ForwardLabels {
    node: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KeyLabels {
    key_id: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CommitLabels {
    kind: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReclaimLabels {
    by: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    state: &'static str,
}

/// The cap that closed a connection on arrival (see `server::tls::connections`).
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum ConnectionRefusal {
    /// The listener holds its cap of connections in all.
    Total,
    /// The connection's peer holds its cap of connections.
    Peer,
    /// The connection's peer has its cap of TLS handshakes in progress.
    Handshakes,
}

impl ConnectionRefusal {
    pub fn as_str(self) -> &'static str {
        match self {
            ConnectionRefusal::Total => "total",
            ConnectionRefusal::Peer => "peer",
            ConnectionRefusal::Handshakes => "handshakes",
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RefusalLabels {
    cap: &'static str,
}

/// The API listener's connection figures, shared with the listener that keeps them.
#[derive(Clone, Default)]
pub struct ConnectionMetrics {
    pub open: Gauge,
    refused: Family<RefusalLabels, Counter>,
}

impl ConnectionMetrics {
    pub fn refused(&self, refusal: ConnectionRefusal) {
        self.refused
            .get_or_create(&RefusalLabels {
                cap: refusal.as_str(),
            })
            .inc();
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LoadFailureLabels {
    workspace: String,
    /// The store error's kind: `unavailable`, `corrupt` or `other`.
    error: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct IndexLabels {
    workspace: String,
    index: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WorkspaceLabels {
    workspace: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: &'static str,
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

/// Request latencies from 25 µs to about 13 s.
fn request_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.000_025, 2.0, 20))
}

/// Commit latencies from 100 µs to about 100 s.
fn commit_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.000_1, 2.0, 21))
}

pub struct Metrics {
    registry: prometheus_client::registry::Registry,
    /// The request latencies alone (the same family as in `registry`).
    traffic: prometheus_client::registry::Registry,
    requests: Family<RequestLabels, Counter>,
    /// API requests answered, all labels together: what a catch-up reads to know the
    /// API is busy (`webhooks::engine::Engine::api_answered`).
    answered: std::sync::atomic::AtomicU64,
    latency: HistogramFamily<RequestLabels>,
    rate_limited: Family<KeyLabels, Counter>,
    commits: HistogramFamily<CommitLabels>,
    reclaimed: ReclaimMetrics,
    workspaces: Family<StateLabels, Gauge>,
    load_failures: Family<LoadFailureLabels, Gauge>,
    held: HeldGauges,
    connections: ConnectionMetrics,
    pages_ahead: Family<OutcomeLabels, Counter>,
    resident_bytes: Gauge,
    retention: RetentionMetrics,
    prunes: HistogramFamily<OutcomeLabels>,
    forwarded: Family<ForwardLabels, Counter>,
    forward_seconds: HistogramFamily<ForwardLabels>,
    follower_lag: Histogram,
    webhooks: WebhookMetrics,
}

/// What webhook deliveries did.
struct WebhookMetrics {
    deliveries: Family<OutcomeLabels, Counter>,
    lag: Histogram,
    backlog: Family<EndpointLabels, Gauge>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EndpointLabels {
    workspace: String,
    endpoint: String,
}

/// What each workspace held here has, as of the last rendering: its change log's
/// position, its tombstones, its records, and the sizes of its search indexes (by index).
/// Set anew at each rendering for the workspaces held then alone: one let go (to another
/// node) leaves every family.
struct HeldGauges {
    log_position: Family<WorkspaceLabels, Gauge>,
    tombstones: Family<WorkspaceLabels, Gauge>,
    records: Family<WorkspaceLabels, Gauge>,
    index_keys: Family<IndexLabels, Gauge>,
    index_bytes: Family<IndexLabels, Gauge>,
    index_delta: Family<IndexLabels, Gauge>,
}

impl HeldGauges {
    fn clear(&self) {
        self.log_position.clear();
        self.tombstones.clear();
        self.records.clear();
        self.index_keys.clear();
        self.index_bytes.clear();
        self.index_delta.clear();
    }

    fn set(&self, id: Uuid, state: &WorkspaceState) {
        let l = WorkspaceLabels {
            workspace: id.to_string(),
        };
        self.log_position
            .get_or_create(&l)
            .set(state.position as i64);
        self.tombstones
            .get_or_create(&l)
            .set(state.tombstones.len() as i64);
        self.records
            .get_or_create(&l)
            .set(state.stored_records() as i64);
        let stats = state.search.stats();
        for (index, keys, bytes, delta) in [
            (
                "phone",
                stats.phone_keys,
                stats.phone_heap_bytes,
                stats.phone_delta,
            ),
            (
                "email",
                stats.email_keys,
                stats.email_heap_bytes,
                stats.email_delta,
            ),
        ] {
            let l = IndexLabels {
                workspace: id.to_string(),
                index,
            };
            self.index_keys.get_or_create(&l).set(keys as i64);
            self.index_bytes.get_or_create(&l).set(bytes as i64);
            self.index_delta.get_or_create(&l).set(delta as i64);
        }
    }
}

/// Attachment objects removed from the blob store, and their bytes, by what removed them.
struct ReclaimMetrics {
    objects: Family<ReclaimLabels, Counter>,
    bytes: Family<ReclaimLabels, Counter>,
}

/// What retention found of a workspace's change log, and what it removed.
struct RetentionMetrics {
    pruned_through: Family<WorkspaceLabels, Gauge>,
    parts: Family<WorkspaceLabels, Gauge>,
    bytes: Family<WorkspaceLabels, Gauge>,
    pruned_parts: Family<WorkspaceLabels, Counter>,
    tombstones_pruned: Family<WorkspaceLabels, Counter>,
}

/// Registers each metric as it is made, so that each is named once, where it is built.
#[derive(Default)]
struct Registrar(prometheus_client::registry::Registry);

impl Registrar {
    fn add<M: prometheus_client::registry::Metric + Clone>(
        &mut self,
        name: &str,
        help: &str,
        metric: M,
    ) -> M {
        self.0.register(name, help, metric.clone());
        metric
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        // Registered in the order written, which is the order of the rendered text.
        let mut r = Registrar::default();
        let latency: HistogramFamily<RequestLabels> =
            Family::new_with_constructor(request_histogram as fn() -> Histogram);
        let mut traffic = prometheus_client::registry::Registry::default();
        traffic.register(
            "recruitd_http_request_duration_seconds",
            "Time from a request's arrival to its answer",
            latency.clone(),
        );
        Metrics {
            answered: Default::default(),
            requests: r.add("recruitd_http_requests", "API requests answered", Family::default()),
            latency: r.add("recruitd_http_request_duration_seconds", "Time from a request's arrival to its answer", latency),
            forwarded: r.add("recruitd_forwarded_requests", "Requests passed to the node that writes their workspace, by node and outcome", Family::default()),
            forward_seconds: r.add("recruitd_forward_duration_seconds", "Time a request passed to another node took, its answer read", Family::new_with_constructor(request_histogram as fn() -> Histogram)),
            // Fine steps (×1.5 from 0.5 ms): the lag's percentiles are read from them.
            follower_lag: r.add("recruitd_follower_lag_seconds", "Per commit another node made, from when it was made to when this node's copy held it", Histogram::new(exponential_buckets(0.000_5, 1.5, 24))),
            rate_limited: r.add("recruitd_rate_limited", "Requests refused because the key's budget was spent", Family::default()),
            commits: r.add("recruitd_store_commit_duration_seconds", "Store transactions of write batches, of the rows they touched, and of imports", Family::new_with_constructor(commit_histogram as fn() -> Histogram)),
            reclaimed: ReclaimMetrics {
                objects: r.add("recruitd_blobs_reclaimed_objects", "Attachment objects removed from the blob store, by what removed them", Family::default()),
                bytes: r.add("recruitd_blobs_reclaimed_bytes", "Bytes of attachment objects removed from the blob store, by what removed them", Family::default()),
            },
            workspaces: r.add("recruitd_workspaces", "Workspaces by load state", Family::default()),
            load_failures: r.add("recruitd_workspace_load_failures", "Failed load attempts in a row of a workspace not loaded yet (retried with backoff), by the last error's kind", Family::default()),
            held: HeldGauges {
                log_position: r.add("recruitd_change_log_position", "A workspace's last commit position: the change feed's newest point", Family::default()),
                tombstones: r.add("recruitd_tombstones", "Tombstones a workspace holds (records that left the API, within retention)", Family::default()),
                records: r.add("recruitd_workspace_records", "Records a workspace holds in memory, hidden ones included", Family::default()),
                index_keys: r.add("recruitd_search_index_keys", "Keys in a workspace's search index base", Family::default()),
                index_bytes: r.add("recruitd_search_index_bytes", "Bytes of a workspace's search index base (fst, offsets, postings)", Family::default()),
                index_delta: r.add("recruitd_search_index_delta_keys", "Keys changed since a workspace's search index base was built", Family::default()),
            },
            connections: {
                let connections = ConnectionMetrics::default();
                r.add("recruitd_api_connections", "API connections open now, TLS handshakes in progress included", connections.open.clone());
                r.add("recruitd_api_connections_refused", "API connections closed on arrival because a cap was reached, by the cap", connections.refused.clone());
                connections
            },
            retention: RetentionMetrics {
                pruned_through: r.add("recruitd_change_log_pruned_through", "The position a workspace's change log is pruned through: older tokens must resync (as of the last pruning)", Family::default()),
                parts: r.add("recruitd_change_log_parts", "Parts in a workspace's change log (as of the last pruning)", Family::default()),
                bytes: r.add("recruitd_change_log_bytes", "Bytes of a workspace's change log entries (as of the last pruning)", Family::default()),
                pruned_parts: r.add("recruitd_change_log_pruned_parts", "Change log parts removed by retention", Family::default()),
                tombstones_pruned: r.add("recruitd_tombstones_pruned", "Tombstones removed from the store by retention", Family::default()),
            },
            prunes: r.add("recruitd_change_log_prune_duration_seconds", "Time to prune one workspace's change log and tombstones, by outcome", Family::new_with_constructor(commit_histogram as fn() -> Histogram)),
            webhooks: WebhookMetrics {
                deliveries: r.add("recruitd_webhook_deliveries", "Webhook attempts, by how they were answered (delivered, failed, gone)", Family::default()),
                lag: r.add("recruitd_webhook_delivery_lag_seconds", "From a change's commit to the webhook 2xx that acknowledged it", Histogram::new(exponential_buckets(0.001, 1.5, 30))),
                backlog: r.add("recruitd_webhook_backlog", "Commits after a webhook endpoint's acknowledged point, on the workspace's writer", Family::default()),
            },
            pages_ahead: r.add("recruitd_feed_pages_ahead", "Change feed pages made before they were asked for, by outcome (taken, unused)", Family::default()),
            resident_bytes: r.add("recruitd_process_resident_memory_bytes", "The process's resident memory", Gauge::default()),
            registry: r.0,
            traffic,
        }
    }

    /// A feed page made ahead was `taken` by its request, or went `unused`.
    pub fn page_ahead(&self, taken: bool) {
        let outcome = if taken { "taken" } else { "unused" };
        self.pages_ahead
            .get_or_create(&OutcomeLabels { outcome })
            .inc();
    }

    /// Records one workspace's pruning.
    pub fn pruned(&self, workspace: uuid::Uuid, p: &actors::store::Pruned, took: Duration) {
        let l = WorkspaceLabels {
            workspace: workspace.to_string(),
        };
        self.retention
            .pruned_through
            .get_or_create(&l)
            .set(p.through as i64);
        self.retention
            .parts
            .get_or_create(&l)
            .set(p.parts_left as i64);
        self.retention
            .bytes
            .get_or_create(&l)
            .set(p.bytes_left as i64);
        self.retention
            .pruned_parts
            .get_or_create(&l)
            .inc_by(p.parts_removed);
        self.retention
            .tombstones_pruned
            .get_or_create(&l)
            .inc_by(p.tombstones_removed);
        self.prunes
            .get_or_create(&OutcomeLabels { outcome: "ok" })
            .observe(took.as_secs_f64());
    }

    pub fn prune_failed(&self, took: Duration) {
        self.prunes
            .get_or_create(&OutcomeLabels { outcome: "failed" })
            .observe(took.as_secs_f64());
    }

    /// The figures the API listener keeps of its connections.
    pub fn connections(&self) -> ConnectionMetrics {
        self.connections.clone()
    }

    /// Records one answered API request.
    pub fn request(&self, labels: RequestLabels, elapsed: Duration) {
        self.latency
            .get_or_create(&labels)
            .observe(elapsed.as_secs_f64());
        self.requests.get_or_create(&labels).inc();
        self.answered
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// API requests answered since the start.
    pub fn answered(&self) -> u64 {
        self.answered.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Records one request passed to another node: to which, how it ended
    /// (`answered`, `unreachable`: not sent, `unknown`: sent, no answer) and how long it
    /// took.
    pub fn forwarded(&self, node: &str, outcome: &'static str, took: Duration) {
        let labels = ForwardLabels {
            node: node.to_string(),
            outcome,
        };
        self.forwarded.get_or_create(&labels).inc();
        self.forward_seconds
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
    }

    /// Records how long after it was made a commit of another node reached this node's
    /// copy.
    pub fn followed(&self, lag: Duration) {
        self.follower_lag.observe(lag.as_secs_f64());
    }

    pub fn rate_limited(&self, key_id: &str) {
        self.rate_limited
            .get_or_create(&KeyLabels {
                key_id: key_id.to_string(),
            })
            .inc();
    }

    /// The text exposition, with the directory's current workspaces, index sizes and the
    /// loader's failures.
    pub fn render(&self, workspaces: &Registry, loader: &Loader) -> String {
        let (mut loading, mut ready) = (0, 0);
        // Only the workspaces held now: one let go (to another node) holds nothing here.
        self.held.clear();
        for (id, slot) in workspaces.slots() {
            match slot {
                Slot::Loading => loading += 1,
                Slot::Ready(h) => {
                    ready += 1;
                    self.held.set(id, &h.state());
                }
            }
        }
        let failures = loader.failures();
        // Only workspaces failing now: one that has loaded since leaves the family.
        self.load_failures.clear();
        for (id, f) in &failures {
            self.load_failures
                .get_or_create(&LoadFailureLabels {
                    workspace: id.to_string(),
                    error: match f.error {
                        StoreError::Unavailable(_) => "unavailable",
                        StoreError::Corrupt(_) => "corrupt",
                        StoreError::Other(_) => "other",
                        StoreError::Fenced(_) => "fenced",
                        StoreError::TouchPending(_) => "touch_pending",
                    },
                })
                .set(i64::from(f.attempts));
        }
        self.workspaces
            .get_or_create(&StateLabels { state: "loading" })
            .set(loading - failures.len() as i64);
        self.workspaces
            .get_or_create(&StateLabels { state: "failing" })
            .set(failures.len() as i64);
        self.workspaces
            .get_or_create(&StateLabels { state: "ready" })
            .set(ready);
        if let Some(bytes) = resident_bytes() {
            self.resident_bytes.set(bytes as i64);
        }
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)
            .expect("writing to a String cannot fail");
        out
    }
}

impl Metrics {
    /// The text exposition of `recruitd_http_request_duration_seconds` alone: what the
    /// console's samples of live traffic read (cheaper than [`Metrics::render`], which
    /// also reads every workspace).
    pub fn traffic_text(&self) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.traffic)
            .expect("writing to a String cannot fail");
        out
    }
}

/// The process's resident memory, from `/proc/self/statm` (Linux; `None` elsewhere).
fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * u64::try_from(page).ok()?)
}

impl crate::webhooks::engine::Observer for Metrics {
    fn attempted(&self, outcome: &'static str) {
        self.webhooks
            .deliveries
            .get_or_create(&OutcomeLabels { outcome })
            .inc();
    }

    fn acknowledged(&self, lag: Duration) {
        self.webhooks.lag.observe(lag.as_secs_f64());
    }

    fn behind(&self, workspace: uuid::Uuid, endpoint: &str, commits: u64) {
        let labels = EndpointLabels {
            workspace: workspace.to_string(),
            endpoint: endpoint.to_string(),
        };
        self.webhooks
            .backlog
            .get_or_create(&labels)
            .set(commits as i64);
    }

    fn gone(&self, workspace: uuid::Uuid, endpoint: &str) {
        self.webhooks.backlog.remove(&EndpointLabels {
            workspace: workspace.to_string(),
            endpoint: endpoint.to_string(),
        });
    }
}

impl CommitObserver for Metrics {
    fn commit(&self, kind: CommitKind, elapsed: Duration, ok: bool) {
        self.commits
            .get_or_create(&CommitLabels {
                kind: match kind {
                    CommitKind::Writes => "writes",
                    CommitKind::Import => "import",
                    CommitKind::Touched => "touched",
                },
                outcome: if ok { "ok" } else { "failed" },
            })
            .observe(elapsed.as_secs_f64());
    }

    fn reclaimed(&self, by: ReclaimedBy, done: Reclaimed) {
        let labels = ReclaimLabels {
            by: match by {
                ReclaimedBy::Import => "import",
                ReclaimedBy::Sweep => "sweep",
            },
        };
        self.reclaimed
            .objects
            .get_or_create(&labels)
            .inc_by(done.objects);
        self.reclaimed
            .bytes
            .get_or_create(&labels)
            .inc_by(done.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actors::model::Workspace;
    use std::sync::Arc;

    /// The lines of a rendering that name the workspace.
    fn lines_of(text: &str, id: Uuid) -> Vec<String> {
        let label = format!("workspace=\"{id}\"");
        text.lines()
            .filter(|l| !l.starts_with('#') && l.contains(&label))
            .map(str::to_string)
            .collect()
    }

    #[actix_rt::test]
    async fn a_workspace_let_go_leaves_every_gauge_of_the_workspaces_held() {
        let store = actors::store::MemoryStore::new();
        let env = Arc::new(actors::env::ActorEnv::new(
            store.clone(),
            Arc::new(actors::store::MemoryBlobs::default()),
            Arc::new(actors::keys::KeyRing::default()),
        ));
        let registry = Registry::new(env, actix::Arbiter::current());
        let loader = Loader::new(store, registry.clone());
        let (kept, let_go) = (Uuid::new_v4(), Uuid::new_v4());
        for id in [kept, let_go] {
            let w = Workspace {
                id,
                name: None,
                default_region: None,
            };
            registry.handle_or_create(&w).expect("created ready");
        }
        let metrics = Metrics::new();
        let held = [
            "recruitd_change_log_position",
            "recruitd_tombstones",
            "recruitd_workspace_records",
            "recruitd_search_index_keys",
            "recruitd_search_index_bytes",
            "recruitd_search_index_delta_keys",
        ];
        let before = metrics.render(&registry, &loader);
        for id in [kept, let_go] {
            let lines = lines_of(&before, id);
            for name in held {
                assert!(
                    lines.iter().any(|l| l.starts_with(name)),
                    "{name} of {id} missing: {lines:?}"
                );
            }
        }
        assert!(registry.remove(let_go));
        let after = metrics.render(&registry, &loader);
        assert_eq!(lines_of(&after, let_go), Vec::<String>::new());
        assert_eq!(lines_of(&after, kept).len(), lines_of(&before, kept).len());
    }
}
