//! The API listener ([`https_server`]): HTTPS only, HTTP/1.1 only.
//!
//! Every accepted TCP connection goes through, in order:
//! 1. the connection caps ([`Connections`]): past the listener's total, or its peer's
//!    share, it is closed at once, unread;
//! 2. a guard that peeks at its first byte: a TLS handshake record (`0x16`) goes on;
//!    something that looks like plain HTTP gets a complete `400` JSON answer saying that
//!    HTTPS is required and is closed, never reaching the application; anything else, or
//!    silence, is dropped;
//! 3. the TLS handshake, bounded in time and, per peer, in number (a peer's further
//!    handshakes wait for one of its places, so its stalled handshakes never delay
//!    another peer's); a client may present a certificate (the cluster's nodes present
//!    their own), and a connection whose certificate is a live node's counts from then
//!    on against the total cap alone, not its address's share;
//! 4. the HTTP/1.1 layer and the actix-web application, over a stream that fails writes
//!    stalled by a client that does not read ([`GuardedIo`]).
//!
//! No byte received on the API port reaches the application unless it arrived inside a
//! completed TLS session.
//!
//! HTTP/2 is not offered (ALPN names `http/1.1` alone; a client that insists on `h2` is
//! refused in the handshake). actix-http's HTTP/2 layer bounds neither the header list
//! it buffers and decodes, nor the streams of a connection, nor the keep-alive of a
//! connection that answers pings but opens no stream; HTTP/1.1 has none of these
//! exposures, and every answer of the API is the same over it.

use std::{io, net::SocketAddr, sync::Arc, time::Duration};

use actix_http::{error::DispatchError, HttpServiceBuilder, Request, Response};
use actix_rt::net::TcpStream;
use actix_server::{Server, ServerBuilder};
use actix_service::{
    fn_service, map_config, IntoServiceFactory, ServiceFactory, ServiceFactoryExt,
};
use actix_web::{
    body::MessageBody,
    dev::{AppConfig, Service},
    http::KeepAlive,
};
use rustls::ServerConfig;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio_rustls::{server::TlsStream, TlsAcceptor};

use super::connections::{
    descriptor_budget, ConnectionCaps, Connections, GuardedIo, DEFAULT_CONNECTIONS_PER_PEER,
    DEFAULT_HANDSHAKES_PER_PEER,
};
use crate::telemetry::metrics::ConnectionMetrics;

/// The message of the refusal sent to plain-HTTP clients. Operators and tests match on
/// "HTTPS is required"; clients branch on the code `BAD_REQUEST`, never on this text.
pub const HTTPS_REQUIRED_MESSAGE: &str =
    "HTTPS is required: this port speaks TLS only; use https://";

/// First byte of every TLS record carrying a handshake message; a ClientHello always opens
/// with one (RFC 8446 §5.1, RFC 5246 §6.2.1).
const TLS_HANDSHAKE_RECORD: u8 = 0x16;

/// Upper bound on what we read and discard from a refused plain-HTTP client after answering
/// it (see [`refuse_plain_http`]); a client that keeps sending past this is simply cut off.
const REFUSAL_DRAIN_LIMIT: usize = 64 * 1024;

/// Connections past the caps that may be open at once while being closed; only this
/// many descriptors beyond `max_connections` are ever held by the API listener.
const REFUSALS_IN_FLIGHT: usize = 64;

/// The one application protocol offered in the TLS handshake (see the module docs).
pub const ALPN_HTTP_1_1: &[u8] = b"http/1.1";

/// Tuning of the API listener. `Default` gives the values documented on each field.
#[derive(Clone)]
pub struct HttpsOptions {
    /// Worker threads; `None` means one per available CPU (actix-server's default).
    pub workers: Option<usize>,
    /// How long an idle HTTP/1.1 connection is kept between requests. Default 5 s.
    pub keep_alive: KeepAlive,
    /// Slow-client guard: time allowed for a request head to arrive once the TLS session
    /// is up; an idle or trickling client gets `408` and is closed. Default 5 s.
    pub client_request_timeout: Duration,
    /// Time allowed for a connection's orderly close (TLS `close_notify`) before it is
    /// dropped. Default 1 s, as actix-web's own server.
    pub client_disconnect_timeout: Duration,
    /// Time allowed for the TLS handshake. The same bound applies, separately, to the wait
    /// for the first byte before the handshake (so a silent client is dropped) and to the
    /// answer to a plain-HTTP client. Default 3 s.
    pub tls_handshake_timeout: Duration,
    /// Open connections in all; `None` derives it from the descriptor limit
    /// ([`descriptor_budget`]).
    pub max_connections: Option<usize>,
    /// Open connections of one peer address (IPv6: one /64). Default 1,024, and never
    /// more than half of `max_connections`.
    pub max_connections_per_peer: usize,
    /// TLS handshakes one peer may have in progress; its further ones wait for a place
    /// within `tls_handshake_timeout`. Default 32.
    pub max_handshakes_per_peer: usize,
    /// A write to a client that makes no progress for this long (the client reads
    /// nothing of its answer) closes the connection. Default 10 s.
    pub write_stall_timeout: Duration,
    /// Where the listener counts its connections and refusals.
    pub metrics: ConnectionMetrics,
    /// After [`actix_server::ServerHandle::stop`] with `graceful` (SIGINT or SIGTERM),
    /// in-flight requests get this long to finish before connections are dropped; rounded
    /// up to whole seconds. Default 25 s: shorter than the 30 s that common supervisors
    /// (Kubernetes, Docker) wait before SIGKILL, so shutdown stays graceful under them.
    pub shutdown_timeout: Duration,
    /// Whether a TLS client certificate (DER) is a live node's of the cluster: such a
    /// connection counts against the total cap only, not its address's share
    /// (`ConnectionPermit::count_as_node`). `None`: no connection is a node's.
    pub node_certificates: Option<NodeCertificates>,
}

/// See [`HttpsOptions::node_certificates`].
pub type NodeCertificates = Arc<dyn Fn(&[u8]) -> bool + Send + Sync>;

impl Default for HttpsOptions {
    fn default() -> Self {
        Self {
            workers: None,
            keep_alive: KeepAlive::Timeout(Duration::from_secs(5)),
            client_request_timeout: Duration::from_secs(5),
            client_disconnect_timeout: Duration::from_secs(1),
            tls_handshake_timeout: Duration::from_secs(3),
            max_connections: None,
            max_connections_per_peer: DEFAULT_CONNECTIONS_PER_PEER,
            max_handshakes_per_peer: DEFAULT_HANDSHAKES_PER_PEER,
            write_stall_timeout: Duration::from_secs(10),
            metrics: ConnectionMetrics::default(),
            shutdown_timeout: Duration::from_secs(25),
            node_certificates: None,
        }
    }
}

impl HttpsOptions {
    /// The caps these options give, the total derived from the descriptor limit if unset.
    pub fn caps(&self) -> ConnectionCaps {
        ConnectionCaps {
            total: self.max_connections.unwrap_or_else(descriptor_budget),
            per_peer: self.max_connections_per_peer,
            handshakes_per_peer: self.max_handshakes_per_peer,
        }
        .clamped()
    }
}

/// Builds (without starting) the HTTPS API server on an already bound `listener`.
///
/// `app_factory` is what one would pass to [`actix_web::HttpServer::new`]: it is called
/// once per worker and returns an `App`. The application sees `ConnectionInfo::scheme()`
/// as `https`. Plain HTTP on this port is answered with `400` and closed (see the module
/// docs); it never reaches the application.
///
/// Await the returned [`Server`] (or spawn it and keep its `handle()`) to run it. It
/// installs no signal handlers: the caller stops it through its handle (the server's
/// `Application::stop_on_signals`), so several may share a process.
///
/// # Errors
///
/// `InvalidInput` if `opts.workers` is `Some(0)` or above 512, or
/// `opts.max_connections` is `Some(0)`; otherwise any error reading the listener's
/// address or making it non-blocking.
pub fn https_server<F, I, S, B>(
    listener: std::net::TcpListener,
    mut tls: ServerConfig,
    app_factory: F,
    opts: HttpsOptions,
) -> io::Result<Server>
where
    F: Fn() -> I + Send + Clone + 'static,
    I: IntoServiceFactory<S, Request>,
    S: ServiceFactory<Request, Config = AppConfig> + 'static,
    S::Error: Into<actix_web::Error> + 'static,
    S::InitError: std::fmt::Debug,
    S::Response: Into<Response<B>> + 'static,
    <S::Service as Service<Request>>::Future: 'static,
    S::Service: 'static,
    B: MessageBody + 'static,
{
    let (builder, connections) = server_builder(&opts)?;
    let addr: SocketAddr = listener.local_addr()?;
    let host = addr.to_string();
    tls.alpn_protocols = vec![ALPN_HTTP_1_1.to_vec()];
    let acceptor = TlsAcceptor::from(Arc::new(tls));
    let shutdown = builder.graceful_shutdown_signal();

    // The API service: the per-connection steps of the module docs, in front of
    // actix-http's HTTP/1.1 service.
    builder
        .listen(format!("recruitd-api-{addr}"), listener, move || {
            let shutdown = shutdown.clone();
            let host = host.clone();
            let app = app_factory()
                .into_factory()
                .map_err(|err| err.into().error_response());

            let http = HttpServiceBuilder::<GuardedIo<TlsStream<TcpStream>>, _>::default()
                // On graceful shutdown, connections stop being kept alive and close after
                // their current response instead of holding workers until the shutdown
                // timeout.
                .graceful_shutdown_signal(move || {
                    let shutdown = shutdown.clone();
                    async move { shutdown.notified().await }
                })
                .keep_alive(opts.keep_alive)
                .client_request_timeout(opts.client_request_timeout)
                .client_disconnect_timeout(opts.client_disconnect_timeout)
                .secure()
                .local_addr(addr)
                // `AppConfig::default()` would claim plain HTTP on 127.0.0.1:8080, making
                // `ConnectionInfo::scheme()` say "http". actix-web's own TLS listener builds
                // this value with the crate-private `AppConfig::new`, which this wraps
                // (public but semver-exempt: should it go, the build breaks loudly and
                // `default()` is the fallback).
                .h1(map_config(app, move |_| {
                    AppConfig::__priv_test_new(true, host.clone(), addr)
                }));

            let connections = connections.clone();
            let acceptor = acceptor.clone();
            let opts = opts.clone();
            fn_service(move |stream: TcpStream| {
                let connections = connections.clone();
                let acceptor = acceptor.clone();
                let opts = opts.clone();
                async move {
                    admit(stream, &connections, &acceptor, &opts)
                        .await
                        .map_err(DispatchError::Io)
                }
            })
            .and_then(http)
        })
        .map(ServerBuilder::run)
}

/// The server builder for `opts`, and the connection caps its listener keeps: checks
/// the options, then sets what actix-server itself bounds. (Apart from the generic
/// [`https_server`], which adds the service.)
fn server_builder(opts: &HttpsOptions) -> io::Result<(ServerBuilder, Arc<Connections>)> {
    let mut builder = ServerBuilder::new();
    if let Some(workers) = opts.workers {
        // actix-server panics outside 1..=512; an operator's typo deserves an error.
        if !(1..=512).contains(&workers) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("workers must be between 1 and 512, not {workers}"),
            ));
        }
        builder = builder.workers(workers);
    }
    if opts.max_connections == Some(0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "max_connections must be at least 1",
        ));
    }
    let connections = Connections::new(opts.caps(), opts.metrics.clone());
    tracing::info!(
        max_connections = connections.caps().total,
        max_connections_per_peer = connections.caps().per_peer,
        max_handshakes_per_peer = connections.caps().handshakes_per_peer,
        "API connection caps"
    );
    builder = builder
        // The caps are the listener's own ([`Connections`]), shared by the workers, and
        // close what exceeds them at once; actix-server's per-worker limit would instead
        // stop accepting, leaving every client waiting in the backlog. So that one stays
        // out of the way: above the total by the connections being refused at a moment.
        .max_concurrent_connections(connections.caps().total.saturating_add(REFUSALS_IN_FLIGHT))
        .shutdown_timeout(ceil_secs(opts.shutdown_timeout));
    builder = builder.disable_signals();
    Ok((builder, connections))
}

fn ceil_secs(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

/// Steps 1 to 3 of the module docs: the connection as the HTTP layer gets it, with its
/// peer's address, or the reason it goes no further (the caller drops it).
async fn admit(
    stream: TcpStream,
    connections: &Arc<Connections>,
    acceptor: &TlsAcceptor,
    opts: &HttpsOptions,
) -> io::Result<(GuardedIo<TlsStream<TcpStream>>, Option<SocketAddr>)> {
    let peer = stream.peer_addr()?;
    let nodes_may_connect = opts.node_certificates.is_some();
    let mut permit = connections
        .admit(peer.ip(), nodes_may_connect)
        .map_err(|cap| {
            tracing::debug!(%peer, cap = cap.as_str(), "connection over a cap; closed");
            io::Error::other(format!("connection over the {} cap", cap.as_str()))
        })?;
    let stream = admit_tls_only(stream, opts.tls_handshake_timeout).await?;
    let tls = {
        let _handshake = connections
            .begin_handshake(&permit, opts.tls_handshake_timeout)
            .await
            .map_err(|cap| {
                tracing::debug!(%peer, cap = cap.as_str(), "no handshake place in time; closed");
                io::Error::other("too many handshakes from this peer")
            })?;
        tokio::time::timeout(opts.tls_handshake_timeout, acceptor.accept(stream))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "TLS handshake timed out"))??
    };
    let certificate = tls.get_ref().1.peer_certificates().and_then(|c| c.first());
    if let (Some(is_node), Some(certificate)) = (&opts.node_certificates, certificate) {
        if is_node(certificate.as_ref()) {
            permit.count_as_node();
        }
    }
    if permit.on_probation() {
        let cap = permit.refuse();
        tracing::debug!(%peer, cap = cap.as_str(), "connection over a cap, not a node's; closed");
        return Err(io::Error::other("connection over the per-peer cap"));
    }
    Ok((
        GuardedIo::new(tls, permit, opts.write_stall_timeout),
        Some(peer),
    ))
}

/// What the first byte of a connection says about the client.
#[derive(Debug, PartialEq, Eq)]
enum FirstByte {
    /// A TLS handshake record: a ClientHello is on its way.
    TlsHandshake,
    /// An ASCII letter, as every HTTP/1.x request line (and HTTP/2's cleartext preface
    /// `PRI * HTTP/2.0`) starts with a method token.
    PlainHttp,
    /// Neither; nothing we can usefully answer.
    Other,
}

fn classify(first: u8) -> FirstByte {
    match first {
        TLS_HANDSHAKE_RECORD => FirstByte::TlsHandshake,
        b if b.is_ascii_alphabetic() => FirstByte::PlainHttp,
        _ => FirstByte::Other,
    }
}

/// The guard in front of the TLS acceptor: passes the stream on only if it starts with a
/// TLS handshake record. An `Err` ends the connection's pipeline (actix-server drops the
/// stream), which is how everything else is kept away from the application.
async fn admit_tls_only(stream: TcpStream, wait: Duration) -> io::Result<TcpStream> {
    // Answers are small and written in few pieces: without TCP_NODELAY, Nagle's algorithm
    // meeting the client's delayed ACK stalls some of them by ~40 ms.
    stream.set_nodelay(true)?;
    let mut first = [0u8; 1];
    // `peek` leaves the byte in the socket buffer for the TLS acceptor to read.
    let n = tokio::time::timeout(wait, stream.peek(&mut first))
        .await
        .map_err(|_| {
            io::Error::new(
                io::ErrorKind::TimedOut,
                "client sent nothing before the TLS handshake timeout",
            )
        })??;
    if n == 0 {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    match classify(first[0]) {
        FirstByte::TlsHandshake => Ok(stream),
        FirstByte::PlainHttp => {
            refuse_plain_http(stream, wait).await;
            Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "plain HTTP on the HTTPS port, refused",
            ))
        }
        FirstByte::Other => {
            tracing::debug!(
                peer = ?stream.peer_addr().ok(),
                first_byte = first[0],
                "connection is neither TLS nor HTTP; dropped"
            );
            Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "connection does not start with a TLS handshake",
            ))
        }
    }
}

/// The complete HTTP/1.1 answer to a plain-HTTP client: the API's error envelope,
/// written by the one place that writes it.
fn plain_http_refusal(request_id: &str) -> Vec<u8> {
    let body = crate::http::context::error_json(
        &crate::http::errors::ErrorKind::BadRequest,
        HTTPS_REQUIRED_MESSAGE,
        request_id,
    );
    let mut answer = format!(
        "HTTP/1.1 400 Bad Request\r\n\
         Content-Type: application/json\r\n\
         Content-Length: {}\r\n\
         Connection: close\r\n\
         \r\n",
        body.len()
    )
    .into_bytes();
    answer.extend_from_slice(&body);
    answer
}

/// Answers a plain-HTTP client with [`plain_http_refusal`] and closes the connection,
/// without ever parsing its request.
///
/// The request is still unread in our receive buffer; closing a socket with unread data
/// makes the kernel send RST, and a client that gets RST may discard our answer before
/// reading it. So, as web servers do ("lingering close"), we send FIN after the answer and
/// read and discard input until the client closes, `REFUSAL_DRAIN_LIMIT` bytes, or `wait`.
async fn refuse_plain_http(mut stream: TcpStream, wait: Duration) {
    let request_id = format!("req_{}", uuid::Uuid::new_v4().simple());
    tracing::debug!(
        peer = ?stream.peer_addr().ok(),
        %request_id,
        "plain HTTP on the HTTPS port; answered 400 and closed"
    );
    let answer = plain_http_refusal(&request_id);
    let _ = tokio::time::timeout(wait, async {
        stream.write_all(&answer).await?;
        stream.shutdown().await?;
        let mut sink = [0u8; 4096];
        let mut drained = 0;
        while drained < REFUSAL_DRAIN_LIMIT {
            match stream.read(&mut sink).await? {
                0 => break,
                n => drained += n,
            }
        }
        io::Result::Ok(())
    })
    .await;
}

#[cfg(test)]
#[path = "listener_tests.rs"]
mod tests;
