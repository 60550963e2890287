//! Bounded memory for buffered request bodies. JSON routes read their whole body (up to
//! `max_json_bytes`, 32 MiB) before parsing; one such body is fine, a hundred at once are not.
//! Every request that carries a body to a buffering route first takes its size (by
//! `Content-Length`, or the route limit when it is chunked) from one process-wide budget of
//! [`BUFFERED_BODY_BUDGET`] bytes and gives it back when its handler has answered; requests
//! beyond the budget wait their turn. Streaming routes (`POST /v1/files`, the signed blob route)
//! never buffer a body and are not counted.

use axum::extract::{Request, State};
use axum::http::{header, Method};
use axum::middleware::Next;
use axum::response::Response;
use std::sync::Arc;
use tokio::sync::Semaphore;

const MIB: u64 = 1024 * 1024;

/// Bodies shorter than this (by `Content-Length`) are not counted against the budget.
pub const SMALL_BODY: u64 = 256 * 1024;

/// Bytes of request bodies that may be buffered at once, over all connections.
pub const BUFFERED_BODY_BUDGET: u64 = 48 * MIB;

/// The process-wide budget, in MiB permits.
#[derive(Clone)]
pub struct BodyBudget {
    permits: Arc<Semaphore>,
    /// The largest single body a buffering route takes, in MiB (rounded up).
    max_request_mib: u32,
    max_request_bytes: u64,
}

impl BodyBudget {
    pub fn new(max_request_bytes: usize) -> Self {
        let budget = (BUFFERED_BODY_BUDGET / MIB) as usize;
        let max_request_mib = (max_request_bytes as u64)
            .div_ceil(MIB)
            .clamp(1, budget as u64);
        BodyBudget {
            permits: Arc::new(Semaphore::new(budget)),
            max_request_mib: max_request_mib as u32,
            max_request_bytes: max_request_bytes as u64,
        }
    }
}

/// Routes whose bodies are streamed, not buffered.
fn streams_its_body(request: &Request) -> bool {
    request.method() == Method::POST && request.uri().path() == "/v1/files"
}

pub async fn body_budget(
    State(budget): State<BodyBudget>,
    request: Request,
    next: Next,
) -> Response {
    if matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::DELETE | Method::OPTIONS
    ) || streams_its_body(&request)
    {
        return next.run(request).await;
    }
    let length = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let mib = match length {
        // Small bodies (every ordinary API call) are not counted: they cannot add up to much,
        // and a slow client must not be able to hold the budget with a tiny request.
        Some(n) if n < SMALL_BODY => return next.run(request).await,
        // Over the route limit: refused by the body limit before anything is buffered.
        Some(n) if n > budget.max_request_bytes => return next.run(request).await,
        Some(n) => n.div_ceil(MIB).max(1) as u32,
        None => budget.max_request_mib,
    };
    // Held until the handler has answered (the semaphore is never closed, so this waits).
    let _permit = budget.permits.clone().acquire_many_owned(mib).await.ok();
    next.run(request).await
}
