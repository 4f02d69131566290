//! Reclaiming attachment bytes that no attachment names any more.
//!
//! Bytes are written before the commit that records them, and an object is named by its
//! attachment's id alone, so an object is live exactly while the workspace holds an
//! attachment with that id. Two things leave objects behind:
//!
//! - an import deleting attachments: once its commit has succeeded and its state is
//!   published, the actor removes the objects of the deleted attachments that the new
//!   state does not hold ([`crate::snapshot::released_objects`]), and starts no further
//!   job until the
//!   removal is done — the next import may re-add an attachment, and its bytes must not be
//!   written under a key a removal has still to delete;
//! - a crash (between a commit and its removal, or between an import's blob writes and a
//!   commit that then never happened) or a failed commit: those objects are collected by
//!   a [`sweep`] when the workspace loads, before its actor takes any job, keeping the
//!   objects of every attachment of the loaded state ([`LiveObjects`]).
//!
//! Either way an object is removed only when the committed state has no attachment naming
//! it, so a crash at any point leaks objects at worst (until the next start), and never
//! takes the bytes of a live attachment.

use crate::state::WorkspaceState;
use crate::store::{digest_of_key, object_digest, BlobStore, Reclaimed, StoreError};
use uuid::Uuid;

/// The objects a workspace state's attachments name: what a sweep keeps.
pub struct LiveObjects {
    workspace: Uuid,
    /// Sorted: 32 bytes per attachment, however long its id.
    digests: Vec<[u8; 32]>,
}

impl LiveObjects {
    /// Every attachment of `state`, with bytes or without (an attachment whose record says
    /// its bytes never arrived still names its object; keeping it costs a leak at most).
    pub fn of(state: &WorkspaceState) -> LiveObjects {
        let mut digests: Vec<[u8; 32]> = state
            .attachments
            .iter()
            .map(|(id, _)| object_digest(id))
            .collect();
        digests.sort_unstable();
        LiveObjects {
            workspace: state.id(),
            digests,
        }
    }

    pub fn workspace(&self) -> Uuid {
        self.workspace
    }

    /// Whether `key` names the object of one of the attachments.
    pub fn holds(&self, key: &str) -> bool {
        digest_of_key(self.workspace, key).is_some_and(|d| self.digests.binary_search(&d).is_ok())
    }
}

/// Removes every object of the workspace that no attachment of `live` names. Run only
/// while nothing writes objects of that workspace (before its actor takes jobs).
pub fn sweep(blobs: &dyn BlobStore, live: &LiveObjects) -> Result<Reclaimed, StoreError> {
    blobs.sweep(live.workspace, &|key| live.holds(key))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::{parse_slice, plan_import, NoKeys};
    use crate::store::{object_key, MemoryBlobs};

    const FIXTURE: &[u8] = include_bytes!("../../tests/fixtures/snapshot-small.json");
    const CV: &str = "cv:91b2d50e-a6b0-5581-b491-530642265a44";
    const TERMS: &str = "clientfile:153147d7-ad43-526a-a42c-bd7e89dcfc12";

    fn example() -> serde_json::Value {
        serde_json::from_slice(FIXTURE).unwrap()
    }

    fn state() -> WorkspaceState {
        let snap = parse_slice(&serde_json::to_vec(&example()).unwrap()).unwrap();
        plan_import(None, snap, &NoKeys, true)
            .unwrap()
            .next
            .unwrap()
    }

    #[test]
    fn a_sweep_keeps_every_attachment_of_the_state() {
        let state = state();
        let ws = state.id();
        let blobs = MemoryBlobs::default();
        blobs.put(ws, CV, b"cv bytes").unwrap();
        // TERMS' record says its bytes never arrived; an object under its name is kept.
        blobs.put(ws, TERMS, b"terms").unwrap();
        blobs.put(ws, "file:orphan", b"left by a crash").unwrap();
        blobs
            .put(Uuid::from_u128(9), "file:orphan", b"elsewhere")
            .unwrap();
        let live = LiveObjects::of(&state);
        assert!(live.holds(&object_key(ws, CV)));
        assert!(!live.holds(&object_key(Uuid::from_u128(9), CV)));
        assert_eq!(
            sweep(&blobs, &live).unwrap(),
            Reclaimed {
                objects: 1,
                bytes: 15
            }
        );
        assert_eq!(blobs.get(ws, "file:orphan"), None);
        assert!(blobs.get(ws, CV).is_some() && blobs.get(ws, TERMS).is_some());
        assert!(blobs.get(Uuid::from_u128(9), "file:orphan").is_some());
        assert!(
            sweep(&blobs, &live).unwrap().is_empty(),
            "nothing left to take"
        );
    }
}
