//! Threads below the API's scheduling priority, for work that must give way to lookups
//! and writes: webhook catch-ups (`webhooks::runtime`, as idle work) and full list pages
//! (`http::pages`, a few `nice` steps down).
//!
//! On Linux, `sched_setscheduler` and `setpriority` on a thread id change that thread
//! alone. A refusal leaves the thread at the default: weaker isolation, never a failure.

/// How far below the API a thread runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Below {
    /// At this niceness (0 is the default, 19 the lowest): still a share of every core
    /// under a load that keeps them all busy.
    Nice(i32),
    /// As idle work (`SCHED_IDLE`): only while no thread at a normal priority wants a
    /// core, given up as soon as one does; at [`IDLE_FALLBACK_NICE`] where the idle
    /// policy is refused.
    Idle,
}

/// The niceness of an [`Below::Idle`] thread, which is also its niceness where idle
/// scheduling is refused.
pub const IDLE_FALLBACK_NICE: i32 = 19;

/// A pool of `threads` threads named `<name>-<i>`, each scheduled `below`.
pub fn pool(name: &'static str, threads: usize, below: Below) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(move |i| format!("{name}-{i}"))
        .start_handler(move |_| lower_this_thread(below))
        .build()
        .unwrap_or_else(|e| panic!("the {name} pool starts: {e}"))
}

/// Schedules the calling thread `below`.
pub fn lower_this_thread(below: Below) {
    #[cfg(target_os = "linux")]
    // SAFETY: `gettid`, `sched_setscheduler` and `setpriority` take plain integers and a
    // parameter struct on our stack, and keep no pointer to it.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::pid_t;
        let nice = match below {
            Below::Nice(nice) => nice,
            Below::Idle => IDLE_FALLBACK_NICE,
        };
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice);
        if below == Below::Idle {
            let param = libc::sched_param { sched_priority: 0 };
            libc::sched_setscheduler(tid, libc::SCHED_IDLE, &param);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = below;
}

/// The calling thread's scheduling policy and niceness (for tests of the pools).
#[cfg(all(test, target_os = "linux"))]
pub fn this_thread() -> (i32, i32) {
    // SAFETY: `gettid`, `sched_getscheduler` and `getpriority` take plain integers.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::pid_t;
        (
            libc::sched_getscheduler(tid),
            libc::getpriority(libc::PRIO_PROCESS, tid as libc::id_t),
        )
    }
}
