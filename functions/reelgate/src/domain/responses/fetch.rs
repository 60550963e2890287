//! Fetching an `input_file.file_url` for the model. The service fetches the URL itself (so a PDF
//! can be rasterized like an uploaded one), which makes it a server-side request on the caller's
//! behalf: it goes through the guarded [`Fetcher`] (public addresses only unless the operator
//! allows more with `REELGATE_FETCH_ALLOW`, pinned connection, redirects re-checked, a size cap
//! while streaming, one timeout). The caller learns only that the URL was refused, unreachable or
//! too large, never what a private host answered.

use crate::domain::error::{ApiError, ApiResult};
use crate::ports::fetch::{FetchError, Fetched, Fetcher};
use std::sync::atomic::{AtomicU64, Ordering};

/// Largest fetched file.
pub const MAX_FETCH_BYTES: usize = 50 * 1024 * 1024;
/// The most all the URLs of one request may bring together (a request naming many large URLs
/// would otherwise hold each one's bytes at once).
pub const MAX_REQUEST_FETCH_BYTES: u64 = MAX_FETCH_BYTES as u64;

/// One request's fetches through `inner`, together at most `limit` bytes: each fetch may read
/// only what the earlier ones left.
pub struct RequestFetches<'a> {
    inner: &'a dyn Fetcher,
    limit: u64,
    used: AtomicU64,
}

impl<'a> RequestFetches<'a> {
    pub fn new(inner: &'a dyn Fetcher, limit: u64) -> Self {
        RequestFetches {
            inner,
            limit,
            used: AtomicU64::new(0),
        }
    }
}

#[async_trait::async_trait]
impl Fetcher for RequestFetches<'_> {
    async fn fetch(&self, url: &str, max_bytes: u64) -> Result<Fetched, FetchError> {
        let left = self.limit.saturating_sub(self.used.load(Ordering::SeqCst));
        if left == 0 {
            return Err(FetchError::OverRequestBudget(self.limit));
        }
        match self.inner.fetch(url, max_bytes.min(left)).await {
            Ok(fetched) => {
                let total = self
                    .used
                    .fetch_add(fetched.bytes.len() as u64, Ordering::SeqCst)
                    + fetched.bytes.len() as u64;
                if total > self.limit {
                    return Err(FetchError::OverRequestBudget(self.limit));
                }
                Ok(fetched)
            }
            // Cut short by what the request had left, not by the file's own limit.
            Err(FetchError::TooLarge(_)) if left < max_bytes => {
                Err(FetchError::OverRequestBudget(self.limit))
            }
            Err(e) => Err(e),
        }
    }

    async fn post(
        &self,
        url: &str,
        headers: &[(&str, String)],
        body: Vec<u8>,
    ) -> Result<u16, FetchError> {
        self.inner.post(url, headers, body).await
    }

    async fn check(&self, url: &str) -> Result<(), FetchError> {
        self.inner.check(url).await
    }
}

/// Downloads `url` for the model through `fetcher`; failures are 400s naming `param`.
pub async fn fetch(fetcher: &dyn Fetcher, url: &str, param: &str) -> ApiResult<Vec<u8>> {
    match fetcher.fetch(url, MAX_FETCH_BYTES as u64).await {
        Ok(fetched) => Ok(fetched.bytes),
        Err(e) => Err(fetch_refusal(param, &e)),
    }
}

/// The 400 a failed fetch becomes: `url_refused` for an address the service does not fetch
/// from, `invalid_request_error` for a file over the limit, `url_unreachable` otherwise; the message is the port's own sentence.
pub fn fetch_refusal(param: &str, e: &FetchError) -> ApiError {
    let code = match e {
        FetchError::Refused | FetchError::BadUrl => "url_refused",
        FetchError::TooLarge(_) | FetchError::OverRequestBudget(_) => "invalid_request_error",
        _ => "url_unreachable",
    };
    ApiError::new(
        crate::domain::error::ErrorKind::InvalidRequest,
        code,
        format!("{param}: {e}."),
    )
    .with_param(param)
}
