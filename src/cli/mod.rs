//! The command line (`docs/operations.md`): `serve`, `import`, `key create|list|revoke`,
//! `generate`.

pub mod demo;
mod keys;
pub mod offline;
mod serve;

use crate::generate::GenerateOptions;
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
        /// Comma-separated: notes:write, tasks:write, records:write, webhooks:write (read is implied).
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
    #[arg(long, default_value = crate::server::DEFAULT_ADMIN_LISTEN)]
    pub admin_listen: SocketAddr,
    #[command(flatten)]
    pub admin_token: AdminToken,
}

/// The admin interface's bearer token, as given on the command line or in the
/// environment: what `serve` answers to and what a key command presents. Without one,
/// both use `<data-dir>/admin-token` (which `serve` generates once).
#[derive(Args, Debug)]
pub struct AdminToken {
    /// Bearer token of the admin interface (default: `<data-dir>/admin-token`, which
    /// `serve` generates once).
    #[arg(long, env = "RECRUITD_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,
    /// A file holding that token, so that it need not appear on a command line or in
    /// the environment.
    #[arg(
        long,
        env = "RECRUITD_ADMIN_TOKEN_FILE",
        conflicts_with = "admin_token"
    )]
    pub admin_token_file: Option<PathBuf>,
}

impl AdminToken {
    /// The token given, read from its file when given as one.
    pub fn given(&self) -> anyhow::Result<Option<String>> {
        match &self.admin_token_file {
            Some(path) => token_from_file(path).map(Some),
            None => Ok(self.admin_token.clone()),
        }
    }
}

impl AdminArgs {
    /// The token of a server on this data dir, if one has ever run here (or was given).
    fn token(&self, data_dir: &std::path::Path) -> anyhow::Result<Option<String>> {
        Ok(self.admin_token.given()?.or_else(|| {
            std::fs::read_to_string(data_dir.join("admin-token"))
                .ok()
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty())
        }))
    }
}

/// The admin token held in `path` (surrounding whitespace, such as a final newline, is
/// not part of it).
fn token_from_file(path: &std::path::Path) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the admin token file {}", path.display()))?;
    let token = text.trim();
    if token.is_empty() {
        anyhow::bail!("the admin token file {} is empty", path.display());
    }
    Ok(token.to_string())
}

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Address of the HTTPS API.
    #[arg(long, default_value = crate::server::DEFAULT_LISTEN)]
    pub listen: SocketAddr,
    /// Address of the admin interface (plain HTTP; loopback only unless
    /// --admin-allow-remote).
    #[arg(long, default_value = crate::server::DEFAULT_ADMIN_LISTEN)]
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
    /// Base of signed download URLs (default `https://<listen>`).
    #[arg(long)]
    pub public_url: Option<String>,
    /// Requests per minute per key, unless the key has its own budget.
    #[arg(long, default_value_t = 600, value_parser = clap::value_parser!(u32).range(1..))]
    pub rate_limit_per_minute: u32,
    /// Requests without a valid key (answered 401) one peer address may make in any
    /// minute; beyond it, its requests without a valid key are answered 429 until the
    /// minute has room again. Valid keys from that address are unaffected.
    #[arg(long, default_value_t = crate::http::ratelimit::DEFAULT_FAILED_AUTH_PER_MINUTE, value_parser = clap::value_parser!(u32).range(1..))]
    pub failed_auth_per_minute: u32,
    /// API connections open at once, TLS handshakes included (default: the descriptor
    /// limit, raised to its hard limit, less an eighth and at least 256 kept for the
    /// store, blobs and admin interface). Connections past it are closed on arrival.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_connections: Option<u64>,
    /// API connections one peer address (IPv6: one /64) may hold open; never more than
    /// half of --max-connections. Connections past it are closed on arrival.
    #[arg(long, default_value_t = crate::server::tls::connections::DEFAULT_CONNECTIONS_PER_PEER as u64, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_connections_per_peer: u64,
    #[command(flatten)]
    pub admin_token: AdminToken,
    /// HTTPS worker threads (default: one per CPU).
    #[arg(long)]
    pub workers: Option<usize>,
    /// Days the change log (GET /v1/changes) keeps changes and tombstones; a client whose
    /// `since` is older is told to sync afresh (`resync_required`).
    #[arg(long, default_value_t = actors::changes::DEFAULT_RETENTION_DAYS, value_parser = clap::value_parser!(u32).range(1..=3650))]
    pub changes_retention_days: u32,
    /// On an empty store, load a generated demo workspace and print a key.
    #[arg(long)]
    pub demo: bool,
    /// Most API writes of one workspace committed in one transaction (1 turns group
    /// commit off).
    #[arg(long, default_value_t = actors::env::MAX_BATCH as u64, value_parser = clap::value_parser!(u64).range(1..))]
    pub write_batch_max: u64,
    /// Seconds between checkpoints of each workspace's in-memory state into
    /// `<data-dir>/checkpoints/` (also written once every workspace has loaded and at
    /// shutdown; only when the store has changed since the last one). A restart reads a
    /// checkpoint that matches the store instead of loading every record. 0 keeps none.
    #[arg(long, default_value_t = crate::server::DEFAULT_CHECKPOINT_INTERVAL.as_secs())]
    pub checkpoint_interval: u64,
    /// This node's name in the cluster of servers on one PostgreSQL store, unique within
    /// it [default: <hostname>:<listen port>].
    #[arg(long)]
    pub node_name: Option<String>,
    /// How the cluster's other nodes reach this node's API [default: https://<listen>].
    #[arg(long)]
    pub advertise_url: Option<String>,
    /// How many nodes hold each workspace in memory (capped by the live nodes).
    #[arg(long, default_value_t = crate::cluster::DEFAULT_REPLICAS as u64, value_parser = clap::value_parser!(u64).range(1..=64))]
    pub replicas: u64,
    /// Admit webhook endpoints at `http://` URLs and on private, loopback and
    /// link-local addresses (for receivers in tests; off, an endpoint must be
    /// `https://` to a public address).
    #[arg(long)]
    pub webhooks_allow_insecure: bool,
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
        Command::Serve(args) => system().block_on(serve::serve(cli.store, args)),
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
            system().block_on(keys::create_key(&cli.store, &admin, &workspace, &req))
        }
        Command::Key(KeyCommand::List { workspace }) => {
            system().block_on(keys::list_keys(&cli.store, workspace.as_deref()))
        }
        Command::Key(KeyCommand::Revoke { key_id, admin }) => {
            system().block_on(keys::revoke_key(&cli.store, &admin, &key_id))
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
    // The lock above keeps servers and other offline commands off the store.
    let pacing = crate::store::ImportPacing::Alone;
    let store = crate::store::open_paced(url, &store_args.data_dir, pacing, None).await?;
    let result =
        crate::cli::offline::import_files(store.clone(), &store_args.data_dir, files).await;
    store.close().await;
    lock.release().await;
    result
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
