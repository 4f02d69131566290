//! `recruitd key create|list|revoke`. Create and revoke go through the admin interface
//! of a server running on the data dir when it answers, so the change takes effect on
//! its next request; with no server using the store they write it directly, through the
//! same key service; when a server uses the store but cannot be reached, they fail and
//! change nothing.

use super::{say, AdminArgs, StoreArgs};
use crate::admin::client::AdminReply;
use crate::store::lock::{Holder, StoreLock};
use crate::telemetry::logging::{tell, Severity};
use actors::keys::NewKey;
use anyhow::Context;
use std::net::SocketAddr;

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
    let Some(token) = admin.token(data_dir)? else {
        return Ok(ViaServer::Unreached(Unreached::NoToken));
    };
    Ok(
        match crate::admin::client::call(admin.admin_listen, &token, method, path, body)? {
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

fn admin_error(json: &serde_json::Value) -> String {
    json["error"]["message"]
        .as_str()
        .unwrap_or("unexpected answer")
        .to_string()
}

/// `recruitd key list [--workspace WS]`: one line per key, oldest workspace first, then
/// by id. Reading needs no store lock: every key change is committed before it is
/// acknowledged, so the store is the whole truth.
pub(super) async fn list_keys(
    store_args: &StoreArgs,
    workspace: Option<&str>,
) -> anyhow::Result<()> {
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

/// `recruitd key create`: through the running server when its admin interface answers
/// (the key works at once), else into the store directly when no server uses it.
pub(super) async fn create_key(
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
            // The server tells the other nodes of its cluster of the new key.
            return Ok(());
        }
        ViaServer::Answer(_, json) => anyhow::bail!("{}", admin_error(&json)),
        ViaServer::Unreached(why) => why,
    };
    let lock = lock_for_key_command(store_args, &unreached, "create the key").await?;
    let created = crate::cli::offline::create_key(store.clone(), workspace, req).await;
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
pub(super) async fn revoke_key(
    store_args: &StoreArgs,
    admin: &AdminArgs,
    key_id: &str,
) -> anyhow::Result<()> {
    let path = format!("/admin/v1/keys/{key_id}");
    let unreached = match via_server(admin, &store_args.data_dir, "DELETE", &path, None)? {
        // The server tells every other node of its cluster before it answers 200.
        ViaServer::Answer(200, _) => {
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
