//! Whole-file validation of a snapshot against the workspace it targets: one function
//! per array, each checking its entries' own rules and their references (to the
//! workspace as it will be: what it holds, plus what the file adds, minus what it
//! deletes). The first error names its array, index and field; nothing is applied
//! before every array has passed.

use super::{AttachmentIn, Entry, Snapshot, SnapshotError};
use crate::keys::KeyDirectory;
use crate::model::*;
use crate::model::{CandidateRec, NoteRec};
use crate::state::WorkspaceState;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;
use uuid::Uuid;

/// An id as written in a snapshot array: a UUID, or any string (keys, attachments).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
enum Id {
    Uuid(Uuid),
    Text(String),
}

impl Id {
    fn parse(s: &str) -> Id {
        Uuid::try_parse(s).map_or_else(|_| Id::Text(s.to_string()), Id::Uuid)
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Uuid(u) => write!(f, "{u}"),
            Id::Text(t) => f.write_str(t),
        }
    }
}

pub(super) fn parent_kind(p: ParentType) -> RecordKind {
    match p {
        ParentType::Candidate => RecordKind::Candidate,
        ParentType::Contact => RecordKind::Contact,
        ParentType::Company => RecordKind::Company,
        ParentType::Job => RecordKind::Job,
    }
}

/// What validation knows: the workspace as it stands, the ids the file adds and removes
/// (per kind), and every key that exists.
pub(super) struct Checker<'a> {
    state: &'a WorkspaceState,
    workspace: Uuid,
    keys: &'a dyn KeyDirectory,
    added: HashMap<RecordKind, HashSet<Uuid>>,
    removed: HashMap<RecordKind, HashSet<Uuid>>,
}

/// Records the validation completed from the file: notes with the company of their
/// contact filled in, and the keys with their secrets hashed.
pub(super) struct Completed {
    pub(super) notes: Vec<Arc<NoteRec>>,
    pub(super) keys: Vec<ApiKey>,
}

impl<'a> Checker<'a> {
    /// A checker of `snap` against `state`: every array's ids are read first (each at
    /// most once per array), so that references can point anywhere in the file.
    pub(super) fn new(
        state: &'a WorkspaceState,
        keys: &'a dyn KeyDirectory,
        snap: &Snapshot,
    ) -> Result<Self, SnapshotError> {
        let mut c = Checker {
            state,
            workspace: state.id(),
            keys,
            added: HashMap::new(),
            removed: HashMap::new(),
        };
        let uuid = |id: Uuid| Id::Uuid(id);
        c.collect("users", Some(RecordKind::User), &snap.users, |r| uuid(r.id))?;
        c.collect("api_keys", None, &snap.api_keys, |r| Id::Text(r.id.clone()))?;
        c.collect(
            "pipeline_stages",
            Some(RecordKind::Stage),
            &snap.pipeline_stages,
            |r| uuid(r.id),
        )?;
        c.collect(
            "companies",
            Some(RecordKind::Company),
            &snap.companies,
            |r| uuid(r.id),
        )?;
        c.collect("contacts", Some(RecordKind::Contact), &snap.contacts, |r| {
            uuid(r.id)
        })?;
        c.collect("jobs", Some(RecordKind::Job), &snap.jobs, |r| uuid(r.id))?;
        c.collect(
            "candidates",
            Some(RecordKind::Candidate),
            &snap.candidates,
            |r| uuid(r.id()),
        )?;
        c.collect("notes", Some(RecordKind::Note), &snap.notes, |r| {
            uuid(r.id())
        })?;
        c.collect("tasks", Some(RecordKind::Task), &snap.tasks, |r| uuid(r.id))?;
        c.collect(
            "attachments",
            Some(RecordKind::Attachment),
            &snap.attachments,
            |r| Id::Text(r.rec.id().to_string()),
        )?;
        Ok(c)
    }

    /// Notes one array's ids: each at most once, and (for UUID-keyed kinds) which are
    /// added and which removed.
    fn collect<T>(
        &mut self,
        array: &str,
        kind: Option<RecordKind>,
        entries: &[Entry<T>],
        id_of: impl Fn(&T) -> Id,
    ) -> Result<(), SnapshotError> {
        let mut seen = HashSet::with_capacity(entries.len());
        for (i, e) in entries.iter().enumerate() {
            let id = match e {
                Entry::Upsert(r) => id_of(r),
                Entry::Delete(id) => Id::parse(id),
            };
            if let (Some(k), Id::Uuid(u)) = (kind, &id) {
                match e {
                    Entry::Upsert(_) => self.added.entry(k).or_default().insert(*u),
                    Entry::Delete(_) => self.removed.entry(k).or_default().insert(*u),
                };
            }
            if !seen.insert(id) {
                let id = match e {
                    Entry::Upsert(r) => id_of(r).to_string(),
                    Entry::Delete(id) => id.clone(),
                };
                return Err(SnapshotError::at(
                    array,
                    i,
                    "id",
                    format!("duplicate id {id:?}"),
                ));
            }
        }
        Ok(())
    }

    /// Whether a record of `kind` exists once the import is applied.
    fn has(&self, kind: RecordKind, id: Uuid) -> bool {
        if self.removed.get(&kind).is_some_and(|s| s.contains(&id)) {
            return false;
        }
        self.added.get(&kind).is_some_and(|s| s.contains(&id)) || self.state.contains_uuid(kind, id)
    }

    fn user_ref(
        &self,
        array: &str,
        i: usize,
        field: &str,
        id: Option<Uuid>,
    ) -> Result<(), SnapshotError> {
        match id {
            Some(u) if !self.has(RecordKind::User, u) => Err(SnapshotError::at(
                array,
                i,
                field,
                format!("user {u} does not exist in the workspace or this file"),
            )),
            _ => Ok(()),
        }
    }

    fn record_ref(
        &self,
        array: &str,
        i: usize,
        field: &str,
        kind: RecordKind,
        id: Option<Uuid>,
    ) -> Result<(), SnapshotError> {
        match id {
            Some(u) if !self.has(kind, u) => Err(SnapshotError::at(
                array,
                i,
                field,
                format!(
                    "{} {u} does not exist in the workspace or this file",
                    kind.as_str().replace('_', " ")
                ),
            )),
            _ => Ok(()),
        }
    }

    /// Checks every array, in dependency order, and completes what the file leaves to
    /// the service (see [`Completed`]).
    pub(super) fn check(&self, snap: &Snapshot) -> Result<Completed, SnapshotError> {
        self.users(&snap.users)?;
        let keys = self.api_keys(&snap.api_keys)?;
        self.companies(&snap.companies)?;
        self.contacts(&snap.contacts)?;
        self.jobs(&snap.jobs)?;
        self.candidates(&snap.candidates)?;
        let notes = self.notes(&snap.notes, &snap.contacts)?;
        self.tasks(&snap.tasks)?;
        self.attachments(&snap.attachments)?;
        Ok(Completed { notes, keys })
    }

    /// Users: an e-mail is unique in the workspace, case-insensitively.
    fn users(&self, users: &[Entry<User>]) -> Result<(), SnapshotError> {
        let replaced: HashSet<Uuid> = users
            .iter()
            .map(|e| match e {
                Entry::Upsert(u) => u.id,
                Entry::Delete(id) => Uuid::parse_str(id).unwrap_or_default(),
            })
            .collect();
        let mut emails: HashMap<String, Uuid> = HashMap::new();
        for (i, e) in users.iter().enumerate() {
            let Entry::Upsert(u) = e else { continue };
            let Some(mail) = &u.email else { continue };
            let key = mail.to_lowercase();
            let clash_state = self
                .state
                .users_by_email
                .get(key.as_str())
                .filter(|other| **other != u.id && !replaced.contains(other));
            if clash_state.is_some() || emails.get(&key).is_some_and(|o| *o != u.id) {
                return Err(SnapshotError::at(
                    "users",
                    i,
                    "email",
                    format!("{mail:?} is already used by another user of the workspace"),
                ));
            }
            emails.insert(key, u.id);
        }
        Ok(())
    }

    /// API keys: a strong secret (`keys::weak_secret`), known scopes, a creator who is a
    /// user of the workspace (as the file or else the workspace has them; whatever their
    /// role now), an id and a secret no other key (of any workspace) holds, a budget of
    /// at least 1. A key "deleted" by a snapshot is revoked: its row stays, so that the id
    /// stays taken and the revocation is on record. The keys as they will be stored.
    fn api_keys(&self, keys: &[Entry<super::ApiKeyIn>]) -> Result<Vec<ApiKey>, SnapshotError> {
        let taken =
            |i| SnapshotError::at("api_keys", i, "id", "key id is taken by another workspace");
        let mut out = Vec::new();
        for (i, e) in keys.iter().enumerate() {
            match e {
                Entry::Upsert(k) => {
                    if let Some(why) = crate::keys::weak_secret(&k.secret) {
                        return Err(SnapshotError::at("api_keys", i, "secret", why));
                    }
                    let mut scopes = Scopes::read_only();
                    for s in &k.scopes {
                        scopes = scopes.with(Scope::parse(s).ok_or_else(|| {
                            SnapshotError::at(
                                "api_keys",
                                i,
                                "scopes",
                                format!("unknown scope {s:?}"),
                            )
                        })?);
                    }
                    // Any user of the workspace: the product's rule (keys are created
                    // by an owner or administrator) held when the key was made, and a
                    // creator demoted since has not lost access, so the key still works
                    // (the spec's rule 5). Keys made through recruitd keep the rule
                    // (`keys::may_create_keys`).
                    self.user_ref("api_keys", i, "created_by", Some(k.created_by))?;
                    let existing = self.keys.key(&k.id);
                    if existing
                        .as_ref()
                        .is_some_and(|other| other.workspace_id != self.workspace)
                    {
                        return Err(taken(i));
                    }
                    let hash = hash_secret(&k.secret);
                    if self
                        .keys
                        .key_by_hash(&hash)
                        .is_some_and(|owner| owner != k.id)
                    {
                        return Err(SnapshotError::at(
                            "api_keys",
                            i,
                            "secret",
                            "secret is already used by another key",
                        ));
                    }
                    if k.rate_limit_per_minute == Some(0) {
                        return Err(SnapshotError::at(
                            "api_keys",
                            i,
                            "rate_limit_per_minute",
                            "must be at least 1",
                        ));
                    }
                    out.push(ApiKey {
                        id: k.id.clone(),
                        workspace_id: self.workspace,
                        secret_hash: hash,
                        scopes,
                        created_by: k.created_by,
                        revoked: k.revoked,
                        rate_limit_per_minute: k.rate_limit_per_minute,
                        created_at: existing.and_then(|existing| existing.created_at),
                    });
                }
                Entry::Delete(id) => match self.keys.key(id) {
                    Some(k) if k.workspace_id != self.workspace => return Err(taken(i)),
                    Some(k) => out.push(ApiKey { revoked: true, ..k }),
                    None => {}
                },
            }
        }
        Ok(out)
    }

    fn companies(&self, companies: &[Entry<Company>]) -> Result<(), SnapshotError> {
        for (i, e) in companies.iter().enumerate() {
            if let Entry::Upsert(c) = e {
                self.user_ref("companies", i, "owner_id", c.owner_id)?;
            }
        }
        Ok(())
    }

    fn contacts(&self, contacts: &[Entry<Contact>]) -> Result<(), SnapshotError> {
        for (i, e) in contacts.iter().enumerate() {
            if let Entry::Upsert(c) = e {
                self.record_ref(
                    "contacts",
                    i,
                    "company_id",
                    RecordKind::Company,
                    Some(c.company_id),
                )?;
                self.user_ref("contacts", i, "owner_id", c.owner_id)?;
            }
        }
        Ok(())
    }

    fn jobs(&self, jobs: &[Entry<Job>]) -> Result<(), SnapshotError> {
        for (i, e) in jobs.iter().enumerate() {
            if let Entry::Upsert(j) = e {
                self.record_ref("jobs", i, "company_id", RecordKind::Company, j.company_id)?;
                self.user_ref("jobs", i, "assigned_recruiter_id", j.assigned_recruiter_id)?;
                self.user_ref("jobs", i, "created_by", j.created_by)?;
            }
        }
        Ok(())
    }

    /// Candidate rows: their references, a stage only on job rows, `rejected_at` with a
    /// rejection, and exactly one primary row per person, judged on the workspace as it
    /// will be.
    fn candidates(&self, candidates: &[Entry<Arc<CandidateRec>>]) -> Result<(), SnapshotError> {
        for (i, e) in candidates.iter().enumerate() {
            let Entry::Upsert(c) = e else { continue };
            self.record_ref("candidates", i, "job_id", RecordKind::Job, c.job_id())?;
            self.record_ref("candidates", i, "stage_id", RecordKind::Stage, c.stage_id())?;
            self.user_ref("candidates", i, "owner_id", c.owner_id())?;
            if c.job_id().is_none() && c.stage_id().is_some() {
                return Err(SnapshotError::at(
                    "candidates",
                    i,
                    "stage_id",
                    "must be null on the primary row (job_id null)",
                ));
            }
            if c.outcome() == Some(Outcome::Rejected) && c.rejected_at().is_none() {
                return Err(SnapshotError::at(
                    "candidates",
                    i,
                    "rejected_at",
                    "is required when outcome is rejected",
                ));
            }
        }
        let mut file_rows: HashMap<Uuid, Vec<(usize, &CandidateRec)>> = HashMap::new();
        let mut touched_ids: HashSet<Uuid> = HashSet::new();
        for (i, e) in candidates.iter().enumerate() {
            match e {
                Entry::Upsert(c) => {
                    file_rows.entry(c.person_id()).or_default().push((i, &**c));
                    touched_ids.insert(c.id());
                }
                Entry::Delete(id) => {
                    if let Ok(u) = Uuid::parse_str(id) {
                        touched_ids.insert(u);
                    }
                }
            }
        }
        for (person, rows) in &file_rows {
            let from_state = self
                .state
                .person_rows_all(*person)
                .filter(|(id, r)| !touched_ids.contains(*id) && r.is_primary())
                .count();
            let from_file = rows.iter().filter(|(_, c)| c.is_primary()).count();
            if from_state + from_file != 1 {
                let (i, _) = rows
                    .iter()
                    .find(|(_, c)| c.is_primary())
                    .copied()
                    .unwrap_or(rows[0]);
                let msg = if from_state + from_file == 0 {
                    format!("person {person} has no primary row (a row with job_id null)")
                } else {
                    format!("person {person} has more than one primary row (job_id null)")
                };
                return Err(SnapshotError::at("candidates", i, "person_id", msg));
            }
        }
        Ok(())
    }

    /// Notes: their parent and author, `job_id` only on candidate notes and `company_id`
    /// only on contact notes. A contact note's company is filled from the contact when
    /// omitted (the file's version of the contact wins). The notes as they will be
    /// stored, one per upsert entry, in file order.
    fn notes(
        &self,
        notes: &[Entry<Arc<NoteRec>>],
        contacts: &[Entry<Contact>],
    ) -> Result<Vec<Arc<NoteRec>>, SnapshotError> {
        let file_contacts: HashMap<Uuid, Uuid> = contacts
            .iter()
            .filter_map(Entry::upsert)
            .map(|c| (c.id, c.company_id))
            .collect();
        let mut out = Vec::with_capacity(notes.len());
        for (i, e) in notes.iter().enumerate() {
            let Entry::Upsert(n) = e else { continue };
            self.record_ref(
                "notes",
                i,
                "parent_id",
                parent_kind(n.parent_type()),
                Some(n.parent_id()),
            )?;
            self.user_ref("notes", i, "author_id", n.author_id())?;
            if n.parent_type() != ParentType::Candidate && n.job_id().is_some() {
                return Err(SnapshotError::at(
                    "notes",
                    i,
                    "job_id",
                    "only candidate notes carry a job_id",
                ));
            }
            if n.parent_type() != ParentType::Contact && n.company_id().is_some() {
                return Err(SnapshotError::at(
                    "notes",
                    i,
                    "company_id",
                    "only contact notes carry a company_id",
                ));
            }
            self.record_ref("notes", i, "job_id", RecordKind::Job, n.job_id())?;
            self.record_ref(
                "notes",
                i,
                "company_id",
                RecordKind::Company,
                n.company_id(),
            )?;
            if n.parent_type() == ParentType::Contact && n.company_id().is_none() {
                let company = file_contacts.get(&n.parent_id()).copied().or_else(|| {
                    self.state
                        .contacts
                        .get(&n.parent_id())
                        .map(|c| c.raw.company_id)
                });
                if company.is_some() {
                    let mut raw = n.raw();
                    raw.company_id = company;
                    out.push(NoteRec::pack(&raw));
                    continue;
                }
            }
            out.push(n.clone());
        }
        Ok(out)
    }

    /// Tasks: never on a job; their parent, owner and the placement they remind of.
    fn tasks(&self, tasks: &[Entry<Task>]) -> Result<(), SnapshotError> {
        for (i, e) in tasks.iter().enumerate() {
            let Entry::Upsert(t) = e else { continue };
            if t.parent_type == ParentType::Job {
                return Err(SnapshotError::at(
                    "tasks",
                    i,
                    "parent_type",
                    "tasks belong to a candidate, contact or company, never a job",
                ));
            }
            self.record_ref(
                "tasks",
                i,
                "parent_id",
                parent_kind(t.parent_type),
                Some(t.parent_id),
            )?;
            self.user_ref("tasks", i, "owner_id", t.owner_id)?;
            self.record_ref(
                "tasks",
                i,
                "placement_row_id",
                RecordKind::Candidate,
                t.placement_row_id,
            )?;
        }
        Ok(())
    }

    /// Attachments: a prefixed id, a candidate or company parent (their bytes were
    /// decoded when the file was parsed).
    fn attachments(&self, attachments: &[Entry<AttachmentIn>]) -> Result<(), SnapshotError> {
        for (i, e) in attachments.iter().enumerate() {
            let Entry::Upsert(a) = e else { continue };
            let a = &a.rec;
            if split_attachment_id(a.id()).is_none() {
                return Err(SnapshotError::at(
                    "attachments",
                    i,
                    "id",
                    "must be cv:, file:, cvdoc: or clientfile: followed by an identifier",
                ));
            }
            if !matches!(a.parent_type(), ParentType::Candidate | ParentType::Company) {
                return Err(SnapshotError::at(
                    "attachments",
                    i,
                    "parent_type",
                    "must be candidate or company",
                ));
            }
            self.record_ref(
                "attachments",
                i,
                "parent_id",
                parent_kind(a.parent_type()),
                Some(a.parent_id()),
            )?;
        }
        Ok(())
    }
}
