//! Query strings, decoded strictly: percent-escapes only (`+` stays a plus sign, so a raw
//! `+` in an e-mail address or a zone offset survives), invalid escapes and invalid
//! UTF-8 are errors, and a parameter given twice is an error rather than a guess.

use super::errors::ApiError;
use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest};
use smallvec::SmallVec;
use std::borrow::Cow;
use std::future::{ready, Ready};

/// Decodes `%XX` escapes; `None` on a malformed escape or invalid UTF-8. Borrows when
/// there is nothing to decode.
pub fn percent_decode_strict(s: &str) -> Option<Cow<'_, str>> {
    if !s.contains('%') {
        return Some(Cow::Borrowed(s));
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = b.get(i + 1..i + 3)?;
            if !hex.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            let v = u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?;
            out.push(v);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok().map(Cow::Owned)
}

/// The decoded parameters of a query string, in order, borrowed from it where no escape
/// had to be decoded (the search hot path allocates nothing here).
#[derive(Debug, Default)]
pub struct Query<'a>(SmallVec<[(Cow<'a, str>, Cow<'a, str>); 4]>);

impl<'a> Query<'a> {
    pub fn parse(raw: &'a str) -> Result<Query<'a>, ApiError> {
        let mut out = SmallVec::new();
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
        Ok(Query(out))
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
                found = Some(&**v);
            }
        }
        Ok(found)
    }

    /// The value given under any of several alias names; 400 when two aliases disagree.
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

    fn into_owned(self) -> Query<'static> {
        Query(
            self.0
                .into_iter()
                .map(|(k, v)| (Cow::Owned(k.into_owned()), Cow::Owned(v.into_owned())))
                .collect(),
        )
    }
}

/// The decoded parameters of a request, as an extractor.
#[derive(Debug, Default)]
pub struct QueryParams(Query<'static>);

impl std::ops::Deref for QueryParams {
    type Target = Query<'static>;
    fn deref(&self) -> &Query<'static> {
        &self.0
    }
}

impl QueryParams {
    pub fn parse(raw: &str) -> Result<QueryParams, ApiError> {
        Ok(QueryParams(Query::parse(raw)?.into_owned()))
    }
}

impl FromRequest for QueryParams {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(QueryParams::parse(req.query_string()))
    }
}

/// `limit`, as every capped endpoint takes it: plain digits, at least 1, clamped to `MAX`;
/// `DEFAULT` when absent. An extractor (`limit: LimitParam<100, 500>`), or read from a
/// query already parsed ([`LimitParam::from_query`], the search path's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LimitParam<const DEFAULT: usize, const MAX: usize>(pub usize);

impl<const DEFAULT: usize, const MAX: usize> LimitParam<DEFAULT, MAX> {
    pub fn from_query(q: &Query<'_>) -> Result<Self, ApiError> {
        match q.get("limit")? {
            Some(raw) => Ok(LimitParam(
                actors::query::Limit::parse(raw, MAX)
                    .map_err(ApiError::bad_request)?
                    .get(),
            )),
            None => Ok(LimitParam(DEFAULT)),
        }
    }

    pub fn get(self) -> usize {
        self.0
    }
}

impl<const DEFAULT: usize, const MAX: usize> FromRequest for LimitParam<DEFAULT, MAX> {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(Query::parse(req.query_string()).and_then(|q| Self::from_query(&q)))
    }
}

/// `entities`: a comma-separated list of entity names (duplicates collapsed, an unknown
/// name refused), all nine when absent. `/v1/counts` and `/v1/changes` take it.
pub fn entities_param(raw: Option<&str>) -> Result<Vec<actors::model::Entity>, ApiError> {
    use actors::model::Entity;
    let Some(list) = raw else {
        return Ok(Entity::ALL.to_vec());
    };
    let mut out = Vec::new();
    for name in list.split(',') {
        let e = Entity::parse(name).ok_or_else(|| {
            ApiError::bad_request(format!(
                "entities: unknown entity {name:?}; expected a comma-separated list of candidates, applications, contacts, companies, jobs, notes, tasks, attachments, users"
            ))
        })?;
        if !out.contains(&e) {
            out.push(e);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_take_their_default_and_are_clamped_to_their_maximum() {
        type L = LimitParam<100, 500>;
        let of = |raw: &str| L::from_query(&Query::parse(raw).unwrap()).map(L::get);
        assert_eq!(of("").unwrap(), 100);
        assert_eq!(of("limit=7").unwrap(), 7);
        assert_eq!(of("limit=5000").unwrap(), 500);
        assert_eq!(of("limit=0007").unwrap(), 7);
        for bad in [
            "limit=0",
            "limit=2.5e2",
            "limit=+250",
            "limit=%20250",
            "limit=",
            "limit=1&limit=2",
        ] {
            assert!(of(bad).is_err(), "{bad}");
        }
    }

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
