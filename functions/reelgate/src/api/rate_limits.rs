//! Rate limits at the HTTP edge: the 429 `rate_limit_exceeded` answer with `Retry-After`, and
//! OpenAI's `x-ratelimit-{limit,remaining,reset}-{requests,tokens}` headers on every answer of a
//! limited route (docs/traffic-control.md). The rule itself is `domain::rate_limits`.

use crate::app::App;
use crate::domain::accounts::Caller;
use crate::domain::error::ApiError;
use crate::domain::rate_limits::{self, AcquireError, Grant, Kind, RateStatus};
use axum::http::{HeaderMap, HeaderName, HeaderValue};
use axum::response::{IntoResponse, Response};

/// Admits the request under the limits of the caller's key and of its organization's plan
/// (`plan`, the plan id), or answers the refusal (429 with its headers, or the store's failure).
pub async fn acquire(
    app: &App,
    caller: &Caller,
    plan: &str,
    kind: Kind,
    tokens: u64,
) -> Result<Grant, Response> {
    let plan = app.catalog.plan(plan);
    match rate_limits::acquire(app.store.as_ref(), caller, plan, kind, tokens).await {
        Ok(grant) => Ok(grant),
        Err(AcquireError::Limited(limited)) => {
            let mut response = ApiError::rate_limited(
                "rate_limit_exceeded",
                limited.message,
                Some(limited.retry_after_secs),
            )
            .into_response();
            apply(&limited.status, response.headers_mut());
            Err(response)
        }
        Err(AcquireError::Store(e)) => Err(ApiError::from(e).into_response()),
    }
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
