//! The video workflow's use cases: starting the state machine for an admitted job, the steps it
//! runs (`steps`) and the render worker behind its queue (`worker`).

pub mod steps;
pub mod worker;

/// Starts the render workflow of an admitted job. The execution is named after the job, so a
/// retried start finds the same execution. Without a workflow (a host that only admits), the job
/// waits for one; if the start fails, the job fails as `engine_unavailable`, unbilled.
pub async fn start_job(
    app: &crate::app::App,
    org: &str,
    video_id: &str,
) -> crate::domain::error::ApiResult<()> {
    let Some(workflow) = app.workflow() else {
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
            crate::domain::jobs::fail(
                app,
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
