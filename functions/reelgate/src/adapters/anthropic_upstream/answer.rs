//! Anthropic's answers as chat's: a `message` as a `chat.completion`, stream events as chat
//! chunks (each carrying its event for a native caller), error bodies and events as the port's
//! errors.

use crate::ports::upstream::extension::{
    ANTHROPIC_EVENT, ANTHROPIC_MESSAGE, REASONING_BLOCKS, REASONING_SIGNATURE,
};
use crate::ports::upstream::UpstreamError;
use serde_json::{json, Map, Value};
use std::collections::HashMap;

fn finish_reason(stop_reason: &str) -> &'static str {
    match stop_reason {
        "tool_use" => "tool_calls",
        "max_tokens" | "model_context_window_exceeded" => "length",
        "refusal" => "content_filter",
        _ => "stop",
    }
}

/// Anthropic's usage as chat's: Anthropic counts cache reads and writes apart from
/// `input_tokens`; chat's `prompt_tokens` holds them, with the split in its details.
pub(super) fn usage_json(u: &Value) -> Value {
    let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
    let (read, written) = (
        n("cache_read_input_tokens"),
        n("cache_creation_input_tokens"),
    );
    let prompt = n("input_tokens") + read + written;
    let completion = n("output_tokens");
    json!({
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": read, "cache_write_tokens": written},
    })
}

/// A `message` object as a `chat.completion`.
pub(super) fn completion(message: &Value, native: bool) -> Value {
    let mut content = String::new();
    let mut reasoning = String::new();
    let mut signature = None;
    let mut reasoning_blocks = Vec::new();
    let mut calls = Vec::new();
    for block in message["content"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        match block["type"].as_str().unwrap_or_default() {
            "text" => content.push_str(block["text"].as_str().unwrap_or_default()),
            "tool_use" => calls.push(json!({
                "id": block["id"],
                "type": "function",
                "function": {"name": block["name"], "arguments": block["input"].to_string()},
            })),
            "thinking" => {
                reasoning.push_str(block["thinking"].as_str().unwrap_or_default());
                if let Some(sig) = block["signature"].as_str() {
                    signature = Some(sig.to_owned());
                }
                reasoning_blocks.push(block.clone());
            }
            "redacted_thinking" => reasoning_blocks.push(block.clone()),
            _ => {}
        }
    }
    let mut reply_message = json!({"role": "assistant", "content": content});
    if !calls.is_empty() {
        reply_message["tool_calls"] = Value::Array(calls);
    }
    if !reasoning.is_empty() {
        reply_message["reasoning_content"] = reasoning.into();
    }
    if let Some(sig) = signature {
        reply_message[REASONING_SIGNATURE] = sig.into();
    }
    if !reasoning_blocks.is_empty() {
        reply_message[REASONING_BLOCKS] = Value::Array(reasoning_blocks);
    }
    let mut reply = json!({
        "id": message["id"],
        "object": "chat.completion",
        "created": crate::ports::store::now_secs(),
        "model": message["model"],
        "choices": [{"index": 0, "message": reply_message,
            "finish_reason": finish_reason(message["stop_reason"].as_str().unwrap_or_default())}],
        "usage": usage_json(&message["usage"]),
    });
    if native {
        reply[ANTHROPIC_MESSAGE] = message.clone();
    }
    reply
}

/// An `error` event's or body's error as the port's: Anthropic's error types by their statuses.
pub(super) fn stream_error(error: &Value) -> UpstreamError {
    let kind = error["type"].as_str().unwrap_or("api_error");
    let status = match kind {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "overloaded_error" => 529,
        "timeout_error" => 504,
        _ => 500,
    };
    UpstreamError::Rejected {
        status,
        code: Some(kind.to_owned()),
        message: error["message"].as_str().unwrap_or(kind).to_owned(),
        retry_after: None,
    }
}

/// Turns Messages stream events into chat chunks. Translated, an event with nothing to say is
/// skipped; native, every event gets a chunk carrying it ([`ANTHROPIC_EVENT`]).
pub(super) struct StreamState {
    pub(super) native: bool,
    pub(super) id: Value,
    pub(super) model: Value,
    /// Content-block index → chat tool-call index.
    pub(super) tool_index: HashMap<u64, usize>,
    pub(super) usage: Map<String, Value>,
}

impl StreamState {
    fn chunk(&self, delta: Value, finish: Value) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": crate::ports::store::now_secs(),
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        })
    }

    /// The chunks for one event (its `data`), the final usage chunk after `message_stop`.
    pub(super) fn event(&mut self, data: Value) -> Result<Vec<Value>, UpstreamError> {
        let kind = data["type"].as_str().unwrap_or_default().to_owned();
        let mut delta = json!({});
        let mut finish = Value::Null;
        match kind.as_str() {
            "error" => return Err(stream_error(&data["error"])),
            "message_start" => {
                let message = &data["message"];
                self.id = message["id"].clone();
                self.model = message["model"].clone();
                if let Some(u) = message["usage"].as_object() {
                    self.usage.extend(u.clone());
                }
                delta = json!({"role": "assistant", "content": ""});
            }
            "content_block_start" => {
                let block = &data["content_block"];
                let index = data["index"].as_u64().unwrap_or(0);
                match block["type"].as_str() {
                    Some("tool_use") => {
                        let call = self.tool_index.len();
                        self.tool_index.insert(index, call);
                        delta = json!({"tool_calls": [{"index": call, "id": block["id"],
                            "type": "function",
                            "function": {"name": block["name"], "arguments": ""}}]});
                    }
                    Some("text") if block["text"].as_str().is_some_and(|t| !t.is_empty()) => {
                        delta = json!({"content": block["text"]});
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let d = &data["delta"];
                match d["type"].as_str().unwrap_or_default() {
                    "text_delta" => delta = json!({"content": d["text"]}),
                    "thinking_delta" => delta = json!({"reasoning_content": d["thinking"]}),
                    "signature_delta" => delta = json!({ REASONING_SIGNATURE: d["signature"] }),
                    "input_json_delta" => {
                        let index = data["index"].as_u64().unwrap_or(0);
                        let call = self.tool_index.get(&index).copied().unwrap_or(0);
                        delta = json!({"tool_calls": [{"index": call,
                            "function": {"arguments": d["partial_json"]}}]});
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(u) = data["usage"].as_object() {
                    // Cumulative counts: the latest of each wins.
                    self.usage.extend(
                        u.iter()
                            .filter(|(_, v)| !v.is_null())
                            .map(|(k, v)| (k.clone(), v.clone())),
                    );
                }
                if let Some(reason) = data["delta"]["stop_reason"].as_str() {
                    finish = finish_reason(reason).into();
                }
            }
            _ => {}
        }
        let said = delta.as_object().is_some_and(|d| !d.is_empty()) || !finish.is_null();
        let mut out = Vec::new();
        if self.native || said {
            let mut chunk = self.chunk(delta, finish);
            if self.native {
                chunk[ANTHROPIC_EVENT] = json!({"event": kind, "data": data});
            }
            out.push(chunk);
        }
        if kind == "message_stop" {
            out.push(json!({
                "id": self.id,
                "object": "chat.completion.chunk",
                "created": crate::ports::store::now_secs(),
                "model": self.model,
                "choices": [],
                "usage": usage_json(&Value::Object(self.usage.clone())),
            }));
        }
        Ok(out)
    }
}
