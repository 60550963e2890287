//! `x-request-id`: every answer carries one, the same id names the request in the log (a span
//! around everything that serves it) and in error bodies (`error.request_id`). A caller's own id
//! is echoed when it is 1 to 128 characters of `A-Z a-z 0-9 - _ . :`; anything else (or none)
//! gets a fresh `req_<32 hex>` so nobody can write arbitrary text into the log or the headers.

use crate::domain::error::REQUEST_ID;
use axum::extract::Request;
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
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
        path = %req.uri().path()
    );
    let mut response = REQUEST_ID
        .scope(id.clone(), next.run(req).instrument(span.clone()))
        .await;
    let status = response.status().as_u16();
    span.in_scope(|| {
        if status >= 500 {
            tracing::warn!(status, "answered");
        } else {
            tracing::info!(status, "answered");
        }
    });
    if let Ok(v) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(HEADER, v);
    }
    response
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
