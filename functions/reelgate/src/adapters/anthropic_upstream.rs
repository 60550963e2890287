//! Anthropic's Messages API as a chat upstream (catalog kind `anthropic`): `POST
//! {base}/v1/messages` and `{base}/v1/messages/count_tokens` with `x-api-key` and
//! `anthropic-version`.
//!
//! Two ways in. A Messages request whose model only Anthropic serves carries the caller's own
//! body ([`ANTHROPIC_REQUEST`]); it is sent as it came, with the upstream's model name, so
//! thinking signatures, `redacted_thinking`, `cache_control` with its TTLs, citations and server
//! tools survive. Its answer comes back twice: translated to chat (which the meter and the
//! other dialects read) and as it was written ([`ANTHROPIC_MESSAGE`], [`ANTHROPIC_EVENT`]),
//! which the Messages dialect relays. Every other request (chat completions, Responses, and
//! Messages to a model with other deployments too) is translated from chat, as the Converse
//! adapter translates it: system messages → `system` blocks, user parts → text, image and
//! document blocks (fetched through the guarded fetcher and inlined, so a presigned URL of ours
//! works and Anthropic never sees it), assistant tool calls → `tool_use` after the signed
//! reasoning blocks they came with, `tool` messages → `tool_result` in a user turn, cache
//! points → `cache_control` on the block they follow, `reasoning_effort` → a thinking budget.
//!
//! Like the OpenAI-compatible adapter, only failures to connect are retried: a request that
//! reached Anthropic may have run (and been billed) already.

use crate::adapters::openai_upstream::{
    read_json, send_retrying_connects, transport_error, SseParser, COMPLETION_TIMEOUT,
    CONNECT_TIMEOUT, STREAM_IDLE_TIMEOUT,
};
use crate::domain::catalog::UpstreamConfig;
use crate::ports::upstream::extension::{
    ANTHROPIC_EVENT, ANTHROPIC_MESSAGE, ANTHROPIC_REQUEST, REASONING_BLOCKS, REASONING_SIGNATURE,
    THINKING_BUDGET,
};
use crate::ports::upstream::{
    cache_points, content_text, CacheAnchor, CachePoint, ChatUpstream, ChunkStream, UpstreamError,
};
use async_trait::async_trait;
use base64::Engine;
use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{json, Map, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// The API version every request names: the one whose shapes this adapter writes and reads
/// (a caller's own `anthropic-version` is not forwarded).
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// Anthropic requires `max_tokens`; an OpenAI caller may leave it out.
const DEFAULT_MAX_TOKENS: u64 = 4096;
/// Anthropic's smallest thinking budget.
const MIN_THINKING_BUDGET: u64 = 1024;
/// Largest image or document fetched to inline it (Anthropic's own limits are lower; it says so).
const MAX_MEDIA_BYTES: u64 = 32 * 1024 * 1024;
/// The members of a Messages body that count_tokens takes (it refuses the sampling ones).
const COUNT_TOKENS_FIELDS: &[&str] = &[
    "model",
    "messages",
    "system",
    "tools",
    "tool_choice",
    "thinking",
    "mcp_servers",
];

pub struct AnthropicUpstream {
    client: reqwest::Client,
    base: String,
    messages_url: reqwest::Url,
    count_tokens_url: reqwest::Url,
    fetcher: Arc<dyn crate::ports::fetch::Fetcher>,
}

impl AnthropicUpstream {
    /// From the catalog: `base_url` (default `https://api.anthropic.com`, `${NAME}` expanded),
    /// the key from the environment variable `api_key_env`, and `extra_headers` (an
    /// `anthropic-beta` list, say).
    pub fn from_config(config: &UpstreamConfig) -> Result<Self, UpstreamError> {
        let base = config
            .base_url
            .as_deref()
            .map(crate::config::expand_env)
            .filter(|u| !u.trim().is_empty())
            .unwrap_or_else(|| DEFAULT_BASE_URL.to_owned());
        let api_key = config
            .api_key_env
            .as_deref()
            .and_then(|name| std::env::var(name).ok())
            .filter(|k| !k.is_empty());
        Self::new(
            &base,
            api_key,
            crate::adapters::openai_upstream::extra_headers(config)?,
            Arc::new(crate::adapters::guarded_fetch::GuardedFetcher::default()),
        )
    }

    pub fn new(
        base_url: &str,
        api_key: Option<String>,
        mut headers: HeaderMap,
        fetcher: Arc<dyn crate::ports::fetch::Fetcher>,
    ) -> Result<Self, UpstreamError> {
        let base = base_url.trim().trim_end_matches('/').to_owned();
        // A base that already ends in the version path is taken as the API root.
        let root = base.strip_suffix("/v1").unwrap_or(&base).to_owned();
        let url = |path: &str| {
            reqwest::Url::parse(&format!("{root}{path}")).map_err(|e| {
                UpstreamError::Protocol(format!("the upstream base URL {base} is not a URL: {e}"))
            })
        };
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(ANTHROPIC_VERSION),
        );
        if let Some(key) = api_key {
            let mut value = HeaderValue::from_str(&key).map_err(|_| {
                UpstreamError::Protocol("the Anthropic key is not a valid header value".into())
            })?;
            value.set_sensitive(true);
            headers.insert(HeaderName::from_static("x-api-key"), value);
        }
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .default_headers(headers)
            .tcp_nodelay(true)
            .build()
            .map_err(|e| UpstreamError::Protocol(format!("cannot build an HTTP client: {e}")))?;
        Ok(AnthropicUpstream {
            client,
            messages_url: url("/v1/messages")?,
            count_tokens_url: url("/v1/messages/count_tokens")?,
            base,
            fetcher,
        })
    }

    /// The Messages body for `request`: the caller's own when it carries one, else the
    /// translation of the chat body. `native` says which.
    async fn body(&self, request: &Value) -> Result<(Value, bool), UpstreamError> {
        let model = request["model"].clone();
        if let Some(own) = request.get(ANTHROPIC_REQUEST).filter(|v| v.is_object()) {
            let mut body = own.clone();
            body["model"] = model;
            return Ok((body, true));
        }
        Ok((self.translate(request).await?, false))
    }

    async fn translate(&self, request: &Value) -> Result<Value, UpstreamError> {
        if request
            .get("n")
            .and_then(Value::as_u64)
            .is_some_and(|n| n > 1)
        {
            return Err(bad("Anthropic returns one choice; n must be 1"));
        }
        if request
            .pointer("/response_format/type")
            .and_then(Value::as_str)
            == Some("json_schema")
        {
            return Err(bad(
                "the Anthropic adapter does not support response_format json_schema",
            ));
        }
        let points = cache_points(request);
        let mut system: Vec<Value> = Vec::new();
        let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
        let messages = request["messages"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        for (index, m) in messages.iter().enumerate() {
            let here: Vec<&CachePoint> = points
                .iter()
                .filter(|p| matches!(p.anchor, CacheAnchor::Message { index: i, .. } if i == index))
                .collect();
            let content = &m["content"];
            let parts_map_to_blocks = content.is_array();
            let (role, mut blocks) = match m["role"].as_str().unwrap_or_default() {
                "system" | "developer" => {
                    let mut blocks = text_blocks(content);
                    mark(&mut blocks, &here, parts_map_to_blocks);
                    system.extend(blocks);
                    continue;
                }
                "user" => (
                    "user",
                    self.user_blocks(content, &format!("messages[{index}].content"))
                        .await?,
                ),
                "assistant" => ("assistant", assistant_blocks(m)),
                "tool" => (
                    "user",
                    vec![json!({
                        "type": "tool_result",
                        "tool_use_id": m["tool_call_id"],
                        "content": content_text(content),
                    })],
                ),
                _ => continue,
            };
            mark(
                &mut blocks,
                &here,
                parts_map_to_blocks && m["role"] == "user",
            );
            if blocks.is_empty() {
                continue;
            }
            match turns.last_mut() {
                Some((last, existing)) if *last == role => existing.extend(blocks),
                _ => turns.push((role, blocks)),
            }
        }
        let mut body = Map::new();
        body.insert("model".into(), request["model"].clone());
        body.insert(
            "messages".into(),
            Value::Array(
                turns
                    .into_iter()
                    .map(|(role, content)| json!({"role": role, "content": content}))
                    .collect(),
            ),
        );
        if !system.is_empty() {
            body.insert("system".into(), Value::Array(system));
        }
        let mut max_tokens = request
            .get("max_completion_tokens")
            .or_else(|| request.get("max_tokens"))
            .and_then(Value::as_u64)
            .unwrap_or(DEFAULT_MAX_TOKENS);
        if let Some(budget) = thinking_budget(request) {
            // Anthropic's budget counts inside max_tokens and must stay below it; an OpenAI
            // caller's max_completion_tokens already includes reasoning, so the budget yields.
            if request.get("max_completion_tokens").is_none() && request.get("max_tokens").is_none()
            {
                max_tokens = max_tokens.max(budget + DEFAULT_MAX_TOKENS);
            }
            let budget = budget.min(max_tokens.saturating_sub(1));
            if budget >= MIN_THINKING_BUDGET {
                body.insert(
                    "thinking".into(),
                    json!({"type": "enabled", "budget_tokens": budget}),
                );
            }
        }
        body.insert("max_tokens".into(), json!(max_tokens));
        for key in ["temperature", "top_p", "top_k"] {
            if let Some(v) = request.get(key).filter(|v| v.is_number()) {
                body.insert(key.into(), v.clone());
            }
        }
        match request.get("stop") {
            Some(Value::String(s)) => {
                body.insert("stop_sequences".into(), json!([s]));
            }
            Some(Value::Array(list)) if !list.is_empty() => {
                body.insert("stop_sequences".into(), Value::Array(list.clone()));
            }
            _ => {}
        }
        if let Some(user) = request.get("user").and_then(Value::as_str) {
            body.insert("metadata".into(), json!({ "user_id": user }));
        }
        if let Some(tools) = tools(request, &points) {
            body.insert("tools".into(), tools);
            if let Some(choice) = tool_choice(request) {
                body.insert("tool_choice".into(), choice);
            }
        }
        Ok(Value::Object(body))
    }

    async fn fetch(&self, url: &str, param: &str) -> Result<(Vec<u8>, String), UpstreamError> {
        crate::adapters::guarded_fetch::inline_media(
            self.fetcher.as_ref(),
            url,
            param,
            MAX_MEDIA_BYTES,
        )
        .await
    }

    async fn user_blocks(&self, content: &Value, at: &str) -> Result<Vec<Value>, UpstreamError> {
        let parts = match content {
            Value::String(s) => return Ok(vec![json!({"type": "text", "text": s})]),
            Value::Array(parts) => parts,
            _ => return Ok(Vec::new()),
        };
        let mut blocks = Vec::with_capacity(parts.len());
        for (i, part) in parts.iter().enumerate() {
            let block = match part["type"].as_str().unwrap_or_default() {
                "text" => json!({"type": "text", "text": part["text"]}),
                "image_url" => {
                    let url = part["image_url"]["url"].as_str().unwrap_or_default();
                    let (bytes, mime) =
                        self.fetch(url, &format!("{at}[{i}].image_url.url")).await?;
                    let mime = match mime.as_str() {
                        "image/jpg" => "image/jpeg".to_owned(),
                        "image/png" | "image/jpeg" | "image/gif" | "image/webp" => mime,
                        other => {
                            return Err(bad(format!(
                                "Anthropic takes PNG, JPEG, GIF or WebP images, not {other}"
                            )))
                        }
                    };
                    json!({"type": "image", "source": {
                        "type": "base64", "media_type": mime,
                        "data": base64::engine::general_purpose::STANDARD.encode(bytes)}})
                }
                "file" => {
                    let file = &part["file"];
                    let data = file["file_data"].as_str().unwrap_or_default();
                    let (bytes, mime) = self
                        .fetch(data, &format!("{at}[{i}].file.file_data"))
                        .await?;
                    let source = match mime.as_str() {
                        "application/pdf" => json!({"type": "base64",
                            "media_type": "application/pdf",
                            "data": base64::engine::general_purpose::STANDARD.encode(bytes)}),
                        "text/plain" | "text/markdown" | "text/csv" => json!({"type": "text",
                            "media_type": "text/plain",
                            "data": String::from_utf8_lossy(&bytes)}),
                        other => {
                            return Err(bad(format!(
                                "Anthropic takes PDF and plain-text documents, not {other}"
                            )))
                        }
                    };
                    let mut doc = json!({"type": "document", "source": source});
                    if let Some(name) = file["filename"].as_str() {
                        doc["title"] = name.into();
                    }
                    doc
                }
                other => {
                    return Err(bad(format!(
                        "the Anthropic adapter does not pass {other} content"
                    )))
                }
            };
            blocks.push(block);
        }
        Ok(blocks)
    }

    async fn post(
        &self,
        url: &reqwest::Url,
        body: &Value,
        stream: bool,
    ) -> Result<reqwest::Response, UpstreamError> {
        send_retrying_connects(&self.base, || {
            let builder = self.client.post(url.clone()).json(body);
            if stream {
                builder.header(reqwest::header::ACCEPT, "text/event-stream")
            } else {
                builder.timeout(COMPLETION_TIMEOUT)
            }
        })
        .await
    }
}

fn bad(message: impl Into<String>) -> UpstreamError {
    UpstreamError::Rejected {
        status: 400,
        code: Some("invalid_request_error".into()),
        message: message.into(),
        retry_after: None,
    }
}

/// The exact budget a Messages caller asked for, else the nearest one for the effort (as the
/// Converse adapter budgets it); none without an effort.
fn thinking_budget(request: &Value) -> Option<u64> {
    let effort = request.get("reasoning_effort").and_then(Value::as_str)?;
    if let Some(exact) = request.get(THINKING_BUDGET).and_then(Value::as_u64) {
        return Some(exact);
    }
    match effort {
        "none" => None,
        "minimal" | "low" => Some(1024),
        "medium" => Some(4096),
        _ => Some(16384),
    }
}

/// A system message's content as text blocks, one per part (so that a cache point after part
/// `j` lands after block `j`).
fn text_blocks(content: &Value) -> Vec<Value> {
    match content {
        Value::String(s) if !s.is_empty() => vec![json!({"type": "text", "text": s})],
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .map(|t| json!({"type": "text", "text": t}))
            .collect(),
        _ => Vec::new(),
    }
}

/// An assistant message's blocks: its signed reasoning first, as it came, then its text and
/// its tool calls.
fn assistant_blocks(m: &Value) -> Vec<Value> {
    let mut blocks: Vec<Value> = m[REASONING_BLOCKS]
        .as_array()
        .map(|b| {
            b.iter()
                .filter(|b| matches!(b["type"].as_str(), Some("thinking" | "redacted_thinking")))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    let text = content_text(&m["content"]);
    if !text.is_empty() {
        blocks.push(json!({"type": "text", "text": text}));
    }
    for call in m["tool_calls"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        let args = call["function"]["arguments"].as_str().unwrap_or("{}");
        let input: Value = serde_json::from_str(args).unwrap_or_else(|_| json!({}));
        blocks.push(json!({"type": "tool_use", "id": call["id"],
            "name": call["function"]["name"], "input": input}));
    }
    blocks
}

/// `cache_control` on the blocks the points follow: block `part` when the message's parts map
/// one to one onto blocks, else its last block (thinking blocks cannot carry one, so the last
/// other block).
fn mark(blocks: &mut [Value], points: &[&CachePoint], parts_map_to_blocks: bool) {
    for p in points {
        let at = match p.anchor {
            CacheAnchor::Message { part: Some(j), .. } if parts_map_to_blocks => {
                Some(j.min(blocks.len().saturating_sub(1)))
            }
            _ => blocks.iter().rposition(|b| {
                !matches!(b["type"].as_str(), Some("thinking" | "redacted_thinking"))
            }),
        };
        if let Some(block) = at.and_then(|i| blocks.get_mut(i)) {
            block["cache_control"] = cache_control(p);
        }
    }
}

fn cache_control(p: &CachePoint) -> Value {
    match p.ttl {
        Some(ttl) => json!({"type": "ephemeral", "ttl": ttl.as_str()}),
        None => json!({"type": "ephemeral"}),
    }
}

fn tools(request: &Value, points: &[CachePoint]) -> Option<Value> {
    let list = request["tools"].as_array().filter(|l| !l.is_empty())?;
    Some(Value::Array(
        list.iter()
            .enumerate()
            .map(|(index, tool)| {
                let f = &tool["function"];
                let schema = match f.get("parameters") {
                    Some(p) if p.is_object() => p.clone(),
                    _ => json!({"type": "object", "properties": {}}),
                };
                let mut t = json!({"name": f["name"], "input_schema": schema});
                if let Some(d) = f["description"].as_str() {
                    t["description"] = d.into();
                }
                if let Some(p) = points
                    .iter()
                    .find(|p| p.anchor == CacheAnchor::Tool { index })
                {
                    t["cache_control"] = cache_control(p);
                }
                t
            })
            .collect(),
    ))
}

fn tool_choice(request: &Value) -> Option<Value> {
    let mut choice = match request.get("tool_choice") {
        Some(Value::String(s)) if s == "required" => json!({"type": "any"}),
        Some(Value::String(s)) if s == "none" => json!({"type": "none"}),
        Some(Value::Object(o)) => json!({"type": "tool",
            "name": o.get("function").and_then(|f| f.get("name")).cloned().unwrap_or_default()}),
        _ => json!({"type": "auto"}),
    };
    if request.get("parallel_tool_calls") == Some(&Value::Bool(false)) && choice["type"] != "none" {
        choice["disable_parallel_tool_use"] = true.into();
    } else if request.get("tool_choice").is_none() {
        return None;
    }
    Some(choice)
}

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
fn usage_json(u: &Value) -> Value {
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
fn completion(message: &Value, native: bool) -> Value {
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
fn stream_error(error: &Value) -> UpstreamError {
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
struct StreamState {
    native: bool,
    id: Value,
    model: Value,
    /// Content-block index → chat tool-call index.
    tool_index: HashMap<u64, usize>,
    usage: Map<String, Value>,
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
    fn event(&mut self, data: Value) -> Result<Vec<Value>, UpstreamError> {
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

#[async_trait]
impl ChatUpstream for AnthropicUpstream {
    async fn complete(&self, request: Value) -> Result<Value, UpstreamError> {
        let (mut body, native) = self.body(&request).await?;
        body["stream"] = false.into();
        let response = self.post(&self.messages_url, &body, false).await?;
        let message = read_json(response).await?;
        if message["type"] == "error" {
            return Err(stream_error(&message["error"]));
        }
        if !message["content"].is_array() {
            return Err(UpstreamError::Protocol("the message has no content".into()));
        }
        Ok(completion(&message, native))
    }

    async fn stream(&self, request: Value) -> Result<ChunkStream, UpstreamError> {
        let (mut body, native) = self.body(&request).await?;
        body["stream"] = true.into();
        let response = self.post(&self.messages_url, &body, true).await?;
        struct St<S> {
            bytes: std::pin::Pin<Box<S>>,
            parser: SseParser,
            ready: VecDeque<Value>,
            state: StreamState,
            stopped: bool,
            done: bool,
        }
        let st = St {
            bytes: Box::pin(response.bytes_stream()),
            parser: SseParser::default(),
            ready: VecDeque::new(),
            state: StreamState {
                native,
                id: Value::Null,
                model: request["model"].clone(),
                tool_index: HashMap::new(),
                usage: Map::new(),
            },
            stopped: false,
            done: false,
        };
        let chunks = futures::stream::unfold(st, |mut st| async move {
            loop {
                if let Some(chunk) = st.ready.pop_front() {
                    return Some((Ok(chunk), st));
                }
                if st.done || st.stopped {
                    return None;
                }
                let bytes = match tokio::time::timeout(STREAM_IDLE_TIMEOUT, st.bytes.next()).await {
                    Err(_) => {
                        st.done = true;
                        let e = UpstreamError::Rejected {
                            status: 504,
                            code: Some("timeout".into()),
                            message: "the stream went silent".into(),
                            retry_after: None,
                        };
                        return Some((Err(e), st));
                    }
                    Ok(Some(Ok(bytes))) => bytes,
                    Ok(Some(Err(e))) => {
                        st.done = true;
                        return Some((Err(transport_error(e)), st));
                    }
                    Ok(None) => {
                        st.done = true;
                        let e = UpstreamError::Unreachable(
                            "the stream ended before message_stop".into(),
                        );
                        return Some((Err(e), st));
                    }
                };
                for data in st.parser.push(&bytes) {
                    let parsed = serde_json::from_str::<Value>(&data)
                        .map_err(|e| {
                            UpstreamError::Protocol(format!("a stream event is not JSON: {e}"))
                        })
                        .and_then(|event| {
                            let stop = event["type"] == "message_stop";
                            st.state.event(event).map(|chunks| (chunks, stop))
                        });
                    match parsed {
                        Ok((chunks, stop)) => {
                            st.ready.extend(chunks);
                            if stop {
                                st.stopped = true;
                                break;
                            }
                        }
                        Err(e) => {
                            st.done = true;
                            st.ready.clear();
                            return Some((Err(e), st));
                        }
                    }
                }
            }
        });
        Ok(chunks.boxed())
    }

    async fn count_tokens(&self, request: Value) -> Result<Option<u64>, UpstreamError> {
        let (body, _) = self.body(&request).await?;
        let body: Map<String, Value> = body
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, _)| COUNT_TOKENS_FIELDS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let response = self
            .post(&self.count_tokens_url, &Value::Object(body), false)
            .await?;
        let counted = read_json(response).await?;
        counted["input_tokens"]
            .as_u64()
            .map(Some)
            .ok_or_else(|| UpstreamError::Protocol("the count has no input_tokens".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::upstream::CacheTtl;

    #[test]
    fn cache_points_become_cache_control_on_the_block_they_follow() {
        let mut blocks = vec![
            json!({"type": "thinking", "thinking": "t", "signature": "s"}),
            json!({"type": "text", "text": "a"}),
            json!({"type": "tool_use", "id": "x", "name": "f", "input": {}}),
        ];
        let whole = CachePoint {
            anchor: CacheAnchor::Message {
                index: 0,
                part: None,
            },
            ttl: Some(CacheTtl::OneHour),
        };
        mark(&mut blocks, &[&whole], false);
        assert_eq!(
            blocks[2]["cache_control"],
            json!({"type": "ephemeral", "ttl": "1h"})
        );
        assert!(blocks[0].get("cache_control").is_none());
        let mut thinking_only = vec![json!({"type": "thinking", "thinking": "t"})];
        mark(&mut thinking_only, &[&whole], false);
        assert!(thinking_only[0].get("cache_control").is_none());
        let mut parts = vec![
            json!({"type": "text", "text": "a"}),
            json!({"type": "text", "text": "b"}),
        ];
        let first = CachePoint {
            anchor: CacheAnchor::Message {
                index: 0,
                part: Some(0),
            },
            ttl: None,
        };
        mark(&mut parts, &[&first], true);
        assert_eq!(parts[0]["cache_control"], json!({"type": "ephemeral"}));
        assert!(parts[1].get("cache_control").is_none());
    }

    #[test]
    fn usage_counts_cache_reads_and_writes_in_the_prompt() {
        let u = usage_json(&json!({"input_tokens": 10, "output_tokens": 5,
            "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 200}));
        assert_eq!(u["prompt_tokens"], 1210);
        assert_eq!(u["total_tokens"], 1215);
        assert_eq!(u["prompt_tokens_details"]["cached_tokens"], 1000);
        assert_eq!(u["prompt_tokens_details"]["cache_write_tokens"], 200);
    }

    #[test]
    fn a_native_stream_gives_every_event_a_chunk_and_ends_with_the_usage() {
        let mut st = StreamState {
            native: true,
            id: Value::Null,
            model: json!("claude"),
            tool_index: HashMap::new(),
            usage: Map::new(),
        };
        let start = st
            .event(json!({"type": "message_start", "message": {"id": "msg_1",
                "model": "claude-x", "usage": {"input_tokens": 7, "output_tokens": 1,
                "cache_read_input_tokens": 2048}}}))
            .unwrap();
        assert_eq!(start[0][ANTHROPIC_EVENT]["event"], "message_start");
        let ping = st.event(json!({"type": "ping"})).unwrap();
        assert_eq!(ping.len(), 1, "a native ping still reaches the relay");
        let tool = st
            .event(json!({"type": "content_block_start", "index": 1,
                "content_block": {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}}))
            .unwrap();
        assert_eq!(tool[0]["choices"][0]["delta"]["tool_calls"][0]["index"], 0);
        let args = st
            .event(json!({"type": "content_block_delta", "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": "{\"a\""}}))
            .unwrap();
        assert_eq!(
            args[0]["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"],
            "{\"a\""
        );
        st.event(
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 42}}),
        )
        .unwrap();
        let stop = st.event(json!({"type": "message_stop"})).unwrap();
        assert_eq!(stop.len(), 2);
        assert_eq!(stop[1]["usage"]["prompt_tokens"], 2055);
        assert_eq!(stop[1]["usage"]["completion_tokens"], 42);
        assert_eq!(stop[1]["id"], "msg_1");
    }

    #[test]
    fn a_translated_stream_skips_events_with_nothing_to_say_and_raises_errors() {
        let mut st = StreamState {
            native: false,
            id: Value::Null,
            model: json!("claude"),
            tool_index: HashMap::new(),
            usage: Map::new(),
        };
        assert!(st.event(json!({"type": "ping"})).unwrap().is_empty());
        let err = st
            .event(
                json!({"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}),
            )
            .unwrap_err();
        assert!(err.is_retryable(), "{err:?}");
    }

    #[test]
    fn reasoning_blocks_go_back_first_and_redacted_ones_stay_as_they_came() {
        let m = json!({"role": "assistant", "content": "done",
            REASONING_BLOCKS: [
                {"type": "thinking", "thinking": "hm", "signature": "sig"},
                {"type": "redacted_thinking", "data": "opaque"}],
            "tool_calls": [{"id": "toolu_1", "type": "function",
                "function": {"name": "f", "arguments": "{\"x\":1}"}}]});
        let blocks = assistant_blocks(&m);
        let kinds: Vec<_> = blocks.iter().map(|b| b["type"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["thinking", "redacted_thinking", "text", "tool_use"]);
        assert_eq!(blocks[1]["data"], "opaque");
        assert_eq!(blocks[3]["input"], json!({"x": 1}));
    }

    #[test]
    fn a_thinking_budget_stays_below_max_tokens() {
        let thinking = |request: Value| thinking_budget(&request);
        assert_eq!(thinking(json!({"reasoning_effort": "low"})), Some(1024));
        assert_eq!(
            thinking(json!({"reasoning_effort": "high", THINKING_BUDGET: 3000})),
            Some(3000)
        );
        assert_eq!(thinking(json!({})), None);
    }
}
