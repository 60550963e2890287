//! The `video` an edit or an extension is made from, as the request names it: a completed
//! video of the organization by id (`video[id]` in a form, `{"video": {"id": …}}` in JSON), or
//! an MP4 sent as the form's `video` file part. A source by id keeps its own model and aspect
//! ratio; an uploaded one needs `model`, and takes the model's ratio nearest its shape.

use crate::domain::accounts::Caller;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::videos::create::{Source, SourceOrigin};
use crate::domain::videos::source_upload::{CheckedUpload, UploadCheck};
use crate::domain::videos::SourceOperation;
use crate::domain::Context;
use bytes::Bytes;
use serde_json::{Map, Value};

/// A completed video of the organization, by id.
#[derive(Debug, Clone, PartialEq, utoipa::ToSchema)]
pub struct VideoReference {
    pub id: String,
}

/// Where the source comes from, as sent.
#[derive(Debug, Clone, PartialEq)]
pub enum VideoSource {
    Id(VideoReference),
    /// The bytes of the form's `video` file part.
    Upload(Bytes),
}

/// Reads `video` (and `model`, which only an uploaded source takes) from a request body and
/// the form's file part, if it had one.
pub fn parse(
    obj: &Map<String, Value>,
    upload: Option<Bytes>,
) -> ApiResult<(VideoSource, Option<String>)> {
    let video =
        match (obj.get("video"), upload) {
            (Some(_), Some(_)) => {
                return Err(ApiError::invalid(
                    "video",
                    "Send video once: a file, or the id of a completed video.",
                ))
            }
            (None, Some(bytes)) => VideoSource::Upload(bytes),
            (Some(Value::Object(v)), None) => VideoSource::Id(video_id(v)?),
            (Some(_), None) => return Err(ApiError::invalid(
                "video",
                "video must be an MP4 file or {\"id\": \"video_…\"}, a completed video of your \
                 organization (the SDK: extra_body={\"video\": {\"id\": …}}).",
            )),
            (None, None) => return Err(crate::domain::params::required("video")),
        };
    let model = match (obj.get("model"), &video) {
        (None, VideoSource::Id(_)) => None,
        (Some(_), VideoSource::Id(_)) => {
            return Err(ApiError::invalid(
                "model",
                "A video by id keeps its own model; model is taken only with a source file.",
            ))
        }
        (Some(Value::String(m)), VideoSource::Upload(_)) if !m.is_empty() => Some(m.clone()),
        (Some(_), VideoSource::Upload(_)) => {
            return Err(ApiError::invalid(
                "model",
                "model must be a video model id.",
            ))
        }
        (None, VideoSource::Upload(_)) => {
            return Err(ApiError::invalid(
                "model",
                "A source sent as a file needs model, the video model to render with \
                 (the SDK: extra_body={\"model\": …}).",
            ))
        }
    };
    Ok((video, model))
}

fn video_id(v: &Map<String, Value>) -> ApiResult<VideoReference> {
    if let Some(unknown) = v.keys().find(|k| k.as_str() != "id") {
        return Err(ApiError::invalid(
            &format!("video.{unknown}"),
            "video holds id only.",
        ));
    }
    match v.get("id") {
        Some(Value::String(id)) if !id.is_empty() => Ok(VideoReference { id: id.clone() }),
        _ => Err(ApiError::invalid(
            "video.id",
            "video.id must be the id of a completed video.",
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
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().expect("object")
    }

    #[test]
    fn a_source_is_an_id_or_a_file_with_a_model_and_nothing_else() {
        let (video, model) = parse(&obj(json!({"video": {"id": "video_1"}})), None).expect("id");
        assert_eq!(
            video,
            VideoSource::Id(VideoReference {
                id: "video_1".into()
            })
        );
        assert_eq!(model, None);
        let file = Bytes::from_static(b"mp4");
        let (video, model) =
            parse(&obj(json!({"model": "reel-1"})), Some(file.clone())).expect("file");
        assert_eq!(video, VideoSource::Upload(file.clone()));
        assert_eq!(model.as_deref(), Some("reel-1"));
        for (body, upload, param) in [
            (json!({}), None, "video"),
            (json!({"video": "video_1"}), None, "video"),
            (json!({"video": {"id": ""}}), None, "video.id"),
            (json!({"video": {"id": "v", "url": "u"}}), None, "video.url"),
            (
                json!({"video": {"id": "v"}, "model": "reel-1"}),
                None,
                "model",
            ),
            (json!({"video": {"id": "v"}}), Some(file.clone()), "video"),
            (json!({}), Some(file.clone()), "model"),
            (json!({"model": 3}), Some(file.clone()), "model"),
        ] {
            let e = parse(&obj(body.clone()), upload).expect_err("refused");
            assert_eq!(e.param.as_deref(), Some(param), "{body}");
        }
    }
}
