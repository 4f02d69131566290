//! The API's records, derived from raw records and the rest of the workspace.
//!
//! Each view borrows the raw record and the state it was read from and serialises
//! straight to JSON: no intermediate copies on the list path. Derivation rules follow the
//! API reference and `docs/snapshot-format.md` ("What the API shows besides them").

use crate::model::*;
use crate::packed::kinds::{AttachmentRec, CandidateRec, ContactRec, NoteRec};
use crate::rendered::{prefetch, Obj, Rendered};
use crate::state::{reported_updated_at, WorkspaceState};
use crate::time::{Date, Stamp};
use serde::ser::{SerializeSeq, Serializer};
use serde::Serialize;
use serde_json::Number;
use uuid::Uuid;

/// `emails`: `[email]` or `[]`.
struct Emails<'a>(Option<&'a str>);

impl Serialize for Emails<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.is_some() as usize))?;
        if let Some(e) = self.0 {
            seq.serialize_element(e)?;
        }
        seq.end()
    }
}

/// The derived `status` of a candidate row (`outcome ?? stage_type ?? "active"`), given
/// the row's stage, which its view has already looked up.
fn status_with_stage<'a>(c: &CandidateRec, stage: Option<&'a PipelineStage>) -> &'a str {
    match c.outcome() {
        Some(Outcome::Placed) => "placed",
        Some(Outcome::Rejected) => "rejected",
        None => stage
            .and_then(|s| s.stage_type.as_deref())
            .unwrap_or("active"),
    }
}

/// The pipeline stage a candidate row is at, if any.
pub fn stage<'a>(ws: &'a WorkspaceState, c: &CandidateRec) -> Option<&'a PipelineStage> {
    c.stage_id().and_then(|id| ws.stages.get(&id)).map(|s| &**s)
}

/// `owning_recruiter_id` of a candidate row: the recorded owner if still an active
/// member; else, on a job row, the job's assigned recruiter if active; else null.
pub fn candidate_owner(ws: &WorkspaceState, c: &CandidateRec) -> Option<Uuid> {
    if let Some(o) = c.owner_id().filter(|o| ws.user_is_active(*o)) {
        return Some(o);
    }
    c.job_id()
        .and_then(|j| ws.jobs.get(&j))
        .and_then(|j| j.assigned_recruiter_id)
        .filter(|r| ws.user_is_active(*r))
}

#[derive(Serialize)]
struct SalaryOut<'a> {
    current_amount: Option<Number>,
    current_currency: Option<&'a str>,
    current_text: Option<&'a str>,
    expected_amount: Option<Number>,
    expected_currency: Option<&'a str>,
    expected_text: Option<&'a str>,
}

#[derive(Serialize)]
struct ConsentOut<'a> {
    status: Option<&'a str>,
    given_at: Option<Stamp>,
    requested_at: Option<Stamp>,
    expires_at: Option<Stamp>,
}

#[derive(Serialize)]
struct CandidateOut<'a> {
    id: Uuid,
    person_id: Uuid,
    is_primary_record: bool,
    name: Option<&'a str>,
    emails: Emails<'a>,
    phone: Option<&'a str>,
    phone_as_entered: Option<&'a str>,
    mobile: Option<&'a str>,
    job_title: Option<&'a str>,
    company: Option<&'a str>,
    location: Option<&'a str>,
    linkedin_url: Option<&'a str>,
    stage: Option<&'a str>,
    stage_type: Option<&'a str>,
    status: &'a str,
    owning_recruiter_id: Option<Uuid>,
    job_id: Option<Uuid>,
    salary: SalaryOut<'a>,
    consent: ConsentOut<'a>,
    created_at: Stamp,
    updated_at: Stamp,
}

/// A view of one record in its workspace, serialised as the API shows it.
pub struct View<'a, T: ?Sized> {
    pub ws: &'a WorkspaceState,
    pub rec: &'a T,
}

impl<'a, T: ?Sized> View<'a, T> {
    pub fn new(ws: &'a WorkspaceState, rec: &'a T) -> Self {
        View { ws, rec }
    }
}

impl Serialize for View<'_, CandidateRec> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (ws, c) = (self.ws, self.rec);
        let st = stage(ws, c);
        CandidateOut {
            id: c.id(),
            person_id: c.person_id(),
            is_primary_record: c.is_primary(),
            name: c.name(),
            emails: Emails(c.email().filter(|e| !e.is_empty())),
            phone: c.phone(),
            phone_as_entered: c.phone_as_entered(),
            mobile: c.mobile(),
            job_title: c.job_title(),
            company: c.company(),
            location: c.location(),
            linkedin_url: c.linkedin_url(),
            stage: st.and_then(|s| s.name.as_deref()),
            stage_type: st.and_then(|s| s.stage_type.as_deref()),
            status: status_with_stage(c, st),
            owning_recruiter_id: candidate_owner(ws, c),
            job_id: c.job_id(),
            salary: SalaryOut {
                current_amount: c.current_amount().map(number),
                current_currency: c.current_currency(),
                current_text: c.current_text(),
                expected_amount: c.expected_amount().map(number),
                expected_currency: c.expected_currency(),
                expected_text: c.expected_text(),
            },
            consent: ConsentOut {
                status: c.consent_status(),
                given_at: c.consent_given_at(),
                requested_at: c.consent_requested_at(),
                expires_at: c.consent_expires_at(),
            },
            created_at: c.created_at(),
            updated_at: reported_updated_at(c.created_at(), c.updated_at()),
        }
        .serialize(s)
    }
}

/// A number a packed record keeps as the JSON text serde_json wrote for it.
fn number(text: &str) -> Number {
    text.parse()
        .expect("numbers are kept as serde_json wrote them")
}

/// An application: a candidate row with a job, seen from the job side.
pub struct ApplicationView<'a>(pub View<'a, CandidateRec>);

#[derive(Serialize)]
struct ApplicationOut<'a> {
    id: Uuid,
    candidate_id: Uuid,
    candidate_row_id: Uuid,
    candidate_name: Option<&'a str>,
    job_id: Option<Uuid>,
    stage: Option<&'a str>,
    stage_type: Option<&'a str>,
    status: &'a str,
    rejected_at: Option<Stamp>,
    created_at: Stamp,
    updated_at: Stamp,
}

impl Serialize for ApplicationView<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (ws, c) = (self.0.ws, self.0.rec);
        let st = stage(ws, c);
        let status = status_with_stage(c, st);
        ApplicationOut {
            id: c.id(),
            candidate_id: c.person_id(),
            candidate_row_id: c.id(),
            candidate_name: c.name(),
            job_id: c.job_id(),
            stage: st.and_then(|s| s.name.as_deref()),
            stage_type: st.and_then(|s| s.stage_type.as_deref()),
            status,
            rejected_at: c
                .rejected_at()
                .filter(|_| c.outcome() == Some(Outcome::Rejected)),
            created_at: c.created_at(),
            updated_at: reported_updated_at(c.created_at(), c.updated_at()),
        }
        .serialize(s)
    }
}

#[derive(Serialize)]
struct ContactOut<'a> {
    id: &'a Uuid,
    name: Option<&'a str>,
    emails: Emails<'a>,
    phone: Option<&'a str>,
    phone_as_entered: Option<&'a str>,
    mobile: Option<&'a str>,
    job_title: Option<&'a str>,
    department: Option<&'a str>,
    company_id: &'a Uuid,
    company: Option<&'a str>,
    linkedin_url: Option<&'a str>,
    is_main_contact: bool,
    owning_recruiter_id: Option<&'a Uuid>,
    created_at: Stamp,
    updated_at: Stamp,
}

impl Serialize for View<'_, ContactRec> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (ws, r) = (self.ws, self.rec);
        let c = &r.raw;
        ContactOut {
            id: &c.id,
            name: c.name.as_deref(),
            emails: Emails(c.email.as_deref().filter(|e| !e.is_empty())),
            phone: r.phone.as_deref(),
            phone_as_entered: c.phone.as_deref(),
            mobile: r.mobile.as_deref(),
            job_title: c.job_title.as_deref(),
            department: c.department.as_deref(),
            company_id: &c.company_id,
            company: ws
                .companies
                .get(&c.company_id)
                .and_then(|co| co.name.as_deref()),
            linkedin_url: c.linkedin_url.as_deref(),
            is_main_contact: c.is_main_contact,
            owning_recruiter_id: c.owner_id.as_ref(),
            created_at: c.created_at,
            updated_at: reported_updated_at(c.created_at, c.updated_at),
        }
        .serialize(s)
    }
}

#[derive(Serialize)]
struct CompanyOut<'a> {
    id: &'a Uuid,
    name: Option<&'a str>,
    phone: Option<&'a str>,
    website_url: Option<&'a str>,
    linkedin_url: Option<&'a str>,
    status: Option<&'a str>,
    is_archived: bool,
    owning_recruiter_id: Option<&'a Uuid>,
    created_at: Stamp,
    updated_at: Stamp,
}

impl Serialize for View<'_, Company> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let c = self.rec;
        CompanyOut {
            id: &c.id,
            name: c.name.as_deref(),
            phone: c.phone.as_deref(),
            website_url: c.website_url.as_deref(),
            linkedin_url: c.linkedin_url.as_deref(),
            status: c.status.as_deref(),
            is_archived: c.is_archived,
            owning_recruiter_id: c.owner_id.as_ref(),
            created_at: c.created_at,
            updated_at: reported_updated_at(c.created_at, c.updated_at),
        }
        .serialize(s)
    }
}

#[derive(Serialize)]
struct JobSalaryOut<'a> {
    amount: Option<&'a Number>,
    currency: Option<&'a str>,
    #[serde(rename = "type")]
    kind: Option<&'a str>,
}

#[derive(Serialize)]
struct JobOut<'a> {
    id: &'a Uuid,
    title: Option<&'a str>,
    position: Option<&'a str>,
    company: Option<&'a str>,
    company_id: Option<&'a Uuid>,
    status: Option<&'a str>,
    role_status_id: Option<&'a str>,
    live: bool,
    published: bool,
    is_archived: bool,
    salary: JobSalaryOut<'a>,
    owning_recruiter_id: Option<&'a Uuid>,
    hiring_manager: Option<&'a str>,
    created_at: Stamp,
    updated_at: Stamp,
}

impl Serialize for View<'_, Job> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (ws, j) = (self.ws, self.rec);
        let salary = j.salary.as_ref();
        JobOut {
            id: &j.id,
            title: j.title.as_deref(),
            position: j.position.as_deref(),
            company: j
                .company_id
                .and_then(|c| ws.companies.get(&c))
                .and_then(|c| c.name.as_deref()),
            company_id: j.company_id.as_ref(),
            status: j.status.as_deref(),
            role_status_id: j.role_status_id.as_deref(),
            live: !j.is_archived,
            published: !j.is_archived && j.on_careers_page,
            is_archived: j.is_archived,
            salary: JobSalaryOut {
                amount: salary.and_then(|s| s.amount.as_ref()),
                currency: salary.and_then(|s| s.currency.as_deref()),
                kind: salary.and_then(|s| s.kind.as_deref()),
            },
            owning_recruiter_id: j.assigned_recruiter_id.as_ref().or(j.created_by.as_ref()),
            hiring_manager: j.hiring_manager.as_deref(),
            created_at: j.created_at,
            updated_at: reported_updated_at(j.created_at, j.updated_at),
        }
        .serialize(s)
    }
}

/// `job_id` is present only on candidate notes, `company_id` only on contact notes: absent,
/// not null, otherwise. `Option<Option<_>>` with `skip_serializing_if` expresses exactly that.
#[derive(Serialize)]
struct NoteOut<'a> {
    id: Uuid,
    parent_type: &'a str,
    parent_id: Uuid,
    title: Option<&'a str>,
    body_html: Option<&'a str>,
    #[serde(rename = "type")]
    label: Option<&'a str>,
    is_private: bool,
    author_id: Option<Uuid>,
    #[serde(skip_serializing_if = "Option::is_none")]
    job_id: Option<Option<Uuid>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    company_id: Option<Option<Uuid>>,
    created_at: Stamp,
    updated_at: Stamp,
}

impl Serialize for View<'_, NoteRec> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (ws, n) = (self.ws, self.rec);
        let parent_type = n.parent_type();
        NoteOut {
            id: n.id(),
            parent_type: parent_type.as_str(),
            parent_id: n.parent_id(),
            title: n.title(),
            body_html: n.body_html(),
            label: n.label(),
            is_private: n.is_private(),
            author_id: n.author_id(),
            job_id: (parent_type == ParentType::Candidate).then_some(n.job_id()),
            company_id: (parent_type == ParentType::Contact).then(|| note_company(ws, n)),
            created_at: n.created_at(),
            updated_at: reported_updated_at(n.created_at(), n.updated_at()),
        }
        .serialize(s)
    }
}

/// `company_id` of a contact's note: its own, else its contact's.
fn note_company(ws: &WorkspaceState, n: &NoteRec) -> Option<Uuid> {
    n.company_id()
        .or_else(|| ws.contacts.get(&n.parent_id()).map(|c| c.raw.company_id))
}

#[derive(Serialize)]
struct TaskOut<'a> {
    id: &'a Uuid,
    parent_type: &'a str,
    parent_id: &'a Uuid,
    title: Option<&'a str>,
    body_html: Option<&'a str>,
    status: TaskStatus,
    due_date: Option<Date>,
    owner_id: Option<&'a Uuid>,
    completed_at: Option<Stamp>,
    is_private: bool,
    created_at: Stamp,
    updated_at: Stamp,
}

impl Serialize for View<'_, Task> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let t = self.rec;
        TaskOut {
            id: &t.id,
            parent_type: t.parent_type.as_str(),
            parent_id: &t.parent_id,
            title: t.title.as_deref(),
            body_html: t.body_html.as_deref(),
            status: t.status,
            due_date: t.due_date,
            owner_id: t.owner_id.as_ref(),
            completed_at: t.completed_at.filter(|_| t.status == TaskStatus::Completed),
            is_private: t.is_private,
            created_at: t.created_at,
            updated_at: reported_updated_at(t.created_at, t.updated_at),
        }
        .serialize(s)
    }
}

#[derive(Serialize)]
struct AttachmentOut<'a> {
    id: &'a str,
    parent_type: &'a str,
    parent_id: Uuid,
    filename: Option<&'a str>,
    content_type: Option<&'a str>,
    size: Option<u64>,
    kind: AttachmentKind,
    storage_ref: Option<&'a str>,
    created_at: Stamp,
    updated_at: Stamp,
}

impl Serialize for View<'_, AttachmentRec> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (ws, a) = (self.ws, self.rec);
        let (created_at, updated_at) = ws.attachment_timestamps(a);
        AttachmentOut {
            id: a.id(),
            parent_type: a.parent_type().as_str(),
            parent_id: a.parent_id(),
            filename: a.filename(),
            content_type: a.content_type(),
            size: a.size(),
            kind: a.kind(),
            storage_ref: a.storage_ref(),
            created_at,
            updated_at,
        }
        .serialize(s)
    }
}

#[derive(Serialize)]
struct UserOut<'a> {
    id: &'a Uuid,
    name: Option<&'a str>,
    email: Option<&'a str>,
    active: bool,
    role: Option<&'a str>,
    external_id: Option<()>,
    created_at: Stamp,
    updated_at: Stamp,
}

impl Serialize for View<'_, User> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let u = self.rec;
        UserOut {
            id: &u.id,
            name: u.name.as_deref(),
            email: u.email.as_deref(),
            active: u.is_active(),
            role: u.role.as_deref(),
            external_id: None,
            created_at: u.created_at,
            updated_at: reported_updated_at(u.created_at, u.updated_at),
        }
        .serialize(s)
    }
}

// Each view's JSON written directly (`rendered`), member for member as its `Serialize`
// above; `rendered`'s tests hold the two equal for every record of their workspaces.

/// The first two cache lines of a packed record (its fixed fields and first texts).
fn prefetch_packed(bytes: &[u8]) {
    prefetch(bytes.as_ptr());
    if let Some(b) = bytes.get(64) {
        prefetch(b);
    }
}

/// The heap bytes of a record's texts.
fn prefetch_texts(texts: &[&Option<String>]) {
    for t in texts.iter().filter_map(|t| t.as_deref()) {
        prefetch(t.as_ptr());
    }
}

impl Rendered for View<'_, CandidateRec> {
    fn prefetch(&self) {
        prefetch_packed(self.rec.packed().bytes());
    }

    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        use crate::packed::kinds::candidate as f;
        let (ws, c) = (self.ws, self.rec);
        let st = stage(ws, c);
        // Every text in one pass over the record, each with its escaping known.
        let t = c.packed().text_table();
        let text = |i: u8| t[usize::from(i)];
        let mut o = Obj::begin(out);
        o.uuid("id", Some(c.id()))
            .uuid("person_id", Some(c.person_id()))
            .bool("is_primary_record", c.is_primary())
            .text("name", text(f::NAME))
            .one_or_none("emails", c.email().filter(|e| !e.is_empty()))
            .text("phone", text(f::PHONE_NORMALISED))
            .text("phone_as_entered", text(f::PHONE))
            .text("mobile", text(f::MOBILE_NORMALISED))
            .text("job_title", text(f::JOB_TITLE))
            .text("company", text(f::COMPANY))
            .text("location", text(f::LOCATION))
            .text("linkedin_url", text(f::LINKEDIN))
            .str("stage", st.and_then(|s| s.name.as_deref()))
            .str("stage_type", st.and_then(|s| s.stage_type.as_deref()))
            .str("status", Some(status_with_stage(c, st)))
            .uuid("owning_recruiter_id", candidate_owner(ws, c))
            .uuid("job_id", c.job_id())
            .object("salary", |o| {
                o.raw("current_amount", text(f::CURRENT_AMOUNT).map(|(s, _)| s))
                    .text("current_currency", text(f::CURRENT_CURRENCY))
                    .text("current_text", text(f::CURRENT_TEXT))
                    .raw("expected_amount", text(f::EXPECTED_AMOUNT).map(|(s, _)| s))
                    .text("expected_currency", text(f::EXPECTED_CURRENCY))
                    .text("expected_text", text(f::EXPECTED_TEXT));
            })
            .object("consent", |o| {
                o.text("status", text(f::CONSENT_STATUS))
                    .stamp("given_at", c.consent_given_at())
                    .stamp("requested_at", c.consent_requested_at())
                    .stamp("expires_at", c.consent_expires_at());
            })
            .stamp("created_at", Some(c.created_at()))
            .stamp(
                "updated_at",
                Some(reported_updated_at(c.created_at(), c.updated_at())),
            );
        o.end();
        Ok(())
    }
}

impl Rendered for ApplicationView<'_> {
    fn prefetch(&self) {
        prefetch_packed(self.0.rec.packed().bytes());
    }

    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        let (ws, c) = (self.0.ws, self.0.rec);
        let st = stage(ws, c);
        let mut o = Obj::begin(out);
        o.uuid("id", Some(c.id()))
            .uuid("candidate_id", Some(c.person_id()))
            .uuid("candidate_row_id", Some(c.id()))
            .str("candidate_name", c.name())
            .uuid("job_id", c.job_id())
            .str("stage", st.and_then(|s| s.name.as_deref()))
            .str("stage_type", st.and_then(|s| s.stage_type.as_deref()))
            .str("status", Some(status_with_stage(c, st)))
            .stamp(
                "rejected_at",
                c.rejected_at()
                    .filter(|_| c.outcome() == Some(Outcome::Rejected)),
            )
            .stamp("created_at", Some(c.created_at()))
            .stamp(
                "updated_at",
                Some(reported_updated_at(c.created_at(), c.updated_at())),
            );
        o.end();
        Ok(())
    }
}

impl Rendered for View<'_, ContactRec> {
    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        let (ws, r) = (self.ws, self.rec);
        let c = &r.raw;
        let mut o = Obj::begin(out);
        o.uuid("id", Some(c.id))
            .str("name", c.name.as_deref())
            .one_or_none("emails", c.email.as_deref().filter(|e| !e.is_empty()))
            .str("phone", r.phone.as_deref())
            .str("phone_as_entered", c.phone.as_deref())
            .str("mobile", r.mobile.as_deref())
            .str("job_title", c.job_title.as_deref())
            .str("department", c.department.as_deref())
            .uuid("company_id", Some(c.company_id))
            .str(
                "company",
                ws.companies
                    .get(&c.company_id)
                    .and_then(|co| co.name.as_deref()),
            )
            .str("linkedin_url", c.linkedin_url.as_deref())
            .bool("is_main_contact", c.is_main_contact)
            .uuid("owning_recruiter_id", c.owner_id)
            .stamp("created_at", Some(c.created_at))
            .stamp(
                "updated_at",
                Some(reported_updated_at(c.created_at, c.updated_at)),
            );
        o.end();
        Ok(())
    }
}

impl Rendered for View<'_, Company> {
    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        let c = self.rec;
        let mut o = Obj::begin(out);
        o.uuid("id", Some(c.id))
            .str("name", c.name.as_deref())
            .str("phone", c.phone.as_deref())
            .str("website_url", c.website_url.as_deref())
            .str("linkedin_url", c.linkedin_url.as_deref())
            .str("status", c.status.as_deref())
            .bool("is_archived", c.is_archived)
            .uuid("owning_recruiter_id", c.owner_id)
            .stamp("created_at", Some(c.created_at))
            .stamp(
                "updated_at",
                Some(reported_updated_at(c.created_at, c.updated_at)),
            );
        o.end();
        Ok(())
    }
}

impl Rendered for View<'_, Job> {
    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        let (ws, j) = (self.ws, self.rec);
        let salary = j.salary.as_ref();
        let mut o = Obj::begin(out);
        o.uuid("id", Some(j.id))
            .str("title", j.title.as_deref())
            .str("position", j.position.as_deref())
            .str(
                "company",
                j.company_id
                    .and_then(|c| ws.companies.get(&c))
                    .and_then(|c| c.name.as_deref()),
            )
            .uuid("company_id", j.company_id)
            .str("status", j.status.as_deref())
            .str("role_status_id", j.role_status_id.as_deref())
            .bool("live", !j.is_archived)
            .bool("published", !j.is_archived && j.on_careers_page)
            .bool("is_archived", j.is_archived)
            .object("salary", |o| {
                match salary.and_then(|s| s.amount.as_ref()) {
                    Some(n) => o.serde("amount", n),
                    None => o.null("amount"),
                };
                o.str("currency", salary.and_then(|s| s.currency.as_deref()))
                    .str("type", salary.and_then(|s| s.kind.as_deref()));
            })
            .uuid(
                "owning_recruiter_id",
                j.assigned_recruiter_id.or(j.created_by),
            )
            .str("hiring_manager", j.hiring_manager.as_deref())
            .stamp("created_at", Some(j.created_at))
            .stamp(
                "updated_at",
                Some(reported_updated_at(j.created_at, j.updated_at)),
            );
        o.end();
        Ok(())
    }
}

impl Rendered for View<'_, NoteRec> {
    fn prefetch(&self) {
        prefetch_packed(self.rec.packed().bytes());
    }

    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        use crate::packed::kinds::note as f;
        let (ws, n) = (self.ws, self.rec);
        let t = n.packed().text_table();
        let text = |i: u8| t[usize::from(i)];
        let parent_type = n.parent_type();
        let mut o = Obj::begin(out);
        o.uuid("id", Some(n.id()))
            .str("parent_type", Some(parent_type.as_str()))
            .uuid("parent_id", Some(n.parent_id()))
            .text("title", text(f::TITLE))
            .text("body_html", text(f::BODY))
            .text("type", text(f::LABEL))
            .bool("is_private", n.is_private())
            .uuid("author_id", n.author_id());
        if parent_type == ParentType::Candidate {
            o.uuid("job_id", n.job_id());
        }
        if parent_type == ParentType::Contact {
            o.uuid("company_id", note_company(ws, n));
        }
        o.stamp("created_at", Some(n.created_at())).stamp(
            "updated_at",
            Some(reported_updated_at(n.created_at(), n.updated_at())),
        );
        o.end();
        Ok(())
    }
}

impl Rendered for View<'_, Task> {
    fn prefetch(&self) {
        prefetch_texts(&[&self.rec.title, &self.rec.body_html]);
    }

    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        let t = self.rec;
        let mut o = Obj::begin(out);
        o.uuid("id", Some(t.id))
            .str("parent_type", Some(t.parent_type.as_str()))
            .uuid("parent_id", Some(t.parent_id))
            .str("title", t.title.as_deref())
            .str("body_html", t.body_html.as_deref())
            .serde("status", &t.status);
        match t.due_date {
            Some(d) => o.serde("due_date", &d),
            None => o.null("due_date"),
        };
        o.uuid("owner_id", t.owner_id)
            .stamp(
                "completed_at",
                t.completed_at.filter(|_| t.status == TaskStatus::Completed),
            )
            .bool("is_private", t.is_private)
            .stamp("created_at", Some(t.created_at))
            .stamp(
                "updated_at",
                Some(reported_updated_at(t.created_at, t.updated_at)),
            );
        o.end();
        Ok(())
    }
}

impl Rendered for View<'_, AttachmentRec> {
    fn prefetch(&self) {
        prefetch_packed(self.rec.packed().bytes());
    }

    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        use crate::packed::kinds::attachment as f;
        let (ws, a) = (self.ws, self.rec);
        let (created_at, updated_at) = ws.attachment_timestamps(a);
        let t = a.packed().text_table();
        let text = |i: u8| t[usize::from(i)];
        let mut o = Obj::begin(out);
        o.text("id", text(f::ID))
            .str("parent_type", Some(a.parent_type().as_str()))
            .uuid("parent_id", Some(a.parent_id()))
            .text("filename", text(f::FILENAME))
            .text("content_type", text(f::CONTENT_TYPE))
            .u64("size", a.size())
            .serde("kind", &a.kind())
            .text("storage_ref", text(f::STORAGE_REF))
            .stamp("created_at", Some(created_at))
            .stamp("updated_at", Some(updated_at));
        o.end();
        Ok(())
    }
}

impl Rendered for View<'_, User> {
    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        let u = self.rec;
        let mut o = Obj::begin(out);
        o.uuid("id", Some(u.id))
            .str("name", u.name.as_deref())
            .str("email", u.email.as_deref())
            .bool("active", u.is_active())
            .str("role", u.role.as_deref())
            .null("external_id")
            .stamp("created_at", Some(u.created_at))
            .stamp(
                "updated_at",
                Some(reported_updated_at(u.created_at, u.updated_at)),
            );
        o.end();
        Ok(())
    }
}
