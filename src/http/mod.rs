//! The public API over HTTPS: routes, extractors, errors.
//!
//! ## Map
//! - [`context`]: request ids and the error envelope (middleware); [`request`]: what
//!   the layer reads off a request (its id, key, bearer token).
//! - [`envelope`]: the success envelope every JSON answer is written with.
//! - [`errors`]: error kinds → status and the spec's eight codes.
//! - [`auth`]: bearer keys and scopes as typed extractors.
//! - [`query`]: strict query-string decoding.
//! - [`records`]: lists, single records, counts.
//! - [`changes`]: the change feed, `GET /v1/changes`, and its tokens.
//! - [`subresources`]: a record's notes and attachments.
//! - [`downloads`]: signed download URLs for attachments.
//! - [`search`]: phone and e-mail lookups from the in-memory indexes.
//! - [`body`]: write bodies: size cap, JSON object of known fields, exact field types.
//! - [`writes`]: notes, tasks and record edits, through the workspace actor.
//! - [`webhooks`]: `/v1/webhooks`, the workspace's webhook endpoints.
//! - [`forwarding`]: the cluster's hop, a middleware of its own: a request for a
//!   workspace another node writes is answered there; [`node`]: what one node asks of
//!   another (outside the API).
//! - [`files`]: `/files/…`, the bytes behind signed URLs; outside the API (no key, its own
//!   object-store-style answers).
//! - [`openapi`]: `GET /v1/openapi.json`, the API's OpenAPI document (the committed
//!   `docs/openapi.json`, which the API tests' builder checks against the routes).
//! - [`ratelimit`]: per-key budgets and the `RateLimit` headers.
//! - [`report`]: what a copy of a workspace says of it, for the operator console.
//! - [`signed_urls`]: signing and checking download URLs.
//! - [`state`]: [`AppState`](state::AppState), what every handler shares.
//!
//! [`API_RESOURCES`] lists every resource of the API and [`allowed_methods`] the methods
//! each serves per entity: [`configure`] registers exactly those resources, 405 answers
//! take their `Allow` header from the same function, and the OpenAPI document is built
//! from both, so a route cannot be added without the document knowing of it.
//!
//! Every handler is an adapter: parse input, read the workspace state (or ask its actor),
//! render the response view.

pub mod auth;
pub mod body;
pub mod changes;
pub mod context;
pub mod downloads;
pub mod envelope;
pub mod errors;
pub mod files;
pub mod forwarding;
pub mod node;
pub mod openapi;
pub mod pages;
pub mod query;
pub mod ratelimit;
pub mod records;
pub mod report;
pub mod request;
pub mod search;
pub mod signed_urls;
pub mod state;
pub mod subresources;
pub mod webhooks;
pub mod writes;

use actix_web::dev::{ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::{middleware, web, HttpRequest};
use actors::model::Entity;
use errors::ApiError;

use crate::http::signed_urls::FILES_PATH;

/// `GET /v1/openapi.json`.
pub const OPENAPI: &str = "/v1/openapi.json";
/// `GET /v1/counts`.
pub const COUNTS: &str = "/v1/counts";
/// `GET /v1/changes`.
pub const CHANGES: &str = "/v1/changes";
/// `GET /v1/search/phone`.
pub const SEARCH_PHONE: &str = "/v1/search/phone";
/// `GET /v1/search/email`.
pub const SEARCH_EMAIL: &str = "/v1/search/email";
/// `GET /v1/attachments/{id}/download`.
pub const DOWNLOAD: &str = "/v1/attachments/{id}/download";
/// `GET /v1/{entity}/{id}/notes`.
pub const SUB_NOTES: &str = "/v1/{entity}/{id}/notes";
/// `GET /v1/{entity}/{id}/attachments`.
pub const SUB_ATTACHMENTS: &str = "/v1/{entity}/{id}/attachments";
/// `GET`, `POST /v1/webhooks`.
pub const WEBHOOKS: &str = "/v1/webhooks";
/// `GET`, `PATCH`, `DELETE` of `/v1/webhooks/{id}`.
pub const WEBHOOK: &str = "/v1/webhooks/{id}";
/// `POST /v1/webhooks/{id}/replay`.
pub const WEBHOOK_REPLAY: &str = "/v1/webhooks/{id}/replay";
/// `POST /v1/webhooks/{id}/rotate-secret`.
pub const WEBHOOK_ROTATE: &str = "/v1/webhooks/{id}/rotate-secret";
/// `GET /v1/webhooks/{id}/deliveries`.
pub const WEBHOOK_DELIVERIES: &str = "/v1/webhooks/{id}/deliveries";
/// `GET /v1/{entity}`, `POST /v1/notes`, `POST /v1/tasks`.
pub const COLLECTION: &str = "/v1/{entity}";
/// `GET`, `PATCH`, `DELETE` of `/v1/{entity}/{id}`.
pub const ITEM: &str = "/v1/{entity}/{id}";

/// Every resource of the API, in routing order: fixed paths before the `{entity}`
/// patterns that would otherwise take them (`/v1/search/phone` is no record of an entity
/// named `search`, `/v1/openapi.json` no list of one named `openapi.json`, and
/// `/v1/webhooks` no entity either).
pub const API_RESOURCES: [&str; 15] = [
    OPENAPI,
    COUNTS,
    CHANGES,
    SEARCH_PHONE,
    SEARCH_EMAIL,
    DOWNLOAD,
    WEBHOOKS,
    WEBHOOK_REPLAY,
    WEBHOOK_ROTATE,
    WEBHOOK_DELIVERIES,
    WEBHOOK,
    SUB_NOTES,
    SUB_ATTACHMENTS,
    COLLECTION,
    ITEM,
];

/// The methods served on a resource of [`API_RESOURCES`] (for an `{entity}` pattern, on
/// that entity's path), as an `Allow` header lists them. The sub-resources of an entity
/// that has none still exist as paths (GET answers 400, saying why).
pub fn allowed_methods(pattern: &str, entity: Option<Entity>) -> &'static str {
    match (pattern, entity) {
        (COLLECTION, Some(e)) => collection_methods(e),
        (ITEM, Some(e)) => item_methods(e),
        (WEBHOOKS, _) => "GET, POST",
        (WEBHOOK, _) => "GET, PATCH, DELETE",
        (WEBHOOK_REPLAY | WEBHOOK_ROTATE, _) => "POST",
        _ => "GET",
    }
}

/// The name of the signed-file route (its pattern).
const FILES_ROUTE: &str = "/files/{workspace}/{object}";

/// Every route, by the name it is registered under (its pattern): logs and metrics label
/// requests with these `'static` strings instead of allocating the matched pattern. The
/// API's resources, then the signed-file route.
pub const ROUTES: [&str; API_RESOURCES.len() + 1] = {
    let mut routes = [FILES_ROUTE; API_RESOURCES.len() + 1];
    let mut i = 0;
    while i < API_RESOURCES.len() {
        routes[i] = API_RESOURCES[i];
        i += 1;
    }
    routes
};

/// Methods served on `/v1/{entity}`.
fn collection_methods(e: Entity) -> &'static str {
    match e {
        Entity::Notes | Entity::Tasks => "GET, POST",
        _ => "GET",
    }
}

/// Methods served on `/v1/{entity}/{id}`.
fn item_methods(e: Entity) -> &'static str {
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

const NOTES: &[Entity] = &[Entity::Notes];
const TASKS: &[Entity] = &[Entity::Tasks];
/// The entities whose allow-listed fields `PATCH` edits (scope `records:write`).
const RECORDS: &[Entity] = &[
    Entity::Candidates,
    Entity::Contacts,
    Entity::Companies,
    Entity::Jobs,
];

/// Routes a request of an `{entity}` resource by the entity its path names, as the
/// router reads it (percent-escapes decoded), so that each entity's writes reach a
/// handler that names its scope. The methods each entity serves are
/// [`allowed_methods`]'s; the OpenAPI test checks the two agree.
fn entity_is(entities: &'static [Entity]) -> impl actix_web::guard::Guard {
    actix_web::guard::fn_guard(move |ctx| {
        let segment = ctx.head().uri.path().split('/').nth(2).unwrap_or_default();
        query::percent_decode_strict(segment)
            .and_then(|name| Entity::parse(&name))
            .is_some_and(|e| entities.contains(&e))
    })
}

/// The default service of an `{entity}` resource: an unknown entity is no path at all
/// (404); a known one has the path, and any method it does not serve is refused with 405.
fn entity_fallback(pattern: &'static str) -> actix_web::Route {
    web::to(move |req: HttpRequest| async move {
        Err::<actix_web::HttpResponse, _>(
            match req.match_info().get("entity").and_then(Entity::parse) {
                Some(e) => ApiError::method_not_allowed(allowed_methods(pattern, Some(e))),
                None => ApiError::not_found("no such path"),
            },
        )
    })
}

/// The default service of an application: 404 for any path it does not know.
pub async fn no_such_path() -> Refusal {
    Err(ApiError::not_found("no such path"))
}

/// The resource behind one pattern of [`API_RESOURCES`].
fn resource(pattern: &'static str) -> actix_web::Resource {
    // Named by its pattern: logs and metrics read the name (see `ROUTES`).
    let r = web::resource(pattern).name(pattern);
    match pattern {
        OPENAPI => r
            .route(web::get().to(openapi::document))
            .default_service(refuse_methods_but("GET")),
        COUNTS => r
            .route(web::get().to(records::counts))
            .default_service(refuse_methods_but("GET")),
        CHANGES => r
            .route(web::get().to(changes::changes))
            .default_service(refuse_methods_but("GET")),
        SEARCH_PHONE => r
            .route(web::get().to(search::phone))
            .default_service(refuse_methods_but("GET")),
        SEARCH_EMAIL => r
            .route(web::get().to(search::email))
            .default_service(refuse_methods_but("GET")),
        DOWNLOAD => r
            .route(web::get().to(downloads::download))
            .default_service(refuse_methods_but("GET")),
        WEBHOOKS => r
            .route(web::get().to(webhooks::list))
            .route(web::post().to(webhooks::create))
            .default_service(refuse_methods_but(allowed_methods(pattern, None))),
        WEBHOOK => r
            .route(web::get().to(webhooks::get))
            .route(web::patch().to(webhooks::patch))
            .route(web::delete().to(webhooks::delete))
            .default_service(refuse_methods_but(allowed_methods(pattern, None))),
        WEBHOOK_REPLAY => r
            .route(web::post().to(webhooks::replay))
            .default_service(refuse_methods_but("POST")),
        WEBHOOK_ROTATE => r
            .route(web::post().to(webhooks::rotate_secret))
            .default_service(refuse_methods_but("POST")),
        WEBHOOK_DELIVERIES => r
            .route(web::get().to(webhooks::deliveries))
            .default_service(refuse_methods_but("GET")),
        SUB_NOTES => r
            .route(web::get().to(subresources::notes))
            .default_service(entity_fallback(pattern)),
        SUB_ATTACHMENTS => r
            .route(web::get().to(subresources::attachments))
            .default_service(entity_fallback(pattern)),
        COLLECTION => r
            .route(web::get().to(records::list))
            .route(web::post().guard(entity_is(NOTES)).to(writes::create_note))
            .route(web::post().guard(entity_is(TASKS)).to(writes::create_task))
            .default_service(entity_fallback(pattern)),
        ITEM => r
            .route(web::get().to(records::get))
            .route(web::patch().guard(entity_is(NOTES)).to(writes::patch_note))
            .route(web::patch().guard(entity_is(TASKS)).to(writes::patch_task))
            .route(
                web::patch()
                    .guard(entity_is(RECORDS))
                    .to(writes::patch_record),
            )
            .route(
                web::delete()
                    .guard(entity_is(NOTES))
                    .to(writes::delete_note),
            )
            .route(
                web::delete()
                    .guard(entity_is(TASKS))
                    .to(writes::delete_task),
            )
            .default_service(entity_fallback(pattern)),
        other => unreachable!("{other} is not a resource of the API"),
    }
}

/// Registers the API's routes: the resources of [`API_RESOURCES`], in that order, and
/// the file route behind signed URLs, which is not part of the API.
pub fn configure(cfg: &mut web::ServiceConfig) {
    for pattern in API_RESOURCES {
        cfg.service(resource(pattern));
    }
    // Not part of the API: the bytes behind signed URLs, reached without a key.
    cfg.service(
        web::resource(format!("{FILES_PATH}/{{workspace}}/{{object}}"))
            .name(FILES_ROUTE)
            .route(web::get().to(files::serve))
            .default_service(refuse_methods_but("GET")),
    );
}

/// The service of an application this server runs (the API's, the admin interface's),
/// as actix-web builds it from an `App`: named once, for the two `app` functions.
pub trait AppServiceFactory:
    ServiceFactory<
    ServiceRequest,
    Config = (),
    Response = ServiceResponse,
    Error = actix_web::Error,
    InitError = (),
>
{
}

impl<T> AppServiceFactory for T where
    T: ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse,
        Error = actix_web::Error,
        InitError = (),
    >
{
}

/// The whole API application, as each HTTPS worker builds it.
pub fn app(state: web::Data<state::AppState>) -> actix_web::App<impl AppServiceFactory> {
    actix_web::App::new()
        .app_data(state)
        .configure(configure)
        .default_service(web::to(no_such_path))
        .wrap(middleware::from_fn(forwarding::forwarding))
        .wrap(middleware::from_fn(context::request_context))
}
