//! Errors: the one place where failure kinds become the spec's eight codes.
//!
//! Handlers return [`ApiError`]; its `ResponseError` impl sets status and headers and
//! leaves the body to the request-context middleware, which alone knows the request id
//! and writes `{error:{code,message}, request_id}`. Internal causes never reach a body;
//! they are logged with the request id.

use actix_web::http::header::{self, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use actors::actor::ImportError;
use actors::store::StoreError;
use actors::writes::WriteError;
use std::borrow::Cow;
use std::fmt;

/// Seconds a client should wait before retrying a 503.
pub const RETRY_AFTER_UNAVAILABLE: u64 = 2;

/// What went wrong, in the spec's terms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    BadRequest,
    /// A change feed `since` older than the kept log: 400 `BAD_REQUEST` whose body also
    /// says `resync_required: true` (the one answer that asks a client to sync afresh).
    ResyncRequired,
    Unauthorized,
    ForbiddenScope,
    NotFound,
    MethodNotAllowed {
        allow: &'static str,
    },
    /// 409 `CONFLICT`: the request is valid but the resource's state refuses it (a
    /// workspace with its most webhook endpoints).
    Conflict,
    RateLimited {
        retry_after: u64,
    },
    Internal,
    Unavailable {
        retry_after: u64,
    },
}

impl ErrorKind {
    pub fn status(&self) -> StatusCode {
        match self {
            ErrorKind::BadRequest | ErrorKind::ResyncRequired => StatusCode::BAD_REQUEST,
            ErrorKind::Unauthorized => StatusCode::UNAUTHORIZED,
            ErrorKind::ForbiddenScope => StatusCode::FORBIDDEN,
            ErrorKind::NotFound => StatusCode::NOT_FOUND,
            ErrorKind::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            ErrorKind::Conflict => StatusCode::CONFLICT,
            ErrorKind::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            ErrorKind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            ErrorKind::Unavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            ErrorKind::BadRequest | ErrorKind::ResyncRequired => "BAD_REQUEST",
            ErrorKind::Unauthorized => "UNAUTHORIZED",
            ErrorKind::ForbiddenScope => "FORBIDDEN_SCOPE",
            ErrorKind::NotFound => "NOT_FOUND",
            ErrorKind::MethodNotAllowed { .. } => "METHOD_NOT_ALLOWED",
            ErrorKind::Conflict => "CONFLICT",
            ErrorKind::RateLimited { .. } => "RATE_LIMITED",
            ErrorKind::Internal => "INTERNAL_ERROR",
            ErrorKind::Unavailable { .. } => "SERVICE_UNAVAILABLE",
        }
    }

    /// The kind a bare status maps to (for errors raised by the framework itself).
    pub fn from_status(s: StatusCode) -> ErrorKind {
        match s.as_u16() {
            401 => ErrorKind::Unauthorized,
            403 => ErrorKind::ForbiddenScope,
            404 => ErrorKind::NotFound,
            405 => ErrorKind::MethodNotAllowed { allow: "" },
            409 => ErrorKind::Conflict,
            429 => ErrorKind::RateLimited { retry_after: 1 },
            503 => ErrorKind::Unavailable {
                retry_after: RETRY_AFTER_UNAVAILABLE,
            },
            400..=499 => ErrorKind::BadRequest,
            _ => ErrorKind::Internal,
        }
    }
}

/// An error answer: a kind, a client-safe message, and (for 500s) the hidden cause.
pub struct ApiError {
    pub kind: ErrorKind,
    pub message: Cow<'static, str>,
    pub cause: Option<anyhow::Error>,
}

impl ApiError {
    pub fn new(kind: ErrorKind, message: impl Into<Cow<'static, str>>) -> Self {
        ApiError {
            kind,
            message: message.into(),
            cause: None,
        }
    }

    pub fn bad_request(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorKind::BadRequest, message)
    }

    pub fn not_found(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorKind::NotFound, message)
    }

    pub fn unauthorized(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorKind::Unauthorized, message)
    }

    pub fn unavailable(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(
            ErrorKind::Unavailable {
                retry_after: RETRY_AFTER_UNAVAILABLE,
            },
            message,
        )
    }

    /// A fault of the service: the client sees a generic message, the log the cause.
    pub fn internal(cause: impl Into<anyhow::Error>) -> Self {
        ApiError {
            kind: ErrorKind::Internal,
            message: "internal error; safe to retry with backoff".into(),
            cause: Some(cause.into()),
        }
    }

    pub fn method_not_allowed(allow: &'static str) -> Self {
        Self::new(
            ErrorKind::MethodNotAllowed { allow },
            format!("method not allowed on this path; allowed: {allow}"),
        )
    }
}

impl fmt::Debug for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.code(), self.message)?;
        if let Some(c) = &self.cause {
            write!(f, "\nCaused by: {c:?}")?;
        }
        Ok(())
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.kind.status()
    }

    fn error_response(&self) -> HttpResponse {
        let mut res = HttpResponse::build(self.status_code());
        match &self.kind {
            ErrorKind::MethodNotAllowed { allow } => {
                res.insert_header((header::ALLOW, HeaderValue::from_static(allow)));
            }
            ErrorKind::RateLimited { retry_after } | ErrorKind::Unavailable { retry_after } => {
                res.insert_header((header::RETRY_AFTER, retry_after.to_string()));
            }
            _ => {}
        }
        // The body is written by the request-context middleware (it knows the request id).
        res.finish()
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Unavailable(_) => {
                let mut err = ApiError::unavailable(
                    "the store is temporarily unavailable; retry after the indicated delay",
                );
                err.cause = Some(e.into());
                err
            }
            StoreError::Fenced(_) => {
                let mut err = ApiError::new(
                    ErrorKind::Unavailable { retry_after: 1 },
                    "the workspace's writer is changing; retry after the indicated delay",
                );
                err.cause = Some(e.into());
                err
            }
            // The workspace actor settles a standing marker before it commits; refused
            // anyway (a marker left between its look and the commit), the write changed
            // nothing and goes through when sent again.
            StoreError::TouchPending(_) => {
                let mut err = ApiError::new(
                    ErrorKind::Unavailable { retry_after: 1 },
                    "the workspace is finishing its previous write; retry after the indicated delay",
                );
                err.cause = Some(e.into());
                err
            }
            other => ApiError::internal(other),
        }
    }
}

impl From<actors::keys::KeyError> for ApiError {
    fn from(e: actors::keys::KeyError) -> Self {
        match e {
            actors::keys::KeyError::Refused(why) => ApiError::bad_request(why),
            actors::keys::KeyError::Store(e) => e.into(),
        }
    }
}

impl From<crate::cluster::relay::Refusal> for ApiError {
    fn from(e: crate::cluster::relay::Refusal) -> Self {
        let mut err = ApiError::unavailable(
            "the workspace's writer could not be reached to apply this; retry",
        );
        err.cause = Some(e.into());
        err
    }
}

impl From<ImportError> for ApiError {
    fn from(e: ImportError) -> Self {
        match e {
            ImportError::Invalid(s) => ApiError::bad_request(s.to_string()),
            ImportError::Store(s) => s.into(),
            ImportError::Stopped => ApiError::unavailable("the workspace is not accepting writes"),
        }
    }
}

impl From<WriteError> for ApiError {
    fn from(e: WriteError) -> Self {
        match e {
            WriteError::Invalid { .. } => ApiError::bad_request(e.to_string()),
            WriteError::NotFound(m) => ApiError::not_found(m),
            WriteError::Store(s) => s.into(),
            WriteError::Busy(m) => ApiError::unavailable(m),
            WriteError::Stopped => ApiError::unavailable("the workspace is not accepting writes"),
        }
    }
}

impl From<actix::MailboxError> for ApiError {
    fn from(e: actix::MailboxError) -> Self {
        let mut err = ApiError::unavailable("the workspace is temporarily unavailable");
        err.cause = Some(anyhow::anyhow!("workspace actor mailbox: {e}"));
        err
    }
}

/// Formats an error and its whole cause chain, for logs.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str("\n  caused by: ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}
