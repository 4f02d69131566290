//! Where a catch-up's CPU goes: a pool below the API's scheduling priority.
//!
//! A live endpoint's deliveries are small and wanted at once: they are made on their
//! task, at the API's priority. A catch-up renders 500 changes a batch as fast as its
//! receiver answers: left at the API's priority on a machine of a few cores, it would
//! take its share of every core from the lookups and writes beside it. So a large batch
//! is rendered on [`bulk`], whose threads run at `nice` [`NICE`]: while both want a
//! core, the kernel's scheduler gives such a thread about a tenth of the weight of one
//! at the default priority, and every core when nothing else wants one. A catch-up
//! slows down under load instead of the API, and runs at full speed otherwise.
//!
//! The pool is the process's, started on first use: it holds nothing but the renders
//! under way, so servers started and stopped in one process (as tests do) share it.
//! The endpoints' tasks themselves run on the server's runtime and end with it.

use std::sync::OnceLock;

/// The bulk pool's niceness (0 is the default; 19 the lowest priority).
pub const NICE: i32 = 10;

/// Threads of the bulk pool.
const THREADS: usize = 2;

/// The pool large batches are rendered on, at [`NICE`].
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

/// Lowers the calling thread's priority to [`NICE`] (on Linux, `setpriority` on a
/// thread id changes that thread alone). A refusal leaves it at the default: slower
/// isolation, never a failure.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: `gettid` and `setpriority` take plain integers and touch no memory of ours.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, NICE);
    }
}

#[cfg(test)]
mod tests {
    #[cfg(target_os = "linux")]
    #[test]
    fn bulk_threads_run_at_a_lower_priority() {
        let nice = super::bulk().install(|| {
            // SAFETY: as above.
            unsafe {
                let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
                libc::getpriority(libc::PRIO_PROCESS, tid)
            }
        });
        assert_eq!(nice, super::NICE);
    }
}
