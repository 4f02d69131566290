//! What a write's derived changes cost in a large workspace: the step of a commit, on
//! the actor's thread, that finds the records whose API representation the write
//! changed without writing them (`actors::changes::derive::derived`).
//!
//! A generated workspace (100,000 people; `RECRUITD_BENCH_PEOPLE` for another size) is
//! committed to an in-memory store and loaded from it as a server loads it. Each case
//! then writes one record into a copy of the state, as the actor does, and times the
//! derivation from the state before to the state after:
//! - a job's title (shown on no other record),
//! - a job's assigned recruiter (shown on its applications: `owning_recruiter_id`),
//! - a user's name (shown on no other record),
//! - a pipeline stage written again as it was (an import of one stage).
//!
//! `plan/*` then times a whole batch's planning (`actors::writes::plan_batch`: the write
//! checked and applied, its derived changes found and touched, its tombstones), what the
//! actor does between taking a PATCH off its queue and handing the commit to the store:
//! a job's title, and a job's assigned recruiter (whose applications move with it).

use actors::changes::derive::derived;
use actors::model::{Record, RecordKind};
use actors::snapshot::{parse_slice, plan_import, NoKeys};
use actors::state::WorkspaceState;
use actors::store::{MemoryStore, Store};
use actors::writes::{plan_batch, Change, JobPatch, WriteOp};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use uuid::Uuid;

fn people() -> usize {
    std::env::var("RECRUITD_BENCH_PEOPLE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000)
}

/// The workspace as a server loads it.
fn loaded(people: usize) -> WorkspaceState {
    let store = MemoryStore::new();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let workspace = {
        let bytes = recruitd::generate::snapshot_bytes(&recruitd::generate::GenerateOptions::new(
            people, 7,
        ));
        let plan = plan_import(None, parse_slice(&bytes).unwrap(), &NoKeys, false).unwrap();
        rt.block_on(store.commit(plan.workspace.id, &plan.change_set()))
            .unwrap();
        plan.workspace
    };
    rt.block_on(actors::loader::read::read_state(&*store, workspace))
        .unwrap()
}

/// The job with the most applications, and a user who recruits for none of them.
fn busiest_job(ws: &WorkspaceState) -> (Uuid, usize) {
    let mut per_job = std::collections::HashMap::new();
    for (_, row) in ws.candidates.iter() {
        if let Some(job) = row.job_id() {
            *per_job.entry(job).or_insert(0usize) += 1;
        }
    }
    per_job
        .into_iter()
        .max_by_key(|(_, n)| *n)
        .expect("the workspace has applications")
}

fn bench(c: &mut Criterion) {
    let people = people();
    let before = loaded(people);
    let (job, applications) = busiest_job(&before);
    let user = before.users.iter().next().map(|(id, _)| *id).unwrap();
    let other_user = before.users.iter().nth(1).map(|(id, _)| *id).unwrap();
    let stage = before.stages.iter().next().map(|(id, _)| *id).unwrap();
    eprintln!(
        "{people} people, {} candidate rows; the busiest job has {applications} applications",
        before.candidates.len()
    );
    let cases: Vec<(&str, Record)> = vec![
        ("job title", {
            let mut j = (**before.jobs.get(&job).unwrap()).clone();
            j.title = Some("Renamed".into());
            Record::Job(j)
        }),
        ("job recruiter", {
            let mut j = (**before.jobs.get(&job).unwrap()).clone();
            j.assigned_recruiter_id = Some(if j.assigned_recruiter_id == Some(user) {
                other_user
            } else {
                user
            });
            Record::Job(j)
        }),
        ("user name", {
            let mut u = (**before.users.get(&user).unwrap()).clone();
            u.name = Some("Renamed".into());
            Record::User(u)
        }),
        (
            "stage as it was",
            Record::Stage((**before.stages.get(&stage).unwrap()).clone()),
        ),
    ];
    let mut group = c.benchmark_group(format!("derived/{people}"));
    group.sample_size(20);
    for (name, record) in cases {
        let written: (RecordKind, Uuid) = (record.kind(), record.uuid().unwrap());
        let mut after = before.clone();
        after.put(record);
        eprintln!(
            "  {name}: {} derived changes",
            derived(&before, &after, [written]).len()
        );
        group.bench_function(name, |b| {
            b.iter_batched(
                || written,
                |w| derived(&before, &after, [w]),
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();

    let mut group = c.benchmark_group(format!("plan/{people}"));
    group.sample_size(30);
    let recruiter = before.jobs.get(&job).unwrap().assigned_recruiter_id;
    let patches: Vec<(&str, JobPatch)> = vec![
        (
            "job title",
            JobPatch {
                title: Some(Change::Set("Renamed".into())),
                ..JobPatch::default()
            },
        ),
        (
            "job recruiter",
            JobPatch {
                owning_recruiter_id: Some(Change::Set(if recruiter == Some(user) {
                    other_user
                } else {
                    user
                })),
                ..JobPatch::default()
            },
        ),
    ];
    for (name, patch) in patches {
        let planned = plan_batch(&before, vec![(WriteOp::PatchJob(job, patch.clone()), ())]);
        eprintln!(
            "  {name}: {} upserts, {} derived changes",
            planned.changes.upserts.len(),
            planned.changes.derived.len()
        );
        group.bench_function(name, |b| {
            b.iter_batched(
                || vec![(WriteOp::PatchJob(job, patch.clone()), ())],
                |batch| plan_batch(&before, batch),
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
