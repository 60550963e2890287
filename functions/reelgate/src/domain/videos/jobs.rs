//! Job state changes shared by the workflow steps and the API: each is a conditional write, so a
//! retried or duplicated step cannot move a job backwards or out of a terminal state.

use crate::domain::error::ApiResult;
use crate::domain::videos::record::{self as job_record, JobStatus};
use crate::domain::Context;
use crate::ports::store::{now_secs, query_all, Query, StoreError, Update};

pub use crate::domain::videos::object::{
    failure_code, failure_message, stored_failure_code, TRANSLATION_NOT_CONFIGURED,
};

/// When a job that ends now is deleted.
fn expiry(cx: Context<'_>, now: i64) -> i64 {
    now + cx.settings.job_retention.as_secs() as i64
}

/// Ends a job as failed with `code`, releasing its reservation (never billed). A job that is
/// already terminal is left as it is; true when this call ended it (and emitted the job's
/// `video.failed` webhook event). The stored code is one of [`failure_code`]'s and the
/// stored message is [`failure_message`]'s sentence for it: `_detail` (a step's own words, a
/// workflow cause) is never shown to the caller nor logged.
pub async fn fail(
    cx: Context<'_>,
    org: &str,
    video_id: &str,
    code: &str,
    _detail: &str,
) -> ApiResult<bool> {
    let stored = stored_failure_code(code);
    let message = failure_message(stored);
    let code = failure_code(code);
    let Some(job) = job_record::load(cx.store, org, video_id).await? else {
        return Ok(false);
    };
    let now = now_secs();
    let update = job_record::failed(stored, message, now, expiry(cx, now));
    match crate::domain::videos::settlement::release(cx.store, org, &job, update).await? {
        crate::domain::videos::settlement::Settlement::Settled => {
            tracing::warn!(%video_id, %code, "video failed; reservation released");
            crate::observability::metrics::video_job(job_record::STATUS_FAILED, code);
            discard_blobs(cx, org, video_id).await;
            crate::domain::videos::events::emit(cx, org, video_id).await;
            Ok(true)
        }
        crate::domain::videos::settlement::Settlement::AlreadySettled => {
            tracing::info!(%video_id, %code, "video already settled; failure not applied");
            Ok(false)
        }
    }
}

/// Deletes what a job that ended without an output, or was never admitted, holds in the blob
/// store (the engine's output, its copies of inputs, intermediate clips): nothing of it is ever
/// served, and an engine that answers with large failing outputs must not fill the store until
/// retention. A delete that fails leaves the blob to the age rule.
pub(crate) async fn discard_blobs(cx: Context<'_>, org: &str, video_id: &str) {
    for key in crate::domain::videos::job_blob_keys(org, video_id) {
        if let Err(e) = cx.blobs.delete(&key).await {
            tracing::warn!(%video_id, %key, error = %e, "a job's blob stays until the age rule");
        }
    }
}

/// Ends a running job as `canceled`, releasing its reservation (never billed); false when it was
/// no longer running (a completion that won the race keeps its charge). Erasure with `--force`
/// uses it; the workflow's next step finds the job terminal and stops.
pub async fn cancel(cx: Context<'_>, org: &str, video_id: &str) -> ApiResult<bool> {
    let Some(job) = job_record::load(cx.store, org, video_id).await? else {
        return Ok(false);
    };
    let now = now_secs();
    let update = job_record::canceled(now, expiry(cx, now));
    let settled = matches!(
        crate::domain::videos::settlement::release(cx.store, org, &job, update).await?,
        crate::domain::videos::settlement::Settlement::Settled
    );
    if settled {
        crate::observability::metrics::video_job(job_record::STATUS_CANCELED, "");
        crate::domain::videos::events::emit(cx, org, video_id).await;
    }
    Ok(settled)
}

/// The ids of an organization's running jobs, those `started_by` started if named (what an
/// erasure must stop first).
pub async fn running(
    cx: Context<'_>,
    org: &str,
    started_by: Option<&str>,
) -> ApiResult<Vec<String>> {
    let query = Query::partition(crate::domain::table_keys::org_pk(org))
        .prefix(crate::domain::table_keys::VIDEO_PREFIX);
    Ok(query_all(cx.store, query)
        .await?
        .iter()
        .filter_map(job_record::JobRecord::from_item)
        .filter(|job| job.status.is_running())
        .filter(|job| started_by.is_none_or(|p| job.person == p))
        .map(|job| job.id)
        .collect())
}

/// What a job whose pipeline stopped without settling it tells the caller.
pub const PIPELINE_STOPPED: &str =
    "The render pipeline stopped before the video finished. You were not charged; resubmit later.";

/// Fails a job as `engine_unavailable` if it is still running (its workflow ended without
/// settling it); true when it did. The reconcilers of ended executions call this.
pub async fn fail_if_running(cx: Context<'_>, org: &str, video_id: &str) -> ApiResult<bool> {
    let Some(job) = job_record::load(cx.store, org, video_id).await? else {
        return Ok(false);
    };
    if !job.status.is_running() {
        return Ok(false);
    }
    tracing::warn!(%video_id, "the workflow ended but the job was running; failing it");
    fail(cx, org, video_id, "engine_unavailable", PIPELINE_STOPPED).await
}

/// Moves a running job to `status` (and sets more attributes); false when it is no longer running.
pub async fn advance(
    cx: Context<'_>,
    org: &str,
    video_id: &str,
    status: JobStatus,
    extra: Update,
) -> ApiResult<bool> {
    match cx
        .store
        .update(
            &crate::domain::table_keys::job(org, video_id),
            job_record::advance(extra, status),
            Some(job_record::is_running()),
        )
        .await
    {
        Ok(_) => Ok(true),
        Err(StoreError::ConditionFailed) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// What a job whose workflow never started tells the caller (the sentence `moderation_unavailable`
/// always carries: the job never got past moderation).
pub const NEVER_STARTED: &str =
    "Moderation was unavailable, so the job was not rendered. You were not charged; resubmit later.";

// The partition of the "admitted, workflow start not yet confirmed" markers. Admission writes a
// marker in the same transaction as the job; a confirmed start (or the job's failure) deletes
// it. A marker that outlives its start — the process died between admission and start — is how
// [`recover_unstarted`] finds the job, on a host with no secondary index. Operational, not
// tenant data: only the recovery pass reads this partition, and each marker names its org.
use crate::domain::table_keys::UNSTARTED_PK;

/// The marker admission puts (with `NotExists`) beside the job.
pub fn unstarted_marker(org: &str, video_id: &str, now: i64) -> crate::ports::store::Item {
    let mut m = crate::ports::store::item(&crate::domain::table_keys::unstarted_marker(video_id));
    m.insert("kind".into(), "unstarted_job".into());
    m.insert("org".into(), org.into());
    m.insert("video_id".into(), video_id.into());
    m.insert("created_at".into(), now.into());
    m
}

async fn clear_marker(cx: Context<'_>, video_id: &str) {
    if let Err(e) = cx
        .store
        .delete(&crate::domain::table_keys::unstarted_marker(video_id), None)
        .await
    {
        // The recovery pass finds the execution and deletes the marker later.
        tracing::warn!(%video_id, error = %e, "could not clear the start marker");
    }
}

/// Starts the render workflow of an admitted job. The execution is named after the job, so a
/// retried start finds the same execution. Without a workflow (a host that only admits), the job
/// waits for one (the recovery pass of a host with a workflow ends it if it waits too long); if
/// the start fails, the job fails as `moderation_unavailable` (it never got past moderation),
/// unbilled, its reservation released.
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
    // `traceparent` (null while traces are off) makes every step and the render spans of this
    // request's trace; the state machine passes it on to each of them.
    let input = serde_json::json!({
        "org": org,
        "video_id": video_id,
        "traceparent": crate::observability::trace_context::current(),
    });
    match workflow.start(video_id, input).await {
        Ok(execution) => {
            // The execution's name, not its ARN (no account id in a log line).
            let execution = execution.rsplit(':').next().unwrap_or_default();
            tracing::info!(%video_id, execution, "workflow started");
            clear_marker(cx, video_id).await;
            Ok(())
        }
        Err(e) => {
            tracing::error!(%video_id, error = %e, "could not start the workflow");
            fail(cx, org, video_id, "moderation_unavailable", NEVER_STARTED).await?;
            clear_marker(cx, video_id).await;
            Ok(())
        }
    }
}

/// The recovery pass: ends every job admitted at least `grace` ago whose workflow never started
/// (its start marker is still there and no execution of its name exists) as `failed` with
/// `moderation_unavailable`, unbilled, its reservation released. Markers of jobs that did start,
/// or already ended, are just removed. Returns how many jobs it failed. Run at start-up (grace
/// zero, before serving) and periodically (a grace well above a start's duration).
pub async fn recover_unstarted(
    cx: Context<'_>,
    workflow: &dyn crate::ports::workflow::Workflow,
    grace: std::time::Duration,
) -> crate::domain::error::ApiResult<usize> {
    let cutoff = now_secs() - grace.as_secs() as i64;
    let mut failed = 0;
    for (org, video_id) in
        crate::domain::table_keys::markers_written_by(cx.store, UNSTARTED_PK, cutoff).await?
    {
        let (org, video_id) = (org.as_str(), video_id.as_str());
        let running = job_record::load(cx.store, org, video_id)
            .await?
            .is_some_and(|job| job.status.is_running());
        if running
            && !workflow.exists(video_id).await.map_err(|e| {
                crate::domain::error::ApiError::internal("recovering unstarted jobs", e)
            })?
        {
            tracing::warn!(%video_id, %org, "admitted job whose workflow never started; failing it");
            fail(cx, org, video_id, "moderation_unavailable", NEVER_STARTED).await?;
            failed += 1;
        }
        clear_marker(cx, video_id).await;
    }
    Ok(failed)
}
