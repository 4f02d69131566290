//! Store operations without a running server: `recruitd import` and `recruitd key`.
//!
//! They use the same validation and planning as the live paths (`actors::snapshot`,
//! `keys::build_key`), only without actors: load what is needed, plan, commit.

use crate::blobs::FileBlobs;
use crate::keys::{build_key, NewKey};
use actors::actor::ImportReport;
use actors::model::{ApiKey, Record, RecordKind};
use actors::reclaim::released_objects;
use actors::registry::{KeyRing, Registry};
use actors::snapshot::{plan_import, Snapshot};
use actors::state::WorkspaceState;
use actors::store::{BlobStore, ChangeSet, Store};
use anyhow::Context;
use std::path::Path;
use std::sync::Arc;

/// Reads every key of the store into a key ring.
pub async fn key_ring(store: &dyn Store) -> anyhow::Result<KeyRing> {
    let ring = KeyRing::default();
    for k in store.keys().await? {
        ring.put(k);
    }
    Ok(ring)
}

/// Loads one workspace's state, or `None` when the store does not hold it.
pub async fn load_workspace(
    store: &dyn Store,
    id: uuid::Uuid,
) -> anyhow::Result<Option<WorkspaceState>> {
    let Some(w) = store.workspaces().await?.into_iter().find(|w| w.id == id) else {
        return Ok(None);
    };
    Ok(Some(Registry::load_state(store, w).await?))
}

/// Applies one parsed snapshot to the store.
pub async fn import_snapshot(
    store: &dyn Store,
    blobs: &dyn BlobStore,
    keys: &KeyRing,
    snap: Snapshot,
) -> anyhow::Result<ImportReport> {
    let ws_id = snap.workspace_id().context("snapshot has no workspace")?;
    let t = std::time::Instant::now();
    let current = load_workspace(store, ws_id).await?;
    let t_load = t.elapsed();
    let plan =
        plan_import(current.as_ref(), snap, keys, false).map_err(|e| anyhow::anyhow!("{e}"))?;
    let t_plan = t.elapsed();
    blobs.put_many(ws_id, &plan.blobs)?;
    let t_blobs = t.elapsed();
    store.commit(ws_id, &plan.changes).await?;
    let t_commit = t.elapsed();
    // Only now that the deletions are committed. A crash before this, or a failure here
    // (the import itself has taken effect), leaves objects no attachment names, which the
    // server sweeps when it next loads the workspace.
    let reclaimed = blobs.delete(&released_objects(&plan)).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "removing the blobs of deleted attachments failed");
        Default::default()
    });
    tracing::info!(
        load_ms = t_load.as_millis() as u64,
        plan_ms = (t_plan - t_load).as_millis() as u64,
        blobs_ms = (t_blobs - t_plan).as_millis() as u64,
        commit_ms = (t_commit - t_blobs).as_millis() as u64,
        blobs = plan.blobs.len(),
        upserted = plan.changes.upserts.len(),
        deleted = plan.changes.deletes.len(),
        records = plan.records_after,
        reclaimed_objects = reclaimed.objects,
        reclaimed_bytes = reclaimed.bytes,
        "import applied"
    );
    for k in &plan.changes.keys {
        keys.put(k.clone());
    }
    Ok(ImportReport {
        workspace_id: ws_id,
        upserted: plan.upserted,
        deleted: plan.deleted,
        records: plan.records_after,
    })
}

/// `recruitd import FILE...`: applies each file in order; stops at the first rejected one
/// (files before it stay applied, as each file is a whole import of its own).
pub async fn import_files(
    store: Arc<dyn Store>,
    data_dir: &Path,
    files: &[std::path::PathBuf],
) -> anyhow::Result<()> {
    let blobs = FileBlobs::new(data_dir.join("blobs"));
    let keys = key_ring(&*store).await?;
    for f in files {
        let started = std::time::Instant::now();
        let file = std::fs::File::open(f).with_context(|| format!("opening {}", f.display()))?;
        let snap = tokio::task::spawn_blocking(move || {
            actors::snapshot::parse_reader(std::io::BufReader::with_capacity(1 << 20, file))
        })
        .await?
        .map_err(|e| anyhow::anyhow!("{}: {e}", f.display()))?;
        let report = import_snapshot(&*store, &blobs, &keys, snap)
            .await
            .with_context(|| format!("importing {}", f.display()))?;
        let total: usize = report.upserted.values().sum();
        let deleted: usize = report.deleted.values().sum();
        let owner = crate::keys::suggested_creator_in(&*store, report.workspace_id).await?;
        println!(
            "{}: workspace {}: {total} records upserted, {deleted} deleted in {:.1?}; it holds {} \
             records; owner {} (who creates keys: recruitd key create --workspace {} --created-by {})",
            f.display(),
            report.workspace_id,
            started.elapsed(),
            report.records,
            owner.as_deref().unwrap_or("none"),
            report.workspace_id,
            owner.as_deref().unwrap_or("<an active owner's e-mail>"),
        );
    }
    Ok(())
}

/// `recruitd key create`: `workspace` is the workspace's id or its exact name. Reads
/// only the workspace's users (the creator is checked against them), never the whole
/// workspace.
pub async fn create_key(
    store: Arc<dyn Store>,
    workspace: &str,
    req: &NewKey,
) -> anyhow::Result<(ApiKey, String)> {
    let list = store.workspaces().await?;
    let w = list
        .iter()
        .find(|w| w.id.to_string() == workspace || w.name.as_deref() == Some(workspace))
        .with_context(|| format!("no workspace {workspace:?} in the store"))?;
    let mut creator = None;
    store
        .load_kind(w.id, RecordKind::User, &mut |r| {
            if let Record::User(u) = r {
                if u.email.as_deref().map(str::to_lowercase).as_deref()
                    == Some(req.created_by_email.as_str())
                {
                    creator = Some(u);
                }
            }
        })
        .await?;
    let (key, secret) = build_key(w.id, creator.as_ref(), req).map_err(|e| anyhow::anyhow!(e))?;
    store
        .commit(
            w.id,
            &ChangeSet {
                keys: vec![key.clone()],
                ..ChangeSet::default()
            },
        )
        .await?;
    Ok((key, secret))
}
