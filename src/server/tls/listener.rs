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
    tls: ServerConfig,
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
    Ok(listen_https(builder, listener, tls, app_factory, &opts, connections)?.run())
}

fn ceil_secs(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

/// Adds the API service on `listener` to `builder`: the per-connection steps of the
/// module docs in front of actix-http's HTTP/1.1 service.
fn listen_https<F, I, S, B>(
    builder: ServerBuilder,
    listener: std::net::TcpListener,
    mut tls: ServerConfig,
    app_factory: F,
    opts: &HttpsOptions,
    connections: Arc<Connections>,
) -> io::Result<ServerBuilder>
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
    let addr: SocketAddr = listener.local_addr()?;
    let host = addr.to_string();
    tls.alpn_protocols = vec![ALPN_HTTP_1_1.to_vec()];
    let acceptor = TlsAcceptor::from(Arc::new(tls));
    let shutdown = builder.graceful_shutdown_signal();
    let opts = opts.clone();

    builder.listen(format!("recruitd-api-{addr}"), listener, move || {
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
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use actix_web::{web, App, HttpResponse};
    use tempfile::TempDir;

    use super::*;
    use crate::server::tls::certs::{install_crypto_provider, self_signed_paths, server_config};
    use std::fs;
    use std::sync::Arc;

    /// The size of `GET /big`'s answer: far more than the socket buffers hold.
    const BIG_BODY: usize = 64 << 20;

    /// A running API server on 127.0.0.1 with one route, `GET /ok`, counting its calls
    /// (and `GET /big`, `GET /scheme`).
    struct TestServer {
        addr: SocketAddr,
        handle: actix_server::ServerHandle,
        hits: Arc<AtomicUsize>,
        cert_pem: Vec<u8>,
        _data_dir: TempDir,
    }

    impl TestServer {
        async fn start(opts: HttpsOptions) -> Self {
            install_crypto_provider();
            let data_dir = tempfile::tempdir().unwrap();
            let config = server_config(data_dir.path(), None, None).unwrap();
            let cert_pem = fs::read(self_signed_paths(data_dir.path()).0).unwrap();

            let hits = Arc::new(AtomicUsize::new(0));
            let app_hits = Arc::clone(&hits);
            let factory = move || {
                let hits = Arc::clone(&app_hits);
                App::new()
                    .route(
                        "/ok",
                        web::get().to(move || {
                            hits.fetch_add(1, Ordering::SeqCst);
                            async { HttpResponse::Ok().body("ok") }
                        }),
                    )
                    .route(
                        "/big",
                        web::get().to(|| async { HttpResponse::Ok().body(vec![b'x'; BIG_BODY]) }),
                    )
                    .route(
                        "/scheme",
                        web::get().to(|req: actix_web::HttpRequest| async move {
                            req.connection_info().scheme().to_owned()
                        }),
                    )
            };

            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            let server = https_server(listener, config, factory, opts).unwrap();
            let handle = server.handle();
            actix_rt::spawn(server);
            TestServer {
                addr,
                handle,
                hits,
                cert_pem,
                _data_dir: data_dir,
            }
        }

        fn client(
            &self,
            configure: impl FnOnce(reqwest::ClientBuilder) -> reqwest::ClientBuilder,
        ) -> reqwest::Client {
            let builder = reqwest::Client::builder()
                .use_rustls_tls()
                .tls_built_in_root_certs(false)
                .add_root_certificate(reqwest::Certificate::from_pem(&self.cert_pem).unwrap())
                // An HTTPS_PROXY in the environment must not intercept loopback tests.
                .no_proxy()
                .timeout(Duration::from_secs(10));
            configure(builder).build().unwrap()
        }

        fn url(&self, host: &str) -> String {
            format!("https://{host}:{}/ok", self.addr.port())
        }

        async fn stop(self) {
            self.handle.stop(true).await;
        }
    }

    fn test_options() -> HttpsOptions {
        HttpsOptions {
            workers: Some(1),
            shutdown_timeout: Duration::from_secs(1),
            ..HttpsOptions::default()
        }
    }

    /// Sends `bytes` over a raw TCP connection and returns everything received until the
    /// server closes (or resets) the connection.
    async fn raw_exchange(addr: SocketAddr, bytes: &[u8]) -> io::Result<Vec<u8>> {
        let mut stream = tokio::net::TcpStream::connect(addr).await?;
        if !bytes.is_empty() {
            stream.write_all(bytes).await?;
        }
        let mut received = Vec::new();
        tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut received))
            .await
            .expect("server did not close the connection")?;
        Ok(received)
    }

    #[test]
    fn first_byte_classification() {
        assert_eq!(classify(0x16), FirstByte::TlsHandshake);
        for b in *b"GPHDOCTgp" {
            assert_eq!(classify(b), FirstByte::PlainHttp);
        }
        for b in [0x00, 0x15, 0x17, 0x80, b'\r', b' ', b'1'] {
            assert_eq!(classify(b), FirstByte::Other);
        }
    }

    #[test]
    fn refusal_is_a_complete_http_response() {
        let bytes = plain_http_refusal("req_abc");
        let text = String::from_utf8(bytes).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 400 Bad Request\r\n"));
        assert!(head.contains(&format!("\r\nContent-Length: {}", body.len())));
        assert_eq!(
            body,
            r#"{"error":{"code":"BAD_REQUEST","message":"HTTPS is required: this port speaks TLS only; use https://"},"request_id":"req_abc"}"#
        );
    }

    #[actix_rt::test]
    async fn plain_http_is_refused_and_never_reaches_the_app() {
        let server = TestServer::start(test_options()).await;

        let mut ids = Vec::new();
        for request in [
            &b"GET /ok HTTP/1.1\r\nHost: localhost\r\n\r\n"[..],
            b"POST /ok HTTP/1.0\r\nContent-Length: 2\r\n\r\n{}",
            b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
        ] {
            // A reset here would mean the answer can be lost (see `refuse_plain_http`).
            let received = raw_exchange(server.addr, request).await.unwrap();
            let text = String::from_utf8(received).unwrap();
            let (head, body) = text.split_once("\r\n\r\n").expect("a complete head");
            let head_lines: Vec<&str> = head.split("\r\n").collect();
            assert_eq!(head_lines[0], "HTTP/1.1 400 Bad Request");
            assert!(
                head_lines.contains(&"Content-Type: application/json"),
                "{head}"
            );
            assert!(head_lines.contains(&"Connection: close"), "{head}");
            let length = format!("Content-Length: {}", body.len());
            assert!(head_lines.contains(&length.as_str()), "{head}");

            let json: serde_json::Value = serde_json::from_str(body).unwrap();
            assert_eq!(json["error"]["code"], "BAD_REQUEST");
            assert!(json["error"]["message"]
                .as_str()
                .unwrap()
                .contains("HTTPS is required"));
            let id = json["request_id"].as_str().unwrap().to_owned();
            assert!(id.starts_with("req_") && id.len() > 8, "{id}");
            ids.push(id);
        }
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 3, "request ids are unique");
        assert_eq!(server.hits.load(Ordering::SeqCst), 0, "the app was reached");

        // The same server then serves HTTPS normally.
        let client = server.client(|b| b);
        let body = client.get(server.url("127.0.0.1")).send().await.unwrap();
        assert_eq!(body.text().await.unwrap(), "ok");
        assert_eq!(server.hits.load(Ordering::SeqCst), 1);
        server.stop().await;
    }

    #[actix_rt::test]
    async fn silent_and_non_http_clients_are_dropped() {
        let server = TestServer::start(HttpsOptions {
            tls_handshake_timeout: Duration::from_millis(300),
            ..test_options()
        })
        .await;

        let started = std::time::Instant::now();
        assert!(raw_exchange(server.addr, b"").await.unwrap().is_empty());
        assert!(started.elapsed() < Duration::from_secs(5));
        // Garbage is dropped unread, so the kernel may answer with a reset: either way,
        // nothing comes back.
        match raw_exchange(server.addr, b"\x00\x01garbage").await {
            Ok(received) => assert!(received.is_empty(), "{received:?}"),
            Err(err) => assert_eq!(err.kind(), io::ErrorKind::ConnectionReset, "{err}"),
        }
        assert_eq!(server.hits.load(Ordering::SeqCst), 0);
        server.stop().await;
    }

    #[actix_rt::test]
    async fn https_is_served_over_http1_only() {
        let server = TestServer::start(test_options()).await;

        // Default ALPN offer (h2, http/1.1): the server picks HTTP/1.1. Through the DNS
        // name SAN.
        let addr = server.addr;
        let client = server.client(|b| b.resolve("localhost", addr));
        let response = client.get(server.url("localhost")).send().await.unwrap();
        assert_eq!(response.version(), reqwest::Version::HTTP_11);
        assert_eq!(response.text().await.unwrap(), "ok");

        // A client that will speak HTTP/2 only is refused in the handshake. Through the
        // IP address SAN.
        let h2_only = server.client(|b| b.http2_prior_knowledge());
        let err = h2_only
            .get(server.url("127.0.0.1"))
            .send()
            .await
            .unwrap_err();
        assert!(err.is_connect(), "{err:?}");
        let mut alpn_h2 = tls_client_config(&server.cert_pem);
        alpn_h2.alpn_protocols = vec![b"h2".to_vec()];
        let refused = tls_connect_with(server.addr, LOCAL, alpn_h2).await;
        assert!(
            refused.is_err(),
            "an h2-only ALPN offer must fail the handshake"
        );
        assert_eq!(server.hits.load(Ordering::SeqCst), 1);

        // The application knows it is served over TLS (URL generation relies on it).
        let scheme_url = format!("https://127.0.0.1:{}/scheme", server.addr.port());
        let response = client.get(scheme_url).send().await.unwrap();
        assert_eq!(response.text().await.unwrap(), "https");
        server.stop().await;
    }

    const LOCAL: [u8; 4] = [127, 0, 0, 1];
    /// Another peer: all of 127/8 reaches the loopback interface on Linux.
    const OTHER: [u8; 4] = [127, 0, 0, 2];

    fn tls_client_config(cert_pem: &[u8]) -> rustls::ClientConfig {
        use rustls::pki_types::{pem::PemObject as _, CertificateDer};
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(cert_pem) {
            roots.add(cert.unwrap()).unwrap();
        }
        let mut config = rustls::ClientConfig::builder()
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![ALPN_HTTP_1_1.to_vec()];
        config
    }

    /// A TCP connection to `addr` from the local address `from`.
    async fn tcp_from(addr: SocketAddr, from: [u8; 4]) -> io::Result<tokio::net::TcpStream> {
        let socket = tokio::net::TcpSocket::new_v4()?;
        socket.bind(SocketAddr::from((from, 0)))?;
        socket.connect(addr).await
    }

    async fn tls_connect_with(
        addr: SocketAddr,
        from: [u8; 4],
        config: rustls::ClientConfig,
    ) -> io::Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>> {
        let tcp = tcp_from(addr, from).await?;
        let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
        tokio::time::timeout(
            Duration::from_secs(10),
            tokio_rustls::TlsConnector::from(Arc::new(config)).connect(name, tcp),
        )
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "handshake took 10 s"))?
    }

    async fn tls_connect(
        server: &TestServer,
        from: [u8; 4],
    ) -> io::Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>> {
        tls_connect_with(server.addr, from, tls_client_config(&server.cert_pem)).await
    }

    /// One `GET /ok` on an established connection, answered `ok`.
    async fn get_ok(stream: &mut tokio_rustls::client::TlsStream<tokio::net::TcpStream>) {
        stream
            .write_all(b"GET /ok HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .await
            .unwrap();
        let mut buf = vec![0; 4096];
        let n = stream.read(&mut buf).await.unwrap();
        let text = String::from_utf8_lossy(&buf[..n]);
        assert!(
            text.starts_with("HTTP/1.1 200") && text.ends_with("ok"),
            "{text}"
        );
    }

    /// Whether the server closes `stream` (EOF or reset) within `within`, reading nothing.
    async fn closed_within(stream: &mut tokio::net::TcpStream, within: Duration) -> bool {
        let mut buf = [0u8; 64];
        match tokio::time::timeout(within, stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => true,
            Ok(Ok(n)) => panic!("the server sent {n} bytes"),
            Err(_) => false,
        }
    }

    fn caps_options(total: usize, per_peer: usize, handshakes: usize) -> HttpsOptions {
        HttpsOptions {
            max_connections: Some(total),
            max_connections_per_peer: per_peer,
            max_handshakes_per_peer: handshakes,
            // Long enough that no held connection is closed for idling during a test.
            keep_alive: KeepAlive::Timeout(Duration::from_secs(30)),
            client_request_timeout: Duration::from_secs(30),
            tls_handshake_timeout: Duration::from_secs(30),
            ..test_options()
        }
    }

    #[actix_rt::test]
    async fn a_peer_past_its_connection_cap_is_closed_and_others_are_served() {
        let opts = caps_options(100, 4, 4);
        let metrics = opts.metrics.clone();
        let server = TestServer::start(opts).await;
        let mut held = Vec::new();
        for _ in 0..4 {
            let mut stream = tls_connect(&server, LOCAL).await.unwrap();
            get_ok(&mut stream).await;
            held.push(stream);
        }
        assert_eq!(metrics.open.get(), 4);

        // The fifth is closed before anything of it is read: its ClientHello gets no
        // answer, however long the handshake would be allowed.
        for _ in 0..3 {
            let mut fifth = tcp_from(server.addr, LOCAL).await.unwrap();
            assert!(closed_within(&mut fifth, Duration::from_secs(5)).await);
            assert!(tls_connect(&server, LOCAL).await.is_err());
        }
        // Another peer is served all along, and the held connections still work.
        let mut other = tls_connect(&server, OTHER).await.unwrap();
        get_ok(&mut other).await;
        get_ok(&mut held[0]).await;

        // Once one of them closes, the peer may connect again.
        drop(held.pop());
        let mut again = None;
        for _ in 0..50 {
            if let Ok(mut stream) = tls_connect(&server, LOCAL).await {
                get_ok(&mut stream).await;
                again = Some(stream);
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(
            again.is_some(),
            "a place freed by a closed connection is reused"
        );
        server.stop().await;
    }

    #[actix_rt::test]
    async fn the_total_cap_is_shared_by_every_peer() {
        let server = TestServer::start(caps_options(4, 2, 2)).await;
        let mut held = Vec::new();
        for from in [LOCAL, LOCAL, OTHER, OTHER] {
            held.push(tls_connect(&server, from).await.unwrap());
        }
        let mut third_peer = tcp_from(server.addr, [127, 0, 0, 3]).await.unwrap();
        assert!(closed_within(&mut third_peer, Duration::from_secs(5)).await);
        drop(held);
        server.stop().await;
    }

    #[actix_rt::test]
    async fn stalled_handshakes_hold_only_their_peers_places() {
        let opts = HttpsOptions {
            tls_handshake_timeout: Duration::from_secs(2),
            ..caps_options(100, 20, 2)
        };
        let metrics = opts.metrics.clone();
        let server = TestServer::start(opts).await;
        // Handshakes that send the first byte of a ClientHello and stop.
        let mut stalled = Vec::new();
        for _ in 0..2 {
            let mut stream = tcp_from(server.addr, LOCAL).await.unwrap();
            stream.write_all(&[TLS_HANDSHAKE_RECORD]).await.unwrap();
            stalled.push(stream);
        }
        while metrics.open.get() < 2 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        // The same peer's next handshake waits for one of its places...
        let same_peer = tokio::spawn({
            let (addr, config) = (server.addr, tls_client_config(&server.cert_pem));
            async move { tls_connect_with(addr, LOCAL, config).await }
        });
        // ...while another peer's goes through at once, the stalled ones still held.
        let mut other = tls_connect(&server, OTHER).await.unwrap();
        get_ok(&mut other).await;
        for stream in &mut stalled {
            assert!(!closed_within(stream, Duration::from_millis(10)).await);
        }
        assert!(!same_peer.is_finished());
        // The stalled ones time out, and the waiting one gets its place and is served.
        for stream in &mut stalled {
            assert!(closed_within(stream, Duration::from_secs(10)).await);
        }
        let mut waited = same_peer.await.unwrap().unwrap();
        get_ok(&mut waited).await;
        server.stop().await;
    }

    /// Reads until the server ends the connection; what it sent (a `408` at most).
    async fn until_closed(
        stream: &mut tokio_rustls::client::TlsStream<tokio::net::TcpStream>,
    ) -> Vec<u8> {
        let mut received = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut received));
        // A reset instead of a TLS close_notify is an end too.
        let _ = read.await.expect("the server closed the idle connection");
        received
    }

    #[actix_rt::test]
    async fn idle_connections_are_closed_whatever_the_client_sends_in_between() {
        let opts = HttpsOptions {
            keep_alive: KeepAlive::Timeout(Duration::from_millis(300)),
            client_request_timeout: Duration::from_secs(1),
            ..caps_options(100, 20, 20)
        };
        let metrics = opts.metrics.clone();
        let server = TestServer::start(opts).await;
        // Handshake done, no request ever: closed (after a 408).
        let mut silent = tls_connect(&server, LOCAL).await.unwrap();
        let said = String::from_utf8_lossy(&until_closed(&mut silent).await).into_owned();
        assert!(
            said.is_empty() || said.starts_with("HTTP/1.1 408"),
            "{said}"
        );
        // One request, then nothing: closed after the keep-alive.
        let mut kept = tls_connect(&server, LOCAL).await.unwrap();
        get_ok(&mut kept).await;
        until_closed(&mut kept).await;
        // An HTTP/2 preface and pings inside the session are no request: closed too.
        let mut pinging = tls_connect(&server, LOCAL).await.unwrap();
        let _ = pinging.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").await;
        until_closed(&mut pinging).await;
        for _ in 0..100 {
            if metrics.open.get() == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(metrics.open.get(), 0, "every idle connection was closed");
        server.stop().await;
    }

    #[actix_rt::test]
    async fn a_client_that_stops_reading_is_closed_after_the_stall_timeout() {
        let opts = HttpsOptions {
            write_stall_timeout: Duration::from_millis(500),
            ..caps_options(100, 20, 20)
        };
        let metrics = opts.metrics.clone();
        let server = TestServer::start(opts).await;
        // A small receive window, so that the server's writes stall soon.
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(4096).unwrap();
        let tcp = socket.connect(server.addr).await.unwrap();
        let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
        let mut stream =
            tokio_rustls::TlsConnector::from(Arc::new(tls_client_config(&server.cert_pem)))
                .connect(name, tcp)
                .await
                .unwrap();
        stream
            .write_all(b"GET /big HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .await
            .unwrap();
        assert_eq!(metrics.open.get(), 1);
        // Reading nothing, the client holds its answer up; the server gives up on it.
        let mut closed = false;
        for _ in 0..100 {
            if metrics.open.get() == 0 {
                closed = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(
            closed,
            "the connection of a client that reads nothing is closed"
        );
        // What the client reads now ends before the whole answer.
        let mut received = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut received))
            .await
            .expect("the stream ends");
        assert!(received.len() < BIG_BODY, "{} bytes", received.len());
        server.stop().await;
    }

    #[actix_rt::test]
    async fn tls_1_2_and_1_3_are_both_accepted() {
        // Versions below 1.2 do not exist in rustls, so "1.2 and 1.3 only" reduces to
        // both of these handshakes succeeding.
        let server = TestServer::start(test_options()).await;
        for version in [
            reqwest::tls::Version::TLS_1_2,
            reqwest::tls::Version::TLS_1_3,
        ] {
            let client = server.client(|b| b.min_tls_version(version).max_tls_version(version));
            let response = client.get(server.url("127.0.0.1")).send().await.unwrap();
            assert_eq!(response.text().await.unwrap(), "ok", "{version:?}");
        }
        server.stop().await;
    }
}
