//! The workflow on Step Functions: one state machine, executions named by the job, and task
//! tokens for the states that wait for a callback (`.waitForTaskToken`).

use crate::errors::{describe, service_code};
use async_trait::async_trait;
use aws_sdk_sfn::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_sfn::Client;
use reelgate::ports::workflow::{Workflow, WorkflowError};
use serde_json::Value;

/// The Step Functions adapter of [`Workflow`].
#[derive(Clone, Debug)]
pub struct StepFunctionsWorkflow {
    client: Client,
    state_machine_arn: String,
}

impl StepFunctionsWorkflow {
    pub fn new(config: &aws_config::SdkConfig, state_machine_arn: &str) -> Self {
        Self::from_client(Client::new(config), state_machine_arn)
    }

    pub fn from_client(client: Client, state_machine_arn: &str) -> Self {
        StepFunctionsWorkflow {
            client,
            state_machine_arn: state_machine_arn.to_owned(),
        }
    }

    pub fn state_machine_arn(&self) -> &str {
        &self.state_machine_arn
    }

    /// The ARN an execution named `name` of this state machine has.
    pub fn execution_arn(&self, name: &str) -> Option<String> {
        let (head, machine) = self.state_machine_arn.split_once(":stateMachine:")?;
        // A version or alias qualifier (`machine:1`) is not part of the execution's ARN.
        let machine = machine.split(':').next()?;
        Some(format!("{head}:execution:{machine}:{name}"))
    }
}

fn unavailable<E, R>(err: SdkError<E, R>) -> WorkflowError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    WorkflowError::Unavailable(describe(&err))
}

fn token_error<E, R>(err: SdkError<E, R>) -> WorkflowError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    match service_code(&err) {
        Some("TaskDoesNotExist" | "InvalidToken" | "TaskTimedOut") => WorkflowError::InvalidToken,
        _ => unavailable(err),
    }
}

#[async_trait]
impl Workflow for StepFunctionsWorkflow {
    async fn start(&self, name: &str, input: Value) -> Result<String, WorkflowError> {
        let result = self
            .client
            .start_execution()
            .state_machine_arn(&self.state_machine_arn)
            .name(name)
            .input(input.to_string())
            .send()
            .await;
        match result {
            Ok(out) => Ok(out.execution_arn().to_owned()),
            Err(e) if service_code(&e) == Some("ExecutionAlreadyExists") => {
                // Started before (a retried request): the execution of that name is the answer.
                let arn = self.execution_arn(name).ok_or_else(|| {
                    WorkflowError::Unavailable(format!(
                        "execution {name} exists, and {} is not a state machine ARN",
                        self.state_machine_arn
                    ))
                })?;
                let described = self
                    .client
                    .describe_execution()
                    .execution_arn(&arn)
                    .send()
                    .await
                    .map_err(unavailable)?;
                Ok(described.execution_arn().to_owned())
            }
            Err(e) => Err(unavailable(e)),
        }
    }

    async fn exists(&self, name: &str) -> Result<bool, WorkflowError> {
        let arn = self.execution_arn(name).ok_or_else(|| {
            WorkflowError::Unavailable(format!(
                "{} is not a state machine ARN",
                self.state_machine_arn
            ))
        })?;
        match self
            .client
            .describe_execution()
            .execution_arn(&arn)
            .send()
            .await
        {
            Ok(_) => Ok(true),
            Err(e) if service_code(&e) == Some("ExecutionDoesNotExist") => Ok(false),
            Err(e) => Err(unavailable(e)),
        }
    }

    async fn task_success(&self, token: &str, output: Value) -> Result<(), WorkflowError> {
        self.client
            .send_task_success()
            .task_token(token)
            .output(output.to_string())
            .send()
            .await
            .map_err(token_error)?;
        Ok(())
    }

    async fn task_failure(
        &self,
        token: &str,
        error: &str,
        cause: &str,
    ) -> Result<(), WorkflowError> {
        self.client
            .send_task_failure()
            .task_token(token)
            .error(error)
            .cause(cause)
            .send()
            .await
            .map_err(token_error)?;
        Ok(())
    }

    async fn task_heartbeat(&self, token: &str) -> Result<(), WorkflowError> {
        self.client
            .send_task_heartbeat()
            .task_token(token)
            .send()
            .await
            .map_err(token_error)?;
        Ok(())
    }

    async fn stop(&self, name: &str, cause: &str) -> Result<(), WorkflowError> {
        let arn = self.execution_arn(name).ok_or_else(|| {
            WorkflowError::Unavailable(format!(
                "{} is not a state machine ARN",
                self.state_machine_arn
            ))
        })?;
        match self
            .client
            .stop_execution()
            .execution_arn(&arn)
            .error("JobCanceled")
            .cause(cause)
            .send()
            .await
        {
            Ok(_) => Ok(()),
            // Never started, or already ended: nothing to stop.
            Err(e) if service_code(&e) == Some("ExecutionDoesNotExist") => Ok(()),
            Err(e) => Err(unavailable(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn execution_arn_follows_the_state_machine() {
        let config = aws_config::SdkConfig::builder()
            .behavior_version(aws_config::BehaviorVersion::latest())
            .build();
        let wf = StepFunctionsWorkflow::new(
            &config,
            "arn:aws:states:us-east-1:000000000000:stateMachine:video",
        );
        assert_eq!(
            wf.execution_arn("job_1").as_deref(),
            Some("arn:aws:states:us-east-1:000000000000:execution:video:job_1")
        );
    }
}
