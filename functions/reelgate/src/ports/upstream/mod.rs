//! The upstream-model port. Internally every text-model call is an OpenAI chat-completions
//! request ([`request::ChatCompletionRequest`], already validated, `model` set to the upstream's
//! own name); replies are a [`Completion`] or, streamed, [`CompletionChunk`]s. Adapters
//! translate for providers that speak something else (Bedrock Converse, Anthropic's Messages);
//! the Responses and Messages APIs bridge onto the same shape.

pub mod completion;
pub mod request;

use async_trait::async_trait;
pub use completion::{Completion, CompletionChunk};
use futures::stream::BoxStream;
pub use request::ChatCompletionRequest;
use serde_json::Value;

pub type ChunkStream = BoxStream<'static, Result<CompletionChunk, UpstreamError>>;

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

/// reelgate's extensions of the internal chat body, set only by the Messages use case after the
/// chat rules have validated the request (callers cannot send them: the rules refuse unknown
/// fields). Adapters that can use them do (Bedrock Converse for Claude models); the others drop
/// them before the body leaves the process.
pub mod extension {
    /// Top level: the exact thinking budget (tokens) a Messages request asked for;
    /// `reasoning_effort` carries the nearest effort for upstreams that take only that.
    pub const THINKING_BUDGET: &str = "reelgate_thinking_budget_tokens";
    /// On an assistant message: its Anthropic `thinking` / `redacted_thinking` blocks, in
    /// order, signatures included, which Claude needs back alongside its tool calls.
    pub const REASONING_BLOCKS: &str = "reelgate_reasoning_blocks";
    /// On a reply's message (or a streamed delta): the signature of its `reasoning_content`,
    /// as Claude models on Bedrock sign their reasoning.
    pub const REASONING_SIGNATURE: &str = "reasoning_signature";

    /// Top level: where the prompt's cache points are ([`super::CachePoint`]), set by the
    /// Messages use case from the caller's `cache_control` blocks or placed by the gateway for
    /// a model whose catalog entry sets `auto_cache`.
    pub const CACHE_POINTS: &str = "reelgate_cache_points";

    /// Top level: the caller's own Messages API body (validated; `model` and `stream` are the
    /// adapter's to set), set by the Messages use case when every deployment of the model is an
    /// `anthropic` upstream. That adapter sends it as it is, for full fidelity; the chat body
    /// beside it serves the estimates and the other adapters.
    pub const ANTHROPIC_REQUEST: &str = "reelgate_anthropic_request";
    /// On a `chat.completion` answering an [`ANTHROPIC_REQUEST`]: the upstream's own `message`
    /// object, which the Messages dialect answers (with our id, model name and cost).
    pub const ANTHROPIC_MESSAGE: &str = "reelgate_anthropic_message";
    /// On each `chat.completion.chunk` of a stream answering an [`ANTHROPIC_REQUEST`]:
    /// `{"event": name, "data": {...}}`, the upstream's own event the chunk was made from
    /// (every event gets a chunk with one choice, its delta possibly empty, so the meter sees
    /// it). The Messages dialect writes these events instead of translating the chunks.
    pub const ANTHROPIC_EVENT: &str = "reelgate_anthropic_event";
}

/// A prompt-cache breakpoint: the prompt up to and including `anchor` is worth caching
/// (Anthropic's `cache_control`, Converse's `cachePoint`). The prompt's order is tools, then
/// messages (the system message first), as both providers read it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CachePoint {
    #[serde(flatten)]
    pub anchor: CacheAnchor,
    /// How long the provider keeps the entry; `None` is the provider's default (five minutes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<CacheTtl>,
}

/// Where a [`CachePoint`] sits in the chat request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "after", rename_all = "snake_case")]
pub enum CacheAnchor {
    /// After `tools[index]`.
    Tool { index: usize },
    /// After `messages[index]`: after its content part `part` when given (the content is a
    /// list), else after the whole message.
    Message {
        index: usize,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        part: Option<usize>,
    },
}

/// The lifetimes Anthropic and Bedrock offer for a cache entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum CacheTtl {
    #[serde(rename = "5m")]
    FiveMinutes,
    #[serde(rename = "1h")]
    OneHour,
}

impl CacheTtl {
    pub fn as_str(self) -> &'static str {
        match self {
            CacheTtl::FiveMinutes => "5m",
            CacheTtl::OneHour => "1h",
        }
    }
}

/// The cache points of an internal chat request ([`extension::CACHE_POINTS`]), at most
/// [`MAX_CACHE_POINTS`] (the first ones); none when it has none or they do not parse.
pub fn cache_points(request: &Value) -> Vec<CachePoint> {
    let mut points: Vec<CachePoint> = request
        .get(extension::CACHE_POINTS)
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default();
    points.truncate(MAX_CACHE_POINTS);
    points
}

/// The text of a chat message's content: the string, or its text parts joined.
pub fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// The most cache points one request may carry (Anthropic's and Bedrock's limit).
pub const MAX_CACHE_POINTS: usize = 4;

#[async_trait]
pub trait ChatUpstream: Send + Sync + 'static {
    /// A non-streamed completion: returns the `chat.completion`.
    async fn complete(&self, request: ChatCompletionRequest) -> Result<Completion, UpstreamError>;
    /// A streamed completion: returns the `chat.completion.chunk`s as they arrive.
    /// Dropping the stream cancels the upstream request.
    async fn stream(&self, request: ChatCompletionRequest) -> Result<ChunkStream, UpstreamError>;
    /// The upstream's own count of the request's input tokens, where it has a counter
    /// (Bedrock's CountTokens); `None` where it has none, and the caller estimates.
    async fn count_tokens(
        &self,
        _request: ChatCompletionRequest,
    ) -> Result<Option<u64>, UpstreamError> {
        Ok(None)
    }
}
