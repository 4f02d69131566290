//! Request bodies, as `http::body` reads them.

use super::*;

/// What a field of a write accepts.
#[derive(Clone, Copy)]
pub(super) enum In {
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

pub(super) fn input(kind: In, nullable: bool, description: &str) -> Value {
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
pub(super) fn request_body(
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

pub(super) const BODY_RULES: &str = "A JSON object of the listed fields only (`Content-Type: application/json`, at most 1 MiB): \
an unknown field or an empty body gives 400, and so does a value of the wrong type or out of range. \
Strings that must not be empty are refused when they hold only white space too.";

pub(super) fn new_note() -> Value {
    request_body(
        model::note::NEW_FIELDS,
        &["parent_type", "parent_id", "body_html"],
        vec![
            ("parent_type", json!({"type": "string", "enum": ["candidate", "contact", "company", "job"]})),
            ("parent_id", input(In::Uuid, false, "Target record; for a candidate resolves to the canonical person. A record that does not exist in the workspace gives 400.")),
            ("body_html", input(In::Text, false, "HTML accepted.")),
            ("title", input(In::AnyText, true, "Null is the same as leaving it out.")),
            ("type", input(In::Text, true, "Free label. Null is the same as leaving it out.")),
            ("author_email", input(In::Text, false, "Exact work e-mail of an accepted workspace member; otherwise the workspace owner.")),
            ("is_private", input(In::Bool, false, "A private note is never returned anywhere.")),
            ("reference", input(In::Reference, false, "Idempotency key: repeating with the same reference updates that note instead of creating another. References are scoped per API key: another key's same reference makes a note of its own (so a private note's reference reveals nothing of it to another client); a note imported with this reference is updated by any key while it is not private.")),
        ],
        BODY_RULES,
    )
}

pub(super) fn note_patch() -> Value {
    request_body(
        model::note::PATCH_FIELDS,
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

pub(super) fn new_task() -> Value {
    request_body(
        model::task::NEW_FIELDS,
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

pub(super) fn task_patch() -> Value {
    request_body(
        model::task::PATCH_FIELDS,
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

pub(super) fn record_patch(entity: Entity) -> Value {
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
            model::candidate::PATCH_FIELDS,
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
            model::contact::PATCH_FIELDS,
            vec![
                ("name", input(In::Text, true, "")),
                ("email", input(In::Email, true, "")),
                ("phone", input(In::Phone, true, "")),
                ("company_id", input(In::Uuid, false, "Must resolve to a company inside the same workspace (otherwise 400); a contact always belongs to a company, so it cannot be null.")),
                owner,
            ],
        ),
        Entity::Companies => (
            model::company::PATCH_FIELDS,
            vec![
                ("name", input(In::Text, true, "")),
                ("phone", input(In::Phone, true, "")),
                owner,
            ],
        ),
        Entity::Jobs => (
            model::job::PATCH_FIELDS,
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
