//! The workflow's step handlers, one per Lambda in `statemachine/video.asl.json`. They are
//! library code: the Lambda binaries and the local runner's dispatcher both call [`run_step`].
//! Failures carry Step Functions error names that the definition's `Retry`/`Catch` match.
//!
//! One file per step (`moderate`, `translate`, `stitch`, `finalize`, `fail_job`), each with
//! its `run_*` entry point; the conform stage that stitch and finalize share is `conform`.

mod conform;
pub mod errors;
mod fail_job;
mod finalize;
mod moderate;
mod stitch;
mod translate;

use crate::domain::videos::record::JobRecord;
use crate::domain::videos::workflow::Pipeline;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tracing::Instrument;

pub use conform::MAX_ENGINE_OUTPUT_BYTES;
pub use errors::StepError;
pub use fail_job::run_fail_job;
pub use finalize::{run_finalize, SPRITESHEET_TILE_WIDTH, THUMBNAIL_WIDTH};
pub use moderate::{run_moderate, FRAMES_PER_REFERENCE_VIDEO, REFERENCE_AUDIO_SECS};
pub use stitch::run_stitch;
pub use translate::run_translate;

/// Step names, as the Lambda functions and the local dispatcher know them.
pub const STEPS: &[&str] = &["moderate", "translate", "finalize", "fail_job"];

/// The job a step runs on, as its payload names it.
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

/// What the render worker hands the execution when the output is stored.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RenderResult {
    pub output_key: String,
    pub render_id: String,
}
