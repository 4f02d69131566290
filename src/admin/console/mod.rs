//! The operator console: a page on the admin listener that shows the cluster's nodes,
//! its workspaces and this node's live traffic, refreshing itself. Read-only.
//!
//! - `GET /admin/console`: the page (`console.html`), or, without a session, the login
//!   form (`login.html`) answered 401. `GET /admin/console/console.js|console.css`: its
//!   script and style, which hold no data and are served to anyone (the login form
//!   needs the style).
//! - `POST /admin/console/login` (form field `token`, the admin token, compared in
//!   constant time) opens a session ([`sessions`]) and answers 303 to the page with its
//!   cookie; `POST /admin/console/logout` ends it.
//! - `GET /admin/v1/console/overview` ([`overview`]: the nodes, and the workspaces with
//!   their writer, position and holders), `…/traffic` ([`traffic`]: requests, errors,
//!   p50 and p99 per route and interval), `…/workspaces?q=` and `…/workspaces/{id}`
//!   ([`workspaces`]: search, and one workspace's counts, positions, webhook endpoints
//!   and keys). Authorised by the session's cookie, or by the admin token as a bearer
//!   (scripts); 401 otherwise.
//!
//! A session authorises these reads and nothing else: imports and keys take the bearer
//! token alone (`super::check_token`), so a cookie, which a browser sends by itself,
//! can change nothing. With the cookie `SameSite=Strict`, no other site's page can send
//! it either, and no CSRF token is needed. Every answer carries a Content-Security-Policy
//! that allows the console's own origin alone (no inline script or style, no other
//! host), and is never cached.

pub mod overview;
pub mod sessions;
pub mod traffic;
pub mod workspaces;

use super::AdminState;
use crate::http::errors::ApiError;
use crate::http::refuse_methods_but;
use crate::http::request::OwnBody;
use actix_web::http::header;
use actix_web::{middleware, web, HttpRequest, HttpResponse};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The page's path.
pub const PAGE: &str = "/admin/console";

/// What the console keeps (see the module's docs).
pub struct Console {
    pub sessions: sessions::Sessions,
    pub traffic: Arc<traffic::Traffic>,
    /// How often the traffic is sampled.
    pub sample_every: Duration,
    pub(crate) cache: overview::Cache,
}

impl Console {
    pub fn new(sample_every: Duration) -> Self {
        Console {
            sessions: Default::default(),
            traffic: Default::default(),
            sample_every,
            cache: Default::default(),
        }
    }
}

/// The headers of every console answer: the page may load its own script and style
/// and talk to its own origin, nothing else; it is never framed or cached, and sends no
/// referrer.
fn headers() -> middleware::DefaultHeaders {
    middleware::DefaultHeaders::new()
        .add((
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
             connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ))
        .add((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .add((header::X_FRAME_OPTIONS, "DENY"))
        .add((header::REFERRER_POLICY, "no-referrer"))
        .add((header::CACHE_CONTROL, "no-store"))
}

/// The console's routes on the admin app.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope(PAGE)
            .wrap(headers())
            .service(
                web::resource("")
                    .route(web::get().to(page))
                    .default_service(refuse_methods_but("GET")),
            )
            .service(
                web::resource("/login")
                    .route(web::post().to(login))
                    .default_service(refuse_methods_but("POST")),
            )
            .service(
                web::resource("/logout")
                    .route(web::post().to(logout))
                    .default_service(refuse_methods_but("POST")),
            )
            .service(
                web::resource("/console.js")
                    .route(web::get().to(script))
                    .default_service(refuse_methods_but("GET")),
            )
            .service(
                web::resource("/console.css")
                    .route(web::get().to(style))
                    .default_service(refuse_methods_but("GET")),
            ),
    )
    .service(
        web::scope("/admin/v1/console")
            .wrap(headers())
            .service(
                web::resource("/overview")
                    .route(web::get().to(overview::get))
                    .default_service(refuse_methods_but("GET")),
            )
            .service(
                web::resource("/traffic")
                    .route(web::get().to(traffic_series))
                    .default_service(refuse_methods_but("GET")),
            )
            .service(
                web::resource("/workspaces")
                    .route(web::get().to(workspaces::search))
                    .default_service(refuse_methods_but("GET")),
            )
            .service(
                web::resource("/workspaces/{id}")
                    .route(web::get().to(workspaces::get))
                    .default_service(refuse_methods_but("GET")),
            ),
    );
}

/// Whether a request may read the console: a session's cookie, or the admin token as a
/// bearer. A request that sends an `Authorization` header is judged by it alone.
pub fn check_reader(req: &HttpRequest, state: &AdminState) -> Result<(), ApiError> {
    if req.headers().contains_key(header::AUTHORIZATION) {
        return super::check_token(req, state);
    }
    match sessions::presented(req) {
        Some(id) if state.console.sessions.holds(id, Instant::now()) => Ok(()),
        _ => Err(ApiError::unauthorized(
            "log in at /admin/console, or send the admin token as a bearer",
        )),
    }
}

const CONSOLE_HTML: &str = include_str!("console.html");
const LOGIN_HTML: &str = include_str!("login.html");
const CONSOLE_JS: &str = include_str!("console.js");
const CONSOLE_CSS: &str = include_str!("console.css");

/// An HTML answer that keeps its own body (the request context writes JSON errors).
fn html(status: actix_web::http::StatusCode, body: String) -> HttpResponse {
    let mut res = HttpResponse::build(status)
        .content_type("text/html; charset=utf-8")
        .body(body);
    res.extensions_mut().insert(OwnBody);
    res
}

/// The login form, with a message (never anything the request sent).
fn login_form(message: &str) -> HttpResponse {
    let mut res = html(
        actix_web::http::StatusCode::UNAUTHORIZED,
        LOGIN_HTML.replace("<!--message-->", message),
    );
    // RFC 9110: a 401 names a scheme; the form is how a browser gets in.
    res.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static("Bearer realm=\"recruitd\""),
    );
    res
}

/// `GET /admin/console`.
async fn page(req: HttpRequest, state: web::Data<AdminState>) -> HttpResponse {
    match check_reader(&req, &state) {
        Ok(()) => html(actix_web::http::StatusCode::OK, CONSOLE_HTML.to_string()),
        Err(_) => login_form(""),
    }
}

/// Longest login body read.
const LOGIN_BODY: usize = 4096;

/// `POST /admin/console/login`: the admin token in a form, once.
async fn login(body: web::Bytes, state: web::Data<AdminState>) -> HttpResponse {
    let token = (body.len() <= LOGIN_BODY)
        .then(|| {
            url::form_urlencoded::parse(&body)
                .find(|(name, _)| name == "token")
                .map(|(_, value)| value.trim().to_string())
        })
        .flatten();
    match token {
        Some(t) if super::token_matches(&t, &state.token) => {
            let sessions = &state.console.sessions;
            let id = sessions.open(Instant::now());
            // The admin listener serves plain HTTP: a `Secure` cookie would not come back.
            let cookie = sessions::set_cookie(&id, sessions.lifetime(), false);
            HttpResponse::SeeOther()
                .insert_header((header::LOCATION, PAGE))
                .insert_header((header::SET_COOKIE, cookie))
                .finish()
        }
        _ => login_form("<p class=\"refused\">That is not the admin token.</p>"),
    }
}

/// `POST /admin/console/logout`.
async fn logout(req: HttpRequest, state: web::Data<AdminState>) -> HttpResponse {
    if let Some(id) = sessions::presented(&req) {
        state.console.sessions.close(id);
    }
    HttpResponse::SeeOther()
        .insert_header((header::LOCATION, PAGE))
        .insert_header((header::SET_COOKIE, sessions::clear_cookie()))
        .finish()
}

async fn script() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/javascript; charset=utf-8")
        .body(CONSOLE_JS)
}

async fn style() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/css; charset=utf-8")
        .body(CONSOLE_CSS)
}

/// `GET /admin/v1/console/traffic`.
async fn traffic_series(
    req: HttpRequest,
    state: web::Data<AdminState>,
    rid: crate::http::request::RequestId,
) -> Result<HttpResponse, ApiError> {
    check_reader(&req, &state)?;
    let series = state.console.traffic.series(state.console.sample_every);
    crate::http::envelope::Envelope::of(&serde_json::json!({
        "node": state.membership.me().name,
        "sample_every_ms": series.sample_every_ms,
        "at_ms": series.at_ms,
        "routes": series.routes,
    }))?
    .respond(rid.as_str())
}
