//! The signature a delivery carries (Standard Webhooks, version 1).
//!
//! `webhook-signature` is `v1,` and the base64 of HMAC-SHA256, keyed by the secret's
//! bytes, over `{webhook-id}.{webhook-timestamp}.{body}`; during a rotation the old and
//! new secrets each sign, space-separated, so a receiver holding either accepts.

use super::secret::Secret;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// A receiver refuses a timestamp further than this from its clock (the contract's
/// five minutes), so a captured delivery cannot be replayed later.
pub const TOLERANCE_SECONDS: i64 = 5 * 60;

fn mac(secret: &Secret, id: &str, timestamp: i64, body: &[u8]) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.bytes()).expect("HMAC takes any key");
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac
}

/// One secret's signature: `v1,<base64>`.
pub fn sign(secret: &Secret, id: &str, timestamp: i64, body: &[u8]) -> String {
    let tag = mac(secret, id, timestamp, body).finalize().into_bytes();
    format!("v1,{}", STANDARD.encode(tag))
}

/// The `webhook-signature` header: one signature per secret, space-separated.
pub fn header<'s>(
    secrets: impl IntoIterator<Item = &'s Secret>,
    id: &str,
    timestamp: i64,
    body: &[u8],
) -> String {
    secrets
        .into_iter()
        .map(|s| sign(s, id, timestamp, body))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether a delivery is what `secret` signed, as a receiver checks it: one of the
/// header's `v1` signatures matches (compared in constant time), and the timestamp is
/// within [`TOLERANCE_SECONDS`] of `now`.
pub fn verify(
    secret: &Secret,
    header: &str,
    id: &str,
    timestamp: i64,
    body: &[u8],
    now: i64,
) -> bool {
    if (now - timestamp).abs() > TOLERANCE_SECONDS {
        return false;
    }
    header.split(' ').any(|one| {
        let Some(tag) = one
            .strip_prefix("v1,")
            .and_then(|b| STANDARD.decode(b).ok())
        else {
            return false;
        };
        mac(secret, id, timestamp, body).verify_slice(&tag).is_ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Standard Webhooks specification's example: its secret, message id,
    /// timestamp and body, and the signature it gives for them.
    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const TIMESTAMP: i64 = 1614265330;
    const BODY: &[u8] = br#"{"test": 2432232314}"#;
    const EXPECTED: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

    #[test]
    fn the_signature_is_the_reference_algorithms() {
        let secret = Secret::parse(SECRET).unwrap();
        assert_eq!(sign(&secret, ID, TIMESTAMP, BODY), EXPECTED);
        assert!(verify(&secret, EXPECTED, ID, TIMESTAMP, BODY, TIMESTAMP));
    }

    #[test]
    fn during_a_rotation_either_secret_verifies_the_header() {
        let old = Secret::parse(SECRET).unwrap();
        let new = Secret::generate();
        let header = header([&new, &old], ID, TIMESTAMP, BODY);
        assert_eq!(header.split(' ').count(), 2);
        assert!(header.ends_with(EXPECTED));
        assert!(verify(&old, &header, ID, TIMESTAMP, BODY, TIMESTAMP));
        assert!(verify(&new, &header, ID, TIMESTAMP, BODY, TIMESTAMP));
        assert!(!verify(
            &Secret::generate(),
            &header,
            ID,
            TIMESTAMP,
            BODY,
            TIMESTAMP
        ));
    }

    #[test]
    fn a_changed_body_id_or_timestamp_or_an_old_delivery_does_not_verify() {
        let secret = Secret::parse(SECRET).unwrap();
        let v = |h: &str, id: &str, ts: i64, body: &[u8], now: i64| {
            verify(&secret, h, id, ts, body, now)
        };
        assert!(!v(
            EXPECTED,
            ID,
            TIMESTAMP,
            br#"{"test": 2432232315}"#,
            TIMESTAMP
        ));
        assert!(!v(EXPECTED, "msg_other", TIMESTAMP, BODY, TIMESTAMP));
        assert!(!v(EXPECTED, ID, TIMESTAMP + 1, BODY, TIMESTAMP));
        // Signed right, but replayed more than five minutes later.
        assert!(v(
            EXPECTED,
            ID,
            TIMESTAMP,
            BODY,
            TIMESTAMP + TOLERANCE_SECONDS
        ));
        assert!(!v(
            EXPECTED,
            ID,
            TIMESTAMP,
            BODY,
            TIMESTAMP + TOLERANCE_SECONDS + 1
        ));
        assert!(!v(
            "v2,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
            ID,
            TIMESTAMP,
            BODY,
            TIMESTAMP
        ));
    }
}
