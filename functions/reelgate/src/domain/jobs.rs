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

/// The job failure codes of docs/errors.md; anything else a step reports is `engine_unavailable`.
pub fn failure_code(code: &str) -> &'static str {
    match code {
        "moderation_blocked" => "moderation_blocked",
        "moderation_unavailable" => "moderation_unavailable",
        "translation_unavailable" => "translation_unavailable",
        _ => "engine_unavailable",
    }
}

/// The one sentence a failed job's `error.message` carries for its code (docs/security.md):
/// never a workflow cause, an engine's answer or anything else raw.
pub fn failure_message(code: &str) -> &'static str {
    match failure_code(code) {
        "moderation_blocked" => "The prompt or a reference was blocked by moderation. You were not charged.",
        "moderation_unavailable" => "Moderation was unavailable, so the job was not rendered. You were not charged; resubmit later.",
        "translation_unavailable" => "The Japanese prompt could not be translated. You were not charged; resubmit later.",
        _ => "The video engine was unavailable or failed during the render. You were not charged; resubmit later.",
    }
}

/// Ends a job as failed with `code`, releasing its reservation (never billed). A job that is
/// already terminal is left as it is. The stored code is one of [`failure_code`]'s and the
/// stored message is [`failure_message`]'s sentence for it: `_detail` (a step's own words, a
/// workflow cause) is never shown to the caller nor logged.
pub async fn fail(
    cx: Context<'_>,
    org: &str,
    video_id: &str,
    code: &str,
    _detail: &str,
) -> ApiResult<()> {
    let code = failure_code(code);
    let message = failure_message(code);
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
            // The execution's name, not its ARN (no account id in a log line).
            let execution = execution.rsplit(':').next().unwrap_or_default();
            tracing::info!(%video_id, execution, "workflow started");
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
