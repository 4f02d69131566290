//! Live traffic for the console: every [`SAMPLE_EVERY`] the node reads its request
//! latency histograms (`recruitd_http_request_duration_seconds`, through
//! `Metrics::traffic_text`) and keeps, for the interval since the last reading, each
//! route's requests, server errors (5xx) and 50th and 99th percentiles, computed from
//! the difference of the two readings' buckets as Prometheus's `histogram_quantile`
//! computes them (linear within a bucket; the highest finite bound when the rank falls
//! in `+Inf`). The last [`KEPT`] intervals are kept: 15 minutes, a few hundred bytes
//! per route and interval. Only the last reading's buckets are kept whole.
//!
//! A route is the method and the registered pattern, with the entity of an entity
//! route written in (`GET /v1/candidates/{id}`); `all` sums every route.

use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

/// How often the histograms are read.
pub const SAMPLE_EVERY: Duration = Duration::from_secs(5);

/// Intervals kept: 15 minutes of them.
pub const KEPT: usize = 180;

/// The histogram read.
const HISTOGRAM: &str = "recruitd_http_request_duration_seconds";

/// One reading of one route's histograms (every status summed).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RouteReading {
    /// Cumulative counts per bucket, in the order of [`Reading::bounds`], `+Inf` last.
    pub buckets: Vec<u64>,
    /// Requests answered with a 5xx.
    pub errors: u64,
}

/// One reading of every route.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reading {
    /// The buckets' finite upper bounds, in seconds, ascending (every route has the same).
    pub bounds: Vec<f64>,
    pub routes: BTreeMap<String, RouteReading>,
}

/// One sample line of the histogram: a bucket's or a series' count.
struct Sample {
    bucket: bool,
    labels: Vec<(String, String)>,
    value: f64,
}

impl Sample {
    fn label(&self, name: &str) -> &str {
        self.labels
            .iter()
            .find(|(n, _)| n == name)
            .map_or("", |(_, v)| v.as_str())
    }
}

/// Reads the text exposition of the latency histogram (other metrics are skipped).
pub fn parse(text: &str) -> Reading {
    let bucket = format!("{HISTOGRAM}_bucket{{");
    let count = format!("{HISTOGRAM}_count{{");
    let samples: Vec<Sample> = text
        .lines()
        .filter_map(|line| {
            let is_bucket = line.starts_with(&bucket);
            if !is_bucket && !line.starts_with(&count) {
                return None;
            }
            let (_, rest) = line.split_once('{')?;
            let (labels, value) = rest.rsplit_once("} ")?;
            Some(Sample {
                bucket: is_bucket,
                labels: labels_of(labels),
                value: value.trim().parse().ok()?,
            })
        })
        .collect();
    // The bounds are the first series' finite `le`s, as it lists them (every series has
    // the same).
    let mut bounds = Vec::new();
    for s in samples.iter().filter(|s| s.bucket) {
        match s.label("le").parse::<f64>() {
            Ok(b) if b.is_finite() => bounds.push(b),
            _ => break,
        }
    }
    let width = bounds.len() + 1;
    let mut routes: BTreeMap<String, RouteReading> = BTreeMap::new();
    for s in &samples {
        let route = route_name(s.label("method"), s.label("route"), s.label("entity"));
        let entry = routes.entry(route).or_insert_with(|| RouteReading {
            buckets: vec![0; width],
            errors: 0,
        });
        // Counts are integers, written as such; the series of one route (its statuses)
        // are summed bucket by bucket.
        let n = s.value as u64;
        if s.bucket {
            let index = match s.label("le") {
                "+Inf" => Some(bounds.len()),
                le => le
                    .parse::<f64>()
                    .ok()
                    .and_then(|b| bounds.iter().position(|x| *x == b)),
            };
            if let Some(i) = index {
                entry.buckets[i] += n;
            }
        } else if s.label("status").parse::<u16>().is_ok_and(|st| st >= 500) {
            entry.errors += n;
        }
    }
    Reading { bounds, routes }
}

/// A route's display name.
fn route_name(method: &str, route: &str, entity: &str) -> String {
    let route = if entity.is_empty() {
        route.to_string()
    } else {
        route.replacen("{entity}", entity, 1)
    };
    format!("{method} {route}")
}

/// The `name="value"` pairs of a label set, unescaped.
fn labels_of(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        let name: String = chars
            .by_ref()
            .skip_while(|c| *c == ',' || c.is_whitespace())
            .take_while(|c| *c != '=')
            .collect();
        if name.is_empty() || chars.next() != Some('"') {
            return out;
        }
        let mut value = String::new();
        while let Some(c) = chars.next() {
            match c {
                '"' => break,
                '\\' => match chars.next() {
                    Some('n') => value.push('\n'),
                    Some(other) => value.push(other),
                    None => return out,
                },
                c => value.push(c),
            }
        }
        out.push((name, value));
    }
}

/// The `q` quantile (0..=1) of the observations a bucket difference holds, in seconds:
/// `cumulative` are the counts at or below each of `bounds`, then the `+Inf` total.
/// `None` without observations.
pub fn quantile(q: f64, bounds: &[f64], cumulative: &[u64]) -> Option<f64> {
    let total = *cumulative.last()?;
    if total == 0 {
        return None;
    }
    let rank = q * total as f64;
    let i = cumulative.iter().position(|c| *c as f64 >= rank)?;
    if i >= bounds.len() {
        // Past every finite bound: the highest, as Prometheus answers.
        return bounds.last().copied();
    }
    let (lower, below) = match i {
        0 => (0.0, 0),
        _ => (bounds[i - 1], cumulative[i - 1]),
    };
    let inside = cumulative[i] - below;
    if inside == 0 {
        return Some(bounds[i]);
    }
    Some(lower + (bounds[i] - lower) * (rank - below as f64) / inside as f64)
}

/// One route over one interval.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RouteInterval {
    pub requests: u64,
    pub errors: u64,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
}

/// One interval: when it ended (milliseconds since the epoch), how long it was, and
/// each route that answered requests in it.
#[derive(Clone, Debug, PartialEq)]
pub struct Interval {
    pub at_ms: i64,
    pub seconds: f64,
    pub routes: BTreeMap<String, RouteInterval>,
}

/// The name of the sum of every route.
pub const ALL: &str = "all";

/// The interval between two readings. A route whose counts went down (the process's
/// metrics never do; a reading out of order) is left out.
pub fn interval(before: &Reading, after: &Reading, at_ms: i64, seconds: f64) -> Interval {
    let width = after.bounds.len() + 1;
    let mut routes = BTreeMap::new();
    let mut all = vec![0u64; width];
    let mut all_errors = 0;
    for (name, now) in &after.routes {
        let empty = RouteReading {
            buckets: vec![0; width],
            errors: 0,
        };
        let then = before.routes.get(name).unwrap_or(&empty);
        if then.buckets.len() != width || now.buckets.len() != width {
            continue;
        }
        let Some(delta): Option<Vec<u64>> = now
            .buckets
            .iter()
            .zip(&then.buckets)
            .map(|(n, t)| n.checked_sub(*t))
            .collect()
        else {
            continue;
        };
        let requests = delta[width - 1];
        if requests == 0 {
            continue;
        }
        let errors = now.errors.saturating_sub(then.errors);
        for (a, d) in all.iter_mut().zip(&delta) {
            *a += d;
        }
        all_errors += errors;
        routes.insert(name.clone(), summary(&after.bounds, &delta, errors));
    }
    if all[width - 1] > 0 {
        routes.insert(ALL.to_string(), summary(&after.bounds, &all, all_errors));
    }
    Interval {
        at_ms,
        seconds,
        routes,
    }
}

fn summary(bounds: &[f64], delta: &[u64], errors: u64) -> RouteInterval {
    let ms = |q| quantile(q, bounds, delta).map(|s| (s * 1000.0 * 1000.0).round() / 1000.0);
    RouteInterval {
        requests: delta[delta.len() - 1],
        errors,
        p50_ms: ms(0.5),
        p99_ms: ms(0.99),
    }
}

/// The samples kept (see the module's docs).
#[derive(Default)]
pub struct Traffic {
    inner: parking_lot::Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    last: Option<(i64, Reading)>,
    intervals: VecDeque<Interval>,
}

/// What `GET /admin/v1/console/traffic` answers: the intervals' ends, and per route
/// (busiest first, `all` first of all) a value per interval (`null` where it answered
/// nothing).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Series {
    pub sample_every_ms: u64,
    pub at_ms: Vec<i64>,
    pub routes: Vec<RouteSeries>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RouteSeries {
    pub route: String,
    /// Requests per second over each interval.
    pub rate: Vec<Option<f64>>,
    pub requests: Vec<Option<u64>>,
    pub errors: Vec<Option<u64>>,
    pub p50_ms: Vec<Option<f64>>,
    pub p99_ms: Vec<Option<f64>>,
}

impl Traffic {
    /// Takes a reading made at `at_ms`; from the second on, each makes an interval.
    pub fn record(&self, at_ms: i64, reading: Reading) {
        let mut kept = self.inner.lock();
        if let Some((then, before)) = &kept.last {
            let seconds = (at_ms - then) as f64 / 1000.0;
            if seconds > 0.0 {
                let i = interval(before, &reading, at_ms, seconds);
                kept.intervals.push_back(i);
                while kept.intervals.len() > KEPT {
                    kept.intervals.pop_front();
                }
            }
        }
        kept.last = Some((at_ms, reading));
    }

    /// The kept intervals as series (see [`Series`]).
    pub fn series(&self, sample_every: Duration) -> Series {
        let kept = self.inner.lock();
        let at_ms: Vec<i64> = kept.intervals.iter().map(|i| i.at_ms).collect();
        let mut totals: BTreeMap<&str, u64> = BTreeMap::new();
        for i in &kept.intervals {
            for (name, r) in &i.routes {
                *totals.entry(name).or_default() += r.requests;
            }
        }
        let mut names: Vec<(&str, u64)> = totals.into_iter().collect();
        names.sort_by(|a, b| {
            (b.0 == ALL)
                .cmp(&(a.0 == ALL))
                .then(b.1.cmp(&a.1))
                .then(a.0.cmp(b.0))
        });
        let routes = names
            .into_iter()
            .map(|(name, _)| {
                let each = |f: &dyn Fn(f64, &RouteInterval) -> Option<f64>| -> Vec<Option<f64>> {
                    kept.intervals
                        .iter()
                        .map(|i| i.routes.get(name).and_then(|r| f(i.seconds, r)))
                        .collect()
                };
                let count = |f: fn(&RouteInterval) -> u64| -> Vec<Option<u64>> {
                    kept.intervals
                        .iter()
                        .map(|i| i.routes.get(name).map(f))
                        .collect()
                };
                RouteSeries {
                    route: name.to_string(),
                    rate: each(&|secs, r| Some((r.requests as f64 / secs * 100.0).round() / 100.0)),
                    requests: count(|r| r.requests),
                    errors: count(|r| r.errors),
                    p50_ms: each(&|_, r| r.p50_ms),
                    p99_ms: each(&|_, r| r.p99_ms),
                }
            })
            .collect();
        Series {
            sample_every_ms: sample_every.as_millis() as u64,
            at_ms,
            routes,
        }
    }
}

/// Reads `metrics` into `traffic` every `every`, on the caller's runtime, until the
/// task is aborted (or the runtime ends).
pub fn start(
    metrics: std::sync::Arc<crate::telemetry::metrics::Metrics>,
    traffic: std::sync::Arc<Traffic>,
    every: Duration,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            traffic.record(actors::store::now_ms(), parse(&metrics.traffic_text()));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::metrics::{Metrics, RequestLabels};

    fn labels(route: &'static str, entity: &'static str, status: u16) -> RequestLabels {
        RequestLabels {
            route,
            entity,
            method: "GET",
            status,
        }
    }

    const PHONE: &str = "GET /v1/search/phone";

    #[test]
    fn quantiles_interpolate_within_their_bucket_as_prometheus_does() {
        let bounds = [1.0, 2.0, 4.0, 8.0];
        // 10 at or below 1, 20 in (1, 2], 10 in (2, 4], none above.
        let cumulative = [10, 30, 40, 40, 40];
        let near = |got: Option<f64>, want: f64| {
            assert!(
                got.is_some_and(|g| (g - want).abs() < 1e-12),
                "{got:?} ≠ {want}"
            )
        };
        // The 10th is the first bucket's last: its bound.
        near(quantile(0.25, &bounds, &cumulative), 1.0);
        // The 20th is half-way through the second bucket.
        near(quantile(0.5, &bounds, &cumulative), 1.5);
        // The 39.6th is 9.6/10 into the third: 2 + 2 × 0.96.
        near(quantile(0.99, &bounds, &cumulative), 3.92);
        // A rank past every finite bound answers the highest.
        assert_eq!(quantile(0.99, &[1.0, 2.0], &[1, 1, 5]), Some(2.0));
        assert_eq!(quantile(0.5, &bounds, &[0, 0, 0, 0, 0]), None);
        assert_eq!(quantile(0.5, &[], &[]), None);
    }

    #[test]
    fn a_reading_sums_a_routes_statuses_and_counts_its_server_errors() {
        let m = Metrics::new();
        let us = Duration::from_micros;
        for _ in 0..3 {
            m.request(labels("/v1/search/phone", "", 200), us(30));
        }
        m.request(labels("/v1/search/phone", "", 503), us(300));
        m.request(labels("/v1/{entity}/{id}", "candidates", 404), us(1000));
        let r = parse(&m.traffic_text());
        // The request histogram's bounds: 25 µs doubling, 20 of them.
        assert_eq!(r.bounds.len(), 20);
        assert_eq!(r.bounds[0], 0.000_025);
        assert_eq!(r.bounds[4], 0.000_4);
        assert_eq!(
            r.routes.keys().collect::<Vec<_>>(),
            vec!["GET /v1/candidates/{id}", PHONE]
        );
        let phone = &r.routes[PHONE];
        assert_eq!(phone.errors, 1);
        // 30 µs in (25, 50]; 300 µs in (200, 400]; cumulative, +Inf last.
        assert_eq!(&phone.buckets[..6], &[0, 3, 3, 3, 4, 4]);
        assert_eq!(phone.buckets[20], 4);
        assert_eq!(r.routes["GET /v1/candidates/{id}"].errors, 0);
        assert_eq!(r.routes["GET /v1/candidates/{id}"].buckets[20], 1);
    }

    #[test]
    fn intervals_are_the_difference_of_two_readings() {
        let m = Metrics::new();
        let us = Duration::from_micros;
        // Before the first reading: what the interval must not count.
        for _ in 0..7 {
            m.request(labels("/v1/search/phone", "", 200), us(5000));
        }
        let traffic = Traffic::default();
        traffic.record(1_000, parse(&m.traffic_text()));
        assert_eq!(traffic.series(SAMPLE_EVERY).at_ms, Vec::<i64>::new());
        for _ in 0..10 {
            m.request(labels("/v1/search/phone", "", 200), us(30));
            m.request(labels("/v1/search/phone", "", 200), us(300));
        }
        m.request(labels("/v1/search/phone", "", 500), us(300));
        traffic.record(6_000, parse(&m.traffic_text()));
        // Nothing answered in the next interval: no point for it.
        traffic.record(11_000, parse(&m.traffic_text()));
        let s = traffic.series(SAMPLE_EVERY);
        assert_eq!(s.sample_every_ms, 5000);
        assert_eq!(s.at_ms, vec![6_000, 11_000]);
        let names: Vec<&str> = s.routes.iter().map(|r| r.route.as_str()).collect();
        assert_eq!(names, vec![ALL, PHONE]);
        let phone = &s.routes[1];
        assert_eq!(phone.requests, vec![Some(21), None]);
        assert_eq!(phone.errors, vec![Some(1), None]);
        assert_eq!(phone.rate, vec![Some(4.2), None]);
        // 10 in (25, 50] µs, 11 in (200, 400] µs: the 10.5th is 0.5/11 into the
        // second bucket (200 + 200 × 0.5 / 11 = 209.09 µs), the 20.79th 10.79/11 into it
        // (396.18 µs); milliseconds to the microsecond.
        assert_eq!(phone.p50_ms, vec![Some(0.209), None]);
        assert_eq!(phone.p99_ms, vec![Some(0.396), None]);
        assert_eq!(s.routes[0].requests, phone.requests);
        assert_eq!(s.routes[0].p99_ms, phone.p99_ms);
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(
            json["routes"][1]["p99_ms"],
            serde_json::json!([0.396, null])
        );
    }

    #[test]
    fn only_the_last_intervals_are_kept() {
        let traffic = Traffic::default();
        let m = Metrics::new();
        for i in 0..(KEPT as i64 + 10) {
            m.request(labels("/v1/counts", "", 200), Duration::from_micros(30));
            traffic.record(i * 5000, parse(&m.traffic_text()));
        }
        let s = traffic.series(SAMPLE_EVERY);
        assert_eq!(s.at_ms.len(), KEPT);
        assert_eq!(*s.at_ms.last().unwrap(), (KEPT as i64 + 9) * 5000);
        assert!(s.routes[1].requests.iter().all(|r| *r == Some(1)));
    }

    #[test]
    fn labels_are_read_with_their_escapes() {
        assert_eq!(
            labels_of(r#"route="/v1/{entity}",entity="a\"b",le="+Inf""#),
            vec![
                ("route".to_string(), "/v1/{entity}".to_string()),
                ("entity".to_string(), "a\"b".to_string()),
                ("le".to_string(), "+Inf".to_string()),
            ]
        );
    }
}
