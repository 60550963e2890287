//! The video-engine port. Its language is reelgate's HTTP engine protocol
//! (docs/engine-protocol.md, types in `reelgate_engine::protocol`): submit a render with signed
//! input URLs, read its status and progress, cancel it, fetch the result. Adapters: any engine
//! speaking that protocol over HTTP (the reference engine included) in `adapters::http_engine`,
//! and Amazon Bedrock's asynchronous invoke in `reelgate-aws` (it needs S3).

use async_trait::async_trait;
use bytes::Bytes;
pub use reelgate_engine::protocol::{Render, RenderInputs, RenderRequest, RenderStatus};

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
}

#[async_trait]
pub trait VideoEngine: Send + Sync + 'static {
    async fn submit(&self, request: &RenderRequest) -> Result<Render, EngineError>;
    async fn status(&self, render_id: &str) -> Result<Render, EngineError>;
    async fn cancel(&self, render_id: &str) -> Result<(), EngineError>;
    /// The finished MP4.
    async fn fetch_result(&self, render: &Render) -> Result<Bytes, EngineError>;
}
