//! `KeyIndex`: byte-string keys → posting lists of owners, as an immutable `fst::Map`
//! base plus a small persistent delta.
//!
//! - **Base**: an `fst::Map` whose value for a key is the key's ordinal; `offsets[i] ..
//!   offsets[i + 1]` is that key's slice of one flat `owners` arena. A flat arena costs 17
//!   bytes per posting and 4 per key, where a `SmallVec` per key would cost 32. A base of
//!   fewer than [`FST_FROM`] keys keeps them sorted in one buffer instead, searched by
//!   bisection: building an fst sets up a registry of about a megabyte whatever the
//!   number of keys, which for a small workspace costs more than everything else its
//!   load does (a fleet of thousands loads thousands of them). The empty base is one,
//!   shared.
//! - **Delta**: `imbl::OrdMap` key → the key's *whole* current posting list (an empty list
//!   is a tombstone). A delta entry overrides the base entry of the same key, so a lookup
//!   is "delta if present, else base" and needs no merging of partial lists.
//! - **Rebuild**: when the delta grows past a threshold, a [`RebuildJob`] merges a
//!   snapshot of base and delta into a new base off the actor's thread. Installing it
//!   keeps only the delta entries written after the snapshot (each carries the sequence
//!   number of its write), so writes made during the rebuild are not lost, and lookups
//!   never wait: both the old and the new index answer identically.
//!
//! The whole index is a value: cloning it is O(1) (an `Arc` and a persistent map), so it
//! lives inside the workspace state and is published with it.

use fst::raw::{Fst, Node, Output};
use fst::{Map, MapBuilder, Streamer};
use imbl::OrdMap;
use smallvec::SmallVec;
use std::borrow::Borrow;
use std::fmt;
use std::sync::Arc;
use uuid::Uuid;

/// Who a key belongs to. Candidates are indexed by person, not by row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Owner {
    Person(Uuid),
    Contact(Uuid),
    Company(Uuid),
}

impl Owner {
    /// Whether the owner counts towards `match_confidence` (people do, companies never).
    pub fn is_person(&self) -> bool {
        !matches!(self, Owner::Company(_))
    }
}

/// A key's owners, inline for the common case of one or two.
pub type Owners = SmallVec<[Owner; 2]>;

/// The delta never holds fewer entries than this before a rebuild is worth it.
const MIN_REBUILD_DELTA: usize = 4096;
/// Above [`MIN_REBUILD_DELTA`], rebuild when the delta reaches this fraction of the base
/// (1/64), so the rebuild work per write stays constant as the workspace grows.
const REBUILD_DELTA_SHIFT: u32 = 6;

/// Keys from which a base is an fst (below, a sorted buffer: see the module's docs).
const FST_FROM: usize = 512;

#[cfg(test)]
thread_local! {
    /// Tests build every base as an fst when set, to check both kinds alike.
    static ALWAYS_FST: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether a base of `keys` keys is an fst.
fn as_fst(keys: usize) -> bool {
    #[cfg(test)]
    if ALWAYS_FST.with(|a| a.get()) {
        return true;
    }
    keys >= FST_FROM
}

/// The immutable part of an index.
pub struct Base {
    keys: Keys,
    offsets: Vec<u32>,
    owners: Vec<Owner>,
}

/// A base's keys, each with its ordinal (its rank).
enum Keys {
    Fst(Map<Vec<u8>>),
    /// Keys in increasing order, one after another in `bytes`; key `i` ends at
    /// `ends[i]`.
    Sorted {
        bytes: Vec<u8>,
        ends: Vec<u32>,
    },
}

impl Keys {
    fn len(&self) -> usize {
        match self {
            Keys::Fst(map) => map.len(),
            Keys::Sorted { ends, .. } => ends.len(),
        }
    }

    /// Key `i` of a sorted buffer.
    fn sorted_key<'a>(bytes: &'a [u8], ends: &[u32], i: usize) -> &'a [u8] {
        let start = if i == 0 { 0 } else { ends[i - 1] as usize };
        &bytes[start..ends[i] as usize]
    }

    /// The first key of a sorted buffer not below `key`.
    fn lower_bound(bytes: &[u8], ends: &[u32], key: &[u8]) -> usize {
        let (mut lo, mut hi) = (0, ends.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if Self::sorted_key(bytes, ends, mid) < key {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    fn get(&self, key: &[u8]) -> Option<u64> {
        match self {
            Keys::Fst(map) => map.get(key),
            Keys::Sorted { bytes, ends } => {
                let i = Self::lower_bound(bytes, ends, key);
                (i < ends.len() && Self::sorted_key(bytes, ends, i) == key).then_some(i as u64)
            }
        }
    }
}

/// A base's keys in order, with their ordinals.
enum KeyStream<'a> {
    Fst(fst::map::Stream<'a>),
    Sorted {
        bytes: &'a [u8],
        ends: &'a [u32],
        next: usize,
    },
}

impl KeyStream<'_> {
    fn next_owned(&mut self) -> Option<(SmallVec<[u8; 32]>, u64)> {
        match self {
            KeyStream::Fst(stream) => stream.next().map(|(k, v)| (SmallVec::from_slice(k), v)),
            KeyStream::Sorted { bytes, ends, next } => {
                let i = *next;
                (i < ends.len()).then(|| {
                    *next += 1;
                    (
                        SmallVec::from_slice(Keys::sorted_key(bytes, ends, i)),
                        i as u64,
                    )
                })
            }
        }
    }
}

impl fmt::Debug for Base {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Base")
            .field("keys", &self.keys.len())
            .field("owners", &self.owners.len())
            .finish()
    }
}

impl Base {
    /// The empty base, one for every index that has none of its own.
    fn empty() -> Arc<Base> {
        static EMPTY: std::sync::LazyLock<Arc<Base>> = std::sync::LazyLock::new(|| {
            Arc::new(Base {
                keys: Keys::Sorted {
                    bytes: Vec::new(),
                    ends: Vec::new(),
                },
                offsets: vec![0],
                owners: Vec::new(),
            })
        });
        EMPTY.clone()
    }

    /// Builds a base from keys in strictly increasing order with their non-empty lists
    /// (`keys`: how many there are, `postings`: how many owners they hold in all, or
    /// about, to size the arena).
    fn from_sorted<K: AsRef<[u8]>, L: IntoIterator<Item = O>, O: std::borrow::Borrow<Owner>>(
        entries: impl Iterator<Item = (K, L)>,
        keys: usize,
        postings: usize,
    ) -> Base {
        let mut offsets = Vec::with_capacity(keys + 1);
        offsets.push(0u32);
        let mut owners = Vec::with_capacity(postings);
        let mut add = |list: L| {
            owners.extend(list.into_iter().map(|o| *o.borrow()));
            offsets.push(u32::try_from(owners.len()).expect("fewer than 2^32 postings"));
        };
        let keys = if !as_fst(keys) {
            let mut bytes = Vec::new();
            let mut ends = Vec::with_capacity(keys);
            for (key, list) in entries {
                let key = key.as_ref();
                debug_assert!(
                    ends.is_empty() || Keys::sorted_key(&bytes, &ends, ends.len() - 1) < key,
                    "keys are given in strictly increasing order"
                );
                bytes.extend_from_slice(key);
                ends.push(u32::try_from(bytes.len()).expect("a small base's keys fit"));
                add(list);
            }
            bytes.shrink_to_fit();
            ends.shrink_to_fit();
            Keys::Sorted { bytes, ends }
        } else {
            let mut builder = MapBuilder::memory();
            for (i, (key, list)) in entries.enumerate() {
                builder
                    .insert(key.as_ref(), i as u64)
                    .expect("keys are given in strictly increasing order");
                add(list);
            }
            let mut bytes = builder.into_inner().expect("writing to memory cannot fail");
            bytes.shrink_to_fit();
            Keys::Fst(Map::new(bytes).expect("the builder wrote a valid fst"))
        };
        offsets.shrink_to_fit();
        owners.shrink_to_fit();
        Base {
            keys,
            offsets,
            owners,
        }
    }

    fn stream(&self) -> KeyStream<'_> {
        match &self.keys {
            Keys::Fst(map) => KeyStream::Fst(map.stream()),
            Keys::Sorted { bytes, ends } => KeyStream::Sorted {
                bytes,
                ends,
                next: 0,
            },
        }
    }

    fn postings(&self, ordinal: u64) -> &[Owner] {
        let i = ordinal as usize;
        &self.owners[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }

    fn get(&self, key: &[u8]) -> Option<&[Owner]> {
        self.keys.get(key).map(|i| self.postings(i))
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of the keys: the fst itself, or the sorted buffer and its ends.
    pub fn fst_bytes(&self) -> usize {
        match &self.keys {
            Keys::Fst(map) => map.as_fst().as_bytes().len(),
            Keys::Sorted { bytes, ends } => bytes.capacity() + ends.capacity() * 4,
        }
    }

    pub fn offsets_bytes(&self) -> usize {
        self.offsets.capacity() * std::mem::size_of::<u32>()
    }

    pub fn postings_bytes(&self) -> usize {
        self.owners.capacity() * std::mem::size_of::<Owner>()
    }

    /// Bytes of the fst, the offsets and the owner arena.
    pub fn heap_bytes(&self) -> usize {
        self.fst_bytes() + self.offsets_bytes() + self.postings_bytes()
    }

    pub fn postings_len(&self) -> usize {
        self.owners.len()
    }
}

#[derive(Clone, Debug)]
struct DeltaEntry {
    /// The sequence number of the write that set this entry.
    seq: u64,
    owners: Owners,
}

/// An index from byte-string keys to owners. `K` is the delta's key type; it must order
/// exactly as its bytes do.
#[derive(Clone)]
pub struct KeyIndex<K: Clone + Ord + Borrow<[u8]>> {
    base: Arc<Base>,
    delta: OrdMap<K, DeltaEntry>,
    /// The sequence number of the newest delta write.
    seq: u64,
}

impl<K: Clone + Ord + Borrow<[u8]> + 'static> fmt::Debug for KeyIndex<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyIndex")
            .field("base", &self.base)
            .field("delta", &self.delta.len())
            .finish()
    }
}

impl<K: Clone + Ord + Borrow<[u8]> + 'static> Default for KeyIndex<K> {
    fn default() -> Self {
        KeyIndex {
            base: Base::empty(),
            delta: crate::cow::shared_empty(),
            seq: 0,
        }
    }
}

impl<K: Clone + Ord + Borrow<[u8]> + 'static> KeyIndex<K> {
    /// Builds an index with everything in the base, from (key, owner) pairs in any order
    /// (duplicates are collapsed).
    pub fn build(mut pairs: Vec<(K, Owner)>) -> Self {
        pairs.sort_unstable();
        pairs.dedup();
        let keys = pairs.chunk_by(|a, b| a.0 == b.0).count();
        // Read in groups of one key straight from the sorted pairs: for a large
        // workspace these are millions, and a copy of them would add to the peak of a
        // load or an import.
        let entries = pairs
            .chunk_by(|a, b| a.0 == b.0)
            .map(|group| (group[0].0.borrow(), group.iter().map(|(_, owner)| owner)));
        KeyIndex {
            base: Arc::new(Base::from_sorted(entries, keys, pairs.len())),
            delta: crate::cow::shared_empty(),
            seq: 0,
        }
    }

    /// The owners of exactly this key.
    #[inline]
    pub fn get(&self, key: &[u8]) -> &[Owner] {
        if let Some(e) = self.delta.get(key) {
            return &e.owners;
        }
        self.base.get(key).unwrap_or(&[])
    }

    /// Calls `f` with the owners of every key that starts with `prefix`, each key once,
    /// in key order within base and delta. No allocation for keys up to 32 bytes.
    pub fn for_each_with_prefix(&self, prefix: &[u8], mut f: impl FnMut(&[u8], &[Owner])) {
        self.base_prefix(prefix, |key, owners| {
            if !self.delta.contains_key(key) {
                f(key, owners);
            }
        });
        let upper = PrefixUpper::of(prefix);
        for (key, e) in self
            .delta
            .range::<_, [u8]>((std::ops::Bound::Included(prefix), upper.as_bound()))
        {
            if !e.owners.is_empty() {
                f(key.borrow(), &e.owners);
            }
        }
    }

    /// Walks the base below `prefix` in key order (an fst depth-first).
    fn base_prefix(&self, prefix: &[u8], mut f: impl FnMut(&[u8], &[Owner])) {
        let fst = match &self.base.keys {
            Keys::Fst(map) => map.as_fst(),
            Keys::Sorted { bytes, ends } => {
                for i in Keys::lower_bound(bytes, ends, prefix)..ends.len() {
                    let key = Keys::sorted_key(bytes, ends, i);
                    if !key.starts_with(prefix) {
                        break;
                    }
                    f(key, self.base.postings(i as u64));
                }
                return;
            }
        };
        let mut node = fst.root();
        let mut out = Output::zero();
        for &b in prefix {
            let Some(i) = node.find_input(b) else {
                return;
            };
            let t = node.transition(i);
            out = out.cat(t.out);
            node = fst.node(t.addr);
        }
        let mut key: SmallVec<[u8; 32]> = SmallVec::from_slice(prefix);
        walk(fst, node, out, &mut key, &mut |k, ordinal| {
            f(k, self.base.postings(ordinal))
        });

        fn walk(
            fst: &Fst<Vec<u8>>,
            node: Node<'_>,
            out: Output,
            key: &mut SmallVec<[u8; 32]>,
            f: &mut dyn FnMut(&[u8], u64),
        ) {
            if node.is_final() {
                f(key, out.cat(node.final_output()).value());
            }
            for t in node.transitions() {
                key.push(t.inp);
                walk(fst, fst.node(t.addr), out.cat(t.out), key, f);
                key.pop();
            }
        }
    }

    /// Adds `owner` to `key`'s list.
    pub fn add(&mut self, key: K, owner: Owner) {
        let current = self.get(key.borrow());
        if current.contains(&owner) {
            return;
        }
        let mut owners: Owners = current.iter().copied().collect();
        owners.push(owner);
        self.set(key, owners);
    }

    /// Removes `owner` from `key`'s list.
    pub fn remove(&mut self, key: K, owner: Owner) {
        let current = self.get(key.borrow());
        if !current.contains(&owner) {
            return;
        }
        let owners: Owners = current.iter().copied().filter(|o| *o != owner).collect();
        self.set(key, owners);
    }

    fn set(&mut self, key: K, owners: Owners) {
        // An emptied key stays as a tombstone even when the base lacks it: a rebuild in
        // flight may be putting the key into the next base.
        self.seq += 1;
        self.delta.insert(
            key,
            DeltaEntry {
                seq: self.seq,
                owners,
            },
        );
    }

    pub fn base(&self) -> &Base {
        &self.base
    }

    pub fn delta_len(&self) -> usize {
        self.delta.len()
    }

    /// Whether the delta has grown enough for a rebuild to pay.
    pub fn wants_rebuild(&self) -> bool {
        let threshold = MIN_REBUILD_DELTA.max(self.base.len() >> REBUILD_DELTA_SHIFT);
        self.delta.len() >= threshold
    }

    /// A snapshot of the index to merge into a new base elsewhere.
    pub fn rebuild_job(&self) -> RebuildJob<K> {
        RebuildJob {
            base: self.base.clone(),
            delta: self.delta.clone(),
            upto: self.seq,
        }
    }

    /// Merges the delta into a new base now.
    pub fn compact(&mut self) {
        let done = self.rebuild_job().run();
        let installed = self.install(done);
        debug_assert!(installed);
    }

    /// Installs a finished rebuild; `false` (and no change) when the base it started from
    /// has been replaced meanwhile.
    pub fn install(&mut self, done: Rebuilt) -> bool {
        if !Arc::ptr_eq(&done.from, &self.base) {
            return false;
        }
        let upto = done.upto;
        self.base = done.base;
        // Entries written after the snapshot stay: they override the new base as they
        // overrode the old one. A tombstone whose key the new base lacks is dropped.
        let kept: OrdMap<K, DeltaEntry> = self
            .delta
            .iter()
            .filter(|(k, e)| {
                e.seq > upto && !(e.owners.is_empty() && self.base.get((*k).borrow()).is_none())
            })
            .map(|(k, e)| (k.clone(), e.clone()))
            .collect();
        self.delta = kept;
        true
    }
}

/// The exclusive upper bound of the keys starting with a prefix: the prefix with its last
/// byte below 0xff incremented (unbounded when there is none).
struct PrefixUpper(SmallVec<[u8; 32]>, bool);

impl PrefixUpper {
    fn of(prefix: &[u8]) -> Self {
        let mut up: SmallVec<[u8; 32]> = SmallVec::from_slice(prefix);
        while let Some(last) = up.pop() {
            if last < 0xff {
                up.push(last + 1);
                return PrefixUpper(up, true);
            }
        }
        PrefixUpper(up, false)
    }

    fn as_bound(&self) -> std::ops::Bound<&[u8]> {
        if self.1 {
            std::ops::Bound::Excluded(&self.0)
        } else {
            std::ops::Bound::Unbounded
        }
    }
}

/// A base and delta snapshot, merged into a new base by [`RebuildJob::run`].
pub struct RebuildJob<K: Clone + Ord + Borrow<[u8]>> {
    base: Arc<Base>,
    delta: OrdMap<K, DeltaEntry>,
    upto: u64,
}

/// A merged base, ready for [`KeyIndex::install`].
pub struct Rebuilt {
    from: Arc<Base>,
    base: Arc<Base>,
    upto: u64,
}

impl<K: Clone + Ord + Borrow<[u8]> + 'static> RebuildJob<K> {
    /// Merges base and delta (both in key order) into a new base. CPU work: run it off
    /// the actor's thread for big indexes.
    pub fn run(self) -> Rebuilt {
        let base = &*self.base;
        let mut stream = base.stream();
        let mut delta = self.delta.iter().peekable();
        let mut merged: Vec<(SmallVec<[u8; 32]>, Owners)> =
            Vec::with_capacity(base.len() + self.delta.len());
        let mut next_base = stream.next_owned();
        loop {
            let take_delta = match (&next_base, delta.peek()) {
                (None, None) => break,
                (Some(_), None) => false,
                (None, Some(_)) => true,
                (Some((bk, _)), Some((dk, _))) => {
                    let dk: &[u8] = (*dk).borrow();
                    dk <= &bk[..]
                }
            };
            if take_delta {
                let (dk, e) = delta.next().expect("peeked");
                let dk: &[u8] = dk.borrow();
                if let Some((bk, _)) = &next_base {
                    if &bk[..] == dk {
                        next_base = stream.next_owned();
                    }
                }
                if !e.owners.is_empty() {
                    merged.push((SmallVec::from_slice(dk), e.owners.clone()));
                }
            } else {
                let (bk, v) = next_base.take().expect("checked");
                merged.push((bk, base.postings(v).iter().copied().collect()));
                next_base = stream.next_owned();
            }
        }
        let postings = merged.iter().map(|(_, o)| o.len()).sum();
        let new = Base::from_sorted(
            merged.iter().map(|(k, o)| (&k[..], &o[..])),
            merged.len(),
            postings,
        );
        Rebuilt {
            from: self.base,
            base: Arc::new(new),
            upto: self.upto,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    type Key = SmallVec<[u8; 9]>;

    fn owner(n: u8) -> Owner {
        let id = Uuid::from_bytes([n; 16]);
        match n % 3 {
            0 => Owner::Person(id),
            1 => Owner::Contact(id),
            _ => Owner::Company(id),
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        Add(Vec<u8>, u8),
        Remove(Vec<u8>, u8),
        /// Snapshot for a rebuild now; install it after the next `k` ops.
        StartRebuild(usize),
        Compact,
    }

    fn key() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(b'0'..=b'3', 1..4)
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (key(), 0u8..6).prop_map(|(k, o)| Op::Add(k, o)),
            3 => (key(), 0u8..6).prop_map(|(k, o)| Op::Remove(k, o)),
            1 => (0usize..5).prop_map(Op::StartRebuild),
            1 => Just(Op::Compact),
        ]
    }

    fn check(index: &KeyIndex<Key>, model: &BTreeMap<Vec<u8>, Vec<Owner>>) {
        for (k, owners) in model {
            let mut got = index.get(k).to_vec();
            got.sort();
            let mut want = owners.clone();
            want.sort();
            assert_eq!(got, want, "key {k:?}");
        }
        for prefix in [&b""[..], b"0", b"1", b"01", b"3", b"22"] {
            let mut got: Vec<(Vec<u8>, Vec<Owner>)> = Vec::new();
            index.for_each_with_prefix(prefix, |k, o| {
                let mut o = o.to_vec();
                o.sort();
                got.push((k.to_vec(), o));
            });
            got.sort();
            let want: Vec<(Vec<u8>, Vec<Owner>)> = model
                .iter()
                .filter(|(k, o)| k.starts_with(prefix) && !o.is_empty())
                .map(|(k, o)| {
                    let mut o = o.clone();
                    o.sort();
                    (k.clone(), o)
                })
                .collect();
            assert_eq!(got, want, "prefix {prefix:?}");
        }
    }

    proptest! {
        #[test]
        fn base_plus_delta_equals_a_plain_map(
            initial in proptest::collection::vec((key(), 0u8..6), 0..30),
            ops in proptest::collection::vec(op(), 0..60),
            fst in any::<bool>(),
        ) {
            // Both kinds of base: an fst, and the sorted buffer of a small one.
            ALWAYS_FST.with(|a| a.set(fst));
            let mut model: BTreeMap<Vec<u8>, Vec<Owner>> = BTreeMap::new();
            for (k, o) in &initial {
                let l = model.entry(k.clone()).or_default();
                if !l.contains(&owner(*o)) {
                    l.push(owner(*o));
                }
            }
            let mut index = KeyIndex::<Key>::build(
                initial.iter().map(|(k, o)| (Key::from_slice(k), owner(*o))).collect(),
            );
            check(&index, &model);
            let mut pending: Option<(RebuildJob<Key>, usize)> = None;
            for op in ops {
                match op {
                    Op::Add(k, o) => {
                        index.add(Key::from_slice(&k), owner(o));
                        let l = model.entry(k).or_default();
                        if !l.contains(&owner(o)) {
                            l.push(owner(o));
                        }
                    }
                    Op::Remove(k, o) => {
                        index.remove(Key::from_slice(&k), owner(o));
                        if let Some(l) = model.get_mut(&k) {
                            l.retain(|x| *x != owner(o));
                        }
                    }
                    Op::StartRebuild(after) => {
                        if pending.is_none() {
                            pending = Some((index.rebuild_job(), after));
                        }
                    }
                    Op::Compact => index.compact(),
                }
                if let Some((_, left)) = &mut pending {
                    if *left == 0 {
                        let (job, _) = pending.take().unwrap();
                        // A compaction meanwhile replaced the base: the stale result is
                        // refused and nothing changes.
                        index.install(job.run());
                    } else {
                        *left -= 1;
                    }
                }
                check(&index, &model);
            }
        }
    }

    #[test]
    fn stale_rebuilds_are_refused() {
        let mut index = KeyIndex::<Key>::default();
        index.add(Key::from_slice(b"12"), owner(1));
        let job = index.rebuild_job();
        index.compact();
        index.add(Key::from_slice(b"13"), owner(2));
        assert!(!index.install(job.run()));
        assert_eq!(index.get(b"13"), &[owner(2)]);
        assert_eq!(index.get(b"12"), &[owner(1)]);
    }
}
