//! [`Chunks`]: the storage under [`super::CowVec`] and [`super::CowMap`], a persistent
//! array of entries in leaves of [`LEAF`] under inner nodes of up to [`FAN`] children.
//!
//! A write in a clone copies the path from the root to the entry's leaf, and nothing
//! else: a leaf of [`LEAF`] entries and one inner node a level. With two levels (one
//! flat array of chunk pointers), a write in a table of a million rows copied the whole
//! array, a reference count incremented for every chunk the table has, and a chunk of
//! 512 entries (each a record's reference count when the entries are records): about
//! 5,000 increments on cache lines all over the heap for one row, and 16,000 for a
//! commit that touches a job's two dozen rows. Here it is a few hundred.
//!
//! Every leaf holds [`LEAF`] entries but the last, which holds a power of two of them
//! (so that a small vector holds a few entries, not a whole leaf), and an entry's leaf
//! and place in it are bits of its position: no search, no table of sizes.

use super::unique;
use std::sync::Arc;

/// Entries per leaf (the last leaf may hold fewer).
pub(super) const LEAF: usize = 1 << LEAF_BITS;
const LEAF_BITS: u32 = 6;
/// Children per inner node.
const FAN: usize = 1 << FAN_BITS;
const FAN_BITS: u32 = 6;

/// A persistent array of entries; see the module docs.
pub(super) struct Chunks<T> {
    root: Node<T>,
    /// Inner levels above the leaves: 0 while the root is the one leaf.
    height: u32,
    /// Leaves, the last included.
    leaves: usize,
    /// Entries the leaves hold: `LEAF` each, and the last leaf's own length.
    slots: usize,
}

enum Node<T> {
    Leaf(Arc<[T]>),
    Inner(Arc<[Node<T>]>),
}

// Not derived: a derive would demand `T: Clone`, but only the `Arc`s are cloned.
impl<T> Clone for Node<T> {
    fn clone(&self) -> Self {
        match self {
            Node::Leaf(l) => Node::Leaf(l.clone()),
            Node::Inner(c) => Node::Inner(c.clone()),
        }
    }
}

impl<T> Clone for Chunks<T> {
    fn clone(&self) -> Self {
        Chunks {
            root: self.root.clone(),
            height: self.height,
            leaves: self.leaves,
            slots: self.slots,
        }
    }
}

impl<T> Default for Chunks<T> {
    fn default() -> Self {
        Chunks {
            root: Node::Leaf(Arc::from(Vec::new())),
            height: 0,
            leaves: 0,
            slots: 0,
        }
    }
}

impl<T> Chunks<T> {
    /// Built from its leaves, in order: each holds [`LEAF`] entries but the last, which
    /// holds at most that many.
    pub(super) fn from_leaves(leaves: Vec<Arc<[T]>>) -> Self {
        let Some(last) = leaves.last() else {
            return Chunks::default();
        };
        debug_assert!(leaves[..leaves.len() - 1].iter().all(|l| l.len() == LEAF));
        debug_assert!(last.len() <= LEAF);
        let count = leaves.len();
        let slots = (count - 1) * LEAF + last.len();
        let mut level: Vec<Node<T>> = leaves.into_iter().map(Node::Leaf).collect();
        let mut height = 0;
        while level.len() > 1 {
            let mut above = Vec::with_capacity(level.len().div_ceil(FAN));
            let mut nodes = level.into_iter().peekable();
            while nodes.peek().is_some() {
                let children: Vec<Node<T>> = nodes.by_ref().take(FAN).collect();
                above.push(Node::Inner(Arc::from(children)));
            }
            level = above;
            height += 1;
        }
        Chunks {
            root: level.pop().expect("one node left"),
            height,
            leaves: count,
            slots,
        }
    }

    /// Entries held, those past the owner's length included.
    pub(super) fn slots(&self) -> usize {
        self.slots
    }

    /// Entries of the last leaf (0 when there is none).
    pub(super) fn last_leaf_len(&self) -> usize {
        match self.leaves {
            0 => 0,
            n => self.slots - (n - 1) * LEAF,
        }
    }

    /// The entry at `at`, which must be below [`Self::slots`].
    pub(super) fn get(&self, at: usize) -> &T {
        debug_assert!(at < self.slots);
        let mut node = &self.root;
        let mut height = self.height;
        loop {
            match node {
                Node::Leaf(l) => return &l[at & (LEAF - 1)],
                Node::Inner(c) => {
                    node = &c[child(at, height)];
                    height -= 1;
                }
            }
        }
    }

    /// The leaves, in order.
    pub(super) fn leaves(&self) -> Leaves<'_, T> {
        Leaves {
            stack: vec![std::slice::from_ref(&self.root).iter()],
        }
    }

    /// Every entry held, in order (those past the owner's length included).
    pub(super) fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.leaves().flat_map(|l| l.iter())
    }
}

impl<T: Clone> Chunks<T> {
    /// The entry at `at` (below [`Self::slots`]), copied out, with the path to it, of
    /// whatever it shares with another clone.
    pub(super) fn get_mut(&mut self, at: usize) -> &mut T {
        debug_assert!(at < self.slots);
        entry_mut(&mut self.root, at, self.height)
    }

    /// Appends a leaf after a last one that is whole ([`LEAF`] entries), or as the first.
    pub(super) fn push_leaf(&mut self, leaf: Arc<[T]>) {
        debug_assert!(leaf.len() <= LEAF);
        let len = leaf.len();
        if self.leaves == 0 {
            *self = Chunks::from_leaves(vec![leaf]);
            return;
        }
        debug_assert_eq!(self.last_leaf_len(), LEAF, "the last leaf is whole");
        let at = self.leaves;
        if at == FAN.pow(self.height) {
            // The tree is full at its height: a new root above it.
            let old = std::mem::replace(&mut self.root, Node::Leaf(Arc::from(Vec::new())));
            self.root = Node::Inner(Arc::from(vec![old, path(leaf, self.height)]));
            self.height += 1;
        } else {
            append(&mut self.root, at, self.height, leaf);
        }
        self.leaves += 1;
        self.slots += len;
    }

    /// Replaces the last leaf with `leaf`, as long or longer (a short one doubled).
    pub(super) fn replace_last_leaf(&mut self, leaf: Arc<[T]>) {
        debug_assert!(self.leaves > 0 && leaf.len() >= self.last_leaf_len());
        debug_assert!(leaf.len() <= LEAF);
        let at = (self.leaves - 1) * LEAF;
        self.slots = at + leaf.len();
        *leaf_mut(&mut self.root, at, self.height) = leaf;
    }
}

/// The index, in an inner node at `height` (1 for the level above the leaves), of the
/// child holding entry `at`.
fn child(at: usize, height: u32) -> usize {
    (at >> (LEAF_BITS + FAN_BITS * (height - 1))) & (FAN - 1)
}

fn entry_mut<T: Clone>(node: &mut Node<T>, at: usize, height: u32) -> &mut T {
    match node {
        Node::Leaf(l) => &mut unique(l)[at & (LEAF - 1)],
        Node::Inner(c) => entry_mut(&mut unique(c)[child(at, height)], at, height - 1),
    }
}

/// The leaf holding entry `at`, itself (to be replaced), with the path to it made unique.
fn leaf_mut<T>(node: &mut Node<T>, at: usize, height: u32) -> &mut Arc<[T]> {
    match node {
        Node::Leaf(l) => l,
        Node::Inner(c) => leaf_mut(&mut unique(c)[child(at, height)], at, height - 1),
    }
}

/// Puts leaf number `at` (counted within `node`, an inner node at `height`) in its
/// place: the first place after the last child's leaves.
fn append<T>(node: &mut Node<T>, at: usize, height: u32, leaf: Arc<[T]>) {
    let Node::Inner(children) = node else {
        unreachable!("a leaf has no room for another");
    };
    let per_child = FAN.pow(height - 1);
    let i = at / per_child;
    if i == children.len() {
        let mut grown: Vec<Node<T>> = children.iter().cloned().collect();
        grown.push(path(leaf, height - 1));
        *children = Arc::from(grown);
    } else {
        append(&mut unique(children)[i], at % per_child, height - 1, leaf);
    }
}

/// `leaf` under `levels` inner nodes of one child each.
fn path<T>(leaf: Arc<[T]>, levels: u32) -> Node<T> {
    let mut node = Node::Leaf(leaf);
    for _ in 0..levels {
        node = Node::Inner(Arc::from(vec![node]));
    }
    node
}

/// The leaves of a [`Chunks`], in order ([`Chunks::leaves`]).
pub(super) struct Leaves<'a, T> {
    stack: Vec<std::slice::Iter<'a, Node<T>>>,
}

impl<'a, T> Iterator for Leaves<'a, T> {
    type Item = &'a Arc<[T]>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let top = self.stack.last_mut()?;
            match top.next() {
                None => {
                    self.stack.pop();
                }
                Some(Node::Leaf(l)) => return Some(l),
                Some(Node::Inner(c)) => self.stack.push(c.iter()),
            }
        }
    }
}
