//! `sync`: what an integration does. Rounds of a full sync of every entity (`limit`
//! records a page, following `next_cursor` until it is null, several entities in
//! parallel), each followed by incremental rounds from every entity's watermark (the
//! `updated_at` of the last record received, `updated_since` inclusive).
//!
//! Checked while measuring: every page is 200 and decodes; `updated_at` never goes
//! backwards within an entity and is never before the watermark; `total_count` is on
//! the first page only; a full sync receives exactly as many records as `/v1/counts`
//! and the first page's `total_count` announced (at least as many while writers add
//! records, in `mixed`); an incremental sync sees at least the boundary record again.
//!
//! Records/s is a full round's records over its wall time; a round counts when it
//! starts inside the measurement window.

use super::Backend;
use super::PARSE_EVERY;
use crate::data::ENTITIES;
use crate::stats::{Recorder, Verdict};
use hyper::Method;
use serde::Deserialize;
use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::task::JoinSet;

/// A page: parsed as JSON whole (every record checked well formed), each record kept
/// as its text.
#[derive(Deserialize)]
struct Page<'a> {
    #[serde(borrow)]
    data: Vec<&'a serde_json::value::RawValue>,
    next_cursor: Option<String>,
    total_count: Option<u64>,
}

/// Only what the checks need; serde skips the rest of the record.
#[derive(Deserialize)]
struct Rec<'a> {
    #[serde(borrow)]
    updated_at: Cow<'a, str>,
}

/// A record's `updated_at`. recruitd writes it as a record's last member, and a record
/// that ends `"updated_at":"<text without quotes>"}` has it there: the key opens with an
/// unescaped quote, so it is no string's content, and the one `}` after its value closes
/// the record, so it is a member of the record itself. It is read off the end then
/// (serde would match every key of the record against it); any other record is
/// decoded.
pub(super) fn updated_at(record: &str) -> Result<Cow<'_, str>, serde_json::Error> {
    const KEY: &str = "\"updated_at\":\"";
    static FINDER: std::sync::LazyLock<memchr::memmem::FinderRev<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::FinderRev::new(KEY));
    if let Some(body) = record.strip_suffix("\"}") {
        if let Some(at) = FINDER.rfind(body.as_bytes()) {
            let value = &body[at + KEY.len()..];
            if !value.contains(['"', '\\']) {
                return Ok(Cow::Borrowed(value));
            }
        }
    }
    serde_json::from_str::<Rec>(record).map(|r| r.updated_at)
}

/// What a page says besides its records.
#[derive(Deserialize)]
struct Tail {
    next_cursor: Option<String>,
    total_count: Option<u64>,
}

/// A page's records' `updated_at` and what follows the records, found without parsing
/// the records: recruitd writes a page as `{"data":[…],"next_cursor":…}` and each record
/// with one `"updated_at":"…"` member of its own (its last). The key opens with an
/// unescaped quote, so it is no string's content, and no record holds an object with
/// such a member, so each occurrence is one record's. The client's share of a sync, on
/// the machine it measures, is then reading the bytes once, not parsing every member of
/// every record. One page in [`PARSE_EVERY`] is parsed whole and must agree.
fn scan_page(body: &[u8]) -> Option<(Vec<&str>, Tail)> {
    static KEY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"updated_at\":\""));
    static END: std::sync::LazyLock<memchr::memmem::FinderRev<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::FinderRev::new(b"],\"next_cursor\":"));
    let rest = body.strip_prefix(b"{\"data\":[")?;
    let end = END.rfind(rest)?;
    let (records, tail) = (&rest[..end], &rest[end + 2..]);
    let mut stamps = Vec::with_capacity(512);
    for at in KEY.find_iter(records) {
        let value = &records[at + KEY.needle().len()..];
        let len = memchr::memchr2(b'"', b'\\', value)?;
        if value[len] != b'"' {
            return None;
        }
        stamps.push(std::str::from_utf8(&value[..len]).ok()?);
    }
    Some((stamps, super::parse_tail(tail)?))
}

/// What the sync checks of a page: its records' `updated_at`, `next_cursor` and
/// `total_count`.
type PageRead<'a> = (Vec<Cow<'a, str>>, Option<String>, Option<u64>);

/// A page read as [`scan_page`] does, or parsed whole (`check`, and whenever the scan
/// does not recognise it).
fn read_page(body: &[u8], check: bool) -> Result<PageRead<'_>, String> {
    let scanned = scan_page(body);
    if check || scanned.is_none() {
        let page = serde_json::from_slice::<Page>(body).map_err(|e| e.to_string())?;
        let stamps = stamps(page.data.iter().map(|r| r.get())).map_err(|e| e.to_string())?;
        if let Some((found, tail)) = &scanned {
            let agrees = *found == stamps
                && (tail.next_cursor.as_deref(), tail.total_count)
                    == (page.next_cursor.as_deref(), page.total_count);
            if !agrees {
                return Err("the page's scan and its parse disagree".into());
            }
        }
        return Ok((stamps, page.next_cursor, page.total_count));
    }
    let (found, tail) = scanned.expect("scanned");
    Ok((
        found.into_iter().map(Cow::Borrowed).collect(),
        tail.next_cursor,
        tail.total_count,
    ))
}

/// The `updated_at` of each record of a page.
fn stamps<'a>(
    records: impl IntoIterator<Item = &'a str>,
) -> Result<Vec<Cow<'a, str>>, serde_json::Error> {
    records.into_iter().map(updated_at).collect()
}

/// What a sync of one entity must receive.
#[derive(Clone, Copy, Debug)]
pub enum Expect {
    /// Exactly this many records, and the same `total_count` (nothing writes meanwhile).
    Exactly(u64),
    /// At least the first page's `total_count` (writers may add or move records).
    AtLeastTotal,
    /// At least this many (an incremental sync sees its boundary record again).
    AtLeast(u64),
}

#[derive(Debug, Default)]
pub struct EntitySync {
    pub records: u64,
    /// The `updated_at` of the last record received.
    pub watermark: Option<String>,
    pub failed: bool,
}

pub struct Syncer {
    pub backend: Backend,
    pub rec: Arc<Recorder>,
    pub limit: u32,
}

/// Checks one page's records against the watermark and the previous record.
fn check_order(
    records: &[Cow<'_, str>],
    since: Option<&str>,
    prev: &mut Option<String>,
) -> Option<String> {
    for updated_at in records {
        if let Some(s) = since {
            if **updated_at < *s {
                return Some(format!("updated_at {updated_at} before updated_since {s}"));
            }
        }
        if let Some(p) = prev.as_deref() {
            if **updated_at < *p {
                return Some(format!("updated_at {updated_at} after {p}: out of order"));
            }
        }
    }
    if let Some(last) = records.last() {
        *prev = Some(last.to_string());
    }
    None
}

/// What is wrong with a page, if anything: its records out of order, or (the last
/// page) the records received against what was expected.
fn check_page(
    stamps: &[Cow<'_, str>],
    since: Option<&str>,
    prev: &mut Option<String>,
    last: bool,
    expect: Expect,
    received: u64,
    total: Option<u64>,
) -> Option<String> {
    check_order(stamps, since, prev)
        .or_else(|| last.then(|| check_count(expect, received, total)).flatten())
}

/// A page's verdict from what [`check_page`] found.
fn verdict(entity: &str, problem: Option<String>) -> Verdict {
    match problem {
        None => Verdict::Ok,
        Some(p) => Verdict::Mismatch(format!("{entity}: {p}")),
    }
}

fn check_count(expect: Expect, received: u64, total: Option<u64>) -> Option<String> {
    match expect {
        Expect::Exactly(n) if received != n || total.is_some_and(|t| t != n) => Some(format!(
            "full sync received {received} records, total_count {total:?}, /v1/counts {n}"
        )),
        Expect::AtLeastTotal if total.is_some_and(|t| received < t) => Some(format!(
            "full sync received {received} records, fewer than total_count {total:?}"
        )),
        Expect::AtLeast(n) if received < n => Some(format!(
            "sync received {received} records, expected at least {n}"
        )),
        _ => None,
    }
}

impl Syncer {
    /// Records one page's outcome; whether the sync goes on (a wrong page is counted
    /// and the sync continues, a failed request ends it).
    #[allow(clippy::too_many_arguments)]
    fn record_page(
        &self,
        label: &str,
        unit: Instant,
        intended: Instant,
        done: Instant,
        verdict: Verdict,
        records: u64,
        out: &mut EntitySync,
    ) -> bool {
        let go_on = matches!(verdict, Verdict::Ok | Verdict::Mismatch(_));
        out.failed |= !matches!(verdict, Verdict::Ok);
        self.rec
            .record_in(label, unit, intended, done, verdict, records);
        go_on
    }

    /// Syncs one entity from `since` (or whole), page by page. Samples count when `unit`
    /// is inside the window; the first page's latency runs from `first_intended`.
    pub async fn entity(
        &self,
        entity: &str,
        since: Option<&str>,
        expect: Expect,
        unit: Instant,
        first_intended: Instant,
    ) -> EntitySync {
        match &self.backend {
            Backend::Api(pool) => {
                let label = format!(
                    "GET /v1/{entity} {}",
                    if since.is_some() { "since" } else { "full" }
                );
                let mut lease = pool.lease().await;
                let mut out = EntitySync::default();
                let mut cursor: Option<String> = None;
                let mut prev: Option<String> = None;
                let mut total: Option<u64> = None;
                let mut intended = first_intended;
                let mut pages = 0u64;
                loop {
                    pages += 1;
                    let mut path = format!("/v1/{entity}?limit={}", self.limit);
                    if let Some(s) = since {
                        path += &format!("&updated_since={}", crate::http::encode(s));
                    }
                    if let Some(c) = &cursor {
                        path += &format!("&cursor={}", crate::http::encode(c));
                    }
                    let result = lease.send(Method::GET, &path, None).await;
                    let done = Instant::now();
                    let mut n = 0;
                    let mut next = None;
                    let verdict = match result {
                        Ok(a) if a.status == 200 => {
                            match read_page(&a.body, pages % PARSE_EVERY == 1) {
                                Ok((stamps, next_cursor, total_count)) => {
                                    n = stamps.len() as u64;
                                    out.records += n;
                                    next = next_cursor;
                                    let first = cursor.is_none();
                                    let total_wrong = if first {
                                        total = total_count;
                                        total
                                            .is_none()
                                            .then(|| "no total_count on the first page".to_string())
                                    } else {
                                        total_count
                                            .map(|_| "total_count on a later page".to_string())
                                    };
                                    let problem = total_wrong.or_else(|| {
                                        let last = next.is_none();
                                        let (received, counted) = (out.records, total);
                                        check_page(
                                            &stamps, since, &mut prev, last, expect, received,
                                            counted,
                                        )
                                    });
                                    verdict(entity, problem)
                                }
                                Err(e) => {
                                    Verdict::Mismatch(format!("{entity}: undecodable page: {e}"))
                                }
                            }
                        }
                        Ok(a) => Verdict::Status(a.status, a.error_code()),
                        Err(f) => Verdict::Failed(f.label(), f.to_string()),
                    };
                    if !self.record_page(&label, unit, intended, done, verdict, n, &mut out) {
                        break;
                    }
                    match next {
                        Some(c) => cursor = Some(c),
                        None => break,
                    }
                    intended = Instant::now();
                }
                out.watermark = prev;
                out
            }
            Backend::Pg(pg) => {
                let label = format!(
                    "SQL keyset {entity} {}",
                    if since.is_some() { "since" } else { "full" }
                );
                let mut out = EntitySync::default();
                let mut after: Option<(String, String)> = None;
                let mut prev: Option<String> = None;
                let mut intended = first_intended;
                let mut pages = 0u64;
                loop {
                    let result = pg.page(entity, since, after.as_ref(), self.limit).await;
                    // Answered here: decoding is the client's time, as for recruitd's pages.
                    let done = Instant::now();
                    let mut n = 0;
                    let mut next = None;
                    let verdict = match result {
                        Ok((docs, cursor)) => {
                            // Read as recruitd's pages are, so the client's cost is the
                            // same: each record's `updated_at`, and one page in
                            // `PARSE_EVERY` checked well formed whole.
                            pages += 1;
                            let whole = pages % PARSE_EVERY == 1;
                            let recs = docs
                                .iter()
                                .map(|d| {
                                    if whole {
                                        serde_json::from_str::<serde::de::IgnoredAny>(d)?;
                                    }
                                    updated_at(d)
                                })
                                .collect::<Result<Vec<_>, _>>();
                            match recs {
                                Ok(recs) => {
                                    n = recs.len() as u64;
                                    out.records += n;
                                    next = cursor;
                                    let last = next.is_none();
                                    let problem = check_page(
                                        &recs,
                                        since,
                                        &mut prev,
                                        last,
                                        expect,
                                        out.records,
                                        None,
                                    );
                                    verdict(entity, problem)
                                }
                                Err(e) => {
                                    Verdict::Mismatch(format!("{entity}: undecodable row: {e}"))
                                }
                            }
                        }
                        Err(e) => Verdict::Failed("sql", e.to_string()),
                    };
                    if !self.record_page(&label, unit, intended, done, verdict, n, &mut out) {
                        break;
                    }
                    match next {
                        Some(c) => after = Some(c),
                        None => break,
                    }
                    intended = Instant::now();
                }
                out.watermark = prev;
                out
            }
        }
    }

    /// Exact record counts per entity: `/v1/counts` (recorded), or what the baseline
    /// loaded.
    pub async fn counts(&self, unit: Instant) -> anyhow::Result<HashMap<String, u64>> {
        match &self.backend {
            Backend::Api(pool) => {
                let sent = Instant::now();
                let result = pool.send(Method::GET, "/v1/counts", None).await;
                let done = Instant::now();
                let parsed = match &result {
                    Ok(a) if a.status == 200 => {
                        #[derive(Deserialize)]
                        struct Counts {
                            data: HashMap<String, u64>,
                        }
                        serde_json::from_slice::<Counts>(&a.body)
                            .ok()
                            .map(|c| c.data)
                    }
                    _ => None,
                };
                let verdict = super::judge(result, 200, |_| {
                    parsed
                        .as_ref()
                        .filter(|c| ENTITIES.iter().all(|e| c.contains_key(*e)))
                        .is_none()
                        .then(|| "counts answer lacks an entity".to_string())
                });
                self.rec
                    .record_in("GET /v1/counts", unit, sent, done, verdict, 0);
                parsed.ok_or_else(|| anyhow::anyhow!("GET /v1/counts failed"))
            }
            Backend::Pg(pg) => Ok(pg.counts.iter().map(|(k, v)| (k.clone(), *v)).collect()),
        }
    }
}

/// One round of the sync scenario.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Round {
    pub kind: String,
    /// Seconds from the start of the measurement window (negative: warm-up).
    pub at: f64,
    pub secs: f64,
    pub records: u64,
    pub measured: bool,
    pub failed: bool,
}

/// Syncs `work` (entity, since, expectation) over `streams` parallel streams.
async fn parallel(
    syncer: &Arc<Syncer>,
    work: Vec<(&'static str, Option<String>, Expect)>,
    streams: usize,
    unit: Instant,
) -> Vec<(&'static str, EntitySync)> {
    let queue = Arc::new(Mutex::new(VecDeque::from(work)));
    let mut set = JoinSet::new();
    for _ in 0..streams {
        let (queue, syncer) = (queue.clone(), syncer.clone());
        set.spawn(async move {
            let mut done = Vec::new();
            loop {
                let next = queue.lock().expect("queue lock").pop_front();
                let Some((entity, since, expect)) = next else {
                    break;
                };
                let r = syncer
                    .entity(entity, since.as_deref(), expect, unit, Instant::now())
                    .await;
                done.push((entity, r));
            }
            done
        });
    }
    let mut out = Vec::new();
    while let Some(r) = set.join_next().await {
        out.extend(r.expect("sync stream panicked"));
    }
    out
}

/// Syncs one round's `work`, begun at `t0`, and moves each entity's watermark to the
/// last record it received.
async fn round(
    syncer: &Arc<Syncer>,
    kind: &str,
    t0: Instant,
    work: Vec<(&'static str, Option<String>, Expect)>,
    streams: usize,
    watermarks: &mut HashMap<&'static str, String>,
) -> Round {
    let rec = &syncer.rec;
    let done = parallel(syncer, work, streams, t0).await;
    // Seconds from the start of the measurement window (negative: warm-up).
    let at = if t0 >= rec.measure_from {
        (t0 - rec.measure_from).as_secs_f64()
    } else {
        -(rec.measure_from - t0).as_secs_f64()
    };
    let mut round = Round {
        kind: kind.into(),
        at,
        secs: t0.elapsed().as_secs_f64(),
        records: 0,
        measured: rec.measures(t0),
        failed: false,
    };
    for (e, r) in done {
        round.records += r.records;
        round.failed |= r.failed;
        if let Some(w) = r.watermark {
            watermarks.insert(e, w);
        }
    }
    round
}

/// The sync scenario: rounds until the window closes (a round begun inside it is
/// finished).
pub async fn rounds(
    syncer: Arc<Syncer>,
    streams: usize,
    incremental_rounds: usize,
    warmup: Duration,
) -> anyhow::Result<Vec<Round>> {
    let rec = syncer.rec.clone();
    let start = rec
        .measure_from
        .checked_sub(warmup)
        .unwrap_or(rec.measure_from);
    tokio::time::sleep_until(start.into()).await;
    let mut rounds = Vec::new();
    let mut watermarks: HashMap<&'static str, String> = HashMap::new();
    while Instant::now() < rec.measure_to {
        let t0 = Instant::now();
        let counts = syncer.counts(t0).await?;
        let mut entities: Vec<&'static str> = ENTITIES.to_vec();
        // Largest first, so the longest single stream starts at once.
        entities.sort_by_key(|e| std::cmp::Reverse(counts.get(*e).copied().unwrap_or(0)));
        let work = entities
            .iter()
            .map(|e| {
                (
                    *e,
                    None,
                    Expect::Exactly(counts.get(*e).copied().unwrap_or(0)),
                )
            })
            .collect();
        rounds.push(round(&syncer, "full", t0, work, streams, &mut watermarks).await);
        for _ in 0..incremental_rounds {
            if Instant::now() >= rec.measure_to {
                break;
            }
            let work = entities
                .iter()
                .map(|e| {
                    let since = watermarks.get(e).cloned();
                    let expect = Expect::AtLeast(u64::from(since.is_some()));
                    (*e, since, expect)
                })
                .collect();
            let t0 = Instant::now();
            rounds.push(round(&syncer, "incremental", t0, work, streams, &mut watermarks).await);
        }
    }
    Ok(rounds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn updated_at_is_read_off_the_end_only_where_it_is_the_records_last_member() {
        let plain = r#"{"id":"a","created_at":"2026-01-01T00:00:00.000Z","updated_at":"2026-02-01T00:00:00.000Z"}"#;
        assert!(matches!(
            updated_at(plain).unwrap(),
            Cow::Borrowed("2026-02-01T00:00:00.000Z")
        ));
        // Elsewhere in the record: decoded, and the record's own member wins.
        for (record, want) in [
            (
                r#"{"updated_at":"2026-03-01T00:00:00.000Z","x":{"updated_at":"1999"}}"#,
                "2026-03-01T00:00:00.000Z",
            ),
            (
                r#"{"updated_at":"2026-04-01T00:00:00.000Z","body":"\"updated_at\":\"1999\""}"#,
                "2026-04-01T00:00:00.000Z",
            ),
            (
                r#"{"updated_at":"2026-05-01T00:00:00.000Z", "n": 1}"#,
                "2026-05-01T00:00:00.000Z",
            ),
        ] {
            assert_eq!(updated_at(record).unwrap(), want, "{record}");
        }
        assert!(updated_at(r#"{"id":"a"}"#).is_err());
        let stamps = stamps([plain, plain]).unwrap();
        let mut prev = Some("2026-03-01T00:00:00.000Z".to_string());
        assert!(check_order(&stamps, None, &mut prev)
            .unwrap()
            .contains("out of order"));
    }
}

#[cfg(test)]
mod page_tests {
    use super::*;

    #[test]
    fn a_scanned_page_is_what_its_parse_says() {
        let first = r#"{"id":"a","n":{"x":[1,{"y":"}]\""}]},"s":"a\\\"updated_at\\\":\\\"x","updated_at":"2026-01-01T00:00:00.000Z"}"#;
        let second = r#"{"id":"b","updated_at":"2026-01-02T00:00:00.000Z"}"#;
        let body = format!(
            r#"{{"data":[{first},{second}],"next_cursor":"c1","total_count":2,"request_id":"r"}}"#
        );
        let (stamps, tail) = scan_page(body.as_bytes()).unwrap();
        assert_eq!(
            stamps,
            ["2026-01-01T00:00:00.000Z", "2026-01-02T00:00:00.000Z"]
        );
        assert_eq!(
            (tail.next_cursor.as_deref(), tail.total_count),
            (Some("c1"), Some(2))
        );
        for check in [false, true] {
            let (stamps, next, total) = read_page(body.as_bytes(), check).unwrap();
            assert_eq!(
                stamps,
                ["2026-01-01T00:00:00.000Z", "2026-01-02T00:00:00.000Z"]
            );
            assert_eq!((next.as_deref(), total), (Some("c1"), Some(2)));
        }
        let empty = r#"{"data":[],"next_cursor":null,"request_id":"r"}"#;
        let (stamps, next, total) = read_page(empty.as_bytes(), false).unwrap();
        assert!(stamps.is_empty() && next.is_none() && total.is_none());
        // Not the shape recruitd writes: parsed, and judged by the parse.
        let spaced = format!(r#"{{ "data": [{second}], "next_cursor": null, "request_id": "r" }}"#);
        assert_eq!(read_page(spaced.as_bytes(), false).unwrap().0.len(), 1);
        assert!(read_page(br#"{"data":[{"id":"a"}"#, false).is_err());
        assert!(read_page(br#"{"data":[{"id":"a"},],"request_id":"r"}"#, true).is_err());
    }
}
