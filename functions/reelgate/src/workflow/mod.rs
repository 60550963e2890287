//! The workflow port: starting the video state machine for an admitted job and resuming a task
//! that waits for a callback. Step Functions on AWS; the embedded ASL runner locally.

pub mod local;
pub mod steps;
pub mod worker;

use async_trait::async_trait;
use serde_json::Value;

#[derive(Debug, thiserror::Error)]
pub enum WorkflowError {
    #[error("the task token is unknown, used or timed out")]
    InvalidToken,
    #[error("the workflow service is unavailable: {0}")]
    Unavailable(String),
}

#[async_trait]
pub trait Workflow: Send + Sync + 'static {
    /// Starts an execution named `name` (idempotent by name); returns its id.
    async fn start(&self, name: &str, input: Value) -> Result<String, WorkflowError>;
    async fn task_success(&self, token: &str, output: Value) -> Result<(), WorkflowError>;
    async fn task_failure(
        &self,
        token: &str,
        error: &str,
        cause: &str,
    ) -> Result<(), WorkflowError>;
    async fn task_heartbeat(&self, token: &str) -> Result<(), WorkflowError>;
}

/// Starts the render workflow of an admitted job. The execution is named after the job, so a
/// retried start finds the same execution. Without a workflow (a host that only admits), the job
/// waits for one; if the start fails, the job fails as `engine_unavailable`, unbilled.
pub async fn start_job(
    app: &crate::app::App,
    org: &str,
    video_id: &str,
) -> crate::error::ApiResult<()> {
    let Some(workflow) = app.workflow() else {
        tracing::warn!(%video_id, "no workflow is configured on this host; the job waits");
        return Ok(());
    };
    let input = serde_json::json!({"org": org, "video_id": video_id});
    match workflow.start(video_id, input).await {
        Ok(execution) => {
            tracing::info!(%video_id, %execution, "workflow started");
            Ok(())
        }
        Err(e) => {
            tracing::error!(%video_id, error = %e, "could not start the workflow");
            crate::jobs::fail(
                app,
                org,
                video_id,
                "engine_unavailable",
                "The render pipeline could not be started. Resubmit later.",
            )
            .await?;
            Ok(())
        }
    }
}
