//! A Responses request's input items in their stored form: each item checked (its role, its
//! content parts, a function call's output), given an id, and references to stored items
//! resolved.

use super::persist;
use crate::domain::accounts::Caller;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::ids::new_id;
use crate::domain::Context;
use serde_json::{json, Map, Value};

/// Input items as stored: checked, given ids, references resolved.
pub struct Normalized {
    pub items: Vec<Value>,
    /// Ids of the items created by this request (not the referenced ones).
    pub own_ids: Vec<String>,
}

fn obj<'a>(v: &'a Value, param: &str) -> ApiResult<&'a Map<String, Value>> {
    v.as_object()
        .ok_or_else(|| ApiError::invalid(param, "Each input item must be an object."))
}

fn req_str<'a>(o: &'a Map<String, Value>, name: &str, at: &str) -> ApiResult<&'a str> {
    o.get(name).and_then(Value::as_str).ok_or_else(|| {
        ApiError::invalid(&format!("{at}.{name}"), format!("{name} must be a string."))
    })
}

/// Checks the request's input items and turns them into their stored form.
pub async fn normalize(cx: Context<'_>, caller: &Caller, raw: &[Value]) -> ApiResult<Normalized> {
    let mut items = Vec::with_capacity(raw.len());
    let mut own_ids = Vec::new();
    for (i, item) in raw.iter().enumerate() {
        let at = format!("input[{i}]");
        let o = obj(item, &at)?;
        let kind = match o.get("type") {
            None | Some(Value::Null) if o.contains_key("role") => "message",
            Some(Value::String(t)) => t.as_str(),
            _ => {
                return Err(ApiError::invalid(
                    &format!("{at}.type"),
                    "Each input item needs a type or a role.",
                ))
            }
        };
        let normalized = match kind {
            "message" => message(o, &at)?,
            "function_call" => json!({
                "type": "function_call",
                "id": new_id("fc"),
                "call_id": req_str(o, "call_id", &at)?,
                "name": req_str(o, "name", &at)?,
                "arguments": req_str(o, "arguments", &at)?,
                "status": "completed",
            }),
            "function_call_output" => json!({
                "type": "function_call_output",
                "id": new_id("fco"),
                "call_id": req_str(o, "call_id", &at)?,
                "output": tool_output(o.get("output"), &at)?,
                "status": "completed",
            }),
            "item_reference" => {
                let id = req_str(o, "id", &at)?;
                match persist::load_item(cx, caller, id).await? {
                    Some(found) => {
                        items.push(found);
                        continue;
                    }
                    None => {
                        return Err(ApiError::not_found(
                            "item_not_found",
                            format!("No item found with id '{id}'."),
                        )
                        .with_param(format!("{at}.id")))
                    }
                }
            }
            // Reasoning items carry nothing a chat upstream can take back; they are dropped.
            "reasoning" => continue,
            other => {
                return Err(ApiError::invalid(
                    &format!("{at}.type"),
                    format!("Input item type '{other}' is not supported."),
                ))
            }
        };
        if let Some(id) = normalized.get("id").and_then(Value::as_str) {
            own_ids.push(id.to_owned());
        }
        items.push(normalized);
    }
    Ok(Normalized { items, own_ids })
}

fn tool_output(output: Option<&Value>, at: &str) -> ApiResult<String> {
    match output {
        Some(Value::String(s)) => Ok(s.clone()),
        // Content parts: the chat tool message takes text only.
        Some(Value::Array(parts)) => {
            let mut text = String::new();
            for p in parts {
                match p.get("text").and_then(Value::as_str) {
                    Some(t) => text.push_str(t),
                    None => {
                        return Err(ApiError::invalid(
                            &format!("{at}.output"),
                            "A function_call_output output must be a string or text parts.",
                        ))
                    }
                }
            }
            Ok(text)
        }
        _ => Err(ApiError::invalid(
            &format!("{at}.output"),
            "A function_call_output needs an output string.",
        )),
    }
}

fn message(o: &Map<String, Value>, at: &str) -> ApiResult<Value> {
    let role = o.get("role").and_then(Value::as_str).unwrap_or_default();
    if !["user", "assistant", "developer", "system"].contains(&role) {
        return Err(ApiError::invalid(
            &format!("{at}.role"),
            "role must be user, assistant, developer or system.",
        ));
    }
    let text_type = if role == "assistant" {
        "output_text"
    } else {
        "input_text"
    };
    let content = match o.get("content") {
        Some(Value::String(s)) => vec![text_part(text_type, s)],
        Some(Value::Array(parts)) => {
            let mut out = Vec::with_capacity(parts.len());
            for (j, p) in parts.iter().enumerate() {
                out.push(content_part(role, p, &format!("{at}.content[{j}]"))?);
            }
            out
        }
        _ => {
            return Err(ApiError::invalid(
                &format!("{at}.content"),
                "content must be a string or an array of content parts.",
            ))
        }
    };
    Ok(json!({
        "type": "message",
        "id": new_id("msg"),
        "role": role,
        "content": content,
        "status": "completed",
    }))
}

fn text_part(kind: &str, text: &str) -> Value {
    if kind == "output_text" {
        json!({"type": "output_text", "text": text, "annotations": []})
    } else {
        json!({"type": kind, "text": text})
    }
}

fn content_part(role: &str, p: &Value, at: &str) -> ApiResult<Value> {
    let o = p
        .as_object()
        .ok_or_else(|| ApiError::invalid(at, "Each content part must be an object."))?;
    let kind = o.get("type").and_then(Value::as_str).unwrap_or_default();
    let only_user = |what: &str| -> ApiResult<()> {
        if role == "user" {
            Ok(())
        } else {
            Err(ApiError::invalid(
                &format!("{at}.type"),
                format!("{what} parts are accepted in user messages only."),
            ))
        }
    };
    match kind {
        "input_text" | "output_text" => Ok(text_part(kind, req_str(o, "text", at)?)),
        "refusal" if role == "assistant" => {
            Ok(json!({"type": "refusal", "refusal": req_str(o, "refusal", at)?}))
        }
        "input_image" => {
            only_user("input_image")?;
            let detail = match o.get("detail") {
                None | Some(Value::Null) => "auto",
                Some(Value::String(d)) if ["auto", "low", "high"].contains(&d.as_str()) => d,
                _ => {
                    return Err(ApiError::invalid(
                        &format!("{at}.detail"),
                        "detail must be auto, low or high.",
                    ))
                }
            };
            let url = o.get("image_url").and_then(Value::as_str);
            let file_id = o.get("file_id").and_then(Value::as_str);
            match (url, file_id) {
                (Some(url), None) => {
                    if !(url.starts_with("https://")
                        || url.starts_with("http://")
                        || url.starts_with("data:image/"))
                    {
                        return Err(ApiError::invalid(
                            &format!("{at}.image_url"),
                            "image_url must be an http(s) URL or a data:image/... base64 URL.",
                        ));
                    }
                    Ok(json!({"type": "input_image", "image_url": url, "detail": detail}))
                }
                (None, Some(id)) => {
                    Ok(json!({"type": "input_image", "file_id": id, "detail": detail}))
                }
                _ => Err(ApiError::invalid(
                    at,
                    "An input_image takes exactly one of image_url or file_id.",
                )),
            }
        }
        "input_file" => {
            only_user("input_file")?;
            let given: Vec<&str> = ["file_id", "file_data", "file_url"]
                .into_iter()
                .filter(|k| o.get(*k).is_some_and(|v| !v.is_null()))
                .collect();
            if given.len() != 1 {
                return Err(ApiError::invalid(
                    at,
                    "An input_file takes exactly one of file_id, file_data or file_url.",
                ));
            }
            let source = given[0];
            let value = req_str(o, source, at)?;
            let mut part = json!({"type": "input_file"});
            part[source] = value.into();
            if let Some(name) = o.get("filename").and_then(Value::as_str) {
                part["filename"] = name.into();
            }
            Ok(part)
        }
        other => Err(ApiError::invalid(
            &format!("{at}.type"),
            format!("Content type '{other}' is not supported here."),
        )),
    }
}
