//! Where a catch-up's CPU goes: a pool below the API's scheduling priority.
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
//! The pool is the process's, started on first use: it holds nothing but the renders
//! under way, so servers started and stopped in one process (as tests do) share it.
//! The endpoints' tasks themselves run on the server's runtime and end with it.

use std::sync::OnceLock;

/// The bulk pool's niceness where idle scheduling is refused (0 is the default; 19 the
/// lowest priority).
pub const NICE: i32 = 19;

/// Threads of the bulk pool.
const THREADS: usize = 2;

/// The pool large batches are rendered on, as idle work.
pub fn bulk() -> &'static rayon::ThreadPool {
    static POOL: OnceLock<rayon::ThreadPool> = OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(THREADS)
            .thread_name(|i| format!("recruitd-bulk-{i}"))
            .start_handler(|_| lower_priority())
            .build()
            .expect("the bulk render pool starts")
    })
}

/// Schedules the calling thread as idle work (on Linux, `sched_setscheduler` and
/// `setpriority` on a thread id change that thread alone), and at [`NICE`] should the
/// idle policy be refused. A refusal leaves it at the default: weaker isolation, never a
/// failure.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: `gettid`, `sched_setscheduler` and `setpriority` take plain integers and a
    // parameter struct on our stack, and keep no pointer to it.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::pid_t;
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, NICE);
        let param = libc::sched_param { sched_priority: 0 };
        libc::sched_setscheduler(tid, libc::SCHED_IDLE, &param);
    }
}

#[cfg(test)]
mod tests {
    #[cfg(target_os = "linux")]
    #[test]
    fn bulk_threads_run_as_idle_work() {
        let (policy, nice) = super::bulk().install(|| {
            // SAFETY: as above.
            unsafe {
                let tid = libc::syscall(libc::SYS_gettid) as libc::pid_t;
                (
                    libc::sched_getscheduler(tid),
                    libc::getpriority(libc::PRIO_PROCESS, tid as libc::id_t),
                )
            }
        });
        assert_eq!(policy, libc::SCHED_IDLE);
        assert_eq!(nice, super::NICE);
    }
}
