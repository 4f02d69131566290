//! A workspace's in-memory state: every raw record, keyed and ordered, plus the small
//! secondary indexes the derivations need.
//!
//! The state is a persistent value (its tables and indexes are the copy-on-write
//! containers of [`crate::cow`]: a clone shares their chunks, and a write copies only
//! the chunk it changes), so the workspace actor builds the next state beside the
//! published one and swaps it in atomically after the store has committed. Readers hold
//! an `Arc` of one consistent state for as long as they need it and never take a lock.
//!
//! Here: the state, putting and removing records, and what the derivations read of it;
//! [`bulk`]: a bulk fill, whose end builds the orders and indexes at once; `search`:
//! keeping the phone and e-mail indexes in line with the records.

use crate::model::*;
use crate::parents::{AttachmentsByParent, Dependents, NotesByParent, RowsById};
use crate::phone::normalise_phone;
use crate::search::{KeySet, Owner, SearchIndexes};
pub use crate::table::{HashMap, MinKey, Row, Table};
use crate::time::{reported_updated_at, Stamp};
use smallvec::SmallVec;
use std::sync::Arc;
use uuid::Uuid;

pub mod bulk;
#[cfg(test)]
mod describe;
mod search;

use bulk::BulkFill;
use search::contact_keys;

/// Moves record `id` from its old idempotency key to its new one.
fn relink_reference(
    refs: &mut HashMap<Box<str>, Uuid>,
    id: Uuid,
    old: Option<Box<str>>,
    new: Option<Box<str>>,
) {
    if let Some(old) = old {
        if refs.get(&old) == Some(&id) {
            refs.remove(&old);
        }
    }
    if let Some(new) = new {
        refs.insert(new, id);
    }
}

/// A reference as the reference maps hold it: scoped by the key it belongs to (see
/// `Note::reference_key`). The separator cannot occur in a key id.
fn scoped_reference(key: Option<&str>, reference: Option<&str>) -> Option<Box<str>> {
    let reference = reference?;
    Some(match key {
        Some(key) => format!("{key}\u{1f}{reference}").into_boxed_str(),
        None => Box::from(reference),
    })
}

/// Whether a candidate row is an application (it has a job).
fn is_application(row: &CandidateRec) -> bool {
    row.job_id().is_some()
}

/// Everything one workspace holds in memory.
#[derive(Clone, Debug)]
pub struct WorkspaceState {
    pub workspace: Arc<Workspace>,
    pub region: Option<crate::phone::Region>,
    /// All users; removed users are hidden from the API but still resolve as authors.
    pub users: Table<Uuid, User>,
    /// Lower-cased e-mail → user, for uniqueness and for `author_email` / `owner_email`.
    pub users_by_email: HashMap<Box<str>, Uuid>,
    pub stages: HashMap<Uuid, Arc<PipelineStage>>,
    pub companies: Table<Uuid, Company>,
    pub contacts: Table<Uuid, ContactRec>,
    pub jobs: Table<Uuid, Job>,
    pub candidates: Table<Uuid, CandidateRec>,
    pub notes: Table<Uuid, NoteRec>,
    pub tasks: Table<Uuid, Task>,
    pub attachments: Table<Arc<str>, AttachmentRec>,
    /// person_id → the row numbers of that person's candidate rows.
    pub persons: RowsById,
    /// candidate row id → row numbers of the `cv` attachments on it, which take the row's
    /// timestamps.
    pub cv_by_row: RowsById,
    /// Visible notes by parent record, for the notes sub-resource (`subresources`).
    pub notes_by_parent: NotesByParent,
    /// Attachments by parent record, for the attachments sub-resource (`subresources`).
    pub attachments_by_parent: AttachmentsByParent,
    /// The links derived changes follow (candidate rows by job, owner and stage; jobs by
    /// company and recruiter; contacts by company).
    pub dependents: Dependents,
    /// The newest stamp of any record: the workspace clock never issues one behind it.
    pub last_stamp: Stamp,
    /// The store's commit position this state reflects (`CommitPosition::seq`): the
    /// change log up to it is what the feed may show of it (see [`crate::changes`]).
    pub position: u64,
    /// Records that left what the API shows, for `include_deleted` lists.
    pub tombstones: crate::tombstones::Tombstones,
    /// Phone and e-mail indexes of candidate persons, contacts and companies.
    pub search: SearchIndexes,
    /// Idempotency keys of API-created notes and tasks: `reference` → id.
    note_refs: HashMap<Box<str>, Uuid>,
    task_refs: HashMap<Box<str>, Uuid>,
    /// Set while a bulk fill runs ([`Self::begin_bulk`]).
    bulk: Option<Box<BulkFill>>,
}

impl WorkspaceState {
    pub fn new(workspace: Workspace) -> Self {
        let region = workspace
            .default_region
            .as_deref()
            .and_then(crate::phone::parse_region);
        WorkspaceState {
            workspace: Arc::new(workspace),
            region,
            users: Table::default(),
            users_by_email: HashMap::default(),
            stages: HashMap::default(),
            companies: Table::default(),
            contacts: Table::default(),
            jobs: Table::default(),
            // The applications are the rows with a job: the table's subset.
            candidates: Table::with_subset(is_application),
            notes: Table::default(),
            tasks: Table::default(),
            attachments: Table::default(),
            persons: RowsById::default(),
            cv_by_row: RowsById::default(),
            notes_by_parent: NotesByParent::default(),
            attachments_by_parent: AttachmentsByParent::default(),
            dependents: Dependents::default(),
            last_stamp: Stamp::MIN,
            position: 0,
            tombstones: Default::default(),
            search: SearchIndexes::default(),
            note_refs: HashMap::default(),
            bulk: None,
            task_refs: HashMap::default(),
        }
    }

    pub fn id(&self) -> Uuid {
        self.workspace.id
    }

    /// Replaces the workspace's own description (name, default region). A new default
    /// region changes how national numbers normalise, so every number is normalised again.
    pub fn set_workspace(&mut self, ws: Workspace) {
        let region = ws
            .default_region
            .as_deref()
            .and_then(crate::phone::parse_region);
        self.workspace = Arc::new(ws);
        if region != self.region {
            self.region = region;
            self.renormalise_all();
        }
    }

    fn renormalise_all(&mut self) {
        let candidates: Vec<Arc<CandidateRec>> =
            self.candidates.iter().map(|(_, r)| r.clone()).collect();
        for r in candidates {
            let rec = CandidateRec::pack(
                &r.raw(),
                self.normalise(r.phone_as_entered()).as_deref(),
                self.normalise(r.mobile_as_entered()).as_deref(),
            );
            self.candidates.replace(&r.id(), rec);
        }
        let contacts: Vec<Arc<ContactRec>> = self.contacts.iter().map(|(_, r)| r.clone()).collect();
        for r in contacts {
            let rec = Arc::new(ContactRec {
                phone: self.normalise(r.raw.phone.as_deref()),
                mobile: self.normalise(r.raw.mobile.as_deref()),
                raw: r.raw.clone(),
            });
            self.contacts.replace(&r.raw.id, rec);
        }
        if !self.search.is_deferred() {
            self.rebuild_search();
        }
    }

    /// Takes the notes and tasks of `other` (and their idempotency keys and the clock) in
    /// place of this state's, both in a bulk fill. Putting a note or a
    /// task touches nothing else, so a bulk fill may put them into a state of its own on
    /// another thread and hand them over.
    pub(crate) fn absorb_notes_and_tasks(&mut self, other: WorkspaceState) {
        self.notes = other.notes;
        self.note_refs = other.note_refs;
        self.tasks = other.tasks;
        self.task_refs = other.task_refs;
        self.bump_clock(other.last_stamp);
    }

    /// Makes room for `n` more records of `kind` in their tables' id maps, so that a bulk
    /// fill of known size never grows them step by step. (The secondary maps are left to
    /// grow: how many entries they get is not known ahead, and a guess too large costs
    /// memory for good.)
    pub fn reserve(&mut self, kind: RecordKind, n: usize) {
        match kind {
            RecordKind::User => self.users.reserve(n),
            RecordKind::Stage => self.stages.reserve(n),
            RecordKind::Company => self.companies.reserve(n),
            RecordKind::Contact => self.contacts.reserve(n),
            RecordKind::Job => self.jobs.reserve(n),
            RecordKind::Candidate => self.candidates.reserve(n),
            RecordKind::Note => self.notes.reserve(n),
            RecordKind::Task => self.tasks.reserve(n),
            RecordKind::Attachment => self.attachments.reserve(n),
        }
    }

    fn bump_clock(&mut self, s: Stamp) {
        if s > self.last_stamp {
            self.last_stamp = s;
        }
    }

    /// Moves the clock to `s` unless it is past it already: a stamp another server
    /// issued (a tombstone it wrote), which this state's next stamp must follow.
    pub fn advance_clock(&mut self, s: Stamp) {
        self.bump_clock(s);
    }

    /// The next write stamp: now, but never at or behind the newest stamp issued.
    pub fn next_stamp(&mut self) -> Stamp {
        let s = self.stamp_after_last();
        self.last_stamp = s;
        s
    }

    /// The stamp the next write would get, without issuing it (records written with it
    /// advance the clock when they are put).
    pub fn stamp_after_last(&self) -> Stamp {
        Stamp::now().max(self.last_stamp.next())
    }

    /// The note created with this idempotency key, if it still exists.
    ///
    /// References are scoped per key: `key`'s own note with `reference`, else a note made
    /// with it by no key (imported, or made before references were scoped) that is not
    /// private. A private note is never reached through another key's reference, so
    /// such a reference neither reveals its id nor overwrites it.
    pub fn note_by_reference(&self, key: Option<&str>, reference: &str) -> Option<Uuid> {
        let own = scoped_reference(key, Some(reference))?;
        self.note_refs.get(&own).copied().or_else(|| {
            let unscoped = self.note_refs.get(reference).copied()?;
            self.notes.get_visible(&unscoped).map(|_| unscoped)
        })
    }

    /// The task created with this idempotency key, if it still exists.
    ///
    /// As [`note_by_reference`](Self::note_by_reference), for tasks.
    pub fn task_by_reference(&self, key: Option<&str>, reference: &str) -> Option<Uuid> {
        let own = scoped_reference(key, Some(reference))?;
        self.task_refs.get(&own).copied().or_else(|| {
            let unscoped = self.task_refs.get(reference).copied()?;
            self.tasks.get_visible(&unscoped).map(|_| unscoped)
        })
    }

    fn normalise(&self, raw: Option<&str>) -> Option<Box<str>> {
        raw.and_then(|p| normalise_phone(p, self.region))
            .map(String::into_boxed_str)
    }

    /// Inserts or replaces one record.
    pub fn put(&mut self, rec: Record) {
        match rec {
            Record::User(u) => {
                self.bump_clock(u.updated_at);
                if let Some(old) = self.users.get(&u.id) {
                    if let Some(e) = &old.email {
                        let key = e.to_lowercase().into_boxed_str();
                        if self.users_by_email.get(&key) == Some(&u.id) {
                            self.users_by_email.remove(&key);
                        }
                    }
                }
                if let Some(e) = &u.email {
                    self.users_by_email
                        .insert(e.to_lowercase().into_boxed_str(), u.id);
                }
                let order = (u.status != UserStatus::Removed)
                    .then(|| reported_updated_at(u.created_at, u.updated_at));
                self.users.put(u.id, Arc::new(u), order);
            }
            Record::Stage(s) => {
                self.stages.insert(s.id, Arc::new(s));
            }
            Record::Company(c) => {
                self.bump_clock(c.updated_at);
                let order = Some(reported_updated_at(c.created_at, c.updated_at));
                if !self.search.is_deferred() {
                    let before = self.companies.get(&c.id).map(|o| self.company_keys(o));
                    let after = self.company_keys(&c);
                    self.search
                        .update(Owner::Company(c.id), &before.unwrap_or_default(), &after);
                }
                self.companies.put(c.id, Arc::new(c), order);
            }
            Record::Contact(c) => {
                let rec = ContactRec {
                    phone: self.normalise_number(c.phone.as_deref()),
                    mobile: self.normalise_number(c.mobile.as_deref()),
                    raw: c,
                };
                self.put_contact_rec(rec);
            }
            Record::Job(j) => {
                self.bump_clock(j.updated_at);
                let order = Some(reported_updated_at(j.created_at, j.updated_at));
                let id = j.id;
                // Links are kept record by record outside a bulk fill only.
                let old = (!self.bulk_fill())
                    .then(|| self.jobs.get(&id).cloned())
                    .flatten();
                self.jobs.put(id, Arc::new(j), order);
                if !self.bulk_fill() {
                    let row = self.jobs.row_number(&id).expect("just put");
                    let new = self.jobs.get(&id).map(|j| &**j);
                    self.dependents.relink_job(row, old.as_deref(), new);
                }
            }
            Record::Candidate(c) => self.put_candidate(*c),
            Record::Note(n) => self.put_note(NoteRec::pack(&n)),
            Record::Task(t) => {
                self.bump_clock(t.updated_at);
                let old = self.tasks.get(&t.id).and_then(|o| {
                    scoped_reference(o.reference_key.as_deref(), o.reference.as_deref())
                });
                let new = scoped_reference(t.reference_key.as_deref(), t.reference.as_deref());
                relink_reference(&mut self.task_refs, t.id, old, new);
                let order =
                    (!t.is_private).then(|| reported_updated_at(t.created_at, t.updated_at));
                self.tasks.put(t.id, Arc::new(t), order);
            }
            Record::Attachment(a) => self.put_attachment(a),
        }
    }

    /// Puts a contact whose numbers are normalised.
    pub(crate) fn put_contact_rec(&mut self, rec: ContactRec) {
        self.bump_clock(rec.raw.updated_at);
        let order = Some(reported_updated_at(rec.raw.created_at, rec.raw.updated_at));
        if !self.search.is_deferred() {
            let before = self.contacts.get(&rec.raw.id).map(|o| contact_keys(o));
            let after = contact_keys(&rec);
            self.search.update(
                Owner::Contact(rec.raw.id),
                &before.unwrap_or_default(),
                &after,
            );
        }
        let id = rec.raw.id;
        let old = (!self.bulk_fill())
            .then(|| self.contacts.get(&id).cloned())
            .flatten();
        self.contacts.put(id, Arc::new(rec), order);
        if !self.bulk_fill() {
            let row = self.contacts.row_number(&id).expect("just put");
            let new = self.contacts.get(&id).map(|c| &**c);
            self.dependents.relink_contact(row, old.as_deref(), new);
        }
    }

    /// Puts a note already packed.
    pub(crate) fn put_note(&mut self, rec: Arc<NoteRec>) {
        let id = rec.id();
        self.bump_clock(rec.updated_at());
        let old = self
            .notes
            .get(&id)
            .and_then(|o| scoped_reference(o.reference_key(), o.reference()));
        let new = scoped_reference(rec.reference_key(), rec.reference());
        relink_reference(&mut self.note_refs, id, old, new);
        let order =
            (!rec.is_private()).then(|| reported_updated_at(rec.created_at(), rec.updated_at()));
        self.index_note(&rec);
        self.notes.put(id, rec, order);
    }

    fn put_candidate(&mut self, c: Candidate) {
        let phone = self.normalise_number(c.phone.as_deref());
        let mobile = self.normalise_number(c.mobile.as_deref());
        self.put_candidate_rec(CandidateRec::pack(&c, phone.as_deref(), mobile.as_deref()));
    }

    /// Puts a candidate row already packed (its numbers normalised).
    pub(crate) fn put_candidate_rec(&mut self, rec: Arc<CandidateRec>) {
        self.bump_clock(rec.updated_at());
        let id = rec.id();
        let person = rec.person_id();
        let mut affected: SmallVec<[Uuid; 2]> = SmallVec::new();
        affected.push(person);
        let old = self.candidates.get(&id).cloned();
        let moved_from = old
            .as_ref()
            .map(|old| old.person_id())
            .filter(|old| *old != person);
        affected.extend(moved_from);
        // A person's search keys are their rows' numbers and addresses: a row written
        // again with the same ones for the same person (a changed stage, job title or
        // stamp, and every row a derived change touches) leaves them as they were, and
        // neither side of the index's update is worked out.
        let keys_kept = old.as_ref().is_some_and(|o| {
            o.person_id() == person
                && o.phone() == rec.phone()
                && o.mobile() == rec.mobile()
                && o.email() == rec.email()
        });
        let before = if keys_kept {
            SmallVec::new()
        } else {
            self.persons_keys(&affected)
        };
        let order = Some(reported_updated_at(rec.created_at(), rec.updated_at()));
        self.candidates.put(id, rec, order);
        if !self.bulk_fill() {
            let row = self.candidates.row_number(&id).expect("just put");
            let new = self.candidates.get(&id).map(|r| &**r);
            self.dependents.relink_row(row, old.as_deref(), new);
            if let Some(old) = moved_from {
                self.persons.remove(old, row);
            }
            self.persons.insert(person, row);
            self.reorder_cvs(id);
        }
        if !keys_kept {
            self.reindex_persons(&affected, before);
        }
    }

    /// Moves a record's `updated_at` to `stamp` and nothing else (a derived change's
    /// touch, or a store's [`Touched`](crate::store::Touched) marker read back); `false`
    /// when there is no such record of a kind a derived change touches. Candidate rows,
    /// touched by the dozen or the thousand, are restamped in place
    /// ([`Self::restamp_candidate`]); the other kinds are put again whole.
    pub fn restamp(&mut self, kind: RecordKind, id: Uuid, stamp: Stamp) -> bool {
        if kind == RecordKind::Candidate {
            return self.restamp_candidate(id, stamp).is_some();
        }
        let Some(mut record) = self.touchable(kind, id) else {
            return false;
        };
        match &mut record {
            Record::Contact(c) => c.updated_at = stamp,
            Record::Job(j) => j.updated_at = stamp,
            Record::Note(n) => n.updated_at = stamp,
            _ => unreachable!("touchable kinds only"),
        }
        self.put(record);
        true
    }

    /// A record of a kind a derived change touches (candidate rows, contacts, jobs,
    /// notes), as the store keeps it; `None` for another kind or no such record. No
    /// derived change shows on the other kinds (a CV shows its row's stamps).
    pub fn touchable(&self, kind: RecordKind, id: Uuid) -> Option<Record> {
        match kind {
            RecordKind::Candidate => self
                .candidates
                .get(&id)
                .map(|r| Record::Candidate(Box::new(r.raw()))),
            RecordKind::Contact => self
                .contacts
                .get(&id)
                .map(|c| Record::Contact(c.raw.clone())),
            RecordKind::Job => self.jobs.get(&id).map(|j| Record::Job((**j).clone())),
            RecordKind::Note => self.notes.get(&id).map(|n| Record::Note(n.raw())),
            _ => None,
        }
    }

    /// Moves a candidate row's `updated_at` to `stamp` and nothing else (a derived
    /// change's touch): the row packed as it was but for that word, so its numbers,
    /// search keys, person and links stay as they are and are not worked out again;
    /// only its places in the sync orders and its CVs' (which show its stamps) move.
    /// The row as it now is; `None` when there is no such row.
    pub fn restamp_candidate(&mut self, id: Uuid, stamp: Stamp) -> Option<Arc<CandidateRec>> {
        let rec = self.candidates.get(&id)?.restamped(stamp);
        self.bump_clock(stamp);
        let order = Some(reported_updated_at(rec.created_at(), stamp));
        self.candidates.put(id, rec.clone(), order);
        if !self.bulk_fill() {
            self.reorder_cvs(id);
        }
        Some(rec)
    }

    /// Normalises a number; in a bulk fill each distinct number once.
    fn normalise_number(&mut self, raw: Option<&str>) -> Option<Box<str>> {
        match &mut self.bulk {
            Some(bulk) => bulk.numbers.normalise(raw, self.region),
            None => self.normalise(raw),
        }
    }

    fn put_attachment(&mut self, a: Attachment) {
        self.put_attachment_rec(AttachmentRec::pack(&a));
    }

    /// Puts an attachment already packed.
    pub(crate) fn put_attachment_rec(&mut self, rec: Arc<AttachmentRec>) {
        let id: Arc<str> = Arc::from(rec.id());
        let old = self.attachments.get(&id).cloned();
        let (c, u) = rec.times_in(self);
        self.bump_clock(u);
        self.attachments
            .put(id.clone(), rec.clone(), Some(reported_updated_at(c, u)));
        if !self.bulk_fill() {
            let row = self.attachments.row_number(&id).expect("just put");
            if let Some(old) = old {
                self.unindex_attachment(row, &old);
            }
            self.attachments_by_parent.insert(row, &rec);
            if rec.is_candidate_cv() {
                self.cv_by_row.insert(rec.parent_id(), row);
            }
        }
    }

    /// Takes an attachment that is replaced or removed out of the indexes.
    fn unindex_attachment(&mut self, row: u32, old: &AttachmentRec) {
        self.attachments_by_parent.remove(row, old);
        if old.is_candidate_cv() {
            self.cv_by_row.remove(old.parent_id(), row);
        }
    }

    /// Moves the cvs of candidate row `row` to the row's timestamps (or back to their
    /// own, once the row is gone).
    fn reorder_cvs(&mut self, row: Uuid) {
        let cvs: SmallVec<[u32; 2]> = self.cv_by_row.of(row).collect();
        for at in cvs {
            let Some((id, a)) = self
                .attachments
                .at_row(at)
                .map(|(id, a)| (id.clone(), a.clone()))
            else {
                continue;
            };
            let (c, u) = a.times_in(self);
            self.attachments
                .reorder(&id, Some(reported_updated_at(c, u)));
        }
    }

    /// Removes one record; `false` when it was not there.
    pub fn delete(&mut self, kind: RecordKind, id: &str) -> bool {
        if kind == RecordKind::Attachment {
            let Some(row) = self.attachments.row_number(id) else {
                return false;
            };
            let old = self.attachments.remove(&Arc::from(id)).expect("present");
            if !self.bulk_fill() {
                self.unindex_attachment(row, &old);
            }
            return true;
        }
        let Ok(uuid) = Uuid::parse_str(id) else {
            return false;
        };
        match kind {
            RecordKind::User => match self.users.remove(&uuid) {
                Some(old) => {
                    if let Some(e) = &old.email {
                        let key = e.to_lowercase().into_boxed_str();
                        if self.users_by_email.get(&key) == Some(&uuid) {
                            self.users_by_email.remove(&key);
                        }
                    }
                    true
                }
                None => false,
            },
            RecordKind::Stage => self.stages.remove(&uuid).is_some(),
            RecordKind::Company => match self.companies.remove(&uuid) {
                Some(old) => {
                    if !self.search.is_deferred() {
                        let before = self.company_keys(&old);
                        self.search
                            .update(Owner::Company(uuid), &before, &KeySet::default());
                    }
                    true
                }
                None => false,
            },
            RecordKind::Contact => match self
                .contacts
                .row_number(&uuid)
                .zip(self.contacts.remove(&uuid))
            {
                Some((row, old)) => {
                    if !self.bulk_fill() {
                        self.dependents.relink_contact(row, Some(&old), None);
                    }
                    self.search.update(
                        Owner::Contact(uuid),
                        &contact_keys(&old),
                        &KeySet::default(),
                    );
                    true
                }
                None => false,
            },
            RecordKind::Job => match self.jobs.row_number(&uuid).zip(self.jobs.remove(&uuid)) {
                Some((row, old)) => {
                    if !self.bulk_fill() {
                        self.dependents.relink_job(row, Some(&old), None);
                    }
                    true
                }
                None => false,
            },
            RecordKind::Candidate => {
                let Some(person) = self.candidates.get(&uuid).map(|c| c.person_id()) else {
                    return false;
                };
                let row = self.candidates.row_number(&uuid).expect("present");
                let before = self.persons_keys(&[person]);
                let old = self.candidates.remove(&uuid).expect("present");
                if !self.bulk_fill() {
                    self.dependents.relink_row(row, Some(&old), None);
                    self.persons.remove(person, row);
                    self.reorder_cvs(uuid);
                }
                self.reindex_persons(&[person], before);
                true
            }
            RecordKind::Note => match self.notes.remove(&uuid) {
                Some(old) => {
                    let reference = scoped_reference(old.reference_key(), old.reference());
                    relink_reference(&mut self.note_refs, uuid, reference, None);
                    self.unindex_note(&old);
                    true
                }
                None => false,
            },
            RecordKind::Task => match self.tasks.remove(&uuid) {
                Some(old) => {
                    let reference =
                        scoped_reference(old.reference_key.as_deref(), old.reference.as_deref());
                    relink_reference(&mut self.task_refs, uuid, reference, None);
                    true
                }
                None => false,
            },
            RecordKind::Attachment => unreachable!("handled above"),
        }
    }

    /// How many raw records the workspace holds (hidden ones included): what the store
    /// keeps for it, and the one record count the logs report, at load and at import.
    pub fn stored_records(&self) -> usize {
        self.users.len()
            + self.stages.len()
            + self.companies.len()
            + self.contacts.len()
            + self.jobs.len()
            + self.candidates.len()
            + self.notes.len()
            + self.tasks.len()
            + self.attachments.len()
    }

    /// Whether the workspace holds a record of this kind and id (hidden ones included).
    pub fn holds(&self, kind: RecordKind, id: &str) -> bool {
        match kind {
            RecordKind::Attachment => self.attachments.contains(id),
            kind => Uuid::try_parse(id).is_ok_and(|u| self.contains_uuid(kind, u)),
        }
    }

    /// Whether the workspace holds a record with `r`'s kind and id (hidden ones included).
    pub fn holds_record(&self, r: &Record) -> bool {
        match r {
            Record::Attachment(a) => self.attachments.contains(a.id.as_str()),
            r => r.uuid().is_some_and(|u| self.contains_uuid(r.kind(), u)),
        }
    }

    /// Whether a record of a UUID-keyed kind exists (hidden ones included).
    pub fn contains_uuid(&self, kind: RecordKind, id: Uuid) -> bool {
        match kind {
            RecordKind::User => self.users.contains(&id),
            RecordKind::Stage => self.stages.contains_key(&id),
            RecordKind::Company => self.companies.contains(&id),
            RecordKind::Contact => self.contacts.contains(&id),
            RecordKind::Job => self.jobs.contains(&id),
            RecordKind::Candidate => self.candidates.contains(&id),
            RecordKind::Note => self.notes.contains(&id),
            RecordKind::Task => self.tasks.contains(&id),
            RecordKind::Attachment => false,
        }
    }

    /// A user counts as an active member.
    pub fn user_is_active(&self, id: Uuid) -> bool {
        self.users.get(&id).is_some_and(|u| u.is_active())
    }

    /// The candidate rows with a `job_id`, seen from the job side: the candidates
    /// table's subset ([`Table::with_subset`]).
    pub fn applications(&self) -> crate::table::TableRef<'_, Uuid, CandidateRec> {
        self.candidates.subset()
    }

    /// Every candidate row of one person (hidden ones included), with its id, in no
    /// particular order.
    pub fn person_rows_all(
        &self,
        person: Uuid,
    ) -> impl Iterator<Item = (&Uuid, &Arc<CandidateRec>)> + '_ {
        self.persons
            .of(person)
            .filter_map(|row| self.candidates.at_row(row))
    }

    /// Whether `id` is a person with candidate rows.
    pub fn is_person(&self, id: Uuid) -> bool {
        self.persons.has(id)
    }

    /// The candidate row ids of one person, the primary row first.
    pub fn person_rows(&self, person: Uuid) -> SmallVec<[Arc<CandidateRec>; 4]> {
        self.person_rows_ref(person).into_iter().cloned().collect()
    }

    /// [`Self::person_rows`], borrowed from this state.
    pub fn person_rows_ref(&self, person: Uuid) -> SmallVec<[&Arc<CandidateRec>; 4]> {
        let mut rows: SmallVec<[&Arc<CandidateRec>; 4]> =
            self.person_rows_all(person).map(|(_, r)| r).collect();
        rows.sort_by_key(|r| (r.job_id().is_some(), r.created_at(), r.id()));
        rows
    }
}

#[cfg(test)]
mod tests;

/// What records' views read of the rest of the workspace.
impl Surroundings for WorkspaceState {
    fn stage(&self, id: Uuid) -> Option<(Option<&str>, Option<&str>)> {
        self.stages
            .get(&id)
            .map(|s| (s.name.as_deref(), s.stage_type.as_deref()))
    }

    fn user_is_active(&self, id: Uuid) -> bool {
        WorkspaceState::user_is_active(self, id)
    }

    fn job_recruiter(&self, id: Uuid) -> Option<Uuid> {
        self.jobs.get(&id).and_then(|j| j.assigned_recruiter_id)
    }

    fn company_name(&self, id: Uuid) -> Option<&str> {
        self.companies.get(&id).and_then(|c| c.name.as_deref())
    }

    fn contact_company(&self, id: Uuid) -> Option<Uuid> {
        self.contacts.get(&id).map(|c| c.raw.company_id)
    }

    fn candidate_row_times(&self, id: Uuid) -> Option<(Stamp, Stamp)> {
        self.candidates
            .get(&id)
            .map(|c| (c.created_at(), c.updated_at()))
    }
}
