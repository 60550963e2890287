//! The workflow's step handlers, one per Lambda in `statemachine/video.asl.json`. They are
//! library code: the Lambda binaries and the local runner's dispatcher call them. Each takes its
//! typed input and answers its typed output, whose JSON is what the definition passes in
//! (`Parameters.Payload`) and reads back (`ResultSelector`); the hosts convert at their edge.
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
use serde::{Deserialize, Deserializer, Serialize};
use tracing::Instrument;

pub use conform::MAX_ENGINE_OUTPUT_BYTES;
pub use errors::StepError;
pub use fail_job::{run_fail_job, FailedJob, JobFailed};
pub use finalize::{run_finalize, Finalized, SPRITESHEET_TILE_WIDTH, THUMBNAIL_WIDTH};
pub use moderate::{
    run_moderate, Moderated, ModerationOutcome, FRAMES_PER_REFERENCE_VIDEO, REFERENCE_AUDIO_SECS,
};
pub use stitch::run_stitch;
pub use translate::{run_translate, Translated};

/// A step of the workflow, as its Lambda function and the local dispatcher name it. A host
/// parses the name once ([`Step::named`]), reads the step's payload into its input type and
/// calls that step's own `run_*` function; a host that runs one step per process calls that
/// function alone, so its binary links only that step's code (the finalize step's MP4 probe and
/// H.264 decoder stay out of the translate and fail-job functions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Moderate,
    Translate,
    Stitch,
    Finalize,
    FailJob,
}

impl Step {
    pub const ALL: [Step; 5] = [
        Step::Moderate,
        Step::Translate,
        Step::Stitch,
        Step::Finalize,
        Step::FailJob,
    ];

    /// The step called `name`; any other name fails as bad input.
    pub fn named(name: &str) -> Result<Step, StepError> {
        Step::ALL
            .into_iter()
            .find(|step| step.name() == name)
            .ok_or_else(|| StepError::new(errors::BAD_INPUT, format!("unknown step {name}")))
    }

    pub fn name(self) -> &'static str {
        match self {
            Step::Moderate => "moderate",
            Step::Translate => "translate",
            Step::Stitch => "stitch",
            Step::Finalize => "finalize",
            Step::FailJob => "fail_job",
        }
    }

    /// The failure of a payload that does not fit this step's input: `BadStepInput`, which the
    /// definition catches like any other failure of the step.
    pub fn unfit_payload(self, e: serde_json::Error) -> StepError {
        StepError::new(errors::BAD_INPUT, format!("{}: {e}", self.name()))
    }
}

/// The job a step runs on, as the definition's payload names it: the input of `moderate` and
/// `translate`, and the part every other step's input shares.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct JobRef {
    pub org: String,
    pub video_id: String,
    /// The create request's trace context, which the step's span joins (null while traces are
    /// off).
    #[serde(default, deserialize_with = "text_or_none")]
    pub traceparent: Option<String>,
}

/// The input of the steps after the render (`stitch`, `finalize`): the job and what the render
/// worker handed the execution. The job's fields are its own, not a flattened [`JobRef`], so that
/// a payload without its job fails on the job before the render, as every step's does.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct RenderedJob {
    pub org: String,
    pub video_id: String,
    #[serde(default, deserialize_with = "text_or_none")]
    pub traceparent: Option<String>,
    pub render: RenderResult,
}

impl RenderedJob {
    fn into_parts(self) -> (JobRef, RenderResult) {
        let RenderedJob {
            org,
            video_id,
            traceparent,
            render,
        } = self;
        let job = JobRef {
            org,
            video_id,
            traceparent,
        };
        (job, render)
    }
}

/// A string field that a payload may also leave out, set to null or to something else: only a
/// string counts (what the steps read before their inputs were typed).
fn text_or_none<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    let value = Option::<serde_json::Value>::deserialize(deserializer)?;
    Ok(value.and_then(|v| match v {
        serde_json::Value::String(s) => Some(s),
        _ => None,
    }))
}

/// A step's span, a child of the create request's span through the `traceparent` the state
/// machine passes on (never of whatever span runs the workflow locally); created only while
/// traces are exported.
fn step_span(step: Step, video_id: &str, traceparent: Option<&str>) -> tracing::Span {
    if !crate::observability::trace_context::exporting() {
        return tracing::Span::none();
    }
    let step = step.name();
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

/// Runs `work`, step `step` on `job`, in the step's span and logs the outcome.
async fn traced<T>(
    step: Step,
    job: &JobRef,
    work: impl std::future::Future<Output = Result<T, StepError>>,
) -> Result<T, StepError> {
    let span = step_span(step, &job.video_id, job.traceparent.as_deref());
    let outcome = work.instrument(span.clone()).await;
    let (step, video_id) = (step.name(), &job.video_id);
    match &outcome {
        Ok(_) => tracing::info!(step, video_id = %video_id, "step done"),
        Err(e) => {
            span.record("otel.status_code", "ERROR");
            span.record("error", e.error.as_str());
            tracing::warn!(step, video_id = %video_id, error = %e, "step failed");
        }
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
