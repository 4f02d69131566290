//! The one-to-many indexes of the state: a parent record (its kind and id) → its visible
//! notes, sorted, or its attachments; a person → the person's candidate rows; a candidate
//! row → its `cv` attachments; and the links derived changes follow ([`Dependents`]).
//! Kept by `WorkspaceState::put` and `delete` as part of the
//! persistent state (see [`crate::subresources`], which answers the sub-resources), and
//! built whole from the tables at the end of a bulk fill.
//!
//! Each is a [`SortedSet`] of tuples whose prefix is the owner: an owner's children are
//! the range of its prefix, and an entry costs its own size (20 to 48 bytes), with no
//! per-owner list. Children are named by row number where the query reads the records
//! anyway (their tables resolve a row number in one step), by id where the query sorts
//! by id without reading them.

use crate::cow::SortedSet;
use crate::model::{AttachmentRec, CandidateRec, ContactRec, NoteRec};
use crate::model::{Job, ParentType};
use crate::table::Table;
use crate::time::Stamp;
use std::ops::Bound;
use uuid::Uuid;

/// A parent record: its kind and id (ids of different kinds never share an index entry).
pub type ParentKey = (ParentType, Uuid);

/// The largest id, bounding an owner's range from above.
const MAX_ID: Uuid = Uuid::max();

/// Visible notes by parent: (parent kind, parent id, `created_at`, note id), so that one
/// parent's notes are read oldest first, and its newest `limit` off the end of its range,
/// without touching the notes themselves.
#[derive(Clone, Debug, Default)]
pub struct NotesByParent(SortedSet<(ParentType, Uuid, Stamp, Uuid)>);

impl NotesByParent {
    fn entry(n: &NoteRec) -> (ParentType, Uuid, Stamp, Uuid) {
        (n.parent_type(), n.parent_id(), n.created_at(), n.id())
    }

    /// The index of these notes (private ones are left out), built at once.
    pub(crate) fn build<'a>(notes: impl Iterator<Item = &'a NoteRec>) -> Self {
        NotesByParent(SortedSet::build(
            notes.filter(|n| !n.is_private()).map(Self::entry).collect(),
        ))
    }

    pub(crate) fn insert(&mut self, n: &NoteRec) {
        if !n.is_private() {
            self.0.insert(Self::entry(n));
        }
    }

    pub(crate) fn remove(&mut self, n: &NoteRec) {
        self.0.remove(&Self::entry(n));
    }

    /// One parent's notes as (`created_at`, id), oldest first.
    pub(crate) fn of(&self, (kind, id): &ParentKey) -> impl Iterator<Item = (Stamp, Uuid)> + '_ {
        let lower = (*kind, *id, Stamp::MIN, Uuid::nil());
        let upper = (*kind, *id, Stamp::MAX, MAX_ID);
        self.0
            .range(Bound::Included(&lower), Bound::Included(&upper))
            .map(|e| (e.2, e.3))
    }

    /// Every entry (for tests that compare states).
    #[cfg(test)]
    pub(crate) fn entries(&self) -> impl Iterator<Item = &(ParentType, Uuid, Stamp, Uuid)> {
        self.0.iter()
    }
}

/// Attachments by parent: (parent kind, parent id, attachment row). Unordered within a
/// parent: a record has few files, and the `created_at` of a `cv` follows its candidate
/// row, so the order is computed when asked.
#[derive(Clone, Debug, Default)]
pub struct AttachmentsByParent(SortedSet<(ParentType, Uuid, u32)>);

impl AttachmentsByParent {
    /// The index of these (attachment row, attachment) pairs, built at once.
    pub(crate) fn build<'a>(rows: impl Iterator<Item = (u32, &'a AttachmentRec)>) -> Self {
        AttachmentsByParent(SortedSet::build(
            rows.map(|(row, a)| (a.parent_type(), a.parent_id(), row))
                .collect(),
        ))
    }

    pub(crate) fn insert(&mut self, row: u32, a: &AttachmentRec) {
        self.0.insert((a.parent_type(), a.parent_id(), row));
    }

    pub(crate) fn remove(&mut self, row: u32, a: &AttachmentRec) {
        self.0.remove(&(a.parent_type(), a.parent_id(), row));
    }

    /// Every entry (for tests that compare states).
    #[cfg(test)]
    pub(crate) fn entries(&self) -> impl Iterator<Item = &(ParentType, Uuid, u32)> {
        self.0.iter()
    }

    /// The rows of one parent's attachments.
    pub(crate) fn of(&self, (kind, id): &ParentKey) -> impl Iterator<Item = u32> + '_ {
        self.0
            .range(
                Bound::Included(&(*kind, *id, 0)),
                Bound::Included(&(*kind, *id, u32::MAX)),
            )
            .map(|e| e.2)
    }
}

/// A one-to-many index from an id to row numbers of another table: a person's candidate
/// rows, a candidate row's `cv` attachments.
#[derive(Clone, Debug, Default)]
pub struct RowsById(SortedSet<(Uuid, u32)>);

impl RowsById {
    pub(crate) fn build(pairs: Vec<(Uuid, u32)>) -> Self {
        RowsById(SortedSet::build(pairs))
    }

    pub(crate) fn insert(&mut self, owner: Uuid, row: u32) {
        self.0.insert((owner, row));
    }

    pub(crate) fn remove(&mut self, owner: Uuid, row: u32) {
        self.0.remove(&(owner, row));
    }

    /// The rows of `owner`, by row number.
    pub(crate) fn of(&self, owner: Uuid) -> impl Iterator<Item = u32> + '_ {
        self.0
            .range(
                Bound::Included(&(owner, 0)),
                Bound::Included(&(owner, u32::MAX)),
            )
            .map(|e| e.1)
    }

    pub(crate) fn has(&self, owner: Uuid) -> bool {
        self.of(owner).next().is_some()
    }

    /// Every pair (for tests that compare states).
    #[cfg(test)]
    pub(crate) fn entries(&self) -> impl Iterator<Item = &(Uuid, u32)> {
        self.0.iter()
    }
}

/// The links a derived change follows (see `crate::changes::derive`), from a record to
/// the records that show something of it: candidate rows by job, by owner and by stage;
/// jobs by company and by assigned recruiter; contacts by company. A commit that writes
/// a job, a user, a stage or a company finds the records it may have changed through
/// them, in time proportional to those records, never by scanning a table.
#[derive(Clone, Debug, Default)]
pub struct Dependents {
    pub rows_by_job: RowsById,
    pub rows_by_owner: RowsById,
    pub rows_by_stage: RowsById,
    pub jobs_by_company: RowsById,
    pub jobs_by_recruiter: RowsById,
    pub contacts_by_company: RowsById,
}

/// A candidate row's links: its job, owner and stage.
fn row_links(r: &CandidateRec) -> [Option<Uuid>; 3] {
    [r.job_id(), r.owner_id(), r.stage_id()]
}

/// A job's links: its company and assigned recruiter.
fn job_links(j: &Job) -> [Option<Uuid>; 2] {
    [j.company_id, j.assigned_recruiter_id]
}

/// Moves `row` in each index from the old record's link to the new one's.
fn relink<const N: usize>(
    indexes: [&mut RowsById; N],
    row: u32,
    old: Option<[Option<Uuid>; N]>,
    new: Option<[Option<Uuid>; N]>,
) {
    let old = old.unwrap_or([None; N]);
    let new = new.unwrap_or([None; N]);
    for ((index, old), new) in indexes.into_iter().zip(old).zip(new) {
        if old == new {
            continue;
        }
        if let Some(o) = old {
            index.remove(o, row);
        }
        if let Some(n) = new {
            index.insert(n, row);
        }
    }
}

impl Dependents {
    /// The links of these tables' records, built at once (the end of a bulk fill).
    pub(crate) fn build(
        candidates: &Table<Uuid, CandidateRec>,
        jobs: &Table<Uuid, Job>,
        contacts: &Table<Uuid, ContactRec>,
    ) -> Self {
        // One index at a time, straight from the rows: what a build holds beside the
        // finished indexes is one index's pairs (20 bytes a row), not every row's links.
        fn index<'a, V: ?Sized + 'a>(
            rows: impl Iterator<Item = (u32, &'a V)>,
            link: impl Fn(&V) -> Option<Uuid>,
        ) -> RowsById {
            RowsById::build(rows.filter_map(|(at, r)| Some((link(r)?, at))).collect())
        }
        let rows = || candidates.rows().map(|(at, _, r)| (at, &*r.rec));
        let job_rows = || jobs.rows().map(|(at, _, r)| (at, &*r.rec));
        Dependents {
            rows_by_job: index(rows(), |r| r.job_id()),
            rows_by_owner: index(rows(), |r| r.owner_id()),
            rows_by_stage: index(rows(), |r| r.stage_id()),
            jobs_by_company: index(job_rows(), |j| j.company_id),
            jobs_by_recruiter: index(job_rows(), |j| j.assigned_recruiter_id),
            contacts_by_company: RowsById::build(
                contacts
                    .rows()
                    .map(|(at, _, r)| (r.rec.raw.company_id, at))
                    .collect(),
            ),
        }
    }

    /// Candidate row `row` went from `old` to `new` (either absent: put or removed).
    pub(crate) fn relink_row(
        &mut self,
        row: u32,
        old: Option<&CandidateRec>,
        new: Option<&CandidateRec>,
    ) {
        relink(
            [
                &mut self.rows_by_job,
                &mut self.rows_by_owner,
                &mut self.rows_by_stage,
            ],
            row,
            old.map(row_links),
            new.map(row_links),
        );
    }

    /// Job row `row` went from `old` to `new`.
    pub(crate) fn relink_job(&mut self, row: u32, old: Option<&Job>, new: Option<&Job>) {
        relink(
            [&mut self.jobs_by_company, &mut self.jobs_by_recruiter],
            row,
            old.map(job_links),
            new.map(job_links),
        );
    }

    /// Contact row `row` went from `old` to `new`.
    pub(crate) fn relink_contact(
        &mut self,
        row: u32,
        old: Option<&ContactRec>,
        new: Option<&ContactRec>,
    ) {
        relink(
            [&mut self.contacts_by_company],
            row,
            old.map(|c| [Some(c.raw.company_id)]),
            new.map(|c| [Some(c.raw.company_id)]),
        );
    }

    /// Every entry, by index name (for tests that compare states).
    #[cfg(test)]
    pub(crate) fn entries(&self) -> [(&'static str, &RowsById); 6] {
        [
            ("rows_by_job", &self.rows_by_job),
            ("rows_by_owner", &self.rows_by_owner),
            ("rows_by_stage", &self.rows_by_stage),
            ("jobs_by_company", &self.jobs_by_company),
            ("jobs_by_recruiter", &self.jobs_by_recruiter),
            ("contacts_by_company", &self.contacts_by_company),
        ]
    }
}
