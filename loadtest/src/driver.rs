//! Load drivers: open loop at a fixed arrival rate, closed loop at a fixed concurrency.
//!
//! Open loop: a dedicated thread walks the schedule (`start + i / rate`) with
//! high-resolution sleeps and hands each slot to the async runtime, which starts the
//! operation at once, however many are already in flight. Latency is measured from the
//! slot, not from when the request left, so a stall in the server (or in the harness)
//! shows as the latency every request scheduled behind it really saw. The runtime's own
//! timer ticks in milliseconds, which at thousands of requests a second would batch
//! them and add up to a millisecond of false latency; hence the thread.
//!
//! Closed loop: `concurrency` tasks each send the next request when the previous one is
//! answered: the maximum throughput at that concurrency, latency from each send.
//!
//! Both stop by themselves: nothing is scheduled past the end of the window, and
//! operations still running a drain period after it are abandoned and counted.

use crate::stats::Recorder;
use std::future::Future;
use std::io::{IsTerminal, Write};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinSet;

/// One kind of operation a scenario sends.
pub trait Workload: Send + Sync + 'static {
    /// Runs operation number `seq`, meant to start at `intended`, recording every
    /// request it makes.
    fn op(self: Arc<Self>, seq: u64, intended: Instant) -> impl Future<Output = ()> + Send;
}

#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize, PartialEq)]
#[serde(tag = "mode", rename_all = "lowercase")]
pub enum Load {
    /// Operations per second, on schedule whatever the answers do.
    Open { rate: f64 },
    /// Operations in flight at all times.
    Closed { concurrency: usize },
}

/// How long operations scheduled inside the window may take to finish once it ends.
const DRAIN: Duration = Duration::from_secs(30);

/// Drives `w` from `rec.measure_from - warmup` to `rec.measure_to`.
pub async fn run<W: Workload>(w: Arc<W>, rec: Arc<Recorder>, load: Load, warmup: Duration) {
    let start = rec
        .measure_from
        .checked_sub(warmup)
        .unwrap_or(rec.measure_from);
    let end = rec.measure_to;
    match load {
        Load::Open { rate } => open_loop(w, rec, rate, start, end).await,
        Load::Closed { concurrency } => closed_loop(w, rec, concurrency, start, end).await,
    }
}

async fn open_loop<W: Workload>(
    w: Arc<W>,
    rec: Arc<Recorder>,
    rate: f64,
    start: Instant,
    end: Instant,
) {
    if rate <= 0.0 {
        tokio::time::sleep_until(end.into()).await;
        return;
    }
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(u64, Instant)>();
    let ticker = std::thread::Builder::new()
        .name("schedule".into())
        .spawn(move || {
            precise_sleeps();
            let mut i: u64 = 0;
            loop {
                let intended = start + Duration::from_secs_f64(i as f64 / rate);
                if intended >= end {
                    break;
                }
                let now = Instant::now();
                if intended > now {
                    std::thread::sleep(intended - now);
                }
                if tx.send((i, intended)).is_err() {
                    break;
                }
                i += 1;
            }
        })
        .expect("spawning the schedule thread");
    let mut running = JoinSet::new();
    while let Some((seq, intended)) = rx.recv().await {
        let (w, rec) = (w.clone(), rec.clone());
        running.spawn(async move {
            rec.record_lag(intended, Instant::now());
            w.op(seq, intended).await;
        });
        while running.try_join_next().is_some() {}
    }
    let _ = ticker.join();
    drain(running, &rec).await;
}

async fn closed_loop<W: Workload>(
    w: Arc<W>,
    rec: Arc<Recorder>,
    concurrency: usize,
    start: Instant,
    end: Instant,
) {
    tokio::time::sleep_until(start.into()).await;
    let mut running = JoinSet::new();
    for c in 0..concurrency.max(1) {
        let w = w.clone();
        running.spawn(async move {
            let mut seq = c as u64;
            loop {
                let now = Instant::now();
                if now >= end {
                    break;
                }
                w.clone().op(seq, now).await;
                seq += concurrency as u64;
            }
        });
    }
    drain(running, &rec).await;
}

async fn drain(mut running: JoinSet<()>, rec: &Recorder) {
    let deadline = tokio::time::Instant::from_std(rec.measure_to) + DRAIN;
    while !running.is_empty() {
        match tokio::time::timeout_at(deadline, running.join_next()).await {
            Ok(_) => {}
            Err(_) => {
                let left = running.len() as u64;
                eprintln!("{left} operations still running {DRAIN:?} after the end; abandoned");
                rec.errors.fetch_add(left, Ordering::Relaxed);
                rec.abandoned.fetch_add(left, Ordering::Relaxed);
                running.shutdown().await;
            }
        }
    }
}

/// Asks the kernel to wake sleeps on time (the default slack is 50 µs, a quarter of
/// the interval at 5,000 requests a second).
fn precise_sleeps() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_TIMERSLACK only changes the calling thread's timer slack.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

/// Prints a progress line once a second (on a terminal, rewriting one line) and closes
/// the recorders' timeline intervals, until `done` resolves. `recs` are the parts of a
/// run, each with its label; they share one window.
pub async fn with_progress<F: Future>(
    recs: Vec<(String, Arc<Recorder>)>,
    warmup: Duration,
    show: bool,
    done: F,
) -> F::Output {
    let tty = show && std::io::stderr().is_terminal();
    let ticker = tokio::spawn(async move {
        let Some((_, first)) = recs.first() else {
            return;
        };
        let (from, to) = (first.measure_from, first.measure_to);
        let total = to.saturating_duration_since(from);
        let begin = from.checked_sub(warmup).unwrap_or(from);
        let mut next = tokio::time::Instant::from_std(begin) + Duration::from_secs(1);
        loop {
            tokio::time::sleep_until(next).await;
            next += Duration::from_secs(1);
            let now = Instant::now();
            let ticks: Vec<_> = recs.iter().map(|(l, r)| (l, r, r.tick(now))).collect();
            if !show {
                continue;
            }
            let phase = if now < from {
                format!("warm-up, {:.0} s left", (from - now).as_secs_f64())
            } else if now <= to {
                format!(
                    "{:.0}/{:.0} s",
                    (now - from).as_secs_f64(),
                    total.as_secs_f64()
                )
            } else {
                "draining".to_string()
            };
            let mut line = phase;
            for (label, rec, t) in &ticks {
                line += &format!(
                    " | {label} {}/s p50 {} p99 {} max {} errors {} wrong {}",
                    t.requests,
                    fmt_us(t.p50_us),
                    fmt_us(t.p99_us),
                    fmt_us(t.max_us),
                    rec.errors.load(Ordering::Relaxed),
                    rec.mismatches.load(Ordering::Relaxed),
                );
            }
            let mut err = std::io::stderr().lock();
            if tty {
                let _ = write!(err, "\r\x1b[2K{line}");
            } else {
                let _ = writeln!(err, "{line}");
            }
            let _ = err.flush();
        }
    });
    let out = done.await;
    ticker.abort();
    if tty {
        eprintln!();
    }
    out
}

/// Microseconds as a short human figure (`850µs`, `1.25ms`, `2.1s`).
pub fn fmt_us(us: u64) -> String {
    if us < 1_000 {
        format!("{us}µs")
    } else if us < 1_000_000 {
        format!("{:.2}ms", us as f64 / 1e3)
    } else {
        format!("{:.2}s", us as f64 / 1e6)
    }
}
