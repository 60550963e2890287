//! The `finalize` step: the engine's output conformed and checked, its previews made, the job
//! completed and charged once.

use super::conform::conform;
use super::errors::{self, StepError};
use super::{load_running, traced, JobRef, RenderResult, RenderedJob, Step};
use crate::domain::videos;
use crate::domain::videos::record::{self as job_record, Reservation};
use crate::domain::videos::workflow::Pipeline;
use crate::ports::store::now_secs;
use serde::Serialize;

/// What the `finalize` step answers: whether this run charged the job.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finalized {
    pub charged: bool,
    /// A retried finalize found the job charged by an earlier run (on the wire only then).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub already: bool,
}

/// The `finalize` step on a rendered job.
pub async fn run_finalize(pipeline: &Pipeline, input: RenderedJob) -> Result<Finalized, StepError> {
    let (job, render) = input.into_parts();
    traced(Step::Finalize, &job, finalize(pipeline, &job, render)).await
}

/// The contract's checks on the conformed clip (a conform that is right passes them all; they
/// stand between any engine and the charge): H.264 with 768 pixels on the short side, an audio
/// track, lasting `seconds` ±0.5 s. Returns the size as `WIDTHxHEIGHT`.
fn check_output(mp4: &[u8], seconds: f64) -> Result<String, StepError> {
    let probe = reelgate_media::probe_mp4(mp4).map_err(|e| {
        StepError::new(
            errors::ENGINE_OUTPUT_INVALID,
            format!("the engine's output is not an MP4: {e}"),
        )
    })?;
    let video = probe.video.as_ref().ok_or_else(|| {
        StepError::new(
            errors::ENGINE_OUTPUT_INVALID,
            "the output has no video track",
        )
    })?;
    if video.width.min(video.height) != 768 {
        return Err(StepError::new(
            errors::ENGINE_OUTPUT_INVALID,
            format!("the output is {}x{}, not 768p", video.width, video.height),
        ));
    }
    if probe.audio.is_none() {
        return Err(StepError::new(
            errors::ENGINE_OUTPUT_INVALID,
            "the output has no audio track",
        ));
    }
    if (probe.duration_secs - seconds).abs() > 0.5 {
        return Err(StepError::new(
            errors::ENGINE_OUTPUT_INVALID,
            format!(
                "the output lasts {:.2} s, not {seconds} s",
                probe.duration_secs
            ),
        ));
    }
    Ok(format!("{}x{}", video.width, video.height))
}

/// Checks the output, makes the thumbnail, completes the job and charges it once.
async fn finalize(
    pipeline: &Pipeline,
    job: &JobRef,
    render: RenderResult,
) -> Result<Finalized, StepError> {
    let item = match load_running(pipeline, job).await {
        Ok(item) => item,
        // A retried finalize after the charge went through: report what happened.
        Err(e) => {
            let charged = crate::domain::videos::record::load(
                pipeline.store.as_ref(),
                &job.org,
                &job.video_id,
            )
            .await?
            .is_some_and(|j| j.reservation == Reservation::Charged);
            if charged {
                return Ok(Finalized {
                    charged: false,
                    already: true,
                });
            }
            return Err(e);
        }
    };
    let output_key = videos::output_blob_key(&job.org, &job.video_id);
    // The engine's output is read only from this job's own folder of the blob store.
    if !render
        .output_key
        .starts_with(&format!("{}/videos/{}/", job.org, job.video_id))
    {
        return Err(StepError::new(
            errors::BAD_INPUT,
            "the render result names a blob outside the job's folder",
        ));
    }
    let mp4 = conform(pipeline, job, &item, &render.output_key, &output_key).await?;
    let size = check_output(&mp4, item.output_seconds() as f64)?;
    let previews = tokio::task::spawn_blocking(move || {
        (
            reelgate_media::thumbnail_jpeg(&mp4, THUMBNAIL_WIDTH),
            reelgate_media::spritesheet_jpeg(&mp4, SPRITESHEET_TILE_WIDTH),
        )
    })
    .await;
    let (thumbnail, spritesheet) = match previews {
        Ok((thumbnail, spritesheet)) => (Some(thumbnail), Some(spritesheet)),
        Err(e) => {
            tracing::warn!(video_id = %job.video_id, error = %e, "thumbnail task failed");
            (None, None)
        }
    };
    let thumbnail = store_preview(
        pipeline,
        job,
        "thumbnail",
        &videos::thumbnail_blob_key(&job.org, &job.video_id),
        thumbnail,
    )
    .await;
    // A job without a spritesheet still completes: its variant answers 404.
    store_preview(
        pipeline,
        job,
        "spritesheet",
        &videos::spritesheet_blob_key(&job.org, &job.video_id),
        spritesheet,
    )
    .await;
    let now = now_secs();
    let quote = item.cost;
    let currency = item.currency.clone();
    let update = job_record::completed(
        now,
        now + pipeline.settings.job_retention.as_secs() as i64,
        thumbnail,
        size,
        render.render_id.clone(),
    );
    let settled = crate::domain::videos::settlement::charge(
        pipeline.store.as_ref(),
        &job.org,
        &job.video_id,
        quote,
        &currency,
        update,
        crate::domain::videos::settlement::usage_of(&item),
    )
    .await?;
    let charged = settled == crate::domain::videos::settlement::Settlement::Settled;
    tracing::info!(video_id = %job.video_id, %quote, charged, "video completed");
    if charged {
        if let Some(started) = item.render_started_ms {
            crate::observability::metrics::render_duration(std::time::Duration::from_millis(
                u64::try_from(crate::observability::metrics::now_millis() - started).unwrap_or(0),
            ));
        }
    }
    if charged {
        crate::domain::videos::events::emit(pipeline.context(), &job.org, &job.video_id).await;
    }
    Ok(Finalized {
        charged,
        already: false,
    })
}

/// The thumbnail's width in pixels (`GET /v1/videos/{id}/thumbnail`).
pub const THUMBNAIL_WIDTH: u32 = 480;
/// Each spritesheet frame's width in pixels: a 16:9 video's sheet is 640x360.
pub const SPRITESHEET_TILE_WIDTH: u32 = 160;

/// Stores a preview JPEG of the output (`what`: thumbnail or spritesheet); whether it is stored.
/// A preview is not worth failing a rendered, conformed job for: a missing one is logged.
async fn store_preview(
    pipeline: &Pipeline,
    job: &JobRef,
    what: &str,
    key: &str,
    jpeg: Option<Result<Vec<u8>, reelgate_media::MediaError>>,
) -> bool {
    match jpeg {
        Some(Ok(jpeg)) => pipeline
            .blobs
            .put_bytes(key, "image/jpeg", jpeg.into())
            .await
            .inspect_err(|e| tracing::warn!(video_id = %job.video_id, error = %e, "no {what}: storing it failed"))
            .is_ok(),
        Some(Err(e)) => {
            tracing::warn!(video_id = %job.video_id, error = %e, "no {what}: the frames could not be decoded");
            false
        }
        None => false,
    }
}
