//! What a run measures: one HDR histogram per endpoint, errors by status and code,
//! correctness mismatches, records received, and a per-second timeline.
//!
//! Every sample carries the instant its request was *meant* to start (open loop: its
//! slot in the schedule; closed loop: when it was sent). Only samples meant to start
//! inside the measurement window count, so warm-up and the drain at the end stay out,
//! and a request delayed by a slow predecessor is charged the whole delay
//! (coordinated-omission correction).

use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Latencies are recorded in microseconds, up to 60 s, 3 significant digits.
pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000, 3).expect("valid histogram bounds")
}

/// How one request went, as judged by the scenario that sent it.
pub enum Verdict {
    /// The expected answer.
    Ok,
    /// An HTTP answer other than the expected one: grouped by `"<status> <code>"`.
    Status(u16, Option<String>),
    /// No HTTP answer (connect, transport, timeout).
    Failed(&'static str, String),
    /// The expected status, but content that contradicts the data (a wrong lookup
    /// result, a sync count that does not add up).
    Mismatch(String),
}

#[derive(Default)]
pub struct EndpointStats {
    pub latency: Option<Histogram<u64>>,
    pub ok: u64,
    pub errors: BTreeMap<String, u64>,
    pub mismatches: u64,
    pub mismatch_examples: Vec<String>,
    pub error_examples: Vec<String>,
    pub records: u64,
}

impl EndpointStats {
    pub fn requests(&self) -> u64 {
        self.ok + self.errors.values().sum::<u64>() + self.mismatches
    }

    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }

    fn hist(&mut self) -> &mut Histogram<u64> {
        self.latency.get_or_insert_with(histogram)
    }
}

/// One second of the measured window (all endpoints together).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Tick {
    pub t: f64,
    pub requests: u64,
    pub errors: u64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
}

struct Inner {
    endpoints: BTreeMap<String, EndpointStats>,
    interval: Histogram<u64>,
    interval_errors: u64,
    timeline: Vec<Tick>,
    /// How late the driver sent requests relative to their schedule (open loop).
    lag: Histogram<u64>,
}

/// Collects samples from every task of a run.
pub struct Recorder {
    pub measure_from: Instant,
    pub measure_to: Instant,
    inner: Mutex<Inner>,
    pub total: AtomicU64,
    pub errors: AtomicU64,
    pub mismatches: AtomicU64,
    /// Operations still running long after the window closed (abandoned by the driver).
    pub abandoned: AtomicU64,
}

const EXAMPLES: usize = 5;

impl Recorder {
    pub fn new(measure_from: Instant, measure_to: Instant) -> Self {
        Recorder {
            measure_from,
            measure_to,
            inner: Mutex::new(Inner {
                endpoints: BTreeMap::new(),
                interval: histogram(),
                interval_errors: 0,
                timeline: Vec::new(),
                lag: histogram(),
            }),
            total: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            mismatches: AtomicU64::new(0),
            abandoned: AtomicU64::new(0),
        }
    }

    pub fn measures(&self, intended: Instant) -> bool {
        intended >= self.measure_from && intended < self.measure_to
    }

    /// Records one request meant to start at `intended` that finished at `done`.
    pub fn record(
        &self,
        endpoint: &str,
        intended: Instant,
        done: Instant,
        verdict: Verdict,
        records: u64,
    ) {
        self.record_in(endpoint, intended, intended, done, verdict, records);
    }

    /// As [`Recorder::record`], but whether the sample counts is decided by `unit`, the
    /// start of the larger operation it belongs to (a sync round: all of its pages count
    /// or none do).
    pub fn record_in(
        &self,
        endpoint: &str,
        unit: Instant,
        intended: Instant,
        done: Instant,
        verdict: Verdict,
        records: u64,
    ) {
        if !self.measures(unit) {
            return;
        }
        let us = done.saturating_duration_since(intended).as_micros() as u64;
        let mut g = self.inner.lock().expect("recorder lock");
        let inner = &mut *g;
        if !inner.endpoints.contains_key(endpoint) {
            inner
                .endpoints
                .insert(endpoint.to_string(), EndpointStats::default());
        }
        let e = inner.endpoints.get_mut(endpoint).expect("inserted above");
        e.records += records;
        self.total.fetch_add(1, Ordering::Relaxed);
        match verdict {
            Verdict::Ok => {
                e.ok += 1;
                e.hist().saturating_record(us.max(1));
                inner.interval.saturating_record(us.max(1));
            }
            Verdict::Mismatch(what) => {
                e.mismatches += 1;
                e.hist().saturating_record(us.max(1));
                inner.interval.saturating_record(us.max(1));
                if e.mismatch_examples.len() < EXAMPLES {
                    e.mismatch_examples.push(what);
                }
                self.mismatches.fetch_add(1, Ordering::Relaxed);
            }
            Verdict::Status(status, code) => {
                e.hist().saturating_record(us.max(1));
                inner.interval.saturating_record(us.max(1));
                let label = match code {
                    Some(c) => format!("{status} {c}"),
                    None => status.to_string(),
                };
                *e.errors.entry(label).or_default() += 1;
                inner.interval_errors += 1;
                self.errors.fetch_add(1, Ordering::Relaxed);
            }
            Verdict::Failed(label, detail) => {
                *e.errors.entry(label.to_string()).or_default() += 1;
                if e.error_examples.len() < EXAMPLES {
                    e.error_examples.push(detail);
                }
                inner.interval_errors += 1;
                self.errors.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// How late a request left relative to its slot in the schedule.
    pub fn record_lag(&self, intended: Instant, sent: Instant) {
        if self.measures(intended) {
            let us = sent.saturating_duration_since(intended).as_micros() as u64;
            self.inner
                .lock()
                .expect("recorder lock")
                .lag
                .saturating_record(us.max(1));
        }
    }

    /// Closes one timeline interval (called once a second while measuring).
    pub fn tick(&self, now: Instant) -> Tick {
        let mut g = self.inner.lock().expect("recorder lock");
        let h = &g.interval;
        let tick = Tick {
            t: now
                .saturating_duration_since(self.measure_from)
                .as_secs_f64(),
            requests: h.len() + g.interval_errors,
            errors: g.interval_errors,
            p50_us: if h.is_empty() {
                0
            } else {
                h.value_at_quantile(0.5)
            },
            p99_us: if h.is_empty() {
                0
            } else {
                h.value_at_quantile(0.99)
            },
            max_us: h.max(),
        };
        g.interval.reset();
        g.interval_errors = 0;
        // Only whole seconds of the window (the first tick may close a second that was
        // mostly warm-up, whose samples are not recorded).
        let inside = now >= self.measure_from + Duration::from_millis(900)
            && now <= self.measure_to + Duration::from_millis(500);
        if inside {
            g.timeline.push(tick.clone());
        }
        tick
    }

    /// Everything measured, once the run is over.
    pub fn finish(&self) -> Measured {
        let mut g = self.inner.lock().expect("recorder lock");
        Measured {
            abandoned: self.abandoned.load(Ordering::Relaxed),
            endpoints: std::mem::take(&mut g.endpoints),
            timeline: std::mem::take(&mut g.timeline),
            lag: std::mem::replace(&mut g.lag, histogram()),
        }
    }
}

pub struct Measured {
    pub abandoned: u64,
    pub endpoints: BTreeMap<String, EndpointStats>,
    pub timeline: Vec<Tick>,
    pub lag: Histogram<u64>,
}
