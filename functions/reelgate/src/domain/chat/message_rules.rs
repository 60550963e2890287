//! The rules of a chat request's messages: each role's content and keys, the content parts a
//! user message may hold (checked against the model's capabilities, media URLs and data), an
//! assistant's tool calls and the tool messages that answer them. Content and tool calls are
//! sent upstream as the caller gave them, once checked.

use crate::domain::catalog::ChatModel;
use crate::domain::chat::body::MessageBody;
use crate::domain::error::{ApiError, ApiResult};
use crate::ports::upstream::request::{ChatMessage, Role};
use serde_json::Value;
use std::collections::HashSet;

const PART_TYPES: &str = "text, image_url, video_url, audio_url, input_audio, file";
const AUDIO_FORMATS: &[&str] = &[
    "wav", "mp3", "flac", "ogg", "opus", "aac", "m4a", "webm", "pcm16",
];

/// A content part that refers to an uploaded file; resolved (ownership, kind, signed URL) by
/// the handler once validation has passed.
#[derive(Clone, Debug, PartialEq)]
pub struct FileRef {
    pub message: usize,
    pub part: usize,
    pub file_id: String,
    /// The parameter path to name in errors about this file.
    pub param: String,
    /// Set for an `image_url` part that names a file: the file must be an image.
    pub image_detail: Option<Option<String>>,
}

/// 400 `model_capability_mismatch` naming the part that needs `capability`.
pub fn capability_mismatch(model: &ChatModel, capability: &str, param: &str) -> ApiError {
    ApiError::new(
        crate::domain::error::ErrorKind::InvalidRequest,
        "model_capability_mismatch",
        format!(
            "The model '{}' does not support {capability} input; this content needs a model with the '{capability}' capability.",
            model.id
        ),
    )
    .with_param(param)
}

pub fn require_capability(model: &ChatModel, capability: &str, param: &str) -> ApiResult<()> {
    if model.capabilities.iter().any(|c| c == capability) {
        Ok(())
    } else {
        Err(capability_mismatch(model, capability, param))
    }
}

/// The messages as sent upstream, the file parts to resolve, and the prompt's text length.
/// Each message is checked, then its values are moved into the typed message.
pub fn messages(
    model: &ChatModel,
    messages: Option<Vec<MessageBody>>,
) -> ApiResult<(Vec<ChatMessage>, Vec<FileRef>, usize)> {
    let messages = match messages {
        None => return Err(ApiError::invalid("messages", "messages is required.")),
        Some(m) if m.is_empty() => {
            return Err(ApiError::invalid(
                "messages",
                "messages must contain at least one message.",
            ))
        }
        Some(m) => m,
    };
    let mut out = Vec::with_capacity(messages.len());
    let mut files = Vec::new();
    let mut chars = 0usize;
    let mut call_ids: HashSet<String> = HashSet::new();
    for (i, m) in messages.into_iter().enumerate() {
        let p = format!("messages[{i}]");
        let cp = format!("{p}.content");
        let mut fwd = ChatMessage {
            name: m.name,
            ..ChatMessage::new(m.role.upstream())
        };
        let content = m.content;
        match m.role {
            Role::User => {
                let content = content
                    .ok_or_else(|| ApiError::invalid(&cp, "A user message needs content."))?;
                chars += user_content(model, &content, i, &cp, &mut files)?;
                fwd.content = Some(content);
            }
            Role::Assistant => {
                let calls = tool_calls(model, m.tool_calls, &p, &mut call_ids)?;
                if let Some(content) = content {
                    chars += text_content(&content, &cp, &["text", "refusal"])?;
                    fwd.content = Some(content);
                } else if calls.is_none() {
                    return Err(ApiError::invalid(
                        &cp,
                        "An assistant message needs content or tool_calls.",
                    ));
                } else {
                    fwd.content = Some(Value::Null);
                }
                fwd.tool_calls = calls;
            }
            Role::Tool => {
                let id_param = format!("{p}.tool_call_id");
                let id = match m.tool_call_id {
                    Some(Value::String(id)) => id,
                    _ => {
                        return Err(ApiError::invalid(
                            &id_param,
                            "A tool message needs tool_call_id (a string).",
                        ))
                    }
                };
                if !call_ids.contains(&id) {
                    return Err(ApiError::invalid(
                        &id_param,
                        format!("tool_call_id '{id}' answers no tool call of an earlier assistant message."),
                    ));
                }
                let content = content
                    .ok_or_else(|| ApiError::invalid(&cp, "A tool message needs content."))?;
                chars += text_content(&content, &cp, &["text"])?;
                fwd.tool_call_id = Some(id);
                fwd.content = Some(content);
            }
            Role::System | Role::Developer => {
                let content = content
                    .ok_or_else(|| ApiError::invalid(&cp, "A system message needs content."))?;
                chars += text_content(&content, &cp, &["text"])?;
                fwd.content = Some(content);
            }
        }
        out.push(fwd);
    }
    Ok((out, files, chars))
}

/// An assistant message's tool calls, checked and moved out of it (`None` for none).
fn tool_calls(
    model: &ChatModel,
    calls: Option<Value>,
    p: &str,
    call_ids: &mut HashSet<String>,
) -> ApiResult<Option<Value>> {
    let Some(calls) = calls else {
        return Ok(None);
    };
    let tp = format!("{p}.tool_calls");
    let list = calls
        .as_array()
        .ok_or_else(|| ApiError::invalid(&tp, "tool_calls must be an array."))?;
    if list.is_empty() {
        return Ok(None);
    }
    require_capability(model, "tools", &tp)?;
    for (k, call) in list.iter().enumerate() {
        let cp = format!("{tp}[{k}]");
        let id = call.get("id").and_then(Value::as_str).ok_or_else(|| {
            ApiError::invalid(&format!("{cp}.id"), "A tool call needs an id (a string).")
        })?;
        if call.get("type").and_then(Value::as_str) != Some("function") {
            return Err(ApiError::invalid(
                &format!("{cp}.type"),
                "A tool call's type must be 'function'.",
            ));
        }
        let f = call.get("function");
        if !f.and_then(|f| f.get("name")).is_some_and(Value::is_string) {
            return Err(ApiError::invalid(
                &format!("{cp}.function.name"),
                "A tool call needs function.name.",
            ));
        }
        if !f
            .and_then(|f| f.get("arguments"))
            .is_some_and(Value::is_string)
        {
            return Err(ApiError::invalid(
                &format!("{cp}.function.arguments"),
                "function.arguments must be a JSON-encoded string.",
            ));
        }
        call_ids.insert(id.to_owned());
    }
    Ok(Some(calls))
}

/// A user message's content: a string, or parts of the contract's types. File parts are
/// recorded for the handler to resolve.
fn user_content(
    model: &ChatModel,
    content: &Value,
    message: usize,
    cp: &str,
    files: &mut Vec<FileRef>,
) -> ApiResult<usize> {
    let parts = match content {
        Value::String(s) => return Ok(s.chars().count()),
        Value::Array(parts) if parts.is_empty() => {
            return Err(ApiError::invalid(cp, "content must not be an empty array."))
        }
        Value::Array(parts) => parts,
        _ => {
            return Err(ApiError::invalid(
                cp,
                "content must be a string or an array of content parts.",
            ))
        }
    };
    let mut chars = 0;
    for (j, part) in parts.iter().enumerate() {
        let pp = format!("{cp}[{j}]");
        let obj = part
            .as_object()
            .ok_or_else(|| ApiError::invalid(&pp, "Each content part must be an object."))?;
        let kind = obj.get("type").and_then(Value::as_str).unwrap_or_default();
        // Images, audio, video and files count towards the estimate charged when the
        // upstream reports no usage.
        chars += crate::domain::billing::token_charges::part_estimate_chars(kind);
        match kind {
            "text" => {
                let text = obj.get("text").and_then(Value::as_str).ok_or_else(|| {
                    ApiError::invalid(&format!("{pp}.text"), "A text part needs text (a string).")
                })?;
                chars += text.chars().count();
            }
            "image_url" => {
                let ip = format!("{pp}.image_url");
                let image = obj
                    .get("image_url")
                    .and_then(Value::as_object)
                    .ok_or_else(|| {
                        ApiError::invalid(&ip, "An image_url part needs an image_url object.")
                    })?;
                let detail = match image.get("detail").filter(|d| !d.is_null()) {
                    None => None,
                    Some(Value::String(d)) if ["auto", "low", "high"].contains(&d.as_str()) => {
                        Some(d.clone())
                    }
                    Some(_) => {
                        return Err(ApiError::invalid(
                            &format!("{ip}.detail"),
                            "detail must be auto, low or high.",
                        ))
                    }
                };
                // An image may also name an uploaded file: `{file_id}` or a url that is a file id.
                let file_id = image.get("file_id").and_then(Value::as_str).or_else(|| {
                    image
                        .get("url")
                        .and_then(Value::as_str)
                        .filter(|u| u.starts_with("file_"))
                });
                if let Some(file_id) = file_id {
                    require_capability(model, "vision", &pp)?;
                    files.push(FileRef {
                        message,
                        part: j,
                        file_id: file_id.to_owned(),
                        param: format!("{ip}.file_id"),
                        image_detail: Some(detail),
                    });
                } else {
                    let url = image.get("url").and_then(Value::as_str).unwrap_or_default();
                    check_media_url(url, "image", &format!("{ip}.url"))?;
                    require_capability(model, "vision", &pp)?;
                }
            }
            "video_url" | "audio_url" => {
                let media = if kind == "video_url" {
                    "video"
                } else {
                    "audio"
                };
                let up = format!("{pp}.{kind}");
                let url = obj
                    .get(kind)
                    .and_then(|o| o.get("url"))
                    .and_then(Value::as_str)
                    .ok_or_else(|| {
                        ApiError::invalid(
                            &format!("{up}.url"),
                            format!("A {kind} part needs {kind}.url."),
                        )
                    })?;
                check_media_url(url, media, &format!("{up}.url"))?;
                require_capability(model, media, &pp)?;
            }
            "input_audio" => {
                let ap = format!("{pp}.input_audio");
                let audio = obj
                    .get("input_audio")
                    .and_then(Value::as_object)
                    .ok_or_else(|| {
                        ApiError::invalid(&ap, "An input_audio part needs {data, format}.")
                    })?;
                let data = audio
                    .get("data")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if data.is_empty() || !is_base64(data) {
                    return Err(ApiError::invalid(
                        &format!("{ap}.data"),
                        "input_audio.data must be base64-encoded audio.",
                    ));
                }
                let format = audio
                    .get("format")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if !AUDIO_FORMATS.contains(&format) {
                    return Err(ApiError::invalid(
                        &format!("{ap}.format"),
                        format!(
                            "input_audio.format must be one of {}.",
                            AUDIO_FORMATS.join(", ")
                        ),
                    ));
                }
                require_capability(model, "audio", &pp)?;
            }
            "file" => {
                let fp = format!("{pp}.file");
                let file = obj.get("file").and_then(Value::as_object).ok_or_else(|| {
                    ApiError::invalid(&fp, "A file part needs a file object with file_id.")
                })?;
                if let Some(id) = file.get("file_id").filter(|v| !v.is_null()) {
                    let id = id.as_str().ok_or_else(|| {
                        ApiError::invalid(&format!("{fp}.file_id"), "file_id must be a string.")
                    })?;
                    files.push(FileRef {
                        message,
                        part: j,
                        file_id: id.to_owned(),
                        param: format!("{fp}.file_id"),
                        image_detail: None,
                    });
                } else if let Some(data) = file.get("file_data").and_then(Value::as_str) {
                    if !(data.starts_with("data:") || is_base64(data)) {
                        return Err(ApiError::invalid(
                            &format!("{fp}.file_data"),
                            "file_data must be a base64 data URL.",
                        ));
                    }
                    require_capability(model, "file", &pp)?;
                } else {
                    return Err(ApiError::invalid(
                        &format!("{fp}.file_id"),
                        "A file part needs file.file_id.",
                    ));
                }
            }
            _ => {
                return Err(ApiError::invalid(
                    &format!("{pp}.type"),
                    format!("Content part type must be one of {PART_TYPES}; got '{kind}'."),
                ))
            }
        }
    }
    Ok(chars)
}

/// Text content: a string, or an array of parts whose types are in `allowed`.
fn text_content(content: &Value, cp: &str, allowed: &[&str]) -> ApiResult<usize> {
    match content {
        Value::String(s) => Ok(s.chars().count()),
        Value::Array(parts) => {
            let mut chars = 0;
            for (j, part) in parts.iter().enumerate() {
                let kind = part.get("type").and_then(Value::as_str).unwrap_or_default();
                if !allowed.contains(&kind) {
                    return Err(ApiError::invalid(
                        &format!("{cp}[{j}].type"),
                        format!(
                            "Parts of this message must be of type {}.",
                            allowed.join(" or ")
                        ),
                    ));
                }
                let text = part.get(kind).and_then(Value::as_str).ok_or_else(|| {
                    ApiError::invalid(
                        &format!("{cp}[{j}].{kind}"),
                        format!("A {kind} part needs {kind} (a string)."),
                    )
                })?;
                chars += text.chars().count();
            }
            Ok(chars)
        }
        _ => Err(ApiError::invalid(cp, "content must be a string.")),
    }
}

/// An http(s) URL, or a base64 data URL of the right media type.
fn check_media_url(url: &str, media: &str, param: &str) -> ApiResult<()> {
    if let Some(rest) = url.strip_prefix("data:") {
        let ok = rest.split_once(',').is_some_and(|(meta, data)| {
            meta.starts_with(&format!("{media}/")) && meta.ends_with(";base64") && is_base64(data)
        });
        if !ok {
            return Err(ApiError::invalid(
                param,
                format!("A data URL must be data:{media}/<type>;base64,<data>."),
            ));
        }
        return Ok(());
    }
    match url::Url::parse(url) {
        Ok(u) if u.scheme() == "http" || u.scheme() == "https" => Ok(()),
        _ => Err(ApiError::invalid(
            param,
            format!("The {media} URL must be an http(s) URL, a base64 data URL, or a file id."),
        )),
    }
}

fn is_base64(data: &str) -> bool {
    data.bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'\n' | b'\r'))
}
