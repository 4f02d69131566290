//! `sync --mode fanout`: many clients long-polling the change feeds of many workspaces
//! while writes commit across them: what a commit costs the server for each client that
//! waits on its workspace's feed.
//!
//! Set-up, through the operator surface alone: `--workspaces` small workspaces (the
//! generator's 8 people, seed 1, each under a workspace id of its own) imported through
//! the admin interface, and a key for each. Then `--followers` clients, dealt in turn to
//! the workspaces, each on a connection of its own, long-poll `GET /v1/changes?wait=30`
//! from the feed's head, while PATCHes of notes (a new title each) run open loop at
//! `--write-rate`, dealt in turn to the workspaces.
//!
//! Measured: every acknowledged write is matched, for every follower of its workspace,
//! to the first delivery that shows it, its latency from the write's send (as in `--mode
//! changes`: an upper bound of commit-to-receipt that holds the write's own latency); a
//! write a follower never received is an error of that follower's. Once the writes stop,
//! each follower catches up, and every record the first follower of each workspace
//! received is checked against GET. With `--server-pid`, the server's CPU time over the measured window and its
//! resident memory before the followers connected and with them (from `/proc`).

use super::changes::{self, Ack, Feed, StopSignal};
use crate::cli::Settings;
use crate::driver::{self, Load, Workload};
use crate::http::{Pool, Target};
use crate::report::{self, RunReport};
use crate::stats::{Recorder, Verdict};
use anyhow::{bail, Context};
use bytes::Bytes;
use hyper::Method;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// People in each workspace: a few dozen records, of which the notes are written.
pub const PEOPLE: usize = 8;

/// One workspace of the run.
struct Space {
    id: String,
    /// Its writes' connections.
    pool: Arc<Pool>,
    /// Its followers' target: its key, and a timeout past a long-poll's wait.
    feed: Arc<Target>,
    notes: Vec<String>,
    acks: Mutex<Vec<Ack>>,
}

/// The writes: a PATCH of a note's title, workspace after workspace.
struct Writes {
    spaces: Vec<Space>,
    rec: Arc<Recorder>,
}

impl Workload for Writes {
    async fn op(self: Arc<Self>, seq: u64, intended: Instant) {
        let space = &self.spaces[seq as usize % self.spaces.len()];
        let turn = seq as usize / self.spaces.len();
        let id = &space.notes[turn % space.notes.len()];
        let title = format!("fan-out {seq}");
        let body = serde_json::json!({ "title": title }).to_string();
        let sent_wall = changes::wall_now();
        let sent = Instant::now();
        let r = space
            .pool
            .send(
                Method::PATCH,
                &format!("/v1/notes/{id}"),
                Some(Bytes::from(body)),
            )
            .await;
        let done = Instant::now();
        let verdict = match &r {
            Ok(a) if a.status == 200 => match a.json() {
                Ok(v) if v["data"]["title"] == title.as_str() => {
                    match v["data"]["updated_at"].as_str() {
                        Some(updated_at) => {
                            space.acks.lock().expect("lock").push(Ack {
                                entity: "notes",
                                id: id.clone(),
                                updated_at: updated_at.to_string(),
                                sent_wall,
                                sent,
                            });
                            Verdict::Ok
                        }
                        None => Verdict::Mismatch(format!("note {id}: no updated_at")),
                    }
                }
                Ok(_) => {
                    Verdict::Mismatch(format!("note {id}: the PATCH answer shows another title"))
                }
                Err(e) => Verdict::Mismatch(format!("note {id}: {e}")),
            },
            Ok(a) => Verdict::Status(a.status, a.error_code()),
            Err(f) => Verdict::Failed(f.label(), f.to_string()),
        };
        self.rec
            .record("PATCH /v1/notes/{id}", intended, done, verdict, 0);
    }

    async fn warm(self: Arc<Self>, _share: usize) {
        for s in &self.spaces {
            let _ = s.pool.warm(1).await;
        }
    }
}

/// Prepares the workspaces, runs the followers and the writes, matches every write to
/// every follower of its workspace, and prints what the server spent: the writes' run,
/// the deliveries' and the first follower's records checked against GET.
pub async fn run(s: &Settings) -> anyhow::Result<Vec<RunReport>> {
    let f = &s.fanout;
    let spaces = prepare(s).await?;
    let warmup = Duration::from_secs_f64(s.warmup);
    let writes = crate::recorder(s);
    let deliveries = Arc::new(Recorder::new(writes.measure_from, writes.measure_to));
    let resident_before = f.server_pid.and_then(resident_kib);
    let mut heads = Vec::with_capacity(spaces.len());
    for space in &spaces {
        heads.push(changes::current_token(&space.pool).await?);
    }
    let stop = Arc::new(StopSignal::default());
    let (from, to) = (writes.measure_from, writes.measure_to);
    // Each follower a task of its own, as each client is: an answer wakes its own.
    let mut following = Vec::with_capacity(f.followers);
    for i in 0..f.followers {
        let k = i % spaces.len();
        let pool = Arc::new(Pool::new(spaces[k].feed.clone(), 1));
        let mut feed = Feed::new(pool, deliveries.clone(), s.sync.limit, heads[k].clone());
        feed.got.deliveries = Some(Default::default());
        let stop = stop.clone();
        following.push(tokio::spawn(async move {
            feed.follow(&stop, from).await;
            (k, feed)
        }));
    }
    eprintln!(
        "fan-out: {} followers over {} workspaces, writes at {}/s",
        f.followers,
        spaces.len(),
        s.sync.write_rate
    );
    let load = Arc::new(Writes {
        spaces,
        rec: writes.clone(),
    });
    let pid = f.server_pid;
    let (_, followers, cpu, resident_with) = tokio::join!(
        async {
            let rate = Load::Open {
                rate: s.sync.write_rate,
            };
            driver::run(load.clone(), writes.clone(), rate, warmup, s.threads, 32).await;
            stop.raise();
        },
        async {
            let mut done = Vec::with_capacity(following.len());
            for task in following {
                done.push(task.await.expect("a follower does not panic"));
            }
            done
        },
        async {
            // The window's CPU time, read at its two ends.
            let pid = pid?;
            tokio::time::sleep_until(from.into()).await;
            let before = cpu_ticks(pid)?;
            let t = Instant::now();
            tokio::time::sleep_until(to.into()).await;
            let spent = cpu_ticks(pid)?.checked_sub(before)?;
            Some(spent as f64 / ticks_per_second() / t.elapsed().as_secs_f64())
        },
        async {
            tokio::time::sleep_until(from.into()).await;
            pid.and_then(resident_kib)
        },
    );
    let labels = changes::Labels {
        sent: "change delivered to a follower (write sent → feed)",
        stamped: "change delivered to a follower (record's updated_at → feed)",
    };
    let (mut matched, mut answers) = (0u64, 0u64);
    // Each workspace's first follower: what it received, to be checked against GET.
    let mut mirrors: Vec<Option<changes::Mirror>> = (0..load.spaces.len()).map(|_| None).collect();
    let mut followers = followers;
    for (k, feed) in &mut followers {
        let acks = load.spaces[*k].acks.lock().expect("lock");
        let got = feed.got.deliveries.take().unwrap_or_default();
        matched += changes::match_acks(&acks, &got, &deliveries, &labels).0;
        answers += feed.pages;
        if mirrors[*k].is_none() {
            mirrors[*k] = Some(std::mem::take(&mut feed.got.mirror));
        }
    }
    let acked: usize = load
        .spaces
        .iter()
        .map(|s| s.acks.lock().expect("lock").len())
        .sum();
    let window = (to - from).as_secs_f64() + warmup.as_secs_f64();
    println!(
        "fan-out: {acked} writes acknowledged; {matched} deliveries matched to {} followers; \
         {answers} feed answers ({:.0}/s)",
        f.followers,
        answers as f64 / window
    );
    if let Some(cpu) = cpu {
        println!(
            "fan-out: server CPU {:.3} cores over the window, {:.4} per 100 followers",
            cpu,
            cpu * 100.0 / f.followers as f64
        );
    }
    if let (Some(a), Some(b)) = (resident_before, resident_with) {
        println!(
            "fan-out: server resident {} MiB before the followers, {} MiB with them ({:.1} KiB a follower)",
            a / 1024,
            b / 1024,
            (b as f64 - a as f64) / f.followers as f64
        );
    }
    let rate = Load::Open {
        rate: s.sync.write_rate,
    };
    let mut runs = vec![
        report::run_report(
            crate::meta(s, "recruitd", "fanout: write", Some(rate)),
            writes.finish(),
        ),
        report::run_report(
            crate::meta(s, "recruitd", "fanout: followers", None),
            deliveries.finish(),
        ),
    ];
    // Every record each workspace's first follower received, fetched with that
    // workspace's key and compared: one run, as long as it takes.
    let start = Instant::now();
    let rec = Arc::new(Recorder::new(start, start + Duration::from_secs(86_400)));
    let mut checked = 0;
    for (space, mirror) in load.spaces.iter().zip(mirrors) {
        let pool = Arc::new(Pool::new(space.pool.target.clone(), changes::CHECKERS));
        let mirror = mirror.unwrap_or_default();
        checked += changes::check_mirror(pool, rec.clone(), mirror, start).await;
    }
    let secs = start.elapsed().as_secs_f64();
    eprintln!("checked {checked} records against GET in {secs:.1} s");
    let load = Load::Closed {
        concurrency: changes::CHECKERS,
    };
    let name = "fanout: each workspace's first follower, checked against GET";
    runs.push(crate::elapsed_run(s, name, load, secs, &rec));
    Ok(runs)
}

/// The workspaces, imported and each given a key, with their notes' ids.
async fn prepare(s: &Settings) -> anyhow::Result<Vec<Space>> {
    let f = &s.fanout;
    let bin = crate::prepare::recruitd_binary(None);
    let dir = s.out.join("fanout");
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(format!("workspace-{PEOPLE}.json"));
    // One snapshot, imported under each workspace's id in turn.
    let generated_id = crate::prepare::workspace_id(PEOPLE, 1);
    crate::prepare::generate(&bin, PEOPLE, 1, &generated_id, &path)?;
    let text = std::fs::read_to_string(&path)?;
    let doc: serde_json::Value = serde_json::from_str(&text)?;
    let owner = doc["users"]
        .as_array()
        .and_then(|u| {
            u.iter()
                .find(|u| u["role"] == "owner" && u["status"] == "active")
        })
        .and_then(|u| u["email"].as_str())
        .context("the snapshot has no active owner")?
        .to_string();
    let notes: Vec<String> = doc["notes"]
        .as_array()
        .map(|n| {
            n.iter()
                // A private note is not the API's to write (404).
                .filter(|n| n["is_private"] != true)
                .filter_map(|n| n["id"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    if notes.is_empty() {
        bail!("the generated workspace has no notes the API shows");
    }
    let base = f.admin_url.trim_end_matches('/').to_string();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()?;
    crate::prepare::admin_ready(&http, &base, &f.admin_token).await?;
    let timeout = Duration::from_secs_f64(s.timeout);
    let feed_timeout = Duration::from_secs_f64(s.timeout.max(f64::from(changes::WAIT_SECS) + 10.0));
    let started = Instant::now();
    let mut spaces = Vec::with_capacity(f.workspaces);
    for i in 0..f.workspaces {
        let id = crate::prepare::workspace_id(PEOPLE, 10_000 + i as u64);
        let body = text.replace(&generated_id, &id);
        crate::prepare::import(&http, &base, &f.admin_token, body).await?;
        let scopes = ["read", "notes:write"];
        let key = &crate::prepare::create_key(
            &http,
            &base,
            &f.admin_token,
            &id,
            &owner,
            &scopes,
            100_000_000,
        )
        .await?;
        let target = Target::new(&s.url, &s.cacert, key, timeout)?;
        spaces.push(Space {
            id,
            feed: Arc::new(target.with_timeout(feed_timeout)),
            pool: Arc::new(Pool::new(Arc::new(target), 4)),
            notes: notes.clone(),
            acks: Mutex::new(Vec::new()),
        });
    }
    eprintln!(
        "fan-out: {} workspaces of {PEOPLE} people imported in {:.1} s (the first {})",
        spaces.len(),
        started.elapsed().as_secs_f64(),
        spaces[0].id
    );
    Ok(spaces)
}

/// A process's user and system CPU time, in clock ticks (`/proc/<pid>/stat`).
fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command's closing parenthesis: utime and stime are the
    // 12th and 13th of them.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

fn ticks_per_second() -> f64 {
    // SAFETY: sysconf reads a constant of the system; no memory is shared.
    let n = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if n > 0 {
        n as f64
    } else {
        100.0
    }
}

/// A process's resident memory, in KiB (`VmRSS` of `/proc/<pid>/status`).
fn resident_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
