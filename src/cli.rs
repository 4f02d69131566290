//! The command line (`operations.md`): `serve`, `import`, `key create|revoke`, `generate`.

use crate::app::{Application, Settings};
use crate::generate::GenerateOptions;
use crate::keys::NewKey;
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
    /// Apply snapshot files to the store, offline.
    Import {
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Create or revoke API keys.
    #[command(subcommand)]
    Key(KeyCommand),
    /// Write a synthetic, realistic snapshot.
    Generate {
        #[arg(long)]
        people: usize,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

#[derive(Subcommand, Debug)]
pub enum KeyCommand {
    /// Print a new key's secret once, on its own line, and its id.
    ///
    /// When a server runs on this data dir (its admin interface answers at
    /// --admin-listen with the data dir's admin token), the key is created through it and
    /// works at once; otherwise it is written to the store directly.
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
        #[arg(long)]
        rate_limit_per_minute: Option<u32>,
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// Revoke a key (through a running server when there is one, see `create`).
    Revoke {
        key_id: String,
        #[command(flatten)]
        admin: AdminArgs,
    },
}

/// Where a running server's admin interface would be.
#[derive(Args, Debug)]
pub struct AdminArgs {
    #[arg(long, default_value = "127.0.0.1:8444")]
    pub admin_listen: SocketAddr,
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

/// Calls the admin interface of a server running on this data dir: `None` when there is
/// none (or it belongs to another data dir), so the caller works on the store directly.
fn via_server(
    admin: &AdminArgs,
    data_dir: &std::path::Path,
    method: &str,
    path: &str,
    body: Option<&serde_json::Value>,
) -> anyhow::Result<Option<(u16, serde_json::Value)>> {
    let Some(token) = admin.token(data_dir) else {
        return Ok(None);
    };
    match crate::admin_client::call(admin.admin_listen, &token, method, path, body)? {
        crate::admin_client::AdminReply::NoServer => Ok(None),
        // Our token is refused: that server is not this data dir's.
        crate::admin_client::AdminReply::Answer(401, _) => Ok(None),
        crate::admin_client::AdminReply::Answer(status, json) => Ok(Some((status, json))),
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
    #[arg(long, default_value = "127.0.0.1:8443")]
    pub listen: SocketAddr,
    #[arg(long, default_value = "127.0.0.1:8444")]
    pub admin_listen: SocketAddr,
    #[arg(long)]
    pub admin_allow_remote: bool,
    #[arg(long, requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Base of signed download URLs (default https://<listen>).
    #[arg(long)]
    pub public_url: Option<String>,
    #[arg(long, default_value_t = 600, value_parser = clap::value_parser!(u32).range(1..))]
    pub rate_limit_per_minute: u32,
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
    #[arg(long, default_value_t = actors::actor::MAX_BATCH as u64, value_parser = clap::value_parser!(u64).range(1..))]
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

/// People in the demo workspace.
pub const DEMO_PEOPLE: usize = 500;
pub const DEMO_SEED: u64 = 20261121;

pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(args) => actix_web::rt::System::new().block_on(serve(cli.store, args)),
        Command::Import { files } => actix_web::rt::System::new().block_on(async move {
            let store =
                crate::store::open(cli.store.database_url.as_deref(), &cli.store.data_dir).await?;
            crate::offline::import_files(store, &cli.store.data_dir, &files).await
        }),
        Command::Key(KeyCommand::Create {
            workspace,
            created_by,
            scopes,
            rate_limit_per_minute,
            admin,
        }) => actix_web::rt::System::new().block_on(async move {
            let store =
                crate::store::open(cli.store.database_url.as_deref(), &cli.store.data_dir).await?;
            let ws_id = store
                .workspaces()
                .await?
                .into_iter()
                .find(|w| {
                    w.id.to_string() == workspace || w.name.as_deref() == Some(workspace.as_str())
                })
                .map(|w| w.id)
                .with_context(|| format!("no workspace {workspace:?} in the store"))?;
            let request = serde_json::json!({
                "workspace_id": ws_id,
                "created_by_email": created_by,
                "scopes": scopes,
                "rate_limit_per_minute": rate_limit_per_minute,
            });
            if let Some((status, json)) = via_server(
                &admin,
                &cli.store.data_dir,
                "POST",
                "/admin/v1/keys",
                Some(&request),
            )? {
                if status != 200 {
                    anyhow::bail!("{}", admin_error(&json));
                }
                say(json["data"]["secret"].as_str().unwrap_or_default())?;
                say(format_args!(
                    "id: {}",
                    json["data"]["id"].as_str().unwrap_or_default()
                ))?;
                return Ok(());
            }
            let (key, secret) = crate::offline::create_key(
                store,
                &workspace,
                &NewKey {
                    created_by_email: &created_by,
                    scopes: &scopes,
                    rate_limit_per_minute,
                },
            )
            .await?;
            say(&secret)?;
            say(format_args!("id: {}", key.id))?;
            Ok(())
        }),
        Command::Key(KeyCommand::Revoke { key_id, admin }) => actix_web::rt::System::new()
            .block_on(async move {
                let path = format!("/admin/v1/keys/{key_id}");
                if let Some((status, json)) =
                    via_server(&admin, &cli.store.data_dir, "DELETE", &path, None)?
                {
                    if status != 200 {
                        anyhow::bail!("{}", admin_error(&json));
                    }
                    say(format_args!("revoked {key_id}"))?;
                    return Ok(());
                }
                let store =
                    crate::store::open(cli.store.database_url.as_deref(), &cli.store.data_dir)
                        .await?;
                match store.revoke_key(&key_id).await? {
                    Some(_) => {
                        say(format_args!("revoked {key_id}"))?;
                        Ok(())
                    }
                    None => anyhow::bail!("no key with id {key_id:?}"),
                }
            }),
        Command::Generate { people, seed, out } => {
            crate::generate::run_cli(&GenerateOptions { people, seed }, out.as_deref())
        }
    }
}

async fn serve(store_args: StoreArgs, args: ServeArgs) -> anyhow::Result<()> {
    let mut demo_key = None;
    if args.demo {
        demo_key = load_demo(&store_args).await?;
    }
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
        disable_signals: false,
        write_batch_max: args.write_batch_max as usize,
        clock: crate::signed_urls::Clock::System,
    };
    let app = Application::build(settings).await?;
    let base = format!("https://{}", app.api_addr());
    tracing::info!(api = %base, admin = %format!("http://{}", app.admin_addr()), "recruitd listening");
    // With JSON logs, stderr carries only JSON lines (log collectors parse every line).
    let plain_stderr = !crate::logging::json_logs();
    if plain_stderr {
        eprintln!(
            "recruitd: API on {base}, admin interface on http://{}",
            app.admin_addr()
        );
    }
    if let Some(secret) = demo_key {
        let cert = crate::tls::self_signed_paths(&store_args.data_dir).0;
        println!(
            "\nDemo workspace loaded. Read+write API key (shown once):\n\n  {secret}\n\nTry:\n\n  \
             curl --cacert {cert} -H 'Authorization: Bearer {secret}' '{base}/v1/counts'\n  \
             curl --cacert {cert} -H 'Authorization: Bearer {secret}' '{base}/v1/candidates?limit=2'\n  \
             curl --cacert {cert} -H 'Authorization: Bearer {secret}' '{base}/v1/jobs?updated_since=2026-09-01'\n",
            cert = cert.display()
        );
    }
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

/// Loads the demo workspace into an empty store; the new key's secret, or `None` when the
/// store already holds data (then nothing is changed).
async fn load_demo(store_args: &StoreArgs) -> anyhow::Result<Option<String>> {
    let store =
        crate::store::open(store_args.database_url.as_deref(), &store_args.data_dir).await?;
    if !store.workspaces().await?.is_empty() {
        eprintln!("recruitd: --demo: the store already holds data; serving it unchanged");
        return Ok(None);
    }
    let bytes = crate::generate::snapshot_bytes(&GenerateOptions {
        people: DEMO_PEOPLE,
        seed: DEMO_SEED,
    });
    let snap =
        actors::snapshot::parse_slice(&bytes).map_err(|e| anyhow::anyhow!("demo snapshot: {e}"))?;
    let ws = snap
        .workspace_id()
        .context("demo snapshot has a workspace")?;
    let owner = snap
        .users
        .iter()
        .find_map(|u| match u {
            actors::snapshot::Entry::Upsert(u)
                if u.is_active() && u.role.as_deref() == Some("owner") =>
            {
                u.email.clone()
            }
            _ => None,
        })
        .context("demo snapshot has an active owner")?;
    let blobs = crate::blobs::FileBlobs::new(store_args.data_dir.join("blobs"));
    let keys = crate::offline::key_ring(&*store).await?;
    crate::offline::import_snapshot(&*store, &blobs, &keys, snap).await?;
    let scopes = ["notes:write", "tasks:write", "records:write"].map(String::from);
    let (_, secret) = crate::offline::create_key(
        store.clone(),
        &ws.to_string(),
        &NewKey {
            created_by_email: &owner,
            scopes: &scopes,
            rate_limit_per_minute: None,
        },
    )
    .await?;
    store.close().await;
    Ok(Some(secret))
}
