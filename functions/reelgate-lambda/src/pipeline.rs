//! The shared bootstrap of the pipeline's functions ([`functions::PIPELINE`]): the workflow steps,
//! the queue workers and the reconciler. Each deployed function runs this binary with
//! [`functions::FUNCTION_ENV`] set to its name, and it becomes that function.

use lambda_runtime::Error;

use crate::functions;

/// Which of the pipeline's functions a name selects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PipelineFunction {
    Moderate,
    Translate,
    Stitch,
    Finalize,
    FailJob,
    RenderWorker,
    WebhookWorker,
    ExecutionEnded,
}

impl PipelineFunction {
    /// The function named `name` ([`functions::LambdaFunction::binary`]), if it is one of the
    /// pipeline's.
    pub fn named(name: &str) -> Option<Self> {
        use PipelineFunction::*;
        [
            (functions::STEP_MODERATE, Moderate),
            (functions::STEP_TRANSLATE, Translate),
            (functions::STEP_STITCH, Stitch),
            (functions::STEP_FINALIZE, Finalize),
            (functions::STEP_FAIL_JOB, FailJob),
            (functions::RENDER_WORKER, RenderWorker),
            (functions::WEBHOOK_WORKER, WebhookWorker),
            (functions::EXECUTION_ENDED, ExecutionEnded),
        ]
        .into_iter()
        .find(|(f, _)| f.binary == name)
        .map(|(_, which)| which)
    }
}

/// Runs the pipeline function that [`functions::FUNCTION_ENV`] names; a missing or unknown name
/// ends the process at init, saying which names it takes (a template error, not a request's).
pub async fn run_pipeline() -> Result<(), Error> {
    let name = std::env::var(functions::FUNCTION_ENV).unwrap_or_default();
    let Some(which) = PipelineFunction::named(&name) else {
        let names: Vec<&str> = functions::PIPELINE.iter().map(|f| f.binary).collect();
        eprintln!(
            "{}={name:?} is not a function of this bootstrap; it runs one of: {}",
            functions::FUNCTION_ENV,
            names.join(", ")
        );
        std::process::exit(1);
    };
    match which {
        PipelineFunction::Moderate => crate::run_moderate_step().await,
        PipelineFunction::Translate => crate::run_translate_step().await,
        PipelineFunction::Stitch => crate::run_stitch_step().await,
        PipelineFunction::Finalize => crate::run_finalize_step().await,
        PipelineFunction::FailJob => crate::run_fail_job_step().await,
        PipelineFunction::RenderWorker => crate::run_worker().await,
        PipelineFunction::WebhookWorker => crate::run_webhook_worker().await,
        PipelineFunction::ExecutionEnded => crate::run_execution_ended().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pipeline_function_is_selected_by_its_name_and_nothing_else_is() {
        let mut seen = Vec::new();
        for f in functions::PIPELINE {
            let which = PipelineFunction::named(f.binary)
                .unwrap_or_else(|| panic!("{} is not selectable", f.binary));
            assert!(
                !seen.contains(&which),
                "{} selects a function twice",
                f.binary
            );
            seen.push(which);
        }
        for f in functions::FUNCTIONS {
            if !functions::PIPELINE.iter().any(|p| p.binary == f.binary) {
                assert_eq!(PipelineFunction::named(f.binary), None, "{}", f.binary);
            }
        }
        assert_eq!(PipelineFunction::named(""), None);
    }
}
