//! OpenTelemetry trace export (docs/observability.md, "Traces"): the `tracing` spans of the
//! service become OTLP spans, batched and POSTed as protobuf to the configured collector
//! ([`crate::config::TraceExport`], from the standard `OTEL_*` variables).
//!
//! Installed only when an endpoint is configured: without one a host does not add the layer at
//! all and nothing here runs. The exporter sends with the `reqwest` client the service already
//! links (rustls, no second HTTP or TLS stack): the SDK's batch processor exports from its own
//! thread, so each send is spawned onto the host's tokio runtime and awaited from there.
//!
//! On Lambda, [`flush`] before an invocation returns: a frozen sandbox would otherwise keep the
//! last batch until its next invocation, or lose it.

use crate::config::TraceExport;
use anyhow::Context as _;
use async_trait::async_trait;
use bytes::Bytes;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, Sampler, SdkTracerProvider,
};
use std::sync::OnceLock;
use std::time::Duration;
use tracing_subscriber::registry::LookupSpan;

/// How long one export may take (connect, send, answer).
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest collector answer read (they are a few bytes: an empty protobuf or a status).
const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// The installed provider, for [`flush`] and [`shutdown`].
static PROVIDER: OnceLock<SdkTracerProvider> = OnceLock::new();

/// The layer that turns spans whose target starts with `reelgate` into OTLP spans (other
/// crates' spans and events stay out of the traces). Call inside the host's tokio runtime; the
/// provider is kept for [`flush`] and [`shutdown`].
pub fn layer<S>(export: &TraceExport) -> anyhow::Result<impl tracing_subscriber::Layer<S>>
where
    S: tracing::Subscriber + for<'span> LookupSpan<'span>,
{
    use tracing_subscriber::Layer as _;
    let runtime = tokio::runtime::Handle::try_current()
        .context("trace export needs the tokio runtime to send from")?;
    let client = reqwest::Client::builder()
        .timeout(EXPORT_TIMEOUT)
        .build()
        .context("building the OTLP HTTP client")?;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(TokioReqwest { client, runtime })
        .with_endpoint(export.endpoint.clone())
        .with_timeout(EXPORT_TIMEOUT)
        .with_headers(export.headers.iter().cloned().collect())
        .build()
        .context("building the OTLP span exporter")?;
    let processor = BatchSpanProcessor::builder(exporter)
        .with_batch_config(
            BatchConfigBuilder::default()
                .with_scheduled_delay(Duration::from_secs(1))
                .build(),
        )
        .build();
    let provider = SdkTracerProvider::builder()
        .with_span_processor(processor)
        // Every span is recorded: a caller's traceparent flags cannot switch tracing off.
        .with_sampler(Sampler::AlwaysOn)
        .with_resource(
            // Only what the configuration says (the default builder would read more of the
            // environment behind config/'s back).
            opentelemetry_sdk::Resource::builder_empty()
                .with_service_name(export.service_name.clone())
                .build(),
        )
        .build();
    let tracer = provider.tracer("reelgate");
    if PROVIDER.set(provider).is_err() {
        anyhow::bail!("the trace exporter is already installed");
    }
    crate::observability::trace_context::set_exporting(true);
    Ok(tracing_opentelemetry::layer()
        .with_tracer(tracer)
        // Only what the spans say: no source locations, thread names or busy/idle times.
        .with_location(false)
        .with_threads(false)
        .with_tracked_inactivity(false)
        .with_filter(
            tracing_subscriber::filter::Targets::new()
                .with_target("reelgate", tracing::Level::INFO)
                // The storage ports' spans are DEBUG so that the log layer skips them.
                .with_target("reelgate::adapters::traced", tracing::Level::DEBUG),
        ))
}

/// Whether the exporter is installed.
pub fn installed() -> bool {
    PROVIDER.get().is_some()
}

/// Sends every finished span now and waits for the collector (Lambda: before an invocation
/// returns). Does nothing when the exporter is not installed.
pub async fn flush() {
    let Some(provider) = PROVIDER.get() else {
        return;
    };
    // The processor's flush blocks this thread until its export (spawned on this runtime)
    // finishes: run it where blocking is allowed.
    let outcome = tokio::task::spawn_blocking(move || provider.force_flush()).await;
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!(error = %e, "flushing spans failed"),
        Err(e) => tracing::warn!(error = %e, "flushing spans failed"),
    }
}

/// `router` that flushes the spans of each request before answering (Lambda's HTTP functions,
/// whose sandbox freezes once the answer is out); the router unchanged without an exporter.
/// A streamed answer's upstream span ends with the stream, after this flush: it leaves with the
/// next invocation's.
pub fn flush_after_each_request(router: axum::Router) -> axum::Router {
    if !installed() {
        return router;
    }
    router.layer(axum::middleware::from_fn(
        |req: axum::extract::Request, next: axum::middleware::Next| async move {
            let response = next.run(req).await;
            flush().await;
            response
        },
    ))
}

/// Flushes and stops the exporter (a host shutting down).
pub async fn shutdown() {
    let Some(provider) = PROVIDER.get() else {
        return;
    };
    let _ = tokio::task::spawn_blocking(move || provider.shutdown()).await;
}

/// The OTLP HTTP client: the service's reqwest client, driven on the host's tokio runtime.
#[derive(Debug)]
struct TokioReqwest {
    client: reqwest::Client,
    runtime: tokio::runtime::Handle,
}

#[async_trait]
impl opentelemetry_http::HttpClient for TokioReqwest {
    async fn send_bytes(
        &self,
        request: http::Request<Bytes>,
    ) -> Result<http::Response<Bytes>, opentelemetry_http::HttpError> {
        let request = reqwest::Request::try_from(request)?;
        let client = self.client.clone();
        self.runtime
            .spawn(async move {
                let mut answer = client.execute(request).await?;
                let status = answer.status();
                let headers = std::mem::take(answer.headers_mut());
                let mut body = Vec::new();
                while let Some(chunk) = answer.chunk().await? {
                    if body.len() + chunk.len() > MAX_ANSWER_BYTES {
                        return Err("the collector's answer is too large".into());
                    }
                    body.extend_from_slice(&chunk);
                }
                let mut response = http::Response::new(Bytes::from(body));
                *response.status_mut() = status;
                *response.headers_mut() = headers;
                Ok::<_, opentelemetry_http::HttpError>(response)
            })
            .await?
    }
}
