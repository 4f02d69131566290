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

/// A record's schema from the members its kind declares (`actors::model`): every member
/// written on every record is required; the others (`sometimes`) are listed only.
pub(super) fn record(fields: &[ApiField]) -> Value {
    let required: Vec<&str> = fields.iter().filter(|f| f.always).map(|f| f.name).collect();
    let mut map = Map::new();
    for f in fields {
        map.insert(f.name.to_string(), member(f));
    }
    json!({"type": "object", "required": required, "properties": map})
}

/// One declared member's schema; a description only where the declaration has one.
fn member(f: &ApiField) -> Value {
    let either = |t: &str| json!([t, "null"]);
    let mut v = match f.shape {
        Shape::Text => json!({"type": "string"}),
        Shape::NullableText => json!({"type": either("string")}),
        Shape::Stamp => json!({"type": "string", "format": "date-time"}),
        Shape::NullableStamp => json!({"type": either("string"), "format": "date-time"}),
        Shape::NullableDate => json!({"type": either("string"), "format": "date"}),
        Shape::Bool => json!({"type": "boolean"}),
        Shape::NullableBool => json!({"type": either("boolean")}),
        Shape::False => json!({"type": "boolean", "const": false}),
        Shape::NullableNumber => json!({"type": either("number")}),
        Shape::NullableCount => json!({"type": either("integer"), "minimum": 0}),
        Shape::Emails => {
            json!({"type": either("array"), "items": {"type": "string"}, "maxItems": 1})
        }
        Shape::Null => json!({"type": "null"}),
        Shape::AttachmentId => json!({"type": "string", "pattern": attachment_id_pattern()}),
        Shape::Extensible { values, nullable } => json!({
            "type": if nullable { either("string") } else { json!("string") },
            "x-extensible-enum": values,
        }),
        Shape::NullableObject(fields) => {
            let mut o = record(fields);
            o["type"] = either("object");
            o
        }
    };
    if !f.doc.is_empty() {
        v["description"] = json!(f.doc);
    }
    v
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
