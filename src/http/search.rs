//! `GET /v1/search/phone` and `GET /v1/search/email`: the in-call lookups.
//!
//! The hot path: the key ring and the registry are concurrent maps, the workspace state
//! is an `Arc` loaded without a lock, the query string is decoded in place, the lookup
//! reads the state's fst indexes, and the answer is serialised straight from the records
//! into one buffer. No actor round trip and no store access, so searches keep answering
//! while the store is unreachable.

use super::auth::{Authed, Read};
use super::envelope::{json_ok, Envelope};
use super::errors::ApiError;
use super::query::{LimitParam, Query};
use super::request::RequestId;
use actix_web::{HttpRequest, HttpResponse};
use actors::search::results::{search_email, search_phone, SEARCH_MAX_LIMIT};
use actors::state::WorkspaceState;
use serde::Serialize;

/// `limit` of a search: default and maximum alike. Read from the query the handler
/// parses anyway (the hot path parses it once).
pub type SearchLimit = LimitParam<SEARCH_MAX_LIMIT, SEARCH_MAX_LIMIT>;

/// The data, written into one buffer sized for a typical answer.
fn body<T: Serialize>(data: &T, rid: &str) -> Result<Vec<u8>, ApiError> {
    let mut body = Envelope::new(1024);
    serde_json::to_writer(body.data_buf(), data).map_err(ApiError::internal)?;
    body.close(rid)
}

/// The whole answer to `GET /v1/search/phone?<query>` once the caller is known: the
/// query decoded, the number looked up, the answer written. (The benches run this.)
pub fn phone_answer(ws: &WorkspaceState, query: &str, rid: &str) -> Result<Vec<u8>, ApiError> {
    let q = Query::parse(query)?;
    let number = q.get_any(&["number", "phone", "q"])?.ok_or_else(|| {
        ApiError::bad_request("query parameter number is required (aliases: phone, q)")
    })?;
    let limit = SearchLimit::from_query(&q)?.get();
    let result = search_phone(ws, number, limit);
    body(&result, rid)
}

/// The whole answer to `GET /v1/search/email?<query>` once the caller is known.
pub fn email_answer(ws: &WorkspaceState, query: &str, rid: &str) -> Result<Vec<u8>, ApiError> {
    let q = Query::parse(query)?;
    let address = q.get_any(&["address", "email", "q"])?.ok_or_else(|| {
        ApiError::bad_request("query parameter address is required (aliases: email, q)")
    })?;
    if address.trim().is_empty() {
        return Err(ApiError::bad_request(
            "query parameter address must not be empty",
        ));
    }
    let limit = SearchLimit::from_query(&q)?.get();
    let result = search_email(ws, address, limit);
    body(&result, rid)
}

pub async fn phone(
    caller: Authed<Read>,
    req: HttpRequest,
    rid: RequestId,
) -> Result<HttpResponse, ApiError> {
    Ok(json_ok(phone_answer(
        &caller.state,
        req.query_string(),
        rid.as_str(),
    )?))
}

pub async fn email(
    caller: Authed<Read>,
    req: HttpRequest,
    rid: RequestId,
) -> Result<HttpResponse, ApiError> {
    Ok(json_ok(email_answer(
        &caller.state,
        req.query_string(),
        rid.as_str(),
    )?))
}
