//! What every part of the HTTP layer reads off a request: its id, the key it presented,
//! its bearer token, and the mark of a response that keeps its own body. Set by the
//! context middleware (`context`) and authentication (`auth`); a leaf, so that those
//! and the forwarding step (`forward`) depend on it rather than on each other.

use super::errors::ApiError;
use actix_web::dev::Payload;
use actix_web::http::header;
use actix_web::{Error, FromRequest, HttpMessage, HttpRequest};
use std::future::{ready, Ready};
use std::rc::Rc;

/// The id of one request: `req_` and 32 hex digits of randomness.
#[derive(Clone, Debug)]
pub struct RequestId(Rc<str>);

impl RequestId {
    pub fn generate() -> Self {
        // Written into a stack buffer: one allocation per request (the `Rc`), not two.
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let v: u128 = rand::random();
        let mut buf = *b"req_00000000000000000000000000000000";
        for (i, b) in buf[4..].iter_mut().enumerate() {
            *b = HEX[((v >> (124 - 4 * i)) & 0xf) as usize];
        }
        RequestId(Rc::from(
            std::str::from_utf8(&buf).expect("ASCII hex digits"),
        ))
    }

    /// The id another node gave a request it passed here (checked by the caller).
    pub fn adopt(id: &str) -> Self {
        RequestId(Rc::from(id))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromRequest for RequestId {
    type Error = Error;
    type Future = Ready<Result<Self, Error>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        // Always present behind the middleware; generate one defensively otherwise.
        let id = req
            .extensions()
            .get::<RequestId>()
            .cloned()
            .unwrap_or_else(RequestId::generate);
        ready(Ok(id))
    }
}

/// Marks a response (in its extensions) whose body is its own, error or not: the
/// middleware adds `X-Request-Id` and leaves the rest as it is. The signed file route
/// (`http::files`) uses it for its object-store-style answers, and the operator console
/// (`crate::admin::console`) for its login form, an HTML page answered 401.
#[derive(Clone, Copy, Debug)]
pub struct OwnBody;

/// The API key a request presented (set by authentication), for logs and metrics.
#[derive(Clone, Debug)]
pub struct CallerKey(pub std::sync::Arc<actors::model::ApiKey>);

/// The bearer token of a request: `Authorization: Bearer <key>`, nothing else.
pub(crate) fn bearer(req: &HttpRequest) -> Result<&str, ApiError> {
    let value = req.headers().get(header::AUTHORIZATION).ok_or_else(|| {
        ApiError::unauthorized("missing API key: send the header Authorization: Bearer <API_KEY>")
    })?;
    let malformed =
        || ApiError::unauthorized("malformed Authorization header: expected Bearer <API_KEY>");
    let value = value.to_str().map_err(|_| malformed())?;
    let (scheme, token) = value.split_once(' ').ok_or_else(malformed)?;
    let token = token.trim();
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() || token.contains(' ') {
        return Err(malformed());
    }
    if req.headers().get_all(header::AUTHORIZATION).count() > 1 {
        return Err(malformed());
    }
    Ok(token)
}
