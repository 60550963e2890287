//! The workflow step functions, one per step of the video state machine.

use lambda_runtime::{Diagnostic, Error, LambdaEvent};
use reelgate::domain::videos::workflow::steps::{Step, StepError};
use reelgate::domain::videos::workflow::Pipeline;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::app::{app_or_exit, flush_traces};
use crate::functions;

/// The Lambda error of a failed step: its `errorType` is the step's error name, which the state
/// machine's `Retry`/`Catch` match.
fn step_diagnostic(e: StepError) -> Diagnostic {
    Diagnostic {
        error_type: e.error,
        error_message: e.cause,
    }
}

/// Runs one workflow step per invocation: `handler` is that step's own entry point
/// (`reelgate::domain::videos::workflow::steps::run_moderate`, ...), so the binary links only that
/// step's code. The payload is read into the step's input here, at the edge: one that does not
/// fit fails the step as `BadStepInput`; the runtime writes the step's answer as the JSON the
/// definition reads back.
async fn run_step<I, O, F, Fut>(
    function: &functions::LambdaFunction,
    step: Step,
    handler: F,
) -> Result<(), Error>
where
    I: DeserializeOwned,
    O: Serialize,
    F: Fn(Pipeline, I) -> Fut + Sync,
    Fut: std::future::Future<Output = Result<O, StepError>> + Send,
{
    let (app, _) = app_or_exit(function).await;
    let (app, handler) = (&app, &handler);
    lambda_runtime::run(lambda_runtime::service_fn(
        move |event: LambdaEvent<Value>| async move {
            let outcome = match serde_json::from_value(event.payload) {
                Ok(input) => handler(app.pipeline(), input).await,
                Err(e) => Err(step.unfit_payload(e)),
            };
            flush_traces().await;
            outcome.map_err(step_diagnostic)
        },
    ))
    .await
}

/// The `moderate` step's function.
pub async fn run_moderate_step() -> Result<(), Error> {
    use reelgate::domain::videos::workflow::steps::run_moderate;
    run_step(
        &functions::STEP_MODERATE,
        Step::Moderate,
        |p, job| async move { run_moderate(&p, job).await },
    )
    .await
}

/// The `translate` step's function.
pub async fn run_translate_step() -> Result<(), Error> {
    use reelgate::domain::videos::workflow::steps::run_translate;
    run_step(
        &functions::STEP_TRANSLATE,
        Step::Translate,
        |p, job| async move { run_translate(&p, job).await },
    )
    .await
}

/// The `stitch` step's function.
pub async fn run_stitch_step() -> Result<(), Error> {
    use reelgate::domain::videos::workflow::steps::run_stitch;
    run_step(
        &functions::STEP_STITCH,
        Step::Stitch,
        |p, rendered| async move { run_stitch(&p, rendered).await },
    )
    .await
}

/// The `finalize` step's function.
pub async fn run_finalize_step() -> Result<(), Error> {
    use reelgate::domain::videos::workflow::steps::run_finalize;
    run_step(
        &functions::STEP_FINALIZE,
        Step::Finalize,
        |p, rendered| async move { run_finalize(&p, rendered).await },
    )
    .await
}

/// The `fail_job` step's function.
pub async fn run_fail_job_step() -> Result<(), Error> {
    use reelgate::domain::videos::workflow::steps::run_fail_job;
    run_step(
        &functions::STEP_FAIL_JOB,
        Step::FailJob,
        |p, failed| async move { run_fail_job(&p, failed).await },
    )
    .await
}
