//! `GET /v1/search/phone` and `GET /v1/search/email`: the in-call lookups.
//!
//! The hot path: the key ring and the registry are concurrent maps, the workspace state
//! is an `Arc` loaded without a lock, the query string is decoded in place, the lookup
//! reads the state's fst indexes, and the answer is serialised straight from the records
//! into one buffer. No actor round trip and no store access, so searches keep answering
//! while the store is unreachable.

use super::auth::{Authed, Read};
use super::context::RequestId;
use super::errors::ApiError;
use super::query::Query;
use super::records::json_response;
use actix_web::{HttpRequest, HttpResponse};
use actors::query::Limit;
use actors::search::results::{search_email, search_phone, SEARCH_MAX_LIMIT};
use serde::Serialize;

fn search_limit(q: &Query<'_>) -> Result<usize, ApiError> {
    match q.get("limit")? {
        Some(raw) => Ok(Limit::parse(raw, SEARCH_MAX_LIMIT)
            .map_err(ApiError::bad_request)?
            .get()),
        None => Ok(SEARCH_MAX_LIMIT),
    }
}

/// `{"data": …, "request_id": …}` written into one buffer sized for a typical answer.
fn body<T: Serialize>(data: &T, rid: &RequestId) -> Result<HttpResponse, ApiError> {
    let mut buf = Vec::with_capacity(1024);
    buf.extend_from_slice(b"{\"data\":");
    serde_json::to_writer(&mut buf, data).map_err(ApiError::internal)?;
    buf.extend_from_slice(b",\"request_id\":");
    serde_json::to_writer(&mut buf, rid.as_str()).map_err(ApiError::internal)?;
    buf.push(b'}');
    Ok(json_response(buf))
}

pub async fn phone(
    caller: Authed<Read>,
    req: HttpRequest,
    rid: RequestId,
) -> Result<HttpResponse, ApiError> {
    let q = Query::parse(req.query_string())?;
    let number = q.get_any(&["number", "phone", "q"])?.ok_or_else(|| {
        ApiError::bad_request("query parameter number is required (aliases: phone, q)")
    })?;
    let limit = search_limit(&q)?;
    let result = search_phone(&caller.state, number, limit);
    body(&result, &rid)
}

pub async fn email(
    caller: Authed<Read>,
    req: HttpRequest,
    rid: RequestId,
) -> Result<HttpResponse, ApiError> {
    let q = Query::parse(req.query_string())?;
    let address = q.get_any(&["address", "email", "q"])?.ok_or_else(|| {
        ApiError::bad_request("query parameter address is required (aliases: email, q)")
    })?;
    if address.trim().is_empty() {
        return Err(ApiError::bad_request(
            "query parameter address must not be empty",
        ));
    }
    let limit = search_limit(&q)?;
    let result = search_email(&caller.state, address, limit);
    body(&result, &rid)
}
