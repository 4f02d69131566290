//! Load drivers: open loop at a fixed arrival rate, closed loop at a fixed concurrency.
//!
//! Requests are sent from client *shards*: each shard is one thread running its own
//! single-threaded async runtime, with its own connections (see `http::Pool`), so a
//! request is scheduled, sent and answered on one thread with no hand-off between
//! threads (every hand-off is a wake-up that would add to the latencies measured).
//!
//! Open loop: each shard walks its share of the schedule (slot `i` at `start + i /
//! rate`, slots dealt round-robin to shards) and starts each slot's operation at once,
//! however many are already in flight. It waits for the next slot on a `timerfd` in the
//! runtime's own event loop: precise to microseconds, where the runtime's timer ticks
//! in milliseconds and would batch requests and add up to a millisecond of false
//! latency. Latency is measured from the slot, not from when the request left, so a
//! stall in the server (or in the harness) shows as the latency every request
//! scheduled behind it really saw (coordinated-omission correction); how late the
//! harness itself started each slot is recorded too.
//!
//! Closed loop: `concurrency` tasks, spread over the shards, each send the next request
//! when the previous one is answered: the maximum throughput at that concurrency,
//! latency from each send.
//!
//! Both stop by themselves: nothing is scheduled past the end of the window, and
//! operations still running a drain period after it are abandoned and counted.

use crate::stats::Recorder;
use std::future::Future;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One kind of operation a scenario sends.
pub trait Workload: Send + Sync + 'static {
    /// Runs operation number `seq`, meant to start at `intended`, recording every
    /// request it makes.
    fn op(self: Arc<Self>, seq: u64, intended: Instant) -> impl Future<Output = ()> + Send;

    /// Prepares the calling shard before its first slot (opens its connections).
    fn warm(self: Arc<Self>, _share: usize) -> impl Future<Output = ()> + Send {
        async {}
    }
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

/// Drives `w` from `rec.measure_from - warmup` to `rec.measure_to` on `shards` client
/// threads; `warm` connections are opened ahead, spread over the shards.
pub async fn run<W: Workload>(
    w: Arc<W>,
    rec: Arc<Recorder>,
    load: Load,
    warmup: Duration,
    shards: usize,
    warm: usize,
) {
    let start = rec
        .measure_from
        .checked_sub(warmup)
        .unwrap_or(rec.measure_from);
    let shards = shards.max(1);
    let mut threads = Vec::with_capacity(shards);
    // Every shard's runtime keeps running until all shards are done: a connection (to
    // the server or the baseline database) opened on one thread's runtime may be in use
    // on another's, and dropping its runtime early would fail that request.
    let all_done = Arc::new(tokio::sync::Barrier::new(shards));
    for k in 0..shards {
        let (w, rec, all_done) = (w.clone(), rec.clone(), all_done.clone());
        let share = warm / shards + usize::from(k < warm % shards);
        let t = std::thread::Builder::new()
            .name(format!("client-{k}"))
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("building a client runtime");
                rt.block_on(async move {
                    w.clone().warm(share).await;
                    match load {
                        Load::Open { rate } => open_shard(w, rec, rate, start, k, shards).await,
                        Load::Closed { concurrency } => {
                            closed_shard(w, rec, concurrency, start, k, shards).await
                        }
                    }
                    all_done.wait().await;
                });
            })
            .expect("spawning a client thread");
        threads.push(t);
    }
    // Joined off the async workers.
    let _ = tokio::task::spawn_blocking(move || {
        for t in threads {
            let _ = t.join();
        }
    })
    .await;
}

/// Slots `k, k + n, k + 2n, …` of the schedule, each started on time.
async fn open_shard<W: Workload>(
    w: Arc<W>,
    rec: Arc<Recorder>,
    rate: f64,
    start: Instant,
    k: usize,
    n: usize,
) {
    let end = rec.measure_to;
    let running = Arc::new(Running::default());
    if rate > 0.0 {
        let mut timer = PreciseTimer::new().expect("creating a timerfd");
        let mut i = k as u64;
        loop {
            let intended = start + Duration::from_secs_f64(i as f64 / rate);
            if intended >= end {
                break;
            }
            timer.sleep_until(intended).await;
            let (w, rec, guard) = (w.clone(), rec.clone(), running.enter());
            tokio::spawn(async move {
                rec.record_lag(intended, Instant::now());
                w.op(i, intended).await;
                drop(guard);
            });
            i += n as u64;
        }
    } else {
        tokio::time::sleep_until(end.into()).await;
    }
    running.drain(&rec).await;
}

/// `concurrency` loops spread over the shards (`k` of `n`).
async fn closed_shard<W: Workload>(
    w: Arc<W>,
    rec: Arc<Recorder>,
    concurrency: usize,
    start: Instant,
    k: usize,
    n: usize,
) {
    let end = rec.measure_to;
    tokio::time::sleep_until(start.into()).await;
    let running = Arc::new(Running::default());
    for c in (k..concurrency.max(1)).step_by(n) {
        let (w, guard) = (w.clone(), running.enter());
        tokio::spawn(async move {
            let mut seq = c as u64;
            loop {
                let now = Instant::now();
                if now >= end {
                    break;
                }
                w.clone().op(seq, now).await;
                seq += concurrency as u64;
            }
            drop(guard);
        });
    }
    running.drain(&rec).await;
}

/// Operations in flight, and a wake-up when the last one finishes.
#[derive(Default)]
struct Running {
    count: AtomicUsize,
    idle: tokio::sync::Notify,
}

struct RunningGuard(Arc<Running>);

impl Running {
    fn enter(self: &Arc<Self>) -> RunningGuard {
        self.count.fetch_add(1, Ordering::AcqRel);
        RunningGuard(self.clone())
    }

    /// Waits for every operation, at most `DRAIN` past the window; the rest are
    /// abandoned (they end with the shard's runtime) and counted as errors.
    async fn drain(&self, rec: &Recorder) {
        let deadline = tokio::time::Instant::from_std(rec.measure_to) + DRAIN;
        loop {
            let notified = self.idle.notified();
            if self.count.load(Ordering::Acquire) == 0 {
                return;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                let left = self.count.load(Ordering::Acquire) as u64;
                eprintln!("{left} operations still running {DRAIN:?} after the end; abandoned");
                rec.errors.fetch_add(left, Ordering::Relaxed);
                rec.abandoned.fetch_add(left, Ordering::Relaxed);
                return;
            }
        }
    }
}

impl Drop for RunningGuard {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

/// Sleeps to the microsecond inside the runtime's event loop: a `timerfd` (a kernel
/// high-resolution timer) registered with the reactor.
struct PreciseTimer {
    fd: tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>,
}

impl PreciseTimer {
    fn new() -> std::io::Result<Self> {
        use std::os::fd::FromRawFd;
        // SAFETY: timerfd_create has no memory-safety preconditions; the descriptor it
        // returns is owned from here on.
        let raw = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if raw < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh descriptor nobody else owns.
        let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(raw) };
        // SAFETY: the `OwnedFd` keeps the descriptor open, and always the same one, for
        // as long as the `AsyncFd` owns it.
        let fd = unsafe {
            tokio::io::unix::AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE)
        }
        .map_err(|e| std::io::Error::other(e.to_string()))?;
        Ok(PreciseTimer { fd })
    }

    async fn sleep_until(&mut self, deadline: Instant) {
        use std::os::fd::AsRawFd;
        let now = Instant::now();
        if deadline <= now {
            return;
        }
        let d = deadline - now;
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: d.as_secs() as libc::time_t,
                tv_nsec: d.subsec_nanos().max(1) as libc::c_long,
            },
        };
        let fd = self.fd.get_ref().as_raw_fd();
        // SAFETY: `fd` is a timerfd we own; `spec` is a valid itimerspec.
        if unsafe { libc::timerfd_settime(fd, 0, &spec, std::ptr::null_mut()) } < 0 {
            std::thread::sleep(d);
            return;
        }
        loop {
            let Ok(mut guard) = self.fd.readable().await else {
                std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
                return;
            };
            let mut expirations = [0u8; 8];
            // SAFETY: reading 8 bytes into an 8-byte buffer from our timerfd.
            let n = unsafe { libc::read(fd, expirations.as_mut_ptr().cast(), 8) };
            if n == 8 {
                return;
            }
            guard.clear_ready();
        }
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
