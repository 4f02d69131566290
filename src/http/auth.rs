//! Authentication and scopes, as typed extractors.
//!
//! A handler that needs a scope names it in its signature (`Authed<NotesWrite>`) and
//! cannot run without it. Keys are looked up by the hash of the presented secret; the
//! key's workspace, revocation and its creator's membership are checked on every request,
//! so revocation and loss of access take effect on the next request.

use super::errors::{ApiError, ErrorKind};
use super::state::AppState;
use actix_web::dev::Payload;
use actix_web::{web, FromRequest, HttpMessage, HttpRequest};
use actors::actor::WorkspaceHandle;
use actors::model::{ApiKey, Scope};
use actors::registry::Slot;
use actors::state::WorkspaceState;
use std::future::{ready, Ready};
use std::marker::PhantomData;
use std::sync::Arc;

/// A scope an endpoint requires.
pub trait RequiredScope {
    const SCOPE: Scope;
}

pub struct Read;
pub struct NotesWrite;
pub struct TasksWrite;
pub struct RecordsWrite;
pub struct WebhooksWrite;

impl RequiredScope for Read {
    const SCOPE: Scope = Scope::Read;
}
impl RequiredScope for NotesWrite {
    const SCOPE: Scope = Scope::NotesWrite;
}
impl RequiredScope for TasksWrite {
    const SCOPE: Scope = Scope::TasksWrite;
}
impl RequiredScope for RecordsWrite {
    const SCOPE: Scope = Scope::RecordsWrite;
}
impl RequiredScope for WebhooksWrite {
    const SCOPE: Scope = Scope::WebhooksWrite;
}

/// An authenticated caller holding scope `S`, with its workspace's current state.
pub struct Authed<S: RequiredScope> {
    pub key: Arc<ApiKey>,
    pub workspace: WorkspaceHandle,
    /// The state as of this request: one consistent view for the whole request.
    pub state: Arc<WorkspaceState>,
    _scope: PhantomData<S>,
}

pub(crate) use super::request::bearer;

/// How many requests without a valid key the peer had made in the window, this one
/// included (the access log writes only the first few of them).
#[derive(Clone, Copy, Debug)]
pub(crate) struct PeerFailure(pub u64);

/// The key and workspace of a request, with the scope `S`; a request without a valid
/// key also spends its peer's budget of refusals (see `ratelimit::PeerFailures`).
pub fn authenticate<S: RequiredScope>(req: &HttpRequest) -> Result<Authed<S>, ApiError> {
    let app = req
        .app_data::<web::Data<AppState>>()
        .expect("AppState is registered");
    let outcome = authenticate_key::<S>(req, app);
    let Err(e) = &outcome else {
        return outcome;
    };
    if !matches!(e.kind, ErrorKind::Unauthorized) {
        return outcome;
    }
    // A request another node passed on was counted there, against its client's
    // address; counted here it would spend the passing node's budget, which every
    // client of that node shares.
    if req.extensions().contains::<super::node::FromNode>() {
        return outcome;
    }
    let Some(peer) = req.peer_addr().map(|a| a.ip()) else {
        return outcome;
    };
    if let Some(retry_after) = app.peer_failures.blocked(peer) {
        let seen = app.peer_failures.fail(peer);
        req.extensions_mut().insert(PeerFailure(seen));
        return Err(ApiError::new(
            ErrorKind::RateLimited { retry_after },
            "too many requests without a valid API key from this address; retry after the \
             indicated delay",
        ));
    }
    let seen = app.peer_failures.fail(peer);
    req.extensions_mut().insert(PeerFailure(seen));
    outcome
}

fn authenticate_key<S: RequiredScope>(
    req: &HttpRequest,
    app: &web::Data<AppState>,
) -> Result<Authed<S>, ApiError> {
    let token = bearer(req)?;
    let unknown = || ApiError::unauthorized("unknown or revoked API key");
    let key = app.keys.by_secret(token).ok_or_else(unknown)?;
    if key.revoked {
        return Err(unknown());
    }
    // Every request of a valid key counts against its budget, whatever it then answers;
    // the decision also goes on the response as `RateLimit` headers.
    let decision = app.limiter.check(&key);
    req.extensions_mut().insert(decision);
    req.extensions_mut()
        .insert(super::request::CallerKey(key.clone()));
    if !decision.allowed {
        return Err(ApiError::new(
            ErrorKind::RateLimited {
                retry_after: decision.retry_after,
            },
            format!(
                "this API key's budget of {} requests per minute is spent; retry after the indicated delay",
                decision.limit
            ),
        ));
    }
    let workspace = match app.registry.slot(key.workspace_id) {
        Some(Slot::Ready(h)) => h,
        Some(Slot::Loading) => {
            return Err(ApiError::new(
                ErrorKind::Unavailable { retry_after: 5 },
                "the workspace is still loading; retry after the indicated delay",
            ))
        }
        None => return Err(unknown()),
    };
    let state = workspace.state();
    if !state.user_is_active(key.created_by) {
        return Err(ApiError::unauthorized(
            "API key no longer valid: its creator has lost access to the workspace",
        ));
    }
    if !key.scopes.contains(S::SCOPE) {
        return Err(ApiError::new(
            ErrorKind::ForbiddenScope,
            format!("this API key lacks the {} scope", S::SCOPE.as_str()),
        ));
    }
    Ok(Authed {
        key,
        workspace,
        state,
        _scope: PhantomData,
    })
}

impl<S: RequiredScope> FromRequest for Authed<S> {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(authenticate::<S>(req))
    }
}
