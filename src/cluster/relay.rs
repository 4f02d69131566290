//! Passing requests between nodes: the one send loop under the API's forwarding and the
//! admin interface's, and what one node tells another.
//!
//! [`Membership::relay`] asks the [`router`](super::router) where a request goes, sends
//! it there ([`super::forward`]) and returns the answer as it came, or says it is this
//! node's to answer (here, or from its own copy). It looks again, after a fresh read of
//! the directory, when the node it passed the request to says it is no longer the place
//! for it (421 with [`NOT_HERE`]: nothing of it was done) or could not be reached (the
//! request was not sent); a write that waits for a writer waits at most
//! [`WAIT_FOR_WRITER`]. A request that went out and got no answer is not sent again:
//! the peer may have acted on it.

use super::forward::{self, Failure, Outgoing, NODE, NODE_SECRET, NOT_HERE};
use super::router::{self, Ask, Route};
use super::Membership;
use std::sync::Arc;
use std::time::{Duration, Instant};
use uuid::Uuid;

/// The path on which a node tells another that the API keys changed (node to node
/// only: no client's request reaches it).
pub const KEYS_CHANGED: &str = "/cluster/v1/keys-changed";

/// The path on which a node passes an API key request of its admin interface to the
/// workspace's writer, when it does not hold the workspace (node to node only).
pub const PASSED_KEYS: &str = "/cluster/v1/admin/keys";

/// The path on which a node passes an import of its admin interface to the
/// workspace's writer (node to node only).
pub const PASSED_IMPORT: &str = "/cluster/v1/admin/import";

/// The path on which a node's operator console asks a node that holds a workspace what
/// its copy says of it (counts, positions, webhook endpoints, keys), when the asking
/// node holds none (node to node only).
pub const CONSOLE_COPY: &str = "/cluster/v1/admin/console-copy";

/// The path on which a node that has just given writer leases up tells their next
/// writer to take them now, rather than at its next round (node to node only).
pub const TAKE_NOW: &str = "/cluster/v1/take";

/// The path on which a node asks another for the webhook data key with a fingerprint
/// (node to node only): the key endpoints' secrets are sealed under, which the store
/// never holds (`crate::webhooks::sealing`).
pub const WEBHOOKS_KEY: &str = "/cluster/v1/webhooks-key";

/// Longest a request waits for its workspace to have a writer (one is being replaced).
pub const WAIT_FOR_WRITER: Duration = Duration::from_secs(10);

/// How often a request waiting for a writer looks again.
const LOOK_AGAIN: Duration = Duration::from_millis(100);

/// Longest a forwarded request waits for its answer, unless it says it waits longer
/// itself (a long-poll of the change feed).
pub const ANSWER_WITHIN: Duration = Duration::from_secs(30);

/// Where [`Membership::pass`] passes an admin request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PassTo {
    /// The workspace's writer (a request that changes it).
    Writer,
    /// Its writer, else any node that holds it (a read).
    Holder,
}

/// A request to relay.
pub struct Relay {
    pub workspace: Uuid,
    /// A read: answered from any whole copy while the workspace has no writer.
    pub read: bool,
    /// An admin request: a workspace no node holds or writes (a new one) is this
    /// node's to do.
    pub admin: bool,
    /// How long its answer may take once sent.
    pub answer_within: Duration,
}

/// What became of a relayed request.
pub enum Relayed {
    /// The node it was passed to (named) answered: its answer, as it came.
    Answered(String, forward::Answer),
    /// This node answers it: it writes the workspace, or it is a new workspace's.
    Here,
    /// This node answers a read from its own copy (no writer can be reached).
    Local,
    /// Nobody could answer it in time.
    Refused(Refusal),
}

/// Why a relayed request has no answer.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error("the workspace has no writer now (one is being replaced); retry")]
    NoWriter,
    #[error("the nodes that hold this workspace did not answer; retry")]
    NoHolder,
    /// It went out and no answer came back: the peer may have acted on it.
    #[error("{0}")]
    Unknown(Failure),
}

impl Membership {
    /// Where a request for `workspace` goes now (see [`router`]).
    pub fn route(&self, workspace: Uuid, read: bool, copy_here: bool, down: &[String]) -> Route {
        // A node handing its leases over takes no more requests as the writer: they
        // wait for the next one (its own commits in flight finish meanwhile).
        let writes_here = self.writes(workspace);
        let directory = self.directory.load();
        router::route(
            &directory,
            &self.me.name,
            writes_here,
            Ask {
                workspace,
                read,
                copy_here,
                down,
            },
        )
    }

    /// Whether this node answers `workspace`'s requests as its writer now (alone for
    /// good, it writes every workspace it holds): it holds the lease and is not handing
    /// it over.
    pub fn writes(&self, workspace: Uuid) -> bool {
        !self.store.shared()
            || (self.fences.epoch(workspace).is_some()
                && !self.handing_over()
                && !self.leaving.lock().contains(&workspace))
    }

    /// The workspaces whose writer leases this node holds, each with its epoch; `None`
    /// alone on its store, where it writes every workspace it holds, for good, and
    /// takes no lease.
    pub fn leases(&self) -> Option<Vec<(Uuid, u64)>> {
        self.store.shared().then(|| self.fences.epochs())
    }

    /// A count that moves on with every change to [`Membership::leases`]
    /// ([`crate::store::fence::Fences::changes`]).
    pub fn leases_moved(&self) -> u64 {
        self.fences.changes()
    }

    /// This node's credentials on a request to another node.
    fn node_headers(&self) -> [(String, Vec<u8>); 2] {
        [
            (NODE.into(), self.me.name.clone().into_bytes()),
            (NODE_SECRET.into(), self.secret.clone().into_bytes()),
        ]
    }

    /// Relays a request (see the module's docs): `copy_here` says whether this node has
    /// a copy of the workspace loaded now, `outgoing` makes the request to send (this
    /// node's credentials are added).
    pub async fn relay(
        &self,
        r: &Relay,
        copy_here: impl Fn() -> bool,
        outgoing: impl Fn() -> Outgoing,
    ) -> Relayed {
        let deadline = Instant::now() + WAIT_FOR_WRITER;
        let mut down: Vec<String> = Vec::new();
        let mut looked_again = false;
        loop {
            let route = self.route(r.workspace, r.read, copy_here(), &down);
            let peer = match route {
                Route::Here => return Relayed::Here,
                Route::To(peer) => peer,
                // The directory may be a moment behind (this node woke from a stop past
                // its lease, a writer was just replaced): once more with a fresh read.
                Route::Local | Route::Wait if !looked_again => {
                    looked_again = true;
                    self.read_directory_if_older(LOOK_AGAIN).await;
                    continue;
                }
                Route::Local => return Relayed::Local,
                Route::Wait => {
                    let d = self.directory.load();
                    let anywhere = d.writer(r.workspace).is_some() || d.held_anywhere(r.workspace);
                    if !anywhere && down.is_empty() && (r.admin || r.read) {
                        // Nobody holds it: a new workspace (admin), or a read this node
                        // answers as a single server would.
                        return Relayed::Here;
                    }
                    if r.read {
                        return Relayed::Refused(Refusal::NoHolder);
                    }
                    if Instant::now() >= deadline {
                        return Relayed::Refused(Refusal::NoWriter);
                    }
                    tokio::time::sleep(LOOK_AGAIN).await;
                    self.read_directory_if_older(LOOK_AGAIN).await;
                    continue;
                }
            };
            let mut request = outgoing();
            request.headers.extend(self.node_headers());
            match forward::send(self.identity.as_ref(), &peer, request, r.answer_within).await {
                Ok(a) if a.status == 421 && a.headers.iter().any(|(n, _)| n == NOT_HERE) => {
                    // It no longer writes (or holds) the workspace: look again.
                    self.read_directory_if_older(Duration::ZERO).await;
                    if Instant::now() >= deadline {
                        return Relayed::Refused(Refusal::NoWriter);
                    }
                }
                Ok(answer) => return Relayed::Answered(peer.name.clone(), answer),
                Err(failure @ Failure::Unknown(..)) if !r.read => {
                    return Relayed::Refused(Refusal::Unknown(failure));
                }
                Err(failure) => {
                    tracing::warn!(workspace = %r.workspace, error = %failure, "passing a request to another node failed");
                    down.push(peer.name.clone());
                    if Instant::now() >= deadline {
                        return Relayed::Refused(Refusal::NoWriter);
                    }
                    self.read_directory_if_older(LOOK_AGAIN).await;
                }
            }
        }
    }

    /// Passes an admin request for `workspace` to another node and returns its answer:
    /// to its writer ([`PassTo::Writer`]: [`PASSED_KEYS`], [`PASSED_IMPORT`]), waiting up
    /// to [`WAIT_FOR_WRITER`] for one while it is replaced; or, for a read this node
    /// cannot answer ([`PassTo::Holder`]: [`CONSOLE_COPY`]), to its writer, else any node
    /// that holds it. `None` when it is this node's to do: alone, this node writes the
    /// workspace, or no node holds or writes it (a new workspace).
    pub async fn pass(
        &self,
        to: PassTo,
        workspace: Uuid,
        target: &str,
        body: bytes::Bytes,
        request_id: &str,
    ) -> Option<Result<forward::Answer, Refusal>> {
        let read = to == PassTo::Holder;
        if !self.has_peers() {
            return None;
        }
        let relay = Relay {
            workspace,
            read,
            admin: true,
            answer_within: ANSWER_WITHIN,
        };
        let outgoing = || Outgoing {
            method: "POST".into(),
            target: target.into(),
            headers: vec![
                (
                    super::forward::REQUEST_ID.into(),
                    request_id.as_bytes().to_vec(),
                ),
                ("content-type".into(), b"application/json".to_vec()),
            ],
            body: body.clone(),
        };
        match self.relay(&relay, || false, outgoing).await {
            Relayed::Answered(_, answer) => Some(Ok(answer)),
            Relayed::Here | Relayed::Local => None,
            Relayed::Refused(refusal) => Some(Err(refusal)),
        }
    }

    /// Tells every other live node to read the API keys afresh (a key was made or
    /// revoked here), and waits for their answers: so a revoked key is refused on every
    /// node from the next request on. The nodes that did not confirm it (dead, or
    /// unreachable), by name.
    pub async fn tell_keys_changed(&self) -> Vec<String> {
        if !self.store.shared() {
            return Vec::new();
        }
        let _ = self.read_directory().await;
        let directory = self.directory();
        let told = directory
            .live()
            .filter(|name| *name != self.me.name)
            .filter_map(|name| directory.node(name))
            .map(|node| {
                let request = Outgoing {
                    method: "POST".into(),
                    target: KEYS_CHANGED.into(),
                    headers: self.node_headers().into(),
                    body: Default::default(),
                };
                let peer = node.peer.clone();
                async move {
                    match forward::send(self.identity.as_ref(), &peer, request, ANSWER_WITHIN).await {
                        Ok(a) if a.status == 204 => None,
                        Ok(a) => {
                            tracing::warn!(node = %peer.name, status = a.status, "a node did not take the changed keys");
                            Some(peer.name.clone())
                        }
                        Err(e) => {
                            tracing::warn!(node = %peer.name, error = %e, "telling a node the keys changed");
                            Some(peer.name.clone())
                        }
                    }
                }
            });
        futures_util::future::join_all(told)
            .await
            .into_iter()
            .flatten()
            .collect()
    }

    /// The webhook data key whose fingerprint is `fingerprint`, from the first live
    /// node that holds it (its bytes, over the authenticated node-to-node channel).
    pub async fn ask_for_webhook_key(&self, fingerprint: &str) -> Option<Vec<u8>> {
        if !self.store.shared() {
            return None;
        }
        let _ = self.read_directory().await;
        let directory = self.directory();
        let peers: Vec<_> = directory
            .live()
            .filter(|name| *name != self.me.name)
            .filter_map(|name| directory.node(name))
            .map(|node| node.peer.clone())
            .collect();
        for peer in peers {
            let request = Outgoing {
                method: "POST".into(),
                target: WEBHOOKS_KEY.into(),
                headers: self.node_headers().into(),
                body: bytes::Bytes::copy_from_slice(fingerprint.as_bytes()),
            };
            match forward::send(self.identity.as_ref(), &peer, request, ANSWER_WITHIN).await {
                Ok(a) if a.status == 200 => return Some(a.body.to_vec()),
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(node = %peer.name, error = %e, "asking a node for the webhook key")
                }
            }
        }
        None
    }

    /// Tells the nodes `names` to run a round now (leases were given up for them to
    /// take). Best effort: a node not told takes them at its next round.
    pub(super) fn tell_to_take(self: &Arc<Self>, names: Vec<String>) {
        let directory = self.directory();
        for name in names.iter().filter(|n| **n != self.me.name) {
            let Some(node) = directory.node(name) else {
                continue;
            };
            let request = Outgoing {
                method: "POST".into(),
                target: TAKE_NOW.into(),
                headers: self.node_headers().into(),
                body: Default::default(),
            };
            let peer = node.peer.clone();
            let this = self.clone();
            actix_web::rt::spawn(async move {
                if let Err(e) =
                    forward::send(this.identity.as_ref(), &peer, request, ANSWER_WITHIN).await
                {
                    tracing::debug!(node = %peer.name, error = %e, "telling a node to take leases");
                }
            });
        }
    }

    /// Runs a round now (another node gave leases up for this one to take).
    pub fn take_now(&self) {
        self.wake.notify_one();
    }
}
