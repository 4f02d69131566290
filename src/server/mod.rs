//! Start-up: `Application::build(settings)` takes the store lock, opens the store, loads
//! the workspaces, binds the HTTPS API and the admin interface, and runs until stopped.
//! Tests start the real application the same way, on port 0.

pub mod secrets;
pub mod tls;

use crate::admin::{self, AdminState};
use crate::clock::Clock;
use crate::http;
use crate::http::signed_urls::UrlSigner;
use crate::http::state::{AppState, Downloads};
use crate::store::blobs::StoreBlobs;
use crate::store::lock::StoreLock;
use actix_web::dev::{Server, ServerHandle};
use actix_web::{web, HttpServer};
use actors::checkpoint::files::CheckpointDir;
use actors::checkpoint::keeper::Keeper;
use actors::env::{ActorConfig, ActorEnv};
use actors::keys::{KeyRing, KeyService};
use actors::loader::Loader;
use actors::query::CursorKey;
use actors::registry::Registry;
use actors::store::{BlobStore, Store};
use anyhow::Context;
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use tls::HttpsOptions;

/// The API's address unless `--listen` says otherwise.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8443";
/// The admin interface's address unless `--admin-listen` says otherwise.
pub const DEFAULT_ADMIN_LISTEN: &str = "127.0.0.1:8444";

/// Everything `serve` is configured with.
#[derive(Clone, Debug)]
pub struct Settings {
    pub data_dir: PathBuf,
    pub database_url: Option<String>,
    pub listen: SocketAddr,
    pub admin_listen: SocketAddr,
    pub admin_allow_remote: bool,
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    /// Base of signed download URLs; `https://<bound API address>` when unset.
    pub public_url: Option<String>,
    pub rate_limit_per_minute: u32,
    /// Requests without a valid key one peer address may make per minute (401s) before
    /// its further ones are answered 429 (see `http::ratelimit::PeerFailures`).
    pub failed_auth_per_minute: u32,
    /// API connections open at once; `None` derives the cap from the descriptor limit
    /// (see `tls::connections`).
    pub max_connections: Option<usize>,
    /// API connections of one peer address (IPv6: one /64).
    pub max_connections_per_peer: usize,
    pub admin_token: Option<String>,
    pub workers: Option<usize>,
    /// Most API writes of one workspace committed in one transaction (1: no grouping).
    pub write_batch_max: usize,
    /// How often each workspace's checkpoint is brought up to date (also once all
    /// workspaces have loaded, and at shutdown); `None` keeps no checkpoints: none is
    /// written, none is read.
    pub checkpoint_interval: Option<std::time::Duration>,
    /// How long the change log keeps changes (and so tombstones): a feed client
    /// further behind is asked to sync afresh.
    pub changes_retention: std::time::Duration,
    /// How often retention prunes (the first time as soon as the workspaces are known).
    pub changes_prune_every: std::time::Duration,
    /// "Now" for signed download URLs (tests use a manual clock to cross an expiry).
    pub clock: Clock,
    /// `--node-name`, `--advertise-url`, `--replicas` (see `crate::cluster::Identity`).
    pub node_name: Option<String>,
    pub advertise_url: Option<String>,
    pub replicas: usize,
    /// `--webhooks-allow-insecure`: endpoints may be `http://` and on private,
    /// loopback and link-local addresses (receivers in tests).
    pub webhooks_allow_insecure: bool,
    /// When failed deliveries are tried again (the contract's; tests shorten it).
    pub webhooks_schedule: crate::webhooks::retry::Schedule,
    /// How often the operator console samples the live traffic (tests shorten it).
    pub console_sample_every: std::time::Duration,
}

/// `--checkpoint-interval`'s default: a restart after a deploy finds a checkpoint at
/// most this old (plus the one written at shutdown), while a busy workspace is not
/// rewritten more often than this.
pub const DEFAULT_CHECKPOINT_INTERVAL: std::time::Duration = std::time::Duration::from_secs(600);

/// Connections the admin interface serves at once (operators and scrapers need few).
const ADMIN_MAX_CONNECTIONS: usize = 128;

/// Longest a shutdown waits for the checkpoints to be written.
const SHUTDOWN_CHECKPOINT_LIMIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Longest a graceful stop waits for other nodes to take the writer leases it gives up
/// before it stops accepting connections (`Membership::hand_over`).
const HAND_OVER_LIMIT: std::time::Duration = std::time::Duration::from_secs(5);

impl Settings {
    /// Defaults of `docs/operations.md`, rooted at `data_dir`.
    pub fn new(data_dir: PathBuf) -> Self {
        Settings {
            data_dir,
            database_url: None,
            listen: DEFAULT_LISTEN.parse().expect("valid"),
            admin_listen: DEFAULT_ADMIN_LISTEN.parse().expect("valid"),
            admin_allow_remote: false,
            tls_cert: None,
            tls_key: None,
            public_url: None,
            rate_limit_per_minute: 600,
            failed_auth_per_minute: crate::http::ratelimit::DEFAULT_FAILED_AUTH_PER_MINUTE,
            max_connections: None,
            max_connections_per_peer: tls::connections::DEFAULT_CONNECTIONS_PER_PEER,
            admin_token: None,
            workers: None,
            write_batch_max: actors::env::MAX_BATCH,
            checkpoint_interval: Some(DEFAULT_CHECKPOINT_INTERVAL),
            changes_retention: std::time::Duration::from_secs(
                u64::from(actors::changes::DEFAULT_RETENTION_DAYS) * 86_400,
            ),
            changes_prune_every: actors::changes::PRUNE_EVERY,
            clock: Clock::System,
            node_name: None,
            advertise_url: None,
            replicas: crate::cluster::DEFAULT_REPLICAS,
            webhooks_allow_insecure: false,
            webhooks_schedule: crate::webhooks::retry::Schedule::CONTRACT,
            console_sample_every: crate::admin::console::traffic::SAMPLE_EVERY,
        }
    }
}

/// The API's and the admin interface's sockets, bound before anything else is done.
pub struct Listeners {
    api: TcpListener,
    admin: TcpListener,
}

impl Listeners {
    /// Binds both addresses of `s`, refusing a non-loopback admin address unless allowed.
    /// Done first, so that an address in use, or refused, leaves nothing behind.
    pub fn bind(s: &Settings) -> anyhow::Result<Listeners> {
        if !s.admin_allow_remote && !s.admin_listen.ip().is_loopback() {
            anyhow::bail!(
                "--admin-listen {} is not a loopback address; add --admin-allow-remote to allow it",
                s.admin_listen
            );
        }
        Ok(Listeners {
            api: TcpListener::bind(s.listen).with_context(|| format!("binding {}", s.listen))?,
            admin: TcpListener::bind(s.admin_listen)
                .with_context(|| format!("binding {}", s.admin_listen))?,
        })
    }
}

pub struct Application {
    api_addr: SocketAddr,
    admin_addr: SocketAddr,
    api: Server,
    admin: Server,
    pub registry: Arc<Registry>,
    /// Closed once both servers have stopped.
    store: Arc<dyn Store>,
    /// Writes the checkpoints; once more when both servers have stopped.
    keeper: Option<Arc<Keeper>>,
    /// This node in the cluster: left once both servers have stopped.
    membership: Arc<crate::cluster::Membership>,
    /// The workspaces it holds, as the cluster sees them (handed over at a stop).
    held: Arc<dyn crate::cluster::leases::Held>,
    pub admin_token: String,
    pub tls_cert_pem: Vec<u8>,
    /// Held while the application runs, so that no offline command writes the store
    /// behind its back (and, on SQLite, no second server starts on it).
    store_lock: StoreLock,
    /// The webhook endpoints' tasks, stopped before the store closes.
    webhooks: Arc<crate::webhooks::hub::Hub>,
    webhook_looks: tokio::task::JoinHandle<()>,
    /// The console's samples of live traffic, ended with the servers.
    traffic_samples: tokio::task::JoinHandle<()>,
    // Kept so their threads live as long as the application.
    _actors: actix::Arbiter,
    _loading: actix::Arbiter,
}

impl Application {
    /// Takes the store lock, opens the store, starts loading workspaces and binds both
    /// listeners. Must run inside an actix system (`#[actix_web::main]`,
    /// `#[actix_web::test]`). Fails when the store is locked (see `store::lock`).
    pub async fn build(s: Settings) -> anyhow::Result<Application> {
        let listeners = Listeners::bind(&s)?;
        let lock = StoreLock::for_server(s.database_url.as_deref(), &s.data_dir).await?;
        Self::build_with(s, lock, listeners).await
    }

    /// [`Application::build`] with the listeners bound and the store lock taken (by
    /// `serve`, which binds first, so that a port in use makes nothing, and writes the
    /// demo workspace under the lock).
    pub async fn build_with(
        s: Settings,
        store_lock: StoreLock,
        listeners: Listeners,
    ) -> anyhow::Result<Application> {
        tls::install_crypto_provider();
        if let Some(url) = &s.public_url {
            // Signed URLs are this base plus a path and a query: anything else breaks them.
            if !(url.starts_with("https://") || url.starts_with("http://"))
                || url.contains(['?', '#'])
            {
                anyhow::bail!(
                    "--public-url {url:?} must be an http(s) URL without query or fragment"
                );
            }
        }
        actors::private_files::create_dir(&s.data_dir)
            .with_context(|| format!("creating data dir {}", s.data_dir.display()))?;
        let tls_config =
            tls::server_config(&s.data_dir, s.tls_cert.as_deref(), s.tls_key.as_deref())?;
        let cert_path = s
            .tls_cert
            .clone()
            .unwrap_or_else(|| tls::self_signed_paths(&s.data_dir).0);
        let tls_cert_pem = std::fs::read(&cert_path).unwrap_or_default();
        let identity = crate::cluster::Identity::new(
            s.node_name.clone(),
            s.advertise_url.clone(),
            s.replicas,
            listeners.api.local_addr()?,
        )?;
        let signing_key = secrets::signing_key(&s.data_dir)?;
        // Alone for good on SQLite (its lock refuses a second server): seals need no
        // signature another node could check.
        let signer = Arc::new(if s.database_url.is_some() {
            actors::signing::Signer::from_secret(&signing_key)
        } else {
            actors::signing::Signer::alone(&signing_key)
        });
        // On PostgreSQL, which other servers may share, commits are fenced by the
        // writer leases this node takes (`crate::cluster::leases`).
        let (store, membership) = match s.database_url.as_deref() {
            Some(url) => {
                let fences = crate::cluster::Membership::fences_for(&identity);
                let store =
                    crate::store::open_fenced(Some(url), &s.data_dir, fences.clone()).await?;
                let cluster = Arc::new(crate::store::cluster::PgCluster::connect(url).await?);
                let membership = crate::cluster::Membership::join(
                    cluster,
                    identity,
                    fences,
                    tls::cert_sha256(&cert_path)?,
                    signer.clone(),
                    Some(tls::certs::node_identity(
                        &s.data_dir,
                        s.tls_cert.as_deref(),
                        s.tls_key.as_deref(),
                    )?),
                )
                .await?;
                (store, membership)
            }
            None => (
                crate::store::open(None, &s.data_dir).await?,
                crate::cluster::Membership::alone(identity, signer.clone()).await,
            ),
        };
        let blobs: Arc<dyn BlobStore> =
            Arc::new(StoreBlobs::new(store.clone(), s.data_dir.join("blobs")));
        let admin_token = secrets::admin_token(&s.data_dir, s.admin_token.as_deref())?;
        let keys = Arc::new(KeyRing::default());
        keys.load(&*store).await.context("loading API keys")?;
        let metrics = Arc::new(crate::telemetry::metrics::Metrics::new());
        // What every workspace actor works with, built once.
        let env = Arc::new(ActorEnv {
            config: ActorConfig {
                write_batch_max: s.write_batch_max,
            },
            observer: metrics.clone(),
            ..ActorEnv::new(store.clone(), blobs.clone(), keys.clone())
        });
        let actors = actix::Arbiter::new();
        let registry = Registry::new(env, actors.handle());
        let keeper = s.checkpoint_interval.map(|interval| {
            Keeper::new(
                store.clone(),
                registry.clone(),
                CheckpointDir::new(&s.data_dir),
                interval,
            )
        });
        let loader = Loader::with_checkpoints(store.clone(), registry.clone(), keeper.clone());
        {
            // On PostgreSQL a workspace's blobs are swept by its writer once it holds the
            // lease (the store refuses deletes of any other), see below; alone for good,
            // at load.
            let membership = membership.clone();
            loader.sweep_only_when(Arc::new(move || !membership.shared()));
        }
        if let Some(keeper) = &keeper {
            actix_web::rt::spawn(keeper.clone().run());
        }
        // With other nodes alive, only the workspaces placed on this one
        // (`crate::cluster::rounds`); alone, every one. The rounds know them all.
        let placed = membership.placed_here();
        let all = parking_lot::Mutex::new(Vec::new());
        let list = loader
            .discover_where(|w| {
                all.lock().push(w.id);
                placed(w.id)
            })
            .await
            .context("listing workspaces")?;
        membership.know(all.into_inner()).await;
        // Workspaces load on a thread of their own; until each is loaded its requests
        // answer 503 with Retry-After, and /admin/v1/ready answers 503.
        let loading = actix::Arbiter::new();
        let held: Arc<dyn crate::cluster::leases::Held> = Arc::new(HeldWorkspaces {
            registry: registry.clone(),
            loader: loader.clone(),
            loading: loading.handle(),
            metrics: metrics.clone(),
        });
        let limiter = Arc::new(crate::http::ratelimit::RateLimiter::new(
            s.rate_limit_per_minute,
            s.clock.clone(),
        ));
        // Before the first lease: a new writer goes on from what its keys spent.
        membership.share_budgets(limiter.clone());
        actix_web::rt::spawn(membership.clone().keep_sharing_budgets());
        actix_web::rt::spawn(membership.clone().follow_writers(held.clone()));
        // After discovery, so that the first pruning covers every workspace of the store.
        actix_web::rt::spawn(prune_changes_forever(
            store.clone(),
            registry.clone(),
            membership.clone(),
            metrics.clone(),
            s.changes_retention,
            s.changes_prune_every,
        ));

        {
            // Once loaded, a round takes the leases this node should hold before it
            // says it is ready; then the rounds go on.
            // (The rounds run on this runtime, which lives as long as the application;
            // the loading thread's does not stop with it.)
            let (loaded, all_loaded) = tokio::sync::oneshot::channel();
            let loader = loader.clone();
            loading.spawn(async move {
                loader.load_all(list).await;
                let _ = loaded.send(());
            });
            let (membership, held, registry) = (membership.clone(), held.clone(), registry.clone());
            actix_web::rt::spawn(async move {
                if all_loaded.await.is_err() {
                    return;
                }
                membership.settle(&held).await;
                sweep_if_alone(&membership, &registry);
                membership.keep_alive(held).await;
            });
        }

        let Listeners {
            api: api_listener,
            admin: admin_listener,
        } = listeners;
        let api_addr = api_listener.local_addr()?;
        // `--public-url` defaults to the address actually bound (port 0 in tests).
        let public_url = s
            .public_url
            .clone()
            .unwrap_or_else(|| format!("https://{api_addr}"));
        let webhook_policy = crate::webhooks::address::Policy {
            allow_insecure: s.webhooks_allow_insecure,
        };
        let writes: Arc<dyn Fn(uuid::Uuid) -> bool + Send + Sync> = {
            let membership = membership.clone();
            Arc::new(move |ws| membership.writes(ws))
        };
        let webhooks = {
            let engine = crate::webhooks::engine::Engine {
                writes: writes.clone(),
                observer: metrics.clone(),
                store: store.clone(),
                cache: Arc::new(actors::changes::feed::PartCache::default()),
                pages: Default::default(),
                sender: crate::webhooks::send::Sender::new(webhook_policy),
                schedule: s.webhooks_schedule,
                token: {
                    let key = CursorKey::from_signer(signer.clone());
                    Arc::new(move |ws, point| {
                        actors::changes::tokens::encode_token(&key, ws, point)
                    })
                },
                now_ms: Arc::new(actors::store::now_ms),
                api_answered: {
                    let metrics = metrics.clone();
                    Arc::new(move || metrics.answered())
                },
            };
            let (keys, file) = secrets::webhooks_keys(&s.data_dir)?;
            let ask: crate::webhooks::sealing::AskPeers = {
                let membership = membership.clone();
                Arc::new(move |fingerprint: String| {
                    let membership = membership.clone();
                    Box::pin(async move { membership.ask_for_webhook_key(&fingerprint).await })
                })
            };
            let keyring = crate::webhooks::sealing::Keyring::new(keys, Some(ask), Some(file))
                .expect("the data dir holds a webhook key");
            // Joining nodes that are alive: seal with the key they seal with, so that
            // any node can deliver what another sealed when that one dies.
            // (A node that has not yet read this one's row answers it as a client's
            // request, and reads the directory: asked again, it answers.)
            let asking_until = std::time::Instant::now() + std::time::Duration::from_secs(5);
            while membership.others_alive() && std::time::Instant::now() < asking_until {
                if let Some(bytes) = membership.ask_for_webhook_key("").await {
                    keyring.adopt(&bytes);
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(250)).await;
            }
            crate::webhooks::hub::Hub::new(
                Arc::new(engine),
                registry.clone(),
                Some(Arc::new(keyring)),
                Arc::new(Writing(membership.clone())),
                // The server's own: its tasks end with it.
                tokio::runtime::Handle::current(),
            )
        };
        let webhook_looks = webhooks.start();
        let app_state = web::Data::new(AppState {
            registry: registry.clone(),
            keys: keys.clone(),
            blobs,
            store: store.clone(),
            feed: Default::default(),
            cursor_key: CursorKey::from_signer(signer.clone()),
            downloads: Downloads {
                signer: UrlSigner::new(signer, &public_url),
                clock: s.clock.clone(),
            },
            limiter,
            peer_failures: crate::http::ratelimit::PeerFailures::new(
                s.failed_auth_per_minute,
                s.clock.clone(),
            ),
            metrics: metrics.clone(),
            cluster: membership.clone(),
            webhooks: webhooks.clone(),
            webhook_policy,
        });
        let api = tls::https_server(
            api_listener,
            tls_config,
            move || http::app(app_state.clone()),
            HttpsOptions {
                workers: s.workers,
                max_connections: s.max_connections,
                max_connections_per_peer: s.max_connections_per_peer,
                metrics: metrics.connections(),
                node_certificates: Some({
                    let membership = membership.clone();
                    Arc::new(move |der: &[u8]| membership.is_node_certificate(der))
                }),
                ..HttpsOptions::default()
            },
        )?;

        let admin_addr = admin_listener.local_addr()?;
        let api_accepting = Arc::new(AtomicBool::new(true));
        let console = admin::console::Console::new(s.console_sample_every);
        let sampled = (metrics.clone(), console.traffic.clone());
        let admin_state = web::Data::new(AdminState {
            registry: registry.clone(),
            loader,
            keys: KeyService::new(store.clone(), keys.clone()),
            token: admin_token.clone(),
            api_accepting,
            metrics,
            membership: membership.clone(),
            store: store.clone(),
            key_ring: keys,
            webhooks: webhooks.clone(),
            console,
        });
        // Signals are the caller's (`stop_on_signals`): several servers may share a
        // process (tests), and actix would stop at once on SIGINT.
        let admin = HttpServer::new(move || admin::app(admin_state.clone()))
            .workers(1)
            // Within the descriptors the API's cap leaves to the rest of the process.
            .max_connections(ADMIN_MAX_CONNECTIONS)
            .disable_signals()
            .listen(admin_listener)?
            .run();
        // Once nothing can fail any more: the task lives as long as the servers.
        let traffic_samples =
            admin::console::traffic::start(sampled.0, sampled.1, s.console_sample_every);

        Ok(Application {
            api_addr,
            admin_addr,
            api,
            admin,
            registry,
            admin_token,
            tls_cert_pem,
            store_lock,
            store,
            keeper,
            membership,
            held,
            _actors: actors,
            webhooks,
            webhook_looks,
            traffic_samples,
            _loading: loading,
        })
    }

    /// The store the application serves (closed when it stops).
    pub fn store(&self) -> Arc<dyn Store> {
        self.store.clone()
    }

    /// This node's membership of the cluster (left when the application stops).
    pub fn membership(&self) -> Arc<crate::cluster::Membership> {
        self.membership.clone()
    }

    pub fn api_addr(&self) -> SocketAddr {
        self.api_addr
    }

    pub fn admin_addr(&self) -> SocketAddr {
        self.admin_addr
    }

    /// Handles to stop both servers.
    pub fn handles(&self) -> (ServerHandle, ServerHandle) {
        (self.api.handle(), self.admin.handle())
    }

    /// Stops both servers on a signal: SIGINT and SIGTERM gracefully (no new connections;
    /// requests in flight, uploads included, finish within the shutdown bound), SIGQUIT at
    /// once.
    pub fn stop_on_signals(&self) -> anyhow::Result<()> {
        use tokio::signal::unix::{signal, SignalKind};
        let (api, admin) = self.handles();
        let membership = self.membership.clone();
        let held = self.held.clone();
        for (kind, name, graceful) in [
            (SignalKind::interrupt(), "SIGINT", true),
            (SignalKind::terminate(), "SIGTERM", true),
            (SignalKind::quit(), "SIGQUIT", false),
        ] {
            let mut received = signal(kind).with_context(|| format!("handling {name}"))?;
            let (api, admin) = (api.clone(), admin.clone());
            let (membership, held) = (membership.clone(), held.clone());
            actix_web::rt::spawn(async move {
                if received.recv().await.is_none() {
                    return;
                }
                if graceful {
                    tracing::info!("{name} received; starting graceful shutdown");
                    // In a cluster, the workspaces this node writes get their next
                    // writers while it still answers (and passes requests to them).
                    membership.hand_over(&held, HAND_OVER_LIMIT).await;
                } else {
                    tracing::info!("{name} received; stopping at once");
                }
                futures_util::future::join(api.stop(graceful), admin.stop(graceful)).await;
            });
        }
        Ok(())
    }

    /// Runs until both servers have stopped (a signal, or their handles).
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let (api_handle, admin_handle) = self.handles();
        let api = self.api;
        let admin = self.admin;
        // When one server stops (e.g. SIGTERM reaches both), make sure the other follows.
        let a = async {
            let r = api.await;
            admin_handle.stop(true).await;
            r
        };
        let b = async {
            let r = admin.await;
            api_handle.stop(true).await;
            r
        };
        let (ra, rb) = futures_util::future::join(a, b).await;
        // Every request has finished, so every workspace is as it will stay: the next
        // start reads it from the checkpoints rather than the store.
        if let Some(keeper) = &self.keeper {
            keeper.flush(SHUTDOWN_CHECKPOINT_LIMIT).await;
        }
        self.traffic_samples.abort();
        // No delivery starts after this; what each acknowledged is stored.
        self.webhook_looks.abort();
        let _ = self.webhook_looks.await;
        self.webhooks.stop_everything().await;
        self.membership.leave().await;
        // Close the store cleanly, and only then let others write it.
        self.store.close().await;
        self.store_lock.release().await;
        ra.and(rb)
    }
}

/// What the node's webhooks go by: the workspaces its membership writes, and its
/// writer leases (none alone on SQLite, where it writes every workspace).
struct Writing(Arc<crate::cluster::Membership>);

impl crate::webhooks::hub::Writers for Writing {
    fn writes(&self, ws: uuid::Uuid) -> bool {
        self.0.writes(ws)
    }

    fn moved(&self) -> u64 {
        self.0.leases_moved()
    }

    fn held(&self) -> Option<Vec<(uuid::Uuid, u64)>> {
        self.0.leases()
    }
}

/// The workspaces this node holds, as the cluster sees them.
struct HeldWorkspaces {
    registry: Arc<Registry>,
    loader: Arc<Loader>,
    /// The loading thread, where a reload builds its state.
    loading: actix::ArbiterHandle,
    metrics: Arc<crate::telemetry::metrics::Metrics>,
}

#[async_trait::async_trait]
impl crate::cluster::leases::Held for HeldWorkspaces {
    fn held(&self) -> Vec<crate::cluster::Holding> {
        admin::holdings(&self.registry)
    }

    fn generation(&self) -> u64 {
        self.registry.generation()
    }

    fn position(&self, workspace: uuid::Uuid) -> Option<u64> {
        self.registry.position(workspace)
    }

    fn known(&self) -> Vec<uuid::Uuid> {
        self.registry.ids()
    }

    async fn load(&self, workspace: uuid::Uuid) -> anyhow::Result<()> {
        let (done, outcome) = tokio::sync::oneshot::channel();
        let loader = self.loader.clone();
        self.loading.spawn(async move {
            let _ = done.send(loader.load_absent(workspace).await);
        });
        outcome
            .await
            .context("the loading thread stopped")?
            .context("loading the workspace")
    }

    fn unload(&self, workspaces: &[uuid::Uuid]) -> Vec<uuid::Uuid> {
        let gone: Vec<uuid::Uuid> = workspaces
            .iter()
            .copied()
            .filter(|w| self.registry.remove(*w))
            .collect();
        if !gone.is_empty() {
            // Once for them all, off the runtime the rounds and renewals run on (a trim
            // walks the whole heap).
            tokio::task::spawn_blocking(actors::memory::return_free_memory);
        }
        gone
    }

    async fn drain(&self, workspace: uuid::Uuid) {
        if let Some(handle) = self.registry.handle(workspace) {
            let _ = handle.addr.send(actors::actor::Drain).await;
        }
    }

    async fn follow(&self, workspace: uuid::Uuid) -> anyhow::Result<()> {
        let Some(handle) = self.registry.handle(workspace) else {
            return Ok(());
        };
        let followed = handle
            .addr
            .send(actors::actor::Follow)
            .await
            .context("the workspace's actor stopped")??;
        if let actors::actor::Followed::At {
            committed_at_ms, ..
        } = followed
        {
            let now = actors::store::now_ms();
            for at in committed_at_ms {
                let lag = u64::try_from(now - at).unwrap_or(0);
                self.metrics.followed(std::time::Duration::from_millis(lag));
            }
        }
        Ok(())
    }
}

/// A node on PostgreSQL with no other alive sweeps the blobs of the workspaces it writes
/// (once it holds their leases) of objects no record names. With another node alive it
/// leaves them for a later start: that node's import writes its objects before it
/// commits their records, and a sweep from a state that lacks them would remove them.
fn sweep_if_alone(membership: &crate::cluster::Membership, registry: &Registry) {
    if !membership.shared() {
        return;
    }
    if membership.others_alive() {
        tracing::info!("blob sweep left for a later start: other servers use the store");
        return;
    }
    for (id, slot) in registry.slots() {
        if let (true, actors::registry::Slot::Ready(handle)) = (membership.writes(id), slot) {
            handle.addr.do_send(actors::actor::SweepBlobs);
        }
    }
}

/// Prunes the change log and tombstones older than `retention` of every workspace this
/// node writes (the store refuses a prune of any other), now and then `every`
/// ([`actors::changes::PRUNE_EVERY`]), for as long as the process runs: in the store
/// first, then in the workspace's state. A failed prune is logged, counted and
/// tried again next time; it never holds a commit (stores delete in small
/// transactions). A prune the store fences because the lease moved on meanwhile (a
/// hand-over, a stop) is no failure: the workspace's new writer prunes it.
async fn prune_changes_forever(
    store: Arc<dyn Store>,
    registry: Arc<actors::registry::Registry>,
    membership: Arc<crate::cluster::Membership>,
    metrics: Arc<crate::telemetry::metrics::Metrics>,
    retention: std::time::Duration,
    every: std::time::Duration,
) {
    // The first pass once the node writes what it should (its loads done, its leases
    // taken).
    while !membership.is_settled() {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let mut every = tokio::time::interval(every);
    loop {
        every.tick().await;
        let cutoff = actors::store::now_ms() - retention.as_millis() as i64;
        for (workspace, slot) in registry.slots() {
            if !membership.writes(workspace) {
                continue;
            }
            let started = std::time::Instant::now();
            match store.prune_changes(workspace, cutoff).await {
                Ok(pruned) => {
                    let mut forgotten = 0;
                    if let actors::registry::Slot::Ready(h) = slot {
                        let cutoff = actors::time::Stamp::from_millis(cutoff);
                        forgotten = h
                            .addr
                            .send(actors::actor::ForgetTombstones(cutoff))
                            .await
                            .unwrap_or(0);
                    }
                    metrics.pruned(workspace, &pruned, started.elapsed());
                    tracing::debug!(
                        %workspace,
                        pruned_through = pruned.through,
                        parts_removed = pruned.parts_removed,
                        tombstones_removed = pruned.tombstones_removed,
                        tombstones_forgotten = forgotten,
                        parts_left = pruned.parts_left,
                        "change log pruned"
                    );
                }
                // The writer lease went to another node (a hand-over, a stop) while the
                // prune ran: the new writer prunes from now on, and nothing failed.
                Err(actors::store::StoreError::Fenced(_)) => {
                    tracing::debug!(%workspace, "prune left to the workspace's new writer");
                }
                Err(e) => {
                    metrics.prune_failed(started.elapsed());
                    tracing::warn!(%workspace, error = %e, "pruning the change log failed");
                }
            }
        }
    }
}
