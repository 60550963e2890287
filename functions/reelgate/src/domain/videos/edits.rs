//! `POST /v1/videos/edits`: a new job that re-renders a source video guided by the prompt, at
//! the source's seconds and aspect ratio. It goes through the create use case (idempotency,
//! rate limits, the rules, the quote, admission, moderation of the prompt and the source's
//! frames, translation, the workflow, billing at completion). An edit keeps the source's
//! picture, which no still frame stands in for: it needs an engine that takes the source video
//! itself, and elsewhere is a 400 naming `video` with nothing reserved.

use crate::domain::accounts::Caller;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::params::{sent, sent_object, FaultKind, RequestBody, ShapeFault};
use crate::domain::videos::create::CreateAnswer;
use crate::domain::videos::source_request::unknown_parameter;
use crate::domain::videos::source_request::{self, SentModel, VideoReference};
use crate::domain::videos::SourceOperation;
use crate::domain::Context;
use crate::ports::workflow::Workflow;
use serde::Deserialize;
use serde_json::json;

/// `POST /v1/videos/edits` as OpenAI's SDK sends it: a form with `prompt` and `video[id]` or a
/// `video` file, or the same as JSON (`"video": {"id": …}`). An edit keeps the source's
/// seconds and aspect ratio: a field that would change them is refused by name.
#[derive(Debug, Clone, PartialEq, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"prompt": "make it snow", "video": {"id": "video_01h…"}}))]
pub struct VideoEditRequest {
    #[schema(min_length = 1, max_length = 7000)]
    pub prompt: String,
    /// A completed video of your organization, or (in a form) an H.264 MP4 file of at most
    /// 32 MiB and 1920x1080, no longer than the model renders.
    #[schema(value_type = VideoReference, required = true)]
    #[serde(default, deserialize_with = "sent_object")]
    pub video: Option<VideoReference>,
    /// The video model to render with; only with a source file (a video by id keeps its own).
    #[schema(value_type = Option<String>)]
    #[serde(default, deserialize_with = "sent")]
    pub model: Option<SentModel>,
}

impl RequestBody for VideoEditRequest {
    fn expected(param: &str, _path: &str) -> Option<String> {
        (param == "prompt").then(|| "prompt must be a string.".to_owned())
    }

    fn refusal(fault: &ShapeFault) -> Option<ApiError> {
        const TAKES: &str = "An edit keeps the source's seconds and \
                         aspect ratio; it takes prompt, video and model (with a file).";
        if let Some(refused) = unknown_parameter(fault, TAKES) {
            return Some(refused);
        }
        match fault.kind {
            FaultKind::Missing if fault.path == fault.field => {
                Some(crate::domain::params::required(&fault.field))
            }
            _ => source_request::refusal(fault),
        }
    }

    /// The prompt's own rules are the create's, checked when the edit's create is read; the
    /// source's rules that need the form's file part are [`source_request::source`]'s.
    fn check(self) -> ApiResult<Self> {
        source_request::check(self.video.as_ref(), self.model.as_ref())?;
        Ok(self)
    }
}

/// The edit use case: the source must be a completed video of the caller's organization
/// (another organization's is not found, a running one is a 400 naming `video`) or a file that
/// passes the source checks, on a model with video-to-video, and last as long as the model
/// renders. Nothing is reserved and no job is made when any check refuses.
pub async fn edit(
    cx: Context<'_>,
    workflow: Option<&dyn Workflow>,
    caller: &Caller,
    idempotency_key: Option<&[u8]>,
    request: VideoEditRequest,
    file: Option<crate::domain::videos::source_upload::SourceFile>,
) -> ApiResult<CreateAnswer> {
    let (upload, check) = crate::domain::videos::source_upload::split(file);
    let (video, model) = source_request::source(request.video, request.model, upload)?;
    let source = source_request::resolve(
        cx,
        caller,
        video,
        check,
        model,
        SourceOperation::Edit,
        |capabilities| {
            let renders = capabilities
                .seconds
                .map_or(0.0, |(_, max)| f64::from(max) + 0.5);
            capabilities
                .native
                .operations
                .max_video_to_video_seconds
                .map_or(renders, |max| renders.min(max))
        },
    )
    .await?;
    let capabilities = cx
        .catalog
        .video_model(&source.model)
        .map(|m| cx.catalog.capabilities(m));
    if let Some(max) = capabilities
        .as_ref()
        .and_then(|c| c.native.operations.max_video_to_video_seconds)
        .filter(|max| source.exact_seconds > max + 1e-9)
    {
        return Err(ApiError::invalid(
            "video",
            format!(
                "The source lasts {:.1} s; the video model '{}' edits sources of at most {max} s.",
                source.exact_seconds, source.model
            ),
        ));
    }
    let too_large = match (&source.origin, capabilities.as_ref()) {
        (crate::domain::videos::create::SourceOrigin::Upload(bytes), Some(c)) => c
            .native
            .operations
            .max_video_to_video_bytes
            .filter(|max| bytes.len() as u64 > *max),
        _ => None,
    };
    if let Some(max) = too_large {
        return Err(ApiError::invalid(
            "video",
            format!(
                "The source file is over {} MB, the most the video model '{}' edits.",
                max / 1_000_000,
                source.model
            ),
        ));
    }
    let range = capabilities.and_then(|c| c.seconds);
    if let Some((min, max)) = range {
        if !(i64::from(min)..=i64::from(max)).contains(&source.seconds) {
            return Err(ApiError::invalid(
                "video",
                format!(
                    "The source lasts {} s; the video model '{}' renders {min} to {max} s, and an \
                     edit keeps the source's length.",
                    source.seconds, source.model
                ),
            ));
        }
    }
    let create_body = json!({
        "model": source.model,
        "prompt": request.prompt,
        "seconds": source.seconds,
        "aspect_ratio": source.aspect_ratio,
    });
    let create = crate::domain::params::read_from(create_body)?;
    let from = source.source(SourceOperation::Edit);
    crate::domain::videos::create::create_from(
        cx,
        workflow,
        caller,
        idempotency_key,
        &create,
        Some(&from),
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn an_edit_takes_a_prompt_and_a_source_and_refuses_what_it_keeps() {
        let read = |body: Value| crate::domain::params::read_from::<VideoEditRequest, _>(body);
        let parsed =
            read(json!({"prompt": "make it snow", "video": {"id": "video_1"}})).expect("parsed");
        assert_eq!(parsed.prompt, "make it snow");
        for (body, param) in [
            (json!({"video": {"id": "v"}}), "prompt"),
            (json!({"prompt": 1, "video": {"id": "v"}}), "prompt"),
            (json!({"prompt": "x", "video": ["v"]}), "video"),
            (json!({"prompt": "x", "video": {}}), "video.id"),
            (
                json!({"prompt": "x", "video": {"id": "v"}, "seconds": 4}),
                "seconds",
            ),
            (
                json!({"prompt": "x", "video": {"id": "v"}, "aspect_ratio": "1:1"}),
                "aspect_ratio",
            ),
            (
                json!({"prompt": "x", "video": {"id": "v"}, "model": null}),
                "model",
            ),
        ] {
            let e = read(body.clone()).expect_err("refused");
            assert_eq!(e.param.as_deref(), Some(param), "{body}");
        }
    }
}
