//! The video workflow's use cases: starting the state machine for an admitted job, the steps it
//! runs (`steps`) and the render worker behind its queue (`worker`), over the [`Pipeline`]
//! context.

pub mod steps;
pub mod worker;

use crate::config::Settings;
use crate::domain::catalog::providers::Engines;
use crate::domain::catalog::Catalog;
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
    pub fetcher: Arc<dyn crate::ports::fetch::Fetcher>,
    /// Where terminal jobs' webhook events go (`domain::videos::events::emit`).
    pub webhook_queue: Option<Arc<dyn MessageQueue>>,
}

impl Pipeline {
    pub fn context(&self) -> Context<'_> {
        Context {
            store: self.store.as_ref(),
            blobs: self.blobs.as_ref(),
            catalog: &self.catalog,
            settings: &self.settings,
            fetcher: self.fetcher.as_ref(),
            webhooks: self.webhook_queue.as_deref(),
        }
    }
}
