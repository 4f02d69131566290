//! The persistent containers against std's, operation by operation, with clones taken
//! along the way that must keep what they saw.

use super::*;
use crate::time::Stamp;
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Bound;

#[derive(Clone, Debug)]
enum MapOp {
    Insert(u16, u32),
    Remove(u16),
    Snapshot,
}

fn map_ops() -> impl Strategy<Value = Vec<MapOp>> {
    // Keys from a small range, so that removals hit and probe chains collide.
    let op = prop_oneof![
        4 => (0u16..600, any::<u32>()).prop_map(|(k, v)| MapOp::Insert(k, v)),
        3 => (0u16..600).prop_map(MapOp::Remove),
        1 => Just(MapOp::Snapshot),
    ];
    proptest::collection::vec(op, 0..2000)
}

fn same_map(m: &CowMap<u16, u32>, model: &HashMap<u16, u32>) {
    assert_eq!(m.len(), model.len());
    let mut got: Vec<_> = m.iter().map(|(k, v)| (*k, *v)).collect();
    got.sort_unstable();
    let mut want: Vec<_> = model.iter().map(|(k, v)| (*k, *v)).collect();
    want.sort_unstable();
    assert_eq!(got, want);
    for k in 0..600u16 {
        assert_eq!(m.get(&k), model.get(&k), "key {k}");
    }
}

proptest! {
    #[test]
    fn a_map_behaves_like_std_and_its_clones_keep_what_they_saw(ops in map_ops()) {
        let mut m: CowMap<u16, u32> = CowMap::default();
        let mut model = HashMap::new();
        let mut snapshots = Vec::new();
        for op in ops {
            match op {
                MapOp::Insert(k, v) => prop_assert_eq!(m.insert(k, v), model.insert(k, v)),
                MapOp::Remove(k) => prop_assert_eq!(m.remove(&k), model.remove(&k)),
                MapOp::Snapshot => snapshots.push((m.clone(), model.clone())),
            }
        }
        same_map(&m, &model);
        for (m, model) in &snapshots {
            same_map(m, model);
        }
    }

    #[test]
    fn a_vector_behaves_like_std_and_its_clones_keep_what_they_saw(
        ops in proptest::collection::vec((any::<bool>(), any::<u16>(), any::<u32>()), 0..3000),
    ) {
        let mut v: CowVec<u32> = CowVec::default();
        let mut model: Vec<u32> = Vec::new();
        let mut snapshots = Vec::new();
        for (i, (push, at, x)) in ops.into_iter().enumerate() {
            if push || model.is_empty() {
                prop_assert_eq!(v.push(x), model.len());
                model.push(x);
            } else {
                let at = at as usize % model.len();
                *v.get_mut(at).unwrap() = x;
                model[at] = x;
            }
            if i % 97 == 0 {
                snapshots.push((v.clone(), model.clone()));
            }
        }
        prop_assert_eq!(v.iter().copied().collect::<Vec<_>>(), model.clone());
        prop_assert_eq!(v.get(model.len()), None);
        for (v, model) in &snapshots {
            prop_assert_eq!(&v.iter().copied().collect::<Vec<_>>(), model);
        }
        let mut built = CowVec::from_vec(model.clone());
        prop_assert_eq!(built.iter().copied().collect::<Vec<_>>(), model.clone());
        // Built, then grown past its last chunk (which holds only what it needs).
        for x in 0..700u32 {
            prop_assert_eq!(built.push(x), model.len());
            model.push(x);
        }
        prop_assert_eq!(built.iter().copied().collect::<Vec<_>>(), model);
    }

    #[test]
    fn an_order_behaves_like_a_btree_and_its_clones_keep_what_they_saw(
        base in proptest::collection::btree_set((0i64..50, 0u16..100), 0..3000),
        ops in proptest::collection::vec((any::<bool>(), 0i64..50, 0u16..100), 0..4000),
        bounds in proptest::collection::vec((0u8..3, 0i64..52, 0u16..100), 1..8),
    ) {
        let mut model: BTreeMap<(i64, u16), u32> = BTreeMap::new();
        let entries: Vec<_> = base
            .iter()
            .enumerate()
            .map(|(i, &(s, k))| {
                model.insert((s, k), i as u32);
                (Stamp::from_millis(s), k, i as u32)
            })
            .collect();
        let mut o = OrderIndex::build(entries);
        let mut snapshots = Vec::new();
        for (i, (insert, s, k)) in ops.into_iter().enumerate() {
            let present = model.contains_key(&(s, k));
            if insert && !present {
                o.insert(Stamp::from_millis(s), k, i as u32);
                model.insert((s, k), i as u32);
            } else if !insert && present {
                o.remove(Stamp::from_millis(s), &k);
                model.remove(&(s, k));
            }
            if i % 211 == 0 {
                snapshots.push((o.clone(), model.clone()));
            }
        }
        snapshots.push((o, model));
        for (o, model) in &snapshots {
            prop_assert_eq!(o.len(), model.len());
            for &(kind, s, k) in &bounds {
                let key = (Stamp::from_millis(s), k);
                let (lower, mlower) = match kind {
                    0 => (Bound::Unbounded, Bound::Unbounded),
                    1 => (Bound::Included(key), Bound::Included((s, k))),
                    _ => (Bound::Excluded(key), Bound::Excluded((s, k))),
                };
                let got: Vec<_> = o.range(lower).map(|(s, k, r)| (s.millis(), *k, r)).collect();
                let want: Vec<_> = model
                    .range((mlower, Bound::Unbounded))
                    .map(|(&(s, k), &r)| (s, k, r))
                    .collect();
                prop_assert_eq!(o.count_from(lower), want.len());
                prop_assert_eq!(got, want);
            }
        }
    }

    #[test]
    fn a_sorted_set_behaves_like_a_btree_set_and_its_clones_keep_what_they_saw(
        base in proptest::collection::vec((0u8..40, 0u16..60), 0..3000),
        ops in proptest::collection::vec((any::<bool>(), 0u8..40, 0u16..60), 0..4000),
        bounds in proptest::collection::vec(((0u8..3, 0u8..42, 0u16..62), (0u8..3, 0u8..42, 0u16..62)), 1..8),
    ) {
        let mut model: BTreeSet<(u8, u16)> = base.iter().copied().collect();
        let mut set = SortedSet::build(base);
        let mut snapshots = Vec::new();
        for (i, (insert, a, b)) in ops.into_iter().enumerate() {
            if insert {
                prop_assert_eq!(set.insert((a, b)), model.insert((a, b)));
            } else {
                prop_assert_eq!(set.remove(&(a, b)), model.remove(&(a, b)));
            }
            if i % 211 == 0 {
                snapshots.push((set.clone(), model.clone()));
            }
        }
        snapshots.push((set, model));
        let bound = |(kind, a, b): (u8, u8, u16)| match kind {
            0 => Bound::Unbounded,
            1 => Bound::Included((a, b)),
            _ => Bound::Excluded((a, b)),
        };
        for (set, model) in &snapshots {
            prop_assert_eq!(set.len(), model.len());
            prop_assert_eq!(set.iter().copied().collect::<Vec<_>>(), model.iter().copied().collect::<Vec<_>>());
            for &(lo, hi) in &bounds {
                let (lo, hi) = (bound(lo), bound(hi));
                let got: Vec<_> = set.range(lo.as_ref(), hi.as_ref()).copied().collect();
                // std's range panics on inverted bounds; such a range is empty.
                let inverted = match (&lo, &hi) {
                    (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => {
                        a > b || (a == b && !(matches!(lo, Bound::Included(_)) && matches!(hi, Bound::Included(_))))
                    }
                    _ => false,
                };
                let want: Vec<_> = if inverted {
                    Vec::new()
                } else {
                    model.range((lo, hi)).copied().collect()
                };
                prop_assert_eq!(got, want);
            }
            for probe in [(0u8, 0u16), (3, 7), (39, 59)] {
                prop_assert_eq!(set.contains(&probe), model.contains(&probe));
            }
        }
    }
}

#[test]
fn a_map_grows_past_many_chunks_and_shares_untouched_ones() {
    let mut m: CowMap<u32, u32> = CowMap::from_entries((0..100_000u32).map(|i| (i, i * 2)));
    let before = m.clone();
    assert_eq!(m.insert(7, 1), Some(14));
    assert_eq!(m.remove(&8), Some(16));
    assert_eq!((before.get(&7), before.get(&8)), (Some(&14), Some(&16)));
    assert_eq!((m.get(&7), m.get(&8)), (Some(&1), None));
    let shared = m
        .chunks
        .leaves()
        .zip(before.chunks.leaves())
        .filter(|(a, b)| Arc::ptr_eq(a, b))
        .count();
    let leaves = m.chunks.leaves().count();
    assert!(leaves > 1000, "{leaves} leaves");
    assert!(shared + 3 >= leaves, "{shared} of {leaves} leaves shared");
    *m.entry_or_default(1_000_000) += 5;
    assert_eq!(m.get(&1_000_000), Some(&5));
}

/// More entries than two inner levels hold (`LEAF` × 64 × 64), so the tree is four
/// levels deep, built at once and grown entry by entry.
const DEEP: usize = LEAF * 64 * 64 + 1_000;

#[test]
fn a_vector_of_several_levels_reads_and_writes_like_std() {
    let mut model: Vec<u32> = (0..DEEP as u32).collect();
    let built = CowVec::from_vec(model.clone());
    let mut grown: CowVec<u32> = CowVec::default();
    for &x in &model {
        grown.push(x);
    }
    let mut at = 1usize;
    let mut snapshots = Vec::new();
    let (mut built, mut grown) = (built, grown);
    for i in 0..5_000u32 {
        // A spread of positions over the whole vector, the last leaf included.
        at = (at * 48_271 + 11) % DEEP;
        *built.get_mut(at).unwrap() = i;
        *grown.get_mut(at).unwrap() = i;
        model[at] = i;
        if i % 1_000 == 0 {
            snapshots.push((built.clone(), model.clone()));
        }
    }
    assert!(built.iter().copied().eq(model.iter().copied()));
    assert!(grown.iter().copied().eq(model.iter().copied()));
    for at in [0, LEAF - 1, LEAF, DEEP / 2, DEEP - 1] {
        assert_eq!(built.get(at), Some(&model[at]));
    }
    assert_eq!(built.get(DEEP), None);
    for (v, model) in &snapshots {
        assert!(v.iter().copied().eq(model.iter().copied()));
    }
}

#[test]
fn a_write_in_a_clone_copies_one_leaf_and_the_path_to_it() {
    let mut v = CowVec::from_vec((0..DEEP as u32).collect());
    let before = v.clone();
    *v.get_mut(DEEP / 3).unwrap() = 7;
    v.push(9);
    assert_eq!(
        (before.get(DEEP / 3), v.get(DEEP / 3)),
        (Some(&(DEEP as u32 / 3)), Some(&7))
    );
    assert_eq!((before.len(), v.len()), (DEEP, DEEP + 1));
    let leaves = before.chunks.leaves().count();
    assert_eq!(leaves, DEEP.div_ceil(LEAF));
    let shared = v
        .chunks
        .leaves()
        .zip(before.chunks.leaves())
        .filter(|(a, b)| Arc::ptr_eq(a, b))
        .count();
    // The written leaf and the last one (grown by the push) are copies; no other is.
    assert_eq!(shared, leaves - 2);
}
