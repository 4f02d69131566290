//! In-call search benchmarks on generated workspaces, against `std::collections::HashMap`
//! baselines holding the same keys and owners.
//!
//! Sizes come from `RECRUITD_BENCH_PEOPLE` (comma-separated, default `100000`), e.g.
//! `RECRUITD_BENCH_PEOPLE=100000,1000000 cargo bench --bench search`. Each size prints
//! one line of index sizes (bytes per person, fst bytes per key) before its benches.
//!
//! Every lookup bench runs with a non-empty delta (a few thousand edited numbers not yet
//! merged), so the delta check is part of what is measured.

use actors::search::keys::{email_key, lower, phone_key, PhoneQuery};
use actors::search::Owner;
use actors::snapshot::{parse_reader, plan_import, NoKeys};
use actors::state::WorkspaceState;
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use smallvec::SmallVec;
use std::collections::HashMap;
use std::time::{Duration, Instant};

fn sizes() -> Vec<usize> {
    std::env::var("RECRUITD_BENCH_PEOPLE")
        .unwrap_or_else(|_| "100000".into())
        .split(',')
        .map(|s| s.trim().parse().expect("RECRUITD_BENCH_PEOPLE: numbers"))
        .collect()
}

/// A generated workspace of `people` people, through a temporary file so that a million
/// people never sit in memory as JSON text.
fn state(people: usize) -> WorkspaceState {
    let started = Instant::now();
    let file = tempfile::tempfile().expect("temp file");
    let opts = recruitd::generate::GenerateOptions::new(people, 11);
    let mut w = std::io::BufWriter::new(&file);
    recruitd::generate::write_snapshot(&opts, &mut w, &mut |_, _| {}).expect("generate");
    drop(w);
    use std::io::Seek;
    let mut f = &file;
    f.rewind().unwrap();
    let snap = parse_reader(std::io::BufReader::with_capacity(1 << 20, f)).expect("parses");
    let ws = plan_import(None, snap, &NoKeys, true)
        .expect("valid")
        .next
        .expect("next state");
    eprintln!(
        "workspace of {people} people built in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    ws
}

/// Real numbers and addresses of the workspace, as softphones would send them.
struct Probes {
    nine: Vec<SmallVec<[u8; 9]>>,
    eight: Vec<SmallVec<[u8; 9]>>,
    emails: Vec<String>,
    numbers: Vec<String>,
}

fn probes(ws: &WorkspaceState) -> Probes {
    let mut p = Probes {
        nine: Vec::new(),
        eight: Vec::new(),
        emails: Vec::new(),
        numbers: Vec::new(),
    };
    for (_, c) in ws.candidates.iter().take(20_000) {
        if let Some(raw) = c.phone_as_entered() {
            let q = PhoneQuery::new(raw);
            if let (Some(n), Some(e)) = (q.nine(), q.eight()) {
                p.nine.push(SmallVec::from_slice(n));
                p.eight.push(SmallVec::from_slice(e));
                p.numbers.push(raw.to_string());
            }
        }
        if let Some(e) = c.email() {
            p.emails.push(e.to_uppercase());
        }
    }
    p
}

/// Edits a few thousand numbers and addresses so the lookups also consult a delta.
fn with_delta(mut ws: WorkspaceState) -> WorkspaceState {
    let rows: Vec<_> = ws
        .candidates
        .iter()
        .take(3000)
        .map(|(_, c)| c.raw())
        .collect();
    for (i, mut c) in rows.into_iter().enumerate() {
        c.mobile = Some(format!("07700 1{i:05}"));
        c.email = Some(format!("edited.{i}@example.net"));
        ws.put(actors::model::Record::Candidate(Box::new(c)));
    }
    ws
}

type Baseline = HashMap<Box<[u8]>, SmallVec<[Owner; 2]>>;

/// What a team would write without an fst: hash maps keyed by the last nine digits, by
/// the last eight, and by the lower-cased address.
fn baselines(ws: &WorkspaceState) -> (Baseline, Baseline, Baseline) {
    let (mut nine, mut eight, mut email) = (Baseline::new(), Baseline::new(), Baseline::new());
    let add = |m: &mut Baseline, k: &[u8], o: Owner| {
        let l = m.entry(Box::from(k)).or_default();
        if !l.contains(&o) {
            l.push(o);
        }
    };
    let number = |n: Option<&str>, o: Owner, nine: &mut Baseline, eight: &mut Baseline| {
        if let Some(k) = n.and_then(phone_key) {
            if k.len() == 9 {
                add(nine, &k, o);
            }
            add(eight, &k[..8], o);
        }
    };
    for (_, c) in ws.candidates.iter() {
        let o = Owner::Person(c.person_id());
        number(c.phone(), o, &mut nine, &mut eight);
        number(c.mobile(), o, &mut nine, &mut eight);
        if let Some(k) = c.email().and_then(email_key) {
            let l = email.entry(Box::from(&*k)).or_default();
            if !l.contains(&o) {
                l.push(o);
            }
        }
    }
    for (id, c) in ws.contacts.iter() {
        let o = Owner::Contact(*id);
        number(c.phone.as_deref(), o, &mut nine, &mut eight);
        number(c.mobile.as_deref(), o, &mut nine, &mut eight);
    }
    (nine, eight, email)
}

fn report_sizes(people: usize, ws: &WorkspaceState) {
    let s = ws.search.stats();
    let bytes = s.phone_heap_bytes + s.email_heap_bytes;
    eprintln!(
        "index sizes at {people} people: phone {} keys / {} postings, fst {} B ({:.2} B/key); \
         email {} keys, fst {} B ({:.2} B/key); fst+offsets+postings {} B = {:.1} B/person",
        s.phone_keys,
        s.phone_postings,
        s.phone_fst_bytes,
        s.phone_fst_bytes as f64 / s.phone_keys.max(1) as f64,
        s.email_keys,
        s.email_fst_bytes,
        s.email_fst_bytes as f64 / s.email_keys.max(1) as f64,
        bytes,
        bytes as f64 / people as f64,
    );
}

fn search_benches(c: &mut Criterion) {
    for people in sizes() {
        let mut ws = state(people);
        report_sizes(people, &ws);

        let mut g = c.benchmark_group("index_rebuild");
        g.sample_size(10);
        g.measurement_time(Duration::from_secs(if people >= 500_000 { 30 } else { 10 }));
        g.bench_function(BenchmarkId::new("from_records", people), |b| {
            b.iter(|| {
                ws.rebuild_search();
                black_box(ws.search.phone.base().len())
            })
        });
        let edited = with_delta(ws.clone());
        g.bench_function(BenchmarkId::new("merge_base_and_delta", people), |b| {
            b.iter(|| black_box(edited.search.phone.rebuild_job().run()))
        });
        g.finish();

        let ws = edited;
        assert!(ws.search.phone.delta_len() > 0 && ws.search.email.delta_len() > 0);
        let p = probes(&ws);
        let (nine_map, eight_map, email_map) = baselines(&ws);

        let mut g = c.benchmark_group("phone_last9");
        let mut i = 0;
        g.bench_function(BenchmarkId::new("fst_plus_delta", people), |b| {
            b.iter(|| {
                i = (i + 1) % p.nine.len();
                black_box(ws.search.phone.get(&p.nine[i]).len())
            })
        });
        g.bench_function(BenchmarkId::new("hashmap_baseline", people), |b| {
            b.iter(|| {
                i = (i + 1) % p.nine.len();
                black_box(nine_map.get(&p.nine[i][..]).map_or(0, |l| l.len()))
            })
        });
        g.finish();

        let mut g = c.benchmark_group("phone_last8_suffix");
        g.bench_function(BenchmarkId::new("fst_plus_delta", people), |b| {
            b.iter(|| {
                i = (i + 1) % p.eight.len();
                let mut owners: SmallVec<[Owner; 16]> = SmallVec::new();
                ws.search
                    .phone
                    .for_each_with_prefix(&p.eight[i], |_, o| owners.extend_from_slice(o));
                black_box(owners.len())
            })
        });
        g.bench_function(BenchmarkId::new("hashmap_baseline", people), |b| {
            b.iter(|| {
                i = (i + 1) % p.eight.len();
                black_box(eight_map.get(&p.eight[i][..]).map_or(0, |l| l.len()))
            })
        });
        g.finish();

        let mut g = c.benchmark_group("email_exact");
        g.bench_function(BenchmarkId::new("fst_plus_delta", people), |b| {
            b.iter(|| {
                i = (i + 1) % p.emails.len();
                let key = lower(p.emails[i].trim());
                black_box(ws.search.email.get(&key).len())
            })
        });
        g.bench_function(BenchmarkId::new("hashmap_baseline", people), |b| {
            b.iter(|| {
                i = (i + 1) % p.emails.len();
                let key = lower(p.emails[i].trim());
                black_box(email_map.get(&key[..]).map_or(0, |l| l.len()))
            })
        });
        g.finish();

        // The handler's own work: decode the query string, match, write the JSON body.
        let queries: Vec<String> = p
            .numbers
            .iter()
            .map(|n| {
                format!(
                    "number={}",
                    percent_encoding::utf8_percent_encode(n, percent_encoding::NON_ALPHANUMERIC)
                )
            })
            .collect();
        let mut g = c.benchmark_group("search_phone_handler_path");
        // The server's own code: query decoding, lookup, the answer in its envelope.
        g.bench_function(BenchmarkId::new("parse_lookup_json", people), |b| {
            b.iter(|| {
                i = (i + 1) % queries.len();
                let answer = recruitd::http::search::phone_answer(
                    &ws,
                    &queries[i],
                    "req_0123456789abcdef0123456789abcdef",
                )
                .unwrap();
                black_box(answer.len())
            })
        });
        g.finish();
    }
}

criterion_group!(benches, search_benches);
criterion_main!(benches);
