//! The error envelope, 404s and 405s, request ids.

use crate::helpers::*;
use reqwest::Method;
use std::collections::HashSet;

async fn not_found_cases(b: Backend) {
    let app = spawn_app(b).await;
    let mut other = example();
    other["workspace"]["id"] = serde_json::json!("0c4a2bd4-0000-4000-8000-000000000001");
    other["workspace"]["name"] = serde_json::json!("Other");
    // The same records can't live in two workspaces under one id: give the second
    // workspace one company of its own.
    let foreign_company = "0c4a2bd4-0000-4000-8000-0000000000c0";
    let other = serde_json::json!({
        "format": "recruit-snapshot/1",
        "workspace": other["workspace"].clone(),
        "companies": [{"id": foreign_company, "name": "Elsewhere", "created_at": "2026-09-01T00:00:00Z", "updated_at": "2026-09-01T00:00:00Z"}]
    });
    app.import_ok(&example()).await;
    app.import_ok(&other).await;
    for path in [
        "/v1/people".to_string(),
        "/v1/people/a214ca67-7691-5c62-8910-a410373e10c9".to_string(),
        "/v2/candidates".to_string(),
        "/candidates".to_string(),
        "/v1/candidates/00000000-0000-4000-8000-000000000000".to_string(),
        "/v1/candidates/not-a-uuid".to_string(),
        "/v1/candidates/a214ca677691-5c62-8910-a410373e10c9x".to_string(),
        "/v1/candidates/{a214ca67-7691-5c62-8910-a410373e10c9}".to_string(),
        format!("/v1/companies/{foreign_company}"),
        // An application id is a job row: the primary row is no application.
        "/v1/applications/a214ca67-7691-5c62-8910-a410373e10c9".to_string(),
        "/v1/candidates/a214ca67-7691-5c62-8910-a410373e10c9/nothing".to_string(),
    ] {
        let (s, body) = app.get(&path, READ_KEY).await;
        assert_error(s, &body, 404, "NOT_FOUND");
    }
}

async fn wrong_method_is_405_with_allow(b: Backend) {
    let app = spawn_app(b).await;
    app.import_ok(&example()).await;
    for (method, path) in [
        (Method::POST, "/v1/candidates"),
        (Method::DELETE, "/v1/jobs"),
        (
            Method::PUT,
            "/v1/users/0986a580-8fc6-5461-afb0-b69c0a512919",
        ),
        (Method::POST, "/v1/counts"),
    ] {
        let res = app
            .req(method.clone(), path, Some(READ_KEY))
            .send()
            .await
            .unwrap();
        let allow = res
            .headers()
            .get("allow")
            .map(|v| v.to_str().unwrap().to_string());
        let (s, body) = json_of(res).await;
        assert_error(s, &body, 405, "METHOD_NOT_ALLOWED");
        assert_eq!(allow.as_deref(), Some("GET"), "{method} {path}");
    }
    // An unknown entity is not an existing path: 404, whatever the method.
    let (s, body) = json_of(
        app.req(Method::POST, "/v1/people", Some(READ_KEY))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_error(s, &body, 404, "NOT_FOUND");
}

async fn request_ids_are_unique_and_on_every_body(b: Backend) {
    let app = spawn_app(b).await;
    app.import_ok(&example()).await;
    let mut seen = HashSet::new();
    for path in [
        "/v1/counts",
        "/v1/candidates",
        "/v1/nope",
        "/v1/candidates?limit=0",
    ] {
        for _ in 0..5 {
            let res = app
                .req(Method::GET, path, Some(READ_KEY))
                .send()
                .await
                .unwrap();
            let header = res
                .headers()
                .get("x-request-id")
                .unwrap()
                .to_str()
                .unwrap()
                .to_string();
            let (_, body) = json_of(res).await;
            let rid = body["request_id"].as_str().unwrap().to_string();
            assert_eq!(rid, header);
            assert!(seen.insert(rid), "request ids repeat");
        }
    }
}

store_test!(
    not_found_cases,
    wrong_method_is_405_with_allow,
    request_ids_are_unique_and_on_every_body,
    json_answers_are_never_cached
);

/// Every JSON answer, data or error, with a key or without, says `no-store`; the OpenAPI
/// document keeps its own (public) policy.
async fn json_answers_are_never_cached(b: Backend) {
    let app = spawn_app(b).await;
    app.import_ok(&example()).await;
    for (path, key, status) in [
        ("/v1/candidates", Some(READ_KEY), 200),
        ("/v1/counts", Some(READ_KEY), 200),
        ("/v1/search/phone?number=07700900123", Some(READ_KEY), 200),
        (
            "/v1/candidates/00000000-0000-4000-8000-000000000000",
            Some(READ_KEY),
            404,
        ),
        ("/v1/candidates", None, 401),
        ("/v1/candidates", Some("rk_not_a_key_0123456789abcdef"), 401),
        ("/v1/nope", Some(READ_KEY), 404),
    ] {
        let res = app.req(Method::GET, path, key).send().await.unwrap();
        assert_eq!(res.status().as_u16(), status, "{path}");
        assert_eq!(
            res.headers()
                .get("cache-control")
                .map(|v| v.to_str().unwrap().to_string())
                .as_deref(),
            Some("no-store"),
            "{path} ({status})"
        );
    }
    let res = app
        .req(Method::GET, "/v1/openapi.json", None)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    assert_eq!(res.headers()["cache-control"], "public, max-age=300");
}

#[actix_web::test]
async fn plain_http_is_refused_with_a_message() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = spawn_app(Backend::Sqlite).await;
    let port = app.base.rsplit(':').next().unwrap().to_string();
    let mut s = tokio::net::TcpStream::connect(format!("127.0.0.1:{port}"))
        .await
        .unwrap();
    s.write_all(format!("GET /v1/counts HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {READ_KEY}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    assert!(out.starts_with("HTTP/1.1 400"), "{out}");
    assert!(out.contains("HTTPS is required"), "{out}");
    assert!(!out.contains("\"data\""), "{out}");
}

/// A 500 answers the generic envelope; its cause stays in the log.
#[actix_web::test]
async fn internal_errors_are_opaque() {
    use actix_web::{test, web, HttpResponse};
    use recruitd::http::errors::ApiError;
    async fn fails() -> Result<HttpResponse, ApiError> {
        Err(ApiError::internal(anyhow::anyhow!(
            "connection to db-7.internal:5432 refused (password=hunter2)"
        )))
    }
    let svc = test::init_service(
        actix_web::App::new()
            .route("/boom", web::get().to(fails))
            .wrap(actix_web::middleware::from_fn(
                recruitd::http::context::request_context,
            )),
    )
    .await;
    let res = test::call_service(&svc, test::TestRequest::get().uri("/boom").to_request()).await;
    assert_eq!(res.status(), 500);
    let body: serde_json::Value = test::read_body_json(res).await;
    assert_eq!(body["error"]["code"], "INTERNAL_ERROR");
    let text = body.to_string();
    assert!(
        !text.contains("hunter2") && !text.contains("db-7"),
        "{text}"
    );
    assert!(body["request_id"].as_str().is_some());
}
