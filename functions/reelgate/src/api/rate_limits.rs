//! Rate limits at the HTTP edge: the 429 `rate_limit_exceeded` answer with `Retry-After`, and
//! OpenAI's `x-ratelimit-{limit,remaining,reset}-{requests,tokens}` headers on every answer of a
//! limited route (docs/traffic-control.md). The rule itself is `domain::billing::rate_limits`.

use crate::domain::billing::rate_limits::{RateLimited, RateStatus};
use crate::domain::error::ApiError;
use axum::http::{HeaderMap, HeaderName, HeaderValue};
use axum::response::{IntoResponse, Response};

/// The 429 of a refused request, with `Retry-After` and the limits' headers.
pub fn refused(limited: RateLimited) -> Response {
    let mut response = ApiError::rate_limited(
        "rate_limit_exceeded",
        limited.message,
        Some(limited.retry_after_secs),
    )
    .into_response();
    apply(&limited.status, response.headers_mut());
    response
}

/// Adds the `x-ratelimit-*` headers of `status` (those of the limits that are set).
pub fn apply(status: &RateStatus, headers: &mut HeaderMap) {
    for (what, remaining) in [("requests", status.requests), ("tokens", status.tokens)] {
        if let Some(r) = remaining {
            insert(
                headers,
                &format!("x-ratelimit-limit-{what}"),
                r.limit.to_string(),
            );
            insert(
                headers,
                &format!("x-ratelimit-remaining-{what}"),
                r.remaining.to_string(),
            );
            insert(
                headers,
                &format!("x-ratelimit-reset-{what}"),
                format!("{}s", r.reset_secs),
            );
        }
    }
}

fn insert(headers: &mut HeaderMap, name: &str, value: String) {
    if let (Ok(name), Ok(value)) = (
        HeaderName::from_bytes(name.as_bytes()),
        HeaderValue::from_str(&value),
    ) {
        headers.insert(name, value);
    }
}
