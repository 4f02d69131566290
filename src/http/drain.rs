//! Request bodies left unread when an HTTP/2 answer is complete.
//!
//! Many answers are given before the body is read, or without reading all of it: a
//! missing key (401), a missing scope (403), a wrong `Content-Type`, a wrong method
//! (405), a rate-limited request (429), a body over the cap (400 after the first MiB).
//! Over HTTP/1.1 the connection deals with the rest. Over HTTP/2, dropping a request body
//! that is still arriving makes the stream reset (`RST_STREAM`) right behind the answer,
//! and clients that are still uploading then often report a stream error instead of the
//! answer they were sent (curl: "(92) Stream error in the HTTP/2 framing layer").
//!
//! So for an HTTP/2 request that may carry a body, the middleware lends the handler a
//! shared handle on the body ([`Unread::lend`]); once the answer is ready, whatever the
//! handler left is read and thrown away in the background ([`Unread::drain`]) while the
//! answer goes out. The stream then ends cleanly when the client has sent its last byte.
//! Draining is bounded: at most [`DRAIN_MAX_BYTES`] and [`DRAIN_MAX_TIME`], after which
//! the body is dropped (and the stream reset) as before. Nothing is kept: each chunk is
//! released as it arrives, which also hands the client flow-control credit for the next.

use actix_web::dev::{Payload, ServiceRequest};
use actix_web::error::PayloadError;
use actix_web::http::{Method, Version};
use actix_web::web::Bytes;
use futures_util::{FutureExt, Stream, StreamExt};
use std::cell::RefCell;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Duration;

/// Most bytes of an unread body read and discarded after its answer: an upload several
/// times the 1 MiB write cap still ends cleanly; beyond that the stream is reset.
pub const DRAIN_MAX_BYTES: usize = 16 * 1024 * 1024;
/// Longest a client may take to finish sending a body whose answer it already has.
pub const DRAIN_MAX_TIME: Duration = Duration::from_secs(10);

/// The request's body, shared between the handler (which may read part of it) and the
/// middleware (which drains what is left once the answer is ready).
#[derive(Clone)]
pub struct Unread(Rc<RefCell<Payload>>);

impl Unread {
    /// Takes an HTTP/2 request's body and puts a handle on it in its place, for requests
    /// whose method may carry a body; `None` for the others (GET, HEAD: nothing to drain).
    pub fn lend(req: &mut ServiceRequest) -> Option<Unread> {
        if req.version() != Version::HTTP_2 || matches!(*req.method(), Method::GET | Method::HEAD) {
            return None;
        }
        let shared = Unread(Rc::new(RefCell::new(req.parts_mut().1.take())));
        req.set_payload(Payload::Stream {
            payload: Box::pin(shared.clone()),
        });
        Some(shared)
    }

    /// Reads and discards the rest of the body, in the background unless it has already
    /// ended (the common case: a body read whole by its handler, or none at all).
    pub fn drain(self) {
        match self.clone().next().now_or_never() {
            // Ended, or failed: the stream is done with either way.
            Some(None) | Some(Some(Err(_))) => {}
            Some(Some(Ok(first))) => {
                actix_web::rt::spawn(self.discard(first.len()));
            }
            None => {
                actix_web::rt::spawn(self.discard(0));
            }
        }
    }

    async fn discard(mut self, mut seen: usize) {
        let rest = async {
            while let Some(Ok(chunk)) = self.next().await {
                seen += chunk.len();
                if seen > DRAIN_MAX_BYTES {
                    return;
                }
            }
        };
        // Past either bound the body is dropped here, which resets the stream.
        let _ = tokio::time::timeout(DRAIN_MAX_TIME, rest).await;
    }
}

impl Stream for Unread {
    type Item = Result<Bytes, PayloadError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        // Never borrowed twice: the handler reads it while the request is served, the
        // drain only after the answer is ready.
        Pin::new(&mut *self.0.borrow_mut()).poll_next(cx)
    }
}
