//! Settling what a crash or an ended execution left behind, so that no job stays non-terminal
//! and no ended job lacks its webhook event: at start-up and then periodically, jobs admitted
//! whose workflow never started and events never queued (`recover_*`); on the sweep's schedule,
//! jobs whose execution ended without settling them ([`reconcile`]).

use crate::journal::SqliteJournal;
use reelgate::app::App;
use reelgate::ports::workflow::Workflow;
use std::time::Duration;

/// The start-up pass, before serving: a job admitted by a process that died before starting
/// its workflow, and a job that ended in a process that died before queueing its webhook event.
pub async fn recover_at_start(app: &App, workflow: &dyn Workflow) -> anyhow::Result<()> {
    let recovered =
        reelgate::domain::videos::jobs::recover_unstarted(app.context(), workflow, Duration::ZERO)
            .await
            .map_err(|e| anyhow::anyhow!("recovering unstarted jobs: {}", e.message))?;
    if recovered > 0 {
        tracing::warn!(
            recovered,
            "failed admitted jobs whose workflow never started"
        );
    }
    reelgate::domain::videos::events::recover_unsent(app.context(), Duration::ZERO)
        .await
        .map_err(|e| anyhow::anyhow!("recovering unsent webhook events: {}", e.message))?;
    Ok(())
}

/// The periodic pass: every `every`, the same recoveries for what is older than `grace` (a
/// start takes far less).
pub async fn run(
    app: App,
    workflow: std::sync::Arc<dyn Workflow>,
    every: Duration,
    grace: Duration,
) {
    loop {
        tokio::time::sleep(every).await;
        if let Err(e) = reelgate::domain::videos::jobs::recover_unstarted(
            app.context(),
            workflow.as_ref(),
            grace,
        )
        .await
        {
            tracing::warn!(error = %e.message, "recovering unstarted jobs failed");
        }
        if let Err(e) = reelgate::domain::videos::events::recover_unsent(app.context(), grace).await
        {
            tracing::warn!(error = %e.message, "recovering unsent webhook events failed");
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
