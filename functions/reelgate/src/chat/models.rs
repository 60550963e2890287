//! The chat model catalog as the API shows it (`GET /v1/models`, `GET /v1/models/{model}`), and
//! the quick-start discovery of an OpenAI-compatible upstream's models from the environment.

use crate::accounts::Caller;
use crate::app::App;
use crate::catalog::{Catalog, ChatModel, UpstreamConfig};
use crate::error::{ApiError, ApiResult};
use crate::upstream::openai::OpenAiUpstream;
use axum::extract::{Path, State};
use axum::Json;
use rust_decimal::Decimal;
use serde_json::{json, Value};
use std::sync::OnceLock;

/// The upstream id the environment's quick-start upstream is registered under.
pub const ENV_UPSTREAM_ID: &str = "env";

/// OpenAI's model object plus what a caller needs to choose: capabilities, accepted reasoning
/// efforts, context window and token prices (decimal strings).
pub fn model_object(model: &ChatModel) -> Value {
    // The catalog carries no creation time; the time this process first listed it is stable
    // for the process's life, which is all clients use it for.
    static LISTED_AT: OnceLock<i64> = OnceLock::new();
    let created = *LISTED_AT.get_or_init(crate::store::now_secs);
    json!({
        "id": model.id,
        "object": "model",
        "created": created,
        "owned_by": model.owned_by.clone().unwrap_or_else(|| "reelgate".into()),
        "capabilities": model.capabilities,
        "reasoning_efforts": model.reasoning_efforts,
        "context_window": model.context_window,
        "pricing": {
            "input_per_million": model.input_per_million.to_string(),
            "output_per_million": model.output_per_million.to_string(),
            "currency": model.currency,
        },
    })
}

/// `GET /v1/models`: chat models only (video models are at `/v1/videos/models`).
pub async fn list(State(app): State<App>, _caller: Caller) -> Json<Value> {
    let data: Vec<Value> = app.catalog.chat_models.iter().map(model_object).collect();
    Json(crate::http::list_envelope(
        &data,
        |m| m["id"].as_str().unwrap_or_default().to_owned(),
        false,
    ))
}

/// `GET /v1/models/{model}`: one chat model; a video model or an unknown id is 404.
pub async fn retrieve(
    State(app): State<App>,
    _caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    app.catalog
        .chat_model(&id)
        .map(|m| Json(model_object(m)))
        .ok_or_else(|| {
            ApiError::not_found(
                "model_not_found",
                format!("The model '{id}' does not exist."),
            )
            .with_param("model")
        })
}

/// Quick start: with `REELGATE_UPSTREAM_BASE_URL` set (and `REELGATE_UPSTREAM_API_KEY` when the
/// upstream needs a key), adds an upstream `env` of kind `openai` and, as chat models, every
/// model it lists at `/v1/models`. They get the capabilities `REELGATE_UPSTREAM_CAPABILITIES`
/// names (comma-separated), else `text,tools`; no reasoning efforts and zero prices. Ids the
/// catalog already has (chat or video) are skipped: the catalog's declaration wins. Without the
/// variable this does nothing.
pub async fn discover_upstream_models(catalog: &mut Catalog) -> anyhow::Result<()> {
    let base_url = match std::env::var("REELGATE_UPSTREAM_BASE_URL") {
        Ok(url) if !url.trim().is_empty() => url,
        _ => return Ok(()),
    };
    let capabilities: Vec<String> = std::env::var("REELGATE_UPSTREAM_CAPABILITIES")
        .ok()
        .map(|list| {
            list.split(',')
                .map(|c| c.trim().to_ascii_lowercase())
                .filter(|c| !c.is_empty())
                .collect::<Vec<_>>()
        })
        .filter(|list| !list.is_empty())
        .unwrap_or_else(|| vec!["text".into(), "tools".into()]);
    let key_env = std::env::var("REELGATE_UPSTREAM_API_KEY")
        .ok()
        .filter(|k| !k.is_empty())
        .map(|_| "REELGATE_UPSTREAM_API_KEY".to_owned());
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
            capabilities: capabilities.clone(),
            reasoning_efforts: Vec::new(),
            context_window: 32_768,
            input_per_million: Decimal::ZERO,
            output_per_million: Decimal::ZERO,
            currency: "usd".into(),
            owned_by: Some("upstream".into()),
        });
        added += 1;
    }
    tracing::info!(added, base = %upstream.base(), "chat models discovered from REELGATE_UPSTREAM_BASE_URL");
    Ok(())
}
