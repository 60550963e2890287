//! The port through which the runner hands Task states to the outside world.

use async_trait::async_trait;
use serde_json::{json, Value};

/// Performs Task states. The runner does not know what a Resource does; the dispatcher does.
#[async_trait]
pub trait TaskDispatcher: Send + Sync {
    /// Called for a Task state (again after a retry, and again after a restart if the process
    /// stopped mid-dispatch: delivery is at-least-once).
    ///
    /// * `arn:aws:states:::lambda:invoke`: `parameters` has `FunctionName` and `Payload`; return
    ///   [`TaskOutcome::Completed`] with the function's own return value (the runner wraps it
    ///   as Step Functions does, see [`lambda_invoke_result`]), or a [`TaskFailure`] whose `error`
    ///   is the function's `errorType` (see [`TaskFailure::lambda_function_error`]).
    /// * `….waitForTaskToken` resources (e.g. `arn:aws:states:::sqs:sendMessage.waitForTaskToken`):
    ///   `task_token` is `Some`; deliver the work (the token is usually also inside `parameters`
    ///   via `$$.Task.Token`) and return [`TaskOutcome::AwaitingCallback`]. The task then waits for
    ///   `send_task_success`/`send_task_failure`.
    /// * Any other resource (e.g. `arn:aws:states:::dynamodb:updateItem`): return the service's
    ///   response as `Completed`.
    async fn dispatch(&self, call: TaskCall) -> Result<TaskOutcome, TaskFailure>;
}

/// One dispatch of a Task state.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskCall {
    /// The execution's id (an ARN-shaped string).
    pub execution_id: String,
    /// The Task state's name.
    pub state_name: String,
    /// The Task's `Resource`, after definition substitution.
    pub resource: String,
    /// The effective parameters (`InputPath` then `Parameters` applied).
    pub parameters: Value,
    /// The callback token, for `….waitForTaskToken` resources.
    pub task_token: Option<String>,
    /// 1 for the first attempt, 2 for the first retry, … (`$$.State.RetryCount + 1`). A
    /// re-dispatch after a restart repeats the attempt number.
    pub attempt: u32,
}

/// What a dispatch produced.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskOutcome {
    /// The task finished with this result. For `lambda:invoke` this is the function's return
    /// value; for `….waitForTaskToken` resources the value is discarded (as Step Functions
    /// discards the service response) and the task waits for its callback.
    Completed(Value),
    /// For `….waitForTaskToken`: the task is now waiting for `send_task_success`/`failure`.
    AwaitingCallback,
}

/// A failed task: an error name (matched by `Retry`/`Catch` `ErrorEquals`) and a cause.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{error}: {cause}")]
pub struct TaskFailure {
    /// The error name, e.g. a Lambda function's `errorType` or `Lambda.ServiceException`.
    pub error: String,
    /// The cause, as Step Functions reports it.
    pub cause: String,
}

impl TaskFailure {
    /// A failure with this error name and cause.
    pub fn new(error: impl Into<String>, cause: impl Into<String>) -> Self {
        Self {
            error: error.into(),
            cause: cause.into(),
        }
    }

    /// A Lambda function error as `lambda:invoke` reports it: the error name is the function's
    /// `errorType` and the cause is the JSON error object
    /// (`{"errorMessage": …, "errorType": …, "trace": []}`) as a string.
    pub fn lambda_function_error(error_type: &str, error_message: &str) -> Self {
        let cause = json!({
            "errorMessage": error_message,
            "errorType": error_type,
            "trace": [],
        });
        Self::new(error_type, cause.to_string())
    }
}

/// The result Step Functions' `lambda:invoke` integration produces for a function that returned
/// `payload`: `{"ExecutedVersion": "$LATEST", "Payload": payload, "SdkHttpMetadata": …,
/// "SdkResponseMetadata": …, "StatusCode": 200}`.
pub fn lambda_invoke_result(payload: Value) -> Value {
    json!({
        "ExecutedVersion": "$LATEST",
        "Payload": payload,
        "SdkHttpMetadata": {"HttpStatusCode": 200},
        "SdkResponseMetadata": {"RequestId": "local"},
        "StatusCode": 200,
    })
}
