//! The public API over HTTPS: routes, extractors, errors.
//!
//! ## Map
//! - [`context`]: request ids and the error envelope (middleware).
//! - [`errors`]: error kinds → status and the spec's eight codes.
//! - [`auth`]: bearer keys and scopes as typed extractors.
//! - [`query`]: strict query-string decoding.
//! - [`records`]: lists, single records, counts.
//! - [`subresources`]: a record's notes and attachments.
//! - [`downloads`]: signed download URLs for attachments.
//! - [`search`]: phone and e-mail lookups from the in-memory indexes.
//! - [`body`]: write bodies: size cap, JSON object of known fields, exact field types.
//! - [`writes`]: notes, tasks and record edits, through the workspace actor.
//! - [`files`]: `/files/…`, the bytes behind signed URLs; outside the API (no key, its own
//!   object-store-style answers).
//!
//! Every handler is an adapter: parse input, read the workspace state (or ask its actor),
//! render the response view.

pub mod auth;
pub mod body;
pub mod context;
pub mod downloads;
pub mod errors;
pub mod files;
pub mod query;
pub mod records;
pub mod search;
pub mod subresources;
pub mod writes;

use actix_web::{middleware, web, HttpRequest};
use actors::model::Entity;
use actors::query::CursorKey;
use actors::registry::Registry;
use errors::ApiError;
use std::sync::Arc;

use crate::signed_urls::{Clock, UrlSigner, FILES_PATH};

/// Shared by every API handler.
pub struct AppState {
    pub registry: Arc<Registry>,
    pub cursor_key: CursorKey,
    pub downloads: Downloads,
    /// Per-key request budgets.
    pub limiter: crate::ratelimit::RateLimiter,
    pub metrics: Arc<crate::metrics::Metrics>,
}

/// What signing download URLs and serving them takes.
#[derive(Debug)]
pub struct Downloads {
    /// Holds the download key (derived from the signing key) and the public URL.
    pub signer: UrlSigner,
    /// "Now" for both signing and checking, so tests can step across an expiry.
    pub clock: Clock,
}

/// The name of the signed-file route (its pattern).
const FILES_ROUTE: &str = "/files/{workspace}/{object}";

/// Every route, by the name it is registered under (its pattern): logs and metrics label
/// requests with these `'static` strings instead of allocating the matched pattern.
pub const ROUTES: &[&str] = &[
    "/v1/counts",
    "/v1/search/phone",
    "/v1/search/email",
    "/v1/attachments/{id}/download",
    "/v1/{entity}/{id}/notes",
    "/v1/{entity}/{id}/attachments",
    FILES_ROUTE,
    "/v1/{entity}",
    "/v1/{entity}/{id}",
];

/// Methods served on `/v1/{entity}`.
pub(crate) fn collection_methods(e: Entity) -> &'static str {
    match e {
        Entity::Notes | Entity::Tasks => "GET, POST",
        _ => "GET",
    }
}

/// Methods served on `/v1/{entity}/{id}`.
pub(crate) fn item_methods(e: Entity) -> &'static str {
    match e {
        Entity::Notes | Entity::Tasks => "GET, PATCH, DELETE",
        Entity::Candidates | Entity::Contacts | Entity::Companies | Entity::Jobs => "GET, PATCH",
        Entity::Applications | Entity::Attachments | Entity::Users => "GET",
    }
}

type Refusal = Result<actix_web::HttpResponse, ApiError>;

/// The default service of a resource: any method but `allow` is refused with 405.
pub fn refuse_methods_but(allow: &'static str) -> actix_web::Route {
    web::to(move || async move {
        Err::<actix_web::HttpResponse, _>(ApiError::method_not_allowed(allow))
    })
}

async fn collection_fallback(req: HttpRequest) -> Refusal {
    Err(
        match req.match_info().get("entity").and_then(Entity::parse) {
            Some(e) => ApiError::method_not_allowed(collection_methods(e)),
            None => ApiError::not_found("no such path"),
        },
    )
}

async fn item_fallback(req: HttpRequest) -> Refusal {
    Err(
        match req.match_info().get("entity").and_then(Entity::parse) {
            Some(e) => ApiError::method_not_allowed(item_methods(e)),
            None => ApiError::not_found("no such path"),
        },
    )
}

/// Methods served on the sub-resources of `/v1/{entity}/{id}/`: an unknown entity is no
/// path at all (404); a known one has the path, GET only (entities without the
/// sub-resource answer GET with 400, which says why).
async fn subresource_fallback(req: HttpRequest) -> Refusal {
    Err(
        match req.match_info().get("entity").and_then(Entity::parse) {
            Some(_) => ApiError::method_not_allowed("GET"),
            None => ApiError::not_found("no such path"),
        },
    )
}

/// The default service of an application: 404 for any path it does not know.
pub async fn no_such_path() -> Refusal {
    Err(ApiError::not_found("no such path"))
}

/// Registers the API's routes.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/v1/counts")
            .name("/v1/counts")
            .route(web::get().to(records::counts))
            .default_service(refuse_methods_but("GET")),
    )
    // Before `/v1/{entity}/{id}`, which would otherwise take these paths.
    .service(
        web::resource("/v1/search/phone")
            .name("/v1/search/phone")
            .route(web::get().to(search::phone))
            .default_service(refuse_methods_but("GET")),
    )
    .service(
        web::resource("/v1/search/email")
            .name("/v1/search/email")
            .route(web::get().to(search::email))
            .default_service(refuse_methods_but("GET")),
    )
    .service(
        web::resource("/v1/attachments/{id}/download")
            .name("/v1/attachments/{id}/download")
            .route(web::get().to(downloads::download))
            .default_service(refuse_methods_but("GET")),
    )
    .service(
        web::resource("/v1/{entity}/{id}/notes")
            .name("/v1/{entity}/{id}/notes")
            .route(web::get().to(subresources::notes))
            .default_service(web::to(subresource_fallback)),
    )
    .service(
        web::resource("/v1/{entity}/{id}/attachments")
            .name("/v1/{entity}/{id}/attachments")
            .route(web::get().to(subresources::attachments))
            .default_service(web::to(subresource_fallback)),
    )
    // Not part of the API: the bytes behind signed URLs, reached without a key.
    .service(
        web::resource(format!("{FILES_PATH}/{{workspace}}/{{object}}"))
            .name(FILES_ROUTE)
            .route(web::get().to(files::serve))
            .default_service(refuse_methods_but("GET")),
    )
    .service(
        web::resource("/v1/{entity}")
            .name("/v1/{entity}")
            .route(web::get().to(records::list))
            .route(web::post().to(writes::create))
            .default_service(web::to(collection_fallback)),
    )
    .service(
        web::resource("/v1/{entity}/{id}")
            .name("/v1/{entity}/{id}")
            .route(web::get().to(records::get))
            .route(web::patch().to(writes::patch))
            .route(web::delete().to(writes::delete))
            .default_service(web::to(item_fallback)),
    );
}

/// The whole API application, as each HTTPS worker builds it.
pub fn app(
    state: web::Data<AppState>,
) -> actix_web::App<
    impl actix_web::dev::ServiceFactory<
        actix_web::dev::ServiceRequest,
        Config = (),
        Response = actix_web::dev::ServiceResponse<actix_web::body::BoxBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    actix_web::App::new()
        .app_data(state)
        .configure(configure)
        .default_service(web::to(no_such_path))
        .wrap(middleware::from_fn(context::request_context))
}
