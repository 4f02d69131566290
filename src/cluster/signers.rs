//! The nodes' public keys: each node publishes the public half of the key that seals
//! its cursors, feed tokens and download URLs when it joins, and learns the others':
//! when it joins, when the live nodes change, and at once when it is shown a token of a
//! key it has not learned yet (at most every [`SIGNERS_READ_EVERY`]).

use super::Membership;
use std::time::Duration;

/// How often a node reads the published public keys on demand, at most.
const SIGNERS_READ_EVERY: Duration = Duration::from_millis(250);

impl Membership {
    /// Publishes this node's public key, then learns every published one.
    pub(super) async fn publish_signer(&self) -> anyhow::Result<()> {
        if !self.store.shared() {
            return Ok(());
        }
        self.store
            .publish_key(
                &self.row,
                &super::forward::hex(&self.signer.key_id()),
                self.signer.public_key(),
            )
            .await?;
        self.learn_signers().await
    }

    /// Learns every published public key (one per data dir that ever joined: a few).
    pub(super) async fn learn_signers(&self) -> anyhow::Result<()> {
        let keys = self.store.public_keys().await?;
        let new = self.signer.learn(keys.iter().map(Vec::as_slice));
        if new > 0 {
            tracing::info!(new, "learned other nodes' public keys");
        }
        Ok(())
    }

    /// Learns the public key `id` names when this node does not know it yet (a node
    /// joined since the last read): reads the published keys at once, at most every
    /// [`SIGNERS_READ_EVERY`] however many unknown ids are presented.
    pub async fn learn_signer(&self, id: &actors::signing::KeyId) {
        if !self.store.shared() || self.signer.knows(id) {
            return;
        }
        let mut last = self.signers_read.lock().await;
        if self.signer.knows(id) || last.is_some_and(|t| t.elapsed() < SIGNERS_READ_EVERY) {
            return;
        }
        if let Err(e) = self.learn_signers().await {
            tracing::warn!(error = %format!("{e:#}"), "reading the nodes' public keys");
        }
        *last = Some(std::time::Instant::now());
    }
}
