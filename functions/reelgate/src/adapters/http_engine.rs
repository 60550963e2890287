//! The client side of reelgate's HTTP engine protocol as a [`VideoEngine`]: any engine that
//! speaks the protocol over HTTP, the reference engine included.

use crate::ports::engine::{ByteStream, EngineError, Render, RenderRequest, VideoEngine};
use async_trait::async_trait;

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
    async fn fetch_result(&self, render: &Render) -> Result<ByteStream, EngineError> {
        let url = render
            .result_url
            .as_deref()
            .ok_or_else(|| EngineError::Rejected("the render has no result_url".into()))?;
        let response = self
            .client
            .open_result(url)
            .await
            .map_err(|e| map_client(e, Some(&render.id)))?;
        Ok(super::hosted::response_stream(
            response,
            crate::domain::videos::workflow::steps::MAX_ENGINE_OUTPUT_BYTES,
        ))
    }
}
