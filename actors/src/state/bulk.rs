//! A bulk fill: while many records are put at once (a load, an import), the sync
//! orders, the one-to-many indexes and the search indexes are not kept record by record
//! but built once from the tables at its end, large tables on threads of their own.

use super::{reported_updated_at, WorkspaceState};
use crate::model::Job;
use crate::model::{AttachmentRec, CandidateRec, ContactRec, NoteRec};
use crate::parents::{AttachmentsByParent, Dependents, NotesByParent, RowsById};
use crate::table::Table;
use crate::time::Stamp;
use std::sync::Arc;
use uuid::Uuid;

/// A table whose order a bulk load defers ([`Table::defer_order`]).
trait DeferOrder {
    fn defer_order(&mut self);
    fn build_order(&mut self);
}

impl<K: std::hash::Hash + Eq + Ord + Clone + 'static, V: ?Sized> DeferOrder for Table<K, V> {
    fn defer_order(&mut self) {
        Table::defer_order(self)
    }
    fn build_order(&mut self) {
        Table::build_order(self)
    }
}

/// The one-to-many indexes, built from the tables at the end of a bulk fill.
fn build_children(
    candidates: &Table<Uuid, CandidateRec>,
    notes: &Table<Uuid, NoteRec>,
    attachments: &Table<Arc<str>, AttachmentRec>,
    jobs: &Table<Uuid, Job>,
    contacts: &Table<Uuid, ContactRec>,
) -> Children {
    let persons = RowsById::build(
        candidates
            .rows()
            .map(|(at, _, r)| (r.rec.person_id(), at))
            .collect(),
    );
    let cv_by_row = RowsById::build(
        attachments
            .rows()
            .filter(|(_, _, r)| r.rec.is_candidate_cv())
            .map(|(at, _, r)| (r.rec.parent_id(), at))
            .collect(),
    );
    let notes_by_parent = NotesByParent::build(notes.iter().map(|(_, n)| &**n));
    let attachments_by_parent =
        AttachmentsByParent::build(attachments.rows().map(|(at, _, r)| (at, &*r.rec)));
    Children {
        dependents: Dependents::build(candidates, jobs, contacts),
        persons,
        cv_by_row,
        notes_by_parent,
        attachments_by_parent,
    }
}

/// The one-to-many indexes [`build_children`] builds.
struct Children {
    persons: RowsById,
    cv_by_row: RowsById,
    notes_by_parent: NotesByParent,
    attachments_by_parent: AttachmentsByParent,
    dependents: Dependents,
}

/// What a bulk fill keeps while it runs: the one-to-many indexes, the sync orders and
/// the search indexes are not kept then, but built from the tables at its end.
#[derive(Clone, Debug, Default)]
pub(super) struct BulkFill {
    /// Each distinct number is normalised once.
    pub(super) numbers: crate::phone::NumberMemo,
}

/// Stored records from which a bulk fill's end builds its orders and indexes on
/// threads of their own (see [`WorkspaceState::end_bulk_with`]).
const ON_THREADS_FROM: usize = 20_000;

/// How a bulk fill's end builds the two search indexes (phone numbers, e-mails).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SearchBuild {
    /// On two threads at once: the quickest, for a load that readers wait for.
    Together,
    /// One after the other: slower (about 1 s more at a million people), with half the
    /// peak of their sort vectors, for a build beside other work that holds memory of
    /// its own, such as an import's commit (a million people's import peaked about
    /// 100 MiB lower: 3,583 against 3,684 MiB).
    OneAfterTheOther,
}

impl WorkspaceState {
    /// Stops keeping the sync orders and the search indexes while a bulk load or import
    /// puts many records; [`Self::end_bulk`] builds them once from the rows.
    pub fn begin_bulk(&mut self) {
        self.defer_search();
        self.for_each_table(|t| t.defer_order());
        self.bulk = Some(Box::default());
    }

    /// Whether a bulk fill runs: the derived indexes wait for [`Self::end_bulk`].
    pub(crate) fn bulk_fill(&self) -> bool {
        self.bulk.is_some()
    }

    /// Builds what [`Self::begin_bulk`] stopped keeping.
    pub fn end_bulk(&mut self) {
        self.end_bulk_with(SearchBuild::Together);
    }

    /// [`Self::end_bulk`], building the search indexes as `search` says.
    pub fn end_bulk_with(&mut self, search: SearchBuild) {
        self.bulk = None;
        // Rows put in any order: a cv put before its candidate row took its own
        // timestamps, and the row's are its order.
        self.restamp_cvs();
        // Clones share the rows; building an order replaces only the order.
        let tables = (
            self.candidates.clone(),
            self.notes.clone(),
            self.attachments.clone(),
            self.jobs.clone(),
            self.contacts.clone(),
        );
        let small = self.stored_records() < ON_THREADS_FROM;
        let children = if small {
            // A small workspace's orders take microseconds: threads would cost more
            // than they save, and what they allocate would sit in their allocator
            // arenas (a fleet of small workspaces loads thousands of them).
            self.for_each_table(|t| t.build_order());
            build_children(&tables.0, &tables.1, &tables.2, &tables.3, &tables.4)
        } else {
            std::thread::scope(|s| {
                // The two large tables' orders on a thread of their own each; the
                // one-to-many indexes on a third, from the rows; the rest on this one.
                let candidates = &mut self.candidates;
                let notes = &mut self.notes;
                s.spawn(move || candidates.build_order());
                s.spawn(move || notes.build_order());
                let children = s.spawn(move || {
                    build_children(&tables.0, &tables.1, &tables.2, &tables.3, &tables.4)
                });
                self.users.build_order();
                self.companies.build_order();
                self.contacts.build_order();
                self.jobs.build_order();
                self.tasks.build_order();
                self.attachments.build_order();
                children.join().expect("index builds do not panic")
            })
        };
        self.persons = children.persons;
        self.cv_by_row = children.cv_by_row;
        self.notes_by_parent = children.notes_by_parent;
        self.attachments_by_parent = children.attachments_by_parent;
        self.dependents = children.dependents;
        let ordered = std::time::Instant::now();
        self.build_search(if small {
            SearchBuild::OneAfterTheOther
        } else {
            search
        });
        tracing::debug!(
            search_ms = ordered.elapsed().as_millis() as u64,
            "search indexes built"
        );
    }

    fn for_each_table(&mut self, f: impl Fn(&mut dyn DeferOrder)) {
        f(&mut self.users);
        f(&mut self.companies);
        f(&mut self.contacts);
        f(&mut self.jobs);
        f(&mut self.candidates);
        f(&mut self.notes);
        f(&mut self.tasks);
        f(&mut self.attachments);
    }

    /// Brings every cv's position in line with its candidate row (the end of a bulk fill,
    /// where rows and attachments came in any order).
    fn restamp_cvs(&mut self) {
        let moved: Vec<(Arc<str>, Stamp)> = self
            .attachments
            .rows()
            .filter(|(_, _, r)| r.rec.is_candidate_cv())
            .filter_map(|(_, id, r)| {
                let (c, u) = r.rec.times_in(self);
                let at = reported_updated_at(c, u);
                (r.order() != Some(at)).then(|| (id.clone(), at))
            })
            .collect();
        for (id, at) in moved {
            self.attachments.reorder(&id, Some(at));
        }
    }
}
