//! Wall-clock time for the parts of the server whose rules are stated in seconds (signed
//! URL expiry, per-key rate windows), with a manual clock tests can step.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

/// Where "now" comes from: the system clock, or a clock set by hand (tests step across
/// an expiry or a rate window without waiting).
#[derive(Clone, Debug, Default)]
pub enum Clock {
    #[default]
    System,
    /// Unix milliseconds, shared by every clone.
    Manual(Arc<AtomicI64>),
}

impl Clock {
    /// A manual clock at `unix_secs`.
    pub fn manual(unix_secs: i64) -> Clock {
        Clock::Manual(Arc::new(AtomicI64::new(unix_secs * 1000)))
    }

    /// Milliseconds since the Unix epoch.
    pub fn now_ms(&self) -> i64 {
        match self {
            Clock::System => chrono::Utc::now().timestamp_millis(),
            Clock::Manual(t) => t.load(Ordering::SeqCst),
        }
    }

    /// Seconds since the Unix epoch.
    pub fn now(&self) -> i64 {
        self.now_ms().div_euclid(1000)
    }

    /// Sets a manual clock to a whole second; a system clock is left alone.
    pub fn set(&self, unix_secs: i64) {
        self.set_ms(unix_secs * 1000);
    }

    /// Sets a manual clock; a system clock is left alone.
    pub fn set_ms(&self, unix_ms: i64) {
        if let Clock::Manual(t) = self {
            t.store(unix_ms, Ordering::SeqCst);
        }
    }

    /// Moves a manual clock on; a system clock is left alone.
    pub fn advance_ms(&self, ms: i64) {
        if let Clock::Manual(t) = self {
            t.fetch_add(ms, Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: i64 = 1_790_000_000;

    #[test]
    fn manual_clocks_are_shared_and_set() {
        let c = Clock::manual(T);
        let d = c.clone();
        d.set(T + 5);
        assert_eq!(c.now(), T + 5);
        assert!(Clock::System.now() > T - 100_000_000);
    }
}
