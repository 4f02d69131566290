//! A throwaway PostgreSQL cluster for fault tests: `initdb` in a temporary directory and
//! a server of its own on a free port, stopped (immediately) when dropped. Faults that
//! change server settings (a synchronous standby that never answers, a read-only server)
//! are produced here, never on the shared server that other tests use.
//!
//! The binaries come from `/usr/lib/postgresql/<version>/bin` (the newest present);
//! `initdb` refuses to run as root, so as root the cluster belongs to the `postgres`
//! user and is run through `runuser`.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};
use tempfile::TempDir;

pub struct ThrowawayPostgres {
    dir: TempDir,
    bin: PathBuf,
    pub port: u16,
}

fn binaries() -> Option<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| {
            let e = e.ok()?;
            let v = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((v, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

impl ThrowawayPostgres {
    /// A new cluster, started and accepting; `None` (with a note) where the PostgreSQL
    /// server binaries are not installed.
    pub fn start() -> Option<ThrowawayPostgres> {
        let Some(bin) = binaries() else {
            eprintln!("no PostgreSQL server binaries under /usr/lib/postgresql: test not run");
            return None;
        };
        let dir = tempfile::Builder::new()
            .prefix("recruitd-pg-")
            .tempdir()
            .unwrap();
        if is_root() {
            let status = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(dir.path())
                .status()
                .unwrap();
            assert!(status.success(), "chown of the cluster directory");
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let pg = ThrowawayPostgres { dir, bin, port };
        pg.run(
            "initdb",
            &[
                "-D",
                pg.data().to_str().unwrap(),
                "-U",
                "postgres",
                "--auth=trust",
                "--no-sync",
            ],
        );
        let options = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=50",
            pg.dir.path().display()
        );
        pg.run(
            "pg_ctl",
            &[
                "-D",
                pg.data().to_str().unwrap(),
                "-l",
                pg.dir.path().join("server.log").to_str().unwrap(),
                "-o",
                &options,
                "-w",
                "-t",
                "60",
                "start",
            ],
        );
        Some(pg)
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// One of the cluster's binaries, run as the cluster's owner.
    fn command(&self, tool: &str) -> Command {
        let exe = self.bin.join(tool);
        if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"])
                .arg(exe)
                .current_dir(self.dir.path());
            c
        } else {
            Command::new(exe)
        }
    }

    /// Runs one of the cluster's binaries; panics on failure.
    fn run(&self, tool: &str, args: &[&str]) {
        let out = self.command(tool).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{tool} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Runs statements on a connection of their own.
    pub async fn exec(&self, sql: &str) {
        use sqlx::Connection;
        let mut conn = sqlx::PgConnection::connect(&self.url()).await.unwrap();
        sqlx::raw_sql(sql).execute(&mut conn).await.unwrap();
        conn.close().await.ok();
    }

    /// Sets a server setting (`ALTER SYSTEM`) and waits until new sessions see it.
    pub async fn set(&self, name: &str, value: Option<&str>) {
        let change = match value {
            Some(v) => format!("ALTER SYSTEM SET {name} = '{v}'"),
            None => format!("ALTER SYSTEM RESET {name}"),
        };
        // Apart: several statements in one simple query form one transaction, and
        // ALTER SYSTEM refuses to run inside one.
        self.exec(&change).await;
        self.exec("SELECT pg_reload_conf()").await;
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            use sqlx::Connection;
            let mut conn = sqlx::PgConnection::connect(&self.url()).await.unwrap();
            let now: String = sqlx::query_scalar(&format!("SHOW {name}"))
                .fetch_one(&mut conn)
                .await
                .unwrap();
            conn.close().await.ok();
            let want_default = value.is_none() && (now.is_empty() || now == "off");
            if Some(now.as_str()) == value || want_default {
                return;
            }
            assert!(Instant::now() < deadline, "{name} is still {now:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Makes every COMMIT wait for a synchronous standby that never connects (durable
    /// locally, invisible to other sessions, never confirmed), and returns once a COMMIT
    /// really waits. A session sees the new setting at once, but commits wait only once
    /// the checkpointer has published it to shared memory after its own reload, which a
    /// busy machine may delay; so a probe transaction is committed until one stalls.
    pub async fn stall_commits(&self) {
        use sqlx::Connection;
        // Made while commits still go through; a row written to it is WAL to wait for.
        self.exec("CREATE TABLE IF NOT EXISTS stall_probe (x int)")
            .await;
        self.set("synchronous_standby_names", Some("nobody")).await;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let mut conn = sqlx::PgConnection::connect(&self.url()).await.unwrap();
            let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
                .fetch_one(&mut conn)
                .await
                .unwrap();
            let probe = async {
                sqlx::query("INSERT INTO stall_probe VALUES (1)")
                    .execute(&mut conn)
                    .await
            };
            let stalled = tokio::time::timeout(Duration::from_millis(300), probe)
                .await
                .is_err();
            drop(conn);
            if stalled {
                // The probe's backend waits for the standby: end it (its row is then
                // committed locally), so that it holds nothing.
                self.exec(&format!("SELECT pg_terminate_backend({pid})"))
                    .await;
                return;
            }
            assert!(
                Instant::now() < deadline,
                "commits still do not wait for the synchronous standby"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Lets commits go through again (and those waiting finish).
    pub async fn release_commits(&self) {
        self.set("synchronous_standby_names", None).await;
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }
}

impl Drop for ThrowawayPostgres {
    fn drop(&mut self) {
        let data = self.data();
        let _ = self
            .command("pg_ctl")
            .args(["-D", data.to_str().unwrap(), "-m", "immediate", "stop"])
            .output();
    }
}
