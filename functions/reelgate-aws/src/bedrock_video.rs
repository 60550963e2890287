//! A hosted video engine: Amazon Bedrock's asynchronous invoke (`StartAsyncInvoke` /
//! `GetAsyncInvoke`), which writes the rendered MP4 to S3. This adapter maps reelgate's render
//! request onto Amazon Nova Reel's input (`TEXT_VIDEO`, an optional first-frame image) and
//! reads the result from `<output_s3_uri>/<invocation>/output.mp4`.
//!
//! It is registered by the AWS hosts for catalog engines of `kind = "bedrock"` (`model_id`,
//! `output_s3_uri`). It cannot be exercised on the local emulator (no Bedrock video models
//! there). Nova Reel renders 1280x720; reelgate's output check requires 768 pixels on the short
//! side, so a deployment uses this adapter with a model (or a Bedrock custom model) that renders
//! 768p — otherwise every render ends as `engine_unavailable`, unbilled, by design.

use async_trait::async_trait;
use aws_sdk_bedrockruntime::types::{
    AsyncInvokeOutputDataConfig, AsyncInvokeS3OutputDataConfig, AsyncInvokeStatus,
};
use aws_smithy_types::{Document, Number};
use base64::Engine as _;
use bytes::Bytes;
use reelgate::ports::engine::{EngineError, Render, RenderRequest, RenderStatus, VideoEngine};
use reelgate_engine::protocol::RenderError;
use std::collections::HashMap;

pub struct BedrockVideoEngine {
    bedrock: aws_sdk_bedrockruntime::Client,
    s3: aws_sdk_s3::Client,
    http: reqwest::Client,
    model_id: String,
    output_s3_uri: String,
}

impl BedrockVideoEngine {
    pub fn new(sdk: &aws_config::SdkConfig, model_id: &str, output_s3_uri: &str) -> Self {
        BedrockVideoEngine {
            bedrock: aws_sdk_bedrockruntime::Client::new(sdk),
            s3: aws_sdk_s3::Client::new(sdk),
            http: reqwest::Client::new(),
            model_id: model_id.to_owned(),
            output_s3_uri: output_s3_uri.trim_end_matches('/').to_owned(),
        }
    }

    /// Builds the engine a catalog entry of `kind = "bedrock"` describes.
    pub fn from_catalog(
        sdk: &aws_config::SdkConfig,
        engine: &reelgate::domain::catalog::EngineConfig,
    ) -> anyhow::Result<Self> {
        let model = engine
            .model_id
            .as_deref()
            .ok_or_else(|| anyhow::anyhow!("bedrock engine {} needs model_id", engine.id))?;
        let output = engine
            .output_s3_uri
            .as_deref()
            .filter(|u| u.starts_with("s3://"))
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "bedrock engine {} needs output_s3_uri = \"s3://bucket/prefix\"",
                    engine.id
                )
            })?;
        Ok(Self::new(sdk, model, output))
    }

    /// The model input for Nova Reel's text-to-video task.
    async fn model_input(&self, request: &RenderRequest) -> Result<Document, EngineError> {
        let mut params: HashMap<String, Document> = HashMap::new();
        params.insert("text".into(), Document::String(request.prompt.clone()));
        if let Some(url) = &request.inputs.first_frame_url {
            let bytes = self
                .http
                .get(url)
                .send()
                .await
                .and_then(|r| r.error_for_status())
                .map_err(|e| EngineError::Rejected(format!("first frame: {e}")))?
                .bytes()
                .await
                .map_err(|e| EngineError::Rejected(format!("first frame: {e}")))?;
            let format = match reelgate_media_kind(&bytes) {
                Some(f) => f,
                None => {
                    return Err(EngineError::Rejected(
                        "the first frame must be PNG or JPEG for Bedrock".into(),
                    ))
                }
            };
            let image = Document::Object(HashMap::from([
                ("format".to_owned(), Document::String(format.into())),
                (
                    "source".to_owned(),
                    Document::Object(HashMap::from([(
                        "bytes".to_owned(),
                        Document::String(base64::engine::general_purpose::STANDARD.encode(&bytes)),
                    )])),
                ),
            ]));
            params.insert("images".into(), Document::Array(vec![image]));
        }
        let config = HashMap::from([
            (
                "durationSeconds".to_owned(),
                Document::Number(Number::PosInt(u64::from(request.seconds))),
            ),
            ("fps".to_owned(), Document::Number(Number::PosInt(24))),
            (
                "dimension".to_owned(),
                Document::String(format!("{}x{}", request.width, request.height)),
            ),
        ]);
        Ok(Document::Object(HashMap::from([
            ("taskType".to_owned(), Document::String("TEXT_VIDEO".into())),
            ("textToVideoParams".to_owned(), Document::Object(params)),
            ("videoGenerationConfig".to_owned(), Document::Object(config)),
        ])))
    }
}

fn reelgate_media_kind(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG") {
        Some("png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("jpeg")
    } else {
        None
    }
}

fn sdk_error(e: impl std::fmt::Display) -> EngineError {
    EngineError::Unreachable(e.to_string())
}

fn render_of(arn: &str, status: RenderStatus, error: Option<String>) -> Render {
    Render {
        id: arn.to_owned(),
        status,
        progress: if status == RenderStatus::Succeeded {
            100
        } else {
            0
        },
        error: error.map(|message| RenderError {
            code: "engine_failure".into(),
            message,
        }),
        result_url: None,
        created_at: 0,
    }
}

#[async_trait]
impl VideoEngine for BedrockVideoEngine {
    async fn submit(&self, request: &RenderRequest) -> Result<Render, EngineError> {
        let input = self.model_input(request).await?;
        let output = AsyncInvokeOutputDataConfig::S3OutputDataConfig(
            AsyncInvokeS3OutputDataConfig::builder()
                .s3_uri(&self.output_s3_uri)
                .build()
                .map_err(|e| EngineError::Rejected(e.to_string()))?,
        );
        let mut call = self
            .bedrock
            .start_async_invoke()
            .model_id(&self.model_id)
            .model_input(input)
            .output_data_config(output);
        if let Some(reference) = &request.client_reference {
            // Idempotent per job: a redelivered submit finds the same invocation.
            call = call.client_request_token(reference.clone());
        }
        let started = call.send().await.map_err(sdk_error)?;
        Ok(render_of(
            started.invocation_arn(),
            RenderStatus::Queued,
            None,
        ))
    }

    async fn status(&self, render_id: &str) -> Result<Render, EngineError> {
        let got = self
            .bedrock
            .get_async_invoke()
            .invocation_arn(render_id)
            .send()
            .await
            .map_err(sdk_error)?;
        let status = match got.status() {
            AsyncInvokeStatus::Completed => RenderStatus::Succeeded,
            AsyncInvokeStatus::Failed => RenderStatus::Failed,
            _ => RenderStatus::Rendering,
        };
        Ok(render_of(
            render_id,
            status,
            got.failure_message().map(str::to_owned),
        ))
    }

    async fn cancel(&self, _render_id: &str) -> Result<(), EngineError> {
        // Bedrock has no cancel for asynchronous invokes; the result is simply not used.
        Ok(())
    }

    async fn fetch_result(&self, render: &Render) -> Result<Bytes, EngineError> {
        let got = self
            .bedrock
            .get_async_invoke()
            .invocation_arn(&render.id)
            .send()
            .await
            .map_err(sdk_error)?;
        let uri = got
            .output_data_config()
            .and_then(|c| c.as_s3_output_data_config().ok())
            .map(|c| c.s3_uri().to_owned())
            .ok_or_else(|| EngineError::Rejected("the invocation has no S3 output".into()))?;
        let rest = uri.trim_start_matches("s3://");
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        let key = format!("{}/output.mp4", prefix.trim_end_matches('/'))
            .trim_start_matches('/')
            .to_owned();
        let object = self
            .s3
            .get_object()
            .bucket(bucket)
            .key(&key)
            .send()
            .await
            .map_err(sdk_error)?;
        let body = object.body.collect().await.map_err(sdk_error)?;
        Ok(body.into_bytes())
    }
}

/// Registers every `kind = "bedrock"` engine of the catalog into `engines`.
pub fn register_bedrock_engines(
    sdk: &aws_config::SdkConfig,
    catalog: &reelgate::domain::catalog::Catalog,
    engines: &reelgate::domain::registry::Engines,
) -> anyhow::Result<()> {
    for e in catalog.engines.iter().filter(|e| e.kind == "bedrock") {
        engines.insert(
            &e.id,
            std::sync::Arc::new(BedrockVideoEngine::from_catalog(sdk, e)?),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_maps_to_the_protocol() {
        let r = render_of("arn:x", RenderStatus::Failed, Some("quota".into()));
        assert_eq!(r.status, RenderStatus::Failed);
        assert_eq!(r.error.map(|e| e.message), Some("quota".into()));
        assert_eq!(
            render_of("arn:x", RenderStatus::Succeeded, None).progress,
            100
        );
    }
}
