//! Bounded memory for buffered request bodies. JSON routes read their whole body (up to
//! `max_json_bytes`, 32 MiB) before parsing; one such body is fine, a hundred at once are not.
//! Every request that carries a large body to a buffering route first takes its size (by
//! `Content-Length`, or the route limit when it is chunked) from a process-wide budget and gives
//! it back when its handler has answered; requests beyond the budget wait their turn. Streaming
//! routes (`POST /v1/files`, the signed blob route) never buffer a body and are not counted.
//!
//! There are two budgets, so that no client without a credential can delay a tenant: a request
//! whose API key or console session verifies draws from [`BUFFERED_BODY_BUDGET`]; any other
//! draws from [`ANONYMOUS_BODY_BUDGET`]. An `/v1/` request with a large body and no credential
//! that verifies is refused (401) before a byte of its body is read.
//!
//! The tenants' budget is shared: one organization holds at most its share of it (the larger of
//! half the budget and one largest body), so another's body always finds room however slowly the
//! first one's bodies trickle in. A body that finds no room within `REELGATE_BODY_WAIT_SECS` is
//! answered 503 `server_busy` with `Retry-After`, in words, instead of being held.

use crate::app::App;
use crate::domain::error::ApiError;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

const MIB: u64 = 1024 * 1024;

/// Bodies shorter than this (by `Content-Length`) are not counted against the budget.
pub const SMALL_BODY: u64 = 256 * 1024;

/// Bytes of authenticated request bodies that may be buffered at once, over all connections.
pub const BUFFERED_BODY_BUDGET: u64 = 48 * MIB;

/// Bytes of bodies without a verified credential that may be buffered at once.
pub const ANONYMOUS_BODY_BUDGET: u64 = 8 * MIB;

/// What a multipart form may add around the file it carries (boundaries, part headers, the
/// `purpose` field).
const MULTIPART_ROOM: u64 = 64 * 1024;

/// Tenants whose share is tracked at once; past it, the idle ones are forgotten.
const TRACKED_TENANTS: usize = 1024;

/// The process-wide budgets, in MiB permits.
#[derive(Clone)]
pub struct BodyBudget {
    tenants: Pool,
    anonymous: Pool,
    max_request_bytes: u64,
    wait: Duration,
}

#[derive(Clone)]
struct Pool {
    permits: Arc<Semaphore>,
    /// The largest single body of this pool, in MiB (rounded up, at most the pool).
    max_request_mib: u32,
    /// The most one tenant may hold at once, in MiB.
    share: u32,
    /// Each tenant's share, as permits of its own.
    shares: Arc<Mutex<HashMap<String, Arc<Semaphore>>>>,
}

/// What a body holds while its handler runs: its MiB of the pool and of its tenant's share.
struct Held {
    _pool: OwnedSemaphorePermit,
    _share: Option<OwnedSemaphorePermit>,
}

impl Pool {
    fn new(budget: u64, max_request_bytes: usize) -> Pool {
        let budget = (budget / MIB) as usize;
        let max_request_mib = (max_request_bytes as u64)
            .div_ceil(MIB)
            .clamp(1, budget as u64) as u32;
        Pool {
            permits: Arc::new(Semaphore::new(budget)),
            max_request_mib,
            share: max_request_mib.max((budget / 2) as u32),
            shares: Arc::default(),
        }
    }

    fn share_of(&self, tenant: &str) -> Arc<Semaphore> {
        let mut shares = self.shares.lock().unwrap_or_else(|e| e.into_inner());
        if shares.len() >= TRACKED_TENANTS && !shares.contains_key(tenant) {
            let whole = self.share as usize;
            shares.retain(|_, s| s.available_permits() < whole);
        }
        shares
            .entry(tenant.to_owned())
            .or_insert_with(|| Arc::new(Semaphore::new(self.share as usize)))
            .clone()
    }

    /// `mib` of the pool for `tenant` (of its share first), waiting at most `wait`; `None`
    /// when the wait ran out.
    async fn take(&self, tenant: Option<&str>, mib: u32, wait: Duration) -> Option<Held> {
        let deadline = Instant::now() + wait;
        let share = match tenant {
            Some(t) => {
                let share = self.share_of(t);
                let taken = tokio::time::timeout(wait, share.acquire_many_owned(mib)).await;
                Some(taken.ok()?.ok()?)
            }
            None => None,
        };
        let rest = deadline.saturating_duration_since(Instant::now());
        let pool = tokio::time::timeout(rest, self.permits.clone().acquire_many_owned(mib)).await;
        Some(Held {
            _pool: pool.ok()?.ok()?,
            _share: share,
        })
    }

    fn mib(&self, length: Option<u64>) -> u32 {
        match length {
            Some(n) => (n.div_ceil(MIB).max(1) as u32).min(self.max_request_mib),
            None => self.max_request_mib,
        }
    }
}

impl BodyBudget {
    pub fn new(max_request_bytes: usize, wait: Duration) -> Self {
        BodyBudget {
            tenants: Pool::new(BUFFERED_BODY_BUDGET, max_request_bytes),
            anonymous: Pool::new(ANONYMOUS_BODY_BUDGET, max_request_bytes),
            max_request_bytes: max_request_bytes as u64,
            wait,
        }
    }
}

/// Routes whose bodies are streamed, not buffered.
fn streams_its_body(request: &Request) -> bool {
    let upload = &crate::api::files::CREATE_FILE;
    request.method().as_str() == upload.method && request.uri().path() == upload.path
}

/// The organization of the API key or console session the request carries, when it verifies
/// now. Only asked for large bodies, so the second verification (the handler's own) costs
/// nothing that matters.
async fn verified_tenant(app: &App, headers: &HeaderMap) -> Option<String> {
    if let Some(token) = crate::api::extract::bearer_token(headers)
        // `x-api-key` is the Messages API's header for the same keys.
        .or_else(|| headers.get("x-api-key").and_then(|v| v.to_str().ok()))
    {
        return match app.accounts().authenticate(token.trim()).await {
            Ok(Some(caller)) => Some(caller.org),
            _ => None,
        };
    }
    if let Some(secret) = crate::api::console::session_secret(headers) {
        return match crate::domain::accounts::console::Console::new(app.store.as_ref())
            .session(secret)
            .await
        {
            Ok(Some(session)) => Some(session.caller.org),
            _ => None,
        };
    }
    None
}

pub async fn body_budget(
    State((app, budget)): State<(App, BodyBudget)>,
    request: Request,
    next: Next,
) -> Response {
    if matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::DELETE | Method::OPTIONS
    ) {
        return next.run(request).await;
    }
    let length = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    match length {
        // Small bodies (every ordinary API call) are not counted: they cannot add up to much,
        // and a slow client must not be able to hold the budget with a tiny request.
        Some(n) if n < SMALL_BODY => return next.run(request).await,
        // Over the route limit: refused now, before a byte is read. (The extractors' limit only
        // refuses once it has read that much, so a dozen such bodies at once would each hold
        // the limit in memory first, outside the budget.)
        Some(n) if n > budget.max_request_bytes && !streams_its_body(&request) => {
            return crate::api::extract::too_large().into_response()
        }
        // An upload declaring more than a file may hold (with room for the multipart form
        // around it) would only end at the store's limit, after that much was read.
        Some(n)
            if streams_its_body(&request)
                && n > app.settings.max_upload_bytes.saturating_add(MULTIPART_ROOM) =>
        {
            return ApiError::new(
                crate::domain::error::ErrorKind::TooLarge,
                "file_too_large",
                format!(
                    "Files are accepted up to {} bytes; this upload declares {n}. Larger files \
                     use the direct upload flow.",
                    app.settings.max_upload_bytes
                ),
            )
            .with_param("file")
            .into_response();
        }
        _ => {}
    }
    let tenant = verified_tenant(&app, request.headers()).await;
    if tenant.is_none() && request.uri().path().starts_with("/v1/") {
        // Every /v1 route wants a credential: say so before reading a large body.
        return ApiError::unauthorized(
            "invalid_api_key",
            "A valid API key is required before a request body this large is read. Send it in \
             the header `Authorization: Bearer <API_KEY>`.",
        )
        .into_response();
    }
    if streams_its_body(&request) {
        return next.run(request).await;
    }
    let pool = if tenant.is_some() {
        &budget.tenants
    } else {
        &budget.anonymous
    };
    let mib = pool.mib(length);
    // Held until the handler has answered.
    let Some(_held) = pool.take(tenant.as_deref(), mib, budget.wait).await else {
        return busy(budget.wait);
    };
    next.run(request).await
}

/// No room for the body within the wait: said in words, and the connection closed, since the
/// body was never read.
fn busy(waited: Duration) -> Response {
    let mut response = ApiError::unavailable(
        "server_busy",
        format!(
            "The service is receiving too many large request bodies at once (organizations are \
             served in turn); no room was free for this one within {} s. Try again shortly.",
            waited.as_secs()
        ),
    )
    .into_response();
    let headers = response.headers_mut();
    headers.insert(header::RETRY_AFTER, header::HeaderValue::from_static("2"));
    headers.insert(
        header::CONNECTION,
        header::HeaderValue::from_static("close"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_tenant_holds_at_most_its_share_and_another_still_finds_room() {
        let pool = Pool::new(BUFFERED_BODY_BUDGET, 32 * MIB as usize);
        assert_eq!(pool.share, 32);
        let wait = Duration::from_millis(50);
        let first = pool.take(Some("org_a"), 24, wait).await.expect("room");
        // The second 24 MiB body of the same tenant would pass its share: it waits, then is busy.
        assert!(pool.take(Some("org_a"), 24, wait).await.is_none());
        // Another tenant's body finds the rest of the budget at once.
        let other = pool
            .take(Some("org_b"), 16, wait)
            .await
            .expect("room for org_b");
        drop(first);
        assert!(pool.take(Some("org_a"), 24, wait).await.is_some());
        drop(other);
    }

    #[tokio::test]
    async fn a_wait_that_outlasts_its_deadline_gives_back_the_share_it_took() {
        let pool = Pool::new(BUFFERED_BODY_BUDGET, 32 * MIB as usize);
        let wait = Duration::from_millis(50);
        let _a = pool.take(Some("org_a"), 32, wait).await.expect("room");
        let _b = pool.take(Some("org_b"), 16, wait).await.expect("room");
        // The pool is full: org_c's share is free but the pool is not, and nothing stays held.
        assert!(pool.take(Some("org_c"), 8, wait).await.is_none());
        assert_eq!(pool.share_of("org_c").available_permits(), 32);
    }
}
