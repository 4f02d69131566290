//! The records, built from the members each kind declares beside its JSON writer
//! (`actors::model`), and the search and counts answers.

use super::*;

pub(super) fn candidate() -> Value {
    let mut s = record(model::candidate::API_FIELDS);
    s["description"] = json!("A record is one person's involvement: one primary record per person plus one record per job the person is put forward for. \
A person shortlisted for three roles appears as four records. Personal attributes (name, phone, e-mail, salary, consent) are carried on every record of a person; \
the primary record is the one to trust when they disagree. `total_count` and counts for candidates count records, not people; people are counted by distinct `person_id`.");
    // The primary record is on no job.
    s["if"] = json!({"properties": {"is_primary_record": {"const": true}}});
    s["then"] = json!({"properties": {"job_id": {"type": "null"}, "stage": {"type": "null"}, "stage_type": {"type": "null"}}});
    s
}

pub(super) fn application() -> Value {
    let mut s = record(model::candidate::APPLICATION_API_FIELDS);
    s["description"] = json!("One candidate put forward for one job; the same set as candidates records with a `job_id`, seen from the job side.");
    s["if"] = json!({"not": {"properties": {"status": {"const": "rejected"}}}});
    s["then"] = json!({"properties": {"rejected_at": {"type": "null"}}});
    s
}

pub(super) fn contact() -> Value {
    let mut s = record(model::contact::API_FIELDS);
    s["description"] = json!("A person at a client company.");
    s
}

pub(super) fn company() -> Value {
    let mut s = record(model::company::API_FIELDS);
    s["description"] = json!("A client company.");
    s
}

pub(super) fn job() -> Value {
    let mut s = record(model::job::API_FIELDS);
    s["oneOf"] = json!([
        {"properties": {"live": {"const": true}, "is_archived": {"const": false}}},
        {"properties": {"live": {"const": false}, "is_archived": {"const": true}, "published": {"const": false}}},
    ]);
    s
}

pub(super) fn note() -> Value {
    let mut s = record(model::note::API_FIELDS);
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

pub(super) fn task() -> Value {
    let mut s = record(model::task::API_FIELDS);
    s["description"] = json!("A task. Tasks have no label field.");
    s["if"] = json!({"not": {"properties": {"status": {"const": "completed"}}}});
    s["then"] = json!({"properties": {"completed_at": {"type": "null"}}});
    s
}

pub(super) fn attachment() -> Value {
    let mut s = record(model::attachment::API_FIELDS);
    s["description"] = json!("A file of a candidate or a company. Attachments with kind `cv` inherit the timestamps of their candidate and still appear in the `updated_since` stream. \
Some attachment records (after migration) describe files whose bytes never arrived; they remain listed but their download returns 404 NOT_FOUND.");
    s
}

pub(super) fn user() -> Value {
    let mut s = record(model::user::API_FIELDS);
    s["description"] = json!("A member of the workspace.");
    s
}

pub(super) fn search_contact() -> Value {
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

pub(super) fn search_person(with_stage: bool) -> Value {
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

pub(super) const CONFIDENCE: &str = "Counts people only: entries in `candidates` plus entries in `contacts`. One person: `exact` (a candidate or a contact). \
Two or more in any combination: `ambiguous`. Zero: `none`. Companies are never counted. Only `exact` licenses an automatic decision; \
`ambiguous` must be presented as a choice.";

pub(super) fn phone_match() -> Value {
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

pub(super) fn email_match() -> Value {
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

pub(super) fn entity_names() -> Vec<&'static str> {
    Entity::ALL.iter().map(|e| e.name()).collect()
}

pub(super) fn counts() -> Value {
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

pub(super) fn change() -> Value {
    let record_of_any: Vec<Value> = Entity::ALL
        .iter()
        .map(|e| sref(super::operations::schema_name(*e)))
        .collect();
    json!({
        "type": "object",
        "description": "One changed record: an upsert with the record as `GET /v1/{entity}/{id}` returns it, or a tombstone.",
        "required": ["entity", "id", "op"],
        "properties": {
            "entity": {"type": "string", "enum": entity_names()},
            "id": {"type": "string"},
            "op": {"type": "string", "enum": ["upsert", "delete"], "x-extensible-enum": true},
            "record": {"oneOf": record_of_any, "description": "With `op: upsert` only."},
            "deleted_at": {"type": "string", "format": "date-time", "description": "With `op: delete` only: when the change that removed it committed."},
        },
    })
}

pub(super) fn tombstone() -> Value {
    json!({
        "type": "object",
        "description": "A record that left what the API shows (deleted, made private, a removed user, an application whose job went): only in lists with `include_deleted=true`.",
        "required": ["id", "deleted", "updated_at"],
        "properties": {
            "id": {"type": "string"},
            "deleted": {"type": "boolean", "const": true},
            "updated_at": {"type": "string", "format": "date-time", "description": "When it left."},
        },
    })
}

pub(super) fn download_link() -> Value {
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
            json!({"type": "integer", "const": recruitd::http::signed_urls::LIFETIME_SECS, "description": "Seconds."}),
        ),
        ("filename", string("")),
        ("content_type", string("")),
    ])
}

pub(super) fn id_only() -> Value {
    let mut s = object(vec![("id", string(""))]);
    s["description"] = json!(
        "Only the id: the answer for a record the API does not show (a private note or task)."
    );
    s
}

pub(super) fn deleted() -> Value {
    object(vec![("deleted", json!({"type": "boolean", "const": true}))])
}
