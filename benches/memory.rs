//! What a workspace costs in memory, and how fast its rows render.
//!
//! A generated workspace (100,000 people; `RECRUITD_BENCH_PEOPLE` for another size) is
//! committed to an in-memory store and loaded from it as a server loads it at start.
//! A counting allocator measures the bytes the load leaves allocated, per stored record,
//! and by component (each dropped in turn: search indexes, each table, the rest); then
//! what a full sync leaves allocated (nothing: records are written, not cached).
//! (Allocated bytes, not resident memory: the allocator's own overhead comes on top.)
//!
//! Then criterion: records rendered per second across a whole table, written directly
//! (as the API does) and through serde (the writer's reference).

use actors::entities;
use actors::model::Entity;
use actors::snapshot::{parse_slice, plan_import, NoKeys};
use actors::state::WorkspaceState;
use actors::store::{MemoryStore, Store};
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

/// The system allocator, counting the bytes allocated and not yet freed.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn live() -> isize {
    LIVE.load(Ordering::Relaxed)
}

fn people() -> usize {
    std::env::var("RECRUITD_BENCH_PEOPLE")
        .ok()
        .and_then(|v| v.split(',').next()?.parse().ok())
        .unwrap_or(100_000)
}

/// The workspace as a server loads it, and how many records the store holds for it.
fn loaded(people: usize) -> (WorkspaceState, usize) {
    let store = MemoryStore::new();
    let workspace = {
        let bytes = recruitd::generate::snapshot_bytes(&recruitd::generate::GenerateOptions::new(
            people, 7,
        ));
        let plan = plan_import(None, parse_slice(&bytes).unwrap(), &NoKeys, false).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(store.commit(plan.workspace.id, &plan.change_set()))
            .unwrap();
        plan.workspace
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let state = rt
        .block_on(actors::loader::read::read_state(&*store, workspace))
        .unwrap();
    let records = state.stored_records();
    (state, records)
}

/// Renders every record of every entity as a full sync does.
fn render_all(ws: &WorkspaceState) -> usize {
    struct All<'b>(&'b mut Vec<u8>);
    impl<'s> entities::EntityVisitor<'s> for All<'_> {
        type Out = usize;
        fn visit<K: actors::table::TableKey, V: ?Sized, T: actors::rendered::Rendered>(
            self,
            table: actors::table::TableRef<'s, K, V>,
            view: impl Fn(&'s V) -> T + Copy,
        ) -> usize {
            let mut n = 0;
            for (_, _, row) in table.rows_from(None, None) {
                self.0.clear();
                row.write_json(view, self.0).unwrap();
                n += 1;
            }
            n
        }
    }
    let mut buf = Vec::with_capacity(4096);
    Entity::ALL
        .iter()
        .map(|e| entities::visit(ws, *e, All(&mut buf)))
        .sum()
}

fn report(people: usize) {
    let before = live();
    let (mut ws, records) = loaded(people);
    let total = live() - before;
    let per = |bytes: isize| bytes as f64 / records as f64;
    eprintln!(
        "{people} people, {records} stored records: {:.0} MiB allocated, {:.0} B per record",
        total as f64 / 1048576.0,
        per(total)
    );
    let synced = live();
    let rendered = render_all(&ws);
    let kept = live() - synced;
    eprintln!(
        "  after rendering all {rendered} records (a full sync): {:+.0} MiB, {:.0} B per record",
        kept as f64 / 1048576.0,
        per(kept)
    );
    // By component: what dropping each frees.
    let mut parts: Vec<(&str, isize)> = Vec::new();
    let mut take = |name, f: &mut dyn FnMut(&mut WorkspaceState)| {
        let at = live();
        f(&mut ws);
        parts.push((name, at - live()));
    };
    take("search indexes", &mut |ws| ws.search = Default::default());
    take("candidates, applications", &mut |ws| {
        ws.candidates = Default::default()
    });
    take("notes", &mut |ws| ws.notes = Default::default());
    take("tasks", &mut |ws| ws.tasks = Default::default());
    take("attachments", &mut |ws| ws.attachments = Default::default());
    take("contacts", &mut |ws| ws.contacts = Default::default());
    take("companies, jobs, users", &mut |ws| {
        ws.companies = Default::default();
        ws.jobs = Default::default();
        ws.users = Default::default();
    });
    take("persons (rows by person)", &mut |ws| {
        ws.persons = Default::default()
    });
    take("cvs by candidate row", &mut |ws| {
        ws.cv_by_row = Default::default()
    });
    take("notes by parent", &mut |ws| {
        ws.notes_by_parent = Default::default()
    });
    take("attachments by parent", &mut |ws| {
        ws.attachments_by_parent = Default::default()
    });
    take("derivation links", &mut |ws| {
        ws.dependents = Default::default()
    });
    let rest = live() - before;
    for (name, bytes) in parts {
        eprintln!(
            "  {name:<28} {:>8.1} MiB {:>7.0} B per record",
            bytes as f64 / 1048576.0,
            per(bytes)
        );
    }
    eprintln!(
        "  {:<28} {:>8.1} MiB {:>7.0} B per record",
        "the rest",
        rest as f64 / 1048576.0,
        per(rest)
    );
}

fn memory(c: &mut Criterion) {
    let people = people();
    report(people);
    let (ws, _) = loaded(people);
    let mut g = c.benchmark_group("render_table");
    g.sample_size(10);
    let notes = entities::count(&ws, Entity::Notes);
    g.throughput(Throughput::Elements(notes as u64));
    let mut buf = Vec::with_capacity(4096);
    g.bench_function(BenchmarkId::new("notes_views", people), |b| {
        b.iter(|| {
            let mut n = 0;
            for (_, _, note) in ws.notes.iter_from(None, None) {
                buf.clear();
                serde_json::to_writer(&mut buf, &actors::model::View::new(&ws, &**note)).unwrap();
                n += buf.len();
            }
            black_box(n)
        })
    });
    g.bench_function(BenchmarkId::new("notes_written", people), |b| {
        b.iter(|| {
            let mut n = 0;
            // Pages of 500, as a sync reads them.
            let rows: Vec<_> = ws.notes.rows_from(None, None).map(|(_, _, r)| r).collect();
            for page in rows.chunks(500) {
                buf.clear();
                actors::table::write_rows(page, |r| actors::model::View::new(&ws, r), &mut buf)
                    .unwrap();
                n += buf.len();
            }
            black_box(n)
        })
    });
    g.finish();
}

criterion_group!(benches, memory);
criterion_main!(benches);
