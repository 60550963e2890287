//! The EventBridge-triggered reconciler: jobs whose execution ended without settling them, and
//! the scheduled recovery pass.

use aws_lambda_events::eventbridge::EventBridgeEvent;
use lambda_runtime::{Error, LambdaEvent};
use reelgate::app::App;
use serde_json::{json, Value};

use crate::app::{app_or_exit, flush_traces};
use crate::functions;

/// Handles one EventBridge "Step Functions Execution Status Change" event of the video state
/// machine. An execution that failed, timed out or was aborted normally settled its job in
/// `FailJob`; when it did not (the execution's own time limit, `FailJob` out of retries, an
/// operator's StopExecution), the job would stay running with its reservation held. This fails
/// such a job as `engine_unavailable` and releases the reservation — the AWS counterpart of the
/// local host's `reelgate_embedded::recovery::reconcile`. Returns whether it failed a job.
pub async fn handle_execution_ended(
    app: &App,
    event: &EventBridgeEvent<ExecutionStatusChange>,
) -> anyhow::Result<bool> {
    let detail = &event.detail;
    let status = detail.status.as_str();
    if !matches!(status, "FAILED" | "TIMED_OUT" | "ABORTED") {
        return Ok(false);
    }
    // The execution's name only: its ARN carries the account id, which no log line shows.
    let execution = detail
        .execution_arn
        .as_deref()
        .unwrap_or_default()
        .rsplit(':')
        .next()
        .unwrap_or_default();
    let Some(job) = detail
        .input
        .as_deref()
        .and_then(|text| serde_json::from_str::<ExecutionInput>(text).ok())
    else {
        tracing::warn!(execution, "an ended execution without a job in its input");
        return Ok(false);
    };
    let failed =
        reelgate::domain::videos::jobs::fail_if_running(app.context(), &job.org, &job.video_id)
            .await
            .map_err(|e| anyhow::anyhow!("failing {}: {}", job.video_id, e.message))?;
    if failed {
        tracing::warn!(video_id = %job.video_id, status, execution, "the execution ended while the job was running; failed it");
    }
    Ok(failed)
}

/// The `detail` of a "Step Functions Execution Status Change" event: the fields the reconciler
/// reads (`aws_lambda_events` types the envelope; Step Functions' detail is ours to name).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionStatusChange {
    pub status: String,
    #[serde(default)]
    pub execution_arn: Option<String>,
    /// The execution's input, a JSON string: `{"org", "video_id"}` as `start_job` wrote it.
    #[serde(default)]
    pub input: Option<String>,
}

#[derive(serde::Deserialize)]
struct ExecutionInput {
    org: String,
    video_id: String,
}

/// How old an admitted job whose workflow never started must be before the scheduled recovery
/// pass fails it (a start takes well under a second; the API function's timeout is far below).
pub const RECOVERY_GRACE: std::time::Duration = std::time::Duration::from_secs(300);

/// The scheduled recovery pass (an EventBridge schedule on the reconciler): fails every job
/// admitted more than [`RECOVERY_GRACE`] ago whose execution was never started (the API function
/// died or timed out between admission and `StartExecution`) as `moderation_unavailable`,
/// releasing its reservation, and emits the webhook events of jobs that ended without their
/// event being queued. Returns how many jobs it failed.
pub async fn handle_recovery(app: &App, grace: std::time::Duration) -> anyhow::Result<usize> {
    let workflow = app
        .workflow()
        .ok_or_else(|| anyhow::anyhow!("REELGATE_STATE_MACHINE_ARN is not set"))?;
    let failed =
        reelgate::domain::videos::jobs::recover_unstarted(app.context(), workflow.as_ref(), grace)
            .await
            .map_err(|e| anyhow::anyhow!("recovering unstarted jobs: {}", e.message))?;
    reelgate::domain::videos::events::recover_unsent(app.context(), grace)
        .await
        .map_err(|e| anyhow::anyhow!("recovering unsent webhook events: {}", e.message))?;
    Ok(failed)
}

/// The EventBridge-triggered reconciler: ended executions ("Step Functions Execution Status
/// Change") and, on its schedule ("Scheduled Event"), the recovery pass of jobs whose execution
/// never started. An error makes EventBridge retry the event (its default retry policy), so a
/// store outage does not leave the job running.
pub async fn run_execution_ended() -> Result<(), Error> {
    let (app, _) = app_or_exit(&functions::EXECUTION_ENDED).await;
    let app = &app;
    lambda_runtime::run(lambda_runtime::service_fn(
        move |event: LambdaEvent<Value>| async move {
            let outcome = reconcile(app, event.payload).await;
            flush_traces().await;
            outcome
        },
    ))
    .await
}

/// One reconciler event: the scheduled recovery pass or an ended execution.
async fn reconcile(app: &App, payload: Value) -> Result<Value, Error> {
    if payload["detail-type"] == "Scheduled Event" {
        let failed = handle_recovery(app, RECOVERY_GRACE)
            .await
            .map_err(|e| Error::from(format!("{e:#}")))?;
        return Ok(json!({ "recovered_jobs": failed }));
    }
    let ended: EventBridgeEvent<ExecutionStatusChange> = serde_json::from_value(payload)
        .map_err(|e| Error::from(format!("not an execution status change: {e}")))?;
    let failed = handle_execution_ended(app, &ended)
        .await
        .map_err(|e| Error::from(format!("{e:#}")))?;
    Ok(json!({ "failed_job": failed }))
}
