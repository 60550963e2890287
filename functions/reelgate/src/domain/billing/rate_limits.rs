//! Rate limits per API key and per organization: requests and tokens per minute for chat and
//! responses, video creates per minute.
//!
//! The algorithm is a fixed one-minute window per scope and kind: one store item per window
//! (`RATE#<org>[#KEY#<key>]`, `<kind>#<minute>`) holding the requests and tokens admitted in it.
//! Admission is one conditional update per limited scope — `ADD requests 1, tokens estimate` only
//! if both stay within their limits — so the count is exact under any concurrency (the store
//! serializes conditional writes on one item) and costs one round trip: the key's and the
//! organization's updates go in one [`ItemStore::update_each`] call (one commit on the embedded
//! store, two concurrent writes on DynamoDB). When one scope admits and the other refuses,
//! the admitted unit is given back by a second write; until then a concurrent request near that
//! limit may be refused, never wrongly admitted. A fixed window lets a caller use its limit at the
//! end of one minute and again at the start of the next: at most twice the limit in any 60 s.
//!
//! Tokens are reserved at admission as an estimate (the prompt's estimate plus the request's
//! `max_completion_tokens`/`max_output_tokens`, else [`DEFAULT_COMPLETION_ESTIMATE`]) and settled
//! with the real count once the upstream has answered.

use crate::domain::accounts::Caller;
use crate::domain::catalog::{Plan, RateLimits};
use crate::ports::store::{
    now_secs, Attr, Condition, ConditionalUpdate, Item, ItemExt, ItemStore, Key, StoreError,
    TransactOp, Update,
};
use rust_decimal::Decimal;

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

fn count(n: u64) -> Attr {
    Attr::N(Decimal::from(n))
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
    // Both scopes in one store call: one commit locally, concurrent writes on DynamoDB.
    let keys: Vec<Key> = scopes
        .iter()
        .map(|(pk, _)| window_key(pk, kind, minute))
        .collect();
    let attempts = keys
        .iter()
        .zip(&scopes)
        .map(|(key, (_, limits))| admission(key.clone(), *limits, tokens, minute))
        .collect();
    let written = store.update_each(attempts).await;
    let results = futures::future::join_all(keys.iter().zip(&scopes).zip(written).map(
        |((key, (_, limits)), outcome)| window_outcome(store, key, *limits, reset_secs, outcome),
    ))
    .await;
    let mut status = RateStatus::default();
    let mut admitted = Vec::new();
    let mut refusal = None;
    let mut failure = None;
    for ((pk, _), result) in scopes.iter().zip(results) {
        match result {
            Ok(s) => {
                status.merge(&s);
                admitted.push(window_key(pk, kind, minute));
            }
            Err(WindowError::Full(s, what)) => {
                if refusal.is_none() {
                    refusal = Some((s, what, pk.clone()));
                }
            }
            Err(WindowError::Store(e)) => failure = Some(e),
        }
    }
    if refusal.is_some() || failure.is_some() {
        // Give back what the other scope admitted (see the module's comment).
        for key in &admitted {
            let undo = Update::new()
                .add("requests", Decimal::NEGATIVE_ONE)
                .add("tokens", -Decimal::from(tokens));
            if let Err(e) = store.update(key, undo, None).await {
                tracing::warn!(error = %e, "giving back a rate-limit unit failed");
            }
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

/// Replaces a grant's token estimate with the real count, in the window it was taken from; for
/// a request that ends without a charge (the charge carries [`settlement_ops`] instead).
pub async fn settle(store: &dyn ItemStore, grant: &Grant, used_tokens: u64) {
    if grant.windows.is_empty() || used_tokens == grant.reserved_tokens {
        return;
    }
    let delta = Decimal::from(used_tokens) - Decimal::from(grant.reserved_tokens);
    for key in &grant.windows {
        // Only an existing window: a refund must not recreate a window that already expired.
        let cond = Condition::AttrExists("requests".into());
        match store
            .update(key, Update::new().add("tokens", delta), Some(cond))
            .await
        {
            Ok(_) | Err(StoreError::ConditionFailed) => {}
            Err(e) => tracing::warn!(error = %e, "settling rate-limit tokens failed"),
        }
    }
}

/// The settlement of a grant as writes to join a charge's transaction, so that settling costs
/// no round trip of its own. They carry no condition (a condition failing would cancel the
/// charge): a window that already expired is recreated with the same past expiry and is never
/// read again, since only the current minute's window admits.
pub fn settlement_ops(grant: &Grant, used_tokens: u64) -> Vec<TransactOp> {
    if used_tokens == grant.reserved_tokens {
        return Vec::new();
    }
    let delta = Decimal::from(used_tokens) - Decimal::from(grant.reserved_tokens);
    grant
        .windows
        .iter()
        .map(|key| TransactOp::Update {
            key: key.clone(),
            update: Update::new()
                .add("tokens", delta)
                .set(crate::ports::store::EXPIRES_AT, grant.expires_at),
            condition: None,
        })
        .collect()
}

#[derive(Debug, thiserror::Error)]
pub enum AcquireError {
    #[error("{}", .0.message)]
    Limited(RateLimited),
    #[error("the rate-limit store failed: {0}")]
    Store(StoreError),
}

enum WindowError {
    Full(RateStatus, String),
    Store(StoreError),
}

/// The conditional write that admits one request into a window: `ADD requests 1, tokens
/// estimate` only if both stay within their limits.
fn admission(key: Key, limits: Limits, tokens: u64, minute: i64) -> ConditionalUpdate {
    let mut conditions = Vec::new();
    if let Some(max) = limits.requests {
        conditions.push(Condition::Or(vec![
            Condition::AttrNotExists("requests".into()),
            Condition::Lt("requests".into(), count(max)),
        ]));
    }
    if let Some(max) = limits.tokens {
        conditions.push(Condition::Or(vec![
            Condition::AttrNotExists("tokens".into()),
            Condition::Le("tokens".into(), count(max - tokens)),
        ]));
    }
    ConditionalUpdate {
        key,
        update: Update::new()
            .add("requests", Decimal::ONE)
            .add("tokens", Decimal::from(tokens))
            .set(crate::ports::store::EXPIRES_AT, window_expiry(minute)),
        condition: Some(Condition::And(conditions)),
    }
}

/// What one window's admission write says: the remaining counts, or which limit is reached.
async fn window_outcome(
    store: &dyn ItemStore,
    key: &Key,
    limits: Limits,
    reset_secs: u64,
    outcome: Result<Item, StoreError>,
) -> Result<RateStatus, WindowError> {
    let status_of = |requests: u64, used_tokens: u64| RateStatus {
        requests: limits.requests.map(|limit| Remaining {
            limit,
            remaining: limit.saturating_sub(requests),
            reset_secs,
        }),
        tokens: limits.tokens.map(|limit| Remaining {
            limit,
            remaining: limit.saturating_sub(used_tokens),
            reset_secs,
        }),
    };
    match outcome {
        Ok(item) => Ok(status_of(
            item.i64_attr("requests").unwrap_or(0).max(0) as u64,
            item.i64_attr("tokens").unwrap_or(0).max(0) as u64,
        )),
        Err(StoreError::ConditionFailed) => {
            // Off the hot path: read the window to say which limit is reached.
            let current = store.get(key).await.map_err(WindowError::Store)?;
            let requests = current
                .as_ref()
                .and_then(|i| i.i64_attr("requests"))
                .unwrap_or(0)
                .max(0) as u64;
            let used = current
                .as_ref()
                .and_then(|i| i.i64_attr("tokens"))
                .unwrap_or(0)
                .max(0) as u64;
            let what = match limits.requests {
                Some(max) if requests >= max => format!("{max} requests per minute"),
                _ => format!("{} tokens per minute", limits.tokens.unwrap_or(0)),
            };
            Err(WindowError::Full(status_of(requests, used), what))
        }
        Err(e) => Err(WindowError::Store(e)),
    }
}
