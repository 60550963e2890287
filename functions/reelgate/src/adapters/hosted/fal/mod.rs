//! The `fal` engine kind: a video model on fal's queue (`https://queue.fal.run`,
//! `Authorization: Key <key>`).
//!
//! What is sent: `POST {base}/{endpoint}` with the model's own input as the body. The catalog's
//! `model_id` names the model; a job is sent to the endpoint of that model for its inputs (fal
//! serves each mode of a model at an endpoint of its own: text, first frame, first and last
//! frame, reference images, a source video), with the model's field names. This file knows
//! these models and their documented fields and values:
//! - Kling 2.5 Turbo Pro (the default, `fal-ai/kling-video/v2.5-turbo/pro/text-to-video` and
//!   `…/image-to-video`): `prompt`, `duration` "5" or "10", `aspect_ratio` "16:9", "9:16" or
//!   "1:1" (text only; an image job follows its image), `image_url` and `tail_image_url`;
//! - Veo 3.1 and Veo 3.1 Fast (`fal-ai/veo3.1`, `…/image-to-video`,
//!   `…/first-last-frame-to-video`, `…/reference-to-video`; `fal-ai/veo3.1/fast/…`): `prompt`,
//!   `duration` "4s", "6s" or "8s", `aspect_ratio` "16:9" or "9:16", `resolution` "720p" or
//!   "1080p", `generate_audio`, `image_url`, `first_frame_url` and `last_frame_url`,
//!   `image_urls` (reference images); an extension (`inputs.source`, operation `extension`)
//!   goes to `…/extend-video` with `prompt`, `video_url` (the source's signed URL), `duration`
//!   "7s" (the only value documented) and `generate_audio`, nothing else (`aspect_ratio` "auto"
//!   and `resolution` "720p" are left to their defaults); the answer is the source and the 7 s
//!   continuation as one video, as Veo's own extension answers (not confirmed for fal);
//! - Kling O1's video edit (`fal-ai/kling-video/o1/video-to-video/edit`, video-to-video only):
//!   a remix or an edit sends `prompt`, `video_url` and `keep_audio` (the source's soundtrack
//!   kept);
//! - MiniMax Hailuo 02 Standard (`fal-ai/minimax/hailuo-02/standard/text-to-video` and
//!   `…/image-to-video`): `prompt`, `duration` "6" or "10", `image_url`, `end_image_url`,
//!   `resolution` "512P" or "768P" (image only).
//!
//! Any other model is sent to `model_id` (a `…/text-to-video` id sends frame jobs to its
//! `…/image-to-video` sibling and the other way round, fal's naming for the two modes of one
//! model) with `prompt`, `image_url`, `duration` (whole seconds as a string, "5") and
//! `aspect_ratio` ("16:9"), and a source video (where the catalog's `operations` declare the
//! engine's own) to `model_id` with `prompt`, `video_url` and `duration`; the catalog's
//! `input_fields` (`prompt`, `first_frame`, `last_frame`, `reference_images`, `video`,
//! `duration`, `aspect_ratio`, `resolution`, `audio`) rename or add fields for any model, and a
//! thing with no field is not sent. Durations and aspect ratios a known model does not take
//! become the nearest it does (the finalize step conforms the result). Frames, reference images
//! and source videos go as reelgate's short-lived signed URLs (a source is served as
//! `video/mp4`), which fal downloads (they must still be valid when the request leaves fal's
//! queue). An input the chosen model cannot take is refused before anything is sent.
//!
//! What comes back: `request_id` and the request's `status_url`, `response_url` and
//! `cancel_url`, which are used only on the API origin (the render id is the request's path
//! under the queue base, `{owner}/{app}/requests/{id}`, taken from `status_url`). `GET
//! …/status` is polled: `IN_QUEUE` is queued, `IN_PROGRESS` rendering (fal reports no progress:
//! such an engine wants `progress_observable = false`), `COMPLETED` means the result is ready,
//! so the status call reads it (`GET response_url`): `video.url` on fal's CDN (downloaded
//! without the key from `output_hosts`, default `.fal.media`) succeeds the render; a 422 whose
//! `detail` has `type: "content_policy_violation"` (fal's content checker or the model's own
//! moderation, at submit or in the result) is a content refusal; any other error fails it. A
//! cancel is `PUT …/cancel` (fal drops a queued request and signals a running one; a request
//! already completed or unknown needs none). fal has no idempotency key: the worker claims the
//! submission before it is sent.
//!
//! Sources (checked 2026-11-26): fal docs, *Asynchronous Inference*
//! (fal.ai/docs/documentation/model-apis/inference/queue) and the *Inference API* reference
//! (fal.ai/docs/api-reference/inference-api, …/inference-api/queue/cancel: statuses, 202 while
//! queued, the URLs to use, cancel answers); *Model Errors*
//! (fal.ai/docs/documentation/model-apis/errors: the `detail` array,
//! `content_policy_violation`) and *Request Errors* (…/model-apis/request-errors: `error_type`);
//! the Kling 2.5 Turbo Pro model pages (fal.ai/models/fal-ai/kling-video/v2.5-turbo/pro/
//! image-to-video/llms.txt, fal.ai/docs/model-api-reference/video-generation-api/
//! kling-video-v2.5-turbo-pro) and, for all three models' fields and values, the endpoint types
//! fal generates from its model schemas into its JavaScript client (fal-ai/fal-js,
//! `libs/client/src/types/endpoints.ts`, August 2026: `fal-ai/veo3.1…`,
//! `fal-ai/minimax/hailuo-02/standard…`). fal's model pages give no pixel sizes. Read
//! 2026-11-28: fal.ai/models/fal-ai/veo3.1/extend-video/api and fal.ai/docs/model-api-reference/
//! video-generation-api/veo3.1-extend-video (`video_url` of a 720p or 1080p, 16:9 or 9:16 video
//! of up to 8 s; `duration` default "7s"; `aspect_ratio` auto, 16:9, 9:16; `resolution`
//! default 720p; `generate_audio`, `negative_prompt`, `seed`, `auto_fix`, `safety_tolerance`),
//! …/veo3.1-reference-to-video (`image_urls`) and …/kling-video-o1-video-to-video (`video_url`:
//! .mp4/.mov, 3 to 10.05 s, 720 to 2160 px, at most 200 MB; `keep_audio`, `image_urls`,
//! `elements`).

mod answers;
mod models;
mod request;

use super::{path_segment, refusal, Auth, Provider, ProviderApi};
use crate::domain::catalog::EngineConfig;
use crate::ports::engine::{
    ByteStream, EngineError, Render, RenderRequest, RenderStatus, VideoEngine,
};
use crate::ports::fetch::Fetcher;
use answers::{checked_render_id, content_refusal, engine_failure, failure_of, render, status_of};
use async_trait::async_trait;
use models::{known_model, Endpoint, Model};
pub use models::{DEFAULT_MODEL, THINGS};
use serde_json::Value;
use std::sync::Arc;

/// fal's queue.
pub const DEFAULT_BASE_URL: &str = "https://queue.fal.run";
/// fal's CDN (`v3.fal.media`, `v3b.fal.media`, …).
pub const DEFAULT_OUTPUT_HOSTS: &[&str] = &[".fal.media"];

/// The engine. Build it from a catalog entry with [`FalEngine::from_config`].
pub struct FalEngine {
    api: ProviderApi,
    model: Model,
    /// Whether to ask for a soundtrack (models with an `audio` field): the engine's native audio.
    audio: bool,
}

impl FalEngine {
    pub fn from_config(
        config: &EngineConfig,
        key: Option<String>,
        fetcher: Arc<dyn Fetcher>,
    ) -> anyhow::Result<Self> {
        let model_id = config
            .model_id
            .as_deref()
            .map(|m| m.trim().trim_matches('/'))
            .filter(|m| !m.is_empty())
            .unwrap_or(DEFAULT_MODEL);
        if model_id.split('/').count() < 2 || model_id.split('/').any(|s| path_segment(s).is_err())
        {
            anyhow::bail!(
                "engine {}: model_id {model_id:?} is not a fal endpoint id (owner/app[/path])",
                config.id
            );
        }
        let mut model = known_model(model_id);
        for (thing, field) in &config.input_fields {
            let Some(thing) = THINGS.iter().find(|t| **t == thing.as_str()) else {
                anyhow::bail!(
                    "engine {}: input_fields names {thing:?}; it takes {}",
                    config.id,
                    THINGS.join(", ")
                );
            };
            if field.trim().is_empty() {
                anyhow::bail!("engine {}: input_fields.{thing} is empty", config.id);
            }
            for endpoint in model.endpoints.values_mut() {
                let takes_images = |t: &str| endpoint.fields.contains_key(t);
                // A frame field added by the catalog goes to the endpoints that take images.
                let applies = match *thing {
                    "first_frame" | "last_frame" => {
                        takes_images("first_frame") || takes_images(thing)
                    }
                    "reference_images" => {
                        takes_images("first_frame") || takes_images("reference_images")
                    }
                    "video" => takes_images("video"),
                    _ => true,
                };
                if applies {
                    endpoint.fields.insert(thing, field.trim().to_owned());
                }
            }
        }
        let api = ProviderApi::for_engine(
            config,
            key,
            Provider {
                base_url: DEFAULT_BASE_URL,
                auth: Auth::Scheme("Key"),
                headers: Vec::new(),
                output_hosts: DEFAULT_OUTPUT_HOSTS,
            },
            fetcher,
        )?;
        Ok(FalEngine {
            api,
            model,
            audio: config.native_renders().audio,
        })
    }

    /// The endpoint and model input for `request`.
    fn plan(&self, request: &RenderRequest) -> Result<(&Endpoint, Value), EngineError> {
        self.model.plan(request, self.audio)
    }

    /// The render id for a submitted request: its path under the queue base, from the
    /// `status_url` fal returned (on the API origin only), else from the endpoint's owner and
    /// app and the `request_id`.
    fn render_id(&self, endpoint: &Endpoint, answer: &Value) -> Result<String, EngineError> {
        answers::render_id(&self.api, endpoint, answer)
    }

    /// The result of a completed request (`GET response_url`) as a render.
    async fn result(&self, render_id: &str, status: &Value) -> Result<Render, EngineError> {
        let own = self.api.url(&format!("/{render_id}"));
        let url = status["response_url"]
            .as_str()
            .filter(|u| self.api.on_api_origin(u) && u.starts_with(&self.api.url("/")))
            .unwrap_or(&own);
        let answer = self.api.send(reqwest::Method::GET, url, None).await?;
        if (200..300).contains(&answer.status) {
            let output = answer.json()?;
            return Ok(match output["video"]["url"].as_str() {
                Some(video) => render(render_id, RenderStatus::Succeeded, None, Some(video)),
                None => render(
                    render_id,
                    RenderStatus::Failed,
                    Some(engine_failure("the result has no video.url".into())),
                    None,
                ),
            });
        }
        match failure_of(&answer) {
            Some(error) => Ok(render(render_id, RenderStatus::Failed, Some(error), None)),
            None => Err(refusal(
                answer.status,
                &answer.body,
                Some(render_id),
                answer.retry_after,
            )),
        }
    }
}

#[async_trait]
impl VideoEngine for FalEngine {
    async fn submit(&self, request: &RenderRequest) -> Result<Render, EngineError> {
        let (endpoint, body) = self.plan(request)?;
        let url = self.api.url(&format!("/{}", endpoint.path));
        let answer = self
            .api
            .send(reqwest::Method::POST, &url, Some(&body))
            .await?;
        if !(200..300).contains(&answer.status) {
            let parsed: Value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
            if let Some(message) = content_refusal(&parsed) {
                return Err(EngineError::ContentRefused(message));
            }
            return Err(refusal(
                answer.status,
                &answer.body,
                None,
                answer.retry_after,
            ));
        }
        let answer = answer.json()?;
        let id = self.render_id(endpoint, &answer)?;
        Ok(Render {
            created_at: crate::observability::metrics::now_millis() / 1000,
            ..render(&id, RenderStatus::Queued, None, None)
        })
    }

    async fn status(&self, render_id: &str) -> Result<Render, EngineError> {
        let id = checked_render_id(render_id)?;
        let status = self
            .api
            .call(
                reqwest::Method::GET,
                &self.api.url(&format!("/{id}/status")),
                None,
                Some(render_id),
            )
            .await?;
        let render = status_of(id, &status);
        if render.status == RenderStatus::Succeeded {
            return self.result(id, &status).await;
        }
        Ok(render)
    }

    /// `PUT …/cancel`: fal removes a queued request and signals a running one (the model
    /// decides how to stop); a request already completed or unknown has nothing to stop.
    async fn cancel(&self, render_id: &str) -> Result<(), EngineError> {
        let id = checked_render_id(render_id)?;
        let answer = self
            .api
            .send(
                reqwest::Method::PUT,
                &self.api.url(&format!("/{id}/cancel")),
                None,
            )
            .await?;
        let said = serde_json::from_slice::<Value>(&answer.body)
            .ok()
            .and_then(|v| v["status"].as_str().map(str::to_owned));
        match (answer.status, said.as_deref()) {
            (200..=299, _) | (404, _) | (_, Some("ALREADY_COMPLETED" | "NOT_FOUND")) => Ok(()),
            _ => Err(refusal(
                answer.status,
                &answer.body,
                Some(render_id),
                answer.retry_after,
            )),
        }
    }

    async fn fetch_result(&self, render: &Render) -> Result<ByteStream, EngineError> {
        self.api.download_output(render).await
    }
}

#[cfg(test)]
mod tests {
    use super::super::Answer;
    use super::*;
    use crate::ports::engine::RenderInputs;
    use crate::ports::engine::CONTENT_REFUSED;
    use reelgate_engine::protocol::codes;
    use serde_json::json;

    fn engine(extra: &str) -> FalEngine {
        let config: EngineConfig = toml::from_str(&format!(
            "id = \"f\"\nkind = \"fal\"\nbase_url = \"https://queue.example.test\"\n{extra}"
        ))
        .expect("config");
        FalEngine::from_config(
            &config,
            Some("k".into()),
            Arc::new(crate::adapters::guarded_fetch::GuardedFetcher::default()),
        )
        .expect("engine")
    }

    fn request(seconds: u32, width: u32, height: u32) -> RenderRequest {
        RenderRequest {
            model: "hosted-fal".into(),
            prompt: "a kite".into(),
            seconds,
            aspect_ratio: "16:9".into(),
            width,
            height,
            inputs: RenderInputs::default(),
            callback_url: None,
            client_reference: Some("video_1".into()),
        }
    }

    fn frames(mut r: RenderRequest, first: bool, last: bool, refs: usize) -> RenderRequest {
        r.inputs.first_frame_url = first.then(|| "https://blob/first".into());
        r.inputs.last_frame_url = last.then(|| "https://blob/last".into());
        r.inputs.reference_image_urls = (0..refs).map(|i| format!("https://blob/r{i}")).collect();
        r
    }

    #[test]
    fn kling_jobs_go_to_the_endpoint_for_their_inputs() {
        let e = engine("");
        let (endpoint, body) = e.plan(&request(4, 1280, 720)).expect("plan");
        assert_eq!(endpoint.path, DEFAULT_MODEL);
        assert_eq!(
            body,
            json!({"prompt": "a kite", "duration": "5", "aspect_ratio": "16:9"})
        );
        let (_, body) = e.plan(&request(6, 720, 720)).expect("plan");
        assert_eq!(
            (&body["duration"], &body["aspect_ratio"]),
            (&json!("10"), &json!("1:1"))
        );
        let (endpoint, body) = e
            .plan(&frames(request(5, 720, 1280), true, true, 0))
            .expect("plan");
        assert_eq!(
            endpoint.path,
            "fal-ai/kling-video/v2.5-turbo/pro/image-to-video"
        );
        assert_eq!(
            body,
            json!({"prompt": "a kite", "duration": "5", "image_url": "https://blob/first",
                   "tail_image_url": "https://blob/last"})
        );
        assert!(matches!(
            e.plan(&frames(request(5, 720, 1280), false, false, 1)),
            Err(EngineError::Rejected(m)) if m.contains("reference_images")
        ));
        assert!(e
            .plan(&frames(request(5, 720, 1280), false, true, 0))
            .is_err());
    }

    #[test]
    fn veo_picks_text_image_first_last_and_reference_endpoints() {
        let e = engine("model_id = \"fal-ai/veo3.1/image-to-video\"\naudio = true");
        let (endpoint, body) = e.plan(&request(5, 1920, 1080)).expect("plan");
        assert_eq!(endpoint.path, "fal-ai/veo3.1");
        assert_eq!(
            body,
            json!({"prompt": "a kite", "duration": "6s", "aspect_ratio": "16:9",
                   "resolution": "1080p", "generate_audio": true})
        );
        let (endpoint, body) = e
            .plan(&frames(request(8, 720, 1280), true, false, 0))
            .expect("plan");
        assert_eq!(endpoint.path, "fal-ai/veo3.1/image-to-video");
        assert_eq!(
            (&body["image_url"], &body["resolution"]),
            (&json!("https://blob/first"), &json!("720p"))
        );
        let (endpoint, body) = e
            .plan(&frames(request(8, 720, 1280), true, true, 0))
            .expect("plan");
        assert_eq!(endpoint.path, "fal-ai/veo3.1/first-last-frame-to-video");
        assert_eq!(body["last_frame_url"], "https://blob/last");
        let (endpoint, body) = e
            .plan(&frames(request(8, 1280, 720), false, false, 2))
            .expect("plan");
        assert_eq!(endpoint.path, "fal-ai/veo3.1/reference-to-video");
        assert_eq!(
            body["image_urls"],
            json!(["https://blob/r0", "https://blob/r1"])
        );
        // Veo 3.1 Fast has no reference endpoint.
        let fast = engine("model_id = \"fal-ai/veo3.1/fast\"");
        assert!(fast
            .plan(&frames(request(8, 1280, 720), false, false, 1))
            .is_err());
    }

    fn with_source(mut r: RenderRequest, operation: &str) -> RenderRequest {
        r.inputs.source = Some(reelgate_engine::protocol::RenderSource {
            operation: operation.into(),
            video_url: "https://blob/source.mp4".into(),
            render_id: None,
        });
        r
    }

    #[test]
    fn a_veo_extension_goes_to_extend_video_with_its_documented_fields() {
        let e = engine("model_id = \"fal-ai/veo3.1\"");
        assert!(e.audio, "Veo 3.1 renders audio (the model table)");
        let (endpoint, body) = e
            .plan(&with_source(request(4, 1920, 1080), "extension"))
            .expect("plan");
        assert_eq!(endpoint.path, "fal-ai/veo3.1/extend-video");
        assert_eq!(
            body,
            json!({"prompt": "a kite", "video_url": "https://blob/source.mp4",
                   "duration": "7s", "generate_audio": true})
        );
        // A text job still goes to the text endpoint (never to the extension's).
        let (endpoint, _) = e.plan(&request(4, 1920, 1080)).expect("plan");
        assert_eq!(endpoint.path, "fal-ai/veo3.1");
        // Veo 3.1 on fal has no video-to-video.
        assert!(matches!(
            e.plan(&with_source(request(4, 1920, 1080), "edit")),
            Err(EngineError::Rejected(m)) if m.contains("edit")
        ));
        let fast = engine("model_id = \"fal-ai/veo3.1/fast\"");
        let (endpoint, _) = fast
            .plan(&with_source(request(4, 1280, 720), "extension"))
            .expect("plan");
        assert_eq!(endpoint.path, "fal-ai/veo3.1/fast/extend-video");
    }

    #[test]
    fn kling_o1_edits_a_source_video_and_nothing_else() {
        let e = engine("model_id = \"fal-ai/kling-video/o1/video-to-video/edit\"");
        for op in ["edit", "remix"] {
            let (endpoint, body) = e
                .plan(&with_source(request(6, 1366, 768), op))
                .expect("plan");
            assert_eq!(endpoint.path, "fal-ai/kling-video/o1/video-to-video/edit");
            assert_eq!(
                body,
                json!({"prompt": "a kite", "video_url": "https://blob/source.mp4", "keep_audio": true})
            );
        }
        assert!(e.plan(&request(6, 1366, 768)).is_err(), "no text mode");
        assert!(e
            .plan(&with_source(request(6, 1366, 768), "extension"))
            .is_err());
    }

    #[test]
    fn an_unknown_model_takes_its_source_in_the_catalog_s_video_field() {
        let e = engine(
            "model_id = \"acme/restyle\"\noperations = [\"video_to_video\"]\n\
             input_fields = { video = \"source_video_url\" }",
        );
        let (endpoint, body) = e
            .plan(&with_source(request(5, 1366, 768), "edit"))
            .expect("plan");
        assert_eq!(endpoint.path, "acme/restyle");
        assert_eq!(
            body,
            json!({"prompt": "a kite", "duration": "5", "source_video_url": "https://blob/source.mp4"})
        );
        // The video field never reaches an endpoint without a source.
        let (_, body) = e.plan(&request(5, 1366, 768)).expect("plan");
        assert!(body.get("source_video_url").is_none(), "{body}");
    }

    #[test]
    fn unknown_models_use_defaults_and_the_catalog_s_fields() {
        let e = engine(
            "model_id = \"acme/wan-9/text-to-video\"\n\
             input_fields = { first_frame = \"start_image_url\", last_frame = \"end_image_url\", resolution = \"resolution\" }",
        );
        let (endpoint, body) = e.plan(&request(7, 1366, 768)).expect("plan");
        assert_eq!(endpoint.path, "acme/wan-9/text-to-video");
        assert_eq!(
            body,
            json!({"prompt": "a kite", "duration": "7", "aspect_ratio": "16:9", "resolution": "768p"})
        );
        let (endpoint, body) = e
            .plan(&frames(request(7, 768, 1366), true, true, 0))
            .expect("plan");
        assert_eq!(endpoint.path, "acme/wan-9/image-to-video");
        assert_eq!(
            (&body["start_image_url"], &body["end_image_url"]),
            (&json!("https://blob/first"), &json!("https://blob/last"))
        );
        let config: EngineConfig =
            toml::from_str("id = \"f\"\nkind = \"fal\"\ninput_fields = { seed = \"seed\" }")
                .expect("config");
        assert!(FalEngine::from_config(
            &config,
            None,
            Arc::new(crate::adapters::guarded_fetch::GuardedFetcher::default())
        )
        .is_err());
    }

    #[test]
    fn the_render_id_comes_from_the_status_url_on_the_queue_origin() {
        let e = engine("");
        let (endpoint, _) = e.plan(&request(5, 1280, 720)).expect("plan");
        let answer = json!({
            "request_id": "abc-1",
            "status_url": "https://queue.example.test/fal-ai/kling-video/requests/abc-1/status",
        });
        assert_eq!(
            e.render_id(endpoint, &answer).expect("id"),
            "fal-ai/kling-video/requests/abc-1"
        );
        let foreign = json!({
            "request_id": "abc-1",
            "status_url": "https://evil.test/fal-ai/kling-video/requests/abc-1/status",
        });
        assert!(e.render_id(endpoint, &foreign).is_err());
        assert_eq!(
            e.render_id(endpoint, &json!({"request_id": "abc-1"}))
                .expect("id"),
            "fal-ai/kling-video/requests/abc-1"
        );
        for bad in [
            "a/requests/x",
            "a/b/requests/../x",
            "a/b/c/x",
            "a/b/requests/x?y",
        ] {
            assert!(checked_render_id(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn statuses_and_results_map_to_renders() {
        let id = "fal-ai/kling-video/requests/r1";
        assert_eq!(
            status_of(id, &json!({"status": "IN_QUEUE", "queue_position": 3})).status,
            RenderStatus::Queued
        );
        assert_eq!(
            status_of(id, &json!({"status": "IN_PROGRESS"})).status,
            RenderStatus::Rendering
        );
        assert_eq!(
            status_of(id, &json!({"status": "COMPLETED"})).status,
            RenderStatus::Succeeded
        );
        assert_eq!(
            status_of(id, &json!({"status": "NEW"})).status,
            RenderStatus::Unknown
        );
        let r = status_of(
            id,
            &json!({"status": "COMPLETED", "error": "flagged", "error_type": "content_policy_violation"}),
        );
        assert_eq!(r.error.expect("error").code, CONTENT_REFUSED);

        let answer = |status: u16, body: Value| Answer {
            status,
            retry_after: None,
            body: bytes::Bytes::from(body.to_string()),
        };
        let refused = failure_of(&answer(
            422,
            json!({"detail": [{
            "loc": ["body", "prompt"], "msg": "The content was flagged by a content checker.",
            "type": "content_policy_violation"}]}),
        ))
        .expect("failure");
        assert_eq!(refused.code, CONTENT_REFUSED);
        for word in ["fal", "http", "kling"] {
            assert!(
                !refused.message.to_lowercase().contains(word),
                "{}",
                refused.message
            );
        }
        let invalid = failure_of(&answer(
            422,
            json!({"detail": [{"loc": ["body", "duration"],
            "msg": "Input should be '5' or '10'", "type": "literal_error"}]}),
        ))
        .expect("failure");
        assert_eq!(invalid.code, codes::ENGINE_FAILURE);
        assert!(invalid.message.contains("literal_error"));
        let runner = failure_of(&answer(
            504,
            json!({"detail": "Request timed out", "error_type": "request_timeout"}),
        ))
        .expect("failure");
        assert!(runner.message.contains("request_timeout"));
        assert!(failure_of(&answer(503, json!({"error": "unavailable"}))).is_none());
        assert!(failure_of(&answer(429, json!({}))).is_none());
    }
}
