//! Query strings, decoded strictly: percent-escapes only (`+` stays a plus sign, so a raw
//! `+` in an e-mail address or a zone offset survives), invalid escapes and invalid
//! UTF-8 are errors, and a parameter given twice is an error rather than a guess.

use super::errors::ApiError;
use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest};
use std::future::{ready, Ready};

/// Decodes `%XX` escapes; `None` on a malformed escape or invalid UTF-8.
pub fn percent_decode_strict(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = b.get(i + 1..i + 3)?;
            let v = u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?;
            if !hex.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            out.push(v);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The decoded parameters of a request, in order.
#[derive(Debug, Default)]
pub struct QueryParams(Vec<(String, String)>);

impl QueryParams {
    pub fn parse(raw: &str) -> Result<QueryParams, ApiError> {
        let mut out = Vec::new();
        for part in raw.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = part.split_once('=').unwrap_or((part, ""));
            let k = percent_decode_strict(k).ok_or_else(|| {
                ApiError::bad_request("query string has an invalid percent-escape")
            })?;
            let v = percent_decode_strict(v).ok_or_else(|| {
                ApiError::bad_request(format!("query parameter {k} has an invalid percent-escape"))
            })?;
            out.push((k, v));
        }
        Ok(QueryParams(out))
    }

    /// The single value of a parameter; 400 when it is given more than once.
    pub fn get(&self, name: &str) -> Result<Option<&str>, ApiError> {
        let mut found = None;
        for (k, v) in &self.0 {
            if k == name {
                if found.is_some() {
                    return Err(ApiError::bad_request(format!(
                        "query parameter {name} is given more than once"
                    )));
                }
                found = Some(v.as_str());
            }
        }
        Ok(found)
    }

    /// The first of several alias names present; 400 when two aliases disagree.
    pub fn get_any(&self, names: &[&str]) -> Result<Option<&str>, ApiError> {
        let mut found: Option<&str> = None;
        for n in names {
            if let Some(v) = self.get(n)? {
                match found {
                    Some(prev) if prev != v => {
                        return Err(ApiError::bad_request(format!(
                            "query parameters {} are aliases and disagree",
                            names.join(", ")
                        )))
                    }
                    _ => found = Some(v),
                }
            }
        }
        Ok(found)
    }
}

impl FromRequest for QueryParams {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(QueryParams::parse(req.query_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plus_is_literal_and_escapes_decode() {
        let q = QueryParams::parse("email=a+b%40x.example&updated_since=2026-09-01T10:00:00+01:00")
            .unwrap();
        assert_eq!(q.get("email").unwrap(), Some("a+b@x.example"));
        assert_eq!(
            q.get("updated_since").unwrap(),
            Some("2026-09-01T10:00:00+01:00")
        );
        let q = QueryParams::parse("a=%2B%20").unwrap();
        assert_eq!(q.get("a").unwrap(), Some("+ "));
    }

    #[test]
    fn bad_escapes_and_duplicates_are_errors() {
        assert!(QueryParams::parse("a=%zz").is_err());
        assert!(QueryParams::parse("a=%4").is_err());
        assert!(QueryParams::parse("a=%ff").is_err());
        let q = QueryParams::parse("limit=1&limit=2").unwrap();
        assert!(q.get("limit").is_err());
    }
}
