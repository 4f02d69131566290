//! The API listener ([`https_server`]): HTTPS only. Every accepted TCP connection first
//! passes a small guard that peeks at its first byte: a TLS handshake record (`0x16`)
//! goes on to the TLS acceptor and the actix-web application; something that looks like
//! plain HTTP gets a complete `400` JSON answer saying that HTTPS is required and is
//! closed, never reaching the application; anything else, or silence, is dropped.
//!
//! No byte received on the API port reaches the application unless it arrived inside a
//! completed TLS session.

use std::{io, net::SocketAddr, time::Duration};

use actix_http::{error::DispatchError, HttpService, Request, Response, TlsAcceptorConfig};
use actix_rt::net::TcpStream;
use actix_server::{Server, ServerBuilder};
use actix_service::{
    fn_service, map_config, IntoServiceFactory, ServiceFactory, ServiceFactoryExt,
};
use actix_tls::accept::TlsError;
use actix_web::{
    body::MessageBody,
    dev::{AppConfig, Service},
    http::KeepAlive,
};
use rustls::ServerConfig;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

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

/// Tuning of the API listener. `Default` gives the values documented on each field.
#[derive(Debug, Clone)]
pub struct HttpsOptions {
    /// Worker threads; `None` means one per available CPU (actix-server's default).
    pub workers: Option<usize>,
    /// HTTP/1.1 keep-alive and HTTP/2 ping interval for idle connections. Default 5 s.
    pub keep_alive: KeepAlive,
    /// Slow-client guard: time allowed for a request head to arrive once the TLS session
    /// is up; an idle or trickling client gets `408` and is closed. Default 5 s.
    pub client_request_timeout: Duration,
    /// Time allowed for a connection's orderly close (TLS `close_notify`) before it is
    /// dropped. Default 1 s, as actix-web's own server.
    pub client_disconnect_timeout: Duration,
    /// Time allowed for the TLS handshake. The same bound applies, separately, to the wait
    /// for the first byte before the handshake (so a silent client is dropped) and to the
    /// answer to a plain-HTTP client. Default 3 s (actix-tls's default).
    pub tls_handshake_timeout: Duration,
    /// Connections served at once by each worker; further ones wait in the listen backlog.
    /// Default 25 000 (actix-server's default).
    pub max_connections_per_worker: usize,
    /// After [`actix_server::ServerHandle::stop`] with `graceful` (SIGINT or SIGTERM),
    /// in-flight requests get this long to finish before connections are dropped; rounded
    /// up to whole seconds. Default 25 s: shorter than the 30 s that common supervisors
    /// (Kubernetes, Docker) wait before SIGKILL, so shutdown stays graceful under them.
    pub shutdown_timeout: Duration,
}

impl Default for HttpsOptions {
    fn default() -> Self {
        Self {
            workers: None,
            keep_alive: KeepAlive::Timeout(Duration::from_secs(5)),
            client_request_timeout: Duration::from_secs(5),
            client_disconnect_timeout: Duration::from_secs(1),
            tls_handshake_timeout: Duration::from_secs(3),
            max_connections_per_worker: 25_000,
            shutdown_timeout: Duration::from_secs(25),
        }
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
/// `opts.max_connections_per_worker` is 0; otherwise any error reading the listener's
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
    if opts.max_connections_per_worker == 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "max_connections_per_worker must be at least 1",
        ));
    }
    builder = builder
        .max_concurrent_connections(opts.max_connections_per_worker)
        .shutdown_timeout(ceil_secs(opts.shutdown_timeout));
    builder = builder.disable_signals();
    Ok(listen_https(builder, listener, tls, app_factory, &opts)?.run())
}

fn ceil_secs(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

/// Adds the API service on `listener` to `builder`; the per-connection part of
/// [`https_server`], mirroring actix-web's `HttpServer::listen_rustls_0_23` with the
/// plain-HTTP guard placed in front of the TLS acceptor.
fn listen_https<F, I, S, B>(
    builder: ServerBuilder,
    listener: std::net::TcpListener,
    mut tls: ServerConfig,
    app_factory: F,
    opts: &HttpsOptions,
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
    // actix-http prepends `h2` and `http/1.1` itself and then appends whatever the config
    // lists; clearing ours avoids advertising each protocol twice.
    tls.alpn_protocols.clear();
    let shutdown = builder.graceful_shutdown_signal();
    let opts = opts.clone();

    builder.listen(format!("recruitd-api-{addr}"), listener, move || {
        let shutdown = shutdown.clone();
        let host = host.clone();
        let app = app_factory()
            .into_factory()
            .map_err(|err| err.into().error_response());

        let http = HttpService::build()
            // On graceful shutdown, HTTP/1 connections stop being kept alive and close
            // after their current response instead of holding workers until the
            // shutdown timeout (actix-http does not use this signal for HTTP/2).
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
            .finish(map_config(app, move |_| {
                AppConfig::__priv_test_new(true, host.clone(), addr)
            }))
            .rustls_0_23_with_config(
                tls.clone(),
                TlsAcceptorConfig::default().handshake_timeout(opts.tls_handshake_timeout),
            );

        let first_byte_timeout = opts.tls_handshake_timeout;
        fn_service(move |stream: TcpStream| async move {
            admit_tls_only(stream, first_byte_timeout)
                .await
                .map_err(TlsError::<io::Error, DispatchError>::Tls)
        })
        .and_then(http)
    })
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

    /// A running API server on 127.0.0.1 with one route, `GET /ok`, counting its calls.
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
    async fn https_is_served_over_http1_and_http2() {
        let server = TestServer::start(test_options()).await;

        // Default ALPN offer (h2, http/1.1): the server picks h2. Through the DNS name SAN.
        let addr = server.addr;
        let h2 = server.client(|b| b.resolve("localhost", addr));
        let response = h2.get(server.url("localhost")).send().await.unwrap();
        assert_eq!(response.version(), reqwest::Version::HTTP_2);
        assert_eq!(response.text().await.unwrap(), "ok");

        // HTTP/1.1 only. Through the IP address SAN.
        let h1 = server.client(|b| b.http1_only());
        let response = h1.get(server.url("127.0.0.1")).send().await.unwrap();
        assert_eq!(response.version(), reqwest::Version::HTTP_11);
        assert_eq!(response.text().await.unwrap(), "ok");

        assert_eq!(server.hits.load(Ordering::SeqCst), 2);

        // The application knows it is served over TLS (URL generation relies on it).
        let scheme_url = format!("https://127.0.0.1:{}/scheme", server.addr.port());
        let response = h1.get(scheme_url).send().await.unwrap();
        assert_eq!(response.text().await.unwrap(), "https");
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
