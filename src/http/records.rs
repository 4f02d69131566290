//! `GET /v1/{entity}` (keyset pages), `GET /v1/{entity}/{id}` and `GET /v1/counts`, for
//! all nine entities: each entity's table and view come from `actors::entities::visit`.

use super::auth::{Authed, Read};
use super::envelope::Envelope;
use super::errors::ApiError;
use super::query::{LimitParam, QueryParams};
use super::request::RequestId;
use super::state::AppState;
use actix_web::{web, HttpResponse};
use actors::entities::{self, EntityVisitor};
use actors::entries::LoggedId;
use actors::model::Entity;
use actors::query::{parse_updated_since, Cursor, CursorId, CursorKey};
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
    /// `include_deleted=true`: tombstones in the listing too.
    with_tombstones: bool,
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
    let with_tombstones = match q.get("include_deleted")? {
        None | Some("false") => false,
        Some("true") => true,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "include_deleted must be true or false, got {other:?}"
            )))
        }
    };
    let cursor = q
        .get("cursor")?
        .map(|raw| Cursor::decode_listing(raw, key, entity, since, with_tombstones))
        .transpose()
        .map_err(ApiError::bad_request)?;
    Ok(ListParams {
        limit: limit.get(),
        since,
        cursor,
        with_tombstones,
    })
}

/// One page of a table as the list response body, each record written straight into
/// it (`actors::rendered`).
struct Page<'a> {
    ws: &'a WorkspaceState,
    entity: Entity,
    params: ListParams,
    key: &'a CursorKey,
    rid: &'a str,
    /// On a first page: the change feed token of the state it is read from.
    changes_since: Option<String>,
}

impl<'s> EntityVisitor<'s> for Page<'_> {
    type Out = Result<Vec<u8>, ApiError>;

    fn visit<K: TableKey, V: ?Sized, T: Rendered>(
        self,
        table: TableRef<'s, K, V>,
        view: impl Fn(&'s V) -> T + Copy,
    ) -> Self::Out {
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
        let (n, last) = if p.with_tombstones {
            let tombstones_after = after
                .as_ref()
                .map(|(stamp, k)| (*stamp, LoggedId::from(k.to_cursor_id())));
            write_with_tombstones(
                self.ws,
                self.entity,
                table.rows_from(p.since, after),
                self.ws
                    .tombstones
                    .from(self.entity, p.since, tombstones_after),
                p.limit,
                view,
                buf,
            )?
        } else {
            let mut rows = Vec::with_capacity(p.limit);
            let mut last: Option<(Stamp, &K)> = None;
            for (stamp, k, row) in table.rows_from(p.since, after).take(p.limit) {
                rows.push(row);
                last = Some((stamp, k));
            }
            write_rows(&rows, view, buf).map_err(ApiError::internal)?;
            (rows.len(), last.map(|(stamp, k)| (stamp, k.to_cursor_id())))
        };
        buf.push(b']');
        let next = last.filter(|_| n == p.limit).map(|(stamp, id)| {
            Cursor {
                entity: self.entity,
                since: p.since,
                last_stamp: stamp,
                last_id: id,
            }
            .encode_listing(self.key, p.with_tombstones)
        });
        page.next_cursor(next.as_deref())?;
        if with_total {
            page.total_count(table.count_since(p.since));
        }
        if let Some(token) = &self.changes_since {
            page.member("changes_since", token)?;
        }
        page.close(self.rid)
    }
}

/// Writes up to `limit` rows and tombstones merged in list order (`updated_at`, id),
/// comma-separated; how many, and the position of the last. A tombstone whose record
/// is shown again (it can only be stale) is left out.
fn write_with_tombstones<'s, 't, K, V, T, F>(
    ws: &WorkspaceState,
    entity: Entity,
    rows: impl Iterator<Item = (Stamp, &'s K, &'s actors::table::Row<V>)>,
    tombstones: impl Iterator<Item = &'t (Stamp, LoggedId)>,
    limit: usize,
    view: F,
    buf: &mut Vec<u8>,
) -> Result<(usize, Option<(Stamp, CursorId)>), ApiError>
where
    K: TableKey + 's,
    V: ?Sized + 's,
    T: Rendered,
    F: Fn(&'s V) -> T + Copy,
{
    let mut rows = rows.peekable();
    let mut tombstones = tombstones
        .filter(|(_, id)| !entities::shown_logged(ws, entity, id))
        .peekable();
    let (mut n, mut last) = (0, None);
    while n < limit {
        let row_first = match (rows.peek(), tombstones.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some((rs, rk, _)), Some((ts, tid))) => {
                rs < ts || (rs == ts && &LoggedId::from(rk.to_cursor_id()) < tid)
            }
        };
        if n > 0 {
            buf.push(b',');
        }
        if row_first {
            let (stamp, k, row) = rows.next().expect("peeked");
            row.write_json(view, buf).map_err(ApiError::internal)?;
            last = Some((stamp, k.to_cursor_id()));
        } else {
            let (stamp, id) = tombstones.next().expect("peeked");
            buf.extend_from_slice(b"{\"id\":");
            serde_json::to_writer(&mut *buf, &id.to_string()).map_err(ApiError::internal)?;
            buf.extend_from_slice(b",\"deleted\":true,\"updated_at\":\"");
            buf.extend_from_slice(stamp.to_string().as_bytes());
            buf.extend_from_slice(b"\"}");
            last = Some((*stamp, CursorId::from(id)));
        }
        n += 1;
    }
    Ok((n, last))
}

pub async fn list(
    caller: Authed<Read>,
    EntityParam(entity): EntityParam,
    limit: ListLimit,
    q: QueryParams,
    rid: RequestId,
    app: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let params = list_params(&q, limit, entity, &app.cursor_key);
    let params = match (params, q.get("cursor")?) {
        (Err(_), Some(raw)) => {
            app.check_token(raw, || list_params(&q, limit, entity, &app.cursor_key))
                .await?
        }
        (params, _) => params?,
    };
    let ws: &WorkspaceState = &caller.state;
    // The page is read from this very state, so the feed from its point misses nothing
    // written after the read.
    let changes_since = params
        .cursor
        .is_none()
        .then(|| super::changes::changes_since(&app, ws));
    let body = if params.limit < super::pages::OFF_THE_WORKER_FROM {
        write_page(
            ws,
            entity,
            params,
            &app.cursor_key,
            rid.as_str(),
            changes_since,
        )
    } else {
        // A full page: written off the worker (`super::pages`), from the same state.
        let (state, key, rid) = (
            caller.state.clone(),
            app.cursor_key.clone(),
            rid.as_str().to_owned(),
        );
        super::pages::write_off_the_worker(move || {
            write_page(&state, entity, params, &key, &rid, changes_since)
        })
        .await
    }?;
    Ok(super::envelope::json_ok(body))
}

/// The list response body of one page (see [`Page`]).
fn write_page(
    ws: &WorkspaceState,
    entity: Entity,
    params: ListParams,
    key: &CursorKey,
    rid: &str,
    changes_since: Option<String>,
) -> Result<Vec<u8>, ApiError> {
    let page = Page {
        ws,
        entity,
        params,
        key,
        rid,
        changes_since,
    };
    entities::visit(ws, entity, page)
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
