//! Operations: one per described method of every path, with its responses.

use super::*;

pub(super) fn schema_name(e: Entity) -> &'static str {
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
pub(super) fn singular(e: Entity) -> String {
    let name = schema_name(e).to_ascii_lowercase();
    let article = if name.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {name}")
}

/// `candidates` → `Candidates`, for operation ids.
pub(super) fn title_case(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
        .unwrap_or_default()
}

pub(super) fn pref(name: &str) -> Value {
    json!({"$ref": format!("#/components/parameters/{name}")})
}

pub(super) fn request_id_prop() -> Value {
    json!({"type": "string", "minLength": 1, "description": "Unique per request; equal to the `X-Request-Id` header."})
}

/// `{data: <data>, request_id}`.
pub(super) fn envelope(data: Value) -> Value {
    json!({
        "type": "object",
        "required": ["data", "request_id"],
        "properties": {"data": data, "request_id": request_id_prop()},
    })
}

pub(super) fn ok(description: &str, schema: Value) -> Value {
    json!({
        "description": description,
        "headers": common_headers(),
        "content": {"application/json": {"schema": schema}},
    })
}

pub(super) fn responses(success: Vec<(&str, Value)>, errors: &[u16]) -> Value {
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
pub(super) const READ_ERRORS: &[u16] = &[400, 401, 429, 500, 503];
pub(super) const READ_ITEM_ERRORS: &[u16] = &[400, 401, 404, 429, 500, 503];
pub(super) const CREATE_ERRORS: &[u16] = &[400, 401, 403, 429, 500, 503];
pub(super) const WRITE_ITEM_ERRORS: &[u16] = &[400, 401, 403, 404, 429, 500, 503];

/// One operation. Its parts are all positional in the table of operations below, where
/// each call reads as a row: id, tag, summary, description, scope, parameters, body,
/// responses.
#[allow(clippy::too_many_arguments)]
pub(super) fn op(
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

pub(super) fn operation(p: &DescribedPath, method: &str) -> Value {
    let e = p.entity;
    if let Some(described) = super::webhooks::operation(p.pattern, method) {
        return described;
    }
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
        (http::CHANGES, "GET") => op(
            "getChanges".into(),
            "changes",
            "Follow every change, deletions included",
            "The changes committed after `since`, in commit order, oldest first: each record at most once per answer, as it stands at the answer's point. \
An upsert carries exactly what `GET /v1/{entity}/{id}` returns; a tombstone says the record left the visible set (deleted, made private, a removed user, \
an application whose job row was deleted). Derived changes are included (a company renamed changes its contacts and jobs; a user removed or deactivated, \
the `owning_recruiter_id` of candidate rows). Start from the `changes_since` of a list's first page after a full sync; pass `next_since` back each time. \
An empty `data` with `has_more: false` means up to date.",
            "read",
            vec![
                json!({
                    "name": "since",
                    "in": "query",
                    "required": true,
                    "description": "A token from `next_since` or from a list's `changes_since`, verbatim. Missing, malformed, altered or from another workspace: 400. Older than the history kept: 400 with `error.resync_required: true`.",
                    "schema": {"type": "string", "minLength": 1},
                }),
                json!({
                    "name": "entities",
                    "in": "query",
                    "required": false,
                    "description": "Comma-separated list of entity names, default all nine; unknown name gives 400.",
                    "style": "form",
                    "explode": false,
                    "schema": {"type": "array", "minItems": 1, "items": {"type": "string", "enum": entity_names()}},
                }),
                pref("ListLimit"),
                json!({
                    "name": "wait",
                    "in": "query",
                    "required": false,
                    "description": "Whole seconds, 0 to 30 (default 0): when no change is available yet, the answer is held until one commits or `wait` passes.",
                    "schema": {"type": "integer", "minimum": 0, "maximum": 30, "default": 0},
                }),
            ],
            None,
            responses(vec![("200", ok("`{ data: [change], next_since, has_more, request_id }`.", json!({
                "type": "object",
                "required": ["data", "next_since", "has_more", "request_id"],
                "properties": {
                    "data": {"type": "array", "items": sref("Change")},
                    "next_since": {"type": "string", "description": "Always present: passed back, it returns only changes committed after this answer's point."},
                    "has_more": {"type": "boolean", "description": "True when more changes are already waiting."},
                    "request_id": request_id_prop(),
                },
            })))], READ_ERRORS),
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
                vec![pref("ListLimit"), pref("Cursor"), pref("ListSort"), pref("UpdatedSince"), pref("IncludeDeleted")],
                None,
                responses(vec![("200", ok("`{ data: [record], next_cursor: string|null, total_count: integer, request_id }`.", json!({
                    "type": "object",
                    "required": ["data", "next_cursor", "request_id"],
                    "properties": {
                        "data": {"type": "array", "items": {"oneOf": [sref(schema_name(e)), sref("Tombstone")]}, "description": "Records; with `include_deleted=true` also tombstones."},
                        "next_cursor": {"type": ["string", "null"], "description": "Null on the last page; that is the only end signal."},
                        "total_count": {"type": "integer", "minimum": 0, "description": "Present only when no `cursor` is supplied; absent on later pages. \
It respects `updated_since` (records modified at or after that instant)."},
                        "changes_since": {"type": "string", "description": "Present only when no `cursor` is supplied: a `GET /v1/changes` token taken no later than the page's read. \
Page the list to its end, then follow the feed from it: whatever was written meanwhile is seen (some records perhaps twice)."},
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
                "Answers only after the store has committed the note. A repeated `reference` (from the same API key) updates that note instead of creating another (200, same id).",
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
                "Answers only after the store has committed the task. A repeated `reference` (from the same API key) updates that task instead of creating another (200, same id).",
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

pub(super) fn task_or_id() -> Value {
    json!({"anyOf": [sref("Task"), sref("IdOnly")]})
}

pub(super) fn undescribed(p: &DescribedPath, method: &str) -> Value {
    panic!(
        "the router serves {method} {} but the OpenAPI document has no description of it",
        p.path
    )
}
