//! Attachments: files of candidates and companies, keyed by a `<kind>:<identifier>` id
//! text rather than a UUID. A candidate's `cv` shows its row's timestamps.

use super::shared::{field, ApiField, ParentType, Shape::*, Surroundings, View};
use crate::packed::rec::{accessors, id_bytes, stamp_word, Rec};
use crate::packed::Writer;
use crate::rendered::{prefetch_packed, Obj, Rendered};
use crate::time::{reported_updated_at, Stamp};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use uuid::Uuid;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttachmentKind {
    Cv,
    GeneratedCv,
    Document,
}

/// The four attachment id prefixes.
pub const ATTACHMENT_PREFIXES: [&str; 4] = ["cv", "file", "cvdoc", "clientfile"];

/// Splits `<kind>:<identifier>`; `None` unless the prefix is one of the four and the
/// identifier is non-empty.
pub fn split_attachment_id(id: &str) -> Option<(&str, &str)> {
    let (prefix, rest) = id.split_once(':')?;
    (ATTACHMENT_PREFIXES.contains(&prefix) && !rest.is_empty()).then_some((prefix, rest))
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Attachment {
    pub id: String,
    pub parent_type: ParentType,
    pub parent_id: Uuid,
    pub filename: Option<String>,
    pub content_type: Option<String>,
    pub size: Option<u64>,
    pub kind: AttachmentKind,
    pub storage_ref: Option<String>,
    /// Whether the file's bytes reached the blob store. Set by the import (a snapshot
    /// carries `content_base64` instead, see `snapshot::AttachmentIn`).
    #[serde(default)]
    pub has_content: bool,
    pub created_at: Stamp,
    pub updated_at: Stamp,
}

/// An attachment's record, packed.
pub type AttachmentRec = Rec<Attachment>;

/// Where each field sits in the packed layout: its class (ids, words, bytes, flags,
/// texts) and its index within it.
pub(crate) mod layout {
    /// Id 0 stays empty: an attachment's key is its id text, and [`super::Rec::key`]
    /// tells the two apart by it.
    pub const PARENT: u8 = 1;
    pub const CREATED: u8 = 0;
    pub const UPDATED: u8 = 1;
    pub const SIZE: u8 = 2;
    pub const PARENT_TYPE: u8 = 0;
    pub const KIND: u8 = 1;
    pub const HAS_CONTENT: u8 = 0;
    pub const ID: u8 = crate::packed::rec::ATTACHMENT_ID;
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
        use layout::*;
        let mut w = Writer::default();
        w.id(PARENT, id_bytes(Some(a.parent_id)))
            .word(CREATED, stamp_word(Some(a.created_at)))
            .word(UPDATED, stamp_word(Some(a.updated_at)))
            .word(SIZE, a.size)
            .byte(PARENT_TYPE, Some(a.parent_type.code()))
            .byte(KIND, Some(attachment_kind_code(a.kind)))
            .flag(HAS_CONTENT, a.has_content)
            .text(ID, Some(&a.id))
            .text(FILENAME, a.filename.as_deref())
            .text(CONTENT_TYPE, a.content_type.as_deref())
            .text(STORAGE_REF, a.storage_ref.as_deref());
        Rec::new(w.finish())
    }

    pub fn id(&self) -> &str {
        self.packed()
            .text(layout::ID)
            .expect("an attachment has an id")
    }

    pub fn parent_type(&self) -> ParentType {
        ParentType::from_code(self.packed().byte(layout::PARENT_TYPE))
    }

    pub fn kind(&self) -> AttachmentKind {
        match self.packed().byte(layout::KIND) {
            Some(0) => AttachmentKind::Cv,
            Some(1) => AttachmentKind::GeneratedCv,
            _ => AttachmentKind::Document,
        }
    }

    pub fn size(&self) -> Option<u64> {
        self.packed().word(layout::SIZE)
    }

    /// A `cv` of a candidate row, which takes the row's timestamps.
    pub fn is_candidate_cv(&self) -> bool {
        self.kind() == AttachmentKind::Cv && self.parent_type() == ParentType::Candidate
    }

    /// `(created_at, updated_at)` as stored, and the attachment's place in the sync
    /// order: a candidate's cv takes its row's.
    pub fn times_in<W: Surroundings + ?Sized>(&self, ws: &W) -> (Stamp, Stamp) {
        if self.is_candidate_cv() {
            if let Some(times) = ws.candidate_row_times(self.parent_id()) {
                return times;
            }
        }
        (self.created_at(), self.updated_at())
    }

    /// `created_at` and `updated_at` as the API shows them.
    pub fn timestamps_in<W: Surroundings + ?Sized>(&self, ws: &W) -> (Stamp, Stamp) {
        let (c, u) = self.times_in(ws);
        (c, reported_updated_at(c, u))
    }

    pub fn raw(&self) -> Attachment {
        use layout::*;
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
    parent_id: uuid(layout::PARENT) -> Uuid;
    created_at: stamp(layout::CREATED) -> Stamp;
    updated_at: stamp(layout::UPDATED) -> Stamp;
    has_content: flag(layout::HAS_CONTENT) -> bool;
    filename: text(layout::FILENAME) -> Option<&str>;
    content_type: text(layout::CONTENT_TYPE) -> Option<&str>;
    storage_ref: text(layout::STORAGE_REF) -> Option<&str>;
});

/// The members of an attachment as the API shows it, in order.
#[rustfmt::skip]
pub const API_FIELDS: &[ApiField] = &[
    field("id", AttachmentId, "`<kind>:<identifier>` with prefix one of `cv:`, `file:`, `cvdoc:`, `clientfile:`."),
    field("parent_type", Extensible { values: &["candidate", "company"], nullable: false }, ""),
    field("parent_id", Text, ""),
    field("filename", NullableText, "Display name, not unique within a parent."),
    field("content_type", NullableText, "MIME type; null if never recorded."),
    field("size", NullableCount, "Bytes; null if unknown."),
    field("kind", Extensible { values: &["cv", "generated_cv", "document"], nullable: false }, ""),
    field("storage_ref", NullableText, "Bucket/path-style identifier for diagnostics; not a URL, no credentials."),
    field("created_at", Stamp, ""),
    field("updated_at", Stamp, "Never null."),
];

impl<W: Surroundings> Rendered for View<'_, W, AttachmentRec> {
    fn prefetch(&self) {
        prefetch_packed(self.rec.packed().bytes());
    }

    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        use layout as f;
        let (ws, a) = (self.ws, self.rec);
        let (created_at, updated_at) = a.times_in(ws);
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
            .times(created_at, updated_at);
        o.end();
        Ok(())
    }
}

// The serde copy of the view (see `rendered`).
#[cfg(any(test, feature = "oracle"))]
mod oracle {
    use super::*;
    use serde::Serializer;

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

    impl<W: Surroundings> Serialize for View<'_, W, AttachmentRec> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let (ws, a) = (self.ws, self.rec);
            let (created_at, updated_at) = a.timestamps_in(ws);
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
}
