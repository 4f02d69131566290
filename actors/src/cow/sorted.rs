//! [`SortedSet`]: a persistent set kept as one sorted vector shared between states plus
//! two small persistent deltas (entries added since, and entries of the vector removed
//! since); [`super::OrderIndex`], the sync order, is one of `(stamp, key, row)`.
//!
//! It holds the state's one-to-many indexes (a person's candidate rows, a parent's notes
//! and attachments) as sorted tuples `(owner, …, child)`: the children of one owner are
//! the range of its prefix. An entry costs its own size, with no per-owner map entry,
//! list header or spare capacity, which a map of small vectors pays for every owner.
//! Reads merge the vector and the deltas in one pass; when the deltas grow past a
//! fraction of the vector, a write folds them into a new vector.

use imbl::OrdSet;
use std::ops::Bound;
use std::sync::Arc;

/// A sorted set; see the module docs.
#[derive(Clone)]
pub struct SortedSet<E> {
    base: Arc<[E]>,
    /// Entries of `base` that are gone.
    removed: OrdSet<E>,
    /// Entries not in `base`.
    added: OrdSet<E>,
}

impl<E: Ord + Clone + 'static> Default for SortedSet<E> {
    fn default() -> Self {
        Self::of_sorted(Vec::new())
    }
}

impl<E: std::fmt::Debug + Ord + Clone + 'static> std::fmt::Debug for SortedSet<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl<E: Ord + Clone + 'static> SortedSet<E> {
    /// A set of the given entries, in any order and possibly repeated, built at once.
    pub fn build(mut entries: Vec<E>) -> Self {
        entries.sort_unstable();
        entries.dedup();
        Self::of_sorted(entries)
    }

    /// Of entries already in order, with no deltas.
    fn of_sorted(entries: Vec<E>) -> Self {
        SortedSet {
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

    /// Where the vector's entries from `lower` on start.
    fn base_from(&self, lower: Bound<&E>) -> usize {
        match lower {
            Bound::Unbounded => 0,
            Bound::Included(b) => self.base.partition_point(|e| e < b),
            Bound::Excluded(b) => self.base.partition_point(|e| e <= b),
        }
    }

    fn in_base(&self, e: &E) -> bool {
        self.base.binary_search(e).is_ok()
    }

    pub fn contains(&self, e: &E) -> bool {
        self.added.contains(e) || (self.in_base(e) && !self.removed.contains(e))
    }

    /// Adds an entry; `false` when it was there already.
    pub fn insert(&mut self, e: E) -> bool {
        let new = if self.in_base(&e) {
            self.removed.remove(&e).is_some()
        } else {
            self.added.insert(e).is_none()
        };
        self.fold_if_due();
        new
    }

    /// Removes an entry; `false` when it was not there.
    pub fn remove(&mut self, e: &E) -> bool {
        let gone = self.added.remove(e).is_some()
            || (self.in_base(e) && self.removed.insert(e.clone()).is_none());
        self.fold_if_due();
        gone
    }

    fn fold_if_due(&mut self) {
        if super::fold_due(self.base.len(), self.removed.len() + self.added.len()) {
            let entries: Vec<E> = self.iter().cloned().collect();
            *self = Self::of_sorted(entries);
        }
    }

    /// Every entry, in order.
    pub fn iter(&self) -> impl Iterator<Item = &E> + '_ {
        self.range(Bound::Unbounded, Bound::Unbounded)
    }

    /// The entries from `lower` on, counted without walking the vector: the deltas'
    /// entries there are few (they are folded when they grow), and `added` holds none of
    /// the vector's.
    pub fn count_from(&self, lower: Bound<&E>) -> usize {
        let start = self.base_from(lower);
        let bounds = (lower.cloned(), Bound::Unbounded);
        let removed = self.removed.range(bounds.clone()).count();
        let added = self.added.range(bounds).count();
        self.base.len() - start - removed + added
    }

    /// The entries between `lower` and `upper`, in order.
    pub fn range(&self, lower: Bound<&E>, upper: Bound<&E>) -> impl Iterator<Item = &E> + '_ {
        let start = self.base_from(lower);
        let end = match upper {
            Bound::Unbounded => self.base.len(),
            Bound::Included(b) => self.base.partition_point(|e| e <= b),
            Bound::Excluded(b) => self.base.partition_point(|e| e < b),
        };
        let bounds = (lower.cloned(), upper.cloned());
        let mut base = self.base[start..end.max(start)].iter().peekable();
        // A delta's range panics on inverted bounds; an empty range has no deltas.
        let empty = match (&bounds.0, &bounds.1) {
            (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => {
                a > b
            }
            _ => false,
        };
        fn delta<'a, E: Ord + Clone>(
            set: &'a OrdSet<E>,
            bounds: &(Bound<E>, Bound<E>),
            empty: bool,
        ) -> impl Iterator<Item = &'a E> + 'a {
            (!empty && !set.is_empty())
                .then(|| set.range(bounds.clone()))
                .into_iter()
                .flatten()
        }
        let mut removed = delta(&self.removed, &bounds, empty).peekable();
        let mut added = delta(&self.added, &bounds, empty).peekable();
        std::iter::from_fn(move || loop {
            let take_base = match (base.peek(), added.peek()) {
                (None, None) => return None,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some(b), Some(a)) => b < a,
            };
            if !take_base {
                return added.next();
            }
            let e = base.next().expect("peeked");
            while removed.peek().is_some_and(|r| *r < e) {
                removed.next();
            }
            if removed.peek().is_some_and(|r| *r == e) {
                removed.next();
                continue;
            }
            return Some(e);
        })
    }
}
