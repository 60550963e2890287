//! A hosted video engine: Amazon Bedrock's asynchronous invoke (`StartAsyncInvoke` /
//! `GetAsyncInvoke`), which writes the rendered MP4 to S3, for Amazon Nova Reel. The worker asks
//! it only for what Nova Reel renders (`domain::catalog::native_renders`): 1280x720 at 24 fps, no audio,
//! 6 s as one shot (`TEXT_VIDEO`) or 12 to 120 s in steps of 6 as several
//! (`MULTI_SHOT_AUTOMATED` from the prompt; `MULTI_SHOT_MANUAL` when a first frame opens the
//! first shot). A first frame is fitted to 1280x720 (Nova Reel takes no other size) and sent
//! inline. The result is read from `<output_s3_uri>/<invocation>/output.mp4`; the finalize step
//! conforms it to the contract (768p, the seconds asked, an audio track).
//!
//! It is registered by the AWS hosts for catalog engines of `kind = "bedrock"` (`model_id`,
//! `output_s3_uri`). It cannot be exercised on the local emulator (no Bedrock video models
//! there); `nova_reel_input` is checked against the documented request shapes below.

use async_trait::async_trait;
use aws_sdk_bedrockruntime::types::{
    AsyncInvokeOutputDataConfig, AsyncInvokeS3OutputDataConfig, AsyncInvokeStatus,
};
use aws_smithy_types::{Document, Number};
use base64::Engine as _;
use reelgate::ports::engine::{
    ByteStream, EngineError, Render, RenderRequest, RenderStatus, VideoEngine,
};
use reelgate_engine::protocol::RenderError;
use serde_json::{json, Value};

pub struct BedrockVideoEngine {
    bedrock: aws_sdk_bedrockruntime::Client,
    s3: aws_sdk_s3::Client,
    http: reqwest::Client,
    model_id: String,
    output_s3_uri: String,
}

impl BedrockVideoEngine {
    pub fn new(sdk: &aws_config::SdkConfig, model_id: &str, output_s3_uri: &str) -> Self {
        Self::with_clients(
            aws_sdk_bedrockruntime::Client::new(sdk),
            aws_sdk_s3::Client::new(sdk),
            model_id,
            output_s3_uri,
        )
    }

    /// The engine over clients built elsewhere (a Bedrock endpoint and an S3 endpoint of their
    /// own, as in the tests).
    pub fn with_clients(
        bedrock: aws_sdk_bedrockruntime::Client,
        s3: aws_sdk_s3::Client,
        model_id: &str,
        output_s3_uri: &str,
    ) -> Self {
        BedrockVideoEngine {
            bedrock,
            s3,
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

    /// The first frame, fitted to the render's size, as Nova Reel's inline image.
    async fn first_frame(&self, request: &RenderRequest) -> Result<Option<Value>, EngineError> {
        let Some(url) = &request.inputs.first_frame_url else {
            return Ok(None);
        };
        let bytes = self
            .http
            .get(url)
            .send()
            .await
            .and_then(|r| r.error_for_status())
            .map_err(|e| EngineError::Unreachable(format!("first frame: {e}")))?
            .bytes()
            .await
            .map_err(|e| EngineError::Unreachable(format!("first frame: {e}")))?;
        let (width, height) = (request.width, request.height);
        let jpeg = tokio::task::spawn_blocking(move || {
            reelgate_media::fit_frame_jpeg(&bytes, width, height)
        })
        .await
        .map_err(|e| EngineError::Rejected(format!("first frame: {e}")))?
        .map_err(|e| EngineError::Rejected(format!("first frame: {e}")))?;
        Ok(Some(json!({
            "format": "jpeg",
            "source": { "bytes": base64::engine::general_purpose::STANDARD.encode(jpeg) },
        })))
    }
}

/// Nova Reel's shot length and its longest multi-shot clip (seconds).
const SHOT_SECONDS: u32 = 6;
const MAX_MULTI_SHOT_SECONDS: u32 = 120;

/// The model input Nova Reel documents for a render of `seconds` at `width`x`height`, with an
/// optional first frame (already an inline image object): one shot of 6 s, or 12 to 120 s in
/// steps of 6 as automated shots from the prompt, or as manual shots of the same prompt when a
/// first frame must open the first one. Anything else is refused here rather than by Bedrock.
pub fn nova_reel_input(
    prompt: &str,
    seconds: u32,
    width: u32,
    height: u32,
    first_frame: Option<Value>,
) -> Result<Value, EngineError> {
    if (width, height) != (1280, 720) {
        return Err(EngineError::Rejected(format!(
            "Nova Reel renders 1280x720 only, not {width}x{height}"
        )));
    }
    if seconds % SHOT_SECONDS != 0 || !(SHOT_SECONDS..=MAX_MULTI_SHOT_SECONDS).contains(&seconds) {
        return Err(EngineError::Rejected(format!(
            "Nova Reel renders 6 s, or 12 to 120 s in steps of 6, not {seconds} s"
        )));
    }
    let config = |duration: Option<u32>| {
        let mut c = json!({ "fps": 24, "dimension": "1280x720" });
        if let Some(d) = duration {
            c["durationSeconds"] = d.into();
        }
        c
    };
    Ok(match (seconds, first_frame) {
        (SHOT_SECONDS, image) => {
            let mut params = json!({ "text": prompt });
            if let Some(image) = image {
                params["images"] = json!([image]);
            }
            json!({
                "taskType": "TEXT_VIDEO",
                "textToVideoParams": params,
                "videoGenerationConfig": config(Some(SHOT_SECONDS)),
            })
        }
        (_, None) => json!({
            "taskType": "MULTI_SHOT_AUTOMATED",
            "multiShotAutomatedParams": { "text": prompt },
            "videoGenerationConfig": config(Some(seconds)),
        }),
        (_, Some(image)) => {
            let shots: Vec<Value> = (0..seconds / SHOT_SECONDS)
                .map(|i| {
                    if i == 0 {
                        json!({ "text": prompt, "image": image })
                    } else {
                        json!({ "text": prompt })
                    }
                })
                .collect();
            json!({
                "taskType": "MULTI_SHOT_MANUAL",
                "multiShotManualParams": { "shots": shots },
                "videoGenerationConfig": config(None),
            })
        }
    })
}

/// A JSON value as the SDK's document type.
fn document(value: Value) -> Document {
    match value {
        Value::Null => Document::Null,
        Value::Bool(b) => Document::Bool(b),
        Value::Number(n) => Document::Number(match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => Number::PosInt(u),
            (None, Some(i)) => Number::NegInt(i),
            _ => Number::Float(n.as_f64().unwrap_or_default()),
        }),
        Value::String(s) => Document::String(s),
        Value::Array(items) => Document::Array(items.into_iter().map(document).collect()),
        Value::Object(map) => {
            Document::Object(map.into_iter().map(|(k, v)| (k, document(v))).collect())
        }
    }
}

/// The SDK's display of a dispatch or timeout failure is terse ("dispatch failure"); the
/// engine's error carries the reason from the error's sources.
fn sdk_error<E, R>(e: aws_sdk_bedrockruntime::error::SdkError<E, R>) -> EngineError
where
    E: aws_sdk_bedrockruntime::error::ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    EngineError::Unreachable(crate::errors::describe(&e))
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
        let image = self.first_frame(request).await?;
        let input = document(nova_reel_input(
            &request.prompt,
            request.seconds,
            request.width,
            request.height,
            image,
        )?);
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

    async fn fetch_result(&self, render: &Render) -> Result<ByteStream, EngineError> {
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
        let limit = reelgate::domain::videos::workflow::steps::MAX_ENGINE_OUTPUT_BYTES;
        if object
            .content_length()
            .is_some_and(|n| u64::try_from(n).unwrap_or(u64::MAX) > limit)
        {
            return Err(EngineError::Rejected(format!(
                "the output is over {limit} bytes"
            )));
        }
        // Passed on as it arrives: the worker streams it into the blob store.
        Ok(Box::pin(futures::stream::unfold(
            object.body,
            |mut body| async move {
                let chunk = body.next().await?;
                Some((chunk.map_err(std::io::Error::other), body))
            },
        )))
    }
}

/// Registers every `kind = "bedrock"` engine of the catalog into `engines`.
pub fn register_bedrock_engines(
    sdk: &aws_config::SdkConfig,
    catalog: &reelgate::domain::catalog::Catalog,
    engines: &reelgate::domain::catalog::providers::Engines,
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
    fn the_input_is_what_nova_reel_documents() {
        let one = nova_reel_input("a fox", 6, 1280, 720, None).expect("one shot");
        assert_eq!(one["taskType"], "TEXT_VIDEO");
        assert_eq!(one["videoGenerationConfig"]["durationSeconds"], 6);
        assert_eq!(one["videoGenerationConfig"]["fps"], 24);
        assert_eq!(one["videoGenerationConfig"]["dimension"], "1280x720");
        let image = json!({"format": "jpeg", "source": {"bytes": "AA=="}});
        let framed = nova_reel_input("a fox", 6, 1280, 720, Some(image.clone())).expect("framed");
        assert_eq!(framed["textToVideoParams"]["images"][0], image);
        let auto = nova_reel_input("a fox", 18, 1280, 720, None).expect("multi-shot");
        assert_eq!(auto["taskType"], "MULTI_SHOT_AUTOMATED");
        assert_eq!(auto["multiShotAutomatedParams"]["text"], "a fox");
        assert_eq!(auto["videoGenerationConfig"]["durationSeconds"], 18);
        let manual = nova_reel_input("a fox", 12, 1280, 720, Some(image.clone())).expect("manual");
        assert_eq!(manual["taskType"], "MULTI_SHOT_MANUAL");
        let shots = manual["multiShotManualParams"]["shots"]
            .as_array()
            .expect("shots");
        assert_eq!(shots.len(), 2);
        assert_eq!(shots[0]["image"], image);
        assert!(shots[1].get("image").is_none());
        assert!(manual["videoGenerationConfig"]
            .get("durationSeconds")
            .is_none());
        for (seconds, w, h) in [
            (4, 1280, 720),
            (8, 1280, 720),
            (126, 1280, 720),
            (6, 1366, 768),
        ] {
            assert!(
                nova_reel_input("a fox", seconds, w, h, None).is_err(),
                "{seconds} s at {w}x{h}"
            );
        }
        assert!(matches!(document(auto), Document::Object(_)));
    }

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
