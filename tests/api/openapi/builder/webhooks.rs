//! The webhooks' operations and schemas (`http::webhooks`).

use super::*;
use recruitd::http::webhooks as hooks;

const SCOPE: &str = "webhooks:write";
const ERRORS: &[u16] = &[400, 401, 403, 429, 500, 503];
const ITEM_ERRORS: &[u16] = &[400, 401, 403, 404, 429, 500, 503];

fn entities_input(description: &str) -> Value {
    json!({
        "type": ["array", "null"],
        "items": {"type": "string", "enum": entity_names()},
        "description": format!("{description} Entity names, as the feed's `entities` parameter takes them; empty, null or all nine: every entity. An unknown name gives 400."),
    })
}

fn url_input() -> Value {
    json!({
        "type": "string",
        "minLength": 1,
        "maxLength": recruitd::webhooks::address::MAX_URL_LEN,
        "format": "uri",
        "description": "`https://`, resolving to public addresses only (a server started with `--webhooks-allow-insecure` also admits `http://` and private, loopback and link-local addresses); no user name, password or fragment. Anything else gives 400 naming the rule. Redirects are never followed.",
    })
}

fn description_input() -> Value {
    json!({"type": ["string", "null"], "maxLength": hooks::MAX_DESCRIPTION_LEN, "description": "Free text for the integrator; null clears it."})
}

pub(super) fn new_webhook() -> Value {
    request_body(
        hooks::NEW_FIELDS,
        &["url"],
        vec![
            ("url", url_input()),
            (
                "entities",
                entities_input("The entities whose changes it receives."),
            ),
            ("description", description_input()),
        ],
        BODY_RULES,
    )
}

pub(super) fn webhook_patch() -> Value {
    request_body(
        hooks::PATCH_FIELDS,
        &[],
        vec![
            ("url", url_input()),
            (
                "entities",
                entities_input("The entities whose changes it receives from now on."),
            ),
            ("description", description_input()),
            (
                "status",
                json!({"type": "string", "enum": ["active", "disabled"], "description": "`disabled` stops deliveries; `active` resumes them from `acknowledged`: nothing in between is skipped."}),
            ),
        ],
        BODY_RULES,
    )
}

pub(super) fn webhook_replay() -> Value {
    request_body(
        hooks::REPLAY_FIELDS,
        &["since"],
        vec![(
            "since",
            json!({"type": "string", "minLength": 1, "description": "A change feed token the feed still accepts (a `next_since`, a list's `changes_since`, a delivery's `since`). Older than the history kept: 400 with `error.resync_required: true`."}),
        )],
        BODY_RULES,
    )
}

pub(super) fn webhook_attempt() -> Value {
    object(vec![
        ("id", string("The delivery's `webhook-id`: the same on every attempt of it.")),
        ("since", string("The feed token the delivery starts after.")),
        ("next_since", string("The feed token it ends at.")),
        ("attempt", json!({"type": "integer", "minimum": 1, "description": "1 for the first attempt of the delivery."})),
        ("status_code", json!({"type": ["integer", "null"], "description": "The receiver's status; null when none came."})),
        ("error", nstring("Why no status came (no answer in 10 s, a refused address, a transport error); null when one did.")),
        ("duration_ms", json!({"type": "integer", "minimum": 0})),
        ("attempted_at", string("When the attempt started (ISO 8601, UTC).")),
    ])
}

fn endpoint_props() -> Vec<(&'static str, Value)> {
    vec![
        ("id", string("The endpoint's id (`whe_…`).")),
        ("url", string("")),
        ("entities", json!({"type": "array", "items": {"type": "string"}, "description": "The entities it receives."})),
        ("description", nstring("")),
        ("status", extensible(&["active", "failing", "disabled"], false, "`failing`: its last attempt failed and retries go on (5 s, then doubling with jitter, at most an hour apart, for 72 hours).")),
        ("disabled_reason", extensible(&["requested", "gone", "failing_for_72_hours", "resync_required"], true, "Why it is disabled; null unless it is.")),
        ("acknowledged", string("The feed token of the last change a 2xx confirmed: deliveries go on after it.")),
        ("backlog", json!({"type": "integer", "minimum": 0, "description": "Changes committed after `acknowledged`."})),
        ("last_attempt", json!({"anyOf": [sref("WebhookAttempt"), {"type": "null"}]})),
        ("created_at", string("")),
        ("updated_at", string("")),
    ]
}

pub(super) fn webhook_endpoint() -> Value {
    let mut s = object(endpoint_props());
    s["description"] = json!("An endpoint; its secret is shown only when it is made or rotated.");
    s
}

pub(super) fn webhook_endpoint_with_secret() -> Value {
    let mut props = endpoint_props();
    props.push(("secret", string("`whsec_` and the base64 of 32 random bytes: shown this once. Deliveries are signed with its decoded bytes (Standard Webhooks).")));
    let mut s = object(props);
    s["description"] = json!(
        "An endpoint with its new secret (and at creation `position`, the token it starts after)."
    );
    s["properties"]["position"] =
        string("At creation: the feed token deliveries start after (now).");
    s
}

fn id_param() -> Value {
    json!({"name": "id", "in": "path", "required": true, "description": "The endpoint's id; unknown or another workspace's: 404.", "schema": {"type": "string", "minLength": 1}})
}

fn limit_param(what: &str) -> Value {
    json!({"name": "limit", "in": "query", "required": false, "description": format!("How many {what}: 1 to 100, default 20 (above 100 is clamped)."), "schema": {"type": "integer", "minimum": 1, "default": 20}})
}

pub(super) fn operation(pattern: &str, method: &str) -> Option<Value> {
    Some(match (pattern, method) {
        (http::WEBHOOKS, "POST") => op(
            "createWebhook".into(),
            "webhooks",
            "Register a webhook endpoint",
            "Changes committed from now on are pushed to `url` as the change feed gives them, signed, one delivery at a time in commit order. At most 20 endpoints per workspace (409 CONFLICT beyond).",
            SCOPE,
            vec![],
            Some("NewWebhook"),
            responses(vec![("201", ok("The endpoint, its `secret` (shown once) and `position`.", envelope(sref("WebhookEndpointWithSecret"))))], &[400, 401, 403, 409, 429, 500, 503]),
        ),
        (http::WEBHOOKS, "GET") => op(
            "listWebhooks".into(),
            "webhooks",
            "List webhook endpoints",
            "The workspace's endpoints in id order, keyset-paginated; never their secrets.",
            SCOPE,
            vec![limit_param("endpoints"), pref("Cursor")],
            None,
            responses(vec![("200", ok("`{ data: [endpoint], next_cursor, request_id }`.", json!({
                "type": "object",
                "required": ["data", "next_cursor", "request_id"],
                "properties": {
                    "data": {"type": "array", "items": sref("WebhookEndpoint")},
                    "next_cursor": {"type": ["string", "null"], "description": "Null on the last page."},
                    "request_id": request_id_prop(),
                },
            })))], ERRORS),
        ),
        (http::WEBHOOK, "GET") => op(
            "getWebhook".into(),
            "webhooks",
            "Get a webhook endpoint",
            "Its status, acknowledged point, backlog and last attempt.",
            SCOPE,
            vec![id_param()],
            None,
            responses(vec![("200", ok("`{ data: endpoint, request_id }`.", envelope(sref("WebhookEndpoint"))))], ITEM_ERRORS),
        ),
        (http::WEBHOOK, "PATCH") => op(
            "updateWebhook".into(),
            "webhooks",
            "Change a webhook endpoint",
            "Any of `url`, `entities`, `description`, `status`. Re-enabled, deliveries resume from `acknowledged` (from what the feed still keeps, else `disabled_reason: resync_required`).",
            SCOPE,
            vec![id_param()],
            Some("WebhookPatch"),
            responses(vec![("200", ok("The endpoint after the change.", envelope(sref("WebhookEndpoint"))))], ITEM_ERRORS),
        ),
        (http::WEBHOOK, "DELETE") => json!({
            "operationId": "deleteWebhook",
            "tags": ["webhooks"],
            "summary": "Remove a webhook endpoint",
            "description": "No delivery starts after the answer.",
            "security": [{"bearer": [SCOPE]}],
            "parameters": [id_param()],
            "responses": responses(vec![("204", json!({"description": "Removed; no body.", "headers": common_headers()}))], ITEM_ERRORS),
        }),
        (http::WEBHOOK_REPLAY, "POST") => op(
            "replayWebhook".into(),
            "webhooks",
            "Deliver again from a point",
            "Deliveries start again after `since`; a delivery in flight is dropped and made afresh from there.",
            SCOPE,
            vec![id_param()],
            Some("WebhookReplay"),
            responses(vec![("200", ok("The endpoint, `acknowledged` now at `since`.", envelope(sref("WebhookEndpoint"))))], ITEM_ERRORS),
        ),
        (http::WEBHOOK_ROTATE, "POST") => op(
            "rotateWebhookSecret".into(),
            "webhooks",
            "Rotate an endpoint's secret",
            "A new secret, shown once; the old one keeps signing beside it (a second `v1,` signature) for 24 hours. No body.",
            SCOPE,
            vec![id_param()],
            None,
            responses(vec![("201", ok("The endpoint with its new `secret`.", envelope(sref("WebhookEndpointWithSecret"))))], ITEM_ERRORS),
        ),
        (http::WEBHOOK_DELIVERIES, "GET") => op(
            "listWebhookDeliveries".into(),
            "webhooks",
            "An endpoint's recent attempts",
            "The newest attempts first (the last 100 are kept).",
            SCOPE,
            vec![id_param(), limit_param("attempts")],
            None,
            responses(vec![("200", ok("`{ data: [attempt], request_id }`.", envelope(json!({"type": "array", "items": sref("WebhookAttempt")}))))], ITEM_ERRORS),
        ),
        _ => return None,
    })
}
