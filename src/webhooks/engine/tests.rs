use super::*;
use crate::webhooks::address::{self, Policy};
use crate::webhooks::deliverer::Reason;
use crate::webhooks::signature;
use actors::model::{Record, Workspace};
use actors::store::{ChangeSet, MemoryStore};
use parking_lot::Mutex;
use serde_json::{json, Value};
use std::collections::VecDeque;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const STAMP: &str = "2026-11-01T09:00:00.000Z";

/// A workspace's published state, swapped by the test as the actor would.
struct Fake {
    state: Mutex<Arc<WorkspaceState>>,
    published: tokio::sync::Notify,
}

#[async_trait::async_trait]
impl Published for Fake {
    fn state(&self) -> Arc<WorkspaceState> {
        self.state.lock().clone()
    }

    async fn after(&self, position: u64, deadline: tokio::time::Instant) -> Arc<WorkspaceState> {
        let state = || self.state();
        actors::actor::wait_published(&self.published, state, position, deadline).await
    }
}

/// An endpoint's state as stored: acknowledged point, status, reason, and the id of
/// the delivery in flight.
type Stored = (FeedPoint, Status, Option<Reason>, Option<String>);

/// Every record the engine kept, in order: each attempt, and each state of the
/// endpoint stored (with an attempt or on its own): its acknowledged point, status,
/// reason, and the id of the delivery in flight.
#[derive(Default)]
struct Kept {
    attempts: Mutex<Vec<Attempt>>,
    moved: Mutex<Vec<Stored>>,
    last: Mutex<Option<Deliverer>>,
}

impl Kept {
    fn keep(&self, d: &Deliverer) {
        let flight = d.in_flight.as_ref().map(|f| f.id.clone());
        self.moved
            .lock()
            .push((d.acknowledged, d.status, d.reason, flight));
        *self.last.lock() = Some(d.clone());
    }
}

#[async_trait::async_trait]
impl Ledger for Kept {
    async fn attempted(&self, _: &str, attempt: &Attempt, d: &Deliverer) -> Result<(), String> {
        self.attempts.lock().push(attempt.clone());
        self.keep(d);
        Ok(())
    }

    async fn moved(&self, _: &str, d: &Deliverer) -> Result<(), String> {
        self.keep(d);
        Ok(())
    }
}

/// Notes committed to `store` and put into `ws`, one transaction.
async fn commit_notes(ws: &mut WorkspaceState, store: &MemoryStore, company: Uuid, n: usize) {
    let upserts: Vec<Record> = (0..n)
        .map(|i| {
            Record::Note(
                serde_json::from_value(json!({
                    "id": Uuid::new_v4(), "parent_type": "company", "parent_id": company,
                    "title": format!("note {i}"), "created_at": STAMP, "updated_at": STAMP
                }))
                .unwrap(),
            )
        })
        .collect();
    for r in &upserts {
        ws.put(r.clone());
    }
    let changes = ChangeSet {
        upserts,
        ..ChangeSet::default()
    };
    store.commit(ws.id(), &changes).await.unwrap();
    ws.position = store.position(ws.id()).await.unwrap().seq;
}

/// A workspace of one company (committed) and its store.
async fn workspace() -> (WorkspaceState, Arc<MemoryStore>, Uuid) {
    let mut ws = WorkspaceState::new(Workspace {
        id: Uuid::new_v4(),
        name: None,
        default_region: None,
    });
    let company = Uuid::new_v4();
    let record = Record::Company(
        serde_json::from_value(json!({
            "id": company, "name": "Acme", "created_at": STAMP, "updated_at": STAMP
        }))
        .unwrap(),
    );
    ws.put(record.clone());
    let store = MemoryStore::new();
    let changes = ChangeSet {
        upserts: vec![record],
        ..ChangeSet::default()
    };
    store.commit(ws.id(), &changes).await.unwrap();
    ws.position = store.position(ws.id()).await.unwrap().seq;
    (ws, store, company)
}

/// A delivery as the receiver got it.
#[derive(Clone, Debug)]
struct Got {
    id: String,
    signature_ok: bool,
    body: Value,
}

/// A receiver on loopback answering each request with the next status of `script`
/// (200 once it runs out), and keeping what it got.
async fn receiver(secret: Secret, script: Vec<u16>) -> (url::Url, Arc<Mutex<Vec<Got>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = address::check(
        &format!("http://{}/in", listener.local_addr().unwrap()),
        INSECURE,
    )
    .unwrap();
    let got = Arc::new(Mutex::new(Vec::new()));
    let script = Arc::new(Mutex::new(VecDeque::from(script)));
    let kept = got.clone();
    tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            let (got, script, secret) = (kept.clone(), script.clone(), secret.clone());
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 65536];
                loop {
                    let n = tcp.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                        continue;
                    };
                    let head = String::from_utf8_lossy(&buf[..end]).to_string();
                    let header = |name: &str| {
                        head.lines()
                            .find_map(|l| {
                                let (n, v) = l.split_once(':')?;
                                n.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
                            })
                            .unwrap_or_default()
                    };
                    let len: usize = header("content-length").parse().unwrap();
                    if buf.len() < end + 4 + len {
                        continue;
                    }
                    let body = &buf[end + 4..end + 4 + len];
                    let ts: i64 = header("webhook-timestamp").parse().unwrap();
                    let id = header("webhook-id");
                    got.lock().push(Got {
                        signature_ok: signature::verify(
                            &secret,
                            &header("webhook-signature"),
                            &id,
                            ts,
                            body,
                            ts,
                        ),
                        id,
                        body: serde_json::from_slice(body).unwrap(),
                    });
                    let status = script.lock().pop_front().unwrap_or(200);
                    let answer = format!("HTTP/1.1 {status} X\r\nContent-Length: 0\r\n\r\n");
                    let _ = tcp.write_all(answer.as_bytes()).await;
                    let _ = tcp.shutdown().await;
                    return;
                }
            });
        }
    });
    (url, got)
}

const INSECURE: Policy = Policy {
    allow_insecure: true,
};

/// The contract's schedule, in milliseconds rather than seconds and hours.
const QUICK: Schedule = Schedule {
    first_retry: Duration::from_millis(5),
    most_between: Duration::from_millis(50),
    give_up_after: Duration::from_millis(500),
};

fn engine(store: Arc<MemoryStore>) -> Engine {
    Engine {
        store,
        cache: Arc::new(PartCache::default()),
        pages: Default::default(),
        sender: Sender::new(INSECURE).answer_within(Duration::from_secs(5)),
        schedule: QUICK,
        token: Arc::new(|_, p: FeedPoint| format!("{}.{}.{}", p.position, p.part, p.index)),
        now_ms: Arc::new(|| chrono::Utc::now().timestamp_millis()),
        writes: Arc::new(|_| true),
        observer: Arc::new(Unobserved),
        api_answered: Arc::new(|| 0),
    }
}

fn endpoint(workspace: Uuid, url: url::Url, secret: &Secret) -> Endpoint {
    Endpoint {
        workspace,
        id: "wh_1".into(),
        url,
        entities: Entity::ALL.to_vec(),
        secrets: vec![secret.clone()],
        sending: Default::default(),
    }
}

/// Waits until `check` holds, for five seconds at the most.
async fn until(check: impl Fn() -> bool) {
    for _ in 0..500 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("not within 5 s");
}

#[tokio::test]
async fn every_change_arrives_once_in_order_signed_and_later_commits_follow() {
    let (mut ws, store, company) = workspace().await;
    commit_notes(&mut ws, &store, company, 1200).await;
    let secret = Secret::generate();
    let (url, got) = receiver(secret.clone(), vec![]).await;
    let fake = Arc::new(Fake {
        state: Mutex::new(Arc::new(ws.clone())),
        published: tokio::sync::Notify::new(),
    });
    let kept = Arc::new(Kept::default());
    let engine = Arc::new(engine(store.clone()));
    let ep = Arc::new(endpoint(ws.id(), url, &secret));
    let task = {
        let (engine, ep, fake, kept) = (engine.clone(), ep.clone(), fake.clone(), kept.clone());
        tokio::spawn(async move {
            engine
                .run(&ep, Deliverer::new(FeedPoint::at(0)), &*fake, &*kept)
                .await
        })
    };
    until(|| got.lock().len() == 3).await;
    // A later commit is published: it follows, from where the last one ended.
    commit_notes(&mut ws, &store, company, 7).await;
    *fake.state.lock() = Arc::new(ws.clone());
    fake.published.notify_waiters();
    until(|| got.lock().len() == 4).await;
    task.abort();

    let got = got.lock().clone();
    let mut expected_since = "0.4294967295.4294967295".to_string();
    let mut ids = std::collections::HashSet::new();
    let mut changes = 0;
    for g in &got {
        assert!(g.signature_ok, "{}", g.id);
        assert_eq!(g.body["endpoint_id"], "wh_1");
        assert_eq!(g.body["since"], expected_since.as_str());
        expected_since = g.body["next_since"].as_str().unwrap().to_string();
        for item in g.body["data"].as_array().unwrap() {
            assert!(ids.insert(item["id"].as_str().unwrap().to_string()));
            changes += 1;
        }
    }
    assert_eq!(changes, 1 + 1200 + 7);
    let sizes: Vec<usize> = got
        .iter()
        .map(|g| g.body["data"].as_array().unwrap().len())
        .collect();
    assert_eq!(sizes, vec![500, 500, 201, 7]);
    // Each 2xx was stored, in order, ending where the state stands.
    let moved = kept.moved.lock().clone();
    assert_eq!(moved.last().unwrap().0, FeedPoint::at(ws.position));
    assert!(moved
        .windows(2)
        .all(|w| (w[0].0.position, w[0].0.part, w[0].0.index)
            <= (w[1].0.position, w[1].0.part, w[1].0.index)));
}

#[tokio::test]
async fn a_failed_attempt_is_retried_as_the_same_delivery() {
    let (mut ws, store, company) = workspace().await;
    commit_notes(&mut ws, &store, company, 3).await;
    let secret = Secret::generate();
    let (url, got) = receiver(secret.clone(), vec![500, 503]).await;
    let fake = Arc::new(Fake {
        state: Mutex::new(Arc::new(ws.clone())),
        published: tokio::sync::Notify::new(),
    });
    let kept = Arc::new(Kept::default());
    let engine = Arc::new(engine(store));
    let ep = Arc::new(endpoint(ws.id(), url, &secret));
    let task = {
        let (engine, ep, fake, kept) = (engine.clone(), ep.clone(), fake.clone(), kept.clone());
        tokio::spawn(async move {
            engine
                .run(&ep, Deliverer::new(FeedPoint::at(0)), &*fake, &*kept)
                .await
        })
    };
    until(|| kept.attempts.lock().len() == 3).await;
    task.abort();
    let got = got.lock().clone();
    assert_eq!(got.len(), 3);
    assert!(got
        .iter()
        .all(|g| g.id == got[0].id && g.body == got[0].body));
    let attempts = kept.attempts.lock().clone();
    let numbers: Vec<u32> = attempts.iter().map(|a| a.number).collect();
    assert_eq!(numbers, vec![1, 2, 3]);
    let statuses: Vec<Option<u16>> = attempts.iter().map(|a| a.sent.status).collect();
    assert_eq!(statuses, vec![Some(500), Some(503), Some(200)]);
    let moved = kept.moved.lock().clone();
    // Stored in flight before its first attempt, under the id every attempt carried.
    assert_eq!(moved[0].3.as_deref(), Some(got[0].id.as_str()));
    assert_eq!(moved.last().unwrap().0, FeedPoint::at(ws.position));
    assert_eq!(moved.last().unwrap().3, None);
}

#[tokio::test]
async fn a_delivery_in_flight_when_its_task_died_is_sent_again_under_its_id() {
    let (mut ws, store, company) = workspace().await;
    commit_notes(&mut ws, &store, company, 3).await;
    let secret = Secret::generate();
    // The first attempt fails; the task dies before the retry.
    let (url, got) = receiver(secret.clone(), vec![500]).await;
    let fake = Arc::new(Fake {
        state: Mutex::new(Arc::new(ws.clone())),
        published: tokio::sync::Notify::new(),
    });
    let kept = Arc::new(Kept::default());
    // Its retry far off: the task dies with the delivery in flight.
    let slow = Schedule {
        first_retry: Duration::from_secs(60),
        most_between: Duration::from_secs(60),
        give_up_after: Duration::from_secs(3600),
    };
    let engine = Arc::new(Engine {
        schedule: slow,
        ..engine(store.clone())
    });
    let ep = Arc::new(endpoint(ws.id(), url, &secret));
    let run = |d: Deliverer| {
        let (engine, ep, fake, kept) = (engine.clone(), ep.clone(), fake.clone(), kept.clone());
        tokio::spawn(async move { engine.run(&ep, d, &*fake, &*kept).await })
    };
    let first = run(Deliverer::new(FeedPoint::at(0)));
    until(|| kept.attempts.lock().len() == 1).await;
    first.abort();
    let _ = first.await;
    // More is committed meanwhile; the next task starts from what was stored, with
    // the delivery in flight due at once, as a restart reads it from the row.
    commit_notes(&mut ws, &store, company, 4).await;
    *fake.state.lock() = Arc::new(ws.clone());
    let mut d = kept.last.lock().clone().unwrap();
    let flight = d.in_flight.as_mut().expect("stored in flight");
    assert_eq!(flight.failures, 1);
    flight.not_before_ms = i64::MIN;
    let second = run(d);
    until(|| got.lock().len() == 3).await;
    second.abort();
    let got = got.lock().clone();
    let ids = |g: &Got| -> Vec<String> {
        let data = g.body["data"].as_array().unwrap();
        data.iter()
            .map(|i| i["id"].as_str().unwrap().to_string())
            .collect()
    };
    // The same delivery: its id, its points and its changes, not the later ones.
    assert_eq!(got[1].id, got[0].id);
    assert_eq!(got[1].body["since"], got[0].body["since"]);
    assert_eq!(got[1].body["next_since"], got[0].body["next_since"]);
    assert_eq!(ids(&got[1]), ids(&got[0]));
    assert_eq!(ids(&got[0]).len(), 1 + 3);
    // Then the later commit, from where it ended, as a new delivery.
    assert_ne!(got[2].id, got[0].id);
    assert_eq!(got[2].body["since"], got[0].body["next_since"]);
    assert_eq!(ids(&got[2]).len(), 4);
}

/// Runs an endpoint over one committed note to a receiver answering `script`, until
/// its task ends: how it ended, what the receiver got, what the ledger kept.
async fn run_to_the_end(script: Vec<u16>) -> (Ended, Vec<Got>, Kept) {
    let (mut ws, store, company) = workspace().await;
    commit_notes(&mut ws, &store, company, 1).await;
    let secret = Secret::generate();
    let (url, got) = receiver(secret.clone(), script).await;
    let fake = Fake {
        state: Mutex::new(Arc::new(ws.clone())),
        published: tokio::sync::Notify::new(),
    };
    let kept = Kept::default();
    let ended = engine(store)
        .run(
            &endpoint(ws.id(), url, &secret),
            Deliverer::new(FeedPoint::at(0)),
            &fake,
            &kept,
        )
        .await;
    let got = got.lock().clone();
    (ended, got, kept)
}

#[tokio::test]
async fn a_410_disables_the_endpoint_and_nothing_more_is_sent() {
    let (ended, got, kept) = run_to_the_end(vec![410]).await;
    let Ended::Disabled(d) = ended else {
        panic!("{ended:?}");
    };
    assert_eq!(d.reason, Some(Reason::Gone));
    assert_eq!(d.acknowledged, FeedPoint::at(0));
    assert_eq!(got.len(), 1);
    let moved = kept.moved.lock().clone();
    let id = got[0].id.clone();
    assert_eq!(
        moved,
        vec![
            (FeedPoint::at(0), Status::Active, None, Some(id)),
            (FeedPoint::at(0), Status::Disabled, Some(Reason::Gone), None)
        ]
    );
}

#[tokio::test]
async fn a_receiver_failing_past_the_schedule_is_given_up_on() {
    let (ended, got, kept) = run_to_the_end(vec![500; 1000]).await;
    let Ended::Disabled(d) = ended else {
        panic!("{ended:?}");
    };
    assert_eq!(d.reason, Some(Reason::Failing));
    assert!(got.len() >= 5, "{} attempts", got.len());
    assert_eq!(kept.attempts.lock().len(), got.len());
    assert!(got.iter().all(|g| g.signature_ok));
}
