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

/// Every batch from the start, in turn.
async fn batches(ws: &Arc<WorkspaceState>, store: &MemoryStore) -> Vec<Batch> {
    let cache = PartCache::default();
    let envelope = Envelope {
        workspace: ws.id(),
        endpoint_id: "wh_1",
        token: &token,
    };
    let mut since = FeedPoint::at(0);
    let mut out = Vec::new();
    while let Next::Batch(b) = next_batch(store, &cache, ws, since, &Entity::ALL, &envelope)
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
    let cache = PartCache::default();
    let tasks = [Entity::Tasks];
    let next = next_batch(&*store, &cache, &ws, FeedPoint::at(0), &tasks, &envelope)
        .await
        .unwrap();
    let Next::Nothing { seen } = next else {
        panic!("a batch of tasks from a log of notes: {next:?}");
    };
    assert_eq!(seen, FeedPoint::at(ws.position));
    // From there, nothing is waiting for anyone.
    let all = next_batch(&*store, &cache, &ws, seen, &Entity::ALL, &envelope)
        .await
        .unwrap();
    assert!(matches!(all, Next::Nothing { seen } if seen == FeedPoint::at(ws.position)));
}
