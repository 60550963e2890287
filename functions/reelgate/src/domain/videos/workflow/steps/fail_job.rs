//! The `fail_job` step: a job the workflow gave up on ends with its failure code, its
//! reservation released.

use super::errors::StepError;
use super::{text_or_none, traced, JobRef, Step};
use crate::domain::videos::workflow::Pipeline;
use serde::{Deserialize, Serialize};

/// The input of the `fail_job` step: the job and the failure code the definition's Pass state
/// chose. The payload's `error` and `cause` (the failed state's raw error) are not read.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct FailedJob {
    #[serde(flatten)]
    pub job: JobRef,
    /// Anything but a string (or none) is `engine_unavailable`.
    #[serde(default, deserialize_with = "text_or_none")]
    pub code: Option<String>,
}

/// What the `fail_job` step answers: the code the job was failed with.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobFailed {
    pub failed: &'static str,
}

/// The `fail_job` step on a job the workflow gave up on.
pub async fn run_fail_job(pipeline: &Pipeline, input: FailedJob) -> Result<JobFailed, StepError> {
    let FailedJob { job, code } = input;
    traced(
        Step::FailJob,
        &job,
        fail_job(pipeline, &job, code.as_deref()),
    )
    .await
}

async fn fail_job(
    pipeline: &Pipeline,
    job: &JobRef,
    code: Option<&str>,
) -> Result<JobFailed, StepError> {
    let code = code.unwrap_or("engine_unavailable");
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
    Ok(JobFailed { failed: code })
}
