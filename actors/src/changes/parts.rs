//! The change log's parts as the feed holds them, decoded: the parts it read last
//! ([`PartCache`]), and each workspace's newest parts (its tail), read once for all the
//! followers a commit wakes.
//!
//! A part never changes once committed, and the feed reads only committed ones (up to a
//! published state's position), so whatever is kept here is the store's.

use crate::entries::{decode, Change};
use crate::store::StoreError;
use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

/// A part of the log, decoded.
pub struct DecodedPart {
    pub(super) position: u64,
    pub(super) part: u32,
    pub(super) committed_at_ms: i64,
    pub(super) entries: Vec<Change>,
}

impl DecodedPart {
    pub(super) fn decode(part: crate::store::LogPart) -> Result<DecodedPart, StoreError> {
        let entries = decode(&part.entries).map_err(|e| {
            StoreError::Corrupt(format!(
                "change log part {}/{}: {e}",
                part.position, part.part
            ))
        })?;
        Ok(DecodedPart {
            position: part.position,
            part: part.part,
            committed_at_ms: part.committed_at_ms,
            entries,
        })
    }
}

/// Parts a [`PartCache`] keeps.
const CACHED_PARTS: usize = 64;

/// Tails a [`PartCache`] keeps (one a workspace, the oldest first to go).
const CACHED_TAILS: usize = 1024;

/// A tail is for followers up to date or nearly: a point at most this many positions
/// behind the state it reads to.
pub(super) const TAIL_POSITIONS: u64 = 8;

/// Locks that put a workspace's tail reads in turn, a workspace always on the same one.
const TAIL_TURNS: usize = 32;

/// Longest a reader waits for its turn: a store that stalls must not queue every
/// follower behind every other one's read, so past this a reader reads the store itself,
/// as it would alone. Not shorter: under a fan-out of 1,000 followers and 1,000 commits
/// a second on two cores, turns waited for longer than 50 ms often enough that with a
/// bound of 50 ms the followers read the store each, their reads queued behind one
/// another, and deliveries fell behind by a second (the figures without the turns).
const TURN_WAIT: Duration = Duration::from_secs(1);

/// The log parts the feed read last, decoded, for the readers of one store (a
/// server's). A part of an import holds 4,096 entries: a client catching up reads it in
/// eight answers of 500, and seven of them find it here rather than read and decode it
/// again. Holds a few megabytes at most.
///
/// And each workspace's tail: all the parts after a point up to a state's position, as
/// one read found them. A commit wakes every follower of its workspace at once, each
/// up to date at the same point, each wanting the same parts: the first reads them
/// from the store, and the others, waiting their turn ([`PartCache::tail_turn`]), take
/// them from here (a thousand followers of a workspace cost one store read a commit,
/// not a thousand).
pub struct PartCache {
    inner: parking_lot::Mutex<CachedParts>,
    turns: [tokio::sync::Mutex<()>; TAIL_TURNS],
}

impl Default for PartCache {
    fn default() -> Self {
        PartCache {
            inner: Default::default(),
            turns: std::array::from_fn(|_| tokio::sync::Mutex::new(())),
        }
    }
}

type PartKey = (Uuid, u64, u32);

/// The parts after `after` up to position `upto`, none missing.
struct Tail {
    after: (u64, u32),
    upto: u64,
    pruned_through: u64,
    parts: Vec<Arc<DecodedPart>>,
}

struct CachedParts {
    parts: Capped<PartKey, Arc<DecodedPart>>,
    /// A workspace's latest tail.
    tails: Capped<Uuid, Tail>,
}

impl Default for CachedParts {
    fn default() -> Self {
        CachedParts {
            parts: Capped::new(CACHED_PARTS),
            tails: Capped::new(CACHED_TAILS),
        }
    }
}

/// A map of at most `cap` keys: past it, the key inserted first goes.
struct Capped<K, V> {
    map: HashMap<K, V>,
    /// Oldest first.
    order: VecDeque<K>,
    cap: usize,
}

impl<K: Hash + Eq + Copy, V> Capped<K, V> {
    fn new(cap: usize) -> Self {
        Capped {
            map: HashMap::new(),
            order: VecDeque::new(),
            cap,
        }
    }

    fn get(&self, key: &K) -> Option<&V> {
        self.map.get(key)
    }

    /// Keeps `value` under `key`, in place of the value before (which keeps its age).
    fn insert(&mut self, key: K, value: V) {
        if self.map.insert(key, value).is_none() {
            self.order.push_back(key);
            while self.order.len() > self.cap {
                let old = self.order.pop_front().expect("longer than the cap");
                self.map.remove(&old);
            }
        }
    }
}

impl PartCache {
    pub(super) fn get(
        &self,
        workspace: Uuid,
        position: u64,
        part: u32,
    ) -> Option<Arc<DecodedPart>> {
        self.inner
            .lock()
            .parts
            .get(&(workspace, position, part))
            .cloned()
    }

    pub(super) fn put(&self, workspace: Uuid, part: Arc<DecodedPart>) {
        let key = (workspace, part.position, part.part);
        self.inner.lock().parts.insert(key, part);
    }

    /// Waits for the workspace's turn to read its tail: held while one reader looks
    /// here and, finding nothing, reads the store and keeps what it read. `None` when it
    /// did not come within [`TURN_WAIT`]: the reader goes on without it.
    pub(super) async fn tail_turn(
        &self,
        workspace: Uuid,
    ) -> Option<tokio::sync::MutexGuard<'_, ()>> {
        let turn = (workspace.as_u128() % TAIL_TURNS as u128) as usize;
        tokio::time::timeout(TURN_WAIT, self.turns[turn].lock())
            .await
            .ok()
    }

    /// The parts after `after` up to position `upto`, and how far the log was pruned
    /// when they were read, when a read kept them.
    pub(super) fn tail(
        &self,
        workspace: Uuid,
        after: (u64, u32),
        upto: u64,
    ) -> Option<(Vec<Arc<DecodedPart>>, u64)> {
        let g = self.inner.lock();
        let t = g.tails.get(&workspace)?;
        (t.after == after && t.upto == upto).then(|| (t.parts.clone(), t.pruned_through))
    }

    /// Keeps `parts`, every part after `after` up to position `upto`, as the workspace's
    /// tail (in place of the one before).
    pub(super) fn put_tail(
        &self,
        workspace: Uuid,
        after: (u64, u32),
        upto: u64,
        pruned_through: u64,
        parts: Vec<Arc<DecodedPart>>,
    ) {
        let tail = Tail {
            after,
            upto,
            pruned_through,
            parts,
        };
        self.inner.lock().tails.insert(workspace, tail);
    }
}
