//! The rate-limit windows as items of the item store: one item per scope and minute
//! (`RATE#<org>[#KEY#<key>]`, `<kind>#<minute>`) holding `requests` and `tokens`. Admission is one
//! conditional update per window — `ADD requests 1, tokens estimate` only if both stay within
//! their limits — so the count is exact under any concurrency (the store serializes conditional
//! writes on one item); a scope's and its organization's updates go in one
//! [`ItemStore::update_each`] call (one commit on SQLite, two concurrent writes on DynamoDB). The
//! AWS host keeps its windows here, shared by every Lambda instance.

use crate::ports::store::{
    Attr, Condition, ConditionalUpdate, Item, ItemExt, ItemStore, Key, StoreError, TransactOp,
    Update, EXPIRES_AT,
};
use crate::ports::store::{RateWindows, WindowAdmission, WindowCounts, WindowOutcome};
use async_trait::async_trait;
use rust_decimal::Decimal;

/// The windows kept in `store`.
pub struct StoreWindows<'a>(pub &'a dyn ItemStore);

fn count(n: u64) -> Attr {
    Attr::N(Decimal::from(n))
}

fn counts_of(item: Option<&Item>) -> WindowCounts {
    let read = |name| item.and_then(|i| i.i64_attr(name)).unwrap_or(0).max(0) as u64;
    WindowCounts {
        requests: read("requests"),
        tokens: read("tokens"),
    }
}

/// The conditional write that admits one request into a window.
fn admission(a: &WindowAdmission) -> ConditionalUpdate {
    let mut conditions = Vec::new();
    if let Some(max) = a.max_requests {
        conditions.push(Condition::Or(vec![
            Condition::AttrNotExists("requests".into()),
            Condition::Lt("requests".into(), count(max)),
        ]));
    }
    if let Some(max) = a.max_tokens {
        conditions.push(Condition::Or(vec![
            Condition::AttrNotExists("tokens".into()),
            Condition::Le("tokens".into(), count(max.saturating_sub(a.tokens))),
        ]));
    }
    ConditionalUpdate {
        key: a.key.clone(),
        update: Update::new()
            .add("requests", Decimal::ONE)
            .add("tokens", Decimal::from(a.tokens))
            .set(EXPIRES_AT, a.expires_at),
        condition: Some(Condition::And(conditions)),
    }
}

#[async_trait]
impl RateWindows for StoreWindows<'_> {
    async fn admit_each(
        &self,
        admissions: Vec<WindowAdmission>,
    ) -> Vec<Result<WindowOutcome, StoreError>> {
        let written = self
            .0
            .update_each(admissions.iter().map(admission).collect())
            .await;
        futures::future::join_all(
            admissions
                .iter()
                .zip(written)
                .map(|(a, outcome)| async move {
                    match outcome {
                        Ok(item) => Ok(WindowOutcome::Admitted(counts_of(Some(&item)))),
                        // Off the hot path: read the window to say which limit is reached.
                        Err(StoreError::ConditionFailed) => {
                            let current = self.0.get(&a.key).await?;
                            Ok(WindowOutcome::Full(counts_of(current.as_ref())))
                        }
                        Err(e) => Err(e),
                    }
                }),
        )
        .await
    }

    async fn give_back(&self, key: &Key, tokens: u64) {
        let undo = Update::new()
            .add("requests", Decimal::NEGATIVE_ONE)
            .add("tokens", -Decimal::from(tokens));
        if let Err(e) = self.0.update(key, undo, None).await {
            tracing::warn!(error = %e, "giving back a rate-limit unit failed");
        }
    }

    async fn settle(&self, key: &Key, delta: i64) {
        // Only an existing window: a refund must not recreate a window that already expired.
        let cond = Condition::AttrExists("requests".into());
        match self
            .0
            .update(
                key,
                Update::new().add("tokens", Decimal::from(delta)),
                Some(cond),
            )
            .await
        {
            Ok(_) | Err(StoreError::ConditionFailed) => {}
            Err(e) => tracing::warn!(error = %e, "settling rate-limit tokens failed"),
        }
    }

    /// No condition (a condition failing would cancel the charge): a window that already
    /// expired is recreated with the same past expiry and is never read again, since only the
    /// current minute's window admits.
    fn settlement_write(&self, key: &Key, delta: i64, expires_at: i64) -> Option<TransactOp> {
        Some(TransactOp::Update {
            key: key.clone(),
            update: Update::new()
                .add("tokens", Decimal::from(delta))
                .set(EXPIRES_AT, expires_at),
            condition: None,
        })
    }
}
