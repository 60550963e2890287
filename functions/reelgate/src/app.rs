//! The application state every handler shares, whichever host (local server or Lambda) runs it.

use crate::ports::blobs::BlobStore;
use crate::domain::catalog::Catalog;
use crate::ports::queue::MessageQueue;
use crate::ports::store::ItemStore;
use crate::ports::workflow::Workflow;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Knobs with their defaults; each is documented in docs/configuration.md.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The URL clients reach this service at (used in presigned local URLs and callbacks).
    pub public_base_url: String,
    /// Largest upload through `POST /v1/files`.
    pub max_upload_bytes: u64,
    /// Largest JSON request body.
    pub max_json_bytes: usize,
    /// Lifetime of presigned URLs handed to engines and upstream models.
    pub presign_ttl: Duration,
    /// Uploaded files expire this long after upload.
    pub file_retention: Duration,
    /// Finished jobs (record, prompt, output, thumbnail) are deleted this long after finishing.
    pub job_retention: Duration,
    /// Chat model (catalog id) that translates Japanese prompts; None refuses them
    /// (`translation_unavailable`).
    pub translation_model: Option<String>,
    /// How often the render worker asks the engine for progress.
    pub render_poll_interval: Duration,
    /// Consecutive failed engine calls before a render fails as `engine_unavailable`.
    pub engine_unreachable_attempts: u32,
    /// Answer `GET /v1/videos/{id}/content` with a redirect to a short-lived blob URL instead of
    /// streaming the MP4 (Lambda's response payload limit is 6 MB; an MP4 can be tens of MB).
    pub content_redirect: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            public_base_url: "http://127.0.0.1:8080".into(),
            max_upload_bytes: 100 * 1000 * 1000,
            max_json_bytes: 32 * 1024 * 1024,
            presign_ttl: Duration::from_secs(15 * 60),
            file_retention: Duration::from_secs(30 * 24 * 3600),
            job_retention: Duration::from_secs(30 * 24 * 3600),
            translation_model: None,
            render_poll_interval: Duration::from_secs(2),
            engine_unreachable_attempts: 5,
            content_redirect: false,
        }
    }
}

impl Settings {
    /// The defaults, overridden by the environment (each variable is documented in
    /// docs/configuration.md). Every host (local server, Lambda) reads the same variables.
    pub fn from_env(public_base_url: &str) -> anyhow::Result<Settings> {
        use anyhow::Context;
        let mut s = Settings {
            public_base_url: public_base_url.to_owned(),
            ..Settings::default()
        };
        let secs = |name: &str| -> anyhow::Result<Option<u64>> {
            match std::env::var(name) {
                Ok(v) if !v.is_empty() => {
                    Ok(Some(v.parse().with_context(|| {
                        format!("{name} must be whole seconds")
                    })?))
                }
                _ => Ok(None),
            }
        };
        if let Some(v) = secs("REELGATE_PRESIGN_TTL_SECS")? {
            s.presign_ttl = Duration::from_secs(v.max(1));
        }
        if let Some(v) = secs("REELGATE_RENDER_POLL_SECS")? {
            s.render_poll_interval = Duration::from_secs(v.max(1));
        }
        if let Ok(v) = std::env::var("REELGATE_MAX_UPLOAD_BYTES") {
            if !v.is_empty() {
                s.max_upload_bytes = v
                    .parse()
                    .context("REELGATE_MAX_UPLOAD_BYTES must be a byte count")?;
            }
        }
        s.translation_model = std::env::var("REELGATE_TRANSLATION_MODEL")
            .ok()
            .filter(|v| !v.is_empty());
        s.content_redirect = matches!(
            std::env::var("REELGATE_CONTENT_REDIRECT").as_deref(),
            Ok("1" | "true")
        );
        Ok(s)
    }
}

#[derive(Clone)]
pub struct App {
    pub store: Arc<dyn ItemStore>,
    pub blobs: Arc<dyn BlobStore>,
    pub render_queue: Arc<dyn MessageQueue>,
    pub catalog: Arc<Catalog>,
    pub settings: Arc<Settings>,
    /// Set once the workflow host is up (the local runner needs the App to dispatch steps).
    workflow: Arc<OnceLock<Arc<dyn Workflow>>>,
    /// Text-model upstreams by catalog id.
    pub upstreams: Arc<crate::domain::registry::Upstreams>,
    /// Video engines by catalog id.
    pub engines: Arc<crate::domain::registry::Engines>,
    pub moderator: Arc<dyn crate::ports::moderator::Moderator>,
    /// An explicit translator; otherwise `settings.translation_model` through its upstream.
    pub translator: Option<Arc<dyn crate::ports::translator::Translator>>,
}

impl App {
    pub fn new(
        store: Arc<dyn ItemStore>,
        blobs: Arc<dyn BlobStore>,
        render_queue: Arc<dyn MessageQueue>,
        catalog: Arc<Catalog>,
        settings: Settings,
    ) -> Self {
        App {
            store,
            blobs,
            render_queue,
            catalog,
            settings: Arc::new(settings),
            workflow: Arc::new(OnceLock::new()),
            upstreams: Arc::new(crate::domain::registry::Upstreams::with_connector(Arc::new(
                crate::adapters::CatalogConnector::new(),
            ))),
            engines: Arc::new(crate::domain::registry::Engines::default()),
            moderator: Arc::new(crate::adapters::rules_moderator::RuleModerator::default()),
            translator: None,
        }
    }

    pub fn set_workflow(&self, workflow: Arc<dyn Workflow>) {
        let _ = self.workflow.set(workflow);
    }

    pub fn workflow(&self) -> Option<Arc<dyn Workflow>> {
        self.workflow.get().cloned()
    }

    /// The translator for Japanese prompts, if one is configured.
    pub fn translator(&self) -> Option<Arc<dyn crate::ports::translator::Translator>> {
        if let Some(t) = &self.translator {
            return Some(t.clone());
        }
        let model = self
            .catalog
            .chat_model(self.settings.translation_model.as_deref()?)?;
        let upstream = self.upstreams.get(&model.upstream)?;
        let name = model
            .upstream_model
            .clone()
            .unwrap_or_else(|| model.id.clone());
        Some(Arc::new(crate::adapters::chat_translator::ChatTranslator::new(
            upstream, &name,
        )))
    }

    pub fn accounts(&self) -> crate::domain::accounts::Accounts<'_> {
        crate::domain::accounts::Accounts::new(self.store.as_ref())
    }
}
