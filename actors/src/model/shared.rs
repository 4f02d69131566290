//! What several kinds share: the parents of notes, tasks and attachments, and the record
//! view with what it reads of the rest of its workspace ([`Surroundings`]).

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The kind of record a note, task or attachment is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ParentType {
    Candidate,
    Contact,
    Company,
    Job,
}

impl ParentType {
    pub fn as_str(self) -> &'static str {
        match self {
            ParentType::Candidate => "candidate",
            ParentType::Contact => "contact",
            ParentType::Company => "company",
            ParentType::Job => "job",
        }
    }

    /// The byte a packed record keeps it as.
    pub(crate) fn code(self) -> u8 {
        match self {
            ParentType::Candidate => 0,
            ParentType::Contact => 1,
            ParentType::Company => 2,
            ParentType::Job => 3,
        }
    }

    pub(crate) fn from_code(code: Option<u8>) -> ParentType {
        match code {
            Some(0) => ParentType::Candidate,
            Some(1) => ParentType::Contact,
            Some(2) => ParentType::Company,
            _ => ParentType::Job,
        }
    }
}

/// What a record's view reads of the rest of its workspace: the API shows some fields of
/// other records beside a record's own (a candidate row's stage, a job's company name).
/// The workspace state answers; a view asks only for what it shows, fresh each time.
pub trait Surroundings {
    /// A pipeline stage's `(name, stage_type)`.
    fn stage(&self, id: Uuid) -> Option<(Option<&str>, Option<&str>)>;
    fn user_is_active(&self, id: Uuid) -> bool;
    /// A job's assigned recruiter, `None` for no job or no recruiter.
    fn job_recruiter(&self, id: Uuid) -> Option<Uuid>;
    fn company_name(&self, id: Uuid) -> Option<&str>;
    /// A contact's company.
    fn contact_company(&self, id: Uuid) -> Option<Uuid>;
    /// A candidate row's `(created_at, updated_at)` as stored.
    fn candidate_row_times(&self, id: Uuid) -> Option<(crate::time::Stamp, crate::time::Stamp)>;
}

/// A view of one record in its workspace, written as the API shows it
/// ([`crate::rendered::Rendered`]).
pub struct View<'a, W: ?Sized, T: ?Sized> {
    pub ws: &'a W,
    pub rec: &'a T,
}

impl<'a, W: ?Sized, T: ?Sized> View<'a, W, T> {
    pub fn new(ws: &'a W, rec: &'a T) -> Self {
        View { ws, rec }
    }
}

/// `emails` as the serde copies of the views write it: `[email]` or `[]`.
#[cfg(any(test, feature = "oracle"))]
pub(crate) struct Emails<'a>(pub Option<&'a str>);

#[cfg(any(test, feature = "oracle"))]
impl serde::Serialize for Emails<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = s.serialize_seq(Some(self.0.is_some() as usize))?;
        if let Some(e) = self.0 {
            seq.serialize_element(e)?;
        }
        seq.end()
    }
}

/// One member of a record's JSON as the API shows it, declared beside the code that
/// writes it. The OpenAPI document's record schemas are built from these declarations,
/// and a test holds every written record to them: the same members, in the same order.
#[derive(Clone, Copy, Debug)]
pub struct ApiField {
    pub name: &'static str,
    pub shape: Shape,
    /// Whether every record has it (`false`: written only where the spec says, as a
    /// note's `job_id` on candidate notes only).
    pub always: bool,
    /// The description the OpenAPI document gives (none when empty).
    pub doc: &'static str,
}

/// A member every record has.
pub const fn field(name: &'static str, shape: Shape, doc: &'static str) -> ApiField {
    ApiField {
        name,
        shape,
        always: true,
        doc,
    }
}

/// A member only some records have.
pub const fn sometimes(name: &'static str, shape: Shape, doc: &'static str) -> ApiField {
    ApiField {
        name,
        shape,
        always: false,
        doc,
    }
}

/// The JSON a member holds.
#[derive(Clone, Copy, Debug)]
pub enum Shape {
    /// A string, never null (ids, derived statuses).
    Text,
    NullableText,
    /// An RFC 3339 timestamp, never null.
    Stamp,
    NullableStamp,
    /// A `YYYY-MM-DD` date or null.
    NullableDate,
    Bool,
    /// A boolean the spec allows to be null (this server always writes one).
    NullableBool,
    /// Always `false` (records that would say `true` are never shown).
    False,
    NullableNumber,
    /// A whole number, at least 0, or null.
    NullableCount,
    /// `[e-mail]` or `[]` (the spec allows null).
    Emails,
    /// Always null (a member the spec names and this server holds nothing for).
    Null,
    /// An attachment's `<kind>:<identifier>` id.
    AttachmentId,
    /// One of values that may grow within v1.
    Extensible {
        values: &'static [&'static str],
        nullable: bool,
    },
    /// An object of these members, or null.
    NullableObject(&'static [ApiField]),
}

/// `owning_recruiter_id` of candidate rows, derived (`candidate_owner`).
pub const OWNER_DERIVED: &str = "A `users.id`: the owner explicitly recorded on the record if that person is still an active member; \
else the recruiter assigned to the role if still active; else null. Never the importing account. In an account populated by bulk migration \
it is null on every candidate until owners are set or roles assigned. Null is legitimate (left null rather than guessed), not an error.";

/// `owning_recruiter_id` of contacts and companies, as stored.
pub const OWNER_STORED: &str = "A `users.id`: the stored owner as it stands. Null is legitimate (left null rather than guessed), not an error.";
