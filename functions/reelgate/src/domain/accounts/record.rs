//! The organization's money, as the updates of its `ORG#<org>` / `ORG` item: a render's
//! reservation (reserve, then charge or release, once), token charges and top-ups. DynamoDB
//! allows no arithmetic in conditions, so the item keeps `available = balance − reserved` and
//! every update that moves `balance` or `reserved` moves `available` with it
//! (docs/table-design.md, "Admission without arithmetic in conditions").

use crate::ports::store::{Attr, Condition, Update};
use rust_decimal::Decimal;

const BALANCE: &str = "balance";
const RESERVED: &str = "reserved";
const AVAILABLE: &str = "available";
const IN_FLIGHT: &str = "in_flight";

/// Reserves `quote` for one more render in flight.
pub fn reserve(quote: Decimal) -> Update {
    Update::new()
        .add(AVAILABLE, -quote)
        .add(RESERVED, quote)
        .add(IN_FLIGHT, Decimal::ONE)
}

/// The organization can afford `quote` and has a free render slot of `max_concurrent`.
pub fn can_reserve(quote: Decimal, max_concurrent: u32) -> Condition {
    Condition::Exists
        .and(Condition::Ge(AVAILABLE.into(), Attr::N(quote)))
        .and(Condition::Lt(
            IN_FLIGHT.into(),
            Attr::N(Decimal::from(max_concurrent)),
        ))
}

/// Charges a render's reserved `quote` (`available` already excluded it).
pub fn charge_reserved(quote: Decimal) -> Update {
    Update::new()
        .add(BALANCE, -quote)
        .add(RESERVED, -quote)
        .add(IN_FLIGHT, -Decimal::ONE)
}

/// Gives a render's reserved `quote` back.
pub fn release_reserved(quote: Decimal) -> Update {
    Update::new()
        .add(AVAILABLE, quote)
        .add(RESERVED, -quote)
        .add(IN_FLIGHT, -Decimal::ONE)
}

/// Deducts an unreserved `amount` (token usage).
pub fn deduct(amount: Decimal) -> Update {
    Update::new().add(BALANCE, -amount).add(AVAILABLE, -amount)
}

/// Adds `amount` to the balance (a top-up).
pub fn top_up(amount: Decimal) -> Update {
    Update::new().add(BALANCE, amount).add(AVAILABLE, amount)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::store::{ItemExt, Key};

    #[test]
    fn every_update_keeps_available_equal_to_balance_minus_reserved() {
        let key = Key::new("ORG#org_1", "ORG");
        let read = |it: &crate::ports::store::Item| {
            [BALANCE, RESERVED, AVAILABLE, IN_FLIGHT]
                .map(|n| it.decimal_attr(n).unwrap_or_default())
        };
        let start = Update::new()
            .add(BALANCE, Decimal::from(10))
            .add(AVAILABLE, Decimal::from(10))
            .apply(&key, None);
        let q = Decimal::new(625, 2);
        let reserved = reserve(q).apply(&key, Some(start));
        assert_eq!(
            read(&reserved),
            [Decimal::from(10), q, Decimal::new(375, 2), Decimal::ONE]
        );
        for (update, balance, in_flight) in [
            (charge_reserved(q), Decimal::new(375, 2), 0),
            (release_reserved(q), Decimal::from(10), 0),
            (deduct(Decimal::ONE), Decimal::from(9), 1),
            (top_up(Decimal::ONE), Decimal::from(11), 1),
        ] {
            let after = read(&update.apply(&key, Some(reserved.clone())));
            assert_eq!(after[0], balance, "{update:?}");
            assert_eq!(after[2], after[0] - after[1], "{update:?}");
            assert_eq!(after[3], Decimal::from(in_flight), "{update:?}");
        }
        assert!(!can_reserve(q, 1).holds(Some(&reserved)));
        assert!(can_reserve(Decimal::new(375, 2), 2).holds(Some(&reserved)));
    }
}
