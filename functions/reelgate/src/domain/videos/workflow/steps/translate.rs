//! The `translate` step: a Japanese prompt into English for the engine (the job keeps the
//! caller's prompt).

use super::errors::{self, StepError};
use super::{load_running, traced, JobRef, Step};
use crate::domain::videos::record::{self as job_record, JobStatus};
use crate::domain::videos::workflow::Pipeline;
use serde::Serialize;

/// What the `translate` step answers: whether the engine gets a prompt other than the caller's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Translated {
    pub translated: bool,
}

/// The `translate` step on `job`.
pub async fn run_translate(pipeline: &Pipeline, job: JobRef) -> Result<Translated, StepError> {
    traced(Step::Translate, &job, translate(pipeline, &job)).await
}

async fn translate(pipeline: &Pipeline, job: &JobRef) -> Result<Translated, StepError> {
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
    Ok(Translated { translated })
}
