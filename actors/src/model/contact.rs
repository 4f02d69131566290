//! Contacts: people at client companies, kept with their numbers normalised once (as the
//! API shows them and phone search finds them).

use super::shared::{field, ApiField, Shape::*, Surroundings, View, OWNER_STORED};
use crate::packed::rec::{accessors, id_bytes, stamp_word, Rec};
use crate::packed::Writer;
use crate::rendered::{Obj, Rendered};
use crate::time::Stamp;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use uuid::Uuid;

/// The fields `PATCH /v1/contacts/{id}` takes (`records:write`).
pub const PATCH_FIELDS: &[&str] = &[
    "name",
    "email",
    "phone",
    "company_id",
    "owning_recruiter_id",
];

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Contact {
    pub id: Uuid,
    pub name: Option<String>,
    pub email: Option<String>,
    pub phone: Option<String>,
    pub mobile: Option<String>,
    pub job_title: Option<String>,
    pub department: Option<String>,
    pub company_id: Uuid,
    pub linkedin_url: Option<String>,
    #[serde(default)]
    pub is_main_contact: bool,
    pub owner_id: Option<Uuid>,
    pub created_at: Stamp,
    pub updated_at: Stamp,
}

/// A contact with its numbers normalised once.
#[derive(Clone, Debug)]
pub struct ContactRec {
    pub raw: Contact,
    pub phone: Option<Box<str>>,
    pub mobile: Option<Box<str>>,
}

/// Where each field sits in the packed layout: its class (ids, words, bytes, flags,
/// texts) and its index within it.
pub(crate) mod layout {
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
        use layout::*;
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
        use layout::*;
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
    id: uuid(layout::ID) -> Uuid;
    company_id: uuid(layout::COMPANY) -> Uuid;
    owner_id: opt_uuid(layout::OWNER) -> Option<Uuid>;
    created_at: stamp(layout::CREATED) -> Stamp;
    updated_at: stamp(layout::UPDATED) -> Stamp;
    is_main_contact: flag(layout::MAIN) -> bool;
    name: text(layout::NAME) -> Option<&str>;
    email: text(layout::EMAIL) -> Option<&str>;
    phone_as_entered: text(layout::PHONE) -> Option<&str>;
    mobile_as_entered: text(layout::MOBILE) -> Option<&str>;
    phone: text(layout::PHONE_NORMALISED) -> Option<&str>;
    mobile: text(layout::MOBILE_NORMALISED) -> Option<&str>;
});

/// The members of a contact as the API shows it, in order.
#[rustfmt::skip]
pub const API_FIELDS: &[ApiField] = &[
    field("id", Text, ""),
    field("name", NullableText, ""),
    field("emails", Emails, "Zero or one entry."),
    field("phone", NullableText, "Normalised."),
    field("phone_as_entered", NullableText, ""),
    field("mobile", NullableText, "Second number when held, else null; searched by phone search (always null before 2026-08-26)."),
    field("job_title", NullableText, ""),
    field("department", NullableText, ""),
    field("company_id", Text, "`companies.id`; never null."),
    field("company", NullableText, "Company name, denormalised."),
    field("linkedin_url", NullableText, ""),
    field("is_main_contact", NullableBool, "Primary contact of that company."),
    field("owning_recruiter_id", NullableText, OWNER_STORED),
    field("created_at", Stamp, ""),
    field("updated_at", Stamp, "Never null."),
];

impl<W: Surroundings> Rendered for View<'_, W, ContactRec> {
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
            .str("company", ws.company_name(c.company_id))
            .str("linkedin_url", c.linkedin_url.as_deref())
            .bool("is_main_contact", c.is_main_contact)
            .uuid("owning_recruiter_id", c.owner_id)
            .times(c.created_at, c.updated_at);
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

    impl<W: Surroundings> Serialize for View<'_, W, ContactRec> {
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
                company: ws.company_name(c.company_id),
                linkedin_url: c.linkedin_url.as_deref(),
                is_main_contact: c.is_main_contact,
                owning_recruiter_id: c.owner_id.as_ref(),
                created_at: c.created_at,
                updated_at: reported_updated_at(c.created_at, c.updated_at),
            }
            .serialize(s)
        }
    }
}
