//! Tasks on candidates, contacts and companies.

use super::shared::{field, ApiField, ParentType, Shape::*, Surroundings, View};
use crate::packed::rec::{accessors, id_bytes, stamp_word, Rec};
use crate::packed::Writer;
use crate::rendered::{prefetch_texts, Obj, Rendered};
use crate::time::{Date, Stamp};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use uuid::Uuid;

/// The fields `PATCH /v1/tasks/{id}` takes (`tasks:write`).
pub const PATCH_FIELDS: &[&str] = &[
    "title",
    "body_html",
    "due_date",
    "owner_email",
    "is_private",
    "status",
];

/// The fields `POST /v1/tasks` takes (`tasks:write`).
pub const NEW_FIELDS: &[&str] = &[
    "parent_type",
    "parent_id",
    "title",
    "body_html",
    "due_date",
    "owner_email",
    "is_private",
    "reference",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskStatus {
    Open,
    Completed,
    Cancelled,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Task {
    pub id: Uuid,
    pub parent_type: ParentType,
    pub parent_id: Uuid,
    pub title: Option<String>,
    pub body_html: Option<String>,
    pub status: TaskStatus,
    pub due_date: Option<Date>,
    pub owner_id: Option<Uuid>,
    pub completed_at: Option<Stamp>,
    #[serde(default)]
    pub is_private: bool,
    pub placement_row_id: Option<Uuid>,
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

/// Where each field sits in the packed layout: its class (ids, words, bytes, flags,
/// texts) and its index within it.
pub(crate) mod layout {
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
        use layout::*;
        let due = t.due_date.map(|d| d.to_string());
        let mut w = Writer::default();
        w.id(ID, id_bytes(Some(t.id)))
            .id(PARENT, id_bytes(Some(t.parent_id)))
            .id(OWNER, id_bytes(t.owner_id))
            .id(PLACEMENT, id_bytes(t.placement_row_id))
            .word(CREATED, stamp_word(Some(t.created_at)))
            .word(UPDATED, stamp_word(Some(t.updated_at)))
            .word(COMPLETED, stamp_word(t.completed_at))
            .byte(PARENT_TYPE, Some(t.parent_type.code()))
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
        ParentType::from_code(self.packed().byte(layout::PARENT_TYPE))
    }

    pub fn status(&self) -> TaskStatus {
        match self.packed().byte(layout::STATUS) {
            Some(0) => TaskStatus::Open,
            Some(1) => TaskStatus::Completed,
            _ => TaskStatus::Cancelled,
        }
    }

    pub fn due_date(&self) -> Option<Date> {
        self.packed()
            .text(layout::DUE)
            .map(|d| Date::parse(d).expect("dates are kept as YYYY-MM-DD"))
    }

    pub fn raw(&self) -> Task {
        use layout::*;
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
    id: uuid(layout::ID) -> Uuid;
    parent_id: uuid(layout::PARENT) -> Uuid;
    owner_id: opt_uuid(layout::OWNER) -> Option<Uuid>;
    placement_row_id: opt_uuid(layout::PLACEMENT) -> Option<Uuid>;
    created_at: stamp(layout::CREATED) -> Stamp;
    updated_at: stamp(layout::UPDATED) -> Stamp;
    completed_at: opt_stamp(layout::COMPLETED) -> Option<Stamp>;
    is_private: flag(layout::PRIVATE) -> bool;
    reference: text(layout::REFERENCE) -> Option<&str>;
    reference_key: text(layout::REFERENCE_KEY) -> Option<&str>;
});

/// The members of a task as the API shows it, in order.
#[rustfmt::skip]
pub const API_FIELDS: &[ApiField] = &[
    field("id", Text, ""),
    field("parent_type", Extensible { values: &["candidate", "contact", "company"], nullable: false }, "Never job."),
    field("parent_id", Text, ""),
    field("title", NullableText, ""),
    field("body_html", NullableText, "HTML."),
    field("status", Extensible { values: &["open", "completed", "cancelled"], nullable: false }, "`cancelled` is set by the service when the placement the task reminded of is undone; treated as closed."),
    field("due_date", NullableDate, "`YYYY-MM-DD`."),
    field("owner_id", NullableText, "`users.id` assignee."),
    field("completed_at", NullableStamp, "Null while outstanding; stays null when cancelled."),
    field("is_private", False, "Private tasks are never returned."),
    field("created_at", Stamp, ""),
    field("updated_at", Stamp, "Never null."),
];

impl<W: Surroundings> Rendered for View<'_, W, Task> {
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
            .times(t.created_at, t.updated_at);
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

    impl<W: Surroundings> Serialize for View<'_, W, Task> {
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
}
