//! `POST /v1/files`: registering a multipart form's file. The HTTP layer streams the form's
//! `file` part into the blob store while it reads the form (a file never sits in memory), then
//! hands the form over as a [`FileUploadForm`]; this use case checks it, claims the
//! Idempotency-Key and registers the file, removing the stored bytes on every refusal.

use crate::domain::accounts::Caller;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::files::{check_purpose, find, register, FileObject};
use crate::domain::idempotency::{self as idem, Answered, Begin};
use crate::domain::Context;
use bytes::Bytes;
use serde_json::Value;
use utoipa::ToSchema;

/// The upload form as read: its `purpose` field and its `file` part, already in the blob store.
#[derive(ToSchema)]
pub struct FileUploadForm {
    /// `vision`, `video`, `audio` or `user_data`.
    #[schema(example = "vision", value_type = String)]
    pub purpose: Option<String>,
    /// The file's bytes.
    #[schema(value_type = String, format = Binary)]
    pub file: Option<StoredPart>,
}

/// A form part streamed into the blob store under the new file's blob key.
pub struct StoredPart {
    pub filename: String,
    pub bytes: u64,
    /// The first bytes, for sniffing the content's kind.
    pub head: Bytes,
    /// SHA-256 of the bytes (hex), for the Idempotency-Key fingerprint.
    pub sha256: String,
}

/// Registers the form's file as `file_id` (whose blob holds the stored part). A replayed
/// Idempotency-Key answers the first request's file as recorded.
pub async fn upload(
    cx: Context<'_>,
    caller: &Caller,
    idempotency_key: Option<&str>,
    file_id: &str,
    form: FileUploadForm,
) -> ApiResult<Answered<FileObject>> {
    let outcome = register_form(cx, caller, idempotency_key, file_id, form).await;
    if !matches!(outcome, Ok(Registered::New(..))) {
        // Refused, replayed or answered by the key's first file: these bytes are not a file.
        let blob = crate::domain::files::blob_key(&caller.org, file_id);
        let _ = cx.blobs.delete(&blob).await;
    }
    match outcome? {
        Registered::New(file, claim) => {
            idem::finish(cx, claim, &file).await?;
            Ok(Answered::Now(file))
        }
        Registered::Replay(answer) => Ok(Answered::Replayed(answer)),
        Registered::Existing(file) => Ok(Answered::Now(file)),
    }
}

enum Registered {
    New(FileObject, Option<idem::Claim>),
    Replay(Value),
    /// The file the key's first request registered before it died.
    Existing(FileObject),
}

async fn register_form(
    cx: Context<'_>,
    caller: &Caller,
    idempotency_key: Option<&str>,
    file_id: &str,
    form: FileUploadForm,
) -> ApiResult<Registered> {
    let Some(purpose) = form.purpose else {
        return Err(ApiError::invalid(
            "purpose",
            "The form field 'purpose' is required.",
        ));
    };
    let Some(part) = form.file else {
        return Err(ApiError::invalid(
            "file",
            "The form field 'file' is required.",
        ));
    };
    if part.bytes == 0 {
        return Err(ApiError::invalid("file", "The file is empty."));
    }
    let mime = check_purpose(&purpose, &part.head)?;
    // The same purpose, filename and bytes under the same Idempotency-Key register one file.
    let fingerprint = {
        let mut f = idem::Fingerprint::new("files");
        f.part(purpose.as_bytes())
            .part(part.filename.as_bytes())
            .part(part.sha256.as_bytes());
        f.finish()
    };
    let claim = match idem::begin(cx, caller, "files", idempotency_key, &fingerprint).await? {
        Begin::Proceed(claim) => claim,
        Begin::Replay(first) => return Ok(Registered::Replay(first)),
        Begin::Resource(id) => {
            return Ok(Registered::Existing(find(cx, &caller.org, &id).await?));
        }
    };
    let registered = register(
        cx,
        &caller.org,
        file_id,
        &part.filename,
        &purpose,
        part.bytes,
        mime,
    )
    .await;
    match registered {
        Ok(file) => Ok(Registered::New(file, claim)),
        Err(e) => {
            idem::release(cx, claim).await;
            Err(e)
        }
    }
}
