//! The token estimate of chat messages and the `truncation` that fits a conversation to the
//! model's context.

use super::request::Truncation;
use crate::domain::error::{ApiError, ApiResult};
use crate::ports::upstream::request::{ChatMessage, Role};
use serde_json::Value;

/// Token estimate of one image, whatever its size (OpenAI bills a high-detail 512px tile
/// about this much); used to decide truncation and in the estimate charged without usage.
pub const IMAGE_TOKENS: u64 = crate::domain::billing::token_charges::IMAGE_PART_TOKENS;
/// Token estimate of a message's framing (role, separators).
const MESSAGE_TOKENS: u64 = 4;

/// Deterministic token estimate of chat messages: a character is a quarter token (rounded up
/// per message), an image [`IMAGE_TOKENS`], audio, video and files their flat
/// `usage::part_estimate`, each message [`MESSAGE_TOKENS`] of framing.
pub fn estimate_tokens(messages: &[ChatMessage]) -> u64 {
    messages.iter().map(estimate_message).sum()
}

fn estimate_message(m: &ChatMessage) -> u64 {
    let mut chars = 0u64;
    let mut parts_tokens = 0u64;
    match &m.content {
        Some(Value::String(s)) => chars += s.chars().count() as u64,
        Some(Value::Array(parts)) => {
            for p in parts {
                let part = crate::domain::billing::token_charges::part_estimate(
                    p["type"].as_str().unwrap_or(""),
                );
                if part > 0 {
                    parts_tokens += part;
                } else if let Some(t) = p.get("text").and_then(Value::as_str) {
                    chars += t.chars().count() as u64;
                }
            }
        }
        _ => {}
    }
    if let Some(Value::Array(calls)) = &m.tool_calls {
        for c in calls {
            chars += c["function"]["arguments"]
                .as_str()
                .map_or(0, |a| a.chars().count() as u64);
            chars += c["function"]["name"]
                .as_str()
                .map_or(0, |a| a.chars().count() as u64);
        }
    }
    MESSAGE_TOKENS + chars.div_ceil(4) + parts_tokens
}

/// Fits the messages into `budget` tokens. `auto` drops the oldest turns (system messages stay;
/// a turn starts at a user message, so no tool result is left without its call); `disabled`, or
/// a last turn that alone is too large, is a 400 `context_length_exceeded`.
pub fn truncate(
    mut messages: Vec<ChatMessage>,
    budget: u64,
    truncation: Truncation,
) -> ApiResult<Vec<ChatMessage>> {
    let too_long = |estimate: u64| {
        ApiError::invalid(
            "input",
            format!(
                "The input is about {estimate} tokens, more than the model's context of {budget}; \
                 shorten it or set truncation to auto."
            ),
        )
        .with_code("context_length_exceeded")
    };
    let estimate = estimate_tokens(&messages);
    if estimate <= budget {
        return Ok(messages);
    }
    if truncation == Truncation::Disabled {
        return Err(too_long(estimate));
    }
    loop {
        let conversation: Vec<usize> = (0..messages.len())
            .filter(|&i| messages[i].role != Role::System)
            .collect();
        // Where the second turn starts: the next user message after the first conversation message.
        let next_turn = conversation
            .iter()
            .skip(1)
            .copied()
            .find(|&i| messages[i].role == Role::User);
        let Some(next_turn) = next_turn else {
            return Err(too_long(estimate_tokens(&messages)));
        };
        let first = conversation[0];
        let drop: Vec<usize> = (first..next_turn)
            .filter(|&i| messages[i].role != Role::System)
            .collect();
        for i in drop.into_iter().rev() {
            messages.remove(i);
        }
        if estimate_tokens(&messages) <= budget {
            return Ok(messages);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn typed(v: Value) -> ChatMessage {
        serde_json::from_value(v).expect("a chat message")
    }

    fn msg(role: &str, text: &str) -> ChatMessage {
        typed(json!({"role": role, "content": text}))
    }

    #[test]
    fn auto_truncation_drops_whole_oldest_turns_and_keeps_system() {
        let long = "x".repeat(400); // 100 tokens + 4
        let messages = vec![
            msg("system", "be brief"),
            msg("user", &long),
            typed(
                json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}),
            ),
            typed(json!({"role": "tool", "tool_call_id": "c", "content": long})),
            msg("user", "last question"),
        ];
        let kept = truncate(messages.clone(), 50, Truncation::Auto).expect("fits");
        assert_eq!(kept.len(), 2);
        assert_eq!(kept[0].role, Role::System);
        assert_eq!(kept[1].content, Some(json!("last question")));
        let e = truncate(messages.clone(), 50, Truncation::Disabled).expect_err("too long");
        assert_eq!(e.code, "context_length_exceeded");
        let e = truncate(vec![msg("user", &long)], 50, Truncation::Auto).expect_err("too long");
        assert_eq!(e.code, "context_length_exceeded");
    }

    #[test]
    fn estimate_is_chars_over_four_plus_framing() {
        assert_eq!(estimate_tokens(&[msg("user", "abcde")]), 4 + 2);
        let image = typed(
            json!({"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u"}}]}),
        );
        assert_eq!(estimate_tokens(&[image]), 4 + IMAGE_TOKENS);
        let mixed = typed(json!({"role": "user", "content": [
            {"type": "file", "file": {"file_data": "data:application/pdf;base64,AAAA"}},
            {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}},
            {"type": "text", "text": "abcd"}]}));
        use crate::domain::billing::token_charges::{AUDIO_PART_TOKENS, FILE_PART_TOKENS};
        assert_eq!(
            estimate_tokens(&[mixed]),
            4 + FILE_PART_TOKENS + AUDIO_PART_TOKENS + 1
        );
    }
}
