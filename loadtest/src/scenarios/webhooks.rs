//! `sync --mode webhooks`: what an integrator's webhook receiver sees.
//!
//! The load generator listens on loopback (plain HTTP: the server runs with
//! `--webhooks-allow-insecure`) and registers `--endpoints` endpoints on it, each at a
//! path of its own. Every delivery is checked as the contract says a receiver checks it
//! ([`crate::receiver::Ledger`]: the Standard Webhooks signature with the secret shown
//! at registration, the timestamp's freshness, the order, a repeated `webhook-id`),
//! answered 200 when it is accepted or repeated and 400 otherwise.
//!
//! Two measurements, each optional, as in `--mode changes`:
//! - **catch-up**: every endpoint is replayed from `--since`, and changes/s is the
//!   changes the receiver accepted over the wall time until each endpoint reached the
//!   feed's head.
//! - **live**: the `write` scenario runs at `--write-rate`; each acknowledged write is
//!   matched, per endpoint, to the first delivery of its record that shows it, and the
//!   latency is measured from when the write was *sent* to its receipt (an upper bound
//!   of commit-to-receipt, as the feed's).
//!
//! Afterwards every endpoint must be at the feed's head with nothing refused; the
//! records the first endpoint received are checked against GET as the feed's mirror is,
//! and the endpoints are removed.

use super::changes::{Deliveries, Mirror};
use crate::http::Pool;
use crate::receiver::{secret_bytes, Headers, Ledger, Verdict as Received};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Method;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One endpoint, as the receiver keeps it.
pub struct Endpoint {
    pub id: String,
    pub ledger: Ledger,
    /// Changes accepted.
    pub changes: u64,
    /// Its records' deliveries (`updated_at`, when), for the writes to be matched to.
    pub deliveries: Deliveries,
    /// The first endpoint's records as last delivered (checked against GET).
    pub mirror: Option<Mirror>,
}

/// The load generator's receiver: its endpoints by their path's index.
pub struct Receiver {
    pub url: String,
    pub endpoints: Mutex<Vec<Endpoint>>,
}

#[derive(Deserialize)]
struct Delivery<'a> {
    #[serde(borrow)]
    data: Vec<Change<'a>>,
}

#[derive(Deserialize)]
struct Change<'a> {
    entity: String,
    id: String,
    op: String,
    #[serde(borrow, default)]
    record: Option<&'a RawValue>,
}

impl Receiver {
    /// Listens on a free loopback port.
    pub async fn start() -> anyhow::Result<Arc<Receiver>> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let receiver = Arc::new(Receiver {
            url: format!("http://{}", listener.local_addr()?),
            endpoints: Mutex::new(Vec::new()),
        });
        let serving = receiver.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let _ = tcp.set_nodelay(true);
                let r = serving.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let r = r.clone();
                        async move { Ok::<_, hyper::Error>(r.answer(req).await) }
                    });
                    let io = hyper_util::rt::TokioIo::new(tcp);
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(io, service)
                        .await;
                });
            }
        });
        Ok(receiver)
    }

    async fn answer(
        &self,
        req: hyper::Request<hyper::body::Incoming>,
    ) -> hyper::Response<Full<Bytes>> {
        let at = Instant::now();
        let index: Option<usize> = req
            .uri()
            .path()
            .strip_prefix("/e/")
            .and_then(|i| i.parse().ok());
        let header = |name: &str| {
            req.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string()
        };
        let (id, timestamp, signature) = (
            header("webhook-id"),
            header("webhook-timestamp"),
            header("webhook-signature"),
        );
        let body = match req.into_body().collect().await {
            Ok(b) => b.to_bytes(),
            Err(_) => return status(400),
        };
        let now = chrono::Utc::now().timestamp();
        let mut endpoints = self.endpoints.lock().expect("receiver lock");
        let Some(e) = index.and_then(|i| endpoints.get_mut(i)) else {
            return status(404);
        };
        let h = Headers {
            id: &id,
            timestamp: &timestamp,
            signature: &signature,
        };
        match e.ledger.receive(&h, &body, now) {
            Received::Accepted { changes } => {
                e.changes += changes as u64;
                e.take(&body, at);
                status(200)
            }
            Received::Duplicate => status(200),
            other => {
                eprintln!("webhooks: endpoint {} refused a delivery: {other:?}", e.id);
                status(400)
            }
        }
    }
}

impl Endpoint {
    /// Keeps what an accepted delivery shows.
    fn take(&mut self, body: &[u8], at: Instant) {
        let Ok(d) = serde_json::from_slice::<Delivery>(body) else {
            return;
        };
        for c in d.data {
            let Some(entity) = crate::data::ENTITIES
                .iter()
                .copied()
                .find(|e| *e == c.entity)
            else {
                continue;
            };
            let shown = match (c.op.as_str(), c.record) {
                ("upsert", Some(r)) => {
                    if let Ok(u) = super::sync::updated_at(r.get()) {
                        self.deliveries
                            .entry((entity, c.id.clone()))
                            .or_default()
                            .push((u.into_owned(), at));
                    }
                    Some(super::changes::hash_of(r.get().as_bytes()))
                }
                _ => None,
            };
            if let Some(m) = self.mirror.as_mut() {
                m.insert((entity, c.id), shown);
            }
        }
    }
}

fn status(code: u16) -> hyper::Response<Full<Bytes>> {
    let mut r = hyper::Response::new(Full::new(Bytes::new()));
    *r.status_mut() = hyper::StatusCode::from_u16(code).expect("a status");
    r
}

/// Registers `n` endpoints on `receiver` (the first keeps a mirror).
pub async fn register(pool: &Pool, receiver: &Receiver, n: usize) -> anyhow::Result<()> {
    for i in 0..n {
        let body = serde_json::json!({
            "url": format!("{}/e/{i}", receiver.url),
            "description": "recruitd-loadtest",
        });
        let a = pool
            .send(
                Method::POST,
                "/v1/webhooks",
                Some(Bytes::from(body.to_string())),
            )
            .await
            .map_err(|f| anyhow::anyhow!("POST /v1/webhooks: {f}"))?;
        if a.status != 201 {
            anyhow::bail!(
                "POST /v1/webhooks answered {} (the key needs webhooks:write, the server \
                 --webhooks-allow-insecure): {}",
                a.status,
                String::from_utf8_lossy(&a.body)
            );
        }
        let v = a.json()?;
        let data = &v["data"];
        let secret = data["secret"].as_str().and_then(secret_bytes);
        let (Some(id), Some(position), Some(secret)) =
            (data["id"].as_str(), data["position"].as_str(), secret)
        else {
            anyhow::bail!("POST /v1/webhooks: an answer without id, position or secret: {v}");
        };
        receiver.endpoints.lock().expect("lock").push(Endpoint {
            id: id.to_string(),
            ledger: Ledger::new(position, vec![secret]),
            changes: 0,
            deliveries: Deliveries::default(),
            mirror: (i == 0).then(Mirror::default),
        });
    }
    Ok(())
}

/// Replays every endpoint from `since` (the receiver expects deliveries from there).
pub async fn replay(pool: &Pool, receiver: &Receiver, since: &str) -> anyhow::Result<()> {
    let ids: Vec<String> = {
        let mut endpoints = receiver.endpoints.lock().expect("lock");
        for e in endpoints.iter_mut() {
            let secrets = std::mem::replace(&mut e.ledger, Ledger::new("", vec![])).secrets();
            e.ledger = Ledger::new(since, secrets);
        }
        endpoints.iter().map(|e| e.id.clone()).collect()
    };
    for id in ids {
        let body = serde_json::json!({ "since": since }).to_string();
        let path = format!("/v1/webhooks/{id}/replay");
        let a = pool
            .send(Method::POST, &path, Some(Bytes::from(body)))
            .await
            .map_err(|f| anyhow::anyhow!("POST {path}: {f}"))?;
        if a.status != 200 {
            anyhow::bail!("POST {path} answered {}", a.status);
        }
    }
    Ok(())
}

/// Waits until every endpoint's deliveries reach `head` (a feed token), at most
/// `within`; the endpoints not there by then.
pub async fn caught_up(receiver: &Receiver, head: &str, within: Duration) -> Vec<String> {
    let deadline = Instant::now() + within;
    loop {
        let behind: Vec<String> = receiver
            .endpoints
            .lock()
            .expect("lock")
            .iter()
            .filter(|e| e.ledger.expected_since() != head)
            .map(|e| e.id.clone())
            .collect();
        if behind.is_empty() || Instant::now() >= deadline {
            return behind;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Removes the endpoints (a workspace has at most 20).
pub async fn remove(pool: &Pool, receiver: &Receiver) {
    let ids: Vec<String> = receiver
        .endpoints
        .lock()
        .expect("lock")
        .iter()
        .map(|e| e.id.clone())
        .collect();
    for id in ids {
        let _ = pool
            .send(Method::DELETE, &format!("/v1/webhooks/{id}"), None)
            .await;
    }
}
