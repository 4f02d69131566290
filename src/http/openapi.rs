//! `GET /v1/openapi.json`: the API's OpenAPI 3.1 document, as committed in
//! `docs/openapi.json` and embedded in the binary when it is built (so the copy in the
//! repository and the one served cannot differ). No key is needed: the document is
//! public, and clients fetch it before they have one.

use actix_web::http::header;
use actix_web::HttpResponse;

/// The document, byte for byte as `docs/openapi.json`.
pub static DOCUMENT: &[u8] = include_bytes!("../../docs/openapi.json");

pub async fn document() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        // It changes only with the binary: caches may keep it for a while.
        .insert_header((header::CACHE_CONTROL, "public, max-age=300"))
        .body(DOCUMENT)
}
