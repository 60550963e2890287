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

use crate::app::App;
use crate::domain::error::ApiError;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use tokio::sync::Semaphore;

const MIB: u64 = 1024 * 1024;

/// Bodies shorter than this (by `Content-Length`) are not counted against the budget.
pub const SMALL_BODY: u64 = 256 * 1024;

/// Bytes of authenticated request bodies that may be buffered at once, over all connections.
pub const BUFFERED_BODY_BUDGET: u64 = 48 * MIB;

/// Bytes of bodies without a verified credential that may be buffered at once.
pub const ANONYMOUS_BODY_BUDGET: u64 = 8 * MIB;

/// The process-wide budgets, in MiB permits.
#[derive(Clone)]
pub struct BodyBudget {
    tenants: Pool,
    anonymous: Pool,
    max_request_bytes: u64,
}

#[derive(Clone)]
struct Pool {
    permits: Arc<Semaphore>,
    /// The largest single body of this pool, in MiB (rounded up, at most the pool).
    max_request_mib: u32,
}

impl Pool {
    fn new(budget: u64, max_request_bytes: usize) -> Pool {
        let budget = (budget / MIB) as usize;
        Pool {
            permits: Arc::new(Semaphore::new(budget)),
            max_request_mib: (max_request_bytes as u64)
                .div_ceil(MIB)
                .clamp(1, budget as u64) as u32,
        }
    }

    fn mib(&self, length: Option<u64>) -> u32 {
        match length {
            Some(n) => (n.div_ceil(MIB).max(1) as u32).min(self.max_request_mib),
            None => self.max_request_mib,
        }
    }
}

impl BodyBudget {
    pub fn new(max_request_bytes: usize) -> Self {
        BodyBudget {
            tenants: Pool::new(BUFFERED_BODY_BUDGET, max_request_bytes),
            anonymous: Pool::new(ANONYMOUS_BODY_BUDGET, max_request_bytes),
            max_request_bytes: max_request_bytes as u64,
        }
    }
}

/// Routes whose bodies are streamed, not buffered.
fn streams_its_body(request: &Request) -> bool {
    request.method() == Method::POST && request.uri().path() == "/v1/files"
}

/// Whether the request carries an API key or a console session that verifies now. Only asked
/// for large bodies, so the second verification (the handler's own) costs nothing that matters.
async fn credential_verifies(app: &App, headers: &HeaderMap) -> bool {
    if let Some(token) = crate::api::extract::bearer_token(headers)
        // `x-api-key` is the Messages API's header for the same keys.
        .or_else(|| headers.get("x-api-key").and_then(|v| v.to_str().ok()))
    {
        return matches!(app.accounts().authenticate(token.trim()).await, Ok(Some(_)));
    }
    if let Some(secret) = crate::api::console::session_secret(headers) {
        return matches!(
            crate::domain::accounts::console::Console::new(app.store.as_ref())
                .session(secret)
                .await,
            Ok(Some(_))
        );
    }
    false
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
        _ => {}
    }
    let authenticated = credential_verifies(&app, request.headers()).await;
    if !authenticated && request.uri().path().starts_with("/v1/") {
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
    let pool = if authenticated {
        &budget.tenants
    } else {
        &budget.anonymous
    };
    let mib = pool.mib(length);
    // Held until the handler has answered (the semaphore is never closed, so this waits).
    let _permit = pool.permits.clone().acquire_many_owned(mib).await.ok();
    next.run(request).await
}
