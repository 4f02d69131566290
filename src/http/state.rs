//! [`AppState`]: what every API handler shares, built once at start-up
//! (`crate::server::Application::build`).

use crate::clock::Clock;
use crate::http::signed_urls::UrlSigner;
use actors::query::CursorKey;
use actors::registry::Registry;
use std::sync::Arc;

/// Shared by every API handler.
pub struct AppState {
    pub registry: Arc<Registry>,
    /// Every API key, by secret hash: read on every request.
    pub keys: Arc<actors::keys::KeyRing>,
    /// Attachment bytes (downloads and the signed file route).
    pub blobs: Arc<dyn actors::store::BlobStore>,
    /// The store, read directly only for the change log (`changes`).
    pub store: Arc<dyn actors::store::Store>,
    /// What the change feed keeps between requests.
    pub feed: crate::http::changes::ahead::FeedCaches,
    /// Seals list cursors and change feed tokens (the node's signer, which the
    /// download URLs share).
    pub cursor_key: CursorKey,
    pub downloads: Downloads,
    /// Per-key request budgets.
    pub limiter: Arc<crate::http::ratelimit::RateLimiter>,
    /// Requests without a valid key, per peer address.
    pub peer_failures: crate::http::ratelimit::PeerFailures,
    pub metrics: Arc<crate::telemetry::metrics::Metrics>,
    /// This node in the cluster: where each workspace's requests are answered.
    pub cluster: Arc<crate::cluster::Membership>,
    /// The webhook endpoints of the workspaces this node writes.
    pub webhooks: Arc<crate::webhooks::hub::Hub>,
    /// Which receivers an endpoint may have (`serve --webhooks-allow-insecure`).
    pub webhook_policy: crate::webhooks::address::Policy,
}

impl AppState {
    /// Checks a presented token (cursor, feed token, download signature) with `check`.
    /// Only when that fails, and the token's seal names a key this node has not learned
    /// yet (a node that joined since the last read of the published keys), are the
    /// keys read and the token checked once more: a token that passes costs nothing
    /// more than its check.
    pub async fn check_token<T, E>(
        &self,
        token: &str,
        check: impl Fn() -> Result<T, E>,
    ) -> Result<T, E> {
        let first = check();
        if first.is_ok() {
            return first;
        }
        match actors::signing::token_key_id(token) {
            Some(id) if !self.cursor_key.signer().knows(&id) => {
                self.cluster.learn_signer(&id).await;
                check()
            }
            _ => first,
        }
    }
}

/// What signing download URLs and serving them takes.
#[derive(Debug)]
pub struct Downloads {
    /// Holds the node's signer and the public URL.
    pub signer: UrlSigner,
    /// "Now" for both signing and checking, so tests can step across an expiry.
    pub clock: Clock,
}
