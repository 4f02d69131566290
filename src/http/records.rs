//! `GET /v1/{entity}` (keyset pages), `GET /v1/{entity}/{id}` and `GET /v1/counts`, for
//! all nine entities: each entity's table and view come from `actors::entities::visit`.

use super::auth::{Authed, Read};
use super::context::RequestId;
use super::envelope::Envelope;
use super::errors::ApiError;
use super::query::{LimitParam, QueryParams};
use super::AppState;
use actix_web::{web, HttpResponse};
use actors::entities::{self, EntityVisitor};
use actors::model::Entity;
use actors::query::{parse_updated_since, Cursor, CursorKey};
use actors::rendered::Rendered;
use actors::state::WorkspaceState;
use actors::table::{write_rows, TableKey, TableRef};
use actors::time::Stamp;

pub const LIST_DEFAULT_LIMIT: usize = 100;
pub const LIST_MAX_LIMIT: usize = 500;

/// `limit` of a list.
pub type ListLimit = LimitParam<LIST_DEFAULT_LIMIT, LIST_MAX_LIMIT>;

pub fn entity_or_404(name: &str) -> Result<Entity, ApiError> {
    Entity::parse(name).ok_or_else(|| ApiError::not_found(format!("no entity named {name:?}")))
}

/// The `{entity}` of the path: 404 for a name that is no entity, before anything else of
/// the request is looked at.
pub struct EntityParam(pub Entity);

impl actix_web::FromRequest for EntityParam {
    type Error = ApiError;
    type Future = std::future::Ready<Result<Self, ApiError>>;

    fn from_request(req: &actix_web::HttpRequest, _: &mut actix_web::dev::Payload) -> Self::Future {
        std::future::ready(
            entity_or_404(req.match_info().get("entity").unwrap_or_default()).map(EntityParam),
        )
    }
}

/// The validated parameters of a list request.
struct ListParams {
    limit: usize,
    since: Option<Stamp>,
    cursor: Option<Cursor>,
}

fn list_params(
    q: &QueryParams,
    limit: ListLimit,
    entity: Entity,
    key: &CursorKey,
) -> Result<ListParams, ApiError> {
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
        limit: limit.get(),
        since,
        cursor,
    })
}

/// One page of a table as the list response body, each record written straight into
/// it (`actors::rendered`).
struct Page<'a> {
    entity: Entity,
    params: ListParams,
    key: &'a CursorKey,
    rid: &'a RequestId,
    /// On a first page: the change feed token of the state it is read from.
    changes_since: Option<String>,
}

impl<'s> EntityVisitor<'s> for Page<'_> {
    type Out = Result<Vec<u8>, ApiError>;

    fn visit<K, V, T, F>(self, table: TableRef<'s, K, V>, view: F) -> Self::Out
    where
        K: TableKey,
        V: ?Sized,
        T: Rendered,
        F: Fn(&'s V) -> T + Copy,
    {
        let p = self.params;
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
        let mut page = Envelope::new(256 + p.limit * 1024);
        let buf = page.data_buf();
        buf.push(b'[');
        let mut rows = Vec::with_capacity(p.limit);
        let mut last: Option<(Stamp, &K)> = None;
        for (stamp, k, row) in table.rows_from(p.since, after).take(p.limit) {
            rows.push(row);
            last = Some((stamp, k));
        }
        let n = rows.len();
        write_rows(&rows, view, buf).map_err(ApiError::internal)?;
        buf.push(b']');
        let next = last.filter(|_| n == p.limit).map(|(stamp, k)| {
            Cursor {
                entity: self.entity,
                since: p.since,
                last_stamp: stamp,
                last_id: k.to_cursor_id(),
            }
            .encode(self.key)
        });
        page.next_cursor(next.as_deref())?;
        if with_total {
            page.total_count(table.count_since(p.since));
        }
        if let Some(token) = &self.changes_since {
            page.member("changes_since", token)?;
        }
        page.close(self.rid.as_str())
    }
}

pub async fn list(
    caller: Authed<Read>,
    EntityParam(entity): EntityParam,
    limit: ListLimit,
    q: QueryParams,
    rid: RequestId,
    app: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let params = list_params(&q, limit, entity, &app.cursor_key)?;
    let ws: &WorkspaceState = &caller.state;
    // The page is read from this very state, so the feed from its point misses nothing
    // written after the read.
    let changes_since = params
        .cursor
        .is_none()
        .then(|| super::changes::changes_since(&app, ws));
    let page = Page {
        entity,
        params,
        key: &app.cursor_key,
        rid: &rid,
        changes_since,
    };
    Ok(super::envelope::json_ok(entities::visit(ws, entity, page)?))
}

pub async fn get(
    caller: Authed<Read>,
    path: web::Path<(String, String)>,
    rid: RequestId,
) -> Result<HttpResponse, ApiError> {
    let (entity_name, raw_id) = path.into_inner();
    let entity = entity_or_404(&entity_name)?;
    let mut body = Envelope::new(1024);
    if entities::write_visible(&caller.state, entity, &raw_id, body.data_buf())
        .map_err(ApiError::internal)?
    {
        return body.respond(rid.as_str());
    }
    Err(ApiError::not_found(format!(
        "no {} record with id {raw_id:?}",
        entity.name()
    )))
}

/// `GET /v1/counts`: exact whole-entity totals of visible records.
pub async fn counts(
    caller: Authed<Read>,
    q: QueryParams,
    rid: RequestId,
) -> Result<HttpResponse, ApiError> {
    let wanted = super::query::entities_param(q.get("entities")?)?;
    let mut map = serde_json::Map::new();
    for e in wanted {
        map.insert(
            e.name().to_string(),
            entities::count(&caller.state, e).into(),
        );
    }
    Envelope::of(&map)?.respond(rid.as_str())
}

/// A record id in the canonical UUID form (hyphenated, 36 characters); anything else is
/// "an id in an unexpected format" and answers 404.
pub fn parse_record_id(raw: &str) -> Option<uuid::Uuid> {
    if raw.len() != 36 {
        return None;
    }
    uuid::Uuid::try_parse(raw).ok()
}
