//! The workflow step functions, one per step of the video state machine.

use lambda_runtime::{Diagnostic, Error, LambdaEvent};
use serde_json::Value;

use crate::app::{app_or_exit, flush_traces};
use crate::functions;

/// The Lambda error of a failed step: its `errorType` is the step's error name, which the state
/// machine's `Retry`/`Catch` match.
fn step_diagnostic(e: reelgate::domain::videos::workflow::steps::StepError) -> Diagnostic {
    Diagnostic {
        error_type: e.error,
        error_message: e.cause,
    }
}

/// Runs one workflow step per invocation: `handler` is that step's own entry point
/// (`reelgate::domain::videos::workflow::steps::run_moderate`, ...), so the binary links only that
/// step's code.
async fn run_step<F, Fut>(function: &functions::LambdaFunction, handler: F) -> Result<(), Error>
where
    F: Fn(reelgate::domain::videos::workflow::Pipeline, Value) -> Fut + Sync,
    Fut: std::future::Future<
            Output = Result<Value, reelgate::domain::videos::workflow::steps::StepError>,
        > + Send,
{
    let (app, _) = app_or_exit(function).await;
    let (app, handler) = (&app, &handler);
    lambda_runtime::run(lambda_runtime::service_fn(
        move |event: LambdaEvent<Value>| async move {
            let outcome = handler(app.pipeline(), event.payload).await;
            flush_traces().await;
            outcome.map_err(step_diagnostic)
        },
    ))
    .await
}

/// The `moderate` step's function.
pub async fn run_moderate_step() -> Result<(), Error> {
    use reelgate::domain::videos::workflow::steps::run_moderate;
    run_step(&functions::STEP_MODERATE, |p, payload| async move {
        run_moderate(&p, payload).await
    })
    .await
}

/// The `translate` step's function.
pub async fn run_translate_step() -> Result<(), Error> {
    use reelgate::domain::videos::workflow::steps::run_translate;
    run_step(&functions::STEP_TRANSLATE, |p, payload| async move {
        run_translate(&p, payload).await
    })
    .await
}

/// The `stitch` step's function.
pub async fn run_stitch_step() -> Result<(), Error> {
    use reelgate::domain::videos::workflow::steps::run_stitch;
    run_step(&functions::STEP_STITCH, |p, payload| async move {
        run_stitch(&p, payload).await
    })
    .await
}

/// The `finalize` step's function.
pub async fn run_finalize_step() -> Result<(), Error> {
    use reelgate::domain::videos::workflow::steps::run_finalize;
    run_step(&functions::STEP_FINALIZE, |p, payload| async move {
        run_finalize(&p, payload).await
    })
    .await
}

/// The `fail_job` step's function.
pub async fn run_fail_job_step() -> Result<(), Error> {
    use reelgate::domain::videos::workflow::steps::run_fail_job;
    run_step(&functions::STEP_FAIL_JOB, |p, payload| async move {
        run_fail_job(&p, payload).await
    })
    .await
}
