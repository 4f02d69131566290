//! The command line (`docs/operations.md`): `serve`, `import`, `key create|list|revoke`,
//! `generate`.

use crate::admin_client::AdminReply;
use crate::app::{Application, Settings};
use crate::generate::GenerateOptions;
use crate::logging::{tell, Severity};
use crate::store::lock::{Holder, StoreLock};
use actors::keys::NewKey;
use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "recruitd",
    version,
    about = "Recruiting Data REST API v1 server"
)]
pub struct Cli {
    #[command(flatten)]
    pub store: StoreArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Store selection, common to all subcommands.
#[derive(Args, Debug, Clone)]
pub struct StoreArgs {
    /// PostgreSQL URL (postgres://…); without it the embedded SQLite store in the data dir.
    #[arg(long, env = "RECRUITD_DATABASE_URL", global = true)]
    pub database_url: Option<String>,
    /// Holds recruit.db, blobs/, tls/ and admin-token.
    #[arg(
        long,
        env = "RECRUITD_DATA_DIR",
        default_value = "./data",
        global = true
    )]
    pub data_dir: PathBuf,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run the HTTPS API and the admin interface.
    Serve(ServeArgs),
    /// Apply snapshot files to the store, offline: refused while a server uses the store
    /// (import through its `POST /admin/v1/import` instead).
    Import {
        /// Snapshot files (JSON), applied in order.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Create or revoke API keys.
    #[command(subcommand)]
    Key(KeyCommand),
    /// Write a synthetic, realistic snapshot.
    Generate {
        /// How many people (candidates and contacts) the workspace has.
        #[arg(long)]
        people: usize,
        /// The same seed gives the same file.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Where to write the snapshot (default: standard output).
        #[arg(long)]
        out: Option<PathBuf>,
        /// The workspace's id instead of the one the seed gives (all else the same): a
        /// second workspace of this shape beside the first in one store.
        #[arg(long)]
        workspace_id: Option<uuid::Uuid>,
    },
}

#[derive(Subcommand, Debug)]
pub enum KeyCommand {
    /// Print a new key's secret once, on its own line, and its id.
    ///
    /// When a server runs on this data dir (its admin interface answers at
    /// --admin-listen with the data dir's admin token), the key is created through it and
    /// works at once. When no server uses the store, it is written to the store directly.
    /// When a server uses the store but its admin interface cannot be used, the command
    /// fails and changes nothing.
    Create {
        /// Workspace id (or exact name).
        #[arg(long)]
        workspace: String,
        /// E-mail of the active member creating the key.
        #[arg(long)]
        created_by: String,
        /// Comma-separated: notes:write, tasks:write, records:write (read is implied).
        #[arg(long, value_delimiter = ',')]
        scopes: Vec<String>,
        /// This key's own request budget per minute (default: the server's).
        #[arg(long)]
        rate_limit_per_minute: Option<u32>,
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// List keys: id, workspace, scopes, creator, when created, whether revoked. Never a
    /// secret (the store holds only their hashes). Reads the store; safe beside a running
    /// server.
    List {
        /// Only the keys of this workspace (id or exact name).
        #[arg(long)]
        workspace: Option<String>,
    },
    /// Revoke a key: through a running server, effective on its next request, or in the
    /// store directly when no server uses it; fails, changing nothing, when a server uses
    /// the store but its admin interface cannot be used (see `create`).
    Revoke {
        /// The key's id (`key_…`, as `key create` printed it), not its secret.
        key_id: String,
        #[command(flatten)]
        admin: AdminArgs,
    },
}

/// Where a running server's admin interface would be.
#[derive(Args, Debug)]
pub struct AdminArgs {
    /// Address of the running server's admin interface.
    #[arg(long, default_value = crate::app::DEFAULT_ADMIN_LISTEN)]
    pub admin_listen: SocketAddr,
    /// Bearer token of that admin interface (default: `<data-dir>/admin-token`).
    #[arg(long, env = "RECRUITD_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,
}

impl AdminArgs {
    /// The token of a server on this data dir, if one has ever run here (or was given).
    fn token(&self, data_dir: &std::path::Path) -> Option<String> {
        self.admin_token.clone().or_else(|| {
            std::fs::read_to_string(data_dir.join("admin-token"))
                .ok()
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty())
        })
    }
}

/// What came of calling the admin interface of a server on this data dir.
enum ViaServer {
    /// It answered (status, JSON body).
    Answer(u16, serde_json::Value),
    /// It could not be used; the command may write the store itself, if no server
    /// holds the store lock.
    Unreached(Unreached),
}

/// Why the admin interface could not be used, in words for the refusal.
enum Unreached {
    NoToken,
    NoAnswer(SocketAddr),
    TokenRefused(SocketAddr),
}

impl std::fmt::Display for Unreached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unreached::NoToken => f.write_str(
                "there is no admin token to reach its admin interface with (no \
                 <data-dir>/admin-token, no --admin-token)",
            ),
            Unreached::NoAnswer(addr) => write!(f, "its admin interface did not answer at {addr}"),
            Unreached::TokenRefused(addr) => write!(
                f,
                "the admin interface at {addr} refused the admin token (it is another \
                 data dir's server, or runs with a token of its own)"
            ),
        }
    }
}

/// Calls the admin interface of a server running on this data dir.
fn via_server(
    admin: &AdminArgs,
    data_dir: &std::path::Path,
    method: &str,
    path: &str,
    body: Option<&serde_json::Value>,
) -> anyhow::Result<ViaServer> {
    let Some(token) = admin.token(data_dir) else {
        return Ok(ViaServer::Unreached(Unreached::NoToken));
    };
    Ok(
        match crate::admin_client::call(admin.admin_listen, &token, method, path, body)? {
            AdminReply::NoServer => ViaServer::Unreached(Unreached::NoAnswer(admin.admin_listen)),
            AdminReply::Answer(401, _) => {
                ViaServer::Unreached(Unreached::TokenRefused(admin.admin_listen))
            }
            AdminReply::Answer(status, json) => ViaServer::Answer(status, json),
        },
    )
}

/// The store lock for a `key` command that could not go through a server: refused, with
/// what to do instead, when a server holds the store (writing behind its back is what
/// would leave a revoked key working until it restarts).
async fn lock_for_key_command(
    store: &StoreArgs,
    unreached: &Unreached,
    action: &str,
) -> anyhow::Result<StoreLock> {
    match StoreLock::for_offline_writer(store.database_url.as_deref(), &store.data_dir, "key")
        .await?
    {
        Ok(lock) => Ok(lock),
        Err(in_use) => Err(match in_use.holder {
            Holder::Offline => anyhow::anyhow!(
                "{in_use}: another offline command is writing this store; try again when it \
                 has finished (nothing was changed)"
            ),
            Holder::Servers(_) => anyhow::anyhow!(
                "a server is using this store ({in_use}), but {unreached}: {action} through \
                 that server's admin interface (--admin-listen ADDR, with --admin-token if it \
                 runs with a token of its own), or stop the server first (nothing was changed)"
            ),
            Holder::Unknown => anyhow::anyhow!(
                "another recruitd process is using this store ({in_use}), and {unreached}: \
                 {action} through the running server's admin interface (--admin-listen \
                 ADDR), or stop it first (nothing was changed)"
            ),
        }),
    }
}

/// On PostgreSQL, how many servers other than the one reached use the store: they did
/// not see a change made through its admin interface.
async fn other_servers(store: &StoreArgs) -> anyhow::Result<usize> {
    match store.database_url.as_deref() {
        Some(url) => Ok(crate::store::lock::postgres_servers(url)
            .await?
            .saturating_sub(1)),
        // The SQLite store admits one server.
        None => Ok(0),
    }
}

fn servers(n: usize) -> String {
    if n == 1 {
        "1 other server uses".to_string()
    } else {
        format!("{n} other servers use")
    }
}

fn admin_error(json: &serde_json::Value) -> String {
    json["error"]["message"]
        .as_str()
        .unwrap_or("unexpected answer")
        .to_string()
}

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Address of the HTTPS API.
    #[arg(long, default_value = crate::app::DEFAULT_LISTEN)]
    pub listen: SocketAddr,
    /// Address of the admin interface (plain HTTP; loopback only unless
    /// --admin-allow-remote).
    #[arg(long, default_value = crate::app::DEFAULT_ADMIN_LISTEN)]
    pub admin_listen: SocketAddr,
    /// Let the admin interface bind a non-loopback address.
    #[arg(long)]
    pub admin_allow_remote: bool,
    /// TLS certificate chain, PEM (default: a self-signed pair generated once in
    /// `<data-dir>/tls/`).
    #[arg(long, requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// TLS private key, PEM (with --tls-cert).
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Base of signed download URLs (default https://<listen>).
    #[arg(long)]
    pub public_url: Option<String>,
    /// Requests per minute per key, unless the key has its own budget.
    #[arg(long, default_value_t = 600, value_parser = clap::value_parser!(u32).range(1..))]
    pub rate_limit_per_minute: u32,
    /// Bearer token of the admin interface (default: generated once into
    /// `<data-dir>/admin-token`).
    #[arg(long, env = "RECRUITD_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,
    /// HTTPS worker threads (default: one per CPU).
    #[arg(long)]
    pub workers: Option<usize>,
    /// On an empty store, load a generated demo workspace and print a key.
    #[arg(long)]
    pub demo: bool,
    /// Most API writes of one workspace committed in one transaction (1 turns group
    /// commit off).
    #[arg(long, default_value_t = actors::env::MAX_BATCH as u64, value_parser = clap::value_parser!(u64).range(1..))]
    pub write_batch_max: u64,
}

/// Prints one line of a command's output. A reader that has gone away (`| head -n1`,
/// which leaves after the secret) is not an error: what it wanted has been written.
/// `println!` would panic there instead.
fn say(line: impl std::fmt::Display) -> anyhow::Result<()> {
    use std::io::Write;
    match writeln!(std::io::stdout().lock(), "{line}") {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

pub fn run(cli: Cli) -> anyhow::Result<()> {
    let system = actix_web::rt::System::new;
    match cli.command {
        Command::Serve(args) => system().block_on(serve(cli.store, args)),
        Command::Import { files } => system().block_on(import(&cli.store, &files)),
        Command::Key(KeyCommand::Create {
            workspace,
            created_by,
            scopes,
            rate_limit_per_minute,
            admin,
        }) => {
            // Checked before anything else: a bad scope costs no store access.
            let req = NewKey::parse(&created_by, &scopes, rate_limit_per_minute)
                .map_err(|e| anyhow::anyhow!(e))?;
            system().block_on(create_key(&cli.store, &admin, &workspace, &req))
        }
        Command::Key(KeyCommand::List { workspace }) => {
            system().block_on(list_keys(&cli.store, workspace.as_deref()))
        }
        Command::Key(KeyCommand::Revoke { key_id, admin }) => {
            system().block_on(revoke_key(&cli.store, &admin, &key_id))
        }
        Command::Generate {
            people,
            seed,
            out,
            workspace_id,
        } => crate::generate::run_cli(
            &GenerateOptions {
                workspace_id,
                ..GenerateOptions::new(people, seed)
            },
            out.as_deref(),
        ),
    }
}

/// `recruitd key list [--workspace WS]`: one line per key, oldest workspace first, then
/// by id. Reading needs no store lock: every key change is committed before it is
/// acknowledged, so the store is the whole truth.
async fn list_keys(store_args: &StoreArgs, workspace: Option<&str>) -> anyhow::Result<()> {
    let store =
        crate::store::open(store_args.database_url.as_deref(), &store_args.data_dir).await?;
    let workspaces = store.workspaces().await?;
    let wanted = match workspace {
        None => None,
        Some(w) => Some(
            workspaces
                .iter()
                .find(|ws| ws.id.to_string() == w || ws.name.as_deref() == Some(w))
                .map(|ws| ws.id)
                .with_context(|| format!("no workspace with the id or name {w:?}"))?,
        ),
    };
    let name_of = |id: uuid::Uuid| {
        workspaces
            .iter()
            .find(|w| w.id == id)
            .and_then(|w| w.name.clone())
            .unwrap_or_default()
    };
    let mut keys = store.keys().await?;
    keys.retain(|k| wanted.is_none_or(|w| k.workspace_id == w));
    keys.sort_by(|a, b| (a.workspace_id, &a.id).cmp(&(b.workspace_id, &b.id)));
    store.close().await;
    say(format_args!(
        "{:<24} {:<36} {:<20} {:<44} {:<36} {:<24} revoked",
        "id", "workspace", "workspace name", "scopes", "created by (user id)", "created"
    ))?;
    for k in keys {
        let created = k
            .created_at
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
            .unwrap_or_else(|| "-".into());
        say(format_args!(
            "{:<24} {:<36} {:<20} {:<44} {:<36} {:<24} {}",
            k.id,
            k.workspace_id,
            name_of(k.workspace_id),
            k.scopes.to_csv(),
            k.created_by,
            created,
            if k.revoked { "yes" } else { "no" }
        ))?;
    }
    Ok(())
}

/// `recruitd import FILE...`: offline, so only while no server uses the store (a server
/// would not see the change, and its next writes could overwrite it).
async fn import(store_args: &StoreArgs, files: &[PathBuf]) -> anyhow::Result<()> {
    let url = store_args.database_url.as_deref();
    let lock = match StoreLock::for_offline_writer(url, &store_args.data_dir, "import").await? {
        Ok(lock) => lock,
        Err(in_use) => anyhow::bail!(
            "{}; nothing was imported",
            match in_use.holder {
                Holder::Offline => format!(
                    "{in_use}: another offline command is writing this store; try again when \
                     it has finished"
                ),
                Holder::Servers(_) | Holder::Unknown => format!(
                    "a server is using this store ({in_use}): an offline import would write \
                     behind its back, unseen by it and overwritten by its next writes. Import \
                     through the running server instead (POST /admin/v1/import on its admin \
                     interface, one snapshot per request), or stop the server first"
                ),
            }
        ),
    };
    let store = crate::store::open(url, &store_args.data_dir).await?;
    let result = crate::offline::import_files(store.clone(), &store_args.data_dir, files).await;
    store.close().await;
    lock.release().await;
    result
}

/// `recruitd key create`: through the running server when its admin interface answers
/// (the key works at once), else into the store directly when no server uses it.
async fn create_key(
    store_args: &StoreArgs,
    admin: &AdminArgs,
    workspace: &str,
    req: &NewKey,
) -> anyhow::Result<()> {
    let url = store_args.database_url.as_deref();
    let store = crate::store::open(url, &store_args.data_dir).await?;
    let ws_id = store
        .workspaces()
        .await?
        .into_iter()
        .find(|w| w.id.to_string() == workspace || w.name.as_deref() == Some(workspace))
        .map(|w| w.id)
        .with_context(|| format!("no workspace {workspace:?} in the store"))?;
    let request = serde_json::json!({
        "workspace_id": ws_id,
        "created_by_email": req.created_by_email,
        "scopes": [req.scopes.to_csv()],
        "rate_limit_per_minute": req.rate_limit_per_minute,
    });
    let unreached = match via_server(
        admin,
        &store_args.data_dir,
        "POST",
        "/admin/v1/keys",
        Some(&request),
    )? {
        ViaServer::Answer(200, json) => {
            store.close().await;
            say(json["data"]["secret"].as_str().unwrap_or_default())?;
            say(format_args!(
                "id: {}",
                json["data"]["id"].as_str().unwrap_or_default()
            ))?;
            // The key exists and its secret is out: a warning, not a failure.
            match other_servers(store_args).await {
                Ok(0) => {}
                Ok(n) => tell(
                    Severity::Warning,
                    format_args!(
                        "{} this store and will answer 401 to the new key until they restart",
                        servers(n)
                    ),
                ),
                Err(e) => tell(
                    Severity::Warning,
                    format_args!("could not check for other servers on this store: {e:#}"),
                ),
            }
            return Ok(());
        }
        ViaServer::Answer(_, json) => anyhow::bail!("{}", admin_error(&json)),
        ViaServer::Unreached(why) => why,
    };
    let lock = lock_for_key_command(store_args, &unreached, "create the key").await?;
    let created = crate::offline::create_key(store.clone(), workspace, req).await;
    store.close().await;
    lock.release().await;
    let (key, secret) = created?;
    say(&secret)?;
    say(format_args!("id: {}", key.id))?;
    tell(
        Severity::Info,
        "no server is using this store: the key was written to it directly",
    );
    Ok(())
}

/// `recruitd key revoke`: through the running server when its admin interface answers
/// (effective on its next request), else in the store directly when no server uses it.
/// Never reports success while a server it did not reach still accepts the key.
async fn revoke_key(store_args: &StoreArgs, admin: &AdminArgs, key_id: &str) -> anyhow::Result<()> {
    let path = format!("/admin/v1/keys/{key_id}");
    let unreached = match via_server(admin, &store_args.data_dir, "DELETE", &path, None)? {
        ViaServer::Answer(200, _) => {
            let others = other_servers(store_args).await.with_context(|| {
                format!(
                    "revoked {key_id} through the server at {}, but could not check for \
                     other servers on this store",
                    admin.admin_listen
                )
            })?;
            if others > 0 {
                anyhow::bail!(
                    "revoked {key_id} through the server at {}, but {} this store and keep \
                     accepting the key until they restart: revoke it through each of their \
                     admin interfaces too (--admin-listen ADDR), or restart them",
                    admin.admin_listen,
                    servers(others)
                );
            }
            say(format_args!("revoked {key_id}"))?;
            return Ok(());
        }
        ViaServer::Answer(_, json) => anyhow::bail!("{}", admin_error(&json)),
        ViaServer::Unreached(why) => why,
    };
    let lock = lock_for_key_command(store_args, &unreached, "revoke the key").await?;
    let store =
        crate::store::open(store_args.database_url.as_deref(), &store_args.data_dir).await?;
    let revoked = store.revoke_key(key_id).await;
    store.close().await;
    lock.release().await;
    match revoked? {
        Some(_) => {
            say(format_args!("revoked {key_id}"))?;
            tell(
                Severity::Info,
                "no server is using this store: the key was revoked in it directly",
            );
            Ok(())
        }
        None => anyhow::bail!("no key with id {key_id:?}"),
    }
}

async fn serve(store_args: StoreArgs, args: ServeArgs) -> anyhow::Result<()> {
    let settings = Settings {
        data_dir: store_args.data_dir.clone(),
        database_url: store_args.database_url.clone(),
        listen: args.listen,
        admin_listen: args.admin_listen,
        admin_allow_remote: args.admin_allow_remote,
        tls_cert: args.tls_cert,
        tls_key: args.tls_key,
        public_url: args.public_url,
        rate_limit_per_minute: args.rate_limit_per_minute,
        admin_token: args.admin_token,
        workers: args.workers,
        write_batch_max: args.write_batch_max as usize,
        clock: crate::signed_urls::Clock::System,
    };
    // The sockets first: an address in use is found before anything is made.
    let listeners = crate::app::Listeners::bind(&settings)?;
    // A data dir this start makes is removed again if the start fails, so that a failed
    // first start leaves nothing half-made behind.
    let made_data_dir = !store_args.data_dir.exists();
    let started = async {
        // Taken before the demo workspace is written, so that it too is written under it.
        let store_lock =
            StoreLock::for_server(store_args.database_url.as_deref(), &store_args.data_dir).await?;
        let demo = match args.demo {
            true => Some(load_demo(&store_args).await?),
            false => None,
        };
        let app = Application::build_with(settings, store_lock, listeners).await?;
        anyhow::Ok((app, demo))
    }
    .await;
    let (app, demo) = match started {
        Ok(started) => started,
        Err(e) => {
            if made_data_dir {
                let _ = std::fs::remove_dir_all(&store_args.data_dir);
            }
            return Err(e);
        }
    };
    let base = format!("https://{}", app.api_addr());
    tracing::info!(api = %base, admin = %format!("http://{}", app.admin_addr()), "recruitd listening");
    // With JSON logs, the event above says it already.
    let plain_stderr = !crate::logging::json_logs();
    if plain_stderr {
        tell(
            Severity::Info,
            format_args!(
                "API on {base}, admin interface on http://{}",
                app.admin_addr()
            ),
        );
    }
    if demo.is_some() {
        // What follows is printed once the workspaces answer (or a minute has passed), so
        // that the calls and commands it shows work when pasted.
        let since = std::time::Instant::now();
        while !app.registry.is_ready() && since.elapsed() < std::time::Duration::from_secs(60) {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }
    match demo {
        Some(Demo::Loaded(loaded)) => say(loaded.welcome(
            &base,
            &crate::tls::self_signed_paths(&store_args.data_dir).0,
        ))?,
        Some(Demo::AlreadyThere(workspaces)) => {
            let admin_flag = match app.admin_addr() {
                a if a.to_string() == crate::app::DEFAULT_ADMIN_LISTEN => String::new(),
                a => format!(" --admin-listen {a}"),
            };
            // One message, a command per line, so that each can be pasted as it stands.
            let mut message = String::from(
                "--demo: the store already holds data, served unchanged; its demo key was \
                 shown when it was first loaded (`recruitd key list` shows the keys, never \
                 their secrets). To make a new key while the server runs:",
            );
            for (workspace, owner) in workspaces {
                message.push_str(&format!(
                    "\n  recruitd{} key create --workspace {} --created-by {} --scopes notes:write,tasks:write,records:write{admin_flag}",
                    store_flags(&store_args),
                    workspace.id,
                    owner.as_deref().unwrap_or("<an active owner's e-mail>"),
                ));
            }
            tell(Severity::Info, message);
        }
        None => {}
    }
    app.stop_on_signals()?;
    app.run_until_stopped().await.context("server failed")?;
    // Every request is answered and the store is closed. Exit now rather than tearing
    // down the in-memory workspaces piece by piece, which for millions of records takes
    // longer than everything else in a shutdown.
    tracing::info!("recruitd stopped");
    crate::logging::flush();
    if plain_stderr {
        eprintln!("recruitd: stopped");
    }
    std::process::exit(0)
}

/// What `serve --demo` did.
enum Demo {
    /// The store was empty: the demo workspace and a key were made.
    Loaded(Box<DemoLoaded>),
    /// The store already held data, left unchanged: each workspace and who may create its
    /// keys (an active owner or administrator, when it has one).
    AlreadyThere(Vec<(actors::model::Workspace, Option<String>)>),
}

/// The demo workspace just loaded, and what its welcome message says.
struct DemoLoaded {
    workspace: actors::model::Workspace,
    owner: String,
    records: usize,
    key_id: String,
    secret: String,
    tour: Option<crate::demo::Tour>,
}

impl DemoLoaded {
    /// The message printed on standard output: the workspace, the key (its secret once)
    /// and the tour's calls, ready to paste.
    fn welcome(&self, base: &str, cert: &std::path::Path) -> String {
        let mut out = format!(
            "\nDemo workspace {name:?} loaded: {people} people, {records} records.\n  \
             workspace id: {ws}\n  owner:        {owner} (creates keys: recruitd key create \
             --workspace {ws} --created-by {owner})\n  API key id:   {key_id} (every scope; \
             its secret is shown once, here)\n\nPaste these into another shell:\n\n  \
             export KEY={secret} CA={cert} API={base}\n",
            name = self.workspace.name.as_deref().unwrap_or_default(),
            people = crate::demo::DEMO_PEOPLE,
            records = self.records,
            ws = self.workspace.id,
            owner = self.owner,
            key_id = self.key_id,
            secret = self.secret,
            cert = cert.display(),
        );
        if let Some(tour) = &self.tour {
            for line in tour.calls().lines() {
                out.push_str("  ");
                out.push_str(line);
                out.push('\n');
            }
        }
        out
    }
}

/// The store flags to repeat in a suggested command: the data dir when it is not the
/// default, and a placeholder for a database URL (which may hold a password).
fn store_flags(store_args: &StoreArgs) -> String {
    let mut flags = String::new();
    if store_args.database_url.is_some() {
        flags.push_str(" --database-url \"$RECRUITD_DATABASE_URL\"");
    }
    if store_args.data_dir != std::path::Path::new("./data") {
        flags.push_str(&format!(" --data-dir {}", store_args.data_dir.display()));
    }
    flags
}

/// Loads the demo workspace into an empty store with a key of every scope; when the
/// store already holds data, changes nothing and says what is there.
async fn load_demo(store_args: &StoreArgs) -> anyhow::Result<Demo> {
    let store =
        crate::store::open(store_args.database_url.as_deref(), &store_args.data_dir).await?;
    let existing = store.workspaces().await?;
    if !existing.is_empty() {
        let mut out = Vec::new();
        for w in existing {
            let owner = crate::offline::keys(&store).suggested_creator(w.id).await?;
            out.push((w, owner));
        }
        store.close().await;
        return Ok(Demo::AlreadyThere(out));
    }
    let bytes = crate::generate::snapshot_bytes(&GenerateOptions::new(
        crate::demo::DEMO_PEOPLE,
        crate::demo::DEMO_SEED,
    ));
    let snap =
        actors::snapshot::parse_slice(&bytes).map_err(|e| anyhow::anyhow!("demo snapshot: {e}"))?;
    let ws = snap
        .workspace_id()
        .context("demo snapshot has a workspace")?;
    let env = crate::offline::import_env(store.clone(), &store_args.data_dir).await?;
    crate::offline::import_snapshot(&env, snap).await?;
    let state = crate::offline::load_workspace(&*store, ws)
        .await?
        .context("the demo workspace is in the store")?;
    let owner = state.users.iter().map(|(_, u)| &**u);
    let owner = actors::keys::suggested_creator(owner)
        .and_then(|u| u.email.clone())
        .context("demo snapshot has an active owner")?;
    let scopes = ["notes:write", "tasks:write", "records:write"].map(String::from);
    let req = NewKey::parse(&owner, &scopes, None).map_err(|e| anyhow::anyhow!(e))?;
    let (key, secret) = crate::offline::create_key(store.clone(), &ws.to_string(), &req).await?;
    store.close().await;
    Ok(Demo::Loaded(Box::new(DemoLoaded {
        workspace: (*state.workspace).clone(),
        owner,
        records: actors::model::Entity::ALL
            .iter()
            .map(|e| state.count(*e))
            .sum(),
        key_id: key.id,
        secret,
        tour: crate::demo::Tour::find(&state),
    })))
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::CommandFactory;

    /// Every flag and argument of every subcommand says what it is in `--help`.
    #[test]
    fn every_flag_has_a_description() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in cmd.get_arguments() {
                let builtin = matches!(arg.get_id().as_str(), "help" | "version");
                if !builtin && arg.get_help().is_none() && arg.get_long_help().is_none() {
                    missing.push(format!("{path} {}", arg.get_id()));
                }
            }
            for sub in cmd.get_subcommands() {
                if sub.get_about().is_none() && sub.get_name() != "help" {
                    missing.push(format!("{path} {} (the subcommand)", sub.get_name()));
                }
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut cmd = Cli::command();
        cmd.build();
        let mut missing = Vec::new();
        walk(&cmd, "recruitd", &mut missing);
        assert!(missing.is_empty(), "no description: {missing:?}");
    }
}
