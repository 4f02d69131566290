//! Candidate rows: one person's primary row and one row per job they are put forward
//! for. The API shows every row as `candidates` and the rows with a job, seen from the
//! job's side, as `applications`.

use super::shared::{field, ApiField, Shape::*, Surroundings, View, OWNER_DERIVED};
use crate::packed::rec::{accessors, id_bytes, number_text, stamp_word, Rec};
use crate::packed::Writer;
use crate::rendered::{prefetch_packed, Obj, Rendered};
use crate::time::Stamp;
use serde::{Deserialize, Serialize};
use serde_json::Number;
use std::sync::Arc;
use uuid::Uuid;

/// The fields `PATCH /v1/candidates/{id}` takes (`records:write`).
pub const PATCH_FIELDS: &[&str] = &[
    "name",
    "email",
    "phone",
    "job_title",
    "current_company",
    "current_salary_amount",
    "current_salary_currency",
    "expected_salary_amount",
    "expected_salary_currency",
    "owning_recruiter_id",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Placed,
    Rejected,
}

#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CandidateSalary {
    pub current_amount: Option<Number>,
    pub current_currency: Option<String>,
    pub current_text: Option<String>,
    pub expected_amount: Option<Number>,
    pub expected_currency: Option<String>,
    pub expected_text: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Consent {
    pub status: Option<String>,
    pub given_at: Option<Stamp>,
    pub requested_at: Option<Stamp>,
    pub expires_at: Option<Stamp>,
}

/// One candidate row: the person's primary row (`job_id` null) or one job involvement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Candidate {
    pub id: Uuid,
    pub person_id: Uuid,
    pub job_id: Option<Uuid>,
    pub name: Option<String>,
    pub email: Option<String>,
    pub phone: Option<String>,
    pub mobile: Option<String>,
    pub job_title: Option<String>,
    pub company: Option<String>,
    pub location: Option<String>,
    pub linkedin_url: Option<String>,
    pub stage_id: Option<Uuid>,
    pub outcome: Option<Outcome>,
    pub rejected_at: Option<Stamp>,
    pub owner_id: Option<Uuid>,
    pub salary: Option<CandidateSalary>,
    pub consent: Option<Consent>,
    pub created_at: Stamp,
    pub updated_at: Stamp,
}

impl Candidate {
    pub fn is_primary(&self) -> bool {
        self.job_id.is_none()
    }
}

/// A candidate row, packed, with its numbers normalised once, when it entered memory
/// (`phone`, `mobile`; the numbers as entered are `phone_as_entered`, `mobile_as_entered`).
pub type CandidateRec = Rec<Candidate>;

/// Where each field sits in the packed layout: its class (ids, words, bytes, flags,
/// texts) and its index within it.
pub(crate) mod layout {
    pub const ID: u8 = 0;
    pub const PERSON: u8 = 1;
    pub const JOB: u8 = 2;
    pub const STAGE: u8 = 3;
    pub const OWNER: u8 = 4;
    pub const CREATED: u8 = 0;
    pub const UPDATED: u8 = 1;
    pub const REJECTED: u8 = 2;
    pub const CONSENT_GIVEN: u8 = 3;
    pub const CONSENT_REQUESTED: u8 = 4;
    pub const CONSENT_EXPIRES: u8 = 5;
    pub const OUTCOME: u8 = 0;
    pub const HAS_SALARY: u8 = 0;
    pub const HAS_CONSENT: u8 = 1;
    pub const NAME: u8 = 0;
    pub const EMAIL: u8 = 1;
    pub const PHONE: u8 = 2;
    pub const MOBILE: u8 = 3;
    pub const JOB_TITLE: u8 = 4;
    pub const COMPANY: u8 = 5;
    pub const LOCATION: u8 = 6;
    pub const LINKEDIN: u8 = 7;
    pub const CURRENT_AMOUNT: u8 = 8;
    pub const CURRENT_CURRENCY: u8 = 9;
    pub const CURRENT_TEXT: u8 = 10;
    pub const EXPECTED_AMOUNT: u8 = 11;
    pub const EXPECTED_CURRENCY: u8 = 12;
    pub const EXPECTED_TEXT: u8 = 13;
    pub const CONSENT_STATUS: u8 = 14;
    pub const PHONE_NORMALISED: u8 = 15;
    pub const MOBILE_NORMALISED: u8 = 16;
}

impl Rec<Candidate> {
    /// Packs a candidate row with its numbers as normalised when it entered memory.
    pub fn pack(c: &Candidate, phone: Option<&str>, mobile: Option<&str>) -> Arc<Self> {
        use layout::*;
        let salary = c.salary.as_ref();
        let consent = c.consent.as_ref();
        let current = salary.and_then(|s| number_text(&s.current_amount));
        let expected = salary.and_then(|s| number_text(&s.expected_amount));
        let mut w = Writer::default();
        w.id(ID, id_bytes(Some(c.id)))
            .id(PERSON, id_bytes(Some(c.person_id)))
            .id(JOB, id_bytes(c.job_id))
            .id(STAGE, id_bytes(c.stage_id))
            .id(OWNER, id_bytes(c.owner_id))
            .word(CREATED, stamp_word(Some(c.created_at)))
            .word(UPDATED, stamp_word(Some(c.updated_at)))
            .word(REJECTED, stamp_word(c.rejected_at))
            .word(CONSENT_GIVEN, stamp_word(consent.and_then(|c| c.given_at)))
            .word(
                CONSENT_REQUESTED,
                stamp_word(consent.and_then(|c| c.requested_at)),
            )
            .word(
                CONSENT_EXPIRES,
                stamp_word(consent.and_then(|c| c.expires_at)),
            )
            .byte(OUTCOME, c.outcome.map(outcome_code))
            .flag(HAS_SALARY, salary.is_some())
            .flag(HAS_CONSENT, consent.is_some())
            .text(NAME, c.name.as_deref())
            .text(EMAIL, c.email.as_deref())
            .text(PHONE, c.phone.as_deref())
            .text(MOBILE, c.mobile.as_deref())
            .text(JOB_TITLE, c.job_title.as_deref())
            .text(COMPANY, c.company.as_deref())
            .text(LOCATION, c.location.as_deref())
            .text(LINKEDIN, c.linkedin_url.as_deref())
            .text(CURRENT_AMOUNT, current.as_deref())
            .text(
                CURRENT_CURRENCY,
                salary.and_then(|s| s.current_currency.as_deref()),
            )
            .text(CURRENT_TEXT, salary.and_then(|s| s.current_text.as_deref()))
            .text(EXPECTED_AMOUNT, expected.as_deref())
            .text(
                EXPECTED_CURRENCY,
                salary.and_then(|s| s.expected_currency.as_deref()),
            )
            .text(
                EXPECTED_TEXT,
                salary.and_then(|s| s.expected_text.as_deref()),
            )
            .text(CONSENT_STATUS, consent.and_then(|c| c.status.as_deref()))
            .text(PHONE_NORMALISED, phone)
            .text(MOBILE_NORMALISED, mobile);
        Rec::new(w.finish())
    }

    /// The same row with `updated_at` at `stamp`, and nothing else of it unpacked:
    /// what a derived change's touch makes of each row it moves.
    pub fn restamped(&self, stamp: Stamp) -> Arc<Self> {
        self.with_stamp(layout::UPDATED, stamp)
    }

    pub fn outcome(&self) -> Option<Outcome> {
        self.packed().byte(layout::OUTCOME).map(|b| match b {
            0 => Outcome::Placed,
            _ => Outcome::Rejected,
        })
    }

    pub fn is_primary(&self) -> bool {
        self.job_id().is_none()
    }

    pub fn raw(&self) -> Candidate {
        use layout::*;
        let t = self.text_fields();
        Candidate {
            id: self.id(),
            person_id: self.person_id(),
            job_id: self.job_id(),
            name: t.string(NAME),
            email: t.string(EMAIL),
            phone: t.string(PHONE),
            mobile: t.string(MOBILE),
            job_title: t.string(JOB_TITLE),
            company: t.string(COMPANY),
            location: t.string(LOCATION),
            linkedin_url: t.string(LINKEDIN),
            stage_id: self.stage_id(),
            outcome: self.outcome(),
            rejected_at: self.rejected_at(),
            owner_id: self.owner_id(),
            salary: self.packed().flag(HAS_SALARY).then(|| CandidateSalary {
                current_amount: t.number(CURRENT_AMOUNT),
                current_currency: t.string(CURRENT_CURRENCY),
                current_text: t.string(CURRENT_TEXT),
                expected_amount: t.number(EXPECTED_AMOUNT),
                expected_currency: t.string(EXPECTED_CURRENCY),
                expected_text: t.string(EXPECTED_TEXT),
            }),
            consent: self.packed().flag(HAS_CONSENT).then(|| Consent {
                status: t.string(CONSENT_STATUS),
                given_at: self.stamp(CONSENT_GIVEN),
                requested_at: self.stamp(CONSENT_REQUESTED),
                expires_at: self.stamp(CONSENT_EXPIRES),
            }),
            created_at: self.created_at(),
            updated_at: self.updated_at(),
        }
    }
}

fn outcome_code(o: Outcome) -> u8 {
    match o {
        Outcome::Placed => 0,
        Outcome::Rejected => 1,
    }
}

accessors!(Candidate {
    id: uuid(layout::ID) -> Uuid;
    person_id: uuid(layout::PERSON) -> Uuid;
    job_id: opt_uuid(layout::JOB) -> Option<Uuid>;
    stage_id: opt_uuid(layout::STAGE) -> Option<Uuid>;
    owner_id: opt_uuid(layout::OWNER) -> Option<Uuid>;
    created_at: stamp(layout::CREATED) -> Stamp;
    updated_at: stamp(layout::UPDATED) -> Stamp;
    rejected_at: opt_stamp(layout::REJECTED) -> Option<Stamp>;
    name: text(layout::NAME) -> Option<&str>;
    email: text(layout::EMAIL) -> Option<&str>;
    phone_as_entered: text(layout::PHONE) -> Option<&str>;
    mobile_as_entered: text(layout::MOBILE) -> Option<&str>;
    phone: text(layout::PHONE_NORMALISED) -> Option<&str>;
    mobile: text(layout::MOBILE_NORMALISED) -> Option<&str>;
    job_title: text(layout::JOB_TITLE) -> Option<&str>;
    company: text(layout::COMPANY) -> Option<&str>;
    location: text(layout::LOCATION) -> Option<&str>;
    linkedin_url: text(layout::LINKEDIN) -> Option<&str>;
    current_amount: text(layout::CURRENT_AMOUNT) -> Option<&str>;
    current_currency: text(layout::CURRENT_CURRENCY) -> Option<&str>;
    current_text: text(layout::CURRENT_TEXT) -> Option<&str>;
    expected_amount: text(layout::EXPECTED_AMOUNT) -> Option<&str>;
    expected_currency: text(layout::EXPECTED_CURRENCY) -> Option<&str>;
    expected_text: text(layout::EXPECTED_TEXT) -> Option<&str>;
    consent_status: text(layout::CONSENT_STATUS) -> Option<&str>;
    consent_given_at: opt_stamp(layout::CONSENT_GIVEN) -> Option<Stamp>;
    consent_requested_at: opt_stamp(layout::CONSENT_REQUESTED) -> Option<Stamp>;
    consent_expires_at: opt_stamp(layout::CONSENT_EXPIRES) -> Option<Stamp>;
});

/// The derived `status` of a candidate row (`outcome ?? stage_type ?? "active"`), given
/// the row's stage, which its view has already looked up.
fn status_with_stage<'a>(c: &CandidateRec, stage: Option<StageShown<'a>>) -> &'a str {
    match c.outcome() {
        Some(Outcome::Placed) => "placed",
        Some(Outcome::Rejected) => "rejected",
        None => stage.and_then(|s| s.1).unwrap_or("active"),
    }
}

/// A stage as a candidate row shows it: `(name, stage_type)`.
type StageShown<'a> = (Option<&'a str>, Option<&'a str>);

/// The pipeline stage a candidate row is at, if any.
pub fn stage<'a, W: Surroundings + ?Sized>(ws: &'a W, c: &CandidateRec) -> Option<StageShown<'a>> {
    c.stage_id().and_then(|id| ws.stage(id))
}

/// `owning_recruiter_id` of a candidate row: the recorded owner if still an active
/// member; else, on a job row, the job's assigned recruiter if active; else null.
pub fn candidate_owner<W: Surroundings + ?Sized>(ws: &W, c: &CandidateRec) -> Option<Uuid> {
    if let Some(o) = c.owner_id().filter(|o| ws.user_is_active(*o)) {
        return Some(o);
    }
    c.job_id()
        .and_then(|j| ws.job_recruiter(j))
        .filter(|r| ws.user_is_active(*r))
}

/// An application: a candidate row with a job, seen from the job side.
pub struct ApplicationView<'a, W>(pub View<'a, W, CandidateRec>);

/// The members of a candidate row as the API shows it (`candidates`), in order.
#[rustfmt::skip]
pub const API_FIELDS: &[ApiField] = &[
    field("id", Text, "This record."),
    field("person_id", NullableText, "Same on all records of one person; comparable to `person_id` in search results."),
    field("is_primary_record", Bool, "true on the main record, false on a job-tied record."),
    field("name", NullableText, "Full name."),
    field("emails", Emails, "Zero or one entry."),
    field("phone", NullableText, "Normalised primary number."),
    field("phone_as_entered", NullableText, "Number as originally entered."),
    field("mobile", NullableText, "Second number when held, else null; searched by phone search alongside `phone` (always null before 2026-08-26)."),
    field("job_title", NullableText, "Own current or target title."),
    field("company", NullableText, "Current employer."),
    field("location", NullableText, "Free text."),
    field("linkedin_url", NullableText, ""),
    field("stage", NullableText, "Pipeline stage name; null when not on a job; workspace-configurable."),
    field("stage_type", NullableText, "Stage category, stable across renames; null when not on a job."),
    field("status", Text, "`placed`, `rejected`, otherwise the `stage_type`, otherwise `active`. Derived, not writable."),
    field("owning_recruiter_id", NullableText, OWNER_DERIVED),
    field("job_id", NullableText, "`jobs.id`; null on the primary record."),
    field("salary", NullableObject(&[
        field("current_amount", NullableNumber, ""),
        field("current_currency", NullableText, ""),
        field("current_text", NullableText, "Free text as typed."),
        field("expected_amount", NullableNumber, ""),
        field("expected_currency", NullableText, ""),
        field("expected_text", NullableText, ""),
    ]), ""),
    field("consent", NullableObject(&[
        field("status", NullableText, "Allowed values: not shown."),
        field("given_at", NullableStamp, ""),
        field("requested_at", NullableStamp, ""),
        field("expires_at", NullableStamp, ""),
    ]), "Covers data-processing consent and right-to-represent. Not writable."),
    field("created_at", Stamp, ""),
    field("updated_at", Stamp, "Never null; equals `created_at` when no change is recorded."),
];

impl<W: Surroundings> Rendered for View<'_, W, CandidateRec> {
    fn prefetch(&self) {
        prefetch_packed(self.rec.packed().bytes());
    }

    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        use layout as f;
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
            .str("stage", st.and_then(|s| s.0))
            .str("stage_type", st.and_then(|s| s.1))
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
            .times(c.created_at(), c.updated_at());
        o.end();
        Ok(())
    }
}

/// The members of an application (a candidate row with a job, `applications`), in order.
#[rustfmt::skip]
pub const APPLICATION_API_FIELDS: &[ApiField] = &[
    field("id", Text, "Equal to `candidate_row_id` and to the matching `candidates.id`."),
    field("candidate_id", NullableText, "The person: equals that person's `candidates.person_id`."),
    field("candidate_row_id", Text, "The `candidates.id` carrying the application."),
    field("candidate_name", NullableText, ""),
    field("job_id", Text, ""),
    field("stage", NullableText, ""),
    field("stage_type", NullableText, ""),
    field("status", Text, "Same derivation as candidates: `placed`, `rejected`, otherwise the `stage_type`, otherwise `active`."),
    field("rejected_at", NullableStamp, "Null unless rejected."),
    field("created_at", Stamp, ""),
    field("updated_at", Stamp, "Never null."),
];

impl<W: Surroundings> Rendered for ApplicationView<'_, W> {
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
            .str("stage", st.and_then(|s| s.0))
            .str("stage_type", st.and_then(|s| s.1))
            .str("status", Some(status_with_stage(c, st)))
            .stamp(
                "rejected_at",
                c.rejected_at()
                    .filter(|_| c.outcome() == Some(Outcome::Rejected)),
            )
            .times(c.created_at(), c.updated_at());
        o.end();
        Ok(())
    }
}

// The serde copy of the view (see `rendered`).
#[cfg(any(test, feature = "oracle"))]
mod oracle {
    use super::*;
    use crate::model::shared::Emails;
    use crate::time::reported_updated_at;
    use serde::Serializer;

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

    impl<W: Surroundings> Serialize for View<'_, W, CandidateRec> {
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
                stage: st.and_then(|s| s.0),
                stage_type: st.and_then(|s| s.1),
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

    impl<W: Surroundings> Serialize for ApplicationView<'_, W> {
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
                stage: st.and_then(|s| s.0),
                stage_type: st.and_then(|s| s.1),
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
}
