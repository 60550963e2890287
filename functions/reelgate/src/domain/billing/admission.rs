//! Admission of a text request (chat completions, responses, messages): the organization's
//! balance (a request is admitted while it is above zero) and the rate limits of the caller's
//! key and of its plan, with their tokens reserved until the charge settles them.

use crate::domain::accounts::{AccountCache, Caller, Organization};
use crate::domain::billing::rate_limits::{self, AcquireError, Grant, Kind, RateLimited};
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::Context;
use rust_decimal::Decimal;

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
    let admit = || funded(cx, caller);
    let Some(plan) = cache.plan_of(&caller.org) else {
        let org = admit().await?;
        cache.remember_plan(&org.id, &org.plan);
        let acquired = acquire(cx, caller, &org.plan, tokens).await;
        return admitted(org, acquired);
    };
    let (admitted_org, acquired) = tokio::join!(admit(), acquire(cx, caller, &plan, tokens));
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

/// Refuses with 402 `insufficient_credits` unless the organization's balance is above zero, and
/// with 402 `key_budget_exceeded` once the key's monthly budget is used up; returns the
/// organization (its plan sets the rate limits).
async fn funded(cx: Context<'_>, caller: &Caller) -> ApiResult<Organization> {
    crate::domain::billing::budgets::admit_text(caller.budget.as_ref())?;
    let found = cx.accounts().org(&caller.org).await?;
    if found.balance <= Decimal::ZERO {
        return Err(ApiError::insufficient_credits(
            "The organization's credit balance is used up. Add credits to continue.",
        ));
    }
    Ok(found)
}

/// The text limits of the caller's key and of the plan `plan` (a plan id).
async fn acquire(
    cx: Context<'_>,
    caller: &Caller,
    plan: &str,
    tokens: u64,
) -> Result<Grant, AcquireError> {
    rate_limits::acquire(cx.store, caller, cx.catalog.plan(plan), Kind::Text, tokens).await
}
