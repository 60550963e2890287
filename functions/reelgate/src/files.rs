//! Files: uploads that video jobs and chat/responses requests refer to by `file_id`.
//! An upload is streamed to the blob store while its first bytes are sniffed; the content must
//! match the purpose. Files expire 30 days after upload and belong to one organization.

use crate::accounts::Caller;
use crate::app::App;
use crate::blobs::ByteStream;
use crate::error::{ApiError, ApiResult};
use crate::http::extract::ApiQuery;
use crate::ids::{is_valid, new_id};
use crate::store::{item, now_secs, Condition, Item, ItemExt, Key, Query};
use axum::extract::{DefaultBodyLimit, Multipart, Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::get;
use axum::{Json, Router};
use bytes::Bytes;
use futures::StreamExt;
use reelgate_media::MediaKind;
use serde::{Deserialize, Serialize};

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
    Key::new(format!("ORG#{org}"), format!("FILE#{file_id}"))
}

pub fn blob_key(org: &str, file_id: &str) -> String {
    format!("{org}/files/{file_id}")
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct FileObject {
    pub id: String,
    /// Same as `id`; the video API's documentation calls it `file_id`.
    pub file_id: String,
    pub object: &'static str,
    pub bytes: u64,
    pub created_at: i64,
    pub expires_at: i64,
    pub filename: String,
    pub purpose: String,
    /// Detected MIME type of the content.
    pub mime_type: String,
    pub status: &'static str,
}

impl FileObject {
    pub fn from_item(it: &Item) -> Option<Self> {
        let id = it.str_attr("id")?.to_owned();
        Some(FileObject {
            file_id: id.clone(),
            id,
            object: "file",
            bytes: it.i64_attr("bytes").unwrap_or_default().max(0) as u64,
            created_at: it.i64_attr("created_at").unwrap_or_default(),
            expires_at: it.i64_attr("expires_at").unwrap_or_default(),
            filename: it.str_attr("filename").unwrap_or_default().to_owned(),
            purpose: it.str_attr("purpose").unwrap_or_default().to_owned(),
            mime_type: it
                .str_attr("mime_type")
                .unwrap_or("application/octet-stream")
                .to_owned(),
            status: "processed",
        })
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
pub async fn find(app: &App, org: &str, file_id: &str) -> ApiResult<FileObject> {
    if !is_valid(file_id, "file") {
        return Err(not_found(file_id));
    }
    let it = app.store.get(&file_key(org, file_id)).await?;
    it.as_ref()
        .and_then(FileObject::from_item)
        .ok_or_else(|| not_found(file_id))
}

pub fn routes() -> Router<App> {
    Router::new()
        .route(
            "/v1/files",
            get(list).post(upload).layer(DefaultBodyLimit::disable()),
        )
        .route("/v1/files/{file_id}", get(retrieve).delete(delete))
        .route("/v1/files/{file_id}/content", get(content))
}

/// Records a stored blob as a file (shared by multipart uploads and direct-to-store uploads).
pub async fn register(
    app: &App,
    org: &str,
    file_id: &str,
    filename: &str,
    purpose: &str,
    bytes: u64,
    mime_type: &str,
) -> ApiResult<FileObject> {
    let now = now_secs();
    let mut it = item(&file_key(org, file_id));
    it.insert("kind".into(), "file".into());
    it.insert("id".into(), file_id.into());
    it.insert("bytes".into(), (bytes as i64).into());
    it.insert("created_at".into(), now.into());
    it.insert(
        crate::store::EXPIRES_AT.into(),
        (now + app.settings.file_retention.as_secs() as i64).into(),
    );
    it.insert("filename".into(), filename.into());
    it.insert("purpose".into(), purpose.into());
    it.insert("mime_type".into(), mime_type.into());
    let file = FileObject::from_item(&it)
        .ok_or_else(|| ApiError::internal("recording a file", "bad item"))?;
    app.store.put(it, Some(Condition::NotExists)).await?;
    Ok(file)
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

pub async fn upload(
    State(app): State<App>,
    caller: Caller,
    mut form: Multipart,
) -> ApiResult<Json<FileObject>> {
    let file_id = new_id("file");
    let key = blob_key(&caller.org, &file_id);
    let mut purpose: Option<String> = None;
    let mut stored: Option<(String, u64, Bytes)> = None;
    let outcome: ApiResult<()> = async {
        while let Some(field) = form.next_field().await.map_err(multipart_error)? {
            match field.name() {
                Some("purpose") => {
                    purpose = Some(
                        field
                            .text()
                            .await
                            .map_err(multipart_error)?
                            .trim()
                            .to_owned(),
                    );
                }
                Some("file") => {
                    if stored.is_some() {
                        return Err(ApiError::invalid(
                            "file",
                            "Send exactly one file per upload.",
                        ));
                    }
                    let filename = field.file_name().unwrap_or("upload").to_owned();
                    let (size, head) = store_field(&app, &key, field).await?;
                    stored = Some((filename, size, head));
                }
                _ => {}
            }
        }
        Ok(())
    }
    .await;
    let cleanup = || async {
        let _ = app.blobs.delete(&key).await;
    };
    if let Err(e) = outcome {
        cleanup().await;
        return Err(e);
    }
    let Some(purpose) = purpose else {
        cleanup().await;
        return Err(ApiError::invalid(
            "purpose",
            "The form field 'purpose' is required.",
        ));
    };
    let Some((filename, size, head)) = stored else {
        return Err(ApiError::invalid(
            "file",
            "The form field 'file' is required.",
        ));
    };
    if size == 0 {
        cleanup().await;
        return Err(ApiError::invalid("file", "The file is empty."));
    }
    let mime = match check_purpose(&purpose, &head) {
        Ok(mime) => mime,
        Err(e) => {
            cleanup().await;
            return Err(e);
        }
    };
    match register(&app, &caller.org, &file_id, &filename, &purpose, size, mime).await {
        Ok(file) => Ok(Json(file)),
        Err(e) => {
            cleanup().await;
            Err(e)
        }
    }
}

/// Streams one multipart field into the blob store. The field borrows the form, so a channel
/// hands its chunks to the store's (owned) stream while both run concurrently.
async fn store_field(
    app: &App,
    key: &str,
    mut field: axum::extract::multipart::Field<'_>,
) -> ApiResult<(u64, Bytes)> {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(8);
    let body: ByteStream = Box::pin(futures::stream::poll_fn(move |cx| rx.poll_recv(cx)));
    let pump = async move {
        loop {
            match field.chunk().await {
                Ok(Some(chunk)) => {
                    if tx.send(Ok(chunk)).await.is_err() {
                        return Ok(()); // the store stopped reading (it reports why)
                    }
                }
                Ok(None) => return Ok(()),
                Err(e) => {
                    let _ = tx.send(Err(std::io::Error::other(e.to_string()))).await;
                    return Err(multipart_error(e));
                }
            }
        }
    };
    let store = async {
        let (head, body) = sniff_stream(body).await?;
        let size = app
            .blobs
            .put_stream(key, "application/octet-stream", body, app.settings.max_upload_bytes)
            .await
            .map_err(|e| match e {
                crate::blobs::BlobError::TooLarge { limit } => ApiError::new(
                    axum::http::StatusCode::PAYLOAD_TOO_LARGE,
                    "invalid_request_error",
                    "file_too_large",
                    format!("Files are accepted up to {limit} bytes; larger ones use the direct upload flow."),
                )
                .with_param("file"),
                other => other.into(),
            })?;
        Ok::<_, ApiError>((size, head))
    };
    let (pumped, stored) = tokio::join!(pump, store);
    pumped?;
    stored
}

fn multipart_error(e: axum::extract::multipart::MultipartError) -> ApiError {
    if e.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
        return ApiError::new(
            e.status(),
            "invalid_request_error",
            "file_too_large",
            "The upload is larger than this endpoint accepts.",
        );
    }
    ApiError::bad_request(format!(
        "The multipart form could not be read: {}",
        e.body_text()
    ))
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

#[derive(Deserialize)]
struct ListParams {
    limit: Option<usize>,
    after: Option<String>,
    purpose: Option<String>,
    order: Option<String>,
}

async fn list(
    State(app): State<App>,
    caller: Caller,
    ApiQuery(params): ApiQuery<ListParams>,
) -> ApiResult<Json<serde_json::Value>> {
    let limit = params.limit.unwrap_or(20);
    if !(1..=10_000).contains(&limit) {
        return Err(ApiError::invalid(
            "limit",
            "limit must be between 1 and 10000.",
        ));
    }
    let ascending = match params.order.as_deref() {
        None | Some("desc") => false,
        Some("asc") => true,
        Some(_) => return Err(ApiError::invalid("order", "order must be asc or desc.")),
    };
    let after = match params.after {
        Some(id) if is_valid(&id, "file") => Some(format!("FILE#{id}")),
        Some(_) => return Err(ApiError::invalid("after", "after must be a file id.")),
        None => None,
    };
    let mut data = Vec::new();
    let mut cursor = after;
    let mut has_more;
    // A purpose filter may skip items, so keep reading pages until the page is full.
    loop {
        let mut q = Query::partition(format!("ORG#{}", caller.org))
            .prefix("FILE#")
            .limit(limit)
            .after(cursor);
        if !ascending {
            q = q.descending();
        }
        let page = app.store.query(q).await?;
        for it in &page.items {
            if let Some(f) = FileObject::from_item(it) {
                if params.purpose.as_deref().is_none_or(|p| p == f.purpose) && data.len() < limit {
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
    Ok(Json(crate::http::list_envelope(
        &data,
        |f| f.id.clone(),
        has_more,
    )))
}

async fn retrieve(
    State(app): State<App>,
    caller: Caller,
    Path(file_id): Path<String>,
) -> ApiResult<Json<FileObject>> {
    Ok(Json(find(&app, &caller.org, &file_id).await?))
}

async fn delete(
    State(app): State<App>,
    caller: Caller,
    Path(file_id): Path<String>,
) -> ApiResult<Json<serde_json::Value>> {
    find(&app, &caller.org, &file_id).await?;
    app.store
        .delete(&file_key(&caller.org, &file_id), None)
        .await?;
    app.blobs.delete(&blob_key(&caller.org, &file_id)).await?;
    Ok(Json(
        serde_json::json!({"id": file_id, "object": "file", "deleted": true}),
    ))
}

async fn content(
    State(app): State<App>,
    caller: Caller,
    Path(file_id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let file = find(&app, &caller.org, &file_id).await?;
    if app.settings.content_redirect {
        return crate::http::blobs_route::redirect_to_blob(&app, &blob_key(&caller.org, &file_id))
            .await;
    }
    crate::http::blobs_route::stream_blob(
        app.blobs.as_ref(),
        &blob_key(&caller.org, &file_id),
        &headers,
        Some(&file.mime_type),
    )
    .await
}
