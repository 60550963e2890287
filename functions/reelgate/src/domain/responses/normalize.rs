//! A Responses request's input items in their stored form: each item checked (its role, its
//! content parts, a function call's output), given an id, and references to stored items
//! resolved.

use super::items::{ContentPart, ConversationItem, ItemRole};
use super::persist;
use super::request::CreateRequest;
use crate::domain::accounts::Caller;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::ids::new_id;
use crate::domain::Context;
use serde_json::{Map, Value};

/// Input items as stored: checked, given ids, references resolved.
pub struct Normalized {
    pub items: Vec<ConversationItem>,
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

/// Checks the request's input items, which it holds as sent, and turns them into their stored
/// form. They are checked here, not when the body is read, because a reference needs the store
/// and the checks keep their order: the model and the previous response are refused first.
pub async fn normalize(
    cx: Context<'_>,
    caller: &Caller,
    req: &CreateRequest,
) -> ApiResult<Normalized> {
    let raw = &req.input;
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
            "function_call" => ConversationItem::FunctionCall {
                id: new_id("fc"),
                call_id: req_str(o, "call_id", &at)?.to_owned(),
                name: req_str(o, "name", &at)?.to_owned(),
                arguments: req_str(o, "arguments", &at)?.to_owned(),
                status: COMPLETED.to_owned(),
            },
            "function_call_output" => ConversationItem::FunctionCallOutput {
                id: new_id("fco"),
                call_id: req_str(o, "call_id", &at)?.to_owned(),
                output: tool_output(o.get("output"), &at)?,
                status: COMPLETED.to_owned(),
            },
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
        own_ids.push(normalized.id().to_owned());
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

fn message(o: &Map<String, Value>, at: &str) -> ApiResult<ConversationItem> {
    let role = o
        .get("role")
        .and_then(Value::as_str)
        .and_then(ItemRole::parse)
        .ok_or_else(|| {
            ApiError::invalid(
                &format!("{at}.role"),
                "role must be user, assistant, developer or system.",
            )
        })?;
    let text_type = if role == ItemRole::Assistant {
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
    Ok(ConversationItem::Message {
        id: new_id("msg"),
        role,
        content,
        status: COMPLETED.to_owned(),
    })
}

/// The status of every item a request brings: it was given whole.
const COMPLETED: &str = "completed";

fn text_part(kind: &str, text: &str) -> ContentPart {
    if kind == "output_text" {
        ContentPart::OutputText {
            text: text.to_owned(),
            annotations: Vec::new(),
        }
    } else {
        ContentPart::InputText {
            text: text.to_owned(),
        }
    }
}

fn content_part(role: ItemRole, p: &Value, at: &str) -> ApiResult<ContentPart> {
    let o = p
        .as_object()
        .ok_or_else(|| ApiError::invalid(at, "Each content part must be an object."))?;
    let kind = o.get("type").and_then(Value::as_str).unwrap_or_default();
    let only_user = |what: &str| -> ApiResult<()> {
        if role == ItemRole::User {
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
        "refusal" if role == ItemRole::Assistant => Ok(ContentPart::Refusal {
            refusal: req_str(o, "refusal", at)?.to_owned(),
        }),
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
                    Ok(ContentPart::InputImage {
                        image_url: Some(url.to_owned()),
                        file_id: None,
                        detail: detail.to_owned(),
                    })
                }
                (None, Some(id)) => Ok(ContentPart::InputImage {
                    image_url: None,
                    file_id: Some(id.to_owned()),
                    detail: detail.to_owned(),
                }),
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
            let value = Some(req_str(o, source, at)?.to_owned());
            let given = |name: &str| if name == source { value.clone() } else { None };
            Ok(ContentPart::InputFile {
                file_id: given("file_id"),
                file_data: given("file_data"),
                file_url: given("file_url"),
                filename: o.get("filename").and_then(Value::as_str).map(str::to_owned),
            })
        }
        other => Err(ApiError::invalid(
            &format!("{at}.type"),
            format!("Content type '{other}' is not supported here."),
        )),
    }
}
