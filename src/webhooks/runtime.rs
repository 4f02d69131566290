//! Where a catch-up's CPU goes: a pool and a runtime below the API's scheduling priority.
//!
//! A live endpoint's deliveries are small and wanted at once: they are made on their
//! task, at the API's priority. A catch-up renders 500 changes a batch as fast as its
//! receiver answers: left at the API's priority on a machine of a few cores, it would
//! take its share of every core from the lookups and writes beside it. So a large batch
//! is rendered on [`bulk`], whose threads are scheduled as idle work (Linux's
//! `SCHED_IDLE`): they run on a core only while no thread at a normal priority wants it,
//! and give it up as soon as one does, where even `nice` 19 would keep a share of every
//! core and make a woken request wait for its time slice. A catch-up slows down under
//! load instead of the API, and runs at full speed otherwise. Where idle scheduling is
//! refused, the threads run at `nice` [`NICE`].
//!
//! A catch-up's attempts (signing a megabyte, encrypting it, writing it to the socket)
//! are as heavy as its renders: they are sent on [`bulk_io`], a runtime whose one
//! thread is scheduled the same way, and [`BULK_TURNS`] at a time ([`bulk_turn`]). Idle
//! scheduling alone leaves the API the cores' time, but not the rest: ten endpoints
//! catching up at once each woke a store connection, a render and a send hundreds of
//! times a second (23,000 context switches a second on two cores), and lookups' p99
//! went from 0.6 to 2.4 ms beside them. Taking turns, the catch-ups together go about
//! as fast as one, and so cost the API about what one does; and while the API answers
//! requests, the turns start [`BUSY_GAP`] apart, so that they cost it little.
//!
//! The pool and the runtime are the process's, started on first use: they hold nothing
//! but the renders and attempts under way (no store handle, no state of a server), so
//! servers started and stopped in one process (as tests do) share them. The endpoints'
//! tasks themselves run on the server's runtime and end with it.

use crate::priority::Below;
use std::sync::OnceLock;

/// The bulk pool's niceness where idle scheduling is refused.
pub const NICE: i32 = crate::priority::IDLE_FALLBACK_NICE;

/// Threads of the bulk pool.
const THREADS: usize = 2;

/// The pool large batches are rendered on, as idle work.
pub fn bulk() -> &'static rayon::ThreadPool {
    static POOL: OnceLock<rayon::ThreadPool> = OnceLock::new();
    POOL.get_or_init(|| crate::priority::pool("recruitd-bulk", THREADS, Below::Idle))
}

/// The runtime a catch-up's attempts are sent on, as idle work.
pub fn bulk_io() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("recruitd-bulk-io")
            .on_thread_start(|| crate::priority::lower_this_thread(Below::Idle))
            .enable_all()
            .build()
            .expect("the bulk attempts' runtime starts")
    })
}

/// A turn to send a catch-up's attempt: [`BULK_TURNS`] at a time in the process, each
/// until its answer comes or for [`TURN_MOST`] (see the module's docs).
pub async fn bulk_turn() -> tokio::sync::SemaphorePermit<'static> {
    static TURNS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(BULK_TURNS);
    TURNS.acquire().await.expect("the turns are never closed")
}

/// Catch-up attempts under way at once in the process. One: with two, beside ten
/// endpoints catching up, lookups' p99 was 1.5 ms rather than 1.1–1.3, and writes' 7–8
/// ms rather than 4–5 (100,000 people, two cores).
pub const BULK_TURNS: usize = 1;

/// While the API answers requests, a catch-up's attempts start at least this far apart
/// in the process (so at most 100 a second, 50,000 changes, across every endpoint
/// catching up); while it is quiet, as soon as the one before is answered. Beside ten
/// endpoints catching up, 1,000 lookups and 100 writes a second had a p99 of 0.74 and
/// 0.77 ms (0.51 and 0.61 quiet) and of 3.56 and 3.46 ms (3.23 and 3.25 quiet) with
/// this gap; 1.16–1.18 and 3.71–3.85 ms with none (100,000 people, two cores).
pub const BUSY_GAP: std::time::Duration = std::time::Duration::from_millis(10);

/// The longest an attempt holds its turn: several times an attempt's whole round
/// trip to a receiver nearby (one endpoint catching up on loopback took 352 batches of
/// 500 changes a second, under 3 ms each), so that a receiver far away, or one that
/// hangs, holds up no other endpoint's catch-up for longer.
pub const TURN_MOST: std::time::Duration = std::time::Duration::from_millis(20);

#[cfg(test)]
mod tests {
    use crate::priority::this_thread;

    #[cfg(target_os = "linux")]
    #[test]
    fn bulk_threads_run_as_idle_work() {
        let (policy, nice) = super::bulk().install(this_thread);
        assert_eq!(policy, libc::SCHED_IDLE);
        assert_eq!(nice, super::NICE);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn bulk_attempts_run_as_idle_work() {
        let (policy, nice) = super::bulk_io()
            .block_on(super::bulk_io().spawn(async { this_thread() }))
            .unwrap();
        assert_eq!(policy, libc::SCHED_IDLE);
        assert_eq!(nice, super::NICE);
    }
}
