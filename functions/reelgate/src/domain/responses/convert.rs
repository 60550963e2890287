//! The bridge from the Responses request to the chat-completions request every upstream speaks:
//! the whole conversation (`instructions`, history, input items in their stored form from
//! `normalize`) becomes chat messages, files become URLs or page images, and the request's
//! settings become the chat request's (`token_budget` fits it to the model's context).

use super::fetch;
use super::items::{ContentPart, ConversationItem, ItemRole};
use super::request::CreateRequest;
// The Messages API estimates its requests with the same measure, through this path.
pub use super::token_budget::estimate_tokens;
use crate::domain::accounts::Caller;
use crate::domain::catalog::ChatModel;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::Context;
use crate::ports::pdf::{PdfError, PdfRasterizer};
use crate::ports::upstream::request::{
    ChatCompletionRequest, ChatMessage, ImageUrl, Role, Stop, StreamOptions, WrittenPart,
};
use base64::Engine;
use reelgate_media::MediaKind;
use serde_json::{json, Map, Value};

/// Largest PDF or inline file forwarded (before rasterizing).
const MAX_FILE_BYTES: u64 = super::pdf::MAX_INPUT_BYTES;
/// Largest text file inlined into the prompt.
const MAX_TEXT_BYTES: u64 = 1024 * 1024;

/// The texts of a message's content, joined (system, developer and assistant messages are text).
fn joined_text(content: &[ContentPart]) -> String {
    content
        .iter()
        .filter_map(ContentPart::text)
        .collect::<Vec<_>>()
        .join("\n")
}

fn av_refusal(param: &str) -> ApiError {
    ApiError::invalid(
        param,
        "Video and audio files cannot be used with /v1/responses; send them to /v1/chat/completions.",
    )
    .with_code("unsupported_file_type")
}

/// Whether turning `items` into chat messages is work before the request can be checked: an
/// `input_file` (read, and a PDF rasterized for a model without `file`) or an `input_image`
/// that is not inline (a URL to fetch, a stored file to read).
pub fn needs_work(items: &[ConversationItem]) -> bool {
    items.iter().any(|item| match item {
        ConversationItem::Message { content, .. } => content.iter().any(ContentPart::needs_work),
        _ => false,
    })
}

/// Turns the conversation into chat messages. Files are resolved now, on every turn, because
/// presigned URLs are short-lived and must not be stored.
pub async fn to_chat_messages(
    cx: Context<'_>,
    pdf: &dyn PdfRasterizer,
    caller: &Caller,
    model: &ChatModel,
    instructions: Option<&str>,
    items: &[ConversationItem],
) -> ApiResult<Vec<ChatMessage>> {
    let text_message = |role: Role, text: String| ChatMessage {
        content: Some(Value::String(text)),
        ..ChatMessage::new(role)
    };
    let mut messages: Vec<ChatMessage> = Vec::new();
    if let Some(text) = instructions {
        messages.push(text_message(Role::System, text.to_owned()));
    }
    let mut calls_seen = std::collections::HashSet::new();
    // True while the last message is an assistant turn that further function calls join.
    let mut open_assistant = false;
    for item in items {
        match item {
            ConversationItem::Message { role, content, .. } => {
                open_assistant = false;
                match role {
                    ItemRole::User => {
                        messages.push(user_message(cx, pdf, caller, content).await?);
                    }
                    ItemRole::Assistant => {
                        messages.push(text_message(Role::Assistant, joined_text(content)));
                        open_assistant = true;
                    }
                    // Chat has no developer role; both are system instructions.
                    ItemRole::Developer | ItemRole::System => {
                        messages.push(text_message(Role::System, joined_text(content)));
                    }
                }
            }
            ConversationItem::FunctionCall {
                call_id,
                name,
                arguments,
                ..
            } => {
                calls_seen.insert(call_id.as_str());
                let call = json!({
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                });
                match messages.last_mut() {
                    Some(last) if open_assistant => {
                        // An empty text before the calls is no content at all.
                        if last.content.as_ref().and_then(Value::as_str) == Some("") {
                            last.content = Some(Value::Null);
                        }
                        match &mut last.tool_calls {
                            Some(Value::Array(calls)) => calls.push(call),
                            _ => last.tool_calls = Some(json!([call])),
                        }
                    }
                    _ => {
                        messages.push(ChatMessage {
                            content: Some(Value::Null),
                            tool_calls: Some(json!([call])),
                            ..ChatMessage::new(Role::Assistant)
                        });
                        open_assistant = true;
                    }
                }
            }
            ConversationItem::FunctionCallOutput {
                call_id, output, ..
            } => {
                open_assistant = false;
                if !calls_seen.contains(call_id.as_str()) {
                    return Err(ApiError::invalid(
                        "input",
                        format!(
                            "No function call found for the function_call_output with call_id '{call_id}'; \
                             send the function_call item too or continue with previous_response_id."
                        ),
                    ));
                }
                messages.push(ChatMessage {
                    tool_call_id: Some(call_id.clone()),
                    content: Some(Value::String(output.clone())),
                    ..ChatMessage::new(Role::Tool)
                });
            }
        }
    }
    let has_images = messages.iter().any(|m| {
        m.content
            .as_ref()
            .and_then(Value::as_array)
            .is_some_and(|parts| parts.iter().any(|p| p["type"] == "image_url"))
    });
    if has_images && !model.capabilities.iter().any(|c| c == "vision") {
        return Err(ApiError::invalid(
            "input",
            format!(
                "{} does not accept images (it lacks the vision capability).",
                model.id
            ),
        )
        .with_code("model_capability_mismatch"));
    }
    if !messages.iter().any(|m| m.role != Role::System) {
        return Err(ApiError::invalid(
            "input",
            "The input holds no message for the model.",
        ));
    }
    Ok(messages)
}

async fn user_message(
    cx: Context<'_>,
    pdf: &dyn PdfRasterizer,
    caller: &Caller,
    content: &[ContentPart],
) -> ApiResult<ChatMessage> {
    let mut parts: Vec<WrittenPart> = Vec::new();
    for p in content {
        match p {
            ContentPart::InputText { text } | ContentPart::OutputText { text, .. } => {
                parts.push(WrittenPart::Text { text: text.clone() });
            }
            ContentPart::InputImage {
                image_url,
                file_id,
                detail,
            } => {
                let url = match file_id {
                    Some(file_id) => image_file_url(cx, caller, file_id).await?,
                    None => image_url.clone().unwrap_or_default(),
                };
                parts.push(WrittenPart::ImageUrl {
                    image_url: ImageUrl {
                        url,
                        detail: detail.clone(),
                    },
                });
            }
            ContentPart::InputFile { .. } => parts.extend(file_parts(cx, pdf, caller, p).await?),
            ContentPart::Refusal { .. } => {}
        }
    }
    // Text-only content goes as a plain string, the form every upstream accepts.
    let texts: Option<Vec<&str>> = parts
        .iter()
        .map(|p| match p {
            WrittenPart::Text { text } => Some(text.as_str()),
            WrittenPart::ImageUrl { .. } => None,
        })
        .collect();
    let content = match texts {
        Some(texts) => Value::String(texts.join("\n")),
        None => json!(parts),
    };
    Ok(ChatMessage {
        content: Some(content),
        ..ChatMessage::new(Role::User)
    })
}

async fn image_file_url(cx: Context<'_>, caller: &Caller, file_id: &str) -> ApiResult<String> {
    let file = crate::domain::files::find(cx, &caller.org, file_id).await?;
    if file.purpose == "video" || file.purpose == "audio" {
        return Err(av_refusal("file_id"));
    }
    if file.purpose != "vision" {
        return Err(ApiError::invalid(
            "file_id",
            format!(
                "The file {file_id} has purpose '{}'; an input_image file needs purpose 'vision'.",
                file.purpose
            ),
        ));
    }
    Ok(cx
        .blobs
        .presign_get(
            &crate::domain::files::blob_key(&caller.org, file_id),
            cx.settings.presign_ttl,
        )
        .await?)
}

/// An `input_file` as chat parts: a PDF as one image per page, an image as an image, a text file
/// inline; anything else is refused.
async fn file_parts(
    cx: Context<'_>,
    pdf: &dyn PdfRasterizer,
    caller: &Caller,
    p: &ContentPart,
) -> ApiResult<Vec<WrittenPart>> {
    let ContentPart::InputFile {
        file_id,
        file_data,
        file_url,
        filename,
    } = p
    else {
        return Ok(Vec::new());
    };
    let filename = filename.as_deref();
    if let Some(file_id) = file_id {
        let file = crate::domain::files::find(cx, &caller.org, file_id).await?;
        let mime = file.mime_type.as_str();
        if file.purpose == "video"
            || file.purpose == "audio"
            || mime.starts_with("video/")
            || mime.starts_with("audio/")
        {
            return Err(av_refusal("file_id"));
        }
        let key = crate::domain::files::blob_key(&caller.org, file_id);
        if mime.starts_with("image/") {
            let url = cx.blobs.presign_get(&key, cx.settings.presign_ttl).await?;
            return Ok(vec![WrittenPart::image(url)]);
        }
        let limit = if mime == "application/pdf" {
            MAX_FILE_BYTES
        } else {
            MAX_TEXT_BYTES
        };
        if file.bytes > limit {
            return Err(ApiError::invalid(
                "file_id",
                format!(
                    "The file {file_id} is larger than {limit} bytes, the most this input accepts."
                ),
            ));
        }
        let bytes = crate::ports::blobs::read_limited(cx.blobs, &key, MAX_FILE_BYTES).await?;
        return bytes_parts(pdf, bytes.to_vec(), Some(&file.filename), "file_id").await;
    }
    if let Some(data) = file_data {
        let b64 = match data.strip_prefix("data:") {
            Some(rest) => rest.split_once(";base64,").map(|(_, b)| b).ok_or_else(|| {
                ApiError::invalid(
                    "file_data",
                    "file_data must be base64 or a data:<type>;base64, URL.",
                )
            })?,
            None => data,
        };
        if b64.len() as u64 > MAX_FILE_BYTES * 4 / 3 + 4 {
            return Err(ApiError::invalid(
                "file_data",
                format!("file_data is larger than {MAX_FILE_BYTES} bytes."),
            ));
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(b64.trim())
            .map_err(|_| ApiError::invalid("file_data", "file_data is not valid base64."))?;
        return bytes_parts(pdf, bytes, filename, "file_data").await;
    }
    if let Some(url) = file_url {
        let bytes = fetch::fetch(cx.fetcher, url, "file_url").await?;
        return bytes_parts(pdf, bytes, filename, "file_url").await;
    }
    Ok(Vec::new())
}

/// A PDF's pages as PNGs, through the rasterizer; its refusals become the caller's 400 naming
/// `param`, and an unavailable or busy rasterizer a 503 that says so.
pub async fn rasterize(
    pdf: &dyn PdfRasterizer,
    bytes: Vec<u8>,
    param: &str,
) -> ApiResult<Vec<Vec<u8>>> {
    pdf.rasterize(bytes).await.map_err(|e| match e {
        PdfError::Refused(why) => {
            ApiError::invalid(param, format!("The PDF cannot be used: {why}."))
        }
        PdfError::Unavailable(why) => {
            tracing::error!(error = %why, "PDF renderer unavailable");
            ApiError::unavailable(
                "pdf_renderer_unavailable",
                "The PDF renderer is unavailable; try again later.",
            )
        }
        PdfError::Busy(waited) => ApiError::unavailable(
            "pdf_renderer_busy",
            format!(
                "Every PDF renderer stayed busy with other documents for {waited} s \
                 (organizations are served in turn); try again in a few seconds."
            ),
        ),
    })
}

/// What a file's bytes become for a chat model: an image part, a PDF's pages as images, or a text part.
pub async fn bytes_parts(
    pdf: &dyn PdfRasterizer,
    bytes: Vec<u8>,
    filename: Option<&str>,
    param: &str,
) -> ApiResult<Vec<WrittenPart>> {
    let sniffed = reelgate_media::sniff(&bytes[..bytes.len().min(4096)]);
    match sniffed.kind {
        MediaKind::Video | MediaKind::Audio => Err(av_refusal(param)),
        MediaKind::Image => {
            let b64 = base64::engine::general_purpose::STANDARD.encode(&bytes);
            Ok(vec![WrittenPart::image(format!(
                "data:{};base64,{b64}",
                sniffed.mime
            ))])
        }
        MediaKind::Pdf => {
            let pages = rasterize(pdf, bytes, param).await?;
            Ok(pages
                .into_iter()
                .map(|png| {
                    let b64 = base64::engine::general_purpose::STANDARD.encode(png);
                    WrittenPart::image(format!("data:image/png;base64,{b64}"))
                })
                .collect())
        }
        MediaKind::Text if bytes.len() as u64 <= MAX_TEXT_BYTES => {
            let text = String::from_utf8_lossy(&bytes);
            let name = filename.unwrap_or("file");
            Ok(vec![WrittenPart::Text {
                text: format!("<file name=\"{name}\">\n{text}\n</file>"),
            }])
        }
        _ => Err(ApiError::invalid(
            param,
            format!(
                "This file type ({}) cannot be read by the model; send a PDF, an image or a text file.",
                sniffed.mime
            ),
        )
        .with_code("unsupported_file_type")),
    }
}

/// The chat-completions request for the upstream.
pub fn chat_request(
    req: &CreateRequest,
    model: &ChatModel,
    messages: Vec<ChatMessage>,
    stream: bool,
) -> ChatCompletionRequest {
    let number = |n: Option<f64>| n.and_then(serde_json::Number::from_f64);
    let integer = |n: Option<u64>| n.map(serde_json::Number::from);
    let tools = (!req.tools.is_empty()).then(|| {
        req.tools
            .iter()
            .map(|t| {
                let mut function = Map::new();
                for k in ["name", "description", "parameters", "strict"] {
                    if let Some(v) = t.get(k).filter(|v| !v.is_null()) {
                        function.insert(k.into(), v.clone());
                    }
                }
                json!({"type": "function", "function": function})
            })
            .collect()
    });
    let response_format = match req.text.format.get("type").and_then(Value::as_str) {
        Some("json_object") => Some(json!({"type": "json_object"})),
        Some("json_schema") => {
            let mut schema = Map::new();
            for k in ["name", "schema", "strict", "description"] {
                if let Some(v) = req.text.format.get(k).filter(|v| !v.is_null()) {
                    schema.insert(k.into(), v.clone());
                }
            }
            Some(json!({"type": "json_schema", "json_schema": schema}))
        }
        _ => None,
    };
    ChatCompletionRequest {
        model: model
            .upstream_model
            .clone()
            .unwrap_or_else(|| model.id.clone()),
        messages,
        stream: Some(stream),
        // Usage is needed to bill and to report it in `response.completed`.
        stream_options: stream.then_some(StreamOptions {
            include_usage: Some(true),
        }),
        temperature: number(req.temperature),
        top_p: number(req.top_p),
        max_completion_tokens: integer(req.max_output_tokens),
        seed: req.seed.map(serde_json::Number::from),
        stop: req.stop.as_ref().and_then(stop),
        top_k: req.top_k.map(serde_json::Number::from),
        repetition_penalty: number(req.repetition_penalty),
        reasoning_effort: req.reasoning.effort.clone(),
        user: req.user.clone(),
        prompt_cache_key: req.prompt_cache_key.clone(),
        parallel_tool_calls: req.parallel_tool_calls,
        tools,
        tool_choice: req.tool_choice.as_ref().map(|c| match c.get("name") {
            Some(name) => json!({"type": "function", "function": {"name": name}}),
            None => c.clone(),
        }),
        response_format,
        ..ChatCompletionRequest::default()
    }
}

/// `stop` as the request checked it: one sequence or a list of them.
fn stop(v: &Value) -> Option<Stop> {
    match v {
        Value::String(s) => Some(Stop::One(s.clone())),
        Value::Array(items) => Some(Stop::Many(
            items
                .iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect(),
        )),
        _ => None,
    }
}
