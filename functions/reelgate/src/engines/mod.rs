//! The video-engine port. Its language is reelgate's HTTP engine protocol
//! (docs/engine-protocol.md, types in `reelgate_engine::protocol`): submit a render with signed
//! input URLs, read its status and progress, cancel it, fetch the result. Adapters: any engine
//! speaking that protocol over HTTP (the reference engine included) here, and Amazon Bedrock's
//! asynchronous invoke in `reelgate-aws` (it needs S3), registered by the AWS hosts.

use async_trait::async_trait;
use bytes::Bytes;
pub use reelgate_engine::protocol::{Render, RenderInputs, RenderRequest, RenderStatus};
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

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

/// An engine speaking the HTTP engine protocol.
pub struct HttpEngine {
    client: reelgate_engine::EngineClient,
}

impl HttpEngine {
    pub fn new(base_url: &str, api_key: Option<String>) -> anyhow::Result<Self> {
        Ok(HttpEngine {
            client: reelgate_engine::EngineClient::new(base_url, api_key)?,
        })
    }
}

fn map_client(e: reelgate_engine::EngineClientError, render_id: Option<&str>) -> EngineError {
    use reelgate_engine::EngineClientError as E;
    match e {
        E::Rejected { status: 404, .. } if render_id.is_some() => {
            EngineError::UnknownRender(render_id.unwrap_or_default().to_owned())
        }
        e if e.is_retryable() => EngineError::Unreachable(e.to_string()),
        other => EngineError::Rejected(other.to_string()),
    }
}

#[async_trait]
impl VideoEngine for HttpEngine {
    async fn submit(&self, request: &RenderRequest) -> Result<Render, EngineError> {
        self.client
            .submit(request)
            .await
            .map_err(|e| map_client(e, None))
    }
    async fn status(&self, render_id: &str) -> Result<Render, EngineError> {
        self.client
            .get(render_id)
            .await
            .map_err(|e| map_client(e, Some(render_id)))
    }
    async fn cancel(&self, render_id: &str) -> Result<(), EngineError> {
        self.client
            .cancel(render_id)
            .await
            .map(|_| ())
            .map_err(|e| map_client(e, Some(render_id)))
    }
    async fn fetch_result(&self, render: &Render) -> Result<Bytes, EngineError> {
        let url = render
            .result_url
            .as_deref()
            .ok_or_else(|| EngineError::Rejected("the render has no result_url".into()))?;
        self.client
            .download_result(url)
            .await
            .map_err(|e| map_client(e, Some(&render.id)))
    }
}

/// Engines by catalog id.
#[derive(Default)]
pub struct Engines {
    by_id: RwLock<HashMap<String, Arc<dyn VideoEngine>>>,
}

impl Engines {
    pub fn insert(&self, id: &str, engine: Arc<dyn VideoEngine>) {
        if let Ok(mut m) = self.by_id.write() {
            m.insert(id.to_owned(), engine);
        }
    }
    pub fn get(&self, id: &str) -> Option<Arc<dyn VideoEngine>> {
        self.by_id.read().ok().and_then(|m| m.get(id).cloned())
    }
}

/// Builds the catalog's engines. `reference_url` is where the reference engine is served (the
/// local server mounts it in-process; elsewhere `REELGATE_REFERENCE_ENGINE_URL`).
pub fn from_catalog(
    catalog: &crate::catalog::Catalog,
    reference_url: Option<&str>,
) -> anyhow::Result<Engines> {
    let engines = Engines::default();
    for e in &catalog.engines {
        let key = e.api_key_env.as_deref().and_then(|n| std::env::var(n).ok());
        let engine: Arc<dyn VideoEngine> = match e.kind.as_str() {
            "http" => {
                let url = e
                    .base_url
                    .as_deref()
                    .map(crate::upstream::expand_env)
                    .unwrap_or_default();
                if url.is_empty() {
                    tracing::warn!(engine = %e.id, "http engine without base_url; its models answer provider_unavailable");
                    continue;
                }
                Arc::new(HttpEngine::new(&url, key)?)
            }
            "reference" => {
                let url = std::env::var("REELGATE_REFERENCE_ENGINE_URL")
                    .ok()
                    .or_else(|| reference_url.map(str::to_owned));
                match url {
                    Some(url) => Arc::new(HttpEngine::new(&url, key)?),
                    None => {
                        tracing::warn!(engine = %e.id, "no reference engine URL; set REELGATE_REFERENCE_ENGINE_URL");
                        continue;
                    }
                }
            }
            // Registered by the AWS hosts (reelgate-aws), which have S3 for its output.
            "bedrock" => continue,
            other => anyhow::bail!("engine {}: unknown kind {other}", e.id),
        };
        engines.insert(&e.id, engine);
    }
    Ok(engines)
}
