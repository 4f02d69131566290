//! The success envelope: `{"data": …, "request_id": …}`, with `next_cursor` and
//! `total_count` on list pages and `total_count` on sub-resource pages. Every successful
//! JSON answer of the API and of the admin interface is written with [`Envelope`]
//! (errors have theirs in `context`), straight into one buffer: a page's records are
//! written into it by their views (`actors::rendered`), never serialised elsewhere first.

use super::errors::ApiError;
use actix_web::HttpResponse;
use actors::rendered::Rendered;
use serde::Serialize;

/// An answer being written. Members go in the order the API shows them: `data`, then
/// `next_cursor` and `total_count` where they apply, then `request_id`.
pub struct Envelope(Vec<u8>);

impl Envelope {
    /// Opens an envelope with room for `capacity` bytes; `data` comes next.
    pub fn new(capacity: usize) -> Self {
        let mut buf = Vec::with_capacity(capacity);
        buf.extend_from_slice(b"{\"data\":");
        Envelope(buf)
    }

    /// The start of an envelope's buffer, for data written before the envelope is
    /// made (see [`Envelope::resume`]).
    pub fn start() -> Vec<u8> {
        Envelope::new(0).0
    }

    /// The envelope whose buffer is `buf`: [`Envelope::start`] and then exactly one JSON
    /// value, the data.
    pub fn resume(buf: Vec<u8>) -> Self {
        debug_assert!(buf.starts_with(b"{\"data\":"));
        Envelope(buf)
    }

    /// An envelope whose data is `data`, serialised.
    pub fn of<T: Serialize + ?Sized>(data: &T) -> Result<Self, ApiError> {
        let mut e = Envelope::new(256);
        serde_json::to_writer(&mut e.0, data).map_err(ApiError::internal)?;
        Ok(e)
    }

    /// An envelope whose data is an array of records, written by their views.
    pub fn of_records<R: Rendered>(views: impl IntoIterator<Item = R>) -> Result<Self, ApiError> {
        let mut e = Envelope::new(4096);
        e.0.push(b'[');
        for (i, view) in views.into_iter().enumerate() {
            if i > 0 {
                e.0.push(b',');
            }
            view.write_json(&mut e.0).map_err(ApiError::internal)?;
        }
        e.0.push(b']');
        Ok(e)
    }

    /// The buffer the data's JSON is written into, directly (exactly one JSON value).
    pub fn data_buf(&mut self) -> &mut Vec<u8> {
        &mut self.0
    }

    /// `next_cursor`: the cursor of the next page, or `null` on the last one.
    pub fn next_cursor(&mut self, cursor: Option<&str>) -> Result<(), ApiError> {
        self.0.extend_from_slice(b",\"next_cursor\":");
        match cursor {
            Some(c) => serde_json::to_writer(&mut self.0, c).map_err(ApiError::internal)?,
            None => self.0.extend_from_slice(b"null"),
        }
        Ok(())
    }

    /// A member after `data`, serialised.
    pub fn member<T: Serialize + ?Sized>(&mut self, name: &str, value: &T) -> Result<(), ApiError> {
        self.0.push(b',');
        serde_json::to_writer(&mut self.0, name).map_err(ApiError::internal)?;
        self.0.push(b':');
        serde_json::to_writer(&mut self.0, value).map_err(ApiError::internal)
    }

    /// `total_count`.
    pub fn total_count(&mut self, n: usize) {
        self.0.extend_from_slice(b",\"total_count\":");
        self.0.extend_from_slice(n.to_string().as_bytes());
    }

    /// Closes the envelope with the request's id: the whole body.
    pub fn close(mut self, request_id: &str) -> Result<Vec<u8>, ApiError> {
        self.0.extend_from_slice(b",\"request_id\":");
        serde_json::to_writer(&mut self.0, request_id).map_err(ApiError::internal)?;
        self.0.push(b'}');
        Ok(self.0)
    }

    /// Closes the envelope into a 200 answer.
    pub fn respond(self, request_id: &str) -> Result<HttpResponse, ApiError> {
        Ok(json_ok(self.close(request_id)?))
    }
}

/// A 200 answer with a JSON body.
pub fn json_ok(body: Vec<u8>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(b: Vec<u8>) -> String {
        String::from_utf8(b).unwrap()
    }

    #[test]
    fn members_come_in_the_api_order() {
        let e = Envelope::of(&serde_json::json!({"id": "x"})).unwrap();
        assert_eq!(
            text(e.close("req_1").unwrap()),
            r#"{"data":{"id":"x"},"request_id":"req_1"}"#
        );
        let mut page = Envelope::new(64);
        page.data_buf().extend_from_slice(b"[1,2]");
        page.next_cursor(Some("c\"1")).unwrap();
        page.total_count(7);
        assert_eq!(
            text(page.close("req_2").unwrap()),
            r#"{"data":[1,2],"next_cursor":"c\"1","total_count":7,"request_id":"req_2"}"#
        );
        let mut last = Envelope::new(64);
        last.data_buf().extend_from_slice(b"[]");
        last.next_cursor(None).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&last.close("req_3").unwrap()).unwrap();
        assert_eq!(v["next_cursor"], serde_json::Value::Null);
    }
}
