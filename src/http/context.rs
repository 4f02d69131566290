//! Request context: a unique request id for every request, and the error envelope.
//!
//! The middleware gives each request its id before any handler runs, puts it on every
//! response (`X-Request-Id`), and turns every error response — ours, the framework's, an
//! unknown path — into the spec's `{error:{code,message}, request_id}` body. The one
//! exception is a response marked [`OwnBody`](super::request::OwnBody): the answers of the signed file route,
//! which mimic an object store, keep their own bodies.

use super::errors::{ApiError, ErrorKind};
use super::request::{CallerKey, OwnBody, RequestId};
use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderValue};
use actix_web::middleware::Next;
use actix_web::{Error, HttpMessage};
use serde::Serialize;

#[derive(Serialize)]
struct ErrorBody<'a> {
    code: &'a str,
    message: &'a str,
    /// Only on the change feed's refusal of a pruned `since`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    resync_required: bool,
}

#[derive(Serialize)]
struct ErrorEnvelope<'a> {
    error: ErrorBody<'a>,
    request_id: &'a str,
}

/// The JSON error body.
pub fn error_json(kind: &ErrorKind, message: &str, request_id: &str) -> Vec<u8> {
    serde_json::to_vec(&ErrorEnvelope {
        error: ErrorBody {
            code: kind.code(),
            message,
            resync_required: *kind == ErrorKind::ResyncRequired,
        },
        request_id,
    })
    .expect("error envelope serialises")
}

/// Longest request target (path and query) served.
pub const MAX_URL_BYTES: usize = 8 * 1024;
/// Most bytes of header names and values served.
pub const MAX_HEADER_BYTES: usize = 16 * 1024;

/// Refuses requests whose target or headers exceed the caps, before any routing.
fn oversized(req: &ServiceRequest) -> Option<ApiError> {
    let target = req.uri().path_and_query().map_or(0, |pq| pq.as_str().len());
    if target > MAX_URL_BYTES {
        return Some(ApiError::bad_request(format!(
            "the request URL is longer than {MAX_URL_BYTES} bytes"
        )));
    }
    let headers: usize = req
        .headers()
        .iter()
        .map(|(k, v)| k.as_str().len() + v.len())
        .sum();
    if headers > MAX_HEADER_BYTES {
        return Some(ApiError::bad_request(format!(
            "the request headers are larger than {MAX_HEADER_BYTES} bytes"
        )));
    }
    None
}

/// The route of a request for logs and metrics, as `'static` strings: the registered
/// pattern and, on entity routes, the entity — naming the resource, never the record.
fn route_of(req: &actix_web::HttpRequest) -> (&'static str, &'static str) {
    let route = req
        .match_name()
        .and_then(|n| super::ROUTES.iter().find(|r| **r == n))
        .copied()
        .unwrap_or("unmatched");
    let entity = req
        .match_info()
        .get("entity")
        .and_then(actors::model::Entity::parse)
        .map_or("", |e| e.name());
    (route, entity)
}

/// A method as a `'static` label.
fn method_label(m: &actix_web::http::Method) -> &'static str {
    use actix_web::http::Method;
    match *m {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::PUT => "PUT",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "OTHER",
    }
}

pub async fn request_context(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, Error> {
    let started = std::time::Instant::now();
    // A request another node of the cluster passed on keeps the id its client was given.
    let from_node = match req.headers().contains_key(crate::cluster::forward::NODE) {
        true => super::node::from_node(&req),
        false => None,
    };
    if from_node.is_some() {
        req.extensions_mut().insert(super::node::FromNode);
    }
    let rid = from_node.flatten().unwrap_or_else(RequestId::generate);
    req.extensions_mut().insert(rid.clone());
    let mut res = match oversized(&req) {
        Some(refusal) => req.error_response(refusal),
        // Handler, extractor and forwarding errors arrive as responses carrying their
        // error (the forwarding middleware inside this one answers so too); an `Err`
        // here would come from the framework. (The request cannot be kept for that
        // case: routing needs it uniquely owned.)
        None => next.call(req).await?.map_into_boxed_body(),
    };
    res.headers_mut().insert(
        header::HeaderName::from_static("x-request-id"),
        HeaderValue::from_str(rid.as_str()).expect("request ids are ASCII"),
    );
    // The API is served over HTTPS only: tell browsers-based clients to never try
    // anything else (two years, as recommended for preload lists).
    res.headers_mut().insert(
        header::STRICT_TRANSPORT_SECURITY,
        HeaderValue::from_static("max-age=63072000; includeSubDomains"),
    );
    let decision = res
        .request()
        .extensions()
        .get::<crate::http::ratelimit::Decision>()
        .copied();
    if let Some(d) = decision {
        let h = res.headers_mut();
        for (name, value) in [
            ("ratelimit-policy", d.policy_header()),
            ("ratelimit", d.state_header()),
        ] {
            if let Ok(v) = HeaderValue::from_str(&value) {
                h.insert(header::HeaderName::from_static(name), v);
            }
        }
    }
    let own_body = res.response().extensions().contains::<OwnBody>();
    if !own_body && (res.status().is_client_error() || res.status().is_server_error()) {
        res = finish_error(res, &rid);
    }
    forbid_caching_json(&mut res);
    record(&res, &rid, started.elapsed());
    Ok(res)
}

/// JSON answers carry workspace data, or say something about a key: no cache, shared or
/// private, may keep them (`Cache-Control: no-store`), unless the handler chose its own
/// policy (the OpenAPI document, which is public).
fn forbid_caching_json(res: &mut ServiceResponse<BoxBody>) {
    let json = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/json"));
    if json && !res.headers().contains_key(header::CACHE_CONTROL) {
        res.headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
}

/// The access log line and the request metrics of one answered request.
fn record(res: &ServiceResponse<BoxBody>, rid: &RequestId, elapsed: std::time::Duration) {
    let req = res.request();
    let status = res.status().as_u16();
    let (route, entity) = route_of(req);
    let method = method_label(req.method());
    let ext = req.extensions();
    let key = ext.get::<CallerKey>().map(|k| k.0.id.as_str());
    // A peer's requests without a valid key: the first few of each window are logged,
    // then one line says the rest are left out (a flood would otherwise fill the log).
    let failures = ext.get::<super::auth::PeerFailure>().map(|f| f.0);
    let logged = super::ratelimit::LOGGED_FAILURES_PER_WINDOW;
    if failures.is_none_or(|n| n <= logged) {
        tracing::info!(
            target: "recruitd::access",
            request_id = rid.as_str(),
            method,
            route,
            entity,
            status,
            latency_us = elapsed.as_micros() as u64,
            key_id = key.unwrap_or("-"),
        );
    } else if failures == Some(logged + 1) {
        tracing::warn!(
            target: "recruitd::access",
            request_id = rid.as_str(),
            peer = %req.peer_addr().map_or_else(|| "-".to_string(), |a| a.ip().to_string()),
            "more than {logged} requests without a valid API key from this address within \
             a minute; the rest are counted in the metrics but not logged until it has room"
        );
    }
    if let Some(app) = req.app_data::<actix_web::web::Data<super::state::AppState>>() {
        if status == 429 {
            app.metrics.rate_limited(key.unwrap_or("-"));
        }
        app.metrics.request(
            crate::telemetry::metrics::RequestLabels {
                route,
                entity,
                method,
                status,
            },
            elapsed,
        );
    }
}

fn finish_error(res: ServiceResponse<BoxBody>, rid: &RequestId) -> ServiceResponse<BoxBody> {
    let status = res.status();
    let method = res.request().method().clone();
    let path = res.request().path().to_owned();
    let (kind, message, internal) = match res.response().error() {
        Some(e) => match e.as_error::<ApiError>() {
            Some(api) => {
                if let Some(cause) = &api.cause {
                    if api.kind == ErrorKind::Internal {
                        tracing::error!(request_id = rid.as_str(), %method, path, "internal error: {cause:?}");
                    } else {
                        tracing::warn!(request_id = rid.as_str(), %method, path, code = api.kind.code(), "{cause:?}");
                    }
                }
                (api.kind.clone(), api.message.to_string(), false)
            }
            None => {
                let kind = ErrorKind::from_status(status);
                let internal = kind == ErrorKind::Internal;
                if internal {
                    tracing::error!(request_id = rid.as_str(), %method, path, "internal error: {e:?}");
                }
                (kind, e.to_string(), internal)
            }
        },
        None => {
            let kind = ErrorKind::from_status(status);
            let msg = match &kind {
                ErrorKind::NotFound => "no such path".to_string(),
                k => k.code().to_lowercase().replace('_', " "),
            };
            (kind.clone(), msg, kind == ErrorKind::Internal)
        }
    };
    let message = if internal || kind == ErrorKind::Internal {
        "internal error; safe to retry with backoff".to_string()
    } else {
        message
    };
    let body = error_json(&kind, &message, rid.as_str());
    let (req, mut http) = res.into_parts();
    http.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    http.headers_mut().insert(
        header::HeaderName::from_static("x-request-id"),
        HeaderValue::from_str(rid.as_str()).expect("request ids are ASCII"),
    );
    if kind == ErrorKind::Unauthorized {
        // RFC 6750: a 401 names the scheme the client should authenticate with.
        http.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"recruitd\""),
        );
    }
    let http = http.set_body(BoxBody::new(body));
    ServiceResponse::new(req, http)
}

#[cfg(test)]
mod tests {
    use super::RequestId;

    #[test]
    fn request_ids_are_prefixed_random_hex() {
        let a = RequestId::generate();
        let b = RequestId::generate();
        assert_ne!(a.as_str(), b.as_str());
        for id in [a.as_str(), b.as_str()] {
            assert_eq!(id.len(), 36);
            assert!(id.starts_with("req_"));
            assert!(id[4..]
                .bytes()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        }
    }
}
