//! Direct uploads: files too large for a Lambda request body (about 6 MB) go straight to the
//! blob store through a presigned PUT, then are registered as files with the same purpose and
//! size checks as `POST /v1/files`. The local server offers the same flow with its own signed
//! URLs.
//!
//! 1. `POST /v1/uploads` `{purpose, filename, bytes}` → an upload with `upload_url` (HTTP PUT,
//!    send the `upload_headers`), valid for an hour.
//! 2. PUT the bytes to `upload_url`.
//! 3. `POST /v1/uploads/{upload_id}/complete` → the file object (`file_id`).
//!
//! The upload URL names a staging blob (`staging/<org>/<upload id>`), never the file's own blob.
//! `complete` copies the staged bytes to the file's blob (which nothing can write afterwards),
//! measures and sniffs that copy (so the recorded size and type are the stored object's real
//! ones), and deletes the staging blob: a PUT to the upload URL after `complete` cannot change
//! the file. Staging blobs of abandoned uploads are removed by the local sweeper (when the
//! upload record expires) and by the bucket's `staging/` lifecycle rule on AWS.
//!
//! `complete` first claims the upload in the store: a conditional update moves it from
//! `pending` to `completing` (with the claim's time), so of racing completes exactly one copies,
//! checks and registers; the others wait for its outcome and answer the same file. Nothing
//! writes the file's blob after the claimant registered it. A claimant that fails gives the
//! upload back (`pending`); one whose process died is taken over after
//! [`COMPLETE_LEASE_SECS`].

use crate::domain::accounts::Caller;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::files::{blob_key, check_purpose, register, FileObject, PURPOSES};
use crate::domain::idempotency::Answered;
use crate::domain::ids::{is_valid, new_id};
use crate::domain::params::RequestBody;
use crate::domain::Context;
use crate::ports::blobs::ByteRange;
use crate::ports::store::{item, now_secs, Condition, ItemExt, Key, Update};
use futures::TryStreamExt;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;
use utoipa::ToSchema;

/// How long an upload URL stays valid.
pub const UPLOAD_TTL: Duration = Duration::from_secs(3600);

/// A `complete` claim older than this belongs to a process that died mid-copy; another
/// `complete` may take it over. Ten minutes is far beyond copying the largest upload.
pub const COMPLETE_LEASE_SECS: i64 = 600;
/// How long a `complete` that lost the race waits for the claimant's outcome before it answers
/// 409 `upload_in_progress`.
const COMPLETE_WAIT: Duration = Duration::from_secs(60);
const COMPLETE_POLL: Duration = Duration::from_millis(100);

const PENDING: &str = "pending";
const COMPLETING: &str = "completing";
const COMPLETED: &str = "completed";
const CLAIMED_AT: &str = "completing_at";

fn upload_key(org: &str, upload_id: &str) -> Key {
    crate::domain::table_keys::upload(org, upload_id)
}

/// Where an upload's URL puts its bytes until `complete` copies them to the file's blob.
pub fn staging_blob_key(org: &str, upload_id: &str) -> String {
    format!("{STAGING_PREFIX}{org}/{upload_id}")
}

/// The prefix of every staging blob (the bucket expires it; see infra/template.yaml).
pub const STAGING_PREFIX: &str = "staging/";

/// The prefix of an organization's staging blobs (what erasure deletes of its uploads).
pub fn staging_prefix(org: &str) -> String {
    format!("{STAGING_PREFIX}{org}/")
}

/// The longest file name an upload keeps.
pub const MAX_FILENAME_CHARS: usize = 512;

// The create body's one type: what `create` reads and the OpenAPI document's schema.
/// `POST /v1/uploads` (and the console's): reserves a direct upload to a presigned URL.
#[derive(Deserialize, Serialize, utoipa::ToSchema)]
#[schema(example = json!({"purpose": "vision", "filename": "frame.png", "bytes": 68, "mime_type": "image/png"}))]
pub struct UploadCreateRequest {
    /// `vision`, `video`, `audio` or `user_data`.
    pub purpose: String,
    #[schema(schema_with = filename_schema)]
    pub filename: String,
    #[schema(minimum = 1)]
    pub bytes: u64,
    #[serde(default)]
    pub mime_type: Option<String>,
}

impl RequestBody for UploadCreateRequest {
    fn expected(param: &str, _path: &str) -> Option<String> {
        Some(match param {
            "purpose" => purpose_expected(),
            "filename" => filename_expected(),
            "bytes" => "bytes must be the file's size, a whole number of bytes from 1.".to_owned(),
            "mime_type" => "mime_type must be a string such as \"image/png\".".to_owned(),
            _ => return None,
        })
    }

    fn check(self) -> ApiResult<Self> {
        if !PURPOSES.contains(&self.purpose.as_str()) {
            return Err(ApiError::invalid("purpose", purpose_expected()));
        }
        if self.filename.is_empty() || self.filename.len() > MAX_FILENAME_CHARS {
            return Err(ApiError::invalid("filename", filename_expected()));
        }
        Ok(self)
    }
}

fn purpose_expected() -> String {
    format!("purpose must be one of {}.", PURPOSES.join(", "))
}

fn filename_expected() -> String {
    format!("filename must be 1 to {MAX_FILENAME_CHARS} characters.")
}

fn bytes_refused(max: u64) -> ApiError {
    ApiError::invalid("bytes", format!("bytes must be from 1 to {max}."))
}

fn filename_schema() -> utoipa::openapi::schema::Schema {
    utoipa::openapi::schema::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .min_length(Some(1))
        .max_length(Some(MAX_FILENAME_CHARS))
        .into()
}

/// An upload: PUT the bytes to `upload_url` with `upload_headers`, then complete it.
#[derive(Debug, Serialize, ToSchema)]
pub struct Upload {
    pub id: String,
    #[schema(value_type = String, pattern = "^upload$")]
    pub object: &'static str,
    /// `pending` until completed.
    #[schema(value_type = String)]
    pub status: &'static str,
    pub purpose: String,
    pub filename: String,
    pub bytes: u64,
    pub created_at: i64,
    /// When `upload_url` stops working.
    pub expires_at: i64,
    pub upload_url: String,
    #[schema(value_type = String, pattern = "^PUT$")]
    pub upload_method: &'static str,
    #[schema(value_type = BTreeMap<String, String>)]
    pub upload_headers: BTreeMap<&'static str, String>,
}

/// `POST /v1/uploads` and the console's upload alike: reserves an upload under the request's
/// `Idempotency-Key` (raw, as sent; none for a request without one). A replay answers the first
/// request's upload as recorded, its `upload_url` included.
pub async fn create(
    cx: Context<'_>,
    caller: &Caller,
    idempotency_key: Option<&[u8]>,
    req: UploadCreateRequest,
) -> ApiResult<Answered<Upload>> {
    use crate::domain::idempotency::{self as idem, Begin};
    let key = idem::key_from(idempotency_key)?;
    let fingerprint = idem::Fingerprint::new("uploads")
        .json(&req)?
        .clone()
        .finish();
    let claim = match idem::begin(cx, caller, "uploads", key.as_deref(), &fingerprint).await? {
        Begin::Proceed(claim) => claim,
        Begin::Replay(first) => return Ok(Answered::Replayed(first)),
        // Uploads never bind a resource to their claim.
        Begin::Resource(_) => None,
    };
    match reserve(cx, caller, req).await {
        Ok(upload) => {
            idem::finish(cx, claim, &upload).await?;
            Ok(Answered::Now(upload))
        }
        Err(e) => {
            idem::release(cx, claim).await;
            Err(e)
        }
    }
}

async fn reserve(cx: Context<'_>, caller: &Caller, req: UploadCreateRequest) -> ApiResult<Upload> {
    // The size bound is the deployment's, so it is checked here rather than by the body's rules.
    if req.bytes == 0 || req.bytes > cx.settings.max_upload_bytes {
        return Err(bytes_refused(cx.settings.max_upload_bytes));
    }
    let upload_id = new_id("upload");
    let file_id = new_id("file");
    let content_type = req
        .mime_type
        .unwrap_or_else(|| "application/octet-stream".into());
    let url = cx
        .blobs
        .presign_put(
            &staging_blob_key(&caller.org, &upload_id),
            &content_type,
            UPLOAD_TTL,
        )
        .await?;
    let now = now_secs();
    let expires_at = now + UPLOAD_TTL.as_secs() as i64;
    let mut it = item(&upload_key(&caller.org, &upload_id));
    it.insert("kind".into(), "upload".into());
    it.insert("id".into(), upload_id.clone().into());
    it.insert("file_id".into(), file_id.clone().into());
    it.insert("purpose".into(), req.purpose.clone().into());
    it.insert("filename".into(), req.filename.clone().into());
    it.insert("bytes".into(), (req.bytes as i64).into());
    it.insert("status".into(), "pending".into());
    it.insert("created_at".into(), now.into());
    // Kept a day past the URL's life so a late `complete` gets a clear answer.
    it.insert(
        crate::ports::store::EXPIRES_AT.into(),
        (expires_at + 24 * 3600).into(),
    );
    cx.store.put(it, Some(Condition::NotExists)).await?;
    Ok(Upload {
        id: upload_id,
        object: "upload",
        status: "pending",
        purpose: req.purpose,
        filename: req.filename,
        bytes: req.bytes,
        created_at: now,
        expires_at,
        upload_url: url,
        upload_method: "PUT",
        upload_headers: BTreeMap::from([("content-type", content_type)]),
    })
}

/// What a `complete` found when it tried to claim the upload.
#[derive(Debug)]
pub enum Claimed {
    /// This request holds the upload (claimed at the given time) and must finish or release it.
    Ours(crate::ports::store::Item, i64),
    /// Another request completed it: this file.
    Done(String),
}

/// Claims the upload for this `complete` (a conditional `pending` → `completing` update, or a
/// takeover of a lapsed claim); waits while another request holds it. Exactly one of any
/// number of racing claims gets [`Claimed::Ours`] (the item-store contract checks it on every
/// adapter).
pub async fn claim(
    store: &dyn crate::ports::store::ItemStore,
    key: &Key,
    not_found: impl Fn() -> ApiError,
) -> ApiResult<Claimed> {
    let deadline = tokio::time::Instant::now() + COMPLETE_WAIT;
    loop {
        let upload = store.get(key).await?.ok_or_else(&not_found)?;
        let now = now_secs();
        let condition = match upload.str_attr("status") {
            Some(COMPLETED) => {
                return Ok(Claimed::Done(
                    upload.str_attr("file_id").unwrap_or_default().to_owned(),
                ))
            }
            Some(COMPLETING) => {
                let at = upload.i64_attr(CLAIMED_AT).unwrap_or(0);
                if at + COMPLETE_LEASE_SECS >= now {
                    if tokio::time::Instant::now() >= deadline {
                        return Err(ApiError::new(
                            crate::domain::error::ErrorKind::Conflict,
                            "upload_in_progress",
                            "Another request is completing this upload. Retry it later.",
                        )
                        .with_param("upload_id"));
                    }
                    tokio::time::sleep(COMPLETE_POLL).await;
                    continue;
                }
                // Its claimant died: take it over, unless someone else did first.
                Condition::Eq("status".into(), COMPLETING.into())
                    .and(Condition::Eq(CLAIMED_AT.into(), at.into()))
            }
            _ => Condition::Eq("status".into(), PENDING.into()),
        };
        let take = Update::new().set("status", COMPLETING).set(CLAIMED_AT, now);
        match store.update(key, take, Some(condition)).await {
            Ok(item) => return Ok(Claimed::Ours(item, now)),
            Err(crate::ports::store::StoreError::ConditionFailed) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Registers an upload's stored bytes as a file after the same checks as `POST /v1/files`;
/// completing twice, or concurrently, answers the same file.
pub async fn complete(cx: Context<'_>, caller: &Caller, upload_id: &str) -> ApiResult<FileObject> {
    let not_found = || {
        ApiError::not_found(
            "upload_not_found",
            format!("No upload found with id '{upload_id}'."),
        )
        .with_param("upload_id")
    };
    if !is_valid(upload_id, "upload") {
        return Err(not_found());
    }
    let key = upload_key(&caller.org, upload_id);
    let (upload, claimed_at) = match claim(cx.store, &key, not_found).await? {
        Claimed::Done(file_id) => {
            return crate::domain::files::find(cx, &caller.org, &file_id).await
        }
        Claimed::Ours(upload, at) => (upload, at),
    };
    let ours = Condition::Eq("status".into(), COMPLETING.into())
        .and(Condition::Eq(CLAIMED_AT.into(), claimed_at.into()));
    match register_claimed(cx, caller, upload_id, &upload).await {
        Ok(file) => {
            cx.store
                .update(&key, Update::new().set("status", COMPLETED), Some(ours))
                .await?;
            Ok(file)
        }
        Err(e) => {
            // Given back, so that the caller can PUT the bytes again and retry.
            let back = Update::new().set("status", PENDING).remove(CLAIMED_AT);
            if let Err(err) = cx.store.update(&key, back, Some(ours)).await {
                tracing::warn!(error = %err, upload = %upload_id, "could not release an upload claim");
            }
            Err(e)
        }
    }
}

/// Copies, measures, sniffs and registers the staged bytes of an upload this request claimed.
async fn register_claimed(
    cx: Context<'_>,
    caller: &Caller,
    upload_id: &str,
    upload: &crate::ports::store::Item,
) -> ApiResult<FileObject> {
    let file_id = upload.str_attr("file_id").unwrap_or_default().to_owned();
    let purpose = upload.str_attr("purpose").unwrap_or_default().to_owned();
    let declared = upload.i64_attr("bytes").unwrap_or_default() as u64;
    let staged = staging_blob_key(&caller.org, upload_id);
    let blob = blob_key(&caller.org, &file_id);
    let refuse = |e: ApiError| async {
        let _ = cx.blobs.delete(&blob).await;
        let _ = cx.blobs.delete(&staged).await;
        Err::<FileObject, _>(e)
    };
    let nothing_yet = || {
        ApiError::invalid(
            "upload_id",
            "Nothing has been uploaded yet: PUT the file to upload_url first.",
        )
    };
    let meta = cx.blobs.head(&staged).await?.ok_or_else(nothing_yet)?;
    if meta.size != declared || meta.size > cx.settings.max_upload_bytes {
        return refuse(ApiError::invalid(
            "bytes",
            format!(
                "The upload has {} bytes; {declared} were declared.",
                meta.size
            ),
        ))
        .await;
    }
    // Copy the staged bytes to the file's own blob: from here on the file is what was copied,
    // whatever is PUT to the upload URL later. Size and type are taken from the copy.
    let source = match cx.blobs.get(&staged, None).await {
        Ok(read) => read.body,
        Err(crate::ports::blobs::BlobError::NotFound) => return Err(nothing_yet()),
        Err(e) => return Err(e.into()),
    };
    // Stored under its sniffed type, so that whoever fetches it by a signed URL is told what
    // it is (whatever type the PUT to the staging URL claimed).
    let (sniffed, source) = crate::domain::files::sniff_stream(source).await?;
    let content_type = reelgate_media::sniff(&sniffed).mime;
    let copied = match cx
        .blobs
        .put_stream(&blob, content_type, source, declared)
        .await
    {
        Ok(size) => size,
        Err(crate::ports::blobs::BlobError::TooLarge { .. }) => {
            return refuse(ApiError::invalid(
                "bytes",
                format!("The upload has more than the {declared} bytes declared."),
            ))
            .await
        }
        Err(e) => {
            let _ = cx.blobs.delete(&blob).await;
            return Err(e.into());
        }
    };
    let _ = cx.blobs.delete(&staged).await;
    if copied != declared {
        return refuse(ApiError::invalid(
            "bytes",
            format!("The upload has {copied} bytes; {declared} were declared."),
        ))
        .await;
    }
    let head = cx
        .blobs
        .get(
            &blob,
            Some(ByteRange {
                start: 0,
                end_inclusive: 4095,
            }),
        )
        .await?;
    let head: Vec<bytes::Bytes> = head
        .body
        .try_collect()
        .await
        .map_err(|e| ApiError::internal("reading an upload", e))?;
    let mime = match check_purpose(&purpose, &head.concat()) {
        Ok(m) => m,
        Err(e) => return refuse(e).await,
    };
    let filename = upload.str_attr("filename").unwrap_or("upload").to_owned();
    register(cx, &caller.org, &file_id, &filename, &purpose, copied, mime).await
}
