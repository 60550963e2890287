//! Adapters that need neither AWS nor SQLite, so every host links them: the OpenAI-compatible
//! chat upstream and moderator, the rule moderator, the chat-model translator and the client of
//! the HTTP engine protocol and of the OpenAI Videos API. The AWS adapters live in `reelgate-aws`, the embedded ones in
//! `reelgate-embedded`. This module also builds them from the catalog and the configuration.

pub mod anthropic_upstream;
pub mod chat_translator;
pub mod guarded_fetch;
pub mod hosted;
pub mod http_engine;
pub mod issuer_http;
pub mod openai_moderator;
pub mod openai_upstream;
pub mod openai_videos;
pub mod otel;
pub mod pdf_in_process;
pub mod rules_moderator;
pub mod traced;
pub mod upstream_discovery;

use crate::domain::catalog::providers::Engines;
use crate::domain::catalog::{Catalog, UpstreamConfig};
use crate::domain::chat::upstreams::UpstreamConnector;
use crate::ports::engine::VideoEngine;
use crate::ports::moderator::Moderator;
use crate::ports::upstream::{ChatUpstream, UpstreamError};
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Connects catalog upstreams by their `kind`, with the connectors a host links: the HTTP kinds
/// of this crate (`openai`, `anthropic`: [`CatalogConnector::with_http_kinds`]) and those of the
/// host's own crates (`bedrock` from `reelgate-aws`, [`CatalogConnector::with_kind`]). A kind is
/// linked only where a host adds it, so a Lambda function that serves no text model carries none
/// of the upstream adapters.
#[derive(Default, Clone)]
pub struct CatalogConnector {
    kinds: BTreeMap<String, Arc<dyn UpstreamConnector>>,
}

impl CatalogConnector {
    /// A connector of no kind (each kind is added).
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with_kind(mut self, kind: &str, connector: Arc<dyn UpstreamConnector>) -> Self {
        self.kinds.insert(kind.to_owned(), connector);
        self
    }

    /// Adds the kinds spoken over HTTP by this crate's adapters: `openai` (chat completions)
    /// and `anthropic` (the Messages API).
    pub fn with_http_kinds(self) -> Self {
        self.with_kind("openai", Arc::new(OpenAiKind))
            .with_kind("anthropic", Arc::new(AnthropicKind))
    }
}

/// The `openai` kind: an OpenAI-compatible chat completions server.
struct OpenAiKind;

#[async_trait]
impl UpstreamConnector for OpenAiKind {
    async fn connect(
        &self,
        config: &UpstreamConfig,
    ) -> Result<Arc<dyn ChatUpstream>, UpstreamError> {
        Ok(Arc::new(openai_upstream::OpenAiUpstream::from_config(
            config,
        )?))
    }
}

/// The `anthropic` kind: Anthropic's Messages API.
struct AnthropicKind;

#[async_trait]
impl UpstreamConnector for AnthropicKind {
    async fn connect(
        &self,
        config: &UpstreamConfig,
    ) -> Result<Arc<dyn ChatUpstream>, UpstreamError> {
        Ok(Arc::new(
            anthropic_upstream::AnthropicUpstream::from_config(config)?,
        ))
    }
}

#[async_trait]
impl UpstreamConnector for CatalogConnector {
    async fn connect(
        &self,
        config: &UpstreamConfig,
    ) -> Result<Arc<dyn ChatUpstream>, UpstreamError> {
        match self.kinds.get(&config.kind) {
            Some(connector) => connector.connect(config).await,
            None => Err(UpstreamError::Protocol(format!(
                "upstream {} has unknown kind {} (expected openai, anthropic or bedrock; bedrock needs a host \
                 built with reelgate-aws)",
                config.id, config.kind
            ))),
        }
    }
}

/// Builds the moderator ([`moderator_from_config`]'s signature), passed by a host that runs the
/// moderation step ([`crate::app::Host::moderator`]).
pub type ModeratorBuilder =
    fn(&crate::config::ModerationConfig) -> anyhow::Result<Arc<dyn Moderator>>;

/// Builds the catalog's engines ([`engines_from_catalog_with_key`]'s signature), passed by a
/// host that links them ([`crate::app::Host::catalog_engines`]).
pub type CatalogEngines = fn(
    &Catalog,
    Option<&str>,
    Option<&str>,
    Arc<dyn crate::ports::fetch::Fetcher>,
) -> anyhow::Result<Engines>;

/// Builds the catalog's engines. `reference_url` is where a `reference` engine is served
/// (`REELGATE_REFERENCE_ENGINE_URL`, else in-process on the local server).
pub fn engines_from_catalog(
    catalog: &Catalog,
    reference_url: Option<&str>,
) -> anyhow::Result<Engines> {
    engines_from_catalog_with_key(
        catalog,
        reference_url,
        None,
        Arc::new(guarded_fetch::GuardedFetcher::default()),
    )
}

/// As [`engines_from_catalog`]; `reference_key` is the bearer key of the reference engine at
/// `reference_url` when the catalog names none (the local host's in-process engine, whose key
/// is made per process so nothing reaches it through the public listener without it).
pub fn engines_from_catalog_with_key(
    catalog: &Catalog,
    reference_url: Option<&str>,
    reference_key: Option<&str>,
    fetcher: Arc<dyn crate::ports::fetch::Fetcher>,
) -> anyhow::Result<Engines> {
    let engines = Engines::default();
    for e in &catalog.engines {
        let key = e.api_key_env.as_deref().and_then(|n| std::env::var(n).ok());
        let key = match (key, e.kind.as_str()) {
            (None, "reference") => reference_key.map(str::to_owned),
            (key, _) => key,
        };
        let engine: Arc<dyn VideoEngine> = match e.kind.as_str() {
            "http" => {
                let url = e
                    .base_url
                    .as_deref()
                    .map(crate::config::expand_env)
                    .unwrap_or_default();
                if url.is_empty() {
                    tracing::warn!(engine = %e.id, "http engine without base_url; its models answer provider_unavailable");
                    continue;
                }
                Arc::new(http_engine::HttpEngine::new(&url, key)?)
            }
            "reference" => {
                let url = reference_url;
                match url {
                    Some(url) => Arc::new(http_engine::HttpEngine::new(url, key)?),
                    None => {
                        tracing::warn!(engine = %e.id, "no reference engine URL; set REELGATE_REFERENCE_ENGINE_URL");
                        continue;
                    }
                }
            }
            "openai_videos" => Arc::new(openai_videos::OpenAiVideosEngine::from_config(e, key)?),
            "veo" => Arc::new(hosted::veo::VeoEngine::from_config(
                e,
                key,
                fetcher.clone(),
            )?),
            "runway" => Arc::new(hosted::runway::RunwayEngine::from_config(
                e,
                key,
                fetcher.clone(),
            )?),
            "luma" => Arc::new(hosted::luma::LumaEngine::from_config(
                e,
                key,
                fetcher.clone(),
            )?),
            "fal" => Arc::new(hosted::fal::FalEngine::from_config(
                e,
                key,
                fetcher.clone(),
            )?),
            "replicate" => Arc::new(hosted::replicate::ReplicateEngine::from_config(
                e,
                key,
                fetcher.clone(),
            )?),
            "xai" => Arc::new(hosted::xai::XaiEngine::from_config(
                e,
                key,
                fetcher.clone(),
            )?),
            // Registered by the AWS hosts (reelgate-aws), which have S3 for its output.
            "bedrock" => continue,
            other => anyhow::bail!("engine {}: unknown kind {other}", e.id),
        };
        engines.insert(&e.id, engine);
    }
    Ok(engines)
}

/// Builds the configured moderator (`REELGATE_MODERATOR`: `rules`, the default, or `openai`).
pub fn moderator_from_config(
    config: &crate::config::ModerationConfig,
) -> anyhow::Result<Arc<dyn Moderator>> {
    use crate::config::ModerationConfig;
    Ok(match config {
        ModerationConfig::Rules { rules_path } => Arc::new(
            rules_moderator::RuleModerator::from_rules_file(rules_path.as_deref())?,
        ),
        ModerationConfig::OpenAi {
            base_url,
            model,
            api_key,
        } => Arc::new(openai_moderator::OpenAiModerator::new(
            base_url,
            api_key.clone(),
            model,
        )),
    })
}
