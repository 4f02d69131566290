//! Notes on candidates, contacts, companies and jobs.

use super::shared::{field, sometimes, ApiField, ParentType, Shape::*, Surroundings, View};
use crate::packed::rec::{accessors, id_bytes, stamp_word, Rec};
use crate::packed::Writer;
use crate::rendered::{prefetch_packed, Obj, Rendered};
use crate::time::Stamp;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use uuid::Uuid;

/// The fields `PATCH /v1/notes/{id}` takes (`notes:write`).
pub const PATCH_FIELDS: &[&str] = &["body_html", "title", "type", "is_private"];

/// The fields `POST /v1/notes` takes (`notes:write`).
pub const NEW_FIELDS: &[&str] = &[
    "parent_type",
    "parent_id",
    "body_html",
    "title",
    "type",
    "author_email",
    "is_private",
    "reference",
];

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Note {
    pub id: Uuid,
    pub parent_type: ParentType,
    pub parent_id: Uuid,
    pub title: Option<String>,
    pub body_html: Option<String>,
    #[serde(default, rename = "type")]
    pub label: Option<String>,
    #[serde(default)]
    pub is_private: bool,
    pub author_id: Option<Uuid>,
    /// On candidate notes only (the row's job); absent means null.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_id: Option<Uuid>,
    /// On contact notes only (the contact's company when not given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub company_id: Option<Uuid>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// The API key whose `reference` this is: references are scoped per key, so that one
    /// client's reference never reaches another client's record (`None`: made by an
    /// import, reachable by no key's reference).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_key: Option<String>,
    pub created_at: Stamp,
    pub updated_at: Stamp,
}

/// A note, packed.
pub type NoteRec = Rec<Note>;

/// Where each field sits in the packed layout: its class (ids, words, bytes, flags,
/// texts) and its index within it.
pub(crate) mod layout {
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
        use layout::*;
        let mut w = Writer::default();
        w.id(ID, id_bytes(Some(n.id)))
            .id(PARENT, id_bytes(Some(n.parent_id)))
            .id(AUTHOR, id_bytes(n.author_id))
            .id(JOB, id_bytes(n.job_id))
            .id(COMPANY, id_bytes(n.company_id))
            .word(CREATED, stamp_word(Some(n.created_at)))
            .word(UPDATED, stamp_word(Some(n.updated_at)))
            .byte(PARENT_TYPE, Some(n.parent_type.code()))
            .flag(PRIVATE, n.is_private)
            .text(TITLE, n.title.as_deref())
            .text(BODY, n.body_html.as_deref())
            .text(LABEL, n.label.as_deref())
            .text(REFERENCE, n.reference.as_deref())
            .text(REFERENCE_KEY, n.reference_key.as_deref());
        Rec::new(w.finish())
    }

    pub fn parent_type(&self) -> ParentType {
        ParentType::from_code(self.packed().byte(layout::PARENT_TYPE))
    }

    pub fn raw(&self) -> Note {
        use layout::*;
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
    id: uuid(layout::ID) -> Uuid;
    parent_id: uuid(layout::PARENT) -> Uuid;
    author_id: opt_uuid(layout::AUTHOR) -> Option<Uuid>;
    job_id: opt_uuid(layout::JOB) -> Option<Uuid>;
    company_id: opt_uuid(layout::COMPANY) -> Option<Uuid>;
    created_at: stamp(layout::CREATED) -> Stamp;
    updated_at: stamp(layout::UPDATED) -> Stamp;
    is_private: flag(layout::PRIVATE) -> bool;
    reference: text(layout::REFERENCE) -> Option<&str>;
    reference_key: text(layout::REFERENCE_KEY) -> Option<&str>;
    title: text(layout::TITLE) -> Option<&str>;
    body_html: text(layout::BODY) -> Option<&str>;
    label: text(layout::LABEL) -> Option<&str>;
});

/// `company_id` of a contact's note: its own, else its contact's.
fn note_company<W: Surroundings + ?Sized>(ws: &W, n: &NoteRec) -> Option<Uuid> {
    n.company_id().or_else(|| ws.contact_company(n.parent_id()))
}

/// The members of a note as the API shows it, in order.
#[rustfmt::skip]
pub const API_FIELDS: &[ApiField] = &[
    field("id", Text, ""),
    field("parent_type", Extensible { values: &["candidate", "contact", "company", "job"], nullable: false }, "The kind of record the note is on."),
    field("parent_id", Text, "Id of the record in the entity named by `parent_type`."),
    field("title", NullableText, "May be empty string."),
    field("body_html", NullableText, "HTML."),
    field("type", NullableText, "Label; open per-account vocabulary (not an enumeration, may be renamed or deleted); null when unlabelled; do not branch on it."),
    field("is_private", False, "Private notes are never returned."),
    field("author_id", NullableText, "`users.id`."),
    sometimes("job_id", NullableText, "Present only when `parent_type` is `candidate`; may be null; absent (not null) otherwise."),
    sometimes("company_id", NullableText, "Present only when `parent_type` is `contact`; absent (not null) otherwise."),
    field("created_at", Stamp, ""),
    field("updated_at", Stamp, "Never null."),
];

impl<W: Surroundings> Rendered for View<'_, W, NoteRec> {
    fn prefetch(&self) {
        prefetch_packed(self.rec.packed().bytes());
    }

    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        use layout as f;
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
        o.times(n.created_at(), n.updated_at());
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

    impl<W: Surroundings> Serialize for View<'_, W, NoteRec> {
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
}
