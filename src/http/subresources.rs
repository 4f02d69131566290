//! `GET /v1/{entity}/{id}/notes` and `GET /v1/{entity}/{id}/attachments`: a record's
//! children, newest first, read from the parent indexes of the workspace state
//! (`actors::subresources`), so a request costs the children of that record or person.
//!
//! Unlike a lookup by id, an unknown or foreign id is not an error here: it has no
//! children, and the answer is 200 with empty `data` and `total_count: 0`.

use super::auth::{Authed, Read};
use super::envelope::Envelope;
use super::errors::ApiError;
use super::query::{LimitParam, QueryParams};
use super::records::{entity_or_404, parse_record_id, EntityParam};
use super::request::RequestId;
use actix_web::{HttpRequest, HttpResponse};
use actors::model::View;
use actors::model::{Entity, ParentType};
use actors::rendered::Rendered;
use actors::state::WorkspaceState;
use actors::subresources::{attachments_parent_kind, notes_parent_kind, Children, ParentKey};
use smallvec::SmallVec;

pub const NOTES_DEFAULT_LIMIT: usize = 100;
pub const NOTES_MAX_LIMIT: usize = 500;
pub const ATTACHMENTS_DEFAULT_LIMIT: usize = 500;
pub const ATTACHMENTS_MAX_LIMIT: usize = 500;

/// `limit` of the notes sub-resource.
pub type NotesLimit = LimitParam<NOTES_DEFAULT_LIMIT, NOTES_MAX_LIMIT>;
/// `limit` of the attachments sub-resource.
pub type AttachmentsLimit = LimitParam<ATTACHMENTS_DEFAULT_LIMIT, ATTACHMENTS_MAX_LIMIT>;

/// The entity named in the path, and the kind of parent its sub-resource lists; 404 for
/// an unknown entity, 400 for one without this sub-resource.
fn subject(
    req: &HttpRequest,
    what: &str,
    kind_of: fn(Entity) -> Option<ParentType>,
    supported: &str,
) -> Result<(Entity, ParentType), ApiError> {
    let entity = entity_or_404(req.match_info().get("entity").unwrap_or(""))?;
    let kind = kind_of(entity).ok_or_else(|| {
        ApiError::bad_request(format!(
            "{} have no {what} sub-resource; it is available on {supported}",
            entity.name()
        ))
    })?;
    Ok((entity, kind))
}

/// The parents the request covers: none for an id that is not a record of the entity
/// (a malformed id included — it names no record either).
fn parents(
    ws: &WorkspaceState,
    req: &HttpRequest,
    entity: Entity,
    kind: ParentType,
) -> SmallVec<[ParentKey; 4]> {
    req.match_info()
        .get("id")
        .and_then(parse_record_id)
        .map(|id| ws.subresource_parents(entity, kind, id))
        .unwrap_or_default()
}

/// `{"data": [...], "total_count": n, "request_id": …}`.
fn page_body<'a, V: ?Sized>(
    ws: &'a WorkspaceState,
    page: Children<'a, V>,
    rid: &RequestId,
) -> Result<HttpResponse, ApiError>
where
    View<'a, WorkspaceState, V>: Rendered,
{
    let mut body = Envelope::of_records(page.items.into_iter().map(|r| View::new(ws, &**r)))?;
    body.total_count(page.total);
    body.respond(rid.as_str())
}

pub async fn notes(
    caller: Authed<Read>,
    _: EntityParam,
    limit: NotesLimit,
    req: HttpRequest,
    q: QueryParams,
    rid: RequestId,
) -> Result<HttpResponse, ApiError> {
    let (entity, kind) = subject(
        &req,
        "notes",
        notes_parent_kind,
        "candidates, applications, contacts, companies and jobs",
    )?;
    let limit = limit.get();
    if let Some(sort) = q.get("sort")? {
        if sort != "-created_at" {
            return Err(ApiError::bad_request(format!(
                "sort {sort:?} is not supported: only -created_at (newest first)"
            )));
        }
    }
    let ws: &WorkspaceState = &caller.state;
    let page = ws.notes_of(&parents(ws, &req, entity, kind), limit);
    page_body(ws, page, &rid)
}

pub async fn attachments(
    caller: Authed<Read>,
    _: EntityParam,
    limit: AttachmentsLimit,
    req: HttpRequest,
    rid: RequestId,
) -> Result<HttpResponse, ApiError> {
    let (entity, kind) = subject(
        &req,
        "attachments",
        attachments_parent_kind,
        "candidates, applications and companies",
    )?;
    let limit = limit.get();
    let ws: &WorkspaceState = &caller.state;
    let page = ws.attachments_of(&parents(ws, &req, entity, kind), limit);
    page_body(ws, page, &rid)
}
