//! `sync --mode changes`: what a mirror that follows `GET /v1/changes` sees.
//!
//! Two measurements, each optional:
//! - **catch-up**: from an earlier token (`--since`), the feed is read as fast as it
//!   answers (`limit` a page, no `wait`) until it says the client is up to date;
//!   changes/s is the changes received over the wall time.
//! - **live**: the `write` scenario runs at `--write-rate` while one client long-polls
//!   the feed (`wait=30`). Each acknowledged write is matched to the first delivery of
//!   its record whose `updated_at` is at least the one the write's answer showed, and
//!   its delivery latency is measured from when the write was *sent*: the commit lies
//!   between the write's send and its answer, so this is an upper bound of
//!   commit-to-delivery that also holds the write's own latency.
//!
//! Checked: every answer is 200 and decodes; each change names one of the nine entities,
//! an upsert carries a record and a tombstone a `deleted_at`; a record appears at most
//! once per answer; every acknowledged write that moved its record's `updated_at` is
//! delivered (one that is not counts as an error); and, once the writes stop and the
//! client has caught up, every record the feed delivered is fetched with
//! `GET /v1/{entity}/{id}`: an upsert's last delivery must be byte for byte the `data`
//! that GET returns, a tombstone's GET must be 404.

use super::PARSE_EVERY;
use crate::data::ENTITIES;
use crate::http::{encode, Pool};
use crate::stats::{Recorder, Verdict};
use hyper::Method;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// A long-poll's `wait`, in seconds (the contract's largest).
pub const WAIT_SECS: u32 = 30;

/// Concurrent requests of the final check.
pub const CHECKERS: usize = 8;

#[derive(Deserialize)]
struct FeedAnswer<'a> {
    #[serde(borrow)]
    data: Vec<Change<'a>>,
    next_since: String,
    has_more: bool,
}

#[derive(Deserialize)]
struct Change<'a> {
    #[serde(borrow)]
    entity: &'a str,
    #[serde(borrow)]
    id: Cow<'a, str>,
    #[serde(borrow)]
    op: &'a str,
    #[serde(borrow, default)]
    record: Option<&'a RawValue>,
    #[serde(borrow, default)]
    deleted_at: Option<&'a str>,
}

/// A record as the feed last showed it: the hash of its bytes, or gone.
type Shown = Option<u64>;

/// Every record a client received, as last shown.
pub type Mirror = HashMap<(&'static str, String), Shown, Quick>;

/// The mirror's hasher: [`mix`] rather than SipHash, whose share of a catch-up's client
/// time was larger than the parse's (the keys are the server's ids, not an attacker's).
pub type Quick = std::hash::BuildHasherDefault<Mixer>;

#[derive(Default)]
pub struct Mixer(u64);

impl std::hash::Hasher for Mixer {
    fn write(&mut self, bytes: &[u8]) {
        self.0 = mix(self.0, bytes);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A record's fingerprint: a multiply-rotate mix over 8-byte words (as FxHash and
/// wyhash mix). It tells a record from its GET, not from an adversary, and costs a
/// fraction of SipHash, which would be a good part of the client's time in a catch-up.
pub(crate) fn hash_of(bytes: &[u8]) -> u64 {
    mix(0, bytes)
}

fn mix(seed: u64, bytes: &[u8]) -> u64 {
    let mut h = seed ^ (bytes.len() as u64) ^ 0x9e37_79b9_7f4a_7c15;
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        let w = u64::from_le_bytes(w.try_into().expect("8 bytes"));
        h = (h ^ w).wrapping_mul(0xff51_afd7_ed55_8ccd).rotate_left(29);
    }
    let mut last = [0u8; 8];
    last[..words.remainder().len()].copy_from_slice(words.remainder());
    h = (h ^ u64::from_le_bytes(last)).wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// An acknowledged write, as [`super::write::WriteLoad`] reports it.
pub struct Ack {
    pub entity: &'static str,
    pub id: String,
    /// The record's `updated_at` in the write's answer (empty for a new note, whose
    /// answer is its id alone: any delivery of it shows it).
    pub updated_at: String,
    /// The wall clock when the write was sent, as the API writes timestamps: a write
    /// whose answer shows an older `updated_at` changed nothing.
    pub sent_wall: String,
    pub sent: Instant,
}

/// The wall clock as the API writes timestamps (fixed width, so they compare as text).
pub fn wall_now() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

/// Each record's deliveries: (`updated_at`, when), in order.
pub type Deliveries = HashMap<(&'static str, String), Vec<(String, Instant)>, Quick>;

/// What a client following the feed has received.
pub struct Received {
    pub token: String,
    /// Every record delivered, as last shown.
    pub mirror: Mirror,
    /// Kept only when writes are to be matched to their deliveries.
    pub deliveries: Option<Deliveries>,
    pub changes: u64,
}

/// One client following the feed.
pub struct Feed {
    pool: Arc<Pool>,
    rec: Arc<Recorder>,
    limit: u32,
    pub got: Received,
    pub pages: u64,
}

/// What one answer said.
struct Step {
    changes: u64,
    has_more: bool,
}

fn entity_name(name: &str) -> Option<&'static str> {
    ENTITIES.iter().copied().find(|e| *e == name)
}

impl Feed {
    pub fn new(pool: Arc<Pool>, rec: Arc<Recorder>, limit: u32, token: String) -> Self {
        Feed {
            pool,
            rec,
            limit,
            got: Received::new(token),
            pages: 0,
        }
    }

    /// Sends one request from `token` on a task of its own.
    fn send(&self, token: &str, wait: u32) -> tokio::task::JoinHandle<Sent> {
        let path = format!(
            "/v1/changes?since={}&limit={}&wait={wait}",
            encode(token),
            self.limit
        );
        let pool = self.pool.clone();
        tokio::spawn(async move {
            let sent = Instant::now();
            let result = pool.send(Method::GET, &path, None).await;
            (result, sent, Instant::now())
        })
    }

    /// Takes in an answer; `None` when it is no usable one. Samples count when `unit`
    /// (default: the request's send) is inside the window.
    fn take(&mut self, answer: Sent, label: &str, unit: Option<Instant>) -> Option<Step> {
        take_answer(
            &mut self.got,
            &mut self.pages,
            &self.rec,
            answer,
            label,
            unit,
        )
    }

    /// One request from the current token, answered and taken in.
    async fn step(&mut self, wait: u32, label: &str, unit: Option<Instant>) -> Option<Step> {
        let answer = self.send(&self.got.token.clone(), wait).await.ok()?;
        self.take(answer, label, unit)
    }

    /// Reads without waiting until the feed says the client is up to date. The next
    /// request leaves as soon as an answer's `next_since` is read off its end, and the
    /// answer is taken in on a thread of its own: the client's work overlaps both the
    /// server's and the next answer's transfer, as a client that ingests while it
    /// fetches does (and a pause of the mirror's, growing its table, holds up no
    /// request).
    /// What went wrong is in the recorder's verdicts.
    pub async fn catch_up(&mut self, label: &str, unit: Option<Instant>) {
        let mut got = std::mem::replace(&mut self.got, Received::new(String::new()));
        let mut pages = self.pages;
        let rec = self.rec.clone();
        let owned_label = label.to_string();
        let (answers, inbox) = std::sync::mpsc::channel::<(Sent, Option<String>)>();
        let (steps_out, mut steps) = tokio::sync::mpsc::unbounded_channel::<Option<Step>>();
        let token = got.token.clone();
        let taker = std::thread::spawn(move || {
            for (answer, peeked) in inbox {
                let step = take_answer(&mut got, &mut pages, &rec, answer, &owned_label, unit);
                let step = match (step, peeked) {
                    (Some(_), Some(peeked)) if peeked != got.token => {
                        let now = Instant::now();
                        rec.record_in(
                            &owned_label,
                            unit.unwrap_or(now),
                            now,
                            now,
                            Verdict::Mismatch(
                                "next_since read off the end differs from the parse".into(),
                            ),
                            0,
                        );
                        None
                    }
                    (step, _) => step,
                };
                if steps_out.send(step).is_err() {
                    break;
                }
            }
            (got, pages)
        });
        let mut pending = self.send(&token, 0);
        // Answers handed to the taker whose steps have not been read.
        let mut taking = 0usize;
        let mut failed = false;
        loop {
            let Ok(answer) = pending.await else {
                break;
            };
            let peeked = match &answer.0 {
                Ok(a) if a.status == 200 => peek(&a.body),
                _ => None,
            };
            let next = peeked
                .as_ref()
                .filter(|(_, more)| *more)
                .map(|(token, _)| self.send(token, 0));
            if answers
                .send((answer, peeked.as_ref().map(|(t, _)| t.clone())))
                .is_err()
            {
                break;
            }
            taking += 1;
            while let Ok(step) = steps.try_recv() {
                taking -= 1;
                failed |= step.is_none();
            }
            if failed {
                break;
            }
            if let Some(request) = next {
                pending = request;
                continue;
            }
            // Nothing more was waiting as the answer was made (or the answer is not
            // one to read ahead of): what it said decides.
            let mut last = None;
            while taking > 0 {
                let step = steps.recv().await.flatten();
                taking -= 1;
                failed |= step.is_none();
                last = step;
            }
            match last {
                None => break,
                Some(s) if s.changes == 0 && !s.has_more => break,
                // Changes, and nothing more waiting as the answer was made: ask again,
                // from the token the answer ended with.
                Some(_) => match peeked {
                    Some((token, _)) => pending = self.send(&token, 0),
                    None => break,
                },
            }
        }
        drop(answers);
        let (got, pages) = taker.join().expect("the taker thread does not panic");
        self.got = got;
        self.pages = pages;
    }

    /// Long-polls until `stop` is raised, then catches up.
    pub async fn follow(&mut self, stop: &StopSignal, unit: Instant) {
        while !stop.raised() {
            let polled = tokio::select! {
                s = self.step(WAIT_SECS, "GET /v1/changes?wait=30", None) => Some(s),
                _ = stop.wait() => None,
            };
            match polled {
                // No usable answer: back off briefly rather than spin.
                Some(None) => tokio::time::sleep(Duration::from_millis(100)).await,
                // A long-poll given up mid-answer leaves its connection busy: the rest
                // is read on fresh ones.
                None => self.pool = Arc::new(Pool::new(self.pool.target.clone(), 1)),
                Some(Some(_)) => {}
            }
        }
        // The tail counts whenever it comes: a failure there is a failure of the run.
        self.catch_up("GET /v1/changes (after the writes)", Some(unit))
            .await
    }
}

/// Takes in an answer (see [`Feed::take`]).
fn take_answer(
    got: &mut Received,
    pages: &mut u64,
    rec: &Recorder,
    (result, sent, done): Sent,
    label: &str,
    unit: Option<Instant>,
) -> Option<Step> {
    *pages += 1;
    let mut step = None;
    let verdict = match result {
        Ok(a) if a.status == 200 => match got.take(&a.body, done, *pages % PARSE_EVERY == 1) {
            Ok(s) => {
                step = Some(Step {
                    changes: s.changes,
                    has_more: s.has_more,
                });
                match s.problem {
                    None => Verdict::Ok,
                    Some(p) => Verdict::Mismatch(p),
                }
            }
            Err(e) => Verdict::Mismatch(format!("feed answer: {e}")),
        },
        Ok(a) => Verdict::Status(a.status, a.error_code()),
        Err(f) => Verdict::Failed(f.label(), f.to_string()),
    };
    let n = step.as_ref().map_or(0, |s| s.changes);
    rec.record_in(label, unit.unwrap_or(sent), sent, done, verdict, n);
    step
}

impl Received {
    fn new(token: String) -> Self {
        Received {
            token,
            mirror: Mirror::default(),
            deliveries: None,
            changes: 0,
        }
    }

    /// Takes an answer's changes into the mirror: read by [`scan_answer`], or parsed
    /// whole (`check`, and whenever the scan does not recognise it), in which case the
    /// scan must agree.
    fn take(&mut self, body: &[u8], at: Instant, check: bool) -> Result<Taken, String> {
        let scanned = scan_answer(body);
        let (data, tail) = match scanned {
            Some(scanned) if !check => scanned,
            scanned => {
                let answer: FeedAnswer = serde_json::from_slice(body).map_err(|e| e.to_string())?;
                let parsed = (
                    answer.data.into_iter().map(Seen::from).collect::<Vec<_>>(),
                    Tail {
                        next_since: answer.next_since,
                        has_more: answer.has_more,
                    },
                );
                if scanned.is_some_and(|s| s != parsed) {
                    return Err("the answer's scan and its parse disagree".into());
                }
                parsed
            }
        };
        let mut problem = None;
        let mut seen = HashSet::with_capacity_and_hasher(data.len(), Quick::default());
        for c in &data {
            let Some(entity) = entity_name(c.entity) else {
                problem.get_or_insert(format!("unknown entity {:?}", c.entity));
                continue;
            };
            if !seen.insert((entity, &*c.id)) {
                problem.get_or_insert(format!("{entity} {} twice in one answer", c.id));
            }
            let shown = match (c.op, c.record, c.deleted_at) {
                ("upsert", Some(r), None) => {
                    if let Some(d) = self.deliveries.as_mut() {
                        match super::sync::updated_at(r) {
                            Ok(u) => d
                                .entry((entity, c.id.to_string()))
                                .or_default()
                                .push((u.into_owned(), at)),
                            Err(_) => {
                                problem.get_or_insert(format!(
                                    "{entity} {}: record without updated_at",
                                    c.id
                                ));
                            }
                        }
                    }
                    Some(hash_of(r.as_bytes()))
                }
                ("delete", None, Some(_)) => None,
                (op, ..) => {
                    problem.get_or_insert(format!(
                        "{entity} {}: op {op:?} with the wrong members",
                        c.id
                    ));
                    continue;
                }
            };
            self.mirror.insert((entity, c.id.to_string()), shown);
        }
        let n = data.len() as u64;
        self.changes += n;
        self.token = tail.next_since;
        Ok(Taken {
            changes: n,
            has_more: tail.has_more,
            problem,
        })
    }
}

/// A change as the client reads it.
#[derive(Debug, PartialEq)]
struct Seen<'a> {
    entity: &'a str,
    id: Cow<'a, str>,
    op: &'a str,
    record: Option<&'a str>,
    deleted_at: Option<&'a str>,
}

impl<'a> From<Change<'a>> for Seen<'a> {
    fn from(c: Change<'a>) -> Self {
        Seen {
            entity: c.entity,
            id: c.id,
            op: c.op,
            record: c.record.map(RawValue::get),
            deleted_at: c.deleted_at,
        }
    }
}

/// What follows an answer's changes.
#[derive(Debug, PartialEq, Deserialize)]
struct Tail {
    next_since: String,
    has_more: bool,
}

/// Reads a text the way recruitd writes an answer, without parsing the records:
/// `{"data":[` then each change as `{"entity":"…","id":"…","op":"…","record":{…}}` or
/// `{…,"op":"delete","deleted_at":"…"}`, then `],"next_since":…`. A record is found
/// by its braces outside strings. Parsing every member of every record would be most
/// of the client's time in a catch-up, on the cores the server uses; one answer in
/// [`PARSE_EVERY`] is parsed whole and must agree, and the final check compares every
/// record with its GET byte for byte. `None` when the text is not of that shape.
fn scan_answer(body: &[u8]) -> Option<(Vec<Seen<'_>>, Tail)> {
    let mut c = Scan { b: body, at: 0 };
    c.lit(b"{\"data\":[")?;
    let mut data = Vec::with_capacity(512);
    if c.lit(b"]").is_none() {
        loop {
            c.lit(b"{\"entity\":\"")?;
            let entity = c.plain()?;
            c.lit(b",\"id\":\"")?;
            let id = Cow::Borrowed(c.plain()?);
            c.lit(b",\"op\":\"")?;
            let op = c.plain()?;
            let (record, deleted_at) = if c.lit(b",\"record\":").is_some() {
                (Some(c.object()?), None)
            } else {
                c.lit(b",\"deleted_at\":\"")?;
                (None, Some(c.plain()?))
            };
            c.lit(b"}")?;
            data.push(Seen {
                entity,
                id,
                op,
                record,
                deleted_at,
            });
            if c.lit(b",").is_none() {
                c.lit(b"]")?;
                break;
            }
        }
    }
    let rest = body[c.at..].strip_prefix(b",")?;
    Some((data, super::parse_tail(rest)?))
}

/// A position in a text being scanned.
struct Scan<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Scan<'a> {
    fn lit(&mut self, s: &[u8]) -> Option<()> {
        self.b[self.at..].starts_with(s).then(|| self.at += s.len())
    }

    /// A string's text up to its closing quote, which is consumed; `None` when it holds
    /// an escape.
    fn plain(&mut self) -> Option<&'a str> {
        let rest = &self.b[self.at..];
        let end = memchr::memchr2(b'"', b'\\', rest)?;
        if rest[end] != b'"' {
            return None;
        }
        self.at += end + 1;
        std::str::from_utf8(&rest[..end]).ok()
    }

    /// An object from its `{` to the matching `}`, whole.
    fn object(&mut self) -> Option<&'a str> {
        let b = self.b;
        let start = self.at;
        if b.get(start) != Some(&b'{') {
            return None;
        }
        let (mut i, mut depth) = (start, 0usize);
        loop {
            i += memchr::memchr3(b'"', b'{', b'}', &b[i..])?;
            match b[i] {
                b'"' => {
                    i += 1;
                    loop {
                        i += memchr::memchr2(b'"', b'\\', &b[i..])?;
                        if b[i] == b'\\' {
                            i += 2;
                        } else {
                            i += 1;
                            break;
                        }
                    }
                }
                b'{' => {
                    depth += 1;
                    i += 1;
                }
                _ => {
                    depth -= 1;
                    i += 1;
                    if depth == 0 {
                        break;
                    }
                }
            }
        }
        self.at = i;
        std::str::from_utf8(&b[start..i]).ok()
    }
}

/// An answer, when its request left, and when it came.
type Sent = (
    Result<crate::http::Answer, crate::http::Failure>,
    Instant,
    Instant,
);

/// An answer's `next_since` and `has_more`, read off its end: recruitd ends an answer
/// with `"next_since":"…","has_more":…,"request_id":"…"}`. `None` when it does not.
fn peek(body: &[u8]) -> Option<(String, bool)> {
    const KEY: &[u8] = b"\"next_since\":\"";
    let at = memchr::memmem::rfind(body, KEY)?;
    let rest = &body[at + KEY.len()..];
    let end = memchr::memchr2(b'"', b'\\', rest)?;
    let token = std::str::from_utf8(&rest[..end]).ok()?.to_string();
    let tail = &rest[end..];
    let more = memchr::memmem::find(tail, b"\"has_more\":true").is_some();
    let less = memchr::memmem::find(tail, b"\"has_more\":false").is_some();
    (rest[end] == b'"' && more != less).then_some((token, more))
}

struct Taken {
    changes: u64,
    has_more: bool,
    problem: Option<String>,
}

/// Raised once, awaited by the follower.
#[derive(Default)]
pub struct StopSignal {
    raised: AtomicBool,
    notify: Notify,
}

impl StopSignal {
    pub fn raise(&self) {
        self.raised.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    fn raised(&self) -> bool {
        self.raised.load(Ordering::SeqCst)
    }

    async fn wait(&self) {
        let notified = self.notify.notified();
        if !self.raised() {
            notified.await;
        }
    }
}

/// The token of "now": a list's `changes_since`. A server that is starting (no
/// answer, or 503 while it loads the workspace) is asked again for up to a minute.
pub async fn current_token(pool: &Pool) -> anyhow::Result<String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let a = loop {
        let sent = pool.send(Method::GET, "/v1/notes?limit=1", None).await;
        match sent {
            Ok(a) if a.status == 200 => break a,
            Ok(a) if a.status != 503 || Instant::now() >= deadline => {
                anyhow::bail!("GET /v1/notes answered {}", a.status)
            }
            Err(f) if Instant::now() >= deadline => anyhow::bail!("GET /v1/notes: {f}"),
            _ => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    };
    a.json()?["changes_since"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| anyhow::anyhow!("the first list page carries no changes_since"))
}

/// The names a write's delivery latency is reported under.
pub struct Labels {
    /// From when the write was sent: an upper bound of commit-to-receipt, holding the
    /// write's own latency.
    pub sent: &'static str,
    /// From the record's `updated_at` (the server's clock when it took the write, before
    /// its commit, read on the load generator's clock through the write's sent time):
    /// commit-to-receipt plus the commit itself, to the millisecond.
    pub stamped: &'static str,
}

/// Matches each acknowledged write to the first delivery that shows it (its record
/// with an `updated_at` at least the write's) and records the latency under `labels`;
/// a write never delivered is an error. Returns (matched, changed nothing).
pub fn match_acks(
    acks: &[Ack],
    deliveries: &Deliveries,
    rec: &Recorder,
    labels: &Labels,
) -> (u64, u64) {
    let (mut matched, mut unchanged) = (0, 0);
    for ack in acks {
        if ack.updated_at < ack.sent_wall {
            // Its answer shows the record as it was before: nothing to deliver.
            unchanged += 1;
            continue;
        }
        let first = deliveries
            .get(&(ack.entity, ack.id.clone()))
            .and_then(|d| d.iter().find(|(u, _)| *u >= ack.updated_at));
        match first {
            Some((_, at)) => {
                matched += 1;
                rec.record(labels.sent, ack.sent, *at, Verdict::Ok, 1);
                if let Some(stamped) = stamped_at(ack) {
                    rec.record_in(labels.stamped, ack.sent, stamped, *at, Verdict::Ok, 1);
                }
            }
            // An error, not a latency: it must not lower the delivery percentiles.
            None => rec.record(
                labels.sent,
                ack.sent,
                ack.sent,
                Verdict::Failed(
                    "never delivered",
                    format!(
                        "{} {} (updated_at {}) acknowledged but never delivered",
                        ack.entity, ack.id, ack.updated_at
                    ),
                ),
                0,
            ),
        }
    }
    (matched, unchanged)
}

/// When the server stamped the write's record, on the load generator's monotonic clock:
/// its sent time moved by the stamp's distance from the wall clock at sending.
fn stamped_at(ack: &Ack) -> Option<Instant> {
    let parse = |t: &str| chrono::DateTime::parse_from_rfc3339(t).ok();
    let ahead = parse(&ack.updated_at)? - parse(&ack.sent_wall)?;
    Some(ack.sent + ahead.to_std().unwrap_or_default())
}

/// Fetches every record of the mirror and compares it with what the feed last showed.
pub async fn check_mirror(
    pool: Arc<Pool>,
    rec: Arc<Recorder>,
    mirror: Mirror,
    unit: Instant,
) -> u64 {
    let work = Arc::new(Mutex::new(mirror.into_iter().collect::<Vec<_>>()));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..CHECKERS {
        let (pool, rec, work) = (pool.clone(), rec.clone(), work.clone());
        tasks.spawn(async move {
            let mut checked = 0u64;
            let mut lease = pool.lease().await;
            loop {
                let Some(((entity, id), shown)) = work.lock().expect("lock").pop() else {
                    return checked;
                };
                let sent = Instant::now();
                let r = lease
                    .send(Method::GET, &format!("/v1/{entity}/{}", encode(&id)), None)
                    .await;
                let done = Instant::now();
                let verdict = match (r, shown) {
                    (Ok(a), Some(hash)) if a.status == 200 => {
                        #[derive(Deserialize)]
                        struct One<'a> {
                            #[serde(borrow)]
                            data: &'a RawValue,
                        }
                        match serde_json::from_slice::<One>(&a.body) {
                            Ok(one) if hash_of(one.data.get().as_bytes()) == hash => Verdict::Ok,
                            Ok(_) => Verdict::Mismatch(format!(
                                "{entity} {id}: the feed's last record differs from GET"
                            )),
                            Err(e) => Verdict::Mismatch(format!("{entity} {id}: {e}")),
                        }
                    }
                    (Ok(a), None) if a.status == 404 => Verdict::Ok,
                    (Ok(a), None) if a.status == 200 => Verdict::Mismatch(format!(
                        "{entity} {id}: the feed's tombstone, but GET finds it"
                    )),
                    (Ok(a), Some(_)) if a.status == 404 => Verdict::Mismatch(format!(
                        "{entity} {id}: the feed shows it, GET answers 404"
                    )),
                    (Ok(a), _) => Verdict::Status(a.status, a.error_code()),
                    (Err(f), _) => Verdict::Failed(f.label(), f.to_string()),
                };
                rec.record_in(
                    "GET /v1/{entity}/{id} (check)",
                    unit,
                    sent,
                    done,
                    verdict,
                    0,
                );
                checked += 1;
            }
        });
    }
    let mut checked = 0;
    while let Some(n) = tasks.join_next().await {
        checked += n.unwrap_or(0);
    }
    checked
}

#[cfg(test)]
#[path = "changes_tests.rs"]
mod tests;
