//! Per-key request budgets: at most `N` requests in any 60-second window.
//!
//! # Window semantics
//! Each key has 61 one-second buckets covering the current second and the 60 before it.
//! A request is admitted only while the sum of those buckets is below the budget, and then
//! counted in the current second's bucket. Any 60-second window, wherever it starts,
//! lies within 61 consecutive whole seconds, so no 60-second window ever admits more than
//! the budget — a sliding window, not a fixed minute that would admit twice the budget
//! across its boundary, and not a token bucket, whose refill would admit a second burst
//! inside the same minute. The price of whole-second buckets is being up to one second
//! stricter than an exact sliding log, in exchange for constant memory per key (about
//! 250 bytes) whatever the budget.
//!
//! A refusal carries `Retry-After`: the whole seconds until enough of the oldest buckets
//! have left the window for the request to be admitted; repeated then, the identical
//! request succeeds (unless the same key spent the room meanwhile).
//!
//! Headers follow the IETF draft "RateLimit header fields for HTTP"
//! (`draft-ietf-httpapi-ratelimit-headers`): `RateLimit-Policy: "per-key";q=600;w=60` and
//! `RateLimit: "per-key";r=<remaining>;t=<seconds until the oldest counted request
//! leaves the window>`.
//!
//! # In a cluster
//! A workspace's requests are all answered by its writer, whose limiter counts them; the
//! windows are shared through the store so that the next writer goes on from them
//! (`crate::cluster::budgets`, which this limiter implements).
//!
//! # Requests without a valid key
//! They spend no key's budget, so they are counted per peer address instead
//! ([`PeerFailures`]), in the same kind of window: every 401 counts, and once a peer's
//! 401s in any 60 s reach `--failed-auth-per-minute`, its further requests without a valid
//! key are answered 429 `RATE_LIMITED` with `Retry-After` until the window has room. A
//! valid key from that address is never refused for it: a flood from one host cannot lock
//! out that host's legitimate clients (behind a proxy, all clients are one peer). Only
//! the first refusals of each peer's window are written to the access log, with a note
//! when the rest are left out; the metrics count every one.

use crate::clock::Clock;
use crate::cluster::budgets::KeyWindow;
use actors::model::ApiKey;
use dashmap::DashMap;
use parking_lot::Mutex;
use std::net::IpAddr;

/// Length of the window, in seconds.
pub const WINDOW_SECS: i64 = 60;
/// Buckets per key: the current second and the 60 before it.
const BUCKETS: usize = WINDOW_SECS as usize + 1;

/// The name of the policy in the `RateLimit-Policy` and `RateLimit` headers.
pub const POLICY_NAME: &str = "per-key";

/// Requests of one key in the last 61 seconds, per second.
struct Window {
    counts: [u32; BUCKETS],
    /// The newest second counted (Unix seconds); buckets hold `newest - 60 ..= newest`.
    newest: i64,
    /// The sum of `counts`, kept as buckets fill and empty.
    total: u64,
}

impl Window {
    fn new(now: i64) -> Self {
        Window {
            counts: [0; BUCKETS],
            newest: now,
            total: 0,
        }
    }

    fn slot(sec: i64) -> usize {
        sec.rem_euclid(BUCKETS as i64) as usize
    }

    /// Moves the window to `now`, emptying the buckets of seconds that left it. A clock
    /// that stepped back is treated as standing still.
    fn advance(&mut self, now: i64) {
        if now <= self.newest {
            return;
        }
        let steps = (now - self.newest).min(BUCKETS as i64);
        for s in 1..=steps {
            let slot = Self::slot(self.newest + s);
            self.total -= self.counts[slot] as u64;
            self.counts[slot] = 0;
        }
        self.newest = now;
    }

    /// Requests counted in seconds `from ..= newest`.
    fn count_from(&self, from: i64) -> u64 {
        (from.max(self.newest - WINDOW_SECS)..=self.newest)
            .map(|s| self.counts[Self::slot(s)] as u64)
            .sum()
    }

    /// Seconds from `now` until the oldest counted request leaves the window (0: none).
    fn reset_after(&self) -> u64 {
        (self.newest - WINDOW_SECS..=self.newest)
            .find(|s| self.counts[Self::slot(*s)] > 0)
            .map_or(0, |oldest| (oldest + BUCKETS as i64 - self.newest) as u64)
    }

    /// Whole seconds until a request would be admitted under `limit`.
    fn retry_after(&self, limit: u64) -> u64 {
        (1..=BUCKETS as i64)
            .find(|r| self.count_from(self.newest + r - WINDOW_SECS) < limit)
            .unwrap_or(BUCKETS as i64) as u64
    }
}

/// What the limiter decided for one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    /// The key's budget per window.
    pub limit: u32,
    /// Requests the key may still make now.
    pub remaining: u32,
    /// Seconds until the oldest counted request leaves the window.
    pub reset: u64,
    /// On a refusal, whole seconds after which the request is admitted.
    pub retry_after: u64,
}

impl Decision {
    pub fn policy_header(&self) -> String {
        format!("\"{POLICY_NAME}\";q={};w={WINDOW_SECS}", self.limit)
    }

    pub fn state_header(&self) -> String {
        format!("\"{POLICY_NAME}\";r={};t={}", self.remaining, self.reset)
    }
}

/// One key's window, and what the cluster needs to share it.
struct Counted {
    window: Window,
    workspace: uuid::Uuid,
    /// Whether it counted a request since it was last shared.
    changed: bool,
}

/// The budgets of every key.
pub struct RateLimiter {
    default_per_minute: u32,
    windows: DashMap<String, Mutex<Counted>>,
    clock: Clock,
}

impl RateLimiter {
    pub fn new(default_per_minute: u32, clock: Clock) -> Self {
        RateLimiter {
            default_per_minute: default_per_minute.max(1),
            windows: DashMap::new(),
            clock,
        }
    }

    /// The budget of a key: its own override, else the server default.
    pub fn limit_of(&self, key: &ApiKey) -> u32 {
        key.rate_limit_per_minute
            .unwrap_or(self.default_per_minute)
            .max(1)
    }

    /// Counts one request of `key` if its budget allows it.
    pub fn check(&self, key: &ApiKey) -> Decision {
        let limit = self.limit_of(key);
        let now = self.clock.now();
        // The map's shard lock is held only to find the key's own lock.
        let entry = match self.windows.get(&key.id) {
            Some(e) => e,
            None => {
                self.windows
                    .entry(key.id.clone())
                    .or_insert_with(|| Mutex::new(Counted::new(key.workspace_id, now)));
                self.windows.get(&key.id).expect("just inserted")
            }
        };
        let mut counted = entry.lock();
        let Counted {
            window: w, changed, ..
        } = &mut *counted;
        w.advance(now);
        // A clock that stepped back counts as standing still.
        let now = w.newest;
        let used = w.total;
        if used < limit as u64 {
            w.counts[Window::slot(now)] += 1;
            w.total += 1;
            *changed = true;
            Decision {
                allowed: true,
                limit,
                remaining: (limit as u64 - used - 1) as u32,
                reset: w.reset_after(),
                retry_after: 0,
            }
        } else {
            Decision {
                allowed: false,
                limit,
                remaining: 0,
                reset: w.reset_after(),
                retry_after: w.retry_after(limit as u64),
            }
        }
    }
}

impl Counted {
    fn new(workspace: uuid::Uuid, now: i64) -> Counted {
        Counted {
            window: Window::new(now),
            workspace,
            changed: false,
        }
    }
}

impl crate::cluster::budgets::Budgets for RateLimiter {
    fn changed(&self) -> Vec<KeyWindow> {
        let now = self.clock.now();
        let mut out = Vec::new();
        for entry in self.windows.iter() {
            let mut c = entry.value().lock();
            if !c.changed {
                continue;
            }
            c.changed = false;
            c.window.advance(now);
            let newest = c.window.newest;
            let mut counts = [0u32; BUCKETS];
            for (i, n) in counts.iter_mut().enumerate() {
                *n = c.window.counts[Window::slot(newest - WINDOW_SECS + i as i64)];
            }
            out.push(KeyWindow {
                workspace: c.workspace,
                key: entry.key().clone(),
                newest,
                counts,
            });
        }
        out
    }

    fn merge(&self, windows: &[KeyWindow]) {
        let now = self.clock.now();
        for other in windows {
            let entry = self
                .windows
                .entry(other.key.clone())
                .or_insert_with(|| Mutex::new(Counted::new(other.workspace, now)));
            let mut c = entry.lock();
            let w = &mut c.window;
            w.advance(now);
            // Seconds another node's clock put ahead of this one count as this one's
            // current second (the clocks' skew is what the budget is exact to).
            let mut theirs = [0u64; BUCKETS];
            for (i, n) in other.counts.iter().enumerate() {
                let second = (other.newest - WINDOW_SECS + i as i64).min(w.newest);
                if second >= w.newest - WINDOW_SECS {
                    theirs[Window::slot(second)] += u64::from(*n);
                }
            }
            for (slot, n) in theirs.into_iter().enumerate() {
                let n = u32::try_from(n).unwrap_or(u32::MAX);
                if n > w.counts[slot] {
                    w.total += u64::from(n - w.counts[slot]);
                    w.counts[slot] = n;
                }
            }
        }
    }

    fn now(&self) -> i64 {
        self.clock.now()
    }
}

/// Default of `--failed-auth-per-minute`: far above what a client with a wrong key or a
/// test suite's refusals come to, far below a flood.
pub const DEFAULT_FAILED_AUTH_PER_MINUTE: u32 = 1_200;

/// Refusals of each peer written to the access log per window; the rest are counted.
pub const LOGGED_FAILURES_PER_WINDOW: u64 = 10;

/// Peer addresses tracked at most; beyond it, peers whose window is empty are forgotten,
/// and a new peer is not tracked until there is room (bounded memory under a flood from
/// many addresses).
const MAX_PEERS: usize = 100_000;

/// Requests without a valid key, per peer address (see the module doc).
pub struct PeerFailures {
    per_minute: u32,
    windows: DashMap<IpAddr, Mutex<Window>>,
    clock: Clock,
}

impl PeerFailures {
    pub fn new(per_minute: u32, clock: Clock) -> Self {
        PeerFailures {
            per_minute: per_minute.max(1),
            windows: DashMap::new(),
            clock,
        }
    }

    /// If `peer` has spent its budget of refusals: the whole seconds until it has room.
    pub fn blocked(&self, peer: IpAddr) -> Option<u64> {
        let entry = self.windows.get(&peer)?;
        let mut w = entry.lock();
        w.advance(self.clock.now());
        (w.total >= self.per_minute as u64).then(|| w.retry_after(self.per_minute as u64))
    }

    /// Counts one refusal of `peer`; returns its refusals in the window so far, this one
    /// included (0 when the peer could not be tracked).
    pub fn fail(&self, peer: IpAddr) -> u64 {
        let now = self.clock.now();
        if !self.windows.contains_key(&peer) && self.windows.len() >= MAX_PEERS {
            self.windows.retain(|_, w| {
                let mut w = w.lock();
                w.advance(now);
                w.total > 0
            });
            if self.windows.len() >= MAX_PEERS {
                return 0;
            }
        }
        let entry = self
            .windows
            .entry(peer)
            .or_insert_with(|| Mutex::new(Window::new(now)));
        let mut w = entry.lock();
        w.advance(now);
        let now = w.newest;
        w.counts[Window::slot(now)] += 1;
        w.total += 1;
        w.total
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actors::model::Scopes;
    use proptest::prelude::*;

    fn key(id: &str, limit: Option<u32>) -> ApiKey {
        ApiKey {
            id: id.into(),
            workspace_id: uuid::Uuid::nil(),
            secret_hash: [0; 32],
            scopes: Scopes::read_only(),
            created_by: uuid::Uuid::nil(),
            rate_limit_per_minute: limit,
            revoked: false,
            created_at: None,
        }
    }

    const T0: i64 = 1_790_000_000;

    #[test]
    fn a_burst_admits_exactly_the_budget_and_retry_after_is_honest() {
        let clock = Clock::manual(T0);
        let rl = RateLimiter::new(600, clock.clone());
        let k = key("k", None);
        let decisions: Vec<Decision> = (0..700).map(|_| rl.check(&k)).collect();
        assert_eq!(decisions.iter().filter(|d| d.allowed).count(), 600);
        let refused = decisions.last().unwrap();
        assert_eq!(refused.remaining, 0);
        assert!(refused.retry_after >= 1);
        // One second early, still refused; at Retry-After, admitted.
        clock.set(T0 + refused.retry_after as i64 - 1);
        assert!(!rl.check(&k).allowed);
        clock.set(T0 + refused.retry_after as i64);
        assert!(rl.check(&k).allowed);
        // Another key is independent; an override wins over the default.
        assert!(rl.check(&key("other", None)).allowed);
        let big = key("big", Some(5000));
        assert_eq!((0..5000).filter(|_| rl.check(&big).allowed).count(), 5000);
        assert!(!rl.check(&big).allowed);
    }

    #[test]
    fn headers_follow_the_draft() {
        let rl = RateLimiter::new(600, Clock::manual(T0));
        let d = rl.check(&key("k", None));
        assert_eq!(d.policy_header(), "\"per-key\";q=600;w=60");
        assert_eq!(d.state_header(), "\"per-key\";r=599;t=61");
    }

    /// A window counted on one node and merged into another's goes on there: the budget
    /// is what is left of it, merging twice counts nothing twice, and what the second
    /// node counted itself in the same seconds is not added to it.
    #[test]
    fn a_merged_window_goes_on_at_the_next_node() {
        use crate::cluster::budgets::Budgets;
        let clock = Clock::manual(T0);
        let first = RateLimiter::new(100, clock.clone());
        let k = key("k", None);
        for s in 0..3 {
            clock.set(T0 + s);
            assert!((0..10).all(|_| first.check(&k).allowed));
        }
        let shared = first.changed();
        assert_eq!(shared.len(), 1);
        assert_eq!(shared[0].newest, T0 + 2);
        assert_eq!(shared[0].counts[58..], [10, 10, 10]);
        assert!(first.changed().is_empty(), "nothing counted since");

        clock.set(T0 + 5);
        let next = RateLimiter::new(100, clock.clone());
        // It counted 5 of the same key's requests itself in the first second.
        clock.set(T0);
        assert!((0..5).all(|_| next.check(&k).allowed));
        clock.set(T0 + 5);
        next.merge(&shared);
        next.merge(&shared);
        assert_eq!((0..100).filter(|_| next.check(&k).allowed).count(), 70);
        // Once the merged seconds leave the window, their room is back.
        clock.set(T0 + 61);
        assert_eq!((0..100).filter(|_| next.check(&k).allowed).count(), 10);
    }

    proptest! {
        /// Whatever the arrival pattern, no 60-second window (at any millisecond offset)
        /// admits more than the budget, and a refusal's Retry-After is exact to the second.
        #[test]
        fn no_window_admits_more_than_the_budget(
            limit in 1u32..20,
            gaps in proptest::collection::vec(0i64..4000, 1..300),
        ) {
            let clock = Clock::manual(T0);
            let rl = RateLimiter::new(limit, clock.clone());
            let k = key("k", None);
            let mut admitted: Vec<i64> = Vec::new();
            let mut t = T0 * 1000;
            for g in gaps {
                t += g;
                clock.set_ms(t);
                let d = rl.check(&k);
                if d.allowed {
                    admitted.push(t);
                } else {
                    // Retry-After seconds later it passes; one second sooner it would not.
                    // (At second `s` the limiter counts what it admitted in s-60 ..= s.)
                    let counted = |s: i64| {
                        admitted.iter().filter(|a| a.div_euclid(1000) >= s - 60).count()
                    };
                    let at = t.div_euclid(1000) + d.retry_after as i64;
                    prop_assert!(counted(at) < limit as usize);
                    prop_assert!(counted(at - 1) >= limit as usize);
                }
            }
            for (i, a) in admitted.iter().enumerate() {
                let within = admitted[i..].iter().take_while(|b| **b < a + 60_000).count();
                prop_assert!(within <= limit as usize, "{within} admitted in the 60 s from {a}");
            }
        }
    }
}
