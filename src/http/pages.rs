//! Where full list pages are written: a pool of threads just below the API's
//! scheduling priority, off the HTTPS workers.
//!
//! A sync client reads pages of up to 500 records, each written in 0.3–0.9 ms at a
//! million people, back to back on each of its connections. Written on the worker that
//! took the request, a page holds up every other request of that worker's connections
//! for as long: beside one full sync (three streams on a two-core machine), lookups'
//! p50 went from 0.3 to 1.0–1.3 ms. Written here, the worker goes back to its other
//! connections at once, and a lookup woken meanwhile takes the core from the page
//! (`nice` [`NICE`]). The pool stays at an ordinary priority, a few steps down, rather
//! than idle: under a load that keeps every core busy a sync still gets a share of them,
//! slower, never starved.
//!
//! Small pages stay on the worker: below [`OFF_THE_WORKER_FROM`] records the hop would
//! cost more than the page.

use crate::priority::Below;
use std::sync::OnceLock;

/// The pool threads' niceness (0 is the default; 19 the lowest priority).
pub const NICE: i32 = 5;

/// Pages of at least this `limit` are written on the pool.
pub const OFF_THE_WORKER_FROM: usize = 100;

/// The pool has a thread per CPU, as the workers do by default: pages written on the
/// workers could use every core, and so can these.
fn pool() -> &'static rayon::ThreadPool {
    static POOL: OnceLock<rayon::ThreadPool> = OnceLock::new();
    POOL.get_or_init(|| {
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        crate::priority::pool("recruitd-pages", threads, Below::Nice(NICE))
    })
}

/// Runs `write` on the pool and waits for it without holding the worker. A panic of
/// `write` is caught there (rayon would abort the process) and resumed here, on the
/// worker, as if the page had been written on it.
pub async fn write_off_the_worker<T: Send + 'static>(
    write: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (done, written) = tokio::sync::oneshot::channel();
    pool().spawn(move || {
        let _ = done.send(std::panic::catch_unwind(std::panic::AssertUnwindSafe(
            write,
        )));
    });
    match written
        .await
        .expect("the list pages' pool answers every job")
    {
        Ok(page) => page,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[actix_rt::test]
    async fn pages_are_written_on_the_pool_at_its_priority() {
        let name = write_off_the_worker(|| std::thread::current().name().map(str::to_string)).await;
        assert!(
            name.as_deref()
                .is_some_and(|n| n.starts_with("recruitd-pages-")),
            "{name:?}"
        );
        #[cfg(target_os = "linux")]
        {
            let (policy, nice) = write_off_the_worker(crate::priority::this_thread).await;
            // Lowering one's own priority is never refused; the policy stays the usual.
            assert_eq!((policy, nice), (libc::SCHED_OTHER, NICE));
        }
    }

    #[actix_rt::test]
    async fn a_panic_while_writing_reaches_the_caller_and_the_pool_goes_on() {
        let caller = actix_rt::spawn(write_off_the_worker(|| -> u32 { panic!("a bad page") }));
        let panic = caller
            .await
            .expect_err("the panic is the caller's")
            .into_panic();
        assert_eq!(panic.downcast_ref::<&str>(), Some(&"a bad page"));
        assert_eq!(write_off_the_worker(|| 7).await, 7);
    }
}
