//! `POST /v1/videos/extensions`: a new job whose output is a source video followed by a new
//! segment of `seconds`. It goes through the create use case (idempotency, rate limits, the
//! rules, the quote of the segment's seconds, admission, moderation of the prompt and the
//! source's frames, translation, the workflow, billing at completion); the engine continues
//! the source (natively, or from its last frame) and the workflow's stitch step joins the
//! segment after the job's own copy of the source.

use crate::domain::accounts::Caller;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::params::{sent, sent_object, FaultKind, RequestBody, ShapeFault};
use crate::domain::videos::create::CreateAnswer;
use crate::domain::videos::create_request::{
    characters_refusal, check_characters, seconds_expected, seconds_in_range, seconds_schema,
};
use crate::domain::videos::source_request::unknown_parameter;
pub use crate::domain::videos::source_request::VideoReference;
use crate::domain::videos::source_request::{self, SentModel, VideoSource};
use crate::domain::videos::SourceOperation;
use crate::domain::Context;
use crate::ports::workflow::Workflow;
use serde::Deserialize;
use serde_json::json;

/// The longest video an extension makes (the source and the segment together): what the
/// conform stage joins and checks.
pub const MAX_EXTENDED_SECONDS: i64 = 60;

/// `POST /v1/videos/extensions` as OpenAI's SDK sends it: a form with `prompt`, `seconds` (a
/// string) and `video[id]` or a `video` file, or the same as JSON (`"video": {"id": …}`). An
/// extension keeps the source's aspect ratio: a field that would change it is refused by name.
/// `seconds` is the new segment's length, within the model's range; the source and the segment
/// together last at most 60 s.
#[derive(Debug, Clone, PartialEq, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"prompt": "the boat drifts under a bridge", "seconds": "4", "video": {"id": "video_01h…"}}))]
pub struct VideoExtensionRequest {
    #[schema(min_length = 1, max_length = 7000)]
    pub prompt: String,
    // (Its schema holds no description: `seconds` is described with the request.)
    #[schema(schema_with = seconds_schema)]
    #[serde(deserialize_with = "seconds_in_range")]
    pub seconds: u32,
    /// A completed video of your organization, or (in a form) an H.264 MP4 file of at most
    /// 32 MiB and 1920x1080.
    #[schema(value_type = VideoReference, required = true)]
    #[serde(default, deserialize_with = "sent_object")]
    pub video: Option<VideoReference>,
    /// The video model to render with; only with a source file (a video by id keeps its own).
    #[schema(value_type = Option<String>)]
    #[serde(default, deserialize_with = "sent")]
    pub model: Option<SentModel>,
    /// Characters whose frames the segment takes as reference images.
    #[schema(max_items = 2)]
    #[serde(default)]
    pub characters: Option<Vec<String>>,
}

impl RequestBody for VideoExtensionRequest {
    fn expected(param: &str, _path: &str) -> Option<String> {
        match param {
            "prompt" => Some("prompt must be a string.".to_owned()),
            "seconds" => Some(seconds_expected()),
            _ => None,
        }
    }

    fn refusal(fault: &ShapeFault) -> Option<ApiError> {
        const TAKES: &str = "An extension keeps the source's aspect \
                         ratio; it takes prompt, seconds, video, model (with a file) and \
                         characters.";
        if let Some(refused) = unknown_parameter(fault, TAKES) {
            return Some(refused);
        }
        match fault.kind {
            FaultKind::Missing if fault.path == fault.field => {
                Some(crate::domain::params::required(&fault.field))
            }
            _ => source_request::refusal(fault).or_else(|| characters_refusal(fault)),
        }
    }

    /// The prompt's and the segment's seconds' rules against the model are the create's,
    /// checked when the segment's create is read; the source's rules that need the form's file
    /// part are [`source_request::source`]'s.
    fn check(self) -> ApiResult<Self> {
        source_request::check(self.video.as_ref(), self.model.as_ref())?;
        if let Some(characters) = &self.characters {
            check_characters(characters)?;
        }
        Ok(self)
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
    request: VideoExtensionRequest,
    file: Option<crate::domain::videos::source_upload::SourceFile>,
) -> ApiResult<CreateAnswer> {
    let (upload, check) = crate::domain::videos::source_upload::split(file);
    let (video, model) = source_request::source(request.video, request.model, upload)?;
    let source_id = match &video {
        VideoSource::Id(reference) => reference.id.clone(),
        VideoSource::Upload(_) => "sent as video".to_owned(),
    };
    let source = source_request::resolve(
        cx,
        caller,
        video,
        check,
        model,
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
    use serde_json::Value;

    #[test]
    fn the_sdk_form_and_json_read_alike_and_anything_else_is_named() {
        let read = |body: Value| crate::domain::params::read_from::<VideoExtensionRequest, _>(body);
        // `video[id]` in a form arrives as {"video": {"id": …}} (api::extract).
        let form = json!({"prompt": "on", "seconds": "4", "video": {"id": "video_1"}});
        let parsed = read(form).expect("form");
        assert_eq!(
            parsed.video,
            Some(VideoReference {
                id: "video_1".into()
            })
        );
        assert_eq!(parsed.seconds, 4);
        for (body, param) in [
            (json!({"seconds": "4", "video": {"id": "v"}}), "prompt"),
            (json!({"prompt": "x", "video": {"id": "v"}}), "seconds"),
            (
                json!({"prompt": "x", "seconds": 16, "video": {"id": "v"}}),
                "seconds",
            ),
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
            (
                json!({"prompt": "x", "seconds": 4, "video": {"id": "v"}, "characters": [2]}),
                "characters[0]",
            ),
        ] {
            let e = read(body.clone()).expect_err("refused");
            assert_eq!(e.param.as_deref(), Some(param), "{body}");
        }
    }
}
