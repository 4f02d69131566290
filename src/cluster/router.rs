//! Where a workspace's request is answered: a pure decision from the directory and what
//! this node holds.
//!
//! - **Here**: this node writes the workspace (it holds the lease, and is not handing
//!   it over).
//! - **To** the writer: another live node holds the lease (and has not failed this
//!   request already).
//! - No reachable writer (one is being replaced): a read is answered from this node's
//!   own copy (**Local**), or by a live node that has one (**To** it) when this node has
//!   none; a write **Waits** for the next writer.
//!
//! [`super::relay`] carries the decision out, looking again after each wait or refusal.

use super::directory::Directory;
use super::forward::Peer;
use std::sync::Arc;
use uuid::Uuid;

/// Where a request goes (see the module's docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    Here,
    To(Arc<Peer>),
    Local,
    Wait,
}

/// The request being routed.
#[derive(Clone, Copy, Debug)]
pub struct Ask<'a> {
    pub workspace: Uuid,
    /// A read (GET, HEAD): any whole copy may answer it while there is no writer.
    pub read: bool,
    /// Whether this node has a copy of the workspace loaded.
    pub copy_here: bool,
    /// Nodes that did not answer this request (unreachable, or no answer).
    pub down: &'a [String],
}

/// Decides where `ask` goes, for this node `me` that writes the workspace or not
/// (`writes_here`).
pub fn route(directory: &Directory, me: &str, writes_here: bool, ask: Ask<'_>) -> Route {
    if writes_here {
        return Route::Here;
    }
    let up = |name: &&str| *name != me && !ask.down.iter().any(|d| d == name);
    if let Some(writer) = directory.writer(ask.workspace).filter(up) {
        if let Some(node) = directory.node(writer) {
            return Route::To(node.peer.clone());
        }
    }
    if !ask.read {
        return Route::Wait;
    }
    if ask.copy_here {
        return Route::Local;
    }
    let mut holders: Vec<&str> = directory
        .copies(ask.workspace)
        .map(|c| &*c.node)
        .filter(up)
        .collect();
    holders.sort_unstable();
    match holders.first().and_then(|n| directory.node(n)) {
        Some(node) => Route::To(node.peer.clone()),
        None => Route::Wait,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::port::{HoldingRow, LeaseRow, NodeRow};

    fn directory() -> Directory {
        let mut d = Directory::default();
        let node = |name: &str| NodeRow {
            name: name.into(),
            advertise_url: format!("https://{name}:8443"),
            incarnation: format!("{name}-1"),
            cert_sha256: "cd".repeat(32),
            secret_sha256: String::new(),
        };
        d.set_nodes(&[node("a"), node("b"), node("c")]);
        d
    }

    fn ask(workspace: Uuid, read: bool, copy_here: bool, down: &[String]) -> Ask<'_> {
        Ask {
            workspace,
            read,
            copy_here,
            down,
        }
    }

    fn to(route: Route) -> String {
        match route {
            Route::To(peer) => peer.name.clone(),
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn requests_go_to_the_writer_and_reads_to_a_copy_while_there_is_none() {
        let mut d = directory();
        let ws = Uuid::from_u128(1);
        // Nobody writes it, nobody has it: a write waits, a read too (nobody to ask).
        assert_eq!(
            route(&d, "a", false, ask(ws, false, false, &[])),
            Route::Wait
        );
        assert_eq!(
            route(&d, "a", false, ask(ws, true, false, &[])),
            Route::Wait
        );
        // c has a copy: a read goes there, or is answered from a's own.
        d.apply_holdings(vec![HoldingRow {
            workspace: ws,
            node: "c".into(),
            incarnation: "c-1".into(),
            position: Some(4),
        }]);
        assert_eq!(to(route(&d, "a", false, ask(ws, true, false, &[]))), "c");
        assert_eq!(
            route(&d, "a", false, ask(ws, true, true, &[])),
            Route::Local
        );
        // b writes it: everything goes to b, but what this node writes itself.
        d.apply_leases(vec![LeaseRow {
            workspace: ws,
            holder: "b".into(),
            incarnation: "b-1".into(),
            epoch: 2,
        }]);
        assert_eq!(to(route(&d, "a", false, ask(ws, false, false, &[]))), "b");
        assert_eq!(to(route(&d, "a", false, ask(ws, true, true, &[]))), "b");
        assert_eq!(route(&d, "b", true, ask(ws, false, true, &[])), Route::Here);
        // b did not answer: a write waits for the next writer, a read goes to a copy.
        let down = vec!["b".to_string()];
        assert_eq!(
            route(&d, "a", false, ask(ws, false, true, &down)),
            Route::Wait
        );
        assert_eq!(to(route(&d, "a", false, ask(ws, true, false, &down))), "c");
        // The lease names a node that holds it but this node does not write it yet (it
        // is catching up): wait.
        assert_eq!(
            route(&d, "b", false, ask(ws, false, true, &[])),
            Route::Wait
        );
    }
}
