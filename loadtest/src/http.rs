//! The measured HTTP path: HTTP/1.1 over rustls on hyper's connection-level client.
//!
//! Each in-flight request owns one keep-alive connection (HTTP/1.1 has no multiplexing),
//! leased from a [`Pool`] that opens connections up to a bound and hands them out in
//! turn (least recently used first, so that none idles into the server's keep-alive
//! timeout and a burst never pays a handshake). A connection belongs to the thread
//! that opened it (the client shards run one single-threaded runtime each), so the pool
//! keeps one queue per thread. Nothing sits between the driver's clock and the socket:
//! no redirect policy, no timeouts beyond the one asked for, no hidden retries except one
//! for a GET whose reused connection turns out to have been closed by the server's
//! keep-alive timer before the request reached it.

use anyhow::{bail, Context};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE, HOST};
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::sync::{Semaphore, SemaphorePermit};
use tokio_rustls::TlsConnector;

/// Where and how to reach the API: address, TLS trust and the key; and, for a cluster,
/// the other nodes its connections are spread over ([`Target::spread_over`]).
#[derive(Clone)]
pub struct Target {
    pub base: String,
    addr: String,
    host_header: HeaderValue,
    server_name: ServerName<'static>,
    tls: TlsConnector,
    auth: HeaderValue,
    timeout: Duration,
    /// Other nodes: each new connection goes to the next of this one and them.
    others: Vec<Target>,
    turn: Arc<std::sync::atomic::AtomicUsize>,
}

impl Target {
    /// The same target, its requests given `timeout` (the TLS set-up shared).
    pub fn with_timeout(&self, timeout: Duration) -> Self {
        Target {
            timeout,
            others: self
                .others
                .iter()
                .map(|o| o.with_timeout(timeout))
                .collect(),
            ..self.clone()
        }
    }

    /// This target and `others` (nodes of one cluster) in turn: each new connection
    /// goes to the next of them.
    pub fn spread_over(mut self, others: Vec<Target>) -> Self {
        self.others = others;
        self
    }

    /// `base` must be `https://host[:port]`; plain HTTP is refused by the server anyway.
    pub fn new(base: &str, cacert: &Path, key: &str, timeout: Duration) -> anyhow::Result<Self> {
        let base = base.trim_end_matches('/').to_string();
        let Some(rest) = base.strip_prefix("https://") else {
            bail!("--url must start with https:// (recruitd serves HTTPS only): {base}");
        };
        if rest.contains('/') {
            bail!("--url is the server's base address without a path: {base}");
        }
        // host[:port], the host possibly a bracketed IPv6 literal.
        let (host, port) = match rest.strip_prefix('[') {
            Some(r) => {
                let (h, p) = r.split_once(']').context("unclosed [ in --url")?;
                (h, p.strip_prefix(':'))
            }
            None => match rest.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (rest, None),
            },
        };
        let port: u16 = match port {
            Some(p) => p.parse().with_context(|| format!("port of --url {base}"))?,
            None => 443,
        };
        let addr = if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        let server_name = ServerName::try_from(host.to_string())
            .with_context(|| format!("host of --url {base}"))?;
        let pem = std::fs::read(cacert)
            .with_context(|| format!("reading the CA certificate {}", cacert.display()))?;
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(&pem) {
            roots
                .add(cert.with_context(|| format!("parsing {}", cacert.display()))?)
                .context("adding the CA certificate")?;
        }
        if roots.is_empty() {
            bail!("{} holds no certificate", cacert.display());
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Target {
            host_header: HeaderValue::from_str(rest)?,
            auth: HeaderValue::from_str(&format!("Bearer {key}"))
                .context("the API key is not a valid header value")?,
            base: base.clone(),
            addr,
            server_name,
            tls: TlsConnector::from(Arc::new(config)),
            timeout,
            others: Vec::new(),
            turn: Default::default(),
        })
    }

    /// Opens one connection to the next node in turn (this one when there are no
    /// others).
    pub async fn connect(&self) -> anyhow::Result<Conn> {
        let turn = self.turn.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        match turn % (self.others.len() + 1) {
            0 => self.connect_here().await,
            i => self.others[i - 1].connect_here().await,
        }
    }

    /// Opens one connection: TCP (no Nagle), TLS, HTTP/1.1.
    async fn connect_here(&self) -> anyhow::Result<Conn> {
        let tcp = TcpStream::connect(&self.addr)
            .await
            .with_context(|| format!("connecting to {}", self.addr))?;
        tcp.set_nodelay(true)?;
        let tls = self
            .tls
            .connect(self.server_name.clone(), tcp)
            .await
            .with_context(|| format!("TLS handshake with {}", self.base))?;
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await?;
        tokio::spawn(async move {
            // Ends when the server closes the connection or the sender is dropped.
            let _ = conn.await;
        });
        Ok(Conn {
            sender,
            used: 0,
            host: self.host_header.clone(),
        })
    }
}

/// One keep-alive connection.
pub struct Conn {
    sender: SendRequest<Full<Bytes>>,
    used: u64,
    /// The `Host` of the node it goes to.
    host: HeaderValue,
}

/// An answer: status and the whole body.
pub struct Answer {
    pub status: u16,
    pub body: Bytes,
}

impl Answer {
    /// The API's `error.code`, when the body is an error envelope.
    pub fn error_code(&self) -> Option<String> {
        #[derive(serde::Deserialize)]
        struct Env {
            error: Err,
        }
        #[derive(serde::Deserialize)]
        struct Err {
            code: String,
        }
        serde_json::from_slice::<Env>(&self.body)
            .ok()
            .map(|e| e.error.code)
    }

    pub fn json(&self) -> anyhow::Result<serde_json::Value> {
        Ok(serde_json::from_slice(&self.body)?)
    }
}

/// Why a request got no HTTP answer.
#[derive(Debug)]
pub enum Failure {
    Connect(String),
    Transport(String),
    Timeout,
}

impl Failure {
    /// A short label for reports (errors are grouped by it).
    pub fn label(&self) -> &'static str {
        match self {
            Failure::Connect(_) => "connect",
            Failure::Transport(_) => "transport",
            Failure::Timeout => "timeout",
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Connect(e) => write!(f, "connect: {e}"),
            Failure::Transport(e) => write!(f, "transport: {e}"),
            Failure::Timeout => write!(f, "timeout"),
        }
    }
}

/// Connections to one target, opened on demand up to `max`, used in turn.
pub struct Pool {
    pub target: Arc<Target>,
    idle: Mutex<HashMap<ThreadId, VecDeque<Conn>>>,
    slots: Semaphore,
}

impl Pool {
    pub fn new(target: Arc<Target>, max: usize) -> Self {
        Pool {
            target,
            idle: Mutex::new(HashMap::new()),
            slots: Semaphore::new(max.max(1)),
        }
    }

    /// Opens `n` connections for the calling thread ahead of time, so handshakes do not
    /// land in measurements.
    pub async fn warm(&self, n: usize) -> anyhow::Result<()> {
        let mut opened = Vec::with_capacity(n);
        for _ in 0..n {
            opened.push(self.target.connect().await?);
        }
        self.idle
            .lock()
            .expect("pool lock")
            .entry(std::thread::current().id())
            .or_default()
            .extend(opened);
        Ok(())
    }

    /// Waits for a free slot (requests queue here when every connection is busy: in an
    /// open-loop run that wait is part of the measured latency).
    pub async fn lease(&self) -> Lease<'_> {
        let permit = self
            .slots
            .acquire()
            .await
            .expect("pool semaphore is never closed");
        let conn = self
            .idle
            .lock()
            .expect("pool lock")
            .get_mut(&std::thread::current().id())
            .and_then(VecDeque::pop_front);
        Lease {
            pool: self,
            conn,
            _permit: permit,
        }
    }

    /// One request on a leased connection (convenience for set-up code).
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
    ) -> Result<Answer, Failure> {
        self.lease().await.send(method, path, body).await
    }
}

/// A connection slot held for one request (or a sequence of them).
pub struct Lease<'a> {
    pool: &'a Pool,
    conn: Option<Conn>,
    _permit: SemaphorePermit<'a>,
}

impl Lease<'_> {
    pub async fn send(
        &mut self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
    ) -> Result<Answer, Failure> {
        let timeout = self.pool.target.timeout;
        match tokio::time::timeout(timeout, self.send_inner(method, path, body)).await {
            Ok(r) => r,
            Err(_) => {
                // The connection is in an unknown state: never reuse it.
                self.conn = None;
                Err(Failure::Timeout)
            }
        }
    }

    async fn send_inner(
        &mut self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
    ) -> Result<Answer, Failure> {
        let idempotent = method == Method::GET;
        let mut attempts = 0;
        loop {
            attempts += 1;
            if self.conn.as_ref().is_none_or(|c| c.sender.is_closed()) {
                self.conn = Some(
                    self.pool
                        .target
                        .connect()
                        .await
                        .map_err(|e| Failure::Connect(format!("{e:#}")))?,
                );
            }
            let conn = self.conn.as_mut().expect("connected above");
            let reused = conn.used > 0;
            let req = self
                .pool
                .target
                .request(&conn.host, method.clone(), path, body.clone());
            let result = async {
                conn.sender.ready().await?;
                let res = conn.sender.send_request(req).await?;
                let status = res.status().as_u16();
                let body = res.into_body().collect().await?.to_bytes();
                Ok::<_, hyper::Error>(Answer { status, body })
            }
            .await;
            match result {
                Ok(a) => {
                    conn.used += 1;
                    return Ok(a);
                }
                Err(e) => {
                    self.conn = None;
                    // A keep-alive connection the server closed while it sat idle: the
                    // request never reached the application, so a GET is sent again.
                    let closed_idle = e.is_canceled() || e.is_incomplete_message() || e.is_closed();
                    if idempotent && reused && closed_idle && attempts == 1 {
                        continue;
                    }
                    return Err(Failure::Transport(e.to_string()));
                }
            }
        }
    }
}

impl Target {
    fn request(
        &self,
        host: &HeaderValue,
        method: Method,
        path: &str,
        body: Option<Bytes>,
    ) -> Request<Full<Bytes>> {
        let mut b = Request::builder()
            .method(method)
            .uri(path)
            .header(HOST, host.clone())
            .header(AUTHORIZATION, self.auth.clone());
        if body.is_some() {
            b = b.header(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
        b.body(Full::new(body.unwrap_or_default()))
            .expect("request parts are valid")
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        if let Some(c) = self.conn.take() {
            if !c.sender.is_closed() {
                self.pool
                    .idle
                    .lock()
                    .expect("pool lock")
                    .entry(std::thread::current().id())
                    .or_default()
                    .push_back(c);
            }
        }
    }
}

/// Percent-encodes a query value (everything but unreserved characters).
pub fn encode(value: &str) -> String {
    use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
    const VALUE: &AsciiSet = &NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'.')
        .remove(b'_')
        .remove(b'~');
    utf8_percent_encode(value, VALUE).to_string()
}
