//! API writes: notes, tasks and edits of allow-listed record fields.
//!
//! A [`WriteOp`] arrives syntactically valid (the HTTP layer checked JSON types, unknown
//! fields and formats); [`plan_write`] checks it against the workspace (parents, users,
//! companies, references), stamps it, and applies it to a working copy of the state while
//! recording the records to commit. [`plan_batch`] runs it for every write of a batch
//! against one working copy and completes the batch's change set; the workspace actor
//! commits that and only then publishes.

use crate::model::NoteRec;
use crate::model::*;
use crate::state::WorkspaceState;
use crate::store::ChangeSet;
use crate::time::{Date, Stamp};
use serde_json::Number;
use std::sync::Arc;
use uuid::Uuid;

mod batch;
mod notes;
mod records;
mod tasks;

pub use batch::{plan_batch, PlannedBatch};

use notes::*;
use records::*;
use tasks::*;

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
    /// The key that sends it: `reference` is looked up among that key's own.
    pub reference_key: Option<String>,
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
    /// The key that sends it: `reference` is looked up among that key's own.
    pub reference_key: Option<String>,
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
                Some(row) => (row.person_id(), row.job_id()),
                None if state.is_person(parent_id) => (parent_id, None),
                None => return Err(missing()),
            };
            let rows = state.person_rows_ref(person);
            let primary = rows
                .iter()
                .find(|r| r.is_primary())
                .or(rows.first())
                .ok_or_else(missing)?;
            Ok((primary.id(), job, None))
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
mod tests;
