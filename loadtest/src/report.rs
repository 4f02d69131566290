//! Reports: the plain table printed at the end, the JSON file (settings, machine, every
//! figure, and each endpoint's raw HDR histogram in the standard base64 V2-deflate form
//! that HdrHistogram's own tools read), and the comparison with an earlier report.

use crate::cli::Settings;
use crate::driver::{fmt_us, Load};
use crate::scenarios::sync::Round;
use crate::stats::{EndpointStats, Measured, Tick};
use anyhow::Context;
use base64::Engine;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

pub const FORMAT: &str = "recruitd-loadtest-report/1";

#[derive(Serialize, Deserialize)]
pub struct Report {
    pub format: String,
    pub name: String,
    pub scenario: String,
    pub started_at: String,
    pub machine: Machine,
    pub settings: Settings,
    pub dataset: Option<String>,
    pub runs: Vec<RunReport>,
    /// True when no run had an error, a mismatch or an abandoned operation.
    pub clean: bool,
}

#[derive(Serialize, Deserialize, Default)]
pub struct Machine {
    pub cpus: usize,
    pub cpu_model: Option<String>,
    pub memory_gib: Option<f64>,
    /// 1-minute load average when the run started and ended (others' work shows here).
    pub load_before: Option<f64>,
    pub load_after: Option<f64>,
}

impl Machine {
    pub fn probe() -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        Machine {
            cpus: std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
            cpu_model: cpuinfo
                .lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string()),
            memory_gib: meminfo
                .lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
                .map(|kb| (kb / 1024.0 / 1024.0 * 10.0).round() / 10.0),
            load_before: load_average(),
            load_after: None,
        }
    }
}

pub fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[derive(Serialize, Deserialize, Clone, Copy, Default, Debug)]
pub struct Percentiles {
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
    pub mean: f64,
}

impl Percentiles {
    pub fn of(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Percentiles::default();
        }
        Percentiles {
            p50: h.value_at_quantile(0.5),
            p90: h.value_at_quantile(0.9),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            max: h.max(),
            mean: h.mean(),
        }
    }
}

#[derive(Serialize, Deserialize, Clone)]
pub struct EndpointReport {
    pub name: String,
    pub requests: u64,
    pub ok: u64,
    pub errors: u64,
    pub errors_by_kind: BTreeMap<String, u64>,
    pub error_examples: Vec<String>,
    pub mismatches: u64,
    pub mismatch_examples: Vec<String>,
    /// Requests per second over the measured window.
    pub rate: f64,
    /// Microseconds.
    pub latency_us: Percentiles,
    pub records: u64,
    pub records_per_s: f64,
    /// The HDR histogram (µs), base64 of the V2 deflate encoding.
    pub histogram: String,
}

#[derive(Serialize, Deserialize, Clone, Default)]
pub struct SyncSummary {
    pub full_rounds: usize,
    pub full_records: u64,
    pub full_secs: f64,
    /// Records of measured full rounds over their wall time.
    pub full_records_per_s: f64,
    pub incremental_rounds: usize,
    pub incremental_records: u64,
    pub incremental_secs: f64,
}

#[derive(Serialize, Deserialize, Clone)]
pub struct RunReport {
    /// `recruitd` or `postgresql`.
    pub system: String,
    /// `lookup`, `sync`, `write`, or a part of `mixed`.
    pub workload: String,
    pub load: Option<Load>,
    pub duration_s: f64,
    pub warmup_s: f64,
    pub target_rate: Option<f64>,
    pub achieved_rate: f64,
    pub total: EndpointReport,
    pub endpoints: Vec<EndpointReport>,
    pub sync: Option<SyncSummary>,
    pub rounds: Vec<Round>,
    pub timeline: Vec<Tick>,
    /// How late the open-loop driver started operations against their schedule: the
    /// load generator's own share of the latencies (µs).
    pub schedule_lag_us: Option<Percentiles>,
    pub abandoned: u64,
}

impl RunReport {
    pub fn clean(&self) -> bool {
        self.total.errors == 0 && self.total.mismatches == 0 && self.abandoned == 0
    }
}

pub(crate) fn encode_histogram(h: &Histogram<u64>) -> String {
    let mut buf = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut buf)
        .expect("serialising a histogram into memory");
    base64::engine::general_purpose::STANDARD.encode(buf)
}

pub fn decode_histogram(s: &str) -> anyhow::Result<Histogram<u64>> {
    let bytes = base64::engine::general_purpose::STANDARD.decode(s)?;
    Ok(Deserializer::new().deserialize(&mut bytes.as_slice())?)
}

fn endpoint_report(name: &str, e: &EndpointStats, secs: f64) -> EndpointReport {
    let h = e.latency.clone().unwrap_or_else(crate::stats::histogram);
    EndpointReport {
        name: name.to_string(),
        requests: e.requests(),
        ok: e.ok,
        errors: e.error_count(),
        errors_by_kind: e.errors.clone(),
        error_examples: e.error_examples.clone(),
        mismatches: e.mismatches,
        mismatch_examples: e.mismatch_examples.clone(),
        rate: e.requests() as f64 / secs,
        latency_us: Percentiles::of(&h),
        records: e.records,
        records_per_s: e.records as f64 / secs,
        histogram: encode_histogram(&h),
    }
}

/// What a run needs besides its measurements.
pub struct RunMeta<'a> {
    pub system: &'a str,
    pub workload: &'a str,
    pub load: Option<Load>,
    pub duration_s: f64,
    pub warmup_s: f64,
    pub rounds: Vec<Round>,
}

pub fn run_report(meta: RunMeta<'_>, m: Measured) -> RunReport {
    let secs = meta.duration_s;
    let mut total = EndpointStats::default();
    let mut endpoints = Vec::new();
    for (name, e) in &m.endpoints {
        endpoints.push(endpoint_report(name, e, secs));
        total.ok += e.ok;
        total.mismatches += e.mismatches;
        total.records += e.records;
        for (k, v) in &e.errors {
            *total.errors.entry(k.clone()).or_default() += v;
        }
        total
            .mismatch_examples
            .extend(e.mismatch_examples.iter().take(2).cloned());
        total
            .error_examples
            .extend(e.error_examples.iter().take(2).cloned());
        if let Some(h) = &e.latency {
            total
                .latency
                .get_or_insert_with(crate::stats::histogram)
                .add(h)
                .expect("same histogram bounds");
        }
    }
    let total = endpoint_report("all", &total, secs);
    let measured: Vec<&Round> = meta.rounds.iter().filter(|r| r.measured).collect();
    let sync = (!meta.rounds.is_empty()).then(|| {
        let full: Vec<_> = measured.iter().filter(|r| r.kind == "full").collect();
        let inc: Vec<_> = measured.iter().filter(|r| r.kind != "full").collect();
        let full_records: u64 = full.iter().map(|r| r.records).sum();
        let full_secs: f64 = full.iter().map(|r| r.secs).sum();
        SyncSummary {
            full_rounds: full.len(),
            full_records,
            full_secs,
            full_records_per_s: if full_secs > 0.0 {
                full_records as f64 / full_secs
            } else {
                0.0
            },
            incremental_rounds: inc.len(),
            incremental_records: inc.iter().map(|r| r.records).sum(),
            incremental_secs: inc.iter().map(|r| r.secs).sum(),
        }
    });
    let target_rate = match meta.load {
        Some(Load::Open { rate }) => Some(rate),
        _ => None,
    };
    let open = matches!(meta.load, Some(Load::Open { .. }));
    RunReport {
        system: meta.system.to_string(),
        workload: meta.workload.to_string(),
        load: meta.load,
        duration_s: meta.duration_s,
        warmup_s: meta.warmup_s,
        target_rate,
        achieved_rate: total.rate,
        total,
        endpoints,
        sync,
        rounds: meta.rounds,
        timeline: m.timeline,
        schedule_lag_us: (open && !m.lag.is_empty()).then(|| Percentiles::of(&m.lag)),
        abandoned: m.abandoned,
    }
}

fn thousands(n: f64) -> String {
    let s = format!("{:.0}", n.max(0.0));
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The workload name of `mixed`'s sync part.
pub const MIXED_SYNC: &str = "mixed: sync";

fn load_text(r: &RunReport) -> String {
    match r.load {
        // Each operation of mixed's sync part is a whole incremental sync (its pages
        // are the requests).
        Some(Load::Open { rate }) if r.workload == MIXED_SYNC => format!(
            "open loop, target {rate} incremental syncs/s, {}/s requests",
            thousands(r.achieved_rate)
        ),
        Some(Load::Open { rate }) => format!(
            "open loop, target {}/s, achieved {}/s",
            thousands(rate),
            thousands(r.achieved_rate)
        ),
        Some(Load::Closed { concurrency }) => format!(
            "closed loop, {concurrency} in flight, {}/s",
            thousands(r.achieved_rate)
        ),
        None => format!("{}/s", thousands(r.achieved_rate)),
    }
}

/// The plain table printed at the end of a run.
pub fn table(report: &Report) -> String {
    let mut out = String::new();
    for r in &report.runs {
        let _ = writeln!(
            out,
            "\n{} {} — {}; {:.0} s measured after {:.0} s warm-up",
            r.system,
            r.workload,
            load_text(r),
            r.duration_s,
            r.warmup_s
        );
        let _ = writeln!(
            out,
            "{:<40} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7} {:>7} {:>10}",
            "endpoint",
            "requests",
            "rate/s",
            "p50",
            "p90",
            "p99",
            "p99.9",
            "max",
            "errors",
            "wrong",
            "records/s"
        );
        let rows = r.endpoints.iter().chain(std::iter::once(&r.total));
        for e in rows {
            let l = &e.latency_us;
            let _ = writeln!(
                out,
                "{:<40} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7} {:>7} {:>10}",
                e.name,
                thousands(e.requests as f64),
                thousands(e.rate),
                fmt_us(l.p50),
                fmt_us(l.p90),
                fmt_us(l.p99),
                fmt_us(l.p999),
                fmt_us(l.max),
                e.errors,
                e.mismatches,
                if e.records > 0 {
                    thousands(e.records_per_s)
                } else {
                    "-".into()
                },
            );
        }
        for e in &r.endpoints {
            for (kind, n) in &e.errors_by_kind {
                let _ = writeln!(out, "  error {kind} ×{n} on {}", e.name);
            }
            for x in e.error_examples.iter().chain(&e.mismatch_examples) {
                let _ = writeln!(out, "  e.g. {x}");
            }
        }
        if let Some(s) = &r.sync {
            let _ = write!(
                out,
                "full sync: {} rounds, {} records in {:.2} s = {} records/s",
                s.full_rounds,
                thousands(s.full_records as f64),
                s.full_secs,
                thousands(s.full_records_per_s),
            );
            if s.incremental_rounds > 0 {
                let _ = write!(
                    out,
                    "; incremental: {} rounds, {} records in {:.2} s",
                    s.incremental_rounds,
                    thousands(s.incremental_records as f64),
                    s.incremental_secs
                );
            }
            let _ = writeln!(out);
        }
        if let Some(lag) = &r.schedule_lag_us {
            let _ = writeln!(
                out,
                "load generator's own lag behind the schedule: p50 {} p99 {} max {}",
                fmt_us(lag.p50),
                fmt_us(lag.p99),
                fmt_us(lag.max)
            );
        }
        if r.timeline.len() >= 10 {
            let p99: Vec<u64> = r.timeline.iter().map(|t| t.p99_us).collect();
            let mut sorted = p99.clone();
            sorted.sort_unstable();
            let _ = writeln!(
                out,
                "per-second p99 over the run: median {} worst {} (of {} seconds)",
                fmt_us(sorted[sorted.len() / 2]),
                fmt_us(*sorted.last().expect("non-empty")),
                sorted.len()
            );
        }
        if r.abandoned > 0 {
            let _ = writeln!(out, "{} operations abandoned (never answered)", r.abandoned);
        }
    }
    let m = &report.machine;
    let _ = writeln!(
        out,
        "\nmachine: {} CPUs ({}), {} GiB; 1-min load average {} before, {} after; {}",
        m.cpus,
        m.cpu_model.as_deref().unwrap_or("unknown CPU"),
        m.memory_gib.map_or("?".into(), |g| format!("{g}")),
        m.load_before.map_or("?".into(), |l| format!("{l:.2}")),
        m.load_after.map_or("?".into(), |l| format!("{l:.2}")),
        if report.clean {
            "no errors, no wrong answers"
        } else {
            "ERRORS OR WRONG ANSWERS (see above)"
        }
    );
    out
}

/// Writes `<out>/<name>.json`; returns its path.
pub fn write_json(report: &Report, out: &Path) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let path = out.join(format!("{}.json", report.name));
    let text = serde_json::to_string_pretty(report)?;
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

pub fn read_json(path: &Path) -> anyhow::Result<Report> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let r: Report =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    anyhow::ensure!(
        r.format == FORMAT,
        "{} is not a {FORMAT} report",
        path.display()
    );
    Ok(r)
}

fn change(before: f64, after: f64) -> String {
    if before == 0.0 {
        return "   n/a".into();
    }
    format!("{:+6.1}%", (after - before) / before * 100.0)
}

/// The change from `before` to `after`, endpoint by endpoint (runs matched by system
/// and workload, endpoints by name). Lower latency and higher rates are better.
pub fn compare(before: &Report, after: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "change from {} ({}) to {} ({})",
        before.name, before.started_at, after.name, after.started_at
    );
    let _ = writeln!(
        out,
        "{:<52} {:>16} {:>16} {:>16} {:>16} {:>16}",
        "run / endpoint", "rate/s", "p50", "p99", "p99.9", "max"
    );
    for a in &after.runs {
        let Some(b) = before
            .runs
            .iter()
            .find(|b| b.system == a.system && b.workload == a.workload)
        else {
            let _ = writeln!(
                out,
                "{} {}: not in the earlier report",
                a.system, a.workload
            );
            continue;
        };
        for ea in a.endpoints.iter().chain(std::iter::once(&a.total)) {
            let eb = if ea.name == "all" {
                Some(&b.total)
            } else {
                b.endpoints.iter().find(|e| e.name == ea.name)
            };
            let Some(eb) = eb else {
                continue;
            };
            let cell = |x: u64, y: u64| format!("{:>8} {}", fmt_us(y), change(x as f64, y as f64));
            let _ = writeln!(
                out,
                "{:<52} {:>16} {:>16} {:>16} {:>16} {:>16}",
                format!("{} {}: {}", a.system, a.workload, ea.name),
                format!("{:>8.0} {}", ea.rate, change(eb.rate, ea.rate)),
                cell(eb.latency_us.p50, ea.latency_us.p50),
                cell(eb.latency_us.p99, ea.latency_us.p99),
                cell(eb.latency_us.p999, ea.latency_us.p999),
                cell(eb.latency_us.max, ea.latency_us.max),
            );
        }
        if let (Some(sa), Some(sb)) = (&a.sync, &b.sync) {
            let _ = writeln!(
                out,
                "{:<52} {:>16}",
                format!("{} {}: full sync records/s", a.system, a.workload),
                format!(
                    "{:>8.0} {}",
                    sa.full_records_per_s,
                    change(sb.full_records_per_s, sa.full_records_per_s)
                )
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_round_trip() {
        let mut h = crate::stats::histogram();
        for v in [90u64, 120, 150, 900, 2_500] {
            h.record(v).unwrap();
        }
        let back = decode_histogram(&encode_histogram(&h)).unwrap();
        assert_eq!(back.len(), 5);
        assert_eq!(back.value_at_quantile(0.5), h.value_at_quantile(0.5));
    }

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(thousands(1234567.0), "1,234,567");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(change(100.0, 150.0), " +50.0%");
    }
}
