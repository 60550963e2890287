//! The `/v1/uploads` routes (direct-to-store uploads): create an upload with its presigned PUT
//! URL, then complete it into a file.

use crate::api::extract::ApiJson;
use crate::app::App;
use crate::domain::accounts::Caller;
use crate::domain::error::ApiResult;
use crate::domain::files::FileObject;
use axum::extract::{Path, State};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::Value;

pub fn routes() -> Router<App> {
    Router::new()
        .merge(collection_route())
        .merge(complete_route())
}

// One function per path (the unit a Lambda function serves, `api::PathRoutes`).

pub fn collection_route() -> Router<App> {
    Router::new().route("/v1/uploads", post(create))
}

pub fn complete_route() -> Router<App> {
    Router::new().route("/v1/uploads/{upload_id}/complete", post(complete))
}

async fn create(
    State(app): State<App>,
    caller: Caller,
    headers: axum::http::HeaderMap,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<Json<Value>> {
    let key = headers.get(crate::domain::idempotency::HEADER);
    let key = key.map(|v| v.as_bytes());
    Ok(Json(
        crate::domain::files::uploads::create(app.context(), &caller, key, body).await?,
    ))
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
