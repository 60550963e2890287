//! Rate limits at the HTTP edge: the 429 `rate_limit_exceeded` answer with `Retry-After`, and
//! OpenAI's `x-ratelimit-{limit,remaining,reset}-{requests,tokens}` headers on every answer of a
//! limited route (docs/traffic-control.md). The rule itself is `domain::billing::rate_limits`.

use crate::app::App;
use crate::domain::accounts::Caller;
use crate::domain::billing::rate_limits::{self, AcquireError, Grant, Kind, RateStatus};
use crate::domain::error::ApiError;
use axum::http::{HeaderMap, HeaderName, HeaderValue};
use axum::response::{IntoResponse, Response};

/// Admits a text request: the organization's balance (402 when used up) and the rate limits of
/// the caller's key and of its plan. Where this process knows the organization's plan
/// ([`crate::domain::accounts::AccountCache`]) the balance is read while the limits' windows are
/// written, one round trip instead of two; a refused balance then gives its tokens back.
pub async fn admit_text(
    app: &App,
    caller: &Caller,
    tokens: u64,
) -> Result<Result<(crate::domain::accounts::Organization, Grant), Response>, ApiError> {
    let admit = || crate::domain::billing::token_charges::admit(app.context(), caller);
    let Some(plan) = app.credentials.plan_of(&caller.org) else {
        let org = admit().await?;
        app.credentials.remember_plan(&org.id, &org.plan);
        return Ok(acquire(app, caller, &org.plan, Kind::Text, tokens)
            .await
            .map(|grant| (org, grant)));
    };
    let (admitted, acquired) =
        tokio::join!(admit(), acquire(app, caller, &plan, Kind::Text, tokens));
    match (admitted, acquired) {
        (Ok(org), acquired) => {
            if org.plan != plan {
                app.credentials.remember_plan(&org.id, &org.plan);
            }
            Ok(acquired.map(|grant| (org, grant)))
        }
        (Err(refused), Ok(grant)) => {
            rate_limits::settle(app.store.as_ref(), &grant, 0).await;
            Err(refused)
        }
        (Err(refused), Err(_)) => Err(refused),
    }
}

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
