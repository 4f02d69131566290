//! The domain's records. Each of the nine kinds is declared once, in a file of its own:
//! its raw fields (the snapshot's and the store's form), its packed layout in memory
//! (`Rec<T>`: `pack`, `raw`, typed accessors), the fields a client may write, and its
//! JSON as the API shows it: the members (`API_FIELDS`, from which the OpenAPI document's
//! schema is built) and the view's writer (`Rendered`). Each file's `mod oracle` is the
//! same view written the plain way, with serde: the reference the writer is held equal
//! to by the tests of `rendered`, compiled for tests only. ARCHITECTURE.md says how to
//! add a field.
//!
//! This module holds what spans the kinds: the API's entities, the store's record kinds,
//! a record of any kind ([`Record`]), the workspace, and API keys and their scopes.
//! Raw records are never shown to clients as they are; a view derives the API's record
//! from one together with the rest of the workspace ([`Surroundings`]).

pub mod attachment;
pub mod candidate;
pub mod company;
pub mod contact;
pub mod job;
pub mod note;
mod shared;
pub mod stage;
pub mod task;
#[cfg(test)]
mod tests;
pub mod user;

pub use attachment::{
    split_attachment_id, Attachment, AttachmentKind, AttachmentRec, ATTACHMENT_PREFIXES,
};
pub use candidate::{
    candidate_owner, stage, ApplicationView, Candidate, CandidateRec, CandidateSalary, Consent,
    Outcome,
};
pub use company::Company;
pub use contact::{Contact, ContactRec};
pub use job::{Job, JobSalary};
pub use note::{Note, NoteRec};
pub use shared::{ApiField, ParentType, Shape, Surroundings, View, OWNER_DERIVED, OWNER_STORED};
pub use stage::PipelineStage;
pub use task::{Task, TaskStatus};
pub use user::{User, UserStatus};

use crate::time::Stamp;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The nine entities of the API, in the spec's order.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum Entity {
    Candidates,
    Applications,
    Contacts,
    Companies,
    Jobs,
    Notes,
    Tasks,
    Attachments,
    Users,
}

impl Entity {
    pub const ALL: [Entity; 9] = [
        Entity::Candidates,
        Entity::Applications,
        Entity::Contacts,
        Entity::Companies,
        Entity::Jobs,
        Entity::Notes,
        Entity::Tasks,
        Entity::Attachments,
        Entity::Users,
    ];

    pub fn parse(s: &str) -> Option<Entity> {
        Some(match s {
            "candidates" => Entity::Candidates,
            "applications" => Entity::Applications,
            "contacts" => Entity::Contacts,
            "companies" => Entity::Companies,
            "jobs" => Entity::Jobs,
            "notes" => Entity::Notes,
            "tasks" => Entity::Tasks,
            "attachments" => Entity::Attachments,
            "users" => Entity::Users,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Entity::Candidates => "candidates",
            Entity::Applications => "applications",
            Entity::Contacts => "contacts",
            Entity::Companies => "companies",
            Entity::Jobs => "jobs",
            Entity::Notes => "notes",
            Entity::Tasks => "tasks",
            Entity::Attachments => "attachments",
            Entity::Users => "users",
        }
    }

    /// A stable small number, used inside cursors.
    pub fn tag(self) -> u8 {
        self as u8
    }
}

/// What the store keeps: one kind per snapshot array (api keys are kept apart).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum RecordKind {
    User,
    Stage,
    Company,
    Contact,
    Job,
    Candidate,
    Note,
    Task,
    Attachment,
}

impl RecordKind {
    pub const ALL: [RecordKind; 9] = [
        RecordKind::User,
        RecordKind::Stage,
        RecordKind::Company,
        RecordKind::Contact,
        RecordKind::Job,
        RecordKind::Candidate,
        RecordKind::Note,
        RecordKind::Task,
        RecordKind::Attachment,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RecordKind::User => "user",
            RecordKind::Stage => "pipeline_stage",
            RecordKind::Company => "company",
            RecordKind::Contact => "contact",
            RecordKind::Job => "job",
            RecordKind::Candidate => "candidate",
            RecordKind::Note => "note",
            RecordKind::Task => "task",
            RecordKind::Attachment => "attachment",
        }
    }

    /// The entity whose records are this kind's raw records as the API lists them;
    /// `None` for pipeline stages, which the API shows only inside other records.
    pub fn entity(self) -> Option<Entity> {
        Some(match self {
            RecordKind::User => Entity::Users,
            RecordKind::Company => Entity::Companies,
            RecordKind::Contact => Entity::Contacts,
            RecordKind::Job => Entity::Jobs,
            RecordKind::Candidate => Entity::Candidates,
            RecordKind::Note => Entity::Notes,
            RecordKind::Task => Entity::Tasks,
            RecordKind::Attachment => Entity::Attachments,
            RecordKind::Stage => return None,
        })
    }

    pub fn parse(s: &str) -> Option<RecordKind> {
        RecordKind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// The snapshot array holding this kind.
    pub fn array(self) -> &'static str {
        match self {
            RecordKind::User => "users",
            RecordKind::Stage => "pipeline_stages",
            RecordKind::Company => "companies",
            RecordKind::Contact => "contacts",
            RecordKind::Job => "jobs",
            RecordKind::Candidate => "candidates",
            RecordKind::Note => "notes",
            RecordKind::Task => "tasks",
            RecordKind::Attachment => "attachments",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workspace {
    pub id: Uuid,
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_region: Option<String>,
}

/// Scopes a key may carry; `read` is implied on every key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    Read,
    NotesWrite,
    TasksWrite,
    RecordsWrite,
    /// Manages the workspace's webhook endpoints.
    WebhooksWrite,
}

impl Scope {
    pub fn parse(s: &str) -> Option<Scope> {
        Some(match s {
            "read" => Scope::Read,
            "notes:write" => Scope::NotesWrite,
            "tasks:write" => Scope::TasksWrite,
            "records:write" => Scope::RecordsWrite,
            "webhooks:write" => Scope::WebhooksWrite,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::NotesWrite => "notes:write",
            Scope::TasksWrite => "tasks:write",
            Scope::RecordsWrite => "records:write",
            Scope::WebhooksWrite => "webhooks:write",
        }
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// A set of scopes; always contains `read`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scopes(u8);

impl Scopes {
    pub fn read_only() -> Self {
        Scopes(Scope::Read.bit())
    }

    pub fn with(self, s: Scope) -> Self {
        Scopes(self.0 | s.bit())
    }

    pub fn contains(self, s: Scope) -> bool {
        self.0 & s.bit() != 0
    }

    pub fn iter(self) -> impl Iterator<Item = Scope> {
        [
            Scope::Read,
            Scope::NotesWrite,
            Scope::TasksWrite,
            Scope::RecordsWrite,
            Scope::WebhooksWrite,
        ]
        .into_iter()
        .filter(move |s| self.contains(*s))
    }

    /// Comma-separated, as kept in the store.
    pub fn to_csv(self) -> String {
        self.iter().map(Scope::as_str).collect::<Vec<_>>().join(",")
    }

    /// Parses a comma-separated list; `read` is added. Unknown scope names are an error.
    pub fn from_csv(s: &str) -> Result<Self, String> {
        let mut out = Scopes::read_only();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            out = out.with(Scope::parse(part).ok_or_else(|| format!("unknown scope {part:?}"))?);
        }
        Ok(out)
    }
}

/// An API key as kept: the secret only as its SHA-256 hash.
#[derive(Clone, Debug, PartialEq)]
pub struct ApiKey {
    pub id: String,
    pub workspace_id: Uuid,
    pub secret_hash: [u8; 32],
    pub scopes: Scopes,
    pub created_by: Uuid,
    pub revoked: bool,
    pub rate_limit_per_minute: Option<u32>,
    /// When the store first recorded the key (its own clock, set on insert and never
    /// changed); `None` until the key has been read back from the store.
    pub created_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// Hash under which a key secret is kept and looked up. Key secrets are long random
/// strings, so a plain SHA-256 is the right tool (no salt or stretching needed, and the
/// lookup stays a single hash-map probe).
pub fn hash_secret(secret: &str) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    Sha256::digest(secret.as_bytes()).into()
}

/// Any stored record, tagged by kind. Candidate rows, the largest and most numerous
/// records, are boxed so that a bulk import's change set stays compact.
#[derive(Clone, Debug, PartialEq)]
pub enum Record {
    User(User),
    Stage(PipelineStage),
    Company(Company),
    Contact(Contact),
    Job(Job),
    Candidate(Box<Candidate>),
    Note(Note),
    Task(Task),
    Attachment(Attachment),
}

impl Record {
    pub fn kind(&self) -> RecordKind {
        match self {
            Record::User(_) => RecordKind::User,
            Record::Stage(_) => RecordKind::Stage,
            Record::Company(_) => RecordKind::Company,
            Record::Contact(_) => RecordKind::Contact,
            Record::Job(_) => RecordKind::Job,
            Record::Candidate(_) => RecordKind::Candidate,
            Record::Note(_) => RecordKind::Note,
            Record::Task(_) => RecordKind::Task,
            Record::Attachment(_) => RecordKind::Attachment,
        }
    }

    /// The record's own `updated_at` (pipeline stages carry none).
    pub fn updated_at(&self) -> Option<Stamp> {
        Some(match self {
            Record::User(r) => r.updated_at,
            Record::Stage(_) => return None,
            Record::Company(r) => r.updated_at,
            Record::Contact(r) => r.updated_at,
            Record::Job(r) => r.updated_at,
            Record::Candidate(r) => r.updated_at,
            Record::Note(r) => r.updated_at,
            Record::Task(r) => r.updated_at,
            Record::Attachment(r) => r.updated_at,
        })
    }

    /// The record's id when it is a UUID (every kind but attachments).
    pub fn uuid(&self) -> Option<Uuid> {
        Some(match self {
            Record::User(r) => r.id,
            Record::Stage(r) => r.id,
            Record::Company(r) => r.id,
            Record::Contact(r) => r.id,
            Record::Job(r) => r.id,
            Record::Candidate(r) => r.id,
            Record::Note(r) => r.id,
            Record::Task(r) => r.id,
            Record::Attachment(_) => return None,
        })
    }

    /// The record's id as the store keys it.
    pub fn id_string(&self) -> String {
        match self {
            Record::User(r) => r.id.to_string(),
            Record::Stage(r) => r.id.to_string(),
            Record::Company(r) => r.id.to_string(),
            Record::Contact(r) => r.id.to_string(),
            Record::Job(r) => r.id.to_string(),
            Record::Candidate(r) => r.id.to_string(),
            Record::Note(r) => r.id.to_string(),
            Record::Task(r) => r.id.to_string(),
            Record::Attachment(r) => r.id.clone(),
        }
    }

    /// The record as the store keeps it (JSON of the raw fields).
    pub fn to_json(&self) -> String {
        let r = match self {
            Record::User(r) => serde_json::to_string(r),
            Record::Stage(r) => serde_json::to_string(r),
            Record::Company(r) => serde_json::to_string(r),
            Record::Contact(r) => serde_json::to_string(r),
            Record::Job(r) => serde_json::to_string(r),
            Record::Candidate(r) => serde_json::to_string(r),
            Record::Note(r) => serde_json::to_string(r),
            Record::Task(r) => serde_json::to_string(r),
            Record::Attachment(r) => serde_json::to_string(r),
        };
        r.expect("raw records always serialise")
    }

    /// Reads a record back from its stored JSON.
    pub fn from_json(kind: RecordKind, body: &str) -> Result<Record, serde_json::Error> {
        Ok(match kind {
            RecordKind::User => Record::User(serde_json::from_str(body)?),
            RecordKind::Stage => Record::Stage(serde_json::from_str(body)?),
            RecordKind::Company => Record::Company(serde_json::from_str(body)?),
            RecordKind::Contact => Record::Contact(serde_json::from_str(body)?),
            RecordKind::Job => Record::Job(serde_json::from_str(body)?),
            RecordKind::Candidate => Record::Candidate(Box::new(serde_json::from_str(body)?)),
            RecordKind::Note => Record::Note(serde_json::from_str(body)?),
            RecordKind::Task => Record::Task(serde_json::from_str(body)?),
            RecordKind::Attachment => Record::Attachment(serde_json::from_str(body)?),
        })
    }
}
