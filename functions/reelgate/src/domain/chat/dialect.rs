//! How the chat use case's answer is written for the caller: the API they speak (OpenAI's chat
//! completions, or the Messages API translated from them). The use case decides what happens
//! (admission, the upstream, metering, the charge); a dialect only decides what the caller
//! reads, so the HTTP layer implements these.

use crate::domain::chat::completion::{ChatCompletion, CompletionUsage};
use crate::domain::error::{ApiError, ApiResult};
use crate::ports::upstream::CompletionChunk;
use bytes::Bytes;

/// The API a caller speaks to the chat use case: OpenAI's chat completions ([`OpenAiChat`]) or
/// another shape translated from it (the Messages API). Admission, limits, routing, fallback and
/// billing are the same whatever the dialect; only the id and what the caller reads differ.
pub trait Dialect: Send + Sync + 'static {
    /// A new id for the answer, also the ledger's reference for its charge.
    fn new_id(&self) -> String;
    /// The whole answer as the caller reads it (JSON, written by [`json`]), from our
    /// re-stamped `chat.completion`.
    fn whole(&self, completion: ChatCompletion) -> ApiResult<Bytes>;
    /// The writer of a streamed answer with this id and model name.
    fn stream_format(&self, id: &str, model: &str, created: i64) -> Box<dyn StreamFormat>;
}

/// Writes a streamed answer as SSE bytes, one call per step of the upstream's stream.
pub trait StreamFormat: Send + 'static {
    /// What goes out before the first chunk.
    fn start(&mut self) -> Vec<Bytes> {
        Vec::new()
    }
    /// One re-stamped `chat.completion.chunk` with choices.
    fn chunk(&mut self, chunk: CompletionChunk) -> Vec<Bytes>;
    /// The end of a completed stream, after its charge; `usage` is the upstream's report or our
    /// estimate, with the cost.
    fn end(&mut self, usage: CompletionUsage) -> Vec<Bytes>;
    /// A failure after the headers went out.
    fn fail(&mut self, error: &crate::domain::error::ApiError) -> Vec<Bytes>;
}

/// A whole answer's JSON.
pub fn json(answer: &impl serde::Serialize) -> ApiResult<Bytes> {
    serde_json::to_vec(answer)
        .map(Bytes::from)
        .map_err(|e| ApiError::internal("encoding the answer", e))
}
