//! The shared bootstrap of the pipeline's functions ([`functions::PIPELINE`]): the workflow steps,
//! the queue workers and the reconciler. What each serves is read from its manifest entry, so
//! [`functions::PIPELINE`] is the one list of them.

use lambda_runtime::Error;
use reelgate::domain::videos::workflow::steps::Step;

use crate::functions::{self, Serves};
use crate::shared::{not_runnable, selected_member};

/// Runs the pipeline function that [`functions::FUNCTION_ENV`] names.
pub async fn run_pipeline() -> Result<(), Error> {
    let function = selected_member(&functions::PIPELINE);
    match function.serves {
        Serves::Step { step, .. } => match Step::named(step) {
            Ok(Step::Moderate) => crate::run_moderate_step().await,
            Ok(Step::Translate) => crate::run_translate_step().await,
            Ok(Step::Stitch) => crate::run_stitch_step().await,
            Ok(Step::Finalize) => crate::run_finalize_step().await,
            Ok(Step::FailJob) => crate::run_fail_job_step().await,
            Err(e) => not_runnable(function, &e.cause),
        },
        Serves::RenderWorker => crate::run_worker().await,
        Serves::WebhookWorker => crate::run_webhook_worker().await,
        Serves::ExecutionEnded => crate::run_execution_ended().await,
        other => not_runnable(function, &format!("it serves {other:?}")),
    }
}

/// Whether the pipeline bootstrap can run `f`.
#[cfg(test)]
pub(crate) fn runs(f: &functions::LambdaFunction) -> bool {
    match f.serves {
        Serves::Step { step, .. } => Step::named(step).is_ok(),
        Serves::RenderWorker | Serves::WebhookWorker | Serves::ExecutionEnded => true,
        _ => false,
    }
}
