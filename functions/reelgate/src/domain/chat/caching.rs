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
use crate::ports::upstream::{extension, CacheAnchor, CachePoint, MAX_CACHE_POINTS};
use serde_json::Value;

/// The fewest tokens a cache point covers when the catalog sets no `cache_min_tokens`
/// (Anthropic's minimum for its Sonnet and Opus models).
pub const DEFAULT_CACHE_MIN_TOKENS: u64 = 1024;

/// Places cache points in the internal chat request `request` (the port's JSON) for `model`,
/// unless the model does not ask for it or the request already has its own.
pub fn place(model: &ChatModel, request: &mut Value) {
    if !model.auto_cache || request.get(extension::CACHE_POINTS).is_some() {
        return;
    }
    let points = points(request, min_tokens(model));
    if !points.is_empty() {
        if let Ok(v) = serde_json::to_value(&points) {
            request[extension::CACHE_POINTS] = v;
        }
    }
}

fn min_tokens(model: &ChatModel) -> u64 {
    model
        .cache_min_tokens
        .map_or(DEFAULT_CACHE_MIN_TOKENS, u64::from)
}

/// Four characters a token, as the gateway's other estimates count.
fn tokens(v: &Value) -> u64 {
    fn chars(v: &Value) -> usize {
        match v {
            Value::String(s) => s.len(),
            Value::Array(a) => a.iter().map(chars).sum(),
            Value::Object(o) => o.iter().map(|(k, v)| k.len() + chars(v)).sum(),
            other => other.to_string().len(),
        }
    }
    chars(v).div_ceil(4) as u64
}

fn points(request: &Value, min: u64) -> Vec<CachePoint> {
    let mut out = Vec::new();
    let mut prefix = 0u64;
    let point = |anchor| CachePoint { anchor, ttl: None };
    if let Some(tools) = request.get("tools").and_then(Value::as_array) {
        prefix += tools.iter().map(tokens).sum::<u64>();
        if !tools.is_empty() && prefix >= min {
            out.push(point(CacheAnchor::Tool {
                index: tools.len() - 1,
            }));
        }
    }
    let messages = request
        .get("messages")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let system = messages
        .iter()
        .take_while(|m| matches!(m["role"].as_str(), Some("system" | "developer")))
        .count();
    if system > 0 {
        let before = prefix;
        prefix += messages[..system].iter().map(tokens).sum::<u64>();
        if prefix >= min && prefix > before {
            out.push(point(CacheAnchor::Message {
                index: system - 1,
                part: None,
            }));
        }
    }
    if messages.len() > system {
        let before = prefix;
        prefix += messages[system..].iter().map(tokens).sum::<u64>();
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

    fn long(words: usize) -> String {
        "word ".repeat(words)
    }

    #[test]
    fn points_go_after_tools_system_and_the_conversation_once_each_prefix_is_long_enough() {
        let mut request = json!({
            "tools": [{"type": "function", "function": {"name": "a", "description": long(50)}},
                      {"type": "function", "function": {"name": "b", "description": long(50)}}],
            "messages": [{"role": "system", "content": long(100)},
                         {"role": "user", "content": "hi"},
                         {"role": "assistant", "content": "hello"},
                         {"role": "user", "content": "again"}],
        });
        place(&model(true), &mut request);
        assert_eq!(
            request[extension::CACHE_POINTS],
            json!([{"after": "tool", "index": 1},
                   {"after": "message", "index": 0},
                   {"after": "message", "index": 3}])
        );
    }

    #[test]
    fn a_short_prompt_gets_none_and_a_model_without_auto_cache_is_left_alone() {
        let short = json!({"messages": [{"role": "system", "content": "Be brief."},
                                        {"role": "user", "content": "hi"}]});
        let mut request = short.clone();
        place(&model(true), &mut request);
        assert_eq!(request, short);
        let mut request = json!({"messages": [{"role": "system", "content": long(200)},
                                              {"role": "user", "content": "hi"}]});
        let before = request.clone();
        place(&model(false), &mut request);
        assert_eq!(request, before);
        // Only the prefixes that reach the minimum: the system prompt (and with it the end).
        place(&model(true), &mut request);
        assert_eq!(
            request[extension::CACHE_POINTS],
            json!([{"after": "message", "index": 0}, {"after": "message", "index": 1}])
        );
    }

    #[test]
    fn a_request_with_its_own_points_keeps_them() {
        let own = json!([{"after": "message", "index": 0, "ttl": "1h"}]);
        let mut request = json!({"messages": [{"role": "system", "content": long(200)}],
                                 extension::CACHE_POINTS: own.clone()});
        place(&model(true), &mut request);
        assert_eq!(request[extension::CACHE_POINTS], own);
    }
}
