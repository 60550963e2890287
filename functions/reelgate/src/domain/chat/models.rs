//! The chat model catalog as the API shows it (`GET /v1/models`, `GET /v1/models/{model}`), and
//! the quick-start discovery of an OpenAI-compatible upstream's models from the environment.

use crate::domain::catalog::ChatModel;
use rust_decimal::Decimal;
use serde::Serialize;
use std::sync::OnceLock;
use utoipa::ToSchema;

/// The upstream id the environment's quick-start upstream is registered under.
pub const ENV_UPSTREAM_ID: &str = "env";

/// OpenAI's model object plus what a caller needs to choose: capabilities, accepted reasoning
/// efforts, context window and token prices.
#[derive(Serialize, ToSchema)]
pub struct ModelObject {
    pub id: String,
    #[schema(value_type = String, pattern = "^model$")]
    pub object: &'static str,
    /// When this process first listed the catalog (the catalog carries no creation time).
    pub created: i64,
    pub owned_by: String,
    /// `text`, `image`, `video`, `audio`, `file`, `tools`, `reasoning`, ...
    pub capabilities: Vec<String>,
    /// The `reasoning_effort` values the model accepts (empty: none).
    pub reasoning_efforts: Vec<String>,
    pub context_window: u32,
    pub pricing: TokenPricing,
}

/// Prices per million tokens, exact decimal strings.
#[derive(Serialize, ToSchema)]
pub struct TokenPricing {
    #[schema(value_type = String)]
    pub input_per_million: Decimal,
    #[schema(value_type = String)]
    pub output_per_million: Decimal,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub cached_input_per_million: Option<Decimal>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub cache_write_per_million: Option<Decimal>,
    pub currency: String,
}

pub fn model_object(model: &ChatModel) -> ModelObject {
    // Stable for the process's life, which is all clients use `created` for.
    static LISTED_AT: OnceLock<i64> = OnceLock::new();
    ModelObject {
        id: model.id.clone(),
        object: "model",
        created: *LISTED_AT.get_or_init(crate::ports::store::now_secs),
        owned_by: model.owned_by.clone().unwrap_or_else(|| "reelgate".into()),
        capabilities: model.capabilities.clone(),
        reasoning_efforts: model.reasoning_efforts.clone(),
        context_window: model.context_window,
        pricing: TokenPricing {
            input_per_million: model.input_per_million,
            output_per_million: model.output_per_million,
            cached_input_per_million: model.cached_input_per_million,
            cache_write_per_million: model.cache_write_per_million,
            currency: model.currency.clone(),
        },
    }
}
