//! The OpenAPI 3.1 description of the API, built from the tables the server itself uses.
//!
//! [`document`] walks the router's resources ([`http::API_RESOURCES`]) for every entity,
//! with the methods each serves ([`http::allowed_methods`]), and describes each operation
//! from the handlers' own constants: page sizes, write fields, currencies, attachment
//! prefixes, error codes, the signed URL lifetime. A method the router serves that has no
//! description here makes [`document`] panic, so a new route cannot go undescribed.
//!
//! Its output is committed as `docs/openapi.json`, which the binary embeds and serves at
//! `GET /v1/openapi.json` (`http::openapi`). `tests/api/openapi.rs` checks that the
//! committed file is exactly [`document`]'s output (and rewrites it when
//! `RECRUITD_UPDATE_OPENAPI=1`), and that the running server answers every described
//! operation and refuses every other method with 405.
//!
//! Conventions of the document, following the spec:
//! - Responses are open maps: no schema forbids unknown properties. Every field the
//!   service always writes is `required`; a field is nullable unless the spec says
//!   otherwise (or its definition leaves no room for null).
//! - Enumerated response fields carry their values as `x-extensible-enum` (clients treat
//!   enumerations as extensible); request fields and parameters are closed `enum`s, since
//!   the service refuses any other value. Error codes are a closed set.
//! - Request schemas are exact: anything they rule out, the service refuses with 400.

use crate::http::{self, body, records, subresources, writes};
use actors::model::{Entity, ATTACHMENT_PREFIXES};
use actors::search::results::SEARCH_MAX_LIMIT;
use serde_json::{json, Map, Value};

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
            {"name": "writes", "description": "Notes, tasks and allow-listed record fields."},
            {"name": "document", "description": "This document."},
        ],
        "paths": paths,
        "components": components(),
    })
}

// ---------------------------------------------------------------------------------------
// Texts taken from the spec.

const INFO: &str = "\
The service is an HTTPS JSON API giving read and write access to a recruiting workspace's data. \
There are nine entities: candidates, applications, contacts, companies, jobs, notes, tasks, attachments, users.\n\n\
It is designed for two uses:\n\
1. Full or incremental sync of an entity into another system (keyset pagination plus an `updated_since` filter).\n\
2. Low-latency lookup of a person by phone number or e-mail address while a call is in progress (search endpoints with confidence scoring).\n\n\
## General rules\n\
- Transport is HTTPS only; plain requests are rejected.\n\
- Every response with a body is `application/json`, UTF-8.\n\
- Every path starts with `/v1/`. Methods used: GET, POST, PATCH, DELETE.\n\
- One key belongs to one workspace; a request can never reach another workspace's data.\n\
- Responses are open maps: clients ignore unknown fields.\n\
- Every response carries `request_id` (string, unique per request) in the body: next to `data` on success, next to `error` on failure. \
Exceptions: the 302 download redirect (it carries the header `X-Request-Id` instead) and failures raised by a network layer in front of the service (no JSON body). \
(`GET /v1/openapi.json`, this document, is not an API response either: its body is the document, and its request id is in `X-Request-Id`.) \
Every response of the service carries the header `X-Request-Id` with the same value.\n\n\
## Shared conventions\n\
- `id`: string, stable for the life of the record, treated as opaque (attachment ids are prefixed, see attachments).\n\
- Every record has `id`, `created_at`, `updated_at`.\n\
- Timestamps: ISO 8601 with timezone (e.g. of the form `YYYY-MM-DDThh:mm:ss.sssZ`). Any field may be null unless stated otherwise.\n\
- `updated_at` is never null. For a record never changed it equals `created_at`. Records edited before 2026-08-13 also report `updated_at` equal to `created_at` \
(change tracking on several record types starts on that date); from that date every edit moves `updated_at`. So `updated_at == created_at` means no change recorded.\n\
- Archived companies and jobs stay readable, stay in the sync stream and carry `is_archived: true`.\n\
- Private notes and private tasks (`is_private: true`) are never returned anywhere: not in lists, not by id (404 NOT_FOUND), not in per-record notes, \
not in `total_count`, not in counts. No key setting changes this.\n\
- `owning_recruiter_id` (a `users.id`) is derived per entity (see each schema). Null is legitimate (left null rather than guessed), not an error.\n\n\
## States and transitions\n\
| State field | Values | Moved by | Condition | Next state | Other effects |\n\
|---|---|---|---|---|---|\n\
| candidates/applications `status` | `placed`, `rejected`, a `stage_type` value, `active` | derived, not written | per the derivation rule in candidates | n/a | `status` is not writable via the API |\n\
| tasks `status` | `open`, `completed`, `cancelled` | PATCH /v1/tasks/{id} with `status` `open` or `completed` | key has `tasks:write` | the requested value | `completed_at` is kept in step |\n\
| tasks `status` | | placement the task reminded of is undone | by the service itself | `cancelled` | treated as closed; `completed_at` stays null |\n\
| jobs `live` / `is_archived` | booleans, complements of each other | PATCH /v1/jobs/{id} with `live` | key has `records:write` | `live` as sent | `published` cannot be true while `live` is false |\n\n\
Pipeline stage, stage_type and consent flags are deliberately not writable. Transitions of candidate stages, job `status`, company `status` and consent `status`: not shown.\n\n\
## Endpoints\n\
`{entity}` is one of candidates, applications, contacts, companies, jobs, notes, tasks, attachments, users; any other value gives 404 NOT_FOUND. \
This document spells each entity's paths out. A wrong method on an existing path gives 405 with an `Allow` header \
(the `MethodNotAllowed` response of the components). Every request carries `Authorization: Bearer <API_KEY>`.\n\n\
## Authentication\n\
1. Every request carries header `Authorization: Bearer <API_KEY>`. This is the only accepted form; keys in a query string or any other header are not accepted.\n\
2. One key per workspace; the key determines the workspace.\n\
3. Keys are created by a workspace owner or administrator from inside the product. The full value is shown once at creation; only a hash is retained, so a lost key is replaced. \
Revocation takes effect on the next request.\n\
4. Scopes, deny-by-default, chosen at creation: every key has `read`; optionally `notes:write`, `tasks:write`, `records:write`.\n\
5. A key stops working when the person who created it loses access to the workspace.\n\
6. Missing, malformed, unknown or revoked key: 401 UNAUTHORIZED. Valid key lacking the scope an endpoint needs: 403 FORBIDDEN_SCOPE.\n\
7. Keys are for server-side use only.\n\n\
## Events\n\
Events: not shown. No outbound event, webhook or notification mechanism is described; change detection is by polling with `updated_since`.\n\n\
## Errors\n\
Body of every error generated by the service: `{ error: { code: string, message: string }, request_id: string }`. \
Clients branch on `error.code` and HTTP status, never on `message`. The eight codes are the complete set.\n\n\
| Status | code | When |\n\
|---|---|---|\n\
| 400 | BAD_REQUEST | missing, malformed or out-of-range parameter; rejected cursor; unparseable `updated_since`; non-integer `limit`; unsupported `sort`; malformed attachment id; \
sub-resource unsupported by the entity; unknown entity name in `entities`; unknown or empty-body writes; invalid write values |\n\
| 401 | UNAUTHORIZED | no key, or unknown/revoked/malformed key |\n\
| 403 | FORBIDDEN_SCOPE | key lacks the needed scope |\n\
| 404 | NOT_FOUND | no such path, sub-resource name or record in this workspace; a record of another workspace is indistinguishable from a missing one; \
an id in an unexpected format is also 404; private items by id; download of an unavailable attachment; deleting an already-deleted note |\n\
| 405 | METHOD_NOT_ALLOWED | path exists, method does not; response has `Allow` header |\n\
| 429 | RATE_LIMITED | per-key budget exhausted; has `Retry-After` |\n\
| 500 | INTERNAL_ERROR | fault in the service; safe to retry with backoff |\n\
| 503 | SERVICE_UNAVAILABLE | temporarily declining rather than answering incompletely; has `Retry-After`; retry the identical request |\n\n\
Exceptions to the 404 rule: the notes and attachments sub-resources return 200 with empty `data` for unknown ids. \
A search with too few digits is 200 with `match_confidence: invalid`, not an error.\n\n\
Network-layer failures: 5xx responses (such as 502 or 504) may come from a layer in front of the service and then carry no JSON envelope and no `request_id`; \
an undecodable body is a retryable signal. Retry every 5xx with exponential backoff and jitter (suggested: capped at 32 seconds, about 5 attempts). \
For 429 and 503 wait the number of seconds in `Retry-After` before retrying the identical request.\n\n\
## Limits\n\
| Limit | Value | Applies to |\n\
|---|---|---|\n\
| Request rate | 600 requests per minute per key; beyond it 429 RATE_LIMITED with `Retry-After` (seconds) | all requests |\n\
| `limit` on lists | default 100, max 500 (above 500 clamped) | GET /v1/{entity} |\n\
| `limit` on notes sub-resource | default 100, max 500 | GET /v1/{entity}/{id}/notes |\n\
| `limit` on attachments sub-resource | default 500, max 500 | GET /v1/{entity}/{id}/attachments |\n\
| `limit` on searches | default 100, max 100 | both search endpoints |\n\
| Phone digits | fewer than 8: invalid; 9-digit key first, 8-digit fallback | GET /v1/search/phone |\n\
| Signed download URL lifetime | 60 minutes (`expires_in` 3600 seconds) | download |\n\
| `total_count` | only on a request without `cursor` | list endpoints |\n\
| Counts cost | each entity count is an exact pass; requesting fewer entities is cheaper | GET /v1/counts |\n\n\
For bulk sync, raise `limit` to 500 rather than raising concurrency.\n\n\
## Versioning\n\
- The version is the first path segment: `/v1/`.\n\
- Within `/v1/` the service may add endpoints, add fields to responses, and add values to existing enumerated fields. \
It will not remove or rename a field, change a field's type, or change the meaning of an existing value.\n\
- A breaking change is released under a new prefix (`/v2/`) while `/v1/` continues to be served.\n\
- Clients ignore unrecognised fields and treat enumerations as extensible (this document lists the values of an enumerated response field as `x-extensible-enum`).\n\
- Behaviour dated within v1: `mobile` on candidates and contacts holds a value from 2026-08-26 (null before); change tracking of `updated_at` starts 2026-08-13.";

const SCOPES: &str = "\
A secret key: `Authorization: Bearer <API_KEY>`, the only accepted form (keys in a query string or any other header are not accepted). \
One key belongs to one workspace and determines it. Scopes, deny-by-default, chosen at creation:\n\
- `read`: every key has it; all GET endpoints.\n\
- `notes:write`: POST /v1/notes, PATCH and DELETE /v1/notes/{id}.\n\
- `tasks:write`: POST /v1/tasks, PATCH and DELETE /v1/tasks/{id}.\n\
- `records:write`: PATCH /v1/{entity}/{id} of candidates, contacts, companies and jobs.\n\n\
Missing, malformed, unknown or revoked key: 401 UNAUTHORIZED. Valid key lacking the scope an endpoint needs: 403 FORBIDDEN_SCOPE. \
A key stops working when the person who created it loses access to the workspace; revocation takes effect on the next request. \
Keys are for server-side use only.";

const OWNER_CANDIDATE: &str = "A `users.id`: the owner explicitly recorded on the record if that person is still an active member; \
else the recruiter assigned to the role if still active; else null. Never the importing account. In an account populated by bulk migration \
it is null on every candidate until owners are set or roles assigned. Null is legitimate (left null rather than guessed), not an error.";
const OWNER_JOB: &str = "A `users.id`: assigned recruiter, falling back to the creator of the job. Null is legitimate, not an error.";
const OWNER_STORED: &str = "A `users.id`: the stored owner as it stands. Null is legitimate (left null rather than guessed), not an error.";

// ---------------------------------------------------------------------------------------
// Schema helpers.

fn sref(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

fn string(description: &str) -> Value {
    json!({"type": "string", "description": description})
}

fn nstring(description: &str) -> Value {
    json!({"type": ["string", "null"], "description": description})
}

fn stamp(description: &str) -> Value {
    json!({"type": "string", "format": "date-time", "description": description})
}

fn nstamp(description: &str) -> Value {
    json!({"type": ["string", "null"], "format": "date-time", "description": description})
}

/// A response field with enumerated values that may grow within v1.
fn extensible(values: &[&str], nullable: bool, description: &str) -> Value {
    json!({
        "type": if nullable { json!(["string", "null"]) } else { json!("string") },
        "x-extensible-enum": values,
        "description": description,
    })
}

/// An object schema; every listed property is required (the service always writes it).
fn object(props: Vec<(&str, Value)>) -> Value {
    let required: Vec<&str> = props.iter().map(|(k, _)| *k).collect();
    let mut map = Map::new();
    for (k, v) in props {
        map.insert(k.to_string(), v);
    }
    json!({"type": "object", "required": required, "properties": map})
}

const UUID_PATTERN: &str =
    "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$";

/// `updated_since`, exactly: `YYYY-MM-DD`, optionally `Thh:mm[:ss[.sss]]` (or a space for
/// `T`), optionally `Z` or `±hh:mm`. Field ranges are written out so that every string the
/// parser accepts matches (a date that does not exist, such as 02-30, matches and is
/// still refused).
pub const UPDATED_SINCE_PATTERN: &str = "^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])\
([T ]([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9](\\.[0-9]{3})?)?)?\
(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])?$";

const DATE_PATTERN: &str = "^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$";

/// What `actors::writes::is_email` accepts: one `@` with something before it, a domain
/// with a dot that neither starts nor ends it, no white space or control character.
/// (The character classes are spelled out so that every regex dialect reads them alike.)
const EMAIL_PATTERN: &str = "^[^@\\u0000-\\u0020\\u007f-\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]+@\
[^@.\\u0000-\\u0020\\u007f-\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]\
[^@\\u0000-\\u0020\\u007f-\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]*\\.\
[^@\\u0000-\\u0020\\u007f-\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]*\
[^@.\\u0000-\\u0020\\u007f-\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]$";

fn attachment_id_pattern() -> String {
    format!("^({}):.+$", ATTACHMENT_PREFIXES.join("|"))
}

// ---------------------------------------------------------------------------------------
// Components.

fn components() -> Value {
    let mut schemas = Map::new();
    for (name, schema) in [
        ("Candidate", candidate()),
        ("Application", application()),
        ("Contact", contact()),
        ("Company", company()),
        ("Job", job()),
        ("Note", note()),
        ("Task", task()),
        ("Attachment", attachment()),
        ("User", user()),
        ("PhoneMatch", phone_match()),
        ("EmailMatch", email_match()),
        ("Counts", counts()),
        ("DownloadLink", download_link()),
        ("IdOnly", id_only()),
        ("Deleted", deleted()),
        ("NewNote", new_note()),
        ("NotePatch", note_patch()),
        ("NewTask", new_task()),
        ("TaskPatch", task_patch()),
        ("CandidatePatch", record_patch(Entity::Candidates)),
        ("ContactPatch", record_patch(Entity::Contacts)),
        ("CompanyPatch", record_patch(Entity::Companies)),
        ("JobPatch", record_patch(Entity::Jobs)),
    ] {
        schemas.insert(name.to_string(), schema);
    }
    let mut responses = Map::new();
    for e in &ERRORS {
        schemas.insert(e.schema.to_string(), error_schema(e));
        responses.insert(e.response.to_string(), error_response(e));
    }
    json!({
        "securitySchemes": {"bearer": {
            "type": "http",
            "scheme": "bearer",
            "description": SCOPES,
            "x-scopes": {
                "read": "Every key: all GET endpoints.",
                "notes:write": "Create, update and delete notes.",
                "tasks:write": "Create, update and delete tasks.",
                "records:write": "Update allow-listed fields of candidates, contacts, companies and jobs.",
            },
        }},
        "schemas": schemas,
        "responses": responses,
        "parameters": parameters(),
        "headers": headers(),
    })
}

fn headers() -> Value {
    json!({
        "X-Request-Id": {
            "description": "The request's id, unique per request; equal to `request_id` in the body where there is one.",
            "required": true,
            "schema": {"type": "string", "minLength": 1},
        },
        "Strict-Transport-Security": {
            "description": "The API is served over HTTPS only.",
            "required": true,
            "schema": {"type": "string"},
        },
        "RateLimit-Policy": {
            "description": "On responses to a request whose key was recognised: the key's budget, e.g. `\"per-key\";q=600;w=60` (IETF draft-ietf-httpapi-ratelimit-headers).",
            "required": false,
            "schema": {"type": "string"},
        },
        "RateLimit": {
            "description": "On responses to a request whose key was recognised: requests remaining in the current window and seconds until the oldest counted request leaves it, e.g. `\"per-key\";r=599;t=60`.",
            "required": false,
            "schema": {"type": "string"},
        },
        "Retry-After": {
            "description": "Seconds to wait before retrying the identical request.",
            "required": true,
            "schema": {"type": "string", "pattern": "^[0-9]+$"},
        },
        "Allow": {
            "description": "The methods the path serves.",
            "required": true,
            "schema": {"type": "string"},
        },
        "Location": {
            "description": "The signed URL, valid 60 minutes. Do not send the API key to it and do not store it.",
            "required": true,
            "schema": {"type": "string", "format": "uri"},
        },
    })
}

/// Headers on every response of the service.
fn common_headers() -> Map<String, Value> {
    let mut h = Map::new();
    for name in [
        "X-Request-Id",
        "Strict-Transport-Security",
        "RateLimit-Policy",
        "RateLimit",
    ] {
        h.insert(
            name.to_string(),
            json!({"$ref": format!("#/components/headers/{name}")}),
        );
    }
    h
}

struct ErrorDoc {
    status: u16,
    code: &'static str,
    schema: &'static str,
    response: &'static str,
    when: &'static str,
    extra_header: Option<&'static str>,
}

/// The spec's eight codes (`http::errors::ErrorKind::code` renders the same strings; the
/// test of the document checks that every kind is here).
const ERRORS: [ErrorDoc; 8] = [
    ErrorDoc {
        status: 400,
        code: "BAD_REQUEST",
        schema: "BadRequestError",
        response: "BadRequest",
        when: "Missing, malformed or out-of-range parameter; rejected cursor; unparseable `updated_since`; non-integer `limit`; unsupported `sort`; \
malformed attachment id; sub-resource unsupported by the entity; unknown entity name in `entities`; unknown or empty-body writes; invalid write values. \
Also: a query string with an invalid percent-escape or a parameter given twice, a request URL over 8 KiB or headers over 16 KiB.",
        extra_header: None,
    },
    ErrorDoc {
        status: 401,
        code: "UNAUTHORIZED",
        schema: "UnauthorizedError",
        response: "Unauthorized",
        when: "No key, or unknown/revoked/malformed key (or a key whose creator has lost access to the workspace).",
        extra_header: None,
    },
    ErrorDoc {
        status: 403,
        code: "FORBIDDEN_SCOPE",
        schema: "ForbiddenScopeError",
        response: "ForbiddenScope",
        when: "The key lacks the needed scope.",
        extra_header: None,
    },
    ErrorDoc {
        status: 404,
        code: "NOT_FOUND",
        schema: "NotFoundError",
        response: "NotFound",
        when: "No such path, sub-resource name or record in this workspace; a record of another workspace is indistinguishable from a missing one; \
an id in an unexpected format is also 404; private items by id; download of an unavailable attachment; deleting an already-deleted note.",
        extra_header: None,
    },
    ErrorDoc {
        status: 405,
        code: "METHOD_NOT_ALLOWED",
        schema: "MethodNotAllowedError",
        response: "MethodNotAllowed",
        when: "The path exists, the method does not: the answer to any method a path of this document does not list. The `Allow` header lists the path's methods.",
        extra_header: Some("Allow"),
    },
    ErrorDoc {
        status: 429,
        code: "RATE_LIMITED",
        schema: "RateLimitedError",
        response: "RateLimited",
        when: "The key's budget (600 requests per minute unless the key has its own) is exhausted; wait `Retry-After` seconds, then retry the identical request.",
        extra_header: Some("Retry-After"),
    },
    ErrorDoc {
        status: 500,
        code: "INTERNAL_ERROR",
        schema: "InternalError",
        response: "InternalError",
        when: "Fault in the service; safe to retry with backoff.",
        extra_header: None,
    },
    ErrorDoc {
        status: 503,
        code: "SERVICE_UNAVAILABLE",
        schema: "ServiceUnavailableError",
        response: "ServiceUnavailable",
        when: "Temporarily declining rather than answering incompletely (the workspace is still loading, or the store did not confirm a write in time); \
wait `Retry-After` seconds, then retry the identical request.",
        extra_header: Some("Retry-After"),
    },
];

/// The (status, code) pairs of the document, for the test that compares them with the
/// server's own mapping.
pub fn error_codes() -> Vec<(u16, &'static str)> {
    ERRORS.iter().map(|e| (e.status, e.code)).collect()
}

fn error_schema(e: &ErrorDoc) -> Value {
    json!({
        "type": "object",
        "description": format!("The error envelope with code {} (HTTP {}). Clients branch on `error.code` and HTTP status, never on `message`.", e.code, e.status),
        "required": ["error", "request_id"],
        "properties": {
            "error": {
                "type": "object",
                "required": ["code", "message"],
                "properties": {
                    "code": {"type": "string", "const": e.code},
                    "message": {"type": "string", "description": "For people; never branch on it."},
                },
            },
            "request_id": {"type": "string", "minLength": 1, "description": "Unique per request; equal to the `X-Request-Id` header."},
        },
    })
}

fn error_response(e: &ErrorDoc) -> Value {
    let mut h = common_headers();
    if let Some(name) = e.extra_header {
        h.insert(
            name.to_string(),
            json!({"$ref": format!("#/components/headers/{name}")}),
        );
    }
    json!({
        "description": format!("{} {}: {}", e.status, e.code, e.when),
        "headers": h,
        "content": {"application/json": {"schema": sref(e.schema)}},
    })
}

fn error_ref(status: u16) -> (String, Value) {
    let e = ERRORS
        .iter()
        .find(|e| e.status == status)
        .expect("one of the eight");
    (
        status.to_string(),
        json!({"$ref": format!("#/components/responses/{}", e.response)}),
    )
}

fn parameters() -> Value {
    let limit = |default: usize, max: usize, rules: &str| {
        json!({
            "name": "limit",
            "in": "query",
            "required": false,
            "description": format!("Integer, default {default}, max {max}. {rules}"),
            "schema": {"type": "integer", "minimum": 1, "default": default},
        })
    };
    json!({
        "ListLimit": limit(records::LIST_DEFAULT_LIMIT, records::LIST_MAX_LIMIT,
            "Plain decimal digits only; above 500 is clamped to 500; below 1, or forms like `2.5e2`, `+250`, `250.0`, with leading space: 400 BAD_REQUEST."),
        "Cursor": {
            "name": "cursor",
            "in": "query",
            "required": false,
            "description": "Opaque; pass back `next_cursor` verbatim; do not construct, parse, or reuse across a changed `updated_since`; undecodable gives 400 \
    (so does an empty one, or one issued for another entity).",
            "schema": {"type": "string", "minLength": 1, "pattern": "^[A-Za-z0-9_-]+$"},
        },
        "ListSort": {
            "name": "sort",
            "in": "query",
            "required": false,
            "description": "Only `updated_at` accepted; anything else 400.",
            "schema": {"type": "string", "enum": ["updated_at"], "default": "updated_at"},
        },
        "UpdatedSince": {
            "name": "updated_since",
            "in": "query",
            "required": false,
            "description": "Inclusive. Format, exactly: `YYYY-MM-DD`, optionally followed by `Thh:mm`, `Thh:mm:ss` or `Thh:mm:ss.sss` (a space may replace `T`), \
    optionally followed by `Z` or `±hh:mm`. Anything else (reduced precision like `2026` or `2026-08`, locale forms, epoch milliseconds, default JavaScript \
    date-to-string output) gives 400 BAD_REQUEST naming the expected format; so does a date or time that does not exist. A value with no timezone is read as UTC. \
    Watermark guidance: resume from the `updated_at` of the last record received; the boundary record is seen again, so ingest is idempotent on `id`.",
            "schema": {"type": "string", "pattern": UPDATED_SINCE_PATTERN},
            "examples": {
                "utc": {"value": "2026-09-01T00:00:00Z"},
                "offset": {"value": "2026-09-01T10:00:00.000+01:00"},
                "date": {"value": "2026-09-01"},
            },
        },
        "NotesLimit": limit(subresources::NOTES_DEFAULT_LIMIT, subresources::NOTES_MAX_LIMIT,
            "Plain decimal digits, at least 1; larger values are treated as 500. Anything else: 400 BAD_REQUEST."),
        "NotesSort": {
            "name": "sort",
            "in": "query",
            "required": false,
            "description": "Only `-created_at` (newest first), the default; other values 400.",
            "schema": {"type": "string", "enum": ["-created_at"], "default": "-created_at"},
        },
        "AttachmentsLimit": limit(subresources::ATTACHMENTS_DEFAULT_LIMIT, subresources::ATTACHMENTS_MAX_LIMIT,
            "Plain decimal digits, at least 1; larger values are treated as 500. Anything else: 400 BAD_REQUEST."),
        "SearchLimit": limit(SEARCH_MAX_LIMIT, SEARCH_MAX_LIMIT,
            "Applies to the `candidates` array. Plain decimal digits, at least 1; larger values are treated as 100. Anything else: 400 BAD_REQUEST."),
        "RecordId": {
            "name": "id",
            "in": "path",
            "required": true,
            "description": "The record's id (opaque). Unknown id, id of another workspace, or id in an unexpected format: 404 NOT_FOUND.",
            "schema": {"type": "string", "minLength": 1},
        },
    })
}

// ---------------------------------------------------------------------------------------
// Records, as `actors::views` writes them.

fn candidate() -> Value {
    let mut s = object(vec![
        ("id", string("This record.")),
        ("person_id", nstring("Same on all records of one person; comparable to `person_id` in search results.")),
        ("is_primary_record", json!({"type": "boolean", "description": "true on the main record, false on a job-tied record."})),
        ("name", nstring("Full name.")),
        ("emails", json!({"type": ["array", "null"], "items": {"type": "string"}, "maxItems": 1, "description": "Zero or one entry."})),
        ("phone", nstring("Normalised primary number.")),
        ("phone_as_entered", nstring("Number as originally entered.")),
        ("mobile", nstring("Second number when held, else null; searched by phone search alongside `phone` (always null before 2026-08-26).")),
        ("job_title", nstring("Own current or target title.")),
        ("company", nstring("Current employer.")),
        ("location", nstring("Free text.")),
        ("linkedin_url", nstring("")),
        ("stage", nstring("Pipeline stage name; null when not on a job; workspace-configurable.")),
        ("stage_type", nstring("Stage category, stable across renames; null when not on a job.")),
        ("status", string("`placed`, `rejected`, otherwise the `stage_type`, otherwise `active`. Derived, not writable.")),
        ("owning_recruiter_id", nstring(OWNER_CANDIDATE)),
        ("job_id", nstring("`jobs.id`; null on the primary record.")),
        ("salary", json!({
            "type": ["object", "null"],
            "required": ["current_amount", "current_currency", "current_text", "expected_amount", "expected_currency", "expected_text"],
            "properties": {
                "current_amount": {"type": ["number", "null"]},
                "current_currency": {"type": ["string", "null"]},
                "current_text": {"type": ["string", "null"], "description": "Free text as typed."},
                "expected_amount": {"type": ["number", "null"]},
                "expected_currency": {"type": ["string", "null"]},
                "expected_text": {"type": ["string", "null"]},
            },
        })),
        ("consent", json!({
            "type": ["object", "null"],
            "description": "Covers data-processing consent and right-to-represent. Not writable.",
            "required": ["status", "given_at", "requested_at", "expires_at"],
            "properties": {
                "status": {"type": ["string", "null"], "description": "Allowed values: not shown."},
                "given_at": {"type": ["string", "null"], "format": "date-time"},
                "requested_at": {"type": ["string", "null"], "format": "date-time"},
                "expires_at": {"type": ["string", "null"], "format": "date-time"},
            },
        })),
        ("created_at", stamp("")),
        ("updated_at", stamp("Never null; equals `created_at` when no change is recorded.")),
    ]);
    s["description"] = json!("A record is one person's involvement: one primary record per person plus one record per job the person is put forward for. \
A person shortlisted for three roles appears as four records. Personal attributes (name, phone, e-mail, salary, consent) are carried on every record of a person; \
the primary record is the one to trust when they disagree. `total_count` and counts for candidates count records, not people; people are counted by distinct `person_id`.");
    // The primary record is on no job.
    s["if"] = json!({"properties": {"is_primary_record": {"const": true}}});
    s["then"] = json!({"properties": {"job_id": {"type": "null"}, "stage": {"type": "null"}, "stage_type": {"type": "null"}}});
    s
}

fn application() -> Value {
    let mut s = object(vec![
        ("id", string("Equal to `candidate_row_id` and to the matching `candidates.id`.")),
        ("candidate_id", nstring("The person: equals that person's `candidates.person_id`.")),
        ("candidate_row_id", string("The `candidates.id` carrying the application.")),
        ("candidate_name", nstring("")),
        ("job_id", string("")),
        ("stage", nstring("")),
        ("stage_type", nstring("")),
        ("status", string("Same derivation as candidates: `placed`, `rejected`, otherwise the `stage_type`, otherwise `active`.")),
        ("rejected_at", nstamp("Null unless rejected.")),
        ("created_at", stamp("")),
        ("updated_at", stamp("Never null.")),
    ]);
    s["description"] = json!("One candidate put forward for one job; the same set as candidates records with a `job_id`, seen from the job side.");
    s["if"] = json!({"not": {"properties": {"status": {"const": "rejected"}}}});
    s["then"] = json!({"properties": {"rejected_at": {"type": "null"}}});
    s
}

fn contact() -> Value {
    let mut s = object(vec![
        ("id", string("")),
        ("name", nstring("")),
        ("emails", json!({"type": ["array", "null"], "items": {"type": "string"}, "maxItems": 1, "description": "Zero or one entry."})),
        ("phone", nstring("Normalised.")),
        ("phone_as_entered", nstring("")),
        ("mobile", nstring("Second number when held, else null; searched by phone search (always null before 2026-08-26).")),
        ("job_title", nstring("")),
        ("department", nstring("")),
        ("company_id", string("`companies.id`; never null.")),
        ("company", nstring("Company name, denormalised.")),
        ("linkedin_url", nstring("")),
        ("is_main_contact", json!({"type": ["boolean", "null"], "description": "Primary contact of that company."})),
        ("owning_recruiter_id", nstring(OWNER_STORED)),
        ("created_at", stamp("")),
        ("updated_at", stamp("Never null.")),
    ]);
    s["description"] = json!("A person at a client company.");
    s
}

fn company() -> Value {
    let mut s = object(vec![
        ("id", string("")),
        ("name", nstring("")),
        (
            "phone",
            nstring("Main number; often a contact's direct number."),
        ),
        ("website_url", nstring("")),
        ("linkedin_url", nstring("")),
        (
            "status",
            nstring("Commercial relationship status, workspace-configurable."),
        ),
        (
            "is_archived",
            json!({"type": ["boolean", "null"], "description": "Archived companies stay readable and stay in the sync stream."}),
        ),
        ("owning_recruiter_id", nstring(OWNER_STORED)),
        ("created_at", stamp("")),
        ("updated_at", stamp("Never null.")),
    ]);
    s["description"] = json!("A client company.");
    s
}

fn job() -> Value {
    let mut s = object(vec![
        ("id", string("")),
        ("title", nstring("")),
        ("position", nstring("Often equals title.")),
        ("company", nstring("Client company name.")),
        (
            "company_id",
            nstring("May be null when no client attached."),
        ),
        ("status", nstring("Placement status.")),
        (
            "role_status_id",
            nstring("Id of the workspace-configured status."),
        ),
        (
            "live",
            json!({"type": "boolean", "description": "True when not archived; exact complement of `is_archived`."}),
        ),
        (
            "published",
            json!({"type": "boolean", "description": "True when not archived and also on the public careers page; never true while `live` is false."}),
        ),
        (
            "is_archived",
            json!({"type": "boolean", "description": "Archived jobs stay readable and stay in the sync stream."}),
        ),
        (
            "salary",
            json!({
                "type": ["object", "null"],
                "required": ["amount", "currency", "type"],
                "properties": {
                    "amount": {"type": ["number", "null"]},
                    "currency": {"type": ["string", "null"]},
                    "type": {"type": ["string", "null"], "description": "How remuneration is expressed."},
                },
            }),
        ),
        ("owning_recruiter_id", nstring(OWNER_JOB)),
        ("hiring_manager", nstring("Free text.")),
        ("created_at", stamp("")),
        ("updated_at", stamp("Never null.")),
    ]);
    s["oneOf"] = json!([
        {"properties": {"live": {"const": true}, "is_archived": {"const": false}}},
        {"properties": {"live": {"const": false}, "is_archived": {"const": true}, "published": {"const": false}}},
    ]);
    s
}

fn note() -> Value {
    let mut s = object(vec![
        ("id", string("")),
        ("parent_type", extensible(&["candidate", "contact", "company", "job"], false, "The kind of record the note is on.")),
        ("parent_id", string("Id of the record in the entity named by `parent_type`.")),
        ("title", nstring("May be empty string.")),
        ("body_html", nstring("HTML.")),
        ("type", nstring("Label; open per-account vocabulary (not an enumeration, may be renamed or deleted); null when unlabelled; do not branch on it.")),
        ("is_private", json!({"type": "boolean", "const": false, "description": "Private notes are never returned."})),
        ("author_id", nstring("`users.id`.")),
        ("created_at", stamp("")),
        ("updated_at", stamp("Never null.")),
    ]);
    s["properties"]["job_id"] = nstring(
        "Present only when `parent_type` is `candidate`; may be null; absent (not null) otherwise.",
    );
    s["properties"]["company_id"] =
        nstring("Present only when `parent_type` is `contact`; absent (not null) otherwise.");
    s["description"] = json!("One entity for notes on four parent kinds. Meeting transcripts and summaries are not exposed as notes.");
    s["allOf"] = json!([
        {
            "if": {"properties": {"parent_type": {"const": "candidate"}}},
            "then": {"required": ["job_id"]},
            "else": {"not": {"required": ["job_id"]}},
        },
        {
            "if": {"properties": {"parent_type": {"const": "contact"}}},
            "then": {"required": ["company_id"]},
            "else": {"not": {"required": ["company_id"]}},
        },
    ]);
    s
}

fn task() -> Value {
    let mut s = object(vec![
        ("id", string("")),
        ("parent_type", extensible(&["candidate", "contact", "company"], false, "Never job.")),
        ("parent_id", string("")),
        ("title", nstring("")),
        ("body_html", nstring("HTML.")),
        ("status", extensible(&["open", "completed", "cancelled"], false, "`cancelled` is set by the service when the placement the task reminded of is undone; treated as closed.")),
        ("due_date", json!({"type": ["string", "null"], "format": "date", "description": "`YYYY-MM-DD`."})),
        ("owner_id", nstring("`users.id` assignee.")),
        ("completed_at", nstamp("Null while outstanding; stays null when cancelled.")),
        ("is_private", json!({"type": "boolean", "const": false, "description": "Private tasks are never returned."})),
        ("created_at", stamp("")),
        ("updated_at", stamp("Never null.")),
    ]);
    s["description"] = json!("A task. Tasks have no label field.");
    s["if"] = json!({"not": {"properties": {"status": {"const": "completed"}}}});
    s["then"] = json!({"properties": {"completed_at": {"type": "null"}}});
    s
}

fn attachment() -> Value {
    let mut s = object(vec![
        (
            "id",
            json!({"type": "string", "pattern": attachment_id_pattern(),
            "description": "`<kind>:<identifier>` with prefix one of `cv:`, `file:`, `cvdoc:`, `clientfile:`."}),
        ),
        (
            "parent_type",
            extensible(&["candidate", "company"], false, ""),
        ),
        ("parent_id", string("")),
        (
            "filename",
            nstring("Display name, not unique within a parent."),
        ),
        (
            "content_type",
            nstring("MIME type; null if never recorded."),
        ),
        (
            "size",
            json!({"type": ["integer", "null"], "minimum": 0, "description": "Bytes; null if unknown."}),
        ),
        (
            "kind",
            extensible(&["cv", "generated_cv", "document"], false, ""),
        ),
        (
            "storage_ref",
            nstring("Bucket/path-style identifier for diagnostics; not a URL, no credentials."),
        ),
        ("created_at", stamp("")),
        ("updated_at", stamp("Never null.")),
    ]);
    s["description"] = json!("A file of a candidate or a company. Attachments with kind `cv` inherit the timestamps of their candidate and still appear in the `updated_since` stream. \
Some attachment records (after migration) describe files whose bytes never arrived; they remain listed but their download returns 404 NOT_FOUND.");
    s
}

fn user() -> Value {
    let mut s = object(vec![
        ("id", string("")),
        ("name", nstring("Full name.")),
        ("email", nstring("")),
        ("active", json!({"type": "boolean", "description": "True for live access; false for a never-accepted invitation."})),
        ("role", nstring("Workspace role.")),
        ("external_id", json!({"type": "null", "description": "Always null."})),
        ("created_at", stamp("")),
        ("updated_at", stamp("Never null. A change to name, e-mail, role or invitation acceptance moves `updated_at`.")),
    ]);
    s["description"] = json!("A member of the workspace.");
    s
}

fn search_contact() -> Value {
    object(vec![
        ("id", string("")),
        ("name", nstring("")),
        ("phone", nstring("")),
        ("email", nstring("")),
        ("company_id", string("")),
        (
            "owning_recruiter_id",
            nstring("The same value as the same contact fetched by id."),
        ),
    ])
}

fn search_person(with_stage: bool) -> Value {
    let mut row = vec![
        ("candidate_row_id", string("")),
        ("job_id", nstring("")),
        ("is_primary_record", json!({"type": "boolean"})),
    ];
    if with_stage {
        row.push(("stage", nstring("")));
    }
    let mut row = object(row);
    if !with_stage {
        row["not"] = json!({"required": ["stage"]});
    }
    object(vec![
        ("person_id", string("")),
        ("name", nstring("")),
        (
            "phone",
            nstring(if with_stage {
                "Always the primary number, not necessarily the matched one."
            } else {
                ""
            }),
        ),
        ("email", nstring("")),
        ("owning_recruiter_id", nstring(OWNER_CANDIDATE)),
        (
            "records",
            json!({"type": "array", "minItems": 1, "items": row, "description": "The person's records, primary record first."}),
        ),
    ])
}

const CONFIDENCE: &str = "Counts people only: entries in `candidates` plus entries in `contacts`. One person: `exact` (a candidate or a contact). \
Two or more in any combination: `ambiguous`. Zero: `none`. Companies are never counted. Only `exact` licenses an automatic decision; \
`ambiguous` must be presented as a choice.";

fn phone_match() -> Value {
    let mut s = object(vec![
        ("query", string("As sent.")),
        (
            "match_strategy",
            extensible(
                &["last9", "last8_fallback"],
                false,
                "`last8_fallback` when the last eight digits were used.",
            ),
        ),
        (
            "match_confidence",
            extensible(
                &["exact", "ambiguous", "none", "invalid"],
                false,
                CONFIDENCE,
            ),
        ),
        (
            "candidates",
            json!({"type": "array", "items": search_person(true), "description": "One per person."}),
        ),
        (
            "contacts",
            json!({"type": "array", "items": search_contact()}),
        ),
        (
            "companies",
            json!({"type": "array", "items": object(vec![
            ("id", string("")),
            ("name", nstring("")),
            ("phone", nstring("")),
            ("owning_recruiter_id", nstring(OWNER_STORED)),
        ]), "description": "May be populated while confidence is `none`."}),
        ),
    ]);
    s["properties"]["match_key"] = json!({"type": "string", "pattern": "^[0-9]{8,9}$", "description": "Normalised key; absent when invalid."});
    s["properties"]["reason"] = string("Only when invalid.");
    s["description"] = json!("Matching rules: 1. Key is the last nine digits of the number (format-agnostic across national and international forms). \
2. If nine digits identify nobody (or the number has only eight digits), retry on the last eight digits; `match_strategy` is `last8_fallback`. \
The eight-digit pass never runs when the nine-digit pass found anyone. 3. Fewer than eight digits: `match_confidence: invalid`, empty arrays, a `reason`. \
4. `match_confidence` counts people only (companies never; `companies` may be populated while confidence is `none`; one person plus a company is `exact`). \
5. Only `exact` licenses an automatic decision; `ambiguous` must be presented as a choice. Two people sharing a number (one as primary, one as second number) yield `ambiguous`.");
    s["allOf"] = json!([
        {
            "if": {"properties": {"match_confidence": {"const": "invalid"}}},
            "then": {
                "required": ["reason"],
                "not": {"required": ["match_key"]},
                "properties": {"candidates": {"maxItems": 0}, "contacts": {"maxItems": 0}, "companies": {"maxItems": 0}},
            },
            "else": {"required": ["match_key"], "not": {"required": ["reason"]}},
        },
        {
            "if": {"required": ["match_key"], "properties": {"match_strategy": {"const": "last9"}}},
            "then": {"properties": {"match_key": {"pattern": "^[0-9]{9}$"}}},
        },
        {
            "if": {"properties": {"match_strategy": {"const": "last8_fallback"}}},
            "then": {"properties": {"match_key": {"pattern": "^[0-9]{8}$"}}},
        },
        {
            "if": {"properties": {"match_confidence": {"const": "none"}}},
            "then": {"properties": {"candidates": {"maxItems": 0}, "contacts": {"maxItems": 0}}},
        },
    ]);
    s
}

fn email_match() -> Value {
    let mut s = object(vec![
        ("query", string("As sent.")),
        (
            "match_confidence",
            json!({
                "type": "string",
                "x-extensible-enum": ["exact", "ambiguous", "none"],
                "not": {"const": "invalid"},
                "description": format!("Never invalid. {CONFIDENCE}"),
            }),
        ),
        (
            "candidates",
            json!({"type": "array", "items": search_person(false), "description": "One per person."}),
        ),
        (
            "contacts",
            json!({"type": "array", "items": search_contact()}),
        ),
    ]);
    s["description"] =
        json!("No `companies`, `match_key` or `match_strategy`. Confidence scoring as for phone.");
    s["not"] = json!({"anyOf": [
        {"required": ["companies"]},
        {"required": ["match_key"]},
        {"required": ["match_strategy"]},
    ]});
    s["if"] = json!({"properties": {"match_confidence": {"const": "none"}}});
    s["then"] = json!({"properties": {"candidates": {"maxItems": 0}, "contacts": {"maxItems": 0}}});
    s
}

fn entity_names() -> Vec<&'static str> {
    Entity::ALL.iter().map(|e| e.name()).collect()
}

fn counts() -> Value {
    let mut props = Map::new();
    for e in Entity::ALL {
        props.insert(
            e.name().to_string(),
            json!({"type": "integer", "minimum": 0}),
        );
    }
    json!({
        "type": "object",
        "description": "Exactly the requested entities. Counts are exact whole-entity totals, never filtered by `updated_since`, point-in-time, \
    equal to the unfiltered `total_count` of the list; private notes and tasks excluded; candidates counts records.",
        "properties": props,
        "propertyNames": {"enum": entity_names()},
    })
}

fn download_link() -> Value {
    object(vec![
        (
            "url",
            json!({"type": "string", "format": "uri", "description": "The signed URL. Do not send the API key to it and do not store it."}),
        ),
        (
            "signed",
            json!({"type": "boolean", "const": true, "description": "Always true in v1."}),
        ),
        (
            "expires_in",
            json!({"type": "integer", "const": crate::signed_urls::LIFETIME_SECS, "description": "Seconds."}),
        ),
        ("filename", string("")),
        ("content_type", string("")),
    ])
}

fn id_only() -> Value {
    let mut s = object(vec![("id", string(""))]);
    s["description"] = json!(
        "Only the id: the answer for a record the API does not show (a private note or task)."
    );
    s
}

fn deleted() -> Value {
    object(vec![("deleted", json!({"type": "boolean", "const": true}))])
}

// ---------------------------------------------------------------------------------------
// Request bodies, as `http::body` reads them.

/// What a field of a write accepts.
#[derive(Clone, Copy)]
enum In {
    /// A string with at least one character other than white space.
    Text,
    /// Any string, the empty one included.
    AnyText,
    Uuid,
    Email,
    Phone,
    Date,
    Amount,
    Currency,
    Bool,
    Reference,
}

fn input(kind: In, nullable: bool, description: &str) -> Value {
    let ty = |t: &str| {
        if nullable {
            json!([t, "null"])
        } else {
            json!(t)
        }
    };
    let mut v = match kind {
        In::Text => json!({"type": ty("string"), "minLength": 1}),
        In::AnyText => json!({"type": ty("string")}),
        In::Uuid => json!({"type": ty("string"), "format": "uuid", "pattern": UUID_PATTERN}),
        In::Email => json!({"type": ty("string"), "maxLength": 254, "pattern": EMAIL_PATTERN}),
        In::Phone => json!({"type": ty("string"), "pattern": "[0-9]"}),
        In::Date => json!({"type": ty("string"), "format": "date", "pattern": DATE_PATTERN}),
        In::Amount => json!({"type": ty("number"), "minimum": 0}),
        In::Currency => {
            let mut codes: Vec<Value> = actors::writes::CURRENCIES
                .iter()
                .map(|c| json!(c))
                .collect();
            if nullable {
                codes.push(Value::Null);
            }
            json!({"type": ty("string"), "enum": codes})
        }
        In::Bool => json!({"type": "boolean"}),
        In::Reference => {
            json!({"type": ty("string"), "minLength": 1, "maxLength": body::MAX_REFERENCE_LEN})
        }
    };
    let mut d = description.to_string();
    let rule: String = match kind {
        In::Text => "Must not be empty or only white space.".into(),
        In::Email => "An e-mail address: one `@` with something before it, a dot in the domain, no white space; at most 254 characters.".into(),
        In::Phone => "Any format with at least one digit, as entered; it is normalised for display and search.".into(),
        In::Date => "`YYYY-MM-DD`, a real calendar date; unparseable gives 400.".into(),
        In::Amount => "A JSON number, zero or greater (strings rejected, not coerced).".into(),
        In::Currency => "An ISO 4217 code in current use, upper case.".into(),
        In::Bool => "Must be true or false.".into(),
        In::Uuid => "A UUID in its canonical hyphenated form.".into(),
        In::Reference => format!("At most {} characters.", body::MAX_REFERENCE_LEN),
        In::AnyText => String::new(),
    };
    if !rule.is_empty() {
        if !d.is_empty() {
            d.push(' ');
        }
        d.push_str(&rule);
    }
    if nullable {
        d.push_str(" Send null to clear.");
    }
    v["description"] = Value::String(d.trim().to_string());
    v
}

/// A request body schema over exactly `fields` (the handler's allow-list): every field
/// must have a description in `described`, and every described field must be allowed.
fn request_body(
    fields: &[&str],
    required: &[&str],
    described: Vec<(&str, Value)>,
    description: &str,
) -> Value {
    let mut props = Map::new();
    for (name, schema) in described {
        assert!(
            fields.contains(&name),
            "{name} is described but the handler does not accept it"
        );
        props.insert(name.to_string(), schema);
    }
    for f in fields {
        assert!(props.contains_key(*f), "{f} is accepted but not described");
    }
    json!({
        "type": "object",
        "description": description,
        "required": required,
        "minProperties": 1,
        "additionalProperties": false,
        "properties": props,
    })
}

const BODY_RULES: &str = "A JSON object of the listed fields only (`Content-Type: application/json`, at most 1 MiB): \
an unknown field or an empty body gives 400, and so does a value of the wrong type or out of range. \
Strings that must not be empty are refused when they hold only white space too.";

fn new_note() -> Value {
    request_body(
        writes::NEW_NOTE_FIELDS,
        &["parent_type", "parent_id", "body_html"],
        vec![
            ("parent_type", json!({"type": "string", "enum": ["candidate", "contact", "company", "job"]})),
            ("parent_id", input(In::Uuid, false, "Target record; for a candidate resolves to the canonical person. A record that does not exist in the workspace gives 400.")),
            ("body_html", input(In::Text, false, "HTML accepted.")),
            ("title", input(In::AnyText, true, "Null is the same as leaving it out.")),
            ("type", input(In::Text, true, "Free label. Null is the same as leaving it out.")),
            ("author_email", input(In::Text, false, "Exact work e-mail of an accepted workspace member; otherwise the workspace owner.")),
            ("is_private", input(In::Bool, false, "A private note is never returned anywhere.")),
            ("reference", input(In::Reference, false, "Idempotency key: repeating with the same reference updates that note instead of creating another.")),
        ],
        BODY_RULES,
    )
}

fn note_patch() -> Value {
    request_body(
        writes::NOTE_PATCH_FIELDS,
        &[],
        vec![
            ("body_html", input(In::Text, false, "")),
            ("title", input(In::AnyText, true, "")),
            ("type", input(In::Text, true, "")),
            ("is_private", input(In::Bool, false, "")),
        ],
        BODY_RULES,
    )
}

fn new_task() -> Value {
    request_body(
        writes::NEW_TASK_FIELDS,
        &["parent_type", "parent_id", "title"],
        vec![
            (
                "parent_type",
                json!({"type": "string", "enum": ["candidate", "contact", "company"]}),
            ),
            (
                "parent_id",
                input(
                    In::Uuid,
                    false,
                    "A record that does not exist in the workspace gives 400.",
                ),
            ),
            ("title", input(In::Text, false, "")),
            (
                "body_html",
                input(In::AnyText, true, "Null is the same as leaving it out."),
            ),
            (
                "due_date",
                input(In::Date, true, "Null is the same as leaving it out."),
            ),
            (
                "owner_email",
                input(
                    In::Text,
                    false,
                    "Exact work e-mail of an accepted workspace member (otherwise 400).",
                ),
            ),
            (
                "is_private",
                input(
                    In::Bool,
                    false,
                    "A private task is never returned anywhere.",
                ),
            ),
            (
                "reference",
                input(
                    In::Reference,
                    false,
                    "Idempotency key, same behaviour as notes.",
                ),
            ),
        ],
        BODY_RULES,
    )
}

fn task_patch() -> Value {
    request_body(
        writes::TASK_PATCH_FIELDS,
        &[],
        vec![
            ("title", input(In::Text, false, "")),
            ("body_html", input(In::AnyText, true, "")),
            ("due_date", input(In::Date, true, "")),
            (
                "owner_email",
                input(
                    In::Text,
                    true,
                    "Exact work e-mail of an accepted workspace member (otherwise 400).",
                ),
            ),
            ("is_private", input(In::Bool, false, "")),
            (
                "status",
                json!({"type": "string", "enum": ["open", "completed"], "description": "`completed_at` is kept in step."}),
            ),
        ],
        BODY_RULES,
    )
}

fn record_patch(entity: Entity) -> Value {
    let owner = (
        "owning_recruiter_id",
        input(
            In::Uuid,
            true,
            "Must resolve to a user inside the same workspace (otherwise 400).",
        ),
    );
    let (fields, described) = match entity {
        Entity::Candidates => (
            writes::CANDIDATE_FIELDS,
            vec![
                ("name", input(In::Text, true, "Applies to every record of the person.")),
                ("email", input(In::Email, true, "Applies to every record of the person.")),
                ("phone", input(In::Phone, true, "Applies to every record of the person.")),
                ("job_title", input(In::Text, true, "Applies to every record of the person.")),
                ("current_company", input(In::Text, true, "Current employer (`company` on the record). Applies to every record of the person.")),
                ("current_salary_amount", input(In::Amount, true, "")),
                ("current_salary_currency", input(In::Currency, true, "")),
                ("expected_salary_amount", input(In::Amount, true, "")),
                ("expected_salary_currency", input(In::Currency, true, "")),
                owner,
            ],
        ),
        Entity::Contacts => (
            writes::CONTACT_FIELDS,
            vec![
                ("name", input(In::Text, true, "")),
                ("email", input(In::Email, true, "")),
                ("phone", input(In::Phone, true, "")),
                ("company_id", input(In::Uuid, false, "Must resolve to a company inside the same workspace (otherwise 400); a contact always belongs to a company, so it cannot be null.")),
                owner,
            ],
        ),
        Entity::Companies => (
            writes::COMPANY_FIELDS,
            vec![
                ("name", input(In::Text, true, "")),
                ("phone", input(In::Phone, true, "")),
                owner,
            ],
        ),
        Entity::Jobs => (
            writes::JOB_FIELDS,
            vec![
                ("title", input(In::Text, true, "")),
                ("salary_amount", input(In::Amount, true, "")),
                ("salary_currency", input(In::Currency, true, "")),
                ("company_id", input(In::Uuid, true, "Must resolve to a company inside the same workspace (otherwise 400).")),
                ("live", input(In::Bool, false, "`is_archived` becomes its complement; `published` cannot be true while `live` is false.")),
                owner,
            ],
        ),
        other => unreachable!("{} have no writable fields", other.name()),
    };
    request_body(
        fields,
        &[],
        described,
        &format!("Writable fields only; any other field gives 400. Rules: numeric fields must be JSON numbers, zero or greater (strings rejected, not coerced); \
currencies are validated; `owning_recruiter_id` and `company_id` must resolve inside the same workspace; wrong-typed or out-of-range values give 400; \
to clear a field send null, not an empty string. {BODY_RULES}"),
    )
}

// ---------------------------------------------------------------------------------------
// Operations.

fn schema_name(e: Entity) -> &'static str {
    match e {
        Entity::Candidates => "Candidate",
        Entity::Applications => "Application",
        Entity::Contacts => "Contact",
        Entity::Companies => "Company",
        Entity::Jobs => "Job",
        Entity::Notes => "Note",
        Entity::Tasks => "Task",
        Entity::Attachments => "Attachment",
        Entity::Users => "User",
    }
}

/// `candidates` → `a candidate`, `applications` → `an application`, for summaries.
fn singular(e: Entity) -> String {
    let name = schema_name(e).to_ascii_lowercase();
    let article = if name.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {name}")
}

/// `candidates` → `Candidates`, for operation ids.
fn title_case(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
        .unwrap_or_default()
}

fn pref(name: &str) -> Value {
    json!({"$ref": format!("#/components/parameters/{name}")})
}

fn request_id_prop() -> Value {
    json!({"type": "string", "minLength": 1, "description": "Unique per request; equal to the `X-Request-Id` header."})
}

/// `{data: <data>, request_id}`.
fn envelope(data: Value) -> Value {
    json!({
        "type": "object",
        "required": ["data", "request_id"],
        "properties": {"data": data, "request_id": request_id_prop()},
    })
}

fn ok(description: &str, schema: Value) -> Value {
    json!({
        "description": description,
        "headers": common_headers(),
        "content": {"application/json": {"schema": schema}},
    })
}

fn responses(success: Vec<(&str, Value)>, errors: &[u16]) -> Value {
    let mut map = Map::new();
    for (status, r) in success {
        map.insert(status.to_string(), r);
    }
    for s in errors {
        let (k, v) = error_ref(*s);
        map.insert(k, v);
    }
    Value::Object(map)
}

/// The errors any keyed read can answer: a malformed request, the key, its budget, a
/// fault, a workspace still loading.
const READ_ERRORS: &[u16] = &[400, 401, 429, 500, 503];
const READ_ITEM_ERRORS: &[u16] = &[400, 401, 404, 429, 500, 503];
const CREATE_ERRORS: &[u16] = &[400, 401, 403, 429, 500, 503];
const WRITE_ITEM_ERRORS: &[u16] = &[400, 401, 403, 404, 429, 500, 503];

/// One operation. Its parts are all positional in the table of operations below, where
/// each call reads as a row: id, tag, summary, description, scope, parameters, body,
/// responses.
#[allow(clippy::too_many_arguments)]
fn op(
    id: String,
    tag: &str,
    summary: &str,
    description: &str,
    scope: &str,
    parameters: Vec<Value>,
    body: Option<&str>,
    responses: Value,
) -> Value {
    let mut o = json!({
        "operationId": id,
        "tags": [tag],
        "summary": summary,
        "description": description,
        "security": [{"bearer": [scope]}],
        "responses": responses,
    });
    if !parameters.is_empty() {
        o["parameters"] = Value::Array(parameters);
    }
    if let Some(schema) = body {
        o["requestBody"] = json!({
            "required": true,
            "content": {"application/json": {"schema": sref(schema)}},
        });
    }
    o
}

fn operation(p: &DescribedPath, method: &str) -> Value {
    let e = p.entity;
    match (p.pattern, method) {
        (http::OPENAPI, "GET") => json!({
            "operationId": "getOpenApiDocument",
            "tags": ["document"],
            "summary": "This document",
            "description": "The OpenAPI description of the API. No key needed.",
            "security": [],
            "responses": responses(
                vec![("200", json!({
                    "description": "The document (its body carries no `request_id`; the id is in `X-Request-Id`).",
                    "headers": common_headers(),
                    "content": {"application/json": {"schema": {"type": "object", "required": ["openapi", "info", "paths"]}}},
                }))],
                &[400, 500],
            ),
        }),
        (http::COUNTS, "GET") => op(
            "getCounts".into(),
            "counts",
            "Record counts",
            "Exact whole-entity totals of the requested entities (default all nine). Each entity count is an exact pass; requesting fewer entities is cheaper.",
            "read",
            vec![json!({
                "name": "entities",
                "in": "query",
                "required": false,
                "description": "Comma-separated list of entity names, default all nine; duplicates collapsed; unknown name gives 400.",
                "style": "form",
                "explode": false,
                "schema": {"type": "array", "minItems": 1, "items": {"type": "string", "enum": entity_names()}},
            })],
            None,
            responses(vec![("200", ok("`{ data: { <entity>: integer, ... }, request_id }` containing exactly the requested entities.", envelope(sref("Counts"))))], READ_ERRORS),
        ),
        (http::SEARCH_PHONE, "GET") => op(
            "searchPhone".into(),
            "search",
            "Find a person by phone",
            "Both `phone` and `mobile` of people are searched. HTTP 200 even for `invalid` (fewer than eight digits).",
            "read",
            vec![
                json!({
                    "name": "number",
                    "in": "query",
                    "required": true,
                    "description": "Any format; missing gives 400. Also accepted under the aliases `phone` and `q` (aliases given together must agree, else 400).",
                    "schema": {"type": "string"},
                    "examples": {
                        "international": {"value": "+44 7700 900123"},
                        "national": {"value": "07700900123"},
                    },
                }),
                pref("SearchLimit"),
            ],
            None,
            responses(vec![("200", ok("`{ data: <match result>, request_id }`.", envelope(sref("PhoneMatch"))))], READ_ERRORS),
        ),
        (http::SEARCH_EMAIL, "GET") => op(
            "searchEmail".into(),
            "search",
            "Find a person by e-mail",
            "Exact match on the full address, case-insensitive.",
            "read",
            vec![
                json!({
                    "name": "address",
                    "in": "query",
                    "required": true,
                    "description": "Exact match on the full address, case-insensitive; raw or percent-encoded `+` both work. Missing, empty or blank gives 400. \
Also accepted under the aliases `email` and `q` (aliases given together must agree, else 400).",
                    "schema": {"type": "string", "minLength": 1},
                    "examples": {"address": {"value": "ann+cv@mail.example"}},
                }),
                pref("SearchLimit"),
            ],
            None,
            responses(vec![("200", ok("`{ data: <match result>, request_id }`.", envelope(sref("EmailMatch"))))], READ_ERRORS),
        ),
        (http::DOWNLOAD, "GET") => op(
            "downloadAttachment".into(),
            "downloads",
            "Redirect to signed URL",
            "The signed URL is served by the service itself, outside the API (`/files/…` under the service's public address): \
it needs no key, and its answers are object-store-style, not the API's envelope, so it is not described here. \
A successful redirect does not guarantee the bytes exist: fetching the signed URL may fail with an error body whose `code` is `NoSuchKey` \
(delivered with HTTP 400 and a body field `statusCode` of `404`); that means the file is gone and is not retried.",
            "read",
            vec![
                json!({
                    "name": "id",
                    "in": "path",
                    "required": true,
                    "description": "The full prefixed attachment id (a colon is legal in the path; `%3A` also accepted). 400 BAD_REQUEST for an id not of the form \
`<kind>:<identifier>`, with a prefix outside the four listed, or with an invalid percent-escape.",
                    "schema": {"type": "string", "pattern": attachment_id_pattern()},
                }),
                json!({
                    "name": "redirect",
                    "in": "query",
                    "required": false,
                    "description": "`false` returns JSON; any other value or absence gives the redirect.",
                    "schema": {"type": "string"},
                    "examples": {"json": {"summary": "JSON instead of a redirect", "value": "false"}},
                }),
            ],
            None,
            responses(
                vec![
                    ("200", ok("With `redirect=false`.", envelope(sref("DownloadLink")))),
                    ("302", json!({
                        "description": "Default: `Location` set to a signed URL valid 60 minutes, plus header `X-Request-Id`; no body.",
                        "headers": {
                            "Location": {"$ref": "#/components/headers/Location"},
                            "X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"},
                            "Strict-Transport-Security": {"$ref": "#/components/headers/Strict-Transport-Security"},
                            "RateLimit-Policy": {"$ref": "#/components/headers/RateLimit-Policy"},
                            "RateLimit": {"$ref": "#/components/headers/RateLimit"},
                        },
                    })),
                ],
                READ_ITEM_ERRORS,
            ),
        ),
        (http::SUB_NOTES, "GET") => {
            let e = e.expect("an entity");
            let whole_person = matches!(e, Entity::Candidates | Entity::Applications);
            op(
                format!("list{}Notes", title_case(schema_name(e))),
                "sub-resources",
                &format!("Notes of {}", singular(e)),
                &format!("Not cursor-paginated: returns the most recent `limit` notes, newest first. {} \
An id that does not exist or belongs to another workspace gives 200 with empty `data` and `total_count: 0`.",
                    if whole_person {
                        "The result covers the whole person (all of the person's records); `parent_id` on items may differ from the requested id. Fetching the same person via two records returns the same set."
                    } else {
                        "Only that record's notes."
                    }),
                "read",
                vec![pref("RecordId"), pref("NotesLimit"), pref("NotesSort")],
                None,
                responses(vec![("200", ok("`{ data: [note], total_count, request_id }`.", json!({
                    "type": "object",
                    "required": ["data", "total_count", "request_id"],
                    "properties": {
                        "data": {"type": "array", "items": sref("Note")},
                        "total_count": {"type": "integer", "minimum": 0, "description": "The full number of the record's notes regardless of `limit`."},
                        "request_id": request_id_prop(),
                    },
                })))], READ_ERRORS),
            )
        }
        (http::SUB_ATTACHMENTS, "GET") => {
            let e = e.expect("an entity");
            let whole_person = matches!(e, Entity::Candidates | Entity::Applications);
            op(
                format!("list{}Attachments", title_case(schema_name(e))),
                "sub-resources",
                &format!("Files of {}", singular(e)),
                &format!("Newest first, not cursor-paginated. {}Unknown or foreign id: 200 with empty `data`, `total_count: 0`.",
                    if whole_person { "Returns the whole person's attachments. " } else { "" }),
                "read",
                vec![pref("RecordId"), pref("AttachmentsLimit")],
                None,
                responses(vec![("200", ok("`{ data: [attachment], total_count, request_id }`.", json!({
                    "type": "object",
                    "required": ["data", "total_count", "request_id"],
                    "properties": {
                        "data": {"type": "array", "items": sref("Attachment")},
                        "total_count": {"type": "integer", "minimum": 0, "description": "The full number."},
                        "request_id": request_id_prop(),
                    },
                })))], READ_ERRORS),
            )
        }
        (http::COLLECTION, "GET") => {
            let e = e.expect("an entity");
            op(
                format!("list{}", title_case(e.name())),
                "records",
                &format!("List {}, paginated, incremental", e.name()),
                "Order is oldest-first by (`updated_at`, `id`); stable across pages, ties broken by id. `next_cursor` is null on the last page; \
that is the only end signal. A page that fills `limit` exactly always carries a cursor, so a final empty page (`data: []`, `next_cursor: null`) can occur.",
                "read",
                vec![pref("ListLimit"), pref("Cursor"), pref("ListSort"), pref("UpdatedSince")],
                None,
                responses(vec![("200", ok("`{ data: [record], next_cursor: string|null, total_count: integer, request_id }`.", json!({
                    "type": "object",
                    "required": ["data", "next_cursor", "request_id"],
                    "properties": {
                        "data": {"type": "array", "items": sref(schema_name(e))},
                        "next_cursor": {"type": ["string", "null"], "description": "Null on the last page; that is the only end signal."},
                        "total_count": {"type": "integer", "minimum": 0, "description": "Present only when no `cursor` is supplied; absent on later pages. \
It respects `updated_since` (records modified at or after that instant)."},
                        "request_id": request_id_prop(),
                    },
                })))], READ_ERRORS),
            )
        }
        (http::COLLECTION, "POST") => match e {
            Some(Entity::Notes) => op(
                "createNote".into(),
                "writes",
                "Create a note",
                "Answers only after the store has committed the note. A repeated `reference` updates that note instead of creating another (200, same id).",
                "notes:write",
                vec![],
                Some("NewNote"),
                responses(
                    vec![
                        ("201", ok("Created: `{ data: { id }, request_id }`.", envelope(sref("IdOnly")))),
                        ("200", ok("A `reference` repeated: that note was updated; `{ data: { id }, request_id }`.", envelope(sref("IdOnly")))),
                    ],
                    CREATE_ERRORS,
                ),
            ),
            Some(Entity::Tasks) => op(
                "createTask".into(),
                "writes",
                "Create a task",
                "Answers only after the store has committed the task. A repeated `reference` updates that task instead of creating another (200, same id).",
                "tasks:write",
                vec![],
                Some("NewTask"),
                responses(
                    vec![
                        ("201", ok("Created: the task as GET shows it (only `{ id }` for a private task).", envelope(task_or_id()))),
                        ("200", ok("A `reference` repeated: that task was updated; the task as GET shows it (only `{ id }` if private).", envelope(task_or_id()))),
                    ],
                    CREATE_ERRORS,
                ),
            ),
            _ => undescribed(p, method),
        },
        (http::ITEM, "GET") => {
            let e = e.expect("an entity");
            let extra = match e {
                Entity::Attachments => " The id is accepted with or without its prefix.",
                Entity::Notes | Entity::Tasks => " Private items: 404 NOT_FOUND.",
                _ => "",
            };
            op(
                format!("get{}", schema_name(e)),
                "records",
                &format!("Get {}", singular(e)),
                &format!("No query parameters. Unknown id, id of another workspace, or id in an unexpected format: 404 NOT_FOUND.{extra}"),
                "read",
                vec![pref("RecordId")],
                None,
                responses(vec![("200", ok("`{ data: <record>, request_id }`.", envelope(sref(schema_name(e)))))], READ_ITEM_ERRORS),
            )
        }
        (http::ITEM, "PATCH") => {
            let e = e.expect("an entity");
            let (scope, body, data, what) = match e {
                Entity::Notes => ("notes:write", "NotePatch", json!({"anyOf": [sref("Note"), sref("IdOnly")]}),
                    "PATCH accepts any of `body_html`, `title`, `type`, `is_private`; an unknown field or an empty body gives 400. \
                    A private note: 404 NOT_FOUND, as for an unknown id, and nothing changes."),
                Entity::Tasks => ("tasks:write", "TaskPatch", json!({"anyOf": [sref("Task"), sref("IdOnly")]}),
                    "PATCH accepts any of `title`, `body_html`, `due_date`, `owner_email`, `is_private`, `status` (`open` or `completed`). \
                    A private task: 404 NOT_FOUND, as for an unknown id, and nothing changes."),
                Entity::Candidates | Entity::Contacts | Entity::Companies | Entity::Jobs => {
                    ("records:write", match e {
                        Entity::Candidates => "CandidatePatch",
                        Entity::Contacts => "ContactPatch",
                        Entity::Companies => "CompanyPatch",
                        _ => "JobPatch",
                    }, sref(schema_name(e)), "Update allow-listed fields. Writable fields only; any other field gives 400.")
                }
                _ => return undescribed(p, method),
            };
            op(
                format!("update{}", schema_name(e)),
                "writes",
                &format!("Update {}", singular(e)),
                &format!("{what} Answers only after the store has committed the change."),
                scope,
                vec![pref("RecordId")],
                Some(body),
                responses(vec![("200", ok(
                    "The record as GET shows it after the change (only `{ id }` for a note or task that is private after it).",
                    envelope(data),
                ))], WRITE_ITEM_ERRORS),
            )
        }
        (http::ITEM, "DELETE") => {
            let e = e.expect("an entity");
            let (scope, item) = match e {
                Entity::Notes => ("notes:write", "note"),
                Entity::Tasks => ("tasks:write", "task"),
                _ => return undescribed(p, method),
            };
            op(
                format!("delete{}", schema_name(e)),
                "writes",
                &format!("Delete {}", singular(e)),
                &format!(
                    "Returns `{{ data: {{ deleted: true }} }}`; deleting an already-gone record gives 404. \
                    A private {item}: 404 NOT_FOUND, as for an unknown id, and nothing changes."
                ),
                scope,
                vec![pref("RecordId")],
                None,
                responses(vec![("200", ok("Deleted.", envelope(sref("Deleted"))))], WRITE_ITEM_ERRORS),
            )
        }
        _ => undescribed(p, method),
    }
}

fn task_or_id() -> Value {
    json!({"anyOf": [sref("Task"), sref("IdOnly")]})
}

fn undescribed(p: &DescribedPath, method: &str) -> Value {
    panic!(
        "the router serves {method} {} but the OpenAPI document has no description of it",
        p.path
    )
}
