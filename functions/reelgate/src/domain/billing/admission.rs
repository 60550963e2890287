//! Admission of a text request (chat completions, responses, messages): the organization's
//! balance (a request is admitted while it is above zero) and the rate limits of the caller's
//! key and of its plan, with their tokens reserved until the charge settles them.

use crate::domain::accounts::{AccountCache, Caller, Organization};
use crate::domain::billing::rate_limits::{self, AcquireError, Grant, Kind, RateLimited};
use crate::domain::error::ApiResult;
use crate::domain::Context;

/// A text request's admission: admitted with its reservation, or refused by a rate limit.
pub enum TextAdmission {
    Admitted(Organization, Grant),
    Limited(RateLimited),
}

/// Admits a text request reserving `tokens`. Where this process knows the organization's plan
/// (`cache`) the balance is read while the limits' windows are written, one round trip instead
/// of two; a refused balance then gives its tokens back.
pub async fn admit_text(
    cx: Context<'_>,
    cache: &AccountCache,
    caller: &Caller,
    tokens: u64,
) -> ApiResult<TextAdmission> {
    let admit = || crate::domain::billing::token_charges::admit(cx, caller);
    let Some(plan) = cache.plan_of(&caller.org) else {
        let org = admit().await?;
        cache.remember_plan(&org.id, &org.plan);
        let acquired = acquire(cx, caller, &org.plan, Kind::Text, tokens).await;
        return admitted(org, acquired);
    };
    let (admitted_org, acquired) =
        tokio::join!(admit(), acquire(cx, caller, &plan, Kind::Text, tokens));
    match (admitted_org, acquired) {
        (Ok(org), acquired) => {
            if org.plan != plan {
                cache.remember_plan(&org.id, &org.plan);
            }
            admitted(org, acquired)
        }
        (Err(refused), Ok(grant)) => {
            rate_limits::settle(cx.store, &grant, 0).await;
            Err(refused)
        }
        (Err(refused), Err(_)) => Err(refused),
    }
}

fn admitted(org: Organization, acquired: Result<Grant, AcquireError>) -> ApiResult<TextAdmission> {
    match acquired {
        Ok(grant) => Ok(TextAdmission::Admitted(org, grant)),
        Err(AcquireError::Limited(limited)) => Ok(TextAdmission::Limited(limited)),
        Err(AcquireError::Store(e)) => Err(e.into()),
    }
}

/// The limits of the caller's key and of the plan `plan` (a plan id) for one request of `kind`.
pub async fn acquire(
    cx: Context<'_>,
    caller: &Caller,
    plan: &str,
    kind: Kind,
    tokens: u64,
) -> Result<Grant, AcquireError> {
    rate_limits::acquire(cx.store, caller, cx.catalog.plan(plan), kind, tokens).await
}
