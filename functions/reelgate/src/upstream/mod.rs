//! The upstream-model port. Internally every text-model call is an OpenAI chat-completions
//! request body (`serde_json::Value`, already validated, `model` set to the upstream's own name);
//! replies are `chat.completion` objects or, streamed, `chat.completion.chunk` objects. Adapters
//! translate for providers that speak something else (Bedrock Converse); the responses API bridges
//! onto the same shape.

use async_trait::async_trait;
use futures::stream::BoxStream;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

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
    },
    /// The upstream answered something that is not the protocol.
    #[error("the upstream answered outside the protocol: {0}")]
    Protocol(String),
}

#[async_trait]
pub trait ChatUpstream: Send + Sync + 'static {
    /// A non-streamed completion: returns a `chat.completion` object.
    async fn complete(&self, request: Value) -> Result<Value, UpstreamError>;
    /// A streamed completion: returns `chat.completion.chunk` objects as they arrive.
    /// Dropping the stream cancels the upstream request.
    async fn stream(&self, request: Value) -> Result<ChunkStream, UpstreamError>;
}

/// Upstreams by id (the catalog's `upstreams[].id`).
#[derive(Default)]
pub struct Upstreams {
    by_id: RwLock<HashMap<String, Arc<dyn ChatUpstream>>>,
}

impl Upstreams {
    pub fn insert(&self, id: &str, upstream: Arc<dyn ChatUpstream>) {
        if let Ok(mut map) = self.by_id.write() {
            map.insert(id.to_owned(), upstream);
        }
    }
    pub fn get(&self, id: &str) -> Option<Arc<dyn ChatUpstream>> {
        self.by_id.read().ok().and_then(|m| m.get(id).cloned())
    }
}

pub mod bedrock;
pub mod openai;

use crate::catalog::{Catalog, UpstreamConfig};
use crate::error::ApiError;
use axum::http::StatusCode;

impl Upstreams {
    /// Connects every upstream the catalog declares. The gateway also connects lazily on first
    /// use (see [`Upstreams::get_or_connect`]), so calling this is optional; it surfaces a bad
    /// configuration at start-up instead of on the first request.
    pub async fn from_catalog(catalog: &Catalog) -> anyhow::Result<Self> {
        let upstreams = Upstreams::default();
        for config in &catalog.upstreams {
            let upstream = connect(config)
                .await
                .map_err(|e| anyhow::anyhow!("upstream {}: {e}", config.id))?;
            upstreams.insert(&config.id, upstream);
        }
        Ok(upstreams)
    }

    /// The upstream registered under `id`, else one built from the catalog's configuration and
    /// remembered. Tests register fakes with [`Upstreams::insert`]; those win.
    pub async fn get_or_connect(
        &self,
        catalog: &Catalog,
        id: &str,
    ) -> Result<Arc<dyn ChatUpstream>, UpstreamError> {
        if let Some(found) = self.get(id) {
            return Ok(found);
        }
        let config = catalog
            .upstream(id)
            .ok_or_else(|| UpstreamError::Unreachable(format!("no upstream {id} is configured")))?;
        let upstream = connect(config).await?;
        // Two first requests may race here; both build an equivalent client and the later
        // insert wins, which is harmless.
        self.insert(id, upstream.clone());
        Ok(upstream)
    }
}

/// Builds the adapter a catalog upstream names by its `kind`.
pub async fn connect(config: &UpstreamConfig) -> Result<Arc<dyn ChatUpstream>, UpstreamError> {
    match config.kind.as_str() {
        "openai" => Ok(Arc::new(openai::OpenAiUpstream::from_config(config)?)),
        "bedrock" => Ok(Arc::new(
            bedrock::BedrockUpstream::from_config(config).await?,
        )),
        other => Err(UpstreamError::Protocol(format!(
            "upstream {} has unknown kind {other} (expected openai or bedrock)",
            config.id
        ))),
    }
}

/// Replaces `${NAME}` with the environment variable's value (empty when unset), as the catalog
/// documents for URLs.
pub fn expand_env(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find('}') {
            Some(end) => {
                out.push_str(&std::env::var(&after[..end]).unwrap_or_default());
                rest = &after[end + 1..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// The gateway error a failed upstream call becomes (chat completions and responses alike):
/// unreachable → 503 `upstream_unavailable`; a timeout (status 504/408, or code `timeout`) →
/// 504 `upstream_timeout`; an overloaded or rate-limited upstream (429, 503) → 503
/// `upstream_unavailable`; anything else → 502 `upstream_error`, with the upstream's message
/// so the caller can see, e.g., that its prompt exceeds the context window.
pub fn api_error(error: &UpstreamError) -> ApiError {
    match error {
        UpstreamError::Unreachable(m) => ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "upstream_error",
            "upstream_unavailable",
            format!("The model provider is unreachable; try again later. ({m})"),
        ),
        UpstreamError::Rejected {
            status,
            code,
            message,
        } => {
            if *status == 504 || *status == 408 || code.as_deref() == Some("timeout") {
                ApiError::new(
                    StatusCode::GATEWAY_TIMEOUT,
                    "upstream_error",
                    "upstream_timeout",
                    format!("The model provider did not answer in time. ({message})"),
                )
            } else if *status == 429 || *status == 503 {
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "upstream_error",
                    "upstream_unavailable",
                    format!("The model provider is busy; try again later. ({message})"),
                )
            } else {
                ApiError::new(
                    StatusCode::BAD_GATEWAY,
                    "upstream_error",
                    "upstream_error",
                    format!("The model provider refused the request ({status}): {message}"),
                )
            }
        }
        UpstreamError::Protocol(m) => ApiError::new(
            StatusCode::BAD_GATEWAY,
            "upstream_error",
            "upstream_error",
            format!("The model provider answered outside the protocol: {m}"),
        ),
    }
}
