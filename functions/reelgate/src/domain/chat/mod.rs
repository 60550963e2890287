//! Chat completions' rules: request validation against the model's capabilities (`validate`),
//! the model catalog as the API shows it (`models`), and the file parts resolved to what an
//! upstream can use.

pub mod body;
pub mod caching;
pub mod complete;
pub mod completion;
pub mod dialect;
pub mod message_rules;
pub mod models;
pub mod routing;
pub mod stream;
pub mod upstreams;
pub mod validate;

use crate::domain::accounts::Caller;
use crate::domain::catalog::ChatModel;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::Context;
use crate::ports::upstream::request::ChatCompletionRequest;
use serde_json::{json, Value};
use validate::FileRef;

/// Documents sent inline (as a data URL) rather than by URL are read into memory; past this a
/// file is refused rather than risk the gateway's memory.
const MAX_INLINE_FILE_BYTES: u64 = 32 * 1024 * 1024;

/// A new completion id, `chatcmpl-` and a suffix that sorts by time.
pub fn new_completion_id() -> String {
    let id = crate::domain::ids::new_id("c");
    format!("chatcmpl-{}", &id[2..])
}

/// Replaces each file part with what an upstream can use: a signed URL for images, video and
/// audio; inline data for documents (OpenAI's `file_data`). Ownership is checked here: another
/// organization's file does not exist (404).
pub async fn resolve_files(
    cx: Context<'_>,
    caller: &Caller,
    model: &ChatModel,
    request: &mut ChatCompletionRequest,
    files: &[FileRef],
) -> ApiResult<()> {
    for f in files {
        let file = crate::domain::files::find(cx, &caller.org, &f.file_id)
            .await
            .map_err(|e| e.with_param(f.param.clone()))?;
        let key = crate::domain::files::blob_key(&caller.org, &file.id);
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
                let url = cx.blobs.presign_get(&key, cx.settings.presign_ttl).await?;
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
                let bytes =
                    crate::ports::blobs::read_limited(cx.blobs, &key, MAX_INLINE_FILE_BYTES)
                        .await?;
                use base64::Engine;
                let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
                json!({"type": "file", "file": {"file_data": format!("data:{mime};base64,{data}"), "filename": file.filename}})
            }
        };
        let slot = request
            .messages
            .get_mut(f.message)
            .and_then(|m| m.content.as_mut())
            .and_then(|c| c.get_mut(f.part))
            .ok_or_else(|| ApiError::internal("resolving a file part", "the part moved"))?;
        *slot = part;
    }
    Ok(())
}
