//! The parent indexes behind the notes and attachments sub-resources: a parent record
//! (its kind and id) → its visible notes, sorted, or its attachments. Kept by
//! `WorkspaceState::put` and `delete` (see [`crate::subresources`], which also answers
//! the queries), as part of the persistent state.

use crate::model::ParentType;
use crate::state::{AttachmentRec, NoteRec};
use crate::table::HashMap;
use crate::time::Stamp;
use smallvec::SmallVec;
use std::sync::Arc;
use uuid::Uuid;

/// A parent record: its kind and id (ids of different kinds never share an index entry).
pub type ParentKey = (ParentType, Uuid);

/// Visible notes by parent, each list sorted by (`created_at`, id), oldest first.
///
/// The sort key is stored beside the id so that the newest `limit` of one record are read
/// off the end of its list without touching the notes themselves.
#[derive(Clone, Debug, Default)]
pub struct NotesByParent(HashMap<ParentKey, SmallVec<[(Stamp, Uuid); 2]>>);

impl NotesByParent {
    pub(crate) fn insert(&mut self, n: &NoteRec) {
        if n.is_private() {
            return;
        }
        let list = self.0.entry_or_default((n.parent_type(), n.parent_id()));
        let key = (n.created_at(), n.id());
        if let Err(at) = list.binary_search(&key) {
            list.insert(at, key);
        }
    }

    /// Takes the note with sort key `key` (`created_at`, id) out of `parent`'s list.
    pub(crate) fn remove(&mut self, parent: ParentKey, key: (Stamp, Uuid)) {
        let Some(list) = self.0.get_mut(&parent) else {
            return;
        };
        if let Ok(at) = list.binary_search(&key) {
            list.remove(at);
        }
        if list.is_empty() {
            self.0.remove(&parent);
        }
    }

    pub(crate) fn of(&self, parent: &ParentKey) -> &[(Stamp, Uuid)] {
        self.0.get(parent).map_or(&[], |l| l.as_slice())
    }

    /// Every parent's list (for tests that compare states).
    #[cfg(test)]
    pub(crate) fn entries(&self) -> impl Iterator<Item = (&ParentKey, &[(Stamp, Uuid)])> {
        self.0.iter().map(|(k, l)| (k, l.as_slice()))
    }

    /// Whether the index holds an entry (possibly empty) for `parent`.
    #[cfg(test)]
    pub(crate) fn has_entry(&self, parent: &ParentKey) -> bool {
        self.0.contains_key(parent)
    }
}

/// Attachments by parent, unordered: a record has few files, and the `created_at` of a
/// `cv` follows its candidate row, so the order is computed when asked.
#[derive(Clone, Debug, Default)]
pub struct AttachmentsByParent(HashMap<ParentKey, SmallVec<[Arc<str>; 1]>>);

impl AttachmentsByParent {
    pub(crate) fn insert(&mut self, id: &Arc<str>, a: &AttachmentRec) {
        let list = self.0.entry_or_default((a.parent_type(), a.parent_id()));
        if !list.contains(id) {
            list.push(id.clone());
        }
    }

    pub(crate) fn remove(&mut self, id: &Arc<str>, a: &AttachmentRec) {
        let parent = (a.parent_type(), a.parent_id());
        let Some(list) = self.0.get_mut(&parent) else {
            return;
        };
        list.retain(|x| x != id);
        if list.is_empty() {
            self.0.remove(&parent);
        }
    }

    pub(crate) fn of(&self, parent: &ParentKey) -> &[Arc<str>] {
        self.0.get(parent).map_or(&[], |l| l.as_slice())
    }

    /// Every parent's attachments, sorted (for tests that compare states).
    #[cfg(test)]
    pub(crate) fn entries(&self) -> impl Iterator<Item = (&ParentKey, Vec<Arc<str>>)> {
        self.0.iter().map(|(k, l)| {
            let mut l = l.to_vec();
            l.sort();
            (k, l)
        })
    }
}
