//! Fetching a URL a caller can influence (a `file_url`, an image or video part the upstream
//! cannot take by URL) and posting to one (a webhook endpoint). Every such fetch in the service goes through one [`Fetcher`]; the guarded
//! implementation (`crate::adapters::guarded_fetch`) refuses private, loopback, link-local and
//! metadata addresses, pins the connection to the address it checked, follows redirects only
//! through the same check, and stops at a byte limit while streaming.

use async_trait::async_trait;

/// What a fetch brought back.
#[derive(Debug, Clone)]
pub struct Fetched {
    pub bytes: Vec<u8>,
    /// The `Content-Type` the server sent, if any.
    pub content_type: Option<String>,
}

/// Why a fetch gave nothing. The messages are what a caller may see: they say the URL was
/// refused or unreachable, never what a refused or private host answered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    #[error("the URL is not an absolute http or https URL")]
    BadUrl,
    #[error(
        "the URL was refused: it points to a private, loopback, link-local or metadata address"
    )]
    Refused,
    #[error("the URL is unreachable")]
    Unreachable,
    #[error("the URL did not answer in time")]
    Timeout,
    #[error("the URL answered HTTP {0}")]
    Status(u16),
    #[error("the URL redirected too many times")]
    TooManyRedirects,
    #[error("the file at the URL is larger than {0} bytes")]
    TooLarge(u64),
    /// The request's URLs together passed what one request may fetch.
    #[error(
        "the request's URLs together are larger than {0} bytes, the most one request may fetch"
    )]
    OverRequestBudget(u64),
}

#[async_trait]
pub trait Fetcher: Send + Sync {
    /// GETs `url` (following redirects through the same checks), reading at most `max_bytes`.
    async fn fetch(&self, url: &str, max_bytes: u64) -> Result<Fetched, FetchError>;
    /// [`Fetcher::fetch`] without collecting the body (an engine's output on its way to the blob
    /// store): the stream ends in an error once more than `max_bytes` have arrived or the
    /// fetch's time runs out. This default fetches the body whole first; the guarded fetcher
    /// streams.
    async fn fetch_stream(
        &self,
        url: &str,
        max_bytes: u64,
    ) -> Result<crate::ports::blobs::ByteStream, FetchError> {
        let fetched = self.fetch(url, max_bytes).await?;
        Ok(crate::ports::blobs::stream_of(fetched.bytes.into()))
    }
    /// POSTs `body` with `headers` to `url` (a webhook delivery) through the same address
    /// checks and returns the answer's status. Redirects are not followed: the 3xx status is
    /// the answer. The answer's body is not read.
    async fn post(
        &self,
        url: &str,
        headers: &[(&str, String)],
        body: Vec<u8>,
    ) -> Result<u16, FetchError>;
    /// Whether `url` may be reached now (an http or https URL whose host resolves only to
    /// permitted addresses), without requesting it: endpoints are checked when registered.
    async fn check(&self, url: &str) -> Result<(), FetchError>;
}
