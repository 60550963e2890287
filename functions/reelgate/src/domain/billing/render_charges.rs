//! Reservations and charges for video renders, as the organization's account and the ledger see
//! them. Admission reserves a job's quote; a completed render charges it exactly once (a
//! `CHARGE#<job>` ledger item can be written only once); every other terminal path releases it.
//! The organization's `available = balance − reserved` moves with each step. These are the
//! billing half of a settlement: `videos::settlement` puts them in one transaction with the job's
//! own conditional update and its unsent-event marker, so billing never reads or writes jobs.

use crate::domain::accounts::org_key;
use crate::domain::accounts::record as account_record;
use crate::domain::billing::ledger::{Charged, LedgerEntry};
use crate::ports::store::{Condition, TransactOp};
use rust_decimal::Decimal;

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

/// The account, ledger and usage writes of a completed render's charge of `quote` at `now`:
/// the reserved amount leaves the balance, the ledger gains its one `CHARGE#` entry, and the
/// day's usage rollup counts the render (`usage_report`).
pub fn charge_ops(
    org: &str,
    video_id: &str,
    quote: Decimal,
    currency: &str,
    usage: RenderUsage<'_>,
    now: i64,
) -> Vec<TransactOp> {
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
    vec![
        TransactOp::Update {
            key: org_key(org),
            update: account_record::charge_reserved(quote),
            condition: Some(Condition::Exists),
        },
        TransactOp::Put {
            item: ledger,
            condition: Some(Condition::NotExists),
        },
        crate::domain::billing::usage_report::rollup_op(org, now, &line),
    ]
}

/// The account write that gives an unbilled render's reserved `quote` back.
pub fn release_op(org: &str, quote: Decimal) -> TransactOp {
    TransactOp::Update {
        key: org_key(org),
        update: account_record::release_reserved(quote),
        condition: Some(Condition::Exists),
    }
}

/// The key-budget write that gives a render's `quote` back to the month (`YYYY_MM`) it was
/// admitted under, for a job admitted under a key's monthly budget.
pub fn release_budget_op(key_id: &str, month: &str, quote: Decimal) -> TransactOp {
    crate::domain::billing::budgets::commit_op(
        crate::domain::accounts::api_key_key(key_id),
        month,
        -quote,
    )
}
