//! The actor's write path against in-memory stores: group commit, failed commits,
//! idempotency keys under concurrent retries.

use super::{Import, WorkspaceActor, WorkspaceHandle, Write};
use crate::env::ActorEnv;
use crate::keys::KeyRing;
use crate::model::ParentType;
use crate::model::{ApiKey, Workspace};
use crate::snapshot::parse_slice;
use crate::state::WorkspaceState;
use crate::store::StoreResult;
use crate::store::{
    ChangeSet, CommitPosition, MemoryBlobs, MemoryStore, RecordSink, Store, StoreError,
};
use crate::writes::{NewNote, WriteError, WriteOp, Written};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

const FABRIKAM: &str = "71ff7925-38fa-57bd-b38e-c2e5e183f050";

/// A memory store whose commits take a while and are counted, and which can lose the
/// answer to a commit that took effect, or stop answering.
struct SlowStore {
    inner: Arc<MemoryStore>,
    commits: AtomicUsize,
    delay: Duration,
    /// 0: normal; 1: commit, then report the store unavailable; 2: never answer.
    mode: std::sync::atomic::AtomicU8,
    /// Extra milliseconds every commit takes while set (a store that stalls).
    stall_ms: std::sync::atomic::AtomicU64,
    /// Milliseconds an import's commit keeps its calling thread busy (as encoding a large
    /// import does), and the CPU priority (nice value) that thread had.
    import_busy_ms: std::sync::atomic::AtomicU64,
    import_nice: std::sync::atomic::AtomicI32,
    /// While set, storing touched rows fails (a store that fails between a commit and
    /// its flush).
    flush_fails: std::sync::atomic::AtomicBool,
}

#[async_trait::async_trait]
impl Store for SlowStore {
    async fn workspaces(&self) -> StoreResult<Vec<Workspace>> {
        self.inner.workspaces().await
    }
    async fn load_records(&self, workspace: Uuid, sink: RecordSink<'_>) -> StoreResult<()> {
        self.inner.load_records(workspace, sink).await
    }
    async fn commit(&self, workspace: Uuid, changes: &ChangeSet) -> StoreResult<()> {
        tokio::time::sleep(self.delay).await;
        let stall = self.stall_ms.load(Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(stall)).await;
        self.commits.fetch_add(1, Ordering::SeqCst);
        match self.mode.load(Ordering::SeqCst) {
            0 => self.inner.commit(workspace, changes).await,
            1 => {
                self.inner.commit(workspace, changes).await?;
                Err(StoreError::Unavailable(
                    "connection reset after COMMIT".into(),
                ))
            }
            _ => std::future::pending().await,
        }
    }
    async fn flush_touched(
        &self,
        workspace: Uuid,
        position: u64,
        rows: &[crate::model::Record],
    ) -> StoreResult<()> {
        if self.flush_fails.load(Ordering::SeqCst) {
            return Err(StoreError::Unavailable("flush refused".into()));
        }
        self.inner.flush_touched(workspace, position, rows).await
    }
    async fn touches(
        &self,
        workspaces: &[Uuid],
    ) -> StoreResult<Vec<Option<crate::store::TouchMarker>>> {
        self.inner.touches(workspaces).await
    }
    async fn commit_import(&self, workspace: Uuid, changes: &ChangeSet) -> StoreResult<()> {
        let busy = self.import_busy_ms.load(Ordering::SeqCst);
        if busy > 0 {
            #[cfg(target_os = "linux")]
            self.import_nice.store(
                rustix::process::getpriority_process(None).unwrap_or(i32::MIN),
                Ordering::SeqCst,
            );
            std::thread::sleep(Duration::from_millis(busy));
        }
        self.commit(workspace, changes).await
    }
    async fn read_changes(
        &self,
        workspace: Uuid,
        window: crate::store::LogWindow,
    ) -> StoreResult<crate::store::LogRead> {
        self.inner.read_changes(workspace, window).await
    }
    async fn tombstones(
        &self,
        workspace: Uuid,
    ) -> StoreResult<Vec<(crate::entries::Change, crate::time::Stamp)>> {
        self.inner.tombstones(workspace).await
    }
    async fn prune_changes(
        &self,
        workspace: Uuid,
        before_ms: i64,
    ) -> StoreResult<crate::store::Pruned> {
        self.inner.prune_changes(workspace, before_ms).await
    }
    async fn read_current(
        &self,
        workspace: Uuid,
        changes: &[crate::entries::Change],
    ) -> StoreResult<crate::store::Current> {
        self.inner.read_current(workspace, changes).await
    }
    async fn committed(&self, workspace: Uuid, batch: Uuid) -> StoreResult<bool> {
        self.inner.committed(workspace, batch).await
    }
    async fn position(&self, workspace: Uuid) -> StoreResult<CommitPosition> {
        self.inner.position(workspace).await
    }
    async fn keys(&self) -> StoreResult<Vec<ApiKey>> {
        self.inner.keys().await
    }
    async fn revoke_key(&self, id: &str) -> StoreResult<Option<ApiKey>> {
        self.inner.revoke_key(id).await
    }
}

/// A workspace actor over `env`, started empty for workspace `w`.
fn start(w: &Workspace, env: &Arc<ActorEnv>) -> WorkspaceHandle {
    WorkspaceActor::spawn(
        WorkspaceState::new(w.clone()),
        env.clone(),
        &actix::Arbiter::current(),
    )
}

async fn workspace(delay: Duration) -> (Arc<SlowStore>, WorkspaceHandle, Arc<ActorEnv>) {
    let store = Arc::new(SlowStore {
        inner: MemoryStore::new(),
        commits: AtomicUsize::new(0),
        delay,
        mode: std::sync::atomic::AtomicU8::new(0),
        stall_ms: std::sync::atomic::AtomicU64::new(0),
        import_busy_ms: std::sync::atomic::AtomicU64::new(0),
        import_nice: std::sync::atomic::AtomicI32::new(0),
        flush_fails: std::sync::atomic::AtomicBool::new(false),
    });
    let env = Arc::new(ActorEnv::new(
        store.clone(),
        Arc::new(MemoryBlobs::default()),
        Arc::new(KeyRing::default()),
    ));
    let snap = parse_slice(include_bytes!(
        "../../../tests/fixtures/snapshot-small.json"
    ))
    .unwrap();
    let w = snap.workspace.clone().unwrap();
    let h = start(&w, &env);
    h.addr.send(Import(snap)).await.unwrap().unwrap();
    (store, h, env)
}

fn note(body: &str, reference: Option<&str>) -> WriteOp {
    WriteOp::CreateNote(NewNote {
        parent_type: ParentType::Company,
        parent_id: Uuid::parse_str(FABRIKAM).unwrap(),
        body_html: body.into(),
        title: None,
        label: None,
        author_email: None,
        is_private: false,
        reference: reference.map(String::from),
        reference_key: None,
    })
}

#[actix::test]
async fn writes_queued_behind_a_commit_share_the_next_one() {
    let (store, h, _) = workspace(Duration::from_millis(100)).await;
    let before = store.commits.load(Ordering::SeqCst);
    let notes_before = h.state().notes.visible_len();
    // Forty concurrent clients, each its own task (as HTTP requests are).
    let requests: Vec<_> = (0..40)
        .map(|i| actix::spawn(h.addr.send(Write(note(&format!("note {i}"), None)))))
        .collect();
    let mut ids = Vec::new();
    for r in requests {
        let done = r.await.unwrap().unwrap().unwrap();
        match done.written {
            Written::Created(_, id) => {
                assert!(
                    done.state.notes.get_visible(&id).is_some(),
                    "answered after publish"
                );
                ids.push(id);
            }
            other => panic!("{other:?}"),
        }
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 40);
    let commits = store.commits.load(Ordering::SeqCst) - before;
    // The first write commits alone; the 39 queued behind it go in one more transaction.
    assert!(commits <= 3, "40 writes took {commits} commits");
    let state = h.state();
    assert_eq!(state.notes.visible_len(), notes_before + 40);
    // Every write has its own stamp, strictly increasing in commit order.
    let mut stamps: Vec<_> = ids
        .iter()
        .map(|id| state.notes.get(id).unwrap().updated_at())
        .collect();
    stamps.sort();
    stamps.dedup();
    assert_eq!(stamps.len(), 40);
}

#[actix::test]
async fn a_failed_commit_changes_nothing() {
    let (store, h, _) = workspace(Duration::ZERO).await;
    let before = h.state();
    store.inner.fail.store(true, Ordering::SeqCst);
    let err = h.addr.send(Write(note("lost", Some("r1")))).await.unwrap();
    assert!(matches!(
        err,
        Err(WriteError::Store(StoreError::Unavailable(_)))
    ));
    let after = h.state();
    assert!(Arc::ptr_eq(&before, &after), "nothing was published");
    assert_eq!(after.note_by_reference(None, "r1"), None);
    store.inner.fail.store(false, Ordering::SeqCst);
    let done = h
        .addr
        .send(Write(note("kept", Some("r1"))))
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(done.written, Written::Created(..)));
    assert_eq!(
        h.state().notes.visible_len(),
        before.notes.visible_len() + 1
    );
}

#[actix::test]
async fn concurrent_retries_of_one_reference_make_one_note() {
    let (_store, h, _) = workspace(Duration::from_millis(20)).await;
    let before = h.state().notes.visible_len();
    let requests: Vec<_> = (0..12)
        .map(|i| {
            actix::spawn(
                h.addr
                    .send(Write(note(&format!("try {i}"), Some("call-42")))),
            )
        })
        .collect();
    let mut ids = Vec::new();
    let mut created = 0;
    for r in requests {
        match r.await.unwrap().unwrap().unwrap().written {
            Written::Created(_, id) => {
                created += 1;
                ids.push(id)
            }
            Written::Updated(_, id) => ids.push(id),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(created, 1);
    assert!(
        ids.windows(2).all(|w| w[0] == w[1]),
        "one id for every retry"
    );
    let state = h.state();
    assert_eq!(state.notes.visible_len(), before + 1);
    let n = state.notes.get(&ids[0]).unwrap();
    let last = ids.len();
    assert_eq!(last, 12);
    assert!(n.body_html().is_some_and(|b| b.starts_with("try ")));
}

fn created(w: &Written) -> Uuid {
    match w {
        Written::Created(_, id) => *id,
        other => panic!("{other:?}"),
    }
}

#[actix::test]
async fn a_commit_whose_answer_was_lost_is_settled_before_the_next() {
    let (store, h, _) = workspace(Duration::ZERO).await;
    let before = h.state().notes.visible_len();
    store.mode.store(1, Ordering::SeqCst);
    let lost = h
        .addr
        .send(Write(note("committed, answer lost", None)))
        .await
        .unwrap();
    assert!(matches!(
        lost,
        Err(WriteError::Store(StoreError::Unavailable(_)))
    ));
    assert_eq!(
        h.state().notes.visible_len(),
        before,
        "not published while in doubt"
    );
    store.mode.store(0, Ordering::SeqCst);
    let done = h
        .addr
        .send(Write(note("next", None)))
        .await
        .unwrap()
        .unwrap();
    let state = h.state();
    // The store has both, so memory has both: what clients read is what the store holds.
    assert_eq!(state.notes.visible_len(), before + 2);
    assert!(state.notes.get(&created(&done.written)).is_some());
    assert!(state
        .notes
        .iter()
        .any(|(_, n)| n.body_html() == Some("committed, answer lost")));
}

#[actix::test]
async fn an_unconfirmed_commit_is_settled_without_further_writes() {
    let (store, h, _) = workspace(Duration::ZERO).await;
    let before = h.state().notes.visible_len();
    store.mode.store(1, Ordering::SeqCst);
    let lost = h.addr.send(Write(note("made it", None))).await.unwrap();
    assert!(lost.is_err());
    store.mode.store(0, Ordering::SeqCst);
    // No other write comes: the actor asks the store by itself, shortly.
    tokio::time::sleep(super::handlers::SETTLE_RETRY + Duration::from_millis(500)).await;
    assert_eq!(h.state().notes.visible_len(), before + 1);
}

#[actix::test]
async fn a_commit_that_never_happened_is_dropped() {
    let (store, h, _) = workspace(Duration::ZERO).await;
    let before = h.state().notes.visible_len();
    store.inner.fail.store(true, Ordering::SeqCst);
    let failed = h
        .addr
        .send(Write(note("never stored", None)))
        .await
        .unwrap();
    assert!(matches!(failed, Err(WriteError::Store(_))));
    // While the store cannot answer, queued writes are refused promptly.
    let refused = h.addr.send(Write(note("refused", None))).await.unwrap();
    assert!(matches!(refused, Err(WriteError::Store(_))));
    store.inner.fail.store(false, Ordering::SeqCst);
    h.addr
        .send(Write(note("kept", None)))
        .await
        .unwrap()
        .unwrap();
    let state = h.state();
    assert_eq!(state.notes.visible_len(), before + 1);
    assert!(state
        .notes
        .iter()
        .all(|(_, n)| n.body_html() != Some("never stored")));
}

#[actix::test]
async fn a_store_that_stops_answering_gets_a_bounded_refusal() {
    let (store, h, _) = workspace(Duration::ZERO).await;
    store.mode.store(2, Ordering::SeqCst);
    let started = std::time::Instant::now();
    let hung = h.addr.send(Write(note("hangs", None))).await.unwrap();
    assert!(matches!(
        hung,
        Err(WriteError::Store(StoreError::Unavailable(_)))
    ));
    let waited = started.elapsed();
    assert!(waited >= super::handlers::WRITE_COMMIT_TIMEOUT);
    assert!(waited < super::handlers::WRITE_COMMIT_TIMEOUT + Duration::from_secs(2));
    store.mode.store(0, Ordering::SeqCst);
    h.addr
        .send(Write(note("after", None)))
        .await
        .unwrap()
        .unwrap();
    assert!(h
        .state()
        .notes
        .iter()
        .all(|(_, n)| n.body_html() != Some("hangs")));
}

/// A write queued behind an import that takes longer than the deadline is refused with
/// `Busy` once it has waited `QUEUE_TIMEOUT`, not when the import ends, and nothing of it
/// is applied, in memory or in the store.
#[actix::test]
async fn writes_behind_a_long_import_are_refused_at_their_deadline() {
    let (store, h, _) = workspace(Duration::ZERO).await;
    let notes_before = h.state().notes.visible_len();
    let stall = super::handlers::QUEUE_TIMEOUT + Duration::from_secs(2);
    store
        .stall_ms
        .store(stall.as_millis() as u64, Ordering::SeqCst);
    let snap = parse_slice(include_bytes!(
        "../../../tests/fixtures/snapshot-small.json"
    ))
    .unwrap();
    let import = actix::spawn(h.addr.send(Import(snap)));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = std::time::Instant::now();
    let res = h
        .addr
        .send(Write(note("behind the import", None)))
        .await
        .unwrap();
    let waited = started.elapsed();
    match res {
        Err(WriteError::Busy(m)) => assert!(m.contains("nothing was applied"), "{m}"),
        Err(e) => panic!("expected Busy, got {e:?}"),
        Ok(_) => panic!("expected Busy, got a committed write"),
    }
    assert!(
        waited >= super::handlers::QUEUE_TIMEOUT - Duration::from_millis(200)
            && waited < super::handlers::QUEUE_TIMEOUT + Duration::from_secs(1),
        "refused after {waited:?}"
    );
    import.await.unwrap().unwrap().unwrap();
    store.stall_ms.store(0, Ordering::SeqCst);
    assert_eq!(
        h.state().notes.visible_len(),
        notes_before,
        "nothing applied"
    );
    let mut stored = Vec::new();
    store
        .load_records(h.state().id(), &mut |r| stored.push(r))
        .await
        .unwrap();
    assert!(
        !stored
            .iter()
            .any(|r| r.to_json().contains("behind the import")),
        "nothing stored"
    );
    // The workspace goes on: the next write commits at once.
    let done = h.addr.send(Write(note("after", None))).await.unwrap();
    assert!(done.is_ok());
}

/// An import whose commit failed may have left part or all of itself in the store (a
/// store may split an import into several transactions): the workspace is reloaded from
/// the store, so memory holds exactly what the store does, and goes on taking writes.
#[actix::test]
async fn an_import_whose_commit_failed_is_reloaded_from_the_store() {
    let (store, h, _) = workspace(Duration::ZERO).await;
    let mut snap: serde_json::Value = serde_json::from_slice(include_bytes!(
        "../../../tests/fixtures/snapshot-small.json"
    ))
    .unwrap();
    snap["companies"][0]["name"] = serde_json::json!("Fabrikam after the import");
    let snap = parse_slice(&serde_json::to_vec(&snap).unwrap()).unwrap();
    // The store applies the import, then loses the answer.
    store.mode.store(1, Ordering::SeqCst);
    let res = h.addr.send(Import(snap)).await.unwrap();
    assert!(matches!(res, Err(super::ImportError::Store(_))), "{res:?}");
    store.mode.store(0, Ordering::SeqCst);
    let company = Uuid::parse_str(FABRIKAM).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let name = h
            .state()
            .companies
            .get(&company)
            .and_then(|c| c.name.clone());
        if name.as_deref() == Some("Fabrikam after the import") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not reloaded: {name:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let done = h
        .addr
        .send(Write(note("after the reload", None)))
        .await
        .unwrap();
    assert!(done.is_ok());
}

/// The example snapshot with `extra` more companies, copies of its one.
fn example_with_companies(extra: usize) -> crate::snapshot::Snapshot {
    let mut snap: serde_json::Value = serde_json::from_slice(include_bytes!(
        "../../../tests/fixtures/snapshot-small.json"
    ))
    .unwrap();
    let company = snap["companies"][0].clone();
    let companies = snap["companies"].as_array_mut().unwrap();
    for i in 0..extra {
        let mut c = company.clone();
        c["id"] = serde_json::json!(Uuid::new_v4());
        c["name"] = serde_json::json!(format!("Company {i}"));
        companies.push(c);
    }
    parse_slice(&serde_json::to_vec(&snap).unwrap()).unwrap()
}

/// An import's commit keeps its thread busy (a store orders and encodes every record):
/// that is the import's own thread, at a lower CPU priority when the import is large,
/// never the arbiter that runs every workspace's actor, so another workspace's writes
/// commit meanwhile. A small import runs at the API's priority.
#[actix::test]
async fn an_import_commit_holds_no_other_workspace() {
    let (store, a, env) = workspace(Duration::ZERO).await;
    // B: the same snapshot under another workspace id, on the same arbiter.
    let mut snap: serde_json::Value = serde_json::from_slice(include_bytes!(
        "../../../tests/fixtures/snapshot-small.json"
    ))
    .unwrap();
    snap["workspace"]["id"] = serde_json::json!(Uuid::new_v4());
    // Key ids are global: B's snapshot brings none.
    snap["api_keys"] = serde_json::json!([]);
    let snap = parse_slice(&serde_json::to_vec(&snap).unwrap()).unwrap();
    let b = start(snap.workspace.as_ref().unwrap(), &env);
    b.addr.send(Import(snap)).await.unwrap().unwrap();

    let busy = Duration::from_secs(3);
    store
        .import_busy_ms
        .store(busy.as_millis() as u64, Ordering::SeqCst);
    let snap = example_with_companies(super::handlers::SMALL_IMPORT_RECORDS);
    assert!(snap.len() > super::handlers::SMALL_IMPORT_RECORDS);
    let started = std::time::Instant::now();
    let import = actix::spawn(a.addr.send(Import(snap)));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let done = b.addr.send(Write(note("meanwhile", None))).await.unwrap();
    assert!(done.is_ok(), "{:?}", done.err());
    assert!(
        started.elapsed() < busy - Duration::from_secs(1),
        "B's write waited for A's import: {:?}",
        started.elapsed()
    );
    assert!(!import.is_finished(), "the import was still committing");
    import.await.unwrap().unwrap().unwrap();
    #[cfg(target_os = "linux")]
    assert_eq!(
        store.import_nice.load(Ordering::SeqCst),
        10,
        "the import ran at a lower priority"
    );

    store.import_busy_ms.store(1, Ordering::SeqCst);
    store.import_nice.store(i32::MIN, Ordering::SeqCst);
    let small = example_with_companies(0);
    assert!(small.len() <= super::handlers::SMALL_IMPORT_RECORDS);
    a.addr.send(Import(small)).await.unwrap().unwrap();
    #[cfg(target_os = "linux")]
    assert_eq!(
        store.import_nice.load(Ordering::SeqCst),
        0,
        "a small import ran at the API's priority"
    );
}

#[actix::test]
async fn retention_forgets_tombstones_without_undoing_a_commit() {
    use super::ForgetTombstones;
    use crate::time::Stamp;
    let (_store, h, _) = workspace(Duration::from_millis(100)).await;
    let created = |done: super::WriteDone| match done.written {
        Written::Created(_, id) => id,
        other => panic!("{other:?}"),
    };
    let send = |op| h.addr.send(Write(op));
    let gone = created(send(note("gone", None)).await.unwrap().unwrap());
    send(WriteOp::DeleteNote(gone)).await.unwrap().unwrap();
    assert_eq!(h.state().tombstones.len(), 1);
    let left_at = Stamp::from_millis(crate::store::now_ms());
    // A cutoff before the deletion keeps it.
    let early = Stamp::from_millis(left_at.millis() - 60_000);
    assert_eq!(h.addr.send(ForgetTombstones(early)).await.unwrap(), 0);
    assert_eq!(h.state().tombstones.len(), 1);
    // While a batch commits, the cutoff goes into the state it publishes: that batch's
    // own tombstone (newer than the cutoff) stays, the old one goes.
    let kept = created(send(note("kept", None)).await.unwrap().unwrap());
    let committing = actix::spawn(send(WriteOp::DeleteNote(kept)));
    tokio::time::sleep(Duration::from_millis(20)).await;
    let late = Stamp::from_millis(left_at.millis() + 1);
    assert_eq!(h.addr.send(ForgetTombstones(late)).await.unwrap(), 0);
    committing.await.unwrap().unwrap().unwrap();
    let state = h.state();
    assert_eq!(state.tombstones.len(), 1);
    let left: Vec<String> = state
        .tombstones
        .iter()
        .map(|(c, _)| c.id.to_string())
        .collect();
    assert_eq!(left, [kept.to_string()]);
    // Between batches it applies at once.
    let now = Stamp::from_millis(crate::store::now_ms() + 1);
    assert_eq!(h.addr.send(ForgetTombstones(now)).await.unwrap(), 1);
    assert!(h.state().tombstones.is_empty());
}

/// The state and the store's position are paired (for a checkpoint) only while they
/// agree: once another server has committed the workspace behind this actor's back, its
/// state is behind the store and must never be labelled with the newer position.
#[actix::test]
async fn a_state_the_store_moved_past_is_never_paired_with_its_position() {
    let (store, h, _) = workspace(Duration::ZERO).await;
    let at = h
        .addr
        .send(crate::actor::ReadPosition)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(at.position.seq, at.state.position);
    // Another server's commit, straight to the store.
    let id = Uuid::new_v4();
    let candidate = serde_json::json!({"id": id, "person_id": id, "name": "Elsewhere",
        "created_at": "2026-09-01T09:00:00.000Z", "updated_at": "2026-09-01T09:00:00.000Z"});
    let other = ChangeSet {
        upserts: vec![crate::model::Record::from_json(
            crate::model::RecordKind::Candidate,
            &candidate.to_string(),
        )
        .unwrap()],
        ..Default::default()
    };
    store.inner.commit(h.state().id(), &other).await.unwrap();
    match h.addr.send(crate::actor::ReadPosition).await.unwrap() {
        Err(StoreError::Other(m)) => assert!(m.contains("another server"), "{m}"),
        Ok(p) => panic!("paired state {} with {}", p.state.position, p.position),
        Err(e) => panic!("{e}"),
    }
}

/// Two actors of one workspace on one store, as two servers are: one writes, the other
/// follows from the change log and ends as a load from the store would.
#[actix::test]
async fn a_follower_applies_the_writers_commits_as_a_load_would() {
    use super::{Follow, Followed};
    use crate::writes::{Change, CompanyPatch, NotePatch};
    let (store, writer, env) = workspace(Duration::ZERO).await;
    let w = (*writer.state().workspace).clone();
    let follower = WorkspaceActor::spawn(
        crate::loader::read::read_state(&*store, w.clone())
            .await
            .unwrap(),
        env.clone(),
        &actix::Arbiter::current(),
    );
    let at = writer.state().position;
    assert!(at > 0);
    // Nothing committed since it loaded.
    let f = follower.addr.send(Follow).await.unwrap().unwrap();
    assert_eq!(
        f,
        Followed::At {
            position: at,
            committed_at_ms: vec![]
        }
    );

    let write = |op| writer.addr.send(Write(op));
    let mut notes = Vec::new();
    for n in 0..3 {
        match write(note(&format!("note {n}"), Some(&format!("r{n}"))))
            .await
            .unwrap()
            .unwrap()
            .written
        {
            Written::Created(_, id) => notes.push(id),
            other => panic!("{other:?}"),
        }
    }
    let patch = NotePatch {
        body_html: Some("edited".into()),
        title: None,
        label: None,
        is_private: None,
    };
    write(WriteOp::UpdateNote(notes[1], patch))
        .await
        .unwrap()
        .unwrap();
    write(WriteOp::DeleteNote(notes[2])).await.unwrap().unwrap();
    // A company renamed: its contacts and jobs change with it (derived entries).
    let rename = CompanyPatch {
        name: Some(Change::Set("Fabrikam Ltd".into())),
        ..Default::default()
    };
    write(WriteOp::PatchCompany(
        Uuid::parse_str(FABRIKAM).unwrap(),
        rename,
    ))
    .await
    .unwrap()
    .unwrap();

    let f = follower.addr.send(Follow).await.unwrap().unwrap();
    let position = writer.state().position;
    assert_eq!(position, at + 6);
    match f {
        Followed::At {
            position: p,
            committed_at_ms,
        } => {
            assert_eq!(p, position);
            assert_eq!(committed_at_ms.len(), 6, "one per commit");
        }
        other => panic!("{other:?}"),
    }
    let followed = follower.state();
    assert_eq!(followed.position, position);
    let loaded = crate::loader::read::read_state(&*store, w.clone())
        .await
        .unwrap();
    assert_eq!(followed.describe(), loaded.describe());
    assert_eq!(followed.describe(), writer.state().describe());
    assert!(followed.notes.get_visible(&notes[2]).is_none());
    assert_eq!(followed.note_by_reference(None, "r0"), Some(notes[0]));
    assert_eq!(followed.tombstones.len(), writer.state().tombstones.len());
    assert!(!followed.tombstones.is_empty(), "the deleted note left one");

    // Caught up: nothing more to do; a follower at position 0 cannot follow the log.
    let f = follower.addr.send(Follow).await.unwrap().unwrap();
    assert_eq!(
        f,
        Followed::At {
            position,
            committed_at_ms: vec![]
        }
    );
    // A copy at position 0 cannot follow the log: it is loaded afresh, by its actor.
    let fresh = start(&w, &env);
    assert_eq!(
        fresh.addr.send(Follow).await.unwrap().unwrap(),
        Followed::Reloaded { position }
    );
    assert_eq!(fresh.state().position, position);
    assert_eq!(fresh.state().describe(), loaded.describe());

    // The writer's last commit touched contacts whose rows it could not store yet: the
    // follower reads them back as they were, and the marker gives them their stamps.
    store.flush_fails.store(true, Ordering::SeqCst);
    write(rename_fabrikam("Fabrikam Group"))
        .await
        .unwrap()
        .unwrap();
    assert!(store.inner.touches(&[w.id]).await.unwrap()[0].is_some());
    follower.addr.send(Follow).await.unwrap().unwrap();
    assert_eq!(follower.state().describe(), writer.state().describe());
    store.flush_fails.store(false, Ordering::SeqCst);
}

/// A workspace's first import, its commits stalled: no other reader finds the workspace
/// before its last commit (its row goes last), and a catch-up asked of the actor
/// meanwhile waits for the import and leaves its state whole, never a copy read half-way
/// through it.
#[actix::test]
async fn a_first_import_is_found_whole_or_not_at_all() {
    use super::{Follow, Followed};
    let store = Arc::new(SlowStore {
        inner: MemoryStore::new(),
        commits: AtomicUsize::new(0),
        delay: Duration::ZERO,
        mode: std::sync::atomic::AtomicU8::new(0),
        stall_ms: std::sync::atomic::AtomicU64::new(150),
        import_busy_ms: std::sync::atomic::AtomicU64::new(0),
        import_nice: std::sync::atomic::AtomicI32::new(0),
        flush_fails: std::sync::atomic::AtomicBool::new(false),
    });
    let env = Arc::new(ActorEnv::new(
        store.clone(),
        Arc::new(MemoryBlobs::default()),
        Arc::new(KeyRing::default()),
    ));
    let snap = parse_slice(include_bytes!(
        "../../../tests/fixtures/snapshot-small.json"
    ))
    .unwrap();
    let w = snap.workspace.clone().unwrap();
    let h = start(&w, &env);
    let import = actix::spawn(h.addr.send(Import(snap)));
    // Its first parts are in the store, its last is not.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while store.inner.position(w.id).await.unwrap().seq == 0 {
        assert!(std::time::Instant::now() < deadline, "the import commits");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(
        store.workspaces().await.unwrap().is_empty(),
        "a first import half-way is no workspace of the store"
    );
    let followed = h.addr.send(Follow).await.unwrap().unwrap();
    let report = import.await.unwrap().unwrap().unwrap();
    let position = store.position(w.id).await.unwrap().seq;
    assert_eq!(
        followed,
        Followed::At {
            position,
            committed_at_ms: vec![]
        },
        "caught up after the import, with nothing left to read"
    );
    assert_eq!(store.workspaces().await.unwrap().len(), 1);
    let loaded = crate::loader::read::read_state(&*store, w.clone())
        .await
        .unwrap();
    assert_eq!(h.state().stored_records(), report.records);
    assert_eq!(h.state().describe(), loaded.describe());
}

/// A company renamed: its contacts show the new name, so they are touched (a derived
/// change) at one new stamp.
fn rename_fabrikam(name: &str) -> WriteOp {
    WriteOp::PatchCompany(
        Uuid::parse_str(FABRIKAM).unwrap(),
        crate::writes::CompanyPatch {
            name: Some(crate::writes::Change::Set(name.into())),
            ..Default::default()
        },
    )
}

/// The store's records of the workspace, as a load reads them.
async fn reloaded(store: &SlowStore, h: &WorkspaceHandle) -> WorkspaceState {
    crate::loader::read::read_state(store, (*h.state().workspace).clone())
        .await
        .unwrap()
}

#[actix::test]
async fn a_commit_stores_the_rows_it_touched_right_after_it() {
    let (store, h, _) = workspace(Duration::ZERO).await;
    let before = h.state();
    h.addr
        .send(Write(rename_fabrikam("Fabrikam Ltd")))
        .await
        .unwrap()
        .unwrap();
    let after = h.state();
    let moved: Vec<Uuid> = after
        .contacts
        .iter()
        .filter(|(id, c)| before.contacts.get(id).unwrap().raw.updated_at != c.raw.updated_at)
        .map(|(id, _)| *id)
        .collect();
    assert!(!moved.is_empty(), "the company's contacts were touched");
    // The next job runs once the rows are stored; then no marker stands, and the store
    // holds what memory holds.
    h.addr.send(super::Drain).await.unwrap();
    let id = after.id();
    assert_eq!(store.inner.touches(&[id]).await.unwrap(), vec![None]);
    assert_eq!(reloaded(&store, &h).await.describe(), after.describe());
}

#[actix::test]
async fn touched_rows_left_unstored_by_a_stop_are_stored_by_the_next_writer() {
    let (store, h, env) = workspace(Duration::ZERO).await;
    store.flush_fails.store(true, Ordering::SeqCst);
    // The commit holds: the write is answered, and readers see it.
    h.addr
        .send(Write(rename_fabrikam("Fabrikam Ltd")))
        .await
        .unwrap()
        .unwrap();
    let published = h.state();
    let id = published.id();
    let marker = store.inner.touches(&[id]).await.unwrap().pop().flatten();
    let marker = marker.expect("a marker stands while the rows are not stored");
    assert_eq!(marker.position, published.position);
    // While the rows cannot be stored, further writes are refused (nothing commits past
    // the marker), promptly.
    let refused = h.addr.send(Write(note("refused", None))).await.unwrap();
    assert!(
        matches!(refused, Err(WriteError::Store(StoreError::Unavailable(_)))),
        "{:?}",
        refused.err()
    );
    // A load meanwhile (a restart, another node) gives the published state: the marker
    // stamps the records whose rows still show the stamps before.
    let loaded = reloaded(&store, &h).await;
    assert_eq!(loaded.describe(), published.describe());
    // The server stops with the rows unstored; the next one to write the workspace
    // starts from a load, stores them before its first commit, and commits.
    store.flush_fails.store(false, Ordering::SeqCst);
    let next = WorkspaceActor::spawn(loaded, env.clone(), &actix::Arbiter::current());
    next.addr
        .send(Write(note("after the marker", None)))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(store.inner.touches(&[id]).await.unwrap(), vec![None]);
    assert_eq!(
        reloaded(&store, &next).await.describe(),
        next.state().describe()
    );
    assert_eq!(next.state().position, published.position + 1);
}
