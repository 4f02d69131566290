//! The store lock: who may write a store while a server serves it.
//!
//! A running server keeps its workspaces in memory and writes through to the store; it
//! never reads back what it did not write itself. An offline writer (`recruitd import`,
//! or `recruitd key create|revoke` when no server's admin interface answers) writing
//! beside it would go unseen — a revoked key keeps working, imported records are not
//! served — and the server's next write of the same rows would overwrite it. So:
//!
//! - every `serve` holds the lock for its lifetime: exclusively on SQLite (the embedded
//!   store is single-node, and this is what refuses a second server on it), shared on
//!   PostgreSQL (several servers may share one database as nodes of a cluster);
//! - an offline writer needs the lock exclusively for the duration of its write, and is
//!   refused (with who holds it) when it cannot have it.
//!
//! # SQLite
//! An OS file lock (`flock`, through std's `File::try_lock`) on
//! `<data-dir>/recruit.db.lock`, for both files of the store (`recruit.db` and the
//! webhook rows' `webhooks.db` beside it: `super::sqlite::webhooks`). The holder writes its role and pid into the file, so
//! that whoever is refused can say who holds it. The OS drops the lock when the holder's
//! process ends, however it ends (`kill -9` included): there is never a stale lock to
//! clean up, and the file itself is left in place (removing it would let two processes
//! lock two different files). Limit: on a network file system that does not share
//! `flock` locks between hosts, a process on another host is not kept out.
//!
//! # PostgreSQL
//! A session-level advisory lock, keyed by the schema the store's tables live in (so
//! stores in other schemas of the same database do not get in each other's way).
//! Servers hold it shared on a connection of its own; offline writers take it
//! exclusively (`pg_try_advisory_lock`) on a connection of their own for their write.
//! PostgreSQL drops it when the session ends. What remains:
//! - A server's lock session can end under it (PostgreSQL restarted, the connection cut,
//!   `pg_terminate_backend`). A background task pings it every second and takes the lock
//!   again on a new session as soon as the database answers. In that gap (about a second
//!   once the database is back) an offline writer can take the lock and write unseen by
//!   the server; the server then logs an error until it has the lock back, and serves
//!   without that write until it restarts.
//! - A server host that vanishes without closing its connection (power loss, network
//!   partition) keeps its session, and so the lock, until PostgreSQL notices: the lock
//!   session asks for TCP keepalives (dead peer noticed in about 30 s). Until then
//!   offline writers are refused, and the refusal names the backend pids holding it
//!   (`pg_terminate_backend` ends one).

use super::ACQUIRE_TIMEOUT;
use anyhow::Context;
use sha2::{Digest, Sha256};
use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::{ConnectOptions, Connection};
use std::fs::{File, TryLockError};
use std::io::{Seek, Write};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::{Duration, Instant};

/// How long `serve` waits for a held lock before refusing to start: long enough for a
/// server stopping in the same process to let go (applications restarted on one data
/// dir), short enough that a second server on a single-node store is refused promptly.
pub const SERVER_WAIT: Duration = Duration::from_secs(3);

/// How long an offline writer waits for a held lock: enough for PostgreSQL to end the
/// session of a server that has just died.
pub const OFFLINE_WAIT: Duration = Duration::from_secs(1);

const RETRY_EVERY: Duration = Duration::from_millis(50);

/// How often a server checks that its PostgreSQL lock session is still there, and how
/// long one check may take before the session is given up for lost.
const HEARTBEAT: Duration = Duration::from_secs(1);
const PING_TIMEOUT: Duration = Duration::from_secs(2);

/// The first key of the PostgreSQL advisory lock ("rcrd"); the second is the schema's.
const PG_LOCK_CLASS: i32 = 0x7263_7264;

/// The lock file beside the SQLite database.
pub fn lock_path(data_dir: &Path) -> PathBuf {
    data_dir.join("recruit.db.lock")
}

/// Who holds a lock that could not be had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Holder {
    /// Running servers (how many, on PostgreSQL; 1 on SQLite).
    Servers(usize),
    /// An offline command (`import`, `key`) writing the store.
    Offline,
    /// Held, but by whom could not be read.
    Unknown,
}

/// The lock is held by someone else: who, and in words for the operator.
#[derive(Debug)]
pub struct InUse {
    pub holder: Holder,
    pub detail: String,
}

impl std::fmt::Display for InUse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.detail)
    }
}

/// A held store lock; dropping it lets go (see [`StoreLock::release`]).
pub struct StoreLock(Held);

enum Held {
    /// Closing the descriptor drops the `flock`.
    File(File),
    /// An offline writer's session holding the exclusive advisory lock.
    PgWriter(PgConnection),
    /// A server's session holding the shared advisory lock, kept alive by a task.
    PgServer(ServerSession),
}

impl StoreLock {
    /// The lock of a server, held for its lifetime: exclusive on SQLite, shared on
    /// PostgreSQL. Fails with a message naming the holder when it stays held for
    /// [`SERVER_WAIT`] (on SQLite: another server, or an offline writer; on PostgreSQL:
    /// only an offline writer, as servers share it). Must run inside an actix system (on
    /// PostgreSQL a local task keeps the lock's session).
    pub async fn for_server(database_url: Option<&str>, data_dir: &Path) -> anyhow::Result<Self> {
        match database_url {
            None => match file_lock(data_dir, "serve", SERVER_WAIT).await? {
                Ok(file) => Ok(StoreLock(Held::File(file))),
                Err(in_use) => Err(match in_use.holder {
                    Holder::Servers(_) => anyhow::anyhow!(
                        "{in_use}: the embedded SQLite store is single-node, so a second \
                         server cannot start on it; stop the other one, or use PostgreSQL \
                         (--database-url) to run several nodes"
                    ),
                    Holder::Offline => anyhow::anyhow!(
                        "{in_use}: an offline command is writing this store; start the \
                         server when it has finished"
                    ),
                    Holder::Unknown => anyhow::anyhow!(
                        "{in_use}: another recruitd process is using this store; stop it \
                         first"
                    ),
                }),
            },
            Some(url) => {
                let options = pg_options(url)?;
                let (mut conn, key) = pg_session(&options).await?;
                let deadline = Instant::now() + SERVER_WAIT;
                while !key.try_lock(&mut conn, true).await? {
                    if Instant::now() >= deadline {
                        let in_use = key.holders(&mut conn).await?;
                        anyhow::bail!(
                            "{in_use}: an offline command is writing this store; start the \
                             server when it has finished"
                        );
                    }
                    tokio::time::sleep(RETRY_EVERY).await;
                }
                Ok(StoreLock(Held::PgServer(ServerSession::start(
                    options, key, conn,
                ))))
            }
        }
    }

    /// The lock of an offline writer (`command` names it to whoever is refused), for
    /// the duration of its write; `Ok(Err(_))` says who holds it instead.
    pub async fn for_offline_writer(
        database_url: Option<&str>,
        data_dir: &Path,
        command: &str,
    ) -> anyhow::Result<Result<Self, InUse>> {
        match database_url {
            None => Ok(file_lock(data_dir, command, OFFLINE_WAIT)
                .await?
                .map(|f| StoreLock(Held::File(f)))),
            Some(url) => {
                let (mut conn, key) = pg_session(&pg_options(url)?).await?;
                let deadline = Instant::now() + OFFLINE_WAIT;
                while !key.try_lock(&mut conn, false).await? {
                    if Instant::now() >= deadline {
                        let in_use = key.holders(&mut conn).await?;
                        conn.close().await.ok();
                        return Ok(Err(in_use));
                    }
                    tokio::time::sleep(RETRY_EVERY).await;
                }
                Ok(Ok(StoreLock(Held::PgWriter(conn))))
            }
        }
    }

    /// Lets go, ending a PostgreSQL session cleanly rather than by dropping its socket.
    pub async fn release(self) {
        match self.0 {
            Held::File(file) => drop(file),
            Held::PgWriter(conn) => {
                conn.close().await.ok();
            }
            Held::PgServer(session) => session.stop().await,
        }
    }
}

/// How many servers hold the lock of the PostgreSQL store at `url` (each `serve` holds
/// it shared).
pub async fn postgres_servers(url: &str) -> anyhow::Result<usize> {
    let (mut conn, key) = pg_session(&pg_options(url)?).await?;
    let holders = key.holders(&mut conn).await;
    conn.close().await.ok();
    Ok(match holders?.holder {
        Holder::Servers(n) => n,
        _ => 0,
    })
}

/// Takes the SQLite store's file lock exclusively, retrying for `wait`, and records
/// `role` and this process's pid in the file.
async fn file_lock(
    data_dir: &Path,
    role: &str,
    wait: Duration,
) -> anyhow::Result<Result<File, InUse>> {
    actors::private_files::create_dir(data_dir)
        .with_context(|| format!("creating data dir {}", data_dir.display()))?;
    let path = lock_path(data_dir);
    // Not truncated on open: the file may be someone else's, holding their role.
    let mut file = actors::private_files::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .with_context(|| format!("opening lock file {}", path.display()))?;
    let deadline = Instant::now() + wait;
    loop {
        match file.try_lock() {
            Ok(()) => break,
            Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                tokio::time::sleep(RETRY_EVERY).await;
            }
            Err(TryLockError::WouldBlock) => return Ok(Err(file_holder(&path))),
            Err(TryLockError::Error(e)) => {
                return Err(anyhow::Error::new(e).context(format!("locking {}", path.display())))
            }
        }
    }
    file.set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|()| writeln!(file, "{role} pid {}", std::process::id()))
        .with_context(|| format!("writing lock file {}", path.display()))?;
    Ok(Ok(file))
}

/// Who holds the file lock, from what the holder wrote into the file.
fn file_holder(path: &Path) -> InUse {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut words = text.split_whitespace();
    let (role, pid) = match (words.next(), words.next(), words.next()) {
        (Some(role), Some("pid"), Some(pid)) if pid.parse::<u32>().is_ok() => (role, pid),
        _ => {
            return InUse {
                holder: Holder::Unknown,
                detail: format!("another process holds {}", path.display()),
            }
        }
    };
    InUse {
        holder: if role == "serve" {
            Holder::Servers(1)
        } else {
            Holder::Offline
        },
        detail: format!("`recruitd {role}` (pid {pid}) holds {}", path.display()),
    }
}

fn pg_options(url: &str) -> anyhow::Result<PgConnectOptions> {
    PgConnectOptions::from_str(url).map_err(|e| anyhow::anyhow!("invalid PostgreSQL URL: {e}"))
}

/// A new session for the lock, and the lock's key in it. Bounded by `ACQUIRE_TIMEOUT`,
/// like every other wait for the database.
async fn pg_session(options: &PgConnectOptions) -> anyhow::Result<(PgConnection, PgKey)> {
    let mut conn = tokio::time::timeout(ACQUIRE_TIMEOUT, options.connect())
        .await
        .map_err(|_| {
            super::postgres_unreachable(
                options,
                &sqlx::Error::Io(std::io::ErrorKind::TimedOut.into()),
            )
        })?
        .map_err(|e| super::postgres_unreachable(options, &e))?;
    let key = PgKey::of(&mut conn).await?;
    Ok((conn, key))
}

/// The advisory lock's two keys: a fixed class, and a hash of the schema the store's
/// (unqualified) tables resolve to, as a session of the same URL sees it.
#[derive(Clone, Debug)]
struct PgKey {
    class: i32,
    object: i32,
    schema: String,
}

impl PgKey {
    async fn of(conn: &mut PgConnection) -> anyhow::Result<PgKey> {
        let (schema,): (String,) = sqlx::query_as("SELECT COALESCE(current_schema()::text, '')")
            .fetch_one(&mut *conn)
            .await
            .context("reading the store's schema for its lock")?;
        let digest = Sha256::digest(format!("recruitd store {schema}").as_bytes());
        // Non-negative, so that it reads the same as pg_locks' unsigned `objid`.
        let object = i32::from_be_bytes([digest[0] & 0x7f, digest[1], digest[2], digest[3]]);
        Ok(PgKey {
            class: PG_LOCK_CLASS,
            object,
            schema,
        })
    }

    /// One attempt at the lock, shared (servers) or exclusive (offline writers).
    async fn try_lock(&self, conn: &mut PgConnection, shared: bool) -> anyhow::Result<bool> {
        let sql = if shared {
            "SELECT pg_try_advisory_lock_shared($1, $2)"
        } else {
            "SELECT pg_try_advisory_lock($1, $2)"
        };
        let (got,): (bool,) = sqlx::query_as(sql)
            .bind(self.class)
            .bind(self.object)
            .fetch_one(&mut *conn)
            .await
            .context("taking the store lock")?;
        Ok(got)
    }

    /// Who holds the lock now: servers (shared holders) or an offline writer (the
    /// exclusive one), with their backend pids and, when visible, client addresses.
    async fn holders(&self, conn: &mut PgConnection) -> anyhow::Result<InUse> {
        let rows: Vec<(String, i32, Option<String>)> = sqlx::query_as(
            "SELECT l.mode, l.pid, host(a.client_addr) \
             FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid \
             WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2 \
               AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) \
               AND l.classid::bigint = $1 AND l.objid::bigint = $2 \
             ORDER BY l.pid",
        )
        .bind(i64::from(self.class))
        .bind(i64::from(self.object))
        .fetch_all(&mut *conn)
        .await
        .context("reading who holds the store lock")?;
        let sessions = rows
            .iter()
            .map(|(_, pid, addr)| match addr {
                Some(a) => format!("{pid} from {a}"),
                None => pid.to_string(),
            })
            .collect::<Vec<_>>()
            .join(", ");
        let servers = rows.iter().filter(|(mode, ..)| mode == "ShareLock").count();
        let schema = &self.schema;
        let (holder, who) = if rows.iter().any(|(mode, ..)| mode == "ExclusiveLock") {
            (
                Holder::Offline,
                "an offline recruitd command holds".to_string(),
            )
        } else if servers > 0 {
            let who = if servers == 1 {
                "1 recruitd server holds".to_string()
            } else {
                format!("{servers} recruitd servers hold")
            };
            (Holder::Servers(servers), who)
        } else {
            // Let go between the attempt and this look.
            (Holder::Unknown, "another session held".to_string())
        };
        Ok(InUse {
            holder,
            detail: format!(
                "{who} the lock of the PostgreSQL store in schema {schema:?} \
                 (backend pids: {sessions})"
            ),
        })
    }
}

/// Asks PostgreSQL to notice a vanished peer of this session in about 30 s (by default it
/// waits for the OS's keepalive, often two hours), so that a dead server host does not
/// keep offline writers out for long. Ignored on Unix-socket connections.
async fn keepalives(conn: &mut PgConnection) {
    let _ = sqlx::raw_sql(
        "SET tcp_keepalives_idle = 10; SET tcp_keepalives_interval = 5; \
         SET tcp_keepalives_count = 4",
    )
    .execute(&mut *conn)
    .await;
}

/// A server's shared lock session, watched (and replaced when lost) by a task.
struct ServerSession {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl ServerSession {
    fn start(options: PgConnectOptions, key: PgKey, mut conn: PgConnection) -> ServerSession {
        let (stop, stopped) = tokio::sync::oneshot::channel();
        // A local task: sqlx's connection futures are not `Send` enough for
        // `tokio::spawn`, and servers run inside an actix system anyway.
        let task = actix_web::rt::spawn(async move {
            keepalives(&mut conn).await;
            hold(options, key, conn, stopped).await
        });
        ServerSession {
            stop: Some(stop),
            task: Some(task),
        }
    }

    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let abort = task.abort_handle();
            if tokio::time::timeout(PING_TIMEOUT, task).await.is_err() {
                abort.abort();
            }
        }
    }
}

impl Drop for ServerSession {
    fn drop(&mut self) {
        // Dropping the task drops its connection, which ends the session and the lock.
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// Keeps the server's lock: pings its session every `HEARTBEAT` and, once it is lost,
/// takes the lock again on a new session as soon as the database answers.
async fn hold(
    options: PgConnectOptions,
    key: PgKey,
    conn: PgConnection,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
) {
    let mut conn = Some(conn);
    let mut tick = tokio::time::interval(HEARTBEAT);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // What was last logged about a lost lock: said once, not every second of an outage.
    let mut reported = Lost::No;
    loop {
        tokio::select! {
            _ = &mut stopped => break,
            () = watch(&options, &key, &mut conn, &mut reported, &mut tick) => {}
        }
    }
    if let Some(c) = conn.take() {
        let _ = tokio::time::timeout(PING_TIMEOUT, c.close()).await;
    }
}

#[derive(PartialEq, Eq)]
enum Lost {
    No,
    Unreachable,
    ToOfflineWriter,
}

/// One heartbeat of [`hold`].
async fn watch(
    options: &PgConnectOptions,
    key: &PgKey,
    conn: &mut Option<PgConnection>,
    reported: &mut Lost,
    tick: &mut tokio::time::Interval,
) {
    tick.tick().await;
    if let Some(c) = conn.as_mut() {
        if matches!(
            tokio::time::timeout(PING_TIMEOUT, c.ping()).await,
            Ok(Ok(()))
        ) {
            return;
        }
        *conn = None;
        tracing::warn!("the store lock's PostgreSQL session was lost; taking the lock again");
    }
    let attempt = async {
        let (mut c, _) = pg_session(options).await?;
        let got = key.try_lock(&mut c, true).await?;
        anyhow::Ok((c, got))
    };
    match attempt.await {
        Ok((mut c, true)) => {
            keepalives(&mut c).await;
            *conn = Some(c);
            *reported = Lost::No;
            tracing::info!("store lock taken again");
        }
        Ok((mut c, false)) => {
            let who = key.holders(&mut c).await.map(|h| h.detail);
            c.close().await.ok();
            if *reported != Lost::ToOfflineWriter {
                *reported = Lost::ToOfflineWriter;
                tracing::error!(
                    holder = %who.unwrap_or_else(|e| e.to_string()),
                    "an offline recruitd command took the store lock while this server's \
                     lock session was lost: what it writes is not seen by this server \
                     until the server restarts"
                );
            }
        }
        Err(e) => {
            if *reported != Lost::Unreachable {
                *reported = Lost::Unreachable;
                tracing::warn!(error = %e, "cannot take the store lock again yet; retrying");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where one test's lock lives: a fresh data dir, and a fresh PostgreSQL schema when
    /// `RECRUITD_TEST_DATABASE_URL` names a server.
    async fn backends() -> Vec<(Option<String>, tempfile::TempDir)> {
        let mut out = vec![(None, tempfile::tempdir().unwrap())];
        match std::env::var("RECRUITD_TEST_DATABASE_URL") {
            Ok(base) => out.push((
                Some(
                    super::super::testing::fresh_postgres_url(&base)
                        .await
                        .unwrap(),
                ),
                tempfile::tempdir().unwrap(),
            )),
            Err(_) => println!("RECRUITD_TEST_DATABASE_URL is not set: PostgreSQL skipped"),
        }
        out
    }

    #[actix_web::test]
    async fn servers_keep_offline_writers_out_and_offline_writers_exclude_each_other() {
        for (url, dir) in backends().await {
            let (url, dir) = (url.as_deref(), dir.path());
            let server = StoreLock::for_server(url, dir).await.unwrap();
            let refused = StoreLock::for_offline_writer(url, dir, "import")
                .await
                .unwrap()
                .err()
                .expect("a server holds the store");
            assert_eq!(refused.holder, Holder::Servers(1), "{url:?}: {refused}");
            match url {
                // Several servers share a PostgreSQL store…
                Some(u) => {
                    let second = StoreLock::for_server(url, dir).await.unwrap();
                    assert_eq!(postgres_servers(u).await.unwrap(), 2);
                    second.release().await;
                }
                // …while the embedded store admits one.
                None => {
                    let e = StoreLock::for_server(url, dir).await.err().unwrap();
                    assert!(e.to_string().contains("single-node"), "{e}");
                }
            }
            server.release().await;

            let writer = StoreLock::for_offline_writer(url, dir, "import")
                .await
                .unwrap()
                .expect("no server holds the store");
            let refused = StoreLock::for_offline_writer(url, dir, "key")
                .await
                .unwrap()
                .err()
                .expect("an offline writer holds the store");
            assert_eq!(refused.holder, Holder::Offline, "{url:?}: {refused}");
            let e = StoreLock::for_server(url, dir).await.err().unwrap();
            assert!(e.to_string().contains("offline command"), "{e}");
            // Dropped, not released: as when the process dies.
            drop(writer);
            StoreLock::for_server(url, dir)
                .await
                .unwrap()
                .release()
                .await;
        }
    }

    /// A server's PostgreSQL lock session ended from outside (a database restart does the
    /// same) is replaced by a new one within seconds.
    #[actix_web::test]
    async fn a_lost_postgres_lock_session_is_replaced() {
        let Ok(base) = std::env::var("RECRUITD_TEST_DATABASE_URL") else {
            println!("RECRUITD_TEST_DATABASE_URL is not set: PostgreSQL skipped");
            return;
        };
        let url = super::super::testing::fresh_postgres_url(&base)
            .await
            .unwrap();
        let server = StoreLock::for_server(Some(&url), Path::new("/nonexistent"))
            .await
            .unwrap();
        let (mut admin, key) = pg_session(&pg_options(&url).unwrap()).await.unwrap();
        sqlx::query(
            "SELECT pg_terminate_backend(pid) FROM pg_locks \
             WHERE locktype = 'advisory' AND classid::bigint = $1 AND objid::bigint = $2",
        )
        .bind(i64::from(key.class))
        .bind(i64::from(key.object))
        .execute(&mut admin)
        .await
        .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            // Terminated sessions leave pg_locks once their backend has exited.
            tokio::time::sleep(Duration::from_millis(200)).await;
            if postgres_servers(&url).await.unwrap() == 1 {
                break;
            }
            assert!(Instant::now() < deadline, "the lock was not taken again");
        }
        let refused =
            StoreLock::for_offline_writer(Some(&url), Path::new("/nonexistent"), "import")
                .await
                .unwrap();
        assert!(refused.is_err(), "the server holds the lock again");
        admin.close().await.ok();
        server.release().await;
    }
}
