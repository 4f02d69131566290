//! Signed download URLs, served by recruitd itself under `--public-url`.
//!
//! `GET /v1/attachments/{id}/download` hands out a URL naming one attachment's object and
//! an expiry, sealed by the node's signer (`actors::signing`: any node of a cluster
//! checks it, whichever node handed it out). Whoever holds the URL may fetch the bytes until it expires, with no API
//! key: the URL itself is the credential, which is why it is short-lived and why the
//! signature, not the caller, is checked (`http::files`).
//!
//! ```text
//! <public-url>/files/<workspace id>/<attachment id, percent-encoded>?expires=<unix seconds>&signature=<base64url>
//! signature = seal("recruitd-download-v2", "<expires>\n<workspace id>/<attachment id>")
//! ```
//!
//! The message is the object path as decoded plus the expiry, so a client that re-encodes
//! the path (`%3A` for `:`) still presents the same object. The expiry comes first and is
//! all digits, and a workspace id is a UUID, so no two (expiry, path) pairs share a
//! message. A URL is valid up to and including its `expires` second.

use crate::http::query::percent_decode_strict;
use actors::signing::Signer;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use std::sync::Arc;
use uuid::Uuid;

/// The kind of token a download URL's seal is for.
const DOMAIN: &[u8] = b"recruitd-download-v2";

/// How long a signed URL stays valid (spec, "Limits": 60 minutes).
pub const LIFETIME_SECS: i64 = 3600;

/// The path under which signed files are served, relative to the public URL.
pub const FILES_PATH: &str = "/files";

/// Characters left as they are in the attachment id of a signed URL's path: RFC 3986
/// unreserved characters and `:` (legal in a path segment, and every id has one).
const PATH_KEEP: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b':');

/// A URL as handed to a client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignedUrl {
    pub url: String,
    /// The last second (Unix) at which the URL is accepted.
    pub expires: i64,
    /// Seconds from signing to `expires`.
    pub expires_in: i64,
}

/// Why a signed URL is refused. Neither says anything about the object: the signature and
/// expiry are checked before the object is looked at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Missing or malformed parameters, or a signature that does not match.
    Invalid,
    /// A genuine signature whose time has passed.
    Expired,
}

/// Signs and checks download URLs. The key never leaves its signer and is never printed.
pub struct UrlSigner {
    signer: Arc<Signer>,
    /// The public URL without a trailing slash.
    base: String,
}

impl std::fmt::Debug for UrlSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UrlSigner")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl UrlSigner {
    /// `signer` seals (the node's, shared with the cursors); `public_url` is the base of
    /// the URLs handed out.
    pub fn new(signer: Arc<Signer>, public_url: &str) -> UrlSigner {
        UrlSigner {
            signer,
            base: public_url.trim_end_matches('/').to_string(),
        }
    }

    /// The signer, for a node that must learn the key a URL names.
    pub fn signer(&self) -> &Arc<Signer> {
        &self.signer
    }

    fn message(expires: &str, workspace: &str, attachment_id: &str) -> Vec<u8> {
        let mut m = Vec::with_capacity(expires.len() + workspace.len() + attachment_id.len() + 2);
        m.extend_from_slice(expires.as_bytes());
        m.push(b'\n');
        m.extend_from_slice(workspace.as_bytes());
        m.push(b'/');
        m.extend_from_slice(attachment_id.as_bytes());
        m
    }

    /// A URL for one attachment's bytes, valid from `now` for [`LIFETIME_SECS`].
    pub fn sign(&self, workspace: Uuid, attachment_id: &str, now: i64) -> SignedUrl {
        let expires = now + LIFETIME_SECS;
        let expires_text = expires.to_string();
        let ws = workspace.to_string();
        let sig = self
            .signer
            .seal(DOMAIN, &Self::message(&expires_text, &ws, attachment_id));
        SignedUrl {
            url: format!(
                "{}{FILES_PATH}/{ws}/{}?expires={expires_text}&signature={}",
                self.base,
                utf8_percent_encode(attachment_id, PATH_KEEP),
                URL_SAFE_NO_PAD.encode(sig)
            ),
            expires,
            expires_in: LIFETIME_SECS,
        }
    }

    /// Checks a presented URL: its decoded path parts, its `expires` and `signature`
    /// parameters as given. The seal is checked before the expiry, so an expired answer
    /// is only ever given for a URL this cluster signed.
    pub fn verify(
        &self,
        workspace: &str,
        attachment_id: &str,
        expires: &str,
        signature: &str,
        now: i64,
    ) -> Result<(), Refusal> {
        // Digits only, so that the signed text has exactly one spelling.
        if expires.is_empty() || expires.len() > 18 || !expires.bytes().all(|b| b.is_ascii_digit())
        {
            return Err(Refusal::Invalid);
        }
        let sig = URL_SAFE_NO_PAD
            .decode(signature.as_bytes())
            .map_err(|_| Refusal::Invalid)?;
        let message = Self::message(expires, workspace, attachment_id);
        if !self.signer.check(DOMAIN, &message, &sig) {
            return Err(Refusal::Invalid);
        }
        let expires: i64 = expires.parse().map_err(|_| Refusal::Invalid)?;
        if now > expires {
            return Err(Refusal::Expired);
        }
        Ok(())
    }
}

/// A presented file path, `/files/<workspace>/<attachment id>`, split and decoded
/// strictly; `None` for any other shape or an invalid escape.
pub fn parse_files_path(raw_path: &str) -> Option<(String, String)> {
    let rest = raw_path.strip_prefix(FILES_PATH)?.strip_prefix('/')?;
    let (ws, id) = rest.split_once('/')?;
    if id.contains('/') {
        return None;
    }
    Some((
        percent_decode_strict(ws)?.into_owned(),
        percent_decode_strict(id)?.into_owned(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: i64 = 1_790_000_000;

    fn with_secret(byte: u8, public_url: &str) -> UrlSigner {
        UrlSigner::new(Arc::new(Signer::from_secret(&[byte; 32])), public_url)
    }

    fn signer() -> UrlSigner {
        with_secret(7, "https://files.example:8443/")
    }

    /// The parts of a URL the file route reads: decoded path parts and query values.
    fn parts(url: &str) -> (String, String, String, String) {
        let rest = url.strip_prefix("https://files.example:8443").unwrap();
        let (path, query) = rest.split_once('?').unwrap();
        let (ws, id) = parse_files_path(path).unwrap();
        let q = crate::http::query::QueryParams::parse(query).unwrap();
        (
            ws,
            id,
            q.get("expires").unwrap().unwrap().to_string(),
            q.get("signature").unwrap().unwrap().to_string(),
        )
    }

    #[test]
    fn valid_through_the_expiry_second_and_refused_after() {
        let s = signer();
        let ws = Uuid::from_u128(9);
        let u = s.sign(ws, "cv:abc", T);
        assert_eq!((u.expires, u.expires_in), (T + 3600, 3600));
        let (w, id, exp, sig) = parts(&u.url);
        assert_eq!(
            (w.as_str(), id.as_str()),
            (ws.to_string().as_str(), "cv:abc")
        );
        assert_eq!(s.verify(&w, &id, &exp, &sig, T), Ok(()));
        assert_eq!(s.verify(&w, &id, &exp, &sig, T + 3599), Ok(()));
        assert_eq!(s.verify(&w, &id, &exp, &sig, T + 3600), Ok(()));
        assert_eq!(
            s.verify(&w, &id, &exp, &sig, T + 3601),
            Err(Refusal::Expired)
        );
    }

    #[test]
    fn any_change_is_refused_as_invalid() {
        let s = signer();
        let ws = Uuid::from_u128(9);
        let u = s.sign(ws, "file:a b", T);
        let (w, id, exp, sig) = parts(&u.url);
        assert_eq!(s.verify(&w, &id, &exp, &sig, T), Ok(()));
        let other_ws = Uuid::from_u128(10).to_string();
        let later = (T + 3600 + 60).to_string();
        let padded = format!("0{exp}");
        let mut flipped = sig.clone().into_bytes();
        flipped[0] = if flipped[0] == b'A' { b'B' } else { b'A' };
        let flipped = String::from_utf8(flipped).unwrap();
        for (w, id, exp, sig) in [
            (other_ws.as_str(), id.as_str(), exp.as_str(), sig.as_str()),
            (&w, "file:a c", &exp, &sig),
            (&w, "cv:a b", &exp, &sig),
            (&w, &id, &later, &sig),
            (&w, &id, &padded, &sig),
            (&w, &id, "-1", &sig),
            (&w, &id, "", &sig),
            (&w, &id, &exp, &flipped),
            (&w, &id, &exp, &sig[..sig.len() - 1]),
            (&w, &id, &exp, ""),
            (&w, &id, &exp, "not base64!"),
        ] {
            assert_eq!(
                s.verify(w, id, exp, sig, T),
                Err(Refusal::Invalid),
                "{w} {id} {exp} {sig}"
            );
        }
        // The same URL at a node with another key: refused, even though it has not
        // expired, until that node has learned the public key of the one that signed it.
        let other = with_secret(8, "https://files.example:8443");
        assert_eq!(other.verify(&w, &id, &exp, &sig, T), Err(Refusal::Invalid));
        other.signer().learn([s.signer().public_key()]);
        assert_eq!(other.verify(&w, &id, &exp, &sig, T), Ok(()));
        assert_eq!(
            other.verify(&w, "file:a c", &exp, &sig, T),
            Err(Refusal::Invalid)
        );
        // A tampered expiry is refused as invalid even when it is in the past.
        let past = (T - 10).to_string();
        assert_eq!(s.verify(&w, &id, &past, &sig, T), Err(Refusal::Invalid));
    }

    #[test]
    fn awkward_ids_survive_the_path() {
        let s = signer();
        let ws = Uuid::from_u128(1);
        for id in ["file:a b/c?d#e%f", "cv:résumé \"x\"", "clientfile:+&=;"] {
            let u = s.sign(ws, id, T);
            let path = u.url.split('?').next().unwrap();
            assert_eq!(path.matches('/').count(), 5, "{}", u.url);
            let (w, got, exp, sig) = parts(&u.url);
            assert_eq!(got, id);
            assert_eq!(s.verify(&w, &got, &exp, &sig, T), Ok(()));
        }
        // `:` stays readable; a client sending `%3A` presents the same object.
        let u = s.sign(ws, "cv:x", T);
        assert!(u.url.contains("/cv:x?"), "{}", u.url);
        let (_, id) = parse_files_path(&format!("/files/{ws}/cv%3Ax")).unwrap();
        assert_eq!(id, "cv:x");
    }

    #[test]
    fn files_paths_are_strict() {
        assert!(parse_files_path("/files/w/cv%zz").is_none());
        assert!(parse_files_path("/files/w").is_none());
        assert!(parse_files_path("/files/w/a/b").is_none());
        assert!(parse_files_path("/other/w/a").is_none());
    }

    #[test]
    fn the_key_is_never_printed() {
        let printed = format!("{:?}", with_secret(0xAB, "https://x"));
        assert!(!printed.contains("171") && !printed.to_lowercase().contains("ab, "));
        assert!(printed.contains("https://x"));
    }
}
