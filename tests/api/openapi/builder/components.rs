//! Components: headers, the error responses of the eight codes, shared parameters.

use super::*;

pub(super) fn components() -> Value {
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
        ("Change", change()),
        ("Tombstone", tombstone()),
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
        ("NewWebhook", super::webhooks::new_webhook()),
        ("WebhookPatch", super::webhooks::webhook_patch()),
        ("WebhookReplay", super::webhooks::webhook_replay()),
        ("WebhookEndpoint", super::webhooks::webhook_endpoint()),
        (
            "WebhookEndpointWithSecret",
            super::webhooks::webhook_endpoint_with_secret(),
        ),
        ("WebhookAttempt", super::webhooks::webhook_attempt()),
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
                "webhooks:write": "Manage the workspace's webhook endpoints (every /v1/webhooks call).",
            },
        }},
        "schemas": schemas,
        "responses": responses,
        "parameters": parameters(),
        "headers": headers(),
    })
}

pub(super) fn headers() -> Value {
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
pub(super) fn common_headers() -> Map<String, Value> {
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

pub(super) struct ErrorDoc {
    pub(super) status: u16,
    pub(super) code: &'static str,
    pub(super) schema: &'static str,
    pub(super) response: &'static str,
    pub(super) when: &'static str,
    pub(super) extra_header: Option<&'static str>,
}

/// The spec's eight codes and the webhooks' `CONFLICT` (`http::errors::ErrorKind::code`
/// renders the same strings; the test of the document checks that every kind is here).
pub(super) const ERRORS: [ErrorDoc; 9] = [
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
        status: 409,
        code: "CONFLICT",
        schema: "ConflictError",
        response: "Conflict",
        when: "The request is valid but the resource's state refuses it: a workspace that has its most webhook endpoints (20).",
        extra_header: None,
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

pub(super) fn error_schema(e: &ErrorDoc) -> Value {
    let mut schema = json!({
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
    });
    if e.status == 400 {
        schema["properties"]["error"]["properties"]["resync_required"] = json!({
            "type": "boolean",
            "const": true,
            "description": "Only on `GET /v1/changes` with a `since` older than the history kept: sync afresh, then follow the feed from the new `changes_since`.",
        });
    }
    schema
}

pub(super) fn error_response(e: &ErrorDoc) -> Value {
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

pub(super) fn error_ref(status: u16) -> (String, Value) {
    let e = ERRORS
        .iter()
        .find(|e| e.status == status)
        .expect("one of the eight");
    (
        status.to_string(),
        json!({"$ref": format!("#/components/responses/{}", e.response)}),
    )
}

pub(super) fn parameters() -> Value {
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
            "schema": {"type": "string", "pattern": actors::query::UPDATED_SINCE_PATTERN},
            "examples": {
                "utc": {"value": "2026-09-01T00:00:00Z"},
                "offset": {"value": "2026-09-01T10:00:00.000+01:00"},
                "date": {"value": "2026-09-01"},
            },
        },
        "IncludeDeleted": {
            "name": "include_deleted",
            "in": "query",
            "required": false,
            "description": "`true`: the list also returns tombstones `{ id, deleted: true, updated_at }` (`updated_at` is when the record left what the API shows) \
    in the same (`updated_at`, `id`) order as records, with or without `updated_since`. `total_count` counts records only. A cursor belongs to its listing, \
    with or without tombstones. Any value other than `true` or `false`: 400 BAD_REQUEST.",
            "schema": {"type": "boolean", "default": false},
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
