//! The public API over HTTPS: routes, extractors, errors.
//!
//! ## Map
//! - [`context`]: request ids and the error envelope (middleware).
//! - [`errors`]: error kinds → status and the spec's eight codes.
//! - [`auth`]: bearer keys and scopes as typed extractors.
//! - [`query`]: strict query-string decoding.
//! - [`records`]: lists, single records, counts.
//! - [`search`]: phone and e-mail lookups from the in-memory indexes.
//! - [`body`]: write bodies: size cap, JSON object of known fields, exact field types.
//! - [`writes`]: notes, tasks and record edits, through the workspace actor.
//!
//! Every handler is an adapter: parse input, read the workspace state (or ask its actor),
//! render the response view.

pub mod auth;
pub mod body;
pub mod context;
pub mod errors;
pub mod query;
pub mod records;
pub mod search;
pub mod writes;

use actix_web::{middleware, web, HttpRequest};
use actors::model::Entity;
use actors::query::CursorKey;
use actors::registry::Registry;
use errors::ApiError;
use std::sync::Arc;

/// Shared by every API handler.
pub struct AppState {
    pub registry: Arc<Registry>,
    pub cursor_key: CursorKey,
}

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

/// The default service of an application: 404 for any path it does not know.
pub async fn no_such_path() -> Refusal {
    Err(ApiError::not_found("no such path"))
}

/// Registers the API's routes.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/v1/counts")
            .route(web::get().to(records::counts))
            .default_service(refuse_methods_but("GET")),
    )
    // Before `/v1/{entity}/{id}`, which would otherwise take these paths.
    .service(
        web::resource("/v1/search/phone")
            .route(web::get().to(search::phone))
            .default_service(refuse_methods_but("GET")),
    )
    .service(
        web::resource("/v1/search/email")
            .route(web::get().to(search::email))
            .default_service(refuse_methods_but("GET")),
    )
    .service(
        web::resource("/v1/{entity}")
            .route(web::get().to(records::list))
            .route(web::post().to(writes::create))
            .default_service(web::to(collection_fallback)),
    )
    .service(
        web::resource("/v1/{entity}/{id}")
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
