//! The workflow's step handlers, one per Lambda in `statemachine/video.asl.json`. They are
//! library code: the Lambda binaries and the local runner's dispatcher both call [`run_step`].
//! Failures carry Step Functions error names that the definition's `Retry`/`Catch` match.

use super::Pipeline;
use crate::domain::videos;
use crate::domain::videos::record::{self as job_record, JobRecord, JobStatus, Reservation};
use crate::ports::blobs::{read_all, read_limited, spool_to_temp_file};
use crate::ports::store::{now_secs, Update};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tracing::Instrument;

/// Error names the state machine matches.
pub mod errors {
    pub const MODERATION_BLOCKED: &str = "ModerationBlocked";
    pub const MODERATION_UNAVAILABLE: &str = "ModerationUnavailable";
    pub const TRANSLATION_UNAVAILABLE: &str = "TranslationUnavailable";
    pub const ENGINE_UNAVAILABLE: &str = "EngineUnavailable";
    pub const ENGINE_OUTPUT_INVALID: &str = "EngineOutputInvalid";
    pub const JOB_NOT_RUNNING: &str = "JobNotRunning";
    pub const STORE_UNAVAILABLE: &str = "StoreUnavailable";
    /// Every conform slot stayed taken (other organizations' clips were served in turn): the
    /// workflow retries the step.
    pub const CONFORM_BUSY: &str = "ConformBusy";
    pub const BAD_INPUT: &str = "BadStepInput";
}

/// Step names, as the Lambda functions and the local dispatcher know them.
pub const STEPS: &[&str] = &["moderate", "translate", "finalize", "fail_job"];

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepError {
    pub error: String,
    pub cause: String,
}

impl StepError {
    pub fn new(error: &str, cause: impl Into<String>) -> Self {
        StepError {
            error: error.to_owned(),
            cause: cause.into(),
        }
    }
}

impl std::fmt::Display for StepError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.error, self.cause)
    }
}

impl std::error::Error for StepError {}

/// The one mapping of the domain's errors to the state machine's error names: a job that is
/// gone or no longer in a state to continue is `JobNotRunning` (the definition abandons the run),
/// bad input is `BadStepInput`; everything else (the store's failures among them) is
/// `StoreUnavailable`, which the definition retries.
impl From<crate::domain::error::ApiError> for StepError {
    fn from(e: crate::domain::error::ApiError) -> Self {
        use crate::domain::error::ErrorKind;
        let name = match e.kind {
            ErrorKind::NotFound | ErrorKind::Conflict => errors::JOB_NOT_RUNNING,
            ErrorKind::InvalidRequest => errors::BAD_INPUT,
            _ => errors::STORE_UNAVAILABLE,
        };
        StepError::new(name, e.message)
    }
}

impl From<crate::ports::store::StoreError> for StepError {
    fn from(e: crate::ports::store::StoreError) -> Self {
        StepError::new(errors::STORE_UNAVAILABLE, e.to_string())
    }
}

#[derive(Debug, Deserialize)]
struct JobRef {
    org: String,
    video_id: String,
}

/// Runs one step, named, with its Lambda payload (the local runner's dispatcher). A host that
/// runs one step per process calls that step's own `run_*` function instead, so its binary links
/// only that step's code: the finalize step's MP4 probe and H.264 decoder stay out of the
/// translate and fail-job functions.
pub async fn run_step(pipeline: &Pipeline, step: &str, payload: Value) -> Result<Value, StepError> {
    match step {
        "moderate" => run_moderate(pipeline, payload).await,
        "translate" => run_translate(pipeline, payload).await,
        "stitch" => run_stitch(pipeline, payload).await,
        "finalize" => run_finalize(pipeline, payload).await,
        "fail_job" => run_fail_job(pipeline, payload).await,
        other => Err(StepError::new(
            errors::BAD_INPUT,
            format!("unknown step {other}"),
        )),
    }
}

/// The `moderate` step with its Lambda payload.
pub async fn run_moderate(pipeline: &Pipeline, payload: Value) -> Result<Value, StepError> {
    run_with(pipeline, "moderate", payload, |p, job, _| async move {
        moderate(p, &job).await
    })
    .await
}

/// The `translate` step with its Lambda payload.
pub async fn run_translate(pipeline: &Pipeline, payload: Value) -> Result<Value, StepError> {
    run_with(pipeline, "translate", payload, |p, job, _| async move {
        translate(p, &job).await
    })
    .await
}

/// The `stitch` step with its Lambda payload.
pub async fn run_stitch(pipeline: &Pipeline, payload: Value) -> Result<Value, StepError> {
    run_with(pipeline, "stitch", payload, |p, job, payload| async move {
        stitch(p, &job, &payload["render"]).await
    })
    .await
}

/// The `finalize` step with its Lambda payload.
pub async fn run_finalize(pipeline: &Pipeline, payload: Value) -> Result<Value, StepError> {
    run_with(
        pipeline,
        "finalize",
        payload,
        |p, job, payload| async move { finalize(p, &job, &payload["render"]).await },
    )
    .await
}

/// The `fail_job` step with its Lambda payload.
pub async fn run_fail_job(pipeline: &Pipeline, payload: Value) -> Result<Value, StepError> {
    run_with(
        pipeline,
        "fail_job",
        payload,
        |p, job, payload| async move { fail_job(p, &job, &payload).await },
    )
    .await
}

/// A step's span, a child of the create request's span through the `traceparent` the state
/// machine passes on (never of whatever span runs the workflow locally); created only while
/// traces are exported.
fn step_span(step: &str, video_id: &str, traceparent: Option<&str>) -> tracing::Span {
    if !crate::observability::trace_context::exporting() {
        return tracing::Span::none();
    }
    let span = tracing::info_span!(
        parent: None,
        "step",
        otel.name = format!("step {step}"),
        otel.status_code = tracing::field::Empty,
        step,
        video_id,
        error = tracing::field::Empty,
    );
    crate::observability::trace_context::adopt(&span, traceparent);
    span
}

/// Reads the job reference from the payload, runs `handler` and logs the outcome.
async fn run_with<'a, F, Fut>(
    pipeline: &'a Pipeline,
    step: &str,
    payload: Value,
    handler: F,
) -> Result<Value, StepError>
where
    F: FnOnce(&'a Pipeline, JobRef, Value) -> Fut,
    Fut: std::future::Future<Output = Result<Value, StepError>> + 'a,
{
    let job: JobRef = serde_json::from_value(payload.clone())
        .map_err(|e| StepError::new(errors::BAD_INPUT, format!("{step}: {e}")))?;
    let video_id = job.video_id.clone();
    let span = step_span(step, &video_id, payload["traceparent"].as_str());
    let outcome = handler(pipeline, job, payload)
        .instrument(span.clone())
        .await;
    if let Err(e) = &outcome {
        span.record("otel.status_code", "ERROR");
        span.record("error", e.error.as_str());
    }
    match &outcome {
        Ok(_) => tracing::info!(step, video_id = %video_id, "step done"),
        Err(e) => tracing::warn!(step, video_id = %video_id, error = %e, "step failed"),
    }
    outcome
}

async fn load_running(pipeline: &Pipeline, job: &JobRef) -> Result<JobRecord, StepError> {
    let record =
        crate::domain::videos::record::load(pipeline.store.as_ref(), &job.org, &job.video_id)
            .await?
            .ok_or_else(|| StepError::new(errors::JOB_NOT_RUNNING, "the job no longer exists"))?;
    if !record.status.is_running() {
        return Err(StepError::new(
            errors::JOB_NOT_RUNNING,
            format!("the job is {}", record.status.as_str()),
        ));
    }
    Ok(record)
}

async fn moderate(pipeline: &Pipeline, job: &JobRef) -> Result<Value, StepError> {
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
    Ok(json!({"verdict": "allowed"}))
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

async fn translate(pipeline: &Pipeline, job: &JobRef) -> Result<Value, StepError> {
    let item = load_running(pipeline, job).await?;
    let prompt = item.prompt.as_str();
    let translator = pipeline.translator.clone();
    let english =
        crate::domain::videos::translation::translate_prompt(translator.as_deref(), prompt)
            .await
            .map_err(|e| StepError::new(errors::TRANSLATION_UNAVAILABLE, e.to_string()))?;
    let translated = english != prompt;
    let update = job_record::translated(english);
    if !crate::domain::videos::jobs::advance(
        pipeline.context(),
        &job.org,
        &job.video_id,
        JobStatus::Queued,
        update,
    )
    .await?
    {
        return Err(StepError::new(
            errors::JOB_NOT_RUNNING,
            "the job ended during translation",
        ));
    }
    Ok(json!({"translated": translated}))
}

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
async fn conform(
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

/// How long a conform waits for a slot before its step fails as [`errors::CONFORM_BUSY`], which
/// the workflow retries (well inside the step's 300 s).
const CONFORM_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// A slot of this process's conform stage for `org`: at most `conform_concurrency` conforms
/// and stitches decode at once (each holds its decoder's pictures), handed to organizations in
/// turn, so one organization's burst of clips neither multiplies the memory nor keeps another's
/// clip waiting behind all of it.
async fn conform_slot(
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

/// Joins an extension's segment after its source (any other job passes through): the engine's
/// output is conformed to the segment's seconds (kept as `segment_blob_key`), then stitched
/// after the job's own copy of the source into `stitched_blob_key`, which finalize checks and
/// completes. The engine's output is never overwritten, so a retried stitch starts over from it.
async fn stitch(pipeline: &Pipeline, job: &JobRef, render: &Value) -> Result<Value, StepError> {
    let result: RenderResult = serde_json::from_value(render.clone())
        .map_err(|e| StepError::new(errors::BAD_INPUT, format!("render result: {e}")))?;
    let item = load_running(pipeline, job).await?;
    let continued = item.inputs.source_use == Some(videos::SourceUse::VideoWithContinuation);
    if !item.is_extension() || continued {
        return Ok(render.clone());
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
    Ok(json!({"output_key": stitched_key, "render_id": result.render_id}))
}

/// What the render worker hands the execution when the output is stored.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RenderResult {
    pub output_key: String,
    pub render_id: String,
}

/// Checks the output, makes the thumbnail, completes the job and charges it once.
async fn finalize(pipeline: &Pipeline, job: &JobRef, render: &Value) -> Result<Value, StepError> {
    let render: RenderResult = serde_json::from_value(render.clone())
        .map_err(|e| StepError::new(errors::BAD_INPUT, format!("render result: {e}")))?;
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
                return Ok(json!({"charged": false, "already": true}));
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
    Ok(json!({"charged": charged}))
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

async fn fail_job(pipeline: &Pipeline, job: &JobRef, payload: &Value) -> Result<Value, StepError> {
    let code = payload["code"].as_str().unwrap_or("engine_unavailable");
    // The caller sees the documented sentence for the code; the workflow's raw cause (which on
    // AWS can carry ARNs, task tokens or a Lambda's stack) is neither stored nor logged.
    // A Japanese prompt on a server with no translator can never be translated here: the job
    // says so, rather than "resubmit later".
    let code = if code == "translation_unavailable" && pipeline.translator.is_none() {
        crate::domain::videos::jobs::TRANSLATION_NOT_CONFIGURED
    } else {
        crate::domain::videos::jobs::stored_failure_code(code)
    };
    tracing::warn!(video_id = %job.video_id, code, "failing job");
    crate::domain::videos::jobs::fail(pipeline.context(), &job.org, &job.video_id, code, "")
        .await?;
    Ok(json!({"failed": code}))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::error::ApiError;

    #[test]
    fn domain_errors_map_to_the_state_machines_names() {
        let name = |e: ApiError| StepError::from(e).error;
        assert_eq!(
            name(ApiError::internal("using the store", "down")),
            errors::STORE_UNAVAILABLE
        );
        assert_eq!(
            name(ApiError::unavailable("x", "later")),
            errors::STORE_UNAVAILABLE
        );
        assert_eq!(
            name(ApiError::not_found("video_not_found", "gone")),
            errors::JOB_NOT_RUNNING
        );
        assert_eq!(name(ApiError::conflict("ended")), errors::JOB_NOT_RUNNING);
        assert_eq!(name(ApiError::invalid("org", "bad")), errors::BAD_INPUT);
        let e = StepError::from(ApiError::not_found("video_not_found", "the job is gone"));
        assert_eq!(e.cause, "the job is gone");
    }
}
