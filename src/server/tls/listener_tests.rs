//! Tests of the API listener: plain HTTP refused, HTTP/1.1 over TLS served, connection caps, stalled and idle clients closed.

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
