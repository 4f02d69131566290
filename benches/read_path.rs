//! Read-path micro-benchmarks: rendering a 500-record list page from the in-memory state,
//! and the ordered-set range query under it against a std `BTreeSet` baseline.

use actors::snapshot::{parse_slice, plan_import, NoKeys};
use actors::time::Stamp;
use actors::views::View;
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use std::collections::BTreeSet;
use uuid::Uuid;

fn state(people: usize) -> actors::state::WorkspaceState {
    let bytes = recruitd::generate::snapshot_bytes(&recruitd::generate::GenerateOptions {
        people,
        seed: 3,
    });
    let snap = parse_slice(&bytes).expect("generated snapshot parses");
    plan_import(None, snap, &NoKeys, true)
        .expect("generated snapshot is valid")
        .next
        .expect("asked for the next state")
}

fn page_render(c: &mut Criterion) {
    let ws = state(10_000);
    let mut g = c.benchmark_group("list_page");
    g.throughput(criterion::Throughput::Elements(500));
    g.bench_function(
        BenchmarkId::new("candidates_500", ws.candidates.visible_len()),
        |b| {
            let mut buf = Vec::with_capacity(1 << 20);
            b.iter(|| {
                buf.clear();
                for (_, _, rec) in ws.candidates.iter_from(None, None).skip(1000).take(500) {
                    serde_json::to_writer(&mut buf, &View::new(&ws, &**rec)).unwrap();
                }
                black_box(buf.len())
            })
        },
    );
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
