//! The workspace actor: the only writer of one workspace's state.
//!
//! It handles one message at a time, and a write's whole path — validate, plan the next
//! state, write blobs, commit to the store — runs as an atomic response, so no other write
//! of the workspace interleaves with it. Only after the store has committed does the actor
//! publish the next state; a failed commit leaves memory untouched.

mod handlers;
mod messages;

pub use messages::*;

use crate::registry::Registry;
use crate::state::WorkspaceState;
use actix::{Actor, Context};
use arc_swap::ArcSwap;
use std::sync::Arc;
use uuid::Uuid;

pub struct WorkspaceActor {
    id: Uuid,
    /// The published state: readers load it, only this actor stores into it.
    view: Arc<ArcSwap<WorkspaceState>>,
    registry: Arc<Registry>,
}

impl WorkspaceActor {
    pub fn new(id: Uuid, view: Arc<ArcSwap<WorkspaceState>>, registry: Arc<Registry>) -> Self {
        WorkspaceActor { id, view, registry }
    }
}

impl Actor for WorkspaceActor {
    // Callers use `send`, which waits for mailbox room rather than dropping a message, so
    // the default capacity is back-pressure, not loss.
    type Context = Context<Self>;
}
