//! The OpenAI-shaped request as a Converse call: system blocks, messages and their media, tools,
//! cache points, inference settings and reasoning (the mapping the parent module lists).

use aws_sdk_bedrockruntime::primitives::Blob;
use aws_sdk_bedrockruntime::types as bt;
use aws_smithy_types::{Document, Number};
use base64::Engine;
use reelgate::ports::upstream::extension::{REASONING_BLOCKS, THINKING_BUDGET};
use reelgate::ports::upstream::{
    cache_points, content_text, CacheAnchor, CachePoint, CacheTtl, UpstreamError,
};
use serde_json::{json, Map, Value};

use super::BedrockUpstream;

/// Largest image or video fetched to inline it (Bedrock's own limits are lower; it says so).
const MAX_MEDIA_BYTES: usize = 50 * 1024 * 1024;

/// What a Converse call needs, mapped from the OpenAI-shaped request.
pub(super) struct Mapped {
    pub(super) model_id: String,
    pub(super) system: Vec<bt::SystemContentBlock>,
    pub(super) messages: Vec<bt::Message>,
    pub(super) inference: bt::InferenceConfiguration,
    pub(super) tools: Option<bt::ToolConfiguration>,
    pub(super) additional: Option<Document>,
}

pub(super) fn bad(message: impl Into<String>) -> UpstreamError {
    UpstreamError::Rejected {
        status: 400,
        code: Some("unsupported_by_upstream".into()),
        message: message.into(),
        retry_after: None,
    }
}

fn build_err(e: impl std::fmt::Display) -> UpstreamError {
    UpstreamError::Protocol(format!("building the Bedrock request: {e}"))
}

pub fn json_to_document(value: &Value) -> Document {
    match value {
        Value::Null => Document::Null,
        Value::Bool(b) => Document::Bool(*b),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                Document::Number(Number::PosInt(u))
            } else if let Some(i) = n.as_i64() {
                Document::Number(Number::NegInt(i))
            } else {
                Document::Number(Number::Float(n.as_f64().unwrap_or_default()))
            }
        }
        Value::String(s) => Document::String(s.clone()),
        Value::Array(a) => Document::Array(a.iter().map(json_to_document).collect()),
        Value::Object(o) => Document::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), json_to_document(v)))
                .collect(),
        ),
    }
}

pub fn document_to_json(doc: &Document) -> Value {
    match doc {
        Document::Null => Value::Null,
        Document::Bool(b) => Value::Bool(*b),
        Document::Number(Number::PosInt(u)) => json!(u),
        Document::Number(Number::NegInt(i)) => json!(i),
        Document::Number(Number::Float(f)) => json!(f),
        Document::String(s) => Value::String(s.clone()),
        Document::Array(a) => Value::Array(a.iter().map(document_to_json).collect()),
        Document::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), document_to_json(v)))
                .collect(),
        ),
    }
}

/// A Converse cache point with `ttl` (the provider's default lifetime when `None`).
fn cache_point(ttl: Option<CacheTtl>) -> Result<bt::CachePointBlock, UpstreamError> {
    bt::CachePointBlock::builder()
        .r#type(bt::CachePointType::Default)
        .set_ttl(ttl.map(|t| bt::CacheTtl::from(t.as_str())))
        .build()
        .map_err(build_err)
}

/// A system message's text as system blocks: one text block, or, with cache points inside it,
/// the text up to each point, the point, and the rest.
fn system_blocks(
    content: &Value,
    points: &[&CachePoint],
) -> Result<Vec<bt::SystemContentBlock>, UpstreamError> {
    let parts = match content {
        Value::Array(parts) if !points.is_empty() => parts,
        _ => {
            let mut blocks = vec![bt::SystemContentBlock::Text(content_text(content))];
            if let Some(p) = points.last() {
                blocks.push(bt::SystemContentBlock::CachePoint(cache_point(p.ttl)?));
            }
            return Ok(blocks);
        }
    };
    let mut blocks = Vec::new();
    let mut text = String::new();
    for (j, part) in parts.iter().enumerate() {
        text.push_str(part.get("text").and_then(Value::as_str).unwrap_or_default());
        let here = points.iter().find(|p| match p.anchor {
            CacheAnchor::Message { part, .. } => part.unwrap_or(parts.len() - 1) == j,
            CacheAnchor::Tool { .. } => false,
        });
        if let Some(p) = here {
            if !text.is_empty() {
                blocks.push(bt::SystemContentBlock::Text(std::mem::take(&mut text)));
            }
            blocks.push(bt::SystemContentBlock::CachePoint(cache_point(p.ttl)?));
        }
    }
    if !text.is_empty() {
        blocks.push(bt::SystemContentBlock::Text(text));
    }
    Ok(blocks)
}

/// Puts cache points after the content blocks of one chat message: after block `part` (a user
/// message's parts map one to one onto blocks), else after the message's last block.
fn insert_cache_points(
    blocks: &mut Vec<bt::ContentBlock>,
    points: &[&CachePoint],
    parts_map_to_blocks: bool,
) -> Result<(), UpstreamError> {
    let mut at: Vec<(usize, Option<CacheTtl>)> = points
        .iter()
        .map(|p| {
            let end = blocks.len();
            let after = match p.anchor {
                CacheAnchor::Message { part: Some(j), .. } if parts_map_to_blocks => {
                    (j + 1).min(end)
                }
                _ => end,
            };
            (after, p.ttl)
        })
        .collect();
    // From the back, so the earlier positions stay where they were.
    at.sort_by_key(|(after, _)| std::cmp::Reverse(*after));
    at.dedup_by_key(|(after, _)| *after);
    for (after, ttl) in at {
        if after > 0 {
            blocks.insert(after, bt::ContentBlock::CachePoint(cache_point(ttl)?));
        }
    }
    Ok(())
}

impl BedrockUpstream {
    /// Bytes and MIME type of a data URL or an http(s) URL (`param` names it in a refusal).
    async fn fetch(&self, url: &str, param: &str) -> Result<(Vec<u8>, String), UpstreamError> {
        reelgate::adapters::guarded_fetch::inline_media(
            &self.fetcher,
            url,
            param,
            MAX_MEDIA_BYTES as u64,
        )
        .await
    }

    /// `at` is the content's parameter path (`messages[2].content`), for refusals.
    async fn user_blocks(
        &self,
        content: &Value,
        at: &str,
    ) -> Result<Vec<bt::ContentBlock>, UpstreamError> {
        let parts = match content {
            Value::String(s) => return Ok(vec![bt::ContentBlock::Text(s.clone())]),
            Value::Array(parts) => parts,
            _ => return Ok(Vec::new()),
        };
        let mut blocks = Vec::with_capacity(parts.len());
        for (i, part) in parts.iter().enumerate() {
            match part.get("type").and_then(Value::as_str).unwrap_or_default() {
                "text" => blocks.push(bt::ContentBlock::Text(
                    part["text"].as_str().unwrap_or_default().to_owned(),
                )),
                "image_url" => {
                    let url = part["image_url"]["url"].as_str().unwrap_or_default();
                    let (bytes, mime) =
                        self.fetch(url, &format!("{at}[{i}].image_url.url")).await?;
                    let format = match mime.as_str() {
                        "image/png" => bt::ImageFormat::Png,
                        "image/jpeg" | "image/jpg" => bt::ImageFormat::Jpeg,
                        "image/gif" => bt::ImageFormat::Gif,
                        "image/webp" => bt::ImageFormat::Webp,
                        other => {
                            return Err(bad(format!(
                                "Bedrock takes PNG, JPEG, GIF or WebP images, not {other}"
                            )))
                        }
                    };
                    let image = bt::ImageBlock::builder()
                        .format(format)
                        .source(bt::ImageSource::Bytes(Blob::new(bytes)))
                        .build()
                        .map_err(build_err)?;
                    blocks.push(bt::ContentBlock::Image(image));
                }
                "video_url" => {
                    let url = part["video_url"]["url"].as_str().unwrap_or_default();
                    let (bytes, mime) =
                        self.fetch(url, &format!("{at}[{i}].video_url.url")).await?;
                    let format = match mime.as_str() {
                        "video/mp4" => bt::VideoFormat::Mp4,
                        "video/quicktime" => bt::VideoFormat::Mov,
                        "video/webm" => bt::VideoFormat::Webm,
                        "video/x-matroska" => bt::VideoFormat::Mkv,
                        other => return Err(bad(format!("Bedrock does not take {other} video"))),
                    };
                    let video = bt::VideoBlock::builder()
                        .format(format)
                        .source(bt::VideoSource::Bytes(Blob::new(bytes)))
                        .build()
                        .map_err(build_err)?;
                    blocks.push(bt::ContentBlock::Video(video));
                }
                "file" => {
                    let file = &part["file"];
                    let data = file["file_data"].as_str().unwrap_or_default();
                    let (bytes, mime) = self
                        .fetch(data, &format!("{at}[{i}].file.file_data"))
                        .await?;
                    let format = match mime.as_str() {
                        "application/pdf" => bt::DocumentFormat::Pdf,
                        "text/plain" => bt::DocumentFormat::Txt,
                        "text/markdown" => bt::DocumentFormat::Md,
                        "text/html" => bt::DocumentFormat::Html,
                        "text/csv" => bt::DocumentFormat::Csv,
                        "application/msword" => bt::DocumentFormat::Doc,
                        "application/vnd.openxmlformats-officedocument.wordprocessingml.document" => bt::DocumentFormat::Docx,
                        "application/vnd.ms-excel" => bt::DocumentFormat::Xls,
                        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet" => bt::DocumentFormat::Xlsx,
                        other => return Err(bad(format!("Bedrock does not take {other} documents"))),
                    };
                    // Bedrock restricts document names to letters, digits, spaces, hyphens,
                    // parentheses and brackets, without consecutive spaces.
                    let name: String = file["filename"]
                        .as_str()
                        .unwrap_or("document")
                        .chars()
                        .map(|c| {
                            if c.is_ascii_alphanumeric() || "-()[]".contains(c) {
                                c
                            } else {
                                ' '
                            }
                        })
                        .collect::<String>()
                        .split_whitespace()
                        .collect::<Vec<_>>()
                        .join(" ");
                    let doc = bt::DocumentBlock::builder()
                        .format(format)
                        .name(if name.is_empty() {
                            format!("document {i}")
                        } else {
                            name
                        })
                        .source(bt::DocumentSource::Bytes(Blob::new(bytes)))
                        .build()
                        .map_err(build_err)?;
                    blocks.push(bt::ContentBlock::Document(doc));
                }
                other => {
                    return Err(bad(format!(
                        "this Bedrock adapter does not pass {other} content"
                    )))
                }
            }
        }
        Ok(blocks)
    }

    pub(super) async fn map(&self, request: &Value) -> Result<Mapped, UpstreamError> {
        let model_id = request["model"].as_str().unwrap_or_default().to_owned();
        if request
            .get("n")
            .and_then(Value::as_u64)
            .is_some_and(|n| n > 1)
        {
            return Err(bad("Bedrock returns one choice; n must be 1"));
        }
        if request
            .pointer("/response_format/type")
            .and_then(Value::as_str)
            == Some("json_schema")
        {
            return Err(bad(
                "this Bedrock adapter does not support response_format json_schema",
            ));
        }
        let points = cache_points(request);
        let points_of = |index: usize| -> Vec<&CachePoint> {
            points
                .iter()
                .filter(|p| matches!(p.anchor, CacheAnchor::Message { index: i, .. } if i == index))
                .collect()
        };
        let mut system = Vec::new();
        // (role, blocks), merged so that roles alternate.
        let mut turns: Vec<(bt::ConversationRole, Vec<bt::ContentBlock>)> = Vec::new();
        for (index, m) in request["messages"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            let here = points_of(index);
            let (role, mut blocks) = match m["role"].as_str().unwrap_or_default() {
                "system" | "developer" => {
                    system.extend(system_blocks(&m["content"], &here)?);
                    continue;
                }
                "user" => (
                    bt::ConversationRole::User,
                    self.user_blocks(&m["content"], &format!("messages[{index}].content"))
                        .await?,
                ),
                "assistant" => {
                    // Claude's signed reasoning goes back first, as it came.
                    let mut blocks = reasoning_blocks(&m[REASONING_BLOCKS])?;
                    let text = content_text(&m["content"]);
                    if !text.is_empty() {
                        blocks.push(bt::ContentBlock::Text(text));
                    }
                    for call in m["tool_calls"]
                        .as_array()
                        .map(Vec::as_slice)
                        .unwrap_or_default()
                    {
                        let args = call["function"]["arguments"].as_str().unwrap_or("{}");
                        let input: Value = serde_json::from_str(args).unwrap_or_else(|_| json!({}));
                        let block = bt::ToolUseBlock::builder()
                            .tool_use_id(call["id"].as_str().unwrap_or_default())
                            .name(call["function"]["name"].as_str().unwrap_or_default())
                            .input(json_to_document(&input))
                            .build()
                            .map_err(build_err)?;
                        blocks.push(bt::ContentBlock::ToolUse(block));
                    }
                    (bt::ConversationRole::Assistant, blocks)
                }
                "tool" => {
                    let result = bt::ToolResultBlock::builder()
                        .tool_use_id(m["tool_call_id"].as_str().unwrap_or_default())
                        .content(bt::ToolResultContentBlock::Text(content_text(
                            &m["content"],
                        )))
                        .build()
                        .map_err(build_err)?;
                    (
                        bt::ConversationRole::User,
                        vec![bt::ContentBlock::ToolResult(result)],
                    )
                }
                _ => continue,
            };
            if !here.is_empty() {
                let parts_map_to_blocks =
                    m["role"].as_str() == Some("user") && m["content"].is_array();
                insert_cache_points(&mut blocks, &here, parts_map_to_blocks)?;
            }
            match turns.last_mut() {
                Some((last, existing)) if *last == role => existing.extend(blocks),
                _ => turns.push((role, blocks)),
            }
        }
        let messages = turns
            .into_iter()
            .map(|(role, blocks)| {
                bt::Message::builder()
                    .role(role)
                    .set_content(Some(blocks))
                    .build()
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(build_err)?;

        let mut inference = bt::InferenceConfiguration::builder();
        if let Some(max) = request
            .get("max_completion_tokens")
            .or_else(|| request.get("max_tokens"))
            .and_then(Value::as_i64)
        {
            inference = inference.max_tokens(max.min(i32::MAX as i64) as i32);
        }
        if let Some(t) = request.get("temperature").and_then(Value::as_f64) {
            inference = inference.temperature(t as f32);
        }
        if let Some(p) = request.get("top_p").and_then(Value::as_f64) {
            inference = inference.top_p(p as f32);
        }
        match request.get("stop") {
            Some(Value::String(s)) => inference = inference.stop_sequences(s.clone()),
            Some(Value::Array(list)) => {
                for s in list.iter().filter_map(Value::as_str) {
                    inference = inference.stop_sequences(s);
                }
            }
            _ => {}
        }

        // Nova caches the system prompt and messages, not the tool list.
        let tool_points: Vec<(usize, Option<CacheTtl>)> = if model_id.contains("amazon.nova") {
            Vec::new()
        } else {
            points
                .iter()
                .filter_map(|p| match p.anchor {
                    CacheAnchor::Tool { index } => Some((index, p.ttl)),
                    CacheAnchor::Message { .. } => None,
                })
                .collect()
        };
        let tools = self.tools(request, &tool_points)?;
        let mut additional = Map::new();
        if let Some(effort) = request.get("reasoning_effort").and_then(Value::as_str) {
            if model_id.contains("anthropic") {
                let budget = match request.get(THINKING_BUDGET).and_then(Value::as_u64) {
                    Some(exact) => exact,
                    None => match effort {
                        "minimal" | "low" => 1024,
                        "medium" => 4096,
                        _ => 16384,
                    },
                };
                additional.insert(
                    "thinking".into(),
                    json!({"type": "enabled", "budget_tokens": budget}),
                );
            } else {
                additional.insert(
                    "reasoningConfig".into(),
                    json!({"type": "enabled", "maxReasoningEffort": effort}),
                );
            }
        }
        if let Some(k) = request.get("top_k").and_then(Value::as_i64) {
            // Each family names it its own way; Nova refuses keys it does not define.
            if model_id.contains("amazon.nova") {
                additional.insert("inferenceConfig".into(), json!({"topK": k}));
            } else {
                additional.insert("top_k".into(), json!(k));
            }
        }
        Ok(Mapped {
            model_id,
            system,
            messages,
            inference: inference.build(),
            tools,
            additional: (!additional.is_empty())
                .then(|| json_to_document(&Value::Object(additional))),
        })
    }

    fn tools(
        &self,
        request: &Value,
        points: &[(usize, Option<CacheTtl>)],
    ) -> Result<Option<bt::ToolConfiguration>, UpstreamError> {
        let list = request["tools"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        if list.is_empty() {
            return Ok(None);
        }
        let mut config = bt::ToolConfiguration::builder();
        for (index, tool) in list.iter().enumerate() {
            let f = &tool["function"];
            let schema = match f.get("parameters") {
                Some(p) if p.is_object() => p.clone(),
                _ => json!({"type": "object", "properties": {}}),
            };
            let mut spec = bt::ToolSpecification::builder()
                .name(f["name"].as_str().unwrap_or_default())
                .input_schema(bt::ToolInputSchema::Json(json_to_document(&schema)));
            if let Some(d) = f["description"].as_str() {
                spec = spec.description(d);
            }
            config = config.tools(bt::Tool::ToolSpec(spec.build().map_err(build_err)?));
            if let Some((_, ttl)) = points.iter().find(|(i, _)| *i == index) {
                config = config.tools(bt::Tool::CachePoint(cache_point(*ttl)?));
            }
        }
        let choice = match request.get("tool_choice") {
            Some(Value::String(s)) if s == "required" => {
                Some(bt::ToolChoice::Any(bt::AnyToolChoice::builder().build()))
            }
            Some(Value::String(s)) if s == "auto" => {
                Some(bt::ToolChoice::Auto(bt::AutoToolChoice::builder().build()))
            }
            Some(Value::Object(o)) => {
                let name = o
                    .get("function")
                    .and_then(|f| f.get("name"))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                Some(bt::ToolChoice::Tool(
                    bt::SpecificToolChoice::builder()
                        .name(name)
                        .build()
                        .map_err(build_err)?,
                ))
            }
            // Converse has no "none": the tools stay declared (history may hold tool calls) and
            // the choice is left to the model.
            _ => None,
        };
        Ok(Some(
            config.set_tool_choice(choice).build().map_err(build_err)?,
        ))
    }
}

/// An assistant message's Anthropic `thinking` / `redacted_thinking` blocks (the
/// [`REASONING_BLOCKS`] extension) as Converse reasoning blocks.
fn reasoning_blocks(blocks: &Value) -> Result<Vec<bt::ContentBlock>, UpstreamError> {
    let mut out = Vec::new();
    for b in blocks.as_array().map(Vec::as_slice).unwrap_or_default() {
        let block = match b["type"].as_str() {
            Some("thinking") => {
                let mut text = bt::ReasoningTextBlock::builder()
                    .text(b["thinking"].as_str().unwrap_or_default());
                if let Some(sig) = b["signature"].as_str().filter(|s| !s.is_empty()) {
                    text = text.signature(sig);
                }
                bt::ReasoningContentBlock::ReasoningText(text.build().map_err(build_err)?)
            }
            Some("redacted_thinking") => {
                let data = base64::engine::general_purpose::STANDARD
                    .decode(b["data"].as_str().unwrap_or_default())
                    .map_err(|_| bad("a redacted_thinking block's data is not base64"))?;
                bt::ReasoningContentBlock::RedactedContent(Blob::new(data))
            }
            _ => continue,
        };
        out.push(bt::ContentBlock::ReasoningContent(block));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reelgate::domain::catalog::UpstreamConfig;

    #[test]
    fn documents_round_trip_json() {
        let v = json!({"a": [1, -2, 2.5, "x", null, true], "b": {"c": {}}});
        assert_eq!(document_to_json(&json_to_document(&v)), v);
    }

    #[tokio::test]
    async fn cache_points_become_converse_cache_point_blocks_where_the_client_put_them() {
        let config = UpstreamConfig {
            id: "b".into(),
            kind: "bedrock".into(),
            base_url: Some("http://127.0.0.1:9".into()),
            api_key_env: None,
            region: Some("us-east-1".into()),
            extra_headers: Default::default(),
        };
        let upstream = BedrockUpstream::from_config(&config).await.expect("client");
        let request = json!({
            "model": "anthropic.claude-x",
            "messages": [
                {"role": "system", "content": [{"type": "text", "text": "rules"},
                                               {"type": "text", "text": "more"}]},
                {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "one"},
            ],
            "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}},
                      {"type": "function", "function": {"name": "g", "parameters": {"type": "object"}}}],
            "reelgate_cache_points": [
                {"after": "tool", "index": 1, "ttl": "1h"},
                {"after": "message", "index": 0, "part": 0},
                {"after": "message", "index": 1, "part": 0},
                {"after": "message", "index": 3},
            ],
        });
        let m = upstream.map(&request).await.expect("mapped");
        let tools = m.tools.as_ref().expect("tools").tools();
        assert_eq!(tools.len(), 3);
        match &tools[2] {
            bt::Tool::CachePoint(p) => assert_eq!(p.ttl(), Some(&bt::CacheTtl::OneHour)),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            m.system.as_slice(),
            [
                bt::SystemContentBlock::Text(a),
                bt::SystemContentBlock::CachePoint(_),
                bt::SystemContentBlock::Text(b)
            ] if a == "rules" && b == "more"
        ));
        assert!(matches!(
            m.messages[0].content(),
            [
                bt::ContentBlock::Text(_),
                bt::ContentBlock::CachePoint(_),
                bt::ContentBlock::Text(_)
            ]
        ));
        assert!(matches!(
            m.messages[2].content(),
            [
                bt::ContentBlock::ToolResult(_),
                bt::ContentBlock::CachePoint(_)
            ]
        ));
        // Nova takes none among its tools.
        let mut nova = request.clone();
        nova["model"] = json!("amazon.nova-pro-v1:0");
        let m = upstream.map(&nova).await.expect("mapped");
        assert_eq!(m.tools.as_ref().expect("tools").tools().len(), 2);
    }

    #[tokio::test]
    async fn maps_messages_tools_stop_and_effort() {
        let config = UpstreamConfig {
            id: "b".into(),
            kind: "bedrock".into(),
            base_url: Some("http://127.0.0.1:9".into()),
            api_key_env: None,
            region: Some("us-east-1".into()),
            extra_headers: Default::default(),
        };
        let upstream = BedrockUpstream::from_config(&config).await.expect("client");
        let request = json!({
            "model": "anthropic.claude-x",
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": [{"type": "text", "text": "hi"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"x\":1}"}},
                    {"id": "c2", "type": "function", "function": {"name": "f", "arguments": "{\"x\":2}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "one"},
                {"role": "tool", "tool_call_id": "c2", "content": "two"},
            ],
            "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
            "tool_choice": "required",
            "stop": ["END"],
            "max_completion_tokens": 100,
            "reasoning_effort": "low",
        });
        let m = upstream.map(&request).await.expect("mapped");
        assert_eq!(m.system.len(), 1);
        // user, assistant (two tool uses), user (two tool results merged)
        assert_eq!(m.messages.len(), 3);
        assert_eq!(m.messages[1].content().len(), 2);
        assert_eq!(m.messages[2].content().len(), 2);
        assert!(matches!(
            m.messages[0].content()[1],
            bt::ContentBlock::Image(_)
        ));
        assert_eq!(m.inference.stop_sequences(), ["END".to_owned()]);
        assert_eq!(m.inference.max_tokens(), Some(100));
        assert!(matches!(
            m.tools.as_ref().and_then(|t| t.tool_choice()),
            Some(bt::ToolChoice::Any(_))
        ));
        let extra = document_to_json(m.additional.as_ref().expect("additional"));
        assert_eq!(extra["thinking"]["budget_tokens"], 1024);

        // A Messages request's exact budget wins over the effort's, and the assistant's signed
        // reasoning goes back first in its turn.
        let mut exact = request.clone();
        exact[THINKING_BUDGET] = json!(2500);
        exact["messages"][2][REASONING_BLOCKS] = json!([
            {"type": "thinking", "thinking": "hmm", "signature": "sig"},
            {"type": "redacted_thinking", "data": "b3BhcXVl"}]);
        let m = upstream.map(&exact).await.expect("mapped");
        let extra = document_to_json(m.additional.as_ref().expect("additional"));
        assert_eq!(extra["thinking"]["budget_tokens"], 2500);
        let blocks = m.messages[1].content();
        assert_eq!(blocks.len(), 4);
        match &blocks[0] {
            bt::ContentBlock::ReasoningContent(bt::ReasoningContentBlock::ReasoningText(r)) => {
                assert_eq!((r.text(), r.signature()), ("hmm", Some("sig")));
            }
            other => panic!("{other:?}"),
        }
        match &blocks[1] {
            bt::ContentBlock::ReasoningContent(bt::ReasoningContentBlock::RedactedContent(b)) => {
                assert_eq!(b.as_ref(), b"opaque");
            }
            other => panic!("{other:?}"),
        }
    }
}
