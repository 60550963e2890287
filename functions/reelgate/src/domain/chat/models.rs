//! The chat model catalog as the API shows it (`GET /v1/models`, `GET /v1/models/{model}`), and
//! the quick-start discovery of an OpenAI-compatible upstream's models from the environment.

use crate::domain::catalog::ChatModel;
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
    let created = *LISTED_AT.get_or_init(crate::ports::store::now_secs);
    let mut pricing = json!({
        "input_per_million": model.input_per_million.to_string(),
        "output_per_million": model.output_per_million.to_string(),
        "currency": model.currency,
    });
    if let Some(cached) = model.cached_input_per_million {
        pricing["cached_input_per_million"] = json!(cached.to_string());
    }
    json!({
        "id": model.id,
        "object": "model",
        "created": created,
        "owned_by": model.owned_by.clone().unwrap_or_else(|| "reelgate".into()),
        "capabilities": model.capabilities,
        "reasoning_efforts": model.reasoning_efforts,
        "context_window": model.context_window,
        "pricing": pricing,
    })
}
