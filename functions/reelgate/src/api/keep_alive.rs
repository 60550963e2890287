//! Keep-alive after an answer given before the request's body was read (a refusal at the front
//! door, a missing CSRF token, a bad credential). The server then cannot reuse the connection:
//! the unread bytes would be taken for the next request, so it closes the connection once the
//! answer is out. Said without `Connection: close`, a client that has already sent its next
//! request on that connection sees it dropped unanswered (on a busy machine, the body often
//! arrives after the refusal was decided). This layer says it: every answer to a request whose
//! body was announced but not read to its end carries `Connection: close`.

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{header, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
use http_body::{Body as HttpBody, Frame, SizeHint};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

/// The request body, noting when it has been read to its end.
struct Tracked {
    inner: Body,
    ended: Arc<AtomicBool>,
}

impl HttpBody for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None)) || self.inner.is_end_stream() {
            self.ended.store(true, Ordering::Relaxed);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Whether the request announces a body (a non-zero length, or a chunked one).
fn announces_body(req: &Request) -> bool {
    let headers = req.headers();
    let length = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    length.is_some_and(|n| n > 0) || headers.contains_key(header::TRANSFER_ENCODING)
}

pub async fn close_if_unread(req: Request, next: Next) -> Response {
    if !announces_body(&req) {
        return next.run(req).await;
    }
    let ended = Arc::new(AtomicBool::new(false));
    let tracked = ended.clone();
    let req = req.map(|inner| {
        Body::new(Tracked {
            inner,
            ended: tracked,
        })
    });
    let mut response = next.run(req).await;
    if !ended.load(Ordering::Relaxed) {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}
