//! `GET /admin/v1/console/overview`: the cluster as the store says it is now, for the
//! console's refresh (every second): each node (alive, advertised URL, version, how
//! long ago it renewed its lease, workspaces held and written), and each workspace
//! held by a live node (name, writer, the store's commit position, and each holder's
//! position and lag).
//!
//! It is the cluster view (`Membership::view`: a few store statements, a killed node
//! shown dead at the next look) with the commit positions and names added. One
//! overview is made at a time and reused for [`FRESH_FOR`], so that any number of open
//! consoles costs the store what one does.

use super::super::{holdings, AdminState};
use crate::http::errors::ApiError;
use crate::http::request::RequestId;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Serialize;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use uuid::Uuid;

/// How long an overview is reused.
pub const FRESH_FOR: Duration = Duration::from_millis(500);

/// How long the store's list of workspace names is reused (names change by imports).
const NAMES_FRESH_FOR: Duration = Duration::from_secs(5);

/// Most workspaces an overview lists (the search finds any).
pub const MOST_LISTED: usize = 200;

/// The last overview, and the store's names of the workspaces.
#[derive(Default)]
pub(crate) struct Cache {
    overview: tokio::sync::Mutex<Option<(Instant, Arc<Overview>)>>,
    names: tokio::sync::Mutex<Option<(Instant, Arc<Vec<actors::model::Workspace>>)>>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Overview {
    /// The node answering.
    pub node: String,
    pub version: &'static str,
    /// A node whose lease was not renewed for this long is dead.
    pub lease_ms: u64,
    pub at_ms: i64,
    pub nodes: Vec<NodeRow>,
    pub workspaces: Vec<WorkspaceRow>,
    /// How many workspaces live nodes hold (the list stops at [`MOST_LISTED`]).
    pub workspaces_total: usize,
}

#[derive(Clone, Debug, Serialize)]
pub struct NodeRow {
    pub name: String,
    pub advertise_url: String,
    pub alive: bool,
    pub version: Option<String>,
    pub renewed_ms_ago: Option<u64>,
    pub workspaces_held: usize,
    pub workspaces_written: usize,
    /// Whether it is the node answering.
    pub here: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct WorkspaceRow {
    pub id: Uuid,
    pub name: Option<String>,
    pub writer: Option<String>,
    /// The store's commit position (on SQLite, the one node's copy's: it is the store's).
    pub position: Option<u64>,
    pub holders: Vec<Holder>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Holder {
    pub node: String,
    pub position: Option<u64>,
    pub lag_ms: u64,
}

/// `GET /admin/v1/console/overview`.
pub async fn get(
    req: HttpRequest,
    state: web::Data<AdminState>,
    rid: RequestId,
) -> Result<HttpResponse, ApiError> {
    super::check_reader(&req, &state)?;
    let overview = current(&state).await?;
    crate::http::envelope::Envelope::of(&*overview)?.respond(rid.as_str())
}

/// The overview, made afresh when the last is older than [`FRESH_FOR`].
pub async fn current(state: &AdminState) -> Result<Arc<Overview>, ApiError> {
    let mut last = state.console.cache.overview.lock().await;
    if let Some((at, o)) = &*last {
        if at.elapsed() < FRESH_FOR {
            return Ok(o.clone());
        }
    }
    let made = Arc::new(make(state).await?);
    *last = Some((Instant::now(), made.clone()));
    Ok(made)
}

/// The store's workspaces (id and name), read afresh when older than
/// [`NAMES_FRESH_FOR`] or when `wanted` names one it lacks.
pub async fn names(
    state: &AdminState,
    wanted: &[Uuid],
) -> Result<Arc<Vec<actors::model::Workspace>>, ApiError> {
    let mut cached = state.console.cache.names.lock().await;
    if let Some((at, list)) = &*cached {
        let lacks = wanted
            .iter()
            .any(|id| list.binary_search_by(|w| w.id.cmp(id)).is_err());
        if at.elapsed() < NAMES_FRESH_FOR && !lacks {
            return Ok(list.clone());
        }
    }
    let mut list = state.store.workspaces().await?;
    list.sort_by_key(|w| w.id);
    let list = Arc::new(list);
    *cached = Some((Instant::now(), list.clone()));
    Ok(list)
}

async fn make(state: &AdminState) -> Result<Overview, ApiError> {
    let held = holdings(&state.registry);
    let mut view = state
        .membership
        .view(&held)
        .await
        .map_err(|e| ApiError::internal(e.context("reading the cluster view")))?;
    view.workspaces.sort_by_key(|w| w.id);
    let ids: Vec<Uuid> = view.workspaces.iter().map(|w| w.id).collect();
    let mut positions: HashMap<Uuid, u64> = state
        .membership
        .store_positions(&ids)
        .await
        .map_err(|e| ApiError::internal(e.context("reading the commit positions")))?
        .into_iter()
        .collect();
    if !state.membership.shared() {
        // Alone on its store, this node's copies are at the store's positions.
        positions.extend(held.iter().copied());
    }
    let listed = &ids[..ids.len().min(MOST_LISTED)];
    let names = names(state, listed).await?;
    let name_of = |id: Uuid| -> Option<String> {
        if let Some(actors::registry::Slot::Ready(h)) = state.registry.slot(id) {
            return h.state().workspace.name.clone();
        }
        names
            .binary_search_by(|w| w.id.cmp(&id))
            .ok()
            .and_then(|i| names[i].name.clone())
    };
    let workspaces = view
        .workspaces
        .iter()
        .take(MOST_LISTED)
        .map(|w| WorkspaceRow {
            id: w.id,
            name: name_of(w.id),
            writer: w.owner.clone(),
            position: positions.get(&w.id).copied(),
            holders: w
                .holders
                .iter()
                .map(|n| Holder {
                    node: n.clone(),
                    position: w.positions.get(n).copied(),
                    lag_ms: w.lag_ms.get(n).copied().unwrap_or(0),
                })
                .collect(),
        })
        .collect();
    let nodes = view
        .nodes
        .iter()
        .map(|n| NodeRow {
            here: n.name == view.node,
            name: n.name.clone(),
            advertise_url: n.advertise_url.clone(),
            alive: n.alive,
            version: n.version.clone(),
            renewed_ms_ago: n.renewed_ms_ago,
            workspaces_held: n.workspaces_held,
            workspaces_written: n.workspaces_owned,
        })
        .collect();
    Ok(Overview {
        node: view.node,
        version: crate::VERSION,
        lease_ms: crate::cluster::LEASE.as_millis() as u64,
        at_ms: actors::store::now_ms(),
        nodes,
        workspaces,
        workspaces_total: view.workspaces.len(),
    })
}
