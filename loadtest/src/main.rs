//! `recruitd-loadtest`: drives a running recruitd over HTTPS and reports latency
//! percentiles from HDR histograms.
//!
//! Scenarios:
//! - `write`: closed loop — `--concurrency` clients each POST a note to `/v1/notes`, wait
//!   for the answer and send the next, for `--duration` seconds after `--warmup`. Reports
//!   writes/s and latency percentiles; every answer must be a 2xx with an id.

use anyhow::{bail, Context};
use clap::{Parser, Subcommand};
use hdrhistogram::Histogram;
use serde_json::json;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(name = "recruitd-loadtest", version, about)]
struct Cli {
    /// Base URL of the API.
    #[arg(long, default_value = "https://127.0.0.1:8443")]
    url: String,
    /// API key (needs notes:write for `write`).
    #[arg(long, env = "RECRUITD_KEY", hide_env_values = true)]
    key: String,
    /// PEM certificate to trust (the server's self-signed one, `<data-dir>/tls/cert.pem`).
    #[arg(long)]
    cacert: Option<PathBuf>,
    #[command(subcommand)]
    scenario: Scenario,
}

#[derive(Subcommand)]
enum Scenario {
    /// Closed-loop note creation.
    Write {
        /// Concurrent clients.
        #[arg(long, default_value_t = 1)]
        concurrency: usize,
        /// Seconds measured.
        #[arg(long, default_value_t = 10)]
        duration: u64,
        /// Seconds run before measuring.
        #[arg(long, default_value_t = 2)]
        warmup: u64,
        /// `parent_type` of the notes.
        #[arg(long, default_value = "company")]
        parent_type: String,
        /// `parent_id` of the notes (a record of that type in the key's workspace).
        #[arg(long)]
        parent_id: String,
    },
}

fn client(cacert: Option<&PathBuf>, pool: usize) -> anyhow::Result<reqwest::Client> {
    let mut b = reqwest::Client::builder()
        .use_rustls_tls()
        .pool_max_idle_per_host(pool)
        .timeout(Duration::from_secs(30));
    if let Some(path) = cacert {
        let pem = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        b = b.add_root_certificate(reqwest::Certificate::from_pem(&pem)?);
    }
    Ok(b.build()?)
}

struct Report {
    latencies: Histogram<u64>,
    errors: u64,
    elapsed: Duration,
}

impl Report {
    fn print(&self, what: &str) {
        let h = &self.latencies;
        let ms = |v: u64| v as f64 / 1000.0;
        println!(
            "{what}: {} ok, {} errors in {:.1} s = {:.0}/s; latency ms p50 {:.2} p90 {:.2} p99 {:.2} p99.9 {:.2} max {:.2}",
            h.len(),
            self.errors,
            self.elapsed.as_secs_f64(),
            h.len() as f64 / self.elapsed.as_secs_f64(),
            ms(h.value_at_quantile(0.5)),
            ms(h.value_at_quantile(0.9)),
            ms(h.value_at_quantile(0.99)),
            ms(h.value_at_quantile(0.999)),
            ms(h.max()),
        );
    }
}

async fn write(
    cli: &Cli,
    concurrency: usize,
    duration: Duration,
    warmup: Duration,
    parent_type: &str,
    parent_id: &str,
) -> anyhow::Result<Report> {
    let http = client(cli.cacert.as_ref(), concurrency)?;
    let url = format!("{}/v1/notes", cli.url.trim_end_matches('/'));
    let measuring = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let errors = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for c in 0..concurrency {
        let (http, url, key) = (http.clone(), url.clone(), cli.key.clone());
        let (measuring, stop, errors) = (measuring.clone(), stop.clone(), errors.clone());
        let body = json!({"parent_type": parent_type, "parent_id": parent_id, "body_html": ""});
        tasks.push(tokio::spawn(async move {
            let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("bounds");
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                let mut b = body.clone();
                b["body_html"] = json!(format!("<p>load {c}-{n}</p>"));
                let sent = Instant::now();
                let ok = match http.post(&url).bearer_auth(&key).json(&b).send().await {
                    Ok(res) if res.status().is_success() => res
                        .json::<serde_json::Value>()
                        .await
                        .is_ok_and(|v| v["data"]["id"].is_string()),
                    _ => false,
                };
                if measuring.load(Ordering::Relaxed) {
                    if ok {
                        h.saturating_record(sent.elapsed().as_micros() as u64);
                    } else {
                        errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            h
        }));
    }
    tokio::time::sleep(warmup).await;
    measuring.store(true, Ordering::Relaxed);
    let started = Instant::now();
    tokio::time::sleep(duration).await;
    measuring.store(false, Ordering::Relaxed);
    let elapsed = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    let mut all = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("bounds");
    for t in tasks {
        all.add(t.await?)?;
    }
    Ok(Report {
        latencies: all,
        errors: errors.load(Ordering::Relaxed),
        elapsed,
    })
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match &cli.scenario {
        Scenario::Write {
            concurrency,
            duration,
            warmup,
            parent_type,
            parent_id,
        } => {
            if *concurrency == 0 {
                bail!("--concurrency must be at least 1");
            }
            let r = write(
                &cli,
                *concurrency,
                Duration::from_secs(*duration),
                Duration::from_secs(*warmup),
                parent_type,
                parent_id,
            )
            .await?;
            r.print(&format!("write x{concurrency}"));
        }
    }
    Ok(())
}
