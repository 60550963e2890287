//! `x-request-id`: every answer carries one, the same id names the request in the log (a span
//! around everything that serves it) and in error bodies (`error.request_id`). A caller's own id
//! is echoed when it is 1 to 128 characters of `A-Z a-z 0-9 - _ . :`; anything else (or none)
//! gets a fresh `req_<32 hex>` so nobody can write arbitrary text into the log or the headers.
//!
//! The same middleware writes the request's **one log line** (target `reelgate::request`):
//! request id, method, route template, status, duration, upstream time, organization, key id,
//! model — the facts the domain noted on the way (`observability::telemetry`) — and, while traces are
//! exported, the trace id. The same span is the request's OpenTelemetry span (route template,
//! organization, model, status), parented by a caller's `traceparent` when it sent a valid one. A streamed answer's line
//! is written when its body ends (or the client leaves), so its duration covers the stream.
//! Prompt text is in the line only while `REELGATE_LOG_PROMPTS` is on; secrets never are.

use crate::domain::error::REQUEST_ID;
use crate::observability::telemetry::{self, RequestFacts};
use crate::observability::trace_context;
use axum::body::Body;
use axum::extract::{MatchedPath, Request};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use std::sync::Arc;
use std::time::Instant;
use tracing::Instrument;

pub const HEADER: &str = "x-request-id";

/// The caller's id when it is safe to echo.
pub fn valid(presented: &str) -> bool {
    (1..=128).contains(&presented.len())
        && presented
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
}

pub fn fresh() -> String {
    format!("req_{}", hex::encode(rand::random::<[u8; 16]>()))
}

/// The middleware (`axum::middleware::from_fn`) the router wears outermost.
pub async fn tag(mut req: Request, next: Next) -> Response {
    let id = req
        .headers()
        .get(HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|v| valid(v))
        .map(str::to_owned)
        .unwrap_or_else(fresh);
    if let Ok(v) = HeaderValue::from_str(&id) {
        // Handlers that log or forward it see the id this answer will carry.
        req.headers_mut().insert(HEADER, v);
    }
    let span = tracing::info_span!(
        "request",
        request_id = %id,
        method = %req.method(),
        path = %req.uri().path(),
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        http.route = tracing::field::Empty,
        http.response.status_code = tracing::field::Empty,
        organization = tracing::field::Empty,
        model = tracing::field::Empty,
    );
    // A caller's traceparent only names the trace this request is filed under
    // (observability/trace_context.rs); a malformed one is ignored.
    trace_context::adopt(
        &span,
        req.headers()
            .get(trace_context::HEADER)
            .and_then(|v| v.to_str().ok()),
    );
    let trace_id = trace_context::of_span(&span).map(|p| p.trace_id_hex());
    let started = Instant::now();
    let method = req.method().clone();
    let facts = Arc::new(RequestFacts::default());
    let mut response = REQUEST_ID
        .scope(
            id.clone(),
            telemetry::scope(facts.clone(), next.run(req).instrument(span.clone())),
        )
        .await;
    if let Ok(v) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(HEADER, v);
    }
    let route = response.extensions().get::<MatchedPath>().cloned();
    let status = response.status().as_u16();
    if trace_id.is_some() {
        let template = route.as_ref().map_or("unmatched", MatchedPath::as_str);
        trace_context::rename(&span, format!("{method} {template}"));
        span.record("http.route", template);
        span.record("http.response.status_code", i64::from(status));
        if status >= 500 {
            span.record("otel.status_code", "ERROR");
        }
        if let Some(org) = facts.org() {
            span.record("organization", org);
        }
        if let Some(model) = facts.model() {
            span.record("model", model);
        }
    }
    let line = RequestLine {
        id,
        method,
        route,
        status,
        started,
        facts,
        trace_id,
    };
    // A body of known length is as good as sent: log now. A stream: log when it ends.
    if http_body::Body::size_hint(response.body())
        .exact()
        .is_some()
    {
        line.write();
        response
    } else {
        response.map(|body| {
            Body::new(LoggedBody {
                inner: body,
                line: Some(line),
            })
        })
    }
}

/// The route layer (inside the router, where the matched route is known): hands the route
/// template to the outer middleware through the response.
pub async fn note_route(req: Request, next: Next) -> Response {
    let route = req.extensions().get::<MatchedPath>().cloned();
    let mut response = next.run(req).await;
    if let Some(route) = route {
        response.extensions_mut().insert(route);
    }
    response
}

/// Everything one request's log line says.
struct RequestLine {
    id: String,
    method: axum::http::Method,
    route: Option<MatchedPath>,
    status: u16,
    started: Instant,
    facts: Arc<RequestFacts>,
    /// The request's trace id while traces are exported.
    trace_id: Option<String>,
}

impl RequestLine {
    fn write(self) {
        let f = &self.facts;
        let took = self.started.elapsed();
        let duration_ms = took.as_secs_f64() * 1000.0;
        let route = self.route.as_ref().map_or("unmatched", MatchedPath::as_str);
        let upstream = f.model().zip(f.upstream_time());
        crate::observability::metrics::request(route, self.status, took, upstream);
        macro_rules! line {
            ($level:ident) => {
                tracing::$level!(
                    target: "reelgate::request",
                    request_id = %self.id,
                    method = %self.method,
                    route,
                    status = self.status,
                    duration_ms,
                    upstream_ms = f.upstream_ms(),
                    org = f.org(),
                    key = f.key(),
                    model = f.model(),
                    prompt = f.prompt(),
                    trace_id = self.trace_id.as_deref(),
                    "request"
                )
            };
        }
        if self.status >= 500 {
            line!(warn);
        } else {
            line!(info);
        }
    }
}

/// A streamed body that writes its request's line when it is dropped: finished, or abandoned
/// by the client.
struct LoggedBody {
    inner: Body,
    line: Option<RequestLine>,
}

impl http_body::Body for LoggedBody {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for LoggedBody {
    fn drop(&mut self) {
        if let Some(line) = self.line.take() {
            line.write();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_short_plain_ids_are_echoed() {
        assert!(valid("abc-123_X.y:z"));
        assert!(valid(&"a".repeat(128)));
        assert!(!valid(""));
        assert!(!valid(&"a".repeat(129)));
        assert!(!valid("two words"));
        assert!(!valid("line\nbreak"));
        assert!(!valid("ünïcode"));
        let id = fresh();
        assert!(valid(&id) && id.starts_with("req_") && id.len() == 36);
    }
}
