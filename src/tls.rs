//! TLS: certificates, rustls configuration, and refusal of plain HTTP on the API port.
//!
//! # Layout
//!
//! - [`install_crypto_provider`]: makes rustls's `ring` provider the process default. The
//!   build uses `ring` only (no `aws-lc-rs`); call this once at start-up so that any rustls
//!   user that asks for the process default (HTTP clients, sqlx) finds the same provider.
//! - [`server_config`]: the rustls [`ServerConfig`] of the API. PEM files given by the
//!   operator (`--tls-cert`/`--tls-key`) are loaded; without them a self-signed pair for
//!   `localhost` and `127.0.0.1` is created once under `<data-dir>/tls/` and reused.
//!   TLS 1.2 and 1.3 only, ALPN `h2` and `http/1.1`, rustls defaults otherwise.
//! - [`https_server`]: the API listener. Every accepted TCP connection first passes a small
//!   guard that peeks at its first byte: a TLS handshake record (`0x16`) goes on to the TLS
//!   acceptor and the actix-web application; something that looks like plain HTTP gets a
//!   complete `400` JSON answer saying that HTTPS is required and is closed, never reaching
//!   the application; anything else, or silence, is dropped.
//!
//! # Invariants
//!
//! - No byte received on the API port reaches the application unless it arrived inside a
//!   completed TLS session.
//! - The generated private key is never readable by other users (mode `0600`, written to a
//!   fresh file so that a pre-existing file's permissions cannot leak into it).

use std::{
    fs,
    io::{self, Write as _},
    net::SocketAddr,
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

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
use anyhow::{bail, Context as _};
use rustls::{
    crypto::ring,
    pki_types::{pem::PemObject as _, CertificateDer, PrivateKeyDer},
    ServerConfig,
};
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

/// Installs rustls's `ring` provider as the process-wide default.
///
/// Idempotent: a second call, or a provider installed earlier by someone else, is fine
/// (rustls then keeps the first one; this build only links `ring`, so both are the same).
/// [`server_config`] does not depend on this (it names its provider explicitly); it exists
/// for rustls users that only consult the process default, such as HTTP clients.
pub fn install_crypto_provider() {
    // `Err` only means "already installed", which is the state we want.
    let _ = ring::default_provider().install_default();
}

/// Where the self-signed pair lives: `(<data-dir>/tls/cert.pem, <data-dir>/tls/key.pem)`.
pub fn self_signed_paths(data_dir: &Path) -> (PathBuf, PathBuf) {
    let dir = data_dir.join("tls");
    (dir.join("cert.pem"), dir.join("key.pem"))
}

/// Builds the API's rustls configuration.
///
/// With `cert` and `key` (the `--tls-cert`/`--tls-key` PEM files) those are loaded: `cert`
/// holds the certificate chain, leaf first; `key` one PKCS#8, PKCS#1 or SEC1 private key.
/// With neither, the self-signed pair at [`self_signed_paths`] is loaded, after being
/// generated if it does not exist yet. Exactly one of the two is an error.
///
/// Errors name the file at fault. The result enables TLS 1.2 and 1.3 only, advertises ALPN
/// `h2` then `http/1.1`, and otherwise keeps rustls's defaults.
pub fn server_config(
    data_dir: &Path,
    cert: Option<&Path>,
    key: Option<&Path>,
) -> anyhow::Result<ServerConfig> {
    let (cert_path, key_path) = match (cert, key) {
        (Some(cert), Some(key)) => (cert.to_path_buf(), key.to_path_buf()),
        (None, None) => ensure_self_signed(data_dir)?,
        (Some(cert), None) => bail!(
            "TLS certificate {} was given without a key: pass both --tls-cert and --tls-key, \
             or neither to use the generated self-signed pair",
            cert.display()
        ),
        (None, Some(key)) => bail!(
            "TLS key {} was given without a certificate: pass both --tls-cert and --tls-key, \
             or neither to use the generated self-signed pair",
            key.display()
        ),
    };

    let chain = load_cert_chain(&cert_path)?;
    let private_key = load_private_key(&key_path)?;

    // The provider is named rather than taken from the process default so that the result
    // does not depend on whether (or by whom) a default was installed first.
    let mut config = ServerConfig::builder_with_provider(Arc::new(ring::default_provider()))
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .context("rustls's ring provider does not support TLS 1.2 and 1.3")?
        .with_no_client_auth()
        .with_single_cert(chain, private_key)
        .with_context(|| {
            format!(
                "TLS certificate {} and key {} cannot be used together",
                cert_path.display(),
                key_path.display()
            )
        })?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// Returns the self-signed pair's paths, generating the pair first if there is none.
///
/// The certificate is renamed into place last, so its presence means a complete pair was
/// written: a key without a certificate can only be the leftover of an interrupted run and
/// is replaced, while a certificate without its key is an error (the operator may already
/// trust that certificate, so we do not silently swap it).
fn ensure_self_signed(data_dir: &Path) -> anyhow::Result<(PathBuf, PathBuf)> {
    let (cert_path, key_path) = self_signed_paths(data_dir);
    let cert_exists = exists(&cert_path)?;
    let key_exists = exists(&key_path)?;
    match (cert_exists, key_exists) {
        (true, true) => {
            warn_if_key_readable_by_others(&key_path);
            Ok((cert_path, key_path))
        }
        (true, false) => bail!(
            "self-signed TLS certificate {} exists but its key {} is missing; \
             remove the certificate to have a new pair generated",
            cert_path.display(),
            key_path.display()
        ),
        (false, _) => {
            generate_self_signed(&cert_path, &key_path)?;
            tracing::info!(
                cert = %cert_path.display(),
                key = %key_path.display(),
                "generated a self-signed TLS certificate for localhost and 127.0.0.1"
            );
            Ok((cert_path, key_path))
        }
    }
}

fn exists(path: &Path) -> anyhow::Result<bool> {
    path.try_exists()
        .with_context(|| format!("cannot check whether {} exists", path.display()))
}

/// Generates an ECDSA P-256 key and a certificate for `localhost` and `127.0.0.1`, and
/// writes them (key first, certificate last; see [`ensure_self_signed`]).
fn generate_self_signed(cert_path: &Path, key_path: &Path) -> anyhow::Result<()> {
    use rcgen::{
        CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, KeyPair,
        KeyUsagePurpose,
    };

    let key_pair = KeyPair::generate().context("cannot generate a TLS key pair")?;
    let mut params =
        CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .context("invalid subject alternative names for the self-signed certificate")?;
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, "recruitd self-signed (localhost)");
    params.distinguished_name = name;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    // rcgen's default validity (1975 to 4096) is accepted by most clients but looks like a
    // mistake in any certificate viewer; start a day early to absorb clock skew and last
    // ten years, which outlives any development setup this pair is meant for.
    let ymd = |date: chrono::NaiveDate| {
        use chrono::Datelike as _;
        // `month()` is 1..=12 and `day()` 1..=31: the narrowing casts cannot truncate.
        rcgen::date_time_ymd(date.year(), date.month() as u8, date.day() as u8)
    };
    let today = chrono::Utc::now().date_naive();
    params.not_before = ymd(today - chrono::Days::new(1));
    params.not_after = ymd(today + chrono::Days::new(3650));
    let cert = params
        .self_signed(&key_pair)
        .context("cannot sign the self-signed TLS certificate")?;

    let dir = cert_path
        .parent()
        .context("the TLS certificate path has no parent directory")?;
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    write_then_rename(key_path, key_pair.serialize_pem().as_bytes(), 0o600)?;
    write_then_rename(cert_path, cert.pem().as_bytes(), 0o644)?;
    Ok(())
}

/// Writes `contents` to a fresh sibling temporary file created with `mode` (on Unix), syncs
/// it and renames it over `path`, so that a crash never leaves a truncated PEM behind and a
/// pre-existing file's looser permissions never apply to the new contents.
fn write_then_rename(path: &Path, contents: &[u8], mode: u32) -> anyhow::Result<()> {
    let file_name = path
        .file_name()
        .with_context(|| format!("{} has no file name", path.display()))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(file_name);
    tmp_name.push(".tmp");
    let tmp = path.with_file_name(tmp_name);

    // A leftover from an interrupted run must go: `create_new` below refuses to reuse it,
    // because reusing would keep whatever permissions it has.
    match fs::remove_file(&tmp) {
        Ok(()) => {}
        Err(err) if err.kind() == io::ErrorKind::NotFound => {}
        Err(err) => return Err(err).with_context(|| format!("cannot remove {}", tmp.display())),
    }

    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(mode);
    }
    #[cfg(not(unix))]
    let _ = mode;

    let mut file = options
        .open(&tmp)
        .with_context(|| format!("cannot create {}", tmp.display()))?;
    file.write_all(contents)
        .and_then(|()| file.sync_all())
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    drop(file);
    fs::rename(&tmp, path)
        .with_context(|| format!("cannot move {} to {}", tmp.display(), path.display()))?;
    Ok(())
}

#[cfg(unix)]
fn warn_if_key_readable_by_others(key_path: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    if let Ok(meta) = fs::metadata(key_path) {
        if meta.permissions().mode() & 0o077 != 0 {
            tracing::warn!(
                key = %key_path.display(),
                mode = format_args!("{:o}", meta.permissions().mode() & 0o777),
                "the TLS private key is accessible to other users; chmod 600 it"
            );
        }
    }
}

#[cfg(not(unix))]
fn warn_if_key_readable_by_others(_key_path: &Path) {}

fn load_cert_chain(path: &Path) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let pem = fs::read(path)
        .with_context(|| format!("cannot read TLS certificate file {}", path.display()))?;
    let chain = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("invalid PEM in TLS certificate file {}", path.display()))?;
    if chain.is_empty() {
        bail!(
            "TLS certificate file {} contains no CERTIFICATE block",
            path.display()
        );
    }
    Ok(chain)
}

fn load_private_key(path: &Path) -> anyhow::Result<PrivateKeyDer<'static>> {
    let pem =
        fs::read(path).with_context(|| format!("cannot read TLS key file {}", path.display()))?;
    PrivateKeyDer::from_pem_slice(&pem).with_context(|| {
        format!(
            "TLS key file {} holds no usable private key (PKCS#8, PKCS#1 or SEC1 PEM)",
            path.display()
        )
    })
}

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

/// The complete HTTP/1.1 answer to a plain-HTTP client.
fn plain_http_refusal(request_id: &str) -> Vec<u8> {
    let body = serde_json::json!({
        "error": { "code": "BAD_REQUEST", "message": HTTPS_REQUIRED_MESSAGE },
        "request_id": request_id,
    })
    .to_string();
    format!(
        "HTTP/1.1 400 Bad Request\r\n\
         Content-Type: application/json\r\n\
         Content-Length: {}\r\n\
         Connection: close\r\n\
         \r\n\
         {body}",
        body.len()
    )
    .into_bytes()
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

    #[cfg(unix)]
    fn mode(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt as _;
        fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn self_signed_pair_is_generated_once_and_reused() {
        let data_dir = tempfile::tempdir().unwrap();
        let (cert_path, key_path) = self_signed_paths(data_dir.path());
        assert_eq!(cert_path, data_dir.path().join("tls").join("cert.pem"));
        assert_eq!(key_path, data_dir.path().join("tls").join("key.pem"));

        server_config(data_dir.path(), None, None).unwrap();
        let cert = fs::read(&cert_path).unwrap();
        let key = fs::read(&key_path).unwrap();
        assert!(cert.starts_with(b"-----BEGIN CERTIFICATE-----"));
        assert!(key.starts_with(b"-----BEGIN PRIVATE KEY-----"));
        #[cfg(unix)]
        assert_eq!(mode(&key_path), 0o600);

        server_config(data_dir.path(), None, None).unwrap();
        assert_eq!(
            fs::read(&cert_path).unwrap(),
            cert,
            "certificate was regenerated"
        );
        assert_eq!(fs::read(&key_path).unwrap(), key, "key was regenerated");
        // No temporary files are left beside the pair.
        let mut names: Vec<_> = fs::read_dir(cert_path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        assert_eq!(names, ["cert.pem", "key.pem"]);
    }

    #[test]
    fn leftover_key_without_certificate_is_replaced_but_lone_certificate_is_an_error() {
        let data_dir = tempfile::tempdir().unwrap();
        let (cert_path, key_path) = self_signed_paths(data_dir.path());
        fs::create_dir_all(key_path.parent().unwrap()).unwrap();
        fs::write(&key_path, "stale").unwrap();
        server_config(data_dir.path(), None, None).unwrap();
        assert_ne!(fs::read(&key_path).unwrap(), b"stale");
        #[cfg(unix)]
        assert_eq!(mode(&key_path), 0o600);

        fs::remove_file(&key_path).unwrap();
        let err = server_config(data_dir.path(), None, None).unwrap_err();
        assert!(
            format!("{err:#}").contains(&key_path.display().to_string()),
            "{err:#}"
        );
        assert!(cert_path.exists());
    }

    #[test]
    fn given_files_are_loaded_and_must_come_in_pairs() {
        // A pair generated elsewhere stands in for operator-provided files.
        let elsewhere = tempfile::tempdir().unwrap();
        server_config(elsewhere.path(), None, None).unwrap();
        let (cert, key) = self_signed_paths(elsewhere.path());

        let data_dir = tempfile::tempdir().unwrap();
        let config = server_config(data_dir.path(), Some(&cert), Some(&key)).unwrap();
        assert_eq!(
            config.alpn_protocols,
            [b"h2".to_vec(), b"http/1.1".to_vec()]
        );
        assert!(
            !data_dir.path().join("tls").exists(),
            "nothing is generated when files are given"
        );

        let only_cert = server_config(data_dir.path(), Some(&cert), None).unwrap_err();
        assert!(
            format!("{only_cert:#}").contains("without a key"),
            "{only_cert:#}"
        );
        let only_key = server_config(data_dir.path(), None, Some(&key)).unwrap_err();
        assert!(
            format!("{only_key:#}").contains("without a certificate"),
            "{only_key:#}"
        );
    }

    #[test]
    fn errors_name_the_file_at_fault() {
        let dir = tempfile::tempdir().unwrap();
        server_config(dir.path(), None, None).unwrap();
        let (cert, key) = self_signed_paths(dir.path());
        let missing = dir.path().join("missing.pem");
        let garbage = dir.path().join("garbage.pem");
        fs::write(&garbage, "not a pem file").unwrap();

        for (c, k, named) in [
            (&missing, &key, &missing),
            (&cert, &missing, &missing),
            (&garbage, &key, &garbage),
            (&cert, &garbage, &garbage),
            // Swapped: the key file holds no certificate, the certificate file no key.
            (&key, &cert, &key),
        ] {
            let err = server_config(dir.path(), Some(c), Some(k)).unwrap_err();
            let text = format!("{err:#}");
            assert!(text.contains(&named.display().to_string()), "{text}");
        }

        // A valid certificate with some other valid key: both files are named.
        let other = tempfile::tempdir().unwrap();
        server_config(other.path(), None, None).unwrap();
        let other_key = self_signed_paths(other.path()).1;
        let err = server_config(dir.path(), Some(&cert), Some(&other_key)).unwrap_err();
        let text = format!("{err:#}");
        assert!(text.contains(&cert.display().to_string()), "{text}");
        assert!(text.contains(&other_key.display().to_string()), "{text}");
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
