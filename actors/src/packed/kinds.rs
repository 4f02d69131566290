//! Each kind's fields in the packed layout: which class and index holds what, how a raw
//! record is packed ([`Rec::pack`]) and unpacked ([`Rec::raw`]), and typed accessors for
//! the fields the rest of the domain reads without unpacking a whole record.
//!
//! Numbers (salaries) are kept as the JSON text serde_json writes for them, so that a
//! rendering copies them and unpacking parses them back to the same value; dates as their
//! `YYYY-MM-DD` text. Candidate rows and contacts also keep their numbers normalised when
//! they entered memory (`phone`, `mobile` as the API shows them).

use super::{Packed, Writer};
use crate::model::*;
use crate::time::{Date, Stamp};
use serde_json::Number;
use std::marker::PhantomData;
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

/// A record of kind `T`, packed; held as `Arc<Rec<T>>` (one allocation).
#[repr(transparent)]
pub struct Rec<T> {
    kind: PhantomData<fn() -> T>,
    packed: Packed,
}

impl<T> std::fmt::Debug for Rec<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Rec<{}>({:?})", std::any::type_name::<T>(), &self.packed)
    }
}

impl<T> PartialEq for Rec<T> {
    fn eq(&self, other: &Self) -> bool {
        self.packed == other.packed
    }
}

impl<T> Rec<T> {
    fn new(packed: Arc<Packed>) -> Arc<Self> {
        // SAFETY: `Rec<T>` is a `repr(transparent)` wrapper of `Packed` (its other field
        // is zero-sized), so a pointer to the one is a valid pointer to the other.
        unsafe { Arc::from_raw(Arc::into_raw(packed) as *const Rec<T>) }
    }

    pub fn packed(&self) -> &Packed {
        &self.packed
    }

    /// A record of this kind from checked bytes (a checkpoint).
    pub fn from_packed(packed: Arc<Packed>) -> Arc<Self> {
        Rec::new(packed)
    }

    /// The packed bytes, as the `Arc` they are held in.
    pub fn into_packed(rec: Arc<Self>) -> Arc<Packed> {
        // SAFETY: the inverse of `new`: `Rec<T>` is a `repr(transparent)` wrapper of
        // `Packed`, so a pointer to the one is a valid pointer to the other.
        unsafe { Arc::from_raw(Arc::into_raw(rec) as *const Packed) }
    }

    fn uuid(&self, i: u8) -> Option<Uuid> {
        self.packed.id(i).map(Uuid::from_bytes)
    }

    fn stamp(&self, i: u8) -> Option<Stamp> {
        self.packed.word(i).map(|w| Stamp::from_millis(w as i64))
    }

    /// Every text field, read in one pass: for `raw`, which reads them all (one by one,
    /// each would walk the texts before it).
    fn text_fields(&self) -> TextFields<'_> {
        TextFields(self.packed.text_table())
    }

    /// The record's id as the tables key it: a UUID's 16 bytes, an attachment's id text.
    /// Byte order is the API's id order (UUIDs compare as their bytes, texts as theirs).
    pub fn key(&self) -> &[u8] {
        match self.packed.id(0) {
            // Id 0 is the id of every UUID-keyed kind and is stored first.
            Some(_) => &self.packed.bytes()[8..24],
            None => self
                .packed
                .text(attachment::ID)
                .expect("an attachment has an id")
                .as_bytes(),
        }
    }
}

/// A record's text fields by index (`Rec::text_fields`).
struct TextFields<'a>([Option<(&'a str, bool)>; 32]);

impl TextFields<'_> {
    fn string(&self, i: u8) -> Option<String> {
        self.0[usize::from(i)].map(|(s, _)| s.to_string())
    }

    fn number(&self, i: u8) -> Option<Number> {
        self.0[usize::from(i)].map(|(s, _)| {
            serde_json::from_str(s).expect("numbers are kept as serde_json wrote them")
        })
    }
}

fn id_bytes(u: Option<Uuid>) -> Option<[u8; 16]> {
    u.map(|u| *u.as_bytes())
}

fn stamp_word(s: Option<Stamp>) -> Option<u64> {
    s.map(|s| s.millis() as u64)
}

fn number_text(n: &Option<Number>) -> Option<String> {
    n.as_ref().map(|n| n.to_string())
}

/// Defines typed accessors: `name: class(index) -> type`.
macro_rules! accessors {
    ($t:ty { $($name:ident: $how:ident($field:expr) -> $ret:ty;)* }) => {
        impl Rec<$t> {
            $(
                pub fn $name(&self) -> $ret {
                    accessors!(@get self, $how, $field)
                }
            )*
        }
    };
    (@get $s:ident, uuid, $f:expr) => { $s.uuid($f).expect("a required id") };
    (@get $s:ident, opt_uuid, $f:expr) => { $s.uuid($f) };
    (@get $s:ident, stamp, $f:expr) => { $s.stamp($f).expect("a required timestamp") };
    (@get $s:ident, opt_stamp, $f:expr) => { $s.stamp($f) };
    (@get $s:ident, text, $f:expr) => { $s.packed.text($f) };
    (@get $s:ident, flag, $f:expr) => { $s.packed.flag($f) };
}

pub mod user {
    pub const ID: u8 = 0;
    pub const CREATED: u8 = 0;
    pub const UPDATED: u8 = 1;
    pub const STATUS: u8 = 0;
    pub const NAME: u8 = 0;
    pub const EMAIL: u8 = 1;
    pub const ROLE: u8 = 2;
}

fn user_status_code(s: UserStatus) -> u8 {
    match s {
        UserStatus::Active => 0,
        UserStatus::Invited => 1,
        UserStatus::Removed => 2,
    }
}

impl Rec<User> {
    pub fn pack(u: &User) -> Arc<Self> {
        use user::*;
        let mut w = Writer::default();
        w.id(ID, id_bytes(Some(u.id)))
            .word(CREATED, stamp_word(Some(u.created_at)))
            .word(UPDATED, stamp_word(Some(u.updated_at)))
            .byte(STATUS, Some(user_status_code(u.status)))
            .text(NAME, u.name.as_deref())
            .text(EMAIL, u.email.as_deref())
            .text(ROLE, u.role.as_deref());
        Rec::new(w.finish())
    }

    pub fn status(&self) -> UserStatus {
        match self.packed.byte(user::STATUS) {
            Some(0) => UserStatus::Active,
            Some(1) => UserStatus::Invited,
            _ => UserStatus::Removed,
        }
    }

    pub fn is_active(&self) -> bool {
        self.status() == UserStatus::Active
    }

    pub fn raw(&self) -> User {
        use user::*;
        let t = self.text_fields();
        User {
            id: self.id(),
            name: t.string(NAME),
            email: t.string(EMAIL),
            role: t.string(ROLE),
            status: self.status(),
            created_at: self.created_at(),
            updated_at: self.updated_at(),
        }
    }
}

accessors!(User {
    id: uuid(user::ID) -> Uuid;
    created_at: stamp(user::CREATED) -> Stamp;
    updated_at: stamp(user::UPDATED) -> Stamp;
    name: text(user::NAME) -> Option<&str>;
    email: text(user::EMAIL) -> Option<&str>;
    role: text(user::ROLE) -> Option<&str>;
});

pub mod stage {
    pub const ID: u8 = 0;
    pub const NAME: u8 = 0;
    pub const STAGE_TYPE: u8 = 1;
}

impl Rec<PipelineStage> {
    pub fn pack(s: &PipelineStage) -> Arc<Self> {
        use stage::*;
        let mut w = Writer::default();
        w.id(ID, id_bytes(Some(s.id)))
            .text(NAME, s.name.as_deref())
            .text(STAGE_TYPE, s.stage_type.as_deref());
        Rec::new(w.finish())
    }

    pub fn raw(&self) -> PipelineStage {
        use stage::*;
        let t = self.text_fields();
        PipelineStage {
            id: self.id(),
            name: t.string(NAME),
            stage_type: t.string(STAGE_TYPE),
        }
    }
}

accessors!(PipelineStage {
    id: uuid(stage::ID) -> Uuid;
    name: text(stage::NAME) -> Option<&str>;
    stage_type: text(stage::STAGE_TYPE) -> Option<&str>;
});

pub mod company {
    pub const ID: u8 = 0;
    pub const OWNER: u8 = 1;
    pub const CREATED: u8 = 0;
    pub const UPDATED: u8 = 1;
    pub const ARCHIVED: u8 = 0;
    pub const NAME: u8 = 0;
    pub const PHONE: u8 = 1;
    pub const WEBSITE: u8 = 2;
    pub const LINKEDIN: u8 = 3;
    pub const STATUS: u8 = 4;
}

impl Rec<Company> {
    pub fn pack(c: &Company) -> Arc<Self> {
        use company::*;
        let mut w = Writer::default();
        w.id(ID, id_bytes(Some(c.id)))
            .id(OWNER, id_bytes(c.owner_id))
            .word(CREATED, stamp_word(Some(c.created_at)))
            .word(UPDATED, stamp_word(Some(c.updated_at)))
            .flag(ARCHIVED, c.is_archived)
            .text(NAME, c.name.as_deref())
            .text(PHONE, c.phone.as_deref())
            .text(WEBSITE, c.website_url.as_deref())
            .text(LINKEDIN, c.linkedin_url.as_deref())
            .text(STATUS, c.status.as_deref());
        Rec::new(w.finish())
    }

    pub fn raw(&self) -> Company {
        use company::*;
        let t = self.text_fields();
        Company {
            id: self.id(),
            name: t.string(NAME),
            phone: t.string(PHONE),
            website_url: t.string(WEBSITE),
            linkedin_url: t.string(LINKEDIN),
            status: t.string(STATUS),
            is_archived: self.is_archived(),
            owner_id: self.owner_id(),
            created_at: self.created_at(),
            updated_at: self.updated_at(),
        }
    }
}

accessors!(Company {
    id: uuid(company::ID) -> Uuid;
    owner_id: opt_uuid(company::OWNER) -> Option<Uuid>;
    created_at: stamp(company::CREATED) -> Stamp;
    updated_at: stamp(company::UPDATED) -> Stamp;
    is_archived: flag(company::ARCHIVED) -> bool;
    name: text(company::NAME) -> Option<&str>;
    phone: text(company::PHONE) -> Option<&str>;
});

pub mod contact {
    pub const ID: u8 = 0;
    pub const COMPANY: u8 = 1;
    pub const OWNER: u8 = 2;
    pub const CREATED: u8 = 0;
    pub const UPDATED: u8 = 1;
    pub const MAIN: u8 = 0;
    pub const NAME: u8 = 0;
    pub const EMAIL: u8 = 1;
    pub const PHONE: u8 = 2;
    pub const MOBILE: u8 = 3;
    pub const JOB_TITLE: u8 = 4;
    pub const DEPARTMENT: u8 = 5;
    pub const LINKEDIN: u8 = 6;
    pub const PHONE_NORMALISED: u8 = 7;
    pub const MOBILE_NORMALISED: u8 = 8;
}

impl Rec<Contact> {
    /// Packs a contact with its numbers as normalised when it entered memory.
    pub fn pack(c: &Contact, phone: Option<&str>, mobile: Option<&str>) -> Arc<Self> {
        use contact::*;
        let mut w = Writer::default();
        w.id(ID, id_bytes(Some(c.id)))
            .id(COMPANY, id_bytes(Some(c.company_id)))
            .id(OWNER, id_bytes(c.owner_id))
            .word(CREATED, stamp_word(Some(c.created_at)))
            .word(UPDATED, stamp_word(Some(c.updated_at)))
            .flag(MAIN, c.is_main_contact)
            .text(NAME, c.name.as_deref())
            .text(EMAIL, c.email.as_deref())
            .text(PHONE, c.phone.as_deref())
            .text(MOBILE, c.mobile.as_deref())
            .text(JOB_TITLE, c.job_title.as_deref())
            .text(DEPARTMENT, c.department.as_deref())
            .text(LINKEDIN, c.linkedin_url.as_deref())
            .text(PHONE_NORMALISED, phone)
            .text(MOBILE_NORMALISED, mobile);
        Rec::new(w.finish())
    }

    pub fn raw(&self) -> Contact {
        use contact::*;
        let t = self.text_fields();
        Contact {
            id: self.id(),
            name: t.string(NAME),
            email: t.string(EMAIL),
            phone: t.string(PHONE),
            mobile: t.string(MOBILE),
            job_title: t.string(JOB_TITLE),
            department: t.string(DEPARTMENT),
            company_id: self.company_id(),
            linkedin_url: t.string(LINKEDIN),
            is_main_contact: self.is_main_contact(),
            owner_id: self.owner_id(),
            created_at: self.created_at(),
            updated_at: self.updated_at(),
        }
    }
}

accessors!(Contact {
    id: uuid(contact::ID) -> Uuid;
    company_id: uuid(contact::COMPANY) -> Uuid;
    owner_id: opt_uuid(contact::OWNER) -> Option<Uuid>;
    created_at: stamp(contact::CREATED) -> Stamp;
    updated_at: stamp(contact::UPDATED) -> Stamp;
    is_main_contact: flag(contact::MAIN) -> bool;
    name: text(contact::NAME) -> Option<&str>;
    email: text(contact::EMAIL) -> Option<&str>;
    phone_as_entered: text(contact::PHONE) -> Option<&str>;
    mobile_as_entered: text(contact::MOBILE) -> Option<&str>;
    phone: text(contact::PHONE_NORMALISED) -> Option<&str>;
    mobile: text(contact::MOBILE_NORMALISED) -> Option<&str>;
});

pub mod job {
    pub const ID: u8 = 0;
    pub const COMPANY: u8 = 1;
    pub const RECRUITER: u8 = 2;
    pub const CREATED_BY: u8 = 3;
    pub const CREATED: u8 = 0;
    pub const UPDATED: u8 = 1;
    pub const ARCHIVED: u8 = 0;
    pub const CAREERS_PAGE: u8 = 1;
    pub const HAS_SALARY: u8 = 2;
    pub const TITLE: u8 = 0;
    pub const POSITION: u8 = 1;
    pub const STATUS: u8 = 2;
    pub const ROLE_STATUS: u8 = 3;
    pub const HIRING_MANAGER: u8 = 4;
    pub const SALARY_AMOUNT: u8 = 5;
    pub const SALARY_CURRENCY: u8 = 6;
    pub const SALARY_TYPE: u8 = 7;
}

impl Rec<Job> {
    pub fn pack(j: &Job) -> Arc<Self> {
        use job::*;
        let salary = j.salary.as_ref();
        let amount = salary.and_then(|s| number_text(&s.amount));
        let mut w = Writer::default();
        w.id(ID, id_bytes(Some(j.id)))
            .id(COMPANY, id_bytes(j.company_id))
            .id(RECRUITER, id_bytes(j.assigned_recruiter_id))
            .id(CREATED_BY, id_bytes(j.created_by))
            .word(CREATED, stamp_word(Some(j.created_at)))
            .word(UPDATED, stamp_word(Some(j.updated_at)))
            .flag(ARCHIVED, j.is_archived)
            .flag(CAREERS_PAGE, j.on_careers_page)
            .flag(HAS_SALARY, salary.is_some())
            .text(TITLE, j.title.as_deref())
            .text(POSITION, j.position.as_deref())
            .text(STATUS, j.status.as_deref())
            .text(ROLE_STATUS, j.role_status_id.as_deref())
            .text(HIRING_MANAGER, j.hiring_manager.as_deref())
            .text(SALARY_AMOUNT, amount.as_deref())
            .text(SALARY_CURRENCY, salary.and_then(|s| s.currency.as_deref()))
            .text(SALARY_TYPE, salary.and_then(|s| s.kind.as_deref()));
        Rec::new(w.finish())
    }

    pub fn raw(&self) -> Job {
        use job::*;
        let t = self.text_fields();
        Job {
            id: self.id(),
            title: t.string(TITLE),
            position: t.string(POSITION),
            company_id: self.company_id(),
            status: t.string(STATUS),
            role_status_id: t.string(ROLE_STATUS),
            is_archived: self.is_archived(),
            on_careers_page: self.on_careers_page(),
            salary: self.packed.flag(HAS_SALARY).then(|| JobSalary {
                amount: t.number(SALARY_AMOUNT),
                currency: t.string(SALARY_CURRENCY),
                kind: t.string(SALARY_TYPE),
            }),
            assigned_recruiter_id: self.assigned_recruiter_id(),
            created_by: self.created_by(),
            hiring_manager: t.string(HIRING_MANAGER),
            created_at: self.created_at(),
            updated_at: self.updated_at(),
        }
    }
}

accessors!(Job {
    id: uuid(job::ID) -> Uuid;
    company_id: opt_uuid(job::COMPANY) -> Option<Uuid>;
    assigned_recruiter_id: opt_uuid(job::RECRUITER) -> Option<Uuid>;
    created_by: opt_uuid(job::CREATED_BY) -> Option<Uuid>;
    created_at: stamp(job::CREATED) -> Stamp;
    updated_at: stamp(job::UPDATED) -> Stamp;
    is_archived: flag(job::ARCHIVED) -> bool;
    on_careers_page: flag(job::CAREERS_PAGE) -> bool;
    title: text(job::TITLE) -> Option<&str>;
});

pub mod candidate {
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
        use candidate::*;
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

    pub fn outcome(&self) -> Option<Outcome> {
        self.packed.byte(candidate::OUTCOME).map(|b| match b {
            0 => Outcome::Placed,
            _ => Outcome::Rejected,
        })
    }

    pub fn is_primary(&self) -> bool {
        self.job_id().is_none()
    }

    pub fn raw(&self) -> Candidate {
        use candidate::*;
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
            salary: self.packed.flag(HAS_SALARY).then(|| CandidateSalary {
                current_amount: t.number(CURRENT_AMOUNT),
                current_currency: t.string(CURRENT_CURRENCY),
                current_text: t.string(CURRENT_TEXT),
                expected_amount: t.number(EXPECTED_AMOUNT),
                expected_currency: t.string(EXPECTED_CURRENCY),
                expected_text: t.string(EXPECTED_TEXT),
            }),
            consent: self.packed.flag(HAS_CONSENT).then(|| Consent {
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
    id: uuid(candidate::ID) -> Uuid;
    person_id: uuid(candidate::PERSON) -> Uuid;
    job_id: opt_uuid(candidate::JOB) -> Option<Uuid>;
    stage_id: opt_uuid(candidate::STAGE) -> Option<Uuid>;
    owner_id: opt_uuid(candidate::OWNER) -> Option<Uuid>;
    created_at: stamp(candidate::CREATED) -> Stamp;
    updated_at: stamp(candidate::UPDATED) -> Stamp;
    rejected_at: opt_stamp(candidate::REJECTED) -> Option<Stamp>;
    name: text(candidate::NAME) -> Option<&str>;
    email: text(candidate::EMAIL) -> Option<&str>;
    phone_as_entered: text(candidate::PHONE) -> Option<&str>;
    mobile_as_entered: text(candidate::MOBILE) -> Option<&str>;
    phone: text(candidate::PHONE_NORMALISED) -> Option<&str>;
    mobile: text(candidate::MOBILE_NORMALISED) -> Option<&str>;
    job_title: text(candidate::JOB_TITLE) -> Option<&str>;
    company: text(candidate::COMPANY) -> Option<&str>;
    location: text(candidate::LOCATION) -> Option<&str>;
    linkedin_url: text(candidate::LINKEDIN) -> Option<&str>;
    current_amount: text(candidate::CURRENT_AMOUNT) -> Option<&str>;
    current_currency: text(candidate::CURRENT_CURRENCY) -> Option<&str>;
    current_text: text(candidate::CURRENT_TEXT) -> Option<&str>;
    expected_amount: text(candidate::EXPECTED_AMOUNT) -> Option<&str>;
    expected_currency: text(candidate::EXPECTED_CURRENCY) -> Option<&str>;
    expected_text: text(candidate::EXPECTED_TEXT) -> Option<&str>;
    consent_status: text(candidate::CONSENT_STATUS) -> Option<&str>;
    consent_given_at: opt_stamp(candidate::CONSENT_GIVEN) -> Option<Stamp>;
    consent_requested_at: opt_stamp(candidate::CONSENT_REQUESTED) -> Option<Stamp>;
    consent_expires_at: opt_stamp(candidate::CONSENT_EXPIRES) -> Option<Stamp>;
});

fn parent_code(p: ParentType) -> u8 {
    match p {
        ParentType::Candidate => 0,
        ParentType::Contact => 1,
        ParentType::Company => 2,
        ParentType::Job => 3,
    }
}

fn parent_of(code: Option<u8>) -> ParentType {
    match code {
        Some(0) => ParentType::Candidate,
        Some(1) => ParentType::Contact,
        Some(2) => ParentType::Company,
        _ => ParentType::Job,
    }
}

pub mod note {
    pub const ID: u8 = 0;
    pub const PARENT: u8 = 1;
    pub const AUTHOR: u8 = 2;
    pub const JOB: u8 = 3;
    pub const COMPANY: u8 = 4;
    pub const CREATED: u8 = 0;
    pub const UPDATED: u8 = 1;
    pub const PARENT_TYPE: u8 = 0;
    pub const PRIVATE: u8 = 0;
    pub const TITLE: u8 = 0;
    pub const BODY: u8 = 1;
    pub const LABEL: u8 = 2;
    pub const REFERENCE: u8 = 3;
    pub const REFERENCE_KEY: u8 = 4;
}

impl Rec<Note> {
    pub fn pack(n: &Note) -> Arc<Self> {
        use note::*;
        let mut w = Writer::default();
        w.id(ID, id_bytes(Some(n.id)))
            .id(PARENT, id_bytes(Some(n.parent_id)))
            .id(AUTHOR, id_bytes(n.author_id))
            .id(JOB, id_bytes(n.job_id))
            .id(COMPANY, id_bytes(n.company_id))
            .word(CREATED, stamp_word(Some(n.created_at)))
            .word(UPDATED, stamp_word(Some(n.updated_at)))
            .byte(PARENT_TYPE, Some(parent_code(n.parent_type)))
            .flag(PRIVATE, n.is_private)
            .text(TITLE, n.title.as_deref())
            .text(BODY, n.body_html.as_deref())
            .text(LABEL, n.label.as_deref())
            .text(REFERENCE, n.reference.as_deref())
            .text(REFERENCE_KEY, n.reference_key.as_deref());
        Rec::new(w.finish())
    }

    pub fn parent_type(&self) -> ParentType {
        parent_of(self.packed.byte(note::PARENT_TYPE))
    }

    pub fn raw(&self) -> Note {
        use note::*;
        let t = self.text_fields();
        Note {
            id: self.id(),
            parent_type: self.parent_type(),
            parent_id: self.parent_id(),
            title: t.string(TITLE),
            body_html: t.string(BODY),
            label: t.string(LABEL),
            is_private: self.is_private(),
            author_id: self.author_id(),
            job_id: self.job_id(),
            company_id: self.company_id(),
            reference: t.string(REFERENCE),
            reference_key: t.string(REFERENCE_KEY),
            created_at: self.created_at(),
            updated_at: self.updated_at(),
        }
    }
}

accessors!(Note {
    id: uuid(note::ID) -> Uuid;
    parent_id: uuid(note::PARENT) -> Uuid;
    author_id: opt_uuid(note::AUTHOR) -> Option<Uuid>;
    job_id: opt_uuid(note::JOB) -> Option<Uuid>;
    company_id: opt_uuid(note::COMPANY) -> Option<Uuid>;
    created_at: stamp(note::CREATED) -> Stamp;
    updated_at: stamp(note::UPDATED) -> Stamp;
    is_private: flag(note::PRIVATE) -> bool;
    reference: text(note::REFERENCE) -> Option<&str>;
    reference_key: text(note::REFERENCE_KEY) -> Option<&str>;
    title: text(note::TITLE) -> Option<&str>;
    body_html: text(note::BODY) -> Option<&str>;
    label: text(note::LABEL) -> Option<&str>;
});

pub mod task {
    pub const ID: u8 = 0;
    pub const PARENT: u8 = 1;
    pub const OWNER: u8 = 2;
    pub const PLACEMENT: u8 = 3;
    pub const CREATED: u8 = 0;
    pub const UPDATED: u8 = 1;
    pub const COMPLETED: u8 = 2;
    pub const PARENT_TYPE: u8 = 0;
    pub const STATUS: u8 = 1;
    pub const PRIVATE: u8 = 0;
    pub const TITLE: u8 = 0;
    pub const BODY: u8 = 1;
    pub const DUE: u8 = 2;
    pub const REFERENCE: u8 = 3;
    pub const REFERENCE_KEY: u8 = 4;
}

fn task_status_code(s: TaskStatus) -> u8 {
    match s {
        TaskStatus::Open => 0,
        TaskStatus::Completed => 1,
        TaskStatus::Cancelled => 2,
    }
}

impl Rec<Task> {
    pub fn pack(t: &Task) -> Arc<Self> {
        use task::*;
        let due = t.due_date.map(|d| d.to_string());
        let mut w = Writer::default();
        w.id(ID, id_bytes(Some(t.id)))
            .id(PARENT, id_bytes(Some(t.parent_id)))
            .id(OWNER, id_bytes(t.owner_id))
            .id(PLACEMENT, id_bytes(t.placement_row_id))
            .word(CREATED, stamp_word(Some(t.created_at)))
            .word(UPDATED, stamp_word(Some(t.updated_at)))
            .word(COMPLETED, stamp_word(t.completed_at))
            .byte(PARENT_TYPE, Some(parent_code(t.parent_type)))
            .byte(STATUS, Some(task_status_code(t.status)))
            .flag(PRIVATE, t.is_private)
            .text(TITLE, t.title.as_deref())
            .text(BODY, t.body_html.as_deref())
            .text(DUE, due.as_deref())
            .text(REFERENCE, t.reference.as_deref())
            .text(REFERENCE_KEY, t.reference_key.as_deref());
        Rec::new(w.finish())
    }

    pub fn parent_type(&self) -> ParentType {
        parent_of(self.packed.byte(task::PARENT_TYPE))
    }

    pub fn status(&self) -> TaskStatus {
        match self.packed.byte(task::STATUS) {
            Some(0) => TaskStatus::Open,
            Some(1) => TaskStatus::Completed,
            _ => TaskStatus::Cancelled,
        }
    }

    pub fn due_date(&self) -> Option<Date> {
        self.packed
            .text(task::DUE)
            .map(|d| Date::parse(d).expect("dates are kept as YYYY-MM-DD"))
    }

    pub fn raw(&self) -> Task {
        use task::*;
        let t = self.text_fields();
        Task {
            id: self.id(),
            parent_type: self.parent_type(),
            parent_id: self.parent_id(),
            title: t.string(TITLE),
            body_html: t.string(BODY),
            status: self.status(),
            due_date: self.due_date(),
            owner_id: self.owner_id(),
            completed_at: self.completed_at(),
            is_private: self.is_private(),
            placement_row_id: self.placement_row_id(),
            reference: t.string(REFERENCE),
            reference_key: t.string(REFERENCE_KEY),
            created_at: self.created_at(),
            updated_at: self.updated_at(),
        }
    }
}

accessors!(Task {
    id: uuid(task::ID) -> Uuid;
    parent_id: uuid(task::PARENT) -> Uuid;
    owner_id: opt_uuid(task::OWNER) -> Option<Uuid>;
    placement_row_id: opt_uuid(task::PLACEMENT) -> Option<Uuid>;
    created_at: stamp(task::CREATED) -> Stamp;
    updated_at: stamp(task::UPDATED) -> Stamp;
    completed_at: opt_stamp(task::COMPLETED) -> Option<Stamp>;
    is_private: flag(task::PRIVATE) -> bool;
    reference: text(task::REFERENCE) -> Option<&str>;
    reference_key: text(task::REFERENCE_KEY) -> Option<&str>;
});

pub mod attachment {
    /// Id 0 stays empty: an attachment's key is its id text, and [`super::Rec::key`]
    /// tells the two apart by it.
    pub const PARENT: u8 = 1;
    pub const CREATED: u8 = 0;
    pub const UPDATED: u8 = 1;
    pub const SIZE: u8 = 2;
    pub const PARENT_TYPE: u8 = 0;
    pub const KIND: u8 = 1;
    pub const HAS_CONTENT: u8 = 0;
    pub const ID: u8 = 0;
    pub const FILENAME: u8 = 1;
    pub const CONTENT_TYPE: u8 = 2;
    pub const STORAGE_REF: u8 = 3;
}

fn attachment_kind_code(k: AttachmentKind) -> u8 {
    match k {
        AttachmentKind::Cv => 0,
        AttachmentKind::GeneratedCv => 1,
        AttachmentKind::Document => 2,
    }
}

impl Rec<Attachment> {
    pub fn pack(a: &Attachment) -> Arc<Self> {
        use attachment::*;
        let mut w = Writer::default();
        w.id(PARENT, id_bytes(Some(a.parent_id)))
            .word(CREATED, stamp_word(Some(a.created_at)))
            .word(UPDATED, stamp_word(Some(a.updated_at)))
            .word(SIZE, a.size)
            .byte(PARENT_TYPE, Some(parent_code(a.parent_type)))
            .byte(KIND, Some(attachment_kind_code(a.kind)))
            .flag(HAS_CONTENT, a.has_content)
            .text(ID, Some(&a.id))
            .text(FILENAME, a.filename.as_deref())
            .text(CONTENT_TYPE, a.content_type.as_deref())
            .text(STORAGE_REF, a.storage_ref.as_deref());
        Rec::new(w.finish())
    }

    pub fn id(&self) -> &str {
        self.packed
            .text(attachment::ID)
            .expect("an attachment has an id")
    }

    pub fn parent_type(&self) -> ParentType {
        parent_of(self.packed.byte(attachment::PARENT_TYPE))
    }

    pub fn kind(&self) -> AttachmentKind {
        match self.packed.byte(attachment::KIND) {
            Some(0) => AttachmentKind::Cv,
            Some(1) => AttachmentKind::GeneratedCv,
            _ => AttachmentKind::Document,
        }
    }

    pub fn size(&self) -> Option<u64> {
        self.packed.word(attachment::SIZE)
    }

    /// A `cv` of a candidate row, which takes the row's timestamps.
    pub fn is_candidate_cv(&self) -> bool {
        self.kind() == AttachmentKind::Cv && self.parent_type() == ParentType::Candidate
    }

    pub fn raw(&self) -> Attachment {
        use attachment::*;
        let t = self.text_fields();
        Attachment {
            id: self.id().to_string(),
            parent_type: self.parent_type(),
            parent_id: self.parent_id(),
            filename: t.string(FILENAME),
            content_type: t.string(CONTENT_TYPE),
            size: self.size(),
            kind: self.kind(),
            storage_ref: t.string(STORAGE_REF),
            has_content: self.has_content(),
            created_at: self.created_at(),
            updated_at: self.updated_at(),
        }
    }
}

accessors!(Attachment {
    parent_id: uuid(attachment::PARENT) -> Uuid;
    created_at: stamp(attachment::CREATED) -> Stamp;
    updated_at: stamp(attachment::UPDATED) -> Stamp;
    has_content: flag(attachment::HAS_CONTENT) -> bool;
    filename: text(attachment::FILENAME) -> Option<&str>;
    content_type: text(attachment::CONTENT_TYPE) -> Option<&str>;
    storage_ref: text(attachment::STORAGE_REF) -> Option<&str>;
});

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::parse_slice;

    /// Every record of the worked example, packed and unpacked, is itself again; its key
    /// is its id.
    #[test]
    fn every_example_record_round_trips() {
        let snap = parse_slice(include_bytes!(
            "../../../tests/fixtures/snapshot-small.json"
        ))
        .expect("the example parses");
        let mut seen = 0;
        for u in snap.users.iter().filter_map(crate::snapshot::Entry::upsert) {
            let r = Rec::<User>::pack(u);
            assert_eq!(&r.raw(), u);
            assert_eq!(r.key(), u.id.as_bytes());
            seen += 1;
        }
        for s in snap
            .pipeline_stages
            .iter()
            .filter_map(crate::snapshot::Entry::upsert)
        {
            assert_eq!(&Rec::<PipelineStage>::pack(s).raw(), s);
            seen += 1;
        }
        for c in snap
            .companies
            .iter()
            .filter_map(crate::snapshot::Entry::upsert)
        {
            assert_eq!(&Rec::<Company>::pack(c).raw(), c);
            seen += 1;
        }
        for c in snap
            .contacts
            .iter()
            .filter_map(crate::snapshot::Entry::upsert)
        {
            let r = Rec::<Contact>::pack(c, Some("+1"), None);
            assert_eq!(&r.raw(), c);
            assert_eq!((r.phone(), r.mobile()), (Some("+1"), None));
            seen += 1;
        }
        for j in snap.jobs.iter().filter_map(crate::snapshot::Entry::upsert) {
            assert_eq!(&Rec::<Job>::pack(j).raw(), j);
            seen += 1;
        }
        for c in snap
            .candidates
            .iter()
            .filter_map(crate::snapshot::Entry::upsert)
        {
            let c = &c.raw();
            let r = Rec::<Candidate>::pack(c, None, Some("+44"));
            assert_eq!(&r.raw(), c);
            assert_eq!(r.key(), c.id.as_bytes());
            assert_eq!((r.phone(), r.mobile()), (None, Some("+44")));
            seen += 1;
        }
        for n in snap.notes.iter().filter_map(crate::snapshot::Entry::upsert) {
            let n = &n.raw();
            assert_eq!(&Rec::<Note>::pack(n).raw(), n);
            seen += 1;
        }
        for t in snap.tasks.iter().filter_map(crate::snapshot::Entry::upsert) {
            assert_eq!(&Rec::<Task>::pack(t).raw(), t);
            seen += 1;
        }
        for a in snap
            .attachments
            .iter()
            .filter_map(crate::snapshot::Entry::upsert)
        {
            let a = a.rec.raw();
            let r = Rec::<Attachment>::pack(&a);
            assert_eq!(r.raw(), a);
            assert_eq!(r.key(), a.id.as_bytes());
            seen += 1;
        }
        assert_eq!(seen, 15, "every record of the example was checked");
    }

    #[test]
    fn optional_objects_and_numbers_survive_exactly() {
        let mut c = Candidate {
            id: Uuid::from_u128(1),
            person_id: Uuid::from_u128(2),
            job_id: None,
            name: Some("Zoë \"Z\" O'Neil\n".into()),
            email: None,
            phone: None,
            mobile: None,
            job_title: None,
            company: None,
            location: None,
            linkedin_url: None,
            stage_id: None,
            outcome: Some(Outcome::Rejected),
            rejected_at: Some(Stamp::from_millis(-5)),
            owner_id: None,
            salary: Some(CandidateSalary::default()),
            consent: None,
            created_at: Stamp::from_millis(0),
            updated_at: Stamp::from_millis(1),
        };
        assert_eq!(Rec::<Candidate>::pack(&c, None, None).raw(), c);
        c.salary = Some(CandidateSalary {
            current_amount: Some(serde_json::from_str("55000.5").unwrap()),
            expected_amount: Some(serde_json::from_str("-12").unwrap()),
            expected_currency: Some(String::new()),
            ..CandidateSalary::default()
        });
        c.consent = Some(Consent::default());
        assert_eq!(Rec::<Candidate>::pack(&c, None, None).raw(), c);
        let a = Attachment {
            id: "cv:abc".into(),
            parent_type: ParentType::Candidate,
            parent_id: Uuid::from_u128(1),
            filename: None,
            content_type: None,
            size: Some(0),
            kind: AttachmentKind::Cv,
            storage_ref: None,
            has_content: true,
            created_at: Stamp::from_millis(3),
            updated_at: Stamp::from_millis(4),
        };
        let r = Rec::<Attachment>::pack(&a);
        assert_eq!(r.raw(), a);
        assert_eq!(r.key(), b"cv:abc");
        assert!(r.is_candidate_cv());
    }
}
