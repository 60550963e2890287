//! Fetching an `input_file.file_url` for the model. The service fetches the URL itself (so a PDF
//! can be rasterized like an uploaded one), which makes it a server-side request on the caller's
//! behalf: it goes through the guarded [`Fetcher`] (public addresses only unless the operator
//! allows more with `REELGATE_FETCH_ALLOW`, pinned connection, redirects re-checked, a size cap
//! while streaming, one timeout). The caller learns only that the URL was refused, unreachable or
//! too large, never what a private host answered.

use crate::domain::error::{ApiError, ApiResult};
use crate::ports::fetch::{FetchError, Fetcher};

/// Largest fetched file.
pub const MAX_FETCH_BYTES: usize = 50 * 1024 * 1024;

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
        FetchError::TooLarge(_) => "invalid_request_error",
        _ => "url_unreachable",
    };
    ApiError::new(
        crate::domain::error::ErrorKind::InvalidRequest,
        code,
        format!("{param}: {e}."),
    )
    .with_param(param)
}
