//! How a job ends with its money: a completed render is charged its quote exactly once, every
//! other end releases it. Each is one transaction that composes the job's own conditional update
//! (its `reservation` moves `held → charged | released`, so a retried step, a duplicate message
//! or callback settles nothing twice), billing's account and ledger writes
//! (`billing::render_charges`), and the job's unsent-event marker (`webhooks::events`), so a
//! process that dies right after it still has its webhook event sent by the recovery pass.

use crate::domain::billing::render_charges::{self, RenderUsage};
use crate::domain::videos::record::{self as job_record, JobRecord, Reservation};
use crate::ports::store::{now_secs, ItemStore, StoreError, TransactOp, Update};
use rust_decimal::Decimal;

#[derive(Debug, PartialEq, Eq)]
pub enum Settlement {
    /// This call moved the reservation.
    Settled,
    /// The reservation had already been settled (a retried step, a duplicate message or callback).
    AlreadySettled,
}

/// What the usage report counts for a job's render (`model`, `key`, `seconds`).
pub fn usage_of(job: &JobRecord) -> RenderUsage<'_> {
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

/// The job's side of a settlement, always the transaction's first operation: it fails (and the
/// whole settlement with it) unless the reservation is still held.
fn job_op(org: &str, video_id: &str, job_update: Update, to: Reservation) -> TransactOp {
    TransactOp::Update {
        key: crate::domain::table_keys::job(org, video_id),
        update: job_record::set_reservation(job_update, to),
        condition: Some(job_record::reservation_is(Reservation::Held)),
    }
}

/// Ends a job with a charge of its quote. `job_update` carries the job's final attributes
/// (status completed, outputs, times); `usage` is added to the day's usage rollup in the same
/// transaction.
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
    let mut ops = vec![job_op(org, video_id, job_update, Reservation::Charged)];
    ops.extend(render_charges::charge_ops(
        org, video_id, quote, currency, usage, now,
    ));
    ops.push(crate::domain::webhooks::unsent_event_op(org, video_id, now));
    let settled = settle(store, ops).await?;
    if settled == Settlement::Settled {
        crate::observability::metrics::reservations_held(-1);
        crate::observability::metrics::video_job("completed", "");
        crate::observability::metrics::spend(usage.model, currency, quote);
    }
    Ok(settled)
}

/// Ends `org`'s `job` (as the caller loaded it) without a charge, giving its reservation back
/// (and its quote back to the key's monthly budget it was admitted under, if any).
pub async fn release(
    store: &dyn ItemStore,
    org: &str,
    job: &JobRecord,
    job_update: Update,
) -> Result<Settlement, StoreError> {
    let (video_id, quote) = (job.id.as_str(), job.cost);
    let mut ops = vec![
        job_op(org, video_id, job_update, Reservation::Released),
        render_charges::release_op(org, quote),
        crate::domain::webhooks::unsent_event_op(org, video_id, now_secs()),
    ];
    const BUDGET_AT: usize = 3;
    // The key and the month are written at admission and never change.
    let budgeted = job
        .budget_month
        .as_deref()
        .map(|month| (job.key.as_str(), month));
    if let Some((key, month)) = budgeted {
        ops.push(render_charges::release_budget_op(key, month, quote));
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
