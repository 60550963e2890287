//! The translation of a chat request into a Messages body: system messages → `system` blocks,
//! user parts → text, image and document blocks (fetched through the guarded fetcher and
//! inlined), assistant tool calls → `tool_use` after the signed reasoning blocks they came with,
//! `tool` messages → `tool_result` in a user turn, cache points → `cache_control` on the block
//! they follow, `reasoning_effort` → a thinking budget.

use crate::ports::fetch::Fetcher;
use crate::ports::upstream::extension::{REASONING_BLOCKS, THINKING_BUDGET};
use crate::ports::upstream::{cache_points, content_text, CacheAnchor, CachePoint, UpstreamError};
use base64::Engine;
use serde_json::{json, Map, Value};

/// Anthropic requires `max_tokens`; an OpenAI caller may leave it out.
const DEFAULT_MAX_TOKENS: u64 = 4096;
/// Anthropic's smallest thinking budget.
const MIN_THINKING_BUDGET: u64 = 1024;
/// Largest image or document fetched to inline it (Anthropic's own limits are lower; it says so).
const MAX_MEDIA_BYTES: u64 = 32 * 1024 * 1024;

/// The Messages body for a chat `request`.
pub(super) async fn translate(
    fetcher: &dyn Fetcher,
    request: &Value,
) -> Result<Value, UpstreamError> {
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
                user_blocks(fetcher, content, &format!("messages[{index}].content")).await?,
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
        if request.get("max_completion_tokens").is_none() && request.get("max_tokens").is_none() {
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

async fn fetch(
    fetcher: &dyn Fetcher,
    url: &str,
    param: &str,
) -> Result<(Vec<u8>, String), UpstreamError> {
    crate::adapters::guarded_fetch::inline_media(fetcher, url, param, MAX_MEDIA_BYTES).await
}

async fn user_blocks(
    fetcher: &dyn Fetcher,
    content: &Value,
    at: &str,
) -> Result<Vec<Value>, UpstreamError> {
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
                    fetch(fetcher, url, &format!("{at}[{i}].image_url.url")).await?;
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
                let (bytes, mime) =
                    fetch(fetcher, data, &format!("{at}[{i}].file.file_data")).await?;
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

pub(super) fn bad(message: impl Into<String>) -> UpstreamError {
    UpstreamError::Rejected {
        status: 400,
        code: Some("invalid_request_error".into()),
        message: message.into(),
        retry_after: None,
    }
}

/// The exact budget a Messages caller asked for, else the nearest one for the effort (as the
/// Converse adapter budgets it); none without an effort.
pub(super) fn thinking_budget(request: &Value) -> Option<u64> {
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
pub(super) fn assistant_blocks(m: &Value) -> Vec<Value> {
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
pub(super) fn mark(blocks: &mut [Value], points: &[&CachePoint], parts_map_to_blocks: bool) {
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
