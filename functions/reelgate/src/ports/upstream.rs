//! The upstream-model port. Internally every text-model call is an OpenAI chat-completions
//! request body (`serde_json::Value`, already validated, `model` set to the upstream's own name);
//! replies are `chat.completion` objects or, streamed, `chat.completion.chunk` objects. Adapters
//! translate for providers that speak something else (Bedrock Converse); the responses API bridges
//! onto the same shape.

use async_trait::async_trait;
use futures::stream::BoxStream;
use serde_json::Value;

pub type ChunkStream = BoxStream<'static, Result<Value, UpstreamError>>;

#[derive(Debug, Clone, thiserror::Error)]
pub enum UpstreamError {
    /// Could not connect, or the connection broke before a reply.
    #[error("the upstream is unreachable: {0}")]
    Unreachable(String),
    /// The upstream answered with an error status.
    #[error("the upstream refused the request ({status}): {message}")]
    Rejected {
        status: u16,
        code: Option<String>,
        message: String,
        /// Seconds the upstream asked us to wait (`Retry-After`), when it said.
        retry_after: Option<u64>,
    },
    /// The upstream answered something that is not the protocol.
    #[error("the upstream answered outside the protocol: {0}")]
    Protocol(String),
    /// The request names something the caller must fix, found by the adapter before the
    /// upstream saw anything (a media URL the guarded fetcher refuses): a 400 naming `param`,
    /// not an upstream failure.
    #[error("the request is invalid ({param}): {message}")]
    InvalidRequest {
        param: String,
        code: String,
        message: String,
    },
}

impl UpstreamError {
    /// Whether another deployment of the same model may succeed where this one failed: it could
    /// not be reached, was rate limited, failed on its side (5xx) or timed out.
    pub fn is_retryable(&self) -> bool {
        match self {
            UpstreamError::Unreachable(_) => true,
            UpstreamError::Rejected { status, .. } => matches!(status, 408 | 429) || *status >= 500,
            UpstreamError::Protocol(_) | UpstreamError::InvalidRequest { .. } => false,
        }
    }
}

#[async_trait]
pub trait ChatUpstream: Send + Sync + 'static {
    /// A non-streamed completion: returns a `chat.completion` object.
    async fn complete(&self, request: Value) -> Result<Value, UpstreamError>;
    /// A streamed completion: returns `chat.completion.chunk` objects as they arrive.
    /// Dropping the stream cancels the upstream request.
    async fn stream(&self, request: Value) -> Result<ChunkStream, UpstreamError>;
}
