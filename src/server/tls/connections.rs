//! What one client may hold of the API listener: connections, handshakes in progress,
//! and a connection whose client stops reading.
//!
//! - [`Connections`] counts open connections in all, and per peer, and handshakes in
//!   progress per peer. A connection past a connection cap is closed as soon as it is
//!   accepted, before any byte of it is read, so a flood from one address leaves the
//!   descriptors and the workers to everyone else; a handshake past its peer's places
//!   waits for one (within the handshake timeout), so a peer's stalled handshakes delay
//!   only that peer's. Peers are addresses, IPv6 ones by their /64 (one
//!   host usually holds a whole /64).
//! - [`descriptor_budget`] derives the cap on open connections from the process's
//!   descriptor limit, keeping headroom for the store, the blob files and the admin
//!   interface: past it the process would fail to open anything ("Too many open files").
//! - [`GuardedIo`] is the connection's byte stream as the HTTP layer sees it: it holds the
//!   connection's place in the counts until it is dropped, and fails a write that makes
//!   no progress for the stall timeout, so a client that stops reading its answers does
//!   not hold their memory (and the connection) for ever.

use std::{
    collections::HashMap,
    future::Future,
    io,
    net::IpAddr,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Sleep;

use crate::telemetry::metrics::{ConnectionMetrics, ConnectionRefusal};

/// Descriptors kept back from API connections when the cap is derived from the limit:
/// the larger of this and an eighth of the limit. The rest of the process (the store's
/// pool or its database files, blob files being read or written, checkpoints, the admin
/// interface's connections, the log) stays well inside it.
const RESERVED_DESCRIPTORS: u64 = 256;

/// Fewest API connections a derived cap allows, however low the descriptor limit.
const MIN_DERIVED_CONNECTIONS: u64 = 64;

/// How many connections the API listener may hold open, from the process's descriptor
/// limit (`RLIMIT_NOFILE`), after raising its soft limit to the hard one: services
/// usually start with a soft limit far below what the system allows them.
pub fn descriptor_budget() -> usize {
    let limit = raise_descriptor_limit().unwrap_or(1024);
    connections_for_descriptors(limit)
}

/// The derivation behind [`descriptor_budget`]: the limit less the reserve, never below
/// [`MIN_DERIVED_CONNECTIONS`].
pub fn connections_for_descriptors(limit: u64) -> usize {
    let reserve = RESERVED_DESCRIPTORS.max(limit / 8);
    let budget = limit.saturating_sub(reserve).max(MIN_DERIVED_CONNECTIONS);
    usize::try_from(budget).unwrap_or(usize::MAX)
}

/// Raises the soft descriptor limit to the hard one and returns the soft limit in force.
fn raise_descriptor_limit() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own and reads nothing else.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return None;
    }
    if limit.rlim_cur < limit.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: limit.rlim_max,
            rlim_max: limit.rlim_max,
        };
        // SAFETY: as above; setrlimit only reads the struct.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            limit.rlim_cur = limit.rlim_max;
        }
    }
    // RLIM_INFINITY is u64::MAX; no process gets that many descriptors anyway.
    Some(limit.rlim_cur.min(1 << 24))
}

/// The caps [`Connections`] enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionCaps {
    /// Open API connections in all (handshakes included).
    pub total: usize,
    /// Open connections of one peer. Never more than half of `total`, so that one peer
    /// cannot take the listener alone.
    pub per_peer: usize,
    /// TLS handshakes in progress of one peer (each also counts as a connection); its
    /// further ones wait for a place, at most the handshake timeout.
    pub handshakes_per_peer: usize,
}

/// `--max-connections-per-peer`'s default: room for a call centre's softphones behind
/// one NAT address, each with a connection or two.
pub const DEFAULT_CONNECTIONS_PER_PEER: usize = 1024;

/// TLS handshakes one peer may have in progress by default. A client needs one per
/// connection it opens, and opens few at once; a handshake costs the server a key
/// exchange, and one that stalls holds a connection until the handshake timeout.
pub const DEFAULT_HANDSHAKES_PER_PEER: usize = 32;

impl ConnectionCaps {
    /// Caps with `total` connections in all and the defaults per peer, each capped by
    /// half of `total`.
    pub fn with_total(total: usize) -> Self {
        ConnectionCaps {
            total,
            per_peer: DEFAULT_CONNECTIONS_PER_PEER,
            handshakes_per_peer: DEFAULT_HANDSHAKES_PER_PEER,
        }
        .clamped()
    }

    /// Per-peer caps no larger than half the total (and at least 1 each).
    pub fn clamped(self) -> Self {
        let total = self.total.max(1);
        let half = (total / 2).max(1);
        ConnectionCaps {
            total,
            per_peer: self.per_peer.clamp(1, half),
            handshakes_per_peer: self.handshakes_per_peer.clamp(1, half),
        }
    }
}

/// What one peer holds.
#[derive(Default)]
struct PeerHold {
    connections: usize,
    /// Connections past the share, admitted for their handshake to show they are
    /// another node's (see [`Connections::admit`]).
    on_probation: usize,
    /// The peer's handshake places, made at its first handshake.
    handshakes: Option<Arc<Semaphore>>,
}

/// The API listener's connection counts (shared by all its workers).
pub struct Connections {
    caps: ConnectionCaps,
    state: Mutex<Counts>,
    metrics: ConnectionMetrics,
}

#[derive(Default)]
struct Counts {
    open: usize,
    peers: HashMap<IpAddr, PeerHold>,
}

/// The peer a connection is counted against: its IPv4 address (also when it arrives
/// IPv4-mapped), or its IPv6 /64.
pub fn peer_of(addr: IpAddr) -> IpAddr {
    match addr {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let mut segments = v6.segments();
                segments[4..].fill(0);
                IpAddr::V6(segments.into())
            }
        },
    }
}

impl Connections {
    pub fn new(caps: ConnectionCaps, metrics: ConnectionMetrics) -> Arc<Self> {
        Arc::new(Connections {
            caps: caps.clamped(),
            state: Mutex::new(Counts::default()),
            metrics,
        })
    }

    pub fn caps(&self) -> ConnectionCaps {
        self.caps
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.state.lock().open
    }

    /// Counts a new connection from `addr`, or says which cap refuses it.
    ///
    /// With `nodes_may_connect` (a cluster's node, whose peers present their
    /// certificates), a connection past its address's share is not refused at once: it
    /// may be another node's, sharing an address with clients. It is admitted
    /// *on probation*, counted against the total alone, for its handshake to show whose
    /// it is ([`ConnectionPermit::on_probation`]); at most as many at once per address as
    /// that address has handshake places, so a flood past its share costs no more
    /// handshakes than its share does.
    pub fn admit(
        self: &Arc<Self>,
        addr: IpAddr,
        nodes_may_connect: bool,
    ) -> Result<ConnectionPermit, ConnectionRefusal> {
        let peer = peer_of(addr);
        let mut state = self.state.lock();
        let (over_share, probation_full) = state.peers.get(&peer).map_or((false, false), |h| {
            (
                h.connections >= self.caps.per_peer,
                h.on_probation >= self.caps.handshakes_per_peer,
            )
        });
        let refusal = if state.open >= self.caps.total {
            Some(ConnectionRefusal::Total)
        } else if over_share && (!nodes_may_connect || probation_full) {
            Some(ConnectionRefusal::Peer)
        } else {
            None
        };
        if let Some(refusal) = refusal {
            drop(state);
            self.metrics.refused(refusal);
            return Err(refusal);
        }
        state.open += 1;
        let hold = state.peers.entry(peer).or_default();
        let count = if over_share {
            hold.on_probation += 1;
            Counted::OnProbation
        } else {
            hold.connections += 1;
            Counted::Peer
        };
        drop(state);
        self.metrics.open.inc();
        Ok(ConnectionPermit {
            connections: self.clone(),
            peer,
            count,
        })
    }

    /// Waits, at most `wait`, for one of the handshake places of `permit`'s peer; the
    /// handshake holds it until the ticket is dropped. A peer's burst of new connections
    /// so queues behind its own handshakes, while its stalled handshakes hold only its own
    /// places, never another peer's.
    pub async fn begin_handshake(
        &self,
        permit: &ConnectionPermit,
        wait: Duration,
    ) -> Result<HandshakeTicket, ConnectionRefusal> {
        let places = {
            let mut state = self.state.lock();
            let hold = state.peers.entry(permit.peer).or_default();
            hold.handshakes
                .get_or_insert_with(|| Arc::new(Semaphore::new(self.caps.handshakes_per_peer)))
                .clone()
        };
        match tokio::time::timeout(wait, places.acquire_owned()).await {
            Ok(Ok(place)) => Ok(HandshakeTicket { _place: place }),
            _ => {
                self.metrics.refused(ConnectionRefusal::Handshakes);
                Err(ConnectionRefusal::Handshakes)
            }
        }
    }

    fn release(&self, peer: IpAddr, count: Counted) {
        let mut state = self.state.lock();
        state.open -= 1;
        leave_peer(&mut state, peer, count);
        drop(state);
        self.metrics.open.dec();
    }

    /// Connections of `addr`'s peer on probation now.
    #[cfg(test)]
    fn on_probation(&self, addr: IpAddr) -> usize {
        self.state
            .lock()
            .peers
            .get(&peer_of(addr))
            .map_or(0, |h| h.on_probation)
    }
}

/// What a connection is counted against besides the total.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Counted {
    /// Its address's share.
    Peer,
    /// Its address's probation places (see [`Connections::admit`]).
    OnProbation,
    /// Nothing more: another node's.
    Node,
}

/// Takes a connection off its peer's counts.
fn leave_peer(state: &mut Counts, peer: IpAddr, count: Counted) {
    if let Some(hold) = state.peers.get_mut(&peer) {
        match count {
            Counted::Peer => hold.connections -= 1,
            Counted::OnProbation => hold.on_probation -= 1,
            Counted::Node => return,
        }
        // Every handshake belongs to an open connection: none is in progress now.
        if hold.connections == 0 && hold.on_probation == 0 {
            state.peers.remove(&peer);
        }
    }
}

/// One open connection's place in the counts, given back when dropped.
pub struct ConnectionPermit {
    connections: Arc<Connections>,
    peer: IpAddr,
    count: Counted,
}

impl ConnectionPermit {
    /// The connection turned out to be another node's of the cluster (its TLS client
    /// certificate is one the cluster's directory pins): it counts against the total
    /// alone from now on, not against its address's share, which is its clients'. So
    /// node-to-node traffic, however busy, neither fills nor is refused by the per-peer
    /// cap of the address it comes from.
    pub fn count_as_node(&mut self) {
        if self.count != Counted::Node {
            leave_peer(&mut self.connections.state.lock(), self.peer, self.count);
            self.count = Counted::Node;
        }
    }

    /// Whether the connection came past its address's share, admitted only for its
    /// handshake to show it is another node's: one that does not is closed then, and
    /// counted as refused by the per-peer cap.
    pub fn on_probation(&self) -> bool {
        self.count == Counted::OnProbation
    }

    /// Closes a connection on probation that turned out to be no node's.
    pub fn refuse(self) -> ConnectionRefusal {
        self.connections.metrics.refused(ConnectionRefusal::Peer);
        ConnectionRefusal::Peer
    }
}

impl Drop for ConnectionPermit {
    fn drop(&mut self) {
        self.connections.release(self.peer, self.count);
    }
}

/// One handshake in progress, its place given back when dropped (the handshake ended
/// either way).
pub struct HandshakeTicket {
    _place: OwnedSemaphorePermit,
}

/// A connection's stream under the HTTP layer: keeps the connection counted while it
/// lives, and fails writes that stall (see the module docs).
pub struct GuardedIo<T> {
    io: T,
    stall_limit: Duration,
    /// Set while a write or flush is waiting for the client to make room.
    stalled_since: Option<Pin<Box<Sleep>>>,
    _permit: ConnectionPermit,
}

impl<T> GuardedIo<T> {
    pub fn new(io: T, permit: ConnectionPermit, stall_limit: Duration) -> Self {
        GuardedIo {
            io,
            stall_limit,
            stalled_since: None,
            _permit: permit,
        }
    }

    /// After the inner stream answered `poll`: progress clears the stall timer, a wait
    /// starts it (or keeps it running), and a wait past the limit becomes an error.
    fn watch<R>(&mut self, cx: &mut Context<'_>, poll: Poll<io::Result<R>>) -> Poll<io::Result<R>> {
        if poll.is_ready() {
            self.stalled_since = None;
            return poll;
        }
        let limit = self.stall_limit;
        let timer = self
            .stalled_since
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client read nothing of its answer for the write stall timeout",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for GuardedIo<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for GuardedIo<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.io).poll_write(cx, buf);
        this.watch(cx, poll)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.io).poll_flush(cx);
        this.watch(cx, poll)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.io).poll_shutdown(cx);
        this.watch(cx, poll)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        this.watch(cx, poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn connections(total: usize, per_peer: usize, handshakes: usize) -> Arc<Connections> {
        Connections::new(
            ConnectionCaps {
                total,
                per_peer,
                handshakes_per_peer: handshakes,
            },
            ConnectionMetrics::default(),
        )
    }

    fn ip(last: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(10, 0, 0, last))
    }

    #[test]
    fn derived_cap_keeps_a_reserve() {
        assert_eq!(connections_for_descriptors(1024), 1024 - 256);
        assert_eq!(connections_for_descriptors(20_000), 20_000 - 2_500);
        assert_eq!(connections_for_descriptors(1 << 20), (1 << 20) - (1 << 17));
        assert_eq!(connections_for_descriptors(100), 64);
        // The process's own limit was raised to its hard limit and yields a cap below it.
        let budget = descriptor_budget();
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: as in raise_descriptor_limit.
        assert_eq!(
            unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) },
            0
        );
        assert_eq!(limit.rlim_cur, limit.rlim_max);
        assert!(
            (budget as u64) < limit.rlim_cur.max(65),
            "{budget} {limit:?}"
        );
    }

    #[test]
    fn per_peer_caps_are_at_most_half_the_total() {
        let caps = ConnectionCaps::with_total(100);
        assert_eq!(caps.per_peer, 50);
        assert_eq!(caps.handshakes_per_peer, 32);
        let caps = ConnectionCaps::with_total(1);
        assert_eq!((caps.per_peer, caps.handshakes_per_peer), (1, 1));
    }

    #[test]
    fn peers_are_addresses_and_ipv6_slash_64s() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::9".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(peer_of(a), peer_of(b));
        assert_ne!(peer_of(a), peer_of(c));
        let mapped = IpAddr::V6(Ipv4Addr::new(192, 0, 2, 7).to_ipv6_mapped());
        assert_eq!(peer_of(mapped), "192.0.2.7".parse::<IpAddr>().unwrap());
        assert_eq!(
            peer_of(IpAddr::V6(Ipv6Addr::LOCALHOST)),
            "::".parse::<IpAddr>().unwrap()
        );
    }

    /// On a cluster's node, a connection past its address's share may be another
    /// node's: admitted on probation (no more at once than the address's handshake
    /// places), kept when its handshake shows a node's certificate, closed otherwise.
    #[test]
    fn past_its_share_a_node_is_admitted_and_a_client_is_not() {
        let conns = connections(10, 2, 2);
        let _share: Vec<_> = (0..2).map(|_| conns.admit(ip(1), true).unwrap()).collect();
        assert_eq!(
            conns.admit(ip(1), false).err(),
            Some(ConnectionRefusal::Peer)
        );
        let mut node = conns.admit(ip(1), true).unwrap();
        let client = conns.admit(ip(1), true).unwrap();
        assert!(node.on_probation() && client.on_probation());
        // Probation places are the address's handshake places: full now.
        assert_eq!(
            conns.admit(ip(1), true).err(),
            Some(ConnectionRefusal::Peer)
        );
        node.count_as_node();
        assert!(!node.on_probation());
        assert_eq!(conns.on_probation(ip(1)), 1);
        assert_eq!(client.refuse(), ConnectionRefusal::Peer);
        assert_eq!(conns.on_probation(ip(1)), 0);
        assert_eq!(conns.open(), 3, "the share and the node");
        // The node's connection counts against the total alone.
        let another_node = conns.admit(ip(1), true).unwrap();
        assert!(another_node.on_probation());
        drop((node, another_node));
        assert_eq!(conns.open(), 2);
    }

    #[test]
    fn a_peer_at_its_cap_is_refused_and_others_are_not() {
        let conns = connections(10, 3, 2);
        let held: Vec<_> = (0..3).map(|_| conns.admit(ip(1), false).unwrap()).collect();
        assert_eq!(
            conns.admit(ip(1), false).err(),
            Some(ConnectionRefusal::Peer)
        );
        let other = conns.admit(ip(2), false).unwrap();
        assert_eq!(conns.open(), 4);
        drop(held);
        assert_eq!(conns.open(), 1);
        let again = conns.admit(ip(1), false).unwrap();
        drop((other, again));
        assert_eq!(conns.open(), 0);
        assert!(
            conns.state.lock().peers.is_empty(),
            "no peer is remembered once gone"
        );
    }

    #[test]
    fn the_total_cap_refuses_every_peer() {
        let conns = connections(4, 2, 2);
        let _held: Vec<_> = [1, 1, 2, 2]
            .map(|p| conns.admit(ip(p), false).unwrap())
            .into();
        assert_eq!(
            conns.admit(ip(3), false).err(),
            Some(ConnectionRefusal::Total)
        );
    }

    #[tokio::test]
    async fn handshakes_wait_for_their_peers_places() {
        let conns = connections(10, 5, 2);
        let wait = Duration::from_millis(100);
        let permits: Vec<_> = (0..3).map(|_| conns.admit(ip(1), false).unwrap()).collect();
        let first = conns.begin_handshake(&permits[0], wait).await.unwrap();
        let _second = conns.begin_handshake(&permits[1], wait).await.unwrap();
        // The third waits for a place, and is refused when none comes in time.
        assert!(conns.begin_handshake(&permits[2], wait).await.is_err());
        // Another peer's places are its own.
        let other = conns.admit(ip(2), false).unwrap();
        assert!(conns.begin_handshake(&other, wait).await.is_ok());
        // A place given back while waiting is taken.
        let waiting = conns.begin_handshake(&permits[2], Duration::from_secs(10));
        let (third, ()) = tokio::join!(waiting, async {
            tokio::time::sleep(Duration::from_millis(50)).await;
            drop(first);
        });
        assert!(third.is_ok());
    }

    /// A writer that accepts `room` bytes and then waits for ever.
    struct Clogged {
        room: usize,
    }

    impl AsyncWrite for Clogged {
        fn poll_write(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            if self.room == 0 {
                return Poll::Pending;
            }
            let n = buf.len().min(self.room);
            self.room -= n;
            Poll::Ready(Ok(n))
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn a_write_that_stalls_past_the_limit_fails() {
        use tokio::io::AsyncWriteExt as _;
        let conns = connections(10, 5, 2);
        let permit = conns.admit(ip(1), false).unwrap();
        let limit = Duration::from_millis(200);
        let mut io = GuardedIo::new(Clogged { room: 10 }, permit, limit);
        let started = tokio::time::Instant::now();
        let err = io.write_all(&[0; 100]).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(started.elapsed() >= limit);
        drop(io);
        assert_eq!(conns.open(), 0, "the connection's place is given back");
    }

    /// A writer that takes one byte every `pace`: slow, but never stalled for long.
    struct Trickle {
        pace: Pin<Box<Sleep>>,
        every: Duration,
    }

    impl AsyncWrite for Trickle {
        fn poll_write(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            _: &[u8],
        ) -> Poll<io::Result<usize>> {
            std::task::ready!(self.pace.as_mut().poll(cx));
            let next = tokio::time::Instant::now() + self.every;
            self.pace.as_mut().reset(next);
            Poll::Ready(Ok(1))
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn a_slow_reader_that_keeps_reading_is_not_cut_off() {
        use tokio::io::AsyncWriteExt as _;
        let conns = connections(10, 5, 2);
        let permit = conns.admit(ip(1), false).unwrap();
        let every = Duration::from_millis(100);
        let trickle = Trickle {
            pace: Box::pin(tokio::time::sleep(every)),
            every,
        };
        let mut io = GuardedIo::new(trickle, permit, Duration::from_millis(400));
        // 12 bytes at one per 100 ms: three times the limit in all, each wait under it.
        io.write_all(&[0; 12]).await.unwrap();
    }
}
