//! Store operations without a running server: `recruitd import` and `recruitd key`.
//!
//! They use the same code as the live paths, only without actors: an import is planned
//! (`actors::snapshot::plan_import`) and applied (`ImportPlan::apply`: blobs, store, key
//! ring) as a workspace's actor does it; keys go through the key service
//! (`actors::keys::KeyService`) as the admin interface's do.

use crate::store::blobs::StoreBlobs;
use actors::checkpoint::files::CheckpointDir;
use actors::env::ActorEnv;
use actors::keys::{KeyRing, KeyService, NewKey};
use actors::model::ApiKey;
use actors::snapshot::{plan_import, BuildNext, ImportReport, Snapshot};
use actors::state::WorkspaceState;
use actors::store::{BlobStore, Store};
use anyhow::Context;
use std::path::Path;
use std::sync::Arc;

/// The key service over `store`, outside any server (its key ring is its own).
pub fn keys(store: &Arc<dyn Store>) -> KeyService {
    KeyService::new(store.clone(), Arc::new(KeyRing::default()))
}

/// An actor's environment for offline imports: the store, the blobs of the data dir, and
/// every key of the store (a snapshot's keys are checked against them).
pub async fn import_env(store: Arc<dyn Store>, data_dir: &Path) -> anyhow::Result<ActorEnv> {
    let ring = Arc::new(KeyRing::default());
    ring.load(&*store).await?;
    let blobs: Arc<dyn BlobStore> =
        Arc::new(StoreBlobs::new(store.clone(), data_dir.join("blobs")));
    Ok(ActorEnv::new(store, blobs, ring))
}

/// Loads one workspace's state (from its checkpoint when one matches the store), or
/// `None` when the store does not hold it.
pub async fn load_workspace(
    store: &dyn Store,
    checkpoints: &CheckpointDir,
    id: uuid::Uuid,
) -> anyhow::Result<Option<WorkspaceState>> {
    let Some(w) = store.workspaces().await?.into_iter().find(|w| w.id == id) else {
        return Ok(None);
    };
    let position = store.position(id).await?;
    match checkpoints.load(&w, position) {
        Ok(Some(mut state)) => {
            state.tombstones = actors::tombstones::Tombstones::build(store.tombstones(id).await?);
            return Ok(Some(state));
        }
        Ok(None) => {}
        Err(why) => {
            tracing::info!(workspace = %id, %why, "checkpoint not used; loading from the store")
        }
    }
    Ok(Some(actors::loader::read::read_state(store, w).await?))
}

/// Applies one parsed snapshot to the store, then writes the workspace's checkpoint as
/// the import left it, so that the next start reads that rather than every record.
pub async fn import_snapshot(
    env: &ActorEnv,
    checkpoints: &CheckpointDir,
    snap: Snapshot,
) -> anyhow::Result<ImportReport> {
    let ws_id = snap.workspace_id().context("snapshot has no workspace")?;
    let t = std::time::Instant::now();
    let current = load_workspace(&*env.store, checkpoints, ws_id).await?;
    let t_load = t.elapsed();
    let plan = plan_import(
        current.as_ref(),
        snap,
        &*env.keys,
        BuildNext::WhileCommitting,
    )
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    drop(current);
    let t_plan = t.elapsed();
    let (blobs, upserted, deleted) = (
        plan.blobs.len(),
        plan.changes.upserts.len() + plan.packed.len(),
        plan.changes.deletes.len(),
    );
    // The checkpoint is written while the store commits, but for the position the commit
    // ends at, which is filled in after it.
    let dir = checkpoints.clone();
    let (mut applied, checkpoint) = plan
        .apply_beside(env, uuid::Uuid::new_v4(), move |next| dir.begin(next))
        .await?;
    let t_apply = t.elapsed();
    // Nothing else writes the store meanwhile (an offline writer holds it alone): the
    // position now is the one the next state reflects.
    let checkpoint = checkpoint.expect("planned with the next state");
    let position = env.store.position(ws_id).await?;
    let saved = tokio::task::spawn_blocking(move || checkpoint?.finish(position)).await?;
    if let Err(e) = &saved {
        tracing::warn!(workspace = %ws_id, error = %e, "writing the checkpoint failed; the next start loads from the store");
    }
    // Freeing a large workspace's state takes seconds: on a thread of its own, which
    // the process does not wait for when it ends.
    let next = applied.next.take();
    let _ = std::thread::Builder::new()
        .name("free-state".into())
        .spawn(move || drop(next));
    let t_checkpoint = t.elapsed();
    // Only now that the deletions are committed. A crash before this, or a failure here
    // (the import itself has taken effect), leaves objects no attachment names, which the
    // server sweeps when it next loads the workspace.
    let blob_store = env.blobs.clone();
    let released = std::mem::take(&mut applied.released);
    let reclaimed = tokio::task::spawn_blocking(move || blob_store.delete(&released))
        .await?
        .unwrap_or_else(|e| {
            tracing::warn!(error = %e, "removing the blobs of deleted attachments failed");
            Default::default()
        });
    tracing::info!(
        load_ms = t_load.as_millis() as u64,
        plan_ms = (t_plan - t_load).as_millis() as u64,
        apply_ms = (t_apply - t_plan).as_millis() as u64,
        checkpoint_ms = (t_checkpoint - t_apply).as_millis() as u64,
        blobs,
        upserted,
        deleted,
        records = applied.report.records,
        reclaimed_objects = reclaimed.objects,
        reclaimed_bytes = reclaimed.bytes,
        "import applied"
    );
    Ok(applied.report)
}

/// `recruitd import FILE...`: applies each file in order; stops at the first rejected one
/// (files before it stay applied, as each file is a whole import of its own).
pub async fn import_files(
    store: Arc<dyn Store>,
    data_dir: &Path,
    files: &[std::path::PathBuf],
) -> anyhow::Result<()> {
    let env = import_env(store.clone(), data_dir).await?;
    let checkpoints = CheckpointDir::new(data_dir);
    for f in files {
        let started = std::time::Instant::now();
        let file = std::fs::File::open(f).with_context(|| format!("opening {}", f.display()))?;
        let snap = tokio::task::spawn_blocking(move || {
            actors::snapshot::parse_reader(std::io::BufReader::with_capacity(1 << 20, file))
        })
        .await?
        .map_err(|e| anyhow::anyhow!("{}: {e}", f.display()))?;
        tracing::debug!(
            file = %f.display(),
            parse_ms = started.elapsed().as_millis() as u64,
            "snapshot parsed"
        );
        let report = import_snapshot(&env, &checkpoints, snap)
            .await
            .with_context(|| format!("importing {}", f.display()))?;
        let total: usize = report.upserted.values().sum();
        let deleted: usize = report.deleted.values().sum();
        let owner = keys(&store).suggested_creator(report.workspace_id).await?;
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
    let service = keys(&store);
    let creator = service.member(w.id, &req.created_by_email).await?;
    Ok(service.create(w.id, creator.as_ref(), req).await?)
}
