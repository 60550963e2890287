//! The video workflow's use cases: starting the state machine for an admitted job, the steps it
//! runs (`steps`) and the render worker behind its queue (`worker`), over the [`Pipeline`]
//! context.

pub mod steps;
pub mod worker;

use crate::domain::catalog::providers::Engines;
use crate::domain::SharedContext;
use crate::ports::moderator::Moderator;
use crate::ports::queue::MessageQueue;
use crate::ports::translator::Translator;
use crate::ports::workflow::Workflow;
use std::sync::Arc;

/// What the workflow steps and the render worker use: the use cases' ports ([`SharedContext`])
/// with the render queue, the video engines, the moderator, the translator and the workflow.
/// Built by the assembly (`App::pipeline`); the chat upstreams and the HTTP side are not part
/// of it.
#[derive(Clone)]
pub struct Pipeline {
    pub shared: SharedContext,
    pub render_queue: Arc<dyn MessageQueue>,
    pub engines: Arc<Engines>,
    pub moderator: Arc<dyn Moderator>,
    /// The translator for Japanese prompts, when one is configured.
    pub translator: Option<Arc<dyn Translator>>,
    /// The workflow whose tasks the render worker completes.
    pub workflow: Option<Arc<dyn Workflow>>,
}

impl std::ops::Deref for Pipeline {
    type Target = SharedContext;
    fn deref(&self) -> &SharedContext {
        &self.shared
    }
}
