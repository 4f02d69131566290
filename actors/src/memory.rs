//! Handing freed memory back to the system after a load.
//!
//! A load or a restore allocates and frees gigabytes of short-lived buffers (decoded
//! store rows, parsed numbers, sort vectors) between the records it keeps. glibc's
//! allocator keeps what was freed for later allocations rather than returning it, so
//! the process would stay that much larger than what it holds for as long as it runs
//! (at a million people, some 100–150 MiB). `malloc_trim` returns the free pages, also
//! those between live allocations.

/// Returns the allocator's free pages to the system (glibc on Linux; elsewhere a no-op).
pub fn return_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` only releases memory the allocator holds free; it takes no
    // pointer and may be called from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Records a load or an import must hold for [`after_bulk`] to trim. A small one frees a
/// few kilobytes, not worth a walk of the whole heap: with a million people loaded, or
/// thousands of workspaces, the walk takes milliseconds, holds the allocator's locks
/// that every other thread's allocations wait on, and hands back pages the next
/// allocations fault in again.
pub const TRIM_AFTER_RECORDS: usize = 50_000;

/// Returns the free pages after a load or an import of `records` records, when it was
/// large enough to have left many (see [`TRIM_AFTER_RECORDS`]).
pub fn after_bulk(records: usize) {
    if records >= TRIM_AFTER_RECORDS {
        return_free_memory();
    }
}
