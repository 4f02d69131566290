//! # recruitd — the server
//!
//! Adapts the domain crate `actors` to the outside world. The wings, in the order a
//! request meets them:
//!
//! - [`server`]: start-up (`Application::build`: listeners, store, secrets, the actors'
//!   environment, loading), TLS and the HTTPS-only listener, secrets.
//! - [`telemetry`]: what the server tells its operator: the metrics (`/metrics`) and
//!   the logs.
//! - [`http`]: the public API: routes, extractors, auth and scopes, the rate limiter,
//!   signed download URLs, the error envelope.
//! - [`admin`]: the loopback admin interface (readiness, imports, keys, metrics, the
//!   operator console) and the client the CLI reaches a running server with.
//! - [`cli`]: the command line (`serve`, `import`, `key`, `generate`), the offline
//!   commands and the demo.
//! - [`cluster`]: several nodes on one PostgreSQL store: membership by leases in the
//!   store, what each node holds, placement by rendezvous hashing, the cluster view.
//! - [`store`]: the sqlx adapters of the Store port (SQLite, PostgreSQL), the store lock,
//!   and the blob store on disk.
//! - [`generate`]: the synthetic-data generator behind `recruitd generate` and the demo.
//! - [`clock`]: the wall clock, or a manual one in tests (signed URLs' expiry).
//! - [`webhooks`]: the rules webhook deliveries follow (signatures, secrets, retries,
//!   the addresses a receiver may have).
//! - [`priority`]: threads below the API's scheduling priority (webhook catch-ups, full
//!   list pages).

/// The build's version, as nodes report it to each other and the console shows it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

pub mod admin;
pub mod cli;
pub mod clock;
pub mod cluster;
pub mod generate;
pub mod http;
pub mod priority;
pub mod server;
pub mod store;
pub mod telemetry;
pub mod webhooks;
