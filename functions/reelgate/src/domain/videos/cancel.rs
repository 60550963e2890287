//! `POST /v1/videos/{id}/cancel`: ends a job that is still running as `canceled`, unbilled.
//!
//! Order matters. The job is settled first (`jobs::cancel`: `reservation held → released` under
//! a condition, the same condition a completion's charge needs), so a cancel racing a completion
//! settles exactly once: whichever write lands first wins, and the loser changes nothing. Only
//! then is the workflow execution stopped (a reconciler that sees the stopped execution finds the
//! job already terminal) and a render already submitted canceled at its engine. Both are best
//! effort: a workflow step or render poll that still runs finds the job terminal and stops.
//! (`jobs::cancel` emits the job's `video.canceled` webhook event.)

use crate::domain::catalog::providers::Engines;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::videos::Video;
use crate::domain::Context;
use crate::ports::workflow::Workflow;

/// The cause a stopped execution carries.
pub const STOP_CAUSE: &str = "The job was canceled by its organization.";

/// The cancel use case for a caller (`POST /v1/videos/{id}/cancel` and the console): 404 for
/// another organization's or an unknown job, 409 for a terminal one.
pub async fn cancel_for(
    cx: Context<'_>,
    workflow: Option<&dyn Workflow>,
    engines: &Engines,
    caller: &crate::domain::accounts::Caller,
    video_id: &str,
) -> ApiResult<Video> {
    crate::domain::videos::queries::retrieve(cx, &caller.org, video_id).await?;
    let video = cancel(cx, workflow, engines, &caller.org, video_id)
        .await?
        .ok_or_else(|| crate::domain::videos::queries::not_found(video_id))?;
    tracing::info!(%video_id, org = %caller.org, key = %caller.key_id(), "video canceled");
    Ok(video)
}

/// Cancels job `video_id` of `org` and returns it as `GET` would. A job that does not exist is
/// `None` (the caller answers 404); a terminal job, or one a completion settled first, is a 409
/// `conflict`.
pub async fn cancel(
    cx: Context<'_>,
    workflow: Option<&dyn Workflow>,
    engines: &Engines,
    org: &str,
    video_id: &str,
) -> ApiResult<Option<Video>> {
    let Some(before) = crate::domain::videos::record::load(cx.store, org, video_id).await? else {
        return Ok(None);
    };
    let status = before.status.as_str();
    if !before.status.is_running() {
        return Err(terminal(video_id, status));
    }
    if !crate::domain::videos::jobs::cancel(cx, org, video_id).await? {
        // Settled by someone else in between (a completion, a failure): report what it is now.
        let now = crate::domain::videos::record::load(cx.store, org, video_id).await?;
        let status = now.as_ref().map_or("deleted", |j| j.status.as_str());
        return Err(terminal(video_id, status));
    }
    tracing::info!(%video_id, %org, from = %status, "video canceled; reservation released");
    if let Some(workflow) = workflow {
        if let Err(e) = workflow.stop(video_id, STOP_CAUSE).await {
            // The execution's next step or render poll finds the job canceled and ends it.
            tracing::warn!(%video_id, error = %e, "could not stop the workflow execution");
        }
    }
    let Some(after) = crate::domain::videos::record::load(cx.store, org, video_id).await? else {
        return Ok(None);
    };
    // A render already submitted: ask its engine to stop (the worker also cancels it when its
    // next poll finds the job canceled, and when a submit lands after the cancel).
    if let (Some(render_id), Some(engine_id)) =
        (after.render_id.as_deref(), after.engine.as_deref())
    {
        match engines.get(engine_id) {
            Some(engine) => {
                if let Err(e) = engine.cancel(render_id).await {
                    tracing::warn!(%video_id, %render_id, error = %e, "the engine did not cancel the render");
                }
            }
            None => {
                tracing::warn!(%video_id, engine = %engine_id, "no such engine to cancel the render at")
            }
        }
    }
    Ok(Some(Video::of(&after)))
}

fn terminal(video_id: &str, status: &str) -> ApiError {
    ApiError::conflict(format!(
        "Video {video_id} is already {status}; only a video that is still running can be canceled."
    ))
    .with_param("video_id")
}
