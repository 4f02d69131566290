//! Texts taken from the spec: the document's description, scopes, owner rules.

pub(super) const INFO: &str = "\
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

pub(super) const SCOPES: &str = "\
A secret key: `Authorization: Bearer <API_KEY>`, the only accepted form (keys in a query string or any other header are not accepted). \
One key belongs to one workspace and determines it. Scopes, deny-by-default, chosen at creation:\n\
- `read`: every key has it; all GET endpoints.\n\
- `notes:write`: POST /v1/notes, PATCH and DELETE /v1/notes/{id}.\n\
- `tasks:write`: POST /v1/tasks, PATCH and DELETE /v1/tasks/{id}.\n\
- `records:write`: PATCH /v1/{entity}/{id} of candidates, contacts, companies and jobs.\n\
- `webhooks:write`: every /v1/webhooks call (the endpoints that push the change feed).\n\n\
Missing, malformed, unknown or revoked key: 401 UNAUTHORIZED. Valid key lacking the scope an endpoint needs: 403 FORBIDDEN_SCOPE. \
A key stops working when the person who created it loses access to the workspace; revocation takes effect on the next request. \
Keys are for server-side use only.";

pub(super) const OWNER_CANDIDATE: &str = actors::model::OWNER_DERIVED;
pub(super) const OWNER_STORED: &str = actors::model::OWNER_STORED;
