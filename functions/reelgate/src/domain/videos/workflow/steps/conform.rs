//! The conform stage that the stitch and finalize steps share: the engine's MP4 into the
//! contract's clip, one slot of this process's conform capacity at a time.

use super::errors::{self, StepError};
use super::JobRef;
use crate::domain::videos;
use crate::domain::videos::record::JobRecord;
use crate::domain::videos::workflow::Pipeline;
use crate::ports::blobs::{read_all, spool_to_temp_file};

/// The largest engine output the conform stage reads (bytes): a 15 s 1080p clip is tens of
/// megabytes; past this the finalize function's memory bound would not hold.
pub const MAX_ENGINE_OUTPUT_BYTES: u64 = 256 * 1024 * 1024;

/// The conform stage: turns the engine's MP4 at `engine_key` into the contract's clip (768p
/// H.264 in the job's ratio, trimmed to its seconds, with AAC audio: the engine's own, else the
/// caller's first reference audio, else silence) and stores it at `output_key`. A clip that
/// already meets the contract passes through byte for byte. Any failure (an unsupported codec,
/// a clip too short, bytes that do not parse) is `EngineOutputInvalid`, which the definition
/// ends as `engine_unavailable`, unbilled. Running it again on its own output is a pass-through,
/// so a retried finalize is safe.
pub(super) async fn conform(
    pipeline: &Pipeline,
    job: &JobRef,
    item: &JobRecord,
    engine_key: &str,
    output_key: &str,
) -> Result<bytes::Bytes, StepError> {
    let invalid = |cause: String| StepError::new(errors::ENGINE_OUTPUT_INVALID, cause);
    // The slot first: a conform waiting its turn must not already hold its input (up to
    // MAX_ENGINE_OUTPUT_BYTES) in memory, or N waiting jobs hold N inputs.
    let started = std::time::Instant::now();
    let _slot = conform_slot(pipeline, &job.org).await?;
    // On local disk, read by the conform in windows: the engine's file (up to
    // MAX_ENGINE_OUTPUT_BYTES) is never in memory whole.
    let input = spool_to_temp_file(pipeline.blobs.as_ref(), engine_key, MAX_ENGINE_OUTPUT_BYTES)
        .await
        .map_err(|e| match e {
            crate::ports::blobs::BlobError::NotFound
            | crate::ports::blobs::BlobError::TooLarge { .. } => {
                invalid(format!("the engine's output cannot be read: {e}"))
            }
            other => StepError::new(errors::STORE_UNAVAILABLE, other.to_string()),
        })?;
    let fallback_audio = match item.inputs.reference_audio.first() {
        Some(file_id) => Some(
            read_all(
                pipeline.blobs.as_ref(),
                &crate::domain::files::blob_key(&job.org, file_id),
            )
            .await
            .map_err(|e| {
                StepError::new(
                    errors::STORE_UNAVAILABLE,
                    format!("reading reference audio {file_id}: {e}"),
                )
            })?
            .to_vec(),
        ),
        None => None,
    };
    // The engine's segment of an extension is conformed to its own seconds by the stitch step
    // (and an uploaded source to its own); finalize then conforms the joined clip, which lasts
    // the source and the segment.
    let seconds = if engine_key == videos::stitched_blob_key(&job.org, &job.video_id) {
        item.output_seconds()
    } else if engine_key == videos::source_video_blob_key(&job.org, &job.video_id) {
        item.extension_base_seconds.unwrap_or(item.seconds)
    } else if item.inputs.source_use == Some(videos::SourceUse::VideoWithContinuation) {
        // The engine answered the source and its continuation as one video.
        item.output_seconds()
    } else {
        item.seconds
    };
    let target = reelgate_media::ConformTarget {
        aspect: reelgate_media::AspectRatio::parse(&item.aspect_ratio)
            .unwrap_or(reelgate_media::AspectRatio::R16x9),
        seconds: seconds as u32,
        fallback_audio,
    };
    let conformed = tokio::task::spawn_blocking(move || {
        let source = reelgate_media::FileSource::new(input)
            .map_err(|e| reelgate_media::MediaError::Io(e.to_string()))?;
        reelgate_media::conform_source(&source, &target)
    })
    .await
    .map_err(|e| invalid(format!("the conform task failed: {e}")))?
    .map_err(|e| invalid(format!("the engine's output cannot be conformed: {e}")))?;
    tracing::info!(
        video_id = %job.video_id,
        source = %conformed.source,
        audio = %conformed.audio,
        passed_through = conformed.passed_through,
        size = %format!("{}x{}", conformed.width, conformed.height),
        seconds = conformed.duration_secs,
        millis = started.elapsed().as_millis() as u64,
        "engine output conformed"
    );
    let mp4 = bytes::Bytes::from(conformed.mp4);
    if !conformed.passed_through || engine_key != output_key {
        pipeline
            .blobs
            .put_bytes(output_key, "video/mp4", mp4.clone())
            .await
            .map_err(|e| StepError::new(errors::STORE_UNAVAILABLE, e.to_string()))?;
    }
    Ok(mp4)
}

/// How long a conform waits for a slot before its step fails as [`errors::CONFORM_BUSY`], which
/// the workflow retries (well inside the step's 300 s).
const CONFORM_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// A slot of this process's conform stage for `org`: at most `conform_concurrency` conforms
/// and stitches decode at once (each holds its decoder's pictures), handed to organizations in
/// turn, so one organization's burst of clips neither multiplies the memory nor keeps another's
/// clip waiting behind all of it.
pub(super) async fn conform_slot(
    pipeline: &Pipeline,
    org: &str,
) -> Result<crate::domain::fair_slots::Slot, StepError> {
    static SLOTS: std::sync::OnceLock<crate::domain::fair_slots::FairSlots> =
        std::sync::OnceLock::new();
    let slots = SLOTS.get_or_init(|| {
        crate::domain::fair_slots::FairSlots::new(pipeline.settings.conform_concurrency)
    });
    slots.acquire(org, CONFORM_WAIT).await.map_err(|busy| {
        StepError::new(
            errors::CONFORM_BUSY,
            format!("no conform slot freed within {} s", busy.waited.as_secs()),
        )
    })
}
