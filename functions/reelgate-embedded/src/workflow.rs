//! The local workflow host: the embedded ASL runner executing `statemachine/video.asl.json` (the
//! same file Step Functions runs), its journal in the SQLite file, a dispatcher that maps the
//! definition's resources to the library's step handlers and the embedded render queue, the
//! render worker loop, and the retention sweeper.

use crate::db::Database;
use async_trait::async_trait;
use reelgate::app::App;
use reelgate::domain::videos::workflow::{steps, worker};
use reelgate::ports::workflow::{Workflow, WorkflowError};
use reelgate_asl::{
    ExecutionJournal, ExecutionSnapshot, JournalError, Runner, RunnerError, RunnerOptions,
    StateMachine, TaskCall, TaskDispatcher, TaskFailure, TaskOutcome,
};
use rusqlite::{params, OptionalExtension};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument;

/// The workflow definition, compiled in so the binary always runs the file it was built with.
pub const VIDEO_DEFINITION: &str = include_str!("../../../statemachine/video.asl.json");

/// Local values of the definition's `${…}` placeholders (CloudFormation supplies AWS ARNs).
pub fn local_substitutions() -> BTreeMap<String, String> {
    [
        ("ModerateFunctionArn", "local:moderate"),
        ("TranslateFunctionArn", "local:translate"),
        ("FinalizeFunctionArn", "local:finalize"),
        ("FailJobFunctionArn", "local:fail_job"),
        ("RenderQueueUrl", "local:render"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

/// The journal: one row per execution in the shared SQLite file.
pub struct SqliteJournal {
    db: Database,
}

impl SqliteJournal {
    pub fn new(db: Database) -> Self {
        SqliteJournal { db }
    }
}

fn journal_err(e: impl std::fmt::Display) -> JournalError {
    JournalError(e.to_string())
}

#[async_trait]
impl ExecutionJournal for SqliteJournal {
    async fn save(&self, snapshot: &ExecutionSnapshot) -> Result<(), JournalError> {
        let text = serde_json::to_string(snapshot).map_err(journal_err)?;
        let id = snapshot.execution_id.clone();
        let running = !snapshot.is_finished();
        self.db
            .write(move |tx| {
                tx.execute(
                    "INSERT INTO workflow_executions (execution_id, running, snapshot) VALUES (?1, ?2, ?3)
                     ON CONFLICT (execution_id) DO UPDATE SET running = excluded.running, snapshot = excluded.snapshot",
                    params![id, running, text],
                )
            })
            .await
            .map(|_| ())
            .map_err(journal_err)
    }

    async fn load_unfinished(&self) -> Result<Vec<ExecutionSnapshot>, JournalError> {
        let rows: Vec<String> = self
            .db
            .read(|c| {
                let mut stmt =
                    c.prepare("SELECT snapshot FROM workflow_executions WHERE running = 1")?;
                let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
                rows.collect()
            })
            .await
            .map_err(journal_err)?;
        rows.iter()
            .map(|t| serde_json::from_str(t).map_err(journal_err))
            .collect()
    }

    async fn load(&self, execution_id: &str) -> Result<Option<ExecutionSnapshot>, JournalError> {
        self.load_one(execution_id).await
    }
}

impl SqliteJournal {
    /// Deletes executions that finished and started before `before_ms`: their input holds the
    /// job's prompt, which must not outlive the job. Returns how many.
    pub async fn prune_finished(&self, before_ms: i64) -> Result<usize, JournalError> {
        self.db
            .write(move |tx| {
                tx.execute(
                    "DELETE FROM workflow_executions WHERE running = 0 \
                     AND json_extract(snapshot, '$.start_time_ms') < ?1",
                    params![before_ms],
                )
            })
            .await
            .map_err(journal_err)
    }

    /// Executions that ended without succeeding (failed, timed out, aborted).
    pub async fn unsuccessful(&self) -> Result<Vec<ExecutionSnapshot>, JournalError> {
        let rows: Vec<String> = self
            .db
            .read(|c| {
                let mut stmt =
                    c.prepare("SELECT snapshot FROM workflow_executions WHERE running = 0")?;
                let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
                rows.collect()
            })
            .await
            .map_err(journal_err)?;
        let all: Result<Vec<ExecutionSnapshot>, _> = rows
            .iter()
            .map(|t| serde_json::from_str(t).map_err(journal_err))
            .collect();
        Ok(all?
            .into_iter()
            .filter(|s| s.status != reelgate_asl::ExecutionStatus::Succeeded)
            .collect())
    }

    async fn load_one(
        &self,
        execution_id: &str,
    ) -> Result<Option<ExecutionSnapshot>, JournalError> {
        let id = execution_id.to_owned();
        let row: Option<String> = self
            .db
            .read(move |c| {
                c.query_row(
                    "SELECT snapshot FROM workflow_executions WHERE execution_id = ?1",
                    params![id],
                    |r| r.get(0),
                )
                .optional()
            })
            .await
            .map_err(journal_err)?;
        row.map(|t| serde_json::from_str(&t).map_err(journal_err))
            .transpose()
    }
}

/// Maps the definition's resources to local work.
pub struct LocalDispatcher {
    app: App,
}

#[async_trait]
impl TaskDispatcher for LocalDispatcher {
    async fn dispatch(&self, call: TaskCall) -> Result<TaskOutcome, TaskFailure> {
        match call.resource.as_str() {
            reelgate_asl::LAMBDA_INVOKE => {
                let function = call.parameters["FunctionName"].as_str().unwrap_or_default();
                let step = function.strip_prefix("local:").unwrap_or(function);
                let payload = call
                    .parameters
                    .get("Payload")
                    .cloned()
                    .unwrap_or(Value::Null);
                match steps::run_step(&self.app.pipeline(), step, payload).await {
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
                self.app
                    .render_queue
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
    runner: Arc<Runner>,
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

#[derive(Clone, Debug)]
pub struct LocalWorkflowOptions {
    /// Multiplies every wait of the state machine (tests shrink heartbeats and retries).
    pub time_scale: f64,
    /// Render messages handled at once.
    pub workers: usize,
    /// How often expired jobs and files are swept.
    pub sweep_interval: Duration,
    /// How often the recovery pass looks for admitted jobs whose workflow never started.
    pub recovery_interval: Duration,
    /// How old such a job must be before the periodic pass ends it (a start takes far less).
    pub recovery_grace: Duration,
}

impl Default for LocalWorkflowOptions {
    fn default() -> Self {
        LocalWorkflowOptions {
            time_scale: 1.0,
            workers: 2,
            sweep_interval: Duration::from_secs(600),
            recovery_interval: Duration::from_secs(60),
            recovery_grace: Duration::from_secs(300),
        }
    }
}

/// The running local workflow: dropping it does not stop the tasks; call `shutdown`.
pub struct LocalWorkflowHost {
    pub runner: Arc<Runner>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl LocalWorkflowHost {
    pub fn shutdown(&self) {
        self.runner.shutdown();
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl Drop for LocalWorkflowHost {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Starts the runner (resuming unfinished executions), the render workers and the sweeper, and
/// installs the workflow into `app`.
pub async fn start(
    app: &App,
    backend: &crate::host::LocalBackend,
    options: LocalWorkflowOptions,
) -> anyhow::Result<LocalWorkflowHost> {
    let db = &backend.db;
    let backend = backend.clone();
    let machine = StateMachine::load("reelgate-video", VIDEO_DEFINITION, &local_substitutions())?;
    let runner = Runner::with_options(
        machine,
        Arc::new(LocalDispatcher { app: app.clone() }),
        Arc::new(SqliteJournal::new(db.clone())),
        RunnerOptions::with_time_scale(options.time_scale),
    );
    let workflow = Arc::new(LocalWorkflow {
        runner: runner.clone(),
    });
    app.set_workflow(workflow.clone());
    let resumed = runner.resume_unfinished().await?;
    if resumed > 0 {
        tracing::info!(resumed, "resumed unfinished video executions");
    }
    // Before serving: a job admitted by a process that died before starting its workflow.
    let recovered = reelgate::domain::videos::jobs::recover_unstarted(
        app.context(),
        workflow.as_ref(),
        Duration::ZERO,
    )
    .await
    .map_err(|e| anyhow::anyhow!("recovering unstarted jobs: {}", e.message))?;
    if recovered > 0 {
        tracing::warn!(
            recovered,
            "failed admitted jobs whose workflow never started"
        );
    }
    // A job that ended in a process that died before queueing its webhook event.
    reelgate::domain::webhooks::recover_unsent(app.context(), Duration::ZERO)
        .await
        .map_err(|e| anyhow::anyhow!("recovering unsent webhook events: {}", e.message))?;
    let mut tasks = Vec::new();
    let (recovery_app, every, grace) = (
        app.clone(),
        options.recovery_interval,
        options.recovery_grace,
    );
    tasks.push(tokio::spawn(async move {
        loop {
            tokio::time::sleep(every).await;
            if let Err(e) = reelgate::domain::videos::jobs::recover_unstarted(
                recovery_app.context(),
                workflow.as_ref(),
                grace,
            )
            .await
            {
                tracing::warn!(error = %e.message, "recovering unstarted jobs failed");
            }
            if let Err(e) =
                reelgate::domain::webhooks::recover_unsent(recovery_app.context(), grace).await
            {
                tracing::warn!(error = %e.message, "recovering unsent webhook events failed");
            }
        }
    }));
    for n in 0..options.workers.max(1) {
        let app = app.clone();
        tasks.push(tokio::spawn(async move { worker_loop(app, n).await }));
    }
    let webhook_app = app.clone();
    tasks.push(tokio::spawn(async move { webhook_loop(webhook_app).await }));
    let (sweep_app, interval) = (app.clone(), options.sweep_interval);
    let journal = SqliteJournal::new(db.clone());
    tasks.push(tokio::spawn(async move {
        loop {
            let now = reelgate::ports::store::now_secs();
            if let Err(e) = crate::retention::sweep(&backend, now).await {
                tracing::warn!(error = %e, "retention sweep failed");
            }
            if let Err(e) = reconcile(&sweep_app, &journal).await {
                tracing::warn!(error = %e, "reconciling ended executions failed");
            }
            tokio::time::sleep(interval).await;
        }
    }));
    Ok(LocalWorkflowHost { runner, tasks })
}

/// The local render worker: the stand-in for the SQS-triggered worker Lambda.
async fn worker_loop(app: App, n: usize) {
    let visibility = app.settings.render_visibility;
    loop {
        let batch = match app
            .render_queue
            .receive(1, visibility, Duration::from_secs(2))
            .await
        {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!(worker = n, error = %e, "render queue receive failed");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        for message in batch {
            match worker::handle(&app.pipeline(), &message.body).await {
                worker::Disposition::Done => {
                    if let Err(e) = app.render_queue.delete(&message.receipt).await {
                        tracing::warn!(error = %e, "could not delete a handled render message");
                    }
                }
                worker::Disposition::Retry => {
                    let _ = app
                        .render_queue
                        .change_visibility(&message.receipt, app.settings.render_poll_interval)
                        .await;
                }
            }
        }
    }
}

/// Deliveries the local webhook worker runs at once. Each holds its endpoint's and its
/// organization's slot (`webhooks::ENDPOINT_IN_FLIGHT`, `ORG_IN_FLIGHT`) for at most the POST's
/// 10 s, so one organization never holds more than `ORG_IN_FLIGHT` of these.
pub const WEBHOOK_WORKERS: usize = 32;

/// The local webhook delivery worker: the stand-in for the SQS-triggered webhook Lambda. Every
/// message is handled in a task of its own as soon as a worker is free: nothing waits for the
/// slowest delivery of a batch.
async fn webhook_loop(app: App) {
    let Some(queue) = app.webhook_queue.clone() else {
        return;
    };
    let workers = Arc::new(tokio::sync::Semaphore::new(WEBHOOK_WORKERS));
    loop {
        // Wait for a free worker before taking messages off the queue.
        let Ok(first) = workers.clone().acquire_owned().await else {
            return;
        };
        let free = workers.available_permits() + 1;
        let batch = match queue
            .receive(
                free.min(10),
                Duration::from_secs(60),
                Duration::from_secs(2),
            )
            .await
        {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!(error = %e, "webhook queue receive failed");
                drop(first);
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        let mut first = Some(first);
        for message in batch {
            let permit = match first.take() {
                Some(p) => p,
                // Free: only this loop takes permits, and it received no more than were free.
                None => match workers.clone().acquire_owned().await {
                    Ok(p) => p,
                    Err(_) => return,
                },
            };
            let (app, queue) = (app.clone(), queue.clone());
            tokio::spawn(async move {
                let _permit = permit;
                let outcome = reelgate::domain::webhooks::deliver(
                    app.context(),
                    queue.as_ref(),
                    &message.body,
                )
                .await;
                match outcome {
                    Ok(()) => {
                        if let Err(e) = queue.delete(&message.receipt).await {
                            tracing::warn!(error = %e, "could not delete a handled webhook message");
                        }
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "webhook message will be retried");
                        let _ = queue
                            .change_visibility(&message.receipt, Duration::from_secs(5))
                            .await;
                    }
                }
            });
        }
    }
}

/// Ends jobs whose execution ended without settling them (for instance a `FailJob` step that
/// exhausted its retries): no job stays non-terminal once its workflow is over. Returns how many
/// jobs it failed.
pub async fn reconcile(app: &App, journal: &SqliteJournal) -> anyhow::Result<usize> {
    let mut failed = 0;
    for execution in journal.unsuccessful().await? {
        let (Some(org), Some(video_id)) = (
            execution.input["org"].as_str(),
            execution.input["video_id"].as_str(),
        ) else {
            continue;
        };
        if reelgate::domain::videos::jobs::fail_if_running(app.context(), org, video_id).await? {
            tracing::warn!(execution = %reelgate_asl::runner::log_name(&execution.execution_id), "reconciled a job its execution left running");
            failed += 1;
        }
    }
    Ok(failed)
}
