//! The `/v1/files` routes: multipart upload streamed to the blob store while its head is
//! sniffed, list, retrieve, delete and content.

use crate::api::extract::ApiQuery;
use crate::api::operation::{
    link, list_of, query_param, schema, Answer, Body, Declared, Kind, Link, Operation, DEFAULT,
    FILE_ID, IDEMPOTENCY_KEY, ORDER, RANGE,
};
use crate::app::App;
use crate::domain::accounts::Caller;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::files::form_upload::{self, FileUploadForm, StoredPart};
use crate::domain::files::*;
use crate::domain::ids::new_id;
use crate::domain::params::ListQuery;
use crate::ports::blobs::ByteStream;
use axum::extract::{DefaultBodyLimit, Multipart, Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::{Json, Router};
use bytes::Bytes;
use serde::Deserialize;

pub const FILE_LINKS: &[Link] = &[
    link("GetFile", &RETRIEVE_FILE, &FILE_ID),
    link("GetFileContent", &DOWNLOAD_FILE_CONTENT, &FILE_ID),
    link("DeleteFile", &DELETE_FILE, &FILE_ID),
];

pub const CREATE_FILE: Operation = Operation {
    method: "POST",
    path: "/v1/files",
    id: "CreateFile",
    tag: "files",
    summary: "Upload a file (multipart, up to 100 MB; larger ones use /v1/uploads)",
    params: &[IDEMPOTENCY_KEY],
    body: Body::Multipart(schema::<crate::domain::files::form_upload::FileUploadForm>),
    ok: &[(
        200,
        Answer::Json(schema::<crate::domain::files::FileObject>),
    )],
    errors: &[400, 401, 409, 413],
    links: FILE_LINKS,
    ..DEFAULT
};

pub const LIST_FILES: Operation = Operation {
    path: "/v1/files",
    id: "ListFiles",
    tag: "files",
    summary: "List the organization's files",
    params: &[
        query_param(
            "limit",
            Kind::Int(1, crate::domain::files::MAX_PAGE as i64),
            "Page size (default 20).",
        ),
        query_param("after", Kind::Str, "A file id: the page starts after it."),
        query_param("purpose", Kind::Str, "Only files of this purpose."),
        ORDER,
    ],
    ok: &[(
        200,
        Answer::Json(list_of::<crate::domain::files::FileObject>),
    )],
    errors: &[400, 401],
    ..DEFAULT
};

pub const RETRIEVE_FILE: Operation = Operation {
    path: "/v1/files/{file_id}",
    id: "RetrieveFile",
    tag: "files",
    summary: "Retrieve a file",
    params: &[FILE_ID],
    ok: &[(
        200,
        Answer::Json(schema::<crate::domain::files::FileObject>),
    )],
    errors: &[401, 404],
    ..DEFAULT
};

pub const DELETE_FILE: Operation = Operation {
    method: "DELETE",
    path: "/v1/files/{file_id}",
    id: "DeleteFile",
    tag: "files",
    summary: "Delete a file and its bytes",
    params: &[FILE_ID],
    ok: &[(200, Answer::Json(schema::<crate::api::envelope::Deleted>))],
    errors: &[401, 404],
    ..DEFAULT
};

pub const DOWNLOAD_FILE_CONTENT: Operation = Operation {
    path: "/v1/files/{file_id}/content",
    id: "DownloadFileContent",
    tag: "files",
    summary: "The file's bytes (byte ranges supported)",
    params: &[FILE_ID, RANGE],
    ok: &[
        (200, Answer::Bytes(&["*/*"])),
        (206, Answer::Bytes(&["*/*"])),
        (302, Answer::Redirect),
    ],
    errors: &[401, 404, 416],
    ..DEFAULT
};

pub fn routes() -> Router<App> {
    Router::new()
        .merge(collection_route())
        .merge(item_route())
        .merge(content_route())
}

// One function per path (the unit a Lambda function serves, `api::PathRoutes`).

pub fn collection_route() -> Router<App> {
    Router::new()
        .declared(&LIST_FILES, list)
        .declared(&CREATE_FILE, upload)
        .route_layer(DefaultBodyLimit::disable())
}

pub fn item_route() -> Router<App> {
    Router::new()
        .declared(&RETRIEVE_FILE, retrieve)
        .declared(&DELETE_FILE, delete)
}

pub fn content_route() -> Router<App> {
    Router::new().declared(&DOWNLOAD_FILE_CONTENT, content)
}

pub async fn upload(
    State(app): State<App>,
    caller: Caller,
    headers: HeaderMap,
    form: Result<Multipart, axum::extract::multipart::MultipartRejection>,
) -> ApiResult<crate::domain::idempotency::Answered<crate::domain::files::FileObject>> {
    let form = form.map_err(not_a_form)?;
    let idempotency_key = crate::domain::idempotency::key_from(
        headers
            .get(crate::domain::idempotency::HEADER)
            .map(|v| v.as_bytes()),
    )?;
    let file_id = new_id("file");
    let form = read_form(&app, &blob_key(&caller.org, &file_id), form).await?;
    let key = idempotency_key.as_deref();
    form_upload::upload(app.context(), &caller, key, &file_id, form).await
}

/// A body that is not a readable multipart form (no boundary, another content type) is a 400 in
/// the error envelope like every other refusal, not axum's plain-text rejection.
fn not_a_form(e: axum::extract::multipart::MultipartRejection) -> ApiError {
    ApiError::bad_request(format!(
        "The upload must be a multipart/form-data body with a boundary, a 'purpose' field and a \
         'file' part: {}",
        e.body_text()
    ))
}

/// Reads the upload form, streaming its `file` part into the blob store under `key` as it goes;
/// on a refusal the stored bytes are removed.
async fn read_form(app: &App, key: &str, mut form: Multipart) -> ApiResult<FileUploadForm> {
    let mut purpose: Option<String> = None;
    let mut stored: Option<StoredPart> = None;
    let read: ApiResult<()> = async {
        while let Some(field) = form.next_field().await.map_err(multipart_error)? {
            match field.name() {
                Some("purpose") => {
                    purpose = Some(small_field(field, "purpose").await?);
                }
                Some("file") => {
                    if stored.is_some() {
                        return Err(ApiError::invalid(
                            "file",
                            "Send exactly one file per upload.",
                        ));
                    }
                    let filename = field.file_name().unwrap_or("upload").to_owned();
                    let (bytes, head, sha256) = store_field(app, key, field).await?;
                    stored = Some(StoredPart {
                        filename,
                        bytes,
                        head,
                        sha256,
                    });
                }
                _ => {}
            }
        }
        Ok(())
    }
    .await;
    if let Err(e) = read {
        let _ = app.blobs.delete(key).await;
        return Err(e);
    }
    Ok(FileUploadForm {
        purpose,
        file: stored,
    })
}

/// Longest text field of an upload form (`purpose`); read chunk by chunk and refused as soon as
/// it passes this, so a huge field never sits in memory.
pub const MAX_FORM_TEXT_BYTES: usize = 1024;

/// Reads a short text field, refusing it once it passes [`MAX_FORM_TEXT_BYTES`].
async fn small_field(
    mut field: axum::extract::multipart::Field<'_>,
    name: &str,
) -> ApiResult<String> {
    let mut text = Vec::new();
    while let Some(chunk) = field.chunk().await.map_err(multipart_error)? {
        if text.len() + chunk.len() > MAX_FORM_TEXT_BYTES {
            return Err(ApiError::invalid(
                name,
                format!("The form field '{name}' is longer than {MAX_FORM_TEXT_BYTES} bytes."),
            ));
        }
        text.extend_from_slice(&chunk);
    }
    let text = String::from_utf8(text)
        .map_err(|_| ApiError::invalid(name, format!("The form field '{name}' is not UTF-8.")))?;
    Ok(text.trim().to_owned())
}

/// Streams one multipart field into the blob store. The field borrows the form, so a channel
/// hands its chunks to the store's (owned) stream while both run concurrently.
async fn store_field(
    app: &App,
    key: &str,
    mut field: axum::extract::multipart::Field<'_>,
) -> ApiResult<(u64, Bytes, String)> {
    use sha2::Digest;
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(8);
    let body: ByteStream = Box::pin(futures::stream::poll_fn(move |cx| rx.poll_recv(cx)));
    let pump = async move {
        // The bytes' digest, for the Idempotency-Key fingerprint (computed as they stream).
        let mut digest = sha2::Sha256::new();
        loop {
            match field.chunk().await {
                Ok(Some(chunk)) => {
                    digest.update(&chunk);
                    if tx.send(Ok(chunk)).await.is_err() {
                        return Ok(String::new()); // the store stopped reading (it reports why)
                    }
                }
                Ok(None) => return Ok(hex::encode(digest.finalize())),
                Err(e) => {
                    let _ = tx.send(Err(std::io::Error::other(e.to_string()))).await;
                    return Err(multipart_error(e));
                }
            }
        }
    };
    let store = async {
        let (head, body) = sniff_stream(body).await?;
        // Stored under its sniffed type, so that whoever fetches it by a signed URL (an engine,
        // a provider) is told what it is.
        let content_type = reelgate_media::sniff(&head).mime;
        let size = app
            .blobs
            .put_stream(key, content_type, body, app.settings.max_upload_bytes)
            .await
            .map_err(|e| match e {
                crate::ports::blobs::BlobError::TooLarge { limit } => ApiError::new(
                    crate::domain::error::ErrorKind::TooLarge,
                    "file_too_large",
                    format!("Files are accepted up to {limit} bytes; larger ones use the direct upload flow."),
                )
                .with_param("file"),
                other => other.into(),
            })?;
        Ok::<_, ApiError>((size, head))
    };
    let (pumped, stored) = tokio::join!(pump, store);
    let digest = pumped?;
    let (size, head) = stored?;
    Ok((size, head, digest))
}

fn multipart_error(e: axum::extract::multipart::MultipartError) -> ApiError {
    if e.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
        return ApiError::new(
            crate::domain::error::ErrorKind::TooLarge,
            "file_too_large",
            "The upload is larger than this endpoint accepts.",
        );
    }
    crate::api::extract::body_read_error(&e, "The multipart form could not be read")
}

#[derive(Deserialize)]
struct ListParams {
    #[serde(flatten)]
    page: ListQuery,
    purpose: Option<String>,
}

async fn list(
    State(app): State<App>,
    caller: Caller,
    ApiQuery(params): ApiQuery<ListParams>,
) -> ApiResult<Json<crate::api::envelope::List<FileObject>>> {
    let page = crate::domain::files::list(
        app.context(),
        &caller.org,
        &params.page,
        params.purpose.as_deref(),
    )
    .await?;
    Ok(Json(crate::api::envelope::List::page(page, |f| {
        f.id.clone()
    })))
}

async fn retrieve(
    State(app): State<App>,
    caller: Caller,
    Path(file_id): Path<String>,
) -> ApiResult<Json<FileObject>> {
    Ok(Json(find(app.context(), &caller.org, &file_id).await?))
}

async fn delete(
    State(app): State<App>,
    caller: Caller,
    Path(file_id): Path<String>,
) -> ApiResult<Json<crate::api::envelope::Deleted>> {
    crate::domain::files::delete(app.context(), &caller.org, &file_id).await?;
    Ok(Json(crate::api::envelope::Deleted::new(file_id, "file")))
}

async fn content(
    State(app): State<App>,
    caller: Caller,
    Path(file_id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let file = find(app.context(), &caller.org, &file_id).await?;
    if app.settings.content_redirect {
        return crate::api::content::redirect_to_blob(&app, &blob_key(&caller.org, &file_id)).await;
    }
    crate::api::content::stream_blob(
        app.blobs.as_ref(),
        &blob_key(&caller.org, &file_id),
        &headers,
        Some(&file.mime_type),
    )
    .await
}
