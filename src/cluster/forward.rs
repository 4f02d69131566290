//! Node-to-node requests, the client: a request this node passes to the node that
//! should answer it (the workspace's writer), over HTTPS with keep-alive.
//!
//! - The peer is trusted by its certificate alone: the SHA-256 of the certificate it
//!   published in the store (`cluster_nodes.cert_sha256`), not a CA (nodes run on
//!   self-signed certificates as readily as on an operator's).
//! - The peer trusts this node by the secret this start presents ([`NODE`],
//!   [`NODE_SECRET`]) on that pinned connection; the store keeps its SHA-256 alone.
//! - Connections are kept per worker thread and peer (an actix worker is a thread of
//!   its own, and each connection's task runs on the thread that opened it).
//! - A request is written only once: a connection found closed before the request went
//!   out is replaced; one that fails after is reported ([`Failure::Unknown`]), since the
//!   peer may have acted on it.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use sha2::{Digest, Sha256};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// Header naming the node a request comes from.
pub const NODE: &str = "x-recruitd-node";
/// Header carrying that node's secret (checked against its hash in the store).
pub const NODE_SECRET: &str = "x-recruitd-node-secret";
/// Header carrying the request id the client was given by the node it reached.
pub const REQUEST_ID: &str = "x-recruitd-request-id";

/// Set on a node's answer to a request another node passed to it as the workspace's
/// writer (or holder) that it is not (any more): nothing of the request was done, and
/// the passing node looks for the writer again. With status 421 (Misdirected Request).
pub const NOT_HERE: &str = "x-recruitd-not-here";

/// Longest a connection to a peer takes to open (TCP and TLS).
const CONNECT_WITHIN: Duration = Duration::from_secs(2);
/// Idle connections kept per worker thread and peer.
const IDLE_PER_PEER: usize = 8;

/// A node as others reach it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Peer {
    pub name: String,
    /// `host:port` of its advertised URL.
    pub authority: String,
    /// The host of its advertised URL (the TLS server name).
    pub host: String,
    /// SHA-256 of its certificate (DER).
    pub cert_sha256: [u8; 32],
}

/// The host and the `host:port` (port 443 when none is given) of an advertised URL
/// (`https://host[:port]`); `None` when it does not parse.
pub fn address_of(advertise_url: &str) -> Option<(String, String)> {
    let rest = advertise_url.strip_prefix("https://")?;
    let authority = rest.split('/').next()?;
    let (host, port) = match authority.strip_prefix('[') {
        Some(r) => {
            let (h, p) = r.split_once(']')?;
            (h.to_string(), p.strip_prefix(':').unwrap_or("443"))
        }
        None => match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), p),
            None => (authority.to_string(), "443"),
        },
    };
    let port: u16 = port.parse().ok()?;
    let authority = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    Some((host, authority))
}

impl Peer {
    /// The peer at `advertise_url` (`https://host[:port]`) whose certificate's
    /// SHA-256 is `cert_sha256` (hex); `None` when either does not parse.
    pub fn new(name: String, advertise_url: &str, cert_sha256: &str) -> Option<Peer> {
        let (host, authority) = address_of(advertise_url)?;
        let mut pin = [0u8; 32];
        if cert_sha256.len() != 64 {
            return None;
        }
        for (i, b) in pin.iter_mut().enumerate() {
            *b = u8::from_str_radix(cert_sha256.get(2 * i..2 * i + 2)?, 16).ok()?;
        }
        Some(Peer {
            name,
            authority,
            host,
            cert_sha256: pin,
        })
    }
}

/// `bytes` in lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(2 * bytes.len()), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// SHA-256 of `bytes`, in lower-case hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Why a forwarded request has no answer.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// The peer could not be reached: the request was not sent.
    #[error("could not reach node {0}: {1}")]
    Unreachable(String, String),
    /// The request went out and no answer came back: the peer may have acted on it.
    #[error("node {0} did not answer: {1}")]
    Unknown(String, String),
}

/// The certificate chain and key a node presents as a TLS client to the others (its
/// API's own pair): their listeners count its connections apart from their clients'.
pub struct ClientIdentity {
    pub chain: Vec<CertificateDer<'static>>,
    pub key: rustls::pki_types::PrivateKeyDer<'static>,
}

impl std::fmt::Debug for ClientIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientIdentity").finish_non_exhaustive()
    }
}

/// A request to pass on: everything but the connection's own headers. (Plain names
/// and bytes: the server's HTTP types and this client's are of different crates.)
pub struct Outgoing {
    pub method: String,
    /// Path and query.
    pub target: String,
    pub headers: Vec<(String, Vec<u8>)>,
    pub body: Bytes,
}

/// The peer's answer, whole.
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, Vec<u8>)>,
    pub body: Bytes,
}

/// One kept connection's sending half.
type Sender = SendRequest<Full<Bytes>>;

/// A peer's connections are kept by its name and certificate.
type PeerKey = (String, [u8; 32]);

thread_local! {
    /// Idle connections of this worker thread, per peer.
    static IDLE: RefCell<HashMap<PeerKey, Vec<Sender>>> = RefCell::new(HashMap::new());
}

/// Sends `request` to `peer` and reads the whole answer, waiting for it at most
/// `answer_within`. Must run on an actix (or tokio local) thread: a new connection's
/// task is spawned on it.
pub async fn send(
    identity: Option<&ClientIdentity>,
    peer: &Peer,
    request: Outgoing,
    answer_within: Duration,
) -> Result<Answer, Failure> {
    let key = (peer.name.clone(), peer.cert_sha256);
    let mut req = build(peer, request);
    loop {
        let pooled = IDLE.with(|idle| idle.borrow_mut().get_mut(&key).and_then(Vec::pop));
        let (mut sender, fresh) = match pooled {
            Some(s) => (s, false),
            None => (connect(identity, peer).await?, true),
        };
        if sender.ready().await.is_err() {
            if fresh {
                return Err(Failure::Unreachable(
                    peer.name.clone(),
                    "connection closed at once".into(),
                ));
            }
            continue;
        }
        match tokio::time::timeout(answer_within, sender.try_send_request(req)).await {
            Err(_) => return Err(Failure::Unknown(peer.name.clone(), "timed out".into())),
            Ok(Ok(res)) => {
                let (parts, body) = res.into_parts();
                let body = tokio::time::timeout(answer_within, body.collect())
                    .await
                    .map_err(|_| Failure::Unknown(peer.name.clone(), "timed out".into()))?
                    .map_err(|e| Failure::Unknown(peer.name.clone(), e.to_string()))?
                    .to_bytes();
                IDLE.with(|idle| {
                    let mut idle = idle.borrow_mut();
                    let list = idle.entry(key).or_default();
                    if list.len() < IDLE_PER_PEER && !sender.is_closed() {
                        list.push(sender);
                    }
                });
                return Ok(Answer {
                    status: parts.status.as_u16(),
                    headers: parts
                        .headers
                        .iter()
                        .map(|(n, v)| (n.as_str().to_string(), v.as_bytes().to_vec()))
                        .collect(),
                    body,
                });
            }
            Ok(Err(mut e)) => match e.take_message() {
                // Not sent: a kept connection the peer had closed. Try another.
                Some(unsent) if !fresh => req = unsent,
                _ => {
                    return Err(Failure::Unknown(
                        peer.name.clone(),
                        e.into_error().to_string(),
                    ))
                }
            },
        }
    }
}

fn build(peer: &Peer, o: Outgoing) -> hyper::Request<Full<Bytes>> {
    use hyper::header::{HeaderName, HeaderValue};
    let mut req = hyper::Request::new(Full::new(o.body));
    // Both came from a request the server parsed: they parse again.
    *req.method_mut() = o.method.parse().unwrap_or(hyper::Method::GET);
    *req.uri_mut() = o
        .target
        .parse()
        .unwrap_or_else(|_| hyper::Uri::from_static("/"));
    for (name, value) in o.headers {
        if let (Ok(n), Ok(v)) = (HeaderName::try_from(name), HeaderValue::from_bytes(&value)) {
            req.headers_mut().append(n, v);
        }
    }
    if let Ok(host) = HeaderValue::from_str(&peer.authority) {
        req.headers_mut().insert(hyper::header::HOST, host);
    }
    req
}

async fn connect(identity: Option<&ClientIdentity>, peer: &Peer) -> Result<Sender, Failure> {
    let unreachable = |e: String| Failure::Unreachable(peer.name.clone(), e);
    let opened = async {
        let tcp = tokio::net::TcpStream::connect(&peer.authority)
            .await
            .map_err(|e| e.to_string())?;
        tcp.set_nodelay(true).map_err(|e| e.to_string())?;
        let name = ServerName::try_from(peer.host.clone()).map_err(|e| e.to_string())?;
        let tls = tokio_rustls::TlsConnector::from(client_config(identity, peer.cert_sha256))
            .connect(name, tcp)
            .await
            .map_err(|e| e.to_string())?;
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .map_err(|e| e.to_string())?;
        actix_web::rt::spawn(async move {
            // Ends when either side closes the connection.
            let _ = conn.await;
        });
        Ok::<_, String>(sender)
    };
    match tokio::time::timeout(CONNECT_WITHIN, opened).await {
        Ok(r) => r.map_err(unreachable),
        Err(_) => Err(unreachable("timed out".into())),
    }
}

/// A client configuration that trusts exactly the certificate whose SHA-256 is `pin`,
/// and presents `identity` when asked for a certificate.
fn client_config(identity: Option<&ClientIdentity>, pin: [u8; 32]) -> Arc<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = Arc::new(Pinned {
        pin,
        schemes: provider.signature_verification_algorithms,
    });
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions")
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let mut config = match identity {
        Some(id) => config
            .clone()
            .with_client_auth_cert(id.chain.clone(), id.key.clone_key())
            .unwrap_or_else(|e| {
                tracing::warn!(error = %e, "the node's certificate cannot be presented to other nodes");
                config.with_no_client_auth()
            }),
        None => config.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(config)
}

/// Trusts one certificate, named by its SHA-256, whatever signed it.
#[derive(Debug)]
struct Pinned {
    pin: [u8; 32],
    schemes: rustls::crypto::WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let seen: [u8; 32] = Sha256::digest(end_entity.as_ref()).into();
        if subtle::ConstantTimeEq::ct_eq(&seen[..], &self.pin[..]).into() {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::ApplicationVerificationFailure,
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.schemes)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.schemes)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.schemes.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_parse_from_advertised_urls() {
        let pin = "ab".repeat(32);
        let p = Peer::new("a".into(), "https://10.0.0.7:9443", &pin).unwrap();
        assert_eq!(
            (p.authority.as_str(), p.host.as_str()),
            ("10.0.0.7:9443", "10.0.0.7")
        );
        assert_eq!(p.cert_sha256, [0xab; 32]);
        let p = Peer::new("b".into(), "https://node-b.internal", &pin).unwrap();
        assert_eq!(p.authority, "node-b.internal:443");
        let p = Peer::new("c".into(), "https://[::1]:8443/", &pin).unwrap();
        assert_eq!(
            (p.authority.as_str(), p.host.as_str()),
            ("[::1]:8443", "::1")
        );
        assert!(Peer::new("d".into(), "http://x:1", &pin).is_none());
        assert!(Peer::new("e".into(), "https://x:1", "abc").is_none());
        assert!(Peer::new("f".into(), "https://x:port", &pin).is_none());
    }
}
