//! Error types shared by the model, the data-flow functions and the runner.

use std::fmt;

/// Well-known error names of the States language.
pub mod names {
    /// Wildcard: matches every error except `States.Runtime` and `States.DataLimitExceeded`.
    pub const ALL: &str = "States.ALL";
    /// Wildcard for task failures: matches every error except `States.Timeout` (and the two
    /// terminal errors above).
    pub const TASK_FAILED: &str = "States.TaskFailed";
    /// A task ran longer than `TimeoutSeconds`, or the execution ran longer than its own.
    pub const TIMEOUT: &str = "States.Timeout";
    /// A waiting task got no heartbeat for `HeartbeatSeconds`.
    pub const HEARTBEAT_TIMEOUT: &str = "States.HeartbeatTimeout";
    /// Input/output processing failed (missing path, bad data): not retriable, not catchable.
    pub const RUNTIME: &str = "States.Runtime";
    /// Terminal size error; never raised by this runner but never caught by `States.ALL` either.
    pub const DATA_LIMIT_EXCEEDED: &str = "States.DataLimitExceeded";
    /// An intrinsic function failed.
    pub const INTRINSIC_FAILURE: &str = "States.IntrinsicFailure";
    /// `ResultPath` could not be applied to the state's input.
    pub const RESULT_PATH_MATCH_FAILURE: &str = "States.ResultPathMatchFailure";
    /// No Choice rule matched and there is no `Default`.
    pub const NO_CHOICE_MATCHED: &str = "States.NoChoiceMatched";
}

/// A runtime error raised while executing a state: an error name and a cause, exactly what a
/// `Catch` hands on as `{"Error": .., "Cause": ..}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatesError {
    /// Error name, e.g. `States.Timeout` or a task's own name.
    pub error: String,
    /// Human-readable cause (for Lambda function errors: the JSON Step Functions reports).
    pub cause: String,
}

impl StatesError {
    /// An error with the given name and cause.
    pub fn new(error: impl Into<String>, cause: impl Into<String>) -> Self {
        Self {
            error: error.into(),
            cause: cause.into(),
        }
    }

    /// `States.Runtime` with a cause.
    pub fn runtime(cause: impl Into<String>) -> Self {
        Self::new(names::RUNTIME, cause)
    }

    /// `States.IntrinsicFailure` with a cause.
    pub fn intrinsic(cause: impl Into<String>) -> Self {
        Self::new(names::INTRINSIC_FAILURE, cause)
    }
}

impl fmt::Display for StatesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.error, self.cause)
    }
}

impl std::error::Error for StatesError {}

/// A definition that cannot be run: malformed JSON, a missing placeholder value, or a rule of the
/// States language broken. `state` names the offending state when there is one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DefinitionError {
    /// The text is not JSON (after substitution).
    #[error("definition is not valid JSON: {0}")]
    Json(String),
    /// A `${Name}` placeholder has no value in the substitution map.
    #[error("definition substitution ${{{0}}} has no value")]
    MissingSubstitution(String),
    /// A rule of the language is broken.
    #[error("{}", render_invalid(.state.as_deref(), .message))]
    Invalid {
        /// The state the problem is in, if it is inside a state.
        state: Option<String>,
        /// What is wrong.
        message: String,
    },
}

fn render_invalid(state: Option<&str>, message: &str) -> String {
    match state {
        Some(state) => format!("state {state:?}: {message}"),
        None => message.to_string(),
    }
}

impl DefinitionError {
    pub(crate) fn top(message: impl Into<String>) -> Self {
        Self::Invalid {
            state: None,
            message: message.into(),
        }
    }

    pub(crate) fn state(state: &str, message: impl Into<String>) -> Self {
        Self::Invalid {
            state: Some(state.to_string()),
            message: message.into(),
        }
    }
}
