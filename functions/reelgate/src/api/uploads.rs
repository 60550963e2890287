//! The `/v1/uploads` routes (direct-to-store uploads): create an upload with its presigned PUT
//! URL, then complete it into a file.

use crate::api::extract::ApiBody;
use crate::api::files::FILE_LINKS;
use crate::api::operation::{
    link, schema, Answer, Body, Declared, Operation, DEFAULT, IDEMPOTENCY_KEY, UPLOAD_ID,
};
use crate::app::App;
use crate::domain::accounts::Caller;
use crate::domain::error::ApiResult;
use crate::domain::files::uploads::{Upload, UploadCreateRequest};
use crate::domain::files::FileObject;
use crate::domain::idempotency::Answered;
use axum::extract::{Path, State};
use axum::{Json, Router};

pub const CREATE_UPLOAD: Operation = Operation {
    method: "POST",
    path: "/v1/uploads",
    id: "CreateUpload",
    tag: "uploads",
    summary: "Reserve a direct upload: PUT the bytes to `upload_url`, then complete it",
    params: &[IDEMPOTENCY_KEY],
    body: Body::Json(schema::<crate::domain::files::uploads::UploadCreateRequest>),
    ok: &[(
        200,
        Answer::Json(schema::<crate::domain::files::uploads::Upload>),
    )],
    errors: &[400, 401, 409, 413],
    links: &[link("CompleteUpload", &COMPLETE_UPLOAD, &UPLOAD_ID)],
    ..DEFAULT
};

pub const COMPLETE_UPLOAD: Operation = Operation {
    method: "POST",
    path: "/v1/uploads/{upload_id}/complete",
    id: "CompleteUpload",
    tag: "uploads",
    summary: "Register the uploaded bytes as a file (checked as POST /v1/files checks them)",
    params: &[UPLOAD_ID],
    ok: &[(
        200,
        Answer::Json(schema::<crate::domain::files::FileObject>),
    )],
    errors: &[400, 401, 404, 409, 413],
    links: FILE_LINKS,
    ..DEFAULT
};

pub fn routes() -> Router<App> {
    Router::new()
        .merge(collection_route())
        .merge(complete_route())
}

// One function per path (the unit a Lambda function serves, `api::PathRoutes`).

pub fn collection_route() -> Router<App> {
    Router::new().declared(&CREATE_UPLOAD, create)
}

pub fn complete_route() -> Router<App> {
    Router::new().declared(&COMPLETE_UPLOAD, complete)
}

async fn create(
    State(app): State<App>,
    caller: Caller,
    headers: axum::http::HeaderMap,
    ApiBody(req): ApiBody<UploadCreateRequest>,
) -> ApiResult<Answered<Upload>> {
    let key = headers.get(crate::domain::idempotency::HEADER);
    let key = key.map(|v| v.as_bytes());
    crate::domain::files::uploads::create(app.context(), &caller, key, req).await
}

async fn complete(
    State(app): State<App>,
    caller: Caller,
    Path(upload_id): Path<String>,
) -> ApiResult<Json<FileObject>> {
    Ok(Json(
        crate::domain::files::uploads::complete(app.context(), &caller, &upload_id).await?,
    ))
}
