//! `recruitd-loadtest`: benchmarks a running recruitd the way its clients use it, over
//! HTTPS only, and reports the truth about tail latency.
//!
//! ## Map
//! - [`cli`]: flags and the TOML file, resolved into [`cli::Settings`].
//! - [`prepare`]: generate a workspace, import it, create a key (operator surface only).
//! - [`http`]: the measured HTTP/1.1-over-rustls client and its connection pool.
//! - [`data`]: the harvested workspace and the answers lookups must get.
//! - [`driver`]: open-loop (fixed arrival rate, coordinated-omission corrected) and
//!   closed-loop drivers, the progress line.
//! - [`scenarios`]: `lookup`, `sync` (lists, the change feed, webhooks, a fan-out of
//!   followers), `write`, `mixed`.
//! - [`baseline`]: the same lookups and syncs as SQL on PostgreSQL.
//! - [`receiver`]: what a webhook receiver checks of each delivery (signature, freshness,
//!   order, repeats) and what it ends up holding.
//! - [`stats`]: HDR histograms per endpoint, errors, mismatches, timelines.
//! - [`report`]: table, JSON (raw histograms included), comparison; [`chart`]: SVG.
//!
//! The exit status is 0 when every run was clean, 2 when any request failed or any
//! answer was wrong (the reports are written either way), 1 on a set-up error.

mod baseline;
mod chart;
mod cli;
mod data;
mod driver;
mod http;
mod prepare;
// The `webhooks` scenario's receiving side; its driver comes with the endpoints.
#[allow(dead_code)]
mod receiver;
mod report;
mod scenarios;
mod stats;

use anyhow::Context;
use clap::Parser;
use cli::{Cli, Command, Scenario, Settings, SyncMode};
use data::Dataset;
use driver::Load;
use http::{Pool, Target};
use report::{Machine, Report, RunMeta, RunReport};
use scenarios::lookup::{self, LookupLoad};
use scenarios::mixed::{self, IncrementalLoad};
use scenarios::sync::{self, Syncer};
use scenarios::sync_clients;
use scenarios::write::WriteLoad;
use scenarios::Backend;
use stats::Recorder;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The client allocates and frees a page's body and frames for every answer (hundreds
/// of kilobytes at a time during a sync); glibc's allocator spends more of the client's
/// CPU on that than on reading the pages, and the client shares the machine's cores
/// with the server it measures.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Set-up, syncs and reports run here; lookups and writes run on client shards of
    // their own (see `driver`).
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(std::thread::available_parallelism().map_or(2, |n| n.get()))
        .enable_all()
        .build()
        .expect("building the runtime");
    match rt.block_on(run(cli)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(2),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// `Ok(clean)`.
async fn run(cli: Cli) -> anyhow::Result<bool> {
    let args = match &cli.command {
        Command::Prepare(a) => {
            prepare::run(&cli.common, a).await?;
            return Ok(true);
        }
        Command::Compare { before, after } => {
            let (b, a) = (report::read_json(before)?, report::read_json(after)?);
            print!("{}", report::compare(&b, &a));
            return Ok(true);
        }
        Command::Lookup(a) | Command::Sync(a) | Command::Write(a) | Command::Mixed(a) => a,
    };
    let scenario = cli.command.scenario().expect("a scenario command");
    let s = Settings::resolve(&cli.common, scenario, args)?;
    run_scenario(s).await
}

/// When the measurement window of a part starting now begins and ends.
fn recorder(s: &Settings) -> Arc<Recorder> {
    // A short lead so that every task is running before the first slot.
    let from = Instant::now() + Duration::from_millis(100) + Duration::from_secs_f64(s.warmup);
    Arc::new(Recorder::new(
        from,
        from + Duration::from_secs_f64(s.duration),
    ))
}

fn meta<'a>(s: &Settings, system: &'a str, workload: &'a str, load: Option<Load>) -> RunMeta<'a> {
    RunMeta {
        system,
        workload,
        load,
        duration_s: s.duration,
        warmup_s: s.warmup,
        rounds: Vec::new(),
    }
}

async fn run_scenario(s: Settings) -> anyhow::Result<bool> {
    let mut machine = Machine::probe();
    let started_at = chrono::Utc::now();
    let timeout = Duration::from_secs_f64(s.timeout);
    let others = s
        .also
        .iter()
        .map(|(url, cacert)| Target::new(url, cacert, &s.key, timeout))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let target = Arc::new(Target::new(&s.url, &s.cacert, &s.key, timeout)?.spread_over(others));
    let setup = Pool::new(target.clone(), 4);
    // Syncs need no harvest: a full sync reads the workspace itself, and a sync client
    // beside lookups (`--sync-clients`) should send the server a sync's requests alone.
    // The change feed's catch-up is measured first, on a server doing nothing else; it
    // harvests the workspace itself, after, when writes follow.
    // The workspace as the report describes it: harvested here, or by the feed's run
    // when it writes.
    let mut harvested = if s.scenario == Scenario::Sync {
        None
    } else {
        Some(harvest(&s, &setup).await?)
    };
    let ds = harvested.clone().unwrap_or_default();
    let warmup = Duration::from_secs_f64(s.warmup);
    let load = match s.rate {
        Some(rate) => Load::Open { rate },
        None => Load::Closed {
            concurrency: s.concurrency,
        },
    };
    let connections = match load {
        Load::Open { .. } => s.connections,
        Load::Closed { concurrency } => concurrency,
    };
    let warm = connections.min(32);
    let pg_connections = connections.min(64) as u32;
    let mut runs: Vec<RunReport> = Vec::new();
    let name = s.scenario.name();
    match s.scenario {
        Scenario::Lookup => {
            let bank = Arc::new(lookup::bank(&ds, &s.lookup, s.seed, 100_000));
            let pool = Arc::new(Pool::new(target.clone(), connections));
            // Each run: its backend, and the full-sync clients beside it.
            let mut plan = vec![(Backend::Api(pool.clone()), 0)];
            if let Some(url) = &s.baseline_postgres {
                plan.push((load_baseline(url, &setup, pg_connections).await?, 0));
            }
            if s.lookup.sync_clients > 0 {
                plan.push((Backend::Api(pool), s.lookup.sync_clients));
            }
            for (backend, sync_clients) in plan {
                let system = backend.system();
                let workload = match sync_clients {
                    0 => name.to_string(),
                    n => format!(
                        "{name} beside {n} full sync{}",
                        if n == 1 { "" } else { "s" }
                    ),
                };
                let clients = match sync_clients {
                    0 => None,
                    n => {
                        let secs = s.warmup + s.duration + sync_clients::LEAD.as_secs_f64() + 60.0;
                        let report = format!("{}-sync-clients", s.name.as_deref().unwrap_or(name));
                        let c = sync_clients::SyncClients::start(&s, &report, n, secs)?;
                        tokio::time::sleep(sync_clients::LEAD).await;
                        Some(c)
                    }
                };
                let rec = recorder(&s);
                let w = Arc::new(LookupLoad {
                    backend,
                    rec: rec.clone(),
                    bank: bank.clone(),
                });
                driver::with_progress(
                    vec![(format!("{system} {workload}"), rec.clone())],
                    warmup,
                    s.progress,
                    driver::run(w, rec.clone(), load, warmup, s.threads, warm),
                )
                .await;
                if let Some(c) = clients {
                    c.stop()?;
                }
                runs.push(report::run_report(
                    meta(&s, system, &workload, Some(load)),
                    rec.finish(),
                ));
            }
            if let (true, Some(alone), Some(beside)) =
                (s.lookup.sync_clients > 0, runs.first(), runs.last())
            {
                let (a, b) = (alone.total.latency_us.p99, beside.total.latency_us.p99);
                println!(
                    "lookup p99 alone {:.3} ms, beside the syncs {:.3} ms: {:.2}x",
                    a as f64 / 1e3,
                    b as f64 / 1e3,
                    b as f64 / a.max(1) as f64
                );
            }
        }
        Scenario::Sync if s.sync.mode == SyncMode::Changes => {
            let (feed_runs, feed_ds) = run_changes(&s, &target, &setup).await?;
            runs.extend(feed_runs);
            harvested = feed_ds;
        }
        Scenario::Sync if s.sync.mode == SyncMode::Fanout => {
            runs.extend(scenarios::fanout::run(&s).await?);
        }
        Scenario::Sync if s.sync.mode == SyncMode::Webhooks => {
            let (hook_runs, hook_ds) = run_webhooks(&s, &target, &setup).await?;
            runs.extend(hook_runs);
            harvested = hook_ds;
        }
        Scenario::Sync => {
            let streams = s.sync.streams;
            let pool = Arc::new(Pool::new(target.clone(), streams));
            pool.warm(streams).await?;
            let mut backends = vec![Backend::Api(pool)];
            if let Some(url) = &s.baseline_postgres {
                backends.push(load_baseline(url, &setup, streams as u32).await?);
            }
            for backend in backends {
                let system = backend.system();
                let rec = recorder(&s);
                let syncer = Arc::new(Syncer {
                    backend,
                    rec: rec.clone(),
                    limit: s.sync.limit,
                });
                let rounds = driver::with_progress(
                    vec![(format!("{system} sync"), rec.clone())],
                    warmup,
                    s.progress,
                    sync::rounds(syncer, streams, s.sync.incremental_rounds, warmup),
                )
                .await?;
                let mut m = meta(
                    &s,
                    system,
                    name,
                    Some(Load::Closed {
                        concurrency: streams,
                    }),
                );
                m.rounds = rounds;
                runs.push(report::run_report(m, rec.finish()));
            }
        }
        Scenario::Write => {
            let pool = Arc::new(Pool::new(target.clone(), connections));
            let rec = recorder(&s);
            let w = Arc::new(WriteLoad::new(
                pool,
                rec.clone(),
                ds.clone(),
                s.seed,
                &s.write.mix,
            )?);
            driver::with_progress(
                vec![("write".into(), rec.clone())],
                warmup,
                s.progress,
                driver::run(w, rec.clone(), load, warmup, s.threads, warm),
            )
            .await;
            runs.push(report::run_report(
                meta(&s, "recruitd", name, Some(load)),
                rec.finish(),
            ));
        }
        Scenario::Mixed => {
            runs.extend(run_mixed(&s, &target, &ds).await?);
        }
    }
    machine.load_after = report::load_average();
    let clean = runs.iter().all(RunReport::clean);
    let report = Report {
        format: report::FORMAT.into(),
        name: s
            .name
            .clone()
            .unwrap_or_else(|| format!("{name}-{}", started_at.format("%Y%m%dT%H%M%SZ"))),
        scenario: name.into(),
        started_at: started_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        machine,
        settings: s.clone(),
        dataset: harvested.map(|d| d.summary()),
        runs,
        clean,
    };
    print!("{}", report::table(&report));
    let json = report::write_json(&report, &s.out)?;
    let charts = chart::write(&report.name, &report.runs, &s.out)?;
    println!("report: {}", json.display());
    for c in charts {
        println!("chart: {}", c.display());
    }
    if let Some(earlier) = &s.compare {
        let before = report::read_json(earlier)?;
        print!("{}", report::compare(&before, &report));
    }
    Ok(clean)
}

async fn harvest(s: &Settings, setup: &Pool) -> anyhow::Result<Arc<Dataset>> {
    eprintln!("harvesting the workspace from {} ...", s.url);
    let t = Instant::now();
    let ds = Arc::new(Dataset::harvest(setup).await.context("harvesting")?);
    eprintln!("{} (in {:.1} s)", ds.summary(), t.elapsed().as_secs_f64());
    Ok(ds)
}

async fn load_baseline(url: &str, api: &Pool, connections: u32) -> anyhow::Result<Backend> {
    eprintln!(
        "copying the workspace into PostgreSQL ({}) ...",
        baseline::SCHEMA
    );
    let t = Instant::now();
    let pg = baseline::Pg::load(url, api, connections).await?;
    eprintln!(
        "baseline loaded: {} records in {:.1} s",
        pg.counts.values().sum::<u64>(),
        t.elapsed().as_secs_f64()
    );
    Ok(Backend::Pg(Arc::new(pg)))
}

/// Lookups, writes and incremental syncs at once, plus periodic full syncs; one report
/// part each.
async fn run_mixed(
    s: &Settings,
    target: &Arc<Target>,
    ds: &Arc<Dataset>,
) -> anyhow::Result<Vec<RunReport>> {
    let m = &s.mixed;
    let warmup = Duration::from_secs_f64(s.warmup);
    let pool = Arc::new(Pool::new(target.clone(), s.connections));
    eprintln!("initial full sync (sets every entity's watermark) ...");
    let setup_syncer = Syncer {
        backend: Backend::Api(pool.clone()),
        rec: Arc::new(Recorder::new(Instant::now(), Instant::now())),
        limit: s.sync.limit,
    };
    let watermarks = mixed::initial_watermarks(&setup_syncer).await;

    let lookups = recorder(s);
    let (from, to) = (lookups.measure_from, lookups.measure_to);
    let writes = Arc::new(Recorder::new(from, to));
    let syncs = Arc::new(Recorder::new(from, to));
    let bank = Arc::new(lookup::bank(ds, &s.lookup, s.seed, 100_000));
    let lookup_load = Arc::new(LookupLoad {
        backend: Backend::Api(pool.clone()),
        rec: lookups.clone(),
        bank,
    });
    let write_load = Arc::new(WriteLoad::new(
        pool.clone(),
        writes.clone(),
        ds.clone(),
        s.seed,
        &s.write.mix,
    )?);
    let syncer = Arc::new(Syncer {
        backend: Backend::Api(pool.clone()),
        rec: syncs.clone(),
        limit: s.sync.limit,
    });
    let incremental = Arc::new(IncrementalLoad {
        syncer: syncer.clone(),
        watermarks: std::sync::Mutex::new(watermarks),
    });
    let every = Duration::from_secs_f64(m.full_sync_every);
    let open = |rate: f64| Load::Open { rate };
    let (_, _, _, rounds) = driver::with_progress(
        vec![
            ("lookup".into(), lookups.clone()),
            ("write".into(), writes.clone()),
            ("sync".into(), syncs.clone()),
        ],
        warmup,
        s.progress,
        async {
            tokio::join!(
                driver::run(
                    lookup_load,
                    lookups.clone(),
                    open(m.lookup_rate),
                    warmup,
                    1,
                    8
                ),
                driver::run(write_load, writes.clone(), open(m.write_rate), warmup, 1, 8),
                driver::run(incremental, syncs.clone(), open(m.sync_rate), warmup, 1, 2),
                mixed::periodic_full(syncer, every),
            )
        },
    )
    .await;
    let mut sync_meta = meta(s, "recruitd", report::MIXED_SYNC, Some(open(m.sync_rate)));
    sync_meta.rounds = rounds;
    Ok(vec![
        report::run_report(
            meta(s, "recruitd", "mixed: lookup", Some(open(m.lookup_rate))),
            lookups.finish(),
        ),
        report::run_report(
            meta(s, "recruitd", "mixed: write", Some(open(m.write_rate))),
            writes.finish(),
        ),
        report::run_report(sync_meta, syncs.finish()),
    ])
}

/// `sync --mode changes`: a catch-up from `--since` (changes/s), then a client
/// long-polling the feed while writes run at `--write-rate` (delivery latency); every
/// record delivered is checked against GET once the client is up to date.
async fn run_changes(
    s: &Settings,
    target: &Arc<Target>,
    setup: &Pool,
) -> anyhow::Result<(Vec<RunReport>, Option<Arc<Dataset>>)> {
    use scenarios::changes::{self, Feed, StopSignal};
    if s.baseline_postgres.is_some() {
        anyhow::bail!("--baseline-postgres: the baseline has no change feed to compare with");
    }
    // A long-poll holds its answer up to `wait`: its requests get that much more time.
    let feed_timeout = s.timeout.max(f64::from(changes::WAIT_SECS) + 10.0);
    let feed_target = Arc::new(target.with_timeout(Duration::from_secs_f64(feed_timeout)));
    let feed_pool = || Arc::new(Pool::new(feed_target.clone(), 1));
    let check_pool = Arc::new(Pool::new(target.clone(), 8));
    let mut runs = Vec::new();
    let token = match &s.sync.since {
        Some(since) => {
            eprintln!("catching up from --since ...");
            let start = Instant::now();
            // Everything counts: the run is as long as the catch-up takes.
            let rec = Arc::new(Recorder::new(start, start + Duration::from_secs(86_400)));
            let mut feed = Feed::new(feed_pool(), rec.clone(), s.sync.limit, since.clone());
            driver::with_progress(
                vec![("catch-up".into(), rec.clone())],
                Duration::ZERO,
                s.progress,
                feed.catch_up("GET /v1/changes (catch-up)", Some(start)),
            )
            .await;
            let secs = start.elapsed().as_secs_f64();
            eprintln!(
                "{} changes in {} pages, {secs:.2} s: {:.0} changes/s; checking the {} records \
                 delivered ...",
                feed.got.changes,
                feed.pages,
                feed.got.changes as f64 / secs,
                feed.got.mirror.len(),
            );
            let load = Load::Closed { concurrency: 1 };
            runs.push(elapsed_run(s, "changes: catch-up", load, secs, &rec));
            let mirror = std::mem::take(&mut feed.got.mirror);
            let name = "changes: catch-up, checked against GET";
            runs.push(check_run(s, &check_pool, mirror, name).await);
            feed.got.token
        }
        None => changes::current_token(&check_pool).await?,
    };
    if s.sync.write_rate == 0.0 {
        return Ok((runs, None));
    }
    let w = writes_to_follow(s, target, setup).await?;
    let (ds, rate, warmup, writes, load) = (&w.ds, w.rate, w.warmup, &w.writes, &w.load);
    let feed_rec = &w.followed;
    let from = writes.measure_from;
    let mut feed = Feed::new(feed_pool(), feed_rec.clone(), s.sync.limit, token);
    feed.got.deliveries = Some(Default::default());
    let stop = StopSignal::default();
    driver::with_progress(
        vec![
            ("write".into(), writes.clone()),
            ("feed".into(), feed_rec.clone()),
        ],
        warmup,
        s.progress,
        async {
            tokio::join!(
                async {
                    w.drive(s).await;
                    stop.raise();
                },
                feed.follow(&stop, from),
            )
        },
    )
    .await;
    let acks = load.take_acks();
    let deliveries = feed.got.deliveries.take().unwrap_or_default();
    let labels = changes::Labels {
        sent: "change delivered (write sent → feed)",
        stamped: "change delivered (record's updated_at → feed)",
    };
    let (matched, unchanged) = changes::match_acks(&acks, &deliveries, feed_rec, &labels);
    eprintln!(
        "{} writes acknowledged: {matched} delivered, {unchanged} changed nothing; {} changes \
         received in {} answers; checking the {} records delivered ...",
        acks.len(),
        feed.got.changes,
        feed.pages,
        feed.got.mirror.len(),
    );
    let mirror = std::mem::take(&mut feed.got.mirror);
    runs.extend(followed_runs(
        s,
        "changes: write",
        writes,
        rate,
        "changes: feed",
        feed_rec,
    ));
    let name = "changes: feed, checked against GET";
    runs.push(check_run(s, &check_pool, mirror, name).await);
    Ok((runs, Some(ds.clone())))
}

/// The writes a follower's deliveries are matched to (`--mode changes`, `webhooks`):
/// the workspace, the load keeping its acknowledgements, its recorder, and one for the
/// follower over the same window.
struct Writes {
    ds: Arc<Dataset>,
    rate: f64,
    warmup: Duration,
    writes: Arc<Recorder>,
    followed: Arc<Recorder>,
    load: Arc<WriteLoad>,
}

/// The reports of writes at `rate` and of their follower's deliveries.
fn followed_runs(
    s: &Settings,
    write: &str,
    writes: &Recorder,
    rate: f64,
    follower: &str,
    followed: &Recorder,
) -> [RunReport; 2] {
    [
        report::run_report(
            meta(s, "recruitd", write, Some(Load::Open { rate })),
            writes.finish(),
        ),
        report::run_report(meta(s, "recruitd", follower, None), followed.finish()),
    ]
}

impl Writes {
    /// Runs the writes, open loop at their rate.
    async fn drive(&self, s: &Settings) {
        let warm = s.connections.min(32);
        let load = Load::Open { rate: self.rate };
        let (w, rec) = (self.load.clone(), self.writes.clone());
        driver::run(w, rec, load, self.warmup, s.threads, warm).await;
    }
}

async fn writes_to_follow(
    s: &Settings,
    target: &Arc<Target>,
    setup: &Pool,
) -> anyhow::Result<Writes> {
    let ds = harvest(s, setup).await?;
    let writes = recorder(s);
    let followed = Arc::new(Recorder::new(writes.measure_from, writes.measure_to));
    let pool = Arc::new(Pool::new(target.clone(), s.connections));
    let load = WriteLoad::new(pool, writes.clone(), ds.clone(), s.seed, &s.write.mix)?;
    Ok(Writes {
        ds,
        rate: s.sync.write_rate,
        warmup: Duration::from_secs_f64(s.warmup),
        writes,
        followed,
        load: Arc::new(load.keeping_acks()),
    })
}

/// `sync --mode webhooks` (see `scenarios::webhooks`): a catch-up from `--since`, then
/// deliveries while writes run, every delivery checked; the first endpoint's records
/// checked against GET.
async fn run_webhooks(
    s: &Settings,
    target: &Arc<Target>,
    setup: &Pool,
) -> anyhow::Result<(Vec<RunReport>, Option<Arc<Dataset>>)> {
    use scenarios::webhooks::{self, Receiver};
    let check_pool = Arc::new(Pool::new(target.clone(), 8));
    let receiver = Receiver::start(s.sync.faults.clone()).await?;
    webhooks::register(setup, &receiver, s.sync.endpoints).await?;
    let outcome = webhook_runs(s, target, setup, &check_pool, &receiver).await;
    webhooks::remove(setup, &receiver).await;
    let (mut runs, ds) = outcome?;
    // Every delivery as a receiver judged it: accepted, repeated (a retry whose
    // answer was lost), or refused (a bad signature, out of order: an error).
    let start = Instant::now();
    let rec = Recorder::new(start, start + Duration::from_secs(86_400));
    let label = "webhooks: deliveries as the receiver judged them";
    let mut mirror = None;
    receiver.each(|e| {
        let (l, f) = (&e.ledger, &e.faulted);
        eprintln!(
            "webhooks: endpoint {}{}: {} deliveries accepted, {} repeated ({} after an \
             acknowledgement in time), {} refused; faults made: {} answered 500, {} slow, \
             {} reset, {} hung",
            e.id,
            if e.hanging { " (hanging)" } else { "" },
            l.accepted,
            l.duplicates,
            l.duplicates_after_ack,
            l.refused,
            f.failed,
            f.slow,
            f.reset,
            f.hung
        );
        rec.record(
            label,
            start,
            start,
            stats::Verdict::Ok,
            l.accepted + l.duplicates,
        );
        if l.refused > 0 {
            let why = format!("endpoint {}: {} deliveries refused", e.id, l.refused);
            rec.record(
                label,
                start,
                start,
                stats::Verdict::Failed("refused", why),
                0,
            );
        }
        if mirror.is_none() {
            mirror = e.mirror.take();
        }
    });
    let mirror = mirror.unwrap_or_default();
    let load = Load::Closed {
        concurrency: s.sync.endpoints,
    };
    runs.push(elapsed_run(s, "webhooks: receiver", load, 0.0, &rec));
    let name = "webhooks: first endpoint, checked against GET";
    runs.push(check_run(s, &check_pool, mirror, name).await);
    Ok((runs, ds))
}

async fn webhook_runs(
    s: &Settings,
    target: &Arc<Target>,
    setup: &Pool,
    check_pool: &Arc<Pool>,
    receiver: &Arc<scenarios::webhooks::Receiver>,
) -> anyhow::Result<(Vec<RunReport>, Option<Arc<Dataset>>)> {
    use scenarios::changes;
    use scenarios::webhooks;
    let mut runs = Vec::new();
    let endpoints = s.sync.endpoints;
    if let Some(since) = &s.sync.since {
        let head = changes::current_token(check_pool).await?;
        eprintln!("webhooks: {endpoints} endpoints catching up from --since ...");
        let start = Instant::now();
        let rec = Arc::new(Recorder::new(start, start + Duration::from_secs(86_400)));
        webhooks::replay(setup, receiver, since).await?;
        let behind = webhooks::caught_up(receiver, &head, Duration::from_secs(3600)).await;
        let secs = start.elapsed().as_secs_f64();
        let got: u64 = receiver.each(|e| e.changes).into_iter().sum();
        eprintln!(
            "webhooks: {got} changes accepted in {secs:.2} s: {:.0} changes/s ({:.0} per endpoint)",
            got as f64 / secs,
            got as f64 / secs / endpoints as f64
        );
        let label = "webhooks: catch-up";
        for id in &behind {
            let why = format!("endpoint {id} not at the feed's head");
            rec.record(
                label,
                start,
                start,
                stats::Verdict::Failed("behind", why),
                0,
            );
        }
        rec.record(label, start, Instant::now(), stats::Verdict::Ok, got);
        runs.push(elapsed_run(
            s,
            label,
            Load::Closed {
                concurrency: endpoints,
            },
            secs,
            &rec,
        ));
    }
    if s.sync.write_rate == 0.0 {
        return Ok((runs, None));
    }
    let w = writes_to_follow(s, target, setup).await?;
    let hooks_rec = &w.followed;
    let (ds, rate, warmup, writes, load) = (&w.ds, w.rate, w.warmup, &w.writes, &w.load);
    driver::with_progress(
        vec![("write".into(), writes.clone())],
        warmup,
        s.progress,
        w.drive(s),
    )
    .await;
    let head = changes::current_token(check_pool).await?;
    // A receiver that fails on purpose is retried with backoff (seconds, then minutes).
    let f = &s.sync.faults;
    let within = if f.fail + f.slow + f.reset > 0.0 {
        900
    } else {
        60
    };
    let behind = webhooks::caught_up(receiver, &head, Duration::from_secs(within)).await;
    let acks = load.take_acks();
    let labels = changes::Labels {
        sent: "change delivered (write sent → webhook receipt)",
        stamped: "change delivered (record's updated_at → webhook receipt)",
    };
    receiver.each(|e| {
        if e.hanging {
            return;
        }
        let (matched, unchanged) = changes::match_acks(&acks, &e.deliveries, hooks_rec, &labels);
        eprintln!(
            "webhooks: endpoint {}: {matched} of {} writes delivered ({unchanged} changed nothing), {} changes",
            e.id,
            acks.len(),
            e.changes
        );
    });
    let label = labels.sent;
    for id in behind {
        let why = format!("endpoint {id} not at the feed's head {within} s after the writes");
        hooks_rec.record(
            label,
            hooks_rec.measure_from,
            hooks_rec.measure_from,
            stats::Verdict::Failed("behind", why),
            0,
        );
    }
    let (write, delivered) = ("webhooks: write", "webhooks: deliveries");
    runs.extend(followed_runs(s, write, writes, rate, delivered, hooks_rec));
    Ok((runs, Some(ds.clone())))
}

/// Every record of a feed client's mirror fetched with GET and compared: a run of its
/// own, as long as it takes.
async fn check_run(
    s: &Settings,
    pool: &Arc<Pool>,
    mirror: scenarios::changes::Mirror,
    name: &str,
) -> RunReport {
    use scenarios::changes::{check_mirror, CHECKERS};
    let start = Instant::now();
    let rec = Arc::new(Recorder::new(start, start + Duration::from_secs(86_400)));
    let n = check_mirror(pool.clone(), rec.clone(), mirror, start).await;
    let secs = start.elapsed().as_secs_f64();
    eprintln!("checked {n} records against GET in {secs:.1} s");
    let load = Load::Closed {
        concurrency: CHECKERS,
    };
    elapsed_run(s, name, load, secs, &rec)
}

/// The report of a run as long as it took (no warm-up, every sample counted).
fn elapsed_run(s: &Settings, name: &str, load: Load, secs: f64, rec: &Recorder) -> RunReport {
    let mut m = meta(s, "recruitd", name, Some(load));
    m.duration_s = secs;
    m.warmup_s = 0.0;
    report::run_report(m, rec.finish())
}
