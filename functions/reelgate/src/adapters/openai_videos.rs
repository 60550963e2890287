//! A [`VideoEngine`] that renders through any server speaking the OpenAI Videos API:
//! `POST {base}/videos` starts a render, `GET {base}/videos/{id}` reads its status and
//! progress, `GET {base}/videos/{id}/content` downloads the MP4, and a cancel is forwarded as
//! `POST {base}/videos/{id}/cancel` (reelgate's own route) or `DELETE {base}/videos/{id}`
//! (servers without a cancel route), as the catalog says. `base` is the API root the OpenAI SDK
//! calls `base_url` (e.g. `https://api.openai.com/v1`, or another reelgate's
//! `http://host:8080/v1`).
//!
//! The create request takes the target's shape (catalog `request_shape`): `openai` sends only
//! the API's documented values, `seconds` as one of its strings ("4", "8", "12") and `size` as
//! one of its sizes (1280x720, 720x1280), which the worker chose from the engine's native
//! renders (`domain::catalog::native_renders`); a first frame goes as `input_reference.image_url`, a
//! JPEG data URL fitted to that size (the API wants the reference at the video's size). The
//! finalize step conforms what comes back to the contract. `reelgate` sends `seconds` as a
//! number and the caller's `aspect_ratio`, and the prompt alone. The job id travels as
//! `Idempotency-Key`, so a redelivered submission finds the render it started on a target that
//! honours the header.
//!
//! The HTTP rules are the engine protocol client's: 5 s to connect, 60 s per call (300 s for
//! the download, capped in size), the bearer key sent only to URLs under the base URL (a
//! redirect of the download to blob storage carries no key), transport errors, 408, 429 and 5xx
//! "unreachable" (retried by the worker), any other refusal final.

use crate::domain::catalog::EngineConfig;
use crate::ports::engine::{
    ByteStream, EngineError, Render, RenderRequest, RenderStatus, VideoEngine,
};
use async_trait::async_trait;
use reelgate_engine::protocol::RenderError;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::Duration;

/// Largest MP4 accepted from a target: what the conform stage reads at most.
pub const MAX_OUTPUT_BYTES: u64 = crate::domain::videos::workflow::steps::MAX_ENGINE_OUTPUT_BYTES;

/// How the create request is shaped for the target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestShape {
    /// OpenAI's own: `seconds` as a string, `size` instead of an aspect ratio.
    OpenAi,
    /// A reelgate target: `seconds` as a number, `aspect_ratio`.
    Reelgate,
}

/// How a cancel is forwarded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CancelStyle {
    /// `POST {base}/videos/{id}/cancel`.
    CancelRoute,
    /// `DELETE {base}/videos/{id}`.
    Delete,
}

/// The engine. Build it from a catalog entry with [`OpenAiVideosEngine::from_config`].
pub struct OpenAiVideosEngine {
    base: String,
    api_key: Option<String>,
    models: BTreeMap<String, String>,
    shape: RequestShape,
    cancel: CancelStyle,
    http: reqwest::Client,
}

impl OpenAiVideosEngine {
    pub fn new(
        base_url: &str,
        api_key: Option<String>,
        models: BTreeMap<String, String>,
        shape: RequestShape,
        cancel: CancelStyle,
    ) -> anyhow::Result<Self> {
        let base = base_url.trim_end_matches('/').to_owned();
        let parsed = url::Url::parse(&base)
            .map_err(|e| anyhow::anyhow!("openai_videos base_url {base}: {e}"))?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host().is_none() {
            anyhow::bail!("openai_videos base_url {base} is not an http(s) URL");
        }
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .build()?;
        Ok(OpenAiVideosEngine {
            base,
            api_key,
            models,
            shape,
            cancel,
            http,
        })
    }

    /// From a catalog entry of `kind = "openai_videos"`: `base_url` (`${ENV}` expanded), the key
    /// from the variable `api_key_env` names, `models`, `request_shape` (default `openai`) and
    /// `cancel` (default `cancel` for a reelgate target, `delete` for OpenAI's shape).
    pub fn from_config(config: &EngineConfig, api_key: Option<String>) -> anyhow::Result<Self> {
        let base = config
            .base_url
            .as_deref()
            .map(crate::config::expand_env)
            .unwrap_or_default();
        if base.is_empty() {
            anyhow::bail!("openai_videos engine {} needs a base_url", config.id);
        }
        let shape = match config.request_shape.as_deref() {
            Some("reelgate") => RequestShape::Reelgate,
            _ => RequestShape::OpenAi,
        };
        let cancel = match (config.cancel.as_deref(), shape) {
            (Some("cancel"), _) | (None, RequestShape::Reelgate) => CancelStyle::CancelRoute,
            _ => CancelStyle::Delete,
        };
        Self::new(&base, api_key, config.models.clone(), shape, cancel)
    }

    /// The create body in the target's shape; `first_frame` is the image to start from, as a
    /// data URL already fitted to the request's size (OpenAI's shape only).
    pub fn create_body(&self, request: &RenderRequest, first_frame: Option<String>) -> Value {
        let model = self
            .models
            .get(&request.model)
            .cloned()
            .unwrap_or_else(|| request.model.clone());
        match self.shape {
            RequestShape::OpenAi => {
                let mut body = json!({
                    "model": model,
                    "prompt": request.prompt,
                    "seconds": request.seconds.to_string(),
                    "size": format!("{}x{}", request.width, request.height),
                });
                if let Some(image_url) = first_frame {
                    body["input_reference"] = json!({ "image_url": image_url });
                }
                body
            }
            RequestShape::Reelgate => json!({
                "model": model,
                "prompt": request.prompt,
                "seconds": request.seconds,
                "aspect_ratio": request.aspect_ratio,
            }),
        }
    }

    fn video_url(&self, id: &str, tail: &str) -> Result<String, EngineError> {
        // Ids come back from the target: never let one reshape the path.
        if id.is_empty()
            || !id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            return Err(EngineError::Rejected(format!(
                "the target returned an unusable video id {id:?}"
            )));
        }
        Ok(format!("{}/videos/{id}{tail}", self.base))
    }

    fn authorize(&self, builder: reqwest::RequestBuilder, url: &str) -> reqwest::RequestBuilder {
        match &self.api_key {
            Some(key) if url.starts_with(&format!("{}/", self.base)) => builder.bearer_auth(key),
            _ => builder,
        }
    }

    async fn call(
        &self,
        builder: reqwest::RequestBuilder,
        url: &str,
        render_id: Option<&str>,
    ) -> Result<Value, EngineError> {
        let response = self
            .authorize(builder, url)
            .timeout(Duration::from_secs(60))
            .send()
            .await
            .map_err(transport)?;
        let status = response.status().as_u16();
        let body = response.bytes().await.map_err(transport)?;
        if !(200..300).contains(&status) {
            return Err(refusal(status, &body, render_id));
        }
        serde_json::from_slice(&body).map_err(|e| {
            EngineError::Rejected(format!("the target answered {status} with no JSON: {e}"))
        })
    }
}

use super::hosted::transport;

/// A non-2xx answer: 408, 429 and 5xx may pass; 404 on a known render means the target lost it.
fn refusal(status: u16, body: &[u8], render_id: Option<&str>) -> EngineError {
    let detail = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v["error"]["message"].as_str().map(str::to_owned))
        .unwrap_or_else(|| String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned());
    match (status, render_id) {
        (404, Some(id)) => EngineError::UnknownRender(id.to_owned()),
        (408 | 429, _) | (500..=599, _) => {
            EngineError::Unreachable(format!("HTTP {status}: {detail}"))
        }
        _ => EngineError::Rejected(format!("HTTP {status}: {detail}")),
    }
}

/// The target's video object as a [`Render`]. Statuses before rendering (`queued`, and a
/// reelgate target's `moderating` / `translating`) are `queued`; `in_progress` is `rendering`.
pub fn render_of(video: &Value, result_url: impl FnOnce(&str) -> String) -> Option<Render> {
    let id = video["id"].as_str()?.to_owned();
    let status = match video["status"].as_str().unwrap_or_default() {
        "queued" | "moderating" | "translating" => RenderStatus::Queued,
        "in_progress" => RenderStatus::Rendering,
        "completed" => RenderStatus::Succeeded,
        "failed" => RenderStatus::Failed,
        "canceled" | "cancelled" => RenderStatus::Canceled,
        _ => RenderStatus::Unknown,
    };
    let progress = video["progress"].as_u64().unwrap_or(0).min(100) as u8;
    let error = (status == RenderStatus::Failed).then(|| RenderError {
        code: video["error"]["code"]
            .as_str()
            .unwrap_or("engine_failure")
            .to_owned(),
        message: video["error"]["message"]
            .as_str()
            .unwrap_or("the target failed the render")
            .to_owned(),
    });
    Some(Render {
        result_url: (status == RenderStatus::Succeeded).then(|| result_url(&id)),
        progress: if status == RenderStatus::Succeeded {
            100
        } else {
            progress
        },
        created_at: video["created_at"].as_i64().unwrap_or_default(),
        id,
        status,
        error,
    })
}

#[async_trait]
impl VideoEngine for OpenAiVideosEngine {
    async fn submit(&self, request: &RenderRequest) -> Result<Render, EngineError> {
        let url = format!("{}/videos", self.base);
        let first_frame = match (&request.inputs.first_frame_url, self.shape) {
            (Some(signed), RequestShape::OpenAi) => Some(self.fitted_frame(signed, request).await?),
            _ => None,
        };
        let mut call = self
            .http
            .post(&url)
            .json(&self.create_body(request, first_frame));
        if let Some(reference) = &request.client_reference {
            call = call.header("idempotency-key", reference);
        }
        let video = self.call(call, &url, None).await?;
        self.render(&video)
    }

    async fn status(&self, render_id: &str) -> Result<Render, EngineError> {
        let url = self.video_url(render_id, "")?;
        let video = self
            .call(self.http.get(&url), &url, Some(render_id))
            .await?;
        self.render(&video)
    }

    async fn cancel(&self, render_id: &str) -> Result<(), EngineError> {
        let (url, call) = match self.cancel {
            CancelStyle::CancelRoute => {
                let url = self.video_url(render_id, "/cancel")?;
                let call = self.http.post(&url);
                (url, call)
            }
            CancelStyle::Delete => {
                let url = self.video_url(render_id, "")?;
                let call = self.http.delete(&url);
                (url, call)
            }
        };
        self.call(call, &url, Some(render_id)).await.map(|_| ())
    }

    async fn fetch_result(&self, render: &Render) -> Result<ByteStream, EngineError> {
        let url = self.video_url(&render.id, "/content")?;
        let response = self
            .authorize(self.http.get(&url), &url)
            .timeout(Duration::from_secs(300))
            .send()
            .await
            .map_err(transport)?;
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            let body = response.bytes().await.map_err(transport)?;
            return Err(refusal(status, &body, Some(&render.id)));
        }
        Ok(super::hosted::response_stream(response, MAX_OUTPUT_BYTES))
    }
}

impl OpenAiVideosEngine {
    /// The caller's first frame (a signed URL of reelgate's own blob store) fitted to the
    /// request's size, as a JPEG data URL.
    async fn fitted_frame(
        &self,
        signed: &str,
        request: &RenderRequest,
    ) -> Result<String, EngineError> {
        use base64::Engine as _;
        let bytes = super::hosted::read_signed_input(&self.http, signed).await?;
        let (width, height) = (request.width, request.height);
        let jpeg = tokio::task::spawn_blocking(move || {
            reelgate_media::fit_frame_jpeg(&bytes, width, height)
        })
        .await
        .map_err(|e| EngineError::Rejected(format!("fitting the first frame: {e}")))?
        .map_err(|e| EngineError::Rejected(format!("fitting the first frame: {e}")))?;
        Ok(format!(
            "data:image/jpeg;base64,{}",
            base64::engine::general_purpose::STANDARD.encode(jpeg)
        ))
    }

    fn render(&self, video: &Value) -> Result<Render, EngineError> {
        render_of(video, |id| format!("{}/videos/{id}/content", self.base)).ok_or_else(|| {
            EngineError::Rejected(format!(
                "the target's answer is not a video object: {}",
                truncate(&video.to_string())
            ))
        })
    }
}

fn truncate(s: &str) -> String {
    s.chars().take(300).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::engine::RenderInputs;

    fn request() -> RenderRequest {
        RenderRequest {
            model: "far-1".into(),
            prompt: "a lighthouse".into(),
            seconds: 8,
            aspect_ratio: "9:16".into(),
            width: 720,
            height: 1280,
            inputs: RenderInputs::default(),
            callback_url: None,
            client_reference: Some("video_1".into()),
        }
    }

    #[test]
    fn each_shape_builds_its_body() {
        let models = BTreeMap::from([("far-1".to_owned(), "sora-2".to_owned())]);
        let openai = OpenAiVideosEngine::new(
            "http://127.0.0.1:9/v1/",
            None,
            models.clone(),
            RequestShape::OpenAi,
            CancelStyle::Delete,
        )
        .expect("engine");
        assert_eq!(
            openai.create_body(&request(), None),
            json!({"model": "sora-2", "prompt": "a lighthouse", "seconds": "8", "size": "720x1280"})
        );
        assert_eq!(
            openai.create_body(&request(), Some("data:image/jpeg;base64,AA==".into()))
                ["input_reference"],
            json!({"image_url": "data:image/jpeg;base64,AA=="})
        );
        let reelgate = OpenAiVideosEngine::new(
            "http://127.0.0.1:9/v1",
            None,
            BTreeMap::new(),
            RequestShape::Reelgate,
            CancelStyle::CancelRoute,
        )
        .expect("engine");
        assert_eq!(
            reelgate.create_body(&request(), None),
            json!({"model": "far-1", "prompt": "a lighthouse", "seconds": 8, "aspect_ratio": "9:16"})
        );
        assert!(reelgate.video_url("../admin", "").is_err());
        assert_eq!(
            reelgate.video_url("video_abc", "/cancel").expect("url"),
            "http://127.0.0.1:9/v1/videos/video_abc/cancel"
        );
        assert!(OpenAiVideosEngine::new(
            "file:///etc",
            None,
            BTreeMap::new(),
            RequestShape::OpenAi,
            CancelStyle::Delete
        )
        .is_err());
    }

    #[test]
    fn video_objects_map_to_renders() {
        let url = |id: &str| format!("u/{id}");
        let r = render_of(
            &json!({"id": "v1", "status": "moderating", "progress": 0}),
            url,
        )
        .expect("render");
        assert_eq!(r.status, RenderStatus::Queued);
        let r = render_of(
            &json!({"id": "v1", "status": "in_progress", "progress": 140}),
            url,
        )
        .expect("render");
        assert_eq!((r.status, r.progress), (RenderStatus::Rendering, 100));
        let r = render_of(
            &json!({"id": "v1", "status": "completed", "progress": 3}),
            url,
        )
        .expect("render");
        assert_eq!(r.status, RenderStatus::Succeeded);
        assert_eq!((r.progress, r.result_url.as_deref()), (100, Some("u/v1")));
        let r = render_of(
            &json!({"id": "v1", "status": "failed", "error": {"code": "moderation_blocked", "message": "no"}}),
            url,
        )
        .expect("render");
        assert_eq!(
            r.error.map(|e| e.code).as_deref(),
            Some("moderation_blocked")
        );
        let r = render_of(&json!({"id": "v1", "status": "upscaling"}), url).expect("render");
        assert!(!r.status.is_terminal());
        assert!(render_of(&json!({"status": "queued"}), url).is_none());
        assert!(matches!(
            refusal(503, b"{}", None),
            EngineError::Unreachable(_)
        ));
        assert!(matches!(
            refusal(404, b"{}", Some("v1")),
            EngineError::UnknownRender(_)
        ));
        assert!(matches!(
            refusal(400, br#"{"error":{"message":"bad size"}}"#, None),
            EngineError::Rejected(m) if m.contains("bad size")
        ));
    }

    /// What the fake servers below saw: method, path, Authorization header.
    type Seen = std::sync::Arc<std::sync::Mutex<Vec<(String, String, Option<String>)>>>;

    /// A fake target in the OpenAI Videos API's shape whose content answer redirects to
    /// `storage` (another origin, as a blob store would be); it records every request.
    async fn fake_target(storage: String, seen: Seen) -> String {
        use axum::extract::Request;
        use axum::response::{IntoResponse, Redirect, Response};
        let app = axum::Router::new().fallback(move |req: Request| {
            let seen = seen.clone();
            let storage = storage.clone();
            async move {
                let auth = req
                    .headers()
                    .get("authorization")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                let path = req.uri().path().to_owned();
                seen.lock()
                    .expect("lock")
                    .push((req.method().to_string(), path.clone(), auth));
                let r: Response = if path.ends_with("/content") {
                    Redirect::temporary(&format!("{storage}/blob.mp4")).into_response()
                } else if path.ends_with("/v1/videos/video_busy") {
                    (axum::http::StatusCode::SERVICE_UNAVAILABLE, "busy").into_response()
                } else {
                    axum::Json(json!({"id": "video_1", "status": "canceled"})).into_response()
                };
                r
            }
        });
        serve(app).await
    }

    async fn serve(app: axum::Router) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        url
    }

    #[tokio::test]
    async fn cancel_is_forwarded_as_configured_and_the_key_never_follows_a_redirect() {
        let seen: Seen = Default::default();
        let storage_seen: Seen = Default::default();
        let storage = {
            let storage_seen = storage_seen.clone();
            serve(
                axum::Router::new().fallback(move |req: axum::extract::Request| {
                    let storage_seen = storage_seen.clone();
                    async move {
                        let auth = req
                            .headers()
                            .get("authorization")
                            .and_then(|v| v.to_str().ok())
                            .map(str::to_owned);
                        storage_seen.lock().expect("lock").push((
                            req.method().to_string(),
                            req.uri().path().to_owned(),
                            auth,
                        ));
                        "mp4 bytes"
                    }
                }),
            )
            .await
        };
        let target = fake_target(storage, seen.clone()).await;
        let engine = |cancel| {
            OpenAiVideosEngine::new(
                &format!("{target}/v1"),
                Some("sk-target".into()),
                BTreeMap::new(),
                RequestShape::OpenAi,
                cancel,
            )
            .expect("engine")
        };
        engine(CancelStyle::Delete)
            .cancel("video_1")
            .await
            .expect("delete");
        engine(CancelStyle::CancelRoute)
            .cancel("video_1")
            .await
            .expect("cancel");
        let bytes = engine(CancelStyle::Delete)
            .fetch_result(
                &render_of(&json!({"id": "video_1", "status": "completed"}), |_| {
                    String::new()
                })
                .expect("render"),
            )
            .await
            .expect("content");
        let bytes: Vec<bytes::Bytes> = futures::TryStreamExt::try_collect(bytes)
            .await
            .expect("body");
        assert_eq!(bytes.concat(), b"mp4 bytes");
        assert!(matches!(
            engine(CancelStyle::Delete).status("video_busy").await,
            Err(EngineError::Unreachable(_))
        ));
        let seen = seen.lock().expect("lock").clone();
        let key = Some("Bearer sk-target".to_owned());
        assert_eq!(
            seen[0],
            ("DELETE".into(), "/v1/videos/video_1".into(), key.clone())
        );
        assert_eq!(
            seen[1],
            (
                "POST".into(),
                "/v1/videos/video_1/cancel".into(),
                key.clone()
            )
        );
        assert_eq!(
            seen[2],
            ("GET".into(), "/v1/videos/video_1/content".into(), key)
        );
        // The blob store behind the redirect got the download without the target's key.
        let storage_seen = storage_seen.lock().expect("lock").clone();
        assert_eq!(storage_seen, vec![("GET".into(), "/blob.mp4".into(), None)]);
    }
}
