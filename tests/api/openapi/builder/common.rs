//! Schema helpers and the patterns of ids, dates and e-mail addresses.

use super::*;

pub(super) fn sref(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

pub(super) fn string(description: &str) -> Value {
    json!({"type": "string", "description": description})
}

pub(super) fn nstring(description: &str) -> Value {
    json!({"type": ["string", "null"], "description": description})
}

pub(super) fn stamp(description: &str) -> Value {
    json!({"type": "string", "format": "date-time", "description": description})
}

pub(super) fn nstamp(description: &str) -> Value {
    json!({"type": ["string", "null"], "format": "date-time", "description": description})
}

/// A response field with enumerated values that may grow within v1.
pub(super) fn extensible(values: &[&str], nullable: bool, description: &str) -> Value {
    json!({
        "type": if nullable { json!(["string", "null"]) } else { json!("string") },
        "x-extensible-enum": values,
        "description": description,
    })
}

/// An object schema; every listed property is required (the service always writes it).
pub(super) fn object(props: Vec<(&str, Value)>) -> Value {
    let required: Vec<&str> = props.iter().map(|(k, _)| *k).collect();
    let mut map = Map::new();
    for (k, v) in props {
        map.insert(k.to_string(), v);
    }
    json!({"type": "object", "required": required, "properties": map})
}

pub(super) const UUID_PATTERN: &str =
    "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$";

pub(super) const DATE_PATTERN: &str = "^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$";

/// What `actors::writes::is_email` accepts: one `@` with something before it, a domain
/// with a dot that neither starts nor ends it, no white space or control character.
/// (The character classes are spelled out so that every regex dialect reads them alike.)
pub(super) const EMAIL_PATTERN: &str = "^[^@\\u0000-\\u0020\\u007f-\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]+@\
[^@.\\u0000-\\u0020\\u007f-\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]\
[^@\\u0000-\\u0020\\u007f-\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]*\\.\
[^@\\u0000-\\u0020\\u007f-\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]*\
[^@.\\u0000-\\u0020\\u007f-\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]$";

pub(super) fn attachment_id_pattern() -> String {
    format!("^({}):.+$", ATTACHMENT_PREFIXES.join("|"))
}
