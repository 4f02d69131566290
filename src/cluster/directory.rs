//! The cluster as this node last read it: the live nodes (how to reach and trust each),
//! every workspace's writer lease, and which live nodes have each workspace loaded.
//!
//! Kept up to date by horizon reads (`super::port`): each read brings only the leases
//! and holdings written since the last, applied here; the maps are persistent
//! (`imbl`), so a new directory is published to the request path after every read
//! without copying them. Everything here is a pure function of what was read.

use super::forward::Peer;
use super::placement;
use super::port::{HoldingRow, LeaseRow, NodeRow};
use smallvec::SmallVec;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;
use uuid::Uuid;

/// A live node.
#[derive(Clone, Debug)]
pub struct LiveNode {
    pub peer: Arc<Peer>,
    pub incarnation: Arc<str>,
    /// SHA-256 (hex) of the secret its start presents to other nodes.
    pub secret_sha256: String,
}

/// A lease as last read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    pub holder: Arc<str>,
    pub incarnation: Arc<str>,
    pub epoch: u64,
}

/// A loaded copy as its node last reported it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Copy {
    pub node: Arc<str>,
    pub incarnation: Arc<str>,
    pub position: u64,
}

/// See the module's docs.
#[derive(Clone, Default)]
pub struct Directory {
    /// The live nodes by name.
    nodes: HashMap<Arc<str>, LiveNode>,
    /// Their names, sorted (what placement ranks).
    live: Vec<Arc<str>>,
    leases: imbl::HashMap<Uuid, Lease>,
    copies: imbl::HashMap<Uuid, SmallVec<[Copy; 3]>>,
    /// Where the next horizon reads start.
    pub lease_horizon: i64,
    pub holding_horizon: i64,
    /// When it was last read (`None`: never).
    pub read_at: Option<Instant>,
}

impl Directory {
    /// Replaces the live nodes; whether the set of names changed. A node whose row does
    /// not parse (an advertised URL or pin this node cannot use) is left out.
    pub fn set_nodes(&mut self, rows: &[NodeRow]) -> bool {
        let before: Vec<Arc<str>> = std::mem::take(&mut self.live);
        self.nodes = rows
            .iter()
            .filter_map(|n| {
                let peer = Peer::new(n.name.clone(), &n.advertise_url, &n.cert_sha256)?;
                let name: Arc<str> = n.name.as_str().into();
                Some((
                    name,
                    LiveNode {
                        peer: Arc::new(peer),
                        incarnation: n.incarnation.as_str().into(),
                        secret_sha256: n.secret_sha256.clone(),
                    },
                ))
            })
            .collect();
        self.live = self.nodes.keys().cloned().collect();
        self.live.sort();
        self.live != before
    }

    /// Applies leases written since the last read.
    pub fn apply_leases(&mut self, rows: Vec<LeaseRow>) {
        for r in rows {
            self.leases.insert(
                r.workspace,
                Lease {
                    holder: r.holder.into(),
                    incarnation: r.incarnation.into(),
                    epoch: r.epoch,
                },
            );
        }
    }

    /// Applies holdings written since the last read.
    pub fn apply_holdings(&mut self, rows: Vec<HoldingRow>) {
        for r in rows {
            let mut copies = self.copies.get(&r.workspace).cloned().unwrap_or_default();
            copies.retain(|c| *c.node != *r.node);
            if let Some(position) = r.position {
                copies.push(Copy {
                    node: r.node.into(),
                    incarnation: r.incarnation.into(),
                    position,
                });
            }
            if copies.is_empty() {
                self.copies.remove(&r.workspace);
            } else {
                self.copies.insert(r.workspace, copies);
            }
        }
    }

    /// Whether `name` is a live node under `incarnation`.
    fn lives(&self, name: &str, incarnation: &str) -> bool {
        !incarnation.is_empty()
            && self
                .nodes
                .get(name)
                .is_some_and(|n| &*n.incarnation == incarnation)
    }

    /// The live nodes' names, sorted.
    pub fn live(&self) -> impl Iterator<Item = &str> {
        self.live.iter().map(|n| &**n)
    }

    pub fn node(&self, name: &str) -> Option<&LiveNode> {
        self.nodes.get(name)
    }

    /// Whether a live node other than `me` is known.
    pub fn has_peers(&self, me: &str) -> bool {
        self.live.iter().any(|n| &**n != me)
    }

    /// The workspace's lease as last read (held or not).
    pub fn lease(&self, workspace: Uuid) -> Option<&Lease> {
        self.leases.get(&workspace)
    }

    /// The node whose lease on the workspace holds: a live node under the lease's
    /// incarnation.
    pub fn writer(&self, workspace: Uuid) -> Option<&str> {
        self.leases
            .get(&workspace)
            .filter(|l| self.lives(&l.holder, &l.incarnation))
            .map(|l| &*l.holder)
    }

    /// The live nodes that have the workspace loaded, with their copies' positions.
    pub fn copies(&self, workspace: Uuid) -> impl Iterator<Item = &Copy> {
        self.copies
            .get(&workspace)
            .into_iter()
            .flatten()
            .filter(|c| self.lives(&c.node, &c.incarnation))
    }

    /// Whether the live node `node` has the workspace loaded.
    pub fn loaded(&self, workspace: Uuid, node: &str) -> bool {
        self.copies(workspace).any(|c| &*c.node == node)
    }

    /// Whether any live node has the workspace loaded.
    pub fn held_anywhere(&self, workspace: Uuid) -> bool {
        self.copies(workspace).next().is_some()
    }

    /// Every workspace a lease or a copy names.
    pub fn workspaces(&self) -> impl Iterator<Item = Uuid> + '_ {
        self.leases.keys().chain(self.copies.keys()).copied()
    }

    /// The nodes the workspace is placed on among the live ones, best first.
    pub fn placed(&self, workspace: Uuid, replicas: usize) -> Vec<&str> {
        let live: Vec<&str> = self.live().collect();
        placement::holders(workspace, &live, replicas)
    }

    /// Which node should write the workspace: the best placed node that has it loaded;
    /// while none has, the holder of its lease if that lease holds and its holder has it
    /// loaded (a new workspace's importer, or the writer of a moment ago); otherwise any
    /// live node that has it loaded, by its rank among all live nodes. `None` while no
    /// live node has it loaded: a node writes only a copy it has whole.
    pub fn should_write<'a>(&'a self, workspace: Uuid, placed: &[&'a str]) -> Option<&'a str> {
        if let Some(best) = placed.iter().find(|n| self.loaded(workspace, n)) {
            return Some(best);
        }
        if let Some(w) = self.writer(workspace).filter(|w| self.loaded(workspace, w)) {
            return Some(w);
        }
        let live: Vec<&str> = self.live().collect();
        placement::holders(workspace, &live, live.len())
            .into_iter()
            .find(|n| self.loaded(workspace, n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str) -> NodeRow {
        NodeRow {
            name: name.into(),
            advertise_url: format!("https://{name}.internal:8443"),
            incarnation: format!("{name}-1"),
            cert_sha256: "ab".repeat(32),
            secret_sha256: String::new(),
        }
    }

    fn copy(ws: Uuid, node: &str, position: Option<u64>) -> HoldingRow {
        HoldingRow {
            workspace: ws,
            node: node.into(),
            incarnation: format!("{node}-1"),
            position,
        }
    }

    fn lease(ws: Uuid, holder: &str, incarnation: &str, epoch: u64) -> LeaseRow {
        LeaseRow {
            workspace: ws,
            holder: holder.into(),
            incarnation: incarnation.into(),
            epoch,
        }
    }

    #[test]
    fn the_best_placed_node_with_a_loaded_copy_writes() {
        let mut d = Directory::default();
        assert!(d.set_nodes(&[node("a"), node("b"), node("c")]));
        assert!(!d.set_nodes(&[node("c"), node("b"), node("a")]));
        let ws = Uuid::from_u128(42);
        let placed: Vec<String> = d.placed(ws, 2).into_iter().map(str::to_string).collect();
        let placed: Vec<&str> = placed.iter().map(String::as_str).collect();
        // Nobody has it: nobody writes.
        assert_eq!(d.should_write(ws, &placed), None);
        // Only the node outside the placement has it (it imported the workspace and
        // holds its lease): it writes until a placed node has it loaded.
        let outside = ["a", "b", "c"]
            .into_iter()
            .find(|n| !placed.contains(n))
            .unwrap();
        d.apply_leases(vec![lease(ws, outside, &format!("{outside}-1"), 1)]);
        d.apply_holdings(vec![copy(ws, outside, Some(1))]);
        assert_eq!(d.writer(ws), Some(outside));
        assert_eq!(d.should_write(ws, &placed), Some(outside));
        // The second placed node loads it: it writes; then the first: it writes.
        d.apply_holdings(vec![copy(ws, placed[1], Some(1))]);
        assert_eq!(d.should_write(ws, &placed), Some(placed[1]));
        d.apply_holdings(vec![copy(ws, placed[0], Some(1))]);
        assert_eq!(d.should_write(ws, &placed), Some(placed[0]));
        // The first lets it go (or dies): the second again.
        d.apply_holdings(vec![copy(ws, placed[0], None)]);
        assert_eq!(d.should_write(ws, &placed), Some(placed[1]));
        assert!(!d.loaded(ws, placed[0]));
    }

    #[test]
    fn a_lease_holds_while_its_holder_lives_under_its_incarnation() {
        let mut d = Directory::default();
        d.set_nodes(&[node("a"), node("b")]);
        let ws = Uuid::from_u128(7);
        d.apply_leases(vec![lease(ws, "a", "a-1", 3)]);
        assert_eq!(d.writer(ws), Some("a"));
        // Given up: nobody writes.
        d.apply_leases(vec![lease(ws, "a", "", 3)]);
        assert_eq!(d.writer(ws), None);
        // Held by an earlier start of a: not a's now.
        d.apply_leases(vec![lease(ws, "a", "a-0", 4)]);
        assert_eq!(d.writer(ws), None);
        // Held by b, which dies: nobody writes, and its copy counts no more.
        d.apply_leases(vec![lease(ws, "b", "b-1", 5)]);
        d.apply_holdings(vec![copy(ws, "b", Some(9))]);
        assert_eq!(d.writer(ws), Some("b"));
        assert!(d.held_anywhere(ws));
        d.set_nodes(&[node("a")]);
        assert_eq!(d.writer(ws), None);
        assert!(!d.held_anywhere(ws));
        assert!(!d.has_peers("a"));
    }
}
