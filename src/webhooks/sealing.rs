//! Endpoint secrets at rest: sealed under a data key the store never holds.
//!
//! The store keeps each endpoint's secret sealed (ChaCha20-Poly1305, a random nonce
//! each time, the endpoint's id as associated data, so a sealed secret copied onto
//! another endpoint's row does not open there). A dump of the store alone reveals no
//! secret. The key's fingerprint may be stored beside the sealed secrets, to tell which
//! key they need; the fingerprint reveals nothing of the key.

use super::secret::Secret;
use rand::RngCore;
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, CHACHA20_POLY1305, NONCE_LEN};
use sha2::{Digest, Sha256};

/// Bytes of a data key.
pub const KEY_LEN: usize = 32;

/// The key endpoint secrets are sealed under.
pub struct DataKey {
    key: LessSafeKey,
    fingerprint: String,
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
