//! A record's notes and attachments: the secondary indexes behind
//! `GET /v1/{entity}/{id}/notes` and `GET /v1/{entity}/{id}/attachments`, and the
//! queries on them.
//!
//! Each index maps a parent (its kind and id) to its children, so a request costs the
//! children of that record, or of that person, never a scan of the workspace. The
//! indexes are part of the persistent state: `WorkspaceState::put` and `delete` keep them
//! in step with the tables, so the state the actor publishes after a commit already
//! answers with that commit.
//!
//! Rules (spec, "GET /v1/{entity}/{id}/notes" and "…/attachments"):
//! - candidates and applications cover the whole person: the children of every one of
//!   the person's rows, whichever row was asked for;
//! - contacts, companies and jobs cover that record only;
//! - an unknown id has no children (the HTTP layer answers 200 with empty `data`);
//! - newest first by `created_at` (as reported), ties by id, newest id first;
//! - private notes are never indexed, so they are neither counted nor returned.

use crate::model::{AttachmentRec, NoteRec};
use crate::model::{Entity, ParentType};
pub use crate::parents::ParentKey;
use crate::state::WorkspaceState;
use crate::time::Stamp;
use smallvec::SmallVec;
use std::sync::Arc;
use uuid::Uuid;

/// The kind of parent whose notes an entity's notes sub-resource lists; `None` for the
/// entities that have no notes sub-resource.
pub fn notes_parent_kind(e: Entity) -> Option<ParentType> {
    match e {
        Entity::Candidates | Entity::Applications => Some(ParentType::Candidate),
        Entity::Contacts => Some(ParentType::Contact),
        Entity::Companies => Some(ParentType::Company),
        Entity::Jobs => Some(ParentType::Job),
        Entity::Notes | Entity::Tasks | Entity::Attachments | Entity::Users => None,
    }
}

/// The kind of parent whose files an entity's attachments sub-resource lists; `None` for
/// the entities that have no attachments sub-resource.
pub fn attachments_parent_kind(e: Entity) -> Option<ParentType> {
    match e {
        Entity::Candidates | Entity::Applications => Some(ParentType::Candidate),
        Entity::Companies => Some(ParentType::Company),
        _ => None,
    }
}

/// The newest `limit` children of a record and the number it has in all.
#[derive(Debug)]
pub struct Children<'a, V: ?Sized> {
    pub items: Vec<&'a Arc<V>>,
    pub total: usize,
}

impl WorkspaceState {
    /// Moves a note in the parent index: out of its old parent (when it replaces a note),
    /// into its new one (when it is visible). Called by `put` before the table changes;
    /// a bulk fill builds the index at its end instead.
    pub(crate) fn index_note(&mut self, n: &NoteRec) {
        if self.bulk_fill() {
            return;
        }
        if let Some(old) = self.notes.get(&n.id()).cloned() {
            self.notes_by_parent.remove(&old);
        }
        self.notes_by_parent.insert(n);
    }

    /// Takes a removed note out of the parent index.
    pub(crate) fn unindex_note(&mut self, old: &NoteRec) {
        if !self.bulk_fill() {
            self.notes_by_parent.remove(old);
        }
    }

    /// The parents a sub-resource of record `id` of `entity` covers, given the kind of
    /// parent the sub-resource lists (see [`notes_parent_kind`]): every row of the person
    /// for a candidate row or an application, the record itself otherwise, nothing for an
    /// id the entity does not know.
    pub fn subresource_parents(
        &self,
        entity: Entity,
        kind: ParentType,
        id: Uuid,
    ) -> SmallVec<[ParentKey; 4]> {
        let person = |row: Option<&Arc<crate::model::CandidateRec>>| {
            row.map(|r| {
                self.person_rows_all(r.person_id())
                    .map(|(id, _)| (ParentType::Candidate, *id))
                    .collect()
            })
            .unwrap_or_default()
        };
        let record = |exists: bool| {
            let mut out = SmallVec::new();
            if exists {
                out.push((kind, id));
            }
            out
        };
        match entity {
            Entity::Candidates => person(self.candidates.get_visible(&id)),
            Entity::Applications => person(self.applications().get_visible(&id)),
            Entity::Contacts => record(self.contacts.get_visible(&id).is_some()),
            Entity::Companies => record(self.companies.get_visible(&id).is_some()),
            Entity::Jobs => record(self.jobs.get_visible(&id).is_some()),
            Entity::Notes | Entity::Tasks | Entity::Attachments | Entity::Users => SmallVec::new(),
        }
    }

    /// The visible notes of the given parents: the newest `limit`, newest first.
    pub fn notes_of(&self, parents: &[ParentKey], limit: usize) -> Children<'_, NoteRec> {
        // Each parent's notes come sorted; several parents' are merged by sorting.
        let mut all: Vec<(Stamp, Uuid)> = parents
            .iter()
            .flat_map(|p| self.notes_by_parent.of(p))
            .collect();
        if parents.len() > 1 {
            all.sort_unstable();
        }
        let items = all
            .iter()
            .rev()
            .take(limit)
            .filter_map(|(_, id)| self.notes.get_visible(id))
            .collect();
        Children {
            items,
            total: all.len(),
        }
    }

    /// The attachments of the given parents: the newest `limit` by reported
    /// `created_at`, newest first.
    pub fn attachments_of(
        &self,
        parents: &[ParentKey],
        limit: usize,
    ) -> Children<'_, AttachmentRec> {
        let mut all: Vec<(Stamp, &Arc<str>, &Arc<AttachmentRec>)> = parents
            .iter()
            .flat_map(|p| self.attachments_by_parent.of(p))
            .filter_map(|row| {
                let (id, a) = self.attachments.visible_at_row(row)?;
                Some((a.timestamps_in(self).0, id, a))
            })
            .collect();
        let total = all.len();
        all.sort_unstable_by(|a, b| (b.0, b.1).cmp(&(a.0, a.1)));
        let items = all.into_iter().take(limit).map(|(_, _, a)| a).collect();
        Children { items, total }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::*;

    fn ws() -> WorkspaceState {
        WorkspaceState::new(Workspace {
            id: Uuid::from_u128(1),
            name: None,
            default_region: None,
        })
    }

    fn at(s: &str) -> Stamp {
        Stamp::parse_rfc3339(s).unwrap()
    }

    fn note(id: u128, parent_type: ParentType, parent: u128, created: &str) -> Note {
        Note {
            id: Uuid::from_u128(id),
            parent_type,
            parent_id: Uuid::from_u128(parent),
            title: None,
            body_html: None,
            label: None,
            is_private: false,
            author_id: None,
            job_id: None,
            company_id: None,
            reference: None,
            reference_key: None,
            created_at: at(created),
            updated_at: at(created),
        }
    }

    fn ids<V: ?Sized>(c: &Children<'_, V>, id: impl Fn(&V) -> String) -> Vec<String> {
        c.items.iter().map(|v| id(v)).collect()
    }

    #[test]
    fn notes_move_with_their_parent_and_privacy() {
        let mut s = ws();
        let company = (ParentType::Company, Uuid::from_u128(10));
        s.put(Record::Note(note(
            1,
            ParentType::Company,
            10,
            "2026-09-01T00:00:00Z",
        )));
        s.put(Record::Note(note(
            2,
            ParentType::Company,
            10,
            "2026-09-02T00:00:00Z",
        )));
        let page = s.notes_of(&[company], 10);
        assert_eq!(page.total, 2);
        assert_eq!(
            ids(&page, |n| n.id().to_string()),
            [Uuid::from_u128(2), Uuid::from_u128(1)].map(|u| u.to_string())
        );
        // Made private: gone from the index. Moved to another parent: follows.
        let mut private = note(1, ParentType::Company, 10, "2026-09-01T00:00:00Z");
        private.is_private = true;
        s.put(Record::Note(private));
        s.put(Record::Note(note(
            2,
            ParentType::Job,
            11,
            "2026-09-02T00:00:00Z",
        )));
        assert_eq!(s.notes_of(&[company], 10).total, 0);
        assert_eq!(s.notes_by_parent.of(&company).count(), 0);
        let job = (ParentType::Job, Uuid::from_u128(11));
        assert_eq!(s.notes_of(&[job], 10).total, 1);
        assert!(s.delete(RecordKind::Note, &Uuid::from_u128(2).to_string()));
        assert_eq!(s.notes_of(&[job], 10).total, 0);
    }

    #[test]
    fn several_parents_merge_newest_first_and_limit_keeps_the_total() {
        let mut s = ws();
        let (a, b) = (
            (ParentType::Candidate, Uuid::from_u128(20)),
            (ParentType::Candidate, Uuid::from_u128(21)),
        );
        for (id, parent, day) in [(1, 20, "03"), (2, 21, "01"), (3, 20, "02"), (4, 21, "04")] {
            s.put(Record::Note(note(
                id,
                ParentType::Candidate,
                parent,
                &format!("2026-09-{day}T00:00:00Z"),
            )));
        }
        // Same instant: the larger id first.
        s.put(Record::Note(note(
            5,
            ParentType::Candidate,
            20,
            "2026-09-04T00:00:00Z",
        )));
        let page = s.notes_of(&[a, b], 3);
        assert_eq!(page.total, 5);
        assert_eq!(
            ids(&page, |n| n.id().as_u128().to_string()),
            ["5", "4", "1"]
        );
        let page = s.notes_of(&[a], 2);
        assert_eq!(
            (page.total, ids(&page, |n| n.id().as_u128().to_string())),
            (3, vec!["5".into(), "1".into()])
        );
    }

    #[test]
    fn attachments_follow_their_parent() {
        let mut s = ws();
        let att = |id: &str, parent: u128, created: &str| Attachment {
            id: id.into(),
            parent_type: ParentType::Company,
            parent_id: Uuid::from_u128(parent),
            filename: None,
            content_type: None,
            size: None,
            kind: AttachmentKind::Document,
            storage_ref: None,
            has_content: false,
            created_at: at(created),
            updated_at: at(created),
        };
        s.put(Record::Attachment(att(
            "file:a",
            30,
            "2026-09-01T00:00:00Z",
        )));
        s.put(Record::Attachment(att(
            "file:b",
            30,
            "2026-09-03T00:00:00Z",
        )));
        s.put(Record::Attachment(att(
            "file:c",
            30,
            "2026-09-02T00:00:00Z",
        )));
        let co = (ParentType::Company, Uuid::from_u128(30));
        let page = s.attachments_of(&[co], 2);
        assert_eq!(page.total, 3);
        assert_eq!(ids(&page, |a| a.id().to_string()), ["file:b", "file:c"]);
        s.put(Record::Attachment(att(
            "file:b",
            31,
            "2026-09-03T00:00:00Z",
        )));
        assert!(s.delete(RecordKind::Attachment, "file:a"));
        assert_eq!(
            ids(&s.attachments_of(&[co], 10), |a| a.id().to_string()),
            ["file:c"]
        );
    }
}
