//! Endpoint secrets at rest: sealed under a data key the store never holds, and the
//! [`Keyring`] of the keys a node knows.
//!
//! The store keeps each endpoint's secret sealed (ChaCha20-Poly1305, a random nonce
//! each time, the endpoint's id as associated data, so a sealed secret copied onto
//! another endpoint's row does not open there). A dump of the store alone reveals no
//! secret. The key's fingerprint may be stored beside the sealed secrets, to tell which
//! key they need; the fingerprint reveals nothing of the key.

use super::secret::Secret;
use parking_lot::RwLock;
use rand::RngCore;
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, CHACHA20_POLY1305, NONCE_LEN};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

/// Bytes of a data key.
pub const KEY_LEN: usize = 32;

/// The key endpoint secrets are sealed under.
pub struct DataKey {
    key: LessSafeKey,
    fingerprint: String,
    /// Kept to hand the key to another node of the cluster ([`Keyring`]).
    bytes: [u8; KEY_LEN],
}

impl DataKey {
    /// A new key from the operating system's random source, and its bytes (to keep).
    pub fn generate() -> (Self, [u8; KEY_LEN]) {
        let mut bytes = [0u8; KEY_LEN];
        rand::rngs::OsRng.fill_bytes(&mut bytes);
        (Self::from_bytes(&bytes).expect("the right length"), bytes)
    }

    /// A key kept as its bytes; `None` when they are not [`KEY_LEN`] long.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        let key = UnboundKey::new(&CHACHA20_POLY1305, bytes).ok()?;
        let digest = Sha256::new()
            .chain_update(b"recruitd-webhook-data-key")
            .chain_update(bytes)
            .finalize();
        let fingerprint = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        Some(DataKey {
            key: LessSafeKey::new(key),
            fingerprint,
            bytes: bytes.try_into().ok()?,
        })
    }

    /// Names the key without revealing it.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// `secret` sealed for the endpoint `endpoint_id`: nonce, then ciphertext and tag.
    pub fn seal(&self, secret: &Secret, endpoint_id: &str) -> Vec<u8> {
        let mut nonce = [0u8; NONCE_LEN];
        rand::rngs::OsRng.fill_bytes(&mut nonce);
        let mut sealed = secret.bytes().to_vec();
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(endpoint_id.as_bytes()),
                &mut sealed,
            )
            .expect("a secret is far below the cipher's limit");
        let mut out = Vec::with_capacity(NONCE_LEN + sealed.len());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        out
    }

    /// The secret `sealed` holds for `endpoint_id`; `None` when it was sealed under
    /// another key, for another endpoint, or altered.
    pub fn open(&self, sealed: &[u8], endpoint_id: &str) -> Option<Secret> {
        if sealed.len() < NONCE_LEN {
            return None;
        }
        let (nonce, rest) = sealed.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut buf = rest.to_vec();
        let plain = self
            .key
            .open_in_place(nonce, Aad::from(endpoint_id.as_bytes()), &mut buf)
            .ok()?;
        Some(Secret::from_bytes(plain.to_vec()))
    }
}

/// Asks the cluster's other nodes for the key with a fingerprint.
pub type AskPeers =
    Arc<dyn Fn(String) -> futures_util::future::BoxFuture<'static, Option<Vec<u8>>> + Send + Sync>;

/// The data keys a node knows: its own, which seals what it writes, and those of the
/// rows other nodes wrote, learned from a node that holds them (over the authenticated
/// node-to-node channel) and kept beside its own in the data dir, so that any writer of
/// a workspace can open its endpoints' secrets.
pub struct Keyring {
    own: RwLock<Arc<DataKey>>,
    known: RwLock<HashMap<String, Arc<DataKey>>>,
    ask: Option<AskPeers>,
    /// Where keys learned are written (one hex key a line, the node's own first).
    file: Option<PathBuf>,
}

impl Keyring {
    /// `keys` as kept (the node's own first); `ask` reaches the other nodes, `file`
    /// keeps what is learned.
    pub fn new(keys: Vec<DataKey>, ask: Option<AskPeers>, file: Option<PathBuf>) -> Option<Self> {
        let mut keys = keys.into_iter().map(Arc::new);
        let own = keys.next()?;
        let mut known: HashMap<_, _> = keys.map(|k| (k.fingerprint.clone(), k)).collect();
        known.insert(own.fingerprint.clone(), own.clone());
        Some(Keyring {
            own: RwLock::new(own),
            known: RwLock::new(known),
            ask,
            file,
        })
    }

    /// The key this node seals with.
    pub fn own(&self) -> Arc<DataKey> {
        self.own.read().clone()
    }

    /// Seals with the cluster's key from now on: the key another node seals with
    /// (`bytes`), learned when this node joins, so that every node holds the key the
    /// others seal with and any of them can deliver when one dies. Kept first in the
    /// file; the node's earlier keys stay, for what they sealed.
    pub fn adopt(&self, bytes: &[u8]) -> Option<()> {
        let key = Arc::new(DataKey::from_bytes(bytes)?);
        if key.fingerprint == self.own().fingerprint {
            return Some(());
        }
        self.known
            .write()
            .insert(key.fingerprint.clone(), key.clone());
        *self.own.write() = key.clone();
        if let Some(file) = &self.file {
            let mut lines = vec![key.bytes];
            lines.extend(
                self.known
                    .read()
                    .values()
                    .filter(|k| k.fingerprint != key.fingerprint)
                    .map(|k| k.bytes),
            );
            if let Err(e) = write_keys(file, &lines) {
                tracing::warn!(error = %e, "keeping the cluster's webhook key");
            }
        }
        tracing::info!(fingerprint = %key.fingerprint, "seals webhook secrets with the cluster's key");
        Some(())
    }

    /// A key this node holds, without asking another.
    pub fn held(&self, fingerprint: &str) -> Option<Arc<DataKey>> {
        self.known.read().get(fingerprint).cloned()
    }

    /// The bytes of a key this node holds, for another node that asks (the empty
    /// fingerprint names the key it seals with).
    pub fn hand_over(&self, fingerprint: &str) -> Option<[u8; KEY_LEN]> {
        if fingerprint.is_empty() {
            return Some(self.own().bytes);
        }
        self.held(fingerprint).map(|k| k.bytes)
    }

    /// The key with `fingerprint`: held, or learned from another node now (and kept).
    pub async fn get(&self, fingerprint: &str) -> Option<Arc<DataKey>> {
        if let Some(k) = self.held(fingerprint) {
            return Some(k);
        }
        let ask = self.ask.as_ref()?;
        let bytes = ask(fingerprint.to_string()).await?;
        let key = Arc::new(DataKey::from_bytes(&bytes)?);
        if key.fingerprint != fingerprint {
            tracing::warn!(fingerprint, "a node answered with another webhook key");
            return None;
        }
        if let Some(file) = &self.file {
            if let Err(e) = append_key(file, &key.bytes) {
                tracing::warn!(error = %e, "keeping a webhook key learned from another node");
            }
        }
        self.known
            .write()
            .insert(key.fingerprint.clone(), key.clone());
        tracing::info!(fingerprint, "learned a webhook key from another node");
        Some(key)
    }
}

/// Rewrites the keys' file whole (through a file beside it, renamed over it).
fn write_keys(file: &std::path::Path, keys: &[[u8; KEY_LEN]]) -> std::io::Result<()> {
    use std::io::Write;
    let text: String = keys
        .iter()
        .map(|k| k.iter().map(|b| format!("{b:02x}")).collect::<String>() + "\n")
        .collect();
    let next = file.with_extension("next");
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts.open(&next)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()?;
    std::fs::rename(&next, file)
}

fn append_key(file: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().append(true).open(file)?;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    writeln!(f, "{hex}")?;
    f.sync_all()
}

impl std::fmt::Debug for DataKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DataKey({})", self.fingerprint)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_secret_opens_under_its_key_for_its_endpoint_only() {
        let (key, bytes) = DataKey::generate();
        let secret = Secret::generate();
        let sealed = key.seal(&secret, "wh_1");
        // Nothing of the secret shows in what the store keeps.
        assert!(!sealed
            .windows(8)
            .any(|w| secret.bytes().windows(8).any(|s| s == w)));
        assert_eq!(key.open(&sealed, "wh_1"), Some(secret.clone()));
        // The same key, kept and read back.
        let again = DataKey::from_bytes(&bytes).unwrap();
        assert_eq!(again.fingerprint(), key.fingerprint());
        assert_eq!(again.open(&sealed, "wh_1"), Some(secret.clone()));
        // Another endpoint's row, another key, or an altered byte: it does not open.
        assert_eq!(key.open(&sealed, "wh_2"), None);
        let (other, _) = DataKey::generate();
        assert_ne!(other.fingerprint(), key.fingerprint());
        assert_eq!(other.open(&sealed, "wh_1"), None);
        for i in [0, NONCE_LEN, sealed.len() - 1] {
            let mut altered = sealed.clone();
            altered[i] ^= 1;
            assert_eq!(key.open(&altered, "wh_1"), None, "byte {i}");
        }
        assert_eq!(key.open(&sealed[..NONCE_LEN - 1], "wh_1"), None);
    }

    #[test]
    fn sealing_twice_gives_two_different_sealed_forms() {
        let (key, _) = DataKey::generate();
        let secret = Secret::generate();
        assert_ne!(key.seal(&secret, "wh_1"), key.seal(&secret, "wh_1"));
    }

    #[test]
    fn a_key_of_the_wrong_length_is_refused_and_debug_shows_only_the_fingerprint() {
        assert!(DataKey::from_bytes(&[7u8; 16]).is_none());
        let (key, bytes) = DataKey::generate();
        let shown = format!("{key:?}");
        assert_eq!(shown, format!("DataKey({})", key.fingerprint()));
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        assert!(!shown.contains(&hex[..16]));
        assert_eq!(key.fingerprint().len(), 16);
    }
}
