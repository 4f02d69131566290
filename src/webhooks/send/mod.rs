//! One attempt of a delivery: a signed POST to the endpoint's URL.
//!
//! The host is resolved here, for this attempt only, and every address it gives is
//! checked ([`address::resolve`]) before one of them is connected to: the connection
//! goes to an address that was checked, never to a second lookup's answer. One
//! connection an attempt, HTTP/1.1, over TLS for `https://` (the system's certificate
//! authorities, as `SSL_CERT_FILE` or `SSL_CERT_DIR` may name them). Redirects are not
//! followed: a 3xx is a failed attempt like any other non-2xx. At most
//! [`MOST_ANSWER_BYTES`] of the answer are read, and the whole attempt has
//! [`retry::ANSWER_WITHIN`]. A catch-up's attempts are sent on [`runtime::bulk_io`], as
//! idle work; a live endpoint's on its task.

use super::address::{self, Policy};
use super::{retry, runtime};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

/// The most of a receiver's answer that is read.
pub const MOST_ANSWER_BYTES: usize = 64 * 1024;

/// What a delivery sends.
pub struct Request<'a> {
    pub url: &'a url::Url,
    /// `webhook-id`: the delivery's, the same on every retry of it.
    pub webhook_id: &'a str,
    /// `webhook-timestamp`: Unix seconds of this attempt.
    pub timestamp: i64,
    /// `webhook-signature` (see [`super::signature::header`]).
    pub signature: &'a str,
    pub body: Bytes,
}

/// An attempt as it is about to be sent, owned: signed and sent where it is, or on the
/// idle pool's runtime ([`Outgoing::send_as_idle_work`]).
pub struct Outgoing {
    pub sender: Sender,
    pub url: url::Url,
    /// The secrets that sign (see [`super::signature::header`]).
    pub secrets: Vec<super::secret::Secret>,
    /// `webhook-id`: the delivery's, the same on every retry of it.
    pub id: String,
    /// `webhook-timestamp`: Unix seconds of this attempt.
    pub timestamp: i64,
    pub body: Bytes,
}

impl Outgoing {
    /// Signs and sends the attempt on the calling task.
    pub async fn send(self) -> Sent {
        let signature =
            super::signature::header(&self.secrets, &self.id, self.timestamp, &self.body);
        let request = Request {
            url: &self.url,
            webhook_id: &self.id,
            timestamp: self.timestamp,
            signature: &signature,
            body: self.body.clone(),
        };
        self.sender.send(&request).await
    }

    /// Signs and sends the attempt on [`runtime::bulk_io`], below the API's priority: a
    /// catch-up's megabyte batches are hashed, encrypted and written there, not on the
    /// runtime the API's own tasks share, and a few at a time in the process
    /// ([`runtime::bulk_turn`]), each `pace` after the one before at the soonest (see
    /// [`runtime::BUSY_GAP`]). `sending` is held for as long as the attempt
    /// runs, so that whoever stops the endpoint's task can wait until no attempt of it
    /// is under way; dropping the returned future stops the attempt.
    pub async fn send_as_idle_work(
        self,
        sending: &Arc<tokio::sync::Mutex<()>>,
        pace: Duration,
    ) -> Sent {
        let held = sending.clone().lock_owned().await;
        let turn = runtime::bulk_turn().await;
        if !pace.is_zero() {
            // Waited with the turn held: the next catch-up's attempt, whichever
            // endpoint's, starts `pace` after this one at the soonest.
            tokio::time::sleep(pace).await;
        }
        let mut attempt = AbortOnDrop(runtime::bulk_io().spawn(async move {
            let send = self.send();
            tokio::pin!(send);
            // The turn covers the attempt's work (signing, encrypting, writing), not a
            // slow receiver's wait: it is given up once the answer comes, or after
            // `TURN_MOST` at the latest.
            let sent = tokio::select! {
                sent = &mut send => {
                    drop(turn);
                    sent
                }
                () = tokio::time::sleep(runtime::TURN_MOST) => {
                    drop(turn);
                    send.await
                }
            };
            drop(held);
            sent
        }));
        match (&mut attempt.0).await {
            Ok(sent) => sent,
            Err(e) => Sent {
                status: None,
                error: Some(format!("the attempt stopped: {e}")),
                took: Duration::ZERO,
            },
        }
    }
}

/// How an attempt went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sent {
    /// The answer's status, when one came in time.
    pub status: Option<u16>,
    /// Why no answer came (or why the URL's addresses were refused).
    pub error: Option<String>,
    pub took: Duration,
}

/// Sends deliveries; one is shared by every endpoint's deliveries.
#[derive(Clone)]
pub struct Sender {
    tls: tokio_rustls::TlsConnector,
    policy: Policy,
    answer_within: Duration,
}

impl Sender {
    /// A sender trusting the system's certificate authorities.
    pub fn new(policy: Policy) -> Self {
        let mut roots = rustls::RootCertStore::empty();
        let found = rustls_native_certs::load_native_certs();
        for cert in found.certs {
            // A certificate the store cannot use is left out; the others still serve.
            let _ = roots.add(cert);
        }
        for e in found.errors {
            tracing::warn!(error = %e, "a system certificate authority could not be read");
        }
        Self::with_roots(policy, roots)
    }

    /// A sender trusting exactly `roots`.
    pub fn with_roots(policy: Policy, roots: rustls::RootCertStore) -> Self {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("ring supports the default protocol versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        Sender {
            tls: tokio_rustls::TlsConnector::from(Arc::new(config)),
            policy,
            answer_within: retry::ANSWER_WITHIN,
        }
    }

    /// The same sender, waiting `within` for an answer rather than
    /// [`retry::ANSWER_WITHIN`].
    pub fn answer_within(mut self, within: Duration) -> Self {
        self.answer_within = within;
        self
    }

    /// Makes one attempt.
    pub async fn send(&self, request: &Request<'_>) -> Sent {
        let started = Instant::now();
        let deadline = tokio::time::Instant::now() + self.answer_within;
        let answered = tokio::time::timeout_at(deadline, self.attempt(request, deadline)).await;
        let (status, error) = match answered {
            Ok(Ok((status, body, _connection))) => {
                read_some(body, deadline).await;
                (Some(status), None)
            }
            Ok(Err(e)) => (None, Some(e)),
            Err(_) => (
                None,
                Some(format!(
                    "no answer within {} s",
                    self.answer_within.as_secs_f64()
                )),
            ),
        };
        Sent {
            status,
            error,
            took: started.elapsed(),
        }
    }

    /// Up to the answer's status: it, the answer's body, and the connection's task.
    async fn attempt(
        &self,
        r: &Request<'_>,
        deadline: tokio::time::Instant,
    ) -> Result<(u16, hyper::body::Incoming, AbortOnDrop<()>), String> {
        let addrs = address::resolve(r.url, self.policy)
            .await
            .map_err(|e| e.to_string())?;
        let tcp = connect_any(&addrs).await?;
        let io: Box<dyn Io> = match r.url.scheme() {
            "https" => {
                let name = match r.url.host() {
                    Some(url::Host::Domain(d)) => ServerName::try_from(d.to_string())
                        .map_err(|e| format!("the URL's host is no server name: {e}"))?,
                    Some(url::Host::Ipv4(ip)) => ServerName::from(std::net::IpAddr::V4(ip)),
                    Some(url::Host::Ipv6(ip)) => ServerName::from(std::net::IpAddr::V6(ip)),
                    None => return Err("the URL has no host".into()),
                };
                let tls = self
                    .tls
                    .connect(name, tcp)
                    .await
                    .map_err(|e| format!("TLS: {e}"))?;
                Box::new(tls)
            }
            _ => Box::new(tcp),
        };
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
            .await
            .map_err(|e| format!("HTTP: {e}"))?;
        // Ends with the connection: when this attempt's request and answer are dropped,
        // or at the deadline.
        let connection = tokio::spawn(async move {
            let _ = tokio::time::timeout_at(deadline, conn).await;
        });
        let connection = AbortOnDrop(connection);
        let authority = &r.url[url::Position::BeforeHost..url::Position::AfterPort];
        let target = &r.url[url::Position::BeforePath..url::Position::AfterQuery];
        let request = hyper::Request::post(target)
            .header(hyper::header::HOST, authority)
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .header(
                hyper::header::USER_AGENT,
                concat!("recruitd-webhooks/", env!("CARGO_PKG_VERSION")),
            )
            .header("webhook-id", r.webhook_id)
            .header("webhook-timestamp", r.timestamp.to_string())
            .header("webhook-signature", r.signature)
            .body(Full::new(r.body.clone()))
            .map_err(|e| format!("the request could not be made: {e}"))?;
        let answer = sender
            .send_request(request)
            .await
            .map_err(|e| format!("HTTP: {e}"))?;
        let status = answer.status().as_u16();
        Ok((status, answer.into_body(), connection))
    }
}

/// Reads the first [`MOST_ANSWER_BYTES`] of an answer at the most, until `deadline`.
/// Its status has come and is what counts: a receiver that sends more, or is slow to,
/// holds nothing up.
async fn read_some(mut body: hyper::body::Incoming, deadline: tokio::time::Instant) {
    let mut read = 0;
    while read < MOST_ANSWER_BYTES {
        match tokio::time::timeout_at(deadline, body.frame()).await {
            Ok(Some(Ok(frame))) => read += frame.data_ref().map_or(0, |d| d.len()),
            _ => break,
        }
    }
}

trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// Aborts its task when dropped.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A connection to the first of `addrs` that accepts one.
async fn connect_any(addrs: &[SocketAddr]) -> Result<TcpStream, String> {
    let mut last = String::from("no address to connect to");
    for a in addrs {
        match TcpStream::connect(a).await {
            Ok(tcp) => {
                let _ = tcp.set_nodelay(true);
                return Ok(tcp);
            }
            Err(e) => last = format!("connecting to {a}: {e}"),
        }
    }
    Err(last)
}

#[cfg(test)]
mod tests;
