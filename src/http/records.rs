//! `GET /v1/{entity}` (keyset pages) and `GET /v1/{entity}/{id}`, for all nine entities.

use super::auth::{Authed, Read};
use super::context::RequestId;
use super::errors::ApiError;
use super::query::QueryParams;
use super::AppState;
use actix_web::{web, HttpResponse};
use actors::model::{split_attachment_id, Attachment, Entity, ATTACHMENT_PREFIXES};
use actors::query::{parse_updated_since, Cursor, CursorId, CursorKey, Limit};
use actors::rendered::Rendered;
use actors::state::{MinKey, Row, Table, WorkspaceState};
use actors::time::Stamp;
use actors::views::{ApplicationView, View};
use serde::Serialize;
use std::hash::Hash;
use std::sync::Arc;
use uuid::Uuid;

pub const LIST_DEFAULT_LIMIT: usize = 100;
pub const LIST_MAX_LIMIT: usize = 500;

pub fn entity_or_404(name: &str) -> Result<Entity, ApiError> {
    Entity::parse(name).ok_or_else(|| ApiError::not_found(format!("no entity named {name:?}")))
}

/// The validated parameters of a list request.
struct ListParams {
    limit: usize,
    since: Option<Stamp>,
    cursor: Option<Cursor>,
}

fn list_params(q: &QueryParams, entity: Entity, key: &CursorKey) -> Result<ListParams, ApiError> {
    let limit = match q.get("limit")? {
        Some(raw) => Limit::parse(raw, LIST_MAX_LIMIT)
            .map_err(ApiError::bad_request)?
            .get(),
        None => LIST_DEFAULT_LIMIT,
    };
    if let Some(sort) = q.get("sort")? {
        if sort != "updated_at" {
            return Err(ApiError::bad_request(format!(
                "sort {sort:?} is not supported: only updated_at"
            )));
        }
    }
    let since = q
        .get("updated_since")?
        .map(parse_updated_since)
        .transpose()
        .map_err(ApiError::bad_request)?;
    let cursor = q
        .get("cursor")?
        .map(|raw| Cursor::decode(raw, key, entity, since))
        .transpose()
        .map_err(ApiError::bad_request)?;
    Ok(ListParams {
        limit,
        since,
        cursor,
    })
}

/// Keys of a table, as a cursor carries them.
pub trait CursorKeyed: Sized {
    fn to_cursor_id(&self) -> CursorId;
    fn from_cursor_id(id: CursorId) -> Option<Self>;
}

impl CursorKeyed for Uuid {
    fn to_cursor_id(&self) -> CursorId {
        CursorId::Uuid(*self)
    }
    fn from_cursor_id(id: CursorId) -> Option<Self> {
        match id {
            CursorId::Uuid(u) => Some(u),
            CursorId::Text(_) => None,
        }
    }
}

impl CursorKeyed for Arc<str> {
    fn to_cursor_id(&self) -> CursorId {
        CursorId::Text(self.to_string())
    }
    fn from_cursor_id(id: CursorId) -> Option<Self> {
        match id {
            CursorId::Text(t) => Some(Arc::from(t)),
            CursorId::Uuid(_) => None,
        }
    }
}

/// Writes one page of a table as the list response body. Records come from their rows'
/// cached JSON where it is still valid (`actors::rendered`).
fn render_page<'s, K, V, T, F>(
    ws: &'s WorkspaceState,
    table: &'s Table<K, V>,
    entity: Entity,
    p: ListParams,
    key: &CursorKey,
    rid: &RequestId,
    view: F,
) -> Result<Vec<u8>, ApiError>
where
    K: Hash + Eq + Ord + Clone + MinKey + CursorKeyed,
    T: Rendered,
    F: Fn(&'s V) -> T,
    V: 's,
{
    let with_total = p.cursor.is_none();
    let after = match p.cursor {
        Some(c) => Some((
            c.last_stamp,
            K::from_cursor_id(c.last_id)
                .ok_or_else(|| ApiError::bad_request("cursor is not valid for this entity"))?,
        )),
        None => None,
    };
    // Most records render to well under 1 KiB: one allocation for most pages.
    let mut buf = Vec::with_capacity(256 + p.limit * 1024);
    buf.extend_from_slice(b"{\"data\":[");
    let mut n = 0;
    let mut last: Option<(Stamp, &K)> = None;
    for (stamp, k, row) in table.rows_from(p.since, after).take(p.limit) {
        if n > 0 {
            buf.push(b',');
        }
        row.write_json(&ws.derived, &view, &mut buf)
            .map_err(ApiError::internal)?;
        last = Some((stamp, k));
        n += 1;
    }
    buf.extend_from_slice(b"],\"next_cursor\":");
    match last.filter(|_| n == p.limit) {
        Some((stamp, k)) => {
            let c = Cursor {
                entity,
                since: p.since,
                last_stamp: stamp,
                last_id: k.to_cursor_id(),
            };
            serde_json::to_writer(&mut buf, &c.encode(key)).map_err(ApiError::internal)?;
        }
        None => buf.extend_from_slice(b"null"),
    }
    if with_total {
        buf.extend_from_slice(b",\"total_count\":");
        buf.extend_from_slice(table.count_since(p.since).to_string().as_bytes());
    }
    buf.extend_from_slice(b",\"request_id\":");
    serde_json::to_writer(&mut buf, rid.as_str()).map_err(ApiError::internal)?;
    buf.push(b'}');
    Ok(buf)
}

pub fn json_response(body: Vec<u8>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(body)
}

/// `{"data": <value>, "request_id": …}`.
pub fn data_body<T: Serialize>(data: &T, rid: &RequestId) -> Result<Vec<u8>, ApiError> {
    #[derive(Serialize)]
    struct Body<'a, T> {
        data: &'a T,
        request_id: &'a str,
    }
    serde_json::to_vec(&Body {
        data,
        request_id: rid.as_str(),
    })
    .map_err(ApiError::internal)
}

pub async fn list(
    caller: Authed<Read>,
    path: web::Path<String>,
    q: QueryParams,
    rid: RequestId,
    app: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let entity = entity_or_404(&path)?;
    let p = list_params(&q, entity, &app.cursor_key)?;
    let ws: &WorkspaceState = &caller.state;
    let key = &app.cursor_key;
    let body = match entity {
        Entity::Candidates => render_page(ws, &ws.candidates, entity, p, key, &rid, |r| {
            View::new(ws, r)
        })?,
        Entity::Applications => render_page(ws, &ws.applications, entity, p, key, &rid, |r| {
            ApplicationView(View::new(ws, r))
        })?,
        Entity::Contacts => {
            render_page(ws, &ws.contacts, entity, p, key, &rid, |r| View::new(ws, r))?
        }
        Entity::Companies => render_page(ws, &ws.companies, entity, p, key, &rid, |r| {
            View::new(ws, r)
        })?,
        Entity::Jobs => render_page(ws, &ws.jobs, entity, p, key, &rid, |r| View::new(ws, r))?,
        Entity::Notes => render_page(ws, &ws.notes, entity, p, key, &rid, |r| View::new(ws, r))?,
        Entity::Tasks => render_page(ws, &ws.tasks, entity, p, key, &rid, |r| View::new(ws, r))?,
        Entity::Attachments => render_page(ws, &ws.attachments, entity, p, key, &rid, |r| {
            View::new(ws, r)
        })?,
        Entity::Users => render_page(ws, &ws.users, entity, p, key, &rid, |r| View::new(ws, r))?,
    };
    Ok(json_response(body))
}

/// A record id in the canonical UUID form (hyphenated, 36 characters); anything else is
/// "an id in an unexpected format" and answers 404.
pub fn parse_record_id(raw: &str) -> Option<Uuid> {
    if raw.len() != 36 {
        return None;
    }
    Uuid::try_parse(raw).ok()
}

/// Finds a visible attachment's row by id, with or without its prefix.
pub fn find_attachment<'a>(ws: &'a WorkspaceState, raw: &str) -> Option<&'a Row<Attachment>> {
    if raw.contains(':') {
        split_attachment_id(raw)?;
        return ws.attachments.visible_row(&Arc::from(raw));
    }
    ATTACHMENT_PREFIXES
        .iter()
        .find_map(|p| ws.attachments.visible_row(&Arc::from(format!("{p}:{raw}"))))
}

/// `{"data": <record>, "request_id": …}`, the record from its row's cache when valid.
fn record_body<'r, V, T: Rendered>(
    ws: &WorkspaceState,
    row: &'r Row<V>,
    view: impl FnOnce(&'r V) -> T,
    rid: &RequestId,
) -> Result<Vec<u8>, ApiError> {
    let mut buf = Vec::with_capacity(1024);
    buf.extend_from_slice(b"{\"data\":");
    row.write_json(&ws.derived, view, &mut buf)
        .map_err(ApiError::internal)?;
    buf.extend_from_slice(b",\"request_id\":");
    serde_json::to_writer(&mut buf, rid.as_str()).map_err(ApiError::internal)?;
    buf.push(b'}');
    Ok(buf)
}

pub async fn get(
    caller: Authed<Read>,
    path: web::Path<(String, String)>,
    rid: RequestId,
) -> Result<HttpResponse, ApiError> {
    let (entity_name, raw_id) = path.into_inner();
    let entity = entity_or_404(&entity_name)?;
    let ws: &WorkspaceState = &caller.state;
    let missing = || ApiError::not_found(format!("no {} record with id {raw_id:?}", entity.name()));
    if entity == Entity::Attachments {
        let row = find_attachment(ws, &raw_id).ok_or_else(missing)?;
        return Ok(json_response(record_body(
            ws,
            row,
            |r| View::new(ws, r),
            &rid,
        )?));
    }
    let id = parse_record_id(&raw_id).ok_or_else(missing)?;
    /// The body of the visible row `id` of `table`, seen through `view`.
    macro_rules! body {
        ($table:expr, $view:expr) => {{
            let row = $table.visible_row(&id).ok_or_else(missing)?;
            record_body(ws, row, $view, &rid)?
        }};
    }
    let body = match entity {
        Entity::Candidates => body!(ws.candidates, |r| View::new(ws, r)),
        Entity::Applications => body!(ws.applications, |r| ApplicationView(View::new(ws, r))),
        Entity::Contacts => body!(ws.contacts, |r| View::new(ws, r)),
        Entity::Companies => body!(ws.companies, |r| View::new(ws, r)),
        Entity::Jobs => body!(ws.jobs, |r| View::new(ws, r)),
        Entity::Notes => body!(ws.notes, |r| View::new(ws, r)),
        Entity::Tasks => body!(ws.tasks, |r| View::new(ws, r)),
        Entity::Users => body!(ws.users, |r| View::new(ws, r)),
        Entity::Attachments => unreachable!("handled above"),
    };
    Ok(json_response(body))
}

/// `GET /v1/counts`: exact whole-entity totals of visible records.
pub async fn counts(
    caller: Authed<Read>,
    q: QueryParams,
    rid: RequestId,
) -> Result<HttpResponse, ApiError> {
    let wanted: Vec<Entity> = match q.get("entities")? {
        None => Entity::ALL.to_vec(),
        Some(list) => {
            let mut out = Vec::new();
            for name in list.split(',') {
                let e = Entity::parse(name).ok_or_else(|| {
                    ApiError::bad_request(format!(
                        "entities: unknown entity {name:?}; expected a comma-separated list of candidates, applications, contacts, companies, jobs, notes, tasks, attachments, users"
                    ))
                })?;
                if !out.contains(&e) {
                    out.push(e);
                }
            }
            out
        }
    };
    let mut map = serde_json::Map::new();
    for e in wanted {
        map.insert(e.name().to_string(), caller.state.count(e).into());
    }
    Ok(json_response(data_body(&map, &rid)?))
}
