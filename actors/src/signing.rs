//! Seals on what the server hands out and takes back: list cursors, change feed tokens
//! and download URLs.
//!
//! Each node signs with an Ed25519 key of its own, whose seed is derived from its
//! signing secret (`<data-dir>/signing-key`), and publishes the public half (in a
//! cluster, in the store), so that any node can check what any node sealed, also after
//! the node that sealed it is gone, with no secret shared or stored. A seal is
//!
//! ```text
//! key id (8 bytes: SHA-256 of the public key) | tag (16: HMAC-SHA256) | signature (64: Ed25519)
//! ```
//!
//! The tag (over the message and the signature) is keyed by the node's own secret and
//! lets the node that sealed a token check it in a fraction of a microsecond (the common case: a listing's next page goes to the
//! same writer); another node checks the signature against the public key the id names.
//! On a store no other node can share (the embedded SQLite store: its lock refuses a
//! second server), a node is alone for good and seals with the tag only
//! ([`Signer::alone`]; the signature bytes are zero), sparing the signature's cost
//! (about 27 µs a seal, once per list page).
//!
//! Signer and checker never accept one kind of token for another: each kind seals
//! under its own domain, and the message is the domain's length, the domain, then the
//! payload.

use hmac::{Hmac, Mac};
use parking_lot::RwLock;
use ring::signature::{Ed25519KeyPair, KeyPair, UnparsedPublicKey, ED25519};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use subtle::ConstantTimeEq;

/// Bytes of a key id.
pub const KEY_ID_LEN: usize = 8;
const TAG_LEN: usize = 16;
const SIGNATURE_LEN: usize = 64;
/// Bytes of a seal.
pub const SEAL_LEN: usize = KEY_ID_LEN + TAG_LEN + SIGNATURE_LEN;

/// A key id: the first bytes of the SHA-256 of the public key.
pub type KeyId = [u8; KEY_ID_LEN];

/// This node's sealing key, and the public keys of the nodes it knows.
pub struct Signer {
    id: KeyId,
    pair: Ed25519KeyPair,
    tag_key: [u8; 32],
    /// Whether seals carry a signature (a node that may have peers).
    signs: bool,
    /// Other nodes' public keys by id (this node's own is checked by its tag).
    known: RwLock<HashMap<KeyId, UnparsedPublicKey<Vec<u8>>>>,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Signer {
    /// The signer of a node of a store that several nodes may share, whose signing
    /// secret is `secret`.
    pub fn from_secret(secret: &[u8; 32]) -> Signer {
        Signer {
            signs: true,
            ..Signer::alone(secret)
        }
    }

    /// The signer of a node alone on its store for good: its seals carry no signature
    /// (only it ever checks them).
    pub fn alone(secret: &[u8; 32]) -> Signer {
        let seed = derive(secret, b"ed25519 seed");
        let pair = Ed25519KeyPair::from_seed_unchecked(&seed).expect("any 32 bytes are a seed");
        Signer {
            id: key_id(pair.public_key().as_ref()),
            pair,
            tag_key: derive(secret, b"seal tag"),
            signs: false,
            known: RwLock::new(HashMap::new()),
        }
    }

    /// This node's key id.
    pub fn key_id(&self) -> KeyId {
        self.id
    }

    /// This node's public key (32 bytes), for others to check its seals with.
    pub fn public_key(&self) -> &[u8] {
        self.pair.public_key().as_ref()
    }

    /// Adds public keys of other nodes (their ids are computed, not taken on trust);
    /// malformed ones are skipped. How many were new.
    pub fn learn<'a>(&self, public_keys: impl IntoIterator<Item = &'a [u8]>) -> usize {
        let mut known = self.known.write();
        let mut new = 0;
        for public in public_keys {
            let id = key_id(public);
            if public.len() != 32 || id == self.id || known.contains_key(&id) {
                continue;
            }
            known.insert(id, UnparsedPublicKey::new(&ED25519, public.to_vec()));
            new += 1;
        }
        new
    }

    /// Whether a seal names a key this node can check it with.
    pub fn knows(&self, id: &KeyId) -> bool {
        *id == self.id || self.known.read().contains_key(id)
    }

    /// The seal of `payload`, a token of kind `domain`.
    pub fn seal(&self, domain: &[u8], payload: &[u8]) -> [u8; SEAL_LEN] {
        let mut out = [0u8; SEAL_LEN];
        let message = message(domain, payload);
        if self.signs {
            out[KEY_ID_LEN + TAG_LEN..].copy_from_slice(self.pair.sign(&message).as_ref());
        }
        out[..KEY_ID_LEN].copy_from_slice(&self.id);
        let tag = self.tag(&message, &out[KEY_ID_LEN + TAG_LEN..]);
        out[KEY_ID_LEN..KEY_ID_LEN + TAG_LEN].copy_from_slice(&tag);
        out
    }

    /// Whether `seal` on `payload`, a token of kind `domain`, is genuine: sealed by
    /// this node, or by a node whose key it learned.
    pub fn check(&self, domain: &[u8], payload: &[u8], seal: &[u8]) -> bool {
        let Some(id) = seal_key_id(seal) else {
            return false;
        };
        let message = message(domain, payload);
        let (tag, signature) = seal[KEY_ID_LEN..].split_at(TAG_LEN);
        if id == self.id {
            bool::from(self.tag(&message, signature).ct_eq(tag))
        } else {
            let known = self.known.read();
            known
                .get(&id)
                .is_some_and(|public| public.verify(&message, signature).is_ok())
        }
    }

    /// The tag covers the signature too, so that a seal altered anywhere is refused by
    /// its own node as by the others.
    fn tag(&self, message: &[u8], signature: &[u8]) -> [u8; TAG_LEN] {
        let mut m = <Hmac<Sha256> as Mac>::new_from_slice(&self.tag_key).expect("any key length");
        m.update(message);
        m.update(signature);
        let full = m.finalize().into_bytes();
        let mut out = [0u8; TAG_LEN];
        out.copy_from_slice(&full[..TAG_LEN]);
        out
    }
}

/// The key id a seal names (`None`: not a seal).
pub fn seal_key_id(seal: &[u8]) -> Option<KeyId> {
    if seal.len() != SEAL_LEN {
        return None;
    }
    seal[..KEY_ID_LEN].try_into().ok()
}

/// The key id a token names: its base64url text ends with a seal (cursors, feed
/// tokens, a download URL's signature). `None`: not such a token.
pub fn token_key_id(token: &str) -> Option<KeyId> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token.as_bytes())
        .ok()?;
    let tail = bytes.len().checked_sub(SEAL_LEN)?;
    seal_key_id(&bytes[tail..])
}

/// The id of a public key.
pub fn key_id(public: &[u8]) -> KeyId {
    let digest = Sha256::digest(public);
    let mut id = [0u8; KEY_ID_LEN];
    id.copy_from_slice(&digest[..KEY_ID_LEN]);
    id
}

fn message(domain: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(1 + domain.len() + payload.len());
    m.push(u8::try_from(domain.len()).expect("a domain is a short name"));
    m.extend_from_slice(domain);
    m.extend_from_slice(payload);
    m
}

/// A key derived from `secret` for one purpose, so that purposes never share a key.
fn derive(secret: &[u8; 32], purpose: &[u8]) -> [u8; 32] {
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(secret).expect("any key length");
    m.update(b"recruitd signing: ");
    m.update(purpose);
    m.finalize().into_bytes().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seal_is_checked_by_its_node_and_by_any_node_that_learned_its_key() {
        let a = Signer::from_secret(&[1; 32]);
        let b = Signer::from_secret(&[2; 32]);
        let seal = a.seal(b"cursor", b"page 2");
        assert!(a.check(b"cursor", b"page 2", &seal));
        // b does not know a's key yet, then does.
        assert!(!b.knows(&a.key_id()));
        assert!(!b.check(b"cursor", b"page 2", &seal));
        assert_eq!(b.learn([a.public_key()]), 1);
        assert_eq!(b.learn([a.public_key(), b.public_key()]), 0);
        assert!(b.knows(&a.key_id()));
        assert!(b.check(b"cursor", b"page 2", &seal));
        // Another payload, another kind of token, a flipped bit of the tag (a's own
        // check) or of the signature (b's): refused.
        assert!(!b.check(b"cursor", b"page 3", &seal));
        assert!(!a.check(b"feed", b"page 2", &seal));
        assert!(!b.check(b"feed", b"page 2", &seal));
        let mut tag_flipped = seal;
        tag_flipped[KEY_ID_LEN] ^= 1;
        assert!(!a.check(b"cursor", b"page 2", &tag_flipped));
        let mut sig_flipped = seal;
        sig_flipped[SEAL_LEN - 1] ^= 1;
        assert!(!b.check(b"cursor", b"page 2", &sig_flipped));
        // The tag covers the signature: the sealing node refuses it too.
        assert!(!a.check(b"cursor", b"page 2", &sig_flipped));
        assert!(!a.check(b"cursor", b"page 2", &seal[1..]));
        // The same secret gives the same key (a restart keeps its seals valid).
        let again = Signer::from_secret(&[1; 32]);
        assert_eq!(again.key_id(), a.key_id());
        assert!(again.check(b"cursor", b"page 2", &seal));
        assert!(!format!("{a:?}").contains(&format!("{:?}", a.tag_key)));
    }

    #[test]
    fn a_node_alone_seals_without_a_signature_and_checks_its_own_seals() {
        let alone = Signer::alone(&[1; 32]);
        let seal = alone.seal(b"cursor", b"page 2");
        assert_eq!(seal[KEY_ID_LEN + TAG_LEN..], [0; SIGNATURE_LEN]);
        assert!(alone.check(b"cursor", b"page 2", &seal));
        assert!(!alone.check(b"cursor", b"page 3", &seal));
        let mut flipped = seal;
        flipped[SEAL_LEN - 1] ^= 1;
        assert!(!alone.check(b"cursor", b"page 2", &flipped));
        // Its key is the same as with signatures: nothing it sealed is refused if the
        // node is later started on a store it shares.
        let shared = Signer::from_secret(&[1; 32]);
        assert!(shared.check(b"cursor", b"page 2", &seal));
    }
}
