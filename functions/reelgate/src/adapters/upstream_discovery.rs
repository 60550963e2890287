//! Quick-start discovery: the chat models an OpenAI-compatible upstream named by the
//! environment lists, added to the catalog at start-up.

use crate::adapters::openai_upstream::OpenAiUpstream;
use crate::config::UpstreamDiscovery;
use crate::domain::catalog::{Catalog, ChatModel, UpstreamConfig};
use crate::domain::chat::models::ENV_UPSTREAM_ID;
use rust_decimal::Decimal;

/// Quick start: with `REELGATE_UPSTREAM_BASE_URL` set (and `REELGATE_UPSTREAM_API_KEY` when the
/// upstream needs a key), adds an upstream `env` of kind `openai` and, as chat models, every
/// model it lists at `/v1/models`. They get the capabilities `REELGATE_UPSTREAM_CAPABILITIES`
/// names (comma-separated), else `text,tools`; no reasoning efforts and zero prices. Ids the
/// catalog already has (chat or video) are skipped: the catalog's declaration wins. Without the
/// variable this does nothing.
pub async fn discover_upstream_models(
    catalog: &mut Catalog,
    discovery: &UpstreamDiscovery,
) -> anyhow::Result<()> {
    let base_url = discovery.base_url.clone();
    let capabilities = discovery.capabilities.clone();
    // The upstream reads its key by this name when it connects.
    let key_env = discovery
        .has_api_key
        .then(|| "REELGATE_UPSTREAM_API_KEY".to_owned());
    let config = UpstreamConfig {
        id: ENV_UPSTREAM_ID.into(),
        kind: "openai".into(),
        base_url: Some(base_url.clone()),
        api_key_env: key_env,
        region: None,
        extra_headers: Default::default(),
    };
    let upstream = OpenAiUpstream::from_config(&config)?;
    let ids = upstream
        .list_models()
        .await
        .map_err(|e| anyhow::anyhow!("listing the models of {}: {e}", upstream.base()))?;
    if catalog.upstream(ENV_UPSTREAM_ID).is_none() {
        catalog.upstreams.push(config);
    }
    let mut added = 0;
    for id in ids {
        if catalog.chat_model(&id).is_some() || catalog.video_model(&id).is_some() {
            tracing::info!(model = %id, "the catalog already has this id; keeping the catalog's");
            continue;
        }
        catalog.chat_models.push(ChatModel {
            id: id.clone(),
            upstream: ENV_UPSTREAM_ID.into(),
            upstream_model: Some(id),
            deployments: Vec::new(),
            capabilities: capabilities.clone(),
            reasoning_efforts: Vec::new(),
            context_window: 32_768,
            input_per_million: Decimal::ZERO,
            output_per_million: Decimal::ZERO,
            cached_input_per_million: None,
            cache_write_per_million: None,
            auto_cache: false,
            cache_min_tokens: None,
            currency: "usd".into(),
            owned_by: Some("upstream".into()),
        });
        added += 1;
    }
    tracing::info!(added, base = %upstream.base(), "chat models discovered from REELGATE_UPSTREAM_BASE_URL");
    Ok(())
}
