//! The chat completions gateway: `GET /v1/models` (the chat model catalog) and
//! `POST /v1/chat/completions`, proxied to the upstream that serves the model.
//!
//! A request is validated by hand (every failure names its `param`), admitted by the billing
//! rule (balance above zero), its file parts are turned into short-lived signed URLs, and it goes
//! to the upstream under the upstream's own model name. The reply is re-stamped with our id and
//! model name; streams are forwarded chunk by chunk as they arrive (see [`stream`]). Usage is
//! charged once the completion has ended.

pub mod models;
pub mod stream;
pub mod validate;

pub use models::discover_upstream_models;

use crate::accounts::Caller;
use crate::app::App;
use crate::catalog::ChatModel;
use crate::error::{ApiError, ApiResult};
use crate::http::extract::ApiJson;
use crate::upstream;
use crate::usage::{self, TokenUsage};
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Map, Value};
use validate::FileRef;

/// Documents sent inline (as a data URL) rather than by URL are read into memory; past this a
/// file is refused rather than risk the gateway's memory.
const MAX_INLINE_FILE_BYTES: u64 = 32 * 1024 * 1024;

pub fn routes() -> Router<App> {
    Router::new()
        .route("/v1/models", get(models::list))
        .route("/v1/models/{model}", get(models::retrieve))
        .route("/v1/chat/completions", post(completions))
}

/// The routes this module serves, for `http::API_ROUTES`.
pub const ROUTES: &[(&str, &str)] = &[
    ("GET", "/v1/models"),
    ("GET", "/v1/models/{model}"),
    ("POST", "/v1/chat/completions"),
];

/// A new completion id, `chatcmpl-` and a suffix that sorts by time.
pub fn new_completion_id() -> String {
    let id = crate::ids::new_id("c");
    format!("chatcmpl-{}", &id[2..])
}

async fn completions(
    State(app): State<App>,
    caller: Caller,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<Response> {
    let v = validate::validate(&app.catalog, &body)?;
    usage::admit(&app, &caller.org).await?;
    let mut request = v.upstream_body;
    resolve_files(&app, &caller, &v.model, &mut request, &v.files).await?;
    request.insert(
        "model".into(),
        Value::String(
            v.model
                .upstream_model
                .clone()
                .unwrap_or_else(|| v.model.id.clone()),
        ),
    );
    let upstream = app
        .upstreams
        .get_or_connect(&app.catalog, &v.model.upstream)
        .await
        .map_err(|e| upstream::api_error(&e))?;
    let id = new_completion_id();
    let created = crate::store::now_secs();
    if v.stream {
        let chunks = upstream
            .stream(Value::Object(request))
            .await
            .map_err(|e| upstream::api_error(&e))?;
        let ctx = stream::StreamContext {
            app: app.clone(),
            org: caller.org,
            person: caller.person,
            model: v.model,
            id,
            created,
            include_usage: v.include_usage,
            prompt_chars: v.prompt_chars,
        };
        return Ok(stream::respond(ctx, chunks));
    }
    let reply = upstream
        .complete(Value::Object(request))
        .await
        .map_err(|e| upstream::api_error(&e))?;
    let (completion, used) = restamp_completion(reply, &id, created, &v.model, v.prompt_chars);
    // Its own task: a client leaving now cannot cancel the charge halfway.
    let charge = stream::charge(app.clone(), caller.org, caller.person, v.model, id, used);
    let _ = tokio::spawn(charge).await;
    Ok(Json(completion).into_response())
}

/// Our view of an upstream completion: our id, created time and model name; usage always
/// present (estimated from text length when the upstream gave none). Returns the usage to bill.
fn restamp_completion(
    reply: Value,
    id: &str,
    created: i64,
    model: &ChatModel,
    prompt_chars: usize,
) -> (Value, TokenUsage) {
    let mut obj = match reply {
        Value::Object(o) => o,
        _ => Map::new(),
    };
    obj.insert("id".into(), id.into());
    obj.insert("object".into(), "chat.completion".into());
    obj.insert("created".into(), created.into());
    obj.insert("model".into(), model.id.clone().into());
    let used = match obj.get("usage").and_then(TokenUsage::from_json) {
        Some(used) => used,
        None => {
            let completion_chars: usize = obj
                .get("choices")
                .and_then(Value::as_array)
                .map(|choices| choices.iter().map(|c| message_chars(&c["message"])).sum())
                .unwrap_or(0);
            let estimate = TokenUsage::estimate(prompt_chars, completion_chars);
            obj.insert("usage".into(), estimate.to_chat_json());
            estimate
        }
    };
    (Value::Object(obj), used)
}

/// Characters of generated text (content and tool-call arguments) in a message or delta.
pub(crate) fn message_chars(message: &Value) -> usize {
    let content = message
        .get("content")
        .and_then(Value::as_str)
        .map_or(0, |s| s.chars().count());
    let reasoning = message
        .get("reasoning_content")
        .and_then(Value::as_str)
        .map_or(0, |s| s.chars().count());
    let calls: usize = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(|calls| {
            calls
                .iter()
                .map(|c| {
                    let f = &c["function"];
                    f["name"].as_str().map_or(0, str::len)
                        + f["arguments"].as_str().map_or(0, |a| a.chars().count())
                })
                .sum()
        })
        .unwrap_or(0);
    content + reasoning + calls
}

/// Replaces each file part with what an upstream can use: a signed URL for images, video and
/// audio; inline data for documents (OpenAI's `file_data`). Ownership is checked here: another
/// organization's file does not exist (404).
async fn resolve_files(
    app: &App,
    caller: &Caller,
    model: &ChatModel,
    request: &mut Map<String, Value>,
    files: &[FileRef],
) -> ApiResult<()> {
    for f in files {
        let file = crate::files::find(app, &caller.org, &f.file_id)
            .await
            .map_err(|e| e.with_param(f.param.clone()))?;
        let key = crate::files::blob_key(&caller.org, &file.id);
        let mime = file.mime_type.as_str();
        let part_param = f
            .param
            .rsplitn(3, '.')
            .last()
            .unwrap_or(&f.param)
            .to_owned();
        let media = mime.split('/').next().unwrap_or_default();
        if f.image_detail.is_some() && media != "image" {
            return Err(ApiError::invalid(
                &f.param,
                format!("File {} is {mime}, not an image.", file.id),
            ));
        }
        let part = match media {
            "image" | "video" | "audio" => {
                let capability = match media {
                    "image" => "vision",
                    other => other,
                };
                validate::require_capability(model, capability, &part_param)?;
                let url = app
                    .blobs
                    .presign_get(&key, app.settings.presign_ttl)
                    .await?;
                match media {
                    "image" => {
                        let mut image = json!({"url": url});
                        if let Some(Some(detail)) = &f.image_detail {
                            image["detail"] = Value::String(detail.clone());
                        }
                        json!({"type": "image_url", "image_url": image})
                    }
                    "video" => json!({"type": "video_url", "video_url": {"url": url}}),
                    _ => json!({"type": "audio_url", "audio_url": {"url": url}}),
                }
            }
            _ => {
                validate::require_capability(model, "file", &part_param)?;
                if file.bytes > MAX_INLINE_FILE_BYTES {
                    return Err(ApiError::invalid(
                        &f.param,
                        format!("File {} is larger than the {MAX_INLINE_FILE_BYTES} bytes a document part may have.", file.id),
                    ));
                }
                let bytes = crate::blobs::read_all(app.blobs.as_ref(), &key).await?;
                use base64::Engine;
                let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
                json!({"type": "file", "file": {"file_data": format!("data:{mime};base64,{data}"), "filename": file.filename}})
            }
        };
        let slot = request
            .get_mut("messages")
            .and_then(|m| m.get_mut(f.message))
            .and_then(|m| m.get_mut("content"))
            .and_then(|c| c.get_mut(f.part))
            .ok_or_else(|| ApiError::internal("resolving a file part", "the part moved"))?;
        *slot = part;
    }
    Ok(())
}
