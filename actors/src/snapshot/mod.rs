//! `recruit-snapshot/1`: parsing, whole-file validation, and the plan of an import.
//!
//! A snapshot is parsed element by element (a million-person file is never held as one
//! JSON tree), validated as a whole against the workspace it targets, and turned into an
//! [`ImportPlan`]: the change set for the store, the blobs to write, and the next state.
//! Nothing is applied until the plan is complete, so a rejected file changes nothing;
//! [`ImportPlan::apply`] then writes it (blobs, store, key ring), for the live import and
//! the offline one alike.
//!
//! - [`parse`](parse_reader): the streaming parser, errors naming array, index, field;
//! - `validate`: one check per array against the workspace as it will be;
//! - [`plan`](plan_import): the change set, the blobs, the consequences, the next state;
//! - `apply`: blobs, store, key ring.

mod apply;
mod parse;
mod plan;
mod scan;
mod validate;

pub use apply::{released_objects, Applied, ApplyError, ImportReport};
pub use parse::{parse_reader, parse_slice};
pub use plan::{plan_import, BuildNext};

use crate::model::*;
use crate::model::{AttachmentRec, CandidateRec, NoteRec};
use crate::state::WorkspaceState;
use crate::store::ChangeSet;
use crate::time::Stamp;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use uuid::Uuid;

pub const FORMAT: &str = "recruit-snapshot/1";

/// One element of a snapshot array: a record to create or replace, or a removal.
#[derive(Clone, Debug, PartialEq)]
pub enum Entry<T> {
    Upsert(T),
    Delete(String),
}

impl<T> Entry<T> {
    /// The record of an upsert.
    pub fn upsert(&self) -> Option<&T> {
        match self {
            Entry::Upsert(r) => Some(r),
            Entry::Delete(_) => None,
        }
    }
}

/// An API key as a snapshot carries it (the secret in clear, hashed before storage).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiKeyIn {
    pub id: String,
    pub secret: String,
    #[serde(default)]
    pub scopes: Vec<String>,
    pub created_by: Uuid,
    #[serde(default)]
    pub revoked: bool,
    pub rate_limit_per_minute: Option<u32>,
}

/// An attachment as a snapshot's document writes it: with its bytes, base64-encoded,
/// when they exist. Parsed into an [`AttachmentIn`].
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AttachmentDoc {
    pub id: String,
    pub parent_type: ParentType,
    pub parent_id: Uuid,
    pub filename: Option<String>,
    pub content_type: Option<String>,
    pub size: Option<u64>,
    pub kind: AttachmentKind,
    pub storage_ref: Option<String>,
    pub content_base64: Option<String>,
    pub created_at: Stamp,
    pub updated_at: Stamp,
}

/// An attachment of a snapshot: its record, packed (its size the bytes' when none was
/// given, `has_content` set when bytes came), and its bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct AttachmentIn {
    pub rec: Arc<AttachmentRec>,
    pub content: Option<Vec<u8>>,
}

/// A parsed snapshot, not yet validated against a workspace.
///
/// The large arrays hold their records packed as they were parsed (candidate rows with
/// their numbers normalised), the form the workspace state keeps them in: an import
/// holds each record once, from the parse to the state it publishes.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub workspace: Option<Workspace>,
    pub users: Vec<Entry<User>>,
    pub api_keys: Vec<Entry<ApiKeyIn>>,
    pub pipeline_stages: Vec<Entry<PipelineStage>>,
    pub companies: Vec<Entry<Company>>,
    pub contacts: Vec<Entry<Contact>>,
    pub jobs: Vec<Entry<Job>>,
    pub candidates: Vec<Entry<Arc<CandidateRec>>>,
    pub notes: Vec<Entry<Arc<NoteRec>>>,
    pub tasks: Vec<Entry<Task>>,
    pub attachments: Vec<Entry<AttachmentIn>>,
    /// The region the candidate rows' numbers were normalised with: the workspace's
    /// default region when the workspace came before them in the document; `None` when
    /// they were not normalised (the plan normalises them then).
    pub numbers_region: Option<Option<crate::phone::Region>>,
}

impl Snapshot {
    /// The workspace this snapshot targets.
    pub fn workspace_id(&self) -> Option<Uuid> {
        self.workspace.as_ref().map(|w| w.id)
    }

    /// Records of every kind the snapshot carries (keys included, the workspace not).
    pub fn len(&self) -> usize {
        self.users.len()
            + self.api_keys.len()
            + self.pipeline_stages.len()
            + self.companies.len()
            + self.contacts.len()
            + self.jobs.len()
            + self.candidates.len()
            + self.notes.len()
            + self.tasks.len()
            + self.attachments.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Why a snapshot was rejected, naming where: array, index and field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotError {
    pub array: Option<String>,
    pub index: Option<usize>,
    pub field: Option<String>,
    pub message: String,
}

impl SnapshotError {
    pub(super) fn at(array: &str, index: usize, field: &str, message: impl Into<String>) -> Self {
        SnapshotError {
            array: Some(array.to_string()),
            index: Some(index),
            field: (!field.is_empty()).then(|| field.to_string()),
            message: message.into(),
        }
    }

    pub(super) fn top(field: &str, message: impl Into<String>) -> Self {
        SnapshotError {
            array: None,
            index: None,
            field: Some(field.to_string()),
            message: message.into(),
        }
    }

    /// Where, as `array[index].field`.
    pub fn location(&self) -> String {
        let mut s = String::new();
        if let Some(a) = &self.array {
            s.push_str(a);
        }
        if let Some(i) = self.index {
            s.push_str(&format!("[{i}]"));
        }
        if let Some(f) = &self.field {
            if !s.is_empty() {
                s.push('.');
            }
            s.push_str(f);
        }
        s
    }
}

impl fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let loc = self.location();
        if loc.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{loc}: {}", self.message)
        }
    }
}

impl std::error::Error for SnapshotError {}

/// Counts per array, as the admin import reports them.
pub type Counts = BTreeMap<&'static str, usize>;

/// A validated import, ready to commit.
pub struct ImportPlan {
    pub workspace: Workspace,
    /// The workspace row, the small kinds' records, the deletions and the keys.
    pub changes: ChangeSet,
    /// The large kinds' records, packed as the snapshot parsed them (shared with the next
    /// state); the store gets them unpacked, a part at a time.
    pub packed: PackedUpserts,
    /// Attachment bytes to put in the blob store before the commit.
    pub blobs: Vec<(String, Vec<u8>)>,
    /// The workspace state as it will be once the change set is committed (when asked
    /// for, and built with the plan).
    pub next: Option<WorkspaceState>,
    /// The workspace as it stands, when the next state is built while the change set is
    /// committed ([`BuildNext::WhileCommitting`]) rather than with the plan.
    pub next_base: Option<WorkspaceState>,
    pub upserted: Counts,
    pub deleted: Counts,
    /// How many raw records the workspace will hold once the change set is committed
    /// (`WorkspaceState::stored_records` of the next state).
    pub records_after: usize,
}

/// The candidate rows, notes and attachments an import writes, each list in id order
/// (the store's key order).
#[derive(Clone, Debug, Default)]
pub struct PackedUpserts {
    pub candidates: Vec<Arc<CandidateRec>>,
    pub notes: Vec<Arc<NoteRec>>,
    pub attachments: Vec<Arc<AttachmentRec>>,
}

impl PackedUpserts {
    /// The changes these records make, for the change log and tombstones (see
    /// `crate::entries::direct`, which gives those of unpacked records).
    pub fn changes(&self) -> impl Iterator<Item = crate::entries::Change> + '_ {
        use crate::entries::{row_changes, Change, LoggedId};
        use crate::model::Entity;
        let rows = self.candidates.iter().flat_map(|c| {
            row_changes(
                RecordKind::Candidate,
                Some(LoggedId::Uuid(c.id())),
                c.job_id().is_some(),
            )
        });
        let notes = self.notes.iter().map(|n| Change {
            entity: Entity::Notes,
            id: LoggedId::Uuid(n.id()),
        });
        let attachments = self.attachments.iter().map(|a| Change {
            entity: Entity::Attachments,
            id: LoggedId::parse(a.id()),
        });
        rows.chain(notes).chain(attachments)
    }

    pub fn len(&self) -> usize {
        self.candidates.len() + self.notes.len() + self.attachments.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The records unpacked, `from` the `from`th on, at most `n` of them (candidates,
    /// then notes, then attachments), unpacked on every core. Each list is sliced, not
    /// walked: a part costs what it unpacks, whatever parts come before it.
    pub fn records(&self, from: usize, n: usize) -> Vec<Record> {
        use rayon::prelude::*;
        /// The part of a list of `len` starting at overall position `at` that falls in
        /// `from..from + n`.
        fn window(at: usize, len: usize, from: usize, n: usize) -> std::ops::Range<usize> {
            let start = from.saturating_sub(at).min(len);
            let end = (from + n).saturating_sub(at).min(len);
            start..end.max(start)
        }
        let (c, nt) = (self.candidates.len(), self.notes.len());
        let mut out = Vec::with_capacity(n.min(self.len().saturating_sub(from)));
        out.par_extend(
            self.candidates[window(0, c, from, n)]
                .par_iter()
                .map(|c| Record::Candidate(Box::new(c.raw()))),
        );
        out.par_extend(
            self.notes[window(c, nt, from, n)]
                .par_iter()
                .map(|n| Record::Note(n.raw())),
        );
        out.par_extend(
            self.attachments[window(c + nt, self.attachments.len(), from, n)]
                .par_iter()
                .map(|a| Record::Attachment(a.raw())),
        );
        out
    }

    /// The records of [`records`](Self::records) as a change set for the store, each
    /// with its body rendered ahead (`ChangeSet::rendered`), on every core.
    pub fn part(&self, from: usize, n: usize) -> ChangeSet {
        use rayon::prelude::*;
        let upserts = self.records(from, n);
        let rendered = upserts.par_iter().map(Record::to_json).collect();
        ChangeSet {
            upserts,
            rendered,
            ..ChangeSet::default()
        }
    }
}

impl ImportPlan {
    /// The whole change set, the packed records unpacked into it: for small imports
    /// committed at once (tests, benches, examples).
    pub fn change_set(&self) -> ChangeSet {
        let mut all = self.changes.clone();
        all.upserts
            .extend(self.packed.records(0, self.packed.len()));
        all
    }
}

/// No keys anywhere (a fresh store).
pub struct NoKeys;

impl crate::keys::KeyDirectory for NoKeys {
    fn key(&self, _: &str) -> Option<ApiKey> {
        None
    }
    fn key_by_hash(&self, _: &[u8; 32]) -> Option<String> {
        None
    }
}

#[cfg(test)]
mod tests;
