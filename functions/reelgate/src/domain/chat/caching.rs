//! Cache points the gateway places itself, for a model whose catalog entry sets `auto_cache`:
//! OpenAI-shaped callers (chat completions, Responses, the console) have no `cache_control`,
//! yet an agent resends the same system prompt, tools and history every turn. Upstreams with
//! explicit cache points (Bedrock Converse, Anthropic) read them; the others drop them.
//!
//! The prompt's order is tools, system, messages. A point goes after the tools, after the
//! system prompt, and at the end of the conversation (next turn's prefix), each only where the
//! prefix before it reaches the model's minimum: a shorter one cannot be cached, and the
//! provider would write nothing.

use crate::domain::catalog::ChatModel;
use crate::ports::upstream::request::{ChatCompletionRequest, ChatMessage, Role};
use crate::ports::upstream::{extension, CacheAnchor, CachePoint, MAX_CACHE_POINTS};
use serde_json::Value;

/// The fewest tokens a cache point covers when the catalog sets no `cache_min_tokens`
/// (Anthropic's minimum for its Sonnet and Opus models).
pub const DEFAULT_CACHE_MIN_TOKENS: u64 = 1024;

/// Places cache points in `request` for `model`, unless the model does not ask for it or the
/// request already has its own.
pub fn place(model: &ChatModel, request: &mut ChatCompletionRequest) {
    if !model.auto_cache || request.cache_points.is_some() {
        return;
    }
    let points = points(request, min_tokens(model));
    if !points.is_empty() {
        request.cache_points = Some(points);
    }
}

fn min_tokens(model: &ChatModel) -> u64 {
    model
        .cache_min_tokens
        .map_or(DEFAULT_CACHE_MIN_TOKENS, u64::from)
}

/// The characters of a JSON value as the estimate counts them: strings and keys, and the
/// written length of anything else.
fn chars(v: &Value) -> usize {
    match v {
        Value::String(s) => s.len(),
        Value::Array(a) => a.iter().map(chars).sum(),
        Value::Object(o) => o.iter().map(|(k, v)| k.len() + chars(v)).sum(),
        other => other.to_string().len(),
    }
}

/// Four characters a token, as the gateway's other estimates count.
fn tokens(chars: usize) -> u64 {
    chars.div_ceil(4) as u64
}

/// A message's characters as [`chars`] counts the JSON it is sent as: each key it has, with its
/// value.
fn message_chars(m: &ChatMessage) -> usize {
    let text = |key: &str, v: &Option<String>| v.as_ref().map_or(0, |v| key.len() + v.len());
    let json = |key: &str, v: &Option<Value>| v.as_ref().map_or(0, |v| key.len() + chars(v));
    "role".len()
        + m.role.as_str().len()
        + text("name", &m.name)
        + json("content", &m.content)
        + json("tool_calls", &m.tool_calls)
        + text("tool_call_id", &m.tool_call_id)
        + json(extension::REASONING_BLOCKS, &m.reasoning_blocks)
}

fn points(request: &ChatCompletionRequest, min: u64) -> Vec<CachePoint> {
    let mut out = Vec::new();
    let mut prefix = 0u64;
    let point = |anchor| CachePoint { anchor, ttl: None };
    if let Some(tools) = &request.tools {
        prefix += tools.iter().map(|t| tokens(chars(t))).sum::<u64>();
        if !tools.is_empty() && prefix >= min {
            out.push(point(CacheAnchor::Tool {
                index: tools.len() - 1,
            }));
        }
    }
    let messages = &request.messages;
    let message_tokens = |m: &ChatMessage| tokens(message_chars(m));
    let system = messages
        .iter()
        .take_while(|m| matches!(m.role, Role::System | Role::Developer))
        .count();
    if system > 0 {
        let before = prefix;
        prefix += messages[..system].iter().map(message_tokens).sum::<u64>();
        if prefix >= min && prefix > before {
            out.push(point(CacheAnchor::Message {
                index: system - 1,
                part: None,
            }));
        }
    }
    if messages.len() > system {
        let before = prefix;
        prefix += messages[system..].iter().map(message_tokens).sum::<u64>();
        if prefix >= min && prefix > before {
            out.push(point(CacheAnchor::Message {
                index: messages.len() - 1,
                part: None,
            }));
        }
    }
    out.truncate(MAX_CACHE_POINTS);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn model(auto: bool) -> ChatModel {
        let mut m: ChatModel = toml::from_str("id = \"m\"\nupstream = \"u\"").expect("model");
        m.auto_cache = auto;
        m.cache_min_tokens = Some(100);
        m
    }

    /// A request for model `m` from its JSON.
    fn typed(mut v: Value) -> ChatCompletionRequest {
        v["model"] = json!("m");
        serde_json::from_value(v).expect("a chat request")
    }

    fn points_json(request: &ChatCompletionRequest) -> Value {
        serde_json::to_value(&request.cache_points).expect("points")
    }

    /// The estimate counts a typed message as it counted the JSON it is sent as.
    #[test]
    fn a_message_counts_as_its_json_would() {
        let calls = json!([{"id": "1", "function": {"arguments": "{}"}}]);
        let messages = [
            ChatMessage {
                content: Some(Value::Null),
                name: Some("n".into()),
                tool_call_id: Some("c".into()),
                tool_calls: Some(calls),
                reasoning_blocks: Some(json!([{"type": "thinking", "thinking": "hm"}])),
                ..ChatMessage::new(Role::Assistant)
            },
            ChatMessage {
                content: Some(json!("hi")),
                ..ChatMessage::new(Role::User)
            },
        ];
        for m in messages {
            let sent = serde_json::to_value(&m).expect("json");
            assert_eq!(message_chars(&m), chars(&sent), "{sent}");
        }
    }

    fn long(words: usize) -> String {
        "word ".repeat(words)
    }

    #[test]
    fn points_go_after_tools_system_and_the_conversation_once_each_prefix_is_long_enough() {
        let mut request = typed(json!({
            "tools": [{"type": "function", "function": {"name": "a", "description": long(50)}},
                      {"type": "function", "function": {"name": "b", "description": long(50)}}],
            "messages": [{"role": "system", "content": long(100)},
                         {"role": "user", "content": "hi"},
                         {"role": "assistant", "content": "hello"},
                         {"role": "user", "content": "again"}],
        }));
        place(&model(true), &mut request);
        assert_eq!(
            points_json(&request),
            json!([{"after": "tool", "index": 1},
                   {"after": "message", "index": 0},
                   {"after": "message", "index": 3}])
        );
    }

    #[test]
    fn a_short_prompt_gets_none_and_a_model_without_auto_cache_is_left_alone() {
        let mut request = typed(
            json!({"messages": [{"role": "system", "content": "Be brief."},
                                                    {"role": "user", "content": "hi"}]}),
        );
        place(&model(true), &mut request);
        assert_eq!(points_json(&request), Value::Null);
        let mut request = typed(
            json!({"messages": [{"role": "system", "content": long(200)},
                                                    {"role": "user", "content": "hi"}]}),
        );
        place(&model(false), &mut request);
        assert_eq!(points_json(&request), Value::Null);
        // Only the prefixes that reach the minimum: the system prompt (and with it the end).
        place(&model(true), &mut request);
        assert_eq!(
            points_json(&request),
            json!([{"after": "message", "index": 0}, {"after": "message", "index": 1}])
        );
    }

    #[test]
    fn a_request_with_its_own_points_keeps_them() {
        let own = json!([{"after": "message", "index": 0, "ttl": "1h"}]);
        let mut request = typed(
            json!({"messages": [{"role": "system", "content": long(200)}],
                                       extension::CACHE_POINTS: own.clone()}),
        );
        place(&model(true), &mut request);
        assert_eq!(points_json(&request), own);
    }
}
