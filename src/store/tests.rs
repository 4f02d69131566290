//! The Store port's contract: one contract, run against every backend: SQLite always, PostgreSQL when
//! `RECRUITD_TEST_DATABASE_URL` names a server to make fresh schemas in.

use super::*;
use actors::model::{Scope, Scopes};
use actors::store::{ChangeSet, LogWindow, Reclaimed};
use serde_json::json;
use std::path::PathBuf;
use std::time::Instant;

const WS: &str = "b2574901-bbf6-5245-9d3f-3dd074396143";
const WS2: &str = "0b6c2ad4-4b42-4c1e-9f6a-5a3c7e1d2f00";
const USER: &str = "c26c9743-a728-5f14-b348-d08024212444";
const T: &str = "2026-09-01T09:00:00.000Z";

/// Where one test's store lives.
struct Backend {
    name: &'static str,
    url: Option<String>,
    dir: PathBuf,
    _tmp: tempfile::TempDir,
}

impl Backend {
    fn sqlite() -> Backend {
        let tmp = tempfile::tempdir().unwrap();
        Backend {
            name: "sqlite",
            url: None,
            // A directory that does not exist yet: `open` must create it.
            dir: tmp.path().join("data"),
            _tmp: tmp,
        }
    }

    /// `None` (after saying so) when no PostgreSQL server was named.
    async fn postgres() -> Option<Backend> {
        let Ok(base) = std::env::var("RECRUITD_TEST_DATABASE_URL") else {
            println!("RECRUITD_TEST_DATABASE_URL is not set: PostgreSQL variant skipped");
            return None;
        };
        let tmp = tempfile::tempdir().unwrap();
        Some(Backend {
            name: "postgres",
            url: Some(testing::fresh_postgres_url(&base).await.unwrap()),
            dir: tmp.path().to_path_buf(),
            _tmp: tmp,
        })
    }

    async fn open(&self) -> Arc<dyn Store> {
        open(self.url.as_deref(), &self.dir).await.unwrap()
    }

    /// Runs SQL behind the store's back (to plant corrupt rows).
    async fn raw(&self, sql: &str) {
        use sqlx::Connection;
        match &self.url {
            Some(url) => {
                let mut c = sqlx::PgConnection::connect(url).await.unwrap();
                sqlx::query(sql).execute(&mut c).await.unwrap();
            }
            None => {
                let path = self.dir.join("recruit.db");
                let opts = sqlx::sqlite::SqliteConnectOptions::new().filename(path);
                let mut c = sqlx::SqliteConnection::connect_with(&opts).await.unwrap();
                sqlx::query(sql).execute(&mut c).await.unwrap();
            }
        }
    }

    /// Drops the test's PostgreSQL schema (leftovers of failed runs are swept by
    /// `fresh_postgres_url` later).
    async fn cleanup(self) {
        let Some(url) = &self.url else { return };
        let schema = testing::schema_of(url).unwrap().to_owned();
        let base = std::env::var("RECRUITD_TEST_DATABASE_URL").unwrap();
        use sqlx::Connection;
        let mut c = sqlx::PgConnection::connect(&base).await.unwrap();
        sqlx::query(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
            .execute(&mut c)
            .await
            .unwrap();
    }
}

fn ws(id: &str) -> Uuid {
    Uuid::parse_str(id).unwrap()
}

fn rec(kind: RecordKind, v: serde_json::Value) -> Record {
    Record::from_json(kind, &v.to_string()).unwrap()
}

fn candidate(id: Uuid, name: &str) -> Record {
    rec(
        RecordKind::Candidate,
        json!({"id": id, "person_id": id, "name": name, "created_at": T, "updated_at": T}),
    )
}

/// One small record of every kind.
fn one_of_each() -> Vec<Record> {
    let company = "71ff7925-38fa-57bd-b38e-c2e5e183f050";
    let cand = "a214ca67-7691-5c62-8910-a410373e10c9";
    let all = vec![
        rec(
            RecordKind::User,
            json!({"id": USER, "name": "Olivia Owner", "email": "olivia@northwind.example",
                   "role": "owner", "status": "active", "created_at": T, "updated_at": T}),
        ),
        rec(
            RecordKind::Stage,
            json!({"id": "778cbe98-6287-56d3-b104-3e1d79ecaba4", "name": "Phone Screen",
                   "stage_type": "screening"}),
        ),
        rec(
            RecordKind::Company,
            json!({"id": company, "name": "Fabrikam", "phone": "+44 20 7946 0000",
                   "is_archived": false, "owner_id": USER, "created_at": T, "updated_at": T}),
        ),
        rec(
            RecordKind::Contact,
            json!({"id": "c39ca419-8ea8-58e1-a02b-11d9dec22eb3", "name": "Hana Hiring",
                   "company_id": company, "mobile": "07700 900311",
                   "created_at": T, "updated_at": T}),
        ),
        rec(
            RecordKind::Job,
            json!({"id": "2fae0fc8-6eee-55da-8a7e-f15794b7515f", "title": "SRE",
                   "company_id": company, "salary": {"amount": 85000.5, "currency": "GBP",
                   "type": "annual"}, "created_at": T, "updated_at": T}),
        ),
        rec(
            RecordKind::Candidate,
            json!({"id": cand, "person_id": "21b6ca4e-64ee-5e3c-89d8-7a0806815565",
                   "name": "Leo \u{0}Lambert \u{1F600} \"quoted\"", "phone": "07700 900123",
                   "consent": {"status": "given", "given_at": T},
                   "created_at": T, "updated_at": "2026-09-01T09:00:00.123Z"}),
        ),
        rec(
            RecordKind::Note,
            json!({"id": "f24845c5-af3b-5f5c-8fe0-e0ed4e993ef7", "parent_type": "candidate",
                   "parent_id": cand, "body_html": "<p>Keen</p>", "type": "call",
                   "reference": "idem-1", "created_at": T, "updated_at": T}),
        ),
        rec(
            RecordKind::Task,
            json!({"id": "9b9318fa-d687-5079-970e-cb43c3d145bb", "parent_type": "candidate",
                   "parent_id": cand, "status": "open", "due_date": "2026-10-05",
                   "created_at": T, "updated_at": T}),
        ),
        rec(
            RecordKind::Attachment,
            json!({"id": "cv:91b2d50e-a6b0-5581-b491-530642265a44",
                   "parent_type": "candidate", "parent_id": cand, "kind": "cv",
                   "size": 12345, "has_content": true, "created_at": T, "updated_at": T}),
        ),
    ];
    // Every kind, in `RecordKind::ALL` order (the order `loaded` sorts into).
    assert_eq!(
        all.iter().map(Record::kind).collect::<Vec<_>>(),
        RecordKind::ALL.to_vec()
    );
    all
}

/// Keys as read back, with the time the store recorded for each (which must be
/// there) set aside, to compare with the keys written.
fn stamped(mut keys: Vec<ApiKey>) -> Vec<ApiKey> {
    for k in &mut keys {
        let at = k.created_at.take();
        assert!(at.is_some_and(|t| t <= chrono::Utc::now()), "{k:?}");
    }
    keys
}

fn key(id: &str, scopes: Scopes, rate: Option<u32>) -> ApiKey {
    ApiKey {
        id: id.to_owned(),
        workspace_id: ws(WS),
        secret_hash: actors::model::hash_secret(&format!("secret of {id}")),
        scopes,
        created_by: ws(USER),
        revoked: false,
        rate_limit_per_minute: rate,
        created_at: None,
    }
}

fn workspace(id: &str, name: &str) -> Workspace {
    Workspace {
        id: ws(id),
        name: Some(name.to_owned()),
        default_region: Some("GB".into()),
    }
}

/// Every record of a workspace, sorted by kind then id.
async fn loaded(store: &dyn Store, w: &str) -> Vec<Record> {
    let mut out = Vec::new();
    store
        .load_records(ws(w), &mut |r| out.push(r))
        .await
        .unwrap();
    out.sort_by_key(|r| (r.kind(), r.id_string()));
    out
}

fn sorted(mut v: Vec<Record>) -> Vec<Record> {
    v.sort_by_key(|r| (r.kind(), r.id_string()));
    v
}

/// The whole contract of the Store port, against one backend.
async fn contract(b: &Backend) {
    let name = b.name;
    // Migrations apply on open: an empty, working store.
    let store = b.open().await;
    assert!(store.workspaces().await.unwrap().is_empty(), "{name}");
    assert!(store.keys().await.unwrap().is_empty(), "{name}");
    assert!(loaded(&*store, WS).await.is_empty(), "{name}");
    store.commit(ws(WS), &ChangeSet::default()).await.unwrap();
    // Nothing changed the workspace yet.
    assert_eq!(store.position(ws(WS)).await.unwrap().seq, 0, "{name}");

    // Round trip of every kind, the workspace and keys.
    let records = one_of_each();
    let writer = Scopes::read_only()
        .with(Scope::NotesWrite)
        .with(Scope::TasksWrite);
    let keys = vec![
        key("key_read", Scopes::read_only(), None),
        key("key_write", writer, Some(u32::MAX)),
    ];
    let first_batch = Uuid::new_v4();
    let first = ChangeSet {
        workspace: Some(workspace(WS, "Northwind Talent")),
        upserts: records.clone(),
        deletes: vec![],
        keys: keys.clone(),
        batch: Some(first_batch),
        ..ChangeSet::default()
    };
    store.commit(ws(WS), &first).await.unwrap();
    assert!(
        store.committed(ws(WS), first_batch).await.unwrap(),
        "{name}"
    );
    assert!(
        !store.committed(ws(WS), Uuid::new_v4()).await.unwrap(),
        "{name}"
    );
    assert_eq!(loaded(&*store, WS).await, records, "{name}");
    assert_eq!(
        store.workspaces().await.unwrap(),
        vec![workspace(WS, "Northwind Talent")],
        "{name}"
    );
    let first_read = store.keys().await.unwrap();
    assert_eq!(stamped(first_read.clone()), keys, "{name}");
    // One transaction that changed it: position 1, with the tag it drew.
    let first = store.position(ws(WS)).await.unwrap();
    assert_eq!(first.seq, 1, "{name}");
    assert!(!first.tag.is_nil(), "{name}");

    // Re-open: migrations are already applied, the data is still there.
    drop(store);
    let store = b.open().await;
    assert_eq!(loaded(&*store, WS).await, records, "{name}");

    // Upserts replace (a key repeated within one commit, not side by side, keeps its
    // last version; an unchanged record stays as it is),
    // the workspace description is replaced, and other workspaces stay apart.
    let cand = records[5].id_string();
    let cand_id = ws(&cand);
    let mut expected = records.clone();
    expected[5] = candidate(cand_id, "Leo Renamed");
    let second = ChangeSet {
        workspace: Some(workspace(WS, "Northwind Renamed")),
        upserts: vec![
            candidate(cand_id, "first of two"),
            records[0].clone(),
            candidate(cand_id, "Leo Renamed"),
        ],
        ..Default::default()
    };
    store.commit(ws(WS), &second).await.unwrap();
    let other = ChangeSet {
        workspace: Some(workspace(WS2, "Other")),
        upserts: vec![candidate(Uuid::new_v4(), "Elsewhere")],
        ..Default::default()
    };
    store.commit(ws(WS2), &other).await.unwrap();
    assert_eq!(loaded(&*store, WS).await, expected, "{name}");
    assert_eq!(loaded(&*store, WS2).await, other.upserts, "{name}");
    // Each workspace counts its own transactions, and the count survives a re-open.
    let second = store.position(ws(WS)).await.unwrap();
    assert_eq!(second.seq, 2, "{name}");
    assert_ne!(
        second.tag, first.tag,
        "{name}: each commit draws its own tag"
    );
    assert_eq!(store.position(ws(WS2)).await.unwrap().seq, 1, "{name}");
    let mut names: Vec<_> = store.workspaces().await.unwrap();
    names.sort_by_key(|w| w.id);
    let mut want = vec![workspace(WS, "Northwind Renamed"), workspace(WS2, "Other")];
    want.sort_by_key(|w| w.id);
    assert_eq!(names, want, "{name}");

    // Many records (several statements' worth), then deletes: of the note, of most
    // of the bulk, of an unknown id, twice of one id, and of a record upserted in
    // the same change set (deletes win, as in MemoryStore).
    let bulk: Vec<Record> = (0..12_345)
        .map(|i| candidate(Uuid::new_v4(), &format!("bulk {i}")))
        .collect();
    let both = candidate(Uuid::new_v4(), "upserted and deleted");
    let mut upserts = bulk.clone();
    upserts.push(both.clone());
    let mut deletes: Vec<(RecordKind, String)> = bulk[..11_000]
        .iter()
        .map(|r| (r.kind(), r.id_string()))
        .collect();
    deletes.push((RecordKind::Note, records[6].id_string()));
    deletes.push((RecordKind::Note, records[6].id_string()));
    deletes.push((RecordKind::Task, "no-such-task".into()));
    deletes.push((RecordKind::Candidate, both.id_string()));
    // A note id under another kind deletes nothing.
    deletes.push((RecordKind::Task, records[7].id_string().replace('9', "8")));
    let t = Instant::now();
    store
        .commit(
            ws(WS),
            &ChangeSet {
                upserts,
                deletes,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    println!(
        "{name}: 12,346 upserts + 11,005 deletes in {:?}",
        t.elapsed()
    );
    expected.remove(6);
    expected.extend(bulk[11_000..].iter().cloned());
    let expected = sorted(expected);
    assert_eq!(loaded(&*store, WS).await, expected, "{name}");

    // Atomicity: a commit failing at its last step (a key the schema refuses) leaves
    // nothing of its workspace change, upserts and deletes; likewise one failing in
    // the middle of its records (an id the schema refuses, in a later statement).
    let keys_before = store.keys().await.unwrap();
    let fails_last = ChangeSet {
        workspace: Some(workspace(WS, "must not stick")),
        upserts: (0..6000)
            .map(|i| candidate(Uuid::new_v4(), &format!("doomed {i}")))
            .collect(),
        deletes: vec![(RecordKind::User, USER.into())],
        keys: vec![
            key("key_new", Scopes::read_only(), None),
            key("", Scopes::read_only(), None),
        ],
        batch: Some(Uuid::new_v4()),
        ..ChangeSet::default()
    };
    match store.commit(ws(WS), &fails_last).await {
        Err(StoreError::Other(_)) => {}
        other => panic!("{name}: expected Other, got {other:?}"),
    }
    // A failed transaction leaves no mark: the last committed batch is still `first`.
    let failed_batch = fails_last.batch.unwrap();
    assert!(
        !store.committed(ws(WS), failed_batch).await.unwrap(),
        "{name}"
    );
    assert!(
        store.committed(ws(WS), first_batch).await.unwrap(),
        "{name}"
    );
    let mut fails_midway: Vec<Record> = (0..7000)
        .map(|i| candidate(Uuid::new_v4(), &format!("doomed {i}")))
        .collect();
    fails_midway[6500] = rec(
        RecordKind::Attachment,
        json!({"id": "", "parent_type": "candidate", "parent_id": cand, "kind": "cv",
               "created_at": T, "updated_at": T}),
    );
    let fails_midway = ChangeSet {
        upserts: fails_midway,
        ..Default::default()
    };
    assert!(store.commit(ws(WS), &fails_midway).await.is_err(), "{name}");
    assert_eq!(loaded(&*store, WS).await, expected, "{name}");
    assert_eq!(store.keys().await.unwrap(), keys_before, "{name}");
    assert!(store
        .workspaces()
        .await
        .unwrap()
        .contains(&workspace(WS, "Northwind Renamed")));

    // Keys: replace one, revoke one, revoke an unknown id; and the store still
    // commits after the failed transactions above.
    let replaced = key(
        "key_read",
        Scopes::read_only().with(Scope::RecordsWrite),
        Some(5),
    );
    let position = store.position(ws(WS)).await.unwrap();
    store
        .commit(
            ws(WS),
            &ChangeSet {
                keys: vec![replaced.clone()],
                ..Default::default()
            },
        )
        .await
        .unwrap();
    // Keys alone do not change the workspace's records: its position stays.
    assert_eq!(store.position(ws(WS)).await.unwrap(), position, "{name}");
    let mut revoked = keys[1].clone();
    revoked.revoked = true;
    assert_eq!(
        store
            .revoke_key("key_write")
            .await
            .unwrap()
            .map(|k| stamped(vec![k]).remove(0)),
        Some(revoked.clone()),
        "{name}"
    );
    assert_eq!(
        store.revoke_key("no_such_key").await.unwrap(),
        None,
        "{name}"
    );
    let last_read = store.keys().await.unwrap();
    assert_eq!(
        stamped(last_read.clone()),
        vec![replaced, revoked],
        "{name}"
    );
    // When a key was made stays what the store first recorded, whatever replaced it.
    let created = |keys: &[ApiKey]| keys.iter().map(|k| k.created_at).collect::<Vec<_>>();
    assert_eq!(created(&last_read), created(&first_read), "{name}");

    // A body that no longer parses is reported as corrupt, naming kind and id.
    b.raw(&format!(
        "INSERT INTO records (workspace_id, kind, id, body) \
         VALUES ('{WS}', 'note', 'bad-note', '{{\"id\": 1}}')"
    ))
    .await;
    let mut sink = |_| {};
    match store.load_records(ws(WS), &mut sink).await {
        Err(StoreError::Corrupt(m)) => {
            assert!(m.contains("note") && m.contains("bad-note"), "{name}: {m}")
        }
        other => panic!("{name}: expected Corrupt, got {other:?}"),
    }
    b.raw("DELETE FROM records WHERE id = 'bad-note'").await;
    assert_eq!(loaded(&*store, WS).await, expected, "{name}");
}

#[tokio::test]
async fn sqlite_store_keeps_the_contract() {
    contract(&Backend::sqlite()).await;
}

#[tokio::test]
async fn postgres_store_keeps_the_contract() {
    if let Some(b) = Backend::postgres().await {
        contract(&b).await;
        b.cleanup().await;
    }
}

/// Commits cut off at many points (the caller stops waiting, as the actor does at
/// its deadline, while the commit runs on) are settled by `committed` with an answer that is certain: the
/// batch's records are all in the store when it says yes, and none of them when it
/// says no, also after the cut-off transaction has had every chance to finish.
/// The change log: every transaction that moves the position logs the records it
/// wrote, at that position, in the same transaction; derived changes with them; an
/// import cut into several transactions logs each one's records at its own position;
/// reads go by (position, part) up to a bound; pruning moves its mark before deleting.
async fn the_change_log_follows_the_commits(b: &Backend) {
    use actors::entries::{decode, Change, LoggedId};
    use actors::model::Entity;
    let store = b.open().await;
    let w = ws(WS);
    let entries = |read: &actors::store::LogRead| -> Vec<(u64, Vec<Change>)> {
        read.parts
            .iter()
            .map(|p| (p.position, decode(&p.entries).unwrap()))
            .collect()
    };
    let a = Uuid::new_v4();
    store
        .commit(
            w,
            &ChangeSet {
                upserts: vec![candidate(a, "A")],
                ..ChangeSet::default()
            },
        )
        .await
        .unwrap();
    let derived = Change {
        entity: Entity::Jobs,
        id: LoggedId::Uuid(Uuid::new_v4()),
    };
    store
        .commit(
            w,
            &ChangeSet {
                deletes: vec![(RecordKind::Candidate, a.to_string())],
                derived: vec![derived.clone()],
                ..ChangeSet::default()
            },
        )
        .await
        .unwrap();
    // Keys alone move nothing and log nothing.
    let position = store.position(w).await.unwrap().seq;
    assert_eq!(position, 2, "{}", b.name);
    let read = store
        .read_changes(
            w,
            LogWindow {
                after: (0, 0),
                upto: position,
                max_parts: 100,
            },
        )
        .await
        .unwrap();
    assert_eq!(read.pruned_through, 0);
    let got = entries(&read);
    assert_eq!(got.len(), 2, "{}: {got:?}", b.name);
    assert_eq!(got[0].0, 1);
    assert_eq!(
        got[0].1,
        vec![Change {
            entity: Entity::Candidates,
            id: LoggedId::Uuid(a)
        }]
    );
    assert_eq!(got[1].0, 2);
    assert_eq!(
        got[1].1,
        vec![
            Change {
                entity: Entity::Candidates,
                id: LoggedId::Uuid(a)
            },
            Change {
                entity: Entity::Applications,
                id: LoggedId::Uuid(a)
            },
            derived,
        ]
    );
    // Bounds: after (1, last part) and up to 1 reads nothing; after position 1 reads 2.
    assert!(store
        .read_changes(
            w,
            LogWindow {
                after: (1, u32::MAX),
                upto: 1,
                max_parts: 100
            }
        )
        .await
        .unwrap()
        .parts
        .is_empty());
    let after_one = store
        .read_changes(
            w,
            LogWindow {
                after: (1, u32::MAX),
                upto: 2,
                max_parts: 100,
            },
        )
        .await
        .unwrap();
    assert_eq!(entries(&after_one)[0].0, 2);
    assert!(store
        .read_changes(
            ws(WS2),
            LogWindow {
                after: (0, 0),
                upto: 100,
                max_parts: 100
            }
        )
        .await
        .unwrap()
        .parts
        .is_empty());

    // An import of more records than one transaction takes: several positions, each
    // with the records of its own transaction, every record logged once.
    // Both stores cut a shared import every 500 records or so.
    let many: Vec<Record> = (0..1_100)
        .map(|i| candidate(Uuid::new_v4(), &format!("C{i}")))
        .collect();
    store
        .commit_import(
            w,
            &ChangeSet {
                upserts: many.clone(),
                ..ChangeSet::default()
            },
        )
        .await
        .unwrap();
    let end = store.position(w).await.unwrap().seq;
    assert!(end >= 4, "{}: {end}", b.name);
    let mut logged = Vec::new();
    let mut after = (2, u32::MAX);
    loop {
        let read = store
            .read_changes(
                w,
                LogWindow {
                    after,
                    upto: end,
                    max_parts: 3,
                },
            )
            .await
            .unwrap();
        let Some(last) = read.parts.last() else { break };
        after = (last.position, last.part);
        for part in &read.parts {
            assert!(part.position > 2 && part.position <= end);
            logged.extend(decode(&part.entries).unwrap());
        }
    }
    assert_eq!(logged.len(), many.len(), "{}", b.name);

    // Pruning: nothing is older than an hour ago; everything is older than the future.
    let now = actors::store::now_ms();
    let kept = store.prune_changes(w, now - 3_600_000).await.unwrap();
    assert_eq!((kept.through, kept.parts_removed), (0, 0), "{}", b.name);
    assert!(kept.parts_left > 0 && kept.bytes_left > 0, "{}", b.name);
    let pruned = store.prune_changes(w, now + 60_000).await.unwrap();
    assert_eq!(pruned.through, end, "{}", b.name);
    assert_eq!(pruned.parts_removed, kept.parts_left, "{}", b.name);
    assert_eq!((pruned.parts_left, pruned.bytes_left), (0, 0), "{}", b.name);
    let read = store
        .read_changes(
            w,
            LogWindow {
                after: (0, 0),
                upto: end,
                max_parts: 100,
            },
        )
        .await
        .unwrap();
    assert_eq!(read.pruned_through, end, "{}", b.name);
    assert!(read.parts.is_empty());
    // Later commits are logged as before.
    store
        .commit(
            w,
            &ChangeSet {
                upserts: vec![candidate(Uuid::new_v4(), "late")],
                ..ChangeSet::default()
            },
        )
        .await
        .unwrap();
    let read = store
        .read_changes(
            w,
            LogWindow {
                after: (end, u32::MAX),
                upto: end + 1,
                max_parts: 100,
            },
        )
        .await
        .unwrap();
    assert_eq!(read.parts.len(), 1);
    store.close().await;
}

#[tokio::test]
async fn sqlite_the_change_log_follows_the_commits() {
    the_change_log_follows_the_commits(&Backend::sqlite()).await;
}

#[tokio::test]
async fn postgres_the_change_log_follows_the_commits() {
    if let Some(b) = Backend::postgres().await {
        the_change_log_follows_the_commits(&b).await;
        b.cleanup().await;
    }
}

/// What a load of many workspaces reads together (records, positions, tombstones) is
/// what it would read of each alone, in the order asked, a workspace unknown to the
/// store included.
async fn reads_of_many_workspaces_are_those_of_each(b: &Backend) {
    let store = b.open().await;
    let (one, two, unknown) = (ws(WS), Uuid::new_v4(), Uuid::new_v4());
    let (a, c) = (Uuid::new_v4(), Uuid::new_v4());
    for (w, people) in [(one, vec![a]), (two, vec![c, Uuid::new_v4()])] {
        let upserts = people.iter().map(|p| candidate(*p, "P")).collect();
        store
            .commit(
                w,
                &ChangeSet {
                    upserts,
                    ..ChangeSet::default()
                },
            )
            .await
            .unwrap();
    }
    store
        .commit(
            one,
            &ChangeSet {
                deletes: vec![(RecordKind::Candidate, a.to_string())],
                tombstones: vec![(
                    actors::entries::Change {
                        entity: actors::model::Entity::Candidates,
                        id: actors::entries::LoggedId::Uuid(a),
                    },
                    Some(actors::time::Stamp::from_millis(1_800_000_000_000)),
                )],
                ..ChangeSet::default()
            },
        )
        .await
        .unwrap();
    let asked = [two, unknown, one];
    let mut together: std::collections::HashMap<Uuid, Vec<Record>> = Default::default();
    store
        .load_records_of(&asked, &mut |w, r| together.entry(w).or_default().push(r))
        .await
        .unwrap();
    let positions = store.positions(&asked).await.unwrap();
    let tombstones = store.tombstones_of(&asked).await.unwrap();
    assert_eq!(positions.len(), 3);
    assert_eq!(tombstones.len(), 3);
    for (i, w) in asked.iter().enumerate() {
        let mut alone = Vec::new();
        store
            .load_records(*w, &mut |r| alone.push(r))
            .await
            .unwrap();
        assert_eq!(
            sorted(together.remove(w).unwrap_or_default()),
            sorted(alone),
            "{}: {w}",
            b.name
        );
        assert_eq!(
            positions[i],
            store.position(*w).await.unwrap(),
            "{}",
            b.name
        );
        assert_eq!(
            tombstones[i],
            store.tombstones(*w).await.unwrap(),
            "{}",
            b.name
        );
    }
    assert_eq!(tombstones[2].len(), 1, "{}: the deleted candidate", b.name);
    assert_eq!(
        positions[1].seq, 0,
        "{}: no commit of an unknown workspace",
        b.name
    );
    assert!(together.is_empty(), "{}: only the workspaces asked", b.name);
}

#[tokio::test]
async fn sqlite_reads_of_many_workspaces_are_those_of_each() {
    reads_of_many_workspaces_are_those_of_each(&Backend::sqlite()).await;
}

#[tokio::test]
async fn postgres_reads_of_many_workspaces_are_those_of_each() {
    if let Some(b) = Backend::postgres().await {
        reads_of_many_workspaces_are_those_of_each(&b).await;
        b.cleanup().await;
    }
}

/// A commit's touched records (`ChangeSet::touched`) are marked, not stored, until
/// `flush_touched` stores them and clears the marker; meanwhile the workspace's next
/// commit or import is refused whole, and a load applies the marker.
async fn touched_records_follow_their_commit(b: &Backend) {
    use actors::entries::{Change, LoggedId};
    use actors::model::Entity;
    use actors::store::Touched;
    let store = b.open().await;
    let name = b.name;
    let (a, c) = (Uuid::new_v4(), Uuid::new_v4());
    store
        .commit(
            ws(WS),
            &ChangeSet {
                workspace: Some(workspace(WS, "Touched")),
                upserts: vec![candidate(a, "A"), candidate(c, "C")],
                ..ChangeSet::default()
            },
        )
        .await
        .unwrap();
    let stamp = actors::time::Stamp::from_millis(1_900_000_000_000);
    let restamped = |r: &Record| {
        let mut r = r.clone();
        if let Record::Candidate(c) = &mut r {
            c.updated_at = stamp;
        }
        r
    };
    let before = loaded(&*store, WS).await;
    let rows: Vec<Record> = before.iter().map(restamped).collect();
    let touched = Touched {
        stamp,
        records: vec![(RecordKind::Candidate, a), (RecordKind::Candidate, c)],
    };
    let derived = |id: Uuid| Change {
        entity: Entity::Candidates,
        id: LoggedId::Uuid(id),
    };
    let job = rec(
        RecordKind::Job,
        json!({"id": Uuid::new_v4(), "title": "J", "created_at": T, "updated_at": T}),
    );
    store
        .commit(
            ws(WS),
            &ChangeSet {
                upserts: vec![job.clone()],
                derived: vec![derived(a), derived(c)],
                touched: Some(touched.clone()),
                ..ChangeSet::default()
            },
        )
        .await
        .unwrap();
    let position = store.position(ws(WS)).await.unwrap().seq;
    // The job is stored, the rows are not: the marker stands in their place.
    let now = loaded(&*store, WS).await;
    assert!(now.contains(&job), "{name}");
    assert_eq!(
        now.iter()
            .filter(|r| r.kind() == RecordKind::Candidate)
            .collect::<Vec<_>>(),
        before.iter().collect::<Vec<_>>(),
        "{name}"
    );
    let markers = store.touches(&[ws(WS2), ws(WS)]).await.unwrap();
    assert_eq!(
        markers,
        vec![
            None,
            Some(actors::store::TouchMarker {
                position,
                touched: touched.clone()
            })
        ],
        "{name}"
    );
    // A load applies it.
    let state = actors::loader::read::read_state(&*store, workspace(WS, "Touched"))
        .await
        .unwrap();
    for id in [a, c] {
        assert_eq!(
            state.candidates.get(&id).unwrap().updated_at(),
            stamp,
            "{name}"
        );
    }
    // Nothing more commits past it, an import neither; nothing of either is written.
    let other = candidate(Uuid::new_v4(), "O");
    let next = ChangeSet {
        upserts: vec![other.clone()],
        ..ChangeSet::default()
    };
    for refused in [
        store.commit(ws(WS), &next).await,
        store.commit_import(ws(WS), &next).await,
    ] {
        assert!(
            matches!(refused, Err(StoreError::TouchPending(_))),
            "{name}: {refused:?}"
        );
    }
    assert_eq!(
        store.position(ws(WS)).await.unwrap().seq,
        position,
        "{name}"
    );
    assert!(!loaded(&*store, WS).await.contains(&other), "{name}");
    // Keys live beside the workspace and still commit.
    let key = key("k_touch", Scopes::read_only(), None);
    let keys_only = ChangeSet {
        keys: vec![key.clone()],
        ..ChangeSet::default()
    };
    store.commit(ws(WS), &keys_only).await.unwrap();
    // Flushed for another position: nothing happens.
    store
        .flush_touched(ws(WS), position + 1, &rows)
        .await
        .unwrap();
    assert!(
        store.touches(&[ws(WS)]).await.unwrap()[0].is_some(),
        "{name}"
    );
    // Flushed for its own: the rows are stored, the marker gone, the next commit goes.
    store.flush_touched(ws(WS), position, &rows).await.unwrap();
    let now = loaded(&*store, WS).await;
    for r in &rows {
        assert!(now.contains(r), "{name}: {r:?}");
    }
    assert_eq!(
        store.touches(&[ws(WS)]).await.unwrap(),
        vec![None],
        "{name}"
    );
    store.commit(ws(WS), &next).await.unwrap();
    assert_eq!(
        store.position(ws(WS)).await.unwrap().seq,
        position + 1,
        "{name}"
    );
    // Flushed again late (a retry whose first answer was lost): nothing is undone.
    store.flush_touched(ws(WS), position, &rows).await.unwrap();
    assert!(loaded(&*store, WS).await.contains(&other), "{name}");
}

#[tokio::test]
async fn sqlite_touched_records_follow_their_commit() {
    touched_records_follow_their_commit(&Backend::sqlite()).await;
}

/// Touched rows are stored without a sync of their own; every commit after syncs again.
#[tokio::test]
async fn touched_rows_leave_every_later_commit_synced() {
    let dir = tempfile::tempdir().unwrap();
    let store = sqlite::SqliteStore::open(&dir.path().join("recruit.db"))
        .await
        .unwrap();
    let id = Uuid::new_v4();
    let row = candidate(id, "A");
    let touched = actors::store::Touched {
        stamp: actors::time::Stamp::from_millis(1_900_000_000_000),
        records: vec![(RecordKind::Candidate, id)],
    };
    store
        .commit(
            ws(WS),
            &ChangeSet {
                upserts: vec![candidate(Uuid::new_v4(), "B")],
                touched: Some(touched),
                ..ChangeSet::default()
            },
        )
        .await
        .unwrap();
    let position = store.position(ws(WS)).await.unwrap().seq;
    store
        .flush_touched(ws(WS), position, std::slice::from_ref(&row))
        .await
        .unwrap();
    assert_eq!(
        store.writer_pragma::<i64>("synchronous").await,
        2,
        "synchronous=FULL again"
    );
    assert!(loaded(&store, WS).await.contains(&row));
    store.close().await;
}

#[tokio::test]
async fn postgres_touched_records_follow_their_commit() {
    if let Some(b) = Backend::postgres().await {
        touched_records_follow_their_commit(&b).await;
        b.cleanup().await;
    }
}

/// A workspace's first import is inserted rather than upserted where the store can
/// (PostgreSQL copies it in, several transactions of it): what loads back is what the
/// upsert would have written, the last version of a key given twice included.
async fn fresh_imports_load_back_as_upserts_would(b: &Backend) {
    let store = b.open().await;
    let ids: Vec<Uuid> = (0..2000u128).map(|i| Uuid::from_u128(i + 1)).collect();
    let mut upserts: Vec<Record> = ids.iter().map(|id| candidate(*id, "first")).collect();
    upserts.push(candidate(ids[5], "given twice: this one stays"));
    upserts.extend(one_of_each());
    let changes = ChangeSet {
        workspace: Some(workspace(WS, "Northwind")),
        upserts,
        unlogged: true,
        fresh: true,
        ..ChangeSet::default()
    };
    store.commit_import(ws(WS), &changes).await.unwrap();
    let records = loaded(&*store, WS).await;
    assert_eq!(records.len(), 2000 + one_of_each().len());
    let twice = records
        .iter()
        .find(|r| r.id_string() == ids[5].to_string())
        .unwrap();
    assert_eq!(twice, &candidate(ids[5], "given twice: this one stays"));
    for r in one_of_each() {
        assert!(records.contains(&r), "{r:?}");
    }
    // Later imports upsert over it as usual.
    let again = ChangeSet {
        upserts: vec![candidate(ids[0], "second")],
        ..ChangeSet::default()
    };
    store.commit_import(ws(WS), &again).await.unwrap();
    assert!(loaded(&*store, WS)
        .await
        .contains(&candidate(ids[0], "second")));
    store.close().await;
}

#[tokio::test]
async fn sqlite_fresh_imports_load_back_as_upserts_would() {
    fresh_imports_load_back_as_upserts_would(&Backend::sqlite()).await;
}

#[tokio::test]
async fn postgres_fresh_imports_load_back_as_upserts_would() {
    if let Some(b) = Backend::postgres().await {
        fresh_imports_load_back_as_upserts_would(&b).await;
        b.cleanup().await;
    }
}

#[test]
fn blob_batches_are_cut_by_bytes_in_order() {
    let sizes = [3 << 20, 3 << 20, 3 << 20, 20 << 20, 0, 1];
    let bytes: Vec<Vec<u8>> = sizes.iter().map(|n| vec![0; *n]).collect();
    let items: Vec<(String, &[u8])> = bytes
        .iter()
        .enumerate()
        .map(|(i, b)| (i.to_string(), &b[..]))
        .collect();
    let cut: Vec<Vec<&str>> = blob_transactions(&items)
        .map(|t| t.iter().map(|(n, _)| n.as_str()).collect())
        .collect();
    // Two 3 MB objects fit in 8 MB, a third does not; one larger than the limit goes
    // alone; nothing is left out or reordered.
    assert_eq!(cut, [vec!["0", "1"], vec!["2"], vec!["3"], vec!["4", "5"]]);
    assert_eq!(blob_transactions(&[]).count(), 0);
}

/// Attachment bytes by workspace and object name: stored and replaced in transactions of
/// a few megabytes (a batch larger than one), read back whole or by length, listed in
/// pages, removed with what they gave back; one workspace never sees another's.
async fn blobs_are_kept_by_workspace_and_name(b: &Backend) {
    let store = b.open().await;
    let (w, other) = (ws(WS), ws(WS2));
    // 40 objects of 300 kB: more than one transaction's worth.
    let big: Vec<(String, Vec<u8>)> = (0..40u8)
        .map(|i| (format!("{i:064x}"), vec![i; 300_000]))
        .collect();
    let items: Vec<(String, &[u8])> = big.iter().map(|(n, b)| (n.clone(), &b[..])).collect();
    store.put_blobs(w, &items).await.unwrap();
    store
        .put_blobs(other, &[(items[0].0.clone(), &b"theirs"[..])])
        .await
        .unwrap();
    assert_eq!(
        store.blob(w, &items[7].0).await.unwrap(),
        Some(big[7].1.clone())
    );
    assert_eq!(
        store.blob_len(w, &items[39].0).await.unwrap(),
        Some(300_000)
    );
    assert_eq!(store.blob(w, &"f".repeat(64)).await.unwrap(), None);
    assert_eq!(store.blob_len(w, &"f".repeat(64)).await.unwrap(), None);
    assert_eq!(
        store.blob(other, &items[0].0).await.unwrap().as_deref(),
        Some(&b"theirs"[..])
    );
    // Replaced, including by an empty object.
    store
        .put_blobs(
            w,
            &[
                (items[1].0.clone(), &b""[..]),
                (items[2].0.clone(), &b"two"[..]),
            ],
        )
        .await
        .unwrap();
    assert_eq!(store.blob(w, &items[1].0).await.unwrap(), Some(Vec::new()));
    assert_eq!(store.blob_len(w, &items[2].0).await.unwrap(), Some(3));
    // Pages of names, in order.
    let mut names = Vec::new();
    let mut after = String::new();
    loop {
        let page = store.blob_names(w, &after, 15).await.unwrap();
        let Some(last) = page.last() else { break };
        assert!(page.len() <= 15);
        after = last.clone();
        names.extend(page);
    }
    let expected: Vec<String> = items.iter().map(|(n, _)| n.clone()).collect();
    assert_eq!(names, expected);
    // Removal: what was there, and nothing of the other workspace.
    let doomed = vec![
        items[1].0.clone(),
        items[2].0.clone(),
        items[3].0.clone(),
        "0".repeat(63) + "z",
    ];
    assert_eq!(
        store.delete_blobs(w, &doomed).await.unwrap(),
        Reclaimed {
            objects: 3,
            bytes: 300_003
        }
    );
    assert_eq!(store.blob(w, &items[3].0).await.unwrap(), None);
    assert_eq!(store.blob_names(w, "", 100).await.unwrap().len(), 37);
    assert_eq!(store.blob_names(other, "", 100).await.unwrap().len(), 1);
    store.close().await;
}

/// An endpoint's backlog as it was first computed: every part after the point read and
/// decoded, what the point had passed of its own part taken off.
async fn backlog_by_decoding(
    store: &dyn Store,
    ws: Uuid,
    point: actors::changes::tokens::FeedPoint,
    head: u64,
) -> u64 {
    use actors::changes::tokens::WHOLE_PART;
    let inside = point.part != u32::MAX || point.index != WHOLE_PART;
    let mut after = if inside {
        (point.position, point.part.wrapping_sub(1))
    } else {
        (point.position, u32::MAX)
    };
    if inside && point.part == 0 {
        after = (point.position.saturating_sub(1), u32::MAX);
    }
    let mut total: u64 = 0;
    loop {
        let window = LogWindow {
            after,
            upto: head,
            max_parts: 256,
        };
        let read = store.read_changes(ws, window).await.unwrap();
        let Some(last) = read.parts.last() else {
            break;
        };
        after = (last.position, last.part);
        for part in &read.parts {
            let n = actors::entries::decode(&part.entries).unwrap().len() as u64;
            let passed = if inside && (part.position, part.part) == (point.position, point.part) {
                u64::from(point.index).min(n)
            } else {
                0
            };
            total += n - passed;
        }
        if read.parts.len() < 256 {
            break;
        }
    }
    total
}

/// An endpoint's backlog (`webhooks::batch::backlog`) is the count of the entries after
/// its point, from every point of a log of small and multi-part commits with text ids,
/// some parts written before counts were kept: the same figure as decoding every part
/// after it, read from the counts kept beside the parts (`Store::count_entries`).
async fn backlog_counts_the_entries_after_a_point(b: &Backend) {
    use actors::changes::tokens::{FeedPoint, WHOLE_PART};
    let store = b.open().await;
    let w = ws(WS);
    let tasks = |n: usize| -> Vec<(RecordKind, String)> {
        (0..n)
            .map(|_| (RecordKind::Task, Uuid::new_v4().to_string()))
            .collect()
    };
    let mut sets = vec![tasks(1), tasks(3), tasks(5000), tasks(2)];
    sets.push(vec![
        (RecordKind::Attachment, "cv:short".into()),
        (RecordKind::Attachment, format!("cv:{}", "x".repeat(300))),
        (RecordKind::Candidate, Uuid::new_v4().to_string()),
    ]);
    sets.push(tasks(4097));
    sets.push(tasks(1));
    for deletes in sets {
        let changes = ChangeSet {
            deletes,
            ..ChangeSet::default()
        };
        store.commit(w, &changes).await.unwrap();
    }
    let head = store.position(w).await.unwrap().seq;
    // Parts as an earlier release wrote them, with no count.
    b.raw("UPDATE change_log SET entries_count = NULL WHERE position IN (2, 3, 6)")
        .await;
    let all = store
        .read_changes(
            w,
            LogWindow {
                after: (0, 0),
                upto: head,
                max_parts: 1000,
            },
        )
        .await
        .unwrap();
    assert!(all.parts.iter().any(|p| p.part > 0), "a multi-part commit");
    let mut points = vec![
        FeedPoint::at(0),
        FeedPoint::at(head),
        FeedPoint::at(head + 1),
    ];
    for part in &all.parts {
        let n = actors::entries::decode(&part.entries).unwrap().len() as u32;
        points.push(FeedPoint::at(part.position));
        for index in [0, 1, n / 2, n - 1, n, n + 1, WHOLE_PART] {
            points.push(FeedPoint {
                position: part.position,
                part: part.part,
                index,
            });
        }
    }
    let total = backlog_by_decoding(&*store, w, FeedPoint::at(0), head).await;
    assert_eq!(total, 1 + 3 + 5000 + 2 + 4 + 4097 + 1, "{}", b.name);
    for point in points {
        for upto in [head, head - 1] {
            let want = backlog_by_decoding(&*store, w, point, upto).await;
            let got = crate::webhooks::batch::backlog(&*store, w, point, upto)
                .await
                .unwrap();
            assert_eq!(got, want, "{}: {point:?} up to {upto}", b.name);
        }
    }
    store.close().await;
}

#[tokio::test]
async fn sqlite_backlog_counts_the_entries_after_a_point() {
    backlog_counts_the_entries_after_a_point(&Backend::sqlite()).await;
}

#[tokio::test]
async fn postgres_backlog_counts_the_entries_after_a_point() {
    if let Some(b) = Backend::postgres().await {
        backlog_counts_the_entries_after_a_point(&b).await;
        b.cleanup().await;
    }
}

/// SQLite sums a window's counts from the index beside the log, reading none of its
/// rows (a large part's entries span overflow pages, which a read of the count would
/// walk).
#[tokio::test]
async fn sqlite_counts_the_log_from_its_index_alone() {
    use sqlx::Connection;
    let b = Backend::sqlite();
    let store = b.open().await;
    store.close().await;
    let opts = sqlx::sqlite::SqliteConnectOptions::new().filename(b.dir.join("recruit.db"));
    let mut c = sqlx::SqliteConnection::connect_with(&opts).await.unwrap();
    let plan: Vec<(i64, i64, i64, String)> = sqlx::query_as(&format!(
        "EXPLAIN QUERY PLAN {}",
        crate::store::change_log::count_sql::COUNTED
    ))
    .bind(WS)
    .bind(0i64)
    .bind(0i64)
    .bind(10i64)
    .fetch_all(&mut c)
    .await
    .unwrap();
    let plan: Vec<&str> = plan.iter().map(|r| r.3.as_str()).collect();
    assert!(
        plan.iter()
            .any(|step| step.contains("COVERING INDEX change_log_counts")),
        "{plan:?}"
    );
}

/// Webhook rows: kept by workspace and id, replaced whole, removed with their attempts;
/// attempts listed newest first, the newest `keep` kept; a transaction all or nothing.
async fn webhook_rows_are_kept_by_workspace(b: &Backend) {
    use actors::store::WebhookWrite;
    let store = b.open().await;
    let rows = store
        .webhook_rows()
        .expect("a store of the server keeps them");
    let (w, other) = (ws(WS), Uuid::new_v4());
    let put = |id: &str, body: &str| WebhookWrite::Put {
        id: id.into(),
        body: body.into(),
    };
    let attempt = |n: usize| WebhookWrite::Attempt {
        endpoint: "whe_a".into(),
        body: format!("{{\"n\":{n}}}"),
        keep: 5,
    };
    rows.write(w, &[put("whe_b", "b1"), put("whe_a", "a1")])
        .await
        .unwrap();
    rows.write(other, &[put("whe_a", "other")]).await.unwrap();
    rows.write(w, &[put("whe_a", "a2")]).await.unwrap();
    let got = rows.endpoints(w).await.unwrap();
    let want = [("whe_a", "a2"), ("whe_b", "b1")].map(|(i, b)| (i.to_string(), b.to_string()));
    assert_eq!(got, want);
    let mut all = rows.workspaces().await.unwrap();
    all.sort();
    let mut both = vec![w, other];
    both.sort();
    assert_eq!(all, both);
    for n in 0..8 {
        let writes = [attempt(n), put("whe_a", &format!("a{n}"))];
        // The deliveries' own records go in as `record`, the API's as `write`: the
        // same rows either way.
        if n % 2 == 0 {
            rows.record(w, &writes).await.unwrap();
        } else {
            rows.write(w, &writes).await.unwrap();
        }
    }
    assert_eq!(
        rows.endpoints(w).await.unwrap()[0],
        ("whe_a".to_string(), "a7".to_string())
    );
    let kept = rows.attempts(w, "whe_a", 100).await.unwrap();
    let newest: Vec<String> = (3..8).rev().map(|n| format!("{{\"n\":{n}}}")).collect();
    assert_eq!(kept, newest);
    assert_eq!(rows.attempts(w, "whe_a", 2).await.unwrap(), newest[..2]);
    assert!(rows.attempts(other, "whe_a", 100).await.unwrap().is_empty());
    rows.write(w, &[WebhookWrite::Remove { id: "whe_a".into() }])
        .await
        .unwrap();
    assert!(rows.attempts(w, "whe_a", 100).await.unwrap().is_empty());
    let got = rows.endpoints(w).await.unwrap();
    assert_eq!(got, [("whe_b".to_string(), "b1".to_string())]);
    assert_eq!(rows.endpoints(other).await.unwrap().len(), 1);
    store.close().await;
}

#[tokio::test]
async fn sqlite_webhook_rows_are_kept_by_workspace() {
    webhook_rows_are_kept_by_workspace(&Backend::sqlite()).await;
}

#[tokio::test]
async fn postgres_webhook_rows_are_kept_by_workspace() {
    if let Some(b) = Backend::postgres().await {
        webhook_rows_are_kept_by_workspace(&b).await;
        b.cleanup().await;
    }
}

/// A webhook endpoint's row and its attempts as written, both as the API writes them and
/// as deliveries record them.
async fn plant_webhook_rows(rows: &dyn actors::store::WebhookRows, w: Uuid) {
    use actors::store::WebhookWrite;
    let put = |id: &str, body: &str| WebhookWrite::Put {
        id: id.into(),
        body: body.into(),
    };
    rows.write(w, &[put("whe_a", "a0"), put("whe_b", "b0")])
        .await
        .unwrap();
    for n in 1..=3 {
        let attempt = WebhookWrite::Attempt {
            endpoint: "whe_a".into(),
            body: format!("{{\"n\":{n}}}"),
            keep: 100,
        };
        rows.record(w, &[attempt, put("whe_a", &format!("a{n}"))])
            .await
            .unwrap();
    }
}

/// What a store's webhook rows hold of `w`: its endpoints, and `whe_a`'s attempts.
async fn webhook_rows_of(
    rows: &dyn actors::store::WebhookRows,
    w: Uuid,
) -> (Vec<(String, String)>, Vec<String>) {
    (
        rows.endpoints(w).await.unwrap(),
        rows.attempts(w, "whe_a", 100).await.unwrap(),
    )
}

/// `SELECT count(*)` of a table of `recruit.db`, behind the store's back.
async fn count_in_main(dir: &std::path::Path, table: &str) -> i64 {
    use sqlx::Connection;
    let opts = sqlx::sqlite::SqliteConnectOptions::new().filename(dir.join("recruit.db"));
    let mut c = sqlx::SqliteConnection::connect_with(&opts).await.unwrap();
    sqlx::query_scalar(&format!("SELECT count(*) FROM {table}"))
        .fetch_one(&mut c)
        .await
        .unwrap()
}

/// On SQLite the webhook rows live in `webhooks.db` beside `recruit.db`, private as the
/// data dir's other files, with a writer of their own: a workspace's commit in progress
/// on `recruit.db` holds up neither the deliveries' records nor the API's writes, and
/// the rows are there after a restart. The records commit without a flush, the API's
/// writes with one.
#[tokio::test]
async fn sqlite_webhook_rows_have_a_file_and_a_writer_of_their_own() {
    use actors::store::WebhookWrite;
    let b = Backend::sqlite();
    std::fs::create_dir_all(&b.dir).unwrap();
    let store = sqlite::SqliteStore::open(&b.dir.join("recruit.db"))
        .await
        .unwrap();
    let rows = store.webhook_rows().unwrap();
    let w = ws(WS);
    plant_webhook_rows(rows, w).await;
    // The workspaces' writer is busy (a commit in progress, as long as it likes): the
    // webhook rows are written all the same, at once.
    let held = store.hold_writer().await;
    let started = Instant::now();
    let attempt = WebhookWrite::Attempt {
        endpoint: "whe_a".into(),
        body: "{\"n\":4}".into(),
        keep: 100,
    };
    rows.record(w, &[attempt]).await.unwrap();
    let put = WebhookWrite::Put {
        id: "whe_c".into(),
        body: "c0".into(),
    };
    rows.write(w, &[put]).await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "waited {:?} behind the workspaces' writer",
        started.elapsed()
    );
    drop(held);
    assert_eq!(
        store.webhooks().writer_pragma::<i64>("synchronous").await,
        1,
        "NORMAL again after a write that flushed"
    );
    assert_eq!(
        store.writer_pragma::<i64>("synchronous").await,
        2,
        "recruit.db's commits flush as ever"
    );
    let before = webhook_rows_of(rows, w).await;
    assert_eq!(before.0.len(), 3);
    assert_eq!(before.1.len(), 4);
    store.close().await;
    assert_eq!(count_in_main(&b.dir, "webhook_endpoints").await, 0);
    assert_eq!(count_in_main(&b.dir, "webhook_attempts").await, 0);
    #[cfg(unix)]
    {
        assert_eq!(mode(&b.dir.join("webhooks.db")), 0o600);
    }

    let store = open(None, &b.dir).await.unwrap();
    let after = webhook_rows_of(store.webhook_rows().unwrap(), w).await;
    assert_eq!(after, before, "the rows survive a restart");
    #[cfg(unix)]
    for file in ["webhooks.db", "webhooks.db-wal"] {
        assert_eq!(mode(&b.dir.join(file)), 0o600, "{file}");
    }
    store.close().await;
}

/// A data dir of an earlier release, whose `recruit.db` holds the webhook rows and has
/// no `webhooks.db`: made by writing the rows through a store, then putting them back
/// into `recruit.db`'s tables and removing the new file. What the rows were.
async fn older_data_dir(dir: &std::path::Path) -> (Vec<(String, String)>, Vec<String>) {
    std::fs::create_dir_all(dir).unwrap();
    let main = dir.join("recruit.db");
    let store = sqlite::SqliteStore::open(&main).await.unwrap();
    plant_webhook_rows(store.webhook_rows().unwrap(), ws(WS)).await;
    let rows = webhook_rows_of(store.webhook_rows().unwrap(), ws(WS)).await;
    store.close().await;
    {
        use sqlx::Connection;
        let opts = sqlx::sqlite::SqliteConnectOptions::new().filename(&main);
        let mut c = sqlx::SqliteConnection::connect_with(&opts).await.unwrap();
        sqlx::query("ATTACH DATABASE ?1 AS new")
            .bind(dir.join("webhooks.db").to_string_lossy().into_owned())
            .execute(&mut c)
            .await
            .unwrap();
        for table in ["webhook_endpoints", "webhook_attempts"] {
            sqlx::query(&format!("INSERT INTO {table} SELECT * FROM new.{table}"))
                .execute(&mut c)
                .await
                .unwrap();
        }
        c.close().await.unwrap();
    }
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(dir.join(format!("webhooks.db{suffix}")));
    }
    assert_eq!(count_in_main(dir, "webhook_endpoints").await, 2);
    rows
}

/// The first open of an older data dir moves its webhook rows from `recruit.db` into
/// `webhooks.db`, once: the next open finds them there, and `recruit.db`'s tables empty.
#[tokio::test]
async fn sqlite_webhook_rows_of_an_older_data_dir_move_into_their_file_once() {
    let b = Backend::sqlite();
    let planted = older_data_dir(&b.dir).await;
    assert_eq!((planted.0.len(), planted.1.len()), (2, 3));
    for _ in 0..2 {
        opens_with_the_rows_moved(&b.dir, &planted).await;
    }
}

/// Opens the store in `dir`: its webhook rows are `planted`, in `webhooks.db` alone.
async fn opens_with_the_rows_moved(
    dir: &std::path::Path,
    planted: &(Vec<(String, String)>, Vec<String>),
) {
    let store = open(None, dir).await.unwrap();
    let rows = webhook_rows_of(store.webhook_rows().unwrap(), ws(WS)).await;
    assert_eq!(&rows, planted);
    store.close().await;
    assert_eq!(count_in_main(dir, "webhook_endpoints").await, 0);
    assert_eq!(count_in_main(dir, "webhook_attempts").await, 0);
}

/// A move interrupted after the rows were copied into `webhooks.db` (its transaction
/// committed) but before `recruit.db`'s were cleared: the next open copies nothing
/// again (no row twice, no attempt numbered twice) and clears the old rows. One
/// interrupted before that commit left nothing in `webhooks.db`, which is the older
/// data dir as it was (the test above).
#[tokio::test]
async fn sqlite_an_interrupted_move_of_webhook_rows_loses_and_doubles_nothing() {
    let b = Backend::sqlite();
    let planted = older_data_dir(&b.dir).await;
    let main = b.dir.join("recruit.db");
    let file = sqlite::webhooks::SqliteWebhooks::open_file(&main)
        .await
        .unwrap();
    let copied = sqlite::webhooks::copy_in(&file, &main).await.unwrap();
    assert_eq!(copied, Some((2, 3)));
    file.close().await;
    assert_eq!(count_in_main(&b.dir, "webhook_endpoints").await, 2);
    opens_with_the_rows_moved(&b.dir, &planted).await;
}

#[tokio::test]
async fn sqlite_blobs_are_kept_by_workspace_and_name() {
    blobs_are_kept_by_workspace_and_name(&Backend::sqlite()).await;
}

#[tokio::test]
async fn postgres_blobs_are_kept_by_workspace_and_name() {
    if let Some(b) = Backend::postgres().await {
        blobs_are_kept_by_workspace_and_name(&b).await;
        b.cleanup().await;
    }
}

async fn interrupted_commits_settle_with_a_certain_answer(b: &Backend) {
    let store = b.open().await;
    let base = ChangeSet {
        workspace: Some(workspace(WS, "Northwind")),
        ..ChangeSet::default()
    };
    store.commit(ws(WS), &base).await.unwrap();
    let (mut yes, mut no, mut in_flight) = (0, 0, 0);
    // Cut-offs from "at once" up, tripling, until commits get through (how long one
    // takes depends on the machine and what else it runs).
    let mut micros = 0u64;
    while yes < 2 && micros < 60_000_000 {
        micros = (micros * 3).max(100);
        let ids: Vec<Uuid> = (0..3000).map(|_| Uuid::new_v4()).collect();
        let batch = Uuid::new_v4();
        let changes = ChangeSet {
            upserts: ids.iter().map(|id| candidate(*id, "cut off")).collect(),
            batch: Some(batch),
            ..ChangeSet::default()
        };
        let cut = std::time::Duration::from_micros(micros);
        // As the workspace actor does: the commit runs on, the caller stops waiting.
        let running = {
            let store = store.clone();
            tokio::spawn(async move { store.commit(ws(WS), &changes).await })
        };
        let confirmed = matches!(tokio::time::timeout(cut, running).await, Ok(Ok(Ok(()))));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let committed = loop {
            match store.committed(ws(WS), batch).await {
                Ok(c) => break c,
                Err(StoreError::Unavailable(e)) => {
                    assert!(std::time::Instant::now() < deadline, "{}: {e}", b.name)
                }
                Err(e) => panic!("{}: {e}", b.name),
            }
        };
        if confirmed {
            assert!(committed, "{}: a confirmed commit is committed", b.name);
        } else {
            in_flight += 1;
        }
        // Whatever the cut-off transaction was doing has ended by now; give a
        // straggler time to show itself all the same.
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let held: std::collections::HashSet<Uuid> = loaded(&*store, WS)
            .await
            .iter()
            .filter_map(|r| Uuid::parse_str(&r.id_string()).ok())
            .collect();
        let present = ids.iter().filter(|id| held.contains(id)).count();
        let want = if committed { ids.len() } else { 0 };
        assert_eq!(
            present, want,
            "{}: cut at {micros} µs, committed = {committed}",
            b.name
        );
        if committed {
            yes += 1;
        } else {
            no += 1;
        }
    }
    // Some answers were asked for while the commit was still running, or the test
    // proved less than it claims; and some commits got through.
    assert!(
        in_flight > 0,
        "{}: every commit had finished when asked",
        b.name
    );
    assert!(yes > 0, "{}: {yes} committed, {no} not", b.name);
    store.close().await;
}

#[tokio::test]
async fn sqlite_interrupted_commits_settle_with_a_certain_answer() {
    interrupted_commits_settle_with_a_certain_answer(&Backend::sqlite()).await;
}

#[tokio::test]
async fn postgres_interrupted_commits_settle_with_a_certain_answer() {
    if let Some(b) = Backend::postgres().await {
        interrupted_commits_settle_with_a_certain_answer(&b).await;
        b.cleanup().await;
    }
}

/// A large import is the same records in the store as one commit would make, and it
/// never holds another workspace's commit until it ends: a small commit started while
/// it runs finishes first, and the import commits in parts as it goes.
async fn imports_let_other_commits_through(b: &Backend) {
    let store = b.open().await;
    let ws2 = workspace(WS2, "Other");
    let ids: Vec<Uuid> = (0..60_000).map(|_| Uuid::new_v4()).collect();
    let import = ChangeSet {
        workspace: Some(workspace(WS, "Northwind")),
        upserts: ids.iter().map(|id| candidate(*id, "imported")).collect(),
        batch: Some(Uuid::new_v4()),
        ..ChangeSet::default()
    };
    let importing = {
        let store = store.clone();
        tokio::spawn(async move { store.commit_import(ws(WS), &import).await })
    };
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let small = ChangeSet {
        workspace: Some(ws2),
        upserts: vec![candidate(Uuid::new_v4(), "meanwhile")],
        ..ChangeSet::default()
    };
    store.commit(ws(WS2), &small).await.unwrap();
    assert!(
        !importing.is_finished(),
        "{}: the small commit waited for the whole import",
        b.name
    );
    // It commits as it goes (so that it never has much to flush or fold at once):
    // a reader sees part of it before it ends.
    let mut partial = false;
    while !importing.is_finished() {
        let n = loaded(&*store, WS).await.len();
        if n > 0 && n < ids.len() {
            partial = true;
            // Every transaction of it moves the position on, the first one included: a
            // state (or checkpoint) from before the import never passes for one after
            // a part of it.
            assert!(store.position(ws(WS)).await.unwrap().seq > 0, "{}", b.name);
        }
    }
    assert!(partial, "{}: the import was seen only whole", b.name);
    importing.await.unwrap().unwrap();
    assert!(store.position(ws(WS)).await.unwrap().seq > 1, "{}", b.name);
    // Loads decode in batches on several threads: every record once, whole.
    let all = loaded(&*store, WS).await;
    assert_eq!(all.len(), ids.len(), "{}", b.name);
    assert!(all
        .iter()
        .all(|r| r == &candidate(Uuid::parse_str(&r.id_string()).unwrap(), "imported")));
    let held: std::collections::HashSet<Uuid> = all
        .iter()
        .filter_map(|r| Uuid::parse_str(&r.id_string()).ok())
        .collect();
    assert!(ids.iter().all(|id| held.contains(id)), "{}", b.name);
    // A corrupt row among many fails the load wherever its batch falls.
    b.raw(&format!(
        "INSERT INTO records (workspace_id, kind, id, body) \
         VALUES ('{WS}', 'candidate', 'bad-candidate', '{{}}')"
    ))
    .await;
    let mut count = 0;
    match store.load_records(ws(WS), &mut |_| count += 1).await {
        Err(StoreError::Corrupt(m)) => assert!(m.contains("bad-candidate"), "{}: {m}", b.name),
        other => panic!("{}: expected Corrupt, got {other:?}", b.name),
    }
    assert!(count <= ids.len(), "{}", b.name);
    b.raw("DELETE FROM records WHERE id = 'bad-candidate'")
        .await;
    assert_eq!(loaded(&*store, WS2).await.len(), 1, "{}", b.name);
    assert!(store.workspaces().await.unwrap().len() >= 2);
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_imports_let_other_commits_through() {
    imports_let_other_commits_through(&Backend::sqlite()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_imports_let_other_commits_through() {
    if let Some(b) = Backend::postgres().await {
        imports_let_other_commits_through(&b).await;
        b.cleanup().await;
    }
}

/// PostgreSQL cuts an import into transactions of a few thousand records while no other
/// commit has run for a second (each that writes records moves the position by one), and of a
/// few hundred as soon as one has.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_imports_in_large_transactions_only_while_nothing_else_commits() {
    let Some(b) = Backend::postgres().await else {
        return;
    };
    let store = b.open().await;
    let import = |name: &str, n: usize| ChangeSet {
        workspace: Some(workspace(WS, "Northwind")),
        upserts: (0..n).map(|_| candidate(Uuid::new_v4(), name)).collect(),
        batch: Some(Uuid::new_v4()),
        ..ChangeSet::default()
    };
    let seq = async || store.position(ws(WS)).await.unwrap().seq;
    store
        .commit_import(ws(WS), &import("quiet", 6_000))
        .await
        .unwrap();
    // Two transactions of records (the mark's, which writes none, moves nothing).
    assert_eq!(seq().await, 2);
    let other = ChangeSet {
        workspace: Some(workspace(WS2, "Other")),
        upserts: vec![candidate(Uuid::new_v4(), "beside")],
        ..ChangeSet::default()
    };
    store.commit(ws(WS2), &other).await.unwrap();
    store
        .commit_import(ws(WS), &import("busy", 1_000))
        .await
        .unwrap();
    // Four of 250.
    assert_eq!(seq().await, 2 + 4);
    b.cleanup().await;
}

#[test]
fn imports_split_into_transactions_upserts_then_deletes_then_the_mark() {
    let txs: Vec<_> = import_transactions(1200, 300, || 500)
        .map(|t| (t.upserts, t.deletes, t.first, t.last))
        .collect();
    assert_eq!(
        txs,
        vec![
            (0..500, 0..0, true, false),
            (500..1000, 0..0, false, false),
            (1000..1200, 0..0, false, false),
            (0..0, 0..300, false, false),
            (0..0, 0..0, false, true),
        ]
    );
    let only_mark: Vec<_> = import_transactions(0, 0, || 500)
        .map(|t| (t.first, t.last))
        .collect();
    assert_eq!(only_mark, vec![(true, true)]);
    // Each transaction as large as the size asked for when it is cut.
    let mut sizes = [2, 5, 1].into_iter().cycle();
    let varying: Vec<_> = import_transactions(7, 3, || sizes.next().unwrap())
        .map(|t| (t.upserts, t.deletes))
        .collect();
    assert_eq!(
        varying,
        vec![
            (0..2, 0..0),
            (2..7, 0..0),
            (0..0, 0..1),
            (0..0, 1..3),
            (0..0, 0..0)
        ]
    );
}

/// A large import folds the WAL into the database file as it goes, even while other
/// workspaces commit beside it: the WAL stays a few megabytes instead of growing to
/// the size of the import (whose end would then be one long checkpoint and a long
/// truncation that every commit behind them waits for).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_imports_keep_the_wal_small() {
    let b = Backend::sqlite();
    std::fs::create_dir_all(&b.dir).unwrap();
    let db = b.dir.join("recruit.db");
    let store = Arc::new(sqlite::SqliteStore::open(&db).await.unwrap());
    let name = "x".repeat(400);
    let ids: Vec<Uuid> = (0..40_000).map(|_| Uuid::new_v4()).collect();
    let import = ChangeSet {
        workspace: Some(workspace(WS, "Northwind")),
        upserts: ids.iter().map(|id| candidate(*id, &name)).collect(),
        batch: Some(Uuid::new_v4()),
        ..ChangeSet::default()
    };
    let imported = import
        .upserts
        .iter()
        .map(|r| r.to_json().len())
        .sum::<usize>();
    let importing = {
        let store = store.clone();
        tokio::spawn(async move { store.commit_import(ws(WS), &import).await })
    };
    // Another workspace commits all along, as API writes do.
    let mut beside = 0;
    while !importing.is_finished() {
        let small = ChangeSet {
            workspace: Some(workspace(WS2, "Other")),
            upserts: vec![candidate(Uuid::new_v4(), "meanwhile")],
            ..ChangeSet::default()
        };
        store.commit(ws(WS2), &small).await.unwrap();
        beside += 1;
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    importing.await.unwrap().unwrap();
    let wal = std::fs::metadata(b.dir.join("recruit.db-wal"))
        .unwrap()
        .len();
    assert!(
        wal < 8 << 20 && (wal as usize) < imported / 4,
        "the WAL grew to {wal} bytes for an import of {imported} bytes"
    );
    assert_eq!(loaded(&*store, WS).await.len(), ids.len());
    assert_eq!(loaded(&*store, WS2).await.len(), beside);
    // The import's transactions did not sync each commit; every later one does.
    assert_eq!(
        store.writer_pragma::<i64>("synchronous").await,
        2,
        "synchronous=FULL again"
    );
    store.close().await;
}

/// An import into a store opened alone (`recruitd import`) goes in parts of many
/// records; all of it is there, its mark too, and later commits sync again.
#[tokio::test]
async fn sqlite_imports_alone_in_large_transactions() {
    let b = Backend::sqlite();
    std::fs::create_dir_all(&b.dir).unwrap();
    let db = b.dir.join("recruit.db");
    let store = sqlite::SqliteStore::open_paced(&db, super::ImportPacing::Alone)
        .await
        .unwrap();
    // A rollback journal: pages appended by the import are written once.
    assert_eq!(
        store.writer_pragma::<String>("journal_mode").await,
        "truncate"
    );
    let batch = Uuid::new_v4();
    let ids: Vec<Uuid> = (0..super::ALONE_IMPORT_TX_RECORDS + 1500)
        .map(|_| Uuid::new_v4())
        .collect();
    let import = ChangeSet {
        workspace: Some(workspace(WS, "Northwind")),
        upserts: ids.iter().map(|id| candidate(*id, "alone")).collect(),
        batch: Some(batch),
        ..ChangeSet::default()
    };
    store.commit_import(ws(WS), &import).await.unwrap();
    // Each transaction moves the position once: two, where beside a server it would
    // have taken over a hundred.
    assert_eq!(store.position(ws(WS)).await.unwrap().seq, 2);
    assert_eq!(loaded(&store, WS).await.len(), ids.len());
    assert!(store.committed(ws(WS), batch).await.unwrap());
    assert_eq!(
        store.writer_pragma::<i64>("synchronous").await,
        2,
        "synchronous=FULL again"
    );
    store.close().await;
    // A server's store is in WAL mode again, with all of it there.
    let store = sqlite::SqliteStore::open(&db).await.unwrap();
    assert_eq!(store.writer_pragma::<String>("journal_mode").await, "wal");
    assert_eq!(loaded(&store, WS).await.len(), ids.len());
    assert!(store.committed(ws(WS), batch).await.unwrap());
    store.close().await;
}

fn assert_unavailable<T: std::fmt::Debug>(r: Result<T, StoreError>, what: &str) {
    match r {
        Err(StoreError::Unavailable(_)) => {}
        other => panic!("{what}: expected Unavailable, got {other:?}"),
    }
}

#[tokio::test]
async fn closed_sqlite_store_is_unavailable() {
    let b = Backend::sqlite();
    std::fs::create_dir_all(&b.dir).unwrap();
    let store = sqlite::SqliteStore::open(&b.dir.join("recruit.db"))
        .await
        .unwrap();
    assert!(!Store::is_closed(&store));
    store.close().await;
    assert!(Store::is_closed(&store), "a failure now is the close's");
    let t = Instant::now();
    assert_unavailable(store.workspaces().await, "workspaces");
    assert_unavailable(
        store
            .commit(
                ws(WS),
                &ChangeSet {
                    upserts: one_of_each(),
                    ..Default::default()
                },
            )
            .await,
        "commit",
    );
    assert_unavailable(store.revoke_key("k").await, "revoke_key");
    assert!(t.elapsed() < Duration::from_secs(1));
}

/// Commits reach the database file itself in the background (the writer never
/// checkpoints): a copy of `recruit.db` taken without its WAL holds them.
#[tokio::test]
async fn sqlite_checkpoints_in_the_background() {
    let b = Backend::sqlite();
    std::fs::create_dir_all(&b.dir).unwrap();
    let db = b.dir.join("recruit.db");
    let store = sqlite::SqliteStore::open(&db).await.unwrap();
    let expected = sorted(one_of_each());
    store
        .commit(
            ws(WS),
            &ChangeSet {
                workspace: Some(workspace(WS, "Acme")),
                upserts: one_of_each(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let copy = b.dir.join("copy");
    std::fs::create_dir_all(&copy).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        // The database file alone, as a crash that lost the WAL would leave it.
        let _ = std::fs::remove_file(copy.join("recruit.db"));
        std::fs::copy(&db, copy.join("recruit.db")).unwrap();
        let only_file = sqlite::SqliteStore::open(&copy.join("recruit.db"))
            .await
            .unwrap();
        let got = loaded(&only_file, WS).await;
        only_file.close().await;
        if got == expected {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no checkpoint within 10 s: the file holds {} of {} records",
            got.len(),
            expected.len()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    store.close().await;
}

/// A port on which nothing listens (bound, then released).
fn dead_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

#[tokio::test]
async fn unreachable_postgres_is_unavailable_within_the_timeout() {
    let url = format!("postgres://postgres@127.0.0.1:{}/test", dead_port());
    let store = postgres::PostgresStore::connect_lazy(&url, Duration::from_secs(1)).unwrap();
    let t = Instant::now();
    assert_unavailable(store.workspaces().await, "workspaces");
    assert_unavailable(store.keys().await, "keys");
    assert_unavailable(
        store
            .load_records(ws(WS), &mut |_| panic!("no records"))
            .await,
        "load_records",
    );
    assert_unavailable(
        store
            .commit(
                ws(WS),
                &ChangeSet {
                    upserts: one_of_each(),
                    ..Default::default()
                },
            )
            .await,
        "commit",
    );
    assert!(t.elapsed() < Duration::from_secs(8), "{:?}", t.elapsed());

    // Opening it fails too, within the pool's acquire timeout, not a hang.
    let t = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    assert!(open(Some(&url), dir.path()).await.is_err());
    assert!(t.elapsed() < ACQUIRE_TIMEOUT + Duration::from_secs(3));
}

#[tokio::test]
async fn only_postgres_urls_are_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let e = open(Some("mysql://root@localhost/x"), dir.path())
        .await
        .err()
        .unwrap();
    assert!(e.to_string().contains("postgres://"), "{e}");
}

#[tokio::test]
async fn closed_postgres_store_is_unavailable() {
    let Some(b) = Backend::postgres().await else {
        return;
    };
    let store = postgres::PostgresStore::open(b.url.as_deref().unwrap())
        .await
        .unwrap();
    store.keys().await.unwrap();
    assert!(!Store::is_closed(&store));
    store.close().await;
    assert!(Store::is_closed(&store), "a failure now is the close's");
    assert_unavailable(store.keys().await, "keys");
    b.cleanup().await;
}

/// The schema can be distributed by workspace (Citus): every table's primary key and
/// unique indexes include `workspace_id`, and `migrations/postgres/citus.sql`
/// distributes every table by it, co-located with `workspaces`.
#[tokio::test]
async fn postgres_tables_are_keyed_by_workspace_for_distribution() {
    let Some(b) = Backend::postgres().await else {
        return;
    };
    let url = b.url.clone().unwrap();
    let schema = testing::schema_of(&url).unwrap().to_owned();
    let store = b.open().await;
    store.keys().await.unwrap();
    use sqlx::Connection;
    let mut c = sqlx::PgConnection::connect(&url).await.unwrap();
    // (table, index, whether its columns include workspace_id) of every unique index.
    let unique: Vec<(String, String, bool)> = sqlx::query_as(
        "SELECT t.relname::text, i.relname::text, \
                bool_or(a.attname = 'workspace_id') \
         FROM pg_index x \
         JOIN pg_class t ON t.oid = x.indrelid \
         JOIN pg_class i ON i.oid = x.indexrelid \
         JOIN pg_namespace n ON n.oid = t.relnamespace \
         JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = ANY(x.indkey) \
         WHERE n.nspname = $1 AND x.indisunique AND t.relname <> '_sqlx_migrations' \
         GROUP BY 1, 2 ORDER BY 1, 2",
    )
    .bind(&schema)
    .fetch_all(&mut c)
    .await
    .unwrap();
    let citus = include_str!("../../migrations/postgres/citus.sql");
    // Tables of no workspace (the cluster's nodes, their public keys): copied whole to
    // every worker.
    let reference: std::collections::BTreeSet<&str> = citus
        .lines()
        .filter_map(|l| l.strip_prefix("SELECT create_reference_table('"))
        .map(|l| l.split_once('\'').unwrap().0)
        .collect();
    assert_eq!(reference, ["cluster_nodes", "signing_keys"].into());
    let tables: std::collections::BTreeSet<&str> = unique
        .iter()
        .map(|(t, _, _)| t.as_str())
        .filter(|t| !reference.contains(t))
        .collect();
    assert_eq!(
        tables.len(),
        13,
        "every table has a primary key: {unique:?}"
    );
    for (table, index, by_workspace) in &unique {
        assert!(
            *by_workspace || reference.contains(table.as_str()),
            "{table}: unique index {index} lacks workspace_id"
        );
    }
    let distributed: std::collections::BTreeSet<&str> = citus
        .lines()
        .filter_map(|l| l.strip_prefix("SELECT create_distributed_table('"))
        .map(|l| {
            let (table, rest) = l.split_once('\'').unwrap();
            assert!(
                rest.starts_with(", 'workspace_id'"),
                "{table} is distributed by another column"
            );
            assert!(
                table == "workspaces" || rest.contains("colocate_with => 'workspaces'"),
                "{table} is not co-located"
            );
            table
        })
        .collect();
    assert_eq!(distributed, tables);
    store.close().await;
    b.cleanup().await;
}

#[tokio::test]
async fn fresh_postgres_url_selects_its_own_empty_schema() {
    let Some(b) = Backend::postgres().await else {
        return;
    };
    let url = b.url.clone().unwrap();
    let schema = testing::schema_of(&url).unwrap().to_owned();
    assert!(schema.starts_with(testing::SCHEMA_PREFIX));
    use sqlx::Connection;
    let mut c = sqlx::PgConnection::connect(&url).await.unwrap();
    let current: String = sqlx::query_scalar("SELECT current_schema()::text")
        .fetch_one(&mut c)
        .await
        .unwrap();
    assert_eq!(current, schema);
    let app: String = sqlx::query_scalar("SELECT current_setting('application_name')")
        .fetch_one(&mut c)
        .await
        .unwrap();
    assert_eq!(app, schema);
    let store = b.open().await;
    store.keys().await.unwrap();
    // Every table of the migrations (and sqlx's own) landed in the test schema.
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT table_name::text FROM information_schema.tables \
         WHERE table_schema = $1 ORDER BY 1",
    )
    .bind(&schema)
    .fetch_all(&mut c)
    .await
    .unwrap();
    assert_eq!(
        tables,
        [
            "_sqlx_migrations",
            "api_keys",
            "blobs",
            "change_log",
            "cluster_holdings",
            "cluster_nodes",
            "commit_marks",
            "commit_positions",
            "key_budgets",
            "records",
            "signing_keys",
            "tombstones",
            "webhook_attempts",
            "webhook_endpoints",
            "workspace_leases",
            "workspaces"
        ]
    );
    // A second fresh URL is another, empty schema.
    let other = testing::fresh_postgres_url(&std::env::var("RECRUITD_TEST_DATABASE_URL").unwrap())
        .await
        .unwrap();
    assert_ne!(other, url);
    let mut c2 = sqlx::PgConnection::connect(&other).await.unwrap();
    let n: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()",
    )
    .fetch_one(&mut c2)
    .await
    .unwrap();
    assert_eq!(n, 0);
    let other_schema = testing::schema_of(&other).unwrap();
    sqlx::query(&format!("DROP SCHEMA \"{other_schema}\" CASCADE"))
        .execute(&mut c)
        .await
        .unwrap();
    b.cleanup().await;
}

#[tokio::test]
async fn sweep_drops_old_unused_test_schemas_only() {
    let Ok(base) = std::env::var("RECRUITD_TEST_DATABASE_URL") else {
        println!("RECRUITD_TEST_DATABASE_URL is not set: PostgreSQL variant skipped");
        return;
    };
    use sqlx::Connection;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let name = |secs: u64| {
        format!(
            "{}{secs}_{}",
            testing::SCHEMA_PREFIX,
            Uuid::new_v4().simple()
        )
    };
    let (old_unused, old_in_use, young) = (name(1000), name(1000), name(now));
    let mut c = sqlx::PgConnection::connect(&base).await.unwrap();
    for s in [&old_unused, &old_in_use, &young] {
        sqlx::query(&format!("CREATE SCHEMA \"{s}\""))
            .execute(&mut c)
            .await
            .unwrap();
    }
    let sep = if base.contains('?') { '&' } else { '?' };
    let user = sqlx::PgConnection::connect(&format!("{base}{sep}application_name={old_in_use}"))
        .await
        .unwrap();
    testing::sweep_leftovers(&mut c, now).await.unwrap();
    let left: Vec<String> = sqlx::query_scalar(
        "SELECT nspname::text FROM pg_namespace WHERE nspname::text = ANY($1) ORDER BY 1",
    )
    .bind(vec![old_unused.clone(), old_in_use.clone(), young.clone()])
    .fetch_all(&mut c)
    .await
    .unwrap();
    let mut want = vec![old_in_use.clone(), young.clone()];
    want.sort();
    assert_eq!(left, want);
    user.close().await.unwrap();
    for s in [&old_in_use, &young] {
        sqlx::query(&format!("DROP SCHEMA \"{s}\""))
            .execute(&mut c)
            .await
            .unwrap();
    }
}

/// Not a test: measures a bulk import. Run by hand:
/// `cargo test --release --lib store::tests::bulk_import_speed -- --ignored --nocapture`
/// (PostgreSQL too when `RECRUITD_TEST_DATABASE_URL` is set; row count from
/// `RECRUITD_BENCH_ROWS`, default 1,000,000; one backend only with
/// `RECRUITD_BENCH_BACKENDS`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn bulk_import_speed() {
    let n: usize = std::env::var("RECRUITD_BENCH_ROWS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let t = Instant::now();
    let upserts: Vec<Record> = (0..n)
        .map(|i| {
            let id = Uuid::new_v4();
            rec(
                RecordKind::Candidate,
                json!({"id": id, "person_id": id, "job_id": null,
                       "name": format!("Person Number{i}"),
                       "email": format!("person.number{i}@mail.example"),
                       "phone": format!("07700 9{:05}", i % 100_000),
                       "job_title": "Platform Engineer", "company": "Contoso",
                       "location": "Leeds", "created_at": T, "updated_at": T}),
            )
        })
        .collect();
    println!("built {n} records in {:?}", t.elapsed());
    // The client's share of a commit: what serialising the records alone costs.
    let t = Instant::now();
    let bytes: usize = upserts
        .iter()
        .map(|r| r.to_json().len() + r.id_string().len())
        .sum();
    println!(
        "serialising them (~{} bytes of JSON each) takes {:?}",
        bytes / n.max(1),
        t.elapsed()
    );
    let changes = ChangeSet {
        workspace: Some(workspace(WS, "bench")),
        upserts,
        ..Default::default()
    };
    // `RECRUITD_BENCH_BACKENDS=postgres` (or `sqlite`) measures just one.
    let only = std::env::var("RECRUITD_BENCH_BACKENDS").unwrap_or_default();
    let mut backends = vec![];
    if !only.contains("postgres") || only.contains("sqlite") {
        backends.push(Backend::sqlite());
    }
    if !only.contains("sqlite") || only.contains("postgres") {
        backends.extend(Backend::postgres().await);
    }
    // `RECRUITD_BENCH_ONCE=1`: only the first import and the load (for big runs).
    let once = std::env::var_os("RECRUITD_BENCH_ONCE").is_some();
    for b in backends {
        let store = b.open().await;
        let t = Instant::now();
        store.commit(ws(WS), &changes).await.unwrap();
        println!("{}: commit of {n} new records: {:?}", b.name, t.elapsed());
        if !once {
            let t = Instant::now();
            store.commit(ws(WS), &changes).await.unwrap();
            println!("{}: the same again (no change): {:?}", b.name, t.elapsed());
            let mut changed = changes.clone();
            for r in &mut changed.upserts {
                if let Record::Candidate(c) = r {
                    c.name = Some("Renamed Person".into());
                }
            }
            let t = Instant::now();
            store.commit(ws(WS), &changed).await.unwrap();
            println!("{}: every record changed: {:?}", b.name, t.elapsed());
        }
        let t = Instant::now();
        let mut count = 0usize;
        store
            .load_records(ws(WS), &mut |_| count += 1)
            .await
            .unwrap();
        assert_eq!(count, n);
        println!("{}: load of {n} records: {:?}", b.name, t.elapsed());
        drop(store);
        b.cleanup().await;
    }
}

/// The mode bits of a path.
#[cfg(unix)]
fn mode(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// The data dir, the database and its log, and the blobs are private to the service's
/// user whatever the process's umask, also in a data dir made before the rule (its
/// world-readable files are narrowed when the store opens).
#[cfg(unix)]
#[tokio::test]
async fn the_data_dir_and_its_files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let b = Backend::sqlite();
    let store = open(None, &b.dir).await.unwrap();
    store
        .commit(
            ws(WS),
            &ChangeSet {
                workspace: Some(workspace(WS, "Northwind")),
                upserts: one_of_each(),
                ..ChangeSet::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(mode(&b.dir), 0o700);
    assert_eq!(mode(&b.dir.join("recruit.db")), 0o600);
    assert_eq!(mode(&b.dir.join("recruit.db-wal")), 0o600);
    use actors::store::BlobStore;
    let blobs = blobs::FileBlobs::new(b.dir.join("blobs"));
    blobs.put(ws(WS), "cv:one", b"one").unwrap();
    let many: Vec<(String, Vec<u8>)> = (0..100)
        .map(|i| (format!("cv:{i}"), vec![b'x'; i]))
        .collect();
    blobs.put_many(ws(WS), &many).unwrap();
    for id in ["cv:one", "cv:0", "cv:99"] {
        let path = blobs.path_of(ws(WS), id);
        assert_eq!(mode(&path), 0o600, "{id}");
        assert_eq!(mode(path.parent().unwrap()), 0o700, "{id}");
    }
    store.close().await;

    // An older data dir, readable by everyone: narrowed on the next open.
    for path in [b.dir.clone(), b.dir.join("recruit.db")] {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let store = open(None, &b.dir).await.unwrap();
    assert_eq!(mode(&b.dir), 0o700);
    assert_eq!(mode(&b.dir.join("recruit.db")), 0o600);
    store.close().await;
}

/// With several servers on one PostgreSQL store, only the holder of a workspace's
/// writer lease commits it, at the epoch it holds, while its node's row is alive; a
/// refused commit writes nothing (see `fence`). Leases are taken through the cluster's
/// port (`cluster`): a lease held by a live node is not free, one of a node whose row
/// passed or whose session ended is, and a take skips a lease a commit still holds.
#[tokio::test]
async fn postgres_commits_need_the_writer_lease() {
    use crate::cluster::port::{ClusterStore, Me};
    use sqlx::Connection;
    let Some(b) = Backend::postgres().await else {
        return;
    };
    let url = b.url.clone().unwrap();
    let lease = Duration::from_secs(5);
    let me = |name: &str| Me {
        name: name.into(),
        advertise_url: format!("https://{name}.internal:8443"),
        incarnation: format!("{name}-1"),
        cert_sha256: String::new(),
        secret_sha256: String::new(),
    };
    let (me_a, me_b) = (me("a"), me("b"));
    let fences_a = fence::Fences::new("a".into(), "a-1".into(), lease);
    let fences_b = fence::Fences::new("b".into(), "b-1".into(), lease);
    let a = postgres::PostgresStore::open(&url)
        .await
        .unwrap()
        .fenced(fences_a.clone());
    let other = postgres::PostgresStore::open(&url)
        .await
        .unwrap()
        .fenced(fences_b.clone());
    let cluster_a = cluster::PgCluster::connect(&url).await.unwrap();
    let cluster_b = cluster::PgCluster::connect(&url).await.unwrap();
    for (c, m, f) in [
        (&cluster_a, &me_a, &fences_a),
        (&cluster_b, &me_b, &fences_b),
    ] {
        let began = std::time::Instant::now();
        assert!(c.take_name(m, 5000).await.unwrap());
        f.renewed(began);
    }
    let live: Vec<String> = cluster_a
        .live_nodes()
        .await
        .unwrap()
        .into_iter()
        .map(|n| n.name)
        .collect();
    assert_eq!(live, ["a", "b"]);
    let w = ws(WS);
    let named = |name: &str| ChangeSet {
        workspace: Some(workspace(WS, name)),
        upserts: vec![candidate(Uuid::new_v4(), name)],
        batch: Some(Uuid::new_v4()),
        ..Default::default()
    };
    let refused = |r: Result<(), StoreError>, what: &str| match r {
        Err(StoreError::Fenced(m)) => assert!(m.contains(WS), "{what}: {m}"),
        other => panic!("{what}: expected a refusal, got {other:?}"),
    };
    let mut sql = sqlx::PgConnection::connect(&url).await.unwrap();

    // No lease taken: nobody commits the workspace.
    refused(a.commit(w, &named("untaken")).await, "no lease yet");
    let (since, horizon) = {
        let s = cluster_b.leases_since(0).await.unwrap();
        (s.rows.len(), s.next)
    };
    assert_eq!(since, 0);

    // a takes it at epoch 1 and commits; b finds it held.
    let (taken, _) = cluster_a.take(&me_a, &[w]).await.unwrap();
    assert_eq!(taken, vec![(w, 1)]);
    fences_a.hold(w, 1);
    a.commit(w, &named("first")).await.unwrap();
    let at = a.position(w).await.unwrap();
    assert_eq!(cluster_b.take(&me_b, &[w]).await.unwrap().0, vec![]);
    // b reads the change once, then nothing more while nothing changes.
    let changed = cluster_b.leases_since(horizon).await.unwrap();
    assert_eq!(changed.rows.len(), 1, "{:?}", changed.rows);
    assert_eq!(
        (changed.rows[0].holder.as_str(), changed.rows[0].epoch),
        ("a", 1)
    );
    assert!(cluster_b
        .leases_since(changed.next)
        .await
        .unwrap()
        .rows
        .is_empty());
    let positions = cluster_b.positions_since(0).await.unwrap();
    assert_eq!(positions.rows, vec![(w, at.seq)]);
    assert!(cluster_b
        .positions_since(positions.next)
        .await
        .unwrap()
        .rows
        .is_empty());

    // Another server's commits are refused, with nothing written.
    refused(other.commit(w, &named("second")).await, "no lease");
    assert_eq!(other.position(w).await.unwrap(), at);
    assert_eq!(loaded(&a, WS).await.len(), 1);

    // a's row passes: its own commits are refused, and b takes the lease at epoch 2.
    sqlx::query("UPDATE cluster_nodes SET lease_until = now() - interval '1 ms' WHERE name = 'a'")
        .execute(&mut sql)
        .await
        .unwrap();
    refused(a.commit(w, &named("late")).await, "passed lease");
    assert_eq!(cluster_b.take(&me_b, &[w]).await.unwrap().0, vec![(w, 2)]);
    fences_b.hold(w, 2);
    other.commit(w, &named("second")).await.unwrap();
    // Renewed again, a's old epoch stays refused.
    assert!(cluster_a.renew(&me_a, 5000).await.unwrap());
    refused(a.commit(w, &named("stale")).await, "old epoch");
    // Nor does it write or remove attachment bytes, or prune the log: only the writer.
    let bytes: &[u8] = b"cv";
    refused(
        a.put_blobs(w, &[("o1".into(), bytes)]).await,
        "bytes written",
    );
    other.put_blobs(w, &[("o1".into(), bytes)]).await.unwrap();
    refused(
        a.delete_blobs(w, &["o1".into()]).await.map(drop),
        "bytes removed",
    );
    assert_eq!(a.blob(w, "o1").await.unwrap().as_deref(), Some(bytes));
    match a.prune_changes(w, actors::store::now_ms() + 1).await {
        Err(StoreError::Fenced(_)) => {}
        other => panic!("a prune by a server without the lease: {other:?}"),
    }
    // Nor does it move a webhook endpoint's acknowledged point.
    let put = [actors::store::WebhookWrite::Put {
        id: "whe_1".into(),
        body: "{}".into(),
    }];
    refused(
        a.webhook_rows().unwrap().write(w, &put).await,
        "a webhook row written",
    );
    other.webhook_rows().unwrap().write(w, &put).await.unwrap();
    assert_eq!(
        other
            .read_changes(
                w,
                LogWindow {
                    after: (0, 0),
                    upto: u64::MAX,
                    max_parts: 10
                }
            )
            .await
            .unwrap()
            .pruned_through,
        0,
        "nothing pruned"
    );
    other
        .prune_changes(w, actors::store::now_ms() + 1)
        .await
        .unwrap();
    // Keys are no workspace's records: any server commits them.
    a.commit(
        w,
        &ChangeSet {
            keys: vec![key("key_any_server", Scopes::read_only(), None)],
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let names: Vec<String> = loaded(&a, WS)
        .await
        .iter()
        .map(|r| {
            let body: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
            body["name"].as_str().unwrap_or_default().to_string()
        })
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(
        !names
            .iter()
            .any(|n| n == "late" || n == "stale" || n == "untaken"),
        "{names:?}"
    );

    // A commit that has checked its lease holds it until it ends: a take skips it.
    let mut committing = sqlx::PgConnection::connect(&url).await.unwrap();
    let mut tx = committing.begin().await.unwrap();
    let checked: Option<i64> =
        sqlx::query_scalar("SELECT epoch FROM workspace_leases WHERE workspace_id = $1 FOR SHARE")
            .bind(WS)
            .fetch_optional(&mut *tx)
            .await
            .unwrap();
    assert_eq!(checked, Some(2));
    // b's node dies: its session ends with it.
    let pid: i32 = sqlx::query_scalar("SELECT session_pid FROM cluster_nodes WHERE name = 'b'")
        .fetch_one(&mut sql)
        .await
        .unwrap();
    sqlx::query("SELECT pg_terminate_backend($1)")
        .bind(pid)
        .execute(&mut sql)
        .await
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while cluster_a
        .live_nodes()
        .await
        .unwrap()
        .iter()
        .any(|n| n.name == "b")
    {
        assert!(
            std::time::Instant::now() < deadline,
            "b's death is known at once"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        cluster_a.take(&me_a, &[w]).await.unwrap().0,
        vec![],
        "skipped while the commit holds it"
    );
    tx.rollback().await.unwrap();
    assert_eq!(cluster_a.take(&me_a, &[w]).await.unwrap().0, vec![(w, 3)]);
    // Given up, the lease is free at once.
    assert_eq!(cluster_a.release(&me_a, &[w]).await.unwrap(), vec![w]);
    assert!(
        cluster_b.renew(&me_b, 5000).await.unwrap(),
        "b's renewal names a new session"
    );
    assert_eq!(cluster_b.take(&me_b, &[w]).await.unwrap().0, vec![(w, 4)]);
    b.cleanup().await;
}
