//! Command line and TOML configuration. Every setting has a flag; a `--config` file can
//! hold any of them (flags win), so a team can keep its benchmark in version control.
//! `examples/day.toml` lists them all with their meaning; the file's top level holds the
//! common settings, `[run]` the load shape, and `[lookup]`, `[sync]`, `[write]`,
//! `[mixed]` each scenario's own. Unknown keys are refused, so a typo never silently
//! falls back to a default.

use anyhow::{bail, Context};
use clap::{Args, Parser, Subcommand};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Parser)]
#[command(
    name = "recruitd-loadtest",
    version,
    about = "Benchmarks a running recruitd over HTTPS: lookups, syncs, writes, and a mixed day",
    after_help = "Typical use: `recruitd-loadtest --data-dir data prepare --people 100000` \
                  once, then `recruitd-loadtest --data-dir data --key-file data/loadtest.key \
                  lookup --rate 5000`."
)]
pub struct Cli {
    #[command(flatten)]
    pub common: Common,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Args, Clone, Default)]
pub struct Common {
    /// TOML file with any of these settings (flags override it).
    #[arg(long, global = true)]
    pub config: Option<PathBuf>,
    /// Base URL of the API (HTTPS).
    #[arg(long, global = true)]
    pub url: Option<String>,
    /// The server's data directory: supplies the CA certificate (`tls/cert.pem`) and the
    /// admin token (`admin-token`) unless given otherwise.
    #[arg(long, global = true)]
    pub data_dir: Option<PathBuf>,
    /// PEM certificate to trust (the server's self-signed one).
    #[arg(long, global = true)]
    pub cacert: Option<PathBuf>,
    /// Several nodes of one cluster to spread the clients' connections over, in turn:
    /// `URL` (trusting `--cacert`) or `URL=CACERT`; repeat for each. The first is also
    /// the one set-up requests go to (`--url` is ignored when given).
    #[arg(long = "target", global = true, value_name = "URL[=CACERT]")]
    pub targets: Vec<String>,
    /// API key (needs notes:write, tasks:write and records:write for `write`/`mixed`).
    #[arg(long, env = "RECRUITD_KEY", hide_env_values = true, global = true)]
    pub key: Option<String>,
    /// File holding the API key (as written by `prepare`).
    #[arg(long, global = true)]
    pub key_file: Option<PathBuf>,
    /// Directory for reports (JSON, SVG).
    #[arg(long, global = true)]
    pub out: Option<PathBuf>,
    /// Report name (file stem); default `<scenario>-<UTC time>`.
    #[arg(long, global = true)]
    pub name: Option<String>,
    /// An earlier JSON report to print the change against.
    #[arg(long, global = true)]
    pub compare: Option<PathBuf>,
    /// No progress line.
    #[arg(long, global = true)]
    pub quiet: bool,
    /// Seed of every random choice (queries, parents, shares).
    #[arg(long, global = true)]
    pub seed: Option<u64>,
    /// Client threads sending lookups and writes (default: 1 for an open loop, one per
    /// CPU for a closed loop; `mixed` uses one per part).
    #[arg(long, global = true)]
    pub threads: Option<usize>,
}

#[derive(Subcommand)]
pub enum Command {
    /// Generates a workspace of N people, imports it through the admin interface and
    /// creates a key with every scope and a raised rate limit.
    Prepare(PrepareArgs),
    /// Phone searches in the formats softphones send, unknown numbers, e-mail searches.
    Lookup(RunArgs),
    /// Full sync of every entity at limit=500, then incremental syncs; repeated. With
    /// `--mode changes`: follows `GET /v1/changes` (catch-up from `--since`, then
    /// long-poll while writes run at `--write-rate`). With `--mode webhooks`: registers
    /// `--endpoints` webhook endpoints on a receiver of its own (the server needs
    /// `--webhooks-allow-insecure`), checks every delivery's signature and order, and
    /// measures write-to-receipt latency (and a catch-up from `--since`).
    Sync(RunArgs),
    /// Notes and tasks (with references), PATCHes of notes, tasks and candidates.
    Write(RunArgs),
    /// Lookups, writes and incremental syncs at once, each at its own open-loop rate,
    /// with a periodic full sync.
    Mixed(RunArgs),
    /// Prints the change between two JSON reports (`--compare` does it after a run).
    Compare { before: PathBuf, after: PathBuf },
}

impl Command {
    pub fn scenario(&self) -> Option<Scenario> {
        match self {
            Command::Lookup(_) => Some(Scenario::Lookup),
            Command::Sync(_) => Some(Scenario::Sync),
            Command::Write(_) => Some(Scenario::Write),
            Command::Mixed(_) => Some(Scenario::Mixed),
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scenario {
    Lookup,
    Sync,
    Write,
    Mixed,
}

impl Scenario {
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Lookup => "lookup",
            Scenario::Sync => "sync",
            Scenario::Write => "write",
            Scenario::Mixed => "mixed",
        }
    }
}

#[derive(Args, Clone)]
pub struct PrepareArgs {
    /// People in the generated workspace.
    #[arg(long)]
    pub people: usize,
    /// Generator seed (the same seed gives the same workspace).
    #[arg(long, default_value_t = 1)]
    pub gen_seed: u64,
    /// The `recruitd` binary that generates the snapshot (default: next to this one,
    /// else on PATH).
    #[arg(long)]
    pub recruitd: Option<PathBuf>,
    /// An existing snapshot to import instead of generating one.
    #[arg(long)]
    pub snapshot: Option<PathBuf>,
    /// Admin interface (plain HTTP, loopback).
    #[arg(long, default_value = "http://127.0.0.1:8444")]
    pub admin_url: String,
    /// Admin token (default: `<data-dir>/admin-token`).
    #[arg(long, env = "RECRUITD_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,
    /// Where to write the new key's secret (default: `<data-dir>/loadtest.key`).
    #[arg(long)]
    pub write_key: Option<PathBuf>,
    /// The key's per-minute budget: far above any benchmark's request rate.
    #[arg(long, default_value_t = 100_000_000)]
    pub rate_limit_per_minute: u32,
}

/// Flags of the four scenarios; any left unset comes from the file, then defaults.
#[derive(Args, Clone, Default)]
pub struct RunArgs {
    /// Open loop: operations per second (mixed: see --lookup-rate etc.).
    #[arg(long, conflicts_with = "concurrency")]
    pub rate: Option<f64>,
    /// Closed loop: operations in flight (max-throughput mode).
    #[arg(long)]
    pub concurrency: Option<usize>,
    /// Seconds measured.
    #[arg(long)]
    pub duration: Option<f64>,
    /// Seconds run before measuring (excluded from every figure).
    #[arg(long)]
    pub warmup: Option<f64>,
    /// Most connections an open-loop run may open.
    #[arg(long)]
    pub connections: Option<usize>,
    /// Seconds before a request counts as failed.
    #[arg(long)]
    pub timeout: Option<f64>,
    /// Also run the lookup or sync workload as plain SQL against this PostgreSQL
    /// (loads a copy of the workspace into schema `recruitd_baseline`).
    #[arg(long)]
    pub baseline_postgres: Option<String>,
    /// lookup: share of numbers nobody holds.
    #[arg(long)]
    pub unknown_share: Option<f64>,
    /// lookup: share of e-mail searches.
    #[arg(long)]
    pub email_share: Option<f64>,
    /// lookup: share of numbers with fewer than eight digits.
    #[arg(long)]
    pub invalid_share: Option<f64>,
    /// lookup: after the run alone, run again while this many other processes run full
    /// syncs of the same workspace (with this run's `--streams` and `--limit`).
    #[arg(long)]
    pub sync_clients: Option<usize>,
    /// sync: entities synced in parallel.
    #[arg(long)]
    pub streams: Option<usize>,
    /// sync: incremental rounds after each full sync.
    #[arg(long)]
    pub incremental_rounds: Option<usize>,
    /// sync: page size.
    #[arg(long)]
    pub limit: Option<u32>,
    /// sync: `pages` (lists with cursors and watermarks) or `changes` (the change feed).
    #[arg(long, value_enum)]
    pub mode: Option<SyncMode>,
    /// sync --mode changes: first read the feed from this token (a list's
    /// `changes_since` or a `next_since`) as fast as it answers, and report changes/s
    /// (`--mode webhooks`: the endpoints are replayed from it).
    #[arg(long)]
    pub since: Option<String>,
    /// sync --mode webhooks: endpoints registered (at most 20 a workspace).
    #[arg(long)]
    pub endpoints: Option<usize>,
    /// sync --mode fanout: small workspaces imported through the admin interface.
    #[arg(long)]
    pub workspaces: Option<usize>,
    /// sync --mode fanout: clients long-polling the feeds, dealt in turn to the
    /// workspaces.
    #[arg(long)]
    pub followers: Option<usize>,
    /// sync --mode fanout: the admin interface (plain HTTP, loopback).
    #[arg(long, default_value = "http://127.0.0.1:8444")]
    pub admin_url: String,
    /// sync --mode fanout: the server's process, whose CPU time and resident memory
    /// are reported (read from /proc).
    #[arg(long)]
    pub server_pid: Option<u32>,
    /// sync --mode webhooks: the share of deliveries the receiver answers 500 without
    /// taking them.
    #[arg(long)]
    pub fail_share: Option<f64>,
    /// sync --mode webhooks: the share of deliveries the receiver takes but answers only
    /// after `--slow-secs` (past the server's 10 s: a timeout, then a repeat).
    #[arg(long)]
    pub slow_share: Option<f64>,
    /// sync --mode webhooks: how long a slow answer takes (default 11 s).
    #[arg(long)]
    pub slow_secs: Option<f64>,
    /// sync --mode webhooks: the share of deliveries the receiver takes and then closes
    /// the connection without answering.
    #[arg(long)]
    pub reset_share: Option<f64>,
    /// sync --mode webhooks: how many of the endpoints (the last ones) hang: every
    /// delivery held 10 s, then answered 503 without being taken. They are left out of
    /// the completeness checks; the others must be unaffected.
    #[arg(long)]
    pub hanging: Option<usize>,
    /// write: weights, e.g. `notes=40,tasks=20,note_patches=15,task_patches=10,record_patches=15`.
    #[arg(long, value_parser = parse_mix)]
    pub mix: Option<BTreeMap<String, u32>>,
    /// mixed: lookups per second.
    #[arg(long)]
    pub lookup_rate: Option<f64>,
    /// mixed, and sync --mode changes: writes per second (changes: 0 for none).
    #[arg(long)]
    pub write_rate: Option<f64>,
    /// mixed: incremental syncs (one entity each) per second.
    #[arg(long)]
    pub sync_rate: Option<f64>,
    /// mixed: seconds between full syncs of every entity (0: none).
    #[arg(long)]
    pub full_sync_every: Option<f64>,
}

fn parse_mix(s: &str) -> Result<BTreeMap<String, u32>, String> {
    let mut m = BTreeMap::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        let (k, v) = part
            .split_once('=')
            .ok_or_else(|| format!("`{part}`: expected name=weight"))?;
        let v: u32 = v
            .parse()
            .map_err(|_| format!("`{part}`: weight is not a number"))?;
        m.insert(k.trim().to_string(), v);
    }
    Ok(m)
}

/// The file: the same settings, grouped.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    url: Option<String>,
    data_dir: Option<PathBuf>,
    cacert: Option<PathBuf>,
    key_file: Option<PathBuf>,
    out: Option<PathBuf>,
    seed: Option<u64>,
    threads: Option<usize>,
    baseline_postgres: Option<String>,
    #[serde(default)]
    run: FileRun,
    #[serde(default)]
    lookup: FileLookup,
    #[serde(default)]
    sync: FileSync,
    #[serde(default)]
    write: FileWrite,
    #[serde(default)]
    mixed: FileMixed,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileRun {
    rate: Option<f64>,
    concurrency: Option<usize>,
    duration: Option<f64>,
    warmup: Option<f64>,
    connections: Option<usize>,
    timeout: Option<f64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileLookup {
    unknown_share: Option<f64>,
    email_share: Option<f64>,
    invalid_share: Option<f64>,
    sync_clients: Option<usize>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileSync {
    streams: Option<usize>,
    incremental_rounds: Option<usize>,
    limit: Option<u32>,
    mode: Option<SyncMode>,
    since: Option<String>,
    write_rate: Option<f64>,
    endpoints: Option<usize>,
}

/// How `sync` reads the workspace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum SyncMode {
    /// Lists page by page, then incremental rounds from watermarks.
    Pages,
    /// The change feed.
    Changes,
    /// The change feed pushed: webhook deliveries to a receiver of the load
    /// generator's.
    Webhooks,
    /// Many clients long-polling the feeds of many workspaces while writes commit
    /// across them.
    Fanout,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileWrite {
    mix: Option<BTreeMap<String, u32>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileMixed {
    lookup_rate: Option<f64>,
    write_rate: Option<f64>,
    sync_rate: Option<f64>,
    full_sync_every: Option<f64>,
}

/// Everything a run uses, resolved (flags, then file, then defaults); recorded in the
/// report so that a figure can be traced to how it was made.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Settings {
    pub scenario: Scenario,
    pub url: String,
    #[serde(skip)]
    pub cacert: PathBuf,
    /// Further nodes the connections are spread over (`--target`), with the
    /// certificate each is trusted by.
    #[serde(default)]
    pub also: Vec<(String, PathBuf)>,
    #[serde(skip)]
    pub key: String,
    #[serde(skip)]
    pub out: PathBuf,
    #[serde(skip)]
    pub name: Option<String>,
    #[serde(skip)]
    pub compare: Option<PathBuf>,
    #[serde(skip)]
    pub progress: bool,
    pub seed: u64,
    pub threads: usize,
    /// `None`: closed loop at `concurrency`.
    pub rate: Option<f64>,
    pub concurrency: usize,
    pub duration: f64,
    pub warmup: f64,
    pub connections: usize,
    pub timeout: f64,
    #[serde(skip)]
    pub baseline_postgres: Option<String>,
    pub lookup: LookupSettings,
    pub sync: SyncSettings,
    pub fanout: FanoutSettings,
    pub write: WriteSettings,
    pub mixed: MixedSettings,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LookupSettings {
    pub unknown_share: f64,
    pub email_share: f64,
    pub invalid_share: f64,
    /// Full-sync clients (processes of their own) the second run has beside it; 0: no
    /// second run.
    #[serde(default)]
    pub sync_clients: usize,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SyncSettings {
    pub streams: usize,
    pub incremental_rounds: usize,
    pub limit: u32,
    pub mode: SyncMode,
    /// `--mode changes`: the token a catch-up starts from.
    #[serde(skip)]
    pub since: Option<String>,
    /// `--mode changes`: writes per second while following.
    pub write_rate: f64,
    /// `--mode webhooks`: endpoints registered.
    pub endpoints: usize,
    /// `--mode webhooks`: how the receiver misbehaves.
    pub faults: ReceiverFaults,
}

/// `sync --mode fanout`: the workspaces and followers, and where to prepare them.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FanoutSettings {
    pub workspaces: usize,
    pub followers: usize,
    #[serde(skip)]
    pub admin_url: String,
    #[serde(skip)]
    pub admin_token: String,
    #[serde(skip)]
    pub server_pid: Option<u32>,
}

/// `sync --mode webhooks`: faults the receiver produces on purpose.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ReceiverFaults {
    /// Share of deliveries answered 500, not taken.
    pub fail: f64,
    /// Share of deliveries taken but answered after `slow_secs`.
    pub slow: f64,
    pub slow_secs: f64,
    /// Share of deliveries taken, then the connection closed with no answer.
    pub reset: f64,
    /// The last `hanging` endpoints hold every delivery 10 s and answer 503.
    pub hanging: usize,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WriteSettings {
    pub mix: BTreeMap<String, u32>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MixedSettings {
    pub lookup_rate: f64,
    pub write_rate: f64,
    pub sync_rate: f64,
    pub full_sync_every: f64,
}

pub const WRITE_KINDS: [&str; 5] = [
    "notes",
    "tasks",
    "note_patches",
    "task_patches",
    "record_patches",
];

fn read_file_config(path: Option<&Path>) -> anyhow::Result<FileConfig> {
    let Some(path) = path else {
        return Ok(FileConfig::default());
    };
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

/// The data dir and CA certificate, as given or implied.
pub fn cacert(common: &Common, file_cacert: Option<PathBuf>, data_dir: Option<&Path>) -> PathBuf {
    common
        .cacert
        .clone()
        .or(file_cacert)
        .or_else(|| data_dir.map(|d| d.join("tls/cert.pem")))
        .unwrap_or_else(|| PathBuf::from("data/tls/cert.pem"))
}

/// The data directory named by the flag or the file, if any.
pub fn data_dir(common: &Common) -> anyhow::Result<Option<PathBuf>> {
    let file = read_file_config(common.config.as_deref())?;
    Ok(common.data_dir.clone().or(file.data_dir))
}

impl Settings {
    pub fn resolve(common: &Common, scenario: Scenario, a: &RunArgs) -> anyhow::Result<Self> {
        let f = read_file_config(common.config.as_deref())?;
        let data_dir = common.data_dir.clone().or(f.data_dir.clone());
        let mode = a.mode.or(f.sync.mode).unwrap_or(SyncMode::Pages);
        // A fan-out makes a key for each workspace it prepares.
        let fanout = scenario == Scenario::Sync && mode == SyncMode::Fanout;
        let key = match (
            &common.key,
            common.key_file.as_ref().or(f.key_file.as_ref()),
        ) {
            (Some(k), _) => k.clone(),
            (None, Some(path)) => std::fs::read_to_string(path)
                .with_context(|| format!("reading the key file {}", path.display()))?
                .trim()
                .to_string(),
            (None, None) => match data_dir.as_ref().map(|d| d.join("loadtest.key")) {
                Some(p) if p.exists() => std::fs::read_to_string(&p)?.trim().to_string(),
                _ if fanout => String::new(),
                _ => bail!(
                    "no API key: give --key, --key-file, or run `prepare` with the same --data-dir"
                ),
            },
        };
        let rate = a.rate.or(if a.concurrency.is_some() {
            None
        } else {
            f.run.rate
        });
        let mut mix: BTreeMap<String, u32> = [
            ("notes", 40),
            ("tasks", 20),
            ("note_patches", 15),
            ("task_patches", 10),
            ("record_patches", 15),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        if let Some(m) = a.mix.clone().or(f.write.mix) {
            for k in m.keys() {
                if !WRITE_KINDS.contains(&k.as_str()) {
                    bail!(
                        "unknown write kind `{k}` (known: {})",
                        WRITE_KINDS.join(", ")
                    );
                }
            }
            for v in mix.values_mut() {
                *v = 0;
            }
            mix.extend(m);
        }
        if mix.values().all(|&v| v == 0) {
            bail!("the write mix has no weight");
        }
        let cacert = cacert(common, f.cacert, data_dir.as_deref());
        let mut targets: Vec<(String, PathBuf)> = common
            .targets
            .iter()
            .map(|t| match t.split_once('=') {
                Some((url, pem)) => (url.to_string(), PathBuf::from(pem)),
                None => (t.clone(), cacert.clone()),
            })
            .collect();
        let (url, cacert) = match targets.is_empty() {
            true => (
                common
                    .url
                    .clone()
                    .or(f.url)
                    .unwrap_or_else(|| "https://127.0.0.1:8443".into()),
                cacert,
            ),
            false => targets.remove(0),
        };
        let s = Settings {
            scenario,
            url,
            cacert,
            also: targets,
            key,
            out: common
                .out
                .clone()
                .or(f.out)
                .unwrap_or_else(|| "loadtest-reports".into()),
            name: common.name.clone(),
            compare: common.compare.clone(),
            progress: !common.quiet,
            seed: common.seed.or(f.seed).unwrap_or(1),
            threads: common.threads.or(f.threads).unwrap_or_else(|| {
                if rate.is_some() {
                    1
                } else {
                    std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get)
                }
            }),
            rate,
            concurrency: a.concurrency.or(f.run.concurrency).unwrap_or(32),
            duration: a.duration.or(f.run.duration).unwrap_or(30.0),
            warmup: a.warmup.or(f.run.warmup).unwrap_or(5.0),
            connections: a.connections.or(f.run.connections).unwrap_or(256),
            timeout: a.timeout.or(f.run.timeout).unwrap_or(30.0),
            baseline_postgres: a.baseline_postgres.clone().or(f.baseline_postgres),
            lookup: LookupSettings {
                unknown_share: a.unknown_share.or(f.lookup.unknown_share).unwrap_or(0.1),
                email_share: a.email_share.or(f.lookup.email_share).unwrap_or(0.1),
                invalid_share: a.invalid_share.or(f.lookup.invalid_share).unwrap_or(0.02),
                sync_clients: a.sync_clients.or(f.lookup.sync_clients).unwrap_or(0),
            },
            sync: SyncSettings {
                streams: a.streams.or(f.sync.streams).unwrap_or(3),
                incremental_rounds: a
                    .incremental_rounds
                    .or(f.sync.incremental_rounds)
                    .unwrap_or(3),
                limit: a.limit.or(f.sync.limit).unwrap_or(500),
                mode,
                since: a.since.clone().or(f.sync.since),
                write_rate: a.write_rate.or(f.sync.write_rate).unwrap_or(500.0),
                endpoints: a.endpoints.or(f.sync.endpoints).unwrap_or(10),
                faults: ReceiverFaults {
                    fail: a.fail_share.unwrap_or(0.0),
                    slow: a.slow_share.unwrap_or(0.0),
                    slow_secs: a.slow_secs.unwrap_or(11.0),
                    reset: a.reset_share.unwrap_or(0.0),
                    hanging: a.hanging.unwrap_or(0),
                },
            },
            fanout: FanoutSettings {
                workspaces: a.workspaces.unwrap_or(100),
                followers: a.followers.unwrap_or(1000),
                admin_url: a.admin_url.clone(),
                admin_token: match (fanout, data_dir.as_ref()) {
                    (true, _) if std::env::var("RECRUITD_ADMIN_TOKEN").is_ok() => {
                        std::env::var("RECRUITD_ADMIN_TOKEN")?
                    }
                    (true, Some(d)) => std::fs::read_to_string(d.join("admin-token"))
                        .with_context(|| format!("reading {}", d.join("admin-token").display()))?
                        .trim()
                        .to_string(),
                    (true, None) => bail!(
                        "sync --mode fanout needs the admin token: RECRUITD_ADMIN_TOKEN, or \
                         --data-dir (its admin-token)"
                    ),
                    (false, _) => String::new(),
                },
                server_pid: a.server_pid,
            },
            write: WriteSettings { mix },
            mixed: MixedSettings {
                lookup_rate: a.lookup_rate.or(f.mixed.lookup_rate).unwrap_or(300.0),
                write_rate: a.write_rate.or(f.mixed.write_rate).unwrap_or(20.0),
                sync_rate: a.sync_rate.or(f.mixed.sync_rate).unwrap_or(2.0),
                full_sync_every: a
                    .full_sync_every
                    .or(f.mixed.full_sync_every)
                    .unwrap_or(120.0),
            },
        };
        s.validate()?;
        Ok(s)
    }

    fn validate(&self) -> anyhow::Result<()> {
        let shares =
            self.lookup.unknown_share + self.lookup.email_share + self.lookup.invalid_share;
        for (name, v) in [
            ("unknown_share", self.lookup.unknown_share),
            ("email_share", self.lookup.email_share),
            ("invalid_share", self.lookup.invalid_share),
        ] {
            if !(0.0..=1.0).contains(&v) {
                bail!("{name} must be between 0 and 1");
            }
        }
        if shares > 1.0 {
            bail!("unknown_share + email_share + invalid_share exceed 1");
        }
        if self.lookup.sync_clients > 16 {
            bail!("--sync-clients must be at most 16");
        }
        if self.rate.is_some_and(|r| !(r > 0.0 && r.is_finite())) {
            bail!("--rate must be positive");
        }
        if self.concurrency == 0 || self.connections == 0 || self.sync.streams == 0 {
            bail!("--concurrency, --connections and --streams must be at least 1");
        }
        if !(self.duration > 0.0 && self.duration <= 7.0 * 86_400.0) {
            bail!("--duration must be positive (and at most a week)");
        }
        if !(self.warmup >= 0.0 && self.timeout > 0.0) {
            bail!("--warmup must be 0 or more, --timeout positive");
        }
        if !(1..=500).contains(&self.sync.limit) {
            bail!("--limit must be between 1 and 500");
        }
        if !(self.sync.write_rate >= 0.0 && self.sync.write_rate.is_finite()) {
            bail!("--write-rate must be 0 or more");
        }
        if self.sync.mode == SyncMode::Changes
            && self.sync.write_rate == 0.0
            && self.sync.since.is_none()
        {
            bail!("sync --mode changes needs --since (a catch-up), writes (--write-rate), or both");
        }
        if self.fanout.workspaces == 0 || self.fanout.followers < self.fanout.workspaces {
            bail!("--workspaces must be at least 1, and --followers at least as many");
        }
        if self.sync.mode == SyncMode::Fanout && self.sync.write_rate == 0.0 {
            bail!("sync --mode fanout needs writes (--write-rate) to deliver");
        }
        if !(1..=20).contains(&self.sync.endpoints) {
            bail!("--endpoints must be between 1 and 20 (a workspace's most)");
        }
        let f = &self.sync.faults;
        for share in [f.fail, f.slow, f.reset] {
            if !(0.0..=1.0).contains(&share) {
                bail!("--fail-share, --slow-share and --reset-share must be between 0 and 1");
            }
        }
        if f.fail + f.slow + f.reset >= 1.0 {
            bail!(
                "--fail-share, --slow-share and --reset-share must leave some deliveries answered"
            );
        }
        if !(f.slow_secs >= 0.0 && f.slow_secs.is_finite()) {
            bail!("--slow-secs must be 0 or more");
        }
        if f.hanging >= self.sync.endpoints {
            bail!("--hanging must leave at least one endpoint answering");
        }
        for v in [
            self.mixed.lookup_rate,
            self.mixed.write_rate,
            self.mixed.sync_rate,
            self.mixed.full_sync_every,
        ] {
            if !(v >= 0.0 && v.is_finite()) {
                bail!("mixed rates and full_sync_every must be 0 or more");
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "cli_tests.rs"]
mod tests;
