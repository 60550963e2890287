//! Reservations and charges for video renders. Admission reserves a job's quote; a completed
//! render charges it exactly once (the job's `reservation` attribute moves `held → charged` under
//! a condition, and a `CHARGE#<job>` ledger item can be written only once); every other terminal
//! path releases it. The organization's `available = balance − reserved` moves with each step.
//! Every settlement also writes the job's unsent-event marker (`domain::webhooks`), so a process
//! that dies right after it still has its webhook event sent by the recovery pass.

use crate::domain::accounts::org_key;
use crate::domain::accounts::record as account_record;
use crate::domain::billing::ledger::{Charged, LedgerEntry};
use crate::domain::videos::record::{self as job_record, JobRecord, Reservation};
use crate::ports::store::{now_secs, Condition, ItemStore, StoreError, TransactOp, Update};
use rust_decimal::Decimal;

#[derive(Debug, PartialEq, Eq)]
pub enum Settlement {
    /// This call moved the reservation.
    Settled,
    /// The reservation had already been settled (a retried step, a duplicate message or callback).
    AlreadySettled,
}

/// The org update that reserves `quote` for one more render, refused unless the org can afford
/// it and has a free render slot. Conditions compare attributes with constants only.
pub fn reserve_op(org: &str, quote: Decimal, max_concurrent: u32) -> TransactOp {
    TransactOp::Update {
        key: org_key(org),
        update: account_record::reserve(quote),
        condition: Some(account_record::can_reserve(quote, max_concurrent)),
    }
}

/// What a render charge is for, as the usage report counts it.
#[derive(Clone, Copy, Debug)]
pub struct RenderUsage<'a> {
    pub model: &'a str,
    /// The API key the job was created with (`console` for the console).
    pub key: &'a str,
    pub seconds: u64,
}

impl<'a> RenderUsage<'a> {
    /// Read from the job (`model`, `key`, `seconds`).
    pub fn of_job(job: &'a JobRecord) -> RenderUsage<'a> {
        RenderUsage {
            model: &job.model,
            key: if job.key.is_empty() {
                "unknown"
            } else {
                &job.key
            },
            seconds: u64::try_from(job.seconds).unwrap_or(0),
        }
    }
}

/// Ends a job with a charge of its quote. `job_update` carries the job's final attributes
/// (status completed, outputs, times); `usage` is added to the day's usage rollup in the same
/// transaction (`usage_report`).
pub async fn charge(
    store: &dyn ItemStore,
    org: &str,
    video_id: &str,
    quote: Decimal,
    currency: &str,
    job_update: Update,
    usage: RenderUsage<'_>,
) -> Result<Settlement, StoreError> {
    let now = now_secs();
    let ledger = LedgerEntry {
        org: org.to_owned(),
        charge_type: "video".to_owned(),
        model: Some(usage.model.to_owned()),
        key: Some(usage.key.to_owned()),
        amount: quote,
        currency: Some(currency.to_owned()),
        charged_at: Some(now),
        reason: Some("video render completed".to_owned()),
        charged: Charged::Render {
            video_id: video_id.to_owned(),
            video_seconds: usage.seconds,
        },
    }
    .to_item();
    let line = crate::domain::billing::usage_report::Line {
        charge_type: "video",
        model: usage.model,
        key: usage.key,
        currency,
        input_tokens: 0,
        cached_input_tokens: 0,
        cache_write_input_tokens: 0,
        output_tokens: 0,
        video_seconds: usage.seconds,
        amounts: crate::domain::billing::usage_report::Amounts {
            video: quote,
            ..Default::default()
        },
    };
    let ops = vec![
        TransactOp::Update {
            key: crate::domain::table_keys::job(org, video_id),
            update: job_record::set_reservation(job_update, Reservation::Charged),
            condition: Some(job_record::reservation_is(Reservation::Held)),
        },
        TransactOp::Update {
            key: org_key(org),
            update: account_record::charge_reserved(quote),
            condition: Some(Condition::Exists),
        },
        TransactOp::Put {
            item: ledger,
            condition: Some(Condition::NotExists),
        },
        crate::domain::webhooks::unsent_event_op(org, video_id, now),
        crate::domain::billing::usage_report::rollup_op(org, now, &line),
    ];
    let settled = settle(store, ops).await?;
    if settled == Settlement::Settled {
        crate::observability::metrics::reservations_held(-1);
        crate::observability::metrics::video_job("completed", "");
        crate::observability::metrics::spend(usage.model, currency, quote);
    }
    Ok(settled)
}

/// Ends a job without a charge, giving its reservation back.
pub async fn release(
    store: &dyn ItemStore,
    org: &str,
    video_id: &str,
    quote: Decimal,
    job_update: Update,
) -> Result<Settlement, StoreError> {
    let mut ops = vec![
        TransactOp::Update {
            key: crate::domain::table_keys::job(org, video_id),
            update: job_record::set_reservation(job_update, Reservation::Released),
            condition: Some(job_record::reservation_is(Reservation::Held)),
        },
        TransactOp::Update {
            key: org_key(org),
            update: account_record::release_reserved(quote),
            condition: Some(Condition::Exists),
        },
        crate::domain::webhooks::unsent_event_op(org, video_id, now_secs()),
    ];
    // A job admitted under a key's monthly budget gives its quote back to that month.
    const BUDGET_AT: usize = 3;
    let budgeted = crate::domain::videos::record::load(store, org, video_id)
        .await?
        .and_then(|j| Some((j.key, j.budget_month?)));
    if let Some((key, month)) = &budgeted {
        ops.push(crate::domain::billing::budgets::commit_op(
            crate::domain::accounts::api_key_key(key),
            month,
            -quote,
        ));
    }
    let settled = match store.transact(ops.clone()).await {
        // The key is gone (revoked and erased): release the rest without it.
        Err(e) if budgeted.is_some() && e.failed_at(BUDGET_AT) && !e.failed_at(0) => {
            ops.truncate(BUDGET_AT);
            settle(store, ops).await
        }
        Ok(()) => Ok(Settlement::Settled),
        Err(e) if e.failed_at(0) => Ok(Settlement::AlreadySettled),
        Err(e) => Err(e),
    }?;
    if settled == Settlement::Settled {
        crate::observability::metrics::reservations_held(-1);
    }
    Ok(settled)
}

async fn settle(store: &dyn ItemStore, ops: Vec<TransactOp>) -> Result<Settlement, StoreError> {
    match store.transact(ops).await {
        Ok(()) => Ok(Settlement::Settled),
        Err(e) if e.failed_at(0) => Ok(Settlement::AlreadySettled),
        Err(e) => Err(e),
    }
}
