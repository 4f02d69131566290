//! Companies: the agency's clients.

use super::shared::{field, ApiField, Shape::*, Surroundings, View, OWNER_STORED};
use crate::packed::rec::{accessors, id_bytes, stamp_word, Rec};
use crate::packed::Writer;
use crate::rendered::{Obj, Rendered};
use crate::time::Stamp;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use uuid::Uuid;

/// The fields `PATCH /v1/companies/{id}` takes (`records:write`).
pub const PATCH_FIELDS: &[&str] = &["name", "phone", "owning_recruiter_id"];

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Company {
    pub id: Uuid,
    pub name: Option<String>,
    pub phone: Option<String>,
    pub website_url: Option<String>,
    pub linkedin_url: Option<String>,
    pub status: Option<String>,
    #[serde(default)]
    pub is_archived: bool,
    pub owner_id: Option<Uuid>,
    pub created_at: Stamp,
    pub updated_at: Stamp,
}

/// Where each field sits in the packed layout: its class (ids, words, bytes, flags,
/// texts) and its index within it.
pub(crate) mod layout {
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
        use layout::*;
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
        use layout::*;
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
    id: uuid(layout::ID) -> Uuid;
    owner_id: opt_uuid(layout::OWNER) -> Option<Uuid>;
    created_at: stamp(layout::CREATED) -> Stamp;
    updated_at: stamp(layout::UPDATED) -> Stamp;
    is_archived: flag(layout::ARCHIVED) -> bool;
    name: text(layout::NAME) -> Option<&str>;
    phone: text(layout::PHONE) -> Option<&str>;
});

/// The members of a company as the API shows it, in order.
#[rustfmt::skip]
pub const API_FIELDS: &[ApiField] = &[
    field("id", Text, ""),
    field("name", NullableText, ""),
    field("phone", NullableText, "Main number; often a contact's direct number."),
    field("website_url", NullableText, ""),
    field("linkedin_url", NullableText, ""),
    field("status", NullableText, "Commercial relationship status, workspace-configurable."),
    field("is_archived", NullableBool, "Archived companies stay readable and stay in the sync stream."),
    field("owning_recruiter_id", NullableText, OWNER_STORED),
    field("created_at", Stamp, ""),
    field("updated_at", Stamp, "Never null."),
];

impl<W: Surroundings> Rendered for View<'_, W, Company> {
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
            .times(c.created_at, c.updated_at);
        o.end();
        Ok(())
    }
}

// The serde copy of the view (see `rendered`).
#[cfg(any(test, feature = "oracle"))]
mod oracle {
    use super::*;
    use crate::time::reported_updated_at;
    use serde::Serializer;

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

    impl<W: Surroundings> Serialize for View<'_, W, Company> {
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
}
