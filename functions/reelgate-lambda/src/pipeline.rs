//! The shared bootstrap of the pipeline's functions ([`functions::PIPELINE`]): the workflow steps,
//! the queue workers and the reconciler. Each deployed function runs this binary with
//! [`functions::FUNCTION_ENV`] set to its name, and it becomes that function: what it serves is
//! read from its manifest entry, so [`functions::PIPELINE`] is the one list of them.

use lambda_runtime::Error;
use reelgate::domain::videos::workflow::steps::Step;

use crate::functions::{self, LambdaFunction, Serves};

/// The pipeline function called `name` ([`LambdaFunction::binary`]), if it is one of
/// [`functions::PIPELINE`].
pub fn pipeline_function(name: &str) -> Option<&'static LambdaFunction> {
    functions::PIPELINE.iter().find(|f| f.binary == name)
}

/// Runs the pipeline function that [`functions::FUNCTION_ENV`] names; a missing or unknown name
/// ends the process at init, saying which names it takes (a template error, not a request's).
pub async fn run_pipeline() -> Result<(), Error> {
    let name = std::env::var(functions::FUNCTION_ENV).unwrap_or_default();
    let Some(function) = pipeline_function(&name) else {
        let names: Vec<&str> = functions::PIPELINE.iter().map(|f| f.binary).collect();
        eprintln!(
            "{}={name:?} is not a function of this bootstrap; it runs one of: {}",
            functions::FUNCTION_ENV,
            names.join(", ")
        );
        std::process::exit(1);
    };
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

/// A manifest error in [`functions::PIPELINE`]: say which, at init.
fn not_runnable(function: &LambdaFunction, why: &str) -> ! {
    eprintln!(
        "{} is in the pipeline bootstrap but cannot run there: {why}",
        function.binary
    );
    std::process::exit(1);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every pipeline function is selected by its name, and is something this bootstrap runs;
    /// no other name selects one.
    #[test]
    fn every_pipeline_function_is_selected_by_its_name_and_nothing_else_is() {
        for f in functions::PIPELINE {
            let selected = pipeline_function(f.binary)
                .unwrap_or_else(|| panic!("{} is not selectable", f.binary));
            assert_eq!(selected.logical_id, f.logical_id, "{}", f.binary);
            match f.serves {
                Serves::Step { step, .. } => {
                    assert!(Step::named(step).is_ok(), "{}: step {step}", f.binary)
                }
                Serves::RenderWorker | Serves::WebhookWorker | Serves::ExecutionEnded => {}
                other => panic!(
                    "{} serves {other:?}, which the pipeline cannot run",
                    f.binary
                ),
            }
        }
        let mut names: Vec<&str> = functions::PIPELINE.iter().map(|f| f.binary).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), functions::PIPELINE.len(), "a name twice");
        for f in functions::FUNCTIONS {
            if !functions::PIPELINE.iter().any(|p| p.binary == f.binary) {
                assert!(pipeline_function(f.binary).is_none(), "{}", f.binary);
            }
        }
        assert!(pipeline_function("").is_none());
    }
}
