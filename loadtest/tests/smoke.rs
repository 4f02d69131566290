//! Smoke runs of every scenario against a real `recruitd` on a temporary data dir with
//! a small generated workspace: each must finish by itself with zero errors and zero
//! wrong answers, and leave a sane JSON report and chart. Seconds, not minutes.
//!
//! The server binary is the workspace's own `recruitd`, found next to this package's
//! binary in the same target directory (`cargo test --workspace` builds it for the
//! server's tests); failing that, it is built with cargo. With
//! `RECRUITD_TEST_DATABASE_URL` set, the PostgreSQL baseline runs too.

use serde_json::Value;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const LOADTEST: &str = env!("CARGO_BIN_EXE_recruitd-loadtest");
const ADMIN_TOKEN: &str = "smoke-admin-token";

fn recruitd_binary() -> Option<PathBuf> {
    let dir = Path::new(LOADTEST).parent()?;
    let bin = dir.join(format!("recruitd{}", std::env::consts::EXE_SUFFIX));
    if bin.is_file() {
        return Some(bin);
    }
    // Not built yet (e.g. `cargo test -p recruitd-loadtest`): build it into the same
    // target directory, with the same profile.
    let profile = dir.file_name()?.to_str()?;
    let target_dir = dir.parent()?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "-q", "-p", "recruitd", "--bin", "recruitd"])
        .arg("--target-dir")
        .arg(target_dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    if profile == "release" {
        cmd.arg("--release");
    }
    let ok = cmd.status().map(|s| s.success()).unwrap_or(false);
    (ok && bin.is_file()).then_some(bin)
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Server {
    child: Child,
    api: String,
    admin: String,
    data: tempfile::TempDir,
    out: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn start(bin: &Path) -> Server {
        let data = tempfile::tempdir().unwrap();
        let (api_port, admin_port) = (free_port(), free_port());
        let log = std::fs::File::create(data.path().join("server.log")).unwrap();
        let child = Command::new(bin)
            .arg("--data-dir")
            .arg(data.path())
            .args(["serve", "--listen", &format!("127.0.0.1:{api_port}")])
            .args(["--admin-listen", &format!("127.0.0.1:{admin_port}")])
            .args(["--workers", "2", "--webhooks-allow-insecure"])
            .env("RECRUITD_ADMIN_TOKEN", ADMIN_TOKEN)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("starting recruitd");
        let out = data.path().join("reports");
        Server {
            child,
            api: format!("https://127.0.0.1:{api_port}"),
            admin: format!("http://127.0.0.1:{admin_port}"),
            data,
            out,
        }
    }

    fn loadtest(&self, args: &[&str]) -> Output {
        let out = Command::new(LOADTEST)
            .arg("--data-dir")
            .arg(self.data.path())
            .args(["--url", &self.api, "--quiet", "--threads", "2"])
            .env("RECRUITD_ADMIN_TOKEN", ADMIN_TOKEN)
            .arg("--out")
            .arg(&self.out)
            .args(args)
            .output()
            .expect("running recruitd-loadtest");
        if !out.status.success() {
            let log =
                std::fs::read_to_string(self.data.path().join("server.log")).unwrap_or_default();
            panic!(
                "recruitd-loadtest {args:?} exited {}\nstdout:\n{}\nstderr:\n{}\nserver log (tail):\n{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
                log.lines().rev().take(30).collect::<Vec<_>>().join("\n")
            );
        }
        out
    }

    /// `GET /v1/counts` with the prepared key.
    fn counts(&self) -> Value {
        let key = std::fs::read_to_string(self.data.path().join("loadtest.key")).unwrap();
        let out = Command::new("curl")
            .args(["-s", "-k", "-H"])
            .arg(format!("Authorization: Bearer {}", key.trim()))
            .arg(format!("{}/v1/counts", self.api))
            .output();
        let body: Value = serde_json::from_slice(&out.expect("curl").stdout).unwrap();
        body["data"].clone()
    }

    /// List pages the server has answered so far (its `/metrics`, read with the admin
    /// token): every `GET /v1/{entity}` of any status.
    fn list_pages_served(&self) -> u64 {
        let out = Command::new("curl")
            .args(["-s", "-H"])
            .arg(format!("Authorization: Bearer {ADMIN_TOKEN}"))
            .arg(format!("{}/metrics", self.admin))
            .output()
            .expect("curl");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| {
                l.starts_with("recruitd_http_request_duration_seconds_count{")
                    && l.contains("route=\"/v1/{entity}\"")
                    && l.contains("method=\"GET\"")
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum()
    }

    /// The change feed's token now: a first list page's `changes_since`.
    fn changes_since(&self) -> String {
        let key = std::fs::read_to_string(self.data.path().join("loadtest.key")).unwrap();
        let out = Command::new("curl")
            .args(["-s", "-k", "-H"])
            .arg(format!("Authorization: Bearer {}", key.trim()))
            .arg(format!("{}/v1/notes?limit=1", self.api))
            .output();
        let body: Value = serde_json::from_slice(&out.expect("curl").stdout).unwrap();
        body["changes_since"].as_str().unwrap().to_string()
    }

    fn report(&self, name: &str) -> Value {
        let path = self.out.join(format!("{name}.json"));
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let svg = std::fs::read_to_string(self.out.join(format!("{name}.svg"))).unwrap();
        assert!(
            svg.starts_with("<svg") && svg.contains("percentile"),
            "{name}.svg"
        );
        assert_eq!(v["format"], "recruitd-loadtest-report/1");
        assert_eq!(v["clean"], true, "{name}: {v:#}");
        for run in v["runs"].as_array().unwrap() {
            let total = &run["total"];
            assert!(
                total["requests"].as_u64().unwrap() > 0,
                "{name}: no requests"
            );
            assert_eq!(total["errors"], 0, "{name}: {total:#}");
            assert_eq!(total["mismatches"], 0, "{name}: {total:#}");
            assert!(total["latency_us"]["p50"].as_u64().unwrap() > 0);
            assert!(!total["histogram"].as_str().unwrap().is_empty());
        }
        v
    }
}

/// The workload of each run of a report, in order.
fn workloads(report: &Value) -> Vec<&str> {
    report["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["workload"].as_str().unwrap())
        .collect()
}

#[test]
fn every_scenario_runs_clean_against_a_real_server() {
    let Some(bin) = recruitd_binary() else {
        eprintln!("SKIPPED: no recruitd binary next to {LOADTEST} and cargo could not build one");
        return;
    };
    let started = Instant::now();
    let server = Server::start(&bin);
    let prepare = |people: &str, admin: &str| {
        Command::new(LOADTEST)
            .arg("--data-dir")
            .arg(server.data.path())
            .args(["--url", &server.api, "--quiet"])
            .args(["prepare", "--people", people, "--admin-url", admin])
            .args([
                "--admin-token",
                ADMIN_TOKEN,
                "--recruitd",
                bin.to_str().unwrap(),
            ])
            .output()
            .unwrap()
    };
    // Without a server there, prepare says so at once.
    let nobody = format!("http://127.0.0.1:{}", free_port());
    let asked = Instant::now();
    let out = prepare("300", &nobody);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("no recruitd answers"),
        "{err}"
    );
    assert!(asked.elapsed() < Duration::from_secs(10), "said at once");
    // A first size, then another: the key reaches a workspace of exactly the last size.
    for people in ["500", "300"] {
        let out = prepare(people, &server.admin);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(String::from_utf8_lossy(&prepare("300", &server.admin).stderr).contains("reusing"));
    assert!(server.data.path().join("loadtest.key").is_file());
    let snapshot: Value = serde_json::from_slice(
        &std::fs::read(server.data.path().join("workspace-300-seed1.json")).unwrap(),
    )
    .unwrap();
    let counts = server.counts();
    for entity in ["candidates", "notes", "companies"] {
        assert_eq!(
            counts[entity].as_u64().unwrap() as usize,
            snapshot[entity]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| r["is_private"] != true)
                .count(),
            "{entity}: the workspace is the last size prepared"
        );
    }

    let run = ["--duration", "1.5", "--warmup", "0.5"];
    server.loadtest(&[&["--name", "lookup", "lookup", "--rate", "300"][..], &run].concat());
    let lookup = server.report("lookup");
    let run0 = &lookup["runs"][0];
    assert_eq!(run0["system"], "recruitd");
    assert_eq!(run0["target_rate"], 300.0);
    let achieved = run0["achieved_rate"].as_f64().unwrap();
    assert!((250.0..=350.0).contains(&achieved), "achieved {achieved}/s");
    let names: Vec<&str> = run0["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"GET /v1/search/phone"), "{names:?}");

    server.loadtest(
        &[
            &["--name", "lookup-closed", "lookup", "--concurrency", "4"][..],
            &run,
        ]
        .concat(),
    );
    server.report("lookup-closed");

    // Lookups alone, then beside a full-sync client of their own process: two runs, the
    // second named for the syncs, and the server served the client's pages meanwhile.
    let pages_before = server.list_pages_served();
    let out = server.loadtest(
        &[
            &["--name", "beside-sync", "lookup", "--rate", "200"][..],
            &["--sync-clients", "1", "--streams", "2", "--limit", "50"],
            &run,
        ]
        .concat(),
    );
    let beside = server.report("beside-sync");
    assert_eq!(workloads(&beside), ["lookup", "lookup beside 1 full sync"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("beside the syncs"),
        "the ratio is printed"
    );
    let pages = server.list_pages_served() - pages_before;
    // Well above the two harvests' few pages (at limit 500) that any run makes.
    assert!(pages >= 30, "the sync client read {pages} pages");

    server.loadtest(&[
        "--name",
        "sync",
        "sync",
        "--duration",
        "1",
        "--warmup",
        "0",
        "--streams",
        "2",
        "--incremental-rounds",
        "1",
    ]);
    let sync = server.report("sync");
    let summary = &sync["runs"][0]["sync"];
    assert!(summary["full_rounds"].as_u64().unwrap() >= 1, "{summary}");
    assert!(summary["full_records_per_s"].as_f64().unwrap() > 0.0);

    let before_writes = server.changes_since();
    server.loadtest(&[&["--name", "write", "write", "--rate", "40"][..], &run].concat());
    let write = server.report("write");
    assert!(write["runs"][0]["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["name"] == "POST /v1/notes"));

    // Webhooks: two endpoints catch up with the write run's changes, then receive
    // those of writes made meanwhile; every delivery checked, the first endpoint's
    // records against GET.
    server.loadtest(
        &[
            &[
                "--name",
                "webhooks",
                "sync",
                "--mode",
                "webhooks",
                "--endpoints",
                "2",
            ][..],
            &["--since", &before_writes, "--write-rate", "40"],
            &run,
        ]
        .concat(),
    );
    let hooks = server.report("webhooks");
    let parts = workloads(&hooks);
    assert_eq!(
        parts,
        [
            "webhooks: catch-up",
            "webhooks: write",
            "webhooks: deliveries",
            "webhooks: receiver",
            "webhooks: first endpoint, checked against GET"
        ]
    );
    // Both bounds of commit-to-receipt: from the write's send, and from the record's
    // `updated_at` (for the writes whose answer carries one).
    let endpoints = hooks["runs"][2]["endpoints"].as_array().unwrap();
    for name in [
        "change delivered (write sent → webhook receipt)",
        "change delivered (record's updated_at → webhook receipt)",
    ] {
        let delivered = endpoints
            .iter()
            .find(|e| e["name"] == name)
            .unwrap_or_else(|| panic!("no {name:?} in {endpoints:?}"));
        assert!(delivered["latency_us"]["p99"].as_u64().unwrap() > 0);
    }

    // A fan-out: six followers over three workspaces of their own, each acknowledged
    // write matched to both followers of its workspace; the server's CPU and memory read
    // from /proc.
    let pid = server.child.id().to_string();
    let out = server.loadtest(
        &[
            &["--name", "fanout", "sync", "--mode", "fanout"][..],
            &[
                "--workspaces",
                "3",
                "--followers",
                "6",
                "--write-rate",
                "30",
            ],
            &["--admin-url", &server.admin, "--server-pid", &pid],
            &run,
        ]
        .concat(),
    );
    let fan = server.report("fanout");
    assert_eq!(
        workloads(&fan),
        [
            "fanout: write",
            "fanout: followers",
            "fanout: each workspace's first follower, checked against GET"
        ]
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let count = |before: &str| -> u64 {
        let at = stdout
            .find(before)
            .unwrap_or_else(|| panic!("{before:?} in {stdout}"));
        let digits: String = stdout[..at]
            .chars()
            .rev()
            .skip_while(|c| *c == ' ')
            .take_while(char::is_ascii_digit)
            .collect();
        digits.chars().rev().collect::<String>().parse().unwrap()
    };
    let (acked, matched) = (count("writes acknowledged"), count("deliveries matched"));
    assert!(acked > 0, "{stdout}");
    assert_eq!(
        matched,
        2 * acked,
        "every write reached both followers: {stdout}"
    );
    assert!(stdout.contains("per 100 followers"), "{stdout}");

    // A config file drives the mixed run; flags still win (duration).
    let cfg = server.data.path().join("mixed.toml");
    std::fs::write(
        &cfg,
        "[run]\nwarmup = 0.5\nduration = 60\n[mixed]\nlookup_rate = 100\nwrite_rate = 20\n\
         sync_rate = 5\nfull_sync_every = 1\n",
    )
    .unwrap();
    server.loadtest(&[
        "--config",
        cfg.to_str().unwrap(),
        "--name",
        "mixed",
        "mixed",
        "--duration",
        "2",
    ]);
    let mixed = server.report("mixed");
    assert_eq!(
        workloads(&mixed),
        ["mixed: lookup", "mixed: write", "mixed: sync"]
    );
    assert!(mixed["runs"][2]["sync"]["full_rounds"].as_u64().unwrap() >= 1);

    if let Ok(server_url) = std::env::var("RECRUITD_TEST_DATABASE_URL") {
        // A database that does not exist yet: the load generator makes it.
        let db = format!("recruitd_smoke_{}", std::process::id());
        let url = format!("{}/{db}", server_url.rsplit_once('/').unwrap().0);
        server.loadtest(
            &[
                &["--name", "baseline", "lookup", "--concurrency", "2"][..],
                &[
                    "--duration",
                    "1",
                    "--warmup",
                    "0.2",
                    "--baseline-postgres",
                    &url,
                ],
            ]
            .concat(),
        );
        let b = server.report("baseline");
        assert_eq!(b["runs"][1]["system"], "postgresql");
        server.loadtest(&[
            "--name",
            "baseline-sync",
            "sync",
            "--duration",
            "0.5",
            "--warmup",
            "0",
            "--incremental-rounds",
            "1",
            "--baseline-postgres",
            &url,
        ]);
        let b = server.report("baseline-sync");
        assert!(b["runs"][1]["sync"]["full_records_per_s"].as_f64().unwrap() > 0.0);
        let _ = Command::new("psql")
            .arg(&server_url)
            .args(["-qc", &format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)")])
            .output();
    }

    let a = server.out.join("lookup.json");
    let b = server.out.join("lookup-closed.json");
    let out = server.loadtest(&["compare", a.to_str().unwrap(), b.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("GET /v1/search/phone"), "{text}");
    assert!(started.elapsed() < Duration::from_secs(120));
}
