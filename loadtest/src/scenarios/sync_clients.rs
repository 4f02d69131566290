//! Full-sync clients as processes of their own, for `lookup --sync-clients N`: the
//! lookups' open loop runs once alone, then again while N copies of this binary run
//! `sync` (full syncs of every entity, one after another, no incremental rounds) against
//! the same workspace. Separate processes, so that the sync's page parsing and checks
//! take no time of the lookups' own client threads: what the second run shows is what
//! the server's answers cost the lookups.

use crate::cli::Settings;
use anyhow::{bail, Context};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// How long the clients run before the lookups' run starts: their first `/v1/counts`
/// and first pages are behind them, so the measured window sees syncs in full flow.
pub const LEAD: Duration = Duration::from_secs(3);

/// The running clients, killed when stopped (or dropped).
pub struct SyncClients {
    children: Vec<Child>,
    logs: PathBuf,
}

impl SyncClients {
    /// Starts `n` clients, each running full syncs for `secs` (longer than the lookups'
    /// run: they are stopped when it ends). The key reaches them in the environment,
    /// never on a command line; their reports and output go to `<out>/<name>`.
    pub fn start(s: &Settings, name: &str, n: usize, secs: f64) -> anyhow::Result<Self> {
        let exe = std::env::current_exe().context("finding this binary")?;
        let logs = s.out.join(name);
        std::fs::create_dir_all(&logs).with_context(|| format!("creating {}", logs.display()))?;
        let mut clients = SyncClients {
            children: Vec::new(),
            logs,
        };
        for i in 0..n {
            let mut cmd = Command::new(&exe);
            if s.also.is_empty() {
                cmd.arg("--url").arg(&s.url).arg("--cacert").arg(&s.cacert);
            } else {
                for (url, cacert) in
                    std::iter::once((&s.url, &s.cacert)).chain(s.also.iter().map(|(u, c)| (u, c)))
                {
                    cmd.arg("--target")
                        .arg(format!("{url}={}", cacert.display()));
                }
            }
            let out = std::fs::File::create(clients.logs.join(format!("client-{i}.out")))?;
            let err = std::fs::File::create(clients.logs.join(format!("client-{i}.log")))?;
            cmd.arg("--out")
                .arg(&clients.logs)
                .args(["--name", &format!("client-{i}"), "--quiet"])
                .args(["--seed", &(s.seed + 1 + i as u64).to_string()])
                .arg("sync")
                .args(["--streams", &s.sync.streams.to_string()])
                .args(["--limit", &s.sync.limit.to_string()])
                .args(["--incremental-rounds", "0", "--warmup", "0"])
                .args(["--duration", &format!("{secs:.1}")])
                .env("RECRUITD_KEY", &s.key)
                .stdin(Stdio::null())
                .stdout(out)
                .stderr(err);
            let child = cmd
                .spawn()
                .with_context(|| format!("starting sync client {i} ({})", exe.display()))?;
            clients.children.push(child);
        }
        Ok(clients)
    }

    /// Fails when a client ended before it was stopped (a sync that failed, or one that
    /// ran out of time, makes the run beside it meaningless); stops the others either way.
    pub fn stop(mut self) -> anyhow::Result<()> {
        let mut ended = Vec::new();
        for (i, child) in self.children.iter_mut().enumerate() {
            if let Some(status) = child.try_wait()? {
                ended.push(format!("client {i} ({status})"));
            }
        }
        self.kill();
        if !ended.is_empty() {
            bail!(
                "sync clients ended before the lookups' run did: {}; see {}",
                ended.join(", "),
                self.logs.display()
            );
        }
        Ok(())
    }

    fn kill(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.children.clear();
    }
}

impl Drop for SyncClients {
    fn drop(&mut self) {
        self.kill();
    }
}
