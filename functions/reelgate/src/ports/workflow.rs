//! The workflow port: starting the video state machine for an admitted job, resuming a task
//! that waits for a callback, and stopping the execution of a canceled job. Step Functions on AWS; the embedded ASL runner locally.

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
    /// True when an execution named `name` exists (running or ended): the recovery pass asks
    /// this before failing a job whose start it cannot confirm.
    async fn exists(&self, name: &str) -> Result<bool, WorkflowError>;
    async fn task_success(&self, token: &str, output: Value) -> Result<(), WorkflowError>;
    async fn task_failure(
        &self,
        token: &str,
        error: &str,
        cause: &str,
    ) -> Result<(), WorkflowError>;
    async fn task_heartbeat(&self, token: &str) -> Result<(), WorkflowError>;
    /// Stops the execution named `name` (a canceled job): a running execution ends `Aborted`
    /// with `cause`; one that already ended, or never started, is left as it is (not an error).
    async fn stop(&self, name: &str, cause: &str) -> Result<(), WorkflowError>;
}
