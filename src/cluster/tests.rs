//! Tests of a node's membership: identity, joining, renewal, the cluster view, and stopping.

use super::*;

fn api() -> SocketAddr {
    "127.0.0.1:8443".parse().unwrap()
}

#[test]
fn an_identity_defaults_to_the_host_and_the_bound_address() {
    let me = Identity::new(None, None, 2, api()).unwrap();
    assert!(me.name.ends_with(":8443"), "{}", me.name);
    assert_eq!(me.advertise_url, "https://127.0.0.1:8443");
    let named = Identity::new(
        Some("a".into()),
        Some("https://a.internal:9443/".into()),
        3,
        api(),
    )
    .unwrap();
    assert_eq!(named.advertise_url, "https://a.internal:9443");
    assert_eq!((named.name.as_str(), named.replicas), ("a", 3));
}

#[test]
fn bad_identities_are_refused() {
    for (name, url, replicas) in [
        (Some(""), None, 2),
        (Some("a\nb"), None, 2),
        (None, Some("ftp://x"), 2),
        (None, Some("https://"), 2),
        (None, Some("https://x/?q"), 2),
        (None, None, 0),
    ] {
        assert!(
            Identity::new(
                name.map(str::to_string),
                url.map(str::to_string),
                replicas,
                api()
            )
            .is_err(),
            "{name:?} {url:?} {replicas}"
        );
    }
}

/// Each node publishes its public key when it joins and learns those published
/// before; a key published since is learned when a token naming it is presented
/// (at most every `SIGNERS_READ_EVERY`), or with the next renewal round.
#[tokio::test]
async fn a_node_learns_the_public_keys_of_the_others() {
    let Ok(base) = std::env::var("RECRUITD_TEST_DATABASE_URL") else {
        println!("RECRUITD_TEST_DATABASE_URL is not set: PostgreSQL variant skipped");
        return;
    };
    let url = crate::store::testing::fresh_postgres_url(&base)
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let join = |name: &str, secret: u8| {
        let me = Identity::new(Some(name.into()), None, 2, api()).unwrap();
        let fences = Membership::fences_for(&me);
        let signer = Arc::new(actors::signing::Signer::from_secret(&[secret; 32]));
        let (url, dir) = (url.clone(), dir.path().to_path_buf());
        async move {
            let store = crate::store::open_fenced(Some(&url), &dir, fences.clone())
                .await
                .unwrap();
            let cluster = Arc::new(
                crate::store::cluster::PgCluster::connect(&url)
                    .await
                    .unwrap(),
            );
            let m = Membership::join(cluster, me, fences, String::new(), signer.clone(), None)
                .await
                .unwrap();
            (m, signer, store)
        }
    };
    let (a, a_signer, store) = join("a", 1).await;
    let (b, b_signer, _) = join("b", 2).await;
    // b joined after a: it knows a's key; a does not know b's yet.
    assert!(b_signer.knows(&a_signer.key_id()));
    assert!(!a_signer.knows(&b_signer.key_id()));
    let seal = b_signer.seal(b"t", b"p");
    assert!(!a_signer.check(b"t", b"p", &seal));
    // Presented b's token, a reads the published keys.
    a.learn_signer(&b_signer.key_id()).await;
    assert!(a_signer.check(b"t", b"p", &seal));
    // An id nobody published: one read, then none until the pause has passed.
    let unknown = [9u8; actors::signing::KEY_ID_LEN];
    a.learn_signer(&unknown).await;
    let read_at = *a.signers_read.lock().await;
    assert!(read_at.is_some(), "the unknown id was looked for");
    a.learn_signer(&unknown).await;
    assert_eq!(*a.signers_read.lock().await, read_at);
    a.leave().await;
    b.leave().await;
    store.close().await;
}

/// A cluster whose store is a node alone's, shared as if others might join, that
/// counts its directory reads.
#[derive(Default)]
struct CountedReads {
    alone: solo::Solo,
    directory_reads: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl ClusterStore for CountedReads {
    fn shared(&self) -> bool {
        true
    }
    async fn take_name(&self, me: &Me, l: u64) -> Result<bool, port::PortError> {
        self.alone.take_name(me, l).await
    }
    async fn renew(&self, me: &Me, l: u64) -> Result<bool, port::PortError> {
        self.alone.renew(me, l).await
    }
    async fn holder_of_name(&self, n: &str) -> Result<Option<String>, port::PortError> {
        self.alone.holder_of_name(n).await
    }
    async fn leave(&self, me: &Me) -> Result<(), port::PortError> {
        self.alone.leave(me).await
    }
    async fn live_nodes(&self) -> Result<Vec<port::NodeRow>, port::PortError> {
        self.directory_reads.fetch_add(1, Ordering::Relaxed);
        self.alone.live_nodes().await
    }
    async fn workspace_ids(&self) -> Result<Vec<Uuid>, port::PortError> {
        self.alone.workspace_ids().await
    }
    async fn existing(&self, ids: &[Uuid]) -> Result<Vec<Uuid>, port::PortError> {
        self.alone.existing(ids).await
    }
    async fn positions_of(&self, ids: &[Uuid]) -> Result<Vec<(Uuid, u64)>, port::PortError> {
        self.alone.positions_of(ids).await
    }
    async fn positions_since(&self, h: i64) -> Result<port::Since<(Uuid, u64)>, port::PortError> {
        self.alone.positions_since(h).await
    }
    async fn leases_since(&self, h: i64) -> Result<port::Since<port::LeaseRow>, port::PortError> {
        self.alone.leases_since(h).await
    }
    async fn take(
        &self,
        me: &Me,
        w: &[Uuid],
    ) -> Result<(Vec<(Uuid, u64)>, std::time::Instant), port::PortError> {
        self.alone.take(me, w).await
    }
    async fn release(&self, me: &Me, w: &[Uuid]) -> Result<Vec<Uuid>, port::PortError> {
        self.alone.release(me, w).await
    }
    async fn release_all(&self, me: &Me) -> Result<Vec<Uuid>, port::PortError> {
        self.alone.release_all(me).await
    }
    async fn report(&self, me: &Me, c: &[(Uuid, Option<u64>)]) -> Result<(), port::PortError> {
        self.alone.report(me, c).await
    }
    async fn holdings_since(
        &self,
        h: i64,
    ) -> Result<port::Since<port::HoldingRow>, port::PortError> {
        self.alone.holdings_since(h).await
    }
    async fn drop_holdings(&self, me: &Me) -> Result<(), port::PortError> {
        self.alone.drop_holdings(me).await
    }
    async fn lags(&self) -> Result<Vec<(Uuid, String, u64)>, port::PortError> {
        self.alone.lags().await
    }
    async fn all_nodes(&self) -> Result<Vec<port::NodeStatus>, port::PortError> {
        self.alone.all_nodes().await
    }
    async fn publish_key(&self, me: &Me, id: &str, k: &[u8]) -> Result<(), port::PortError> {
        self.alone.publish_key(me, id, k).await
    }
    async fn public_keys(&self) -> Result<Vec<Vec<u8>>, port::PortError> {
        self.alone.public_keys().await
    }
    async fn write_windows(
        &self,
        me: &Me,
        w: &[budgets::KeyWindow],
        o: i64,
    ) -> Result<(), port::PortError> {
        self.alone.write_windows(me, w, o).await
    }
    async fn windows_of(
        &self,
        w: &[Uuid],
        o: i64,
    ) -> Result<Vec<budgets::KeyWindow>, port::PortError> {
        self.alone.windows_of(w, o).await
    }
}

/// Holds nothing; once given its membership, records at each drain whether the
/// workspace's commits would still pass the lease check and whether requests are
/// still answered here.
#[derive(Default)]
struct NothingHeld {
    membership: std::sync::OnceLock<Arc<Membership>>,
    drains: parking_lot::Mutex<Vec<(bool, bool)>>,
}

#[async_trait::async_trait]
impl leases::Held for NothingHeld {
    fn held(&self) -> Vec<Holding> {
        Vec::new()
    }
    fn generation(&self) -> u64 {
        0
    }
    fn position(&self, _: Uuid) -> Option<u64> {
        None
    }
    fn known(&self) -> Vec<Uuid> {
        Vec::new()
    }
    async fn follow(&self, _: Uuid) -> anyhow::Result<()> {
        Ok(())
    }
    async fn drain(&self, workspace: Uuid) {
        if let Some(m) = self.membership.get() {
            self.drains
                .lock()
                .push((m.fences.epoch(workspace).is_some(), m.writes(workspace)));
        }
    }
    async fn load(&self, _: Uuid) -> anyhow::Result<()> {
        Ok(())
    }
    fn unload(&self, _: &[Uuid]) -> Vec<Uuid> {
        Vec::new()
    }
}

/// Anyone may send a node's headers: a name the directory does not know is no
/// node's, and however many arrive, the rounds read the directory no more often
/// than once a `RENEW_EVERY` besides their timer.
#[actix_web::test]
async fn unknown_node_names_cost_no_store_read() {
    let store = Arc::new(CountedReads::default());
    let me = Identity::new(Some("a".into()), None, 2, api()).unwrap();
    let fences = Membership::fences_for(&me);
    let signer = Arc::new(actors::signing::Signer::from_secret(&[4; 32]));
    // A certificate's digest, as a node's row carries one.
    let cert = "ab".repeat(32);
    let m = Membership::join(store.clone(), me, fences, cert, signer, None)
        .await
        .unwrap();
    let rounds = actix_web::rt::spawn(m.clone().keep_alive(Arc::new(NothingHeld::default())));
    let (_, secret) = m.credentials();
    let secret = secret.to_string();
    assert!(m.is_node("a", &secret), "the node itself, with its secret");
    assert!(!m.is_node("a", "not its secret"));
    let before = store.directory_reads.load(Ordering::Relaxed);
    let window = Duration::from_millis(2500);
    let started = std::time::Instant::now();
    let mut sent = 0u64;
    while started.elapsed() < window {
        for i in 0..100 {
            assert!(!m.is_node(&format!("stranger-{sent}-{i}"), &secret));
        }
        sent += 100;
        tokio::task::yield_now().await;
    }
    let reads = store.directory_reads.load(Ordering::Relaxed) - before;
    rounds.abort();
    // The timer's rounds (2 or 3 in the window), and at most as many woken early.
    assert!(sent > 1000, "{sent} names sent");
    assert!(
        reads <= 6,
        "{reads} directory reads for {sent} unknown names"
    );
}

/// A hand-over stops answering as the writer first, and gives the lease up only
/// once the writes already passed to the actor are done: those commit under the
/// lease (a commit checks it), none is refused as fenced.
#[actix_web::test]
async fn a_hand_over_drains_the_actor_under_the_lease() {
    let store = Arc::new(CountedReads::default());
    let me = Identity::new(Some("a".into()), None, 2, api()).unwrap();
    let fences = Membership::fences_for(&me);
    let signer = Arc::new(actors::signing::Signer::from_secret(&[5; 32]));
    let m = Membership::join(store, me, fences, "ab".repeat(32), signer, None)
        .await
        .unwrap();
    let ws = Uuid::new_v4();
    m.claim(ws, async { Ok(()) }).await.unwrap();
    assert!(m.writes(ws));
    let held = Arc::new(NothingHeld::default());
    let _ = held.membership.set(m.clone());
    let as_held: Arc<dyn leases::Held> = held.clone();
    m.hand_over_to(&as_held, vec![(ws, Some("b".into()))]).await;
    assert_eq!(
        *held.drains.lock(),
        [(true, false)],
        "while draining: the lease held, requests no longer answered here"
    );
    assert!(m.fences.epoch(ws).is_none(), "given up once drained");
    assert!(!m.writes(ws));
}

#[tokio::test]
async fn a_node_alone_holds_and_writes_everything_it_holds() {
    let me = Identity::new(Some("solo".into()), None, 2, api()).unwrap();
    let signer = Arc::new(actors::signing::Signer::alone(&[3; 32]));
    let m = Membership::alone(me, signer).await;
    assert!(m.is_settled() && !m.has_peers() && !m.shared());
    let ws = Uuid::new_v4();
    // An import sent to it makes it the writer at once.
    m.claim(ws, async { Ok(()) }).await.unwrap();
    assert!(m.writes(ws));
    let view = m.view(&[(ws, 7)]).await.unwrap();
    assert_eq!(view.node, "solo");
    assert_eq!(view.nodes.len(), 1);
    assert!(view.nodes[0].alive);
    assert_eq!(
        (
            view.nodes[0].workspaces_held,
            view.nodes[0].workspaces_owned
        ),
        (1, 1)
    );
    assert_eq!(view.workspaces[0].owner.as_deref(), Some("solo"));
    assert_eq!(view.workspaces[0].lag_ms["solo"], 0);
}

/// A node found dead by the view's read of the nodes holds nothing in that view, even
/// when the holdings, read just before, still named it.
#[test]
fn a_view_shows_no_dead_node_holding_a_copy() {
    let status = |name: &str, alive| port::NodeStatus {
        row: port::NodeRow {
            name: name.into(),
            advertise_url: format!("https://{name}"),
            incarnation: "i".into(),
            cert_sha256: String::new(),
            secret_sha256: String::new(),
        },
        alive,
        version: None,
        renewed_ms_ago: None,
    };
    let held = |id: u128, holders: &[&str]| HeldWorkspace {
        id: Uuid::from_u128(id),
        owner: Some(holders[0].to_string()),
        holders: holders.iter().map(|h| h.to_string()).collect(),
        lag_ms: holders.iter().map(|h| (h.to_string(), 0)).collect(),
        positions: holders.iter().map(|h| (h.to_string(), 7)).collect(),
    };
    let mut workspaces = vec![held(1, &["a", "b"]), held(2, &["b"]), held(3, &["a"])];
    let mut alive = workspaces.clone();
    held_by_the_living(&mut alive, &[status("a", true), status("b", true)]);
    assert_eq!(alive, workspaces, "nothing dropped while every node lives");
    held_by_the_living(&mut workspaces, &[status("a", true), status("b", false)]);
    assert_eq!(workspaces, vec![held(1, &["a"]), held(3, &["a"])]);
}
