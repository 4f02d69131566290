//! An endpoint's signing secret.
//!
//! Shown to the integrator once, at creation or rotation, as `whsec_` followed by the
//! base64 of 32 random bytes (the Standard Webhooks form); what signs is the decoded
//! bytes. `Debug` shows neither, so a secret cannot reach a log by a stray `{:?}`.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use rand::RngCore;

/// The prefix of a secret as the integrator sees it.
pub const PREFIX: &str = "whsec_";

/// Bytes of a secret the server makes.
pub const LEN: usize = 32;

/// A signing secret's bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Vec<u8>);

impl Secret {
    /// A new secret from the operating system's random source.
    pub fn generate() -> Self {
        let mut bytes = vec![0u8; LEN];
        rand::rngs::OsRng.fill_bytes(&mut bytes);
        Secret(bytes)
    }

    /// A secret as the integrator writes it (`whsec_…`). The bytes may be of any length
    /// from 24 to 64, as the Standard Webhooks libraries accept; `None` otherwise.
    pub fn parse(text: &str) -> Option<Self> {
        let bytes = STANDARD.decode(text.strip_prefix(PREFIX)?).ok()?;
        (24..=64).contains(&bytes.len()).then_some(Secret(bytes))
    }

    /// Of bytes kept elsewhere (the store's copy).
    pub fn from_bytes(bytes: Vec<u8>) -> Self {
        Secret(bytes)
    }

    /// The secret as shown once to the integrator.
    pub fn reveal(&self) -> String {
        format!("{PREFIX}{}", STANDARD.encode(&self.0))
    }

    /// The bytes that sign.
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(…)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_secret_reads_back_from_what_the_integrator_is_shown() {
        let secret = Secret::generate();
        let shown = secret.reveal();
        assert!(shown.starts_with("whsec_"));
        // 32 bytes are 44 characters of base64.
        assert_eq!(shown.len(), PREFIX.len() + 44);
        assert_eq!(Secret::parse(&shown), Some(secret.clone()));
        assert_ne!(Secret::generate(), secret);
    }

    #[test]
    fn what_is_not_a_secret_is_refused() {
        for text in [
            "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "whsec_",
            "whsec_not base64!",
            // 12 bytes: too short to sign with.
            "whsec_AAAAAAAAAAAAAAAA",
        ] {
            assert_eq!(Secret::parse(text), None, "{text}");
        }
    }

    #[test]
    fn debug_shows_no_part_of_the_secret() {
        let secret = Secret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let shown = format!("{secret:?}");
        assert!(!shown.contains("MfKQ"), "{shown}");
        assert_eq!(shown, "Secret(…)");
    }
}
