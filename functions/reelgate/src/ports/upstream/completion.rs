//! What the upstream port answers for a whole completion: an OpenAI `chat.completion`, typed
//! where the gateway reads it (the choices' messages, their tool calls, the finish reason) and
//! kept as the upstream wrote it elsewhere (each level's other keys in `rest`, passed on).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// An upstream's `chat.completion`. `choices` is required: an answer without it is outside
/// the protocol.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Completion {
    pub choices: Vec<CompletionChoice>,
    /// The upstream's `usage`, read by the billing rules (`ReportedUsage`); absent or `null`
    /// when it reported none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
    /// `id`, `created`, `model`, `system_fingerprint` and anything else, as written.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

impl Completion {
    /// A completion an adapter built as JSON (translated from its provider's answer), or the
    /// protocol error that says why it is none.
    pub fn from_json(answer: Value) -> Result<Completion, super::UpstreamError> {
        serde_json::from_value(answer).map_err(|e| {
            super::UpstreamError::Protocol(format!("the answer is not a chat.completion: {e}"))
        })
    }
}

/// One choice of a completion.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct CompletionChoice {
    #[serde(default)]
    pub index: u64,
    #[serde(default)]
    pub message: CompletionMessage,
    /// `stop`, `length`, `tool_calls`, `content_filter`; `null` while unknown.
    #[serde(default)]
    pub finish_reason: Option<String>,
    /// `logprobs`, an upstream's own keys (vLLM's `stop_reason`), as written.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// The assistant message of a choice. `content` is always written (`null` beside tool calls,
/// as OpenAI writes it).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CompletionMessage {
    #[serde(default = "assistant")]
    pub role: String,
    #[serde(default)]
    pub content: Option<String>,
    /// The model's reasoning, where the upstream returns it (vLLM, Bedrock, DeepSeek).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCall>>,
    /// `refusal`, `annotations`, reelgate's reply extensions (`extension::REASONING_SIGNATURE`).
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

fn assistant() -> String {
    "assistant".to_owned()
}

impl Default for CompletionMessage {
    fn default() -> Self {
        CompletionMessage {
            role: assistant(),
            content: None,
            reasoning_content: None,
            tool_calls: None,
            rest: Map::new(),
        }
    }
}

impl CompletionMessage {
    /// Characters of generated text: content, reasoning and tool calls' names and arguments.
    pub fn generated_chars(&self) -> usize {
        let count = |s: &Option<String>| s.as_ref().map_or(0, |s| s.chars().count());
        let calls: usize = self
            .tool_calls
            .iter()
            .flatten()
            .map(|c| c.function.name.len() + c.function.arguments.chars().count())
            .sum();
        count(&self.content) + count(&self.reasoning_content) + calls
    }
}

/// A function call the model asked for.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ToolCall {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(rename = "type", default = "function")]
    pub kind: String,
    #[serde(default)]
    pub function: FunctionCall,
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

fn function() -> String {
    "function".to_owned()
}

/// The called function: its name and its arguments, a JSON text as the model wrote it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct FunctionCall {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub arguments: String,
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn what_the_gateway_does_not_read_passes_on_as_written() {
        let written = json!({"id": "x", "object": "chat.completion", "created": 1, "model": "m",
            "system_fingerprint": "fp",
            "choices": [{"index": 0, "logprobs": null, "stop_reason": "END",
                "finish_reason": "tool_calls",
                "message": {"role": "assistant", "content": null, "refusal": null,
                    "tool_calls": [{"id": "c1", "type": "function",
                        "function": {"name": "f", "arguments": "{\"a\":1}"}}]}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}});
        let typed: Completion = serde_json::from_value(written.clone()).expect("typed");
        assert_eq!(
            typed.choices[0].finish_reason.as_deref(),
            Some("tool_calls")
        );
        assert_eq!(typed.choices[0].message.generated_chars(), 1 + 7);
        assert_eq!(serde_json::to_value(&typed).expect("json"), written);
    }

    #[test]
    fn an_answer_without_choices_is_refused() {
        assert!(serde_json::from_value::<Completion>(json!({"id": "x"})).is_err());
        assert!(serde_json::from_value::<Completion>(json!({"choices": {}})).is_err());
    }
}
