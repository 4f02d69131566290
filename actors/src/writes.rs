//! API writes: notes, tasks and edits of allow-listed record fields.
//!
//! A [`WriteOp`] arrives syntactically valid (the HTTP layer checked JSON types, unknown
//! fields and formats); [`plan_write`] checks it against the workspace (parents, users,
//! companies, references), stamps it, and applies it to a working copy of the state while
//! recording the records to commit. The workspace actor runs it for every write of a
//! batch against one working copy, commits the batch, and only then publishes.

use crate::model::*;
use crate::state::WorkspaceState;
use crate::store::ChangeSet;
use crate::time::{Date, Stamp};
use serde_json::Number;
use std::sync::Arc;
use uuid::Uuid;

/// A field a PATCH sets to a value or clears (JSON `null`).
#[derive(Clone, Debug, PartialEq)]
pub enum Change<T> {
    Set(T),
    Clear,
}

impl<T> Change<T> {
    fn into_option(self) -> Option<T> {
        match self {
            Change::Set(v) => Some(v),
            Change::Clear => None,
        }
    }
}

/// Applies an optional change to a field.
fn apply<T>(field: &mut Option<T>, change: Option<Change<T>>) {
    if let Some(c) = change {
        *field = c.into_option();
    }
}

#[derive(Clone, Debug)]
pub struct NewNote {
    pub parent_type: ParentType,
    pub parent_id: Uuid,
    pub body_html: String,
    pub title: Option<String>,
    pub label: Option<String>,
    pub author_email: Option<String>,
    pub is_private: bool,
    pub reference: Option<String>,
}

#[derive(Clone, Debug, Default)]
pub struct NotePatch {
    pub body_html: Option<String>,
    pub title: Option<Change<String>>,
    pub label: Option<Change<String>>,
    pub is_private: Option<bool>,
}

#[derive(Clone, Debug)]
pub struct NewTask {
    pub parent_type: ParentType,
    pub parent_id: Uuid,
    pub title: String,
    pub body_html: Option<String>,
    pub due_date: Option<Date>,
    pub owner_email: Option<String>,
    pub is_private: bool,
    pub reference: Option<String>,
}

/// The two task states a client may set; `cancelled` is the service's own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientTaskStatus {
    Open,
    Completed,
}

#[derive(Clone, Debug, Default)]
pub struct TaskPatch {
    pub title: Option<String>,
    pub body_html: Option<Change<String>>,
    pub due_date: Option<Change<Date>>,
    pub owner_email: Option<Change<String>>,
    pub is_private: Option<bool>,
    pub status: Option<ClientTaskStatus>,
}

#[derive(Clone, Debug, Default)]
pub struct CandidatePatch {
    pub name: Option<Change<String>>,
    pub email: Option<Change<String>>,
    pub phone: Option<Change<String>>,
    pub job_title: Option<Change<String>>,
    pub current_company: Option<Change<String>>,
    pub current_salary_amount: Option<Change<Number>>,
    pub current_salary_currency: Option<Change<String>>,
    pub expected_salary_amount: Option<Change<Number>>,
    pub expected_salary_currency: Option<Change<String>>,
    pub owning_recruiter_id: Option<Change<Uuid>>,
}

impl CandidatePatch {
    /// Whether the patch touches attributes of the person (carried on every row).
    fn touches_person(&self) -> bool {
        self.name.is_some()
            || self.email.is_some()
            || self.phone.is_some()
            || self.job_title.is_some()
            || self.current_company.is_some()
            || self.current_salary_amount.is_some()
            || self.current_salary_currency.is_some()
            || self.expected_salary_amount.is_some()
            || self.expected_salary_currency.is_some()
    }
}

#[derive(Clone, Debug, Default)]
pub struct ContactPatch {
    pub name: Option<Change<String>>,
    pub email: Option<Change<String>>,
    pub phone: Option<Change<String>>,
    /// Contacts always belong to a company: never cleared.
    pub company_id: Option<Uuid>,
    pub owning_recruiter_id: Option<Change<Uuid>>,
}

#[derive(Clone, Debug, Default)]
pub struct CompanyPatch {
    pub name: Option<Change<String>>,
    pub phone: Option<Change<String>>,
    pub owning_recruiter_id: Option<Change<Uuid>>,
}

#[derive(Clone, Debug, Default)]
pub struct JobPatch {
    pub title: Option<Change<String>>,
    pub salary_amount: Option<Change<Number>>,
    pub salary_currency: Option<Change<String>>,
    pub company_id: Option<Change<Uuid>>,
    pub live: Option<bool>,
    pub owning_recruiter_id: Option<Change<Uuid>>,
}

/// One write, as a client asked for it.
#[derive(Clone, Debug)]
pub enum WriteOp {
    CreateNote(NewNote),
    UpdateNote(Uuid, NotePatch),
    DeleteNote(Uuid),
    CreateTask(NewTask),
    UpdateTask(Uuid, TaskPatch),
    DeleteTask(Uuid),
    PatchCandidate(Uuid, CandidatePatch),
    PatchContact(Uuid, ContactPatch),
    PatchCompany(Uuid, CompanyPatch),
    PatchJob(Uuid, JobPatch),
}

/// What a write did, for its response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Written {
    /// A new record.
    Created(RecordKind, Uuid),
    /// An existing record (a PATCH, or a create repeating a `reference`).
    Updated(RecordKind, Uuid),
    Deleted(RecordKind, Uuid),
}

/// Why a write was refused or failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum WriteError {
    /// A value does not fit the workspace: `field: message`.
    #[error("{field}: {message}")]
    Invalid {
        field: &'static str,
        message: String,
    },
    /// The record to change does not exist (or is not visible) in this workspace.
    #[error("{0}")]
    NotFound(String),
    /// The store failed; nothing changed.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// The workspace could not start the write in time (it waited behind an import or
    /// a slow store); nothing of it was applied: retry later.
    #[error("{0}")]
    Busy(String),
    /// The workspace's actor stopped before answering (the server is shutting down).
    #[error("the workspace is not accepting writes")]
    Stopped,
}

fn invalid(field: &'static str, message: impl Into<String>) -> WriteError {
    WriteError::Invalid {
        field,
        message: message.into(),
    }
}

/// Checks `op` against `state`, stamps it and applies it to `state`, appending the
/// records to commit to `changes`. On error `state` and `changes` are untouched.
pub fn plan_write(
    state: &mut WorkspaceState,
    op: WriteOp,
    changes: &mut ChangeSet,
) -> Result<Written, WriteError> {
    // One stamp per write, strictly after every stamp the workspace has issued, so that
    // commit order is (`updated_at`, id) order.
    let stamp = state.stamp_after_last();
    let mut out: Vec<Record> = Vec::new();
    let mut deletes: Vec<(RecordKind, String)> = Vec::new();
    let written = match op {
        WriteOp::CreateNote(n) => create_note(state, n, stamp, &mut out)?,
        WriteOp::UpdateNote(id, p) => update_note(state, id, p, stamp, &mut out)?,
        WriteOp::DeleteNote(id) => {
            shown_note(state, id)?;
            deletes.push((RecordKind::Note, id.to_string()));
            Written::Deleted(RecordKind::Note, id)
        }
        WriteOp::CreateTask(t) => create_task(state, t, stamp, &mut out)?,
        WriteOp::UpdateTask(id, p) => update_task(state, id, p, stamp, &mut out)?,
        WriteOp::DeleteTask(id) => {
            shown_task(state, id)?;
            deletes.push((RecordKind::Task, id.to_string()));
            Written::Deleted(RecordKind::Task, id)
        }
        WriteOp::PatchCandidate(id, p) => patch_candidate(state, id, p, stamp, &mut out)?,
        WriteOp::PatchContact(id, p) => patch_contact(state, id, p, stamp, &mut out)?,
        WriteOp::PatchCompany(id, p) => patch_company(state, id, p, stamp, &mut out)?,
        WriteOp::PatchJob(id, p) => patch_job(state, id, p, stamp, &mut out)?,
    };
    // Everything is checked: now apply.
    for r in out {
        changes.upserts.push(r.clone());
        state.put(r);
    }
    for (kind, id) in deletes {
        state.delete(kind, &id);
        changes.deletes.push((kind, id));
    }
    Ok(written)
}

/// The workspace owner: the earliest active user with role `owner`, else the earliest
/// active user. Authors notes that name no (accepted) author.
pub fn workspace_owner(state: &WorkspaceState) -> Option<Uuid> {
    let mut best: Option<(bool, Stamp, Uuid)> = None;
    for (id, u) in state.users.iter() {
        if !u.is_active() {
            continue;
        }
        let rank = (u.role.as_deref() != Some("owner"), u.created_at, *id);
        if best.is_none_or(|b| rank < b) {
            best = Some(rank);
        }
    }
    best.map(|(_, _, id)| id)
}

/// An accepted member by work e-mail (the whole address, case-insensitively).
fn member_by_email(state: &WorkspaceState, email: &str) -> Option<Uuid> {
    let id = *state
        .users_by_email
        .get(email.trim().to_lowercase().as_str())?;
    state.user_is_active(id).then_some(id)
}

/// A user that can be named as a record's owner: any member of this workspace the API
/// shows (active or invited; not removed).
fn check_user(state: &WorkspaceState, field: &'static str, id: Uuid) -> Result<(), WriteError> {
    if state.users.get_visible(&id).is_some() {
        Ok(())
    } else {
        Err(invalid(
            field,
            format!("no user with id {id} in this workspace"),
        ))
    }
}

fn check_company(state: &WorkspaceState, field: &'static str, id: Uuid) -> Result<(), WriteError> {
    if state.companies.get_visible(&id).is_some() {
        Ok(())
    } else {
        Err(invalid(
            field,
            format!("no company with id {id} in this workspace"),
        ))
    }
}

/// Where a note or task goes: `(parent_id, job_id, company_id)` as stored.
fn resolve_parent(
    state: &WorkspaceState,
    parent_type: ParentType,
    parent_id: Uuid,
) -> Result<(Uuid, Option<Uuid>, Option<Uuid>), WriteError> {
    let missing = || {
        invalid(
            "parent_id",
            format!(
                "no {} with id {parent_id} in this workspace",
                parent_type.as_str()
            ),
        )
    };
    match parent_type {
        ParentType::Candidate => {
            // Any row of the person (or the person id itself) resolves to the person's
            // primary row; a job row keeps its job.
            let (person, job) = match state.candidates.get_visible(&parent_id) {
                Some(row) => (row.raw.person_id, row.raw.job_id),
                None if state.persons.contains_key(&parent_id) => (parent_id, None),
                None => return Err(missing()),
            };
            let rows = state.person_rows_ref(person);
            let primary = rows
                .iter()
                .find(|r| r.raw.is_primary())
                .or(rows.first())
                .ok_or_else(missing)?;
            Ok((primary.raw.id, job, None))
        }
        ParentType::Contact => {
            let c = state.contacts.get_visible(&parent_id).ok_or_else(missing)?;
            Ok((parent_id, None, Some(c.raw.company_id)))
        }
        ParentType::Company => {
            state
                .companies
                .get_visible(&parent_id)
                .ok_or_else(missing)?;
            Ok((parent_id, None, None))
        }
        ParentType::Job => {
            state.jobs.get_visible(&parent_id).ok_or_else(missing)?;
            Ok((parent_id, None, None))
        }
    }
}

/// The note a PATCH or DELETE by id may reach: only one the API shows. A private note is
/// never returned by id, so it cannot be changed, published or deleted by id either; it
/// is refused with the very error of a missing id, so the answer does not tell one from
/// the other. (A create repeating a `reference` does not go through here: it keeps
/// updating the note it names, private or not.)
fn shown_note(state: &WorkspaceState, id: Uuid) -> Result<&Arc<Note>, WriteError> {
    state
        .notes
        .get_visible(&id)
        .ok_or_else(|| WriteError::NotFound(format!("no note with id {id}")))
}

/// The task a PATCH or DELETE by id may reach: as [`shown_note`].
fn shown_task(state: &WorkspaceState, id: Uuid) -> Result<&Arc<Task>, WriteError> {
    state
        .tasks
        .get_visible(&id)
        .ok_or_else(|| WriteError::NotFound(format!("no task with id {id}")))
}

fn create_note(
    state: &WorkspaceState,
    n: NewNote,
    stamp: Stamp,
    out: &mut Vec<Record>,
) -> Result<Written, WriteError> {
    let (parent_id, job_id, company_id) = resolve_parent(state, n.parent_type, n.parent_id)?;
    let author_id = n
        .author_email
        .as_deref()
        .and_then(|e| member_by_email(state, e))
        .or_else(|| workspace_owner(state));
    let existing = n
        .reference
        .as_deref()
        .and_then(|r| state.note_by_reference(r))
        .and_then(|id| state.notes.get(&id).cloned());
    let (id, created_at, written) = match &existing {
        Some(old) => (
            old.id,
            old.created_at,
            Written::Updated(RecordKind::Note, old.id),
        ),
        None => {
            let id = Uuid::new_v4();
            (id, stamp, Written::Created(RecordKind::Note, id))
        }
    };
    out.push(Record::Note(Note {
        id,
        parent_type: n.parent_type,
        parent_id,
        title: n.title,
        body_html: Some(n.body_html),
        label: n.label,
        is_private: n.is_private,
        author_id,
        job_id: (n.parent_type == ParentType::Candidate)
            .then_some(job_id)
            .flatten(),
        company_id,
        reference: n.reference,
        created_at,
        updated_at: stamp,
    }));
    Ok(written)
}

fn update_note(
    state: &WorkspaceState,
    id: Uuid,
    p: NotePatch,
    stamp: Stamp,
    out: &mut Vec<Record>,
) -> Result<Written, WriteError> {
    let mut note = (**shown_note(state, id)?).clone();
    if let Some(b) = p.body_html {
        note.body_html = Some(b);
    }
    apply(&mut note.title, p.title);
    apply(&mut note.label, p.label);
    if let Some(v) = p.is_private {
        note.is_private = v;
    }
    note.updated_at = stamp;
    out.push(Record::Note(note));
    Ok(Written::Updated(RecordKind::Note, id))
}

/// The assignee named by `owner_email`: an accepted member, or a 400 naming the field.
fn task_owner(state: &WorkspaceState, email: &str) -> Result<Uuid, WriteError> {
    member_by_email(state, email).ok_or_else(|| {
        invalid(
            "owner_email",
            format!("{email:?} is not the work e-mail of an accepted member of this workspace"),
        )
    })
}

fn create_task(
    state: &WorkspaceState,
    t: NewTask,
    stamp: Stamp,
    out: &mut Vec<Record>,
) -> Result<Written, WriteError> {
    let (parent_id, _, _) = resolve_parent(state, t.parent_type, t.parent_id)?;
    let owner_id = match t.owner_email.as_deref() {
        Some(e) => Some(task_owner(state, e)?),
        None => workspace_owner(state),
    };
    let existing = t
        .reference
        .as_deref()
        .and_then(|r| state.task_by_reference(r))
        .and_then(|id| state.tasks.get(&id).cloned());
    let (id, created_at, written, status, completed_at, placement) = match &existing {
        Some(old) => (
            old.id,
            old.created_at,
            Written::Updated(RecordKind::Task, old.id),
            old.status,
            old.completed_at,
            old.placement_row_id,
        ),
        None => {
            let id = Uuid::new_v4();
            (
                id,
                stamp,
                Written::Created(RecordKind::Task, id),
                TaskStatus::Open,
                None,
                None,
            )
        }
    };
    out.push(Record::Task(Task {
        id,
        parent_type: t.parent_type,
        parent_id,
        title: Some(t.title),
        body_html: t.body_html,
        status,
        due_date: t.due_date,
        owner_id,
        completed_at,
        is_private: t.is_private,
        placement_row_id: placement,
        reference: t.reference,
        created_at,
        updated_at: stamp,
    }));
    Ok(written)
}

fn update_task(
    state: &WorkspaceState,
    id: Uuid,
    p: TaskPatch,
    stamp: Stamp,
    out: &mut Vec<Record>,
) -> Result<Written, WriteError> {
    let mut task = (**shown_task(state, id)?).clone();
    if let Some(t) = p.title {
        task.title = Some(t);
    }
    apply(&mut task.body_html, p.body_html);
    apply(&mut task.due_date, p.due_date);
    match p.owner_email {
        Some(Change::Set(e)) => task.owner_id = Some(task_owner(state, &e)?),
        Some(Change::Clear) => task.owner_id = None,
        None => {}
    }
    if let Some(v) = p.is_private {
        task.is_private = v;
    }
    match p.status {
        Some(ClientTaskStatus::Open) => {
            task.status = TaskStatus::Open;
            task.completed_at = None;
        }
        Some(ClientTaskStatus::Completed) => {
            if task.status != TaskStatus::Completed || task.completed_at.is_none() {
                task.completed_at = Some(stamp);
            }
            task.status = TaskStatus::Completed;
        }
        None => {}
    }
    task.updated_at = stamp;
    out.push(Record::Task(task));
    Ok(Written::Updated(RecordKind::Task, id))
}

fn set_salary_amount(
    salary: &mut Option<CandidateSalary>,
    change: Option<Change<Number>>,
    pick: fn(&mut CandidateSalary) -> &mut Option<Number>,
) {
    if let Some(c) = change {
        *pick(salary.get_or_insert_with(Default::default)) = c.into_option();
    }
}

fn set_salary_text(
    salary: &mut Option<CandidateSalary>,
    change: Option<Change<String>>,
    pick: fn(&mut CandidateSalary) -> &mut Option<String>,
) {
    if let Some(c) = change {
        *pick(salary.get_or_insert_with(Default::default)) = c.into_option();
    }
}

fn patch_candidate(
    state: &WorkspaceState,
    id: Uuid,
    p: CandidatePatch,
    stamp: Stamp,
    out: &mut Vec<Record>,
) -> Result<Written, WriteError> {
    let row = state
        .candidates
        .get_visible(&id)
        .ok_or_else(|| WriteError::NotFound(format!("no candidate with id {id}")))?;
    if let Some(Change::Set(u)) = p.owning_recruiter_id {
        check_user(state, "owning_recruiter_id", u)?;
    }
    // Personal attributes are carried on every row of the person, so they change on all
    // of them together; the owner belongs to the row.
    let rows: Vec<Uuid> = if p.touches_person() {
        state
            .person_rows_ref(row.raw.person_id)
            .iter()
            .map(|r| r.raw.id)
            .collect()
    } else {
        vec![id]
    };
    for rid in rows {
        let mut c = state
            .candidates
            .get(&rid)
            .expect("a row of the person")
            .raw
            .clone();
        apply(&mut c.name, p.name.clone());
        apply(&mut c.email, p.email.clone());
        apply(&mut c.phone, p.phone.clone());
        apply(&mut c.job_title, p.job_title.clone());
        apply(&mut c.company, p.current_company.clone());
        set_salary_amount(&mut c.salary, p.current_salary_amount.clone(), |s| {
            &mut s.current_amount
        });
        set_salary_text(&mut c.salary, p.current_salary_currency.clone(), |s| {
            &mut s.current_currency
        });
        set_salary_amount(&mut c.salary, p.expected_salary_amount.clone(), |s| {
            &mut s.expected_amount
        });
        set_salary_text(&mut c.salary, p.expected_salary_currency.clone(), |s| {
            &mut s.expected_currency
        });
        if rid == id {
            apply(&mut c.owner_id, p.owning_recruiter_id.clone());
        }
        c.updated_at = stamp;
        out.push(Record::Candidate(Box::new(c)));
    }
    Ok(Written::Updated(RecordKind::Candidate, id))
}

fn patch_contact(
    state: &WorkspaceState,
    id: Uuid,
    p: ContactPatch,
    stamp: Stamp,
    out: &mut Vec<Record>,
) -> Result<Written, WriteError> {
    let mut c = state
        .contacts
        .get_visible(&id)
        .ok_or_else(|| WriteError::NotFound(format!("no contact with id {id}")))?
        .raw
        .clone();
    if let Some(company) = p.company_id {
        check_company(state, "company_id", company)?;
        c.company_id = company;
    }
    if let Some(Change::Set(u)) = p.owning_recruiter_id {
        check_user(state, "owning_recruiter_id", u)?;
    }
    apply(&mut c.name, p.name);
    apply(&mut c.email, p.email);
    apply(&mut c.phone, p.phone);
    apply(&mut c.owner_id, p.owning_recruiter_id);
    c.updated_at = stamp;
    out.push(Record::Contact(c));
    Ok(Written::Updated(RecordKind::Contact, id))
}

fn patch_company(
    state: &WorkspaceState,
    id: Uuid,
    p: CompanyPatch,
    stamp: Stamp,
    out: &mut Vec<Record>,
) -> Result<Written, WriteError> {
    let mut c = (**state
        .companies
        .get_visible(&id)
        .ok_or_else(|| WriteError::NotFound(format!("no company with id {id}")))?)
    .clone();
    if let Some(Change::Set(u)) = p.owning_recruiter_id {
        check_user(state, "owning_recruiter_id", u)?;
    }
    apply(&mut c.name, p.name);
    apply(&mut c.phone, p.phone);
    apply(&mut c.owner_id, p.owning_recruiter_id);
    c.updated_at = stamp;
    out.push(Record::Company(c));
    Ok(Written::Updated(RecordKind::Company, id))
}

fn patch_job(
    state: &WorkspaceState,
    id: Uuid,
    p: JobPatch,
    stamp: Stamp,
    out: &mut Vec<Record>,
) -> Result<Written, WriteError> {
    let mut j = (**state
        .jobs
        .get_visible(&id)
        .ok_or_else(|| WriteError::NotFound(format!("no job with id {id}")))?)
    .clone();
    if let Some(Change::Set(c)) = p.company_id {
        check_company(state, "company_id", c)?;
    }
    if let Some(Change::Set(u)) = p.owning_recruiter_id {
        check_user(state, "owning_recruiter_id", u)?;
    }
    apply(&mut j.title, p.title);
    apply(&mut j.company_id, p.company_id);
    // `owning_recruiter_id` of a job is its assigned recruiter (falling back to its
    // creator when cleared).
    apply(&mut j.assigned_recruiter_id, p.owning_recruiter_id);
    if let Some(c) = p.salary_amount {
        j.salary.get_or_insert_with(Default::default).amount = c.into_option();
    }
    if let Some(c) = p.salary_currency {
        j.salary.get_or_insert_with(Default::default).currency = c.into_option();
    }
    // `live: false` archives (and so unpublishes); `live: true` restores, published again
    // exactly when the job is on the careers page.
    if let Some(live) = p.live {
        j.is_archived = !live;
    }
    j.updated_at = stamp;
    out.push(Record::Job(j));
    Ok(Written::Updated(RecordKind::Job, id))
}

/// ISO 4217 alphabetic codes in current use (funds and precious metals excluded).
pub const CURRENCIES: &[&str] = &[
    "AED", "AFN", "ALL", "AMD", "ANG", "AOA", "ARS", "AUD", "AWG", "AZN", "BAM", "BBD", "BDT",
    "BGN", "BHD", "BIF", "BMD", "BND", "BOB", "BRL", "BSD", "BTN", "BWP", "BYN", "BZD", "CAD",
    "CDF", "CHF", "CLP", "CNY", "COP", "CRC", "CUP", "CVE", "CZK", "DJF", "DKK", "DOP", "DZD",
    "EGP", "ERN", "ETB", "EUR", "FJD", "FKP", "GBP", "GEL", "GHS", "GIP", "GMD", "GNF", "GTQ",
    "GYD", "HKD", "HNL", "HTG", "HUF", "IDR", "ILS", "INR", "IQD", "IRR", "ISK", "JMD", "JOD",
    "JPY", "KES", "KGS", "KHR", "KMF", "KPW", "KRW", "KWD", "KYD", "KZT", "LAK", "LBP", "LKR",
    "LRD", "LSL", "LYD", "MAD", "MDL", "MGA", "MKD", "MMK", "MNT", "MOP", "MRU", "MUR", "MVR",
    "MWK", "MXN", "MYR", "MZN", "NAD", "NGN", "NIO", "NOK", "NPR", "NZD", "OMR", "PAB", "PEN",
    "PGK", "PHP", "PKR", "PLN", "PYG", "QAR", "RON", "RSD", "RUB", "RWF", "SAR", "SBD", "SCR",
    "SDG", "SEK", "SGD", "SHP", "SLE", "SOS", "SRD", "SSP", "STN", "SVC", "SYP", "SZL", "THB",
    "TJS", "TMT", "TND", "TOP", "TRY", "TTD", "TWD", "TZS", "UAH", "UGX", "USD", "UYU", "UZS",
    "VED", "VES", "VND", "VUV", "WST", "XAF", "XCD", "XCG", "XOF", "XPF", "YER", "ZAR", "ZMW",
    "ZWG",
];

/// Whether `code` is an ISO 4217 currency code in current use.
pub fn is_currency(code: &str) -> bool {
    CURRENCIES.binary_search(&code).is_ok()
}

/// A plausible e-mail address: one `@` with something on both sides, a dot in the domain,
/// no spaces, at most 254 characters (the OpenAPI document's `maxLength`, which counts
/// characters). (Deliverability is not ours to judge.)
pub fn is_email(s: &str) -> bool {
    let Some((local, domain)) = s.split_once('@') else {
        return false;
    };
    s.chars().count() <= 254
        && !local.is_empty()
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !domain.contains('@')
        && !s.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// The shared handle a write's answer carries: the state published by the commit that
/// included it, to render the written record from.
pub type Published = Arc<WorkspaceState>;

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Stamp {
        Stamp::parse_rfc3339(s).unwrap()
    }

    fn private_note(id: u128) -> Note {
        Note {
            id: Uuid::from_u128(id),
            parent_type: ParentType::Company,
            parent_id: Uuid::from_u128(10),
            title: Some("t".into()),
            body_html: Some("b".into()),
            label: None,
            is_private: true,
            author_id: None,
            job_id: None,
            company_id: None,
            reference: None,
            created_at: at("2026-09-01T00:00:00Z"),
            updated_at: at("2026-09-01T00:00:00Z"),
        }
    }

    fn private_task(id: u128) -> Task {
        Task {
            id: Uuid::from_u128(id),
            parent_type: ParentType::Company,
            parent_id: Uuid::from_u128(10),
            title: Some("t".into()),
            body_html: None,
            status: TaskStatus::Open,
            due_date: None,
            owner_id: None,
            completed_at: None,
            is_private: true,
            placement_row_id: None,
            reference: None,
            created_at: at("2026-09-01T00:00:00Z"),
            updated_at: at("2026-09-01T00:00:00Z"),
        }
    }

    #[test]
    fn private_notes_and_tasks_are_not_found_by_id() {
        let mut state = WorkspaceState::new(Workspace {
            id: Uuid::from_u128(1),
            name: None,
            default_region: None,
        });
        state.put(Record::Note(private_note(2)));
        state.put(Record::Task(private_task(3)));
        let (n, t, missing) = (Uuid::from_u128(2), Uuid::from_u128(3), Uuid::from_u128(9));
        let held = |s: &WorkspaceState| (s.notes.get(&n).cloned(), s.tasks.get(&t).cloned());
        let before = held(&state);
        let publish_note = || NotePatch {
            is_private: Some(false),
            ..Default::default()
        };
        let edit_note = || NotePatch {
            body_html: Some("changed".into()),
            ..Default::default()
        };
        let publish_task = || TaskPatch {
            is_private: Some(false),
            ..Default::default()
        };
        // Checked before any field: an owner that would be refused does not tell the
        // private task from a missing one either.
        let edit_task = || TaskPatch {
            status: Some(ClientTaskStatus::Completed),
            owner_email: Some(Change::Set("nobody@mail.example".into())),
            ..Default::default()
        };
        let ops: Vec<(WriteOp, WriteOp)> = vec![
            (
                WriteOp::UpdateNote(n, publish_note()),
                WriteOp::UpdateNote(missing, publish_note()),
            ),
            (
                WriteOp::UpdateNote(n, edit_note()),
                WriteOp::UpdateNote(missing, edit_note()),
            ),
            (WriteOp::DeleteNote(n), WriteOp::DeleteNote(missing)),
            (
                WriteOp::UpdateTask(t, publish_task()),
                WriteOp::UpdateTask(missing, publish_task()),
            ),
            (
                WriteOp::UpdateTask(t, edit_task()),
                WriteOp::UpdateTask(missing, edit_task()),
            ),
            (WriteOp::DeleteTask(t), WriteOp::DeleteTask(missing)),
        ];
        for (op, unknown) in ops {
            let what = format!("{op:?}");
            let mut changes = ChangeSet::default();
            let err = plan_write(&mut state, op, &mut changes).unwrap_err();
            let unknown_err = plan_write(&mut state, unknown, &mut changes).unwrap_err();
            let (WriteError::NotFound(msg), WriteError::NotFound(unknown_msg)) = (err, unknown_err)
            else {
                panic!("{what}: not NotFound");
            };
            assert_eq!(
                msg.replace(&n.to_string(), &missing.to_string())
                    .replace(&t.to_string(), &missing.to_string()),
                unknown_msg,
                "{what}"
            );
            assert!(changes.is_empty(), "{what}");
            assert_eq!(held(&state), before, "{what}");
            assert_eq!(state.count(Entity::Notes) + state.count(Entity::Tasks), 0);
        }
    }

    #[test]
    fn currency_list_is_sorted_and_checked() {
        assert!(CURRENCIES.windows(2).all(|w| w[0] < w[1]));
        assert!(is_currency("GBP") && is_currency("EUR") && is_currency("JPY"));
        assert!(!is_currency("gbp") && !is_currency("XXX") && !is_currency("GB"));
    }

    #[test]
    fn emails_are_plausible() {
        assert!(is_email("ann+cv@mail.example"));
        for bad in [
            "",
            "ann",
            "ann@",
            "@mail.example",
            "a b@mail.example",
            "a@b",
            "a@@b.c",
        ] {
            assert!(!is_email(bad), "{bad}");
        }
        // The length is counted in characters, as the OpenAPI document's maxLength counts.
        let long = format!("{}@mail.example", "é".repeat(254 - 13));
        assert_eq!(long.chars().count(), 254);
        assert!(is_email(&long));
        assert!(!is_email(&format!("é{long}")));
    }
}
