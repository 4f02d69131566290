//! A workspace's in-memory state: every raw record, keyed and ordered, plus the small
//! secondary indexes the derivations need.
//!
//! The state is a persistent value (`imbl` maps share structure): cloning it is cheap, so
//! the workspace actor builds the next state beside the published one and swaps it in
//! atomically after the store has committed. Readers hold an `Arc` of one consistent
//! state for as long as they need it and never take a lock.

use crate::model::*;
use crate::packed::kinds::Rec;
use crate::parents::{AttachmentsByParent, NotesByParent};
use crate::phone::normalise_phone;
use crate::search::keys::{email_key, phone_key};
use crate::search::{EmailKey, KeyIndex, KeySet, Owner, PhoneKey, SearchIndexes};
pub use crate::table::{HashMap, MinKey, Row, Table};
use crate::time::{Stamp, CHANGE_TRACKING_START};
use smallvec::SmallVec;
use std::sync::Arc;
use uuid::Uuid;

/// A candidate row, packed, with its numbers normalised once, when it entered memory
/// (`phone`, `mobile`; the numbers as entered are `phone_as_entered`, `mobile_as_entered`).
pub type CandidateRec = Rec<Candidate>;

/// A note, packed.
pub type NoteRec = Rec<Note>;

/// An attachment's record, packed.
pub type AttachmentRec = Rec<Attachment>;

/// A contact with its numbers normalised once.
#[derive(Clone, Debug)]
pub struct ContactRec {
    pub raw: Contact,
    pub phone: Option<Box<str>>,
    pub mobile: Option<Box<str>>,
}

/// Moves record `id` from its old idempotency key to its new one.
fn relink_reference(
    refs: &mut HashMap<Box<str>, Uuid>,
    id: Uuid,
    old: Option<String>,
    new: Option<&str>,
) {
    if let Some(old) = old {
        if refs.get(old.as_str()) == Some(&id) {
            refs.remove(old.as_str());
        }
    }
    if let Some(new) = new {
        refs.insert(Box::from(new), id);
    }
}

/// Every number and address of a contact.
fn contact_keys(c: &ContactRec) -> KeySet {
    let mut keys = KeySet::default();
    keys.add_phone(c.phone.as_deref());
    keys.add_phone(c.mobile.as_deref());
    keys.add_email(c.raw.email.as_deref());
    keys
}

/// The `updated_at` a record reports: change tracking starts on 2026-08-13, so an edit
/// stamped before then reports `created_at` (spec, "Shared conventions").
pub fn reported_updated_at(created_at: Stamp, updated_at: Stamp) -> Stamp {
    if updated_at < CHANGE_TRACKING_START {
        created_at
    } else {
        updated_at
    }
}

/// A table whose order a bulk load defers ([`Table::defer_order`]).
trait DeferOrder {
    fn defer_order(&mut self);
}

impl<K: std::hash::Hash + Eq + Ord + Clone, V: ?Sized> DeferOrder for Table<K, V> {
    fn defer_order(&mut self) {
        Table::defer_order(self)
    }
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
    /// The candidate rows with a `job_id`, seen from the job side (same records).
    pub applications: Table<Uuid, CandidateRec>,
    pub notes: Table<Uuid, NoteRec>,
    pub tasks: Table<Uuid, Task>,
    pub attachments: Table<Arc<str>, AttachmentRec>,
    /// person_id → the ids of that person's candidate rows.
    pub persons: HashMap<Uuid, SmallVec<[Uuid; 4]>>,
    /// candidate row id → ids of `cv` attachments on it, which take the row's timestamps.
    cv_by_row: HashMap<Uuid, SmallVec<[Arc<str>; 1]>>,
    /// Visible notes by parent record, for the notes sub-resource (`subresources`).
    pub(crate) notes_by_parent: NotesByParent,
    /// Attachments by parent record, for the attachments sub-resource (`subresources`).
    pub(crate) attachments_by_parent: AttachmentsByParent,
    /// The newest stamp of any record: the workspace clock never issues one behind it.
    pub last_stamp: Stamp,
    /// Phone and e-mail indexes of candidate persons, contacts and companies.
    pub search: SearchIndexes,
    /// Idempotency keys of API-created notes and tasks: `reference` → id.
    note_refs: HashMap<Box<str>, Uuid>,
    task_refs: HashMap<Box<str>, Uuid>,
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
            candidates: Table::default(),
            applications: Table::default(),
            notes: Table::default(),
            tasks: Table::default(),
            attachments: Table::default(),
            persons: HashMap::default(),
            cv_by_row: HashMap::default(),
            notes_by_parent: NotesByParent::default(),
            attachments_by_parent: AttachmentsByParent::default(),
            last_stamp: Stamp::MIN,
            search: SearchIndexes::default(),
            note_refs: HashMap::default(),
            task_refs: HashMap::default(),
        }
    }

    /// Reads one workspace's records from the store into a fresh state, building the
    /// search indexes once at the end (a base from every record, no delta).
    pub async fn load(
        store: &dyn crate::store::Store,
        w: Workspace,
    ) -> Result<WorkspaceState, crate::store::StoreError> {
        let mut state = WorkspaceState::new(w);
        let id = state.id();
        let started = std::time::Instant::now();
        state.begin_bulk();
        store.load_records(id, &mut |r| state.put(r)).await?;
        let read = started.elapsed();
        state.end_bulk();
        tracing::debug!(workspace = %id, read_ms = read.as_millis() as u64, index_ms = (started.elapsed() - read).as_millis() as u64, "workspace read and indexed");
        Ok(state)
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
            self.applications.replace(&r.id(), rec.clone());
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

    /// Takes the notes and tasks of `other` (and what indexes them: the notes by parent,
    /// the idempotency keys, the clock) in place of this state's. Putting a note or a
    /// task touches nothing else, so a bulk fill may put them into a state of its own on
    /// another thread and hand them over.
    pub(crate) fn absorb_notes_and_tasks(&mut self, other: WorkspaceState) {
        self.notes = other.notes;
        self.notes_by_parent = other.notes_by_parent;
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

    /// Stops keeping the sync orders and the search indexes while a bulk load or import
    /// puts many records; [`Self::end_bulk`] builds them once from the rows.
    pub fn begin_bulk(&mut self) {
        self.defer_search();
        self.for_each_table(|t| t.defer_order());
    }

    /// Builds what [`Self::begin_bulk`] stopped keeping.
    pub fn end_bulk(&mut self) {
        std::thread::scope(|s| {
            // The two large tables on a thread of their own each, the rest on this one.
            let candidates = &mut self.candidates;
            let notes = &mut self.notes;
            s.spawn(move || candidates.build_order());
            s.spawn(move || notes.build_order());
            self.users.build_order();
            self.companies.build_order();
            self.contacts.build_order();
            self.jobs.build_order();
            self.applications.build_order();
            self.tasks.build_order();
            self.attachments.build_order();
        });
        let ordered = std::time::Instant::now();
        self.rebuild_search();
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
        f(&mut self.applications);
        f(&mut self.notes);
        f(&mut self.tasks);
        f(&mut self.attachments);
    }

    /// Stops index maintenance for a bulk load; [`Self::rebuild_search`] ends it.
    pub fn defer_search(&mut self) {
        self.search.defer();
    }

    /// Builds both search indexes afresh from the records (everything in the base).
    ///
    /// One pass over the rows rather than person by person (a person's duplicate keys
    /// collapse when the pairs are sorted), and the two indexes on two threads: reading
    /// the numbers and addresses out of scattered records is bound by memory latency.
    pub fn rebuild_search(&mut self) {
        let this = &*self;
        let (phone, email) = std::thread::scope(|s| {
            let email = s.spawn(|| KeyIndex::build(this.email_pairs()));
            let phone = KeyIndex::build(this.phone_pairs());
            (phone, email.join().expect("index build does not panic"))
        });
        self.search = SearchIndexes::from_parts(phone, email);
    }

    fn phone_pairs(&self) -> Vec<(PhoneKey, Owner)> {
        let mut out = Vec::with_capacity(self.candidates.len() + self.contacts.len());
        let mut add = |owner: Owner, number: Option<&str>| {
            out.extend(number.and_then(phone_key).map(|k| (k, owner)));
        };
        for (_, c) in self.candidates.iter() {
            let owner = Owner::Person(c.person_id());
            add(owner, c.phone());
            add(owner, c.mobile());
        }
        for (id, c) in self.contacts.iter() {
            add(Owner::Contact(*id), c.phone.as_deref());
            add(Owner::Contact(*id), c.mobile.as_deref());
        }
        for (id, c) in self.companies.iter() {
            add(
                Owner::Company(*id),
                self.normalise(c.phone.as_deref()).as_deref(),
            );
        }
        out
    }

    fn email_pairs(&self) -> Vec<(EmailKey, Owner)> {
        let mut out = Vec::with_capacity(self.candidates.len() + self.contacts.len());
        for (_, c) in self.candidates.iter() {
            let owner = Owner::Person(c.person_id());
            out.extend(c.email().and_then(email_key).map(|k| (k, owner)));
        }
        for (id, c) in self.contacts.iter() {
            let owner = Owner::Contact(*id);
            out.extend(
                c.raw
                    .email
                    .as_deref()
                    .and_then(email_key)
                    .map(|k| (k, owner)),
            );
        }
        out
    }

    /// Every number and address of a person, across all of the person's rows.
    fn person_keys(&self, person: Uuid) -> KeySet {
        let mut keys = KeySet::default();
        for row in self.persons.get(&person).into_iter().flatten() {
            if let Some(r) = self.candidates.get(row) {
                keys.add_phone(r.phone());
                keys.add_phone(r.mobile());
                keys.add_email(r.email());
            }
        }
        keys
    }

    fn company_keys(&self, c: &Company) -> KeySet {
        let mut keys = KeySet::default();
        keys.add_phone(self.normalise(c.phone.as_deref()).as_deref());
        keys
    }

    /// The keys of the given persons, before a change (nothing while deferred).
    fn persons_keys(&self, persons: &[Uuid]) -> SmallVec<[KeySet; 2]> {
        if self.search.is_deferred() {
            return SmallVec::new();
        }
        persons.iter().map(|p| self.person_keys(*p)).collect()
    }

    /// Brings the index in line with the given persons' rows after a change.
    fn reindex_persons(&mut self, persons: &[Uuid], before: SmallVec<[KeySet; 2]>) {
        if self.search.is_deferred() {
            return;
        }
        for (p, before) in persons.iter().zip(before) {
            let after = self.person_keys(*p);
            self.search.update(Owner::Person(*p), &before, &after);
        }
    }

    fn bump_clock(&mut self, s: Stamp) {
        if s > self.last_stamp {
            self.last_stamp = s;
        }
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
    pub fn note_by_reference(&self, reference: &str) -> Option<Uuid> {
        self.note_refs.get(reference).copied()
    }

    /// The task created with this idempotency key, if it still exists.
    pub fn task_by_reference(&self, reference: &str) -> Option<Uuid> {
        self.task_refs.get(reference).copied()
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
                    phone: self.normalise(c.phone.as_deref()),
                    mobile: self.normalise(c.mobile.as_deref()),
                    raw: c,
                };
                self.put_contact_rec(rec);
            }
            Record::Job(j) => {
                self.bump_clock(j.updated_at);
                let order = Some(reported_updated_at(j.created_at, j.updated_at));
                self.jobs.put(j.id, Arc::new(j), order);
            }
            Record::Candidate(c) => self.put_candidate(*c),
            Record::Note(n) => self.put_note(NoteRec::pack(&n)),
            Record::Task(t) => {
                self.bump_clock(t.updated_at);
                let old = self.tasks.get(&t.id).and_then(|o| o.reference.clone());
                relink_reference(&mut self.task_refs, t.id, old, t.reference.as_deref());
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
        self.contacts.put(rec.raw.id, Arc::new(rec), order);
    }

    /// Puts a note already packed.
    pub(crate) fn put_note(&mut self, rec: Arc<NoteRec>) {
        let id = rec.id();
        self.bump_clock(rec.updated_at());
        let old = self
            .notes
            .get(&id)
            .and_then(|o| o.reference().map(str::to_string));
        relink_reference(&mut self.note_refs, id, old, rec.reference());
        let order =
            (!rec.is_private()).then(|| reported_updated_at(rec.created_at(), rec.updated_at()));
        self.index_note(&rec);
        self.notes.put(id, rec, order);
    }

    fn put_candidate(&mut self, c: Candidate) {
        let phone = self.normalise_for_person(c.person_id, c.phone.as_deref());
        let mobile = self.normalise_for_person(c.person_id, c.mobile.as_deref());
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
        if let Some(old) = &old {
            if old.person_id() != person {
                affected.push(old.person_id());
            }
        }
        let before = self.persons_keys(&affected);
        if let Some(old) = old {
            if old.person_id() != person {
                self.unlink_person(old.person_id(), id);
            }
        }
        let order = Some(reported_updated_at(rec.created_at(), rec.updated_at()));
        let rows = self.persons.entry_or_default(person);
        if !rows.contains(&id) {
            rows.push(id);
        }
        if rec.job_id().is_some() {
            self.applications.put(id, rec.clone(), order);
        } else {
            self.applications.remove(&id);
        }
        self.candidates.put(id, rec, order);
        self.reorder_cvs(id);
        self.reindex_persons(&affected, before);
    }

    /// Normalises a candidate's number, reusing the form already computed for another row
    /// of the same person when the number as entered is the same (rows of a person carry
    /// the same personal attributes, and parsing is the costly part of loading).
    fn normalise_for_person(&self, person: Uuid, raw: Option<&str>) -> Option<Box<str>> {
        let raw = raw?;
        let known = self
            .persons
            .get(&person)
            .into_iter()
            .flatten()
            .filter_map(|row| self.candidates.get(row))
            .find_map(|r| {
                if r.phone_as_entered() == Some(raw) {
                    Some(r.phone().map(Box::from))
                } else if r.mobile_as_entered() == Some(raw) {
                    Some(r.mobile().map(Box::from))
                } else {
                    None
                }
            });
        known.unwrap_or_else(|| self.normalise(Some(raw)))
    }

    fn unlink_person(&mut self, person: Uuid, row: Uuid) {
        if let Some(rows) = self.persons.get_mut(&person) {
            rows.retain(|r| *r != row);
            if rows.is_empty() {
                self.persons.remove(&person);
            }
        }
    }

    /// The sync position of an attachment: `cv` attachments of a candidate take the
    /// candidate row's timestamps.
    fn attachment_times(&self, a: &AttachmentRec) -> (Stamp, Stamp) {
        if a.is_candidate_cv() {
            if let Some(c) = self.candidates.get(&a.parent_id()) {
                return (c.created_at(), c.updated_at());
            }
        }
        (a.created_at(), a.updated_at())
    }

    /// `created_at` and `updated_at` as an attachment reports them.
    pub fn attachment_timestamps(&self, a: &AttachmentRec) -> (Stamp, Stamp) {
        let (c, u) = self.attachment_times(a);
        (c, reported_updated_at(c, u))
    }

    fn put_attachment(&mut self, a: Attachment) {
        self.put_attachment_rec(AttachmentRec::pack(&a));
    }

    /// Puts an attachment already packed.
    pub(crate) fn put_attachment_rec(&mut self, rec: Arc<AttachmentRec>) {
        let id: Arc<str> = Arc::from(rec.id());
        self.index_attachment(&id, &rec);
        if let Some(old) = self.attachments.get(&id).cloned() {
            self.unlink_cv(&old, &id);
        }
        if rec.is_candidate_cv() {
            let list = self.cv_by_row.entry_or_default(rec.parent_id());
            if !list.contains(&id) {
                list.push(id.clone());
            }
        }
        let (c, u) = self.attachment_times(&rec);
        self.bump_clock(u);
        self.attachments
            .put(id, rec, Some(reported_updated_at(c, u)));
    }

    fn unlink_cv(&mut self, old: &AttachmentRec, id: &Arc<str>) {
        if let Some(list) = self.cv_by_row.get_mut(&old.parent_id()) {
            list.retain(|x| x != id);
            if list.is_empty() {
                self.cv_by_row.remove(&old.parent_id());
            }
        }
    }

    fn reorder_cvs(&mut self, row: Uuid) {
        let Some(list) = self.cv_by_row.get(&row).cloned() else {
            return;
        };
        for id in list {
            if let Some(a) = self.attachments.get(&id).cloned() {
                let (c, u) = self.attachment_times(&a);
                self.attachments
                    .reorder(&id, Some(reported_updated_at(c, u)));
            }
        }
    }

    /// Removes one record; `false` when it was not there.
    pub fn delete(&mut self, kind: RecordKind, id: &str) -> bool {
        if kind == RecordKind::Attachment {
            let key: Arc<str> = Arc::from(id);
            return match self.attachments.remove(&key) {
                Some(old) => {
                    self.unlink_cv(&old, &key);
                    self.unindex_attachment(&key, &old);
                    true
                }
                None => false,
            };
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
            RecordKind::Contact => match self.contacts.remove(&uuid) {
                Some(old) => {
                    self.search.update(
                        Owner::Contact(uuid),
                        &contact_keys(&old),
                        &KeySet::default(),
                    );
                    true
                }
                None => false,
            },
            RecordKind::Job => self.jobs.remove(&uuid).is_some(),
            RecordKind::Candidate => {
                let Some(person) = self.candidates.get(&uuid).map(|c| c.person_id()) else {
                    return false;
                };
                let before = self.persons_keys(&[person]);
                self.candidates.remove(&uuid);
                self.applications.remove(&uuid);
                self.unlink_person(person, uuid);
                self.reorder_cvs(uuid);
                self.reindex_persons(&[person], before);
                true
            }
            RecordKind::Note => match self.notes.remove(&uuid) {
                Some(old) => {
                    let reference = old.reference().map(str::to_string);
                    relink_reference(&mut self.note_refs, uuid, reference, None);
                    self.unindex_note(&old);
                    true
                }
                None => false,
            },
            RecordKind::Task => match self.tasks.remove(&uuid) {
                Some(old) => {
                    relink_reference(&mut self.task_refs, uuid, old.reference.clone(), None);
                    true
                }
                None => false,
            },
            RecordKind::Attachment => unreachable!("handled above"),
        }
    }

    /// Everything the state holds, in a canonical text: every record (as its raw JSON),
    /// each table's visible order, and every secondary map, sorted. Two states that
    /// describe alike answer every request alike (tests compare a restored state with
    /// the one it was written from).
    #[cfg(test)]
    pub(crate) fn describe(&self) -> String {
        use std::fmt::Write;
        fn table<K: std::fmt::Debug + Ord + Clone + std::hash::Hash + Eq + MinKey, V: ?Sized>(
            out: &mut String,
            name: &str,
            t: &Table<K, V>,
            raw: impl Fn(&V) -> String,
        ) {
            let mut rows: Vec<String> = t
                .iter()
                .map(|(k, v)| format!("{name} {k:?} {}", raw(v)))
                .collect();
            rows.sort();
            for r in rows {
                writeln!(out, "{r}").unwrap();
            }
            for (stamp, k, _) in t.rows_from(None, None) {
                writeln!(out, "{name} order {stamp:?} {k:?}").unwrap();
            }
        }
        fn sorted<T: std::fmt::Debug>(
            out: &mut String,
            name: &str,
            items: impl Iterator<Item = T>,
        ) {
            let mut lines: Vec<String> = items.map(|i| format!("{name} {i:?}")).collect();
            lines.sort();
            for l in lines {
                writeln!(out, "{l}").unwrap();
            }
        }
        let json = |r: Record| r.to_json();
        let mut out = String::new();
        writeln!(
            out,
            "region {:?} last_stamp {:?}",
            self.region, self.last_stamp
        )
        .unwrap();
        table(&mut out, "user", &self.users, |u| {
            json(Record::User(u.clone()))
        });
        sorted(
            &mut out,
            "stage",
            self.stages
                .iter()
                .map(|(_, s)| json(Record::Stage((**s).clone()))),
        );
        table(&mut out, "company", &self.companies, |c| {
            json(Record::Company(c.clone()))
        });
        table(&mut out, "contact", &self.contacts, |c| {
            format!(
                "{} {:?} {:?}",
                json(Record::Contact(c.raw.clone())),
                c.phone,
                c.mobile
            )
        });
        table(&mut out, "job", &self.jobs, |j| {
            json(Record::Job(j.clone()))
        });
        table(&mut out, "candidate", &self.candidates, |c| {
            format!(
                "{} {:?} {:?}",
                json(Record::Candidate(Box::new(c.raw()))),
                c.phone(),
                c.mobile()
            )
        });
        table(&mut out, "application", &self.applications, |c| {
            c.id().to_string()
        });
        table(&mut out, "note", &self.notes, |n| {
            json(Record::Note(n.raw()))
        });
        table(&mut out, "task", &self.tasks, |t| {
            json(Record::Task(t.clone()))
        });
        table(&mut out, "attachment", &self.attachments, |a| {
            json(Record::Attachment(a.raw()))
        });
        sorted(&mut out, "users_by_email", self.users_by_email.iter());
        sorted(
            &mut out,
            "person",
            self.persons.iter().map(|(p, rows)| {
                let mut rows = rows.to_vec();
                rows.sort();
                (p, rows)
            }),
        );
        sorted(
            &mut out,
            "cv_by_row",
            self.cv_by_row.iter().map(|(r, ids)| {
                let mut ids = ids.to_vec();
                ids.sort();
                (r, ids)
            }),
        );
        sorted(&mut out, "notes_by_parent", self.notes_by_parent.entries());
        sorted(
            &mut out,
            "attachments_by_parent",
            self.attachments_by_parent.entries(),
        );
        sorted(&mut out, "note_ref", self.note_refs.iter());
        sorted(&mut out, "task_ref", self.task_refs.iter());
        sorted(&mut out, "phone_key", self.phone_pairs().iter());
        sorted(&mut out, "email_key", self.email_pairs().iter());
        out
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

    /// The candidate row ids of one person, the primary row first.
    pub fn person_rows(&self, person: Uuid) -> SmallVec<[Arc<CandidateRec>; 4]> {
        self.person_rows_ref(person).into_iter().cloned().collect()
    }

    /// [`Self::person_rows`], borrowed from this state.
    pub fn person_rows_ref(&self, person: Uuid) -> SmallVec<[&Arc<CandidateRec>; 4]> {
        let mut rows: SmallVec<[&Arc<CandidateRec>; 4]> = self
            .persons
            .get(&person)
            .into_iter()
            .flatten()
            .filter_map(|id| self.candidates.get(id))
            .collect();
        rows.sort_by_key(|r| (r.job_id().is_some(), r.created_at(), r.id()));
        rows
    }
}
