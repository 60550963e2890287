//! Renders through Replicate's predictions API (`kind = "replicate"`). A render is one
//! prediction: an official model (`model_id = "owner/name"`) is started with
//! `POST {base}/models/{owner}/{name}/predictions` and `{"input": {...}}`, a pinned version
//! (`model_id = "owner/name:version"`) with `POST {base}/predictions` and
//! `{"version": "<version id>", "input": {...}}`; `GET {base}/predictions/{id}` is polled and
//! `POST {base}/predictions/{id}/cancel` cancels. `base` defaults to
//! `https://api.replicate.com/v1`; the key goes as `Authorization: Bearer`. Every call is
//! asynchronous: the `Prefer: wait` header (which holds the create up to 60 s) is never sent, so
//! a create answers at once and the worker polls.
//!
//! What is sent: the model's own input fields, named per model (`input_fields` in the catalog
//! overrides them; a thing without a field is not sent, and a request carrying an input the
//! model has no field for is refused before anything is started). Documented defaults:
//!
//! | `model_id` | prompt | first frame | last frame | reference images | video | duration | aspect ratio | resolution | audio |
//! | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
//! | `minimax/hailuo-02` (the default) | `prompt` | `first_frame_image` | `last_frame_image` | — | — | `duration` | — (the output follows the first frame, else 16:9) | `resolution` | — |
//! | `google/veo-3` | `prompt` | `image` | — | — | — | `duration` | `aspect_ratio` | `resolution` | `generate_audio` |
//! | `google/veo-3.1` | `prompt` | `image` | `last_frame` | `reference_images` | — | `duration` | `aspect_ratio` | `resolution` | `generate_audio` |
//! | `luma/modify-video` | `prompt` | — | — | — | `video` | — | — | — | — |
//!
//! A source video (`inputs.source`: a remix, an edit or an extension the engine does itself,
//! per the model table `domain/catalog/hosted_models.rs` or the catalog's `operations`) goes as
//! its signed URL (served as `video/mp4`) in the model's `video` field; a model without one
//! refuses it. `luma/modify-video` renders only from a source (a request without one is
//! refused before a prediction starts; its `mode` is left at `adhere_1`, its `first_frame`, a
//! modified first frame guiding the edit, is not sent). Veo 3.1's reference images work only
//! at 8 s and 16:9, so a request carrying them asks for that (the finalize step trims and
//! crops).
//!
//! Values: `duration` is the native duration the worker chose, an integer (hailuo-02: 6 or 10;
//! Veo: 4, 6 or 8); `resolution` is the chosen size's short side as `"768p"` (hailuo-02:
//! 512p, 768p, 1080p, and its default is 1080p, so it is always sent; Veo: 720p, 1080p);
//! `aspect_ratio` is the chosen size's nearest ratio (`"16:9"`, `"9:16"`, …); audio is the
//! engine's native `audio`. Frames and reference images go as reelgate's short-lived signed
//! URLs (the API takes HTTP or data URLs for files). The catalog's `durations`, `sizes` and
//! `audio` must describe the model chosen: the kind's defaults are hailuo-02's (6 or 10 s,
//! 1366x768 at 768p, no audio).
//!
//! What comes back: a prediction; `starting` is queued, `processing` rendering (its progress
//! is the last percentage its logs print, when they print one: Replicate reports no progress
//! of its own), `succeeded` carries `output`, one URL (or a list of them) of the MP4 on
//! Replicate's delivery CDN (`replicate.delivery` and its subdomains, the default
//! `output_hosts`), fetched without the key; `failed` carries `error`, and one that says the
//! input or output was flagged as sensitive (`E005`) or otherwise names the provider's safety
//! filter is a content refusal ([`CONTENT_REFUSED`]); `canceled` is canceled; `aborted` (the
//! prediction's deadline passed before it started) fails. A create refused for its content is
//! [`EngineError::ContentRefused`].
//!
//! Sources (read 2026-11-26): Replicate HTTP API reference (replicate.com/docs/reference/http:
//! `predictions.create`, `models.predictions.create`, `predictions.get`, `predictions.cancel`,
//! the prediction object and its delivery hosts); *Prediction lifecycle*
//! (replicate.com/docs/topics/predictions/lifecycle: the six statuses); *Error codes*
//! (replicate.com/docs/reference/error-codes); the changelog *Run all models with the same API
//! endpoint* (2025-08-05); the API pages of `minimax/hailuo-02`, `google/veo-3(-fast)` and
//! `google/veo-3.1` (replicate.com/{owner}/{name}/api: their input schemas); read 2026-11-28,
//! replicate.com/luma/modify-video/api (`video` of at most 100 MB and 30 s, `first_frame`,
//! `prompt`, `mode`, the deprecated `video_url` and `first_frame_url`; the output a URI) and
//! replicate.com/google/veo-3.1/api (`reference_images`: 1 to 3, 16:9 and 8 s only; the last
//! frame ignored with them).
//!
//! Best effort: progress (only from logs); the refusal is recognised from the failure's text,
//! since Replicate gives no machine code beyond the `(E005)` suffix; a cancel of a prediction
//! Replicate no longer knows is taken as done.

use super::{path_segment, Auth, Provider, ProviderApi};
use crate::domain::catalog::EngineConfig;
use crate::domain::videos::workflow::steps::MAX_ENGINE_OUTPUT_BYTES;
use crate::ports::engine::{
    ByteStream, EngineError, Render, RenderRequest, RenderStatus, VideoEngine, CONTENT_REFUSED,
};
use crate::ports::fetch::Fetcher;
use async_trait::async_trait;
use reelgate_engine::protocol::{codes, RenderError};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Replicate's API root.
pub const DEFAULT_BASE_URL: &str = "https://api.replicate.com/v1";
/// The model used when the catalog names none (the kind's native defaults are its renders).
pub const DEFAULT_MODEL: &str = "minimax/hailuo-02";
/// Where Replicate serves prediction outputs: `replicate.delivery` and its subdomains.
pub const DEFAULT_OUTPUT_HOSTS: &[&str] = &[".replicate.delivery"];

/// The things reelgate can send, as `input_fields` names them.
pub const THINGS: &[&str] = &[
    "prompt",
    "first_frame",
    "last_frame",
    "reference_images",
    "video",
    "duration",
    "aspect_ratio",
    "resolution",
    "audio",
];

/// The documented input fields of the models this adapter knows, by `owner/name`.
fn documented_fields(model: &str) -> Option<&'static [(&'static str, &'static str)]> {
    match model {
        "minimax/hailuo-02" => Some(&[
            ("prompt", "prompt"),
            ("first_frame", "first_frame_image"),
            ("last_frame", "last_frame_image"),
            ("duration", "duration"),
            ("resolution", "resolution"),
        ]),
        "google/veo-3" => Some(&[
            ("prompt", "prompt"),
            ("first_frame", "image"),
            ("duration", "duration"),
            ("aspect_ratio", "aspect_ratio"),
            ("resolution", "resolution"),
            ("audio", "generate_audio"),
        ]),
        "google/veo-3.1" => Some(&[
            ("prompt", "prompt"),
            ("first_frame", "image"),
            ("last_frame", "last_frame"),
            ("reference_images", "reference_images"),
            ("duration", "duration"),
            ("aspect_ratio", "aspect_ratio"),
            ("resolution", "resolution"),
            ("audio", "generate_audio"),
        ]),
        // Its `first_frame` is a modified first frame guiding the edit, not a frame the video
        // opens on: not sent.
        "luma/modify-video" => Some(&[("prompt", "prompt"), ("video", "video")]),
        _ => None,
    }
}

/// A model that renders only from a source video (no generation of its own).
fn needs_source(model: &str) -> bool {
    model == "luma/modify-video"
}

/// The duration and aspect ratio a model takes reference images at, when it takes them only
/// there (Veo 3.1: 8 s at 16:9; the finalize step trims and crops the render).
fn reference_shape(model: &str) -> Option<(u32, &'static str)> {
    (model == "google/veo-3.1").then_some((8, "16:9"))
}

/// What a prediction is started for.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Target {
    /// An official model, run by name.
    Official { owner: String, name: String },
    /// A pinned version of any model, run by its version id.
    Version(String),
}

/// The engine. Build it from a catalog entry with [`ReplicateEngine::from_config`].
pub struct ReplicateEngine {
    api: ProviderApi,
    target: Target,
    /// Thing (one of [`THINGS`]) → the model's input field.
    fields: BTreeMap<&'static str, String>,
    /// Whether the model is asked for a soundtrack (where it has a field for that).
    audio: bool,
    rules: Rules,
}

/// What a documented model takes beyond its fields.
#[derive(Clone, Copy, Debug, Default)]
struct Rules {
    /// It renders only from a source video: a request without one is refused before a
    /// prediction starts.
    needs_source: bool,
    /// The duration and aspect ratio its reference images need.
    reference_shape: Option<(u32, &'static str)>,
}

/// The inputs (`first_frame`, `last_frame`, `reference_images`) an engine entry's model takes:
/// what the catalog may let its models claim.
pub fn model_inputs(config: &EngineConfig) -> anyhow::Result<Vec<&'static str>> {
    let (_, fields) = resolve(config)?;
    Ok(["first_frame", "last_frame", "reference_images"]
        .into_iter()
        .filter(|t| fields.contains_key(t))
        .collect())
}

/// The entry's target and its input fields, or why they are unusable.
fn resolve(config: &EngineConfig) -> anyhow::Result<(Target, BTreeMap<&'static str, String>)> {
    let model_id = config.model_id.as_deref().unwrap_or(DEFAULT_MODEL).trim();
    let bad = |why: &str| anyhow::anyhow!("engine {}: model_id {model_id:?} {why}", config.id);
    let (model, version) = match model_id.split_once(':') {
        Some((model, version)) => (model, Some(version)),
        None => (model_id, None),
    };
    let (owner, name) = model
        .split_once('/')
        .ok_or_else(|| bad("is not owner/name or owner/name:version"))?;
    if path_segment(owner).is_err() || path_segment(name).is_err() {
        return Err(bad("is not owner/name or owner/name:version"));
    }
    let target = match version {
        Some(v)
            if !v.is_empty() && v.len() <= 128 && v.bytes().all(|b| b.is_ascii_alphanumeric()) =>
        {
            Target::Version(v.to_owned())
        }
        Some(_) => return Err(bad("has an unusable version id")),
        None => Target::Official {
            owner: owner.to_owned(),
            name: name.to_owned(),
        },
    };
    let documented = documented_fields(model);
    let mut fields: BTreeMap<&'static str, String> = documented
        .unwrap_or_default()
        .iter()
        .map(|&(thing, field)| (thing, field.to_owned()))
        .collect();
    for (thing, field) in &config.input_fields {
        let Some(thing) = THINGS.iter().copied().find(|t| t == thing) else {
            anyhow::bail!(
                "engine {}: input_fields names {thing:?}, not one of {}",
                config.id,
                THINGS.join(", ")
            );
        };
        if field.is_empty() {
            fields.remove(thing);
        } else if field.len() <= 64
            && field
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            fields.insert(thing, field.clone());
        } else {
            anyhow::bail!(
                "engine {}: input_fields.{thing} = {field:?} is not a field name",
                config.id
            );
        }
    }
    if !fields.contains_key("prompt") {
        anyhow::bail!(
            "engine {}: model {model} has no prompt field{}: give input_fields",
            config.id,
            if documented.is_none() {
                " (its input fields are not documented here)"
            } else {
                ""
            }
        );
    }
    Ok((target, fields))
}

impl ReplicateEngine {
    pub fn from_config(
        config: &EngineConfig,
        key: Option<String>,
        fetcher: Arc<dyn Fetcher>,
    ) -> anyhow::Result<Self> {
        let (target, fields) = resolve(config)?;
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
        let model = config
            .model_id
            .as_deref()
            .unwrap_or(DEFAULT_MODEL)
            .trim()
            .split(':')
            .next()
            .unwrap_or_default();
        Ok(ReplicateEngine {
            api,
            target,
            fields,
            audio: config.native_renders().audio,
            rules: Rules {
                needs_source: needs_source(model),
                reference_shape: reference_shape(model),
            },
        })
    }

    /// The create call: its URL path and JSON body.
    fn create_request(&self, request: &RenderRequest) -> Result<(String, Value), EngineError> {
        let input = input(&self.fields, self.audio, self.rules, request)?;
        Ok(match &self.target {
            Target::Official { owner, name } => (
                format!("/models/{owner}/{name}/predictions"),
                json!({ "input": input }),
            ),
            Target::Version(version) => (
                "/predictions".to_owned(),
                json!({ "version": version, "input": input }),
            ),
        })
    }

    fn prediction_url(&self, id: &str, tail: &str) -> Result<String, EngineError> {
        Ok(self
            .api
            .url(&format!("/predictions/{}{tail}", path_segment(id)?)))
    }
}

/// The model's `input` for a render.
fn input(
    fields: &BTreeMap<&'static str, String>,
    audio: bool,
    rules: Rules,
    request: &RenderRequest,
) -> Result<Map<String, Value>, EngineError> {
    let mut input = Map::new();
    let mut put = |thing: &str, value: Value| -> Result<(), EngineError> {
        match fields.get(thing) {
            Some(field) => {
                input.insert(field.clone(), value);
                Ok(())
            }
            None => Err(EngineError::Rejected(format!(
                "the model takes no {}",
                thing.replace('_', " ")
            ))),
        }
    };
    put("prompt", json!(request.prompt))?;
    let inputs = &request.inputs;
    if let Some(url) = &inputs.first_frame_url {
        put("first_frame", json!(url))?;
    }
    if let Some(url) = &inputs.last_frame_url {
        put("last_frame", json!(url))?;
    }
    if !inputs.reference_image_urls.is_empty() {
        put("reference_images", json!(inputs.reference_image_urls))?;
    }
    if !inputs.reference_video_urls.is_empty() || !inputs.reference_audio_urls.is_empty() {
        return Err(EngineError::Rejected(
            "the model takes no reference videos or audio".into(),
        ));
    }
    // A remix, an edit or an extension done by the model: the source's signed URL in its
    // video field.
    match &inputs.source {
        Some(source) => put("video", json!(source.video_url)).map_err(|_| {
            EngineError::Rejected(format!(
                "the model takes no source video for a {}",
                source.operation
            ))
        })?,
        None if rules.needs_source => {
            return Err(EngineError::Rejected(
                "the model renders only from a source video".into(),
            ))
        }
        None => {}
    }
    let (mut seconds, mut ratio) = (request.seconds, ratio_label(request.width, request.height));
    if let Some(shape) = rules
        .reference_shape
        .filter(|_| !inputs.reference_image_urls.is_empty())
    {
        (seconds, ratio) = shape;
    }
    // The render's parameters go only where the model has a field for them.
    let optional = [
        ("duration", json!(seconds)),
        ("aspect_ratio", json!(ratio)),
        (
            "resolution",
            json!(format!("{}p", request.width.min(request.height))),
        ),
        ("audio", json!(audio)),
    ];
    for (thing, value) in optional {
        if fields.contains_key(thing) {
            put(thing, value)?;
        }
    }
    Ok(input)
}

/// The aspect-ratio string nearest a frame's shape.
fn ratio_label(width: u32, height: u32) -> &'static str {
    const RATIOS: &[(&str, f64)] = &[
        ("16:9", 16.0 / 9.0),
        ("9:16", 9.0 / 16.0),
        ("1:1", 1.0),
        ("4:3", 4.0 / 3.0),
        ("3:4", 3.0 / 4.0),
        ("21:9", 21.0 / 9.0),
    ];
    let shape = (f64::from(width.max(1)) / f64::from(height.max(1))).ln();
    RATIOS
        .iter()
        .min_by(|a, b| {
            (a.1.ln() - shape)
                .abs()
                .total_cmp(&(b.1.ln() - shape).abs())
        })
        .map_or("16:9", |r| r.0)
}

/// Whether a prediction's failure text (or a refused create's) says the provider refused the
/// content: Replicate's `E005` ("The input or output was flagged as sensitive"), a model's
/// own safety filter, or MiniMax's sensitive-content codes passed through.
fn is_refusal(text: &str) -> bool {
    let text = text.to_ascii_lowercase();
    [
        "(e005)",
        "flagged as sensitive",
        "new_sensitive",
        "sensitive content",
        "nsfw",
        "content policy",
        "content moderation",
        "safety filter",
        "safety system",
        "safety check",
    ]
    .iter()
    .any(|m| text.contains(m))
}

/// The last percentage a prediction's logs print (a progress bar), below 100.
fn log_progress(logs: &str) -> Option<u8> {
    let tail = &logs[logs.len().saturating_sub(4096)..];
    let bytes = tail.as_bytes();
    let mut last = None;
    for (i, &b) in bytes.iter().enumerate() {
        if b != b'%' {
            continue;
        }
        let start = bytes[..i]
            .iter()
            .rev()
            .take_while(|c| c.is_ascii_digit())
            .count();
        if (1..=3).contains(&start) {
            if let Ok(n) = tail[i - start..i].parse::<u16>() {
                if n <= 100 {
                    last = Some(n.min(99) as u8);
                }
            }
        }
    }
    last
}

/// The URL of the video in a prediction's `output`: a URL, or the first URL of a list.
fn output_url(output: &Value) -> Option<String> {
    match output {
        Value::String(url) => Some(url.clone()),
        Value::Array(items) => items.iter().find_map(|v| v.as_str().map(str::to_owned)),
        _ => None,
    }
}

/// Unix seconds of an RFC 3339 UTC time as Replicate writes it (`2026-11-26T10:00:00.123Z`).
fn unix_time(text: &str) -> Option<i64> {
    let (date, time) = text.get(..19)?.split_once('T')?;
    let mut d = date.split('-').map(|p| p.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let mut t = time.split(':').map(|p| p.parse::<i64>().ok());
    let (h, min, s) = (t.next()??, t.next()??, t.next()??);
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + h * 3600 + min * 60 + s)
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// A prediction as a [`Render`].
fn render(prediction: &Value) -> Result<Render, EngineError> {
    let id = path_segment(prediction["id"].as_str().unwrap_or_default())?.to_owned();
    let created_at = prediction["created_at"]
        .as_str()
        .and_then(unix_time)
        .unwrap_or_else(now);
    let failed = |code: &str, message: String| Render {
        id: id.clone(),
        status: RenderStatus::Failed,
        progress: 0,
        error: Some(RenderError {
            code: code.to_owned(),
            message,
        }),
        result_url: None,
        created_at,
    };
    let running = |status, progress| Render {
        id: id.clone(),
        status,
        progress,
        error: None,
        result_url: None,
        created_at,
    };
    let logs = prediction["logs"].as_str().unwrap_or_default();
    Ok(match prediction["status"].as_str().unwrap_or_default() {
        "starting" => running(RenderStatus::Queued, 0),
        "processing" => running(RenderStatus::Rendering, log_progress(logs).unwrap_or(0)),
        "succeeded" => match output_url(&prediction["output"]) {
            Some(url) => Render {
                result_url: Some(url),
                ..running(RenderStatus::Succeeded, 100)
            },
            None => failed(
                codes::ENGINE_FAILURE,
                "the prediction succeeded without a video in its output".into(),
            ),
        },
        "failed" => {
            let error = match &prediction["error"] {
                Value::String(s) => s.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            };
            if is_refusal(&error) {
                failed(
                    CONTENT_REFUSED,
                    "the provider refused to render this content".into(),
                )
            } else {
                let message: String = error.chars().take(300).collect();
                failed(
                    codes::ENGINE_FAILURE,
                    if message.is_empty() {
                        "the prediction failed".into()
                    } else {
                        message
                    },
                )
            }
        }
        "canceled" => running(RenderStatus::Canceled, 0),
        "aborted" => failed(
            codes::ENGINE_FAILURE,
            "the prediction was aborted before it started".into(),
        ),
        _ => running(RenderStatus::Unknown, 0),
    })
}

#[async_trait]
impl VideoEngine for ReplicateEngine {
    async fn submit(&self, request: &RenderRequest) -> Result<Render, EngineError> {
        let (path, body) = self.create_request(request)?;
        let url = self.api.url(&path);
        let prediction = self
            .api
            .call(reqwest::Method::POST, &url, Some(&body), None)
            .await
            .map_err(|e| match e {
                EngineError::Rejected(m) if is_refusal(&m) => EngineError::ContentRefused(
                    "the provider refused to render this content".into(),
                ),
                other => other,
            })?;
        render(&prediction)
    }

    async fn status(&self, render_id: &str) -> Result<Render, EngineError> {
        let url = self.prediction_url(render_id, "")?;
        let prediction = self
            .api
            .call(reqwest::Method::GET, &url, None, Some(render_id))
            .await?;
        render(&prediction)
    }

    /// `POST /predictions/{id}/cancel`; a prediction Replicate no longer knows counts as
    /// canceled.
    async fn cancel(&self, render_id: &str) -> Result<(), EngineError> {
        let url = self.prediction_url(render_id, "/cancel")?;
        self.api
            .cancel_call(reqwest::Method::POST, &url, render_id)
            .await
    }

    async fn fetch_result(&self, render: &Render) -> Result<ByteStream, EngineError> {
        let url =
            match &render.result_url {
                Some(url) => url.clone(),
                None => self.status(&render.id).await?.result_url.ok_or_else(|| {
                    EngineError::Rejected("the prediction has no output yet".into())
                })?,
            };
        self.api.download(&url, MAX_ENGINE_OUTPUT_BYTES).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reelgate_engine::protocol::RenderInputs;

    fn config(model_id: Option<&str>, fields: &[(&str, &str)]) -> EngineConfig {
        let mut toml = String::from("id = \"rep\"\nkind = \"replicate\"\n");
        if let Some(m) = model_id {
            toml.push_str(&format!("model_id = \"{m}\"\n"));
        }
        if !fields.is_empty() {
            toml.push_str("[input_fields]\n");
            for (k, v) in fields {
                toml.push_str(&format!("{k} = \"{v}\"\n"));
            }
        }
        toml::from_str(&toml).expect("engine config")
    }

    fn engine(model_id: Option<&str>, fields: &[(&str, &str)]) -> ReplicateEngine {
        ReplicateEngine::from_config(
            &config(model_id, fields),
            Some("k".into()),
            Arc::new(crate::adapters::guarded_fetch::GuardedFetcher::default()),
        )
        .expect("engine")
    }

    fn request(seconds: u32, width: u32, height: u32, inputs: RenderInputs) -> RenderRequest {
        RenderRequest {
            model: "m".into(),
            prompt: "a paper boat".into(),
            seconds,
            aspect_ratio: "16:9".into(),
            width,
            height,
            inputs,
            callback_url: None,
            client_reference: Some("video_1".into()),
        }
    }

    #[test]
    fn hailuo_gets_its_own_fields_and_an_explicit_768p() {
        let e = engine(None, &[]);
        let frame = RenderInputs {
            first_frame_url: Some("https://blobs.example/f.png?sig=1".into()),
            last_frame_url: Some("https://blobs.example/l.png?sig=2".into()),
            ..Default::default()
        };
        let (path, body) = e
            .create_request(&request(6, 1366, 768, frame))
            .expect("body");
        assert_eq!(path, "/models/minimax/hailuo-02/predictions");
        assert_eq!(
            body,
            json!({"input": {
                "prompt": "a paper boat",
                "first_frame_image": "https://blobs.example/f.png?sig=1",
                "last_frame_image": "https://blobs.example/l.png?sig=2",
                "duration": 6,
                "resolution": "768p",
            }})
        );
        // hailuo-02 takes no reference images: refused, not silently dropped.
        let refs = RenderInputs {
            reference_image_urls: vec!["https://blobs.example/r.png".into()],
            ..Default::default()
        };
        assert!(matches!(
            e.create_request(&request(6, 1366, 768, refs)),
            Err(EngineError::Rejected(m)) if m.contains("reference images")
        ));
        assert_eq!(
            model_inputs(&config(None, &[])).expect("inputs"),
            vec!["first_frame", "last_frame"]
        );
    }

    #[test]
    fn veo_gets_ratio_resolution_audio_and_references() {
        let e = engine(Some("google/veo-3.1"), &[]);
        let frames = RenderInputs {
            first_frame_url: Some("https://b/f.png".into()),
            last_frame_url: Some("https://b/l.png".into()),
            ..Default::default()
        };
        let (path, body) = e
            .create_request(&request(4, 720, 1280, frames))
            .expect("body");
        assert_eq!(path, "/models/google/veo-3.1/predictions");
        assert_eq!(
            body["input"],
            json!({
                "prompt": "a paper boat",
                "image": "https://b/f.png",
                "last_frame": "https://b/l.png",
                "duration": 4,
                "aspect_ratio": "9:16",
                "resolution": "720p",
                // Veo 3.1 renders audio (the model table)
                "generate_audio": true,
            })
        );
        // Reference images only at 8 s and 16:9, whatever the job's shape.
        let refs = RenderInputs {
            reference_image_urls: vec!["https://b/1.png".into(), "https://b/2.png".into()],
            ..Default::default()
        };
        let (_, body) = e
            .create_request(&request(4, 1080, 1920, refs))
            .expect("body");
        assert_eq!(
            (
                &body["input"]["duration"],
                &body["input"]["aspect_ratio"],
                &body["input"]["resolution"]
            ),
            (&json!(8), &json!("16:9"), &json!("1080p"))
        );
        assert_eq!(
            body["input"]["reference_images"],
            json!(["https://b/1.png", "https://b/2.png"])
        );
        // Veo 3.1 takes no source video.
        let source = RenderInputs {
            source: Some(reelgate_engine::protocol::RenderSource {
                operation: "extension".into(),
                video_url: "https://b/s.mp4".into(),
                render_id: None,
            }),
            ..Default::default()
        };
        assert!(matches!(
            e.create_request(&request(8, 1280, 720, source)),
            Err(EngineError::Rejected(m)) if m.contains("source video")
        ));
    }

    #[test]
    fn modify_video_takes_the_source_in_its_video_field_only() {
        let e = engine(Some("luma/modify-video"), &[]);
        let source = RenderInputs {
            source: Some(reelgate_engine::protocol::RenderSource {
                operation: "edit".into(),
                video_url: "https://blobs.example/source.mp4?sig=1".into(),
                render_id: None,
            }),
            ..Default::default()
        };
        let (path, body) = e
            .create_request(&request(6, 1366, 768, source))
            .expect("body");
        assert_eq!(path, "/models/luma/modify-video/predictions");
        assert_eq!(
            body,
            json!({"input": {"prompt": "a paper boat", "video": "https://blobs.example/source.mp4?sig=1"}})
        );
        // No generation of its own: refused before a prediction starts.
        assert!(matches!(
            e.create_request(&request(6, 1366, 768, RenderInputs::default())),
            Err(EngineError::Rejected(m)) if m.contains("source video")
        ));
        // Another model takes its source in the field the catalog names.
        let e = engine(
            Some("someone/restyle"),
            &[("prompt", "prompt"), ("video", "input_video")],
        );
        let source = RenderInputs {
            source: Some(reelgate_engine::protocol::RenderSource {
                operation: "remix".into(),
                video_url: "https://b/s.mp4".into(),
                render_id: None,
            }),
            ..Default::default()
        };
        let (_, body) = e
            .create_request(&request(6, 1366, 768, source))
            .expect("body");
        assert_eq!(
            body["input"],
            json!({"prompt": "a paper boat", "input_video": "https://b/s.mp4"})
        );
    }

    #[test]
    fn a_pinned_version_and_overridden_fields() {
        let e = engine(
            Some("someone/video-model:5c7d5dc6dd8bf75c1acaa8565735e7986bc5b66206b55cca93cb72c9bf15ccaa"),
            &[("prompt", "text"), ("first_frame", "init_image"), ("duration", "num_seconds")],
        );
        let frame = RenderInputs {
            first_frame_url: Some("https://b/f.png".into()),
            ..Default::default()
        };
        let (path, body) = e
            .create_request(&request(5, 1280, 720, frame))
            .expect("body");
        assert_eq!(path, "/predictions");
        assert_eq!(
            body,
            json!({
                "version": "5c7d5dc6dd8bf75c1acaa8565735e7986bc5b66206b55cca93cb72c9bf15ccaa",
                "input": {"text": "a paper boat", "init_image": "https://b/f.png", "num_seconds": 5},
            })
        );
        // An empty field name stops a thing from being sent.
        let e = engine(None, &[("resolution", "")]);
        let (_, body) = e
            .create_request(&request(10, 1366, 768, RenderInputs::default()))
            .expect("body");
        assert_eq!(
            body["input"],
            json!({"prompt": "a paper boat", "duration": 10})
        );
    }

    #[test]
    fn unusable_entries_stop_start_up() {
        let fetcher = || -> Arc<dyn Fetcher> {
            Arc::new(crate::adapters::guarded_fetch::GuardedFetcher::default())
        };
        for (model, fields) in [
            (Some("no-slash"), vec![]),
            (Some("a/b/c"), vec![]),
            (Some("a/b:not-hex!"), vec![]),
            // an undocumented model must name its prompt field
            (Some("someone/unknown"), vec![]),
            (None, vec![("negative", "x")]),
            (None, vec![("prompt", "bad field")]),
        ] {
            let c = config(model, &fields);
            assert!(
                ReplicateEngine::from_config(&c, None, fetcher()).is_err(),
                "{model:?} {fields:?}"
            );
        }
    }

    #[test]
    fn ratios_are_the_nearest_label() {
        assert_eq!(ratio_label(1366, 768), "16:9");
        assert_eq!(ratio_label(768, 1366), "9:16");
        assert_eq!(ratio_label(720, 720), "1:1");
        assert_eq!(ratio_label(1024, 768), "4:3");
        assert_eq!(ratio_label(1792, 768), "21:9");
    }

    #[test]
    fn statuses_map_to_renders() {
        let p = |status: &str, extra: Value| {
            let mut v = json!({"id": "gm3qorzdhgbfurvjtvhg6dckhu", "status": status,
                               "created_at": "2023-09-08T16:19:34.765994Z", "logs": ""});
            if let (Value::Object(o), Value::Object(e)) = (&mut v, extra) {
                o.extend(e);
            }
            render(&v).expect("render")
        };
        let r = p("starting", json!({}));
        assert_eq!((r.status, r.progress), (RenderStatus::Queued, 0));
        assert_eq!(r.created_at, 1_694_189_974);
        let r = p(
            "processing",
            json!({"logs": "Generating\n 10%|#\n 45%|####"}),
        );
        assert_eq!((r.status, r.progress), (RenderStatus::Rendering, 45));
        let r = p(
            "succeeded",
            json!({"output": "https://replicate.delivery/xezq/a/out.mp4"}),
        );
        assert_eq!(r.status, RenderStatus::Succeeded);
        assert_eq!(r.progress, 100);
        assert_eq!(
            r.result_url.as_deref(),
            Some("https://replicate.delivery/xezq/a/out.mp4")
        );
        let r = p(
            "succeeded",
            json!({"output": ["https://replicate.delivery/a.mp4"]}),
        );
        assert_eq!(
            r.result_url.as_deref(),
            Some("https://replicate.delivery/a.mp4")
        );
        let r = p("succeeded", json!({"output": null}));
        assert_eq!(r.status, RenderStatus::Failed);
        let r = p(
            "failed",
            json!({"error": "The input or output was flagged as sensitive. Please try again with different inputs. (E005)"}),
        );
        assert_eq!(r.status, RenderStatus::Failed);
        let error = r.error.expect("error");
        assert_eq!(error.code, CONTENT_REFUSED);
        assert!(!error.message.to_lowercase().contains("replicate"));
        let r = p("failed", json!({"error": "CUDA out of memory (E1001)"}));
        assert_eq!(r.error.expect("error").code, codes::ENGINE_FAILURE);
        assert_eq!(p("canceled", json!({})).status, RenderStatus::Canceled);
        let r = p("aborted", json!({}));
        assert_eq!(r.status, RenderStatus::Failed);
        assert_eq!(p("something-new", json!({})).status, RenderStatus::Unknown);
        // An id that could reshape a path is refused.
        assert!(render(&json!({"id": "../x", "status": "starting"})).is_err());
    }

    #[test]
    fn progress_comes_from_the_logs_only() {
        assert_eq!(log_progress(""), None);
        assert_eq!(log_progress("step 3/10"), None);
        assert_eq!(log_progress("a 100%|##########"), Some(99));
        assert_eq!(log_progress("7% then 1234% then 60%"), Some(60));
        assert_eq!(unix_time("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(unix_time("nonsense"), None);
    }
}
