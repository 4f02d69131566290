//! Persistent containers made of copy-on-write chunks, the storage under a workspace's
//! state ([`crate::table`], [`crate::state`]).
//!
//! A clone shares every chunk; the first write to a chunk in a clone copies that chunk
//! alone. The workspace actor builds each new state beside the published one, so a
//! write copies the few chunks it touches and readers of the published state never see
//! a half-applied change and never wait. Unlike a persistent tree or HAMT, an entry is
//! stored inline with no node per entry, so a million entries cost about their own size.
//!
//! - [`CowVec`]: a vector of chunks, addressed by `u32` position (a table's rows);
//! - [`CowMap`]: an open-addressing hash map over such chunks (ids, parents, persons);
//! - [`SortedSet`]: a sorted vector plus small persistent deltas, a set of tuples whose
//!   prefixes are the state's one-to-many indexes (a person's rows, a parent's notes and
//!   attachments);
//! - [`OrderIndex`]: such a set of `(stamp, key, row)`, the sync order.
//!
//! The deltas start as [`shared_empty`] maps: an `imbl` map allocates a whole node (a
//! few kilobytes) when made, and a workspace has a few dozen of them, nearly always
//! empty. A fleet of thousands of small workspaces would hold that much per workspace
//! for nothing; a clone of one empty map per type holds none.

mod chunks;
mod map;
mod order;
mod sorted;

pub use map::CowMap;
pub use order::OrderIndex;
pub use sorted::SortedSet;

use chunks::{Chunks, LEAF};
use std::sync::Arc;

/// Deltas are folded into their vector ([`OrderIndex`], [`SortedSet`]) once they hold
/// more than this many entries, or a 32nd of the vector when that is more: folding
/// copies the vector, so it is rare, and the deltas stay small next to it.
const FOLD_AT_LEAST: usize = 1024;

/// Whether deltas of `delta` entries over a vector of `base` are due to be folded into
/// a new vector (see [`FOLD_AT_LEAST`]).
fn fold_due(base: usize, delta: usize) -> bool {
    delta > FOLD_AT_LEAST.max(base / 32)
}

/// An empty value of `T`, shared: one made per type (and thread), and cloned (for a
/// persistent map, a reference count). A persistent map cloned from it copies its node
/// on its first write, as any shared map does.
pub fn shared_empty<T: Default + Clone + 'static>() -> T {
    use std::any::{Any, TypeId};
    use std::collections::HashMap;
    thread_local! {
        static EMPTIES: std::cell::RefCell<HashMap<TypeId, Box<dyn Any>>> =
            std::cell::RefCell::new(HashMap::new());
    }
    EMPTIES.with(|empties| {
        empties
            .borrow_mut()
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Box::new(T::default()))
            .downcast_ref::<T>()
            .expect("stored under its type")
            .clone()
    })
}

/// Makes `a` uniquely owned, copying its contents when it is shared.
fn unique<T: Clone>(a: &mut Arc<[T]>) -> &mut [T] {
    if Arc::get_mut(a).is_none() {
        *a = a.iter().cloned().collect();
    }
    Arc::get_mut(a).expect("just made unique")
}

/// A growable vector stored in a persistent tree of chunks ([`Chunks`]). Its last
/// leaf may be shorter than the others: a power of two from [`FIRST_CHUNK`] up, doubled
/// as it fills, so that a small vector (a table of a few rows, in a workspace of a few
/// dozen records) holds a few entries rather than a whole leaf.
pub struct CowVec<T> {
    chunks: Chunks<T>,
    /// Entries held beyond `len` hold `T::default()`.
    len: usize,
}

/// Entries of a vector's first leaf when it starts empty.
const FIRST_CHUNK: usize = 4;

impl<T> Clone for CowVec<T> {
    fn clone(&self) -> Self {
        CowVec {
            chunks: self.chunks.clone(),
            len: self.len,
        }
    }
}

impl<T> Default for CowVec<T> {
    fn default() -> Self {
        CowVec {
            chunks: Chunks::default(),
            len: 0,
        }
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for CowVec<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<T: Clone + Default> CowVec<T> {
    /// A vector of the given entries, built at once (no copying leaf by leaf).
    pub fn from_vec(v: Vec<T>) -> Self {
        let len = v.len();
        let mut leaves: Vec<Arc<[T]>> = Vec::with_capacity(len.div_ceil(LEAF));
        let mut it = v.into_iter();
        loop {
            let leaf: Vec<T> = it.by_ref().take(LEAF).collect();
            if leaf.is_empty() {
                break;
            }
            leaves.push(pad(leaf));
        }
        CowVec {
            chunks: Chunks::from_leaves(leaves),
            len,
        }
    }

    /// Appends an entry and returns its position.
    pub fn push(&mut self, value: T) -> usize {
        let at = self.len;
        if at < self.chunks.slots() {
            *self.chunks.get_mut(at) = value;
        } else if self.chunks.last_leaf_len() == LEAF || self.len == 0 {
            // A second leaf onwards is whole at once: the vector is large already.
            let size = if self.len == 0 { FIRST_CHUNK } else { LEAF };
            let mut leaf = vec![T::default(); size];
            leaf[0] = value;
            self.chunks.push_leaf(Arc::from(leaf));
        } else {
            // The last leaf is full: twice its size (a copy, as a write to a shared leaf
            // makes anyway).
            let old = self.chunks.last_leaf_len();
            let start = at - old;
            let mut leaf = Vec::with_capacity(old * 2);
            leaf.extend((start..at).map(|i| self.chunks.get(i).clone()));
            leaf.push(value);
            leaf.resize(old * 2, T::default());
            self.chunks.replace_last_leaf(Arc::from(leaf));
        }
        self.len += 1;
        at
    }

    /// The entry at `at`, copied out of any leaf it shares with another clone.
    pub fn get_mut(&mut self, at: usize) -> Option<&mut T> {
        if at >= self.len {
            return None;
        }
        Some(self.chunks.get_mut(at))
    }
}

/// A leaf filled up to a power of two of entries (a whole one's [`LEAF`]).
fn pad<T: Clone + Default>(mut leaf: Vec<T>) -> Arc<[T]> {
    leaf.resize(leaf.len().next_power_of_two().min(LEAF), T::default());
    Arc::from(leaf)
}

impl<T> CowVec<T> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn get(&self, at: usize) -> Option<&T> {
        if at >= self.len {
            return None;
        }
        Some(self.chunks.get(at))
    }

    /// Every entry, by position.
    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.chunks.iter().take(self.len)
    }
}

#[cfg(test)]
mod tests;
