//! Job state changes shared by the workflow steps and the API: each is a conditional write, so a
//! retried or duplicated step cannot move a job backwards or out of a terminal state.

use crate::domain::error::ApiResult;
use crate::domain::keys::{job_key, RUNNING};
use crate::domain::Context;
use crate::ports::store::{now_secs, Attr, Condition, ItemExt, StoreError, Update};

fn running() -> Condition {
    Condition::In(
        "status".into(),
        RUNNING.iter().map(|s| Attr::from(*s)).collect(),
    )
}

/// Ends a job as failed with `code`, releasing its reservation (never billed). A job that is
/// already terminal is left as it is.
pub async fn fail(
    cx: Context<'_>,
    org: &str,
    video_id: &str,
    code: &str,
    message: &str,
) -> ApiResult<()> {
    let Some(job) = cx.store.get(&job_key(org, video_id)).await? else {
        return Ok(());
    };
    let quote = job.decimal_attr("cost").unwrap_or_default();
    let now = now_secs();
    let update = Update::new()
        .set("status", crate::domain::keys::STATUS_FAILED)
        .set("error_code", code)
        .set("error_message", message)
        .set("completed_at", now)
        .set(
            crate::ports::store::EXPIRES_AT,
            now + cx.settings.job_retention.as_secs() as i64,
        );
    match crate::domain::billing::release(cx.store, org, video_id, quote, update).await? {
        crate::domain::billing::Settlement::Settled => {
            tracing::warn!(%video_id, %code, "video failed; reservation released");
        }
        crate::domain::billing::Settlement::AlreadySettled => {
            tracing::info!(%video_id, %code, "video already settled; failure not applied");
        }
    }
    Ok(())
}

/// Ends a running job as `canceled`, releasing its reservation (never billed); false when it was
/// no longer running (a completion that won the race keeps its charge). Erasure with `--force`
/// uses it; the workflow's next step finds the job terminal and stops.
pub async fn cancel(cx: Context<'_>, org: &str, video_id: &str) -> ApiResult<bool> {
    let Some(job) = cx.store.get(&job_key(org, video_id)).await? else {
        return Ok(false);
    };
    let quote = job.decimal_attr("cost").unwrap_or_default();
    let now = now_secs();
    let update = Update::new()
        .set("status", crate::domain::keys::STATUS_CANCELED)
        .set("completed_at", now)
        .set(
            crate::ports::store::EXPIRES_AT,
            now + cx.settings.job_retention.as_secs() as i64,
        );
    Ok(matches!(
        crate::domain::billing::release(cx.store, org, video_id, quote, update).await?,
        crate::domain::billing::Settlement::Settled
    ))
}

/// What a job whose pipeline stopped without settling it tells the caller.
pub const PIPELINE_STOPPED: &str =
    "The render pipeline stopped before the video finished. You were not charged; resubmit later.";

/// Fails a job as `engine_unavailable` if it is still running (its workflow ended without
/// settling it); true when it did. The reconcilers of ended executions call this.
pub async fn fail_if_running(cx: Context<'_>, org: &str, video_id: &str) -> ApiResult<bool> {
    let Some(job) = cx.store.get(&job_key(org, video_id)).await? else {
        return Ok(false);
    };
    if !RUNNING.contains(&job.str_attr("status").unwrap_or_default()) {
        return Ok(false);
    }
    tracing::warn!(%video_id, "the workflow ended but the job was running; failing it");
    fail(cx, org, video_id, "engine_unavailable", PIPELINE_STOPPED).await?;
    Ok(true)
}

/// Moves a running job to `status` (and sets more attributes); false when it is no longer running.
pub async fn advance(
    cx: Context<'_>,
    org: &str,
    video_id: &str,
    status: &str,
    extra: Update,
) -> ApiResult<bool> {
    match cx
        .store
        .update(
            &job_key(org, video_id),
            extra.set("status", status),
            Some(running()),
        )
        .await
    {
        Ok(_) => Ok(true),
        Err(StoreError::ConditionFailed) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Starts the render workflow of an admitted job. The execution is named after the job, so a
/// retried start finds the same execution. Without a workflow (a host that only admits), the job
/// waits for one; if the start fails, the job fails as `engine_unavailable`, unbilled.
pub async fn start_job(
    cx: Context<'_>,
    workflow: Option<&dyn crate::ports::workflow::Workflow>,
    org: &str,
    video_id: &str,
) -> crate::domain::error::ApiResult<()> {
    let Some(workflow) = workflow else {
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
            fail(
                cx,
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
