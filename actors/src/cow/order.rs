//! [`OrderIndex`]: a table's visible rows ordered by (stamp, key), as one sorted vector
//! shared between states plus two small persistent deltas (entries added since, and
//! entries of the vector removed since). Reads merge the three in one pass; when the
//! deltas grow past a fraction of the vector, a write folds them into a new vector.
//!
//! The vector costs its entries' size (no node per entry), and a write touches only the
//! deltas, so most of the order is shared by every state that ever held it.

use crate::time::Stamp;
use imbl::{OrdMap, OrdSet};
use std::ops::Bound;
use std::sync::Arc;

/// Positions in the order, with each entry's row number; see the module docs.
#[derive(Clone)]
pub struct OrderIndex<K> {
    base: Arc<[(Stamp, K, u32)]>,
    /// Entries of `base` that are gone.
    removed: OrdSet<(Stamp, K)>,
    /// Entries not in `base`.
    added: OrdMap<(Stamp, K), u32>,
}

impl<K: Ord + Clone + 'static> Default for OrderIndex<K> {
    fn default() -> Self {
        Self::of_sorted(Vec::new())
    }
}

impl<K: std::fmt::Debug + Ord + Clone + 'static> std::fmt::Debug for OrderIndex<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.range(Bound::Unbounded))
            .finish()
    }
}

impl<K: Ord + Clone + 'static> OrderIndex<K> {
    /// An index of the given entries, in any order, built at once.
    pub fn build(mut entries: Vec<(Stamp, K, u32)>) -> Self {
        entries.sort_unstable_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        Self::of_sorted(entries)
    }

    /// Of entries already in order, with no deltas.
    fn of_sorted(entries: Vec<(Stamp, K, u32)>) -> Self {
        OrderIndex {
            base: Arc::from(entries),
            removed: crate::cow::shared_empty(),
            added: crate::cow::shared_empty(),
        }
    }

    pub fn len(&self) -> usize {
        self.base.len() - self.removed.len() + self.added.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The row of an entry of the vector (removed or not).
    fn in_base(&self, stamp: Stamp, key: &K) -> Option<u32> {
        self.base
            .binary_search_by(|e| (e.0, &e.1).cmp(&(stamp, key)))
            .ok()
            .map(|at| self.base[at].2)
    }

    /// Adds an entry (absent from the index).
    pub fn insert(&mut self, stamp: Stamp, key: K, row: u32) {
        let entry = (stamp, key);
        // The vector's entry comes back when it is the same; otherwise it stays removed
        // and the new one is added.
        let same_as_removed =
            self.removed.contains(&entry) && self.in_base(entry.0, &entry.1) == Some(row);
        if same_as_removed {
            self.removed.remove(&entry);
        } else {
            self.added.insert(entry, row);
        }
        self.fold_if_due();
    }

    /// Removes an entry (present in the index).
    pub fn remove(&mut self, stamp: Stamp, key: &K) {
        let entry = (stamp, key.clone());
        if self.added.remove(&entry).is_none() && self.in_base(stamp, key).is_some() {
            self.removed.insert(entry);
        }
        self.fold_if_due();
    }

    fn fold_if_due(&mut self) {
        if super::fold_due(self.base.len(), self.removed.len() + self.added.len()) {
            let entries: Vec<_> = self
                .range(Bound::Unbounded)
                .map(|(s, k, r)| (s, k.clone(), r))
                .collect();
            *self = Self::of_sorted(entries);
        }
    }

    /// Entries from `lower` on, in order.
    pub fn range(&self, lower: Bound<(Stamp, K)>) -> impl Iterator<Item = (Stamp, &K, u32)> + '_ {
        let start = match &lower {
            Bound::Unbounded => 0,
            Bound::Included(b) => self.base.partition_point(|e| (e.0, &e.1) < (b.0, &b.1)),
            Bound::Excluded(b) => self.base.partition_point(|e| (e.0, &e.1) <= (b.0, &b.1)),
        };
        let mut base = self.base[start..].iter().peekable();
        let mut removed = self
            .removed
            .range((lower.clone(), Bound::Unbounded))
            .peekable();
        let mut added = self.added.range((lower, Bound::Unbounded)).peekable();
        std::iter::from_fn(move || loop {
            let from_base = base.peek().map(|e| (e.0, &e.1));
            let from_added = added.peek().map(|(e, _)| (e.0, &e.1));
            let take_base = match (from_base, from_added) {
                (None, None) => return None,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some(b), Some(a)) => b < a,
            };
            if !take_base {
                let ((s, k), r) = added.next().expect("peeked");
                return Some((*s, k, *r));
            }
            let e = base.next().expect("peeked");
            // Skip the removed entries behind this one, then this one if it is removed.
            while removed.peek().is_some_and(|r| (r.0, &r.1) < (e.0, &e.1)) {
                removed.next();
            }
            if removed.peek().is_some_and(|r| (r.0, &r.1) == (e.0, &e.1)) {
                removed.next();
                continue;
            }
            return Some((e.0, &e.1, e.2));
        })
    }

    /// Entries from `lower` on, counted without walking the vector.
    pub fn count_from(&self, lower: Bound<(Stamp, K)>) -> usize {
        let start = match &lower {
            Bound::Unbounded => 0,
            Bound::Included(b) => self.base.partition_point(|e| (e.0, &e.1) < (b.0, &b.1)),
            Bound::Excluded(b) => self.base.partition_point(|e| (e.0, &e.1) <= (b.0, &b.1)),
        };
        let removed = self
            .removed
            .range((lower.clone(), Bound::Unbounded))
            .count();
        let added = self.added.range((lower, Bound::Unbounded)).count();
        self.base.len() - start - removed + added
    }
}
