//! The chat answer as the Messages API's: a `chat.completion` becomes a `message` object, and
//! `chat.completion.chunk`s become Anthropic's stream events, each as soon as its chunk arrives.

use crate::domain::chat::completion::{ChatCompletion, CompletionUsage};
use crate::ports::upstream::completion::{AnthropicEvent, AnthropicMessage, CompletionChoice};
use crate::ports::upstream::extension::{ANTHROPIC_MESSAGE, REASONING_SIGNATURE};
use crate::ports::upstream::CompletionChunk;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use utoipa::ToSchema;

/// A Messages API answer (`POST /v1/messages` without `stream`).
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct Message {
    #[schema(pattern = "^msg_")]
    pub id: String,
    #[serde(rename = "type")]
    #[schema(value_type = String, pattern = "^message$")]
    pub kind: &'static str,
    #[schema(value_type = String, pattern = "^assistant$")]
    pub role: &'static str,
    pub model: String,
    /// `thinking` (`{thinking, signature}`), `text` (`{text}`) and `tool_use` (`{id, name,
    /// input}`) blocks, in that order.
    #[schema(value_type = Vec<Object>)]
    pub content: Vec<Value>,
    /// `end_turn`, `max_tokens`, `stop_sequence`, `tool_use` or `refusal`.
    #[schema(value_type = String)]
    pub stop_reason: &'static str,
    /// The stop sequence that ended the text, if one did.
    #[schema(required = true)]
    pub stop_sequence: Option<String>,
    pub usage: Usage,
}

/// `POST /v1/messages/count_tokens`'s answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct MessageTokensCount {
    pub input_tokens: u64,
}

/// Anthropic's `usage`: cache reads and writes apart from `input_tokens`; and reelgate's
/// `cost`, what the call took from the balance.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
#[schema(as = MessageUsage)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_input_tokens: u64,
    pub cache_creation_input_tokens: u64,
    /// What the call's charge took from the balance, an exact decimal string in the model's
    /// currency; absent while a stream is still running (`message_start`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(pattern = "^[0-9]+(\\.[0-9]+)?$")]
    pub cost: Option<String>,
}

/// `stop_reason` of a chat choice. Chat's `stop` does not say whether a stop sequence ended
/// the text; an upstream that says which one matched (vLLM's `stop_reason` string) gives
/// `stop_sequence`, otherwise it is `end_turn`.
pub fn stop_reason(
    finish_reason: Option<&str>,
    matched: Option<&str>,
    stop_sequences: &[String],
) -> (&'static str, Option<String>) {
    match finish_reason {
        Some("length") => ("max_tokens", None),
        Some("tool_calls" | "function_call") => ("tool_use", None),
        Some("content_filter") => ("refusal", None),
        _ => match matched {
            Some(s) if stop_sequences.iter().any(|q| q == s) => {
                ("stop_sequence", Some(s.to_owned()))
            }
            _ => ("end_turn", None),
        },
    }
}

/// Anthropic's `usage` from chat's: cache reads are reported apart from `input_tokens`, as
/// Anthropic counts them.
pub fn usage(chat: &CompletionUsage) -> Usage {
    let prompt = chat.prompt_tokens;
    let details = chat.prompt_tokens_details.as_ref();
    let cached = details
        .and_then(|d| d.cached_tokens)
        .unwrap_or(0)
        .min(prompt);
    let written = details
        .and_then(|d| d.cache_write_tokens)
        .unwrap_or(0)
        .min(prompt - cached);
    Usage {
        input_tokens: prompt - cached - written,
        output_tokens: chat.completion_tokens,
        cache_read_input_tokens: cached,
        cache_creation_input_tokens: written,
        cost: chat.cost.clone(),
    }
}

/// A tool call's arguments as the `input` object (an upstream's malformed JSON becomes `{}`
/// rather than a string the SDKs cannot type).
fn tool_input(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ => json!({}),
    }
}

/// The `message` object of a re-stamped `chat.completion` (our id and model name).
pub fn message(completion: &ChatCompletion, stop_sequences: &[String]) -> Message {
    let none = CompletionChoice::default();
    let choice = completion.choices.first().unwrap_or(&none);
    let m = &choice.message;
    let mut content = Vec::new();
    if let Some(r) = m.reasoning_content.as_deref().filter(|r| !r.is_empty()) {
        let signature = m
            .rest
            .get(REASONING_SIGNATURE)
            .and_then(Value::as_str)
            .unwrap_or_default();
        content.push(json!({"type": "thinking", "thinking": r, "signature": signature}));
    }
    if let Some(t) = m.content.as_deref().filter(|t| !t.is_empty()) {
        content.push(json!({"type": "text", "text": t}));
    }
    for call in m.tool_calls.iter().flatten() {
        content.push(json!({
            "type": "tool_use",
            "id": call.id,
            "name": call.function.name,
            "input": tool_input(&call.function.arguments),
        }));
    }
    let (reason, sequence) = stop_reason(
        choice.finish_reason.as_deref(),
        choice.rest.get("stop_reason").and_then(Value::as_str),
        stop_sequences,
    );
    Message {
        id: completion.id.clone(),
        kind: "message",
        role: "assistant",
        model: completion.model.clone(),
        content,
        stop_reason: reason,
        stop_sequence: sequence,
        usage: usage(&completion.usage),
    }
}

/// The message a native Anthropic upstream answered (`ANTHROPIC_MESSAGE` on the completion),
/// as it wrote it, with our id and model name and, in its usage, what the call cost.
/// None when there is none, or when it is not a message (the completion is translated then).
pub fn native_message(completion: &ChatCompletion) -> Option<AnthropicMessage> {
    let mut m = AnthropicMessage::deserialize(completion.rest.get(ANTHROPIC_MESSAGE)?).ok()?;
    m.id.clone_from(&completion.id);
    m.model.clone_from(&completion.model);
    if let (Some(cost), Some(usage)) = (&completion.usage.cost, m.usage.as_mut()) {
        usage.insert("cost".into(), cost.clone().into());
    }
    Some(m)
}

/// A native Anthropic upstream's stream relayed as it came: each event as the upstream wrote
/// it, but `message_start` with our id and model name, and `message_delta` and `message_stop`
/// held back until the charge is known (`message_delta`'s usage then carries the cost).
#[derive(Default)]
pub struct NativeRelay {
    delta: Option<Value>,
}

impl NativeRelay {
    /// What to write for the upstream's event now.
    pub fn event(
        &mut self,
        mut event: AnthropicEvent,
        id: &str,
        model: &str,
    ) -> Option<AnthropicEvent> {
        match event.event.as_str() {
            "message_start" => {
                event.data["message"]["id"] = id.into();
                event.data["message"]["model"] = model.into();
            }
            "message_delta" => {
                self.delta = Some(event.data);
                return None;
            }
            "message_stop" => return None,
            _ => {}
        }
        Some(event)
    }

    /// The closing events, with the usage (chat's shape) that was charged.
    pub fn end(&mut self, chat_usage: &CompletionUsage) -> Vec<Event> {
        let mut delta = self.delta.take().unwrap_or_else(|| {
            json!({"type": "message_delta",
                   "delta": {"stop_reason": "end_turn", "stop_sequence": null},
                   "usage": {}})
        });
        let charged = serde_json::to_value(usage(chat_usage)).unwrap_or_default();
        match delta["usage"].as_object_mut() {
            // The upstream's own fields (server tool use and the like) stay; the counts are
            // the ones charged.
            Some(own) => {
                if let Value::Object(charged) = charged {
                    own.extend(charged);
                }
            }
            None => delta["usage"] = charged,
        }
        vec![
            ("message_delta", delta),
            ("message_stop", json!({"type": "message_stop"})),
        ]
    }
}

/// One stream event: its SSE `event:` name and its data.
pub type Event = (&'static str, Value);

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Open {
    Thinking,
    Text,
    /// A tool call, by its chat `tool_calls[].index`.
    Tool(u64),
}

/// Turns chat chunks into Anthropic's events: `message_start` and a `ping`, then for each
/// content block `content_block_start`, its deltas and `content_block_stop`, then
/// `message_delta` (stop reason, usage) and `message_stop`.
pub struct StreamTranslator {
    id: String,
    model: String,
    stop_sequences: Vec<String>,
    open: Option<(Open, usize)>,
    next_index: usize,
    /// Block index of each tool call seen, by its chat index.
    tools: Vec<(u64, usize)>,
    stop: Option<(&'static str, Option<String>)>,
}

impl StreamTranslator {
    pub fn new(id: &str, model: &str, stop_sequences: Vec<String>) -> Self {
        StreamTranslator {
            id: id.to_owned(),
            model: model.to_owned(),
            stop_sequences,
            open: None,
            next_index: 0,
            tools: Vec::new(),
            stop: None,
        }
    }

    pub fn start(&self) -> Vec<Event> {
        vec![
            (
                "message_start",
                json!({"type": "message_start", "message": {
                    "id": self.id, "type": "message", "role": "assistant", "model": self.model,
                    "content": [], "stop_reason": null, "stop_sequence": null,
                    // The upstream reports usage at the end; message_delta carries it.
                    "usage": {"input_tokens": 0, "output_tokens": 0,
                              "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0},
                }}),
            ),
            ("ping", json!({"type": "ping"})),
        ]
    }

    fn close(&mut self, out: &mut Vec<Event>) {
        if let Some((_, index)) = self.open.take() {
            out.push((
                "content_block_stop",
                json!({"type": "content_block_stop", "index": index}),
            ));
        }
    }

    /// The block of kind `kind`, opened (closing the one before) unless it is the open one.
    fn ensure(&mut self, kind: Open, block: Value, out: &mut Vec<Event>) -> usize {
        if let Some((open, index)) = self.open {
            if open == kind {
                return index;
            }
        }
        self.close(out);
        let index = self.next_index;
        self.next_index += 1;
        self.open = Some((kind, index));
        out.push((
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": block}),
        ));
        index
    }

    fn delta(index: usize, delta: Value) -> Event {
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index, "delta": delta}),
        )
    }

    /// The events of one chunk (its first choice).
    pub fn chunk(&mut self, chunk: &CompletionChunk) -> Vec<Event> {
        let mut out = Vec::new();
        let Some(choice) = chunk.choices.first() else {
            return out;
        };
        let delta = &choice.delta;
        if let Some(r) = delta.reasoning_content.as_deref().filter(|r| !r.is_empty()) {
            let i = self.ensure(
                Open::Thinking,
                json!({"type": "thinking", "thinking": "", "signature": ""}),
                &mut out,
            );
            out.push(Self::delta(
                i,
                json!({"type": "thinking_delta", "thinking": r}),
            ));
        }
        if let Some(sig) = delta
            .rest
            .get(REASONING_SIGNATURE)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        {
            let i = self.ensure(
                Open::Thinking,
                json!({"type": "thinking", "thinking": "", "signature": ""}),
                &mut out,
            );
            out.push(Self::delta(
                i,
                json!({"type": "signature_delta", "signature": sig}),
            ));
        }
        if let Some(t) = delta.content.as_deref().filter(|t| !t.is_empty()) {
            let i = self.ensure(Open::Text, json!({"type": "text", "text": ""}), &mut out);
            out.push(Self::delta(i, json!({"type": "text_delta", "text": t})));
        }
        for call in delta.tool_calls.iter().flatten() {
            let chat_index = call.index;
            let function = call.function.as_ref();
            let known = self
                .tools
                .iter()
                .find(|(c, _)| *c == chat_index)
                .map(|(_, b)| *b);
            let index = match known {
                Some(index) => index,
                None => {
                    let block = json!({
                        "type": "tool_use",
                        "id": call.id.as_deref().unwrap_or_default(),
                        "name": function.and_then(|f| f.name.as_deref()).unwrap_or_default(),
                        "input": {},
                    });
                    let index = self.ensure(Open::Tool(chat_index), block, &mut out);
                    self.tools.push((chat_index, index));
                    index
                }
            };
            if let Some(a) = function
                .and_then(|f| f.arguments.as_deref())
                .filter(|a| !a.is_empty())
            {
                out.push(Self::delta(
                    index,
                    json!({"type": "input_json_delta", "partial_json": a}),
                ));
            }
        }
        if choice.finish_reason.is_some() {
            self.stop = Some(stop_reason(
                choice.finish_reason.as_deref(),
                choice.rest.get("stop_reason").and_then(Value::as_str),
                &self.stop_sequences,
            ));
        }
        out
    }

    /// The closing events, with the usage (chat's shape) that was charged.
    pub fn end(&mut self, chat_usage: &CompletionUsage) -> Vec<Event> {
        let mut out = Vec::new();
        self.close(&mut out);
        let (reason, sequence) = self.stop.clone().unwrap_or(("end_turn", None));
        out.push((
            "message_delta",
            json!({"type": "message_delta",
                   "delta": {"stop_reason": reason, "stop_sequence": sequence},
                   "usage": usage(chat_usage)}),
        ));
        out.push(("message_stop", json!({"type": "message_stop"})));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The message of an upstream `completion` re-stamped with the id and model it names.
    fn message(completion: &Value, stop_sequences: &[String]) -> Value {
        let c = ChatCompletion::restamped(
            crate::ports::upstream::Completion::from_json(completion.clone()).unwrap(),
            completion["id"].as_str().unwrap(),
            0,
            completion["model"].as_str().unwrap(),
            serde_json::from_value(completion["usage"].clone()).unwrap_or_default(),
        );
        serde_json::to_value(super::message(&c, stop_sequences)).unwrap()
    }

    fn counts(prompt: u64, completion: u64) -> CompletionUsage {
        CompletionUsage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            total_tokens: prompt + completion,
            ..CompletionUsage::default()
        }
    }

    fn chunk(delta: Value, finish: Option<&str>) -> CompletionChunk {
        CompletionChunk::from_json(
            json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
        )
        .expect("a chunk")
    }

    #[test]
    fn a_completion_with_reasoning_text_and_tool_calls_becomes_blocks_in_order() {
        let completion = json!({
            "id": "msg_1", "model": "m",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": "Let me look.", "reasoning_content": "hmm",
                "tool_calls": [{"id": "call_1", "type": "function",
                                "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]}}],
            "usage": {"prompt_tokens": 30, "completion_tokens": 7, "total_tokens": 37,
                      "prompt_tokens_details": {"cached_tokens": 20}},
        });
        let m = message(&completion, &[]);
        let types: Vec<&str> = m["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, ["thinking", "text", "tool_use"]);
        assert_eq!(m["content"][2]["input"], json!({"city": "Paris"}));
        assert_eq!(m["stop_reason"], "tool_use");
        assert_eq!(
            m["usage"],
            json!({"input_tokens": 10, "output_tokens": 7, "cache_read_input_tokens": 20, "cache_creation_input_tokens": 0})
        );
    }

    #[test]
    fn stop_reasons_map_and_a_named_stop_sequence_is_reported() {
        let stops = vec!["END".to_owned()];
        let c = |f: &str| stop_reason(Some(f), None, &stops).0;
        assert_eq!(c("length"), "max_tokens");
        assert_eq!(c("stop"), "end_turn");
        assert_eq!(c("tool_calls"), "tool_use");
        assert_eq!(
            stop_reason(Some("stop"), Some("END"), &stops),
            ("stop_sequence", Some("END".into()))
        );
        // A stop_reason that is not one of the request's sequences is not a stop sequence.
        assert_eq!(
            stop_reason(Some("stop"), Some("ELSE"), &stops).0,
            "end_turn"
        );
    }

    #[test]
    fn the_stream_opens_and_closes_one_block_at_a_time_and_ends_with_usage() {
        let mut t = StreamTranslator::new("msg_1", "m", Vec::new());
        let mut names: Vec<&str> = t.start().iter().map(|e| e.0).collect();
        let mut all = Vec::new();
        for c in [
            chunk(json!({"role": "assistant", "content": ""}), None),
            chunk(json!({"content": "Hi"}), None),
            chunk(json!({"content": " there"}), None),
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "f", "arguments": ""}}]}),
                None,
            ),
            chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"a\":"}}]}),
                None,
            ),
            chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]}),
                None,
            ),
            chunk(
                json!({"tool_calls": [{"index": 1, "id": "call_b", "type": "function", "function": {"name": "g", "arguments": "{}"}}]}),
                None,
            ),
            chunk(json!({}), Some("tool_calls")),
        ] {
            all.extend(t.chunk(&c));
        }
        all.extend(t.end(&counts(10, 5)));
        names.extend(all.iter().map(|e| e.0));
        assert_eq!(
            names,
            [
                "message_start",
                "ping",
                "content_block_start",
                "content_block_delta",
                "content_block_delta",
                "content_block_stop",
                "content_block_start",
                "content_block_delta",
                "content_block_delta",
                "content_block_stop",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop",
            ]
        );
        assert_eq!(all[0].1["content_block"]["type"], "text");
        assert_eq!(
            all[1].1["delta"],
            json!({"type": "text_delta", "text": "Hi"})
        );
        assert_eq!(all[4].1["content_block"]["id"], "call_a");
        assert_eq!(all[4].1["index"], 1);
        assert_eq!(
            all[5].1["delta"],
            json!({"type": "input_json_delta", "partial_json": "{\"a\":"})
        );
        assert_eq!(all[8].1["index"], 2);
        let delta = &all[11].1;
        assert_eq!(delta["delta"]["stop_reason"], "tool_use");
        assert_eq!(delta["usage"]["input_tokens"], 10);
        assert_eq!(delta["usage"]["output_tokens"], 5);
    }

    #[test]
    fn reasoning_streams_as_a_thinking_block_before_the_text() {
        let mut t = StreamTranslator::new("msg_1", "m", Vec::new());
        let mut all = t.chunk(&chunk(json!({"reasoning_content": "think"}), None));
        all.extend(t.chunk(&chunk(json!({"content": "answer"}), Some("length"))));
        all.extend(t.end(&counts(1, 2)));
        assert_eq!(all[0].1["content_block"]["type"], "thinking");
        assert_eq!(
            all[1].1["delta"],
            json!({"type": "thinking_delta", "thinking": "think"})
        );
        assert_eq!(all[2].0, "content_block_stop");
        assert_eq!(all[3].1["content_block"]["type"], "text");
        assert_eq!(all[6].1["delta"]["stop_reason"], "max_tokens");
    }

    #[test]
    fn a_reasoning_signature_signs_the_thinking_block() {
        let mut t = StreamTranslator::new("msg_1", "m", Vec::new());
        let mut all = t.chunk(&chunk(json!({"reasoning_content": "think"}), None));
        all.extend(t.chunk(&chunk(json!({ REASONING_SIGNATURE: "sig" }), None)));
        all.extend(t.chunk(&chunk(json!({"content": "answer"}), Some("stop"))));
        assert_eq!(
            all[2].1,
            json!({"type": "content_block_delta", "index": 0,
                   "delta": {"type": "signature_delta", "signature": "sig"}})
        );
        assert_eq!(all[3].0, "content_block_stop");
        let completion = json!({"id": "x", "model": "m", "choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": "a", "reasoning_content": "hmm", REASONING_SIGNATURE: "sig"}}]});
        assert_eq!(
            message(&completion, &[])["content"][0],
            json!({"type": "thinking", "thinking": "hmm", "signature": "sig"})
        );
    }
}
