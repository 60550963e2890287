//! The `stitch` step: an extension's segment joined after its source.

use super::conform::{conform, conform_slot};
use super::errors::{self, StepError};
use super::{load_running, traced, JobRef, RenderResult, RenderedJob, Step};
use crate::domain::videos;
use crate::domain::videos::workflow::Pipeline;
use crate::ports::blobs::read_limited;

/// The `stitch` step on a rendered job; it answers the render result finalize takes.
pub async fn run_stitch(
    pipeline: &Pipeline,
    input: RenderedJob,
) -> Result<RenderResult, StepError> {
    let (job, render) = input.into_parts();
    traced(Step::Stitch, &job, stitch(pipeline, &job, render)).await
}

/// Joins an extension's segment after its source (any other job passes through): the engine's
/// output is conformed to the segment's seconds (kept as `segment_blob_key`), then stitched
/// after the job's own copy of the source into `stitched_blob_key`, which finalize checks and
/// completes. The engine's output is never overwritten, so a retried stitch starts over from it.
async fn stitch(
    pipeline: &Pipeline,
    job: &JobRef,
    result: RenderResult,
) -> Result<RenderResult, StepError> {
    let item = load_running(pipeline, job).await?;
    let continued = item.inputs.source_use == Some(videos::SourceUse::VideoWithContinuation);
    if !item.is_extension() || continued {
        return Ok(result);
    }
    if !result
        .output_key
        .starts_with(&format!("{}/videos/{}/", job.org, job.video_id))
    {
        return Err(StepError::new(
            errors::BAD_INPUT,
            "the render result names a blob outside the job's folder",
        ));
    }
    let segment_key = videos::segment_blob_key(&job.org, &job.video_id);
    let segment = conform(pipeline, job, &item, &result.output_key, &segment_key).await?;
    let source_key = videos::source_video_blob_key(&job.org, &job.video_id);
    // Each read of a whole clip happens inside a conform slot, as in `conform`.
    let (source, _slot) = if item.source_video().is_some() {
        let slot = conform_slot(pipeline, &job.org).await?;
        // A completed video's output is already the job's size and format.
        let source = read_limited(
            pipeline.blobs.as_ref(),
            &source_key,
            crate::domain::videos::create::MAX_SOURCE_BYTES,
        )
        .await
        .map_err(|e| StepError::new(errors::STORE_UNAVAILABLE, format!("the source copy: {e}")))?;
        (source, slot)
    } else {
        // The caller's file: conformed to the job's size and its whole seconds first.
        let conformed_key = videos::conformed_source_blob_key(&job.org, &job.video_id);
        let source = conform(pipeline, job, &item, &source_key, &conformed_key).await?;
        (source, conform_slot(pipeline, &job.org).await?)
    };
    let started = std::time::Instant::now();
    let joined = tokio::task::spawn_blocking(move || reelgate_media::stitch_mp4(&source, &segment))
        .await
        .map_err(|e| {
            StepError::new(
                errors::ENGINE_OUTPUT_INVALID,
                format!("the stitch task failed: {e}"),
            )
        })?
        .map_err(|e| {
            StepError::new(
                errors::ENGINE_OUTPUT_INVALID,
                format!("the source and the segment cannot be joined: {e}"),
            )
        })?;
    tracing::info!(
        video_id = %job.video_id,
        parts = %joined.source,
        seconds = joined.duration_secs,
        millis = started.elapsed().as_millis() as u64,
        "extension stitched"
    );
    let stitched_key = videos::stitched_blob_key(&job.org, &job.video_id);
    pipeline
        .blobs
        .put_bytes(&stitched_key, "video/mp4", bytes::Bytes::from(joined.mp4))
        .await
        .map_err(|e| StepError::new(errors::STORE_UNAVAILABLE, e.to_string()))?;
    Ok(RenderResult {
        output_key: stitched_key,
        render_id: result.render_id,
    })
}
