//! Luma's Dream Machine API (`kind = "luma"`, Ray models). A render is one generation, created
//! with a bearer key and answered with the generation (`id`, `state`); `GET {base}/generations/{id}`
//! is polled through its states `queued` → `dreaming` → `completed` (with `assets.video`, an MP4
//! on Luma's CDN, downloaded without the key) or `failed` (with `failure_reason`). A generation
//! its moderation refused fails with a `failure_reason` that names moderation or blacklisted
//! words: the render fails with [`CONTENT_REFUSED`]; a create refused for its content (a 400
//! naming moderation) is [`EngineError::ContentRefused`].
//!
//! What is sent:
//! - a job without a source is `POST {base}/generations/video` with `{"generation_type":
//!   "video", "model", "prompt", "aspect_ratio", "resolution", "duration", "keyframes"?}`: the
//!   native duration the worker chose as `duration` (`"5s"`, `"9s"`); the size's shape as the
//!   nearest of Luma's `aspect_ratio` values (`1:1`, `16:9`, `9:16`, `4:3`, `3:4`, `21:9`,
//!   `9:21`) and its tier as `resolution` (`540p`, `720p`, `1080p`, `4k`, the smallest at or
//!   above the size's short side); the first and last frames as keyframes `frame0`/`frame1` of
//!   type `image` with reelgate's signed URLs (Luma downloads them). Nothing else (`loop`,
//!   `callback_url`, `concepts` keep their defaults). Ray renders no soundtrack.
//! - an extension is the same create with `keyframes.frame0 = {"type": "generation", "id"}`,
//!   the id of the completed generation that made the source (`inputs.source.render_id`, which
//!   reelgate sends only for a source this engine rendered: Luma extends only its own
//!   generations, so any other source is chained onto its last frame before it gets here; an
//!   extension without it, or with an id that is not a UUID, is refused). The new generation
//!   is taken as the segment alone, which reelgate joins after the source.
//! - a remix or an edit is `POST {base}/generations/video/modify` with `{"generation_type":
//!   "modify_video", "model", "mode", "media": {"url"}, "prompt", "first_frame"?}`: the source's
//!   signed URL as `media.url` (Luma downloads it; at most 10 s and 100 MB on ray-2, which the
//!   create checks first for the length), `model` the engine's when it is `ray-2` or
//!   `ray-flash-2` (the two modify takes), else `ray-2`, `mode` `adhere_1` for an edit (the
//!   output keeps the source's structure closely) and `flex_1` for a remix (freer restyling
//!   that keeps recognisable elements), a first frame the caller sent as `first_frame.url`.
//!
//! Best effort: the API has no cancel; [`VideoEngine::cancel`] deletes the generation
//! (`DELETE {base}/generations/{id}`, documented as deleting it; whether that stops a running
//! render is not documented), and a generation says only which state it is in (no progress).
//!
//! Sources: the Dream Machine API as Luma's official Python SDK carries its specification
//! (`lumalabs/lumaai-python` 1.18.1, 2025-10-18, generated from Luma's OpenAPI document, read
//! 2026-11-26 and 2026-11-28): `api.md` for the routes `POST /generations/video`,
//! `POST /generations/video/modify`, `GET`/`DELETE /generations/{id}`;
//! `types/generations/video_create_params.py` for the body (`model` required, `ray-2`,
//! `ray-flash-2`, `ray-1-6`, `resolution` `540p`/`720p`/`1080p`/`4k`, `duration` `5s`/`9s`, the
//! seven aspect ratios, keyframes `{"type": "image", "url"}` or `{"type": "generation", "id"}`);
//! `types/generations/video_modify_params.py` for the modify body (`generation_type`
//! `modify_video`, `media.url`, `mode` `adhere_1..3`/`flex_1..3`/`reimagine_1..3`, `model`
//! `ray-2`/`ray-flash-2`, optional `prompt`, `first_frame.url`, `callback_url`);
//! `types/generation.py` for the states, `assets.video` and `failure_reason`; `_client.py` for
//! the base URL and the bearer key. Luma's documentation (docs.lumalabs.ai, read 2026-11-28):
//! *Modify Video* (ray-2 takes at most 10 s and 100 MB; what the three mode families do),
//! *Errors* (prompts of 3 to 5000 characters; the moderation failure reasons "Contains
//! blacklisted words", "Frame moderation failed", "Advanced prompt moderation failed"), and
//! *Video Generation* for extending a generation by id ("Extend is currently supported only for
//! generated videos"); Luma's ComfyUI node's issue #7 for a refusal seen as "Advanced
//! moderation failed".
//!
//! Not confirmed without the real service: that an extension's video holds the new segment
//! only (the documentation shows none; if Luma answered the source and its continuation, the
//! engine would need `extension_includes_source`), that the segment continues from the end of
//! the Luma generation (5 s or 9 s) even where reelgate trimmed the source shorter (a 4 s video
//! from a 5 s generation: up to a second of motion skipped at the seam), that a `modify_video`
//! generation can itself be extended, the output length of a modify (assumed the input's; the
//! finalize step conforms it to the job's seconds either way) and its frame size, and the
//! wording of a create refused for its content.

use super::{path_segment, Auth, Provider, ProviderApi};
use crate::domain::catalog::EngineConfig;
use crate::ports::engine::{
    ByteStream, EngineError, Render, RenderRequest, RenderStatus, VideoEngine, CONTENT_REFUSED,
};
use crate::ports::fetch::Fetcher;
use async_trait::async_trait;
use reelgate_engine::protocol::{codes, operations, RenderError};
use serde_json::{json, Value};
use std::sync::Arc;

/// The Dream Machine API's root.
pub const DEFAULT_BASE_URL: &str = "https://api.lumalabs.ai/dream-machine/v1";
/// The model asked for when the catalog names none.
pub const DEFAULT_MODEL: &str = "ray-2";
/// Where Luma serves generated videos (`storage.cdn-luma.com`).
pub const DEFAULT_OUTPUT_HOSTS: &[&str] = &[".cdn-luma.com"];

/// Luma's aspect ratios, as (name, width, height).
const ASPECT_RATIOS: &[(&str, u32, u32)] = &[
    ("16:9", 16, 9),
    ("9:16", 9, 16),
    ("1:1", 1, 1),
    ("4:3", 4, 3),
    ("3:4", 3, 4),
    ("21:9", 21, 9),
    ("9:21", 9, 21),
];
/// The models `POST /generations/video/modify` takes; any other engine model modifies with the
/// first.
const MODIFY_MODELS: &[&str] = &["ray-2", "ray-flash-2"];
/// Luma's resolutions, as (name, short side in pixels).
const RESOLUTIONS: &[(&str, u32)] = &[("540p", 540), ("720p", 720), ("1080p", 1080), ("4k", 2160)];

/// The engine. Build it from a catalog entry with [`LumaEngine::from_config`].
pub struct LumaEngine {
    api: ProviderApi,
    model: String,
}

impl LumaEngine {
    /// From a catalog entry of `kind = "luma"`: `base_url` (default Luma's, `${ENV}` expanded),
    /// the bearer key from `api_key_env`, `model_id` (default [`DEFAULT_MODEL`]) and
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
        Ok(LumaEngine { api, model })
    }
}

/// Luma's aspect ratio nearest the shape of `width`x`height` (on a logarithmic scale).
pub fn aspect_ratio(width: u32, height: u32) -> &'static str {
    let shape = |w: u32, h: u32| (f64::from(w.max(1)) / f64::from(h.max(1))).ln();
    let target = shape(width, height);
    ASPECT_RATIOS
        .iter()
        .min_by(|a, b| {
            let da = (shape(a.1, a.2) - target).abs();
            let db = (shape(b.1, b.2) - target).abs();
            da.total_cmp(&db)
        })
        .map_or("16:9", |a| a.0)
}

/// Luma's smallest resolution whose short side covers the size's, else its largest.
pub fn resolution(width: u32, height: u32) -> &'static str {
    let short = width.min(height);
    RESOLUTIONS
        .iter()
        .find(|r| r.1 >= short)
        .map_or("4k", |r| r.0)
}

/// The create body for `request` on `model`.
pub fn create_body(model: &str, request: &RenderRequest) -> Value {
    let mut body = json!({
        "generation_type": "video",
        "model": model,
        "prompt": request.prompt,
        "aspect_ratio": aspect_ratio(request.width, request.height),
        "resolution": resolution(request.width, request.height),
        "duration": format!("{}s", request.seconds),
    });
    let mut keyframes = serde_json::Map::new();
    if let Some(url) = &request.inputs.first_frame_url {
        keyframes.insert("frame0".into(), json!({ "type": "image", "url": url }));
    }
    if let Some(url) = &request.inputs.last_frame_url {
        keyframes.insert("frame1".into(), json!({ "type": "image", "url": url }));
    }
    if !keyframes.is_empty() {
        body["keyframes"] = Value::Object(keyframes);
    }
    body
}

/// A Luma generation id (a UUID) as sent back in `keyframes.frame0.id`: hex digits and dashes
/// only, so an id from elsewhere can never reshape the request.
pub fn generation_id(id: &str) -> Result<&str, EngineError> {
    let uuid_like = (8..=64).contains(&id.len())
        && id.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')
        && id.bytes().any(|b| b.is_ascii_hexdigit());
    if uuid_like {
        Ok(id)
    } else {
        Err(EngineError::Rejected(format!(
            "{:?} is not a Luma generation id",
            id.chars().take(80).collect::<String>()
        )))
    }
}

/// The endpoint (under the base URL) and body for `request` on `model`: a generation, an
/// extension of one of this engine's generations, or a modify of the source video.
pub fn create_call(
    model: &str,
    request: &RenderRequest,
) -> Result<(&'static str, Value), EngineError> {
    let Some(source) = &request.inputs.source else {
        return Ok(("/generations/video", create_body(model, request)));
    };
    match source.operation.as_str() {
        operations::EXTENSION => {
            let id = source.render_id.as_deref().ok_or_else(|| {
                EngineError::Rejected(
                    "Luma extends only its own generations, and the source names none".into(),
                )
            })?;
            let mut body = create_body(model, request);
            let frame0 = json!({ "type": "generation", "id": generation_id(id)? });
            match body.get_mut("keyframes").and_then(Value::as_object_mut) {
                Some(keyframes) => {
                    keyframes.insert("frame0".into(), frame0);
                }
                None => body["keyframes"] = json!({ "frame0": frame0 }),
            }
            Ok(("/generations/video", body))
        }
        operations::REMIX | operations::EDIT => {
            let model = if MODIFY_MODELS.contains(&model) {
                model
            } else {
                MODIFY_MODELS[0]
            };
            // Adhere keeps the source closely (an edit changes what it names and keeps the
            // rest); flex restyles while keeping recognisable elements (a remix).
            let mode = if source.operation == operations::EDIT {
                "adhere_1"
            } else {
                "flex_1"
            };
            let mut body = json!({
                "generation_type": "modify_video",
                "model": model,
                "mode": mode,
                "media": { "url": source.video_url },
                "prompt": request.prompt,
            });
            if let Some(url) = &request.inputs.first_frame_url {
                body["first_frame"] = json!({ "url": url });
            }
            Ok(("/generations/video/modify", body))
        }
        other => Err(EngineError::Rejected(format!(
            "Luma has no {other} operation"
        ))),
    }
}

/// Whether a provider message says its moderation refused the request ("Advanced prompt
/// moderation failed", "Frame moderation failed", "Contains blacklisted words").
fn names_moderation(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("moderation") || m.contains("blacklisted")
}

fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default()
}

/// A Render from a generation as the API returns it.
pub fn render_from_generation(id: &str, generation: &Value) -> Render {
    let mut render = Render {
        id: id.to_owned(),
        status: RenderStatus::Unknown,
        progress: 0,
        error: None,
        result_url: None,
        created_at: now_secs(),
    };
    let failed = |code: &str, message: &str| RenderError {
        code: code.to_owned(),
        message: message.to_owned(),
    };
    match generation["state"].as_str().unwrap_or_default() {
        "queued" => render.status = RenderStatus::Queued,
        "dreaming" => render.status = RenderStatus::Rendering,
        "completed" => match generation["assets"]["video"].as_str() {
            Some(video) if !video.is_empty() => {
                render.status = RenderStatus::Succeeded;
                render.progress = 100;
                render.result_url = Some(video.to_owned());
            }
            _ => {
                render.status = RenderStatus::Failed;
                render.error = Some(failed(
                    codes::ENGINE_FAILURE,
                    "the generation completed without a video",
                ));
            }
        },
        "failed" => {
            let reason = generation["failure_reason"]
                .as_str()
                .unwrap_or("the generation failed");
            render.status = RenderStatus::Failed;
            render.error = Some(if names_moderation(reason) {
                tracing::info!(%id, %reason, "the provider refused the render's content");
                failed(
                    CONTENT_REFUSED,
                    "the provider's moderation refused the request",
                )
            } else {
                failed(codes::ENGINE_FAILURE, reason)
            });
        }
        _ => {}
    }
    render
}

#[async_trait]
impl VideoEngine for LumaEngine {
    async fn submit(&self, request: &RenderRequest) -> Result<Render, EngineError> {
        let (path, body) = create_call(&self.model, request)?;
        let url = self.api.url(path);
        let generation = self
            .api
            .create(
                &url,
                &body,
                "HTTP 400",
                names_moderation,
                "the provider's moderation refused the request",
            )
            .await?;
        let id = path_segment(generation["id"].as_str().unwrap_or_default())?;
        let mut render = render_from_generation(id, &generation);
        if render.status == RenderStatus::Unknown {
            render.status = RenderStatus::Queued;
        }
        Ok(render)
    }

    async fn status(&self, render_id: &str) -> Result<Render, EngineError> {
        let id = path_segment(render_id)?;
        let url = self.api.url(&format!("/generations/{id}"));
        let generation = self
            .api
            .call(reqwest::Method::GET, &url, None, Some(render_id))
            .await?;
        Ok(render_from_generation(render_id, &generation))
    }

    /// Best effort: Luma has no cancel; the generation is deleted (a generation already gone
    /// counts as canceled).
    async fn cancel(&self, render_id: &str) -> Result<(), EngineError> {
        let id = path_segment(render_id)?;
        let url = self.api.url(&format!("/generations/{id}"));
        self.api
            .cancel_call(reqwest::Method::DELETE, &url, render_id)
            .await
    }

    async fn fetch_result(&self, render: &Render) -> Result<ByteStream, EngineError> {
        self.api.download_output(render).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reelgate_engine::protocol::{RenderInputs, RenderSource};

    const GEN: &str = "0f3ea4aa-10e7-4dae-af0b-263ab4ac45f9";

    fn with_source(operation: &str, render_id: Option<&str>) -> RenderRequest {
        let mut req = request(5, 1920, 1080);
        req.inputs.source = Some(RenderSource {
            operation: operation.into(),
            video_url: "https://blobs.test/source.mp4?sig=3".into(),
            render_id: render_id.map(str::to_owned),
        });
        req
    }

    fn request(seconds: u32, width: u32, height: u32) -> RenderRequest {
        RenderRequest {
            model: "luma-model".into(),
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

    #[test]
    fn a_text_render_sends_the_native_values() {
        assert_eq!(
            create_body("ray-2", &request(5, 1920, 1080)),
            json!({
                "generation_type": "video",
                "model": "ray-2",
                "prompt": "a paper boat",
                "aspect_ratio": "16:9",
                "resolution": "1080p",
                "duration": "5s",
            })
        );
        let body = create_body("ray-flash-2", &request(9, 720, 1280));
        assert_eq!(
            (
                &body["aspect_ratio"],
                &body["resolution"],
                &body["duration"]
            ),
            (&json!("9:16"), &json!("720p"), &json!("9s"))
        );
    }

    #[test]
    fn sizes_map_to_ratios_and_tiers() {
        assert_eq!(aspect_ratio(1080, 1080), "1:1");
        assert_eq!(aspect_ratio(1440, 1080), "4:3");
        assert_eq!(aspect_ratio(1080, 1440), "3:4");
        assert_eq!(aspect_ratio(2520, 1080), "21:9");
        assert_eq!(aspect_ratio(1366, 768), "16:9");
        assert_eq!(aspect_ratio(1080, 2520), "9:21");
        assert_eq!(resolution(960, 540), "540p");
        assert_eq!(resolution(1366, 768), "1080p");
        assert_eq!(resolution(3840, 2160), "4k");
        assert_eq!(resolution(8000, 4000), "4k");
    }

    #[test]
    fn frames_are_keyframes_with_the_signed_urls() {
        let mut req = request(5, 1920, 1080);
        req.inputs.first_frame_url = Some("https://blobs.test/first?sig=1".into());
        req.inputs.last_frame_url = Some("https://blobs.test/last?sig=2".into());
        let body = create_body("ray-2", &req);
        assert_eq!(
            body["keyframes"],
            json!({
                "frame0": { "type": "image", "url": "https://blobs.test/first?sig=1" },
                "frame1": { "type": "image", "url": "https://blobs.test/last?sig=2" },
            })
        );
        req.inputs.first_frame_url = None;
        let body = create_body("ray-2", &req);
        assert!(body["keyframes"].get("frame0").is_none());
    }

    #[test]
    fn states_map_to_renders() {
        let state =
            |s: &str| render_from_generation("g1", &json!({ "id": "g1", "state": s })).status;
        assert_eq!(state("queued"), RenderStatus::Queued);
        assert_eq!(state("dreaming"), RenderStatus::Rendering);
        assert_eq!(state("upscaling"), RenderStatus::Unknown);

        let done = render_from_generation(
            "g1",
            &json!({ "id": "g1", "state": "completed", "assets": { "video": "https://storage.cdn-luma.com/v.mp4" } }),
        );
        assert_eq!(done.status, RenderStatus::Succeeded);
        assert_eq!(done.progress, 100);
        assert_eq!(
            done.result_url.as_deref(),
            Some("https://storage.cdn-luma.com/v.mp4")
        );

        let refused = render_from_generation(
            "g1",
            &json!({ "id": "g1", "state": "failed", "failure_reason": "Advanced moderation failed" }),
        );
        assert_eq!(refused.status, RenderStatus::Failed);
        let error = refused.error.expect("error");
        assert_eq!(error.code, CONTENT_REFUSED);
        assert!(!error.message.to_lowercase().contains("luma"));

        let failed = render_from_generation(
            "g1",
            &json!({ "id": "g1", "state": "failed", "failure_reason": "internal error" }),
        );
        assert_eq!(failed.error.expect("error").code, codes::ENGINE_FAILURE);

        let empty = render_from_generation(
            "g1",
            &json!({ "id": "g1", "state": "completed", "assets": {} }),
        );
        assert_eq!(empty.status, RenderStatus::Failed);
    }

    #[test]
    fn a_job_without_a_source_is_a_generation() {
        let req = request(5, 1920, 1080);
        let (path, body) = create_call("ray-2", &req).expect("call");
        assert_eq!(path, "/generations/video");
        assert_eq!(body, create_body("ray-2", &req));
    }

    #[test]
    fn an_extension_names_the_source_generation_as_frame0() {
        let (path, body) =
            create_call("ray-2", &with_source("extension", Some(GEN))).expect("extension");
        assert_eq!(path, "/generations/video");
        assert_eq!(
            body,
            json!({
                "generation_type": "video",
                "model": "ray-2",
                "prompt": "a paper boat",
                "aspect_ratio": "16:9",
                "resolution": "1080p",
                "duration": "5s",
                "keyframes": { "frame0": { "type": "generation", "id": GEN } },
            })
        );
        // A first-frame image gives way to the generation; a last frame stays.
        let mut framed = with_source("extension", Some(GEN));
        framed.inputs.first_frame_url = Some("https://blobs.test/first".into());
        framed.inputs.last_frame_url = Some("https://blobs.test/last".into());
        let (_, body) = create_call("ray-2", &framed).expect("extension");
        assert_eq!(
            body["keyframes"],
            json!({
                "frame0": { "type": "generation", "id": GEN },
                "frame1": { "type": "image", "url": "https://blobs.test/last" },
            })
        );
    }

    #[test]
    fn an_extension_needs_a_generation_id() {
        assert!(matches!(
            create_call("ray-2", &with_source("extension", None)),
            Err(EngineError::Rejected(_))
        ));
        for bad in [
            "",
            "-------",
            "../generations",
            "0f3ea4aa/10e7",
            "0f3ea4aa 10e7",
            "zzzzzzzzzz",
            "0f3ea4aa-10e7-4dae-af0b-263ab4ac45f9?x=1",
            &"a".repeat(65),
        ] {
            assert!(
                matches!(
                    create_call("ray-2", &with_source("extension", Some(bad))),
                    Err(EngineError::Rejected(_))
                ),
                "{bad}"
            );
        }
        assert_eq!(generation_id(GEN).expect("uuid"), GEN);
        assert!(generation_id("0F3EA4AA10E74DAEAF0B263AB4AC45F9").is_ok());
    }

    #[test]
    fn an_edit_and_a_remix_modify_the_source() {
        let (path, body) = create_call("ray-2", &with_source("edit", None)).expect("edit");
        assert_eq!(path, "/generations/video/modify");
        assert_eq!(
            body,
            json!({
                "generation_type": "modify_video",
                "model": "ray-2",
                "mode": "adhere_1",
                "media": { "url": "https://blobs.test/source.mp4?sig=3" },
                "prompt": "a paper boat",
            })
        );
        let (path, body) =
            create_call("ray-flash-2", &with_source("remix", Some(GEN))).expect("remix");
        assert_eq!(path, "/generations/video/modify");
        assert_eq!(
            (&body["mode"], &body["model"]),
            (&json!("flex_1"), &json!("ray-flash-2"))
        );
        // A model modify does not take falls back to ray-2; a caller's first frame guides it.
        let mut framed = with_source("remix", None);
        framed.inputs.first_frame_url = Some("https://blobs.test/first".into());
        let (_, body) = create_call("ray-1-6", &framed).expect("remix");
        assert_eq!(body["model"], "ray-2");
        assert_eq!(
            body["first_frame"],
            json!({ "url": "https://blobs.test/first" })
        );
        assert!(body.get("duration").is_none() && body.get("keyframes").is_none());
    }

    #[test]
    fn an_unknown_operation_is_refused() {
        assert!(matches!(
            create_call("ray-2", &with_source("upscale", None)),
            Err(EngineError::Rejected(_))
        ));
    }

    #[test]
    fn every_documented_moderation_reason_is_a_content_refusal() {
        for reason in [
            "Contains blacklisted words",
            "Frame moderation failed",
            "Advanced prompt moderation failed",
        ] {
            let render = render_from_generation(
                "g1",
                &json!({ "id": "g1", "state": "failed", "failure_reason": reason }),
            );
            assert_eq!(
                render.error.expect("error").code,
                CONTENT_REFUSED,
                "{reason}"
            );
        }
        let unreadable = render_from_generation(
            "g1",
            &json!({ "id": "g1", "state": "failed", "failure_reason": "Failed to read user input frames" }),
        );
        assert_eq!(unreadable.error.expect("error").code, codes::ENGINE_FAILURE);
    }
}
