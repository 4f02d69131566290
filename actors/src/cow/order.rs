//! [`OrderIndex`]: a table's visible rows ordered by (stamp, key), each with its row
//! number: a [`SortedSet`] of `(stamp, key, row)` triples, so that it is one sorted
//! vector shared between states plus two small persistent deltas, folded into a new
//! vector when they grow (see [`SortedSet`]).
//!
//! An entry's row rides in the triple rather than beside it: a key holds one row at a
//! time, so ordering by the row as well changes no order, and an entry put back with
//! another row is another triple (the vector's old one stays removed).

use super::SortedSet;
use crate::time::Stamp;
use std::ops::Bound;

/// Positions in the order, with each entry's row number; see the module docs.
#[derive(Clone)]
pub struct OrderIndex<K> {
    entries: SortedSet<(Stamp, K, u32)>,
}

impl<K: Ord + Clone + 'static> Default for OrderIndex<K> {
    fn default() -> Self {
        OrderIndex {
            entries: SortedSet::default(),
        }
    }
}

impl<K: std::fmt::Debug + Ord + Clone + 'static> std::fmt::Debug for OrderIndex<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.range(Bound::Unbounded))
            .finish()
    }
}

/// The lower bound of the triples of positions from `lower` on: an included position
/// starts at its smallest row, an excluded one after its largest.
fn from<K>(lower: Bound<(Stamp, K)>) -> Bound<(Stamp, K, u32)> {
    match lower {
        Bound::Unbounded => Bound::Unbounded,
        Bound::Included((s, k)) => Bound::Included((s, k, 0)),
        Bound::Excluded((s, k)) => Bound::Excluded((s, k, u32::MAX)),
    }
}

impl<K: Ord + Clone + 'static> OrderIndex<K> {
    /// An index of the given entries, in any order, built at once.
    pub fn build(entries: Vec<(Stamp, K, u32)>) -> Self {
        OrderIndex {
            entries: SortedSet::build(entries),
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Adds an entry (absent from the index).
    pub fn insert(&mut self, stamp: Stamp, key: K, row: u32) {
        self.entries.insert((stamp, key, row));
    }

    /// Removes an entry (present in the index), whatever its row: the first triple at or
    /// after `(stamp, key, 0)` is the entry's when it has that stamp and key.
    pub fn remove(&mut self, stamp: Stamp, key: &K) {
        let mut entry = (stamp, key.clone(), 0);
        let row = self
            .entries
            .range(Bound::Included(&entry), Bound::Unbounded)
            .next()
            .filter(|e| e.0 == stamp && e.1 == *key)
            .map(|e| e.2);
        if let Some(row) = row {
            entry.2 = row;
            self.entries.remove(&entry);
        }
    }

    /// Entries from `lower` on, in order.
    pub fn range(&self, lower: Bound<(Stamp, K)>) -> impl Iterator<Item = (Stamp, &K, u32)> + '_ {
        let lower = from(lower);
        self.entries
            .range(lower.as_ref(), Bound::Unbounded)
            .map(|e| (e.0, &e.1, e.2))
    }

    /// Entries from `lower` on, counted without walking the vector.
    pub fn count_from(&self, lower: Bound<(Stamp, K)>) -> usize {
        self.entries.count_from(from(lower).as_ref())
    }
}
