//! Webhooks: a workspace's change feed, as `GET /v1/changes` gives it, pushed to
//! integrators' endpoints, signed, in commit order, never lost.
//!
//! The parts of a delivery, each in a file of its own (free of I/O but for
//! [`address::resolve`], a name lookup, [`batch`], a read of the change log, [`send`]
//! and [`engine`], which puts them together):
//! - [`batch`]: what one delivery carries: the feed's next answer (at most 500 changes
//!   and 1 MiB) in the contract's envelope.
//! - [`secret`]: an endpoint's signing secret (`whsec_` and 32 random bytes), never
//!   printed by `Debug`.
//! - [`deliverer`]: one endpoint's deliveries as a state machine: one in flight, in
//!   order, the point moved only by a 2xx, retries, disabling and resuming.
//! - [`engine`]: one endpoint's deliveries run: the deliverer's steps carried out
//!   against the published state, the change log, the receiver and a ledger, off the
//!   actors and off the request path.
//! - [`stored`]: an endpoint's row in the store, its secrets sealed, and its attempts.
//! - [`hub`]: a node's webhooks: a task for each endpoint of the workspaces it writes,
//!   started and stopped as the node comes to write them or ceases to, and the API's
//!   operations on the endpoints.
//! - [`sealing`]: secrets at rest, sealed under a data key the store never holds.
//! - [`signature`]: the Standard Webhooks signature of a delivery
//!   (`webhook-signature: v1,<base64 HMAC-SHA256>`), one per valid secret.
//! - [`runtime`]: the pool a catch-up's renders run on, below the API's priority.
//! - [`retry`]: when a failed delivery is tried again (5 s, then doubling with jitter,
//!   at most an hour apart) and when its endpoint is given up on (72 hours).
//! - [`address`]: which URLs an endpoint may have, and which addresses a delivery may
//!   connect to (public ones, unless the server admits insecure endpoints for tests).
//! - [`send`]: one attempt: the name resolved and checked, a connection to a checked
//!   address, a signed POST, no redirect followed, at most 64 KiB of the answer read.

pub mod address;
pub mod batch;
pub mod deliverer;
pub mod engine;
pub mod hub;
pub mod retry;
pub mod runtime;
pub mod sealing;
pub mod secret;
pub mod send;
pub mod signature;
pub mod stored;
