//! The OpenAPI document: valid JSON declaring OpenAPI 3.1, exactly what [`builder`]
//! builds, served without a key byte for byte as committed in `docs/openapi.json`, and in
//! step with the router: every resource of the router is described for every entity it
//! serves, every described operation is answered, and every other method of a described
//! path is refused with 405 and an `Allow` header listing exactly the described methods.
//!
//! `RECRUITD_UPDATE_OPENAPI=1 cargo test --test api openapi` rewrites `docs/openapi.json`
//! from the code (the next build embeds and serves the new file).

mod builder;

use crate::helpers::*;
use actors::model::Entity;
use recruitd::http::errors::ErrorKind;
use reqwest::{Method, StatusCode};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

const DOC_FILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/openapi.json");

const METHODS: [&str; 7] = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"];

fn committed() -> Value {
    let text = std::fs::read_to_string(DOC_FILE).expect("docs/openapi.json");
    serde_json::from_str(&text).expect("docs/openapi.json is JSON")
}

/// The document's paths and, for each, its upper-case methods.
fn described(doc: &Value) -> BTreeMap<String, BTreeSet<String>> {
    doc["paths"]
        .as_object()
        .expect("paths")
        .iter()
        .map(|(path, item)| {
            let methods = item
                .as_object()
                .unwrap()
                .keys()
                .filter(|k| METHODS.contains(&k.to_ascii_uppercase().as_str()))
                .map(|k| k.to_ascii_uppercase())
                .collect();
            (path.clone(), methods)
        })
        .collect()
}

#[test]
fn committed_document_is_what_the_code_builds() {
    let built = serde_json::to_string_pretty(&builder::document()).unwrap() + "\n";
    let on_disk = std::fs::read_to_string(DOC_FILE).unwrap_or_default();
    if built == on_disk {
        return;
    }
    if std::env::var("RECRUITD_UPDATE_OPENAPI").is_ok_and(|v| v == "1") {
        std::fs::write(DOC_FILE, built).unwrap();
        eprintln!("docs/openapi.json rewritten");
        return;
    }
    panic!(
        "docs/openapi.json is not what tests/api/openapi/builder/ builds; \
         run RECRUITD_UPDATE_OPENAPI=1 cargo test --test api openapi"
    );
}

/// Every `$ref` of the document points at something in it.
fn check_refs(doc: &Value, v: &Value, at: &str) {
    match v {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get("$ref") {
                let pointer = r.strip_prefix('#').expect("local reference");
                assert!(
                    doc.pointer(pointer).is_some(),
                    "{at}: {r} points at nothing"
                );
            }
            for (k, child) in map {
                check_refs(doc, child, &format!("{at}/{k}"));
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                check_refs(doc, child, &format!("{at}/{i}"));
            }
        }
        _ => {}
    }
}

#[test]
fn document_is_openapi_3_1_with_sound_references() {
    let doc = committed();
    let version = doc["openapi"].as_str().expect("openapi field");
    assert!(version.starts_with("3.1."), "declares {version}");
    assert!(doc["info"]["title"].is_string() && doc["info"]["version"].is_string());
    check_refs(&doc, &doc, "");
    let scopes: BTreeSet<&str> = doc["components"]["securitySchemes"]["bearer"]["x-scopes"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        scopes,
        BTreeSet::from([
            "read",
            "notes:write",
            "tasks:write",
            "records:write",
            "webhooks:write"
        ])
    );
    let mut ids = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        assert!(path.starts_with("/v1/"), "{path}");
        for (method, op) in item.as_object().unwrap() {
            let id = op["operationId"].as_str().expect("operationId");
            assert!(ids.insert(id.to_string()), "operationId {id} twice");
            // Every operation names its scope, except the document itself.
            let security = op["security"].as_array().expect("security");
            if path == "/v1/openapi.json" {
                assert!(security.is_empty());
            } else {
                let scope = security[0]["bearer"][0].as_str().unwrap();
                assert!(scopes.contains(scope), "{method} {path}: {scope}");
                if path.starts_with("/v1/webhooks") {
                    assert_eq!(scope, "webhooks:write", "{method} {path}");
                } else {
                    let write = method != "get";
                    assert_eq!(scope != "read", write, "{method} {path}: {scope}");
                }
            }
            // Every status is either a success described here or one of the eight errors.
            for (status, r) in op["responses"].as_object().unwrap() {
                if status.starts_with('4') || status.starts_with('5') {
                    assert!(r["$ref"].is_string(), "{method} {path} {status}");
                }
            }
        }
    }
}

#[test]
fn error_responses_are_the_eight_codes_of_the_server() {
    let kinds = [
        ErrorKind::BadRequest,
        ErrorKind::Unauthorized,
        ErrorKind::ForbiddenScope,
        ErrorKind::NotFound,
        ErrorKind::MethodNotAllowed { allow: "GET" },
        ErrorKind::Conflict,
        ErrorKind::RateLimited { retry_after: 1 },
        ErrorKind::Internal,
        ErrorKind::Unavailable { retry_after: 1 },
    ];
    let server: Vec<(u16, &str)> = kinds
        .iter()
        .map(|k| (k.status().as_u16(), k.code()))
        .collect();
    assert_eq!(builder::error_codes(), server);
    let doc = committed();
    for (status, code) in server {
        let response = doc["components"]["responses"]
            .as_object()
            .unwrap()
            .values()
            .find(|r| {
                r["description"]
                    .as_str()
                    .unwrap()
                    .starts_with(&status.to_string())
            })
            .unwrap_or_else(|| panic!("no response for {status}"));
        let schema_ref = response["content"]["application/json"]["schema"]["$ref"]
            .as_str()
            .unwrap();
        let schema = doc.pointer(&schema_ref[1..]).unwrap();
        assert_eq!(
            schema["properties"]["error"]["properties"]["code"]["const"],
            code
        );
        let headers = response["headers"].as_object().unwrap();
        assert!(headers.contains_key("X-Request-Id"));
        match status {
            405 => assert!(headers.contains_key("Allow")),
            429 | 503 => assert!(headers.contains_key("Retry-After")),
            _ => {}
        }
    }
}

/// The router's resources for every entity, with the methods each serves, and whether
/// the API offers them (a sub-resource of an entity without it is a path whose GET
/// answers 400).
fn router_paths() -> Vec<(String, BTreeSet<String>, bool)> {
    let mut out = Vec::new();
    for pattern in recruitd::http::API_RESOURCES {
        let entities: Vec<Option<Entity>> = if pattern.contains("{entity}") {
            Entity::ALL.iter().copied().map(Some).collect()
        } else {
            vec![None]
        };
        for e in entities {
            let path = match e {
                Some(e) => pattern.replace("{entity}", e.name()),
                None => pattern.to_string(),
            };
            let methods = recruitd::http::allowed_methods(pattern, e)
                .split(", ")
                .map(str::to_string)
                .collect();
            let offered = match (pattern, e) {
                (recruitd::http::SUB_NOTES, Some(e)) => {
                    actors::subresources::notes_parent_kind(e).is_some()
                }
                (recruitd::http::SUB_ATTACHMENTS, Some(e)) => {
                    actors::subresources::attachments_parent_kind(e).is_some()
                }
                _ => true,
            };
            out.push((path, methods, offered));
        }
    }
    out
}

#[test]
fn every_route_is_described_and_every_description_is_routed() {
    let doc = described(&committed());
    let mut routed = BTreeMap::new();
    for (path, methods, offered) in router_paths() {
        if offered {
            routed.insert(path, methods);
        } else {
            assert!(
                !doc.contains_key(&path),
                "{path} is described but not offered"
            );
        }
    }
    let only_doc: Vec<_> = doc.keys().filter(|p| !routed.contains_key(*p)).collect();
    let only_router: Vec<_> = routed.keys().filter(|p| !doc.contains_key(*p)).collect();
    assert!(only_doc.is_empty(), "described, not routed: {only_doc:?}");
    assert!(
        only_router.is_empty(),
        "routed, not described: {only_router:?}"
    );
    for (path, methods) in &routed {
        assert_eq!(&doc[path], methods, "methods of {path}");
    }
}

/// The first id of a list, for filling `{id}` in paths.
async fn some_id(app: &TestApp, entity: &str, key: &str) -> String {
    let (s, body) = app.get(&format!("/v1/{entity}?limit=1"), key).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    body["data"][0]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("the example has {entity}"))
        .to_string()
}

fn allow_set(res: &reqwest::Response) -> BTreeSet<String> {
    res.headers()
        .get("allow")
        .map(|v| v.to_str().unwrap())
        .unwrap_or_default()
        .split(',')
        .map(|m| m.trim().to_string())
        .filter(|m| !m.is_empty())
        .collect()
}

#[actix_web::test]
async fn served_without_a_key_and_equal_to_the_committed_file() {
    let app = spawn_app(Backend::Sqlite).await;
    let res = app
        .req(Method::GET, "/v1/openapi.json", None)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.headers()["content-type"], "application/json");
    assert!(res.headers().contains_key("x-request-id"));
    let body = res.bytes().await.unwrap();
    assert_eq!(&body[..], &std::fs::read(DOC_FILE).unwrap()[..]);
    assert_eq!(&body[..], recruitd::http::openapi::DOCUMENT);
    // A key changes nothing, not even a wrong one.
    let res = app
        .req(Method::GET, "/v1/openapi.json", Some("not-a-key"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let res = app
        .req(Method::POST, "/v1/openapi.json", None)
        .send()
        .await
        .unwrap();
    assert_eq!(allow_set(&res), BTreeSet::from(["GET".to_string()]));
    let (s, body) = json_of(res).await;
    assert_error(s, &body, 405, "METHOD_NOT_ALLOWED");
}

#[actix_web::test]
async fn the_server_answers_exactly_the_described_operations() {
    let dir = tempfile::tempdir().unwrap();
    let app = spawn_app_with(Backend::Sqlite, dir, |s| s.webhooks_allow_insecure = true).await;
    app.import_ok(&example()).await;
    let key = app
        .key_with_scopes(&[
            "notes:write",
            "tasks:write",
            "records:write",
            "webhooks:write",
        ])
        .await;
    // A real record of every entity, so that described reads answer 200, and a webhook
    // endpoint (deleted last: its item path comes after its sub-resources).
    let mut ids = BTreeMap::new();
    for e in Entity::ALL {
        ids.insert(e.name(), some_id(&app, e.name(), &key).await);
    }
    let res = app
        .req(Method::POST, "/v1/webhooks", Some(&key))
        .json(&serde_json::json!({"url": "http://127.0.0.1:9/hook"}))
        .send()
        .await
        .unwrap();
    let (s, hook) = json_of(res).await;
    assert_eq!(s, StatusCode::CREATED, "{hook}");
    ids.insert("webhooks", hook["data"]["id"].as_str().unwrap().to_string());
    let fill = |path: &str| -> String {
        let entity = path.split('/').nth(2).unwrap();
        match (ids.get(entity), path) {
            (Some(id), _) => path.replace("{id}", id),
            // The searches' required parameters.
            (None, "/v1/search/phone") => format!("{path}?number=07700900123"),
            (None, "/v1/search/email") => format!("{path}?address=x@mail.example"),
            _ => path.to_string(),
        }
    };
    // The feed's required token: the one a first list page hands out.
    let (_, page) = app.get("/v1/notes?limit=1", &key).await;
    let since = page["changes_since"].as_str().unwrap().to_string();
    let doc = described(&committed());
    for (path, methods, offered) in router_paths() {
        let url = match path.as_str() {
            "/v1/changes" => format!("{path}?since={since}"),
            _ => fill(&path),
        };
        for m in METHODS {
            let method = Method::from_bytes(m.as_bytes()).unwrap();
            let mut req = app.req(method, &url, Some(&key));
            if m == "POST" || m == "PATCH" {
                req = req.json(&serde_json::json!({}));
            }
            let res = req.send().await.unwrap();
            let status = res.status();
            let allow = allow_set(&res);
            let body = if m == "HEAD" {
                Value::Null
            } else {
                json_of(res).await.1
            };
            let what = format!("{m} {url}: {status} {body}");
            if offered && methods.contains(m) {
                assert!(doc[&path].contains(m), "{what}: served, not described");
                match m {
                    // Reads of real records (a download may find no bytes: 404 then).
                    "GET" if path.ends_with("/download") => {
                        assert!([200, 302, 404].contains(&status.as_u16()), "{what}");
                        assert_ne!(body["error"]["message"], "no such path", "{what}");
                    }
                    "DELETE" if path.starts_with("/v1/webhooks/") => {
                        assert_eq!(status, StatusCode::NO_CONTENT, "{what}")
                    }
                    "GET" | "DELETE" => assert_eq!(status, StatusCode::OK, "{what}"),
                    // A rotation takes no body.
                    "POST" if path.ends_with("/rotate-secret") => {
                        assert_eq!(status, StatusCode::CREATED, "{what}")
                    }
                    // A write with an empty object reached its handler's body check.
                    _ => {
                        assert_error(status, &body, 400, "BAD_REQUEST");
                    }
                }
            } else if methods.contains(m) {
                // A sub-resource the entity does not have: the path exists, GET says why.
                assert_error(status, &body, 400, "BAD_REQUEST");
            } else {
                assert!(
                    !doc.get(&path).is_some_and(|d| d.contains(m)),
                    "{what}: described, not served"
                );
                assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{what}");
                assert_eq!(allow, methods, "{what}: Allow");
                if m != "HEAD" {
                    assert_error(status, &body, 405, "METHOD_NOT_ALLOWED");
                }
            }
        }
    }
    // A path of no resource: 404 whatever the method.
    for m in METHODS {
        let res = app
            .req(
                Method::from_bytes(m.as_bytes()).unwrap(),
                "/v1/people/x",
                Some(&key),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::NOT_FOUND, "{m}");
    }
}
