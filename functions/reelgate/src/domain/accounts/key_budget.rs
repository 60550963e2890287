//! A key's monthly budget as its record holds it: the cap (`monthly_budget`) and what it has
//! committed in each month (`committed_<YYYY_MM>`). It is part of the key, so the caller carries
//! it from authentication; the rules that spend against it are `billing::budgets`.

use crate::ports::store::{Item, ItemExt};
use rust_decimal::Decimal;

/// A key's cap and what counts against it this month.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyBudget {
    pub monthly: Decimal,
    pub committed: Decimal,
    /// `YYYY_MM` of the month `committed` is for.
    pub month: String,
}

pub const BUDGET_ATTR: &str = "monthly_budget";

/// `YYYY_MM` (UTC) of a Unix time.
pub fn month_of(secs: i64) -> String {
    let (year, month, _) = crate::domain::dates::civil(secs);
    format!("{year:04}_{month:02}")
}

pub fn committed_attr(month: &str) -> String {
    format!("committed_{month}")
}

/// The budget on a key record, with this month's committed amount.
pub fn from_record(record: &Item, now: i64) -> Option<KeyBudget> {
    let monthly = record.decimal_attr(BUDGET_ATTR)?;
    let month = month_of(now);
    let committed = record
        .decimal_attr(&committed_attr(&month))
        .unwrap_or_default();
    Some(KeyBudget {
        monthly,
        committed,
        month,
    })
}
