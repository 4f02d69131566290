//! `recruitd serve`: binds first, takes the store lock, loads the demo when asked, starts
//! the application and runs until a signal stops it.

use super::demo::{load_demo, Demo};
use super::{say, ServeArgs, StoreArgs};
use crate::server::{Application, Settings};
use crate::store::lock::StoreLock;
use crate::telemetry::logging::{tell, Severity};
use anyhow::Context;

pub(super) async fn serve(store_args: StoreArgs, args: ServeArgs) -> anyhow::Result<()> {
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
        failed_auth_per_minute: args.failed_auth_per_minute,
        // Descriptor counts: far below usize::MAX on every platform this runs on.
        max_connections: args.max_connections.map(|n| n as usize),
        max_connections_per_peer: args.max_connections_per_peer as usize,
        admin_token: args.admin_token.given()?,
        workers: args.workers,
        write_batch_max: args.write_batch_max as usize,
        checkpoint_interval: (args.checkpoint_interval > 0)
            .then(|| std::time::Duration::from_secs(args.checkpoint_interval)),
        changes_retention: std::time::Duration::from_secs(
            u64::from(args.changes_retention_days) * 86_400,
        ),
        changes_prune_every: actors::changes::PRUNE_EVERY,
        clock: crate::clock::Clock::System,
        node_name: args.node_name,
        advertise_url: args.advertise_url,
        replicas: args.replicas as usize,
        webhooks_allow_insecure: args.webhooks_allow_insecure,
        webhooks_schedule: crate::webhooks::retry::Schedule::CONTRACT,
        console_sample_every: crate::admin::console::traffic::SAMPLE_EVERY,
    };
    // The sockets first: an address in use is found before anything is made.
    let listeners = crate::server::Listeners::bind(&settings)?;
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
    let plain_stderr = !crate::telemetry::logging::json_logs();
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
            &crate::server::tls::self_signed_paths(&store_args.data_dir).0,
        ))?,
        Some(Demo::AlreadyThere(workspaces)) => {
            let admin_flag = match app.admin_addr() {
                a if a.to_string() == crate::server::DEFAULT_ADMIN_LISTEN => String::new(),
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
    crate::telemetry::logging::flush();
    if plain_stderr {
        eprintln!("recruitd: stopped");
    }
    std::process::exit(0)
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
