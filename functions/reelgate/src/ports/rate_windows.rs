//! Rate-limit windows: per scope and minute, the requests and tokens admitted so far. The rule
//! (which scopes, which limits, what a refusal says) is `domain::billing::rate_limits`; this port
//! only counts. Two adapters: windows kept as items of the item store
//! (`domain::billing::store_windows`, what the AWS host uses, every Lambda instance sharing them
//! through DynamoDB), and windows kept in the memory of the one process that owns them
//! (`reelgate-embedded`'s `rate_windows`, the local host), which the request path takes and
//! settles without a store round trip. An item store names the windows of its host through
//! [`crate::ports::store::ItemStore::rate_windows`].

use crate::ports::store::{Key, StoreError, TransactOp};
use async_trait::async_trait;

/// One request into one window: one more request and `tokens` more tokens, only if both stay
/// within the limits that are set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WindowAdmission {
    pub key: Key,
    pub max_requests: Option<u64>,
    pub max_tokens: Option<u64>,
    /// Never more than `max_tokens` (the rule refuses such a request before any window).
    pub tokens: u64,
    /// When the window is forgotten (Unix seconds).
    pub expires_at: i64,
}

/// A window's counts: after the admission when admitted, as they stand when full.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WindowCounts {
    pub requests: u64,
    pub tokens: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowOutcome {
    Admitted(WindowCounts),
    /// A limit is reached; nothing was counted.
    Full(WindowCounts),
}

#[async_trait]
pub trait RateWindows: Send + Sync {
    /// Each admission on its own (not all or none), the answers in order. The count is exact
    /// under any concurrency: no two admissions into one window interleave.
    async fn admit_each(
        &self,
        admissions: Vec<WindowAdmission>,
    ) -> Vec<Result<WindowOutcome, StoreError>>;

    /// Takes back one request and its `tokens` from a window that admitted them (the other
    /// scope refused the request). Failures are logged, never answered: a unit not given back
    /// only refuses early, never admits wrongly.
    async fn give_back(&self, key: &Key, tokens: u64);

    /// Adds `delta` tokens (the real count minus the estimate) to a window that still exists.
    async fn settle(&self, key: &Key, delta: i64);

    /// The settlement of a charged request as a write to join the charge's transaction, where the
    /// windows are items of the same store (`expires_at` kept). None where they are not: the
    /// charge then calls [`RateWindows::settle`] once its transaction has committed, so a charge
    /// that is refused (already charged) settles nothing either way.
    fn settlement_write(&self, key: &Key, delta: i64, expires_at: i64) -> Option<TransactOp>;
}
