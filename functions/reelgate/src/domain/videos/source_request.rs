//! The `video` an edit or an extension is made from, as the request names it: a completed
//! video of the organization by id (`video[id]` in a form, `{"video": {"id": …}}` in JSON), or
//! an MP4 sent as the form's `video` file part. A source by id keeps its own model and aspect
//! ratio; an uploaded one needs `model`, and takes the model's ratio nearest its shape.

use crate::domain::accounts::Caller;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::params::{FaultKind, ShapeFault};
use crate::domain::videos::create::{Source, SourceOrigin};
use crate::domain::videos::source_upload::{CheckedUpload, UploadCheck};
use crate::domain::videos::SourceOperation;
use crate::domain::Context;
use bytes::Bytes;
use serde::Deserialize;

/// A completed video of the organization, by id.
#[derive(Debug, Clone, PartialEq, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VideoReference {
    pub id: String,
}

/// `model` as sent beside a source: a video model id, or any other value, which is refused in
/// the words of the source it came with (a video by id takes no model at all).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum SentModel {
    Id(String),
    Other(serde::de::IgnoredAny),
}

/// Where the source comes from, as sent.
#[derive(Debug, Clone, PartialEq)]
pub enum VideoSource {
    Id(VideoReference),
    /// The bytes of the form's `video` file part.
    Upload(Bytes),
}

/// The refusal of a `video` sent both as the form's file part and as a value.
pub fn sent_twice() -> ApiError {
    ApiError::invalid(
        "video",
        "Send video once: a file, or the id of a completed video.",
    )
}

fn video_id_refused() -> ApiError {
    ApiError::invalid("video.id", "video.id must be the id of a completed video.")
}

/// A top-level parameter a source operation does not take, refused by name with what the
/// operation does take (`takes`), so a caller expecting to change the source's model or ratio
/// learns why instead of having it ignored.
pub fn unknown_parameter(fault: &ShapeFault, takes: &str) -> Option<ApiError> {
    if fault.path != fault.field {
        return None;
    }
    fault.refuse_unknown(|unknown| format!("Unknown parameter: {unknown}. {takes}"))
}

/// The refusal of a `video` value serde could not read, named by its path (`video.id`,
/// `video.url`); None for a fault elsewhere in the body.
pub fn refusal(fault: &ShapeFault) -> Option<ApiError> {
    if fault.param() != "video" || fault.path == fault.field {
        return None;
    }
    Some(match (&fault.kind, fault.path.as_str()) {
        (FaultKind::Unknown, path) => ApiError::invalid(path, "video holds id only."),
        (_, "video") => ApiError::invalid(
            "video",
            "video must be an MP4 file or {\"id\": \"video_…\"}, a completed video of your \
             organization (the SDK: extra_body={\"video\": {\"id\": …}}).",
        ),
        _ => video_id_refused(),
    })
}

/// The rules of a source sent in the body that need no file: a video by id names one and
/// keeps its own model.
pub fn check(video: Option<&VideoReference>, model: Option<&SentModel>) -> ApiResult<()> {
    match video {
        Some(reference) if reference.id.is_empty() => Err(video_id_refused()),
        Some(_) if model.is_some() => Err(ApiError::invalid(
            "model",
            "A video by id keeps its own model; model is taken only with a source file.",
        )),
        _ => Ok(()),
    }
}

/// The source as sent: `video` from the body, or the form's file part (`upload`), with the
/// `model` only an uploaded source takes.
pub fn source(
    video: Option<VideoReference>,
    model: Option<SentModel>,
    upload: Option<Bytes>,
) -> ApiResult<(VideoSource, Option<String>)> {
    check(video.as_ref(), model.as_ref())?;
    match (video, upload, model) {
        (Some(_), Some(_), _) => Err(sent_twice()),
        (Some(reference), None, _) => Ok((VideoSource::Id(reference), None)),
        (None, None, _) => Err(crate::domain::params::required("video")),
        (None, Some(bytes), Some(SentModel::Id(m))) if !m.is_empty() => {
            Ok((VideoSource::Upload(bytes), Some(m)))
        }
        (None, Some(_), Some(_)) => Err(ApiError::invalid(
            "model",
            "model must be a video model id.",
        )),
        (None, Some(_), None) => Err(ApiError::invalid(
            "model",
            "A source sent as a file needs model, the video model to render with \
             (the SDK: extra_body={\"model\": …}).",
        )),
    }
}

/// The source a new job is made from, checked: what its create request keeps of it.
pub struct Resolved {
    pub model: String,
    pub aspect_ratio: String,
    /// How long the source lasts, in whole seconds.
    pub seconds: i64,
    /// How long an uploaded source lasts exactly.
    pub exact_seconds: f64,
    pub origin: SourceOrigin,
    /// The stored job, for a source by id.
    pub job: Option<crate::domain::videos::JobRecord>,
}

/// Checks the source of `operation`: a video by id must be a completed job of the caller's
/// organization on a model that does the operation; a file must pass
/// `check` within `max_secs` and `model` must do the operation. Nothing is
/// reserved by any of this.
pub async fn resolve(
    cx: Context<'_>,
    caller: &Caller,
    video: VideoSource,
    check: Option<UploadCheck>,
    model: Option<String>,
    operation: SourceOperation,
    max_secs: impl Fn(&crate::domain::catalog::Capabilities) -> f64,
) -> ApiResult<Resolved> {
    match video {
        VideoSource::Id(reference) => {
            let job = crate::domain::videos::queries::completed_source(
                cx,
                &caller.org,
                &reference.id,
                "video",
                operation,
            )
            .await?;
            Ok(Resolved {
                model: job.model.clone(),
                aspect_ratio: job.aspect_ratio.clone(),
                seconds: job.output_seconds(),
                exact_seconds: job.output_seconds() as f64,
                origin: SourceOrigin::Video(job.id.clone()),
                job: Some(job),
            })
        }
        VideoSource::Upload(bytes) => {
            let model = model.unwrap_or_default();
            let Some(found) = cx.catalog.video_model(&model) else {
                return Err(ApiError::invalid(
                    "model",
                    format!("No video model '{model}' exists; GET /v1/videos/models lists them."),
                ));
            };
            let capabilities = cx.catalog.capabilities(found);
            crate::domain::videos::queries::check_operation(cx, &model, operation, "model")?;
            let check = check.ok_or_else(|| {
                ApiError::invalid("video", "This route takes a completed video by id.")
            })?;
            let upload: CheckedUpload = check(bytes, max_secs(&capabilities)).await?;
            let aspect_ratio = upload.aspect_ratio(&capabilities).ok_or_else(|| {
                ApiError::invalid(
                    "model",
                    format!("The video model '{model}' renders no fixed aspect ratio."),
                )
            })?;
            Ok(Resolved {
                model,
                aspect_ratio,
                seconds: upload.whole_seconds(),
                exact_seconds: upload.duration_secs,
                origin: SourceOrigin::Upload(upload.bytes),
                job: None,
            })
        }
    }
}

impl Resolved {
    /// The source as the create use case takes it.
    pub fn source(&self, operation: SourceOperation) -> Source {
        match &self.job {
            Some(job) => Source::of_job(job, operation),
            None => Source {
                origin: self.origin.clone(),
                operation,
                base_seconds: (operation == SourceOperation::Extension).then_some(self.seconds),
                seconds: self.exact_seconds,
                render: None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_is_an_id_or_a_file_with_a_model_and_nothing_else() {
        let reference = || VideoReference {
            id: "video_1".into(),
        };
        let model = |m: &str| Some(SentModel::Id(m.into()));
        let (video, kept) = source(Some(reference()), None, None).expect("id");
        assert_eq!(video, VideoSource::Id(reference()));
        assert_eq!(kept, None);
        let file = Bytes::from_static(b"mp4");
        let (video, kept) = source(None, model("reel-1"), Some(file.clone())).expect("file");
        assert_eq!(video, VideoSource::Upload(file.clone()));
        assert_eq!(kept.as_deref(), Some("reel-1"));
        let other = Some(SentModel::Other(serde::de::IgnoredAny));
        let empty = VideoReference { id: String::new() };
        for (video, model, upload, param) in [
            (None, None, None, "video"),
            (Some(empty), None, None, "video.id"),
            (Some(reference()), model("reel-1"), None, "model"),
            (Some(reference()), other.clone(), None, "model"),
            (Some(reference()), None, Some(file.clone()), "video"),
            (None, None, Some(file.clone()), "model"),
            (None, other.clone(), Some(file.clone()), "model"),
            (None, model(""), Some(file.clone()), "model"),
        ] {
            let e = source(video.clone(), model.clone(), upload).expect_err("refused");
            assert_eq!(e.param.as_deref(), Some(param), "{video:?} {model:?}");
        }
    }
}
