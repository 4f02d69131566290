//! `GET /files/<workspace>/<attachment id>?expires=…&signature=…`: the bytes behind a
//! signed download URL (`crate::http::signed_urls`).
//!
//! This route is not part of the API: it lives outside `/v1/`, never reads an API key
//! (the signature is the credential), and answers the way an object store does, with
//! bodies of its own that the error envelope leaves alone ([`OwnBody`]):
//! - a missing, malformed, tampered or expired signature: 403, before the object is
//!   looked at, so the answer never tells whether it exists;
//! - bytes gone since the URL was signed (the record removed, its bytes dropped or
//!   missing from the blob store): HTTP 400 with `{"statusCode":"404","code":"NoSuchKey",…}`
//!   (spec, "GET /v1/attachments/{id}/download");
//! - otherwise 200 with the bytes streamed from the blob store, `Content-Type`,
//!   `Content-Length` and `Content-Disposition` (the display filename, RFC 6266/5987).
//!
//! Failures of the service itself (a loading workspace, an unreadable blob store) keep
//! the service's envelope.

use super::errors::ApiError;
use super::query::Query;
use super::request::OwnBody;
use super::state::AppState;
use crate::http::signed_urls::{parse_files_path, Refusal};
use actix_web::body::SizedStream;
use actix_web::http::header::{self, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use actors::model::split_attachment_id;
use actors::model::AttachmentRec;
use actors::registry::Slot;
use futures_util::Stream;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use std::io::Read;
use std::sync::Arc;
use uuid::Uuid;

/// The content type served when none was recorded (or the recorded one is unusable).
pub const FALLBACK_CONTENT_TYPE: &str = "application/octet-stream";

/// The name a download is offered under: the display filename, else the id's identifier.
pub fn served_filename(a: &AttachmentRec) -> &str {
    match a.filename().filter(|f| !f.trim().is_empty()) {
        Some(f) => f,
        None => split_attachment_id(a.id()).map_or(a.id(), |(_, rest)| rest),
    }
}

/// The content type a download is served with: the recorded one when it is a valid MIME
/// type (it becomes a header), else [`FALLBACK_CONTENT_TYPE`].
pub fn served_content_type(a: &AttachmentRec) -> &str {
    match a.content_type() {
        Some(ct)
            if ct.parse::<actix_web::mime::Mime>().is_ok() && HeaderValue::from_str(ct).is_ok() =>
        {
            ct
        }
        _ => FALLBACK_CONTENT_TYPE,
    }
}

/// RFC 5987 `attr-char`s stay as they are in `filename*`; everything else is escaped.
const ATTR_CHAR: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'!')
    .remove(b'#')
    .remove(b'$')
    .remove(b'&')
    .remove(b'+')
    .remove(b'-')
    .remove(b'.')
    .remove(b'^')
    .remove(b'_')
    .remove(b'`')
    .remove(b'|')
    .remove(b'~');

/// `attachment; filename="<ASCII fallback>"; filename*=UTF-8''<percent-encoded>`.
///
/// The fallback, for clients that ignore `filename*`, keeps printable ASCII and puts `_`
/// for quotes, backslashes, path separators, control and non-ASCII characters, so it can
/// neither end the quoted string early nor name a path.
pub fn content_disposition(filename: &str) -> String {
    let fallback: String = filename
        .chars()
        .map(|c| match c {
            '"' | '\\' | '/' => '_',
            c if c.is_ascii_graphic() || c == ' ' => c,
            _ => '_',
        })
        .collect();
    format!(
        "attachment; filename=\"{fallback}\"; filename*=UTF-8''{}",
        utf8_percent_encode(filename, ATTR_CHAR)
    )
}

/// An object-store-style answer: `{"statusCode": "<status>", "code", "error", "message"}`.
fn store_answer(
    status: StatusCode,
    shown: &str,
    code: &str,
    error: &str,
    message: &str,
) -> HttpResponse {
    let body = serde_json::json!({
        "statusCode": shown,
        "code": code,
        "error": error,
        "message": message,
    });
    let mut res = HttpResponse::build(status)
        .content_type("application/json")
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .body(body.to_string());
    res.extensions_mut().insert(OwnBody);
    res
}

/// The bytes are gone: the spec's HTTP 400 with `statusCode` "404" and `code` NoSuchKey.
pub fn no_such_key() -> HttpResponse {
    store_answer(
        StatusCode::BAD_REQUEST,
        "404",
        "NoSuchKey",
        "not_found",
        "The object does not exist",
    )
}

fn refused(r: Refusal) -> HttpResponse {
    let message = match r {
        Refusal::Invalid => "The signature is missing, malformed or does not match",
        Refusal::Expired => "The signed URL has expired; request a new one",
    };
    store_answer(
        StatusCode::FORBIDDEN,
        "403",
        "AccessDenied",
        "forbidden",
        message,
    )
}

/// Bytes of this size are read per blocking call while streaming a file.
const CHUNK: u64 = 64 * 1024;

/// Streams `len` bytes from a blocking reader, one chunk per call on the blocking pool,
/// so a slow disk (or object store) never holds up an async worker.
fn chunks(
    reader: Box<dyn Read + Send>,
    len: u64,
) -> impl Stream<Item = Result<Bytes, std::io::Error>> {
    futures_util::stream::unfold(Some((reader, len)), |state| async move {
        let (mut reader, left) = state?;
        if left == 0 {
            return None;
        }
        let want = CHUNK.min(left) as usize;
        let read = web::block(move || {
            let mut buf = vec![0u8; want];
            let mut n = 0;
            while n < want {
                match reader.read(&mut buf[n..]) {
                    Ok(0) => break,
                    Ok(k) => n += k,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            buf.truncate(n);
            Ok((reader, buf))
        })
        .await;
        match read {
            Ok(Ok((reader, buf))) if !buf.is_empty() => {
                let left = left - buf.len() as u64;
                Some((Ok(Bytes::from(buf)), Some((reader, left))))
            }
            // Shorter than announced: end the response as broken rather than short.
            Ok(Ok(_)) => Some((
                Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "blob ended before its length",
                )),
                None,
            )),
            Ok(Err(e)) => Some((Err(e), None)),
            Err(e) => Some((Err(std::io::Error::other(e.to_string())), None)),
        }
        .map(|(item, next)| {
            // The status line has gone: the client sees a cut-off body, the log says why.
            if let Err(e) = &item {
                tracing::error!("reading a blob while serving it: {e}");
            }
            (item, next)
        })
    })
}

pub async fn serve(req: HttpRequest, app: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let now = app.downloads.clock.now();
    let Some((workspace, id)) = parse_files_path(req.uri().path()) else {
        return Ok(refused(Refusal::Invalid));
    };
    let Ok(q) = Query::parse(req.query_string()) else {
        return Ok(refused(Refusal::Invalid));
    };
    let (Ok(Some(expires)), Ok(Some(signature))) = (q.get("expires"), q.get("signature")) else {
        return Ok(refused(Refusal::Invalid));
    };
    let verified = app
        .check_token(signature, || {
            app.downloads
                .signer
                .verify(&workspace, &id, expires, signature, now)
        })
        .await;
    if let Err(r) = verified {
        return Ok(refused(r));
    }
    // The URL is genuine and current: only now is the object looked at.
    let Ok(workspace) = Uuid::try_parse(&workspace) else {
        return Ok(no_such_key());
    };
    let state = match app.registry.slot(workspace) {
        Some(Slot::Ready(h)) => h.state(),
        Some(Slot::Loading) => {
            return Err(ApiError::unavailable(
                "the workspace is still loading; retry after the indicated delay",
            ))
        }
        None => return Ok(no_such_key()),
    };
    let Some(a) = state
        .attachments
        .get_visible(&Arc::from(id.as_str()))
        .filter(|a| a.has_content())
        .cloned()
    else {
        return Ok(no_such_key());
    };
    drop(state);
    let blobs = app.blobs.clone();
    let blob = web::block(move || blobs.open(workspace, &id))
        .await
        .map_err(|e| ApiError::internal(anyhow::anyhow!("blob read task: {e}")))??;
    let Some(blob) = blob else {
        return Ok(no_such_key());
    };
    Ok(HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, served_content_type(&a)))
        .insert_header((
            header::CONTENT_DISPOSITION,
            content_disposition(served_filename(&a)),
        ))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        // Personal documents: kept by no cache, shared or private.
        .insert_header((header::CACHE_CONTROL, "private, no-store"))
        .body(SizedStream::new(blob.len, chunks(blob.reader, blob.len))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_disposition_escapes_both_forms() {
        assert_eq!(
            content_disposition("Leo Lambert CV.pdf"),
            "attachment; filename=\"Leo Lambert CV.pdf\"; filename*=UTF-8''Leo%20Lambert%20CV.pdf"
        );
        assert_eq!(
            content_disposition("say \"hi\"\\there.txt"),
            "attachment; filename=\"say _hi__there.txt\"; filename*=UTF-8''say%20%22hi%22%5Cthere.txt"
        );
        assert_eq!(
            content_disposition("Zoë Ünal – résumé.pdf"),
            "attachment; filename=\"Zo_ _nal _ r_sum_.pdf\"; \
             filename*=UTF-8''Zo%C3%AB%20%C3%9Cnal%20%E2%80%93%20r%C3%A9sum%C3%A9.pdf"
        );
        assert_eq!(
            content_disposition("../etc/pass\r\nwd;x=1"),
            "attachment; filename=\".._etc_pass__wd;x=1\"; filename*=UTF-8''..%2Fetc%2Fpass%0D%0Awd%3Bx%3D1"
        );
        // Every value is a valid header value.
        for name in ["a\u{7f}b", "tab\there", "履歴書.pdf", "x'y`z"] {
            assert!(
                HeaderValue::from_str(&content_disposition(name)).is_ok(),
                "{name}"
            );
        }
    }

    fn attachment(filename: Option<&str>, content_type: Option<&str>) -> Arc<AttachmentRec> {
        AttachmentRec::pack(&actors::model::Attachment {
            id: "file:abc".into(),
            parent_type: actors::model::ParentType::Company,
            parent_id: Uuid::nil(),
            filename: filename.map(str::to_string),
            content_type: content_type.map(str::to_string),
            size: None,
            kind: actors::model::AttachmentKind::Document,
            storage_ref: None,
            has_content: true,
            created_at: actors::time::Stamp::from_millis(0),
            updated_at: actors::time::Stamp::from_millis(0),
        })
    }

    #[test]
    fn names_and_types_fall_back() {
        assert_eq!(served_filename(&attachment(Some("a.pdf"), None)), "a.pdf");
        assert_eq!(served_filename(&attachment(None, None)), "abc");
        assert_eq!(served_filename(&attachment(Some("  "), None)), "abc");
        assert_eq!(
            served_content_type(&attachment(None, Some("application/pdf"))),
            "application/pdf"
        );
        assert_eq!(
            served_content_type(&attachment(None, Some("text/plain; charset=utf-8"))),
            "text/plain; charset=utf-8"
        );
        for bad in [
            None,
            Some("pdf"),
            Some("text/html\r\nSet-Cookie: x=1"),
            Some(""),
        ] {
            assert_eq!(
                served_content_type(&attachment(None, bad)),
                FALLBACK_CONTENT_TYPE,
                "{bad:?}"
            );
        }
    }
}
