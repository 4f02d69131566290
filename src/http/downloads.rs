//! `GET /v1/attachments/{id}/download`: a signed URL for an attachment's bytes, as a 302
//! redirect or, with `redirect=false`, as JSON.
//!
//! The id is the full prefixed one (`cv:…`, `file:…`, `cvdoc:…`, `clientfile:…`), its
//! colon raw or escaped as `%3A`. It is read from the raw request path and decoded here,
//! strictly: the router has already decoded some escapes and would let an invalid one
//! through, and the spec answers an invalid escape with 400.
//!
//! The URL is only handed out when the bytes are there now: an attachment whose bytes
//! never arrived, or whose object the blob store cannot find, is 404. Bytes that vanish
//! later are the file route's `NoSuchKey` (`http::files`).

use super::auth::{Authed, Read};
use super::envelope::Envelope;
use super::errors::ApiError;
use super::files::{served_content_type, served_filename};
use super::query::{percent_decode_strict, QueryParams};
use super::request::RequestId;
use super::state::AppState;
use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use actors::model::split_attachment_id;
use serde::Serialize;
use std::sync::Arc;

#[derive(Serialize)]
struct DownloadOut<'a> {
    url: &'a str,
    /// Always true in v1.
    signed: bool,
    expires_in: i64,
    filename: &'a str,
    content_type: &'a str,
}

/// The `{id}` segment of `/v1/attachments/{id}/download` as sent. The router matched the
/// path with only `%2F`, `%25` and `%2B` left escaped, so the raw path has the same
/// segments: the fourth is the id.
fn raw_id(req: &HttpRequest) -> &str {
    req.uri().path().split('/').nth(3).unwrap_or("")
}

pub async fn download(
    caller: Authed<Read>,
    req: HttpRequest,
    q: QueryParams,
    rid: RequestId,
    app: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let id = percent_decode_strict(raw_id(&req))
        .ok_or_else(|| ApiError::bad_request("attachment id has an invalid percent-escape"))?;
    if split_attachment_id(&id).is_none() {
        return Err(ApiError::bad_request(format!(
            "attachment id {id:?} is malformed: expected <kind>:<identifier> with kind cv, file, cvdoc or clientfile"
        )));
    }
    // Only the exact value `false` asks for JSON; anything else redirects.
    let redirect = q.get("redirect")? != Some("false");
    let ws = &caller.state;
    let a = ws
        .attachments
        .get_visible(&Arc::from(&*id))
        .ok_or_else(|| ApiError::not_found(format!("no attachments record with id {id:?}")))?;
    if !a.has_content() {
        return Err(ApiError::not_found(
            "this attachment's file never arrived: there is nothing to download",
        ));
    }
    let (workspace, object) = (ws.id(), id.to_string());
    let blobs = app.blobs.clone();
    let stored = web::block(move || blobs.stat(workspace, &object))
        .await
        .map_err(|e| ApiError::internal(anyhow::anyhow!("blob stat task: {e}")))??;
    if stored.is_none() {
        return Err(ApiError::not_found(
            "this attachment's stored file cannot be found: there is nothing to download",
        ));
    }
    let signed = app
        .downloads
        .signer
        .sign(workspace, &id, app.downloads.clock.now());
    if redirect {
        return Ok(HttpResponse::Found()
            .insert_header((header::LOCATION, signed.url))
            // The location is a credential while it lasts: no cache keeps it.
            .insert_header((header::CACHE_CONTROL, "no-store"))
            .finish());
    }
    let out = DownloadOut {
        url: &signed.url,
        signed: true,
        expires_in: signed.expires_in,
        filename: served_filename(a),
        content_type: served_content_type(a),
    };
    let mut res = Envelope::of(&out)?.respond(rid.as_str())?;
    res.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-store"),
    );
    Ok(res)
}
