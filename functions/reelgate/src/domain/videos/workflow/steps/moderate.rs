//! The `moderate` step: the prompt, the reference pictures, frames sampled through reference
//! and source videos, and reference audio's length, before anything is rendered; it keeps the
//! moderation record and the source's frame a chained render opens with.

use super::errors::{self, StepError};
use super::{load_running, traced, JobRef, Step};
use crate::domain::videos;
use crate::domain::videos::record::JobStatus;
use crate::domain::videos::workflow::Pipeline;
use crate::ports::blobs::read_all;
use crate::ports::store::Update;
use serde::Serialize;

/// What the `moderate` step answers: the job's inputs were cleared (a flagged input fails the
/// step with `ModerationBlocked` instead).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Moderated {
    pub verdict: ModerationOutcome,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ModerationOutcome {
    Allowed,
}

/// The `moderate` step on `job`.
pub async fn run_moderate(pipeline: &Pipeline, job: JobRef) -> Result<Moderated, StepError> {
    traced(Step::Moderate, &job, moderate(pipeline, &job)).await
}

async fn moderate(pipeline: &Pipeline, job: &JobRef) -> Result<Moderated, StepError> {
    let item = load_running(pipeline, job).await?;
    let inputs = item.inputs.clone();
    let mut images = Vec::new();
    let character_frames = (0..inputs.character_frames as usize).map(|i| {
        (
            format!("character frame {i}"),
            videos::character_frame_blob_key(&job.org, &job.video_id, i),
        )
    });
    let image_keys = inputs
        .image_file_ids()
        .into_iter()
        .map(|id| (id.to_owned(), crate::domain::files::blob_key(&job.org, id)))
        .chain(character_frames);
    for (file_id, key) in image_keys {
        let file_id = file_id.as_str();
        let unavailable = |e: crate::ports::blobs::BlobError| {
            StepError::new(
                errors::MODERATION_UNAVAILABLE,
                format!("reference image {file_id}: {e}"),
            )
        };
        let url = pipeline
            .blobs
            .presign_get(&key, pipeline.settings.presign_ttl)
            .await
            .map_err(unavailable)?;
        let bytes = read_all(pipeline.blobs.as_ref(), &key)
            .await
            .map_err(unavailable)?;
        images.push(crate::ports::moderator::ImageInput {
            file_id: file_id.to_owned(),
            url,
            bytes,
        });
    }
    // Reference videos: frames sampled through each clip go to the moderator as images.
    for file_id in &inputs.reference_videos {
        let key = crate::domain::files::blob_key(&job.org, file_id);
        images.extend(sampled_frames(pipeline, &key, file_id).await?);
    }
    // The source of a remix, an edit or an extension: its frames are moderated like a
    // reference video's, and a chained render opens with its first frame (a remix) or its
    // last (an extension's segment).
    if item.source_operation.is_some() {
        let key = videos::source_video_blob_key(&job.org, &job.video_id);
        let label = item.source_video().unwrap_or("the source video");
        images.extend(sampled_frames(pipeline, &key, label).await?);
        if let Some(source_use) = inputs.source_use.filter(|u| u.takes_frame()) {
            let last = source_use == crate::domain::videos::SourceUse::LastFrame;
            keep_source_frame(pipeline, job, &key, last).await?;
        }
    }
    // Reference audio: it must decode and last as long as the engine accepts. No configured
    // moderator classifies audio content (see docs/security.md).
    let mut audio_categories = Vec::new();
    for file_id in &inputs.reference_audio {
        if let Some(category) = check_reference_audio(pipeline, &job.org, file_id).await? {
            audio_categories.push(category);
        }
    }
    // The prompt as the caller wrote it (before any translation): every moderator sees it so.
    let input = crate::ports::moderator::ModerationInput {
        prompt: item.prompt.clone(),
        images,
    };
    let mut verdict = pipeline
        .moderator
        .check(&input)
        .await
        .map_err(|e| StepError::new(errors::MODERATION_UNAVAILABLE, e.to_string()))?;
    if !audio_categories.is_empty() {
        verdict.flagged = true;
        verdict.categories.extend(audio_categories);
        verdict.categories.dedup();
    }
    crate::domain::videos::moderation::keep_record(
        pipeline.store.as_ref(),
        &job.org,
        &job.video_id,
        &verdict,
    )
    .await?;
    if verdict.flagged {
        return Err(StepError::new(
            errors::MODERATION_BLOCKED,
            format!(
                "The request was blocked by moderation ({}).",
                verdict.categories.join(", ")
            ),
        ));
    }
    if !crate::domain::videos::jobs::advance(
        pipeline.context(),
        &job.org,
        &job.video_id,
        JobStatus::Translating,
        Update::new(),
    )
    .await?
    {
        return Err(StepError::new(
            errors::JOB_NOT_RUNNING,
            "the job ended during moderation",
        ));
    }
    Ok(Moderated {
        verdict: ModerationOutcome::Allowed,
    })
}

/// Frames a reference video is moderated by (evenly through the clip).
pub const FRAMES_PER_REFERENCE_VIDEO: u32 = 4;
/// How long reference audio may play, in seconds (the engine protocol's limits).
pub const REFERENCE_AUDIO_SECS: (f64, f64) = crate::domain::videos::create::REFERENCE_MEDIA_SECS;

/// The frames of reference video `file_id` as moderation images (JPEG data URLs, so that a
/// moderator that fetches URLs sees exactly these bytes). A clip whose frames cannot be decoded
/// cannot be cleared: moderation fails closed.
async fn sampled_frames(
    pipeline: &Pipeline,
    key: &str,
    file_id: &str,
) -> Result<Vec<crate::ports::moderator::ImageInput>, StepError> {
    use base64::Engine as _;
    let unavailable = |e: String| {
        StepError::new(
            errors::MODERATION_UNAVAILABLE,
            format!("reference video {file_id}: {e}"),
        )
    };
    let bytes = read_all(pipeline.blobs.as_ref(), key)
        .await
        .map_err(|e| unavailable(e.to_string()))?;
    let frames = tokio::task::spawn_blocking(move || {
        reelgate_media::sample_frames_jpeg(&bytes, 512, FRAMES_PER_REFERENCE_VIDEO)
    })
    .await
    .map_err(|e| unavailable(e.to_string()))?
    .map_err(|e| {
        unavailable(format!(
            "its frames could not be decoded for moderation: {e}"
        ))
    })?;
    Ok(frames
        .into_iter()
        .enumerate()
        .map(|(i, jpeg)| crate::ports::moderator::ImageInput {
            file_id: format!("{file_id}#frame{i}"),
            url: format!(
                "data:image/jpeg;base64,{}",
                base64::engine::general_purpose::STANDARD.encode(&jpeg)
            ),
            bytes: bytes::Bytes::from(jpeg),
        })
        .collect())
}

/// Stores the first frame (`last`: the last) of the job's source copy (`source_key`) as the
/// frame its render opens with. A source whose frame cannot be decoded fails the job unbilled,
/// as an input moderation could not clear does.
async fn keep_source_frame(
    pipeline: &Pipeline,
    job: &JobRef,
    source_key: &str,
    last: bool,
) -> Result<(), StepError> {
    let unavailable = |e: String| {
        StepError::new(
            errors::MODERATION_UNAVAILABLE,
            format!("the source's first frame: {e}"),
        )
    };
    let bytes = read_all(pipeline.blobs.as_ref(), source_key)
        .await
        .map_err(|e| unavailable(e.to_string()))?;
    let frame = tokio::task::spawn_blocking(move || {
        if last {
            reelgate_media::last_frame_jpeg(&bytes)
        } else {
            reelgate_media::first_frame_jpeg(&bytes)
        }
    })
    .await
    .map_err(|e| unavailable(e.to_string()))?
    .map_err(|e| unavailable(e.to_string()))?;
    pipeline
        .blobs
        .put_bytes(
            &videos::source_frame_blob_key(&job.org, &job.video_id),
            "image/jpeg",
            frame.into(),
        )
        .await
        .map_err(|e| unavailable(e.to_string()))
}

/// Checks reference audio `file_id`: a file whose container does not parse fails moderation
/// closed; one that plays outside [`REFERENCE_AUDIO_SECS`] is blocked (`audio/out_of_limits`).
async fn check_reference_audio(
    pipeline: &Pipeline,
    org: &str,
    file_id: &str,
) -> Result<Option<String>, StepError> {
    let unavailable = |e: String| {
        StepError::new(
            errors::MODERATION_UNAVAILABLE,
            format!("reference audio {file_id}: {e}"),
        )
    };
    let key = crate::domain::files::blob_key(org, file_id);
    let bytes = read_all(pipeline.blobs.as_ref(), &key)
        .await
        .map_err(|e| unavailable(e.to_string()))?;
    if bytes.len() as u64 > crate::domain::videos::create::MAX_REFERENCE_AUDIO_BYTES {
        return Ok(Some("audio/out_of_limits".into()));
    }
    match reelgate_media::audio_duration_secs(&bytes) {
        Ok(Some(secs)) if secs < REFERENCE_AUDIO_SECS.0 || secs > REFERENCE_AUDIO_SECS.1 => {
            Ok(Some("audio/out_of_limits".into()))
        }
        Ok(_) => Ok(None),
        Err(e) => Err(unavailable(format!("it could not be decoded: {e}"))),
    }
}
