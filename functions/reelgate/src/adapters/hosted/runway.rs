//! The `runway` engine kind: Runway's API (`https://api.dev.runwayml.com`, version header
//! `X-Runway-Version: 2024-11-06`, `Authorization: Bearer <key>`).
//!
//! What is sent: a job with no frame is `POST /v1/text_to_video`, a job with a first (and, for
//! the models that take one, a last) frame is `POST /v1/image_to_video`, with `model` (the
//! catalog's `model_id`, default `gen4.5`, the model that renders from text and from an image),
//! `promptText` (cut to the API's 1,000 UTF-16 units), `ratio` as the API's `"WIDTH:HEIGHT"`
//! string, `duration` in whole seconds and, for the Veo models, `audio`. The native size and
//! duration come from the worker; for the models this file knows (`gen4.5`, `gen4_turbo`,
//! `veo3.1`, `veo3.1_fast`, `veo3`) a ratio the endpoint does not take becomes the nearest
//! one it does (`gen4.5` renders text at 1280:720 or 720:1280 only, images at six ratios) and
//! a duration it does not take the shortest longer one, so the request is always one the API
//! accepts; the finalize step conforms the result. Other models are sent the worker's values
//! as they are. Frames go inline as `promptImage: [{"uri": "data:image/jpeg;base64,…",
//! "position": "first" | "last"}]`, each read back from reelgate's signed URL and fitted to the
//! ratio's size: Runway fetches URLs only over HTTPS from a named host that answers `HEAD`
//! without redirects, which a presigned blob URL (signed for `GET`) does not, and a data URI
//! (at most 5 MB) needs none of it. `gen4.5` and `gen4_turbo` take a first frame only (a last
//! frame is refused before anything is sent, as is a text job on `gen4_turbo`, which needs an
//! image); reference images are not passed on (`kind_inputs`).
//!
//! A remix or an edit (`inputs.source`, the kind's native video-to-video) is
//! `POST /v1/video_to_video` with `model` [`VIDEO_TO_VIDEO_MODEL`] (`aleph2`, whatever the
//! catalog's `model_id`, which stays the generation model), `videoUri` and `promptText` (cut as
//! above, left out when empty: it is optional on `aleph2`). The source is read back from its
//! signed URL for the same reason as frames and sent as `data:video/mp4;base64,…`, at most
//! 16 MB as a data URI (a larger source is refused before anything is sent, naming the
//! limit). No `ratio` is sent: on `aleph2` it is deprecated and undocumented, the output
//! following the input video's resolution and length (the finalize step conforms it); no
//! `keyframes`, `seed`, `targetAspectRatio` (outpainting) or `contentModeration` either, and
//! `aleph2` takes no `references`. Runway has no extension endpoint: an extension is chained by
//! the worker, and an `extension` source reaching this adapter is refused.
//!
//! What comes back: `{"id"}`, then `GET /v1/tasks/{id}` is polled: `PENDING` and `THROTTLED`
//! are queued, `RUNNING` is rendering with `progress` (0 to 1) as a percentage, `SUCCEEDED`
//! carries `output`, URLs of the MP4 on Runway's CDN (downloaded without the key from
//! `output_hosts`; Runway does not document its output hosts, the default is the CloudFront
//! host its outputs have been served from), `FAILED` carries `failureCode`: `SAFETY.*` (input
//! or output moderation) fails the render as a content refusal, anything else as an engine
//! failure, and `CANCELLED` is canceled. A cancel is `DELETE /v1/tasks/{id}` (Runway aborts a
//! pending or running task and deletes a finished one); a task Runway no longer knows needs no
//! cancel. No create is retried by this adapter: the worker claims the submission first, so a
//! redelivered render message starts no second task (Runway has no idempotency key).
//!
//! Sources (checked 2026-11-26): Runway API reference, *Start generating* (text_to_video,
//! image_to_video) and *Task management* (get, cancel/delete), docs.dev.runwayml.com/api/, as
//! published in Runway's OpenAPI-generated SDK (runwayml/sdk-python 5.13.0, July 2026: the
//! per-model `ratio`, `duration`, `promptImage` positions and task statuses); *API Input
//! Parameters* (docs.dev.runwayml.com/assets/inputs/: URL rules, data URIs of at most 5 MB for
//! images and 16 MB for videos); *Handle Task Failures*
//! (docs.dev.runwayml.com/errors/task-failures/: `SAFETY.INPUT.*`, `SAFETY.OUTPUT.*`); *HTTP
//! Errors* (docs.dev.runwayml.com/errors/errors: 429 and 502–504 may be retried). Video to
//! video (checked 2026-11-29), from the same SDK's `video_to_video_create_params.py` and its
//! history: `aleph2` added 2026-06-02, `gen4_aleph` removed 2026-06-10; `promptText` optional
//! since 2026-06-17 (its "up to 1000 characters" dropped from the description 2026-06-26, so
//! the 1,000-unit cut is kept as the last documented bound); `targetAspectRatio` (outpainting)
//! added 2026-06-12; `ratio` an undocumented string, marked `@deprecated` in runwayml/sdk-node
//! 4.12.0 (2026-07-23), as `gen4_aleph`'s was ("ignored: the resolution of the output video is
//! determined by the input video", 2026-02-03); `videoUri` an HTTPS URL, Runway upload URI or
//! data URI "up to 16MB". Not confirmed by any Runway page: the longest source `aleph2` takes
//! (see the kind's `max_video_to_video_seconds`) and whether its output keeps the source's
//! soundtrack (the kind renders no audio; the finalize step lays the soundtrack).

use super::{path_segment, transport, Auth, Provider, ProviderApi};
use crate::domain::catalog::EngineConfig;
use crate::ports::engine::{
    ByteStream, EngineError, Render, RenderRequest, RenderStatus, VideoEngine, CONTENT_REFUSED,
};
use crate::ports::fetch::Fetcher;
use async_trait::async_trait;
use reelgate_engine::protocol::{codes, operations, RenderError};
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// Runway's public API origin.
pub const DEFAULT_BASE_URL: &str = "https://api.dev.runwayml.com";
/// The API version every request names (`X-Runway-Version`).
pub const API_VERSION: &str = "2024-11-06";
/// The model used when the catalog names none: it renders from text and from a first frame.
pub const DEFAULT_MODEL: &str = "gen4.5";
/// Where Runway's task outputs have been served from (not documented by Runway; override with
/// `output_hosts`).
pub const DEFAULT_OUTPUT_HOSTS: &[&str] = &["dnznrvs05pmza.cloudfront.net"];
/// The largest data URI Runway takes for an image (docs: *API Input Parameters*).
pub const MAX_DATA_URI_BYTES: usize = 5 * 1000 * 1000;
/// The longest `promptText`, in UTF-16 code units.
pub const MAX_PROMPT_UNITS: usize = 1000;
/// The model `POST /v1/video_to_video` re-renders a source with (remix and edit), whatever the
/// catalog's `model_id` (the generation model).
pub const VIDEO_TO_VIDEO_MODEL: &str = "aleph2";
/// The largest data URI Runway takes for a video (docs: *API Input Parameters*).
pub const MAX_VIDEO_DATA_URI_BYTES: usize = 16 * 1000 * 1000;
/// How a source video goes inline.
const VIDEO_DATA_URI_PREFIX: &str = "data:video/mp4;base64,";
/// The largest source whose data URI fits in [`MAX_VIDEO_DATA_URI_BYTES`] (base64 writes 4
/// characters for every 3 bytes, the last 1 or 2 padded to 4).
const MAX_SOURCE_VIDEO_BYTES: usize =
    (MAX_VIDEO_DATA_URI_BYTES - VIDEO_DATA_URI_PREFIX.len()) / 4 * 3;
/// The longest the read of a source video may take.
const SOURCE_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// What Runway documents for one model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ModelSpec {
    /// Ratios `text_to_video` takes (empty: the model needs an image).
    text_ratios: &'static [(u32, u32)],
    /// Ratios `image_to_video` takes.
    image_ratios: &'static [(u32, u32)],
    durations: &'static [u32],
    /// Whether `promptImage` may carry a `last` frame.
    last_frame: bool,
    /// Whether the model takes `audio`.
    audio: bool,
}

const GEN4_IMAGE_RATIOS: &[(u32, u32)] = &[
    (1280, 720),
    (720, 1280),
    (1104, 832),
    (832, 1104),
    (960, 960),
    (1584, 672),
];
const VEO_RATIOS: &[(u32, u32)] = &[(1280, 720), (720, 1280), (1920, 1080), (1080, 1920)];
const TWO_TO_TEN: &[u32] = &[2, 3, 4, 5, 6, 7, 8, 9, 10];

fn model_spec(model: &str) -> Option<ModelSpec> {
    Some(match model {
        "gen4.5" => ModelSpec {
            text_ratios: &[(1280, 720), (720, 1280)],
            image_ratios: GEN4_IMAGE_RATIOS,
            durations: TWO_TO_TEN,
            last_frame: false,
            audio: false,
        },
        "gen4_turbo" => ModelSpec {
            text_ratios: &[],
            image_ratios: GEN4_IMAGE_RATIOS,
            durations: TWO_TO_TEN,
            last_frame: false,
            audio: false,
        },
        "veo3.1" | "veo3.1_fast" => ModelSpec {
            text_ratios: VEO_RATIOS,
            image_ratios: VEO_RATIOS,
            durations: &[4, 6, 8],
            last_frame: true,
            audio: true,
        },
        "veo3" => ModelSpec {
            text_ratios: VEO_RATIOS,
            image_ratios: VEO_RATIOS,
            durations: &[8],
            last_frame: false,
            audio: false,
        },
        _ => return None,
    })
}

/// The engine. Build it from a catalog entry with [`RunwayEngine::from_config`].
pub struct RunwayEngine {
    api: ProviderApi,
    model: String,
    /// Whether to ask for a soundtrack (models that take `audio`): the engine's native audio.
    audio: bool,
}

/// The create call the adapter makes for one job.
#[derive(Debug, Clone, PartialEq)]
struct Create {
    /// `/v1/text_to_video`, `/v1/image_to_video` or `/v1/video_to_video`.
    path: &'static str,
    body: Value,
    /// The frame size `ratio` names (frames are fitted to it).
    size: (u32, u32),
}

impl RunwayEngine {
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
                headers: vec![("x-runway-version", API_VERSION.to_owned())],
                output_hosts: DEFAULT_OUTPUT_HOSTS,
            },
            fetcher,
        )?;
        Ok(RunwayEngine {
            api,
            model: config
                .model_id
                .clone()
                .filter(|m| !m.trim().is_empty())
                .unwrap_or_else(|| DEFAULT_MODEL.to_owned()),
            audio: config.native_renders().audio,
        })
    }

    /// The endpoint, body and frame size for `request` (frames and a source video not yet
    /// attached).
    fn plan(&self, request: &RenderRequest) -> Result<Create, EngineError> {
        if let Some(source) = &request.inputs.source {
            return video_to_video(request, &source.operation);
        }
        let spec = model_spec(&self.model);
        let first = request.inputs.first_frame_url.is_some();
        let last = request.inputs.last_frame_url.is_some();
        if let Some(spec) = spec {
            if last && !spec.last_frame {
                return Err(EngineError::Rejected(format!(
                    "Runway's {} takes no last frame",
                    self.model
                )));
            }
            if last && !first {
                return Err(EngineError::Rejected(format!(
                    "Runway's {} takes a last frame only with a first frame",
                    self.model
                )));
            }
            if !first && !last && spec.text_ratios.is_empty() {
                return Err(EngineError::Rejected(format!(
                    "Runway's {} renders only from a first frame",
                    self.model
                )));
            }
        }
        let image = first || last;
        let size = match spec {
            Some(spec) => nearest_ratio(
                (request.width, request.height),
                if image {
                    spec.image_ratios
                } else {
                    spec.text_ratios
                },
            ),
            None => (request.width, request.height),
        };
        let duration = match spec {
            Some(spec) => spec
                .durations
                .iter()
                .copied()
                .filter(|d| *d >= request.seconds)
                .min()
                .or_else(|| spec.durations.iter().copied().max())
                .unwrap_or(request.seconds),
            None => request.seconds,
        };
        let mut body = Map::new();
        body.insert("model".into(), json!(self.model));
        let prompt = prompt_text(&request.prompt);
        if !prompt.is_empty() {
            body.insert("promptText".into(), json!(prompt));
        }
        body.insert("ratio".into(), json!(format!("{}:{}", size.0, size.1)));
        body.insert("duration".into(), json!(duration));
        if spec.is_some_and(|s| s.audio) {
            body.insert("audio".into(), json!(self.audio));
        }
        Ok(Create {
            path: if image {
                "/v1/image_to_video"
            } else {
                "/v1/text_to_video"
            },
            body: Value::Object(body),
            size,
        })
    }

    /// One of the caller's frames as a JPEG data URI fitted to `size`.
    async fn frame(&self, signed: &str, size: (u32, u32)) -> Result<String, EngineError> {
        use base64::Engine as _;
        let (bytes, _mime) = self.api.read_input(signed).await?;
        let jpeg = tokio::task::spawn_blocking(move || {
            reelgate_media::fit_frame_jpeg(&bytes, size.0, size.1)
        })
        .await
        .map_err(|e| EngineError::Rejected(format!("fitting a frame: {e}")))?
        .map_err(|e| EngineError::Rejected(format!("fitting a frame: {e}")))?;
        let uri = format!(
            "data:image/jpeg;base64,{}",
            base64::engine::general_purpose::STANDARD.encode(jpeg)
        );
        if uri.len() > MAX_DATA_URI_BYTES {
            return Err(EngineError::Rejected(
                "a frame is over Runway's 5 MB data URI limit".into(),
            ));
        }
        Ok(uri)
    }
}

/// The `POST /v1/video_to_video` call for a remix or an edit (`videoUri` not yet attached):
/// `aleph2`, with the prompt if there is one. No `ratio`: the output follows the source.
fn video_to_video(request: &RenderRequest, operation: &str) -> Result<Create, EngineError> {
    if !matches!(operation, operations::REMIX | operations::EDIT) {
        return Err(EngineError::Rejected(format!(
            "Runway has no native {operation}: it is chained onto a frame of the source"
        )));
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(VIDEO_TO_VIDEO_MODEL));
    let prompt = prompt_text(&request.prompt);
    if !prompt.is_empty() {
        body.insert("promptText".into(), json!(prompt));
    }
    Ok(Create {
        path: "/v1/video_to_video",
        body: Value::Object(body),
        size: (request.width, request.height),
    })
}

/// A source video as the data URI `videoUri` takes, refused over Runway's 16 MB.
fn video_data_uri(video: &[u8]) -> Result<String, EngineError> {
    use base64::Engine as _;
    if video.len() > MAX_SOURCE_VIDEO_BYTES {
        return Err(too_large_source());
    }
    let uri = format!(
        "{VIDEO_DATA_URI_PREFIX}{}",
        base64::engine::general_purpose::STANDARD.encode(video)
    );
    if uri.len() > MAX_VIDEO_DATA_URI_BYTES {
        return Err(too_large_source());
    }
    Ok(uri)
}

fn too_large_source() -> EngineError {
    EngineError::Rejected(format!(
        "the source video is over Runway's {} MB limit for a video sent as a data URI",
        MAX_VIDEO_DATA_URI_BYTES / 1_000_000
    ))
}

/// Reads the source video back from the URL reelgate signed for it, refusing it as soon as it
/// is known to be too large to go inline ([`MAX_SOURCE_VIDEO_BYTES`]).
async fn read_source_video(
    http: &reqwest::Client,
    signed_url: &str,
) -> Result<Vec<u8>, EngineError> {
    let mut response = http
        .get(signed_url)
        .timeout(SOURCE_READ_TIMEOUT)
        .send()
        .await
        .map_err(transport)?;
    if !response.status().is_success() {
        return Err(EngineError::Unreachable(format!(
            "reading the source video: HTTP {}",
            response.status()
        )));
    }
    if response
        .content_length()
        .is_some_and(|n| n > MAX_SOURCE_VIDEO_BYTES as u64)
    {
        return Err(too_large_source());
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(transport)? {
        if bytes.len() + chunk.len() > MAX_SOURCE_VIDEO_BYTES {
            return Err(too_large_source());
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// `prompt` cut to Runway's limit of 1,000 UTF-16 code units, at a character boundary.
fn prompt_text(prompt: &str) -> String {
    let mut units = 0;
    let mut out = String::new();
    for c in prompt.trim().chars() {
        units += c.len_utf16();
        if units > MAX_PROMPT_UNITS {
            break;
        }
        out.push(c);
    }
    out
}

/// The ratio in `allowed` for a frame of `size`: the same one if it is allowed, else the one
/// whose shape is nearest (on a logarithmic scale), then the one nearest in area.
fn nearest_ratio(size: (u32, u32), allowed: &[(u32, u32)]) -> (u32, u32) {
    let shape = |(w, h): (u32, u32)| (f64::from(w.max(1)) / f64::from(h.max(1))).ln();
    let area = |(w, h): (u32, u32)| f64::from(w) * f64::from(h);
    allowed
        .iter()
        .copied()
        .min_by(|a, b| {
            let key =
                |r: (u32, u32)| ((shape(r) - shape(size)).abs(), (area(r) - area(size)).abs());
            key(*a)
                .partial_cmp(&key(*b))
                .unwrap_or(std::cmp::Ordering::Equal)
        })
        .unwrap_or(size)
}

/// Runway's task object as a [`Render`].
fn render_of(task: &Value) -> Option<Render> {
    let id = task["id"].as_str()?.to_owned();
    let status = match task["status"].as_str().unwrap_or_default() {
        "PENDING" | "THROTTLED" => RenderStatus::Queued,
        "RUNNING" => RenderStatus::Rendering,
        "SUCCEEDED" => RenderStatus::Succeeded,
        "FAILED" => RenderStatus::Failed,
        "CANCELLED" => RenderStatus::Canceled,
        _ => RenderStatus::Unknown,
    };
    let output = task["output"]
        .as_array()
        .and_then(|o| o.iter().find_map(Value::as_str))
        .map(str::to_owned);
    let (status, error) = match status {
        RenderStatus::Failed => {
            let code = task["failureCode"].as_str().unwrap_or_default();
            let error = if code.starts_with("SAFETY.") {
                RenderError {
                    code: CONTENT_REFUSED.into(),
                    message: format!("the provider's moderation refused the content ({code})"),
                }
            } else {
                RenderError {
                    code: codes::ENGINE_FAILURE.into(),
                    message: format!(
                        "{}: {}",
                        if code.is_empty() { "FAILED" } else { code },
                        task["failure"].as_str().unwrap_or("the task failed")
                    ),
                }
            };
            (status, Some(error))
        }
        RenderStatus::Succeeded if output.is_none() => (
            RenderStatus::Failed,
            Some(RenderError {
                code: codes::ENGINE_FAILURE.into(),
                message: "the task succeeded with no output".into(),
            }),
        ),
        _ => (status, None),
    };
    let progress = match status {
        RenderStatus::Succeeded => 100,
        RenderStatus::Rendering => (task["progress"].as_f64().unwrap_or(0.0) * 100.0)
            .round()
            .clamp(0.0, 99.0) as u8,
        _ => 0,
    };
    Some(Render {
        result_url: (status == RenderStatus::Succeeded)
            .then_some(output)
            .flatten(),
        created_at: task["createdAt"].as_str().map(unix_seconds).unwrap_or(0),
        id,
        status,
        progress,
        error,
    })
}

/// Unix seconds of an RFC 3339 UTC timestamp (`2026-11-26T10:00:00.000Z`), 0 if unreadable.
fn unix_seconds(text: &str) -> i64 {
    let digits = |s: &str| s.parse::<i64>().ok();
    let parse = || -> Option<i64> {
        let (date, time) = text.split_once('T')?;
        let mut d = date.splitn(3, '-');
        let (y, m, day) = (digits(d.next()?)?, digits(d.next()?)?, digits(d.next()?)?);
        let mut t = time.get(..8)?.splitn(3, ':');
        let (hh, mm, ss) = (digits(t.next()?)?, digits(t.next()?)?, digits(t.next()?)?);
        // Days from the civil date (Howard Hinnant's algorithm).
        let y = if m <= 2 { y - 1 } else { y };
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        let days = era * 146_097 + doe - 719_468;
        Some(days * 86_400 + hh * 3600 + mm * 60 + ss)
    };
    parse().unwrap_or(0)
}

#[async_trait]
impl VideoEngine for RunwayEngine {
    async fn submit(&self, request: &RenderRequest) -> Result<Render, EngineError> {
        let Create {
            path,
            mut body,
            size,
        } = self.plan(request)?;
        if let Some(source) = &request.inputs.source {
            // The API client: no redirects, as for the frames (`ProviderApi::read_input`).
            let video = read_source_video(&self.api.http, &source.video_url).await?;
            body["videoUri"] = json!(video_data_uri(&video)?);
        } else {
            let mut frames = Vec::new();
            for (url, position) in [
                (&request.inputs.first_frame_url, "first"),
                (&request.inputs.last_frame_url, "last"),
            ] {
                if let Some(url) = url {
                    frames.push(json!({"uri": self.frame(url, size).await?, "position": position}));
                }
            }
            if !frames.is_empty() {
                body["promptImage"] = Value::Array(frames);
            }
        }
        let answer = self
            .api
            .call(
                reqwest::Method::POST,
                &self.api.url(path),
                Some(&body),
                None,
            )
            .await?;
        let id = answer["id"].as_str().ok_or_else(|| {
            EngineError::Rejected("Runway's answer to the create has no task id".into())
        })?;
        super::accepted(id)
    }

    async fn status(&self, render_id: &str) -> Result<Render, EngineError> {
        let url = self
            .api
            .url(&format!("/v1/tasks/{}", path_segment(render_id)?));
        let task = self
            .api
            .call(reqwest::Method::GET, &url, None, Some(render_id))
            .await?;
        render_of(&task).ok_or_else(|| EngineError::Rejected("Runway's task has no id".into()))
    }

    /// `DELETE /v1/tasks/{id}`: aborts a pending, throttled or running task (and deletes a
    /// finished one). A task Runway no longer knows has nothing left to stop.
    async fn cancel(&self, render_id: &str) -> Result<(), EngineError> {
        let url = self
            .api
            .url(&format!("/v1/tasks/{}", path_segment(render_id)?));
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
    use crate::ports::engine::{RenderInputs, RenderSource};

    fn engine(model: Option<&str>) -> RunwayEngine {
        let config: EngineConfig = toml::from_str(&format!(
            "id = \"rw\"\nkind = \"runway\"\n{}",
            model
                .map(|m| format!("model_id = \"{m}\"\n"))
                .unwrap_or_default()
        ))
        .expect("config");
        RunwayEngine::from_config(
            &config,
            Some("key".into()),
            Arc::new(crate::adapters::guarded_fetch::GuardedFetcher::default()),
        )
        .expect("engine")
    }

    fn request(seconds: u32, width: u32, height: u32) -> RenderRequest {
        RenderRequest {
            model: "hosted-runway".into(),
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

    fn with_frames(mut r: RenderRequest, first: bool, last: bool) -> RenderRequest {
        r.inputs.first_frame_url = first.then(|| "http://blob/first".into());
        r.inputs.last_frame_url = last.then(|| "http://blob/last".into());
        r
    }

    #[test]
    fn a_text_job_maps_to_text_to_video_with_the_model_s_values() {
        let e = engine(None);
        assert_eq!(e.model, "gen4.5");
        let plan = e.plan(&request(5, 1280, 720)).expect("plan");
        assert_eq!(plan.path, "/v1/text_to_video");
        assert_eq!(
            plan.body,
            json!({"model": "gen4.5", "promptText": "a paper boat", "ratio": "1280:720", "duration": 5})
        );
        // gen4.5 renders text at 1280:720 or 720:1280 only: a square asks for the nearest.
        let square = e.plan(&request(4, 960, 960)).expect("plan");
        assert_eq!(square.body["ratio"], "1280:720");
        assert_eq!(square.body["duration"], 4);
        assert_eq!(
            e.plan(&request(4, 832, 1104)).expect("plan").body["ratio"],
            "720:1280"
        );
    }

    #[test]
    fn a_frame_job_maps_to_image_to_video_at_the_image_ratios() {
        let e = engine(Some("gen4_turbo"));
        let plan = e
            .plan(&with_frames(request(5, 960, 960), true, false))
            .expect("plan");
        assert_eq!(plan.path, "/v1/image_to_video");
        assert_eq!(plan.body["ratio"], "960:960");
        assert_eq!(plan.size, (960, 960));
        // gen4_turbo needs an image; neither gen4 model takes a last frame.
        assert!(matches!(
            e.plan(&request(5, 1280, 720)),
            Err(EngineError::Rejected(m)) if m.contains("first frame")
        ));
        assert!(e
            .plan(&with_frames(request(5, 1280, 720), true, true))
            .is_err());
        let veo = engine(Some("veo3.1"));
        let plan = veo
            .plan(&with_frames(request(5, 1280, 720), true, true))
            .expect("plan");
        assert_eq!(plan.body["duration"], 6, "veo3.1 renders 4, 6 or 8 s");
        assert_eq!(
            plan.body["audio"], false,
            "the kind's default renders no audio"
        );
        assert!(veo
            .plan(&with_frames(request(4, 1280, 720), false, true))
            .is_err());
    }

    #[test]
    fn an_unknown_model_gets_the_worker_s_values() {
        let plan = engine(Some("seedance2"))
            .plan(&with_frames(request(7, 1112, 834), false, true))
            .expect("plan");
        assert_eq!(plan.path, "/v1/image_to_video");
        assert_eq!(
            (plan.body["ratio"].clone(), plan.body["duration"].clone()),
            (json!("1112:834"), json!(7))
        );
    }

    fn with_source(mut r: RenderRequest, operation: &str) -> RenderRequest {
        r.inputs.source = Some(RenderSource {
            operation: operation.into(),
            video_url: "http://blob/source.mp4".into(),
            render_id: None,
        });
        r
    }

    #[test]
    fn a_remix_or_an_edit_maps_to_video_to_video_with_aleph2() {
        // The catalog's model renders the generations; aleph2 the video-to-video, even on a
        // model that needs an image.
        for model in [None, Some("gen4_turbo"), Some("veo3.1")] {
            let e = engine(model);
            for operation in ["remix", "edit"] {
                let plan = e
                    .plan(&with_source(request(7, 1366, 768), operation))
                    .expect("plan");
                assert_eq!(plan.path, "/v1/video_to_video");
                assert_eq!(
                    plan.body,
                    json!({"model": "aleph2", "promptText": "a paper boat"}),
                    "no ratio, duration or audio: the output follows the source"
                );
                assert_eq!(plan.size, (1366, 768));
            }
        }
        assert_ne!(engine(None).model, VIDEO_TO_VIDEO_MODEL);
        // Frames sent with a source are not the source's: they are not attached.
        let plan = engine(None)
            .plan(&with_source(
                with_frames(request(4, 1280, 720), true, true),
                "edit",
            ))
            .expect("plan");
        assert_eq!(plan.path, "/v1/video_to_video");
        // The prompt is optional on aleph2: an empty one is left out; a long one is cut.
        let mut quiet = with_source(request(4, 1280, 720), "remix");
        quiet.prompt = "   ".into();
        assert_eq!(
            engine(None).plan(&quiet).expect("plan").body,
            json!({"model": "aleph2"})
        );
        quiet.prompt = "x".repeat(1500);
        let body = engine(None).plan(&quiet).expect("plan").body;
        assert_eq!(body["promptText"].as_str().map(str::len), Some(1000));
    }

    #[test]
    fn runway_has_no_native_extension() {
        assert!(matches!(
            engine(None).plan(&with_source(request(4, 1280, 720), "extension")),
            Err(EngineError::Rejected(m)) if m.contains("extension")
        ));
    }

    #[test]
    fn a_source_goes_inline_as_an_mp4_data_uri_of_at_most_16_mb() {
        let uri = video_data_uri(b"\x00\x00\x00\x18ftypmp42").expect("uri");
        assert_eq!(uri, "data:video/mp4;base64,AAAAGGZ0eXBtcDQy");
        let largest = vec![0u8; MAX_SOURCE_VIDEO_BYTES];
        let uri = video_data_uri(&largest).expect("the largest source fits");
        assert!(uri.len() <= MAX_VIDEO_DATA_URI_BYTES);
        assert!(
            uri.len() > MAX_VIDEO_DATA_URI_BYTES - 4,
            "the bound is tight"
        );
        let over = vec![0u8; MAX_SOURCE_VIDEO_BYTES + 1];
        assert!(matches!(
            video_data_uri(&over),
            Err(EngineError::Rejected(m)) if m.contains("16 MB")
        ));
    }

    #[test]
    fn long_prompts_are_cut_to_the_api_limit() {
        assert_eq!(prompt_text(&"あ".repeat(1200)).chars().count(), 1000);
        assert_eq!(prompt_text(&"😀".repeat(600)).chars().count(), 500);
    }

    #[test]
    fn task_statuses_map_to_renders() {
        let r = render_of(
            &json!({"id": "t1", "status": "THROTTLED", "createdAt": "2026-11-26T10:00:00.000Z"}),
        )
        .expect("render");
        assert_eq!(
            (r.status, r.progress, r.created_at),
            (RenderStatus::Queued, 0, 1_795_687_200)
        );
        let r = render_of(&json!({"id": "t1", "status": "RUNNING", "progress": 0.456})).expect("r");
        assert_eq!((r.status, r.progress), (RenderStatus::Rendering, 46));
        let r =
            render_of(&json!({"id": "t1", "status": "SUCCEEDED", "output": ["https://cdn/v.mp4"]}))
                .expect("r");
        assert_eq!(
            (r.status, r.progress, r.result_url.as_deref()),
            (RenderStatus::Succeeded, 100, Some("https://cdn/v.mp4"))
        );
        let r = render_of(&json!({"id": "t1", "status": "SUCCEEDED", "output": []})).expect("r");
        assert_eq!(r.status, RenderStatus::Failed);
        let r = render_of(&json!({"id": "t1", "status": "FAILED", "failure": "no", "failureCode": "SAFETY.INPUT.TEXT"}))
            .expect("r");
        let error = r.error.expect("error");
        assert_eq!(error.code, CONTENT_REFUSED);
        assert!(!error.message.to_lowercase().contains("runway"));
        let r = render_of(&json!({"id": "t1", "status": "FAILED", "failure": "bad output", "failureCode": "INTERNAL.BAD_OUTPUT.CODE01"}))
            .expect("r");
        assert_eq!(r.error.expect("error").code, codes::ENGINE_FAILURE);
        let r = render_of(&json!({"id": "t1", "status": "CANCELLED"})).expect("r");
        assert_eq!(r.status, RenderStatus::Canceled);
        let r = render_of(&json!({"id": "t1", "status": "SOMETHING_NEW"})).expect("r");
        assert_eq!(r.status, RenderStatus::Unknown);
        assert!(render_of(&json!({"status": "RUNNING"})).is_none());
    }

    #[test]
    fn timestamps_parse_as_unix_seconds() {
        assert_eq!(unix_seconds("1970-01-01T00:00:00Z"), 0);
        assert_eq!(unix_seconds("2024-11-06T12:34:56.789Z"), 1_730_896_496);
        assert_eq!(unix_seconds("not a time"), 0);
    }
}
