//! `POST /v1/videos/extensions`: a new job whose output is a source video followed by a new
//! segment of `seconds`. It goes through the create use case (idempotency, rate limits, the
//! rules, the quote of the segment's seconds, admission, moderation of the prompt and the
//! source's frames, translation, the workflow, billing at completion); the engine continues
//! the source (natively, or from its last frame) and the workflow's stitch step joins the
//! segment after the job's own copy of the source.

use crate::domain::accounts::Caller;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::videos::create::CreateAnswer;
pub use crate::domain::videos::source_request::VideoReference;
use crate::domain::videos::source_request::{self, VideoSource};
use crate::domain::videos::SourceOperation;
use crate::domain::Context;
use crate::ports::workflow::Workflow;
use bytes::Bytes;
use serde_json::{json, Value};

/// The longest video an extension makes (the source and the segment together): what the
/// conform stage joins and checks.
pub const MAX_EXTENDED_SECONDS: i64 = 60;

/// `POST /v1/videos/extensions` as OpenAI's SDK sends it: a form with `prompt`, `seconds` (a
/// string) and `video[id]` or a `video` file, or the same as JSON (`"video": {"id": …}`).
#[derive(Debug, Clone, PartialEq, utoipa::ToSchema)]
#[schema(example = json!({"prompt": "the boat drifts under a bridge", "seconds": "4", "video": {"id": "video_01h…"}}))]
pub struct VideoExtensionRequest {
    #[schema(min_length = 1, max_length = 7000)]
    pub prompt: String,
    /// The new segment's length, within the model's range (a string is accepted, as the SDK
    /// sends it); the source and the segment together last at most 60 s.
    #[schema(value_type = String, example = "4")]
    pub seconds: Value,
    /// A completed video of your organization, or (in a form) an H.264 MP4 file of at most
    /// 32 MiB and 1920x1080.
    #[schema(value_type = VideoReference)]
    pub video: VideoSource,
    /// The video model to render with; only with a source file (a video by id keeps its own).
    pub model: Option<String>,
    /// Characters whose frames the segment takes as reference images.
    #[schema(max_items = 2)]
    pub characters: Option<Vec<String>>,
}

impl VideoExtensionRequest {
    /// Reads the body, with the form's `video` file part when it had one.
    pub fn parse(body: &Value, upload: Option<Bytes>) -> ApiResult<VideoExtensionRequest> {
        let obj = crate::domain::params::Params::of(body)?.object();
        const KNOWN: &[&str] = &["prompt", "seconds", "video", "model", "characters"];
        if let Some(unknown) = obj.keys().find(|k| !KNOWN.contains(&k.as_str())) {
            return Err(ApiError::invalid(
                unknown,
                format!(
                    "Unknown parameter: {unknown}. An extension keeps the source's aspect \
                     ratio; it takes prompt, seconds, video, model (with a file) and characters."
                ),
            ));
        }
        let prompt = match obj.get("prompt") {
            Some(Value::String(p)) => p.clone(),
            Some(_) => return Err(crate::domain::params::wrong_type("prompt", "a string")),
            None => return Err(crate::domain::params::required("prompt")),
        };
        let seconds = obj
            .get("seconds")
            .cloned()
            .ok_or_else(|| crate::domain::params::required("seconds"))?;
        let (video, model) = source_request::parse(obj, upload)?;
        Ok(VideoExtensionRequest {
            prompt,
            seconds,
            video,
            model,
            characters: obj
                .get("characters")
                .filter(|v| !v.is_null())
                .map(crate::domain::videos::create_request::read_characters)
                .transpose()?,
        })
    }
}

/// The extension use case: the source must be a completed video of the caller's organization
/// (another organization's is not found, a running one is a 400 naming `video`) or a file that
/// passes the source checks, on a model that extends; `seconds` must be in the model's range
/// and the total within [`MAX_EXTENDED_SECONDS`]. Nothing is reserved and no job is made when
/// any check refuses.
pub async fn extend(
    cx: Context<'_>,
    workflow: Option<&dyn Workflow>,
    caller: &Caller,
    idempotency_key: Option<&[u8]>,
    body: &Value,
    file: Option<crate::domain::videos::source_upload::SourceFile>,
) -> ApiResult<CreateAnswer> {
    let (upload, check) = crate::domain::videos::source_upload::split(file);
    let request = VideoExtensionRequest::parse(body, upload)?;
    let source_id = match &request.video {
        VideoSource::Id(reference) => reference.id.clone(),
        VideoSource::Upload(_) => "sent as video".to_owned(),
    };
    let source = source_request::resolve(
        cx,
        caller,
        request.video,
        check,
        request.model,
        SourceOperation::Extension,
        |_| (MAX_EXTENDED_SECONDS - 1) as f64,
    )
    .await?;
    let mut create_body = json!({
        "model": source.model,
        "prompt": request.prompt,
        "seconds": request.seconds,
        "aspect_ratio": source.aspect_ratio,
    });
    if let Some(characters) = &request.characters {
        create_body["characters"] = json!(characters);
    }
    // The segment's own rules (its seconds against the model's range) come first, then the
    // whole: both before anything is reserved.
    let segment: crate::domain::videos::create::VideoCreateRequest =
        crate::domain::params::read_from(create_body)?;
    let base_seconds = source.seconds;
    let total = base_seconds + i64::from(segment.seconds);
    if total > MAX_EXTENDED_SECONDS {
        return Err(ApiError::invalid(
            "seconds",
            format!(
                "The video ({source_id}) lasts {base_seconds} s; with {} s more it would last \
                 {total} s, and an extended video lasts at most {MAX_EXTENDED_SECONDS} s.",
                segment.seconds
            ),
        ));
    }
    let from = source.source(SourceOperation::Extension);
    crate::domain::videos::create::create_from(
        cx,
        workflow,
        caller,
        idempotency_key,
        &segment,
        Some(&from),
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sdk_form_and_json_read_alike_and_anything_else_is_named() {
        // `video[id]` in a form arrives as {"video": {"id": …}} (api::extract).
        let form = json!({"prompt": "on", "seconds": "4", "video": {"id": "video_1"}});
        let parsed = VideoExtensionRequest::parse(&form, None).expect("form");
        assert_eq!(
            parsed.video,
            VideoSource::Id(VideoReference {
                id: "video_1".into()
            })
        );
        assert_eq!(parsed.seconds, json!("4"));
        for (body, param) in [
            (json!({"seconds": "4", "video": {"id": "v"}}), "prompt"),
            (json!({"prompt": "x", "video": {"id": "v"}}), "seconds"),
            (json!({"prompt": "x", "seconds": 4}), "video"),
            (
                json!({"prompt": "x", "seconds": 4, "video": "video_1"}),
                "video",
            ),
            (
                json!({"prompt": "x", "seconds": 4, "video": {"id": ""}}),
                "video.id",
            ),
            (
                json!({"prompt": "x", "seconds": 4, "video": {"id": "v", "url": "u"}}),
                "video.url",
            ),
            (
                json!({"prompt": "x", "seconds": 4, "video": {"id": "v"}, "model": "m"}),
                "model",
            ),
        ] {
            let e = VideoExtensionRequest::parse(&body, None).expect_err("refused");
            assert_eq!(e.param.as_deref(), Some(param), "{body}");
        }
    }
}
