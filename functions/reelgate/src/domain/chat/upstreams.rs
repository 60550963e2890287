//! The chat upstreams the catalog names, by catalog id. The assembly fills them from the
//! catalog; tests register fakes with `insert`, and those win. Upstreams missing at start-up (a
//! provider that could not be configured) are connected on first use through the
//! [`UpstreamConnector`] the host supplies, so one broken provider does not take the other
//! routes down. A model's request goes to one of its deployments, chosen by the routing policy
//! and each deployment's health ([`crate::domain::chat::routing`]).

use crate::domain::catalog::{Catalog, ChatModel, Deployment, UpstreamConfig};
use crate::domain::chat::routing::DeploymentHealth;
use crate::ports::upstream::{
    ChatCompletionRequest, ChatUpstream, ChunkStream, Completion, UpstreamError,
};
use async_trait::async_trait;
use futures::StreamExt;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};
use tracing::Instrument;

/// Builds the chat-upstream adapter a catalog entry names by its `kind` (the assembly supplies
/// one that knows every kind the host links).
#[async_trait]
pub trait UpstreamConnector: Send + Sync + 'static {
    async fn connect(
        &self,
        config: &UpstreamConfig,
    ) -> Result<Arc<dyn ChatUpstream>, UpstreamError>;
}

/// Upstreams by id (the catalog's `upstreams[].id`).
#[derive(Default)]
pub struct Upstreams {
    by_id: RwLock<HashMap<String, Arc<dyn ChatUpstream>>>,
    connector: Option<Arc<dyn UpstreamConnector>>,
    /// Which deployments are failing or cooling down (this process's view).
    pub health: DeploymentHealth,
}

impl Upstreams {
    /// An empty registry that connects catalog upstreams on first use through `connector`.
    pub fn with_connector(connector: Arc<dyn UpstreamConnector>) -> Self {
        Upstreams {
            by_id: RwLock::default(),
            connector: Some(connector),
            health: DeploymentHealth::default(),
        }
    }

    pub fn insert(&self, id: &str, upstream: Arc<dyn ChatUpstream>) {
        if let Ok(mut map) = self.by_id.write() {
            map.insert(id.to_owned(), upstream);
        }
    }

    pub fn get(&self, id: &str) -> Option<Arc<dyn ChatUpstream>> {
        self.by_id.read().ok().and_then(|m| m.get(id).cloned())
    }

    /// Connects every upstream the catalog declares. The gateway also connects lazily on first
    /// use (see [`Upstreams::get_or_connect`]), so calling this is optional; it surfaces a bad
    /// configuration at start-up instead of on the first request.
    pub async fn connect_all(&self, catalog: &Catalog) -> Result<(), UpstreamError> {
        let Some(connector) = &self.connector else {
            return Ok(());
        };
        for config in &catalog.upstreams {
            let upstream = connector
                .connect(config)
                .await
                .map_err(|e| UpstreamError::Unreachable(format!("upstream {}: {e}", config.id)))?;
            self.insert(&config.id, upstream);
        }
        Ok(())
    }

    /// The upstream registered under `id`, else one built from the catalog's configuration and
    /// remembered.
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
        let connector = self.connector.as_ref().ok_or_else(|| {
            UpstreamError::Unreachable(format!("no connector for upstream {id} on this host"))
        })?;
        let upstream = connector.connect(config).await?;
        // Two first requests may race here; both build an equivalent client and the later
        // insert wins, which is harmless.
        self.insert(id, upstream.clone());
        Ok(upstream)
    }
}

impl Upstreams {
    /// The upstream a request for `model` goes to: its deployments, tried in the order
    /// [`DeploymentHealth::order`] draws, each under its own model name.
    pub fn for_model(
        self: &Arc<Self>,
        catalog: &Arc<Catalog>,
        model: &ChatModel,
    ) -> Arc<dyn ChatUpstream> {
        Arc::new(RoutedUpstream {
            upstreams: self.clone(),
            catalog: catalog.clone(),
            model_id: model.id.clone(),
            deployments: model.deployments(),
        })
    }
}

/// A chat model's deployments behind one [`ChatUpstream`]: a request that fails on one
/// deployment before any output (429, 5xx, timeout, unreachable) moves to the next; a stream is
/// committed to a deployment once its first chunk has arrived and is never switched after that.
struct RoutedUpstream {
    upstreams: Arc<Upstreams>,
    catalog: Arc<Catalog>,
    model_id: String,
    deployments: Vec<Deployment>,
}

impl RoutedUpstream {
    async fn attempt<T, F, Fut>(
        &self,
        request: ChatCompletionRequest,
        call: F,
    ) -> Result<T, UpstreamError>
    where
        F: Fn(Arc<dyn ChatUpstream>, ChatCompletionRequest) -> Fut,
        Fut: std::future::Future<Output = Result<T, UpstreamError>>,
    {
        let policy = &self.catalog.routing;
        let order = self.upstreams.health.order(
            &self.model_id,
            &self.deployments,
            Instant::now(),
            &mut rand::thread_rng(),
        );
        let mut last = None;
        for i in order {
            let deployment = &self.deployments[i];
            let label = deployment.label(&self.model_id);
            let result = match self
                .upstreams
                .get_or_connect(&self.catalog, &deployment.upstream)
                .await
            {
                Ok(upstream) => {
                    let mut request = request.clone();
                    request.model = deployment
                        .upstream_model
                        .clone()
                        .unwrap_or_else(|| self.model_id.clone());
                    call(upstream, request).await
                }
                Err(e) => Err(e),
            };
            match result {
                Ok(value) => {
                    let span = tracing::Span::current();
                    span.record("provider", deployment.upstream.as_str());
                    span.record("deployment", label.as_str());
                    self.upstreams.health.succeeded(&label);
                    tracing::info!(model = %self.model_id, deployment = %label, "deployment served the request");
                    return Ok(value);
                }
                Err(e) => {
                    crate::observability::metrics::upstream_error(&self.model_id, error_kind(&e));
                    let out = self
                        .upstreams
                        .health
                        .failed(&label, &e, policy, Instant::now());
                    tracing::warn!(model = %self.model_id, deployment = %label, error = %e, cooldown_secs = out.map(|d| d.as_secs()), "deployment failed");
                    if !e.is_retryable() {
                        return Err(e);
                    }
                    last = Some(e);
                }
            }
        }
        let last = last.unwrap_or_else(|| {
            UpstreamError::Unreachable(format!("model {} has no deployment", self.model_id))
        });
        // One deployment keeps its own error (a timeout stays a timeout); when several all
        // failed, the caller gets what an unavailable upstream gives.
        Err(if self.deployments.len() > 1 {
            UpstreamError::Unreachable(format!(
                "all {} deployments failed; the last: {last}",
                self.deployments.len()
            ))
        } else {
            last
        })
    }
}

/// The span of one upstream chat call (all its deployment attempts; failed attempts are its
/// events), created only while traces are exported.
fn upstream_span(model: &str, streamed: bool) -> tracing::Span {
    if !crate::observability::trace_context::exporting() {
        return tracing::Span::none();
    }
    tracing::info_span!(
        "upstream",
        otel.name = "chat upstream",
        otel.kind = "client",
        otel.status_code = tracing::field::Empty,
        model,
        stream = streamed,
        provider = tracing::field::Empty,
        deployment = tracing::field::Empty,
        ttfb_ms = tracing::field::Empty,
        input_tokens = tracing::field::Empty,
        output_tokens = tracing::field::Empty,
    )
}

/// The token counts of an OpenAI `usage` object, when there is one.
fn record_usage(span: &tracing::Span, usage: &Value) {
    if let Some(n) = usage["prompt_tokens"].as_i64() {
        span.record("input_tokens", n);
    }
    if let Some(n) = usage["completion_tokens"].as_i64() {
        span.record("output_tokens", n);
    }
}

/// The `kind` label of a failed upstream call in the metrics.
fn error_kind(e: &UpstreamError) -> &'static str {
    match e {
        UpstreamError::Unreachable(_) => "unreachable",
        UpstreamError::Rejected { status, code, .. }
            if *status == 504 || *status == 408 || code.as_deref() == Some("timeout") =>
        {
            "timeout"
        }
        UpstreamError::Rejected { status: 429, .. } => "rate_limited",
        UpstreamError::Rejected { status, .. } if *status >= 500 => "server_error",
        UpstreamError::Rejected { .. } => "rejected",
        UpstreamError::Protocol(_) => "protocol",
        UpstreamError::InvalidRequest { .. } => "invalid_request",
    }
}

#[async_trait]
impl ChatUpstream for RoutedUpstream {
    async fn complete(&self, request: ChatCompletionRequest) -> Result<Completion, UpstreamError> {
        let _timer = crate::observability::telemetry::upstream_timer();
        let span = upstream_span(&self.model_id, false);
        let started = Instant::now();
        let outcome = self
            .attempt(request, |upstream, request| async move {
                upstream.complete(request).await
            })
            .instrument(span.clone())
            .await;
        // Not streamed: the first byte is the whole answer.
        span.record("ttfb_ms", started.elapsed().as_secs_f64() * 1000.0);
        match &outcome {
            Ok(answer) => record_usage(&span, answer.usage.as_ref().unwrap_or(&Value::Null)),
            Err(_) => {
                span.record("otel.status_code", "ERROR");
            }
        }
        outcome
    }

    async fn stream(&self, request: ChatCompletionRequest) -> Result<ChunkStream, UpstreamError> {
        let first_byte = Duration::from_secs(self.catalog.routing.first_byte_timeout_secs.max(1));
        // The request's upstream time runs until the stream ends or is dropped.
        let timer = crate::observability::telemetry::upstream_timer();
        // The span lasts until the stream ends or is dropped, like the timer.
        let span = upstream_span(&self.model_id, true);
        let started = Instant::now();
        let chunks = self
            .attempt(request, move |upstream, request| async move {
                let mut chunks = upstream.stream(request).await?;
                match tokio::time::timeout(first_byte, chunks.next()).await {
                    Ok(Some(Ok(first))) => {
                        tracing::Span::current()
                            .record("ttfb_ms", started.elapsed().as_secs_f64() * 1000.0);
                        Ok(futures::stream::once(async move { Ok(first) })
                            .chain(chunks)
                            .boxed())
                    }
                    Ok(Some(Err(e))) => Err(e),
                    Ok(None) => Ok(futures::stream::empty().boxed()),
                    Err(_) => Err(UpstreamError::Rejected {
                        status: 504,
                        code: Some("timeout".into()),
                        message: format!("no first chunk within {} s", first_byte.as_secs()),
                        retry_after: None,
                    }),
                }
            })
            .instrument(span.clone())
            .await
            .inspect_err(|_| {
                span.record("otel.status_code", "ERROR");
            })?;
        Ok(chunks
            .map(move |chunk| {
                let _ = &timer;
                match &chunk {
                    Ok(chunk) => record_usage(&span, chunk.usage.as_ref().unwrap_or(&Value::Null)),
                    Err(_) => {
                        span.record("otel.status_code", "ERROR");
                    }
                }
                chunk
            })
            .boxed())
    }

    async fn count_tokens(
        &self,
        request: ChatCompletionRequest,
    ) -> Result<Option<u64>, UpstreamError> {
        self.attempt(request, |upstream, request| async move {
            upstream.count_tokens(request).await
        })
        .await
    }
}
