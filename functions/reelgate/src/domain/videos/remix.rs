//! `POST /v1/videos/{video_id}/remix`: a new job on a completed video's model, seconds, aspect
//! ratio and inputs, with a new prompt. It goes through the create use case (idempotency, rate
//! limits, the rules, the quote, admission, moderation, translation, the workflow, billing at
//! completion), made from the source: the new job keeps its own copy of the source's output,
//! which an engine with video-to-video takes whole, and any other opens its render with.

use crate::domain::accounts::Caller;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::params::{FaultKind, RequestBody, ShapeFault};
use crate::domain::videos::create::{CreateAnswer, Source};
use crate::domain::videos::create_request::{characters_refusal, check_characters};
use crate::domain::videos::source_request::unknown_parameter;
use crate::domain::videos::JobRecord;
use crate::domain::Context;
use crate::ports::workflow::Workflow;
use serde::Deserialize;
use serde_json::{json, Value};

/// `POST /v1/videos/{video_id}/remix` as OpenAI's SDK sends it (`{"prompt"}`): the model,
/// seconds and ratio are the source's, so a field a caller might expect to change them is
/// refused by name, not ignored.
#[derive(Debug, Clone, PartialEq, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"prompt": "the same boat, now at night under neon signs"}))]
pub struct VideoRemixRequest {
    /// The new prompt, under the create rules' limits.
    #[schema(min_length = 1, max_length = 7000)]
    pub prompt: String,
    /// Characters whose frames the remix also takes as reference images.
    #[schema(max_items = 2)]
    #[serde(default)]
    pub characters: Option<Vec<String>>,
}

impl RequestBody for VideoRemixRequest {
    fn expected(param: &str, _path: &str) -> Option<String> {
        (param == "prompt").then(|| "prompt must be a string.".to_owned())
    }

    fn refusal(fault: &ShapeFault) -> Option<ApiError> {
        const TAKES: &str = "A remix keeps the source's model, seconds, \
                         aspect ratio and inputs; it takes prompt and characters.";
        if let Some(refused) = unknown_parameter(fault, TAKES) {
            return Some(refused);
        }
        match fault.kind {
            FaultKind::Missing => Some(crate::domain::params::required(&fault.field)),
            _ => characters_refusal(fault),
        }
    }

    /// The prompt's own rules are the create's, checked when the remix's create is read.
    fn check(self) -> ApiResult<Self> {
        if let Some(characters) = &self.characters {
            check_characters(characters)?;
        }
        Ok(self)
    }
}

/// The remix use case: the source must be a completed video of the caller's organization
/// (another organization's is not found, a running one is a 400), on a model that can remix.
/// Nothing is reserved and no job is made when any check refuses.
pub async fn remix(
    cx: Context<'_>,
    workflow: Option<&dyn Workflow>,
    caller: &Caller,
    idempotency_key: Option<&[u8]>,
    source_id: &str,
    request: &VideoRemixRequest,
) -> ApiResult<CreateAnswer> {
    let source = crate::domain::videos::queries::completed_source(
        cx,
        &caller.org,
        source_id,
        "video_id",
        crate::domain::videos::SourceOperation::Remix,
    )
    .await?;
    let mut create_body = create_request(&source, &request.prompt);
    // The characters the remix names, else the source's own.
    let source_characters = request.characters.is_none();
    let characters = request
        .characters
        .clone()
        .unwrap_or_else(|| source.inputs.characters.clone());
    if !characters.is_empty() {
        create_body["characters"] = json!(characters);
    }
    let from = Source::of_job(&source, crate::domain::videos::SourceOperation::Remix);
    let about_source = |e| about_source_inputs(e, source_id, source_characters);
    let create = crate::domain::params::read_from(create_body).map_err(about_source)?;
    crate::domain::videos::create::create_from(
        cx,
        workflow,
        caller,
        idempotency_key,
        &create,
        Some(&from),
    )
    .await
    .map_err(about_source)
}

/// The create request a remix of `source` is: its model, seconds and aspect ratio, its last
/// frame and references, and the new prompt (its characters are added by the caller). Its first frame is the source's own (taken from
/// the output by the moderate step), so a first frame it was made from is not asked for again.
fn create_request(source: &JobRecord, prompt: &str) -> Value {
    let mut body = json!({
        "model": source.model,
        "prompt": prompt,
        "seconds": source.seconds,
        "aspect_ratio": source.aspect_ratio,
    });
    let inputs = &source.inputs;
    if let Some(last) = &inputs.last_frame {
        body["image_reference"] = json!([{"file_id": last, "role": "last_frame"}]);
    }
    let refs = |ids: &[String]| -> Value { ids.iter().map(|id| json!({"file_id": id})).collect() };
    if !(inputs.reference_images.is_empty() && inputs.reference_videos.is_empty()) {
        let mut references = json!({
            "images": refs(&inputs.reference_images),
            "videos": refs(&inputs.reference_videos),
        });
        if !inputs.reference_audio.is_empty() {
            references["audio"] = refs(&inputs.reference_audio);
        }
        body["references"] = references;
    }
    body
}

/// A create error about one of the source's input files (deleted since, say) names the source,
/// since the caller sent none of those fields.
fn about_source_inputs(e: ApiError, source_id: &str, source_characters: bool) -> ApiError {
    let from_inputs = e.param.as_deref().is_some_and(|p| {
        p.starts_with("image_reference")
            || p.starts_with("references")
            || (source_characters && p.starts_with("characters"))
    });
    if !from_inputs {
        return e;
    }
    ApiError::invalid(
        "video_id",
        format!(
            "A remix reuses the inputs video {source_id} was made from, and one of them can no \
             longer be used: {}",
            e.message
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_prompt_and_characters_are_read_and_anything_else_is_refused_by_name() {
        let read = |body: Value| crate::domain::params::read_from::<VideoRemixRequest, _>(body);
        assert_eq!(
            read(json!({"prompt": "at night"})).map(|r| r.prompt).ok(),
            Some("at night".to_owned())
        );
        assert_eq!(
            read(json!({"prompt": "x", "characters": null}))
                .map(|r| r.characters)
                .ok(),
            Some(None)
        );
        for (body, param) in [
            (json!({}), "prompt"),
            (json!({"prompt": 3}), "prompt"),
            (json!({"prompt": "x", "seconds": 8}), "seconds"),
            (json!({"prompt": "x", "model": "reel-1"}), "model"),
            (json!({"prompt": "x", "characters": [""]}), "characters[0]"),
        ] {
            let e = read(body.clone()).expect_err("refused");
            assert_eq!(e.param.as_deref(), Some(param), "{body}");
        }
    }

    #[test]
    fn a_source_input_error_names_the_source() {
        let e = ApiError::invalid(
            "image_reference[0].file_id",
            "No file file_1 exists in your organization.",
        );
        let named = about_source_inputs(e, "video_9", false);
        assert_eq!(named.param.as_deref(), Some("video_id"));
        assert!(named.message.contains("video_9") && named.message.contains("file_1"));
        let other = about_source_inputs(ApiError::invalid("prompt", "too long"), "video_9", true);
        assert_eq!(other.param.as_deref(), Some("prompt"));
        let named_by_caller = ApiError::invalid("characters[0]", "No character char_1 exists.");
        let kept = about_source_inputs(named_by_caller, "video_9", false);
        assert_eq!(kept.param.as_deref(), Some("characters[0]"));
        assert_eq!(other.param.as_deref(), Some("prompt"));
    }
}
