//! The `translate` step: a Japanese prompt into English for the engine (the job keeps the
//! caller's prompt).

use super::errors::{self, StepError};
use super::{load_running, run_with, JobRef};
use crate::domain::videos::record::{self as job_record, JobStatus};
use crate::domain::videos::workflow::Pipeline;
use serde_json::{json, Value};

/// The `translate` step with its Lambda payload.
pub async fn run_translate(pipeline: &Pipeline, payload: Value) -> Result<Value, StepError> {
    run_with(pipeline, "translate", payload, |p, job, _| async move {
        translate(p, &job).await
    })
    .await
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
