//! The whole answer of a chat completion as `/v1/chat/completions` writes it, typed: what the
//! OpenAI dialect serializes, and what other dialects (the Messages API) translate from.

use crate::ports::upstream::completion::CompletionChoice;
use crate::ports::upstream::Completion;
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

/// A `chat.completion` as the caller reads it: the upstream's answer with our id, created time
/// and model name, and usage always present. The choices (and anything else the upstream sent,
/// `system_fingerprint` and the like) pass on as the upstream wrote them.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ChatCompletion {
    pub id: String,
    #[schema(value_type = String, pattern = "^chat\\.completion$")]
    pub object: &'static str,
    pub created: i64,
    pub model: String,
    /// `{index, message, finish_reason, logprobs}` each, as the upstream wrote them.
    #[schema(value_type = Vec<Object>)]
    pub choices: Vec<CompletionChoice>,
    /// `prompt_tokens`, `completion_tokens`, `total_tokens` (and their details): the
    /// upstream's count, or our estimate in that shape when it reported none.
    #[schema(value_type = Object)]
    pub usage: Value,
    /// Any other field of the upstream's answer, passed on.
    #[serde(flatten)]
    #[schema(ignore)]
    pub rest: Map<String, Value>,
}

impl ChatCompletion {
    /// The upstream's `reply` re-stamped with our `id`, `created` and `model`; its usage as it
    /// came (`null` when absent). Its values are moved, not copied.
    pub fn restamped(reply: Completion, id: &str, created: i64, model: &str) -> ChatCompletion {
        let Completion {
            choices,
            usage,
            mut rest,
        } = reply;
        for ours in ["id", "object", "created", "model"] {
            rest.remove(ours);
        }
        let usage = usage.unwrap_or(Value::Null);
        ChatCompletion {
            id: id.to_owned(),
            object: "chat.completion",
            created,
            model: model.to_owned(),
            choices,
            usage,
            rest,
        }
    }
}
