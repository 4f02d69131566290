//! Which nodes hold a workspace: rendezvous (highest-random-weight) hashing.
//!
//! Every node scores every workspace by a hash of the pair, and a workspace is held by
//! the `replicas` nodes with the highest scores, the first of them its writer's
//! choice. Each node computes this alone from the list of live nodes, and all agree;
//! when a node joins or leaves, only the workspaces whose top scores it takes or gave
//! move (about 1/N of them), and nothing else is reshuffled.

use sha2::{Digest, Sha256};
use uuid::Uuid;

/// The score of `node` for `workspace`: the first 8 bytes of SHA-256 over both (a
/// node name is text of any length, so it comes after the fixed-size id).
fn score(workspace: Uuid, node: &str) -> u64 {
    let mut h = Sha256::new();
    h.update(workspace.as_bytes());
    h.update(node.as_bytes());
    let d = h.finalize();
    u64::from_be_bytes(d[..8].try_into().expect("8 bytes"))
}

/// The nodes that hold `workspace`, best first: the `replicas` (at least one) of
/// `nodes` with the highest scores, fewer when there are fewer nodes. Ties, which
/// need equal hashes, fall to the smaller name, so the order never depends on the
/// order of `nodes`.
pub fn holders<'a>(workspace: Uuid, nodes: &[&'a str], replicas: usize) -> Vec<&'a str> {
    let mut scored: Vec<(u64, &str)> = nodes.iter().map(|n| (score(workspace, n), *n)).collect();
    scored.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    scored.dedup_by(|a, b| a.1 == b.1);
    scored
        .into_iter()
        .take(replicas.max(1))
        .map(|(_, n)| n)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspaces(n: usize) -> Vec<Uuid> {
        (0..n as u128)
            .map(|i| Uuid::from_u128(i * 0x9e37_79b9_7f4a_7c15 + 1))
            .collect()
    }

    #[test]
    fn every_node_agrees_whatever_order_it_lists_the_nodes_in() {
        let ws = Uuid::from_u128(42);
        let a = holders(ws, &["n1", "n2", "n3", "n4"], 2);
        let b = holders(ws, &["n4", "n3", "n2", "n1"], 2);
        assert_eq!(a, b);
        assert_eq!(a.len(), 2);
        assert_ne!(a[0], a[1]);
    }

    #[test]
    fn replicas_are_capped_by_the_nodes_there_are_and_never_none() {
        let ws = Uuid::from_u128(7);
        assert_eq!(holders(ws, &["only"], 2), ["only"]);
        assert_eq!(holders(ws, &["a", "b"], 0).len(), 1);
        assert!(holders(ws, &[], 2).is_empty());
        // A name listed twice is one node.
        assert_eq!(holders(ws, &["a", "a"], 2), ["a"]);
    }

    #[test]
    fn holders_spread_evenly() {
        let nodes = ["n1", "n2", "n3"];
        let mut writers = std::collections::HashMap::new();
        for ws in workspaces(3000) {
            *writers.entry(holders(ws, &nodes, 2)[0]).or_insert(0) += 1;
        }
        for n in nodes {
            let share = writers[n];
            assert!((800..=1200).contains(&share), "{n} writes {share} of 3000");
        }
    }

    #[test]
    fn a_fourth_node_takes_about_a_quarter_and_moves_nothing_else() {
        let three = ["n1", "n2", "n3"];
        let four = ["n1", "n2", "n3", "n4"];
        let all = workspaces(4000);
        let mut moved = 0;
        for ws in &all {
            let before = holders(*ws, &three, 1)[0];
            let after = holders(*ws, &four, 1)[0];
            if before != after {
                // Only to the new node: no workspace moves between the old ones.
                assert_eq!(after, "n4");
                moved += 1;
            }
        }
        assert!((800..=1200).contains(&moved), "{moved} of 4000 moved");
        // A node leaving gives up only its own workspaces, each to another holder.
        for ws in &all {
            let with = holders(*ws, &four, 2);
            let without = holders(*ws, &three, 2);
            if !with.contains(&"n4") {
                assert_eq!(with, without);
            } else {
                let kept: Vec<_> = with.iter().filter(|n| **n != "n4").collect();
                assert!(kept.iter().all(|n| without.contains(n)));
            }
        }
    }
}
