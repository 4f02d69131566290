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
//! Faults on purpose (`--fail-share`, `--slow-share`, `--reset-share`, `--hanging`):
//! deliveries answered 500 untaken, taken but answered after the server's deadline,
//! taken and cut off unanswered, or (the last endpoints) held 10 s and answered 503.
//! Repeats of a delivery whose 2xx went out in time are counted apart: the sender had
//! that acknowledgement, and only a crash before it was stored explains a repeat.
//!
//! Afterwards every endpoint must be at the feed's head with nothing refused; the
//! records the first endpoint received are checked against GET as the feed's mirror is,
//! and the endpoints are removed.

use super::changes::{Deliveries, Mirror};
use crate::cli::ReceiverFaults;
use crate::http::Pool;
use crate::receiver::{secret_bytes, Headers, Item, Ledger, Verdict as Received};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Method;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a hanging endpoint holds each delivery.
pub const HANG_FOR: Duration = Duration::from_secs(10);

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
    /// It hangs on every delivery (`--hanging`): left out of the completeness checks.
    pub hanging: bool,
    /// Deliveries answered with a fault on purpose: 500, slow, reset, hung.
    pub faulted: Faulted,
}

/// The faults an endpoint's receiver produced.
#[derive(Clone, Copy, Debug, Default)]
pub struct Faulted {
    pub failed: u64,
    pub slow: u64,
    pub reset: u64,
    pub hung: u64,
}

/// The load generator's receiver: its endpoints by their path's index, each behind a
/// lock of its own (one endpoint's deliveries come one at a time).
pub struct Receiver {
    pub url: String,
    endpoints: Mutex<Vec<Arc<Mutex<Endpoint>>>>,
    faults: ReceiverFaults,
}

/// A connection closed without an answer (`--reset-share`).
#[derive(Debug)]
struct Reset;

impl std::fmt::Display for Reset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection closed on purpose")
    }
}

impl std::error::Error for Reset {}

impl Receiver {
    /// Listens on a free loopback port.
    pub async fn start(faults: ReceiverFaults) -> anyhow::Result<Arc<Receiver>> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let receiver = Arc::new(Receiver {
            url: format!("http://{}", listener.local_addr()?),
            endpoints: Mutex::new(Vec::new()),
            faults,
        });
        let serving = receiver.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let _ = tcp.set_nodelay(true);
                let r = serving.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let r = r.clone();
                        async move { r.answer(req).await }
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

    /// Every endpoint, in registration order, through `f`.
    pub fn each<T>(&self, mut f: impl FnMut(&mut Endpoint) -> T) -> Vec<T> {
        let list: Vec<_> = self.endpoints.lock().expect("receiver lock").clone();
        list.iter()
            .map(|e| f(&mut e.lock().expect("endpoint lock")))
            .collect()
    }

    async fn answer(
        &self,
        req: hyper::Request<hyper::body::Incoming>,
    ) -> Result<hyper::Response<Full<Bytes>>, Reset> {
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
            Err(_) => return Ok(status(400)),
        };
        let endpoint = {
            let list = self.endpoints.lock().expect("receiver lock");
            index.and_then(|i| list.get(i).cloned())
        };
        let Some(endpoint) = endpoint else {
            return Ok(status(404));
        };
        let hanging = endpoint.lock().expect("endpoint lock").hanging;
        if hanging {
            endpoint.lock().expect("endpoint lock").faulted.hung += 1;
            tokio::time::sleep(HANG_FOR).await;
            return Ok(status(503));
        }
        let f = &self.faults;
        let roll: f64 = rand::random();
        if roll < f.fail {
            endpoint.lock().expect("endpoint lock").faulted.failed += 1;
            return Ok(status(500));
        }
        let slow = roll < f.fail + f.slow;
        let reset = !slow && roll < f.fail + f.slow + f.reset;
        let now = chrono::Utc::now().timestamp();
        let h = Headers {
            id: &id,
            timestamp: &timestamp,
            signature: &signature,
        };
        let refused = {
            let mut guard = endpoint.lock().expect("endpoint lock");
            let e = &mut *guard;
            let (deliveries, mirror) = (&mut e.deliveries, &mut e.mirror);
            let verdict = e
                .ledger
                .receive_with(&h, &body, now, |items| take(deliveries, mirror, items, at));
            if let Received::Accepted { changes } = verdict {
                e.changes += changes as u64;
            }
            if slow {
                e.faulted.slow += 1;
            } else if reset {
                e.faulted.reset += 1;
            } else if matches!(verdict, Received::Accepted { .. }) {
                e.ledger.answered(&id);
            }
            let taken = matches!(
                verdict,
                Received::Accepted { .. } | Received::Duplicate { .. }
            );
            if !taken {
                eprintln!(
                    "webhooks: endpoint {} refused a delivery: {verdict:?}",
                    e.id
                );
            }
            !taken
        };
        if refused {
            Ok(status(400))
        } else if slow {
            tokio::time::sleep(Duration::from_secs_f64(f.slow_secs)).await;
            Ok(status(200))
        } else if reset {
            Err(Reset)
        } else {
            Ok(status(200))
        }
    }
}

/// Keeps what an accepted delivery shows: each record's `updated_at` with the time it
/// came (for the writes to be matched to), and the first endpoint's mirror.
fn take(deliveries: &mut Deliveries, mirror: &mut Option<Mirror>, items: &[Item<'_>], at: Instant) {
    for c in items {
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
                    deliveries
                        .entry((entity, c.id.clone()))
                        .or_default()
                        .push((u.into_owned(), at));
                }
                Some(super::changes::hash_of(r.get().as_bytes()))
            }
            _ => None,
        };
        if let Some(m) = mirror.as_mut() {
            m.insert((entity, c.id.clone()), shown);
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
        let hanging = i >= n - receiver.faults.hanging;
        let endpoint = Endpoint {
            id: id.to_string(),
            ledger: Ledger::new(position, vec![secret]),
            changes: 0,
            deliveries: Deliveries::default(),
            mirror: (i == 0).then(Mirror::default),
            hanging,
            faulted: Faulted::default(),
        };
        let mut list = receiver.endpoints.lock().expect("receiver lock");
        list.push(Arc::new(Mutex::new(endpoint)));
    }
    Ok(())
}

/// Replays every endpoint from `since` (the receiver expects deliveries from there).
pub async fn replay(pool: &Pool, receiver: &Receiver, since: &str) -> anyhow::Result<()> {
    let ids: Vec<String> = receiver.each(|e| {
        let secrets = std::mem::replace(&mut e.ledger, Ledger::new("", vec![])).secrets();
        e.ledger = Ledger::new(since, secrets);
        e.id.clone()
    });
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

/// Waits until every endpoint's deliveries (but a hanging one's) reach `head` (a feed
/// token), at most `within`; the endpoints not there by then.
pub async fn caught_up(receiver: &Receiver, head: &str, within: Duration) -> Vec<String> {
    let deadline = Instant::now() + within;
    loop {
        let behind: Vec<String> = receiver
            .each(|e| (!e.hanging && e.ledger.expected_since() != head).then(|| e.id.clone()))
            .into_iter()
            .flatten()
            .collect();
        if behind.is_empty() || Instant::now() >= deadline {
            return behind;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Removes the endpoints (a workspace has at most 20).
pub async fn remove(pool: &Pool, receiver: &Receiver) {
    let ids: Vec<String> = receiver.each(|e| e.id.clone());
    for id in ids {
        let _ = pool
            .send(Method::DELETE, &format!("/v1/webhooks/{id}"), None)
            .await;
    }
}
