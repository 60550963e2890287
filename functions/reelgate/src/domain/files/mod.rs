//! Files: uploads that video jobs and chat/responses requests refer to by `file_id`.
//! An upload is streamed to the blob store while its first bytes are sniffed; the content must
//! match the purpose. Files expire 30 days after upload and belong to one organization.

pub mod form_upload;
pub mod record;
pub mod uploads;

use crate::domain::error::{ApiError, ApiResult};
use crate::domain::files::record::FileRecord;
use crate::domain::ids::is_valid;
use crate::domain::Context;
use crate::ports::blobs::ByteStream;
use crate::ports::store::{now_secs, Condition, Item, Key};
use bytes::Bytes;
use futures::StreamExt;
use reelgate_media::MediaKind;
use serde::Serialize;

/// Purposes and the content each accepts.
pub const PURPOSES: &[&str] = &["vision", "video", "audio", "user_data", "assistants"];

fn accepts(purpose: &str, kind: MediaKind) -> bool {
    match purpose {
        "vision" => kind == MediaKind::Image,
        "video" => kind == MediaKind::Video,
        "audio" => kind == MediaKind::Audio,
        // Documents and media for chat and responses inputs.
        _ => kind != MediaKind::Other,
    }
}

fn purpose_description(purpose: &str) -> &'static str {
    match purpose {
        "vision" => "an image (PNG, JPEG, GIF or WebP)",
        "video" => "a video (MP4, MOV, WebM)",
        "audio" => "audio (MP3, WAV, OGG, FLAC, AAC/M4A)",
        _ => "a document, image, audio, video or text file",
    }
}

pub fn file_key(org: &str, file_id: &str) -> Key {
    crate::domain::table_keys::file(org, file_id)
}

pub fn blob_key(org: &str, file_id: &str) -> String {
    format!("{org}/files/{file_id}")
}

#[derive(Clone, Debug, Serialize, PartialEq, utoipa::ToSchema)]
pub struct FileObject {
    pub id: String,
    /// Same as `id`; the video API's documentation calls it `file_id`.
    pub file_id: String,
    #[schema(value_type = String, pattern = "^file$")]
    pub object: &'static str,
    pub bytes: u64,
    pub created_at: i64,
    pub expires_at: i64,
    pub filename: String,
    pub purpose: String,
    /// Detected MIME type of the content.
    pub mime_type: String,
    #[schema(value_type = String)]
    pub status: &'static str,
}

impl FileObject {
    /// The file object of a stored file item of `org`.
    pub fn from_item(org: &str, it: &Item) -> Option<Self> {
        FileRecord::from_item(org, it).map(|f| FileObject::of(&f))
    }

    pub fn of(f: &FileRecord) -> Self {
        FileObject {
            id: f.id.clone(),
            file_id: f.id.clone(),
            object: "file",
            bytes: f.bytes,
            created_at: f.created_at,
            expires_at: f.expires_at,
            filename: f.filename.clone(),
            purpose: f.purpose.clone(),
            mime_type: f.mime_type.clone(),
            status: "processed",
        }
    }
}

fn not_found(file_id: &str) -> ApiError {
    ApiError::not_found(
        "file_not_found",
        format!("No file found with id '{file_id}'."),
    )
    .with_param("file_id")
}

/// Loads a file of the caller's organization; another organization's file does not exist.
pub async fn find(cx: Context<'_>, org: &str, file_id: &str) -> ApiResult<FileObject> {
    if !is_valid(file_id, "file") {
        return Err(not_found(file_id));
    }
    let it = cx.store.get(&file_key(org, file_id)).await?;
    it.as_ref()
        .and_then(|it| FileObject::from_item(org, it))
        .ok_or_else(|| not_found(file_id))
}

/// Records a stored blob as a file (shared by multipart uploads and direct-to-store uploads).
pub async fn register(
    cx: Context<'_>,
    org: &str,
    file_id: &str,
    filename: &str,
    purpose: &str,
    bytes: u64,
    mime_type: &str,
) -> ApiResult<FileObject> {
    let now = now_secs();
    let record = FileRecord {
        org: org.to_owned(),
        id: file_id.to_owned(),
        bytes,
        created_at: now,
        expires_at: now + cx.settings.file_retention.as_secs() as i64,
        filename: filename.to_owned(),
        purpose: purpose.to_owned(),
        mime_type: mime_type.to_owned(),
    };
    cx.store
        .put(record.to_item(), Some(Condition::NotExists))
        .await?;
    Ok(FileObject::of(&record))
}

/// Checks a sniffed kind against a purpose.
pub fn check_purpose(purpose: &str, head: &[u8]) -> ApiResult<&'static str> {
    if !PURPOSES.contains(&purpose) {
        return Err(ApiError::invalid(
            "purpose",
            format!("purpose must be one of {}.", PURPOSES.join(", ")),
        ));
    }
    let sniffed = reelgate_media::sniff(head);
    if !accepts(purpose, sniffed.kind) {
        return Err(ApiError::invalid(
            "file",
            format!(
                "A file with purpose '{purpose}' must be {}; this content looks like {}.",
                purpose_description(purpose),
                sniffed.mime
            ),
        ));
    }
    Ok(sniffed.mime)
}

/// Reads up to the first 4 KiB for sniffing and returns them with a stream of the whole body.
pub async fn sniff_stream(mut body: ByteStream) -> ApiResult<(Bytes, ByteStream)> {
    const HEAD: usize = 4096;
    let mut head = Vec::new();
    let mut taken: Vec<Bytes> = Vec::new();
    while head.len() < HEAD {
        match body.next().await {
            Some(chunk) => {
                let chunk =
                    chunk.map_err(|e| ApiError::bad_request(format!("The upload failed: {e}")))?;
                head.extend_from_slice(&chunk[..chunk.len().min(HEAD - head.len())]);
                taken.push(chunk);
            }
            None => break,
        }
    }
    let replay = futures::stream::iter(taken.into_iter().map(Ok));
    Ok((Bytes::from(head), Box::pin(replay.chain(body))))
}

/// The largest page `GET /v1/files` returns.
pub const MAX_PAGE: usize = 10_000;

/// A page of `org`'s files, newest first unless `order=asc`, only those of `purpose` when it is
/// given (a filter may skip items, so pages are read until this one is full).
pub async fn list(
    cx: Context<'_>,
    org: &str,
    params: &crate::domain::params::ListQuery,
    purpose: Option<&str>,
) -> ApiResult<crate::domain::params::Page<FileObject>> {
    let limit = params.limit(MAX_PAGE)?;
    let descending = params.descending()?;
    let mut cursor = params
        .after("file")?
        .map(crate::domain::table_keys::file_sk);
    let mut data = Vec::new();
    let mut has_more;
    loop {
        let mut q = crate::ports::store::Query::partition(crate::domain::table_keys::org_pk(org))
            .prefix(crate::domain::table_keys::FILE_PREFIX)
            .limit(limit)
            .after(cursor);
        if descending {
            q = q.descending();
        }
        let page = cx.store.query(q).await?;
        for it in &page.items {
            if let Some(f) = FileObject::from_item(org, it) {
                if purpose.is_none_or(|p| p == f.purpose) && data.len() < limit {
                    data.push(f);
                }
            }
        }
        has_more = page.last_sk.is_some();
        cursor = page.last_sk;
        if data.len() >= limit || cursor.is_none() {
            break;
        }
    }
    Ok(crate::domain::params::Page::new(data, has_more))
}

/// Deletes a file of `org` (404 for another organization's or an unknown id): the record, then
/// its bytes.
pub async fn delete(cx: Context<'_>, org: &str, file_id: &str) -> ApiResult<()> {
    find(cx, org, file_id).await?;
    cx.store.delete(&file_key(org, file_id), None).await?;
    cx.blobs.delete(&blob_key(org, file_id)).await?;
    Ok(())
}
