//! The whole answer of a chat completion as `/v1/chat/completions` writes it, typed: what the
//! OpenAI dialect serializes, and what other dialects (the Messages API) translate from.

use crate::domain::billing::token_charges::ChatUsage;
use crate::ports::upstream::completion::CompletionChoice;
use crate::ports::upstream::Completion;
use serde::{Deserialize, Serialize};
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
    /// The upstream's count (its details as it wrote them), or our estimate in that shape when
    /// it reported none; and `cost`, what the call took from the balance.
    #[schema(value_type = Object)]
    pub usage: CompletionUsage,
    /// Any other field of the upstream's answer, passed on.
    #[serde(flatten)]
    #[schema(ignore)]
    pub rest: Map<String, Value>,
}

impl ChatCompletion {
    /// The upstream's `reply` re-stamped with our `id`, `created` and `model`, showing `usage`
    /// (what the caller is told it used). Its values are moved, not copied.
    pub fn restamped(
        reply: Completion,
        id: &str,
        created: i64,
        model: &str,
        usage: CompletionUsage,
    ) -> ChatCompletion {
        let Completion {
            choices, mut rest, ..
        } = reply;
        for ours in ["id", "object", "created", "model"] {
            rest.remove(ours);
        }
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

/// A completion's `usage` as the caller reads it: the upstream's report with the details it gave
/// (passed on as written), or our estimate in that shape; and what the call cost.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CompletionUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
    /// `cached_tokens` (read from the prompt cache), `cache_write_tokens` (written to it), and
    /// the like.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_details: Option<PromptDetails>,
    /// What the call took from the balance, an exact decimal string in the model's currency;
    /// absent until the charge is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<String>,
    /// `completion_tokens_details` and anything else the upstream reported, as written.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// The prompt's part in a [`CompletionUsage`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PromptDetails {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

impl CompletionUsage {
    /// What to show for an upstream's report that billing read as `counted`: the report as
    /// written (`written`, when it reads as one), else the counts billing read.
    pub fn shown(written: Option<CompletionUsage>, counted: ChatUsage) -> CompletionUsage {
        written.unwrap_or_else(|| CompletionUsage::from(counted))
    }
}

impl From<ChatUsage> for CompletionUsage {
    fn from(u: ChatUsage) -> Self {
        CompletionUsage {
            prompt_tokens: u.prompt_tokens,
            completion_tokens: u.completion_tokens,
            total_tokens: u.total_tokens,
            prompt_tokens_details: u.prompt_tokens_details.map(|d| PromptDetails {
                cached_tokens: Some(d.cached_tokens),
                cache_write_tokens: Some(d.cache_write_tokens),
                rest: Map::new(),
            }),
            cost: None,
            rest: Map::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::billing::token_charges::TokenUsage;
    use serde_json::json;

    fn counted() -> ChatUsage {
        TokenUsage {
            prompt_tokens: 10,
            completion_tokens: 5,
            cached_tokens: 4,
            cache_write_tokens: 0,
            estimated: false,
        }
        .chat_usage()
    }

    #[test]
    fn a_well_formed_report_is_shown_as_written_and_another_as_billing_counted_it() {
        let report = json!({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15,
            "prompt_tokens_details": {"cached_tokens": 4, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 2}});
        let shown = CompletionUsage::shown(CompletionUsage::deserialize(&report).ok(), counted());
        assert_eq!(serde_json::to_value(&shown).expect("json"), report);
        // No total: what billing counted, in the estimate's shape.
        let odd = json!({"prompt_tokens": 10, "completion_tokens": 5,
            "prompt_tokens_details": {"cached_tokens": 4}});
        let shown = CompletionUsage::shown(CompletionUsage::deserialize(&odd).ok(), counted());
        assert_eq!(
            serde_json::to_value(&shown).expect("json"),
            json!({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15,
                   "prompt_tokens_details": {"cached_tokens": 4, "cache_write_tokens": 0}})
        );
    }
}
