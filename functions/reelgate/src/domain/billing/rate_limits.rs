//! Rate limits per API key and per organization: requests and tokens per minute for chat and
//! responses, video creates per minute.
//!
//! The algorithm is a fixed one-minute window per scope and kind (`RATE#<org>[#KEY#<key>]`,
//! `<kind>#<minute>`) counting the requests and tokens admitted in it, kept by the
//! [`RateWindows`] port: as store items on AWS (`store_windows`), in the owning process's memory
//! locally. Admission counts one request into each limited scope only if it stays within that
//! scope's limits, exactly under any concurrency, in one call for the key's and the
//! organization's windows. When one scope admits and the other refuses, the admitted unit is
//! given back; until then a concurrent request near that limit may be refused, never wrongly
//! admitted. A fixed window lets a caller use its limit at the end of one minute and again at the
//! start of the next: at most twice the limit in any 60 s.
//!
//! Tokens are reserved at admission as an estimate (the prompt's estimate plus the request's
//! `max_completion_tokens`/`max_output_tokens`, else [`DEFAULT_COMPLETION_ESTIMATE`]) and settled
//! with the real count once the upstream has answered.

use crate::domain::accounts::Caller;
use crate::domain::billing::store_windows::StoreWindows;
use crate::domain::catalog::{Plan, RateLimits};
use crate::ports::store::{now_secs, ItemStore, Key, StoreError, TransactOp};
use crate::ports::store::{RateWindows, WindowAdmission, WindowCounts, WindowOutcome};

/// Completion tokens reserved for a request that sets no maximum.
pub const DEFAULT_COMPLETION_ESTIMATE: u64 = 1024;

const WINDOW_SECS: i64 = 60;

/// What a request spends from a limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `/v1/chat/completions` and `/v1/responses`: requests and tokens.
    Text,
    /// `POST /v1/videos`: video creates.
    VideoCreate,
}

impl Kind {
    pub fn tag(self) -> &'static str {
        match self {
            Kind::Text => "TEXT",
            Kind::VideoCreate => "VIDEO",
        }
    }
}

/// The limits of one scope for one kind: requests and (for text) tokens per minute.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Limits {
    requests: Option<u64>,
    tokens: Option<u64>,
}

impl Limits {
    fn of(limits: &RateLimits, kind: Kind) -> Limits {
        match kind {
            Kind::Text => Limits {
                requests: limits.requests_per_minute,
                tokens: limits.tokens_per_minute,
            },
            Kind::VideoCreate => Limits {
                requests: limits.video_creates_per_minute,
                tokens: None,
            },
        }
    }

    fn is_unlimited(&self) -> bool {
        self.requests.is_none() && self.tokens.is_none()
    }
}

/// What the caller is told in `x-ratelimit-*` headers: the tighter of its key's and its
/// organization's limits.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RateStatus {
    pub requests: Option<Remaining>,
    pub tokens: Option<Remaining>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Remaining {
    pub limit: u64,
    pub remaining: u64,
    /// Seconds until the window resets.
    pub reset_secs: u64,
}

impl RateStatus {
    fn merge(&mut self, other: &RateStatus) {
        fn tighter(a: &mut Option<Remaining>, b: Option<Remaining>) {
            match (a.as_ref(), b) {
                (None, b) => *a = b,
                (Some(x), Some(y)) if y.remaining < x.remaining => *a = Some(y),
                _ => {}
            }
        }
        tighter(&mut self.requests, other.requests);
        tighter(&mut self.tokens, other.tokens);
    }
}

/// A refusal: which limit, and when to come back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RateLimited {
    pub status: RateStatus,
    pub retry_after_secs: u64,
    pub message: String,
}

/// What an admitted request holds, to settle its tokens later.
#[derive(Clone, Debug, Default)]
pub struct Grant {
    windows: Vec<Key>,
    reserved_tokens: u64,
    /// When the windows' items expire (kept on a settlement, see [`settlement_ops`]).
    expires_at: i64,
    pub status: RateStatus,
}

pub use crate::domain::accounts::key_controls::limits_for;

/// A window's item is kept a minute past its window, so a late settlement still finds it; then
/// TTL removes it.
fn window_expiry(minute: i64) -> i64 {
    (minute + 2) * WINDOW_SECS + WINDOW_SECS
}

fn window_key(scope_pk: &str, kind: Kind, minute: i64) -> Key {
    crate::domain::table_keys::rate_window(scope_pk, kind.tag(), minute)
}

/// The partition of a caller's key scope; console traffic counts under the person.
fn key_scope(caller: &Caller) -> String {
    match &caller.credential {
        crate::domain::accounts::Credential::ApiKey { key_id } => {
            crate::domain::table_keys::rate_key_scope(&caller.org, key_id)
        }
        crate::domain::accounts::Credential::ConsoleSession { .. } => {
            crate::domain::table_keys::rate_console_scope(&caller.org, &caller.person)
        }
    }
}

fn org_scope(org: &str) -> String {
    crate::domain::table_keys::rate_org_scope(org)
}

/// Admits one request of `kind` reserving `tokens`, against the caller's key and organization
/// limits (each only when set; no store call when neither is).
pub async fn acquire(
    store: &dyn ItemStore,
    caller: &Caller,
    plan: Option<&Plan>,
    kind: Kind,
    tokens: u64,
) -> Result<Grant, AcquireError> {
    let (key_limits, org_limits) = limits_for(caller, plan);
    let scopes: Vec<(String, Limits)> = [
        (key_scope(caller), Limits::of(&key_limits, kind)),
        (org_scope(&caller.org), Limits::of(&org_limits, kind)),
    ]
    .into_iter()
    .filter(|(_, l)| !l.is_unlimited())
    .collect();
    if scopes.is_empty() {
        return Ok(Grant::default());
    }
    let now = now_secs();
    let minute = now.div_euclid(WINDOW_SECS);
    let reset_secs = ((minute + 1) * WINDOW_SECS - now).max(1) as u64;
    let tokens = if kind == Kind::Text { tokens } else { 0 };
    for (_, limits) in &scopes {
        if let Some(max) = limits.tokens {
            if tokens > max {
                let status = RateStatus {
                    requests: None,
                    tokens: Some(Remaining {
                        limit: max,
                        remaining: 0,
                        reset_secs,
                    }),
                };
                return Err(AcquireError::Limited(RateLimited {
                    status,
                    retry_after_secs: reset_secs,
                    message: format!(
                        "This request needs about {tokens} tokens, more than the {max} tokens \
                         per minute allowed. Lower max_completion_tokens or the prompt's length."
                    ),
                }));
            }
        }
    }
    // Both scopes in one call: in memory locally, one commit or two concurrent writes in a store.
    let keys: Vec<Key> = scopes
        .iter()
        .map(|(pk, _)| window_key(pk, kind, minute))
        .collect();
    let admissions = keys
        .iter()
        .zip(&scopes)
        .map(|(key, (_, limits))| WindowAdmission {
            key: key.clone(),
            max_requests: limits.requests,
            max_tokens: limits.tokens,
            tokens,
            expires_at: window_expiry(minute),
        })
        .collect();
    let in_store = StoreWindows(store);
    let windows = windows_of(store, &in_store);
    let results = windows.admit_each(admissions).await;
    let mut status = RateStatus::default();
    let mut admitted = Vec::new();
    let mut refusal = None;
    let mut failure = None;
    for (((pk, limits), key), result) in scopes.iter().zip(keys).zip(results) {
        match result {
            Ok(WindowOutcome::Admitted(counts)) => {
                status.merge(&status_of(*limits, counts, reset_secs));
                admitted.push(key);
            }
            Ok(WindowOutcome::Full(counts)) => {
                if refusal.is_none() {
                    let what = match limits.requests {
                        Some(max) if counts.requests >= max => format!("{max} requests per minute"),
                        _ => format!("{} tokens per minute", limits.tokens.unwrap_or(0)),
                    };
                    refusal = Some((status_of(*limits, counts, reset_secs), what, pk.clone()));
                }
            }
            Err(e) => failure = Some(e),
        }
    }
    if refusal.is_some() || failure.is_some() {
        // Give back what the other scope admitted (see the module's comment).
        for key in &admitted {
            windows.give_back(key, tokens).await;
        }
    }
    if let Some(e) = failure {
        return Err(AcquireError::Store(e));
    }
    if let Some((s, what, pk)) = refusal {
        status.merge(&s);
        let scope = if crate::domain::table_keys::is_holder_rate_scope(&pk) {
            "this API key"
        } else {
            "the organization"
        };
        return Err(AcquireError::Limited(RateLimited {
            status,
            retry_after_secs: reset_secs,
            message: format!("Rate limit reached for {scope}: {what}. Retry after {reset_secs} s."),
        }));
    }
    Ok(Grant {
        windows: admitted,
        reserved_tokens: tokens,
        expires_at: window_expiry(minute),
        status,
    })
}

/// The windows of `store`'s host: its own where it keeps them outside the store, else
/// `in_store`, the same store's items.
fn windows_of<'a>(store: &'a dyn ItemStore, in_store: &'a StoreWindows<'a>) -> &'a dyn RateWindows {
    store.rate_windows().unwrap_or(in_store)
}

/// Replaces a grant's token estimate with the real count, in the window it was taken from; for
/// a request that ends without a charge (the charge carries [`settlement_ops`] instead).
pub async fn settle(store: &dyn ItemStore, grant: &Grant, used_tokens: u64) {
    let Some(delta) = grant.delta(used_tokens) else {
        return;
    };
    let in_store = StoreWindows(store);
    let windows = windows_of(store, &in_store);
    for key in &grant.windows {
        windows.settle(key, delta).await;
    }
}

impl Grant {
    /// The real count minus the estimate; None when there is nothing to settle.
    fn delta(&self, used_tokens: u64) -> Option<i64> {
        if self.windows.is_empty() || used_tokens == self.reserved_tokens {
            return None;
        }
        Some(used_tokens as i64 - self.reserved_tokens as i64)
    }
}

/// A grant's settlement, carried by its charge so that settling costs no round trip of its own:
/// written in the charge's transaction where the windows are items of the store, else applied
/// in memory once the charge has committed (see [`RateWindows::settlement_write`]).
#[derive(Clone, Debug, Default)]
pub struct RateSettlement {
    windows: Vec<Key>,
    delta: i64,
    expires_at: i64,
}

/// The settlement of `grant` at `used_tokens`, for its charge.
pub fn settlement_ops(grant: &Grant, used_tokens: u64) -> RateSettlement {
    match grant.delta(used_tokens) {
        Some(delta) => RateSettlement {
            windows: grant.windows.clone(),
            delta,
            expires_at: grant.expires_at,
        },
        None => RateSettlement::default(),
    }
}

impl RateSettlement {
    /// The writes that join the charge's transaction (none where the windows are not items of
    /// `store`).
    pub fn writes(&self, store: &dyn ItemStore) -> Vec<TransactOp> {
        let in_store = StoreWindows(store);
        let windows = windows_of(store, &in_store);
        self.windows
            .iter()
            .filter_map(|key| windows.settlement_write(key, self.delta, self.expires_at))
            .collect()
    }

    /// After the charge committed: settles what [`RateSettlement::writes`] did not write.
    pub async fn after_charge(&self, store: &dyn ItemStore) {
        if let Some(windows) = store.rate_windows() {
            for key in &self.windows {
                if windows
                    .settlement_write(key, self.delta, self.expires_at)
                    .is_none()
                {
                    windows.settle(key, self.delta).await;
                }
            }
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AcquireError {
    #[error("{}", .0.message)]
    Limited(RateLimited),
    #[error("the rate-limit store failed: {0}")]
    Store(StoreError),
}

/// What the caller is told of one window's counts.
fn status_of(limits: Limits, counts: WindowCounts, reset_secs: u64) -> RateStatus {
    RateStatus {
        requests: limits.requests.map(|limit| Remaining {
            limit,
            remaining: limit.saturating_sub(counts.requests),
            reset_secs,
        }),
        tokens: limits.tokens.map(|limit| Remaining {
            limit,
            remaining: limit.saturating_sub(counts.tokens),
            reset_secs,
        }),
    }
}
