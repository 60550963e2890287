//! How a step fails: the Step Functions error names the definition's `Retry`/`Catch` match
//! (the constants here), and the one mapping of the domain's errors onto them.

use serde::Serialize;

pub const MODERATION_BLOCKED: &str = "ModerationBlocked";
pub const MODERATION_UNAVAILABLE: &str = "ModerationUnavailable";
pub const TRANSLATION_UNAVAILABLE: &str = "TranslationUnavailable";
pub const ENGINE_UNAVAILABLE: &str = "EngineUnavailable";
pub const ENGINE_OUTPUT_INVALID: &str = "EngineOutputInvalid";
pub const JOB_NOT_RUNNING: &str = "JobNotRunning";
pub const STORE_UNAVAILABLE: &str = "StoreUnavailable";
/// Every conform slot stayed taken (other organizations' clips were served in turn): the
/// workflow retries the step.
pub const CONFORM_BUSY: &str = "ConformBusy";
pub const BAD_INPUT: &str = "BadStepInput";

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepError {
    pub error: String,
    pub cause: String,
}

impl StepError {
    pub fn new(error: &str, cause: impl Into<String>) -> Self {
        StepError {
            error: error.to_owned(),
            cause: cause.into(),
        }
    }
}

impl std::fmt::Display for StepError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.error, self.cause)
    }
}

impl std::error::Error for StepError {}

/// The one mapping of the domain's errors to the state machine's error names: a job that is
/// gone or no longer in a state to continue is `JobNotRunning` (the definition abandons the run),
/// bad input is `BadStepInput`; everything else (the store's failures among them) is
/// `StoreUnavailable`, which the definition retries.
impl From<crate::domain::error::ApiError> for StepError {
    fn from(e: crate::domain::error::ApiError) -> Self {
        use crate::domain::error::ErrorKind;
        let name = match e.kind {
            ErrorKind::NotFound | ErrorKind::Conflict => JOB_NOT_RUNNING,
            ErrorKind::InvalidRequest => BAD_INPUT,
            _ => STORE_UNAVAILABLE,
        };
        StepError::new(name, e.message)
    }
}

impl From<crate::ports::store::StoreError> for StepError {
    fn from(e: crate::ports::store::StoreError) -> Self {
        StepError::new(STORE_UNAVAILABLE, e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::error::ApiError;

    #[test]
    fn domain_errors_map_to_the_state_machines_names() {
        let name = |e: ApiError| StepError::from(e).error;
        assert_eq!(
            name(ApiError::internal("using the store", "down")),
            STORE_UNAVAILABLE
        );
        assert_eq!(name(ApiError::unavailable("x", "later")), STORE_UNAVAILABLE);
        assert_eq!(
            name(ApiError::not_found("video_not_found", "gone")),
            JOB_NOT_RUNNING
        );
        assert_eq!(name(ApiError::conflict("ended")), JOB_NOT_RUNNING);
        assert_eq!(name(ApiError::invalid("org", "bad")), BAD_INPUT);
        let e = StepError::from(ApiError::not_found("video_not_found", "the job is gone"));
        assert_eq!(e.cause, "the job is gone");
    }
}
