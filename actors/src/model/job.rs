//! Jobs: the roles the agency fills for its clients.

use super::shared::{field, ApiField, Shape::*, Surroundings, View};
use crate::packed::rec::{accessors, id_bytes, number_text, stamp_word, Rec};
use crate::packed::Writer;
use crate::rendered::{Obj, Rendered};
use crate::time::Stamp;
use serde::{Deserialize, Serialize};
use serde_json::Number;
use std::sync::Arc;
use uuid::Uuid;

/// The fields `PATCH /v1/jobs/{id}` takes (`records:write`).
pub const PATCH_FIELDS: &[&str] = &[
    "title",
    "salary_amount",
    "salary_currency",
    "company_id",
    "live",
    "owning_recruiter_id",
];

#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobSalary {
    pub amount: Option<Number>,
    pub currency: Option<String>,
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Job {
    pub id: Uuid,
    pub title: Option<String>,
    pub position: Option<String>,
    pub company_id: Option<Uuid>,
    pub status: Option<String>,
    pub role_status_id: Option<String>,
    #[serde(default)]
    pub is_archived: bool,
    #[serde(default)]
    pub on_careers_page: bool,
    pub salary: Option<JobSalary>,
    pub assigned_recruiter_id: Option<Uuid>,
    pub created_by: Option<Uuid>,
    pub hiring_manager: Option<String>,
    pub created_at: Stamp,
    pub updated_at: Stamp,
}

/// Where each field sits in the packed layout: its class (ids, words, bytes, flags,
/// texts) and its index within it.
pub(crate) mod layout {
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
        use layout::*;
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
        use layout::*;
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
            salary: self.packed().flag(HAS_SALARY).then(|| JobSalary {
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
    id: uuid(layout::ID) -> Uuid;
    company_id: opt_uuid(layout::COMPANY) -> Option<Uuid>;
    assigned_recruiter_id: opt_uuid(layout::RECRUITER) -> Option<Uuid>;
    created_by: opt_uuid(layout::CREATED_BY) -> Option<Uuid>;
    created_at: stamp(layout::CREATED) -> Stamp;
    updated_at: stamp(layout::UPDATED) -> Stamp;
    is_archived: flag(layout::ARCHIVED) -> bool;
    on_careers_page: flag(layout::CAREERS_PAGE) -> bool;
    title: text(layout::TITLE) -> Option<&str>;
});

/// The members of a job as the API shows it, in order.
#[rustfmt::skip]
pub const API_FIELDS: &[ApiField] = &[
    field("id", Text, ""),
    field("title", NullableText, ""),
    field("position", NullableText, "Often equals title."),
    field("company", NullableText, "Client company name."),
    field("company_id", NullableText, "May be null when no client attached."),
    field("status", NullableText, "Placement status."),
    field("role_status_id", NullableText, "Id of the workspace-configured status."),
    field("live", Bool, "True when not archived; exact complement of `is_archived`."),
    field("published", Bool, "True when not archived and also on the public careers page; never true while `live` is false."),
    field("is_archived", Bool, "Archived jobs stay readable and stay in the sync stream."),
    field("salary", NullableObject(&[
        field("amount", NullableNumber, ""),
        field("currency", NullableText, ""),
        field("type", NullableText, "How remuneration is expressed."),
    ]), ""),
    field("owning_recruiter_id", NullableText, "A `users.id`: assigned recruiter, falling back to the creator of the job. Null is legitimate, not an error."),
    field("hiring_manager", NullableText, "Free text."),
    field("created_at", Stamp, ""),
    field("updated_at", Stamp, "Never null."),
];

impl<W: Surroundings> Rendered for View<'_, W, Job> {
    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        let (ws, j) = (self.ws, self.rec);
        let salary = j.salary.as_ref();
        let mut o = Obj::begin(out);
        o.uuid("id", Some(j.id))
            .str("title", j.title.as_deref())
            .str("position", j.position.as_deref())
            .str("company", j.company_id.and_then(|c| ws.company_name(c)))
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
            .times(j.created_at, j.updated_at);
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

    impl<W: Surroundings> Serialize for View<'_, W, Job> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let (ws, j) = (self.ws, self.rec);
            let salary = j.salary.as_ref();
            JobOut {
                id: &j.id,
                title: j.title.as_deref(),
                position: j.position.as_deref(),
                company: j.company_id.and_then(|c| ws.company_name(c)),
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
}
