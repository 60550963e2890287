//! The video workflow's use cases: starting the state machine for an admitted job, the steps it
//! runs (`steps`) and the render worker behind its queue (`worker`), over the [`Pipeline`]
//! context.

pub mod steps;
pub mod worker;

use crate::config::Settings;
use crate::domain::catalog::Catalog;
use crate::domain::registry::Engines;
use crate::domain::Context;
use crate::ports::blobs::BlobStore;
use crate::ports::moderator::Moderator;
use crate::ports::queue::MessageQueue;
use crate::ports::store::ItemStore;
use crate::ports::translator::Translator;
use crate::ports::workflow::Workflow;
use std::sync::Arc;

/// What the workflow steps and the render worker use: the stores, the render queue, the video
/// engines, the moderator and the translator, with the catalog and the settings. Built by the
/// assembly (`App::pipeline`); the chat upstreams and the HTTP side are not part of it.
#[derive(Clone)]
pub struct Pipeline {
    pub store: Arc<dyn ItemStore>,
    pub blobs: Arc<dyn BlobStore>,
    pub render_queue: Arc<dyn MessageQueue>,
    pub catalog: Arc<Catalog>,
    pub settings: Arc<Settings>,
    pub engines: Arc<Engines>,
    pub moderator: Arc<dyn Moderator>,
    /// The translator for Japanese prompts, when one is configured.
    pub translator: Option<Arc<dyn Translator>>,
    /// The workflow whose tasks the render worker completes.
    pub workflow: Option<Arc<dyn Workflow>>,
}

impl Pipeline {
    pub fn context(&self) -> Context<'_> {
        Context {
            store: self.store.as_ref(),
            blobs: self.blobs.as_ref(),
            catalog: &self.catalog,
            settings: &self.settings,
        }
    }
}

/// Starts the render workflow of an admitted job. The execution is named after the job, so a
/// retried start finds the same execution. Without a workflow (a host that only admits), the job
/// waits for one; if the start fails, the job fails as `engine_unavailable`, unbilled.
pub async fn start_job(
    cx: Context<'_>,
    workflow: Option<&dyn Workflow>,
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
            crate::domain::jobs::fail(
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
