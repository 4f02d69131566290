//! Store outages, with PostgreSQL reached through a TCP proxy the test controls: the
//! proxy refuses connections (a stopped server) or stops forwarding bytes (a frozen
//! one, as under `kill -STOP`). Reads and searches keep answering from memory, writes
//! get 503 with `Retry-After` within a bounded time, and once the store is back, writes
//! succeed again without a restart and memory equals what the store holds.

use crate::helpers::*;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const OPEN: u8 = 0;
const FROZEN: u8 = 1;
const REFUSING: u8 = 2;

/// A TCP proxy to PostgreSQL whose behaviour the test switches.
struct Proxy {
    addr: SocketAddr,
    mode: Arc<AtomicU8>,
}

impl Proxy {
    async fn start(upstream: String) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mode = Arc::new(AtomicU8::new(OPEN));
        let m = mode.clone();
        actix_web::rt::spawn(async move {
            loop {
                let Ok((client, _)) = listener.accept().await else {
                    return;
                };
                if m.load(Ordering::SeqCst) == REFUSING {
                    drop(client);
                    continue;
                }
                let Ok(server) = TcpStream::connect(&upstream).await else {
                    continue;
                };
                let (cr, cw) = client.into_split();
                let (sr, sw) = server.into_split();
                actix_web::rt::spawn(pump(cr, sw, m.clone()));
                actix_web::rt::spawn(pump(sr, cw, m.clone()));
            }
        });
        Proxy { addr, mode }
    }

    fn set(&self, mode: u8) {
        self.mode.store(mode, Ordering::SeqCst);
    }
}

/// Copies one direction; holds bytes while frozen, hangs up when refusing.
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mode: Arc<AtomicU8>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match tokio::time::timeout(Duration::from_millis(50), from.read(&mut buf)).await {
            Err(_) => {
                if mode.load(Ordering::SeqCst) == REFUSING {
                    return;
                }
                continue;
            }
            Ok(Ok(0)) | Ok(Err(_)) => return,
            Ok(Ok(n)) => n,
        };
        loop {
            match mode.load(Ordering::SeqCst) {
                FROZEN => tokio::time::sleep(Duration::from_millis(20)).await,
                REFUSING => return,
                _ => break,
            }
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

/// `url` with its host and port replaced by `addr`.
fn via(url: &str, addr: SocketAddr) -> String {
    let (scheme, rest) = url.split_once("://").unwrap();
    let (authority, tail) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let userinfo = authority.rsplit_once('@').map(|(u, _)| format!("{u}@"));
    format!("{scheme}://{}{addr}{tail}", userinfo.unwrap_or_default())
}

/// The host and port of a URL.
fn host_port(url: &str) -> String {
    let rest = url.split_once("://").unwrap().1;
    let authority = &rest[..rest.find('/').unwrap_or(rest.len())];
    let hp = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if hp.contains(':') {
        hp.to_string()
    } else {
        format!("{hp}:5432")
    }
}

/// Reads and searches answer from memory whatever the store does.
async fn reads_answer(app: &TestApp) {
    let (s, body) = app.get("/v1/notes?limit=500", READ_KEY).await;
    assert_eq!(s, 200, "{body}");
    let (s, body) = app
        .get("/v1/search/phone?number=07700900123", READ_KEY)
        .await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(body["data"]["match_confidence"], "exact");
}

/// A write during the outage: 503 with an integer Retry-After, in bounded time.
async fn refused_in_time(app: &TestApp, text: &str) {
    let started = Instant::now();
    let (s, retry, body) = app.post_company_note(text).await;
    assert_error(s.try_into().unwrap(), &body, 503, "SERVICE_UNAVAILABLE");
    assert!(retry.is_some_and(|r| r.parse::<u64>().is_ok()));
    assert!(
        started.elapsed() < Duration::from_secs(12),
        "took {:?}",
        started.elapsed()
    );
}

/// Writes succeed again (the pool reconnects by itself) within a few seconds.
async fn writes_resume(app: &TestApp, text: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (s, _, body) = app.post_company_note(text).await;
        if s == 201 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "writes did not resume: {s} {body}"
        );
        actix_web::rt::time::sleep(Duration::from_millis(250)).await;
    }
}

#[actix_web::test]
async fn postgres_outages_spare_reads_and_refuse_writes_briefly() {
    let Some(Backend::Postgres(url)) = Backend::postgres().await else {
        eprintln!("{PG_ENV} not set: PostgreSQL outage test not run");
        return;
    };
    let proxy = Proxy::start(host_port(&url)).await;
    let app = spawn_app(Backend::Postgres(via(&url, proxy.addr))).await;
    app.import_ok(&example()).await;
    writes_resume(&app, "before").await;

    // Stopped: connections refused and existing ones cut.
    proxy.set(REFUSING);
    refused_in_time(&app, "while stopped").await;
    reads_answer(&app).await;
    refused_in_time(&app, "while stopped, again").await;
    proxy.set(OPEN);
    writes_resume(&app, "after the stop").await;

    // Frozen: connections stay open but nothing comes back.
    proxy.set(FROZEN);
    refused_in_time(&app, "while frozen").await;
    reads_answer(&app).await;
    proxy.set(OPEN);
    writes_resume(&app, "after the freeze").await;

    // What clients read is what the store holds: a fresh server on the same store (no
    // proxy) loads exactly the notes the running one shows.
    let (running, _) = app.paginate("notes", "limit=500", READ_KEY).await;
    let fresh = spawn_app(Backend::Postgres(url.clone())).await;
    let (loaded, _) = fresh.paginate("notes", "limit=500", READ_KEY).await;
    assert_eq!(running, loaded);
    let bodies: Vec<&str> = running
        .iter()
        .filter_map(|n| n["body_html"].as_str())
        .collect();
    for kept in ["before", "after the stop", "after the freeze"] {
        assert!(bodies.contains(&kept), "{kept} missing from {bodies:?}");
    }
    for refused in ["while stopped", "while stopped, again"] {
        assert!(
            !bodies.contains(&refused),
            "{refused} was refused but stored"
        );
    }
    Backend::Postgres(url).release().await;
}
