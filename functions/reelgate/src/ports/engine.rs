//! The video-engine port. Its language is reelgate's HTTP engine protocol
//! (docs/engine-protocol.md, types in `reelgate_engine::protocol`): submit a render with signed
//! input URLs, read its status and progress, cancel it, fetch the result. Adapters: any engine
//! speaking that protocol over HTTP (the reference engine included) in `adapters::http_engine`,
//! and Amazon Bedrock's asynchronous invoke in `reelgate-aws` (it needs S3).

pub use crate::ports::blobs::ByteStream;
use async_trait::async_trait;
pub use reelgate_engine::protocol::{
    Render, RenderInputs, RenderRequest, RenderSource, RenderStatus,
};

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// Connection refused, reset, timed out or dropped: the engine may come back.
    #[error("the engine is unreachable: {0}")]
    Unreachable(String),
    /// The engine does not know the render (it lost it, e.g. after a restart).
    #[error("the engine does not know render {0}")]
    UnknownRender(String),
    #[error("the engine refused: {0}")]
    Rejected(String),
    /// The provider asked us to slow down (429) or is briefly overloaded: retried like
    /// [`EngineError::Unreachable`], but not before `retry_after` when it said so.
    #[error("the engine is busy: {message}")]
    Busy {
        message: String,
        retry_after: Option<std::time::Duration>,
    },
    /// The provider refused the content (its own moderation): the job fails as
    /// `moderation_blocked`, unbilled.
    #[error("the engine's provider refused the content: {0}")]
    ContentRefused(String),
}

impl EngineError {
    /// Whether the engine may answer if asked again (the worker retries, then gives up with
    /// `engine_unavailable`).
    pub fn is_transient(&self) -> bool {
        matches!(self, EngineError::Unreachable(_) | EngineError::Busy { .. })
    }

    /// How long to wait before asking again: the provider's `Retry-After` (at most
    /// `MAX_RETRY_AFTER`) or else `poll`.
    pub fn retry_delay(&self, poll: std::time::Duration) -> std::time::Duration {
        match self {
            EngineError::Busy {
                retry_after: Some(after),
                ..
            } => (*after).clamp(poll, MAX_RETRY_AFTER),
            _ => poll,
        }
    }
}

/// The longest `Retry-After` honoured: well inside the Render state's 300 s heartbeat.
pub const MAX_RETRY_AFTER: std::time::Duration = std::time::Duration::from_secs(120);

/// The failure code of a render the provider refused for its content (a failed [`Render`]'s
/// `error.code`); a reelgate target says `moderation_blocked`. Both end the job
/// `moderation_blocked`.
pub const CONTENT_REFUSED: &str = "content_refused";

/// Whether a failed render's code means the provider refused the content.
pub fn is_content_refusal(code: &str) -> bool {
    code == CONTENT_REFUSED || code == "moderation_blocked"
}

#[async_trait]
pub trait VideoEngine: Send + Sync + 'static {
    async fn submit(&self, request: &RenderRequest) -> Result<Render, EngineError>;
    async fn status(&self, render_id: &str) -> Result<Render, EngineError>;
    async fn cancel(&self, render_id: &str) -> Result<(), EngineError>;
    /// The finished MP4 as it arrives: the worker streams it into the blob store, so an
    /// engine's output is never held whole in memory (the store's `max_bytes` bounds it, and an
    /// adapter may stop sooner).
    async fn fetch_result(&self, render: &Render) -> Result<ByteStream, EngineError>;
}
