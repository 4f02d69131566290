//! Read-path micro-benchmarks: a 500-record list page from the in-memory state, written
//! directly (as `GET /v1/{entity}` does) and through serde (the reference); an answer of
//! the change feed of 500 candidate changes (`GET /v1/changes`: read from the log, each
//! record looked up by id and written as the list writes it), from the start of a log
//! part (a store read) and from inside one (the part cache); and the ordered-set range
//! query under the list against a std `BTreeSet` baseline; and a list cursor's seal:
//! made (once per page) by a node that may have peers (PostgreSQL) and by one alone for
//! good (SQLite), checked by the node that made it, and by another node
//! (`actors::signing`).

use actors::model::View;
use actors::rendered::Rendered;
use actors::snapshot::{parse_slice, plan_import, NoKeys};
use actors::state::{MinKey, Table};
use actors::time::Stamp;
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use std::collections::BTreeSet;
use uuid::Uuid;

fn state(people: usize) -> actors::state::WorkspaceState {
    let bytes =
        recruitd::generate::snapshot_bytes(&recruitd::generate::GenerateOptions::new(people, 3));
    let snap = parse_slice(&bytes).expect("generated snapshot parses");
    plan_import(None, snap, &NoKeys, true)
        .expect("generated snapshot is valid")
        .next
        .expect("asked for the next state")
}

/// One page of `table` (500 records after the first 1,000) as JSON.
fn page<'s, K, V: ?Sized, T>(
    table: &'s Table<K, V>,
    view: impl Fn(&'s V) -> T,
    written: bool,
    buf: &mut Vec<u8>,
) where
    K: std::hash::Hash + Eq + Ord + Clone + MinKey + 'static,
    T: Rendered,
{
    for (_, _, row) in table.rows_from(None, None).skip(1000).take(500) {
        if written {
            row.write_json(&view, buf).unwrap();
        } else {
            serde_json::to_writer(&mut *buf, &view(&row.rec)).unwrap();
        }
    }
}

fn page_render(c: &mut Criterion) {
    let ws = state(10_000);
    let mut g = c.benchmark_group("list_page");
    g.throughput(criterion::Throughput::Elements(500));
    let mut buf = Vec::with_capacity(1 << 20);
    for (name, written) in [("serde", false), ("written", true)] {
        g.bench_function(BenchmarkId::new("candidates_500", name), |b| {
            b.iter(|| {
                buf.clear();
                page(&ws.candidates, |r| View::new(&ws, r), written, &mut buf);
                black_box(buf.len())
            })
        });
        g.bench_function(BenchmarkId::new("notes_500", name), |b| {
            b.iter(|| {
                buf.clear();
                page(&ws.notes, |r| View::new(&ws, r), written, &mut buf);
                black_box(buf.len())
            })
        });
    }
    g.finish();
}

fn feed_answer(c: &mut Criterion) {
    use actors::changes::{
        feed::{feed_page, PartCache},
        tokens::FeedPoint,
    };
    use actors::entries::{Change, LoggedId};
    use actors::model::Entity;
    use actors::store::{ChangeSet, MemoryStore, Store};
    let mut ws = state(10_000);
    let store = MemoryStore::new();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    // One transaction logging every candidate record.
    let logged = ChangeSet {
        derived: ws
            .candidates
            .iter_from(None, None)
            .map(|(_, id, _)| Change {
                entity: Entity::Candidates,
                id: LoggedId::Uuid(*id),
            })
            .collect(),
        ..ChangeSet::default()
    };
    ws.position = rt.block_on(async {
        store.commit(ws.id(), &logged).await.unwrap();
        store.position(ws.id()).await.unwrap().seq
    });
    let cache = PartCache::default();
    let all = Entity::ALL;
    let answer = |since: FeedPoint| {
        rt.block_on(feed_page(
            &*store,
            &cache,
            &ws,
            since,
            &all,
            500,
            Vec::new(),
        ))
        .unwrap()
    };
    let first = answer(FeedPoint::at(0));
    assert_eq!(first.changes, 500);
    let inside = first.next;
    let mut g = c.benchmark_group("feed_answer");
    g.throughput(criterion::Throughput::Elements(500));
    g.bench_function("candidates_500/part_start", |b| {
        b.iter(|| black_box(answer(FeedPoint::at(0)).data.len()))
    });
    g.bench_function("candidates_500/inside_a_part", |b| {
        b.iter(|| black_box(answer(inside).data.len()))
    });
    g.finish();
}

fn ordered_range(c: &mut Criterion) {
    let ws = state(10_000);
    let keys: Vec<(Stamp, Uuid)> = ws
        .candidates
        .iter_from(None, None)
        .map(|(s, k, _)| (s, *k))
        .collect();
    let std_set: BTreeSet<(Stamp, Uuid)> = keys.iter().copied().collect();
    let mid = keys[keys.len() / 2];
    let mut g = c.benchmark_group("range_500");
    g.bench_function("imbl_table", |b| {
        b.iter(|| black_box(ws.candidates.iter_from(None, Some(mid)).take(500).count()))
    });
    g.bench_function("std_btreeset_baseline", |b| {
        b.iter(|| {
            black_box(
                std_set
                    .range((std::ops::Bound::Excluded(mid), std::ops::Bound::Unbounded))
                    .take(500)
                    .count(),
            )
        })
    });
    g.finish();
}

fn cursor_seal(c: &mut Criterion) {
    use actors::model::Entity;
    use actors::query::{Cursor, CursorId, CursorKey};
    let mine = CursorKey::new([1; 32]);
    let other = CursorKey::new([2; 32]);
    other.signer().learn([mine.signer().public_key()]);
    let cursor = Cursor {
        entity: Entity::Candidates,
        since: Some(Stamp::from_millis(1_790_000_000_000)),
        last_stamp: Stamp::from_millis(1_790_000_123_456),
        last_id: CursorId::Uuid(Uuid::from_u128(7)),
    };
    let alone = CursorKey::from_signer(std::sync::Arc::new(actors::signing::Signer::alone(
        &[1; 32],
    )));
    let raw = cursor.encode(&mine);
    let since = cursor.since;
    let mut g = c.benchmark_group("cursor");
    g.bench_function("encode", |b| b.iter(|| black_box(cursor.encode(&mine))));
    g.bench_function("encode/alone", |b| {
        b.iter(|| black_box(cursor.encode(&alone)))
    });
    g.bench_function("decode/own", |b| {
        b.iter(|| black_box(Cursor::decode(&raw, &mine, Entity::Candidates, since).unwrap()))
    });
    g.bench_function("decode/another_node", |b| {
        b.iter(|| black_box(Cursor::decode(&raw, &other, Entity::Candidates, since).unwrap()))
    });
    g.finish();
}

criterion_group!(
    benches,
    page_render,
    feed_answer,
    ordered_range,
    cursor_seal
);
criterion_main!(benches);
