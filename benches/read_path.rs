//! Read-path micro-benchmarks: a 500-record list page from the in-memory state, written
//! directly (as `GET /v1/{entity}` does) and through serde (the reference), and the
//! ordered-set range query under it against a std `BTreeSet` baseline.

use actors::rendered::Rendered;
use actors::snapshot::{parse_slice, plan_import, NoKeys};
use actors::state::{MinKey, Table};
use actors::time::Stamp;
use actors::views::View;
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
    K: std::hash::Hash + Eq + Ord + Clone + MinKey,
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

criterion_group!(benches, page_render, ordered_range);
criterion_main!(benches);
