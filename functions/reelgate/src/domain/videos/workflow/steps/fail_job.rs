//! The `fail_job` step: a job the workflow gave up on ends with its failure code, its
//! reservation released.

use super::errors::StepError;
use super::{run_with, JobRef};
use crate::domain::videos::workflow::Pipeline;
use serde_json::{json, Value};

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
