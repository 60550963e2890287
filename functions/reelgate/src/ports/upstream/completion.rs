//! What the upstream port answers: an OpenAI `chat.completion` or, streamed, its
//! `chat.completion.chunk`s, typed where the gateway reads them (the choices' messages or
//! deltas, their tool calls, the finish reason, the usage) and kept as the upstream wrote them
//! elsewhere (each level's other keys in `rest`, passed on).

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
        read(answer, "the answer is not a chat.completion")
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

/// An upstream's `chat.completion.chunk`. A chunk without `choices` (the usage-only last chunk
/// of OpenAI's `include_usage`) has none.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct CompletionChunk {
    #[serde(default)]
    pub choices: Vec<ChunkChoice>,
    /// The upstream's `usage`, on the chunk that reports it; `Some(null)` is written as `null`
    /// (OpenAI's `include_usage` chunks carry `usage: null` before the last).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
    /// `id`, `created`, `model`, reelgate's `extension::ANTHROPIC_EVENT`, and the like.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// One choice of a chunk.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ChunkChoice {
    #[serde(default)]
    pub index: u64,
    #[serde(default)]
    pub delta: Delta,
    /// Set on the choice's last chunk; `null` before.
    #[serde(default)]
    pub finish_reason: Option<String>,
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// What a chunk adds to its choice's message. Each part is written only when the chunk has it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Delta {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCallDelta>>,
    /// `refusal`, reelgate's `extension::REASONING_SIGNATURE`, and the like.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

impl Delta {
    /// Characters of generated text in this piece, counted as [`CompletionMessage`] counts.
    pub fn generated_chars(&self) -> usize {
        let count = |s: &Option<String>| s.as_ref().map_or(0, |s| s.chars().count());
        let calls: usize = self
            .tool_calls
            .iter()
            .flatten()
            .filter_map(|c| c.function.as_ref())
            .map(|f| f.name.as_ref().map_or(0, String::len) + count(&f.arguments))
            .sum();
        count(&self.content) + count(&self.reasoning_content) + calls
    }
}

/// A piece of a tool call: the first names it (`id`, `function.name`), later ones add to its
/// `arguments`; `index` says which call of the message it belongs to.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ToolCallDelta {
    #[serde(default)]
    pub index: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<FunctionDelta>,
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// A piece of a called function's name or arguments.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct FunctionDelta {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<String>,
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

impl CompletionChunk {
    /// A chunk an adapter built as JSON (translated from its provider's events), or the
    /// protocol error that says why it is none.
    pub fn from_json(chunk: Value) -> Result<CompletionChunk, super::UpstreamError> {
        read(chunk, "a chunk is not a chat.completion.chunk")
    }
}

/// `json` read as `T`, or the protocol error that says what it is not.
fn read<T: serde::de::DeserializeOwned>(json: Value, not: &str) -> Result<T, super::UpstreamError> {
    serde_json::from_value(json).map_err(|e| super::UpstreamError::Protocol(format!("{not}: {e}")))
}

/// A native Anthropic upstream's own `message` ([`super::extension::ANTHROPIC_MESSAGE`] on a
/// completion), typed where the gateway writes into it: its id, its model name and its usage
/// (the cost). Everything else is passed on as the upstream wrote it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AnthropicMessage {
    pub id: String,
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Map<String, Value>>,
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// A native Anthropic upstream's own stream event ([`super::extension::ANTHROPIC_EVENT`] on a
/// chunk): its SSE name and its data as written.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AnthropicEvent {
    pub event: String,
    #[serde(default)]
    pub data: Value,
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

    #[test]
    fn a_chunk_passes_on_what_it_carries_and_counts_its_pieces() {
        let written = json!({"id": "x", "object": "chat.completion.chunk", "created": 1,
            "model": "m", "usage": null,
            "choices": [{"index": 0, "logprobs": null, "finish_reason": null,
                "delta": {"content": "Hé", "reasoning_signature": "s",
                    "tool_calls": [{"index": 1, "id": "c", "type": "function",
                        "function": {"name": "f", "arguments": "{\"a\""}}]}}]});
        let typed: CompletionChunk = serde_json::from_value(written.clone()).expect("typed");
        assert_eq!(typed.choices[0].delta.generated_chars(), 2 + 1 + 4);
        assert_eq!(
            typed.choices[0].delta.tool_calls.as_ref().unwrap()[0].index,
            1
        );
        // `usage: null` reads as none: nothing was reported.
        assert!(typed.usage.is_none());
        let mut expected = written;
        expected.as_object_mut().unwrap().remove("usage");
        assert_eq!(serde_json::to_value(&typed).expect("json"), expected);
        let usage_only: CompletionChunk =
            serde_json::from_value(json!({"choices": [], "usage": {"prompt_tokens": 1}}))
                .expect("typed");
        assert!(usage_only.choices.is_empty() && usage_only.usage.is_some());
    }
}
