//! The directory of workspaces: workspace id → its actor and published read view (or
//! "still loading"), and whether every workspace present at start has loaded. It starts
//! each workspace's actor, on the one arbiter that runs them all, with the environment
//! every actor shares; it does nothing else (loading is [`crate::loader`]'s, keys are
//! [`crate::keys`]').

use crate::actor::{WorkspaceActor, WorkspaceHandle};
use crate::env::ActorEnv;
use crate::model::Workspace;
use crate::state::WorkspaceState;
use actix::ArbiterHandle;
use dashmap::DashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use uuid::Uuid;

/// A workspace as the directory knows it.
#[derive(Clone)]
pub enum Slot {
    /// Still being read from the store: requests answer 503 with Retry-After.
    Loading,
    Ready(WorkspaceHandle),
}

pub struct Registry {
    workspaces: DashMap<Uuid, Slot>,
    /// What every actor works with.
    env: Arc<ActorEnv>,
    /// Where workspace actors run: one arbiter (thread) for all of them, apart from the
    /// HTTP workers, so that a long import never stalls request handling.
    actors: ArbiterHandle,
    /// Set once every workspace found at start has loaded.
    ready: AtomicBool,
    /// Actors started and workspaces forgotten so far (see [`Registry::generation`]).
    changes: std::sync::atomic::AtomicU64,
}

impl Registry {
    pub fn new(env: Arc<ActorEnv>, actors: ArbiterHandle) -> Arc<Self> {
        Arc::new(Registry {
            workspaces: DashMap::new(),
            env,
            actors,
            ready: AtomicBool::new(false),
            changes: Default::default(),
        })
    }

    /// Every known workspace and its state (a snapshot of the map).
    pub fn slots(&self) -> Vec<(Uuid, Slot)> {
        self.workspaces
            .iter()
            .map(|e| (*e.key(), e.value().clone()))
            .collect()
    }

    /// Every loaded workspace and the commit position its published state stands at,
    /// read in place (no handle is cloned: cheap enough to run every second over ten
    /// thousand workspaces).
    pub fn positions(&self) -> Vec<(Uuid, u64)> {
        self.workspaces
            .iter()
            .filter_map(|e| match e.value() {
                Slot::Ready(h) => Some((*e.key(), h.view.load().position)),
                Slot::Loading => None,
            })
            .collect()
    }

    /// Every workspace known, loaded or loading.
    pub fn ids(&self) -> Vec<Uuid> {
        self.workspaces.iter().map(|e| *e.key()).collect()
    }

    /// The commit position of a loaded workspace's published state.
    pub fn position(&self, id: Uuid) -> Option<u64> {
        match self.workspaces.get(&id)?.value() {
            Slot::Ready(h) => Some(h.view.load().position),
            Slot::Loading => None,
        }
    }

    pub fn slot(&self, id: Uuid) -> Option<Slot> {
        self.workspaces.get(&id).map(|s| s.value().clone())
    }

    pub fn handle(&self, id: Uuid) -> Option<WorkspaceHandle> {
        match self.slot(id)? {
            Slot::Ready(h) => Some(h),
            Slot::Loading => None,
        }
    }

    /// True once every workspace present at start-up is loaded.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// Says every workspace present at start-up is loaded (the loader, when it is done).
    pub fn set_ready(&self) {
        self.ready.store(true, Ordering::Release);
    }

    /// Marks workspaces as loading (before their load starts), so that their requests
    /// answer 503 rather than "no such workspace".
    pub fn expect(&self, workspaces: &[Workspace]) {
        for w in workspaces {
            self.workspaces.entry(w.id).or_insert(Slot::Loading);
        }
    }

    fn start_actor(&self, state: WorkspaceState) -> WorkspaceHandle {
        let handle = WorkspaceActor::spawn(state, self.env.clone(), &self.actors);
        self.changes.fetch_add(1, Ordering::Release);
        handle
    }

    /// A number that moves whenever what [`Registry::positions`] answers may have: a
    /// workspace loaded, created or forgotten, or a state published. Equal twice, the
    /// positions are the same.
    pub fn generation(&self) -> u64 {
        // Read before the positions they stand for: a change after the read moves it
        // again, so it is seen next time.
        self.changes.load(Ordering::Acquire) + self.env.publications.load(Ordering::Acquire)
    }

    /// Starts the actor for a loaded state and publishes it.
    pub fn install(&self, state: WorkspaceState) -> WorkspaceHandle {
        let id = state.id();
        let handle = self.start_actor(state);
        self.workspaces.insert(id, Slot::Ready(handle.clone()));
        handle
    }

    /// Starts the actor for a state loaded because the workspace became this server's
    /// to hold, unless the workspace got an actor meanwhile (an import here created it):
    /// that actor's state is the one its commits went into, and is never replaced. The
    /// handle installed, or `None` when the state was dropped for the existing one.
    pub fn install_if_absent(&self, state: WorkspaceState) -> Option<WorkspaceHandle> {
        use dashmap::mapref::entry::Entry;
        match self.workspaces.entry(state.id()) {
            Entry::Occupied(e) if matches!(e.get(), Slot::Ready(_)) => None,
            Entry::Occupied(mut e) => {
                let handle = self.start_actor(state);
                e.insert(Slot::Ready(handle.clone()));
                Some(handle)
            }
            Entry::Vacant(e) => {
                let handle = self.start_actor(state);
                e.insert(Slot::Ready(handle.clone()));
                Some(handle)
            }
        }
    }

    /// Forgets a workspace this server no longer holds (several servers on one store,
    /// and others hold it now): its actor stops once the requests that still hold its
    /// handle are answered, and its memory goes with its last reader.
    pub fn remove(&self, id: Uuid) -> bool {
        let removed = self.workspaces.remove(&id).is_some();
        self.changes.fetch_add(1, Ordering::Release);
        removed
    }

    /// The handle of a workspace, created empty when it does not exist yet (a first
    /// import). `None` while it is still loading. Concurrent first imports of one new
    /// workspace get the same actor (the map entry is held while it is created).
    pub fn handle_or_create(&self, w: &Workspace) -> Option<WorkspaceHandle> {
        let slot = self
            .workspaces
            .entry(w.id)
            .or_insert_with(|| Slot::Ready(self.start_actor(WorkspaceState::new(w.clone()))))
            .value()
            .clone();
        match slot {
            Slot::Ready(h) => Some(h),
            Slot::Loading => None,
        }
    }
}
