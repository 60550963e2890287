//! Spending caps per API key per calendar month (UTC).
//!
//! A key with a `monthly_budget` keeps `committed_<YYYY_MM>` on its record: what it has spent
//! that month plus what its renders in flight have reserved. A video create adds its quote to it
//! in the admission transaction, under the condition that it stays within the budget, so renders
//! never overshoot; a render that ends unbilled gives its quote back. A chat or responses charge
//! adds its cost in the charge transaction. Text requests are admitted while the committed amount
//! is below the budget, read with the key at authentication: requests already in flight when the
//! budget is reached still finish and are charged, so text spend can pass the budget by at most
//! the cost of the key's requests in flight at that moment (bounded by its requests-per-minute
//! limit times the most one request can cost). See docs/traffic-control.md.

use crate::domain::error::ApiError;
use crate::ports::store::{Attr, Condition, Key, TransactOp, Update};
use rust_decimal::Decimal;

pub use crate::domain::accounts::key_budget::{
    committed_attr, from_record, month_of, KeyBudget, BUDGET_ATTR,
};

pub fn exceeded(budget: &KeyBudget) -> ApiError {
    ApiError::new(
        crate::domain::error::ErrorKind::QuotaExceeded,
        "key_budget_exceeded",
        format!(
            "This API key's monthly budget of {} is used up ({} spent or reserved this month). \
             It resets on the first of the month (UTC), or an admin can raise it.",
            budget.monthly, budget.committed
        ),
    )
}

/// Refuses a text request once the key's committed amount has reached its budget (a budget of
/// zero admits nothing).
pub fn admit_text(budget: Option<&KeyBudget>) -> Result<(), ApiError> {
    match budget {
        Some(b) if b.committed >= b.monthly => Err(exceeded(b)),
        _ => Ok(()),
    }
}

/// Refuses, before any write, a render whose quote alone is more than the key's whole monthly
/// budget (or any render on a budget of zero): no committed amount could make room for it.
pub fn admit_render(budget: &KeyBudget, quote: Decimal) -> Result<(), ApiError> {
    if budget.monthly <= Decimal::ZERO || quote > budget.monthly {
        return Err(exceeded(budget));
    }
    Ok(())
}

/// The admission transaction's update of the key: commits `quote`, refused past the budget.
/// The month's first reservation (no committed attribute yet) is held to the budget too: the
/// caller checks `quote <= monthly` with [`admit_render`] first, and the condition repeats it so
/// that the store alone never lets a reservation pass the budget.
pub fn reserve_op(key: Key, budget: &KeyBudget, quote: Decimal) -> TransactOp {
    let attr = committed_attr(&budget.month);
    let room = budget.monthly - quote;
    let fits = if room < Decimal::ZERO || budget.monthly <= Decimal::ZERO {
        // Nothing fits: a condition no key record can meet.
        Condition::AttrNotExists("hash".into())
    } else {
        Condition::Or(vec![
            Condition::AttrNotExists(attr.clone()),
            Condition::Le(attr, Attr::N(room)),
        ])
    };
    TransactOp::Update {
        key,
        update: Update::new().add(&committed_attr(&budget.month), quote),
        condition: Some(Condition::AttrExists("hash".into()).and(fits)),
    }
}

/// Adds `amount` to the key's committed amount for `month` (a charge, or a release when
/// negative); only on a key that still exists.
pub fn commit_op(key: Key, month: &str, amount: Decimal) -> TransactOp {
    TransactOp::Update {
        key,
        update: Update::new().add(&committed_attr(month), amount),
        condition: Some(Condition::AttrExists("hash".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::store::Item;

    #[test]
    fn months_are_utc_calendar_months() {
        assert_eq!(month_of(0), "1970_01");
        assert_eq!(month_of(1_795_000_000), "2026_11"); // 2026-11-18
        assert_eq!(month_of(1_796_083_199), "2026_11"); // 2026-11-30T23:59:59Z
        assert_eq!(month_of(1_796_083_200), "2026_12"); // 2026-12-01T00:00:00Z
        assert_eq!(month_of(951_782_400), "2000_02"); // 2000-02-29
        assert_eq!(month_of(1_709_251_199), "2024_02"); // 2024-02-29T23:59:59Z
    }

    #[test]
    fn text_is_refused_once_the_budget_is_reached() {
        let b = |committed: &str| KeyBudget {
            monthly: "5.00".parse().expect("d"),
            committed: committed.parse().expect("d"),
            month: "2026_11".into(),
        };
        assert!(admit_text(Some(&b("4.99"))).is_ok());
        let e = admit_text(Some(&b("5.00"))).expect_err("at the budget");
        assert_eq!(e.code, "key_budget_exceeded");
        assert_eq!(crate::api::envelope::status(e.kind), 402);
        assert!(admit_text(None).is_ok());
        let zero = KeyBudget {
            monthly: Decimal::ZERO,
            committed: Decimal::ZERO,
            month: "2026_11".into(),
        };
        assert!(
            admit_text(Some(&zero)).is_err(),
            "a budget of 0 admits no text"
        );
    }

    fn key_record(committed: Option<&str>) -> Item {
        let mut it = crate::ports::store::item(&Key::new("KEY#k", "KEY"));
        it.insert("hash".into(), "h".into());
        if let Some(c) = committed {
            it.insert(
                committed_attr("2026_11"),
                Attr::N(c.parse().expect("decimal")),
            );
        }
        it
    }

    fn budget(monthly: &str) -> KeyBudget {
        KeyBudget {
            monthly: monthly.parse().expect("d"),
            committed: Decimal::ZERO,
            month: "2026_11".into(),
        }
    }

    fn holds(b: &KeyBudget, quote: &str, record: &Item) -> bool {
        let TransactOp::Update { condition, .. } =
            reserve_op(Key::new("KEY#k", "KEY"), b, quote.parse().expect("d"))
        else {
            unreachable!("reserve_op is an update")
        };
        condition.expect("conditional").holds(Some(record))
    }

    #[test]
    fn the_months_first_render_is_held_to_the_budget() {
        let b = budget("0.10");
        let quote: Decimal = "1.50".parse().expect("d");
        assert!(admit_render(&b, quote).is_err());
        assert!(
            !holds(&b, "1.50", &key_record(None)),
            "first reservation of the month past the budget"
        );
        assert!(
            holds(&b, "0.10", &key_record(None)),
            "exactly the budget fits"
        );
        assert!(holds(&b, "0.05", &key_record(Some("0.05"))));
        assert!(!holds(&b, "0.06", &key_record(Some("0.05"))));
    }

    #[test]
    fn a_budget_of_zero_admits_no_render() {
        let b = budget("0");
        assert!(admit_render(&b, "0.01".parse().expect("d")).is_err());
        assert!(admit_render(&b, Decimal::ZERO).is_err());
        assert!(!holds(&b, "0", &key_record(None)));
        assert!(!holds(&b, "0.01", &key_record(None)));
    }
}
