//! Google's Veo through the Gemini API (`kind = "veo"`). A render is one long-running
//! operation: `POST {base}/models/{model}:predictLongRunning` with
//! `{"instances": [{"prompt", "image"?, "lastFrame"?, "referenceImages"?}], "parameters":
//! {"aspectRatio", "durationSeconds", "resolution"}}` and the key in `x-goog-api-key`; the
//! answer names the operation (`models/{model}/operations/{id}`, kept whole as the render id),
//! which `GET {base}/{name}` reads until `done`. A finished operation carries
//! `response.generateVideoResponse.generatedSamples[0].video.uri`, a file on the API host that is
//! downloaded with the key (redirects on the API origin keep it; anywhere else only the output
//! hosts are fetched, without it). A video the provider's safety filters withheld comes back as
//! a done operation with `raiMediaFilteredCount`/`raiMediaFilteredReasons` and no sample: the
//! render fails with [`CONTENT_REFUSED`]; a create refused for its content (a 400 that names the
//! safety filters) is [`EngineError::ContentRefused`].
//!
//! What is sent: the native duration the worker chose as `durationSeconds` (a number); the
//! orientation as `aspectRatio` `16:9` (landscape or square) or `9:16`; the size's tier as
//! `resolution` (`720p`, `1080p`, `4k`), with the API's rule that 1080p and 4k are only
//! rendered at 8 s (a shorter clip asks for 720p, the conform stage scales it); the caller's
//! images inline (the Gemini API takes no image URLs), read back from reelgate's signed URLs:
//! the first frame as `image`, the last as `lastFrame`, reference images (at most three, only
//! without frames) as `referenceImages` of type `asset`, which the API renders only at 8 s (the
//! clip is trimmed). Nothing else (`personGeneration`, `negativePrompt`, the model's defaults
//! stand). Veo renders its own soundtrack.
//!
//! An extension (Veo 3.1 only) continues a video Veo made itself, within the two days the
//! Gemini API keeps it: the worker sends the source's own operation name as
//! `inputs.source.render_id` (reelgate chains any other source onto its last frame), the adapter
//! reads that operation's `video.uri` and sends it as the instance's `video` (`{"uri"}`, as the
//! `google-genai` SDK sends a generated video) with the prompt, `durationSeconds` 8 and
//! `resolution` 720p (the API's only values for an extension). Veo adds 7 s and answers the
//! source and the extension as one video, which the finalize step conforms whole (trimmed to
//! the source's seconds and the segment's).
//!
//! Best effort: the Gemini API has no cancel for these operations, so [`VideoEngine::cancel`]
//! does nothing (the render runs out; its output is never fetched), and an operation says only
//! whether it is done (no queue position, no progress).
//!
//! Sources (read 2026-11-26): Gemini API, *Generate videos with Veo 3.1 in the Gemini API*
//! (<https://ai.google.dev/gemini-api/docs/video>: 720p, 1080p or 4k at up to 8 s with native
//! audio, 16:9 or 9:16, first and/or last frame, up to three reference images, the operation
//! polled until `done`); Vertex AI, *Veo on Vertex AI API* and *VideoGenerationModelParams*
//! (the request shape: `instances[].image`/`lastFrame` as `{"bytesBase64Encoded", "mimeType"}`,
//! `referenceImages[].{image, referenceType}`, `durationSeconds` a number); the `google-genai`
//! SDK's `GenerateVideosConfig`; `googleapis/js-genai` issues #1270 (the Gemini API takes images
//! inline only) and #1272 (`raiMediaFilteredCount`/`raiMediaFilteredReasons` in a done
//! operation); *Extending Veo videos* in the same Gemini API page (Veo 3.1 only, 7 s per
//! extension, Veo-made videos of the last two days, 720p, `durationSeconds` 8, the output the
//! input and the extension combined) and the `google-genai` SDK's `GenerateVideosSource.video`
//! (sent as `{"uri"}`). The 8 s rule for 1080p, 4k and reference images, the operation name
//! `models/{model}/operations/{id}` and `video.uri` on the API host come from third-party
//! copies of the API's behaviour, not from a Google page in the reference store.

use super::{path_segment, Auth, Provider, ProviderApi};
use crate::domain::catalog::EngineConfig;
use crate::ports::engine::{
    ByteStream, EngineError, Render, RenderRequest, RenderStatus, VideoEngine, CONTENT_REFUSED,
};
use crate::ports::fetch::Fetcher;
use async_trait::async_trait;
use base64::Engine as _;
use reelgate_engine::protocol::{codes, RenderError};
use serde_json::{json, Value};
use std::sync::Arc;

/// The Gemini API's root, `v1beta` included.
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";
/// The model asked for when the catalog names none.
pub const DEFAULT_MODEL: &str = "veo-3.1-generate-preview";
/// Where a download on the API host may be redirected to (besides the API origin itself).
pub const DEFAULT_OUTPUT_HOSTS: &[&str] = &[".googleusercontent.com"];
/// The most reference images a request carries.
pub const MAX_REFERENCE_IMAGES: usize = 3;
/// The only duration the API renders at 1080p, at 4k and with reference images.
const LONG_CLIP_SECONDS: u32 = 8;

/// The engine. Build it from a catalog entry with [`VeoEngine::from_config`].
pub struct VeoEngine {
    api: ProviderApi,
    model: String,
}

/// An image sent inline: its bytes in base64 and its MIME type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InlineImage {
    pub base64: String,
    pub mime: String,
}

impl InlineImage {
    fn from_bytes(bytes: &[u8], mime: String) -> InlineImage {
        InlineImage {
            base64: base64::engine::general_purpose::STANDARD.encode(bytes),
            mime,
        }
    }

    fn wire(&self) -> Value {
        json!({ "bytesBase64Encoded": self.base64, "mimeType": self.mime })
    }
}

/// The caller's images as the request carries them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Images {
    pub first_frame: Option<InlineImage>,
    pub last_frame: Option<InlineImage>,
    pub references: Vec<InlineImage>,
}

impl VeoEngine {
    /// From a catalog entry of `kind = "veo"`: `base_url` (default the Gemini API's, `${ENV}`
    /// expanded), the key from `api_key_env`, `model_id` (default [`DEFAULT_MODEL`]) and
    /// `output_hosts` (default [`DEFAULT_OUTPUT_HOSTS`]).
    pub fn from_config(
        config: &EngineConfig,
        key: Option<String>,
        fetcher: Arc<dyn Fetcher>,
    ) -> anyhow::Result<Self> {
        let model = config
            .model_id
            .clone()
            .unwrap_or_else(|| DEFAULT_MODEL.to_owned());
        if path_segment(&model).is_err() {
            anyhow::bail!(
                "engine {}: model_id {model:?} is not a Veo model id",
                config.id
            );
        }
        let api = ProviderApi::for_engine(
            config,
            key,
            Provider {
                base_url: DEFAULT_BASE_URL,
                auth: Auth::Header("x-goog-api-key"),
                headers: Vec::new(),
                output_hosts: DEFAULT_OUTPUT_HOSTS,
            },
            fetcher,
        )?;
        Ok(VeoEngine { api, model })
    }

    async fn inline(&self, url: &str) -> Result<InlineImage, EngineError> {
        let (bytes, mime) = self.api.read_input(url).await?;
        Ok(InlineImage::from_bytes(&bytes, mime))
    }
}

/// `resolution` for a native size: its tier by the short side, 720p below 8 s (the API renders
/// 1080p and 4k only at 8 s).
pub fn resolution(width: u32, height: u32, seconds: u32) -> &'static str {
    let short = width.min(height);
    let tier = if short <= 720 {
        "720p"
    } else if short <= 1080 {
        "1080p"
    } else {
        "4k"
    };
    if seconds == LONG_CLIP_SECONDS {
        tier
    } else {
        "720p"
    }
}

/// The `predictLongRunning` body for `request` with its images already inline.
pub fn create_body(request: &RenderRequest, images: &Images) -> Value {
    let mut instance = json!({ "prompt": request.prompt });
    let mut seconds = request.seconds;
    let framed = images.first_frame.is_some() || images.last_frame.is_some();
    if let Some(image) = &images.first_frame {
        instance["image"] = image.wire();
    }
    if let Some(image) = &images.last_frame {
        instance["lastFrame"] = image.wire();
    }
    if !framed && !images.references.is_empty() {
        instance["referenceImages"] = images
            .references
            .iter()
            .map(|image| json!({ "image": image.wire(), "referenceType": "asset" }))
            .collect();
        seconds = LONG_CLIP_SECONDS;
    }
    let aspect = if request.height > request.width {
        "9:16"
    } else {
        "16:9"
    };
    json!({
        "instances": [instance],
        "parameters": {
            "aspectRatio": aspect,
            "durationSeconds": seconds,
            "resolution": resolution(request.width, request.height, seconds),
        },
    })
}

/// Whether a provider message says its safety filters refused the request.
fn names_safety(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    [
        "safety",
        "responsible ai",
        "usage guidelines",
        "raimediafiltered",
        "sensitive words",
    ]
    .iter()
    .any(|p| m.contains(p))
}

/// Checks that `name` is an operation name of the shape the API returns,
/// `models/{model}/operations/{id}`, each part a plain path segment.
pub fn operation_name(name: &str) -> Result<&str, EngineError> {
    let parts: Vec<&str> = name.split('/').collect();
    let valid = parts.len() == 4
        && parts[0] == "models"
        && parts[2] == "operations"
        && path_segment(parts[1]).is_ok()
        && path_segment(parts[3]).is_ok();
    if valid {
        Ok(name)
    } else {
        Err(EngineError::Rejected(format!(
            "the provider returned an unusable operation name {:?}",
            name.chars().take(120).collect::<String>()
        )))
    }
}

fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default()
}

/// A Render from an operation as `GET {base}/{name}` returns it.
pub fn render_from_operation(id: &str, op: &Value) -> Render {
    let mut render = Render {
        id: id.to_owned(),
        status: RenderStatus::Rendering,
        progress: 0,
        error: None,
        result_url: None,
        created_at: now_secs(),
    };
    if op["done"].as_bool() != Some(true) {
        return render;
    }
    let failed = |code: &str, message: &str| RenderError {
        code: code.to_owned(),
        message: message.to_owned(),
    };
    if op.get("error").is_some_and(|e| !e.is_null()) {
        let message = op["error"]["message"]
            .as_str()
            .unwrap_or("the render failed");
        render.status = RenderStatus::Failed;
        render.error = Some(if names_safety(message) {
            tracing::info!(%id, reason = %message, "the provider refused the render's content");
            failed(
                CONTENT_REFUSED,
                "the provider's safety filters refused the request",
            )
        } else {
            failed(codes::ENGINE_FAILURE, message)
        });
        return render;
    }
    let response = &op["response"]["generateVideoResponse"];
    let uri = response["generatedSamples"]
        .as_array()
        .and_then(|samples| samples.iter().find_map(|s| s["video"]["uri"].as_str()));
    match uri {
        Some(uri) => {
            render.status = RenderStatus::Succeeded;
            render.progress = 100;
            render.result_url = Some(uri.to_owned());
        }
        None => {
            let filtered = response["raiMediaFilteredCount"].as_u64().unwrap_or(0) > 0
                || response["raiMediaFilteredReasons"]
                    .as_array()
                    .is_some_and(|r| !r.is_empty());
            render.status = RenderStatus::Failed;
            render.error = Some(if filtered {
                tracing::info!(%id, reasons = %response["raiMediaFilteredReasons"], "the provider withheld the video");
                failed(
                    CONTENT_REFUSED,
                    "the provider's safety filters withheld the video",
                )
            } else {
                failed(
                    codes::ENGINE_FAILURE,
                    "the operation finished without a video",
                )
            });
        }
    }
    render
}

/// The `durationSeconds` and `resolution` the API takes for an extension.
const EXTENSION_SECONDS: u32 = 8;

/// The `predictLongRunning` body that extends the generated video at `video_uri`.
pub fn extension_body(request: &RenderRequest, video_uri: &str) -> Value {
    let aspect = if request.height > request.width {
        "9:16"
    } else {
        "16:9"
    };
    json!({
        "instances": [{ "prompt": request.prompt, "video": { "uri": video_uri } }],
        "parameters": {
            "aspectRatio": aspect,
            "durationSeconds": EXTENSION_SECONDS,
            "resolution": "720p",
        },
    })
}

impl VeoEngine {
    /// The `video.uri` of the finished operation `render_id` (a video this engine made).
    async fn generated_video(&self, render_id: &str) -> Result<String, EngineError> {
        let name = operation_name(render_id)?;
        let op = self
            .api
            .call(
                reqwest::Method::GET,
                &self.api.url(&format!("/{name}")),
                None,
                Some(render_id),
            )
            .await?;
        render_from_operation(render_id, &op)
            .result_url
            .ok_or_else(|| {
                EngineError::Rejected("the source's operation holds no video to extend".into())
            })
    }

    /// The body of a render made from the prompt and the caller's images (inline).
    async fn images_body(&self, request: &RenderRequest) -> Result<Value, EngineError> {
        let inputs = &request.inputs;
        let mut images = Images::default();
        if let Some(url) = &inputs.first_frame_url {
            images.first_frame = Some(self.inline(url).await?);
        }
        if let Some(url) = &inputs.last_frame_url {
            images.last_frame = Some(self.inline(url).await?);
        }
        if images.first_frame.is_none() && images.last_frame.is_none() {
            if inputs.reference_image_urls.len() > MAX_REFERENCE_IMAGES {
                return Err(EngineError::Rejected(format!(
                    "the model takes at most {MAX_REFERENCE_IMAGES} reference images"
                )));
            }
            for url in &inputs.reference_image_urls {
                images.references.push(self.inline(url).await?);
            }
        }
        Ok(create_body(request, &images))
    }

    /// Starts the operation `body` asks for at `url`.
    async fn start(&self, url: &str, body: &Value) -> Result<Render, EngineError> {
        let answer = self
            .api
            .create(
                url,
                body,
                "HTTP 400",
                names_safety,
                "the provider's safety filters refused the request",
            )
            .await?;
        let name = answer["name"].as_str().unwrap_or_default();
        let name = operation_name(name)?;
        let mut render = render_from_operation(name, &answer);
        if render.status == RenderStatus::Rendering {
            render.status = RenderStatus::Queued;
        }
        Ok(render)
    }
}

#[async_trait]
impl VideoEngine for VeoEngine {
    async fn submit(&self, request: &RenderRequest) -> Result<Render, EngineError> {
        let inputs = &request.inputs;
        let body = match &inputs.source {
            Some(source)
                if source.operation == reelgate_engine::protocol::operations::EXTENSION =>
            {
                let render_id = source.render_id.as_deref().ok_or_else(|| {
                    EngineError::Rejected("Veo extends only a video it made".into())
                })?;
                Some(extension_body(
                    request,
                    &self.generated_video(render_id).await?,
                ))
            }
            Some(source) => {
                return Err(EngineError::Rejected(format!(
                    "Veo has no {} operation",
                    source.operation
                )))
            }
            None => None,
        };
        let body = match body {
            Some(body) => body,
            None => self.images_body(request).await?,
        };
        let url = self
            .api
            .url(&format!("/models/{}:predictLongRunning", self.model));
        self.start(&url, &body).await
    }

    async fn status(&self, render_id: &str) -> Result<Render, EngineError> {
        let name = operation_name(render_id)?;
        let url = self.api.url(&format!("/{name}"));
        let op = self
            .api
            .call(reqwest::Method::GET, &url, None, Some(render_id))
            .await?;
        Ok(render_from_operation(render_id, &op))
    }

    /// Best effort: the Gemini API has no cancel for video operations; the render runs out and
    /// its output is never fetched.
    async fn cancel(&self, _render_id: &str) -> Result<(), EngineError> {
        Ok(())
    }

    async fn fetch_result(&self, render: &Render) -> Result<ByteStream, EngineError> {
        self.api.download_output(render).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reelgate_engine::protocol::RenderInputs;

    fn request(seconds: u32, width: u32, height: u32) -> RenderRequest {
        RenderRequest {
            model: "veo-model".into(),
            prompt: "a paper boat".into(),
            seconds,
            aspect_ratio: "16:9".into(),
            width,
            height,
            inputs: RenderInputs::default(),
            callback_url: None,
            client_reference: Some("video_1".into()),
        }
    }

    fn image(tag: &str) -> InlineImage {
        InlineImage {
            base64: tag.into(),
            mime: "image/png".into(),
        }
    }

    #[test]
    fn a_text_render_sends_the_native_values() {
        let body = create_body(&request(4, 1280, 720), &Images::default());
        assert_eq!(
            body,
            json!({
                "instances": [{ "prompt": "a paper boat" }],
                "parameters": { "aspectRatio": "16:9", "durationSeconds": 4, "resolution": "720p" },
            })
        );
        let body = create_body(&request(8, 1080, 1920), &Images::default());
        assert_eq!(body["parameters"]["aspectRatio"], "9:16");
        assert_eq!(body["parameters"]["resolution"], "1080p");
    }

    #[test]
    fn an_extension_names_the_generated_video_at_the_api_s_only_values() {
        let body = extension_body(
            &request(4, 720, 1280),
            "https://api/v1beta/files/f1:download",
        );
        assert_eq!(
            body,
            json!({
                "instances": [{ "prompt": "a paper boat", "video": { "uri": "https://api/v1beta/files/f1:download" } }],
                "parameters": { "aspectRatio": "9:16", "durationSeconds": 8, "resolution": "720p" },
            })
        );
    }

    #[test]
    fn high_tiers_are_asked_only_at_eight_seconds() {
        assert_eq!(resolution(1920, 1080, 8), "1080p");
        assert_eq!(resolution(1920, 1080, 6), "720p");
        assert_eq!(resolution(3840, 2160, 8), "4k");
        assert_eq!(resolution(2160, 3840, 4), "720p");
        assert_eq!(resolution(720, 1280, 4), "720p");
        // A square size renders landscape (the API has no 1:1).
        let body = create_body(&request(4, 720, 720), &Images::default());
        assert_eq!(body["parameters"]["aspectRatio"], "16:9");
    }

    #[test]
    fn frames_and_references_go_inline() {
        let images = Images {
            first_frame: Some(image("AAA")),
            last_frame: Some(image("BBB")),
            references: vec![image("CCC")],
        };
        let body = create_body(&request(6, 720, 1280), &images);
        let instance = &body["instances"][0];
        assert_eq!(
            instance["image"],
            json!({ "bytesBase64Encoded": "AAA", "mimeType": "image/png" })
        );
        assert_eq!(instance["lastFrame"]["bytesBase64Encoded"], "BBB");
        // Frames win over references (the API takes one or the other).
        assert!(instance.get("referenceImages").is_none());
        assert_eq!(body["parameters"]["durationSeconds"], 6);

        let images = Images {
            references: vec![image("CCC"), image("DDD")],
            ..Images::default()
        };
        let body = create_body(&request(4, 1280, 720), &images);
        assert_eq!(
            body["instances"][0]["referenceImages"][1],
            json!({ "image": { "bytesBase64Encoded": "DDD", "mimeType": "image/png" }, "referenceType": "asset" })
        );
        // Reference images render only at 8 s.
        assert_eq!(body["parameters"]["durationSeconds"], 8);
    }

    #[test]
    fn operations_map_to_renders() {
        let id = "models/veo-3.1-generate-preview/operations/abc123";
        let running = render_from_operation(id, &json!({ "name": id }));
        assert_eq!(running.status, RenderStatus::Rendering);
        assert!(!running.status.is_terminal());

        let done = render_from_operation(
            id,
            &json!({ "name": id, "done": true, "response": { "generateVideoResponse": {
                "generatedSamples": [{ "video": { "uri": "https://x.test/v1beta/files/f:download?alt=media" } }]
            } } }),
        );
        assert_eq!(done.status, RenderStatus::Succeeded);
        assert_eq!(done.progress, 100);
        assert_eq!(
            done.result_url.as_deref(),
            Some("https://x.test/v1beta/files/f:download?alt=media")
        );

        let withheld = render_from_operation(
            id,
            &json!({ "name": id, "done": true, "response": { "generateVideoResponse": {
                "raiMediaFilteredCount": 1,
                "raiMediaFilteredReasons": ["Veo could not generate 1 videos based on the prompt provided."]
            } } }),
        );
        assert_eq!(withheld.status, RenderStatus::Failed);
        let error = withheld.error.expect("error");
        assert_eq!(error.code, CONTENT_REFUSED);
        assert!(!error.message.to_lowercase().contains("veo"));

        let failed = render_from_operation(
            id,
            &json!({ "name": id, "done": true, "error": { "code": 13, "message": "internal error" } }),
        );
        assert_eq!(failed.status, RenderStatus::Failed);
        assert_eq!(failed.error.expect("error").code, codes::ENGINE_FAILURE);

        let empty = render_from_operation(id, &json!({ "name": id, "done": true, "response": {} }));
        assert_eq!(empty.error.expect("error").code, codes::ENGINE_FAILURE);
    }

    #[test]
    fn operation_names_cannot_reshape_paths() {
        assert!(operation_name("models/veo-3.1-generate-preview/operations/abc123").is_ok());
        for bad in [
            "",
            "operations/abc",
            "models/veo/operations/../x",
            "models/veo/operations/a/b",
            "models/../operations/abc",
            "files/x/operations/abc",
        ] {
            assert!(operation_name(bad).is_err(), "{bad}");
        }
    }
}
