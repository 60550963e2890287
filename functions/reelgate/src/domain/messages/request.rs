//! A Messages API request, read at the edge (`body`), as the chat-completions request the chat
//! use case validates and sends upstream. Checks here are the Messages API's own on the values
//! the body keeps as JSON (thinking, tools, `tool_choice`, system, the messages' blocks) and
//! name the offending field the way Anthropic does (`messages.0.content.1.source`); everything
//! the chat rules also check (capabilities, tools, reasoning efforts) is left to them.
//!
//! Media leave here as data URLs: a base64 image as it came, an image URL fetched through the
//! guarded fetcher (the upstream never fetches a caller's URL), a PDF as a `file` part for a
//! model with the `file` capability and as page images otherwise (as `/v1/responses` does).

use crate::domain::catalog::ChatModel;
use crate::domain::chat::validate::require_capability;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::messages::body::{invalid, MessageCountTokensRequest, MessagesRequest};
use crate::domain::messages::media::{
    decode, document_tokens, image_tokens, IMAGE_TYPES, MEASURED_DOCUMENT, MEASURED_IMAGE,
};
use crate::domain::messages::translated::Translated;
use crate::domain::responses::{convert, fetch};
use crate::ports::fetch::Fetcher;
use crate::ports::pdf::PdfRasterizer;
use crate::ports::upstream::request::ChatCompletionRequest;
use crate::ports::upstream::{extension, CacheAnchor, CachePoint, CacheTtl, MAX_CACHE_POINTS};
use base64::Engine;
use serde_json::{json, Map, Value};

/// `v` as an object, refused naming `param`.
fn object<'a>(v: &'a Value, param: &str) -> ApiResult<&'a Map<String, Value>> {
    v.as_object()
        .ok_or_else(|| invalid(param, "Input should be an object."))
}

/// The string `name` of the object at `at`, refused when missing or of another type.
fn string<'a>(o: &'a Map<String, Value>, name: &str, at: &str) -> ApiResult<&'a str> {
    o.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| invalid(&format!("{at}.{name}"), "Field required (a string)."))
}

/// Who answers the request: any upstream, through the chat translation; or only native
/// Anthropic upstreams, which are sent the caller's own body (so the server tools the model
/// offers are taken and left out of the chat translation).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Served {
    Translated,
    NativeAnthropic,
}

/// Translates a read Messages request for `model`, served as `served` says. Image URLs and
/// documents are read here (through `fetcher`, within one request's bound on fetched bytes), so
/// a failure names the block it came from.
pub async fn translate(
    fetcher: &dyn Fetcher,
    pdf: &dyn PdfRasterizer,
    model: &ChatModel,
    request: MessagesRequest,
    served: Served,
) -> ApiResult<Translated> {
    let fetcher = &fetch::RequestFetches::new(fetcher, fetch::MAX_REQUEST_FETCH_BYTES);
    let mut chat = Map::new();
    let counting = matches!(request, MessagesRequest::CountTokens(_));
    let (prompt, stream, stop_sequences) = match request {
        MessagesRequest::CountTokens(prompt) => {
            chat.insert("model".into(), prompt.model.clone().into());
            (prompt, false, Vec::new())
        }
        MessagesRequest::Create(r) => {
            chat.insert("model".into(), r.model.clone().into());
            chat.insert("max_completion_tokens".into(), r.max_tokens.into());
            let stream = r.stream.unwrap_or(false);
            if stream {
                chat.insert("stream".into(), true.into());
            }
            for (name, value) in [("temperature", r.temperature), ("top_p", r.top_p)] {
                if let Some(n) = value {
                    chat.insert(name.into(), json!(n));
                }
            }
            if let Some(k) = r.top_k {
                chat.insert("top_k".into(), k.into());
            }
            let stop_sequences = r.stop_sequences.unwrap_or_default();
            if !stop_sequences.is_empty() {
                chat.insert("stop".into(), json!(stop_sequences));
            }
            if let Some(user) = r.metadata.and_then(|m| m.user_id) {
                chat.insert("user".into(), user.into());
            }
            let prompt = MessageCountTokensRequest {
                model: r.model,
                messages: r.messages,
                system: r.system,
                thinking: r.thinking,
                tools: r.tools,
                tool_choice: r.tool_choice,
            };
            (prompt, stream, stop_sequences)
        }
    };
    let mut marks = CacheMarks::default();
    let mut thinking_budget = None;
    if let Some(v) = &prompt.thinking {
        if let Some((effort, budget)) = thinking(model, v)? {
            // Anthropic's rule: the thinking budget is part of max_tokens, and less than it.
            if chat
                .get("max_completion_tokens")
                .and_then(Value::as_u64)
                .is_some_and(|max| budget >= max)
            {
                return Err(invalid(
                    "thinking.budget_tokens",
                    "Input should be less than max_tokens.",
                ));
            }
            chat.insert("reasoning_effort".into(), effort.into());
            thinking_budget = Some(budget);
        }
    }
    let tool_names = match &prompt.tools {
        Some(v) => {
            let (tools, names) = tools(v, &mut marks, served)?;
            if !tools.is_empty() {
                chat.insert("tools".into(), Value::Array(tools));
            }
            names
        }
        None => Vec::new(),
    };
    if let Some(v) = &prompt.tool_choice {
        tool_choice(v, &tool_names, &mut chat)?;
    }

    let mut messages = Vec::new();
    if let Some(v) = &prompt.system {
        messages.push(json!({"role": "system", "content": system(v, &mut marks)?}));
    }
    let list = prompt
        .messages
        .as_ref()
        .ok_or_else(|| invalid("messages", "Field required."))?;
    if list.is_empty() {
        return Err(invalid("messages", "At least one message is required."));
    }
    let measured = std::sync::atomic::AtomicU64::new(0);
    let from = Sources {
        fetcher,
        pdf,
        model,
        served,
        measured: counting.then_some(&measured),
    };
    for (i, m) in list.iter().enumerate() {
        let at = format!("messages.{i}");
        message(&from, m, &at, &mut messages, &mut marks).await?;
    }
    chat.insert("messages".into(), Value::Array(messages));
    Ok(Translated {
        chat: Value::Object(chat),
        stream,
        stop_sequences,
        thinking_budget,
        cache_points: marks.finish()?,
        measured_tokens: measured.into_inner(),
    })
}

/// `thinking` → the chat rules' `reasoning_effort` and the exact budget: the budget picks the
/// effort whose Bedrock budget (1024, 4096, 16384 tokens) it reaches, then the nearest one the
/// model accepts; Claude on Bedrock gets the budget itself.
fn thinking(model: &ChatModel, v: &Value) -> ApiResult<Option<(String, u64)>> {
    let t = object(v, "thinking")?;
    match t.get("type").and_then(Value::as_str) {
        Some("disabled") => return Ok(None),
        Some("enabled") => {}
        _ => {
            return Err(invalid(
                "thinking.type",
                "Input should be 'enabled' or 'disabled'.",
            ))
        }
    }
    let budget = t
        .get("budget_tokens")
        .and_then(Value::as_u64)
        .filter(|b| *b >= 1024)
        .ok_or_else(|| {
            invalid(
                "thinking.budget_tokens",
                "Input should be an integer of at least 1024.",
            )
        })?;
    if model.reasoning_efforts.is_empty() {
        return Err(crate::domain::chat::validate::capability_mismatch(
            model,
            "reasoning",
            "thinking",
        ));
    }
    let wanted = match budget {
        0..=1024 => 0,
        1025..=4096 => 1,
        _ => 2,
    };
    const LADDER: [&str; 3] = ["low", "medium", "high"];
    let accepted: Vec<usize> = (0..LADDER.len())
        .filter(|i| model.reasoning_efforts.iter().any(|e| e == LADDER[*i]))
        .collect();
    let pick = accepted
        .iter()
        .min_by_key(|i| i.abs_diff(wanted))
        .map(|i| LADDER[*i].to_owned())
        .unwrap_or_else(|| model.reasoning_efforts[0].clone());
    Ok(Some((pick, budget)))
}

fn tools(
    list: &[Value],
    marks: &mut CacheMarks,
    served: Served,
) -> ApiResult<(Vec<Value>, Vec<String>)> {
    let mut out = Vec::with_capacity(list.len());
    let mut names = Vec::with_capacity(list.len());
    for (i, t) in list.iter().enumerate() {
        let at = format!("tools.{i}");
        let o = object(t, &at)?;
        match o.get("type").and_then(Value::as_str) {
            None | Some("custom") => {}
            // Anthropic runs its server tools itself; the caller's body reaches it as sent.
            Some(_) if served == Served::NativeAnthropic => {
                string(o, "name", &at)?;
                continue;
            }
            Some(other) => {
                return Err(invalid(
                    &format!("{at}.type"),
                    format!("The server tool '{other}' is not supported here; only client tools (name, description, input_schema) are."),
                ))
            }
        }
        let name = string(o, "name", &at)?;
        let schema = o
            .get("input_schema")
            .filter(|s| s.is_object())
            .ok_or_else(|| {
                invalid(
                    &format!("{at}.input_schema"),
                    "Field required (a JSON schema object).",
                )
            })?;
        let mut function = json!({"name": name, "parameters": schema});
        if let Some(d) = o.get("description").and_then(Value::as_str) {
            function["description"] = d.into();
        }
        marks.note(o, &at, CacheAnchor::Tool { index: out.len() })?;
        out.push(json!({"type": "function", "function": function}));
        names.push(name.to_owned());
    }
    Ok((out, names))
}

fn tool_choice(v: &Value, tool_names: &[String], chat: &mut Map<String, Value>) -> ApiResult<()> {
    let o = object(v, "tool_choice")?;
    let choice = match o.get("type").and_then(Value::as_str) {
        Some("auto") => json!("auto"),
        Some("any") => json!("required"),
        Some("none") => json!("none"),
        Some("tool") => {
            let name = string(o, "name", "tool_choice")?;
            if !tool_names.iter().any(|n| n == name) {
                return Err(invalid(
                    "tool_choice.name",
                    format!("No tool named '{name}' is in tools."),
                ));
            }
            json!({"type": "function", "function": {"name": name}})
        }
        _ => {
            return Err(invalid(
                "tool_choice.type",
                "Input should be 'auto', 'any', 'tool' or 'none'.",
            ))
        }
    };
    if tool_names.is_empty() && choice != json!("none") {
        return Err(invalid("tool_choice", "tool_choice needs tools."));
    }
    if !tool_names.is_empty() {
        chat.insert("tool_choice".into(), choice);
    }
    if let Some(Value::Bool(true)) = o.get("disable_parallel_tool_use") {
        if !tool_names.is_empty() {
            chat.insert("parallel_tool_calls".into(), false.into());
        }
    }
    Ok(())
}

/// `system` (a string or text blocks) as the system message's content.
fn system(v: &Value, marks: &mut CacheMarks) -> ApiResult<Value> {
    match v {
        Value::String(s) => Ok(Value::String(s.clone())),
        Value::Array(blocks) => {
            let mut parts = Vec::with_capacity(blocks.len());
            for (i, b) in blocks.iter().enumerate() {
                let at = format!("system.{i}");
                let o = object(b, &at)?;
                if o.get("type").and_then(Value::as_str) != Some("text") {
                    return Err(invalid(
                        &format!("{at}.type"),
                        "System blocks must be text.",
                    ));
                }
                // The system message is the chat request's first.
                let anchor = CacheAnchor::Message {
                    index: 0,
                    part: Some(parts.len()),
                };
                marks.note(o, &at, anchor)?;
                parts.push(json!({"type": "text", "text": string(o, "text", &at)?}));
            }
            Ok(Value::Array(parts))
        }
        _ => Err(invalid(
            "system",
            "Input should be a string or a list of text blocks.",
        )),
    }
}

/// What translating a message reads from: the fetcher and rasterizer for its media, the model
/// it is for, and how that model is served.
#[derive(Clone, Copy)]
struct Sources<'a> {
    fetcher: &'a dyn Fetcher,
    pdf: &'a dyn PdfRasterizer,
    model: &'a ChatModel,
    served: Served,
    /// Set for a token count: URL images and documents are measured into it, not kept.
    measured: Option<&'a std::sync::atomic::AtomicU64>,
}

/// One Messages API message as chat messages: an assistant turn is one message (text and
/// `tool_calls`); a user turn's `tool_result` blocks become `tool` messages, first, then the
/// rest of its blocks one user message.
async fn message(
    from: &Sources<'_>,
    m: &Value,
    at: &str,
    out: &mut Vec<Value>,
    marks: &mut CacheMarks,
) -> ApiResult<()> {
    let served = from.served;
    let o = object(m, at)?;
    let role = match o.get("role").and_then(Value::as_str) {
        Some(r @ ("user" | "assistant")) => r,
        _ => {
            return Err(invalid(
                &format!("{at}.role"),
                "Input should be 'user' or 'assistant'.",
            ))
        }
    };
    let blocks = match o.get("content") {
        Some(Value::String(s)) => {
            out.push(json!({"role": role, "content": s}));
            return Ok(());
        }
        Some(Value::Array(blocks)) => blocks,
        _ => {
            return Err(invalid(
                &format!("{at}.content"),
                "Input should be a string or a list of content blocks.",
            ))
        }
    };
    if role == "assistant" {
        // A cache point on any of its blocks covers the whole chat message they become.
        let anchor = CacheAnchor::Message {
            index: out.len(),
            part: None,
        };
        for (j, b) in blocks.iter().enumerate() {
            if let Some(bo) = b.as_object() {
                let bat = format!("{at}.content.{j}");
                if matches!(
                    bo.get("type").and_then(Value::as_str),
                    Some("thinking" | "redacted_thinking")
                ) && bo.contains_key("cache_control")
                {
                    return Err(invalid(
                        &format!("{bat}.cache_control"),
                        "Thinking blocks cannot be cached directly.",
                    ));
                }
                marks.note(bo, &bat, anchor)?;
            }
        }
        out.push(assistant(blocks, at, served)?);
        return Ok(());
    }
    let mut parts = Vec::new();
    // Cache points after a part of the user message this turn becomes (its index is known once
    // the turn's tool messages are out).
    let mut part_marks = CacheMarks::default();
    for (j, b) in blocks.iter().enumerate() {
        let bat = format!("{at}.content.{j}");
        let bo = object(b, &bat)?;
        if bo.get("type").and_then(Value::as_str) == Some("tool_result") {
            let anchor = CacheAnchor::Message {
                index: out.len(),
                part: None,
            };
            marks.note(bo, &bat, anchor)?;
        }
        match bo.get("type").and_then(Value::as_str) {
            Some("text") => parts.push(json!({"type": "text", "text": string(bo, "text", &bat)?})),
            Some("image") => parts.push(image(from, bo, &bat).await?),
            Some("document") => parts.extend(document(from, bo, &bat).await?),
            Some("tool_result") => {
                let id = string(bo, "tool_use_id", &bat)?;
                let (text, images) = tool_result(from, bo, &bat).await?;
                out.push(json!({"role": "tool", "tool_call_id": id, "content": text}));
                // Chat tool messages carry text only: a result's images follow in the user turn.
                parts.extend(images);
            }
            Some(t @ ("tool_use" | "thinking" | "redacted_thinking")) => {
                return Err(invalid(
                    &format!("{bat}.type"),
                    format!("A '{t}' block belongs in an assistant message."),
                ))
            }
            _ => {
                return Err(invalid(
                    &format!("{bat}.type"),
                    "Input should be 'text', 'image', 'document' or 'tool_result'.",
                ))
            }
        }
        if matches!(
            bo.get("type").and_then(Value::as_str),
            Some("text" | "image" | "document")
        ) && !parts.is_empty()
        {
            let anchor = CacheAnchor::Message {
                index: 0,
                part: Some(parts.len() - 1),
            };
            part_marks.note(bo, &bat, anchor)?;
        }
    }
    if !parts.is_empty() {
        let index = out.len();
        out.push(json!({"role": "user", "content": parts}));
        for mut point in part_marks.points {
            if let CacheAnchor::Message { index: i, .. } = &mut point.anchor {
                *i = index;
            }
            marks.points.push(point);
        }
    }
    Ok(())
}

/// The request's `cache_control` blocks as cache points in the chat request, checked as
/// Anthropic checks them.
#[derive(Default)]
struct CacheMarks {
    points: Vec<CachePoint>,
}

impl CacheMarks {
    /// Notes a cache point after `anchor` when `block` has `cache_control`.
    fn note(&mut self, block: &Map<String, Value>, at: &str, anchor: CacheAnchor) -> ApiResult<()> {
        let Some(control) = block.get("cache_control") else {
            return Ok(());
        };
        let at = format!("{at}.cache_control");
        if control.is_null() {
            return Ok(());
        }
        let o = object(control, &at)?;
        if let Some(k) = o.keys().find(|k| !matches!(k.as_str(), "type" | "ttl")) {
            return Err(invalid(
                &format!("{at}.{k}"),
                "Extra inputs are not permitted.",
            ));
        }
        if o.get("type").and_then(Value::as_str) != Some("ephemeral") {
            return Err(invalid(
                &format!("{at}.type"),
                "Input should be 'ephemeral'.",
            ));
        }
        let ttl = match o.get("ttl") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                serde_json::from_value::<CacheTtl>(v.clone())
                    .map_err(|_| invalid(&format!("{at}.ttl"), "Input should be '5m' or '1h'."))?,
            ),
        };
        self.points.push(CachePoint { anchor, ttl });
        Ok(())
    }

    /// The checked points: at most [`MAX_CACHE_POINTS`], and no one-hour entry after a
    /// five-minute one (a longer-lived prefix cannot extend a shorter-lived one).
    fn finish(self) -> ApiResult<Vec<CachePoint>> {
        if self.points.len() > MAX_CACHE_POINTS {
            return Err(ApiError::invalid(
                "cache_control",
                format!(
                    "A maximum of {MAX_CACHE_POINTS} blocks with cache_control may be provided. Found {}.",
                    self.points.len()
                ),
            ));
        }
        let ttl = |p: &CachePoint| p.ttl.unwrap_or(CacheTtl::FiveMinutes);
        if let Some(w) = self
            .points
            .windows(2)
            .find(|w| ttl(&w[0]) == CacheTtl::FiveMinutes && ttl(&w[1]) == CacheTtl::OneHour)
        {
            tracing::debug!(first = ?w[0], second = ?w[1], "cache TTLs out of order");
            return Err(ApiError::invalid(
                "cache_control",
                "A cache_control with ttl '1h' cannot come after one with ttl '5m' (tools, system, then messages).",
            ));
        }
        Ok(self.points)
    }
}

/// Whether a block is a server tool's call or result (`server_tool_use`, `web_search_tool_result`,
/// `mcp_tool_use`, …), which only Anthropic itself takes back.
fn is_server_tool_block(kind: &str) -> bool {
    kind == "server_tool_use"
        || kind.starts_with("mcp_tool_")
        || (kind.ends_with("_tool_result") && kind != "tool_result")
}

fn assistant(blocks: &[Value], at: &str, served: Served) -> ApiResult<Value> {
    let mut text = String::new();
    let mut calls = Vec::new();
    let mut reasoning = Vec::new();
    for (j, b) in blocks.iter().enumerate() {
        let bat = format!("{at}.content.{j}");
        let bo = object(b, &bat)?;
        match bo.get("type").and_then(Value::as_str) {
            Some("text") => text.push_str(string(bo, "text", &bat)?),
            Some("tool_use") => {
                let input = bo.get("input").filter(|i| i.is_object()).ok_or_else(|| {
                    invalid(&format!("{bat}.input"), "Input should be an object.")
                })?;
                calls.push(json!({
                    "id": string(bo, "id", &bat)?,
                    "type": "function",
                    "function": {"name": string(bo, "name", &bat)?, "arguments": input.to_string()},
                }));
            }
            // Chat completions take no reasoning back; Claude (on Bedrock) wants its signed
            // thinking again beside its tool calls, so the blocks ride along as an extension.
            Some("thinking") => reasoning.push(json!({
                "type": "thinking",
                "thinking": string(bo, "thinking", &bat)?,
                "signature": string(bo, "signature", &bat)?,
            })),
            Some("redacted_thinking") => reasoning.push(json!({
                "type": "redacted_thinking",
                "data": string(bo, "data", &bat)?,
            })),
            // The caller's body goes to Anthropic as sent; the chat translation has no place
            // for a server tool's turn.
            Some(kind) if served == Served::NativeAnthropic && is_server_tool_block(kind) => {}
            _ => {
                return Err(invalid(
                    &format!("{bat}.type"),
                    "An assistant message takes 'text', 'tool_use' and 'thinking' blocks.",
                ))
            }
        }
    }
    let mut m = json!({"role": "assistant", "content": if text.is_empty() && !calls.is_empty() { Value::Null } else { Value::String(text) }});
    if !calls.is_empty() {
        m["tool_calls"] = Value::Array(calls);
    }
    if !reasoning.is_empty() {
        m[extension::REASONING_BLOCKS] = Value::Array(reasoning);
    }
    Ok(m)
}

/// A `tool_result`'s content as the tool message's text, and its images for the user turn.
async fn tool_result(
    from: &Sources<'_>,
    o: &Map<String, Value>,
    at: &str,
) -> ApiResult<(String, Vec<Value>)> {
    let mut text = String::new();
    let mut images = Vec::new();
    match o.get("content") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => text.push_str(s),
        Some(Value::Array(blocks)) => {
            for (k, b) in blocks.iter().enumerate() {
                let bat = format!("{at}.content.{k}");
                let bo = object(b, &bat)?;
                match bo.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        if !text.is_empty() {
                            text.push('\n');
                        }
                        text.push_str(string(bo, "text", &bat)?);
                    }
                    Some("image") => images.push(image(from, bo, &bat).await?),
                    _ => {
                        return Err(invalid(
                            &format!("{bat}.type"),
                            "A tool result's content takes 'text' and 'image' blocks.",
                        ))
                    }
                }
            }
        }
        Some(_) => {
            return Err(invalid(
                &format!("{at}.content"),
                "Input should be a string or a list of content blocks.",
            ))
        }
    }
    if let Some(Value::Bool(true)) = o.get("is_error") {
        // Chat has no error flag on a tool message; the model reads it in the text instead.
        text = format!("[tool error] {text}");
    }
    Ok((text, images))
}

async fn image(from: &Sources<'_>, o: &Map<String, Value>, at: &str) -> ApiResult<Value> {
    let Sources {
        fetcher,
        model,
        measured,
        ..
    } = *from;
    // Before any fetch: a model that cannot see does not make us download.
    require_capability(model, "vision", at)?;
    let sat = format!("{at}.source");
    let source = object(o.get("source").unwrap_or(&Value::Null), &sat)?;
    let (mime, bytes) = match source.get("type").and_then(Value::as_str) {
        Some("base64") => {
            let mime = string(source, "media_type", &sat)?;
            if !IMAGE_TYPES.contains(&mime) {
                return Err(invalid(
                    &format!("{sat}.media_type"),
                    format!("Input should be one of {}.", IMAGE_TYPES.join(", ")),
                ));
            }
            (
                mime.to_owned(),
                decode(string(source, "data", &sat)?, &sat)?,
            )
        }
        Some("url") => {
            let url = string(source, "url", &sat)?;
            let bytes = fetch::fetch(fetcher, url, &format!("{sat}.url")).await?;
            let sniffed = reelgate_media::sniff(&bytes[..bytes.len().min(4096)]);
            if !IMAGE_TYPES.contains(&sniffed.mime) {
                return Err(invalid(
                    &format!("{sat}.url"),
                    format!("The URL did not give an image (it gave {}).", sniffed.mime),
                ));
            }
            if let Some(measured) = measured {
                let tokens = image_tokens(&bytes, &format!("{sat}.url"))?;
                measured.fetch_add(tokens, std::sync::atomic::Ordering::Relaxed);
                return Ok(json!({"type": "text", "text": MEASURED_IMAGE}));
            }
            (sniffed.mime.to_string(), bytes)
        }
        _ => {
            return Err(invalid(
                &format!("{sat}.type"),
                "Input should be 'base64' or 'url'.",
            ))
        }
    };
    let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
    Ok(json!({"type": "image_url", "image_url": {"url": format!("data:{mime};base64,{b64}")}}))
}

async fn document(from: &Sources<'_>, o: &Map<String, Value>, at: &str) -> ApiResult<Vec<Value>> {
    let Sources {
        fetcher,
        pdf,
        model,
        measured,
        ..
    } = *from;
    let sat = format!("{at}.source");
    let source = object(o.get("source").unwrap_or(&Value::Null), &sat)?;
    let title = o.get("title").and_then(Value::as_str);
    let bytes = match source.get("type").and_then(Value::as_str) {
        Some("text") => {
            let text = string(source, "data", &sat)?;
            let name = title.unwrap_or("document");
            return Ok(vec![
                json!({"type": "text", "text": format!("<document title=\"{name}\">\n{text}\n</document>")}),
            ]);
        }
        Some("content") => {
            let blocks = source
                .get("content")
                .and_then(Value::as_array)
                .ok_or_else(|| {
                    invalid(
                        &format!("{sat}.content"),
                        "Input should be a list of text blocks.",
                    )
                })?;
            let mut parts = Vec::new();
            for (k, b) in blocks.iter().enumerate() {
                let bat = format!("{sat}.content.{k}");
                let bo = object(b, &bat)?;
                match bo.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        parts.push(json!({"type": "text", "text": string(bo, "text", &bat)?}))
                    }
                    Some("image") => parts.push(image(from, bo, &bat).await?),
                    _ => {
                        return Err(invalid(
                            &format!("{bat}.type"),
                            "Input should be 'text' or 'image'.",
                        ))
                    }
                }
            }
            return Ok(parts);
        }
        Some("base64") => {
            let mime = string(source, "media_type", &sat)?;
            if mime != "application/pdf" {
                return Err(invalid(
                    &format!("{sat}.media_type"),
                    "Input should be 'application/pdf'.",
                ));
            }
            decode(string(source, "data", &sat)?, &sat)?
        }
        Some("url") => {
            let url = string(source, "url", &sat)?;
            let bytes = fetch::fetch(fetcher, url, &format!("{sat}.url")).await?;
            if let Some(measured) = measured {
                if !bytes.starts_with(b"%PDF") {
                    return Err(invalid(&sat, "The document is not a PDF."));
                }
                let tokens = document_tokens(pdf, bytes, &sat).await?;
                measured.fetch_add(tokens, std::sync::atomic::Ordering::Relaxed);
                return Ok(vec![json!({"type": "text", "text": MEASURED_DOCUMENT})]);
            }
            bytes
        }
        _ => {
            return Err(invalid(
                &format!("{sat}.type"),
                "Input should be 'base64', 'url', 'text' or 'content'.",
            ))
        }
    };
    if !bytes.starts_with(b"%PDF") {
        return Err(invalid(&sat, "The document is not a PDF."));
    }
    if model.capabilities.iter().any(|c| c == "file") {
        // The upstream reads PDFs itself: passed through as chat's file part.
        let b64 = base64::engine::general_purpose::STANDARD.encode(&bytes);
        let filename = title.map_or_else(|| "document.pdf".to_owned(), |t| format!("{t}.pdf"));
        return Ok(vec![json!({"type": "file", "file": {
            "file_data": format!("data:application/pdf;base64,{b64}"),
            "filename": filename,
        }})]);
    }
    require_capability(model, "vision", at)?;
    let parts = convert::bytes_parts(pdf, bytes, title, &sat).await?;
    Ok(parts.iter().map(|part| json!(part)).collect())
}

/// The documented estimate of a request's input tokens (`/v1/messages/count_tokens`): the
/// estimate `/v1/responses` uses for truncation (a quarter token a character, an image 765,
/// 4 a message) over the translated messages, plus the tools' definitions as text.
pub fn estimate_input_tokens(chat: &ChatCompletionRequest) -> u64 {
    let mut tokens = convert::estimate_tokens(&chat.messages);
    if let Some(tools) = &chat.tools {
        let text = serde_json::to_string(tools).unwrap_or_default();
        tokens += (text.chars().count() as u64).div_ceil(4);
    }
    tokens
}

#[cfg(test)]
mod tests;
