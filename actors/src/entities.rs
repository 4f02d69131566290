//! The one place that knows, for each of the nine entities, the table its records are
//! served from and the view they are shown through. Lists, lookups by id, counts and the
//! answers of writes all go through [`visit`]: a new entity, or a changed view, is one
//! line here.

use crate::model::Entity;
use crate::model::{ApplicationView, View};
use crate::rendered::Rendered;
use crate::state::WorkspaceState;
use crate::table::{TableKey, TableRef};

/// Something done with one entity's table, whatever its key and record types: the
/// table, and how one of its records is seen (a view borrowing from the workspace).
pub trait EntityVisitor<'s> {
    type Out;

    fn visit<K: TableKey, V: ?Sized, T: Rendered>(
        self,
        table: TableRef<'s, K, V>,
        view: impl Fn(&'s V) -> T + Copy,
    ) -> Self::Out;
}

/// Runs `visitor` on `entity`'s table of `ws`.
pub fn visit<'s, Vis: EntityVisitor<'s>>(
    ws: &'s WorkspaceState,
    entity: Entity,
    visitor: Vis,
) -> Vis::Out {
    match entity {
        Entity::Candidates => visitor.visit(ws.candidates.all(), move |r| View::new(ws, r)),
        Entity::Applications => visitor.visit(ws.applications(), move |r| {
            ApplicationView(View::new(ws, r))
        }),
        Entity::Contacts => visitor.visit(ws.contacts.all(), move |r| View::new(ws, r)),
        Entity::Companies => visitor.visit(ws.companies.all(), move |r| View::new(ws, r)),
        Entity::Jobs => visitor.visit(ws.jobs.all(), move |r| View::new(ws, r)),
        Entity::Notes => visitor.visit(ws.notes.all(), move |r| View::new(ws, r)),
        Entity::Tasks => visitor.visit(ws.tasks.all(), move |r| View::new(ws, r)),
        Entity::Attachments => visitor.visit(ws.attachments.all(), move |r| View::new(ws, r)),
        Entity::Users => visitor.visit(ws.users.all(), move |r| View::new(ws, r)),
    }
}

/// Number of visible records of an entity: the unfiltered `total_count` of its list.
pub fn count(ws: &WorkspaceState, entity: Entity) -> usize {
    struct Count;
    impl<'s> EntityVisitor<'s> for Count {
        type Out = usize;
        fn visit<K: TableKey, V: ?Sized, T: Rendered>(
            self,
            table: TableRef<'s, K, V>,
            _: impl Fn(&'s V) -> T + Copy,
        ) -> usize {
            table.visible_len()
        }
    }
    visit(ws, entity, Count)
}

/// [`write_visible`] of a record the change log names.
pub fn write_visible_logged(
    ws: &WorkspaceState,
    entity: Entity,
    id: &crate::entries::LoggedId,
    out: &mut Vec<u8>,
) -> serde_json::Result<bool> {
    find(ws, entity, id.into(), Some(out))
}

/// Whether the API shows the record of `entity` the change log names in `ws`.
pub fn shown_logged(ws: &WorkspaceState, entity: Entity, id: &crate::entries::LoggedId) -> bool {
    find(ws, entity, id.into(), None).unwrap_or(false)
}

/// Appends, as JSON, the record of `entity` that `raw_id` (an id as the API writes it)
/// names, when the API shows it; whether it did. What `GET /v1/{entity}/{id}` answers,
/// and what the change feed's upserts carry.
pub fn write_visible(
    ws: &WorkspaceState,
    entity: Entity,
    raw_id: &str,
    out: &mut Vec<u8>,
) -> serde_json::Result<bool> {
    find(ws, entity, Named::Raw(raw_id), Some(out))
}

/// [`write_visible`] of a record named by a UUID (every kind but attachments): what a
/// write answers with the record it wrote.
pub fn write_visible_uuid(
    ws: &WorkspaceState,
    entity: Entity,
    id: uuid::Uuid,
    out: &mut Vec<u8>,
) -> serde_json::Result<bool> {
    find(ws, entity, Named::Uuid(id), Some(out))
}

/// How a record is named: as the API writes its id, or by a UUID already parsed (the
/// change log's), which UUID-keyed tables look up without writing it out.
#[derive(Clone, Copy)]
enum Named<'a> {
    Raw(&'a str),
    Uuid(uuid::Uuid),
}

impl<'a> From<&'a crate::entries::LoggedId> for Named<'a> {
    fn from(id: &'a crate::entries::LoggedId) -> Self {
        match id {
            crate::entries::LoggedId::Text(raw) => Named::Raw(raw),
            crate::entries::LoggedId::Uuid(uuid) => Named::Uuid(*uuid),
        }
    }
}

/// Whether the API shows the record of `entity` that `id` names; with `out`, appends it
/// as JSON there when it does.
fn find(
    ws: &WorkspaceState,
    entity: Entity,
    id: Named<'_>,
    out: Option<&mut Vec<u8>>,
) -> serde_json::Result<bool> {
    struct ById<'a> {
        id: Named<'a>,
        out: Option<&'a mut Vec<u8>>,
    }
    impl<'s> EntityVisitor<'s> for ById<'_> {
        type Out = serde_json::Result<bool>;
        fn visit<K: TableKey, V: ?Sized, T: Rendered>(
            self,
            table: TableRef<'s, K, V>,
            view: impl Fn(&'s V) -> T + Copy,
        ) -> Self::Out {
            let row = match self.id {
                Named::Raw(raw) => K::find(table, raw),
                Named::Uuid(id) => K::find_uuid(table, id),
            };
            match (row, self.out) {
                (Some(row), Some(out)) => row.write_json(view, out).map(|()| true),
                (row, _) => Ok(row.is_some()),
            }
        }
    }
    visit(ws, entity, ById { id, out })
}
