//! The Workflow port over the embedded ASL runner: `statemachine/video.asl.json` (the same
//! file Step Functions runs) executed in this process, journaled by `journal`, its Task states
//! dispatched to the library's step handlers and the embedded render queue.
//!
//! The runner is built before the App, which holds it as its workflow; the App its steps need
//! is handed to the dispatcher afterwards ([`LocalWorkflow::run_steps_on`]). That late binding
//! lives here, in the one adapter that needs it, so that the App is built in one phase.

use crate::journal::SqliteJournal;
use async_trait::async_trait;
use reelgate::app::App;
use reelgate::domain::videos::workflow::steps::{self, Step, StepError};
use reelgate::domain::videos::workflow::Pipeline;
use reelgate::ports::workflow::{Workflow, WorkflowError};
use reelgate_asl::{
    Runner, RunnerError, RunnerOptions, StateMachine, TaskCall, TaskDispatcher, TaskFailure,
    TaskOutcome,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tracing::Instrument;

/// The workflow definition, compiled in so the binary always runs the file it was built with.
pub const VIDEO_DEFINITION: &str = include_str!("../../../statemachine/video.asl.json");

/// Local values of the definition's `${…}` placeholders (CloudFormation supplies AWS ARNs).
pub fn local_substitutions() -> BTreeMap<String, String> {
    [
        ("ModerateFunctionArn", "local:moderate"),
        ("TranslateFunctionArn", "local:translate"),
        ("StitchFunctionArn", "local:stitch"),
        ("FinalizeFunctionArn", "local:finalize"),
        ("FailJobFunctionArn", "local:fail_job"),
        ("RenderQueueUrl", "local:render"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

/// Maps the definition's resources to local work on the App, which it receives after the App
/// is built.
struct LocalDispatcher {
    app: watch::Receiver<Option<App>>,
}

impl LocalDispatcher {
    /// The App the steps run on. A task dispatched before the host hands it over waits for it
    /// (the host resumes no execution before then, so only a start made in between can).
    async fn app(&self) -> Result<App, TaskFailure> {
        let mut app = self.app.clone();
        let given = app
            .wait_for(Option::is_some)
            .await
            .ok()
            .and_then(|a| a.clone());
        given.ok_or_else(|| {
            TaskFailure::new(
                "States.Runtime",
                "the local host stopped before it ran its workflow steps",
            )
        })
    }
}

#[async_trait]
impl TaskDispatcher for LocalDispatcher {
    async fn dispatch(&self, call: TaskCall) -> Result<TaskOutcome, TaskFailure> {
        let app = self.app().await?;
        match call.resource.as_str() {
            reelgate_asl::LAMBDA_INVOKE => {
                let function = call.parameters["FunctionName"].as_str().unwrap_or_default();
                let step = function.strip_prefix("local:").unwrap_or(function);
                let payload = call
                    .parameters
                    .get("Payload")
                    .cloned()
                    .unwrap_or(Value::Null);
                match run_step_payload(&app.pipeline(), step, payload).await {
                    Ok(result) => Ok(TaskOutcome::Completed(result)),
                    Err(e) => Err(TaskFailure::lambda_function_error(&e.error, &e.cause)),
                }
            }
            "arn:aws:states:::sqs:sendMessage.waitForTaskToken" => {
                let body = match &call.parameters["MessageBody"] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                // Step Functions sends this message itself; the local runner's send is a span
                // of the job's trace, as the message says.
                let span =
                    render_state_span(call.parameters["MessageBody"]["traceparent"].as_str());
                app.render_queue
                    .send(&body, Duration::ZERO)
                    .instrument(span)
                    .await
                    .map_err(|e| TaskFailure::new("SQS.ServiceUnavailable", e.to_string()))?;
                Ok(TaskOutcome::AwaitingCallback)
            }
            other => Err(TaskFailure::new(
                "States.Runtime",
                format!("the local host cannot run resource {other}"),
            )),
        }
    }
}

/// Runs the step the definition's `FunctionName` names on the Lambda `payload` it built, and
/// answers the Lambda's result, as the step's own Lambda function would: the name and the
/// payload are read into the step and its input here, at the edge (a payload that does not fit
/// fails the step as `BadStepInput`), and its answer is written back as JSON.
pub async fn run_step_payload(
    pipeline: &Pipeline,
    step: &str,
    payload: Value,
) -> Result<Value, StepError> {
    let step = Step::named(step)?;
    match step {
        Step::Moderate => typed(step, payload, |job| steps::run_moderate(pipeline, job)).await,
        Step::Translate => typed(step, payload, |job| steps::run_translate(pipeline, job)).await,
        Step::Stitch => typed(step, payload, |job| steps::run_stitch(pipeline, job)).await,
        Step::Finalize => typed(step, payload, |job| steps::run_finalize(pipeline, job)).await,
        Step::FailJob => typed(step, payload, |job| steps::run_fail_job(pipeline, job)).await,
    }
}

/// `run` on `payload` read as its input, its answer written as JSON.
async fn typed<I, O, Fut>(
    step: Step,
    payload: Value,
    run: impl FnOnce(I) -> Fut,
) -> Result<Value, StepError>
where
    I: DeserializeOwned,
    O: Serialize,
    Fut: std::future::Future<Output = Result<O, StepError>>,
{
    let input = serde_json::from_value(payload).map_err(|e| step.unfit_payload(e))?;
    let answer = run(input).await?;
    // The answers are plain strings and booleans, which always serialize; were one not to, the
    // step fails closed, caught by the definition like any other failure.
    serde_json::to_value(answer).map_err(|e| {
        StepError::new(
            steps::errors::BAD_INPUT,
            format!("{}: its answer could not be written: {e}", step.name()),
        )
    })
}

/// The span of the local runner's Render state (created only while traces are exported).
fn render_state_span(traceparent: Option<&str>) -> tracing::Span {
    use reelgate::observability::trace_context;
    if !trace_context::exporting() {
        return tracing::Span::none();
    }
    let span = tracing::info_span!(parent: None, "workflow", otel.name = "state Render");
    trace_context::adopt(&span, traceparent);
    span
}

/// The Workflow port over the embedded runner.
pub struct LocalWorkflow {
    pub runner: Arc<Runner>,
    /// Gives the dispatcher its App ([`LocalWorkflow::run_steps_on`]).
    steps_app: watch::Sender<Option<App>>,
}

impl LocalWorkflow {
    /// The runner of the video definition over `journal`, every wait multiplied by
    /// `time_scale`. No step runs until [`LocalWorkflow::run_steps_on`] gives it the App.
    pub fn new(journal: SqliteJournal, time_scale: f64) -> anyhow::Result<Arc<Self>> {
        let machine =
            StateMachine::load("reelgate-video", VIDEO_DEFINITION, &local_substitutions())?;
        let (steps_app, app) = watch::channel(None);
        let runner = Runner::with_options(
            machine,
            Arc::new(LocalDispatcher { app }),
            Arc::new(journal),
            RunnerOptions::with_time_scale(time_scale),
        );
        Ok(Arc::new(LocalWorkflow { runner, steps_app }))
    }

    /// Runs the workflow's steps on `app`, the App that holds this workflow, from now on.
    pub fn run_steps_on(&self, app: App) {
        self.steps_app.send_replace(Some(app));
    }

    /// Whether `workflow` is this one.
    pub fn is(&self, workflow: &Arc<dyn Workflow>) -> bool {
        std::ptr::addr_eq(Arc::as_ptr(workflow), self as *const Self)
    }
}

fn map_runner(e: RunnerError) -> WorkflowError {
    match e {
        RunnerError::InvalidToken(_) | RunnerError::TaskTimedOut(_) => WorkflowError::InvalidToken,
        other => WorkflowError::Unavailable(other.to_string()),
    }
}

#[async_trait]
impl Workflow for LocalWorkflow {
    async fn start(&self, name: &str, input: Value) -> Result<String, WorkflowError> {
        self.runner
            .start_execution(name, input)
            .await
            .map_err(map_runner)
    }
    async fn exists(&self, name: &str) -> Result<bool, WorkflowError> {
        let id = self.runner.execution_id(name);
        Ok(self
            .runner
            .describe(&id)
            .await
            .map_err(map_runner)?
            .is_some())
    }
    async fn task_success(&self, token: &str, output: Value) -> Result<(), WorkflowError> {
        self.runner
            .send_task_success(token, output)
            .await
            .map_err(map_runner)
    }
    async fn task_failure(
        &self,
        token: &str,
        error: &str,
        cause: &str,
    ) -> Result<(), WorkflowError> {
        self.runner
            .send_task_failure(token, error, cause)
            .await
            .map_err(map_runner)
    }
    async fn task_heartbeat(&self, token: &str) -> Result<(), WorkflowError> {
        self.runner
            .send_task_heartbeat(token)
            .await
            .map_err(map_runner)
    }
    async fn stop(&self, name: &str, cause: &str) -> Result<(), WorkflowError> {
        let id = self.runner.execution_id(name);
        match self
            .runner
            .stop_execution(&id, Some("JobCanceled"), Some(cause))
            .await
        {
            Ok(()) | Err(RunnerError::ExecutionDoesNotExist(_)) => Ok(()),
            Err(e) => Err(map_runner(e)),
        }
    }
}
