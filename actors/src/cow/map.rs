//! [`CowMap`]: a persistent hash map with its entries inline in copy-on-write chunks.
//!
//! Linear probing over a power-of-two array of buckets, at most 3/4 full, with
//! backward-shift deletion (no tombstones: a removal moves the entries after it back
//! towards their home buckets, so lookups never walk over dead buckets). The buckets are
//! held in a persistent tree of chunks ([`Chunks`]); a write in a clone copies the leaves
//! it touches and the paths to them. Growing rebuilds the map at twice the size.

use super::{Chunks, LEAF};
use std::borrow::Borrow;
use std::hash::{BuildHasher, Hash};
use std::sync::Arc;

type Bucket<K, V> = Option<(K, V)>;

/// A persistent hash map; see the module docs.
pub struct CowMap<K, V, S = foldhash::fast::RandomState> {
    pub(super) chunks: Chunks<Bucket<K, V>>,
    /// Buckets, a power of two (0 when nothing was ever inserted).
    cap: usize,
    len: usize,
    hasher: S,
}

impl<K, V, S: Clone> Clone for CowMap<K, V, S> {
    fn clone(&self) -> Self {
        CowMap {
            chunks: self.chunks.clone(),
            cap: self.cap,
            len: self.len,
            hasher: self.hasher.clone(),
        }
    }
}

impl<K, V, S: Default> Default for CowMap<K, V, S> {
    fn default() -> Self {
        CowMap {
            chunks: Chunks::default(),
            cap: 0,
            len: 0,
            hasher: S::default(),
        }
    }
}

impl<K: std::fmt::Debug, V: std::fmt::Debug, S> std::fmt::Debug for CowMap<K, V, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<K, V, S> CowMap<K, V, S> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every entry, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> + '_ {
        self.chunks
            .iter()
            .filter_map(|b| b.as_ref().map(|(k, v)| (k, v)))
    }

    pub fn values(&self) -> impl Iterator<Item = &V> + '_ {
        self.iter().map(|(_, v)| v)
    }

    fn bucket(&self, at: usize) -> &Bucket<K, V> {
        self.chunks.get(at)
    }
}

impl<K: Hash + Eq + Clone, V: Clone, S: BuildHasher + Clone> CowMap<K, V, S> {
    fn home<Q: Hash + ?Sized>(&self, k: &Q) -> usize {
        (self.hasher.hash_one(k) as usize) & (self.cap - 1)
    }

    /// The bucket holding `k`, if any.
    fn find<Q>(&self, k: &Q) -> Option<usize>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        if self.len == 0 {
            return None;
        }
        let mut at = self.home(k);
        loop {
            match self.bucket(at) {
                None => return None,
                Some((key, _)) if key.borrow() == k => return Some(at),
                Some(_) => at = (at + 1) & (self.cap - 1),
            }
        }
    }

    fn bucket_mut(&mut self, at: usize) -> &mut Bucket<K, V> {
        self.chunks.get_mut(at)
    }

    pub fn get<Q>(&self, k: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let at = self.find(k)?;
        self.bucket(at).as_ref().map(|(_, v)| v)
    }

    pub fn contains_key<Q>(&self, k: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.find(k).is_some()
    }

    /// The value of `k`, copied out of any chunk shared with another clone.
    pub fn get_mut<Q>(&mut self, k: &Q) -> Option<&mut V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let at = self.find(k)?;
        self.bucket_mut(at).as_mut().map(|(_, v)| v)
    }

    /// Inserts or replaces; returns the value replaced.
    pub fn insert(&mut self, k: K, v: V) -> Option<V> {
        if let Some(at) = self.find(&k) {
            let slot = self.bucket_mut(at).as_mut().expect("found");
            return Some(std::mem::replace(&mut slot.1, v));
        }
        self.insert_new(k, v);
        None
    }

    /// The value of `k`, inserted as `V::default()` when absent.
    pub fn entry_or_default(&mut self, k: K) -> &mut V
    where
        V: Default,
    {
        let at = match self.find(&k) {
            Some(at) => at,
            None => self.insert_new(k, V::default()),
        };
        &mut self.bucket_mut(at).as_mut().expect("present").1
    }

    /// Inserts a key known to be absent; returns its bucket.
    fn insert_new(&mut self, k: K, v: V) -> usize {
        if (self.len + 1) * 4 > self.cap * 3 {
            self.grow();
        }
        let mut at = self.home(&k);
        while self.bucket(at).is_some() {
            at = (at + 1) & (self.cap - 1);
        }
        *self.bucket_mut(at) = Some((k, v));
        self.len += 1;
        at
    }

    fn grow(&mut self) {
        self.rebuild((self.cap * 2).max(8));
    }

    /// Makes room for `additional` more entries at once, so that putting them never
    /// grows the map step by step (each step moves every entry).
    pub fn reserve(&mut self, additional: usize) {
        let want = self.len + additional;
        if want * 4 <= self.cap * 3 {
            return;
        }
        let mut cap = self.cap.max(8);
        while want * 4 > cap * 3 {
            cap *= 2;
        }
        self.rebuild(cap);
    }

    fn rebuild(&mut self, cap: usize) {
        let old = std::mem::replace(self, CowMap::empty(cap, self.hasher.clone()));
        for (k, v) in old.iter() {
            self.insert_new(k.clone(), v.clone());
        }
    }

    fn empty(cap: usize, hasher: S) -> Self {
        // Leaves of `LEAF` buckets, or one of the whole map when it is smaller: `cap` is
        // a power of two, so every leaf is whole.
        let leaf = cap.min(LEAF);
        let leaves: Vec<Arc<[Bucket<K, V>]>> = (0..cap / leaf)
            .map(|_| (0..leaf).map(|_| None).collect())
            .collect();
        CowMap {
            chunks: Chunks::from_leaves(leaves),
            cap,
            len: 0,
            hasher,
        }
    }

    /// Removes `k`; returns its value.
    pub fn remove<Q>(&mut self, k: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let mut hole = self.find(k)?;
        let (_, v) = self.bucket_mut(hole).take().expect("found");
        self.len -= 1;
        // Backward shift: an entry after the hole moves into it unless its home lies
        // cyclically in (hole, at], where it would no longer be reachable from home.
        let mask = self.cap - 1;
        let mut at = hole;
        loop {
            at = (at + 1) & mask;
            let Some((key, _)) = self.bucket(at) else {
                break;
            };
            let home = self.home(key);
            let stays = if hole <= at {
                hole < home && home <= at
            } else {
                hole < home || home <= at
            };
            if !stays {
                let moved = self.bucket_mut(at).take();
                *self.bucket_mut(hole) = moved;
                hole = at;
            }
        }
        Some(v)
    }

    /// A map of the given entries with room for them, built at once.
    pub fn from_entries(entries: impl ExactSizeIterator<Item = (K, V)>) -> Self
    where
        S: Default,
    {
        let mut cap = 8;
        while cap * 3 < entries.len() * 4 + 4 {
            cap *= 2;
        }
        let mut map = CowMap::empty(cap, S::default());
        for (k, v) in entries {
            map.insert(k, v);
        }
        map
    }
}
