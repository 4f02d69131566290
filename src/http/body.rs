//! Request bodies of writes: read with a size cap, required to be a JSON object of known
//! fields, and read field by field with exact types. Every refusal is a 400 whose message
//! starts with the field it is about.

use super::errors::ApiError;
use actix_web::http::header;
use actix_web::{web, HttpRequest};
use actors::time::Date;
use actors::writes::{is_currency, is_email, Change};
use futures_util::StreamExt;
use serde_json::{Map, Number, Value};
use uuid::Uuid;

/// The largest write body accepted. Notes carry HTML, so this is generous; anything
/// larger is refused before it is parsed.
pub const MAX_BODY_BYTES: usize = 1 << 20;

/// The largest snapshot accepted over HTTP (`POST /admin/v1/import`, and an import
/// one node passes to the workspace's writer).
pub const MAX_IMPORT_BYTES: usize = 4 << 30;

/// Longest a write's whole body may take to arrive, from the handler's first read. A
/// megabyte takes milliseconds on any link a client of this API uses; a client that
/// trickles its body (a byte now and then) would otherwise hold its connection, its
/// stream and its buffer for as long as it likes.
pub const BODY_DEADLINE: std::time::Duration = std::time::Duration::from_secs(10);

/// Longest `reference` (idempotency key) accepted, in characters (as the OpenAPI
/// document's `maxLength` counts them).
pub const MAX_REFERENCE_LEN: usize = 256;

/// Reads the body of a write: `Content-Type: application/json`, at most
/// [`MAX_BODY_BYTES`], a JSON object with at least one field and only `allowed` ones.
pub async fn read_object(
    req: &HttpRequest,
    mut payload: web::Payload,
    allowed: &'static [&'static str],
) -> Result<Fields, ApiError> {
    let json = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"));
    if !json {
        return Err(ApiError::bad_request(
            "Content-Type must be application/json",
        ));
    }
    let read_all = async {
        let mut bytes = web::BytesMut::new();
        while let Some(chunk) = payload.next().await {
            let chunk = chunk.map_err(|e| {
                ApiError::bad_request(format!("the request body could not be read: {e}"))
            })?;
            if bytes.len() + chunk.len() > MAX_BODY_BYTES {
                return Err(ApiError::bad_request(format!(
                    "the request body is larger than {MAX_BODY_BYTES} bytes"
                )));
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(bytes)
    };
    let bytes = tokio::time::timeout(BODY_DEADLINE, read_all)
        .await
        .map_err(|_| {
            ApiError::bad_request(format!(
                "the request body did not arrive within {} s",
                BODY_DEADLINE.as_secs()
            ))
        })??;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_request(
            "the request body is empty; send a JSON object",
        ));
    }
    let value: Value = serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::bad_request(format!("the request body is not valid JSON: {e}")))?;
    let Value::Object(map) = value else {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    };
    if map.is_empty() {
        return Err(ApiError::bad_request(format!(
            "the request body has no fields; accepted fields: {}",
            allowed.join(", ")
        )));
    }
    if let Some(unknown) = map.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(ApiError::bad_request(format!(
            "{unknown}: unknown field; accepted fields: {}",
            allowed.join(", ")
        )));
    }
    Ok(Fields(map))
}

fn bad(field: &str, message: &str) -> ApiError {
    ApiError::bad_request(format!("{field}: {message}"))
}

/// The fields of a write body, taken one at a time.
pub struct Fields(Map<String, Value>);

/// A field as sent: absent, `null`, or a value.
enum Raw {
    Absent,
    Null,
    Value(Value),
}

impl Fields {
    fn take(&mut self, name: &str) -> Raw {
        match self.0.remove(name) {
            None => Raw::Absent,
            Some(Value::Null) => Raw::Null,
            Some(v) => Raw::Value(v),
        }
    }

    fn string_value(name: &str, v: Value, allow_empty: bool) -> Result<String, ApiError> {
        let Value::String(s) = v else {
            return Err(bad(name, "must be a string"));
        };
        if !allow_empty && s.trim().is_empty() {
            return Err(bad(
                name,
                "must not be empty (to clear a field, send null rather than an empty string)",
            ));
        }
        Ok(s)
    }

    /// A string that a PATCH may set or clear with `null`; an empty string is refused.
    pub fn string(&mut self, name: &'static str) -> Result<Option<Change<String>>, ApiError> {
        Ok(match self.take(name) {
            Raw::Absent => None,
            Raw::Null => Some(Change::Clear),
            Raw::Value(v) => Some(Change::Set(Self::string_value(name, v, false)?)),
        })
    }

    /// Like [`Self::string`], but an empty string is a value (a note's title).
    pub fn text(&mut self, name: &'static str) -> Result<Option<Change<String>>, ApiError> {
        Ok(match self.take(name) {
            Raw::Absent => None,
            Raw::Null => Some(Change::Clear),
            Raw::Value(v) => Some(Change::Set(Self::string_value(name, v, true)?)),
        })
    }

    /// A string that may be absent but, when present, is a non-empty value (no `null`).
    pub fn string_value_only(&mut self, name: &'static str) -> Result<Option<String>, ApiError> {
        match self.take(name) {
            Raw::Absent => Ok(None),
            Raw::Null => Err(bad(name, "must be a string, not null")),
            Raw::Value(v) => Self::string_value(name, v, false).map(Some),
        }
    }

    /// A field's JSON as sent (`null` included), for a shape of its own.
    pub fn value(&mut self, name: &'static str) -> Option<Value> {
        match self.take(name) {
            Raw::Absent => None,
            Raw::Null => Some(Value::Null),
            Raw::Value(v) => Some(v),
        }
    }

    /// A required non-empty string.
    pub fn required_string(&mut self, name: &'static str) -> Result<String, ApiError> {
        match self.take(name) {
            Raw::Absent | Raw::Null => Err(bad(name, "is required")),
            Raw::Value(v) => Self::string_value(name, v, false),
        }
    }

    /// `true` or `false`, nothing else (no `null`, no strings, no numbers).
    pub fn boolean(&mut self, name: &'static str) -> Result<Option<bool>, ApiError> {
        match self.take(name) {
            Raw::Absent => Ok(None),
            Raw::Value(Value::Bool(b)) => Ok(Some(b)),
            _ => Err(bad(name, "must be true or false")),
        }
    }

    /// A UUID string, or `null` to clear.
    pub fn uuid(&mut self, name: &'static str) -> Result<Option<Change<Uuid>>, ApiError> {
        Ok(match self.string(name)? {
            None => None,
            Some(Change::Clear) => Some(Change::Clear),
            Some(Change::Set(s)) => Some(Change::Set(parse_uuid(name, &s)?)),
        })
    }

    /// A required UUID string.
    pub fn required_uuid(&mut self, name: &'static str) -> Result<Uuid, ApiError> {
        let s = self.required_string(name)?;
        parse_uuid(name, &s)
    }

    /// A JSON number, zero or greater (strings are refused, never converted), or `null`.
    pub fn amount(&mut self, name: &'static str) -> Result<Option<Change<Number>>, ApiError> {
        match self.take(name) {
            Raw::Absent => Ok(None),
            Raw::Null => Ok(Some(Change::Clear)),
            Raw::Value(Value::Number(n)) => {
                if n.as_f64().is_some_and(|f| f >= 0.0 && f.is_finite()) {
                    Ok(Some(Change::Set(n)))
                } else {
                    Err(bad(name, "must be zero or greater"))
                }
            }
            Raw::Value(_) => Err(bad(name, "must be a JSON number (zero or greater)")),
        }
    }

    /// An ISO 4217 currency code in current use (upper case), or `null`.
    pub fn currency(&mut self, name: &'static str) -> Result<Option<Change<String>>, ApiError> {
        let v = self.string(name)?;
        if let Some(Change::Set(code)) = &v {
            if !is_currency(code) {
                return Err(bad(
                    name,
                    &format!("{code:?} is not an ISO 4217 currency code (such as GBP, EUR, USD)"),
                ));
            }
        }
        Ok(v)
    }

    /// An e-mail address, or `null`.
    pub fn email(&mut self, name: &'static str) -> Result<Option<Change<String>>, ApiError> {
        let v = self.string(name)?;
        if let Some(Change::Set(e)) = &v {
            if !is_email(e) {
                return Err(bad(name, &format!("{e:?} is not an e-mail address")));
            }
        }
        Ok(v)
    }

    /// A phone number (anything with digits, as entered), or `null`.
    pub fn phone(&mut self, name: &'static str) -> Result<Option<Change<String>>, ApiError> {
        let v = self.string(name)?;
        if let Some(Change::Set(p)) = &v {
            if !p.bytes().any(|b| b.is_ascii_digit()) {
                return Err(bad(name, &format!("{p:?} has no digits")));
            }
        }
        Ok(v)
    }

    /// A calendar date written exactly `YYYY-MM-DD`, or `null`.
    pub fn date(&mut self, name: &'static str) -> Result<Option<Change<Date>>, ApiError> {
        Ok(match self.string(name)? {
            None => None,
            Some(Change::Clear) => Some(Change::Clear),
            Some(Change::Set(s)) => Some(Change::Set(parse_date(name, &s)?)),
        })
    }

    /// An idempotency key: a non-empty string of at most [`MAX_REFERENCE_LEN`] characters.
    pub fn reference(&mut self, name: &'static str) -> Result<Option<String>, ApiError> {
        let r = self.string_value_only(name)?;
        if r.as_ref()
            .is_some_and(|r| r.chars().count() > MAX_REFERENCE_LEN)
        {
            return Err(bad(
                name,
                &format!("must be at most {MAX_REFERENCE_LEN} characters"),
            ));
        }
        Ok(r)
    }
}

/// A UUID in its canonical hyphenated form.
fn parse_uuid(name: &str, s: &str) -> Result<Uuid, ApiError> {
    if s.len() == 36 {
        if let Ok(u) = Uuid::try_parse(s) {
            return Ok(u);
        }
    }
    Err(bad(name, &format!("{s:?} is not a UUID")))
}

/// `YYYY-MM-DD` exactly (a real calendar date).
fn parse_date(name: &str, s: &str) -> Result<Date, ApiError> {
    let shape = s.len() == 10
        && s.bytes().enumerate().all(|(i, b)| {
            if i == 4 || i == 7 {
                b == b'-'
            } else {
                b.is_ascii_digit()
            }
        });
    match Date::parse(s).filter(|_| shape) {
        Some(d) => Ok(d),
        None => Err(bad(
            name,
            &format!("{s:?} is not a date written YYYY-MM-DD"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_exactly_year_month_day() {
        assert!(parse_date("due_date", "2026-12-01").is_ok());
        for bad in [
            "2026-1-01",
            "2026-13-01",
            "2026-02-30",
            "01/12/2026",
            "2026-12-01T00:00",
            " 2026-12-01",
            "20261201",
        ] {
            assert!(parse_date("due_date", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn uuids_are_canonical() {
        assert!(parse_uuid("x", "21b6ca4e-64ee-5e3c-89d8-7a0806815565").is_ok());
        for bad in [
            "21b6ca4e64ee5e3c89d87a0806815565",
            "{21b6ca4e-64ee-5e3c-89d8-7a0806815565}",
            "x",
        ] {
            assert!(parse_uuid("x", bad).is_err(), "{bad}");
        }
    }
}
