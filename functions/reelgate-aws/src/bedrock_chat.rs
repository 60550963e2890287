//! Amazon Bedrock through Converse / ConverseStream, behind the OpenAI-shaped port.
//!
//! Request mapping: `system`/`developer` messages → `system` blocks; user text, images, videos
//! and documents → content blocks (Bedrock wants bytes, so image/video URLs — our presigned
//! URLs included — are fetched and data URLs decoded here); assistant `tool_calls` → `toolUse`
//! blocks; `tool` messages → `toolResult` blocks in a user turn (consecutive turns of one role
//! are merged, as Converse requires alternation); `max_(completion_)tokens`, `temperature`,
//! `top_p`, `stop` → `inferenceConfig`; `tools`/`tool_choice` → `toolConfig`;
//! `reasoning_effort` → `additionalModelRequestFields` (Anthropic models: a `thinking` token
//! budget; others: `reasoningConfig.maxReasoningEffort`); `top_k` likewise.
//! Reply mapping: text, `toolUse` → `tool_calls`, reasoning text → `reasoning_content`, stop
//! reason → `finish_reason`, token usage → `usage` (cache reads and writes in
//! `prompt_tokens_details`, and counted in `prompt_tokens` as OpenAI counts them).
//! Cache points (the `reelgate_cache_points` extension) → `cachePoint` blocks right after the
//! tool, system text or content block they follow (Nova takes none among the tools).
//!
//! Retries: the SDK's own retries are off; only a failure to connect is retried here, so a
//! request that reached Bedrock never runs twice.

use async_trait::async_trait;
use aws_sdk_bedrockruntime::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_bedrockruntime::primitives::Blob;
use aws_sdk_bedrockruntime::types as bt;
use aws_smithy_types::{Document, Number};
use base64::Engine;
use reelgate::domain::catalog::UpstreamConfig;
use reelgate::ports::upstream::extension::{
    REASONING_BLOCKS, REASONING_SIGNATURE, THINKING_BUDGET,
};
use reelgate::ports::upstream::{
    cache_points, content_text, CacheAnchor, CachePoint, CacheTtl, ChatUpstream, ChunkStream,
    UpstreamError,
};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::time::Duration;

const CONNECT_RETRIES: u32 = 3;
const RETRY_BASE: Duration = Duration::from_millis(100);
/// Largest image or video fetched to inline it (Bedrock's own limits are lower; it says so).
const MAX_MEDIA_BYTES: usize = 50 * 1024 * 1024;

pub struct BedrockUpstream {
    client: aws_sdk_bedrockruntime::Client,
    fetcher: reelgate::adapters::guarded_fetch::GuardedFetcher,
}

impl BedrockUpstream {
    /// `region` from the catalog (else the environment's); `base_url`, when set, overrides the
    /// endpoint (a local emulator). Credentials come from the standard chain.
    pub async fn from_config(config: &UpstreamConfig) -> Result<Self, UpstreamError> {
        let mut loader =
            crate::sdk_loader().retry_config(aws_config::retry::RetryConfig::disabled());
        if let Some(region) = config.region.as_deref().filter(|r| !r.is_empty()) {
            loader = loader.region(aws_config::Region::new(region.to_owned()));
        }
        if let Some(url) = config
            .base_url
            .as_deref()
            .map(reelgate::config::expand_env)
            .filter(|u| !u.is_empty())
        {
            loader = loader.endpoint_url(url);
        }
        let shared = loader.load().await;
        Ok(BedrockUpstream {
            client: aws_sdk_bedrockruntime::Client::new(&shared),
            fetcher: Default::default(),
        })
    }
}

/// What a Converse call needs, mapped from the OpenAI-shaped request.
struct Mapped {
    model_id: String,
    system: Vec<bt::SystemContentBlock>,
    messages: Vec<bt::Message>,
    inference: bt::InferenceConfiguration,
    tools: Option<bt::ToolConfiguration>,
    additional: Option<Document>,
}

fn bad(message: impl Into<String>) -> UpstreamError {
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

    async fn map(&self, request: &Value) -> Result<Mapped, UpstreamError> {
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

fn finish_reason(reason: &bt::StopReason) -> &'static str {
    match reason {
        bt::StopReason::ToolUse => "tool_calls",
        bt::StopReason::MaxTokens | bt::StopReason::ModelContextWindowExceeded => "length",
        bt::StopReason::ContentFiltered | bt::StopReason::GuardrailIntervened => "content_filter",
        _ => "stop",
    }
}

/// Converse's usage as chat's: Converse counts cache reads and writes apart from `inputTokens`;
/// chat's `prompt_tokens` holds them, with the split in `prompt_tokens_details`.
fn usage_json(u: &bt::TokenUsage) -> Value {
    let read = u.cache_read_input_tokens().unwrap_or(0).max(0);
    let written = u.cache_write_input_tokens().unwrap_or(0).max(0);
    let prompt = i64::from(u.input_tokens().max(0)) + i64::from(read) + i64::from(written);
    let completion = i64::from(u.output_tokens().max(0));
    json!({
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": read, "cache_write_tokens": written},
    })
}

/// Bedrock's error codes as HTTP statuses, so the gateway maps them like any upstream's.
fn sdk_error<E: ProvideErrorMetadata + std::fmt::Debug, R: std::fmt::Debug>(
    e: SdkError<E, R>,
) -> UpstreamError {
    match &e {
        SdkError::DispatchFailure(d) if d.is_timeout() => UpstreamError::Rejected {
            status: 504,
            code: Some("timeout".into()),
            message: format!("{d:?}"),
            retry_after: None,
        },
        SdkError::DispatchFailure(d) => UpstreamError::Unreachable(format!("{d:?}")),
        SdkError::TimeoutError(_) => UpstreamError::Rejected {
            status: 504,
            code: Some("timeout".into()),
            message: "Bedrock timed out".into(),
            retry_after: None,
        },
        SdkError::ServiceError(_) => {
            let code = e.code().unwrap_or("Unknown").to_owned();
            let status = match code.as_str() {
                "ValidationException" => 400,
                "AccessDeniedException" => 403,
                "ResourceNotFoundException" => 404,
                "ModelTimeoutException" => 408,
                "ThrottlingException" | "ServiceQuotaExceededException" => 429,
                "ModelNotReadyException" | "ServiceUnavailableException" => 503,
                "InternalServerException" => 500,
                _ => 502,
            };
            UpstreamError::Rejected {
                status,
                code: Some(code),
                message: e.message().unwrap_or_default().to_owned(),
                retry_after: None,
            }
        }
        _ => UpstreamError::Protocol(format!("{e:?}")),
    }
}

/// Is this a failure to reach Bedrock at all (nothing was sent)?
fn is_connect_failure<E, R>(e: &SdkError<E, R>) -> bool {
    matches!(e, SdkError::DispatchFailure(d) if d.is_io() && !d.is_timeout())
}

/// Sends a call, retrying only failures to connect (nothing reached Bedrock), with backoff.
async fn send_retrying_connects<T, E, R, F, Fut>(mut send: F) -> Result<T, UpstreamError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, SdkError<E, R>>>,
    E: ProvideErrorMetadata + std::fmt::Debug,
    R: std::fmt::Debug,
{
    let mut attempt = 0;
    loop {
        match send().await {
            Ok(output) => return Ok(output),
            Err(e) if is_connect_failure(&e) && attempt < CONNECT_RETRIES => {
                tokio::time::sleep(RETRY_BASE * 2u32.pow(attempt)).await;
                attempt += 1;
            }
            Err(e) => return Err(sdk_error(e)),
        }
    }
}

#[async_trait]
impl ChatUpstream for BedrockUpstream {
    async fn complete(&self, request: Value) -> Result<Value, UpstreamError> {
        let m = self.map(&request).await?;
        let output = send_retrying_connects(|| {
            self.client
                .converse()
                .model_id(&m.model_id)
                .set_system(Some(m.system.clone()).filter(|s| !s.is_empty()))
                .set_messages(Some(m.messages.clone()))
                .inference_config(m.inference.clone())
                .set_tool_config(m.tools.clone())
                .set_additional_model_request_fields(m.additional.clone())
                .send()
        })
        .await?;
        let mut content = String::new();
        let mut reasoning = String::new();
        let mut signature = None;
        let mut calls = Vec::new();
        if let Some(bt::ConverseOutput::Message(message)) = output.output() {
            for block in message.content() {
                match block {
                    bt::ContentBlock::Text(t) => content.push_str(t),
                    bt::ContentBlock::ToolUse(t) => calls.push(json!({
                        "id": t.tool_use_id(),
                        "type": "function",
                        "function": {
                            "name": t.name(),
                            "arguments": document_to_json(t.input()).to_string(),
                        },
                    })),
                    bt::ContentBlock::ReasoningContent(
                        bt::ReasoningContentBlock::ReasoningText(r),
                    ) => {
                        reasoning.push_str(r.text());
                        if let Some(sig) = r.signature() {
                            signature = Some(sig.to_owned());
                        }
                    }
                    _ => {}
                }
            }
        }
        let mut message = json!({"role": "assistant", "content": content});
        if !calls.is_empty() {
            message["tool_calls"] = Value::Array(calls);
        }
        if !reasoning.is_empty() {
            message["reasoning_content"] = Value::String(reasoning);
        }
        if let Some(sig) = signature {
            message[REASONING_SIGNATURE] = Value::String(sig);
        }
        let mut reply = json!({
            "id": "bedrock",
            "object": "chat.completion",
            "created": reelgate::ports::store::now_secs(),
            "model": m.model_id,
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason(output.stop_reason())}],
        });
        if let Some(u) = output.usage() {
            reply["usage"] = usage_json(u);
        }
        Ok(reply)
    }

    async fn stream(&self, request: Value) -> Result<ChunkStream, UpstreamError> {
        let m = self.map(&request).await?;
        let output = send_retrying_connects(|| {
            self.client
                .converse_stream()
                .model_id(&m.model_id)
                .set_system(Some(m.system.clone()).filter(|s| !s.is_empty()))
                .set_messages(Some(m.messages.clone()))
                .inference_config(m.inference.clone())
                .set_tool_config(m.tools.clone())
                .set_additional_model_request_fields(m.additional.clone())
                .send()
        })
        .await?;
        struct St {
            events: aws_sdk_bedrockruntime::primitives::event_stream::EventReceiver<
                bt::ConverseStreamOutput,
                bt::error::ConverseStreamOutputError,
            >,
            model: String,
            /// Bedrock content-block index → OpenAI tool-call index.
            tool_index: HashMap<i32, usize>,
            done: bool,
        }
        let st = St {
            events: output.stream,
            model: m.model_id,
            tool_index: HashMap::new(),
            done: false,
        };
        let chunks = futures::stream::unfold(st, |mut st| async move {
            loop {
                if st.done {
                    return None;
                }
                let event = match st.events.recv().await {
                    Ok(Some(event)) => event,
                    Ok(None) => return None,
                    Err(e) => {
                        st.done = true;
                        return Some((Err(sdk_error(e)), st));
                    }
                };
                let chunk = |delta: Value, finish: Value| {
                    json!({
                        "id": "bedrock",
                        "object": "chat.completion.chunk",
                        "created": reelgate::ports::store::now_secs(),
                        "model": st.model,
                        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                    })
                };
                let out = match event {
                    bt::ConverseStreamOutput::MessageStart(_) => {
                        chunk(json!({"role": "assistant", "content": ""}), Value::Null)
                    }
                    bt::ConverseStreamOutput::ContentBlockStart(start) => match start.start {
                        Some(bt::ContentBlockStart::ToolUse(t)) => {
                            let index = st.tool_index.len();
                            st.tool_index.insert(start.content_block_index, index);
                            chunk(
                                json!({"tool_calls": [{"index": index, "id": t.tool_use_id, "type": "function",
                                    "function": {"name": t.name, "arguments": ""}}]}),
                                Value::Null,
                            )
                        }
                        _ => continue,
                    },
                    bt::ConverseStreamOutput::ContentBlockDelta(d) => match d.delta {
                        Some(bt::ContentBlockDelta::Text(t)) => {
                            chunk(json!({"content": t}), Value::Null)
                        }
                        Some(bt::ContentBlockDelta::ToolUse(t)) => {
                            let index = st
                                .tool_index
                                .get(&d.content_block_index)
                                .copied()
                                .unwrap_or(0);
                            chunk(
                                json!({"tool_calls": [{"index": index, "function": {"arguments": t.input}}]}),
                                Value::Null,
                            )
                        }
                        Some(bt::ContentBlockDelta::ReasoningContent(
                            bt::ReasoningContentBlockDelta::Text(t),
                        )) => chunk(json!({"reasoning_content": t}), Value::Null),
                        Some(bt::ContentBlockDelta::ReasoningContent(
                            bt::ReasoningContentBlockDelta::Signature(sig),
                        )) => chunk(json!({ REASONING_SIGNATURE: sig }), Value::Null),
                        _ => continue,
                    },
                    bt::ConverseStreamOutput::MessageStop(s) => chunk(
                        json!({}),
                        Value::String(finish_reason(&s.stop_reason).into()),
                    ),
                    bt::ConverseStreamOutput::Metadata(meta) => match meta.usage {
                        Some(u) => json!({
                            "id": "bedrock",
                            "object": "chat.completion.chunk",
                            "created": reelgate::ports::store::now_secs(),
                            "model": st.model,
                            "choices": [],
                            "usage": usage_json(&u),
                        }),
                        None => continue,
                    },
                    _ => continue,
                };
                return Some((Ok(out), st));
            }
        });
        Ok(Box::pin(chunks))
    }

    /// Bedrock's CountTokens over the same Converse input (Claude models; for the others
    /// Bedrock refuses, and the caller estimates).
    async fn count_tokens(&self, request: Value) -> Result<Option<u64>, UpstreamError> {
        let m = self.map(&request).await?;
        let converse = bt::ConverseTokensRequest::builder()
            .set_system(Some(m.system.clone()).filter(|s| !s.is_empty()))
            .set_messages(Some(m.messages.clone()))
            .set_tool_config(m.tools.clone())
            .set_additional_model_request_fields(m.additional.clone())
            .build();
        let output = send_retrying_connects(|| {
            self.client
                .count_tokens()
                .model_id(&m.model_id)
                .input(bt::CountTokensInput::Converse(converse.clone()))
                .send()
        })
        .await?;
        Ok(Some(output.input_tokens().max(0) as u64))
    }
}

/// Connects catalog upstreams of kind `bedrock`; hosts register it on their
/// [`reelgate::adapters::CatalogConnector`] (see [`crate::upstream_connector`]).
pub struct BedrockConnector;

#[async_trait]
impl reelgate::domain::chat::upstreams::UpstreamConnector for BedrockConnector {
    async fn connect(
        &self,
        config: &UpstreamConfig,
    ) -> Result<std::sync::Arc<dyn ChatUpstream>, UpstreamError> {
        Ok(std::sync::Arc::new(
            BedrockUpstream::from_config(config).await?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn converse_usage_counts_cache_reads_and_writes_in_the_prompt() {
        let u = bt::TokenUsage::builder()
            .input_tokens(10)
            .output_tokens(5)
            .total_tokens(1515)
            .cache_read_input_tokens(1000)
            .cache_write_input_tokens(500)
            .build()
            .expect("usage");
        assert_eq!(
            usage_json(&u),
            json!({"prompt_tokens": 1510, "completion_tokens": 5, "total_tokens": 1515,
                   "prompt_tokens_details": {"cached_tokens": 1000, "cache_write_tokens": 500}})
        );
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
