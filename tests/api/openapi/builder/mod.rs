//! The OpenAPI 3.1 description of the API, built from the tables the server itself uses.
//!
//! [`document`] walks the router's resources ([`http::API_RESOURCES`]) for every entity,
//! with the methods each serves ([`http::allowed_methods`]), and describes each operation
//! from the handlers' own constants: page sizes, write fields, currencies, attachment
//! prefixes, error codes, the signed URL lifetime. A method the router serves that has no
//! description here makes [`document`] panic, so a new route cannot go undescribed.
//!
//! Its output is committed as `docs/openapi.json`, which the binary embeds and serves at
//! `GET /v1/openapi.json` (`http::openapi`). The checks beside it (`../mod.rs`) test
//! that the committed file is exactly [`document`]'s output (and rewrite it when
//! `RECRUITD_UPDATE_OPENAPI=1`), and that the running server answers every described
//! operation and refuses every other method with 405. The builder lives with the tests:
//! the server serves the committed bytes and never runs it.
//!
//! Conventions of the document, following the spec:
//! - Responses are open maps: no schema forbids unknown properties. Every field the
//!   service always writes is `required`; a field is nullable unless the spec says
//!   otherwise (or its definition leaves no room for null).
//! - Enumerated response fields carry their values as `x-extensible-enum` (clients treat
//!   enumerations as extensible); request fields and parameters are closed `enum`s, since
//!   the service refuses any other value. Error codes are a closed set.
//! - Request schemas are exact: anything they rule out, the service refuses with 400.

use actors::model::{self, ApiField, Entity, Shape, ATTACHMENT_PREFIXES};
use actors::search::results::SEARCH_MAX_LIMIT;
use recruitd::http::{self, body, records, subresources};
use serde_json::{json, Map, Value};

mod bodies;
mod common;
mod components;
mod operations;
mod schemas;
mod texts;
mod webhooks;

use bodies::*;
use common::*;
pub use components::error_codes;
use components::*;
use operations::*;
use schemas::*;
use texts::*;

/// One path of the document: an API resource, for one entity when its pattern has one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DescribedPath {
    /// As the document writes it: `/v1/candidates/{id}` for `/v1/{entity}/{id}`.
    pub path: String,
    /// The router pattern it comes from.
    pub pattern: &'static str,
    pub entity: Option<Entity>,
    /// Upper-case method names, as `Allow` lists them.
    pub methods: Vec<&'static str>,
}

/// Whether a resource of an entity is part of the API's surface. The notes and
/// attachments sub-resources exist as paths for every entity, but for an entity without
/// them GET answers 400: those paths are not described.
fn described(pattern: &str, entity: Option<Entity>) -> bool {
    match (pattern, entity) {
        (http::SUB_NOTES, Some(e)) => actors::subresources::notes_parent_kind(e).is_some(),
        (http::SUB_ATTACHMENTS, Some(e)) => {
            actors::subresources::attachments_parent_kind(e).is_some()
        }
        _ => true,
    }
}

/// Every path the document describes, with its methods, in routing order.
pub fn described_paths() -> Vec<DescribedPath> {
    let mut out = Vec::new();
    for pattern in http::API_RESOURCES {
        let entities: Vec<Option<Entity>> = if pattern.contains("{entity}") {
            Entity::ALL.iter().copied().map(Some).collect()
        } else {
            vec![None]
        };
        for entity in entities {
            if !described(pattern, entity) {
                continue;
            }
            let path = match entity {
                Some(e) => pattern.replace("{entity}", e.name()),
                None => pattern.to_string(),
            };
            let methods = http::allowed_methods(pattern, entity).split(", ").collect();
            out.push(DescribedPath {
                path,
                pattern,
                entity,
                methods,
            });
        }
    }
    out
}

/// The whole document.
pub fn document() -> Value {
    let mut paths = Map::new();
    for p in described_paths() {
        let mut item = Map::new();
        for m in &p.methods {
            item.insert(m.to_ascii_lowercase(), operation(&p, m));
        }
        paths.insert(p.path.clone(), Value::Object(item));
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Recruiting Data REST API",
            "version": "1",
            "summary": "Read and write access to a recruiting workspace's data: sync and in-call lookup.",
            "description": INFO,
            "license": {"name": "MIT OR Apache-2.0", "identifier": "MIT OR Apache-2.0"},
        },
        "jsonSchemaDialect": "https://spec.openapis.org/oas/3.1/dialect/base",
        "servers": [{
            "url": "{base_url}",
            "description": "The service base address. Transport is HTTPS only; plain requests are rejected.",
            "variables": {"base_url": {
                "default": "https://127.0.0.1:8443",
                "description": "Scheme, host and port of the service (every path starts with /v1/).",
            }},
        }],
        "security": [{"bearer": ["read"]}],
        "tags": [
            {"name": "records", "description": "Lists (keyset pagination, `updated_since`) and single records of the nine entities."},
            {"name": "sub-resources", "description": "A record's notes and files."},
            {"name": "downloads", "description": "Signed download URLs for attachments."},
            {"name": "search", "description": "Low-latency lookup of a person by phone number or e-mail address."},
            {"name": "counts", "description": "Record counts."},
            {"name": "changes", "description": "The change feed: every change, deletions included, in commit order."},
            {"name": "writes", "description": "Notes, tasks and allow-listed record fields."},
            {"name": "webhooks", "description": "The change feed pushed to an integrator's endpoint: signed, in commit order, never lost."},
            {"name": "document", "description": "This document."},
        ],
        "paths": paths,
        "components": components(),
    })
}
