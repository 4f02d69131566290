use super::*;
use actors::changes::feed::feed_page;
use actors::model::{Record, Workspace};
use actors::store::{ChangeSet, MemoryStore};
use serde_json::{json, Value};

const STAMP: &str = "2026-11-01T09:00:00.000Z";

/// A workspace with one company and `notes` notes on it, each `html` bytes of body,
/// committed in one transaction (so that each is logged), and the store it is in.
async fn workspace(notes: usize, html: usize) -> (Arc<WorkspaceState>, Arc<MemoryStore>) {
    let mut ws = WorkspaceState::new(Workspace {
        id: Uuid::new_v4(),
        name: None,
        default_region: None,
    });
    let company = Uuid::new_v4();
    let mut upserts = vec![Record::Company(
        serde_json::from_value(json!({
            "id": company, "name": "Acme", "created_at": STAMP, "updated_at": STAMP
        }))
        .unwrap(),
    )];
    for i in 0..notes {
        upserts.push(Record::Note(
            serde_json::from_value(json!({
                "id": Uuid::new_v4(), "parent_type": "company", "parent_id": company,
                "title": format!("note {i}"), "body_html": "x".repeat(html),
                "created_at": STAMP, "updated_at": STAMP
            }))
            .unwrap(),
        ));
    }
    for r in &upserts {
        ws.put(r.clone());
    }
    let store = MemoryStore::new();
    let changes = ChangeSet {
        upserts,
        ..ChangeSet::default()
    };
    store.commit(ws.id(), &changes).await.unwrap();
    ws.position = store.position(ws.id()).await.unwrap().seq;
    (Arc::new(ws), store)
}

fn token(p: FeedPoint) -> String {
    format!("{}.{}.{}", p.position, p.part, p.index)
}

/// Where batches are read from: `store`, with a part cache and pages of their own.
fn feed<'a>(store: &'a MemoryStore, cache: &'a PartCache, pages: &'a Pages) -> Feed<'a> {
    Feed {
        store,
        cache,
        pages,
    }
}

/// Every batch from the start, in turn.
async fn batches(ws: &Arc<WorkspaceState>, store: &MemoryStore) -> Vec<Batch> {
    let (cache, pages) = (PartCache::default(), Pages::default());
    let envelope = Envelope {
        workspace: ws.id(),
        endpoint_id: "wh_1",
        token: &token,
    };
    let mut since = FeedPoint::at(0);
    let mut out = Vec::new();
    let feed = feed(store, &cache, &pages);
    while let Next::Batch(b) = next_batch(feed, ws, since, &Entity::ALL, &envelope)
        .await
        .unwrap()
    {
        since = b.next;
        out.push(b);
    }
    out
}

/// The ids a batch carries, in order.
fn ids(b: &Batch) -> Vec<String> {
    let v: Value = serde_json::from_slice(&b.body).unwrap();
    v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn a_batch_is_the_feeds_answer_in_the_contracts_envelope() {
    let (ws, store) = workspace(3, 10).await;
    let all = batches(&ws, &store).await;
    assert_eq!(all.len(), 1);
    let b = &all[0];
    assert_eq!(b.changes, 4);
    let v: Value = serde_json::from_slice(&b.body).unwrap();
    assert_eq!(v["type"], "changes");
    assert_eq!(v["workspace_id"], ws.id().to_string());
    assert_eq!(v["endpoint_id"], "wh_1");
    assert_eq!(v["since"], token(FeedPoint::at(0)));
    assert_eq!(v["next_since"], token(b.next));
    // `data` is byte for byte what the feed answers from that point.
    let page = feed_page(
        &*store,
        &PartCache::default(),
        &ws,
        FeedPoint::at(0),
        &Entity::ALL,
        MOST_CHANGES,
        Vec::new(),
    )
    .await
    .unwrap();
    let data = serde_json::to_vec(&v["data"]).unwrap();
    let fed: Value = serde_json::from_slice(&page.data).unwrap();
    assert_eq!(data, serde_json::to_vec(&fed).unwrap());
    assert!(String::from_utf8(b.body.clone())
        .unwrap()
        .ends_with(&format!(
            ",\"data\":{}}}",
            String::from_utf8(page.data).unwrap()
        )));
    assert_eq!(v["data"][1]["entity"], "notes");
    assert_eq!(v["data"][1]["op"], "upsert");
}

#[tokio::test]
async fn batches_hold_at_most_500_changes_and_continue_without_a_gap() {
    let (ws, store) = workspace(1200, 10).await;
    let all = batches(&ws, &store).await;
    let counts: Vec<usize> = all.iter().map(|b| b.changes).collect();
    assert_eq!(counts, vec![500, 500, 201]);
    let seen: Vec<String> = all.iter().flat_map(ids).collect();
    let unique: std::collections::HashSet<&String> = seen.iter().collect();
    assert_eq!(seen.len(), 1201);
    assert_eq!(unique.len(), 1201);
    for pair in all.windows(2) {
        assert_eq!(pair[0].next, pair[1].since);
    }
}

#[tokio::test]
async fn a_larger_page_is_cut_to_one_mebibyte_and_the_rest_follows() {
    // 400 notes of 8 KiB: about 3.3 MB in all.
    let (ws, store) = workspace(400, 8 * 1024).await;
    let all = batches(&ws, &store).await;
    assert!(all.len() >= 4, "{} batches", all.len());
    for b in &all {
        assert!(b.body.len() <= MOST_BYTES, "{} bytes", b.body.len());
        assert!(b.changes < MOST_CHANGES);
    }
    let seen: Vec<String> = all.iter().flat_map(ids).collect();
    assert_eq!(seen.len(), 401);
    assert_eq!(
        seen.iter().collect::<std::collections::HashSet<_>>().len(),
        401
    );
}

#[tokio::test]
async fn a_single_change_larger_than_the_budget_goes_alone() {
    let (ws, store) = workspace(2, MOST_BYTES + 10).await;
    let all = batches(&ws, &store).await;
    let counts: Vec<usize> = all.iter().map(|b| b.changes).collect();
    assert_eq!(counts.iter().sum::<usize>(), 3);
    assert!(all
        .iter()
        .any(|b| b.changes == 1 && b.body.len() > MOST_BYTES));
}

#[tokio::test]
async fn an_endpoint_whose_entities_have_no_change_moves_to_where_the_feed_looked() {
    let (ws, store) = workspace(3, 10).await;
    let envelope = Envelope {
        workspace: ws.id(),
        endpoint_id: "wh_1",
        token: &token,
    };
    let (cache, pages) = (PartCache::default(), Pages::default());
    let feed = feed(&store, &cache, &pages);
    let tasks = [Entity::Tasks];
    let next = next_batch(feed, &ws, FeedPoint::at(0), &tasks, &envelope)
        .await
        .unwrap();
    let Next::Nothing { seen } = next else {
        panic!("a batch of tasks from a log of notes: {next:?}");
    };
    assert_eq!(seen, FeedPoint::at(ws.position));
    // From there, nothing is waiting for anyone.
    let all = next_batch(feed, &ws, seen, &Entity::ALL, &envelope)
        .await
        .unwrap();
    assert!(matches!(all, Next::Nothing { seen } if seen == FeedPoint::at(ws.position)));
}

/// `data` of a batch's body: what follows `"data":`, less the closing brace.
fn data_of(b: &Batch) -> &[u8] {
    let at = b.body.windows(8).position(|w| w == b"\"data\":[").unwrap() + 7;
    &b.body[at..b.body.len() - 1]
}

/// The feed's own answer from `since`, as `GET /v1/changes` makes it.
async fn fed(store: &MemoryStore, ws: &WorkspaceState, since: FeedPoint, limit: usize) -> Vec<u8> {
    feed_page(
        store,
        &PartCache::default(),
        ws,
        since,
        &Entity::ALL,
        limit,
        Vec::new(),
    )
    .await
    .unwrap()
    .data
}

#[tokio::test]
async fn endpoints_at_one_point_share_one_render_each_in_its_own_envelope() {
    let (ws, store) = workspace(1200, 10).await;
    let (cache, pages) = (PartCache::default(), Pages::default());
    let feed = feed(&store, &cache, &pages);
    let ids = ["whe_1", "whe_2", "whe_3"];
    let mut since = FeedPoint::at(0);
    let mut made = 0;
    loop {
        // Three endpoints at once, as three tasks woken by one commit ask.
        let ws = &ws;
        let asks = ids.map(|id| async move {
            let envelope = Envelope {
                workspace: ws.id(),
                endpoint_id: id,
                token: &token,
            };
            next_batch(feed, ws, since, &Entity::ALL, &envelope)
                .await
                .unwrap()
        });
        let [a, b, c] = futures_util::future::join_all(asks)
            .await
            .try_into()
            .unwrap();
        let (Next::Batch(a), Next::Batch(b), Next::Batch(c)) = (a, b, c) else {
            break;
        };
        made += 1;
        assert_eq!(pages.renders(), made, "one render for the three");
        for (batch, id) in [(&a, ids[0]), (&b, ids[1]), (&c, ids[2])] {
            let v: Value = serde_json::from_slice(&batch.body).unwrap();
            assert_eq!(v["endpoint_id"], id);
            assert_eq!(v["since"], token(since));
            assert_eq!(batch.next, a.next);
            assert_eq!(data_of(batch), fed(&store, ws, since, MOST_CHANGES).await);
        }
        since = a.next;
    }
    assert_eq!(made, 3);
}

#[tokio::test]
async fn a_page_is_taken_only_where_the_endpoint_could_have_had_it() {
    let (ws, store) = workspace(1200, 10).await;
    let (cache, pages) = (PartCache::default(), Pages::default());
    let feed = feed(&store, &cache, &pages);
    let envelope = Envelope {
        workspace: ws.id(),
        endpoint_id: "whe_1",
        token: &token,
    };
    let batch = |ws: Arc<WorkspaceState>, since: FeedPoint, entities: &'static [Entity]| {
        let envelope = &envelope;
        async move {
            match next_batch(feed, &ws, since, entities, envelope)
                .await
                .unwrap()
            {
                Next::Batch(b) => b,
                Next::Nothing { .. } => panic!("a batch"),
            }
        }
    };
    let first = batch(ws.clone(), FeedPoint::at(0), &Entity::ALL).await;
    assert_eq!(pages.renders(), 1);
    // Another filter is another page.
    batch(ws.clone(), FeedPoint::at(0), &[Entity::Notes]).await;
    assert_eq!(pages.renders(), 2);

    // A note more, committed and published.
    let mut later = (*ws).clone();
    let note = Record::Note(
        serde_json::from_value(json!({
            "id": Uuid::new_v4(), "parent_type": "company",
            "parent_id": Uuid::new_v4(), "body_html": "later",
            "created_at": STAMP, "updated_at": STAMP
        }))
        .unwrap(),
    );
    later.put(note.clone());
    let changes = ChangeSet {
        upserts: vec![note],
        ..ChangeSet::default()
    };
    store.commit(later.id(), &changes).await.unwrap();
    later.position = store.position(later.id()).await.unwrap().seq;
    let later = Arc::new(later);
    // A page of 500 with more after it is the log's first 500 after the point in any
    // later state too: taken, as the earlier state showed them.
    let again = batch(later.clone(), FeedPoint::at(0), &Entity::ALL).await;
    assert_eq!(pages.renders(), 2);
    assert_eq!((again.next, data_of(&again)), (first.next, data_of(&first)));
    // The last page ended at its state's head: a later state has more for the
    // endpoint, and makes its own.
    let mut since = first.next;
    let mut last = None;
    while since != FeedPoint::at(ws.position) {
        let b = batch(ws.clone(), since, &Entity::ALL).await;
        since = b.next;
        last = Some(b);
    }
    let (last, renders) = (last.unwrap(), pages.renders());
    let fresh = batch(later.clone(), last.since, &Entity::ALL).await;
    assert_eq!(pages.renders(), renders + 1);
    assert_eq!(fresh.next, FeedPoint::at(later.position));
    assert_eq!(fresh.changes, last.changes + 1);
    assert_eq!(
        data_of(&fresh),
        fed(&store, &later, last.since, MOST_CHANGES).await
    );
}
