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
//! - [`OrderIndex`]: a sorted vector plus small persistent deltas (the sync order);
//! - [`SortedSet`]: the same shape for a set of tuples, whose prefixes are the state's
//!   one-to-many indexes (a person's rows, a parent's notes and attachments).
//!
//! The deltas start as [`shared_empty`] maps: an `imbl` map allocates a whole node (a
//! few kilobytes) when made, and a workspace has a few dozen of them, nearly always
//! empty. A fleet of thousands of small workspaces would hold that much per workspace
//! for nothing; a clone of one empty map per type holds none.

mod map;
mod order;
mod sorted;

pub use map::CowMap;
pub use order::OrderIndex;
pub use sorted::SortedSet;

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

/// Entries per chunk: a write copies one chunk of this many entries.
const CHUNK_BITS: u32 = 9;
const CHUNK: usize = 1 << CHUNK_BITS;

/// Makes `a` uniquely owned, copying its contents when it is shared.
fn unique<T: Clone>(a: &mut Arc<[T]>) -> &mut [T] {
    if Arc::get_mut(a).is_none() {
        *a = a.iter().cloned().collect();
    }
    Arc::get_mut(a).expect("just made unique")
}

/// A growable vector stored as shared chunks of [`CHUNK`] entries. The last chunk may
/// be shorter: a power of two from [`FIRST_CHUNK`] up, doubled as it fills, so that a
/// small vector (a table of a few rows, in a workspace of a few dozen records) holds a
/// few entries rather than a whole chunk.
pub struct CowVec<T> {
    chunks: Arc<[Arc<[T]>]>,
    /// Entries of the last chunk beyond `len` hold `T::default()`.
    len: usize,
}

/// Entries of a vector's first chunk when it starts empty.
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
            chunks: Arc::from(Vec::new()),
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
    /// A vector of the given entries, built at once (no copying chunk by chunk).
    pub fn from_vec(v: Vec<T>) -> Self {
        let len = v.len();
        let mut chunks: Vec<Arc<[T]>> = Vec::with_capacity(len.div_ceil(CHUNK));
        let mut it = v.into_iter();
        loop {
            let chunk: Vec<T> = it.by_ref().take(CHUNK).collect();
            if chunk.is_empty() {
                break;
            }
            chunks.push(pad(chunk));
        }
        CowVec {
            chunks: Arc::from(chunks),
            len,
        }
    }

    /// Appends an entry and returns its position.
    pub fn push(&mut self, value: T) -> usize {
        let at = self.len;
        let (c, i) = (at >> CHUNK_BITS, at & (CHUNK - 1));
        if i == 0 {
            let mut chunks: Vec<Arc<[T]>> = self.chunks.iter().cloned().collect();
            // A second chunk onwards is whole at once: the vector is large already.
            let size = if c == 0 { FIRST_CHUNK } else { CHUNK };
            let mut chunk = vec![T::default(); size];
            chunk[0] = value;
            chunks.push(Arc::from(chunk));
            self.chunks = Arc::from(chunks);
        } else if i >= self.chunks[c].len() {
            // The last chunk is full: twice its size (a copy, as a write to a shared
            // chunk makes anyway).
            let old = &self.chunks[c];
            let mut chunk = Vec::with_capacity((old.len() * 2).min(CHUNK));
            chunk.extend(old.iter().cloned());
            chunk.resize((old.len() * 2).min(CHUNK), T::default());
            chunk[i] = value;
            unique(&mut self.chunks)[c] = Arc::from(chunk);
        } else {
            unique(&mut unique(&mut self.chunks)[c])[i] = value;
        }
        self.len += 1;
        at
    }

    /// The entry at `at`, copied out of any chunk it shares with another clone.
    pub fn get_mut(&mut self, at: usize) -> Option<&mut T> {
        if at >= self.len {
            return None;
        }
        Some(&mut unique(&mut unique(&mut self.chunks)[at >> CHUNK_BITS])[at & (CHUNK - 1)])
    }
}

/// A chunk filled up to a power of two of entries (a whole one's [`CHUNK`]).
fn pad<T: Clone + Default>(mut chunk: Vec<T>) -> Arc<[T]> {
    chunk.resize(chunk.len().next_power_of_two().min(CHUNK), T::default());
    Arc::from(chunk)
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
        Some(&self.chunks[at >> CHUNK_BITS][at & (CHUNK - 1)])
    }

    /// Every entry, by position.
    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.chunks.iter().flat_map(|c| c.iter()).take(self.len)
    }
}

#[cfg(test)]
mod tests;
