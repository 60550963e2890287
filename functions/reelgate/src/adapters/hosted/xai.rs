//! xAI's Grok Imagine video API (`kind = "xai"`), the one provider whose API has all three of
//! generation, edit and extension. `Authorization: Bearer <key>` on `https://api.x.ai/v1`.
//!
//! What is sent:
//! - a job without a source is `POST /videos/generations` with `model` (the catalog's
//!   `model_id`, default `grok-imagine-video`), `prompt`, `duration` (whole seconds, 1 to 15),
//!   `aspect_ratio` (the API's `16:9`, `9:16`, `1:1`, `4:3`, `3:4`, `3:2`, `2:3`, from the
//!   native size the worker chose) and `resolution` (`480p` or `720p`, by the size's short
//!   side); a first frame goes as `image: {"url"}`, reference images (characters' frames
//!   included, at most seven, never with a first frame, and then at most 10 s) as
//!   `reference_images: [{"url"}]`;
//! - a remix or an edit is `POST /videos/edits` with `model`, `prompt` and `video: {"url"}`
//!   (the API keeps the source's length and ratio, and takes a source of at most 8.7 s, which
//!   the create checks first);
//! - an extension is `POST /videos/extensions` with `model`, `prompt`, `video: {"url"}` and
//!   `duration` (2 to 10 s of new footage; the source must last 2 to 15 s, which the create
//!   checks). The API answers the source and its continuation as one video
//!   ([`crate::domain::videos::SourceUse::VideoWithContinuation`]), so no join follows.
//!
//! Inputs go as reelgate's signed URLs, which xAI fetches. Every create answers
//! `{"request_id"}`; `GET /videos/{request_id}` is polled: `pending` is rendering, `done`
//! carries `video.url` (on xAI's output host, downloaded without the key) unless
//! `video.respect_moderation` is `false`, which is a content refusal, `expired` and `failed`
//! fail the render. A create refused for its content (a 4xx naming moderation or the content
//! policy) is [`EngineError::ContentRefused`]. The API has no cancel: [`VideoEngine::cancel`]
//! does nothing and the render runs out unfetched. A status carries no progress figure.
//!
//! Sources (read 2026-11-28): xAI docs, *Video generation* (docs.x.ai/docs/guides/video-
//! generations and the model-capabilities pages on generation, editing, extension and
//! reference-to-video: the endpoints, durations, ratios, resolutions, the 8.7 s edit source,
//! the 2–15 s extension source, seven reference images at most 10 s, `request_id` polling and
//! its statuses, `respect_moderation`); the official `xai-org/xai-sdk-python`
//! (`types/video.py`: the request and status fields) and Vercel's AI SDK xAI provider
//! (`packages/xai/src/xai-video-model.ts`: the same wire shape). Not confirmed without the real
//! service: the wording of a create refused for its content and the output host
//! (`vidgen.x.ai` in the documentation's examples).

use super::{path_segment, Auth, Provider, ProviderApi};
use crate::domain::catalog::EngineConfig;
use crate::ports::engine::{
    ByteStream, EngineError, Render, RenderRequest, RenderStatus, VideoEngine, CONTENT_REFUSED,
};
use crate::ports::fetch::Fetcher;
use async_trait::async_trait;
use reelgate_engine::protocol::{codes, operations, RenderError};
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// xAI's API root.
pub const DEFAULT_BASE_URL: &str = "https://api.x.ai/v1";
/// The model asked for when the catalog names none.
pub const DEFAULT_MODEL: &str = "grok-imagine-video";
/// Where xAI serves generated videos.
pub const DEFAULT_OUTPUT_HOSTS: &[&str] = &["vidgen.x.ai"];
/// The most reference images a generation takes.
pub const MAX_REFERENCE_IMAGES: usize = 7;
/// The longest generation with reference images, in seconds.
const MAX_REFERENCE_SECONDS: u32 = 10;
/// A generation's seconds.
const GENERATION_SECONDS: (u32, u32) = (1, 15);
/// An extension's seconds of new footage.
const EXTENSION_SECONDS: (u32, u32) = (2, 10);
/// The aspect ratios the API takes, as width and height.
const RATIOS: &[(u32, u32)] = &[(16, 9), (9, 16), (1, 1), (4, 3), (3, 4), (3, 2), (2, 3)];

/// The engine. Build it from a catalog entry with [`XaiEngine::from_config`].
pub struct XaiEngine {
    api: ProviderApi,
    model: String,
}

impl XaiEngine {
    /// From a catalog entry of `kind = "xai"`: `base_url` (default xAI's, `${ENV}` expanded),
    /// the key from `api_key_env`, `model_id` (default [`DEFAULT_MODEL`]) and `output_hosts`
    /// (default [`DEFAULT_OUTPUT_HOSTS`]).
    pub fn from_config(
        config: &EngineConfig,
        key: Option<String>,
        fetcher: Arc<dyn Fetcher>,
    ) -> anyhow::Result<Self> {
        let api = ProviderApi::for_engine(
            config,
            key,
            Provider {
                base_url: DEFAULT_BASE_URL,
                auth: Auth::Bearer,
                headers: Vec::new(),
                output_hosts: DEFAULT_OUTPUT_HOSTS,
            },
            fetcher,
        )?;
        Ok(XaiEngine {
            api,
            model: config
                .model_id
                .clone()
                .filter(|m| !m.trim().is_empty())
                .unwrap_or_else(|| DEFAULT_MODEL.to_owned()),
        })
    }
}

/// The API's `aspect_ratio` nearest the shape of `width`x`height` (on a logarithmic scale).
pub fn aspect_ratio(width: u32, height: u32) -> String {
    let shape = |w: u32, h: u32| (f64::from(w.max(1)) / f64::from(h.max(1))).ln();
    let target = shape(width, height);
    let (w, h) = RATIOS
        .iter()
        .copied()
        .min_by(|a, b| {
            (shape(a.0, a.1) - target)
                .abs()
                .total_cmp(&(shape(b.0, b.1) - target).abs())
        })
        .unwrap_or((16, 9));
    format!("{w}:{h}")
}

/// The API's `resolution` for a native size: `480p` for a short side of 480 or less, else
/// `720p` (the most it renders).
pub fn resolution(width: u32, height: u32) -> &'static str {
    if width.min(height) <= 480 {
        "480p"
    } else {
        "720p"
    }
}

/// The endpoint and body for `request` (its inputs' signed URLs go as they are).
pub fn create_call(
    model: &str,
    request: &RenderRequest,
) -> Result<(&'static str, Value), EngineError> {
    let inputs = &request.inputs;
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("prompt".into(), json!(request.prompt));
    if let Some(source) = &inputs.source {
        let video = json!({ "url": source.video_url });
        return match source.operation.as_str() {
            operations::REMIX | operations::EDIT => {
                body.insert("video".into(), video);
                Ok(("/videos/edits", Value::Object(body)))
            }
            operations::EXTENSION => {
                body.insert("video".into(), video);
                body.insert(
                    "duration".into(),
                    json!(request
                        .seconds
                        .clamp(EXTENSION_SECONDS.0, EXTENSION_SECONDS.1)),
                );
                Ok(("/videos/extensions", Value::Object(body)))
            }
            other => Err(EngineError::Rejected(format!(
                "xAI has no {other} operation"
            ))),
        };
    }
    let mut seconds = request
        .seconds
        .clamp(GENERATION_SECONDS.0, GENERATION_SECONDS.1);
    if let Some(url) = &inputs.first_frame_url {
        body.insert("image".into(), json!({ "url": url }));
    } else if !inputs.reference_image_urls.is_empty() {
        if inputs.reference_image_urls.len() > MAX_REFERENCE_IMAGES {
            return Err(EngineError::Rejected(format!(
                "xAI takes at most {MAX_REFERENCE_IMAGES} reference images"
            )));
        }
        body.insert(
            "reference_images".into(),
            inputs
                .reference_image_urls
                .iter()
                .map(|url| json!({ "url": url }))
                .collect(),
        );
        seconds = seconds.min(MAX_REFERENCE_SECONDS);
    }
    body.insert("duration".into(), json!(seconds));
    body.insert(
        "aspect_ratio".into(),
        json!(aspect_ratio(request.width, request.height)),
    );
    body.insert(
        "resolution".into(),
        json!(resolution(request.width, request.height)),
    );
    Ok(("/videos/generations", Value::Object(body)))
}

/// Whether a refusal's message says the request broke the content rules.
fn names_moderation(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    ["moderation", "content policy", "safety", "usage guidelines"]
        .iter()
        .any(|p| m.contains(p))
}

/// A [`Render`] from `GET /videos/{request_id}`.
pub fn render_of(id: &str, status: &Value) -> Render {
    let mut render = Render {
        id: id.to_owned(),
        status: RenderStatus::Rendering,
        progress: 0,
        error: None,
        result_url: None,
        created_at: crate::observability::metrics::now_millis() / 1000,
    };
    let failed = |code: &str, message: &str| {
        Some(RenderError {
            code: code.to_owned(),
            message: message.to_owned(),
        })
    };
    match status["status"].as_str() {
        Some("done") => {
            let video = &status["video"];
            if video["respect_moderation"].as_bool() == Some(false) {
                tracing::info!(%id, "the provider's moderation withheld the video");
                render.status = RenderStatus::Failed;
                render.error = failed(
                    CONTENT_REFUSED,
                    "the provider's moderation withheld the video",
                );
            } else if let Some(url) = video["url"].as_str() {
                render.status = RenderStatus::Succeeded;
                render.progress = 100;
                render.result_url = Some(url.to_owned());
            } else {
                render.status = RenderStatus::Failed;
                render.error = failed(
                    codes::ENGINE_FAILURE,
                    "the request finished without a video",
                );
            }
        }
        Some("expired") => {
            render.status = RenderStatus::Failed;
            render.error = failed(codes::ENGINE_FAILURE, "the provider let the request expire");
        }
        Some("failed") => {
            let message = super::error_detail(status.to_string().as_bytes());
            render.status = RenderStatus::Failed;
            render.error = if names_moderation(&message) {
                tracing::info!(%id, reason = %message, "the provider refused the render's content");
                failed(
                    CONTENT_REFUSED,
                    "the provider's moderation refused the request",
                )
            } else {
                failed(codes::ENGINE_FAILURE, &message)
            };
        }
        _ => {}
    }
    render
}

#[async_trait]
impl VideoEngine for XaiEngine {
    async fn submit(&self, request: &RenderRequest) -> Result<Render, EngineError> {
        let (path, body) = create_call(&self.model, request)?;
        let answer = self
            .api
            .create(
                &self.api.url(path),
                &body,
                "HTTP 4",
                names_moderation,
                "the provider's moderation refused the request",
            )
            .await?;
        let id = answer["request_id"].as_str().ok_or_else(|| {
            EngineError::Rejected("xAI's answer to the create has no request_id".into())
        })?;
        super::accepted(id)
    }

    async fn status(&self, render_id: &str) -> Result<Render, EngineError> {
        let url = self
            .api
            .url(&format!("/videos/{}", path_segment(render_id)?));
        let status = self
            .api
            .call(reqwest::Method::GET, &url, None, Some(render_id))
            .await?;
        Ok(render_of(render_id, &status))
    }

    /// xAI has no cancel: the request runs out and its video is never fetched.
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
    use crate::ports::engine::{RenderInputs, RenderSource};

    fn request(seconds: u32, width: u32, height: u32) -> RenderRequest {
        RenderRequest {
            model: "m".into(),
            prompt: "a boat".into(),
            seconds,
            aspect_ratio: "16:9".into(),
            width,
            height,
            inputs: RenderInputs::default(),
            callback_url: None,
            client_reference: None,
        }
    }

    #[test]
    fn a_generation_names_the_api_s_ratio_resolution_and_seconds() {
        let (path, body) = create_call("grok-imagine-video", &request(4, 1280, 720)).expect("call");
        assert_eq!(path, "/videos/generations");
        assert_eq!(body["duration"], 4);
        assert_eq!(body["aspect_ratio"], "16:9");
        assert_eq!(body["resolution"], "720p");
        assert_eq!(aspect_ratio(1080, 720), "3:2");
        assert_eq!(aspect_ratio(768, 1366), "9:16");
        assert_eq!(resolution(854, 480), "480p");
        let mut refs = request(15, 720, 720);
        refs.inputs.reference_image_urls = vec!["https://s/1".into(), "https://s/2".into()];
        let (_, body) = create_call("m", &refs).expect("call");
        assert_eq!(body["duration"], 10, "reference images render at most 10 s");
        assert_eq!(body["reference_images"][1]["url"], "https://s/2");
        refs.inputs.reference_image_urls = vec!["https://s/x".into(); 8];
        assert!(create_call("m", &refs).is_err());
    }

    #[test]
    fn operations_on_a_source_go_to_their_own_endpoints() {
        let mut edit = request(6, 1280, 720);
        edit.inputs.source = Some(RenderSource {
            operation: "edit".into(),
            video_url: "https://s/v.mp4".into(),
            render_id: None,
        });
        let (path, body) = create_call("m", &edit).expect("edit");
        assert_eq!(path, "/videos/edits");
        assert_eq!(body["video"]["url"], "https://s/v.mp4");
        assert!(body.get("duration").is_none() && body.get("aspect_ratio").is_none());
        let mut extend = edit.clone();
        extend.seconds = 12;
        extend.inputs.source.as_mut().expect("source").operation = "extension".into();
        let (path, body) = create_call("m", &extend).expect("extension");
        assert_eq!(path, "/videos/extensions");
        assert_eq!(body["duration"], 10);
    }

    #[test]
    fn statuses_map_to_renders() {
        let pending = render_of("r1", &json!({"status": "pending"}));
        assert_eq!(pending.status, RenderStatus::Rendering);
        let done = render_of(
            "r1",
            &json!({"status": "done", "video": {"url": "https://vidgen.x.ai/v.mp4", "duration": 6, "respect_moderation": true}}),
        );
        assert_eq!(done.status, RenderStatus::Succeeded);
        assert_eq!(
            done.result_url.as_deref(),
            Some("https://vidgen.x.ai/v.mp4")
        );
        let withheld = render_of(
            "r1",
            &json!({"status": "done", "video": {"url": "https://vidgen.x.ai/v.mp4", "respect_moderation": false}}),
        );
        assert_eq!(withheld.error.expect("error").code, CONTENT_REFUSED);
        let expired = render_of("r1", &json!({"status": "expired"}));
        assert_eq!(expired.status, RenderStatus::Failed);
        let failed = render_of(
            "r1",
            &json!({"status": "failed", "error": {"code": "internal", "message": "boom"}}),
        );
        assert_eq!(failed.error.expect("error").code, codes::ENGINE_FAILURE);
    }
}
