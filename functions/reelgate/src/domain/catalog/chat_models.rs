//! Chat models as the catalog declares them (capabilities, reasoning efforts, context, token
//! prices, deployments) and the upstreams that serve them.

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChatModel {
    pub id: String,
    /// The upstream id serving it (one deployment); a model with several deployments lists
    /// them in `deployments` instead and leaves this empty.
    #[serde(default)]
    pub upstream: String,
    /// The model name the upstream knows it by (defaults to `id`).
    #[serde(default)]
    pub upstream_model: Option<String>,
    /// Several deployments serving the model, spread by weight with fallback
    /// (docs/traffic-control.md).
    #[serde(default)]
    pub deployments: Vec<Deployment>,
    /// `text`, `vision`, `audio`, `video`, `tools`, `json_schema`, `file`.
    #[serde(default = "default_capabilities")]
    pub capabilities: Vec<String>,
    /// Accepted `reasoning_effort` values; empty means the parameter is refused.
    #[serde(default)]
    pub reasoning_efforts: Vec<String>,
    /// Prompt tokens the model accepts (for `truncation: auto`).
    #[serde(default = "default_context")]
    pub context_window: u32,
    /// Price per million input tokens.
    #[serde(default, with = "rust_decimal::serde::str")]
    pub input_per_million: Decimal,
    /// Price per million output tokens.
    #[serde(default, with = "rust_decimal::serde::str")]
    pub output_per_million: Decimal,
    /// Price per million input tokens the upstream reports as read from its prompt cache; unset,
    /// cached tokens cost the input price.
    #[serde(default, with = "rust_decimal::serde::str_option")]
    pub cached_input_per_million: Option<Decimal>,
    /// Price per million input tokens the upstream reports as written to its prompt cache;
    /// unset, written tokens cost the input price.
    #[serde(default, with = "rust_decimal::serde::str_option")]
    pub cache_write_per_million: Option<Decimal>,
    /// Whether the gateway places cache points itself in chat completions and Responses
    /// requests (after the system prompt, after the tools, at the end of the conversation) for
    /// upstreams that take explicit ones (Bedrock Converse, Anthropic).
    #[serde(default)]
    pub auto_cache: bool,
    /// The fewest prompt tokens the model caches (Anthropic's per-model minimum; 1,024 when
    /// unset): the gateway places no cache point before a prefix this long.
    #[serde(default)]
    pub cache_min_tokens: Option<u32>,
    #[serde(default = "default_currency")]
    pub currency: String,
    #[serde(default)]
    pub owned_by: Option<String>,
}

/// One place a chat model is served: an upstream and the name it knows the model by.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Deployment {
    pub upstream: String,
    /// The model name the upstream knows it by (defaults to the chat model's id).
    #[serde(default)]
    pub upstream_model: Option<String>,
    /// Relative share of requests; 0 means a fallback only, tried after every weighted one.
    #[serde(default = "default_weight")]
    pub weight: u32,
    /// What this deployment offers, when narrower than "everything the model declares" (a
    /// provider without vision, say); start-up refuses a deployment that lacks any of the
    /// model's capabilities or reasoning efforts.
    #[serde(default)]
    pub capabilities: Option<Vec<String>>,
    #[serde(default)]
    pub reasoning_efforts: Option<Vec<String>>,
}

impl Deployment {
    /// The upstream-model pair that identifies it in logs and in the health table.
    pub fn label(&self, model_id: &str) -> String {
        format!(
            "{}/{}",
            self.upstream,
            self.upstream_model.as_deref().unwrap_or(model_id)
        )
    }
}

fn default_weight() -> u32 {
    1
}

impl ChatModel {
    /// The model's deployments: its `deployments`, or the one its `upstream` names.
    pub fn deployments(&self) -> Vec<Deployment> {
        if !self.deployments.is_empty() {
            return self.deployments.clone();
        }
        vec![Deployment {
            upstream: self.upstream.clone(),
            upstream_model: self.upstream_model.clone(),
            weight: 1,
            capabilities: None,
            reasoning_efforts: None,
        }]
    }

    /// The upstream and model name of its first deployment (the translator's upstream).
    pub fn primary(&self) -> Deployment {
        self.deployments().swap_remove(0)
    }
}

fn default_capabilities() -> Vec<String> {
    vec!["text".into(), "tools".into()]
}
fn default_context() -> u32 {
    32_768
}
fn default_currency() -> String {
    "usd".into()
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct UpstreamConfig {
    pub id: String,
    /// `openai` (any OpenAI-compatible HTTP server), `anthropic` (Anthropic's Messages API) or
    /// `bedrock` (Converse / ConverseStream).
    pub kind: String,
    #[serde(default)]
    pub base_url: Option<String>,
    /// Name of the environment variable holding the upstream's key.
    #[serde(default)]
    pub api_key_env: Option<String>,
    #[serde(default)]
    pub region: Option<String>,
    #[serde(default)]
    pub extra_headers: BTreeMap<String, String>,
}
